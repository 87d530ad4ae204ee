/*
 * barrier [ITERATIONS]: nobody leaves MPI_Barrier before the last rank has
 * entered it.
 *
 * Each rank in turn arrives late (it sleeps LATE_MS first) on MPI_COMM_WORLD,
 * on a dup and on a split; it then sends everyone its entry time (monotonic
 * clock) and host name. Every rank checks that it left the barrier after that
 * entry (when on the same host, where the clock is shared) and that its own
 * wait lasted at least about the sleep. A user message sent before a barrier
 * and received after it with wildcards must be that message (barrier traffic
 * stays off the user's context). Then ITERATIONS (default 2000) barriers in
 * a row, timed. Prints "rank R of S barrier ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/check.h"
#include "../util/suite.h"

#define LATE_MS 200
/* Slack for the start skew of the ranks (they leave the synchronising barrier
 * at slightly different times) and for clock reading. */
#define SLACK_MS 60

static int me, n;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

struct arrival {
    double entered;
    char host[MPI_MAX_PROCESSOR_NAME];
};

static void late_arrival(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char host[MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_processor_name(host, &len);

    for (int late = 0; late < size; late++) {
        CHECK_MPI(MPI_Barrier(comm));
        double start = now(), entered;
        if (rank == late)
            sleep_ms(LATE_MS);
        entered = now();
        CHECK_MPI(MPI_Barrier(comm));
        double left = now();

        struct arrival a;
        if (rank == late) {
            a.entered = entered;
            memcpy(a.host, host, sizeof a.host);
            for (int r = 0; r < size; r++)
                if (r != late)
                    CHECK_MPI(MPI_Send(&a, (int)sizeof a, MPI_BYTE, r, 1, comm));
            continue;
        }
        CHECK_MPI(MPI_Recv(&a, (int)sizeof a, MPI_BYTE, late, 1, comm, MPI_STATUS_IGNORE));
        if (strcmp(a.host, host) == 0)
            CHECK(left >= a.entered, "%s: left the barrier %.6f s before rank %d (late) entered it", what,
                  a.entered - left, late);
        CHECK(left - start >= (LATE_MS - SLACK_MS) * 1e-3,
              "%s: rank %d slept %d ms before entering, but this rank waited only %.1f ms", what, late, LATE_MS,
              (left - start) * 1e3);
    }
}

/* A user message crossing a barrier is untouched by it. */
static void user_traffic_across(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int out[2] = { 4242, rank }, in[2] = { -1, -1 };
    MPI_Request req;
    MPI_Status st;
    CHECK_MPI(MPI_Isend(out, 2, MPI_INT, (rank + 1) % size, 0, comm, &req));
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Recv(in, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
    int left = (rank - 1 + size) % size;
    CHECK(in[0] == 4242 && in[1] == left && st.MPI_SOURCE == left && st.MPI_TAG == 0,
          "%s: the message received after two barriers is (%d, %d) from %d tag %d", what, in[0], in[1],
          st.MPI_SOURCE, st.MPI_TAG);
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int flag = 1;
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "%s: a barrier left a message a user receive can see", what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int iterations = argc > 1 ? atoi(argv[1]) : 500;

    CHECK_MPI(MPI_Barrier(MPI_COMM_SELF));
    MPI_Comm dup, parity;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &parity));

    late_arrival(MPI_COMM_WORLD, "world");
    late_arrival(dup, "dup");
    late_arrival(parity, "parity split");
    user_traffic_across(MPI_COMM_WORLD, "world");
    user_traffic_across(parity, "parity split");

    /* barriers on different communicators interleaved */
    for (int i = 0; i < 100; i++) {
        CHECK_MPI(MPI_Barrier(i % 3 == 0 ? MPI_COMM_WORLD : i % 3 == 1 ? dup : parity));
    }

    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; i++)
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double elapsed = MPI_Wtime() - t0;
    if (me == 0)
        fprintf(stderr, "barrier: %d ranks, %d barriers, %.2f us each\n", n, iterations,
                iterations ? elapsed * 1e6 / iterations : 0.0);

    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&parity));
    report_ok();
    MPI_Finalize();
    return 0;
}
