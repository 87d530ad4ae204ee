/*
 * Unit test of the pack/unpack engine (src/mpi/datatype_engine.c, compiled
 * into this program; no MPI calls).
 *
 * 1. Simplification: the layouts the constructors build for common shapes
 *    are as small as promised (a vector of 10^6 doubles is one VEC node).
 * 2. Randomized: random layouts built with the same builders the
 *    constructors use, against a reference that lists every byte run the
 *    layout means, one by one. Packing and unpacking in random chunks at
 *    random (odd) stream offsets must give the reference bytes exactly, and
 *    unpacking must touch no byte outside the layout.
 *
 * usage: engine [iterations [seed]]     engine --bench
 */
#include "mpi/datatype.h"
#include "mpi/datatype_repr.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "engine: FAIL: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}
#define CHECK(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

/* xorshift64*: reproducible from the seed printed on failure */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static long rnd_in(long lo, long hi) /* inclusive */
{
    return lo + (long)(rnd() % (uint64_t)(hi - lo + 1));
}

/* ---------------------------------------------------------------------- */
/* The reference: a layout as its list of byte runs, in stream order       */
/* ---------------------------------------------------------------------- */

struct ref {
    size_t n, cap;
    long *off, *len;
    long extent;      /* spacing of consecutive instances when repeated */
    long size;
    const struct hashi_type_repr *repr;
};

static void ref_push(struct ref *r, long off, long len)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->off = realloc(r->off, r->cap * sizeof *r->off);
        r->len = realloc(r->len, r->cap * sizeof *r->len);
        CHECK(r->off && r->len, "out of memory");
    }
    r->off[r->n] = off;
    r->len[r->n++] = len;
    r->size += len;
}

/* count instances of child at disp + i * stride, appended to r */
static void ref_repeat(struct ref *r, long disp, long count, long stride, const struct ref *child)
{
    for (long i = 0; i < count; i++)
        for (size_t k = 0; k < child->n; k++)
            ref_push(r, disp + i * stride + child->off[k], child->len[k]);
}

static void ref_copy(struct ref *dst, const struct ref *src)
{
    memset(dst, 0, sizeof *dst);
    ref_repeat(dst, 0, 1, 0, src);
    dst->extent = src->extent;
    dst->repr = src->repr;
}

static void ref_free(struct ref *r)
{
    free(r->off);
    free(r->len);
}

static void ref_span(const struct ref *r, long *lo, long *hi)
{
    *lo = 0;
    *hi = 0;
    for (size_t k = 0; k < r->n; k++) {
        if (k == 0 || r->off[k] < *lo)
            *lo = r->off[k];
        if (k == 0 || r->off[k] + r->len[k] > *hi)
            *hi = r->off[k] + r->len[k];
    }
}

/* ---------------------------------------------------------------------- */
/* Random layouts                                                          */
/* ---------------------------------------------------------------------- */

#define SPAN_LIMIT 20000     /* keep every layout within +-SPAN_LIMIT bytes */
#define RUN_LIMIT 4000       /* and its reference list short */

static struct hashi_repr_arena *arena;

static const struct hashi_type_repr *stored(const struct hashi_type_repr *n)
{
    const struct hashi_type_repr *s = hashi_repr_store(&arena, n);
    CHECK(s, "out of memory");
    return s;
}

static void random_layout(struct ref *out, int depth);

static void random_leaf(struct ref *out)
{
    struct hashi_type_repr n;
    long len = rnd_in(1, 24);
    memset(out, 0, sizeof *out);
    ref_push(out, 0, len);
    hashi_repr_leaf(&n, 0, len);
    out->repr = stored(&n);
    /* padding after the data, as resized or a pair type would have */
    out->extent = len + (rnd() % 3 == 0 ? rnd_in(1, 8) : 0);
}

