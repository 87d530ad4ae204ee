/*
 * The device path of one-sided communication (docs/rma.md, "Device path"):
 * contiguous runs of MPI_Put / MPI_Get (and the R forms) on created and
 * allocated windows go through hashi_device->rma where the device reaches
 * the target; everything else stays on request messages. Every operation
 * is checked byte for byte, and DIMMnet's counters (MPI_T:
 * dimmnet_rma_puts, dimmnet_rma_gets) must have grown by exactly the
 * device-eligible operations this rank issued.
 *
 * argv[1]: device (every eligible op counted: the default cell, where all
 * ranks are on emu; argv[2], argv[3]: HASHI_RMA_DEVICE_MIN and _MAX as
 * set, in bytes, 0 for no limit), generic (counters stay 0: HASHI_RMA_DEVICE=0, fabric
 * cells), any (no counters read: other devices and mixed layouts).
 * Ranks talk to their right neighbour (never themselves), so 2 and 4 ranks
 * run the same code.
 */
#include "../util/check.h"

#include <stdint.h>
#include <string.h>

static int rank, size, right, left;
static long long want_puts, want_gets;   /* device-eligible operations issued */
static size_t device_min, device_max;    /* argv[2], argv[3]: HASHI_RMA_DEVICE_MIN, _MAX as set */

/* An eligible run of `bytes` goes to the device if its size is in range. */
static int in_range(size_t bytes)
{
    return bytes >= device_min && (!device_max || bytes <= device_max);
}
static void count_put(size_t bytes)
{
    want_puts += in_range(bytes);
}
static void count_get(size_t bytes)
{
    want_gets += in_range(bytes);
}

static unsigned char pat(int who, int round, size_t i)
{
    return (unsigned char)(i * 11u + (size_t)who * 29u + (size_t)round * 17u + 3u);
}

static void fill(unsigned char *p, size_t n, int who, int round)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pat(who, round, i);
}

static void expect(const unsigned char *p, size_t n, int who, int round, const char *what)
{
    for (size_t i = 0; i < n; i++)
        CHECK(p[i] == pat(who, round, i), "%s: byte %zu is %u, expected %u", what, i, p[i], pat(who, round, i));
}

/* Fence epochs on a window of n bytes (allocated or created): contiguous
 * put and get (device), a strided target (messages), a strided origin into
 * a contiguous target (device, packed), a get into a strided origin
 * (device, unpacked), an accumulate (messages). */
