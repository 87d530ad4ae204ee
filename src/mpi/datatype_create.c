/*
 * The datatype constructors: contiguous, vector, hvector, indexed, hindexed,
 * indexed_block, hindexed_block, struct, subarray, darray, resized (each with
 * its large-count _c form).
 *
 * Every constructor computes the new type's facts (size, bounds, alignment,
 * element counts) from its components and builds its layout with the
 * engine's builders, which simplify as they go (datatype_repr.h). The int
 * and _c forms share one implementation; they differ in how the arguments
 * are read (struct arr) and recorded for MPI_Type_get_contents.
 */
#include "mpi/datatype_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Argument arrays of either width                                         */
/* ---------------------------------------------------------------------- */

enum arr_kind { ARR_INT, ARR_AINT, ARR_COUNT };
struct arr {
    const void *p;
    enum arr_kind kind;
};
static inline struct arr arr_int(const int *p) { return (struct arr){ p, ARR_INT }; }
static inline struct arr arr_aint(const MPI_Aint *p) { return (struct arr){ p, ARR_AINT }; }
static inline struct arr arr_count(const MPI_Count *p) { return (struct arr){ p, ARR_COUNT }; }

static inline MPI_Count arr_at(struct arr a, MPI_Count i)
{
    switch (a.kind) {
    case ARR_INT: return ((const int *)a.p)[i];
    case ARR_AINT: return ((const MPI_Aint *)a.p)[i];
    case ARR_COUNT: return ((const MPI_Count *)a.p)[i];
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Recording the call (the envelope)                                       */
/* ---------------------------------------------------------------------- */

/*
 * Arguments are recorded in the standard's order with put_int (always an
 * integer), put_count (an integer in the int form, a large count in the _c
 * form) and put_addr (an address, or a large count in the _c form).
 */
struct env_writer {
    struct hashi_type_envelope *env;
    MPI_Count i, a, l;
};

static struct hashi_type_envelope *env_start(struct env_writer *w, int combiner, int large, MPI_Count n_int,
                                             MPI_Count n_count, MPI_Count n_addr, MPI_Count n_types)
{
    memset(w, 0, sizeof *w);
    w->env = large ? hashi_envelope_new(combiner, 1, n_int, 0, n_count + n_addr, n_types)
                   : hashi_envelope_new(combiner, 0, n_int + n_count, n_addr, 0, n_types);
    return w->env;
}

static void put_int(struct env_writer *w, int v)
{
    w->env->ints[w->i++] = v;
}

static void put_count(struct env_writer *w, MPI_Count v)
{
    if (w->env->large)
        w->env->larges[w->l++] = v;
    else
        w->env->ints[w->i++] = (int)v;
}

static void put_addr(struct env_writer *w, MPI_Aint v)
{
    if (w->env->large)
        w->env->larges[w->l++] = v;
    else
        w->env->addrs[w->a++] = v;
}

/* ---------------------------------------------------------------------- */
/* Accumulating a layout from blocks of component types                    */
/* ---------------------------------------------------------------------- */

struct layout {
    struct MPI_ABI_Datatype *t;   /* the type being built (owns the arena) */
    struct hashi_repr_seq seq;    /* its stream, block by block */
    MPI_Count size, nelem;
    MPI_Count elem_size;          /* -1: no data yet; 0: mixed sizes */
    MPI_Datatype basic_type;      /* MPI_DATATYPE_NULL once mixed */
    int have_basic;
    int align, explicit_bounds;
    int have_bounds, have_true;
    MPI_Aint lb, ub, true_lb, true_ub;
    const char *overflow;         /* what overflowed, or NULL */
};

static void layout_init(struct layout *L, struct MPI_ABI_Datatype *t)
{
    memset(L, 0, sizeof *L);
    L->t = t;
    hashi_repr_seq_init(&L->seq);
    L->elem_size = -1;
    L->basic_type = MPI_DATATYPE_NULL;
    L->align = 1;
}

static MPI_Aint aint_mul(struct layout *L, MPI_Aint a, MPI_Aint b)
{
    MPI_Aint r;
    if (__builtin_mul_overflow(a, b, &r)) {
        L->overflow = "a displacement or stride";
        return 0;
    }
    return r;
}

static MPI_Aint aint_add(struct layout *L, MPI_Aint a, MPI_Aint b)
{
    MPI_Aint r;
    if (__builtin_add_overflow(a, b, &r)) {
        L->overflow = "a displacement or stride";
        return 0;
    }
    return r;
}

/* The facts every block of `instances` copies of c contributes (not the bounds). */
static void layout_facts(struct layout *L, MPI_Count instances, const struct MPI_ABI_Datatype *c)
{
    MPI_Count bytes, elems;
    if (instances <= 0)
        return;
    if (__builtin_mul_overflow(instances, c->size, &bytes) || __builtin_add_overflow(L->size, bytes, &L->size)
        || __builtin_mul_overflow(instances, c->nelem, &elems) || __builtin_add_overflow(L->nelem, elems, &L->nelem)) {
        L->overflow = "the size of the datatype";
        return;
    }
    if (c->align > L->align)
        L->align = c->align;
    L->explicit_bounds |= c->explicit_bounds;
    if (c->size == 0)
        return;
    if (L->elem_size == -1)
        L->elem_size = c->elem_size;
    else if (L->elem_size != c->elem_size)
        L->elem_size = 0;
    if (!L->have_basic) {
        L->basic_type = c->basic_type;
        L->have_basic = 1;
    } else if (L->basic_type != c->basic_type) {
        L->basic_type = MPI_DATATYPE_NULL;
    }
}

/* Instances of c at offsets lo .. hi (lo <= hi): widen the bounds. */
static void layout_bounds(struct layout *L, MPI_Aint lo, MPI_Aint hi, const struct MPI_ABI_Datatype *c)
{
    MPI_Aint lb = aint_add(L, lo, c->lb), ub = aint_add(L, hi, c->ub);
    if (!L->have_bounds || lb < L->lb)
        L->lb = lb;
    if (!L->have_bounds || ub > L->ub)
        L->ub = ub;
    L->have_bounds = 1;
    if (c->size == 0)
        return;
    MPI_Aint tlb = aint_add(L, lo, c->true_lb), tub = aint_add(L, hi, c->true_ub);
    if (!L->have_true || tlb < L->true_lb)
        L->true_lb = tlb;
    if (!L->have_true || tub > L->true_ub)
        L->true_ub = tub;
    L->have_true = 1;
}

/* `count` instances of c, instance i at disp + i * stride. */
static void layout_block(struct layout *L, MPI_Aint disp, MPI_Count count, MPI_Aint stride,
                         const struct MPI_ABI_Datatype *c)
{
    if (count <= 0)
        return;
    MPI_Aint span = aint_mul(L, (MPI_Aint)(count - 1), stride);
    layout_facts(L, count, c);
    layout_bounds(L, aint_add(L, disp, span < 0 ? span : 0), aint_add(L, disp, span > 0 ? span : 0), c);
    if (L->overflow)
        return;
    struct hashi_type_repr node;
    hashi_repr_repeat(&node, disp, count, stride, c->repr);
    hashi_repr_seq_add(&L->seq, &node);
}

/* `count` blocks at i * stride, each of `blocklen` instances of c at j * extent(c). */
static void layout_vector(struct layout *L, MPI_Count count, MPI_Count blocklen, MPI_Aint stride,
                          const struct MPI_ABI_Datatype *c)
{
    if (count <= 0 || blocklen <= 0)
        return;
    MPI_Aint extent = hashi_type_extent(c);
    MPI_Aint outer = aint_mul(L, (MPI_Aint)(count - 1), stride);
    MPI_Aint inner = aint_mul(L, (MPI_Aint)(blocklen - 1), extent);
    MPI_Count instances;
    if (__builtin_mul_overflow(count, blocklen, &instances)) {
        L->overflow = "the size of the datatype";
        return;
    }
    layout_facts(L, instances, c);
    MPI_Aint lo = aint_add(L, outer < 0 ? outer : 0, inner < 0 ? inner : 0);
    MPI_Aint hi = aint_add(L, outer > 0 ? outer : 0, inner > 0 ? inner : 0);
    layout_bounds(L, lo, hi, c);
    if (L->overflow)
        return;
    struct hashi_type_repr block, node;
    hashi_repr_repeat(&block, 0, blocklen, extent, c->repr);
    const struct hashi_type_repr *stored = hashi_repr_store(&L->t->arena, &block);
    if (!stored) {
        L->seq.failed = 1;
        return;
    }
    hashi_repr_repeat(&node, 0, count, stride, stored);
    hashi_repr_seq_add(&L->seq, &node);
}

/*
 * Give the type its layout and facts. `pad` applies the struct rule: the
 * extent is rounded up to the strictest alignment inside, unless some
 * component's bounds were set explicitly (resized).
 */
static int layout_finish(const char *func, struct layout *L, int pad)
{
    struct MPI_ABI_Datatype *t = L->t;
    if (L->overflow) {
        hashi_repr_seq_discard(&L->seq);
        return hashi_err_type(func, MPI_ERR_ARG, "%s overflows the address range", L->overflow);
    }
    const struct hashi_type_repr *root = hashi_repr_seq_finish(&L->seq, &t->arena);
    if (!root)
        return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory building the datatype's layout");
    t->repr = root;
    t->size = L->size;
    t->lb = L->have_bounds ? L->lb : 0;
    t->ub = L->have_bounds ? L->ub : 0;
    t->true_lb = L->have_true ? L->true_lb : 0;
    t->true_ub = L->have_true ? L->true_ub : 0;
    t->align = L->align;
    t->explicit_bounds = L->explicit_bounds;
    if (pad && !L->explicit_bounds && L->align > 1) {
        MPI_Aint rem = (t->ub - t->lb) % L->align;
        if (rem && __builtin_add_overflow(t->ub, L->align - rem, &t->ub))
            return hashi_err_type(func, MPI_ERR_ARG, "the extent overflows the address range");
    }
    t->nelem = L->nelem;
    t->elem_size = L->elem_size > 0 ? L->elem_size : 0;
    t->basic_type = L->basic_type;
    /* A single leaf is exactly [true_lb, true_lb + size) in stream order. */
    t->dense = root->kind == HASHI_REPR_LEAF;
    t->contiguous = t->size == 0 || (t->dense && t->ub - t->lb == (MPI_Aint)t->size);
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Common argument checks                                                  */
/* ---------------------------------------------------------------------- */

static int check_count(const char *func, const char *what, MPI_Count count)
{
    if (count < 0)
        return hashi_err_type(func, MPI_ERR_COUNT, "%s is negative (%lld)", what, (long long)count);
    return MPI_SUCCESS;
}

static int check_newtype(const char *func, MPI_Datatype *newtype)
{
    if (!newtype)
        return hashi_err_type(func, MPI_ERR_ARG, "newtype is NULL");
    return MPI_SUCCESS;
}

/* Allocate the new type and its envelope together; on failure, raise. */
static int begin_type(const char *func, struct MPI_ABI_Datatype **t, struct hashi_type_envelope *env)
{
    *t = hashi_type_alloc();
    if (!*t || !env) {
        free(*t);
        hashi_envelope_free(env);
        *t = NULL;
        return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory");
    }
    (*t)->envelope = env;
    return MPI_SUCCESS;
}

/* The envelope takes references on the components once the type exists. */
static void keep_type(struct env_writer *w, MPI_Count i, struct MPI_ABI_Datatype *c)
{
    hashi_type_retain(c);
    w->env->types[i] = c;
}

static int end_type(const char *func, struct layout *L, int pad, MPI_Datatype *newtype)
{
    int rc = layout_finish(func, L, pad);
    if (rc != MPI_SUCCESS) {
        hashi_type_discard(L->t);
        return rc;
    }
    *newtype = L->t;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* contiguous, vector, hvector                                             */
/* ---------------------------------------------------------------------- */

static int type_contiguous(const char *func, int large, MPI_Count count, MPI_Datatype oldtype,
                           MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = check_count(func, "count", count);
    if (rc != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Datatype *old = hashi_type_arg(func, "oldtype", oldtype, 0, &rc);
    if (!old)
        return rc;
    if ((rc = check_newtype(func, newtype)) != MPI_SUCCESS)
        return rc;

    struct env_writer w;
    struct MPI_ABI_Datatype *t;
    if ((rc = begin_type(func, &t, env_start(&w, MPI_COMBINER_CONTIGUOUS, large, 0, 1, 0, 1))) != MPI_SUCCESS)
        return rc;
    put_count(&w, count);
    keep_type(&w, 0, old);
    t->combiner = MPI_COMBINER_CONTIGUOUS;

    struct layout L;
    layout_init(&L, t);
    layout_block(&L, 0, count, hashi_type_extent(old), old);
    return end_type(func, &L, 0, newtype);
}

int hashi_impl_Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_contiguous("MPI_Type_contiguous_c", 1, count, oldtype, newtype);
}

int hashi_impl_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_contiguous("MPI_Type_contiguous", 0, count, oldtype, newtype);
}

/* vector (stride in elements of oldtype) and hvector (stride in bytes) */
static int type_vector(const char *func, int combiner, int large, MPI_Count count, MPI_Count blocklength,
                       MPI_Count stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = check_count(func, "count", count);
    if (rc != MPI_SUCCESS)
        return rc;
    if (blocklength < 0)
        return hashi_err_type(func, MPI_ERR_ARG, "blocklength is negative (%lld)", (long long)blocklength);
    struct MPI_ABI_Datatype *old = hashi_type_arg(func, "oldtype", oldtype, 0, &rc);
    if (!old)
        return rc;
    if ((rc = check_newtype(func, newtype)) != MPI_SUCCESS)
        return rc;

    struct env_writer w;
    struct MPI_ABI_Datatype *t;
    int hv = combiner == MPI_COMBINER_HVECTOR;
    if ((rc = begin_type(func, &t, env_start(&w, combiner, large, 0, hv ? 2 : 3, hv ? 1 : 0, 1))) != MPI_SUCCESS)
        return rc;
    put_count(&w, count);
    put_count(&w, blocklength);
    if (hv)
        put_addr(&w, (MPI_Aint)stride);
    else
        put_count(&w, stride);
    keep_type(&w, 0, old);
    t->combiner = combiner;

    struct layout L;
    layout_init(&L, t);
    MPI_Aint stride_bytes = hv ? (MPI_Aint)stride : aint_mul(&L, (MPI_Aint)stride, hashi_type_extent(old));
    layout_vector(&L, count, blocklength, stride_bytes, old);
    return end_type(func, &L, 0, newtype);
}

int hashi_impl_Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype oldtype,
                             MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_vector_c", MPI_COMBINER_VECTOR, 1, count, blocklength, stride, oldtype, newtype);
}

int hashi_impl_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_vector", MPI_COMBINER_VECTOR, 0, count, blocklength, stride, oldtype, newtype);
}

int hashi_impl_Type_create_hvector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                     MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_create_hvector_c", MPI_COMBINER_HVECTOR, 1, count, blocklength, stride, oldtype,
                       newtype);
}

