/*
 * nbexchange: the nonblocking and persistent forms of every collective the
 * device's sparse exchange serves (device.h, HASHI_DEVICE_OP_EXCHANGE):
 * MPI_Ialltoallv / w, Igatherv, Iscatterv, Iallgatherv, the five
 * MPI_Ineighbor_* and their MPI_*_init forms.
 *
 * - Alltoallv with irregular counts (zeros, within a slot, above it),
 *   blocks out of rank order with gaps, a strided receive type (staged and
 *   unpacked by copy steps), MPI_IN_PLACE (strided too); Alltoallw with a
 *   type per peer (a vector sent, pairs received, nothing for some peers).
 * - Gatherv and Scatterv at two roots, in place at the root and not, a
 *   strided type at the root; Allgatherv with unequal counts (a zero among
 *   them: the allgather kind does not take it), in place and not.
 * - Neighbor_alltoall (k = 1 and above the slot) and Neighbor_alltoallw (a
 *   vector sent) on a periodic ring (at 2 ranks both neighbours are one
 *   process: Cartesian order), Neighbor_allgather on a non-periodic line
 *   (MPI_PROC_NULL ends), Neighbor_alltoallv (a zero edge) and
 *   Neighbor_allgatherv on a distributed graph with a self edge and a
 *   doubled edge.
 * Phase 1, nonblocking: every case started before any is waited for,
 * spread over six communicators (MPI_COMM_WORLD, a duplicate of it, the
 * three topologies), and a blocking Alltoallv on world among them, rounds
 * times. Phase 2, persistent: every case's
 * request made once, then started STARTS times with new values in the
 * send buffers each time (the blocks were computed at init). Every element
 * is checked against its value from the sender, the run's tag and its
 * position, and the element after each block must stay untouched.
 *
 * argv[1], what dimmnet's counters (MPI_T) must show over the phases:
 *   device    dimmnet_llcm_exchanges (with the blocking calls) and
 *             dimmnet_llcm_nb_colls grew by exactly the runs the device takes (below 3 members not
 *             Gatherv, Scatterv, nor a nonblocking Alltoallv / w): it ran
 *             them, no silent fallback
 *   declined  dimmnet_llcm_exchanges stayed 0 (dimmnet off the emu
 *             transport, or across virtual nodes: generic schedules)
 *   any       not checked (other devices have no such counter)
 * argv[2]: rounds of phase 1 (default 2). Prints 'rank R of S ok' last.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"
#include "../util/pvar.h"

#define MAXRANKS 16
#define MAXK 400   /* int64 elements: 3200 bytes, above the default slot */
#define STARTS 4
#define DEG 4      /* the graph's degree */
#define SENTINEL (-77)

static int me, n;

static int64_t value(int from, int to, int tag, int i)
{
    return (int64_t)(from + 1) * 1000003 + (int64_t)(to + 1) * 10007 + (int64_t)tag * 7919 + i;
}

/* Elements `from` sends `to` in a case of this shape: 0, small, above the slot. */
static int pair_count(int from, int to, int shape)
{
    static const int counts[] = { 0, 1, 7, 130, MAXK, 16 };
    return counts[(from * 3 + to * 5 + shape) % 6];
}

enum kind {
    ALLTOALLV, ALLTOALLW, GATHERV, SCATTERV, ALLGATHERV,
    NB_ALLGATHER, NB_ALLGATHERV, NB_ALLTOALL, NB_ALLTOALLV, NB_ALLTOALLW
};

struct xcase {
    enum kind kind;
    MPI_Comm comm;
    int shape, root, in_place, strided, k;
    int64_t *sbuf, *rbuf;
    size_t slen, rlen;              /* elements */
    int sc[MAXRANKS], sd[MAXRANKS], rc[MAXRANKS], rd[MAXRANKS];
    MPI_Aint swd[MAXRANKS], rwd[MAXRANKS];
    MPI_Datatype stypes[MAXRANKS], rtypes[MAXRANKS];
    MPI_Request req;
};

