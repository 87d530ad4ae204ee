/*
 * reductions: Barrier, Bcast, Reduce, Allreduce, Reduce_scatter(_block),
 * Scan and Exscan against serial references every rank computes itself,
 * each blocking, nonblocking and persistent (started three times with new
 * data each), at small and large counts, every root, MPI_IN_PLACE, derived
 * datatypes (a vector and a struct of ints, whose gaps must stay untouched)
 * and a non-commutative user op (2x2 matrix product, checked for exact rank
 * order). The battery runs on MPI_COMM_WORLD (automatic algorithm choice)
 * and on duplicates whose info hints force each algorithm
 * (hashi_coll_<collective> = <algorithm>, the values of HASHI_COLL_<NAME>).
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../util/check.h"
#include "../util/suite.h"

#define SENTINEL 0xdeadbeefu
#define MID 5003             /* 20 KiB of ints: a device's reduction reads it in place (HASHI_COLL_DEVICE_READ_MIN) */
#define LARGE 20011          /* 80 KiB of ints: above the long-message thresholds */
#define HUGE (262144 + 3)    /* ~1 MiB */

static int rank, size;

enum mode { BLOCKING, NONBLOCKING, PERSISTENT, NMODES };
static const char *mode_name[] = { "blocking", "nonblocking", "persistent" };

/* ---- element kinds: layout in 32-bit words, the op, the reference ---- */

struct kind {
    const char *name;
    MPI_Datatype type;
    MPI_Op op;
    int stride;       /* words per element (the type's extent) */
    int ndata;        /* data words per element, at pos[] */
    int pos[4];
    int is_mat;       /* 2x2 matrix product (non-commutative) instead of a sum */
};

static struct kind K_INT, K_VEC, K_STRUCT, K_MAT;

static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    uint32_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        uint32_t r0 = a[0] * b[0] + a[1] * b[2], r1 = a[0] * b[1] + a[1] * b[3];
        uint32_t r2 = a[2] * b[0] + a[3] * b[2], r3 = a[2] * b[1] + a[3] * b[3];
        b[0] = r0, b[1] = r1, b[2] = r2, b[3] = r3;
    }
}

static void kinds_init(void)
{
    MPI_Datatype vec, st, mat;
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));   /* ints 0 and 2 of 3 */
    CHECK_MPI(MPI_Type_commit(&vec));
    int bl[2] = { 1, 1 };
    MPI_Aint disp[2] = { 0, 8 };
    MPI_Datatype types[2] = { MPI_INT, MPI_INT }, raw;
    CHECK_MPI(MPI_Type_create_struct(2, bl, disp, types, &raw));
    CHECK_MPI(MPI_Type_create_resized(raw, 0, 16, &st));   /* ints 0 and 2 of 4 */
    CHECK_MPI(MPI_Type_free(&raw));
    CHECK_MPI(MPI_Type_commit(&st));
    CHECK_MPI(MPI_Type_contiguous(4, MPI_UINT32_T, &mat));
    CHECK_MPI(MPI_Type_commit(&mat));
    MPI_Op matop;
    CHECK_MPI(MPI_Op_create(matmul, 0, &matop));
    K_INT = (struct kind){ "int", MPI_INT, MPI_SUM, 1, 1, { 0 }, 0 };
    K_VEC = (struct kind){ "vector", vec, MPI_SUM, 3, 2, { 0, 2 }, 0 };
    K_STRUCT = (struct kind){ "struct", st, MPI_SUM, 4, 2, { 0, 2 }, 0 };
    K_MAT = (struct kind){ "matrix", mat, matop, 4, 4, { 0, 1, 2, 3 }, 1 };
}

/* Rank r's element i in iteration it. Sums stay far from int overflow;
 * matrices have small entries and do not commute. */
static void contrib(const struct kind *k, int r, long i, int it, uint32_t *elem)
{
    for (int p = 0; p < k->ndata; p++) {
        uint32_t v = k->is_mat ? (uint32_t)((r * 5 + i * 3 + it + p * 7) % 4) + (p == 0 || p == 3)
                               : (uint32_t)((r + 1) * 1000 + (i % 1000) * 7 + it * 13 + p);
        elem[k->pos[p]] = v;
    }
}

