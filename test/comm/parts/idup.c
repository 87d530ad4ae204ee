/* test/comm/idup.c as part idup of test/comm/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_idup
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../idup.c"
