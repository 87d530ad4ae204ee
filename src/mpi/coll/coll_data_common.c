/*
 * What the data-movement collectives share on top of coll.h: the argument
 * checks of buffer triples, count and displacement arrays and type arrays
 * (one error class per mistake, raised on the call's communicator with a
 * message naming the call and the argument), and widening the int arrays of
 * the v-forms to their large-count twins.
 */
#include "mpi/coll/coll_data.h"

#include "device/device.h"
#include "mpi/comm.h"
#include "mpi/p2p.h"

#include <stdlib.h>

#include "mpi/topo.h"

/* ---- checks ---- */

/* The standard's argument names, for messages. */
static const struct side_names {
    const char *buf, *count, *type, *counts, *displs, *types;
} side_names[] = {
    [HASHI_COLL_SEND] = { "sendbuf", "sendcount", "sendtype", "sendcounts", "sdispls", "sendtypes" },
    [HASHI_COLL_RECV] = { "recvbuf", "recvcount", "recvtype", "recvcounts", "rdispls", "recvtypes" },
};

static int check_not_in_place(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side,
                              const void *buf)
{
    if (buf == MPI_IN_PLACE)
        return hashi_err_comm(call->func, comm, MPI_ERR_BUFFER, "%s is MPI_IN_PLACE, which is not allowed here",
                              side_names[side].buf);
    return MPI_SUCCESS;
}

