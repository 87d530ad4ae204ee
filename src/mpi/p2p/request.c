/*
 * The request pool and the request life cycle: allocation without malloc on
 * the hot path, completion (run on_complete, then publish `complete`),
 * reference counting, and finishing a completed request for a completion call.
 */
#include "mpi/handles.h"
#include "mpi/p2p/p2p_impl.h"
#include "runtime/log.h"

#include <stdlib.h>
#include <string.h>

/* Requests per slab: one allocation feeds this many messages. */
#define REQUESTS_PER_SLAB 256
/* Requests start on their own cache lines (false sharing with the device's
 * progress thread, later). */
#define REQUEST_ALIGN 64
#define REQUEST_STRIDE ((sizeof(struct MPI_ABI_Request) + REQUEST_ALIGN - 1) / REQUEST_ALIGN * REQUEST_ALIGN)
#define SLAB_HEADER REQUEST_ALIGN

struct hashi_p2p_state hashi_p2p;

static int pool_grow(struct hashi_request_pool *pool)
{
    size_t bytes = SLAB_HEADER + REQUESTS_PER_SLAB * REQUEST_STRIDE;
    unsigned char *mem = aligned_alloc(REQUEST_ALIGN, bytes);
    if (!mem)
        return -1;
    struct hashi_request_slab *slab = (struct hashi_request_slab *)mem;
    slab->next = pool->slabs;
    pool->slabs = slab;
    pool->slab_count++;
    /* Thread the new requests onto the free list, lowest address first. */
    for (size_t i = REQUESTS_PER_SLAB; i-- > 0;) {
        struct MPI_ABI_Request *req = (struct MPI_ABI_Request *)(mem + SLAB_HEADER + i * REQUEST_STRIDE);
        req->magic = 0;
        req->next_free = pool->free_list;
        pool->free_list = req;
    }
    return 0;
}

struct MPI_ABI_Request *hashi_request_alloc(enum hashi_req_kind kind)
{
    struct hashi_request_pool *pool = &hashi_p2p.pool;
    if (!pool->free_list && pool_grow(pool) != 0)
        return NULL;
    struct MPI_ABI_Request *req = pool->free_list;
    pool->free_list = req->next_free;
    pool->in_use++;
    p2p_request_init(req, kind);
    return req;
}

static void request_unref(struct MPI_ABI_Request *req);

/* Last reference gone: release what the request holds and pool it. */
static void request_destroy(struct MPI_ABI_Request *req)
{
    if (req->on_free)
        req->on_free(req);
    if (req->copy_send)
        request_unref(req->copy_send);
    if (req->dev_prepared)   /* set only by a device with pfree */
        hashi_device->p2p.pfree(req);
    if (req->flags & HASHI_REQF_PACK_OWNED)
        free(req->pack_buf);
    if (req->type)
        hashi_type_release(req->type);
    if (req->comm)
        hashi_comm_release(req->comm);
    hashi_handle_forget(req);
    req->magic = 0;
    struct hashi_request_pool *pool = &hashi_p2p.pool;
    req->next_free = pool->free_list;
    pool->free_list = req;
    pool->in_use--;
}

static void request_unref(struct MPI_ABI_Request *req)
{
    if (hashi_ref_dec(&req->refs))
        request_destroy(req);
}

void hashi_request_free(struct MPI_ABI_Request *req)
{
    if (!(req->flags & HASHI_REQF_SHARED))
        request_unref(req);
}

/* Complete, empty-status, read-only: every handle to it finishes the same way. */
static struct MPI_ABI_Request sent_request;

struct MPI_ABI_Request *p2p_sent_request(void)
{
    return &sent_request;
}

void hashi_request_destroy(struct MPI_ABI_Request *req)
{
    request_destroy(req);
}

void hashi_request_complete_general(struct MPI_ABI_Request *req)
{
    if (req->flags & HASHI_REQF_DEV_SEND) {
        req->flags &= ~(unsigned)HASHI_REQF_DEV_SEND;
        atomic_fetch_sub_explicit(&hashi_p2p.sends_in_flight, 1, memory_order_relaxed);
    }
    if (req->on_complete)
        req->on_complete(req);
    atomic_store_explicit(&req->complete, 1, memory_order_release);
    if (req->parent)
        req->parent->on_child_complete(req->parent, req);
    request_unref(req);
}

int p2p_make_persistent(struct MPI_ABI_Request *req)
{
    req->persistent = 1;
    atomic_store_explicit(&req->complete, 1, memory_order_relaxed);  /* inactive */
    if (req->flags & HASHI_REQF_PROC_NULL)
        return MPI_SUCCESS;
    int (*prepare)(struct MPI_ABI_Request *) =
        req->kind == HASHI_REQ_PREQ_SEND ? hashi_device->p2p.psend_init : hashi_device->p2p.precv_init;
    return prepare ? prepare(req) : MPI_SUCCESS;
}

