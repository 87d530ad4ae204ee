/*
 * The ofi device, tagged matching: MPI point-to-point on libfabric tagged
 * messages, matched by the provider (ofi_tagbits.h has the bit layout).
 *
 * Protocols
 *   eager (<= HASHI_OFI_EAGER_LIMIT): fi_tinject when it fits the provider's
 *     inject size, else a copy in a device bounce buffer; the request
 *     completes as soon as the copy is in the provider's hands (at once,
 *     unless the provider refused it for a moment: shm does on first contact
 *     with a peer until that peer progresses).
 *   synchronous eager: the data goes from the user buffer with the SYNC bit;
 *     the receiver answers ACK after the match; completes on both.
 *   rendezvous (larger): the sender registers its buffer and sends an RTS
 *     (struct ofi_rts) with the RNDV bit; the receiver fi_reads at most its
 *     buffer's worth in pieces of HASHI_OFI_MAX_MSG and answers FIN; the
 *     send completes on FIN (which also proves the match for MPI_Ssend).
 *     So every message the provider carries is at most max(eager limit,
 *     sizeof(struct ofi_rts)) bytes: what lets a probe receive any message
 *     into a bounded device buffer (below).
 *
 * Probe
 *   peek: fi_trecvmsg(FI_PEEK), Mprobe FI_PEEK|FI_CLAIM then an FI_CLAIM
 *     receive (tcp / ofi_rxm).
 *   recv: for providers whose FI_PEEK consumes the message (shm in libfabric
 *     1.17 treats it as a zero-byte receive) or whose FI_CLAIM delivers the
 *     wrong length (udp / ofi_rxd 1.17), a probe receives the message into a
 *     device buffer, keeps it on a "pulled" list, and later receives look
 *     there before posting to the provider. HASHI_OFI_PROBE=auto uses what
 *     the start-up check (ofi_selftest.c) found.
 *
 * Cancelling a send (MPI_Cancel)
 *   A rendezvous or synchronous send names its message by (world rank,
 *   cookie): the RTS carries both, a synchronous message's CQ data too.
 *   Until its FIN / ACK came, the sender can ask the receiver with a CANCEL
 *   (control bits, payload the message's context and source). The receiver
 *   serves it from progress, outside the completion loop: the message is
 *   either matched already (answer NO), on the pulled list, or still
 *   unexpected in the provider, behind the sender's earlier messages on
 *   that context. It pulls that sender's messages on the context, in
 *   arrival order, onto the pulled list until it meets the named one,
 *   which it drops (answer YES; no FIN or ACK follows); finding none means
 *   a receive matched it. A plain eager message carries no name and is
 *   complete once out: it is never cancelled (docs/ofi.md).
 *
 * Receives smaller than an RTS land in a 32-byte buffer inside the request
 * (then copied) so an RTS is never truncated and its sender always gets FIN.
 * Receives smaller than the largest eager message get a second iov into a
 * shared discard area: the provider never truncates, the device does (it
 * reports MPI_ERR_TRUNCATE with exactly the bytes that fit).
 */
#include "device/device.h"
#include "device/common/cookie.h"
#include "device/ofi/ofi.h"
#include "device/ofi/ofi_tagbits.h"
#include "mpi/request.h"
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"

#include <mpi.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

extern struct hashi_device_ops hashi_device_ofi;

#define RTS_SIZE sizeof(struct ofi_rts)

/* ------------------------------------------------------- per-request state */

enum { WAIT_LOCAL = 1, WAIT_ANSWER = 2, WAIT_VERDICT = 4 };

struct tsend {
    struct ofi_op op;        /* synchronous eager data */
    struct ofi_op ctl;       /* receive of the ACK or FIN */
    struct fid_mr *mr;       /* rendezvous: the registered buffer */
    uint32_t cookie;
    uint8_t waiting;         /* WAIT_* */
    uint8_t answer;          /* enum ofi_ctrl_type awaited */
    uint8_t cancel_asked;    /* a CANCEL went to the receiver */
    uint8_t cancelled;       /* the receiver answered YES */
    uint8_t finished;        /* completed (the MPI layer may reopen it for a cancel) */
    int error;
};

struct trecv {
    struct ofi_op op;        /* the receive, then the rendezvous reads */
    unsigned char tiny[RTS_SIZE];
    uint64_t raddr, rkey;    /* rendezvous: the sender's buffer */
    uint64_t size, want, done;
    size_t piece;            /* bytes of the read in flight */
    int32_t peer_world;
    uint32_t peer_cookie;
    int source, tag, error;
    uint8_t use_tiny;        /* buffer smaller than an RTS: receive into tiny */
    uint8_t at_provider;     /* posted (or queued) and not yet matched */
};

_Static_assert(sizeof(struct tsend) <= HASHI_DEVICE_REQ_BYTES, "send state exceeds the request's device bytes");
_Static_assert(sizeof(struct trecv) <= HASHI_DEVICE_REQ_BYTES, "receive state exceeds the request's device bytes");

static inline struct tsend *tsend_of(struct MPI_ABI_Request *req)
{
    return (struct tsend *)(void *)req->dev;
}
static inline struct trecv *trecv_of(struct MPI_ABI_Request *req)
{
    return (struct trecv *)(void *)req->dev;
}
static inline struct MPI_ABI_Request *req_of_dev(void *dev)
{
    return container_of((unsigned char *)dev, struct MPI_ABI_Request, dev);
}

/* ------------------------------------------------------- device-level state */

/* Run once a copied message is in the provider's hands (error 0), or could
 * not be sent (an MPI error class). */
typedef void (*handed_fn)(struct MPI_ABI_Request *req, int error);

/* A copy made by the device: eager data, an RTS, or a zero-byte answer. */
struct bounce {
    struct ofi_op op;
    struct bounce *next_free;
    int dest;
    int pooled;
    int has_data;
    uint64_t bits, data;
    struct MPI_ABI_Request *req;  /* completes when the copy is handed over */
    handed_fn handed;
    size_t len;
    unsigned char bytes[];
};

/* A message the device took from the provider: by a probe (recv probe
 * mode), or while looking for a message a sender cancels. */
struct pulled {
    struct pulled *next, *prev;
    uint64_t bits, data;
    size_t len;
    unsigned char bytes[];
};

/* A peek in flight (iprobe, improbe) and, for Mprobe, the claimed message. */
struct peek {
    struct ofi_op op;
    struct MPI_ABI_Request *req;   /* the Mrecv once it is posted */
    uint64_t bits, ignore;         /* what was asked; then what was found */
    uint64_t data;
    size_t len;
    int claim;
    int state;                     /* PEEK_* */
    struct pulled *pulled;         /* Mprobe found it on the pulled list instead */
};
enum { PEEK_WAITING, PEEK_FOUND, PEEK_NONE, PEEK_CONSUMED };

/* The single device-owned receive that pulls a message from the provider. */
struct probe_slot {
    struct ofi_op op;
    int posted;
    struct pulled *got;     /* what its last completion put on the pulled list */
    unsigned char *buf;
    size_t len;
};

