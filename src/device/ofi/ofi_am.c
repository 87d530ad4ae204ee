/*
 * The ofi device, core matching (HASHI_OFI_MATCHING=core): libfabric as an
 * active-message device under the shared matching core (device/common/am.h).
 *
 * Messages are untagged (FI_MSG): the core's header plus payload, sent with
 * fi_inject when it fits, from a bounce buffer when the core asks for a
 * buffered send (its done runs once the provider accepted the copy), or
 * straight from the caller's memory (fi_sendv of header + data) for
 * zero-copy sends. They land in a few large receive buffers posted
 * with FI_MULTI_RECV; each completion hands one message to the core, which
 * copies what it keeps before returning, and a buffer the provider released
 * (FI_MULTI_RECV flag) is posted again at once. Rendezvous reads use fi_read
 * on memory registered by the core's mem_reg.
 */
#include "device/common/am.h"
#include "device/device.h"
#include "device/ofi/ofi.h"
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>


extern struct hashi_device_ops hashi_device_ofi;

#define RBUF_COUNT 4
#define RBUF_MIN_SIZE (512 * 1024)
#define FRAGMENT_MIN (64 * 1024)   /* chunked rendezvous fragments, at least */
#define POOL_CACHE_MAX 64
#define INJECT_STACK 4096          /* largest inject assembled on the stack */
#define FAST_INJECT 256            /* largest message of am_send's hot path (a small frame) */

struct rbuf {
    struct ofi_op op;
    unsigned char *buf;
    size_t len;
};

/* Buffered send: header and payload copied into the device's own memory. */
struct abounce {
    struct ofi_op op;
    struct abounce *next_free;
    int pooled;
    int dest;
    hashi_am_done_fn handed;  /* runs once the provider took it */
    void *arg;
    size_t len;
    unsigned char bytes[];
};

static void bounce_handed(struct abounce *b, int status)
{
    hashi_am_done_fn fn = b->handed;
    b->handed = NULL;
    if (fn)
        fn(b->arg, status);
}

/* Zero-copy send: header copied, payload read in place until done. */
struct azsend {
    struct ofi_op op;
    struct azsend *next_free;
    hashi_am_done_fn done;
    void *arg;
    int dest;
    size_t hdr_len, len;
    const void *data;
    unsigned char hdr[HASHI_AM_HDR_MAX];
};

struct aread {
    struct ofi_op op;
    struct aread *next_free;
    hashi_am_done_fn done;
    void *arg;
    int peer;
    void *local;
    size_t len;
    uint64_t raddr, key;
};

struct ofi_rkey {
    uint64_t raddr, key;
};

/*
 * Coalescing. libfabric 1.17's shm serialises a sender's fi_inject and the
 * receiver's progress on one spin lock in the receiver's region: a stream of
 * small messages costs about 1 us each, half of it the sender waiting for
 * that lock. So a small buffered send that follows another send to the same
 * peer with no progress poll in between (a burst: MPI_Isend in a loop) is
 * appended to an open batch for that peer; the batch goes to the provider as
 * one message, marked by remote CQ data, at the start and end of the next
 * progress poll, when it is full, or before any other send to that peer
 * (order). The first send of a burst goes out at once, so ping-pong latency
 * is unchanged; a send's done runs when its batch is handed over, so its
 * request completes only then (the contract of HASHI_AM_SEND_BUFFERED).
 * Batch body: for each message a 4-byte length (host order), then its bytes.
 */
#define BATCH_BYTES 4096
#define BATCH_MAX_MSGS 64
#define BATCH_CQ_DATA UINT64_C(0x48424154) /* "HBAT": fits the smallest CQ data (4 bytes) */

struct abatch {
    struct ofi_op op;
    struct abatch *next;    /* the free list, or the list of open batches */
    int dest;
    unsigned count;
    size_t len;
    struct {
        hashi_am_done_fn fn;
        void *arg;
    } handed[BATCH_MAX_MSGS];
    unsigned char bytes[BATCH_BYTES];
};

struct apeer {
    struct abatch *open;    /* being filled, not yet handed to the provider */
    uint64_t last_send_poll; /* am.polls when the last send to this peer left */
};

