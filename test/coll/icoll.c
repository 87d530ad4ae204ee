/*
 * icoll: many small nonblocking and persistent collectives outstanding at
 * once, the sizes a device runs itself (dimmnet: its LLCM channels, at most
 * HASHI_DIMMNET_COLL_MAX bytes and a few slots per peer), every result
 * checked against its serial value:
 *  - DEPTH (more than any device's slot ring) Ibarrier / Ibcast / Iallreduce
 *    / Ireduce / Iallgather / Ialltoall / Igather / Iscatter / Iscan / Iexscan
 *    / Ireduce_scatter_block on one communicator, completed in reverse order, by Waitany,
 *    and by Testsome while point-to-point messages go round a ring;
 *  - DEPTH Ibcasts (Iscatters) from one root, the receivers completing them
 *    in reverse; DEPTH Iscans, the ranks below running ahead of those above;
 *  - blocking collectives on the same communicator between them (one
 *    collective order per communicator);
 *  - two duplicates of world, a split and a reversed split at once, with the
 *    nonblocking calls on the two duplicates started in opposite orders on
 *    odd and even ranks (legal: only the order per communicator is fixed);
 *  - persistent Barrier / Bcast / Allreduce / Reduce requests started ROUNDS
 *    times, alone, by Startall, and mixed with nonblocking calls;
 *  - a non-contiguous Ibcast, an MPI_IN_PLACE Iallreduce, and an Iallreduce
 *    too large for a device slot between the small ones.
 * Prints 'rank R of S ok' last. Argument: the rounds (default 20).
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

#define DEPTH 32       /* outstanding at once on one communicator */
#define VEC 3          /* int64 elements of a small reduction */
#define MAXRANKS 16    /* an allgather's / alltoall's blocks fit a call's buffers */
#define KINDS 11
#define BIG 4096       /* int64 elements: above any device slot */

static int wrank, wsize;

/* The value member r contributes to call `tag` at element i. */
static int64_t contrib(int r, int tag, int i)
{
    return (int64_t)(r + 1) * 1000003 + (int64_t)tag * 7919 + i;
}

/* The sum over members 0 .. n-1 of element i. */
static int64_t sum_over(int n, const int *world_of, int tag, int i)
{
    int64_t s = 0;
    for (int r = 0; r < n; r++)
        s += contrib(world_of ? world_of[r] : r, tag, i);
    return s;
}

/* One nonblocking call of a mix of kinds on comm, its buffers and what it must give. */
struct call {
    int kind;          /* 0 barrier, 1 bcast, 2 allreduce, 3 reduce, 4 allgather, 5 alltoall, 6 gather,
                          7 scatter, 8 scan, 9 exscan, 10 reduce_scatter_block */
    int tag, root;
    int64_t in[MAXRANKS], out[MAXRANKS];
};

struct commx {
    MPI_Comm comm;
    int rank, size;
    int *world_of;     /* comm rank -> world rank */
};

static void commx_init(struct commx *x, MPI_Comm comm)
{
    x->comm = comm;
    MPI_Comm_rank(comm, &x->rank);
    MPI_Comm_size(comm, &x->size);
    x->world_of = malloc((size_t)x->size * sizeof *x->world_of);
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *ranks = malloc((size_t)x->size * sizeof *ranks);
    for (int i = 0; i < x->size; i++)
        ranks[i] = i;
    MPI_Group_translate_ranks(g, x->size, ranks, wg, x->world_of);
    free(ranks);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
}

