/*
 * inter: intercommunicators. MPI_COMM_WORLD is split two ways (by parity;
 * world rank 0 against the rest) and each pair of halves joined by
 * MPI_Intercomm_create over MPI_COMM_WORLD; then, on each: the local and
 * remote groups, point-to-point both ways with byte checks (status source,
 * MPI_ANY_SOURCE, tags, probe, truncation, MPI_PROC_NULL, MPI_ERR_RANK
 * against the remote size), merge with `high` both ways and equal, dup,
 * idup, split, the collectives with exact values, and the errors; last
 * MPI_Intercomm_create_from_groups. Prints "rank R of S inter ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

static int me, n;

/* One split of the world: my colour (0 or 1) and each side's members. */
struct sides {
    const char *name;
    int color;
    int local[64], nlocal;
    int remote[64], nremote;
};

static void make_sides(struct sides *s, const char *name, int (*color_of)(int))
{
    s->name = name;
    s->color = color_of(me);
    s->nlocal = s->nremote = 0;
    for (int r = 0; r < n; r++) {
        if (color_of(r) == s->color)
            s->local[s->nlocal++] = r;
        else
            s->remote[s->nremote++] = r;
    }
}

static int parity(int r) { return r % 2; }
static int first_alone(int r) { return r != 0; }

/* The world ranks of a group, in order. */
static void group_world(MPI_Group g, int *out, int count)
{
    MPI_Group world;
    int *ranks = malloc((size_t)count * sizeof *ranks);
    for (int i = 0; i < count; i++)
        ranks[i] = i;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_translate_ranks(g, count, ranks, world, out));
    MPI_Group_free(&world);
    free(ranks);
}

/* ic joins the two sides of s: sizes, ranks, both groups. */
static void expect_inter(MPI_Comm ic, const struct sides *s, const char *what)
{
    int flag = 0, size, rank, rsize, world[64];
    CHECK_MPI(MPI_Comm_test_inter(ic, &flag));
    CHECK(flag == 1, "%s %s: MPI_Comm_test_inter says %d", s->name, what, flag);
    CHECK_MPI(MPI_Comm_size(ic, &size));
    CHECK_MPI(MPI_Comm_rank(ic, &rank));
    CHECK_MPI(MPI_Comm_remote_size(ic, &rsize));
    CHECK(size == s->nlocal && rsize == s->nremote, "%s %s: size %d remote %d, expected %d %d", s->name, what, size,
          rsize, s->nlocal, s->nremote);
    CHECK(s->local[rank] == me, "%s %s: rank %d is world %d, not me (%d)", s->name, what, rank, s->local[rank], me);
    MPI_Group g;
    CHECK_MPI(MPI_Comm_group(ic, &g));
    group_world(g, world, size);
    MPI_Group_free(&g);
    for (int i = 0; i < size; i++)
        CHECK(world[i] == s->local[i], "%s %s: local member %d is world %d, expected %d", s->name, what, i, world[i],
              s->local[i]);
    CHECK_MPI(MPI_Comm_remote_group(ic, &g));
    group_world(g, world, rsize);
    MPI_Group_free(&g);
    for (int i = 0; i < rsize; i++)
        CHECK(world[i] == s->remote[i], "%s %s: remote member %d is world %d, expected %d", s->name, what, i,
              world[i], s->remote[i]);
}

