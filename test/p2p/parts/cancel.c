/* test/p2p/cancel.c as part cancel of test/p2p/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_cancel
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../cancel.c"