/* A peer's CANCEL, waiting to be served from progress. */
struct peer_cancel {
    struct peer_cancel *next;
    int world;
    uint32_t cookie;
    struct ofi_cancel msg;
};

/* The receive every rank keeps posted for CANCELs. */
struct cancel_listener {
    struct ofi_op op;
    struct ofi_cancel msg;
};

static struct {
    int probe_peek;              /* 1: FI_PEEK works; 0: probe by receiving */
    struct hashi_cookies cookies;
    struct bounce *bounce_free;
    int bounce_cached;
    size_t bounce_size;
    struct pulled *pulled_head, *pulled_tail;
    struct probe_slot probe;
    struct cancel_listener listener;
    struct peer_cancel *cancels_head, *cancels_tail;
    /* Where the part of a message beyond a small receive buffer goes, so the
     * provider never truncates (ofi_rxm 1.17 breaks the connection when it
     * does, libfabric issue 8274). Written, never read: receives share it. */
    unsigned char *sink;
    size_t sink_len;
} tg;

#define BOUNCE_CACHE_MAX 64
/* Bounce buffers are pooled at one size, at most this (bigger copies, with a
 * large HASHI_OFI_EAGER_LIMIT, are allocated to measure). */
#define BOUNCE_POOL_SIZE_MAX (64 * 1024)

/* --------------------------------------------------------------- bounce */

static struct bounce *bounce_get(size_t len)
{
    struct bounce *b;
    if (len <= tg.bounce_size && tg.bounce_free) {
        b = tg.bounce_free;
        tg.bounce_free = b->next_free;
        tg.bounce_cached--;
    } else {
        int pooled = len <= tg.bounce_size;
        b = malloc(sizeof *b + (pooled ? tg.bounce_size : len));
        if (!b)
            return NULL;
        b->pooled = pooled;
    }
    b->len = len;
    b->has_data = 0;
    b->data = 0;
    b->req = NULL;
    b->handed = NULL;
    return b;
}

static void bounce_handed(struct bounce *b, int error)
{
    handed_fn fn = b->handed;
    b->handed = NULL;
    if (fn)
        fn(b->req, error);
}

static void bounce_put(struct bounce *b)
{
    if (b->pooled && tg.bounce_cached < BOUNCE_CACHE_MAX) {
        b->next_free = tg.bounce_free;
        tg.bounce_free = b;
        tg.bounce_cached++;
    } else {
        free(b);
    }
}

static ssize_t bounce_post(struct ofi_op *op)
{
    struct bounce *b = (struct bounce *)op;
    fi_addr_t to = hashi_ofi.peers[b->dest];
    ssize_t rc;
    HASHI_DEBUG(4, "ofi device: buffered send of %zu bytes to rank %d, bits %#llx%s", b->len, b->dest,
                (unsigned long long)b->bits, b->has_data ? " with data" : "");
    if (b->len <= hashi_ofi.inject_size) {
        rc = b->has_data ? fi_tinjectdata(hashi_ofi.ep, b->bytes, b->len, b->data, to, b->bits)
                         : fi_tinject(hashi_ofi.ep, b->bytes, b->len, to, b->bits);
        if (rc == 0) {
            hashi_wake_peer(b->dest);
            bounce_handed(b, MPI_SUCCESS);
            bounce_put(b);  /* injected: no completion follows */
        }
        return rc;
    }
    rc = b->has_data ? fi_tsenddata(hashi_ofi.ep, b->bytes, b->len, NULL, b->data, to, b->bits, &op->ctx)
                     : fi_tsend(hashi_ofi.ep, b->bytes, b->len, NULL, to, b->bits, &op->ctx);
    if (rc == 0) {
        hashi_wake_peer(b->dest);
        bounce_handed(b, MPI_SUCCESS);
    }
    return rc;
}

static void bounce_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct bounce *b = (struct bounce *)op;
    (void)e;
    if (err) {
        hashi_log("ofi device: a buffered send to rank %d failed: %s", b->dest, fi_strerror(err->err));
        bounce_handed(b, MPI_ERR_OTHER);  /* if it never got posted */
    }
    bounce_put(b);
}

static const struct ofi_op_class bounce_class = { "fi_tsend (buffered)", 0, bounce_post, bounce_complete };

/*
 * Send len bytes (copied now) with bits (and CQ data if has_data) to dest.
 * Injected directly when nothing is queued ahead, else through a bounce
 * buffer. handed(req, error), if given, runs once the message is in the
 * provider's hands: at once (before this returns) or from progress when the
 * provider refused it for a while. A request completes only then, so a rank
 * whose requests are all complete leaves nothing behind in the device's
 * queues (MPI_Finalize may stop progressing it). Returns 0 or an MPI error
 * class (then handed is not called).
 */
static int send_copied(int dest, uint64_t bits, const void *buf, size_t len, int has_data, uint64_t data,
                       struct MPI_ABI_Request *req, handed_fn handed)
{
    if (len <= hashi_ofi.inject_size && hashi_ofi_queue_empty(0)) {
        fi_addr_t to = hashi_ofi.peers[dest];
        ssize_t rc = has_data ? fi_tinjectdata(hashi_ofi.ep, buf, len, data, to, bits)
                              : fi_tinject(hashi_ofi.ep, buf, len, to, bits);
        if (rc == 0) {
            hashi_wake_peer(dest);
            if (handed)
                handed(req, MPI_SUCCESS);
            return MPI_SUCCESS;
        }
        if (rc != -FI_EAGAIN) {
            hashi_ofi_warn("fi_tinject", rc);
            return MPI_ERR_OTHER;
        }
        hashi_ofi.eagain_count++;
    }
    struct bounce *b = bounce_get(len);
    if (!b)
        return MPI_ERR_NO_MEM;
    b->op.cls = &bounce_class;
    b->dest = dest;
    b->bits = bits;
    b->has_data = has_data;
    b->data = data;
    b->req = req;
    b->handed = handed;
    if (len)
        memcpy(b->bytes, buf, len);
    hashi_ofi_post(&b->op);
    return MPI_SUCCESS;
}

/* ACK or FIN to the sender; handed(req) completes the receive that owes it. */
static void send_answer(int dest, enum ofi_ctrl_type type, uint32_t cookie, struct MPI_ABI_Request *req,
                        handed_fn handed)
{
    if (dest < 0 || dest >= hashi_job.size) {
        hashi_log("ofi device: a message asks for an answer to rank %d, outside the job", dest);
        handed(req, MPI_SUCCESS);
        return;
    }
    if (send_copied(dest, ofi_tb_ctrl(type, hashi_job.rank, cookie), NULL, 0, 0, 0, req, handed) != MPI_SUCCESS) {
        hashi_log("ofi device: answering rank %d failed; its send will not complete", dest);
        handed(req, MPI_SUCCESS);  /* the receive itself has its data */
    }
}

/* --------------------------------------------------------------- sends */