static void start_call(const struct commx *x, struct call *c, int kind, int tag, MPI_Request *req)
{
    c->kind = kind;
    c->tag = tag;
    c->root = tag % x->size;
    for (int i = 0; i < MAXRANKS; i++) {
        c->in[i] = contrib(x->world_of[x->rank], tag, i);
        c->out[i] = -1;
    }
    switch (kind) {
    case 0:
        CHECK_MPI(MPI_Ibarrier(x->comm, req));
        break;
    case 1:
        if (x->rank == c->root)
            c->out[0] = contrib(tag, tag, 0);
        CHECK_MPI(MPI_Ibcast(c->out, 1, MPI_INT64_T, c->root, x->comm, req));
        break;
    case 2:
        CHECK_MPI(MPI_Iallreduce(c->in, c->out, VEC, MPI_INT64_T, MPI_SUM, x->comm, req));
        break;
    case 3:
        CHECK_MPI(MPI_Ireduce(c->in, c->out, VEC, MPI_INT64_T, MPI_SUM, c->root, x->comm, req));
        break;
    case 4:
        CHECK_MPI(MPI_Iallgather(c->in, 1, MPI_INT64_T, c->out, 1, MPI_INT64_T, x->comm, req));
        break;
    case 5:   /* block j of `in` goes to member j */
        CHECK_MPI(MPI_Ialltoall(c->in, 1, MPI_INT64_T, c->out, 1, MPI_INT64_T, x->comm, req));
        break;
    case 6:
        CHECK_MPI(MPI_Igather(c->in, 1, MPI_INT64_T, c->out, 1, MPI_INT64_T, c->root, x->comm, req));
        break;
    case 7:   /* the root's element j goes to member j */
        CHECK_MPI(MPI_Iscatter(c->in, 1, MPI_INT64_T, c->out, 1, MPI_INT64_T, c->root, x->comm, req));
        break;
    case 8:
        CHECK_MPI(MPI_Iscan(c->in, c->out, VEC, MPI_INT64_T, MPI_SUM, x->comm, req));
        break;
    case 9:
        CHECK_MPI(MPI_Iexscan(c->in, c->out, VEC, MPI_INT64_T, MPI_SUM, x->comm, req));
        break;
    default:   /* element j of `in` is for member j */
        CHECK_MPI(MPI_Ireduce_scatter_block(c->in, c->out, 1, MPI_INT64_T, MPI_SUM, x->comm, req));
        break;
    }
}

static void check_call(const struct commx *x, const struct call *c, const char *what)
{
    switch (c->kind) {
    case 1:
        CHECK(c->out[0] == contrib(c->tag, c->tag, 0), "%s: Ibcast %d from %d gave %lld, not %lld", what, c->tag,
              c->root, (long long)c->out[0], (long long)contrib(c->tag, c->tag, 0));
        break;
    case 2:
    case 3:
        if (c->kind == 3 && x->rank != c->root)
            break;
        for (int i = 0; i < VEC; i++)
            CHECK(c->out[i] == sum_over(x->size, x->world_of, c->tag, i), "%s: %s %d [%d] gave %lld, not %lld", what,
                  c->kind == 2 ? "Iallreduce" : "Ireduce", c->tag, i, (long long)c->out[i],
                  (long long)sum_over(x->size, x->world_of, c->tag, i));
        break;
    case 4:
    case 5:
        for (int j = 0; j < x->size; j++) {
            /* allgather: member j's element 0; alltoall: member j's element for us */
            int64_t want = contrib(x->world_of[j], c->tag, c->kind == 4 ? 0 : x->rank);
            CHECK(c->out[j] == want, "%s: %s %d block %d gave %lld, not %lld", what,
                  c->kind == 4 ? "Iallgather" : "Ialltoall", c->tag, j, (long long)c->out[j], (long long)want);
        }
        break;
    case 6:
        for (int j = 0; j < x->size && x->rank == c->root; j++)
            CHECK(c->out[j] == contrib(x->world_of[j], c->tag, 0), "%s: Igather %d block %d gave %lld, not %lld",
                  what, c->tag, j, (long long)c->out[j], (long long)contrib(x->world_of[j], c->tag, 0));
        break;
    case 7:
        CHECK(c->out[0] == contrib(x->world_of[c->root], c->tag, x->rank), "%s: Iscatter %d from %d gave %lld, not %lld",
              what, c->tag, c->root, (long long)c->out[0], (long long)contrib(x->world_of[c->root], c->tag, x->rank));
        break;
    case 8:
    case 9: {
        int upto = c->kind == 8 ? x->rank + 1 : x->rank;   /* members 0 .. upto-1 */
        for (int i = 0; i < VEC && upto > 0; i++)
            CHECK(c->out[i] == sum_over(upto, x->world_of, c->tag, i), "%s: %s %d [%d] gave %lld, not %lld", what,
                  c->kind == 8 ? "Iscan" : "Iexscan", c->tag, i, (long long)c->out[i],
                  (long long)sum_over(upto, x->world_of, c->tag, i));
        break;
    }
    case 10:
        CHECK(c->out[0] == sum_over(x->size, x->world_of, c->tag, x->rank),
              "%s: Ireduce_scatter_block %d gave %lld, not %lld", what, c->tag, (long long)c->out[0],
              (long long)sum_over(x->size, x->world_of, c->tag, x->rank));
        break;
    default:
        break;
    }
}

/* DEPTH calls of mixed kinds, completed in reverse, by Waitany, or by
 * Testsome with a ring of point-to-point messages going on meanwhile. */