static MPI_Datatype strided_int64;   /* int64 with an extent of 16 bytes */
static MPI_Datatype every_other;     /* MAXK / 4 int64, every other one */
static MPI_Datatype int64_pairs;
static int ring_nb[2], line_nb[2], graph_src[DEG];

static const char *kind_name[] = { "alltoallv", "alltoallw", "gatherv", "scatterv", "allgatherv",
                                   "neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall",
                                   "neighbor_alltoallv", "neighbor_alltoallw" };

/* Alltoallw's per-peer layout: 0 five int64, 1 a vector received as
 * contiguous int64, 2 int64 received as pairs, 3 nothing (symmetric in
 * the two ranks, so both ends agree). */
static int w_kind(const struct xcase *c, int p)
{
    return (p + me + c->shape) % 4;
}

static int w_elems(int kind)
{
    return kind == 0 ? 5 : kind == 1 ? MAXK / 4 : kind == 2 ? 200 : 0;
}

/* Graph edge e's count from `sender` (the same at both ends); edge 2 is empty in odd shapes. */
static int edge_count(int e, int sender, int shape)
{
    if (e == 2 && shape % 2)
        return 0;
    return e == 3 ? MAXK : 3 + e * 40 + sender;
}

static int allgatherv_count(int p, int shape)
{
    static const int counts[] = { 0, 9, MAXK };
    return counts[(p + shape) % 3];
}

static int64_t *alloc_elems(size_t elems)
{
    int64_t *p = malloc((elems ? elems : 1) * sizeof *p);
    CHECK(p != NULL, "out of memory");
    return p;
}

