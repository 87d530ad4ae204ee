/*
 * The pack/unpack engine: building layout trees (datatype_repr.h) and moving
 * bytes between typed memory and a packed stream, from any stream offset.
 *
 * This file depends on nothing but the two datatype headers, so the engine's
 * unit test (test/types/engine.c) compiles it on its own.
 */
#include "mpi/datatype.h"
#include "mpi/datatype_repr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Arena: every block a type's layout owns, freed with the type.          */
/* ---------------------------------------------------------------------- */

struct hashi_repr_arena {
    size_t n, cap;
    void *blocks[];
};

int hashi_repr_adopt(struct hashi_repr_arena **arena, void *block)
{
    struct hashi_repr_arena *a = *arena;
    if (!a || a->n == a->cap) {
        size_t cap = a ? a->cap * 2 : 4;
        struct hashi_repr_arena *grown = realloc(a, sizeof *a + cap * sizeof(void *));
        if (!grown) {
            free(block);
            return -1;
        }
        if (!a)
            grown->n = 0;
        grown->cap = cap;
        *arena = a = grown;
    }
    a->blocks[a->n++] = block;
    return 0;
}

void *hashi_repr_alloc(struct hashi_repr_arena **arena, size_t bytes)
{
    void *block = malloc(bytes ? bytes : 1);
    if (!block || hashi_repr_adopt(arena, block) != 0)
        return NULL;
    return block;
}

void hashi_repr_arena_free(struct hashi_repr_arena *arena)
{
    if (!arena)
        return;
    for (size_t i = 0; i < arena->n; i++)
        free(arena->blocks[i]);
    free(arena);
}

const struct hashi_type_repr *hashi_repr_store(struct hashi_repr_arena **arena,
                                               const struct hashi_type_repr *node)
{
    struct hashi_type_repr *copy = hashi_repr_alloc(arena, sizeof *copy);
    if (copy)
        *copy = *node;
    return copy;
}

/* ---------------------------------------------------------------------- */
/* Building                                                                */
/* ---------------------------------------------------------------------- */

void hashi_repr_leaf(struct hashi_type_repr *out, MPI_Aint disp, MPI_Count len)
{
    memset(out, 0, sizeof *out);
    out->kind = HASHI_REPR_LEAF;
    out->disp = disp;
    out->size = len;
}

static void make_vec(struct hashi_type_repr *out, MPI_Aint disp, MPI_Count count, MPI_Aint stride,
                     const struct hashi_type_repr *child)
{
    memset(out, 0, sizeof *out);
    out->kind = HASHI_REPR_VEC;
    out->disp = disp;
    out->count = count;
    out->size = count * child->size;
    out->u.vec.stride = stride;
    out->u.vec.child = child;
}

void hashi_repr_repeat(struct hashi_type_repr *out, MPI_Aint disp, MPI_Count count,
                       MPI_Aint stride, const struct hashi_type_repr *child)
{
    if (count <= 0 || child->size == 0) {
        hashi_repr_leaf(out, 0, 0);
        return;
    }
    if (count == 1) {
        *out = *child;
        out->disp = (MPI_Aint)((uintptr_t)child->disp + (uintptr_t)disp);
        return;
    }
    /* Instances that touch, in increasing order: one run. */
    if (child->kind == HASHI_REPR_LEAF && stride == child->size) {
        hashi_repr_leaf(out, disp + child->disp, count * child->size);
        return;
    }
    /* A vector repeated right where its next instance would be: a longer vector. */
    if (child->kind == HASHI_REPR_VEC && child->count * child->u.vec.stride == stride) {
        make_vec(out, disp + child->disp, count * child->count, child->u.vec.stride, child->u.vec.child);
        return;
    }
    make_vec(out, disp, count, stride, child);
}

void hashi_repr_seq_init(struct hashi_repr_seq *seq)
{
    memset(seq, 0, sizeof *seq);
}

void hashi_repr_seq_discard(struct hashi_repr_seq *seq)
{
    free(seq->offs);
    free(seq->lens);
    free(seq->items);
    hashi_repr_seq_init(seq);
}

