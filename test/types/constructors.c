/*
 * Every datatype constructor against hand-computed values: size, lb, extent,
 * true lb, true extent, the envelope and contents of both the int and the
 * large-count forms, and the packed bytes against the type map. Also
 * reference counting: types outlive the types they were built from, handles
 * from MPI_Type_get_contents, dup of a committed type.
 */
#include "typemap.h"

#include <stddef.h>

struct bounds {
    MPI_Count size;
    MPI_Aint lb, extent, true_lb, true_extent;
};

static void check_bounds(const char *what, MPI_Datatype t, struct bounds e)
{
    MPI_Count size, clb, cext, ctlb, ctext;
    MPI_Aint lb, ext, tlb, text;
    CHECK_MPI(MPI_Type_size_c(t, &size));
    CHECK_MPI(MPI_Type_get_extent(t, &lb, &ext));
    CHECK_MPI(MPI_Type_get_true_extent(t, &tlb, &text));
    CHECK(size == e.size, "%s: size %lld, expected %lld", what, (long long)size, (long long)e.size);
    CHECK(lb == e.lb && ext == e.extent, "%s: lb %ld extent %ld, expected %ld %ld", what, (long)lb, (long)ext,
          (long)e.lb, (long)e.extent);
    CHECK(tlb == e.true_lb && text == e.true_extent, "%s: true lb %ld true extent %ld, expected %ld %ld", what,
          (long)tlb, (long)text, (long)e.true_lb, (long)e.true_extent);
    CHECK_MPI(MPI_Type_get_extent_x(t, &clb, &cext));
    CHECK_MPI(MPI_Type_get_true_extent_c(t, &ctlb, &ctext));
    CHECK(clb == lb && cext == ext && ctlb == tlb && ctext == text, "%s: _x/_c extents differ", what);
}

/* The int-form envelope and contents: counts, then the arrays' values. */
static void check_contents(const char *what, MPI_Datatype t, int combiner, int ni, const int *ints, int na,
                           const MPI_Aint *addrs, int nd, const MPI_Datatype *types)
{
    int gi, ga, gd, gc;
    CHECK_MPI(MPI_Type_get_envelope(t, &gi, &ga, &gd, &gc));
    CHECK(gc == combiner && gi == ni && ga == na && gd == nd, "%s: envelope (%d, %d, %d, combiner %d), expected "
          "(%d, %d, %d, %d)", what, gi, ga, gd, gc, ni, na, nd, combiner);
    int *ri = malloc((size_t)(ni + 1) * sizeof *ri);
    MPI_Aint *ra = malloc((size_t)(na + 1) * sizeof *ra);
    MPI_Datatype *rd = malloc((size_t)(nd + 1) * sizeof *rd);
    CHECK(ri && ra && rd, "out of memory");
    CHECK_MPI(MPI_Type_get_contents(t, ni, na, nd, ri, ra, rd));
    for (int i = 0; i < ni; i++)
        CHECK(ri[i] == ints[i], "%s: integer %d is %d, expected %d", what, i, ri[i], ints[i]);
    for (int i = 0; i < na; i++)
        CHECK(ra[i] == addrs[i], "%s: address %d is %ld, expected %ld", what, i, (long)ra[i], (long)addrs[i]);
    for (int i = 0; i < nd; i++) {
        CHECK(rd[i] == types[i], "%s: datatype %d differs", what, i);
        /* derived types come back as references of their own */
        int ci, ca, cd, cc;
        CHECK_MPI(MPI_Type_get_envelope(rd[i], &ci, &ca, &cd, &cc));
        if (cc != MPI_COMBINER_NAMED)
            CHECK_MPI(MPI_Type_free(&rd[i]));
    }
    free(ri);
    free(ra);
    free(rd);
}

