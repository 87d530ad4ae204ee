/*
 * The neighbourhood collectives against serial references, on a periodic, a
 * non-periodic and a mixed 2-D Cartesian grid, a ring built with
 * MPI_Graph_create, and a distributed graph with a repeated edge:
 * Neighbor_allgather(v) and Neighbor_alltoall(v)(w), blocking, nonblocking
 * and persistent (started three times with new data), small and larger
 * blocks, a derived receive type, zero counts; invalid arguments.
 *
 * Usage: neighbor [quick]   (quick: small blocks only)
 *
 * Which block lands where is the point of most checks. For block i of a
 * receiver (its i-th source) the sender s and the sender's block b are:
 *  - Cartesian: s = the i-th neighbour, b = i ^ 1 (what s sent in the
 *    opposite direction), also when both neighbours of a dimension are the
 *    same process (periodic dimensions of size 1 or 2: at 2 and 4 ranks);
 *  - graph and distributed graph: the k-th edge from s to the receiver is
 *    the k-th time the receiver lists s (MPI-4.1 section 8.6).
 * A block from MPI_PROC_NULL stays untouched.
 */
#include <string.h>

#include "test/colldata/colldata_util.h"

static int rank, size;

struct topo {
    const char *name;
    MPI_Comm comm;
    int cartesian;
    int indeg, outdeg;
    int src[8], dst[8];
    /* graph / dist graph: every rank's destination list (to find b) */
    int (*dests_of)(int s, int out[8]);
};

/* The ring of MPI_Graph_create: neighbours r - 1 and r + 1. */
static int ring_dests(int s, int out[8])
{
    out[0] = (s - 1 + size) % size;
    out[1] = (s + 1) % size;
    return 2;
}

/* The distributed graph: r -> r + 1 twice (a repeated edge) and r -> r - 2. */
static int dist_dests(int s, int out[8])
{
    out[0] = (s + 1) % size;
    out[1] = (s - 2 + 2 * size) % size;
    out[2] = (s + 1) % size;
    return 3;
}

static void edge_of(const struct topo *t, int i, int *s, int *b)
{
    *s = t->src[i];
    if (*s == MPI_PROC_NULL) {
        *b = -1;
        return;
    }
    if (t->cartesian) {
        *b = i ^ 1;
        return;
    }
    int q = 0;
    for (int k = 0; k < i; k++)
        q += t->src[k] == *s;
    int d[8], n = t->dests_of(*s, d);
    for (int k = 0; k < n; k++)
        if (d[k] == rank && q-- == 0) {
            *b = k;
            return;
        }
    CHECK(0, "%s: no edge from %d for source %d", t->name, *s, i);
}

static void make_cart(struct topo *t, const char *name, int p0, int p1)
{
    int dims[2] = { 0, 0 }, periods[2] = { p0, p1 };
    CHECK_MPI(MPI_Dims_create(size, 2, dims));
    memset(t, 0, sizeof *t);
    t->name = name;
    t->cartesian = 1;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &t->comm));
    t->indeg = t->outdeg = 4;
    for (int d = 0; d < 2; d++) {
        CHECK_MPI(MPI_Cart_shift(t->comm, d, 1, &t->src[2 * d], &t->src[2 * d + 1]));
        t->dst[2 * d] = t->src[2 * d];
        t->dst[2 * d + 1] = t->src[2 * d + 1];
    }
}

static void make_graph(struct topo *t)
{
    int *index = malloc(size * sizeof(int)), *edges = malloc(2 * size * sizeof(int));
    for (int r = 0; r < size; r++) {
        index[r] = 2 * (r + 1);
        ring_dests(r, &edges[2 * r]);
    }
    memset(t, 0, sizeof *t);
    t->name = "graph ring";
    t->dests_of = ring_dests;
    CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &t->comm));
    int n;
    CHECK_MPI(MPI_Graph_neighbors_count(t->comm, rank, &n));
    CHECK(n == 2, "graph ring: %d neighbours", n);
    CHECK_MPI(MPI_Graph_neighbors(t->comm, rank, 8, t->src));
    memcpy(t->dst, t->src, sizeof t->src);
    t->indeg = t->outdeg = 2;
    free(index);
    free(edges);
}