/* right = left op right */
static void combine(const struct kind *k, const uint32_t *left, uint32_t *right)
{
    if (k->is_mat) {
        int one = 1;
        matmul((void *)left, right, &one, NULL);
        return;
    }
    for (int p = 0; p < k->ndata; p++)
        right[k->pos[p]] += left[k->pos[p]];
}

/* The reduction of ranks lo .. hi-1 (in order) for element i. */
static void reference(const struct kind *k, int lo, int hi, long i, int it, uint32_t *out)
{
    uint32_t cur[4], acc[4];
    contrib(k, hi - 1, i, it, acc);
    for (int r = hi - 2; r >= lo; r--) {
        contrib(k, r, i, it, cur);
        combine(k, cur, acc);   /* acc = x(r) op acc: right to left keeps rank order */
    }
    memcpy(out, acc, sizeof acc);
}

static uint32_t *alloc_buf(const struct kind *k, long count)
{
    size_t words = (size_t)(count ? count : 1) * (size_t)k->stride;
    uint32_t *b = malloc(words * sizeof *b);
    CHECK(b, "out of memory");
    for (size_t w = 0; w < words; w++)
        b[w] = SENTINEL;
    return b;
}

static void fill(const struct kind *k, uint32_t *buf, long count, int r, int it)
{
    for (long i = 0; i < count; i++)
        contrib(k, r, i, it, buf + i * k->stride);
}

/* Elements [0, count) of buf hold the reduction of ranks lo..hi-1 (element
 * index offset by first), gaps hold the sentinel. */
static void expect_reduced(const char *what, const struct kind *k, const uint32_t *buf, long count, long first,
                           int lo, int hi, int it)
{
    for (long i = 0; i < count; i++) {
        uint32_t ref[4];
        reference(k, lo, hi, first + i, it, ref);
        const uint32_t *e = buf + i * k->stride;
        for (int w = 0; w < k->stride; w++) {
            int is_data = 0;
            for (int p = 0; p < k->ndata; p++)
                is_data |= k->pos[p] == w;
            uint32_t want = is_data ? ref[w] : SENTINEL;
            CHECK(e[w] == want, "%s (%s): element %ld word %d is %u, expected %u (ranks %d..%d, iteration %d)",
                  what, k->name, first + i, w, e[w], want, lo, hi - 1, it);
        }
    }
}

/* After a test issued its call (blocking: the call itself; nonblocking: the
 * I-form; persistent: the _init form, on the first iteration only): start
 * and wait as the mode needs, and check the request's fate. */
static void complete(enum mode m, MPI_Request *req)
{
    if (m == BLOCKING)
        return;
    if (m == PERSISTENT)
        CHECK_MPI(MPI_Start(req));
    MPI_Status st;
    CHECK_MPI(MPI_Wait(req, &st));
    if (m == NONBLOCKING)
        CHECK(*req == MPI_REQUEST_NULL, "MPI_Wait left a nonblocking collective's request");
    else
        CHECK(*req != MPI_REQUEST_NULL, "MPI_Wait freed a persistent collective's request");
}

static void finish(enum mode m, MPI_Request *req)
{
    if (m == PERSISTENT)
        CHECK_MPI(MPI_Request_free(req));
}

static int iterations(enum mode m)
{
    return m == PERSISTENT ? 3 : 1;
}

/* ---- the collectives ---- */

static void test_barrier(MPI_Comm comm)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int m = 0; m < NMODES; m++) {
        MPI_Request req = MPI_REQUEST_NULL;
        if (m == PERSISTENT)
            CHECK_MPI(MPI_Barrier_init(comm, MPI_INFO_NULL, &req));
        for (int it = 0; it < iterations(m); it++) {
            /* The last rank arrives 20 ms late: nobody may leave before
             * it arrived (CLOCK_MONOTONIC is shared on the node). */
            double arrived = 0;
            if (r == n - 1) {
                usleep(20000);
                arrived = MPI_Wtime();
            }
            if (m == BLOCKING)
                CHECK_MPI(MPI_Barrier(comm));
            else if (m == NONBLOCKING)
                CHECK_MPI(MPI_Ibarrier(comm, &req));
            complete(m, &req);
            double left = MPI_Wtime();
            CHECK_MPI(MPI_Bcast(&arrived, 1, MPI_DOUBLE, n - 1, comm));
            CHECK(left >= arrived, "%s barrier: left at %.6f before the last rank arrived at %.6f", mode_name[m],
                  left, arrived);
        }
        finish(m, &req);
    }
}

