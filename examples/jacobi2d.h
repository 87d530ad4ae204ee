/*
 * The 2-D Jacobi problem shared by jacobi2d.c (halo exchange with persistent
 * point-to-point requests) and jacobi2d_neighbor.c (with a persistent
 * neighbourhood all-to-all): everything except the halo exchange lives here,
 * so the two programs compute exactly the same thing.
 *
 * The problem: explicit heat equation on an N0 x N1 plate,
 *     u' = u + ALPHA * ((up + down) + (left + right) - 4u),
 * the border held at fixed temperatures (hot top edge, warm left edge).
 *
 * The decomposition: MPI_Dims_create factors the ranks into a 2-D grid and
 * MPI_Cart_create builds a non-periodic Cartesian communicator on it (the
 * library may renumber ranks). Dimension 0 splits the rows, dimension 1 the
 * columns; each rank holds a block of count0 x count1 points plus a one-point
 * halo frame, row-major with a row stride of count1 + 2. Halo rows are
 * contiguous; halo columns are an MPI_Type_vector with that stride. On the
 * plate's border the halo holds the fixed temperatures, and the neighbour
 * there is MPI_PROC_NULL, so nothing ever overwrites it.
 *
 * The check: rank 0 gathers every block (MPI_Gatherv of a subarray type),
 * reruns the whole computation serially with the same update function, and
 * requires equality bit for bit.
 */
#ifndef JACOBI2D_H
#define JACOBI2D_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JACOBI_ALPHA 0.2

struct jacobi_grid {
    MPI_Comm cart;
    int rank, size, dims[2], coords[2];
    int up, down, left, right; /* neighbours: dimension 0 -/+, dimension 1 -/+ */
    long n0, n1;               /* the plate's interior points */
    int steps;
    long first0, first1;       /* global index of my first row and column */
    long count0, count1;       /* my rows and columns */
    long stride;               /* count1 + 2 */
    double *buf[2];            /* the field, two generations used alternately */
    MPI_Datatype column;       /* count0 points of one column of a buffer */
};

static inline double jacobi_update(double centre, double up, double down, double left, double right)
{
    return centre + JACOBI_ALPHA * ((up + down) + (left + right) - 4.0 * centre);
}

/* Temperature of plate point (g0, g1), 0 <= g0 < n0 + 2 and 0 <= g1 < n1 + 2
 * counting the border: fixed on the border, the initial state inside. */
static inline double jacobi_initial(long g0, long g1, long n0, long n1)
{
    if (g0 == 0)
        return 1.0;
    if (g1 == 0)
        return 0.5;
    if (g0 == n0 + 1 || g1 == n1 + 1)
        return 0.0;
    return (double)((g0 * 7 + g1 * 13) % 17) / 16.0;
}

/* Rows or columns [first, first + count) of n belong to block `coord` of `blocks`. */
static inline void jacobi_block(long n, int blocks, int coord, long *first, long *count)
{
    long base = n / blocks, extra = n % blocks;
    *count = base + (coord < extra);
    *first = coord * base + (coord < extra ? coord : extra);
}

static inline double *jacobi_at(const struct jacobi_grid *g, int b, long i, long j)
{
    return &g->buf[b][i * g->stride + j];
}

/* Reads [N0 [N1 [STEPS]]] from the command line, builds the Cartesian
 * communicator and fills both buffers. Returns 0, or 2 on a bad argument. */
static int jacobi_setup(struct jacobi_grid *g, int argc, char **argv, const char *program)
{
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    memset(g, 0, sizeof *g);
    g->n0 = argc > 1 ? atol(argv[1]) : 120;
    g->n1 = argc > 2 ? atol(argv[2]) : 90;
    g->steps = argc > 3 ? atoi(argv[3]) : 200;

    int periods[2] = {0, 0};
    MPI_Dims_create(world_size, 2, g->dims);
    if (g->n0 < g->dims[0] || g->n1 < g->dims[1] || g->steps < 0) {
        if (world_rank == 0)
            fprintf(stderr, "%s: a %ld x %ld plate cannot be split over a %d x %d grid of ranks (or steps < 0)\n",
                    program, g->n0, g->n1, g->dims[0], g->dims[1]);
        return 2;
    }
    MPI_Cart_create(MPI_COMM_WORLD, 2, g->dims, periods, 1, &g->cart);
    MPI_Comm_rank(g->cart, &g->rank);
    MPI_Comm_size(g->cart, &g->size);
    MPI_Cart_coords(g->cart, g->rank, 2, g->coords);
    MPI_Cart_shift(g->cart, 0, 1, &g->up, &g->down);
    MPI_Cart_shift(g->cart, 1, 1, &g->left, &g->right);

    jacobi_block(g->n0, g->dims[0], g->coords[0], &g->first0, &g->count0);
    jacobi_block(g->n1, g->dims[1], g->coords[1], &g->first1, &g->count1);
    g->stride = g->count1 + 2;
    for (int b = 0; b < 2; b++) {
        g->buf[b] = malloc((size_t)((g->count0 + 2) * g->stride) * sizeof(double));
        for (long i = 0; i < g->count0 + 2; i++)
            for (long j = 0; j < g->stride; j++)
                *jacobi_at(g, b, i, j) = jacobi_initial(g->first0 + i, g->first1 + j, g->n0, g->n1);
    }
    MPI_Type_vector((int)g->count0, 1, (int)g->stride, MPI_DOUBLE, &g->column);
    MPI_Type_commit(&g->column);
    return 0;
}