int hashi_impl_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                                   MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_create_hvector", MPI_COMBINER_HVECTOR, 0, count, blocklength, stride, oldtype,
                       newtype);
}

/* ---------------------------------------------------------------------- */
/* indexed, hindexed, indexed_block, hindexed_block                        */
/* ---------------------------------------------------------------------- */

/*
 * One implementation for the four: blocklengths is an array, or (the _block
 * forms) NULL with every block `blocklength` long; displacements are in
 * elements of oldtype (indexed forms) or bytes (the h forms).
 */
static int type_indexed(const char *func, int combiner, int large, MPI_Count count, struct arr blocklengths,
                        MPI_Count blocklength, struct arr displacements, MPI_Datatype oldtype,
                        MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = check_count(func, "count", count);
    if (rc != MPI_SUCCESS)
        return rc;
    int block_form = combiner == MPI_COMBINER_INDEXED_BLOCK || combiner == MPI_COMBINER_HINDEXED_BLOCK;
    int in_bytes = combiner == MPI_COMBINER_HINDEXED || combiner == MPI_COMBINER_HINDEXED_BLOCK;
    if (count > 0 && !block_form && !blocklengths.p)
        return hashi_err_type(func, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    if (count > 0 && !displacements.p)
        return hashi_err_type(func, MPI_ERR_ARG, "array_of_displacements is NULL");
    if (block_form && blocklength < 0)
        return hashi_err_type(func, MPI_ERR_ARG, "blocklength is negative (%lld)", (long long)blocklength);
    for (MPI_Count i = 0; !block_form && i < count; i++)
        if (arr_at(blocklengths, i) < 0)
            return hashi_err_type(func, MPI_ERR_ARG, "array_of_blocklengths[%lld] is negative (%lld)",
                                  (long long)i, (long long)arr_at(blocklengths, i));
    struct MPI_ABI_Datatype *old = hashi_type_arg(func, "oldtype", oldtype, 0, &rc);
    if (!old)
        return rc;
    if ((rc = check_newtype(func, newtype)) != MPI_SUCCESS)
        return rc;

    struct env_writer w;
    struct MPI_ABI_Datatype *t;
    MPI_Count n_counts = 1 + (block_form ? 1 : count) + (in_bytes ? 0 : count);
    MPI_Count n_addrs = in_bytes ? count : 0;
    if ((rc = begin_type(func, &t, env_start(&w, combiner, large, 0, n_counts, n_addrs, 1))) != MPI_SUCCESS)
        return rc;
    put_count(&w, count);
    if (block_form)
        put_count(&w, blocklength);
    for (MPI_Count i = 0; !block_form && i < count; i++)
        put_count(&w, arr_at(blocklengths, i));
    for (MPI_Count i = 0; i < count; i++) {
        if (in_bytes)
            put_addr(&w, (MPI_Aint)arr_at(displacements, i));
        else
            put_count(&w, arr_at(displacements, i));
    }
    keep_type(&w, 0, old);
    t->combiner = combiner;

    struct layout L;
    layout_init(&L, t);
    MPI_Aint extent = hashi_type_extent(old);
    for (MPI_Count i = 0; i < count && !L.overflow; i++) {
        MPI_Aint disp = (MPI_Aint)arr_at(displacements, i);
        if (!in_bytes)
            disp = aint_mul(&L, disp, extent);
        layout_block(&L, disp, block_form ? blocklength : arr_at(blocklengths, i), extent, old);
    }
    return end_type(func, &L, 0, newtype);
}

int hashi_impl_Type_indexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                              const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                              MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_indexed_c", MPI_COMBINER_INDEXED, 1, count, arr_count(array_of_blocklengths), 0,
                        arr_count(array_of_displacements), oldtype, newtype);
}

