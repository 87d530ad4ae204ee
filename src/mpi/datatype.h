/*
 * Datatypes: the predefined types at the standard's handle values, derived
 * types as a compact representation, and the one pack/unpack engine every
 * non-contiguous transfer goes through.
 */
#ifndef HASHI_MPI_DATATYPE_H
#define HASHI_MPI_DATATYPE_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct hashi_type_repr;   /* the engine's internal description (datatype.c) */

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
    struct hashi_type_repr *repr; /* flattened layout for the engine */
    void *envelope;               /* what get_envelope / get_contents return */
};
#define HASHI_TYPE_MAGIC 0x54595045u

/* The object behind a handle (predefined or derived), or NULL if invalid. */
struct MPI_ABI_Datatype *hashi_type_get(MPI_Datatype type);

/* For MPI calls' argument checks: MPI_SUCCESS or an error class, with a reason. */
int hashi_type_check(MPI_Datatype type, int need_committed, const char **why);

/* Bytes of data in count elements (count * size). */
static inline MPI_Count hashi_type_bytes(const struct MPI_ABI_Datatype *t, MPI_Count count)
{
    return t->size * count;
}

/* True when count elements at buf are t->size*count contiguous bytes starting
 * at buf + true_lb: the device can use them in place. */
static inline int hashi_type_is_contig(const struct MPI_ABI_Datatype *t)
{
    return t->contiguous;
}

/*
 * Pack or unpack part of (buf, count, type): the bytes of the typed data from
 * stream offset `offset` up to `offset + len` (a stream of hashi_type_bytes()
 * bytes). Partial calls may resume anywhere, so a device can pipeline in
 * chunks. Return the number of bytes moved.
 */
size_t hashi_type_pack(const void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t,
                       size_t offset, void *out, size_t len);
size_t hashi_type_unpack(void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t,
                         size_t offset, const void *in, size_t len);

void hashi_type_retain(struct MPI_ABI_Datatype *t);
void hashi_type_release(struct MPI_ABI_Datatype *t);

/* Set up the predefined types (sizes, names, pair types) at MPI_Init. */
void hashi_types_init(void);

#endif
