/*
 * MPI_Bcast, MPI_Ibcast, MPI_Bcast_init (and _c). Two algorithms:
 *  - binomial tree (short messages): ceil(log2 n) steps, the root's subtree
 *    halves at every step; each rank forwards to the larger subtrees first.
 *  - scatter + ring allgather (van de Geijn; long messages): the root
 *    scatters n blocks down a binomial tree, then n - 1 ring steps give every
 *    rank every block: about 2x the message crosses each link instead of
 *    log2(n) x.
 * Ranks are taken relative to the root (vr = rank - root mod n).
 */
#include "mpi/coll/coll.h"
#include "mpi/coll/coll_data.h"

#include "device/device.h"

#include <stdlib.h>

static int real_rank(int vr, int root, int n)
{
    return (vr + root) % n;
}

static int bcast_binomial(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                          const struct MPI_ABI_Comm *c)
{
    int n = c->size, vr = (c->rank - root + n) % n, mask = 1, rc = MPI_SUCCESS;
    for (; mask < n; mask <<= 1) {
        if (vr & mask) {
            rc = hashi_sched_recv(s, buf, count, type, real_rank(vr - mask, root, n));
            if (rc == MPI_SUCCESS)
                rc = hashi_sched_fence(s);
            break;
        }
    }
    for (mask >>= 1; mask > 0 && rc == MPI_SUCCESS; mask >>= 1)
        if (vr + mask < n)
            rc = hashi_sched_send(s, buf, count, type, real_rank(vr + mask, root, n));
    return rc;
}

/* Block boundaries past the end of the message stop at its end. */
static MPI_Count clamp(MPI_Count v, MPI_Count total)
{
    return v < total ? v : total;
}

static int bcast_scatter_allgather(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                                   const struct MPI_ABI_Comm *c)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    int n = c->size, vr = (c->rank - root + n) % n, rc = MPI_SUCCESS;
    MPI_Count total = hashi_type_bytes(t, count);
    char *bytes;
    int packed = !hashi_type_is_contig_count(t, count);
    if (packed) {
        /* Strided data moves as one packed stream, unpacked at the end. */
        bytes = hashi_sched_scratch(s, (size_t)total);
        if (!bytes)
            return MPI_ERR_NO_MEM;
        if (vr == 0 && ((rc = hashi_sched_copy(s, buf, count, type, bytes, total, MPI_BYTE)) != MPI_SUCCESS ||
                        (rc = hashi_sched_fence(s)) != MPI_SUCCESS))
            return rc;
    } else {
        bytes = (char *)buf + t->true_lb;
    }
    MPI_Count chunk = (total + n - 1) / n;

    /* Scatter: a rank receives the blocks of its subtree [vr, vr + mask). */
    int mask = 1;
    for (; mask < n; mask <<= 1) {
        if (vr & mask) {
            MPI_Count lo = clamp((MPI_Count)vr * chunk, total), hi = clamp((MPI_Count)(vr + mask) * chunk, total);
            rc = hashi_sched_recv(s, bytes + lo, hi - lo, MPI_BYTE, real_rank(vr - mask, root, n));
            if (rc == MPI_SUCCESS)
                rc = hashi_sched_fence(s);
            break;
        }
    }
    for (mask >>= 1; mask > 0 && rc == MPI_SUCCESS; mask >>= 1) {
        if (vr + mask < n) {
            int child = vr + mask;
            MPI_Count lo = clamp((MPI_Count)child * chunk, total), hi = clamp((MPI_Count)(child + mask) * chunk, total);
            rc = hashi_sched_send(s, bytes + lo, hi - lo, MPI_BYTE, real_rank(child, root, n));
        }
    }
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);

    /* Ring allgather: at step i, pass on block vr - i, take block vr - i - 1. */
    int left = real_rank((vr - 1 + n) % n, root, n), right = real_rank((vr + 1) % n, root, n);
    for (int i = 0; i < n - 1 && rc == MPI_SUCCESS; i++) {
        int sb = (vr - i + n) % n, rb = (vr - i - 1 + n) % n;
        MPI_Count slo = clamp((MPI_Count)sb * chunk, total), shi = clamp((MPI_Count)(sb + 1) * chunk, total);
        MPI_Count rlo = clamp((MPI_Count)rb * chunk, total), rhi = clamp((MPI_Count)(rb + 1) * chunk, total);
        rc = hashi_sched_send(s, bytes + slo, shi - slo, MPI_BYTE, right);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, bytes + rlo, rhi - rlo, MPI_BYTE, left);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    if (rc == MPI_SUCCESS && packed && vr != 0)
        rc = hashi_sched_copy(s, bytes, total, MPI_BYTE, buf, count, type);
    return rc;
}

