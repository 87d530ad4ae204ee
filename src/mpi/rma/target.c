/*
 * The target-side service: every window keeps RMA_SLOTS receives posted on
 * its request context (any source, any tag); a progress hook takes the
 * completed ones in posting order, which is the order messages matched, so
 * each origin's messages are applied in the order it sent them, and
 * reposts them. Applying never waits: a lock that cannot be granted is
 * queued, and granted when an unlock frees it.
 *
 * One message is applied at a time and the hook runs inside the global
 * lock under MPI_THREAD_MULTIPLE, so accumulate-type operations are atomic
 * per element (and per message) with respect to each other: MPI's
 * accumulate atomicity and ordering (rar, raw, war, waw) hold.
 */
#include "mpi/rma/rma.h"
#include "mpi/coll/op.h"
#include "runtime/log.h"

#include <stdlib.h>
#include <string.h>

static struct {
    struct rma_win *wins;
    int hooked;
    int busy;          /* a hook run is under way (its sends may poll) */
} svc;

static int serve(void);

static int post_slot(struct rma_win *w, int i)
{
    return hashi_irecv_internal(w->slots[i].buf, RMA_MSG_MAX, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, w->comm,
                                w->comm->context_id, &w->slots[i].req);
}

int rma_target_start(struct rma_win *w)
{
    for (int i = 0; i < RMA_SLOTS; i++) {
        w->slots[i].buf = malloc(RMA_MSG_MAX);
        if (!w->slots[i].buf)
            return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < RMA_SLOTS; i++) {
        int rc = post_slot(w, i);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    w->lock_tail = &w->lock_queue;
    w->deferred_tail = &w->deferred;
    if (!(w->direct_pending = calloc((size_t)w->size, sizeof *w->direct_pending)))
        return MPI_ERR_NO_MEM;
    w->next = svc.wins;
    svc.wins = w;
    if (!svc.hooked && hashi_progress_register(serve) == 0)
        svc.hooked = 1;
    return svc.hooked ? MPI_SUCCESS : MPI_ERR_INTERN;
}

void rma_target_stop(struct rma_win *w)
{
    for (int i = 0; i < RMA_SLOTS; i++) {
        struct MPI_ABI_Request *req = w->slots[i].req;
        if (req) {
            /* Every member passed MPI_Win_free's barrier: nothing more comes. */
            if (!hashi_request_is_complete(req) && !hashi_device->p2p.cancel_recv(req))
                hashi_progress_wait(req);
            hashi_request_free(req);
        }
        free(w->slots[i].buf);
        w->slots[i] = (struct rma_slot){ 0 };
    }
    for (struct rma_lock_waiter *q = w->lock_queue, *next; q; q = next) {
        next = q->next;
        free(q);
    }
    w->lock_queue = NULL;
    for (struct rma_deferred *q = w->deferred, *next; q; q = next) {
        next = q->next;
        free(q);
    }
    w->deferred = NULL;
    free(w->direct_pending);
    w->direct_pending = NULL;
    for (struct rma_win **p = &svc.wins; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    if (!svc.wins && svc.hooked) {
        hashi_progress_unregister(serve);
        svc.hooked = 0;
    }
}

/* ---- applying ---- */

static void fail(struct rma_win *w, int origin, int error)
{
    if (w->origin_error[origin] == MPI_SUCCESS)
        w->origin_error[origin] = error;
}

/* The address of `bytes` bytes at disp in this window, or NULL when they
 * are not all inside it (for dynamic windows: inside one attached region). */
static char *target_addr(struct rma_win *w, int64_t disp, size_t bytes)
{
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        uintptr_t lo = (uintptr_t)disp;
        for (struct rma_region *r = w->regions; r; r = r->next)
            if (lo >= r->base && bytes <= r->size && lo - r->base <= r->size - bytes)
                return (char *)lo;
        return NULL;
    }
    if (disp < 0 || (uint64_t)disp > (uint64_t)w->win_size || bytes > (uint64_t)w->win_size - (uint64_t)disp)
        return NULL;
    return (char *)w->base + disp;
}

/* Elements of basic type t in the window, from / to the packed stream. */
void rma_load_elements(const struct MPI_ABI_Datatype *t, const char *at, int64_t n, char *stream)
{
    if (t->contiguous)
        memcpy(stream, at + t->true_lb, (size_t)(n * t->size));
    else
        hashi_type_pack(at, n, t, 0, stream, (size_t)(n * t->size));
}

int rma_combine_elements(MPI_Op op, MPI_Datatype basic, const struct MPI_ABI_Datatype *t, const char *stream,
                         char *at, int64_t n)
{
    if (t->contiguous)
        return hashi_op_reduce(op, stream, at, n, basic);
    /* A pair with padding (MPI_DOUBLE_INT ...): the kernels take C arrays. */
    char *tmp = malloc((size_t)(n * hashi_type_extent(t)));
    if (!tmp)
        return MPI_ERR_NO_MEM;
    hashi_type_unpack(tmp, n, t, 0, stream, (size_t)(n * t->size));
    int rc = hashi_op_reduce(op, tmp, at, n, basic);
    free(tmp);
    return rc;
}

static void reply(struct rma_win *w, int origin, int tag, const void *data, size_t len)
{
    int rc = rma_send_reply(w, origin, tag, data, len);
    if (rc != MPI_SUCCESS)
        HASHI_DEBUG(1, "rma: a reply to rank %d failed (%d)", origin, rc);
}

static void reply_status(struct rma_win *w, int origin, int tag)
{
    int32_t status = w->origin_error[origin];
    w->origin_error[origin] = MPI_SUCCESS;
    reply(w, origin, tag, &status, sizeof status);
}

static int lock_free_for(const struct rma_win *w, int type)
{
    return type == MPI_LOCK_SHARED ? !w->lock_exclusive : !w->lock_exclusive && w->lock_shared == 0;
}

static void lock_take(struct rma_win *w, int type)
{
    if (type == MPI_LOCK_SHARED)
        w->lock_shared++;
    else
        w->lock_exclusive = 1;
}

static void lock_request(struct rma_win *w, int origin, int type, int tag)
{
    if (!w->lock_queue && lock_free_for(w, type)) {
        lock_take(w, type);
        reply_status(w, origin, tag);
        return;
    }
    struct rma_lock_waiter *q = malloc(sizeof *q);
    if (!q) {
        fail(w, origin, MPI_ERR_NO_MEM);
        reply_status(w, origin, tag);   /* refused: the origin raises it */
        return;
    }
    *q = (struct rma_lock_waiter){ NULL, origin, type, tag };
    *w->lock_tail = q;
    w->lock_tail = &q->next;
}

static void lock_release(struct rma_win *w)
{
    if (w->lock_exclusive)
        w->lock_exclusive = 0;
    else if (w->lock_shared > 0)
        w->lock_shared--;
    while (w->lock_queue && lock_free_for(w, w->lock_queue->type)) {
        struct rma_lock_waiter *q = w->lock_queue;
        w->lock_queue = q->next;
        if (!w->lock_queue)
            w->lock_tail = &w->lock_queue;
        lock_take(w, q->type);
        reply_status(w, q->origin, q->reply_tag);
        free(q);
    }
}

/* Segments op= data (put: op MPI_REPLACE on bytes), optionally reading the
 * old values into result first. */
static void apply_data(struct rma_win *w, int origin, const struct rma_hdr *h, const struct rma_seg *segs,
                       const char *data, char *result)
{
    MPI_Datatype basic = (MPI_Datatype)(intptr_t)h->basic;
    const struct MPI_ABI_Datatype *t = hashi_type_get(basic);
    if (!t) {
        fail(w, origin, MPI_ERR_INTERN);
        return;
    }
    MPI_Aint extent = hashi_type_extent(t);
    for (uint32_t i = 0; i < h->nseg; i++) {
        int64_t n = segs[i].count;
        size_t bytes = (size_t)(n * t->size);
        char *at = target_addr(w, segs[i].disp, (size_t)((n - 1) * extent + t->true_ub));
        if (!at) {
            fail(w, origin, MPI_ERR_RMA_RANGE);
            if (result)
                memset(result, 0, bytes);
        } else {
            if (result)
                rma_load_elements(t, at, n, result);
            if (h->kind == RMA_PUT) {
                memcpy(at, data, bytes);
            } else if (data) {
                int rc = rma_combine_elements((MPI_Op)(intptr_t)h->op, basic, t, data, at, n);
                if (rc != MPI_SUCCESS)
                    fail(w, origin, rc);
            }
        }
        if (data)
            data += bytes;
        if (result)
            result += bytes;
    }
}

/* ---- direct puts: the data lands in place, completion waits for it ---- */

struct direct_recv {
    struct rma_win *w;
    int origin;
    void *scratch;          /* where data outside the window is dropped, or NULL */
};

static void direct_arrived(struct MPI_ABI_Request *req)
{
    struct direct_recv *d = req->extra;
    d->w->direct_pending[d->origin]--;
    if (req->status.MPI_ERROR != MPI_SUCCESS)
        fail(d->w, d->origin, req->status.MPI_ERROR);
    free(d->scratch);
    free(d);
    req->extra = NULL;
}

static void put_direct(struct rma_win *w, int origin, const struct rma_hdr *h, const struct rma_seg *segs)
{
    size_t bytes = (size_t)h->data_bytes;
    char *at = h->nseg == 1 ? target_addr(w, segs[0].disp, bytes) : NULL;
    struct direct_recv *d = malloc(sizeof *d);
    void *scratch = NULL;
    if (!at) {
        /* Still received (the origin sends it anyway), into scratch. */
        fail(w, origin, MPI_ERR_RMA_RANGE);
        at = scratch = malloc(bytes ? bytes : 1);
    }
    struct MPI_ABI_Request *req;
    int rc = d && at ? hashi_irecv_internal(at, (MPI_Count)bytes, MPI_BYTE, origin, h->reply_tag, w->comm,
                                            w->reply_context, &req)
                     : MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS) {
        fail(w, origin, rc);
        free(d);
        free(scratch);
        return;
    }
    *d = (struct direct_recv){ w, origin, scratch };
    w->direct_pending[origin]++;
    req->extra = d;
    if (hashi_request_is_complete(req))
        direct_arrived(req);   /* the data was in already */
    else
        req->on_complete = direct_arrived;
    hashi_request_free(req);
}

