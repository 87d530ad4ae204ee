/*
 * Passive-target locks on MPI_Win_create windows (docs/rma.md, "LLCM
 * locks"): where every member of a window is on the device's emu peers,
 * MPI_Win_lock / unlock / lock_all / unlock_all are remote atomics on a
 * lock word in the target's LLCM; elsewhere LOCK / UNLOCK messages.
 *
 *   rma_lock llcm    every lock goes to the words: the MPI_T counter
 *                    dimmnet_rma_locks grows by exactly the locks taken,
 *                    and a target that makes no MPI call is locked, put
 *                    into (16 KiB runs: the device path) and unlocked
 *   rma_lock off     HASHI_RMA_DEVICE_LOCKS=0 (or dimmnet on fabric): the
 *                    counter stays 0, the other checks pass on messages
 *   rma_lock vnodes  dimmnet_vnodes: a world window spans two nodes and
 *                    keeps the messages (counter 0 on it), a window over
 *                    a node's ranks takes the words (counted exactly)
 *   rma_lock any     other devices: the checks, no counter
 *   rma_lock vec     as llcm, with HASHI_RMA_DEVICE_VEC_MAX=4k: first
 *                    adjacent and scattered small puts through the queue
 *
 * Checks: an exclusive-lock counter (get, flush, +1, put per increment)
 * exact under every rank, whose releases wake at most one waiter each
 * (dimmnet_rma_lock_wakes summed over the ranks, on the words); shared locks held by every rank at once (a
 * barrier inside the epoch); exclusive writers keeping two words equal
 * against shared readers that check them; lock_all / unlock_all puts and
 * gets; create / lock / put / unlock / free cycles (600 at 2 ranks: more
 * than the LLCM region's 512 words, so freed words are reused; 200 with
 * more ranks); the no-progress target.
 */
#include "../util/check.h"
#include "rma_util.h"

#include <sched.h>
#include <stdint.h>
#include <time.h>

static int rank, size;
static const char *mode;
static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle locks_handle = MPI_T_PVAR_HANDLE_NULL;
static MPI_T_pvar_handle wakes_handle = MPI_T_PVAR_HANDLE_NULL, waits_handle = MPI_T_PVAR_HANDLE_NULL;

static unsigned long long pvar_value(MPI_T_pvar_handle handle)
{
    unsigned long long v = 0;
    CHECK(MPI_T_pvar_read(session, handle, &v) == MPI_SUCCESS, "pvar_read failed");
    return v;
}

static void pvar_open(const char *name, MPI_T_pvar_handle *handle)
{
    int index, count;
    CHECK(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS, "no pvar %s", name);
    CHECK(MPI_T_pvar_handle_alloc(session, index, NULL, handle, &count) == MPI_SUCCESS, "pvar_handle_alloc failed");
}

static unsigned long long locks_taken(void)
{
    return locks_handle != MPI_T_PVAR_HANDLE_NULL ? pvar_value(locks_handle) : 0;
}

/* What the counter must have grown by for `n` locks on a window over comm. */
static unsigned long long want_locks(MPI_Comm comm, unsigned long long n)
{
    if (!strcmp(mode, "llcm"))
        return n;
    if (!strcmp(mode, "vnodes")) {
        int csize;
        MPI_Comm_size(comm, &csize);
        return csize < size ? n : 0;   /* a node's window: the words; the world's spans both nodes */
    }
    return 0;
}

