/* test/coll/reductions.c as part reductions of test/coll/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_reductions
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../reductions.c"
