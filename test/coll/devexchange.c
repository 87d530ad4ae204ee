/*
 * devexchange: the device's sparse exchange (device.h `exchange`), which
 * carries the blocking MPI_Alltoallv, MPI_Alltoallw, MPI_Gatherv,
 * MPI_Scatterv, MPI_Allgatherv (what the allgather kind leaves) and the
 * neighbourhood collectives.
 *
 * - Alltoallv with irregular counts: zeros, pairs within a slot and pairs
 *   above it in one call (HASHI_DIMMNET_COLL_MAX: each pair's path is its
 *   own), blocks out of rank order with gaps, a strided receive type (the
 *   blocks are staged and unpacked), then the nonblocking form between
 *   blocking ones (the device's exchange operation, on the same pairs).
 * - Alltoallw with a different type per peer (contiguous; a vector sent,
 *   contiguous received; int64 sent, pairs of int64 received).
 * - Neighbor_alltoall on a periodic ring: at 2 ranks both neighbours are
 *   one process, so its two blocks travel concatenated and must arrive in
 *   MPI's Cartesian order (the block sent to -1 is received from +1);
 *   Neighbor_allgather on a non-periodic line (MPI_PROC_NULL ends);
 *   Neighbor_alltoallv on a distributed graph with a self edge and a
 *   doubled edge (the k-th edge from a to b meets the k-th into b from a).
 * - Gatherv and Scatterv at every root, in place and not (the device's
 *   from 3 members); Allgatherv with
 *   irregular counts, in place and not; nothing written past a block.
 * Every element is checked against its value from the sender's rank, the
 * call and the position; each call carries values of its own.
 *
 * argv[1], what dimmnet's counter dimmnet_llcm_exchanges (MPI_T) must show:
 *   device    grew by exactly the calls made (the device ran them)
 *   declined  exists and stayed 0 (dimmnet over libfabric: generic)
 *   off       stayed 0 (HASHI_COLL_DEVICE_EXCHANGE=0)
 *   any       not checked
 * argv[2]: rounds (default 2). Prints 'rank R of S ok' last.
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "../util/check.h"
#include "../util/pvar.h"

#define MAXRANKS 16
#define MAXK 400   /* int64 elements of one block: 3200 bytes, above the default 1 KiB slot */

static int me, n, tag_seq;
static long long expected_calls;

static int64_t value(int from, int to, int tag, int i)
{
    return (int64_t)(from + 1) * 1000003 + (int64_t)(to + 1) * 10007 + (int64_t)tag * 7919 + i;
}

/* Elements rank `from` sends rank `to` in call `tag`: a mix of 0, small and
 * above-slot counts that both ends compute alike. */
static int pair_count(int from, int to, int tag)
{
    static const int counts[] = { 0, 1, 7, 130, MAXK, 16 };
    return counts[(from * 3 + to * 5 + tag) % 6];
}

static void alltoallv(int blocking, int strided)
{
    int tag = ++tag_seq;
    static int64_t sbuf[MAXRANKS * MAXK], rbuf[2 * MAXRANKS * MAXK];
    int scounts[MAXRANKS], sdispls[MAXRANKS], rcounts[MAXRANKS], rdispls[MAXRANKS];
    /* Send blocks in reverse rank order with a gap of 3 elements between. */
    int at = 0;
    for (int p = n - 1; p >= 0; p--) {
        scounts[p] = pair_count(me, p, tag);
        sdispls[p] = at;
        for (int i = 0; i < scounts[p]; i++)
            sbuf[at + i] = value(me, p, tag, i);
        at += scounts[p] + 3;
    }
    /* Receive in rank order; strided: every other int64 (a vector type). */
    MPI_Datatype rtype = MPI_INT64_T;
    if (strided) {
        CHECK_MPI(MPI_Type_create_resized(MPI_INT64_T, 0, 16, &rtype));
        CHECK_MPI(MPI_Type_commit(&rtype));
    }
    at = 0;
    for (int p = 0; p < n; p++) {
        rcounts[p] = pair_count(p, me, tag);
        rdispls[p] = at;
        at += rcounts[p] + 1;
    }
    for (int i = 0; i < 2 * MAXRANKS * MAXK; i++)
        rbuf[i] = -1;
    if (blocking) {
        CHECK_MPI(MPI_Alltoallv(sbuf, scounts, sdispls, MPI_INT64_T, rbuf, rcounts, rdispls, rtype, MPI_COMM_WORLD));
        expected_calls++;
    } else {
        MPI_Request r;
        CHECK_MPI(MPI_Ialltoallv(sbuf, scounts, sdispls, MPI_INT64_T, rbuf, rcounts, rdispls, rtype, MPI_COMM_WORLD,
                                 &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        expected_calls += n > 2;   /* the device's exchange operation, from 3 members (coll/nbexchange) */
    }
    int stride = strided ? 2 : 1;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < rcounts[p]; i++) {
            int64_t got = rbuf[(size_t)(rdispls[p] + i) * stride];
            CHECK(got == value(p, me, tag, i), "alltoallv%s%s from %d element %d of %d: %lld, expected %lld",
                  blocking ? "" : " (nonblocking)", strided ? " strided" : "", p, i, rcounts[p], (long long)got,
                  (long long)value(p, me, tag, i));
        }
        /* The gap after a block stays untouched. */
        int64_t gap = rbuf[(size_t)(rdispls[p] + rcounts[p]) * stride];
        CHECK(gap == -1, "alltoallv wrote past the block from %d", p);
    }
    if (strided)
        CHECK_MPI(MPI_Type_free(&rtype));
}

