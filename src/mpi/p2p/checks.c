/*
 * Argument checks of the point-to-point calls. Each raises its error on the
 * call's communicator (so the program's handler decides) with a message that
 * names the call and the bad value, and returns what the handler returned.
 * The order (communicator, count, datatype, buffer, rank, tag) makes the
 * first wrong argument the one reported.
 */
#include "mpi/p2p/p2p_impl.h"

int p2p_check_count(const char *func, MPI_Comm comm, MPI_Count count)
{
    if (count < 0)
        return hashi_err_comm(func, comm, MPI_ERR_COUNT, "count %lld is negative", (long long)count);
    return MPI_SUCCESS;
}

struct MPI_ABI_Datatype *p2p_check_type(const char *func, MPI_Comm comm, MPI_Datatype type, int *err)
{
    const char *why = NULL;
    int rc = hashi_type_check(type, 1, &why);
    if (rc != MPI_SUCCESS) {
        *err = hashi_err_comm(func, comm, rc, "%s", why ? why : "invalid datatype");
        return NULL;
    }
    *err = MPI_SUCCESS;
    return hashi_type_get(type);
}

int p2p_check_buffer(const char *func, MPI_Comm comm, const void *buf, MPI_Count count,
                     const struct MPI_ABI_Datatype *t)
{
    /* NULL is MPI_BOTTOM: legal when the datatype carries absolute addresses
     * (a derived type whose data does not start at displacement 0). */
    if (!buf && count > 0 && t->size > 0 && (t->predefined || t->true_lb == 0))
        return hashi_err_comm(func, comm, MPI_ERR_BUFFER, "the buffer is NULL but count is %lld",
                              (long long)count);
    if (t->size > 0 && count > INT64_MAX / t->size)
        return hashi_err_comm(func, comm, MPI_ERR_COUNT, "count %lld of a %lld-byte datatype overflows",
                              (long long)count, (long long)t->size);
    return MPI_SUCCESS;
}

int p2p_check_rank(const char *func, const struct MPI_ABI_Comm *c, MPI_Comm comm, int rank, int allow_any)
{
    if (rank == MPI_PROC_NULL || (allow_any && rank == MPI_ANY_SOURCE))
        return MPI_SUCCESS;
    if (rank < 0 || rank >= c->peer_size)
        return hashi_err_comm(func, comm, MPI_ERR_RANK, "invalid %s rank %d (%s %d)",
                              allow_any ? "source" : "destination", rank,
                              c->remote_group ? "the intercommunicator's remote group size" : "communicator size",
                              c->peer_size);
    return MPI_SUCCESS;
}

int p2p_check_tag(const char *func, MPI_Comm comm, int tag, int allow_any)
{
    if (allow_any && tag == MPI_ANY_TAG)
        return MPI_SUCCESS;
    if (tag < 0 || tag > hashi_p2p.tag_ub)
        return hashi_err_comm(func, comm, MPI_ERR_TAG, "invalid tag %d (valid: 0 to MPI_TAG_UB = %d%s)",
                              tag, hashi_p2p.tag_ub, allow_any ? ", or MPI_ANY_TAG" : "");
    return MPI_SUCCESS;
}

int p2p_check_args_each(const char *func, const void *buf, MPI_Count count, MPI_Datatype type, int peer,
                        int tag, MPI_Comm comm, int is_recv, struct MPI_ABI_Comm **c, struct MPI_ABI_Datatype **t)
{
    int rc;
    if (!(*c = hashi_comm_arg(func, comm, &rc)))
        return rc;
    if ((rc = p2p_check_count(func, comm, count)) != MPI_SUCCESS)
        return rc;
    if (!(*t = p2p_check_type(func, comm, type, &rc)))
        return rc;
    if ((rc = p2p_check_buffer(func, comm, buf, count, *t)) != MPI_SUCCESS)
        return rc;
    if ((rc = p2p_check_rank(func, *c, comm, peer, is_recv)) != MPI_SUCCESS)
        return rc;
    return p2p_check_tag(func, comm, tag, is_recv);
}

int p2p_check_request_ptr(const char *func, MPI_Request *request, struct MPI_ABI_Request **req)
{
    if (!request)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "the request pointer is NULL");
    if (!(*req = hashi_request_get(*request)))
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_REQUEST, "%s",
                               *request == MPI_REQUEST_NULL ? "the request is MPI_REQUEST_NULL"
                               : "the handle is not a live request (freed, or never one)");
    return MPI_SUCCESS;
}

int p2p_check_request_array(const char *func, int count, const MPI_Request array[])
{
    if (count < 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_COUNT, "count %d is negative", count);
    if (count > 0 && !array)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "the array of requests is NULL but count is %d", count);
    for (int i = 0; i < count; i++)
        if (array[i] != MPI_REQUEST_NULL && !hashi_request_get(array[i]))
            return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_REQUEST,
                                   "entry %d of the array is not a live request", i);
    return MPI_SUCCESS;
}
