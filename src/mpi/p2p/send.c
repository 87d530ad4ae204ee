/*
 * Sends: standard, synchronous and ready mode, blocking, nonblocking and
 * persistent (buffered mode lives in bsend.c). Every form prepares a request
 * (envelope, contiguous bytes for the device) and starts it on the device in
 * call order, which with the device's ordering keeps messages non-overtaking.
 */
#include "mpi/p2p/p2p_impl.h"

#include <stdlib.h>
#include <string.h>

int p2p_prepare_send(struct MPI_ABI_Request *req, const void *buf, MPI_Count count, MPI_Datatype datatype,
                     struct MPI_ABI_Datatype *t, int dest, int tag, struct MPI_ABI_Comm *comm,
                     uint32_t context_id, enum hashi_send_mode mode)
{
    req->user_buf = (void *)buf;
    req->count = count;
    req->datatype = datatype;
    req->type = t;
    hashi_type_retain(t);
    req->comm = comm;
    hashi_comm_retain(comm);
    req->peer = dest;
    req->tag = tag;
    req->send_mode = mode;
    req->context_id = context_id;
    req->my_comm_rank = comm->rank;
    if (dest == MPI_PROC_NULL) {
        req->flags |= HASHI_REQF_PROC_NULL;
        return MPI_SUCCESS;
    }
    req->dest_world = hashi_comm_to_world(comm, dest);
    req->dev_bytes = (size_t)hashi_type_bytes(t, count);
    if (hashi_type_is_contig(t) || req->dev_bytes == 0) {
        req->dev_buf = req->dev_bytes ? p2p_offset(buf, t->true_lb) : (void *)buf;
        return MPI_SUCCESS;
    }
    /* Non-contiguous: one packed copy, made when the send starts. */
    req->pack_buf = malloc(req->dev_bytes);
    if (!req->pack_buf)
        return MPI_ERR_NO_MEM;
    req->flags |= HASHI_REQF_PACK_OWNED;
    req->dev_buf = req->pack_buf;
    return MPI_SUCCESS;
}

int p2p_start_send(struct MPI_ABI_Request *req)
{
    hashi_status_set_empty(&req->status);
    req->flags &= ~(unsigned)HASHI_REQF_CANCEL_ASKED;
    atomic_store_explicit(&req->complete, 0, memory_order_relaxed);
    hashi_request_retain(req);   /* the operation's reference */
    if (req->flags & HASHI_REQF_PROC_NULL) {
        hashi_request_complete(req);
        return MPI_SUCCESS;
    }
    if (req->pack_buf && req->pack_buf == req->dev_buf && (req->flags & HASHI_REQF_PACK_OWNED))
        hashi_type_pack(req->user_buf, req->count, req->type, 0, req->pack_buf, req->dev_bytes);
    req->flags |= HASHI_REQF_DEV_SEND;
    atomic_fetch_add_explicit(&hashi_p2p.sends_in_flight, 1, memory_order_relaxed);
    int rc = hashi_device->p2p.isend(req);
    if (rc != MPI_SUCCESS) {
        /* Not started: drop the operation's reference (and the count) again. */
        p2p_fail_request(req, rc);
        return rc;
    }
    return MPI_SUCCESS;
}

int hashi_isend_mode_internal(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                              struct MPI_ABI_Comm *comm, uint32_t context_id, enum hashi_send_mode mode,
                              struct MPI_ABI_Request **out)
{
    struct MPI_ABI_Datatype *t = hashi_type_get(type);
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_SEND);
    *out = NULL;
    if (!t)
        return MPI_ERR_TYPE;
    if (!req)
        return MPI_ERR_NO_MEM;
    int rc = p2p_prepare_send(req, buf, count, type, t, dest, tag, comm, context_id, mode);
    if (rc == MPI_SUCCESS)
        rc = p2p_start_send(req);
    if (rc != MPI_SUCCESS) {
        hashi_request_free(req);
        return rc;
    }
    *out = req;
    return MPI_SUCCESS;
}