int hashi_impl_Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
                            MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_indexed", MPI_COMBINER_INDEXED, 0, count, arr_int(array_of_blocklengths), 0,
                        arr_int(array_of_displacements), oldtype, newtype);
}

int hashi_impl_Type_create_hindexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                      const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                      MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_hindexed_c", MPI_COMBINER_HINDEXED, 1, count,
                        arr_count(array_of_blocklengths), 0, arr_count(array_of_displacements), oldtype, newtype);
}

int hashi_impl_Type_create_hindexed(int count, const int array_of_blocklengths[],
                                    const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                    MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_hindexed", MPI_COMBINER_HINDEXED, 0, count, arr_int(array_of_blocklengths),
                        0, arr_aint(array_of_displacements), oldtype, newtype);
}

int hashi_impl_Type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength,
                                           const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                           MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_indexed_block_c", MPI_COMBINER_INDEXED_BLOCK, 1, count, arr_int(NULL),
                        blocklength, arr_count(array_of_displacements), oldtype, newtype);
}

int hashi_impl_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                         MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_indexed_block", MPI_COMBINER_INDEXED_BLOCK, 0, count, arr_int(NULL),
                        blocklength, arr_int(array_of_displacements), oldtype, newtype);
}

int hashi_impl_Type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength,
                                            const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                            MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_hindexed_block_c", MPI_COMBINER_HINDEXED_BLOCK, 1, count, arr_int(NULL),
                        blocklength, arr_count(array_of_displacements), oldtype, newtype);
}

