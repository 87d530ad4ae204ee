/*
 * Partitioned requests a device may carry itself (dimmnet between peers on
 * emu: the receive buffer exposed once, MPI_Start grants the epoch, each
 * MPI_Pready PUSHes its partition into place with a signal on a per-partition
 * arrival word) and their fallbacks. The checks hold on every path; the
 * testlist adds the device's counters (HASHI_DIMMNET_STATS) to prove which
 * path ran. Rank 0 sends, rank 1 receives (other ranks only take part in
 * the barriers).
 *
 *  - early: every partition readied before the receiver's MPI_Start, and
 *    the sender then progresses for a while; the receiver checks that its
 *    buffer was not touched before its MPI_Start (nothing may be written
 *    into an epoch not yet granted), then polls MPI_Parrived and checks each
 *    partition byte for byte the moment it reports arrival;
 *  - threads: the sender's partitions readied from four threads at once
 *    (MPI_THREAD_MULTIPLE), random order, many epochs, 8 B / 4 KiB / 64 KiB
 *    partitions;
 *  - many: more concurrent requests than the device's LLCM words hold (the
 *    later ones fall back to the generic path), on two communicators,
 *    started in one MPI_Startall and readied interleaved, some of them with
 *    a different partition count on the two sides (generic on any device).
 */
#include "../util/check.h"
#include "shuffle.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static int rank, size;

static unsigned char pattern(int epoch, int stream, size_t i)
{
    return (unsigned char)(i * 131u + (size_t)epoch * 17u + (size_t)stream * 101u + 7u);
}


static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Receiver: poll MPI_Parrived over every partition in random order and check
 * each one's bytes as soon as it is in. */
static void poll_and_check(MPI_Request r, const unsigned char *rbuf, int parts, size_t pbytes, int epoch,
                           int stream)
{
    int idx[64], left = parts;
    char seen[64] = { 0 };
    CHECK(parts <= 64, "test set-up: too many partitions");
    for (int i = 0; i < parts; i++)
        idx[i] = i;
    double give_up = now() + 60;
    while (left > 0) {
        shuffle(idx, parts);
        for (int k = 0; k < parts; k++) {
            int q = idx[k], flag = 0;
            if (seen[q])
                continue;
            CHECK_MPI(MPI_Parrived(r, q, &flag));
            if (!flag)
                continue;
            seen[q] = 1;
            left--;
            for (size_t i = (size_t)q * pbytes; i < (size_t)(q + 1) * pbytes; i++)
                CHECK(rbuf[i] == pattern(epoch, stream, i),
                      "stream %d epoch %d: partition %d byte %zu is %d, expected %d, after MPI_Parrived", stream,
                      epoch, q, i, rbuf[i], pattern(epoch, stream, i));
        }
        CHECK(now() < give_up, "stream %d epoch %d: %d partitions never arrived", stream, epoch, left);
    }
}

