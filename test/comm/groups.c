/*
 * groups: every group call against results worked out by hand. Members are
 * checked as MPI_COMM_WORLD ranks (translated through the world group), so a
 * wrong order, a missing or an extra member all fail. Sizes 1..4 use the
 * general formulas; size 4 also checks a table of literal results.
 * Prints "rank R of S groups ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

static MPI_Group world_group;
static int me, n;

/* g must hold exactly the world ranks expected[0..count-1], in that order, and
 * this process's rank in g must be its position there (or MPI_UNDEFINED). */
static void expect_members(MPI_Group g, const int *expected, int count, const char *what)
{
    int size, rank, my_pos = MPI_UNDEFINED;
    CHECK_MPI(MPI_Group_size(g, &size));
    CHECK(size == count, "%s: size %d, expected %d", what, size, count);
    int *ranks = malloc((size_t)(count + 1) * sizeof *ranks);
    int *world = malloc((size_t)(count + 1) * sizeof *world);
    for (int i = 0; i < count; i++)
        ranks[i] = i;
    CHECK_MPI(MPI_Group_translate_ranks(g, count, ranks, world_group, world));
    for (int i = 0; i < count; i++) {
        CHECK(world[i] == expected[i], "%s: member %d is world rank %d, expected %d", what, i, world[i], expected[i]);
        if (expected[i] == me)
            my_pos = i;
    }
    CHECK_MPI(MPI_Group_rank(g, &rank));
    CHECK(rank == my_pos, "%s: MPI_Group_rank gives %d, expected %d", what, rank, my_pos);
    free(ranks);
    free(world);
}

static void expect_compare(MPI_Group a, MPI_Group b, int expected, const char *what)
{
    int result;
    CHECK_MPI(MPI_Group_compare(a, b, &result));
    CHECK(result == expected, "%s: MPI_Group_compare gives %d, expected %d", what, result, expected);
    CHECK_MPI(MPI_Group_compare(b, a, &result));
    CHECK(result == expected, "%s (swapped): MPI_Group_compare gives %d, expected %d", what, result, expected);
}

static void free_group(MPI_Group *g)
{
    CHECK_MPI(MPI_Group_free(g));
    CHECK(*g == MPI_GROUP_NULL, "MPI_Group_free did not set the handle to MPI_GROUP_NULL");
}