int hashi_impl_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[],
                                          MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_hindexed_block", MPI_COMBINER_HINDEXED_BLOCK, 0, count, arr_int(NULL),
                        blocklength, arr_aint(array_of_displacements), oldtype, newtype);
}

/* ---------------------------------------------------------------------- */
/* struct                                                                  */
/* ---------------------------------------------------------------------- */

static int type_struct(const char *func, int large, MPI_Count count, struct arr blocklengths,
                       struct arr displacements, const MPI_Datatype types[], MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = check_count(func, "count", count);
    if (rc != MPI_SUCCESS)
        return rc;
    if (count > 0 && (!blocklengths.p || !displacements.p || !types))
        return hashi_err_type(func, MPI_ERR_ARG, "%s is NULL",
                              !blocklengths.p ? "array_of_blocklengths"
                              : !displacements.p ? "array_of_displacements" : "array_of_types");
    for (MPI_Count i = 0; i < count; i++) {
        if (arr_at(blocklengths, i) < 0)
            return hashi_err_type(func, MPI_ERR_ARG, "array_of_blocklengths[%lld] is negative (%lld)",
                                  (long long)i, (long long)arr_at(blocklengths, i));
        const char *why;
        if (hashi_type_check(types[i], 0, &why) != MPI_SUCCESS)
            return hashi_err_type(func, MPI_ERR_TYPE, "array_of_types[%lld]: %s", (long long)i, why);
    }
    if ((rc = check_newtype(func, newtype)) != MPI_SUCCESS)
        return rc;

    struct env_writer w;
    struct MPI_ABI_Datatype *t;
    if ((rc = begin_type(func, &t, env_start(&w, MPI_COMBINER_STRUCT, large, 0, 1 + count, count, count)))
        != MPI_SUCCESS)
        return rc;
    put_count(&w, count);
    for (MPI_Count i = 0; i < count; i++)
        put_count(&w, arr_at(blocklengths, i));
    for (MPI_Count i = 0; i < count; i++)
        put_addr(&w, (MPI_Aint)arr_at(displacements, i));
    for (MPI_Count i = 0; i < count; i++)
        keep_type(&w, i, hashi_type_get(types[i]));
    t->combiner = MPI_COMBINER_STRUCT;

    struct layout L;
    layout_init(&L, t);
    for (MPI_Count i = 0; i < count && !L.overflow; i++) {
        const struct MPI_ABI_Datatype *c = w.env->types[i];
        layout_block(&L, (MPI_Aint)arr_at(displacements, i), arr_at(blocklengths, i), hashi_type_extent(c), c);
    }
    return end_type(func, &L, 1, newtype);
}

