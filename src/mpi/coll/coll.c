/*
 * What every collective call shares: argument checks (raised on the call's
 * communicator, naming the call and the value) and the end of the call, where
 * a built schedule runs (blocking) or becomes a request.
 */
#include "mpi/coll/coll.h"
#include "mpi/comm.h"

#include <stdint.h>

struct MPI_ABI_Comm *hashi_coll_call_comm(const struct hashi_coll_call *call, MPI_Comm comm, int *rc)
{
    if (hashi_init_state != HASHI_STATE_INITIALIZED) {
        *rc = hashi_err_not_initialized(call->func);
        return NULL;
    }
    struct MPI_ABI_Comm *c = hashi_comm_arg(call->func, comm, rc);
    if (c && hashi_comm_is_inter(c)) {
        /* The collectives that take one go to coll/inter.c before this. */
        *rc = hashi_err_comm(call->func, comm, MPI_ERR_COMM, "%s is not supported on an intercommunicator",
                             call->func);
        return NULL;
    }
    if (c && call->mode != HASHI_COLL_BLOCKING && !call->request) {
        *rc = hashi_err_comm(call->func, comm, MPI_ERR_ARG, "the request pointer is NULL");
        return NULL;
    }
    return c;
}

struct MPI_ABI_Comm *hashi_coll_call_vector(const struct hashi_coll_call *call, MPI_Comm comm, MPI_Count count,
                                            MPI_Datatype type, struct MPI_ABI_Datatype **t, int *rc)
{
    struct MPI_ABI_Comm *c = hashi_coll_call_comm(call, comm, rc);
    if (!c || (*rc = hashi_coll_check_count(call->func, comm, count, "count")) != MPI_SUCCESS)
        return NULL;
    *t = hashi_coll_check_type(call->func, comm, type, "datatype", rc);
    return *t ? c : NULL;
}

int hashi_coll_check_count(const char *func, MPI_Comm comm, MPI_Count count, const char *what)
{
    if (count < 0)
        return hashi_err_comm(func, comm, MPI_ERR_COUNT, "%s %lld is negative", what, (long long)count);
    return MPI_SUCCESS;
}

struct MPI_ABI_Datatype *hashi_coll_check_type(const char *func, MPI_Comm comm, MPI_Datatype type,
                                               const char *what, int *rc)
{
    const char *why = NULL;
    if (hashi_type_check(type, 1, &why) != MPI_SUCCESS) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_TYPE, "%s: %s", what, why ? why : "invalid datatype");
        return NULL;
    }
    *rc = MPI_SUCCESS;
    return hashi_type_get(type);
}

int hashi_coll_check_buffer(const char *func, MPI_Comm comm, const void *buf, MPI_Count count,
                            const struct MPI_ABI_Datatype *t, const char *what)
{
    /* NULL is MPI_BOTTOM: legal when the datatype carries absolute addresses. */
    if (!buf && count > 0 && t->size > 0 && (t->predefined || t->true_lb == 0))
        return hashi_err_comm(func, comm, MPI_ERR_BUFFER, "%s is NULL but its count is %lld", what,
                              (long long)count);
    if (t->size > 0 && count > INT64_MAX / t->size)
        return hashi_err_comm(func, comm, MPI_ERR_COUNT, "%s: count %lld of a %lld-byte datatype overflows",
                              what, (long long)count, (long long)t->size);
    return MPI_SUCCESS;
}

int hashi_coll_check_root(const char *func, MPI_Comm comm, const struct MPI_ABI_Comm *c, int root)
{
    if (root < 0 || root >= c->size)
        return hashi_err_comm(func, comm, MPI_ERR_ROOT, "root %d out of range (communicator size %d)", root,
                              c->size);
    return MPI_SUCCESS;
}

int hashi_coll_check_op(const char *func, MPI_Comm comm, MPI_Op op, MPI_Datatype type)
{
    char why[256];
    int rc = hashi_op_check_collective(op, type, why, sizeof why);
    if (rc != MPI_SUCCESS)
        return hashi_err_comm(func, comm, rc, "%s", why);
    return MPI_SUCCESS;
}

int hashi_coll_check_alias(const struct hashi_coll_call *call, MPI_Comm comm, const void *sendbuf,
                           const void *recvbuf, size_t send_bytes)
{
    if (send_bytes > 0 && sendbuf && sendbuf == recvbuf)
        return hashi_err_comm(call->func, comm, MPI_ERR_BUFFER,
                              "sendbuf and recvbuf are the same buffer (%p): pass MPI_IN_PLACE for that",
                              (void *)recvbuf);
    return MPI_SUCCESS;
}

