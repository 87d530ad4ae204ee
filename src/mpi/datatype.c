/*
 * Datatype objects: the predefined types, handles, references, commit / free /
 * dup, the queries (size, extents, envelope, contents, names), element
 * counting, MPI_Type_match_size and MPI_Type_get_value_index.
 * Constructors are in datatype_create.c, MPI_Pack & co. in datatype_pack.c,
 * the engine in datatype_engine.c.
 */
#include "mpi/datatype_internal.h"
#include "mpi/attr.h"
#include "mpi/handles.h"

#include <complex.h>
#include <limits.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* ---------------------------------------------------------------------- */
/* The predefined types                                                    */
/* ---------------------------------------------------------------------- */

#define PREDEF_BASE HASHI_TYPE_PREDEF_BASE
#define PREDEF_COUNT HASHI_TYPE_PREDEF_COUNT

struct MPI_ABI_Datatype hashi_type_predef[PREDEF_COUNT];
static struct hashi_type_repr predef_repr[PREDEF_COUNT];

/* The pair types, laid out as C lays out these structs. */
struct pair_float_int { float value; int index; };
struct pair_double_int { double value; int index; };
struct pair_long_int { long value; int index; };
struct pair_2int { int value; int index; };
struct pair_short_int { short value; int index; };
struct pair_long_double_int { long double value; int index; };
struct pair_2real { float value; float index; };        /* Fortran REAL is 4 bytes */
struct pair_2double { double value; double index; };   /* DOUBLE PRECISION */
struct pair_2integer { int value; int index; };         /* INTEGER */

struct basic_spec {
    MPI_Datatype handle;
    const char *name;
    MPI_Count size;
    int align;
};

#define C_TYPE(h, ctype) { h, #h, sizeof(ctype), alignof(ctype) }
/* Fortran types: default INTEGER / REAL are 4 bytes, as the ABI assumes. */
#define F_TYPE(h, size, align) { h, #h, size, align }

static const struct basic_spec basic_specs[] = {
    C_TYPE(MPI_AINT, MPI_Aint),
    C_TYPE(MPI_COUNT, MPI_Count),
    C_TYPE(MPI_OFFSET, MPI_Offset),
    F_TYPE(MPI_PACKED, 1, 1),
    C_TYPE(MPI_SHORT, short),
    C_TYPE(MPI_INT, int),
    C_TYPE(MPI_LONG, long),
    C_TYPE(MPI_LONG_LONG, long long),
    C_TYPE(MPI_UNSIGNED_SHORT, unsigned short),
    C_TYPE(MPI_UNSIGNED, unsigned),
    C_TYPE(MPI_UNSIGNED_LONG, unsigned long),
    C_TYPE(MPI_UNSIGNED_LONG_LONG, unsigned long long),
    C_TYPE(MPI_FLOAT, float),
    C_TYPE(MPI_C_FLOAT_COMPLEX, float _Complex),
    C_TYPE(MPI_CXX_FLOAT_COMPLEX, float _Complex),
    C_TYPE(MPI_DOUBLE, double),
    C_TYPE(MPI_C_DOUBLE_COMPLEX, double _Complex),
    C_TYPE(MPI_CXX_DOUBLE_COMPLEX, double _Complex),
    F_TYPE(MPI_LOGICAL, 4, 4),
    F_TYPE(MPI_INTEGER, 4, 4),
    F_TYPE(MPI_REAL, 4, 4),
    F_TYPE(MPI_COMPLEX, 8, 4),
    F_TYPE(MPI_DOUBLE_PRECISION, 8, 8),
    F_TYPE(MPI_DOUBLE_COMPLEX, 16, 8),
    F_TYPE(MPI_CHARACTER, 1, 1),
    C_TYPE(MPI_LONG_DOUBLE, long double),
    C_TYPE(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex),
    C_TYPE(MPI_CXX_LONG_DOUBLE_COMPLEX, long double _Complex),
    C_TYPE(MPI_C_BOOL, _Bool),
    C_TYPE(MPI_CXX_BOOL, _Bool),      /* C++ bool: one byte, like _Bool, on every ABI we run on */
    C_TYPE(MPI_WCHAR, wchar_t),
    C_TYPE(MPI_INT8_T, int8_t),
    C_TYPE(MPI_UINT8_T, uint8_t),
    C_TYPE(MPI_CHAR, char),
    C_TYPE(MPI_SIGNED_CHAR, signed char),
    C_TYPE(MPI_UNSIGNED_CHAR, unsigned char),
    F_TYPE(MPI_BYTE, 1, 1),
    C_TYPE(MPI_INT16_T, int16_t),
    C_TYPE(MPI_UINT16_T, uint16_t),
    C_TYPE(MPI_INT32_T, int32_t),
    C_TYPE(MPI_UINT32_T, uint32_t),
    C_TYPE(MPI_INT64_T, int64_t),
    C_TYPE(MPI_UINT64_T, uint64_t),
    F_TYPE(MPI_LOGICAL1, 1, 1),
    F_TYPE(MPI_INTEGER1, 1, 1),
    F_TYPE(MPI_LOGICAL2, 2, 2),
    F_TYPE(MPI_INTEGER2, 2, 2),
    F_TYPE(MPI_REAL2, 2, 2),
    F_TYPE(MPI_LOGICAL4, 4, 4),
    F_TYPE(MPI_INTEGER4, 4, 4),
    F_TYPE(MPI_REAL4, 4, 4),
    F_TYPE(MPI_COMPLEX4, 4, 2),
    F_TYPE(MPI_LOGICAL8, 8, 8),
    F_TYPE(MPI_INTEGER8, 8, 8),
    F_TYPE(MPI_REAL8, 8, 8),
    F_TYPE(MPI_COMPLEX8, 8, 4),
    F_TYPE(MPI_LOGICAL16, 16, 16),
    F_TYPE(MPI_INTEGER16, 16, 16),
    F_TYPE(MPI_REAL16, 16, 16),
    F_TYPE(MPI_COMPLEX16, 16, 8),
    F_TYPE(MPI_COMPLEX32, 32, 16),
};