int hashi_impl_Type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                    const MPI_Count array_of_displacements[], const MPI_Datatype array_of_types[],
                                    MPI_Datatype *newtype)
{
    return type_struct("MPI_Type_create_struct_c", 1, count, arr_count(array_of_blocklengths),
                       arr_count(array_of_displacements), array_of_types, newtype);
}

int hashi_impl_Type_create_struct(int count, const int array_of_blocklengths[],
                                  const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[],
                                  MPI_Datatype *newtype)
{
    return type_struct("MPI_Type_create_struct", 0, count, arr_int(array_of_blocklengths),
                       arr_aint(array_of_displacements), array_of_types, newtype);
}

/* ---------------------------------------------------------------------- */
/* resized                                                                 */
/* ---------------------------------------------------------------------- */

static int type_resized(const char *func, int large, MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                        MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = MPI_SUCCESS;
    struct MPI_ABI_Datatype *old = hashi_type_arg(func, "oldtype", oldtype, 0, &rc);
    if (!old)
        return rc;
    if ((rc = check_newtype(func, newtype)) != MPI_SUCCESS)
        return rc;
    MPI_Aint ub;
    if (__builtin_add_overflow((MPI_Aint)lb, (MPI_Aint)extent, &ub))
        return hashi_err_type(func, MPI_ERR_ARG, "lb + extent overflows the address range");

    struct env_writer w;
    struct MPI_ABI_Datatype *t;
    if ((rc = begin_type(func, &t, env_start(&w, MPI_COMBINER_RESIZED, large, 0, 0, 2, 1))) != MPI_SUCCESS)
        return rc;
    put_addr(&w, (MPI_Aint)lb);
    put_addr(&w, (MPI_Aint)extent);
    keep_type(&w, 0, old);
    t->combiner = MPI_COMBINER_RESIZED;

    /* The data is the old type's (its layout is shared); only the bounds move. */
    t->repr = old->repr;
    t->size = old->size;
    t->lb = (MPI_Aint)lb;
    t->ub = ub;
    t->true_lb = old->true_lb;
    t->true_ub = old->true_ub;
    t->dense = old->dense;
    t->contiguous = t->size == 0 || (t->dense && (MPI_Aint)extent == (MPI_Aint)t->size);
    t->align = old->align;
    t->explicit_bounds = 1;
    t->nelem = old->nelem;
    t->elem_size = old->elem_size;
    t->basic_type = old->basic_type;
    t->pair_value = old->pair_value;
    t->pair_index = old->pair_index;
    t->pair_index_offset = old->pair_index_offset;
    *newtype = t;
    return MPI_SUCCESS;
}

int hashi_impl_Type_create_resized_c(MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent, MPI_Datatype *newtype)
{
    return type_resized("MPI_Type_create_resized_c", 1, oldtype, lb, extent, newtype);
}

int hashi_impl_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)
{
    return type_resized("MPI_Type_create_resized", 0, oldtype, lb, extent, newtype);
}

/* ---------------------------------------------------------------------- */
/* subarray and darray: an n-dimensional array, a selection per dimension  */
/* ---------------------------------------------------------------------- */

/*
 * What one process takes of one dimension, in indices: `nfull` blocks of
 * `blen` at first + k * step, then a shorter block (part_len) at part_start.
 * A subarray is one block; a cyclic distribution many full blocks and
 * perhaps a partial one at the end. Never a list per index.
 */
