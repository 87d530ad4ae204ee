/*
 * DIMMnet's device RMA entries (device.h, struct hashi_device_rma_ops;
 * docs/rma.md, "Device path"): a window's memory is registered with the
 * transport, and a contiguous put or get to a peer on emu is one PUSH or
 * PULL into that registration (process_vm_writev / readv: one copy, no
 * code at the target). Peers on fabric stay on the MPI layer's messages:
 * a fabric write would need the target's MR key per origin and its
 * completion semantics, which this first version does not take on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device/dimmnet/dimmnet.h"
#include "runtime/rt.h"
#include "transport/transport.h"

struct hashi_device_win {
    struct hashi_tl_mem mem;
};

/* A peer emu serves (its keys are the same for every peer), or -1. */
static int emu_peer(void)
{
    for (int r = 0; r < hashi_job.size; r++) {
        const struct hashi_tl_ops *tl = hashi_tl(r);
        if (tl && tl->id == HASHI_TL_EMU)
            return r;
    }
    return -1;
}

static int dn_rma_reaches(int target_world)
{
    const struct hashi_tl_ops *tl = hashi_tl(target_world);
    return tl && tl->id == HASHI_TL_EMU;
}

static int dn_win_attach(void *base, size_t size, struct hashi_device_win **dwp, void *key)
{
    int peer = emu_peer();
    if (peer < 0)
        return HASHI_DEVICE_P2P_DECLINE;   /* nobody to reach directly */
    struct hashi_device_win *dw = calloc(1, sizeof *dw);
    if (!dw)
        return MPI_ERR_NO_MEM;
    if (hashi_transport_mem_reg(base, size, &dw->mem) != 0) {
        free(dw);
        return HASHI_DEVICE_P2P_DECLINE;
    }
    struct hashi_tl_rkey k;
    hashi_transport_rkey(&dw->mem, peer, &k);
    _Static_assert(sizeof k.bytes <= HASHI_DEVICE_RMA_KEY_MAX, "an rkey fits the device's key");
    memcpy(key, k.bytes, sizeof k.bytes);
    *dwp = dw;
    return MPI_SUCCESS;
}

static void dn_win_detach(struct hashi_device_win *dw)
{
    hashi_transport_mem_dereg(&dw->mem);
    free(dw);
}

static int error_class(int rc)
{
    return rc == -ENOMEM ? MPI_ERR_NO_MEM : rc == -EINVAL ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER;
}

static int dn_rma_put(int target_world, const void *key, uint64_t offset, const void *src, size_t len,
                      hashi_device_rma_done_fn *done, void *arg)
{
    struct hashi_tl_rkey k;
    memcpy(k.bytes, key, sizeof k.bytes);
    /* The layer's done takes the transport's status as it is (0 or -errno). */
    int rc = hashi_tl(target_world)->put(target_world, src, len, NULL, &k, offset, NULL, done, arg);
    if (rc != 0)
        return error_class(rc);
    hashi_dn_stats.rma_puts++;
    return MPI_SUCCESS;
}

static int dn_rma_get(int target_world, const void *key, uint64_t offset, void *dst, size_t len,
                      hashi_device_rma_done_fn *done, void *arg)
{
    struct hashi_tl_rkey k;
    memcpy(k.bytes, key, sizeof k.bytes);
    int rc = hashi_tl(target_world)->get(target_world, dst, len, NULL, &k, offset, done, arg);
    if (rc != 0)
        return error_class(rc);
    hashi_dn_stats.rma_gets++;
    return MPI_SUCCESS;
}

static int dn_rma_putv(int target_world, const void *key, const struct hashi_device_rma_piece *pieces, int n,
                       hashi_device_rma_done_fn *done, void *arg)
{
    const struct hashi_tl_ops *tl = hashi_tl(target_world);
    if (!tl->putv || n < 1 || n > HASHI_TL_PUTV_MAX)
        return HASHI_DEVICE_P2P_DECLINE;
    struct hashi_tl_piece v[HASHI_DEVICE_RMA_PUTV_MAX];
    _Static_assert(HASHI_DEVICE_RMA_PUTV_MAX <= HASHI_TL_PUTV_MAX, "a device vector fits the transport's");
    for (int i = 0; i < n; i++)
        v[i] = (struct hashi_tl_piece){ pieces[i].src, pieces[i].len, pieces[i].offset };
    struct hashi_tl_rkey k;
    memcpy(k.bytes, key, sizeof k.bytes);
    int rc = tl->putv(target_world, v, n, &k, done, arg);
    if (rc == -ENOTSUP)
        return HASHI_DEVICE_P2P_DECLINE;
    if (rc != 0)
        return error_class(rc);
    hashi_dn_stats.rma_puts += (uint64_t)n;
    hashi_dn_stats.rma_pushv++;
    return MPI_SUCCESS;
}

