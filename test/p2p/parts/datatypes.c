/* test/p2p/datatypes.c as part datatypes of test/p2p/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_datatypes
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../datatypes.c"
