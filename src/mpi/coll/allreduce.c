/*
 * MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init (and _c). Algorithms:
 *  - recursive doubling (short vectors, and every non-commutative op): at
 *    distance 1, 2, 4 ... partners swap their partial results and combine
 *    them, the lower ranks' one on the left, so rank order is kept. Ranks
 *    beyond the largest power of two first fold into a partner (even r sends
 *    to r + 1, which combines x(r) op x(r+1): still rank order) and get the
 *    result back at the end.
 *  - Rabenseifner (long vectors, commutative): rabenseifner.c.
 *  - ring (commutative, count >= n): n - 1 steps of reduce-scatter around
 *    the ring, then n - 1 steps of allgather; each rank sends 2 (n-1)/n of
 *    the vector, the least data of all, in n - 1 latency-bound steps.
 * The blocking form asks the device first (contiguous data).
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll.h"
#include "mpi/coll/rabenseifner.h"

#include "device/device.h"

#include <stdlib.h>
#include <string.h>

static int allreduce_recursive_doubling(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                                        MPI_Datatype type, MPI_Op op, const struct MPI_ABI_Comm *c)
{
    int n = c->size, rank = c->rank, rc = MPI_SUCCESS;
    int pof2 = 1;
    while (pof2 * 2 <= n)
        pof2 *= 2;
    int rem = n - pof2;
    if (rank < 2 * rem && rank % 2 == 0) {
        /* Sit out: our data to rank + 1, the result back from it. */
        rc = hashi_sched_send(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, type, rank + 1);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, recvbuf, count, type, rank + 1);
        return rc;
    }
    struct hashi_coll_acc acc;
    hashi_coll_acc_init(&acc, recvbuf, 1, count, type, op);
    if (sendbuf != MPI_IN_PLACE)
        rc = hashi_sched_copy(s, sendbuf, count, type, recvbuf, count, type);
    if (rc != MPI_SUCCESS)
        return rc;

    int newrank;
    if (rank < 2 * rem) {
        void *other = hashi_coll_acc_recvbuf(s, &acc);
        if (!other)
            return MPI_ERR_NO_MEM;
        rc = hashi_sched_recv(s, other, count, type, rank - 1);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = hashi_coll_acc_combine(s, &acc, other, 1);
        newrank = rank / 2;
    } else {
        newrank = rank - rem;
    }
    for (int mask = 1; mask < pof2 && rc == MPI_SUCCESS; mask <<= 1) {
        int newpeer = newrank ^ mask;
        int peer = newpeer < rem ? newpeer * 2 + 1 : newpeer + rem;
        void *other = hashi_coll_acc_recvbuf(s, &acc);
        if (!other)
            return MPI_ERR_NO_MEM;
        rc = hashi_sched_send(s, acc.buf, count, type, peer);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, other, count, type, peer);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = hashi_coll_acc_combine(s, &acc, other, peer < rank);
    }
    if (rc == MPI_SUCCESS && acc.buf != recvbuf)
        rc = hashi_sched_copy(s, acc.buf, count, type, recvbuf, count, type);
    if (rc == MPI_SUCCESS && rank < 2 * rem)
        rc = hashi_sched_send(s, recvbuf, count, type, rank - 1);
    return rc;
}

static int allreduce_ring(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype type, MPI_Op op, const struct MPI_ABI_Comm *c)
{
    int n = c->size, rank = c->rank, rc = MPI_SUCCESS;
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    MPI_Count q = count / n, r = count % n;
#define BLOCK_START(b) ((MPI_Count)(b) * q + ((b) < r ? (b) : r))
#define BLOCK_LEN(b) (q + ((b) < r ? 1 : 0))
    void *tmp = hashi_coll_tmpbuf(s, q + (r ? 1 : 0), t);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    if (sendbuf != MPI_IN_PLACE)
        rc = hashi_sched_copy(s, sendbuf, count, type, recvbuf, count, type);
    int left = (rank - 1 + n) % n, right = (rank + 1) % n;
    /* Reduce-scatter: at step i, pass on block rank - i (reduced by i + 1
     * ranks so far) and add our data to block rank - i - 1. */
    for (int i = 0; i < n - 1 && rc == MPI_SUCCESS; i++) {
        int sb = (rank - i + n) % n, rb = (rank - i - 1 + n) % n;
        rc = hashi_sched_send(s, hashi_coll_elem(recvbuf, BLOCK_START(sb), t), BLOCK_LEN(sb), type, right);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, tmp, BLOCK_LEN(rb), type, left);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_reduce(s, tmp, hashi_coll_elem(recvbuf, BLOCK_START(rb), t), BLOCK_LEN(rb), type, op);
    }
    /* Now block rank + 1 is complete here: allgather around the ring. */
    for (int i = 0; i < n - 1 && rc == MPI_SUCCESS; i++) {
        int sb = (rank + 1 - i + n) % n, rb = (rank - i + n) % n;
        rc = hashi_sched_send(s, hashi_coll_elem(recvbuf, BLOCK_START(sb), t), BLOCK_LEN(sb), type, right);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, hashi_coll_elem(recvbuf, BLOCK_START(rb), t), BLOCK_LEN(rb), type, left);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
