/*
 * jacobi1d: explicit heat equation on a rod, u' = u + ALPHA * (left - 2u + right),
 * with the ends held at fixed temperatures.
 *
 *   mpirun -n 4 examples/jacobi1d [points [steps]]     (default 4000 points, 500 steps)
 *
 * The rod is split into contiguous blocks over a 1-D Cartesian communicator
 * (MPI_Cart_create, neighbours from MPI_Cart_shift: MPI_PROC_NULL beyond the
 * ends, so the end ranks need no special case). Each rank keeps its block with
 * one halo cell on each side, in two buffers used alternately; the halo
 * exchange of each buffer is a set of persistent requests made once
 * (MPI_Send_init / MPI_Recv_init) and restarted every step (MPI_Startall).
 * Interior points are updated while the halos travel.
 *
 * At the end rank 0 gathers the field (MPI_Gatherv: blocks differ by one point
 * when the ranks do not divide the points), repeats the computation serially
 * with the same update function, so the same floating-point operations in the
 * same order, and requires the two fields to be equal bit for bit.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALPHA 0.25
#define LEFT_END 1.0  /* fixed temperature of the left end */
#define RIGHT_END 0.0 /* and of the right end */

static double update(double left, double centre, double right)
{
    return centre + ALPHA * (left - 2.0 * centre + right);
}

/* Initial temperature of interior point g (0-based, of n): a bump in the middle. */
static double initial(long g, long n)
{
    double x = ((double)g + 0.5) / (double)n;
    return x > 0.4 && x < 0.6 ? 2.0 : 0.0;
}

/* Points [first, first + count) of n belong to block `coord` of `blocks`. */
static void block_of(long n, int blocks, int coord, long *first, long *count)
{
    long base = n / blocks, extra = n % blocks;
    *count = base + (coord < extra);
    *first = coord * base + (coord < extra ? coord : extra);
}

/* The whole rod on one process: the reference for the parallel run. */
static double *serial_solution(long n, int steps)
{
    double *u = malloc((size_t)(n + 2) * sizeof *u), *v = malloc((size_t)(n + 2) * sizeof *v);
    for (long g = 0; g < n; g++)
        u[g + 1] = initial(g, n);
    u[0] = v[0] = LEFT_END;
    u[n + 1] = v[n + 1] = RIGHT_END;
    for (int t = 0; t < steps; t++) {
        for (long i = 1; i <= n; i++)
            v[i] = update(u[i - 1], u[i], u[i + 1]);
        double *swap = u;
        u = v;
        v = swap;
    }
    free(v);
    return u;
}

int main(int argc, char **argv)
{
    int world_rank, world_size, rank, size, coord, left, right;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    long n = argc > 1 ? atol(argv[1]) : 4000;
    int steps = argc > 2 ? atoi(argv[2]) : 500;
    if (n < world_size || steps < 0) {
        if (world_rank == 0)
            fprintf(stderr, "jacobi1d: need at least one point per rank (%ld points, %d ranks) and steps >= 0\n",
                    n, world_size);
        MPI_Finalize();
        return 2;
    }

    /* A line of ranks, not periodic; the library may renumber them. */
    MPI_Comm line;
    int dims[1] = {world_size}, periods[1] = {0};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 1, &line);
    MPI_Comm_rank(line, &rank);
    MPI_Comm_size(line, &size);
    MPI_Cart_coords(line, rank, 1, &coord);
    MPI_Cart_shift(line, 0, 1, &left, &right);

    long first, count;
    block_of(n, size, coord, &first, &count);

    /* Two buffers of count + 2 points; index 0 and count + 1 are the halos,
     * which hold the fixed end temperatures on the end ranks. */
    double *buf[2];
    for (int b = 0; b < 2; b++) {
        buf[b] = malloc((size_t)(count + 2) * sizeof(double));
        for (long i = 0; i < count; i++)
            buf[b][i + 1] = initial(first + i, n);
        buf[b][0] = LEFT_END;
        buf[b][count + 1] = RIGHT_END;
    }

    /* halo[b]: the exchange that fills buffer b's halos from the neighbours'
     * edge points of buffer b. Tag 0 travels rightwards, tag 1 leftwards. */
    MPI_Request halo[2][4];
    for (int b = 0; b < 2; b++) {
        MPI_Recv_init(&buf[b][0], 1, MPI_DOUBLE, left, 0, line, &halo[b][0]);
        MPI_Recv_init(&buf[b][count + 1], 1, MPI_DOUBLE, right, 1, line, &halo[b][1]);
        MPI_Send_init(&buf[b][count], 1, MPI_DOUBLE, right, 0, line, &halo[b][2]);
        MPI_Send_init(&buf[b][1], 1, MPI_DOUBLE, left, 1, line, &halo[b][3]);
    }

    double start = MPI_Wtime();
    for (int t = 0; t < steps; t++) {
        double *u = buf[t % 2], *v = buf[(t + 1) % 2];
        MPI_Startall(4, halo[t % 2]);
        for (long i = 2; i < count; i++) /* needs no halo */
            v[i] = update(u[i - 1], u[i], u[i + 1]);
        MPI_Waitall(4, halo[t % 2], MPI_STATUSES_IGNORE);
        v[1] = update(u[0], u[1], u[2]);
        if (count > 1)
            v[count] = update(u[count - 1], u[count], u[count + 1]);
    }
    double elapsed = MPI_Wtime() - start;
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++)
            MPI_Request_free(&halo[b][k]);

    /* Gather the final field on rank 0 of the line, blocks in coordinate order. */
    double *field = NULL;
    int *counts = NULL, *displs = NULL;
    if (rank == 0) {
        field = malloc((size_t)n * sizeof *field);
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
        for (int r = 0; r < size; r++) {
            int c;
            long f, k;
            MPI_Cart_coords(line, r, 1, &c);
            block_of(n, size, c, &f, &k);
            counts[r] = (int)k;
            displs[r] = (int)f;
        }
    }
    MPI_Gatherv(&buf[steps % 2][1], (int)count, MPI_DOUBLE, field, counts, displs, MPI_DOUBLE, 0, line);

    int status = 0;
    if (rank == 0) {
        double *reference = serial_solution(n, steps);
        long differ = 0, first_diff = -1;
        for (long g = 0; g < n; g++)
            if (memcmp(&field[g], &reference[g + 1], sizeof(double)) != 0 && differ++ == 0)
                first_diff = g;
        double heat = 0.0;
        for (long g = 0; g < n; g++)
            heat += field[g];
        if (differ)
            fprintf(stderr, "jacobi1d: %ld of %ld points differ from the serial run, the first at %ld: %.17g, serial %.17g\n",
                    differ, n, first_diff, field[first_diff], reference[first_diff + 1]);
        printf("jacobi1d: %d ranks, %ld points, %d steps: total heat %.12f, %.3f s; %s\n", size, n, steps, heat,
               elapsed, differ ? "differs from the serial run: WRONG" : "equals the serial run bit for bit: ok");
        status = differ != 0;
        free(reference);
        free(field);
        free(counts);
        free(displs);
    }
    free(buf[0]);
    free(buf[1]);
    MPI_Comm_free(&line);
    MPI_Finalize();
    return status;
}
