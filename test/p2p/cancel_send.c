/*
 * cancel_send: MPI_Cancel of sends, deterministically. The argument says
 * what the cell does (docs/p2p.md, "Cancelling sends"):
 *   all    the device withdraws unmatched sends (the matching core) and
 *          HASHI_CANCEL_SENDS=all: every one is cancelled;
 *   auto   the same device, HASHI_CANCEL_SENDS=auto: every one but a small
 *          MPI_Isend, which completes in the call with the shared request
 *          and is delivered;
 *   tagged the ofi device's tagged matching (docs/ofi.md): rendezvous and
 *          synchronous sends are withdrawn, eager ones (complete once
 *          out, unnamed) are not and are delivered;
 *   keeps  HASHI_CANCEL_SENDS=none: none is cancelled and every message is
 *          delivered exactly once.
 *
 * Each rank sends to its right neighbour and receives from its left one.
 *   unmatched: the receiver has posted nothing (it is in MPI_Wait of its own
 *     cancels, then a barrier, both of which progress). The sender starts an
 *     eager and a rendezvous MPI_Isend, an MPI_Issend of each size, an
 *     MPI_Ibsend of each size and persistent standard, synchronous and
 *     buffered sends (each with its own tag, after one plain message on that
 *     tag), cancels and waits. Each one cancelled leaves nothing (the
 *     receiver's Iprobe after the first message finds nothing); each one
 *     not cancelled (waited for after the receiver took it) arrives exactly
 *     once, in order. A third message on every tag arrives after them (the
 *     persistent requests started again).
 *   matched: the receiver has received the message (eager and rendezvous)
 *     before the sender cancels: not cancelled, delivered once.
 *   to self: an eager and a rendezvous send on MPI_COMM_SELF; Isend, Ibsend
 *     and Bsend_init to MPI_PROC_NULL: not cancelled.
 *   ANY_SOURCE: an eager message, then a rendezvous one on another tag that
 *     is cancelled, then a third on that tag; MPI_ANY_SOURCE + MPI_ANY_TAG
 *     receives get the first and the third (and the second in between where
 *     it is not cancelled), each checked by its bytes.
 *   loops (all, auto): 1000 eager send / cancel / wait (MPI_Isend under
 *     all, a persistent send under auto), 100 rendezvous and 100
 *     synchronous ones, all cancelled; keeps (and tagged) receive 1000
 *     eager ones instead; tagged cancels the rendezvous and synchronous ones.
 *     Then a window of 200 eager messages and one rendezvous message still
 *     flow (the device's eager credits came back).
 */
#include "p2p_util.h"

#define EAGER 1024
#define RNDV (256 << 10)   /* above every eager limit (64 KiB at most) */
#define TAG_MATCHED 900
#define TAG_LOOP 901
#define TAG_AFTER 902
#define TAG_ANY_FIRST 903
#define TAG_ANY_NEXT 904
#define LOOP_EAGER 1000
#define LOOP_RNDV 100
#define LOOP_SYNC 100
#define WINDOW 200

enum kind { ISEND, ISSEND, IBSEND, PSEND, PSSEND, PBSEND, KINDS };
static const char *kind_name[KINDS] = { "Isend", "Issend", "Ibsend", "Send_init", "Ssend_init", "Bsend_init" };

enum mode { ALL, AUTO, TAGGED, KEEPS };
static enum mode mode;
static int rank, size, right, left;

static int tag_of(int kind, int big)
{
    return 100 + kind * 2 + big;
}

static size_t bytes_of(int big)
{
    return big ? RNDV : EAGER;
}

/* Whether a send of this kind and size is withdrawn before its receive. */
static int cancellable(int kind, int big)
{
    switch (mode) {
    case ALL: return 1;
    case AUTO: return !(kind == ISEND && !big);
    case TAGGED: return big || kind == ISSEND || kind == PSSEND;
    default: return 0;
    }
}

