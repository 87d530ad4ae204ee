/*
 * Receive-first announcements (docs/dimmnet.md "Receive-first
 * announcements"): a receive posted before its message offers its buffer in
 * the sender's LLCM, bound to the sender's next message; the sender PUSHes
 * that message straight into it when the envelope matches. The test list
 * turns them on (HASHI_DIMMNET_ANNOUNCE=on) and checks the device's counters
 * (announces, claims, announced, revokes, revokes_lost) to prove which path
 * ran; every mode checks data byte for byte, the status and the bytes around
 * the receive buffer. Rank 1 receives, rank 0 sends, unless said otherwise;
 * "go" is a 0-byte message from the receiver telling the sender to send
 * (so the receive is posted, and announced, first).
 *
 *   basic     12 messages into announced receives: sizes from just above the
 *             eager limit to 4 MiB + 5, Send and Ssend, specific tag and
 *             ANY_TAG, two truncated (MPI_ERR_TRUNCATE, nothing past the
 *             buffer), one into a strided vector receive type
 *   basic small  the same with 6 messages of 2-8 KiB (one truncated), no vector
 *   mismatch  the announced receive wants tag 1; message k has tag 2 (not
 *             claimed: RTS, unexpected), message k+1 tag 1 (announcement
 *             dead: RTS into the posted receive); then the tag-2 one
 *   eager     message k is eager: once matching the announced receive (it
 *             takes it), once not (unexpected); then a large k+1 matching
 *             a receive posted before k was sent: never claimed
 *   anysrc    an ANY_SOURCE receive posted before the specific one blocks its
 *             announcement (the message must go to the ANY_SOURCE one); one
 *             with another tag does not
 *   cancel    an announced receive cancelled before anything was sent
 *             (revoked, a new receive then gets the message by a new
 *             announcement), and one cancelled after the sender claimed it
 *             but before the data landed (the cancel fails, the receive
 *             completes with the data)
 *   cancel progress  the same for peers on fabric, whose put lands only
 *             through the receiver's progress: it polls (MPI_Iprobe) until
 *             the first byte lands, and cancels then (the test list cuts
 *             the put into 4 KiB pieces, one round trip each, so the rest
 *             and the claim's notice are still to come)
 *   cancel_passed  an announced receive cancelled after the sender passed
 *             its message k without claiming (an eager message of another
 *             tag): the cancel succeeds (over fabric k overtakes the
 *             revoke's answer, and the receive leaves before k is matched),
 *             k is received by a later receive, the next announcement works
 *   race N    N rounds of a cancel racing the sender's claim at random
 *             delays: either outcome, never a hang, the message always
 *             received exactly once; the device's counters (MPI_T) must
 *             agree with each outcome (cancelled: one revoke; not: none,
 *             at most one revoke lost)
 *   stress R SEED  every rank sends to every other, R rounds of random sizes
 *             (eager to 600 KiB) and tags, receives by specific tag or
 *             ANY_TAG, pre-posted (announced) or posted after the sends,
 *             plus ANY_SOURCE traffic on the same communicator's tag 99 and
 *             on a duplicate; contents and per-source order checked
 */
#include "dn_data.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;
enum { GO_TAG = 30000, DONE_TAG = 30001 };



static void check_guards(const unsigned char *buf, size_t n)
{
    check_untouched(buf - DN_GUARD, DN_GUARD, "before");
    check_untouched(buf + n, DN_GUARD, "after");
}

static void go(int to)
{
    CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, to, GO_TAG, MPI_COMM_WORLD));
}