static void test_bcast(MPI_Comm comm, const struct kind *k, long count, int root, enum mode m)
{
    int r;
    MPI_Comm_rank(comm, &r);
    uint32_t *buf = alloc_buf(k, count);
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        if (r == root)
            fill(k, buf, count, root, it);
        else if (it > 0)
            fill(k, buf, count, (root + 1) % size + 77, it);   /* stale data must be overwritten */
        if (m == BLOCKING)
            CHECK_MPI(MPI_Bcast(buf, (int)count, k->type, root, comm));
        else if (m == NONBLOCKING)
            CHECK_MPI(MPI_Ibcast(buf, (int)count, k->type, root, comm, &req));
        else if (it == 0)
            CHECK_MPI(MPI_Bcast_init(buf, (int)count, k->type, root, comm, MPI_INFO_NULL, &req));
        complete(m, &req);
        expect_reduced("bcast", k, buf, count, 0, root, root + 1, it);
    }
    finish(m, &req);
    free(buf);
}

static void test_reduce(MPI_Comm comm, const struct kind *k, long count, int root, int in_place, enum mode m)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    uint32_t *sbuf = alloc_buf(k, count), *rbuf = alloc_buf(k, count);
    const void *send = in_place && r == root ? MPI_IN_PLACE : sbuf;
    void *recv = r == root ? rbuf : NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        fill(k, send == MPI_IN_PLACE ? rbuf : sbuf, count, r, it);
        if (m == BLOCKING)
            CHECK_MPI(MPI_Reduce(send, recv, (int)count, k->type, k->op, root, comm));
        else if (m == NONBLOCKING)
            CHECK_MPI(MPI_Ireduce(send, recv, (int)count, k->type, k->op, root, comm, &req));
        else if (it == 0)
            CHECK_MPI(MPI_Reduce_init(send, recv, (int)count, k->type, k->op, root, comm, MPI_INFO_NULL, &req));
        complete(m, &req);
        if (r == root)
            expect_reduced("reduce", k, rbuf, count, 0, 0, n, it);
        if (send != MPI_IN_PLACE) {
            uint32_t *copy = alloc_buf(k, count);
            fill(k, copy, count, r, it);
            CHECK(memcmp(copy, sbuf, (size_t)count * (size_t)k->stride * 4) == 0, "reduce changed sendbuf");
            free(copy);
        }
    }
    finish(m, &req);
    free(sbuf);
    free(rbuf);
}

static void test_allreduce(MPI_Comm comm, const struct kind *k, long count, int in_place, enum mode m)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    uint32_t *sbuf = alloc_buf(k, count), *rbuf = alloc_buf(k, count);
    const void *send = in_place ? MPI_IN_PLACE : sbuf;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        fill(k, in_place ? rbuf : sbuf, count, r, it);
        if (m == BLOCKING)
            CHECK_MPI(MPI_Allreduce(send, rbuf, (int)count, k->type, k->op, comm));
        else if (m == NONBLOCKING)
            CHECK_MPI(MPI_Iallreduce(send, rbuf, (int)count, k->type, k->op, comm, &req));
        else if (it == 0)
            CHECK_MPI(MPI_Allreduce_init(send, rbuf, (int)count, k->type, k->op, comm, MPI_INFO_NULL, &req));
        complete(m, &req);
        expect_reduced("allreduce", k, rbuf, count, 0, 0, n, it);
    }
    finish(m, &req);
    free(sbuf);
    free(rbuf);
}

