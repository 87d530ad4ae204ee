/*
 * The fabric transport's PUSH and PULL: fi_write / fi_read on memory peers
 * registered, and the registrations themselves.
 *
 * A put is written with FI_DELIVERY_COMPLETE, so its done callback means
 * the data is at the target, not merely out of the source buffer. Its
 * signal (the status word the target polls) rides in the remote CQ data of
 * the last piece when the value fits 40 bits, so the target stores it after
 * the data in the same completion; a wider value goes as a tiny-write
 * message posted right after the last piece (write-then-send is ordered).
 * Operations longer than max_rma move in pieces, one at a time.
 */
#include "transport/fabric/fabric.h"

#include "runtime/log.h"

#include <errno.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdlib.h>
#include <string.h>

void fab_rma_free(struct fab_rma *r)
{
    fab_mem_release(r->tmp);
    free(r);
}

void fab_rma_finish(struct fab_rma *r)
{
    hashi_tl_done_fn done = r->done;
    void *arg = r->arg;
    int status = r->status;
    fab_rma_free(r);
    if (done)
        done(arg, status);
}

static uint64_t sig_value(const struct hashi_tl_signal *sig)
{
    return sig->size == 8 ? sig->value : sig->value & (((uint64_t)1 << (sig->size * 8)) - 1);
}

ssize_t fab_rma_post(struct fab_rma *r)
{
    size_t n = r->len - r->pos;
    if (n > fab.max_rma)
        n = fab.max_rma;
    int last = r->pos + n == r->len;
    struct iovec iov = { .iov_base = r->local + r->pos, .iov_len = n };
    struct fi_rma_iov riov = { .addr = r->raddr + r->pos, .len = n, .key = r->key };
    struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &r->desc, .iov_count = 1, .addr = fab.peers[r->op.peer].addr,
                              .rma_iov = &riov, .rma_iov_count = 1, .context = &r->op.ctx };
    if (!r->is_put) {
        ssize_t rc = fi_readmsg(fab.ep, &msg, 0);
        if (rc == 0)
            r->piece = n;
        return rc;
    }
    uint64_t flags = FI_DELIVERY_COMPLETE;
    int sig_inline = last && r->has_sig && fab_cq_inline(sig_value(&r->sig));
    if (sig_inline) {
        msg.data = fab_cq_encode(r->sig.offset, r->sig.size, sig_value(&r->sig));
        flags |= FI_REMOTE_CQ_DATA;
    }
    ssize_t rc = fi_writemsg(fab.ep, &msg, flags);
    if (rc)
        return rc;
    r->piece = n;
    if (last && r->has_sig && !sig_inline) {
        /* Nothing issued after this put may overtake its signal. */
        int src = fab_tiny_write(r->op.peer, r->sig.offset, r->sig.value, r->sig.size);
        if (src)
            hashi_log("fabric transport: the signal of a put to rank %d was lost (%d)", r->op.peer, src);
    }
    return 0;
}

void fab_rma_complete(struct fab_rma *r, int status)
{
    if (status == 0) {
        r->pos += r->piece;
        r->piece = 0;
        if (r->pos < r->len) {
            fab_queue_push(&fab.pending, &r->op);
            return;
        }
    }
    r->status = status;
    fab_queue_push(&fab.done, &r->op);
}

/* Start a put or get; see the ops' contract in transport.h. */
static int rma_start(int is_put, int peer, void *local, size_t len, const struct hashi_tl_mem *mem,
                     const struct hashi_tl_rkey *rkey, uint64_t offset, const struct hashi_tl_signal *sig,
                     hashi_tl_done_fn done, void *arg)
{
    struct fab_rkey k;
    memcpy(&k, rkey, sizeof k);
    if (!fab_peer_ok(peer) || offset > k.len || len > k.len - offset)
        return -EINVAL;
    if (sig && !fab_tiny_valid(peer, sig->offset, sig->size))
        return -EINVAL;
    fab_batch_before(peer);     /* a PUSH's data and signal come after the blocks before it */
    struct fab_rma *r = calloc(1, sizeof *r);
    if (!r)
        return -EAGAIN;
    r->op.kind = FAB_OP_RMA;
    r->op.peer = peer;
    r->is_put = is_put;
    r->local = local;
    r->len = len;
    r->raddr = k.base + offset;
    r->key = k.key;
    r->done = done;
    r->arg = arg;
    if (sig) {
        r->has_sig = 1;
        r->sig = *sig;
    }
    if (len == 0) {
        /* Nothing to move: the signal alone, and the report from progress. */
        if (sig)
            r->status = fab_tiny_write(peer, sig->offset, sig->value, sig->size);
        fab_queue_push(&fab.done, &r->op);
        return 0;
    }
    if (fab.mr_local) {
        const struct fab_mem *m = mem ? mem->tl[HASHI_TL_FABRIC] : NULL;
        if (m && (char *)local >= m->buf && len <= m->len && (size_t)((char *)local - m->buf) <= m->len - len) {
            r->desc = m->desc;
        } else {
            int rc = fab_mem_register(local, len, &r->tmp);
            if (rc) {
                free(r);
                return rc;
            }
            r->desc = r->tmp->desc;
        }
    }
    int rc = fab_submit(&r->op);
    if (rc) {
        hashi_log("fabric transport: starting a %s with rank %d failed: %s", is_put ? "put" : "get", peer,
                  fi_strerror(-rc));
        fab_rma_free(r);
        return -EIO;
    }
    return 0;
}

int fab_put(int peer, const void *src, size_t len, const struct hashi_tl_mem *src_mem,
            const struct hashi_tl_rkey *rkey, uint64_t offset, const struct hashi_tl_signal *sig,
            hashi_tl_done_fn done, void *arg)
{
    return rma_start(1, peer, (void *)src, len, src_mem, rkey, offset, sig, done, arg);
}

int fab_get(int peer, void *dst, size_t len, const struct hashi_tl_mem *dst_mem, const struct hashi_tl_rkey *rkey,
            uint64_t offset, hashi_tl_done_fn done, void *arg)
{
    return rma_start(0, peer, dst, len, dst_mem, rkey, offset, NULL, done, arg);
}

int fab_mem_reg(void *buf, size_t len, void **handle)
{
    struct fab_mem *m;
    int rc = fab_mem_register(buf, len, &m);
    if (rc)
        return rc;
    *handle = m;
    return 0;
}

void fab_mem_dereg(void *handle)
{
    fab_mem_release(handle);
}

void fab_rkey_pack(void *handle, const struct hashi_tl_mem *mem, int peer, struct hashi_tl_rkey *rkey)
{
    (void)peer;   /* one key serves every peer of this endpoint */
    const struct fab_mem *m = handle;
    struct fab_rkey k = { .base = fab.mr_virt_addr ? (uint64_t)(uintptr_t)mem->buf : 0,
                          .key = fi_mr_key(m->mr), .len = mem->len };
    memset(rkey, 0, sizeof *rkey);
    memcpy(rkey, &k, sizeof k);
}