static void wait_go(int from)
{
    CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, from, GO_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static void send_msg(size_t n, int to, int tag, int idx, int sync)
{
    unsigned char *buf = guarded(n);
    fill(buf, n, rank, idx);
    CHECK_MPI(sync ? MPI_Ssend(buf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD)
                   : MPI_Send(buf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD));
    guarded_free(buf);
}

/* Wait for rq and check what landed: n bytes of message idx from src with
 * tag, into room bytes (truncated when n > room). */
static void expect_recv(MPI_Request *rq, unsigned char *buf, size_t room, size_t n, int src, int tag, int idx,
                        const char *what)
{
    MPI_Status st;
    int rc = MPI_Wait(rq, &st), cls = -1;
    MPI_Error_class(rc, &cls);
    size_t got = n < room ? n : room;
    CHECK(cls == (n > room ? MPI_ERR_TRUNCATE : MPI_SUCCESS), "%s: %zu bytes into %zu: error class %d", what, n, room,
          cls);
    check_status(&st, src, tag, got);
    verify(buf, got, src, idx, what);
    check_guards(buf, room);
}

/* ---- basic ---- */

struct bcase {
    size_t room, n;
    int any_tag, sync;
};

/* small: 6 receives of 2-8 KiB (announced in auto with EAGER_MAX=2k), no vector. */
static void mode_basic(int small)
{
    size_t eager = 65536;   /* the largest default eager limit (emu, <= 4 ranks): above it on every cell */
    static const struct bcase sc[] = {
        { 2049, 2049, 0, 0 }, { 4096, 4096, 1, 0 }, { 6000, 5000, 0, 0 },
        { 8192, 8192, 0, 1 }, { 5000, 7000, 0, 0 }, { 8192, 3000, 1, 1 },
    };
    struct bcase c[] = {
        { eager + 1, eager + 1, 0, 0 }, { 100000, 100000, 1, 0 }, { 200000, 150000, 0, 0 },
        { 300000, 300000, 0, 1 },       { 1048576 + 5, 1048576 + 5, 1, 1 }, { 4194304 + 5, 4194304 + 5, 0, 0 },
        { 100000, 150000, 0, 0 },       { 70000, 1048576, 1, 1 },           { 500000, 123457, 1, 0 },
        { 65537 * 3, 65537 * 3, 0, 0 }, { 131072, 131072, 0, 1 },
    };
    int nc = (int)(sizeof c / sizeof *c);
    if (small) {
        nc = (int)(sizeof sc / sizeof *sc);
        memcpy(c, sc, sizeof sc);
    }
    for (int i = 0; i < nc; i++) {
        int tag = 10 + i;
        if (rank == 0) {
            wait_go(1);
            send_msg(c[i].n, 1, tag, i, c[i].sync);
        } else if (rank == 1) {
            unsigned char *buf = guarded(c[i].room);
            MPI_Request rq;
            CHECK_MPI(MPI_Irecv(buf, (int)c[i].room, MPI_BYTE, 0, c[i].any_tag ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &rq));
            go(0);
            expect_recv(&rq, buf, c[i].room, c[i].n, 0, tag, i, "basic");
            guarded_free(buf);
        }
    }
    if (small)
        return;
    /* A strided receive type: the device sees the packed buffer. */
    enum { COUNT = 1024, BLOCK = 64, STRIDE = 67 };
    size_t data = (size_t)COUNT * BLOCK * sizeof(int), span = (size_t)((COUNT - 1) * STRIDE + BLOCK) * sizeof(int);
    if (rank == 0) {
        wait_go(1);
        send_msg(data, 1, 99, nc, 0);
    } else if (rank == 1) {
        MPI_Datatype vec;
        CHECK_MPI(MPI_Type_vector(COUNT, BLOCK, STRIDE, MPI_INT, &vec));
        CHECK_MPI(MPI_Type_commit(&vec));
        unsigned char *buf = guarded(span), *expect = malloc(data);
        CHECK(expect, "out of memory");
        fill(expect, data, 0, nc);
        MPI_Request rq;
        MPI_Status st;
        CHECK_MPI(MPI_Irecv(buf, 1, vec, 0, 99, MPI_COMM_WORLD, &rq));
        go(0);
        CHECK_MPI(MPI_Wait(&rq, &st));
        check_status(&st, 0, 99, data);
        size_t blk = BLOCK * sizeof(int), gap = (STRIDE - BLOCK) * sizeof(int);
        for (int b = 0; b < COUNT; b++) {
            const unsigned char *at = buf + (size_t)b * STRIDE * sizeof(int);
            CHECK(memcmp(at, expect + (size_t)b * blk, blk) == 0, "vector receive: block %d differs", b);
            if (b + 1 < COUNT)
                check_untouched(at + blk, gap, "a gap of the vector");
        }
        check_guards(buf, span);
        free(expect);
        guarded_free(buf);
        CHECK_MPI(MPI_Type_free(&vec));
    }
}

/* ---- mismatch: message k does not match the announced receive ---- */

static void mode_mismatch(void)
{
    size_t n = 200000, m = 300000;
    if (rank == 0) {
        unsigned char *x = guarded(m), *y = guarded(n);
        fill(x, m, 0, 0);
        fill(y, n, 0, 1);
        MPI_Request rq[2];
        wait_go(1);
        CHECK_MPI(MPI_Isend(x, (int)m, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[0]));   /* message k: tag 2, no claim */
        CHECK_MPI(MPI_Isend(y, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq[1]));   /* k + 1: tag 1, announcement dead */
        CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        guarded_free(x);
        guarded_free(y);
    } else if (rank == 1) {
        unsigned char *a = guarded(n), *b = guarded(m);
        MPI_Request rq;
        CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq));
        go(0);
        expect_recv(&rq, a, n, n, 0, 1, 1, "mismatch: the tag-1 message");
        CHECK_MPI(MPI_Irecv(b, (int)m, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq));
        expect_recv(&rq, b, m, m, 0, 2, 0, "mismatch: the tag-2 message");
        guarded_free(a);
        guarded_free(b);
    }
}

