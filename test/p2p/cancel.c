/*
 * cancel: MPI_Cancel of a receive nobody sends to completes it as cancelled
 * (MPI_Test_cancelled true, no data, the request freed by MPI_Wait), for a
 * specific source, MPI_ANY_SOURCE, and an active persistent receive (which
 * then works again). Cancelling a receive that may already have matched gives
 * one of the two outcomes the standard allows, consistently: cancelled and
 * the message still receivable, or not cancelled with the data delivered.
 * Cancelling an eager send is allowed to fail; the sender tells the receiver whether
 * it did, and the receiver checks that the message is there exactly when it
 * was not cancelled.
 */
#include "p2p_util.h"

#define TAG_NEVER 77
#define TAG_SELF 5
#define TAG_BIG 6
#define TAG_VERDICT 7

static void expect_cancelled(MPI_Request *req, int want, const char *what)
{
    MPI_Status st;
    int cancelled = -1;
    CHECK_MPI(MPI_Wait(req, &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled == want, "%s: MPI_Test_cancelled gave %d, expected %d", what, cancelled, want);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int peer = (rank + 1) % size;
    int left = (rank + size - 1) % size;
    int value = -1;
    MPI_Request req;

    /* A receive nobody sends to. */
    CHECK_MPI(MPI_Irecv(&value, 1, MPI_INT, peer, TAG_NEVER, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Cancel(&req));
    expect_cancelled(&req, 1, "specific source");
    CHECK(req == MPI_REQUEST_NULL, "MPI_Wait did not free the cancelled request");
    CHECK(value == -1, "a cancelled receive wrote data");

    /* The same with MPI_ANY_SOURCE, completed through MPI_Test. */
    CHECK_MPI(MPI_Irecv(&value, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &req));
    CHECK_MPI(MPI_Cancel(&req));
    int flag = 0;
    MPI_Status st;
    double end = MPI_Wtime() + 10;
    while (!flag && MPI_Wtime() < end)
        CHECK_MPI(MPI_Test(&req, &flag, &st));
    CHECK(flag, "a cancelled receive never completed");
    int cancelled = 0;
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled, "ANY_SOURCE receive: not cancelled");

    /* An active persistent receive: cancelled, then started again for real. */
    MPI_Request preq;
    CHECK_MPI(MPI_Recv_init(&value, 1, MPI_INT, 0, TAG_SELF, MPI_COMM_SELF, &preq));
    CHECK_MPI(MPI_Start(&preq));
    CHECK_MPI(MPI_Cancel(&preq));
    expect_cancelled(&preq, 1, "persistent receive");
    CHECK(preq != MPI_REQUEST_NULL, "MPI_Wait freed the persistent request");
    CHECK_MPI(MPI_Start(&preq));
    int fortytwo = 42;
    CHECK_MPI(MPI_Send(&fortytwo, 1, MPI_INT, 0, TAG_SELF, MPI_COMM_SELF));
    expect_cancelled(&preq, 0, "restarted persistent receive");
    CHECK(value == 42, "restarted persistent receive got %d", value);
    CHECK_MPI(MPI_Request_free(&preq));

    /* A receive that may have matched already: either outcome, consistently. */
    value = -1;
    CHECK_MPI(MPI_Irecv(&value, 1, MPI_INT, 0, TAG_SELF, MPI_COMM_SELF, &req));
    int seven = 7;
    CHECK_MPI(MPI_Send(&seven, 1, MPI_INT, 0, TAG_SELF, MPI_COMM_SELF));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    if (cancelled) {
        CHECK(value == -1, "cancelled, yet the data arrived");
        CHECK_MPI(MPI_Recv(&value, 1, MPI_INT, 0, TAG_SELF, MPI_COMM_SELF, &st));
    }
    CHECK(value == 7, "the message was lost (cancelled %d, value %d)", cancelled, value);

    /* Cancelling a send: the receiver learns the verdict and checks it. The
     * message is small enough to go eagerly, so a send that cannot be
     * cancelled still completes without its receiver (which is waiting for
     * the verdict first). */
    size_t n = 1024;
    unsigned char *big = malloc(n), *rbig = malloc(n);
    payload_fill(big, n, rank, TAG_BIG, 0);
    CHECK_MPI(MPI_Isend(big, (int)n, MPI_BYTE, peer, TAG_BIG, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK_MPI(MPI_Send(&cancelled, 1, MPI_INT, peer, TAG_VERDICT, MPI_COMM_WORLD));
    int verdict = -1;
    CHECK_MPI(MPI_Recv(&verdict, 1, MPI_INT, left, TAG_VERDICT, MPI_COMM_WORLD, &st));
    if (!verdict) {
        CHECK_MPI(MPI_Recv(rbig, (int)n, MPI_BYTE, left, TAG_BIG, MPI_COMM_WORLD, &st));
        CHECK(payload_check(rbig, n, left, TAG_BIG, 0) < 0, "the uncancelled send's data is wrong");
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (verdict) {
        CHECK_MPI(MPI_Iprobe(left, TAG_BIG, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "a cancelled send's message arrived");
    }
    free(big);
    free(rbig);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
