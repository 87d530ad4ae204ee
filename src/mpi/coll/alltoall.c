/*
 * MPI_Alltoall, MPI_Alltoallv, MPI_Alltoallw (blocking, nonblocking,
 * persistent).
 *
 *  - Bruck (Alltoall, short blocks on larger communicators): log n rounds.
 *    Blocks are packed once into scratch, rotated so that position i holds
 *    the block for rank + i; in round k every block whose position has bit k
 *    set travels k ranks further (gathered into one message by a callback);
 *    at the end position i holds the block from rank - i.
 *  - scattered exchange (everything else): rounds of `window` peers; in each,
 *    receive from rank - i and send to rank + i for the round's i, straight
 *    between the user's buffers with the user's types. Pairwise exchange is
 *    the same with a window of one. Alltoallv and Alltoallw use it too: the
 *    three calls differ only in where each peer's block is
 *    (struct hashi_coll_blocks).
 * MPI_IN_PLACE: the receive buffer is packed into scratch first and sent
 * from there.
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll_data.h"

#include "device/device.h"

#include <stdlib.h>
#include <string.h>

/* ---- the exchange (scattered / pairwise) ---- */

static int build_exchange(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const struct hashi_coll_blocks *send,
                          const struct hashi_coll_blocks *recv, int window)
{
    int n = c->size, rank = c->rank, rc = MPI_SUCCESS;
    if (hashi_blocks_bytes(recv, rank) > 0)
        rc = hashi_sched_copy(s, hashi_blocks_ptr(send, rank), hashi_blocks_count(send, rank),
                              hashi_blocks_type(send, rank), hashi_blocks_ptr(recv, rank),
                              hashi_blocks_count(recv, rank), hashi_blocks_type(recv, rank));
    for (int base = 1; base < n && rc == MPI_SUCCESS; base += window) {
        int end = base + window < n ? base + window : n;
        /* Receives first, so that a peer's message finds its buffer posted. */
        for (int i = base; i < end && rc == MPI_SUCCESS; i++) {
            int src = (rank - i + n) % n;
            if (hashi_blocks_bytes(recv, src) > 0)
                rc = hashi_sched_recv(s, hashi_blocks_ptr(recv, src), hashi_blocks_count(recv, src),
                                      hashi_blocks_type(recv, src), src);
        }
        for (int i = base; i < end && rc == MPI_SUCCESS; i++) {
            int dst = (rank + i) % n;
            if (hashi_blocks_bytes(send, dst) > 0)
                rc = hashi_sched_send(s, hashi_blocks_ptr(send, dst), hashi_blocks_count(send, dst),
                                      hashi_blocks_type(send, dst), dst);
        }
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    return rc;
}

/*
 * MPI_IN_PLACE: pack the n receive blocks into scratch (a round of copies)
 * and describe that copy as the send side: MPI_BYTE blocks at the packed
 * offsets. Uniform blocks (Alltoall) stay uniform; otherwise the counts and
 * offsets go into *arrays (malloc'd: free after building).
 */
static int stage_in_place(struct hashi_sched *s, int n, const struct hashi_coll_blocks *recv,
                          struct hashi_coll_blocks *send, void **arrays)
{
    *arrays = NULL;
    memset(send, 0, sizeof *send);
    send->type = MPI_BYTE;
    send->unit = 1;
    int uniform = !recv->counts && !recv->displs && !recv->types;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += hashi_blocks_bytes(recv, i);
    if (total == 0)
        return MPI_SUCCESS;
    char *packed = hashi_sched_scratch(s, total);
    if (!packed)
        return MPI_ERR_NO_MEM;
    send->buf = packed;
    int rc;
    if (uniform) {
        size_t blk = total / (size_t)n;
        send->count = (MPI_Count)blk;
        send->stride = (MPI_Aint)blk;
        rc = hashi_sched_copy(s, recv->buf, n * recv->count, recv->type, packed, (MPI_Count)total, MPI_BYTE);
        return rc == MPI_SUCCESS ? hashi_sched_fence(s) : rc;
    }
    MPI_Count *counts = malloc((size_t)n * (sizeof(MPI_Count) + sizeof(MPI_Aint)));
    if (!counts)
        return MPI_ERR_NO_MEM;
    MPI_Aint *offsets = (MPI_Aint *)(counts + n);
    *arrays = counts;
    size_t off = 0;
    rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        size_t bytes = hashi_blocks_bytes(recv, i);
        counts[i] = (MPI_Count)bytes;
        offsets[i] = (MPI_Aint)off;
        if (bytes)
            rc = hashi_sched_copy(s, hashi_blocks_ptr(recv, i), hashi_blocks_count(recv, i),
                                  hashi_blocks_type(recv, i), packed + off, (MPI_Count)bytes, MPI_BYTE);
        off += bytes;
    }
    send->counts = counts;
    send->displs = offsets;
    return rc == MPI_SUCCESS ? hashi_sched_fence(s) : rc;
}

