/* test/comm/compare_attrs.c as part compare_attrs of test/comm/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_compare_attrs
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../compare_attrs.c"
