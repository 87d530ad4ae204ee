/*
 * MPI_Op objects and applying an op to data: the predefined ops at the
 * standard's handle values, user ops (MPI_Op_create(_c)), the (op, datatype)
 * check collectives make, MPI_Reduce_local. The arithmetic is in
 * op_kernels.c.
 *
 * Predefined ops on derived datatypes: allowed when every basic element of
 * the type is of one predefined type (the standard's rule); the kernel then
 * runs on the elements in place when the type is laid out like an array of
 * them, else on a packed copy. User ops always get the program's datatype.
 */
#include "mpi/coll/op.h"

#include "mpi/coll/coll.h"
#include "mpi/datatype.h"
#include "mpi/mpi_impl.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the predefined ops ---- */

#define OP_HANDLE_BASE 0x020u
#define OP_HANDLE_SPAN 0x020u

static struct MPI_ABI_Op predefined[OP_HANDLE_SPAN];
static pthread_once_t predefined_once = PTHREAD_ONCE_INIT;

static const struct {
    MPI_Op handle;
    enum hashi_op_index index;
    const char *name;
} predefined_specs[] = {
    { MPI_MAX, HASHI_OP_MAX, "MPI_MAX" },
    { MPI_MIN, HASHI_OP_MIN, "MPI_MIN" },
    { MPI_SUM, HASHI_OP_SUM, "MPI_SUM" },
    { MPI_PROD, HASHI_OP_PROD, "MPI_PROD" },
    { MPI_LAND, HASHI_OP_LAND, "MPI_LAND" },
    { MPI_BAND, HASHI_OP_BAND, "MPI_BAND" },
    { MPI_LOR, HASHI_OP_LOR, "MPI_LOR" },
    { MPI_BOR, HASHI_OP_BOR, "MPI_BOR" },
    { MPI_LXOR, HASHI_OP_LXOR, "MPI_LXOR" },
    { MPI_BXOR, HASHI_OP_BXOR, "MPI_BXOR" },
    { MPI_MAXLOC, HASHI_OP_MAXLOC, "MPI_MAXLOC" },
    { MPI_MINLOC, HASHI_OP_MINLOC, "MPI_MINLOC" },
    { MPI_REPLACE, HASHI_OP_REPLACE, "MPI_REPLACE" },
    { MPI_NO_OP, HASHI_OP_NO_OP, "MPI_NO_OP" },
};

static void predefined_init(void)
{
    for (size_t i = 0; i < sizeof predefined_specs / sizeof predefined_specs[0]; i++) {
        struct MPI_ABI_Op *o = &predefined[(uintptr_t)predefined_specs[i].handle - OP_HANDLE_BASE];
        o->predefined = 1;
        /* REPLACE keeps the later operand: not commutative. */
        o->commutative = predefined_specs[i].index != HASHI_OP_REPLACE;
        o->index = (int)predefined_specs[i].index;
        o->name = predefined_specs[i].name;
        atomic_init(&o->refcount, 1);
        o->magic = HASHI_OP_MAGIC;
    }
}

struct MPI_ABI_Op *hashi_op_get(MPI_Op op)
{
    if (hashi_handle_is_predefined(op)) {
        uintptr_t v = (uintptr_t)op;
        if (v < OP_HANDLE_BASE || v >= OP_HANDLE_BASE + OP_HANDLE_SPAN)
            return NULL;
        pthread_once(&predefined_once, predefined_init);
        struct MPI_ABI_Op *o = &predefined[v - OP_HANDLE_BASE];
        return o->magic == HASHI_OP_MAGIC ? o : NULL;
    }
    if (((uintptr_t)op & (_Alignof(struct MPI_ABI_Op) - 1)) != 0)
        return NULL;
    return op->magic == HASHI_OP_MAGIC ? op : NULL;
}

void hashi_op_retain(MPI_Op op)
{
    if (!hashi_handle_is_predefined(op))
        atomic_fetch_add_explicit(&op->refcount, 1, memory_order_relaxed);
}

void hashi_op_release(MPI_Op op)
{
    if (hashi_handle_is_predefined(op))
        return;
    if (atomic_fetch_sub_explicit(&op->refcount, 1, memory_order_acq_rel) == 1) {
        op->magic = 0;
        free(op);
    }
}

