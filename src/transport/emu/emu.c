/*
 * The emulated NIC, part 1: segments, block rings, tiny writes,
 * notifications, progress. Ranks on one node each own a shared segment
 * (emu.h); a peer's "NIC operations" are plain stores into it.
 *
 * Rings: one per (sender, receiver) pair, in the receiver's segment, a byte
 * ring of 64-byte units holding variable-length records (emu.h, struct
 * emu_rec): an 8-byte message takes one line, a 64 KiB block 1026 units, so
 * small messages pack and large ones go in one copy each way.
 *
 * Lifecycle: init (before the modex) creates and pre-faults this rank's
 * segment; connect (after it) maps every local peer's segment, checking the
 * job key. Each attacher counts itself in the segment header and the last
 * one unlinks the name, so once every local rank is connected no name is
 * left and nothing outlives the job.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"
#include "transport/emu/emu.h"

struct emu_state emu;

/* Control messages waiting for ring space (sent from progress, in order). */
struct emu_deferred {
    struct emu_deferred *next;
    int lpeer;
    enum emu_kind kind;
    size_t len;
    unsigned char msg[sizeof(struct emu_rma_msg)];
};
static struct emu_deferred *deferred_head, **deferred_tail = &deferred_head;

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* ---- segments ---------------------------------------------------------- */

static void *map_segment(int fd, size_t size)
{
    /* MAP_POPULATE pre-faults: the first message must not pay for page faults. */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

struct emu_seg_hdr *hashi_emu_seg_create(const char *name, size_t size, uint64_t key, char *err, size_t errlen)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        snprintf(err, errlen, "emu transport: creating segment /dev/shm%s (%zu bytes) failed: %s%s", name, size,
                 strerror(errno), errno == ENOSPC ? " (is /dev/shm full?)" : "");
        if (fd >= 0) {
            close(fd);
            shm_unlink(name);
        }
        return NULL;
    }
    struct emu_seg_hdr *h = map_segment(fd, size);
    close(fd);
    if (!h) {
        snprintf(err, errlen, "emu transport: mapping segment /dev/shm%s failed: %s", name, strerror(errno));
        shm_unlink(name);
        return NULL;
    }
    h->key = key;
    h->seg_size = size;
    h->self_addr = (uint64_t)(uintptr_t)h;
    h->pid = (uint32_t)getpid();
    return h;   /* the caller fills the layout, then publishes magic */
}

struct emu_seg_hdr *hashi_emu_seg_attach(const char *name, uint64_t key, char *err, size_t errlen)
{
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "emu transport: opening segment /dev/shm%s failed: %s", name, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) ||
        (size_t)st.st_size < sizeof(struct emu_seg_hdr)) {
        snprintf(err, errlen, "emu transport: segment /dev/shm%s is not a private segment of this user "
                 "(uid %u, mode %03o, %lld bytes): refusing to attach", name, (unsigned)st.st_uid,
                 (unsigned)(st.st_mode & 0777), (long long)st.st_size);
        close(fd);
        return NULL;
    }
    struct emu_seg_hdr *h = map_segment(fd, (size_t)st.st_size);
    close(fd);
    if (!h) {
        snprintf(err, errlen, "emu transport: mapping segment /dev/shm%s failed: %s", name, strerror(errno));
        return NULL;
    }
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic != EMU_MAGIC || h->key != key || h->seg_size != (uint64_t)st.st_size) {
        if (magic == EMU_MAGIC && h->key != key)
            snprintf(err, errlen, "emu transport: segment /dev/shm%s belongs to job key %016llx, this job's key "
                     "is %016llx: refusing to attach another job's segment", name, (unsigned long long)h->key,
                     (unsigned long long)key);
        else
            snprintf(err, errlen, "emu transport: /dev/shm%s is not a complete emu segment: refusing to attach",
                     name);
        munmap(h, (size_t)st.st_size);
        return NULL;
    }
    return h;
}

