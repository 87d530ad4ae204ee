/*
 * ops: every predefined op on a representative set of the types the standard
 * allows it for, through MPI_Reduce_local (against the same arithmetic done
 * here) and through MPI_Allreduce / MPI_Reduce across the ranks (against a
 * serial fold); MAXLOC / MINLOC on every predefined pair type and a pair
 * from MPI_Type_get_value_index, with ties (the lowest index wins); logical
 * ops on MPI_C_BOOL, bitwise ops on MPI_BYTE; user ops (MPI_Op_create and
 * MPI_Op_create_c) getting the program's datatype, on a derived type;
 * MPI_Op_commutative; MPI_Op_free.
 */
#include <complex.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

#define N 37   /* elements: longer than a vector register, not a multiple of one */

static int rank, size;

/* ---- MPI_Reduce_local: one op on one type, checked element by element ---- */

#define ARITH_CASE(T, MPIT, OP, EXPR) ARITH_CASE_NAMED(T, MPIT, #MPIT, OP, EXPR)
#define ARITH_CASE_NAMED(T, MPIT, NAME, OP, EXPR)                                                        \
    do {                                                                                     \
        T in[N], io[N], want[N];                                                             \
        for (int i = 0; i < N; i++) {                                                        \
            in[i] = (T)((i * 7) % 11 + 1);                                                   \
            io[i] = (T)((i * 5) % 13 + 1);                                                   \
            T a = in[i], b = io[i];                                                          \
            want[i] = (T)(EXPR);                                                             \
        }                                                                                    \
        CHECK_MPI(MPI_Reduce_local(in, io, N, MPIT, OP));                                    \
        for (int i = 0; i < N; i++)                                                          \
            CHECK(io[i] == want[i], "Reduce_local %s on %s: element %d wrong", #OP, NAME, i);  \
    } while (0)

#define INT_OPS(T, MPIT)                                                                     \
    do {                                                                                     \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_SUM, a + b);                                                 \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_PROD, a * b);                                                \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_MAX, a > b ? a : b);                                         \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_MIN, a < b ? a : b);                                         \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_BAND, a & b);                                                \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_BOR, a | b);                                                 \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_BXOR, a ^ b);                                                \
    } while (0)

/* Logical ops need zero and non-zero inputs: values mod 3 / mod 2. */
#define LOGICAL_CASE(T, MPIT, NAME, OP, EXPR)                                                      \
    do {                                                                                     \
        T in[N], io[N], want[N];                                                             \
        for (int i = 0; i < N; i++) {                                                        \
            in[i] = (T)(i % 3 != 0);                                                         \
            io[i] = (T)(i % 2 != 0);                                                         \
            int a = in[i] != 0, b = io[i] != 0;                                              \
            want[i] = (T)(EXPR);                                                             \
        }                                                                                    \
        CHECK_MPI(MPI_Reduce_local(in, io, N, MPIT, OP));                                    \
        for (int i = 0; i < N; i++)                                                          \
            CHECK((io[i] != 0) == (want[i] != 0), "Reduce_local %s on %s: element %d", #OP, NAME, i); \
    } while (0)
#define LOGICAL_OPS(T, MPIT)                                                                 \
    do {                                                                                     \
        LOGICAL_CASE(T, MPIT, #MPIT, MPI_LAND, a && b);                                             \
        LOGICAL_CASE(T, MPIT, #MPIT, MPI_LOR, a || b);                                              \
        LOGICAL_CASE(T, MPIT, #MPIT, MPI_LXOR, a != b);                                             \
    } while (0)

#define FLOAT_OPS(T, MPIT)                                                                   \
    do {                                                                                     \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_SUM, a + b);                                                 \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_PROD, a * b);                                                \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_MAX, a > b ? a : b);                                         \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_MIN, a < b ? a : b);                                         \
    } while (0)

#define COMPLEX_OPS(T, MPIT)                                                                 \
    do {                                                                                     \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_SUM, a + b);                                                 \
        ARITH_CASE_NAMED(T, MPIT, #MPIT, MPI_PROD, a * b);                                                \
    } while (0)

/* A type / op pair the standard does not define: MPI_ERR_OP. */
static void expect_op_error(MPI_Op op, MPI_Datatype type, const char *what)
{
    char in[64] = { 0 }, io[64] = { 0 };
    int rc = MPI_Reduce_local(in, io, 1, type, op);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "Reduce_local %s returned class %d, expected MPI_ERR_OP", what, cls);
    char text[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, text, &len);
    CHECK(strstr(text, "MPI_Reduce_local"), "the error string '%s' does not name the call", text);
}

