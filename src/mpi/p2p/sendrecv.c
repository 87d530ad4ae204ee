/*
 * MPI_Sendrecv, MPI_Sendrecv_replace and their nonblocking MPI-4 forms. The
 * receive is posted before the send, so two ranks exchanging with each other
 * never depend on the device buffering. The _replace forms send a packed copy
 * of the buffer, which the receive then overwrites.
 */
#include "mpi/p2p/p2p_impl.h"

#include <stdlib.h>
#include <string.h>

/* The send half's checks and the receive half's, each with its own message. */
static int sendrecv_check(const char *func, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          int dest, int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                          int source, int recvtag, MPI_Comm comm, struct MPI_ABI_Comm **c,
                          struct MPI_ABI_Datatype **st, struct MPI_ABI_Datatype **rt)
{
    int rc = p2p_check_args(func, sendbuf, sendcount, sendtype, dest, sendtag, comm, 0, c, st);
    if (rc != MPI_SUCCESS)
        return rc;
    return p2p_check_args(func, recvbuf, recvcount, recvtype, source, recvtag, comm, 1, c, rt);
}

/* A packed copy of (buf, count, t) for the _replace forms (NULL when empty). */
static int pack_copy(const void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t, void **copy,
                     size_t *bytes)
{
    *bytes = (size_t)hashi_type_bytes(t, count);
    *copy = NULL;
    if (*bytes == 0)
        return MPI_SUCCESS;
    if (!(*copy = malloc(*bytes)))
        return MPI_ERR_NO_MEM;
    if (hashi_type_is_contig(t))
        memcpy(*copy, p2p_offset(buf, t->true_lb), *bytes);
    else
        hashi_type_pack(buf, count, t, 0, *copy, *bytes);
    return MPI_SUCCESS;
}

/*
 * Start both halves: reqs[0] the receive, reqs[1] the send. On failure nothing
 * is left pending (a started receive is waited for after cancelling it).
 */
static int start_pair(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                      void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                      struct MPI_ABI_Comm *c, struct MPI_ABI_Request *reqs[2])
{
    int rc = hashi_irecv_internal(recvbuf, recvcount, recvtype, source, recvtag, c, c->context_id, &reqs[0]);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = hashi_isend_internal(sendbuf, sendcount, sendtype, dest, sendtag, c, c->context_id, &reqs[1]);
    if (rc != MPI_SUCCESS) {
        if (!hashi_request_is_complete(reqs[0]))
            hashi_device->p2p.cancel_recv(reqs[0]);
        hashi_wait_internal(reqs[0], NULL);
        reqs[0] = NULL;
    }
    return rc;
}

/* Wait for both halves; the receive's status; the first error raised. */
static int finish_pair(const char *func, MPI_Comm comm, struct MPI_ABI_Request *reqs[2], MPI_Status *status)
{
    MPI_Status rst, sst;
    int rrc = hashi_wait_internal(reqs[0], &rst);
    int src = hashi_wait_internal(reqs[1], &sst);
    if (status != MPI_STATUS_IGNORE) {
        int keep = status->MPI_ERROR;
        *status = rst;
        status->MPI_ERROR = rrc != MPI_SUCCESS ? rrc : keep;
    }
    if (rrc != MPI_SUCCESS)
        return p2p_raise_request_error(func, hashi_comm_get(comm), rrc, &rst);
    if (src != MPI_SUCCESS)
        return hashi_err_comm(func, comm, src, "the send half failed");
    return MPI_SUCCESS;
}

static int sendrecv_call(const char *func, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         int dest, int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *st, *rt;
    int rc = sendrecv_check(func, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                            source, recvtag, comm, &c, &st, &rt);
    if (rc != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Request *reqs[2];
    rc = start_pair(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                    c, reqs);
    if (rc != MPI_SUCCESS)
        return hashi_err_comm(func, comm, rc, "starting the exchange with ranks %d and %d failed", dest, source);
    return finish_pair(func, comm, reqs, status);
}

int hashi_impl_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                          int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source,
                          int recvtag, MPI_Comm comm, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Sendrecv");
    return sendrecv_call("MPI_Sendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                         recvtype, source, recvtag, comm, status);
}

int hashi_impl_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                        MPI_Comm comm, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Sendrecv");
    return sendrecv_call("MPI_Sendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                         recvtype, source, recvtag, comm, status);
}

static int sendrecv_replace_call(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                 int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *t, *rt;
    int rc = sendrecv_check(func, buf, count, datatype, dest, sendtag, buf, count, datatype, source, recvtag,
                            comm, &c, &t, &rt);
    if (rc != MPI_SUCCESS)
        return rc;
    void *copy = NULL;
    size_t bytes = 0;
    if (dest != MPI_PROC_NULL && (rc = pack_copy(buf, count, t, &copy, &bytes)) != MPI_SUCCESS)
        return hashi_err_comm(func, comm, rc, "no memory for a copy of the %lld-byte message",
                              (long long)hashi_type_bytes(t, count));
    struct MPI_ABI_Request *reqs[2];
    rc = start_pair(copy, (MPI_Count)bytes, MPI_BYTE, dest, sendtag, buf, count, datatype, source, recvtag,
                    c, reqs);
    if (rc != MPI_SUCCESS) {
        free(copy);
        return hashi_err_comm(func, comm, rc, "starting the exchange with ranks %d and %d failed", dest, source);
    }
    rc = finish_pair(func, comm, reqs, status);
    free(copy);
    return rc;
}

int hashi_impl_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                                  int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Sendrecv_replace");
    return sendrecv_replace_call("MPI_Sendrecv_replace", buf, count, datatype, dest, sendtag, source, recvtag,
                                 comm, status);
}

