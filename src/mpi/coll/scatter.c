/*
 * MPI_Scatter and MPI_Scatterv (blocking, nonblocking, persistent).
 *
 * Scatter: binomial tree for small blocks (the mirror of gather.c: the root
 * sends each child its subtree's blocks straight from sendbuf with the send
 * type, largest subtree first; inner nodes receive their subtree packed in
 * scratch and pass the parts on), linear for large blocks. Only a subtree
 * whose ranks wrap past n - 1 is packed at the root. Scatterv is linear.
 * Scatter asks the device first (device_scatter), blocking Scatterv the
 * device's sparse exchange (device_scatterv).
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll_data.h"

#include "device/device.h"

#include <stdlib.h>

struct scatter_args {
    const void *sendbuf;      /* root only */
    MPI_Count scount;
    const MPI_Count *scounts; /* Scatterv, root only */
    const MPI_Aint *displs;
    MPI_Datatype stype;
    void *recvbuf;
    MPI_Count rcount;
    MPI_Datatype rtype;
    int root;
};

/* The root's own block: into recvbuf, unless MPI_IN_PLACE. */
static int copy_own(struct hashi_sched *s, const struct scatter_args *a, const char *src, MPI_Count scount)
{
    if (a->recvbuf == MPI_IN_PLACE)
        return MPI_SUCCESS;
    return hashi_sched_copy(s, src, scount, a->stype, a->recvbuf, a->rcount, a->rtype);
}

