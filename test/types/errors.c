/*
 * Invalid arguments to the datatype calls under MPI_ERRORS_RETURN: each
 * returns the right error class, its message names the call, and nothing is
 * created (the output handle is left alone).
 */
#include "../util/check.h"

#include <string.h>

static int failures;

/* The call must fail with class `expect` and a message naming `func`. */
static void expect_class(const char *what, int rc, int expect, const char *func)
{
    int cls;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (cls != expect) {
        fprintf(stderr, "FAIL: %s: error class %d, expected %d (%s)\n", what, cls, expect, msg);
        failures++;
    } else if (!strstr(msg, func)) {
        fprintf(stderr, "FAIL: %s: the message does not name %s: %s\n", what, func, msg);
        failures++;
    }
}

#define EXPECT(call, cls, func) expect_class(#call, (call), (cls), (func))

static const MPI_Datatype untouched = (MPI_Datatype)(uintptr_t)0x1234; /* never a valid handle */

static void check_untouched(const char *what, MPI_Datatype t)
{
    if (t != untouched) {
        fprintf(stderr, "FAIL: %s: the output handle was changed by a failing call\n", what);
        failures++;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    MPI_Datatype t = untouched;
    int ints[4] = { 1, 1, 1, 1 };
    MPI_Aint addrs[4] = { 0, 8, 16, 24 };
    MPI_Count counts[4] = { 1, 1, 1, 1 };

    /* ---- constructors: counts, block lengths, arrays, types */
    EXPECT(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_contiguous");
    EXPECT(MPI_Type_contiguous_c(-5, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_contiguous_c");
    EXPECT(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE, "MPI_Type_contiguous");
    EXPECT(MPI_Type_contiguous(2, MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_contiguous");
    EXPECT(MPI_Type_vector(-1, 1, 1, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_vector");
    EXPECT(MPI_Type_vector(2, -1, 1, MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_vector");
    EXPECT(MPI_Type_create_hvector(2, 1, 8, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE, "MPI_Type_create_hvector");
    EXPECT(MPI_Type_indexed(-2, ints, ints, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_indexed");
    EXPECT(MPI_Type_indexed(2, NULL, ints, MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_indexed");
    EXPECT(MPI_Type_indexed(2, ints, NULL, MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_indexed");
    EXPECT(MPI_Type_indexed(2, (int[]){ 1, -3 }, ints, MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_indexed");
    EXPECT(MPI_Type_create_hindexed(2, ints, NULL, MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_create_hindexed");
    EXPECT(MPI_Type_create_hindexed_c(2, counts, NULL, MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_create_hindexed_c");
    EXPECT(MPI_Type_create_indexed_block(2, -1, ints, MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_create_indexed_block");
    EXPECT(MPI_Type_create_hindexed_block(2, 1, NULL, MPI_INT, &t), MPI_ERR_ARG,
           "MPI_Type_create_hindexed_block");
    EXPECT(MPI_Type_create_struct(-1, ints, addrs, (MPI_Datatype[]){ MPI_INT }, &t), MPI_ERR_COUNT,
           "MPI_Type_create_struct");
    EXPECT(MPI_Type_create_struct(2, ints, addrs, NULL, &t), MPI_ERR_ARG, "MPI_Type_create_struct");
    EXPECT(MPI_Type_create_struct(2, ints, addrs, (MPI_Datatype[]){ MPI_INT, MPI_DATATYPE_NULL }, &t), MPI_ERR_TYPE,
           "MPI_Type_create_struct");
    EXPECT(MPI_Type_create_struct(2, (int[]){ 1, -1 }, addrs, (MPI_Datatype[]){ MPI_INT, MPI_INT }, &t),
           MPI_ERR_ARG, "MPI_Type_create_struct");
    EXPECT(MPI_Type_create_resized(MPI_DATATYPE_NULL, 0, 8, &t), MPI_ERR_TYPE, "MPI_Type_create_resized");
    EXPECT(MPI_Type_dup(MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE, "MPI_Type_dup");
    /* an overflowing layout is refused, not wrapped around */
    EXPECT(MPI_Type_create_hvector(3, 1, ((MPI_Aint)1 << 62), MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_create_hvector");
    check_untouched("failing constructors", t);

    /* ---- subarray and darray */
    int sizes[2] = { 4, 4 }, subs[2] = { 2, 2 }, starts[2] = { 1, 1 };
    EXPECT(MPI_Type_create_subarray(0, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG,
           "MPI_Type_create_subarray");
    EXPECT(MPI_Type_create_subarray(2, sizes, subs, (int[]){ 1, 3 }, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG,
           "MPI_Type_create_subarray");
    EXPECT(MPI_Type_create_subarray(2, sizes, (int[]){ 5, 1 }, starts, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG,
           "MPI_Type_create_subarray");
    EXPECT(MPI_Type_create_subarray(2, (int[]){ 0, 4 }, subs, starts, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG,
           "MPI_Type_create_subarray");
    EXPECT(MPI_Type_create_subarray(2, sizes, subs, starts, 99, MPI_INT, &t), MPI_ERR_ARG,
           "MPI_Type_create_subarray");
    EXPECT(MPI_Type_create_subarray(2, sizes, subs, NULL, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG,
           "MPI_Type_create_subarray");
    int distribs[2] = { MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC };
    int dargs[2] = { MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG };
    EXPECT(MPI_Type_create_darray(4, 0, 2, sizes, distribs, dargs, (int[]){ 2, 3 }, MPI_ORDER_C, MPI_INT, &t),
           MPI_ERR_ARG, "MPI_Type_create_darray");
    EXPECT(MPI_Type_create_darray(4, 4, 2, sizes, distribs, dargs, (int[]){ 2, 2 }, MPI_ORDER_C, MPI_INT, &t),
           MPI_ERR_ARG, "MPI_Type_create_darray");
    EXPECT(MPI_Type_create_darray(4, 0, 2, sizes, (int[]){ 7, 7 }, dargs, (int[]){ 2, 2 }, MPI_ORDER_C, MPI_INT, &t),
           MPI_ERR_ARG, "MPI_Type_create_darray");
    /* blocks of 1 on 2 processes cannot hold 4 elements */
    EXPECT(MPI_Type_create_darray(4, 0, 2, sizes, distribs, (int[]){ 1, 1 }, (int[]){ 2, 2 }, MPI_ORDER_C, MPI_INT,
                                  &t), MPI_ERR_ARG, "MPI_Type_create_darray");
    check_untouched("failing subarray / darray", t);

    /* ---- commit, free, queries */
    EXPECT(MPI_Type_commit(NULL), MPI_ERR_ARG, "MPI_Type_commit");
    MPI_Datatype null = MPI_DATATYPE_NULL;
    EXPECT(MPI_Type_commit(&null), MPI_ERR_TYPE, "MPI_Type_commit");
    EXPECT(MPI_Type_free(&null), MPI_ERR_TYPE, "MPI_Type_free");
    MPI_Datatype predefined = MPI_DOUBLE;
    EXPECT(MPI_Type_free(&predefined), MPI_ERR_TYPE, "MPI_Type_free");
    int size;
    MPI_Aint lb, extent;
    EXPECT(MPI_Type_size(MPI_DATATYPE_NULL, &size), MPI_ERR_TYPE, "MPI_Type_size");
    EXPECT(MPI_Type_size(MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_size");
    EXPECT(MPI_Type_get_extent(MPI_DATATYPE_NULL, &lb, &extent), MPI_ERR_TYPE, "MPI_Type_get_extent");
    EXPECT(MPI_Type_get_true_extent(MPI_INT, NULL, &extent), MPI_ERR_ARG, "MPI_Type_get_true_extent");
    EXPECT(MPI_Type_set_name(MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_set_name");

    /* contents: named types have none; the arrays must be large enough */
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    int ci[3];
    MPI_Aint ca[1];
    MPI_Datatype cd[1];
    EXPECT(MPI_Type_get_contents(MPI_INT, 3, 1, 1, ci, ca, cd), MPI_ERR_TYPE, "MPI_Type_get_contents");
    EXPECT(MPI_Type_get_contents(vec, 2, 0, 1, ci, ca, cd), MPI_ERR_ARG, "MPI_Type_get_contents");
    EXPECT(MPI_Type_get_contents(vec, 3, 0, 1, NULL, ca, cd), MPI_ERR_ARG, "MPI_Type_get_contents");
    MPI_Datatype vec_c;
    CHECK_MPI(MPI_Type_vector_c(2, 1, 2, MPI_INT, &vec_c));
    EXPECT(MPI_Type_get_contents(vec_c, 3, 1, 1, ci, ca, cd), MPI_ERR_VALUE_TOO_LARGE, "MPI_Type_get_contents");

    /* ---- pack and unpack */
    char buf[64];
    int pos = 0;
    int data[8] = { 0 };
    EXPECT(MPI_Pack(data, 1, vec, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Pack");  /* uncommitted */
    EXPECT(MPI_Unpack(buf, sizeof buf, &pos, data, 1, vec, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Unpack");
    CHECK_MPI(MPI_Type_commit(&vec));
    EXPECT(MPI_Pack(data, -1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Pack");
    EXPECT(MPI_Pack(data, 1, MPI_DATATYPE_NULL, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Pack");
    EXPECT(MPI_Pack(data, 1, MPI_INT, buf, sizeof buf, NULL, MPI_COMM_WORLD), MPI_ERR_ARG, "MPI_Pack");
    EXPECT(MPI_Pack(data, 1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Pack");
    EXPECT(MPI_Pack(data, 8, MPI_INT, NULL, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_BUFFER, "MPI_Pack");
    pos = 60;
    EXPECT(MPI_Pack(data, 2, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "MPI_Pack");
    CHECK(pos == 60, "a failing MPI_Pack moved the position to %d", pos);
    pos = -1;
    EXPECT(MPI_Pack(data, 1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_ARG, "MPI_Pack");
    pos = 0;
    EXPECT(MPI_Unpack(buf, 4, &pos, data, 2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "MPI_Unpack");
    EXPECT(MPI_Unpack(buf, sizeof buf, &pos, data, -2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Unpack");
    EXPECT(MPI_Pack_size(-1, MPI_INT, MPI_COMM_WORLD, &size), MPI_ERR_COUNT, "MPI_Pack_size");
    EXPECT(MPI_Pack_size(1, MPI_DATATYPE_NULL, MPI_COMM_WORLD, &size), MPI_ERR_TYPE, "MPI_Pack_size");
    EXPECT(MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Pack_size");
    /* the packed size of a large type does not fit an int: the _c form gives it */
    MPI_Datatype big;
    MPI_Count big_size;
    CHECK_MPI(MPI_Type_contiguous(1 << 30, MPI_INT, &big));
    CHECK_MPI(MPI_Type_commit(&big));
    EXPECT(MPI_Pack_size(1, big, MPI_COMM_WORLD, &size), MPI_ERR_VALUE_TOO_LARGE, "MPI_Pack_size");
    CHECK_MPI(MPI_Pack_size_c(1, big, MPI_COMM_WORLD, &big_size));
    CHECK(big_size == (MPI_Count)4 << 30, "MPI_Pack_size_c of 2^30 ints: %lld", (long long)big_size);
    CHECK_MPI(MPI_Type_size(big, &size));
    CHECK(size == MPI_UNDEFINED, "MPI_Type_size of a 4 GiB type: %d, expected MPI_UNDEFINED", size);

    EXPECT(MPI_Get_address(data, NULL), MPI_ERR_ARG, "MPI_Get_address");
    EXPECT(MPI_Type_match_size(12345, 4, &t), MPI_ERR_ARG, "MPI_Type_match_size");

    CHECK_MPI(MPI_Type_free(&vec));
    CHECK_MPI(MPI_Type_free(&vec_c));
    CHECK_MPI(MPI_Type_free(&big));
    CHECK(failures == 0, "%d error checks failed", failures);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d errors ok\n", rank);
    MPI_Finalize();
    return 0;
}
