/* test/coll/icoll.c as part icoll of test/coll/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_icoll
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../icoll.c"
