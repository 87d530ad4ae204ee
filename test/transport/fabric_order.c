/*
 * The fabric transport's ordering across kinds of traffic (src/transport/
 * fabric, docs/transport.md "fabric"): each rank sends its right neighbour,
 * round after round,
 *     block k, tiny write A = k (40-bit value: travels in CQ data),
 *     put with signal C = k (CQ data on odd rounds, a wide value on even),
 *     tiny write B = k | 2^63 (wide: travels as a message), notify k
 * and the neighbour checks, in its handlers, that each arrival finds exactly
 * the earlier items of the round in its LLCM and none of the later ones.
 * The block handler answers each block with a notification (k | ECHO): a
 * handler's send that must wait for room while arrivals keep coming.
 * Run with few credits, single receives and forced local registration too.
 *
 *   fabric_order          the check above; prints "rank R of S ok"
 *   fabric_order flood N  every rank sends N blocks to every other rank at
 *                         once; each block handler answers with a
 *                         notification and a wide tiny write, sends that
 *                         wait for credits while every peer's handlers do
 *                         the same (the credit deadlocks: run with 1 and 4
 *                         credits); per-source order and counts checked
 *   fabric_order credit_poll  (2 ranks, HASHI_FABRIC_CREDITS=1) rank 0 uses
 *                         its one credit, reads its CQ once (empty), then
 *                         tries to send again without calling progress
 *                         while rank 1's credit return is on its way: a
 *                         send out of credits may skip its own CQ read once
 *                         after an empty one, never for good
 *   fabric_order inject_burst  (2 ranks, tcp, HASHI_FABRIC_TX_SLOTS=4,
 *                         HASHI_FABRIC_INJECT at least 16 KiB + 8) with
 *                         blocks of up to 16 KiB, rank 0 sends 40 of them of
 *                         assorted lengths without calling progress: each
 *                         goes by fi_inject (the inject size widened to the
 *                         largest block) and hands its send slot back at
 *                         once, so 4 slots never run out; the slot is
 *                         rewritten for the next block straight away, and
 *                         rank 1 checks every byte of every block; with
 *                         HASHI_FABRIC_INJECT=0 the blocks go by fi_send
 *                         from the slots instead (the sender progresses
 *                         when they run out)
 *   fabric_order pingpong N  (2 ranks, HASHI_FABRIC_CREDITS=4) N blocks
 *                         from rank 0, each answered by a block from rank
 *                         1's handler before the next: every message
 *                         carries back the credit for the one it answers
 *                         (fab_hdr), so neither rank ever writes a credit
 *                         return of its own (without piggy-backing: one
 *                         per two messages) nor runs out of credits in a
 *                         handler (where it cannot wait)
 *   fabric_order badprov  (singleton, FI_PROVIDER naming no provider) init
 *                         fails with one line naming FI_PROVIDER
 *   fabric_order bench    (2 ranks) PUSH and PULL bandwidth by size, best and
 *                         median of 5 (figures for docs/transport.md)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"
#include "transport/transport.h"
#include "transport/fabric/fabric.h"   /* white box: fab.credit_writes (pingpong) */

#define LLCM_SIZE 4096
#define BLOCK_MAX 256
#define ROUNDS 3000
#define OFF_A 0
#define OFF_B 8
#define OFF_C 16
#define WIDE (1ull << 63)
#define ECHO (1ull << 62)
#define BURST_BLOCK_MAX 16384
#define BURST 40

__attribute__((format(printf, 1, 2), noreturn))
static void fail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "fabric_order: rank %d: FAIL: ", hashi_job.rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}
#define CHECK(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

static char err[2048];
static int me, np, right, left;
static uint64_t blocks_seen, notes_seen;   /* from the left neighbour */
static uint64_t echoes_seen;               /* answers from the right neighbour */
static struct hashi_tl_rkey right_rkey;
static int have_rkey;
static int puts_done;

static uint64_t llcm(uint64_t off)
{
    return __atomic_load_n((uint64_t *)((char *)hashi_transport_llcm() + off), __ATOMIC_ACQUIRE);
}

static uint64_t sig_value(uint64_t k)
{
    return k % 2 ? k : k | WIDE;
}