int hashi_coll_check_reduction_buffers(const struct hashi_coll_call *call, MPI_Comm comm, const void *sendbuf,
                                       MPI_Count send_count, const void *recvbuf, MPI_Count recv_count,
                                       const struct MPI_ABI_Datatype *t)
{
    int rc;
    if (recvbuf == MPI_IN_PLACE)
        return hashi_err_comm(call->func, comm, MPI_ERR_BUFFER, "recvbuf cannot be MPI_IN_PLACE");
    if ((rc = hashi_coll_check_alias(call, comm, sendbuf, recvbuf, (size_t)hashi_type_bytes(t, send_count))) !=
        MPI_SUCCESS)
        return rc;
    if (sendbuf != MPI_IN_PLACE &&
        (rc = hashi_coll_check_buffer(call->func, comm, sendbuf, send_count, t, "sendbuf")) != MPI_SUCCESS)
        return rc;
    return hashi_coll_check_buffer(call->func, comm, recvbuf, recv_count, t, "recvbuf");
}

struct MPI_ABI_Comm *hashi_coll_call_allreduce(const struct hashi_coll_call *call, MPI_Comm comm,
                                               const void *sendbuf, const void *recvbuf, MPI_Count count,
                                               MPI_Datatype type, MPI_Op op, struct MPI_ABI_Datatype **t, int *rc)
{
    struct MPI_ABI_Comm *c = hashi_coll_call_vector(call, comm, count, type, t, rc);
    if (!c || (*rc = hashi_coll_check_op(call->func, comm, op, type)) != MPI_SUCCESS ||
        (*rc = hashi_coll_check_reduction_buffers(call, comm, sendbuf, count, recvbuf, count, *t)) != MPI_SUCCESS)
        return NULL;
    return c;
}

int hashi_coll_call_finish(const struct hashi_coll_call *call, MPI_Comm comm, struct hashi_sched *s, int build_rc)
{
    const char *func = call->func;
    if (!s)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for the collective's schedule");
    if (build_rc != MPI_SUCCESS) {
        hashi_sched_destroy(s);
        return hashi_err_comm(func, comm, build_rc, "building the collective's schedule failed%s",
                              build_rc == MPI_ERR_NO_MEM ? ": out of memory" : "");
    }
    int rc;
    if (call->mode == HASHI_COLL_BLOCKING) {
        rc = hashi_sched_run(s);
        if (rc != MPI_SUCCESS)
            return hashi_err_comm(func, comm, rc, "exchanging data with the other members failed");
        return MPI_SUCCESS;
    }
    struct MPI_ABI_Request *req;
    rc = hashi_sched_to_request(s, call->mode == HASHI_COLL_PERSISTENT, &req);
    if (rc != MPI_SUCCESS)
        return hashi_err_comm(func, comm, rc, "starting the collective failed");
    *call->request = req;
    return MPI_SUCCESS;
}

void *hashi_coll_tmpbuf(struct hashi_sched *s, MPI_Count count, const struct MPI_ABI_Datatype *t)
{
    if (count == 0 || t->size == 0)
        return hashi_sched_scratch(s, 1);
    MPI_Aint true_extent = t->true_ub - t->true_lb;
    size_t bytes = (size_t)((count - 1) * hashi_type_extent(t) + true_extent);
    char *p = hashi_sched_scratch(s, bytes);
    return p ? p - t->true_lb : NULL;
}

/* ---- partial results ---- */

void hashi_coll_acc_init(struct hashi_coll_acc *acc, const void *buf, int writable, MPI_Count count,
                         MPI_Datatype type, MPI_Op op)
{
    acc->buf = (void *)buf;
    acc->writable = writable;
    acc->spare = NULL;
    acc->count = count;
    acc->type = type;
    acc->t = hashi_type_get(type);
    acc->op = op;
    acc->commutative = hashi_op_is_commutative(op);
}

void *hashi_coll_acc_recvbuf(struct hashi_sched *s, struct hashi_coll_acc *acc)
{
    if (acc->spare) {
        void *p = acc->spare;
        acc->spare = NULL;
        return p;
    }
    return hashi_coll_tmpbuf(s, acc->count, acc->t);
}

int hashi_coll_acc_combine(struct hashi_sched *s, struct hashi_coll_acc *acc, void *other, int other_is_left)
{
    if (acc->writable && (other_is_left || acc->commutative)) {
        /* In place: acc = other op acc (the same as acc op other when it commutes). */
        acc->spare = other;
        return hashi_sched_reduce(s, other, acc->buf, acc->count, acc->type, acc->op);
    }
    if (!other_is_left || acc->commutative) {
        /* acc op other, into the received buffer, which becomes the accumulator. */
        int rc = hashi_sched_reduce(s, acc->buf, other, acc->count, acc->type, acc->op);
        if (acc->writable)
            acc->spare = acc->buf;
        acc->buf = other;
        acc->writable = 1;
        return rc;
    }
    /* other op acc with a read-only accumulator: copy it out first. */
    void *buf = hashi_coll_acc_recvbuf(s, acc);
    if (!buf)
        return MPI_ERR_NO_MEM;
    int rc = hashi_sched_copy(s, acc->buf, acc->count, acc->type, buf, acc->count, acc->type);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_reduce(s, other, buf, acc->count, acc->type, acc->op);
    acc->buf = buf;
    acc->writable = 1;
    acc->spare = other;
    return rc;
}