struct dimsel {
    MPI_Count first, nfull, step, blen;
    MPI_Count part_start, part_len;
};

static MPI_Count dimsel_count(const struct dimsel *s)
{
    return s->nfull * s->blen + s->part_len;
}

/*
 * Build the type of the selected elements of an array of sizes[] elements of
 * old in the given order; lb 0 and extent the whole array (both
 * constructors are defined as resized to the full array).
 */
static int array_layout(const char *func, struct MPI_ABI_Datatype *t, int ndims, const MPI_Count sizes[],
                        const struct dimsel sel[], int order, const struct MPI_ABI_Datatype *old)
{
    struct layout L;
    layout_init(&L, t);
    MPI_Aint extent = hashi_type_extent(old);

    /* stride of each dimension in bytes, fastest dimension first */
    MPI_Aint *stride = malloc((size_t)ndims * sizeof *stride);
    if (!stride)
        return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory");
    MPI_Aint step = extent;
    for (int k = 0; k < ndims; k++) {
        int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
        stride[d] = step;
        step = aint_mul(&L, step, (MPI_Aint)sizes[d]);
    }
    MPI_Aint full_extent = step;

    MPI_Count selected = 1;
    for (int d = 0; d < ndims; d++)
        if (__builtin_mul_overflow(selected, dimsel_count(&sel[d]), &selected))
            L.overflow = "the size of the datatype";
    layout_facts(&L, selected, old);

    /* True bounds: the extreme selected index of every dimension. */
    MPI_Aint lo = 0, hi = 0;
    for (int d = 0; d < ndims && selected > 0; d++) {
        const struct dimsel *s = &sel[d];
        MPI_Count min_index = s->nfull ? s->first : s->part_start;
        MPI_Count max_index = s->part_len ? s->part_start + s->part_len - 1
                                          : s->first + (s->nfull - 1) * s->step + s->blen - 1;
        MPI_Aint a = aint_mul(&L, (MPI_Aint)min_index, stride[d]);
        MPI_Aint b = aint_mul(&L, (MPI_Aint)max_index, stride[d]);
        lo = aint_add(&L, lo, a < b ? a : b);
        hi = aint_add(&L, hi, a < b ? b : a);
    }
    if (selected > 0 && old->size > 0) {
        L.have_true = 1;
        L.true_lb = aint_add(&L, lo, old->true_lb);
        L.true_ub = aint_add(&L, hi, old->true_ub);
    }
    L.have_bounds = 1;
    L.lb = 0;
    L.ub = full_extent;
    L.explicit_bounds = 1;

    /* Layout from the fastest dimension out: each level repeats the previous. */
    const struct hashi_type_repr *inner = old->repr;
    for (int k = 0; k < ndims && !L.overflow && selected > 0; k++) {
        int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
        const struct dimsel *s = &sel[d];
        struct hashi_repr_seq seq;
        struct hashi_type_repr block, blocks, part;
        hashi_repr_seq_init(&seq);
        hashi_repr_repeat(&block, 0, s->blen, stride[d], inner);
        const struct hashi_type_repr *stored = hashi_repr_store(&t->arena, &block);
        if (!stored) {
            free(stride);
            return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory");
        }
        hashi_repr_repeat(&blocks, aint_mul(&L, (MPI_Aint)s->first, stride[d]), s->nfull,
                          aint_mul(&L, (MPI_Aint)s->step, stride[d]), stored);
        hashi_repr_seq_add(&seq, &blocks);
        hashi_repr_repeat(&part, aint_mul(&L, (MPI_Aint)s->part_start, stride[d]), s->part_len, stride[d], inner);
        hashi_repr_seq_add(&seq, &part);
        inner = hashi_repr_seq_finish(&seq, &t->arena);
        if (!inner) {
            free(stride);
            return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory");
        }
    }
    free(stride);
    if (!L.overflow && selected > 0)
        hashi_repr_seq_add(&L.seq, inner);
    return layout_finish(func, &L, 0);
}

/* What subarray and darray build alike: the old type, and per dimension the
 * array's size and the part of it selected. */
struct array_type {
    struct MPI_ABI_Datatype *old;
    MPI_Count *sizes;
    struct dimsel *sel;
};

/* The checks subarray and darray end theirs with (order, oldtype, newtype),
 * then the per-dimension arrays (free them with array_type_free).
 * MPI_SUCCESS or the error raised. */
static int array_type_begin(const char *func, int ndims, int order, MPI_Datatype oldtype, MPI_Datatype *newtype,
                            struct array_type *a)
{
    int rc = MPI_SUCCESS;
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return hashi_err_type(func, MPI_ERR_ARG, "order is %d, not MPI_ORDER_C or MPI_ORDER_FORTRAN", order);
    if (!(a->old = hashi_type_arg(func, "oldtype", oldtype, 0, &rc)))
        return rc;
    if ((rc = check_newtype(func, newtype)) != MPI_SUCCESS)
        return rc;
    a->sizes = malloc((size_t)ndims * sizeof *a->sizes);
    a->sel = calloc((size_t)ndims, sizeof *a->sel);
    if (!a->sizes || !a->sel) {
        free(a->sizes);
        free(a->sel);
        return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory");
    }
    return MPI_SUCCESS;
}