/* What the LLCM holds once round k is complete (k = 0: nothing yet). */
static void expect_after(uint64_t k, const char *when)
{
    uint64_t a = llcm(OFF_A), b = llcm(OFF_B), c = llcm(OFF_C);
    CHECK(a == k, "%s: tiny write A is %" PRIu64 ", expected %" PRIu64, when, a, k);
    CHECK(c == (k ? sig_value(k) : 0), "%s: put signal C is %#" PRIx64 ", expected %#" PRIx64, when, c,
          k ? sig_value(k) : 0);
    uint64_t wb = k ? k | WIDE : 0;
    CHECK(b == wb, "%s: wide tiny write B is %#" PRIx64 ", expected %#" PRIx64, when, b, wb);
}

/* flood mode: per-peer counts of blocks received and answers received. */
static int flood;
static int credit_poll;
static uint64_t credit_poll_seen;   /* rank 1: blocks received in credit_poll mode */
static uint64_t *flood_blocks, *flood_answers;
static int pingpong;
static uint64_t pingpong_seen;      /* blocks received in pingpong mode */
static int inject_burst;
static uint64_t burst_seen;         /* rank 1: blocks received in inject_burst mode */
static size_t net_block_max;        /* hashi_tl_config.net_block_max (inject_burst) */

/* inject_burst: block k's length and its byte i. */
static size_t burst_len(uint64_t k)
{
    return 1 + (size_t)(k * 4099) % BURST_BLOCK_MAX;
}

static unsigned char burst_byte(uint64_t k, size_t i)
{
    return (unsigned char)(k * 131 + i * 7 + (i >> 8));
}

static void burst_block(int src, const unsigned char *msg, size_t len)
{
    uint64_t k = burst_seen + 1;
    CHECK(src == 0 && len == burst_len(k), "inject_burst: block %" PRIu64 " of %zu bytes from %d (expected %zu)",
          k, len, src, burst_len(k));
    for (size_t i = 0; i < len; i++)
        CHECK(msg[i] == burst_byte(k, i), "inject_burst: block %" PRIu64 " byte %zu is %#x, expected %#x", k, i,
              msg[i], burst_byte(k, i));
    burst_seen = k;
}

#define OFF_FLOOD(src) (64 + 8 * (uint64_t)(src))

static void flood_block(int src, const void *msg, size_t len)
{
    uint64_t k;
    CHECK(len == sizeof k, "flood block of %zu bytes from %d", len, src);
    memcpy(&k, msg, sizeof k);
    CHECK(k == flood_blocks[src] + 1, "flood block %" PRIu64 " from %d after %" PRIu64, k, src, flood_blocks[src]);
    flood_blocks[src] = k;
    /* Both answers take a credit at src, which is answering our blocks the same way. */
    int rc = hashi_tl(src)->notify(src, k | ECHO);
    CHECK(rc == 0, "answering flood block %" PRIu64 " of %d: %d", k, src, rc);
    rc = hashi_tl(src)->tiny_write(src, OFF_FLOOD(me), k | WIDE, 8);
    CHECK(rc == 0, "wide tiny write answering flood block %" PRIu64 " of %d: %d", k, src, rc);
}

static void flood_notify(int src, uint64_t value)
{
    CHECK(value == ((flood_answers[src] + 1) | ECHO), "flood answer %#" PRIx64 " from %d after %" PRIu64, value,
          src, flood_answers[src]);
    /* The wide tiny write sent before this answer has landed. */
    uint64_t w = llcm(OFF_FLOOD(src));
    CHECK(w == (flood_answers[src] ? flood_answers[src] | WIDE : 0), "flood answer %" PRIu64 " from %d found "
          "its previous tiny write %#" PRIx64, (uint64_t)(value & ~ECHO), src, w);
    flood_answers[src]++;
}