int hashi_coll_build_bcast(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                           struct MPI_ABI_Comm *c)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    size_t bytes = (size_t)hashi_type_bytes(t, count);
    if (c->size == 1 || bytes == 0)
        return MPI_SUCCESS;
    int rc = hashi_coll_hier_bcast(s, buf, count, type, root, c);
    if (rc != HASHI_COLL_FLAT)
        return rc;
    if (hashi_coll_select(HASHI_CHOOSE_BCAST, c, bytes, count, 1) == HASHI_ALG_SCATTER_ALLGATHER)
        return bcast_scatter_allgather(s, buf, count, type, root, c);
    return bcast_binomial(s, buf, count, type, root, c);
}

/* The device's broadcast where select.c offers it: contiguous data in place,
 * other layouts packed (the root's and a receiver's types may differ: the
 * byte count alone must decide, equally on every member). */
static int device_bcast(void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t, size_t bytes, int root,
                        struct MPI_ABI_Comm *c)
{
    if (!hashi_device->coll.bcast || !hashi_coll_device_data_ok(HASHI_DEVICE_BCAST, c, bytes))
        return HASHI_DEVICE_COLL_DECLINE;
    if (hashi_type_is_contig_count(t, count))
        return hashi_device->coll.bcast((char *)buf + t->true_lb, bytes, root, c);
    char small[256];
    char *tmp = bytes <= sizeof small ? small : malloc(bytes);
    if (!tmp)
        return MPI_ERR_NO_MEM;   /* not a decline: the other members go ahead */
    if (c->rank == root)
        hashi_type_pack(buf, count, t, 0, tmp, bytes);
    int rc = hashi_device->coll.bcast(tmp, bytes, root, c);
    if (rc == MPI_SUCCESS && c->rank != root)
        hashi_type_unpack(buf, count, t, 0, tmp, bytes);
    if (tmp != small)
        free(tmp);
    return rc;
}

static int bcast(const struct hashi_coll_call *call, void *buf, MPI_Count count, MPI_Datatype type, int root,
                 MPI_Comm comm)
{
    const char *func = call->func;
    int rc;
    struct MPI_ABI_Datatype *t;
    struct MPI_ABI_Comm *c = hashi_coll_call_vector(call, comm, count, type, &t, &rc);
    if (!c)
        return rc;
    if ((rc = hashi_coll_check_root(func, comm, c, root)) != MPI_SUCCESS)
        return rc;
    if (buf == MPI_IN_PLACE)
        return hashi_err_comm(func, comm, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed in a broadcast");
    if ((rc = hashi_coll_check_buffer(func, comm, buf, count, t, "buffer")) != MPI_SUCCESS)
        return rc;
    if (call->mode == HASHI_COLL_BLOCKING) {
        size_t bytes = (size_t)hashi_type_bytes(t, count);
        if (c->size == 1 || bytes == 0)
            return MPI_SUCCESS;
        if ((rc = hashi_coll_hier_bcast(NULL, buf, count, type, root, c)) != HASHI_COLL_FLAT)
            return rc == MPI_SUCCESS ? MPI_SUCCESS : hashi_err_comm(func, comm, rc, "the node-aware broadcast failed");
        rc = device_bcast(buf, count, t, bytes, root, c);
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(func, comm, rc, "the device's broadcast failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    rc = s ? hashi_coll_build_bcast(s, buf, count, type, root, c) : MPI_ERR_NO_MEM;
    return hashi_coll_call_finish(call, comm, s, rc);
}

int hashi_impl_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    return bcast(HASHI_COLL_CALL_BLOCKING("MPI_Bcast"), buffer, count, datatype, root, comm);
}

int hashi_impl_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    return bcast(HASHI_COLL_CALL_BLOCKING("MPI_Bcast"), buffer, count, datatype, root, comm);
}

int hashi_impl_Ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                        MPI_Request *request)
{
    return bcast(HASHI_COLL_CALL_NONBLOCKING("MPI_Ibcast", request), buffer, count, datatype, root, comm);
}

int hashi_impl_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)
{
    return bcast(HASHI_COLL_CALL_NONBLOCKING("MPI_Ibcast", request), buffer, count, datatype, root, comm);
}

int hashi_impl_Bcast_init_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                            MPI_Info info, MPI_Request *request)
{
    (void)info;
    return bcast(HASHI_COLL_CALL_PERSISTENT("MPI_Bcast_init", request), buffer, count, datatype, root, comm);
}

int hashi_impl_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
                          MPI_Request *request)
{
    return hashi_impl_Bcast_init_c(buffer, count, datatype, root, comm, info, request);
}