/* Point-to-point both ways on ic. */
static void p2p(MPI_Comm ic, const struct sides *s, const char *what)
{
    int rank, rsize = s->nremote;
    MPI_Comm_rank(ic, &rank);
    MPI_Status st;
    /* Every process to every remote rank: (world, local rank, dest), tag 10 + local rank. */
    MPI_Request *reqs = malloc((size_t)rsize * sizeof *reqs);
    int(*out)[3] = malloc((size_t)rsize * sizeof *out);
    for (int d = 0; d < rsize; d++) {
        out[d][0] = me, out[d][1] = rank, out[d][2] = d;
        CHECK_MPI(MPI_Isend(out[d], 3, MPI_INT, d, 10 + rank, ic, &reqs[d]));
    }
    for (int src = rsize - 1; src >= 0; src--) {
        int got[3] = { -1, -1, -1 };
        /* MPI_ANY_TAG from the odd ones (only remote rank 0 sends another tag). */
        CHECK_MPI(MPI_Recv(got, 3, MPI_INT, src, src % 2 ? MPI_ANY_TAG : 10 + src, ic, &st));
        CHECK(got[0] == s->remote[src] && got[1] == src && got[2] == rank,
              "%s %s: from remote %d got (%d %d %d), expected (%d %d %d)", s->name, what, src, got[0], got[1], got[2],
              s->remote[src], src, rank);
        CHECK(st.MPI_SOURCE == src && st.MPI_TAG == 10 + src, "%s %s: status source %d tag %d, expected %d %d",
              s->name, what, st.MPI_SOURCE, st.MPI_TAG, src, 10 + src);
    }
    CHECK_MPI(MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE));
    /* MPI_ANY_SOURCE: one message from each remote rank. */
    for (int d = 0; d < rsize; d++)
        CHECK_MPI(MPI_Isend(&me, 1, MPI_INT, d, 50, ic, &reqs[d]));
    int seen[64] = { 0 };
    for (int i = 0; i < rsize; i++) {
        int got = -1, count = -1;
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 50, ic, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize && st.MPI_TAG == 50 && count == 1,
              "%s %s: ANY_SOURCE status source %d tag %d count %d", s->name, what, st.MPI_SOURCE, st.MPI_TAG, count);
        CHECK(got == s->remote[st.MPI_SOURCE] && !seen[st.MPI_SOURCE], "%s %s: ANY_SOURCE from %d carried %d",
              s->name, what, st.MPI_SOURCE, got);
        seen[st.MPI_SOURCE] = 1;
    }
    CHECK_MPI(MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE));
    free(reqs);
    free(out);
    /* Probe, truncation, PROC_NULL: the first members of both sides. */
    if (rank == 0) {
        int big[8], small[4] = { 0 }, count = -1;
        for (int i = 0; i < 8; i++)
            big[i] = me * 100 + i;
        MPI_Request r;
        CHECK_MPI(MPI_Isend(big, 8, MPI_INT, 0, 60, ic, &r));
        CHECK_MPI(MPI_Probe(0, 60, ic, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(st.MPI_SOURCE == 0 && count == 8, "%s %s: probe source %d count %d", s->name, what, st.MPI_SOURCE,
              count);
        int rc = MPI_Recv(small, 4, MPI_INT, 0, 60, ic, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "%s %s: an 8-int message into 4 gave class %d", s->name, what, cls);
        for (int i = 0; i < 4; i++)
            CHECK(small[i] == s->remote[0] * 100 + i, "%s %s: truncated int %d is %d", s->name, what, i, small[i]);
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        /* Partitioned: 2 partitions of 2 ints each way, and persistent. */
        int pout[4], pin[4] = { -1, -1, -1, -1 };
        for (int i = 0; i < 4; i++)
            pout[i] = me * 10 + i;
        MPI_Request pr[2];
        CHECK_MPI(MPI_Psend_init(pout, 2, 2, MPI_INT, 0, 61, ic, MPI_INFO_NULL, &pr[0]));
        CHECK_MPI(MPI_Precv_init(pin, 2, 2, MPI_INT, 0, 61, ic, MPI_INFO_NULL, &pr[1]));
        CHECK_MPI(MPI_Startall(2, pr));
        CHECK_MPI(MPI_Pready_range(0, 1, pr[0]));
        CHECK_MPI(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 4; i++)
            CHECK(pin[i] == s->remote[0] * 10 + i, "%s %s: partitioned int %d is %d", s->name, what, i, pin[i]);
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
        int one = -1;
        CHECK_MPI(MPI_Send_init(&me, 1, MPI_INT, 0, 62, ic, &pr[0]));
        CHECK_MPI(MPI_Recv_init(&one, 1, MPI_INT, 0, 62, ic, &pr[1]));
        CHECK_MPI(MPI_Startall(2, pr));
        CHECK_MPI(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
        CHECK(one == s->remote[0], "%s %s: persistent receive got %d", s->name, what, one);
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
        int x = 5;
        CHECK_MPI(MPI_Sendrecv(&me, 1, MPI_INT, MPI_PROC_NULL, 1, &x, 1, MPI_INT, MPI_PROC_NULL, 1, ic, &st));
        CHECK(x == 5 && st.MPI_SOURCE == MPI_PROC_NULL, "%s %s: PROC_NULL sendrecv", s->name, what);
    }
    CHECK_ERR(MPI_Send(&me, 1, MPI_INT, rsize, 0, ic), MPI_ERR_RANK, "MPI_Send");
    CHECK_ERR(MPI_Recv(&me, 1, MPI_INT, rsize + 1, 0, ic, &st), MPI_ERR_RANK, "MPI_Recv");
}

/* The collectives on ic, with exact values. */
static void collectives(MPI_Comm ic, const struct sides *s)
{
    int rank, ln = s->nlocal, rn = s->nremote;
    MPI_Comm_rank(ic, &rank);
    const char *w = s->name;
    CHECK_MPI(MPI_Barrier(ic));
    /* Allreduce: each side gets the other side's sums. */
    int in[2] = { rank, me }, out[2] = { -1, -1 }, want_ranks = rn * (rn - 1) / 2, want_world = 0;
    for (int i = 0; i < rn; i++)
        want_world += s->remote[i];
    CHECK_MPI(MPI_Allreduce(in, out, 2, MPI_INT, MPI_SUM, ic));
    CHECK(out[0] == want_ranks && out[1] == want_world, "%s allreduce: (%d %d), expected (%d %d)", w, out[0], out[1],
          want_ranks, want_world);
    MPI_Request r;
    out[0] = out[1] = -1;
    CHECK_MPI(MPI_Iallreduce(in, out, 2, MPI_INT, MPI_MAX, ic, &r));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(out[0] == rn - 1 && out[1] == s->remote[rn - 1], "%s iallreduce max: (%d %d)", w, out[0], out[1]);
    /* Bcast from colour 0's first member, then from colour 1's last. */
    for (int round = 0; round < 2; round++) {
        int root_color = round, root_local = round == 0 ? 0 : (s->color == 1 ? ln - 1 : rn - 1);
        int root_world = round == 0 ? (s->color == 0 ? s->local[0] : s->remote[0])
                                    : (s->color == 1 ? s->local[ln - 1] : s->remote[rn - 1]);
        int buf[3] = { -1, -1, -1 }, root;
        if (s->color == root_color) {
            root = rank == root_local ? MPI_ROOT : MPI_PROC_NULL;
            if (root == MPI_ROOT)
                buf[0] = me * 7, buf[1] = round, buf[2] = 42;
        } else {
            root = root_local;
        }
        if (round == 0) {
            CHECK_MPI(MPI_Bcast(buf, 3, MPI_INT, root, ic));
        } else {
            CHECK_MPI(MPI_Ibcast(buf, 3, MPI_INT, root, ic, &r));
            CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
        if (s->color != root_color)
            CHECK(buf[0] == root_world * 7 && buf[1] == round && buf[2] == 42, "%s bcast %d: (%d %d %d)", w, round,
                  buf[0], buf[1], buf[2]);
        else if (root == MPI_PROC_NULL)
            CHECK(buf[0] == -1, "%s bcast %d: a PROC_NULL member's buffer changed", w, round);
    }
    /* Reduce to colour 1's first member: the sum of colour 0's world ranks. */
    {
        int sum = -1, root = s->color == 1 ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        CHECK_MPI(MPI_Reduce(&me, &sum, 1, MPI_INT, MPI_SUM, root, ic));
        if (root == MPI_ROOT)
            CHECK(sum == want_world, "%s reduce: %d, expected %d", w, sum, want_world);
    }
    /* Allgather(v): the remote world ranks; v: rank i sends i + 1 copies. */
    int got[256], counts[64], displs[64], mine[64];
    CHECK_MPI(MPI_Allgather(&me, 1, MPI_INT, got, 1, MPI_INT, ic));
    for (int i = 0; i < rn; i++)
        CHECK(got[i] == s->remote[i], "%s allgather: block %d is %d", w, i, got[i]);
    for (int i = 0; i <= rank; i++)
        mine[i] = me;
    int total = 0;
    for (int i = 0; i < rn; i++)
        counts[i] = i + 1, displs[i] = total, total += i + 2;   /* a gap after each block */
    memset(got, 0xff, sizeof got);
    CHECK_MPI(MPI_Allgatherv(mine, rank + 1, MPI_INT, got, counts, displs, MPI_INT, ic));
    for (int i = 0; i < rn; i++) {
        for (int j = 0; j <= i; j++)
            CHECK(got[displs[i] + j] == s->remote[i], "%s allgatherv: block %d int %d is %d", w, i, j,
                  got[displs[i] + j]);
        CHECK(got[displs[i] + i + 1] == -1, "%s allgatherv: the gap after block %d was written", w, i);
    }
    /* Alltoall: to remote j, me * 100 + j. */
    int sendv[64];
    for (int j = 0; j < rn; j++)
        sendv[j] = me * 100 + j;
    CHECK_MPI(MPI_Alltoall(sendv, 1, MPI_INT, got, 1, MPI_INT, ic));
    for (int i = 0; i < rn; i++)
        CHECK(got[i] == s->remote[i] * 100 + rank, "%s alltoall: from %d got %d", w, i, got[i]);
    /* Gather to colour 0's first member; Scatter from colour 1's first. */
    {
        int root = s->color == 0 ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        memset(got, 0xff, sizeof got);
        CHECK_MPI(MPI_Gather(&me, 1, MPI_INT, got, 1, MPI_INT, root, ic));
        if (root == MPI_ROOT)
            for (int i = 0; i < rn; i++)
                CHECK(got[i] == s->remote[i], "%s gather: block %d is %d", w, i, got[i]);
        root = s->color == 1 ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        for (int j = 0; j < rn; j++)
            sendv[j] = 1000 + j;
        int one = -1;
        CHECK_MPI(MPI_Scatter(sendv, 1, MPI_INT, &one, 1, MPI_INT, root, ic));
        if (s->color == 0)
            CHECK(one == 1000 + rank, "%s scatter: got %d", w, one);
        /* Gatherv to colour 1's first member: rank i of colour 0 sends i + 1 copies. */
        memset(got, 0xff, sizeof got);
        CHECK_MPI(MPI_Gatherv(mine, rank + 1, MPI_INT, got, counts, displs, MPI_INT, root, ic));
        if (root == MPI_ROOT)
            for (int i = 0; i < rn; i++)
                for (int j = 0; j <= i; j++)
                    CHECK(got[displs[i] + j] == s->remote[i], "%s gatherv: block %d int %d is %d", w, i, j,
                          got[displs[i] + j]);
    }
    /* Alltoallv / Alltoallw: to remote j, j + 1 ints of me * 100 + j; a gap
     * after each received block. */
    {
        int sbuf[256], scounts[64], sdispls[64], rcounts2[64], rdispls2[64], off = 0;
        MPI_Datatype types[64];
        for (int j = 0; j < rn; j++) {
            scounts[j] = j + 1, sdispls[j] = off;
            for (int k = 0; k <= j; k++)
                sbuf[off + k] = me * 100 + j;
            off += j + 1;
        }
        for (int w_form = 0; w_form < 2; w_form++) {
            off = 0;
            for (int i = 0; i < rn; i++)
                rcounts2[i] = rank + 1, rdispls2[i] = off, off += rank + 2;
            memset(got, 0xff, sizeof got);
            if (!w_form) {
                CHECK_MPI(MPI_Alltoallv(sbuf, scounts, sdispls, MPI_INT, got, rcounts2, rdispls2, MPI_INT, ic));
            } else {
                int sd_bytes[64], rd_bytes[64];
                for (int j = 0; j < rn; j++)
                    sd_bytes[j] = sdispls[j] * (int)sizeof(int), rd_bytes[j] = rdispls2[j] * (int)sizeof(int),
                    types[j] = MPI_INT;
                CHECK_MPI(MPI_Alltoallw(sbuf, scounts, sd_bytes, types, got, rcounts2, rd_bytes, types, ic));
            }
            for (int i = 0; i < rn; i++) {
                for (int k = 0; k <= rank; k++)
                    CHECK(got[rdispls2[i] + k] == s->remote[i] * 100 + rank, "%s alltoall%s: block %d int %d is %d",
                          w, w_form ? "w" : "v", i, k, got[rdispls2[i] + k]);
                CHECK(got[rdispls2[i] + rank + 1] == -1, "%s alltoall%s: gap %d written", w, w_form ? "w" : "v", i);
            }
        }
        /* Scatterv from colour 0's last member: remote i gets i + 1 ints of 500 + i. */
        int root = s->color == 0 ? (rank == ln - 1 ? MPI_ROOT : MPI_PROC_NULL) : rn - 1;
        off = 0;
        for (int j = 0; j < rn; j++) {
            scounts[j] = j + 1, sdispls[j] = off;
            for (int k = 0; k <= j; k++)
                sbuf[off + k] = 500 + j;
            off += j + 1;
        }
        int mine2[64];
        memset(mine2, 0xff, sizeof mine2);
        CHECK_MPI(MPI_Scatterv(sbuf, scounts, sdispls, MPI_INT, mine2, rank + 1, MPI_INT, root, ic));
        if (s->color == 1)
            for (int k = 0; k <= rank; k++)
                CHECK(mine2[k] == 500 + rank, "%s scatterv: int %d is %d", w, k, mine2[k]);
    }
    /* Persistent: Allreduce_init started twice, Ibarrier. */
    {
        MPI_Request pr;
        int v = rank, sum = -1;
        CHECK_MPI(MPI_Allreduce_init(&v, &sum, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &pr));
        for (int round = 0; round < 2; round++) {
            v = rank + round;
            CHECK_MPI(MPI_Start(&pr));
            CHECK_MPI(MPI_Wait(&pr, MPI_STATUS_IGNORE));
            CHECK(sum == want_ranks + round * rn, "%s allreduce_init round %d: %d", w, round, sum);
        }
        MPI_Request_free(&pr);
        CHECK_MPI(MPI_Ibarrier(ic, &pr));
        CHECK_MPI(MPI_Wait(&pr, MPI_STATUS_IGNORE));
    }
    /* Reduce_scatter_block: each side's vectors of ln * rn elements, the
     * other side's sum scattered in blocks of rn here (of ln there). */
    {
        int T = ln * rn, *vec = malloc((size_t)T * sizeof *vec), res[64];
        for (int k = 0; k < T; k++)
            vec[k] = me * 1000 + k;
        CHECK_MPI(MPI_Ireduce_scatter_block(vec, res, rn, MPI_INT, MPI_SUM, ic, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int j = 0; j < rn; j++) {
            int k = rank * rn + j;
            CHECK(res[j] == 1000 * want_world + rn * k, "%s reduce_scatter_block: element %d is %d, expected %d", w,
                  j, res[j], 1000 * want_world + rn * k);
        }
        if (ln == rn) {
            /* Reduce_scatter: local rank i gets i + 1 elements (the same
             * total on both sides when they are as large). */
            int rcounts[64], off = 0;
            for (int i = 0; i < ln; i++)
                rcounts[i] = i + 1;
            int tot = ln * (ln + 1) / 2;
            for (int k = 0; k < tot; k++)
                vec[k] = me * 1000 + k;
            CHECK_MPI(MPI_Reduce_scatter(vec, res, rcounts, MPI_INT, MPI_SUM, ic));
            for (int i = 0; i < rank; i++)
                off += rcounts[i];
            for (int j = 0; j <= rank; j++)
                CHECK(res[j] == 1000 * want_world + rn * (off + j), "%s reduce_scatter: element %d is %d", w, j,
                      res[j]);
        }
        free(vec);
    }
    /* Errors: MPI_IN_PLACE, a root out of range. */
    CHECK_ERR(MPI_Allreduce(MPI_IN_PLACE, out, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_BUFFER, "MPI_Allreduce");
    CHECK_ERR(MPI_Bcast(out, 1, MPI_INT, rn, ic), MPI_ERR_ROOT, "MPI_Bcast");
    CHECK_MPI(MPI_Barrier(ic));
}

/* The merged communicator: the side with colour `first` comes first. */
static void expect_merged(MPI_Comm m, const struct sides *s, int local_first, const char *what)
{
    int order[64], k = 0, size, rank, world[64], flag = 1;
    const int *a = local_first ? s->local : s->remote, *b = local_first ? s->remote : s->local;
    int na = local_first ? s->nlocal : s->nremote, nb = local_first ? s->nremote : s->nlocal;
    for (int i = 0; i < na; i++)
        order[k++] = a[i];
    for (int i = 0; i < nb; i++)
        order[k++] = b[i];
    CHECK_MPI(MPI_Comm_test_inter(m, &flag));
    CHECK_MPI(MPI_Comm_size(m, &size));
    CHECK_MPI(MPI_Comm_rank(m, &rank));
    CHECK(!flag && size == n && order[rank] == me, "%s %s: inter %d size %d rank %d", s->name, what, flag, size,
          rank);
    MPI_Group g;
    CHECK_MPI(MPI_Comm_group(m, &g));
    group_world(g, world, size);
    MPI_Group_free(&g);
    for (int i = 0; i < n; i++)
        CHECK(world[i] == order[i], "%s %s: merged member %d is world %d, expected %d", s->name, what, i, world[i],
              order[i]);
    int sum = -1, got = -1;
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, m));
    CHECK(sum == n * (n - 1) / 2, "%s %s: allreduce of ranks %d", s->name, what, sum);
    CHECK_MPI(MPI_Sendrecv(&me, 1, MPI_INT, (rank + 1) % n, 3, &got, 1, MPI_INT, (rank + n - 1) % n, 3, m,
                           MPI_STATUS_IGNORE));
    CHECK(got == order[(rank + n - 1) % n], "%s %s: ring got %d", s->name, what, got);
}

/* Split of an intercommunicator by local parity, keys reversed. */
static void split(MPI_Comm ic, const struct sides *s)
{
    int rank;
    MPI_Comm_rank(ic, &rank);
    MPI_Comm piece;
    CHECK_MPI(MPI_Comm_split(ic, rank % 2, -rank, &piece));
    /* The pieces: my side's and the other side's members of my parity,
     * by descending rank. */
    int mine[64], theirs[64], nm = 0, nt = 0;
    for (int i = s->nlocal - 1; i >= 0; i--)
        if (i % 2 == rank % 2)
            mine[nm++] = s->local[i];
    for (int i = s->nremote - 1; i >= 0; i--)
        if (i % 2 == rank % 2)
            theirs[nt++] = s->remote[i];
    if (nt == 0) {
        CHECK(piece == MPI_COMM_NULL, "%s split: a colour the other side lacks gave a communicator", s->name);
        return;
    }
    struct sides p = { .name = s->name, .nlocal = nm, .nremote = nt };
    memcpy(p.local, mine, sizeof mine);
    memcpy(p.remote, theirs, sizeof theirs);
    expect_inter(piece, &p, "split");
    /* Each piece member greets the other piece's rank 0 and hears from it. */
    int prank, got = -1;
    MPI_Comm_rank(piece, &prank);
    MPI_Request r;
    CHECK_MPI(MPI_Isend(&me, 1, MPI_INT, 0, 4, piece, &r));
    if (prank == 0) {
        for (int i = 0; i < nt; i++) {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 4, piece, &st));
            CHECK(got == theirs[st.MPI_SOURCE], "%s split: from %d got %d", s->name, st.MPI_SOURCE, got);
        }
    }
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Comm_free(&piece));
}

