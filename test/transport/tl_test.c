/*
 * Unit tests of the transport primitives (src/transport/transport.h), run
 * between ranks started by mpirun without the MPI library: the program wires
 * up the runtime and the transport itself, in MPI_Init's order, and drives
 * every primitive on whichever transport HASHI_TRANSPORT selects.
 *
 *   tl_test           all the checks below; prints "rank R of S ok" (with
 *                     every peer on emu and a ring of at most 4k units
 *                     (HASHI_EMU_RING_SIZE), also the ring's own cases)
 *   tl_test keycheck  (singleton) a segment of another job key is refused
 *   tl_test bench     figures for docs/transport.md (2 ranks)
 *
 * Neighbours: rank r sends to right = (r+1) % S and hears from left. Each
 * rank's LLCM is laid out by this test: slot area per source rank.
 */
#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"
#include "transport/emu/emu.h"
#include "transport/transport.h"

#define LLCM_SIZE (128 * 1024)
#define BLOCK_MAX 512
#define REGION (4u << 20)

__attribute__((format(printf, 3, 4), noreturn))
static void fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s:%d: rank %d: FAIL: ", file, line, hashi_job.rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}
#define CHECK(cond, ...) do { if (!(cond)) fail_at(__FILE__, __LINE__, __VA_ARGS__); } while (0)

static int me, np, right, left;
static char err[2048];

/* ---- what arrives --------------------------------------------------- */

struct blk_hdr {
    uint32_t kind;   /* BLK_DATA, BLK_RKEY */
    uint32_t len;    /* payload bytes */
    uint64_t seq;    /* per (source, destination), shared with notifications */
};
enum { BLK_DATA = 1, BLK_RKEY, BLK_PING, BLK_SEQLIKE };
static int bench_pong_block;   /* BLK_PING blocks received (bench) */

static uint64_t *expect_seq;        /* next sequence number from each source */
static struct hashi_tl_rkey (*peer_rkey)[2];   /* up to two keys per source */
static int *have_rkey;
static long blocks_seen;

static unsigned char pattern(int src, uint64_t seq, size_t i)
{
    return (unsigned char)(src * 31 + seq * 7 + i * 13 + 1);
}

static void check_seqlike(int src, const struct blk_hdr *h, const unsigned char *p);

static void on_block(void *ctx, int src, const void *msg, size_t len)
{
    CHECK(ctx == &expect_seq, "handler context not passed through");
    CHECK((uintptr_t)msg % HASHI_TL_BLOCK_ALIGN == 0, "block from %d misaligned (%p)", src, msg);
    struct blk_hdr h;
    CHECK(len >= sizeof h, "block from %d of %zu bytes, shorter than its header", src, len);
    memcpy(&h, msg, sizeof h);
    CHECK(len == sizeof h + h.len, "block from %d: %zu bytes delivered, header says %zu", src, len,
          sizeof h + h.len);
    if (h.kind == BLK_PING) {
        bench_pong_block++;
        return;
    }
    if (h.kind == BLK_SEQLIKE) {
        check_seqlike(src, &h, (const unsigned char *)msg + sizeof h);
        return;
    }
    if (h.kind == BLK_RKEY) {
        CHECK(h.len && h.len <= sizeof peer_rkey[src] && h.len % sizeof(struct hashi_tl_rkey) == 0,
              "rkey block of %u bytes", h.len);
        memcpy(peer_rkey[src], (const char *)msg + sizeof h, h.len);
        have_rkey[src] = 1;
        return;
    }
    CHECK(h.seq == expect_seq[src], "block from %d out of order: seq %" PRIu64 ", expected %" PRIu64, src, h.seq,
          expect_seq[src]);
    const unsigned char *p = (const unsigned char *)msg + sizeof h;
    for (size_t i = 0; i < h.len; i++)
        CHECK(p[i] == pattern(src, h.seq, i), "block %" PRIu64 " from %d: byte %zu is %u, expected %u", h.seq,
              src, i, p[i], pattern(src, h.seq, i));
    expect_seq[src]++;
    blocks_seen++;
}

static void on_notify(void *ctx, int src, uint64_t value)
{
    (void)ctx;
    CHECK(value == (expect_seq[src] | (1ull << 63)), "notification from %d: %" PRIx64 ", expected seq %" PRIu64,
          src, value, expect_seq[src]);
    expect_seq[src]++;
}

/* ---- helpers ------------------------------------------------------- */

/* TL_TRACE=1: say which phase runs (to find a hang). */
static void trace(const char *phase)
{
    static int on = -1;
    if (on < 0)
        on = getenv("TL_TRACE") != NULL;
    if (on)
        fprintf(stderr, "rank %d: %s\n", hashi_job.rank, phase);
}

static void fence(void)
{
    CHECK(hashi_rt_fence(err, sizeof err) == 0, "fence: %s", err);
}

static int poll_once(void)
{
    return hashi_transport_progress();
}

static uint64_t llcm_load(uint64_t off)
{
    return __atomic_load_n((uint64_t *)((char *)hashi_transport_llcm() + off), __ATOMIC_ACQUIRE);
}

/* Progress until the LLCM word at off equals v. */
static void wait_llcm(uint64_t off, uint64_t v)
{
    while (llcm_load(off) != v)
        hashi_transport_wait(poll_once, 1000);
}

