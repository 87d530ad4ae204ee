/*
 * Device protocol tests through the MPI calls: eager limit boundary, local
 * completion of eager sends, rendezvous (expected and unexpected), MPI_Ssend
 * acknowledgement, probe / mprobe of rendezvous messages, cancel, truncation
 * of eager and rendezvous messages, many senders into ANY_SOURCE, tag and
 * rank limits, sends to self. Runs on any device; the eager limit comes from
 * HASHI_DIMMNET_EAGER_MAX or HASHI_OFI_EAGER_LIMIT (default 16k) to aim at
 * the boundary.
 *
 *   dev_proto [test ...]      no test names: all of them
 *
 * Prints "rank R of S device ok" when every check passed.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../util/check.h"

static int rank, size;
static size_t eager_limit = 16384;

static double now(void)
{
    return MPI_Wtime();
}

static unsigned char pattern(unsigned seed, size_t i)
{
    return (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static void fill(void *buf, size_t n, unsigned seed)
{
    unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        b[i] = pattern(seed, i);
}

/* Index of the first wrong byte, or (size_t)-1. */
static size_t first_bad(const void *buf, size_t n, unsigned seed)
{
    const unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(seed, i))
            return i;
    return (size_t)-1;
}

#define CHECK_DATA(buf, n, seed, what)                                                          \
    do {                                                                                        \
        size_t bad_ = first_bad((buf), (n), (seed));                                            \
        CHECK(bad_ == (size_t)-1, "%s: byte %zu of %zu wrong", (what), bad_, (size_t)(n));      \
    } while (0)

static void check_status(const MPI_Status *st, int source, int tag, MPI_Count bytes, const char *what)
{
    MPI_Count count;
    CHECK(st->MPI_SOURCE == source, "%s: status source %d, expected %d", what, st->MPI_SOURCE, source);
    CHECK(st->MPI_TAG == tag, "%s: status tag %d, expected %d", what, st->MPI_TAG, tag);
    CHECK_MPI(MPI_Get_count_c(st, MPI_BYTE, &count));
    CHECK(count == bytes, "%s: count %lld, expected %lld", what, (long long)count, (long long)bytes);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    CHECK(p, "out of memory for %zu bytes", n);
    return p;
}

static void pause_ms(int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ tests */

/* limit-1, limit, limit+1: expected (receive first) and unexpected (send first). */
static void test_eager_boundary(void)
{
    size_t sizes[] = { eager_limit - 1, eager_limit, eager_limit + 1 };
    for (int order = 0; order < 2; order++) {
        for (int i = 0; i < 3; i++) {
            size_t n = sizes[i];
            unsigned seed = 10u + (unsigned)i + 3u * (unsigned)order;
            unsigned char *buf = xmalloc(n);
            if (rank == 0) {
                MPI_Request req;
                fill(buf, n, seed);
                if (order == 0)
                    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));  /* the receive is posted */
                CHECK_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, 1, 100 + i, MPI_COMM_WORLD, &req));
                if (order == 1)
                    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));  /* the receive comes after the send */
                CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            } else if (rank == 1) {
                MPI_Request req;
                MPI_Status st;
                memset(buf, 0, n);
                if (order == 0) {
                    CHECK_MPI(MPI_Irecv(buf, (int)n, MPI_BYTE, 0, 100 + i, MPI_COMM_WORLD, &req));
                    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                } else {
                    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                    pause_ms(20);
                    CHECK_MPI(MPI_Irecv(buf, (int)n, MPI_BYTE, 0, 100 + i, MPI_COMM_WORLD, &req));
                }
                CHECK_MPI(MPI_Wait(&req, &st));
                check_status(&st, 0, 100 + i, (MPI_Count)n, "eager boundary");
                CHECK_DATA(buf, n, seed, "eager boundary");
            } else {
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            }
            free(buf);
        }
    }
}

