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
 * Window lock words (docs/rma.md, "LLCM locks"): one 8-byte word per window
 * in each member's LLCM, from the partitioned requests' region, changed
 * only by compare-and-swap and fetch-add (emu: locked instructions on the
 * peer's mapped LLCM, or on our own), so a lock needs no code at the
 * target. Like the flag areas' hello word, the word carries the job's key:
 *   bits 63-32  the process-group id (a freed or foreign word has another)
 *   bit  31     a writer holds it
 *   bits 30-16  origins waiting for it (the release tells the caller)
 *   bits 15-0   shared holders
 */
#define LW_KEY_SHIFT 32
#define LW_WRITER (UINT64_C(1) << 31)
#define LW_WAITER (UINT64_C(1) << 16)
#define LW_WAITERS (UINT64_C(0x7fff) << 16)
#define LW_READERS UINT64_C(0xffff)

static uint64_t lock_key(void)
{
    return (uint64_t)hashi_dn_pgid() << LW_KEY_SHIFT;
}

/* A lock word's holders never exceed the job's ranks: the fields hold them. */
static int lock_fits(void)
{
    return hashi_job.size < 0x7fff;
}

static int dn_lock_alloc(uint64_t *ref)
{
    const struct hashi_tl_ops *tl = hashi_tl(hashi_job.rank);
    if (!tl || !tl->llcm_cmpxchg || !tl->llcm_fetch_add || !lock_fits())
        return HASHI_DEVICE_P2P_DECLINE;
    uint64_t off = hashi_dn_llcm_words_alloc(1);
    if (!off)
        return HASHI_DEVICE_P2P_DECLINE;   /* the region is full: messages */
    __atomic_store_n((uint64_t *)(void *)((char *)hashi_transport_llcm() + off), lock_key(), __ATOMIC_RELEASE);
    *ref = off;
    return MPI_SUCCESS;
}

static void dn_lock_free(uint64_t ref)
{
    /* Cleared: a stale holder's atomics would find no key. */
    __atomic_store_n((uint64_t *)(void *)((char *)hashi_transport_llcm() + ref), 0, __ATOMIC_RELEASE);
    hashi_dn_llcm_words_free(ref, 1);
}

/* Whether a word read back is one of this job's lock words. */
static int lock_word_ok(uint64_t v)
{
    return (v >> LW_KEY_SHIFT) == (lock_key() >> LW_KEY_SHIFT);
}

static int dn_lock_try(int target_world, uint64_t ref, int exclusive, int *taken)
{
    const struct hashi_tl_ops *tl = hashi_tl(target_world);
    /* The common case first: a free word with nobody waiting. */
    uint64_t expected = lock_key(), old;
    for (;;) {
        uint64_t desired = exclusive ? expected | LW_WRITER : expected + 1;
        if (tl->llcm_cmpxchg(target_world, ref, expected, desired, &old) != 0 || !lock_word_ok(old))
            return MPI_ERR_RMA_SYNC;
        if (old == expected) {
            hashi_dn_stats.rma_locks++;
            *taken = 1;
            return MPI_SUCCESS;
        }
        if ((old & LW_WRITER) || (exclusive && (old & LW_READERS))) {
            *taken = 0;
            return MPI_SUCCESS;
        }
        expected = old;   /* only the waiters or readers moved: again */
    }
}

static int dn_lock_waiters(int target_world, uint64_t ref, int delta)
{
    uint64_t old;
    if (hashi_tl(target_world)->llcm_fetch_add(target_world, ref, delta > 0 ? LW_WAITER : -LW_WAITER, &old) != 0 ||
        !lock_word_ok(old))
        return MPI_ERR_RMA_SYNC;
    if (delta > 0)
        hashi_dn_stats.rma_lock_waits++;
    return MPI_SUCCESS;
}

static int dn_lock_release(int target_world, uint64_t ref, int exclusive, int *waiting)
{
    uint64_t old;
    if (hashi_tl(target_world)->llcm_fetch_add(target_world, ref, exclusive ? -LW_WRITER : -UINT64_C(1), &old) != 0 ||
        !lock_word_ok(old))
        return MPI_ERR_RMA_SYNC;
    *waiting = (old & LW_WAITERS) != 0;
    return MPI_SUCCESS;
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
    .lock_waiters = dn_lock_waiters,
    .lock_release = dn_lock_release,
};
