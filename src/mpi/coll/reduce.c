/*
 * MPI_Reduce, MPI_Ireduce, MPI_Reduce_init (and _c). Two algorithms:
 *  - binomial tree: rank v combines the partial results of its subtrees
 *    [v + 2^k, v + 2^(k+1)) in increasing k, each as its right operand, so
 *    the tree computes x0 op x1 op ... op x(n-1) in rank order. Commutative
 *    ops run the tree relative to the root; a non-commutative op runs it
 *    rooted at rank 0 (where rank order and tree order agree), which then
 *    sends the result to the root.
 *  - Rabenseifner (long vectors, commutative ops): a reduce-scatter by
 *    recursive halving leaves each of a power of two of ranks with one fully
 *    reduced block, and a binomial gather brings the blocks to the root:
 *    about 2x the vector crosses the busiest link instead of log2(n) x.
 *    The ranks beyond the power of two first fold their data into a partner
 *    (see rabenseifner.c).
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll.h"
#include "mpi/coll/rabenseifner.h"

#include "device/device.h"

static int reduce_binomial(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype type, MPI_Op op, int root, const struct MPI_ABI_Comm *c)
{
    int n = c->size, rank = c->rank, rc = MPI_SUCCESS;
    int commutative = hashi_op_is_commutative(op);
    int tree_root = commutative ? root : 0;
    int vr = (rank - tree_root + n) % n;
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    struct hashi_coll_acc acc;
    hashi_coll_acc_init(&acc, input, input == recvbuf && rank == root, count, type, op);
    if (rank == root && rank == tree_root && input != recvbuf)
        acc.spare = recvbuf;   /* the first child's data lands where the result goes */

    for (int mask = 1; mask < n && rc == MPI_SUCCESS; mask <<= 1) {
        if (vr & mask) {
            rc = hashi_sched_send(s, acc.buf, count, type, (vr - mask + tree_root) % n);
            if (rc == MPI_SUCCESS)
                rc = hashi_sched_fence(s);
            break;
        }
        if (vr + mask < n) {
            void *other = hashi_coll_acc_recvbuf(s, &acc);
            if (!other)
                return MPI_ERR_NO_MEM;
            rc = hashi_sched_recv(s, other, count, type, (vr + mask + tree_root) % n);
            if (rc == MPI_SUCCESS)
                rc = hashi_sched_fence(s);
            if (rc == MPI_SUCCESS)
                rc = hashi_coll_acc_combine(s, &acc, other, 0);
        }
    }
    if (rc != MPI_SUCCESS)
        return rc;
    if (rank == tree_root && rank == root) {
        if (acc.buf != recvbuf)
            rc = hashi_sched_copy(s, acc.buf, count, type, recvbuf, count, type);
    } else if (rank == tree_root) {
        rc = hashi_sched_send(s, acc.buf, count, type, root);
    } else if (rank == root) {
        /* Our own contribution (maybe in recvbuf) went up the tree in an
         * earlier round; now the result. */
        rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, recvbuf, count, type, tree_root);
    }
    return rc;
}

int hashi_coll_build_reduce(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype type, MPI_Op op, int root, struct MPI_ABI_Comm *c)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    size_t bytes = (size_t)hashi_type_bytes(t, count);
    if (count == 0)
        return MPI_SUCCESS;
    if (c->size == 1) {
        if (sendbuf == MPI_IN_PLACE)
            return MPI_SUCCESS;
        return hashi_sched_copy(s, sendbuf, count, type, recvbuf, count, type);
    }
    int rc = hashi_coll_hier_reduce(s, sendbuf, recvbuf, count, type, op, root, c);
    if (rc != HASHI_COLL_FLAT)
        return rc;
    enum hashi_coll_alg alg = hashi_coll_select(HASHI_CHOOSE_REDUCE, c, bytes, count, hashi_op_is_commutative(op));
    if (alg == HASHI_ALG_RABENSEIFNER)
        return hashi_coll_build_rabenseifner(s, sendbuf, recvbuf, count, type, op, root, c);
    return reduce_binomial(s, sendbuf, recvbuf, count, type, op, root, c);
}