/*
 * A standard send up to the eager limit completes without the receiver: rank
 * 1 receives a later message first, so rank 0 hangs here if it does not.
 */
static void test_eager_local(void)
{
    size_t n = eager_limit;
    unsigned char *buf = xmalloc(n);
    if (rank == 0) {
        fill(buf, n, 21);
        CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, 1, 200, MPI_COMM_WORLD));
        memset(buf, 0, n);  /* reusable at once */
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 201, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Status st;
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 201, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 201, 0, "eager local (marker)");
        CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 0, 200, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 200, (MPI_Count)n, "eager local");
        CHECK_DATA(buf, n, 21, "eager local");
    }
    free(buf);
}

/* 16 MiB each way at once, then a ring of 16 MiB messages. */
static void test_rndv_16m(void)
{
    size_t n = 16u << 20;
    unsigned char *out = xmalloc(n), *in = xmalloc(n);
    int peer = rank ^ 1;
    if (peer < size) {
        MPI_Request reqs[2];
        MPI_Status st[2];
        fill(out, n, 30u + (unsigned)rank);
        memset(in, 0, n);
        CHECK_MPI(MPI_Irecv(in, (int)n, MPI_BYTE, peer, 300, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Isend(out, (int)n, MPI_BYTE, peer, 300, MPI_COMM_WORLD, &reqs[1]));
        CHECK_MPI(MPI_Waitall(2, reqs, st));
        check_status(&st[0], peer, 300, (MPI_Count)n, "16 MiB exchange");
        CHECK_DATA(in, n, 30u + (unsigned)peer, "16 MiB exchange");
    }
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Status st;
    fill(out, n, 40u + (unsigned)rank);
    CHECK_MPI(MPI_Sendrecv(out, (int)n, MPI_BYTE, next, 301, in, (int)n, MPI_BYTE, prev, 301, MPI_COMM_WORLD, &st));
    check_status(&st, prev, 301, (MPI_Count)n, "16 MiB ring");
    CHECK_DATA(in, n, 40u + (unsigned)prev, "16 MiB ring");
    free(out);
    free(in);
}

/* The sender starts a 16 MiB send first; the receiver posts 200 ms later. */
static void test_rndv_unexpected(void)
{
    size_t n = 16u << 20;
    unsigned char *buf = xmalloc(n);
    if (rank == 0) {
        MPI_Request req;
        fill(buf, n, 50);
        CHECK_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, 1, 400, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else if (rank == 1) {
        MPI_Status st;
        pause_ms(200);
        memset(buf, 0, n);
        CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 0, 400, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 400, (MPI_Count)n, "unexpected rendezvous");
        CHECK_DATA(buf, n, 50, "unexpected rendezvous");
    }
    free(buf);
}

/*
 * MPI_Issend stays incomplete until the receiver matches it: rank 1 posts
 * its receive only after rank 0 has tested the request for 100 ms and told
 * it to go (by a message with another tag).
 */
static void test_ssend(void)
{
    size_t sizes[] = { 0, 8, eager_limit, eager_limit + 1, 1u << 20 };
    for (int i = 0; i < 5; i++) {
        size_t n = sizes[i];
        unsigned char *buf = xmalloc(n);
        if (rank == 0) {
            MPI_Request req;
            int done = 0;
            fill(buf, n, 60u + (unsigned)i);
            CHECK_MPI(MPI_Issend(buf, (int)n, MPI_BYTE, 1, 500, MPI_COMM_WORLD, &req));
            double until = now() + 0.1;
            while (now() < until) {
                CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
                CHECK(!done, "MPI_Issend of %zu bytes completed before the receive was posted", n);
            }
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 501, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else if (rank == 1) {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 501, MPI_COMM_WORLD, &st));
            memset(buf, 0, n);
            CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 0, 500, MPI_COMM_WORLD, &st));
            check_status(&st, 0, 500, (MPI_Count)n, "ssend");
            CHECK_DATA(buf, n, 60u + (unsigned)i, "ssend");
        }
        free(buf);
    }
    /* Blocking MPI_Ssend both ways (receives posted first). */
    if (rank < 2 && size >= 2) {
        size_t n = eager_limit + 100;
        unsigned char *out = xmalloc(n), *in = xmalloc(n);
        MPI_Request req;
        MPI_Status st;
        fill(out, n, 65u + (unsigned)rank);
        CHECK_MPI(MPI_Irecv(in, (int)n, MPI_BYTE, 1 - rank, 502, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Ssend(out, (int)n, MPI_BYTE, 1 - rank, 502, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&req, &st));
        check_status(&st, 1 - rank, 502, (MPI_Count)n, "ssend both ways");
        CHECK_DATA(in, n, 65u + (unsigned)(1 - rank), "ssend both ways");
        free(out);
        free(in);
    }
}