int hashi_coll_check_data(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side,
                          const void *buf, MPI_Count count, MPI_Datatype type, struct MPI_ABI_Datatype **t)
{
    const struct side_names *names = &side_names[side];
    int rc;
    if ((rc = hashi_coll_check_count(call->func, comm, count, names->count)) != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Datatype *obj = hashi_coll_check_type(call->func, comm, type, names->type, &rc);
    if (!obj)
        return rc;
    if (t)
        *t = obj;
    if ((rc = check_not_in_place(call, comm, side, buf)) != MPI_SUCCESS)
        return rc;
    return hashi_coll_check_buffer(call->func, comm, buf, count, obj, names->buf);
}

int hashi_coll_check_counts(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side, int n,
                            const void *buf, const MPI_Count counts[], const MPI_Aint displs[])
{
    const struct side_names *names = &side_names[side];
    if (n > 0 && !counts)
        return hashi_err_comm(call->func, comm, MPI_ERR_ARG, "%s is NULL", names->counts);
    if (n > 0 && !displs)
        return hashi_err_comm(call->func, comm, MPI_ERR_ARG, "%s is NULL", names->displs);
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return hashi_err_comm(call->func, comm, MPI_ERR_COUNT, "%s[%d] = %lld is negative", names->counts, i,
                                  (long long)counts[i]);
    /* A NULL buffer is MPI_BOTTOM here: the displacements may be absolute
     * addresses, which cannot be told from a mistake. */
    return check_not_in_place(call, comm, side, buf);
}

int hashi_coll_check_types(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side, int n,
                           const MPI_Datatype types[])
{
    const struct side_names *names = &side_names[side];
    if (n > 0 && !types)
        return hashi_err_comm(call->func, comm, MPI_ERR_ARG, "%s is NULL", names->types);
    for (int i = 0; i < n; i++) {
        const char *why = NULL;
        if (hashi_type_check(types[i], 1, &why) != MPI_SUCCESS)
            return hashi_err_comm(call->func, comm, MPI_ERR_TYPE, "%s[%d]: %s", names->types, i,
                                  why ? why : "invalid datatype");
    }
    return MPI_SUCCESS;
}

struct MPI_ABI_Comm *hashi_coll_check_rooted(const struct hashi_coll_call *call, MPI_Comm comm,
                                             const struct hashi_coll_rooted *r, size_t *blk, int *rc)
{
    struct MPI_ABI_Comm *c = hashi_coll_call_comm(call, comm, rc);
    if (!c || (*rc = hashi_coll_check_root(call->func, comm, c, r->root)) != MPI_SUCCESS)
        return NULL;
    enum hashi_coll_side all_side = r->own_side == HASHI_COLL_SEND ? HASHI_COLL_RECV : HASHI_COLL_SEND;
    int is_root = c->rank == r->root, in_place = is_root && r->own == MPI_IN_PLACE;
    struct MPI_ABI_Datatype *own_t = NULL, *all_t = NULL;
    if (!in_place &&
        (*rc = hashi_coll_check_data(call, comm, r->own_side, r->own, r->own_count, r->own_type, &own_t)) !=
            MPI_SUCCESS)
        return NULL;
    size_t own_bytes = own_t ? (size_t)hashi_type_bytes(own_t, r->own_count) : 0;
    *blk = own_bytes;
    if (!is_root)
        return c;
    if (r->is_v) {
        if ((*rc = hashi_coll_check_counts(call, comm, all_side, c->size, r->all, r->all_counts, r->all_displs)) ||
            (*rc = hashi_coll_check_data(call, comm, all_side, r->all, 0, r->all_type, &all_t)))
            return NULL;
        return c;
    }
    const void *sendbuf = r->own_side == HASHI_COLL_SEND ? r->own : r->all;
    const void *recvbuf = r->own_side == HASHI_COLL_SEND ? r->all : r->own;
    if ((*rc = hashi_coll_check_data(call, comm, all_side, r->all, r->all_count, r->all_type, &all_t)) ||
        (*rc = hashi_coll_check_alias(call, comm, sendbuf, recvbuf, own_bytes)))
        return NULL;
    *blk = (size_t)hashi_type_bytes(all_t, r->all_count);
    return c;
}

/* ---- int forms ---- */

int hashi_coll_widen(int n, const int counts[], const int displs[], MPI_Count **wcounts, MPI_Aint **wdispls,
                     void **block)
{
    *wcounts = NULL;
    if (wdispls)
        *wdispls = NULL;
    *block = NULL;
    if (n <= 0)
        return MPI_SUCCESS;
    size_t nc = counts ? (size_t)n : 0, nd = displs && wdispls ? (size_t)n : 0;
    if (nc + nd == 0)
        return MPI_SUCCESS;
    /* MPI_Count and MPI_Aint are both 64-bit: one block, counts first. */
    _Static_assert(sizeof(MPI_Count) == sizeof(MPI_Aint), "one block holds both arrays");
    MPI_Count *mem = malloc((nc + nd) * sizeof(MPI_Count));
    if (!mem)
        return MPI_ERR_NO_MEM;
    if (nc) {
        for (int i = 0; i < n; i++)
            mem[i] = counts[i];
        *wcounts = mem;
    }
    if (nd) {
        MPI_Aint *d = (MPI_Aint *)(mem + nc);
        for (int i = 0; i < n; i++)
            d[i] = displs[i];
        *wdispls = d;
    }
    *block = mem;
    return MPI_SUCCESS;
}

int hashi_coll_comm_size(MPI_Comm comm)
{
    const struct MPI_ABI_Comm *c = comm == MPI_COMM_NULL ? NULL : hashi_comm_get(comm);
    return c ? c->peer_size : 0;   /* an intercommunicator's arrays are by remote rank */
}

void hashi_coll_neighbor_counts(MPI_Comm comm, int *indegree, int *outdegree)
{
    struct MPI_ABI_Comm *c = comm == MPI_COMM_NULL ? NULL : hashi_comm_get(comm);
    const int *sources, *destinations;
    *indegree = *outdegree = 0;
    if (!c || hashi_topo_neighbors(c, indegree, &sources, outdegree, &destinations) != MPI_SUCCESS)
        *indegree = *outdegree = 0;
}

/* ---- blocks ---- */

size_t hashi_blocks_bytes(const struct hashi_coll_blocks *b, int i)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(hashi_blocks_type(b, i));
    return (size_t)hashi_type_bytes(t, hashi_blocks_count(b, i));
}

int hashi_coll_is_root(MPI_Comm comm, int root)
{
    const struct MPI_ABI_Comm *c = comm == MPI_COMM_NULL ? NULL : hashi_comm_get(comm);
    return c && (c->remote_group ? root == MPI_ROOT : c->rank == root);
}

/* ---- the device's sparse exchange ---- */

/* The k-th block of side x in matching order: its index into x->b, and
 * the member it goes to / comes from. */
static int xblock(const struct hashi_coll_xside *x, int k, int *peer)
{
    int j = x->order ? x->order[k] : k;
    *peer = x->peer ? x->peer[j] : j;
    return j;
}

/* Where block j of b is, if it is one contiguous run of bytes; else NULL. */
static char *xblock_in_place(const struct hashi_coll_blocks *b, int j)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(hashi_blocks_type(b, j));
    return hashi_type_is_contig_count(t, hashi_blocks_count(b, j)) ? hashi_blocks_ptr(b, j) + t->true_lb : NULL;
}

