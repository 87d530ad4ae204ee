/*
 * Node-aware (two-level) collectives on communicators spanning several
 * (virtual) nodes: Barrier, Bcast, Reduce, Allreduce, Allgather, Gather,
 * Scatter in the blocking,
 * nonblocking and persistent forms, every root, MPI_IN_PLACE, a strided
 * type (gaps untouched), a non-commutative user op, against serial
 * references, on MPI_COMM_WORLD, a duplicate, a split with the even ranks
 * first (nodes no longer consecutive ranks), a split of the even ranks, and a
 * duplicate with the hint hashi_coll_hier=off; then nonblocking collectives
 * on four of them outstanding together.
 *
 * Which algorithm ran is visible in the result of a non-commutative op that
 * records its bracketing: "(xy)" for x op y. A two-level reduction combines
 * every node's members before anything else, so each node with several
 * members is a subterm; the flat recursive doubling and binomial tree at 5
 * and 6 ranks on 2 nodes (5 on 3) are not. Arguments: what world's result
 * must show, hier (the nodes first), flat (not) or any (no claim); then the
 * same for a duplicate with the hint hashi_coll_hier=off (default any). The node layout
 * is HASHI_VNODES' block distribution (node i: ranks [i n / k, (i + 1) n / k)).
 * Gather and Scatter give the same results either way: the claim is checked
 * on the MPI_T counters coll_hier_gathers / coll_hier_scatters instead
 * (hier: some two-level runs were built on that communicator; flat: none).
 */
#include "../util/check.h"
#include "../util/pvar.h"

#include <stdint.h>
#include <unistd.h>

enum mode { BLOCKING, NONBLOCKING, PERSISTENT, NMODES };
static const char *const mode_name[] = { "blocking", "nonblocking", "persistent" };
enum expect { EXPECT_ANY, EXPECT_HIER, EXPECT_FLAT };

#define TREE_LEN 64                 /* bytes of one bracketing string */
static MPI_Datatype tree_type;      /* TREE_LEN chars */
static MPI_Op tree_op;              /* (in inout): non-commutative */
static MPI_Datatype strided_int;    /* every other int of 2 */
static int vnodes = 1;

static int iterations(enum mode m)
{
    return m == PERSISTENT ? 3 : 1;
}

static void start(enum mode m, MPI_Request *req)
{
    if (m == PERSISTENT)
        CHECK_MPI(MPI_Start(req));
}

static void complete(enum mode m, MPI_Request *req)
{
    if (m != BLOCKING)
        CHECK_MPI(MPI_Wait(req, MPI_STATUS_IGNORE));
}

static void finish(enum mode m, MPI_Request *req)
{
    if (m == PERSISTENT)
        CHECK_MPI(MPI_Request_free(req));
}

static void tree_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    CHECK(*type == tree_type, "the tree op got another datatype");
    for (int i = 0; i < *len; i++) {
        char *a = (char *)in + i * TREE_LEN, *b = (char *)inout + i * TREE_LEN;
        char out[TREE_LEN] = {0};   /* all of it is sent on: no bytes left undefined past the string */
        int w = snprintf(out, sizeof out, "(%s%s)", a, b);
        CHECK(w > 0 && w < TREE_LEN, "bracketing too long");
        memcpy(b, out, TREE_LEN);
    }
}

/* World rank w's node under HASHI_VNODES. */
static int node_of_world(int w, int n)
{
    int node = 0;
    while ((long)(node + 1) * n / vnodes <= w)
        node++;
    return node;
}

/*
 * A bracketing of the leaves 'a' + i for i = 0 .. n-1 of comm: they must
 * come in rank order. Returns whether every node holding several members of
 * comm is one subterm.
 */