static struct {
    struct hashi_am_ops ops;
    struct rbuf rbufs[RBUF_COUNT];
    size_t rbuf_size;
    struct abounce *bounce_free;
    struct azsend *zsend_free;
    struct aread *read_free;
    int bounce_cached, zsend_cached, read_cached;
    size_t inject_max;      /* largest buffered send injected from the stack */
    size_t fast_max;        /* largest of them am_send's hot path takes (0: none) */
    /* coalescing */
    size_t coalesce_max;    /* largest message (header + payload) batched; 0: off */
    struct apeer *peers;    /* by world rank */
    struct abatch *open_batches, *batch_free;
    int batch_cached;
    uint64_t polls;         /* progress polls so far: a burst is sends within one gap */
    /* The core writes small eager messages here (ops.stage, am_send_staged). */
    _Alignas(64) unsigned char stage[FAST_INJECT];
} am;

/* ---------------------------------------------------------------- pools */

/* Pooled bounce buffers hold small messages; bigger ones are allocated to measure. */
#define BOUNCE_POOL_SIZE 4096

static struct abounce *bounce_get(size_t len)
{
    struct abounce *b = am.bounce_free;
    if (len <= BOUNCE_POOL_SIZE && b) {
        am.bounce_free = b->next_free;
        am.bounce_cached--;
        return b;
    }
    b = malloc(sizeof *b + (len <= BOUNCE_POOL_SIZE ? BOUNCE_POOL_SIZE : len));
    if (b)
        b->pooled = len <= BOUNCE_POOL_SIZE;
    return b;
}

static void bounce_put(struct abounce *b)
{
    if (b->pooled && am.bounce_cached < POOL_CACHE_MAX) {
        b->next_free = am.bounce_free;
        am.bounce_free = b;
        am.bounce_cached++;
    } else {
        free(b);
    }
}

static struct azsend *zsend_get(void)
{
    struct azsend *z = am.zsend_free;
    if (z) {
        am.zsend_free = z->next_free;
        am.zsend_cached--;
        return z;
    }
    return malloc(sizeof *z);
}

static void zsend_put(struct azsend *z)
{
    if (am.zsend_cached < POOL_CACHE_MAX) {
        z->next_free = am.zsend_free;
        am.zsend_free = z;
        am.zsend_cached++;
    } else {
        free(z);
    }
}

static struct aread *read_get(void)
{
    struct aread *r = am.read_free;
    if (r) {
        am.read_free = r->next_free;
        am.read_cached--;
        return r;
    }
    return malloc(sizeof *r);
}

static void read_put(struct aread *r)
{
    if (am.read_cached < POOL_CACHE_MAX) {
        r->next_free = am.read_free;
        am.read_free = r;
        am.read_cached++;
    } else {
        free(r);
    }
}

/* ------------------------------------------------------------- sending */

static ssize_t bounce_post(struct ofi_op *op)
{
    struct abounce *b = (struct abounce *)op;
    fi_addr_t to = hashi_ofi.peers[b->dest];
    if (b->len <= hashi_ofi.inject_size) {
        ssize_t rc = fi_inject(hashi_ofi.ep, b->bytes, b->len, to);
        if (rc == 0) {
            hashi_wake_peer(b->dest);
            bounce_handed(b, 0);
            bounce_put(b);  /* injected: no completion follows */
        }
        return rc;
    }
    ssize_t rc = fi_send(hashi_ofi.ep, b->bytes, b->len, NULL, to, &op->ctx);
    if (rc == 0) {
        hashi_wake_peer(b->dest);
        bounce_handed(b, 0);
    }
    return rc;
}

static void bounce_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct abounce *b = (struct abounce *)op;
    (void)e;
    if (err) {
        hashi_log("ofi device: a buffered message to rank %d failed: %s", b->dest, fi_strerror(err->err));
        bounce_handed(b, -err->err);  /* if it never got posted */
    }
    bounce_put(b);
}

static const struct ofi_op_class bounce_class = { "fi_send (buffered)", 0, bounce_post, bounce_complete };

static ssize_t zsend_post(struct ofi_op *op)
{
    struct azsend *z = (struct azsend *)op;
    struct iovec iov[2] = { { z->hdr, z->hdr_len }, { (void *)z->data, z->len } };
    ssize_t rc = fi_sendv(hashi_ofi.ep, iov, NULL, z->len ? 2 : 1, hashi_ofi.peers[z->dest], &op->ctx);
    if (rc == 0)
        hashi_wake_peer(z->dest);
    return rc;
}