/* The large-count form: integers, large counts, datatypes. */
static void check_contents_c(const char *what, MPI_Datatype t, int combiner, int ni, const int *ints, int nl,
                             const MPI_Count *larges, int nd, const MPI_Datatype *types)
{
    MPI_Count gi, ga, gl, gd;
    int gc;
    CHECK_MPI(MPI_Type_get_envelope_c(t, &gi, &ga, &gl, &gd, &gc));
    CHECK(gc == combiner && gi == ni && ga == 0 && gl == nl && gd == nd,
          "%s: envelope_c (%lld, %lld, %lld, %lld, combiner %d), expected (%d, 0, %d, %d, %d)", what,
          (long long)gi, (long long)ga, (long long)gl, (long long)gd, gc, ni, nl, nd, combiner);
    int ri[64];
    MPI_Aint ra[1];
    MPI_Count rl[64];
    MPI_Datatype rd[8];
    CHECK(ni <= 64 && nl <= 64 && nd <= 8, "test arrays too small");
    CHECK_MPI(MPI_Type_get_contents_c(t, ni, 0, nl, nd, ri, ra, rl, rd));
    for (int i = 0; i < ni; i++)
        CHECK(ri[i] == ints[i], "%s: integer %d is %d, expected %d", what, i, ri[i], ints[i]);
    for (int i = 0; i < nl; i++)
        CHECK(rl[i] == larges[i], "%s: large count %d is %lld, expected %lld", what, i, (long long)rl[i],
              (long long)larges[i]);
    for (int i = 0; i < nd; i++)
        CHECK(rd[i] == types[i], "%s: datatype %d differs", what, i);

    /* the int forms cannot describe a large-count constructor */
    int a, b, c, d, cls;
    int rc = MPI_Type_get_envelope(t, &a, &b, &c, &d);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_VALUE_TOO_LARGE, "%s: int get_envelope gave class %d", what, cls);
}

static void commit(MPI_Datatype *t)
{
    CHECK_MPI(MPI_Type_commit(t));
}

static void test_contiguous(void)
{
    MPI_Datatype t, tc;
    CHECK_MPI(MPI_Type_contiguous(3, MPI_INT, &t));
    commit(&t);
    check_bounds("contiguous(3, INT)", t, (struct bounds){ 12, 0, 12, 0, 12 });
    check_contents("contiguous(3, INT)", t, MPI_COMBINER_CONTIGUOUS, 1, (int[]){ 3 }, 0, NULL, 1,
                   (MPI_Datatype[]){ MPI_INT });
    struct typemap four = tm_basic(4), tm = { 0 };
    tm_repeat(&tm, 0, 3, 4, &four);
    tm_check_pack("contiguous(3, INT)", t, 4, &tm, 12, 4096, 0);
    tm_free(&tm);

    CHECK_MPI(MPI_Type_contiguous_c(3, MPI_INT, &tc));
    check_bounds("contiguous_c(3, INT)", tc, (struct bounds){ 12, 0, 12, 0, 12 });
    check_contents_c("contiguous_c(3, INT)", tc, MPI_COMBINER_CONTIGUOUS, 0, NULL, 1, (MPI_Count[]){ 3 }, 1,
                     (MPI_Datatype[]){ MPI_INT });

    /* count 0: an empty type */
    MPI_Datatype e;
    CHECK_MPI(MPI_Type_contiguous(0, MPI_DOUBLE, &e));
    commit(&e);
    check_bounds("contiguous(0, DOUBLE)", e, (struct bounds){ 0, 0, 0, 0, 0 });
    CHECK_MPI(MPI_Type_free(&e));
    tm_free(&four);
    CHECK_MPI(MPI_Type_free(&t));
    CHECK_MPI(MPI_Type_free(&tc));
}

