/*
 * Ping-pong latency and streaming bandwidth between ranks 0 and 1, checking
 * the data of the first exchange of each size.
 *
 *   dev_pingpong [latency-bytes [bandwidth-bytes]]      (defaults 8 and 1 MiB)
 *
 * Latency: half the round trip of MPI_Send / MPI_Recv, median of 11 batches
 * of 1000 (after a warm-up). Bandwidth: rank 0 streams windows of 16
 * MPI_Isend to rank 1, which answers each window with a zero-byte message;
 * best of 5 runs of 20 windows. Rank 0 prints
 *   latency <n> B: <median> us (best <b> us)
 *   bandwidth <n> B: <x> MB/s
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"

#define BATCHES 11
#define BATCH 1000
#define WINDOW 16
#define WINDOWS 20
#define RUNS 5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void latency(int rank, size_t n)
{
    unsigned char *buf = malloc(n ? n : 1);
    CHECK(buf, "out of memory");
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 3 + 1);
    int peer = 1 - rank;
    /* First round checked. */
    if (rank == 0) {
        CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
        memset(buf, 0, n);
        CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        memset(buf, 0, n);
        CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
    }
    for (size_t i = 0; i < n; i++)
        CHECK(buf[i] == (unsigned char)(i * 3 + 1), "ping-pong data wrong at byte %zu", i);
    double times[BATCHES];
    for (int b = -1; b < BATCHES; b++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < BATCH; i++) {
            if (rank == 0) {
                MPI_Send(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
            }
        }
        if (b >= 0)
            times[b] = (MPI_Wtime() - t0) / BATCH / 2 * 1e6;
    }
    qsort(times, BATCHES, sizeof *times, cmp_double);
    if (rank == 0)
        printf("latency %zu B: %.2f us (best %.2f us)\n", n, times[BATCHES / 2], times[0]);
    free(buf);
}

static void bandwidth(int rank, size_t n)
{
    unsigned char *bufs[WINDOW];
    for (int w = 0; w < WINDOW; w++) {
        bufs[w] = malloc(n);
        CHECK(bufs[w], "out of memory");
        for (size_t i = 0; i < n; i++)
            bufs[w][i] = rank == 0 ? (unsigned char)(i + (size_t)w) : 0;
    }
    double best = 0;
    for (int run = -1; run < RUNS; run++) {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = MPI_Wtime();
        for (int k = 0; k < WINDOWS; k++) {
            MPI_Request reqs[WINDOW];
            for (int w = 0; w < WINDOW; w++) {
                if (rank == 0)
                    CHECK_MPI(MPI_Isend(bufs[w], (int)n, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &reqs[w]));
                else
                    CHECK_MPI(MPI_Irecv(bufs[w], (int)n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &reqs[w]));
            }
            CHECK_MPI(MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE));
            if (rank == 0)
                CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            else
                CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 4, MPI_COMM_WORLD));
            if (run == -1 && k == 0 && rank == 1)
                for (int w = 0; w < WINDOW; w++)
                    for (size_t i = 0; i < n; i++)
                        CHECK(bufs[w][i] == (unsigned char)(i + (size_t)w), "streamed data wrong at byte %zu", i);
        }
        double mbs = (double)n * WINDOW * WINDOWS / (MPI_Wtime() - t0) / 1e6;
        if (run >= 0 && mbs > best)
            best = mbs;
    }
    if (rank == 0)
        printf("bandwidth %zu B: %.0f MB/s\n", n, best);
    for (int w = 0; w < WINDOW; w++)
        free(bufs[w]);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks");
    size_t lat_bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 8;
    size_t bw_bytes = argc > 2 ? strtoull(argv[2], NULL, 0) : 1u << 20;
    if (rank < 2) {
        latency(rank, lat_bytes);
        bandwidth(rank, bw_bytes);
    }
    MPI_Finalize();
    return 0;
}
