/*
 * compare_attrs: MPI_Comm_compare's four results, communicator names, the
 * predefined attributes (values, and that MPI_TAG_UB is the tag the
 * point-to-point layer really accepts), MPI_Comm_test_inter.
 * Prints "rank R of S compare_attrs ok".
 */
#include <mpi.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

static int me, n;

static void expect_compare(MPI_Comm a, MPI_Comm b, int expected, const char *what)
{
    int result = -1;
    CHECK_MPI(MPI_Comm_compare(a, b, &result));
    CHECK(result == expected, "%s: MPI_Comm_compare gives %d, expected %d", what, result, expected);
    CHECK_MPI(MPI_Comm_compare(b, a, &result));
    CHECK(result == expected, "%s (swapped): MPI_Comm_compare gives %d, expected %d", what, result, expected);
}

static void expect_name(MPI_Comm comm, const char *expected, const char *what)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    memset(name, 'x', sizeof name);
    CHECK_MPI(MPI_Comm_get_name(comm, name, &len));
    CHECK(strcmp(name, expected) == 0, "%s: name \"%s\", expected \"%s\"", what, name, expected);
    CHECK(len == (int)strlen(expected), "%s: resultlen %d, expected %zu", what, len, strlen(expected));
}

/* An attribute that must be set, with the value it points to. */
static int int_attr(MPI_Comm comm, int keyval, const char *what)
{
    int *value = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(comm, keyval, &value, &flag));
    CHECK(flag, "%s: flag is false", what);
    CHECK(value != NULL, "%s: the attribute value pointer is NULL", what);
    int *old_value = NULL;
    flag = 0;
    CHECK_MPI(MPI_Attr_get(comm, keyval, &old_value, &flag));
    CHECK(flag && old_value && *old_value == *value, "%s: MPI_Attr_get disagrees with MPI_Comm_get_attr", what);
    return *value;
}

