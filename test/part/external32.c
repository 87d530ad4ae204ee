/*
 * MPI_Pack_external / MPI_Unpack_external / MPI_Pack_external_size with
 * "external32": known big-endian byte images (int, double, float, long as 4
 * bytes, wchar_t as 2, long double as IEEE quad, complex, a pair type, a
 * struct with padding, a strided vector), round trips, sizes, positions
 * accumulating over several calls, the _c forms, and the errors: another
 * datarep, a value that does not fit its external32 size, a buffer too small.
 * Each rank runs it alone (no communication).
 */
#include "../util/check.h"

#include <complex.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

static const char *const EXT = "external32";

static void dump(char *out, size_t cap, const unsigned char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%02x ", p[i]);
}

/* Pack count elements and compare with the expected image; then unpack it
 * and compare the first `native` bytes with the data (0: the type has
 * padding, its round trip is checked elsewhere). */
static void image(const char *what, const void *data, int count, MPI_Datatype type, size_t roundtrip,
                  const unsigned char *want, size_t want_len)
{
    unsigned char buf[256];
    MPI_Aint size = -1, pos = 0;
    CHECK_MPI(MPI_Pack_external_size(EXT, count, type, &size));
    CHECK(size == (MPI_Aint)want_len, "%s: external32 size %ld, expected %zu", what, (long)size, want_len);
    memset(buf, 0xa5, sizeof buf);
    CHECK_MPI(MPI_Pack_external(EXT, data, count, type, buf, sizeof buf, &pos));
    CHECK(pos == (MPI_Aint)want_len, "%s: position %ld after packing, expected %zu", what, (long)pos, want_len);
    if (memcmp(buf, want, want_len) != 0) {
        char got_s[800] = "", want_s[800] = "";
        dump(got_s, sizeof got_s, buf, want_len);
        dump(want_s, sizeof want_s, want, want_len);
        CHECK(0, "%s: packed\n  %s\nexpected\n  %s", what, got_s, want_s);
    }
    CHECK(buf[want_len] == 0xa5, "%s: wrote past the packed size", what);
    size_t native = (size_t)count * roundtrip;
    if (native) {
        unsigned char back[256];
        memset(back, 0x5a, sizeof back);
        MPI_Aint in = 0;
        CHECK_MPI(MPI_Unpack_external(EXT, buf, pos, &in, back, count, type));
        CHECK(in == pos, "%s: unpack position %ld, packed %ld", what, (long)in, (long)pos);
        CHECK(memcmp(back, data, native) == 0, "%s: the round trip changed the data", what);
        CHECK(back[native] == 0x5a, "%s: unpack wrote past the data", what);
    }
}