/* ---- eager: message k is eager ---- */

static void mode_eager(void)
{
    size_t big = 300000, small = 1000;
    for (int matching = 0; matching < 2; matching++) {
        int base = 10 * matching;
        if (rank == 0) {
            wait_go(1);
            send_msg(small, 1, matching ? 5 : 6, base, 0);   /* message k, eager */
            send_msg(big, 1, 5, base + 1, 0);                /* k + 1 */
        } else if (rank == 1) {
            unsigned char *a = guarded(big), *b = guarded(big), *s = guarded(small);
            MPI_Request ra, rb;
            CHECK_MPI(MPI_Irecv(a, (int)big, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &ra));   /* announced for k */
            CHECK_MPI(MPI_Irecv(b, (int)big, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &rb));   /* posted behind it */
            go(0);
            if (matching) {
                expect_recv(&ra, a, big, small, 0, 5, base, "eager k into the announced receive");
                expect_recv(&rb, b, big, big, 0, 5, base + 1, "k + 1 after an eager k");
            } else {
                expect_recv(&ra, a, big, big, 0, 5, base + 1, "k + 1 after an eager k of another tag");
                MPI_Request rs;
                CHECK_MPI(MPI_Irecv(s, (int)small, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &rs));
                expect_recv(&rs, s, small, small, 0, 6, base, "the eager k of another tag");
                CHECK_MPI(MPI_Cancel(&rb));
                MPI_Status st;
                CHECK_MPI(MPI_Wait(&rb, &st));
                int cancelled = 0;
                CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
                CHECK(cancelled, "the spare receive was not cancelled");
            }
            guarded_free(a);
            guarded_free(b);
            guarded_free(s);
        }
    }
}

/* ---- anysrc: an earlier ANY_SOURCE receive ---- */

