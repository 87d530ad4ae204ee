/*
 * The accumulate family and shared memory, checked value by value:
 *
 *  - MPI_Accumulate from every rank into every rank (itself included) under
 *    fence: SUM on int, short and a large double vector (several request
 *    messages), MAX on double, REPLACE, BXOR on unsigned long long, MAXLOC
 *    on MPI_2INT and MPI_DOUBLE_INT (a padded pair), SUM through a vector
 *    datatype at the target;
 *  - MPI_Get_accumulate and MPI_Fetch_and_op return the previous values: a
 *    counter at rank 0 incremented many times by every rank, every fetched
 *    value distinct and the final value their number; NO_OP reads, REPLACE
 *    swaps; MPI_Rget_accumulate;
 *  - an MPI_Compare_and_swap spinlock protecting a non-atomic get-add-put;
 *  - under MPI_THREAD_MULTIPLE, two threads per rank fetch-and-add the same
 *    counter at once, each flushing its own operations (the window's state
 *    is kept under the thread layer's lock);
 *  - MPI_Win_allocate_shared on the node's ranks: direct loads and stores
 *    to the neighbours' memory (MPI_Win_shared_query), ordered with
 *    MPI_Win_sync and barriers; and MPI_Put into it seen by direct loads.
 */
#include "../util/check.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

static int rank, size;

static void accumulate(void)
{
    enum { N = 16, BIG = 20000 };
    struct layout {
        int isum[N];
        short ssum[N];
        double dmax[N];
        int repl[N];
        unsigned long long bxor[N];
        int maxloc2[2 * N];
        struct { double v; int i; } maxlocd[N];
        double vsum[2 * N];
    } *m;
    double *big;
    MPI_Win win, bigwin;
    CHECK_MPI(MPI_Win_allocate(sizeof *m, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &m, &win));
    CHECK_MPI(MPI_Win_allocate(BIG * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &big, &bigwin));
    memset(m, 0, sizeof *m);
    for (int i = 0; i < N; i++) {
        m->dmax[i] = -1e300;
        m->repl[i] = -1;
        m->maxloc2[2 * i] = -1000;
        m->maxloc2[2 * i + 1] = -1;
        m->maxlocd[i].v = -1e300;
        m->maxlocd[i].i = -1;
    }
    for (int i = 0; i < BIG; i++)
        big[i] = 0.5;
    int isum[N], two[2 * N];
    short ssum[N];
    double dmax[N], vsrc[N];
    unsigned long long bx[N];
    struct { double v; int i; } dl[N];
    for (int i = 0; i < N; i++) {
        isum[i] = (rank + 1) * (i + 1);
        ssum[i] = (short)(rank - i);
        dmax[i] = (double)((rank * 5 + i) % (size + 1));
        bx[i] = 1ull << ((rank + i) % 64);
        two[2 * i] = (rank * 3 + i) % size;   /* ties: the lowest rank wins */
        two[2 * i + 1] = rank;
        dl[i].v = (double)((rank + i) % 2);
        dl[i].i = rank;
        vsrc[i] = rank + 0.25;
    }
    double *bsrc = malloc(BIG * sizeof(double));
    CHECK(bsrc, "out of memory");
    for (int i = 0; i < BIG; i++)
        bsrc[i] = rank + i;
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    MPI_Aint at_isum = offsetof(struct layout, isum), at_ssum = offsetof(struct layout, ssum),
             at_dmax = offsetof(struct layout, dmax), at_repl = offsetof(struct layout, repl),
             at_bxor = offsetof(struct layout, bxor), at_ml2 = offsetof(struct layout, maxloc2),
             at_mld = offsetof(struct layout, maxlocd), at_vsum = offsetof(struct layout, vsum);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_fence(0, bigwin));
    for (int t = 0; t < size; t++) {
        CHECK_MPI(MPI_Accumulate(isum, N, MPI_INT, t, at_isum, N, MPI_INT, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(ssum, N, MPI_SHORT, t, at_ssum, N, MPI_SHORT, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(dmax, N, MPI_DOUBLE, t, at_dmax, N, MPI_DOUBLE, MPI_MAX, win));
        CHECK_MPI(MPI_Accumulate(&rank, 1, MPI_INT, t, at_repl + rank * (MPI_Aint)sizeof(int), 1, MPI_INT,
                                 MPI_REPLACE, win));
        CHECK_MPI(MPI_Accumulate(bx, N, MPI_UNSIGNED_LONG_LONG, t, at_bxor, N, MPI_UNSIGNED_LONG_LONG, MPI_BXOR, win));
        CHECK_MPI(MPI_Accumulate(two, N, MPI_2INT, t, at_ml2, N, MPI_2INT, MPI_MAXLOC, win));
        CHECK_MPI(MPI_Accumulate(dl, N, MPI_DOUBLE_INT, t, at_mld, N, MPI_DOUBLE_INT, MPI_MAXLOC, win));
        CHECK_MPI(MPI_Accumulate(vsrc, N, MPI_DOUBLE, t, at_vsum, 1, every_other, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(bsrc, BIG, MPI_DOUBLE, t, 0, BIG, MPI_DOUBLE, MPI_SUM, bigwin));
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_fence(0, bigwin));
    int ranksum = size * (size - 1) / 2;
    for (int i = 0; i < N; i++) {
        CHECK(m->isum[i] == (ranksum + size) * (i + 1), "int SUM [%d] = %d", i, m->isum[i]);
        CHECK(m->ssum[i] == (short)(ranksum - size * i), "short SUM [%d] = %d", i, m->ssum[i]);
        double mx = -1;
        unsigned long long x = 0;
        int best = -1, best_rank = -1;
        double bestd = -1;
        int bestd_rank = -1;
        for (int r = 0; r < size; r++) {
            double v = (double)((r * 5 + i) % (size + 1));
            if (v > mx)
                mx = v;
            x ^= 1ull << ((r + i) % 64);
            int w = (r * 3 + i) % size;
            if (w > best) {
                best = w;
                best_rank = r;
            }
            double d = (double)((r + i) % 2);
            if (d > bestd) {
                bestd = d;
                bestd_rank = r;
            }
        }
        CHECK(m->dmax[i] == mx, "double MAX [%d] = %g, expected %g", i, m->dmax[i], mx);
        CHECK(m->repl[i] == (i < size ? i : -1), "REPLACE [%d] = %d", i, m->repl[i]);
        CHECK(m->bxor[i] == x, "BXOR [%d] = %llx, expected %llx", i, m->bxor[i], x);
        CHECK(m->maxloc2[2 * i] == best && m->maxloc2[2 * i + 1] == best_rank, "2INT MAXLOC [%d] = (%d, %d), expected (%d, %d)",
              i, m->maxloc2[2 * i], m->maxloc2[2 * i + 1], best, best_rank);
        CHECK(m->maxlocd[i].v == bestd && m->maxlocd[i].i == bestd_rank, "DOUBLE_INT MAXLOC [%d] = (%g, %d)", i,
              m->maxlocd[i].v, m->maxlocd[i].i);
        CHECK(m->vsum[2 * i] == ranksum + size * 0.25 && m->vsum[2 * i + 1] == 0, "vector SUM [%d] = %g %g", i,
              m->vsum[2 * i], m->vsum[2 * i + 1]);
    }
    for (int i = 0; i < BIG; i++)
        CHECK(big[i] == 0.5 + ranksum + (double)size * i, "large SUM [%d] = %g", i, big[i]);
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, bigwin));
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Win_free(&bigwin));
    MPI_Type_free(&every_other);
    free(bsrc);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* A counter at rank 0: fetch-and-add from everyone; then CAS spinlock. */