#undef BLOCK_START
#undef BLOCK_LEN
    return rc;
}

int hashi_coll_build_allreduce(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                               MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    if (count == 0)
        return MPI_SUCCESS;
    if (c->size == 1)
        return sendbuf == MPI_IN_PLACE ? MPI_SUCCESS : hashi_sched_copy(s, sendbuf, count, type, recvbuf, count, type);
    int rc = hashi_coll_hier_allreduce(s, sendbuf, recvbuf, count, type, op, c);
    if (rc != HASHI_COLL_FLAT)
        return rc;
    switch (hashi_coll_select(HASHI_CHOOSE_ALLREDUCE, c, (size_t)hashi_type_bytes(t, count), count,
                              hashi_op_is_commutative(op))) {
    case HASHI_ALG_RABENSEIFNER:
        return hashi_coll_build_allreduce_rabenseifner(s, sendbuf, recvbuf, count, type, op, c);
    case HASHI_ALG_RING:
        return allreduce_ring(s, sendbuf, recvbuf, count, type, op, c);
    default:
        return allreduce_recursive_doubling(s, sendbuf, recvbuf, count, type, op, c);
    }
}

/*
 * The device's reductions: allreduce, reduce, scan, exscan and
 * reduce_scatter_block (kind: HASHI_DEVICE_OP_*). Members may pass
 * different datatypes with one type signature, so the device sees the call
 * as count' elements of the single basic type the signature consists of
 * (packed when the layout is not contiguous): the offer rests on the
 * signature, the op and the count alone, the same on every member. A
 * reduce's root passes its contiguous buffer in place as is; the device
 * never sees any other kind's MPI_IN_PLACE.
 */
/* The single basic type a reduction's signature consists of, and how many
 * of it: what the device sees (0: none, decline). */
static int device_basic(const struct MPI_ABI_Datatype *t, MPI_Datatype type, MPI_Count count, MPI_Datatype *basic,
                        MPI_Count *n)
{
    *basic = t->predefined ? type : t->basic_type;
    const struct MPI_ABI_Datatype *b = *basic == MPI_DATATYPE_NULL ? NULL : hashi_type_get(*basic);
    if (!b || b->size <= 0)
        return 0;
    *n = (MPI_Count)((size_t)hashi_type_bytes(t, count) / (size_t)b->size);
    return 1;
}

/* What one member of a reduction of `kind` hands the device and gets
 * back: the input's elements (reduce_scatter_block: a block for every
 * member) and whether a result comes (a reduce's root, an exscan's ranks
 * above 0, everyone else). */
struct device_reduction_shape {
    MPI_Count in_count;
    size_t in_bytes, out_bytes;
    int has_result, in_contig, out_contig;
};

static void device_reduction_shape(int kind, MPI_Count count, int root, const struct MPI_ABI_Datatype *t,
                                   const struct MPI_ABI_Comm *c, struct device_reduction_shape *sh)
{
    sh->in_count = kind == HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK ? count * c->size : count;
    sh->in_bytes = (size_t)hashi_type_bytes(t, sh->in_count);
    sh->out_bytes = (size_t)hashi_type_bytes(t, count);
    sh->has_result = kind == HASHI_DEVICE_OP_REDUCE   ? c->rank == root
                     : kind == HASHI_DEVICE_OP_EXSCAN ? c->rank > 0
                                                      : 1;
    sh->in_contig = hashi_type_is_contig_count(t, sh->in_count);
    sh->out_contig = hashi_type_is_contig_count(t, count);
}

