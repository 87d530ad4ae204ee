/*
 * idup: MPI_Comm_idup and MPI_Comm_dup_with_info / idup_with_info.
 *
 * 1. Overlap with traffic: each rank posts an idup of MPI_COMM_WORLD, then,
 *    before waiting for it, exchanges a ring of messages on WORLD; the
 *    communicator is not usable (MPI_ERR_COMM) until the request completes.
 * 2. Several outstanding at once on communicators with overlapping members
 *    (WORLD, a dup of it, a split of it by parity, reversed order), a
 *    blocking MPI_Comm_dup and MPI_Comm_split made while they are pending,
 *    completed with Waitall in reverse; then every new communicator carries
 *    traffic and must be isolated from all others (the receiver receives
 *    with wildcards on the last one first: two communicators sharing a
 *    context id would swap messages), and compares CONGRUENT with its
 *    parent.
 * 3. Rounds of 4 idups completed by MPI_Test polling, freed, repeated, so
 *    the ids are reused while others are reserved.
 * 4. Hints: dup keeps the parent's, dup_with_info takes its argument's,
 *    idup_with_info too; get_info reports the standard's assertions.
 * 5. Truly nonblocking: rank 1 posts its idup only after a message rank 0
 *    sends after posting its own; an idup that waited for the agreement
 *    would hang here (the harness's time limit fails it).
 * Prints "rank R of S idup ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

static int me, n;

struct payload {
    int comm_index, round, sender;
};

/* Every rank sends on comms[0..count-1] in order to its right neighbour and
 * receives in reverse order with wildcards: each message must be its own
 * communicator's. */
static void check_isolation(MPI_Comm *comms, int count, int round, const char *what)
{
    MPI_Request *reqs = malloc((size_t)count * sizeof *reqs);
    struct payload *out = malloc((size_t)count * sizeof *out);
    for (int i = 0; i < count; i++) {
        int rank, size;
        MPI_Comm_rank(comms[i], &rank);
        MPI_Comm_size(comms[i], &size);
        out[i] = (struct payload){ i, round, me };
        CHECK_MPI(MPI_Isend(&out[i], 3, MPI_INT, (rank + 1) % size, 7, comms[i], &reqs[i]));
    }
    for (int i = count - 1; i >= 0; i--) {
        int rank, size;
        MPI_Comm_rank(comms[i], &rank);
        MPI_Comm_size(comms[i], &size);
        struct payload in;
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&in, 3, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comms[i], &st));
        CHECK(in.comm_index == i && in.round == round,
              "%s round %d: a receive on communicator %d got communicator %d's message (round %d, world rank %d)",
              what, round, i, in.comm_index, in.round, in.sender);
        CHECK(st.MPI_SOURCE == (rank - 1 + size) % size && st.MPI_TAG == 7, "%s: status source %d tag %d", what,
              st.MPI_SOURCE, st.MPI_TAG);
    }
    CHECK_MPI(MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE));
    free(reqs);
    free(out);
}

static void check_congruent(MPI_Comm a, MPI_Comm b, const char *what)
{
    int result;
    CHECK_MPI(MPI_Comm_compare(a, b, &result));
    CHECK(result == MPI_CONGRUENT, "%s: compare gave %d, not MPI_CONGRUENT", what, result);
}

static void overlap_with_traffic(void)
{
    MPI_Comm dup;
    MPI_Request req;
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req));
    /* Until completion the new handle is not a communicator yet. */
    if (n > 1) {
        int size = -1;
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
        int rc = MPI_Comm_size(dup, &size);
        int cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        /* It may legitimately have completed already (the partner was quick). */
        int done = 0;
        CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        CHECK(done || cls == MPI_ERR_COMM, "a pending idup's communicator was usable (rc class %d)", cls);
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
        if (done)
            req = MPI_REQUEST_NULL;
    }
    /* A ring on the parent while the agreement runs. */
    for (int round = 0; round < 10; round++) {
        int token = me * 1000 + round, got = -1;
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, (me + 1) % n, round, &got, 1, MPI_INT, (me - 1 + n) % n, round,
                               MPI_COMM_WORLD, &st));
        CHECK(got == ((me - 1 + n) % n) * 1000 + round, "ring round %d: got %d", round, got);
    }
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "the idup request was not freed by MPI_Wait");
    check_congruent(MPI_COMM_WORLD, dup, "idup of WORLD");
    MPI_Comm pair[2] = { MPI_COMM_WORLD, dup };
    check_isolation(pair, 2, 0, "WORLD vs its idup");
    CHECK_MPI(MPI_Comm_free(&dup));
}

