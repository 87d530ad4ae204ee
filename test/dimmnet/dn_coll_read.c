/*
 * The DIMMnet device's collectives above its LLCM slots (docs/collectives.md,
 * "Sixth session: 2-rank collectives of 4-256 KiB"): blocking MPI_Bcast,
 * MPI_Allgather, MPI_Alltoall, MPI_Allreduce and MPI_Reduce whose members
 * read each other's buffers single-copy.
 *
 *   check ITERS [mixed]
 *                   ITERS rounds over world, a dup and a split with the
 *                   ranks reversed, of every collective at sizes from 16 KiB
 *                   to 256 KiB (odd ones too): every root, MPI_IN_PLACE,
 *                   members mixing contiguous and strided layouts of one
 *                   signature (gaps must keep their guard), a nonblocking
 *                   collective on the dup outstanding across the blocking
 *                   ones; every byte against a serial reference. Reductions
 *                   mix layouts at 2 members below 64 KiB, with `mixed` at
 *                   every size (only where the device takes them all)
 *   count K BYTES   K bcasts, allgathers, alltoalls and allreduces of BYTES
 *                   (a block for allgather / alltoall) on world and nothing
 *                   else, so the list can check the device's counters
 * Prints "rank R of S ok" at the end.
 */
#include "../util/check.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD (-777)

static int wrank;
static int mixed_reductions;   /* mix layouts in reductions of any size at 2 members */

/* Element i of what src contributes in (round, call), towards dst. */
static int val(int src, int dst, int round, int call, size_t i)
{
    return (int)((unsigned)src * 7919u + (unsigned)dst * 104729u + (unsigned)round * 31u + (unsigned)call * 17u +
                 (unsigned)i * 13u) % 100000;
}

/* n ints, contiguous or as one element of a vector type with a gap after
 * each int: buf holds the layout, the type describes it. */
struct layout {
    int strided;
    size_t n;
    int *buf;
    MPI_Datatype type;   /* strided: vector(n, 1, 2, MPI_INT); else MPI_INT */
    int count;           /* 1 (strided) or n */
};

static void layout_make(struct layout *l, size_t n, int strided)
{
    l->strided = strided;
    l->n = n;
    l->buf = malloc((strided ? 2 : 1) * n * sizeof(int) + sizeof(int));
    CHECK(l->buf, "out of memory");
    if (strided) {
        CHECK_MPI(MPI_Type_vector((int)n, 1, 2, MPI_INT, &l->type));
        CHECK_MPI(MPI_Type_commit(&l->type));
        l->count = 1;
    } else {
        l->type = MPI_INT;
        l->count = (int)n;
    }
    for (size_t i = 0; i < (strided ? 2 : 1) * n; i++)
        l->buf[i] = GUARD;
}

static int *at(const struct layout *l, size_t i)
{
    return &l->buf[l->strided ? 2 * i : i];
}

static void layout_check(const struct layout *l, const int *want, const char *what, size_t bytes)
{
    for (size_t i = 0; i < l->n; i++)
        CHECK(*at(l, i) == want[i], "%s of %zu bytes (%s): element %zu is %d, expected %d", what, bytes,
              l->strided ? "strided" : "contiguous", i, *at(l, i), want[i]);
    if (l->strided)
        for (size_t i = 0; i < l->n; i++)
            CHECK(l->buf[2 * i + 1] == GUARD, "%s of %zu bytes: gap after element %zu overwritten (%d)", what, bytes,
                  i, l->buf[2 * i + 1]);
}

static void layout_free(struct layout *l)
{
    if (l->strided)
        MPI_Type_free(&l->type);
    free(l->buf);
}

struct comm_case {
    MPI_Comm comm;
    const char *name;
    int size, rank;
};

/* Whether this member uses the strided layout in (round, call): varies by
 * rank so members mix layouts (mode 1 only). */
static int strided_for(int rank, int round, int call, int mode)
{
    return mode == 1 && (rank + round + call) % 3 == 0;
}

static void do_bcast(const struct comm_case *c, int round, int call, size_t n, int mode)
{
    for (int root = 0; root < c->size; root++) {
        struct layout l;
        layout_make(&l, n, strided_for(c->rank, round, call + root, mode));
        int *want = malloc(n * sizeof(int));
        CHECK(want, "out of memory");
        for (size_t i = 0; i < n; i++)
            want[i] = val(root, 0, round, call + root, i);
        if (c->rank == root)
            for (size_t i = 0; i < n; i++)
                *at(&l, i) = want[i];
        CHECK_MPI(MPI_Bcast(l.buf, l.count, l.type, root, c->comm));
        layout_check(&l, want, "MPI_Bcast", n * sizeof(int));
        free(want);
        layout_free(&l);
    }
}