/* The device's blocking entry for kind, on contiguous basic elements. */
static int device_reduction_run(int kind, const void *in, void *out, MPI_Count n, MPI_Datatype basic, MPI_Op op,
                                int root, struct MPI_ABI_Comm *c)
{
    const struct hashi_device_coll_ops *ops = &hashi_device->coll;
    switch (kind) {
    case HASHI_DEVICE_OP_ALLREDUCE:
        return ops->allreduce(in, out, n, basic, op, c);
    case HASHI_DEVICE_OP_REDUCE:
        return ops->reduce(in, out, n, basic, op, root, c);
    case HASHI_DEVICE_OP_SCAN:
    case HASHI_DEVICE_OP_EXSCAN:
        return ops->scan(in, out, n, basic, op, kind == HASHI_DEVICE_OP_EXSCAN, c);
    default:
        return ops->reduce_scatter_block(in, out, n, basic, op, c);
    }
}

static int device_reduction_offered(int kind)
{
    const struct hashi_device_coll_ops *ops = &hashi_device->coll;
    switch (kind) {
    case HASHI_DEVICE_OP_ALLREDUCE: return ops->allreduce != NULL;
    case HASHI_DEVICE_OP_REDUCE: return ops->reduce != NULL;
    case HASHI_DEVICE_OP_SCAN:
    case HASHI_DEVICE_OP_EXSCAN: return ops->scan != NULL;
    case HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK: return ops->reduce_scatter_block != NULL;
    }
    return 0;
}

int hashi_coll_device_reduction(int kind, const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                                MPI_Op op, int root, const struct MPI_ABI_Datatype *t, struct MPI_ABI_Comm *c)
{
    MPI_Datatype basic;
    MPI_Count n;
    if (!device_reduction_offered(kind) || !device_basic(t, type, count, &basic, &n))
        return HASHI_DEVICE_COLL_DECLINE;
    struct device_reduction_shape sh;
    device_reduction_shape(kind, count, root, t, c, &sh);
    int in_place = sendbuf == MPI_IN_PLACE;
    const void *input = in_place ? recvbuf : sendbuf;
    /* Only a reduce's root hands its buffer over as both input and result. */
    int in_packed = !sh.in_contig || (in_place && kind != HASHI_DEVICE_OP_REDUCE);
    int out_packed = sh.has_result && !sh.out_contig;
    /* MPI_IN_PLACE (all members pass it alike) goes packed up to the slot
     * size only. A scattered layout is packed at every size the caller
     * offers: declining it would take this member alone off the device's
     * path when its peers' layouts are contiguous. */
    if (in_place && kind != HASHI_DEVICE_OP_REDUCE && sh.out_bytes > hashi_device->coll.max_bytes)
        return HASHI_DEVICE_COLL_DECLINE;
    /* A failed malloc is an error, not a decline, or this member alone
     * would leave the device's path. */
    char small_in[256], small_out[256];
    char *in = !in_packed                         ? (char *)input + t->true_lb
               : sh.in_bytes <= sizeof small_in ? small_in
                                                : malloc(sh.in_bytes);
    char *out = !sh.has_result ? NULL
                : !out_packed  ? (char *)recvbuf + t->true_lb
                : sh.out_bytes <= sizeof small_out ? small_out : malloc(sh.out_bytes);
    int rc = MPI_ERR_NO_MEM;
    if (in && (out || !sh.has_result)) {
        if (in_packed)
            hashi_type_pack(input, sh.in_count, t, 0, in, sh.in_bytes);
        rc = device_reduction_run(kind, in, out, n, basic, op, root, c);
        if (rc == MPI_SUCCESS && out_packed)
            hashi_type_unpack(recvbuf, count, t, 0, out, sh.out_bytes);
    }
    if (in_packed && in && in != small_in)
        free(in);
    if (out_packed && out && out != small_out)
        free(out);
    return rc;
}

/*
 * Nonblocking and persistent reductions: the device's operation up to its
 * max_bytes (the blocking rule's first case; reduce_scatter_block: a
 * block), on the basic type as above. The device never sees MPI_IN_PLACE,
 * sendbuf == recvbuf or a scattered layout: copy steps pack the input into
 * schedule scratch before it, and unpack a scattered result after it.
 * HASHI_DEVICE_COLL_DECLINE: nothing added.
 */
