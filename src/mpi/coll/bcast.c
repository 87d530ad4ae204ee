/*
 * MPI_Bcast, MPI_Ibcast, MPI_Bcast_init (and _c). Two algorithms:
 *  - binomial tree (short messages): ceil(log2 n) steps, the root's subtree
 *    halves at every step; each rank forwards to the larger subtrees first.
 *  - scatter + ring allgather (van de Geijn; long messages): the root
 *    scatters n blocks down a binomial tree, then n - 1 ring steps give every
 *    rank every block: about 2x the message crosses each link instead of
 *    log2(n) x.
 *  - pipelined k-ary tree (chosen by name: HASHI_COLL_BCAST=pipeline or the
 *    hint): the message cut into HASHI_COLL_BCAST_SEGMENT pieces flows down
 *    a tree of fan-out HASHI_COLL_BCAST_FANOUT (1: a chain), each rank
 *    receiving piece j while it passes piece j - 1 on: once across each
 *    link, nseg + depth rounds.
 * Ranks are taken relative to the root (vr = rank - root mod n).
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll.h"
#include "mpi/coll/coll_data.h"

#include "device/device.h"
#include "mpi/p2p.h"
#include "runtime/params.h"

#include <stdio.h>
#include <stdlib.h>

static int real_rank(int vr, int root, int n)
{
    return (vr + root) % n;
}

/* A rank's links in the binomial tree rooted at root (real ranks): its
 * parent (-1 at the root) and its children, larger subtrees first. */
struct binomial_links {
    int parent, nchildren;
    int children[8 * sizeof(int)];
};

static void binomial_links(const struct MPI_ABI_Comm *c, int root, struct binomial_links *l)
{
    int n = c->size, vr = (c->rank - root + n) % n, mask = 1;
    l->parent = -1;
    l->nchildren = 0;
    for (; mask < n; mask <<= 1) {
        if (vr & mask) {
            l->parent = real_rank(vr - mask, root, n);
            break;
        }
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < n)
            l->children[l->nchildren++] = real_rank(vr + mask, root, n);
}

