/*
 * MPI_Gather and MPI_Gatherv (blocking, nonblocking, persistent).
 *
 * Gather: binomial tree for small blocks (log n rounds; inner nodes collect
 * their subtree's blocks packed in scratch and forward them in one message),
 * linear for large ones (every rank sends straight into the root's buffer).
 * The root receives each child's subtree directly into recvbuf with the
 * receive type; only a subtree whose ranks wrap past n - 1 goes through
 * scratch. Gatherv is linear (the counts are known at the root only).
 * Gather asks the device first (device_gather), blocking Gatherv the
 * device's sparse exchange (device_gatherv).
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll_data.h"

#include "device/device.h"

#include <stdlib.h>

struct gather_args {
    const void *sendbuf;
    MPI_Count scount;
    MPI_Datatype stype;
    void *recvbuf;            /* root only */
    MPI_Count rcount;
    MPI_Datatype rtype;
    const MPI_Count *rcounts; /* Gatherv, root only */
    const MPI_Aint *displs;
    int root;
};

/* The root's own block: from sendbuf into its place, unless MPI_IN_PLACE. */
static int copy_own(struct hashi_sched *s, const struct gather_args *a, char *dst, MPI_Count dcount)
{
    if (a->sendbuf == MPI_IN_PLACE)
        return MPI_SUCCESS;
    return hashi_sched_copy(s, a->sendbuf, a->scount, a->stype, dst, dcount, a->rtype);
}

static int gather_binomial(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const struct gather_args *a,
                           size_t blk)
{
    int n = c->size, root = a->root;
    int vr = (c->rank - root + n) % n;
    int low = hashi_binomial_lowbit(vr, n);
    int rc = MPI_SUCCESS;

    if (vr == 0) {
        MPI_Aint rblk = a->rcount * hashi_type_extent(hashi_type_get(a->rtype));
        char *rbuf = a->recvbuf;
        rc = copy_own(s, a, rbuf + root * rblk, a->rcount);
        /* The child subtree whose ranks wrap past n - 1, received in scratch. */
        char *wrap_tmp = NULL;
        int wrap_start = 0, wrap_sub = 0;
        for (int m = 1; m < n && rc == MPI_SUCCESS; m <<= 1) {
            int sub = m < n - m ? m : n - m, start = (root + m) % n;
            if (start + sub <= n) {
                rc = hashi_sched_recv(s, rbuf + start * rblk, sub * a->rcount, a->rtype, start);
            } else {
                wrap_tmp = hashi_sched_scratch(s, (size_t)sub * blk);
                if (!wrap_tmp)
                    return MPI_ERR_NO_MEM;
                wrap_start = start;
                wrap_sub = sub;
                rc = hashi_sched_recv(s, wrap_tmp, (MPI_Count)(sub * blk), MPI_BYTE, start);
            }
        }
        if (wrap_tmp && rc == MPI_SUCCESS) {
            int first = n - wrap_start;   /* blocks of ranks wrap_start .. n-1 */
            if ((rc = hashi_sched_fence(s)) == MPI_SUCCESS)
                rc = hashi_sched_copy(s, wrap_tmp, (MPI_Count)(first * blk), MPI_BYTE, rbuf + wrap_start * rblk,
                                      first * a->rcount, a->rtype);
            if (rc == MPI_SUCCESS)
                rc = hashi_sched_copy(s, wrap_tmp + first * blk, (MPI_Count)((wrap_sub - first) * blk), MPI_BYTE,
                                      rbuf, (wrap_sub - first) * a->rcount, a->rtype);
        }
        return rc;
    }

    int parent = (vr - low + root) % n;
    int sub = hashi_binomial_subtree(vr, n);
    if (sub == 1)   /* a leaf sends its own data as it is */
        return hashi_sched_send(s, a->sendbuf, a->scount, a->stype, parent);
    char *tmp = hashi_sched_scratch(s, (size_t)sub * blk);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    rc = hashi_sched_copy(s, a->sendbuf, a->scount, a->stype, tmp, (MPI_Count)blk, MPI_BYTE);
    for (int m = 1; m < low && vr + m < n && rc == MPI_SUCCESS; m <<= 1) {
        int csub = m < n - vr - m ? m : n - vr - m;
        rc = hashi_sched_recv(s, tmp + m * blk, (MPI_Count)(csub * blk), MPI_BYTE, (vr + m + root) % n);
    }
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_send(s, tmp, (MPI_Count)(sub * blk), MPI_BYTE, parent);
    return rc;
}

/* Linear Gather (rcounts == NULL) and Gatherv: one round, the root receives
 * every block in place. Empty blocks travel nowhere (sender and root both
 * know they are empty). */