static void deep(const struct commx *x, int round, int how)
{
    struct call calls[DEPTH];
    MPI_Request reqs[DEPTH];
    for (int k = 0; k < DEPTH; k++)
        start_call(x, &calls[k], (k + round + how) % KINDS, round * 1000 + how * 100 + k, &reqs[k]);
    if (how == 0) {
        for (int k = DEPTH - 1; k >= 0; k--)
            CHECK_MPI(MPI_Wait(&reqs[k], MPI_STATUS_IGNORE));
    } else if (how == 1) {
        for (int left = DEPTH; left > 0; left--) {
            int idx;
            CHECK_MPI(MPI_Waitany(DEPTH, reqs, &idx, MPI_STATUS_IGNORE));
            CHECK(idx != MPI_UNDEFINED, "Waitany found nothing with %d left", left);
        }
    } else {
        /* A fixed number of ring steps (every rank takes as many), testing
         * the collectives between them; then whatever is left. */
        int right = (wrank + 1) % wsize, left = (wrank - 1 + wsize) % wsize;
        for (int msgs = 0; msgs < 12; msgs++) {
            int out[DEPTH], n = 0, sent = wrank * 100 + msgs, got = -1;
            CHECK_MPI(MPI_Sendrecv(&sent, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            CHECK(got == left * 100 + msgs, "ring message %d from %d: %d", msgs, left, got);
            CHECK_MPI(MPI_Testsome(DEPTH, reqs, &n, out, MPI_STATUSES_IGNORE));
        }
        CHECK_MPI(MPI_Waitall(DEPTH, reqs, MPI_STATUSES_IGNORE));
    }
    for (int k = 0; k < DEPTH; k++)
        check_call(x, &calls[k], how == 0 ? "reverse" : how == 1 ? "waitany" : "testsome");
}

/* DEPTH Ibcasts, Iscatters or Iscans (kind 1, 7, 8) outstanding at once:
 * a root runs ahead of its receivers, or the ranks below ahead of those
 * above, by more than a device's slots (dimmnet's writer then waits inside
 * its runs for the readers' acknowledgements, not in the call); the readers
 * complete them in reverse. */
static void storm(const struct commx *x, int round, int kind)
{
    struct call calls[DEPTH];
    MPI_Request reqs[DEPTH];
    int root = round % x->size;
    for (int k = 0; k < DEPTH; k++) {
        int tag = 60000 + round * 100 + k;
        if (kind == 1) {
            calls[k].kind = 1;
            calls[k].tag = tag;
            calls[k].root = root;
            calls[k].out[0] = x->rank == root ? contrib(tag, tag, 0) : -1;
            CHECK_MPI(MPI_Ibcast(calls[k].out, 1, MPI_INT64_T, root, x->comm, &reqs[k]));
        } else {
            start_call(x, &calls[k], kind, tag * x->size + root, &reqs[k]);   /* root: tag mod size */
        }
    }
    for (int k = DEPTH - 1; k >= 0; k--)
        CHECK_MPI(MPI_Wait(&reqs[k], MPI_STATUS_IGNORE));
    for (int k = 0; k < DEPTH; k++)
        check_call(x, &calls[k], "storm");
}

/* Blocking collectives between outstanding nonblocking ones on one communicator. */
static void mixed(const struct commx *x, int round)
{
    struct call calls[DEPTH];
    MPI_Request reqs[DEPTH];
    int n = 0;
    for (int k = 0; k < DEPTH; k++) {
        start_call(x, &calls[n], k % KINDS, 50000 + round * 100 + k, &reqs[n]);
        n++;
        if (k % 5 == 4) {
            int64_t v = x->rank == k % x->size ? contrib(k, round, 1) : -1, s = contrib(x->world_of[x->rank], k, 2), t;
            CHECK_MPI(MPI_Barrier(x->comm));
            CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT64_T, k % x->size, x->comm));
            CHECK(v == contrib(k, round, 1), "blocking Bcast among nonblocking ones gave %lld", (long long)v);
            CHECK_MPI(MPI_Allreduce(&s, &t, 1, MPI_INT64_T, MPI_SUM, x->comm));
            CHECK(t == sum_over(x->size, x->world_of, k, 2), "blocking Allreduce among nonblocking ones gave %lld",
                  (long long)t);
        }
    }
    CHECK_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
    for (int k = 0; k < n; k++)
        check_call(x, &calls[k], "mixed");
}

/* Blocking barriers while nonblocking runs are outstanding on the
 * communicator, with no rooted call after any barrier, so that where the
 * device runs a counter barrier (HASHI_DIMMNET_BARRIER_ALG=counter, or auto
 * while ranks share cores) every blocking one finds the communicator's
 * queue busy: it must wait behind the runs there, and those started after
 * it behind it. */
