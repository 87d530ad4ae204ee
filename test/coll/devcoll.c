/*
 * devcoll: the collectives a device runs beyond barrier, bcast, the
 * reductions, allgather and alltoall: MPI_Gather, MPI_Scatter, MPI_Scan,
 * MPI_Exscan and MPI_Reduce_scatter_block (and MPI_Reduce_scatter and
 * MPI_Allgatherv with equal counts, the latter also with blocks out of
 * order and gaps between them), blocking, nonblocking (MPI_I...) and persistent (..._init,
 * started twice), at every root, with MPI_IN_PLACE wherever the standard
 * allows it, contiguous and strided layouts, blocks of 8 and 128 bytes
 * (within a device's slots) and 1280 (above dimmnet's default 1 KiB). Every
 * result is checked element for element against its serial value; each call
 * carries values of its own, so data left over from an earlier call fails.
 *
 * argv[1], what the DIMMnet counters (MPI_T: dimmnet_llcm_gathers,
 * _scatters, _scans, _exscans, _reduce_scatters, _allgathers, _nb_colls) must show:
 *   device    each grew by exactly the calls made within the slots (the
 *             device ran them; 1280-byte blocks were declined), nb_colls by
 *             the nonblocking and persistent ones among them and those of
 *             Allgatherv above the slots (the exchange operation's)
 *   declined  they exist and stayed 0 (dimmnet over libfabric: the generic
 *             algorithms ran)
 *   any       not checked (another device, or virtual nodes)
 * argv[2]: rounds (default 2); argv[3]: the largest block the device takes
 * (HASHI_DIMMNET_COLL_MAX, default 1024). Prints 'rank R of S ok' last.
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "../util/check.h"
#include "../util/pvar.h"

#define MAXRANKS 16
#define MAXK 160   /* int64 elements of one block: 1280 bytes */

enum form { BLOCKING, NONBLOCKING, PERSISTENT, FORMS };
static const char *const form_names[] = { "blocking", "nonblocking", "persistent" };
enum kind { GATHER, SCATTER, SCAN, EXSCAN, REDUCE_SCATTER, ALLGATHERV, KINDS };
static const char *const counter_names[] = { "dimmnet_llcm_gathers", "dimmnet_llcm_scatters", "dimmnet_llcm_scans",
                                             "dimmnet_llcm_exscans", "dimmnet_llcm_reduce_scatters",
                                             "dimmnet_llcm_allgathers" };

static int wrank, wsize, tag_seq;
static size_t slot_max = 1024;
static long long expected[KINDS], expected_nb;
static int64_t sendbuf[2 * MAXRANKS * MAXK], recvbuf[2 * MAXRANKS * MAXK];

/* The value rank r contributes at element i of the call `tag`. */
static int64_t contrib(int r, int tag, int i)
{
    return (int64_t)(r + 1) * 1000003 + (int64_t)tag * 7919 + i;
}

/* The strided layout of k int64 (every other one), or MPI_INT64_T. */
static MPI_Datatype layout(int k, int strided, MPI_Count *count)
{
    MPI_Datatype t = MPI_INT64_T;
    *count = k;
    if (strided) {
        CHECK_MPI(MPI_Type_vector(k, 1, 2, MPI_INT64_T, &t));
        CHECK_MPI(MPI_Type_commit(&t));
        *count = 1;
    }
    return t;
}

static void layout_free(MPI_Datatype *t)
{
    if (*t != MPI_INT64_T)
        CHECK_MPI(MPI_Type_free(t));
}

/* Element i of k at buf in the layout. */
static int64_t *at(int64_t *buf, int strided, int i)
{
    return buf + (strided ? 2 * i : i);
}

/* One call in a form: the persistent request is made at run 0 and started
 * at every run; the others are issued at every run. */
struct call {
    enum form form;
    int run;
    MPI_Request req;
};

static int runs(enum form f)
{
    return f == PERSISTENT ? 2 : 1;
}

static void finish(struct call *c)
{
    if (c->form == BLOCKING)
        return;
    if (c->form == PERSISTENT)
        CHECK_MPI(MPI_Start(&c->req));
    CHECK_MPI(MPI_Wait(&c->req, MPI_STATUS_IGNORE));
}

static void count_call(enum kind kind, enum form f, size_t block_bytes)
{
    if (block_bytes > slot_max) {
        /* The nonblocking and persistent Allgatherv the allgather kind
         * declines: the sparse exchange's operation (coll/nbexchange). */
        if (kind == ALLGATHERV && f != BLOCKING)
            expected_nb++;
        return;
    }
    expected[kind]++;
    if (f != BLOCKING)
        expected_nb++;
}