static void tsend_finish(struct MPI_ABI_Request *req)
{
    struct tsend *s = tsend_of(req);
    if (s->mr)
        fi_close(&s->mr->fid);
    s->mr = NULL;
    if (s->cookie)
        hashi_cookie_free(&tg.cookies, s->cookie);
    s->cookie = 0;
    s->finished = 1;
    req->status.MPI_ERROR = s->error;
    hashi_status_set_cancelled(&req->status, s->cancelled);
    hashi_request_complete(req);
}

static void tsend_progressed(struct MPI_ABI_Request *req, uint8_t cleared)
{
    struct tsend *s = tsend_of(req);
    s->waiting &= (uint8_t)~cleared;
    if (!s->waiting)
        tsend_finish(req);
}

static ssize_t sync_data_post(struct ofi_op *op)
{
    struct MPI_ABI_Request *req = req_of_dev(op);
    struct tsend *s = tsend_of(req);
    uint64_t bits = ofi_tb_user(req->context_id, req->my_comm_rank, req->tag) | OFI_TB_SYNC;
    uint64_t data = (uint64_t)(uint32_t)hashi_job.rank << 32 | s->cookie;
    ssize_t rc = fi_tsenddata(hashi_ofi.ep, req->dev_buf, req->dev_bytes, NULL, data,
                              hashi_ofi.peers[req->dest_world], bits, &op->ctx);
    if (rc == 0)
        hashi_wake_peer(req->dest_world);
    return rc;
}

static void sync_data_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct MPI_ABI_Request *req = req_of_dev(op);
    (void)e;
    if (err) {
        hashi_log("ofi device: synchronous send to rank %d failed: %s", req->dest_world, fi_strerror(err->err));
        tsend_of(req)->error = MPI_ERR_OTHER;
    }
    tsend_progressed(req, WAIT_LOCAL);
}

static const struct ofi_op_class sync_data_class = { "fi_tsenddata (synchronous)", 0, sync_data_post,
                                                     sync_data_complete };

static ssize_t answer_recv_post(struct ofi_op *op)
{
    struct tsend *s = container_of(op, struct tsend, ctl);
    struct MPI_ABI_Request *req = req_of_dev(s);
    uint64_t bits = ofi_tb_ctrl(s->answer, req->dest_world, s->cookie);
    return fi_trecv(hashi_ofi.ep, NULL, 0, NULL, FI_ADDR_UNSPEC, bits, 0, &op->ctx);
}

static void answer_recv_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e,
                                 const struct fi_cq_err_entry *err)
{
    struct tsend *s = container_of(op, struct tsend, ctl);
    struct MPI_ABI_Request *req = req_of_dev(s);
    (void)e;
    if (err && !(err->err == FI_ECANCELED && s->cancelled)) {   /* withdrawn after a YES: no answer comes */
        hashi_log("ofi device: waiting for rank %d's %s failed: %s", req->dest_world,
                  s->answer == OFI_CTRL_FIN ? "FIN" : "ACK", fi_strerror(err->err));
        s->error = MPI_ERR_OTHER;
    }
    tsend_progressed(req, WAIT_ANSWER);
}

static const struct ofi_op_class answer_recv_class = { "fi_trecv (ACK/FIN)", 1, answer_recv_post,
                                                       answer_recv_complete };

/* An eager copy reached the provider: the send is complete. */
static void eager_handed(struct MPI_ABI_Request *req, int error)
{
    tsend_of(req)->error = error;
    tsend_finish(req);
}

static int check_send(const struct MPI_ABI_Request *req)
{
    if (req->tag < 0 || req->tag > OFI_TAG_UB)
        return MPI_ERR_TAG;
    if (req->my_comm_rank < 0 || req->my_comm_rank > OFI_MAX_SOURCE)
        return MPI_ERR_RANK;
    if (req->dest_world < 0 || req->dest_world >= hashi_job.size)
        return MPI_ERR_RANK;
    if (req->context_id > OFI_MAX_CONTEXT)
        return MPI_ERR_INTERN;
    return MPI_SUCCESS;
}

static int t_isend(struct MPI_ABI_Request *req)
{
    int rc = check_send(req);
    if (rc != MPI_SUCCESS)
        return rc;
    struct tsend *s = tsend_of(req);
    s->mr = NULL;
    s->cookie = 0;
    s->waiting = 0;
    s->cancel_asked = 0;
    s->cancelled = 0;
    s->finished = 0;
    s->error = MPI_SUCCESS;
    uint64_t bits = ofi_tb_user(req->context_id, req->my_comm_rank, req->tag);
    size_t len = req->dev_bytes;

    if (len <= hashi_ofi.eager_limit && req->send_mode != HASHI_SEND_SYNC)
        return send_copied(req->dest_world, bits, req->dev_buf, len, 0, 0, req, eager_handed);

    s->cookie = hashi_cookie_new(&tg.cookies, req);
    if (!s->cookie)
        return MPI_ERR_NO_MEM;
    struct ofi_rts rts;
    if (len > hashi_ofi.eager_limit) {
        int frc = hashi_ofi_mr_reg(req->dev_buf, len, &s->mr, &rts.raddr, &rts.key);
        if (frc) {
            hashi_ofi_warn("fi_mr_reg", frc);
            hashi_cookie_free(&tg.cookies, s->cookie);
            s->cookie = 0;
            return MPI_ERR_OTHER;
        }
        s->answer = OFI_CTRL_FIN;
    } else {
        s->answer = OFI_CTRL_ACK;
    }
    /* Post the answer's receive first, so the answer never waits unexpected. */
    s->waiting = WAIT_ANSWER;
    s->ctl.cls = &answer_recv_class;
    hashi_ofi_post(&s->ctl);

    if (s->answer == OFI_CTRL_ACK) {
        s->waiting |= WAIT_LOCAL;
        s->op.cls = &sync_data_class;
        hashi_ofi_post(&s->op);
        return MPI_SUCCESS;
    }
    rts.size = len;
    rts.world = hashi_job.rank;
    rts.cookie = s->cookie;
    if (send_copied(req->dest_world, bits | OFI_TB_RNDV, &rts, sizeof rts, 1, len, NULL, NULL) != MPI_SUCCESS) {
        /* No FIN will come: withdraw its receive, which completes the request with the error. */
        hashi_log("ofi device: sending a rendezvous request to rank %d failed", req->dest_world);
        s->error = MPI_ERR_OTHER;
        if (hashi_ofi_unqueue(&s->ctl))
            tsend_progressed(req, WAIT_ANSWER);
        else if (fi_cancel(&hashi_ofi.ep->fid, &s->ctl.ctx) != 0)
            hashi_log("ofi device: withdrawing the FIN receive failed; the send stays incomplete");
    }
    return MPI_SUCCESS;  /* the answer receive owns the request now */
}

/* MPI_Send / MPI_Isend of an eager message: the same tagged message
 * t_isend sends, injected or copied into a bounce buffer, so the send is
 * complete at once and needs no request. */