static void zsend_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct azsend *z = (struct azsend *)op;
    (void)e;
    hashi_am_done_fn done = z->done;
    void *arg = z->arg;
    if (err)
        hashi_log("ofi device: a message to rank %d failed: %s", z->dest, fi_strerror(err->err));
    zsend_put(z);
    done(arg, err ? -err->err : 0);
}

static const struct ofi_op_class zsend_class = { "fi_sendv", 0, zsend_post, zsend_complete };

static void batch_put(struct abatch *b)
{
    if (am.batch_cached < POOL_CACHE_MAX) {
        b->next = am.batch_free;
        am.batch_free = b;
        am.batch_cached++;
    } else {
        free(b);
    }
}

static void batch_handed(struct abatch *b, int status)
{
    unsigned n = b->count;
    b->count = 0;
    for (unsigned i = 0; i < n; i++)
        if (b->handed[i].fn)
            b->handed[i].fn(b->handed[i].arg, status);
}

static ssize_t batch_post(struct ofi_op *op)
{
    struct abatch *b = (struct abatch *)op;
    fi_addr_t to = hashi_ofi.peers[b->dest];
    int single = b->count == 1;
    /* One message goes out as itself, without the batch framing. */
    const unsigned char *bytes = single ? b->bytes + sizeof(uint32_t) : b->bytes;
    size_t len = single ? b->len - sizeof(uint32_t) : b->len;
    ssize_t rc;
    HASHI_DEBUG(4, "ofi device: %u coalesced messages (%zu bytes) to rank %d", b->count, len, b->dest);
    if (len <= hashi_ofi.inject_size) {
        rc = single ? fi_inject(hashi_ofi.ep, bytes, len, to) : fi_injectdata(hashi_ofi.ep, bytes, len, BATCH_CQ_DATA, to);
        if (rc == 0) {
            hashi_wake_peer(b->dest);
            batch_handed(b, 0);
            batch_put(b);   /* injected: no completion follows */
        }
        return rc;
    }
    rc = single ? fi_send(hashi_ofi.ep, bytes, len, NULL, to, &op->ctx)
                : fi_senddata(hashi_ofi.ep, bytes, len, NULL, BATCH_CQ_DATA, to, &op->ctx);
    if (rc == 0) {
        hashi_wake_peer(b->dest);
        batch_handed(b, 0);
    }
    return rc;
}

static void batch_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct abatch *b = (struct abatch *)op;
    (void)e;
    if (err) {
        hashi_log("ofi device: %u coalesced messages to rank %d failed: %s", b->count, b->dest, fi_strerror(err->err));
        batch_handed(b, -err->err);  /* if it never got posted */
    }
    batch_put(b);
}

static const struct ofi_op_class batch_class = { "fi_send (coalesced)", 0, batch_post, batch_complete };

/* Header and payload side by side; the eager header (the hot case) is
 * copied as a constant-size block the compiler inlines. */
static inline void assemble(unsigned char *to, const void *hdr, size_t hdr_len, const void *data, size_t len)
{
    if (hdr_len == HASHI_AM_EAGER_HDR)
        memcpy(to, hdr, HASHI_AM_EAGER_HDR);
    else
        memcpy(to, hdr, hdr_len);
    if (len > 16) {
        memcpy(to + hdr_len, data, len);
    } else if (len >= 8) {  /* two overlapping words: no libc call for tiny payloads */
        memcpy(to + hdr_len, data, 8);
        memcpy(to + hdr_len + len - 8, (const unsigned char *)data + len - 8, 8);
    } else {
        for (size_t i = 0; i < len; i++)
            to[hdr_len + i] = ((const unsigned char *)data)[i];
    }
}

/* Hand dest's open batch to the provider (or its queue, keeping order). */
static void batch_close(int dest)
{
    struct abatch *b = am.peers[dest].open;
    am.peers[dest].open = NULL;
    for (struct abatch **p = &am.open_batches; *p; p = &(*p)->next) {
        if (*p == b) {
            *p = b->next;
            break;
        }
    }
    b->next = NULL;
    hashi_ofi_post(&b->op);
}

/* Close every open batch; returns the messages they carried. */
static __attribute__((noinline)) int batches_close_all(void)
{
    int n = 0;
    while (am.open_batches) {
        n += (int)am.open_batches->count;
        batch_close(am.open_batches->dest);
    }
    return n;
}

