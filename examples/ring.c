/*
 * ring: a token travels around the ranks a number of times; every rank adds
 * its rank to it as it passes.
 *
 *   mpirun -n 4 examples/ring [laps]     (default 10)
 *
 * Rank 0 starts each lap and receives the token back from the last rank. The
 * message tag is the lap number, so a token that overtook another would be
 * caught by the receive. Every rank checks the value it receives against the
 * closed form: on lap k (from 0) rank r receives
 *     k * size * (size - 1) / 2 + (0 + 1 + ... + (r - 1)),
 * and after all laps rank 0 holds laps * size * (size - 1) / 2.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int laps = argc > 1 ? atoi(argv[1]) : 10;
    if (laps < 1) {
        if (rank == 0)
            fprintf(stderr, "ring: the number of laps must be positive\n");
        MPI_Finalize();
        return 2;
    }
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    long long per_lap = (long long)size * (size - 1) / 2;
    long long before_me = (long long)rank * (rank - 1) / 2;
    long long token = 0;
    int wrong = 0;

    for (int lap = 0; lap < laps; lap++) {
        if (rank == 0) {
            /* Rank 0 adds 0. Isend, not Send: with one rank the token goes to
             * rank 0 itself, and a blocking send to oneself may wait forever
             * for the receive that follows it. */
            MPI_Request sent;
            long long back;
            MPI_Isend(&token, 1, MPI_LONG_LONG, next, lap, MPI_COMM_WORLD, &sent);
            /* A separate buffer: the send's is not ours again until MPI_Wait. */
            MPI_Recv(&back, 1, MPI_LONG_LONG, prev, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&sent, MPI_STATUS_IGNORE);
            token = back;
            if (token != (lap + 1) * per_lap) {
                fprintf(stderr, "ring: rank 0 got %lld back after lap %d, expected %lld\n",
                        token, lap, (lap + 1) * per_lap);
                wrong = 1;
            }
        } else {
            MPI_Recv(&token, 1, MPI_LONG_LONG, prev, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (token != lap * per_lap + before_me) {
                fprintf(stderr, "ring: rank %d received %lld on lap %d, expected %lld\n",
                        rank, token, lap, lap * per_lap + before_me);
                wrong = 1;
            }
            token += rank;
            MPI_Send(&token, 1, MPI_LONG_LONG, next, lap, MPI_COMM_WORLD);
        }
    }

    if (rank == 0)
        printf("ring: %d ranks, %d laps: token %lld, expected %lld: %s\n", size, laps, token,
               laps * per_lap, wrong ? "WRONG" : "ok");
    MPI_Finalize();
    return wrong;
}