/* The counts and layouts, fixed for the case's life (a persistent request keeps them). */
static void setup(struct xcase *c)
{
    int at = 0;
    int stride = c->strided ? 2 : 1;
    switch (c->kind) {
    case ALLTOALLV:
        /* Send blocks in reverse rank order, 3 elements apart; receive in
         * rank order, one apart. In place both are the receive layout and
         * the counts symmetric. */
        for (int p = n - 1; p >= 0; p--) {
            int lo = p < me ? p : me, hi = p < me ? me : p;
            c->sc[p] = c->in_place ? pair_count(lo, hi, c->shape) : pair_count(me, p, c->shape);
            c->sd[p] = at;
            at += c->sc[p] + 3;
        }
        c->slen = (size_t)at;
        at = 0;
        for (int p = 0; p < n; p++) {
            c->rc[p] = c->in_place ? c->sc[p] : pair_count(p, me, c->shape);
            c->rd[p] = at;
            at += c->rc[p] + 1;
        }
        c->rlen = (size_t)at * (size_t)stride;
        break;
    case ALLTOALLW:
        for (int p = 0; p < n; p++) {
            int kind = w_kind(c, p);
            c->sd[p] = c->rd[p] = (int)((size_t)p * 2 * MAXK * sizeof(int64_t));   /* bytes */
            c->stypes[p] = kind == 1 ? every_other : MPI_INT64_T;
            c->sc[p] = kind == 1 ? 1 : w_elems(kind);
            c->rtypes[p] = kind == 2 ? int64_pairs : MPI_INT64_T;
            c->rc[p] = kind == 2 ? 100 : w_elems(kind);
        }
        c->slen = c->rlen = (size_t)n * 2 * MAXK;
        break;
    case GATHERV:
    case SCATTERV:
        for (int p = 0; p < n; p++) {
            c->rc[p] = pair_count(p, c->root, c->shape);
            c->rd[p] = at;
            at += c->rc[p] + 2;
        }
        c->slen = (size_t)c->rc[me] + 1;          /* this member's own block */
        c->rlen = (size_t)at * (size_t)stride;    /* the root's blocks */
        break;
    case ALLGATHERV:
        for (int p = n - 1; p >= 0; p--) {
            c->rc[p] = allgatherv_count(p, c->shape);
            c->rd[p] = at;
            at += c->rc[p] + 1;
        }
        c->slen = (size_t)c->rc[me] + 1;
        c->rlen = (size_t)at;
        break;
    case NB_ALLTOALL:
        c->slen = 2 * (size_t)c->k;
        c->rlen = 2 * (size_t)c->k + 1;
        break;
    case NB_ALLTOALLW:
        /* Block d sent as c->k vectors' worth of every other int64 (k = MAXK / 4), received contiguous. */
        for (int d = 0; d < 2; d++) {
            c->swd[d] = (MPI_Aint)((size_t)d * MAXK * sizeof(int64_t));
            c->rwd[d] = (MPI_Aint)((size_t)d * (MAXK / 4 + 1) * sizeof(int64_t));
            c->stypes[d] = every_other;
            c->sc[d] = 1;
            c->rtypes[d] = MPI_INT64_T;
            c->rc[d] = MAXK / 4;
        }
        c->slen = 2 * MAXK;
        c->rlen = 2 * (MAXK / 4 + 1);
        break;
    case NB_ALLGATHER:
        c->slen = (size_t)c->k;
        c->rlen = 2 * (size_t)c->k;
        break;
    case NB_ALLTOALLV:
        for (int e = 0; e < DEG; e++) {
            c->sc[e] = edge_count(e, me, c->shape);
            c->sd[e] = e * MAXK;
            c->rc[e] = edge_count(e, graph_src[e], c->shape);
            c->rd[e] = e * (MAXK + 1);
        }
        c->slen = DEG * MAXK;
        c->rlen = DEG * (MAXK + 1);
        break;
    case NB_ALLGATHERV:
        /* One block of our own count to every destination. */
        c->k = 5 + 3 * me;
        for (int e = 0; e < DEG; e++) {
            c->rc[e] = 5 + 3 * graph_src[e];
            c->rd[e] = at;
            at += c->rc[e] + 1;
        }
        c->slen = (size_t)c->k;
        c->rlen = (size_t)at;
        break;
    }
    c->sbuf = alloc_elems(c->slen);
    c->rbuf = alloc_elems(c->rlen);
}

/* New values for a run with this tag; receive buffers to the sentinel. */
static void fill(struct xcase *c, int tag)
{
    for (size_t i = 0; i < c->rlen; i++)
        c->rbuf[i] = SENTINEL;
    for (size_t i = 0; i < c->slen; i++)
        c->sbuf[i] = SENTINEL;
    int stride = c->strided ? 2 : 1;
    switch (c->kind) {
    case ALLTOALLV:
        for (int p = 0; p < n; p++)
            for (int i = 0; i < c->sc[p]; i++) {
                if (c->in_place)
                    c->rbuf[(size_t)(c->rd[p] + i) * stride] = value(me, p, tag, i);
                else
                    c->sbuf[c->sd[p] + i] = value(me, p, tag, i);
            }
        break;
    case ALLTOALLW:
        for (int p = 0; p < n; p++) {
            int kind = w_kind(c, p);
            for (int i = 0; i < w_elems(kind); i++)
                c->sbuf[(size_t)p * 2 * MAXK + (size_t)i * (kind == 1 ? 2 : 1)] = value(me, p, tag, i);
        }
        break;
    case GATHERV:
        for (int i = 0; i < c->rc[me]; i++) {
            c->sbuf[i] = value(me, c->root, tag, i);
            if (c->in_place && me == c->root)
                c->rbuf[(size_t)(c->rd[me] + i) * stride] = value(me, c->root, tag, i);
        }
        break;
    case SCATTERV:
        if (me == c->root)
            for (int p = 0; p < n; p++)
                for (int i = 0; i < c->rc[p]; i++)
                    c->rbuf[(size_t)(c->rd[p] + i) * stride] = value(c->root, p, tag, i);
        break;
    case ALLGATHERV:
        for (int i = 0; i < c->rc[me]; i++)
            (c->in_place ? c->rbuf + c->rd[me] : c->sbuf)[i] = value(me, 0, tag, i);
        break;
    case NB_ALLTOALL:
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < c->k; i++)
                c->sbuf[d * c->k + i] = value(me, d, tag, i);
        break;
    case NB_ALLTOALLW:
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < MAXK / 4; i++)
                c->sbuf[d * MAXK + 2 * i] = value(me, d, tag, i);
        break;
    case NB_ALLGATHER:
    case NB_ALLGATHERV:
        for (int i = 0; i < c->k; i++)
            c->sbuf[i] = value(me, 0, tag, i);
        break;
    case NB_ALLTOALLV:
        for (int e = 0; e < DEG; e++)
            for (int i = 0; i < c->sc[e]; i++)
                c->sbuf[e * MAXK + i] = value(me, e, tag, i);
        break;
    }
}

