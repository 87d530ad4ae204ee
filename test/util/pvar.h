/*
 * Tests: read one MPI_T performance counter by name (the counters of the
 * core, the devices and the runtime that tests assert on).
 */
#ifndef HASHI_TEST_PVAR_H
#define HASHI_TEST_PVAR_H

#include <mpi.h>

#include "check.h"

/* A counter of the core or the device (MPI_T pvar `name`; 0 where there is
 * none: *found = 0). */
static inline unsigned long long read_counter(const char *name, int *found)
{
    int idx;
    *found = 0;
    if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS)
        return 0;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    int n;
    unsigned long long v = 0;
    CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS, "MPI_T_pvar_session_create");
    CHECK(MPI_T_pvar_handle_alloc(session, idx, NULL, &handle, &n) == MPI_SUCCESS, "MPI_T_pvar_handle_alloc");
    CHECK(MPI_T_pvar_read(session, handle, &v) == MPI_SUCCESS, "MPI_T_pvar_read %s", name);
    MPI_T_pvar_handle_free(session, &handle);
    MPI_T_pvar_session_free(&session);
    *found = 1;
    return v;
}

/* A counter the test needs: missing is a failure that names it. */
static inline unsigned long long counter_value(const char *name)
{
    int found;
    unsigned long long v = read_counter(name, &found);
    CHECK(found, "no MPI_T counter %s (is the device the one this test expects?)", name);
    return v;
}

#endif