int hashi_op_is_commutative(MPI_Op op)
{
    struct MPI_ABI_Op *o = hashi_op_get(op);
    return o ? o->commutative : 1;
}

/* ---- which types a predefined op accepts ---- */

/* The single predefined type a datatype's elements are made of, for kernels;
 * MPI_DATATYPE_NULL when mixed (or a pair made by Type_get_value_index). */
static MPI_Datatype kernel_type(const struct MPI_ABI_Datatype *t)
{
    return t->basic_type;
}

/* A pair type of MPI_Type_get_value_index (not predefined): MINLOC/MAXLOC
 * compare its value and index generically. */
static int is_generic_pair(const struct MPI_ABI_Datatype *t)
{
    return t->pair_value != MPI_DATATYPE_NULL && t->basic_type == MPI_DATATYPE_NULL;
}

static const char *type_name(MPI_Datatype type)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    return t && t->name[0] ? t->name : "a derived datatype";
}

int hashi_op_check_collective(MPI_Op op, MPI_Datatype type, char *why, size_t whylen)
{
    struct MPI_ABI_Op *o = op == MPI_OP_NULL ? NULL : hashi_op_get(op);
    if (!o) {
        snprintf(why, whylen, "%s", op == MPI_OP_NULL ? "the op is MPI_OP_NULL" : "the op is not a valid MPI_Op");
        return MPI_ERR_OP;
    }
    if (!o->predefined)
        return MPI_SUCCESS;
    if (o->index == HASHI_OP_REPLACE || o->index == HASHI_OP_NO_OP) {
        snprintf(why, whylen, "%s is only for accumulate operations, not collectives", o->name);
        return MPI_ERR_OP;
    }
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    if (!t)
        return MPI_SUCCESS;   /* the datatype check reports it */
    if (t->size == 0)
        return MPI_SUCCESS;   /* nothing to reduce */
    if (o->index == HASHI_OP_MAXLOC || o->index == HASHI_OP_MINLOC) {
        if (is_generic_pair(t))
            return MPI_SUCCESS;
    }
    MPI_Datatype k = kernel_type(t);
    if (k != MPI_DATATYPE_NULL && hashi_op_kernel((enum hashi_op_index)o->index, k))
        return MPI_SUCCESS;
    if (k == MPI_DATATYPE_NULL)
        snprintf(why, whylen, "%s is not defined on %s: its elements are not all of one predefined type",
                 o->name, type_name(type));
    else if (k != type)
        snprintf(why, whylen, "%s is not defined on %s (elements of %s)", o->name, type_name(type),
                 type_name(k));
    else
        snprintf(why, whylen, "%s is not defined on %s", o->name, type_name(type));
    return MPI_ERR_OP;
}

/* ---- applying an op ---- */

/* A user function of the int form takes at most INT_MAX elements a call. */
static void call_user(const struct MPI_ABI_Op *o, const void *in, void *inout, MPI_Count count, MPI_Datatype type,
                      MPI_Aint extent)
{
    MPI_Datatype dt = type;
    if (o->user_fn_c) {
        MPI_Count len = count;
        o->user_fn_c((void *)in, inout, &len, &dt);
        return;
    }
    for (MPI_Count done = 0; done < count;) {
        int len = count - done > INT_MAX ? INT_MAX : (int)(count - done);
        o->user_fn((char *)in + done * extent, (char *)inout + done * extent, &len, &dt);
        done += len;
    }
}

/* MINLOC / MAXLOC on a pair of MPI_Type_get_value_index: values and indices
 * compared through long double / long long (exact for every integer type up
 * to 64 bits and every floating type but _Float128). */