static int seq_grow(struct hashi_repr_seq *seq)
{
    MPI_Count cap = seq->cap ? seq->cap * 2 : 8;
    if (seq->items) {
        void *items = realloc(seq->items, (size_t)cap * sizeof *seq->items);
        if (!items)
            return -1;
        seq->items = items;
    } else {
        void *offs = realloc(seq->offs, (size_t)cap * sizeof *seq->offs);
        if (!offs)
            return -1;
        seq->offs = offs;
        void *lens = realloc(seq->lens, (size_t)cap * sizeof *seq->lens);
        if (!lens)
            return -1;
        seq->lens = lens;
    }
    seq->cap = cap;
    return 0;
}

/* The first non-leaf entry: from here on every entry is a node. */
static int seq_switch_to_items(struct hashi_repr_seq *seq)
{
    MPI_Count cap = seq->cap ? seq->cap : 8;
    struct hashi_type_repr *items = malloc((size_t)cap * sizeof *items);
    if (!items)
        return -1;
    for (MPI_Count i = 0; i < seq->n; i++)
        hashi_repr_leaf(&items[i], seq->offs[i], seq->lens[i]);
    free(seq->offs);
    free(seq->lens);
    seq->offs = NULL;
    seq->lens = NULL;
    seq->items = items;
    seq->cap = cap;
    return 0;
}

int hashi_repr_seq_add(struct hashi_repr_seq *seq, const struct hashi_type_repr *entry)
{
    if (seq->failed)
        return -1;
    if (entry->size == 0)
        return 0;
    seq->size += entry->size;
    if (entry->kind == HASHI_REPR_LEAF) {
        MPI_Count n = seq->n;
        if (!seq->items && n > 0 && seq->offs[n - 1] + seq->lens[n - 1] == entry->disp) {
            seq->lens[n - 1] += entry->size;
            return 0;
        }
        if (seq->items && n > 0 && seq->items[n - 1].kind == HASHI_REPR_LEAF
            && seq->items[n - 1].disp + seq->items[n - 1].size == entry->disp) {
            seq->items[n - 1].size += entry->size;
            return 0;
        }
    } else if (!seq->items && seq_switch_to_items(seq) != 0) {
        seq->failed = 1;
        return -1;
    }
    if (seq->n == seq->cap && seq_grow(seq) != 0) {
        seq->failed = 1;
        return -1;
    }
    if (seq->items) {
        seq->items[seq->n++] = *entry;
    } else {
        seq->offs[seq->n] = entry->disp;
        seq->lens[seq->n++] = entry->size;
    }
    return 0;
}

/* Two nodes equal but for their displacement (the same shape, elsewhere). */
static int same_shape(const struct hashi_type_repr *a, const struct hashi_type_repr *b)
{
    if (a->kind != b->kind || a->size != b->size || a->count != b->count)
        return 0;
    switch (a->kind) {
    case HASHI_REPR_LEAF:
        return 1;
    case HASHI_REPR_VEC:
        return a->u.vec.stride == b->u.vec.stride && a->u.vec.child == b->u.vec.child;
    case HASHI_REPR_RUNS:
        return a->u.runs.offs == b->u.runs.offs && a->u.runs.lens == b->u.runs.lens;
    case HASHI_REPR_SEQ:
        return a->u.seq.items == b->u.seq.items;
    }
    return 0;
}

static MPI_Count *make_ends(struct hashi_repr_arena **arena, MPI_Count n, const MPI_Count *lens,
                            const struct hashi_type_repr *items)
{
    MPI_Count *ends = hashi_repr_alloc(arena, (size_t)n * sizeof *ends);
    if (!ends)
        return NULL;
    MPI_Count end = 0;
    for (MPI_Count i = 0; i < n; i++) {
        end += lens ? lens[i] : items[i].size;
        ends[i] = end;
    }
    return ends;
}

