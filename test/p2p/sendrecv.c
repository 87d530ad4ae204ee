/*
 * sendrecv: MPI_Sendrecv and MPI_Sendrecv_replace around a ring (every rank
 * sends right and receives from the left in one call, which deadlocks if the
 * receive is not posted before the send blocks), at eager and rendezvous
 * sizes, with a strided type for _replace; the MPI-4 nonblocking forms
 * MPI_Isendrecv / MPI_Isendrecv_replace; and the status of each. Then
 * ready mode around the ring: every rank pre-posts its receives from the
 * left, a barrier guarantees they are posted, then MPI_Rsend and MPI_Irsend
 * at every size deliver byte for byte with the right status.
 */
#include "p2p_util.h"

static const size_t sizes[] = { 0, 1, 4096, 65537, 1u << 20 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = sizes[s];
        unsigned char *sbuf = malloc(n + 1), *rbuf = guarded_alloc(n);
        MPI_Status st;
        int count = -1;

        payload_fill(sbuf, n, rank, 1, (int)s);
        CHECK_MPI(MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, right, 1, rbuf, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 1, "MPI_Sendrecv status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)n, "MPI_Sendrecv count %d, expected %zu", count, n);
        CHECK(payload_check(rbuf, n, left, 1, (int)s) < 0 && guards_intact(rbuf, n), "MPI_Sendrecv %zu bytes", n);

        /* _replace: the buffer goes right and is overwritten from the left. */
        unsigned char *buf = guarded_alloc(n);
        payload_fill(buf, n, rank, 2, (int)s);
        CHECK_MPI(MPI_Sendrecv_replace(buf, (int)n, MPI_BYTE, right, 2, left, 2, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 2, "MPI_Sendrecv_replace status %d/%d", st.MPI_SOURCE,
              st.MPI_TAG);
        CHECK(payload_check(buf, n, left, 2, (int)s) < 0 && guards_intact(buf, n), "MPI_Sendrecv_replace %zu bytes", n);

        /* Nonblocking forms. */
        MPI_Request reqs[2];
        payload_fill(sbuf, n, rank, 3, (int)s);
        payload_fill(buf, n, rank, 4, (int)s);
        memset(rbuf, 0, n);
        CHECK_MPI(MPI_Isendrecv(sbuf, (int)n, MPI_BYTE, right, 3, rbuf, (int)n, MPI_BYTE, left, 3, MPI_COMM_WORLD,
                                &reqs[0]));
        CHECK_MPI(MPI_Isendrecv_replace(buf, (int)n, MPI_BYTE, right, 4, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &reqs[1]));
        MPI_Status sts[2];
        CHECK_MPI(MPI_Waitall(2, reqs, sts));
        CHECK(sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == 3 && sts[1].MPI_SOURCE == left && sts[1].MPI_TAG == 4,
              "MPI_Isendrecv statuses %d/%d %d/%d", sts[0].MPI_SOURCE, sts[0].MPI_TAG, sts[1].MPI_SOURCE,
              sts[1].MPI_TAG);
        CHECK_MPI(MPI_Get_count(&sts[1], MPI_BYTE, &count));
        CHECK(count == (int)n, "MPI_Isendrecv_replace count %d", count);
        CHECK(payload_check(rbuf, n, left, 3, (int)s) < 0, "MPI_Isendrecv %zu bytes", n);
        CHECK(payload_check(buf, n, left, 4, (int)s) < 0 && guards_intact(buf, n), "MPI_Isendrecv_replace %zu bytes", n);

        free(sbuf);
        guarded_free(rbuf);
        guarded_free(buf);
    }

    /* _replace with a strided type: every third double of an array. */
    double v[30];
    for (int i = 0; i < 30; i++)
        v[i] = rank * 100 + i;
    MPI_Datatype stride3;
    CHECK_MPI(MPI_Type_vector(10, 1, 3, MPI_DOUBLE, &stride3));
    CHECK_MPI(MPI_Type_commit(&stride3));
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv_replace(v, 1, stride3, right, 5, left, 5, MPI_COMM_WORLD, &st));
    for (int i = 0; i < 30; i++) {
        double want = i % 3 == 0 ? left * 100 + i : rank * 100 + i;
        CHECK(v[i] == want, "strided _replace: v[%d] = %g, expected %g", i, v[i], want);
    }
    CHECK_MPI(MPI_Type_free(&stride3));

    /* MPI_PROC_NULL on either side. */
    int x = rank, y = -1;
    CHECK_MPI(MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 6, &y, 1, MPI_INT, MPI_PROC_NULL, 6, MPI_COMM_WORLD, &st));
    CHECK(y == -1 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "PROC_NULL sendrecv: %d %d/%d",
          y, st.MPI_SOURCE, st.MPI_TAG);
    CHECK_MPI(MPI_Sendrecv_replace(&x, 1, MPI_INT, right, 7, MPI_PROC_NULL, 7, MPI_COMM_WORLD, &st));
    CHECK(x == rank && st.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL source of _replace changed the buffer");
    CHECK_MPI(MPI_Recv(&y, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &st));
    CHECK(y == left, "the _replace with a PROC_NULL source still sends: got %d", y);

    /* Ready mode: receives first (the barrier orders them before every
     * send), then each size by MPI_Rsend and by MPI_Irsend. */
    unsigned char *rbuf[2 * NSIZES], *sbuf[2 * NSIZES];
    MPI_Request rreq[2 * NSIZES], sreq[NSIZES];
    for (size_t k = 0; k < 2 * NSIZES; k++) {
        size_t len = sizes[k % NSIZES];
        rbuf[k] = guarded_alloc(len);
        sbuf[k] = malloc(len ? len : 1);
        payload_fill(sbuf[k], len, rank, 20 + (int)k, 3);
        CHECK_MPI(MPI_Irecv(rbuf[k], (int)len, MPI_BYTE, left, 20 + (int)k, MPI_COMM_WORLD, &rreq[k]));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (size_t k = 0; k < NSIZES; k++)
        CHECK_MPI(MPI_Rsend(sbuf[k], (int)sizes[k], MPI_BYTE, right, 20 + (int)k, MPI_COMM_WORLD));
    for (size_t k = 0; k < NSIZES; k++)
        CHECK_MPI(MPI_Irsend(sbuf[NSIZES + k], (int)sizes[k], MPI_BYTE, right, 20 + (int)(NSIZES + k),
                             MPI_COMM_WORLD, &sreq[k]));
    MPI_Status rst[2 * NSIZES];
    CHECK_MPI(MPI_Waitall((int)(2 * NSIZES), rreq, rst));
    CHECK_MPI(MPI_Waitall((int)NSIZES, sreq, MPI_STATUSES_IGNORE));
    for (size_t k = 0; k < 2 * NSIZES; k++) {
        size_t len = sizes[k % NSIZES];
        int count = -1;
        CHECK_MPI(MPI_Get_count(&rst[k], MPI_BYTE, &count));
        CHECK(rst[k].MPI_SOURCE == left && rst[k].MPI_TAG == 20 + (int)k && count == (int)len,
              "%s of %zu bytes: source %d tag %d count %d", k < NSIZES ? "MPI_Rsend" : "MPI_Irsend", len,
              rst[k].MPI_SOURCE, rst[k].MPI_TAG, count);
        long bad = payload_check(rbuf[k], len, left, 20 + (int)k, 3);
        CHECK(bad < 0 && guards_intact(rbuf[k], len), "%s of %zu bytes: byte %ld wrong or guards hit",
              k < NSIZES ? "MPI_Rsend" : "MPI_Irsend", len, bad);
        guarded_free(rbuf[k]);
        free(sbuf[k]);
    }

    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
