/*
 * The predefined datatypes: size, bounds, true bounds and name of every one
 * the header defines, the pair types' layouts as C lays out their structs
 * (packing skips the padding), MPI_DATATYPE_NULL and MPI_Type_free refused,
 * MPI_Type_match_size, MPI_Type_get_value_index, names; the Fortran kinds
 * of MPI_Type_create_f90_* (sizes, one handle per kind, envelope and
 * contents, not freeable, usable in a reduction and a message).
 */
#include "typemap.h"

#include <complex.h>
#include <stddef.h>
#include <wchar.h>

struct expect {
    MPI_Datatype type;
    const char *name;
    MPI_Count size;
};

#define C(h, ctype) { h, #h, (MPI_Count)sizeof(ctype) }
#define F(h, size) { h, #h, size }

static const struct expect basics[] = {
    C(MPI_CHAR, char), C(MPI_SIGNED_CHAR, signed char), C(MPI_UNSIGNED_CHAR, unsigned char),
    C(MPI_SHORT, short), C(MPI_UNSIGNED_SHORT, unsigned short), C(MPI_INT, int), C(MPI_UNSIGNED, unsigned),
    C(MPI_LONG, long), C(MPI_UNSIGNED_LONG, unsigned long), C(MPI_LONG_LONG, long long),
    C(MPI_UNSIGNED_LONG_LONG, unsigned long long), C(MPI_FLOAT, float), C(MPI_DOUBLE, double),
    C(MPI_LONG_DOUBLE, long double), C(MPI_WCHAR, wchar_t), C(MPI_C_BOOL, _Bool),
    C(MPI_INT8_T, int8_t), C(MPI_UINT8_T, uint8_t), C(MPI_INT16_T, int16_t), C(MPI_UINT16_T, uint16_t),
    C(MPI_INT32_T, int32_t), C(MPI_UINT32_T, uint32_t), C(MPI_INT64_T, int64_t), C(MPI_UINT64_T, uint64_t),
    C(MPI_AINT, MPI_Aint), C(MPI_COUNT, MPI_Count), C(MPI_OFFSET, MPI_Offset),
    C(MPI_C_FLOAT_COMPLEX, float _Complex), C(MPI_C_DOUBLE_COMPLEX, double _Complex),
    C(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex),
    C(MPI_CXX_FLOAT_COMPLEX, float _Complex), C(MPI_CXX_DOUBLE_COMPLEX, double _Complex),
    C(MPI_CXX_LONG_DOUBLE_COMPLEX, long double _Complex), F(MPI_CXX_BOOL, 1),
    F(MPI_BYTE, 1), F(MPI_PACKED, 1),
    F(MPI_CHARACTER, 1), F(MPI_LOGICAL, 4), F(MPI_INTEGER, 4), F(MPI_REAL, 4), F(MPI_DOUBLE_PRECISION, 8),
    F(MPI_COMPLEX, 8), F(MPI_DOUBLE_COMPLEX, 16),
    F(MPI_LOGICAL1, 1), F(MPI_INTEGER1, 1), F(MPI_LOGICAL2, 2), F(MPI_INTEGER2, 2), F(MPI_REAL2, 2),
    F(MPI_LOGICAL4, 4), F(MPI_INTEGER4, 4), F(MPI_REAL4, 4), F(MPI_COMPLEX4, 4),
    F(MPI_LOGICAL8, 8), F(MPI_INTEGER8, 8), F(MPI_REAL8, 8), F(MPI_COMPLEX8, 8),
    F(MPI_LOGICAL16, 16), F(MPI_INTEGER16, 16), F(MPI_REAL16, 16), F(MPI_COMPLEX16, 16), F(MPI_COMPLEX32, 32),
};

struct float_int { float v; int i; };
struct double_int { double v; int i; };
struct long_int { long v; int i; };
struct two_int { int v; int i; };
struct short_int { short v; int i; };
struct long_double_int { long double v; int i; };