static void counters(void)
{
    enum { K = 60, L = 15 };
    long *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    mem[0] = mem[1] = mem[2] = mem[3] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    long got[K], one = 1;
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int k = 0; k < K; k++) {
        if (k % 3 == 2) {
            CHECK_MPI(MPI_Get_accumulate(&one, 1, MPI_LONG, &got[k], 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, win));
        } else if (k % 3 == 1) {
            MPI_Request r;
            CHECK_MPI(MPI_Rget_accumulate(&one, 1, MPI_LONG, &got[k], 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, win,
                                          &r));
            CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_Fetch_and_op(&one, &got[k], MPI_LONG, 0, 0, MPI_SUM, win));
        }
        CHECK_MPI(MPI_Win_flush(0, win));
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    long *all = rank == 0 ? malloc((size_t)size * K * sizeof(long)) : NULL;
    CHECK_MPI(MPI_Gather(got, K, MPI_LONG, all, K, MPI_LONG, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(mem[0] == (long)size * K, "the counter is %ld, expected %ld", mem[0], (long)size * K);
        qsort(all, (size_t)size * K, sizeof(long), cmp_long);
        for (long i = 0; i < (long)size * K; i++)
            CHECK(all[i] == i, "fetched values are not 0..%ld each once: position %ld holds %ld", (long)size * K - 1,
                  i, all[i]);
        free(all);
    }
    /* Each rank's own fetched values grow. */
    for (int k = 1; k < K; k++)
        CHECK(got[k] > got[k - 1], "fetched values do not grow: %ld then %ld", got[k - 1], got[k]);

    /* NO_OP reads, REPLACE swaps. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    long cur, old, mine = 1000 + rank;
    CHECK_MPI(MPI_Fetch_and_op(NULL, &cur, MPI_LONG, 0, 0, MPI_NO_OP, win));
    CHECK_MPI(MPI_Win_flush(0, win));
    CHECK(cur >= (long)size * K, "NO_OP read %ld", cur);
    CHECK_MPI(MPI_Fetch_and_op(&mine, &old, MPI_LONG, 0, 3, MPI_REPLACE, win));
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK(old == 0 || (old >= 1000 && old < 1000 + size), "REPLACE returned %ld", old);

    /* A CAS spinlock at rank 0's mem[1] guarding a plain get-add-put of mem[2]. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    long zero = 0, me = rank + 1, result;
    for (int i = 0; i < L; i++) {
        do {
            CHECK_MPI(MPI_Compare_and_swap(&me, &zero, &result, MPI_LONG, 0, 1, win));
            CHECK_MPI(MPI_Win_flush(0, win));
            CHECK(result >= 0 && result <= size, "CAS returned %ld", result);
        } while (result != 0);
        long v;
        CHECK_MPI(MPI_Get(&v, 1, MPI_LONG, 0, 2, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        v++;
        CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, 0, 2, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_MPI(MPI_Compare_and_swap(&zero, &me, &result, MPI_LONG, 0, 1, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK(result == me, "releasing the spinlock found %ld, not our %ld", result, me);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        CHECK(mem[2] == (long)size * L && mem[1] == 0, "the guarded counter is %ld (lock word %ld), expected %ld",
              mem[2], mem[1], (long)size * L);
    CHECK_MPI(MPI_Win_free(&win));
}

/* Two threads per rank on one window (MPI_THREAD_MULTIPLE). */
enum { T_ROUNDS = 30 };
static MPI_Win thread_win;
static long thread_got[2][T_ROUNDS];

static void *thread_body(void *arg)
{
    long *got = arg, one = 1;
    for (int k = 0; k < T_ROUNDS; k++) {
        CHECK_MPI(MPI_Fetch_and_op(&one, &got[k], MPI_LONG, 0, 0, MPI_SUM, thread_win));
        CHECK_MPI(MPI_Win_flush(0, thread_win));
    }
    return NULL;
}

static void threads(void)
{
    long *mem;
    CHECK_MPI(MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &thread_win));
    *mem = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, thread_win));
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, thread_body, thread_got[i]) == 0, "pthread_create");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_MPI(MPI_Win_unlock_all(thread_win));
    long *all = rank == 0 ? malloc((size_t)size * 2 * T_ROUNDS * sizeof(long)) : NULL;
    CHECK_MPI(MPI_Gather(thread_got, 2 * T_ROUNDS, MPI_LONG, all, 2 * T_ROUNDS, MPI_LONG, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        long n = (long)size * 2 * T_ROUNDS;
        CHECK(*mem == n, "threads: the counter is %ld, expected %ld", *mem, n);
        qsort(all, (size_t)n, sizeof(long), cmp_long);
        for (long i = 0; i < n; i++)
            CHECK(all[i] == i, "threads: fetched values are not 0..%ld each once (position %ld: %ld)", n - 1, i,
                  all[i]);
        free(all);
    }
    CHECK_MPI(MPI_Win_free(&thread_win));
}