/* Probe reports a rendezvous message's full size; Mprobe / Improbe take it. */
static void test_probe(void)
{
    size_t big = (1u << 20) + 5, small = 100, big2 = 3u << 20;
    if (rank == 0) {
        unsigned char *a = xmalloc(big), *b = xmalloc(small), *c = xmalloc(big2);
        fill(a, big, 70);
        fill(b, small, 71);
        fill(c, big2, 72);
        MPI_Request reqs[4];
        CHECK_MPI(MPI_Isend(a, (int)big, MPI_BYTE, 1, 600, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Isend(b, (int)small, MPI_BYTE, 1, 601, MPI_COMM_WORLD, &reqs[1]));
        CHECK_MPI(MPI_Isend(c, (int)big2, MPI_BYTE, 1, 602, MPI_COMM_WORLD, &reqs[2]));
        CHECK_MPI(MPI_Isend(NULL, 0, MPI_BYTE, 1, 603, MPI_COMM_WORLD, &reqs[3]));
        CHECK_MPI(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
        free(a);
        free(b);
        free(c);
    } else if (rank == 1) {
        MPI_Status st;
        MPI_Message msg;
        int flag = 0;
        /* Probe with wildcards finds the rendezvous message and its size. */
        CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, 600, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 600, (MPI_Count)big, "probe of a rendezvous message");
        /* Probing again finds the same message (nothing was consumed). */
        double until = now() + 10;
        while (!flag && now() < until)
            CHECK_MPI(MPI_Iprobe(0, 600, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag, "MPI_Iprobe lost the message MPI_Probe found");
        check_status(&st, 0, 600, (MPI_Count)big, "iprobe of a rendezvous message");
        unsigned char *a = xmalloc(big);
        CHECK_MPI(MPI_Recv(a, (int)big, MPI_BYTE, 0, 600, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 600, (MPI_Count)big, "receive after probe");
        CHECK_DATA(a, big, 70, "receive after probe");
        free(a);

        /* Mprobe with ANY_TAG takes the eager message (the next in order). */
        CHECK_MPI(MPI_Mprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
        check_status(&st, 0, 601, (MPI_Count)small, "mprobe of an eager message");
        unsigned char *b = xmalloc(small);
        CHECK_MPI(MPI_Mrecv(b, (int)small, MPI_BYTE, &msg, &st));
        CHECK(msg == MPI_MESSAGE_NULL, "MPI_Mrecv did not reset the message handle");
        check_status(&st, 0, 601, (MPI_Count)small, "mrecv");
        CHECK_DATA(b, small, 71, "mrecv");
        free(b);

        /* Improbe + Imrecv of the second rendezvous message. */
        flag = 0;
        until = now() + 10;
        while (!flag && now() < until)
            CHECK_MPI(MPI_Improbe(MPI_ANY_SOURCE, 602, MPI_COMM_WORLD, &flag, &msg, &st));
        CHECK(flag, "MPI_Improbe never found the rendezvous message");
        check_status(&st, 0, 602, (MPI_Count)big2, "improbe of a rendezvous message");
        /* Claimed: a probe must not see it any more. */
        CHECK_MPI(MPI_Iprobe(0, 602, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "a message taken by MPI_Improbe is still visible to MPI_Iprobe");
        unsigned char *c = xmalloc(big2);
        MPI_Request req;
        CHECK_MPI(MPI_Imrecv(c, (int)big2, MPI_BYTE, &msg, &req));
        CHECK_MPI(MPI_Wait(&req, &st));
        check_status(&st, 0, 602, (MPI_Count)big2, "imrecv");
        CHECK_DATA(c, big2, 72, "imrecv");
        free(c);

        /* Zero bytes: probe reports 0, a tiny receive gets it. */
        CHECK_MPI(MPI_Probe(0, 603, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 603, 0, "probe of a zero-byte message");
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 603, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 603, 0, "zero-byte receive");
    }
}

/* Cancel a posted receive; a cancelled receive takes no message. */
static void test_cancel(void)
{
    if (rank == 1) {
        MPI_Request req;
        MPI_Status st;
        int cancelled = 0;
        char buf[64];
        CHECK_MPI(MPI_Irecv(buf, sizeof buf, MPI_BYTE, 0, 700, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        CHECK(cancelled, "a posted receive nobody sends to was not cancelled");
        /* A large cancelled receive too. */
        unsigned char *big = xmalloc(1u << 20);
        CHECK_MPI(MPI_Irecv(big, 1 << 20, MPI_BYTE, MPI_ANY_SOURCE, 701, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        CHECK(cancelled, "a posted ANY_SOURCE receive was not cancelled");
        free(big);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* Now the messages come: the cancelled receives must not have taken them. */
    if (rank == 0) {
        char msg[64];
        fill(msg, sizeof msg, 80);
        unsigned char *big = xmalloc(1u << 20);
        fill(big, 1u << 20, 81);
        CHECK_MPI(MPI_Send(msg, sizeof msg, MPI_BYTE, 1, 700, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(big, 1 << 20, MPI_BYTE, 1, 701, MPI_COMM_WORLD));
        free(big);
    } else if (rank == 1) {
        char buf[64];
        MPI_Status st;
        CHECK_MPI(MPI_Recv(buf, sizeof buf, MPI_BYTE, 0, 700, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 700, sizeof buf, "receive after cancel");
        CHECK_DATA(buf, sizeof buf, 80, "receive after cancel");
        unsigned char *big = xmalloc(1u << 20);
        CHECK_MPI(MPI_Recv(big, 1 << 20, MPI_BYTE, 0, 701, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 701, 1 << 20, "large receive after cancel");
        CHECK_DATA(big, 1u << 20, 81, "large receive after cancel");
        free(big);
    }
    /* Cancel of a receive whose message is there: if the cancel wins, the
     * message stays for the next receive; else the data is intact. */
    if (rank == 0) {
        char msg[32];
        fill(msg, sizeof msg, 82);
        CHECK_MPI(MPI_Send(msg, sizeof msg, MPI_BYTE, 1, 702, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Request req;
        MPI_Status st;
        char buf[32];
        int cancelled = 1;
        CHECK_MPI(MPI_Probe(0, 702, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Irecv(buf, sizeof buf, MPI_BYTE, 0, 702, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        if (cancelled)
            CHECK_MPI(MPI_Recv(buf, sizeof buf, MPI_BYTE, 0, 702, MPI_COMM_WORLD, &st));
        check_status(&st, 0, 702, sizeof buf, "matched receive after cancel");
        CHECK_DATA(buf, sizeof buf, 82, "matched receive after cancel");
    }
}

/* One truncated receive; the bytes past the buffer must stay untouched. */
static void truncated_recv(size_t sent, size_t room, int mode, unsigned seed, int tag)
{
    if (rank == 0) {
        unsigned char *buf = xmalloc(sent);
        fill(buf, sent, seed);
        if (mode == 's')
            CHECK_MPI(MPI_Ssend(buf, (int)sent, MPI_BYTE, 1, tag, MPI_COMM_WORLD));
        else
            CHECK_MPI(MPI_Send(buf, (int)sent, MPI_BYTE, 1, tag, MPI_COMM_WORLD));
        free(buf);
    } else if (rank == 1) {
        size_t guard = 64;
        unsigned char *buf = xmalloc(room + guard);
        MPI_Status st;
        memset(buf, 0xEE, room + guard);
        MPI_Count count = -1;
        int rc = MPI_Recv(buf, (int)room, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "receiving %zu bytes into %zu: error class %d, expected MPI_ERR_TRUNCATE",
              sent, room, cls);
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == tag, "truncated receive: status source %d tag %d", st.MPI_SOURCE,
              st.MPI_TAG);
        /* The count says how many bytes were written: they are the message's
         * first bytes, and nothing after them changed. */
        CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &count));
        CHECK(count >= 0 && (size_t)count <= room, "truncated receive of %zu into %zu reports %lld bytes", sent,
              room, (long long)count);
        CHECK_DATA(buf, (size_t)count, seed, "truncated receive");
        for (size_t i = (size_t)count; i < room + guard; i++)
            CHECK(buf[i] == 0xEE, "truncated receive of %zu into %zu (count %lld) changed byte %zu", sent, room,
                  (long long)count, i);
        free(buf);
    }
}

static void test_truncate(void)
{
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    truncated_recv(100, 50, 'n', 90, 800);                            /* eager */
    truncated_recv(eager_limit, eager_limit - 1, 'n', 91, 801);       /* eager, at the limit */
    truncated_recv((1u << 20) + 3, 1000, 'n', 92, 802);               /* rendezvous */
    truncated_recv((1u << 20), 8, 'n', 93, 803);                      /* rendezvous into a tiny buffer */
    truncated_recv((1u << 20), 0, 'n', 94, 804);                      /* rendezvous into nothing */
    truncated_recv(64, 10, 's', 95, 805);                             /* synchronous eager */
    truncated_recv(eager_limit + 10, (eager_limit + 10) / 2, 's', 96, 806);  /* synchronous rendezvous */
    /* The connection still works afterwards. */
    if (rank == 0) {
        char msg[16];
        fill(msg, sizeof msg, 97);
        CHECK_MPI(MPI_Send(msg, sizeof msg, MPI_BYTE, 1, 807, MPI_COMM_WORLD));
    } else if (rank == 1) {
        char buf[16];
        MPI_Status st;
        CHECK_MPI(MPI_Recv(buf, sizeof buf, MPI_BYTE, 0, 807, MPI_COMM_WORLD, &st));
        CHECK_DATA(buf, sizeof buf, 97, "receive after truncations");
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/*
 * Every other rank sends a stream of mixed sizes (eager and rendezvous) to
 * rank 0, which receives them all with MPI_ANY_SOURCE / MPI_ANY_TAG and
 * checks contents and, per sender, the order.
 */
#define M2O_COUNT 60
static size_t m2o_size(int seq)
{
    size_t sizes[] = { 0, 8, 64, eager_limit - 1, eager_limit, eager_limit + 1, 70000, 4096 };
    return sizes[seq % 8];
}

static void test_many_to_one(void)
{
    size_t max = 70000 + 16;
    unsigned char *buf = xmalloc(max);
    if (rank == 0) {
        int *next = calloc((size_t)size, sizeof *next);
        CHECK(next, "out of memory");
        int total = (size - 1) * M2O_COUNT;
        for (int k = 0; k < total; k++) {
            MPI_Status st;
            MPI_Count count;
            CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            int src = st.MPI_SOURCE, seq = next[src]++;
            CHECK(src > 0 && src < size, "ANY_SOURCE status source %d", src);
            CHECK(st.MPI_TAG == 900 + seq % 3, "message %d from rank %d has tag %d, expected %d (order broken?)",
                  seq, src, st.MPI_TAG, 900 + seq % 3);
            CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &count));
            CHECK(count == (MPI_Count)m2o_size(seq), "message %d from rank %d: %lld bytes, expected %zu", seq, src,
                  (long long)count, m2o_size(seq));
            CHECK_DATA(buf, m2o_size(seq), (unsigned)(src * 1000 + seq), "many-to-one");
        }
        for (int r = 1; r < size; r++)
            CHECK(next[r] == M2O_COUNT, "got %d messages from rank %d, expected %d", next[r], r, M2O_COUNT);
        free(next);
    } else {
        MPI_Request reqs[M2O_COUNT];
        unsigned char *bufs[M2O_COUNT];
        for (int seq = 0; seq < M2O_COUNT; seq++) {
            size_t n = m2o_size(seq);
            bufs[seq] = xmalloc(n);
            fill(bufs[seq], n, (unsigned)(rank * 1000 + seq));
            CHECK_MPI(MPI_Isend(bufs[seq], (int)n, MPI_BYTE, 0, 900 + seq % 3, MPI_COMM_WORLD, &reqs[seq]));
        }
        CHECK_MPI(MPI_Waitall(M2O_COUNT, reqs, MPI_STATUSES_IGNORE));
        for (int seq = 0; seq < M2O_COUNT; seq++)
            free(bufs[seq]);
    }
    free(buf);
}

/* Tags up to MPI_TAG_UB travel; beyond it and invalid ranks are errors. */
static void test_limits(void)
{
    int *tag_ub_p = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub_p, &flag));
    CHECK(flag && tag_ub_p, "MPI_TAG_UB attribute missing");
    int tag_ub = *tag_ub_p;
    CHECK(tag_ub >= (1 << 23) - 1, "MPI_TAG_UB %d below 2^23-1", tag_ub);
    if (rank == 0) {
        int v = 12345;
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 1, tag_ub, MPI_COMM_WORLD));
    } else if (rank == 1) {
        int v = 0;
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 0, tag_ub, MPI_COMM_WORLD, &st));
        CHECK(v == 12345 && st.MPI_TAG == tag_ub, "message with tag MPI_TAG_UB: value %d tag %d", v, st.MPI_TAG);
        /* ANY_TAG reports the full tag too. */
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int cls, rc, v = 1;
    if (tag_ub < 0x7fffffff) {
        rc = MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, tag_ub + 1, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TAG, "send with tag MPI_TAG_UB+1: error class %d, expected MPI_ERR_TAG", cls);
        MPI_Request req;
        rc = MPI_Irecv(&v, 1, MPI_INT, 0, tag_ub + 1, MPI_COMM_WORLD, &req);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TAG, "receive with tag MPI_TAG_UB+1: error class %d, expected MPI_ERR_TAG", cls);
    }
    rc = MPI_Send(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TAG, "send with tag -5: error class %d, expected MPI_ERR_TAG", cls);
    rc = MPI_Send(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "send to rank %d of %d: error class %d, expected MPI_ERR_RANK", size, size, cls);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Eager, rendezvous and synchronous messages to oneself. */
static void test_self(void)
{
    size_t sizes[] = { 0, 5, eager_limit, eager_limit + 1, 4u << 20 };
    for (int i = 0; i < 5; i++) {
        size_t n = sizes[i];
        unsigned char *out = xmalloc(n), *in = xmalloc(n);
        MPI_Request reqs[2];
        MPI_Status st;
        fill(out, n, 110u + (unsigned)i);
        memset(in, 0, n);
        if (i % 2) {
            CHECK_MPI(MPI_Issend(out, (int)n, MPI_BYTE, rank, 1000 + i, MPI_COMM_WORLD, &reqs[0]));
            CHECK_MPI(MPI_Irecv(in, (int)n, MPI_BYTE, rank, 1000 + i, MPI_COMM_WORLD, &reqs[1]));
        } else {
            CHECK_MPI(MPI_Isend(out, (int)n, MPI_BYTE, rank, 1000 + i, MPI_COMM_WORLD, &reqs[0]));
            CHECK_MPI(MPI_Irecv(in, (int)n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &reqs[1]));
        }
        CHECK_MPI(MPI_Wait(&reqs[1], &st));
        CHECK_MPI(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
        check_status(&st, rank, 1000 + i, (MPI_Count)n, "send to self");
        CHECK_DATA(in, n, 110u + (unsigned)i, "send to self");
        free(out);
        free(in);
    }
}

/* Eager and rendezvous messages with one tag stay in order. */
static void test_order(void)
{
    enum { N = 40 };
    if (rank == 0) {
        MPI_Request reqs[N];
        unsigned char *bufs[N];
        for (int i = 0; i < N; i++) {
            size_t n = i % 3 == 2 ? eager_limit * 4 + (size_t)i : (size_t)(i * 13);
            bufs[i] = xmalloc(n);
            fill(bufs[i], n, 120u + (unsigned)i);
            CHECK_MPI(MPI_Isend(bufs[i], (int)n, MPI_BYTE, 1, 1100, MPI_COMM_WORLD, &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < N; i++)
            free(bufs[i]);
    } else if (rank == 1) {
        size_t max = eager_limit * 4 + N > N * 13 ? eager_limit * 4 + N : N * 13;
        unsigned char *buf = xmalloc(max);
        for (int i = 0; i < N; i++) {
            MPI_Status st;
            size_t n = i % 3 == 2 ? eager_limit * 4 + (size_t)i : (size_t)(i * 13);
            CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, 0, 1100, MPI_COMM_WORLD, &st));
            check_status(&st, 0, 1100, (MPI_Count)n, "mixed-protocol order");
            CHECK_DATA(buf, n, 120u + (unsigned)i, "mixed-protocol order");
        }
        free(buf);
    }
}

static const struct {
    const char *name;
    void (*fn)(void);
    int min_ranks;
} tests[] = {
    { "eager_boundary", test_eager_boundary, 2 },
    { "eager_local", test_eager_local, 2 },
    { "rndv_16m", test_rndv_16m, 2 },
    { "rndv_unexpected", test_rndv_unexpected, 2 },
    { "ssend", test_ssend, 2 },
    { "probe", test_probe, 2 },
    { "cancel", test_cancel, 2 },
    { "truncate", test_truncate, 2 },
    { "many_to_one", test_many_to_one, 2 },
    { "limits", test_limits, 2 },
    { "self", test_self, 1 },
    { "order", test_order, 2 },
};

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end == 'k' || *end == 'K') v <<= 10;
    else if (*end == 'm' || *end == 'M') v <<= 20;
    else if (*end == 'g' || *end == 'G') v <<= 30;
    return (size_t)v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* The limit of the device under test: the ofi device's, or dimmnet's
     * when its entry sets it (dimmnet's default on emu is 4k). */
    const char *limit = getenv("HASHI_OFI_EAGER_LIMIT");
    const char *dn_limit = getenv("HASHI_DIMMNET_EAGER_MAX");
    if (dn_limit && *dn_limit)
        limit = dn_limit;
    if (limit && *limit)
        eager_limit = parse_size(limit);
    if (eager_limit < 32)
        eager_limit = 32;  /* the device's floor: an RTS must fit */
    int ntests = (int)(sizeof tests / sizeof *tests);
    for (int i = 0; i < ntests; i++) {
        int wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], tests[i].name) == 0;
        if (!wanted || size < tests[i].min_ranks)
            continue;
        tests[i].fn();
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    for (int a = 1; a < argc; a++) {
        int known = 0;
        for (int i = 0; i < ntests; i++)
            known |= strcmp(argv[a], tests[i].name) == 0;
        CHECK(known, "unknown test %s", argv[a]);
    }
    printf("rank %d of %d device ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
