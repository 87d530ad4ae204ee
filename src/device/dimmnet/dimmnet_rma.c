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
 * Window locks (docs/rma.md, "LLCM locks"): a reader-writer lock per window
 * in each member's LLCM, from the partitioned requests' region, changed
 * only by remote compare-and-swap and fetch-add (emu: locked instructions
 * on the peer's mapped LLCM, or on our own), so a lock needs no code at
 * the target. 2 + members words:
 *
 *   word     bits 63-32 the job's process-group id, bit 31 a writer holds
 *            it, bits 30-16 origins registered as waiting, bits 15-0
 *            shared holders
 *   tickets  bits 63-32 the next ticket (fetch-add; wraps off the top),
 *            bits 31-0 the process-group id
 *   slot[m]  member m's wait for this word, 0 when none: bits 63-32 its
 *            ticket, bit 31 exclusive, bits 30-0 its world rank + 1
 *
 * Whoever finds the word free takes it (a running rank never waits for a
 * sleeping one: on an oversubscribed node handing the lock to a sleeper
 * costs a context switch per grant). A release that leaves waiters wakes
 * one: the registered waiter with the oldest ticket that the word now
 * admits, so sleepers are woken first come, first served. The key in the
 * word and the ticket word turns a stale or foreign offset into
 * MPI_ERR_RMA_SYNC, never a spin.
 */
#define LW_KEY_SHIFT 32
#define LW_WRITER (UINT64_C(1) << 31)
#define LW_WAITER (UINT64_C(1) << 16)
#define LW_WAITERS (UINT64_C(0x7fff) << 16)
#define LW_READERS UINT64_C(0xffff)
#define LW_TICKET (UINT64_C(1) << 32)
#define LW_SLOT_EXCLUSIVE (UINT64_C(1) << 31)
#define LW_WORD_OFF 0
#define LW_TICKETS_OFF 8
#define LW_SLOT_OFF(m) (16 + 8 * (uint64_t)(m))

static uint32_t lock_key(void)
{
    return hashi_dn_pgid();
}

/* The holders and waiters never exceed the job's ranks: the fields hold them. */
static int lock_fits(void)
{
    return hashi_job.size < 0x7fff;
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
    uint64_t off = hashi_dn_llcm_words_alloc(2 + members);
    if (!off)
        return HASHI_DEVICE_P2P_DECLINE;   /* the region is full: messages */
    for (int m = 0; m < members; m++)
        __atomic_store_n(own_word(off + LW_SLOT_OFF(m)), 0, __ATOMIC_RELAXED);
    __atomic_store_n(own_word(off + LW_TICKETS_OFF), (uint64_t)lock_key(), __ATOMIC_RELAXED);
    __atomic_store_n(own_word(off + LW_WORD_OFF), (uint64_t)lock_key() << LW_KEY_SHIFT, __ATOMIC_RELEASE);
    *ref = off;
    return MPI_SUCCESS;
}

static void dn_lock_free(int members, uint64_t ref)
{
    /* Cleared: a stale holder's atomics would find no key. */
    __atomic_store_n(own_word(ref + LW_TICKETS_OFF), 0, __ATOMIC_RELAXED);
    __atomic_store_n(own_word(ref + LW_WORD_OFF), 0, __ATOMIC_RELEASE);
    hashi_dn_llcm_words_free(ref, 2 + members);
}

/* Whether a word read back is one of this job's lock words. */
static int lock_word_ok(uint64_t v)
{
    return (v >> LW_KEY_SHIFT) == lock_key();
}

/* Whether a holder of that kind may take a word in state v. */
static int lock_admits(uint64_t v, int exclusive)
{
    return !(v & LW_WRITER) && !(exclusive && (v & LW_READERS));
}

/*
 * After a change that left the word in state v with waiters registered:
 * *wake = the world rank of the oldest registered waiter (the smallest
 * ticket), if v admits it, else -1 (the release that will admit it wakes
 * it then).
 */
static int oldest_waiter(const struct hashi_tl_ops *tl, int target_world, uint64_t ref, int members, uint64_t v,
                         int *wake)
{
    uint64_t slot, best = 0;
    *wake = -1;
    if (!(v & LW_WAITERS))
        return MPI_SUCCESS;
    for (int m = 0; m < members; m++) {
        if (tl->llcm_cmpxchg(target_world, ref + LW_SLOT_OFF(m), 0, 0, &slot) != 0)
            return MPI_ERR_RMA_SYNC;
        /* Our own slot: a waiter granted a shared hold names the next one
         * before it empties its slot. Live tickets lie within `members` of
         * each other: the signed difference orders them across the wrap. */
        if (!slot || (slot & 0x7fffffff) == (uint64_t)(hashi_job.rank + 1))
            continue;
        if (!best || (int32_t)((uint32_t)(slot >> 32) - (uint32_t)(best >> 32)) < 0)
            best = slot;
    }
    if (best && lock_admits(v, (best & LW_SLOT_EXCLUSIVE) != 0)) {
        *wake = (int)(best & 0x7fffffff) - 1;
        hashi_dn_stats.rma_lock_wakes++;
    }
    return MPI_SUCCESS;
}

static int dn_lock_try(int target_world, uint64_t ref, int members, int exclusive, int *taken, int *wake)
{
    const struct hashi_tl_ops *tl = hashi_tl(target_world);
    /* The common case first: a free word with nobody waiting. */
    uint64_t expected = (uint64_t)lock_key() << LW_KEY_SHIFT, old;
    *taken = 0;
    *wake = -1;
    for (;;) {
        uint64_t desired = exclusive ? expected | LW_WRITER : expected + 1;
        if (tl->llcm_cmpxchg(target_world, ref + LW_WORD_OFF, expected, desired, &old) != 0 || !lock_word_ok(old))
            return MPI_ERR_RMA_SYNC;
        if (old == expected) {
            hashi_dn_stats.rma_locks++;
            *taken = 1;
            /* A shared holder lets the oldest waiter in too, if it is shared. */
            return exclusive ? MPI_SUCCESS : oldest_waiter(tl, target_world, ref, members, desired, wake);
        }
        if (!lock_admits(old, exclusive))
            return MPI_SUCCESS;
        expected = old;   /* only the waiters or readers moved: again */
    }
}

/* on: member (this rank's index in the window) waits for the word, with a
 * new ticket (*slot: its registration); off: it took the word, its slot
 * (*slot) is free again. */
static int dn_lock_register(int target_world, uint64_t ref, int member, int exclusive, int on, uint64_t *slot)
{
    const struct hashi_tl_ops *tl = hashi_tl(target_world);
    uint64_t off = ref + LW_SLOT_OFF(member), old;
    if (on) {
        if (tl->llcm_fetch_add(target_world, ref + LW_TICKETS_OFF, LW_TICKET, &old) != 0 ||
            (uint32_t)old != lock_key())
            return MPI_ERR_RMA_SYNC;
        *slot = (old & ~UINT64_C(0xffffffff)) | (exclusive ? LW_SLOT_EXCLUSIVE : 0) | (uint64_t)(hashi_job.rank + 1);
    }
    if (tl->llcm_cmpxchg(target_world, off, on ? 0 : *slot, on ? *slot : 0, &old) != 0 || old != (on ? 0 : *slot))
        return MPI_ERR_RMA_SYNC;
    /* Counted in the word after the slot is filled, so a release that
     * sees the count finds the slot. */
    if (tl->llcm_fetch_add(target_world, ref + LW_WORD_OFF, on ? LW_WAITER : -LW_WAITER, &old) != 0 ||
        !lock_word_ok(old))
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
    if (tl->llcm_fetch_add(target_world, ref + LW_WORD_OFF, -delta, &old) != 0 || !lock_word_ok(old))
        return MPI_ERR_RMA_SYNC;
    return oldest_waiter(tl, target_world, ref, members, old - delta, wake);
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
    .lock_try = dn_lock_try,
    .lock_register = dn_lock_register,
    .lock_release = dn_lock_release,
};
