/*
 * dup_free [CYCLES]: context ids are agreed, reused and never shared.
 *
 * 1. Churn: 8 communicators stay alive while CYCLES times (default 5000) one
 *    of them is freed and replaced by a dup of MPI_COMM_WORLD or of another
 *    live one, so ids are freed and taken again in a shuffled order. Each new
 *    communicator must compare CONGRUENT with its parent and keep its traffic
 *    apart from it; every 250 cycles all live communicators are checked
 *    against each other.
 * 2. Communicators from different parents with overlapping members (a split
 *    of a split, a split of a dup, a create from a split) exchange messages
 *    all at once; each receive must only see its own communicator's.
 * 3. Freeing with operations pending: a receive posted on a communicator that
 *    is then freed still completes; while a freed communicator's receive is
 *    pending, its id is not given to a new communicator.
 * 4. Many at once: 2100 live communicators (ids past the first window of
 *    2048 pairs the agreement looks at); at 1 and 2 ranks, creating until
 *    every one of the 32764 free ids is taken, then MPI_ERR_OTHER, then one
 *    freed and taken again.
 *
 * Isolation checks are deterministic: the sender sends on communicator a
 * before b, and the receiver receives on b first with wildcards. Were a and b
 * given the same context id, message order would hand b's receive a's message.
 * Prints "rank R of S dup_free ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

#include "../util/check.h"
#include "../util/suite.h"

#define LIVE 8

static int me, n;

struct payload {
    int comm_index, cycle, sender;
};

/*
 * Each rank sends one message on every communicator of comms[0..count-1] to
 * its right neighbour (in that communicator), then receives on them in
 * reverse order with MPI_ANY_SOURCE / MPI_ANY_TAG; each must carry its own
 * communicator's index and the cycle. With `leftovers`, nothing may then be
 * left to probe on any of them (that costs two barriers).
 */
static void check_isolation(MPI_Comm *comms, int count, int cycle, const char *what, int leftovers)
{
    MPI_Request *reqs = malloc((size_t)count * sizeof *reqs);
    struct payload *out = malloc((size_t)count * sizeof *out);
    for (int i = 0; i < count; i++) {
        int rank, size;
        MPI_Comm_rank(comms[i], &rank);
        MPI_Comm_size(comms[i], &size);
        out[i] = (struct payload){ i, cycle, me };
        CHECK_MPI(MPI_Isend(&out[i], 3, MPI_INT, (rank + 1) % size, i % 3, comms[i], &reqs[i]));
    }
    for (int i = count - 1; i >= 0; i--) {
        int rank, size;
        MPI_Comm_rank(comms[i], &rank);
        MPI_Comm_size(comms[i], &size);
        struct payload in;
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&in, 3, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comms[i], &st));
        CHECK(in.comm_index == i && in.cycle == cycle,
              "%s (cycle %d): a receive on communicator %d got the message of communicator %d (cycle %d, "
              "from world rank %d)", what, cycle, i, in.comm_index, in.cycle, in.sender);
        CHECK(st.MPI_SOURCE == (rank - 1 + size) % size && st.MPI_TAG == i % 3,
              "%s: communicator %d: status source %d tag %d", what, i, st.MPI_SOURCE, st.MPI_TAG);
    }
    CHECK_MPI(MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE));
    free(reqs);
    free(out);
    if (!leftovers)
        return;
    /* everyone has received everything before anyone probes for leftovers */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        int flag = 1;
        MPI_Status st;
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comms[i], &flag, &st));
        if (flag) {
            /* say what it is: whose message, from which round */
            struct payload extra = { -1, -1, -1 };
            int bytes = 0;
            MPI_Get_count(&st, MPI_BYTE, &bytes);
            if (bytes == (int)sizeof extra)
                MPI_Recv(&extra, 3, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, comms[i], MPI_STATUS_IGNORE);
            CHECK(0, "%s (cycle %d): a message is left over on communicator %d: %d bytes from rank %d tag %d "
                     "(communicator %d, cycle %d, world rank %d)", what, cycle, i, bytes, st.MPI_SOURCE, st.MPI_TAG,
                  extra.comm_index, extra.cycle, extra.sender);
        }
    }
    /* nobody sends the next round's messages while another rank still probes */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void expect_compare(MPI_Comm a, MPI_Comm b, int expected, const char *what, int cycle)
{
    int result;
    CHECK_MPI(MPI_Comm_compare(a, b, &result));
    CHECK(result == expected, "%s (cycle %d): MPI_Comm_compare gives %d, expected %d", what, cycle, result, expected);
}