/* ---- Bruck ---- */

struct bruck_state {
    int n, rank;
    size_t blk;
    char *tmp;                 /* n packed blocks */
    char *out, *in;            /* the blocks travelling in one round */
    char *recvbuf;
    MPI_Count rcount;
    MPI_Datatype rtype;
    MPI_Aint rblk;             /* distance between blocks in recvbuf */
};

struct bruck_round {
    struct bruck_state *st;
    int k;                     /* the bit of the positions that travel */
};

static int bruck_pack(struct hashi_sched *s, void *arg)
{
    (void)s;
    const struct bruck_round *r = arg;
    const struct bruck_state *st = r->st;
    char *out = st->out;
    for (int i = 1; i < st->n; i++)
        if (i & r->k) {
            memcpy(out, st->tmp + (size_t)i * st->blk, st->blk);
            out += st->blk;
        }
    return MPI_SUCCESS;
}

static int bruck_unpack(struct hashi_sched *s, void *arg)
{
    (void)s;
    const struct bruck_round *r = arg;
    const struct bruck_state *st = r->st;
    const char *in = st->in;
    for (int i = 1; i < st->n; i++)
        if (i & r->k) {
            memcpy(st->tmp + (size_t)i * st->blk, in, st->blk);
            in += st->blk;
        }
    return MPI_SUCCESS;
}

