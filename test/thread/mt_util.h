/*
 * Shared by the MPI_THREAD_MULTIPLE tests: initialise at MULTIPLE (and insist
 * on getting it), run a function on N threads, pair ranks (0-1, 2-3, ...).
 */
#ifndef HASHI_TEST_MT_UTIL_H
#define HASHI_TEST_MT_UTIL_H

#include "../util/check.h"

#include <pthread.h>
#include <stdint.h>

static inline void mt_init(int *argc, char ***argv, int *rank, int *size)
{
    int provided = -1;
    CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread(MULTIPLE) provided %d", provided);
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, size));
    CHECK(*size % 2 == 0, "this test pairs ranks: run it on an even number (got %d)", *size);
}

/* Runs fn(0 .. n-1) on n threads and joins them. */
struct mt_thread_arg {
    void *(*fn)(int index);
    int index;
};

static void *mt_thread_main(void *p)
{
    struct mt_thread_arg *a = p;
    return a->fn(a->index);
}

static inline void mt_run(int n, void *(*fn)(int index))
{
    pthread_t threads[64];
    struct mt_thread_arg args[64];
    CHECK(n <= 64, "at most 64 threads");
    for (int i = 0; i < n; i++) {
        args[i] = (struct mt_thread_arg){ fn, i };
        CHECK(pthread_create(&threads[i], NULL, mt_thread_main, &args[i]) == 0, "pthread_create failed");
    }
    for (int i = 0; i < n; i++)
        CHECK(pthread_join(threads[i], NULL) == 0, "pthread_join failed");
}

/* The last line every test prints, then MPI_Finalize. */
static inline int mt_finish(int rank, int size)
{
    printf("rank %d of %d ok\n", rank, size);
    fflush(stdout);
    CHECK_MPI(MPI_Finalize());
    return 0;
}

/* A byte pattern no two (rank, thread, round, size) share. */
static inline unsigned char mt_pattern(int rank, int thread, int round, size_t i)
{
    return (unsigned char)(rank * 131 + thread * 37 + round * 11 + i * 7 + (i >> 8));
}

#endif
