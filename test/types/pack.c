/*
 * MPI_Pack / MPI_Unpack round trips.
 *
 * 1. Random nested types built with the MPI constructors, each next to a
 *    reference model of its type map and bounds (built by plain loops from
 *    the definitions): size, bounds and true bounds must agree, and packing /
 *    unpacking (whole, element by element at odd positions) must move
 *    exactly the model's bytes.
 * 2. Fixed cases: several types packed one after another into one buffer
 *    and unpacked in turn, a matrix column packed as a vector and unpacked as
 *    contiguous, absolute addresses with MPI_BOTTOM, MPI_Pack_size bounds.
 *
 * usage: pack [iterations [seed]]
 */
#include "typemap.h"

#include <inttypes.h>
#include <stddef.h>
#include <time.h>

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static long rnd_in(long lo, long hi)
{
    return lo + (long)(rnd() % (uint64_t)(hi - lo + 1));
}

/* A type and what the definitions say about it. */
struct model {
    MPI_Datatype type;
    struct typemap tm;
    int have_bounds;
    MPI_Aint lb, ub;
    int align;
    int explicit_bounds;   /* resized somewhere inside: no struct padding */
};

static void model_block(struct model *m, MPI_Aint disp, long count, MPI_Aint stride, const struct model *c)
{
    if (count <= 0)
        return;
    tm_repeat(&m->tm, disp, count, stride, &c->tm);
    /* the first and the last instance bound the block */
    MPI_Aint first = disp, last = disp + (count - 1) * stride;
    MPI_Aint lb = (first < last ? first : last) + c->lb, ub = (first < last ? last : first) + c->ub;
    if (!m->have_bounds || lb < m->lb)
        m->lb = lb;
    if (!m->have_bounds || ub > m->ub)
        m->ub = ub;
    m->have_bounds = 1;
    if (c->align > m->align)
        m->align = c->align;
    m->explicit_bounds |= c->explicit_bounds;
}

static void model_finish(struct model *m)
{
    if (!m->have_bounds)
        m->lb = m->ub = 0;
}

static struct model model_basic(MPI_Datatype t, int size)
{
    struct model m = { 0 };
    m.type = t;
    m.tm = tm_basic(size);
    m.ub = size;
    m.have_bounds = 1;
    m.align = size;
    return m;
}

static struct model random_model(int depth);

static struct model random_base(void)
{
    switch (rnd() % 6) {
    case 0: return model_basic(MPI_CHAR, 1);
    case 1: return model_basic(MPI_SHORT, 2);
    case 2: return model_basic(MPI_INT, 4);
    case 3: return model_basic(MPI_DOUBLE, 8);
    case 4: {
        struct { double v; int i; } s;
        struct model m = { 0 };
        m.type = MPI_DOUBLE_INT;
        tm_push(&m.tm, 0, 8);
        tm_push(&m.tm, (MPI_Aint)((char *)&s.i - (char *)&s), 4);
        m.ub = sizeof s;
        m.have_bounds = 1;
        m.align = 8;
        return m;
    }
    default: {
        struct { short v; int i; } s;
        struct model m = { 0 };
        m.type = MPI_SHORT_INT;
        tm_push(&m.tm, 0, 2);
        tm_push(&m.tm, (MPI_Aint)((char *)&s.i - (char *)&s), 4);
        m.ub = sizeof s;
        m.have_bounds = 1;
        m.align = 4;
        return m;
    }
    }
}

static MPI_Aint extent_of(const struct model *m)
{
    return m->ub - m->lb;
}

static void free_model(struct model *m)
{
    int ni, na, nd, combiner;
    CHECK_MPI(MPI_Type_get_envelope(m->type, &ni, &na, &nd, &combiner));
    if (combiner != MPI_COMBINER_NAMED)
        CHECK_MPI(MPI_Type_free(&m->type));
    tm_free(&m->tm);
}

