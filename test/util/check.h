/*
 * Checks for the test programs. A failed check prints where it failed, on which
 * rank and why, then exits with status 1: the harness shows that line as the
 * reason. Programs include only <mpi.h> and this, like any MPI application.
 */
#ifndef HASHI_TEST_CHECK_H
#define HASHI_TEST_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The rank to name in messages, or -1 outside MPI_Init..MPI_Finalize. */
static inline int check_current_rank(void)
{
    int initialized = 0, finalized = 0, rank = -1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

__attribute__((format(printf, 3, 4), noreturn))
static inline void check_fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    int rank = check_current_rank();
    fflush(stdout);
    if (rank >= 0)
        fprintf(stderr, "%s:%d: rank %d: FAIL: ", file, line, rank);
    else
        fprintf(stderr, "%s:%d: FAIL: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    exit(1);
}

/* CHECK(condition, "printf-style reason", ...) */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            check_fail_at(__FILE__, __LINE__, __VA_ARGS__);                    \
    } while (0)

/* An MPI call that must return MPI_SUCCESS; the failure names the call and
 * the library's own string for the code it returned. */
#define CHECK_MPI(call)                                                        \
    do {                                                                       \
        int check_rc_ = (call);                                                \
        if (check_rc_ != MPI_SUCCESS) {                                        \
            char check_msg_[MPI_MAX_ERROR_STRING] = "";                        \
            int check_len_ = 0;                                                \
            MPI_Error_string(check_rc_, check_msg_, &check_len_);              \
            check_fail_at(__FILE__, __LINE__, "%s returned %d (%s)", #call,    \
                          check_rc_, check_msg_);                              \
        }                                                                      \
    } while (0)

#endif