static void control_now(struct rma_win *w, int origin, int kind, int tag)
{
    if (kind == RMA_UNLOCK)
        lock_release(w);
    else if (kind == RMA_COMPLETE)
        w->completes++;
    reply_status(w, origin, tag);
}

/* Answer what waited for direct puts that are in now, in arrival order. */
static int run_deferred(struct rma_win *w)
{
    int n = 0;
    for (struct rma_deferred **p = &w->deferred; *p;) {
        struct rma_deferred *q = *p;
        if (w->direct_pending[q->origin] > 0) {
            p = &q->next;
            continue;
        }
        *p = q->next;
        if (!*p)
            w->deferred_tail = p;
        control_now(w, q->origin, q->kind, q->reply_tag);
        free(q);
        n++;
    }
    return n;
}

/* FLUSH, UNLOCK, COMPLETE: everything the origin sent before is applied,
 * except direct puts whose data is still on its way: wait for those. */
static void control(struct rma_win *w, int origin, int kind, int tag)
{
    run_deferred(w);
    int waits = w->direct_pending[origin] > 0;
    for (struct rma_deferred *q = w->deferred; q && !waits; q = q->next)
        waits = q->origin == origin;
    if (!waits) {
        control_now(w, origin, kind, tag);
        return;
    }
    struct rma_deferred *q = malloc(sizeof *q);
    if (!q) {
        fail(w, origin, MPI_ERR_NO_MEM);
        control_now(w, origin, kind, tag);
        return;
    }
    *q = (struct rma_deferred){ NULL, origin, kind, tag };
    *w->deferred_tail = q;
    w->deferred_tail = &q->next;
}

