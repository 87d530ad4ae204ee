/*
 * Private to src/mpi/p2p: the layer's state, argument checks shared by the
 * calls, and the start/finish steps every operation goes through.
 */
#ifndef HASHI_MPI_P2P_IMPL_H
#define HASHI_MPI_P2P_IMPL_H

#include "mpi/mpi_impl.h"
#include "mpi/comm.h"
#include "mpi/datatype.h"
#include "mpi/p2p.h"
#include "mpi/request.h"

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The tag limit used when the device does not state its own: the standard's
 * minimum is 32767, Hashi promises 2^23 - 1 on every device. */
#define HASHI_P2P_DEFAULT_TAG_UB ((1 << 23) - 1)

/* ---- request pool ---- */

/* Requests come from slabs that are never returned while MPI runs, so a stale
 * handle still points at a request-shaped object whose magic says "freed". */
struct hashi_request_slab {
    struct hashi_request_slab *next;
};

struct hashi_request_pool {
    struct MPI_ABI_Request *free_list;
    struct hashi_request_slab *slabs;
    size_t slab_count;
    size_t in_use;          /* allocated and not yet returned */
    /* MPI_THREAD_MULTIPLE: a lock (or per-thread caches) goes here. */
};

/*
 * A request's fields as hashi_request_alloc hands it out: everything before
 * the device's area (which the device initialises itself when it starts an
 * operation) cleared, one (owner) reference, not complete. Shared with the
 * blocking receive's request on the stack (recv.c). Cleared one 64-byte
 * block at a time: GCC makes one 256-byte memset a `rep stosq`, which costs
 * 15-17 ns here against 6 ns for the same bytes as vector stores, and every
 * receive paid it.
 */
static inline void p2p_request_init(struct MPI_ABI_Request *req, enum hashi_req_kind kind)
{
    enum { BLOCK = 64, CLEAR = offsetof(struct MPI_ABI_Request, dev) };
    size_t off = 0;
    for (; off + BLOCK <= CLEAR; off += BLOCK)
        memset((unsigned char *)req + off, 0, BLOCK);
    memset((unsigned char *)req + off, 0, CLEAR % BLOCK);
    req->magic = HASHI_REQUEST_MAGIC;
    req->kind = kind;
    req->datatype = MPI_DATATYPE_NULL;
    atomic_init(&req->complete, 0);
    atomic_init(&req->refs, 1);
    hashi_status_set_empty(&req->status);
}

/* ---- buffered sends ---- */

struct bsend_segment;

/* One attached buffer (process-wide, or a communicator's). */
struct hashi_bsend_buffer {
    unsigned char *base;            /* aligned start inside the user's buffer */
    void *user_addr;                /* what the user attached (returned by detach) */
    MPI_Count user_size;
    int attached;
    int automatic;                  /* MPI_BUFFER_AUTOMATIC: segments are malloc'd */
    struct bsend_segment *segments; /* address-ordered, free and used */
    long pending;                   /* messages whose send has not completed */
    struct MPI_ABI_Request *flush_waiters; /* MPI_*_iflush_buffer requests (chained by extra) */
};

/* A communicator's attached buffer (MPI_Comm_attach_buffer). */
struct hashi_comm_buffer {
    struct hashi_comm_buffer *next;
    const void *owner;   /* the communicator or the session it is attached to */
    struct hashi_bsend_buffer buf;
};

/* ---- the layer's state ---- */

#define HASHI_PROGRESS_HOOKS_MAX 16
/* An oversubscribed rank spins HASHI_SPIN_COUNT / this many idle polls (by
 * default 1) before it yields: what it waits for comes from a rank that
 * needs its core. 5 polls instead of 1 cost 4 ranks on 2 cores 5-25% in 8-byte
 * barrier, reduce, allreduce, alltoall (quiet machine, three runs against
 * Open MPI; docs/dimmnet.md, "Sixth session: oversubscribed collectives");
 * a ping-pong beside two waiting ranks is the same either way. */
#define HASHI_OVERSUBSCRIBED_SPIN_DIVISOR 2000

struct hashi_p2p_state {
    struct hashi_request_pool pool;
    /* Device sends started and not completed: MPI_Finalize drains them. */
    atomic_long sends_in_flight;
    /* Waiting: idle polls before sleeping (oversubscribed) or yielding, and
     * the bound on one sleep: sleep_us at first, doubling up to sleep_max_us
     * while the rank stays idle. */
    long spin_limit;
    long sleep_us;
    long sleep_max_us;
    int64_t yield_ns;           /* oversubscribed: yield this long before sleeping */
    int oversubscribed;
    int tag_ub;
    /* MPI_Cancel asks the device to withdraw sends (it has cancel_send and
     * HASHI_CANCEL_SENDS is not none). */
    int cancel_sends;
    /* MPI_Isend of a small message the device sends in the call returns the
     * shared request of completed sends, which names no message, so it
     * cannot be cancelled (off under HASHI_CANCEL_SENDS=all). */
    int isend_shared;
    int (*hooks[HASHI_PROGRESS_HOOKS_MAX])(void);
    int hook_count;
    struct hashi_bsend_buffer process_buffer;   /* MPI_Buffer_attach */
    struct hashi_comm_buffer *comm_buffers;
};
extern struct hashi_p2p_state hashi_p2p;

