/* test/rma/rma_shm.c as part rma_shm of test/rma/suite (see test/util/suite.h). */
#define HASHI_SUITE_PART 1
#include "../../util/suite.h"
#define main suite_part_rma_shm
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../rma_shm.c"
