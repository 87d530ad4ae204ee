/*
 * topo: process topologies.
 *
 * Dims_create against known answers and its errors; Cartesian grids of
 * every shape that fits the job (1-D ring and line, 2-D torus and mesh,
 * 3-D), with coords/rank round trips for every rank, Cart_shift against
 * coordinates computed here (periodic wrap, MPI_PROC_NULL at borders, large
 * displacements), Cart_get/Cartdim_get, Cart_sub (sizes, ranks, the kept
 * coordinates, traffic along a row), ranks beyond the grid getting
 * MPI_COMM_NULL, Cart_map; graphs (a ring with chords) with Graph_get,
 * neighbours and a message to each neighbour; distributed graphs, adjacent
 * and general, weighted and not, with their neighbour lists; Topo_test;
 * MPI_Comm_dup keeps the topology; errors: MPI_ERR_TOPOLOGY, MPI_ERR_DIMS,
 * MPI_ERR_RANK, MPI_ERR_ARG. Prints "rank R of S topo ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are sentinel addresses ((int *)10,
 * (int *)11 in the standard ABI); GCC takes them for arrays of size 0. */
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Wstringop-overflow"

static int me, n;

static int error_class(int rc)
{
    int cls = rc;
    MPI_Error_class(rc, &cls);
    return cls;
}