static void send_block(int peer, uint32_t kind, uint64_t seq, const void *payload, uint32_t len)
{
    struct blk_hdr h = { kind, len, seq };
    int rc;
    while ((rc = hashi_tl_block_send(peer, &h, sizeof h, payload, len)) == -EAGAIN)
        hashi_transport_wait(poll_once, 1000);
    CHECK(rc == 0, "block send to %d failed: %s", peer, strerror(-rc));
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Names this job's emu segments would have in /dev/shm. */
static int count_segment_names(void)
{
    char prefix[512];
    if (hashi_job.job_dir[0]) {
        char dir[sizeof hashi_job.job_dir];
        snprintf(dir, sizeof dir, "%s", hashi_job.job_dir);
        snprintf(prefix, sizeof prefix, "%s-emu-", basename(dir));
    } else {
        snprintf(prefix, sizeof prefix, "hashi-%u-%016llx-emu-", (unsigned)getuid(),
                 (unsigned long long)hashi_job.key);
    }
    int n = 0;
    DIR *d = opendir("/dev/shm");
    CHECK(d, "cannot list /dev/shm: %s", strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix)))
            n++;
    closedir(d);
    return n;
}

/* ---- the checks ------------------------------------------------------ */

/* LLCM layout of this test. */
#define OFF_TINY(src)   ((uint64_t)(src) * 64)          /* 64 B per source: sizes test */
#define OFF_TORN(src)   (16384 + (uint64_t)(src) * 64)  /* torn-read test word + final */
#define OFF_ORDER(src)  (32768 + (uint64_t)(src) * 64)  /* block-then-tiny flag */
#define OFF_SIG(src)    (49152 + (uint64_t)(src) * 64)  /* put signal */
#define OFF_ACK(src)    (65536 + (uint64_t)(src) * 64)  /* put acknowledgement */
#define OFF_COUNTER     (114688)                        /* fetch-add counter (rank 0's) */

static void test_tiny_sizes(void)
{
    trace("test_tiny_sizes");
    /* 1, 2, 4, 8-byte stores at their offsets; neighbouring bytes untouched. */
    const uint64_t v8 = 0x8877665544332211ull ^ ((uint64_t)me << 56);
    CHECK(hashi_tl(right)->tiny_write(right, OFF_TINY(me) + 0, 0xA5, 1) == 0, "1-byte tiny write");
    CHECK(hashi_tl(right)->tiny_write(right, OFF_TINY(me) + 2, 0xBEEF, 2) == 0, "2-byte tiny write");
    CHECK(hashi_tl(right)->tiny_write(right, OFF_TINY(me) + 4, 0xDEADBEEF, 4) == 0, "4-byte tiny write");
    CHECK(hashi_tl(right)->tiny_write(right, OFF_TINY(me) + 8, v8, 8) == 0, "8-byte tiny write");
    CHECK(hashi_tl(right)->tiny_write(right, OFF_TINY(me) + 16, 1, 8) == 0, "flag");
    wait_llcm(OFF_TINY(left) + 16, 1);
    const unsigned char *b = (const unsigned char *)hashi_transport_llcm() + OFF_TINY(left);
    const uint64_t lv8 = 0x8877665544332211ull ^ ((uint64_t)left << 56);
    unsigned char want[24] = { 0xA5, 0, 0xEF, 0xBE, 0xEF, 0xBE, 0xAD, 0xDE };
    memcpy(want + 8, &lv8, 8);
    want[16] = 1;
    for (int i = 0; i < 24; i++)
        CHECK(b[i] == want[i], "LLCM byte %d from rank %d is %02x, expected %02x", i, left, b[i], want[i]);
    /* Limits: misaligned, oversized, out of range. */
    CHECK(hashi_tl(right)->tiny_write(right, 3, 0, 4) == -EINVAL, "misaligned 4-byte tiny write accepted");
    CHECK(hashi_tl(right)->tiny_write(right, 0, 0, 3) == -EINVAL, "3-byte tiny write accepted");
    CHECK(hashi_tl(right)->tiny_write(right, 0, 0, 16) == -EINVAL, "16-byte tiny write accepted");
    CHECK(hashi_tl(right)->tiny_write(right, LLCM_SIZE - 4, 0, 8) == -EINVAL, "tiny write past the LLCM accepted");

    /* llcm_write (emu only): 31 bytes behind the sizes above, published by a
     * tiny write after them; the reader sees all of them once it sees the flag. */
    const struct hashi_tl_ops *tl = hashi_tl(right);
    CHECK(tl->id == HASHI_TL_EMU || !tl->llcm_write, "llcm_write on %s: only emu can store directly", tl->name);
    if (!tl->llcm_write || !hashi_tl(left)->llcm_write)
        return;
    unsigned char bytes[31];
    for (int i = 0; i < 31; i++)
        bytes[i] = (unsigned char)(me * 31 + i + 1);
    CHECK(tl->llcm_write(right, OFF_TINY(me) + 24, bytes, sizeof bytes) == 0, "llcm_write of 31 bytes");
    CHECK(tl->tiny_write(right, OFF_TINY(me) + 56, 2, 8) == 0, "flag after llcm_write");
    wait_llcm(OFF_TINY(left) + 56, 2);
    for (int i = 0; i < 31; i++)
        CHECK(b[24 + i] == (unsigned char)(left * 31 + i + 1), "llcm_write byte %d from rank %d is %02x", i, left,
              b[24 + i]);
    CHECK(b[23] == 0 && b[55] == 0, "llcm_write from rank %d touched a byte next to its range", left);
    CHECK(tl->llcm_write(right, LLCM_SIZE - 8, bytes, 16) == -EINVAL, "llcm_write past the LLCM accepted");
}

