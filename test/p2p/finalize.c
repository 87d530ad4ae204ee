/*
 * finalize: MPI_Finalize does not lose traffic. Every rank starts a 1 MiB
 * send and frees its request, makes a buffered send (buffer still attached),
 * and calls MPI_Finalize at once; its right neighbour receives both only
 * after a delay, so the data is still in flight when the sender reaches
 * MPI_Finalize. Each rank prints its line after the checks, before finalizing.
 */
#include "p2p_util.h"

#define BIG (1u << 20)

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *big = malloc(BIG), *rbig = malloc(BIG);
    int attach = 256 + MPI_BSEND_OVERHEAD;
    void *attached = malloc((size_t)attach);
    CHECK_MPI(MPI_Buffer_attach(attached, attach));

    payload_fill(big, BIG, rank, 1, 0);
    MPI_Request req;
    CHECK_MPI(MPI_Isend(big, BIG, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Request_free(&req));
    unsigned char small[256];
    payload_fill(small, sizeof small, rank, 2, 0);
    CHECK_MPI(MPI_Bsend(small, sizeof small, MPI_BYTE, right, 2, MPI_COMM_WORLD));

    /* Odd ranks receive late; even ranks go straight on. */
    if (rank % 2) {
        double until = MPI_Wtime() + 0.3;
        while (MPI_Wtime() < until)
            ;
    }
    CHECK_MPI(MPI_Recv(rbig, BIG, MPI_BYTE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(payload_check(rbig, BIG, left, 1, 0) < 0, "the freed 1 MiB send arrived wrong");
    unsigned char rsmall[256];
    CHECK_MPI(MPI_Recv(rsmall, sizeof rsmall, MPI_BYTE, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(payload_check(rsmall, sizeof rsmall, left, 2, 0) < 0, "the buffered send arrived wrong");
    report_ok();
    /* The Isend's buffer must stay valid until the send completes, which
     * MPI_Finalize guarantees: free it only after. */
    CHECK_MPI(MPI_Finalize());
    free(big);
    free(rbig);
    free(attached);
    return 0;
}