static void dims_create(void)
{
    struct {
        int nnodes, ndims, in[4], out[4];
    } known[] = {
        { 12, 2, { 0, 0 }, { 4, 3 } },     { 6, 2, { 0, 0 }, { 3, 2 } },        { 7, 2, { 0, 0 }, { 7, 1 } },
        { 16, 2, { 0, 0 }, { 4, 4 } },     { 6, 3, { 0, 3, 0 }, { 2, 3, 1 } },  { 24, 3, { 0, 0, 0 }, { 4, 3, 2 } },
        { 36, 3, { 0, 0, 0 }, { 4, 3, 3 } }, { 64, 3, { 0, 0, 0 }, { 4, 4, 4 } }, { 1, 3, { 0, 0, 0 }, { 1, 1, 1 } },
        { 30, 2, { 0, 0 }, { 6, 5 } },     { 7, 3, { 0, 7, 0 }, { 1, 7, 1 } },  { 12, 3, { 2, 0, 0 }, { 2, 3, 2 } },
        { 1024, 2, { 0, 0 }, { 32, 32 } }, { 8, 1, { 0 }, { 8 } },             { 12, 2, { 3, 4 }, { 3, 4 } },
        { 2310, 4, { 0, 0, 0, 0 }, { 11, 7, 6, 5 } },
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        int dims[4];
        memcpy(dims, known[i].in, sizeof dims);
        CHECK_MPI(MPI_Dims_create(known[i].nnodes, known[i].ndims, dims));
        for (int d = 0; d < known[i].ndims; d++)
            CHECK(dims[d] == known[i].out[d], "Dims_create(%d, %d): dims[%d] = %d, expected %d", known[i].nnodes,
                  known[i].ndims, d, dims[d], known[i].out[d]);
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int bad1[3] = { 0, 3, 0 }, bad2[2] = { -1, 0 }, bad3[2] = { 5, 2 };
    CHECK(error_class(MPI_Dims_create(7, 3, bad1)) == MPI_ERR_DIMS, "7 nodes with a fixed 3 is not MPI_ERR_DIMS");
    CHECK(error_class(MPI_Dims_create(6, 2, bad2)) == MPI_ERR_DIMS, "a negative entry is not MPI_ERR_DIMS");
    CHECK(error_class(MPI_Dims_create(12, 2, bad3)) == MPI_ERR_DIMS, "fixed 5x2 for 12 is not MPI_ERR_DIMS");
    CHECK(error_class(MPI_Dims_create(6, -1, bad3)) == MPI_ERR_DIMS, "ndims -1 is not MPI_ERR_DIMS");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
}

/* Coordinates of rank r in a row-major grid. */
static void coords_of(int r, int ndims, const int *dims, int *coords)
{
    for (int d = ndims - 1; d >= 0; d--) {
        coords[d] = r % dims[d];
        r /= dims[d];
    }
}

static int rank_of(const int *coords, int ndims, const int *dims, const int *periods)
{
    int r = 0;
    for (int d = 0; d < ndims; d++) {
        int c = coords[d];
        if (periods[d])
            c = ((c % dims[d]) + dims[d]) % dims[d];
        else if (c < 0 || c >= dims[d])
            return MPI_PROC_NULL;
        r = r * dims[d] + c;
    }
    return r;
}

static void one_grid(int ndims, const int *dims, const int *periods, int use)
{
    int nnodes = 1;
    for (int d = 0; d < ndims; d++)
        nnodes *= dims[d];
    MPI_Comm cart;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 1, &cart));
    if (me >= nnodes) {
        CHECK(cart == MPI_COMM_NULL, "rank %d beyond a %d-point grid got a communicator", me, nnodes);
        return;
    }
    CHECK(cart != MPI_COMM_NULL, "a grid rank got MPI_COMM_NULL");
    int size, rank, status, nd;
    MPI_Comm_size(cart, &size);
    MPI_Comm_rank(cart, &rank);
    CHECK(size == nnodes && rank == me, "grid: size %d rank %d", size, rank);
    CHECK_MPI(MPI_Topo_test(cart, &status));
    CHECK(status == MPI_CART, "Topo_test: %d", status);
    CHECK_MPI(MPI_Cartdim_get(cart, &nd));
    CHECK(nd == ndims, "Cartdim_get: %d", nd);
    int gd[4], gp[4], gc[4], mine[4];
    CHECK_MPI(MPI_Cart_get(cart, 4, gd, gp, gc));
    coords_of(me, ndims, dims, mine);
    for (int d = 0; d < ndims; d++)
        CHECK(gd[d] == dims[d] && gp[d] == (periods[d] != 0) && gc[d] == mine[d], "Cart_get dim %d", d);
    /* Every rank's coordinates and back. */
    for (int r = 0; r < nnodes; r++) {
        int c[4], expect[4], back;
        CHECK_MPI(MPI_Cart_coords(cart, r, 4, c));
        coords_of(r, ndims, dims, expect);
        for (int d = 0; d < ndims; d++)
            CHECK(c[d] == expect[d], "Cart_coords(%d)[%d] = %d, expected %d", r, d, c[d], expect[d]);
        CHECK_MPI(MPI_Cart_rank(cart, c, &back));
        CHECK(back == r, "Cart_rank(Cart_coords(%d)) = %d", r, back);
    }
    /* Shifts by -3..3 in every dimension. */
    for (int d = 0; d < ndims; d++)
        for (int disp = -3; disp <= 3; disp++) {
            int src, dst, c[4];
            CHECK_MPI(MPI_Cart_shift(cart, d, disp, &src, &dst));
            memcpy(c, mine, sizeof c);
            c[d] = mine[d] + disp;
            int want_dst = rank_of(c, ndims, dims, periods);
            c[d] = mine[d] - disp;
            int want_src = rank_of(c, ndims, dims, periods);
            CHECK(src == want_src && dst == want_dst, "Cart_shift(dim %d, disp %d) = (%d, %d), expected (%d, %d)", d,
                  disp, src, dst, want_src, want_dst);
        }
    if (use) {
        /* A halo exchange along dimension 0: what arrives is the neighbour's rank. */
        int src, dst, got = -2;
        CHECK_MPI(MPI_Cart_shift(cart, 0, 1, &src, &dst));
        CHECK_MPI(MPI_Sendrecv(&rank, 1, MPI_INT, dst, 3, &got, 1, MPI_INT, src, 3, cart, MPI_STATUS_IGNORE));
        CHECK(src == MPI_PROC_NULL ? got == -2 : got == src, "halo: got %d from %d", got, src);
        /* Cart_sub keeping every dimension but the first. */
        if (ndims >= 2) {
            int remain[4] = { 0, 1, 1, 1 };
            MPI_Comm sub;
            CHECK_MPI(MPI_Cart_sub(cart, remain, &sub));
            int ssize, srank, snd, sd[4], sp[4], sc[4];
            MPI_Comm_size(sub, &ssize);
            MPI_Comm_rank(sub, &srank);
            CHECK(ssize == nnodes / dims[0], "Cart_sub size %d", ssize);
            CHECK_MPI(MPI_Cartdim_get(sub, &snd));
            CHECK(snd == ndims - 1, "Cart_sub ndims %d", snd);
            CHECK_MPI(MPI_Cart_get(sub, 4, sd, sp, sc));
            for (int d = 1; d < ndims; d++)
                CHECK(sd[d - 1] == dims[d] && sp[d - 1] == (periods[d] != 0) && sc[d - 1] == mine[d],
                      "Cart_sub dim %d", d);
            CHECK(srank == me % (nnodes / dims[0]), "Cart_sub rank %d", srank);
            int token = mine[0] * 100 + srank, back = -1;
            CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, (srank + 1) % ssize, 0, &back, 1, MPI_INT,
                                   (srank - 1 + ssize) % ssize, 0, sub, MPI_STATUS_IGNORE));
            CHECK(back == mine[0] * 100 + (srank - 1 + ssize) % ssize, "row ring got %d", back);
            CHECK_MPI(MPI_Comm_free(&sub));
        }
        /* Keeping nothing: a 0-dimensional grid of one process. */
        int none[4] = { 0, 0, 0, 0 };
        MPI_Comm point;
        CHECK_MPI(MPI_Cart_sub(cart, none, &point));
        int psize, pdims;
        MPI_Comm_size(point, &psize);
        CHECK_MPI(MPI_Cartdim_get(point, &pdims));
        CHECK(psize == 1 && pdims == 0, "Cart_sub keeping nothing: size %d ndims %d", psize, pdims);
        CHECK_MPI(MPI_Comm_free(&point));
        /* A dup keeps the topology. */
        MPI_Comm dup;
        CHECK_MPI(MPI_Comm_dup(cart, &dup));
        CHECK_MPI(MPI_Topo_test(dup, &status));
        CHECK(status == MPI_CART, "dup lost the topology");
        int dd[4], dp[4], dc[4];
        CHECK_MPI(MPI_Cart_get(dup, 4, dd, dp, dc));
        CHECK(memcmp(dd, gd, (size_t)ndims * sizeof *dd) == 0, "dup's grid differs");
        CHECK_MPI(MPI_Comm_free(&dup));
    }
    CHECK_MPI(MPI_Comm_free(&cart));
}

