/*
 * What the data-movement collective tests (colldata.c, neighbor.c) share:
 * the value of every int they send, receive buffers filled with GUARD and
 * compared int for int with a serially computed expected buffer, and each
 * collective run blocking, nonblocking and persistent from one argument
 * list (RUN_COLL).
 */
#ifndef HASHI_TEST_COLLDATA_UTIL_H
#define HASHI_TEST_COLLDATA_UTIL_H

#include <stdint.h>

#include "test/util/check.h"
#include "test/util/suite.h"

/* Receive buffers start with it; it stays wherever nothing may be written. */
#define GUARD (-1)

/* Mixed into every value; changed between the starts of a persistent
 * request so that each start must carry new data. */
static unsigned salt;

/* The value of int j of the block `src` sends under `key` (its
 * destination, or which of its blocks). */
static inline int val(int src, int key, long j)
{
    uint32_t h = (uint32_t)src * 2654435761u ^ (uint32_t)key * 40503u ^ (uint32_t)j * 97u ^ salt * 0x9e3779b9u;
    return (int)(h & 0x7fffffff);
}

/* n ints (at least one allocated), all GUARD. */
static inline int *alloc_ints(long n)
{
    int *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    CHECK(p, "out of memory (%ld ints)", n);
    for (long i = 0; i < n; i++)
        p[i] = GUARD;
    return p;
}

/* Before a call: the receive buffer and the expected one back to GUARD. */
static inline void reset_guard(int *got, int *want, long n)
{
    for (long i = 0; i < n; i++)
        got[i] = want[i] = GUARD;
}

/* An int followed by a gap of one int (extent two ints), committed. */
static inline MPI_Datatype strided_int_type(void)
{
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}

/* For messages: the mode of the call being checked, and what it ran on
 * ("" or a topology's name). */
static const char *cur_mode = "";
static const char *cur_on = "";

static inline void compare(const int *got, const int *want, long n, const char *what)
{
    for (long i = 0; i < n; i++)
        CHECK(got[i] == want[i], "%s%s%s (%s): int %ld of %ld is %d, expected %d (salt %u)", what,
              *cur_on ? " on " : "", cur_on, cur_mode, i, n, got[i], want[i], salt);
}

/* ---- one call in each mode ---- */

enum mode { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *const mode_name[] = { "blocking", "nonblocking", "persistent" };
/* Persistent requests are started this many times, with new data each time. */
#define STARTS 3

static inline int iterations(enum mode m)
{
    return m == PERSISTENT ? STARTS : 1;
}

/*
 * RUN_COLL(m, it, req, Name, name, (args...)): iteration `it` of the
 * collective in mode m, through to completion: MPI_Name(args),
 * MPI_Iname(args, &req), or MPI_Name_init(args, MPI_INFO_NULL, &req) at
 * it == 0 then MPI_Start. The arguments are written once for the three
 * forms. Name and name differ only in case: Gather, gather.
 */
#define RUN_COLL(m, it, req, Name, name, ARGS)                                                       \
    do {                                                                                             \
        MPI_Request *const run_req_ = &(req);                                                        \
        cur_mode = mode_name[m];                                                                     \
        if ((m) == BLOCKING) {                                                                       \
            check_mpi_at(__FILE__, __LINE__, MPI_##Name ARGS, "MPI_" #Name);                         \
        } else if ((m) == NONBLOCKING) {                                                             \
            check_mpi_at(__FILE__, __LINE__, MPI_I##name RUN_COLL_NB_ARGS_ ARGS, "MPI_I" #name);     \
            CHECK_MPI(MPI_Wait(run_req_, MPI_STATUS_IGNORE));                                        \
            CHECK(*run_req_ == MPI_REQUEST_NULL, "MPI_I" #name ": request not freed by MPI_Wait");   \
        } else {                                                                                     \
            if ((it) == 0)                                                                           \
                check_mpi_at(__FILE__, __LINE__, MPI_##Name##_init RUN_COLL_INIT_ARGS_ ARGS,         \
                             "MPI_" #Name "_init");                                                  \
            CHECK_MPI(MPI_Start(run_req_));                                                          \
            CHECK_MPI(MPI_Wait(run_req_, MPI_STATUS_IGNORE));                                        \
            CHECK(*run_req_ != MPI_REQUEST_NULL, "MPI_" #Name "_init: persistent request freed");    \
        }                                                                                            \
    } while (0)
#define RUN_COLL_NB_ARGS_(...) (__VA_ARGS__, run_req_)
#define RUN_COLL_INIT_ARGS_(...) (__VA_ARGS__, MPI_INFO_NULL, run_req_)

/* After the last iteration: a persistent request is freed by its owner. */
static inline void end_run(enum mode m, MPI_Request *req)
{
    if (m == PERSISTENT)
        CHECK_MPI(MPI_Request_free(req));
}

#endif