static void mode_anysrc(void)
{
    size_t n = 200000;
    if (rank == 0) {
        wait_go(1);
        send_msg(n, 1, 7, 0, 0);   /* must go to the ANY_SOURCE receive, posted first */
        send_msg(n, 1, 7, 1, 0);
        wait_go(1);
        send_msg(n, 1, 7, 2, 0);   /* announced: the ANY_SOURCE receive wants tag 8 */
        send_msg(n, 1, 8, 3, 0);
    } else if (rank == 1) {
        unsigned char *a = guarded(n), *b = guarded(n);
        MPI_Request ra, rb;
        CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &ra));
        CHECK_MPI(MPI_Irecv(b, (int)n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &rb));
        go(0);
        expect_recv(&ra, a, n, n, 0, 7, 0, "ANY_SOURCE posted first");
        expect_recv(&rb, b, n, n, 0, 7, 1, "the specific receive behind it");
        CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &ra));
        CHECK_MPI(MPI_Irecv(b, (int)n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &rb));
        go(0);
        expect_recv(&rb, b, n, n, 0, 7, 2, "announced beside an ANY_SOURCE receive of another tag");
        expect_recv(&ra, a, n, n, 0, 8, 3, "ANY_SOURCE of another tag");
        guarded_free(a);
        guarded_free(b);
    }
}

/* ---- cancel ---- */

static int cancel_and_wait(MPI_Request *rq, MPI_Status *st)
{
    int cancelled = 0;
    CHECK_MPI(MPI_Cancel(rq));
    CHECK_MPI(MPI_Wait(rq, st));
    CHECK_MPI(MPI_Test_cancelled(st, &cancelled));
    return cancelled;
}

static void mode_cancel(int progress)
{
    size_t n = 300000, big = 8 << 20;
    /* 1: cancelled before anything was sent: revoked. */
    if (rank == 0) {
        wait_go(1);
        send_msg(n, 1, 3, 0, 0);
    } else if (rank == 1) {
        unsigned char *a = guarded(n);
        MPI_Request rq;
        MPI_Status st;
        CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &rq));
        CHECK(cancel_and_wait(&rq, &st), "an announced receive nobody sent to was not cancelled");
        check_untouched(a, n, "a cancelled receive's buffer");
        CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &rq));   /* announced again */
        go(0);
        expect_recv(&rq, a, n, n, 0, 3, 0, "after a cancelled announcement");
        guarded_free(a);
    }
    /* 2: the sender claimed, its copy not done yet (8 MiB: emu defers the
     * copy to its next progress, which waits until after the sleep): the
     * cancel fails, the receive completes with the data. */
    if (rank == 0) {
        wait_go(1);
        send_msg(big, 1, 4, 1, 0);   /* claims */
    } else if (rank == 1) {
        unsigned char *a = guarded(big);
        MPI_Request rq;
        MPI_Status st;
        CHECK_MPI(MPI_Irecv(a, (int)big, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &rq));
        go(0);
        double t0 = MPI_Wtime();
        if (progress) {
            /* Fabric: the first piece landing shows the sender claimed;
             * 2047 more pieces and the notice need round trips yet. */
            while (*(volatile unsigned char *)a != pattern(0, 1, 0)) {
                int flag;
                CHECK_MPI(MPI_Iprobe(0, DONE_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
                CHECK(MPI_Wtime() - t0 < 20, "the claimed data did not start landing");
            }
        } else {
            /* Without progress (no MPI call): the last byte landing shows the
             * sender claimed and is putting; its notice is not read yet. (Needs
             * emu's single-copy put, the default: a staged put would wait for
             * our progress.) */
            while (*(volatile unsigned char *)(a + big - 1) != pattern(0, 1, big - 1))
                CHECK(MPI_Wtime() - t0 < 20, "the claimed data did not land without progress (single-copy puts off?)");
        }
        CHECK(!cancel_and_wait(&rq, &st), "a claimed receive was cancelled");
        check_status(&st, 0, 4, big);
        verify(a, big, 0, 1, "claimed, then cancelled");
        check_guards(a, big);
        guarded_free(a);
    }
}

/* ---- cancel_passed: message k went the usual way before the revoke ---- */

static void mode_cancel_passed(void)
{
    size_t n = 300000, small = 1000;
    if (rank == 0) {
        wait_go(1);
        send_msg(small, 1, 6, 0, 0);   /* message k: eager, not the announced receive's tag */
        wait_go(1);
        send_msg(n, 1, 5, 1, 0);
    } else if (rank == 1) {
        unsigned char *a = guarded(n), *s = guarded(small);
        MPI_Request rq;
        MPI_Status st;
        CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &rq));   /* announced for k */
        go(0);
        /* No progress: k is (almost always) sent before the cancel asks;
         * either order must end in a cancelled receive. */
        struct timespec pause = { 0, 200 * 1000 * 1000 };
        nanosleep(&pause, NULL);
        CHECK(cancel_and_wait(&rq, &st), "an announced receive whose message went elsewhere was not cancelled");
        check_untouched(a, n, "a cancelled receive's buffer");
        CHECK_MPI(MPI_Irecv(s, (int)small, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &rq));
        expect_recv(&rq, s, small, small, 0, 6, 0, "message k after the cancel");
        CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &rq));   /* announced for k + 1 */
        go(0);
        expect_recv(&rq, a, n, n, 0, 5, 1, "announced after the cancel");
        guarded_free(a);
        guarded_free(s);
    }
}