static long double load_value(const void *p, MPI_Datatype type)
{
#define LOAD(h, T) if (type == h) { T v; memcpy(&v, p, sizeof v); return (long double)v; }
    LOAD(MPI_FLOAT, float) LOAD(MPI_DOUBLE, double) LOAD(MPI_LONG_DOUBLE, long double)
    LOAD(MPI_REAL, float) LOAD(MPI_DOUBLE_PRECISION, double) LOAD(MPI_REAL4, float) LOAD(MPI_REAL8, double)
#undef LOAD
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    int is_unsigned = type == MPI_UNSIGNED_SHORT || type == MPI_UNSIGNED || type == MPI_UNSIGNED_LONG ||
                      type == MPI_UNSIGNED_LONG_LONG || type == MPI_UNSIGNED_CHAR || type == MPI_UINT8_T ||
                      type == MPI_UINT16_T || type == MPI_UINT32_T || type == MPI_UINT64_T || type == MPI_BYTE ||
                      type == MPI_C_BOOL;
    switch (t ? t->size : 0) {
    case 1: { uint8_t u; memcpy(&u, p, 1); return is_unsigned ? (long double)u : (long double)(int8_t)u; }
    case 2: { uint16_t u; memcpy(&u, p, 2); return is_unsigned ? (long double)u : (long double)(int16_t)u; }
    case 4: { uint32_t u; memcpy(&u, p, 4); return is_unsigned ? (long double)u : (long double)(int32_t)u; }
    case 8: { uint64_t u; memcpy(&u, p, 8); return is_unsigned ? (long double)u : (long double)(int64_t)u; }
    default: return 0;
    }
}

static void generic_loc(int is_max, const struct MPI_ABI_Datatype *t, const void *in, void *inout, MPI_Count count)
{
    MPI_Aint extent = hashi_type_extent(t);
    const struct MPI_ABI_Datatype *vt = hashi_type_get(t->pair_value);
    const struct MPI_ABI_Datatype *xt = hashi_type_get(t->pair_index);
    for (MPI_Count i = 0; i < count; i++) {
        const char *a = (const char *)in + i * extent + t->lb;
        char *b = (char *)inout + i * extent + t->lb;
        long double va = load_value(a, t->pair_value), vb = load_value(b, t->pair_value);
        long double ia = load_value(a + t->pair_index_offset, t->pair_index);
        long double ib = load_value(b + t->pair_index_offset, t->pair_index);
        int take = is_max ? va > vb : va < vb;
        if (take)
            memcpy(b, a, (size_t)vt->size);
        if (take || (va == vb && ia < ib))
            memcpy(b + t->pair_index_offset, a + t->pair_index_offset, (size_t)xt->size);
    }
}

int hashi_op_reduce(MPI_Op op, const void *in, void *inout, MPI_Count count, MPI_Datatype type)
{
    const struct MPI_ABI_Op *o = hashi_op_get(op);
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    if (!o || !t)
        return MPI_ERR_OP;
    if (count == 0 || t->size == 0)
        return MPI_SUCCESS;
    if (!o->predefined) {
        call_user(o, in, inout, count, type, hashi_type_extent(t));
        return MPI_SUCCESS;
    }
    if (o->index == HASHI_OP_NO_OP)
        return MPI_SUCCESS;
    if (o->index == HASHI_OP_REPLACE)
        return hashi_coll_copy(in, count, type, inout, count, type);
    if ((o->index == HASHI_OP_MAXLOC || o->index == HASHI_OP_MINLOC) && is_generic_pair(t)) {
        generic_loc(o->index == HASHI_OP_MAXLOC, t, in, inout, count);
        return MPI_SUCCESS;
    }
    MPI_Datatype k = kernel_type(t);
    hashi_op_kernel_fn fn = k == MPI_DATATYPE_NULL ? NULL : hashi_op_kernel((enum hashi_op_index)o->index, k);
    if (!fn)
        return MPI_ERR_OP;
    if (t->predefined) {
        /* Predefined types (pairs with padding too) are C arrays of themselves. */
        fn((const char *)in + t->true_lb, (char *)inout + t->true_lb, (size_t)count);
        return MPI_SUCCESS;
    }
    const struct MPI_ABI_Datatype *kt = hashi_type_get(k);
    size_t n = (size_t)(hashi_type_bytes(t, count) / kt->size);
    if (hashi_type_is_contig_count(t, count) && hashi_type_is_contig(kt)) {
        fn((const char *)in + t->true_lb, (char *)inout + t->true_lb, n);
        return MPI_SUCCESS;
    }
    /* Strided or padded: the elements into arrays of the basic type, the
     * kernel, and the result back into place. */
    size_t bytes = n * (size_t)hashi_type_extent(kt);
    char *a = malloc(bytes), *b = malloc(bytes);
    int rc = a && b ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = hashi_coll_copy(in, count, type, a, (MPI_Count)n, k);
    if (rc == MPI_SUCCESS)
        rc = hashi_coll_copy(inout, count, type, b, (MPI_Count)n, k);
    if (rc == MPI_SUCCESS) {
        fn(a, b, n);
        rc = hashi_coll_copy(b, (MPI_Count)n, k, inout, count, type);
    }
    free(a);
    free(b);
    return rc;
}