/* A child repeated `count` times: the constructors' contiguous / vector step. */
static void random_repeat(struct ref *out, const struct ref *child)
{
    struct hashi_type_repr n, inner;
    long count = rnd_in(0, 6);
    long stride;
    switch (rnd() % 4) {
    case 0: stride = child->extent; break;                       /* contiguous */
    case 1: stride = -child->extent; break;                      /* negative stride */
    case 2: stride = child->extent * rnd_in(2, 4); break;        /* vector with gaps */
    default: stride = rnd_in(-40, 40); break;                    /* hvector, may overlap */
    }
    memset(out, 0, sizeof *out);
    if (rnd() % 2) {
        ref_repeat(out, 0, count, stride, child);
        hashi_repr_repeat(&n, 0, count, stride, child->repr);
    } else {
        /* vector: count blocks of bl instances at child's extent */
        long bl = rnd_in(1, 3);
        struct ref block = { 0 };
        ref_repeat(&block, 0, bl, child->extent, child);
        ref_repeat(out, 0, count, stride * bl, &block);
        ref_free(&block);
        hashi_repr_repeat(&inner, 0, bl, child->extent, child->repr);
        hashi_repr_repeat(&n, 0, count, stride * bl, stored(&inner));
    }
    out->repr = stored(&n);
    long lo, hi;
    ref_span(out, &lo, &hi);
    out->extent = hi - lo + (rnd() % 4 == 0 ? rnd_in(0, 16) : 0);
}

/* Blocks of several children at random displacements: indexed / struct. */
static void random_blocks(struct ref *out, int depth)
{
    struct hashi_repr_seq seq;
    int nblocks = (int)rnd_in(0, 5);
    struct ref children[5];
    memset(out, 0, sizeof *out);
    hashi_repr_seq_init(&seq);
    long cursor = rnd_in(-64, 64);
    for (int b = 0; b < nblocks; b++) {
        /* indexed: one child for all blocks; struct: each its own */
        if (b == 0 || rnd() % 2)
            random_layout(&children[b], depth + 1);
        else
            ref_copy(&children[b], &children[b - 1]);
        long count = rnd_in(0, 3);
        long disp;
        switch (rnd() % 3) {
        case 0: disp = cursor; break;                            /* touching the previous block */
        case 1: disp = cursor + rnd_in(1, 32); break;            /* a gap */
        default: disp = rnd_in(-200, 200); break;                /* anywhere, even before */
        }
        struct hashi_type_repr n;
        ref_repeat(out, disp, count, children[b].extent, &children[b]);
        hashi_repr_repeat(&n, disp, count, children[b].extent, children[b].repr);
        CHECK(hashi_repr_seq_add(&seq, &n) == 0, "seq_add failed");
        cursor = disp + count * children[b].extent;
    }
    for (int b = 0; b < nblocks; b++)
        ref_free(&children[b]);
    out->repr = hashi_repr_seq_finish(&seq, &arena);
    CHECK(out->repr, "seq_finish failed");
    long lo, hi;
    ref_span(out, &lo, &hi);
    out->extent = hi - lo + (rnd() % 4 == 0 ? rnd_in(0, 16) : 0);
}

static void random_layout(struct ref *out, int depth)
{
    int kind = depth >= 4 ? 0 : (int)(rnd() % 4);
    if (kind == 0) {
        random_leaf(out);
    } else if (kind == 1 || kind == 2) {
        struct ref child;
        random_layout(&child, depth + 1);
        random_repeat(out, &child);
        ref_free(&child);
    } else {
        random_blocks(out, depth);
    }
    long lo, hi;
    ref_span(out, &lo, &hi);
    if (lo < -SPAN_LIMIT || hi > SPAN_LIMIT || out->n > RUN_LIMIT) {
        /* too big for the test buffers: replace by a leaf */
        ref_free(out);
        random_leaf(out);
    }
}

/* ---------------------------------------------------------------------- */
/* Checking one layout                                                     */
/* ---------------------------------------------------------------------- */

#define AREA (8 * SPAN_LIMIT + 4096)

static unsigned char *memory, *expect_mem, *unpacked, *stream_ref, *stream_got;

