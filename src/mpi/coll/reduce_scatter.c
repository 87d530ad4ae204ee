/*
 * MPI_Reduce_scatter and MPI_Reduce_scatter_block, blocking, nonblocking and
 * persistent (and _c). Reduce_scatter_block is Reduce_scatter with equal
 * counts. Algorithms:
 *  - recursive halving (commutative ops, short vectors): rabenseifner.c.
 *  - pairwise exchange (commutative, long vectors): at step i rank r sends
 *    the block of rank r + i and receives its own block's contribution from
 *    rank r - i, adding it in: n - 1 steps, each block crosses the network
 *    once.
 *  - reduce + scatter (non-commutative ops): the binomial reduce keeps rank
 *    order; rank 0 then sends each rank its block.
 * Equal blocks up to the device's max_bytes go to the device first, in
 * every form (reduce_scatter() below, hashi_coll_device_reduction).
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll.h"
#include "mpi/coll/rabenseifner.h"

#include "device/device.h"

#include <stdlib.h>

static int reduce_scatter_pairwise(struct hashi_sched *s, const void *sendbuf, void *recvbuf,
                                   const MPI_Count counts[], const MPI_Count disps[], MPI_Datatype type, MPI_Op op,
                                   const struct MPI_ABI_Comm *c)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    int n = c->size, rank = c->rank, rc = MPI_SUCCESS;
    const void *input = sendbuf;
    if (sendbuf == MPI_IN_PLACE) {
        /* The result overwrites the start of recvbuf while other ranks'
         * blocks are still to be sent from it: work from a copy. */
        void *copy = hashi_coll_tmpbuf(s, disps[n], t);
        if (!copy)
            return MPI_ERR_NO_MEM;
        rc = hashi_sched_copy(s, recvbuf, disps[n], type, copy, disps[n], type);
        input = copy;
    }
    void *tmp = hashi_coll_tmpbuf(s, counts[rank], t);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_copy(s, hashi_coll_elem(input, disps[rank], t), counts[rank], type, recvbuf, counts[rank],
                              type);
    for (int i = 1; i < n && rc == MPI_SUCCESS; i++) {
        int dst = (rank + i) % n, src = (rank - i + n) % n;
        rc = hashi_sched_send(s, hashi_coll_elem(input, disps[dst], t), counts[dst], type, dst);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, tmp, counts[rank], type, src);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_reduce(s, tmp, recvbuf, counts[rank], type, op);
    }
    return rc;
}

static int reduce_then_scatter(struct hashi_sched *s, const void *sendbuf, void *recvbuf, const MPI_Count counts[],
                               const MPI_Count disps[], MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    int n = c->size, rank = c->rank;
    MPI_Count total = disps[n];
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    void *result = rank == 0 ? hashi_coll_tmpbuf(s, total, t) : NULL;
    if (rank == 0 && !result)
        return MPI_ERR_NO_MEM;
    int rc = hashi_coll_build_reduce(s, input, result, total, type, op, 0, c);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rank != 0)
        return rc == MPI_SUCCESS ? hashi_sched_recv(s, recvbuf, counts[rank], type, 0) : rc;
    for (int i = 1; i < n && rc == MPI_SUCCESS; i++)
        rc = hashi_sched_send(s, hashi_coll_elem(result, disps[i], t), counts[i], type, i);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_copy(s, result, counts[0], type, recvbuf, counts[0], type);
    return rc;
}