/* MPI_Comm_create on an intercommunicator: each side keeps its even ranks,
 * in reverse order. */
static void create(MPI_Comm ic, const struct sides *s)
{
    int rank, keep[64], k = 0;
    MPI_Comm_rank(ic, &rank);
    for (int i = (s->nlocal - 1) / 2 * 2; i >= 0; i -= 2)
        keep[k++] = i;
    MPI_Group g, sub;
    CHECK_MPI(MPI_Comm_group(ic, &g));
    CHECK_MPI(MPI_Group_incl(g, k, keep, &sub));
    MPI_Comm c;
    CHECK_MPI(MPI_Comm_create(ic, sub, &c));
    MPI_Group_free(&sub);
    MPI_Group_free(&g);
    if (rank % 2) {
        CHECK(c == MPI_COMM_NULL, "%s create: an odd rank got a communicator", s->name);
        return;
    }
    struct sides p = { .name = s->name };
    for (int i = (s->nlocal - 1) / 2 * 2; i >= 0; i -= 2)
        p.local[p.nlocal++] = s->local[i];
    for (int i = (s->nremote - 1) / 2 * 2; i >= 0; i -= 2)
        p.remote[p.nremote++] = s->remote[i];
    expect_inter(c, &p, "create");
    p2p(c, &p, "create");
    MPI_Comm_free(&c);
}