static void test_vector(void)
{
    MPI_Datatype t;
    struct typemap four = tm_basic(4), eight = tm_basic(8), tm = { 0 }, block = { 0 };

    /* 3 blocks of 2 ints, every 4 ints: [0,8) [16,24) [32,40) */
    CHECK_MPI(MPI_Type_vector(3, 2, 4, MPI_INT, &t));
    commit(&t);
    check_bounds("vector(3, 2, 4, INT)", t, (struct bounds){ 24, 0, 40, 0, 40 });
    check_contents("vector(3, 2, 4, INT)", t, MPI_COMBINER_VECTOR, 3, (int[]){ 3, 2, 4 }, 0, NULL, 1,
                   (MPI_Datatype[]){ MPI_INT });
    tm_repeat(&block, 0, 2, 4, &four);
    tm_repeat(&tm, 0, 3, 16, &block);
    tm_check_pack("vector(3, 2, 4, INT)", t, 3, &tm, 40, 4096, 0);
    tm_free(&tm);
    tm_free(&block);
    CHECK_MPI(MPI_Type_free(&t));

    /* negative stride: doubles at 0, -16, -32, in that order */
    CHECK_MPI(MPI_Type_vector(3, 1, -2, MPI_DOUBLE, &t));
    commit(&t);
    check_bounds("vector(3, 1, -2, DOUBLE)", t, (struct bounds){ 24, -32, 40, -32, 40 });
    tm_repeat(&tm, 0, 3, -16, &eight);
    tm_check_pack("vector(3, 1, -2, DOUBLE)", t, 2, &tm, 40, 4096, 256);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));

    /* large-count form */
    CHECK_MPI(MPI_Type_vector_c(3, 2, 4, MPI_INT, &t));
    check_contents_c("vector_c(3, 2, 4, INT)", t, MPI_COMBINER_VECTOR, 0, NULL, 3, (MPI_Count[]){ 3, 2, 4 }, 1,
                     (MPI_Datatype[]){ MPI_INT });
    CHECK_MPI(MPI_Type_free(&t));

    /* hvector: 2 blocks of 3 ints, 20 bytes apart: [0,12) [20,32) */
    CHECK_MPI(MPI_Type_create_hvector(2, 3, 20, MPI_INT, &t));
    commit(&t);
    check_bounds("hvector(2, 3, 20, INT)", t, (struct bounds){ 24, 0, 32, 0, 32 });
    check_contents("hvector(2, 3, 20, INT)", t, MPI_COMBINER_HVECTOR, 2, (int[]){ 2, 3 }, 1, (MPI_Aint[]){ 20 }, 1,
                   (MPI_Datatype[]){ MPI_INT });
    tm_repeat(&block, 0, 3, 4, &four);
    tm_repeat(&tm, 0, 2, 20, &block);
    tm_check_pack("hvector(2, 3, 20, INT)", t, 3, &tm, 32, 4096, 0);
    tm_free(&tm);
    tm_free(&block);
    CHECK_MPI(MPI_Type_free(&t));

    CHECK_MPI(MPI_Type_create_hvector_c(2, 3, 20, MPI_INT, &t));
    check_contents_c("hvector_c(2, 3, 20, INT)", t, MPI_COMBINER_HVECTOR, 0, NULL, 3, (MPI_Count[]){ 2, 3, 20 }, 1,
                     (MPI_Datatype[]){ MPI_INT });
    CHECK_MPI(MPI_Type_free(&t));
    tm_free(&four);
    tm_free(&eight);
}