static void check_count(MPI_Comm comm, const char *what, unsigned long long before, unsigned long long n)
{
    if (locks_handle == MPI_T_PVAR_HANDLE_NULL)
        return;
    unsigned long long got = locks_taken() - before, want = want_locks(comm, n);
    CHECK(got == want, "%s: dimmnet_rma_locks grew by %llu, expected %llu (mode %s)", what, got, want, mode);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void exclusive_counter(MPI_Comm comm)
{
    enum { ITER = 100 };
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    long mem = 0;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(&mem, sizeof mem, sizeof mem, MPI_INFO_NULL, comm, &win));
    unsigned long long before = locks_taken();
    int words = wakes_handle != MPI_T_PVAR_HANDLE_NULL && want_locks(comm, 1);
    unsigned long long counts[2] = { 0, 0 };   /* waiters woken, locks that waited */
    if (words)
        counts[0] = pvar_value(wakes_handle), counts[1] = pvar_value(waits_handle);
    locked_increments(win, 0, ITER);
    check_count(comm, "exclusive counter", before, ITER);
    if (words) {
        /* Wake one: every release of the exclusive lock wakes at most one
         * waiter, so all ranks' wake-ups cannot exceed the releases (waking
         * every member, as before, gave up to size - 1 per release). */
        unsigned long long sums[2];
        counts[0] = pvar_value(wakes_handle) - counts[0];
        counts[1] = pvar_value(waits_handle) - counts[1];
        CHECK_MPI(MPI_Allreduce(counts, sums, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm));
        CHECK(sums[0] <= (unsigned long long)csize * ITER,
              "exclusive counter: %llu wake-ups for %d releases (%llu waits): more than one per release", sums[0],
              csize * ITER, sums[1]);
        if (crank == 0 && getenv("RMA_LOCK_VERBOSE"))
            printf("exclusive counter: %llu wake-ups, %llu waits, %d releases\n", sums[0], sums[1], csize * ITER);
    }
    CHECK_MPI(MPI_Barrier(comm));
    if (crank == 0) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(mem == (long)csize * ITER, "exclusive counter is %ld, expected %ld", mem, (long)csize * ITER);
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Win_free(&win));
}

/* Every rank holds a shared lock on rank 0 across a barrier: shared locks
 * that excluded each other would never all be granted. */
static void shared_together(MPI_Comm comm)
{
    int crank;
    MPI_Comm_rank(comm, &crank);
    int mem[2] = { 11, 22 };
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, comm, &win));
    unsigned long long before = locks_taken();
    int got[2] = { 0, 0 };
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Get(got, 2, MPI_INT, 0, 0, 2, MPI_INT, win));
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK(got[0] == 11 && got[1] == 22, "shared get read %d %d, expected 11 22", got[0], got[1]);
    check_count(comm, "shared locks", before, 1);
    CHECK_MPI(MPI_Win_free(&win));
}

/* Writers (even ranks) keep a == b under MPI_LOCK_EXCLUSIVE, with a flush
 * between the two puts; readers (odd ranks) under MPI_LOCK_SHARED must
 * never see them differ. */
