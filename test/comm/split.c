/*
 * split: MPI_Comm_split and MPI_Comm_create. Each new communicator is checked
 * for its size, this rank's rank, its members (as world ranks, in order) and
 * by traffic: a ring exchange of world ranks on it, so the rank mapping the
 * point-to-point layer uses is the one the group says.
 * Prints "rank R of S split ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

#include "../util/check.h"
#include "../util/suite.h"

static int me, n;

/* comm must have exactly the world ranks members[0..count-1] in order (this
 * process among them), and pass a ring of messages that agrees. */
static void expect_comm(MPI_Comm comm, const int *members, int count, const char *what)
{
    CHECK(comm != MPI_COMM_NULL, "%s: MPI_COMM_NULL for a member", what);
    int size, rank, my_pos = -1;
    CHECK_MPI(MPI_Comm_size(comm, &size));
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK(size == count, "%s: size %d, expected %d", what, size, count);
    for (int i = 0; i < count; i++)
        if (members[i] == me)
            my_pos = i;
    CHECK(rank == my_pos, "%s: rank %d, expected %d", what, rank, my_pos);

    MPI_Group group, world_group;
    CHECK_MPI(MPI_Comm_group(comm, &group));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int *ranks = malloc((size_t)count * sizeof *ranks), *world = malloc((size_t)count * sizeof *world);
    for (int i = 0; i < count; i++)
        ranks[i] = i;
    CHECK_MPI(MPI_Group_translate_ranks(group, count, ranks, world_group, world));
    for (int i = 0; i < count; i++)
        CHECK(world[i] == members[i], "%s: member %d is world rank %d, expected %d", what, i, world[i], members[i]);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    free(ranks);
    free(world);

    /* ring: send my world rank right, the left neighbour's must arrive */
    int right = (rank + 1) % size, left = (rank - 1 + size) % size, got = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(&me, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, comm, &st));
    CHECK(got == members[left], "%s: from the left neighbour (rank %d) came %d, expected world rank %d", what, left,
          got, members[left]);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7, "%s: status source %d tag %d, expected %d 7", what, st.MPI_SOURCE,
          st.MPI_TAG, left);
    CHECK_MPI(MPI_Barrier(comm));
}

