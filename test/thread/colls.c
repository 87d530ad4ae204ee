/*
 * colls: 3 threads per rank, each running collectives on its own
 * communicator at the same time as the others: Barrier, Bcast (rotating
 * root), Allreduce, Alltoall and an Iallreduce, for many rounds, results
 * checked exactly. Each thread first duplicates its communicator again (the
 * context-id agreements of three dups run concurrently). Algorithms that
 * share state between communicators (a device's collective areas) mix the
 * threads' data or hang here.
 */
#include "mt_util.h"

#define THREADS 3
#define ROUNDS 40
#define BCAST_INTS 48
#define REDUCE_INTS 24

static int rank, size;
static MPI_Comm comms[THREADS];

static void *coll_thread(int t)
{
    MPI_Comm comm;
    CHECK_MPI(MPI_Comm_dup(comms[t], &comm));
    int *a2a_out = malloc((size_t)size * 2 * sizeof(int)), *a2a_in = malloc((size_t)size * 2 * sizeof(int));
    CHECK(a2a_out && a2a_in, "out of memory");
    for (int round = 0; round < ROUNDS; round++) {
        CHECK_MPI(MPI_Barrier(comm));

        int root = (round + t) % size;
        int bc[BCAST_INTS];
        for (int i = 0; i < BCAST_INTS; i++)
            bc[i] = rank == root ? 1000000 * t + 1000 * round + i : -1;
        CHECK_MPI(MPI_Bcast(bc, BCAST_INTS, MPI_INT, root, comm));
        for (int i = 0; i < BCAST_INTS; i++)
            CHECK(bc[i] == 1000000 * t + 1000 * round + i, "thread %d round %d: bcast[%d] = %d", t, round, i, bc[i]);

        int in[REDUCE_INTS], out[REDUCE_INTS];
        for (int i = 0; i < REDUCE_INTS; i++)
            in[i] = (rank + 1) * (t + 1) + round * i;
        CHECK_MPI(MPI_Allreduce(in, out, REDUCE_INTS, MPI_INT, MPI_SUM, comm));
        for (int i = 0; i < REDUCE_INTS; i++) {
            int want = (t + 1) * size * (size + 1) / 2 + size * round * i;
            CHECK(out[i] == want, "thread %d round %d: allreduce[%d] = %d, expected %d", t, round, i, out[i], want);
        }

        for (int r = 0; r < size; r++) {
            a2a_out[2 * r] = 10000 * t + 100 * rank + r;
            a2a_out[2 * r + 1] = round;
        }
        CHECK_MPI(MPI_Alltoall(a2a_out, 2, MPI_INT, a2a_in, 2, MPI_INT, comm));
        for (int r = 0; r < size; r++)
            CHECK(a2a_in[2 * r] == 10000 * t + 100 * r + rank && a2a_in[2 * r + 1] == round,
                  "thread %d round %d: alltoall block from %d is (%d, %d)", t, round, r, a2a_in[2 * r],
                  a2a_in[2 * r + 1]);

        MPI_Request req;
        int mine = rank + round, max = -1;
        CHECK_MPI(MPI_Iallreduce(&mine, &max, 1, MPI_INT, MPI_MAX, comm, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(max == size - 1 + round, "thread %d round %d: iallreduce max %d", t, round, max);
    }
    free(a2a_out);
    free(a2a_in);
    CHECK_MPI(MPI_Comm_free(&comm));
    return NULL;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, &rank, &size);
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    mt_run(THREADS, coll_thread);
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_free(&comms[t]));
    return mt_finish(rank, size);
}
