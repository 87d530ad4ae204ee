/*
 * Moving bytes between origin and target: the one place that does it, over
 * the internal point-to-point on the window's private contexts. A
 * request message (header, segments, data) goes to the target's posted
 * receives (w->comm's context_id, tag 0); a reply (data of a get, an
 * acknowledgement, a lock grant) comes back on w->reply_context under a tag the origin chose
 * and posted a receive for before sending the request. A device with RMA
 * entries (hashi_device->rma: registered windows, PUSH / PULL) takes the
 * contiguous runs of puts and gets to the targets it reaches (below,
 * "device path"; docs/rma.md).
 */
#include "mpi/rma/rma.h"

#include "runtime/params.h"
#include "runtime/valgrind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- sending ---- */

static void free_extra(struct MPI_ABI_Request *req)
{
    free(req->extra);
    req->extra = NULL;
}

/* Send msg (ours, malloc'd) and forget it: freed once the device is done. */
static int send_owned(struct rma_win *w, int dest, uint32_t context, int tag, void *msg, size_t len)
{
    struct MPI_ABI_Request *req = NULL;
    int rc = hashi_isend_now_internal(msg, (MPI_Count)len, MPI_BYTE, dest, tag, w->comm, context, &req);
    if (rc != MPI_SUCCESS || !req) {
        free(msg);   /* failed, or the device sent (or copied) it in the call */
        return rc;
    }
    if (hashi_request_is_complete(req) || req->on_complete) {
        /* Complete already; or (never for bytes) the layer's own hook: wait. */
        if (!hashi_request_is_complete(req))
            hashi_progress_wait(req);
        free(msg);
    } else {
        req->extra = msg;
        req->on_complete = free_extra;
    }
    hashi_request_free(req);
    return MPI_SUCCESS;
}

int rma_send_request(struct rma_win *w, int target, void *msg, size_t len)
{
    w->touched[target] = 1;
    return send_owned(w, target, w->comm->context_id, 0, msg, len);
}

int rma_send_reply(struct rma_win *w, int origin, int tag, const void *data, size_t len)
{
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return MPI_ERR_NO_MEM;
    if (len)
        memcpy(copy, data, len);
    return send_owned(w, origin, w->reply_context, tag, copy, len);
}

int rma_send_reply_inplace(struct rma_win *w, int origin, int tag, const void *data, size_t len)
{
    struct MPI_ABI_Request *req;
    int rc = hashi_isend_internal(data, (MPI_Count)len, MPI_BYTE, origin, tag, w->comm, w->reply_context,
                                  &req);
    if (rc == MPI_SUCCESS)
        hashi_request_free(req);   /* the device holds it until sent */
    return rc;
}

/* ---- replies ---- */

struct reply {
    struct rma_win *w;
    int target;
    rma_reply_fn *done;
    void *arg;
    int32_t status;          /* a control reply: the target's error class */
};

static void reply_arrived(struct MPI_ABI_Request *req)
{
    struct reply *r = req->extra;
    int err = req->status.MPI_ERROR;
    r->w->pending[r->target]--;
    if (r->done)
        r->done(r->arg, err);
    else if (err == MPI_SUCCESS)
        err = r->status;
    if (err != MPI_SUCCESS && r->w->error == MPI_SUCCESS)
        r->w->error = err;
    free(r);
    req->extra = NULL;
}

static int next_tag(struct rma_win *w)
{
    int top = hashi_p2p_tag_ub() < RMA_TAG_DATA ? hashi_p2p_tag_ub() / 2 : RMA_TAG_DATA - 1;
    if (++w->reply_tag > top || w->reply_tag < RMA_TAG_FIRST)
        w->reply_tag = RMA_TAG_FIRST;
    return w->reply_tag;
}

int rma_expect_reply(struct rma_win *w, int target, void *buf, size_t bytes, rma_reply_fn *done, void *arg,
                     int *tag)
{
    struct reply *r = malloc(sizeof *r);
    if (!r)
        return MPI_ERR_NO_MEM;
    *r = (struct reply){ w, target, done, arg, MPI_SUCCESS };
    if (!buf) {
        buf = &r->status;
        bytes = sizeof r->status;
    }
    *tag = next_tag(w);
    struct MPI_ABI_Request *req;
    int rc = hashi_irecv_internal(buf, (MPI_Count)bytes, MPI_BYTE, target, *tag, w->comm, w->reply_context,
                                  &req);
    if (rc != MPI_SUCCESS) {
        free(r);
        return rc;
    }
    /* Nothing can match before the request goes out, and a byte receive
     * has no completion step of the layer's own. */
    req->extra = r;
    req->on_complete = reply_arrived;
    w->pending[target]++;
    hashi_request_free(req);
    return MPI_SUCCESS;
}