/* ---- race: cancel against the claim ---- */

static void spin_ns(long ns)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

/* The device's revoke counters on this rank. */
static void revoke_counts(unsigned long long *revokes, unsigned long long *lost)
{
    int found_r, found_l;
    *revokes = read_counter("dimmnet_revokes", &found_r);
    *lost = read_counter("dimmnet_revokes_lost", &found_l);
    CHECK(found_r && found_l, "no dimmnet_revokes / dimmnet_revokes_lost counters (not the dimmnet device?)");
}

static void mode_race(int rounds)
{
    size_t n = 200000;
    int cancelled_count = 0, lost_count = 0;
    srand(12345 + (unsigned)rank);
    for (int i = 0; i < rounds; i++) {
        long delay_ns = rand() % 3 ? (long)(rand() % 2000) * 1000 : 0;   /* up to 2 ms without progress */
        if (rank == 0) {
            wait_go(1);
            send_msg(n, 1, 20, i, i & 1);
        } else if (rank == 1) {
            unsigned char *a = guarded(n);
            MPI_Request rq;
            MPI_Status st;
            unsigned long long rev0, lost0, rev1, lost1;
            revoke_counts(&rev0, &lost0);
            CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, 0, 20, MPI_COMM_WORLD, &rq));
            go(0);
            spin_ns(delay_ns);
            int cancelled = cancel_and_wait(&rq, &st);
            revoke_counts(&rev1, &lost1);
            CHECK(rev1 - rev0 == (unsigned long long)cancelled && lost1 - lost0 <= (unsigned long long)!cancelled,
                  "round %d: cancel %s, but %llu revokes and %llu lost ones counted", i,
                  cancelled ? "succeeded" : "failed", rev1 - rev0, lost1 - lost0);
            lost_count += (int)(lost1 - lost0);
            if (cancelled) {
                cancelled_count++;
                check_untouched(a, n, "a cancelled receive's buffer");
                CHECK_MPI(MPI_Irecv(a, (int)n, MPI_BYTE, 0, 20, MPI_COMM_WORLD, &rq));
                expect_recv(&rq, a, n, n, 0, 20, i, "received after the cancel");
            } else {
                check_status(&st, 0, 20, n);
                verify(a, n, 0, i, "cancel failed: received");
                check_guards(a, n);
            }
            guarded_free(a);
        }
    }
    if (rank == 1)
        fprintf(stderr, "race: %d of %d cancels succeeded, %d found the claim\n", cancelled_count, rounds, lost_count);
}

/* ---- stress ---- */

/* Every (src, dst, round) draws the same sequence on both sides. */
static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

struct smsg {
    size_t n;
    int tag, any_tag, preposted;
};

enum { PER_PAIR = 6, ANY_MAX = 120000 };

static void plan(int src, int dst, int round, unsigned seed, struct smsg *m)
{
    rng_state = ((uint64_t)seed << 32) ^ (uint64_t)(src * 7919 + dst * 104729 + round * 1299709) ^ 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < PER_PAIR; i++) {
        uint32_t k = rnd() % 4;
        m[i].n = k == 0 ? rnd() % 3000 : k == 1 ? 65537 + rnd() % 100000 : k == 2 ? rnd() % 600000 : 100000 + rnd() % 30;
        m[i].tag = (int)(rnd() % 3);
        m[i].any_tag = rnd() % 3 == 0;
        m[i].preposted = rnd() % 4 != 0;
    }
}