static void alltoallw(void)
{
    int tag = ++tag_seq;
    static int64_t sbuf[MAXRANKS * 2 * MAXK], rbuf[MAXRANKS * 2 * MAXK];
    int scounts[MAXRANKS], sdispls[MAXRANKS], rcounts[MAXRANKS], rdispls[MAXRANKS];
    MPI_Datatype stypes[MAXRANKS], rtypes[MAXRANKS], every_other, pairs;
    CHECK_MPI(MPI_Type_vector(MAXK / 4, 1, 2, MPI_INT64_T, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT64_T, &pairs));
    CHECK_MPI(MPI_Type_commit(&pairs));
    /* Peer p (mod 3): 0 contiguous int64 x 5; 1 one vector (MAXK/4 int64,
     * every other) received as contiguous int64; 2 int64 x 200 sent,
     * received as 100 pairs. The kind is symmetric in the two ranks. */
    for (int p = 0; p < n; p++) {
        int kind = (p + me + tag) % 3;
        sdispls[p] = rdispls[p] = (int)((size_t)p * 2 * MAXK * sizeof(int64_t));
        stypes[p] = kind == 1 ? every_other : MPI_INT64_T;
        scounts[p] = kind == 0 ? 5 : kind == 1 ? 1 : 200;
        rtypes[p] = kind == 2 ? pairs : MPI_INT64_T;
        rcounts[p] = kind == 0 ? 5 : kind == 1 ? MAXK / 4 : 100;
        int elems = kind == 1 ? MAXK / 4 : scounts[p];
        for (int i = 0; i < elems; i++)
            sbuf[(size_t)p * 2 * MAXK + (size_t)i * (kind == 1 ? 2 : 1)] = value(me, p, tag, i);
    }
    memset(rbuf, 0xff, sizeof rbuf);
    CHECK_MPI(MPI_Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, MPI_COMM_WORLD));
    expected_calls++;
    for (int p = 0; p < n; p++) {
        int kind = (p + me + tag) % 3;
        int elems = kind == 1 ? MAXK / 4 : kind == 0 ? 5 : 200;
        for (int i = 0; i < elems; i++) {
            int64_t got = rbuf[(size_t)p * 2 * MAXK + i];
            CHECK(got == value(p, me, tag, i), "alltoallw from %d (kind %d) element %d: %lld, expected %lld", p, kind,
                  i, (long long)got, (long long)value(p, me, tag, i));
        }
    }
    CHECK_MPI(MPI_Type_free(&every_other));
    CHECK_MPI(MPI_Type_free(&pairs));
}

/* Gatherv at root (in place or not), then Scatterv back, both with the
 * pair counts of pair_count (0, small and above the slot). */