static int t_send_now(const void *buf, size_t len, int dest_world, int tag, uint32_t context_id, int my_comm_rank)
{
    if (len > hashi_ofi.eager_limit)
        return HASHI_DEVICE_P2P_DECLINE;
    if (tag < 0 || tag > OFI_TAG_UB)
        return MPI_ERR_TAG;
    if (my_comm_rank < 0 || my_comm_rank > OFI_MAX_SOURCE || dest_world < 0 || dest_world >= hashi_job.size)
        return MPI_ERR_RANK;
    if (context_id > OFI_MAX_CONTEXT)
        return MPI_ERR_INTERN;
    return send_copied(dest_world, ofi_tb_user(context_id, my_comm_rank, tag), buf, len, 0, 0, NULL, NULL);
}

/* The receiver's answer to a CANCEL (or the receive withdrawn because the
 * CANCEL could not be sent: then as NO). After YES no FIN or ACK comes:
 * their receive is withdrawn, and the send completes cancelled once that
 * and its own data send are done. */
/* The receive of a verdict: apart from the send's state, which has no room
 * for a third operation (cancels are rare). */
struct verdict_recv {
    struct ofi_op op;
    struct MPI_ABI_Request *req;
};

static void verdict_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct verdict_recv *v = container_of(op, struct verdict_recv, op);
    struct MPI_ABI_Request *req = v->req;
    struct tsend *s = tsend_of(req);
    free(v);
    if (err) {
        if (err->err != FI_ECANCELED)
            hashi_log("ofi device: waiting for rank %d's answer to a cancel failed: %s", req->dest_world,
                      fi_strerror(err->err));
    } else if (ofi_tb_ctrl_type(e->tag) == OFI_CTRL_CANCEL_YES) {
        s->cancelled = 1;
        if (hashi_ofi_unqueue(&s->ctl)) {
            s->waiting &= (uint8_t)~WAIT_ANSWER;
        } else {
            /* Its FI_ECANCELED completion clears WAIT_ANSWER. */
            ssize_t rc = fi_cancel(&hashi_ofi.ep->fid, &s->ctl.ctx);
            if (rc != 0) {
                hashi_ofi_warn("fi_cancel (ACK/FIN receive)", rc);
                s->waiting &= (uint8_t)~WAIT_ANSWER;   /* completes; its receive stays posted, never matched */
            }
        }
    }
    tsend_progressed(req, WAIT_VERDICT);
}

static ssize_t verdict_post(struct ofi_op *op)
{
    struct MPI_ABI_Request *req = container_of(op, struct verdict_recv, op)->req;
    const struct tsend *s = tsend_of(req);
    uint64_t bits = ofi_tb_ctrl(OFI_CTRL_CANCEL_NO, req->dest_world, s->cookie);
    return fi_trecv(hashi_ofi.ep, NULL, 0, NULL, FI_ADDR_UNSPEC, bits, OFI_TB_CTRL_VERDICT_BIT, &op->ctx);
}

static const struct ofi_op_class verdict_class = { "fi_trecv (cancel verdict)", 1, verdict_post, verdict_complete };

/*
 * MPI_Cancel of a send. Rendezvous and synchronous sends still waiting for
 * their FIN / ACK ask the receiver (returns 1); everything else completes
 * as it would (returns 0): an eager message is out and unnamed, a matched
 * one has its answer, and a send completed before (reopened by the MPI
 * layer) completes again at once, not cancelled.
 */
static int t_cancel_send(struct MPI_ABI_Request *req)
{
    struct tsend *s = tsend_of(req);
    if (s->finished) {
        tsend_finish(req);
        return 0;
    }
    if (!(s->waiting & WAIT_ANSWER) || s->cancel_asked)
        return 0;
    struct verdict_recv *v = malloc(sizeof *v);
    if (!v)
        return 0;   /* not asked: the send completes normally */
    v->op.cls = &verdict_class;
    v->req = req;
    s->cancel_asked = 1;
    s->waiting |= WAIT_VERDICT;
    hashi_ofi_post(&v->op);
    struct ofi_cancel msg = { .context_id = req->context_id, .source = req->my_comm_rank };
    if (send_copied(req->dest_world, ofi_tb_ctrl(OFI_CTRL_CANCEL, hashi_job.rank, s->cookie), &msg, sizeof msg, 0,
                    0, NULL, NULL) == MPI_SUCCESS)
        return 1;
    hashi_log("ofi device: asking rank %d to cancel a message failed; the send completes normally", req->dest_world);
    if (hashi_ofi_unqueue(&v->op)) {
        free(v);
        tsend_progressed(req, WAIT_VERDICT);
    } else if (fi_cancel(&hashi_ofi.ep->fid, &v->op.ctx) != 0) {
        s->waiting &= (uint8_t)~WAIT_VERDICT;   /* no verdict comes (v stays posted); FIN / ACK still do */
    }
    return 0;
}

/* ------------------------------------------------------------ receives */

static void trecv_finish(struct MPI_ABI_Request *req, uint64_t bytes, int error)
{
    struct trecv *r = trecv_of(req);
    r->at_provider = 0;
    req->status.MPI_SOURCE = r->source;
    req->status.MPI_TAG = r->tag;
    req->status.MPI_ERROR = error;
    hashi_status_set_bytes(&req->status, bytes);
    hashi_status_set_cancelled(&req->status, 0);
    hashi_request_complete(req);
}

static void trecv_cancelled(struct MPI_ABI_Request *req)
{
    struct trecv *r = trecv_of(req);
    r->at_provider = 0;
    req->status.MPI_SOURCE = MPI_ANY_SOURCE;
    req->status.MPI_TAG = MPI_ANY_TAG;
    req->status.MPI_ERROR = MPI_SUCCESS;
    hashi_status_set_bytes(&req->status, 0);
    hashi_status_set_cancelled(&req->status, 1);
    hashi_request_complete(req);
}

/* The answer a receive owed is in the provider's hands: the receive is
 * complete, with the byte count and error kept in want / error. */
static void answered(struct MPI_ABI_Request *req, int error)
{
    struct trecv *r = trecv_of(req);
    (void)error;  /* the data is here either way; send_answer logged a failure */
    trecv_finish(req, r->want, r->error);
}

static void rndv_finish(struct MPI_ABI_Request *req)
{
    struct trecv *r = trecv_of(req);
    if (r->error)
        r->want = 0;
    else if (r->size > r->want)
        r->error = MPI_ERR_TRUNCATE;
    send_answer(r->peer_world, OFI_CTRL_FIN, r->peer_cookie, req, answered);
}

static ssize_t read_post(struct ofi_op *op)
{
    struct MPI_ABI_Request *req = req_of_dev(op);
    struct trecv *r = trecv_of(req);
    ssize_t rc = fi_read(hashi_ofi.ep, (char *)req->dev_buf + r->done, r->piece, NULL,
                         hashi_ofi.peers[r->peer_world], r->raddr + r->done, r->rkey, &op->ctx);
    /* Some providers serve a read with the target's help (a sleeping target must wake). */
    if (rc == 0)
        hashi_wake_peer(r->peer_world);
    return rc;
}

