/* test/p2p/integrity.c as part integrity of test/p2p/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_integrity
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../integrity.c"