/* Reduce_scatter with counts[i] for rank i, or Reduce_scatter_block (block >= 0). */
static void test_reduce_scatter(MPI_Comm comm, const struct kind *k, const int *counts, int block, int in_place,
                                enum mode m)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long total = 0, first = 0;
    for (int i = 0; i < n; i++) {
        if (i == r)
            first = total;
        total += block >= 0 ? block : counts[i];
    }
    long mine = block >= 0 ? block : counts[r];
    uint32_t *sbuf = alloc_buf(k, total), *rbuf = alloc_buf(k, in_place ? total : mine);
    const void *send = in_place ? MPI_IN_PLACE : sbuf;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        fill(k, in_place ? rbuf : sbuf, total, r, it);
        if (block >= 0) {
            if (m == BLOCKING)
                CHECK_MPI(MPI_Reduce_scatter_block(send, rbuf, block, k->type, k->op, comm));
            else if (m == NONBLOCKING)
                CHECK_MPI(MPI_Ireduce_scatter_block(send, rbuf, block, k->type, k->op, comm, &req));
            else if (it == 0)
                CHECK_MPI(MPI_Reduce_scatter_block_init(send, rbuf, block, k->type, k->op, comm, MPI_INFO_NULL, &req));
        } else {
            if (m == BLOCKING)
                CHECK_MPI(MPI_Reduce_scatter(send, rbuf, counts, k->type, k->op, comm));
            else if (m == NONBLOCKING)
                CHECK_MPI(MPI_Ireduce_scatter(send, rbuf, counts, k->type, k->op, comm, &req));
            else if (it == 0)
                CHECK_MPI(MPI_Reduce_scatter_init(send, rbuf, counts, k->type, k->op, comm, MPI_INFO_NULL, &req));
        }
        complete(m, &req);
        expect_reduced(block >= 0 ? "reduce_scatter_block" : "reduce_scatter", k, rbuf, mine, first, 0, n, it);
    }
    finish(m, &req);
    free(sbuf);
    free(rbuf);
}

static void test_scan(MPI_Comm comm, const struct kind *k, long count, int exclusive, int in_place, enum mode m)
{
    int r;
    MPI_Comm_rank(comm, &r);
    uint32_t *sbuf = alloc_buf(k, count), *rbuf = alloc_buf(k, count);
    const void *send = in_place ? MPI_IN_PLACE : sbuf;
    MPI_Request req = MPI_REQUEST_NULL;
    const char *what = exclusive ? "exscan" : "scan";
    for (int it = 0; it < iterations(m); it++) {
        fill(k, in_place ? rbuf : sbuf, count, r, it);
        if (exclusive) {
            if (m == BLOCKING)
                CHECK_MPI(MPI_Exscan(send, rbuf, (int)count, k->type, k->op, comm));
            else if (m == NONBLOCKING)
                CHECK_MPI(MPI_Iexscan(send, rbuf, (int)count, k->type, k->op, comm, &req));
            else if (it == 0)
                CHECK_MPI(MPI_Exscan_init(send, rbuf, (int)count, k->type, k->op, comm, MPI_INFO_NULL, &req));
        } else {
            if (m == BLOCKING)
                CHECK_MPI(MPI_Scan(send, rbuf, (int)count, k->type, k->op, comm));
            else if (m == NONBLOCKING)
                CHECK_MPI(MPI_Iscan(send, rbuf, (int)count, k->type, k->op, comm, &req));
            else if (it == 0)
                CHECK_MPI(MPI_Scan_init(send, rbuf, (int)count, k->type, k->op, comm, MPI_INFO_NULL, &req));
        }
        complete(m, &req);
        if (exclusive && r == 0)
            continue;   /* undefined on rank 0 */
        expect_reduced(what, k, rbuf, count, 0, 0, exclusive ? r : r + 1, it);
    }
    finish(m, &req);
    free(sbuf);
    free(rbuf);
}

/* ---- the battery ---- */

/* One collective of each family at one count, kind and mode; every root only
 * when asked (the tree shapes differ per root). */