static void read_next(struct MPI_ABI_Request *req);

static void read_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct MPI_ABI_Request *req = req_of_dev(op);
    struct trecv *r = trecv_of(req);
    (void)e;
    if (err) {
        hashi_log("ofi device: reading %zu bytes of a rendezvous message from rank %d failed: %s", r->piece,
                  r->peer_world, fi_strerror(err->err));
        r->error = MPI_ERR_OTHER;
        rndv_finish(req);
        return;
    }
    r->done += r->piece;
    read_next(req);
}

static const struct ofi_op_class read_class = { "fi_read", 0, read_post, read_complete };

static void read_next(struct MPI_ABI_Request *req)
{
    struct trecv *r = trecv_of(req);
    if (r->done >= r->want) {
        rndv_finish(req);
        return;
    }
    uint64_t left = r->want - r->done;
    r->piece = left < hashi_ofi.max_xfer ? (size_t)left : hashi_ofi.max_xfer;
    r->op.cls = &read_class;
    hashi_ofi_post(&r->op);
}

/*
 * A message reached req: bits / data from the completion, its payload at
 * copy_from (a device buffer) or already in req->dev_buf (copy_from NULL),
 * len bytes of it there; truncated if the provider cut it.
 */
static void deliver(struct MPI_ABI_Request *req, uint64_t bits, uint64_t data, const void *copy_from, size_t len,
                    int truncated)
{
    struct trecv *r = trecv_of(req);
    r->at_provider = 0;
    r->source = ofi_tb_source(bits);
    r->tag = ofi_tb_tag(bits);
    if (bits & OFI_TB_RNDV) {
        struct ofi_rts rts;
        if (len < sizeof rts || truncated) {
            hashi_log("ofi device: malformed rendezvous request from source %d", r->source);
            trecv_finish(req, 0, MPI_ERR_INTERN);
            return;
        }
        memcpy(&rts, copy_from ? copy_from : req->dev_buf, sizeof rts);
        r->raddr = rts.raddr;
        r->rkey = rts.key;
        r->size = rts.size;
        r->peer_world = rts.world;
        r->peer_cookie = rts.cookie;
        r->want = rts.size < req->dev_bytes ? rts.size : req->dev_bytes;
        r->done = 0;
        r->error = 0;
        if (rts.world < 0 || rts.world >= hashi_job.size) {
            hashi_log("ofi device: rendezvous request names rank %d, outside the job", rts.world);
            trecv_finish(req, 0, MPI_ERR_INTERN);
            return;
        }
        read_next(req);
        return;
    }
    size_t n = len;
    if (len > req->dev_bytes) {
        n = req->dev_bytes;  /* the rest went to the sink, or was never kept */
        truncated = 1;
    }
    if (copy_from && n)
        memcpy(req->dev_buf, copy_from, n);
    if (bits & OFI_TB_SYNC) {
        r->want = n;
        r->error = truncated ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
        send_answer((int)(data >> 32), OFI_CTRL_ACK, (uint32_t)data, req, answered);
        return;
    }
    trecv_finish(req, n, truncated ? MPI_ERR_TRUNCATE : MPI_SUCCESS);
}

/* A receive's completion (plain or FI_CLAIM). */
static void recv_landed(struct MPI_ABI_Request *req, const struct fi_cq_tagged_entry *e,
                        const struct fi_cq_err_entry *err)
{
    struct trecv *r = trecv_of(req);
    const void *from = r->use_tiny ? r->tiny : NULL;
    if (!err) {
        /* With the tiny buffer only its 32 bytes are worth copying; deliver
         * still sees the full length to report truncation. */
        deliver(req, e->tag, e->data, from, e->len, 0);
        return;
    }
    if (err->err == FI_ECANCELED) {
        trecv_cancelled(req);
        return;
    }
    if (err->err == FI_ETRUNC) {
        /* len is what landed; ofi_rxm reports the message's length instead
         * (and 0 when it dropped an unexpected message's data): clamp it. */
        size_t posted = r->use_tiny ? sizeof r->tiny : req->dev_bytes;
        deliver(req, err->tag, err->data, from, err->len < posted ? err->len : posted, 1);
        return;
    }
    hashi_log("ofi device: a receive failed: %s",
              fi_cq_strerror(hashi_ofi.cq, err->prov_errno, err->err_data, NULL, 0));
    r->source = MPI_ANY_SOURCE;
    r->tag = MPI_ANY_TAG;
    trecv_finish(req, 0, MPI_ERR_OTHER);
}

static void recv_bits(const struct MPI_ABI_Request *req, uint64_t *bits, uint64_t *ignore)
{
    ofi_tb_recv(req->match.context_id, req->match.source, req->match.tag, bits, ignore);
}

/* The buffers a receive posts: its own (or the request's tiny buffer), then
 * the sink up to the largest eager message any rank sends. */
static size_t recv_iov(struct MPI_ABI_Request *req, struct iovec iov[2])
{
    struct trecv *r = trecv_of(req);
    iov[0].iov_base = r->use_tiny ? r->tiny : req->dev_buf;
    iov[0].iov_len = r->use_tiny ? sizeof r->tiny : req->dev_bytes;
    if (iov[0].iov_len >= tg.sink_len)
        return 1;
    iov[1].iov_base = tg.sink;
    iov[1].iov_len = tg.sink_len - iov[0].iov_len;
    return 2;
}

static ssize_t recv_post(struct ofi_op *op)
{
    struct MPI_ABI_Request *req = req_of_dev(op);
    struct trecv *r = trecv_of(req);
    uint64_t bits, ignore;
    recv_bits(req, &bits, &ignore);
    struct iovec iov[2];
    size_t count = recv_iov(req, iov);
    HASHI_DEBUG(4, "ofi device: receive of %zu bytes%s, bits %#llx ignore %#llx", req->dev_bytes,
                r->use_tiny ? " (into the request)" : "", (unsigned long long)bits, (unsigned long long)ignore);
    return fi_trecvv(hashi_ofi.ep, iov, NULL, count, FI_ADDR_UNSPEC, bits, ignore, &op->ctx);
}

static void recv_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    recv_landed(req_of_dev(op), e, err);
}

static const struct ofi_op_class recv_class = { "fi_trecv", 1, recv_post, recv_complete };

static int check_match(const struct hashi_match *m)
{
    if (m->tag != MPI_ANY_TAG && (m->tag < 0 || m->tag > OFI_TAG_UB))
        return MPI_ERR_TAG;
    if (m->source != MPI_ANY_SOURCE && (m->source < 0 || m->source > OFI_MAX_SOURCE))
        return MPI_ERR_RANK;
    if (m->context_id > OFI_MAX_CONTEXT)
        return MPI_ERR_INTERN;
    return MPI_SUCCESS;
}

