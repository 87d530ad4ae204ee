/*
 * Node-local windows (docs/rma.md, "Node-local windows"): windows from
 * MPI_Win_allocate over ranks of one node, and from MPI_Win_allocate_shared,
 * live in a shared segment and their operations are loads and stores.
 *
 *   rma_shm shm   the path is on (the default): checked by the MPI_T counter
 *                 rma_shm_ops, which grows by exactly the operations issued
 *                 on such windows and not at all on MPI_Win_create windows
 *                 (nor on MPI_COMM_WORLD windows of a job spanning nodes);
 *   rma_shm off   HASHI_RMA_SHM=0: the counter stays 0, and the same checks
 *                 (but the one below that needs no target progress) pass on
 *                 the generic messages.
 *
 * Every rank checks, on a window over its node's ranks:
 *  - passive target with the target out of MPI: rank 0 waits for the
 *    origins' puts by reading its own memory in a plain loop, making no MPI
 *    call, while every other rank locks it exclusively, puts and unlocks
 *    (the generic path would wait for the target's progress for ever);
 *  - mutual exclusion: a counter at rank 0 read, incremented and written
 *    back under MPI_LOCK_EXCLUSIVE by every rank, exact final value;
 *  - accumulate atomicity: concurrent MPI_Accumulate (SUM) of a vector and
 *    MPI_Fetch_and_op on one counter from every rank under lock_all, exact
 *    totals, every fetched value distinct;
 *  - PSCW over many epochs whose groups change from epoch to epoch (each
 *    post must match its own start), with MPI_Win_test;
 *  - fence epochs with MPI_MODE_NOPRECEDE / NOSUCCEED, strided origin and
 *    indexed target types, byte-exact, MPI_Rget / MPI_Rput.
 */
#include "../util/check.h"
#include "../util/suite.h"
#include "rma_util.h"

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

static int rank, size;
static MPI_Comm node;
static int nrank, nsize;

static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle shm_ops_handle = MPI_T_PVAR_HANDLE_NULL;

static unsigned long long shm_ops(void)
{
    unsigned long long v = 0;
    CHECK(MPI_T_pvar_read(session, shm_ops_handle, &v) == MPI_SUCCESS, "pvar_read failed");
    return v;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Eight operations of each kind on a window over comm, to and from the
 * right neighbour; returns how many were issued. */
static long eight_ops(MPI_Comm comm, int create)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    int right = (r + 1) % n;
    long *mem, storage[8];
    MPI_Win win;
    if (create) {
        mem = storage;
        CHECK_MPI(MPI_Win_create(mem, sizeof storage, sizeof(long), MPI_INFO_NULL, comm, &win));
    } else {
        CHECK_MPI(MPI_Win_allocate(8 * sizeof(long), sizeof(long), MPI_INFO_NULL, comm, &mem, &win));
    }
    for (int i = 0; i < 8; i++)
        mem[i] = 0;
    CHECK_MPI(MPI_Win_fence(0, win));
    long v = 100 + r, got = -1, old = -1, one = 1, cmp = 0, res = -1;
    MPI_Request req;
    CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, right, 0, 1, MPI_LONG, win));
    CHECK_MPI(MPI_Rput(&v, 1, MPI_LONG, right, 1, 1, MPI_LONG, win, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Accumulate(&one, 1, MPI_LONG, right, 2, 1, MPI_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Fetch_and_op(&one, &old, MPI_LONG, right, 3, MPI_SUM, win));
    CHECK_MPI(MPI_Compare_and_swap(&one, &cmp, &res, MPI_LONG, right, 4, win));
    CHECK_MPI(MPI_Get_accumulate(&one, 1, MPI_LONG, &got, 1, MPI_LONG, right, 5, 1, MPI_LONG, MPI_SUM, win));
    /* Not counted: a zero count and MPI_PROC_NULL do nothing. */
    CHECK_MPI(MPI_Put(&v, 0, MPI_LONG, right, 6, 0, MPI_LONG, win));
    CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, MPI_PROC_NULL, 6, 1, MPI_LONG, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(old == 0 && res == 0 && got == 0, "fetched %ld %ld %ld, expected 0", old, res, got);
    CHECK(mem[0] == 100 + (r + n - 1) % n && mem[1] == mem[0] && mem[2] == 1 && mem[3] == 1 && mem[4] == 1 &&
              mem[5] == 1,
          "window holds %ld %ld %ld %ld %ld %ld", mem[0], mem[1], mem[2], mem[3], mem[4], mem[5]);
    CHECK_MPI(MPI_Get(&got, 1, MPI_LONG, right, 0, 1, MPI_LONG, win));
    CHECK_MPI(MPI_Rget(&old, 1, MPI_LONG, right, 1, 1, MPI_LONG, win, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(got == 100 + r && old == 100 + r, "got %ld and %ld, expected %d", got, old, 100 + r);
    CHECK_MPI(MPI_Win_free(&win));
    return 8;
}

static void counted(int on)
{
    int world_local = nsize == size;
    unsigned long long before = shm_ops();
    long n = eight_ops(MPI_COMM_WORLD, 1);
    CHECK(shm_ops() == before, "rma_shm_ops grew by %llu on an MPI_Win_create window", shm_ops() - before);
    n = eight_ops(MPI_COMM_WORLD, 0);
    unsigned long long want = on && world_local ? (unsigned long long)n : 0;
    CHECK(shm_ops() - before == want, "rma_shm_ops grew by %llu on a world MPI_Win_allocate window, expected %llu",
          shm_ops() - before, want);
    before = shm_ops();
    n = eight_ops(node, 0);
    want = on ? (unsigned long long)n : 0;
    CHECK(shm_ops() - before == want, "rma_shm_ops grew by %llu on a node MPI_Win_allocate window, expected %llu",
          shm_ops() - before, want);
}

/* Rank 0 of the node reads its window in a plain loop, no MPI call, until
 * every other rank's put is there. */
static void no_target_progress(void)
{
    int *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(nsize * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mem, &win));
    for (int i = 0; i < nsize; i++)
        mem[i] = -1;
    CHECK_MPI(MPI_Barrier(node));
    if (nrank == 0) {
        volatile int *seen = mem;
        double give_up = now() + 30;
        for (int i = 1; i < nsize; i++) {
            while (seen[i] != 1000 + i) {
                CHECK(now() < give_up, "rank %d's put never arrived while the target stayed out of MPI", i);
                sched_yield();
            }
        }
        CHECK_MPI(MPI_Win_sync(win));
    } else {
        int v = 1000 + nrank;
        for (int k = 0; k < 20; k++) {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 0, nrank, 1, MPI_INT, win));
            CHECK_MPI(MPI_Win_unlock(0, win));
        }
    }
    CHECK_MPI(MPI_Barrier(node));
    CHECK_MPI(MPI_Win_free(&win));
}

