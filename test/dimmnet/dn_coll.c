/*
 * The DIMMnet device's LLCM collectives (docs/dimmnet.md, "LLCM
 * collectives"): barrier, bcast, allreduce and alltoall stored flat into the
 * peers' LLCM on any communicator within the node, declined otherwise.
 *
 *   mix ITERS BOUND   ITERS rounds, each running every collective on world,
 *                     a dup, the split halves and a reversed-order
 *                     communicator in a rotating order (slots and parities
 *                     cross communicators); roots rotate; data differ per
 *                     rank, round and call; sizes around BOUND (the device's
 *                     HASHI_DIMMNET_COLL_MAX) on both sides; float sums
 *                     must be bit-identical on all members; a
 *                     non-commutative user op (declined) must keep rank
 *                     order; derived and in-place buffers mixed in
 *   bound COUNT BOUND COUNT bcasts, allreduces and alltoalls on world at
 *                     exactly BOUND bytes, then COUNT more of each at
 *                     BOUND + 8 (the list checks that exactly COUNT of each
 *                     took the LLCM)
 *   storm COUNT       COUNT bcasts from rank 0 while the others start late:
 *                     the root runs ahead and must wait for consumption
 *                     acks, never overwriting an unread slot
 * Prints "rank R of S ok" at the end.
 */
#include "../util/check.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int wrank, wsize;

static unsigned char byte_of(int src, int dst, int round, int call, size_t i)
{
    return (unsigned char)(src * 37 + dst * 11 + round * 5 + call * 3 + (int)(i * 13) + (int)(i >> 8) + 1);
}

/* ---- a non-commutative op on a predefined type (so the device is asked and
 * must decline): affine maps x -> a x + b (mod 2^32) packed as a << 32 | b,
 * composed in rank order. MPI computes inout = in op inout with `in` the
 * lower ranks' part: (f op g)(x) = g(f(x)). */
static uint64_t affine_pack(uint32_t a, uint32_t b)
{
    return (uint64_t)a << 32 | b;
}

static uint64_t affine_then(uint64_t f, uint64_t g)
{
    uint32_t fa = (uint32_t)(f >> 32), fb = (uint32_t)f, ga = (uint32_t)(g >> 32), gb = (uint32_t)g;
    return affine_pack(ga * fa, ga * fb + gb);
}

static void affine_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint64_t *f = in;
    uint64_t *g = inout;
    for (int i = 0; i < *len; i++)
        g[i] = affine_then(f[i], g[i]);
}

static uint64_t affine_of(int rank, int round, int i)
{
    return affine_pack((uint32_t)(2 * (rank + round + i) + 3), (uint32_t)(rank * 1000 + round * 7 + i));
}

/* ---- one communicator's collectives for one round ---- */

struct comm_case {
    MPI_Comm comm;
    const char *name;
    int size, rank;
    int *world;             /* world rank of each member */
};

static void check_bcast(const struct comm_case *c, int round, int call, size_t bytes, int derived)
{
    int root = (round + call) % c->size;
    unsigned char *buf = malloc(2 * bytes + 1);
    CHECK(buf, "out of memory");
    int rootw = c->world[root];
    if (!derived || c->rank == root) {
        for (size_t i = 0; i < bytes; i++)
            buf[i] = c->rank == root ? byte_of(rootw, 0, round, call, i) : 0;
        CHECK_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, c->comm));
    } else {
        /* Receivers take the bytes every other byte: a layout of their own. */
        MPI_Datatype vec;
        CHECK_MPI(MPI_Type_vector((int)bytes, 1, 2, MPI_BYTE, &vec));
        CHECK_MPI(MPI_Type_commit(&vec));
        memset(buf, 0xee, 2 * bytes + 1);
        CHECK_MPI(MPI_Bcast(buf, 1, vec, root, c->comm));
        CHECK_MPI(MPI_Type_free(&vec));
        for (size_t i = 0; i < bytes; i++) {
            CHECK(buf[2 * i + 1] == 0xee || i == bytes - 1, "%s bcast round %d: gap byte %zu written", c->name,
                  round, 2 * i + 1);
            buf[i] = buf[2 * i];
        }
    }
    for (size_t i = 0; i < bytes; i++)
        CHECK(buf[i] == byte_of(rootw, 0, round, call, i),
              "%s bcast round %d call %d (%zu bytes, root %d): byte %zu is %u, expected %u", c->name, round, call,
              bytes, root, i, buf[i], byte_of(rootw, 0, round, call, i));
    free(buf);
}

