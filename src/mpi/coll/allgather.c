/*
 * MPI_Allgather and MPI_Allgatherv (blocking, nonblocking, persistent).
 *
 * Allgather:
 *  - recursive doubling (power-of-two sizes, small blocks): log n rounds, in
 *    round k a rank swaps its 2^k gathered blocks with rank ^ 2^k, in place
 *    in recvbuf (the blocks of a 2^k-aligned group are adjacent there);
 *  - Bruck (any size, small blocks): log n rounds on a packed scratch copy
 *    rotated so the rank's own block is first, then rotated back;
 *  - ring (large blocks): n - 1 rounds, each passing one block to the right
 *    neighbour, in place in recvbuf.
 * Allgatherv runs the ring with the per-rank counts and displacements, or,
 * when every count is equal, the device's allgather (device_allgatherv).
 * A non-contiguous receive type is packed once: the algorithms then move
 * bytes, and one unpack at the end puts the blocks in place.
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll_data.h"

#include "device/device.h"

#include <stdlib.h>

/* Where rank i's block sits in recvbuf. */
struct allgather_layout {
    char *recvbuf;
    MPI_Count rcount;          /* Allgather: every block */
    const MPI_Count *rcounts;  /* Allgatherv: per rank (displacements in extents) */
    const MPI_Aint *displs;
    MPI_Datatype rtype;
    MPI_Aint rext;
};

static char *block_ptr(const struct allgather_layout *l, int i)
{
    return l->recvbuf + (l->rcounts ? l->displs[i] : i * l->rcount) * l->rext;
}

static MPI_Count block_count(const struct allgather_layout *l, int i)
{
    return l->rcounts ? l->rcounts[i] : l->rcount;
}

/* The own block into its place (round of its own), unless MPI_IN_PLACE. */
static int place_own(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf, MPI_Count scount,
                     MPI_Datatype stype, const struct allgather_layout *l)
{
    if (sendbuf == MPI_IN_PLACE)
        return MPI_SUCCESS;
    int rc = hashi_sched_copy(s, sendbuf, scount, stype, block_ptr(l, c->rank), block_count(l, c->rank), l->rtype);
    return rc == MPI_SUCCESS ? hashi_sched_fence(s) : rc;
}