static void mixed(MPI_Comm comm)
{
    enum { ITER = 100 };
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    long mem[2] = { 0, 0 };
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, sizeof mem, sizeof(long), MPI_INFO_NULL, comm, &win));
    unsigned long long before = locks_taken();
    int writer = crank % 2 == 0;
    for (int k = 0; k < ITER; k++) {
        long ab[2];
        CHECK_MPI(MPI_Win_lock(writer ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, 0, 0, win));
        /* a and b read apart, so a writer let in early falls between them */
        CHECK_MPI(MPI_Get(&ab[0], 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        sched_yield();
        CHECK_MPI(MPI_Get(&ab[1], 1, MPI_LONG, 0, 1, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK(ab[0] == ab[1], "under a %s lock a = %ld, b = %ld differ", writer ? "exclusive" : "shared", ab[0],
              ab[1]);
        if (writer) {
            ab[0]++;
            CHECK_MPI(MPI_Put(&ab[0], 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
            CHECK_MPI(MPI_Win_flush(0, win));
            sched_yield();   /* give a reader that ignored the lock its chance */
            ab[1]++;
            CHECK_MPI(MPI_Put(&ab[1], 1, MPI_LONG, 0, 1, 1, MPI_LONG, win));
        }
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    check_count(comm, "mixed locks", before, ITER);
    CHECK_MPI(MPI_Barrier(comm));
    if (crank == 0) {
        long writers = (csize + 1) / 2;
        CHECK(mem[0] == writers * ITER && mem[1] == writers * ITER, "mixed: a = %ld, b = %ld, expected %ld", mem[0],
              mem[1], writers * ITER);
    }
    CHECK_MPI(MPI_Win_free(&win));
}

static void lock_all(MPI_Comm comm)
{
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    int *mem = calloc((size_t)csize, sizeof *mem);
    int *got = calloc((size_t)csize, sizeof *got);
    CHECK(mem && got, "out of memory");
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, csize * (MPI_Aint)sizeof *mem, sizeof *mem, MPI_INFO_NULL, comm, &win));
    CHECK_MPI(MPI_Barrier(comm));
    unsigned long long before = locks_taken();
    int v = 100 + crank;
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int t = 0; t < csize; t++)
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, t, crank, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Get(got, csize, MPI_INT, (crank + 1) % csize, 0, csize, MPI_INT, win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    for (int i = 0; i < csize; i++)
        CHECK(got[i] == 100 + i, "lock_all: slot %d of rank %d is %d, expected %d", i, (crank + 1) % csize, got[i],
              100 + i);
    check_count(comm, "lock_all", before, 2 * (unsigned long long)csize);
    CHECK_MPI(MPI_Win_free(&win));
    free(mem);
    free(got);
}

static void cycles(MPI_Comm comm)
{
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    /* Beyond the region's 512 words (freed words reused) where it is quick. */
    const int CYCLES = csize <= 2 ? 600 : 200;
    unsigned long long before = locks_taken();
    for (int k = 0; k < CYCLES; k++) {
        int mem = -1, v = k * 1000 + crank;
        MPI_Win win;
        CHECK_MPI(MPI_Win_create(&mem, sizeof mem, sizeof mem, MPI_INFO_NULL, comm, &win));
        int right = (crank + 1) % csize;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_unlock(right, win));
        CHECK_MPI(MPI_Win_free(&win));   /* its closing barrier: every put is in */
        int left = (crank + csize - 1) % csize;
        CHECK(mem == k * 1000 + left, "cycle %d: got %d, expected %d", k, mem, k * 1000 + left);
    }
    check_count(comm, "create / free cycles", before, CYCLES);
}

/* Rank 0 reads its window in a plain loop, no MPI call, while every other
 * rank locks it exclusively, puts 16 KiB (the device path) and unlocks. */
static void no_target_progress(MPI_Comm comm)
{
    enum { RUN = 16 * 1024 / sizeof(int), ROUNDS = 20 };
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    int *mem = malloc((size_t)csize * RUN * sizeof *mem), *buf = malloc(RUN * sizeof *buf);
    CHECK(mem && buf, "out of memory");
    for (size_t i = 0; i < (size_t)csize * RUN; i++)
        mem[i] = -1;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, (MPI_Aint)csize * RUN * (MPI_Aint)sizeof *mem, sizeof *mem, MPI_INFO_NULL, comm,
                             &win));
    CHECK_MPI(MPI_Barrier(comm));
    unsigned long long before = locks_taken();
    if (crank == 0) {
        volatile int *seen = mem;
        double give_up = now() + 30;
        for (int i = 1; i < csize; i++)
            while (seen[(size_t)i * RUN + RUN - 1] != (ROUNDS - 1) * 1000 + i) {
                CHECK(now() < give_up, "rank %d's last put never arrived while the target stayed out of MPI", i);
                sched_yield();
            }
        for (int i = 1; i < csize; i++)
            for (size_t j = 0; j < RUN; j++)
                CHECK(mem[(size_t)i * RUN + j] == (ROUNDS - 1) * 1000 + i, "block %d word %zu is %d", i, j,
                      mem[(size_t)i * RUN + j]);
        check_count(comm, "no target progress (target)", before, 0);
    } else {
        for (int k = 0; k < ROUNDS; k++) {
            for (size_t j = 0; j < RUN; j++)
                buf[j] = k * 1000 + crank;
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            CHECK_MPI(MPI_Put(buf, RUN, MPI_INT, 0, (MPI_Aint)crank * RUN, RUN, MPI_INT, win));
            CHECK_MPI(MPI_Win_unlock(0, win));
        }
        check_count(comm, "no target progress", before, ROUNDS);
    }
    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Win_free(&win));
    free(mem);
    free(buf);
}

/* The queue of small puts (rma_lock vec, HASHI_RMA_DEVICE_VEC_MAX=4k):
 * 64 adjacent 1 KiB puts merge into pieces of 8 KiB or more, which go as
 * vector PUSHes (dimmnet_rma_pushv grows), and 64 scattered 8-byte puts go
 * as one message of many segments; bytes checked by the target. */