static void check_allreduce_int(const struct comm_case *c, int round, size_t count, int in_place)
{
    int64_t *in = malloc(count * sizeof *in), *out = malloc(count * sizeof *out);
    CHECK(in && out, "out of memory");
    for (size_t j = 0; j < count; j++)
        in[j] = (int64_t)c->world[c->rank] * 1000003 + round * 31 + (int64_t)j * 7919 - 500;
    if (in_place) {
        memcpy(out, in, count * sizeof *in);
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, (int)count, MPI_INT64_T, MPI_SUM, c->comm));
    } else {
        CHECK_MPI(MPI_Allreduce(in, out, (int)count, MPI_INT64_T, MPI_SUM, c->comm));
    }
    for (size_t j = 0; j < count; j++) {
        int64_t want = 0;
        for (int r = 0; r < c->size; r++)
            want += (int64_t)c->world[r] * 1000003 + round * 31 + (int64_t)j * 7919 - 500;
        CHECK(out[j] == want, "%s allreduce sum round %d (%zu x int64%s): [%zu] = %lld, expected %lld", c->name,
              round, count, in_place ? ", in place" : "", j, (long long)out[j], (long long)want);
    }
    /* MAX and BXOR on 32-bit values too. */
    int32_t *a = (int32_t *)in, *b = (int32_t *)out;
    for (size_t j = 0; j < count; j++)
        a[j] = (int32_t)((c->world[c->rank] * 7 + round + (int)j) % 23) - 11;
    CHECK_MPI(MPI_Allreduce(a, b, (int)count, MPI_INT32_T, MPI_MAX, c->comm));
    for (size_t j = 0; j < count; j++) {
        int32_t want = INT32_MIN;
        for (int r = 0; r < c->size; r++) {
            int32_t v = (int32_t)((c->world[r] * 7 + round + (int)j) % 23) - 11;
            want = v > want ? v : want;
        }
        CHECK(b[j] == want, "%s allreduce max round %d: [%zu] = %d, expected %d", c->name, round, j, b[j], want);
    }
    free(in);
    free(out);
}

static void check_allreduce_double(const struct comm_case *c, int round, size_t count)
{
    double *in = malloc(count * sizeof *in), *out = malloc(count * sizeof *out);
    double *all = malloc((size_t)c->size * count * sizeof *all);
    CHECK(in && out && all, "out of memory");
    for (size_t j = 0; j < count; j++)
        in[j] = 1.0 / (3.0 + c->world[c->rank] + round) * (1e8 * (double)(c->rank % 2) + 1.0 + (double)j);
    CHECK_MPI(MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, c->comm));
    /* The same bits on every member (the generic allgather compares). */
    CHECK_MPI(MPI_Allgather(out, (int)count, MPI_DOUBLE, all, (int)count, MPI_DOUBLE, c->comm));
    for (int r = 0; r < c->size; r++)
        CHECK(memcmp(all + (size_t)r * count, out, count * sizeof *out) == 0,
              "%s allreduce double sum round %d (%zu): rank %d's result differs from ours in its bits", c->name,
              round, count, r);
    for (size_t j = 0; j < count; j++) {
        double want = 0;
        for (int r = 0; r < c->size; r++)
            want += 1.0 / (3.0 + c->world[r] + round) * (1e8 * (double)(r % 2) + 1.0 + (double)j);
        double err = out[j] - want;
        CHECK(err < 1e-6 * (want > 0 ? want : -want) + 1e-9 && -err < 1e-6 * (want > 0 ? want : -want) + 1e-9,
              "%s allreduce double sum round %d: [%zu] = %.17g, expected %.17g", c->name, round, j, out[j], want);
    }
    free(in);
    free(out);
    free(all);
}