static void test_indexed(void)
{
    MPI_Datatype t;
    struct typemap four = tm_basic(4), eight = tm_basic(8), tm = { 0 };

    /* blocks of 2, 1, 3 ints at 4, 0, 7 ints: [16,24) [0,4) [28,40), in that order */
    CHECK_MPI(MPI_Type_indexed(3, (int[]){ 2, 1, 3 }, (int[]){ 4, 0, 7 }, MPI_INT, &t));
    commit(&t);
    check_bounds("indexed", t, (struct bounds){ 24, 0, 40, 0, 40 });
    check_contents("indexed", t, MPI_COMBINER_INDEXED, 7, (int[]){ 3, 2, 1, 3, 4, 0, 7 }, 0, NULL, 1,
                   (MPI_Datatype[]){ MPI_INT });
    tm_repeat(&tm, 16, 2, 4, &four);
    tm_repeat(&tm, 0, 1, 4, &four);
    tm_repeat(&tm, 28, 3, 4, &four);
    tm_check_pack("indexed", t, 3, &tm, 40, 4096, 0);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));

    CHECK_MPI(MPI_Type_indexed_c(3, (MPI_Count[]){ 2, 1, 3 }, (MPI_Count[]){ 4, 0, 7 }, MPI_INT, &t));
    check_contents_c("indexed_c", t, MPI_COMBINER_INDEXED, 0, NULL, 7, (MPI_Count[]){ 3, 2, 1, 3, 4, 0, 7 }, 1,
                     (MPI_Datatype[]){ MPI_INT });
    CHECK_MPI(MPI_Type_free(&t));

    /* hindexed with a negative displacement: [12,20) then [-8,8) */
    CHECK_MPI(MPI_Type_create_hindexed(2, (int[]){ 1, 2 }, (MPI_Aint[]){ 12, -8 }, MPI_DOUBLE, &t));
    commit(&t);
    check_bounds("hindexed", t, (struct bounds){ 24, -8, 28, -8, 28 });
    check_contents("hindexed", t, MPI_COMBINER_HINDEXED, 3, (int[]){ 2, 1, 2 }, 2, (MPI_Aint[]){ 12, -8 }, 1,
                   (MPI_Datatype[]){ MPI_DOUBLE });
    tm_repeat(&tm, 12, 1, 8, &eight);
    tm_repeat(&tm, -8, 2, 8, &eight);
    tm_check_pack("hindexed", t, 3, &tm, 28, 4096, 64);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));

    CHECK_MPI(MPI_Type_create_hindexed_c(2, (MPI_Count[]){ 1, 2 }, (MPI_Count[]){ 12, -8 }, MPI_DOUBLE, &t));
    check_contents_c("hindexed_c", t, MPI_COMBINER_HINDEXED, 0, NULL, 5, (MPI_Count[]){ 2, 1, 2, 12, -8 }, 1,
                     (MPI_Datatype[]){ MPI_DOUBLE });
    CHECK_MPI(MPI_Type_free(&t));

    /* indexed_block: 2 ints at 5, 0, 2 ints: [20,28) [0,8) [8,16) */
    CHECK_MPI(MPI_Type_create_indexed_block(3, 2, (int[]){ 5, 0, 2 }, MPI_INT, &t));
    commit(&t);
    check_bounds("indexed_block", t, (struct bounds){ 24, 0, 28, 0, 28 });
    check_contents("indexed_block", t, MPI_COMBINER_INDEXED_BLOCK, 5, (int[]){ 3, 2, 5, 0, 2 }, 0, NULL, 1,
                   (MPI_Datatype[]){ MPI_INT });
    tm_repeat(&tm, 20, 2, 4, &four);
    tm_repeat(&tm, 0, 2, 4, &four);
    tm_repeat(&tm, 8, 2, 4, &four);
    tm_check_pack("indexed_block", t, 2, &tm, 28, 4096, 0);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));

    CHECK_MPI(MPI_Type_create_indexed_block_c(3, 2, (MPI_Count[]){ 5, 0, 2 }, MPI_INT, &t));
    check_contents_c("indexed_block_c", t, MPI_COMBINER_INDEXED_BLOCK, 0, NULL, 5, (MPI_Count[]){ 3, 2, 5, 0, 2 },
                     1, (MPI_Datatype[]){ MPI_INT });
    CHECK_MPI(MPI_Type_free(&t));

    /* hindexed_block: one double at 8, then one at 0: not contiguous although dense */
    CHECK_MPI(MPI_Type_create_hindexed_block(2, 1, (MPI_Aint[]){ 8, 0 }, MPI_DOUBLE, &t));
    commit(&t);
    check_bounds("hindexed_block", t, (struct bounds){ 16, 0, 16, 0, 16 });
    check_contents("hindexed_block", t, MPI_COMBINER_HINDEXED_BLOCK, 2, (int[]){ 2, 1 }, 2, (MPI_Aint[]){ 8, 0 }, 1,
                   (MPI_Datatype[]){ MPI_DOUBLE });
    tm_repeat(&tm, 8, 1, 8, &eight);
    tm_repeat(&tm, 0, 1, 8, &eight);
    tm_check_pack("hindexed_block", t, 3, &tm, 16, 4096, 0);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));

    CHECK_MPI(MPI_Type_create_hindexed_block_c(2, 1, (MPI_Count[]){ 8, 0 }, MPI_DOUBLE, &t));
    check_contents_c("hindexed_block_c", t, MPI_COMBINER_HINDEXED_BLOCK, 0, NULL, 4, (MPI_Count[]){ 2, 1, 8, 0 }, 1,
                     (MPI_Datatype[]){ MPI_DOUBLE });
    CHECK_MPI(MPI_Type_free(&t));

    /* zero-length blocks contribute nothing, not even bounds */
    CHECK_MPI(MPI_Type_indexed(3, (int[]){ 0, 2, 0 }, (int[]){ 100, 1, -50 }, MPI_INT, &t));
    commit(&t);
    check_bounds("indexed with empty blocks", t, (struct bounds){ 8, 4, 8, 4, 8 });
    CHECK_MPI(MPI_Type_free(&t));
    tm_free(&four);
    tm_free(&eight);
}

