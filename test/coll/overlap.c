/*
 * overlap: nonblocking collectives outstanding together, on MPI_COMM_WORLD
 * and on split and dup communicators at the same time, overlapped with
 * point-to-point traffic on world, completed in an order different from the
 * one they were started in; and real background progress: rank 0 starts an
 * Iallreduce and then only tests unrelated requests, yet every other rank's
 * MPI_Wait on its Iallreduce returns (the rounds that need rank 0's data
 * advance inside rank 0's MPI_Test calls). Then blocking Alltoall, Allgather,
 * Allreduce, Reduce and Bcast back to back at the edges of the device's
 * staged paths (dimmnet: what a member stages just fits
 * HASHI_COLL_DEVICE_BLOCKS_STAGE_MAX, 128 KiB, and then
 * HASHI_COLL_DEVICE_REDUCE_STAGE_MAX, 256 KiB, and one int more), on world
 * and on a reversed split,
 * new data every round, an Iallreduce on a dup outstanding: a member that
 * rewrote its stage before a slow reader had copied it out would show.
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

#define COUNT 1000
#define BIG (128 * 1024)   /* ints: rendezvous-sized messages */

static int rank, size;

static void many_outstanding(void)
{
    MPI_Comm half, dup;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));   /* reversed order inside */
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);

    for (int round = 0; round < 3; round++) {
        int *a = malloc(COUNT * sizeof *a), *a_out = malloc(COUNT * sizeof *a);
        int *b = malloc(COUNT * sizeof *b), *b_out = malloc(COUNT * sizeof *b);
        int *big = malloc(BIG * sizeof *big);
        int *c_out = malloc(COUNT * sizeof *c_out), *scan_out = malloc(COUNT * sizeof *scan_out);
        long long bc[4];
        for (int i = 0; i < COUNT; i++) {
            a[i] = rank + i + round;
            b[i] = rank * 3 - i;
        }
        if (hrank == 0)
            for (int i = 0; i < BIG; i++)
                big[i] = i ^ (rank % 2) ^ round;
        for (int i = 0; i < 4; i++)
            bc[i] = rank == size - 1 ? 1000 * round + i : -1;

        /* point-to-point ring on world, posted among the collectives */
        int ring_in = -1, ring_out = rank * 100 + round;
        MPI_Request reqs[9];
        CHECK_MPI(MPI_Iallreduce(a, a_out, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Irecv(&ring_in, 1, MPI_INT, (rank - 1 + size) % size, round, MPI_COMM_WORLD, &reqs[1]));
        CHECK_MPI(MPI_Ibcast(big, BIG, MPI_INT, 0, half, &reqs[2]));
        CHECK_MPI(MPI_Iallreduce(b, b_out, COUNT, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &reqs[3]));
        CHECK_MPI(MPI_Ireduce(a, c_out, COUNT, MPI_INT, MPI_MIN, size - 1, dup, &reqs[4]));
        CHECK_MPI(MPI_Isend(&ring_out, 1, MPI_INT, (rank + 1) % size, round, MPI_COMM_WORLD, &reqs[5]));
        CHECK_MPI(MPI_Ibarrier(half, &reqs[6]));
        CHECK_MPI(MPI_Iscan(b, scan_out, COUNT, MPI_INT, MPI_SUM, dup, &reqs[7]));
        CHECK_MPI(MPI_Ibcast(bc, 4, MPI_LONG_LONG, size - 1, MPI_COMM_WORLD, &reqs[8]));
        /* complete them back to front */
        for (int i = 8; i >= 0; i--)
            CHECK_MPI(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE));

        for (int i = 0; i < COUNT; i++) {
            int sum = 0, max = INT32_MIN, min = INT32_MAX, prefix = 0;
            for (int r = 0; r < size; r++) {
                sum += r + i + round;
                max = r * 3 - i > max ? r * 3 - i : max;
                min = r + i + round < min ? r + i + round : min;
                if (r <= rank)
                    prefix += r * 3 - i;
            }
            CHECK(a_out[i] == sum, "round %d: Iallreduce SUM element %d is %d, expected %d", round, i, a_out[i], sum);
            CHECK(b_out[i] == max, "round %d: Iallreduce MAX element %d is %d, expected %d", round, i, b_out[i], max);
            if (rank == size - 1)
                CHECK(c_out[i] == min, "round %d: Ireduce MIN element %d is %d, expected %d", round, i, c_out[i], min);
            CHECK(scan_out[i] == prefix, "round %d: Iscan element %d is %d, expected %d", round, i, scan_out[i],
                  prefix);
        }
        /* the half's root is its highest world rank (keys are -rank) */
        int half_root_parity = rank % 2;
        for (int i = 0; i < BIG; i++)
            CHECK(big[i] == (i ^ half_root_parity ^ round), "round %d: Ibcast on the split element %d", round, i);
        for (int i = 0; i < 4; i++)
            CHECK(bc[i] == 1000 * round + i, "round %d: Ibcast on world element %d is %lld", round, i, bc[i]);
        CHECK(ring_in == ((rank - 1 + size) % size) * 100 + round, "round %d: ring message %d", round, ring_in);
        free(a), free(a_out), free(b), free(b_out), free(big), free(c_out), free(scan_out);
    }
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&dup));
}