static struct model random_derived(int depth)
{
    struct model c = random_model(depth + 1), m = { 0 };
    MPI_Aint ext = extent_of(&c);
    int count = (int)rnd_in(0, 4);
    m.align = 1;
    switch (rnd() % 9) {
    case 0:
        CHECK_MPI(MPI_Type_contiguous(count, c.type, &m.type));
        model_block(&m, 0, count, ext, &c);
        break;
    case 1: {
        int bl = (int)rnd_in(0, 3), stride = (int)rnd_in(-4, 4);
        CHECK_MPI(MPI_Type_vector(count, bl, stride, c.type, &m.type));
        for (int i = 0; i < count; i++)
            model_block(&m, (MPI_Aint)i * stride * ext, bl, ext, &c);
        break;
    }
    case 2: {
        int bl = (int)rnd_in(0, 3);
        MPI_Aint stride = rnd_in(-64, 64);
        CHECK_MPI(MPI_Type_create_hvector(count, bl, stride, c.type, &m.type));
        for (int i = 0; i < count; i++)
            model_block(&m, i * stride, bl, ext, &c);
        break;
    }
    case 3: {
        int bl[4], disp[4];
        for (int i = 0; i < count; i++)
            bl[i] = (int)rnd_in(0, 3), disp[i] = (int)rnd_in(-6, 6);
        CHECK_MPI(MPI_Type_indexed(count, bl, disp, c.type, &m.type));
        for (int i = 0; i < count; i++)
            model_block(&m, disp[i] * ext, bl[i], ext, &c);
        break;
    }
    case 4: {
        int bl[4];
        MPI_Aint disp[4];
        for (int i = 0; i < count; i++)
            bl[i] = (int)rnd_in(0, 3), disp[i] = rnd_in(-100, 100);
        CHECK_MPI(MPI_Type_create_hindexed(count, bl, disp, c.type, &m.type));
        for (int i = 0; i < count; i++)
            model_block(&m, disp[i], bl[i], ext, &c);
        break;
    }
    case 5: {
        int bl = (int)rnd_in(1, 3), disp[4];
        for (int i = 0; i < count; i++)
            disp[i] = (int)rnd_in(-6, 6);
        CHECK_MPI(MPI_Type_create_indexed_block(count, bl, disp, c.type, &m.type));
        for (int i = 0; i < count; i++)
            model_block(&m, disp[i] * ext, bl, ext, &c);
        break;
    }
    case 6: {
        /* struct: this child and up to three more, at random displacements */
        struct model parts[4];
        int bl[4];
        MPI_Aint disp[4];
        MPI_Datatype types[4];
        int n = count ? count : 1;
        parts[0] = c;
        for (int i = 1; i < n; i++)
            parts[i] = random_model(depth + 1);
        for (int i = 0; i < n; i++) {
            bl[i] = (int)rnd_in(0, 2);
            disp[i] = rnd_in(-64, 64);
            types[i] = parts[i].type;
            model_block(&m, disp[i], bl[i], extent_of(&parts[i]), &parts[i]);
        }
        CHECK_MPI(MPI_Type_create_struct(n, bl, disp, types, &m.type));
        model_finish(&m);
        if (!m.explicit_bounds && m.align > 1 && (m.ub - m.lb) % m.align)
            m.ub += m.align - (m.ub - m.lb) % m.align;
        for (int i = 1; i < n; i++)
            free_model(&parts[i]);
        break;
    }
    case 7: {
        MPI_Aint lb = rnd_in(-16, 16), extent = rnd_in(0, 48);
        CHECK_MPI(MPI_Type_create_resized(c.type, lb, extent, &m.type));
        tm_repeat(&m.tm, 0, 1, 0, &c.tm);
        m.have_bounds = 1;
        m.lb = lb;
        m.ub = lb + extent;
        m.align = c.align;
        m.explicit_bounds = 1;
        break;
    }
    default:
        CHECK_MPI(MPI_Type_dup(c.type, &m.type));
        tm_repeat(&m.tm, 0, 1, 0, &c.tm);
        m.have_bounds = 1;
        m.lb = c.lb;
        m.ub = c.ub;
        m.align = c.align;
        m.explicit_bounds = c.explicit_bounds;
        break;
    }
    model_finish(&m);
    /* the child may go now: the new type keeps what it needs */
    free_model(&c);
    return m;
}

static struct model random_model(int depth)
{
    if (depth >= 3 || rnd() % 3 == 0)
        return random_base();
    return random_derived(depth);
}

