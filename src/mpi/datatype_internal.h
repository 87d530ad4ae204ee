/*
 * What the datatype files (datatype.c, datatype_create.c, datatype_pack.c)
 * share among themselves; the rest of the library uses datatype.h.
 */
#ifndef HASHI_MPI_DATATYPE_INTERNAL_H
#define HASHI_MPI_DATATYPE_INTERNAL_H

#include "mpi/datatype.h"
#include "mpi/datatype_repr.h"
#include "mpi/mpi_impl.h"

/* Errors of the datatype calls have no object: MPI_COMM_SELF's handler. */
#define hashi_err_type(func, code, ...) hashi_err_raise((func), HASHI_OBJ_NONE, NULL, (code), __VA_ARGS__)

/*
 * The constructor call a derived type was made by, as MPI_Type_get_contents
 * returns it. `large` marks a large-count (_c) constructor: its counts and
 * displacements are in `larges`, which the int versions of get_envelope /
 * get_contents cannot return. The types are references (retained).
 */
struct hashi_type_envelope {
    int combiner;
    int large;
    MPI_Count ni, na, nl, nd;
    int *ints;
    MPI_Aint *addrs;
    MPI_Count *larges;
    struct MPI_ABI_Datatype **types;
};

/* One block with room for the arrays; NULL when out of memory. */
struct hashi_type_envelope *hashi_envelope_new(int combiner, int large, MPI_Count ni, MPI_Count na,
                                               MPI_Count nl, MPI_Count nd);
/* Releases the types it holds. */
void hashi_envelope_free(struct hashi_type_envelope *env);

/* A zeroed derived type object: magic set, one reference (the user's handle). */
struct MPI_ABI_Datatype *hashi_type_alloc(void);
/* Frees a type that was never handed out (a constructor failing half way). */
void hashi_type_discard(struct MPI_ABI_Datatype *t);

/* The handle of a type object (the standard's constant for a predefined one). */
MPI_Datatype hashi_type_handle(struct MPI_ABI_Datatype *t);

/*
 * Argument check for a datatype argument of an MPI call: the object, or NULL
 * after raising MPI_ERR_TYPE through *rc. `what` names the argument.
 */
struct MPI_ABI_Datatype *hashi_type_arg(const char *func, const char *what, MPI_Datatype type,
                                        int need_committed, int *rc);

#endif