static void exclusive_counter(void)
{
    enum { ITER = 200 };
    long *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, node, &mem, &win));
    *mem = 0;
    CHECK_MPI(MPI_Barrier(node));
    locked_increments(win, 0, ITER);
    CHECK_MPI(MPI_Barrier(node));
    long total;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    CHECK_MPI(MPI_Get(&total, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK(total == (long)ITER * nsize, "exclusive get-add-put counter is %ld, expected %ld", total,
          (long)ITER * nsize);
    CHECK_MPI(MPI_Win_free(&win));
}

static void accumulate_atomicity(void)
{
    enum { N = 257, ITER = 100 };
    struct counters {
        long counter;
        int v[N];
    } *m;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(sizeof *m, 1, MPI_INFO_NULL, node, &m, &win));
    memset(m, 0, sizeof *m);
    int add[N];
    for (int i = 0; i < N; i++)
        add[i] = i + 1;
    long fetched[ITER];
    CHECK_MPI(MPI_Barrier(node));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    long one = 1;
    for (int k = 0; k < ITER; k++) {
        CHECK_MPI(MPI_Accumulate(add, N, MPI_INT, 0, offsetof(struct counters, v), N, MPI_INT, MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&one, &fetched[k], MPI_LONG, 0, 0, MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK(k == 0 || fetched[k] > fetched[k - 1], "fetched %ld after %ld", fetched[k], fetched[k - 1]);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    /* Every fetched value distinct across ranks: gather them at 0. */
    long *all = nrank == 0 ? malloc(sizeof(long) * ITER * (size_t)nsize) : NULL;
    CHECK_MPI(MPI_Gather(fetched, ITER, MPI_LONG, all, ITER, MPI_LONG, 0, node));
    CHECK_MPI(MPI_Barrier(node));
    if (nrank == 0) {
        char *hit = calloc((size_t)ITER * (size_t)nsize, 1);
        for (int i = 0; i < ITER * nsize; i++) {
            CHECK(all[i] >= 0 && all[i] < ITER * nsize && !hit[all[i]], "fetched value %ld repeated or out of range",
                  all[i]);
            hit[all[i]] = 1;
        }
        free(hit);
        free(all);
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(m->counter == (long)ITER * nsize, "counter %ld, expected %ld", m->counter, (long)ITER * nsize);
        for (int i = 0; i < N; i++)
            CHECK(m->v[i] == (i + 1) * ITER * nsize, "v[%d] = %d, expected %d", i, m->v[i], (i + 1) * ITER * nsize);
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Win_free(&win));
}

/* Epoch e: every rank accesses (rank + 1 + e % (n - 1)) and exposes to the
 * rank that accesses it, so the groups change between epochs. */
static void pscw_epochs(void)
{
    enum { EPOCHS = 60 };
    int *mem;
    MPI_Win win;
    MPI_Group g, one;
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mem, &win));
    CHECK_MPI(MPI_Comm_group(node, &g));
    *mem = -1;
    CHECK_MPI(MPI_Barrier(node));
    for (int e = 0; e < EPOCHS; e++) {
        int shift = nsize > 1 ? 1 + e % (nsize - 1) : 0;
        int target = (nrank + shift) % nsize, origin = (nrank - shift + nsize) % nsize;
        CHECK_MPI(MPI_Group_incl(g, 1, &origin, &one));
        CHECK_MPI(MPI_Win_post(one, 0, win));
        CHECK_MPI(MPI_Group_free(&one));
        CHECK_MPI(MPI_Group_incl(g, 1, &target, &one));
        CHECK_MPI(MPI_Win_start(one, 0, win));
        CHECK_MPI(MPI_Group_free(&one));
        int v = e * 1000 + nrank;
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, target, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_complete(win));
        if (e % 2) {
            int flag = 0;
            while (!flag)
                CHECK_MPI(MPI_Win_test(win, &flag));
        } else {
            CHECK_MPI(MPI_Win_wait(win));
        }
        CHECK(*mem == e * 1000 + origin, "epoch %d: window holds %d, expected %d", e, *mem, e * 1000 + origin);
    }
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Win_free(&win));
}