static void churn(int cycles)
{
    MPI_Comm live[LIVE + 1];
    for (int i = 0; i < LIVE; i++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &live[i]));
    live[LIVE] = MPI_COMM_WORLD;
    check_isolation(live, LIVE + 1, -1, "initial dups", 1);

    for (int cycle = 0; cycle < cycles; cycle++) {
        int slot = cycle % LIVE;
        /* the parent: the world on even cycles, another live dup on odd ones */
        MPI_Comm parent = cycle % 2 ? live[(slot + 3) % LIVE] : MPI_COMM_WORLD;
        CHECK_MPI(MPI_Comm_free(&live[slot]));
        CHECK(live[slot] == MPI_COMM_NULL, "MPI_Comm_free did not set MPI_COMM_NULL");
        CHECK_MPI(MPI_Comm_dup(parent, &live[slot]));
        expect_compare(live[slot], parent, MPI_CONGRUENT, "dup vs parent", cycle);
        expect_compare(live[slot], live[slot], MPI_IDENT, "dup vs itself", cycle);
        MPI_Comm pair[2] = { parent, live[slot] };
        check_isolation(pair, 2, cycle, "dup vs parent", 0);
        if (cycle % 250 == 249)
            check_isolation(live, LIVE + 1, cycle, "all live dups", 1);
    }
    for (int i = 0; i < LIVE; i++)
        CHECK_MPI(MPI_Comm_free(&live[i]));
}

/* Communicators of different parents, members overlapping in many ways;
 * each is created while the ones before it are alive, so an id one of them
 * failed to hold would be handed out again (a dup of a created one, a split
 * of a split). */
static void overlapping(void)
{
    enum { WORLD, DUP, PARITY, HALVES, HALVES_CREATE, PARITY_SUB, CREATE_COPY, COUNT };
    MPI_Comm c[COUNT];
    c[WORLD] = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[DUP]));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &c[PARITY]));
    CHECK_MPI(MPI_Comm_split(c[DUP], me < n / 2, -me, &c[HALVES]));
    MPI_Group halves_group;
    CHECK_MPI(MPI_Comm_group(c[HALVES], &halves_group));
    CHECK_MPI(MPI_Comm_create(c[HALVES], halves_group, &c[HALVES_CREATE]));
    MPI_Group_free(&halves_group);
    int prank;
    MPI_Comm_rank(c[PARITY], &prank);
    CHECK_MPI(MPI_Comm_split(c[PARITY], prank % 2, prank, &c[PARITY_SUB]));
    CHECK_MPI(MPI_Comm_dup(c[HALVES_CREATE], &c[CREATE_COPY]));

    /* all of them at once, twice (ids must not drift between rounds) */
    check_isolation(c, COUNT, 0, "overlapping communicators", 1);
    check_isolation(c, COUNT, 1, "overlapping communicators", 1);
    expect_compare(c[HALVES_CREATE], c[HALVES], MPI_CONGRUENT, "create(halves) vs halves", 0);
    expect_compare(c[CREATE_COPY], c[HALVES_CREATE], MPI_CONGRUENT, "dup of create(halves) vs it", 0);
    expect_compare(c[DUP], c[WORLD], MPI_CONGRUENT, "dup vs world", 0);

    for (int i = 1; i < COUNT; i++)
        CHECK_MPI(MPI_Comm_free(&c[i]));
}