struct cdi { char c; double d; int i; };
struct ic { int i; char c; };

static void test_struct(void)
{
    MPI_Datatype t;
    struct typemap tm = { 0 };

    /* struct { char c; double d; int i; }: padded to the C struct's size */
    MPI_Aint d3[3] = { offsetof(struct cdi, c), offsetof(struct cdi, d), offsetof(struct cdi, i) };
    MPI_Datatype ty3[3] = { MPI_CHAR, MPI_DOUBLE, MPI_INT };
    CHECK_MPI(MPI_Type_create_struct(3, (int[]){ 1, 1, 1 }, d3, ty3, &t));
    commit(&t);
    check_bounds("struct {char; double; int}", t,
                 (struct bounds){ 13, 0, (MPI_Aint)sizeof(struct cdi), 0, d3[2] + 4 });
    check_contents("struct {char; double; int}", t, MPI_COMBINER_STRUCT, 4, (int[]){ 3, 1, 1, 1 }, 3, d3, 3, ty3);
    tm_push(&tm, d3[0], 1);
    tm_push(&tm, d3[1], 8);
    tm_push(&tm, d3[2], 4);
    tm_check_pack("struct {char; double; int}", t, 5, &tm, sizeof(struct cdi), 4096, 0);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));

    CHECK_MPI(MPI_Type_create_struct_c(3, (MPI_Count[]){ 1, 1, 1 }, (MPI_Count[]){ d3[0], d3[1], d3[2] }, ty3, &t));
    check_contents_c("struct_c", t, MPI_COMBINER_STRUCT, 0, NULL, 7,
                     (MPI_Count[]){ 3, 1, 1, 1, d3[0], d3[1], d3[2] }, 3, ty3);
    CHECK_MPI(MPI_Type_free(&t));

    /* struct { int i; char c; }: 5 bytes of data, extent 8 */
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){ 1, 1 }, (MPI_Aint[]){ 0, offsetof(struct ic, c) },
                                     (MPI_Datatype[]){ MPI_INT, MPI_CHAR }, &t));
    commit(&t);
    check_bounds("struct {int; char}", t, (struct bounds){ 5, 0, (MPI_Aint)sizeof(struct ic), 0, 5 });
    tm_push(&tm, 0, 5);
    tm_check_pack("struct {int; char}", t, 4, &tm, sizeof(struct ic), 4096, 0);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));

    /* a component with explicit bounds (resized): no padding is added */
    MPI_Datatype one_char, padded_free;
    CHECK_MPI(MPI_Type_create_resized(MPI_CHAR, 0, 1, &one_char));
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){ 1, 1 }, (MPI_Aint[]){ 0, 8 },
                                     (MPI_Datatype[]){ MPI_DOUBLE, one_char }, &t));
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){ 1, 1 }, (MPI_Aint[]){ 0, 8 },
                                     (MPI_Datatype[]){ MPI_DOUBLE, MPI_CHAR }, &padded_free));
    check_bounds("struct {double; resized char}", t, (struct bounds){ 9, 0, 9, 0, 9 });
    check_bounds("struct {double; char}", padded_free, (struct bounds){ 9, 0, 16, 0, 9 });
    CHECK_MPI(MPI_Type_free(&t));
    CHECK_MPI(MPI_Type_free(&padded_free));
    CHECK_MPI(MPI_Type_free(&one_char));

    /* a struct of derived types, with blocks of several, and a negative displacement */
    MPI_Datatype vec, inner;
    CHECK_MPI(MPI_Type_vector(2, 1, 3, MPI_INT, &vec));      /* ints at 0, 12; extent 16 */
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){ 2, 1 }, (MPI_Aint[]){ 40, -8 },
                                     (MPI_Datatype[]){ vec, MPI_DOUBLE }, &inner));
    commit(&inner);
    /* vec at 40 and 56: ints at 40, 52, 56, 68; double at -8. lb -8, ub 72 */
    check_bounds("struct {2 x vector; double}", inner, (struct bounds){ 24, -8, 80, -8, 80 });
    tm_push(&tm, 40, 4);
    tm_push(&tm, 52, 4);
    tm_push(&tm, 56, 4);
    tm_push(&tm, 68, 4);
    tm_push(&tm, -8, 8);
    tm_check_pack("struct {2 x vector; double}", inner, 3, &tm, 80, 4096, 64);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&inner));
    CHECK_MPI(MPI_Type_free(&vec));
}

