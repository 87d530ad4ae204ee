/*
 * Collectives on intercommunicators (MPI-4.1 6.2.2). Each is one schedule
 * on the intercommunicator: its messages go on the intercommunicator's
 * internal context to ranks of the remote group, and its local phases are
 * sub-schedules on the hidden local intracommunicator (c->local_comm, its
 * own context and sequence), built with the intracommunicator builders.
 * So the blocking, nonblocking and persistent forms are the same code, and
 * the device's collectives, which know only intracommunicators, are never
 * offered an intercommunicator (the sub-schedules may use them on the local
 * communicator, which is one).
 *
 *   Barrier    local barrier; leaders swap a token; local barrier
 *   Bcast      root -> remote leader; its local bcast
 *   Reduce     the non-root group reduces to its leader, which sends to the root
 *   Allreduce  each group reduces to its leader; leaders swap; local bcast
 *   Reduce_scatter(_block)  as Allreduce, the leader scattering instead
 *   the data-movement collectives: every message directly between the
 *              members concerned (linear), one round
 *
 * Rooted calls: the root passes MPI_ROOT, the rest of its group
 * MPI_PROC_NULL (they do nothing), the other group the root's rank in it.
 * MPI_IN_PLACE is not allowed on intercommunicators.
 */
#include "mpi/coll/coll.h"
#include "mpi/coll/coll_data.h"
#include "mpi/coll/inter.h"
#include "mpi/comm.h"

/* The start of every call: MPI initialized, the request pointer. */
struct MPI_ABI_Comm *hashi_coll_inter_call(const struct hashi_coll_call *call, MPI_Comm comm, int *rc)
{
    if (hashi_init_state != HASHI_STATE_INITIALIZED) {
        *rc = hashi_err_not_initialized(call->func);
        return NULL;
    }
    struct MPI_ABI_Comm *c = hashi_comm_arg(call->func, comm, rc);
    if (c && call->mode != HASHI_COLL_BLOCKING && !call->request) {
        *rc = hashi_err_comm(call->func, comm, MPI_ERR_ARG, "the request pointer is NULL");
        return NULL;
    }
    return c;
}

/* A rooted call's root: MPI_ROOT or MPI_PROC_NULL in the root's group, a
 * rank of the remote group in the other. */
static int check_root(const struct hashi_coll_call *call, MPI_Comm comm, const struct MPI_ABI_Comm *c, int root)
{
    if (root == MPI_ROOT || root == MPI_PROC_NULL || (root >= 0 && root < c->peer_size))
        return MPI_SUCCESS;
    return hashi_err_comm(call->func, comm, MPI_ERR_ROOT,
                          "root %d on an intercommunicator: MPI_ROOT, MPI_PROC_NULL or a rank of the remote group "
                          "(size %d)", root, c->peer_size);
}

/* Add sub (built on the local communicator) as a step of s. */
static int add_local(struct hashi_sched *s, struct hashi_sched *sub, int build_rc)
{
    if (!sub)
        return MPI_ERR_NO_MEM;
    if (build_rc != MPI_SUCCESS) {
        hashi_sched_destroy(sub);
        return build_rc;
    }
    return hashi_sched_sub(s, sub);
}

static int local_barrier(struct hashi_sched *s, struct MPI_ABI_Comm *local)
{
    struct hashi_sched *sub = hashi_sched_create(local);
    return add_local(s, sub, sub ? hashi_coll_build_barrier(sub, local) : MPI_ERR_NO_MEM);
}

static int local_bcast(struct hashi_sched *s, struct MPI_ABI_Comm *local, void *buf, MPI_Count count,
                       MPI_Datatype type)
{
    if (local->size == 1)
        return MPI_SUCCESS;
    struct hashi_sched *sub = hashi_sched_create(local);
    return add_local(s, sub, sub ? hashi_coll_build_bcast(sub, buf, count, type, 0, local) : MPI_ERR_NO_MEM);
}