/* Issue the nonblocking call (persistent 0), or make the persistent request. */
static void start(struct xcase *c, int persistent)
{
    int64_t *s = c->sbuf, *r = c->rbuf;
    MPI_Comm comm = c->comm;
    MPI_Datatype rtype = c->strided ? strided_int64 : MPI_INT64_T;
    MPI_Request *req = &c->req;
    int root = c->root, place = c->in_place && me == root;
    MPI_Info info = MPI_INFO_NULL;
    switch (c->kind) {
    case ALLTOALLV: {
        const void *from = c->in_place ? MPI_IN_PLACE : s;
        CHECK_MPI(persistent ? MPI_Alltoallv_init(from, c->sc, c->sd, MPI_INT64_T, r, c->rc, c->rd, rtype, comm, info,
                                                  req)
                             : MPI_Ialltoallv(from, c->sc, c->sd, MPI_INT64_T, r, c->rc, c->rd, rtype, comm, req));
        break;
    }
    case ALLTOALLW:
        CHECK_MPI(persistent ? MPI_Alltoallw_init(s, c->sc, c->sd, c->stypes, r, c->rc, c->rd, c->rtypes, comm, info,
                                                  req)
                             : MPI_Ialltoallw(s, c->sc, c->sd, c->stypes, r, c->rc, c->rd, c->rtypes, comm, req));
        break;
    case GATHERV: {
        const void *from = place ? MPI_IN_PLACE : s;
        CHECK_MPI(persistent ? MPI_Gatherv_init(from, c->rc[me], MPI_INT64_T, r, c->rc, c->rd, rtype, root, comm,
                                                info, req)
                             : MPI_Igatherv(from, c->rc[me], MPI_INT64_T, r, c->rc, c->rd, rtype, root, comm, req));
        break;
    }
    case SCATTERV: {
        void *to = place ? MPI_IN_PLACE : s;
        CHECK_MPI(persistent ? MPI_Scatterv_init(r, c->rc, c->rd, rtype, to, c->rc[me], MPI_INT64_T, root, comm,
                                                 info, req)
                             : MPI_Iscatterv(r, c->rc, c->rd, rtype, to, c->rc[me], MPI_INT64_T, root, comm, req));
        break;
    }
    case ALLGATHERV: {
        const void *from = c->in_place ? MPI_IN_PLACE : s;
        CHECK_MPI(persistent ? MPI_Allgatherv_init(from, c->rc[me], MPI_INT64_T, r, c->rc, c->rd, MPI_INT64_T, comm,
                                                   info, req)
                             : MPI_Iallgatherv(from, c->rc[me], MPI_INT64_T, r, c->rc, c->rd, MPI_INT64_T, comm,
                                               req));
        break;
    }
    case NB_ALLGATHER:
        CHECK_MPI(persistent
                      ? MPI_Neighbor_allgather_init(s, c->k, MPI_INT64_T, r, c->k, MPI_INT64_T, comm, info, req)
                      : MPI_Ineighbor_allgather(s, c->k, MPI_INT64_T, r, c->k, MPI_INT64_T, comm, req));
        break;
    case NB_ALLGATHERV:
        CHECK_MPI(persistent ? MPI_Neighbor_allgatherv_init(s, c->k, MPI_INT64_T, r, c->rc, c->rd, MPI_INT64_T, comm,
                                                            info, req)
                             : MPI_Ineighbor_allgatherv(s, c->k, MPI_INT64_T, r, c->rc, c->rd, MPI_INT64_T, comm,
                                                        req));
        break;
    case NB_ALLTOALL:
        CHECK_MPI(persistent
                      ? MPI_Neighbor_alltoall_init(s, c->k, MPI_INT64_T, r, c->k, MPI_INT64_T, comm, info, req)
                      : MPI_Ineighbor_alltoall(s, c->k, MPI_INT64_T, r, c->k, MPI_INT64_T, comm, req));
        break;
    case NB_ALLTOALLV:
        CHECK_MPI(persistent ? MPI_Neighbor_alltoallv_init(s, c->sc, c->sd, MPI_INT64_T, r, c->rc, c->rd,
                                                           MPI_INT64_T, comm, info, req)
                             : MPI_Ineighbor_alltoallv(s, c->sc, c->sd, MPI_INT64_T, r, c->rc, c->rd, MPI_INT64_T,
                                                       comm, req));
        break;
    case NB_ALLTOALLW:
        CHECK_MPI(persistent ? MPI_Neighbor_alltoallw_init(s, c->sc, c->swd, c->stypes, r, c->rc, c->rwd, c->rtypes,
                                                           comm, info, req)
                             : MPI_Ineighbor_alltoallw(s, c->sc, c->swd, c->stypes, r, c->rc, c->rwd, c->rtypes, comm,
                                                       req));
        break;
    }
}