void p2p_fail_request(struct MPI_ABI_Request *req, int errclass)
{
    req->status.MPI_ERROR = errclass;
    hashi_request_complete(req);
}

struct MPI_ABI_Request *p2p_completed_request(enum hashi_req_kind kind, int proc_null)
{
    struct MPI_ABI_Request *req = hashi_request_alloc(kind);
    if (!req)
        return NULL;
    if (proc_null) {
        /* The standard's status for MPI_PROC_NULL: that source, any tag, no data. */
        req->flags |= HASHI_REQF_PROC_NULL;
        req->status.MPI_SOURCE = MPI_PROC_NULL;
        req->status.MPI_TAG = MPI_ANY_TAG;
    }
    atomic_store_explicit(&req->complete, 1, memory_order_release);
    return req;
}

/* ---- finishing completed requests for the completion calls ---- */


/* A generalized request's status comes from the user's query function. */
static int greq_query(struct MPI_ABI_Request *req, MPI_Status *st)
{
    MPI_Status q;
    hashi_status_set_empty(&q);
    q.MPI_ERROR = MPI_SUCCESS;
    int rc = req->greq_query ? req->greq_query(req->extra, &q) : MPI_SUCCESS;
    *st = q;
    if (rc == MPI_SUCCESS && q.MPI_ERROR != MPI_SUCCESS)
        rc = q.MPI_ERROR;
    return rc;
}

int p2p_request_peek(struct MPI_ABI_Request *req, MPI_Status *status)
{
    if (req->kind == HASHI_REQ_GREQ) {
        MPI_Status st;
        int rc = greq_query(req, &st);
        p2p_copy_status(status, &st, rc);
        return rc;
    }
    int err = req->status.MPI_ERROR;
    p2p_copy_status(status, &req->status, err);
    return err;
}

int p2p_request_finish(MPI_Request *handle, MPI_Status *status)
{
    struct MPI_ABI_Request *req = *handle;
    int err;
    if (req->kind == HASHI_REQ_GREQ) {
        MPI_Status st;
        err = greq_query(req, &st);
        p2p_copy_status(status, &st, err);
        int rc = req->greq_free ? req->greq_free(req->extra) : MPI_SUCCESS;
        if (err == MPI_SUCCESS)
            err = rc;
        req->greq_free = NULL;   /* called exactly once */
        hashi_request_free(req);
        *handle = MPI_REQUEST_NULL;
        return err;
    }
    err = req->status.MPI_ERROR;
    p2p_copy_status(status, &req->status, err);
    if (req->persistent) {
        /* Inactive again: MPI_Start may reuse it; the handle stays valid. */
        req->active = 0;
        return err;
    }
    hashi_request_free(req);
    *handle = MPI_REQUEST_NULL;
    return err;
}

int p2p_raise_request_error(const char *func, struct MPI_ABI_Comm *comm, int code, const MPI_Status *st)
{
    int cls = code;
    hashi_impl_Error_class(code, &cls);
    MPI_Comm handle = comm ? p2p_comm_handle(comm) : MPI_COMM_SELF;
    if (cls == MPI_ERR_TRUNCATE)
        return hashi_err_comm(func, handle, code,
                              "message from rank %d tag %d truncated: the receive buffer holds %llu bytes",
                              st->MPI_SOURCE, st->MPI_TAG, (unsigned long long)hashi_status_bytes(st));
    return hashi_err_comm(func, handle, code,
                          "the operation on rank %d tag %d failed", st->MPI_SOURCE, st->MPI_TAG);
}

/* ---- set-up and tear-down ---- */

void p2p_requests_init(void)
{
    sent_request.magic = HASHI_REQUEST_MAGIC;
    sent_request.kind = HASHI_REQ_SEND;
    sent_request.flags = HASHI_REQF_SHARED;
    sent_request.datatype = MPI_DATATYPE_NULL;
    atomic_init(&sent_request.refs, 1);
    hashi_status_set_empty(&sent_request.status);
    atomic_init(&sent_request.complete, 1);
    /* One slab up front: the first messages do not pay for it. */
    if (!hashi_p2p.pool.slabs)
        pool_grow(&hashi_p2p.pool);
}

int p2p_requests_finalize(void)
{
    struct hashi_request_pool *pool = &hashi_p2p.pool;
    if (pool->in_use) {
        /* Requests the program never completed or freed (or a device still
         * holds): keep their memory, it is reclaimed at exit. */
        HASHI_DEBUG(1, "MPI_Finalize: %zu requests were never completed or freed", pool->in_use);
        return -1;
    }
    while (pool->slabs) {
        struct hashi_request_slab *next = pool->slabs->next;
        free(pool->slabs);
        pool->slabs = next;
    }
    pool->free_list = NULL;
    pool->slab_count = 0;
    return 0;
}
