/*
 * fail MODE RANK [CODE]: rank RANK fails in the way MODE says right after
 * MPI_Init, while every other rank sleeps in a loop for 30 s (so a launcher
 * that does not end the whole job shows up as a slow test). Modes:
 *   exit        exit(CODE) without MPI_Finalize
 *   abort       MPI_Abort(MPI_COMM_WORLD, CODE)
 *   segv        raise SIGSEGV
 *   nofinalize  return 0 from main without MPI_Finalize
 * A failure that does not happen prints "NOT REACHED" on stdout.
 */
#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../util/check.h"

static void sleep_seconds(int seconds)
{
    const struct timespec step = { 0, 10 * 1000 * 1000 };
    for (int i = 0; i < seconds * 100; i++)
        nanosleep(&step, NULL);
}

int main(int argc, char **argv)
{
    int rank = -1;
    CHECK(argc >= 3, "usage: fail exit|abort|segv|nofinalize RANK [CODE]");
    const char *mode = argv[1];
    int target = atoi(argv[2]);
    int code = argc > 3 ? atoi(argv[3]) : 1;

    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));

    if (rank != target) {
        sleep_seconds(30);
        fprintf(stderr, "fail: rank %d was not stopped within 30 s\n", rank);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "exit") == 0) {
        exit(code);
    } else if (strcmp(mode, "abort") == 0) {
        MPI_Abort(MPI_COMM_WORLD, code);
    } else if (strcmp(mode, "segv") == 0) {
        const struct rlimit no_core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no_core);
        raise(SIGSEGV);
    } else if (strcmp(mode, "nofinalize") == 0) {
        return 0;
    } else {
        CHECK(0, "unknown mode \"%s\"", mode);
    }
    printf("NOT REACHED: rank %d is still running after \"%s\"\n", rank, mode);
    return 0;
}