/* Allgather (alltoall = 0) or alltoall of n ints per block. mode 2: in place. */
static void do_blocks(const struct comm_case *c, int round, int call, size_t n, int mode, int alltoall)
{
    int p = c->size, me = c->rank, in_place = mode == 2;
    size_t total = n * (size_t)p;
    struct layout r;
    layout_make(&r, total, in_place ? 0 : strided_for(me, round, call, mode));
    struct layout s = { 0 };
    size_t sn = alltoall ? total : n;
    if (!in_place) {
        layout_make(&s, sn, strided_for(me + 1, round, call, mode));
        for (size_t i = 0; i < sn; i++)
            *at(&s, i) = val(me, alltoall ? (int)(i / n) : 0, round, call, alltoall ? i % n : i);
    } else {
        for (size_t i = 0; i < total; i++)
            *at(&r, i) = alltoall || i / n == (size_t)me ? val(me, alltoall ? (int)(i / n) : 0, round, call, i % n)
                                                         : GUARD;
    }
    int *want = malloc(total * sizeof(int));
    CHECK(want, "out of memory");
    for (size_t i = 0; i < total; i++)
        want[i] = val((int)(i / n), alltoall ? me : 0, round, call, i % n);
    /* A block of n ints: contiguous n x MPI_INT, or, strided, vector(n, 1, 2) resized to 2n ints. */
    MPI_Datatype rblk = MPI_INT, sblk = MPI_INT, tmp;
    int rcount = (int)n, scount = (int)n;
    if (r.strided) {
        CHECK_MPI(MPI_Type_vector((int)n, 1, 2, MPI_INT, &tmp));
        CHECK_MPI(MPI_Type_create_resized(tmp, 0, (MPI_Aint)(2 * n * sizeof(int)), &rblk));
        CHECK_MPI(MPI_Type_commit(&rblk));
        MPI_Type_free(&tmp);
        rcount = 1;
    }
    if (!in_place && s.strided) {
        CHECK_MPI(MPI_Type_vector((int)n, 1, 2, MPI_INT, &tmp));
        CHECK_MPI(MPI_Type_create_resized(tmp, 0, (MPI_Aint)(2 * n * sizeof(int)), &sblk));
        CHECK_MPI(MPI_Type_commit(&sblk));
        MPI_Type_free(&tmp);
        scount = 1;
    }
    const void *sendbuf = in_place ? MPI_IN_PLACE : s.buf;
    if (alltoall)
        CHECK_MPI(MPI_Alltoall(sendbuf, scount, sblk, r.buf, rcount, rblk, c->comm));
    else
        CHECK_MPI(MPI_Allgather(sendbuf, scount, sblk, r.buf, rcount, rblk, c->comm));
    layout_check(&r, want, alltoall ? "MPI_Alltoall" : "MPI_Allgather", n * sizeof(int));
    if (rblk != MPI_INT)
        MPI_Type_free(&rblk);
    if (sblk != MPI_INT)
        MPI_Type_free(&sblk);
    free(want);
    layout_free(&r);
    if (!in_place)
        layout_free(&s);
}

/* Allreduce (root < 0) or reduce to every root of n ints, MPI_SUM; mode 2:
 * in place (allreduce everywhere, reduce at the root). */
static void do_reduction(const struct comm_case *c, int round, int call, size_t n, int mode, int rooted)
{
    int p = c->size, me = c->rank;
    /* Mixed layouts only where every member runs one whole-vector algorithm:
     * the generic Rabenseifner (3 or more members; 2 from 64 KiB) splits by
     * elements of each member's own datatype, so members with different
     * types of one signature disagree; the device's reads take every size at
     * 2 members. */
    if (mode == 1 && (p > 2 || (!mixed_reductions && n * sizeof(int) >= 65536)))
        mode = 0;
    int *want = malloc(n * sizeof(int));
    CHECK(want, "out of memory");
    for (int root = rooted ? 0 : -1; root < (rooted ? p : 0); root++) {
        int k = call + (root < 0 ? 0 : root);
        for (size_t i = 0; i < n; i++) {
            want[i] = 0;
            for (int r = 0; r < p; r++)
                want[i] += val(r, 0, round, k, i);
        }
        int is_root = root < 0 || root == me, in_place = mode == 2 && is_root;
        struct layout s = { 0 }, r;
        layout_make(&r, n, in_place ? 0 : strided_for(me, round, k, mode));
        if (in_place) {
            for (size_t i = 0; i < n; i++)
                *at(&r, i) = val(me, 0, round, k, i);
        } else {
            layout_make(&s, n, strided_for(me + 1, round, k, mode));
            for (size_t i = 0; i < n; i++)
                *at(&s, i) = val(me, 0, round, k, i);
        }
        /* One type for both sides of a member: the send side's layout, with
         * the receive buffer laid out alike. */
        struct layout *tl = in_place ? &r : &s;
        if (!in_place && r.strided != s.strided) {
            layout_free(&r);
            layout_make(&r, n, s.strided);
        }
        const void *sendbuf = in_place ? MPI_IN_PLACE : s.buf;
        if (root < 0)
            CHECK_MPI(MPI_Allreduce(sendbuf, r.buf, tl->count, tl->type, MPI_SUM, c->comm));
        else
            CHECK_MPI(MPI_Reduce(sendbuf, r.buf, tl->count, tl->type, MPI_SUM, root, c->comm));
        if (is_root)
            layout_check(&r, want, root < 0 ? "MPI_Allreduce" : "MPI_Reduce", n * sizeof(int));
        else
            for (size_t i = 0; i < (r.strided ? 2 : 1) * n; i++)
                CHECK(r.buf[i] == GUARD, "MPI_Reduce: a non-root's recvbuf was written at %zu", i);
        layout_free(&r);
        if (!in_place)
            layout_free(&s);
    }
    free(want);
}