/* Per peer, one side: its bytes, its blocks to stage (0: its one block
 * goes in place), its first block, and where its staging starts. */
struct xpeer {
    size_t bytes, at;
    int blocks, first;
};

/* Sums side x per peer; returns the bytes it stages (a peer's blocks unless
 * they are one contiguous block). */
static size_t xside_count(const struct hashi_coll_xside *x, int n, struct xpeer *ps)
{
    for (int p = 0; p < n; p++)
        ps[p] = (struct xpeer){ 0, 0, 0, 0 };
    for (int k = 0; k < x->m; k++) {
        int p, j = xblock(x, k, &p);
        size_t len = p < 0 ? 0 : hashi_blocks_bytes(x->b, j);   /* MPI_PROC_NULL: nothing */
        if (len == 0)
            continue;
        if (ps[p].blocks++ == 0)
            ps[p].first = j;
        ps[p].bytes += len;
    }
    size_t staged = 0;
    for (int p = 0; p < n; p++) {
        if (ps[p].blocks == 1 && xblock_in_place(x->b, ps[p].first))
            ps[p].blocks = 0;
        staged += ps[p].blocks ? ps[p].bytes : 0;
    }
    return staged;
}

/* The staged blocks of side x in matching order, each after its peer's
 * previous one: packed into staging (send side), or unpacked out of it
 * (receive side, after the exchange); now, or as copy steps of schedule s
 * (not NULL) that a persistent request repeats at every run. */
static int xside_copy(struct hashi_sched *s, const struct hashi_coll_xside *x, struct xpeer *ps, char *staging,
                      int pack)
{
    int rc = MPI_SUCCESS;
    for (int k = 0; k < x->m && rc == MPI_SUCCESS; k++) {
        int p, j = xblock(x, k, &p);
        size_t len = p < 0 ? 0 : hashi_blocks_bytes(x->b, j);
        if (len == 0 || !ps[p].blocks)
            continue;
        char *buf = hashi_blocks_ptr(x->b, j), *at = staging + ps[p].at;
        MPI_Count count = hashi_blocks_count(x->b, j);
        MPI_Datatype type = hashi_blocks_type(x->b, j);
        ps[p].at += len;
        if (s) {
            rc = pack ? hashi_sched_copy(s, buf, count, type, at, (MPI_Count)len, MPI_BYTE)
                      : hashi_sched_copy(s, at, (MPI_Count)len, MPI_BYTE, buf, count, type);
            continue;
        }
        const struct MPI_ABI_Datatype *t = hashi_type_get(type);
        if (pack)
            hashi_type_pack(buf, count, t, 0, at, len);
        else
            hashi_type_unpack(buf, count, t, 0, at, len);
    }
    return rc;
}

/* Side x's device blocks (one per peer with data, in peer order) into
 * out, staged ones from staging + *used (each peer's staging start in
 * ps[p].at, for xside_copy). */
static int xside_blocks(const struct hashi_coll_xside *x, int n, struct xpeer *ps, char *staging, size_t *used,
                        struct hashi_device_block *out)
{
    int count = 0;
    for (int p = 0; p < n; p++) {
        if (!ps[p].bytes)
            continue;
        char *buf = ps[p].blocks ? staging + *used : xblock_in_place(x->b, ps[p].first);
        if (ps[p].blocks) {
            ps[p].at = *used;
            *used += ps[p].bytes;
        }
        out[count++] = (struct hashi_device_block){ p, ps[p].bytes, buf };
    }
    return count;
}
int hashi_coll_device_rooted_v(struct hashi_sched *s, struct MPI_ABI_Comm *c, int root, int gathering,
                               const struct hashi_coll_blocks *mine, const struct hashi_coll_blocks *all)
{
    /* From 3 members: at 2 the generic path's one eager message beats
     * the exchange's bookkeeping (8 B: 0.57 against 0.72 us). */
    if (!(s ? hashi_device->coll.op_init != NULL : hashi_device->coll.exchange != NULL) || c->size < 3)
        return HASHI_DEVICE_COLL_DECLINE;
    int n = c->size, *peers = NULL;
    const int to_root[1] = { root };
    struct hashi_coll_xside one = { mine ? 1 : 0, to_root, NULL, mine }, many = { 0, NULL, NULL, NULL };
    if (all) {
        if (!mine && !(peers = hashi_coll_peers_but(n, root)))
            return MPI_ERR_NO_MEM;
        many = (struct hashi_coll_xside){ n, peers, NULL, all };
    }
    const struct hashi_coll_xside *send = gathering ? &one : &many, *recv = gathering ? &many : &one;
    int rc = s ? hashi_coll_device_exchange_step(s, c, 0, send, recv) : hashi_coll_device_exchange(c, 0, send, recv);
    free(peers);
    return rc;
}

