/*
 * truncate: a message longer than the receive buffer gives MPI_ERR_TRUNCATE
 * (the call's return and status.MPI_ERROR) and writes nothing past the
 * buffer, for eager and rendezvous sizes, through MPI_Recv, MPI_Irecv +
 * MPI_Wait, MPI_Waitall (MPI_ERR_IN_STATUS, the failed entry's MPI_ERROR says
 * MPI_ERR_TRUNCATE and the good one's MPI_SUCCESS), and a non-contiguous
 * receive type. Pairs (0,1), (2,3) ...; an odd rank out just checks in.
 */
#include "p2p_util.h"

static const size_t sizes[] = { 8, 465, 4097, 65537, 1u << 20 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int partner = (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL;
    int sender = rank % 2 == 0;

    for (size_t s = 0; s < NSIZES && partner != MPI_PROC_NULL; s++) {
        size_t n = sizes[s], short_n = n / 2;
        if (sender) {
            unsigned char *buf = malloc(n);
            for (int round = 0; round < 4; round++) {
                payload_fill(buf, n, rank, round, (int)s);
                CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, partner, round, MPI_COMM_WORLD));
            }
            /* Round 4: a good message for the Waitall's other entry. */
            payload_fill(buf, 4, rank, 4, (int)s);
            CHECK_MPI(MPI_Send(buf, 4, MPI_BYTE, partner, 4, MPI_COMM_WORLD));
            free(buf);
            continue;
        }
        unsigned char *rbuf = guarded_alloc(short_n);
        MPI_Status st;

        /* MPI_Recv */
        st.MPI_ERROR = MPI_SUCCESS;
        int rc = MPI_Recv(rbuf, (int)short_n, MPI_BYTE, partner, 0, MPI_COMM_WORLD, &st);
        CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "MPI_Recv of %zu into %zu bytes: class %d", n, short_n,
              error_class(rc));
        CHECK(error_class(st.MPI_ERROR) == MPI_ERR_TRUNCATE, "status.MPI_ERROR class %d", error_class(st.MPI_ERROR));
        CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 0, "status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
        /* What the buffer holds is not specified; only that nothing past it changed. */
        CHECK(guards_intact(rbuf, short_n), "MPI_Recv wrote past the buffer (%zu into %zu)", n, short_n);
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        CHECK_MPI(MPI_Error_string(rc, text, &len));
        CHECK(strstr(text, "MPI_Recv") && strstr(text, "MPI_ERR_TRUNCATE"), "error string '%s'", text);

        /* MPI_Irecv + MPI_Wait */
        MPI_Request req;
        CHECK_MPI(MPI_Irecv(rbuf, (int)short_n, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &req));
        rc = MPI_Wait(&req, &st);
        CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "MPI_Wait: class %d", error_class(rc));
        CHECK(req == MPI_REQUEST_NULL, "the failed request was not freed");
        CHECK(guards_intact(rbuf, short_n), "MPI_Irecv wrote past the buffer");

        /* A vector receive type: every other int of a buffer; the message
         * fills fewer ints than it carries. */
        int nint = (int)(short_n / sizeof(int) / 2);
        if (nint > 0) {
            MPI_Datatype vec;
            CHECK_MPI(MPI_Type_vector(nint, 1, 2, MPI_INT, &vec));
            CHECK_MPI(MPI_Type_commit(&vec));
            unsigned char *vbuf = guarded_alloc((size_t)nint * 2 * sizeof(int));
            memset(vbuf, 0x5a, (size_t)nint * 2 * sizeof(int));
            rc = MPI_Recv(vbuf, 1, vec, partner, 2, MPI_COMM_WORLD, &st);
            CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "vector receive: class %d", error_class(rc));
            CHECK(guards_intact(vbuf, (size_t)nint * 2 * sizeof(int)), "the vector receive wrote past the buffer");
            /* The gaps between the vector's ints stay untouched. */
            for (int i = 0; i < nint; i++)
                for (size_t b = 0; b < sizeof(int); b++)
                    CHECK(vbuf[(2 * (size_t)i + 1) * sizeof(int) + b] == 0x5a, "gap %d was written", i);
            guarded_free(vbuf);
            CHECK_MPI(MPI_Type_free(&vec));
        } else {
            CHECK_CLASS(MPI_Recv(rbuf, (int)short_n, MPI_BYTE, partner, 2, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
        }

        /* MPI_Waitall with one truncated and one good receive. */
        MPI_Request reqs[2];
        MPI_Status sts[2];
        unsigned char small[4];
        CHECK_MPI(MPI_Irecv(rbuf, (int)short_n, MPI_BYTE, partner, 3, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Irecv(small, 4, MPI_BYTE, partner, 4, MPI_COMM_WORLD, &reqs[1]));
        rc = MPI_Waitall(2, reqs, sts);
        CHECK(error_class(rc) == MPI_ERR_IN_STATUS, "MPI_Waitall: class %d, expected MPI_ERR_IN_STATUS",
              error_class(rc));
        CHECK(error_class(sts[0].MPI_ERROR) == MPI_ERR_TRUNCATE, "entry 0: MPI_ERROR class %d",
              error_class(sts[0].MPI_ERROR));
        CHECK(sts[1].MPI_ERROR == MPI_SUCCESS, "entry 1: MPI_ERROR %d", sts[1].MPI_ERROR);
        CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "MPI_Waitall left requests");
        CHECK(payload_check(small, 4, partner, 4, (int)s) < 0, "the good receive's bytes are wrong");
        CHECK(guards_intact(rbuf, short_n), "the Waitall receive wrote past the buffer");
        guarded_free(rbuf);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