struct pair_expect {
    MPI_Datatype type;
    const char *name;
    int value_size, index_size;
    MPI_Aint index_offset, extent;
};
#define PAIR(h, st, vtype) \
    { h, #h, (int)sizeof(vtype), (int)sizeof(int), offsetof(struct st, i), (MPI_Aint)sizeof(struct st) }

static const struct pair_expect pairs[] = {
    PAIR(MPI_FLOAT_INT, float_int, float), PAIR(MPI_DOUBLE_INT, double_int, double),
    PAIR(MPI_LONG_INT, long_int, long), PAIR(MPI_2INT, two_int, int), PAIR(MPI_SHORT_INT, short_int, short),
    PAIR(MPI_LONG_DOUBLE_INT, long_double_int, long double),
    { MPI_2REAL, "MPI_2REAL", 4, 4, 4, 8 }, { MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", 8, 8, 8, 16 },
    { MPI_2INTEGER, "MPI_2INTEGER", 4, 4, 4, 8 },
};

static void check_named(MPI_Datatype t, const char *name, MPI_Count size, MPI_Aint extent, MPI_Aint true_extent)
{
    MPI_Count csize, clb, cext;
    MPI_Aint lb, ext, tlb, text;
    int isize, ni, na, nd, combiner, len;
    char got[MPI_MAX_OBJECT_NAME];

    CHECK_MPI(MPI_Type_size_c(t, &csize));
    CHECK(csize == size, "%s: size %lld, expected %lld", name, (long long)csize, (long long)size);
    CHECK_MPI(MPI_Type_size(t, &isize));
    CHECK(isize == size, "%s: int size %d", name, isize);
    CHECK_MPI(MPI_Type_get_extent(t, &lb, &ext));
    CHECK(lb == 0 && ext == extent, "%s: lb %ld extent %ld, expected 0 and %ld", name, (long)lb, (long)ext,
          (long)extent);
    CHECK_MPI(MPI_Type_get_extent_c(t, &clb, &cext));
    CHECK(clb == 0 && cext == extent, "%s: _c extent %lld", name, (long long)cext);
    CHECK_MPI(MPI_Type_get_true_extent(t, &tlb, &text));
    CHECK(tlb == 0 && text == true_extent, "%s: true lb %ld true extent %ld, expected 0 and %ld", name, (long)tlb,
          (long)text, (long)true_extent);
    CHECK_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
    CHECK(combiner == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "%s: envelope %d %d %d %d", name, ni, na,
          nd, combiner);
    CHECK_MPI(MPI_Type_get_name(t, got, &len));
    CHECK(strcmp(got, name) == 0 && len == (int)strlen(name), "%s: name '%s' (%d)", name, got, len);
    /* predefined types need no commit, and committing one is harmless */
    MPI_Datatype copy = t;
    CHECK_MPI(MPI_Type_commit(&copy));
    CHECK(copy == t, "%s: MPI_Type_commit changed a predefined handle", name);
}

static void check_pair_pack(const struct pair_expect *p)
{
    /* three pairs in an array; the stream is value, index, value, index ... */
    struct typemap tm = { 0 };
    tm_push(&tm, 0, p->value_size);
    tm_push(&tm, p->index_offset, p->index_size);
    tm_check_pack(p->name, p->type, 3, &tm, p->extent, 4096, 64);
    tm_free(&tm);
}

static void check_errors(void)
{
    int rc, cls, size;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    rc = MPI_Type_size(MPI_DATATYPE_NULL, &size);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "MPI_Type_size(MPI_DATATYPE_NULL) gave class %d", cls);

    rc = MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "contiguous of MPI_DATATYPE_NULL gave class %d", cls);

    /* an unused value in the datatype range is not a type either */
    rc = MPI_Type_size((MPI_Datatype)(uintptr_t)0x2ff, &size);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "handle 0x2ff gave class %d", cls);

    t = MPI_INT;
    rc = MPI_Type_free(&t);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE && t == MPI_INT, "MPI_Type_free(MPI_INT) gave class %d", cls);

    int ints[4];
    MPI_Aint addrs[4];
    MPI_Datatype types[4];
    rc = MPI_Type_get_contents(MPI_DOUBLE, 4, 4, 4, ints, addrs, types);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "contents of a named type gave class %d", cls);

    char msg[MPI_MAX_ERROR_STRING];
    int len;
    rc = MPI_Type_size(MPI_DATATYPE_NULL, &size);
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "MPI_Type_size") && strstr(msg, "MPI_DATATYPE_NULL"),
          "the error message does not name the call and the problem: %s", msg);
}

static void check_match_size(void)
{
    static const struct {
        int typeclass, size;
        MPI_Datatype expect;
    } cases[] = {
        { MPI_TYPECLASS_INTEGER, 4, MPI_INTEGER4 }, { MPI_TYPECLASS_INTEGER, 8, MPI_INTEGER8 },
        { MPI_TYPECLASS_REAL, 4, MPI_REAL4 }, { MPI_TYPECLASS_REAL, 8, MPI_REAL8 },
        { MPI_TYPECLASS_COMPLEX, 16, MPI_COMPLEX16 }, { MPI_TYPECLASS_INTEGER, 1, MPI_INTEGER1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        MPI_Datatype t;
        int size;
        CHECK_MPI(MPI_Type_match_size(cases[i].typeclass, cases[i].size, &t));
        CHECK(t == cases[i].expect, "match_size(%d, %d) gave another type", cases[i].typeclass, cases[i].size);
        CHECK_MPI(MPI_Type_size(t, &size));
        CHECK(size == cases[i].size, "match_size(%d, %d) gave a type of size %d", cases[i].typeclass,
              cases[i].size, size);
    }
    MPI_Datatype t;
    int rc = MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &t), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "match_size(REAL, 3) gave class %d", cls);
}

