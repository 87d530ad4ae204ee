/*
 * The DIMMnet paper's Figure 5: one-way bandwidth of eager messages from 64 B
 * to 64 KiB, BOTF-only against PUSH-only (docs/dimmnet.md). A plain MPI
 * program; the device's path is chosen by the environment, so the plot
 * script (dimmnet_fig5.sh) runs it twice:
 *   BOTF only: HASHI_DIMMNET_PUSH_MIN=1g   (one block up to BOTF_MAX, then packets)
 *   PUSH only: HASHI_DIMMNET_PUSH_MIN=1    (every message PUSHed into a receive buffer)
 * both with HASHI_DIMMNET_EAGER_MAX=64k and HASHI_DIMMNET_RECV_BUF_SIZE=64k so
 * every size stays eager. Rank 0 streams WINDOW messages, rank 1 answers one
 * byte; best of REPS runs of ITER windows per size.
 *   mpirun -n 2 examples/bench/dimmnet_fig5 [label]   prints "size MB/s" lines
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 32
#define REPS 5

static const int sizes[] = { 64, 128, 256, 464, 512, 800, 1024, 2048, 4096, 8192, 16384, 32768, 65536 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "dimmnet_fig5: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *label = argc > 1 ? argv[1] : "";
    char *buf = malloc(65536 * (size_t)WINDOW);
    memset(buf, 1, 65536 * (size_t)WINDOW);
    MPI_Request rq[WINDOW];
    char ack = 0;
    if (rank == 0)
        printf("# %s\n# size MB/s\n", label);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int n = sizes[s];
        int iter = n <= 4096 ? 400 : 100;
        double best = 0;
        for (int rep = 0; rep < REPS; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int it = 0; it < iter; it++) {
                if (rank == 0) {
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Isend(buf + (size_t)w * 65536, n, MPI_BYTE, 1, w, MPI_COMM_WORLD, &rq[w]);
                    MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
                    MPI_Recv(&ack, 1, MPI_BYTE, 1, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Irecv(buf + (size_t)w * 65536, n, MPI_BYTE, 0, w, MPI_COMM_WORLD, &rq[w]);
                    MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
                    MPI_Send(&ack, 1, MPI_BYTE, 0, 999, MPI_COMM_WORLD);
                }
            }
            double t = MPI_Wtime() - t0;
            double mbs = (double)n * WINDOW * iter / t / 1e6;
            if (mbs > best)
                best = mbs;
        }
        if (rank == 0)
            printf("%d %.1f\n", n, best);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