/* Every element of the run with this tag, and the sentinel after each block. */
static void check(const struct xcase *c, int tag, const char *form)
{
    const char *what = kind_name[c->kind];
    int stride = c->strided ? 2 : 1;
    switch (c->kind) {
    case ALLTOALLV:
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < c->rc[p]; i++) {
                int64_t got = c->rbuf[(size_t)(c->rd[p] + i) * stride];
                CHECK(got == value(p, me, tag, i), "%s %s%s%s from %d element %d of %d: %lld, expected %lld", form,
                      what, c->in_place ? " in place" : "", c->strided ? " strided" : "", p, i, c->rc[p],
                      (long long)got, (long long)value(p, me, tag, i));
            }
            CHECK(c->rbuf[(size_t)(c->rd[p] + c->rc[p]) * stride] == SENTINEL, "%s %s wrote past the block from %d",
                  form, what, p);
        }
        break;
    case ALLTOALLW:
        for (int p = 0; p < n; p++) {
            int kind = w_kind(c, p);
            const int64_t *b = c->rbuf + (size_t)p * 2 * MAXK;
            for (int i = 0; i < w_elems(kind); i++)
                CHECK(b[i] == value(p, me, tag, i), "%s %s from %d (kind %d) element %d: %lld, expected %lld", form,
                      what, p, kind, i, (long long)b[i], (long long)value(p, me, tag, i));
            CHECK(b[w_elems(kind)] == SENTINEL, "%s %s wrote past the block from %d", form, what, p);
        }
        break;
    case GATHERV:
        if (me != c->root)
            break;
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < c->rc[p]; i++) {
                int64_t got = c->rbuf[(size_t)(c->rd[p] + i) * stride];
                CHECK(got == value(p, c->root, tag, i), "%s %s at %d%s from %d element %d: %lld, expected %lld", form,
                      what, c->root, c->in_place ? " in place" : "", p, i, (long long)got,
                      (long long)value(p, c->root, tag, i));
            }
            CHECK(c->rbuf[(size_t)(c->rd[p] + c->rc[p]) * stride] == SENTINEL, "%s %s wrote past the block from %d",
                  form, what, p);
        }
        break;
    case SCATTERV:
        if (c->in_place && me == c->root)
            break;   /* its block stays in the send buffer */
        for (int i = 0; i < c->rc[me]; i++)
            CHECK(c->sbuf[i] == value(c->root, me, tag, i), "%s %s from %d element %d: %lld, expected %lld", form,
                  what, c->root, i, (long long)c->sbuf[i], (long long)value(c->root, me, tag, i));
        CHECK(c->sbuf[c->rc[me]] == SENTINEL, "%s %s wrote past the block", form, what);
        break;
    case ALLGATHERV:
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < c->rc[p]; i++)
                CHECK(c->rbuf[c->rd[p] + i] == value(p, 0, tag, i), "%s %s%s from %d element %d: %lld", form, what,
                      c->in_place ? " in place" : "", p, i, (long long)c->rbuf[c->rd[p] + i]);
            CHECK(c->rbuf[c->rd[p] + c->rc[p]] == SENTINEL, "%s %s wrote past the block from %d", form, what, p);
        }
        break;
    case NB_ALLTOALL:
    case NB_ALLTOALLW: {
        /* recv[0] from the left (what it sent to its +1), recv[1] from the right. */
        int k = c->kind == NB_ALLTOALL ? c->k : MAXK / 4, gap = c->kind == NB_ALLTOALL ? 0 : 1;
        for (int d = 0; d < 2; d++) {
            const int64_t *b = c->rbuf + (size_t)d * (size_t)(k + gap);
            for (int i = 0; i < k; i++)
                CHECK(b[i] == value(ring_nb[d], !d, tag, i),
                      "%s %s (%d int64) block %d element %d: %lld, expected %lld", form, what, k, d, i,
                      (long long)b[i], (long long)value(ring_nb[d], !d, tag, i));
        }
        /* After the second block (and, for w, after the first: its gap). */
        CHECK(c->rbuf[2 * (size_t)k + (size_t)gap] == SENTINEL && (!gap || c->rbuf[k] == SENTINEL),
              "%s %s wrote past a block", form, what);
        break;
    }
    case NB_ALLGATHER:
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < c->k; i++) {
                int64_t want = line_nb[d] == MPI_PROC_NULL ? SENTINEL : value(line_nb[d], 0, tag, i);
                CHECK(c->rbuf[d * c->k + i] == want, "%s %s (%d int64) side %d element %d: %lld, expected %lld",
                      form, what, c->k, d, i, (long long)c->rbuf[d * c->k + i], (long long)want);
            }
        break;
    case NB_ALLGATHERV:
    case NB_ALLTOALLV:
        for (int e = 0; e < DEG; e++) {
            int to = c->kind == NB_ALLTOALLV ? e : 0;
            for (int i = 0; i < c->rc[e]; i++)
                CHECK(c->rbuf[c->rd[e] + i] == value(graph_src[e], to, tag, i),
                      "%s %s edge %d from %d element %d: %lld, expected %lld", form, what, e, graph_src[e], i,
                      (long long)c->rbuf[c->rd[e] + i], (long long)value(graph_src[e], to, tag, i));
            CHECK(c->rbuf[c->rd[e] + c->rc[e]] == SENTINEL, "%s %s wrote past edge %d", form, what, e);
        }
        break;
    }
}

