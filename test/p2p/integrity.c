/*
 * integrity: messages arrive byte for byte at every size that crosses a
 * protocol boundary (0, 1, 8, 464/465, 4 KiB +- 1, 64 KiB +- 1, 1 MiB,
 * 16 MiB), with exact status fields and counts and nothing written past the
 * receive buffer. Each size runs three ways: a ring of Irecv + Send, pairs
 * with blocking Send/Recv (even ranks first), and Isend/Irecv both ways
 * between pairs with Waitall. MPI_INT variants check counts in elements.
 */
#include "p2p_util.h"

static const size_t sizes[] = {
    0, 1, 8, 464, 465, 4095, 4096, 4097, 65535, 65536, 65537, 1u << 20, 16u << 20,
};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void check_status(const MPI_Status *st, int source, int tag, size_t bytes, const char *what)
{
    int count = -1;
    MPI_Count count_c = -1;
    CHECK(st->MPI_SOURCE == source, "%s: MPI_SOURCE %d, expected %d", what, st->MPI_SOURCE, source);
    CHECK(st->MPI_TAG == tag, "%s: MPI_TAG %d, expected %d", what, st->MPI_TAG, tag);
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK(count == (int)bytes, "%s: MPI_Get_count %d, expected %zu", what, count, bytes);
    CHECK_MPI(MPI_Get_count_c(st, MPI_BYTE, &count_c));
    CHECK(count_c == (MPI_Count)bytes, "%s: MPI_Get_count_c %lld, expected %zu", what, (long long)count_c, bytes);
    int cancelled = -1;
    CHECK_MPI(MPI_Test_cancelled(st, &cancelled));
    CHECK(cancelled == 0, "%s: the status says cancelled", what);
}

static void check_payload(const unsigned char *buf, size_t n, int source, int tag, int seq, const char *what)
{
    long bad = payload_check(buf, n, source, tag, seq);
    CHECK(bad < 0, "%s: %zu bytes from rank %d, byte %ld is wrong", what, n, source, bad);
    CHECK(guards_intact(buf, n), "%s: %zu bytes from rank %d: the guard zone was overwritten", what, n, source);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2, "run with at least 2 ranks");
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int partner = (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL;
    char what[128];

    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = sizes[s];
        unsigned char *sbuf = malloc(n ? n : 1);
        unsigned char *rbuf = guarded_alloc(n);
        CHECK(sbuf, "out of memory");
        MPI_Status st;

        /* 1. Ring: receive from the left, send to the right. */
        int tag = (int)s + 1;
        payload_fill(sbuf, n, rank, tag, 1);
        MPI_Request rreq;
        CHECK_MPI(MPI_Irecv(rbuf, (int)n, MPI_BYTE, left, tag, MPI_COMM_WORLD, &rreq));
        CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, right, tag, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&rreq, &st));
        CHECK(rreq == MPI_REQUEST_NULL, "MPI_Wait left the request set");
        snprintf(what, sizeof what, "ring, %zu bytes", n);
        check_status(&st, left, tag, n, what);
        check_payload(rbuf, n, left, tag, 1, what);

        /* 2. Pairs, blocking, the even rank sends first. */
        if (partner != MPI_PROC_NULL) {
            tag = 1000 + (int)s;
            payload_fill(sbuf, n, rank, tag, 2);
            memset(rbuf, 0, n);
            if (rank % 2 == 0) {
                CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, partner, tag, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
            } else {
                CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
                CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, partner, tag, MPI_COMM_WORLD));
            }
            snprintf(what, sizeof what, "blocking pair, %zu bytes", n);
            check_status(&st, partner, tag, n, what);
            check_payload(rbuf, n, partner, tag, 2, what);
        }

        /* 3. Pairs, nonblocking both ways at once, as MPI_INT when it divides. */
        if (partner != MPI_PROC_NULL) {
            tag = 2000 + (int)s;
            payload_fill(sbuf, n, rank, tag, 3);
            memset(rbuf, 0, n);
            int use_int = n % sizeof(int) == 0 && n > 0;
            MPI_Datatype type = use_int ? MPI_INT : MPI_BYTE;
            MPI_Count count = use_int ? (MPI_Count)(n / sizeof(int)) : (MPI_Count)n;
            MPI_Request reqs[2];
            MPI_Status sts[2];
            CHECK_MPI(MPI_Irecv_c(rbuf, count, type, partner, tag, MPI_COMM_WORLD, &reqs[0]));
            CHECK_MPI(MPI_Isend_c(sbuf, count, type, partner, tag, MPI_COMM_WORLD, &reqs[1]));
            CHECK_MPI(MPI_Waitall(2, reqs, sts));
            CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "MPI_Waitall left requests set");
            snprintf(what, sizeof what, "nonblocking pair, %zu bytes", n);
            CHECK(sts[0].MPI_SOURCE == partner && sts[0].MPI_TAG == tag, "%s: status %d/%d", what,
                  sts[0].MPI_SOURCE, sts[0].MPI_TAG);
            MPI_Count got = -1;
            CHECK_MPI(MPI_Get_count_c(&sts[0], type, &got));
            CHECK(got == count, "%s: MPI_Get_count_c %lld, expected %lld", what, (long long)got, (long long)count);
            MPI_Count elements = -1;
            CHECK_MPI(MPI_Get_elements_c(&sts[0], type, &elements));
            CHECK(elements == count, "%s: MPI_Get_elements_c %lld, expected %lld", what, (long long)elements,
                  (long long)count);
            check_payload(rbuf, n, partner, tag, 3, what);
        }
        free(sbuf);
        guarded_free(rbuf);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