struct pair_spec {
    MPI_Datatype handle;
    const char *name;
    MPI_Datatype value, index;
    MPI_Aint index_offset;
    MPI_Aint extent;
    int align;
};

#define PAIR(h, st, v, i) { h, #h, v, i, offsetof(struct st, index), sizeof(struct st), alignof(struct st) }

static const struct pair_spec pair_specs[] = {
    PAIR(MPI_FLOAT_INT, pair_float_int, MPI_FLOAT, MPI_INT),
    PAIR(MPI_DOUBLE_INT, pair_double_int, MPI_DOUBLE, MPI_INT),
    PAIR(MPI_LONG_INT, pair_long_int, MPI_LONG, MPI_INT),
    PAIR(MPI_2INT, pair_2int, MPI_INT, MPI_INT),
    PAIR(MPI_SHORT_INT, pair_short_int, MPI_SHORT, MPI_INT),
    PAIR(MPI_LONG_DOUBLE_INT, pair_long_double_int, MPI_LONG_DOUBLE, MPI_INT),
    PAIR(MPI_2REAL, pair_2real, MPI_REAL, MPI_REAL),
    PAIR(MPI_2DOUBLE_PRECISION, pair_2double, MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION),
    PAIR(MPI_2INTEGER, pair_2integer, MPI_INTEGER, MPI_INTEGER),
};
#define NPAIRS (sizeof pair_specs / sizeof pair_specs[0])

/* A pair with a gap (MPI_SHORT_INT) has two runs; their arrays live here. */
static struct {
    MPI_Aint offs[2];
    MPI_Count lens[2], ends[2];
} pair_runs[NPAIRS];

static size_t predef_index(MPI_Datatype h)
{
    return (size_t)((uintptr_t)h - PREDEF_BASE);
}

static struct MPI_ABI_Datatype *predef_slot(MPI_Datatype h)
{
    return &hashi_type_predef[predef_index(h)];
}

static void init_named(struct MPI_ABI_Datatype *t, MPI_Datatype handle, const char *name)
{
    memset(t, 0, sizeof *t);
    t->combiner = MPI_COMBINER_NAMED;
    t->committed = 1;
    t->predefined = 1;
    t->basic_type = handle;
    t->pair_value = MPI_DATATYPE_NULL;
    t->pair_index = MPI_DATATYPE_NULL;
    atomic_init(&t->refcount, 1);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->repr = &predef_repr[t - hashi_type_predef];
}

void hashi_types_init(void)
{
    for (size_t i = 0; i < sizeof basic_specs / sizeof basic_specs[0]; i++) {
        const struct basic_spec *s = &basic_specs[i];
        struct MPI_ABI_Datatype *t = predef_slot(s->handle);
        init_named(t, s->handle, s->name);
        t->size = s->size;
        t->ub = t->true_ub = (MPI_Aint)s->size;
        t->contiguous = t->dense = 1;
        t->basic = s->handle != MPI_PACKED;
        t->align = s->align;
        t->nelem = 1;
        t->elem_size = s->size;
        hashi_repr_leaf(&predef_repr[predef_index(s->handle)], 0, s->size);
        t->magic = HASHI_TYPE_MAGIC;
    }
    for (size_t i = 0; i < NPAIRS; i++) {
        const struct pair_spec *s = &pair_specs[i];
        const struct MPI_ABI_Datatype *v = predef_slot(s->value), *x = predef_slot(s->index);
        struct MPI_ABI_Datatype *t = predef_slot(s->handle);
        init_named(t, s->handle, s->name);
        t->size = v->size + x->size;
        t->ub = s->extent;
        t->true_ub = s->index_offset + (MPI_Aint)x->size;
        t->dense = s->index_offset == (MPI_Aint)v->size;
        t->contiguous = t->dense && t->ub == (MPI_Aint)t->size;
        t->basic = 1;
        t->align = s->align;
        t->nelem = 2;
        t->elem_size = v->size == x->size ? v->size : 0;
        t->pair_value = s->value;
        t->pair_index = s->index;
        t->pair_index_offset = s->index_offset;
        struct hashi_type_repr *repr = &predef_repr[predef_index(s->handle)];
        if (t->dense) {
            hashi_repr_leaf(repr, 0, t->size);
        } else {
            pair_runs[i].offs[0] = 0;
            pair_runs[i].offs[1] = s->index_offset;
            pair_runs[i].lens[0] = pair_runs[i].ends[0] = v->size;
            pair_runs[i].lens[1] = x->size;
            pair_runs[i].ends[1] = t->size;
            memset(repr, 0, sizeof *repr);
            repr->kind = HASHI_REPR_RUNS;
            repr->size = t->size;
            repr->count = 2;
            repr->u.runs.offs = pair_runs[i].offs;
            repr->u.runs.lens = pair_runs[i].lens;
            repr->u.runs.ends = pair_runs[i].ends;
        }
        t->magic = HASHI_TYPE_MAGIC;
    }
}