/* ---- the MPI calls ---- */

static int op_create(const char *func, MPI_User_function *fn, MPI_User_function_c *fn_c, int commute, MPI_Op *op)
{
    HASHI_CHECK_INITIALIZED(func);
    if (!fn && !fn_c)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "user_fn is NULL");
    if (!op)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "op is NULL");
    struct MPI_ABI_Op *o = calloc(1, sizeof *o);
    if (!o)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    o->magic = HASHI_OP_MAGIC;
    o->commutative = commute != 0;
    o->index = HASHI_OP_USER;
    o->user_fn = fn;
    o->user_fn_c = fn_c;
    o->name = "a user-defined op";
    atomic_init(&o->refcount, 1);
    *op = o;
    return MPI_SUCCESS;
}

int hashi_impl_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    return op_create("MPI_Op_create", user_fn, NULL, commute, op);
}

int hashi_impl_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op)
{
    return op_create("MPI_Op_create_c", NULL, user_fn, commute, op);
}

int hashi_impl_Op_free(MPI_Op *op)
{
    static const char func[] = "MPI_Op_free";
    HASHI_CHECK_INITIALIZED(func);
    if (!op)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "op is NULL");
    struct MPI_ABI_Op *o = *op == MPI_OP_NULL ? NULL : hashi_op_get(*op);
    if (!o)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_OP, "%s",
                               *op == MPI_OP_NULL ? "the op is MPI_OP_NULL" : "not a valid MPI_Op");
    if (o->predefined)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_OP, "%s is predefined and cannot be freed",
                               o->name);
    /* Pending collectives that use it hold their own references. */
    hashi_op_release(*op);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

int hashi_impl_Op_commutative(MPI_Op op, int *commute)
{
    static const char func[] = "MPI_Op_commutative";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Op *o = op == MPI_OP_NULL ? NULL : hashi_op_get(op);
    if (!o)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_OP, "%s",
                               op == MPI_OP_NULL ? "the op is MPI_OP_NULL" : "not a valid MPI_Op");
    if (!commute)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "commute is NULL");
    *commute = o->commutative;
    return MPI_SUCCESS;
}

int hashi_impl_Reduce_local_c(const void *inbuf, void *inoutbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op)
{
    static const char func[] = "MPI_Reduce_local";
    HASHI_CHECK_INITIALIZED(func);
    const char *why = NULL;
    if (count < 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_COUNT, "count %lld is negative", (long long)count);
    if (hashi_type_check(datatype, 1, &why) != MPI_SUCCESS)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_TYPE, "%s", why);
    char reason[256];
    int rc = hashi_op_check_collective(op, datatype, reason, sizeof reason);
    if (rc != MPI_SUCCESS)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, rc, "%s", reason);
    if (count > 0 && (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE))
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed here");
    const struct MPI_ABI_Datatype *t = hashi_type_get(datatype);
    if (count > 0 && t->size > 0 && (!inbuf || !inoutbuf) && t->true_lb == 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_BUFFER, "%s is NULL but count is %lld",
                               !inbuf ? "inbuf" : "inoutbuf", (long long)count);
    rc = hashi_op_reduce(op, inbuf, inoutbuf, count, datatype);
    if (rc != MPI_SUCCESS)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, rc, "applying the op failed");
    return MPI_SUCCESS;
}

int hashi_impl_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op)
{
    return hashi_impl_Reduce_local_c(inbuf, inoutbuf, count, datatype, op);
}