struct rec {
    char c;
    long l;
    double d;
};

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* int */
    int ints[2] = { 0x01020304, -2 };
    const unsigned char int_img[] = { 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe };
    image("MPI_INT", ints, 2, MPI_INT, sizeof(int), int_img, sizeof int_img);
    /* double, float */
    double dbl[2] = { 1.0, -2.5 };
    const unsigned char dbl_img[] = { 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0x04, 0, 0, 0, 0, 0, 0 };
    image("MPI_DOUBLE", dbl, 2, MPI_DOUBLE, sizeof(double), dbl_img, sizeof dbl_img);
    float flt = 1.0f;
    const unsigned char flt_img[] = { 0x3f, 0x80, 0, 0 };
    image("MPI_FLOAT", &flt, 1, MPI_FLOAT, sizeof(float), flt_img, sizeof flt_img);
    /* long: 4 bytes in external32 */
    long longs[2] = { 5, -7 };
    const unsigned char long_img[] = { 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xf9 };
    image("MPI_LONG", longs, 2, MPI_LONG, sizeof(long), long_img, sizeof long_img);
    unsigned long ulong = 0xfffffffful;
    const unsigned char ulong_img[] = { 0xff, 0xff, 0xff, 0xff };
    image("MPI_UNSIGNED_LONG", &ulong, 1, MPI_UNSIGNED_LONG, sizeof(long), ulong_img, sizeof ulong_img);
    short sh = -300;
    const unsigned char short_img[] = { 0xfe, 0xd4 };
    image("MPI_SHORT", &sh, 1, MPI_SHORT, sizeof(short), short_img, sizeof short_img);
    long long ll = 0x0102030405060708LL;
    const unsigned char ll_img[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    image("MPI_LONG_LONG", &ll, 1, MPI_LONG_LONG, sizeof(long long), ll_img, sizeof ll_img);
    wchar_t wc = L'A';
    const unsigned char wc_img[] = { 0, 0x41 };
    image("MPI_WCHAR", &wc, 1, MPI_WCHAR, sizeof(wchar_t), wc_img, sizeof wc_img);
    /* long double: IEEE binary128, 1.0 = 3fff 0000..., -0.5 = bffe 0000... */
    long double ld[2] = { 1.0L, -0.5L };
    unsigned char ld_img[32] = { 0x3f, 0xff };
    ld_img[16] = 0xbf;
    ld_img[17] = 0xfe;
    image("MPI_LONG_DOUBLE", ld, 2, MPI_LONG_DOUBLE, 0 /* x87 padding: compared by value below */, ld_img, sizeof ld_img);
    double _Complex z = 1.0 + 2.0 * I;
    const unsigned char z_img[] = { 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0 };
    image("MPI_C_DOUBLE_COMPLEX", &z, 1, MPI_C_DOUBLE_COMPLEX, sizeof z, z_img, sizeof z_img);
    /* a pair: MPI_LONG_INT is 4 + 4 bytes */
    struct { long v; int i; } li = { -1, 3 };
    const unsigned char li_img[] = { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 3 };
    image("MPI_LONG_INT", &li, 1, MPI_LONG_INT, 0, li_img, sizeof li_img);

    /* a struct {char; long; double} (padding in memory, none in external32) */
    MPI_Datatype rec_type;
    int blocks[3] = { 1, 1, 1 };
    MPI_Aint disps[3] = { offsetof(struct rec, c), offsetof(struct rec, l), offsetof(struct rec, d) };
    MPI_Datatype types[3] = { MPI_CHAR, MPI_LONG, MPI_DOUBLE };
    CHECK_MPI(MPI_Type_create_struct(3, blocks, disps, types, &rec_type));
    CHECK_MPI(MPI_Type_commit(&rec_type));
    struct rec recs[2] = { { 'x', 258, 1.0 }, { 'y', -1, -2.5 } };
    const unsigned char rec_img[] = { 'x', 0, 0, 1, 2, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0,
                                      'y', 0xff, 0xff, 0xff, 0xff, 0xc0, 0x04, 0, 0, 0, 0, 0, 0 };
    image("struct {char; long; double}", recs, 2, rec_type, 0, rec_img, sizeof rec_img);
    /* round trip of the struct, with the padding left alone */
    {
        unsigned char buf[64];
        MPI_Aint pos = 0;
        CHECK_MPI(MPI_Pack_external(EXT, recs, 2, rec_type, buf, sizeof buf, &pos));
        struct rec back[2];
        memset(back, 0x5a, sizeof back);
        MPI_Aint in = 0;
        CHECK_MPI(MPI_Unpack_external(EXT, buf, pos, &in, back, 2, rec_type));
        CHECK(in == pos, "unpack position %ld, packed %ld", (long)in, (long)pos);
        for (int i = 0; i < 2; i++)
            CHECK(back[i].c == recs[i].c && back[i].l == recs[i].l && back[i].d == recs[i].d,
                  "struct %d came back as (%c, %ld, %g)", i, back[i].c, back[i].l, back[i].d);
        unsigned char pad[sizeof(long) - 1];
        memset(pad, 0x5a, sizeof pad);
        CHECK(memcmp((char *)&back[0] + 1, pad, offsetof(struct rec, l) - 1) == 0, "the struct's padding was written");
    }

    /* a strided vector: every third int of 12, as 4 big-endian ints */
    {
        int v[12];
        for (int i = 0; i < 12; i++)
            v[i] = i * 0x01010101;
        MPI_Datatype vec;
        CHECK_MPI(MPI_Type_vector(4, 1, 3, MPI_INT, &vec));
        CHECK_MPI(MPI_Type_commit(&vec));
        unsigned char want[16];
        for (int k = 0; k < 4; k++)
            for (int b = 0; b < 4; b++)
                want[k * 4 + b] = (unsigned char)(3 * k);
        image("vector(4, 1, 3, MPI_INT)", v, 1, vec, 0, want, sizeof want);
        int back[12];
        for (int i = 0; i < 12; i++)
            back[i] = -1;
        MPI_Aint pos = 0;
        CHECK_MPI(MPI_Unpack_external(EXT, want, sizeof want, &pos, back, 1, vec));
        for (int i = 0; i < 12; i++)
            CHECK(back[i] == (i % 3 ? -1 : i * 0x01010101), "vector unpack element %d is %d", i, back[i]);
        CHECK_MPI(MPI_Type_free(&vec));
    }

    /* round trips of many values through several calls at increasing
     * positions, _c forms; long double and long values come back exactly */
    {
        enum { N = 1000 };
        long *l = malloc(N * sizeof *l), *l2 = malloc(N * sizeof *l2);
        long double *q = malloc(N * sizeof *q), *q2 = malloc(N * sizeof *q2);
        CHECK(l && l2 && q && q2, "out of memory");
        for (int i = 0; i < N; i++) {
            l[i] = (i % 2 ? -1L : 1L) * (long)i * 2147483L;
            q[i] = (long double)i / 3.0L - 100.0L;
        }
        MPI_Count need_l, need_q;
        CHECK_MPI(MPI_Pack_external_size_c(EXT, N, MPI_LONG, &need_l));
        CHECK_MPI(MPI_Pack_external_size_c(EXT, N, MPI_LONG_DOUBLE, &need_q));
        CHECK(need_l == 4 * N && need_q == 16 * N, "sizes %lld %lld", (long long)need_l, (long long)need_q);
        unsigned char *buf = malloc((size_t)(need_l + need_q));
        MPI_Count pos = 0;
        CHECK_MPI(MPI_Pack_external_c(EXT, l, N, MPI_LONG, buf, need_l + need_q, &pos));
        CHECK_MPI(MPI_Pack_external_c(EXT, q, N, MPI_LONG_DOUBLE, buf, need_l + need_q, &pos));
        CHECK(pos == need_l + need_q, "position %lld", (long long)pos);
        MPI_Count in = 0;
        CHECK_MPI(MPI_Unpack_external_c(EXT, buf, pos, &in, l2, N, MPI_LONG));
        CHECK_MPI(MPI_Unpack_external_c(EXT, buf, pos, &in, q2, N, MPI_LONG_DOUBLE));
        for (int i = 0; i < N; i++)
            CHECK(l2[i] == l[i] && q2[i] == q[i], "value %d came back as %ld / %Lg", i, l2[i], q2[i]);
        free(buf);
        free(l);
        free(l2);
        free(q);
        free(q2);
    }

    /* errors (raised on MPI_COMM_SELF's handler: no communicator) */
    {
        unsigned char buf[64];
        MPI_Aint pos = 0, sz;
        int rc = MPI_Pack_external("native", ints, 1, MPI_INT, buf, sizeof buf, &pos);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG && pos == 0, "datarep \"native\": class %d", cls);
        rc = MPI_Pack_external_size("internal", 1, MPI_INT, &sz);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG, "datarep \"internal\": class %d", cls);
        rc = MPI_Unpack_external("EXTERNAL32", buf, 8, &pos, ints, 1, MPI_INT);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG, "datarep \"EXTERNAL32\": class %d", cls);
        long too_big = 1L << 40;
        rc = MPI_Pack_external(EXT, &too_big, 1, MPI_LONG, buf, sizeof buf, &pos);
        MPI_Error_class(rc, &cls);
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        CHECK(cls == MPI_ERR_CONVERSION && pos == 0, "2^40 as MPI_LONG: class %d (%s)", cls, msg);
        CHECK(strstr(msg, "1099511627776") != NULL, "the message does not name the value: %s", msg);
        unsigned long too_big_u = 1ul << 32;
        rc = MPI_Pack_external(EXT, &too_big_u, 1, MPI_UNSIGNED_LONG, buf, sizeof buf, &pos);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_CONVERSION, "2^32 as MPI_UNSIGNED_LONG: class %d", cls);
        wchar_t wide = (wchar_t)0x1F600;
        rc = MPI_Pack_external(EXT, &wide, 1, MPI_WCHAR, buf, sizeof buf, &pos);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_CONVERSION, "U+1F600 as MPI_WCHAR: class %d", cls);
        rc = MPI_Pack_external(EXT, ints, 2, MPI_INT, buf, 7, &pos);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE && pos == 0, "8 bytes into 7: class %d", cls);
        rc = MPI_Unpack_external(EXT, buf, 3, &pos, ints, 1, MPI_INT);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "an int from 3 bytes: class %d", cls);
        rc = MPI_Pack_external(EXT, ints, -1, MPI_INT, buf, sizeof buf, &pos);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_COUNT, "count -1: class %d", cls);
        rc = MPI_Pack_external(EXT, ints, 1, MPI_DATATYPE_NULL, buf, sizeof buf, &pos);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TYPE, "MPI_DATATYPE_NULL: class %d", cls);
    }
    CHECK_MPI(MPI_Type_free(&rec_type));
    printf("rank %d of %d ok\n", rank, size);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
