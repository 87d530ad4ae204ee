/*
 * blocked_recv: the classic MPI_THREAD_MULTIPLE deadlock. On every rank a
 * second thread blocks in MPI_Recv(MPI_ANY_SOURCE, LATE_TAG) first; then the
 * main thread runs a send/receive exchange with the partner rank, and only
 * after that exchange completed does it send the partner the message its
 * blocked thread waits for. A library that keeps its lock while a thread
 * waits never lets the exchange run: the test hangs and the harness's time
 * limit kills it.
 */
#include "mt_util.h"

#include <stdatomic.h>
#include <time.h>

#define LATE_TAG 7
#define EXCHANGE_TAG 1
#define EXCHANGE_ROUNDS 50

static int rank, size, partner;
static atomic_int recv_posted;
static int late_data[4];
static MPI_Status late_status;

static void *blocked_thread(void *p)
{
    (void)p;
    atomic_store(&recv_posted, 1);
    CHECK_MPI(MPI_Recv(late_data, 4, MPI_INT, MPI_ANY_SOURCE, LATE_TAG, MPI_COMM_WORLD, &late_status));
    return NULL;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, &rank, &size);
    partner = rank ^ 1;
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, blocked_thread, NULL) == 0, "pthread_create failed");
    /* Let the thread get inside MPI_Recv (and, if the library is broken, sit
     * there holding whatever it holds). */
    while (!atomic_load(&recv_posted))
        sched_yield();
    nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);

    for (int round = 0; round < EXCHANGE_ROUNDS; round++) {
        int out[2] = { rank, round }, in[2] = { -1, -1 };
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(out, 2, MPI_INT, partner, EXCHANGE_TAG, in, 2, MPI_INT, partner, EXCHANGE_TAG,
                               MPI_COMM_WORLD, &st));
        CHECK(in[0] == partner && in[1] == round, "exchange round %d: got (%d, %d)", round, in[0], in[1]);
        CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == EXCHANGE_TAG, "exchange round %d: status (%d, %d)", round,
              st.MPI_SOURCE, st.MPI_TAG);
    }
    /* The other thread must still be waiting: nothing was sent to it yet. */
    int flag = 1;
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, LATE_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "a LATE_TAG message is visible before anyone sent one");

    int late[4] = { rank, 11, 22, 33 };
    CHECK_MPI(MPI_Send(late, 4, MPI_INT, partner, LATE_TAG, MPI_COMM_WORLD));
    CHECK(pthread_join(thread, NULL) == 0, "pthread_join failed");
    CHECK(late_data[0] == partner && late_data[1] == 11 && late_data[2] == 22 && late_data[3] == 33,
          "the blocked receive got (%d, %d, %d, %d)", late_data[0], late_data[1], late_data[2], late_data[3]);
    CHECK(late_status.MPI_SOURCE == partner && late_status.MPI_TAG == LATE_TAG,
          "the blocked receive's status (%d, %d)", late_status.MPI_SOURCE, late_status.MPI_TAG);
    return mt_finish(rank, size);
}