int hashi_coll_device_reduction_step(struct hashi_sched *s, int kind, const void *sendbuf, void *recvbuf,
                                     MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
                                     const struct MPI_ABI_Datatype *t, struct MPI_ABI_Comm *c)
{
    size_t bytes = (size_t)hashi_type_bytes(t, count);
    MPI_Datatype basic;
    MPI_Count n;
    if (c->size == 1 || count == 0 || bytes > hashi_device->coll.max_bytes || !device_basic(t, type, count, &basic, &n))
        return HASHI_DEVICE_COLL_DECLINE;
    struct device_reduction_shape sh;
    device_reduction_shape(kind, count, root, t, c, &sh);
    int mark = hashi_sched_mark(s), rc = MPI_SUCCESS;
    const char *in = sendbuf == MPI_IN_PLACE ? NULL : (const char *)sendbuf;
    char *out = sh.has_result && sh.out_contig ? (char *)recvbuf + t->true_lb : NULL;
    if (in && sh.in_contig && (!out || in + t->true_lb != out)) {
        in += t->true_lb;
    } else {
        /* MPI_IN_PLACE (the input is recvbuf) or scattered: packed. */
        char *packed = hashi_sched_scratch(s, sh.in_bytes);
        if (!packed)
            return MPI_ERR_NO_MEM;
        rc = hashi_sched_copy(s, in ? in : recvbuf, sh.in_count, type, packed, (MPI_Count)sh.in_bytes, MPI_BYTE);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        in = packed;
    }
    if (rc == MPI_SUCCESS && sh.has_result && !out && !(out = hashi_sched_scratch(s, bytes)))
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_device(s, &(struct hashi_device_coll_args){
            .kind = (enum hashi_device_coll_kind)kind, .comm = c, .sendbuf = in, .recvbuf = out, .bytes = bytes,
            .count = n, .type = basic, .op = op, .root = root });
    if (rc == HASHI_DEVICE_COLL_DECLINE) {
        hashi_sched_rollback(s, mark);
        return rc;
    }
    if (rc == MPI_SUCCESS && sh.has_result && !sh.out_contig && (rc = hashi_sched_fence(s)) == MPI_SUCCESS)
        rc = hashi_sched_copy(s, out, (MPI_Count)bytes, MPI_BYTE, recvbuf, count, type);
    return rc;
}

static int allreduce(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                     MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_allreduce(call, sendbuf, recvbuf, count, type, op, comm);
    int rc;
    struct MPI_ABI_Datatype *t;
    struct MPI_ABI_Comm *c = hashi_coll_call_allreduce(call, comm, sendbuf, recvbuf, count, type, op, &t, &rc);
    if (!c)
        return rc;
    if (call->mode == HASHI_COLL_BLOCKING && c->size > 1 && count > 0) {
        if ((rc = hashi_coll_hier_allreduce(NULL, sendbuf, recvbuf, count, type, op, c)) != HASHI_COLL_FLAT)
            return rc == MPI_SUCCESS ? MPI_SUCCESS
                                     : hashi_err_comm(call->func, comm, rc, "the node-aware allreduce failed");
        rc = hashi_coll_device_reduction_ok(c, 1, (size_t)hashi_type_bytes(t, count), count,
                                            hashi_op_is_commutative(op))
                 ? hashi_coll_device_reduction(HASHI_DEVICE_OP_ALLREDUCE, sendbuf, recvbuf, count, type, op, -1, t, c)
                 : HASHI_DEVICE_COLL_DECLINE;
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(call->func, comm, rc, "the device's allreduce failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    rc = !s ? MPI_ERR_NO_MEM : HASHI_DEVICE_COLL_DECLINE;
    if (s && call->mode != HASHI_COLL_BLOCKING)
        rc = hashi_coll_device_reduction_step(s, HASHI_DEVICE_OP_ALLREDUCE, sendbuf, recvbuf, count, type, op, -1, t, c);
    if (rc == HASHI_DEVICE_COLL_DECLINE)
        rc = hashi_coll_build_allreduce(s, sendbuf, recvbuf, count, type, op, c);
    return hashi_coll_call_finish(call, comm, s, rc);
}

int hashi_impl_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm)
{
    return allreduce(HASHI_COLL_CALL_BLOCKING("MPI_Allreduce"), sendbuf, recvbuf, count, datatype, op, comm);
}

int hashi_impl_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm)
{
    return allreduce(HASHI_COLL_CALL_BLOCKING("MPI_Allreduce"), sendbuf, recvbuf, count, datatype, op, comm);
}

int hashi_impl_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm, MPI_Request *request)
{
    return allreduce(HASHI_COLL_CALL_NONBLOCKING("MPI_Iallreduce", request), sendbuf, recvbuf, count, datatype, op,
                     comm);
}

int hashi_impl_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                          MPI_Comm comm, MPI_Request *request)
{
    return allreduce(HASHI_COLL_CALL_NONBLOCKING("MPI_Iallreduce", request), sendbuf, recvbuf, count, datatype, op,
                     comm);
}

int hashi_impl_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                                MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return allreduce(HASHI_COLL_CALL_PERSISTENT("MPI_Allreduce_init", request), sendbuf, recvbuf, count, datatype, op,
                     comm);
}

int hashi_impl_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return hashi_impl_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}
