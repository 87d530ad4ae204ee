/*
 * errors: invalid arguments of the group and communicator calls return their
 * error class under MPI_ERRORS_RETURN (on MPI_COMM_WORLD and MPI_COMM_SELF,
 * which takes errors with no valid communicator), and the error string names
 * the call. Afterwards the library still works. Prints "rank R of S errors ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

static int me, n, checks;

static void expect_class_at(int line, int rc, int expected_class, const char *call, const char *func)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "line %d: %s succeeded, expected error class %d", line, call, expected_class);
    CHECK_MPI(MPI_Error_class(rc, &cls));
    CHECK(cls == expected_class, "line %d: %s returned class %d, expected %d", line, call, cls, expected_class);
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK_MPI(MPI_Error_string(rc, msg, &len));
    CHECK(strstr(msg, func) != NULL, "line %d: the error string \"%s\" does not name %s", line, msg, func);
    checks++;
}
#define EXPECT_CLASS(call, cls, func) expect_class_at(__LINE__, (call), (cls), #call, (func))

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    MPI_Comm comm = MPI_COMM_NULL, nullcomm = MPI_COMM_NULL, world = MPI_COMM_WORLD, self = MPI_COMM_SELF;
    MPI_Group wg, g = MPI_GROUP_NULL, nullgroup = MPI_GROUP_NULL;
    int result, flag, size, rank, len, *attr;
    char name[MPI_MAX_OBJECT_NAME];
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));

    /* ---- MPI_ERR_COMM ---- */
    EXPECT_CLASS(MPI_Comm_dup(MPI_COMM_NULL, &comm), MPI_ERR_COMM, "MPI_Comm_dup");
    EXPECT_CLASS(MPI_Comm_split(MPI_COMM_NULL, 0, 0, &comm), MPI_ERR_COMM, "MPI_Comm_split");
    EXPECT_CLASS(MPI_Comm_create(MPI_COMM_NULL, wg, &comm), MPI_ERR_COMM, "MPI_Comm_create");
    EXPECT_CLASS(MPI_Comm_free(&nullcomm), MPI_ERR_COMM, "MPI_Comm_free");
    EXPECT_CLASS(MPI_Comm_free(&world), MPI_ERR_COMM, "MPI_Comm_free");
    CHECK(world == MPI_COMM_WORLD, "a failed MPI_Comm_free changed the handle");
    EXPECT_CLASS(MPI_Comm_free(&self), MPI_ERR_COMM, "MPI_Comm_free");
    EXPECT_CLASS(MPI_Comm_compare(MPI_COMM_NULL, MPI_COMM_WORLD, &result), MPI_ERR_COMM, "MPI_Comm_compare");
    EXPECT_CLASS(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_NULL, &result), MPI_ERR_COMM, "MPI_Comm_compare");
    EXPECT_CLASS(MPI_Comm_group(MPI_COMM_NULL, &g), MPI_ERR_COMM, "MPI_Comm_group");
    EXPECT_CLASS(MPI_Comm_set_name(MPI_COMM_NULL, "x"), MPI_ERR_COMM, "MPI_Comm_set_name");
    EXPECT_CLASS(MPI_Comm_get_name(MPI_COMM_NULL, name, &len), MPI_ERR_COMM, "MPI_Comm_get_name");
    EXPECT_CLASS(MPI_Comm_test_inter(MPI_COMM_NULL, &flag), MPI_ERR_COMM, "MPI_Comm_test_inter");
    EXPECT_CLASS(MPI_Comm_get_attr(MPI_COMM_NULL, MPI_TAG_UB, &attr, &flag), MPI_ERR_COMM, "MPI_Comm_get_attr");
    EXPECT_CLASS(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Barrier");

    /* a freed communicator's handle is MPI_COMM_NULL: using it again is MPI_ERR_COMM */
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Comm_free(&comm));
    EXPECT_CLASS(MPI_Comm_free(&comm), MPI_ERR_COMM, "MPI_Comm_free");

    /* ---- MPI_ERR_ARG: bad pointers, color, counts ---- */
    EXPECT_CLASS(MPI_Comm_dup(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Comm_dup");
    EXPECT_CLASS(MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &comm), MPI_ERR_ARG, "MPI_Comm_split");
    EXPECT_CLASS(MPI_Comm_free(NULL), MPI_ERR_ARG, "MPI_Comm_free");
    EXPECT_CLASS(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, NULL), MPI_ERR_ARG, "MPI_Comm_compare");
    EXPECT_CLASS(MPI_Comm_group(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Comm_group");
    EXPECT_CLASS(MPI_Comm_set_name(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Comm_set_name");
    EXPECT_CLASS(MPI_Comm_get_name(MPI_COMM_WORLD, NULL, &len), MPI_ERR_ARG, "MPI_Comm_get_name");
    EXPECT_CLASS(MPI_Comm_get_name(MPI_COMM_WORLD, name, NULL), MPI_ERR_ARG, "MPI_Comm_get_name");
    EXPECT_CLASS(MPI_Comm_test_inter(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Comm_test_inter");
    EXPECT_CLASS(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL, &flag), MPI_ERR_ARG, "MPI_Comm_get_attr");
    EXPECT_CLASS(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, NULL), MPI_ERR_ARG, "MPI_Comm_get_attr");
    EXPECT_CLASS(MPI_Group_size(wg, NULL), MPI_ERR_ARG, "MPI_Group_size");
    EXPECT_CLASS(MPI_Group_rank(wg, NULL), MPI_ERR_ARG, "MPI_Group_rank");
    EXPECT_CLASS(MPI_Group_free(NULL), MPI_ERR_ARG, "MPI_Group_free");
    EXPECT_CLASS(MPI_Group_incl(wg, -1, (int[]){ 0 }, &g), MPI_ERR_ARG, "MPI_Group_incl");
    EXPECT_CLASS(MPI_Group_incl(wg, n + 1, (int[]){ 0 }, &g), MPI_ERR_ARG, "MPI_Group_incl");
    EXPECT_CLASS(MPI_Group_incl(wg, 1, NULL, &g), MPI_ERR_ARG, "MPI_Group_incl");
    EXPECT_CLASS(MPI_Group_incl(wg, 1, (int[]){ 0 }, NULL), MPI_ERR_ARG, "MPI_Group_incl");
    EXPECT_CLASS(MPI_Group_excl(wg, -1, (int[]){ 0 }, &g), MPI_ERR_ARG, "MPI_Group_excl");
    EXPECT_CLASS(MPI_Group_range_incl(wg, 1, (int[][3]){ { 0, 0, 0 } }, &g), MPI_ERR_ARG, "MPI_Group_range_incl");
    EXPECT_CLASS(MPI_Group_range_excl(wg, -1, NULL, &g), MPI_ERR_ARG, "MPI_Group_range_excl");
    EXPECT_CLASS(MPI_Group_translate_ranks(wg, -1, NULL, wg, NULL), MPI_ERR_ARG, "MPI_Group_translate_ranks");
    EXPECT_CLASS(MPI_Group_translate_ranks(wg, 1, (int[]){ 0 }, wg, NULL), MPI_ERR_ARG,
                 "MPI_Group_translate_ranks");
    EXPECT_CLASS(MPI_Group_compare(wg, wg, NULL), MPI_ERR_ARG, "MPI_Group_compare");
    EXPECT_CLASS(MPI_Group_union(wg, wg, NULL), MPI_ERR_ARG, "MPI_Group_union");
    if (n >= 2) /* a stride that walks away from last */
        EXPECT_CLASS(MPI_Group_range_incl(wg, 1, (int[][3]){ { 1, 0, 1 } }, &g), MPI_ERR_ARG,
                     "MPI_Group_range_incl");

    /* ---- MPI_ERR_GROUP ---- */
    EXPECT_CLASS(MPI_Group_size(MPI_GROUP_NULL, &size), MPI_ERR_GROUP, "MPI_Group_size");
    EXPECT_CLASS(MPI_Group_rank(MPI_GROUP_NULL, &rank), MPI_ERR_GROUP, "MPI_Group_rank");
    EXPECT_CLASS(MPI_Group_free(&nullgroup), MPI_ERR_GROUP, "MPI_Group_free");
    EXPECT_CLASS(MPI_Group_incl(MPI_GROUP_NULL, 0, NULL, &g), MPI_ERR_GROUP, "MPI_Group_incl");
    EXPECT_CLASS(MPI_Group_excl(MPI_GROUP_NULL, 0, NULL, &g), MPI_ERR_GROUP, "MPI_Group_excl");
    EXPECT_CLASS(MPI_Group_range_incl(MPI_GROUP_NULL, 0, NULL, &g), MPI_ERR_GROUP, "MPI_Group_range_incl");
    EXPECT_CLASS(MPI_Group_range_excl(MPI_GROUP_NULL, 0, NULL, &g), MPI_ERR_GROUP, "MPI_Group_range_excl");
    EXPECT_CLASS(MPI_Group_union(wg, MPI_GROUP_NULL, &g), MPI_ERR_GROUP, "MPI_Group_union");
    EXPECT_CLASS(MPI_Group_intersection(MPI_GROUP_NULL, wg, &g), MPI_ERR_GROUP, "MPI_Group_intersection");
    EXPECT_CLASS(MPI_Group_difference(wg, MPI_GROUP_NULL, &g), MPI_ERR_GROUP, "MPI_Group_difference");
    EXPECT_CLASS(MPI_Group_compare(MPI_GROUP_NULL, wg, &result), MPI_ERR_GROUP, "MPI_Group_compare");
    EXPECT_CLASS(MPI_Group_translate_ranks(wg, 1, (int[]){ 0 }, MPI_GROUP_NULL, (int[]){ 0 }), MPI_ERR_GROUP,
                 "MPI_Group_translate_ranks");
    EXPECT_CLASS(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &comm), MPI_ERR_GROUP, "MPI_Comm_create");
    if (n >= 2) /* a group with members outside the communicator */
        EXPECT_CLASS(MPI_Comm_create(MPI_COMM_SELF, wg, &comm), MPI_ERR_GROUP, "MPI_Comm_create");
    /* a freed group's handle is MPI_GROUP_NULL */
    MPI_Group tmp;
    CHECK_MPI(MPI_Group_incl(wg, 1, (int[]){ 0 }, &tmp));
    CHECK_MPI(MPI_Group_free(&tmp));
    EXPECT_CLASS(MPI_Group_free(&tmp), MPI_ERR_GROUP, "MPI_Group_free");

    /* ---- MPI_ERR_RANK ---- */
    EXPECT_CLASS(MPI_Group_incl(wg, 1, (int[]){ n }, &g), MPI_ERR_RANK, "MPI_Group_incl");
    EXPECT_CLASS(MPI_Group_incl(wg, 1, (int[]){ -1 }, &g), MPI_ERR_RANK, "MPI_Group_incl");
    EXPECT_CLASS(MPI_Group_incl(wg, 1, (int[]){ MPI_PROC_NULL }, &g), MPI_ERR_RANK, "MPI_Group_incl");
    if (n >= 2)
        EXPECT_CLASS(MPI_Group_incl(wg, 2, (int[]){ 1, 1 }, &g), MPI_ERR_RANK, "MPI_Group_incl");
    EXPECT_CLASS(MPI_Group_excl(wg, 1, (int[]){ n }, &g), MPI_ERR_RANK, "MPI_Group_excl");
    if (n >= 2)
        EXPECT_CLASS(MPI_Group_excl(wg, 2, (int[]){ 0, 0 }, &g), MPI_ERR_RANK, "MPI_Group_excl");
    EXPECT_CLASS(MPI_Group_range_incl(wg, 1, (int[][3]){ { 0, n, 1 } }, &g), MPI_ERR_RANK, "MPI_Group_range_incl");
    EXPECT_CLASS(MPI_Group_range_incl(wg, 2, (int[][3]){ { 0, n - 1, 1 }, { 0, 0, 1 } }, &g), MPI_ERR_RANK,
                 "MPI_Group_range_incl");
    EXPECT_CLASS(MPI_Group_range_excl(wg, 1, (int[][3]){ { -1, 0, 1 } }, &g), MPI_ERR_RANK, "MPI_Group_range_excl");
    int out[2];
    EXPECT_CLASS(MPI_Group_translate_ranks(wg, 2, (int[]){ 0, n }, wg, out), MPI_ERR_RANK,
                 "MPI_Group_translate_ranks");

    /* ---- MPI_ERR_KEYVAL ---- */
    EXPECT_CLASS(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &attr, &flag), MPI_ERR_KEYVAL,
                 "MPI_Comm_get_attr");
    EXPECT_CLASS(MPI_Comm_get_attr(MPI_COMM_WORLD, 123456, &attr, &flag), MPI_ERR_KEYVAL, "MPI_Comm_get_attr");

    /* still working after all that */
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Comm_compare(comm, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT, "dup after the errors compares %d", result);
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_MPI(MPI_Group_free(&wg));
    CHECK(checks > 0, "no error was checked");
    report_ok();
    MPI_Finalize();
    return 0;
}
