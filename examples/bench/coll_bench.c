/*
 * Collective benchmarks in the style of the OSU micro-benchmarks, written
 * against plain MPI so the same source runs under Hashi, Open MPI and MPICH.
 *
 *   coll_bench MODE [max_bytes [ms_per_size]]
 *
 *   barrier      MPI_Barrier
 *   bcast        MPI_Bcast of SIZE bytes from rank 0
 *   reduce       MPI_Reduce of SIZE bytes of MPI_FLOAT, MPI_SUM, to rank 0
 *   allreduce    MPI_Allreduce of SIZE bytes of MPI_FLOAT, MPI_SUM
 *   alltoall     MPI_Alltoall, SIZE bytes to and from every rank
 *   allgather    MPI_Allgather, SIZE bytes from every rank
 *   gather       MPI_Gather to rank 0, SIZE bytes from every rank
 *   scatter      MPI_Scatter from rank 0, SIZE bytes to every rank
 *   scan         MPI_Scan of SIZE bytes of MPI_FLOAT, MPI_SUM
 *   exscan       MPI_Exscan (as scan)
 *   reduce_scatter  MPI_Reduce_scatter_block, SIZE bytes of MPI_FLOAT to every rank
 *   ibarrier     MPI_Ibarrier + MPI_Wait
 *   ibcast       MPI_Ibcast + MPI_Wait (as bcast)
 *   iallreduce   MPI_Iallreduce + MPI_Wait (as allreduce)
 *   igather, iscatter, iscan  MPI_Igather, MPI_Iscatter, MPI_Iscan + MPI_Wait (as above)
 *   pbarrier     MPI_Start + MPI_Wait of one MPI_Barrier_init request
 *   alltoallv    MPI_Alltoallv, SIZE bytes to and from every rank (equal counts)
 *   gatherv      MPI_Gatherv to rank 0, SIZE bytes from every rank
 *   neighbor     MPI_Neighbor_alltoall on a periodic ring, SIZE bytes each way
 *   ialltoallv   MPI_Ialltoallv + MPI_Wait (as alltoallv)
 *   ineighbor    MPI_Ineighbor_alltoall + MPI_Wait (as neighbor)
 *   pneighbor    MPI_Start + MPI_Wait of one MPI_Neighbor_alltoall_init
 *                request per size (as neighbor; made at the first call)
 *
 * Sizes are 8 bytes and the powers of 4 from 16 bytes up to max_bytes
 * (default 4 MiB). For each size: warm-up calls, then each call is timed on
 * its own between barriers (so one call's tail does not overlap the next
 * call, as in osu_allreduce); the figure is the largest over the ranks of each
 * rank's mean time per call, in microseconds. Rank 0 prints "size value"
 * lines; lines starting with '#' are comments.
 *
 * The number of calls falls with the size, and is also capped so that one
 * size takes about a quarter of a second (the third argument, in ms):
 * with ranks oversubscribing the cores some implementations take tens of
 * milliseconds per call, and the full table must still finish.
 */
#include <mpi.h>
#if MPI_VERSION < 4 && defined(OPEN_MPI)
/* Open MPI 4's persistent collectives are its MPIX extension. */
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPI_Barrier_init MPIX_Barrier_init
#define MPI_Neighbor_alltoall_init MPIX_Neighbor_alltoall_init
#endif
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum bench { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLTOALL, ALLGATHER, IBARRIER, IBCAST, IALLREDUCE, PBARRIER,
             GATHER, SCATTER, SCAN, EXSCAN, REDUCE_SCATTER, IGATHER, ISCATTER, ISCAN, ALLTOALLV, GATHERV,
             NEIGHBOR, IALLTOALLV, INEIGHBOR, PNEIGHBOR };
static const char *const bench_names[] = {"barrier",  "bcast",   "reduce",     "allreduce", "alltoall",
                                          "allgather", "ibarrier", "ibcast",    "iallreduce", "pbarrier",
                                          "gather",   "scatter", "scan",       "exscan",    "reduce_scatter",
                                          "igather",  "iscatter", "iscan",      "alltoallv", "gatherv",
                                          "neighbor", "ialltoallv", "ineighbor", "pneighbor"};