/* ------------------------------------------------ pulled messages (recv probe) */

static void pulled_unlink(struct pulled *p)
{
    if (p->prev) p->prev->next = p->next; else tg.pulled_head = p->next;
    if (p->next) p->next->prev = p->prev; else tg.pulled_tail = p->prev;
}

static struct pulled *pulled_find(const struct hashi_match *m, int remove)
{
    uint64_t bits, ignore;
    ofi_tb_recv(m->context_id, m->source, m->tag, &bits, &ignore);
    for (struct pulled *p = tg.pulled_head; p; p = p->next) {
        if (!ofi_tb_matches(p->bits, bits, ignore))
            continue;
        if (remove)
            pulled_unlink(p);
        return p;
    }
    return NULL;
}

static ssize_t probe_slot_post(struct ofi_op *op)
{
    (void)op;
    return -FI_EINVAL;  /* posted directly by pull_one, never queued */
}

static void probe_slot_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e,
                                const struct fi_cq_err_entry *err)
{
    struct probe_slot *ps = container_of(op, struct probe_slot, op);
    ps->posted = 0;
    if (err) {
        if (err->err != FI_ECANCELED)
            hashi_log("ofi device: a probe receive failed: %s (a message may be lost; are the ranks' "
                      "HASHI_OFI_EAGER_LIMIT settings equal?)", fi_strerror(err->err));
        return;
    }
    struct pulled *p = malloc(sizeof *p + e->len);
    if (!p) {
        hashi_log("ofi device: out of memory keeping a probed message of %zu bytes", e->len);
        abort();
    }
    p->bits = e->tag;
    p->data = e->data;
    p->len = e->len;
    memcpy(p->bytes, ps->buf, e->len);
    ps->got = p;
    p->next = NULL;
    p->prev = tg.pulled_tail;
    if (tg.pulled_tail)
        tg.pulled_tail->next = p;
    else
        tg.pulled_head = p;
    tg.pulled_tail = p;
}

static const struct ofi_op_class probe_slot_class = { "fi_trecv (probe)", 1, probe_slot_post, probe_slot_complete };

/* Whether every receive posted before now is in the provider's hands. */
static int rx_settled(void)
{
    if (hashi_ofi_queue_empty(1))
        return 1;
    hashi_ofi_progress();
    return hashi_ofi_queue_empty(1);
}

/* Take one message matching (bits, ignore) from the provider onto the
 * pulled list, if one is there, and return it (else NULL). Posted receives
 * come first in the provider's order, so this only takes messages nobody
 * else was waiting for. */
static struct pulled *pull_bits(uint64_t bits, uint64_t ignore)
{
    struct probe_slot *ps = &tg.probe;
    if (ps->posted)
        return NULL;
    ps->got = NULL;
    ps->op.cls = &probe_slot_class;
    ssize_t rc = fi_trecv(hashi_ofi.ep, ps->buf, ps->len, NULL, FI_ADDR_UNSPEC, bits, ignore, &ps->op.ctx);
    if (rc != 0) {
        if (rc != -FI_EAGAIN)
            hashi_ofi_warn("fi_trecv (probe)", rc);
        return NULL;
    }
    ps->posted = 1;
    for (int i = 0; i < 2 && ps->posted; i++)
        hashi_ofi_progress();
    if (!ps->posted)
        return ps->got;
    rc = fi_cancel(&hashi_ofi.ep->fid, &ps->op.ctx);
    if (rc != 0) {
        /* Left posted, it keeps the next matching message for the pulled list. */
        hashi_ofi_warn("fi_cancel (probe)", rc);
        return NULL;
    }
    /* The cancel or the receive's own completion arrives right away. */
    for (int i = 0; i < 1000000 && ps->posted; i++)
        hashi_ofi_progress();
    return ps->posted ? NULL : ps->got;
}

static void pull_one(const struct hashi_match *m)
{
    uint64_t bits, ignore;
    ofi_tb_recv(m->context_id, m->source, m->tag, &bits, &ignore);
    (void)pull_bits(bits, ignore);
}

/* ------------------------------------------------- a peer's send cancel */

/* Whether p is the message (world, cookie) names: an RTS or a synchronous
 * eager message (plain eager messages carry no name). */
static int pulled_is(const struct pulled *p, int world, uint32_t cookie)
{
    if (p->bits & OFI_TB_RNDV) {
        struct ofi_rts rts;
        if (p->len < sizeof rts)
            return 0;
        memcpy(&rts, p->bytes, sizeof rts);
        return rts.world == world && rts.cookie == cookie;
    }
    return (p->bits & OFI_TB_SYNC) && p->data == ((uint64_t)(uint32_t)world << 32 | cookie);
}

/*
 * Withdraw the message a CANCEL names; 1 if it was dropped, 0 if a receive
 * matched it. The provider keeps a sender's messages in order, and the
 * message left before its CANCEL, so it is matched, on the pulled list, or
 * unexpected in the provider. Messages pulled on the way keep their order:
 * all of that sender's on that context go, oldest first, to the pulled
 * list, where receives and probes look before the provider.
 */
static int withdraw(const struct peer_cancel *pc)
{
    for (struct pulled *p = tg.pulled_head; p; p = p->next)
        if (pulled_is(p, pc->world, pc->cookie)) {
            pulled_unlink(p);
            free(p);
            return 1;
        }
    if (pc->msg.context_id > OFI_MAX_CONTEXT || pc->msg.source < 0 || pc->msg.source > OFI_MAX_SOURCE)
        return 0;
    uint64_t bits, ignore;
    ofi_tb_recv(pc->msg.context_id, pc->msg.source, MPI_ANY_TAG, &bits, &ignore);
    struct pulled *p;
    while ((p = pull_bits(bits, ignore)) != NULL)
        if (pulled_is(p, pc->world, pc->cookie)) {
            pulled_unlink(p);
            free(p);
            return 1;
        }
    return 0;
}

/* Answer the CANCELs that came, from progress (pulling runs progress
 * itself, which the completion loop must not). A receive the provider
 * refused for now could be the one that matches: wait until it is posted. */
static int serve_cancels(void)
{
    int served = 0;
    while (tg.cancels_head && rx_settled()) {
        struct peer_cancel *pc = tg.cancels_head;
        tg.cancels_head = pc->next;
        if (!tg.cancels_head)
            tg.cancels_tail = NULL;
        if (pc->world < 0 || pc->world >= hashi_job.size) {
            hashi_log("ofi device: a send cancel names rank %d, outside the job", pc->world);
            free(pc);
            continue;
        }
        int yes = withdraw(pc);
        HASHI_DEBUG(4, "ofi device: rank %d cancels message %u: %s", pc->world, pc->cookie, yes ? "yes" : "no");
        if (send_copied(pc->world, ofi_tb_ctrl(yes ? OFI_CTRL_CANCEL_YES : OFI_CTRL_CANCEL_NO, hashi_job.rank,
                                               pc->cookie), NULL, 0, 0, 0, NULL, NULL) != MPI_SUCCESS)
            hashi_log("ofi device: answering rank %d's cancel failed; its send will not complete", pc->world);
        free(pc);
        served++;
    }
    return served;
}