static int gather_linear(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const struct gather_args *a,
                         size_t blk)
{
    if (c->rank != a->root)
        return blk ? hashi_sched_send(s, a->sendbuf, a->scount, a->stype, a->root) : MPI_SUCCESS;
    const struct MPI_ABI_Datatype *rt = hashi_type_get(a->rtype);
    MPI_Aint rext = hashi_type_extent(rt);
    char *rbuf = a->recvbuf;
    int rc = MPI_SUCCESS;
    for (int i = 0; i < c->size && rc == MPI_SUCCESS; i++) {
        MPI_Count cnt = a->rcounts ? a->rcounts[i] : a->rcount;
        char *dst = rbuf + (a->rcounts ? a->displs[i] : i * cnt) * rext;
        if (i == c->rank)
            rc = copy_own(s, a, dst, cnt);
        else if (hashi_type_bytes(rt, cnt) > 0)
            rc = hashi_sched_recv(s, dst, cnt, a->rtype, i);
    }
    return rc;
}

int hashi_coll_build_gather(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                            MPI_Count scount, MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                            MPI_Datatype rtype, int root)
{
    struct gather_args a = { sendbuf, scount, stype, recvbuf, rcount, rtype, NULL, NULL, root };
    /* One block's bytes: the same on every rank (the root's receive side,
     * the others' send side: one signature). */
    size_t blk = (size_t)(c->rank == root ? hashi_type_bytes(hashi_type_get(rtype), rcount)
                                          : hashi_type_bytes(hashi_type_get(stype), scount));
    if (blk == 0)
        return MPI_SUCCESS;
    if (hashi_coll_gather_alg(c, blk) == HASHI_ROOTED_BINOMIAL)
        return gather_binomial(s, c, &a, blk);
    return gather_linear(s, c, &a, blk);
}

/*
 * The device's gather, blocking (s NULL) or as a device step of s: every
 * member's block into the root's recvbuf in rank order, as contiguous bytes
 * (layouts that are not are packed), offered up to the device's max_bytes
 * per block: the block size decides, the same on every member. The root's
 * MPI_IN_PLACE block is in its place already. HASHI_DEVICE_COLL_DECLINE
 * when the device has no gather or declines (nothing added to s).
 */
static int device_gather(struct hashi_sched *s, const struct gather_args *ga, size_t blk, struct MPI_ABI_Comm *c)
{
    if (c->size < 2 || blk == 0 || blk > hashi_device->coll.max_bytes || (!s && !hashi_device->coll.gather))
        return HASHI_DEVICE_COLL_DECLINE;
    int is_root = c->rank == ga->root;
    const struct MPI_ABI_Datatype *rt = is_root ? hashi_type_get(ga->rtype) : NULL;
    struct hashi_coll_device_side send, recv;
    MPI_Datatype stype = ga->stype;
    if (ga->sendbuf == MPI_IN_PLACE) {
        char *own = (char *)ga->recvbuf + (MPI_Aint)ga->root * ga->rcount * hashi_type_extent(rt);
        send = (struct hashi_coll_device_side){ own, ga->rcount, rt, blk, 0 };
        stype = ga->rtype;
    } else {
        send = (struct hashi_coll_device_side){ (void *)ga->sendbuf, ga->scount, hashi_type_get(ga->stype), blk, 0 };
    }
    if (is_root)
        recv = (struct hashi_coll_device_side){ ga->recvbuf, ga->rcount * c->size, rt, blk * (size_t)c->size, 0 };
    const struct hashi_device_coll_args a = { .kind = HASHI_DEVICE_OP_GATHER, .comm = c, .bytes = blk,
                                              .root = ga->root };
    const struct hashi_coll_device_side *to = is_root ? &recv : NULL;
    return s ? hashi_coll_device_blocks_step(s, &a, &send, stype, to, ga->rtype)
             : hashi_coll_device_blocks(&a, &send, to);
}

/* Gatherv on the device's sparse exchange (blocking, or a step of s): each
 * member's block to the root, placed by the root's counts. */
static int device_gatherv(struct hashi_sched *s, const struct gather_args *ga, struct MPI_ABI_Comm *c)
{
    const struct hashi_coll_blocks mine = { .buf = (char *)ga->sendbuf, .count = ga->scount, .type = ga->stype };
    int root = c->rank == ga->root;
    const struct hashi_coll_blocks all = { .buf = ga->recvbuf, .counts = ga->rcounts, .displs = ga->displs,
                                           .unit = root ? hashi_type_extent(hashi_type_get(ga->rtype)) : 0,
                                           .type = ga->rtype };
    return hashi_coll_device_rooted_v(s, c, ga->root, 1, ga->sendbuf == MPI_IN_PLACE ? NULL : &mine,
                                      root ? &all : NULL);
}