/* ---------------------------------------------------------------------- */
/* Handles, references, argument checks                                    */
/* ---------------------------------------------------------------------- */

MPI_Datatype hashi_type_handle(struct MPI_ABI_Datatype *t)
{
    if (t >= hashi_type_predef && t < hashi_type_predef + PREDEF_COUNT)
        return (MPI_Datatype)(uintptr_t)(PREDEF_BASE + (uintptr_t)(t - hashi_type_predef));
    return t;
}

int hashi_type_check(MPI_Datatype type, int need_committed, const char **why)
{
    const char *reason = NULL;
    if (type == MPI_DATATYPE_NULL) {
        reason = "the datatype is MPI_DATATYPE_NULL";
    } else {
        struct MPI_ABI_Datatype *t = hashi_type_get(type);
        if (!t)
            reason = "not a valid datatype handle";
        else if (need_committed && !t->committed)
            reason = "the datatype is not committed (MPI_Type_commit)";
    }
    if (why)
        *why = reason;
    return reason ? MPI_ERR_TYPE : MPI_SUCCESS;
}

struct MPI_ABI_Datatype *hashi_type_arg(const char *func, const char *what, MPI_Datatype type,
                                        int need_committed, int *rc)
{
    const char *why;
    if (hashi_type_check(type, need_committed, &why) != MPI_SUCCESS) {
        *rc = hashi_err_type(func, MPI_ERR_TYPE, "%s: %s", what, why);
        return NULL;
    }
    return hashi_type_get(type);
}

struct MPI_ABI_Datatype *hashi_type_alloc(void)
{
    struct MPI_ABI_Datatype *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->magic = HASHI_TYPE_MAGIC;
    atomic_init(&t->refcount, 1);
    t->basic_type = MPI_DATATYPE_NULL;
    t->pair_value = MPI_DATATYPE_NULL;
    t->pair_index = MPI_DATATYPE_NULL;
    return t;
}

void hashi_type_destroy(struct MPI_ABI_Datatype *t)
{
    hashi_handle_forget(t);
    hashi_attr_discard(&t->attributes); /* deleted by MPI_Type_free; left only by a failed dup */
    hashi_envelope_free(t->envelope);
    hashi_repr_arena_free(t->arena);
    t->magic = 0;     /* a stale handle used later is reported, not followed */
    free(t);
}

void hashi_type_discard(struct MPI_ABI_Datatype *t)
{
    if (t)
        hashi_type_destroy(t);
}

struct hashi_type_envelope *hashi_envelope_new(int combiner, int large, MPI_Count ni, MPI_Count na,
                                               MPI_Count nl, MPI_Count nd)
{
    /* one block: header, then the arrays, most strictly aligned first */
    size_t bytes = sizeof(struct hashi_type_envelope) + (size_t)na * sizeof(MPI_Aint)
                   + (size_t)nl * sizeof(MPI_Count) + (size_t)nd * sizeof(struct MPI_ABI_Datatype *)
                   + (size_t)ni * sizeof(int);
    struct hashi_type_envelope *env = calloc(1, bytes);
    if (!env)
        return NULL;
    char *p = (char *)(env + 1);
    env->combiner = combiner;
    env->large = large;
    env->ni = ni;
    env->na = na;
    env->nl = nl;
    env->nd = nd;
    env->addrs = (MPI_Aint *)p;
    p += (size_t)na * sizeof(MPI_Aint);
    env->larges = (MPI_Count *)p;
    p += (size_t)nl * sizeof(MPI_Count);
    env->types = (struct MPI_ABI_Datatype **)p;
    p += (size_t)nd * sizeof(struct MPI_ABI_Datatype *);
    env->ints = (int *)p;
    return env;
}

void hashi_envelope_free(struct hashi_type_envelope *env)
{
    if (!env)
        return;
    for (MPI_Count i = 0; i < env->nd; i++)
        hashi_type_release(env->types[i]);
    free(env);
}

/* ---------------------------------------------------------------------- */
/* Commit, free, dup                                                       */
/* ---------------------------------------------------------------------- */

int hashi_impl_Type_commit(MPI_Datatype *datatype)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_commit");
    int rc = MPI_SUCCESS;
    if (!datatype)
        return hashi_err_type("MPI_Type_commit", MPI_ERR_ARG, "datatype is NULL");
    struct MPI_ABI_Datatype *t = hashi_type_arg("MPI_Type_commit", "datatype", *datatype, 0, &rc);
    if (!t)
        return rc;
    /* The layout is built by the constructor already: committing only allows use. */
    t->committed = 1;
    return MPI_SUCCESS;
}

int hashi_impl_Type_free(MPI_Datatype *datatype)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_free");
    int rc = MPI_SUCCESS;
    if (!datatype)
        return hashi_err_type("MPI_Type_free", MPI_ERR_ARG, "datatype is NULL");
    struct MPI_ABI_Datatype *t = hashi_type_arg("MPI_Type_free", "datatype", *datatype, 0, &rc);
    if (!t)
        return rc;
    if (t->predefined)
        return hashi_err_type("MPI_Type_free", MPI_ERR_TYPE, "%s is predefined and cannot be freed", t->name);
    /* Attributes go at the call (attr.c); a failing delete callback fails it. */
    rc = hashi_attr_delete_all(HASHI_ATTR_TYPE, *datatype, &t->attributes);
    if (rc != MPI_SUCCESS)
        return hashi_err_type("MPI_Type_free", rc, "an attribute delete callback failed (error %d)", rc);
    /* Pending operations and types built on it hold their own references. */
    *datatype = MPI_DATATYPE_NULL;
    hashi_type_release(t);
    return MPI_SUCCESS;
}

