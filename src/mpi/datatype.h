/*
 * Datatypes: the predefined types at the standard's handle values, derived
 * types as a compact representation, and the one pack/unpack engine every
 * non-contiguous transfer goes through. docs/datatypes.md has the design.
 */
#ifndef HASHI_MPI_DATATYPE_H
#define HASHI_MPI_DATATYPE_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/refcount.h"

struct hashi_type_repr;       /* the engine's layout description (datatype_repr.h) */
struct hashi_repr_arena;      /* memory owned by one type's layout */
struct hashi_type_envelope;   /* the constructor call, for get_envelope / get_contents */

struct MPI_ABI_Datatype {
    uint32_t magic;               /* HASHI_TYPE_MAGIC: catches stale / garbage handles */
    int combiner;                 /* MPI_COMBINER_* */
    int committed;
    int predefined;
    MPI_Count size;               /* bytes of data in one element */
    MPI_Aint lb, ub;              /* extent = ub - lb (after resized) */
    MPI_Aint true_lb, true_ub;
    int contiguous;               /* one element is `size` bytes at true_lb, and
                                     count elements are contiguous (extent == size) */
    int basic;                    /* predefined type usable in reductions */
    MPI_Datatype basic_type;      /* the single basic type it consists of, or MPI_DATATYPE_NULL */
    atomic_int refcount;
    char name[MPI_MAX_OBJECT_NAME];
    const struct hashi_type_repr *repr; /* flattened layout for the engine */
    void *envelope;               /* what get_envelope / get_contents return
                                     (struct hashi_type_envelope, NULL for predefined) */

    /* ---- layout facts the constructors propagate ---- */
    int dense;                    /* one element's data is `size` bytes in one run at
                                     true_lb, in memory order (count == 1 goes in place) */
    int align;                    /* strictest alignment of the basic types inside: a
                                     struct's extent is padded to a multiple of it */
    int explicit_bounds;          /* lb/ub were set by MPI_Type_create_resized (here or
                                     in a component): no struct padding is added */
    MPI_Count nelem;              /* basic elements in one element (a pair type counts 2) */
    MPI_Count elem_size;          /* the size of every basic element if they all have the
                                     same size, else 0 (used by hashi_type_elements) */

    /* Predefined pair types (MPI_DOUBLE_INT ...) and MPI_Type_get_value_index
     * results: the value and index components, for MINLOC / MAXLOC. */
    MPI_Datatype pair_value, pair_index;  /* MPI_DATATYPE_NULL for other types */
    MPI_Aint pair_index_offset;           /* where the index sits in the pair */

    struct hashi_repr_arena *arena;       /* derived types: memory of `repr` */
    void *attributes;                     /* cached attributes (attr.c), NULL for none */
};
#define HASHI_TYPE_MAGIC 0x54595045u

/* The standard ABI puts every predefined datatype in [0x200, 0x300). */
#define HASHI_TYPE_PREDEF_BASE 0x200u
#define HASHI_TYPE_PREDEF_COUNT 0x100u
extern struct MPI_ABI_Datatype hashi_type_predef[HASHI_TYPE_PREDEF_COUNT];

/* The object behind a handle (predefined or derived), or NULL if invalid.
 * Inline: every send and receive looks its datatype up. */
static inline struct MPI_ABI_Datatype *hashi_type_get(MPI_Datatype type)
{
    uintptr_t v = (uintptr_t)type;
    struct MPI_ABI_Datatype *t;
    if (v < 0x1000u) {   /* one of the standard's predefined constants */
        if (v - HASHI_TYPE_PREDEF_BASE >= HASHI_TYPE_PREDEF_COUNT)
            return NULL;
        t = &hashi_type_predef[v - HASHI_TYPE_PREDEF_BASE];
    } else {
        t = type;
    }
    return t->magic == HASHI_TYPE_MAGIC ? t : NULL;
}

