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

const struct hashi_device_rma_ops hashi_dn_rma_ops = {
    .win_attach = dn_win_attach,
    .win_detach = dn_win_detach,
    .reaches = dn_rma_reaches,
    .put = dn_rma_put,
    .get = dn_rma_get,
};