static void make_dist_graph(struct topo *t)
{
    memset(t, 0, sizeof *t);
    t->name = "dist graph";
    t->dests_of = dist_dests;
    t->outdeg = dist_dests(rank, t->dst);
    /* sources: r - 1 (twice, the repeated edge) and r + 2, in this order */
    t->src[0] = (rank - 1 + size) % size;
    t->src[1] = (rank + 2) % size;
    t->src[2] = (rank - 1 + size) % size;
    t->indeg = 3;
    /* Weights given (all 1): with MPI_UNWEIGHTED, gcc 12 warns about reading
     * the standard ABI's small constant address (-Wstringop-overread). */
    int weights[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, t->indeg, t->src, weights, t->outdeg, t->dst, weights,
                                             MPI_INFO_NULL, 0, &t->comm));
    int in, out, weighted;
    CHECK_MPI(MPI_Dist_graph_neighbors_count(t->comm, &in, &out, &weighted));
    CHECK(in == 3 && out == 3, "dist graph: degrees %d, %d", in, out);
}

/* Ints sender s puts in its block b (v and w forms): uneven, some zero, even. */
static long vcount(int s, int b, long unit)
{
    return (s + b) % 3 == 2 ? 0 : 2 * unit * (1 + (3 * s + b) % 4);
}

/* ---- allgather(v): every destination gets the sender's one block ---- */

static void test_allgather(const struct topo *t, enum mode m, long n, int v)
{
    long unit = n;
    long *rcount = malloc(8 * sizeof(long)), *rdisp = malloc(8 * sizeof(long));
    long total = 1;
    for (int i = t->indeg - 1; i >= 0; i--) {   /* blocks in reverse order, one-int gaps */
        int s, b;
        edge_of(t, i, &s, &b);
        rcount[i] = v ? (s == MPI_PROC_NULL ? 2 : vcount(s, 0, unit)) : n;
        rdisp[i] = v ? total : i * n;
        total = v ? total + rcount[i] + 1 : t->indeg * n;
    }
    long mine = v ? vcount(rank, 0, unit) : n;
    int *sbuf = alloc_ints(mine), *rbuf = alloc_ints(total), *want = alloc_ints(total);
    int rc[8], rd[8];
    for (int i = 0; i < t->indeg; i++) {
        rc[i] = (int)rcount[i];
        rd[i] = (int)rdisp[i];
    }
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = 100 + it;
        for (long j = 0; j < mine; j++)
            sbuf[j] = val(rank, 0, j);
        reset_guard(rbuf, want, total);
        for (int i = 0; i < t->indeg; i++) {
            int s, b;
            edge_of(t, i, &s, &b);
            if (s != MPI_PROC_NULL)
                for (long j = 0; j < rcount[i]; j++)
                    want[rdisp[i] + j] = val(s, 0, j);
        }
        if (v)
            RUN_COLL(m, it, req, Neighbor_allgatherv, neighbor_allgatherv,
                     (sbuf, (int)mine, MPI_INT, rbuf, rc, rd, MPI_INT, t->comm));
        else
            RUN_COLL(m, it, req, Neighbor_allgather, neighbor_allgather,
                     (sbuf, (int)n, MPI_INT, rbuf, (int)n, MPI_INT, t->comm));
        compare(rbuf, want, total, v ? "neighbor_allgatherv" : "neighbor_allgather");
    }
    end_run(m, &req);
    free(sbuf), free(rbuf), free(want), free(rcount), free(rdisp);
}

/* ---- alltoall(v)(w) ---- */

enum a2a { A2A, A2AV, A2AW };

/* recv_strided: the receive side uses a strided int type (one int, then a
 * gap of one) for alltoall / alltoallv, and for alltoallw on odd blocks. */