/* Strided origin, indexed target (out of order), both directions. */
static void typed_fence(void)
{
    enum { N = 64 };
    int *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(2 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mem, &win));
    for (int i = 0; i < 2 * N; i++)
        mem[i] = -1;
    MPI_Datatype strided, scattered;
    CHECK_MPI(MPI_Type_vector(N / 2, 1, 2, MPI_INT, &strided));
    CHECK_MPI(MPI_Type_commit(&strided));
    int lens[N / 2], disps[N / 2];
    for (int i = 0; i < N / 2; i++) {
        lens[i] = 1;
        disps[i] = 2 * N - 1 - 3 * i;   /* descending */
    }
    CHECK_MPI(MPI_Type_indexed(N / 2, lens, disps, MPI_INT, &scattered));
    CHECK_MPI(MPI_Type_commit(&scattered));
    int src[N], back[N];
    for (int i = 0; i < N; i++)
        src[i] = nrank * 10000 + i;
    int right = (nrank + 1) % nsize, left = (nrank + nsize - 1) % nsize;
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    CHECK_MPI(MPI_Put(src, 1, strided, right, 0, 1, scattered, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < N / 2; i++)
        CHECK(mem[disps[i]] == left * 10000 + 2 * i, "mem[%d] = %d, expected %d", disps[i], mem[disps[i]],
              left * 10000 + 2 * i);
    memset(back, 0xff, sizeof back);
    MPI_Request req;
    CHECK_MPI(MPI_Rget(back, 1, strided, right, 0, 1, scattered, win, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < N; i++)
        CHECK(back[i] == (i % 2 ? -1 : nrank * 10000 + i), "back[%d] = %d", i, back[i]);
    CHECK_MPI(MPI_Type_free(&strided));
    CHECK_MPI(MPI_Type_free(&scattered));
    CHECK_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    CHECK(argc > 1 && (!strcmp(argv[1], "shm") || !strcmp(argv[1], "off")), "usage: rma_shm shm|off");
    int on = !strcmp(argv[1], "shm");
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2, "needs 2 ranks at least");
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    CHECK_MPI(MPI_Comm_rank(node, &nrank));
    CHECK_MPI(MPI_Comm_size(node, &nsize));
    int provided, index, count;
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread failed");
    CHECK(MPI_T_pvar_get_index("rma_shm_ops", MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS,
          "no MPI_T counter rma_shm_ops");
    CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS, "pvar_session_create failed");
    CHECK(MPI_T_pvar_handle_alloc(session, index, NULL, &shm_ops_handle, &count) == MPI_SUCCESS,
          "pvar_handle_alloc failed");

    counted(on);
    if (on)
        no_target_progress();
    exclusive_counter();
    accumulate_atomicity();
    pscw_epochs();
    typed_fence();
    if (!on)
        CHECK(shm_ops() == 0, "rma_shm_ops is %llu with HASHI_RMA_SHM=0", shm_ops());

    CHECK(MPI_T_pvar_handle_free(session, &shm_ops_handle) == MPI_SUCCESS, "pvar_handle_free failed");
    CHECK(MPI_T_pvar_session_free(&session) == MPI_SUCCESS, "pvar_session_free failed");
    CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize failed");
    CHECK_MPI(MPI_Comm_free(&node));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