static void test_reduce_local(void)
{
    INT_OPS(signed char, MPI_SIGNED_CHAR);
    INT_OPS(unsigned char, MPI_UNSIGNED_CHAR);
    INT_OPS(short, MPI_SHORT);
    INT_OPS(unsigned short, MPI_UNSIGNED_SHORT);
    INT_OPS(int, MPI_INT);
    INT_OPS(unsigned, MPI_UNSIGNED);
    INT_OPS(long, MPI_LONG);
    INT_OPS(unsigned long, MPI_UNSIGNED_LONG);
    INT_OPS(long long, MPI_LONG_LONG);
    INT_OPS(unsigned long long, MPI_UNSIGNED_LONG_LONG);
    INT_OPS(int8_t, MPI_INT8_T);
    INT_OPS(uint8_t, MPI_UINT8_T);
    INT_OPS(int16_t, MPI_INT16_T);
    INT_OPS(uint16_t, MPI_UINT16_T);
    INT_OPS(int32_t, MPI_INT32_T);
    INT_OPS(uint32_t, MPI_UINT32_T);
    INT_OPS(int64_t, MPI_INT64_T);
    INT_OPS(uint64_t, MPI_UINT64_T);
    INT_OPS(MPI_Aint, MPI_AINT);
    INT_OPS(MPI_Offset, MPI_OFFSET);
    INT_OPS(MPI_Count, MPI_COUNT);
    LOGICAL_OPS(int, MPI_INT);
    LOGICAL_OPS(uint64_t, MPI_UINT64_T);
    LOGICAL_OPS(bool, MPI_C_BOOL);
    FLOAT_OPS(float, MPI_FLOAT);
    FLOAT_OPS(double, MPI_DOUBLE);
    FLOAT_OPS(long double, MPI_LONG_DOUBLE);
    COMPLEX_OPS(float complex, MPI_C_FLOAT_COMPLEX);
    COMPLEX_OPS(double complex, MPI_C_DOUBLE_COMPLEX);
    COMPLEX_OPS(long double complex, MPI_C_LONG_DOUBLE_COMPLEX);
    ARITH_CASE(unsigned char, MPI_BYTE, MPI_BAND, a & b);
    ARITH_CASE(unsigned char, MPI_BYTE, MPI_BOR, a | b);
    ARITH_CASE(unsigned char, MPI_BYTE, MPI_BXOR, a ^ b);
    /* signed sums wrap instead of trapping */
    {
        int in = INT32_MAX, io = 1;
        CHECK_MPI(MPI_Reduce_local(&in, &io, 1, MPI_INT, MPI_SUM));
        CHECK(io == INT32_MIN, "MPI_SUM on INT_MAX + 1 gave %d", io);
    }

    expect_op_error(MPI_MAX, MPI_C_DOUBLE_COMPLEX, "MPI_MAX on MPI_C_DOUBLE_COMPLEX");
    expect_op_error(MPI_LAND, MPI_DOUBLE, "MPI_LAND on MPI_DOUBLE");
    expect_op_error(MPI_BAND, MPI_FLOAT, "MPI_BAND on MPI_FLOAT");
    expect_op_error(MPI_SUM, MPI_C_BOOL, "MPI_SUM on MPI_C_BOOL");
    expect_op_error(MPI_SUM, MPI_BYTE, "MPI_SUM on MPI_BYTE");
    expect_op_error(MPI_MAXLOC, MPI_INT, "MPI_MAXLOC on MPI_INT");
    expect_op_error(MPI_MIN, MPI_2INT, "MPI_MIN on MPI_2INT");
    expect_op_error(MPI_REPLACE, MPI_INT, "MPI_REPLACE");
    expect_op_error(MPI_NO_OP, MPI_INT, "MPI_NO_OP");
    expect_op_error(MPI_OP_NULL, MPI_INT, "MPI_OP_NULL");
}

/* ---- MAXLOC / MINLOC across ranks: values tie on every other rank ---- */

/* Ties on both ends: 5 on every other rank, else 7, 8 or 9. */
#define LOC_VALUE(r, i) (((r) + (i)) % 2 == 0 ? 5 : 9 - ((r) + (i)) % 3)
#define LOC_CASE(V, I, MPIT)                                                                 \
    do {                                                                                     \
        struct { V value; I index; } in[3], out[3];                                          \
        /* The pair's padding (long double's 6 unused bytes) travels too. */                 \
        memset(in, 0, sizeof in);                                                            \
        for (int i = 0; i < 3; i++) {                                                        \
            in[i].value = (V)LOC_VALUE(rank, i);                                             \
            in[i].index = (I)(size - rank);                                                  \
        }                                                                                    \
        for (int opi = 0; opi < 2; opi++) {                                                  \
            MPI_Op op = opi ? MPI_MINLOC : MPI_MAXLOC;                                       \
            CHECK_MPI(MPI_Allreduce(in, out, 3, MPIT, op, MPI_COMM_WORLD));                  \
            for (int i = 0; i < 3; i++) {                                                    \
                V best = 0;                                                                  \
                I best_index = 0;                                                            \
                for (int r = 0; r < size; r++) {                                             \
                    V v = (V)LOC_VALUE(r, i);                                                \
                    I x = (I)(size - r);                                                     \
                    if (r == 0 || (opi ? v < best : v > best) || (v == best && x < best_index)) { \
                        best = v;                                                            \
                        best_index = x;                                                      \
                    }                                                                        \
                }                                                                            \
                CHECK(out[i].value == best && out[i].index == best_index,                    \
                      "%s on %s element %d: (%g, %lld), expected (%g, %lld)", opi ? "MINLOC" : "MAXLOC", #MPIT, \
                      i, (double)out[i].value, (long long)out[i].index, (double)best, (long long)best_index); \
            }                                                                                \
        }                                                                                    \
    } while (0)

