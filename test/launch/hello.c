/*
 * hello [EXPECTED_SIZE]: the foundation's environment calls, checked on every
 * rank, then one line "rank R of S" on stdout. The harness checks that the set
 * of lines names every rank exactly once (ranks cannot talk to each other yet).
 *
 * Checked: MPI_Initialized/MPI_Finalized before, during and after; the version
 * calls (also before MPI_Init, where the standard allows them); size and rank
 * of MPI_COMM_WORLD and MPI_COMM_SELF; MPI_Wtime monotonic and in seconds,
 * MPI_Wtick; MPI_Get_processor_name against gethostname; thread queries on
 * the main thread; the default error handler; the ABI version and info.
 */
#include <mpi.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../util/check.h"

static void check_init_state(int want_initialized, int want_finalized, const char *when)
{
    int flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == want_initialized, "MPI_Initialized %s gave %d, expected %d", when, flag, want_initialized);
    flag = -1;
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == want_finalized, "MPI_Finalized %s gave %d, expected %d", when, flag, want_finalized);
}

static void check_versions(const char *when)
{
    int major = -1, minor = -1, len = -1;
    static char version[MPI_MAX_LIBRARY_VERSION_STRING];

    CHECK_MPI(MPI_Get_version(&major, &minor));
    CHECK(major == 5 && minor == 0, "MPI_Get_version %s gave %d.%d, expected 5.0", when, major, minor);
    CHECK(MPI_VERSION == 5 && MPI_SUBVERSION == 0, "mpi.h says MPI %d.%d, expected 5.0",
          MPI_VERSION, MPI_SUBVERSION);

    major = minor = -1;
    CHECK_MPI(MPI_Abi_get_version(&major, &minor));
    CHECK(major == 1 && minor == 0, "MPI_Abi_get_version %s gave %d.%d, expected 1.0", when, major, minor);

    memset(version, 'x', sizeof version);
    CHECK_MPI(MPI_Get_library_version(version, &len));
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING,
          "MPI_Get_library_version %s: resultlen %d out of range", when, len);
    CHECK(memchr(version, '\0', sizeof version) != NULL && (int)strlen(version) == len,
          "MPI_Get_library_version %s: resultlen %d does not match the string", when, len);
}

static void check_communicators(int expected_size, int *rank, int *size)
{
    int self_rank = -1, self_size = -1;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, size));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, rank));
    CHECK(*size >= 1, "MPI_COMM_WORLD size %d", *size);
    CHECK(*rank >= 0 && *rank < *size, "MPI_COMM_WORLD rank %d outside 0..%d", *rank, *size - 1);
    CHECK(expected_size <= 0 || *size == expected_size, "MPI_COMM_WORLD size %d, expected %d",
          *size, expected_size);
    CHECK_MPI(MPI_Comm_size(MPI_COMM_SELF, &self_size));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_SELF, &self_rank));
    CHECK(self_size == 1 && self_rank == 0, "MPI_COMM_SELF: rank %d of %d, expected 0 of 1",
          self_rank, self_size);
}

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Samples MPI_Wtime over about 20 ms: it never goes back, and it counts
 * seconds. Each MPI_Wtime read is bracketed by two CLOCK_MONOTONIC reads, so
 * a rank descheduled between reads (oversubscribed) cannot make it fail. */
static void check_clock(void)
{
    const struct timespec ms = { 0, 1000000 };
    double tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick <= 0.01, "MPI_Wtick gave %g, expected 0 < tick <= 10 ms", tick);

    double before0 = monotonic_seconds(), w0 = MPI_Wtime(), after0 = monotonic_seconds();
    double prev = w0;
    while (monotonic_seconds() - after0 < 0.020) {
        double now = MPI_Wtime();
        CHECK(now >= prev, "MPI_Wtime went back from %.9f to %.9f", prev, now);
        prev = now;
        nanosleep(&ms, NULL);
    }
    double before1 = monotonic_seconds(), w1 = MPI_Wtime(), after1 = monotonic_seconds();
    double shortest = before1 - after0, longest = after1 - before0;
    double slack = 0.001 + 0.01 * longest + tick;
    CHECK(w1 - w0 >= shortest - slack && w1 - w0 <= longest + slack,
          "MPI_Wtime advanced %.6f s while CLOCK_MONOTONIC advanced %.6f..%.6f s",
          w1 - w0, shortest, longest);
}

static void check_processor_name(void)
{
    char name[MPI_MAX_PROCESSOR_NAME];
    char host[256];
    int len = -1;
    CHECK_MPI(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME && (int)strlen(name) == len,
          "MPI_Get_processor_name: resultlen %d, string length %zu", len, strlen(name));
    CHECK(gethostname(host, sizeof host) == 0, "gethostname: %s", strerror(errno));
    host[sizeof host - 1] = '\0';
    CHECK(strcmp(name, host) == 0, "MPI_Get_processor_name gave \"%s\", gethostname \"%s\"", name, host);
}

static void check_threads(void)
{
    int provided = -1, is_main = -1;
    CHECK_MPI(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
          provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE,
          "MPI_Query_thread gave %d, not a thread level", provided);
    CHECK_MPI(MPI_Is_thread_main(&is_main));
    CHECK(is_main == 1, "MPI_Is_thread_main on the thread that called MPI_Init gave %d", is_main);
}

static void check_defaults(void)
{
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    MPI_Info info = MPI_INFO_NULL;
    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler));
    CHECK(handler == MPI_ERRORS_ARE_FATAL, "MPI_COMM_WORLD's error handler is not MPI_ERRORS_ARE_FATAL");
    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_SELF, &handler));
    CHECK(handler == MPI_ERRORS_ARE_FATAL, "MPI_COMM_SELF's error handler is not MPI_ERRORS_ARE_FATAL");
    /* The info object is the caller's to free; MPI_Info_free may not exist yet. */
    CHECK_MPI(MPI_Abi_get_info(&info));
    CHECK(info != MPI_INFO_NULL, "MPI_Abi_get_info gave MPI_INFO_NULL");
}

int main(int argc, char **argv)
{
    int expected_size = argc > 1 ? atoi(argv[1]) : 0;
    int rank = -1, size = -1;

    check_init_state(0, 0, "before MPI_Init");
    check_versions("before MPI_Init");

    CHECK_MPI(MPI_Init(&argc, &argv));
    check_init_state(1, 0, "after MPI_Init");
    check_versions("after MPI_Init");
    check_communicators(expected_size, &rank, &size);
    check_clock();
    check_processor_name();
    check_threads();
    check_defaults();

    printf("rank %d of %d\n", rank, size);
    fflush(stdout);

    CHECK_MPI(MPI_Finalize());
    check_init_state(1, 1, "after MPI_Finalize");
    check_versions("after MPI_Finalize");
    return 0;
}