static void early(void)
{
    enum { PARTS = 8, PBYTES = 4096, EPOCHS = 12 };
    size_t total = (size_t)PARTS * PBYTES;
    unsigned char *buf = calloc(total, 1);
    CHECK(buf, "out of memory");
    MPI_Request req;
    if (rank == 0)
        CHECK_MPI(MPI_Psend_init(buf, PARTS, PBYTES, MPI_BYTE, 1, 21, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    else
        CHECK_MPI(MPI_Precv_init(buf, PARTS, PBYTES, MPI_BYTE, 0, 21, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    for (int epoch = 0; epoch < EPOCHS; epoch++) {
        if (rank == 0) {
            for (size_t i = 0; i < total; i++)
                buf[i] = pattern(epoch, 0, i);
            CHECK_MPI(MPI_Start(&req));
            int idx[PARTS];
            for (int i = 0; i < PARTS; i++)
                idx[i] = i;
            shuffle(idx, PARTS);
            for (int i = 0; i < PARTS; i++)
                CHECK_MPI(MPI_Pready(idx[i], req));
            /* progress for 2 ms: nothing may reach the receiver's buffer yet */
            int flag = 0;
            for (double end = now() + 0.002; now() < end;)
                CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(&epoch, 1, MPI_INT, 1, 99, MPI_COMM_WORLD));
            if (!flag)
                CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            memset(buf, 0xee, total);
            int go = -1, flag = 0;
            CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(go == epoch, "go message for epoch %d, expected %d", go, epoch);
            for (size_t i = 0; i < total; i++)
                CHECK(buf[i] == 0xee, "epoch %d: byte %zu of the receive buffer was written before MPI_Start", epoch,
                      i);
            CHECK_MPI(MPI_Parrived(req, 0, &flag));
            CHECK(flag, "MPI_Parrived on an inactive request is false");
            CHECK_MPI(MPI_Start(&req));
            poll_and_check(req, buf, PARTS, PBYTES, epoch, 0);
            MPI_Status st;
            CHECK_MPI(MPI_Wait(&req, &st));
            int n = -1;
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
            CHECK(n == (int)total && st.MPI_SOURCE == 0 && st.MPI_TAG == 21, "status: %d bytes from %d tag %d", n,
                  st.MPI_SOURCE, st.MPI_TAG);
            CHECK_MPI(MPI_Parrived(req, PARTS - 1, &flag));
            CHECK(flag, "MPI_Parrived after MPI_Wait is false");
        }
    }
    CHECK_MPI(MPI_Request_free(&req));
    free(buf);
}

/* ---- Pready from several threads ---- */

enum { THREADS = 4 };
struct ready_job {
    MPI_Request req;
    const int *order;
    int first, n;
};

static void *ready_some(void *arg)
{
    struct ready_job *j = arg;
    for (int i = j->first; i < j->first + j->n; i++)
        CHECK_MPI(MPI_Pready(j->order[i], j->req));
    return NULL;
}

static void threads(int provided, size_t pbytes, int epochs, int stream)
{
    enum { PARTS = 8 };
    size_t total = PARTS * pbytes;
    unsigned char *buf = calloc(total, 1);
    CHECK(buf, "out of memory");
    MPI_Request req;
    if (rank == 0)
        CHECK_MPI(MPI_Psend_init(buf, PARTS, (int)pbytes, MPI_BYTE, 1, 22, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    else
        CHECK_MPI(MPI_Precv_init(buf, PARTS, (int)pbytes, MPI_BYTE, 0, 22, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    for (int epoch = 0; epoch < epochs; epoch++) {
        if (rank == 0) {
            for (size_t i = 0; i < total; i++)
                buf[i] = pattern(epoch, stream, i);
            CHECK_MPI(MPI_Start(&req));
            int order[PARTS];
            for (int i = 0; i < PARTS; i++)
                order[i] = i;
            shuffle(order, PARTS);
            if (provided == MPI_THREAD_MULTIPLE) {
                pthread_t t[THREADS];
                struct ready_job jobs[THREADS];
                for (int k = 0; k < THREADS; k++) {
                    jobs[k] = (struct ready_job){ req, order, k * (PARTS / THREADS), PARTS / THREADS };
                    CHECK(pthread_create(&t[k], NULL, ready_some, &jobs[k]) == 0, "pthread_create");
                }
                for (int k = 0; k < THREADS; k++)
                    pthread_join(t[k], NULL);
            } else {
                for (int i = 0; i < PARTS; i++)
                    CHECK_MPI(MPI_Pready(order[i], req));
            }
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            memset(buf, 0xee, total);
            CHECK_MPI(MPI_Start(&req));
            poll_and_check(req, buf, PARTS, pbytes, epoch, stream);
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
    }
    CHECK_MPI(MPI_Request_free(&req));
    free(buf);
}

/* ---- more requests at once than the device holds ---- */

static void many(MPI_Comm other)
{
    enum { NREQ = 14, PARTS = 48, COUNT = 4, EPOCHS = 3 };
    int *bufs[NREQ];
    MPI_Request reqs[NREQ];
    for (int k = 0; k < NREQ; k++) {
        CHECK((bufs[k] = calloc(PARTS * COUNT, sizeof(int))) != NULL, "out of memory");
        MPI_Comm c = k % 2 ? other : MPI_COMM_WORLD;
        /* every fifth: 24 partitions of 8 on the receiving side */
        int rparts = k % 5 == 4 ? PARTS / 2 : PARTS, rcount = k % 5 == 4 ? 2 * COUNT : COUNT;
        if (rank == 0)
            CHECK_MPI(MPI_Psend_init(bufs[k], PARTS, COUNT, MPI_INT, 1, 5, c, MPI_INFO_NULL, &reqs[k]));
        else
            CHECK_MPI(MPI_Precv_init(bufs[k], rparts, rcount, MPI_INT, 0, 5, c, MPI_INFO_NULL, &reqs[k]));
    }
    for (int epoch = 0; epoch < EPOCHS; epoch++) {
        for (int k = 0; k < NREQ; k++)
            for (int i = 0; i < PARTS * COUNT; i++)
                bufs[k][i] = rank == 0 ? epoch * 1000000 + k * 10000 + i : -1;
        CHECK_MPI(MPI_Startall(NREQ, reqs));
        if (rank == 0) {
            /* partition p of every request, then p + 1 ..., requests in reverse */
            for (int p = PARTS - 1; p >= 0; p--)
                for (int k = NREQ - 1; k >= 0; k--)
                    CHECK_MPI(MPI_Pready(p, reqs[k]));
        }
        CHECK_MPI(MPI_Waitall(NREQ, reqs, MPI_STATUSES_IGNORE));
        if (rank == 1)
            for (int k = 0; k < NREQ; k++)
                for (int i = 0; i < PARTS * COUNT; i++)
                    CHECK(bufs[k][i] == epoch * 1000000 + k * 10000 + i, "request %d epoch %d element %d is %d", k,
                          epoch, i, bufs[k][i]);
    }
    for (int k = 0; k < NREQ; k++) {
        CHECK_MPI(MPI_Request_free(&reqs[k]));
        free(bufs[k]);
    }
}

int main(int argc, char **argv)
{
    rng_state = 4711u;
    int provided;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2, "needs 2 ranks");
    rng_state += (unsigned)rank;
    MPI_Comm other;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &other));   /* collective: every rank */
    if (rank < 2) {
        early();
        threads(provided, 8, 50, 1);
        threads(provided, 4096, 20, 2);
        threads(provided, 65536, 10, 3);
        many(other);
    }
    CHECK_MPI(MPI_Comm_free(&other));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d of %d ok\n", rank, size);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