/* Everything the layout means for `count` instances at base, checked. */
static void check_layout(const struct ref *r, long count, uint64_t seed, int iteration)
{
    long base = AREA / 2 - (count * r->extent) / 2;
    long total = count * r->size;
    CHECK(r->repr->size == r->size, "iteration %d (seed %" PRIu64 "): node size %lld, reference %ld",
          iteration, seed, (long long)r->repr->size, r->size);

    for (long i = 0; i < AREA; i++)
        memory[i] = (unsigned char)(rnd() | 1);   /* never 0: unpack targets start at 0 */

    /* reference stream and expected memory after unpacking it into zeros */
    long pos = 0;
    memset(expect_mem, 0, AREA);
    for (long i = 0; i < count; i++)
        for (size_t k = 0; k < r->n; k++) {
            long at = base + i * r->extent + r->off[k];
            CHECK(at >= 0 && at + r->len[k] <= AREA, "layout outside the test area");
            memcpy(stream_ref + pos, memory + at, (size_t)r->len[k]);
            memcpy(expect_mem + at, memory + at, (size_t)r->len[k]);
            pos += r->len[k];
        }
    CHECK(pos == total, "reference length");

    /* pack in random chunks, starting anywhere, in any order */
    memset(stream_got, 0xee, (size_t)total + 1);
    long done = 0;
    while (done < total) {
        long chunk = rnd() % 3 == 0 ? rnd_in(1, 7) : rnd_in(1, total);
        if (chunk > total - done)
            chunk = total - done;
        hashi_repr_move(r->repr, (uintptr_t)(memory + base), r->extent, done, chunk, (char *)stream_got + done, 0);
        done += chunk;
    }
    CHECK(stream_got[total] == 0xee, "iteration %d (seed %" PRIu64 "): pack wrote past the stream", iteration, seed);
    for (long i = 0; i < total; i++)
        CHECK(stream_got[i] == stream_ref[i],
              "iteration %d (seed %" PRIu64 "): packed byte %ld is %#x, expected %#x (count %ld, size %ld)",
              iteration, seed, i, stream_got[i], stream_ref[i], count, r->size);

    /* one more partial pack at a random offset, alone */
    if (total > 0) {
        long from = rnd_in(0, total - 1), len = rnd_in(1, total - from);
        memset(stream_got, 0, (size_t)len);
        hashi_repr_move(r->repr, (uintptr_t)(memory + base), r->extent, from, len, (char *)stream_got, 0);
        CHECK(memcmp(stream_got, stream_ref + from, (size_t)len) == 0,
              "iteration %d (seed %" PRIu64 "): partial pack [%ld, +%ld) differs", iteration, seed, from, len);
    }

    /* unpack in random chunks into zeroed memory: only the layout's bytes change */
    memset(unpacked, 0, AREA);
    done = 0;
    while (done < total) {
        long chunk = rnd() % 3 == 0 ? rnd_in(1, 5) : rnd_in(1, total);
        if (chunk > total - done)
            chunk = total - done;
        hashi_repr_move(r->repr, (uintptr_t)(unpacked + base), r->extent, done, chunk, (char *)stream_ref + done, 1);
        done += chunk;
    }
    for (long i = 0; i < AREA; i++)
        CHECK(unpacked[i] == expect_mem[i],
              "iteration %d (seed %" PRIu64 "): after unpack, byte %ld (base%+ld) is %#x, expected %#x",
              iteration, seed, i, i - base, unpacked[i], expect_mem[i]);
}

/* ---------------------------------------------------------------------- */
/* Simplification checks                                                   */
/* ---------------------------------------------------------------------- */

static const char *describe(const struct hashi_type_repr *n)
{
    static char buf[512];
    return hashi_repr_describe(n, buf, sizeof buf);
}

#define EXPECT_SHAPE(node, text) \
    CHECK(strcmp(describe(node), text) == 0, "%s:%d: layout is %s, expected %s", __FILE__, __LINE__, describe(node), text)