/* t, begun with its envelope written, gets its combiner and type map and
 * becomes *newtype; or it is discarded. */
static int array_type_end(const char *func, const struct array_type *a, struct MPI_ABI_Datatype *t, int combiner,
                          int ndims, int order, MPI_Datatype *newtype)
{
    t->combiner = combiner;
    int rc = array_layout(func, t, ndims, a->sizes, a->sel, order, a->old);
    if (rc == MPI_SUCCESS)
        *newtype = t;
    else
        hashi_type_discard(t);
    return rc;
}

static void array_type_free(struct array_type *a)
{
    free(a->sizes);
    free(a->sel);
}

static int type_subarray(const char *func, int large, int ndims, struct arr sizes, struct arr subsizes,
                         struct arr starts, int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = MPI_SUCCESS;
    if (ndims <= 0)
        return hashi_err_type(func, MPI_ERR_ARG, "ndims must be positive (it is %d)", ndims);
    if (!sizes.p || !subsizes.p || !starts.p)
        return hashi_err_type(func, MPI_ERR_ARG, "%s is NULL",
                              !sizes.p ? "array_of_sizes" : !subsizes.p ? "array_of_subsizes" : "array_of_starts");
    for (int d = 0; d < ndims; d++) {
        MPI_Count size = arr_at(sizes, d), sub = arr_at(subsizes, d), start = arr_at(starts, d);
        if (size <= 0)
            return hashi_err_type(func, MPI_ERR_ARG, "array_of_sizes[%d] is %lld, not positive", d, (long long)size);
        if (sub < 0 || sub > size)
            return hashi_err_type(func, MPI_ERR_ARG, "array_of_subsizes[%d] is %lld, not in [0, %lld]", d,
                                  (long long)sub, (long long)size);
        if (start < 0 || start > size - sub)
            return hashi_err_type(func, MPI_ERR_ARG,
                                  "array_of_starts[%d] is %lld: the subarray (size %lld) must fit in [0, %lld)", d,
                                  (long long)start, (long long)sub, (long long)size);
    }
    struct array_type a;
    if ((rc = array_type_begin(func, ndims, order, oldtype, newtype, &a)) != MPI_SUCCESS)
        return rc;
    for (int d = 0; d < ndims; d++) {
        a.sizes[d] = arr_at(sizes, d);
        a.sel[d].first = arr_at(starts, d);
        a.sel[d].blen = arr_at(subsizes, d);
        a.sel[d].nfull = 1;
    }

    struct env_writer w;
    struct MPI_ABI_Datatype *t;
    rc = begin_type(func, &t, env_start(&w, MPI_COMBINER_SUBARRAY, large, 2, 3 * (MPI_Count)ndims, 0, 1));
    if (rc == MPI_SUCCESS) {
        put_int(&w, ndims);
        for (int d = 0; d < ndims; d++)
            put_count(&w, arr_at(sizes, d));
        for (int d = 0; d < ndims; d++)
            put_count(&w, arr_at(subsizes, d));
        for (int d = 0; d < ndims; d++)
            put_count(&w, arr_at(starts, d));
        put_int(&w, order);
        keep_type(&w, 0, a.old);
        rc = array_type_end(func, &a, t, MPI_COMBINER_SUBARRAY, ndims, order, newtype);
    }
    array_type_free(&a);
    return rc;
}

int hashi_impl_Type_create_subarray_c(int ndims, const MPI_Count array_of_sizes[],
                                      const MPI_Count array_of_subsizes[], const MPI_Count array_of_starts[],
                                      int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_subarray("MPI_Type_create_subarray_c", 1, ndims, arr_count(array_of_sizes),
                         arr_count(array_of_subsizes), arr_count(array_of_starts), order, oldtype, newtype);
}

int hashi_impl_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                                    const int array_of_starts[], int order, MPI_Datatype oldtype,
                                    MPI_Datatype *newtype)
{
    return type_subarray("MPI_Type_create_subarray", 0, ndims, arr_int(array_of_sizes), arr_int(array_of_subsizes),
                         arr_int(array_of_starts), order, oldtype, newtype);
}

/*
 * The part of dimension d (gsize elements over psize processes) that the
 * process at coordinate coord owns, as the standard's darray defines it.
 */