static int error_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

static void check_f90(void)
{
    static const struct { int combiner, p, r, size; } kinds[] = {
        { MPI_COMBINER_F90_INTEGER, 0, 2, 1 }, { MPI_COMBINER_F90_INTEGER, 0, 9, 4 },
        { MPI_COMBINER_F90_INTEGER, 0, 10, 8 }, { MPI_COMBINER_F90_INTEGER, 0, 18, 8 },
        { MPI_COMBINER_F90_REAL, 6, MPI_UNDEFINED, 4 }, { MPI_COMBINER_F90_REAL, 15, 307, 8 },
        { MPI_COMBINER_F90_REAL, MPI_UNDEFINED, 300, 8 }, { MPI_COMBINER_F90_REAL, 20, MPI_UNDEFINED, 16 },
        { MPI_COMBINER_F90_COMPLEX, 15, MPI_UNDEFINED, 16 }, { MPI_COMBINER_F90_COMPLEX, 6, 37, 8 },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        int c = kinds[i].combiner, p = kinds[i].p, r = kinds[i].r;
        MPI_Datatype t, again;
        if (c == MPI_COMBINER_F90_INTEGER) {
            CHECK_MPI(MPI_Type_create_f90_integer(r, &t));
            CHECK_MPI(MPI_Type_create_f90_integer(r, &again));
        } else if (c == MPI_COMBINER_F90_REAL) {
            CHECK_MPI(MPI_Type_create_f90_real(p, r, &t));
            CHECK_MPI(MPI_Type_create_f90_real(p, r, &again));
        } else {
            CHECK_MPI(MPI_Type_create_f90_complex(p, r, &t));
            CHECK_MPI(MPI_Type_create_f90_complex(p, r, &again));
        }
        CHECK(t == again, "f90 kind %zu: two calls gave two handles", i);
        int size = 0, ni = -1, na = -1, nd = -1, combiner = -1, ints[2] = { -1, -1 };
        CHECK_MPI(MPI_Type_size(t, &size));
        CHECK(size == kinds[i].size, "f90 kind %zu (p %d, r %d): size %d, expected %d", i, p, r, size, kinds[i].size);
        CHECK_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
        int want_ni = c == MPI_COMBINER_F90_INTEGER ? 1 : 2;
        CHECK(combiner == c && ni == want_ni && na == 0 && nd == 0, "f90 kind %zu: envelope %d (%d, %d, %d)", i,
              combiner, ni, na, nd);
        CHECK_MPI(MPI_Type_get_contents(t, 2, 0, 0, ints, NULL, NULL));
        CHECK(want_ni == 1 ? ints[0] == r : ints[0] == p && ints[1] == r, "f90 kind %zu: contents %d %d", i, ints[0],
              ints[1]);
        MPI_Datatype copy = t;
        CHECK(error_class(MPI_Type_free(&copy)) == MPI_ERR_TYPE, "an f90 type could be freed");
    }
    MPI_Datatype t;
    CHECK(error_class(MPI_Type_create_f90_real(40, MPI_UNDEFINED, &t)) == MPI_ERR_ARG, "real of precision 40");
    CHECK(error_class(MPI_Type_create_f90_real(MPI_UNDEFINED, MPI_UNDEFINED, &t)) == MPI_ERR_ARG,
          "real of no precision and no range");
    CHECK(error_class(MPI_Type_create_f90_integer(39, &t)) == MPI_ERR_ARG, "integer of range 39");
    CHECK(error_class(MPI_Type_create_f90_integer(-1, &t)) == MPI_ERR_ARG, "integer of range -1");

    /* A reduction and a message in them. */
    MPI_Datatype dbl, i64;
    CHECK_MPI(MPI_Type_create_f90_real(15, MPI_UNDEFINED, &dbl));
    CHECK_MPI(MPI_Type_create_f90_integer(18, &i64));
    double in[3] = { 1.5, -2.0, 4.25 }, acc[3] = { 0.5, 0.5, 0.5 };
    CHECK_MPI(MPI_Reduce_local(in, acc, 3, dbl, MPI_SUM));
    CHECK(acc[0] == 2.0 && acc[1] == -1.5 && acc[2] == 4.75, "MPI_SUM in an f90 real: %g %g %g", acc[0], acc[1],
          acc[2]);
    long long out[2] = { 1LL << 40, -7 }, got[2] = { 0, 0 };
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(out, 2, i64, 0, 5, got, 2, MPI_INT64_T, 0, 5, MPI_COMM_SELF, &st));
    int count = -1;
    CHECK_MPI(MPI_Get_count(&st, i64, &count));
    CHECK(got[0] == out[0] && got[1] == out[1] && count == 2, "a message in an f90 integer: %lld %lld (%d)", got[0],
          got[1], count);
}