static void run_check(int iters)
{
    static const size_t sizes[] = { 16384, 16392, 65536, 100008, 262144 };
    int wsize;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    struct comm_case cases[3];
    cases[0] = (struct comm_case){ MPI_COMM_WORLD, "world", 0, 0 };
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &cases[1].comm));
    cases[1].name = "dup";
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &cases[2].comm));
    cases[2].name = "reversed";
    for (int k = 0; k < 3; k++) {
        MPI_Comm_size(cases[k].comm, &cases[k].size);
        MPI_Comm_rank(cases[k].comm, &cases[k].rank);
    }
    /* Outstanding across the blocking collectives: its progress must go on. */
    int nb_in = wrank + 1, nb_out = 0;
    for (int round = 0; round < iters; round++) {
        MPI_Request req;
        CHECK_MPI(MPI_Iallreduce(&nb_in, &nb_out, 1, MPI_INT, MPI_SUM, cases[1].comm, &req));
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si] / sizeof(int);
            const struct comm_case *c = &cases[(round + (int)si) % 3];
            int mode = (round + (int)si) % 3;   /* 0 contiguous, 1 mixed layouts, 2 in place */
            int call = (int)si * 8;
            do_bcast(c, round, call, n, mode);
            do_blocks(c, round, call + 1, n, mode, 0);
            do_blocks(c, round, call + 2, n, mode, 1);
            do_reduction(c, round, call + 3, n, mode, 0);
            do_reduction(c, round, call + 4, n, mode, 1);
        }
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(nb_out == wsize * (wsize + 1) / 2, "MPI_Iallreduce gave %d, expected %d", nb_out,
              wsize * (wsize + 1) / 2);
    }
    MPI_Comm_free(&cases[1].comm);
    MPI_Comm_free(&cases[2].comm);
}

static void run_count(int k, size_t bytes)
{
    struct comm_case world = { MPI_COMM_WORLD, "world", 0, 0 };
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    size_t n = bytes / sizeof(int);
    for (int round = 0; round < k; round++) {
        struct layout l;
        layout_make(&l, n, 0);
        int *want = malloc(n * sizeof(int));
        CHECK(want, "out of memory");
        int root = round % world.size;
        for (size_t i = 0; i < n; i++) {
            want[i] = val(root, 0, round, 0, i);
            if (world.rank == root)
                l.buf[i] = want[i];
        }
        CHECK_MPI(MPI_Bcast(l.buf, l.count, l.type, root, MPI_COMM_WORLD));
        layout_check(&l, want, "MPI_Bcast", bytes);
        free(want);
        layout_free(&l);
        do_blocks(&world, round, 1, n, 0, 0);
        do_blocks(&world, round, 2, n, 0, 1);
        do_reduction(&world, round, 3, n, 0, 0);
    }
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    int wsize;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    CHECK(argc >= 3, "usage: dn_coll_read check ITERS [mixed] | count K BYTES");
    if (strcmp(argv[1], "check") == 0) {
        mixed_reductions = argc >= 4 && strcmp(argv[3], "mixed") == 0;
        run_check(atoi(argv[2]));
    }
    else if (strcmp(argv[1], "count") == 0 && argc >= 4)
        run_count(atoi(argv[2]), (size_t)strtoull(argv[3], NULL, 0));
    else
        CHECK(0, "unknown mode %s", argv[1]);
    CHECK_MPI(MPI_Finalize());
    printf("rank %d of %d ok\n", wrank, wsize);
    return 0;
}
