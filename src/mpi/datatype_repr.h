/*
 * The pack/unpack engine's description of a layout (internal to the
 * datatype code; datatype_engine.c). docs/datatypes.md has the design.
 *
 * A layout is a small tree of nodes. Every node describes the data of one
 * element as a byte stream laid over memory at `base + disp`:
 *
 *   LEAF  len bytes in one run
 *   VEC   `count` instances of one child, instance i at i * stride
 *         (a vector of a million doubles is one VEC over one LEAF)
 *   RUNS  `count` runs of bytes at offs[i], lens[i] (an indexed type of
 *         a contiguous type, a struct of basic types)
 *   SEQ   `count` arbitrary child nodes, one after the other in the stream
 *
 * RUNS and SEQ keep ends[i], the stream offset where entry i ends, so that a
 * partial pack finds its starting entry by binary search. Nodes never hold
 * empty entries, so ends[] is strictly increasing.
 *
 * Nodes are immutable once built and may be shared between types: a derived
 * type holds references (hashi_type_retain) on the types it was built from,
 * which keep their nodes alive.
 */
#ifndef HASHI_MPI_DATATYPE_REPR_H
#define HASHI_MPI_DATATYPE_REPR_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

enum hashi_repr_kind {
    HASHI_REPR_LEAF,
    HASHI_REPR_VEC,
    HASHI_REPR_RUNS,
    HASHI_REPR_SEQ
};

struct hashi_type_repr {
    enum hashi_repr_kind kind;
    MPI_Aint disp;                /* added to the base address of the element */
    MPI_Count size;               /* data bytes in one instance of this node */
    MPI_Count count;              /* VEC: instances; RUNS, SEQ: entries */
    union {
        struct {
            MPI_Aint stride;
            const struct hashi_type_repr *child;
        } vec;
        struct {
            const MPI_Aint *offs;
            const MPI_Count *lens;
            const MPI_Count *ends;
        } runs;
        struct {
            const struct hashi_type_repr *items;
            const MPI_Count *ends;
        } seq;
    } u;
};

/* The memory of one type's nodes and arrays, freed together. */
struct hashi_repr_arena;
void *hashi_repr_alloc(struct hashi_repr_arena **arena, size_t bytes);
/* Take ownership of a malloc'ed block. On failure the block is freed, -1. */
int hashi_repr_adopt(struct hashi_repr_arena **arena, void *block);
void hashi_repr_arena_free(struct hashi_repr_arena *arena);

/* A copy of *node in the arena (a stable address for VEC children), or NULL. */
const struct hashi_type_repr *hashi_repr_store(struct hashi_repr_arena **arena,
                                               const struct hashi_type_repr *node);

/* These fill *out and never allocate. */
void hashi_repr_leaf(struct hashi_type_repr *out, MPI_Aint disp, MPI_Count len);
/*
 * `count` instances of *child, instance i at disp + i * stride, simplified:
 * a run of touching leaves becomes one leaf, a regular vector of vectors one
 * vector. *child must stay where it is (stored in an arena) while out is used.
 * count * child->size must not overflow (the constructors check).
 */
void hashi_repr_repeat(struct hashi_type_repr *out, MPI_Aint disp, MPI_Count count,
                       MPI_Aint stride, const struct hashi_type_repr *child);

/*
 * Builds a node from entries given in stream order: touching leaves merge,
 * empty entries vanish, equal entries at a constant spacing become a VEC, a
 * single entry is itself. Only leaves so far are kept as two flat arrays, so
 * an indexed type of a million blocks costs 16 bytes per block, not a node.
 */
struct hashi_repr_seq {
    MPI_Count n, cap;
    MPI_Aint *offs;               /* while every entry is a leaf */
    MPI_Count *lens;
    struct hashi_type_repr *items;/* once one is not */
    MPI_Count size;
    int failed;                   /* out of memory (the rest is ignored) */
};
void hashi_repr_seq_init(struct hashi_repr_seq *seq);
/* Append a copy of *entry. Returns -1 (and remembers it) when out of memory. */
int hashi_repr_seq_add(struct hashi_repr_seq *seq, const struct hashi_type_repr *entry);
/* The finished node, stored in the arena; the builder is emptied. NULL when
 * out of memory at any point. */
const struct hashi_type_repr *hashi_repr_seq_finish(struct hashi_repr_seq *seq,
                                                    struct hashi_repr_arena **arena);
void hashi_repr_seq_discard(struct hashi_repr_seq *seq);

/*
 * Move the bytes [skip, skip + len) of the stream of `count` instances of
 * *node, instance i at base + i * stride, between memory and the packed
 * stream at `stream` (to it when unpack is 0, from it otherwise).
 * skip + len must not exceed count * node->size.
 */
void hashi_repr_move(const struct hashi_type_repr *node, uintptr_t base, MPI_Aint stride,
                     MPI_Count skip, MPI_Count len, char *stream, int unpack);

/* A one-line description of the tree ("VEC(3x+40, LEAF 8@0)"), for tests and
 * debug logs; truncated to fit. Returns buf. */
char *hashi_repr_describe(const struct hashi_type_repr *node, char *buf, size_t size);

#endif
