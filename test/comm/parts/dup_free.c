/* test/comm/dup_free.c as part dup_free of test/comm/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_dup_free
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../dup_free.c"