/* t gets old's layout (shared: old outlives t). */
static void share_layout(struct MPI_ABI_Datatype *t, const struct MPI_ABI_Datatype *old)
{
    t->size = old->size;
    t->lb = old->lb;
    t->ub = old->ub;
    t->true_lb = old->true_lb;
    t->true_ub = old->true_ub;
    t->contiguous = old->contiguous;
    t->basic_type = old->basic_type;
    t->repr = old->repr;
    t->dense = old->dense;
    t->align = old->align;
    t->explicit_bounds = old->explicit_bounds;
    t->nelem = old->nelem;
    t->elem_size = old->elem_size;
    t->pair_value = old->pair_value;
    t->pair_index = old->pair_index;
    t->pair_index_offset = old->pair_index_offset;
}

int hashi_impl_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_dup");
    int rc = MPI_SUCCESS;
    struct MPI_ABI_Datatype *old = hashi_type_arg("MPI_Type_dup", "oldtype", oldtype, 0, &rc);
    if (!old)
        return rc;
    if (!newtype)
        return hashi_err_type("MPI_Type_dup", MPI_ERR_ARG, "newtype is NULL");
    struct MPI_ABI_Datatype *t = hashi_type_alloc();
    struct hashi_type_envelope *env = hashi_envelope_new(MPI_COMBINER_DUP, 0, 0, 0, 0, 1);
    if (!t || !env) {
        free(t);
        free(env);
        return hashi_err_type("MPI_Type_dup", MPI_ERR_NO_MEM, "out of memory");
    }
    /* Same layout, shared: the duplicate holds a reference on the original. */
    share_layout(t, old);
    t->combiner = MPI_COMBINER_DUP;
    t->committed = old->committed;
    hashi_type_retain(old);
    env->types[0] = old;
    t->envelope = env;
    /* Cached attributes follow their copy callbacks (attr.c). */
    rc = hashi_attr_copy_all(HASHI_ATTR_TYPE, oldtype, &old->attributes, t, &t->attributes);
    if (rc != MPI_SUCCESS) {
        hashi_type_destroy(t);
        return hashi_err_type("MPI_Type_dup", rc, "an attribute copy callback failed (error %d)", rc);
    }
    *newtype = t;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Size and extents                                                        */
/* ---------------------------------------------------------------------- */

static int type_size(const char *func, MPI_Datatype datatype, MPI_Count *size)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = MPI_SUCCESS;
    struct MPI_ABI_Datatype *t = hashi_type_arg(func, "datatype", datatype, 0, &rc);
    if (!t)
        return rc;
    if (!size)
        return hashi_err_type(func, MPI_ERR_ARG, "size is NULL");
    *size = t->size;
    return MPI_SUCCESS;
}

int hashi_impl_Type_size_c(MPI_Datatype datatype, MPI_Count *size)
{
    return type_size("MPI_Type_size_c", datatype, size);
}

int hashi_impl_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    return type_size("MPI_Type_size_x", datatype, size);
}

int hashi_impl_Type_size(MPI_Datatype datatype, int *size)
{
    MPI_Count n = 0;
    int rc = type_size("MPI_Type_size", datatype, size ? &n : NULL);
    /* The standard: a size an int cannot hold is reported as MPI_UNDEFINED. */
    if (rc == MPI_SUCCESS)
        *size = n > INT_MAX ? MPI_UNDEFINED : (int)n;
    return rc;
}

/* lb and extent (true_extent: the true ones) of a type, for every variant. */
static int get_extent(const char *func, MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent, int true_extent)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = MPI_SUCCESS;
    struct MPI_ABI_Datatype *t = hashi_type_arg(func, "datatype", datatype, 0, &rc);
    if (!t)
        return rc;
    if (!lb || !extent)
        return hashi_err_type(func, MPI_ERR_ARG, "%s is NULL", !lb ? "lb" : "extent");
    *lb = true_extent ? t->true_lb : t->lb;
    *extent = true_extent ? t->true_ub - t->true_lb : t->ub - t->lb;
    return MPI_SUCCESS;
}

/* The MPI_Aint variants (the values always fit: extents are address differences). */
static int get_extent_aint(const char *func, MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent, int true_extent)
{
    MPI_Count l = 0, e = 0;
    int rc = get_extent(func, datatype, lb ? &l : NULL, extent ? &e : NULL, true_extent);
    if (rc == MPI_SUCCESS) {
        *lb = (MPI_Aint)l;
        *extent = (MPI_Aint)e;
    }
    return rc;
}

int hashi_impl_Type_get_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    return get_extent("MPI_Type_get_extent_c", datatype, lb, extent, 0);
}

int hashi_impl_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    return get_extent("MPI_Type_get_extent_x", datatype, lb, extent, 0);
}

int hashi_impl_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    return get_extent_aint("MPI_Type_get_extent", datatype, lb, extent, 0);
}

int hashi_impl_Type_get_true_extent_c(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    return get_extent("MPI_Type_get_true_extent_c", datatype, true_lb, true_extent, 1);
}

int hashi_impl_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    return get_extent("MPI_Type_get_true_extent_x", datatype, true_lb, true_extent, 1);
}

