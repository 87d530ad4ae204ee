/* test/coll/ops.c as part ops of test/coll/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_ops
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../ops.c"