static void test_tiny_atomic(void)
{
    trace("test_tiny_atomic");
    /* The writer stores words whose 8 bytes are equal, as fast as it can;
     * the reader checks every value it sees is whole. Then a final value. */
    /* emu: real stores racing real loads, so many rounds; fabric: each
     * write is a message the target's progress stores, fewer suffice. */
    const long rounds = hashi_tl(right)->id == HASHI_TL_EMU ? 200000 : 20000;
    long reads = 0, changes = 0;
    uint64_t last = 0;
    for (long k = 1; k <= rounds; k++) {
        uint64_t v = 0x0101010101010101ull * (uint64_t)(1 + k % 254);
        int rc;
        while ((rc = hashi_tl(right)->tiny_write(right, OFF_TORN(me), v, 8)) == -EAGAIN)
            hashi_transport_wait(poll_once, 1000);
        CHECK(rc == 0, "tiny write: %d", rc);
        if ((k & 63) == 0) {    /* read what the left neighbour is doing meanwhile */
            hashi_transport_progress();
            uint64_t r = llcm_load(OFF_TORN(left));
            CHECK(r == 0x0101010101010101ull * (r & 0xff), "torn 8-byte value %016" PRIx64 " from rank %d", r, left);
            reads++;
            changes += r != last;
            last = r;
        }
    }
    CHECK(hashi_tl(right)->tiny_write(right, OFF_TORN(me) + 8, 1, 8) == 0, "final tiny write");
    for (;;) {
        /* The flag first: once it is set, the value read after it is the last. */
        int final_seen = llcm_load(OFF_TORN(left) + 8) == 1;
        uint64_t r = llcm_load(OFF_TORN(left));
        CHECK(r == 0x0101010101010101ull * (r & 0xff), "torn 8-byte value %016" PRIx64 " from rank %d", r, left);
        reads++;
        changes += r != last;
        last = r;
        if (final_seen)
            break;
        hashi_transport_progress();
    }
    uint64_t final = 0x0101010101010101ull * (uint64_t)(1 + rounds % 254);
    CHECK(last == final, "last value from rank %d %016" PRIx64 ", expected %016" PRIx64, left, last, final);
    (void)changes;
}

/* llcm_fetch_add (emu only): every rank adds to one counter in rank 0's
 * LLCM for the same 50 ms (rank 0 with a local atomic, racing the remote
 * ones; long enough that the ranks surely overlap); a lost or doubled
 * update shows in the total, and each adder's own view of the counter must
 * only grow. Each rank then reports how many adds it made. */
static void test_fetch_add(void)
{
    trace("test_fetch_add");
    int all = 1;
    for (int r = 0; r < np; r++)
        if (r != me) {
            const struct hashi_tl_ops *tl = hashi_tl(r);
            CHECK(tl->id == HASHI_TL_EMU || !tl->llcm_fetch_add, "llcm_fetch_add on %s: only emu has it", tl->name);
            all &= tl->llcm_fetch_add != NULL;
        }
    if (!all || np < 2 || np > 64)
        return;
    uint64_t *mine = (uint64_t *)((unsigned char *)hashi_transport_llcm() + OFF_COUNTER);
    uint64_t prev = 0, adds = 0;
    for (double end = now() + 0.05; (adds & 255) || now() < end; adds++) {
        uint64_t old;
        if (me == 0)
            old = __atomic_fetch_add(mine, (uint64_t)me + 1, __ATOMIC_ACQ_REL);
        else
            CHECK(hashi_tl(0)->llcm_fetch_add(0, OFF_COUNTER, (uint64_t)me + 1, &old) == 0, "llcm_fetch_add");
        CHECK(adds == 0 || old > prev, "counter went from %" PRIu64 " back to %" PRIu64, prev, old);
        prev = old;
    }
    if (me != 0) {
        uint64_t old = 0;
        CHECK(hashi_tl(0)->llcm_fetch_add(0, OFF_COUNTER + 4, 1, &old) == -EINVAL, "misaligned fetch_add accepted");
        CHECK(hashi_tl(0)->llcm_fetch_add(0, LLCM_SIZE - 4, 1, &old) == -EINVAL,
              "fetch_add past the LLCM accepted");
        CHECK(hashi_tl(0)->tiny_write(0, OFF_COUNTER + 64 + 8 * (uint64_t)me, adds, 8) == 0, "count to rank 0");
    }
    fence();
    if (me == 0) {
        hashi_transport_progress();   /* fabric would deliver here; emu stored already */
        uint64_t want = adds;
        for (int r = 1; r < np; r++)
            want += llcm_load(OFF_COUNTER + 64 + 8 * (uint64_t)r) * (uint64_t)(r + 1);
        CHECK(llcm_load(OFF_COUNTER) == want, "counter %" PRIu64 " after every rank's adds, expected %" PRIu64,
              llcm_load(OFF_COUNTER), want);
    }
}