/* Shared memory among the ranks of each node. */
static void shared(void)
{
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int nr, ns;
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &ns);
    int *mine;
    MPI_Win win;
    MPI_Aint mysize = nr == 1 ? 0 : 8 * sizeof(int);   /* one member without memory */
    CHECK_MPI(MPI_Win_allocate_shared(mysize, sizeof(int), MPI_INFO_NULL, node, &mine, &win));
    int *flavor, flag;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED, "shared window's flavor");
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < (mysize ? 8 : 0); i++)
        mine[i] = nr * 100 + i;
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Barrier(node));
    CHECK_MPI(MPI_Win_sync(win));
    for (int r = 0; r < ns; r++) {
        MPI_Aint sz;
        int unit;
        int *p;
        CHECK_MPI(MPI_Win_shared_query(win, r, &sz, &unit, &p));
        CHECK(unit == sizeof(int), "shared_query: disp_unit %d", unit);
        CHECK(sz == (r == 1 ? 0 : 8 * (MPI_Aint)sizeof(int)), "shared_query: rank %d has size %lld", r, (long long)sz);
        for (int i = 0; i < sz / (MPI_Aint)sizeof(int); i++)
            CHECK(p[i] == r * 100 + i, "direct load of rank %d's int %d: %d", r, i, p[i]);
    }
    /* Direct stores into member 0's memory (slot = own rank), seen by it. */
    int *zp;
    MPI_Aint zsz;
    int zunit;
    CHECK_MPI(MPI_Win_shared_query(win, 0, &zsz, &zunit, &zp));
    CHECK_MPI(MPI_Barrier(node));
    if (nr > 0 && nr < 8)
        zp[nr] = -nr;
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Barrier(node));
    CHECK_MPI(MPI_Win_sync(win));
    if (nr == 0)
        for (int r = 1; r < ns && r < 8; r++)
            CHECK(mine[r] == -r, "a direct store from member %d: %d", r, mine[r]);
    /* MPI_Put into the shared window, seen by the target's loads. */
    CHECK_MPI(MPI_Barrier(node));
    int v = 4242 + nr;
    if (nr > 0) {
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush(0, win));
    }
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Barrier(node));
    CHECK_MPI(MPI_Win_sync(win));
    if (nr == 0 && ns > 1)
        CHECK(mine[0] >= 4243 && mine[0] < 4242 + ns, "a put into shared memory: %d", mine[0]);
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_free(&node));
}

int main(int argc, char **argv)
{
    int provided;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE is not provided (%d)", provided);
    accumulate();
    counters();
    threads();
    shared();
    printf("rank %d of %d ok\n", rank, size);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
