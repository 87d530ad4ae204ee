/*
 * Point-to-point benchmarks in the style of the OSU micro-benchmarks, written
 * against plain MPI so the same source runs under Hashi, Open MPI and MPICH.
 *
 *   p2p_bench latency [max_bytes]   ping-pong, half round trip (us)
 *   p2p_bench bw      [max_bytes]   window of 64 Isends, one way (MB/s)
 *   p2p_bench bibw    [max_bytes]   windows both ways at once (MB/s)
 *   p2p_bench mrate   [max_bytes]   messages per second, window of 64
 *   p2p_bench paper   [max_bytes]   DIMMnet paper's ping-pong: Irecv, Barrier, Send, Wait
 *   p2p_bench prelat  [max_bytes]   ping-pong with the next receive posted before the send
 *                                   (receive-first every time: Irecv, Send, Wait)
 *   p2p_bench plat    [max_bytes]   ping-pong with persistent requests made once per size
 *                                   (Start of the receive, then of the send, Waitall)
 *   p2p_bench pbw     [max_bytes]   the bw window with 64 persistent sends and receives
 *                                   made once per size, one Startall per window
 *   p2p_bench part    [max_bytes]   MPI-4 partitioned ping-pong, 8 partitions of `size`
 *                                   bytes each way: time per epoch (us), half the round
 *                                   trip (a fourth argument: the partitions)
 * A third argument names rank 0's partner (default 1), e.g. a rank on another
 * node. The pair measures; any further ranks just wait in a receive (the
 * oversubscription case: they must not slow the pair down, and the pair's
 * messages must wake a waiting partner). The pair talks on a communicator
 * of its own: a barrier on MPI_COMM_WORLD would wait for the bystanders,
 * which sit in their receive until the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

static MPI_Comm pair; /* rank 0 and its partner, ranks 0 and 1 in it */

static int iterations(size_t bytes, int base)
{
    if (bytes >= (1u << 20)) return base / 20 > 10 ? base / 20 : 10;
    if (bytes >= (1u << 16)) return base / 5;
    return base;
}

static double latency(char *buf, size_t bytes, int rank, int iters, int paper)
{
    int warm = iters / 10 + 1;
    double t0 = 0;
    MPI_Request req;
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm) {
            MPI_Barrier(pair);
            t0 = MPI_Wtime();
        }
        if (paper) {
            /* The DIMMnet paper's ping-pong: receive posted first, synchronised. */
            MPI_Irecv(buf, (int)bytes, MPI_CHAR, 1 - rank, 1, pair, &req);
            MPI_Barrier(pair);
            if (rank == 0) {
                MPI_Send(buf, (int)bytes, MPI_CHAR, 1, 1, pair);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)bytes, MPI_CHAR, 0, 1, pair);
            }
        } else if (rank == 0) {
            MPI_Send(buf, (int)bytes, MPI_CHAR, 1, 1, pair);
            MPI_Recv(buf, (int)bytes, MPI_CHAR, 1, 1, pair, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)bytes, MPI_CHAR, 0, 1, pair, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_CHAR, 0, 1, pair);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

/* One-way (bidir = 0) or both-way windows; returns seconds per window. */
static double window(char *sbuf, char *rbuf, size_t bytes, int rank, int iters, int bidir)
{
    MPI_Request reqs[2 * WINDOW];
    int warm = iters / 10 + 1;
    double t0 = 0;
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm) {
            MPI_Barrier(pair);
            t0 = MPI_Wtime();
        }
        int n = 0;
        int sender = rank == 0 || bidir, receiver = rank == 1 || bidir;
        if (receiver)
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rbuf + (size_t)w * bytes, (int)bytes, MPI_CHAR, 1 - rank, 2, pair, &reqs[n++]);
        if (sender)
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sbuf + (size_t)w * bytes, (int)bytes, MPI_CHAR, 1 - rank, 2, pair, &reqs[n++]);
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        /* The receiver's ack closes the window, as in osu_bw. */
        if (!bidir) {
            if (rank == 0)
                MPI_Recv(NULL, 0, MPI_CHAR, 1, 3, pair, MPI_STATUS_IGNORE);
            else
                MPI_Send(NULL, 0, MPI_CHAR, 0, 3, pair);
        }
    }
    return (MPI_Wtime() - t0) / iters;
}

/* Ping-pong in which each side posts its next receive before it sends, as
 * codes that post receives early do (two receive buffers in turn): every
 * message finds its receive posted, and posted before the message it
 * answers left. The receive left posted at the end is cancelled. */