static void segment_name(int world, char *buf, size_t len)
{
    if (hashi_job.job_dir[0]) {
        /* mpirun's reaper removes /dev/shm/<job dir basename>-* after any exit. */
        char dir[sizeof hashi_job.job_dir];
        snprintf(dir, sizeof dir, "%s", hashi_job.job_dir);
        snprintf(buf, len, "/%s-emu-%d", basename(dir), world);
    } else {
        snprintf(buf, len, "/hashi-%u-%016llx-emu-%d", (unsigned)getuid(), (unsigned long long)hashi_job.key,
                 world);
    }
}

/* ---- lifecycle -------------------------------------------------------- */

/* Up to EMU_RING_FEW_RANKS local ranks every ring takes EMU_RING_FEW bytes; above,
 * the node's rings share EMU_RING_NODE_BYTES (nlocal^2 rings), never fewer
 * than EMU_RING_MIN_RECORDS of the largest record nor below EMU_RING_FLOOR. */
#define EMU_RING_FEW_RANKS 4
#define EMU_RING_FEW ((size_t)1 << 20)
#define EMU_RING_NODE_BYTES ((size_t)16 << 20)
#define EMU_RING_FLOOR ((size_t)16 << 10)
#define EMU_RING_MIN_RECORDS 4

static size_t pow2_ceil(size_t v)
{
    size_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* Bytes of each inbound ring when HASHI_EMU_RING_SIZE is 0. */
static size_t ring_bytes_auto(int nlocal, size_t rec_max)
{
    size_t bytes = EMU_RING_FEW;
    if (nlocal > EMU_RING_FEW_RANKS) {
        bytes = pow2_ceil(EMU_RING_NODE_BYTES / ((size_t)nlocal * (size_t)nlocal) + 1) / 2;   /* round down */
        if (bytes < EMU_RING_FLOOR)
            bytes = EMU_RING_FLOOR;
    }
    size_t least = pow2_ceil(EMU_RING_MIN_RECORDS * rec_max);
    if (bytes < least)
        bytes = least;
    if (bytes > (size_t)EMU_RING_MAX_UNITS * EMU_UNIT)
        bytes = (size_t)EMU_RING_MAX_UNITS * EMU_UNIT;
    return bytes;
}

static int emu_init(struct hashi_tl_config *cfg, char *err, size_t errlen)
{
    memset(&emu, 0, sizeof emu);
    emu.cfg = *cfg;
    int n = hashi_job.size;
    emu.local_of = calloc((size_t)n, sizeof(int));
    if (!emu.local_of) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0; r < n; r++) {
        int local = r == hashi_job.rank || hashi_job.peer_is_local[r];
        emu.local_of[r] = local ? emu.nlocal++ : -1;
    }
    emu.me = emu.local_of[hashi_job.rank];
    emu.peer = calloc((size_t)emu.nlocal, sizeof *emu.peer);
    emu.in = calloc((size_t)emu.nlocal, sizeof *emu.in);
    if (!emu.peer || !emu.in) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0; r < n; r++)
        if (emu.local_of[r] >= 0)
            emu.peer[emu.local_of[r]].world = r;

    size_t chunk = (size_t)hashi_param_int(HASHI_P_EMU_PIPE_CHUNK);
    if (chunk < 4096 || chunk > ((size_t)64 << 20)) {
        snprintf(err, errlen, "emu transport: HASHI_EMU_PIPE_CHUNK must be 4k .. 64m (is %zu)", chunk);
        return -1;
    }
    chunk = round_up(chunk, EMU_LINE);
    /* A record never wraps, so the largest one must fit whichever side of
     * an empty ring's end the head stands on: at least two of them. */
    size_t rec_max = EMU_REC_HDR + cfg->block_max;
    size_t ring_bytes = (size_t)hashi_param_int(HASHI_P_EMU_RING_SIZE);
    size_t ring_least = pow2_ceil(2 * emu_rec_units(cfg->block_max) * EMU_UNIT);
    if (ring_bytes == 0) {
        ring_bytes = ring_bytes_auto(emu.nlocal, rec_max);
    } else if ((ring_bytes & (ring_bytes - 1)) || ring_bytes < ring_least ||
               ring_bytes > (size_t)EMU_RING_MAX_UNITS * EMU_UNIT) {
        snprintf(err, errlen, "emu transport: HASHI_EMU_RING_SIZE=%zu must be 0 (automatic) or a power of two "
                 "from %zu (two blocks of %zu bytes) to %zu", ring_bytes, ring_least, cfg->block_max,
                 (size_t)EMU_RING_MAX_UNITS * EMU_UNIT);
        return -1;
    }
    if (ring_bytes < ring_least) {
        snprintf(err, errlen, "emu transport: blocks of %zu bytes do not fit a ring of at most %zu bytes",
                 cfg->block_max, (size_t)EMU_RING_MAX_UNITS * EMU_UNIT);
        return -1;
    }
    emu.ring_units = ring_bytes / EMU_UNIT;
    size_t llcm_off = round_up(sizeof(struct emu_seg_hdr), 4096);
    size_t ring_off = llcm_off + round_up(cfg->llcm_size, 4096);
    size_t ring_stride = sizeof(struct emu_ring_ctrl) + ring_bytes;
    size_t win_off = round_up(ring_off + (size_t)emu.nlocal * ring_stride, 4096);
    size_t stage_off = win_off + 2 * chunk;
    size_t stage_size = emu.nlocal > 1 ? round_up((size_t)hashi_param_int(HASHI_P_EMU_STAGE_SIZE), 4096) : 0;
    emu.seg_size = stage_off + stage_size;

    segment_name(hashi_job.rank, emu.name, sizeof emu.name);
    struct emu_seg_hdr *h = hashi_emu_seg_create(emu.name, emu.seg_size, hashi_job.key, err, errlen);
    if (!h)
        return -1;
    emu.named = 1;
    h->nlocal = (uint32_t)emu.nlocal;
    h->ring_units = (uint32_t)emu.ring_units;
    h->rec_max = (uint32_t)rec_max;
    h->llcm_off = llcm_off;
    h->llcm_size = cfg->llcm_size;
    h->ring_off = ring_off;
    h->ring_stride = ring_stride;
    h->win_off = win_off;
    h->win_chunk = chunk;
    h->stage_off = stage_off;
    h->stage_size = stage_size;
    __atomic_store_n(&h->magic, EMU_MAGIC, __ATOMIC_RELEASE);
    emu.seg = h;
    for (int i = 0; i < emu.nlocal; i++) {
        emu.in[i].base = emu_ring_units(h, i);
        emu.in[i].next = emu_unit(emu.in[i].base, 0);
        emu.in[i].want = 1;
        emu.in[i].tail = &emu_ring(h, i)->tail;
    }
    cfg->llcm = (unsigned char *)h + llcm_off;
    emu.cfg.llcm = cfg->llcm;
    if (emu.nlocal == 1) {      /* nobody else will attach */
        shm_unlink(emu.name);
        emu.named = 0;
    }
    return hashi_emu_rma_init(err, errlen);
}