/*
 * Append a buffered send to dest's open batch, opening one when this send
 * follows another to dest within the same gap between progress polls.
 * Returns 1 if the message was taken, 0 if it should go out by itself.
 */
static int batch_add(int dest, const void *hdr, size_t hdr_len, const void *data, size_t len,
                     hashi_am_done_fn done, void *arg)
{
    struct apeer *p = &am.peers[dest];
    size_t need = sizeof(uint32_t) + hdr_len + len;
    struct abatch *b = p->open;
    if (b && (b->len + need > BATCH_BYTES || b->count == BATCH_MAX_MSGS)) {
        batch_close(dest);
        b = NULL;
    }
    if (!b) {
        if (p->last_send_poll != am.polls) {
            p->last_send_poll = am.polls;
            return 0;
        }
        b = am.batch_free;
        if (b) {
            am.batch_free = b->next;
            am.batch_cached--;
        } else if (!(b = malloc(sizeof *b))) {
            return 0;
        }
        b->op.cls = &batch_class;
        b->dest = dest;
        b->count = 0;
        b->len = 0;
        b->next = am.open_batches;
        am.open_batches = b;
        p->open = b;
    }
    uint32_t n = (uint32_t)(hdr_len + len);
    unsigned char *at = b->bytes + b->len;
    memcpy(at, &n, sizeof n);
    assemble(at + sizeof n, hdr, hdr_len, data, len);
    b->len += need;
    b->handed[b->count].fn = done;
    b->handed[b->count].arg = arg;
    b->count++;
    return 1;
}

/* A buffered send the provider refused for now, or too big to inject: a bounce buffer. */
static int send_bounced(int dest, const void *hdr, size_t hdr_len, const void *data, size_t len,
                        hashi_am_done_fn done, void *arg)
{
    size_t total = hdr_len + len;
    struct abounce *b = bounce_get(total);
    if (!b)
        return -1;
    b->op.cls = &bounce_class;
    b->dest = dest;
    b->handed = done;
    b->arg = arg;
    b->len = total;
    assemble(b->bytes, hdr, hdr_len, data, len);
    hashi_ofi_post(&b->op);
    return 0;
}

/* Everything but the hot case of am_send: zero-copy sends, batches, bounce
 * buffers, a refused inject. */
static __attribute__((noinline)) int am_send_other(int dest, const void *hdr, size_t hdr_len, const void *data,
                                                  size_t len, unsigned flags, hashi_am_done_fn done, void *arg)
{
    size_t total = hdr_len + len;
    if (hdr_len > HASHI_AM_HDR_MAX || total > am.ops.max_send || (unsigned)dest >= (unsigned)hashi_job.size)
        return -1;
    if (!(flags & HASHI_AM_SEND_BUFFERED)) {
        if (am.coalesce_max && am.peers[dest].open)
            batch_close(dest);  /* what was batched before this send goes first */
        struct azsend *z = zsend_get();
        if (!z)
            return -1;
        z->op.cls = &zsend_class;
        z->done = done;
        z->arg = arg;
        z->dest = dest;
        z->hdr_len = hdr_len;
        z->data = data;
        z->len = len;
        memcpy(z->hdr, hdr, hdr_len);
        hashi_ofi_post(&z->op);
        return 0;
    }
    if (am.coalesce_max) {
        if (total <= am.coalesce_max) {
            if (batch_add(dest, hdr, hdr_len, data, len, done, arg))
                return 0;
        } else if (am.peers[dest].open) {
            batch_close(dest);
        }
    }
    if (total <= am.inject_max && hashi_ofi_queue_empty(0)) {
        unsigned char msg[INJECT_STACK];
        assemble(msg, hdr, hdr_len, data, len);
        ssize_t rc = fi_inject(hashi_ofi.ep, msg, total, hashi_ofi.peers[dest]);
        if (rc == 0) {
            hashi_wake_peer(dest);
            if (done)
                done(arg, 0);
            return 0;
        }
        if (rc != -FI_EAGAIN) {
            hashi_ofi_warn("fi_inject", rc);
            return -1;
        }
        hashi_ofi.eagain_count++;
    }
    return send_bounced(dest, hdr, hdr_len, data, len, done, arg);
}

