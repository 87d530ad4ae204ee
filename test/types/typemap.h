/*
 * A reference for the datatype tests: a type map written out as its list of
 * basic entries (displacement, length) in order, built by plain loops from
 * the constructors' definitions, and the byte-for-byte checks of MPI_Pack /
 * MPI_Unpack against it. Independent of the library's engine on purpose.
 */
#ifndef HASHI_TEST_TYPES_TYPEMAP_H
#define HASHI_TEST_TYPES_TYPEMAP_H

#include "../util/check.h"

#include <stdint.h>
#include <string.h>

struct typemap {
    int n, cap;
    MPI_Aint *disp;
    int *len;
};

static inline void tm_push(struct typemap *tm, MPI_Aint disp, int len)
{
    if (tm->n == tm->cap) {
        tm->cap = tm->cap ? 2 * tm->cap : 16;
        tm->disp = realloc(tm->disp, (size_t)tm->cap * sizeof *tm->disp);
        tm->len = realloc(tm->len, (size_t)tm->cap * sizeof *tm->len);
        CHECK(tm->disp && tm->len, "out of memory");
    }
    tm->disp[tm->n] = disp;
    tm->len[tm->n++] = len;
}

/* One basic element of len bytes at 0. */
static inline struct typemap tm_basic(int len)
{
    struct typemap tm = { 0 };
    tm_push(&tm, 0, len);
    return tm;
}

/* Append count copies of child, copy i shifted by disp + i * stride. */
static inline void tm_repeat(struct typemap *out, MPI_Aint disp, long count, MPI_Aint stride,
                             const struct typemap *child)
{
    for (long i = 0; i < count; i++)
        for (int k = 0; k < child->n; k++)
            tm_push(out, disp + i * stride + child->disp[k], child->len[k]);
}

static inline void tm_free(struct typemap *tm)
{
    free(tm->disp);
    free(tm->len);
    memset(tm, 0, sizeof *tm);
}

static inline long tm_size(const struct typemap *tm)
{
    long size = 0;
    for (int k = 0; k < tm->n; k++)
        size += tm->len[k];
    return size;
}

/* A buffer with a recognisable byte at every address, and room below and
 * above base for negative and large displacements. */
struct area {
    unsigned char *mem;
    size_t size;
    unsigned char *base;
};

static inline struct area area_make(size_t size, size_t below)
{
    struct area a;
    a.mem = malloc(size);
    CHECK(a.mem, "out of memory");
    a.size = size;
    a.base = a.mem + below;
    for (size_t i = 0; i < size; i++)
        a.mem[i] = (unsigned char)(i * 131 + 7);
    return a;
}

/*
 * Pack (base, count, type) with MPI_Pack at an odd position and compare the
 * bytes with what the type map says; then unpack into a zeroed area and check
 * that exactly the type map's bytes came back and nothing else was written.
 * extent is the type's extent (checked elsewhere).
 */
static inline void tm_check_pack(const char *what, MPI_Datatype type, int count, const struct typemap *tm,
                                 MPI_Aint extent, size_t area_size, size_t below)
{
    struct area src = area_make(area_size, below);
    long bytes = tm_size(tm) * count;
    int packed_size = -1;
    CHECK_MPI(MPI_Pack_size(count, type, MPI_COMM_WORLD, &packed_size));
    CHECK(packed_size >= bytes, "%s: MPI_Pack_size %d < %ld data bytes", what, packed_size, bytes);

    const int lead = 3; /* an odd starting position */
    unsigned char *packed = malloc((size_t)packed_size + lead + 16);
    CHECK(packed, "out of memory");
    memset(packed, 0xa5, (size_t)packed_size + lead + 16);
    int position = lead;
    CHECK_MPI(MPI_Pack(src.base, count, type, packed, packed_size + lead, &position, MPI_COMM_WORLD));
    CHECK(position == lead + bytes, "%s: position %d after MPI_Pack, expected %ld", what, position, lead + bytes);
    CHECK(packed[0] == 0xa5 && packed[lead - 1] == 0xa5, "%s: MPI_Pack wrote before position", what);
    CHECK(packed[position] == 0xa5, "%s: MPI_Pack wrote past the data", what);

    long at = lead;
    for (int i = 0; i < count; i++)
        for (int k = 0; k < tm->n; k++) {
            const unsigned char *from = src.base + i * extent + tm->disp[k];
            CHECK(from >= src.mem && from + tm->len[k] <= src.mem + src.size, "%s: test area too small", what);
            for (int b = 0; b < tm->len[k]; b++, at++)
                CHECK(packed[at] == from[b], "%s: packed byte %ld (element %d, entry %d at %+ld) is %#x, expected %#x",
                      what, at - lead, i, k, (long)tm->disp[k], packed[at], from[b]);
        }

    /* unpack into zeros: the type map's bytes reappear, the rest stays 0 */
    struct area dst = area_make(area_size, below);
    unsigned char *expect = calloc(1, area_size);
    CHECK(expect, "out of memory");
    memset(dst.mem, 0, area_size);
    for (int i = 0; i < count; i++)
        for (int k = 0; k < tm->n; k++) {
            size_t off = (size_t)((src.base + i * extent + tm->disp[k]) - src.mem);
            memcpy(expect + off, src.mem + off, (size_t)tm->len[k]);
        }
    position = lead;
    CHECK_MPI(MPI_Unpack(packed, packed_size + lead, &position, dst.base, count, type, MPI_COMM_WORLD));
    CHECK(position == lead + bytes, "%s: position %d after MPI_Unpack, expected %ld", what, position, lead + bytes);
    for (size_t i = 0; i < area_size; i++)
        CHECK(dst.mem[i] == expect[i], "%s: after MPI_Unpack byte %+ld is %#x, expected %#x", what,
              (long)i - (long)below, dst.mem[i], expect[i]);

    /* element by element at odd positions: the same stream */
    unsigned char *one_by_one = malloc((size_t)bytes + 8);
    CHECK(one_by_one, "out of memory");
    position = 1;
    for (int i = 0; i < count; i++)
        CHECK_MPI(MPI_Pack(src.base + i * extent, 1, type, one_by_one, (int)bytes + 8, &position, MPI_COMM_WORLD));
    CHECK(position == 1 + bytes, "%s: element-wise packing ended at %d", what, position);
    CHECK(memcmp(one_by_one + 1, packed + lead, (size_t)bytes) == 0, "%s: element-wise packing differs", what);

    free(one_by_one);
    free(expect);
    free(packed);
    free(src.mem);
    free(dst.mem);
}

#endif