static int bcast_binomial(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                          const struct MPI_ABI_Comm *c)
{
    struct binomial_links l;
    binomial_links(c, root, &l);
    int rc = MPI_SUCCESS;
    if (l.parent >= 0 && (rc = hashi_sched_recv(s, buf, count, type, l.parent)) == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    for (int k = 0; k < l.nchildren && rc == MPI_SUCCESS; k++)
        rc = hashi_sched_send(s, buf, count, type, l.children[k]);
    return rc;
}

/*
 * The binomial tree of a blocking broadcast run straight on point-to-point,
 * without a schedule: the receive from the parent, then the sends to the
 * children (small ones complete in the call). Same messages and tag as
 * bcast_binomial's schedule; it saves that schedule's set-up and rounds,
 * about 1,200 instructions per call at 2 ranks, which is the whole
 * difference between a small MPI_Bcast and an MPI_Send.
 */
static int bcast_binomial_now(void *buf, MPI_Count count, MPI_Datatype type, int root, struct MPI_ABI_Comm *c)
{
    struct binomial_links l;
    binomial_links(c, root, &l);
    int rc = MPI_SUCCESS, tag = hashi_coll_next_tag(c);
    uint32_t ctx = hashi_comm_coll_context(c);
    if (l.parent >= 0) {
        struct MPI_ABI_Request *r;
        rc = hashi_irecv_internal(buf, count, type, l.parent, tag, c, ctx, &r);
        if (rc == MPI_SUCCESS)
            rc = hashi_wait_internal(r, NULL);
    }
    struct MPI_ABI_Request *sends[8 * sizeof(int)];
    int nsends = 0;
    for (int k = 0; k < l.nchildren && rc == MPI_SUCCESS; k++) {
        rc = hashi_isend_now_internal(buf, count, type, l.children[k], tag, c, ctx, &sends[nsends]);
        if (sends[nsends])
            nsends++;
    }
    int wait_rc = nsends ? hashi_waitall_internal(nsends, sends) : MPI_SUCCESS;
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

/* Block boundaries past the end of the message stop at its end. */
static MPI_Count clamp(MPI_Count v, MPI_Count total)
{
    return v < total ? v : total;
}

int hashi_coll_bcast_params_check(char *err, size_t errlen)
{
    int64_t seg = hashi_param_int(HASHI_P_COLL_BCAST_SEGMENT), k = hashi_param_int(HASHI_P_COLL_BCAST_FANOUT);
    if (seg < 1 || seg > ((int64_t)1 << 30)) {
        snprintf(err, errlen, "HASHI_COLL_BCAST_SEGMENT=%lld is out of range (1 .. 1g)", (long long)seg);
        return -1;
    }
    if (k < 1 || k > 64) {
        snprintf(err, errlen, "HASHI_COLL_BCAST_FANOUT=%lld is out of range (1 .. 64)", (long long)k);
        return -1;
    }
    return 0;
}

/*
 * The message as one stream of bytes for the algorithms that cut it: the
 * buffer itself when contiguous, else scratch the root packs into first
 * (*packed set: stream_end unpacks it at the others). NULL: out of memory.
 */
static char *stream_begin(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int is_root,
                          MPI_Count *total, int *packed, int *rc)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    *total = hashi_type_bytes(t, count);
    *packed = !hashi_type_is_contig_count(t, count);
    *rc = MPI_SUCCESS;
    if (!*packed)
        return (char *)buf + t->true_lb;
    char *bytes = hashi_sched_scratch(s, (size_t)*total);
    if (!bytes) {
        *rc = MPI_ERR_NO_MEM;
        return NULL;
    }
    if (is_root && ((*rc = hashi_sched_copy(s, buf, count, type, bytes, *total, MPI_BYTE)) != MPI_SUCCESS ||
                    (*rc = hashi_sched_fence(s)) != MPI_SUCCESS))
        return NULL;
    return bytes;
}

static int stream_end(struct hashi_sched *s, char *bytes, MPI_Count total, int packed, int is_root, void *buf,
                      MPI_Count count, MPI_Datatype type)
{
    /* Both algorithms end with a fence: everything has arrived. */
    return !packed || is_root ? MPI_SUCCESS : hashi_sched_copy(s, bytes, total, MPI_BYTE, buf, count, type);
}

static int bcast_scatter_allgather(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                                   const struct MPI_ABI_Comm *c)
{
    int n = c->size, vr = (c->rank - root + n) % n, rc, packed;
    MPI_Count total;
    char *bytes = stream_begin(s, buf, count, type, vr == 0, &total, &packed, &rc);
    if (!bytes)
        return rc;
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
    return rc == MPI_SUCCESS ? stream_end(s, bytes, total, packed, vr == 0, buf, count, type) : rc;
}

/*
 * Pipelined tree: virtual rank v's parent is (v - 1) / k, its children k v +
 * 1 .. k v + k. Round j: the root sends piece j to its children; another
 * rank receives piece j from its parent and sends piece j - 1 on, then the
 * round's fence. Rounds are each rank's own, so piece j moves one level per
 * round down the tree while the next follows.
 */
static int bcast_pipeline(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                          const struct MPI_ABI_Comm *c)
{
    int n = c->size, vr = (c->rank - root + n) % n, rc, packed;
    int k = (int)hashi_param_int(HASHI_P_COLL_BCAST_FANOUT);
    MPI_Count total, seg = (MPI_Count)hashi_param_int(HASHI_P_COLL_BCAST_SEGMENT);
    char *bytes = stream_begin(s, buf, count, type, vr == 0, &total, &packed, &rc);
    if (!bytes)
        return rc;
    MPI_Count nseg = (total + seg - 1) / seg;
    int parent = vr == 0 ? -1 : real_rank((vr - 1) / k, root, n);
    for (MPI_Count j = 0; j <= nseg && rc == MPI_SUCCESS; j++) {
        MPI_Count piece = vr == 0 ? j : j - 1;   /* the piece passed on this round */
        if (parent >= 0 && j < nseg) {
            MPI_Count lo = j * seg;
            rc = hashi_sched_recv(s, bytes + lo, clamp(lo + seg, total) - lo, MPI_BYTE, parent);
        }
        if (piece >= 0 && piece < nseg) {
            MPI_Count lo = piece * seg;
            for (int i = 1; i <= k && rc == MPI_SUCCESS; i++) {
                long child = (long)k * vr + i;
                if (child < n)
                    rc = hashi_sched_send(s, bytes + lo, clamp(lo + seg, total) - lo, MPI_BYTE,
                                          real_rank((int)child, root, n));
            }
        }
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    return rc == MPI_SUCCESS ? stream_end(s, bytes, total, packed, vr == 0, buf, count, type) : rc;
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
    switch (hashi_coll_select(HASHI_CHOOSE_BCAST, c, bytes, count, 1)) {
    case HASHI_ALG_SCATTER_ALLGATHER:
        return bcast_scatter_allgather(s, buf, count, type, root, c);
    case HASHI_ALG_PIPELINE:
        return bcast_pipeline(s, buf, count, type, root, c);
    default:
        return bcast_binomial(s, buf, count, type, root, c);
    }
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

/*
 * Nonblocking and persistent: the device's operation up to its max_bytes
 * (the blocking rule's first case, the same on every member), as a step
 * between the packing and unpacking of a non-contiguous layout.
 * HASHI_DEVICE_COLL_DECLINE: nothing added.
 */
static int device_bcast_step(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type,
                             const struct MPI_ABI_Datatype *t, int root, struct MPI_ABI_Comm *c)
{
    size_t bytes = (size_t)hashi_type_bytes(t, count);
    if (c->size == 1 || bytes == 0 || bytes > hashi_device->coll.max_bytes)
        return HASHI_DEVICE_COLL_DECLINE;
    int contig = hashi_type_is_contig_count(t, count), mark = hashi_sched_mark(s), rc = MPI_SUCCESS;
    char *dev = contig ? (char *)buf + t->true_lb : hashi_sched_scratch(s, bytes);
    if (!dev)
        return MPI_ERR_NO_MEM;
    if (!contig && c->rank == root && (rc = hashi_sched_copy(s, buf, count, type, dev, (MPI_Count)bytes, MPI_BYTE)) == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_device(s, &(struct hashi_device_coll_args){ .kind = HASHI_DEVICE_OP_BCAST, .comm = c,
                                                                     .recvbuf = dev, .bytes = bytes, .root = root });
    if (rc == HASHI_DEVICE_COLL_DECLINE) {
        hashi_sched_rollback(s, mark);
        return rc;
    }
    if (rc == MPI_SUCCESS && !contig && c->rank != root && (rc = hashi_sched_fence(s)) == MPI_SUCCESS)
        rc = hashi_sched_copy(s, dev, (MPI_Count)bytes, MPI_BYTE, buf, count, type);
    return rc;
}

static int bcast(const struct hashi_coll_call *call, void *buf, MPI_Count count, MPI_Datatype type, int root,
                 MPI_Comm comm)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_bcast(call, buf, count, type, root, comm);
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
        /* Every member is here (blocking collectives match only each other)
         * and chooses alike. */
        if (hashi_coll_select(HASHI_CHOOSE_BCAST, c, bytes, count, 1) == HASHI_ALG_BINOMIAL) {
            rc = bcast_binomial_now(buf, count, type, root, c);
            return rc == MPI_SUCCESS ? MPI_SUCCESS
                                     : hashi_err_comm(func, comm, rc, "exchanging data with the other members failed");
        }
    }
    struct hashi_sched *s = hashi_sched_create(c);
    rc = !s ? MPI_ERR_NO_MEM : HASHI_DEVICE_COLL_DECLINE;
    if (s && call->mode != HASHI_COLL_BLOCKING)
        rc = device_bcast_step(s, buf, count, type, t, root, c);
    if (rc == HASHI_DEVICE_COLL_DECLINE)
        rc = hashi_coll_build_bcast(s, buf, count, type, root, c);
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