/* The reduction of the local group's sendbufs at local rank 0, in `out`. */
static int local_reduce(struct hashi_sched *s, struct MPI_ABI_Comm *local, const void *sendbuf, void *out,
                        MPI_Count count, MPI_Datatype type, MPI_Op op)
{
    if (local->size == 1)
        return hashi_sched_copy(s, sendbuf, count, type, out, count, type);
    struct hashi_sched *sub = hashi_sched_create(local);
    return add_local(s, sub, sub ? hashi_coll_build_reduce(sub, sendbuf, out, count, type, op, 0, local)
                                 : MPI_ERR_NO_MEM);
}

int hashi_coll_inter_barrier(const struct hashi_coll_call *call, MPI_Comm comm)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_inter_call(call, comm, &rc);
    if (!c)
        return rc;
    struct hashi_sched *s = hashi_sched_create(c);
    if (!s)
        return hashi_coll_call_finish(call, comm, s, MPI_ERR_NO_MEM);
    /* Everybody here entered once the second local barrier passes: the
     * leaders only swap their tokens after their groups' first one. */
    rc = local_barrier(s, c->local_comm);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rc == MPI_SUCCESS && c->rank == 0) {
        rc = hashi_sched_send(s, NULL, 0, MPI_BYTE, 0);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, NULL, 0, MPI_BYTE, 0);
    }
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rc == MPI_SUCCESS)
        rc = local_barrier(s, c->local_comm);
    return hashi_coll_call_finish(call, comm, s, rc);
}