static void fence_epochs(int allocate, size_t n, int round)
{
    unsigned char *mem;
    MPI_Win win;
    if (allocate) {
        CHECK_MPI(MPI_Win_allocate((MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else {
        mem = malloc(n);
        CHECK(mem, "out of memory");
        CHECK_MPI(MPI_Win_create(mem, (MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    unsigned char *src = malloc(n), *back = malloc(n);
    CHECK(src && back, "out of memory");
    fill(src, n, rank, round);
    memset(mem, 0, n);
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    CHECK_MPI(MPI_Put(src, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win));
    count_put(n);
    CHECK_MPI(MPI_Win_fence(0, win));
    expect(mem, n, left, round, "fence put");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Get(back, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win));
    count_get(n);
    CHECK_MPI(MPI_Win_fence(0, win));
    expect(back, n, rank, round, "fence get");

    /* Every other byte of the first 64 at the target: messages. */
    MPI_Datatype every2, pair;
    CHECK_MPI(MPI_Type_vector(32, 1, 2, MPI_BYTE, &every2));
    CHECK_MPI(MPI_Type_commit(&every2));
    memset(mem, 0, 64);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(src, 32, MPI_BYTE, right, 0, 1, every2, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 64; i++)
        CHECK(mem[i] == (i % 2 ? 0 : pat(left, round, (size_t)i / 2)), "strided target byte %d is %u", i, mem[i]);
    /* The epoch the fence opened lets left write here at once (a device
     * put needs nothing of ours): our loads must be done first. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* A strided origin into 32 contiguous target bytes: packed, then the device. */
    CHECK_MPI(MPI_Put(src, 1, every2, right, 0, 32, MPI_BYTE, win));
    count_put(32);
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 32; i++)
        CHECK(mem[i] == pat(left, round, (size_t)i * 2), "strided origin byte %d is %u", i, mem[i]);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* A get of 32 contiguous bytes into a strided origin. */
    memset(back, 0, 64);
    CHECK_MPI(MPI_Get(back, 1, every2, right, 0, 32, MPI_BYTE, win));
    count_get(32);
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 64; i += 2)
        CHECK(back[i] == pat(rank, round, (size_t)i), "strided get byte %d is %u", i, back[i]);
    /* Two ints summed: messages, whatever the layout. */
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_MPI(MPI_Type_commit(&pair));
    int one[2] = { 1, 2 };
    memset(mem, 0, 8);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Accumulate(one, 2, MPI_INT, right, 0, 1, pair, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(one, 2, MPI_INT, right, 0, 1, pair, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    int got[2];
    memcpy(got, mem, sizeof got);
    CHECK(got[0] == 2 && got[1] == 4, "accumulated %d %d, expected 2 4", got[0], got[1]);
    CHECK_MPI(MPI_Type_free(&every2));
    CHECK_MPI(MPI_Type_free(&pair));
    CHECK_MPI(MPI_Win_free(&win));
    if (!allocate)
        free(mem);
    free(src);
    free(back);
}

/* Passive target, PSCW and request forms on one allocated window. */
static void other_epochs(int round)
{
    enum { N = 4096 };
    unsigned char *mem, src[N], back[N];
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    memset(mem, 0, N);
    fill(src, N, rank, round);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* Lock, put, flush, get the same bytes back: the get sees the put. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CHECK_MPI(MPI_Put(src, N / 2, MPI_BYTE, right, 0, N / 2, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_MPI(MPI_Get(back, N / 2, MPI_BYTE, right, 0, N / 2, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    count_put(N / 2);
    count_get(N / 2);
    expect(back, N / 2, rank, round, "lock put/get");

    /* Request forms: the data is there (put: written; get: read) at MPI_Wait. */
    MPI_Request rq[2];
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Rput(src + N / 2, N / 2, MPI_BYTE, right, N / 2, N / 2, MPI_BYTE, win, &rq[0]));
    CHECK_MPI(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_flush(right, win));
    memset(back, 0, N);
    CHECK_MPI(MPI_Rget(back, N, MPI_BYTE, right, 0, N, MPI_BYTE, win, &rq[1]));
    CHECK_MPI(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    count_put(N / 2);
    count_get(N);
    expect(back, N, rank, round, "rput/rget");
    /* A device put and a message accumulate to one target, one flush_all. */
    int add = 5;
    CHECK_MPI(MPI_Put(src, 64, MPI_BYTE, right, 64, 64, MPI_BYTE, win));
    CHECK_MPI(MPI_Accumulate(&add, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win));
    count_put(64);
    CHECK_MPI(MPI_Win_flush_all(win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int first;
    memcpy(&first, mem, sizeof first);
    int before;
    memcpy(&before, (unsigned char[4]){ pat(left, round, 0), pat(left, round, 1), pat(left, round, 2),
                                        pat(left, round, 3) },
           sizeof before);
    CHECK(first == before + 5, "put then accumulate: %d, expected %d", first, before + 5);
    expect(mem + 64, 64, left, round, "put beside an accumulate");

    /* PSCW: the target's MPI_Win_wait returns with the put in place. */
    MPI_Group world, to, from;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_incl(world, 1, &right, &to));
    CHECK_MPI(MPI_Group_incl(world, 1, &left, &from));
    CHECK_MPI(MPI_Win_post(from, 0, win));
    CHECK_MPI(MPI_Win_start(to, 0, win));
    fill(src, N, rank, round + 1);
    CHECK_MPI(MPI_Put(src, N, MPI_BYTE, right, 0, N, MPI_BYTE, win));
    count_put(N);
    CHECK_MPI(MPI_Win_complete(win));
    CHECK_MPI(MPI_Win_wait(win));
    expect(mem, N, left, round + 1, "pscw put");
    CHECK_MPI(MPI_Group_free(&world));
    CHECK_MPI(MPI_Group_free(&to));
    CHECK_MPI(MPI_Group_free(&from));
    CHECK_MPI(MPI_Win_free(&win));
}

/* An exclusive lock guards get-add-put of a counter at rank 0 (which does
 * not take part: no rank targets itself): the unlock must not let the next
 * holder in before the put landed, nor a get run before the grant. */
static void exclusive_counter(void)
{
    enum { ITERS = 50 };
    int64_t *counter;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(rank == 0 ? sizeof *counter : 0, sizeof *counter, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &counter, &win));
    if (rank == 0)
        *counter = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank != 0) {
        for (int i = 0; i < ITERS; i++) {
            int64_t v;
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            CHECK_MPI(MPI_Get(&v, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win));
            CHECK_MPI(MPI_Win_flush(0, win));
            v++;
            CHECK_MPI(MPI_Put(&v, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win));
            CHECK_MPI(MPI_Win_unlock(0, win));
            count_get(sizeof v);
            count_put(sizeof v);
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        CHECK(*counter == (int64_t)ITERS * (size - 1), "counter %lld, expected %lld", (long long)*counter,
              (long long)ITERS * (size - 1));
    CHECK_MPI(MPI_Win_free(&win));
}

/* Dynamic and shared windows stay on messages (and shared-memory stores). */
static void generic_windows(int round)
{
    enum { N = 256 };
    unsigned char src[N], back[N];
    fill(src, N, rank, round);
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    unsigned char *region = calloc(N, 1);
    CHECK(region, "out of memory");
    CHECK_MPI(MPI_Win_attach(win, region, N));
    MPI_Aint mine, theirs;
    CHECK_MPI(MPI_Get_address(region, &mine));
    CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_AINT, left, 0, &theirs, 1, MPI_AINT, right, 0, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(src, N, MPI_BYTE, right, theirs, N, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get(back, N, MPI_BYTE, right, theirs, N, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    expect(region, N, left, round, "dynamic put");
    expect(back, N, rank, round, "dynamic get");
    CHECK_MPI(MPI_Win_detach(win, region));
    CHECK_MPI(MPI_Win_free(&win));
    free(region);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "any";
    device_min = argc > 2 ? (size_t)strtoull(argv[2], NULL, 0) : 0;
    device_max = argc > 3 ? (size_t)strtoull(argv[3], NULL, 0) : 0;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2, "needs 2 ranks at least");
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    int check = strcmp(mode, "any") != 0;
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle puts = MPI_T_PVAR_HANDLE_NULL, gets = MPI_T_PVAR_HANDLE_NULL;
    if (check) {
        int provided, ip, ig, count;
        CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread failed");
        CHECK(MPI_T_pvar_get_index("dimmnet_rma_puts", MPI_T_PVAR_CLASS_COUNTER, &ip) == MPI_SUCCESS &&
                  MPI_T_pvar_get_index("dimmnet_rma_gets", MPI_T_PVAR_CLASS_COUNTER, &ig) == MPI_SUCCESS,
              "mode %s needs dimmnet's counters dimmnet_rma_puts, dimmnet_rma_gets", mode);
        CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS, "pvar_session_create failed");
        CHECK(MPI_T_pvar_handle_alloc(session, ip, NULL, &puts, &count) == MPI_SUCCESS, "pvar_handle_alloc failed");
        CHECK(MPI_T_pvar_handle_alloc(session, ig, NULL, &gets, &count) == MPI_SUCCESS, "pvar_handle_alloc failed");
    }
    for (int round = 0; round < 2; round++) {
        fence_epochs(round, 64, round);
        fence_epochs(round, 16384, round);   /* in the default size range of the device path */
        fence_epochs(!round, 1 << 20, round);   /* above the message size and the direct-put threshold */
        other_epochs(round);
        generic_windows(round);
    }
    exclusive_counter();
    if (check) {
        unsigned long long p = 0, g = 0;
        CHECK(MPI_T_pvar_read(session, puts, &p) == MPI_SUCCESS && MPI_T_pvar_read(session, gets, &g) == MPI_SUCCESS,
              "pvar_read failed");
        int device = strcmp(mode, "device") == 0;
        CHECK((long long)p == (device ? want_puts : 0) && (long long)g == (device ? want_gets : 0),
              "dimmnet_rma_puts = %llu, dimmnet_rma_gets = %llu, expected %lld and %lld", p, g,
              device ? want_puts : 0, device ? want_gets : 0);
        CHECK(MPI_T_pvar_handle_free(session, &puts) == MPI_SUCCESS, "pvar_handle_free failed");
        CHECK(MPI_T_pvar_handle_free(session, &gets) == MPI_SUCCESS, "pvar_handle_free failed");
        CHECK(MPI_T_pvar_session_free(&session) == MPI_SUCCESS, "pvar_session_free failed");
        CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize failed");
    }
    CHECK_MPI(MPI_Finalize());
    printf("rank %d of %d ok (puts %lld gets %lld)\n", rank, size, want_puts, want_gets);
    return 0;
}