static int allgather_recursive_doubling(struct hashi_sched *s, const struct MPI_ABI_Comm *c,
                                        const struct allgather_layout *l)
{
    int rank = c->rank, rc = MPI_SUCCESS;
    for (int mask = 1; mask < c->size && rc == MPI_SUCCESS; mask <<= 1) {
        int partner = rank ^ mask;
        int mine = rank & ~(mask - 1), theirs = partner & ~(mask - 1);
        if ((rc = hashi_sched_send(s, block_ptr(l, mine), mask * l->rcount, l->rtype, partner)) == MPI_SUCCESS &&
            (rc = hashi_sched_recv(s, block_ptr(l, theirs), mask * l->rcount, l->rtype, partner)) == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    return rc;
}

/* tmp holds blocks of ranks rank, rank+1, ... (mod n), packed: after round k
 * the first 2^(k+1) of them. */
static int allgather_bruck(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                           MPI_Count scount, MPI_Datatype stype, const struct allgather_layout *l, size_t blk)
{
    int n = c->size, rank = c->rank, rc;
    char *tmp = hashi_sched_scratch(s, (size_t)n * blk);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    if (sendbuf == MPI_IN_PLACE)
        rc = hashi_sched_copy(s, block_ptr(l, rank), l->rcount, l->rtype, tmp, (MPI_Count)blk, MPI_BYTE);
    else
        rc = hashi_sched_copy(s, sendbuf, scount, stype, tmp, (MPI_Count)blk, MPI_BYTE);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    for (int d = 1; d < n && rc == MPI_SUCCESS; d <<= 1) {
        int cnt = d < n - d ? d : n - d;
        if ((rc = hashi_sched_send(s, tmp, (MPI_Count)(cnt * blk), MPI_BYTE, (rank - d + n) % n)) == MPI_SUCCESS &&
            (rc = hashi_sched_recv(s, tmp + d * blk, (MPI_Count)(cnt * blk), MPI_BYTE, (rank + d) % n)) ==
                MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    /* tmp[i] is the block of rank (rank + i) mod n. */
    int first = n - rank;
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_copy(s, tmp, (MPI_Count)(first * blk), MPI_BYTE, block_ptr(l, rank), first * l->rcount,
                              l->rtype);
    if (rc == MPI_SUCCESS && rank > 0)
        rc = hashi_sched_copy(s, tmp + first * blk, (MPI_Count)(rank * blk), MPI_BYTE, block_ptr(l, 0),
                              rank * l->rcount, l->rtype);
    return rc;
}

/* Round i: pass block rank - i to the right, take block rank - i - 1 from the
 * left. Empty blocks (Allgatherv) are not sent: everyone knows the counts. */
static int allgather_ring(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const struct allgather_layout *l)
{
    int n = c->size, rank = c->rank, rc = MPI_SUCCESS;
    int right = (rank + 1) % n, left = (rank - 1 + n) % n;
    const struct MPI_ABI_Datatype *rt = hashi_type_get(l->rtype);
    for (int i = 0; i < n - 1 && rc == MPI_SUCCESS; i++) {
        int sb = (rank - i + n) % n, rb = (rank - i - 1 + n) % n;
        if (hashi_type_bytes(rt, block_count(l, sb)) > 0)
            rc = hashi_sched_send(s, block_ptr(l, sb), block_count(l, sb), l->rtype, right);
        if (rc == MPI_SUCCESS && hashi_type_bytes(rt, block_count(l, rb)) > 0)
            rc = hashi_sched_recv(s, block_ptr(l, rb), block_count(l, rb), l->rtype, left);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    return rc;
}

/*
 * Ring and recursive doubling move blocks on from where they arrived. With a
 * non-contiguous receive type they run on a packed copy instead (bytes), and
 * the blocks are unpacked into recvbuf once at the end, rather than unpacked
 * and packed again at every hop.
 */
static int allgather_packed(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                            MPI_Count scount, MPI_Datatype stype, const struct allgather_layout *user,
                            enum hashi_allgather_alg alg)
{
    int n = c->size, rank = c->rank;
    const struct MPI_ABI_Datatype *rt = hashi_type_get(user->rtype);
    MPI_Count *bytes = malloc((size_t)n * (sizeof(MPI_Count) + sizeof(MPI_Aint)));
    if (!bytes)
        return MPI_ERR_NO_MEM;
    MPI_Aint *offsets = (MPI_Aint *)(bytes + n);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        bytes[i] = hashi_type_bytes(rt, block_count(user, i));
        offsets[i] = (MPI_Aint)total;
        total += (size_t)bytes[i];
    }
    struct allgather_layout packed = { hashi_sched_scratch(s, total ? total : 1), bytes[0], bytes, offsets, MPI_BYTE,
                                       1 };
    int rc = packed.recvbuf ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS) {
        if (sendbuf == MPI_IN_PLACE)
            rc = hashi_sched_copy(s, block_ptr(user, rank), block_count(user, rank), user->rtype,
                                  block_ptr(&packed, rank), bytes[rank], MPI_BYTE);
        else
            rc = hashi_sched_copy(s, sendbuf, scount, stype, block_ptr(&packed, rank), bytes[rank], MPI_BYTE);
    }
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rc == MPI_SUCCESS)
        rc = alg == HASHI_ALLGATHER_RECURSIVE_DOUBLING ? allgather_recursive_doubling(s, c, &packed)
                                                       : allgather_ring(s, c, &packed);
    if (rc == MPI_SUCCESS && !user->rcounts)   /* Allgather: the blocks are in order */
        rc = hashi_sched_copy(s, packed.recvbuf, (MPI_Count)total, MPI_BYTE, user->recvbuf, n * user->rcount,
                              user->rtype);
    for (int i = 0; i < n && rc == MPI_SUCCESS && user->rcounts; i++)
        if (bytes[i])
            rc = hashi_sched_copy(s, block_ptr(&packed, i), bytes[i], MPI_BYTE, block_ptr(user, i),
                                  block_count(user, i), user->rtype);
    free(bytes);
    return rc;
}

static int build_allgather(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                           MPI_Count scount, MPI_Datatype stype, const struct allgather_layout *l)
{
    const struct MPI_ABI_Datatype *rt = hashi_type_get(l->rtype);
    size_t blk = (size_t)hashi_type_bytes(rt, l->rcount);
    if (!l->rcounts && blk == 0)
        return MPI_SUCCESS;
    enum hashi_allgather_alg alg = l->rcounts ? HASHI_ALLGATHER_RING : hashi_coll_allgather_alg(c, blk);
    if (alg == HASHI_ALLGATHER_BRUCK)   /* works on a packed copy anyway */
        return allgather_bruck(s, c, sendbuf, scount, stype, l, blk);
    if (!hashi_type_is_contig(rt) && c->size > 1)
        return allgather_packed(s, c, sendbuf, scount, stype, l, alg);
    int rc = place_own(s, c, sendbuf, scount, stype, l);
    if (rc != MPI_SUCCESS)
        return rc;
    return alg == HASHI_ALLGATHER_RECURSIVE_DOUBLING ? allgather_recursive_doubling(s, c, l) : allgather_ring(s, c, l);
}

int hashi_coll_build_allgather(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                               MPI_Count scount, MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                               const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype)
{
    struct allgather_layout l = { recvbuf, rcount, rcounts, displs, rtype, hashi_type_extent(hashi_type_get(rtype)) };
    return build_allgather(s, c, sendbuf, scount, stype, &l);
}

/* What the device sees of both buffers; in place, this rank's block of
 * recvbuf is the input. */
static void allgather_sides(const void *sendbuf, MPI_Count scount, const struct MPI_ABI_Datatype *st, void *recvbuf,
                            MPI_Count rcount, const struct MPI_ABI_Datatype *rt, size_t blk,
                            const struct MPI_ABI_Comm *c, struct hashi_coll_device_side *send,
                            struct hashi_coll_device_side *recv)
{
    *send = sendbuf == MPI_IN_PLACE
                ? (struct hashi_coll_device_side){ (char *)recvbuf + (MPI_Aint)c->rank * rcount * hashi_type_extent(rt),
                                                   rcount, rt, blk, 1 }
                : (struct hashi_coll_device_side){ (void *)sendbuf, scount, st, blk, 0 };
    *recv = (struct hashi_coll_device_side){ recvbuf, rcount * c->size, rt, blk * (size_t)c->size, 0 };
}

/*
 * The device's allgather (blocking MPI_Allgather): one block out, n in rank
 * order, as contiguous bytes, where select.c offers it; other layouts and
 * MPI_IN_PLACE's input are packed, so the block size alone decides, equally
 * on every member. HASHI_DEVICE_COLL_DECLINE when it has none or declines.
 */
static int device_allgather(const void *sendbuf, MPI_Count scount, const struct MPI_ABI_Datatype *st, void *recvbuf,
                            MPI_Count rcount, const struct MPI_ABI_Datatype *rt, struct MPI_ABI_Comm *c)
{
    size_t blk = (size_t)hashi_type_bytes(rt, rcount);
    int n = c->size;
    if (!hashi_device->coll.allgather || n < 2 || blk == 0 ||
        !hashi_coll_device_data_ok(HASHI_DEVICE_ALLGATHER, c, blk))
        return HASHI_DEVICE_COLL_DECLINE;
    struct hashi_coll_device_side send, recv;
    allgather_sides(sendbuf, scount, st, recvbuf, rcount, rt, blk, c, &send, &recv);
    const struct hashi_device_coll_args a = { .kind = HASHI_DEVICE_OP_ALLGATHER, .comm = c, .bytes = blk };
    return hashi_coll_device_blocks(&a, &send, &recv);
}

/* Nonblocking and persistent: the same sides as a device operation step. */
static int device_allgather_step(struct hashi_sched *s, const void *sendbuf, MPI_Count scount,
                                 const struct MPI_ABI_Datatype *st, MPI_Datatype stype, void *recvbuf,
                                 MPI_Count rcount, const struct MPI_ABI_Datatype *rt, MPI_Datatype rtype,
                                 struct MPI_ABI_Comm *c)
{
    size_t blk = (size_t)hashi_type_bytes(rt, rcount);
    struct hashi_coll_device_side send, recv;
    allgather_sides(sendbuf, scount, st, recvbuf, rcount, rt, blk, c, &send, &recv);
    const struct hashi_device_coll_args a = { .kind = HASHI_DEVICE_OP_ALLGATHER, .comm = c, .bytes = blk };
    return hashi_coll_device_blocks_step(s, &a, &send, sendbuf == MPI_IN_PLACE ? rtype : stype, &recv, rtype);
}

/* The count every block has when all are equal (recvcounts is the same
 * array on every member: a shared ground), else -1. */
static MPI_Count equal_count(const MPI_Count rcounts[], int n)
{
    for (int i = 1; i < n; i++)
        if (rcounts[i] != rcounts[0])
            return -1;
    return rcounts[0];
}

/*
 * Allgatherv with equal counts is the device's allgather, blocking (s NULL)
 * or as a step of s. The displacements are this member's own layout: blocks
 * at i * count go in place as the allgather's; others land in a packed copy
 * and are copied into place after (so the layout never decides the path).
 */
static int device_allgatherv(struct hashi_sched *s, const void *sendbuf, MPI_Count scount,
                             const struct MPI_ABI_Datatype *st, MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                             const MPI_Aint displs[], const struct MPI_ABI_Datatype *rt, MPI_Datatype rtype,
                             struct MPI_ABI_Comm *c)
{
    int n = c->size, regular = 1;
    size_t blk = (size_t)hashi_type_bytes(rt, rcount);
    MPI_Aint ext = hashi_type_extent(rt);
    /* Up to the slots only: above them the allgather's read and staged
     * paths would take members whose blocks sit at i * count and not the
     * others, a choice on a member's own layout. */
    if (n < 2 || blk == 0 || blk > hashi_device->coll.max_bytes || (!s && !hashi_device->coll.allgather))
        return HASHI_DEVICE_COLL_DECLINE;
    for (int i = 0; i < n; i++)
        regular &= displs[i] == i * rcount;
    if (regular)
        return s ? device_allgather_step(s, sendbuf, scount, st, stype, recvbuf, rcount, rt, rtype, c)
                 : device_allgather(sendbuf, scount, st, recvbuf, rcount, rt, c);
    struct hashi_coll_device_side send =
        sendbuf == MPI_IN_PLACE
            ? (struct hashi_coll_device_side){ (char *)recvbuf + displs[c->rank] * ext, rcount, rt, blk, 0 }
            : (struct hashi_coll_device_side){ (void *)sendbuf, scount, st, blk, 0 };
    char *packed = s ? hashi_sched_scratch(s, blk * (size_t)n) : malloc(blk * (size_t)n);
    if (!packed)
        return MPI_ERR_NO_MEM;   /* not a decline: the other members go ahead */
    const struct hashi_coll_device_side recv = { packed, (MPI_Count)(blk * (size_t)n), hashi_type_get(MPI_BYTE),
                                                 blk * (size_t)n, 0 };
    const struct hashi_device_coll_args a = { .kind = HASHI_DEVICE_OP_ALLGATHER, .comm = c, .bytes = blk };
    int rc;
    if (!s) {
        rc = hashi_coll_device_blocks(&a, &send, &recv);
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
            hashi_type_unpack((char *)recvbuf + displs[i] * ext, rcount, rt, 0, packed + (size_t)i * blk, blk);
        free(packed);
        return rc;
    }
    rc = hashi_coll_device_blocks_step(s, &a, &send, sendbuf == MPI_IN_PLACE ? rtype : stype, &recv, MPI_BYTE);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = hashi_sched_copy(s, packed + (size_t)i * blk, (MPI_Count)blk, MPI_BYTE, (char *)recvbuf + displs[i] * ext,
                              rcount, rtype);
    return rc;
}

/*
 * Allgatherv that the allgather kind does not take (unequal counts, or
 * blocks above the slots) on the device's sparse exchange, blocking or as
 * a step of s: our one block to every member, every member's into its
 * place. With MPI_IN_PLACE our block is in its place already and stays.
 */
static int device_allgatherv_exchange(struct hashi_sched *s, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                                      void *recvbuf, const MPI_Count rcounts[], const MPI_Aint displs[],
                                      const struct MPI_ABI_Datatype *rt, MPI_Datatype rtype, struct MPI_ABI_Comm *c)
{
    if (!(s ? hashi_device->coll.op_init != NULL : hashi_device->coll.exchange != NULL))
        return HASHI_DEVICE_COLL_DECLINE;
    int n = c->size, *peers = NULL;
    const struct hashi_coll_blocks mine =
        sendbuf == MPI_IN_PLACE ? (struct hashi_coll_blocks){ .buf = (char *)recvbuf +
                                                                     displs[c->rank] * hashi_type_extent(rt),
                                                              .count = rcounts[c->rank], .type = rtype }
                                : (struct hashi_coll_blocks){ .buf = (char *)sendbuf, .count = scount, .type = stype };
    const struct hashi_coll_blocks all = { .buf = recvbuf, .counts = rcounts, .displs = displs,
                                           .unit = hashi_type_extent(rt), .type = rtype };
    if (sendbuf == MPI_IN_PLACE && !(peers = hashi_coll_peers_but(n, c->rank)))
        return MPI_ERR_NO_MEM;
    /* stride 0: block i of `mine` is the one block, for every member */
    const struct hashi_coll_xside xs = { n, peers, NULL, &mine }, xr = { n, peers, NULL, &all };
    int rc = s ? hashi_coll_device_exchange_step(s, c, 0, &xs, &xr) : hashi_coll_device_exchange(c, 0, &xs, &xr);
    free(peers);
    return rc;
}

static int allgather(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                     void *recvbuf, MPI_Count rcount, const MPI_Count rcounts[], const MPI_Aint displs[],
                     MPI_Datatype rtype, MPI_Comm comm, int is_v)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_allgather(call, sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, comm,
                                          is_v);
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_call_comm(call, comm, &rc);
    if (!c)
        return rc;
    int in_place = sendbuf == MPI_IN_PLACE;
    struct MPI_ABI_Datatype *st = NULL, *rt = NULL;
    if (!in_place &&
        (rc = hashi_coll_check_data(call, comm, HASHI_COLL_SEND, sendbuf, scount, stype, &st)) != MPI_SUCCESS)
        return rc;
    size_t send_bytes = st ? (size_t)hashi_type_bytes(st, scount) : 0;
    if (is_v) {
        if ((rc = hashi_coll_check_counts(call, comm, HASHI_COLL_RECV, c->size, recvbuf, rcounts, displs)) ||
            (rc = hashi_coll_check_data(call, comm, HASHI_COLL_RECV, recvbuf, 0, rtype, &rt)))
            return rc;
    } else {
        if ((rc = hashi_coll_check_data(call, comm, HASHI_COLL_RECV, recvbuf, rcount, rtype, &rt)) ||
            (rc = hashi_coll_check_alias(call, comm, sendbuf, recvbuf, send_bytes)))
            return rc;
    }

    /* Allgatherv's equal counts: the allgather on the device. */
    MPI_Count veq = is_v ? equal_count(rcounts, c->size) : -1;
    if (call->mode == HASHI_COLL_BLOCKING && (!is_v || veq >= 0)) {
        rc = is_v ? device_allgatherv(NULL, sendbuf, scount, st, stype, recvbuf, veq, displs, rt, rtype, c)
                  : device_allgather(sendbuf, scount, st, recvbuf, rcount, rt, c);
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(call->func, comm, rc, "the device's allgather failed");
    }
    if (call->mode == HASHI_COLL_BLOCKING && is_v) {
        rc = device_allgatherv_exchange(NULL, sendbuf, scount, stype, recvbuf, rcounts, displs, rt, rtype, c);
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(call->func, comm, rc, "the device's allgather failed");
    }
    if (call->mode == HASHI_COLL_BLOCKING && !is_v &&
        (rc = hashi_coll_hier_allgather(NULL, sendbuf, scount, stype, recvbuf, rcount, rtype, c)) != HASHI_COLL_FLAT)
        return rc == MPI_SUCCESS ? MPI_SUCCESS : hashi_err_comm(call->func, comm, rc, "the node-aware allgather failed");
    struct hashi_sched *s = hashi_sched_create(c);
    /* Nonblocking and persistent: the device's operation where it takes the call. */
    rc = !s || call->mode == HASHI_COLL_BLOCKING ? HASHI_DEVICE_COLL_DECLINE
         : !is_v   ? device_allgather_step(s, sendbuf, scount, st, stype, recvbuf, rcount, rt, rtype, c)
         : veq >= 0 ? device_allgatherv(s, sendbuf, scount, st, stype, recvbuf, veq, displs, rt, rtype, c)
                    : HASHI_DEVICE_COLL_DECLINE;
    /* What the allgather kind leaves of an Allgatherv: the sparse exchange. */
    if (s && is_v && call->mode != HASHI_COLL_BLOCKING && rc == HASHI_DEVICE_COLL_DECLINE)
        rc = device_allgatherv_exchange(s, sendbuf, scount, stype, recvbuf, rcounts, displs, rt, rtype, c);
    if (s && !is_v && rc == HASHI_DEVICE_COLL_DECLINE)
        rc = hashi_coll_hier_allgather(s, sendbuf, scount, stype, recvbuf, rcount, rtype, c);
    if (s && ((is_v && rc == HASHI_DEVICE_COLL_DECLINE) || rc == HASHI_COLL_FLAT))
        rc = hashi_coll_build_allgather(s, c, sendbuf, scount, stype, recvbuf, rcount, is_v ? rcounts : NULL, displs,
                                        rtype);
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* Allgatherv's int form: the arrays widened. */
static int allgatherv_int(const struct hashi_coll_call *call, const void *sendbuf, int scount, MPI_Datatype stype,
                          void *recvbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    MPI_Count *wc;
    MPI_Aint *wd;
    void *block;
    if (hashi_coll_widen(hashi_coll_comm_size(comm), rcounts, displs, &wc, &wd, &block) != MPI_SUCCESS)
        return hashi_err_comm(call->func, comm, MPI_ERR_NO_MEM, "out of memory");
    int rc = allgather(call, sendbuf, scount, stype, recvbuf, 0, wc, wd, rtype, comm, 1);
    free(block);
    return rc;
}

/* ---- entry points ---- */

int hashi_impl_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgather(HASHI_COLL_CALL_BLOCKING("MPI_Allgather"), sendbuf, sendcount, sendtype, recvbuf, recvcount,
                     NULL, NULL, recvtype, comm, 0);
}

int hashi_impl_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgather(HASHI_COLL_CALL_BLOCKING("MPI_Allgather"), sendbuf, sendcount, sendtype, recvbuf, recvcount,
                     NULL, NULL, recvtype, comm, 0);
}

