/*
 * Moving bytes between origin and target: the one place that does it, over
 * the internal point-to-point on the window's private contexts. A
 * request message (header, segments, data) goes to the target's posted
 * receives (w->comm's context_id, tag 0); a reply (data of a get, an
 * acknowledgement, a lock grant) comes back on w->reply_context under a tag the origin chose
 * and posted a receive for before sending the request. A device with RMA
 * entries (registered windows, PUSH / PULL) would take over here:
 * docs/device-interface.md, "RMA".
 */
#include "mpi/rma/rma.h"

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

int rma_control(struct rma_win *w, int target, enum rma_kind kind, int lock_type)
{
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
    if (hashi_request_is_complete(req)) {
        req->extra = d;
        direct_sent(req);
    } else {
        req->extra = d;
        req->on_complete = direct_sent;
    }
    hashi_request_free(req);
    return MPI_SUCCESS;
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
    struct wait_arg a = { w, target };
    if (!replies_in(&a))
        hashi_progress_wait_until(replies_in, &a);
}