static void wait_device(struct rma_win *w, int target);

int rma_control(struct rma_win *w, int target, enum rma_kind kind, int lock_type)
{
    /* Its answer acknowledges what went before: device operations included,
     * which the target knows nothing of, so they complete first (an unlock
     * must not let another origin in before our puts landed). */
    if (kind != RMA_LOCK)
        wait_device(w, target);
    struct rma_hdr *h = calloc(1, sizeof *h);
    if (!h)
        return MPI_ERR_NO_MEM;
    h->kind = (uint8_t)kind;
    h->lock_type = lock_type;
    int rc = rma_expect_reply(w, target, NULL, 0, NULL, NULL, &h->reply_tag);
    if (rc != MPI_SUCCESS) {
        free(h);
        return rc;
    }
    rc = send_owned(w, target, w->comm->context_id, 0, h, sizeof *h);
    /* (a failed send leaves its reply counted: the window is unusable then) */
    return rc;
}

/* ---- direct puts ---- */

struct direct_send {
    struct rma_win *w;
    int target;
    void *owned;                     /* a packed copy, or NULL */
    struct MPI_ABI_Request *ureq;    /* MPI_Rput's, or NULL */
};

static void direct_sent(struct MPI_ABI_Request *req)
{
    struct direct_send *d = req->extra;
    d->w->pending[d->target]--;
    if (req->status.MPI_ERROR != MPI_SUCCESS && d->w->error == MPI_SUCCESS)
        d->w->error = req->status.MPI_ERROR;
    if (d->ureq) {
        d->ureq->status.MPI_ERROR = req->status.MPI_ERROR;
        hashi_request_complete(d->ureq);
    }
    free(d->owned);
    free(d);
    req->extra = NULL;
}

int rma_put_direct(struct rma_win *w, int target, int64_t disp, const void *data, size_t bytes, int owned,
                   struct MPI_ABI_Request *ureq)
{
    struct direct_send *d = malloc(sizeof *d);
    unsigned char *msg = malloc(sizeof(struct rma_hdr) + sizeof(struct rma_seg));
    if (!d || !msg) {
        free(d);
        free(msg);
        return MPI_ERR_NO_MEM;
    }
    int top = hashi_p2p_tag_ub();
    if (++w->data_tag > top || w->data_tag < RMA_TAG_DATA)
        w->data_tag = top >= RMA_TAG_DATA ? RMA_TAG_DATA : top / 2 + 1;
    struct rma_hdr *h = (void *)msg;
    *h = (struct rma_hdr){ .kind = RMA_PUT_DIRECT, .reply_tag = w->data_tag, .basic = (int32_t)(intptr_t)MPI_BYTE,
                           .nseg = 1, .data_bytes = bytes };
    *(struct rma_seg *)(h + 1) = (struct rma_seg){ disp, (int64_t)bytes };
    int rc = rma_send_request(w, target, msg, sizeof *h + sizeof(struct rma_seg));
    struct MPI_ABI_Request *req = NULL;
    if (rc == MPI_SUCCESS)
        rc = hashi_isend_internal(data, (MPI_Count)bytes, MPI_BYTE, target, w->data_tag, w->comm,
                                  w->reply_context, &req);
    if (rc != MPI_SUCCESS) {
        free(d);
        return rc;
    }
    *d = (struct direct_send){ w, target, owned ? (void *)(uintptr_t)data : NULL, ureq };
    w->pending[target]++;
    req->extra = d;
    if (hashi_request_is_complete(req))
        direct_sent(req);
    else
        req->on_complete = direct_sent;
    hashi_request_free(req);
    return MPI_SUCCESS;
}

/* ---- device path ---- */

void rma_device_attach(struct rma_win *w, int flavor, void *base, MPI_Aint size, struct rma_peer *mine)
{
    const struct hashi_device_rma_ops *ops = &hashi_device->rma;
    mine->dev_ok = 0;
    if (!ops->win_attach || !hashi_param_int(HASHI_P_RMA_DEVICE) ||
        (flavor != MPI_WIN_FLAVOR_CREATE && flavor != MPI_WIN_FLAVOR_ALLOCATE))
        return;
    if (size == 0) {
        mine->dev_ok = 1;   /* nothing to reach: no operation ever targets it */
        return;
    }
    if (ops->win_attach(base, (size_t)size, &w->dev_win, mine->dev_key) == MPI_SUCCESS)
        mine->dev_ok = 1;
    else
        w->dev_win = NULL;
}