static const struct hashi_type_repr *finish_leaves(struct hashi_repr_seq *seq,
                                                  struct hashi_repr_arena **arena)
{
    struct hashi_type_repr node;
    MPI_Count n = seq->n;
    if (n == 1) {
        hashi_repr_leaf(&node, seq->offs[0], seq->lens[0]);
        hashi_repr_seq_discard(seq);
        return hashi_repr_store(arena, &node);
    }
    /* Equal runs at a constant spacing: a vector over one leaf. */
    int regular = 1;
    MPI_Aint spacing = seq->offs[1] - seq->offs[0];
    for (MPI_Count i = 1; i < n && regular; i++)
        regular = seq->lens[i] == seq->lens[0] && seq->offs[i] - seq->offs[i - 1] == spacing;
    if (regular) {
        struct hashi_type_repr leaf;
        hashi_repr_leaf(&leaf, 0, seq->lens[0]);
        MPI_Aint first = seq->offs[0];
        hashi_repr_seq_discard(seq);
        const struct hashi_type_repr *child = hashi_repr_store(arena, &leaf);
        if (!child)
            return NULL;
        make_vec(&node, first, n, spacing, child);
        return hashi_repr_store(arena, &node);
    }

    /* The arrays move to the arena, trimmed to their length. */
    MPI_Aint *offs = seq->offs;
    MPI_Count *lens = seq->lens;
    MPI_Count size = seq->size;
    seq->offs = NULL;
    seq->lens = NULL;
    hashi_repr_seq_discard(seq);
    MPI_Aint *offs_trimmed = realloc(offs, (size_t)n * sizeof *offs);
    MPI_Count *lens_trimmed = realloc(lens, (size_t)n * sizeof *lens);
    offs = offs_trimmed ? offs_trimmed : offs;
    lens = lens_trimmed ? lens_trimmed : lens;
    if (hashi_repr_adopt(arena, offs) != 0) {
        free(lens);
        return NULL;
    }
    if (hashi_repr_adopt(arena, lens) != 0)
        return NULL;
    const MPI_Count *ends = make_ends(arena, n, lens, NULL);
    if (!ends)
        return NULL;
    memset(&node, 0, sizeof node);
    node.kind = HASHI_REPR_RUNS;
    node.size = size;
    node.count = n;
    node.u.runs.offs = offs;
    node.u.runs.lens = lens;
    node.u.runs.ends = ends;
    return hashi_repr_store(arena, &node);
}

static const struct hashi_type_repr *finish_items(struct hashi_repr_seq *seq,
                                                 struct hashi_repr_arena **arena)
{
    struct hashi_type_repr node;
    MPI_Count n = seq->n;
    struct hashi_type_repr *items = seq->items;
    if (n == 1) {
        node = items[0];
        hashi_repr_seq_discard(seq);
        return hashi_repr_store(arena, &node);
    }
    /* The same node repeated at a constant spacing: a vector of it. */
    int regular = 1;
    MPI_Aint spacing = items[1].disp - items[0].disp;
    for (MPI_Count i = 1; i < n && regular; i++)
        regular = same_shape(&items[i], &items[0]) && items[i].disp - items[i - 1].disp == spacing;
    if (regular) {
        struct hashi_type_repr child = items[0];
        child.disp = 0;
        MPI_Aint first = items[0].disp;
        hashi_repr_seq_discard(seq);
        const struct hashi_type_repr *stored = hashi_repr_store(arena, &child);
        if (!stored)
            return NULL;
        make_vec(&node, first, n, spacing, stored);
        return hashi_repr_store(arena, &node);
    }

    MPI_Count size = seq->size;
    seq->items = NULL;
    hashi_repr_seq_discard(seq);
    struct hashi_type_repr *trimmed = realloc(items, (size_t)n * sizeof *items);
    items = trimmed ? trimmed : items;
    if (hashi_repr_adopt(arena, items) != 0)
        return NULL;
    const MPI_Count *ends = make_ends(arena, n, NULL, items);
    if (!ends)
        return NULL;
    memset(&node, 0, sizeof node);
    node.kind = HASHI_REPR_SEQ;
    node.size = size;
    node.count = n;
    node.u.seq.items = items;
    node.u.seq.ends = ends;
    return hashi_repr_store(arena, &node);
}

const struct hashi_type_repr *hashi_repr_seq_finish(struct hashi_repr_seq *seq,
                                                    struct hashi_repr_arena **arena)
{
    if (seq->failed) {
        hashi_repr_seq_discard(seq);
        return NULL;
    }
    if (seq->n == 0) {
        struct hashi_type_repr empty;
        hashi_repr_leaf(&empty, 0, 0);
        return hashi_repr_store(arena, &empty);
    }
    return seq->items ? finish_items(seq, arena) : finish_leaves(seq, arena);
}