static double preposted_latency(char *sbuf, char *rbuf, size_t bytes, int rank, int iters)
{
    int warm = iters / 10 + 1, other = 1 - rank;
    double t0 = 0;
    MPI_Request req;
    MPI_Irecv(rbuf, (int)bytes, MPI_CHAR, other, 1, pair, &req);
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm) {
            /* Not a barrier: its messages would come between a posted receive and its message. */
            t0 = MPI_Wtime();
        }
        char *next = rbuf + (size_t)((i + 1) & 1) * bytes;
        if (rank == 0) {
            MPI_Send(sbuf, (int)bytes, MPI_CHAR, 1, 1, pair);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Irecv(next, (int)bytes, MPI_CHAR, other, 1, pair, &req);
        } else {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Irecv(next, (int)bytes, MPI_CHAR, other, 1, pair, &req);
            MPI_Send(sbuf, (int)bytes, MPI_CHAR, 0, 1, pair);
        }
    }
    double t = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
    MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Barrier(pair);
    return t;
}

/* Persistent ping-pong: each side starts its receive, then (rank 0 at once,
 * rank 1 once the message is in) its send; half the round trip (us). */
static double persistent_latency(char *sbuf, char *rbuf, size_t bytes, int rank, int iters)
{
    MPI_Request reqs[2];
    int other = 1 - rank;
    MPI_Recv_init(rbuf, (int)bytes, MPI_CHAR, other, 1, pair, &reqs[0]);
    MPI_Send_init(sbuf, (int)bytes, MPI_CHAR, other, 1, pair, &reqs[1]);
    int warm = iters / 10 + 1;
    double t0 = 0;
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm) {
            MPI_Barrier(pair);
            t0 = MPI_Wtime();
        }
        MPI_Start(&reqs[0]);
        if (rank == 1)
            MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
        MPI_Start(&reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    }
    double t = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    return t;
}

/* The bw window with persistent requests: seconds per window. */
static double persistent_window(char *sbuf, char *rbuf, size_t bytes, int rank, int iters)
{
    MPI_Request reqs[WINDOW];
    for (int w = 0; w < WINDOW; w++) {
        if (rank == 1)
            MPI_Recv_init(rbuf + (size_t)w * bytes, (int)bytes, MPI_CHAR, 0, 2, pair, &reqs[w]);
        else
            MPI_Send_init(sbuf + (size_t)w * bytes, (int)bytes, MPI_CHAR, 1, 2, pair, &reqs[w]);
    }
    int warm = iters / 10 + 1;
    double t0 = 0;
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm) {
            MPI_Barrier(pair);
            t0 = MPI_Wtime();
        }
        MPI_Startall(WINDOW, reqs);
        MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
        if (rank == 0)
            MPI_Recv(NULL, 0, MPI_CHAR, 1, 3, pair, MPI_STATUS_IGNORE);
        else
            MPI_Send(NULL, 0, MPI_CHAR, 0, 3, pair);
    }
    double t = (MPI_Wtime() - t0) / iters;
    for (int w = 0; w < WINDOW; w++)
        MPI_Request_free(&reqs[w]);
    return t;
}

/* Partitioned ping-pong: persistent requests both ways, made once; rank 1
 * readies its partitions once rank 0's epoch is in. Per epoch: half. */