/* ---- argument checks: MPI_SUCCESS or the raised error ---- */

/* The communicator object, or NULL after raising MPI_ERR_COMM. */
int p2p_check_count(const char *func, MPI_Comm comm, MPI_Count count);
/* The committed type's object, or NULL after raising MPI_ERR_TYPE. */
struct MPI_ABI_Datatype *p2p_check_type(const char *func, MPI_Comm comm, MPI_Datatype type, int *err);
int p2p_check_buffer(const char *func, MPI_Comm comm, const void *buf, MPI_Count count,
                     const struct MPI_ABI_Datatype *t);
/* A destination (or, with allow_any, a source) rank: 0..size-1, PROC_NULL. */
int p2p_check_rank(const char *func, const struct MPI_ABI_Comm *c, MPI_Comm comm, int rank, int allow_any);
int p2p_check_tag(const char *func, MPI_Comm comm, int tag, int allow_any);
/* All of the above, one by one, naming the first bad argument. */
int p2p_check_args_each(const char *func, const void *buf, MPI_Count count, MPI_Datatype type, int peer,
                        int tag, MPI_Comm comm, int is_recv, struct MPI_ABI_Comm **c, struct MPI_ABI_Datatype **t);
/* All of the above for a send or a receive (buffer, count, type, peer, tag,
 * comm). Every call of a correct program passes them all: they are tested in
 * one go, inline (no division, no message); only a failure runs them one by
 * one. */
static inline int p2p_check_args(const char *func, const void *buf, MPI_Count count, MPI_Datatype type,
                                 int peer, int tag, MPI_Comm comm, int is_recv, struct MPI_ABI_Comm **c,
                                 struct MPI_ABI_Datatype **t)
{
    struct MPI_ABI_Comm *cc = hashi_comm_get(comm);
    struct MPI_ABI_Datatype *tt = hashi_type_get(type);
    if (__builtin_expect(cc && tt && tt->committed && (uint64_t)count <= UINT32_MAX &&
                         (uint64_t)tt->size <= UINT32_MAX &&
                         (buf || count == 0 || tt->size == 0 || !(tt->predefined || tt->true_lb == 0)) &&
                         ((unsigned)peer < (unsigned)cc->peer_size || peer == MPI_PROC_NULL ||
                          (is_recv && peer == MPI_ANY_SOURCE)) &&
                         ((tag >= 0 && tag <= hashi_p2p.tag_ub) || (is_recv && tag == MPI_ANY_TAG)), 1)) {
        *c = cc;
        *t = tt;
        return MPI_SUCCESS;
    }
    return p2p_check_args_each(func, buf, count, type, peer, tag, comm, is_recv, c, t);
}
/* An MPI_Request* argument that must point at a live request (not NULL). */
int p2p_check_request_ptr(const char *func, MPI_Request *request, struct MPI_ABI_Request **req);
/* The (count, array) of the multiple-completion calls. */
int p2p_check_request_array(const char *func, int count, const MPI_Request array[]);
/* An int-typed count argument of an MPI call (the non-_c forms). */
static inline int p2p_count_fits_int(MPI_Count v) { return v >= INT_MIN && v <= INT_MAX; }

/* ---- operations (no checks, no error handler: MPI_SUCCESS or a class) ---- */

/* Fill req for a send / a receive of (buf, count, t) and take references on
 * comm and type. Non-contiguous data gets its pack buffer here. */
int p2p_prepare_send(struct MPI_ABI_Request *req, const void *buf, MPI_Count count, MPI_Datatype datatype,
                     struct MPI_ABI_Datatype *t, int dest, int tag, struct MPI_ABI_Comm *comm,
                     uint32_t context_id, enum hashi_send_mode mode);
int p2p_prepare_recv(struct MPI_ABI_Request *req, void *buf, MPI_Count count, MPI_Datatype datatype,
                     struct MPI_ABI_Datatype *t, int source, int tag, struct MPI_ABI_Comm *comm,
                     uint32_t context_id);
/* Make a prepared send or receive (not buffered mode) persistent and
 * inactive, and let the device prepare its buffer for every start
 * (p2p.psend_init / precv_init). MPI_SUCCESS or the device's error class. */
