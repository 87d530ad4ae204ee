/*
 * Requests: one object for every pending operation (point-to-point, persistent,
 * generalized, collective schedules). The device completes a request with
 * hashi_request_complete(); MPI_Wait & co. poll `complete` and drive progress.
 *
 * Life cycle. A request is owned through references: the user's handle (or the
 * library code that created it) holds one, and an operation in flight holds
 * one from its start until hashi_request_complete(). Whoever drops the last
 * reference returns the request to the pool, so MPI_Request_free on an active
 * request and a completion racing with it (MPI_THREAD_MULTIPLE later) need no
 * other coordination. A persistent request is started many times; each start
 * takes an operation reference again.
 *
 * Contract for devices (and anything else completing requests):
 *  - before calling hashi_request_complete(), set the outcome in req->status:
 *    receives: MPI_SOURCE, MPI_TAG, hashi_status_set_bytes() with the bytes
 *    written (never more than dev_bytes); MPI_ERROR = MPI_ERR_TRUNCATE when
 *    the message was longer, another error class when the operation failed;
 *    hashi_status_set_cancelled() when cancelled. MPI_ERROR is MPI_SUCCESS and
 *    the cancelled flag 0 when the request is handed to the device.
 *  - hashi_request_complete() may free the request: never touch it afterwards.
 *  - it may be called from inside isend/irecv/imrecv/cancel_* themselves.
 */
#ifndef HASHI_MPI_REQUEST_H
#define HASHI_MPI_REQUEST_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/refcount.h"

#include "device/device.h"

struct MPI_ABI_Comm;
struct MPI_ABI_Datatype;

enum hashi_req_kind {
    HASHI_REQ_SEND,
    HASHI_REQ_RECV,
    HASHI_REQ_PREQ_SEND,   /* persistent send (MPI_Send_init ...) */
    HASHI_REQ_PREQ_RECV,   /* persistent receive */
    HASHI_REQ_GREQ,        /* generalized request */
    HASHI_REQ_COLL,        /* collective schedule (blocking, nonblocking, persistent) */
    HASHI_REQ_PART_SEND,   /* partitioned send (MPI_Psend_init, p2p/partitioned.c) */
    HASHI_REQ_PART_RECV,   /* partitioned receive (MPI_Precv_init) */
};

enum hashi_send_mode {
    HASHI_SEND_STANDARD, HASHI_SEND_SYNC, HASHI_SEND_READY, HASHI_SEND_BUFFERED
};

/* Bytes kept in the request for the device's own per-operation state
 * (libfabric contexts, protocol state); large enough for all devices. */
#define HASHI_DEVICE_REQ_BYTES 192

#define HASHI_REQUEST_MAGIC 0x52455155u   /* "REQU": a live request */

/* req->flags */
enum {
    HASHI_REQF_PACK_OWNED  = 1 << 0,  /* pack_buf is malloc'd by this request: free it with it */
    HASHI_REQF_DEV_SEND    = 1 << 1,  /* a device send is in flight (counted for MPI_Finalize) */
    HASHI_REQF_PROC_NULL   = 1 << 2,  /* to/from MPI_PROC_NULL: never reaches the device */
    HASHI_REQF_CANCEL_ASKED = 1 << 3, /* MPI_Cancel was called on this activation */
    HASHI_REQF_COMPOUND    = 1 << 4,  /* completes when its children do (MPI_Isendrecv) */
    HASHI_REQF_SHARED      = 1 << 5,  /* p2p_sent_request(): one object for many handles, never freed */
};

struct MPI_ABI_Request {
    uint32_t magic;                 /* HASHI_REQUEST_MAGIC while allocated */
    enum hashi_req_kind kind;
    _Atomic int complete;           /* set last, with release ordering */
    atomic_int refs;                /* owner + operation in flight (see above) */
    int persistent;                 /* survives completion until MPI_Request_free */
    int active;                     /* persistent: started and not yet completed */
    unsigned flags;                 /* HASHI_REQF_* */
    MPI_Status status;

    /* The operation as the MPI call described it. */
    void *user_buf;
    MPI_Count count;
    MPI_Datatype datatype;
    struct MPI_ABI_Datatype *type;  /* datatype's object, retained while the request lives */
    struct MPI_ABI_Comm *comm;      /* retained while the request lives */
    int peer;                       /* dest or source rank in comm (or ANY_SOURCE) */
    int tag;
    enum hashi_send_mode send_mode;

    /* The operation as the device sees it: contiguous bytes and an envelope. */
    void *dev_buf;
    size_t dev_bytes;
    uint32_t context_id;
    int dest_world;                 /* send: the destination's world rank; receive: the source's (-1: any) */
    int my_comm_rank;               /* send: the sender's rank in comm */
    struct hashi_match match;       /* receive */
    void *pack_buf;                 /* packed copy of non-contiguous data, or NULL */