static int gather(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                  void *recvbuf, MPI_Count rcount, const MPI_Count rcounts[], const MPI_Aint displs[],
                  MPI_Datatype rtype, int root, MPI_Comm comm, int is_v)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_gather(call, sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, root, comm,
                                       is_v);
    const struct hashi_coll_rooted r = { root, is_v, HASHI_COLL_SEND, sendbuf, scount, stype,
                                         recvbuf, rcount, rcounts, displs, rtype };
    int rc;
    size_t blk;
    struct MPI_ABI_Comm *c = hashi_coll_check_rooted(call, comm, &r, &blk, &rc);
    if (!c)
        return rc;

    struct gather_args a = { sendbuf, scount, stype, recvbuf, rcount, rtype, rcounts, displs, root };
    if (call->mode == HASHI_COLL_BLOCKING) {
        rc = is_v ? device_gatherv(NULL, &a, c) : device_gather(NULL, &a, blk, c);
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(call->func, comm, rc, "the device's gather failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    /* Nonblocking and persistent: the device's operation where it takes the
     * call; else the two levels where they apply, else the flat algorithms. */
    int declined = 1;
    if (s && call->mode != HASHI_COLL_BLOCKING)
        declined =
            (rc = is_v ? device_gatherv(s, &a, c) : device_gather(s, &a, blk, c)) == HASHI_DEVICE_COLL_DECLINE;
    if (s && declined && !is_v)
        declined = (rc = hashi_coll_hier_gather(s, sendbuf, scount, stype, recvbuf, rcount, rtype, root, c)) ==
                   HASHI_COLL_FLAT;
    if (s && declined)
        rc = is_v ? gather_linear(s, c, &a, blk)
                  : hashi_coll_build_gather(s, c, sendbuf, scount, stype, recvbuf, rcount, rtype, root);
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* Gatherv's int form: the root's arrays widened (they mean nothing elsewhere). */
static int gatherv_int(const struct hashi_coll_call *call, const void *sendbuf, int scount, MPI_Datatype stype,
                       void *recvbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                       MPI_Comm comm)
{
    MPI_Count *wc = NULL;
    MPI_Aint *wd = NULL;
    void *block = NULL;
    if (hashi_coll_is_root(comm, root) &&
        hashi_coll_widen(hashi_coll_comm_size(comm), rcounts, displs, &wc, &wd, &block) != MPI_SUCCESS)
        return hashi_err_comm(call->func, comm, MPI_ERR_NO_MEM, "out of memory");
    int rc = gather(call, sendbuf, scount, stype, recvbuf, 0, wc, wd, rtype, root, comm, 1);
    free(block);
    return rc;
}

/* ---- entry points ---- */

int hashi_impl_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return gather(HASHI_COLL_CALL_BLOCKING("MPI_Gather"), sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL,
                  NULL, recvtype, root, comm, 0);
}

int hashi_impl_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return gather(HASHI_COLL_CALL_BLOCKING("MPI_Gather"), sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL,
                  NULL, recvtype, root, comm, 0);
}

int hashi_impl_Igather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                         MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return gather(HASHI_COLL_CALL_NONBLOCKING("MPI_Igather", request), sendbuf, sendcount, sendtype, recvbuf,
                  recvcount, NULL, NULL, recvtype, root, comm, 0);
}

int hashi_impl_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return gather(HASHI_COLL_CALL_NONBLOCKING("MPI_Igather", request), sendbuf, sendcount, sendtype, recvbuf,
                  recvcount, NULL, NULL, recvtype, root, comm, 0);
}

int hashi_impl_Gather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                             MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                             MPI_Request *request)
{
    (void)info;
    return gather(HASHI_COLL_CALL_PERSISTENT("MPI_Gather_init", request), sendbuf, sendcount, sendtype, recvbuf,
                  recvcount, NULL, NULL, recvtype, root, comm, 0);
}

int hashi_impl_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return gather(HASHI_COLL_CALL_PERSISTENT("MPI_Gather_init", request), sendbuf, sendcount, sendtype, recvbuf,
                  recvcount, NULL, NULL, recvtype, root, comm, 0);
}

int hashi_impl_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root,
                         MPI_Comm comm)
{
    return gather(HASHI_COLL_CALL_BLOCKING("MPI_Gatherv"), sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                  displs, recvtype, root, comm, 1);
}

int hashi_impl_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return gatherv_int(HASHI_COLL_CALL_BLOCKING("MPI_Gatherv"), sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                       displs, recvtype, root, comm);
}

int hashi_impl_Igatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root,
                          MPI_Comm comm, MPI_Request *request)
{
    return gather(HASHI_COLL_CALL_NONBLOCKING("MPI_Igatherv", request), sendbuf, sendcount, sendtype, recvbuf, 0,
                  recvcounts, displs, recvtype, root, comm, 1);
}

int hashi_impl_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                        MPI_Request *request)
{
    return gatherv_int(HASHI_COLL_CALL_NONBLOCKING("MPI_Igatherv", request), sendbuf, sendcount, sendtype, recvbuf,
                       recvcounts, displs, recvtype, root, comm);
}

int hashi_impl_Gatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root,
                              MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return gather(HASHI_COLL_CALL_PERSISTENT("MPI_Gatherv_init", request), sendbuf, sendcount, sendtype, recvbuf, 0,
                  recvcounts, displs, recvtype, root, comm, 1);
}

int hashi_impl_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                            MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return gatherv_int(HASHI_COLL_CALL_PERSISTENT("MPI_Gatherv_init", request), sendbuf, sendcount, sendtype,
                       recvbuf, recvcounts, displs, recvtype, root, comm);
}