static int check_tree(const char *t, MPI_Comm comm, const char *what)
{
    int n, wn;
    MPI_Comm_size(comm, &n);
    MPI_Comm_size(MPI_COMM_WORLD, &wn);
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int ranks[64], world[64];
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    MPI_Group_translate_ranks(g, n, ranks, wg, world);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);

    /* Leaves in order; every subterm as a range of leaves [lo, hi]. */
    int stack[64], sp = 0, leaves = 0, nsub = 0, lo[64], hi[64];
    for (const char *p = t; *p; p++) {
        if (*p == '(') {
            stack[sp++] = leaves;
        } else if (*p == ')') {
            CHECK(sp > 0, "%s: unbalanced bracketing %s", what, t);
            lo[nsub] = stack[--sp];
            hi[nsub++] = leaves - 1;
        } else {
            CHECK(*p == 'a' + leaves, "%s: %s is not in rank order", what, t);
            leaves++;
        }
    }
    CHECK(sp == 0 && leaves == n, "%s: %s does not combine the %d ranks once each", what, t, n);

    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && node_of_world(world[j + 1], wn) == node_of_world(world[i], wn))
            j++;
        if (j > i) {
            int found = 0;
            for (int k = 0; k < nsub; k++)
                found |= lo[k] == i && hi[k] == j;
            if (!found)
                return 0;
        }
        i = j + 1;
    }
    return 1;
}

static void check_expect(const char *t, MPI_Comm comm, enum expect e, const char *what)
{
    int nodes_first = check_tree(t, comm, what);
    CHECK(e != EXPECT_HIER || nodes_first, "%s: %s: the nodes were not reduced first (two-level did not run)", what, t);
    CHECK(e != EXPECT_FLAT || !nodes_first, "%s: %s: the nodes were reduced first (expected the flat algorithm)",
          what, t);
}

/* ---- data and references ---- */

static int value(int rank, long i, int it)
{
    return (int)((rank + 1) * 1000003L + i * 7 + it * 13) % 100000;
}

static void test_barrier(MPI_Comm comm)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int m = 0; m < NMODES; m++) {
        MPI_Request req = MPI_REQUEST_NULL;
        if (m == PERSISTENT)
            CHECK_MPI(MPI_Barrier_init(comm, MPI_INFO_NULL, &req));
        for (int late = 0; late < n; late++) {
            /* Rank `late` arrives 20 ms late: nobody may leave before it
             * arrived (CLOCK_MONOTONIC is shared on this machine). */
            double arrived = 0;
            if (r == late) {
                usleep(20000);
                arrived = MPI_Wtime();
            }
            if (m == BLOCKING)
                CHECK_MPI(MPI_Barrier(comm));
            else if (m == NONBLOCKING)
                CHECK_MPI(MPI_Ibarrier(comm, &req));
            else
                start(m, &req);
            complete(m, &req);
            double left = MPI_Wtime();
            CHECK_MPI(MPI_Bcast(&arrived, 1, MPI_DOUBLE, late, comm));
            CHECK(left >= arrived, "%s barrier: left at %.6f before rank %d arrived at %.6f", mode_name[m], left,
                  late, arrived);
        }
        finish(m, &req);
    }
}

/* count ints, contiguous or strided (every other int: the gaps keep -1). */
static void test_bcast(MPI_Comm comm, long count, int strided, int root, enum mode m)
{
    int r;
    MPI_Comm_rank(comm, &r);
    long len = strided ? 2 * count : count;
    int *buf = malloc((size_t)(len ? len : 1) * sizeof *buf);
    MPI_Datatype type = strided ? strided_int : MPI_INT;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        for (long i = 0; i < len; i++)
            buf[i] = strided && i % 2 ? -1 : r == root ? value(root, strided ? i / 2 : i, it) : -2;
        if (m == BLOCKING)
            CHECK_MPI(MPI_Bcast_c(buf, count, type, root, comm));
        else if (m == NONBLOCKING)
            CHECK_MPI(MPI_Ibcast_c(buf, count, type, root, comm, &req));
        else if (it == 0)
            CHECK_MPI(MPI_Bcast_init_c(buf, count, type, root, comm, MPI_INFO_NULL, &req));
        start(m, &req);
        complete(m, &req);
        for (long i = 0; i < len; i++) {
            int want = strided && i % 2 ? -1 : value(root, strided ? i / 2 : i, it);
            CHECK(buf[i] == want, "%s bcast of %ld from %d: [%ld] = %d, want %d", mode_name[m], count, root, i,
                  buf[i], want);
        }
    }
    finish(m, &req);
    free(buf);
}