static void test_blocks(void)
{
    trace("test_blocks");
    /* Oversized: refused at allocation. */
    int rc = 0;
    CHECK(hashi_tl(right)->block_alloc(right, BLOCK_MAX + 1, &rc) == NULL && rc == -EMSGSIZE,
          "oversized block accepted (rc %d)", rc);
    CHECK(hashi_transport_block_max() == BLOCK_MAX, "block_max %zu", hashi_transport_block_max());
    static unsigned char payload[BLOCK_MAX];
    const size_t pmax = BLOCK_MAX - sizeof(struct blk_hdr);
    /* Under load: every rank sends to every rank (itself too), interleaving
     * blocks of every length with notifications, more than a ring holds. */
    const int per_peer = hashi_tl(right)->id == HASHI_TL_EMU ? 3000 : 1000;  /* fabric: credits are 8 */
    uint64_t *next = calloc((size_t)np, sizeof *next);
    for (int i = 0; i < per_peer; i++) {
        for (int d = 0; d < np; d++) {
            int dest = (me + d) % np;
            uint64_t seq = next[dest]++;
            if (seq % 5 == 4) {
                while ((rc = hashi_tl(dest)->notify(dest, seq | (1ull << 63))) == -EAGAIN)
                    hashi_transport_wait(poll_once, 1000);
                CHECK(rc == 0, "notify to %d: %d", dest, rc);
                continue;
            }
            uint32_t len = (uint32_t)((seq * 37) % (pmax + 1));
            for (uint32_t j = 0; j < len; j++)
                payload[j] = pattern(me, seq, j);
            send_block(dest, BLK_DATA, seq, payload, len);
        }
        if (i % 16 == 0)
            hashi_transport_progress();
    }
    for (int s = 0; s < np; s++)
        while (expect_seq[s] < (uint64_t)per_peer)
            hashi_transport_wait(poll_once, 1000);
    /* A tiny write lands after the blocks sent before it. */
    for (int k = 1; k <= 200; k++) {
        uint64_t seq = next[right]++;
        send_block(right, BLK_DATA, seq, payload, 0);
        CHECK(hashi_tl(right)->tiny_write(right, OFF_ORDER(me), seq + 1, 8) == 0, "tiny write");
        uint64_t seen;
        while ((seen = llcm_load(OFF_ORDER(left))) < (uint64_t)per_peer + (uint64_t)k)
            hashi_transport_wait(poll_once, 1000);
        hashi_transport_progress();
        CHECK(expect_seq[left] >= seen, "tiny write %" PRIu64 " from %d seen before its block (delivered %" PRIu64
              ")", seen, left, expect_seq[left]);
    }
    fence();
    hashi_transport_progress();
    free(next);
}

/* ---- emu rings (white box: emu.h) -------------------------------------- */

/*
 * A BLK_SEQLIKE block's payload: the record's unit position P (as the
 * producer saw it), then words that look like ring headers: every word of
 * the record's unit j holds P + j + k * ring_units + 1 (k = 1 + j % 3), the
 * sequence word a record starting on that unit one to three laps later
 * carries. Had the consumer left them in place, a later lap's tail landing
 * there (after skip records moved the boundaries) would take them for
 * complete records. Bytes a shrinking kick gives back hold k = 0 (this lap's
 * value for the very next record) and, behind it, the header of a one-unit
 * data block out of order: delivered, it fails on_block's check.
 */
#define OFF_RING(src)     (81920 + (uint64_t)(src) * 64)   /* blocks sent in a ring phase */
#define OFF_RING_ACK(src) (98304 + (uint64_t)(src) * 64)   /* lockstep acknowledgements */

static uint64_t seqlike_word(uint64_t pos, size_t rec_off, int given_back)
{
    uint64_t j = rec_off / EMU_UNIT;
    uint64_t k = given_back ? 0 : 1 + j % 3;
    return pos + j + k * emu.ring_units + 1;
}

static uint64_t seqlike_got;        /* BLK_SEQLIKE blocks delivered */

static void check_seqlike(int src, const struct blk_hdr *h, const unsigned char *p)
{
    CHECK(h->seq == expect_seq[src], "ring block from %d out of order: seq %" PRIu64 ", expected %" PRIu64, src,
          h->seq, expect_seq[src]);
    CHECK(h->len >= 8 && h->len % 8 == 0, "ring block of %u bytes", h->len);
    uint64_t pos;
    memcpy(&pos, p, 8);
    int l = emu.local_of[src];
    uint64_t tail = emu.in[l].want - 1;   /* the record being delivered */
    CHECK(pos == tail, "ring block from %d written at unit %" PRIu64 ", delivered at %" PRIu64, src, pos, tail);
    for (size_t o = 8; o < h->len; o += 8) {
        uint64_t v, want = seqlike_word(pos, EMU_REC_HDR + sizeof *h + o, 0);
        memcpy(&v, p + o, 8);
        CHECK(v == want, "ring block %" PRIu64 " from %d at unit %" PRIu64 ": word %zu is %" PRIu64 ", expected %"
              PRIu64, h->seq, src, pos, o / 8, v, want);
    }
    expect_seq[src]++;
    seqlike_got++;
}

static struct emu_peer *ring_producer(int peer)
{
    return &emu.peer[emu.local_of[peer]];
}

/*
 * Write a BLK_SEQLIKE block of len payload bytes (a multiple of 8, >= 8)
 * straight into the ring at peer, reserving `reserve` >= len payload bytes
 * (more: a shrinking kick). Returns 0, or -EAGAIN if the ring had no room
 * and wait is 0 (with wait, progress until it has). *skip: units skipped.
 */
static int send_seqlike(int peer, uint64_t seq, size_t len, size_t reserve, int wait, uint64_t *skip)
{
    const struct hashi_tl_ops *tl = hashi_tl(peer);
    struct emu_peer *p = ring_producer(peer);
    const size_t hl = sizeof(struct blk_hdr);
    unsigned char *b;
    int rc;
    while (!(b = tl->block_alloc(peer, hl + reserve, &rc))) {
        CHECK(rc == -EAGAIN, "block_alloc of %zu bytes: %d", hl + reserve, rc);
        if (!wait)
            return rc;
        hashi_transport_wait(poll_once, 1000);
    }
    uint64_t pos = p->head + p->skip;
    CHECK(b == emu_unit(p->ring, pos)->data, "block_alloc returned %p, not the record at unit %" PRIu64,
          (void *)b, pos);
    if (skip)
        *skip = p->skip;
    struct blk_hdr h = { BLK_SEQLIKE, (uint32_t)len, seq };
    memcpy(b, &h, hl);
    memcpy(b + hl, &pos, 8);
    for (size_t o = 8; o < reserve; o += 8) {
        size_t rec_off = EMU_REC_HDR + hl + o;
        uint64_t v = seqlike_word(pos, rec_off, o >= len);
        if (o >= len && rec_off % EMU_UNIT == 8)        /* a whole fake record: a one-unit block */
            v = (uint64_t)hl | (uint64_t)EMU_BLOCK << 32 | (uint64_t)1 << 48;
        else if (o >= len && rec_off % EMU_UNIT == 16)  /* its blk_hdr: a data block out of order */
            v = BLK_DATA;
        memcpy(b + hl + o, &v, 8);
    }
    tl->block_kick(peer, hl + len);
    return 0;
}