static int reduce(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                  MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_reduce(call, sendbuf, recvbuf, count, type, op, root, comm);
    const char *func = call->func;
    int rc;
    struct MPI_ABI_Datatype *t;
    struct MPI_ABI_Comm *c = hashi_coll_call_vector(call, comm, count, type, &t, &rc);
    if (!c)
        return rc;
    if ((rc = hashi_coll_check_op(func, comm, op, type)) != MPI_SUCCESS ||
        (rc = hashi_coll_check_root(func, comm, c, root)) != MPI_SUCCESS)
        return rc;
    if (c->rank == root)
        rc = hashi_coll_check_reduction_buffers(call, comm, sendbuf, count, recvbuf, count, t);
    else if (sendbuf == MPI_IN_PLACE)
        rc = hashi_err_comm(func, comm, MPI_ERR_BUFFER, "MPI_IN_PLACE is only allowed at the root (rank %d)", root);
    else
        rc = hashi_coll_check_buffer(func, comm, sendbuf, count, t, "sendbuf");
    if (rc != MPI_SUCCESS)
        return rc;
    if (call->mode == HASHI_COLL_BLOCKING && count > 0 && c->size > 1) {
        if ((rc = hashi_coll_hier_reduce(NULL, sendbuf, recvbuf, count, type, op, root, c)) != HASHI_COLL_FLAT)
            return rc == MPI_SUCCESS ? MPI_SUCCESS : hashi_err_comm(func, comm, rc, "the node-aware reduce failed");
        rc = hashi_coll_device_reduction_ok(c, 0, (size_t)hashi_type_bytes(t, count), count,
                                            hashi_op_is_commutative(op))
                 ? hashi_coll_device_reduction(HASHI_DEVICE_OP_REDUCE, sendbuf, recvbuf, count, type, op, root, t, c)
                 : HASHI_DEVICE_COLL_DECLINE;
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(func, comm, rc, "the device's reduce failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    rc = !s ? MPI_ERR_NO_MEM : HASHI_DEVICE_COLL_DECLINE;
    if (s && call->mode != HASHI_COLL_BLOCKING)
        rc = hashi_coll_device_reduction_step(s, HASHI_DEVICE_OP_REDUCE, sendbuf, recvbuf, count, type, op, root, t, c);
    if (rc == HASHI_DEVICE_COLL_DECLINE)
        rc = hashi_coll_build_reduce(s, sendbuf, recvbuf, count, type, op, root, c);
    return hashi_coll_call_finish(call, comm, s, rc);
}

int hashi_impl_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                        int root, MPI_Comm comm)
{
    return reduce(HASHI_COLL_CALL_BLOCKING("MPI_Reduce"), sendbuf, recvbuf, count, datatype, op, root, comm);
}

int hashi_impl_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                      MPI_Comm comm)
{
    return reduce(HASHI_COLL_CALL_BLOCKING("MPI_Reduce"), sendbuf, recvbuf, count, datatype, op, root, comm);
}

int hashi_impl_Ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                         int root, MPI_Comm comm, MPI_Request *request)
{
    return reduce(HASHI_COLL_CALL_NONBLOCKING("MPI_Ireduce", request), sendbuf, recvbuf, count, datatype, op, root,
                  comm);
}

int hashi_impl_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                       MPI_Comm comm, MPI_Request *request)
{
    return reduce(HASHI_COLL_CALL_NONBLOCKING("MPI_Ireduce", request), sendbuf, recvbuf, count, datatype, op, root,
                  comm);
}

int hashi_impl_Reduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                             int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return reduce(HASHI_COLL_CALL_PERSISTENT("MPI_Reduce_init", request), sendbuf, recvbuf, count, datatype, op, root,
                  comm);
}

int hashi_impl_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                           MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return hashi_impl_Reduce_init_c(sendbuf, recvbuf, count, datatype, op, root, comm, info, request);
}
