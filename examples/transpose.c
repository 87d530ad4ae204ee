/*
 * transpose: a distributed matrix transpose through MPI_Alltoall, the
 * communication step of a parallel (pencil or slab) FFT.
 *
 *   mpirun -n 4 examples/transpose [block]     (default 64)
 *
 * An N x N matrix, N = block * ranks, is distributed by rows: rank r owns rows
 * r*block .. (r+1)*block - 1. The transpose B = A^T is distributed the same
 * way. Block (r, p) of A, rows of rank r and columns of rank p, becomes block
 * (p, r) of B, so every pair of ranks exchanges one block x block tile:
 *   1. rank r copies tile p of its rows into send slot p, already transposed;
 *   2. MPI_Alltoall moves slot p of every rank to rank p;
 *   3. slot q received from rank q is then tile q of B's rows, as is.
 * Entry (i, j) of A is the number i * N + j (exact in a double), so every
 * element of B can be checked: B(i, j) must be j * N + i.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double a_entry(long i, long j, long n)
{
    return (double)(i * n + j);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long block = argc > 1 ? atol(argv[1]) : 64;
    if (block < 1 || block * block > 1L << 30) {
        if (rank == 0)
            fprintf(stderr, "transpose: the block size must be between 1 and 32768 (got %ld)\n", block);
        MPI_Finalize();
        return 2;
    }
    long n = block * size, tile = block * block;
    size_t mine = (size_t)(block * n);
    double *a = malloc(mine * sizeof *a), *b = malloc(mine * sizeof *b);
    double *send = malloc(mine * sizeof *send), *recv = malloc(mine * sizeof *recv);

    /* My rows of A, row-major: a[i * n + j] is A(rank * block + i, j). */
    for (long i = 0; i < block; i++)
        for (long j = 0; j < n; j++)
            a[i * n + j] = a_entry(rank * block + i, j, n);

    double start = MPI_Wtime();
    /* 1. Slot p, entry (i, j) = A(my row j, column p * block + i): tile p transposed. */
    for (int p = 0; p < size; p++)
        for (long i = 0; i < block; i++)
            for (long j = 0; j < block; j++)
                send[p * tile + i * block + j] = a[j * n + p * block + i];
    /* 2. One tile to and from every rank. */
    MPI_Alltoall(send, (int)tile, MPI_DOUBLE, recv, (int)tile, MPI_DOUBLE, MPI_COMM_WORLD);
    /* 3. Slot q holds B(my row i, column q * block + j) at (i, j). */
    for (int q = 0; q < size; q++)
        for (long i = 0; i < block; i++)
            for (long j = 0; j < block; j++)
                b[i * n + q * block + j] = recv[q * tile + i * block + j];
    double elapsed = MPI_Wtime() - start;

    long wrong = 0;
    for (long i = 0; i < block; i++)
        for (long j = 0; j < n; j++) {
            long row = rank * block + i;
            if (b[i * n + j] != a_entry(j, row, n) && wrong++ == 0)
                fprintf(stderr, "transpose: rank %d: B(%ld, %ld) is %.1f, expected %.1f\n", rank, row, j,
                        b[i * n + j], a_entry(j, row, n));
        }
    long wrong_total = 0;
    double slowest = 0.0;
    MPI_Reduce(&wrong, &wrong_total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("transpose: %d ranks, %ld x %ld matrix in %ld x %ld tiles: %ld wrong elements, %.4f s: %s\n", size, n,
               n, block, block, wrong_total, slowest, wrong_total ? "WRONG" : "ok");
    free(a);
    free(b);
    free(send);
    free(recv);
    MPI_Finalize();
    return wrong_total != 0;
}