static int emu_connect(const unsigned char *served, char *err, size_t errlen)
{
    (void)served;   /* emu serves exactly the local ranks (transport.c agrees) */
    for (int i = 0; i < emu.nlocal; i++) {
        struct emu_peer *p = &emu.peer[i];
        if (i == emu.me) {
            p->hdr = emu.seg;
        } else {
            char name[256];
            segment_name(p->world, name, sizeof name);
            p->hdr = hashi_emu_seg_attach(name, hashi_job.key, err, errlen);
            if (!p->hdr)
                return -1;
            if (p->hdr->nlocal != (uint32_t)emu.nlocal || p->hdr->ring_units != emu.seg->ring_units ||
                p->hdr->rec_max != emu.seg->rec_max || p->hdr->llcm_size != emu.seg->llcm_size ||
                p->hdr->stage_size != emu.seg->stage_size) {
                snprintf(err, errlen, "emu transport: rank %d's segment has another layout (%u local ranks, "
                         "LLCM %llu, ring of %u units, records up to %u bytes, stage %llu; here %d, %llu, %u, %u, "
                         "%llu): mixed configurations?", p->world, p->hdr->nlocal,
                         (unsigned long long)p->hdr->llcm_size, p->hdr->ring_units, p->hdr->rec_max,
                         (unsigned long long)p->hdr->stage_size, emu.nlocal, (unsigned long long)emu.seg->llcm_size,
                         emu.seg->ring_units, emu.seg->rec_max, (unsigned long long)emu.seg->stage_size);
                return -1;
            }
            if (atomic_fetch_add(&p->hdr->attached, 1) + 1 == (uint32_t)emu.nlocal - 1)
                shm_unlink(name);   /* the last to attach removes the name */
        }
        p->base = (unsigned char *)p->hdr;
        p->pid = (pid_t)p->hdr->pid;
        p->ring = emu_ring_units(p->hdr, emu.me);
        p->ring_tail = &emu_ring(p->hdr, emu.me)->tail;
        p->dirty = calloc(emu.ring_units / 64 + 1, sizeof *p->dirty);
        if (!p->dirty) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    hashi_emu_rma_probe_cma();
    return 0;
}

static void emu_finalize(void)
{
    hashi_emu_rma_finalize();
    while (deferred_head) {
        struct emu_deferred *d = deferred_head;
        deferred_head = d->next;
        free(d);
    }
    deferred_tail = &deferred_head;
    for (int i = 0; emu.peer && i < emu.nlocal; i++) {
        if (i != emu.me && emu.peer[i].hdr)
            munmap(emu.peer[i].hdr, emu.peer[i].hdr->seg_size);
        free(emu.peer[i].dirty);
    }
    if (emu.named)      /* a peer never attached (failed start): remove the name ourselves */
        shm_unlink(emu.name);
    if (emu.seg)
        munmap(emu.seg, emu.seg_size);
    free(emu.peer);
    free(emu.in);
    free(emu.local_of);
    memset(&emu, 0, sizeof emu);
}

/* ---- rings ------------------------------------------------------------ */

/*
 * Reserve a record of len data bytes in my ring at local peer lp: where its
 * header goes, or NULL if the ring has no room now. When the record would
 * cross the ring's end it starts at unit 0 and a skip record covers the rest
 * (room for both must be free); ring_publish writes the skip.
 */
static inline struct emu_rec *ring_reserve(int lp, size_t len)
{
    struct emu_peer *p = &emu.peer[lp];
    uint64_t n = emu.ring_units, units = emu_rec_units(len), head = p->head;
    uint64_t room = n - (head & (n - 1));   /* units before the ring's end */
    uint64_t skip = units > room ? room : 0;
    if (head + skip + units - p->cached_tail > n) {
        /* Re-read the consumer's position only when the ring looks full. */
        p->cached_tail = atomic_load_explicit(p->ring_tail, memory_order_acquire);
        if (head + skip + units - p->cached_tail > n)
            return NULL;
    }
    p->skip = skip;
    p->open_units = units;
    p->open = emu_unit(p->ring, head + skip);
    return p->open;
}

/* Mark units [from, to) of a ring (indices, to <= ring_units) as holding payload. */
static void dirty_mark(uint64_t *bits, uint64_t from, uint64_t to)
{
    for (uint64_t u = from; u < to;) {
        uint64_t w = u / 64, b = u % 64, nb = to - u < 64 - b ? to - u : 64 - b;
        bits[w] |= (nb == 64 ? ~0ull : ((1ull << nb) - 1)) << b;
        u += nb;
    }
}

static inline void rec_header(struct emu_rec *r, uint64_t seq, size_t len, enum emu_kind kind, uint64_t units)
{
    r->len = (uint32_t)len;
    r->kind = (uint16_t)kind;
    r->units = (uint16_t)units;
    /* The release store is the kick: the consumer sees the record only complete. */
    atomic_store_explicit(&r->seq, seq, memory_order_release);
}

/* ring_publish for a record that spans or reserved several units, skips
 * the ring's end, or is followed by a dirty unit. */
__attribute__((noinline)) static void ring_publish_long(struct emu_peer *p, size_t len, enum emu_kind kind)
{
    uint64_t mask = emu.ring_units - 1;
    uint64_t start = p->head + p->skip, units = emu_rec_units(len), end = start + units;
    uint64_t s = start & mask, e = end & mask;
    dirty_mark(p->dirty, s + 1, s + p->open_units);
    if ((p->dirty[e / 64] >> (e % 64)) & 1) {
        atomic_store_explicit(&emu_unit(p->ring, end)->seq, 0, memory_order_relaxed);
        p->dirty[e / 64] &= ~(1ull << (e % 64));
    }
    rec_header(p->open, start + 1, len, kind, units);
    if (p->skip) {
        rec_header(emu_unit(p->ring, p->head), p->head + 1, 0, EMU_SKIP, p->skip);
        p->skip = 0;
    }
    p->head = end;
}

/*
 * Complete the reserved record with len data bytes (len may be smaller
 * than reserved, never larger).
 *
 * The consumer reads the first word of the unit at its tail, and its tail
 * moves to the unit right after this record once it is delivered. That word
 * holds 0, a header (of this lap, or older: its seq cannot match) or, if the
 * unit was ever inside a record or given back by a shrinking kick, payload:
 * any value, even end + 1. The dirty bits say which; a dirty word is zeroed
 * here, before the release store that publishes the record, and only the
 * next header's own release store changes it after that. (Zeroing it
 * always cost a second line's ownership per message in a ping-pong, the
 * consumer holding the line it polls next: 8-byte latency 0.31 -> 0.47 us.)
 * If the record fills the ring, the unit after it is the header of the
 * record at the consumer's tail: never dirty. Units inside records are never
 * read as headers, and the consumer writes nothing into the ring. Unit 0
 * always starts a record (records never wrap); the wrapped record goes
 * before its skip record, so the pass that takes the skip delivers it. The
 * record's own first word is never dirty: it is the end of the previous
 * record, cleaned then, or unit 0.
 */
static inline void ring_publish(int lp, size_t len, enum emu_kind kind)
{
    struct emu_peer *p = &emu.peer[lp];
    uint64_t end = p->head + 1, e = end & (emu.ring_units - 1);
    /* One unit reserved (so len fits it), no skip, a clean unit after it. */
    if (__builtin_expect((p->open_units > 1) | (p->skip != 0) | ((p->dirty[e / 64] >> (e % 64)) & 1), 0)) {
        ring_publish_long(p, len, kind);
    } else {
        rec_header(p->open, end, len, kind, 1);
        p->head = end;
    }
    hashi_wake_peer(p->world);
}

static void *emu_block_alloc(int peer, size_t len, int *rc)
{
    if (len > emu.cfg.block_max) {
        *rc = -EMSGSIZE;
        return NULL;
    }
    struct emu_rec *r = ring_reserve(emu.local_of[peer], len);
    if (!r) {
        *rc = -EAGAIN;
        return NULL;
    }
    return r->data;
}

static void emu_block_kick(int peer, size_t len)
{
    ring_publish(emu.local_of[peer], len, EMU_BLOCK);
}

static int emu_notify(int peer, uint64_t value)
{
    return hashi_emu_send_ctrl(emu.local_of[peer], EMU_NOTIFY, &value, sizeof value);
}

int hashi_emu_send_ctrl(int lpeer, enum emu_kind kind, const void *msg, size_t len)
{
    struct emu_rec *r = ring_reserve(lpeer, len);
    if (!r)
        return -EAGAIN;
    memcpy(r->data, msg, len);
    ring_publish(lpeer, len, kind);
    return 0;
}

void hashi_emu_send_ctrl_later(int lpeer, enum emu_kind kind, const void *msg, size_t len)
{
    if (!deferred_head && hashi_emu_send_ctrl(lpeer, kind, msg, len) == 0)
        return;
    struct emu_deferred *d = malloc(sizeof *d);
    if (!d) {
        hashi_rt_abort(1, "emu transport: out of memory queueing a control message");
    }
    d->next = NULL;
    d->lpeer = lpeer;
    d->kind = kind;
    d->len = len;
    memcpy(d->msg, msg, len);
    *deferred_tail = d;
    deferred_tail = &d->next;
}

__attribute__((noinline)) static int flush_deferred(void)
{
    int n = 0;
    while (deferred_head &&
           hashi_emu_send_ctrl(deferred_head->lpeer, deferred_head->kind, deferred_head->msg,
                               deferred_head->len) == 0) {
        struct emu_deferred *d = deferred_head;
        deferred_head = d->next;
        if (!deferred_head)
            deferred_tail = &deferred_head;
        free(d);
        n++;
    }
    return n;
}

/* Deliver what arrived in inbound ring i (the record at its tail is complete). */
__attribute__((noinline)) static int drain_ring(int i)
{
    int drained = 0;
    struct emu_inbound *in = &emu.in[i];
    for (;;) {
        struct emu_rec *r = in->next;
        if (atomic_load_explicit(&r->seq, memory_order_acquire) != in->want)
            break;
        uint64_t t = in->want - 1;
        int src = emu.peer[i].world;
        enum emu_kind kind = (enum emu_kind)r->kind;
        uint64_t units = r->units;
        switch (kind) {
        case EMU_BLOCK:
            emu.cfg.on_block(emu.cfg.ctx, src, r->data, r->len);
            break;
        case EMU_NOTIFY: {
            uint64_t v;
            memcpy(&v, r->data, sizeof v);
            emu.cfg.on_notify(emu.cfg.ctx, src, v);
            break;
        }
        case EMU_SKIP:
            break;
        default: {
            struct emu_rma_msg m;
            memcpy(&m, r->data, sizeof m);
            hashi_emu_rma_message(i, kind, &m);
            break;
        }
        }
        t += units;
        in->want = t + 1;
        in->next = emu_unit(in->base, t);
        atomic_store_explicit(in->tail, t, memory_order_release);
        drained++;
    }
    hashi_wake_peer(emu.peer[i].world);   /* a sender may sleep waiting for room */
    return drained;
}

static int emu_pending_from(int peer)
{
    const struct emu_inbound *in = &emu.in[emu.local_of[peer]];
    return atomic_load_explicit(&in->next->seq, memory_order_acquire) == in->want;
}

/* Deliver what arrived in my inbound rings: a poll is one load per ring. */
static inline int poll_rings(void)
{
    int n = 0;
    const struct emu_inbound *in = emu.in;
    for (int i = 0, nlocal = emu.nlocal; i < nlocal; i++)
        if (atomic_load_explicit(&in[i].next->seq, memory_order_acquire) == in[i].want)
            n += drain_ring(i);
    return n;
}

/* The rings last: a pass that delivers a message returns right after it,
 * so a receive completed by it is seen without the other checks between
 * (in a ping-pong they stood between the arrival and the reply). */
static int emu_progress(void)
{
    int n = hashi_emu_rma_progress();
    if (deferred_head)
        n += flush_deferred();
    return n + poll_rings();
}

/* ---- tiny writes ------------------------------------------------------ */

void hashi_emu_store(struct emu_seg_hdr *h, uint64_t offset, uint64_t value, unsigned size)
{
    void *p = (unsigned char *)h + h->llcm_off + offset;
    switch (size) {
    case 1: __atomic_store_n((uint8_t *)p, (uint8_t)value, __ATOMIC_RELEASE); break;
    case 2: __atomic_store_n((uint16_t *)p, (uint16_t)value, __ATOMIC_RELEASE); break;
    case 4: __atomic_store_n((uint32_t *)p, (uint32_t)value, __ATOMIC_RELEASE); break;
    default: __atomic_store_n((uint64_t *)p, value, __ATOMIC_RELEASE); break;
    }
}

static int emu_tiny_write(int peer, uint64_t offset, uint64_t value, unsigned size)
{
    if ((size != 1 && size != 2 && size != 4 && size != 8) || offset % size ||
        offset + size > emu.cfg.llcm_size)
        return -EINVAL;
    struct emu_peer *p = &emu.peer[emu.local_of[peer]];
    hashi_emu_store(p->hdr, offset, value, size);
    hashi_wake_peer(p->world);
    return 0;
}

/* The peer reads these only after the flag tiny_write that follows (its
 * release store orders them before it). */
static int emu_llcm_write(int peer, uint64_t offset, const void *data, size_t len)
{
    if (offset > emu.cfg.llcm_size || len > emu.cfg.llcm_size - offset)
        return -EINVAL;
    struct emu_peer *p = &emu.peer[emu.local_of[peer]];
    memcpy((unsigned char *)p->hdr + p->hdr->llcm_off + offset, data, len);
    return 0;
}

static int emu_llcm_fetch_add(int peer, uint64_t offset, uint64_t add, uint64_t *old)
{
    if (offset % 8 || offset > emu.cfg.llcm_size - 8)
        return -EINVAL;
    struct emu_peer *p = &emu.peer[emu.local_of[peer]];
    *old = __atomic_fetch_add((uint64_t *)(void *)((unsigned char *)p->hdr + p->hdr->llcm_off + offset), add,
                              __ATOMIC_ACQ_REL);
    return 0;
}

static int emu_llcm_cmpxchg(int peer, uint64_t offset, uint64_t expected, uint64_t desired, uint64_t *old)
{
    if (offset % 8 || offset > emu.cfg.llcm_size - 8)
        return -EINVAL;
    struct emu_peer *p = &emu.peer[emu.local_of[peer]];
    uint64_t e = expected;
    __atomic_compare_exchange_n((uint64_t *)(void *)((unsigned char *)p->hdr + p->hdr->llcm_off + offset), &e, desired,
                                0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    *old = e;
    return 0;
}

static void *emu_stage(int peer, size_t *size)
{
    const struct emu_peer *p = &emu.peer[emu.local_of[peer]];
    *size = p->hdr->stage_size;
    return *size ? p->base + p->hdr->stage_off : NULL;
}

const struct hashi_tl_ops hashi_tl_emu_ops = {
    .name = "emu",
    .id = HASHI_TL_EMU,
    .max_rma = (size_t)1 << 62,
    .init = emu_init,
    .connect = emu_connect,
    .finalize = emu_finalize,
    .progress = emu_progress,
    .tiny_write = emu_tiny_write,
    .llcm_write = emu_llcm_write,
    .llcm_fetch_add = emu_llcm_fetch_add,
    .llcm_cmpxchg = emu_llcm_cmpxchg,
    .stage = emu_stage,
    .block_alloc = emu_block_alloc,
    .block_kick = emu_block_kick,
    .notify = emu_notify,
    .pending_from = emu_pending_from,
    .put = hashi_emu_put,
    .get = hashi_emu_get,
    .putv = hashi_emu_putv,
    .mem_reg = hashi_emu_mem_reg,
    .mem_dereg = hashi_emu_mem_dereg,
    .rkey_pack = hashi_emu_rkey_pack,
};