/* A blocking Alltoallv on world while the nonblocking runs are out (the
 * blocking exchange on its own ring, their runs progressing in its wait). */
static void blocking_alltoallv(int tag)
{
    int64_t sbuf[3 * MAXRANKS], rbuf[3 * MAXRANKS];
    int counts[MAXRANKS], displs[MAXRANKS];
    for (int p = 0; p < n; p++) {
        counts[p] = 3;
        displs[p] = 3 * p;
        for (int i = 0; i < 3; i++) {
            sbuf[3 * p + i] = value(me, p, tag, i);
            rbuf[3 * p + i] = SENTINEL;
        }
    }
    CHECK_MPI(MPI_Alltoallv(sbuf, counts, displs, MPI_INT64_T, rbuf, counts, displs, MPI_INT64_T, MPI_COMM_WORLD));
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 3; i++)
            CHECK(rbuf[3 * p + i] == value(p, me, tag, i), "blocking alltoallv among nonblocking runs: from %d [%d]",
                  p, i);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "any";
    int rounds = argc > 2 ? atoi(argv[2]) : 2;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &n));
    CHECK(n <= MAXRANKS, "at most %d ranks", MAXRANKS);

    CHECK_MPI(MPI_Type_create_resized(MPI_INT64_T, 0, 16, &strided_int64));
    CHECK_MPI(MPI_Type_commit(&strided_int64));
    CHECK_MPI(MPI_Type_vector(MAXK / 4, 1, 2, MPI_INT64_T, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT64_T, &int64_pairs));
    CHECK_MPI(MPI_Type_commit(&int64_pairs));
    MPI_Comm dup, ring, line, graph;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int dims[1] = { n }, periodic[1] = { 1 }, open_ends[1] = { 0 };
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periodic, 0, &ring));
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, open_ends, 0, &line));
    ring_nb[0] = (me - 1 + n) % n;
    ring_nb[1] = (me + 1) % n;
    line_nb[0] = me > 0 ? me - 1 : MPI_PROC_NULL;
    line_nb[1] = me + 1 < n ? me + 1 : MPI_PROC_NULL;
    /* Edges of rank r: to r + 1 twice, to itself, to r + 2; the sources mirror them in the same order. */
    int dst[DEG] = { (me + 1) % n, me, (me + 1) % n, (me + 2) % n };
    int src[DEG] = { (me - 1 + n) % n, me, (me - 1 + n) % n, (me - 2 + 2 * n) % n };
    memcpy(graph_src, src, sizeof src);
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, DEG, src, MPI_UNWEIGHTED, DEG, dst, MPI_UNWEIGHTED,
                                             MPI_INFO_NULL, 0, &graph));

