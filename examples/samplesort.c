/*
 * samplesort: sorting keys spread over all ranks, by regular sampling.
 *
 *   mpirun -n 4 examples/samplesort [keys_per_rank [seed]]     (default 20000, 1)
 *
 *   1. Each rank generates its keys (20-bit values, so some repeat), sorts them
 *      and picks size - 1 evenly spaced samples.
 *   2. MPI_Allgather gives every rank all the samples; every rank sorts them
 *      and takes the same size - 1 splitters.
 *   3. Each rank cuts its sorted keys at the splitters: bucket p goes to rank p.
 *      MPI_Alltoall exchanges the bucket sizes, so each rank can lay out its
 *      receive buffer; MPI_Alltoallv exchanges the keys.
 *   4. Each rank sorts what it received. Rank p now holds the p-th slice of the
 *      global order.
 *
 * The check: every rank's keys are sorted, and the last key of each rank is
 * at most the first key of the next rank that has any (MPI_Allgather of each
 * rank's smallest and largest key); the multiset of keys is unchanged: the
 * count, the sum and the sum of a mixing hash of all keys, reduced with
 * MPI_Allreduce before and after, agree.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A fingerprint of a multiset: counts and sums do not depend on the order of
 * the keys, and summing a hash of each key catches keys swapped for others
 * with the same plain sum. */
struct fingerprint {
    uint64_t count, sum, hash_sum;
};

static struct fingerprint fingerprint(const uint64_t *keys, size_t n)
{
    struct fingerprint f = {n, 0, 0};
    for (size_t i = 0; i < n; i++) {
        uint64_t state = keys[i];
        f.sum += keys[i];
        f.hash_sum += splitmix64(&state);
    }
    return f;
}

static struct fingerprint global_fingerprint(const uint64_t *keys, size_t n)
{
    struct fingerprint mine = fingerprint(keys, n), all;
    /* Unsigned sums wrap modulo 2^64 in every rank alike. */
    MPI_Allreduce(&mine, &all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

static int compare_keys(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long n = argc > 1 ? atol(argv[1]) : 20000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    if (n < size || n > 100000000) {
        if (rank == 0)
            fprintf(stderr, "samplesort: keys per rank must be between the number of ranks and 1e8 (got %ld)\n", n);
        MPI_Finalize();
        return 2;
    }

    uint64_t *keys = malloc((size_t)n * sizeof *keys);
    uint64_t state = seed * 1000003 + (uint64_t)rank;
    for (long i = 0; i < n; i++)
        keys[i] = splitmix64(&state) >> 44;
    struct fingerprint before = global_fingerprint(keys, (size_t)n);
    double start = MPI_Wtime();

    /* 1. Local sort and regular samples. */
    qsort(keys, (size_t)n, sizeof *keys, compare_keys);
    int nsamples = size - 1;
    uint64_t *samples = malloc((size_t)(nsamples > 0 ? nsamples : 1) * sizeof *samples);
    uint64_t *all_samples = malloc((size_t)(size * nsamples > 0 ? size * nsamples : 1) * sizeof *all_samples);
    for (int k = 0; k < nsamples; k++)
        samples[k] = keys[(long)(k + 1) * n / size];

    /* 2. Everyone gets every sample and picks the same splitters. */
    MPI_Allgather(samples, nsamples, MPI_UINT64_T, all_samples, nsamples, MPI_UINT64_T, MPI_COMM_WORLD);
    qsort(all_samples, (size_t)(size * nsamples), sizeof *all_samples, compare_keys);
    uint64_t *splitters = samples; /* reused: size - 1 values */
    for (int k = 0; k < nsamples; k++)
        splitters[k] = all_samples[k * size + size / 2];

    /* 3. Bucket p holds keys in (splitters[p-1], splitters[p]]; equal keys go
     * to the same rank. Exchange sizes, then keys. */
    int *send_counts = calloc((size_t)size, sizeof(int)), *send_displs = malloc((size_t)size * sizeof(int));
    int *recv_counts = malloc((size_t)size * sizeof(int)), *recv_displs = malloc((size_t)size * sizeof(int));
    for (long i = 0, p = 0; i < n; i++) {
        while (p < nsamples && keys[i] > splitters[p])
            p++;
        send_counts[p]++;
    }
    MPI_Alltoall(send_counts, 1, MPI_INT, recv_counts, 1, MPI_INT, MPI_COMM_WORLD);
    long received = 0;
    for (int p = 0, sent = 0; p < size; p++) {
        send_displs[p] = sent;
        sent += send_counts[p];
        recv_displs[p] = (int)received;
        received += recv_counts[p];
    }
    uint64_t *sorted = malloc((size_t)(received > 0 ? received : 1) * sizeof *sorted);
    MPI_Alltoallv(keys, send_counts, send_displs, MPI_UINT64_T, sorted, recv_counts, recv_displs, MPI_UINT64_T,
                  MPI_COMM_WORLD);

    /* 4. Sort the slice. (Merging the size sorted runs would be cheaper.) */
    qsort(sorted, (size_t)received, sizeof *sorted, compare_keys);
    double elapsed = MPI_Wtime() - start;

    /* Check: sorted here, ordered across ranks, the same multiset. */
    int wrong = 0;
    for (long i = 1; i < received; i++)
        if (sorted[i - 1] > sorted[i]) {
            fprintf(stderr, "samplesort: rank %d: keys %ld and %ld are out of order\n", rank, i - 1, i);
            wrong = 1;
            break;
        }
    /* (has keys, smallest, largest) of every rank */
    uint64_t range[3] = {received > 0, received > 0 ? sorted[0] : 0, received > 0 ? sorted[received - 1] : 0};
    uint64_t *ranges = malloc((size_t)size * sizeof range);
    MPI_Allgather(range, 3, MPI_UINT64_T, ranges, 3, MPI_UINT64_T, MPI_COMM_WORLD);
    int last = -1;
    for (int p = 0; p < size; p++) {
        if (!ranges[3 * p])
            continue;
        if (last >= 0 && ranges[3 * last + 2] > ranges[3 * p + 1]) {
            if (rank == 0)
                fprintf(stderr, "samplesort: rank %d's largest key %llu exceeds rank %d's smallest %llu\n", last,
                        (unsigned long long)ranges[3 * last + 2], p, (unsigned long long)ranges[3 * p + 1]);
            wrong = 1;
        }
        last = p;
    }
    struct fingerprint after = global_fingerprint(sorted, (size_t)received);
    if (after.count != before.count || after.sum != before.sum || after.hash_sum != before.hash_sum) {
        if (rank == 0)
            fprintf(stderr, "samplesort: the keys changed: count %llu -> %llu, sum %llx -> %llx, hash sum %llx -> %llx\n",
                    (unsigned long long)before.count, (unsigned long long)after.count,
                    (unsigned long long)before.sum, (unsigned long long)after.sum,
                    (unsigned long long)before.hash_sum, (unsigned long long)after.hash_sum);
        wrong = 1;
    }
    int any_wrong = 0;
    long largest = 0;
    MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Reduce(&received, &largest, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("samplesort: %d ranks, %llu keys, largest slice %.2fx the mean, %.4f s: %s\n", size,
               (unsigned long long)before.count, (double)largest * size / (double)before.count, elapsed,
               any_wrong ? "WRONG" : "sorted across ranks, same count and checksums: ok");

    free(keys);
    free(samples);
    free(all_samples);
    free(send_counts);
    free(send_displs);
    free(recv_counts);
    free(recv_displs);
    free(sorted);
    free(ranges);
    MPI_Finalize();
    return any_wrong;
}