/*
 * The hot case (a ping-pong's every message): a buffered small message that
 * opens no batch, injected and complete before this returns. `built` is the
 * message already assembled (the core's stage, am_send_staged) or NULL:
 * assembled here on the stack from hdr and data. am.fast_max is 0 when the
 * provider's inject size is smaller, and the test on the destination also
 * covers the batch state: a send that follows another to the same peer
 * within one gap between polls (a burst) takes am_send_other and batch_add.
 */
static inline int send_fast(int dest, const unsigned char *built, const void *hdr, size_t hdr_len, const void *data,
                            size_t len, unsigned flags, hashi_am_done_fn done, void *arg)
{
    size_t total = hdr_len + len;
    if (__builtin_expect(!(flags & HASHI_AM_SEND_BUFFERED) || total > am.fast_max || hdr_len > HASHI_AM_HDR_MAX ||
                         (unsigned)dest >= (unsigned)hashi_job.size || hashi_ofi.tx_pending.head, 0))
        return am_send_other(dest, hdr, hdr_len, data, len, flags, done, arg);
    if (am.coalesce_max) {
        struct apeer *p = &am.peers[dest];
        if (p->open || p->last_send_poll == am.polls)
            return am_send_other(dest, hdr, hdr_len, data, len, flags, done, arg);
        p->last_send_poll = am.polls;   /* the next send to dest before a poll opens a batch */
    }
    unsigned char msg[FAST_INJECT];
    if (!built) {
        assemble(msg, hdr, hdr_len, data, len);
        built = msg;
    }
    ssize_t rc = fi_inject(hashi_ofi.ep, built, total, hashi_ofi.peers[dest]);
    if (__builtin_expect(rc != 0, 0)) {
        if (rc != -FI_EAGAIN) {
            hashi_ofi_warn("fi_inject", rc);
            return -1;
        }
        hashi_ofi.eagain_count++;
        return send_bounced(dest, hdr, hdr_len, data, len, done, arg);
    }
    hashi_wake_peer(dest);
    if (done)
        done(arg, 0);
    return 0;
}

static int am_send(int dest, const void *hdr, size_t hdr_len, const void *data, size_t len, unsigned flags,
                   hashi_am_done_fn done, void *arg)
{
    return send_fast(dest, NULL, hdr, hdr_len, data, len, flags, done, arg);
}

/* hashi_am_ops.send_staged: the core wrote the whole message into am.stage
 * (the small MPI_Send); sent as a payload without a header of its own, with
 * no copy on the hot case. */
static int am_send_staged(int dest, size_t len)
{
    return send_fast(dest, am.stage, am.stage, 0, am.stage, len, HASHI_AM_SEND_BUFFERED, NULL, NULL);
}

/* ------------------------------------------------------------------ RMA */

static int am_mem_reg(void *buf, size_t len, int peer, void **mem, void *rkey)
{
    (void)peer;  /* one key serves every peer */
    struct fid_mr *mr;
    struct ofi_rkey k;
    int rc = hashi_ofi_mr_reg(buf, len, &mr, &k.raddr, &k.key);
    if (rc) {
        hashi_ofi_warn("fi_mr_reg", rc);
        return -1;
    }
    memcpy(rkey, &k, sizeof k);
    *mem = mr;
    return 0;
}

static void am_mem_dereg(void *mem)
{
    fi_close(&((struct fid_mr *)mem)->fid);
}

static ssize_t read_post(struct ofi_op *op)
{
    struct aread *r = (struct aread *)op;
    ssize_t rc = fi_read(hashi_ofi.ep, r->local, r->len, NULL, hashi_ofi.peers[r->peer], r->raddr, r->key, &op->ctx);
    /* Some providers serve a read with the target's help (a sleeping target must wake). */
    if (rc == 0)
        hashi_wake_peer(r->peer);
    return rc;
}

static void read_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct aread *r = (struct aread *)op;
    (void)e;
    hashi_am_done_fn done = r->done;
    void *arg = r->arg;
    if (err)
        hashi_log("ofi device: reading %zu bytes from rank %d failed: %s", r->len, r->peer, fi_strerror(err->err));
    read_put(r);
    done(arg, err ? -err->err : 0);
}

static const struct ofi_op_class read_class = { "fi_read", 0, read_post, read_complete };