#define CASE(kind_, comm_, shape_, root_, in_place_, strided_, k_)                                                   \
    { .kind = kind_, .comm = comm_, .shape = shape_, .root = root_, .in_place = in_place_,                         \
      .strided = strided_, .k = k_ }
    struct xcase cases[] = {
        CASE(ALLTOALLV, MPI_COMM_WORLD, 0, 0, 0, 0, 0),
        CASE(ALLTOALLV, MPI_COMM_WORLD, 1, 0, 0, 1, 0),
        CASE(ALLTOALLV, dup, 2, 0, 1, 0, 0),
        CASE(ALLTOALLV, MPI_COMM_WORLD, 3, 0, 1, 1, 0),
        CASE(ALLTOALLW, dup, 0, 0, 0, 0, 0),
        CASE(GATHERV, MPI_COMM_WORLD, 0, 0, 0, 0, 0),
        CASE(GATHERV, dup, 1, n - 1, 1, 1, 0),
        CASE(SCATTERV, MPI_COMM_WORLD, 2, 0, 1, 0, 0),
        CASE(SCATTERV, dup, 3, n - 1, 0, 1, 0),
        CASE(ALLGATHERV, MPI_COMM_WORLD, 0, 0, 0, 0, 0),
        CASE(ALLGATHERV, dup, 1, 0, 1, 0, 0),
        CASE(NB_ALLTOALL, ring, 0, 0, 0, 0, 1),
        CASE(NB_ALLTOALL, ring, 0, 0, 0, 0, MAXK),
        CASE(NB_ALLTOALLW, ring, 0, 0, 0, 0, 0),
        CASE(NB_ALLGATHER, line, 0, 0, 0, 0, 9),
        CASE(NB_ALLGATHER, line, 0, 0, 0, 0, MAXK),
        CASE(NB_ALLTOALLV, graph, 0, 0, 0, 0, 0),
        CASE(NB_ALLTOALLV, graph, 1, 0, 0, 0, 0),
        CASE(NB_ALLGATHERV, graph, 0, 0, 0, 0, 0),
    };