static void cartesian(void)
{
    int dims[4], periods[4];
    /* 1-D ring and line over everyone. */
    dims[0] = n;
    periods[0] = 1;
    one_grid(1, dims, periods, 1);
    periods[0] = 0;
    one_grid(1, dims, periods, 1);
    /* 2-D torus and mesh, 3-D mixed, from Dims_create. */
    dims[0] = dims[1] = 0;
    CHECK_MPI(MPI_Dims_create(n, 2, dims));
    periods[0] = 1, periods[1] = 0;
    one_grid(2, dims, periods, 1);
    periods[0] = 0, periods[1] = 1;
    one_grid(2, dims, periods, 1);
    dims[0] = dims[1] = dims[2] = 0;
    CHECK_MPI(MPI_Dims_create(n, 3, dims));
    periods[0] = 1, periods[1] = 0, periods[2] = 1;
    one_grid(3, dims, periods, 1);
    /* A grid smaller than the job: the rest get MPI_COMM_NULL. */
    if (n > 2) {
        dims[0] = n - 1;
        one_grid(1, dims, periods, 0);
    }
    int newrank;
    dims[0] = n > 1 ? n - 1 : 1;
    CHECK_MPI(MPI_Cart_map(MPI_COMM_WORLD, 1, dims, periods, &newrank));
    CHECK(newrank == (me < dims[0] ? me : MPI_UNDEFINED), "Cart_map: %d", newrank);
}

