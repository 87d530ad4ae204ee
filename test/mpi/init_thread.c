/*
 * init_thread single|funneled|serialized|multiple: MPI_Init_thread with that
 * level required. Checks that the level provided is a thread level, that
 * MPI_Query_thread agrees with it, that MPI_Is_thread_main is true on this
 * thread and, when the level allows another thread to call MPI, false there.
 * Prints "rank R of S provided LEVEL".
 */
#include <mpi.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../util/check.h"

static const struct { const char *arg, *name; int level; } levels[] = {
    { "single", "MPI_THREAD_SINGLE", MPI_THREAD_SINGLE },
    { "funneled", "MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED },
    { "serialized", "MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED },
    { "multiple", "MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE },
};
#define LEVEL_COUNT (int)(sizeof levels / sizeof levels[0])

static void *query_from_other_thread(void *result)
{
    int *is_main = result;
    if (MPI_Is_thread_main(is_main) != MPI_SUCCESS)
        *is_main = -2;
    return NULL;
}

int main(int argc, char **argv)
{
    int required_index = -1, provided = -1, queried = -1, is_main = -1, rank = -1, size = -1;
    CHECK(argc == 2, "usage: init_thread single|funneled|serialized|multiple");
    for (int i = 0; i < LEVEL_COUNT; i++)
        if (strcmp(argv[1], levels[i].arg) == 0)
            required_index = i;
    CHECK(required_index >= 0, "unknown thread level \"%s\"", argv[1]);
    /* The standard orders the levels; the ABI's values must keep that order. */
    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
          MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE, "thread levels are not ordered");

    CHECK_MPI(MPI_Init_thread(&argc, &argv, levels[required_index].level, &provided));
    int provided_index = -1;
    for (int i = 0; i < LEVEL_COUNT; i++)
        if (provided == levels[i].level)
            provided_index = i;
    CHECK(provided_index >= 0, "MPI_Init_thread provided %d, not a thread level", provided);

    CHECK_MPI(MPI_Query_thread(&queried));
    CHECK(queried == provided, "MPI_Query_thread gave %d, MPI_Init_thread provided %d", queried, provided);
    CHECK_MPI(MPI_Is_thread_main(&is_main));
    CHECK(is_main == 1, "MPI_Is_thread_main on the main thread gave %d", is_main);

    /* SERIALIZED allows calls from another thread when they do not overlap:
     * the main thread only waits in pthread_join meanwhile. */
    if (provided >= MPI_THREAD_SERIALIZED) {
        pthread_t thread;
        int other_is_main = -1;
        CHECK(pthread_create(&thread, NULL, query_from_other_thread, &other_is_main) == 0, "pthread_create failed");
        CHECK(pthread_join(thread, NULL) == 0, "pthread_join failed");
        CHECK(other_is_main == 0, "MPI_Is_thread_main on another thread gave %d (-2: an error)", other_is_main);
    }

    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    printf("rank %d of %d provided %s\n", rank, size, levels[provided_index].name);
    fflush(stdout);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