static ssize_t listener_post(struct ofi_op *op)
{
    struct cancel_listener *l = container_of(op, struct cancel_listener, op);
    return fi_trecv(hashi_ofi.ep, &l->msg, sizeof l->msg, NULL, FI_ADDR_UNSPEC, ofi_tb_ctrl(OFI_CTRL_CANCEL, 0, 0),
                    OFI_TB_CTRL_PEER_MASK, &op->ctx);
}

static void listener_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct cancel_listener *l = container_of(op, struct cancel_listener, op);
    if (err) {
        if (err->err == FI_ECANCELED)
            return;
        hashi_log("ofi device: receiving a send cancel failed: %s", fi_strerror(err->err));
    } else {
        struct peer_cancel *pc = malloc(sizeof *pc);
        if (!pc) {
            hashi_log("ofi device: out of memory keeping a send cancel");
            abort();
        }
        pc->next = NULL;
        pc->world = ofi_tb_ctrl_world(e->tag);
        pc->cookie = (uint32_t)e->tag;
        pc->msg = l->msg;
        if (e->len < sizeof l->msg)
            pc->msg.source = -1;   /* malformed: answered NO */
        if (tg.cancels_tail)
            tg.cancels_tail->next = pc;
        else
            tg.cancels_head = pc;
        tg.cancels_tail = pc;
    }
    hashi_ofi_post(op);
}

static const struct ofi_op_class listener_class = { "fi_trecv (send cancels)", 1, listener_post, listener_complete };

/* ------------------------------------------------------------- peek */

static ssize_t peek_post_flags(struct peek *pk, uint64_t flags, struct iovec *iov, size_t count)
{
    struct fi_msg_tagged msg = {
        .msg_iov = count ? iov : NULL,
        .iov_count = count,
        .addr = FI_ADDR_UNSPEC,
        .tag = pk->bits,
        .ignore = pk->ignore,
        .context = &pk->op.ctx,
    };
    return fi_trecvmsg(hashi_ofi.ep, &msg, flags);
}

static ssize_t peek_post(struct ofi_op *op)
{
    (void)op;
    return -FI_EINVAL;  /* posted directly by do_peek, never queued */
}

static void peek_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err)
{
    struct peek *pk = container_of(op, struct peek, op);
    if (!err) {
        pk->bits = e->tag;
        pk->data = e->data;
        pk->len = e->len;
        pk->state = PEEK_FOUND;
    } else if (err->err == FI_ENOMSG) {
        pk->state = PEEK_NONE;
    } else {
        /* A provider that consumed the message instead of peeking at it. */
        pk->bits = err->tag;
        pk->state = PEEK_CONSUMED;
    }
}

static const struct ofi_op_class peek_class = { "fi_trecvmsg (FI_PEEK)", 1, peek_post, peek_complete };

/* Peek (and claim) once; 0 when the answer is in pk->state, -1 if the provider refused. */
static int do_peek(struct peek *pk, int claim)
{
    pk->op.cls = &peek_class;
    pk->state = PEEK_WAITING;
    pk->claim = claim;
    ssize_t rc = -FI_EAGAIN;
    for (int i = 0; i < 100 && rc == -FI_EAGAIN; i++) {
        rc = peek_post_flags(pk, FI_PEEK | (claim ? FI_CLAIM : 0), NULL, 0);
        if (rc == -FI_EAGAIN)
            hashi_ofi_progress();
    }
    if (rc != 0) {
        if (rc != -FI_EAGAIN)
            hashi_ofi_warn("fi_trecvmsg (FI_PEEK)", rc);
        return -1;
    }
    while (pk->state == PEEK_WAITING)
        hashi_ofi_progress();
    return 0;
}

static ssize_t claim_recv_post(struct ofi_op *op)
{
    struct peek *pk = container_of(op, struct peek, op);
    struct iovec iov[2];
    size_t count = recv_iov(pk->req, iov);
    return peek_post_flags(pk, FI_CLAIM, iov, count);
}

static void claim_recv_complete(struct ofi_op *op, const struct fi_cq_tagged_entry *e,
                                const struct fi_cq_err_entry *err)
{
    struct peek *pk = container_of(op, struct peek, op);
    struct MPI_ABI_Request *req = pk->req;
    free(pk);
    recv_landed(req, e, err);
}

static const struct ofi_op_class claim_recv_class = { "fi_trecvmsg (FI_CLAIM)", 1, claim_recv_post,
                                                      claim_recv_complete };

static void envelope_of(uint64_t bits, uint64_t data, size_t len, struct hashi_envelope *env)
{
    if (!env)
        return;
    env->source = ofi_tb_source(bits);
    env->tag = ofi_tb_tag(bits);
    env->bytes = bits & OFI_TB_RNDV ? data : len;
}

static void pulled_envelope(const struct pulled *p, struct hashi_envelope *env)
{
    envelope_of(p->bits, p->data, p->len, env);
    if (env && (p->bits & OFI_TB_RNDV) && p->len >= RTS_SIZE) {
        struct ofi_rts rts;
        memcpy(&rts, p->bytes, sizeof rts);
        env->bytes = rts.size;
    }
}

/* ------------------------------------------------------ p2p entry points */

static int t_irecv(struct MPI_ABI_Request *req)
{
    int rc = check_match(&req->match);
    if (rc != MPI_SUCCESS)
        return rc;
    struct trecv *r = trecv_of(req);
    r->error = 0;
    r->at_provider = 0;
    r->use_tiny = req->dev_bytes < sizeof r->tiny;
    if (tg.pulled_head) {
        struct pulled *p = pulled_find(&req->match, 1);
        if (p) {
            deliver(req, p->bits, p->data, p->bytes, p->len, 0);
            free(p);
            return MPI_SUCCESS;
        }
    }
    r->at_provider = 1;
    r->op.cls = &recv_class;
    hashi_ofi_post(&r->op);
    return MPI_SUCCESS;
}

static int t_iprobe(const struct hashi_match *m, int *flag, struct hashi_envelope *env)
{
    int rc = check_match(m);
    *flag = 0;
    if (rc != MPI_SUCCESS)
        return rc;
    hashi_ofi_progress();
    if (!tg.probe_peek) {
        struct pulled *p = pulled_find(m, 0);
        if (!p && rx_settled()) {
            pull_one(m);
            p = pulled_find(m, 0);
        }
        if (p) {
            *flag = 1;
            pulled_envelope(p, env);
        }
        return MPI_SUCCESS;
    }
    /* Messages pulled for a send cancel precede their sender's in the provider. */
    struct pulled *p = tg.pulled_head ? pulled_find(m, 0) : NULL;
    if (p) {
        *flag = 1;
        pulled_envelope(p, env);
        return MPI_SUCCESS;
    }
    if (!rx_settled())
        return MPI_SUCCESS;
    struct peek pk;
    ofi_tb_recv(m->context_id, m->source, m->tag, &pk.bits, &pk.ignore);
    if (do_peek(&pk, 0) == 0 && pk.state == PEEK_FOUND) {
        *flag = 1;
        envelope_of(pk.bits, pk.data, pk.len, env);
    }
    return MPI_SUCCESS;
}

