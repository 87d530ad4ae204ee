/*
 * "rank R of S ok", the last line of every test program, and what turns a
 * program into one part of a suite program (several programs in one launch:
 * see util/suite_main.h).
 *
 * A part is compiled through a wrapper that defines HASHI_SUITE_PART and
 * SUITE_PART_NAME, includes this, then the program itself: its main becomes
 * suite_part_<name>, its MPI_Init and MPI_Finalize the suite's (MPI is
 * initialised once for all parts; a part's finalize is a barrier) and
 * report_ok tells the suite instead of printing.
 */
#ifndef HASHI_TEST_SUITE_H
#define HASHI_TEST_SUITE_H

#include <mpi.h>
#include <stdio.h>

int suite_part_init(void);
int suite_part_finalize(void);
void suite_part_ok(void);

#ifdef HASHI_SUITE_PART
/* mpi.h is in: these rename only the part's calls, not its prototypes. */
#define MPI_Init(argc, argv) ((void)(argc), (void)(argv), suite_part_init())
#define MPI_Finalize() suite_part_finalize()
#endif

static inline void report_ok(void)
{
#ifdef HASHI_SUITE_PART
    suite_part_ok();   /* the suite prints one line once every part passed */
#else
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d ok\n", rank, size);
    fflush(stdout);
#endif
}

#endif