static void check_shapes(void)
{
    struct hashi_type_repr leaf8, n, inner;
    const struct hashi_type_repr *d, *v;
    hashi_repr_leaf(&leaf8, 0, 8);
    d = stored(&leaf8);

    /* contiguous of doubles: one run */
    hashi_repr_repeat(&n, 0, 1000, 8, d);
    EXPECT_SHAPE(&n, "LEAF 8000@0");

    /* vector of 10^6 doubles, stride 2: one VEC over one LEAF, no arrays */
    hashi_repr_repeat(&inner, 0, 1, 8, d);
    hashi_repr_repeat(&n, 0, 1000000, 16, stored(&inner));
    EXPECT_SHAPE(&n, "VEC(1000000x+16@0, LEAF 8@0)");

    /* blocks of 3 doubles every 5: the block is one leaf */
    hashi_repr_repeat(&inner, 0, 3, 8, d);
    v = stored(&inner);
    hashi_repr_repeat(&n, 0, 100, 40, v);
    EXPECT_SHAPE(&n, "VEC(100x+40@0, LEAF 24@0)");

    /* a contiguous type of that vector resized to 100 * 40: a longer vector */
    const struct hashi_type_repr *vec = stored(&n);
    hashi_repr_repeat(&n, 0, 7, 4000, vec);
    EXPECT_SHAPE(&n, "VEC(700x+40@0, LEAF 24@0)");

    /* negative stride stays a vector */
    hashi_repr_repeat(&n, 0, 4, -8, d);
    EXPECT_SHAPE(&n, "VEC(4x-8@0, LEAF 8@0)");

    /* struct { int a; int b; double c; } packed tight: one run */
    struct hashi_repr_seq seq;
    struct hashi_type_repr part;
    hashi_repr_seq_init(&seq);
    hashi_repr_leaf(&part, 0, 4);
    hashi_repr_seq_add(&seq, &part);
    hashi_repr_leaf(&part, 4, 4);
    hashi_repr_seq_add(&seq, &part);
    hashi_repr_leaf(&part, 8, 8);
    hashi_repr_seq_add(&seq, &part);
    EXPECT_SHAPE(hashi_repr_seq_finish(&seq, &arena), "LEAF 16@0");

    /* struct { char c; double d; }: two runs */
    hashi_repr_seq_init(&seq);
    hashi_repr_leaf(&part, 0, 1);
    hashi_repr_seq_add(&seq, &part);
    hashi_repr_leaf(&part, 8, 8);
    hashi_repr_seq_add(&seq, &part);
    EXPECT_SHAPE(hashi_repr_seq_finish(&seq, &arena), "RUNS(2@0: 1@0 8@8)");

    /* indexed blocks at a constant spacing with equal lengths: a vector */
    hashi_repr_seq_init(&seq);
    for (int i = 0; i < 50; i++) {
        hashi_repr_repeat(&part, 100 + 32 * i, 2, 8, d);
        hashi_repr_seq_add(&seq, &part);
    }
    EXPECT_SHAPE(hashi_repr_seq_finish(&seq, &arena), "VEC(50x+32@100, LEAF 16@0)");

    /* irregular indexed blocks of a million entries: flat runs, found by bisection */
    hashi_repr_seq_init(&seq);
    for (long i = 0; i < 1000000; i++) {
        hashi_repr_leaf(&part, 24 * i + (i % 3), 8);
        hashi_repr_seq_add(&seq, &part);
    }
    const struct hashi_type_repr *runs = hashi_repr_seq_finish(&seq, &arena);
    CHECK(runs && runs->kind == HASHI_REPR_RUNS && runs->count == 1000000 && runs->size == 8000000,
          "a million irregular blocks: %s", describe(runs));

    /* a subarray of rows: whole rows merge into one run per plane */
    hashi_repr_repeat(&inner, 8 * 2, 6, 8, d);                 /* x: 6 of 10 from 2 */
    hashi_repr_repeat(&part, 80 * 1, 3, 80, stored(&inner));   /* y: 3 of 10 from 1 */
    hashi_repr_repeat(&n, 800 * 4, 2, 800, stored(&part));     /* z: 2 of 5 from 4 */
    EXPECT_SHAPE(&n, "VEC(2x+800@3200, VEC(3x+80@80, LEAF 48@16))");
    hashi_repr_repeat(&inner, 0, 10, 8, d);                    /* full rows */
    hashi_repr_repeat(&part, 80 * 1, 3, 80, stored(&inner));
    EXPECT_SHAPE(&part, "LEAF 240@80");

    /* empty pieces vanish */
    hashi_repr_repeat(&n, 0, 0, 8, d);
    CHECK(n.size == 0, "an empty repeat has data");
    hashi_repr_seq_init(&seq);
    hashi_repr_seq_add(&seq, &n);
    EXPECT_SHAPE(hashi_repr_seq_finish(&seq, &arena), "LEAF 0@0");
}