static void gather(enum form f, int root, int k, int in_place, int strided)
{
    MPI_Count scount;
    MPI_Datatype st = layout(k, strided, &scount);
    struct call c = { f, 0, MPI_REQUEST_NULL };
    int me_root = wrank == root;
    void *sb = in_place && me_root ? MPI_IN_PLACE : sendbuf;
    for (c.run = 0; c.run < runs(f); c.run++) {
        int tag = ++tag_seq;
        for (int i = 0; i < k; i++)
            *at(sendbuf, strided, i) = contrib(wrank, tag, i);
        for (int i = 0; i < wsize * k; i++)
            recvbuf[i] = -1;
        if (in_place && me_root)
            for (int i = 0; i < k; i++)
                recvbuf[root * k + i] = contrib(root, tag, i);
        if (f == BLOCKING)
            CHECK_MPI(MPI_Gather_c(sb, scount, st, recvbuf, k, MPI_INT64_T, root, MPI_COMM_WORLD));
        else if (f == NONBLOCKING)
            CHECK_MPI(MPI_Igather_c(sb, scount, st, recvbuf, k, MPI_INT64_T, root, MPI_COMM_WORLD, &c.req));
        else if (c.run == 0)
            CHECK_MPI(MPI_Gather_init_c(sb, scount, st, recvbuf, k, MPI_INT64_T, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                                        &c.req));
        finish(&c);
        count_call(GATHER, f, (size_t)k * 8);
        for (int r = 0; r < wsize && me_root; r++)
            for (int i = 0; i < k; i++)
                CHECK(recvbuf[r * k + i] == contrib(r, tag, i),
                      "%s gather root %d k %d in_place %d strided %d: block %d [%d] = %lld, expected %lld",
                      form_names[f], root, k, in_place, strided, r, i, (long long)recvbuf[r * k + i],
                      (long long)contrib(r, tag, i));
    }
    if (f == PERSISTENT)
        CHECK_MPI(MPI_Request_free(&c.req));
    layout_free(&st);
}

static void scatter(enum form f, int root, int k, int in_place, int strided)
{
    MPI_Count rcount;
    MPI_Datatype rt = layout(k, strided, &rcount);
    struct call c = { f, 0, MPI_REQUEST_NULL };
    int me_root = wrank == root;
    void *rb = in_place && me_root ? MPI_IN_PLACE : recvbuf;
    for (c.run = 0; c.run < runs(f); c.run++) {
        int tag = ++tag_seq;
        for (int r = 0; r < wsize; r++)
            for (int i = 0; i < k; i++)
                sendbuf[r * k + i] = me_root ? contrib(r, tag, i) : -2;
        for (int i = 0; i < 2 * k; i++)
            recvbuf[i] = -1;
        if (f == BLOCKING)
            CHECK_MPI(MPI_Scatter_c(sendbuf, k, MPI_INT64_T, rb, rcount, rt, root, MPI_COMM_WORLD));
        else if (f == NONBLOCKING)
            CHECK_MPI(MPI_Iscatter_c(sendbuf, k, MPI_INT64_T, rb, rcount, rt, root, MPI_COMM_WORLD, &c.req));
        else if (c.run == 0)
            CHECK_MPI(MPI_Scatter_init_c(sendbuf, k, MPI_INT64_T, rb, rcount, rt, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                                         &c.req));
        finish(&c);
        count_call(SCATTER, f, (size_t)k * 8);
        for (int i = 0; i < k && rb != MPI_IN_PLACE; i++)
            CHECK(*at(recvbuf, strided, i) == contrib(wrank, tag, i),
                  "%s scatter root %d k %d strided %d: [%d] = %lld, expected %lld", form_names[f], root, k, strided,
                  i, (long long)*at(recvbuf, strided, i), (long long)contrib(wrank, tag, i));
        for (int i = 0; i < k && strided && rb != MPI_IN_PLACE; i++)
            CHECK(recvbuf[2 * i + 1] == -1, "%s scatter wrote the gap after element %d", form_names[f], i);
        for (int i = 0; i < k && rb == MPI_IN_PLACE; i++)
            CHECK(sendbuf[root * k + i] == contrib(root, tag, i), "in-place scatter changed the root's own block");
    }
    if (f == PERSISTENT)
        CHECK_MPI(MPI_Request_free(&c.req));
    layout_free(&rt);
}

/* op applied serially over ranks first .. last of element i. */
static int64_t serial(MPI_Op op, int first, int last, int tag, int i)
{
    int64_t v = contrib(first, tag, i);
    for (int r = first + 1; r <= last; r++)
        v = op == MPI_SUM ? v + contrib(r, tag, i) : v ^ contrib(r, tag, i);
    return v;
}