int hashi_coll_build_reduce_scatter(struct hashi_sched *s, const void *sendbuf, void *recvbuf,
                                    const MPI_Count counts[], MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    int n = c->size;
    MPI_Count *disps = malloc((size_t)(n + 1) * sizeof *disps);
    if (!disps)
        return MPI_ERR_NO_MEM;
    disps[0] = 0;
    for (int i = 0; i < n; i++)
        disps[i + 1] = disps[i] + counts[i];
    int rc = MPI_SUCCESS;
    if (disps[n] == 0) {
        /* nothing to reduce */
    } else if (n == 1) {
        if (sendbuf != MPI_IN_PLACE)
            rc = hashi_sched_copy(s, sendbuf, counts[0], type, recvbuf, counts[0], type);
    } else {
        switch (hashi_coll_select(HASHI_CHOOSE_REDUCE_SCATTER, c, (size_t)hashi_type_bytes(t, disps[n]), disps[n],
                                  hashi_op_is_commutative(op))) {
        case HASHI_ALG_PAIRWISE:
            rc = reduce_scatter_pairwise(s, sendbuf, recvbuf, counts, disps, type, op, c);
            break;
        case HASHI_ALG_RECURSIVE_HALVING:
            rc = hashi_coll_build_reduce_scatter_halving(s, sendbuf, recvbuf, counts, type, op, c);
            break;
        default:
            rc = reduce_then_scatter(s, sendbuf, recvbuf, counts, disps, type, op, c);
            break;
        }
    }
    free(disps);
    return rc;
}

/* The block every member gets when all get the same count (every
 * Reduce_scatter_block, and a Reduce_scatter whose recvcounts, the same
 * array on every member, agree), else -1. */
static MPI_Count equal_block(const MPI_Count counts[], int n)
{
    for (int i = 1; i < n; i++)
        if (counts[i] != counts[0])
            return -1;
    return counts[0];
}

/* Checks shared by both calls; counts has comm-size entries. */
static int reduce_scatter(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf,
                          const MPI_Count counts[], MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c,
                          MPI_Comm comm)
{
    int rc;
    struct MPI_ABI_Datatype *t = hashi_coll_check_type(call->func, comm, type, "datatype", &rc);
    if (!t)
        return rc;
    if ((rc = hashi_coll_check_op(call->func, comm, op, type)) != MPI_SUCCESS)
        return rc;
    MPI_Count total = 0;
    for (int i = 0; i < c->size; i++)
        total += counts[i];
    if ((rc = hashi_coll_check_reduction_buffers(call, comm, sendbuf, total, recvbuf,
                                                 sendbuf == MPI_IN_PLACE ? total : counts[c->rank], t)) !=
        MPI_SUCCESS)
        return rc;
    /* The device's reduce_scatter_block: equal blocks up to its slots, a
     * block size every member shares. */
    MPI_Count block = equal_block(counts, c->size);
    int offered = c->size > 1 && block > 0 && (size_t)hashi_type_bytes(t, block) <= hashi_device->coll.max_bytes;
    if (call->mode == HASHI_COLL_BLOCKING && offered) {
        rc = hashi_coll_device_reduction(HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, block, type, op, -1, t,
                                         c);
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(call->func, comm, rc, "the device's reduce_scatter failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    rc = !s ? MPI_ERR_NO_MEM : HASHI_DEVICE_COLL_DECLINE;
    if (s && call->mode != HASHI_COLL_BLOCKING && offered)
        rc = hashi_coll_device_reduction_step(s, HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, block, type,
                                              op, -1, t, c);
    if (rc == HASHI_DEVICE_COLL_DECLINE)
        rc = hashi_coll_build_reduce_scatter(s, sendbuf, recvbuf, counts, type, op, c);
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* The counts of either call as MPI_Count[comm size] (malloc'd): from an int
 * or MPI_Count array, or one count for every rank. */
static MPI_Count *counts_of(const char *func, MPI_Comm comm, const struct MPI_ABI_Comm *c, const int *icounts,
                            const MPI_Count *ccounts, MPI_Count block, int *rc)
{
    MPI_Count *counts = malloc((size_t)c->size * sizeof *counts);
    if (!counts) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
        return NULL;
    }
    for (int i = 0; i < c->size; i++) {
        counts[i] = icounts ? icounts[i] : ccounts ? ccounts[i] : block;
        if (counts[i] < 0) {
            *rc = hashi_err_comm(func, comm, MPI_ERR_COUNT, "recvcounts[%d] = %lld is negative", i,
                                 (long long)counts[i]);
            free(counts);
            return NULL;
        }
    }
    *rc = MPI_SUCCESS;
    return counts;
}

static int reduce_scatter_call(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf,
                               const int *icounts, const MPI_Count *ccounts, MPI_Count block, int is_block,
                               MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    const char *func = call->func;
    int rc, inter = hashi_coll_is_inter(comm);
    struct MPI_ABI_Comm *c = inter ? hashi_coll_inter_call(call, comm, &rc) : hashi_coll_call_comm(call, comm, &rc);
    if (!c)
        return rc;
    if (!is_block && !icounts && !ccounts)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "recvcounts is NULL");
    if (is_block && (rc = hashi_coll_check_count(func, comm, block, "recvcount")) != MPI_SUCCESS)
        return rc;
    MPI_Count *counts = counts_of(func, comm, c, icounts, ccounts, block, &rc);
    if (!counts)
        return rc;
    /* An intercommunicator's counts are its local group's too. */
    rc = inter ? hashi_coll_inter_reduce_scatter(call, sendbuf, recvbuf, counts, type, op, comm)
               : reduce_scatter(call, sendbuf, recvbuf, counts, type, op, c, comm);
    free(counts);
    return rc;
}

int hashi_impl_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter_call(HASHI_COLL_CALL_BLOCKING("MPI_Reduce_scatter"), sendbuf, recvbuf, NULL, recvcounts, 0, 0,
                               datatype, op, comm);
}

int hashi_impl_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter_call(HASHI_COLL_CALL_BLOCKING("MPI_Reduce_scatter"), sendbuf, recvbuf, recvcounts, NULL, 0, 0,
                               datatype, op, comm);
}