/* hashi_type_pack on a hand-made type object: the contiguous fast path and
 * the count / offset clipping. */
static void check_type_entry_points(void)
{
    struct MPI_ABI_Datatype t;
    struct hashi_type_repr leaf, n;
    unsigned char src[256], out[256];
    for (int i = 0; i < 256; i++)
        src[i] = (unsigned char)i;

    memset(&t, 0, sizeof t);
    hashi_repr_leaf(&leaf, 4, 8);          /* 8 bytes at 4, extent 8: contiguous from buf + 4 */
    t.repr = stored(&leaf);
    t.size = 8;
    t.lb = 0;
    t.ub = 8;
    t.true_lb = 4;
    t.true_ub = 12;
    t.contiguous = t.dense = 1;
    CHECK(hashi_type_pack(src, 3, &t, 5, out, 100) == 19, "clipping to the stream");
    CHECK(memcmp(out, src + 9, 19) == 0, "contiguous fast path bytes");
    CHECK(hashi_type_pack(src, 3, &t, 24, out, 100) == 0, "offset at the end");
    CHECK(hashi_type_pack(src, 0, &t, 0, out, 100) == 0, "count 0");

    /* the same leaf with extent 12: strided */
    t.ub = 12;
    t.contiguous = 0;
    memset(out, 0, sizeof out);
    CHECK(hashi_type_pack(src, 3, &t, 0, out, 24) == 24, "strided length");
    for (int i = 0; i < 3; i++)
        CHECK(memcmp(out + 8 * i, src + 4 + 12 * i, 8) == 0, "strided bytes of element %d", i);
    unsigned char back[256];
    memset(back, 0, sizeof back);
    CHECK(hashi_type_unpack(back, 3, &t, 0, out, 24) == 24, "strided unpack length");
    for (int i = 0; i < 3; i++)
        CHECK(memcmp(back + 4 + 12 * i, src + 4 + 12 * i, 8) == 0 && back[12 * i] == 0,
              "strided unpack of element %d", i);

    /* a VEC type: vector of 4 runs of 3 bytes every 5 */
    hashi_repr_leaf(&leaf, 0, 3);
    hashi_repr_repeat(&n, 0, 4, 5, stored(&leaf));
    t.repr = stored(&n);
    t.size = 12;
    t.ub = 18;
    memset(out, 0, sizeof out);
    CHECK(hashi_type_pack(src, 2, &t, 7, out, 11) == 11, "vector partial length");
    /* stream byte k of element e is src[18e + 5(k/3) + k%3] */
    for (int s = 7; s < 18; s++) {
        int e = s / 12, k = s % 12;
        CHECK(out[s - 7] == src[18 * e + 5 * (k / 3) + k % 3], "vector partial byte %d", s);
    }
}