int hashi_impl_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    return get_extent_aint("MPI_Type_get_true_extent", datatype, true_lb, true_extent, 1);
}

/* ---------------------------------------------------------------------- */
/* Envelope and contents                                                   */
/* ---------------------------------------------------------------------- */

static int envelope_of(const char *func, MPI_Datatype datatype, struct MPI_ABI_Datatype **tp,
                       const struct hashi_type_envelope **envp)
{
    int rc = MPI_SUCCESS;
    struct MPI_ABI_Datatype *t = hashi_type_arg(func, "datatype", datatype, 0, &rc);
    if (!t)
        return rc;
    *tp = t;
    *envp = t->envelope;
    return MPI_SUCCESS;
}

int hashi_impl_Type_get_envelope_c(MPI_Datatype datatype, MPI_Count *num_integers, MPI_Count *num_addresses,
                                   MPI_Count *num_large_counts, MPI_Count *num_datatypes, int *combiner)
{
    static const char func[] = "MPI_Type_get_envelope_c";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Datatype *t = NULL;
    const struct hashi_type_envelope *env = NULL;
    int rc = envelope_of(func, datatype, &t, &env);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!num_integers || !num_addresses || !num_large_counts || !num_datatypes || !combiner)
        return hashi_err_type(func, MPI_ERR_ARG, "an output argument is NULL");
    *combiner = env ? env->combiner : MPI_COMBINER_NAMED;
    *num_integers = env ? env->ni : 0;
    *num_addresses = env ? env->na : 0;
    *num_large_counts = env ? env->nl : 0;
    *num_datatypes = env ? env->nd : 0;
    return MPI_SUCCESS;
}

int hashi_impl_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                                 int *num_datatypes, int *combiner)
{
    static const char func[] = "MPI_Type_get_envelope";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Datatype *t = NULL;
    const struct hashi_type_envelope *env = NULL;
    int rc = envelope_of(func, datatype, &t, &env);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!num_integers || !num_addresses || !num_datatypes || !combiner)
        return hashi_err_type(func, MPI_ERR_ARG, "an output argument is NULL");
    if (env && env->large)
        return hashi_err_type(func, MPI_ERR_VALUE_TOO_LARGE,
                              "the datatype was made by a large-count constructor: "
                              "decode it with MPI_Type_get_envelope_c");
    if (env && (env->ni > INT_MAX || env->na > INT_MAX || env->nd > INT_MAX))
        return hashi_err_type(func, MPI_ERR_VALUE_TOO_LARGE, "the envelope's counts do not fit in an int");
    *combiner = env ? env->combiner : MPI_COMBINER_NAMED;
    *num_integers = env ? (int)env->ni : 0;
    *num_addresses = env ? (int)env->na : 0;
    *num_datatypes = env ? (int)env->nd : 0;
    return MPI_SUCCESS;
}

static int get_contents(const char *func, MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                        MPI_Count max_large_counts, MPI_Count max_datatypes, int array_of_integers[],
                        MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[],
                        MPI_Datatype array_of_datatypes[], int large_call)
{
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Datatype *t = NULL;
    const struct hashi_type_envelope *env = NULL;
    int rc = envelope_of(func, datatype, &t, &env);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!env)
        return hashi_err_type(func, MPI_ERR_TYPE, "%s is a named predefined datatype: it has no contents",
                              t->name);
    if (!large_call && env->large)
        return hashi_err_type(func, MPI_ERR_VALUE_TOO_LARGE,
                              "the datatype was made by a large-count constructor: "
                              "decode it with MPI_Type_get_contents_c");
    if (max_integers < env->ni || max_addresses < env->na || max_large_counts < env->nl
        || max_datatypes < env->nd)
        return hashi_err_type(func, MPI_ERR_ARG,
                              "the arrays are too small (need %lld integers, %lld addresses, "
                              "%lld large counts, %lld datatypes: see MPI_Type_get_envelope)",
                              (long long)env->ni, (long long)env->na, (long long)env->nl, (long long)env->nd);
    if ((env->ni && !array_of_integers) || (env->na && !array_of_addresses)
        || (env->nl && !array_of_large_counts) || (env->nd && !array_of_datatypes))
        return hashi_err_type(func, MPI_ERR_ARG, "an output array is NULL");
    /* (the arrays are known non-NULL here; the tests keep the compiler sure of it) */
    if (env->ni && array_of_integers)
        memcpy(array_of_integers, env->ints, (size_t)env->ni * sizeof(int));
    if (env->na && array_of_addresses)
        memcpy(array_of_addresses, env->addrs, (size_t)env->na * sizeof(MPI_Aint));
    if (env->nl && array_of_large_counts)
        memcpy(array_of_large_counts, env->larges, (size_t)env->nl * sizeof(MPI_Count));
    for (MPI_Count i = 0; i < env->nd; i++) {
        /* Derived types come back as new references the caller frees. */
        hashi_type_retain(env->types[i]);
        array_of_datatypes[i] = hashi_type_handle(env->types[i]);
    }
    return MPI_SUCCESS;
}

int hashi_impl_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                                   MPI_Count max_large_counts, MPI_Count max_datatypes, int array_of_integers[],
                                   MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[],
                                   MPI_Datatype array_of_datatypes[])
{
    return get_contents("MPI_Type_get_contents_c", datatype, max_integers, max_addresses, max_large_counts,
                        max_datatypes, array_of_integers, array_of_addresses, array_of_large_counts,
                        array_of_datatypes, 1);
}