static void check_model(struct model *m, uint64_t seed, int it)
{
    char what[96];
    snprintf(what, sizeof what, "random type %d (seed %" PRIu64 ")", it, seed);
    MPI_Count size;
    MPI_Aint lb, extent, tlb, text;
    CHECK_MPI(MPI_Type_commit(&m->type));
    CHECK_MPI(MPI_Type_size_c(m->type, &size));
    CHECK_MPI(MPI_Type_get_extent(m->type, &lb, &extent));
    CHECK_MPI(MPI_Type_get_true_extent(m->type, &tlb, &text));
    CHECK(size == tm_size(&m->tm), "%s: size %lld, model %ld", what, (long long)size, tm_size(&m->tm));
    CHECK(lb == m->lb && extent == m->ub - m->lb, "%s: lb %ld extent %ld, model %ld %ld", what, (long)lb,
          (long)extent, (long)m->lb, (long)(m->ub - m->lb));
    MPI_Aint mlo = 0, mhi = 0;
    for (int k = 0; k < m->tm.n; k++) {
        if (k == 0 || m->tm.disp[k] < mlo)
            mlo = m->tm.disp[k];
        if (k == 0 || m->tm.disp[k] + m->tm.len[k] > mhi)
            mhi = m->tm.disp[k] + m->tm.len[k];
    }
    if (size > 0)
        CHECK(tlb == mlo && text == mhi - mlo, "%s: true lb %ld true extent %ld, model %ld %ld", what, (long)tlb,
              (long)text, (long)mlo, (long)(mhi - mlo));
    int count = (int)rnd_in(1, 3);
    /* element i's bytes are at i * extent + [mlo, mhi) */
    MPI_Aint reach = (MPI_Aint)(count - 1) * extent;
    MPI_Aint low = (reach < 0 ? reach : 0) + (size > 0 ? mlo : 0);
    MPI_Aint high = (reach > 0 ? reach : 0) + (size > 0 ? mhi : 0);
    MPI_Aint below = (low < 0 ? -low : 0) + 64;
    MPI_Aint span = below + (high > 0 ? high : 0) + 64;
    tm_check_pack(what, m->type, count, &m->tm, extent, (size_t)span, (size_t)below);
}