static void queued_puts(MPI_Comm comm)
{
    enum { RUN = 1024, N = 64 };
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    unsigned char *mem = calloc(2 * N * RUN, 1), *src = malloc(N * RUN);
    CHECK(mem && src, "out of memory");
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, 2 * N * RUN, 1, MPI_INFO_NULL, comm, &win));
    int right = (crank + 1) % csize, left = (crank + csize - 1) % csize;
    for (int i = 0; i < N * RUN; i++)
        src[i] = (unsigned char)(i * 7 + crank);
    int index, count;
    MPI_T_pvar_handle pushv = MPI_T_PVAR_HANDLE_NULL;
    unsigned long long before = 0, after = 0;
    CHECK(MPI_T_pvar_get_index("dimmnet_rma_pushv", MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS,
          "no pvar dimmnet_rma_pushv");
    CHECK(MPI_T_pvar_handle_alloc(session, index, NULL, &pushv, &count) == MPI_SUCCESS, "pvar_handle_alloc failed");
    CHECK(MPI_T_pvar_read(session, pushv, &before) == MPI_SUCCESS, "pvar_read failed");
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    for (int i = 0; i < N; i++)   /* adjacent: they merge */
        CHECK_MPI(MPI_Put(src + i * RUN, RUN, MPI_BYTE, right, i * RUN, RUN, MPI_BYTE, win));
    for (int i = 0; i < N; i++)   /* scattered 8-byte runs in the upper half */
        CHECK_MPI(MPI_Put(src + i * 8, 8, MPI_BYTE, right, N * RUN + i * RUN, 8, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK(MPI_T_pvar_read(session, pushv, &after) == MPI_SUCCESS, "pvar_read failed");
    CHECK(after > before, "no vector PUSH for 64 adjacent 1 KiB puts");
    CHECK(MPI_T_pvar_handle_free(session, &pushv) == MPI_SUCCESS, "pvar_handle_free failed");
    CHECK_MPI(MPI_Barrier(comm));
    for (int i = 0; i < N * RUN; i++)
        CHECK(mem[i] == (unsigned char)(i * 7 + left), "adjacent puts: byte %d is %d", i, mem[i]);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < RUN; j++)
            CHECK(mem[N * RUN + i * RUN + j] == (j < 8 ? (unsigned char)((i * 8 + j) * 7 + left) : 0),
                  "scattered puts: byte %d of run %d is %d", j, i, mem[N * RUN + i * RUN + j]);
    CHECK_MPI(MPI_Win_free(&win));
    free(mem);
    free(src);
}

static void all_checks(MPI_Comm comm)
{
    exclusive_counter(comm);
    shared_together(comm);
    mixed(comm);
    lock_all(comm);
    cycles(comm);
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mode = argc > 1 ? argv[1] : "any";
    if (strcmp(mode, "any")) {
        int provided, index, count;
        CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread failed");
        CHECK(MPI_T_pvar_get_index("dimmnet_rma_locks", MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS,
              "no pvar dimmnet_rma_locks");
        CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS, "pvar_session_create failed");
        CHECK(MPI_T_pvar_handle_alloc(session, index, NULL, &locks_handle, &count) == MPI_SUCCESS,
              "pvar_handle_alloc failed");
        pvar_open("dimmnet_rma_lock_wakes", &wakes_handle);
        pvar_open("dimmnet_rma_lock_waits", &waits_handle);
    }
    if (!strcmp(mode, "vec")) {
        queued_puts(MPI_COMM_WORLD);
        mode = "llcm";   /* and every other check, with the queue on */
    }
    all_checks(MPI_COMM_WORLD);
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int nsize;
    MPI_Comm_size(node, &nsize);
    if (nsize < size)
        all_checks(node);   /* dimmnet_vnodes: the node's window takes the words */
    /* Only where locks and 16 KiB puts need nothing of the target. */
    if (!strcmp(mode, "llcm") || (!strcmp(mode, "vnodes") && nsize < size))
        no_target_progress(!strcmp(mode, "llcm") ? MPI_COMM_WORLD : node);
    CHECK_MPI(MPI_Comm_free(&node));
    if (locks_handle != MPI_T_PVAR_HANDLE_NULL) {
        CHECK(MPI_T_pvar_handle_free(session, &locks_handle) == MPI_SUCCESS, "pvar_handle_free failed");
        CHECK(MPI_T_pvar_handle_free(session, &wakes_handle) == MPI_SUCCESS, "pvar_handle_free failed");
        CHECK(MPI_T_pvar_handle_free(session, &waits_handle) == MPI_SUCCESS, "pvar_handle_free failed");
        CHECK(MPI_T_pvar_session_free(&session) == MPI_SUCCESS, "pvar_session_free failed");
        CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize failed");
    }
    printf("rank %d of %d ok\n", rank, size);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
