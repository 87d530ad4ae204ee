/*
 * persistent: MPI_Send_init / Recv_init (and the Ssend, Rsend, Bsend forms)
 * started many times, alone and with MPI_Startall, carry new data each time
 * (the send buffer is read at MPI_Start, not at init) in order; MPI_Wait
 * leaves the request allocated and inactive; MPI_Wait / MPI_Test on an
 * inactive request return at once with an empty status; MPI_Request_free
 * releases it. A ring: every rank sends to the right and receives from the
 * left.
 */
#include "p2p_util.h"

#define ITERATIONS 300

static void check_empty(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0,
          "%s: not an empty status (source %d, tag %d, count %d)", what, st->MPI_SOURCE, st->MPI_TAG, count);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const size_t sizes[] = { 4, 100000 };

    for (int s = 0; s < 2; s++) {
        size_t n = sizes[s];
        unsigned char *sbuf = malloc(n), *rbuf = malloc(n);
        MPI_Request reqs[2];
        CHECK_MPI(MPI_Recv_init(rbuf, (int)n, MPI_BYTE, left, s, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Send_init(sbuf, (int)n, MPI_BYTE, right, s, MPI_COMM_WORLD, &reqs[1]));

        /* Inactive: Wait and Test return at once, with an empty status. */
        MPI_Status st;
        int flag = 0;
        CHECK_MPI(MPI_Wait(&reqs[0], &st));
        check_empty(&st, "MPI_Wait on an inactive request");
        CHECK_MPI(MPI_Test(&reqs[1], &flag, &st));
        CHECK(flag, "MPI_Test on an inactive request: flag 0");
        check_empty(&st, "MPI_Test on an inactive request");

        int iterations = n > 1000 ? ITERATIONS / 10 : ITERATIONS;
        for (int it = 0; it < iterations; it++) {
            payload_fill(sbuf, n, rank, s, it);   /* new data for every start */
            if (it % 2) {
                CHECK_MPI(MPI_Startall(2, reqs));
            } else {
                CHECK_MPI(MPI_Start(&reqs[0]));
                CHECK_MPI(MPI_Start(&reqs[1]));
            }
            MPI_Status sts[2];
            CHECK_MPI(MPI_Waitall(2, reqs, sts));
            CHECK(reqs[0] != MPI_REQUEST_NULL && reqs[1] != MPI_REQUEST_NULL, "MPI_Waitall freed persistent requests");
            CHECK(sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == s, "iteration %d: status %d/%d", it,
                  sts[0].MPI_SOURCE, sts[0].MPI_TAG);
            long bad = payload_check(rbuf, n, left, s, it);
            CHECK(bad < 0, "iteration %d of %zu bytes: byte %ld is not this iteration's", it, n, bad);
        }
        CHECK_MPI(MPI_Request_free(&reqs[0]));
        CHECK_MPI(MPI_Request_free(&reqs[1]));
        CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "MPI_Request_free did not reset handles");
        free(sbuf);
        free(rbuf);
    }

    /* The other modes: synchronous, ready (the receive is started before a
     * barrier, so it is posted when the ready send starts) and buffered. */
    int attach_size = 3 * (64 + MPI_BSEND_OVERHEAD);
    void *attached = malloc((size_t)attach_size);
    CHECK_MPI(MPI_Buffer_attach(attached, attach_size));
    const char *modes[] = { "Ssend_init", "Rsend_init", "Bsend_init" };
    for (int mode = 0; mode < 3; mode++) {
        int out[16], in[16];
        MPI_Request rreq, sreq;
        CHECK_MPI(MPI_Recv_init(in, 16, MPI_INT, left, 100 + mode, MPI_COMM_WORLD, &rreq));
        if (mode == 0)
            CHECK_MPI(MPI_Ssend_init(out, 16, MPI_INT, right, 100 + mode, MPI_COMM_WORLD, &sreq));
        else if (mode == 1)
            CHECK_MPI(MPI_Rsend_init(out, 16, MPI_INT, right, 100 + mode, MPI_COMM_WORLD, &sreq));
        else
            CHECK_MPI(MPI_Bsend_init(out, 16, MPI_INT, right, 100 + mode, MPI_COMM_WORLD, &sreq));
        for (int it = 0; it < 20; it++) {
            for (int i = 0; i < 16; i++)
                out[i] = rank * 100000 + it * 100 + i;
            CHECK_MPI(MPI_Start(&rreq));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Start(&sreq));
            if (mode == 2)   /* buffered: the data was copied, scribbling is harmless */
                memset(out, 0, sizeof out);
            CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
            for (int i = 0; i < 16; i++)
                CHECK(in[i] == left * 100000 + it * 100 + i, "MPI_%s iteration %d: in[%d] = %d", modes[mode],
                      it, i, in[i]);
        }
        CHECK_MPI(MPI_Request_free(&rreq));
        CHECK_MPI(MPI_Request_free(&sreq));
    }
    void *detached = NULL;
    int detached_size = 0;
    CHECK_MPI(MPI_Buffer_detach(&detached, &detached_size));
    CHECK(detached == attached && detached_size == attach_size, "MPI_Buffer_detach gave %p/%d", detached,
          detached_size);
    free(attached);

    /* Freeing an active persistent receive: its message still arrives where
     * MPI_Request_free left it, and nothing breaks. */
    int late = -1;
    MPI_Request preq;
    CHECK_MPI(MPI_Recv_init(&late, 1, MPI_INT, 0, 9, MPI_COMM_SELF, &preq));
    CHECK_MPI(MPI_Start(&preq));
    CHECK_MPI(MPI_Request_free(&preq));
    int nine = 9;
    CHECK_MPI(MPI_Send(&nine, 1, MPI_INT, 0, 9, MPI_COMM_SELF));
    double end = MPI_Wtime() + 10;
    while (late != 9 && MPI_Wtime() < end) {
        int flag;
        MPI_Iprobe(0, 10, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);   /* drive progress */
    }
    CHECK(late == 9, "the freed persistent receive never got its message (%d)", late);

    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