static void notify_seq(int peer, uint64_t seq)
{
    int rc;
    while ((rc = hashi_tl(peer)->notify(peer, seq | (1ull << 63))) == -EAGAIN)
        hashi_transport_wait(poll_once, 1000);
    CHECK(rc == 0, "notify to %d: %d", peer, rc);
}

/* Nothing pending reads as complete: the word at inbound ring i's tail is
 * zero or a header of an older lap. */
static void check_ring_idle(int i, const char *phase)
{
    uint64_t t = emu.in[i].want - 1;
    uint64_t w = atomic_load_explicit(&emu.in[i].next->seq, memory_order_acquire);
    CHECK(w == 0 || (w + emu.ring_units <= t + 1 && (t + 1 - w) % emu.ring_units == 0),
          "%s: the ring from rank %d is idle at unit %" PRIu64 ", which holds %" PRIu64, phase, emu.peer[i].world,
          t, w);
}

static void check_rings_idle(const char *phase)
{
    for (int i = 0; i < emu.nlocal; i++)
        check_ring_idle(i, phase);
}

/* Tell the right neighbour how many ring messages it gets, wait for the left's. */
static void ring_phase_end(uint64_t sent, const char *phase)
{
    CHECK(hashi_tl(right)->tiny_write(right, OFF_RING(me), sent + 1, 8) == 0, "tiny write");
    uint64_t want;
    while ((want = llcm_load(OFF_RING(left))) == 0)
        hashi_transport_wait(poll_once, 1000);
    while (expect_seq[left] < want - 1)
        hashi_transport_wait(poll_once, 1000);
    CHECK(expect_seq[left] == want - 1, "%s: %" PRIu64 " messages from %d, %" PRIu64 " sent", phase, expect_seq[left],
          left, want - 1);
    fence();
    hashi_transport_progress();
    check_rings_idle(phase);
    /* Next phase counts from 0 again. */
    CHECK(hashi_tl(right)->tiny_write(right, OFF_RING(me), 0, 8) == 0, "tiny write");
    fence();
    expect_seq[left] = 0;
}

static void test_ring(void)
{
    trace("test_ring");
    const uint64_t n = emu.ring_units, hl = sizeof(struct blk_hdr);
    const uint64_t umax = emu_rec_units(BLOCK_MAX);
    const size_t pmax = BLOCK_MAX - hl;
    struct emu_peer *p = ring_producer(right);
    uint64_t seq = 0, skip;
    CHECK(emu_rec_units(8) == 1 && emu_rec_units(EMU_UNIT - EMU_REC_HDR) == 1 &&
          emu_rec_units(EMU_UNIT - EMU_REC_HDR + 1) == 2, "record units");

    /* 1. A record of every size 2 .. umax units across the ring's end at every
     * alignment (skips of 1 .. units - 1), padded there by one-unit
     * notifications and blocks. */
    for (uint64_t u = 2; u <= umax; u++) {
        size_t hi = u * EMU_UNIT - EMU_REC_HDR - hl, lo = (u - 1) * EMU_UNIT - EMU_REC_HDR - hl + 8;
        if (hi > pmax)
            hi = pmax & ~(size_t)7;
        lo = (lo + 7) & ~(size_t)7;
        for (uint64_t s = 1; s < u; s++) {
            for (uint64_t k = 0; n - (p->head & (n - 1)) != s; k++) {
                if (k % 2)
                    notify_seq(right, seq++);
                else
                    send_seqlike(right, seq++, 8, 8, 1, NULL);
            }
            size_t len = hi - 8 * (s % ((hi - lo) / 8 + 1));
            CHECK(emu_rec_units(hl + len) == u, "test: %zu bytes are not %" PRIu64 " units", len, u);
            send_seqlike(right, seq++, len, len, 1, &skip);
            CHECK(skip == s, "a %" PRIu64 "-unit record %" PRIu64 " units before the end skipped %" PRIu64, u, s,
                  skip);
        }
    }
    ring_phase_end(seq, "wrap");

    /* 2. Many laps of records of every length 8 .. the largest, payloads
     * made of plausible sequence words, notifications in between. */
    seq = 0;
    for (int i = 0; i < 40 * (int)n; i++) {
        if (i % 7 == 3) {
            notify_seq(right, seq++);
            continue;
        }
        size_t len = 8 + (size_t)(i * 8) % (pmax - 7);
        send_seqlike(right, seq++, len & ~(size_t)7, len & ~(size_t)7, 1, NULL);
        if (i % 32 == 0)
            hashi_transport_progress();
    }
    ring_phase_end(seq, "laps");

    /* 3. Shrinking kicks: reserve the largest block, fill it all, kick 8 ..
     * pmax bytes. The bytes given back hold this lap's next sequence word;
     * the next record goes there only after the receiver checked that its
     * tail does not read as complete (lockstep by tiny writes). */
    seq = 0;
    uint64_t step = 0;
    for (size_t len = 8; len <= pmax; len += 24, step++) {
        send_seqlike(right, seq++, len, pmax & ~(size_t)7, 1, NULL);
        while (expect_seq[left] < seq)
            hashi_transport_wait(poll_once, 1000);
        for (int k = 0; k < 3; k++)
            hashi_transport_progress();
        check_ring_idle(emu.local_of[left], "after a shrunk record");
        CHECK(hashi_tl(left)->tiny_write(left, OFF_RING_ACK(me), step + 1, 8) == 0, "ack");
        while (llcm_load(OFF_RING_ACK(right)) != step + 1)
            hashi_transport_wait(poll_once, 1000);
    }
    ring_phase_end(seq, "shrink");

    /* 4. A full ring: fill it without anyone draining until block_alloc (or
     * notify) says EAGAIN with the ring really full, then drain and go on. */
    for (int round = 0; round < 3; round++) {
        seq = 0;
        for (int i = 0;; i++) {
            size_t len = (size_t)(i % 3 == 2 ? pmax : 8 + 8 * (size_t)(i * 5 % 20)) & ~(size_t)7;
            int rc;
            uint64_t units = emu_rec_units(hl + len);
            if (i % 5 == 4) {
                units = 1;
                rc = hashi_tl(right)->notify(right, seq | (1ull << 63));
            } else {
                rc = send_seqlike(right, seq, len, len, 0, NULL);
            }
            if (rc == -EAGAIN) {
                uint64_t tail = atomic_load_explicit(p->ring_tail, memory_order_acquire);
                uint64_t pos = p->head & (n - 1), sk = pos + units > n ? n - pos : 0;
                CHECK(p->head + sk + units - tail > n, "EAGAIN with room: head %" PRIu64 ", tail %" PRIu64
                      ", %" PRIu64 " units wanted", p->head, tail, units);
                CHECK(p->head - tail + umax + umax > n, "EAGAIN with %" PRIu64 " of %" PRIu64 " units used",
                      p->head - tail, n);
                break;
            }
            CHECK(rc == 0, "send into a filling ring: %d", rc);
            seq++;
        }
        CHECK(seq >= n / umax, "only %" PRIu64 " messages fit a ring of %" PRIu64 " units", seq, n);
        fence();
        /* Now drain and keep sending: the sender progresses on EAGAIN. */
        for (int i = 0; i < (int)n; i++)
            send_seqlike(right, seq++, 8 * (size_t)(1 + i % 30), 8 * (size_t)(1 + i % 30), 1, NULL);
        ring_phase_end(seq, "full");
    }
    seqlike_got = 0;
}

