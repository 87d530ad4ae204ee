/*
 * allsend [bytes]: every rank first sends a message (default 4 KiB) to every
 * other rank with blocking MPI_Send, and only then receives from each. This
 * is unsafe in MPI terms but works wherever standard sends up to the eager
 * limit complete locally, which Hashi promises for 4 KiB on every device; a
 * device that waits for the receiver deadlocks here (the harness's timeout).
 * Repeated, alternating the order in which ranks are addressed.
 */
#include "p2p_util.h"

#define ROUNDS 20

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 4096;
    unsigned char *sbuf = malloc(n + 1), *rbuf = guarded_alloc(n);

    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 1; k < size; k++) {
            int dest = round % 2 ? (rank + k) % size : (rank + size - k) % size;
            payload_fill(sbuf, n, rank, round, dest);
            CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, dest, round, MPI_COMM_WORLD));
        }
        for (int k = 1; k < size; k++) {
            int src = (rank + k) % size;
            MPI_Status st;
            CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, src, round, MPI_COMM_WORLD, &st));
            CHECK(st.MPI_SOURCE == src && st.MPI_TAG == round, "round %d: status %d/%d", round, st.MPI_SOURCE,
                  st.MPI_TAG);
            CHECK(payload_check(rbuf, n, src, round, rank) < 0, "round %d: wrong bytes from rank %d", round, src);
            CHECK(guards_intact(rbuf, n), "guard zone overwritten");
        }
    }
    free(sbuf);
    guarded_free(rbuf);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
