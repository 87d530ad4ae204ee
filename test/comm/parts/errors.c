/* test/comm/errors.c as part errors of test/comm/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_errors
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../errors.c"