static void expect_compare(MPI_Comm a, MPI_Comm b, int expected, const char *what)
{
    int result;
    CHECK_MPI(MPI_Comm_compare(a, b, &result));
    CHECK(result == expected, "%s: MPI_Comm_compare gives %d, expected %d", what, result, expected);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int *members = malloc((size_t)n * sizeof *members);
    int count;

    /* by parity, keys = world rank: 0,2,4.. and 1,3,5.. */
    MPI_Comm parity;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &parity));
    count = 0;
    for (int i = me % 2; i < n; i += 2)
        members[count++] = i;
    expect_comm(parity, members, count, "split by parity");
    expect_compare(parity, MPI_COMM_WORLD, n == 1 ? MPI_CONGRUENT : MPI_UNEQUAL, "parity vs world");

    /* one color, reversed keys: the order flips */
    MPI_Comm reversed;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 5, -me, &reversed));
    for (int i = 0; i < n; i++)
        members[i] = n - 1 - i;
    expect_comm(reversed, members, n, "split with reversed keys");
    expect_compare(reversed, MPI_COMM_WORLD, n == 1 ? MPI_CONGRUENT : MPI_SIMILAR, "reversed vs world");

    /* equal keys: ties are broken by the rank in the parent (here reversed) */
    MPI_Comm ties;
    CHECK_MPI(MPI_Comm_split(reversed, 0, 42, &ties));
    expect_comm(ties, members, n, "split with equal keys");
    expect_compare(ties, reversed, MPI_CONGRUENT, "equal keys vs parent");

    /* MPI_UNDEFINED: world rank 0 stays out */
    MPI_Comm without0;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, me == 0 ? MPI_UNDEFINED : 3, me, &without0));
    if (me == 0) {
        CHECK(without0 == MPI_COMM_NULL, "MPI_UNDEFINED color did not give MPI_COMM_NULL");
    } else {
        for (int i = 1; i < n; i++)
            members[i - 1] = i;
        expect_comm(without0, members, n - 1, "split without rank 0");
    }

    /* split of a split: parity, then by (rank in parity) < 1, keys reversed */
    int prank, psize;
    MPI_Comm_rank(parity, &prank);
    MPI_Comm_size(parity, &psize);
    MPI_Comm sub;
    CHECK_MPI(MPI_Comm_split(parity, prank < 1 ? 0 : 1, -prank, &sub));
    count = 0;
    if (prank < 1) {
        members[count++] = me;
    } else {
        /* parity ranks psize-1 .. 1, i.e. world ranks of that parity from the top down */
        for (int pr = psize - 1; pr >= 1; pr--)
            members[count++] = me % 2 + 2 * pr;
    }
    expect_comm(sub, members, count, "split of a split");

    /* MPI_Comm_create with the first half of the world */
    MPI_Group world_group, half_group;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int half = (n + 1) / 2;
    int half_range[][3] = { { 0, half - 1, 1 } };
    CHECK_MPI(MPI_Group_range_incl(world_group, 1, half_range, &half_group));
    MPI_Comm first_half;
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, half_group, &first_half));
    if (me < half) {
        for (int i = 0; i < half; i++)
            members[i] = i;
        expect_comm(first_half, members, half, "create first half");
    } else {
        CHECK(first_half == MPI_COMM_NULL, "a non-member of the group got a communicator");
    }

    /* MPI_Comm_create with disjoint groups (each process passes its parity's) */
    MPI_Group parity_group;
    CHECK_MPI(MPI_Comm_group(parity, &parity_group));
    MPI_Comm by_groups;
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, parity_group, &by_groups));
    count = 0;
    for (int i = me % 2; i < n; i += 2)
        members[count++] = i;
    expect_comm(by_groups, members, count, "create with disjoint groups");
    expect_compare(by_groups, parity, MPI_CONGRUENT, "create by parity groups vs split by parity");

    /* MPI_Comm_create from a derived parent whose order differs from the groups' */
    MPI_Comm from_reversed;
    CHECK_MPI(MPI_Comm_create(reversed, parity_group, &from_reversed));
    expect_comm(from_reversed, members, count, "create from the reversed communicator");
    expect_compare(from_reversed, parity, MPI_CONGRUENT, "create(reversed, parity group) vs parity");

    /* the empty group: nobody gets a communicator */
    MPI_Comm none;
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &none));
    CHECK(none == MPI_COMM_NULL, "MPI_Comm_create with MPI_GROUP_EMPTY gave a communicator");

    /* MPI_COMM_SELF splits into a communicator of one */
    MPI_Comm self_split;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_SELF, 0, 0, &self_split));
    expect_comm(self_split, &me, 1, "split of MPI_COMM_SELF");
    expect_compare(self_split, MPI_COMM_SELF, MPI_CONGRUENT, "self split vs self");

    MPI_Comm *comms[] = { &parity, &reversed, &ties, &without0, &sub, &first_half, &by_groups, &from_reversed,
                          &self_split };
    for (size_t i = 0; i < sizeof comms / sizeof *comms; i++) {
        if (*comms[i] != MPI_COMM_NULL) {
            CHECK_MPI(MPI_Comm_free(comms[i]));
            CHECK(*comms[i] == MPI_COMM_NULL, "MPI_Comm_free did not set the handle to MPI_COMM_NULL");
        }
    }
    MPI_Group_free(&world_group);
    MPI_Group_free(&half_group);
    MPI_Group_free(&parity_group);
    free(members);
    report_ok();
    MPI_Finalize();
    return 0;
}