int hashi_impl_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses, int max_datatypes,
                                 int array_of_integers[], MPI_Aint array_of_addresses[],
                                 MPI_Datatype array_of_datatypes[])
{
    return get_contents("MPI_Type_get_contents", datatype, max_integers, max_addresses, 0, max_datatypes,
                        array_of_integers, array_of_addresses, NULL, array_of_datatypes, 0);
}

/* ---------------------------------------------------------------------- */
/* Names                                                                   */
/* ---------------------------------------------------------------------- */

int hashi_impl_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_set_name");
    int rc = MPI_SUCCESS;
    struct MPI_ABI_Datatype *t = hashi_type_arg("MPI_Type_set_name", "datatype", datatype, 0, &rc);
    if (!t)
        return rc;
    if (!type_name)
        return hashi_err_type("MPI_Type_set_name", MPI_ERR_ARG, "type_name is NULL");
    /* Longer names are truncated, as the standard allows. */
    snprintf(t->name, sizeof t->name, "%s", type_name);
    return MPI_SUCCESS;
}

int hashi_impl_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_get_name");
    int rc = MPI_SUCCESS;
    struct MPI_ABI_Datatype *t = hashi_type_arg("MPI_Type_get_name", "datatype", datatype, 0, &rc);
    if (!t)
        return rc;
    if (!type_name || !resultlen)
        return hashi_err_type("MPI_Type_get_name", MPI_ERR_ARG, "%s is NULL", !type_name ? "type_name" : "resultlen");
    size_t len = strnlen(t->name, sizeof t->name - 1);
    memcpy(type_name, t->name, len);
    type_name[len] = '\0';
    *resultlen = (int)len;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Counting basic elements (MPI_Get_elements)                              */
/* ---------------------------------------------------------------------- */

/*
 * Basic elements in the first r bytes (0 <= r < size) of one element's
 * stream, or MPI_UNDEFINED if r cuts a basic element. The stream of any
 * derived type is its components' streams in order: for every combiner but
 * struct (and value-index), whole instances of the one component type.
 */
static MPI_Count prefix_elements(const struct MPI_ABI_Datatype *t, MPI_Count r)
{
    if (r == 0)
        return 0;
    if (t->elem_size > 0)
        return r % t->elem_size ? MPI_UNDEFINED : r / t->elem_size;
    if (t->predefined) {
        /* only a pair of unequal parts gets here: the value ends first */
        const struct MPI_ABI_Datatype *v = hashi_type_get(t->pair_value);
        return v && r == v->size ? 1 : MPI_UNDEFINED;
    }
    const struct hashi_type_envelope *env = t->envelope;
    if (env->combiner == MPI_COMBINER_STRUCT || env->combiner == MPI_COMBINER_VALUE_INDEX) {
        MPI_Count done = 0;
        for (MPI_Count i = 0; i < env->nd; i++) {
            const struct MPI_ABI_Datatype *c = env->types[i];
            MPI_Count blocks = env->combiner == MPI_COMBINER_VALUE_INDEX ? 1
                               : env->large ? env->larges[1 + i] : env->ints[1 + i];
            if (c->size == 0 || blocks == 0)
                continue;
            MPI_Count bytes = blocks * c->size;
            if (r < bytes) {
                MPI_Count in = prefix_elements(c, r % c->size);
                return in == MPI_UNDEFINED ? MPI_UNDEFINED : done + (r / c->size) * c->nelem + in;
            }
            r -= bytes;
            done += blocks * c->nelem;
        }
        return MPI_UNDEFINED; /* not reached: r < size */
    }
    const struct MPI_ABI_Datatype *c = env->types[0];
    if (c->size == 0)
        return MPI_UNDEFINED;
    MPI_Count in = prefix_elements(c, r % c->size);
    return in == MPI_UNDEFINED ? MPI_UNDEFINED : (r / c->size) * c->nelem + in;
}

MPI_Count hashi_type_elements(const struct MPI_ABI_Datatype *t, uint64_t bytes)
{
    if (t->size == 0)
        return 0;
    MPI_Count whole = (MPI_Count)(bytes / (uint64_t)t->size);
    MPI_Count in = prefix_elements(t, (MPI_Count)(bytes % (uint64_t)t->size));
    return in == MPI_UNDEFINED ? MPI_UNDEFINED : whole * t->nelem + in;
}

/* ---------------------------------------------------------------------- */
/* MPI_Type_match_size, MPI_Type_get_value_index                           */
/* ---------------------------------------------------------------------- */