static int scatter_binomial(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const struct scatter_args *a,
                            size_t blk)
{
    int n = c->size, root = a->root;
    int vr = (c->rank - root + n) % n;
    int low = hashi_binomial_lowbit(vr, n);
    int rc;

    if (vr == 0) {
        MPI_Aint sblk = a->scount * hashi_type_extent(hashi_type_get(a->stype));
        const char *sbuf = a->sendbuf;
        /* The child subtree whose ranks wrap past n - 1 is packed first. */
        char *wrap_tmp = NULL;
        for (int m = 1; m < n; m <<= 1) {
            int sub = m < n - m ? m : n - m, start = (root + m) % n;
            if (start + sub <= n)
                continue;
            int first = n - start;
            if (!(wrap_tmp = hashi_sched_scratch(s, (size_t)sub * blk)))
                return MPI_ERR_NO_MEM;
            if ((rc = hashi_sched_copy(s, sbuf + start * sblk, first * a->scount, a->stype, wrap_tmp,
                                       (MPI_Count)(first * blk), MPI_BYTE)) != MPI_SUCCESS ||
                (rc = hashi_sched_copy(s, sbuf, (sub - first) * a->scount, a->stype, wrap_tmp + first * blk,
                                       (MPI_Count)((sub - first) * blk), MPI_BYTE)) != MPI_SUCCESS ||
                (rc = hashi_sched_fence(s)) != MPI_SUCCESS)
                return rc;
        }
        if ((rc = copy_own(s, a, sbuf + root * sblk, a->scount)) != MPI_SUCCESS)
            return rc;
        for (int m = low >> 1; m >= 1; m >>= 1) {   /* largest subtree first */
            int sub = m < n - m ? m : n - m, start = (root + m) % n;
            if (start + sub <= n)
                rc = hashi_sched_send(s, sbuf + start * sblk, sub * a->scount, a->stype, start);
            else
                rc = hashi_sched_send(s, wrap_tmp, (MPI_Count)(sub * blk), MPI_BYTE, start);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        return MPI_SUCCESS;
    }

    int parent = (vr - low + root) % n;
    int sub = hashi_binomial_subtree(vr, n);
    if (sub == 1)   /* a leaf receives its block as it is */
        return hashi_sched_recv(s, a->recvbuf, a->rcount, a->rtype, parent);
    char *tmp = hashi_sched_scratch(s, (size_t)sub * blk);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    if ((rc = hashi_sched_recv(s, tmp, (MPI_Count)(sub * blk), MPI_BYTE, parent)) != MPI_SUCCESS ||
        (rc = hashi_sched_fence(s)) != MPI_SUCCESS)
        return rc;
    for (int m = low >> 1; m >= 1; m >>= 1) {
        if (vr + m >= n)
            continue;
        int csub = m < n - vr - m ? m : n - vr - m;
        if ((rc = hashi_sched_send(s, tmp + m * blk, (MPI_Count)(csub * blk), MPI_BYTE, (vr + m + root) % n)) !=
            MPI_SUCCESS)
            return rc;
    }
    return hashi_sched_copy(s, tmp, (MPI_Count)blk, MPI_BYTE, a->recvbuf, a->rcount, a->rtype);
}

/* Linear Scatter (scounts == NULL) and Scatterv: one round, the root sends
 * every block from its place. Empty blocks travel nowhere. */
static int scatter_linear(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const struct scatter_args *a,
                          size_t blk)
{
    if (c->rank != a->root)
        return blk ? hashi_sched_recv(s, a->recvbuf, a->rcount, a->rtype, a->root) : MPI_SUCCESS;
    const struct MPI_ABI_Datatype *st = hashi_type_get(a->stype);
    MPI_Aint sext = hashi_type_extent(st);
    const char *sbuf = a->sendbuf;
    int rc = MPI_SUCCESS;
    for (int i = 0; i < c->size && rc == MPI_SUCCESS; i++) {
        MPI_Count cnt = a->scounts ? a->scounts[i] : a->scount;
        const char *src = sbuf + (a->scounts ? a->displs[i] : i * cnt) * sext;
        if (i == c->rank)
            rc = copy_own(s, a, src, cnt);
        else if (hashi_type_bytes(st, cnt) > 0)
            rc = hashi_sched_send(s, src, cnt, a->stype, i);
    }
    return rc;
}

int hashi_coll_build_scatter(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                             MPI_Count scount, MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                             MPI_Datatype rtype, int root)
{
    struct scatter_args a = { sendbuf, scount, NULL, NULL, stype, recvbuf, rcount, rtype, root };
    /* One block's bytes: the same on every rank (the root's send side, the
     * others' receive side: one signature). */
    size_t blk = (size_t)(c->rank == root ? hashi_type_bytes(hashi_type_get(stype), scount)
                                          : hashi_type_bytes(hashi_type_get(rtype), rcount));
    if (blk == 0)
        return MPI_SUCCESS;
    if (hashi_coll_scatter_alg(c, blk) == HASHI_ROOTED_BINOMIAL)
        return scatter_binomial(s, c, &a, blk);
    return scatter_linear(s, c, &a, blk);
}

/*
 * The device's scatter, blocking (s NULL) or as a device step of s: the
 * root's block for each member into that member's recvbuf, as contiguous
 * bytes (packed where a layout is not), offered up to the device's
 * max_bytes per block, the same on every member. A root passing
 * MPI_IN_PLACE receives nothing. HASHI_DEVICE_COLL_DECLINE when the device
 * has no scatter or declines (nothing added to s).
 */
static int device_scatter(struct hashi_sched *s, const struct scatter_args *sa, size_t blk, struct MPI_ABI_Comm *c)
{
    if (c->size < 2 || blk == 0 || blk > hashi_device->coll.max_bytes || (!s && !hashi_device->coll.scatter))
        return HASHI_DEVICE_COLL_DECLINE;
    int is_root = c->rank == sa->root, has_recv = sa->recvbuf != MPI_IN_PLACE;
    struct hashi_coll_device_side send, recv;
    if (is_root)
        send = (struct hashi_coll_device_side){ (void *)sa->sendbuf, sa->scount * c->size, hashi_type_get(sa->stype),
                                                blk * (size_t)c->size, 0 };
    if (has_recv)
        recv = (struct hashi_coll_device_side){ sa->recvbuf, sa->rcount, hashi_type_get(sa->rtype), blk, 0 };
    const struct hashi_device_coll_args a = { .kind = HASHI_DEVICE_OP_SCATTER, .comm = c, .bytes = blk,
                                              .root = sa->root };
    const struct hashi_coll_device_side *from = is_root ? &send : NULL, *to = has_recv ? &recv : NULL;
    return s ? hashi_coll_device_blocks_step(s, &a, from, sa->stype, to, sa->rtype)
             : hashi_coll_device_blocks(&a, from, to);
}

/* Scatterv on the device's sparse exchange (blocking, or a step of s): the
 * root's blocks to each member, placed by the root's counts (gather.c's
 * device_gatherv). */
static int device_scatterv(struct hashi_sched *s, const struct scatter_args *sa, struct MPI_ABI_Comm *c)
{
    const struct hashi_coll_blocks mine = { .buf = sa->recvbuf, .count = sa->rcount, .type = sa->rtype };
    int root = c->rank == sa->root;
    const struct hashi_coll_blocks all = { .buf = (char *)sa->sendbuf, .counts = sa->scounts, .displs = sa->displs,
                                           .unit = root ? hashi_type_extent(hashi_type_get(sa->stype)) : 0,
                                           .type = sa->stype };
    return hashi_coll_device_rooted_v(s, c, sa->root, 0, sa->recvbuf == MPI_IN_PLACE ? NULL : &mine,
                                      root ? &all : NULL);
}

static int scatter(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                   const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype stype, void *recvbuf,
                   MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, int is_v)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_scatter(call, sendbuf, scount, scounts, displs, stype, recvbuf, rcount, rtype, root,
                                        comm, is_v);
    const struct hashi_coll_rooted r = { root, is_v, HASHI_COLL_RECV, recvbuf, rcount, rtype,
                                         sendbuf, scount, scounts, displs, stype };
    int rc;
    size_t blk;
    struct MPI_ABI_Comm *c = hashi_coll_check_rooted(call, comm, &r, &blk, &rc);
    if (!c)
        return rc;

    struct scatter_args a = { sendbuf, scount, is_v ? scounts : NULL, displs, stype, recvbuf, rcount, rtype, root };
    if (call->mode == HASHI_COLL_BLOCKING) {
        rc = is_v ? device_scatterv(NULL, &a, c) : device_scatter(NULL, &a, blk, c);
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(call->func, comm, rc, "the device's scatter failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    /* Nonblocking and persistent: the device's operation where it takes the
     * call; else the two levels where they apply, else the flat algorithms. */
    int declined = 1;
    if (s && call->mode != HASHI_COLL_BLOCKING)
        declined =
            (rc = is_v ? device_scatterv(s, &a, c) : device_scatter(s, &a, blk, c)) == HASHI_DEVICE_COLL_DECLINE;
    if (s && declined && !is_v)
        declined = (rc = hashi_coll_hier_scatter(s, sendbuf, scount, stype, recvbuf, rcount, rtype, root, c)) ==
                   HASHI_COLL_FLAT;
    if (s && declined)
        rc = is_v ? scatter_linear(s, c, &a, blk)
                  : hashi_coll_build_scatter(s, c, sendbuf, scount, stype, recvbuf, rcount, rtype, root);
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* Scatterv's int form: the root's arrays widened (they mean nothing elsewhere). */
static int scatterv_int(const struct hashi_coll_call *call, const void *sendbuf, const int scounts[],
                        const int displs[], MPI_Datatype stype, void *recvbuf, int rcount, MPI_Datatype rtype,
                        int root, MPI_Comm comm)
{
    MPI_Count *wc = NULL;
    MPI_Aint *wd = NULL;
    void *block = NULL;
    if (hashi_coll_is_root(comm, root) &&
        hashi_coll_widen(hashi_coll_comm_size(comm), scounts, displs, &wc, &wd, &block) != MPI_SUCCESS)
        return hashi_err_comm(call->func, comm, MPI_ERR_NO_MEM, "out of memory");
    int rc = scatter(call, sendbuf, 0, wc, wd, stype, recvbuf, rcount, rtype, root, comm, 1);
    free(block);
    return rc;
}

/* ---- entry points ---- */

int hashi_impl_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                         MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return scatter(HASHI_COLL_CALL_BLOCKING("MPI_Scatter"), sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                   recvcount, recvtype, root, comm, 0);
}

int hashi_impl_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return scatter(HASHI_COLL_CALL_BLOCKING("MPI_Scatter"), sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                   recvcount, recvtype, root, comm, 0);
}

int hashi_impl_Iscatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                          MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return scatter(HASHI_COLL_CALL_NONBLOCKING("MPI_Iscatter", request), sendbuf, sendcount, NULL, NULL, sendtype,
                   recvbuf, recvcount, recvtype, root, comm, 0);
}

