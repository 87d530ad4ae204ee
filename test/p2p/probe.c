/*
 * probe: MPI_Probe / MPI_Iprobe report a pending message's source, tag and
 * length without receiving it (the receive that follows gets exactly it);
 * MPI_Mprobe / MPI_Improbe take a message out of matching, so a receive or
 * another probe posted afterwards cannot get it, and MPI_Mrecv / MPI_Imrecv
 * receive exactly that message; MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC.
 * Rank 0 probes messages from every other rank, in eager and rendezvous sizes.
 */
#include "p2p_util.h"

static const size_t sizes[] = { 0, 17, 4097, 300000 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void check_probed(const MPI_Status *st, int src, int tag, size_t n, const char *what)
{
    int count = -1;
    CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag, "%s: probed (%d, %d), expected (%d, %d)", what,
          st->MPI_SOURCE, st->MPI_TAG, src, tag);
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK(count == (int)n, "%s: probed count %d, expected %zu", what, count, n);
}

static void receive_and_check(void *buf, int src, int tag, size_t n, int seq, const char *what)
{
    MPI_Status st;
    CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st));
    check_probed(&st, src, tag, n, what);
    CHECK(payload_check(buf, n, src, tag, seq) < 0, "%s: wrong bytes", what);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2, "run with at least 2 ranks");
    size_t max = sizes[NSIZES - 1];
    unsigned char *buf = malloc(max), *buf2 = malloc(max);

    if (rank != 0) {
        /* Per size: tag 1 (probe + recv), tag 2 (iprobe + recv), tag 3 twice
         * (mprobe, then a plain receive gets the second one), tag 4 (improbe
         * + imrecv); plus 10 per size, so no size's probe sees the next one's. */
        for (size_t s = 0; s < NSIZES; s++) {
            size_t n = sizes[s];
            const int base = 10 * (int)s, tags[] = { base + 1, base + 2, base + 3, base + 3, base + 4 };
            /* Nonblocking: the second tag-3 message must go out while the
             * first, matched by MPI_Mprobe, waits for its MPI_Mrecv. */
            MPI_Request reqs[5];
            unsigned char *bufs[5];
            for (int k = 0; k < 5; k++) {
                bufs[k] = malloc(n ? n : 1);
                payload_fill(bufs[k], n, rank, tags[k], (int)s * 10 + k);
                CHECK_MPI(MPI_Isend(bufs[k], (int)n, MPI_BYTE, 0, tags[k], MPI_COMM_WORLD, &reqs[k]));
            }
            CHECK_MPI(MPI_Waitall(5, reqs, MPI_STATUSES_IGNORE));
            for (int k = 0; k < 5; k++)
                free(bufs[k]);
        }
    } else {
        for (size_t s = 0; s < NSIZES; s++) {
            size_t n = sizes[s];
            int base = 10 * (int)s;
            for (int src = 1; src < size; src++) {
                MPI_Status st;
                /* Probe with wildcards, then receive the probed message. */
                CHECK_MPI(MPI_Probe(src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                check_probed(&st, src, base + 1, n, "MPI_Probe");
                receive_and_check(buf, src, base + 1, n, (int)s * 10 + 0, "after MPI_Probe");

                /* Iprobe until it is there; probing again still finds it. */
                int flag = 0;
                double end = MPI_Wtime() + 20;
                while (!flag && MPI_Wtime() < end)
                    CHECK_MPI(MPI_Iprobe(src, base + 2, MPI_COMM_WORLD, &flag, &st));
                CHECK(flag, "MPI_Iprobe never found rank %d's tag %d message", src, base + 2);
                CHECK_MPI(MPI_Iprobe(src, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
                CHECK(flag, "a second MPI_Iprobe lost the message");
                check_probed(&st, src, base + 2, n, "MPI_Iprobe");
                receive_and_check(buf, src, base + 2, n, (int)s * 10 + 1, "after MPI_Iprobe");

                /* Mprobe the first tag-3 message; a plain receive then gets the
                 * second, and Mrecv the first. */
                MPI_Message msg = MPI_MESSAGE_NULL;
                CHECK_MPI(MPI_Mprobe(src, base + 3, MPI_COMM_WORLD, &msg, &st));
                CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "MPI_Mprobe gave no message");
                check_probed(&st, src, base + 3, n, "MPI_Mprobe");
                receive_and_check(buf2, src, base + 3, n, (int)s * 10 + 3, "receive after MPI_Mprobe");
                memset(buf, 0, max);
                CHECK_MPI(MPI_Mrecv(buf, (int)n, MPI_BYTE, &msg, &st));
                CHECK(msg == MPI_MESSAGE_NULL, "MPI_Mrecv did not reset the message handle");
                check_probed(&st, src, base + 3, n, "MPI_Mrecv");
                CHECK(payload_check(buf, n, src, base + 3, (int)s * 10 + 2) < 0, "MPI_Mrecv got other bytes");

                /* Improbe until found, then Imrecv. */
                flag = 0;
                end = MPI_Wtime() + 20;
                while (!flag && MPI_Wtime() < end)
                    CHECK_MPI(MPI_Improbe(src, base + 4, MPI_COMM_WORLD, &flag, &msg, &st));
                CHECK(flag, "MPI_Improbe never found rank %d's tag %d message", src, base + 4);
                check_probed(&st, src, base + 4, n, "MPI_Improbe");
                CHECK_MPI(MPI_Iprobe(src, base + 4, MPI_COMM_WORLD, &flag, &st));
                CHECK(!flag, "a message taken by MPI_Improbe is still visible to MPI_Iprobe");
                MPI_Request req;
                CHECK_MPI(MPI_Imrecv(buf, (int)n, MPI_BYTE, &msg, &req));
                CHECK(msg == MPI_MESSAGE_NULL, "MPI_Imrecv did not reset the message handle");
                CHECK_MPI(MPI_Wait(&req, &st));
                check_probed(&st, src, base + 4, n, "MPI_Imrecv");
                CHECK(payload_check(buf, n, src, base + 4, (int)s * 10 + 4) < 0, "MPI_Imrecv got other bytes");
            }
        }
        /* MPI_PROC_NULL */
        MPI_Status st;
        MPI_Message msg = MPI_MESSAGE_NULL;
        int flag = 0;
        CHECK_MPI(MPI_Probe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "Probe(PROC_NULL) status %d/%d",
              st.MPI_SOURCE, st.MPI_TAG);
        CHECK_MPI(MPI_Iprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag && st.MPI_SOURCE == MPI_PROC_NULL, "Iprobe(PROC_NULL): flag %d", flag);
        CHECK_MPI(MPI_Improbe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &msg, &st));
        CHECK(flag && msg == MPI_MESSAGE_NO_PROC, "Improbe(PROC_NULL) gave no MPI_MESSAGE_NO_PROC");
        CHECK_MPI(MPI_Mrecv(buf, 4, MPI_BYTE, &msg, &st));
        int count = -1;
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(msg == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL && count == 0,
              "Mrecv(MPI_MESSAGE_NO_PROC): source %d count %d", st.MPI_SOURCE, count);
        CHECK_MPI(MPI_Mprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &msg, &st));
        CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL)");
        MPI_Request req;
        CHECK_MPI(MPI_Imrecv(buf, 4, MPI_BYTE, &msg, &req));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Imrecv(MPI_MESSAGE_NO_PROC): source %d", st.MPI_SOURCE);
    }
    free(buf);
    free(buf2);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
