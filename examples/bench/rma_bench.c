/*
 * One-sided benchmarks in the style of the OSU one-sided micro-benchmarks
 * (passive target, MPI_Win_lock_all once, the target waiting in a barrier),
 * written against plain MPI so the same source runs under Hashi, Open MPI and
 * MPICH (run_bench.py rma).
 *
 *   rma_bench put_lat [max_bytes]   MPI_Put + MPI_Win_flush, a round trip (us)
 *   rma_bench get_lat [max_bytes]   MPI_Get + MPI_Win_flush (us)
 *   rma_bench put_bw  [max_bytes]   64 MPI_Puts then one flush, one way (MB/s)
 *   rma_bench acc_lat [max_bytes]   MPI_Accumulate (MPI_SUM, doubles) + flush (us)
 *   rma_bench fop_lat               MPI_Fetch_and_op (MPI_SUM, one long) + flush (us)
 *   rma_bench lock_lat [max_bytes]  MPI_Win_lock (exclusive) + MPI_Put + MPI_Win_unlock,
 *                                   no lock_all (us)
 *   rma_bench counter               every rank: exclusive lock of rank 0, get a long,
 *                                   flush, +1, put, unlock; us per increment (all ranks)
 *
 * Rank 0 is the origin, rank 1 the target (its window: MPI_Win_allocate, or
 * MPI_Win_create on malloc'd memory with a third argument "create");
 * any further ranks wait in the same barrier as the target.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

/* As p2p_bench: 2000 round trips, or 200 windows, fewer for large sizes. */
static int iterations(size_t bytes, int base)
{
    if (bytes >= (1u << 20)) return base / 20 > 10 ? base / 20 : 10;
    if (bytes >= (1u << 16)) return base / 5;
    return base;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "put_lat";
    size_t max = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)1 << 22;
    if (size < 2) {
        fprintf(stderr, "rma_bench needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int bw = strcmp(mode, "put_bw") == 0, acc = strcmp(mode, "acc_lat") == 0, fop = strcmp(mode, "fop_lat") == 0;
    int put = strcmp(mode, "put_lat") == 0, get = strcmp(mode, "get_lat") == 0;
    int lock = strcmp(mode, "lock_lat") == 0, counter = strcmp(mode, "counter") == 0;
    int create = argc > 3 && strcmp(argv[3], "create") == 0;
    if (!bw && !acc && !fop && !put && !get && !lock && !counter) {
        if (rank == 0) fprintf(stderr, "unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (fop || counter)
        max = sizeof(long);
    size_t span = bw ? max * WINDOW : max;
    char *buf = malloc(span ? span : 1);
    memset(buf, 1, span ? span : 1);
    void *base;
    MPI_Win win;
    if (create) {
        base = calloc(1, span ? span : 1);
        MPI_Win_create(base, (MPI_Aint)(span ? span : 1), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate((MPI_Aint)(span ? span : 1), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    }
    memset(base, 0, span ? span : 1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("# %s\n# %-10s %12s\n", mode, "Size", bw ? "MB/s" : "Latency(us)");
    if (counter) {
        int iters = 2000;
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            long v;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Get(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
            MPI_Win_flush(0, win);
            v++;
            MPI_Put(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
            MPI_Win_unlock(0, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        if (rank == 0) {
            long total = *(long *)base;
            printf("  %-10zu %12.2f%s\n", sizeof(long), t * 1e6 / iters / size,
                   total == (long)iters * size ? "" : "  (count wrong)");
        }
    } else {
        if (!lock)
            MPI_Win_lock_all(0, win);
        for (size_t bytes = acc || fop ? sizeof(double) : 1; bytes <= max; bytes *= 2) {
            int iters = iterations(bytes, bw ? 200 : 2000), warm = iters / 10 + 1;
            double t0 = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                long one = 1, old;
                for (int i = 0; i < iters + warm; i++) {
                    if (i == warm)
                        t0 = MPI_Wtime();
                    if (put)
                        MPI_Put(buf, (int)bytes, MPI_CHAR, 1, 0, (int)bytes, MPI_CHAR, win);
                    else if (get)
                        MPI_Get(buf, (int)bytes, MPI_CHAR, 1, 0, (int)bytes, MPI_CHAR, win);
                    else if (acc)
                        MPI_Accumulate(buf, (int)(bytes / sizeof(double)), MPI_DOUBLE, 1, 0,
                                       (int)(bytes / sizeof(double)), MPI_DOUBLE, MPI_SUM, win);
                    else if (fop)
                        MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, 0, MPI_SUM, win);
                    else if (lock) {
                        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
                        MPI_Put(buf, (int)bytes, MPI_CHAR, 1, 0, (int)bytes, MPI_CHAR, win);
                        MPI_Win_unlock(1, win);
                        continue;
                    }
                    else
                        for (int w = 0; w < WINDOW; w++)
                            MPI_Put(buf + (size_t)w * bytes, (int)bytes, MPI_CHAR, 1, (MPI_Aint)((size_t)w * bytes),
                                    (int)bytes, MPI_CHAR, win);
                    MPI_Win_flush(1, win);
                }
                double t = MPI_Wtime() - t0;
                double value = bw ? (double)bytes * WINDOW * iters / t / 1e6 : t * 1e6 / iters;
                printf("  %-10zu %12.2f\n", bytes, value);
                fflush(stdout);
            }
            MPI_Barrier(MPI_COMM_WORLD);   /* the target serves the origin while it waits here */
        }
        if (!lock)
            MPI_Win_unlock_all(win);
    }
    MPI_Win_free(&win);
    if (create)
        free(base);
    free(buf);
    MPI_Finalize();
    return 0;
}