static int PART_N = 8;   /* part: argv[4] */
#if MPI_VERSION >= 4
#define HAVE_PARTITIONED 1
static double part_epoch(char *sbuf, char *rbuf, size_t bytes, int rank, int iters)
{
    MPI_Request sreq, rreq;
    int other = 1 - rank;
    MPI_Psend_init(sbuf, PART_N, (int)bytes, MPI_CHAR, other, 5, pair, MPI_INFO_NULL, &sreq);
    MPI_Precv_init(rbuf, PART_N, (int)bytes, MPI_CHAR, other, 5, pair, MPI_INFO_NULL, &rreq);
    int warm = iters / 10 + 1;
    double t0 = 0;
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm) {
            MPI_Barrier(pair);
            t0 = MPI_Wtime();
        }
        MPI_Start(&rreq);
        MPI_Start(&sreq);
        if (rank == 1)
            MPI_Wait(&rreq, MPI_STATUS_IGNORE);
        for (int p = 0; p < PART_N; p++)
            MPI_Pready(p, sreq);
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        if (rank == 0)
            MPI_Wait(&rreq, MPI_STATUS_IGNORE);
    }
    double t = (MPI_Wtime() - t0) / iters / 2 * 1e6;
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
    return t;
}
#else
/* An MPI-3 library (Open MPI 4.1) has no partitioned communication: the mode says so and measures nothing. */
#define HAVE_PARTITIONED 0
static double part_epoch(char *sbuf, char *rbuf, size_t bytes, int rank, int iters)
{
    (void)sbuf, (void)rbuf, (void)bytes, (void)rank, (void)iters;
    return -1.0;
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "latency";
    size_t max = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)1 << 22;
    int partner = argc > 3 ? atoi(argv[3]) : 1;
    if (size < 2 || partner < 1 || partner >= size) {
        if (rank == 0) fprintf(stderr, "p2p_bench needs at least 2 ranks, and a partner of rank 0 among them\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int is_window = strcmp(mode, "bw") == 0 || strcmp(mode, "bibw") == 0 || strcmp(mode, "mrate") == 0 ||
                    strcmp(mode, "pbw") == 0;
    int is_part = strcmp(mode, "part") == 0;
    if (is_part && !HAVE_PARTITIONED) {
        if (rank == 0)
            printf("# part: this MPI has no partitioned communication (MPI-4)\n");
        MPI_Finalize();
        return 0;
    }
    if (is_part && argc > 4 && atoi(argv[4]) > 0)
        PART_N = atoi(argv[4]);
    size_t span = is_window ? max * WINDOW : is_part ? max * (size_t)PART_N : strcmp(mode, "prelat") == 0 ? 2 * max : max;
    char *sbuf = malloc(span ? span : 1), *rbuf = malloc(span ? span : 1);
    memset(sbuf, 'a', span ? span : 1);
    memset(rbuf, 'b', span ? span : 1);

    int measuring = rank == 0 || rank == partner;
    MPI_Comm_split(MPI_COMM_WORLD, measuring ? 0 : MPI_UNDEFINED, rank, &pair);
    if (!measuring) {
        /* Bystanders wait in a receive that the end of the run satisfies. */
        MPI_Recv(NULL, 0, MPI_CHAR, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Comm_rank(pair, &rank);
        if (rank == 0) {
            if (strcmp(mode, "latency") == 0 || strcmp(mode, "paper") == 0 || strcmp(mode, "plat") == 0 ||
                strcmp(mode, "prelat") == 0)
                printf("# %s\n# %-10s %12s\n", mode, "Size", "Latency(us)");
            else if (is_part)
                printf("# %s: %d partitions of Size bytes\n# %-10s %12s\n", mode, PART_N, "Size", "Epoch(us)");
            else if (strcmp(mode, "mrate") == 0)
                printf("# %s\n# %-10s %12s\n", mode, "Size", "Messages/s");
            else
                printf("# %s\n# %-10s %12s\n", mode, "Size", "MB/s");
        }
        for (size_t bytes = strcmp(mode, "mrate") == 0 ? 1 : 0; bytes <= max;
             bytes = bytes ? bytes * 2 : 1) {
            double value;
            if (strcmp(mode, "latency") == 0 || strcmp(mode, "paper") == 0) {
                value = latency(sbuf, bytes, rank, iterations(bytes, 10000), strcmp(mode, "paper") == 0);
            } else if (strcmp(mode, "prelat") == 0) {
                value = preposted_latency(sbuf, rbuf, bytes, rank, iterations(bytes, 10000));
            } else if (strcmp(mode, "plat") == 0) {
                value = persistent_latency(sbuf, rbuf, bytes, rank, iterations(bytes, 10000));
            } else if (strcmp(mode, "pbw") == 0) {
                if (bytes == 0) continue;
                value = WINDOW * (double)bytes / persistent_window(sbuf, rbuf, bytes, rank, iterations(bytes, 200)) / 1e6;
            } else if (is_part) {
                if (bytes == 0) continue;
                value = part_epoch(sbuf, rbuf, bytes, rank, iterations(bytes * (size_t)PART_N, 5000));
            } else if (is_window) {
                if (bytes == 0) continue;
                double t = window(sbuf, rbuf, bytes, rank, iterations(bytes, 200), strcmp(mode, "bibw") == 0);
                double msgs = WINDOW * (strcmp(mode, "bibw") == 0 ? 2.0 : 1.0);
                value = strcmp(mode, "mrate") == 0 ? msgs / t : msgs * (double)bytes / t / 1e6;
            } else {
                if (rank == 0) fprintf(stderr, "unknown mode %s\n", mode);
                MPI_Abort(MPI_COMM_WORLD, 2);
                return 2;
            }
            if (rank == 0) {
                printf("  %-10zu %12.2f\n", bytes, value);
                fflush(stdout);
            }
            if (bytes >= max)
                break;
        }
        if (rank == 0)
            for (int r = 1; r < size; r++)
                if (r != partner)
                    MPI_Send(NULL, 0, MPI_CHAR, r, 99, MPI_COMM_WORLD);
    }
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