/* Position i holds the block from rank - i: into its place in recvbuf. */
static int bruck_finish(struct hashi_sched *s, void *arg)
{
    (void)s;
    const struct bruck_state *st = arg;
    for (int i = 0; i < st->n; i++) {
        int from = (st->rank - i + st->n) % st->n;
        int rc = hashi_coll_copy(st->tmp + (size_t)i * st->blk, (MPI_Count)st->blk, MPI_BYTE,
                                       st->recvbuf + from * st->rblk, st->rcount, st->rtype);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

static int alltoall_bruck(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const struct hashi_coll_blocks *send,
                          const struct hashi_coll_blocks *recv, size_t blk)
{
    int n = c->size, rank = c->rank, rc;
    int moving = 0;   /* most blocks one round moves: positions with a given bit set */
    for (int k = 1; k < n; k <<= 1) {
        int cnt = 0;
        for (int i = 1; i < n; i++)
            cnt += (i & k) != 0;
        moving = cnt > moving ? cnt : moving;
    }
    struct bruck_state *st = hashi_sched_scratch(s, sizeof *st);
    char *mem = hashi_sched_scratch(s, ((size_t)n + 2 * (size_t)moving) * blk);
    if (!st || !mem)
        return MPI_ERR_NO_MEM;
    *st = (struct bruck_state){ n, rank, blk, mem, mem + n * blk, mem + (n + moving) * blk, recv->buf, recv->count,
                                recv->type, recv->stride };

    /* Rotate: position i gets the block for rank + i. */
    int first = n - rank;
    if ((rc = hashi_sched_copy(s, hashi_blocks_ptr(send, rank), first * send->count, send->type, st->tmp,
                               (MPI_Count)(first * blk), MPI_BYTE)) != MPI_SUCCESS)
        return rc;
    if (rank > 0 && (rc = hashi_sched_copy(s, send->buf, rank * send->count, send->type, st->tmp + first * blk,
                                           (MPI_Count)(rank * blk), MPI_BYTE)) != MPI_SUCCESS)
        return rc;
    if ((rc = hashi_sched_fence(s)) != MPI_SUCCESS)
        return rc;

    for (int k = 1; k < n; k <<= 1) {
        struct bruck_round *r = hashi_sched_scratch(s, sizeof *r);
        if (!r)
            return MPI_ERR_NO_MEM;
        r->st = st;
        r->k = k;
        int cnt = 0;
        for (int i = 1; i < n; i++)
            cnt += (i & k) != 0;
        if ((rc = hashi_sched_callback(s, bruck_pack, r)) != MPI_SUCCESS ||
            (rc = hashi_sched_fence(s)) != MPI_SUCCESS ||
            (rc = hashi_sched_recv(s, st->in, (MPI_Count)(cnt * blk), MPI_BYTE, (rank - k + n) % n)) != MPI_SUCCESS ||
            (rc = hashi_sched_send(s, st->out, (MPI_Count)(cnt * blk), MPI_BYTE, (rank + k) % n)) != MPI_SUCCESS ||
            (rc = hashi_sched_fence(s)) != MPI_SUCCESS ||
            (rc = hashi_sched_callback(s, bruck_unpack, r)) != MPI_SUCCESS ||
            (rc = hashi_sched_fence(s)) != MPI_SUCCESS)
            return rc;
    }
    return hashi_sched_callback(s, bruck_finish, st);
}

/* ---- the device's alltoall (blocking calls) ---- */

/* What the device sees of both buffers; in place, recvbuf is also the input. */
static void alltoall_sides(const void *sendbuf, MPI_Count scount, const struct MPI_ABI_Datatype *st, void *recvbuf,
                           MPI_Count rcount, const struct MPI_ABI_Datatype *rt, size_t blk,
                           const struct MPI_ABI_Comm *c, struct hashi_coll_device_side *send,
                           struct hashi_coll_device_side *recv)
{
    int n = c->size;
    size_t total = blk * (size_t)n;
    *send = sendbuf == MPI_IN_PLACE ? (struct hashi_coll_device_side){ recvbuf, rcount * n, rt, total, 1 }
                                    : (struct hashi_coll_device_side){ (void *)sendbuf, scount * n, st, total, 0 };
    *recv = (struct hashi_coll_device_side){ recvbuf, rcount * n, rt, total, 0 };
}

/*
 * Contiguous bytes to the device where select.c offers it: buffers whose n
 * blocks are contiguous go in place, others (and MPI_IN_PLACE's input) are
 * packed, so that the block size alone decides, equally on every member.
 * HASHI_DEVICE_COLL_DECLINE when the device has no alltoall or declines.
 */
static int device_alltoall(const void *sendbuf, MPI_Count scount, const struct MPI_ABI_Datatype *st, void *recvbuf,
                           MPI_Count rcount, const struct MPI_ABI_Datatype *rt, size_t blk, struct MPI_ABI_Comm *c)
{
    if (!hashi_device->coll.alltoall || !hashi_coll_device_data_ok(HASHI_DEVICE_ALLTOALL, c, blk))
        return HASHI_DEVICE_COLL_DECLINE;
    struct hashi_coll_device_side send, recv;
    alltoall_sides(sendbuf, scount, st, recvbuf, rcount, rt, blk, c, &send, &recv);
    const struct hashi_device_coll_args a = { .kind = HASHI_DEVICE_OP_ALLTOALL, .comm = c, .bytes = blk };
    return hashi_coll_device_blocks(&a, &send, &recv);
}

/* Nonblocking and persistent: the same sides as a device operation step. */
static int device_alltoall_step(struct hashi_sched *s, const void *sendbuf, MPI_Count scount,
                                const struct MPI_ABI_Datatype *st, MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                                const struct MPI_ABI_Datatype *rt, MPI_Datatype rtype, size_t blk,
                                struct MPI_ABI_Comm *c)
{
    struct hashi_coll_device_side send, recv;
    alltoall_sides(sendbuf, scount, st, recvbuf, rcount, rt, blk, c, &send, &recv);
    const struct hashi_device_coll_args a = { .kind = HASHI_DEVICE_OP_ALLTOALL, .comm = c, .bytes = blk };
    return hashi_coll_device_blocks_step(s, &a, &send, sendbuf == MPI_IN_PLACE ? rtype : stype, &recv, rtype);
}

/* ---- the three calls ---- */

static int alltoall(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                    void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_alltoall(call, sendbuf, scount, NULL, NULL, stype, NULL, recvbuf, rcount, NULL, NULL,
                                         rtype, NULL, comm, 0, 0);
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_call_comm(call, comm, &rc);
    if (!c)
        return rc;
    int in_place = sendbuf == MPI_IN_PLACE;
    struct MPI_ABI_Datatype *st = NULL, *rt;
    if (!in_place &&
        (rc = hashi_coll_check_data(call, comm, HASHI_COLL_SEND, sendbuf, scount, stype, &st)) != MPI_SUCCESS)
        return rc;
    if ((rc = hashi_coll_check_data(call, comm, HASHI_COLL_RECV, recvbuf, rcount, rtype, &rt)) != MPI_SUCCESS ||
        (rc = hashi_coll_check_alias(call, comm, sendbuf, recvbuf, st ? (size_t)hashi_type_bytes(st, scount) : 0)))
        return rc;

    int n = c->size;
    size_t blk = (size_t)hashi_type_bytes(rt, rcount);
    struct hashi_coll_blocks recv = { .buf = recvbuf, .count = rcount, .stride = rcount * hashi_type_extent(rt),
                                      .type = rtype };
    struct hashi_coll_blocks send = { .buf = (char *)sendbuf, .count = scount,
                                      .stride = st ? scount * hashi_type_extent(st) : 0, .type = stype };
    if (call->mode == HASHI_COLL_BLOCKING && n > 1 && blk > 0) {
        rc = device_alltoall(sendbuf, scount, st, recvbuf, rcount, rt, blk, c);
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(call->func, comm, rc, "the device's alltoall failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    /* Nonblocking and persistent: the device's operation where it takes the call. */
    rc = s && call->mode != HASHI_COLL_BLOCKING && n > 1 && blk > 0
             ? device_alltoall_step(s, sendbuf, scount, st, stype, recvbuf, rcount, rt, rtype, blk, c)
             : HASHI_DEVICE_COLL_DECLINE;
    if (rc != HASHI_DEVICE_COLL_DECLINE) {
        /* the device's operation, or the error building it */
    } else if (!s || blk == 0) {
        rc = MPI_SUCCESS;
    } else {
        rc = MPI_SUCCESS;
        enum hashi_alltoall_alg alg = hashi_coll_alltoall_alg(c, blk);
        if (alg == HASHI_ALLTOALL_BRUCK) {
            /* Bruck packs its own copy first: in place needs nothing more. */
            rc = alltoall_bruck(s, c, in_place ? &recv : &send, &recv, blk);
        } else {
            void *arrays = NULL;
            rc = in_place ? stage_in_place(s, n, &recv, &send, &arrays) : MPI_SUCCESS;
            if (rc == MPI_SUCCESS)
                rc = build_exchange(s, c, &send, &recv,
                                    alg == HASHI_ALLTOALL_PAIRWISE ? 1 : hashi_coll_alltoall_window());
            free(arrays);
        }
    }
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* Alltoallv (types NULL, displacements in extents) and Alltoallw (a type per
 * peer, displacements in bytes). */
static int alltoallvw(const struct hashi_coll_call *call, const void *sendbuf, const MPI_Count scounts[],
                      const MPI_Aint sdispls[], MPI_Datatype stype, const MPI_Datatype stypes[], void *recvbuf,
                      const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rtype,
                      const MPI_Datatype rtypes[], MPI_Comm comm, int is_w)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_alltoall(call, sendbuf, 0, scounts, sdispls, stype, stypes, recvbuf, 0, rcounts,
                                         rdispls, rtype, rtypes, comm, 1, is_w);
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_call_comm(call, comm, &rc);
    if (!c)
        return rc;
    int n = c->size, in_place = sendbuf == MPI_IN_PLACE;
    struct MPI_ABI_Datatype *st = NULL, *rt = NULL;
    if (!in_place) {
        if ((rc = hashi_coll_check_counts(call, comm, HASHI_COLL_SEND, n, sendbuf, scounts, sdispls)) != MPI_SUCCESS)
            return rc;
        if (is_w ? (rc = hashi_coll_check_types(call, comm, HASHI_COLL_SEND, n, stypes))
                 : (rc = hashi_coll_check_data(call, comm, HASHI_COLL_SEND, sendbuf, 0, stype, &st)))
            return rc;
    }
    if ((rc = hashi_coll_check_counts(call, comm, HASHI_COLL_RECV, n, recvbuf, rcounts, rdispls)) != MPI_SUCCESS)
        return rc;
    if (is_w ? (rc = hashi_coll_check_types(call, comm, HASHI_COLL_RECV, n, rtypes))
             : (rc = hashi_coll_check_data(call, comm, HASHI_COLL_RECV, recvbuf, 0, rtype, &rt)))
        return rc;
    if (!in_place && sendbuf && sendbuf == recvbuf)
        return hashi_coll_check_alias(call, comm, sendbuf, recvbuf, 1);

    struct hashi_coll_blocks recv = { .buf = recvbuf, .counts = rcounts, .displs = rdispls,
                                      .unit = is_w ? 1 : hashi_type_extent(rt), .type = rtype,
                                      .types = is_w ? rtypes : NULL };
    struct hashi_coll_blocks send = { .buf = (char *)sendbuf, .counts = scounts, .displs = sdispls,
                                      .unit = is_w ? 1 : (st ? hashi_type_extent(st) : 1), .type = stype,
                                      .types = is_w ? stypes : NULL };
    if (call->mode == HASHI_COLL_BLOCKING && !in_place) {
        const struct hashi_coll_xside xs = { n, NULL, NULL, &send }, xr = { n, NULL, NULL, &recv };
        if ((rc = hashi_coll_device_exchange(c, 1, &xs, &xr)) != HASHI_DEVICE_COLL_DECLINE)
            return rc == MPI_SUCCESS ? rc : hashi_err_comm(call->func, comm, rc, "the device's exchange failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    if (s) {
        void *arrays = NULL;
        rc = in_place ? stage_in_place(s, n, &recv, &send, &arrays) : MPI_SUCCESS;
        /* Nonblocking and persistent: the device's exchange operation (in
         * place: on the staged copy of the blocks). A nonblocking one from 3
         * members: at 2 the generic path's one message each way beats the
         * operation's set-up (8 B: 0.87 against 1.03 us); a persistent
         * request pays that once (docs/collectives.md). */
        const struct hashi_coll_xside xs = { n, NULL, NULL, &send }, xr = { n, NULL, NULL, &recv };
        int offer = call->mode == HASHI_COLL_PERSISTENT || (call->mode == HASHI_COLL_NONBLOCKING && n > 2);
        if (rc == MPI_SUCCESS && offer &&
            (rc = hashi_coll_device_exchange_step(s, c, 1, &xs, &xr)) != HASHI_DEVICE_COLL_DECLINE) {
            free(arrays);
            return hashi_coll_call_finish(call, comm, s, rc);
        }
        if (rc == HASHI_DEVICE_COLL_DECLINE)
            rc = MPI_SUCCESS;
        size_t largest = 0;
        for (int i = 0; i < n; i++) {
            size_t sb = hashi_blocks_bytes(&send, i), rb = hashi_blocks_bytes(&recv, i);
            largest = sb > largest ? sb : largest;
            largest = rb > largest ? rb : largest;
        }
        if (rc == MPI_SUCCESS)
            rc = build_exchange(s, c, &send, &recv,
                                hashi_coll_alltoallv_alg(c, largest) == HASHI_ALLTOALL_PAIRWISE
                                    ? 1 : hashi_coll_alltoall_window());
        free(arrays);
    }
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* The int forms of the v and w calls: arrays widened. */
static int alltoallvw_int(const struct hashi_coll_call *call, const void *sendbuf, const int scounts[],
                          const int sdispls[], MPI_Datatype stype, const MPI_Datatype stypes[], void *recvbuf,
                          const int rcounts[], const int rdispls[], MPI_Datatype rtype, const MPI_Datatype rtypes[],
                          MPI_Comm comm, int is_w)
{
    int n = hashi_coll_comm_size(comm);
    MPI_Count *wsc = NULL, *wrc;
    MPI_Aint *wsd = NULL, *wrd;
    void *sblock = NULL, *rblock;
    if ((sendbuf != MPI_IN_PLACE && hashi_coll_widen(n, scounts, sdispls, &wsc, &wsd, &sblock) != MPI_SUCCESS) ||
        hashi_coll_widen(n, rcounts, rdispls, &wrc, &wrd, &rblock) != MPI_SUCCESS) {
        free(sblock);
        return hashi_err_comm(call->func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    int rc = alltoallvw(call, sendbuf, wsc, wsd, stype, stypes, recvbuf, wrc, wrd, rtype, rtypes, comm, is_w);
    free(sblock);
    free(rblock);
    return rc;
}

/* ---- entry points ---- */

int hashi_impl_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                          MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoall(HASHI_COLL_CALL_BLOCKING("MPI_Alltoall"), sendbuf, sendcount, sendtype, recvbuf, recvcount,
                    recvtype, comm);
}

int hashi_impl_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoall(HASHI_COLL_CALL_BLOCKING("MPI_Alltoall"), sendbuf, sendcount, sendtype, recvbuf, recvcount,
                    recvtype, comm);
}

int hashi_impl_Ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return alltoall(HASHI_COLL_CALL_NONBLOCKING("MPI_Ialltoall", request), sendbuf, sendcount, sendtype, recvbuf,
                    recvcount, recvtype, comm);
}

int hashi_impl_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return alltoall(HASHI_COLL_CALL_NONBLOCKING("MPI_Ialltoall", request), sendbuf, sendcount, sendtype, recvbuf,
                    recvcount, recvtype, comm);
}

int hashi_impl_Alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                               MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                               MPI_Request *request)
{
    (void)info;
    return alltoall(HASHI_COLL_CALL_PERSISTENT("MPI_Alltoall_init", request), sendbuf, sendcount, sendtype, recvbuf,
                    recvcount, recvtype, comm);
}

int hashi_impl_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                             MPI_Request *request)
{
    (void)info;
    return alltoall(HASHI_COLL_CALL_PERSISTENT("MPI_Alltoall_init", request), sendbuf, sendcount, sendtype, recvbuf,
                    recvcount, recvtype, comm);
}

int hashi_impl_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                           MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                           const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoallvw(HASHI_COLL_CALL_BLOCKING("MPI_Alltoallv"), sendbuf, sendcounts, sdispls, sendtype, NULL,
                      recvbuf, recvcounts, rdispls, recvtype, NULL, comm, 0);
}

int hashi_impl_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                         void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                         MPI_Comm comm)
{
    return alltoallvw_int(HASHI_COLL_CALL_BLOCKING("MPI_Alltoallv"), sendbuf, sendcounts, sdispls, sendtype, NULL,
                          recvbuf, recvcounts, rdispls, recvtype, NULL, comm, 0);
}