static void check_value_index(void)
{
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &t));
    CHECK(t == MPI_DOUBLE_INT, "value_index(DOUBLE, INT) is not MPI_DOUBLE_INT");
    CHECK_MPI(MPI_Type_get_value_index(MPI_INT, MPI_INT, &t));
    CHECK(t == MPI_2INT, "value_index(INT, INT) is not MPI_2INT");

    /* no predefined pair: a new committed type laid out as struct { double v; long i; } */
    struct double_long { double v; long i; };
    CHECK_MPI(MPI_Type_get_value_index(MPI_DOUBLE, MPI_LONG, &t));
    int size, ni, na, nd, combiner;
    MPI_Aint lb, extent;
    CHECK_MPI(MPI_Type_size(t, &size));
    CHECK_MPI(MPI_Type_get_extent(t, &lb, &extent));
    CHECK(size == 16 && lb == 0 && extent == (MPI_Aint)sizeof(struct double_long),
          "value_index(DOUBLE, LONG): size %d extent %ld", size, (long)extent);
    CHECK_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
    CHECK(combiner == MPI_COMBINER_VALUE_INDEX && ni == 0 && na == 0 && nd == 2,
          "value_index envelope: %d %d %d combiner %d", ni, na, nd, combiner);
    MPI_Datatype parts[2];
    CHECK_MPI(MPI_Type_get_contents(t, 0, 0, 2, NULL, NULL, parts));
    CHECK(parts[0] == MPI_DOUBLE && parts[1] == MPI_LONG, "value_index contents");
    struct typemap tm = { 0 };
    tm_push(&tm, 0, 8);
    tm_push(&tm, offsetof(struct double_long, i), (int)sizeof(long));
    tm_check_pack("value_index(DOUBLE, LONG)", t, 2, &tm, extent, 4096, 64);
    tm_free(&tm);
    CHECK_MPI(MPI_Type_free(&t));
    CHECK(t == MPI_DATATYPE_NULL, "MPI_Type_free did not reset the handle");

    /* an index type that is not an integer */
    int rc = MPI_Type_get_value_index(MPI_DOUBLE, MPI_FLOAT, &t), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "value_index(DOUBLE, FLOAT) gave class %d", cls);
}

static void check_names(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &t));
    CHECK_MPI(MPI_Type_get_name(t, name, &len));
    CHECK(len == 0 && name[0] == '\0', "a new type has the name '%s'", name);
    CHECK_MPI(MPI_Type_set_name(t, "two ints"));
    CHECK_MPI(MPI_Type_get_name(t, name, &len));
    CHECK(strcmp(name, "two ints") == 0 && len == 8, "name '%s' (%d)", name, len);
    /* longer than MPI_MAX_OBJECT_NAME - 1: truncated */
    char longname[MPI_MAX_OBJECT_NAME + 40];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK_MPI(MPI_Type_set_name(t, longname));
    CHECK_MPI(MPI_Type_get_name(t, name, &len));
    CHECK(len == MPI_MAX_OBJECT_NAME - 1 && (int)strlen(name) == len, "truncated name has length %d", len);
    CHECK_MPI(MPI_Type_free(&t));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    for (size_t i = 0; i < sizeof basics / sizeof basics[0]; i++)
        check_named(basics[i].type, basics[i].name, basics[i].size, basics[i].size, basics[i].size);
    CHECK(MPI_LONG_LONG_INT == MPI_LONG_LONG, "MPI_LONG_LONG_INT is not MPI_LONG_LONG");

    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const struct pair_expect *p = &pairs[i];
        check_named(p->type, p->name, p->value_size + p->index_size, p->extent, p->index_offset + p->index_size);
        check_pair_pack(p);
    }
    /* a basic type packs as itself, several at once */
    struct typemap tm = tm_basic((int)sizeof(double));
    tm_check_pack("MPI_DOUBLE", MPI_DOUBLE, 5, &tm, sizeof(double), 4096, 0);
    tm_free(&tm);

    check_errors();
    check_match_size();
    check_f90();
    check_value_index();
    check_names();

    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d predefined types ok: %zu basic, %zu pairs\n", rank, sizeof basics / sizeof basics[0],
           sizeof pairs / sizeof pairs[0]);
    MPI_Finalize();
    return 0;
}