static void check_attributes(MPI_Comm comm, const char *which)
{
    char what[128];
    snprintf(what, sizeof what, "%s MPI_TAG_UB", which);
    int tag_ub = int_attr(comm, MPI_TAG_UB, what);
    CHECK(tag_ub >= (1 << 23) - 1, "%s: %d is below Hashi's promised 2^23-1", what, tag_ub);
    snprintf(what, sizeof what, "%s MPI_HOST", which);
    CHECK(int_attr(comm, MPI_HOST, what) == MPI_PROC_NULL, "%s is not MPI_PROC_NULL", what);
    snprintf(what, sizeof what, "%s MPI_IO", which);
    CHECK(int_attr(comm, MPI_IO, what) == MPI_ANY_SOURCE, "%s is not MPI_ANY_SOURCE", what);
    snprintf(what, sizeof what, "%s MPI_WTIME_IS_GLOBAL", which);
    CHECK(int_attr(comm, MPI_WTIME_IS_GLOBAL, what) == 0, "%s is not 0", what);
    snprintf(what, sizeof what, "%s MPI_UNIVERSE_SIZE", which);
    int universe = int_attr(comm, MPI_UNIVERSE_SIZE, what);
    CHECK(universe >= n, "%s is %d, less than the %d ranks running", what, universe, n);
    snprintf(what, sizeof what, "%s MPI_APPNUM", which);
    CHECK(int_attr(comm, MPI_APPNUM, what) == 0, "%s is not 0 for a single-program job", what);
    snprintf(what, sizeof what, "%s MPI_LASTUSEDCODE", which);
    CHECK(int_attr(comm, MPI_LASTUSEDCODE, what) >= MPI_ERR_LASTCODE, "%s is below MPI_ERR_LASTCODE", what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    /* ---- compare ---- */
    MPI_Comm dup1, dup2, reversed, parity;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup1));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup2));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &reversed));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &parity));
    expect_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, MPI_IDENT, "world vs world");
    expect_compare(MPI_COMM_SELF, MPI_COMM_SELF, MPI_IDENT, "self vs self");
    expect_compare(dup1, dup1, MPI_IDENT, "dup vs itself");
    expect_compare(dup1, MPI_COMM_WORLD, MPI_CONGRUENT, "dup vs world");
    expect_compare(dup1, dup2, MPI_CONGRUENT, "dup vs dup");
    expect_compare(MPI_COMM_SELF, MPI_COMM_WORLD, n == 1 ? MPI_CONGRUENT : MPI_UNEQUAL, "self vs world");
    expect_compare(reversed, MPI_COMM_WORLD, n == 1 ? MPI_CONGRUENT : MPI_SIMILAR, "reversed vs world");
    expect_compare(reversed, dup2, n == 1 ? MPI_CONGRUENT : MPI_SIMILAR, "reversed vs dup");
    expect_compare(parity, MPI_COMM_WORLD, n == 1 ? MPI_CONGRUENT : MPI_UNEQUAL, "parity vs world");
    MPI_Comm copy = dup1;
    expect_compare(copy, dup1, MPI_IDENT, "two handles of one communicator");

    /* ---- names ---- */
    expect_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "world");
    expect_name(MPI_COMM_SELF, "MPI_COMM_SELF", "self");
    expect_name(dup1, "", "unnamed dup");
    CHECK_MPI(MPI_Comm_set_name(dup1, "solver rows"));
    expect_name(dup1, "solver rows", "named dup");
    CHECK_MPI(MPI_Comm_set_name(dup1, "halo"));
    expect_name(dup1, "halo", "renamed dup");
    MPI_Comm dup_of_named;
    CHECK_MPI(MPI_Comm_dup(dup1, &dup_of_named));
    expect_name(dup_of_named, "", "dup of a named communicator (names are not inherited)");
    CHECK_MPI(MPI_Comm_free(&dup_of_named));
    char longname[MPI_MAX_OBJECT_NAME + 40], truncated[MPI_MAX_OBJECT_NAME];
    for (size_t i = 0; i < sizeof longname - 1; i++)
        longname[i] = (char)('a' + i % 26);
    longname[sizeof longname - 1] = '\0';
    memcpy(truncated, longname, MPI_MAX_OBJECT_NAME - 1);
    truncated[MPI_MAX_OBJECT_NAME - 1] = '\0';
    CHECK_MPI(MPI_Comm_set_name(dup2, longname));
    expect_name(dup2, truncated, "a name longer than MPI_MAX_OBJECT_NAME");
    CHECK_MPI(MPI_Comm_set_name(dup2, ""));
    expect_name(dup2, "", "an empty name");
    CHECK_MPI(MPI_Comm_set_name(MPI_COMM_WORLD, "everyone"));
    expect_name(MPI_COMM_WORLD, "everyone", "renamed world");
    CHECK_MPI(MPI_Comm_set_name(MPI_COMM_WORLD, "MPI_COMM_WORLD"));

    /* ---- attributes ---- */
    check_attributes(MPI_COMM_WORLD, "world");
    check_attributes(MPI_COMM_SELF, "self");
    check_attributes(dup1, "dup");

    /* MPI_TAG_UB is a tag that works; one more is refused (when there is one more) */
    int tag_ub = int_attr(MPI_COMM_WORLD, MPI_TAG_UB, "MPI_TAG_UB");
    int sent = 12345, got = 0;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(&sent, 1, MPI_INT, 0, tag_ub, &got, 1, MPI_INT, 0, tag_ub, MPI_COMM_SELF, &st));
    CHECK(got == sent && st.MPI_TAG == tag_ub, "a message with tag MPI_TAG_UB: value %d tag %d", got, st.MPI_TAG);
    if (tag_ub < INT_MAX) {
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Request req;
        int rc = MPI_Isend(&sent, 1, MPI_INT, 0, tag_ub + 1, MPI_COMM_SELF, &req);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TAG, "a send with tag MPI_TAG_UB + 1 returned class %d, not MPI_ERR_TAG", cls);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    }

    /* a user-added error class raises MPI_LASTUSEDCODE */
    int new_class = -1;
    CHECK_MPI(MPI_Add_error_class(&new_class));
    int last = int_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, "MPI_LASTUSEDCODE");
    CHECK(last >= new_class, "MPI_LASTUSEDCODE %d is below the class %d just added", last, new_class);

    /* ---- intercommunicator test ---- */
    int flag = -1;
    CHECK_MPI(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CHECK(flag == 0, "MPI_Comm_test_inter(world) = %d", flag);
    flag = -1;
    CHECK_MPI(MPI_Comm_test_inter(parity, &flag));
    CHECK(flag == 0, "MPI_Comm_test_inter(parity) = %d", flag);

    CHECK_MPI(MPI_Comm_free(&dup1));
    CHECK_MPI(MPI_Comm_free(&dup2));
    CHECK_MPI(MPI_Comm_free(&reversed));
    CHECK_MPI(MPI_Comm_free(&parity));
    report_ok();
    MPI_Finalize();
    return 0;
}
