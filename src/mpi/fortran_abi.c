/*
 * The standard ABI's Fortran hooks (MPI 5.0 chapter 20): Hashi has no
 * Fortran bindings of its own, but a Fortran binding built separately over
 * the C ABI (one library for every ABI-compatible MPI) tells the library
 * what its compiler does:
 *  - MPI_Abi_set_fortran_info: the sizes of the default Fortran types. Hashi's
 *    predefined Fortran datatypes have fixed sizes (INTEGER, LOGICAL, REAL 4
 *    bytes, DOUBLE PRECISION 8); sizes that disagree are refused with
 *    MPI_ERR_ABI, so a binding compiled with -fdefault-integer-8 learns at
 *    once that it cannot work here, instead of reducing garbage.
 *  - MPI_Abi_set_fortran_booleans: the values of .TRUE. and .FALSE., which
 *    MPI_LAND / LOR / LXOR on MPI_LOGICAL* read and write (op_kernels.c).
 * Both may be set once (again with the same values); the getters report
 * what was set (MPI_INFO_NULL, is_set false before).
 */
#include "mpi/coll/op.h"
#include "mpi/info.h"
#include "mpi/mpi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

struct hashi_fortran_logical hashi_fortran_logicals[5] = {
    { 1, 0, 0 }, { 1, 0, 0 }, { 1, 0, 0 }, { 1, 0, 0 }, { 1, 0, 0 },
};

/* The bytes each logical size was set to (for 16 bytes, more than the
 * kernels' int64_t holds) and the info given. */
static unsigned char logical_true[5][16], logical_false[5][16];
static struct MPI_ABI_Info *fortran_info;
static mtx_t fortran_lock;
static once_flag fortran_once = ONCE_FLAG_INIT;
static void init_fortran_lock(void) { mtx_init(&fortran_lock, mtx_plain); }

/* log2 of a logical size of 1..16 bytes, or -1. */
static int logical_index(int size)
{
    for (int k = 0; k < 5; k++)
        if (size == 1 << k)
            return k;
    return -1;
}

/* The value of `size` bytes in memory, sign-extended (little-endian ABI). */
static int64_t load_logical(const unsigned char *bytes, int size)
{
    int64_t v = 0;
    int n = size < 8 ? size : 8;
    memcpy(&v, bytes, (size_t)n);
    if (n < 8 && (bytes[n - 1] & 0x80))
        v |= (int64_t)(~UINT64_C(0) << (8 * n));
    return v;
}

int hashi_impl_Abi_set_fortran_booleans(int logical_size, void *logical_true_value, void *logical_false_value)
{
    static const char func[] = "MPI_Abi_set_fortran_booleans";
    int k = logical_index(logical_size);
    if (k < 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "logical_size %d is not 1, 2, 4, 8 or 16 bytes", logical_size);
    if (!logical_true_value || !logical_false_value)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "logical_true or logical_false is NULL");
    if (memcmp(logical_true_value, logical_false_value, (size_t)logical_size) == 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "logical_true and logical_false are the same value");
    call_once(&fortran_once, init_fortran_lock);
    mtx_lock(&fortran_lock);
    struct hashi_fortran_logical *l = &hashi_fortran_logicals[k];
    int differs = l->set && (memcmp(logical_true[k], logical_true_value, (size_t)logical_size) != 0
                             || memcmp(logical_false[k], logical_false_value, (size_t)logical_size) != 0);
    if (!l->set) {
        memcpy(logical_true[k], logical_true_value, (size_t)logical_size);
        memcpy(logical_false[k], logical_false_value, (size_t)logical_size);
        l->true_value = load_logical(logical_true[k], logical_size);
        l->false_value = load_logical(logical_false[k], logical_size);
        l->set = 1;
    }
    mtx_unlock(&fortran_lock);
    if (differs)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ABI,
                               "the booleans of %d-byte LOGICALs are set already, to other values", logical_size);
    return MPI_SUCCESS;
}

int hashi_impl_Abi_get_fortran_booleans(int logical_size, void *logical_true_value, void *logical_false_value,
                                        int *is_set)
{
    static const char func[] = "MPI_Abi_get_fortran_booleans";
    int k = logical_index(logical_size);
    if (k < 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "logical_size %d is not 1, 2, 4, 8 or 16 bytes", logical_size);
    if (!logical_true_value || !logical_false_value || !is_set)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "logical_true, logical_false or is_set is NULL");
    call_once(&fortran_once, init_fortran_lock);
    mtx_lock(&fortran_lock);
    *is_set = hashi_fortran_logicals[k].set;
    if (*is_set) {
        memcpy(logical_true_value, logical_true[k], (size_t)logical_size);
        memcpy(logical_false_value, logical_false[k], (size_t)logical_size);
    }
    mtx_unlock(&fortran_lock);
    return MPI_SUCCESS;
}

/* The sizes Hashi's predefined Fortran types have (datatype.c). */
static const struct { const char *key; int size; const char *type; } fixed_sizes[] = {
    { "mpi_logical_size", 4, "MPI_LOGICAL" },
    { "mpi_integer_size", 4, "MPI_INTEGER" },
    { "mpi_real_size", 4, "MPI_REAL" },
    { "mpi_double_precision_size", 8, "MPI_DOUBLE_PRECISION" },
};

int hashi_impl_Abi_set_fortran_info(MPI_Info info)
{
    static const char func[] = "MPI_Abi_set_fortran_info";
    struct MPI_ABI_Info *given = hashi_info_get(info);
    if (!given)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_INFO,
                               info == MPI_INFO_NULL ? "info is MPI_INFO_NULL" : "info is not a valid info object");
    for (size_t i = 0; i < sizeof fixed_sizes / sizeof *fixed_sizes; i++) {
        const char *v = hashi_info_value(given, fixed_sizes[i].key);
        char *end = NULL;
        long size = v ? strtol(v, &end, 10) : fixed_sizes[i].size;
        if (v && (end == v || *end != '\0'))
            return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "%s is '%s', not a number of bytes",
                                   fixed_sizes[i].key, v);
        if (size != fixed_sizes[i].size)
            return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ABI,
                                   "%s is %ld, but Hashi's %s is %d bytes (a Fortran compiled with other default "
                                   "sizes cannot use this library)",
                                   fixed_sizes[i].key, size, fixed_sizes[i].type, fixed_sizes[i].size);
    }
    struct MPI_ABI_Info *copy = hashi_info_copy(given);
    if (!copy)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    call_once(&fortran_once, init_fortran_lock);
    mtx_lock(&fortran_lock);
    int already = fortran_info != NULL;
    if (!already)
        fortran_info = copy;
    mtx_unlock(&fortran_lock);
    if (already) {
        hashi_info_destroy(copy);
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ABI,
                               "the Fortran ABI information is set already (it may be set once)");
    }
    return MPI_SUCCESS;
}

int hashi_impl_Abi_get_fortran_info(MPI_Info *info)
{
    static const char func[] = "MPI_Abi_get_fortran_info";
    if (!info)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "info is NULL");
    call_once(&fortran_once, init_fortran_lock);
    mtx_lock(&fortran_lock);
    struct MPI_ABI_Info *copy = fortran_info ? hashi_info_copy(fortran_info) : NULL;
    int failed = fortran_info && !copy;
    mtx_unlock(&fortran_lock);
    if (failed)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    /* Nothing set: no Fortran details (Hashi has no Fortran compiler of its own). */
    *info = copy ? (MPI_Info)copy : MPI_INFO_NULL;
    return MPI_SUCCESS;
}