/* Operations pending on a freed communicator. */
static void free_with_pending(void)
{
    if (n < 2) {
        /* one rank: a send to itself and its receive, both started, then the free */
        MPI_Comm d;
        int got = -1, value = 11;
        MPI_Request reqs[2];
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_SELF, &d));
        CHECK_MPI(MPI_Isend(&value, 1, MPI_INT, 0, 5, d, &reqs[0]));
        CHECK_MPI(MPI_Irecv(&got, 1, MPI_INT, 0, 5, d, &reqs[1]));
        CHECK_MPI(MPI_Comm_free(&d));
        CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        CHECK(got == 11, "receive pending on a freed communicator got %d", got);
        return;
    }
    /* (a) a pending receive completes after MPI_Comm_free */
    MPI_Comm d;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    if (me == 0) {
        int got = -1;
        MPI_Request req;
        MPI_Status st;
        CHECK_MPI(MPI_Irecv(&got, 1, MPI_INT, 1, 5, d, &req));
        CHECK_MPI(MPI_Comm_free(&d));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK(got == 100 && st.MPI_SOURCE == 1 && st.MPI_TAG == 5,
              "receive pending on a freed communicator: value %d source %d tag %d", got, st.MPI_SOURCE, st.MPI_TAG);
    } else {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (me == 1) {
            int value = 100;
            CHECK_MPI(MPI_Send(&value, 1, MPI_INT, 0, 5, d));
        }
        CHECK_MPI(MPI_Comm_free(&d));
    }

    /* (b) while rank 0's receive on freed d is pending, every other rank has
     * freed d too: a new dup must not get d's id, or rank 1's message on it
     * would match rank 0's old receive. */
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MPI_Request old_req = MPI_REQUEST_NULL;
    int old_got = -1;
    if (me == 0)
        CHECK_MPI(MPI_Irecv(&old_got, 1, MPI_INT, 1, 6, d, &old_req));
    CHECK_MPI(MPI_Comm_free(&d));
    MPI_Comm e;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &e));
    if (me == 1) {
        int value = 200;
        CHECK_MPI(MPI_Send(&value, 1, MPI_INT, 0, 6, e));
    } else if (me == 0) {
        int got = -1, done = 0, old_done = 0;
        MPI_Request req;
        CHECK_MPI(MPI_Irecv(&got, 1, MPI_INT, 1, 6, e, &req));
        double deadline = MPI_Wtime() + 20;
        while (!done && MPI_Wtime() < deadline) {
            CHECK_MPI(MPI_Test(&old_req, &old_done, MPI_STATUS_IGNORE));
            CHECK(!old_done, "the message sent on a new communicator matched a receive of a freed one "
                             "(value %d): the context id was reused while the receive was pending", old_got);
            CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        }
        CHECK(done && got == 200, "the receive on the new communicator did not complete (value %d)", got);
        /* cancel the old receive: its communicator's last reference goes with it */
        CHECK_MPI(MPI_Cancel(&old_req));
        MPI_Status st;
        CHECK_MPI(MPI_Wait(&old_req, &st));
        int cancelled = 0;
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        CHECK(cancelled, "the receive on the freed communicator was not cancelled");
    }
    CHECK_MPI(MPI_Comm_free(&e));
    /* the id is back in the pool: more dups work and stay isolated */
    MPI_Comm more[3];
    for (int i = 0; i < 3; i++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &more[i]));
    check_isolation(more, 3, 0, "dups after the pending receive", 1);
    for (int i = 0; i < 3; i++)
        CHECK_MPI(MPI_Comm_free(&more[i]));
}

#define MANY 2100
/* 2^15 pairs of context ids, less MPI_COMM_WORLD's, MPI_COMM_SELF's,
 * partitioned p2p's and MPI_Comm_create_from_group's; on several (virtual)
 * nodes each communicator takes a block of 4 pairs (its node-aware
 * sub-communicators'), and WORLD two. */
#define ALL_IDS_ONE_NODE 32764
#define ALL_IDS_NODES (32768 / 4 - 2)

static int all_ids(void)
{
    const char *v = getenv("HASHI_VNODES");
    return v && atoi(v) > 1 ? ALL_IDS_NODES : ALL_IDS_ONE_NODE;
}

static void many_live(void)
{
    const int ALL_IDS = all_ids();
    MPI_Comm *c = malloc(ALL_IDS * sizeof *c);
    for (int i = 0; i < MANY; i++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[i]));
    expect_compare(c[MANY - 1], c[0], MPI_CONGRUENT, "last vs first of many", 0);
    /* around the window boundary (pairs 2047..2050 are dups 2045..2048) */
    MPI_Comm some[] = { c[0], c[2044], c[2045], c[2046], c[2047], c[2048], c[MANY - 1], MPI_COMM_WORLD };
    check_isolation(some, (int)(sizeof some / sizeof *some), 0, "many live communicators", 1);

    int created = MANY;
    if (n <= 2) {
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        int rc = MPI_SUCCESS;
        MPI_Comm extra = MPI_COMM_NULL;
        while (created < ALL_IDS && (rc = MPI_Comm_dup(MPI_COMM_WORLD, &c[created])) == MPI_SUCCESS)
            created++;
        if (rc == MPI_SUCCESS) /* all taken: one more must fail */
            rc = MPI_Comm_dup(MPI_COMM_WORLD, &extra);
        CHECK(extra == MPI_COMM_NULL, "a communicator was created with no context id left");
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_OTHER && created == ALL_IDS,
              "creating communicators until none is left: %d created, then class %d (expected %d, then %d)",
              created, cls, ALL_IDS, MPI_ERR_OTHER);
        /* one freed is one more to create */
        CHECK_MPI(MPI_Comm_free(&c[1000]));
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[1000]));
        MPI_Comm pair[2] = { c[1000], c[ALL_IDS - 1] };
        check_isolation(pair, 2, 1, "the last ids", 1);
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }
    for (int i = 0; i < created; i++)
        CHECK_MPI(MPI_Comm_free(&c[i]));
    free(c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int cycles = argc > 1 ? atoi(argv[1]) : 5000;
    double t0 = MPI_Wtime();
    churn(cycles);
    double t_churn = MPI_Wtime() - t0;
    overlapping();
    free_with_pending();
    many_live();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0)
        fprintf(stderr, "dup_free: %d dup/free cycles in %.3f s (%.1f us per cycle with its checks)\n", cycles,
                t_churn, cycles ? t_churn * 1e6 / cycles : 0.0);
    report_ok();
    MPI_Finalize();
    return 0;
}