static int am_get(int peer, void *local, size_t len, const void *rkey, uint64_t offset, hashi_am_done_fn done,
                  void *arg)
{
    if (peer < 0 || peer >= hashi_job.size)
        return -1;
    struct aread *r = read_get();
    if (!r)
        return -1;
    struct ofi_rkey k;
    memcpy(&k, rkey, sizeof k);
    r->op.cls = &read_class;
    r->done = done;
    r->arg = arg;
    r->peer = peer;
    r->local = local;
    r->len = len;
    r->raddr = k.raddr + offset;
    r->key = k.key;
    hashi_ofi_post(&r->op);
    return 0;
}

/* ------------------------------------------------------------- receiving */

/* A coalesced message: hand each message in it to the core, in order. */
static __attribute__((noinline)) void deliver_batch(const unsigned char *buf, size_t len)
{
    size_t off = 0;
    while (len - off >= sizeof(uint32_t)) {
        uint32_t n;
        memcpy(&n, buf + off, sizeof n);
        off += sizeof n;
        if (n > len - off) {
            hashi_log("ofi device: a coalesced message is malformed (%u bytes announced, %zu left): dropped",
                      n, len - off);
            return;
        }
        hashi_am_deliver(buf + off, n);
        off += n;
    }
}

static ssize_t rbuf_post(struct ofi_op *op)
{
    struct rbuf *rb = (struct rbuf *)op;
    struct iovec iov = { rb->buf, rb->len };
    struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &op->ctx };
    return fi_recvmsg(hashi_ofi.ep, &msg, FI_MULTI_RECV);
}

/* A receive buffer's error completion (cancelled at finalize, or failed). Out
 * of line: the hot path below then needs no saved registers. */
static __attribute__((noinline, cold)) uint64_t rbuf_failed(const struct fi_cq_err_entry *err)
{
    if (err->err != FI_ECANCELED)
        hashi_log("ofi device: a receive buffer failed: %s",
                  fi_cq_strerror(hashi_ofi.cq, err->prov_errno, err->err_data, NULL, 0));
    return err->flags;
}

static void rbuf_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    uint64_t flags;
    if (__builtin_expect(err == NULL, 1)) {
        flags = e->flags;
        if (__builtin_expect(!(flags & FI_REMOTE_CQ_DATA), 1) || e->data != BATCH_CQ_DATA) {
            if (e->len)
                hashi_am_deliver(e->buf, e->len);
        } else {
            deliver_batch(e->buf, e->len);
        }
    } else {
        flags = rbuf_failed(err);
    }
    /* The provider is done with the buffer and every message in it was consumed. */
    if (flags & FI_MULTI_RECV)
        hashi_ofi_post(op);
}

static const struct ofi_op_class rbuf_class = { "fi_recvmsg (FI_MULTI_RECV)", 1, rbuf_post, rbuf_complete };

/* A poll with batches open: they leave first; what this poll's completions
 * send (ACK, FIN, CTS) leaves before it returns, so a rank that stops
 * polling owes its peers nothing. */
static __attribute__((noinline)) int am_progress_batched(void)
{
    int n = batches_close_all();
    n += hashi_ofi_poll();
    if (am.open_batches)
        n += batches_close_all();
    return n;
}

static int am_progress(void)
{
    am.polls++;
    if (__builtin_expect(am.open_batches != NULL, 0))
        return am_progress_batched();
    int n = hashi_ofi_poll();
    if (__builtin_expect(am.open_batches != NULL, 0))
        n += batches_close_all();
    return n;
}

/* ------------------------------------------------------------ life cycle */