static void dependent_idup(void)
{
    MPI_Comm dup;
    MPI_Request req;
    int token = 4242;
    if (me == 1)
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req));
    if (me == 0 && n > 1)
        CHECK_MPI(MPI_Ssend(&token, 1, MPI_INT, 1, 77, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(token == 4242, "rank %d: the token is %d", me, token);
    check_congruent(MPI_COMM_WORLD, dup, "idup posted before the partner's");
    CHECK_MPI(MPI_Comm_free(&dup));
}

static void several_outstanding(void)
{
    MPI_Comm base_dup, base_split;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &base_dup));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, n - me, &base_split));
    MPI_Comm parents[4] = { MPI_COMM_WORLD, base_dup, base_split, MPI_COMM_WORLD };
    MPI_Comm made[6];
    MPI_Request reqs[4];
    for (int i = 0; i < 4; i++)
        CHECK_MPI(MPI_Comm_idup(parents[i], &made[i], &reqs[i]));
    /* Blocking creations while the idups are pending: on a parent with
     * pending idups and on another one. */
    CHECK_MPI(MPI_Comm_dup(base_dup, &made[4]));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, me, &made[5]));
    for (int i = 3; i >= 0; i--)
        CHECK_MPI(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++)
        check_congruent(parents[i], made[i], "idup");
    check_congruent(base_dup, made[4], "dup during idups");
    check_congruent(MPI_COMM_WORLD, made[5], "split during idups");

    /* All new and old communicators that contain this process: pairwise apart. */
    MPI_Comm all[9] = { made[0], made[1], made[2], made[3], made[4], made[5], MPI_COMM_WORLD, base_dup, base_split };
    check_isolation(all, 9, 0, "idups, dup and split");
    for (int i = 0; i < 6; i++)
        CHECK_MPI(MPI_Comm_free(&made[i]));
    CHECK_MPI(MPI_Comm_free(&base_dup));
    CHECK_MPI(MPI_Comm_free(&base_split));
}

static void polled_rounds(void)
{
    MPI_Comm keep;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &keep));
    for (int round = 0; round < 3; round++) {
        MPI_Comm made[4];
        MPI_Request reqs[4];
        for (int i = 0; i < 4; i++)
            CHECK_MPI(MPI_Comm_idup(i % 2 ? keep : MPI_COMM_WORLD, &made[i], &reqs[i]));
        int done = 0;
        while (!done)
            CHECK_MPI(MPI_Testall(4, reqs, &done, MPI_STATUSES_IGNORE));
        MPI_Comm all[6] = { made[0], made[1], made[2], made[3], keep, MPI_COMM_WORLD };
        check_isolation(all, 6, round, "polled idups");
        for (int i = 0; i < 4; i++)
            CHECK_MPI(MPI_Comm_free(&made[i]));
    }
    CHECK_MPI(MPI_Comm_free(&keep));
}

static void expect_hint(MPI_Comm comm, const char *key, const char *value, const char *what)
{
    MPI_Info info;
    char buf[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    CHECK_MPI(MPI_Comm_get_info(comm, &info));
    CHECK_MPI(MPI_Info_get(info, key, MPI_MAX_INFO_VAL, buf, &flag));
    if (value)
        CHECK(flag && strcmp(buf, value) == 0, "%s: hint %s is %s, expected %s", what, key, flag ? buf : "(unset)",
              value);
    else
        CHECK(!flag, "%s: hint %s is set (%s), expected none", what, key, buf);
    CHECK_MPI(MPI_Info_free(&info));
}

static void hints(void)
{
    MPI_Info info;
    MPI_Comm a, b, c;
    MPI_Request req;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    CHECK_MPI(MPI_Info_set(info, "hashi_test_key", "one"));
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &a));
    expect_hint(MPI_COMM_WORLD, "mpi_assert_no_any_tag", "false", "WORLD");
    expect_hint(a, "mpi_assert_no_any_tag", "true", "dup_with_info");
    expect_hint(a, "mpi_assert_exact_length", "false", "dup_with_info (default)");
    expect_hint(a, "hashi_test_key", "one", "dup_with_info");
    CHECK_MPI(MPI_Comm_dup(a, &b));
    expect_hint(b, "hashi_test_key", "one", "dup of a dup_with_info");
    CHECK_MPI(MPI_Info_set(info, "hashi_test_key", "two"));
    CHECK_MPI(MPI_Comm_idup_with_info(b, info, &c, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    expect_hint(c, "hashi_test_key", "two", "idup_with_info");
    check_congruent(b, c, "idup_with_info");
    /* set_info replaces the keys it names and keeps the others. */
    MPI_Info more;
    CHECK_MPI(MPI_Info_create(&more));
    CHECK_MPI(MPI_Info_set(more, "mpi_assert_allow_overtaking", "true"));
    CHECK_MPI(MPI_Comm_set_info(c, more));
    expect_hint(c, "mpi_assert_allow_overtaking", "true", "set_info");
    expect_hint(c, "hashi_test_key", "two", "set_info keeps other keys");
    MPI_Comm all[4] = { a, b, c, MPI_COMM_WORLD };
    check_isolation(all, 4, 0, "with_info communicators");
    CHECK_MPI(MPI_Info_free(&more));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Comm_free(&a));
    CHECK_MPI(MPI_Comm_free(&b));
    CHECK_MPI(MPI_Comm_free(&c));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    overlap_with_traffic();
    several_outstanding();
    polled_rounds();
    hints();
    dependent_idup();
    report_ok();
    MPI_Finalize();
    return 0;
}