int hashi_isend_internal(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                         struct MPI_ABI_Comm *comm, uint32_t context_id, struct MPI_ABI_Request **req)
{
    return hashi_isend_mode_internal(buf, count, type, dest, tag, comm, context_id, HASHI_SEND_STANDARD, req);
}

/* ---- the MPI calls ---- */

/* A started request (or, persistent, an inactive one) for checked arguments. */
static int send_request(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                        struct MPI_ABI_Datatype *t, int dest, int tag, MPI_Comm comm, struct MPI_ABI_Comm *c,
                        enum hashi_send_mode mode, int persistent, struct MPI_ABI_Request **out)
{
    struct MPI_ABI_Request *req = hashi_request_alloc(persistent ? HASHI_REQ_PREQ_SEND : HASHI_REQ_SEND);
    if (!req)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for a request");
    int rc = p2p_prepare_send(req, buf, count, datatype, t, dest, tag, c, c->context_id, mode);
    if (rc == MPI_SUCCESS && persistent) {
        rc = p2p_make_persistent(req);
        if (rc == MPI_SUCCESS) {
            *out = req;
            return MPI_SUCCESS;
        }
        size_t bytes = req->dev_bytes;
        hashi_request_free(req);
        return hashi_err_comm(func, comm, rc, "the device could not prepare a persistent send of %zu bytes to rank %d",
                              bytes, dest);
    }
    if (rc == MPI_SUCCESS)
        rc = p2p_start_send(req);
    if (rc != MPI_SUCCESS) {
        size_t bytes = req->dev_bytes;
        hashi_request_free(req);
        return hashi_err_comm(func, comm, rc, "%s of %zu bytes to rank %d could not start",
                              rc == MPI_ERR_NO_MEM ? "packing a send" : "the device send", bytes, dest);
    }
    *out = req;
    return MPI_SUCCESS;
}

/* Whether the device completes this send in the call (send_now): standard
 * or ready mode, contiguous, not to MPI_PROC_NULL, within the eager limit. */
static int send_now_fits(const struct MPI_ABI_Datatype *t, MPI_Count count, int dest, enum hashi_send_mode mode)
{
    return hashi_device->p2p.send_now && mode != HASHI_SEND_SYNC && dest != MPI_PROC_NULL &&
           hashi_type_is_contig(t) && (size_t)hashi_type_bytes(t, count) <= hashi_device->p2p.eager_limit;
}

/* The send_now_fits send, with no request and no wait. HASHI_DEVICE_P2P_DECLINE
 * if the device turns it down (the caller takes the request path). Inlined:
 * it is the whole of a small MPI_Send, and a call per layer shows there. */
static inline __attribute__((always_inline)) int send_now(const char *func, const void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t,
                    int dest, int tag, MPI_Comm comm, struct MPI_ABI_Comm *c)
{
    size_t bytes = (size_t)hashi_type_bytes(t, count);
    int rc = hashi_device->p2p.send_now(bytes ? p2p_offset(buf, t->true_lb) : buf, bytes,
                                        hashi_comm_to_world(c, dest), tag, c->context_id, c->rank);
    if (rc == MPI_SUCCESS || rc == HASHI_DEVICE_P2P_DECLINE)
        return rc;
    return hashi_err_comm(func, comm, rc, "the device send of %zu bytes to rank %d failed", bytes, dest);
}

int hashi_isend_now_internal(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                             struct MPI_ABI_Comm *comm, uint32_t context_id, struct MPI_ABI_Request **req)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    *req = NULL;
    if (t && send_now_fits(t, count, dest, HASHI_SEND_STANDARD)) {
        size_t bytes = (size_t)hashi_type_bytes(t, count);
        int rc = hashi_device->p2p.send_now(bytes ? p2p_offset(buf, t->true_lb) : buf, bytes,
                                            hashi_comm_to_world(comm, dest), tag, context_id, comm->rank);
        if (rc != HASHI_DEVICE_P2P_DECLINE)
            return rc;
    }
    return hashi_isend_internal(buf, count, type, dest, tag, comm, context_id, req);
}