static void check_allreduce_affine(const struct comm_case *c, MPI_Op op, int round, size_t count)
{
    uint64_t *in = malloc(count * sizeof *in), *out = malloc(count * sizeof *out);
    CHECK(in && out, "out of memory");
    for (size_t j = 0; j < count; j++)
        in[j] = affine_of(c->world[c->rank], round, (int)j);
    CHECK_MPI(MPI_Allreduce(in, out, (int)count, MPI_UINT64_T, op, c->comm));
    for (size_t j = 0; j < count; j++) {
        /* Rank 0's map first, then rank 1's ... */
        uint64_t want = affine_of(c->world[0], round, (int)j);
        for (int r = 1; r < c->size; r++)
            want = affine_then(want, affine_of(c->world[r], round, (int)j));
        CHECK(out[j] == want, "%s allreduce non-commutative round %d: [%zu] = %#llx, expected %#llx", c->name,
              round, j, (unsigned long long)out[j], (unsigned long long)want);
    }
    free(in);
    free(out);
}

static void check_alltoall(const struct comm_case *c, int round, int call, size_t blk, int mode)
{
    size_t total = blk * (size_t)c->size;
    unsigned char *sb = malloc(total), *rb = malloc(2 * total);
    CHECK(sb && rb, "out of memory");
    for (int d = 0; d < c->size; d++)
        for (size_t i = 0; i < blk; i++)
            sb[(size_t)d * blk + i] = byte_of(c->world[c->rank], c->world[d], round, call, i);
    memset(rb, 0xee, 2 * total);
    if (mode == 1) {   /* in place */
        memcpy(rb, sb, total);
        CHECK_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, (int)blk, MPI_BYTE, c->comm));
    } else if (mode == 2) {  /* received into every other byte */
        MPI_Datatype vec, spread;
        CHECK_MPI(MPI_Type_vector((int)blk, 1, 2, MPI_BYTE, &vec));
        CHECK_MPI(MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * blk), &spread));
        CHECK_MPI(MPI_Type_commit(&spread));
        CHECK_MPI(MPI_Alltoall(sb, (int)blk, MPI_BYTE, rb, 1, spread, c->comm));
        CHECK_MPI(MPI_Type_free(&spread));
        CHECK_MPI(MPI_Type_free(&vec));
        for (size_t i = 0; i < total; i++) {
            CHECK(rb[2 * i + 1] == 0xee, "%s alltoall round %d: gap byte %zu written", c->name, round, 2 * i + 1);
            rb[i] = rb[2 * i];
        }
    } else {
        CHECK_MPI(MPI_Alltoall(sb, (int)blk, MPI_BYTE, rb, (int)blk, MPI_BYTE, c->comm));
    }
    for (int s = 0; s < c->size; s++)
        for (size_t i = 0; i < blk; i++) {
            unsigned char want = byte_of(c->world[s], c->world[c->rank], round, call, i);
            CHECK(rb[(size_t)s * blk + i] == want,
                  "%s alltoall round %d call %d (%zu bytes/rank, mode %d): byte %zu from rank %d is %u, expected %u",
                  c->name, round, call, blk, mode, i, s, rb[(size_t)s * blk + i], want);
        }
    free(sb);
    free(rb);
}

static void run_round(const struct comm_case *c, MPI_Op affine, int round, size_t bound)
{
    if (c->size < 2) {
        CHECK_MPI(MPI_Barrier(c->comm));
        return;
    }
    /* Sizes below, at and just above the bound, rotating with the round. */
    static const int bcast_off[] = { 1, 8, 13, 0, 1 };  /* bytes: 1, 8, 13, bound, bound + 1 */
    int pick = round % 5;
    size_t bb = pick < 3 ? (size_t)bcast_off[pick] : bound + (size_t)bcast_off[pick];
    CHECK_MPI(MPI_Barrier(c->comm));
    check_bcast(c, round, 0, bb, 0);
    check_allreduce_int(c, round, pick < 3 ? (size_t)(1 + pick) : bound / 8 + (size_t)(pick - 3), round % 2);
    check_bcast(c, round, 1, 1 + (size_t)(round % 8), 0);
    check_alltoall(c, round, 2, pick == 3 ? bound : pick == 4 ? bound + 1 : (size_t)(1 + round % 9), round % 3);
    check_allreduce_double(c, round, 1 + (size_t)(round % 4));
    check_allreduce_affine(c, affine, round, 1 + (size_t)(round % 3));
    check_bcast(c, round, 2, bb, round % 2);
    CHECK_MPI(MPI_Barrier(c->comm));
}

