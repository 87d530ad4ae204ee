/*
 * Generalized requests (MPI_Grequest_start / MPI_Grequest_complete): the
 * program's own operations behind an MPI_Request. The completion calls ask
 * query_fn for the status and then call free_fn; MPI_Request_free before
 * completion defers free_fn to MPI_Grequest_complete; MPI_Cancel calls
 * cancel_fn. The request's "operation" reference is held until
 * MPI_Grequest_complete.
 */
#include "mpi/p2p/p2p_impl.h"
#include "runtime/rt.h"
#include "runtime/wake.h"

/* The request goes away: free_fn, unless a completion call ran it already. */
static void greq_destroyed(struct MPI_ABI_Request *req)
{
    if (req->greq_free) {
        MPI_Grequest_free_function *fn = req->greq_free;
        req->greq_free = NULL;
        /* Nobody can receive this error: the handle was freed before completion. */
        (void)fn(req->extra);
    }
}

int hashi_impl_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                              MPI_Grequest_cancel_function *cancel_fn, void *extra_state, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Grequest_start");
    if (!request)
        return hashi_err_raise("MPI_Grequest_start", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "the request pointer is NULL");
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_GREQ);
    if (!req)
        return hashi_err_raise("MPI_Grequest_start", HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "no memory for a request");
    req->greq_query = query_fn;
    req->greq_free = free_fn;
    req->greq_cancel = cancel_fn;
    req->extra = extra_state;
    req->on_free = greq_destroyed;
    hashi_request_retain(req);   /* held until MPI_Grequest_complete */
    *request = req;
    return MPI_SUCCESS;
}

int hashi_impl_Grequest_complete(MPI_Request request)
{
    HASHI_CHECK_INITIALIZED("MPI_Grequest_complete");
    struct MPI_ABI_Request *req = hashi_request_get(request);
    if (!req || req->kind != HASHI_REQ_GREQ)
        return hashi_err_raise("MPI_Grequest_complete", HASHI_OBJ_NONE, NULL, MPI_ERR_REQUEST,
                               "the handle is not a generalized request");
    if (hashi_request_is_complete(req))
        return hashi_err_raise("MPI_Grequest_complete", HASHI_OBJ_NONE, NULL, MPI_ERR_REQUEST,
                               "the generalized request is complete already");
    hashi_request_complete(req);
    /* A thread of this rank may sleep in MPI_Wait on it. */
    hashi_wake_peer(hashi_job.rank);
    return MPI_SUCCESS;
}