int hashi_impl_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return scatter(HASHI_COLL_CALL_NONBLOCKING("MPI_Iscatter", request), sendbuf, sendcount, NULL, NULL, sendtype,
                   recvbuf, recvcount, recvtype, root, comm, 0);
}

int hashi_impl_Scatter_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                              MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request)
{
    (void)info;
    return scatter(HASHI_COLL_CALL_PERSISTENT("MPI_Scatter_init", request), sendbuf, sendcount, NULL, NULL,
                   sendtype, recvbuf, recvcount, recvtype, root, comm, 0);
}

int hashi_impl_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request)
{
    (void)info;
    return scatter(HASHI_COLL_CALL_PERSISTENT("MPI_Scatter_init", request), sendbuf, sendcount, NULL, NULL,
                   sendtype, recvbuf, recvcount, recvtype, root, comm, 0);
}

int hashi_impl_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                          MPI_Comm comm)
{
    return scatter(HASHI_COLL_CALL_BLOCKING("MPI_Scatterv"), sendbuf, 0, sendcounts, displs, sendtype, recvbuf,
                   recvcount, recvtype, root, comm, 1);
}

int hashi_impl_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return scatterv_int(HASHI_COLL_CALL_BLOCKING("MPI_Scatterv"), sendbuf, sendcounts, displs, sendtype, recvbuf,
                        recvcount, recvtype, root, comm);
}

int hashi_impl_Iscatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                           MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                           int root, MPI_Comm comm, MPI_Request *request)
{
    return scatter(HASHI_COLL_CALL_NONBLOCKING("MPI_Iscatterv", request), sendbuf, 0, sendcounts, displs, sendtype,
                   recvbuf, recvcount, recvtype, root, comm, 1);
}

int hashi_impl_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                         MPI_Request *request)
{
    return scatterv_int(HASHI_COLL_CALL_NONBLOCKING("MPI_Iscatterv", request), sendbuf, sendcounts, displs,
                        sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int hashi_impl_Scatterv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                               MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                               int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return scatter(HASHI_COLL_CALL_PERSISTENT("MPI_Scatterv_init", request), sendbuf, 0, sendcounts, displs,
                   sendtype, recvbuf, recvcount, recvtype, root, comm, 1);
}

int hashi_impl_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                             MPI_Info info, MPI_Request *request)
{
    (void)info;
    return scatterv_int(HASHI_COLL_CALL_PERSISTENT("MPI_Scatterv_init", request), sendbuf, sendcounts, displs,
                        sendtype, recvbuf, recvcount, recvtype, root, comm);
}