static void scan(enum form f, int exclusive, int k, int in_place, MPI_Op op)
{
    struct call c = { f, 0, MPI_REQUEST_NULL };
    void *sb = in_place ? MPI_IN_PLACE : sendbuf;
    for (c.run = 0; c.run < runs(f); c.run++) {
        int tag = ++tag_seq;
        for (int i = 0; i < k; i++) {
            sendbuf[i] = contrib(wrank, tag, i);
            recvbuf[i] = in_place ? sendbuf[i] : -1;
        }
        if (f == BLOCKING)
            CHECK_MPI(exclusive ? MPI_Exscan(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD)
                                : MPI_Scan(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD));
        else if (f == NONBLOCKING)
            CHECK_MPI(exclusive ? MPI_Iexscan(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD, &c.req)
                                : MPI_Iscan(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD, &c.req));
        else if (c.run == 0)
            CHECK_MPI(exclusive ? MPI_Exscan_init(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD, MPI_INFO_NULL, &c.req)
                                : MPI_Scan_init(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD, MPI_INFO_NULL, &c.req));
        finish(&c);
        count_call(exclusive ? EXSCAN : SCAN, f, (size_t)k * 8);
        int last = exclusive ? wrank - 1 : wrank;
        for (int i = 0; i < k && last >= 0; i++)   /* an exscan's rank 0: undefined */
            CHECK(recvbuf[i] == serial(op, 0, last, tag, i), "%s %s k %d in_place %d op %s: [%d] = %lld, expected %lld",
                  form_names[f], exclusive ? "exscan" : "scan", k, in_place, op == MPI_SUM ? "sum" : "bxor", i,
                  (long long)recvbuf[i], (long long)serial(op, 0, last, tag, i));
    }
    if (f == PERSISTENT)
        CHECK_MPI(MPI_Request_free(&c.req));
}

/* Reduce_scatter_block; vector: MPI_Reduce_scatter with every count k. */
static void reduce_scatter(enum form f, int k, int in_place, int vector, MPI_Op op)
{
    struct call c = { f, 0, MPI_REQUEST_NULL };
    MPI_Count counts[MAXRANKS];
    for (int r = 0; r < wsize; r++)
        counts[r] = k;
    void *sb = in_place ? MPI_IN_PLACE : sendbuf;
    for (c.run = 0; c.run < runs(f); c.run++) {
        int tag = ++tag_seq;
        /* Our block for rank r: elements r * k .. of our vector. */
        for (int i = 0; i < wsize * k; i++) {
            sendbuf[i] = contrib(wrank, tag, i);
            recvbuf[i] = in_place ? sendbuf[i] : -1;
        }
        if (vector)
            CHECK_MPI(MPI_Reduce_scatter_c(sb, recvbuf, counts, MPI_INT64_T, op, MPI_COMM_WORLD));
        else if (f == BLOCKING)
            CHECK_MPI(MPI_Reduce_scatter_block(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD));
        else if (f == NONBLOCKING)
            CHECK_MPI(MPI_Ireduce_scatter_block(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD, &c.req));
        else if (c.run == 0)
            CHECK_MPI(MPI_Reduce_scatter_block_init(sb, recvbuf, k, MPI_INT64_T, op, MPI_COMM_WORLD, MPI_INFO_NULL,
                                                    &c.req));
        finish(&c);
        count_call(REDUCE_SCATTER, f, (size_t)k * 8);
        for (int i = 0; i < k; i++) {
            int64_t want = serial(op, 0, wsize - 1, tag, wrank * k + i);
            CHECK(recvbuf[i] == want, "%s reduce_scatter%s k %d in_place %d: [%d] = %lld, expected %lld",
                  form_names[f], vector ? "" : "_block", k, in_place, i, (long long)recvbuf[i], (long long)want);
        }
    }
    if (f == PERSISTENT)
        CHECK_MPI(MPI_Request_free(&c.req));
}

/* Allgatherv with every count k: blocks at i * k (regular), or in reverse
 * order with a gap before each (a member's own layout). */