int *hashi_coll_peers_but(int n, int skip)
{
    int *peers = malloc((size_t)n * sizeof *peers);
    for (int i = 0; peers && i < n; i++)
        peers[i] = i == skip ? MPI_PROC_NULL : i;
    return peers;
}

int hashi_coll_device_exchange(struct MPI_ABI_Comm *c, int alltoallv, const struct hashi_coll_xside *send,
                               const struct hashi_coll_xside *recv)
{
    int n = c->size;
    if (!hashi_device->coll.exchange || n < 2 || !hashi_coll_device_exchange_ok(c, alltoallv))
        return HASHI_DEVICE_COLL_DECLINE;
    struct xpeer *ps = malloc(2 * (size_t)n * sizeof *ps);
    struct hashi_device_block *db = malloc(2 * (size_t)n * sizeof *db);
    size_t staged = ps ? xside_count(send, n, ps) + xside_count(recv, n, ps + n) : 0, used = 0;
    char *staging = staged ? malloc(staged) : NULL;
    if (!ps || !db || (staged && !staging)) {
        free(ps), free(db), free(staging);
        return MPI_ERR_NO_MEM;   /* not a decline: the other members go ahead */
    }
    int nsends = xside_blocks(send, n, ps, staging, &used, db);
    int nrecvs = xside_blocks(recv, n, ps + n, staging, &used, db + nsends);
    xside_copy(NULL, send, ps, staging, 1);
    /* Every member takes the tag, whether the device uses it or declines. */
    int rc = hashi_device->coll.exchange(db, nsends, db + nsends, nrecvs, c, hashi_coll_next_tag(c));
    if (rc == MPI_SUCCESS)
        xside_copy(NULL, recv, ps + n, staging, 0);
    free(ps), free(db), free(staging);
    return rc;
}

int hashi_coll_device_exchange_step(struct hashi_sched *s, struct MPI_ABI_Comm *c, int alltoallv,
                                    const struct hashi_coll_xside *send, const struct hashi_coll_xside *recv)
{
    int n = c->size;
    if (!hashi_device->coll.op_init || n < 2 || !hashi_coll_device_exchange_ok(c, alltoallv))
        return HASHI_DEVICE_COLL_DECLINE;
    /* Per-peer sums for a small communicator on the stack: a nonblocking
     * call's malloc and free were a tenth of its cost at 2 ranks. */
    struct xpeer small[32], *ps = 2 * n <= 32 ? small : malloc(2 * (size_t)n * sizeof *ps);
    if (!ps)
        return MPI_ERR_NO_MEM;
    /* The blocks and the staging belong to the schedule: computed once,
     * they serve every run of a persistent request. */
    size_t staged_send = xside_count(send, n, ps), staged_recv = xside_count(recv, n, ps + n);
    size_t staged = staged_send + staged_recv, used = 0;
    int blocks = 0;
    for (int p = 0; p < 2 * n; p++)
        blocks += ps[p].bytes > 0;
    int mark = hashi_sched_mark(s), rc = MPI_SUCCESS;
    char *staging = staged ? hashi_sched_scratch(s, staged) : NULL;
    struct hashi_device_block *db = blocks ? hashi_sched_scratch(s, (size_t)blocks * sizeof *db) : NULL;
    if ((staged && !staging) || (blocks && !db)) {
        if (ps != small)
            free(ps);
        return MPI_ERR_NO_MEM;   /* not a decline: the other members go ahead */
    }
    struct hashi_device_coll_args a = { .kind = HASHI_DEVICE_OP_EXCHANGE, .comm = c, .sends = db };
    a.nsends = xside_blocks(send, n, ps, staging, &used, db);
    a.recvs = db + a.nsends;
    a.nrecvs = xside_blocks(recv, n, ps + n, staging, &used, db + a.nsends);
    if ((!staged_send || (rc = xside_copy(s, send, ps, staging, 1)) == MPI_SUCCESS) &&
        (rc = hashi_sched_fence(s)) == MPI_SUCCESS)
        rc = hashi_sched_device(s, &a);
    if (rc == HASHI_DEVICE_COLL_DECLINE)
        hashi_sched_rollback(s, mark);
    else if (rc == MPI_SUCCESS && (rc = hashi_sched_fence(s)) == MPI_SUCCESS && staged_recv)
        rc = xside_copy(s, recv, ps + n, staging, 0);
    if (ps != small)
        free(ps);
    return rc;
}