int hashi_impl_Iallgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                            MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return allgather(HASHI_COLL_CALL_NONBLOCKING("MPI_Iallgather", request), sendbuf, sendcount, sendtype, recvbuf,
                     recvcount, NULL, NULL, recvtype, comm, 0);
}

int hashi_impl_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return allgather(HASHI_COLL_CALL_NONBLOCKING("MPI_Iallgather", request), sendbuf, sendcount, sendtype, recvbuf,
                     recvcount, NULL, NULL, recvtype, comm, 0);
}

int hashi_impl_Allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                                MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                MPI_Request *request)
{
    (void)info;
    return allgather(HASHI_COLL_CALL_PERSISTENT("MPI_Allgather_init", request), sendbuf, sendcount, sendtype,
                     recvbuf, recvcount, NULL, NULL, recvtype, comm, 0);
}

int hashi_impl_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request)
{
    (void)info;
    return allgather(HASHI_COLL_CALL_PERSISTENT("MPI_Allgather_init", request), sendbuf, sendcount, sendtype,
                     recvbuf, recvcount, NULL, NULL, recvtype, comm, 0);
}

int hashi_impl_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                            const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                            MPI_Comm comm)
{
    return allgather(HASHI_COLL_CALL_BLOCKING("MPI_Allgatherv"), sendbuf, sendcount, sendtype, recvbuf, 0,
                     recvcounts, displs, recvtype, comm, 1);
}

