/*
 * Shared by the rma tests: the exclusive-lock counter idiom.
 */
#ifndef HASHI_TEST_RMA_UTIL_H
#define HASHI_TEST_RMA_UTIL_H

#include <mpi.h>

#include "../util/check.h"

/* `iterations` increments of the long at displacement 0 of `target`'s
 * window, each a get, a flush and a put under an exclusive lock. */
static inline void locked_increments(MPI_Win win, int target, int iterations)
{
    for (int k = 0; k < iterations; k++) {
        long v;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
        CHECK_MPI(MPI_Get(&v, 1, MPI_LONG, target, 0, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(target, win));
        v++;
        CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, target, 0, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_unlock(target, win));
    }
}

#endif