/* The device's blocking entry for a block collective (a's kind). */
static int device_blocks_run(const struct hashi_device_coll_args *a)
{
    const struct hashi_device_coll_ops *ops = &hashi_device->coll;
    switch (a->kind) {
    case HASHI_DEVICE_OP_ALLTOALL:
        return ops->alltoall(a->sendbuf, a->recvbuf, a->bytes, a->comm);
    case HASHI_DEVICE_OP_ALLGATHER:
        return ops->allgather(a->sendbuf, a->recvbuf, a->bytes, a->comm);
    case HASHI_DEVICE_OP_GATHER:
        return ops->gather(a->sendbuf, a->recvbuf, a->bytes, a->root, a->comm);
    case HASHI_DEVICE_OP_SCATTER:
        return ops->scatter(a->sendbuf, a->recvbuf, a->bytes, a->root, a->comm);
    default:
        return HASHI_DEVICE_COLL_DECLINE;
    }
}

static int side_packed(const struct hashi_coll_device_side *side)
{
    return side && (side->must_pack || !hashi_type_is_contig_count(side->type, side->count));
}

static char *side_in_place(const struct hashi_coll_device_side *side)
{
    return side ? (char *)side->buf + side->type->true_lb : NULL;
}

int hashi_coll_device_blocks_step(struct hashi_sched *s, const struct hashi_device_coll_args *a,
                                  const struct hashi_coll_device_side *send, MPI_Datatype stype,
                                  const struct hashi_coll_device_side *recv, MPI_Datatype rtype)
{
    if (a->comm->size < 2 || a->bytes == 0 || a->bytes > hashi_device->coll.max_bytes)
        return HASHI_DEVICE_COLL_DECLINE;
    int send_packed = side_packed(send), recv_packed = side_packed(recv);
    int mark = hashi_sched_mark(s), rc = MPI_SUCCESS;
    char *src = send_packed ? hashi_sched_scratch(s, send->bytes) : side_in_place(send);
    char *dst = recv_packed ? hashi_sched_scratch(s, recv->bytes) : side_in_place(recv);
    if ((send_packed && !src) || (recv_packed && !dst))
        return MPI_ERR_NO_MEM;
    if (send_packed &&
        (rc = hashi_sched_copy(s, send->buf, send->count, stype, src, (MPI_Count)send->bytes, MPI_BYTE)) == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    struct hashi_device_coll_args args = *a;
    args.sendbuf = src;
    args.recvbuf = dst;
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_device(s, &args);
    if (rc == HASHI_DEVICE_COLL_DECLINE) {
        hashi_sched_rollback(s, mark);
        return rc;
    }
    if (rc == MPI_SUCCESS && recv_packed && (rc = hashi_sched_fence(s)) == MPI_SUCCESS)
        rc = hashi_sched_copy(s, dst, (MPI_Count)recv->bytes, MPI_BYTE, recv->buf, recv->count, rtype);
    return rc;
}

int hashi_coll_device_blocks(const struct hashi_device_coll_args *a, const struct hashi_coll_device_side *send,
                             const struct hashi_coll_device_side *recv)
{
    int send_packed = side_packed(send), recv_packed = side_packed(recv);
    char small[512];
    size_t need = (send_packed ? send->bytes : 0) + (recv_packed ? recv->bytes : 0);
    char *tmp = need <= sizeof small ? small : malloc(need);
    if (!tmp)
        return MPI_ERR_NO_MEM;   /* not a decline: the other members go ahead */
    if (send_packed)
        hashi_type_pack(send->buf, send->count, send->type, 0, tmp, send->bytes);
    struct hashi_device_coll_args args = *a;
    args.sendbuf = send_packed ? tmp : side_in_place(send);
    args.recvbuf = recv_packed ? tmp + (send_packed ? send->bytes : 0) : side_in_place(recv);
    int rc = device_blocks_run(&args);
    if (rc == MPI_SUCCESS && recv_packed)
        hashi_type_unpack(recv->buf, recv->count, recv->type, 0, args.recvbuf, recv->bytes);
    if (tmp != small)
        free(tmp);
    return rc;
}