int p2p_make_persistent(struct MPI_ABI_Request *req);
/* Hand a prepared request to the device (packing first for sends). */
int p2p_start_send(struct MPI_ABI_Request *req);
int p2p_start_recv(struct MPI_ABI_Request *req);
/* Receive a message matched by improbe into a prepared receive request. */
int p2p_start_mrecv(struct MPI_ABI_Request *req, struct hashi_message *msg);
/* A buffered send of (buf, count, t): copied into the attached buffer and sent. */
int p2p_bsend(const char *func, const void *buf, MPI_Count count, struct MPI_ABI_Datatype *t,
              int dest, int tag, struct MPI_ABI_Comm *comm, MPI_Comm handle);
/* The same; with cancel_sends, *copy_send gets a reference to the internal
 * send of the copy (else NULL), for MPI_Cancel of the program's request. */
int p2p_bsend_copy(const char *func, const void *buf, MPI_Count count, struct MPI_ABI_Datatype *t, int dest,
                   int tag, struct MPI_ABI_Comm *comm, MPI_Comm handle, struct MPI_ABI_Request **copy_send);
/* MPI_Cancel of an active send that has not failed (possibly complete: an
 * eager send is once its copy is out): the device asks the receiver, and
 * the request completes (again) with its verdict. Needs cancel_sends. */
void p2p_cancel_send(struct MPI_ABI_Request *req);

/* A request that is complete from the start (PROC_NULL, buffered sends). */
struct MPI_ABI_Request *p2p_completed_request(enum hashi_req_kind kind, int proc_null);
/* The request of a send that completed in the call (MPI_Isend of an eager
 * message the device took at once): one shared object, like MPICH's
 * lightweight request, so such a send allocates and frees nothing. It is
 * complete, its status empty, and finishing or freeing it only sets the
 * handle to MPI_REQUEST_NULL; nothing ever writes it. */
struct MPI_ABI_Request *p2p_sent_request(void);

/* Complete a request with an error class (a device refused to start it). */
void p2p_fail_request(struct MPI_ABI_Request *req, int errclass);

/*
 * Finishing a completed request for the user: copy its status (MPI_ERROR only
 * when the operation failed, as the standard asks of single completions),
 * deactivate a persistent request or free the others (setting *handle to
 * MPI_REQUEST_NULL). Returns the operation's error code (MPI_SUCCESS, or the
 * class/code to raise), and for a generalized request runs query_fn/free_fn.
 */
int p2p_request_finish(MPI_Request *handle, MPI_Status *status);
/* Copy a request's status out, MPI_ERROR only when the operation failed. */
static inline void p2p_copy_status(MPI_Status *out, const MPI_Status *st, int err)
{
    if (out == MPI_STATUS_IGNORE)
        return;
    int keep_error = out->MPI_ERROR;
    *out = *st;
    out->MPI_ERROR = err != MPI_SUCCESS ? err : keep_error;
}
/* The status and error of a completed request without finishing it
 * (MPI_Request_get_status). */
int p2p_request_peek(struct MPI_ABI_Request *req, MPI_Status *status);
/* Whether a handle in an array counts as "active" for the completion calls
 * (inline: Waitall and friends ask it of every entry on every poll). */
static inline int p2p_request_is_active(MPI_Request h)
{
    struct MPI_ABI_Request *req = hashi_request_get(h);
    return req && (!req->persistent || req->active);
}
/* Raise an operation's error from a completion call, on the request's comm. */
int p2p_raise_request_error(const char *func, struct MPI_ABI_Comm *comm, int code, const MPI_Status *st);

/* The buffer a buffered send on comm uses (comm's own, else the process's), or NULL. */
struct hashi_bsend_buffer *p2p_bsend_buffer_for(struct MPI_ABI_Comm *comm);

/* The user-visible handle of a communicator object (for error handlers). */
static inline MPI_Comm p2p_comm_handle(struct MPI_ABI_Comm *c)
{
    if (c == &hashi_comm_world) return MPI_COMM_WORLD;
    if (c == &hashi_comm_self) return MPI_COMM_SELF;
    return c;
}

/* Pointer arithmetic that is also defined for MPI_BOTTOM (NULL) + displacement. */
static inline void *p2p_offset(const void *buf, MPI_Aint disp)
{
    return (void *)((uintptr_t)buf + (uintptr_t)disp);
}

/* Partitioned communication (partitioned.c): forget comm's pairing counters. */
void p2p_part_comm_destroyed(struct MPI_ABI_Comm *comm);

void p2p_requests_init(void);
/* The receive path's MPI_T counters (recv.c). */
void p2p_recv_pvars_register(void);
int p2p_requests_finalize(void);
void p2p_bsend_finalize(void);

#endif
