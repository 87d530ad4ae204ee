/*
 * Integer values of handles (MPI_<Kind>_toint / MPI_<Kind>_fromint, hence
 * c2f / f2c). Predefined handles are their own small values; a dynamic
 * object gets an index >= HASHI_PREDEFINED_LIMIT on its first toint, kept
 * until the object is destroyed: every destroy path of a kind that can be
 * converted calls hashi_handle_forget(). Design: docs/communicators.md,
 * "Handle conversion".
 */
#ifndef HASHI_MPI_HANDLES_H
#define HASHI_MPI_HANDLES_H

#include <stdatomic.h>
#include <stddef.h>

/* Objects with an index (0: the table is empty, forgetting costs one load). */
extern atomic_size_t hashi_handles_registered;
void hashi_handle_forget_registered(const void *obj);

/* The object is being destroyed: drop its index, if it has one. */
static inline void hashi_handle_forget(const void *obj)
{
    if (atomic_load_explicit(&hashi_handles_registered, memory_order_relaxed))
        hashi_handle_forget_registered(obj);
}

#endif
