/* Error classes, codes, strings and error-handler invocation. */
#ifndef HASHI_MPI_ERRORS_H
#define HASHI_MPI_ERRORS_H

#include <mpi.h>

/* Kinds of MPI object an error can be raised on (chooses the error handler). */
enum hashi_obj_kind {
    HASHI_OBJ_NONE,     /* no object: raised on MPI_COMM_SELF's handler (MPI-4) */
    HASHI_OBJ_COMM,
    HASHI_OBJ_WIN,
    HASHI_OBJ_FILE,
    HASHI_OBJ_SESSION,
    HASHI_OBJ_ERRHANDLER /* no object yet, the handler given for it (MPI_Session_init) */
};

/*
 * Raise an error from an MPI call: format the reason, look up the handler of
 * the object (fatal / return / abort / user function) and invoke it.
 * Returns errcode so that a call can end with `return hashi_err_raise(...)`
 * (under MPI_ERRORS_RETURN and user handlers that return).
 */
int hashi_err_raise(const char *func, enum hashi_obj_kind kind, const void *handle,
                    int errcode, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Shorthand for a call on a communicator. */
#define hashi_err_comm(func, comm, code, ...) \
    hashi_err_raise((func), HASHI_OBJ_COMM, (const void *)(comm), (code), __VA_ARGS__)

/* The largest error code or class in use (the MPI_LASTUSEDCODE attribute). */
int hashi_err_last_used_code(void);

/* The body of every function of the standard not implemented yet. */
int hashi_err_unsupported(const char *func, enum hashi_obj_kind kind, const void *handle);

#endif
