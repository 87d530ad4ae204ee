/*
 * stress [seed] [messages]: randomized traffic. Every rank sends `messages`
 * messages (default 400) to random destinations (itself included) with
 * random sizes (mostly small, some past the eager limit, some empty) and
 * random tags, mixing Isend, Issend and Send, while receiving everything sent
 * to it through a window of MPI_ANY_SOURCE / MPI_ANY_TAG receives completed
 * with MPI_Testsome / MPI_Waitany and checked in the order they were posted. Every rank derives the whole plan from the
 * seed, so each receiver knows, per source, the sequence it must see: the
 * size and tag from the status, and the bytes, of each message are checked
 * against it, which also checks non-overtaking per source. Bounded in time.
 */
#include "p2p_util.h"

#include <stdint.h>

#define WINDOW 16
#define MAX_SIZE (256 * 1024)
#define TIME_LIMIT 40.0

struct planned {
    int dest, tag;
    size_t size;
};

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t random_size(void)
{
    unsigned r = (unsigned)(rng() % 100);
    if (r < 5)
        return 0;
    if (r < 70)
        return (size_t)(rng() % 512);
    if (r < 92)
        return (size_t)(rng() % 16384);
    return (size_t)(rng() % MAX_SIZE);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261122;
    int nmsg = argc > 2 ? atoi(argv[2]) : 400;

    /* The plan of every rank: plan[s * nmsg + i] is rank s's message i. */
    struct planned *plan = malloc(sizeof *plan * (size_t)size * (size_t)nmsg);
    rng_state = seed * 2 + 1;
    for (int s = 0; s < size; s++) {
        for (int i = 0; i < nmsg; i++) {
            struct planned *p = &plan[(size_t)s * nmsg + i];
            p->dest = (int)(rng() % (uint64_t)size);
            p->tag = (int)(rng() % 10);
            p->size = random_size();
        }
    }
    /* What this rank receives: per source, the indices of its messages here. */
    int **from = malloc(sizeof *from * (size_t)size);
    int *nfrom = calloc((size_t)size, sizeof *nfrom), *next_from = calloc((size_t)size, sizeof *next_from);
    int expected = 0;
    for (int s = 0; s < size; s++) {
        from[s] = malloc(sizeof **from * (size_t)nmsg);
        for (int i = 0; i < nmsg; i++)
            if (plan[(size_t)s * nmsg + i].dest == rank)
                from[s][nfrom[s]++] = i;
        expected += nfrom[s];
    }

    /* Receives: a window of wildcard receives into max-size buffers. */
    /* Receive k (in posting order) uses slot k % WINDOW. */
    MPI_Request rreqs[WINDOW];
    unsigned char *rbufs[WINDOW];
    int arrived[WINDOW] = { 0 };
    MPI_Status arrived_status[WINDOW];
    int posted = 0;
    for (int w = 0; w < WINDOW; w++) {
        rbufs[w] = malloc(MAX_SIZE);
        rreqs[w] = MPI_REQUEST_NULL;
        if (posted < expected) {
            CHECK_MPI(MPI_Irecv(rbufs[w], MAX_SIZE, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rreqs[w]));
            posted++;
        }
    }
    int received = 0;

    /* Sends: at most WINDOW nonblocking ones in flight; some blocking. */
    MPI_Request sreqs[WINDOW];
    unsigned char *sbufs[WINDOW];
    for (int w = 0; w < WINDOW; w++) {
        sbufs[w] = malloc(MAX_SIZE);
        sreqs[w] = MPI_REQUEST_NULL;
    }
    int sent = 0;
    double deadline = MPI_Wtime() + TIME_LIMIT;

    while (received < expected || sent < nmsg) {
        CHECK(MPI_Wtime() < deadline, "stuck: sent %d of %d, received %d of %d (seed %llu)", sent, nmsg, received,
              expected, (unsigned long long)seed);
        /* Start sends into free slots. */
        for (int w = 0; w < WINDOW && sent < nmsg; w++) {
            int flag = 1;
            if (sreqs[w] != MPI_REQUEST_NULL)
                CHECK_MPI(MPI_Test(&sreqs[w], &flag, MPI_STATUS_IGNORE));
            if (!flag)
                continue;
            const struct planned *p = &plan[(size_t)rank * nmsg + sent];
            payload_fill(sbufs[w], p->size, rank, p->tag, sent);
            unsigned mode = (unsigned)(sent * 7 + rank) % 10;
            if (mode < 6)
                CHECK_MPI(MPI_Isend(sbufs[w], (int)p->size, MPI_BYTE, p->dest, p->tag, MPI_COMM_WORLD, &sreqs[w]));
            else if (mode < 8)
                CHECK_MPI(MPI_Issend(sbufs[w], (int)p->size, MPI_BYTE, p->dest, p->tag, MPI_COMM_WORLD, &sreqs[w]));
            else if (p->size <= 4096 && p->dest != rank)
                /* Small blocking sends complete locally (eager), so they never wait on us. */
                CHECK_MPI(MPI_Send(sbufs[w], (int)p->size, MPI_BYTE, p->dest, p->tag, MPI_COMM_WORLD));
            else
                CHECK_MPI(MPI_Isend(sbufs[w], (int)p->size, MPI_BYTE, p->dest, p->tag, MPI_COMM_WORLD, &sreqs[w]));
            sent++;
        }
        /* Note whatever arrived. Receives match in the order they were posted,
         * but complete in any order (a rendezvous finishes after a later
         * eager message): check them in posting order, so slot w is due when
         * every receive posted before it has been checked. */
        int outcount = 0, indices[WINDOW];
        MPI_Status sts[WINDOW];
        if (received < expected) {
            if (sent < nmsg) {
                CHECK_MPI(MPI_Testsome(WINDOW, rreqs, &outcount, indices, sts));
            } else if (!arrived[received % WINDOW]) {
                /* Nothing left to send: block for the next arrival. */
                CHECK_MPI(MPI_Waitany(WINDOW, rreqs, &indices[0], &sts[0]));
                outcount = indices[0] == MPI_UNDEFINED ? 0 : 1;
            }
        }
        if (outcount == MPI_UNDEFINED)
            outcount = 0;
        for (int k = 0; k < outcount; k++) {
            arrived[indices[k]] = 1;
            arrived_status[indices[k]] = sts[k];
        }
        while (received < expected && arrived[received % WINDOW]) {
            int w = received % WINDOW, src = arrived_status[w].MPI_SOURCE;
            arrived[w] = 0;
            CHECK(src >= 0 && src < size, "source %d", src);
            CHECK(next_from[src] < nfrom[src], "one message too many from rank %d", src);
            int seq = from[src][next_from[src]++];
            const struct planned *p = &plan[(size_t)src * nmsg + seq];
            int count = -1;
            CHECK_MPI(MPI_Get_count(&arrived_status[w], MPI_BYTE, &count));
            CHECK(arrived_status[w].MPI_TAG == p->tag && (size_t)count == p->size,
                  "from rank %d, its message %d: tag %d size %d, expected tag %d size %zu (overtaken? seed %llu)",
                  src, seq, arrived_status[w].MPI_TAG, count, p->tag, p->size, (unsigned long long)seed);
            long bad = payload_check(rbufs[w], p->size, src, p->tag, seq);
            CHECK(bad < 0, "from rank %d, its message %d (%zu bytes): byte %ld is wrong (seed %llu)", src, seq,
                  p->size, bad, (unsigned long long)seed);
            received++;
            if (posted < expected) {
                CHECK_MPI(MPI_Irecv(rbufs[w], MAX_SIZE, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                                    &rreqs[w]));
                posted++;
            }
        }
    }
    CHECK_MPI(MPI_Waitall(WINDOW, sreqs, MPI_STATUSES_IGNORE));
    for (int s = 0; s < size; s++)
        CHECK(next_from[s] == nfrom[s], "from rank %d: %d of %d messages", s, next_from[s], nfrom[s]);

    for (int w = 0; w < WINDOW; w++) {
        free(rbufs[w]);
        free(sbufs[w]);
    }
    for (int s = 0; s < size; s++)
        free(from[s]);
    free(from);
    free(nfrom);
    free(next_from);
    free(plan);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
