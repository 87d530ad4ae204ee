/*
 * sleeper [SECONDS | recv]: prints "sleeper rank R of S pid P" once MPI_Init
 * is done, then sleeps SECONDS (default 60) and finalizes; with "recv" it
 * blocks instead in an MPI_Recv that no rank ever satisfies. For the tests
 * that kill the launcher or let its --timeout expire.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../util/check.h"

int main(int argc, char **argv)
{
    int rank = -1, size = -1;
    int seconds = argc > 1 ? atoi(argv[1]) : 60;
    const struct timespec step = { 0, 10 * 1000 * 1000 };

    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    printf("sleeper rank %d of %d pid %ld\n", rank, size, (long)getpid());
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "recv") == 0) {
        int never;
        CHECK_MPI(MPI_Recv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        fprintf(stderr, "sleeper rank %d: a receive nobody sends to completed\n", rank);
        return 1;
    }
    for (int i = 0; i < seconds * 100; i++)
        nanosleep(&step, NULL);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