/* Byte i of rank q's region. */
static unsigned char region_byte(int q, size_t i)
{
    return (unsigned char)((i * 131) ^ (i >> 9) ^ (unsigned)(q * 59));
}

static unsigned char *region, *inbox, *scratch;
static struct hashi_tl_mem region_mem, inbox_mem;

static int op_done;
static int op_status;
static void done_cb(void *arg, int status)
{
    CHECK(arg == &op_done, "done callback argument not passed through");
    op_status = status;
    op_done = 1;
}

static void wait_done(void)
{
    while (!op_done)
        hashi_transport_wait(poll_once, 1000);
    op_done = 0;
}

static void test_rma(void)
{
    trace("test_rma");
    /* Register a source region (rank-specific pattern) and an inbox; ship the
     * keys in block messages like a device's headers do. */
    region = malloc(REGION);
    inbox = malloc(REGION);
    scratch = malloc(REGION + 64);
    CHECK(region && inbox && scratch, "out of memory");
    for (size_t i = 0; i < REGION; i++)
        region[i] = region_byte(me, i);
    memset(inbox, 0, REGION);
    CHECK(hashi_transport_mem_reg(region, REGION, &region_mem) == 0, "mem_reg region");
    CHECK(hashi_transport_mem_reg(inbox, REGION, &inbox_mem) == 0, "mem_reg inbox");
    struct hashi_tl_rkey k[2];
    hashi_transport_rkey(&region_mem, left, &k[0]);
    hashi_transport_rkey(&inbox_mem, left, &k[1]);
    send_block(left, BLK_RKEY, 0, k, sizeof k);
    while (!have_rkey[right])
        hashi_transport_wait(poll_once, 1000);
    struct hashi_tl_rkey right_region = peer_rkey[right][0], right_inbox = peer_rkey[right][1];

    static const size_t sizes[] = { 1, 7, 8, 63, 64, 100, 464, 1000, 4096, 4097, 65536, 65536 + 5, 262144,
                                    1048576, 1048576 + 3, 3 * 1048576 + 17, REGION - 4096 };
    static const size_t offsets[] = { 0, 1, 13, 4093 };
    /* Staged through the ring (no CMA), every chunk waits for the peer's
     * progress: sizes past a few hundred chunks add time, not coverage. */
    const size_t len_max = hashi_tl(right)->id == HASHI_TL_EMU && !emu.cma_allowed ? 1048576 + 3 : REGION;
    uint64_t round = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        for (size_t oi = 0; oi < sizeof offsets / sizeof *offsets; oi++) {
            size_t len = sizes[si], off = offsets[oi], loff = (oi * 3) % 64;
            if (off + len > REGION || len > len_max)
                continue;
            round++;
            /* PULL from the right neighbour's region. */
            memset(scratch, 0xEE, len + 64);
            int rc = hashi_tl(right)->get(right, scratch + loff, len, NULL, &right_region, off, done_cb, &op_done);
            CHECK(rc == 0, "get %zu at %zu: %d", len, off, rc);
            wait_done();
            CHECK(op_status == 0, "get %zu at %zu completed with %d", len, off, op_status);
            for (size_t i = 0; i < len; i++)
                CHECK(scratch[loff + i] == region_byte(right, off + i),
                      "get %zu bytes at offset %zu from %d: byte %zu is %02x, expected %02x", len, off, right, i,
                      scratch[loff + i], region_byte(right, off + i));
            for (size_t i = 0; i < loff; i++)
                CHECK(scratch[i] == 0xEE, "get wrote before its buffer");
            CHECK(scratch[loff + len] == 0xEE, "get wrote past its buffer");
            /* PUSH my region's bytes into the right neighbour's inbox, with a
             * signal; it checks them and acknowledges, so the inbox is free. */
            struct hashi_tl_signal sig = { OFF_SIG(me), round, 8 };
            rc = hashi_tl(right)->put(right, region + loff, len, &region_mem, &right_inbox, off, &sig, done_cb,
                                      &op_done);
            CHECK(rc == 0, "put %zu at %zu: %d", len, off, rc);
            /* Meanwhile the left neighbour's put lands here. */
            wait_llcm(OFF_SIG(left), round);
            for (size_t i = 0; i < len; i++)
                CHECK(inbox[off + i] == region_byte(left, loff + i),
                      "put %zu bytes at offset %zu from %d: byte %zu is %02x, expected %02x", len, off, left, i,
                      inbox[off + i], region_byte(left, loff + i));
            CHECK(off + len == REGION || inbox[off + len] == 0, "put from %d wrote past its range", left);
            memset(inbox + off, 0, len);
            CHECK(hashi_tl(left)->tiny_write(left, OFF_ACK(me), round, 8) == 0, "ack");
            wait_done();
            CHECK(op_status == 0, "put %zu at %zu completed with %d", len, off, op_status);
            wait_llcm(OFF_ACK(right), round);
        }
    }
    /* Errors: outside the region, a foreign key. */
    CHECK(hashi_tl(right)->get(right, scratch, 4096, NULL, &right_region, REGION - 100, done_cb, &op_done) ==
              -EINVAL, "get past the region accepted");
    CHECK(hashi_tl(right)->put(right, region, 2, NULL, &right_inbox, REGION - 1, NULL, done_cb, &op_done) ==
              -EINVAL, "put past the region accepted");
    if (hashi_tl(right)->id == HASHI_TL_EMU && right != me) {
        /* A key packed for the wrong process (my own) is refused. */
        struct hashi_tl_rkey mine;
        hashi_transport_rkey(&region_mem, me, &mine);
        CHECK(hashi_tl(right)->get(right, scratch, 16, NULL, &mine, 0, done_cb, &op_done) == -EINVAL,
              "get with another process's key accepted");
    }
    /* Zero bytes: completes, the signal still lands. */
    round++;
    struct hashi_tl_signal sig = { OFF_SIG(me), round, 8 };
    CHECK(hashi_tl(right)->put(right, region, 0, NULL, &right_inbox, 0, &sig, done_cb, &op_done) == 0, "put 0");
    wait_done();
    CHECK(op_status == 0, "zero-byte put: %d", op_status);
    wait_llcm(OFF_SIG(left), round);
    fence();
    hashi_transport_mem_dereg(&region_mem);
    hashi_transport_mem_dereg(&inbox_mem);
    free(region);
    free(inbox);
    free(scratch);
}

