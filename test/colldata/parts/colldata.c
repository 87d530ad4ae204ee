/* test/colldata/colldata.c as part colldata of test/colldata/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_colldata
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../colldata.c"