/* ---------------------------------------------------------------------- */
/* Throughput (for docs/datatypes.md)                                      */
/* ---------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench_one(const char *what, const struct hashi_type_repr *node, MPI_Aint extent, long count,
                      const char *src, char *dst)
{
    long bytes = count * node->size;
    int reps = 0;
    double t0 = now(), t1;
    do {
        hashi_repr_move(node, (uintptr_t)src, extent, 0, bytes, dst, 0);
        reps++;
        t1 = now();
    } while (t1 - t0 < 0.5);
    printf("%-44s %8.2f GB/s packed\n", what, (double)bytes * reps / (t1 - t0) / 1e9);
}

static void bench(void)
{
    long n = 1 << 20;
    char *src = malloc((size_t)n * 64), *dst = malloc((size_t)n * 64);
    CHECK(src && dst, "out of memory");
    memset(src, 1, (size_t)n * 64);
    memset(dst, 0, (size_t)n * 64);
    struct hashi_type_repr leaf, n8, v;
    double t0 = now();
    int reps = 0;
    do {
        memcpy(dst, src, (size_t)n * 8);
        reps++;
    } while (now() - t0 < 0.5);
    printf("%-44s %8.2f GB/s\n", "memcpy of 8 MiB", (double)n * 8 * reps / (now() - t0) / 1e9);

    hashi_repr_leaf(&leaf, 0, 8);
    hashi_repr_repeat(&v, 0, n, 16, stored(&leaf));
    bench_one("vector of 2^20 doubles, stride 2", &v, 0, 1, src, dst);
    hashi_repr_leaf(&leaf, 0, 4);
    hashi_repr_repeat(&v, 0, n, 12, stored(&leaf));
    bench_one("vector of 2^20 ints, stride 3", &v, 0, 1, src, dst);
    hashi_repr_leaf(&leaf, 0, 256);
    hashi_repr_repeat(&v, 0, n / 32, 512, stored(&leaf));
    bench_one("vector of 32768 blocks of 256 B, stride 512", &v, 0, 1, src, dst);

    /* an irregular struct of basic types, as RUNS, repeated 2^20 times */
    struct hashi_repr_seq seq;
    hashi_repr_seq_init(&seq);
    hashi_repr_leaf(&leaf, 0, 1);
    hashi_repr_seq_add(&seq, &leaf);
    hashi_repr_leaf(&leaf, 8, 8);
    hashi_repr_seq_add(&seq, &leaf);
    hashi_repr_leaf(&leaf, 16, 4);
    hashi_repr_seq_add(&seq, &leaf);
    const struct hashi_type_repr *st = hashi_repr_seq_finish(&seq, &arena);
    bench_one("2^20 x struct {char; double; int} (24 B)", st, 24, n, src, dst);
    (void)n8;
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        bench();
        hashi_repr_arena_free(arena);
        return 0;
    }
    int iterations = argc > 1 ? atoi(argv[1]) : 3000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL);
    rng_state = seed | 1;

    check_shapes();
    check_type_entry_points();

    memory = malloc(AREA);
    expect_mem = malloc(AREA);
    unpacked = malloc(AREA);
    stream_ref = malloc(8 * (size_t)AREA);
    stream_got = malloc(8 * (size_t)AREA + 1);
    CHECK(memory && expect_mem && unpacked && stream_ref && stream_got, "out of memory");

    long total_runs = 0;
    for (int it = 0; it < iterations; it++) {
        struct ref r;
        random_layout(&r, 0);
        long count = rnd_in(1, 4);
        if (count * (r.size + r.extent) > AREA / 2)
            count = 1;
        check_layout(&r, count, seed, it);
        total_runs += (long)r.n * count;
        ref_free(&r);
        if (it % 256 == 255) {
            /* nodes of finished layouts are no longer referenced */
            hashi_repr_arena_free(arena);
            arena = NULL;
        }
    }
    hashi_repr_arena_free(arena);
    free(memory);
    free(expect_mem);
    free(unpacked);
    free(stream_ref);
    free(stream_got);
    printf("engine ok: %d random layouts (%ld runs) packed and unpacked in chunks, seed %" PRIu64 "\n",
           iterations, total_runs, seed);
    return 0;
}