static void one_split(const char *name, int (*color_of)(int))
{
    struct sides s;
    make_sides(&s, name, color_of);
    MPI_Comm local, ic;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, s.color, me, &local));
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, s.remote[0], 99, &ic));
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    expect_inter(ic, &s, "create");
    int result;
    CHECK_MPI(MPI_Comm_compare(ic, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_UNEQUAL, "%s: compare with WORLD %d", name, result);
    CHECK_MPI(MPI_Comm_compare(ic, ic, &result));
    CHECK(result == MPI_IDENT, "%s: compare with itself %d", name, result);
    p2p(ic, &s, "create");
    collectives(ic, &s);

    /* merge: high on colour 1, on colour 0, on neither */
    MPI_Comm m;
    CHECK_MPI(MPI_Intercomm_merge(ic, s.color == 1, &m));
    expect_merged(m, &s, s.color == 0, "merge high=colour 1");
    MPI_Comm_free(&m);
    CHECK_MPI(MPI_Intercomm_merge(ic, s.color == 0, &m));
    expect_merged(m, &s, s.color == 1, "merge high=colour 0");
    MPI_Comm_free(&m);
    CHECK_MPI(MPI_Intercomm_merge(ic, 0, &m));
    expect_merged(m, &s, s.local[0] < s.remote[0], "merge high=0 both");
    MPI_Comm_free(&m);

    /* dup: congruent, its own context (a message on ic does not match on the dup) */
    MPI_Comm d, di;
    CHECK_MPI(MPI_Comm_dup(ic, &d));
    expect_inter(d, &s, "dup");
    CHECK_MPI(MPI_Comm_compare(ic, d, &result));
    CHECK(result == MPI_CONGRUENT, "%s: compare with dup %d", name, result);
    int rank;
    MPI_Comm_rank(ic, &rank);
    if (rank == 0) {
        int a = 1, b = 2, got = -1;
        MPI_Request r[2];
        CHECK_MPI(MPI_Isend(&a, 1, MPI_INT, 0, 5, ic, &r[0]));
        CHECK_MPI(MPI_Isend(&b, 1, MPI_INT, 0, 5, d, &r[1]));
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, d, MPI_STATUS_IGNORE));
        CHECK(got == 2, "%s: the dup received %d (ic's message)", name, got);
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, 0, 5, ic, MPI_STATUS_IGNORE));
        CHECK(got == 1, "%s: ic received %d", name, got);
        CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    }
    MPI_Request ireq;
    CHECK_MPI(MPI_Comm_idup(ic, &di, &ireq));
    CHECK_MPI(MPI_Wait(&ireq, MPI_STATUS_IGNORE));
    expect_inter(di, &s, "idup");
    p2p(di, &s, "idup");
    collectives(di, &s);
    MPI_Comm_free(&di);
    MPI_Comm_free(&d);

    split(ic, &s);
    create(ic, &s);

    /* errors */
    MPI_Comm bad = MPI_COMM_NULL;
    MPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN);
    CHECK_ERR(MPI_Intercomm_create(local, s.nlocal, MPI_COMM_WORLD, s.remote[0], 98, &bad), MPI_ERR_RANK,
              "MPI_Intercomm_create");
    CHECK_ERR(MPI_Intercomm_create(ic, 0, MPI_COMM_WORLD, s.remote[0], 98, &bad), MPI_ERR_COMM,
              "MPI_Intercomm_create");
    CHECK_ERR(MPI_Intercomm_merge(local, 0, &bad), MPI_ERR_COMM, "MPI_Intercomm_merge");
    int dims[1] = { s.nlocal }, periods[1] = { 0 };
    CHECK_ERR(MPI_Cart_create(ic, 1, dims, periods, 0, &bad), MPI_ERR_COMM, "MPI_Cart_create");
    int index[1] = { 0 }, edges[1] = { 0 };
    CHECK_ERR(MPI_Graph_create(ic, 1, index, edges, 0, &bad), MPI_ERR_COMM, "MPI_Graph_create");
    CHECK_ERR(MPI_Comm_split_type(ic, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &bad), MPI_ERR_COMM,
              "MPI_Comm_split_type");
    int x = 0, y;
    CHECK_ERR(MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM, "MPI_Scan");
    CHECK(bad == MPI_COMM_NULL, "%s: a failed call set a communicator", name);
    MPI_Win win = MPI_WIN_NULL;
    CHECK_ERR(MPI_Win_create(&x, sizeof x, 1, MPI_INFO_NULL, ic, &win), MPI_ERR_COMM, "MPI_Win_create");
    CHECK(win == MPI_WIN_NULL, "%s: a failed MPI_Win_create set a window", name);

    CHECK_MPI(MPI_Comm_free(&ic));
    CHECK_MPI(MPI_Comm_free(&local));
}

