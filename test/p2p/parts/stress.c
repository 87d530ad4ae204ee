/* test/p2p/stress.c as part stress of test/p2p/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_stress
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../stress.c"