int hashi_impl_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                            const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return alltoallvw(HASHI_COLL_CALL_NONBLOCKING("MPI_Ialltoallv", request), sendbuf, sendcounts, sdispls, sendtype,
                      NULL, recvbuf, recvcounts, rdispls, recvtype, NULL, comm, 0);
}

int hashi_impl_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                          void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                          MPI_Comm comm, MPI_Request *request)
{
    return alltoallvw_int(HASHI_COLL_CALL_NONBLOCKING("MPI_Ialltoallv", request), sendbuf, sendcounts, sdispls,
                          sendtype, NULL, recvbuf, recvcounts, rdispls, recvtype, NULL, comm, 0);
}

int hashi_impl_Alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                                MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                                const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                MPI_Request *request)
{
    (void)info;
    return alltoallvw(HASHI_COLL_CALL_PERSISTENT("MPI_Alltoallv_init", request), sendbuf, sendcounts, sdispls,
                      sendtype, NULL, recvbuf, recvcounts, rdispls, recvtype, NULL, comm, 0);
}

int hashi_impl_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return alltoallvw_int(HASHI_COLL_CALL_PERSISTENT("MPI_Alltoallv_init", request), sendbuf, sendcounts, sdispls,
                          sendtype, NULL, recvbuf, recvcounts, rdispls, recvtype, NULL, comm, 0);
}