int hashi_impl_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
    static const struct {
        int typeclass, size;
        MPI_Datatype type;
    } matches[] = {
        { MPI_TYPECLASS_INTEGER, 1, MPI_INTEGER1 }, { MPI_TYPECLASS_INTEGER, 2, MPI_INTEGER2 },
        { MPI_TYPECLASS_INTEGER, 4, MPI_INTEGER4 }, { MPI_TYPECLASS_INTEGER, 8, MPI_INTEGER8 },
        { MPI_TYPECLASS_INTEGER, 16, MPI_INTEGER16 },
        { MPI_TYPECLASS_REAL, 2, MPI_REAL2 }, { MPI_TYPECLASS_REAL, 4, MPI_REAL4 },
        { MPI_TYPECLASS_REAL, 8, MPI_REAL8 }, { MPI_TYPECLASS_REAL, 16, MPI_REAL16 },
        { MPI_TYPECLASS_COMPLEX, 4, MPI_COMPLEX4 }, { MPI_TYPECLASS_COMPLEX, 8, MPI_COMPLEX8 },
        { MPI_TYPECLASS_COMPLEX, 16, MPI_COMPLEX16 }, { MPI_TYPECLASS_COMPLEX, 32, MPI_COMPLEX32 },
        { MPIX_TYPECLASS_LOGICAL, 1, MPI_LOGICAL1 }, { MPIX_TYPECLASS_LOGICAL, 2, MPI_LOGICAL2 },
        { MPIX_TYPECLASS_LOGICAL, 4, MPI_LOGICAL4 }, { MPIX_TYPECLASS_LOGICAL, 8, MPI_LOGICAL8 },
        { MPIX_TYPECLASS_LOGICAL, 16, MPI_LOGICAL16 },
    };
    HASHI_CHECK_INITIALIZED("MPI_Type_match_size");
    if (!datatype)
        return hashi_err_type("MPI_Type_match_size", MPI_ERR_ARG, "datatype is NULL");
    if (typeclass != MPI_TYPECLASS_INTEGER && typeclass != MPI_TYPECLASS_REAL
        && typeclass != MPI_TYPECLASS_COMPLEX && typeclass != MPIX_TYPECLASS_LOGICAL)
        return hashi_err_type("MPI_Type_match_size", MPI_ERR_ARG, "typeclass %d is not an MPI_TYPECLASS_*",
                              typeclass);
    for (size_t i = 0; i < sizeof matches / sizeof matches[0]; i++) {
        if (matches[i].typeclass == typeclass && matches[i].size == size) {
            *datatype = matches[i].type;
            return MPI_SUCCESS;
        }
    }
    return hashi_err_type("MPI_Type_match_size", MPI_ERR_ARG, "no predefined type of this class has size %d",
                          size);
}

/* ---------------------------------------------------------------------- */
/* MPI_Type_create_f90_integer / _real / _complex                          */
/* ---------------------------------------------------------------------- */

/*
 * The Fortran kinds selected_int_kind(r) and selected_real_kind(p, r) give
 * with gfortran on this ABI (MPI_UNDEFINED: that bound is not asked for),
 * as the sized predefined types. Each (combiner, p, r) gets one type object,
 * made on the first call and kept until exit: it behaves as a predefined
 * type (cannot be freed) whose envelope is MPI_COMBINER_F90_* with p and r.
 */
#define F90_CACHE 32
static struct f90_entry { int combiner, p, r; struct MPI_ABI_Datatype *t; } f90_cache[F90_CACHE];
static int f90_count;

static MPI_Datatype f90_base(int combiner, int p, int r)
{
    static const struct { int r; MPI_Datatype type; } ints[] = {
        { 2, MPI_INTEGER1 }, { 4, MPI_INTEGER2 }, { 9, MPI_INTEGER4 }, { 18, MPI_INTEGER8 }, { 38, MPI_INTEGER16 },
    };
    static const struct { int p, r; MPI_Datatype real_type, complex_type; } reals[] = {
        { 6, 37, MPI_REAL4, MPI_COMPLEX8 },
        { 15, 307, MPI_REAL8, MPI_COMPLEX16 },
        { 33, 4931, MPI_REAL16, MPI_COMPLEX32 },
    };
    if (combiner == MPI_COMBINER_F90_INTEGER) {
        for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
            if (r <= ints[i].r)
                return ints[i].type;
        return MPI_DATATYPE_NULL;
    }
    for (size_t i = 0; i < sizeof reals / sizeof *reals; i++)
        if ((p == MPI_UNDEFINED || p <= reals[i].p) && (r == MPI_UNDEFINED || r <= reals[i].r))
            return combiner == MPI_COMBINER_F90_REAL ? reals[i].real_type : reals[i].complex_type;
    return MPI_DATATYPE_NULL;
}

static int f90_type(const char *func, int combiner, int p, int r, MPI_Datatype *newtype)
{
    HASHI_CHECK_INITIALIZED(func);
    if (!newtype)
        return hashi_err_type(func, MPI_ERR_ARG, "newtype is NULL");
    int is_int = combiner == MPI_COMBINER_F90_INTEGER;
    if ((!is_int && p == MPI_UNDEFINED && r == MPI_UNDEFINED) || (!is_int && p != MPI_UNDEFINED && p < 0)
        || (r != MPI_UNDEFINED && r < 0) || (is_int && r == MPI_UNDEFINED))
        return hashi_err_type(func, MPI_ERR_ARG, is_int ? "the range r = %d is not a decimal exponent range"
                                                        : "p = %d and r = %d: give a precision or a range (or both), "
                                                          "not negative",
                              is_int ? r : p, r);
    MPI_Datatype base = f90_base(combiner, p, r);
    if (base == MPI_DATATYPE_NULL)
        return is_int ? hashi_err_type(func, MPI_ERR_ARG, "no Fortran integer kind has a range of %d digits", r)
                      : hashi_err_type(func, MPI_ERR_ARG,
                                       "no Fortran real kind has precision %d and range %d (up to 33 and 4931)", p, r);
    for (int i = 0; i < f90_count; i++) {
        if (f90_cache[i].combiner == combiner && f90_cache[i].p == p && f90_cache[i].r == r) {
            *newtype = f90_cache[i].t;
            return MPI_SUCCESS;
        }
    }
    if (f90_count == F90_CACHE)
        return hashi_err_type(func, MPI_ERR_NO_MEM, "more than %d distinct Fortran kinds asked for", F90_CACHE);
    const struct MPI_ABI_Datatype *old = hashi_type_get(base);
    struct MPI_ABI_Datatype *t = hashi_type_alloc();
    struct hashi_type_envelope *env = hashi_envelope_new(combiner, 0, is_int ? 1 : 2, 0, 0, 0);
    if (!t || !env) {
        free(t);
        free(env);
        return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory");
    }
    /* The sized type's layout and reductions (a predefined type's: never
     * freed), under its own envelope. */
    share_layout(t, old);
    t->basic = old->basic;
    t->predefined = 1;
    t->committed = 1;
    t->combiner = combiner;
    snprintf(t->name, sizeof t->name, "%s", old->name);
    if (is_int) {
        env->ints[0] = r;
    } else {
        env->ints[0] = p;
        env->ints[1] = r;
    }
    t->envelope = env;
    f90_cache[f90_count++] = (struct f90_entry){ combiner, p, r, t };
    *newtype = t;
    return MPI_SUCCESS;
}