static void graph(void)
{
    /* A ring with a chord from every node to node 0 (node 0 has them all). */
    int index[64], edges[256], ne = 0;
    for (int v = 0; v < n; v++) {
        if (n > 1) {
            edges[ne++] = (v + 1) % n;
            if (n > 2)
                edges[ne++] = (v - 1 + n) % n;
        }
        if (v != 0 && n > 2 && v != 1 && v != n - 1)
            edges[ne++] = 0;
        if (v == 0)
            for (int u = 2; u < n - 1; u++)
                edges[ne++] = u;
        index[v] = ne;
    }
    MPI_Comm g;
    CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g));
    int status, nnodes, nedges;
    CHECK_MPI(MPI_Topo_test(g, &status));
    CHECK(status == MPI_GRAPH, "Topo_test: %d", status);
    CHECK_MPI(MPI_Graphdims_get(g, &nnodes, &nedges));
    CHECK(nnodes == n && nedges == ne, "Graphdims_get: %d %d", nnodes, nedges);
    int gi[64], ge[256];
    CHECK_MPI(MPI_Graph_get(g, n, ne, gi, ge));
    CHECK(memcmp(gi, index, (size_t)n * sizeof *gi) == 0 && memcmp(ge, edges, (size_t)ne * sizeof *ge) == 0,
          "Graph_get differs from the input");
    for (int v = 0; v < n; v++) {
        int count, nb[64];
        CHECK_MPI(MPI_Graph_neighbors_count(g, v, &count));
        int first = v ? index[v - 1] : 0;
        CHECK(count == index[v] - first, "Graph_neighbors_count(%d) = %d", v, count);
        CHECK_MPI(MPI_Graph_neighbors(g, v, 64, nb));
        CHECK(memcmp(nb, edges + first, (size_t)count * sizeof *nb) == 0, "Graph_neighbors(%d)", v);
    }
    /* One message to each neighbour; the graph is symmetric, so each neighbour sends one back. */
    int count, nb[64], in[64];
    MPI_Request reqs[128];
    CHECK_MPI(MPI_Graph_neighbors_count(g, me, &count));
    CHECK_MPI(MPI_Graph_neighbors(g, me, 64, nb));
    for (int i = 0; i < count; i++) {
        CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, nb[i], 0, g, &reqs[i]));
        CHECK_MPI(MPI_Isend(&me, 1, MPI_INT, nb[i], 0, g, &reqs[count + i]));
    }
    CHECK_MPI(MPI_Waitall(2 * count, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < count; i++)
        CHECK(in[i] == nb[i], "graph neighbour %d sent %d", nb[i], in[i]);
    int newrank;
    CHECK_MPI(MPI_Graph_map(MPI_COMM_WORLD, n, index, edges, &newrank));
    CHECK(newrank == me, "Graph_map: %d", newrank);
    CHECK_MPI(MPI_Comm_free(&g));
}

static void dist_graph(void)
{
    /* Adjacent: in from me-1 and me-2, out to me+1 and me+2 (mod n), weights = peer * 10. */
    int src[2] = { (me - 1 + n) % n, (me - 2 + 2 * n) % n }, dst[2] = { (me + 1) % n, (me + 2) % n };
    int sw[2] = { src[0] * 10, src[1] * 10 }, dw[2] = { dst[0] * 10, dst[1] * 10 };
    MPI_Comm dg;
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw, MPI_INFO_NULL, 0, &dg));
    int status, indeg, outdeg, weighted;
    CHECK_MPI(MPI_Topo_test(dg, &status));
    CHECK(status == MPI_DIST_GRAPH, "Topo_test: %d", status);
    CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
    CHECK(indeg == 2 && outdeg == 2 && weighted, "adjacent: counts %d %d %d", indeg, outdeg, weighted);
    int gs[2], gsw[2], gd[2], gdw[2];
    CHECK_MPI(MPI_Dist_graph_neighbors(dg, 2, gs, gsw, 2, gd, gdw));
    CHECK(memcmp(gs, src, sizeof gs) == 0 && memcmp(gd, dst, sizeof gd) == 0 && memcmp(gsw, sw, sizeof gsw) == 0
              && memcmp(gdw, dw, sizeof gdw) == 0,
          "adjacent: neighbour lists differ");
    CHECK_MPI(MPI_Comm_free(&dg));

    /* General, unweighted: rank 0 names the ring edges v -> v+1 for every
     * v, and every rank names its own edge me -> 0. */
    int n0 = me == 0 ? n : 0, srcs[64], degs[64], dsts[64];
    for (int v = 0; v < n0; v++) {
        srcs[v] = v;
        degs[v] = 1;
        dsts[v] = (v + 1) % n;
    }
    int extra_src = me, extra_deg = 1, extra_dst = 0;
    int all_src[65], all_deg[65], all_dst[65], k = 0;
    for (int v = 0; v < n0; v++, k++) {
        all_src[k] = srcs[v];
        all_deg[k] = degs[v];
        all_dst[k] = dsts[v];
    }
    all_src[k] = extra_src;
    all_deg[k] = extra_deg;
    all_dst[k++] = extra_dst;
    CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, k, all_src, all_deg, all_dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                    &dg));
    CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
    /* Out: me+1 (ring) and 0. In: me-1 (ring), and every rank if me == 0. */
    int want_in = 1 + (me == 0 ? n : 0), want_out = 2;
    CHECK(indeg == want_in && outdeg == want_out && !weighted, "general: counts %d %d %d (expected %d %d 0)", indeg,
          outdeg, weighted, want_in, want_out);
    int ins[80], outs[80];
    CHECK_MPI(MPI_Dist_graph_neighbors(dg, 80, ins, MPI_UNWEIGHTED, 80, outs, MPI_UNWEIGHTED));
    /* Order: by the rank that named the edge, then as named. Rank 0 named
     * the ring edges, so those come first everywhere. */
    CHECK(ins[0] == (me - 1 + n) % n, "general: first in-neighbour %d", ins[0]);
    if (me == 0)
        for (int r = 0; r < n; r++)
            CHECK(ins[1 + r] == r, "general: rank 0's in-neighbour %d is %d", 1 + r, ins[1 + r]);
    CHECK(outs[0] == (me + 1) % n && outs[1] == 0, "general: out-neighbours %d %d", outs[0], outs[1]);
    CHECK_MPI(MPI_Comm_free(&dg));
}