static void battery_case(MPI_Comm comm, const struct kind *k, long count, enum mode m, int all_roots)
{
    int n;
    MPI_Comm_size(comm, &n);
    int in_place_too = k == &K_INT || k == &K_MAT;
    for (int root = 0; root < n; root++) {
        if (!all_roots && root != 0 && root != n - 1)
            continue;
        test_bcast(comm, k, count, root, m);
        test_reduce(comm, k, count, root, 0, m);
        if (in_place_too)
            test_reduce(comm, k, count, root, 1, m);
        if (n == 1)
            break;
    }
    test_allreduce(comm, k, count, 0, m);
    test_scan(comm, k, count, 0, 0, m);
    test_scan(comm, k, count, 1, 0, m);
    if (in_place_too) {
        test_allreduce(comm, k, count, 1, m);
        test_scan(comm, k, count, 0, 1, m);
        test_scan(comm, k, count, 1, 1, m);
    }
    /* uneven blocks, one of them empty */
    int *rs_counts = malloc((size_t)n * sizeof *rs_counts);
    for (int i = 0; i < n; i++)
        rs_counts[i] = (int)(count / n) + i % 3;
    if (n > 1)
        rs_counts[1] = 0;
    test_reduce_scatter(comm, k, rs_counts, -1, 0, m);
    test_reduce_scatter(comm, k, NULL, (int)(count / n + 1), 0, m);
    if (in_place_too) {
        test_reduce_scatter(comm, k, rs_counts, -1, 1, m);
        test_reduce_scatter(comm, k, NULL, (int)(count / n + 1), 1, m);
    }
    free(rs_counts);
}

/*
 * Sums on ints and the non-commutative matrix product in every mode; the
 * derived types (their layout is what they test) blocking; every root at
 * the small count (and the mid count for ints: a device's reduce reading
 * contributions in place, in every position of the root).
 */
static void battery(MPI_Comm comm, const long *counts, int ncounts, int modes)
{
    test_barrier(comm);
    for (int ci = 0; ci < ncounts; ci++) {
        long count = counts[ci];
        for (int m = 0; m < modes; m++) {
            battery_case(comm, &K_INT, count, (enum mode)m, count == 7 || count == MID);
            battery_case(comm, &K_MAT, count, (enum mode)m, count == 7);
        }
        battery_case(comm, &K_VEC, count, BLOCKING, 0);
        battery_case(comm, &K_STRUCT, count, BLOCKING, 0);
    }
}

/* A duplicate of world whose hints force algorithms. */
static MPI_Comm forced(const char *const *hints)
{
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    for (int i = 0; hints[i]; i += 2)
        CHECK_MPI(MPI_Info_set(info, hints[i], hints[i + 1]));
    MPI_Comm comm;
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm));
    CHECK_MPI(MPI_Info_free(&info));
    return comm;
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    kinds_init();

    static const long world_counts[] = { 1, 7, MID, LARGE, 0 };
    battery(MPI_COMM_WORLD, world_counts, 5, NMODES);
    test_allreduce(MPI_COMM_WORLD, &K_INT, HUGE, 0, BLOCKING);
    test_bcast(MPI_COMM_WORLD, &K_INT, HUGE, size - 1, BLOCKING);

    /* Every algorithm, forced, at a count above the fallback limits. */
    static const char *const set_a[] = { "hashi_coll_bcast", "scatter_allgather", "hashi_coll_reduce", "rabenseifner",
                                         "hashi_coll_allreduce", "rabenseifner", "hashi_coll_reduce_scatter",
                                         "pairwise", NULL };
    static const char *const set_b[] = { "hashi_coll_bcast", "binomial", "hashi_coll_reduce", "binomial",
                                         "hashi_coll_allreduce", "ring", "hashi_coll_reduce_scatter",
                                         "recursive_halving", NULL };
    static const char *const set_c[] = { "hashi_coll_bcast", "pipeline", "hashi_coll_allreduce", "recursive_doubling",
                                         "hashi_coll_reduce_scatter", "reduce_scatterv", NULL };
    static const long forced_counts[] = { 29, 1001 };
    const char *const *sets[] = { set_a, set_b, set_c };
    for (int i = 0; i < 3; i++) {
        MPI_Comm comm = forced(sets[i]);
        battery(comm, forced_counts, 2, 2);   /* blocking and nonblocking */
        CHECK_MPI(MPI_Comm_free(&comm));
    }

    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