/* Several types one after another in one packed buffer, then unpacked in turn. */
static void test_sequence(void)
{
    struct cdi { char c; double d; int i; } in[3], out[3];
    int ints_in[10], ints_out[10];
    double col_in[4][3], col_out[4];
    MPI_Datatype st, column;
    MPI_Aint disp[3] = { offsetof(struct cdi, c), offsetof(struct cdi, d), offsetof(struct cdi, i) };
    CHECK_MPI(MPI_Type_create_struct(3, (int[]){ 1, 1, 1 }, disp, (MPI_Datatype[]){ MPI_CHAR, MPI_DOUBLE, MPI_INT },
                                     &st));
    CHECK_MPI(MPI_Type_commit(&st));
    CHECK_MPI(MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &column));
    CHECK_MPI(MPI_Type_commit(&column));
    for (int i = 0; i < 3; i++)
        in[i] = (struct cdi){ (char)('a' + i), 1.5 * i, 100 + i };
    for (int i = 0; i < 10; i++)
        ints_in[i] = i * i;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++)
            col_in[r][c] = 10 * r + c;

    int sz_st, sz_ints, sz_col;
    CHECK_MPI(MPI_Pack_size(3, st, MPI_COMM_WORLD, &sz_st));
    CHECK_MPI(MPI_Pack_size(10, MPI_INT, MPI_COMM_WORLD, &sz_ints));
    CHECK_MPI(MPI_Pack_size(1, column, MPI_COMM_WORLD, &sz_col));
    CHECK(sz_st >= 3 * 13 && sz_ints >= 40 && sz_col >= 32, "MPI_Pack_size: %d %d %d", sz_st, sz_ints, sz_col);
    int total = sz_st + sz_ints + sz_col;
    char *buf = malloc((size_t)total);
    CHECK(buf, "out of memory");
    int pos = 0;
    CHECK_MPI(MPI_Pack(in, 3, st, buf, total, &pos, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Pack(ints_in, 10, MPI_INT, buf, total, &pos, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Pack(&col_in[0][1], 1, column, buf, total, &pos, MPI_COMM_WORLD));
    CHECK(pos <= total, "packed %d bytes, more than MPI_Pack_size's %d", pos, total);

    memset(out, 0, sizeof out);
    memset(ints_out, 0, sizeof ints_out);
    int end = pos;
    pos = 0;
    CHECK_MPI(MPI_Unpack(buf, end, &pos, out, 3, st, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Unpack(buf, end, &pos, ints_out, 10, MPI_INT, MPI_COMM_WORLD));
    /* the column comes back as four contiguous doubles: only the signature matters */
    CHECK_MPI(MPI_Unpack(buf, end, &pos, col_out, 4, MPI_DOUBLE, MPI_COMM_WORLD));
    CHECK(pos == end, "unpacked %d of %d bytes", pos, end);
    for (int i = 0; i < 3; i++)
        CHECK(out[i].c == in[i].c && out[i].d == in[i].d && out[i].i == in[i].i, "struct %d differs", i);
    CHECK(memcmp(ints_out, ints_in, sizeof ints_in) == 0, "ints differ");
    for (int r = 0; r < 4; r++)
        CHECK(col_out[r] == col_in[r][1], "column element %d is %g", r, col_out[r]);
    free(buf);
    CHECK_MPI(MPI_Type_free(&st));
    CHECK_MPI(MPI_Type_free(&column));
}

/* MPI_BOTTOM with absolute addresses from MPI_Get_address. */
static void test_bottom(void)
{
    static int a = 7;
    double b[2] = { 2.5, -1.25 };
    short c = 3;
    MPI_Aint addr[3];
    CHECK_MPI(MPI_Get_address(&a, &addr[0]));
    CHECK_MPI(MPI_Get_address(b, &addr[1]));
    CHECK_MPI(MPI_Get_address(&c, &addr[2]));
    CHECK(MPI_Aint_diff(addr[1], addr[0]) == (MPI_Aint)((char *)b - (char *)&a), "MPI_Aint_diff");
    CHECK(MPI_Aint_add(addr[0], 4) == addr[0] + 4, "MPI_Aint_add");
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_create_struct(3, (int[]){ 1, 2, 1 }, addr, (MPI_Datatype[]){ MPI_INT, MPI_DOUBLE, MPI_SHORT },
                                     &t));
    CHECK_MPI(MPI_Type_commit(&t));
    char buf[64];
    int pos = 0;
    CHECK_MPI(MPI_Pack(MPI_BOTTOM, 1, t, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK(pos == 4 + 16 + 2, "MPI_BOTTOM pack size %d", pos);
    CHECK(memcmp(buf, &a, 4) == 0 && memcmp(buf + 4, b, 16) == 0 && memcmp(buf + 20, &c, 2) == 0,
          "MPI_BOTTOM pack bytes");
    a = 0;
    b[0] = b[1] = 0;
    c = 0;
    pos = 0;
    CHECK_MPI(MPI_Unpack(buf, sizeof buf, &pos, MPI_BOTTOM, 1, t, MPI_COMM_WORLD));
    CHECK(a == 7 && b[0] == 2.5 && b[1] == -1.25 && c == 3, "MPI_BOTTOM unpack");
    CHECK_MPI(MPI_Type_free(&t));
}

/* MPI_Pack_size bounds what MPI_Pack writes, for counts and types of all shapes. */
static void test_pack_size(void)
{
    MPI_Datatype types[3];
    CHECK_MPI(MPI_Type_vector(5, 2, -3, MPI_SHORT_INT, &types[0]));
    CHECK_MPI(MPI_Type_create_resized(MPI_LONG_DOUBLE_INT, -8, 64, &types[1]));
    CHECK_MPI(MPI_Type_contiguous(0, MPI_INT, &types[2]));
    for (int k = 0; k < 3; k++) {
        CHECK_MPI(MPI_Type_commit(&types[k]));
        for (int count = 0; count < 5; count++) {
            int bound, size;
            MPI_Count bound_c;
            CHECK_MPI(MPI_Pack_size(count, types[k], MPI_COMM_WORLD, &bound));
            CHECK_MPI(MPI_Pack_size_c(count, types[k], MPI_COMM_WORLD, &bound_c));
            CHECK_MPI(MPI_Type_size(types[k], &size));
            CHECK(bound == bound_c && bound >= count * size, "Pack_size %d for %d x %d bytes", bound, count, size);
            MPI_Aint lb, extent;
            CHECK_MPI(MPI_Type_get_extent(types[k], &lb, &extent));
            size_t span = (size_t)(count * (extent < 0 ? -extent : extent) + 1024);
            char *in = calloc(1, 2 * span), *out = malloc((size_t)bound + 1);
            CHECK(in && out, "out of memory");
            int pos = 0;
            out[bound] = 0x5a;
            CHECK_MPI(MPI_Pack(in + span, count, types[k], out, bound, &pos, MPI_COMM_WORLD));
            CHECK(pos <= bound && out[bound] == 0x5a, "MPI_Pack wrote %d bytes, Pack_size said %d", pos, bound);
            free(in);
            free(out);
        }
        CHECK_MPI(MPI_Type_free(&types[k]));
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int iterations = argc > 1 ? atoi(argv[1]) : 400;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL);
    rng_state = seed | 1;

    test_sequence();
    test_bottom();
    test_pack_size();
    for (int it = 0; it < iterations; it++) {
        struct model m = random_derived(0);
        check_model(&m, seed, it);
        free_model(&m);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d pack ok: %d random types, seed %" PRIu64 "\n", rank, iterations, seed);
    MPI_Finalize();
    return 0;
}
