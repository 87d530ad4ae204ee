/*
 * checksum: checksums of a data set spread over the ranks, computed with
 * reductions and compared with the same values computed serially.
 *
 *   mpirun -n 4 examples/checksum [words_per_rank [seed]]     (default 100000, 1)
 *
 * Rank r holds words w(r, 0 .. n-1) of 32 bits, from a hash of (seed, r, i),
 * so any rank can also compute any other rank's data. Think of the ranks'
 * blocks as the rows of a table. MPI_Allreduce computes, for every column i:
 *   - the sum of the words (MPI_UINT64_T, MPI_SUM),
 *   - their exclusive or (MPI_UINT32_T, MPI_BXOR, in place: the result
 *     replaces the rank's own words),
 *   - the largest word seen as a signed int (MPI_INT, MPI_MAX),
 *   - the smallest word and the lowest rank holding it (MPI_2INT, MPI_MINLOC),
 * and for the whole table the grand total and the overall minimum with its
 * global position (MPI_LONG_INT, MPI_MINLOC): vectors of n elements and single
 * values, so both the long-message and the short-message algorithms run.
 * Every rank checks every result against its own serial computation.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t word(uint64_t seed, int rank, long i)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + ((uint64_t)rank << 32) + (uint64_t)i;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* The value used by MAX (signed, so negative numbers appear) and MINLOC (non-negative, 31 bits). */
static int as_signed(uint32_t w) { return (int)(int32_t)w; }
static int as_magnitude(uint32_t w) { return (int)(w >> 1); }

struct int_loc { int value, rank; };     /* layout of MPI_2INT */
struct long_loc { long value; int at; }; /* layout of MPI_LONG_INT */

static long mismatch(const char *what, long i, long long got, long long want, int rank)
{
    fprintf(stderr, "checksum: rank %d: %s at %ld is %lld, expected %lld\n", rank, what, i, got, want);
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long n = argc > 1 ? atol(argv[1]) : 100000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    if (n < 1 || (long long)n * size > 1LL << 31) {
        if (rank == 0)
            fprintf(stderr, "checksum: need 1 <= words per rank and a total below 2^31 (got %ld)\n", n);
        MPI_Finalize();
        return 2;
    }

    uint64_t *sums = malloc((size_t)n * sizeof *sums), *mine64 = malloc((size_t)n * sizeof *mine64);
    uint32_t *parity = malloc((size_t)n * sizeof *parity);
    int *signed_words = malloc((size_t)n * sizeof *signed_words), *maxima = malloc((size_t)n * sizeof *maxima);
    struct int_loc *locs = malloc((size_t)n * sizeof *locs), *minima = malloc((size_t)n * sizeof *minima);
    struct long_loc low = {0, 0}, lowest;
    uint64_t total = 0, grand_total;
    for (long i = 0; i < n; i++) {
        uint32_t w = word(seed, rank, i);
        mine64[i] = w;
        parity[i] = w;
        signed_words[i] = as_signed(w);
        locs[i] = (struct int_loc){as_magnitude(w), rank};
        total += w;
        if (i == 0 || as_magnitude(w) < low.value)
            low = (struct long_loc){as_magnitude(w), (int)(rank * n + i)};
    }

    double start = MPI_Wtime();
    MPI_Allreduce(mine64, sums, (int)n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, parity, (int)n, MPI_UINT32_T, MPI_BXOR, MPI_COMM_WORLD);
    MPI_Allreduce(signed_words, maxima, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(locs, minima, (int)n, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    MPI_Allreduce(&total, &grand_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&low, &lowest, 1, MPI_LONG_INT, MPI_MINLOC, MPI_COMM_WORLD);
    double elapsed = MPI_Wtime() - start;

    /* The same, serially: columns over the ranks in order; MINLOC keeps the
     * lowest index among equal minima, hence the strict comparisons. */
    long wrong = 0;
    uint64_t serial_total = 0;
    struct long_loc serial_low = {0, -1};
    for (long i = 0; i < n; i++) {
        uint64_t sum = 0;
        uint32_t x = 0;
        int max = 0;
        struct int_loc min = {0, -1};
        for (int r = 0; r < size; r++) {
            uint32_t w = word(seed, r, i);
            sum += w;
            x ^= w;
            if (r == 0 || as_signed(w) > max)
                max = as_signed(w);
            if (r == 0 || as_magnitude(w) < min.value)
                min = (struct int_loc){as_magnitude(w), r};
            if (serial_low.at < 0 || as_magnitude(w) < serial_low.value ||
                (as_magnitude(w) == serial_low.value && r * n + i < serial_low.at))
                serial_low = (struct long_loc){as_magnitude(w), (int)(r * n + i)};
        }
        serial_total += sum;
        if (sums[i] != sum)
            wrong += mismatch("column sum", i, (long long)sums[i], (long long)sum, rank);
        if (parity[i] != x)
            wrong += mismatch("column xor", i, parity[i], x, rank);
        if (maxima[i] != max)
            wrong += mismatch("column maximum", i, maxima[i], max, rank);
        if (minima[i].value != min.value)
            wrong += mismatch("column minimum", i, minima[i].value, min.value, rank);
        else if (minima[i].rank != min.rank)
            wrong += mismatch("rank of the column minimum", i, minima[i].rank, min.rank, rank);
        if (wrong > 5)
            break;
    }
    if (!wrong && grand_total != serial_total)
        wrong += mismatch("grand total", 0, (long long)grand_total, (long long)serial_total, rank);
    if (!wrong && (lowest.value != serial_low.value || lowest.at != serial_low.at))
        wrong += mismatch("position of the smallest word", 0, lowest.at, serial_low.at, rank);

    long wrong_ranks = 0, is_wrong = wrong != 0;
    MPI_Reduce(&is_wrong, &wrong_ranks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("checksum: %d ranks, %ld words each: total %llu, smallest %ld at %d, %.4f s; %s\n", size, n,
               (unsigned long long)grand_total, lowest.value, lowest.at, elapsed,
               wrong_ranks ? "differs from the serial values: WRONG" : "equals the serial values on every rank: ok");
    free(sums);
    free(mine64);
    free(parity);
    free(signed_words);
    free(maxima);
    free(locs);
    free(minima);
    MPI_Finalize();
    return wrong_ranks != 0 || wrong != 0;
}
