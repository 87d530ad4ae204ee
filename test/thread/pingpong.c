/*
 * pingpong [rate [threads]]: 4 threads per rank; thread t ping-pongs with
 * thread t of the partner rank (0-1, 2-3, ...), alternately over its own
 * MPI_Comm_dup (tag 0) and over MPI_COMM_WORLD with its own tag, at eager
 * and rendezvous sizes. Every byte, the source, the tag and the count are
 * checked (MPI_ERROR is undefined after MPI_Recv), so a message delivered to
 * the wrong thread, or two threads' data mixed, fails.
 * `rate` instead times 8-byte ping-pongs on every thread and prints the
 * messages per second of the whole rank pair (docs/threads.md).
 */
#include "mt_util.h"

#include <time.h>

#define THREADS_MAX 16
#define WORLD_TAG_BASE 100

static int rank, size, partner, nthreads = 4;
static MPI_Comm comms[THREADS_MAX];
static long rate_rounds = 20000;
static double rate_seconds[THREADS_MAX];

static void check_status(const MPI_Status *st, int source, int tag, MPI_Datatype type, int count, int thread)
{
    int got = -1;
    CHECK(st->MPI_SOURCE == source, "thread %d: MPI_SOURCE %d, expected %d", thread, st->MPI_SOURCE, source);
    CHECK(st->MPI_TAG == tag, "thread %d: MPI_TAG %d, expected %d", thread, st->MPI_TAG, tag);
    CHECK_MPI(MPI_Get_count(st, type, &got));
    CHECK(got == count, "thread %d: count %d, expected %d", thread, got, count);
}

static void exchange(int t, int round, size_t bytes, unsigned char *out, unsigned char *in)
{
    /* Even rounds on the thread's own communicator, odd ones on WORLD. */
    MPI_Comm comm = round % 2 == 0 ? comms[t] : MPI_COMM_WORLD;
    int tag = round % 2 == 0 ? 0 : WORLD_TAG_BASE + t;
    int leader = rank < partner;
    MPI_Status st;
    for (size_t i = 0; i < bytes; i++)
        out[i] = mt_pattern(rank, t, round, i);
    memset(in, 0xee, bytes);
    if (leader) {
        CHECK_MPI(MPI_Send(out, (int)bytes, MPI_BYTE, partner, tag, comm));
        CHECK_MPI(MPI_Recv(in, (int)bytes, MPI_BYTE, partner, tag, comm, &st));
    } else {
        CHECK_MPI(MPI_Recv(in, (int)bytes, MPI_BYTE, partner, tag, comm, &st));
        CHECK_MPI(MPI_Send(out, (int)bytes, MPI_BYTE, partner, tag, comm));
    }
    check_status(&st, partner, tag, MPI_BYTE, (int)bytes, t);
    for (size_t i = 0; i < bytes; i++)
        CHECK(in[i] == mt_pattern(partner, t, round, i),
              "thread %d round %d (%zu bytes): byte %zu is %u, expected %u (another thread's data?)", t, round,
              bytes, i, in[i], mt_pattern(partner, t, round, i));
}

static void *pingpong_thread(int t)
{
    static const size_t sizes[] = { 8, 4096, 70000 };
    static const int rounds[] = { 120, 16, 4 };
    unsigned char *out = malloc(70000), *in = malloc(70000);
    CHECK(out && in, "out of memory");
    int round = 0;
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < rounds[s]; k++)
            exchange(t, round++, sizes[s], out, in);
    free(out);
    free(in);
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *rate_thread(int t)
{
    char buf[8] = { 0 };
    int leader = rank < partner;
    double start = now();
    for (long i = 0; i < rate_rounds; i++) {
        if (leader) {
            MPI_Send(buf, 8, MPI_BYTE, partner, 0, comms[t]);
            MPI_Recv(buf, 8, MPI_BYTE, partner, 0, comms[t], MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 8, MPI_BYTE, partner, 0, comms[t], MPI_STATUS_IGNORE);
            MPI_Send(buf, 8, MPI_BYTE, partner, 0, comms[t]);
        }
    }
    rate_seconds[t] = now() - start;
    return NULL;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, &rank, &size);
    partner = rank ^ 1;
    int rate = argc > 1 && strcmp(argv[1], "rate") == 0;
    if (argc > 2)
        nthreads = atoi(argv[2]);
    CHECK(nthreads >= 1 && nthreads <= THREADS_MAX, "threads: 1 .. %d", THREADS_MAX);
    for (int t = 0; t < nthreads; t++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    if (rate) {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        mt_run(nthreads, rate_thread);
        double slowest = 0;
        for (int t = 0; t < nthreads; t++)
            slowest = rate_seconds[t] > slowest ? rate_seconds[t] : slowest;
        if (rank == 0)
            printf("# %d threads x 8-byte ping-pong: %.0f messages/s per rank pair (%.2f us per round trip and thread)\n",
                   nthreads, 2.0 * (double)rate_rounds * nthreads / slowest, 1e6 * slowest / (double)rate_rounds);
    } else {
        mt_run(nthreads, pingpong_thread);
    }
    for (int t = 0; t < nthreads; t++)
        CHECK_MPI(MPI_Comm_free(&comms[t]));
    return mt_finish(rank, size);
}