static void on_block(void *ctx, int src, const void *msg, size_t len)
{
    (void)ctx;
    if (flood) {
        flood_block(src, msg, len);
        return;
    }
    if (inject_burst) {
        burst_block(src, msg, len);
        return;
    }
    if (pingpong) {
        uint64_t k;
        CHECK(src == 1 - me && len == sizeof k, "pingpong: block of %zu bytes from %d", len, src);
        memcpy(&k, msg, sizeof k);
        CHECK(k == pingpong_seen + 1, "pingpong: block %" PRIu64 " after %" PRIu64, k, pingpong_seen);
        pingpong_seen = k;
        if (me == 1) {
            /* From the handler, where nobody may wait for a credit. */
            int rc = hashi_tl_block_send(0, &k, sizeof k, NULL, 0);
            CHECK(rc == 0, "pingpong: answering block %" PRIu64 " failed (%d): its credit did not come back", k, rc);
        }
        return;
    }
    if (credit_poll) {
        uint64_t k;
        CHECK(src == 0 && len == sizeof k, "credit_poll: block of %zu bytes from %d", len, src);
        memcpy(&k, msg, sizeof k);
        CHECK(k == credit_poll_seen + 1, "credit_poll: block %" PRIu64 " after %" PRIu64, k, credit_poll_seen);
        credit_poll_seen = k;
        return;
    }
    if (len == sizeof(struct hashi_tl_rkey)) {
        memcpy(&right_rkey, msg, sizeof right_rkey);
        have_rkey = 1;
        return;
    }
    CHECK(src == left && len == sizeof(uint64_t), "block of %zu bytes from %d", len, src);
    uint64_t k;
    memcpy(&k, msg, sizeof k);
    CHECK(k == blocks_seen + 1, "block %" PRIu64 " after %" PRIu64, k, blocks_seen);
    CHECK(notes_seen == k - 1, "block %" PRIu64 " before notification %" PRIu64, k, k - 1);
    /* Round k - 1 complete, nothing of round k yet. */
    char when[64];
    snprintf(when, sizeof when, "at block %" PRIu64, k);
    expect_after(k - 1, when);
    blocks_seen = k;
    int rc = hashi_tl(src)->notify(src, k | ECHO);
    CHECK(rc == 0, "answering block %" PRIu64 ": %d", k, rc);
}

static void on_notify(void *ctx, int src, uint64_t value)
{
    (void)ctx;
    if (flood) {
        flood_notify(src, value);
        return;
    }
    if (value & ECHO) {
        CHECK(src == right && value == ((echoes_seen + 1) | ECHO), "answer %#" PRIx64 " from %d after %" PRIu64,
              value, src, echoes_seen);
        echoes_seen++;
        return;
    }
    CHECK(src == left && value == blocks_seen && value == notes_seen + 1,
          "notification %" PRIu64 " from %d (blocks %" PRIu64 ", notifications %" PRIu64 ")", value, src,
          blocks_seen, notes_seen);
    char when[64];
    snprintf(when, sizeof when, "at notification %" PRIu64, value);
    expect_after(value, when);
    notes_seen = value;
}

static int poll_once(void)
{
    return hashi_transport_progress();
}

static void put_done(void *arg, int status)
{
    CHECK(status == 0, "put completed with %d", status);
    (*(int *)arg)++;
}

static void setup(void)
{
    CHECK(hashi_params_load(err, sizeof err) == 0, "%s", err);
    hashi_log_level = (int)hashi_param_int(HASHI_P_VERBOSE);
    CHECK(hashi_rt_init(err, sizeof err) == 0, "%s", err);
    hashi_log_set_rank(hashi_job.rank);
    me = hashi_job.rank;
    np = hashi_job.size;
    right = (me + 1) % np;
    left = (me + np - 1) % np;
    struct hashi_tl_config cfg = { .llcm_size = LLCM_SIZE, .block_max = BLOCK_MAX, .net_block_max = net_block_max,
                                   .on_block = on_block, .on_notify = on_notify };
    CHECK(hashi_transport_init(&cfg, err, sizeof err) == 0, "transport init: %s", err);
    CHECK(hashi_wake_create(err, sizeof err) == 0, "%s", err);
    CHECK(hashi_rt_exchange(err, sizeof err) == 0, "%s", err);
    CHECK(hashi_wake_attach(err, sizeof err) == 0, "%s", err);
    CHECK(hashi_transport_connect(err, sizeof err) == 0, "transport connect: %s", err);
    CHECK(hashi_rt_fence(err, sizeof err) == 0, "%s", err);
    if (hashi_wake_needs_unlink())
        hashi_wake_unlink();
}

static int badprov(void)
{
    CHECK(hashi_params_load(err, sizeof err) == 0, "%s", err);
    CHECK(hashi_rt_init(err, sizeof err) == 0, "%s", err);
    struct hashi_tl_config cfg = { .llcm_size = LLCM_SIZE, .block_max = BLOCK_MAX, .on_block = on_block,
                                   .on_notify = on_notify };
    CHECK(hashi_transport_init(&cfg, err, sizeof err) != 0, "transport init succeeded with FI_PROVIDER=%s",
          getenv("FI_PROVIDER"));
    CHECK(!strchr(err, '\n'), "the error takes more than one line: %s", err);
    printf("%s\n", err);
    hashi_transport_finalize();
    hashi_rt_finalize();
    printf("badprov ok\n");
    return 0;
}

