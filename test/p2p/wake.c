/*
 * wake: a waiting rank that shares its core must be woken by its peer's
 * message, also when the peer is on another node (docs/p2p.md, "Progress and
 * waiting"). Rank 0 and rank P ping-pong N round trips of B bytes; every
 * other rank waits in MPI_Recv until the end. The entries run it
 * oversubscribed with HASHI_SLEEP_US and HASHI_SLEEP_MAX_US at seconds and
 * HASHI_YIELD_US=0, under a time limit: a message that does not wake its
 * receiver costs up to the sleep's bound, so only a working wake-up finishes
 * in time.
 *   wake pingpong P N B
 *   wake threads P N B   rank P answers from two threads at once
 *                        (MPI_THREAD_MULTIPLE), each on a tag of its own,
 *                        so both often sleep at the same time: one thread's
 *                        wake-up must not hide the other's
 */
#include "p2p_util.h"

#include <pthread.h>

#define TAG_DONE 99

static int peer, rounds;
static size_t bytes;

struct answerer {
    int tag;
    unsigned char *buf;
};

/* Rank P's side: receive, check, answer; rounds times on one tag. */
static void *answer(void *arg)
{
    struct answerer *a = arg;
    for (int i = 0; i < rounds; i++) {
        CHECK_MPI(MPI_Recv(a->buf, (int)bytes, MPI_BYTE, 0, a->tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        long bad = payload_check(a->buf, bytes, 0, a->tag, i);
        CHECK(bad < 0, "round %d tag %d: byte %ld wrong", i, a->tag, bad);
        payload_fill(a->buf, bytes, peer, a->tag, i);
        CHECK_MPI(MPI_Send(a->buf, (int)bytes, MPI_BYTE, 0, a->tag, MPI_COMM_WORLD));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    CHECK(argc == 5, "usage: wake pingpong|threads P N B");
    int threads = strcmp(argv[1], "threads") == 0;
    MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = atoi(argv[2]);
    rounds = atoi(argv[3]);
    bytes = (size_t)atol(argv[4]);
    CHECK(peer > 0 && peer < size, "P=%d is not a rank other than 0", peer);
    CHECK(!threads || provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided");
    int ntags = threads ? 2 : 1;
    unsigned char *buf = malloc(bytes ? bytes * (size_t)ntags : 1);
    CHECK(buf != NULL, "out of memory");

    if (rank == 0) {
        for (int i = 0; i < rounds; i++) {
            for (int t = 0; t < ntags; t++) {
                payload_fill(buf, bytes, 0, t + 1, i);
                CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, peer, t + 1, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, t + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                long bad = payload_check(buf, bytes, peer, t + 1, i);
                CHECK(bad < 0, "round %d tag %d: byte %ld of the answer wrong", i, t + 1, bad);
            }
        }
        for (int r = 1; r < size; r++)
            if (r != peer)
                CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, r, TAG_DONE, MPI_COMM_WORLD));
    } else if (rank == peer) {
        struct answerer a[2] = { { 1, buf }, { 2, buf + bytes } };
        if (threads) {
            /* The second thread answers tag 2 while this one answers tag 1:
             * rank 0 alternates, so each waits while the other works. */
            pthread_t th;
            CHECK(pthread_create(&th, NULL, answer, &a[1]) == 0, "pthread_create failed");
            answer(&a[0]);
            pthread_join(th, NULL);
        } else {
            answer(&a[0]);
        }
    } else {
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    free(buf);
    report_ok();
    MPI_Finalize();
    return 0;
}