int hashi_impl_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                                int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Sendrecv_replace");
    return sendrecv_replace_call("MPI_Sendrecv_replace", buf, count, datatype, dest, sendtag, source, recvtag,
                                 comm, status);
}

/* ---- MPI_Isendrecv, MPI_Isendrecv_replace: one request over two ---- */

/* A half finished: the parent completes with the receive's status (and the
 * send's error if only the send failed) once both have. */
static void pair_child_done(struct MPI_ABI_Request *parent, struct MPI_ABI_Request *child)
{
    if (child->kind == HASHI_REQ_RECV) {
        int keep = parent->status.MPI_ERROR;
        parent->status = child->status;
        if (keep != MPI_SUCCESS && child->status.MPI_ERROR == MPI_SUCCESS)
            parent->status.MPI_ERROR = keep;
    } else if (child->status.MPI_ERROR != MPI_SUCCESS && parent->status.MPI_ERROR == MPI_SUCCESS) {
        parent->status.MPI_ERROR = child->status.MPI_ERROR;
    }
    if (--parent->children_pending == 0)
        hashi_request_complete(parent);
}

static int isendrecv_start(const char *func, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           int dest, int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                           int source, int recvtag, MPI_Comm comm, struct MPI_ABI_Comm *c, void *copy,
                           MPI_Request *request)
{
    struct MPI_ABI_Request *parent = hashi_request_alloc(HASHI_REQ_RECV);
    if (!parent) {
        free(copy);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for a request");
    }
    parent->flags |= HASHI_REQF_COMPOUND;
    parent->comm = c;
    hashi_comm_retain(c);
    if (copy) {
        parent->pack_buf = copy;     /* freed with the parent, after the send */
        parent->flags |= HASHI_REQF_PACK_OWNED;
    }
    parent->on_child_complete = pair_child_done;
    parent->children_pending = 2;
    hashi_request_retain(parent);    /* the operation: dropped when both halves are done */

    struct MPI_ABI_Request *reqs[2];
    int rc = start_pair(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                        recvtag, c, reqs);
    if (rc != MPI_SUCCESS) {
        parent->children_pending = 0;
        hashi_request_complete(parent);
        hashi_request_free(parent);
        return hashi_err_comm(func, comm, rc, "starting the exchange with ranks %d and %d failed", dest, source);
    }
    /* Children that completed inside their start did not see the parent yet. */
    for (int i = 0; i < 2; i++) {
        if (hashi_request_is_complete(reqs[i]))
            pair_child_done(parent, reqs[i]);
        else
            reqs[i]->parent = parent;
        hashi_request_free(reqs[i]);
    }
    *request = parent;
    return MPI_SUCCESS;
}

static int isendrecv_call(const char *func, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          int dest, int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                          int source, int recvtag, MPI_Comm comm, MPI_Request *request)
{
    if (!request)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "the request pointer is NULL");
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *st, *rt;
    int rc = sendrecv_check(func, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                            source, recvtag, comm, &c, &st, &rt);
    if (rc != MPI_SUCCESS)
        return rc;
    return isendrecv_start(func, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                           source, recvtag, comm, c, NULL, request);
}

int hashi_impl_Isendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                           int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source,
                           int recvtag, MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Isendrecv");
    return isendrecv_call("MPI_Isendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                          recvtype, source, recvtag, comm, request);
}

int hashi_impl_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                         MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Isendrecv");
    return isendrecv_call("MPI_Isendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                          recvtype, source, recvtag, comm, request);
}

static int isendrecv_replace_call(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                                  int dest, int sendtag, int source, int recvtag, MPI_Comm comm,
                                  MPI_Request *request)
{
    if (!request)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "the request pointer is NULL");
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *t, *rt;
    int rc = sendrecv_check(func, buf, count, datatype, dest, sendtag, buf, count, datatype, source, recvtag,
                            comm, &c, &t, &rt);
    if (rc != MPI_SUCCESS)
        return rc;
    void *copy = NULL;
    size_t bytes = 0;
    if (dest != MPI_PROC_NULL && (rc = pack_copy(buf, count, t, &copy, &bytes)) != MPI_SUCCESS)
        return hashi_err_comm(func, comm, rc, "no memory for a copy of the %lld-byte message",
                              (long long)hashi_type_bytes(t, count));
    return isendrecv_start(func, copy, (MPI_Count)bytes, MPI_BYTE, dest, sendtag, buf, count, datatype, source,
                           recvtag, comm, c, copy, request);
}

int hashi_impl_Isendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                                   int source, int recvtag, MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Isendrecv_replace");
    return isendrecv_replace_call("MPI_Isendrecv_replace", buf, count, datatype, dest, sendtag, source, recvtag,
                                  comm, request);
}

int hashi_impl_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                                 int source, int recvtag, MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Isendrecv_replace");
    return isendrecv_replace_call("MPI_Isendrecv_replace", buf, count, datatype, dest, sendtag, source, recvtag,
                                  comm, request);
}