static void from_groups(void)
{
    struct sides s;
    make_sides(&s, "from_groups", parity);
    MPI_Group world, lg, rg;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    CHECK_MPI(MPI_Group_incl(world, s.nlocal, s.local, &lg));
    CHECK_MPI(MPI_Group_incl(world, s.nremote, s.remote, &rg));
    MPI_Comm ic;
    /* Leaders: the first member of colour 0, the last of colour 1. */
    int local_leader = s.color == 1 ? s.nlocal - 1 : 0, remote_leader = s.color == 1 ? 0 : s.nremote - 1;
    CHECK_MPI(MPI_Intercomm_create_from_groups(lg, local_leader, rg, remote_leader, "hashi-test-inter",
                                               MPI_INFO_NULL, MPI_ERRORS_RETURN, &ic));
    expect_inter(ic, &s, "from_groups");
    p2p(ic, &s, "from_groups");
    collectives(ic, &s);
    MPI_Comm bad = MPI_COMM_NULL;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK_ERR(MPI_Intercomm_create_from_groups(lg, 0, rg, s.nremote, "x", MPI_INFO_NULL, MPI_ERRORS_RETURN, &bad),
              MPI_ERR_RANK, "MPI_Intercomm_create_from_groups");
    CHECK_ERR(MPI_Intercomm_create_from_groups(rg, 0, lg, 0, "x", MPI_INFO_NULL, MPI_ERRORS_RETURN, &bad),
              MPI_ERR_GROUP, "MPI_Intercomm_create_from_groups");
    MPI_Comm_free(&ic);
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(n >= 2 && n <= 64, "needs 2 to 64 ranks");
    one_split("parity", parity);
    if (n > 2)
        one_split("1+rest", first_alone);
    from_groups();
    report_ok();
    MPI_Finalize();
    return 0;
}