/* MPI_SUM over count ints (strided or not), root < 0: Allreduce. */
static void test_sum(MPI_Comm comm, long count, int strided, int in_place, int root, enum mode m)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long len = strided ? 2 * count : count;
    int *in = malloc((size_t)(len ? len : 1) * sizeof *in), *out = malloc((size_t)(len ? len : 1) * sizeof *out);
    MPI_Datatype type = strided ? strided_int : MPI_INT;
    int gets = root < 0 || r == root, ip = in_place && gets;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        int *data = ip ? out : in;
        for (long i = 0; i < len; i++) {
            data[i] = strided && i % 2 ? -1 : value(r, strided ? i / 2 : i, it);
            if (!ip)
                out[i] = -3;
        }
        const void *sb = ip ? MPI_IN_PLACE : in;
        if (m == BLOCKING)
            CHECK_MPI(root < 0 ? MPI_Allreduce_c(sb, out, count, type, MPI_SUM, comm)
                               : MPI_Reduce_c(sb, out, count, type, MPI_SUM, root, comm));
        else if (m == NONBLOCKING)
            CHECK_MPI(root < 0 ? MPI_Iallreduce_c(sb, out, count, type, MPI_SUM, comm, &req)
                               : MPI_Ireduce_c(sb, out, count, type, MPI_SUM, root, comm, &req));
        else if (it == 0)
            CHECK_MPI(root < 0 ? MPI_Allreduce_init_c(sb, out, count, type, MPI_SUM, comm, MPI_INFO_NULL, &req)
                               : MPI_Reduce_init_c(sb, out, count, type, MPI_SUM, root, comm, MPI_INFO_NULL, &req));
        start(m, &req);
        complete(m, &req);
        if (!gets)
            continue;
        for (long i = 0; i < len; i++) {
            int want = -1;
            if (!strided || i % 2 == 0) {
                want = 0;
                for (int q = 0; q < n; q++)
                    want += value(q, strided ? i / 2 : i, it);
            } else if (!ip) {
                want = -3;   /* gaps of recvbuf untouched */
            }
            CHECK(out[i] == want, "%s %s of %ld%s%s (root %d): [%ld] = %d, want %d", mode_name[m],
                  root < 0 ? "allreduce" : "reduce", count, strided ? " strided" : "", ip ? " in place" : "", root,
                  i, out[i], want);
        }
    }
    finish(m, &req);
    free(in);
    free(out);
}

/* Allgather of count ints a rank: sent contiguous, received strided (the
 * gaps keep -1) or contiguous; in place on every rank or none. */
static void test_allgather(MPI_Comm comm, long count, int strided, int in_place, enum mode m)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long len = (strided ? 2 : 1) * count * n;
    int *in = malloc((size_t)(count ? count : 1) * sizeof *in), *out = malloc((size_t)(len ? len : 1) * sizeof *out);
    MPI_Datatype rtype = strided ? strided_int : MPI_INT;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        for (long i = 0; i < len; i++)
            out[i] = strided && i % 2 ? -1 : -3;
        for (long i = 0; i < count; i++) {
            in[i] = value(r, i, it);
            if (in_place)
                out[(strided ? 2 : 1) * (r * count + i)] = in[i];
        }
        const void *sb = in_place ? MPI_IN_PLACE : in;
        if (m == BLOCKING)
            CHECK_MPI(MPI_Allgather_c(sb, count, MPI_INT, out, count, rtype, comm));
        else if (m == NONBLOCKING)
            CHECK_MPI(MPI_Iallgather_c(sb, count, MPI_INT, out, count, rtype, comm, &req));
        else if (it == 0)
            CHECK_MPI(MPI_Allgather_init_c(sb, count, MPI_INT, out, count, rtype, comm, MPI_INFO_NULL, &req));
        start(m, &req);
        complete(m, &req);
        for (long i = 0; i < len; i++) {
            long e = strided ? i / 2 : i;
            int want = strided && i % 2 ? -1 : value((int)(e / count), e % count, it);
            CHECK(out[i] == want, "%s allgather of %ld%s%s: [%ld] = %d, want %d", mode_name[m], count,
                  strided ? " strided" : "", in_place ? " in place" : "", i, out[i], want);
        }
    }
    finish(m, &req);
    free(in);
    free(out);
}

/* Gather (scatter = 0) or Scatter of count ints a rank, root's side
 * strided (gaps keep -1) or contiguous, in place at the root or not. */