int hashi_ofi_am_init(char *err, size_t errlen)
{
    memset(&am, 0, sizeof am);
    size_t max_send = hashi_ofi.eager_limit + HASHI_AM_HDR_MAX;
    if (max_send < FRAGMENT_MIN)
        max_send = FRAGMENT_MIN;
    am.ops = (struct hashi_am_ops){
        .name = "ofi",
        .max_send = max_send,
        .flags = hashi_ofi.has_rma ? HASHI_AM_CAP_GET : 0,
        .max_get = hashi_ofi.max_xfer,
        .rkey_size = sizeof(struct ofi_rkey),
        .send = am_send,
        .mem_reg = am_mem_reg,
        .mem_dereg = am_mem_dereg,
        .get = am_get,
        .progress = am_progress,
    };
    am.inject_max = hashi_ofi.inject_size < INJECT_STACK ? hashi_ofi.inject_size : INJECT_STACK;

    /* Batches need remote CQ data to mark them; the limit keeps the copies
     * into a batch cheaper than the provider's per-message cost. */
    int64_t coalesce = hashi_param_int(HASHI_P_OFI_COALESCE);
    if (coalesce > 0 && hashi_ofi.info->domain_attr->cq_data_size >= 4) {
        am.coalesce_max = (size_t)coalesce < BATCH_BYTES / 2 ? (size_t)coalesce : BATCH_BYTES / 2;
        am.peers = calloc((size_t)hashi_job.size, sizeof *am.peers);
        if (!am.peers) {
            snprintf(err, errlen, "ofi device: out of memory");
            return -1;
        }
        am.polls = 1;   /* no peer has had a send in the current gap yet */
    }
    /* With coalescing, the hot path only takes messages batch_add would
     * consider, so both keep the same burst state. */
    am.fast_max = am.inject_max < FAST_INJECT ? am.inject_max : FAST_INJECT;
    if (am.coalesce_max && am.fast_max > am.coalesce_max)
        am.fast_max = am.coalesce_max;
    if (am.fast_max) {
        am.ops.stage = am.stage;
        am.ops.stage_max = am.fast_max;
        am.ops.send_staged = am_send_staged;
    }

    const char *rndv = hashi_param_str(HASHI_P_OFI_CORE_RNDV);
    enum hashi_am_rndv mode = strcasecmp(rndv, "get") == 0       ? HASHI_AM_RNDV_GET
                              : strcasecmp(rndv, "chunked") == 0 ? HASHI_AM_RNDV_CHUNKED
                                                                 : HASHI_AM_RNDV_AUTO;
    if (hashi_am_core_init(&am.ops, hashi_ofi.eager_limit, mode, err, errlen) != 0)
        return -1;
    hashi_device_ofi.p2p = hashi_am_p2p_ops;
    return 0;
}

int hashi_ofi_am_connect(char *err, size_t errlen)
{
    /* Every message must fit the space left in a buffer, or the provider
     * releases the buffer and takes the next one. (After fi_enable: shm in
     * libfabric 1.17 crashes on this option before.) */
    /* Room for the largest message any rank sends (eager limits may differ). */
    size_t min_free = hashi_ofi.peer_eager_max + HASHI_AM_HDR_MAX;
    if (min_free < am.ops.max_send)
        min_free = am.ops.max_send;
    am.rbuf_size = 4 * min_free > RBUF_MIN_SIZE ? 4 * min_free : RBUF_MIN_SIZE;
    int rc = fi_setopt(&hashi_ofi.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min_free, sizeof min_free);
    if (rc) {
        snprintf(err, errlen, "ofi device: setting FI_OPT_MIN_MULTI_RECV failed: %s", fi_strerror(-rc));
        return -1;
    }
    for (int i = 0; i < RBUF_COUNT; i++) {
        struct rbuf *rb = &am.rbufs[i];
        rb->buf = malloc(am.rbuf_size);
        if (!rb->buf) {
            snprintf(err, errlen, "ofi device: out of memory for receive buffers");
            return -1;
        }
        rb->len = am.rbuf_size;
        rb->op.cls = &rbuf_class;
        hashi_ofi_post(&rb->op);
    }
    HASHI_DEBUG(1, "ofi device: core matching, %d receive buffers of %zu bytes, messages up to %zu bytes",
                RBUF_COUNT, am.rbuf_size, min_free);
    return 0;
}

void hashi_ofi_am_finalize(void)
{
    hashi_am_core_finalize();
    for (int i = 0; i < RBUF_COUNT; i++)
        free(am.rbufs[i].buf);
    while (am.bounce_free) {
        struct abounce *b = am.bounce_free;
        am.bounce_free = b->next_free;
        free(b);
    }
    while (am.zsend_free) {
        struct azsend *z = am.zsend_free;
        am.zsend_free = z->next_free;
        free(z);
    }
    while (am.read_free) {
        struct aread *r = am.read_free;
        am.read_free = r->next_free;
        free(r);
    }
    /* Open batches are normally empty here: every poll closes them. */
    while (am.open_batches) {
        struct abatch *b = am.open_batches;
        am.open_batches = b->next;
        free(b);
    }
    while (am.batch_free) {
        struct abatch *b = am.batch_free;
        am.batch_free = b->next;
        free(b);
    }
    free(am.peers);
    memset(&am, 0, sizeof am);
}