static void rooted_v(int root, int in_place)
{
    int tag = ++tag_seq;
    static int64_t mine[MAXK], all[MAXRANKS * (MAXK + 2)];
    int counts[MAXRANKS], displs[MAXRANKS], at = 0;
    for (int p = 0; p < n; p++) {
        counts[p] = pair_count(p, root, tag);
        displs[p] = at;
        at += counts[p] + 2;
    }
    int k = counts[me];
    for (int i = 0; i < k; i++)
        mine[i] = value(me, root, tag, i);
    for (int i = 0; i < MAXRANKS * (MAXK + 2); i++)
        all[i] = -5;
    int place = in_place && me == root;
    if (place)
        for (int i = 0; i < k; i++)
            all[displs[me] + i] = mine[i];
    CHECK_MPI(MPI_Gatherv(place ? MPI_IN_PLACE : mine, k, MPI_INT64_T, all, counts, displs, MPI_INT64_T, root,
                          MPI_COMM_WORLD));
    expected_calls += n > 2;   /* the device takes them from 3 members */
    if (me == root)
        for (int p = 0; p < n; p++) {
            for (int i = 0; i < counts[p]; i++)
                CHECK(all[displs[p] + i] == value(p, root, tag, i), "gatherv at %d%s from %d element %d: %lld", root,
                      place ? " in place" : "", p, i, (long long)all[displs[p] + i]);
            CHECK(all[displs[p] + counts[p]] == -5, "gatherv wrote past the block from %d", p);
        }
    /* Scatterv: the root sends each member its block back, changed. */
    tag = ++tag_seq;
    if (me == root)
        for (int p = 0; p < n; p++)
            for (int i = 0; i < counts[p]; i++)
                all[displs[p] + i] = value(root, p, tag, i);
    for (int i = 0; i < MAXK; i++)
        mine[i] = -6;
    CHECK_MPI(MPI_Scatterv(all, counts, displs, MPI_INT64_T, place ? MPI_IN_PLACE : mine, k, MPI_INT64_T, root,
                           MPI_COMM_WORLD));
    expected_calls += n > 2;
    for (int i = 0; i < k && !place; i++)
        CHECK(mine[i] == value(root, me, tag, i), "scatterv from %d element %d: %lld", root, i, (long long)mine[i]);
    if (k < MAXK && !place)
        CHECK(mine[k] == -6, "scatterv wrote past the block");
}

/* Allgatherv with irregular counts (each member's own count for all). */
static void allgatherv(int in_place)
{
    int tag = ++tag_seq;
    static int64_t mine[MAXK], all[MAXRANKS * (MAXK + 1)];
    int counts[MAXRANKS], displs[MAXRANKS], at = 0;
    for (int p = n - 1; p >= 0; p--) {   /* blocks in reverse rank order */
        counts[p] = pair_count(p, p, tag);
        displs[p] = at;
        at += counts[p] + 1;
    }
    for (int i = 0; i < MAXRANKS * (MAXK + 1); i++)
        all[i] = -4;
    for (int i = 0; i < counts[me]; i++)
        (in_place ? all + displs[me] : mine)[i] = value(me, 0, tag, i);
    CHECK_MPI(MPI_Allgatherv(in_place ? MPI_IN_PLACE : mine, counts[me], MPI_INT64_T, all, counts, displs,
                             MPI_INT64_T, MPI_COMM_WORLD));
    expected_calls++;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < counts[p]; i++)
            CHECK(all[displs[p] + i] == value(p, 0, tag, i), "allgatherv%s from %d element %d: %lld",
                  in_place ? " in place" : "", p, i, (long long)all[displs[p] + i]);
        CHECK(all[displs[p] + counts[p]] == -4, "allgatherv wrote past the block from %d", p);
    }
}

/* Periodic ring: send[0] to rank - 1, send[1] to rank + 1; recv[0] from
 * rank - 1 (what it sent to its + 1), recv[1] from rank + 1. */
static void neighbor_ring(MPI_Comm ring, int k)
{
    int tag = ++tag_seq;
    static int64_t sbuf[2 * MAXK], rbuf[2 * MAXK];
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < k; i++)
            sbuf[d * k + i] = value(me, d, tag, i);
    memset(rbuf, 0, sizeof rbuf);
    CHECK_MPI(MPI_Neighbor_alltoall(sbuf, k, MPI_INT64_T, rbuf, k, MPI_INT64_T, ring));
    expected_calls++;
    int left = (me - 1 + n) % n, right = (me + 1) % n;
    for (int i = 0; i < k; i++) {
        CHECK(rbuf[i] == value(left, 1, tag, i), "neighbor_alltoall (%d int64): block from the left wrong at %d", k,
              i);
        CHECK(rbuf[k + i] == value(right, 0, tag, i),
              "neighbor_alltoall (%d int64): block from the right wrong at %d", k, i);
    }
}

/* A non-periodic line: the ends have MPI_PROC_NULL neighbours. */
static void neighbor_line(MPI_Comm line, int k)
{
    int tag = ++tag_seq;
    static int64_t sbuf[MAXK], rbuf[2 * MAXK];
    for (int i = 0; i < k; i++)
        sbuf[i] = value(me, 0, tag, i);
    for (int i = 0; i < 2 * k; i++)
        rbuf[i] = -7;
    CHECK_MPI(MPI_Neighbor_allgather(sbuf, k, MPI_INT64_T, rbuf, k, MPI_INT64_T, line));
    expected_calls++;
    for (int d = 0; d < 2; d++) {
        int from = me + (d ? 1 : -1);
        for (int i = 0; i < k; i++) {
            int64_t want = from < 0 || from >= n ? -7 : value(from, 0, tag, i);
            CHECK(rbuf[d * k + i] == want, "neighbor_allgather (%d int64) from side %d element %d: %lld, expected %lld",
                  k, d, i, (long long)rbuf[d * k + i], (long long)want);
        }
    }
}