int rma_device_setup(struct rma_win *w)
{
    int all = 1;
    for (int r = 0; r < w->size; r++)
        all &= w->peers[r].dev_ok != 0;
    if (!all) {
        rma_device_detach(w);   /* every member sees the same: all generic */
        return MPI_SUCCESS;
    }
    /* Peers' device puts write this memory with no instruction of ours:
     * under memcheck it is declared defined once, for the window's life
     * (reads of bytes nobody wrote go unflagged, rather than every put's). */
    if (w->dev_win)
        hashi_vg_written_by_peer(w->base, (size_t)w->win_size);
    size_t n = w->size > 0 ? (size_t)w->size : 1;
    w->dev_reach = calloc(n, 1);
    w->dev_pending = calloc(n, sizeof *w->dev_pending);
    w->dev_targets = calloc(n, sizeof *w->dev_targets);
    if (!w->dev_reach || !w->dev_pending || !w->dev_targets) {
        /* The choice is each origin's own: this one stays generic, while
         * its memory stays registered for the others' device puts. */
        free(w->dev_reach);
        free(w->dev_pending);
        free(w->dev_targets);
        w->dev_reach = NULL;
        w->dev_pending = NULL;
        w->dev_targets = NULL;
        return MPI_SUCCESS;
    }
    w->dev_min = (size_t)hashi_param_int(HASHI_P_RMA_DEVICE_MIN);
    w->dev_max = (size_t)hashi_param_int(HASHI_P_RMA_DEVICE_MAX);
    w->dev_vec_max = (size_t)hashi_param_int(HASHI_P_RMA_DEVICE_VEC_MAX);
    if (w->dev_vec_max > RMA_DEV_QUEUE_BYTES)
        w->dev_vec_max = RMA_DEV_QUEUE_BYTES;
    if (hashi_device->rma.putv && w->dev_vec_max)
        w->dev_queue = calloc(n, sizeof *w->dev_queue);   /* none: every run by itself */
    for (int r = 0; r < w->size; r++) {
        w->dev_reach[r] = w->peers[r].size > 0 && hashi_device->rma.reaches(hashi_comm_to_world(w->comm, r));
        w->dev_targets[r] = (struct rma_dev_target){ w, r };
    }
    return MPI_SUCCESS;
}

/* After MPI_Win_free's barrier (nobody reaches the memory any more). */
void rma_device_detach(struct rma_win *w)
{
    if (w->dev_win)
        hashi_device->rma.win_detach(w->dev_win);
    w->dev_win = NULL;
    for (int r = 0; w->dev_queue && r < w->size; r++)
        if (w->dev_queue[r]) {
            free(w->dev_queue[r]->buf);   /* empty: MPI_Win_free waited for every put */
            free(w->dev_queue[r]);
        }
    free(w->dev_queue);
    w->dev_queue = NULL;
    free(w->dev_reach);
    free(w->dev_pending);
    free(w->dev_targets);
    w->dev_reach = NULL;
    w->dev_pending = NULL;
    w->dev_targets = NULL;
}

/* The device's status (0 or -errno) as an error class. */
static int device_error(int status)
{
    return status == 0 ? MPI_SUCCESS : status == -EINVAL ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER;
}

static void device_done_count(struct rma_win *w, int target, int error)
{
    w->pending[target]--;
    w->dev_pending[target]--;
    if (error != MPI_SUCCESS && w->error == MPI_SUCCESS)
        w->error = error;
}

/* A put from the program's contiguous buffer with no request: nothing to free. */
static void device_put_plain_done(void *arg, int status)
{
    struct rma_dev_target *t = arg;
    device_done_count(t->w, t->target, device_error(status));
}

struct device_op {
    struct rma_win *w;
    int target;
    void *owned;                     /* a put's packed copy, or NULL */
    struct MPI_ABI_Request *ureq;    /* MPI_Rput's, or NULL */
    rma_reply_fn *done;              /* a get's, or NULL */
    void *arg;
};

static void device_op_done(void *arg, int status)
{
    struct device_op *d = arg;
    int error = device_error(status);
    device_done_count(d->w, d->target, error);
    if (d->ureq) {
        d->ureq->status.MPI_ERROR = error;
        hashi_request_complete(d->ureq);
    }
    if (d->done)
        d->done(d->arg, error);
    free(d->owned);
    free(d);
}

/* ---- the vector queue: small put runs, one PUSH per target and flush ---- */

/* A vector PUSH in flight (or its runs put one by one when the device
 * declined the vector): its copies stay until the last completion. */