static void errors(void)
{
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int dims[2] = { n + 1, 1 }, periods[2] = { 0, 0 }, c[2], x, y, status;
    MPI_Comm out;
    CHECK(error_class(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &out)) == MPI_ERR_TOPOLOGY,
          "a grid larger than the job is not MPI_ERR_TOPOLOGY");
    dims[0] = 0;
    CHECK(error_class(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &out)) == MPI_ERR_DIMS,
          "a zero dimension is not MPI_ERR_DIMS");
    CHECK(error_class(MPI_Cart_coords(MPI_COMM_WORLD, 0, 2, c)) == MPI_ERR_TOPOLOGY, "Cart_coords on WORLD");
    CHECK(error_class(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &x, &y)) == MPI_ERR_TOPOLOGY, "Cart_shift on WORLD");
    CHECK(error_class(MPI_Graphdims_get(MPI_COMM_WORLD, &x, &y)) == MPI_ERR_TOPOLOGY, "Graphdims_get on WORLD");
    CHECK(error_class(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &x, &y, &status)) == MPI_ERR_TOPOLOGY,
          "Dist_graph_neighbors_count on WORLD");
    CHECK_MPI(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK(status == MPI_UNDEFINED, "Topo_test on WORLD: %d", status);
    CHECK(error_class(MPI_Topo_test(MPI_COMM_NULL, &status)) == MPI_ERR_COMM, "Topo_test on MPI_COMM_NULL");
    dims[0] = n;
    MPI_Comm cart;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart));
    CHECK(error_class(MPI_Cart_coords(cart, n, 1, c)) == MPI_ERR_RANK, "Cart_coords of rank n");
    CHECK(error_class(MPI_Cart_shift(cart, 1, 1, &x, &y)) == MPI_ERR_ARG, "Cart_shift of direction 1 of 1");
    c[0] = n;
    CHECK(error_class(MPI_Cart_rank(cart, c, &x)) == MPI_ERR_ARG, "Cart_rank outside a non-periodic dimension");
    CHECK(error_class(MPI_Graph_neighbors_count(cart, 0, &x)) == MPI_ERR_TOPOLOGY, "graph query on a grid");
    CHECK_MPI(MPI_Comm_free(&cart));
    int src = n, one = 1;
    CHECK(error_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 0, NULL,
                                                     MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &out)) == MPI_ERR_RANK,
          "a dist graph source out of range is not MPI_ERR_RANK");
    (void)one;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    dims_create();
    cartesian();
    graph();
    dist_graph();
    errors();
    report_ok();
    MPI_Finalize();
    return 0;
}
