/* test/p2p/probe.c as a part of test/p2p/suite (see ../suite_part.h). */
#include "../suite_part.h"
#define main p2p_part_probe
int main(int argc, char **argv);   /* the prototype -Wmissing-prototypes wants */
#include "../probe.c"