/* ---- setup ---------------------------------------------------------- */

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
    expect_seq = calloc((size_t)np, sizeof *expect_seq);
    peer_rkey = calloc((size_t)np, sizeof *peer_rkey);
    have_rkey = calloc((size_t)np, sizeof *have_rkey);
    struct hashi_tl_config cfg = {
        .llcm_size = LLCM_SIZE, .block_max = BLOCK_MAX, .on_block = on_block, .on_notify = on_notify,
        .ctx = &expect_seq,
    };
    CHECK(hashi_transport_init(&cfg, err, sizeof err) == 0, "transport init: %s", err);
    CHECK(hashi_wake_create(err, sizeof err) == 0, "%s", err);
    CHECK(hashi_rt_exchange(err, sizeof err) == 0, "%s", err);
    CHECK(hashi_wake_attach(err, sizeof err) == 0, "%s", err);
    CHECK(hashi_transport_connect(err, sizeof err) == 0, "transport connect: %s", err);
    /* Before the fence nobody has written into my LLCM yet. */
    const unsigned char *l = hashi_transport_llcm();
    CHECK(l && (uintptr_t)l % 8 == 0, "LLCM %p", (const void *)l);
    CHECK(hashi_transport_llcm_size() == LLCM_SIZE, "LLCM size %zu", hashi_transport_llcm_size());
    for (size_t i = 0; i < LLCM_SIZE; i += 8)
        CHECK(llcm_load(i) == 0, "LLCM not zeroed at %zu", i);
    fence();
    if (hashi_wake_needs_unlink())
        hashi_wake_unlink();
}

static void teardown(void)
{
    fence();
    hashi_transport_finalize();
    hashi_wake_detach();
    CHECK(count_segment_names() == 0, "emu segment names left in /dev/shm after finalize");
    free(expect_seq);
    free(peer_rkey);
    free(have_rkey);
    hashi_rt_finalize();
}

/* ---- keycheck ------------------------------------------------------- */

static int keycheck(void)
{
    char name[128];
    snprintf(name, sizeof name, "/hashi-%u-keycheck-%d", (unsigned)getuid(), (int)getpid());
    struct emu_seg_hdr *h = hashi_emu_seg_create(name, 8192, 0x1111222233334444ull, err, sizeof err);
    CHECK(h, "create: %s", err);
    __atomic_store_n(&h->magic, EMU_MAGIC, __ATOMIC_RELEASE);
    struct emu_seg_hdr *a = hashi_emu_seg_attach(name, 0x5555666677778888ull, err, sizeof err);
    CHECK(!a, "a segment of another job key was attached");
    CHECK(strstr(err, "1111222233334444") && strstr(err, "5555666677778888"),
          "the refusal does not name both keys: %s", err);
    printf("%s\n", err);
    a = hashi_emu_seg_attach(name, 0x1111222233334444ull, err, sizeof err);
    CHECK(a && a->key == 0x1111222233334444ull, "the right key was refused: %s", err);
    CHECK(shm_unlink(name) == 0, "unlink: %s", strerror(errno));
    munmap(a, 8192);
    munmap(h, 8192);
    printf("keycheck ok\n");
    return 0;
}

