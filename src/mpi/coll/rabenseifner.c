/*
 * Rabenseifner's algorithms (commutative ops), over the largest power of two
 * pof2 <= n of ranks:
 *  1. fold: the first 2 * rem ranks (rem = n - pof2) pair up; each even one
 *     sends its whole vector to the odd one above it and sits out. Rank r
 *     takes part as "newrank" r / 2 (odd r < 2 * rem) or r - rem.
 *  2. reduce-scatter by recursive halving, in natural order: at distance
 *     pof2/2, pof2/4 ... 1 each newrank keeps the half of its current range
 *     on its side of the partner and sends the other half, then reduces the
 *     half it received into its own. Newrank q ends with block q fully
 *     reduced.
 *  3. gather (reduce) or allgather (allreduce) by recursive doubling of
 *     aligned block ranges, natural order again, so ranges stay contiguous.
 *  4. unfold: the ranks that sat out get their result from their partner.
 * Blocks are ranges of elements (any datatype: offsets are element extents),
 * block q of the plan starting at element disp[q].
 */
#include "mpi/coll/rabenseifner.h"

#include <stdlib.h>

struct plan {
    int n, rank, pof2, rem;
    int newrank;            /* -1: sits out after the fold */
    MPI_Count *disp;        /* pof2 + 1 entries: block q = [disp[q], disp[q + 1]) */
};

static int plan_init(struct plan *p, const struct MPI_ABI_Comm *c)
{
    p->n = c->size;
    p->rank = c->rank;
    p->pof2 = 1;
    while (p->pof2 * 2 <= p->n)
        p->pof2 *= 2;
    p->rem = p->n - p->pof2;
    if (p->rank < 2 * p->rem)
        p->newrank = p->rank % 2 ? p->rank / 2 : -1;
    else
        p->newrank = p->rank - p->rem;
    p->disp = malloc((size_t)(p->pof2 + 1) * sizeof *p->disp);
    return p->disp ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

static int real_rank(const struct plan *p, int newrank)
{
    return newrank < p->rem ? newrank * 2 + 1 : newrank + p->rem;
}

/* Equal blocks of count elements (the first count % pof2 one longer). */
static void plan_equal_blocks(struct plan *p, MPI_Count count)
{
    MPI_Count q = count / p->pof2, r = count % p->pof2;
    for (int i = 0; i <= p->pof2; i++)
        p->disp[i] = i * q + (i < r ? i : r);
}

struct vec {
    void *work;             /* the vector being reduced, writable */
    void *tmp;              /* receive room, as large */
    MPI_Datatype type;
    const struct MPI_ABI_Datatype *t;
    MPI_Op op;
};

/* Send or receive blocks [a, b) of buf. */
static int send_blocks(struct hashi_sched *s, const struct plan *p, const struct vec *v, const void *buf, int a,
                       int b, int peer)
{
    return hashi_sched_send(s, hashi_coll_elem(buf, p->disp[a], v->t), p->disp[b] - p->disp[a], v->type, peer);
}

static int recv_blocks(struct hashi_sched *s, const struct plan *p, const struct vec *v, void *buf, int a, int b,
                       int peer)
{
    return hashi_sched_recv(s, hashi_coll_elem(buf, p->disp[a], v->t), p->disp[b] - p->disp[a], v->type, peer);
}

/* Step 1 for a rank that takes part (odd ranks below 2 * rem receive). */
static int fold_receive(struct hashi_sched *s, const struct plan *p, const struct vec *v)
{
    if (p->rank >= 2 * p->rem)
        return MPI_SUCCESS;
    MPI_Count total = p->disp[p->pof2];
    int rc = hashi_sched_recv(s, v->tmp, total, v->type, p->rank - 1);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_reduce(s, v->tmp, v->work, total, v->type, v->op);
    return rc;
}

/* Step 2: newrank q ends holding block q of work fully reduced. */
static int reduce_scatter_halving(struct hashi_sched *s, const struct plan *p, const struct vec *v)
{
    int rc = MPI_SUCCESS;
    for (int mask = p->pof2 / 2; mask >= 1 && rc == MPI_SUCCESS; mask >>= 1) {
        int partner = p->newrank ^ mask, g = p->newrank & ~(2 * mask - 1);
        int keep = p->newrank < partner ? g : g + mask, give = p->newrank < partner ? g + mask : g;
        rc = send_blocks(s, p, v, v->work, give, give + mask, real_rank(p, partner));
        if (rc == MPI_SUCCESS)
            rc = recv_blocks(s, p, v, v->tmp, keep, keep + mask, real_rank(p, partner));
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS && p->disp[keep + mask] > p->disp[keep])
            rc = hashi_sched_reduce(s, hashi_coll_elem(v->tmp, p->disp[keep], v->t),
                                    hashi_coll_elem(v->work, p->disp[keep], v->t), p->disp[keep + mask] - p->disp[keep],
                                    v->type, v->op);
    }
    return rc;
}