static int darray_dim(const char *func, int d, MPI_Count gsize, int distrib, int darg, int psize, int coord,
                      struct dimsel *s)
{
    memset(s, 0, sizeof *s);
    switch (distrib) {
    case MPI_DISTRIBUTE_NONE:
        /* not distributed: every process has the whole dimension */
        s->nfull = 1;
        s->blen = gsize;
        return MPI_SUCCESS;
    case MPI_DISTRIBUTE_BLOCK: {
        MPI_Count b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
        if (b <= 0)
            return hashi_err_type(func, MPI_ERR_ARG, "array_of_dargs[%d] is %d, not positive", d, darg);
        if (b * psize < gsize)
            return hashi_err_type(func, MPI_ERR_ARG,
                                  "dimension %d: blocks of %lld on %d processes cannot cover %lld elements", d,
                                  (long long)b, psize, (long long)gsize);
        MPI_Count start = b * coord;
        MPI_Count len = gsize - start < b ? gsize - start : b;
        if (len > 0) {
            s->first = start;
            s->nfull = 1;
            s->blen = len;
        }
        return MPI_SUCCESS;
    }
    case MPI_DISTRIBUTE_CYCLIC: {
        MPI_Count b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        if (b <= 0)
            return hashi_err_type(func, MPI_ERR_ARG, "array_of_dargs[%d] is %d, not positive", d, darg);
        MPI_Count start = b * coord, step = b * psize;
        if (start >= gsize)
            return MPI_SUCCESS;
        /* blocks starting at start + k * step below gsize; the last may be short */
        MPI_Count blocks = (gsize - start + step - 1) / step;
        MPI_Count last = start + (blocks - 1) * step;
        s->first = start;
        s->step = step;
        s->blen = b;
        if (gsize - last < b) {
            s->nfull = blocks - 1;
            s->part_start = last;
            s->part_len = gsize - last;
        } else {
            s->nfull = blocks;
        }
        return MPI_SUCCESS;
    }
    default:
        return hashi_err_type(func, MPI_ERR_ARG, "array_of_distribs[%d] is %d, not an MPI_DISTRIBUTE_*", d,
                              distrib);
    }
}

static int type_darray(const char *func, int large, int size, int rank, int ndims, struct arr gsizes,
                       const int distribs[], const int dargs[], const int psizes[], int order,
                       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = MPI_SUCCESS;
    if (size <= 0)
        return hashi_err_type(func, MPI_ERR_ARG, "size must be positive (it is %d)", size);
    if (rank < 0 || rank >= size)
        return hashi_err_type(func, MPI_ERR_ARG, "rank %d is not in [0, %d)", rank, size);
    if (ndims <= 0)
        return hashi_err_type(func, MPI_ERR_ARG, "ndims must be positive (it is %d)", ndims);
    if (!gsizes.p || !distribs || !dargs || !psizes)
        return hashi_err_type(func, MPI_ERR_ARG, "%s is NULL",
                              !gsizes.p ? "array_of_gsizes" : !distribs ? "array_of_distribs"
                              : !dargs ? "array_of_dargs" : "array_of_psizes");
    long long procs = 1;
    for (int d = 0; d < ndims; d++) {
        if (arr_at(gsizes, d) <= 0)
            return hashi_err_type(func, MPI_ERR_ARG, "array_of_gsizes[%d] is %lld, not positive", d,
                                  (long long)arr_at(gsizes, d));
        if (psizes[d] <= 0)
            return hashi_err_type(func, MPI_ERR_ARG, "array_of_psizes[%d] is %d, not positive", d, psizes[d]);
        procs *= psizes[d];
        if (procs > size)
            break;
    }
    if (procs != size)
        return hashi_err_type(func, MPI_ERR_ARG, "the process grid (array_of_psizes) does not have %d processes",
                              size);
    struct array_type a;
    if ((rc = array_type_begin(func, ndims, order, oldtype, newtype, &a)) != MPI_SUCCESS)
        return rc;
    /* The process grid is numbered in row-major order, whatever the array order. */
    int rest = rank;
    for (int d = ndims - 1; d >= 0 && rc == MPI_SUCCESS; d--) {
        int coord = rest % psizes[d];
        rest /= psizes[d];
        a.sizes[d] = arr_at(gsizes, d);
        rc = darray_dim(func, d, a.sizes[d], distribs[d], dargs[d], psizes[d], coord, &a.sel[d]);
    }

    struct env_writer w;
    struct MPI_ABI_Datatype *t = NULL;
    if (rc == MPI_SUCCESS)
        rc = begin_type(func, &t, env_start(&w, MPI_COMBINER_DARRAY, large, 4 + 3 * (MPI_Count)ndims,
                                            (MPI_Count)ndims, 0, 1));
    if (rc == MPI_SUCCESS) {
        put_int(&w, size);
        put_int(&w, rank);
        put_int(&w, ndims);
        for (int d = 0; d < ndims; d++)
            put_count(&w, arr_at(gsizes, d));
        for (int d = 0; d < ndims; d++)
            put_int(&w, distribs[d]);
        for (int d = 0; d < ndims; d++)
            put_int(&w, dargs[d]);
        for (int d = 0; d < ndims; d++)
            put_int(&w, psizes[d]);
        put_int(&w, order);
        keep_type(&w, 0, a.old);
        rc = array_type_end(func, &a, t, MPI_COMBINER_DARRAY, ndims, order, newtype);
    }
    array_type_free(&a);
    return rc;
}

int hashi_impl_Type_create_darray_c(int size, int rank, int ndims, const MPI_Count array_of_gsizes[],
                                    const int array_of_distribs[], const int array_of_dargs[],
                                    const int array_of_psizes[], int order, MPI_Datatype oldtype,
                                    MPI_Datatype *newtype)
{
    return type_darray("MPI_Type_create_darray_c", 1, size, rank, ndims, arr_count(array_of_gsizes),
                       array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype);
}

int hashi_impl_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                                  const int array_of_distribs[], const int array_of_dargs[],
                                  const int array_of_psizes[], int order, MPI_Datatype oldtype,
                                  MPI_Datatype *newtype)
{
    return type_darray("MPI_Type_create_darray", 0, size, rank, ndims, arr_int(array_of_gsizes), array_of_distribs,
                       array_of_dargs, array_of_psizes, order, oldtype, newtype);
}
