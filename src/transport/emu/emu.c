/*
 * The emulated NIC, part 1: segments, block rings, tiny writes,
 * notifications, progress. Ranks on one node each own a shared segment
 * (emu.h); a peer's "NIC operations" are plain stores into it.
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
    emu.ring_tail = calloc((size_t)emu.nlocal, sizeof *emu.ring_tail);
    emu.ring_next = calloc((size_t)emu.nlocal, sizeof *emu.ring_next);
    if (!emu.peer || !emu.ring_tail || !emu.ring_next) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0; r < n; r++)
        if (emu.local_of[r] >= 0)
            emu.peer[emu.local_of[r]].world = r;

    int64_t slots = hashi_param_int(HASHI_P_EMU_RING_SLOTS);
    size_t chunk = (size_t)hashi_param_int(HASHI_P_EMU_PIPE_CHUNK);
    if (slots < 2 || slots > 65536 || (slots & (slots - 1)) || chunk < 4096 || chunk > ((size_t)64 << 20)) {
        snprintf(err, errlen, "emu transport: HASHI_EMU_RING_SLOTS must be a power of two 2 .. 65536 (is %lld) and "
                 "HASHI_EMU_PIPE_CHUNK 4k .. 64m (is %zu)", (long long)slots, chunk);
        return -1;
    }
    chunk = round_up(chunk, EMU_LINE);
    size_t slot_size = round_up(EMU_SLOT_HDR + cfg->block_max, EMU_LINE);
    size_t llcm_off = round_up(sizeof(struct emu_seg_hdr), 4096);
    size_t ring_off = llcm_off + round_up(cfg->llcm_size, 4096);
    size_t ring_stride = sizeof(struct emu_ring_ctrl) + (size_t)slots * slot_size;
    size_t win_off = round_up(ring_off + (size_t)emu.nlocal * ring_stride, 4096);
    emu.seg_size = win_off + 2 * chunk;

    segment_name(hashi_job.rank, emu.name, sizeof emu.name);
    struct emu_seg_hdr *h = hashi_emu_seg_create(emu.name, emu.seg_size, hashi_job.key, err, errlen);
    if (!h)
        return -1;
    emu.named = 1;
    h->nlocal = (uint32_t)emu.nlocal;
    h->slots = (uint32_t)slots;
    h->slot_size = (uint32_t)slot_size;
    h->llcm_off = llcm_off;
    h->llcm_size = cfg->llcm_size;
    h->ring_off = ring_off;
    h->ring_stride = ring_stride;
    h->win_off = win_off;
    h->win_chunk = chunk;
    __atomic_store_n(&h->magic, EMU_MAGIC, __ATOMIC_RELEASE);
    emu.seg = h;
    for (int i = 0; i < emu.nlocal; i++)
        emu.ring_next[i] = emu_slot_at(h, i, 0);
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
            if (p->hdr->nlocal != (uint32_t)emu.nlocal || p->hdr->slot_size != emu.seg->slot_size ||
                p->hdr->llcm_size != emu.seg->llcm_size) {
                snprintf(err, errlen, "emu transport: rank %d's segment has another layout (%u local ranks, "
                         "LLCM %llu, slot %u; here %d, %llu, %u): mixed configurations?", p->world,
                         p->hdr->nlocal, (unsigned long long)p->hdr->llcm_size, p->hdr->slot_size, emu.nlocal,
                         (unsigned long long)emu.seg->llcm_size, emu.seg->slot_size);
                return -1;
            }
            if (atomic_fetch_add(&p->hdr->attached, 1) + 1 == (uint32_t)emu.nlocal - 1)
                shm_unlink(name);   /* the last to attach removes the name */
        }
        p->base = (unsigned char *)p->hdr;
        p->pid = (pid_t)p->hdr->pid;
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
    for (int i = 0; emu.peer && i < emu.nlocal; i++)
        if (i != emu.me && emu.peer[i].hdr)
            munmap(emu.peer[i].hdr, emu.peer[i].hdr->seg_size);
    if (emu.named)      /* a peer never attached (failed start): remove the name ourselves */
        shm_unlink(emu.name);
    if (emu.seg)
        munmap(emu.seg, emu.seg_size);
    free(emu.peer);
    free(emu.ring_tail);
    free(emu.ring_next);
    free(emu.local_of);
    memset(&emu, 0, sizeof emu);
}

/* ---- rings ------------------------------------------------------------ */