static inline void jacobi_sweep(const struct jacobi_grid *g, int from, long i0, long i1, long j0, long j1)
{
    for (long i = i0; i <= i1; i++)
        for (long j = j0; j <= j1; j++)
            *jacobi_at(g, 1 - from, i, j) =
                jacobi_update(*jacobi_at(g, from, i, j), *jacobi_at(g, from, i - 1, j), *jacobi_at(g, from, i + 1, j),
                              *jacobi_at(g, from, i, j - 1), *jacobi_at(g, from, i, j + 1));
}

/* Points whose neighbours are all mine: computed while the halos travel. */
static void jacobi_sweep_inner(const struct jacobi_grid *g, int from)
{
    jacobi_sweep(g, from, 2, g->count0 - 1, 2, g->count1 - 1);
}

/* The outermost ring of my block, which reads the halos. */
static void jacobi_sweep_frame(const struct jacobi_grid *g, int from)
{
    long c0 = g->count0, c1 = g->count1;
    jacobi_sweep(g, from, 1, 1, 1, c1);
    if (c0 > 1)
        jacobi_sweep(g, from, c0, c0, 1, c1);
    jacobi_sweep(g, from, 2, c0 - 1, 1, 1);
    if (c1 > 1)
        jacobi_sweep(g, from, 2, c0 - 1, c1, c1);
}

/* The whole plate on one process, border included. */
static double *jacobi_serial(long n0, long n1, int steps)
{
    long stride = n1 + 2;
    size_t points = (size_t)((n0 + 2) * stride);
    double *u = malloc(points * sizeof *u), *v = malloc(points * sizeof *v);
    for (long i = 0; i < n0 + 2; i++)
        for (long j = 0; j < stride; j++)
            u[i * stride + j] = v[i * stride + j] = jacobi_initial(i, j, n0, n1);
    for (int t = 0; t < steps; t++) {
        for (long i = 1; i <= n0; i++)
            for (long j = 1; j <= n1; j++) {
                const double *c = &u[i * stride + j];
                v[i * stride + j] = jacobi_update(*c, c[-stride], c[stride], c[-1], c[1]);
            }
        double *swap = u;
        u = v;
        v = swap;
    }
    free(v);
    return u;
}

/* Gathers the field after g->steps steps on rank 0, compares it with the
 * serial run and prints the result line. Frees the grid. Returns the exit
 * status: 0 when equal. */
static int jacobi_finish(struct jacobi_grid *g, const char *program, double elapsed)
{
    int result = g->steps % 2, status = 0;

    /* My interior, without the halo frame, as one element. */
    MPI_Datatype interior;
    int sizes[2] = {(int)g->count0 + 2, (int)g->stride};
    int subsizes[2] = {(int)g->count0, (int)g->count1}, starts[2] = {1, 1};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &interior);
    MPI_Type_commit(&interior);

    /* Rank 0 receives the blocks one after the other, then places them. */
    double *blocks = NULL;
    int *counts = NULL, *displs = NULL;
    if (g->rank == 0) {
        counts = malloc((size_t)g->size * sizeof *counts);
        displs = malloc((size_t)g->size * sizeof *displs);
        blocks = malloc((size_t)(g->n0 * g->n1) * sizeof *blocks);
        long offset = 0;
        for (int r = 0; r < g->size; r++) {
            int c[2];
            long f0, f1, k0, k1;
            MPI_Cart_coords(g->cart, r, 2, c);
            jacobi_block(g->n0, g->dims[0], c[0], &f0, &k0);
            jacobi_block(g->n1, g->dims[1], c[1], &f1, &k1);
            counts[r] = (int)(k0 * k1);
            displs[r] = (int)offset;
            offset += k0 * k1;
        }
    }
    MPI_Gatherv(g->buf[result], 1, interior, blocks, counts, displs, MPI_DOUBLE, 0, g->cart);
    MPI_Type_free(&interior);

    if (g->rank == 0) {
        double *reference = jacobi_serial(g->n0, g->n1, g->steps);
        long stride = g->n1 + 2, differ = 0, bad0 = 0, bad1 = 0;
        double heat = 0.0, got = 0.0, want = 0.0;
        for (int r = 0; r < g->size; r++) {
            int c[2];
            long f0, f1, k0, k1;
            MPI_Cart_coords(g->cart, r, 2, c);
            jacobi_block(g->n0, g->dims[0], c[0], &f0, &k0);
            jacobi_block(g->n1, g->dims[1], c[1], &f1, &k1);
            for (long i = 0; i < k0; i++)
                for (long j = 0; j < k1; j++) {
                    double value = blocks[displs[r] + i * k1 + j];
                    double serial = reference[(f0 + i + 1) * stride + f1 + j + 1];
                    heat += value;
                    if (memcmp(&value, &serial, sizeof value) != 0 && differ++ == 0) {
                        bad0 = f0 + i;
                        bad1 = f1 + j;
                        got = value;
                        want = serial;
                    }
                }
        }
        if (differ)
            fprintf(stderr, "%s: %ld of %ld points differ from the serial run, the first at (%ld, %ld): %.17g, serial %.17g\n",
                    program, differ, g->n0 * g->n1, bad0, bad1, got, want);
        printf("%s: %d ranks as %d x %d, %ld x %ld points, %d steps: total heat %.10f, %.3f s; %s\n", program,
               g->size, g->dims[0], g->dims[1], g->n0, g->n1, g->steps, heat, elapsed,
               differ ? "differs from the serial run: WRONG" : "equals the serial run bit for bit: ok");
        status = differ != 0;
        free(reference);
        free(blocks);
        free(counts);
        free(displs);
    }
    MPI_Type_free(&g->column);
    free(g->buf[0]);
    free(g->buf[1]);
    MPI_Comm_free(&g->cart);
    return status;
}

#endif