/* ---------------------------------------------------------------------- */
/* Moving bytes                                                            */
/* ---------------------------------------------------------------------- */

/*
 * Addresses are computed in uintptr_t: displacements may be negative and the
 * base may be MPI_BOTTOM (absolute addresses), which pointer arithmetic on a
 * char * would not allow.
 */
struct mover {
    char *stream;
    int unpack;
};

static inline void move_run(struct mover *m, uintptr_t user, MPI_Count len)
{
    if (m->unpack)
        memcpy((void *)user, m->stream, (size_t)len);
    else
        memcpy(m->stream, (const void *)user, (size_t)len);
    m->stream += len;
}

/* Short runs of basic types inside a struct: lengths known at compile time
 * become single loads and stores instead of a memcpy call. */
static inline void copy_short(void *dst, const void *src, MPI_Count len)
{
    switch (len) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    default: memcpy(dst, src, (size_t)len); break;
    }
}

/* n copies of len bytes, dst and src advancing by their own steps. Small
 * sizes known at compile time become single loads and stores. */
#define STRIDED_LOOP(LEN)                                                      \
    for (MPI_Count i_ = 0; i_ < n; i_++) {                                     \
        memcpy((void *)dst, (const void *)src, (LEN));                         \
        dst += (uintptr_t)dstep;                                               \
        src += (uintptr_t)sstep;                                               \
    }

static void strided_copy(uintptr_t dst, MPI_Aint dstep, uintptr_t src, MPI_Aint sstep,
                         MPI_Count n, MPI_Count len)
{
    switch (len) {
    case 1: STRIDED_LOOP(1) break;
    case 2: STRIDED_LOOP(2) break;
    case 4: STRIDED_LOOP(4) break;
    case 8: STRIDED_LOOP(8) break;
    case 12: STRIDED_LOOP(12) break;
    case 16: STRIDED_LOOP(16) break;
    case 24: STRIDED_LOOP(24) break;
    case 32: STRIDED_LOOP(32) break;
    default: STRIDED_LOOP((size_t)len) break;
    }
}