static void send_ok(int rc, const char *what)
{
    CHECK(rc == 0, "%s to %d failed: %s", what, right, strerror(-rc));
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Rank 0 puts to / gets from rank 1's registered buffer, one operation at a time. */
static void bench(void)
{
    CHECK(np == 2, "bench runs on 2 ranks");
    size_t maxlen = 16u << 20;
    unsigned char *local = aligned_alloc(4096, maxlen), *remote = aligned_alloc(4096, maxlen);
    CHECK(local && remote, "out of memory");
    memset(local, 1, maxlen);
    memset(remote, 2, maxlen);
    struct hashi_tl_mem lmem, rmem;
    CHECK(hashi_transport_mem_reg(local, maxlen, &lmem) == 0 && hashi_transport_mem_reg(remote, maxlen, &rmem) == 0,
          "mem_reg");
    struct hashi_tl_rkey key;
    hashi_transport_rkey(&rmem, left, &key);
    int rc;
    while ((rc = hashi_tl_block_send(left, &key, sizeof key, NULL, 0)) == -EAGAIN)
        hashi_transport_progress();
    while (!have_rkey)
        hashi_transport_wait(poll_once, 1000);
    if (me == 0)
        printf("%10s %12s %12s %12s %12s\n", "bytes", "PUSH best", "median", "PULL best", "median");
    uint64_t round = 0;
    for (size_t len = 64; len <= maxlen; len *= 4) {
        int n = len < 65536 ? 2000 : (int)((64u << 20) / len) + 4;
        double bw[2][5];
        for (int kind = 0; kind < 2; kind++) {
            for (int rep = 0; rep < 5; rep++) {
                round++;
                CHECK(hashi_rt_fence(err, sizeof err) == 0, "%s", err);
                double t0 = now();
                if (me == 0) {
                    for (int i = 0; i < n; i++) {
                        int before = puts_done;
                        rc = kind == 0 ? hashi_tl(1)->put(1, local, len, &lmem, &right_rkey, 0, NULL, put_done,
                                                          &puts_done)
                                       : hashi_tl(1)->get(1, local, len, &lmem, &right_rkey, 0, put_done, &puts_done);
                        CHECK(rc == 0, "%s of %zu bytes: %d", kind ? "get" : "put", len, rc);
                        while (puts_done == before)
                            hashi_transport_progress();
                    }
                    send_ok(hashi_tl(1)->tiny_write(1, OFF_A, round, 8), "tiny write");
                } else {
                    /* The target progresses: tcp moves RMA data only then. */
                    while (llcm(OFF_A) != round)
                        hashi_transport_progress();
                }
                bw[kind][rep] = (double)len * n / (now() - t0) / 1e9;
            }
            qsort(bw[kind], 5, sizeof(double), cmp_double);
        }
        if (me == 0)
            printf("%10zu %12.2f %12.2f %12.2f %12.2f\n", len, bw[0][4], bw[0][2], bw[1][4], bw[1][2]);
    }
    CHECK(hashi_rt_fence(err, sizeof err) == 0, "%s", err);
    hashi_transport_mem_dereg(&lmem);
    hashi_transport_mem_dereg(&rmem);
    free(local);
    free(remote);
}

/*
 * The closing fence, progressing meanwhile: a send counts as done once the
 * provider took it, and tcp moves it only while this rank calls the
 * provider, so a rank may not stop progressing before every rank is done.
 */
static void fence_progressing(void)
{
    _Atomic int fenced = 0;
    CHECK(hashi_rt_fence_start(&fenced, err, sizeof err) == 0, "%s", err);
    while (!atomic_load(&fenced))
        hashi_transport_wait(poll_once, 1000);
    /* `fenced` lives on this stack: PMIx's callback writes it once more. */
    hashi_rt_fence_finish(&fenced);
}

/* The end of a mode: everyone done, then the transport and runtime go. */
static void teardown(void)
{
    fence_progressing();
    hashi_transport_finalize();
    hashi_wake_detach();
    hashi_rt_finalize();
}

static int flood_complete(uint64_t n)
{
    for (int r = 0; r < np; r++)
        if (r != me && (flood_blocks[r] < n || flood_answers[r] < n || llcm(OFF_FLOOD(r)) != (n | WIDE)))
            return 0;
    return 1;
}

/* flood mode (see the top): all-to-all blocks, answered from the handlers. */
static void run_flood(uint64_t n)
{
    CHECK(np >= 2 && np <= 64, "flood runs on 2 .. 64 ranks");
    flood_blocks = calloc((size_t)np, sizeof *flood_blocks);
    flood_answers = calloc((size_t)np, sizeof *flood_answers);
    CHECK(flood_blocks && flood_answers, "out of memory");
    flood = 1;
    for (int r = 0; r < np; r++)
        CHECK(hashi_tl(r)->id == HASHI_TL_FABRIC, "rank %d is not reached through the fabric transport", r);
    for (uint64_t k = 1; k <= n; k++) {
        for (int i = 1; i < np; i++) {
            int to = (me + i) % np, rc;
            while ((rc = hashi_tl_block_send(to, &k, sizeof k, NULL, 0)) == -EAGAIN)
                hashi_transport_wait(poll_once, 1000);
            CHECK(rc == 0, "flood block %" PRIu64 " to %d failed: %s", k, to, strerror(-rc));
        }
    }
    while (!flood_complete(n))
        hashi_transport_wait(poll_once, 1000);
    teardown();
    free(flood_blocks);
    free(flood_answers);
    printf("rank %d of %d ok\n", me, np);
}

static int credit_poll_done(void)
{
    return credit_poll_seen == 2;
}

/* credit_poll mode (see the top). */
static void run_credit_poll(void)
{
    CHECK(np == 2 && hashi_param_int(HASHI_P_FABRIC_CREDITS) == 1, "credit_poll runs on 2 ranks with 1 credit");
    CHECK(hashi_tl(1 - me)->id == HASHI_TL_FABRIC, "rank %d is not reached through the fabric transport", 1 - me);
    credit_poll = 1;
    int rc;
    uint64_t k = 1;
    if (me == 0) {
        while ((rc = hashi_tl_block_send(1, &k, sizeof k, NULL, 0)) == -EAGAIN)
            hashi_transport_progress();
        send_ok(rc, "credit_poll block 1");
        hashi_transport_progress();     /* most likely an empty read: the skip is armed */
    } else {
        while (credit_poll_seen < 1)
            hashi_transport_progress();   /* consuming block 1 sends its credit back */
    }
    /* Rank 1 has returned the credit when the fence lets rank 0 through. */
    CHECK(hashi_rt_fence(err, sizeof err) == 0, "%s", err);
    if (me == 0) {
        /* No progress from here: the send itself must look for the credit. */
        int calls = 1;
        k = 2;
        while ((rc = hashi_tl_block_send(1, &k, sizeof k, NULL, 0)) == -EAGAIN && calls < 5000) {
            calls++;
            nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
        }
        CHECK(rc == 0, "a send out of credits never found the returned credit itself (%d tries without progress: "
              "rc %d)", calls, rc);
    } else {
        while (!credit_poll_done())
            hashi_transport_wait(poll_once, 1000);
    }
    teardown();
    printf("rank %d of %d ok\n", me, np);
}

static uint64_t pingpong_want;

static int pingpong_done(void)
{
    return pingpong_seen == pingpong_want;
}

/* pingpong mode (see the top). */
static void run_pingpong(uint64_t n)
{
    CHECK(np == 2 && hashi_param_int(HASHI_P_FABRIC_CREDITS) == 4, "pingpong runs on 2 ranks with 4 credits");
    CHECK(hashi_tl(1 - me)->id == HASHI_TL_FABRIC, "rank %d is not reached through the fabric transport", 1 - me);
    pingpong = 1;
    for (uint64_t k = 1; k <= n; k++) {
        pingpong_want = k;
        if (me == 0) {
            int rc;
            while ((rc = hashi_tl_block_send(1, &k, sizeof k, NULL, 0)) == -EAGAIN)
                hashi_transport_progress();
            send_ok(rc, "pingpong block");
        }
        while (!pingpong_done())
            hashi_transport_wait(poll_once, 1000);
    }
    CHECK(fab.credit_writes == 0, "pingpong: %lu credit returns went by a write of their own in %" PRIu64
          " round trips (expected 0: each message carries back the credit of the one it answers)", fab.credit_writes, n);
    teardown();
    printf("rank %d of %d ok\n", me, np);
}

static int burst_done(void)
{
    return burst_seen == BURST;
}

/* inject_burst mode (see the top). */
static void run_inject_burst(void)
{
    CHECK(np == 2 && hashi_param_int(HASHI_P_FABRIC_TX_SLOTS) == 4, "inject_burst runs on 2 ranks with 4 send slots");
    CHECK(hashi_tl(1 - me)->id == HASHI_TL_FABRIC, "rank %d is not reached through the fabric transport", 1 - me);
    int injecting = hashi_param_int(HASHI_P_FABRIC_INJECT) != 0;
    if (me == 0) {
        /* No progress in between (when injecting): no send completion can hand a slot back. */
        for (uint64_t k = 1; k <= BURST; k++) {
            size_t len = burst_len(k);
            int rc;
            unsigned char *b;
            while (!(b = hashi_tl(1)->block_alloc(1, len, &rc)) && rc == -EAGAIN && !injecting)
                hashi_transport_progress();
            CHECK(b, "inject_burst: block %" PRIu64 " (%zu bytes) found no send slot: %s (an injected block "
                  "should hand its slot back at once)", k, len, strerror(-rc));
            for (size_t i = 0; i < len; i++)
                b[i] = burst_byte(k, i);
            hashi_tl(1)->block_kick(1, len);
        }
    } else {
        while (!burst_done())
            hashi_transport_wait(poll_once, 1000);
    }
    teardown();
    printf("rank %d of %d ok\n", me, np);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "badprov"))
        return badprov();
    if (argc > 1 && !strcmp(argv[1], "inject_burst")) {
        inject_burst = 1;
        net_block_max = BURST_BLOCK_MAX;
        setup();
        run_inject_burst();
        return 0;
    }
    setup();
    if (argc > 1 && !strcmp(argv[1], "bench")) {
        bench();
        hashi_transport_finalize();
        hashi_wake_detach();
        hashi_rt_finalize();
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "pingpong")) {
        run_pingpong(strtoull(argv[2], NULL, 10));
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "credit_poll")) {
        run_credit_poll();
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "flood")) {
        run_flood(strtoull(argv[2], NULL, 10));
        return 0;
    }
    CHECK(hashi_tl(right)->id == HASHI_TL_FABRIC, "rank %d is not reached through the fabric transport", right);

    /* The neighbour's put target: a registered word array. */
    static uint64_t inbox[64];
    struct hashi_tl_mem mem;
    CHECK(hashi_transport_mem_reg(inbox, sizeof inbox, &mem) == 0, "mem_reg");
    struct hashi_tl_rkey key;
    hashi_transport_rkey(&mem, left, &key);
    int rc;
    while ((rc = hashi_tl_block_send(left, &key, sizeof key, NULL, 0)) == -EAGAIN)
        hashi_transport_wait(poll_once, 1000);
    send_ok(rc, "rkey block");
    while (!have_rkey)
        hashi_transport_wait(poll_once, 1000);

    static uint64_t source[64];
    int puts_started = 0;
    for (uint64_t k = 1; k <= ROUNDS; k++) {
        while ((rc = hashi_tl_block_send(right, &k, sizeof k, NULL, 0)) == -EAGAIN)
            hashi_transport_wait(poll_once, 1000);
        send_ok(rc, "block");
        send_ok(hashi_tl(right)->tiny_write(right, OFF_A, k, 8), "tiny write A");
        source[k % 64] = k;
        struct hashi_tl_signal sig = { OFF_C, sig_value(k), 8 };
        send_ok(hashi_tl(right)->put(right, &source[k % 64], 8, NULL, &right_rkey, (k % 64) * 8, &sig, put_done,
                                     &puts_done), "put");
        puts_started++;
        send_ok(hashi_tl(right)->tiny_write(right, OFF_B, k | WIDE, 8), "tiny write B");
        send_ok(hashi_tl(right)->notify(right, k), "notify");
        /* Keep at most 32 puts in flight: their source words are reused. */
        while (puts_started - puts_done >= 32)
            hashi_transport_wait(poll_once, 1000);
        if (k % 8 == 0)
            hashi_transport_progress();
    }
    while (notes_seen < ROUNDS || echoes_seen < ROUNDS || puts_done < puts_started)
        hashi_transport_wait(poll_once, 1000);
    /* The last puts' data is in the inbox. */
    for (uint64_t k = ROUNDS - 63; k <= ROUNDS; k++)
        CHECK(__atomic_load_n(&inbox[k % 64], __ATOMIC_ACQUIRE) == k, "inbox word %" PRIu64 " is %" PRIu64,
              k % 64, inbox[k % 64]);
    fence_progressing();
    hashi_transport_mem_dereg(&mem);
    hashi_transport_finalize();
    hashi_wake_detach();
    hashi_rt_finalize();
    printf("rank %d of %d ok\n", me, np);
    return 0;
}