static void apply(struct rma_win *w, int origin, const unsigned char *msg, size_t len)
{
    const struct rma_hdr *h = (const void *)msg;
    if (len < sizeof *h || len < sizeof *h + (size_t)h->nseg * sizeof(struct rma_seg)) {
        fail(w, origin, MPI_ERR_INTERN);
        return;
    }
    const struct rma_seg *segs = (const void *)(msg + sizeof *h);
    const char *data = (const char *)(segs + h->nseg);
    char *result = NULL;
    switch ((enum rma_kind)h->kind) {
    case RMA_PUT:
    case RMA_ACC:
        apply_data(w, origin, h, segs, data, NULL);
        return;
    case RMA_GET:
    case RMA_GACC:
        if (h->kind == RMA_GET && h->nseg == 1 && h->basic == (int32_t)(intptr_t)MPI_BYTE &&
            h->data_bytes >= RMA_DIRECT_MIN && target_addr(w, segs[0].disp, h->data_bytes)) {
            /* One large run: no copy (a get reads the window some time in the epoch). */
            if (rma_send_reply_inplace(w, origin, h->reply_tag, target_addr(w, segs[0].disp, h->data_bytes),
                                       h->data_bytes) == MPI_SUCCESS)
                return;
            /* else the copying path below */
        }
        result = malloc(h->data_bytes ? h->data_bytes : 1);
        if (!result) {
            fail(w, origin, MPI_ERR_NO_MEM);
            reply(w, origin, h->reply_tag, NULL, 0);
            return;
        }
        apply_data(w, origin, h, segs, h->kind == RMA_GACC ? data : NULL, result);
        reply(w, origin, h->reply_tag, result, h->data_bytes);
        free(result);
        return;
    case RMA_CAS: {
        const struct MPI_ABI_Datatype *t = hashi_type_get((MPI_Datatype)(intptr_t)h->basic);
        size_t bytes = t ? (size_t)t->size : 0;
        char old[64] = { 0 };
        char *at = t && h->nseg == 1 && bytes <= sizeof old ? target_addr(w, segs[0].disp, bytes) : NULL;
        if (!at) {
            fail(w, origin, t ? MPI_ERR_RMA_RANGE : MPI_ERR_INTERN);
        } else {
            memcpy(old, at, bytes);
            if (memcmp(old, data + bytes, bytes) == 0)
                memcpy(at, data, bytes);
        }
        reply(w, origin, h->reply_tag, old, bytes);
        return;
    }
    case RMA_FLUSH:
    case RMA_UNLOCK:
    case RMA_COMPLETE:
        control(w, origin, h->kind, h->reply_tag);
        return;
    case RMA_LOCK:
        lock_request(w, origin, h->lock_type, h->reply_tag);
        return;
    case RMA_PUT_DIRECT:
        put_direct(w, origin, h, segs);
        return;
    }
    fail(w, origin, MPI_ERR_INTERN);
}

/* The hook: apply what arrived, in matching order, and repost. */
static int serve(void)
{
    if (svc.busy)
        return 0;
    svc.busy = 1;
    int done = 0;
    for (struct rma_win *w = svc.wins; w; w = w->next) {
        if (w->deferred)
            done += run_deferred(w);
        for (;;) {
            struct rma_slot *s = &w->slots[w->slot_head];
            if (!s->req || !hashi_request_is_complete(s->req))
                break;
            int origin = s->req->status.MPI_SOURCE;
            int err = s->req->status.MPI_ERROR;
            size_t len = (size_t)hashi_status_bytes(&s->req->status);
            hashi_request_free(s->req);
            s->req = NULL;
            if (err == MPI_SUCCESS)
                apply(w, origin, s->buf, len);
            else
                HASHI_DEBUG(1, "rma: a request from rank %d failed (%d)", origin, err);
            if (post_slot(w, w->slot_head) != MPI_SUCCESS)
                s->req = NULL;   /* the ring stops here; MPI_Win_free reports nothing more */
            w->slot_head = (w->slot_head + 1) % RMA_SLOTS;
            done++;
        }
    }
    svc.busy = 0;
    return done;
}