int hashi_impl_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgatherv_int(HASHI_COLL_CALL_BLOCKING("MPI_Allgatherv"), sendbuf, sendcount, sendtype, recvbuf,
                          recvcounts, displs, recvtype, comm);
}

int hashi_impl_Iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Request *request)
{
    return allgather(HASHI_COLL_CALL_NONBLOCKING("MPI_Iallgatherv", request), sendbuf, sendcount, sendtype, recvbuf,
                     0, recvcounts, displs, recvtype, comm, 1);
}

int hashi_impl_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                           MPI_Request *request)
{
    return allgatherv_int(HASHI_COLL_CALL_NONBLOCKING("MPI_Iallgatherv", request), sendbuf, sendcount, sendtype,
                          recvbuf, recvcounts, displs, recvtype, comm);
}

int hashi_impl_Allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                                 MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return allgather(HASHI_COLL_CALL_PERSISTENT("MPI_Allgatherv_init", request), sendbuf, sendcount, sendtype,
                     recvbuf, 0, recvcounts, displs, recvtype, comm, 1);
}

int hashi_impl_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Info info, MPI_Request *request)
{
    (void)info;
    return allgatherv_int(HASHI_COLL_CALL_PERSISTENT("MPI_Allgatherv_init", request), sendbuf, sendcount, sendtype,
                          recvbuf, recvcounts, displs, recvtype, comm);
}
