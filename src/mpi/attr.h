/*
 * Attribute caching: keyvals and the attributes cached on objects, one
 * implementation for every kind of object (communicators, datatypes, later
 * windows). An object keeps its attributes in a `void *attributes` field
 * this file owns; NULL means none. Design: docs/communicators.md, "Attributes".
 */
#ifndef HASHI_MPI_ATTR_H
#define HASHI_MPI_ATTR_H

#include <mpi.h>

enum hashi_attr_kind { HASHI_ATTR_COMM, HASHI_ATTR_TYPE, HASHI_ATTR_WIN };

/*
 * For a duplicate (MPI_Comm_dup / idup, MPI_Type_dup): run the copy callback
 * of every attribute of `old_handle` and cache the values it asks for on the
 * new object (`*new_attrs`, which must be empty). Returns MPI_SUCCESS or the
 * first error a callback returned; then the new object's attributes copied
 * so far are deleted again (their delete callbacks run) and the caller fails
 * the duplication.
 */
int hashi_attr_copy_all(enum hashi_attr_kind kind, void *old_handle, void **old_attrs, void *new_handle,
                        void **new_attrs);

/*
 * The object is being freed (MPI_Comm_free, MPI_Type_free, MPI_Finalize on
 * MPI_COMM_SELF): run the delete callbacks, most recently set first. Returns
 * MPI_SUCCESS, or the first error a callback returned (the attributes not yet
 * deleted stay, and the free fails).
 */
int hashi_attr_delete_all(enum hashi_attr_kind kind, void *handle, void **attrs);

/* Free what is left without callbacks (an object that could not be created). */
void hashi_attr_discard(void **attrs);

#endif