/* The next free slot in my ring at local peer lp, or NULL if it is full. */
static inline struct emu_slot *ring_reserve(int lp)
{
    struct emu_peer *p = &emu.peer[lp];
    uint32_t slots = p->hdr->slots;
    if (p->head - p->cached_tail >= slots) {
        /* Re-read the consumer's position only when the ring looks full. */
        p->cached_tail = atomic_load_explicit(&emu_ring(p->hdr, emu.me)->tail, memory_order_acquire);
        if (p->head - p->cached_tail >= slots)
            return NULL;
    }
    return emu_slot_at(p->hdr, emu.me, p->head);
}

static void ring_publish(int lp, struct emu_slot *s, size_t len, enum emu_kind kind)
{
    struct emu_peer *p = &emu.peer[lp];
    s->len = (uint32_t)len;
    s->kind = kind;
    /* The release store is the kick: the consumer sees the slot only complete. */
    atomic_store_explicit(&s->seq, ++p->head, memory_order_release);
    hashi_wake_peer(p->world);
}

static void *emu_block_alloc(int peer, size_t len, int *rc)
{
    if (len > emu.cfg.block_max) {
        *rc = -EMSGSIZE;
        return NULL;
    }
    struct emu_slot *s = ring_reserve(emu.local_of[peer]);
    if (!s) {
        *rc = -EAGAIN;
        return NULL;
    }
    return s->data;
}

static void emu_block_kick(int peer, size_t len)
{
    int lp = emu.local_of[peer];
    struct emu_peer *p = &emu.peer[lp];
    ring_publish(lp, emu_slot_at(p->hdr, emu.me, p->head), len, EMU_BLOCK);
}

static int emu_notify(int peer, uint64_t value)
{
    int lp = emu.local_of[peer];
    struct emu_slot *s = ring_reserve(lp);
    if (!s)
        return -EAGAIN;
    memcpy(s->data, &value, sizeof value);
    ring_publish(lp, s, sizeof value, EMU_NOTIFY);
    return 0;
}

int hashi_emu_send_ctrl(int lpeer, enum emu_kind kind, const void *msg, size_t len)
{
    struct emu_slot *s = ring_reserve(lpeer);
    if (!s)
        return -EAGAIN;
    memcpy(s->data, msg, len);
    ring_publish(lpeer, s, len, kind);
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

/* Deliver what arrived in inbound ring i (its next slot is complete). */
__attribute__((noinline)) static int drain_ring(int i)
{
    int drained = 0;
    for (;;) {
        uint64_t t = emu.ring_tail[i];
        struct emu_slot *s = emu.ring_next[i];
        if (atomic_load_explicit(&s->seq, memory_order_acquire) != t + 1)
            break;
        int src = emu.peer[i].world;
        switch ((enum emu_kind)s->kind) {
        case EMU_BLOCK:
            emu.cfg.on_block(emu.cfg.ctx, src, s->data, s->len);
            break;
        case EMU_NOTIFY: {
            uint64_t v;
            memcpy(&v, s->data, sizeof v);
            emu.cfg.on_notify(emu.cfg.ctx, src, v);
            break;
        }
        default: {
            struct emu_rma_msg m;
            memcpy(&m, s->data, sizeof m);
            hashi_emu_rma_message(i, (enum emu_kind)s->kind, &m);
            break;
        }
        }
        emu.ring_tail[i] = t + 1;
        emu.ring_next[i] = emu_slot_at(emu.seg, i, t + 1);
        atomic_store_explicit(&emu_ring(emu.seg, i)->tail, t + 1, memory_order_release);
        drained++;
    }
    hashi_wake_peer(emu.peer[i].world);   /* a sender may sleep waiting for room */
    return drained;
}

/* Deliver what arrived in my inbound rings: a poll is one load per ring. */
static int poll_rings(void)
{
    int n = 0;
    for (int i = 0; i < emu.nlocal; i++)
        if (atomic_load_explicit(&emu.ring_next[i]->seq, memory_order_acquire) == emu.ring_tail[i] + 1)
            n += drain_ring(i);
    return n;
}

static int emu_progress(void)
{
    int n = poll_rings();
    if (deferred_head)
        n += flush_deferred();
    return n + hashi_emu_rma_progress();
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
    .block_alloc = emu_block_alloc,
    .block_kick = emu_block_kick,
    .notify = emu_notify,
    .put = hashi_emu_put,
    .get = hashi_emu_get,
    .mem_reg = hashi_emu_mem_reg,
    .mem_dereg = hashi_emu_mem_dereg,
    .rkey_pack = hashi_emu_rkey_pack,
};