static void allgatherv(enum form f, int k, int in_place, int irregular)
{
    struct call c = { f, 0, MPI_REQUEST_NULL };
    MPI_Count counts[MAXRANKS];
    MPI_Aint displs[MAXRANKS];
    for (int r = 0; r < wsize; r++) {
        counts[r] = k;
        displs[r] = irregular ? (MPI_Aint)(wsize - 1 - r) * (k + 1) + 1 : (MPI_Aint)r * k;
    }
    void *sb = in_place ? MPI_IN_PLACE : sendbuf;
    int span = wsize * (k + 1) + 1;
    for (c.run = 0; c.run < runs(f); c.run++) {
        int tag = ++tag_seq;
        for (int i = 0; i < span; i++)
            recvbuf[i] = -1;
        for (int i = 0; i < k; i++) {
            sendbuf[i] = contrib(wrank, tag, i);
            if (in_place)
                recvbuf[displs[wrank] + i] = sendbuf[i];
        }
        if (f == BLOCKING)
            CHECK_MPI(MPI_Allgatherv_c(sb, k, MPI_INT64_T, recvbuf, counts, displs, MPI_INT64_T, MPI_COMM_WORLD));
        else if (f == NONBLOCKING)
            CHECK_MPI(MPI_Iallgatherv_c(sb, k, MPI_INT64_T, recvbuf, counts, displs, MPI_INT64_T, MPI_COMM_WORLD,
                                        &c.req));
        else if (c.run == 0)
            CHECK_MPI(MPI_Allgatherv_init_c(sb, k, MPI_INT64_T, recvbuf, counts, displs, MPI_INT64_T, MPI_COMM_WORLD,
                                            MPI_INFO_NULL, &c.req));
        finish(&c);
        count_call(ALLGATHERV, f, (size_t)k * 8);
        for (int r = 0; r < wsize; r++)
            for (int i = 0; i < k; i++)
                CHECK(recvbuf[displs[r] + i] == contrib(r, tag, i),
                      "%s allgatherv k %d in_place %d irregular %d: block %d [%d] = %lld, expected %lld",
                      form_names[f], k, in_place, irregular, r, i, (long long)recvbuf[displs[r] + i],
                      (long long)contrib(r, tag, i));
        for (int r = 0; r < wsize && irregular; r++)
            CHECK(recvbuf[displs[r] - 1] == -1, "%s allgatherv wrote the gap before block %d", form_names[f], r);
    }
    if (f == PERSISTENT)
        CHECK_MPI(MPI_Request_free(&c.req));
}

/* ---- the counters (MPI_T) ---- */

static unsigned long long baseline[KINDS + 1];

static const char *counter_name(int k)
{
    return k < KINDS ? counter_names[k] : "dimmnet_llcm_nb_colls";
}

/* 1 when the DIMMnet counters exist (dimmnet is the device); takes their
 * values before the calls. */
static int counters_open(void)
{
    int provided, found;
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread failed");
    read_counter("dimmnet_llcm_nb_colls", &found);
    if (!found)
        return 0;
    for (int k = 0; k <= KINDS; k++)
        baseline[k] = counter_value(counter_name(k));
    return 1;
}

static void counters_check(int device)
{
    for (int k = 0; k <= KINDS; k++) {
        unsigned long long v = counter_value(counter_name(k)) - baseline[k];
        long long want = !device ? 0 : k < KINDS ? expected[k] : expected_nb;
        CHECK((long long)v == want, "%s grew by %llu, expected %lld (the device ran %s calls than it should)",
              counter_name(k), v, want, (long long)v < want ? "fewer" : "more");
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "any";
    int rounds = argc > 2 ? atoi(argv[2]) : 2;
    if (argc > 3)
        slot_max = (size_t)atol(argv[3]);
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    CHECK(wsize <= MAXRANKS, "at most %d ranks", MAXRANKS);
    int check_counters = strcmp(mode, "any") != 0, device = strcmp(mode, "device") == 0;
    if (check_counters)
        CHECK(counters_open(), "mode %s needs the dimmnet device's counters", mode);
    static const int ks[] = { 1, 16, MAXK };
    for (int round = 0; round < rounds; round++)
        for (int f = 0; f < FORMS; f++)
            for (size_t s = 0; s < sizeof ks / sizeof ks[0]; s++) {
                int k = ks[s], alt = (round + f + (int)s) % 2;
                for (int root = 0; root < wsize; root++) {
                    gather((enum form)f, root, k, (root + alt) % 2, (root + round) % 3 == 1);
                    scatter((enum form)f, root, k, (root + alt + 1) % 2, (root + round) % 3 == 2);
                }
                scan((enum form)f, 0, k, alt, alt ? MPI_BXOR : MPI_SUM);
                scan((enum form)f, 1, k, !alt, alt ? MPI_SUM : MPI_BXOR);
                reduce_scatter((enum form)f, k, alt, 0, MPI_SUM);
                reduce_scatter((enum form)f, k, !alt, 0, MPI_BXOR);
                if (f == BLOCKING)
                    reduce_scatter(BLOCKING, k, alt, 1, MPI_SUM);
                allgatherv((enum form)f, k, alt, 0);
                allgatherv((enum form)f, k, !alt, 1);
            }
    if (check_counters) {
        counters_check(device);
        CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize failed");
    }
    printf("rank %d of %d ok\n", wrank, wsize);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