/* A request the device completed is handed back to it for a cancel:
 * incomplete again, with an operation reference and, for a device send,
 * counted in flight (MPI_Finalize waits for the verdict). on_complete ran
 * at the first completion and does not run again. */
static void reopen(struct MPI_ABI_Request *req, int device_send)
{
    req->on_complete = NULL;
    hashi_request_retain(req);
    if (device_send) {
        req->flags |= HASHI_REQF_DEV_SEND;
        atomic_fetch_add_explicit(&hashi_p2p.sends_in_flight, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&req->complete, 0, memory_order_relaxed);
}

/* A buffered send's copy got its verdict: the program's request takes it. */
static void copy_verdict(struct MPI_ABI_Request *req, struct MPI_ABI_Request *copy)
{
    copy->parent = NULL;
    hashi_status_set_cancelled(&req->status, hashi_status_cancelled(&copy->status));
    hashi_request_complete(req);
}

void p2p_cancel_send(struct MPI_ABI_Request *req)
{
    struct MPI_ABI_Request *copy = req->copy_send;
    if (req->send_mode == HASHI_SEND_BUFFERED && !copy)
        return;   /* buffered to MPI_PROC_NULL: the device never had it */
    if (copy) {
        /* Buffered: the program's request completed when the copy was
         * made; it waits again, for the copy's send. */
        reopen(req, 0);
        copy->parent = req;
        req->on_child_complete = copy_verdict;
        req = copy;
    }
    if (hashi_request_is_complete(req))
        reopen(req, 1);
    hashi_device->p2p.cancel_send(req);
}

/* A blocking send: start, wait, and report the operation's error. Inlined
 * into each MPI call: a small MPI_Send is all send_now, and a call layer
 * with its saved registers shows there. */
static inline __attribute__((always_inline)) int send_blocking(const char *func, const void *buf, MPI_Count count,
                                                             MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                                             enum hashi_send_mode mode)
{
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *t;
    int rc = p2p_check_args(func, buf, count, datatype, dest, tag, comm, 0, &c, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    if (send_now_fits(t, count, dest, mode)) {
        rc = send_now(func, buf, count, t, dest, tag, comm, c);
        if (rc == MPI_SUCCESS && hashi_device->p2p.send_flush)
            hashi_device->p2p.send_flush();     /* a blocking send's message leaves now */
        if (rc != HASHI_DEVICE_P2P_DECLINE)
            return rc;
    }
    struct MPI_ABI_Request *req;
    rc = send_request(func, buf, count, datatype, t, dest, tag, comm, c, mode, 0, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    hashi_progress_wait(req);
    MPI_Status st = req->status;
    rc = st.MPI_ERROR;
    if (rc != MPI_SUCCESS) {
        hashi_comm_retain(c);
        hashi_request_free(req);
        rc = p2p_raise_request_error(func, c, rc, &st);
        hashi_comm_release(c);
        return rc;
    }
    hashi_request_free(req);
    return MPI_SUCCESS;
}

static int send_nonblocking(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                            int dest, int tag, MPI_Comm comm, enum hashi_send_mode mode, int persistent,
                            MPI_Request *request)
{
    if (!request)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "the request pointer is NULL");
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *t;
    int rc = p2p_check_args(func, buf, count, datatype, dest, tag, comm, 0, &c, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Request *req;
    if (!persistent && hashi_p2p.isend_shared && send_now_fits(t, count, dest, mode)) {
        /* Sent in the call: the program gets the shared request of sends
         * already complete (what an eager send's request would be by its
         * Wait), which MPI_Cancel cannot withdraw: it names no message
         * (HASHI_CANCEL_SENDS=all gives each its own request instead). */
        rc = send_now(func, buf, count, t, dest, tag, comm, c);
        if (rc == MPI_SUCCESS) {
            *request = p2p_sent_request();
            return MPI_SUCCESS;
        }
        if (rc != HASHI_DEVICE_P2P_DECLINE)
            return rc;
    }
    rc = send_request(func, buf, count, datatype, t, dest, tag, comm, c, mode, persistent, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    *request = req;
    return MPI_SUCCESS;
}

int hashi_impl_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED("MPI_Send");
    return send_blocking("MPI_Send", buf, count, datatype, dest, tag, comm, HASHI_SEND_STANDARD);
}

int hashi_impl_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED("MPI_Send");
    return send_blocking("MPI_Send", buf, count, datatype, dest, tag, comm, HASHI_SEND_STANDARD);
}

int hashi_impl_Ssend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED("MPI_Ssend");
    return send_blocking("MPI_Ssend", buf, count, datatype, dest, tag, comm, HASHI_SEND_SYNC);
}

int hashi_impl_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED("MPI_Ssend");
    return send_blocking("MPI_Ssend", buf, count, datatype, dest, tag, comm, HASHI_SEND_SYNC);
}

