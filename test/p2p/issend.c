/*
 * issend: a synchronous send does not complete before the receiver has
 * posted a matching receive, even when the message is small enough to be
 * sent eagerly and both sides keep driving progress. Pairs (0,1), (2,3) ...:
 * the even rank MPI_Issends, tests it for a while (it must stay incomplete),
 * then tells the odd rank with another message to post the receive; then the
 * Issend completes. The same for MPI_Ssend_init + MPI_Start. A standard send
 * of the same small size, by contrast, completes without the receiver.
 */
#include "p2p_util.h"

#define TAG_DATA 1
#define TAG_GO 2
#define TAG_UNUSED 3
#define WINDOW 0.25   /* seconds the synchronous send must stay incomplete */

static void sender(int partner, size_t n, int persistent)
{
    unsigned char *buf = malloc(n);
    payload_fill(buf, n, 0, TAG_DATA, (int)n);
    MPI_Request req;
    if (persistent) {
        CHECK_MPI(MPI_Ssend_init(buf, (int)n, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Start(&req));
    } else {
        CHECK_MPI(MPI_Issend(buf, (int)n, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD, &req));
    }
    double end = MPI_Wtime() + WINDOW;
    int flag = 0, polls = 0;
    while (MPI_Wtime() < end) {
        CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "the %s of %zu bytes completed before the receiver posted a receive (poll %d)",
              persistent ? "MPI_Ssend_init request" : "MPI_Issend", n, polls);
        polls++;
    }
    char go = 1;
    CHECK_MPI(MPI_Send(&go, 1, MPI_CHAR, partner, TAG_GO, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    if (persistent) {
        CHECK(req != MPI_REQUEST_NULL, "MPI_Wait freed a persistent request");
        CHECK_MPI(MPI_Request_free(&req));
    }
    free(buf);
}

static void receiver(int partner, size_t n)
{
    /* Drive progress during the sender's window without matching the data. */
    double end = MPI_Wtime() + WINDOW / 2;
    while (MPI_Wtime() < end) {
        int flag = 1;
        CHECK_MPI(MPI_Iprobe(partner, TAG_UNUSED, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "a message with an unused tag");
    }
    char go = 0;
    CHECK_MPI(MPI_Recv(&go, 1, MPI_CHAR, partner, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    unsigned char *buf = guarded_alloc(n);
    MPI_Status st;
    CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD, &st));
    CHECK(payload_check(buf, n, 0, TAG_DATA, (int)n) < 0, "the synchronous message's bytes are wrong");
    CHECK(guards_intact(buf, n), "guard zone overwritten");
    guarded_free(buf);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int partner = (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL;
    const size_t sizes[] = { 8, 65537 };

    for (int persistent = 0; persistent < 2; persistent++) {
        for (size_t s = 0; s < 2 && partner != MPI_PROC_NULL; s++) {
            if (rank % 2 == 0)
                sender(partner, sizes[s], persistent);
            else
                receiver(partner, sizes[s]);
        }
    }

    /* A small standard send completes with the receiver doing nothing. */
    if (partner != MPI_PROC_NULL) {
        if (rank % 2 == 0) {
            char small[8] = "eager";
            MPI_Request req;
            CHECK_MPI(MPI_Isend(small, sizeof small, MPI_CHAR, partner, TAG_DATA, MPI_COMM_WORLD, &req));
            double end = MPI_Wtime() + 10;
            int flag = 0;
            while (!flag && MPI_Wtime() < end)
                CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            CHECK(flag, "an 8-byte standard send did not complete without the receiver");
            CHECK_MPI(MPI_Send(small, 1, MPI_CHAR, partner, TAG_GO, MPI_COMM_WORLD));
        } else {
            char go, small[8];
            CHECK_MPI(MPI_Recv(&go, 1, MPI_CHAR, partner, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(small, sizeof small, MPI_CHAR, partner, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(strcmp(small, "eager") == 0, "got '%.8s'", small);
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