static void make_case(struct comm_case *c, MPI_Comm comm, const char *name)
{
    MPI_Group wg, g;
    c->comm = comm;
    c->name = name;
    CHECK_MPI(MPI_Comm_size(comm, &c->size));
    CHECK_MPI(MPI_Comm_rank(comm, &c->rank));
    c->world = malloc((size_t)c->size * sizeof(int));
    int *ranks = malloc((size_t)c->size * sizeof(int));
    CHECK(c->world && ranks, "out of memory");
    for (int i = 0; i < c->size; i++)
        ranks[i] = i;
    CHECK_MPI(MPI_Comm_group(comm, &g));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    CHECK_MPI(MPI_Group_translate_ranks(g, c->size, ranks, wg, c->world));
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Group_free(&wg));
    free(ranks);
}

static void mix(int iters, size_t bound)
{
    MPI_Op affine;
    CHECK_MPI(MPI_Op_create(affine_op, 0, &affine));
    MPI_Comm dup, half, reversed;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, wrank < wsize / 2, wrank, &half));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - 1 - wrank, &reversed));
    struct comm_case cases[4];
    make_case(&cases[0], MPI_COMM_WORLD, "world");
    make_case(&cases[1], dup, "dup");
    make_case(&cases[2], half, "half");
    make_case(&cases[3], reversed, "reversed");
    for (int round = 0; round < iters; round++)
        for (int k = 0; k < 4; k++)
            run_round(&cases[(round + k) % 4], affine, round * 4 + k, bound);
    for (int k = 0; k < 4; k++)
        free(cases[k].world);
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&reversed));
    CHECK_MPI(MPI_Op_free(&affine));
}

/* One int64 sum over world of n elements. */
static void check_sum_world(int round, size_t n)
{
    int64_t *in = malloc(n * 8), *out = malloc(n * 8);
    CHECK(in && out, "out of memory");
    for (size_t j = 0; j < n; j++)
        in[j] = (int64_t)wrank * 977 + round * 13 + (int64_t)j;
    CHECK_MPI(MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
    for (size_t j = 0; j < n; j++) {
        int64_t want = (int64_t)(wsize - 1) * wsize / 2 * 977 + (int64_t)wsize * (round * 13 + (int64_t)j);
        CHECK(out[j] == want, "allreduce of %zu int64 round %d: [%zu] = %lld, expected %lld", n, round, j,
              (long long)out[j], (long long)want);
    }
    free(in);
    free(out);
}

static void bound_mode(int count, size_t bound)
{
    struct comm_case c;
    make_case(&c, MPI_COMM_WORLD, "world");
    for (int above = 0; above < 2; above++) {
        size_t bytes = bound + (above ? 8 : 0);
        for (int i = 0; i < count; i++) {
            int round = above * count + i;
            check_bcast(&c, round, 0, bytes, 0);
            check_sum_world(round, bytes / 8);
            check_alltoall(&c, round, 1, bytes, 0);
        }
    }
    free(c.world);
}

static void storm(int count)
{
    /* The receivers start late and dawdle: the root's stores run ahead. */
    if (wrank != 0)
        usleep(100000);
    uint64_t v;
    for (int i = 0; i < count; i++) {
        v = wrank == 0 ? (uint64_t)i * 0x9e3779b97f4a7c15u : 0;
        CHECK_MPI(MPI_Bcast(&v, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
        CHECK(v == (uint64_t)i * 0x9e3779b97f4a7c15u, "storm bcast %d: got %llx", i, (unsigned long long)v);
        if (wrank != 0 && i % 64 == 0)
            usleep(2000);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    CHECK(argc >= 3, "usage: dn_coll mix ITERS BOUND | bound COUNT BOUND | storm COUNT");
    int n = atoi(argv[2]);
    size_t bound = argc > 3 ? (size_t)atol(argv[3]) : 0;
    if (strcmp(argv[1], "mix") == 0)
        mix(n, bound);
    else if (strcmp(argv[1], "bound") == 0)
        bound_mode(n, bound);
    else if (strcmp(argv[1], "storm") == 0)
        storm(n);
    else
        CHECK(0, "unknown mode %s", argv[1]);
    printf("rank %d of %d ok\n", wrank, wsize);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