static void test_loc(void)
{
    LOC_CASE(float, int, MPI_FLOAT_INT);
    LOC_CASE(double, int, MPI_DOUBLE_INT);
    LOC_CASE(long, int, MPI_LONG_INT);
    LOC_CASE(int, int, MPI_2INT);
    LOC_CASE(short, int, MPI_SHORT_INT);
    LOC_CASE(long double, int, MPI_LONG_DOUBLE_INT);
    /* A pair the standard does not predefine. */
    MPI_Datatype pair;
    CHECK_MPI(MPI_Type_get_value_index(MPI_DOUBLE, MPI_LONG_LONG, &pair));
    LOC_CASE(double, long long, pair);
    if (pair != MPI_DOUBLE_INT)
        CHECK_MPI(MPI_Type_free(&pair));
}

/* ---- the other ops across ranks, against a serial fold ---- */

static void test_across_ranks(void)
{
    /* SUM / PROD / MAX / MIN on doubles whose results are exact. */
    double d[4] = { rank + 1.0, (rank % 3) + 1.0, -rank * 0.5, rank * 2.0 }, dout[4];
    MPI_Op ops[4] = { MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN };
    for (int o = 0; o < 4; o++) {
        CHECK_MPI(MPI_Allreduce(d, dout, 4, MPI_DOUBLE, ops[o], MPI_COMM_WORLD));
        for (int i = 0; i < 4; i++) {
            double want = 0;
            for (int r = 0; r < size; r++) {
                double v = i == 0 ? r + 1.0 : i == 1 ? (r % 3) + 1.0 : i == 2 ? -r * 0.5 : r * 2.0;
                want = r == 0 ? v : o == 0 ? want + v : o == 1 ? want * v : o == 2 ? (v > want ? v : want)
                                                                                 : (v < want ? v : want);
            }
            CHECK(dout[i] == want, "allreduce op %d on doubles element %d: %g, expected %g", o, i, dout[i], want);
        }
    }
    /* Logical ops on C bools: LAND true only if all true, LOR if any, LXOR odd count. */
    bool b[3] = { true, rank == 0, rank % 2 == 1 }, bout[3];
    MPI_Op lops[3] = { MPI_LAND, MPI_LOR, MPI_LXOR };
    for (int o = 0; o < 3; o++) {
        CHECK_MPI(MPI_Allreduce(b, bout, 3, MPI_C_BOOL, lops[o], MPI_COMM_WORLD));
        for (int i = 0; i < 3; i++) {
            int trues = i == 0 ? size : i == 1 ? 1 : size / 2;
            bool want = o == 0 ? trues == size : o == 1 ? trues > 0 : trues % 2 == 1;
            CHECK(bout[i] == want, "allreduce logical op %d on C_BOOL element %d", o, i);
        }
    }
    /* Bitwise ops on bytes, to a root. */
    unsigned char by[2] = { (unsigned char)(1u << (rank % 8)), (unsigned char)(0xf0 | rank) }, byout[2] = { 0, 0 };
    MPI_Op bops[3] = { MPI_BAND, MPI_BOR, MPI_BXOR };
    for (int o = 0; o < 3; o++) {
        CHECK_MPI(MPI_Reduce(by, byout, 2, MPI_BYTE, bops[o], size - 1, MPI_COMM_WORLD));
        if (rank != size - 1)
            continue;
        for (int i = 0; i < 2; i++) {
            unsigned want = 0;
            for (int r = 0; r < size; r++) {
                unsigned v = i == 0 ? 1u << (r % 8) : (0xf0u | (unsigned)r) & 0xff;
                want = r == 0 ? v : o == 0 ? want & v : o == 1 ? want | v : want ^ v;
            }
            CHECK(byout[i] == (unsigned char)want, "reduce bitwise op %d on MPI_BYTE element %d: %u, expected %u",
                  o, i, byout[i], want);
        }
    }
}

/* ---- user ops ---- */

static MPI_Datatype seen_type;
static long seen_len;

