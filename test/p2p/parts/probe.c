/* test/p2p/probe.c as part probe of test/p2p/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_probe
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../probe.c"