static void test_alltoall(const struct topo *t, enum mode m, long n, enum a2a kind, int recv_strided)
{
    MPI_Datatype strided = strided_int_type();
    long scnt[8], sdisp[8], rcnt[8], rdisp[8];
    int rstride[8];
    long stotal = 1, rtotal = 2;
    for (int b = t->outdeg - 1; b >= 0; b--) {   /* reverse order with gaps */
        scnt[b] = kind == A2A ? n : vcount(rank, b, n);
        if (kind == A2A) {
            sdisp[b] = b * n;
            stotal = t->outdeg * n;
        } else {
            sdisp[b] = stotal;
            stotal += scnt[b] + 1;
        }
    }
    for (int i = t->indeg - 1; i >= 0; i--) {
        int s, b;
        edge_of(t, i, &s, &b);
        rstride[i] = kind == A2AW ? 1 + (recv_strided && i % 2) : 1 + recv_strided;
        rcnt[i] = kind == A2A ? n : s == MPI_PROC_NULL ? 2 : vcount(s, b, n);
        if (kind == A2A) {
            rdisp[i] = i * n * rstride[i];
            rtotal = t->indeg * n * rstride[i];
        } else {
            rdisp[i] = rtotal;
            rtotal += rcnt[i] * rstride[i] + 2;   /* even: strided blocks stay element-aligned */
        }
    }
    int *sbuf = alloc_ints(stotal), *rbuf = alloc_ints(rtotal), *want = alloc_ints(rtotal);
    int sc[8], sd[8], rc[8], rd[8];
    MPI_Aint sdb[8], rdb[8];
    MPI_Datatype st[8], rt[8];
    for (int b = 0; b < t->outdeg; b++) {
        sc[b] = (int)scnt[b];
        sd[b] = (int)sdisp[b];
        sdb[b] = sdisp[b] * (MPI_Aint)sizeof(int);
        st[b] = MPI_INT;
    }
    for (int i = 0; i < t->indeg; i++) {
        rc[i] = (int)rcnt[i];
        rd[i] = (int)(rdisp[i] / rstride[i]);   /* v: in extents of the receive type */
        rdb[i] = rdisp[i] * (MPI_Aint)sizeof(int);
        rt[i] = rstride[i] == 2 ? strided : MPI_INT;
    }
    MPI_Datatype rtype = recv_strided ? strided : MPI_INT;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = 200 + it;
        for (int b = 0; b < t->outdeg; b++)
            for (long j = 0; j < scnt[b]; j++)
                sbuf[sdisp[b] + j] = val(rank, b, j);
        reset_guard(rbuf, want, rtotal);
        for (int i = 0; i < t->indeg; i++) {
            int s, b;
            edge_of(t, i, &s, &b);
            if (s != MPI_PROC_NULL)
                for (long j = 0; j < rcnt[i]; j++)
                    want[rdisp[i] + j * rstride[i]] = val(s, b, j);
        }
        if (kind == A2A)
            RUN_COLL(m, it, req, Neighbor_alltoall, neighbor_alltoall,
                     (sbuf, (int)n, MPI_INT, rbuf, (int)n, rtype, t->comm));
        else if (kind == A2AV)
            RUN_COLL(m, it, req, Neighbor_alltoallv, neighbor_alltoallv,
                     (sbuf, sc, sd, MPI_INT, rbuf, rc, rd, rtype, t->comm));
        else
            RUN_COLL(m, it, req, Neighbor_alltoallw, neighbor_alltoallw,
                     (sbuf, sc, sdb, st, rbuf, rc, rdb, rt, t->comm));
        compare(rbuf, want, rtotal,
                kind == A2A ? "neighbor_alltoall" : kind == A2AV ? "neighbor_alltoallv" : "neighbor_alltoallw");
    }
    end_run(m, &req);
    CHECK_MPI(MPI_Type_free(&strided));
    free(sbuf), free(rbuf), free(want);
}