static void test_resized_and_dup(void)
{
    MPI_Datatype r, d, c;
    struct typemap four = tm_basic(4), tm = { 0 };

    /* an int with lb -4 and extent 12: ints at 0, 12, 24 for count 3 */
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, -4, 12, &r));
    commit(&r);
    check_bounds("resized(INT, -4, 12)", r, (struct bounds){ 4, -4, 12, 0, 4 });
    check_contents("resized(INT, -4, 12)", r, MPI_COMBINER_RESIZED, 0, NULL, 2, (MPI_Aint[]){ -4, 12 }, 1,
                   (MPI_Datatype[]){ MPI_INT });
    tm_check_pack("resized(INT, -4, 12)", r, 3, &four, 12, 4096, 64);

    /* contiguous over the resized type follows its extent */
    CHECK_MPI(MPI_Type_contiguous(2, r, &c));
    commit(&c);
    check_bounds("contiguous(2, resized)", c, (struct bounds){ 8, -4, 24, 0, 16 });
    tm_repeat(&tm, 0, 2, 12, &four);
    tm_check_pack("contiguous(2, resized)", c, 2, &tm, 24, 4096, 64);
    tm_free(&tm);

    CHECK_MPI(MPI_Type_create_resized_c(MPI_INT, -4, 12, &d));
    check_contents_c("resized_c", d, MPI_COMBINER_RESIZED, 0, NULL, 2, (MPI_Count[]){ -4, 12 }, 1,
                     (MPI_Datatype[]){ MPI_INT });
    CHECK_MPI(MPI_Type_free(&d));

    /* a resized type that makes a strided type contiguous again */
    MPI_Datatype pad;
    CHECK_MPI(MPI_Type_create_resized(MPI_DOUBLE_INT, 0, 12, &pad));
    commit(&pad);
    check_bounds("resized(DOUBLE_INT, 0, 12)", pad, (struct bounds){ 12, 0, 12, 0, 12 });
    struct typemap twelve = tm_basic(12);
    tm_check_pack("resized(DOUBLE_INT, 0, 12)", pad, 4, &twelve, 12, 4096, 0);
    tm_free(&twelve);
    CHECK_MPI(MPI_Type_free(&pad));

    /* dup: same layout, committed like the original, combiner DUP */
    CHECK_MPI(MPI_Type_dup(c, &d));
    check_bounds("dup", d, (struct bounds){ 8, -4, 24, 0, 16 });
    check_contents("dup", d, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, (MPI_Datatype[]){ c });
    tm_repeat(&tm, 0, 2, 12, &four);
    tm_check_pack("dup (committed through the original)", d, 2, &tm, 24, 4096, 64);
    tm_free(&tm);

    /* dup of a predefined pair: the same layout, contents name the original */
    MPI_Datatype dpair;
    CHECK_MPI(MPI_Type_dup(MPI_DOUBLE_INT, &dpair));
    check_bounds("dup(DOUBLE_INT)", dpair, (struct bounds){ 12, 0, 16, 0, 12 });
    check_contents("dup(DOUBLE_INT)", dpair, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, (MPI_Datatype[]){ MPI_DOUBLE_INT });
    CHECK_MPI(MPI_Type_free(&dpair));

    /* reference counting: the parts may be freed first */
    CHECK_MPI(MPI_Type_free(&r));
    CHECK_MPI(MPI_Type_free(&c));
    MPI_Datatype parts[1];
    CHECK_MPI(MPI_Type_get_contents(d, 0, 0, 1, NULL, NULL, parts));   /* the contiguous type, alive */
    check_bounds("contents of dup after free", parts[0], (struct bounds){ 8, -4, 24, 0, 16 });
    CHECK_MPI(MPI_Type_free(&d));
    check_bounds("the part after its dup is freed", parts[0], (struct bounds){ 8, -4, 24, 0, 16 });
    tm_repeat(&tm, 0, 2, 12, &four);
    tm_check_pack("the part after everything else is freed", parts[0], 1, &tm, 24, 4096, 64);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&parts[0]));
    tm_free(&four);
}