static int t_improbe(const struct hashi_match *m, int *flag, struct hashi_envelope *env,
                     struct hashi_message **msg)
{
    int rc = check_match(m);
    *flag = 0;
    if (rc != MPI_SUCCESS)
        return rc;
    hashi_ofi_progress();
    if (!tg.probe_peek) {
        struct pulled *p = pulled_find(m, 1);
        if (!p && rx_settled()) {
            pull_one(m);
            p = pulled_find(m, 1);
        }
        if (p) {
            *flag = 1;
            pulled_envelope(p, env);
            *msg = (struct hashi_message *)p;
        }
        return MPI_SUCCESS;
    }
    struct pulled *p = tg.pulled_head ? pulled_find(m, 0) : NULL;
    if (!p && !rx_settled())
        return MPI_SUCCESS;
    struct peek *pk = calloc(1, sizeof *pk);
    if (!pk)
        return MPI_ERR_NO_MEM;
    if (p) {
        pulled_unlink(p);
        pk->pulled = p;
        *flag = 1;
        pulled_envelope(p, env);
        *msg = (struct hashi_message *)pk;
        return MPI_SUCCESS;
    }
    ofi_tb_recv(m->context_id, m->source, m->tag, &pk->bits, &pk->ignore);
    if (do_peek(pk, 1) == 0 && pk->state == PEEK_FOUND) {
        *flag = 1;
        envelope_of(pk->bits, pk->data, pk->len, env);
        /* The claim receive must name exactly the claimed message's bits. */
        pk->ignore = 0;
        *msg = (struct hashi_message *)pk;
        return MPI_SUCCESS;
    }
    free(pk);
    return MPI_SUCCESS;
}

static int t_imrecv(struct MPI_ABI_Request *req, struct hashi_message *msg)
{
    struct trecv *r = trecv_of(req);
    r->error = 0;
    r->at_provider = 0;
    r->use_tiny = req->dev_bytes < sizeof r->tiny;
    if (!tg.probe_peek) {
        struct pulled *p = (struct pulled *)msg;
        deliver(req, p->bits, p->data, p->bytes, p->len, 0);
        free(p);
        return MPI_SUCCESS;
    }
    struct peek *pk = (struct peek *)msg;
    if (pk->pulled) {
        struct pulled *p = pk->pulled;
        free(pk);
        deliver(req, p->bits, p->data, p->bytes, p->len, 0);
        free(p);
        return MPI_SUCCESS;
    }
    pk->req = req;
    pk->op.cls = &claim_recv_class;
    hashi_ofi_post(&pk->op);
    return MPI_SUCCESS;
}

static int t_cancel_recv(struct MPI_ABI_Request *req)
{
    struct trecv *r = trecv_of(req);
    if (!r->at_provider || r->op.cls != &recv_class)
        return 0;
    if (hashi_ofi_unqueue(&r->op)) {
        trecv_cancelled(req);
        return 1;
    }
    ssize_t rc = fi_cancel(&hashi_ofi.ep->fid, &r->op.ctx);
    if (rc != 0) {
        hashi_ofi_warn("fi_cancel", rc);
        return 0;
    }
    /* Providers write the FI_ECANCELED completion from fi_cancel itself. */
    hashi_ofi_progress();
    return hashi_request_is_complete(req) && hashi_status_cancelled(&req->status);
}

static int t_progress(void)
{
    int events = hashi_ofi_poll();
    if (__builtin_expect(tg.cancels_head != NULL, 0))
        events += serve_cancels();
    return events;
}

/* ------------------------------------------------------------ life cycle */

int hashi_ofi_tagged_init(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    memset(&tg, 0, sizeof tg);
    tg.bounce_size = hashi_ofi.eager_limit < BOUNCE_POOL_SIZE_MAX ? hashi_ofi.eager_limit : BOUNCE_POOL_SIZE_MAX;
    hashi_cookies_init(&tg.cookies);
    hashi_device_ofi.p2p = (struct hashi_device_p2p_ops){
        .isend = t_isend,
        .irecv = t_irecv,
        .iprobe = t_iprobe,
        .improbe = t_improbe,
        .imrecv = t_imrecv,
        .cancel_recv = t_cancel_recv,
        .cancel_send = t_cancel_send,
        .send_now = t_send_now,
        .progress = t_progress,
        .eager_limit = hashi_ofi.eager_limit,
        .tag_ub = OFI_TAG_UB,
    };
    return 0;
}

int hashi_ofi_tagged_connect(char *err, size_t errlen)
{
    const char *mode = hashi_param_str(HASHI_P_OFI_PROBE);
    if (strcasecmp(mode, "peek") == 0)
        tg.probe_peek = 1;
    else if (strcasecmp(mode, "recv") == 0)
        tg.probe_peek = 0;
    else
        tg.probe_peek = hashi_ofi.probe_peek;
    tg.sink_len = hashi_ofi.peer_eager_max > RTS_SIZE ? hashi_ofi.peer_eager_max : RTS_SIZE;
    tg.sink = malloc(tg.sink_len);
    if (!tg.sink) {
        snprintf(err, errlen, "ofi device: out of memory");
        return -1;
    }
    /* Probes (recv mode) and send cancels pull messages into it. Every
     * message the provider carries fits: eager data or an RTS. */
    tg.probe.len = hashi_ofi.peer_eager_max > RTS_SIZE ? hashi_ofi.peer_eager_max : RTS_SIZE;
    tg.probe.buf = malloc(tg.probe.len);
    if (!tg.probe.buf) {
        snprintf(err, errlen, "ofi device: out of memory");
        return -1;
    }
    tg.listener.op.cls = &listener_class;
    hashi_ofi_post(&tg.listener.op);
    HASHI_DEBUG(1, "ofi device: tagged matching, eager up to %zu bytes (inject %zu), probe by %s",
                hashi_ofi.eager_limit, hashi_ofi.inject_size, tg.probe_peek ? "FI_PEEK" : "receive");
    return 0;
}

void hashi_ofi_tagged_finalize(void)
{
    while (tg.bounce_free) {
        struct bounce *b = tg.bounce_free;
        tg.bounce_free = b->next_free;
        free(b);
    }
    while (tg.pulled_head) {
        struct pulled *p = tg.pulled_head;
        tg.pulled_head = p->next;
        free(p);
    }
    while (tg.cancels_head) {
        struct peer_cancel *pc = tg.cancels_head;
        tg.cancels_head = pc->next;
        free(pc);
    }
    free(tg.probe.buf);
    free(tg.sink);
    hashi_cookies_destroy(&tg.cookies);
    memset(&tg, 0, sizeof tg);
}