#undef CASE
    enum { NCASES = sizeof cases / sizeof cases[0] };
    /* Runs the device takes per phase-1 round and per phase-2 start:
     * Gatherv and Scatterv from 3 members, a nonblocking Alltoallv / w
     * too (a persistent one at 2 as well). */
    int nb_device = 0, persistent_device = 0;
    for (int i = 0; i < NCASES; i++) {
        setup(&cases[i]);
        enum kind k = cases[i].kind;
        int from3 = k == GATHERV || k == SCATTERV;
        int nb_from3 = from3 || k == ALLTOALLV || k == ALLTOALLW;
        nb_device += !nb_from3 || n > 2;
        persistent_device += !from3 || n > 2;
    }

    int check_counters = strcmp(mode, "any") != 0;
    unsigned long long x0 = 0, nb0 = 0;
    if (check_counters) {
        int provided;
        CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread failed");
        x0 = counter_value("dimmnet_llcm_exchanges");
        nb0 = counter_value("dimmnet_llcm_nb_colls");
    }
    long long runs = 0, blocking_calls = 0;
    MPI_Request reqs[NCASES];

    /* Phase 1: every case in flight at once, on six communicators. */
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < NCASES; i++) {
            fill(&cases[i], 1000 * round + i);
            start(&cases[i], 0);
            reqs[i] = cases[i].req;
        }
        blocking_alltoallv(500 + round);
        blocking_calls++;
        CHECK_MPI(MPI_Waitall(NCASES, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < NCASES; i++)
            check(&cases[i], 1000 * round + i, "nonblocking");
        runs += nb_device;
    }

    /* Phase 2: persistent requests, made once, started STARTS times with new data. */
    for (int i = 0; i < NCASES; i++) {
        start(&cases[i], 1);
        reqs[i] = cases[i].req;
    }
    for (int run = 0; run < STARTS; run++) {
        int tag0 = 100000 + 1000 * run;
        for (int i = 0; i < NCASES; i++)
            fill(&cases[i], tag0 + i);
        CHECK_MPI(MPI_Startall(NCASES, reqs));
        CHECK_MPI(MPI_Waitall(NCASES, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < NCASES; i++)
            check(&cases[i], tag0 + i, "persistent");
        runs += persistent_device;
    }
    for (int i = 0; i < NCASES; i++)
        CHECK_MPI(MPI_Request_free(&reqs[i]));

    if (check_counters) {
        long long got = (long long)(counter_value("dimmnet_llcm_exchanges") - x0);
        long long nb = (long long)(counter_value("dimmnet_llcm_nb_colls") - nb0);
        long long want = strcmp(mode, "device") == 0 ? runs : 0;
        CHECK(got == want + (want ? blocking_calls : 0), "dimmnet_llcm_exchanges grew by %lld, expected %lld", got,
              want + (want ? blocking_calls : 0));
        if (want)
            CHECK(nb == want, "dimmnet_llcm_nb_colls grew by %lld, expected %lld", nb, want);
        CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize failed");
    }
    for (int i = 0; i < NCASES; i++) {
        free(cases[i].sbuf);
        free(cases[i].rbuf);
    }
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&ring));
    CHECK_MPI(MPI_Comm_free(&line));
    CHECK_MPI(MPI_Comm_free(&graph));
    CHECK_MPI(MPI_Type_free(&strided_int64));
    CHECK_MPI(MPI_Type_free(&every_other));
    CHECK_MPI(MPI_Type_free(&int64_pairs));
    printf("rank %d of %d ok\n", me, n);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