static void test_rooted(MPI_Comm comm, int scatter, long count, int strided, int in_place, int root, enum mode m)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long len = (strided ? 2 : 1) * count * n, step = strided ? 2 : 1;
    int *mine = malloc((size_t)count * sizeof *mine), *all = malloc((size_t)len * sizeof *all);
    MPI_Datatype root_type = strided ? strided_int : MPI_INT;
    int ip = in_place && r == root;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        for (long i = 0; i < len; i++)
            all[i] = strided && i % 2 ? -1 : -3;
        for (long i = 0; i < count; i++)
            mine[i] = scatter ? -3 : value(r, i, it);
        if (scatter && r == root)
            for (long e = 0; e < count * n; e++)
                all[step * e] = value((int)(e / count), e % count, it);
        if (ip && !scatter)
            for (long i = 0; i < count; i++)
                all[step * (r * count + i)] = value(r, i, it);
        if (!scatter) {
            const void *sb = ip ? MPI_IN_PLACE : mine;
            if (m == BLOCKING)
                CHECK_MPI(MPI_Gather_c(sb, count, MPI_INT, all, count, root_type, root, comm));
            else if (m == NONBLOCKING)
                CHECK_MPI(MPI_Igather_c(sb, count, MPI_INT, all, count, root_type, root, comm, &req));
            else if (it == 0)
                CHECK_MPI(MPI_Gather_init_c(sb, count, MPI_INT, all, count, root_type, root, comm, MPI_INFO_NULL,
                                            &req));
        } else {
            void *rb = ip ? MPI_IN_PLACE : mine;
            if (m == BLOCKING)
                CHECK_MPI(MPI_Scatter_c(all, count, root_type, rb, count, MPI_INT, root, comm));
            else if (m == NONBLOCKING)
                CHECK_MPI(MPI_Iscatter_c(all, count, root_type, rb, count, MPI_INT, root, comm, &req));
            else if (it == 0)
                CHECK_MPI(MPI_Scatter_init_c(all, count, root_type, rb, count, MPI_INT, root, comm, MPI_INFO_NULL,
                                             &req));
        }
        start(m, &req);
        complete(m, &req);
        const char *what = scatter ? "scatter" : "gather";
        if (!scatter && r == root) {
            for (long i = 0; i < len; i++) {
                long e = strided ? i / 2 : i;
                int want = strided && i % 2 ? -1 : value((int)(e / count), e % count, it);
                CHECK(all[i] == want, "%s %s of %ld%s%s (root %d): [%ld] = %d, want %d", mode_name[m], what, count,
                      strided ? " strided" : "", ip ? " in place" : "", root, i, all[i], want);
            }
        }
        if (scatter && !ip) {
            for (long i = 0; i < count; i++)
                CHECK(mine[i] == value(r, i, it), "%s %s of %ld%s (root %d): [%ld] = %d, want %d", mode_name[m], what,
                      count, strided ? " strided" : "", root, i, mine[i], value(r, i, it));
        }
    }
    finish(m, &req);
    free(mine);
    free(all);
}

/* The bracketing op over 2 elements (both must agree); root < 0: Allreduce. */
static void test_tree(MPI_Comm comm, int root, enum mode m, enum expect e)
{
    int r;
    MPI_Comm_rank(comm, &r);
    char in[2][TREE_LEN] = { { 0 } }, out[2][TREE_LEN];
    in[0][0] = in[1][0] = (char)('a' + r);
    int gets = root < 0 || r == root, ip = gets && r % 2;   /* some ranks in place */
    if (ip)
        memcpy(out, in, sizeof out);
    MPI_Request req = MPI_REQUEST_NULL;
    const void *sb = ip ? MPI_IN_PLACE : (const void *)in;
    for (int it = 0; it < iterations(m); it++) {
        if (m == BLOCKING)
            CHECK_MPI(root < 0 ? MPI_Allreduce(sb, out, 2, tree_type, tree_op, comm)
                               : MPI_Reduce(sb, out, 2, tree_type, tree_op, root, comm));
        else if (m == NONBLOCKING)
            CHECK_MPI(root < 0 ? MPI_Iallreduce(sb, out, 2, tree_type, tree_op, comm, &req)
                               : MPI_Ireduce(sb, out, 2, tree_type, tree_op, root, comm, &req));
        else if (it == 0)
            CHECK_MPI(root < 0 ? MPI_Allreduce_init(sb, out, 2, tree_type, tree_op, comm, MPI_INFO_NULL, &req)
                               : MPI_Reduce_init(sb, out, 2, tree_type, tree_op, root, comm, MPI_INFO_NULL, &req));
        start(m, &req);
        complete(m, &req);
        if (gets) {
            char what[96];
            snprintf(what, sizeof what, "%s %s (root %d)", mode_name[m], root < 0 ? "allreduce" : "reduce", root);
            CHECK(strcmp(out[0], out[1]) == 0, "%s: elements differ: %s %s", what, out[0], out[1]);
            check_expect(out[0], comm, e, what);
            if (ip)
                memcpy(out, in, sizeof out);   /* the next start's input */
        }
    }
    finish(m, &req);
}

