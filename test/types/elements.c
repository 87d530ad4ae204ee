/*
 * Counting basic elements (MPI_Get_elements over the engine's
 * hashi_type_elements) and partial receives into derived types: a message of
 * k bytes sent as MPI_BYTE to oneself and received as a derived type must
 * give the element count the type map says (MPI_UNDEFINED when k cuts a
 * basic element), fill exactly the first k bytes of the type map, and leave
 * the rest of the buffer alone. Also: a type freed by the user while a
 * pending receive uses it stays alive until the receive completes.
 */
#include "typemap.h"

#include <stddef.h>

struct cdi { char c; double d; int i; };

/* Receive `bytes` bytes (the pattern 1, 2, 3 ...) into count elements of t. */
static MPI_Status receive(MPI_Datatype t, int count, int bytes, unsigned char *buf, size_t bufsize)
{
    unsigned char send[256];
    for (int i = 0; i < (int)sizeof send; i++)
        send[i] = (unsigned char)(i + 1);
    memset(buf, 0, bufsize);
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(send, bytes, MPI_BYTE, 0, 5, buf, count, t, 0, 5, MPI_COMM_SELF, &st));
    return st;
}

static void expect_elements(const char *what, MPI_Datatype t, int bytes, int elements, int count_expect)
{
    unsigned char buf[1024];
    MPI_Status st = receive(t, 8, bytes, buf, sizeof buf);
    int got, count;
    MPI_Count got_c;
    CHECK_MPI(MPI_Get_elements(&st, t, &got));
    CHECK_MPI(MPI_Get_elements_c(&st, t, &got_c));
    CHECK_MPI(MPI_Get_count(&st, t, &count));
    CHECK(got == elements && got_c == elements, "%s: %d bytes give %d elements (_c %lld), expected %d", what, bytes,
          got, (long long)got_c, elements);
    CHECK(count == count_expect, "%s: %d bytes give a count of %d, expected %d", what, bytes, count, count_expect);
}

