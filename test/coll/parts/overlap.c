/* test/coll/overlap.c as part overlap of test/coll/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_overlap
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../overlap.c"