struct dev_batch {
    struct rma_win *w;
    int target;
    int runs_per_done;              /* n for a vector, 1 when put one by one */
    int left;                       /* completions to come */
    unsigned char *buf;
};

static void dev_batch_done(void *arg, int status)
{
    struct dev_batch *b = arg;
    int error = device_error(status);
    for (int i = 0; i < b->runs_per_done; i++)
        device_done_count(b->w, b->target, error);
    if (--b->left == 0) {
        free(b->buf);
        free(b);
    }
}

/* The device's share of a queue: pieces of at least dev_min bytes (merged
 * adjacent runs), as one vector PUSH, or each by itself where the device
 * declines the vector. Their copies (buf) stay until the last completion. */
static void dev_queue_push(struct rma_win *w, int target, struct hashi_device_rma_piece *piece, int n,
                           unsigned char *buf)
{
    int world = hashi_comm_to_world(w->comm, target), rc = MPI_ERR_NO_MEM;
    struct dev_batch *b = malloc(sizeof *b);
    if (b) {
        *b = (struct dev_batch){ w, target, n, 1, buf };
        rc = hashi_device->rma.putv(world, w->peers[target].dev_key, piece, n, dev_batch_done, b);
        if (rc == HASHI_DEVICE_P2P_DECLINE) {
            /* Not as one transfer now (no CMA): each piece by itself. */
            b->runs_per_done = 1;
            b->left = n;
            rc = MPI_SUCCESS;
            for (int i = 0; i < n; i++) {
                int r = hashi_device->rma.put(world, w->peers[target].dev_key, piece[i].offset, piece[i].src,
                                              piece[i].len, dev_batch_done, b);
                if (r != MPI_SUCCESS)
                    dev_batch_done(b, r == MPI_ERR_RMA_RANGE ? -EINVAL : -EIO);
            }
        } else if (rc != MPI_SUCCESS) {
            free(b);
        }
    }
    if (rc != MPI_SUCCESS) {
        /* Nothing moved: the pieces fail (raised by the next synchronization). */
        for (int i = 0; i < n; i++)
            device_done_count(w, target, rc);
        free(buf);
    }
}

_Static_assert(sizeof(struct rma_hdr) == 32 && sizeof(struct rma_seg) == 16, "RMA_DEV_QUEUE_BYTES's sizes");

/* The rest of a queue: one PUT request message carrying every small piece
 * as a segment (the target applies them in order), acknowledged like any
 * message by the next FLUSH / UNLOCK / COMPLETE. */
static void dev_queue_message(struct rma_win *w, int target, const struct hashi_device_rma_piece *piece, int n,
                              size_t bytes)
{
    size_t len = sizeof(struct rma_hdr) + (size_t)n * sizeof(struct rma_seg) + bytes;
    unsigned char *msg = malloc(len);
    int rc = msg ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (msg) {
        struct rma_hdr *h = (void *)msg;
        struct rma_seg *seg = (void *)(h + 1);
        unsigned char *data = (unsigned char *)(seg + n);
        *h = (struct rma_hdr){ .kind = RMA_PUT, .basic = (int32_t)(intptr_t)MPI_BYTE, .nseg = (uint32_t)n,
                               .data_bytes = bytes };
        for (int i = 0; i < n; i++) {
            seg[i] = (struct rma_seg){ (int64_t)piece[i].offset, (int64_t)piece[i].len };
            memcpy(data, piece[i].src, piece[i].len);
            data += piece[i].len;
        }
        rc = rma_send_request(w, target, msg, len);
    }
    /* Queued pieces counted as device operations: these are messages now. */
    for (int i = 0; i < n; i++)
        device_done_count(w, target, rc);
}

void rma_dev_queue_issue(struct rma_win *w, int target)
{
    struct rma_dev_queue *q = w->dev_queue ? w->dev_queue[target] : NULL;
    if (!q || q->n == 0)
        return;
    /* Large pieces first to the front of the array, small ones after. */
    int big = 0;
    size_t small_bytes = 0;
    for (int i = 0; i < q->n; i++) {
        if (q->piece[i].len >= w->dev_min) {
            struct hashi_device_rma_piece t = q->piece[big];
            q->piece[big++] = q->piece[i];
            q->piece[i] = t;
        }
    }
    for (int i = big; i < q->n; i++)
        small_bytes += q->piece[i].len;
    if (big < q->n)
        dev_queue_message(w, target, q->piece + big, q->n - big, small_bytes);
    if (big)
        dev_queue_push(w, target, q->piece, big, q->buf);   /* it owns the copies now */
    else
        free(q->buf);
    q->buf = NULL;
    q->used = 0;
    q->n = 0;
}