/* Start message seq of (kind, big) from buf; persistent kinds make *req. */
static void start_send(int kind, int big, void *buf, MPI_Request *req)
{
    int n = (int)bytes_of(big), tag = tag_of(kind, big);
    switch (kind) {
    case ISEND: CHECK_MPI(MPI_Isend(buf, n, MPI_BYTE, right, tag, MPI_COMM_WORLD, req)); break;
    case ISSEND: CHECK_MPI(MPI_Issend(buf, n, MPI_BYTE, right, tag, MPI_COMM_WORLD, req)); break;
    case IBSEND: CHECK_MPI(MPI_Ibsend(buf, n, MPI_BYTE, right, tag, MPI_COMM_WORLD, req)); break;
    case PSEND: CHECK_MPI(MPI_Send_init(buf, n, MPI_BYTE, right, tag, MPI_COMM_WORLD, req)); break;
    case PSSEND: CHECK_MPI(MPI_Ssend_init(buf, n, MPI_BYTE, right, tag, MPI_COMM_WORLD, req)); break;
    case PBSEND: CHECK_MPI(MPI_Bsend_init(buf, n, MPI_BYTE, right, tag, MPI_COMM_WORLD, req)); break;
    }
    if (kind >= PSEND)
        CHECK_MPI(MPI_Start(req));
}

static int wait_cancelled(MPI_Request *req)
{
    MPI_Status st;
    int flag = -1;
    CHECK_MPI(MPI_Wait(req, &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    return flag;
}

/* Receive message seq on tag from left and check its bytes. */
static void recv_check(void *buf, size_t n, int tag, int seq, const char *what)
{
    MPI_Status st;
    int count = -1;
    CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, left, tag, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == (int)n, "%s: got %d bytes, expected %zu", what, count, n);
    long bad = payload_check(buf, n, left, tag, seq);
    CHECK(bad < 0, "%s: byte %ld wrong (expected message %d on tag %d: a cancelled or repeated message?)", what,
          bad, seq, tag);
}

static void expect_nothing(int tag, const char *what)
{
    int flag = 1;
    MPI_Status st;
    CHECK_MPI(MPI_Iprobe(left, tag, MPI_COMM_WORLD, &flag, &st));
    CHECK(!flag, "%s: a message on tag %d is still there", what, tag);
}

static void unmatched(unsigned char *rbuf)
{
    unsigned char *buf[KINDS][2][3];
    MPI_Request req[KINDS][2];
    for (int k = 0; k < KINDS; k++)
        for (int big = 0; big < 2; big++)
            for (int seq = 0; seq < 3; seq++) {
                buf[k][big][seq] = malloc(bytes_of(big));
                CHECK(buf[k][big][seq], "out of memory");
                payload_fill(buf[k][big][seq], bytes_of(big), rank, tag_of(k, big), seq);
            }
    /* Message 0 of every tag goes plainly, then message 1 is cancelled. */
    MPI_Request plain[KINDS][2];
    for (int k = 0; k < KINDS; k++)
        for (int big = 0; big < 2; big++)
            CHECK_MPI(MPI_Isend(buf[k][big][0], (int)bytes_of(big), MPI_BYTE, right, tag_of(k, big), MPI_COMM_WORLD,
                                &plain[k][big]));
    for (int k = 0; k < KINDS; k++)
        for (int big = 0; big < 2; big++) {
            start_send(k, big, buf[k][big][1], &req[k][big]);
            CHECK_MPI(MPI_Cancel(&req[k][big]));
        }
    /* The receiver has posted nothing: every verdict is a yes, and each
     * wait returns by the receiver's progress in its own waits. (The others
     * are waited for once received: a send may need its receive.) */
    for (int k = 0; k < KINDS; k++)
        for (int big = 0; big < 2; big++)
            if (cancellable(k, big))
                CHECK(wait_cancelled(&req[k][big]) == 1, "%s of %zu bytes, unmatched: not cancelled", kind_name[k],
                      bytes_of(big));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < KINDS; k++)
        for (int big = 0; big < 2; big++) {
            int tag = tag_of(k, big);
            recv_check(rbuf, bytes_of(big), tag, 0, "the message before the cancelled one");
            if (cancellable(k, big)) {
                expect_nothing(tag, kind_name[k]);
            } else {
                recv_check(rbuf, bytes_of(big), tag, 1, "the uncancelled message");
                CHECK(wait_cancelled(&req[k][big]) == 0, "%s of %zu bytes: cancelled on a device that cannot",
                      kind_name[k], bytes_of(big));
            }
        }
    CHECK_MPI(MPI_Waitall(KINDS * 2, &plain[0][0], MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* Later traffic on the same (source, tag) flows, in order: message 2
     * (the persistent requests started again). */
    for (int k = 0; k < KINDS; k++)
        for (int big = 0; big < 2; big++) {
            int tag = tag_of(k, big);
            MPI_Request r;
            CHECK_MPI(MPI_Irecv(rbuf, (int)bytes_of(big), MPI_BYTE, left, tag, MPI_COMM_WORLD, &r));
            if (k >= PSEND) {
                memcpy(buf[k][big][1], buf[k][big][2], bytes_of(big));   /* the persistent buffer's next message */
                CHECK_MPI(MPI_Start(&req[k][big]));
                CHECK(wait_cancelled(&req[k][big]) == 0, "%s restarted: cancelled", kind_name[k]);
                CHECK_MPI(MPI_Request_free(&req[k][big]));
            } else {
                CHECK_MPI(MPI_Send(buf[k][big][2], (int)bytes_of(big), MPI_BYTE, right, tag, MPI_COMM_WORLD));
            }
            MPI_Status st;
            CHECK_MPI(MPI_Wait(&r, &st));
            CHECK(payload_check(rbuf, bytes_of(big), left, tag, 2) < 0, "%s: the message after the cancelled one "
                  "is wrong", kind_name[k]);
            expect_nothing(tag, "after the last message");
        }
    for (int k = 0; k < KINDS; k++)
        for (int big = 0; big < 2; big++)
            for (int seq = 0; seq < 3; seq++)
                free(buf[k][big][seq]);
}

/* The receiver has the message before the sender cancels: not cancelled. */
static void matched(unsigned char *rbuf)
{
    for (int big = 0; big < 2; big++) {
        size_t n = bytes_of(big);
        unsigned char *buf = malloc(n);
        CHECK(buf, "out of memory");
        payload_fill(buf, n, rank, TAG_MATCHED, big);
        MPI_Request rr, sr;
        CHECK_MPI(MPI_Irecv(rbuf, (int)n, MPI_BYTE, left, TAG_MATCHED, MPI_COMM_WORLD, &rr));
        CHECK_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, right, TAG_MATCHED, MPI_COMM_WORLD, &sr));
        CHECK_MPI(MPI_Wait(&rr, MPI_STATUS_IGNORE));
        CHECK(payload_check(rbuf, n, left, TAG_MATCHED, big) < 0, "matched message of %zu bytes wrong", n);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));   /* every receiver has its message */
        CHECK_MPI(MPI_Cancel(&sr));
        CHECK(wait_cancelled(&sr) == 0, "a send of %zu bytes cancelled after its receive completed", n);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        expect_nothing(TAG_MATCHED, "matched: delivered twice?");
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));   /* before the next round's message comes */
        free(buf);
    }
}