    /* Run on completion (unpack, release a Bsend buffer, next schedule step),
     * before `complete` is set; may not free the request. */
    void (*on_complete)(struct MPI_ABI_Request *req);
    /* Persistent kinds other than point-to-point (collectives) set `start`:
     * MPI_Start calls it after taking the operation reference. */
    int (*start)(struct MPI_ABI_Request *req);
    /* Run when the request is destroyed (owner state of collectives). */
    void (*on_free)(struct MPI_ABI_Request *req);
    void *extra;                    /* owner data for on_complete / collectives */

    /* Compound operations: a child reports its completion to its parent
     * (after its own on_complete, while its status is still readable). */
    struct MPI_ABI_Request *parent;
    void (*on_child_complete)(struct MPI_ABI_Request *parent, struct MPI_ABI_Request *child);
    int children_pending;

    /* Generalized requests (MPI_Grequest_start). */
    MPI_Grequest_query_function *greq_query;
    MPI_Grequest_free_function *greq_free;
    MPI_Grequest_cancel_function *greq_cancel;

    /* Persistent point-to-point: what the device prepared at MPI_Send_init /
     * MPI_Recv_init (p2p.psend_init / precv_init) for every start; released
     * by p2p.pfree when the request is destroyed. NULL: nothing prepared. */
    void *dev_prepared;

    /* Buffered mode with cancel_sends: the internal send of the copy this
     * request made last (a reference), which MPI_Cancel withdraws. */
    struct MPI_ABI_Request *copy_send;

    struct MPI_ABI_Request *next_free;
    _Alignas(16) unsigned char dev[HASHI_DEVICE_REQ_BYTES];
};

/* The status' hidden fields: a 64-bit byte count and the cancelled flag. */
static inline void hashi_status_set_bytes(MPI_Status *st, uint64_t bytes)
{
    st->MPI_internal[0] = (int)(uint32_t)bytes;
    st->MPI_internal[1] = (int)(uint32_t)(bytes >> 32);
}
static inline uint64_t hashi_status_bytes(const MPI_Status *st)
{
    return (uint64_t)(uint32_t)st->MPI_internal[0] | (uint64_t)(uint32_t)st->MPI_internal[1] << 32;
}
static inline void hashi_status_set_cancelled(MPI_Status *st, int cancelled)
{
    st->MPI_internal[2] = cancelled;
}
static inline int hashi_status_cancelled(const MPI_Status *st)
{
    return st->MPI_internal[2];
}
/* The standard's "empty" status: any source, any tag, no error, no data. */
static inline void hashi_status_set_empty(MPI_Status *st)
{
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = MPI_SUCCESS;
    hashi_status_set_bytes(st, 0);
    hashi_status_set_cancelled(st, 0);
}

/*
 * A new request of `kind` from the pool, every field cleared, one (owner)
 * reference, not complete. NULL only when memory is exhausted.
 */
struct MPI_ABI_Request *hashi_request_alloc(enum hashi_req_kind kind);
/* Drop the owner's reference (the request goes back to the pool once its
 * operation, if any, has completed too). */
void hashi_request_free(struct MPI_ABI_Request *req);
/* Take one more reference (an operation about to start). */
static inline void hashi_request_retain(struct MPI_ABI_Request *req)
{
    hashi_ref_inc(&req->refs);
}

/*
 * Called by devices (on the progress path) when an operation finishes: runs
 * on_complete, sets `complete` with release ordering, tells the parent (if
 * any), then drops the operation's reference (which may free the request).
 * hashi_request_complete_general is the whole of it, out of line.
 */
void hashi_request_complete_general(struct MPI_ABI_Request *req);
/* The last reference is gone: release what req holds and pool it. */
void hashi_request_destroy(struct MPI_ABI_Request *req);
static inline void hashi_request_complete(struct MPI_ABI_Request *req)
{
    /* Inline for the common case (a receive, nothing to run, no parent): it
     * is on the path from a message's arrival to the return of its MPI_Recv. */
    if (__builtin_expect((req->flags & HASHI_REQF_DEV_SEND) || req->on_complete || req->parent, 0)) {
        hashi_request_complete_general(req);
        return;
    }
    atomic_store_explicit(&req->complete, 1, memory_order_release);
    if (hashi_ref_dec(&req->refs))
        hashi_request_destroy(req);
}

static inline int hashi_request_is_complete(const struct MPI_ABI_Request *req)
{
    return atomic_load_explicit(&req->complete, memory_order_acquire);
}

/* The request behind a user handle, or NULL if it is not a live request. */
static inline struct MPI_ABI_Request *hashi_request_get(MPI_Request h)
{
    if ((uintptr_t)h < 0x1000u || ((uintptr_t)h & (_Alignof(struct MPI_ABI_Request) - 1)))
        return NULL;
    return h->magic == HASHI_REQUEST_MAGIC ? h : NULL;
}

#endif