/*
 * Window locks (docs/rma.md, "LLCM locks"): a fair reader-writer ticket
 * lock per window in each member's LLCM, from the partitioned requests'
 * region, changed only by remote compare-and-swap and fetch-add (emu:
 * locked instructions on the peer's mapped LLCM, or on our own), so a lock
 * needs no code at the target. 2 + members words:
 *
 *   ticket  bits 63-32 the next ticket (fetch-add; wraps off the top),
 *           bits 31-0 the job's process-group id
 *   state   bits 63-32 the process-group id, bits 31-16 the head (the
 *           ticket granted next, mod 2^16), bit 15 a writer holds it,
 *           bits 14-0 shared holders
 *   slot[i] the waiter of ticket t with t mod slots == i, 0 when none
 *           (slots: members rounded up to a power of two):
 *           bits 63-32 t, bit 31 exclusive, bits 30-0 its world rank + 1
 *
 * Tickets are granted in order: ticket t is taken when the head is t and
 * the holders allow it (exclusive: none; shared: no writer), which moves
 * the head on. At most `members` tickets are ever outstanding (each member
 * holds or waits for at most one per target), so the head fits 16 bits and
 * ticket t's slot is free again before t + slots is taken (a power of two
 * divides 2^32 and 2^16, so the wrap of either counter keeps that true).
 * The key in both words turns a stale or foreign offset into
 * MPI_ERR_RMA_SYNC, never a spin.
 */
#define LW_KEY_SHIFT 32
#define LW_TICKET (UINT64_C(1) << 32)
#define LW_HEAD_SHIFT 16
#define LW_HEAD_MASK UINT64_C(0xffff)
#define LW_WRITER (UINT64_C(1) << 15)
#define LW_READERS UINT64_C(0x7fff)
#define LW_SLOT_EXCLUSIVE (UINT64_C(1) << 31)
#define LW_TICKET_OFF 0
#define LW_STATE_OFF 8
#define LW_SLOT_OFF(i) (16 + 8 * (uint64_t)(i))

static uint32_t lock_key(void)
{
    return hashi_dn_pgid();
}

/* The holders never exceed the job's ranks: the reader field holds them. */
static int lock_fits(void)
{
    return hashi_job.size < (int)LW_READERS;
}

static uint32_t lock_slots(int members)
{
    uint32_t n = 1;
    while (n < (uint32_t)members)
        n <<= 1;
    return n;
}

static uint64_t *own_word(uint64_t off)
{
    return (uint64_t *)(void *)((char *)hashi_transport_llcm() + off);
}

static int dn_lock_alloc(int members, uint64_t *ref)
{
    const struct hashi_tl_ops *tl = hashi_tl(hashi_job.rank);
    if (!tl || !tl->llcm_cmpxchg || !tl->llcm_fetch_add || !lock_fits() || members < 1)
        return HASHI_DEVICE_P2P_DECLINE;
    uint32_t slots = lock_slots(members);
    uint64_t off = hashi_dn_llcm_words_alloc(2 + (int)slots);
    if (!off)
        return HASHI_DEVICE_P2P_DECLINE;   /* the region is full: messages */
    for (uint32_t i = 0; i < slots; i++)
        __atomic_store_n(own_word(off + LW_SLOT_OFF(i)), 0, __ATOMIC_RELAXED);
    __atomic_store_n(own_word(off + LW_STATE_OFF), (uint64_t)lock_key() << LW_KEY_SHIFT, __ATOMIC_RELAXED);
    __atomic_store_n(own_word(off + LW_TICKET_OFF), (uint64_t)lock_key(), __ATOMIC_RELEASE);
    *ref = off;
    return MPI_SUCCESS;
}

static void dn_lock_free(int members, uint64_t ref)
{
    /* Cleared: a stale holder's atomics would find no key. */
    __atomic_store_n(own_word(ref + LW_TICKET_OFF), 0, __ATOMIC_RELAXED);
    __atomic_store_n(own_word(ref + LW_STATE_OFF), 0, __ATOMIC_RELEASE);
    hashi_dn_llcm_words_free(ref, 2 + (int)lock_slots(members));
}

static int dn_lock_ticket(int target_world, uint64_t ref, uint32_t *ticket)
{
    uint64_t old;
    if (hashi_tl(target_world)->llcm_fetch_add(target_world, ref + LW_TICKET_OFF, LW_TICKET, &old) != 0 ||
        (uint32_t)old != lock_key())
        return MPI_ERR_RMA_SYNC;
    *ticket = (uint32_t)(old >> 32);
    return MPI_SUCCESS;
}