/* ---- bench ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}


/* One-way time (round trip / 2) of `batches` batches of 100 ping-pongs by
 * tiny write (kind 0) or 8-byte-payload block (kind 1); best and median batch
 * (batches, not one long loop, so a preemption spoils one sample only). */
static void bench_pingpong(int kind, double *best, double *median)
{
    enum { BATCH = 100, BATCHES = 300 };
    static double t[BATCHES];
    static uint64_t v;
    fence();
    bench_pong_block = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now();
        for (int i = 0; i < BATCH; i++) {
            v++;
            if (kind == 0) {
                if (me == 0) {
                    hashi_tl(1)->tiny_write(1, 0, v, 8);
                    while (llcm_load(8) != v)
                        hashi_transport_progress();
                } else {
                    while (llcm_load(0) != v)
                        hashi_transport_progress();
                    hashi_tl(0)->tiny_write(0, 8, v, 8);
                }
            } else {
                struct blk_hdr x = { BLK_PING, 0, v };
                int mine = bench_pong_block;
                if (me == 0) {
                    while (hashi_tl_block_send(1, &x, sizeof x, &v, 0) == -EAGAIN)
                        hashi_transport_progress();
                    while (bench_pong_block == mine)
                        hashi_transport_progress();
                } else {
                    while (bench_pong_block == mine)
                        hashi_transport_progress();
                    while (hashi_tl_block_send(0, &x, sizeof x, &v, 0) == -EAGAIN)
                        hashi_transport_progress();
                }
            }
        }
        t[b] = (now() - t0) / BATCH / 2 * 1e9;
    }
    qsort(t, BATCHES, sizeof(double), cmp_double);
    *best = t[0];
    *median = t[BATCHES / 2];
}

static void bench(void)
{
    CHECK(np == 2, "bench runs on 2 ranks");
    double best, med;
    bench_pingpong(0, &best, &med);
    if (me == 0)
        printf("tiny write one-way: best %.0f ns, median %.0f ns\n", best, med);
    bench_pingpong(1, &best, &med);
    if (me == 0)
        printf("16-byte block one-way: best %.0f ns, median %.0f ns\n", best, med);
    /* 3. PUSH bandwidth into the peer's registered buffer, by size. */
    size_t maxlen = 16u << 20;
    unsigned char *src = aligned_alloc(4096, maxlen), *dst = aligned_alloc(4096, maxlen);
    memset(src, 1, maxlen);
    memset(dst, 2, maxlen);
    struct hashi_tl_mem mem;
    CHECK(hashi_transport_mem_reg(dst, maxlen, &mem) == 0, "reg");
    struct hashi_tl_rkey k;
    hashi_transport_rkey(&mem, 1 - me, &k);
    send_block(1 - me, BLK_RKEY, 0, &k, sizeof k);
    while (!have_rkey[1 - me])
        hashi_transport_wait(poll_once, 1000);
    fence();
    if (me == 0)
        printf("%10s %10s %10s\n", "bytes", "best GB/s", "median");
    uint64_t round = 0;
    for (size_t len = 64; len <= maxlen; len *= 4) {
        int n = len < 65536 ? 2000 : (int)((64u << 20) / len) + 4;
        double bw[5];
        for (int rep = 0; rep < 5; rep++) {
            round++;
            double t0 = now();
            if (me == 0) {
                for (int i = 0; i < n; i++) {
                    CHECK(hashi_tl(1)->put(1, src, len, NULL, &peer_rkey[1][0], 0, NULL, done_cb, &op_done) == 0,
                          "put");
                    wait_done();
                }
                hashi_tl(1)->tiny_write(1, 16, round, 8);
            } else {
                wait_llcm(16, round);   /* serves staged puts meanwhile */
            }
            bw[rep] = (double)len * n / (now() - t0) / 1e9;
            fence();
        }
        qsort(bw, 5, sizeof(double), cmp_double);
        if (me == 0)
            printf("%10zu %10.2f %10.2f\n", len, bw[4], bw[2]);
    }
    hashi_transport_mem_dereg(&mem);
    free(src);
    free(dst);
}

/* The ring cases run when every peer is on emu and the ring is small
 * enough to wrap often (HASHI_EMU_RING_SIZE of at most 256k). */
static int ring_testable(void)
{
    for (int r = 0; r < np; r++)
        if (hashi_tl(r)->id != HASHI_TL_EMU)
            return 0;
    return emu.ring_units <= 4096;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    if (!strcmp(what, "keycheck"))
        return keycheck();
    int is_bench = !strcmp(what, "bench");
    setup();
    if (count_segment_names() != 0) {
        /* Names go once every local rank attached: wait for the last attacher. */
        fence();
        CHECK(count_segment_names() == 0, "emu segment names left in /dev/shm after every rank attached");
    }
    if (is_bench) {
        bench();
    } else {
        test_tiny_sizes();
        fence();
        test_tiny_atomic();
        fence();
        test_fetch_add();
        fence();
        if (ring_testable())
            test_ring();
        test_blocks();
        test_rma();
    }
    teardown();
    if (!is_bench)
        printf("rank %d of %d ok\n", me, np);
    return 0;
}