/* The _c forms once each (the int forms above widen into them). */
static void test_large_count_forms(const struct topo *t)
{
    MPI_Count c[8];
    MPI_Aint d[8];
    const long n = 3;
    int *sbuf = alloc_ints(n * t->outdeg), *rbuf = alloc_ints(n * t->indeg), *want = alloc_ints(n * t->indeg);
    salt = 300;
    for (int b = 0; b < t->outdeg; b++) {
        for (long j = 0; j < n; j++)
            sbuf[b * n + j] = val(rank, b, j);
        c[b] = n;
        d[b] = b * n;
    }
    for (int i = 0; i < t->indeg; i++) {
        int s, b;
        edge_of(t, i, &s, &b);
        if (s != MPI_PROC_NULL)
            for (long j = 0; j < n; j++)
                want[i * n + j] = val(s, b, j);
    }
    cur_mode = "_c";
    CHECK_MPI(MPI_Neighbor_alltoallv_c(sbuf, c, d, MPI_INT, rbuf, c, d, MPI_INT, t->comm));
    compare(rbuf, want, n * t->indeg, "neighbor_alltoallv_c");
    for (long k = 0; k < n * t->indeg; k++)
        rbuf[k] = GUARD;
    MPI_Request req;
    CHECK_MPI(MPI_Ineighbor_alltoall_c(sbuf, n, MPI_INT, rbuf, n, MPI_INT, t->comm, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    compare(rbuf, want, n * t->indeg, "ineighbor_alltoall_c");
    free(sbuf), free(rbuf), free(want);
}

static void test_errors(const struct topo *cart)
{
    int buf[64] = { 0 }, out[64];
    MPI_Request req;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(cart->comm, MPI_ERRORS_RETURN));
    CHECK_ERR(MPI_Neighbor_alltoall(buf, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD),
              MPI_ERR_TOPOLOGY, "MPI_Neighbor_alltoall");
    CHECK_ERR(MPI_Ineighbor_allgather(buf, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD, &req),
              MPI_ERR_TOPOLOGY, "MPI_Ineighbor_allgather");
    CHECK_ERR(MPI_Neighbor_allgather(MPI_IN_PLACE, 1, MPI_INT, out, 1, MPI_INT, cart->comm),
              MPI_ERR_BUFFER, "MPI_Neighbor_allgather");
    CHECK_ERR(MPI_Neighbor_alltoall(buf, -1, MPI_INT, out, 1, MPI_INT, cart->comm),
              MPI_ERR_COUNT, "MPI_Neighbor_alltoall");
    CHECK_ERR(MPI_Neighbor_alltoall(buf, 1, MPI_DATATYPE_NULL, out, 1, MPI_INT, cart->comm),
              MPI_ERR_TYPE, "MPI_Neighbor_alltoall");
    int counts[4] = { 1, 1, -1, 1 }, displs[4] = { 0, 1, 2, 3 };
    CHECK_ERR(MPI_Neighbor_alltoallv(buf, counts, displs, MPI_INT, out, counts, displs, MPI_INT, cart->comm),
              MPI_ERR_COUNT, "MPI_Neighbor_alltoallv");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Comm_set_errhandler(cart->comm, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    struct topo topos[5];
    make_cart(&topos[0], "periodic 2-D grid", 1, 1);
    make_cart(&topos[1], "non-periodic 2-D grid", 0, 0);
    make_cart(&topos[2], "2-D grid periodic in one dimension", 0, 1);
    make_graph(&topos[3]);
    make_dist_graph(&topos[4]);

    /* quick: without the large blocks (for runs that oversubscribe the cores most) */
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    const long sizes[] = { 1, 40, 20000 };
    for (int k = 0; k < 5; k++) {
        const struct topo *t = &topos[k];
        cur_on = t->name;
        for (int m = BLOCKING; m <= PERSISTENT; m++)
            for (int si = 0; si < (quick ? 2 : 3); si++) {
                long n = sizes[si];
                test_allgather(t, m, n, 0);
                test_allgather(t, m, n, 1);
                test_alltoall(t, m, n, A2A, 0);
                test_alltoall(t, m, n, A2AV, 0);
                test_alltoall(t, m, n, A2AW, 0);
                test_alltoall(t, m, n, A2A, 1);
                test_alltoall(t, m, n, A2AV, 1);
                test_alltoall(t, m, n, A2AW, 1);
            }
        test_large_count_forms(t);
    }
    test_errors(&topos[0]);

    for (int k = 0; k < 5; k++)
        CHECK_MPI(MPI_Comm_free(&topos[k].comm));
    report_ok();
    MPI_Finalize();
    return 0;
}