int hashi_coll_inter_bcast(const struct hashi_coll_call *call, void *buf, MPI_Count count, MPI_Datatype type,
                           int root, MPI_Comm comm)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_inter_call(call, comm, &rc);
    if (!c || (rc = check_root(call, comm, c, root)) != MPI_SUCCESS ||
        (rc = hashi_coll_check_count(call->func, comm, count, "count")) != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Datatype *t = hashi_coll_check_type(call->func, comm, type, "datatype", &rc);
    if (!t)
        return rc;
    if (root != MPI_PROC_NULL && (buf == MPI_IN_PLACE ||
                                  (rc = hashi_coll_check_buffer(call->func, comm, buf, count, t, "buffer"))))
        return buf == MPI_IN_PLACE ? hashi_err_comm(call->func, comm, MPI_ERR_BUFFER,
                                                    "MPI_IN_PLACE is not allowed in a broadcast")
                                   : rc;
    struct hashi_sched *s = hashi_sched_create(c);
    rc = s ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (s && root == MPI_ROOT) {
        rc = hashi_sched_send(s, buf, count, type, 0);
    } else if (s && root != MPI_PROC_NULL) {
        if (c->rank == 0)
            rc = hashi_sched_recv(s, buf, count, type, root);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = local_bcast(s, c->local_comm, buf, count, type);
    }
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* The checks of Reduce, Allreduce and Reduce_scatter on an intercommunicator. */
static int reduction_args(const struct hashi_coll_call *call, MPI_Comm comm,
                          const void *sendbuf, const void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                          int sends, int receives)
{
    int rc;
    if ((rc = hashi_coll_check_count(call->func, comm, count, "count")) != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Datatype *t = hashi_coll_check_type(call->func, comm, type, "datatype", &rc);
    if (!t || (rc = hashi_coll_check_op(call->func, comm, op, type)) != MPI_SUCCESS)
        return rc;
    if ((sends && sendbuf == MPI_IN_PLACE) || (receives && recvbuf == MPI_IN_PLACE))
        return hashi_err_comm(call->func, comm, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed on an intercommunicator");
    if (sends && (rc = hashi_coll_check_buffer(call->func, comm, sendbuf, count, t, "sendbuf")) != MPI_SUCCESS)
        return rc;
    if (receives && (rc = hashi_coll_check_buffer(call->func, comm, recvbuf, count, t, "recvbuf")) != MPI_SUCCESS)
        return rc;
    if (sends && receives)
        return hashi_coll_check_alias(call, comm, sendbuf, recvbuf, (size_t)hashi_type_bytes(t, count));
    return MPI_SUCCESS;
}

int hashi_coll_inter_reduce(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_inter_call(call, comm, &rc);
    if (!c || (rc = check_root(call, comm, c, root)) != MPI_SUCCESS)
        return rc;
    int contributes = root >= 0;
    if ((rc = reduction_args(call, comm, sendbuf, recvbuf, count, type, op, contributes, root == MPI_ROOT)) !=
        MPI_SUCCESS)
        return rc;
    struct hashi_sched *s = hashi_sched_create(c);
    rc = s ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (s && root == MPI_ROOT) {
        rc = hashi_sched_recv(s, recvbuf, count, type, 0);
    } else if (s && contributes) {
        /* Every member gets one: the reduction builders may use the
         * receive buffer of non-roots as scratch. */
        void *tmp = hashi_coll_tmpbuf(s, count, hashi_type_get(type));
        if (!tmp)
            rc = MPI_ERR_NO_MEM;
        if (rc == MPI_SUCCESS)
            rc = local_reduce(s, c->local_comm, sendbuf, tmp, count, type, op);
        if (rc == MPI_SUCCESS && c->rank == 0 && (rc = hashi_sched_fence(s)) == MPI_SUCCESS)
            rc = hashi_sched_send(s, tmp, count, type, root);
    }
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* The reductions' common middle: this group's reduction of sendbuf into
 * mine at the local leader, then the two leaders swap theirs (into
 * `theirs`, the leader's only). */
static int reduce_and_swap(struct hashi_sched *s, struct MPI_ABI_Comm *c, const void *sendbuf, void *mine,
                           void *theirs, MPI_Count count, MPI_Datatype type, MPI_Op op)
{
    int rc = local_reduce(s, c->local_comm, sendbuf, mine, count, type, op);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rc == MPI_SUCCESS && c->rank == 0) {
        rc = hashi_sched_send(s, mine, count, type, 0);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, theirs, count, type, 0);
    }
    return rc == MPI_SUCCESS ? hashi_sched_fence(s) : rc;
}

int hashi_coll_inter_allreduce(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf,
                               MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_inter_call(call, comm, &rc);
    if (!c || (rc = reduction_args(call, comm, sendbuf, recvbuf, count, type, op, 1, 1)) != MPI_SUCCESS)
        return rc;
    struct hashi_sched *s = hashi_sched_create(c);
    rc = s ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    void *tmp = s ? hashi_coll_tmpbuf(s, count, hashi_type_get(type)) : NULL;
    if (s && !tmp)
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = reduce_and_swap(s, c, sendbuf, tmp, recvbuf, count, type, op);
    if (rc == MPI_SUCCESS)
        rc = local_bcast(s, c->local_comm, recvbuf, count, type);
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* Block i (counts[i] elements, in order) of the leader's `all` to local
 * rank i's recvbuf. */
static int local_scatterv(struct hashi_sched *s, struct MPI_ABI_Comm *local, const void *all, void *recvbuf,
                          const MPI_Count counts[], MPI_Datatype type)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    if (local->rank != 0 && local->size > 1) {
        struct hashi_sched *sub = hashi_sched_create(local);
        return add_local(s, sub, sub ? hashi_sched_recv(sub, recvbuf, counts[local->rank], type, 0) : MPI_ERR_NO_MEM);
    }
    int rc = hashi_sched_copy(s, all, counts[0], type, recvbuf, counts[0], type);
    if (local->size == 1 || rc != MPI_SUCCESS)
        return rc;
    struct hashi_sched *sub = hashi_sched_create(local);
    MPI_Count offset = counts[0];
    for (int i = 1; sub && rc == MPI_SUCCESS && i < local->size; i++) {
        rc = hashi_sched_send(sub, hashi_coll_elem(all, offset, t), counts[i], type, i);
        offset += counts[i];
    }
    return add_local(s, sub, sub ? rc : MPI_ERR_NO_MEM);
}

int hashi_coll_inter_reduce_scatter(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf,
                                    const MPI_Count counts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    MPI_Count total = 0;
    for (int i = 0; i < c->size; i++)
        total += counts[i];
    /* Each group's vectors (total elements, the same total on both sides)
     * are reduced and scattered over the other group by its counts. */
    if ((rc = reduction_args(call, comm, sendbuf, recvbuf, 0, type, op, 1, 1)) != MPI_SUCCESS)
        return rc;
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    if ((rc = hashi_coll_check_buffer(call->func, comm, sendbuf, total, t, "sendbuf")) != MPI_SUCCESS ||
        (rc = hashi_coll_check_buffer(call->func, comm, recvbuf, counts[c->rank], t, "recvbuf")) != MPI_SUCCESS)
        return rc;
    struct hashi_sched *s = hashi_sched_create(c);
    rc = s ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    void *mine = s ? hashi_coll_tmpbuf(s, total, t) : NULL;
    void *theirs = s && c->rank == 0 ? hashi_coll_tmpbuf(s, total, t) : NULL;
    if (s && (!mine || (c->rank == 0 && !theirs)))
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = reduce_and_swap(s, c, sendbuf, mine, theirs, total, type, op);
    if (rc == MPI_SUCCESS)
        rc = local_scatterv(s, c->local_comm, theirs, recvbuf, counts, type);
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* ---- data movement: every message direct, one round ---- */

/* Block i of recv from remote rank i, block i of send to remote rank i
 * (either NULL: nothing that way). */
static int linear(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const struct hashi_coll_blocks *send,
                  const struct hashi_coll_blocks *recv)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; recv && rc == MPI_SUCCESS && i < c->peer_size; i++)
        rc = hashi_sched_recv(s, hashi_blocks_ptr(recv, i), hashi_blocks_count(recv, i), hashi_blocks_type(recv, i), i);
    for (int i = 0; send && rc == MPI_SUCCESS && i < c->peer_size; i++)
        rc = hashi_sched_send(s, hashi_blocks_ptr(send, i), hashi_blocks_count(send, i), hashi_blocks_type(send, i), i);
    return rc;
}

/* The blocks of one side of a call, checked: n blocks of count (stride
 * count elements) or counts/displs (is_v), of one type or of types (is_w). */
static int blocks_arg(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side, int n,
                      const void *buf, MPI_Count count, const MPI_Count counts[], const MPI_Aint displs[],
                      MPI_Datatype type, const MPI_Datatype types[], int is_v, int is_w,
                      struct hashi_coll_blocks *b)
{
    int rc;
    struct MPI_ABI_Datatype *t = NULL;
    if (is_v) {
        if ((rc = hashi_coll_check_counts(call, comm, side, n, buf, counts, displs)) != MPI_SUCCESS)
            return rc;
        if (is_w ? (rc = hashi_coll_check_types(call, comm, side, n, types))
                 : (rc = hashi_coll_check_data(call, comm, side, buf, 0, type, &t)))
            return rc;
        *b = (struct hashi_coll_blocks){ .buf = (char *)buf, .counts = counts, .displs = displs,
                                         .unit = is_w ? 1 : hashi_type_extent(t), .type = type,
                                         .types = is_w ? types : NULL };
        return MPI_SUCCESS;
    }
    if ((rc = hashi_coll_check_data(call, comm, side, buf, count, type, &t)) != MPI_SUCCESS)
        return rc;
    *b = (struct hashi_coll_blocks){ .buf = (char *)buf, .count = count, .stride = count * hashi_type_extent(t),
                                     .type = type };
    return MPI_SUCCESS;
}

/* One buffer sent to (or received from) every remote rank alike. */
static int same_block_arg(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side,
                          const void *buf, MPI_Count count, MPI_Datatype type, struct hashi_coll_blocks *b)
{
    struct MPI_ABI_Datatype *t;
    int rc = hashi_coll_check_data(call, comm, side, buf, count, type, &t);
    *b = (struct hashi_coll_blocks){ .buf = (char *)buf, .count = count, .stride = 0, .type = type };
    return rc;
}

static int run_linear(const struct hashi_coll_call *call, MPI_Comm comm, struct MPI_ABI_Comm *c,
                      const struct hashi_coll_blocks *send, const struct hashi_coll_blocks *recv)
{
    struct hashi_sched *s = hashi_sched_create(c);
    return hashi_coll_call_finish(call, comm, s, s ? linear(s, c, send, recv) : MPI_ERR_NO_MEM);
}

int hashi_coll_inter_allgather(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                               MPI_Datatype stype, void *recvbuf, MPI_Count rcount, const MPI_Count rcounts[],
                               const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm, int is_v)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_inter_call(call, comm, &rc);
    struct hashi_coll_blocks send, recv;
    if (!c || (rc = same_block_arg(call, comm, HASHI_COLL_SEND, sendbuf, scount, stype, &send)) ||
        (rc = blocks_arg(call, comm, HASHI_COLL_RECV, c->peer_size, recvbuf, rcount, rcounts, displs, rtype, NULL,
                         is_v, 0, &recv)))
        return rc;
    return run_linear(call, comm, c, &send, &recv);
}

int hashi_coll_inter_alltoall(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                              const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype stype,
                              const MPI_Datatype stypes[], void *recvbuf, MPI_Count rcount, const MPI_Count rcounts[],
                              const MPI_Aint rdispls[], MPI_Datatype rtype, const MPI_Datatype rtypes[],
                              MPI_Comm comm, int is_v, int is_w)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_inter_call(call, comm, &rc);
    struct hashi_coll_blocks send, recv;
    if (!c || (rc = blocks_arg(call, comm, HASHI_COLL_SEND, c->peer_size, sendbuf, scount, scounts, sdispls, stype,
                               stypes, is_v, is_w, &send)) ||
        (rc = blocks_arg(call, comm, HASHI_COLL_RECV, c->peer_size, recvbuf, rcount, rcounts, rdispls, rtype, rtypes,
                         is_v, is_w, &recv)))
        return rc;
    return run_linear(call, comm, c, &send, &recv);
}