int hashi_impl_Alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    return alltoallvw(HASHI_COLL_CALL_BLOCKING("MPI_Alltoallw"), sendbuf, sendcounts, sdispls, MPI_DATATYPE_NULL,
                      sendtypes, recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes, comm, 1);
}

int hashi_impl_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                         const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
                         const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    return alltoallvw_int(HASHI_COLL_CALL_BLOCKING("MPI_Alltoallw"), sendbuf, sendcounts, sdispls,
                          MPI_DATATYPE_NULL, sendtypes, recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes,
                          comm, 1);
}

int hashi_impl_Ialltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request)
{
    return alltoallvw(HASHI_COLL_CALL_NONBLOCKING("MPI_Ialltoallw", request), sendbuf, sendcounts, sdispls,
                      MPI_DATATYPE_NULL, sendtypes, recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes,
                      comm, 1);
}

int hashi_impl_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                          const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
                          const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)
{
    return alltoallvw_int(HASHI_COLL_CALL_NONBLOCKING("MPI_Ialltoallw", request), sendbuf, sendcounts, sdispls,
                          MPI_DATATYPE_NULL, sendtypes, recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes,
                          comm, 1);
}

int hashi_impl_Alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                                const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                                const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                MPI_Info info, MPI_Request *request)
{
    (void)info;
    return alltoallvw(HASHI_COLL_CALL_PERSISTENT("MPI_Alltoallw_init", request), sendbuf, sendcounts, sdispls,
                      MPI_DATATYPE_NULL, sendtypes, recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes,
                      comm, 1);
}

int hashi_impl_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                              MPI_Request *request)
{
    (void)info;
    return alltoallvw_int(HASHI_COLL_CALL_PERSISTENT("MPI_Alltoallw_init", request), sendbuf, sendcounts, sdispls,
                          MPI_DATATYPE_NULL, sendtypes, recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes,
                          comm, 1);
}
