/* test/p2p/truncate.c as part truncate of test/p2p/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_truncate
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../truncate.c"