int hashi_impl_Rsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED("MPI_Rsend");
    return send_blocking("MPI_Rsend", buf, count, datatype, dest, tag, comm, HASHI_SEND_READY);
}

int hashi_impl_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED("MPI_Rsend");
    return send_blocking("MPI_Rsend", buf, count, datatype, dest, tag, comm, HASHI_SEND_READY);
}

int hashi_impl_Isend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                       MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Isend");
    return send_nonblocking("MPI_Isend", buf, count, datatype, dest, tag, comm, HASHI_SEND_STANDARD, 0, request);
}

int hashi_impl_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Isend");
    return send_nonblocking("MPI_Isend", buf, count, datatype, dest, tag, comm, HASHI_SEND_STANDARD, 0, request);
}

int hashi_impl_Issend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Issend");
    return send_nonblocking("MPI_Issend", buf, count, datatype, dest, tag, comm, HASHI_SEND_SYNC, 0, request);
}

int hashi_impl_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                      MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Issend");
    return send_nonblocking("MPI_Issend", buf, count, datatype, dest, tag, comm, HASHI_SEND_SYNC, 0, request);
}

int hashi_impl_Irsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Irsend");
    return send_nonblocking("MPI_Irsend", buf, count, datatype, dest, tag, comm, HASHI_SEND_READY, 0, request);
}

int hashi_impl_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                      MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Irsend");
    return send_nonblocking("MPI_Irsend", buf, count, datatype, dest, tag, comm, HASHI_SEND_READY, 0, request);
}

int hashi_impl_Send_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Send_init");
    return send_nonblocking("MPI_Send_init", buf, count, datatype, dest, tag, comm, HASHI_SEND_STANDARD, 1, request);
}

int hashi_impl_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Send_init");
    return send_nonblocking("MPI_Send_init", buf, count, datatype, dest, tag, comm, HASHI_SEND_STANDARD, 1, request);
}

int hashi_impl_Ssend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                            MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Ssend_init");
    return send_nonblocking("MPI_Ssend_init", buf, count, datatype, dest, tag, comm, HASHI_SEND_SYNC, 1, request);
}

int hashi_impl_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Ssend_init");
    return send_nonblocking("MPI_Ssend_init", buf, count, datatype, dest, tag, comm, HASHI_SEND_SYNC, 1, request);
}

int hashi_impl_Rsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                            MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Rsend_init");
    return send_nonblocking("MPI_Rsend_init", buf, count, datatype, dest, tag, comm, HASHI_SEND_READY, 1, request);
}

int hashi_impl_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Rsend_init");
    return send_nonblocking("MPI_Rsend_init", buf, count, datatype, dest, tag, comm, HASHI_SEND_READY, 1, request);
}