static void battery(MPI_Comm comm, enum expect e)
{
    int n;
    MPI_Comm_size(comm, &n);
    test_barrier(comm);
    static const long counts[] = { 1, 7, 300, 20000 };
    for (int m = 0; m < NMODES; m++) {
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            int big = counts[k] > 1000;
            for (int root = 0; root < n; root += big ? n - 1 : 1) {
                test_bcast(comm, counts[k], 0, root, m);
                test_sum(comm, counts[k], 0, root % 2, root, m);
            }
            test_sum(comm, counts[k], 0, 0, -1, m);
            test_sum(comm, counts[k], 0, 1, -1, m);
        }
        for (int root = 0; root < n; root++) {
            test_bcast(comm, 5, 1, root, m);
            test_sum(comm, 5, 1, root % 2, root, m);
            test_tree(comm, root, m, e);
        }
        test_sum(comm, 5, 1, 1, -1, m);
        test_sum(comm, 5, 1, 0, -1, m);
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
            test_allgather(comm, counts[k] / 2 + 1, (int)k % 2, (int)(k / 2) % 2, m);
        unsigned long long gathers = counter_value("coll_hier_gathers"), scatters = counter_value("coll_hier_scatters");
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            int big = counts[k] > 1000;
            for (int root = 0; root < n; root += big ? n - 1 : 1) {
                test_rooted(comm, 0, counts[k], (int)k % 2, root % 2, root, m);
                test_rooted(comm, 1, counts[k], (int)(k + 1) % 2, (root + 1) % 2, root, m);
            }
        }
        /* The counters are per process: every member builds its own. */
        gathers = counter_value("coll_hier_gathers") - gathers;
        scatters = counter_value("coll_hier_scatters") - scatters;
        if (e != EXPECT_ANY)
            CHECK(e == EXPECT_HIER ? gathers > 0 && scatters > 0 : gathers == 0 && scatters == 0,
                  "%s: %llu two-level gathers and %llu scatters built, expected %s", mode_name[m], gathers, scatters,
                  e == EXPECT_HIER ? "some" : "none");
        test_tree(comm, -1, m, e);
    }
}

/* Four nonblocking collectives on four communicators in flight at once,
 * with a ring of point-to-point messages on world, completed back to front. */