/* The first `bytes` bytes of the type map received, nothing else written. */
static void check_partial(const char *what, MPI_Datatype t, const struct typemap *tm, MPI_Aint extent, int count,
                          int bytes)
{
    unsigned char buf[2048], expect[2048];
    receive(t, count, bytes, buf, sizeof buf);
    memset(expect, 0, sizeof expect);
    int k = 0;
    for (int e = 0; e < count && k < bytes; e++)
        for (int n = 0; n < tm->n && k < bytes; n++)
            for (int b = 0; b < tm->len[n] && k < bytes; b++, k++)
                expect[e * extent + tm->disp[n] + b] = (unsigned char)(k + 1);
    for (size_t i = 0; i < sizeof buf; i++)
        CHECK(buf[i] == expect[i], "%s: after receiving %d bytes, byte %zu is %#x, expected %#x", what, bytes, i,
              buf[i], expect[i]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* struct { char; double; int }: 13 bytes, 3 basic elements of sizes 1, 8, 4 */
    MPI_Datatype st;
    MPI_Aint disp[3] = { offsetof(struct cdi, c), offsetof(struct cdi, d), offsetof(struct cdi, i) };
    CHECK_MPI(MPI_Type_create_struct(3, (int[]){ 1, 1, 1 }, disp, (MPI_Datatype[]){ MPI_CHAR, MPI_DOUBLE, MPI_INT },
                                     &st));
    CHECK_MPI(MPI_Type_commit(&st));
    static const struct { int bytes, elements, count; } cdi_cases[] = {
        { 0, 0, 0 }, { 1, 1, MPI_UNDEFINED }, { 2, MPI_UNDEFINED, MPI_UNDEFINED }, { 8, MPI_UNDEFINED, MPI_UNDEFINED },
        { 9, 2, MPI_UNDEFINED }, { 12, MPI_UNDEFINED, MPI_UNDEFINED }, { 13, 3, 1 }, { 14, 4, MPI_UNDEFINED },
        { 22, 5, MPI_UNDEFINED }, { 26, 6, 2 }, { 27, 7, MPI_UNDEFINED }, { 39, 9, 3 },
    };
    for (size_t i = 0; i < sizeof cdi_cases / sizeof cdi_cases[0]; i++)
        expect_elements("struct {char; double; int}", st, cdi_cases[i].bytes, cdi_cases[i].elements,
                        cdi_cases[i].count);
    struct typemap tm = { 0 };
    tm_push(&tm, disp[0], 1);
    tm_push(&tm, disp[1], 8);
    tm_push(&tm, disp[2], 4);
    for (int bytes = 0; bytes <= 39; bytes += 3)
        check_partial("struct {char; double; int}", st, &tm, sizeof(struct cdi), 3, bytes);
    tm_free(&tm);

    /* two MPI_DOUBLE_INT pairs as a vector: a pair is 2 elements, 8 + 4 bytes */
    MPI_Datatype pairs;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_DOUBLE_INT, &pairs));
    CHECK_MPI(MPI_Type_commit(&pairs));
    expect_elements("2 x DOUBLE_INT", pairs, 8, 1, MPI_UNDEFINED);
    expect_elements("2 x DOUBLE_INT", pairs, 12, 2, MPI_UNDEFINED);
    expect_elements("2 x DOUBLE_INT", pairs, 16, MPI_UNDEFINED, MPI_UNDEFINED);
    expect_elements("2 x DOUBLE_INT", pairs, 20, 3, MPI_UNDEFINED);
    expect_elements("2 x DOUBLE_INT", pairs, 24, 4, 1);
    expect_elements("2 x DOUBLE_INT", pairs, 44, 7, MPI_UNDEFINED);
    expect_elements("MPI_SHORT_INT", MPI_SHORT_INT, 2, 1, MPI_UNDEFINED);
    expect_elements("MPI_SHORT_INT", MPI_SHORT_INT, 4, MPI_UNDEFINED, MPI_UNDEFINED);
    expect_elements("MPI_SHORT_INT", MPI_SHORT_INT, 6, 2, 1);

    /* a vector of ints with gaps: every element 4 bytes */
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(3, 2, 5, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    expect_elements("vector of INT", vec, 8, 2, MPI_UNDEFINED);
    expect_elements("vector of INT", vec, 10, MPI_UNDEFINED, MPI_UNDEFINED);
    expect_elements("vector of INT", vec, 48, 12, 2);
    struct typemap four = tm_basic(4), block = { 0 };
    tm_repeat(&block, 0, 2, 4, &four);
    tm_repeat(&tm, 0, 3, 20, &block);
    for (int bytes = 0; bytes <= 72; bytes += 5)
        check_partial("vector of INT", vec, &tm, 48, 3, bytes);
    tm_free(&tm);
    tm_free(&block);
    tm_free(&four);

    /* a struct of a struct: elements counted through both levels */
    MPI_Datatype outer;
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){ 1, 2 }, (MPI_Aint[]){ 0, 8 }, (MPI_Datatype[]){ MPI_SHORT, st },
                                     &outer));
    CHECK_MPI(MPI_Type_commit(&outer));
    expect_elements("struct {short; 2 x struct}", outer, 2, 1, MPI_UNDEFINED);
    expect_elements("struct {short; 2 x struct}", outer, 3, 2, MPI_UNDEFINED);
    expect_elements("struct {short; 2 x struct}", outer, 11, 3, MPI_UNDEFINED);
    expect_elements("struct {short; 2 x struct}", outer, 16, 5, MPI_UNDEFINED);
    expect_elements("struct {short; 2 x struct}", outer, 28, 7, 1);
    expect_elements("struct {short; 2 x struct}", outer, 31, 9, MPI_UNDEFINED);

    /* a struct whose first block holds several elements, then another block */
    MPI_Datatype tail;
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){ 1, 1 }, (MPI_Aint[]){ 0, 24 }, (MPI_Datatype[]){ st, MPI_SHORT },
                                     &tail));
    CHECK_MPI(MPI_Type_commit(&tail));
    expect_elements("struct {struct; short}", tail, 13, 3, MPI_UNDEFINED);
    expect_elements("struct {struct; short}", tail, 14, MPI_UNDEFINED, MPI_UNDEFINED);
    expect_elements("struct {struct; short}", tail, 15, 4, 1);
    expect_elements("struct {struct; short}", tail, 30, 8, 2);
    CHECK_MPI(MPI_Type_free(&tail));

    /* a type with no data: zero elements */
    MPI_Datatype empty;
    CHECK_MPI(MPI_Type_contiguous(0, MPI_INT, &empty));
    CHECK_MPI(MPI_Type_commit(&empty));
    expect_elements("empty type", empty, 0, 0, 0);

    /* a type freed while a receive that uses it is pending stays alive for it */
    MPI_Datatype column;
    double matrix[4][3], values[4] = { 1.5, 2.5, 3.5, 4.5 };
    memset(matrix, 0, sizeof matrix);
    CHECK_MPI(MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &column));
    CHECK_MPI(MPI_Type_commit(&column));
    MPI_Request req;
    CHECK_MPI(MPI_Irecv(&matrix[0][2], 1, column, 0, 9, MPI_COMM_SELF, &req));
    CHECK_MPI(MPI_Type_free(&column));
    CHECK(column == MPI_DATATYPE_NULL, "MPI_Type_free did not reset the handle");
    CHECK_MPI(MPI_Send(values, 4, MPI_DOUBLE, 0, 9, MPI_COMM_SELF));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++)
            CHECK(matrix[r][c] == (c == 2 ? values[r] : 0.0), "column receive after MPI_Type_free: [%d][%d] = %g", r,
                  c, matrix[r][c]);

    CHECK_MPI(MPI_Type_free(&st));
    CHECK_MPI(MPI_Type_free(&pairs));
    CHECK_MPI(MPI_Type_free(&vec));
    CHECK_MPI(MPI_Type_free(&outer));
    CHECK_MPI(MPI_Type_free(&empty));
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d elements ok\n", rank);
    MPI_Finalize();
    return 0;
}
