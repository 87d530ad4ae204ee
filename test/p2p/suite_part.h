/*
 * Included (before the program itself) by each test/p2p/parts/<part>.c: it
 * turns a point-to-point test program into one part of test/p2p/suite, the
 * program that runs many of them in one launch. Its main becomes
 * p2p_part_<name>; MPI_Init and MPI_Finalize become the suite's (MPI is
 * initialised once for every part; a part's "finalize" is a barrier), and
 * report_ok tells the suite instead of printing.
 */
#ifndef HASHI_TEST_P2P_SUITE_PART_H
#define HASHI_TEST_P2P_SUITE_PART_H

#include <mpi.h>

#define P2P_SUITE_PART 1

int p2p_suite_part_init(void);
int p2p_suite_part_finalize(void);
void p2p_suite_part_ok(void);

/* mpi.h is in: these rename only the parts' calls, not its prototypes. */
#define MPI_Init(argc, argv) ((void)(argc), (void)(argv), p2p_suite_part_init())
#define MPI_Finalize() p2p_suite_part_finalize()

#endif
