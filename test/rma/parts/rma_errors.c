/* test/rma/rma_errors.c as part rma_errors of test/rma/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_rma_errors
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../rma_errors.c"
