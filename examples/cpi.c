/*
 * cpi: pi as the integral of 4 / (1 + x^2) over [0, 1], by the midpoint rule.
 *
 *   mpirun -n 4 examples/cpi [intervals]     (default 1000000)
 *
 * Rank 0 chooses the number of intervals and broadcasts it (MPI_Bcast); every
 * rank sums the midpoints i = rank, rank + size, ... (a cyclic distribution,
 * so the work is balanced for any size); MPI_Reduce adds the partial sums on
 * rank 0, which compares the result with M_PI.
 *
 * The tolerance follows from the method: the composite midpoint rule's error
 * is about h^2 / 24 * (f'(1) - f'(0)) = -h^2 / 12 for this integrand, with
 * h = 1 / intervals, so h^2 / 6 bounds it; the rounding of the n-term sum adds
 * at most about n * 4 * DBL_EPSILON.
 */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static double integrand(double x)
{
    return 4.0 / (1.0 + x * x);
}

int main(int argc, char **argv)
{
    int rank, size;
    long long intervals = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Only rank 0 reads the input, as if it came from a user or a file. */
    if (rank == 0) {
        intervals = argc > 1 ? atoll(argv[1]) : 1000000;
        if (intervals < 1) {
            fprintf(stderr, "cpi: the number of intervals must be positive (got '%s')\n", argv[1]);
            intervals = -1;
        }
    }
    MPI_Bcast(&intervals, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (intervals < 1) {
        MPI_Finalize();
        return 2;
    }

    double start = MPI_Wtime();
    double h = 1.0 / (double)intervals, partial = 0.0, pi = 0.0;
    for (long long i = rank; i < intervals; i += size)
        partial += integrand(h * ((double)i + 0.5));
    partial *= h;
    MPI_Reduce(&partial, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double elapsed = MPI_Wtime() - start;

    int status = 0;
    if (rank == 0) {
        double error = fabs(pi - M_PI);
        double tolerance = h * h / 6.0 + (double)intervals * 4.0 * DBL_EPSILON;
        int ok = error <= tolerance;
        printf("cpi: %d ranks, %lld intervals: pi is about %.16f, error %.2e (tolerance %.2e), %.3f s: %s\n",
               size, intervals, pi, error, tolerance, elapsed, ok ? "ok" : "WRONG");
        status = ok ? 0 : 1;
    }
    MPI_Finalize();
    return status;
}
