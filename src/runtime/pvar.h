/*
 * Performance variables: counters a component (a device, a transport, the
 * matching core) exposes to tools through MPI_T (src/mpi/mpit.c). A
 * component registers a static table once, when it starts; the registry
 * only keeps pointers, so reading a variable reads the component's own
 * counter and the hot paths pay nothing for being observable.
 *
 * Every variable here is a monotonically growing 64-bit counter of this
 * process (MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, bound to no
 * object, continuous). Indices never change once given: a component that
 * stops leaves its variables registered (reading what its counters hold
 * then: the last count, or 0 where it clears its state).
 */
#ifndef HASHI_RUNTIME_PVAR_H
#define HASHI_RUNTIME_PVAR_H

#include <stdint.h>

struct hashi_pvar {
    const char *name;          /* unique: "dimmnet_aotf" */
    const char *category;      /* "hashi_dimmnet" */
    const char *desc;          /* one line */
    const uint64_t *counter;
};

/*
 * Register n variables (the table must outlive the process). A name already
 * registered keeps its index and is pointed at the new counter (a component
 * started again). 0, or -1 when out of memory.
 */
int hashi_pvar_register(const struct hashi_pvar *vars, int n);

/* How many are registered, and variable i (0 <= i < count). */
int hashi_pvar_count(void);
const struct hashi_pvar *hashi_pvar_get(int i);

#endif
