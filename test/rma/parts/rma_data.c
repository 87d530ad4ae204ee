/* test/rma/rma_data.c as part rma_data of test/rma/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_rma_data
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../rma_data.c"
