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
#include <string.h>

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

/* The code rc returned by `call` (its text, for the message) must be
 * MPI_SUCCESS; the failure names the call and the library's own string for
 * the code. For macros that build the call; CHECK_MPI is the usual form. */
static inline void check_mpi_at(const char *file, int line, int rc, const char *call)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        check_fail_at(file, line, "%s returned %d (%s)", call, rc, msg);
    }
}

/* An MPI call that must return MPI_SUCCESS. */
#define CHECK_MPI(call) check_mpi_at(__FILE__, __LINE__, (call), #call)

/* The code rc returned by `call` must be an error of class cls whose string
 * names func (the library's messages start with the call's name). */
static inline void check_err_at(const char *file, int line, int rc, int cls, const char *func, const char *call)
{
    int got = -1;
    if (rc == MPI_SUCCESS)
        check_fail_at(file, line, "%s succeeded, expected error class %d", call, cls);
    MPI_Error_class(rc, &got);
    if (got != cls)
        check_fail_at(file, line, "%s returned class %d, expected %d", call, got, cls);
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    if (!strstr(msg, func))
        check_fail_at(file, line, "%s: the error string '%s' does not name %s", call, msg, func);
}

/* An MPI call (under MPI_ERRORS_RETURN) that must fail with class cls,
 * naming func: CHECK_ERR(MPI_Send(buf, -1, ...), MPI_ERR_COUNT, "MPI_Send"). */
#define CHECK_ERR(call, cls, func) check_err_at(__FILE__, __LINE__, (call), (cls), (func), #call)

#endif
