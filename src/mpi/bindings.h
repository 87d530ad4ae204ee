/* The table of every MPI function and its implementation, generated into
 * src/mpi/gen_bindings.c from src/mpi/functions.list. Tools (hashi_info) use
 * it to show which functions of the standard this build implements. */
#ifndef HASHI_MPI_BINDINGS_H
#define HASHI_MPI_BINDINGS_H

#include <stddef.h>

#include "runtime/export.h"

/* Any function pointer, stored only to be compared with NULL or printed. */
typedef void (*hashi_fn)(void);

struct hashi_binding {
    const char *name;   /* the standard's name, "MPI_Send" */
    hashi_fn impl;      /* hashi_impl_Send, or NULL when not implemented yet */
};

/* In the order of functions.list. */
HASHI_EXPORT extern const struct hashi_binding hashi_bindings[];
HASHI_EXPORT extern const size_t hashi_bindings_count;

#endif