/* Sends to oneself: the same protocol, both ends in this rank. */
static void to_self(unsigned char *rbuf)
{
    unsigned char *buf = malloc(RNDV);
    CHECK(buf, "out of memory");
    for (int big = 0; big < 2; big++) {
        size_t n = bytes_of(big);
        MPI_Request r;
        payload_fill(buf, n, 0, TAG_MATCHED, 1);
        CHECK_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, 0, TAG_MATCHED, MPI_COMM_SELF, &r));
        CHECK_MPI(MPI_Cancel(&r));
        if (cancellable(ISEND, big)) {
            CHECK(wait_cancelled(&r) == 1, "a send of %zu bytes to oneself: not cancelled", n);
        } else {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, 0, TAG_MATCHED, MPI_COMM_SELF, &st));
            CHECK(payload_check(rbuf, n, 0, TAG_MATCHED, 1) < 0, "a send to oneself: wrong data");
            CHECK(wait_cancelled(&r) == 0, "a send to oneself cancelled on a device that cannot");
        }
        int flag = 1;
        CHECK_MPI(MPI_Iprobe(0, TAG_MATCHED, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "a send of %zu bytes to oneself is still there", n);
    }
    free(buf);
}

/* Sends to MPI_PROC_NULL are complete from the start: nothing to cancel. */
static void proc_null(void)
{
    int x = 1;
    MPI_Request r;
    CHECK_MPI(MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Cancel(&r));
    CHECK(wait_cancelled(&r) == 0, "Isend to MPI_PROC_NULL cancelled");
    CHECK_MPI(MPI_Ibsend(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Cancel(&r));
    CHECK(wait_cancelled(&r) == 0, "Ibsend to MPI_PROC_NULL cancelled");
    CHECK_MPI(MPI_Bsend_init(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Start(&r));
    CHECK_MPI(MPI_Cancel(&r));
    CHECK(wait_cancelled(&r) == 0, "Bsend_init to MPI_PROC_NULL cancelled");
    CHECK_MPI(MPI_Request_free(&r));
}

/* MPI_ANY_SOURCE + MPI_ANY_TAG receives after a cancel get the messages
 * around the cancelled one, in order (tagged: the eager one was pulled
 * from the provider while looking for the cancelled one). */
static void any_source(unsigned char *rbuf)
{
    unsigned char *buf[3];
    for (int seq = 0; seq < 3; seq++) {
        buf[seq] = malloc(RNDV);
        CHECK(buf[seq], "out of memory");
    }
    payload_fill(buf[0], EAGER, rank, TAG_ANY_FIRST, 0);
    payload_fill(buf[1], RNDV, rank, TAG_ANY_NEXT, 1);
    payload_fill(buf[2], EAGER, rank, TAG_ANY_NEXT, 2);
    MPI_Request first, r;
    CHECK_MPI(MPI_Isend(buf[0], EAGER, MPI_BYTE, right, TAG_ANY_FIRST, MPI_COMM_WORLD, &first));
    CHECK_MPI(MPI_Isend(buf[1], RNDV, MPI_BYTE, right, TAG_ANY_NEXT, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Cancel(&r));
    int cancelled = cancellable(ISEND, 1);
    if (cancelled)
        CHECK(wait_cancelled(&r) == 1, "ANY_SOURCE: the rendezvous send was not cancelled");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Send(buf[2], EAGER, MPI_BYTE, right, TAG_ANY_NEXT, MPI_COMM_WORLD));
    struct { int tag, seq; size_t n; } want[3] = {
        { TAG_ANY_FIRST, 0, EAGER }, { TAG_ANY_NEXT, 1, RNDV }, { TAG_ANY_NEXT, 2, EAGER } };
    for (int i = 0; i < 3; i++) {
        if (i == 1 && cancelled)
            continue;
        MPI_Status st;
        int count = -1;
        CHECK_MPI(MPI_Recv(rbuf, RNDV, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == want[i].tag && count == (int)want[i].n,
              "ANY_SOURCE receive %d: source %d tag %d, %d bytes; expected %d %d %zu (message %d)", i, st.MPI_SOURCE,
              st.MPI_TAG, count, left, want[i].tag, want[i].n, want[i].seq);
        CHECK(payload_check(rbuf, want[i].n, left, want[i].tag, want[i].seq) < 0, "ANY_SOURCE: message %d's bytes",
              want[i].seq);
    }
    if (!cancelled)
        CHECK(wait_cancelled(&r) == 0, "ANY_SOURCE: a delivered send reported cancelled");
    CHECK_MPI(MPI_Wait(&first, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    expect_nothing(MPI_ANY_TAG, "after the ANY_SOURCE receives");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));   /* before the next part's messages come */
    for (int seq = 0; seq < 3; seq++)
        free(buf[seq]);
}

static void loops(unsigned char *rbuf)
{
    unsigned char *buf = malloc(RNDV);
    CHECK(buf, "out of memory");
    payload_fill(buf, RNDV, rank, TAG_LOOP, 0);
    if (mode == ALL || mode == AUTO) {
        /* Eager: MPI_Isend where each gets a request, else a persistent send. */
        MPI_Request p;
        CHECK_MPI(MPI_Send_init(buf, EAGER, MPI_BYTE, right, TAG_LOOP, MPI_COMM_WORLD, &p));
        for (int i = 0; i < LOOP_EAGER; i++) {
            MPI_Request r;
            if (mode == ALL) {
                CHECK_MPI(MPI_Isend(buf, EAGER, MPI_BYTE, right, TAG_LOOP, MPI_COMM_WORLD, &r));
            } else {
                CHECK_MPI(MPI_Start(&p));
                r = p;
            }
            CHECK_MPI(MPI_Cancel(&r));
            CHECK(wait_cancelled(&r) == 1, "eager loop send %d not cancelled", i);
        }
        CHECK_MPI(MPI_Request_free(&p));
    } else {
        /* Not cancelled, so each send may need its receive (a provider
         * buffers only so many): wait after receiving. */
        MPI_Request *r = malloc(LOOP_EAGER * sizeof *r);
        CHECK(r, "out of memory");
        for (int i = 0; i < LOOP_EAGER; i++) {
            CHECK_MPI(MPI_Isend(buf, EAGER, MPI_BYTE, right, TAG_LOOP, MPI_COMM_WORLD, &r[i]));
            CHECK_MPI(MPI_Cancel(&r[i]));
        }
        for (int i = 0; i < LOOP_EAGER; i++)
            recv_check(rbuf, EAGER, TAG_LOOP, 0, "an uncancelled loop message");
        for (int i = 0; i < LOOP_EAGER; i++)
            CHECK(wait_cancelled(&r[i]) == 0, "eager loop send %d cancelled on a device that cannot", i);
        free(r);
    }
    if (mode != KEEPS) {
        for (int i = 0; i < LOOP_RNDV + LOOP_SYNC; i++) {
            MPI_Request r;
            if (i < LOOP_RNDV)
                CHECK_MPI(MPI_Isend(buf, RNDV, MPI_BYTE, right, TAG_LOOP, MPI_COMM_WORLD, &r));
            else
                CHECK_MPI(MPI_Issend(buf, EAGER, MPI_BYTE, right, TAG_LOOP, MPI_COMM_WORLD, &r));
            CHECK_MPI(MPI_Cancel(&r));
            CHECK(wait_cancelled(&r) == 1, "loop send %d not cancelled", i);
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    expect_nothing(TAG_LOOP, "loop");
    /* Credits and buffers came back: a window larger than one ring's worth
     * of cancelled traffic is pointless here; a plain window still flows. */
    MPI_Request w[WINDOW + 1];
    unsigned char *wbuf = malloc((size_t)WINDOW * EAGER);
    CHECK(wbuf, "out of memory");
    for (int i = 0; i < WINDOW; i++)
        CHECK_MPI(MPI_Irecv(wbuf + (size_t)i * EAGER, EAGER, MPI_BYTE, left, TAG_AFTER, MPI_COMM_WORLD, &w[i]));
    CHECK_MPI(MPI_Irecv(rbuf, RNDV, MPI_BYTE, left, TAG_AFTER + 1, MPI_COMM_WORLD, &w[WINDOW]));
    for (int i = 0; i < WINDOW; i++) {
        payload_fill(buf, EAGER, rank, TAG_AFTER, i);
        CHECK_MPI(MPI_Send(buf, EAGER, MPI_BYTE, right, TAG_AFTER, MPI_COMM_WORLD));
    }
    payload_fill(buf, RNDV, rank, TAG_AFTER + 1, 0);
    CHECK_MPI(MPI_Send(buf, RNDV, MPI_BYTE, right, TAG_AFTER + 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Waitall(WINDOW + 1, w, MPI_STATUSES_IGNORE));
    for (int i = 0; i < WINDOW; i++)
        CHECK(payload_check(wbuf + (size_t)i * EAGER, EAGER, left, TAG_AFTER, i) < 0,
              "window message %d after the cancels is wrong", i);
    CHECK(payload_check(rbuf, RNDV, left, TAG_AFTER + 1, 0) < 0, "rendezvous message after the cancels is wrong");
    free(wbuf);
    free(buf);
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK(argc == 2 && (!strcmp(argv[1], "all") || !strcmp(argv[1], "auto") || !strcmp(argv[1], "tagged") ||
                        !strcmp(argv[1], "keeps")),
          "usage: cancel_send all|auto|tagged|keeps");
    mode = !strcmp(argv[1], "all") ? ALL : !strcmp(argv[1], "auto") ? AUTO : !strcmp(argv[1], "tagged") ? TAGGED
                                                                                                      : KEEPS;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    /* Room for the buffered sends of one round: 2 x (eager + rendezvous), each start once. */
    int bsize = 4 * (RNDV + EAGER + MPI_BSEND_OVERHEAD);
    void *bbuf = malloc((size_t)bsize);
    CHECK(bbuf, "out of memory");
    CHECK_MPI(MPI_Buffer_attach(bbuf, bsize));
    unsigned char *rbuf = malloc(RNDV);
    CHECK(rbuf, "out of memory");

    unmatched(rbuf);
    matched(rbuf);
    to_self(rbuf);
    any_source(rbuf);
    proc_null();
    loops(rbuf);

    CHECK_MPI(MPI_Buffer_detach(&bbuf, &bsize));
    free(bbuf);
    free(rbuf);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