/* Edges of rank r: to r + 1 twice, to itself, to r + 2 (all mod n); the
 * sources are the mirror image, listed in the same order per source. */
static void neighbor_graph(MPI_Comm graph)
{
    int tag = ++tag_seq;
    enum { DEG = 4 };
    static int64_t sbuf[DEG * MAXK], rbuf[DEG * (MAXK + 1)];
    int scounts[DEG], sdispls[DEG], rcounts[DEG], rdispls[DEG];
    /* the graph's sources (main: the destinations are their mirror image) */
    int src[DEG] = { (me - 1 + n) % n, me, (me - 1 + n) % n, (me - 2 + 2 * n) % n };
    /* Edge e's count, the same at both ends: by the edge's index and the sender. */
    for (int e = 0; e < DEG; e++) {
        scounts[e] = e == 3 ? MAXK : 3 + e * 40 + me;
        sdispls[e] = e * MAXK;
        for (int i = 0; i < scounts[e]; i++)
            sbuf[e * MAXK + i] = value(me, e, tag, i);
        int sender = src[e];
        rcounts[e] = e == 3 ? MAXK : 3 + e * 40 + sender;
        rdispls[e] = e * (MAXK + 1);
    }
    memset(rbuf, 0, sizeof rbuf);
    CHECK_MPI(MPI_Neighbor_alltoallv(sbuf, scounts, sdispls, MPI_INT64_T, rbuf, rcounts, rdispls, MPI_INT64_T, graph));
    expected_calls++;
    for (int e = 0; e < DEG; e++)
        for (int i = 0; i < rcounts[e]; i++)
            CHECK(rbuf[e * (MAXK + 1) + i] == value(src[e], e, tag, i),
                  "neighbor_alltoallv edge %d from %d element %d: %lld, expected %lld", e, src[e], i,
                  (long long)rbuf[e * (MAXK + 1) + i], (long long)value(src[e], e, tag, i));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "any";
    int rounds = argc > 2 ? atoi(argv[2]) : 2;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &n));
    CHECK(n <= MAXRANKS, "at most %d ranks", MAXRANKS);
    int check = strcmp(mode, "any") != 0;
    unsigned long long exchanges0 = 0;
    if (check) {
        int provided;
        CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread failed");
        exchanges0 = counter_value("dimmnet_llcm_exchanges");
    }
    MPI_Comm ring, line, graph;
    int dims[1] = { n }, periodic[1] = { 1 }, open_ends[1] = { 0 };
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periodic, 0, &ring));
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, open_ends, 0, &line));
    int dst[4] = { (me + 1) % n, me, (me + 1) % n, (me + 2) % n };
    int src[4] = { (me - 1 + n) % n, me, (me - 1 + n) % n, (me - 2 + 2 * n) % n };
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 4, src, MPI_UNWEIGHTED, 4, dst, MPI_UNWEIGHTED,
                                             MPI_INFO_NULL, 0, &graph));
    for (int round = 0; round < rounds; round++) {
        alltoallv(1, round % 2);
        alltoallv(0, 0);
        alltoallv(1, !(round % 2));
        alltoallw();
        neighbor_ring(ring, 1);
        neighbor_ring(ring, MAXK);
        neighbor_line(line, 9);
        neighbor_line(line, MAXK);
        neighbor_graph(graph);
        for (int root = 0; root < n; root++)
            rooted_v(root, (root + round) % 2);
        allgatherv(round % 2);
        allgatherv(!(round % 2));
    }
    if (check) {
        unsigned long long v = counter_value("dimmnet_llcm_exchanges") - exchanges0;
        long long want = strcmp(mode, "device") == 0 ? expected_calls : 0;
        CHECK((long long)v == want, "dimmnet_llcm_exchanges grew by %llu, expected %lld", v, want);
        CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize failed");
    }
    CHECK_MPI(MPI_Comm_free(&ring));
    CHECK_MPI(MPI_Comm_free(&line));
    CHECK_MPI(MPI_Comm_free(&graph));
    printf("rank %d of %d ok\n", me, n);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