int hashi_coll_build_rabenseifner(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                                  MPI_Datatype type, MPI_Op op, int root, struct MPI_ABI_Comm *c)
{
    struct plan p;
    int rc = plan_init(&p, c);
    if (rc != MPI_SUCCESS)
        return rc;
    plan_equal_blocks(&p, count);
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    struct vec v = { .type = type, .t = hashi_type_get(type), .op = op };
    /* The newrank that gathers the result: the root, or the odd partner of
     * an even root that sat out (it forwards the result). */
    int newroot = root < 2 * p.rem ? root / 2 : root - p.rem;

    if (p.newrank < 0) {
        rc = hashi_sched_send(s, input, count, type, p.rank + 1);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS && p.rank == root)
            rc = hashi_sched_recv(s, recvbuf, count, type, p.rank + 1);
        goto out;
    }
    v.work = p.rank == root ? recvbuf : hashi_coll_tmpbuf(s, count, v.t);
    v.tmp = hashi_coll_tmpbuf(s, count, v.t);
    if (!v.work || !v.tmp) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    if (v.work != input)
        rc = hashi_sched_copy(s, input, count, type, v.work, count, type);
    if (rc == MPI_SUCCESS)
        rc = fold_receive(s, &p, &v);
    if (rc == MPI_SUCCESS)
        rc = reduce_scatter_halving(s, &p, &v);
    /* Gather: the rank whose bit differs from newroot's sends the range it
     * has gathered so far and is done; its partner takes it. */
    for (int mask = 1; mask < p.pof2 && rc == MPI_SUCCESS; mask <<= 1) {
        int partner = p.newrank ^ mask;
        if ((p.newrank & mask) != (newroot & mask)) {
            int g = p.newrank & ~(mask - 1);
            rc = send_blocks(s, &p, &v, v.work, g, g + mask, real_rank(&p, partner));
            if (rc == MPI_SUCCESS)
                rc = hashi_sched_fence(s);
            goto out;
        }
        int g = partner & ~(mask - 1);
        rc = recv_blocks(s, &p, &v, v.work, g, g + mask, real_rank(&p, partner));
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    if (rc == MPI_SUCCESS && p.rank != root)
        rc = hashi_sched_send(s, v.work, count, type, root);   /* we stood in for an even root */
out:
    free(p.disp);
    return rc;
}

int hashi_coll_build_allreduce_rabenseifner(struct hashi_sched *s, const void *sendbuf, void *recvbuf,
                                            MPI_Count count, MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c)
{
    struct plan p;
    int rc = plan_init(&p, c);
    if (rc != MPI_SUCCESS)
        return rc;
    plan_equal_blocks(&p, count);
    struct vec v = { .work = recvbuf, .type = type, .t = hashi_type_get(type), .op = op };
    if (p.newrank < 0) {
        /* Sit out: our vector to the partner, the result back. */
        rc = hashi_sched_send(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, type, p.rank + 1);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, recvbuf, count, type, p.rank + 1);
        goto out;
    }
    v.tmp = hashi_coll_tmpbuf(s, count, v.t);
    if (!v.tmp) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    if (sendbuf != MPI_IN_PLACE)
        rc = hashi_sched_copy(s, sendbuf, count, type, recvbuf, count, type);
    if (rc == MPI_SUCCESS)
        rc = fold_receive(s, &p, &v);
    if (rc == MPI_SUCCESS)
        rc = reduce_scatter_halving(s, &p, &v);
    /* Allgather: exchange the aligned ranges gathered so far. */
    for (int mask = 1; mask < p.pof2 && rc == MPI_SUCCESS; mask <<= 1) {
        int partner = p.newrank ^ mask;
        int mine = p.newrank & ~(mask - 1), theirs = partner & ~(mask - 1);
        rc = send_blocks(s, &p, &v, v.work, mine, mine + mask, real_rank(&p, partner));
        if (rc == MPI_SUCCESS)
            rc = recv_blocks(s, &p, &v, v.work, theirs, theirs + mask, real_rank(&p, partner));
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    if (rc == MPI_SUCCESS && p.rank < 2 * p.rem)
        rc = hashi_sched_send(s, recvbuf, count, type, p.rank - 1);
out:
    free(p.disp);
    return rc;
}

int hashi_coll_build_reduce_scatter_halving(struct hashi_sched *s, const void *sendbuf, void *recvbuf,
                                            const MPI_Count counts[], MPI_Datatype type, MPI_Op op,
                                            struct MPI_ABI_Comm *c)
{
    struct plan p;
    int rc = plan_init(&p, c);
    if (rc != MPI_SUCCESS)
        return rc;
    /* Element offsets of each real rank's block, then the plan's blocks: a
     * newrank standing for two ranks owns both their blocks. */
    MPI_Count *rdisp = malloc((size_t)(p.n + 1) * sizeof *rdisp);
    if (!rdisp) {
        free(p.disp);
        return MPI_ERR_NO_MEM;
    }
    rdisp[0] = 0;
    for (int i = 0; i < p.n; i++)
        rdisp[i + 1] = rdisp[i] + counts[i];
    MPI_Count total = rdisp[p.n];
    for (int q = 0; q < p.pof2; q++)
        p.disp[q] = rdisp[q < p.rem ? 2 * q : q + p.rem];
    p.disp[p.pof2] = total;

    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    struct vec v = { .type = type, .t = hashi_type_get(type), .op = op };
    if (p.newrank < 0) {
        rc = hashi_sched_send(s, input, total, type, p.rank + 1);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, recvbuf, counts[p.rank], type, p.rank + 1);
        goto out;
    }
    v.work = hashi_coll_tmpbuf(s, total, v.t);
    v.tmp = hashi_coll_tmpbuf(s, total, v.t);
    if (!v.work || !v.tmp) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = hashi_sched_copy(s, input, total, type, v.work, total, type);
    if (rc == MPI_SUCCESS)
        rc = fold_receive(s, &p, &v);
    if (rc == MPI_SUCCESS)
        rc = reduce_scatter_halving(s, &p, &v);
    if (rc == MPI_SUCCESS && p.rank < 2 * p.rem)
        rc = hashi_sched_send(s, hashi_coll_elem(v.work, rdisp[p.rank - 1], v.t), counts[p.rank - 1], type,
                              p.rank - 1);
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_copy(s, hashi_coll_elem(v.work, rdisp[p.rank], v.t), counts[p.rank], type, recvbuf,
                              counts[p.rank], type);
out:
    free(rdisp);
    free(p.disp);
    return rc;
}