static void barriers_among(const struct commx *x, int round)
{
    static const int kinds[] = { 0, 2, 4, 5 };   /* Ibarrier, Iallreduce, Iallgather, Ialltoall */
    struct call calls[DEPTH];
    MPI_Request reqs[DEPTH];
    int64_t s = contrib(x->world_of[x->rank], round, 3), t;
    CHECK_MPI(MPI_Barrier(x->comm));
    /* not rooted: the barriers below are the counter where it is chosen */
    CHECK_MPI(MPI_Allreduce(&s, &t, 1, MPI_INT64_T, MPI_SUM, x->comm));
    CHECK(t == sum_over(x->size, x->world_of, round, 3), "blocking Allreduce gave %lld", (long long)t);
    for (int k = 0; k < DEPTH; k++) {
        start_call(x, &calls[k], kinds[k % 4], 60000 + round * 100 + k, &reqs[k]);
        if (k % 3 == 2)
            CHECK_MPI(MPI_Barrier(x->comm));
    }
    CHECK_MPI(MPI_Waitall(DEPTH, reqs, MPI_STATUSES_IGNORE));
    for (int k = 0; k < DEPTH; k++)
        check_call(x, &calls[k], "barriers among");
}

/* Two duplicates at once, started in opposite orders on odd and even ranks,
 * plus the split communicators. */
static void concurrent(struct commx *xs, int nx, int round)
{
    enum { PER = 12 };
    struct call calls[4][PER];
    MPI_Request reqs[4 * PER];
    int n = 0;
    for (int k = 0; k < PER; k++)
        for (int j = 0; j < nx; j++) {
            /* odd world ranks take the communicators in reverse */
            int which = wrank % 2 ? nx - 1 - j : j;
            start_call(&xs[which], &calls[which][k], (k + which) % KINDS, 70000 + round * 100 + k,
                       &reqs[which * PER + k]);
            n++;
        }
    /* complete from the last communicator down */
    for (int i = nx * PER - 1; i >= 0; i--)
        CHECK_MPI(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE));
    for (int j = 0; j < nx; j++)
        for (int k = 0; k < PER; k++)
            check_call(&xs[j], &calls[j][k], "concurrent");
}

/* Persistent requests started many times, alone, by Startall, with
 * nonblocking calls between the starts. */