static int sidx(int src, int round, int i)
{
    return (src * 1000 + round * PER_PAIR + i) & 0x7fff;
}

static void mode_stress(int rounds, unsigned seed)
{
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int npeers = size - 1, nmsg = npeers * PER_PAIR;
    struct smsg(*out)[PER_PAIR] = calloc((size_t)size, sizeof *out), (*in)[PER_PAIR] = calloc((size_t)size, sizeof *in);
    unsigned char **rbuf = calloc((size_t)size * PER_PAIR, sizeof *rbuf), **sbuf = calloc((size_t)size * PER_PAIR, sizeof *sbuf);
    MPI_Request *rq = calloc((size_t)(4 * nmsg + 4 * size), sizeof *rq);
    CHECK(out && in && rbuf && sbuf && rq, "out of memory");
    unsigned char *any_in[2], *any_out[2];
    int *any_next = calloc((size_t)size * 2, sizeof *any_next);
    CHECK(any_next, "out of memory");
    for (int c = 0; c < 2; c++) {
        any_in[c] = guarded(ANY_MAX);
        any_out[c] = guarded(ANY_MAX);
    }
    for (int round = 0; round < rounds; round++) {
        int nrq = 0;
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            plan(rank, p, round, seed, out[p]);
            plan(p, rank, round, seed, in[p]);
        }
        /* ANY_SOURCE traffic: one message from each peer each on world (tag 99)
         * and on the duplicate, received with ANY_SOURCE. */
        int any_rq_base = -1;
        size_t any_n = 70000 + (size_t)(round * 977) % 50000;
        /* Pre-posted receives, in order per source. */
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            for (int i = 0; i < PER_PAIR; i++) {
                rbuf[p * PER_PAIR + i] = guarded(in[p][i].n);
                if (in[p][i].preposted && (i == 0 || in[p][i - 1].preposted))
                    CHECK_MPI(MPI_Irecv(rbuf[p * PER_PAIR + i], (int)in[p][i].n, MPI_BYTE, p,
                                        in[p][i].any_tag ? MPI_ANY_TAG : in[p][i].tag, MPI_COMM_WORLD, &rq[nrq++]));
                else
                    in[p][i].preposted = 0;
            }
        }
        if (round % 2 == 0) {
            any_rq_base = nrq;
            CHECK_MPI(MPI_Irecv(any_in[0], ANY_MAX, MPI_BYTE, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &rq[nrq++]));
            CHECK_MPI(MPI_Irecv(any_in[1], ANY_MAX, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &rq[nrq++]));
        }
        for (int c = 0; c < 2; c++)
            fill(any_out[c], any_n, rank, sidx(rank, round, 100 + c));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        int sbase = nrq;
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            for (int i = 0; i < PER_PAIR; i++) {
                sbuf[p * PER_PAIR + i] = guarded(out[p][i].n);
                fill(sbuf[p * PER_PAIR + i], out[p][i].n, rank, sidx(rank, round, i));
                CHECK_MPI(MPI_Isend(sbuf[p * PER_PAIR + i], (int)out[p][i].n, MPI_BYTE, p, out[p][i].tag,
                                    MPI_COMM_WORLD, &rq[nrq++]));
            }
            if (round % 2 == 0) {
                /* The ANY_SOURCE messages, after the pair's sequence (so that
                 * its ANY_TAG receives, all matched by then, cannot take them). */
                for (int c = 0; c < 2; c++)
                    CHECK_MPI(MPI_Isend(any_out[c], (int)any_n, MPI_BYTE, p, 99, c ? dup : MPI_COMM_WORLD, &rq[nrq++]));
            }
        }
        int nsend = nrq - sbase;
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            for (int i = 0; i < PER_PAIR; i++)
                if (!in[p][i].preposted)
                    CHECK_MPI(MPI_Irecv(rbuf[p * PER_PAIR + i], (int)in[p][i].n, MPI_BYTE, p,
                                        in[p][i].any_tag ? MPI_ANY_TAG : in[p][i].tag, MPI_COMM_WORLD, &rq[nrq++]));
        }
        (void)nsend;
        /* The ANY_SOURCE receives: one from every peer on each communicator. */
        if (round % 2 == 0) {
            for (int c = 0; c < 2; c++) {
                for (int got = 0; got < npeers; got++) {
                    MPI_Status st;
                    int at = any_rq_base + c;
                    if (got > 0)
                        CHECK_MPI(MPI_Irecv(any_in[c], ANY_MAX, MPI_BYTE, MPI_ANY_SOURCE, c ? MPI_ANY_TAG : 99,
                                            c ? dup : MPI_COMM_WORLD, &rq[at]));
                    CHECK_MPI(MPI_Wait(&rq[at], &st));
                    CHECK(st.MPI_SOURCE != rank && st.MPI_TAG == 99, "ANY_SOURCE: source %d tag %d", st.MPI_SOURCE,
                          st.MPI_TAG);
                    check_status(&st, st.MPI_SOURCE, 99, any_n);
                    verify(any_in[c], any_n, st.MPI_SOURCE, sidx(st.MPI_SOURCE, round, 100 + c), "ANY_SOURCE");
                    any_next[st.MPI_SOURCE * 2 + c]++;
                }
            }
            for (int p = 0; p < size; p++)
                CHECK(p == rank || any_next[p * 2] == any_next[p * 2 + 1], "ANY_SOURCE: rank %d's messages counted %d / %d",
                      p, any_next[p * 2], any_next[p * 2 + 1]);
        }
        MPI_Status *st = calloc((size_t)nrq, sizeof *st);
        CHECK(st, "out of memory");
        CHECK_MPI(MPI_Waitall(nrq, rq, st));
        free(st);
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            for (int i = 0; i < PER_PAIR; i++) {
                unsigned char *b = rbuf[p * PER_PAIR + i];
                verify(b, in[p][i].n, p, sidx(p, round, i), "stress");
                check_guards(b, in[p][i].n);
                guarded_free(b);
                guarded_free(sbuf[p * PER_PAIR + i]);
            }
        }
    }
    for (int c = 0; c < 2; c++) {
        guarded_free(any_in[c]);
        guarded_free(any_out[c]);
    }
    free(any_next);
    free(out);
    free(in);
    free(rbuf);
    free(sbuf);
    free(rq);
    CHECK_MPI(MPI_Comm_free(&dup));
}