static void background_progress(void)
{
    if (size < 2)
        return;
    double in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = rank + i;
    MPI_Request coll;
    CHECK_MPI(MPI_Iallreduce(in, out, 64, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &coll));
    if (rank == 0) {
        /* Every other rank reports when its own Iallreduce has completed;
         * rank 0 meanwhile only tests those receives. */
        int *done = malloc((size_t)size * sizeof *done);
        MPI_Request *reqs = malloc((size_t)size * sizeof *reqs);
        for (int r = 1; r < size; r++)
            CHECK_MPI(MPI_Irecv(&done[r], 1, MPI_INT, r, 77, MPI_COMM_WORLD, &reqs[r]));
        int all = 0;
        double start = MPI_Wtime();
        while (!all) {
            CHECK_MPI(MPI_Testall(size - 1, reqs + 1, &all, MPI_STATUSES_IGNORE));
            CHECK(MPI_Wtime() - start < 30, "the other ranks' Iallreduce did not complete while rank 0 tested");
        }
        free(done);
        free(reqs);
    }
    CHECK_MPI(MPI_Wait(&coll, MPI_STATUS_IGNORE));
    if (rank != 0) {
        int one = 1;
        CHECK_MPI(MPI_Send(&one, 1, MPI_INT, 0, 77, MPI_COMM_WORLD));
    }
    for (int i = 0; i < 64; i++)
        CHECK(out[i] == size * (size - 1) / 2.0 + size * (double)i, "background Iallreduce element %d", i);
}

/* One round of the staged-path edges on c: alltoall blocks of `a2a` ints,
 * an allgather block, an allreduce, a reduce and a broadcast of `ag` ints
 * (the roots move with the round). */
static void stage_edges_round(MPI_Comm c, int round, long a2a, long ag)
{
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    long most = a2a * n > ag * n ? a2a * n : ag * n;
    int *sbuf = malloc((size_t)most * sizeof *sbuf), *rbuf = malloc((size_t)most * sizeof *rbuf);
    CHECK(sbuf && rbuf, "out of memory");
    /* Alltoall: element i of the block from p to q is p * 1000003 + q * 7919 + i + round. */
    for (int q = 0; q < n; q++)
        for (long i = 0; i < a2a; i++)
            sbuf[q * a2a + i] = r * 1000003 + q * 7919 + (int)i + round;
    CHECK_MPI(MPI_Alltoall(sbuf, (int)a2a, MPI_INT, rbuf, (int)a2a, MPI_INT, c));
    for (int p = 0; p < n; p++)
        for (long i = 0; i < a2a; i++)
            CHECK(rbuf[p * a2a + i] == p * 1000003 + r * 7919 + (int)i + round,
                  "round %d: MPI_Alltoall of %ld ints, block from %d, element %ld", round, a2a, p, i);
    for (long i = 0; i < ag; i++)
        sbuf[i] = r * 1000003 - (int)i + round;
    CHECK_MPI(MPI_Allgather(sbuf, (int)ag, MPI_INT, rbuf, (int)ag, MPI_INT, c));
    for (int p = 0; p < n; p++)
        for (long i = 0; i < ag; i++)
            CHECK(rbuf[p * ag + i] == p * 1000003 - (int)i + round,
                  "round %d: MPI_Allgather of %ld ints, block of %d, element %ld", round, ag, p, i);
    /* Reduce and Allreduce of `ag` ints: the device's staged reductions
     * (HASHI_COLL_DEVICE_REDUCE_STAGE_MAX, its default 256 KiB) and above. */
    int root = round % n;
    for (long i = 0; i < ag; i++)
        sbuf[i] = r * 3 + (int)i + round;
    CHECK_MPI(MPI_Allreduce(sbuf, rbuf, (int)ag, MPI_INT, MPI_SUM, c));
    for (long i = 0; i < ag; i++)
        CHECK(rbuf[i] == 3 * n * (n - 1) / 2 + n * ((int)i + round),
              "round %d: MPI_Allreduce of %ld ints, element %ld", round, ag, i);
    for (long i = 0; i < ag; i++)
        rbuf[i] = -1;
    CHECK_MPI(MPI_Reduce(sbuf, rbuf, (int)ag, MPI_INT, MPI_SUM, root, c));
    for (long i = 0; i < ag && r == root; i++)
        CHECK(rbuf[i] == 3 * n * (n - 1) / 2 + n * ((int)i + round),
              "round %d: MPI_Reduce of %ld ints to %d, element %ld", round, ag, root, i);
    for (long i = 0; i < ag; i++)
        sbuf[i] = r == root ? (int)i * 3 + round : -1;
    CHECK_MPI(MPI_Bcast(sbuf, (int)ag, MPI_INT, root, c));
    for (long i = 0; i < ag; i++)
        CHECK(sbuf[i] == (int)i * 3 + round, "round %d: MPI_Bcast of %ld ints from %d, element %ld", round, ag, root, i);
    free(sbuf);
    free(rbuf);
}

static void stage_edges(void)
{
    MPI_Comm half, dup;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    double in = rank, out = 0;
    MPI_Request pending;
    CHECK_MPI(MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, dup, &pending));
    const long stage_ints = 128 * 1024 / sizeof(int);
    const long reduce_ints = 256 * 1024 / sizeof(int);   /* HASHI_COLL_DEVICE_REDUCE_STAGE_MAX */
    for (int round = 0; round < 6; round++) {
        MPI_Comm c = round % 2 ? half : MPI_COMM_WORLD;
        int n;
        MPI_Comm_size(c, &n);
        long fit = n > 1 ? stage_ints / (n - 1) : stage_ints;   /* alltoall blocks that just fit */
        long more = round == 2 || round == 3 || round == 5;      /* then one int more */
        stage_edges_round(c, round, fit + more, (round < 4 ? stage_ints : reduce_ints) + more);
    }
    CHECK_MPI(MPI_Wait(&pending, MPI_STATUS_IGNORE));
    CHECK(out == size * (size - 1) / 2.0, "Iallreduce on the dup across the blocking collectives: %g", out);
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&dup));
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    many_outstanding();
    background_progress();
    stage_edges();
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