/* (a, b) pairs with a gap: inout = in op inout on ints 0 and 2 of 4. */
static void pair_max_user(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    seen_type = *dt;
    seen_len = *len;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        b[0] = a[0] > b[0] ? a[0] : b[0];
        b[2] = a[2] + b[2];
    }
}

static void concat_digits_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    seen_type = *dt;
    seen_len = (long)*len;
    /* Non-commutative: inout = in * 10^digits(inout) + inout. */
    long long *a = in, *b = inout;
    for (MPI_Count i = 0; i < *len; i++) {
        long long scale = 1;
        for (long long v = b[i]; v > 0; v /= 10)
            scale *= 10;
        b[i] = a[i] * scale + b[i];
    }
}

static void test_user_ops(void)
{
    MPI_Op op;
    int commute = -1;
    CHECK_MPI(MPI_Op_commutative(MPI_SUM, &commute));
    CHECK(commute == 1, "MPI_SUM is not commutative");
    CHECK_MPI(MPI_Op_create(pair_max_user, 1, &op));
    CHECK_MPI(MPI_Op_commutative(op, &commute));
    CHECK(commute == 1, "a commutative user op says %d", commute);

    /* A derived type: the user function gets our handle and element count. */
    MPI_Datatype raw, t;
    int bl[2] = { 1, 1 };
    MPI_Aint disp[2] = { 0, 8 };
    MPI_Datatype types[2] = { MPI_INT, MPI_INT };
    CHECK_MPI(MPI_Type_create_struct(2, bl, disp, types, &raw));
    CHECK_MPI(MPI_Type_create_resized(raw, 0, 16, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    int in[3 * 4], out[3 * 4];
    for (int i = 0; i < 3; i++) {
        in[4 * i] = rank * 10 + i, in[4 * i + 1] = -1, in[4 * i + 2] = rank, in[4 * i + 3] = -1;
        out[4 * i] = out[4 * i + 1] = out[4 * i + 2] = out[4 * i + 3] = -7;
    }
    CHECK_MPI(MPI_Allreduce(in, out, 3, t, op, MPI_COMM_WORLD));
    for (int i = 0; i < 3; i++) {
        CHECK(out[4 * i] == (size - 1) * 10 + i && out[4 * i + 2] == size * (size - 1) / 2,
              "user op on a struct type: element %d is (%d, %d)", i, out[4 * i], out[4 * i + 2]);
        CHECK(out[4 * i + 1] == -7 && out[4 * i + 3] == -7, "user op on a struct type wrote into its gaps");
    }
    /* Ranks that combined data (not every rank does) saw our handle and count. */
    if (seen_len)
        CHECK(seen_type == t && seen_len == 3, "the user function saw type %p len %ld, not the program's %p and 3",
              (void *)seen_type, seen_len, (void *)t);
    int called = seen_len != 0, anyone = 0;
    CHECK_MPI(MPI_Allreduce(&called, &anyone, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
    CHECK(anyone || size == 1, "no rank called the user function");
    CHECK_MPI(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");
    CHECK_MPI(MPI_Type_free(&t));
    CHECK_MPI(MPI_Type_free(&raw));

    /* MPI_Op_create_c, non-commutative: digits concatenated in rank order. */
    CHECK_MPI(MPI_Op_create_c(concat_digits_c, 0, &op));
    CHECK_MPI(MPI_Op_commutative(op, &commute));
    CHECK(commute == 0, "a non-commutative user op says %d", commute);
    long long digit = rank % 9 + 1, result = 0, want = 0;
    for (int r = 0; r < size && r < 18; r++)
        want = want * 10 + (r % 9 + 1);
    if (size <= 18) {
        CHECK_MPI(MPI_Allreduce(&digit, &result, 1, MPI_LONG_LONG, op, MPI_COMM_WORLD));
        CHECK(result == want, "non-commutative allreduce gave %lld, expected %lld", result, want);
        result = 0;
        CHECK_MPI(MPI_Reduce(&digit, &result, 1, MPI_LONG_LONG, op, size / 2, MPI_COMM_WORLD));
        if (rank == size / 2)
            CHECK(result == want, "non-commutative reduce to rank %d gave %lld, expected %lld", size / 2, result,
                  want);
    }
    long long lin = 12, lio = 345;
    CHECK_MPI(MPI_Reduce_local(&lin, &lio, 1, MPI_LONG_LONG, op));
    CHECK(lio == 12345, "Reduce_local with a user op: %lld", lio);
    CHECK_MPI(MPI_Op_free(&op));

    /* Predefined ops cannot be freed. */
    MPI_Op sum = MPI_SUM;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int rc = MPI_Op_free(&sum), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "MPI_Op_free(MPI_SUM) gave class %d", cls);
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    test_reduce_local();
    test_loc();
    test_across_ranks();
    test_user_ops();
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
