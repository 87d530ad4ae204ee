/*
 * ordering: messages between one pair on one communicator and tag do not
 * overtake each other, whatever their sizes and send modes (eager and
 * rendezvous mixed; Send, Isend, Ssend, persistent) and whether the receives
 * were posted before or after the messages arrived. Every rank sends a
 * sequence to rank 0; rank 0 receives each sender's sequence with
 * MPI_ANY_SOURCE and checks per-source order, then with receives posted ahead
 * that must match in posting order (a receive sized for message i would be
 * truncated by any other message of the sequence).
 */
#include "p2p_util.h"

static const size_t sizes[] = { 0, 8, 465, 4097, 65537, 1u << 20, 8, 4096, 0, 200000, 1, 64 };
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MESSAGES 36
#define TAG 7

static size_t size_of(int seq, int source)
{
    return sizes[(size_t)(seq + source) % NSIZES];
}

/* Send the sequence to rank 0, cycling through the send modes. */
static void send_sequence(int rank, int round)
{
    MPI_Request reqs[MESSAGES];
    int nreq = 0;
    unsigned char *bufs[MESSAGES];
    for (int i = 0; i < MESSAGES; i++) {
        size_t n = size_of(i, rank);
        bufs[i] = malloc(n ? n : 1);
        CHECK(bufs[i], "out of memory");
        payload_fill(bufs[i], n, rank, TAG, round * MESSAGES + i);
        switch (i % 4) {
        case 0:
            CHECK_MPI(MPI_Send(bufs[i], (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD));
            break;
        case 1:
            CHECK_MPI(MPI_Isend(bufs[i], (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &reqs[nreq++]));
            break;
        case 2: {
            /* A persistent request started once for this message. */
            MPI_Request p;
            CHECK_MPI(MPI_Send_init(bufs[i], (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &p));
            CHECK_MPI(MPI_Start(&p));
            CHECK_MPI(MPI_Wait(&p, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Request_free(&p));
            break;
        }
        default:
            CHECK_MPI(MPI_Issend(bufs[i], (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &reqs[nreq++]));
            break;
        }
    }
    CHECK_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < MESSAGES; i++)
        free(bufs[i]);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2, "run with at least 2 ranks");

    /* Round 0: rank 0 receives late (the messages queue up unexpected), with
     * MPI_ANY_SOURCE, and tracks where each source's sequence is. */
    if (rank != 0) {
        send_sequence(rank, 0);
    } else {
        int *next = calloc((size_t)size, sizeof *next);
        size_t max = 1u << 20;
        unsigned char *buf = guarded_alloc(max);
        for (int k = 0; k < MESSAGES * (size - 1); k++) {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &st));
            int src = st.MPI_SOURCE, seq = next[src]++;
            CHECK(src > 0 && src < size && seq < MESSAGES, "unexpected message from %d (seq %d)", src, seq);
            int count = -1;
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK((size_t)count == size_of(seq, src), "message %d from rank %d has %d bytes, expected %zu: overtaken",
                  seq, src, count, size_of(seq, src));
            CHECK(payload_check(buf, (size_t)count, src, TAG, seq) < 0,
                  "message %d from rank %d carries another message's bytes", seq, src);
        }
        CHECK(guards_intact(buf, max), "the guard zone was overwritten");
        guarded_free(buf);
        free(next);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* Round 1: rank 0 posts every receive first, each sized exactly. */
    if (rank == 0) {
        int total = MESSAGES * (size - 1);
        MPI_Request *reqs = malloc(sizeof *reqs * (size_t)total);
        unsigned char **bufs = malloc(sizeof *bufs * (size_t)total);
        for (int src = 1, k = 0; src < size; src++) {
            for (int i = 0; i < MESSAGES; i++, k++) {
                size_t n = size_of(i, src);
                bufs[k] = guarded_alloc(n);
                CHECK_MPI(MPI_Irecv(bufs[k], (int)n, MPI_BYTE, src, TAG, MPI_COMM_WORLD, &reqs[k]));
            }
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));   /* the senders start now */
        MPI_Status *sts = malloc(sizeof *sts * (size_t)total);
        CHECK_MPI(MPI_Waitall(total, reqs, sts));
        for (int src = 1, k = 0; src < size; src++) {
            for (int i = 0; i < MESSAGES; i++, k++) {
                size_t n = size_of(i, src);
                CHECK(sts[k].MPI_SOURCE == src, "receive %d: source %d", k, sts[k].MPI_SOURCE);
                CHECK(payload_check(bufs[k], n, src, TAG, MESSAGES + i) < 0,
                      "posted receive %d for rank %d's message %d got other bytes: overtaken", k, src, i);
                CHECK(guards_intact(bufs[k], n), "receive %d: guard zone overwritten", k);
                guarded_free(bufs[k]);
            }
        }
        free(sts);
        free(bufs);
        free(reqs);
    } else {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        send_sequence(rank, 1);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