int main(int argc, char **argv)
{
    int provided;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    const char *mode = argc > 1 ? argv[1] : "";
    CHECK(size >= 2, "needs at least 2 ranks");
    if (strcmp(mode, "basic") == 0)
        mode_basic(argc > 2 && strcmp(argv[2], "small") == 0);
    else if (strcmp(mode, "mismatch") == 0)
        mode_mismatch();
    else if (strcmp(mode, "eager") == 0)
        mode_eager();
    else if (strcmp(mode, "anysrc") == 0)
        mode_anysrc();
    else if (strcmp(mode, "cancel") == 0)
        mode_cancel(argc > 2 && strcmp(argv[2], "progress") == 0);
    else if (strcmp(mode, "cancel_passed") == 0)
        mode_cancel_passed();
    else if (strcmp(mode, "race") == 0 && argc >= 3)
        mode_race(atoi(argv[2]));
    else if (strcmp(mode, "stress") == 0 && argc >= 4)
        mode_stress(atoi(argv[2]), (unsigned)strtoul(argv[3], NULL, 0));
    else
        CHECK(0, "usage: dn_announce basic [small]|mismatch|eager|anysrc|cancel [progress]|cancel_passed|race N|stress ROUNDS SEED");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_T_finalize());
    printf("rank %d of %d ok\n", rank, size);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
