/*
 * Reduction operations inside the library: the MPI_Op objects (predefined at
 * the standard's handle values, user ops from MPI_Op_create), the check a
 * collective makes of an (op, datatype) pair, and the one function that
 * applies an op (schedules' reduce steps, MPI_Reduce_local, accumulate later).
 */
#ifndef HASHI_MPI_COLL_OP_H
#define HASHI_MPI_COLL_OP_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Kernels of the predefined ops: inout[i] = in[i] op inout[i], n elements of
 * one basic type laid out as C lays out an array of it. */
typedef void (*hashi_op_kernel_fn)(const void *in, void *inout, size_t n);

struct MPI_ABI_Op {
    uint32_t magic;                 /* HASHI_OP_MAGIC */
    int predefined;
    int commutative;
    int index;                      /* predefined: enum hashi_op_index */
    MPI_User_function *user_fn;     /* MPI_Op_create */
    MPI_User_function_c *user_fn_c; /* MPI_Op_create_c */
    atomic_int refcount;            /* the handle + schedules that use it */
    const char *name;
};
#define HASHI_OP_MAGIC 0x4f505230u

/* The predefined ops, in the order of the kernel table. */
enum hashi_op_index {
    HASHI_OP_MAX, HASHI_OP_MIN, HASHI_OP_SUM, HASHI_OP_PROD,
    HASHI_OP_LAND, HASHI_OP_BAND, HASHI_OP_LOR, HASHI_OP_BOR, HASHI_OP_LXOR, HASHI_OP_BXOR,
    HASHI_OP_MAXLOC, HASHI_OP_MINLOC, HASHI_OP_REPLACE, HASHI_OP_NO_OP,
    HASHI_OP_USER,
    HASHI_OP_KERNEL_COUNT = HASHI_OP_REPLACE   /* ops with arithmetic kernels */
};

/* The object behind a handle, or NULL (MPI_OP_NULL, garbage, a freed op). */
struct MPI_ABI_Op *hashi_op_get(MPI_Op op);

/* References held by pending schedules; no-ops on predefined ops. */
void hashi_op_retain(MPI_Op op);
void hashi_op_release(MPI_Op op);

/*
 * Whether op may reduce data of this datatype in a collective; MPI_SUCCESS or
 * an error class with a reason naming both (for the caller's message):
 * MPI_ERR_OP for MPI_OP_NULL, an invalid handle, REPLACE / NO_OP (accumulate
 * only), or a predefined op not defined on the type's basic type.
 * `why` is a buffer of whylen bytes.
 */
int hashi_op_check_collective(MPI_Op op, MPI_Datatype type, char *why, size_t whylen);

/* Whether the op is commutative (checked handle). */
int hashi_op_is_commutative(MPI_Op op);

/*
 * inout[i] = in[i] op inout[i] for count elements of type (user ops get the
 * program's datatype; predefined ops run their kernel on the type's basic
 * elements, packing derived types with gaps). MPI_SUCCESS or an error class
 * (MPI_ERR_OP for a pair check failed, MPI_ERR_NO_MEM).
 */
int hashi_op_reduce(MPI_Op op, const void *in, void *inout, MPI_Count count, MPI_Datatype type);

/* The Fortran compiler's .TRUE. / .FALSE. for LOGICALs of 1, 2, 4, 8 and
 * 16 bytes (index: log2 of the size), 1 and 0 unless a Fortran binding
 * set them (MPI_Abi_set_fortran_booleans, fortran_abi.c). */
struct hashi_fortran_logical {
    int64_t true_value, false_value;
    int set;
};
extern struct hashi_fortran_logical hashi_fortran_logicals[5];

/* The kernel of a predefined op on a predefined basic type, or NULL
 * (op_kernels.c). */
hashi_op_kernel_fn hashi_op_kernel(enum hashi_op_index op, MPI_Datatype basic_type);

#endif