int hashi_impl_Type_create_f90_integer(int r, MPI_Datatype *newtype)
{
    return f90_type("MPI_Type_create_f90_integer", MPI_COMBINER_F90_INTEGER, MPI_UNDEFINED, r, newtype);
}

int hashi_impl_Type_create_f90_real(int p, int r, MPI_Datatype *newtype)
{
    return f90_type("MPI_Type_create_f90_real", MPI_COMBINER_F90_REAL, p, r, newtype);
}

int hashi_impl_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype)
{
    return f90_type("MPI_Type_create_f90_complex", MPI_COMBINER_F90_COMPLEX, p, r, newtype);
}

static bool is_integer_type(MPI_Datatype t)
{
    static const MPI_Datatype ints[] = {
        MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_INT8_T, MPI_UINT8_T, MPI_INT16_T, MPI_UINT16_T, MPI_INT32_T,
        MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T, MPI_AINT, MPI_COUNT, MPI_OFFSET, MPI_INTEGER,
        MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8, MPI_INTEGER16, MPI_SIGNED_CHAR,
        MPI_UNSIGNED_CHAR,
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i] == t)
            return true;
    return false;
}

int hashi_impl_Type_get_value_index(MPI_Datatype value_type, MPI_Datatype index_type, MPI_Datatype *pair_type)
{
    static const char func[] = "MPI_Type_get_value_index";
    HASHI_CHECK_INITIALIZED(func);
    int rc = MPI_SUCCESS;
    struct MPI_ABI_Datatype *v = hashi_type_arg(func, "value_type", value_type, 0, &rc);
    if (!v)
        return rc;
    struct MPI_ABI_Datatype *x = hashi_type_arg(func, "index_type", index_type, 0, &rc);
    if (!x)
        return rc;
    if (!pair_type)
        return hashi_err_type(func, MPI_ERR_ARG, "pair_type is NULL");
    if (!v->predefined || v->nelem != 1 || value_type == MPI_PACKED)
        return hashi_err_type(func, MPI_ERR_TYPE, "value_type must be a predefined basic type");
    if (!is_integer_type(index_type))
        return hashi_err_type(func, MPI_ERR_TYPE, "index_type must be a predefined integer type");
    for (size_t i = 0; i < NPAIRS; i++) {
        if (pair_specs[i].value == value_type && pair_specs[i].index == index_type) {
            *pair_type = pair_specs[i].handle;
            return MPI_SUCCESS;
        }
    }
    /* No predefined pair: a committed struct { value; index; } as C lays it out. */
    struct MPI_ABI_Datatype *t = hashi_type_alloc();
    struct hashi_type_envelope *env = hashi_envelope_new(MPI_COMBINER_VALUE_INDEX, 0, 0, 0, 0, 2);
    if (!t || !env) {
        free(t);
        free(env);
        return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory");
    }
    int align = v->align > x->align ? v->align : x->align;
    MPI_Aint index_offset = ((MPI_Aint)v->size + x->align - 1) / x->align * x->align;
    MPI_Aint end = index_offset + (MPI_Aint)x->size;
    struct hashi_repr_seq seq;
    struct hashi_type_repr part;
    hashi_repr_seq_init(&seq);
    hashi_repr_leaf(&part, 0, v->size);
    hashi_repr_seq_add(&seq, &part);
    hashi_repr_leaf(&part, index_offset, x->size);
    hashi_repr_seq_add(&seq, &part);
    const struct hashi_type_repr *repr = hashi_repr_seq_finish(&seq, &t->arena);
    if (!repr) {
        hashi_repr_arena_free(t->arena);
        free(t);
        free(env);
        return hashi_err_type(func, MPI_ERR_NO_MEM, "out of memory");
    }
    t->repr = repr;
    t->combiner = MPI_COMBINER_VALUE_INDEX;
    t->size = v->size + x->size;
    t->lb = t->true_lb = 0;
    t->true_ub = end;
    t->ub = (end + align - 1) / align * align;
    t->dense = repr->kind == HASHI_REPR_LEAF;
    t->contiguous = t->dense && t->ub == (MPI_Aint)t->size;
    t->align = align;
    t->nelem = 2;
    t->elem_size = v->size == x->size ? v->size : 0;
    t->pair_value = value_type;
    t->pair_index = index_type;
    t->pair_index_offset = index_offset;
    t->committed = 1;
    env->types[0] = v;
    env->types[1] = x;
    t->envelope = env;
    *pair_type = t;
    return MPI_SUCCESS;
}