int hashi_coll_inter_gather(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                            MPI_Datatype stype, void *recvbuf, MPI_Count rcount, const MPI_Count rcounts[],
                            const MPI_Aint displs[], MPI_Datatype rtype, int root, MPI_Comm comm, int is_v)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_inter_call(call, comm, &rc);
    if (!c || (rc = check_root(call, comm, c, root)) != MPI_SUCCESS)
        return rc;
    struct hashi_coll_blocks b;
    if (root == MPI_ROOT) {
        if ((rc = blocks_arg(call, comm, HASHI_COLL_RECV, c->peer_size, recvbuf, rcount, rcounts, displs, rtype, NULL,
                             is_v, 0, &b)) != MPI_SUCCESS)
            return rc;
        return run_linear(call, comm, c, NULL, &b);
    }
    if (root != MPI_PROC_NULL &&
        (rc = same_block_arg(call, comm, HASHI_COLL_SEND, sendbuf, scount, stype, &b)) != MPI_SUCCESS)
        return rc;
    struct hashi_sched *s = hashi_sched_create(c);
    if (s && root != MPI_PROC_NULL)
        rc = hashi_sched_send(s, sendbuf, scount, stype, root);
    return hashi_coll_call_finish(call, comm, s, rc);
}

int hashi_coll_inter_scatter(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                             const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype stype, void *recvbuf,
                             MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, int is_v)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_inter_call(call, comm, &rc);
    if (!c || (rc = check_root(call, comm, c, root)) != MPI_SUCCESS)
        return rc;
    struct hashi_coll_blocks b;
    if (root == MPI_ROOT) {
        if ((rc = blocks_arg(call, comm, HASHI_COLL_SEND, c->peer_size, sendbuf, scount, scounts, displs, stype, NULL,
                             is_v, 0, &b)) != MPI_SUCCESS)
            return rc;
        return run_linear(call, comm, c, &b, NULL);
    }
    if (root != MPI_PROC_NULL &&
        (rc = same_block_arg(call, comm, HASHI_COLL_RECV, recvbuf, rcount, rtype, &b)) != MPI_SUCCESS)
        return rc;
    struct hashi_sched *s = hashi_sched_create(c);
    if (s && root != MPI_PROC_NULL)
        rc = hashi_sched_recv(s, recvbuf, rcount, rtype, root);
    return hashi_coll_call_finish(call, comm, s, rc);
}