/* The literal table for 4 ranks. */
static void check_size4_table(void)
{
    MPI_Group g, h, e, ev;
    int ranks[4];

    int rev[] = { 3, 2, 1, 0 };
    CHECK_MPI(MPI_Group_incl(world_group, 4, rev, &g));
    expect_members(g, (int[]){ 3, 2, 1, 0 }, 4, "n4 incl {3,2,1,0}");
    int drop[] = { 0, 2 };
    CHECK_MPI(MPI_Group_excl(world_group, 2, drop, &e));
    expect_members(e, (int[]){ 1, 3 }, 2, "n4 excl {0,2}");
    CHECK_MPI(MPI_Group_incl(world_group, 2, drop, &ev));
    expect_members(ev, (int[]){ 0, 2 }, 2, "n4 incl {0,2}");

    int r1[][3] = { { 0, 3, 2 } };
    CHECK_MPI(MPI_Group_range_incl(world_group, 1, r1, &h));
    expect_members(h, (int[]){ 0, 2 }, 2, "n4 range_incl (0,3,2)");
    free_group(&h);
    int r2[][3] = { { 3, 0, -1 } };
    CHECK_MPI(MPI_Group_range_incl(world_group, 1, r2, &h));
    expect_members(h, (int[]){ 3, 2, 1, 0 }, 4, "n4 range_incl (3,0,-1)");
    free_group(&h);
    int r3[][3] = { { 3, 2, -1 }, { 0, 1, 1 } };
    CHECK_MPI(MPI_Group_range_incl(world_group, 2, r3, &h));
    expect_members(h, (int[]){ 3, 2, 0, 1 }, 4, "n4 range_incl (3,2,-1)(0,1,1)");
    MPI_Group u;
    CHECK_MPI(MPI_Group_union(h, e, &u));
    expect_members(u, (int[]){ 3, 2, 0, 1 }, 4, "n4 union [3,2,0,1] [1,3]");
    free_group(&u);
    free_group(&h);
    int r4[][3] = { { 0, 3, 3 }, { 1, 2, 1 } };
    CHECK_MPI(MPI_Group_range_incl(world_group, 2, r4, &h));
    expect_members(h, (int[]){ 0, 3, 1, 2 }, 4, "n4 range_incl (0,3,3)(1,2,1)");
    free_group(&h);
    /* strides that step over last: (3,0,-2) is 3, 1 and (0,2,3) is just 0 */
    int r5[][3] = { { 3, 0, -2 }, { 0, 2, 3 } };
    CHECK_MPI(MPI_Group_range_incl(world_group, 2, r5, &h));
    expect_members(h, (int[]){ 3, 1, 0 }, 3, "n4 range_incl (3,0,-2)(0,2,3)");
    free_group(&h);
    CHECK_MPI(MPI_Group_range_excl(world_group, 1, r1, &h));
    expect_members(h, (int[]){ 1, 3 }, 2, "n4 range_excl (0,3,2)");
    free_group(&h);
    int r6[][3] = { { 3, 3, 1 } };
    CHECK_MPI(MPI_Group_range_excl(world_group, 1, r6, &h));
    expect_members(h, (int[]){ 0, 1, 2 }, 3, "n4 range_excl (3,3,1)");
    free_group(&h);

    CHECK_MPI(MPI_Group_union(e, ev, &u));
    expect_members(u, (int[]){ 1, 3, 0, 2 }, 4, "n4 union [1,3] [0,2]");
    expect_compare(u, world_group, MPI_SIMILAR, "n4 union vs world");
    free_group(&u);
    CHECK_MPI(MPI_Group_intersection(g, e, &h));
    expect_members(h, (int[]){ 3, 1 }, 2, "n4 intersection [3,2,1,0] [1,3]");
    free_group(&h);
    CHECK_MPI(MPI_Group_difference(world_group, e, &h));
    expect_members(h, (int[]){ 0, 2 }, 2, "n4 difference world [1,3]");
    expect_compare(h, ev, MPI_IDENT, "n4 difference world [1,3] vs [0,2]");
    free_group(&h);
    CHECK_MPI(MPI_Group_difference(g, ev, &h));
    expect_members(h, (int[]){ 3, 1 }, 2, "n4 difference [3,2,1,0] [0,2]");
    free_group(&h);

    int all[] = { 0, 1, 2, 3 };
    CHECK_MPI(MPI_Group_translate_ranks(world_group, 4, all, g, ranks));
    CHECK(ranks[0] == 3 && ranks[1] == 2 && ranks[2] == 1 && ranks[3] == 0,
          "n4 translate world -> reversed: %d %d %d %d", ranks[0], ranks[1], ranks[2], ranks[3]);
    CHECK_MPI(MPI_Group_translate_ranks(world_group, 4, all, e, ranks));
    CHECK(ranks[0] == MPI_UNDEFINED && ranks[1] == 0 && ranks[2] == MPI_UNDEFINED && ranks[3] == 1,
          "n4 translate world -> [1,3]: %d %d %d %d", ranks[0], ranks[1], ranks[2], ranks[3]);
    expect_compare(e, ev, MPI_UNEQUAL, "n4 [1,3] vs [0,2]");
    expect_compare(g, world_group, MPI_SIMILAR, "n4 reversed vs world");
    free_group(&g);
    free_group(&e);
    free_group(&ev);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));

    int *ids = malloc((size_t)n * sizeof *ids), *exp = malloc((size_t)n * sizeof *exp);
    int *out = malloc((size_t)(n + 2) * sizeof *out), *in = malloc((size_t)(n + 2) * sizeof *in);
    for (int i = 0; i < n; i++)
        ids[i] = i;

    /* the world group, twice: equal content, and the identity translation */
    expect_members(world_group, ids, n, "world group");
    MPI_Group again;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &again));
    expect_compare(world_group, again, MPI_IDENT, "world group twice");
    free_group(&again);

    /* self and empty */
    MPI_Group self;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_SELF, &self));
    expect_members(self, &me, 1, "self group");
    expect_compare(self, world_group, n == 1 ? MPI_IDENT : MPI_UNEQUAL, "self vs world");
    int size, rank;
    CHECK_MPI(MPI_Group_size(MPI_GROUP_EMPTY, &size));
    CHECK_MPI(MPI_Group_rank(MPI_GROUP_EMPTY, &rank));
    CHECK(size == 0 && rank == MPI_UNDEFINED, "MPI_GROUP_EMPTY: size %d rank %d", size, rank);
    expect_compare(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, MPI_IDENT, "empty vs empty");
    expect_compare(MPI_GROUP_EMPTY, world_group, MPI_UNEQUAL, "empty vs world");

    /* incl: reversed order */
    MPI_Group rev;
    for (int i = 0; i < n; i++)
        exp[i] = n - 1 - i;
    CHECK_MPI(MPI_Group_incl(world_group, n, exp, &rev));
    expect_members(rev, exp, n, "incl reversed");
    expect_compare(rev, world_group, n == 1 ? MPI_IDENT : MPI_SIMILAR, "reversed vs world");

    /* incl of nothing is the empty group; excl of nothing is the same group */
    MPI_Group g;
    CHECK_MPI(MPI_Group_incl(world_group, 0, NULL, &g));
    expect_members(g, NULL, 0, "incl none");
    expect_compare(g, MPI_GROUP_EMPTY, MPI_IDENT, "incl none vs MPI_GROUP_EMPTY");
    free_group(&g);
    CHECK_MPI(MPI_Group_excl(rev, 0, NULL, &g));
    expect_compare(g, rev, MPI_IDENT, "excl none vs the group");
    free_group(&g);

    /* excl the even ranks: the odd ones remain, in order */
    int nev = 0, nodd = 0;
    int *evens = malloc((size_t)n * sizeof *evens), *odds = malloc((size_t)n * sizeof *odds);
    for (int i = 0; i < n; i++) {
        if (i % 2) odds[nodd++] = i;
        else evens[nev++] = i;
    }
    MPI_Group odd_group, even_group;
    CHECK_MPI(MPI_Group_excl(world_group, nev, evens, &odd_group));
    expect_members(odd_group, odds, nodd, "excl evens");
    CHECK_MPI(MPI_Group_incl(world_group, nev, evens, &even_group));
    expect_members(even_group, evens, nev, "incl evens");

    /* range_incl / range_excl */
    int r_even[][3] = { { 0, n - 1, 2 } };
    CHECK_MPI(MPI_Group_range_incl(world_group, 1, r_even, &g));
    expect_members(g, evens, nev, "range_incl (0,n-1,2)");
    expect_compare(g, even_group, MPI_IDENT, "range_incl evens vs incl evens");
    free_group(&g);
    CHECK_MPI(MPI_Group_range_excl(world_group, 1, r_even, &g));
    expect_members(g, odds, nodd, "range_excl (0,n-1,2)");
    free_group(&g);
    int r_rev[][3] = { { n - 1, 0, -1 } };
    CHECK_MPI(MPI_Group_range_incl(world_group, 1, r_rev, &g));
    expect_members(g, exp, n, "range_incl (n-1,0,-1)");
    free_group(&g);
    CHECK_MPI(MPI_Group_range_excl(world_group, 1, r_rev, &g));
    expect_members(g, NULL, 0, "range_excl everything");
    free_group(&g);
    CHECK_MPI(MPI_Group_range_incl(world_group, 0, NULL, &g));
    expect_members(g, NULL, 0, "range_incl nothing");
    free_group(&g);
    if (n >= 2) {
        /* top half descending, then bottom half ascending */
        int half = n / 2, k = 0;
        int r_two[][3] = { { n - 1, half, -1 }, { 0, half - 1, 1 } };
        for (int i = n - 1; i >= half; i--) out[k++] = i;
        for (int i = 0; i < half; i++) out[k++] = i;
        CHECK_MPI(MPI_Group_range_incl(world_group, 2, r_two, &g));
        expect_members(g, out, n, "range_incl two triplets");
        free_group(&g);
    }

    /* union, intersection, difference */
    MPI_Group u;
    CHECK_MPI(MPI_Group_union(odd_group, even_group, &u));
    memcpy(out, odds, (size_t)nodd * sizeof *out);
    memcpy(out + nodd, evens, (size_t)nev * sizeof *out);
    expect_members(u, out, n, "union odds evens");
    free_group(&u);
    CHECK_MPI(MPI_Group_union(world_group, rev, &u));
    expect_compare(u, world_group, MPI_IDENT, "union world reversed vs world");
    free_group(&u);
    CHECK_MPI(MPI_Group_union(MPI_GROUP_EMPTY, rev, &u));
    expect_members(u, exp, n, "union empty reversed");
    free_group(&u);
    CHECK_MPI(MPI_Group_intersection(rev, odd_group, &g));
    int k = 0;
    for (int i = n - 1; i >= 0; i--)
        if (i % 2) out[k++] = i;
    expect_members(g, out, k, "intersection reversed odds");
    free_group(&g);
    CHECK_MPI(MPI_Group_intersection(odd_group, even_group, &g));
    expect_members(g, NULL, 0, "intersection odds evens");
    free_group(&g);
    CHECK_MPI(MPI_Group_difference(world_group, odd_group, &g));
    expect_members(g, evens, nev, "difference world odds");
    free_group(&g);
    CHECK_MPI(MPI_Group_difference(odd_group, world_group, &g));
    expect_members(g, NULL, 0, "difference odds world");
    free_group(&g);
    CHECK_MPI(MPI_Group_difference(rev, MPI_GROUP_EMPTY, &g));
    expect_members(g, exp, n, "difference reversed empty");
    free_group(&g);

    /* translate: PROC_NULL stays, members outside the target are UNDEFINED */
    for (int i = 0; i < n; i++)
        in[i] = i;
    in[n] = MPI_PROC_NULL;
    CHECK_MPI(MPI_Group_translate_ranks(world_group, n + 1, in, odd_group, out));
    for (int i = 0; i < n; i++)
        CHECK(out[i] == (i % 2 ? i / 2 : MPI_UNDEFINED), "translate world %d -> odds gives %d", i, out[i]);
    CHECK(out[n] == MPI_PROC_NULL, "translate MPI_PROC_NULL gives %d", out[n]);
    CHECK_MPI(MPI_Group_translate_ranks(rev, n, in, rev, out));
    for (int i = 0; i < n; i++)
        CHECK(out[i] == i, "translate reversed -> reversed %d gives %d", i, out[i]);
    CHECK_MPI(MPI_Group_translate_ranks(world_group, 0, NULL, rev, NULL));
    CHECK_MPI(MPI_Group_translate_ranks(self, 1, (int[]){ 0 }, world_group, out));
    CHECK(out[0] == me, "translate self 0 -> world gives %d, expected %d", out[0], me);

    if (n >= 2) {
        expect_compare(odd_group, world_group, MPI_UNEQUAL, "odds vs world");
        expect_compare(odd_group, even_group, MPI_UNEQUAL, "odds vs evens");
    }
    if (n == 4)
        check_size4_table();

    free_group(&odd_group);
    free_group(&even_group);
    free_group(&rev);
    free_group(&self);
    MPI_Group empty = MPI_GROUP_EMPTY;
    CHECK_MPI(MPI_Group_free(&empty)); /* allowed: calls above return it */
    free_group(&world_group);
    free(ids);
    free(exp);
    free(out);
    free(in);
    free(evens);
    free(odds);
    report_ok();
    MPI_Finalize();
    return 0;
}