/* For MPI calls' argument checks: MPI_SUCCESS or an error class
 * (MPI_ERR_TYPE), with a reason ("MPI_DATATYPE_NULL", "not committed" ...). */
int hashi_type_check(MPI_Datatype type, int need_committed, const char **why);

/* Bytes of data in count elements (count * size). */
static inline MPI_Count hashi_type_bytes(const struct MPI_ABI_Datatype *t, MPI_Count count)
{
    return t->size * count;
}

static inline MPI_Aint hashi_type_extent(const struct MPI_ABI_Datatype *t)
{
    return t->ub - t->lb;
}

/* True when count elements at buf are t->size*count contiguous bytes starting
 * at buf + true_lb: the device can use them in place. */
static inline int hashi_type_is_contig(const struct MPI_ABI_Datatype *t)
{
    return t->contiguous;
}

/* The same question for a given count: a single element of a dense type
 * (MPI_DOUBLE_INT, a resized contiguous type ...) is in place too. */
static inline int hashi_type_is_contig_count(const struct MPI_ABI_Datatype *t, MPI_Count count)
{
    return t->contiguous || (count == 1 && t->dense) || count == 0;
}

/*
 * Pack or unpack part of (buf, count, type): the bytes of the typed data from
 * stream offset `offset` up to `offset + len` (a stream of hashi_type_bytes()
 * bytes). Partial calls may resume anywhere, so a device can pipeline in
 * chunks. Return the number of bytes moved (less than len only at the end of
 * the stream). Need no MPI state: safe from any thread on distinct buffers.
 */
size_t hashi_type_pack(const void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t,
                       size_t offset, void *out, size_t len);
size_t hashi_type_unpack(void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t,
                         size_t offset, const void *in, size_t len);

/*
 * Basic elements in the first `bytes` bytes of a stream of elements of t
 * (MPI_Get_elements): MPI_UNDEFINED when the bytes do not end on a basic
 * element's boundary. A type of size 0 gives 0.
 */
MPI_Count hashi_type_elements(const struct MPI_ABI_Datatype *t, uint64_t bytes);

/*
 * The byte runs of one element of t in stream order, as (displacement from
 * the element's start, length): fn is called once per run of the layout
 * (touching runs may come separately). Stops at and returns fn's first
 * non-zero result. MPI-IO maps file views with it (io/view.c).
 */
typedef int hashi_type_run_fn(void *arg, MPI_Aint disp, MPI_Count len);
int hashi_type_visit_runs(const struct MPI_ABI_Datatype *t, hashi_type_run_fn *fn, void *arg);

/* Bytes of one element of t in a data representation (MPI-IO's datareps)
 * whose basic types take leaf(basic, arg) bytes each: leaf returns the
 * size, -1 for a failure (the walk returns -1) or -2 for "look inside". */
typedef MPI_Count hashi_type_rep_leaf_fn(MPI_Datatype basic, void *arg);
MPI_Count hashi_type_rep_size(const struct MPI_ABI_Datatype *t, hashi_type_rep_leaf_fn *leaf, void *arg);
/* ... in the external32 representation (datatype_external.c). */
MPI_Count hashi_type_external32_size(const struct MPI_ABI_Datatype *t);

/* References held by pending operations and by derived types built on t; a
 * derived type is destroyed when the last one (the user's handle included)
 * goes. No-ops on predefined types. */
void hashi_type_destroy(struct MPI_ABI_Datatype *t);
static inline void hashi_type_retain(struct MPI_ABI_Datatype *t)
{
    if (t && !t->predefined)
        hashi_ref_inc(&t->refcount);
}
static inline void hashi_type_release(struct MPI_ABI_Datatype *t)
{
    if (t && !t->predefined && hashi_ref_dec(&t->refcount))
        hashi_type_destroy(t);
}

/* Set up the predefined types (sizes, names, pair types) at MPI_Init. */
void hashi_types_init(void);

#endif
