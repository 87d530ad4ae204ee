/*
 * mprobe: (1) on every rank two threads share the receiving of MESSAGES
 * messages from the partner with MPI_Mprobe(ANY_TAG) + MPI_Mrecv while the
 * main thread sends the partner its own; every message must arrive exactly
 * once, with its payload (a matched probe handed to both threads, or one
 * lost, fails). (2) PROBERS threads each poll MPI_Iprobe for their own tags
 * on a second communicator, then receive with MPI_Irecv + an MPI_Test loop,
 * while the main thread sends those tags in reverse order.
 */
#include "mt_util.h"

#include <stdatomic.h>

#define MESSAGES 300
#define RECEIVERS 2
#define PROBERS 3
#define TAGS_PER_PROBER 5

static int rank, size, partner;
static atomic_int unclaimed = MESSAGES;
static atomic_int seen[MESSAGES];
static MPI_Comm probe_comm;

static size_t message_ints(int tag)
{
    /* Mostly small; every 50th past the eager limits. */
    return tag % 50 == 49 ? 20000 : (size_t)(1 + tag % 7);
}

static void *mprobe_thread(int index)
{
    int *buf = malloc(20000 * sizeof(int));
    CHECK(buf, "out of memory");
    /* Claim one message before probing: the probes never outnumber the messages. */
    while (atomic_fetch_sub(&unclaimed, 1) > 0) {
        MPI_Message msg;
        MPI_Status st;
        int count = -1;
        CHECK_MPI(MPI_Mprobe(partner, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
        int tag = st.MPI_TAG;
        CHECK(tag >= 0 && tag < MESSAGES, "thread %d: tag %d out of range", index, tag);
        CHECK(st.MPI_SOURCE == partner, "thread %d: source %d", index, st.MPI_SOURCE);
        CHECK(count == (int)message_ints(tag), "thread %d: tag %d probed count %d, expected %zu", index, tag, count,
              message_ints(tag));
        CHECK_MPI(MPI_Mrecv(buf, count, MPI_INT, &msg, &st));
        CHECK(msg == MPI_MESSAGE_NULL, "MPI_Mrecv left the message handle set");
        CHECK(st.MPI_TAG == tag && st.MPI_SOURCE == partner, "thread %d: Mrecv status (%d, %d)", index,
              st.MPI_SOURCE, st.MPI_TAG);
        for (int i = 0; i < count; i++)
            CHECK(buf[i] == partner * 1000000 + tag * 100 + i % 100, "thread %d: tag %d int %d is %d", index, tag, i,
                  buf[i]);
        atomic_fetch_add(&seen[tag], 1);
    }
    free(buf);
    return NULL;
}

static void *iprobe_thread(int t)
{
    for (int j = 0; j < TAGS_PER_PROBER; j++) {
        int tag = 1000 + t * TAGS_PER_PROBER + j, flag = 0;
        MPI_Status st;
        while (!flag)
            CHECK_MPI(MPI_Iprobe(partner, tag, probe_comm, &flag, &st));
        CHECK(st.MPI_TAG == tag && st.MPI_SOURCE == partner, "prober %d: Iprobe status (%d, %d)", t, st.MPI_SOURCE,
              st.MPI_TAG);
        int value[2] = { -1, -1 };
        MPI_Request req;
        CHECK_MPI(MPI_Irecv(value, 2, MPI_INT, partner, tag, probe_comm, &req));
        for (flag = 0; !flag;)
            CHECK_MPI(MPI_Test(&req, &flag, &st));
        CHECK(req == MPI_REQUEST_NULL, "MPI_Test left the request set");
        CHECK(value[0] == partner && value[1] == tag * 3, "prober %d tag %d: got (%d, %d)", t, tag, value[0],
              value[1]);
    }
    return NULL;
}

static void start_threads(pthread_t *threads, int n, void *(*fn)(void *))
{
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&threads[i], NULL, fn, (void *)(intptr_t)i) == 0, "pthread_create failed");
}

static void *mprobe_main(void *p)
{
    return mprobe_thread((int)(intptr_t)p);
}

static void *iprobe_main(void *p)
{
    return iprobe_thread((int)(intptr_t)p);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, &rank, &size);
    partner = rank ^ 1;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &probe_comm));

    pthread_t threads[PROBERS > RECEIVERS ? PROBERS : RECEIVERS];
    start_threads(threads, RECEIVERS, mprobe_main);
    int *buf = malloc(20000 * sizeof(int));
    CHECK(buf, "out of memory");
    for (int tag = 0; tag < MESSAGES; tag++) {
        for (size_t i = 0; i < message_ints(tag); i++)
            buf[i] = rank * 1000000 + tag * 100 + (int)(i % 100);
        CHECK_MPI(MPI_Send(buf, (int)message_ints(tag), MPI_INT, partner, tag, MPI_COMM_WORLD));
    }
    free(buf);
    for (int i = 0; i < RECEIVERS; i++)
        CHECK(pthread_join(threads[i], NULL) == 0, "pthread_join failed");
    for (int tag = 0; tag < MESSAGES; tag++)
        CHECK(atomic_load(&seen[tag]) == 1, "message with tag %d received %d times", tag, atomic_load(&seen[tag]));

    start_threads(threads, PROBERS, iprobe_main);
    for (int k = PROBERS * TAGS_PER_PROBER - 1; k >= 0; k--) {
        int tag = 1000 + k, value[2] = { rank, tag * 3 };
        CHECK_MPI(MPI_Send(value, 2, MPI_INT, partner, tag, probe_comm));
    }
    for (int i = 0; i < PROBERS; i++)
        CHECK(pthread_join(threads[i], NULL) == 0, "pthread_join failed");

    CHECK_MPI(MPI_Comm_free(&probe_comm));
    return mt_finish(rank, size);
}