/* Element (i0, i1, i2) of a 3-D array of ints, C or Fortran order. */
static MPI_Aint elem_offset(const int sizes[3], int i0, int i1, int i2, int order)
{
    if (order == MPI_ORDER_C)
        return 4 * (((MPI_Aint)i0 * sizes[1] + i1) * sizes[2] + i2);
    return 4 * (i0 + (MPI_Aint)sizes[0] * (i1 + (MPI_Aint)sizes[1] * i2));
}

static void test_subarray(int order)
{
    const char *what = order == MPI_ORDER_C ? "subarray 3-D C order" : "subarray 3-D Fortran order";
    int sizes[3] = { 4, 5, 6 }, subsizes[3] = { 2, 3, 4 }, starts[3] = { 1, 1, 2 };
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_create_subarray(3, sizes, subsizes, starts, order, MPI_INT, &t));
    commit(&t);
    MPI_Aint first = elem_offset(sizes, 1, 1, 2, order), last = elem_offset(sizes, 2, 3, 5, order);
    check_bounds(what, t, (struct bounds){ 96, 0, 480, first, last + 4 - first });
    check_contents(what, t, MPI_COMBINER_SUBARRAY, 11, (int[]){ 3, 4, 5, 6, 2, 3, 4, 1, 1, 2, order }, 0, NULL, 1,
                   (MPI_Datatype[]){ MPI_INT });

    /* the type map: the last index fastest in C order, the first in Fortran */
    struct typemap tm = { 0 };
    if (order == MPI_ORDER_C) {
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 4; c++)
                    tm_push(&tm, elem_offset(sizes, 1 + a, 1 + b, 2 + c, order), 4);
    } else {
        for (int c = 0; c < 4; c++)
            for (int b = 0; b < 3; b++)
                for (int a = 0; a < 2; a++)
                    tm_push(&tm, elem_offset(sizes, 1 + a, 1 + b, 2 + c, order), 4);
    }
    tm_check_pack(what, t, 2, &tm, 480, 4096, 0);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));

    MPI_Datatype tc;
    CHECK_MPI(MPI_Type_create_subarray_c(3, (MPI_Count[]){ 4, 5, 6 }, (MPI_Count[]){ 2, 3, 4 },
                                         (MPI_Count[]){ 1, 1, 2 }, order, MPI_INT, &tc));
    check_bounds(what, tc, (struct bounds){ 96, 0, 480, first, last + 4 - first });
    check_contents_c(what, tc, MPI_COMBINER_SUBARRAY, 2, (int[]){ 3, order }, 9,
                     (MPI_Count[]){ 4, 5, 6, 2, 3, 4, 1, 1, 2 }, 1, (MPI_Datatype[]){ MPI_INT });
    CHECK_MPI(MPI_Type_free(&tc));
}

/*
 * darray: a 7 x 5 array of ints over a 2 x 2 process grid, rows cyclic in
 * blocks of 2, columns in blocks (the default: 3). Every rank's type must
 * list exactly the elements it owns, in array order, and together the four
 * types must cover the array once.
 */