static void concurrent(MPI_Comm world, MPI_Comm dup, MPI_Comm rev, MPI_Comm even)
{
    int r, n;
    MPI_Comm_rank(world, &r);
    MPI_Comm_size(world, &n);
    enum { N = 1000 };
    static int a_in[N], a_out[N], b[N], c_out[N], ring_in, ring_out;
    int rr, rn;
    MPI_Comm_rank(rev, &rr);
    MPI_Comm_size(rev, &rn);
    for (int round = 0; round < 3; round++) {
        MPI_Request req[7];
        int nreq = 0;
        for (int i = 0; i < N; i++) {
            a_in[i] = value(r, i, round);
            b[i] = rr == round % rn ? value(99, i, round) : -1;
            c_out[i] = -1;
        }
        ring_out = r * 10 + round;
        CHECK_MPI(MPI_Irecv(&ring_in, 1, MPI_INT, (r + n - 1) % n, round, world, &req[nreq++]));
        CHECK_MPI(MPI_Iallreduce(a_in, a_out, N, MPI_INT, MPI_SUM, dup, &req[nreq++]));
        CHECK_MPI(MPI_Ibcast(b, N, MPI_INT, round % rn, rev, &req[nreq++]));
        CHECK_MPI(MPI_Ireduce(a_in, c_out, N, MPI_INT, MPI_MAX, 0, world, &req[nreq++]));
        if (even != MPI_COMM_NULL)
            CHECK_MPI(MPI_Ibarrier(even, &req[nreq++]));
        CHECK_MPI(MPI_Isend(&ring_out, 1, MPI_INT, (r + 1) % n, round, world, &req[nreq++]));
        for (int i = nreq - 1; i >= 0; i--)
            CHECK_MPI(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
        CHECK(ring_in == ((r + n - 1) % n) * 10 + round, "ring: got %d", ring_in);
        for (int i = 0; i < N; i++) {
            int sum = 0, max = 0;
            for (int q = 0; q < n; q++) {
                sum += value(q, i, round);
                max = value(q, i, round) > max ? value(q, i, round) : max;
            }
            CHECK(a_out[i] == sum, "concurrent iallreduce [%d] = %d, want %d", i, a_out[i], sum);
            CHECK(b[i] == value(99, i, round), "concurrent ibcast [%d] = %d", i, b[i]);
            CHECK(r != 0 || c_out[i] == max, "concurrent ireduce [%d] = %d, want %d", i, c_out[i], max);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(n <= 26, "at most 26 ranks");
    enum expect e = EXPECT_ANY;
    if (argc > 1 && strcmp(argv[1], "hier") == 0)
        e = EXPECT_HIER;
    else if (argc > 1 && strcmp(argv[1], "flat") == 0)
        e = EXPECT_FLAT;
    enum expect e_off = EXPECT_ANY;
    if (argc > 2 && strcmp(argv[2], "hier") == 0)
        e_off = EXPECT_HIER;
    else if (argc > 2 && strcmp(argv[2], "flat") == 0)
        e_off = EXPECT_FLAT;
    const char *v = getenv("HASHI_VNODES");
    vnodes = v && atoi(v) > 1 ? atoi(v) : 1;
    if (vnodes > n)
        vnodes = n;

    int provided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_Type_contiguous(TREE_LEN, MPI_CHAR, &tree_type));
    CHECK_MPI(MPI_Type_commit(&tree_type));
    CHECK_MPI(MPI_Op_create(tree_fn, 0, &tree_op));
    CHECK_MPI(MPI_Type_vector(1, 1, 2, MPI_INT, &strided_int));
    MPI_Datatype tmp = strided_int;
    CHECK_MPI(MPI_Type_create_resized(tmp, 0, 2 * sizeof(int), &strided_int));
    CHECK_MPI(MPI_Type_free(&tmp));
    CHECK_MPI(MPI_Type_commit(&strided_int));

    /* A nonblocking collective before any blocking one: the layout needs
     * no communication, so it runs on two levels from the first call. */
    MPI_Comm dup, rev, even, off;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    test_tree(dup, -1, NONBLOCKING, e);
    test_sum(dup, 7, 0, 0, -1, NONBLOCKING);

    battery(MPI_COMM_WORLD, e);
    battery(dup, e);
    /* Even world ranks first: every node's members are no longer
     * consecutive, so a non-commutative op must stay flat (rank order). */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, (r % 2) * n + r, &rev));
    battery(rev, EXPECT_ANY);
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, r % 2 ? MPI_UNDEFINED : 0, r, &even));
    if (even != MPI_COMM_NULL)
        battery(even, EXPECT_ANY);
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "hashi_coll_hier", "off"));
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &off));
    CHECK_MPI(MPI_Info_free(&info));
    battery(off, e_off);

    concurrent(MPI_COMM_WORLD, dup, rev, even);

    /* MPI_Comm_split_type(SHARED) still splits by (virtual) node. */
    MPI_Comm shared;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    int sn, want = 0;
    MPI_Comm_size(shared, &sn);
    for (int q = 0; q < n; q++)
        want += node_of_world(q, n) == node_of_world(r, n);
    CHECK(sn == want, "split_type SHARED: %d members, want %d", sn, want);
    test_sum(shared, 7, 0, 0, -1, BLOCKING);

    CHECK_MPI(MPI_Comm_free(&shared));
    CHECK_MPI(MPI_Comm_free(&off));
    if (even != MPI_COMM_NULL)
        CHECK_MPI(MPI_Comm_free(&even));
    CHECK_MPI(MPI_Comm_free(&rev));
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Op_free(&tree_op));
    CHECK_MPI(MPI_Type_free(&tree_type));
    CHECK_MPI(MPI_Type_free(&strided_int));
    printf("rank %d of %d ok\n", r, n);
    CHECK_MPI(MPI_T_finalize());
    MPI_Finalize();
    return 0;
}