/* Index of the entry holding stream offset skip: the first with ends[j] > skip. */
static MPI_Count find_entry(const MPI_Count *ends, MPI_Count n, MPI_Count skip)
{
    MPI_Count lo = 0, hi = n - 1;
    while (lo < hi) {
        MPI_Count mid = lo + (hi - lo) / 2;
        if (ends[mid] > skip)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void move_repeat(const struct hashi_type_repr *child, uintptr_t base, MPI_Aint stride,
                        MPI_Count skip, MPI_Count len, struct mover *m);

/* The bytes [skip, skip + len) of one instance of node at base. */
static void move_node(const struct hashi_type_repr *node, uintptr_t base, MPI_Count skip,
                      MPI_Count len, struct mover *m)
{
    base += (uintptr_t)node->disp;
    switch (node->kind) {
    case HASHI_REPR_LEAF:
        move_run(m, base + (uintptr_t)skip, len);
        return;
    case HASHI_REPR_VEC:
        move_repeat(node->u.vec.child, base, node->u.vec.stride, skip, len, m);
        return;
    case HASHI_REPR_RUNS: {
        const MPI_Aint *offs = node->u.runs.offs;
        const MPI_Count *lens = node->u.runs.lens;
        MPI_Count j = find_entry(node->u.runs.ends, node->count, skip);
        MPI_Count off = skip - (node->u.runs.ends[j] - lens[j]);
        while (len > 0) {
            MPI_Count k = lens[j] - off < len ? lens[j] - off : len;
            move_run(m, base + (uintptr_t)offs[j] + (uintptr_t)off, k);
            len -= k;
            off = 0;
            j++;
        }
        return;
    }
    case HASHI_REPR_SEQ: {
        const struct hashi_type_repr *items = node->u.seq.items;
        MPI_Count j = find_entry(node->u.seq.ends, node->count, skip);
        MPI_Count off = skip - (node->u.seq.ends[j] - items[j].size);
        while (len > 0) {
            MPI_Count k = items[j].size - off < len ? items[j].size - off : len;
            move_node(&items[j], base, off, k, m);
            len -= k;
            off = 0;
            j++;
        }
        return;
    }
    }
}

static void move_repeat(const struct hashi_type_repr *child, uintptr_t base, MPI_Aint stride,
                        MPI_Count skip, MPI_Count len, struct mover *m)
{
    MPI_Count csize = child->size;
    if (len <= 0 || csize <= 0)
        return;
    MPI_Count first = skip / csize, off = skip - first * csize;
    uintptr_t at = base + (uintptr_t)first * (uintptr_t)stride;

    if (child->kind == HASHI_REPR_LEAF) {
        uintptr_t run = at + (uintptr_t)child->disp;
        if (off) {
            /* finish the instance the stream offset falls in */
            MPI_Count k = csize - off < len ? csize - off : len;
            move_run(m, run + (uintptr_t)off, k);
            len -= k;
            run += (uintptr_t)stride;
        }
        MPI_Count whole = len / csize;
        if (whole) {
            uintptr_t stream = (uintptr_t)m->stream;
            if (m->unpack)
                strided_copy(run, stride, stream, (MPI_Aint)csize, whole, csize);
            else
                strided_copy(stream, (MPI_Aint)csize, run, stride, whole, csize);
            m->stream += whole * csize;
            run += (uintptr_t)whole * (uintptr_t)stride;
            len -= whole * csize;
        }
        if (len)
            move_run(m, run, len);
        return;
    }
    if (child->kind == HASHI_REPR_RUNS && len - (off ? csize - off : 0) >= csize) {
        /* Whole instances of a set of runs (a struct): walk the runs directly,
         * without searching for the first one each time. */
        if (off) {
            move_node(child, at, off, csize - off, m);
            len -= csize - off;
            at += (uintptr_t)stride;
        }
        const MPI_Aint *offs = child->u.runs.offs;
        const MPI_Count *lens = child->u.runs.lens;
        MPI_Count runs = child->count;
        MPI_Count whole = len / csize;
        char *stream = m->stream;
        uintptr_t element = at + (uintptr_t)child->disp;
        if (m->unpack) {
            for (MPI_Count e = 0; e < whole; e++, element += (uintptr_t)stride)
                for (MPI_Count j = 0; j < runs; j++) {
                    copy_short((void *)(element + (uintptr_t)offs[j]), stream, lens[j]);
                    stream += lens[j];
                }
        } else {
            for (MPI_Count e = 0; e < whole; e++, element += (uintptr_t)stride)
                for (MPI_Count j = 0; j < runs; j++) {
                    copy_short(stream, (const void *)(element + (uintptr_t)offs[j]), lens[j]);
                    stream += lens[j];
                }
        }
        m->stream = stream;
        len -= whole * csize;
        at += (uintptr_t)whole * (uintptr_t)stride;
        off = 0;
    }
    while (len > 0) {
        MPI_Count k = csize - off < len ? csize - off : len;
        move_node(child, at, off, k, m);
        len -= k;
        off = 0;
        at += (uintptr_t)stride;
    }
}

void hashi_repr_move(const struct hashi_type_repr *node, uintptr_t base, MPI_Aint stride,
                     MPI_Count skip, MPI_Count len, char *stream, int unpack)
{
    struct mover m = { stream, unpack };
    move_repeat(node, base, stride, skip, len, &m);
}

static size_t type_move(uintptr_t buf, MPI_Count count, const struct MPI_ABI_Datatype *t,
                        size_t offset, char *stream, size_t len, int unpack)
{
    MPI_Count total = count > 0 ? count * t->size : 0;
    if ((MPI_Count)offset >= total || len == 0)
        return 0;
    if ((MPI_Count)len > total - (MPI_Count)offset)
        len = (size_t)(total - (MPI_Count)offset);
    if (t->contiguous) {
        /* the whole stream is one run at buf + true_lb */
        uintptr_t at = buf + (uintptr_t)t->true_lb + offset;
        if (unpack)
            memcpy((void *)at, stream, len);
        else
            memcpy(stream, (const void *)at, len);
        return len;
    }
    hashi_repr_move(t->repr, buf, t->ub - t->lb, (MPI_Count)offset, (MPI_Count)len, stream, unpack);
    return len;
}

size_t hashi_type_pack(const void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t,
                       size_t offset, void *out, size_t len)
{
    return type_move((uintptr_t)buf, count, t, offset, out, len, 0);
}

size_t hashi_type_unpack(void *buf, MPI_Count count, const struct MPI_ABI_Datatype *t,
                         size_t offset, const void *in, size_t len)
{
    /* the stream is only read when unpacking */
    return type_move((uintptr_t)buf, count, t, offset, (char *)(uintptr_t)in, len, 1);
}

/* ---------------------------------------------------------------------- */
/* Runs of one element, in stream order (MPI-IO's file views)              */
/* ---------------------------------------------------------------------- */

static int visit_node(const struct hashi_type_repr *node, MPI_Aint base, hashi_type_run_fn *fn, void *arg)
{
    base += node->disp;
    int rc = 0;
    switch (node->kind) {
    case HASHI_REPR_LEAF:
        return node->size > 0 ? fn(arg, base, node->size) : 0;
    case HASHI_REPR_VEC:
        for (MPI_Count i = 0; i < node->count && !rc; i++)
            rc = visit_node(node->u.vec.child, base + (MPI_Aint)i * node->u.vec.stride, fn, arg);
        return rc;
    case HASHI_REPR_RUNS:
        for (MPI_Count j = 0; j < node->count && !rc; j++)
            rc = fn(arg, base + node->u.runs.offs[j], node->u.runs.lens[j]);
        return rc;
    case HASHI_REPR_SEQ:
        for (MPI_Count j = 0; j < node->count && !rc; j++)
            rc = visit_node(&node->u.seq.items[j], base, fn, arg);
        return rc;
    }
    return 0;
}

int hashi_type_visit_runs(const struct MPI_ABI_Datatype *t, hashi_type_run_fn *fn, void *arg)
{
    if (t->size == 0)
        return 0;
    if (t->dense || t->contiguous || !t->repr)
        return fn(arg, t->true_lb, t->size);
    return visit_node(t->repr, 0, fn, arg);
}

/* ---------------------------------------------------------------------- */
/* Description                                                             */
/* ---------------------------------------------------------------------- */

struct text {
    char *buf;
    size_t size, used;
};

static void put(struct text *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *out, const char *fmt, ...)
{
    if (out->used + 1 >= out->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out->buf + out->used, out->size - out->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        out->used = out->used + (size_t)n < out->size ? out->used + (size_t)n : out->size - 1;
}

static void describe(const struct hashi_type_repr *node, struct text *out)
{
    switch (node->kind) {
    case HASHI_REPR_LEAF:
        put(out, "LEAF %lld@%ld", (long long)node->size, (long)node->disp);
        return;
    case HASHI_REPR_VEC:
        put(out, "VEC(%lldx%+ld@%ld, ", (long long)node->count, (long)node->u.vec.stride, (long)node->disp);
        describe(node->u.vec.child, out);
        put(out, ")");
        return;
    case HASHI_REPR_RUNS:
        put(out, "RUNS(%lld@%ld:", (long long)node->count, (long)node->disp);
        for (MPI_Count i = 0; i < node->count && i < 4; i++)
            put(out, " %lld@%ld", (long long)node->u.runs.lens[i], (long)node->u.runs.offs[i]);
        put(out, "%s)", node->count > 4 ? " ..." : "");
        return;
    case HASHI_REPR_SEQ:
        put(out, "SEQ(%lld@%ld:", (long long)node->count, (long)node->disp);
        for (MPI_Count i = 0; i < node->count && i < 4; i++) {
            put(out, " ");
            describe(&node->u.seq.items[i], out);
        }
        put(out, "%s)", node->count > 4 ? " ..." : "");
        return;
    }
}

char *hashi_repr_describe(const struct hashi_type_repr *node, char *buf, size_t size)
{
    struct text out = { buf, size, 0 };
    if (size)
        buf[0] = '\0';
    describe(node, &out);
    return buf;
}