static void test_darray(int order)
{
    const int gsizes[2] = { 7, 5 }, distribs[2] = { MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK };
    const int dargs[2] = { 2, MPI_DISTRIBUTE_DFLT_DARG }, psizes[2] = { 2, 2 };
    int owners[7][5];
    memset(owners, 0, sizeof owners);
    for (int rank = 0; rank < 4; rank++) {
        MPI_Datatype t;
        CHECK_MPI(MPI_Type_create_darray(4, rank, 2, gsizes, distribs, dargs, psizes, order, MPI_INT, &t));
        commit(&t);
        int p0 = rank / 2, p1 = rank % 2;   /* the grid is row-major in either order */
        struct typemap tm = { 0 };
        int outer_n = order == MPI_ORDER_C ? 7 : 5, inner_n = order == MPI_ORDER_C ? 5 : 7;
        for (int a = 0; a < outer_n; a++)
            for (int b = 0; b < inner_n; b++) {
                int i = order == MPI_ORDER_C ? a : b, j = order == MPI_ORDER_C ? b : a;
                if ((i / 2) % 2 != p0 || j / 3 != p1)
                    continue;
                owners[i][j]++;
                MPI_Aint off = order == MPI_ORDER_C ? 4 * (i * 5 + j) : 4 * (i + 7 * j);
                tm_push(&tm, off, 4);
            }
        char what[64];
        snprintf(what, sizeof what, "darray rank %d %s order", rank, order == MPI_ORDER_C ? "C" : "Fortran");
        MPI_Count size;
        MPI_Aint lb, extent;
        CHECK_MPI(MPI_Type_size_c(t, &size));
        CHECK_MPI(MPI_Type_get_extent(t, &lb, &extent));
        CHECK(size == tm_size(&tm) && lb == 0 && extent == 7 * 5 * 4, "%s: size %lld lb %ld extent %ld", what,
              (long long)size, (long)lb, (long)extent);
        tm_check_pack(what, t, 1, &tm, extent, 4096, 0);
        int ni, na, nd, combiner;
        CHECK_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
        CHECK(combiner == MPI_COMBINER_DARRAY && ni == 4 * 2 + 4 && na == 0 && nd == 1, "%s: envelope", what);
        tm_free(&tm);
        CHECK_MPI(MPI_Type_free(&t));
    }
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 5; j++)
            CHECK(owners[i][j] == 1, "darray: element (%d, %d) owned %d times", i, j, owners[i][j]);
}

/* A vector of a million doubles: built in constant time and space, packs right. */
static void test_big_vector(void)
{
    const int n = 1000000;
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &t));
    commit(&t);
    double *src = malloc(2 * (size_t)n * sizeof *src), *packed = malloc((size_t)n * sizeof *packed);
    CHECK(src && packed, "out of memory");
    for (int i = 0; i < 2 * n; i++)
        src[i] = i;
    int position = 0;
    CHECK_MPI(MPI_Pack(src, 1, t, packed, n * (int)sizeof(double), &position, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++)
        CHECK(packed[i] == 2.0 * i, "big vector: packed[%d] = %g", i, packed[i]);
    memset(src, 0, 2 * (size_t)n * sizeof *src);
    position = 0;
    CHECK_MPI(MPI_Unpack(packed, n * (int)sizeof(double), &position, src, 1, t, MPI_COMM_WORLD));
    for (int i = 0; i < 2 * n; i++)
        CHECK(src[i] == (i % 2 ? 0.0 : (double)i), "big vector: unpacked[%d] = %g", i, src[i]);
    free(src);
    free(packed);
    CHECK_MPI(MPI_Type_free(&t));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    test_contiguous();
    test_vector();
    test_indexed();
    test_struct();
    test_resized_and_dup();
    test_subarray(MPI_ORDER_C);
    test_subarray(MPI_ORDER_FORTRAN);
    test_darray(MPI_ORDER_C);
    test_darray(MPI_ORDER_FORTRAN);
    test_big_vector();
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d constructors ok\n", rank);
    MPI_Finalize();
    return 0;
}
