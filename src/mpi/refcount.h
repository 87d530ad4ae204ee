/*
 * Reference counts of the MPI layer's objects (requests, communicators,
 * datatypes, groups). Up to MPI_THREAD_SERIALIZED only one thread is inside
 * the library at a time (the program orders its calls), so a count changes by
 * a plain load and store: a locked read-modify-write costs ~20 cycles, and a
 * message takes three or four of them. Once threads may be inside the library
 * together (MPI_THREAD_MULTIPLE, or a device's own progress thread), init sets
 * hashi_refs_locked and every change is atomic.
 */
#ifndef HASHI_MPI_REFCOUNT_H
#define HASHI_MPI_REFCOUNT_H

#include <stdatomic.h>

extern int hashi_refs_locked;

static inline void hashi_ref_inc(atomic_int *r)
{
    if (__builtin_expect(hashi_refs_locked, 0))
        atomic_fetch_add_explicit(r, 1, memory_order_relaxed);
    else
        atomic_store_explicit(r, atomic_load_explicit(r, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Drop one reference; nonzero when it was the last. */
static inline int hashi_ref_dec(atomic_int *r)
{
    if (__builtin_expect(hashi_refs_locked, 0))
        return atomic_fetch_sub_explicit(r, 1, memory_order_acq_rel) == 1;
    int left = atomic_load_explicit(r, memory_order_relaxed) - 1;
    atomic_store_explicit(r, left, memory_order_relaxed);
    return left == 0;
}

#endif