static void persistent(const struct commx *x, int rounds)
{
    int64_t bval = 0, in[VEC], out[VEC], rin[VEC], rout[VEC];
    MPI_Request p[4];
    int root = x->size - 1;
    CHECK_MPI(MPI_Barrier_init(x->comm, MPI_INFO_NULL, &p[0]));
    CHECK_MPI(MPI_Bcast_init(&bval, 1, MPI_INT64_T, root, x->comm, MPI_INFO_NULL, &p[1]));
    CHECK_MPI(MPI_Allreduce_init(in, out, VEC, MPI_INT64_T, MPI_SUM, x->comm, MPI_INFO_NULL, &p[2]));
    CHECK_MPI(MPI_Reduce_init(rin, rout, VEC, MPI_INT64_T, MPI_SUM, 0, x->comm, MPI_INFO_NULL, &p[3]));
    for (int it = 0; it < rounds * 5; it++) {
        for (int i = 0; i < VEC; i++) {
            in[i] = contrib(x->world_of[x->rank], it, i);
            rin[i] = contrib(x->world_of[x->rank], it + 1, i);
            out[i] = rout[i] = -1;
        }
        bval = x->rank == root ? contrib(it, it, 0) : -1;
        if (it % 3 == 0) {
            CHECK_MPI(MPI_Startall(4, p));
            CHECK_MPI(MPI_Waitall(4, p, MPI_STATUSES_IGNORE));
        } else {
            struct call extra;
            MPI_Request r = MPI_REQUEST_NULL;
            for (int j = 0; j < 4; j++) {
                CHECK_MPI(MPI_Start(&p[j]));
                if (j == 1) {
                    start_call(x, &extra, it % KINDS, 90000 + it, &r);
                }
            }
            for (int j = 3; j >= 0; j--)
                CHECK_MPI(MPI_Wait(&p[j], MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            check_call(x, &extra, "between persistent starts");
        }
        CHECK(bval == contrib(it, it, 0), "persistent Bcast run %d gave %lld", it, (long long)bval);
        for (int i = 0; i < VEC; i++) {
            CHECK(out[i] == sum_over(x->size, x->world_of, it, i), "persistent Allreduce run %d [%d] gave %lld", it, i,
                  (long long)out[i]);
            if (x->rank == 0)
                CHECK(rout[i] == sum_over(x->size, x->world_of, it + 1, i), "persistent Reduce run %d [%d] gave %lld",
                      it, i, (long long)rout[i]);
        }
    }
    for (int j = 0; j < 4; j++)
        CHECK_MPI(MPI_Request_free(&p[j]));
}

/* Layouts the device does not see as they are: a strided Ibcast, an
 * MPI_IN_PLACE Iallreduce, and one too large for a slot, among small ones. */
static void layouts(const struct commx *x, int round)
{
    MPI_Datatype strided;
    CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT64_T, &strided));
    CHECK_MPI(MPI_Type_commit(&strided));
    int64_t s[6], inplace[VEC];
    int64_t *big_in = malloc(BIG * sizeof *big_in), *big_out = malloc(BIG * sizeof *big_out);
    int root = round % x->size;
    for (int i = 0; i < 6; i++)
        s[i] = x->rank == root || i % 2 ? 1000 + i : -1;
    for (int i = 0; i < VEC; i++)
        inplace[i] = contrib(x->world_of[x->rank], round, i);
    for (int i = 0; i < BIG; i++)
        big_in[i] = contrib(x->world_of[x->rank], round, i);
    MPI_Request r[5];
    struct call a, b;
    start_call(x, &a, 2, 80000 + round, &r[0]);
    CHECK_MPI(MPI_Ibcast(s, 1, strided, root, x->comm, &r[1]));
    CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, inplace, VEC, MPI_INT64_T, MPI_SUM, x->comm, &r[2]));
    CHECK_MPI(MPI_Iallreduce(big_in, big_out, BIG, MPI_INT64_T, MPI_SUM, x->comm, &r[3]));
    start_call(x, &b, 1, 81000 + round, &r[4]);
    CHECK_MPI(MPI_Waitall(5, r, MPI_STATUSES_IGNORE));
    check_call(x, &a, "layouts");
    check_call(x, &b, "layouts");
    for (int i = 0; i < 6; i++)
        CHECK(s[i] == 1000 + i, "strided Ibcast [%d] gave %lld", i, (long long)s[i]);
    for (int i = 0; i < VEC; i++)
        CHECK(inplace[i] == sum_over(x->size, x->world_of, round, i), "in-place Iallreduce [%d] gave %lld", i,
              (long long)inplace[i]);
    for (int i = 0; i < BIG; i += 97)
        CHECK(big_out[i] == sum_over(x->size, x->world_of, round, i), "large Iallreduce [%d] gave %lld", i,
              (long long)big_out[i]);
    free(big_in);
    free(big_out);
    CHECK_MPI(MPI_Type_free(&strided));
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    CHECK(wsize <= MAXRANKS, "at most %d ranks", MAXRANKS);
    int rounds = argc > 1 ? atoi(argv[1]) : 20;

    MPI_Comm dup1, dup2, half, rev;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup1));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup2));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -wrank, &rev));
    struct commx world, xs[4];
    commx_init(&world, MPI_COMM_WORLD);
    commx_init(&xs[0], dup1);
    commx_init(&xs[1], dup2);
    commx_init(&xs[2], half);
    commx_init(&xs[3], rev);

    for (int round = 0; round < rounds; round++) {
        for (int how = 0; how < 3; how++)
            deep(&xs[round % 4], round, how);
        deep(&world, round, round % 3);
        storm(&xs[(round + 2) % 4], round, 1);                /* Ibcast */
        storm(&xs[(round + 3) % 4], round, round % 2 ? 8 : 7);   /* Iscan, Iscatter */
        mixed(&xs[(round + 1) % 4], round);
        barriers_among(&xs[(round + 3) % 4], round);
        barriers_among(&world, round);
        concurrent(xs, 4, round);
        layouts(&xs[round % 4], round);
    }
    persistent(&xs[0], rounds);
    persistent(&xs[3], rounds / 2 + 1);

    for (int j = 0; j < 4; j++)
        free(xs[j].world_of);
    free(world.world_of);
    CHECK_MPI(MPI_Comm_free(&dup1));
    CHECK_MPI(MPI_Comm_free(&dup2));
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&rev));
    /* communicators made after others went: a channel passes on */
    MPI_Comm again;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &again));
    struct commx ax;
    commx_init(&ax, again);
    deep(&ax, 0, 1);
    mixed(&ax, 1);
    free(ax.world_of);
    CHECK_MPI(MPI_Comm_free(&again));

    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