int hashi_impl_Ireduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return reduce_scatter_call(HASHI_COLL_CALL_NONBLOCKING("MPI_Ireduce_scatter", request), sendbuf, recvbuf, NULL,
                               recvcounts, 0, 0, datatype, op, comm);
}

int hashi_impl_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return reduce_scatter_call(HASHI_COLL_CALL_NONBLOCKING("MPI_Ireduce_scatter", request), sendbuf, recvbuf,
                               recvcounts, NULL, 0, 0, datatype, op, comm);
}

int hashi_impl_Reduce_scatter_init_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request)
{
    (void)info;
    return reduce_scatter_call(HASHI_COLL_CALL_PERSISTENT("MPI_Reduce_scatter_init", request), sendbuf, recvbuf, NULL,
                               recvcounts, 0, 0, datatype, op, comm);
}

int hashi_impl_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                   MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return reduce_scatter_call(HASHI_COLL_CALL_PERSISTENT("MPI_Reduce_scatter_init", request), sendbuf, recvbuf,
                               recvcounts, NULL, 0, 0, datatype, op, comm);
}

int hashi_impl_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter_call(HASHI_COLL_CALL_BLOCKING("MPI_Reduce_scatter_block"), sendbuf, recvbuf, NULL, NULL,
                               recvcount, 1, datatype, op, comm);
}

int hashi_impl_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                    MPI_Op op, MPI_Comm comm)
{
    return hashi_impl_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int hashi_impl_Ireduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return reduce_scatter_call(HASHI_COLL_CALL_NONBLOCKING("MPI_Ireduce_scatter_block", request), sendbuf, recvbuf,
                               NULL, NULL, recvcount, 1, datatype, op, comm);
}

int hashi_impl_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                     MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return hashi_impl_Ireduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
}

int hashi_impl_Reduce_scatter_block_init_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                           MPI_Request *request)
{
    (void)info;
    return reduce_scatter_call(HASHI_COLL_CALL_PERSISTENT("MPI_Reduce_scatter_block_init", request), sendbuf, recvbuf,
                               NULL, NULL, recvcount, 1, datatype, op, comm);
}

int hashi_impl_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                         MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return hashi_impl_Reduce_scatter_block_init_c(sendbuf, recvbuf, recvcount, datatype, op, comm, info, request);
}