static int dev_queue_put(struct rma_win *w, int target, int64_t disp, const void *data, size_t bytes)
{
    struct rma_dev_queue *q = w->dev_queue[target];
    if (!q && !(q = w->dev_queue[target] = calloc(1, sizeof *q)))
        return MPI_ERR_NO_MEM;
    if (q->n == RMA_DEV_QUEUE_RUNS || q->used + bytes > RMA_DEV_QUEUE_BYTES)
        rma_dev_queue_issue(w, target);
    if (!q->buf && !(q->buf = malloc(RMA_DEV_QUEUE_BYTES)))
        return MPI_ERR_NO_MEM;
    memcpy(q->buf + q->used, data, bytes);
    struct hashi_device_rma_piece *last = q->n ? &q->piece[q->n - 1] : NULL;
    q->used += bytes;
    if (last && last->offset + last->len == (uint64_t)disp) {
        last->len += bytes;   /* continues the last run at the target (and here): one iovec, counted once */
        return MPI_SUCCESS;
    }
    q->piece[q->n++] = (struct hashi_device_rma_piece){ q->buf + q->used - bytes, bytes, (uint64_t)disp };
    /* Counted per piece: its completion is one device completion. */
    w->pending[target]++;
    w->dev_pending[target]++;
    return MPI_SUCCESS;
}

int rma_device_put(struct rma_win *w, int target, int64_t disp, const void *data, size_t bytes, int owned,
                   struct MPI_ABI_Request *ureq)
{
    if (rma_dev_queues(w, target, bytes, ureq != NULL)) {
        int rc = dev_queue_put(w, target, disp, data, bytes);
        if (rc == MPI_SUCCESS && owned)
            free((void *)(uintptr_t)data);   /* copied into the queue */
        return rc;
    }
    hashi_device_rma_done_fn *done = device_put_plain_done;
    void *arg = &w->dev_targets[target];
    struct device_op *d = NULL;
    if (owned || ureq) {
        d = malloc(sizeof *d);
        if (!d)
            return MPI_ERR_NO_MEM;
        *d = (struct device_op){ w, target, owned ? (void *)(uintptr_t)data : NULL, ureq, NULL, NULL };
        done = device_op_done;
        arg = d;
    }
    int world = hashi_comm_to_world(w->comm, target);
    int rc = hashi_device->rma.put(world, w->peers[target].dev_key, (uint64_t)disp, data, bytes, done, arg);
    if (rc != MPI_SUCCESS) {
        free(d);   /* the caller frees an owned copy */
        return rc;
    }
    w->pending[target]++;
    w->dev_pending[target]++;
    return MPI_SUCCESS;
}

int rma_device_get(struct rma_win *w, int target, int64_t disp, void *dst, size_t bytes, rma_reply_fn *done,
                   void *arg)
{
    struct device_op *d = malloc(sizeof *d);
    if (!d)
        return MPI_ERR_NO_MEM;
    *d = (struct device_op){ w, target, NULL, NULL, done, arg };
    int world = hashi_comm_to_world(w->comm, target);
    int rc = hashi_device->rma.get(world, w->peers[target].dev_key, (uint64_t)disp, dst, bytes, device_op_done, d);
    if (rc != MPI_SUCCESS) {
        free(d);
        return rc;
    }
    w->pending[target]++;
    w->dev_pending[target]++;
    return MPI_SUCCESS;
}

static int device_in(void *arg)
{
    const struct rma_dev_target *t = arg;
    return t->w->dev_pending[t->target] == 0;
}

static void wait_device(struct rma_win *w, int target)
{
    rma_dev_queue_issue(w, target);
    if (w->dev_pending && w->dev_pending[target])
        hashi_progress_wait_until(device_in, &w->dev_targets[target]);
}

struct wait_arg {
    const struct rma_win *w;
    int target;
};

static int replies_in(void *arg)
{
    const struct wait_arg *a = arg;
    if (a->target >= 0)
        return a->w->pending[a->target] == 0;
    for (int r = 0; r < a->w->size; r++)
        if (a->w->pending[r])
            return 0;
    return 1;
}

void rma_wait_replies(struct rma_win *w, int target)
{
    for (int r = target < 0 ? 0 : target; w->dev_queue && r < (target < 0 ? w->size : target + 1); r++)
        rma_dev_queue_issue(w, r);
    struct wait_arg a = { w, target };
    if (!replies_in(&a))
        hashi_progress_wait_until(replies_in, &a);
}