static MPI_Request persistent = MPI_REQUEST_NULL;   /* pbarrier's, pneighbor's */
static size_t persistent_bytes;                     /* the size pneighbor's request was made for */
static MPI_Comm ring = MPI_COMM_NULL;               /* neighbor's */
static int *vcounts, *vdispls;                      /* alltoallv's and gatherv's, per rank */

/* Calls to time at one size: fewer for large messages, so a whole run stays
 * within a few seconds even with ranks oversubscribing the cores. */
static int iterations(size_t bytes, int ranks)
{
    size_t volume = bytes * (size_t)ranks; /* data a rank moves, roughly */
    if (volume <= 8192)
        return 1000;
    if (volume <= 131072)
        return 400;
    if (volume <= 2u << 20)
        return 100;
    if (volume <= 8u << 20)
        return 30;
    return 12;
}

static void run_once(enum bench b, char *send, char *recv, size_t bytes)
{
    int count = (int)bytes;
    MPI_Request req;
    switch (b) {
    case IBARRIER:
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case IBCAST:
        MPI_Ibcast(send, count, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case IALLREDUCE:
        MPI_Iallreduce(send, recv, count / (int)sizeof(float), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case IGATHER:
        MPI_Igather(send, count, MPI_CHAR, recv, count, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case ISCATTER:
        MPI_Iscatter(send, count, MPI_CHAR, recv, count, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case ISCAN:
        MPI_Iscan(send, recv, count / (int)sizeof(float), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case PBARRIER:
        MPI_Start(&persistent);
        MPI_Wait(&persistent, MPI_STATUS_IGNORE);
        break;
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(send, count, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(send, recv, count / (int)sizeof(float), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(send, recv, count / (int)sizeof(float), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(send, count, MPI_CHAR, recv, count, MPI_CHAR, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(send, count, MPI_CHAR, recv, count, MPI_CHAR, MPI_COMM_WORLD);
        break;
    case GATHER:
        MPI_Gather(send, count, MPI_CHAR, recv, count, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case SCATTER:
        MPI_Scatter(send, count, MPI_CHAR, recv, count, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case SCAN:
        MPI_Scan(send, recv, count / (int)sizeof(float), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case EXSCAN:
        MPI_Exscan(send, recv, count / (int)sizeof(float), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER:
        MPI_Reduce_scatter_block(send, recv, count / (int)sizeof(float), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLTOALLV:
    case IALLTOALLV:
    case GATHERV: {
        int ranks;
        MPI_Comm_size(MPI_COMM_WORLD, &ranks);
        for (int i = 0; i < ranks; i++) {
            vcounts[i] = count;
            vdispls[i] = i * count;
        }
        if (b == ALLTOALLV) {
            MPI_Alltoallv(send, vcounts, vdispls, MPI_CHAR, recv, vcounts, vdispls, MPI_CHAR, MPI_COMM_WORLD);
        } else if (b == IALLTOALLV) {
            MPI_Request r;
            MPI_Ialltoallv(send, vcounts, vdispls, MPI_CHAR, recv, vcounts, vdispls, MPI_CHAR, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else
            MPI_Gatherv(send, count, MPI_CHAR, recv, vcounts, vdispls, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    }
    case NEIGHBOR:
        MPI_Neighbor_alltoall(send, count, MPI_CHAR, recv, count, MPI_CHAR, ring);
        break;
    case INEIGHBOR: {
        MPI_Request r;
        MPI_Ineighbor_alltoall(send, count, MPI_CHAR, recv, count, MPI_CHAR, ring, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        break;
    }
    case PNEIGHBOR:
        if (persistent == MPI_REQUEST_NULL || persistent_bytes != bytes) {
            if (persistent != MPI_REQUEST_NULL)
                MPI_Request_free(&persistent);
            MPI_Neighbor_alltoall_init(send, count, MPI_CHAR, recv, count, MPI_CHAR, ring, MPI_INFO_NULL,
                                       &persistent);
            persistent_bytes = bytes;
        }
        MPI_Start(&persistent);
        MPI_Wait(&persistent, MPI_STATUS_IGNORE);
        break;
    }
}

/* Mean time per call on this rank, in microseconds. */
static double measure(enum bench b, char *send, char *recv, size_t bytes, int ranks, double budget)
{
    int iters = iterations(bytes, ranks), warm = iters / 10 + 2;
    double total = 0.0, t0 = MPI_Wtime(), per_call;
    /* The first two warm-up calls estimate the cost of one; every rank must
     * agree on the count, hence the maximum over the ranks. */
    run_once(b, send, recv, bytes);
    run_once(b, send, recv, bytes);
    double mine = (MPI_Wtime() - t0) / 2;
    MPI_Allreduce(&mine, &per_call, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (per_call * (iters + warm) > budget) {
        iters = (int)(budget / per_call) < 3 ? 3 : (int)(budget / per_call);
        warm = 2;
    }
    for (int i = 2; i < warm; i++)
        run_once(b, send, recv, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    if (b == BARRIER || b == IBARRIER || b == PBARRIER) {
        /* Back to back: a barrier between barriers would measure itself. */
        t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            run_once(b, send, recv, bytes);
        return (MPI_Wtime() - t0) * 1e6 / iters;
    }
    for (int i = 0; i < iters; i++) {
        t0 = MPI_Wtime();
        run_once(b, send, recv, bytes);
        total += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return total * 1e6 / iters;
}

int main(int argc, char **argv)
{
    int rank, ranks, which = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    for (int i = 0; argc > 1 && i < (int)(sizeof bench_names / sizeof *bench_names); i++)
        if (strcmp(argv[1], bench_names[i]) == 0)
            which = i;
    if (which < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: coll_bench barrier|bcast|reduce|allreduce|alltoall|allgather|ibarrier|ibcast|"
                            "iallreduce|pbarrier|gather|scatter|scan|exscan|reduce_scatter|igather|iscatter|iscan|"
                            "alltoallv|gatherv|neighbor|ialltoallv|ineighbor|pneighbor "
                            "[max_bytes [ms_per_size]]\n");
        MPI_Finalize();
        return 2;
    }
    size_t max = argc > 2 ? strtoul(argv[2], NULL, 0) : 4u << 20;
    if (max < 8)
        max = 8;
    enum bench b = (enum bench)which;
    double budget = (argc > 3 ? atof(argv[3]) : 250.0) / 1000.0;

    /* These move max bytes per peer (the roots' and reduce_scatter's buffers). */
    size_t per_rank = b == ALLTOALL || b == ALLGATHER || b == GATHER || b == SCATTER || b == REDUCE_SCATTER ||
                              b == IGATHER || b == ISCATTER || b == ALLTOALLV || b == GATHERV || b == IALLTOALLV
                          ? (size_t)ranks
                          : b == NEIGHBOR || b == INEIGHBOR || b == PNEIGHBOR ? 2 : 1;
    vcounts = malloc((size_t)ranks * sizeof *vcounts);
    vdispls = malloc((size_t)ranks * sizeof *vdispls);
    if (b == NEIGHBOR || b == INEIGHBOR || b == PNEIGHBOR) {
        int dims[1] = { ranks }, periods[1] = { 1 };
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    }
    char *send = malloc(max * per_rank), *recv = malloc(max * per_rank);
    /* Small floats, so repeated sums stay finite and no denormal path runs. */
    for (size_t i = 0; i < max * per_rank / sizeof(float); i++)
        ((float *)send)[i] = (float)(i % 7);
    memset(recv, 0, max * per_rank);

    if (rank == 0)
        printf("# coll_bench %s, %d ranks: bytes, microseconds per call (max over ranks of the mean)\n",
               bench_names[b], ranks);
    size_t sizes[32];
    int nsizes = 0;
    if (b == PBARRIER)
        MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
    if (b == BARRIER || b == IBARRIER || b == PBARRIER)
        sizes[nsizes++] = 0;
    else {
        sizes[nsizes++] = 8;
        for (size_t s = 16; s <= max && nsizes < 32; s *= 4)
            sizes[nsizes++] = s;
    }
    for (int k = 0; k < nsizes; k++) {
        double mine = measure(b, send, recv, sizes[k], ranks, budget), slowest = 0.0;
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("%zu %.2f\n", sizes[k], slowest);
            fflush(stdout);
        }
    }
    if (persistent != MPI_REQUEST_NULL)
        MPI_Request_free(&persistent);
    if (ring != MPI_COMM_NULL)
        MPI_Comm_free(&ring);
    free(vcounts);
    free(vdispls);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