static uint64_t state_head(uint64_t s)
{
    return (s >> LW_HEAD_SHIFT) & LW_HEAD_MASK;
}

/* Whether a waiter of that kind may take the word now (its turn aside). */
static int lock_allows(uint64_t s, int exclusive)
{
    return !(s & LW_WRITER) && !(exclusive && (s & LW_READERS));
}

/* The waiter registered for the head ticket of state s, if the holders of
 * s let it take the word: its world rank, else -1. */
static int head_waiter(const struct hashi_tl_ops *tl, int target_world, uint64_t ref, int members, uint64_t s,
                       int *wake)
{
    uint64_t head = state_head(s), slot;
    *wake = -1;
    if (tl->llcm_cmpxchg(target_world, ref + LW_SLOT_OFF(head % lock_slots(members)), 0, 0, &slot) != 0)
        return MPI_ERR_RMA_SYNC;
    if (slot && ((slot >> 32) & LW_HEAD_MASK) == head && lock_allows(s, (slot & LW_SLOT_EXCLUSIVE) != 0)) {
        *wake = (int)(slot & 0x7fffffff) - 1;
        hashi_dn_stats.rma_lock_wakes++;
    }
    return MPI_SUCCESS;
}

static int dn_lock_try(int target_world, uint64_t ref, int members, int exclusive, uint32_t ticket, int *taken,
                       int *wake)
{
    const struct hashi_tl_ops *tl = hashi_tl(target_world);
    uint64_t key = (uint64_t)lock_key() << LW_KEY_SHIFT, t = ticket & LW_HEAD_MASK;
    /* The common case first: our turn and no holder. */
    uint64_t expected = key | t << LW_HEAD_SHIFT, old;
    *taken = 0;
    *wake = -1;
    for (;;) {
        uint64_t desired = (key | ((t + 1) & LW_HEAD_MASK) << LW_HEAD_SHIFT) | (expected & (LW_WRITER | LW_READERS));
        desired += exclusive ? LW_WRITER : 1;
        if (tl->llcm_cmpxchg(target_world, ref + LW_STATE_OFF, expected, desired, &old) != 0 ||
            (old >> LW_KEY_SHIFT) != lock_key())
            return MPI_ERR_RMA_SYNC;
        if (old == expected) {
            hashi_dn_stats.rma_locks++;
            *taken = 1;
            /* A shared holder lets the next shared waiter in at once. */
            return exclusive ? MPI_SUCCESS : head_waiter(tl, target_world, ref, members, desired, wake);
        }
        if (state_head(old) != t || !lock_allows(old, exclusive))
            return MPI_SUCCESS;
        expected = old;   /* only the shared holders moved: again */
    }
}

/* on: this rank waits for ticket (the release that lets it in names it);
 * off: it took the word, the slot is free again. */
static int dn_lock_register(int target_world, uint64_t ref, int members, int exclusive, uint32_t ticket, int on)
{
    const struct hashi_tl_ops *tl = hashi_tl(target_world);
    uint64_t slot = (uint64_t)ticket << 32 | (exclusive ? LW_SLOT_EXCLUSIVE : 0) | (uint64_t)(hashi_job.rank + 1);
    uint64_t off = ref + LW_SLOT_OFF(ticket % lock_slots(members)), old;
    if (tl->llcm_cmpxchg(target_world, off, on ? 0 : slot, on ? slot : 0, &old) != 0 || old != (on ? 0 : slot))
        return MPI_ERR_RMA_SYNC;
    if (on)
        hashi_dn_stats.rma_lock_waits++;
    return MPI_SUCCESS;
}

static int dn_lock_release(int target_world, uint64_t ref, int members, int exclusive, int *wake)
{
    const struct hashi_tl_ops *tl = hashi_tl(target_world);
    uint64_t old, delta = exclusive ? LW_WRITER : 1;
    *wake = -1;
    if (tl->llcm_fetch_add(target_world, ref + LW_STATE_OFF, -delta, &old) != 0 ||
        (old >> LW_KEY_SHIFT) != lock_key())
        return MPI_ERR_RMA_SYNC;
    return head_waiter(tl, target_world, ref, members, old - delta, wake);
}

const struct hashi_device_rma_ops hashi_dn_rma_ops = {
    .win_attach = dn_win_attach,
    .win_detach = dn_win_detach,
    .reaches = dn_rma_reaches,
    .put = dn_rma_put,
    .get = dn_rma_get,
    .putv = dn_rma_putv,
    .lock_alloc = dn_lock_alloc,
    .lock_free = dn_lock_free,
    .lock_ticket = dn_lock_ticket,
    .lock_try = dn_lock_try,
    .lock_register = dn_lock_register,
    .lock_release = dn_lock_release,
};
