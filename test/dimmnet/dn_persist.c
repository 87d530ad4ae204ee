/*
 * dn_persist BYTES ITERATIONS [rndv|eager]: persistent point-to-point between
 * ranks 0 and 1, whose buffers the device prepares once (p2p.psend_init /
 * precv_init; docs/device-interface.md "Persistent point-to-point"). Every
 * message carries new data (the prepared registration must see it) and is
 * checked byte for byte:
 *   - ping-pong: rank 0 alternates Send_init and Ssend_init requests, started
 *     alone or with its receive by Startall; rank 1 answers by Rsend_init;
 *   - one way: rank 0 starts its send before rank 1 posts a plain receive
 *     (so no receive-first announcement can take it: a rendezvous always
 *     goes by RTS). On a device with the core's counters (am_prepared_regs,
 *     am_regs_saved), rank 0 checks with `rndv` (BYTES above the eager
 *     limit) that its buffer was registered once, at MPI_Send_init, and
 *     every message used that key; with `eager`, that nothing was registered;
 *   - ordering: a persistent ANY_SOURCE / ANY_TAG receive started between
 *     two ordinary receives takes the second of three messages, posted
 *     before and after the messages arrive;
 *   - MPI_Cancel of a started persistent receive, then the same request
 *     started again receives;
 *   - MPI_Request_free of an inactive request, of an active send (it still
 *     delivers) and of an active receive; MPI_PROC_NULL peers.
 */
#include "../p2p/p2p_util.h"
#include "../util/pvar.h"

#define TAG_PING 1
#define TAG_ONEWAY 2
#define TAG_ORDER 3
#define TAG_CANCEL 4
#define TAG_FREED 5
#define TAG_NEVER 99

static size_t bytes;
static int iterations;

static void check_message(const unsigned char *buf, const MPI_Status *st, int source, int tag, int seq,
                          const char *what)
{
    int count = -1;
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK(st->MPI_SOURCE == source && st->MPI_TAG == tag && (size_t)count == bytes,
          "%s %d: status source %d tag %d count %d", what, seq, st->MPI_SOURCE, st->MPI_TAG, count);
    long bad = payload_check(buf, bytes, source, tag, seq);
    CHECK(bad < 0, "%s %d: byte %ld is wrong", what, seq, bad);
}

static void ping_pong(int rank, unsigned char *sbuf, unsigned char *rbuf)
{
    int other = 1 - rank;
    MPI_Request recv, send[2];
    MPI_Status st;
    CHECK_MPI(MPI_Recv_init(rbuf, (int)bytes, MPI_BYTE, other, TAG_PING, MPI_COMM_WORLD, &recv));
    if (rank == 0) {
        CHECK_MPI(MPI_Send_init(sbuf, (int)bytes, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, &send[0]));
        CHECK_MPI(MPI_Ssend_init(sbuf, (int)bytes, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, &send[1]));
    } else {
        /* Ready mode is correct: rank 0 starts its receive before its send. */
        CHECK_MPI(MPI_Rsend_init(sbuf, (int)bytes, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, &send[0]));
    }
    for (int it = 0; it < iterations; it++) {
        if (rank == 0) {
            payload_fill(sbuf, bytes, 0, TAG_PING, it);
            MPI_Request pair[2] = { recv, send[it % 2] };
            if (it % 3 == 0) {
                CHECK_MPI(MPI_Startall(2, pair));
            } else {
                CHECK_MPI(MPI_Start(&pair[0]));
                CHECK_MPI(MPI_Start(&pair[1]));
            }
            MPI_Status sts[2];
            CHECK_MPI(MPI_Waitall(2, pair, sts));
            CHECK(pair[0] == recv && pair[1] == send[it % 2], "MPI_Waitall changed persistent handles");
            check_message(rbuf, &sts[0], 1, TAG_PING, it, "pong");
        } else {
            memset(rbuf, 0, bytes);
            CHECK_MPI(MPI_Start(&recv));
            CHECK_MPI(MPI_Wait(&recv, &st));
            check_message(rbuf, &st, 0, TAG_PING, it, "ping");
            payload_fill(sbuf, bytes, 1, TAG_PING, it);
            CHECK_MPI(MPI_Start(&send[0]));
            CHECK_MPI(MPI_Wait(&send[0], MPI_STATUS_IGNORE));
        }
    }
    CHECK_MPI(MPI_Request_free(&recv));
    CHECK_MPI(MPI_Request_free(&send[0]));
    if (rank == 0)
        CHECK_MPI(MPI_Request_free(&send[1]));
    CHECK(recv == MPI_REQUEST_NULL && send[0] == MPI_REQUEST_NULL, "MPI_Request_free left a handle");
}

/* expect: registrations and messages on them that rank 0's sends must count
 * (-1: do not check). */
static void one_way(int rank, unsigned char *sbuf, unsigned char *rbuf, int expect_regs, int expect_saved)
{
    int have_regs, have_saved;
    unsigned long long regs0 = read_counter("am_prepared_regs", &have_regs);
    unsigned long long saved0 = read_counter("am_regs_saved", &have_saved);
    MPI_Request send = MPI_REQUEST_NULL;
    if (rank == 0)
        CHECK_MPI(MPI_Send_init(sbuf, (int)bytes, MPI_BYTE, 1, TAG_ONEWAY, MPI_COMM_WORLD, &send));
    for (int it = 0; it < iterations; it++) {
        if (rank == 0) {
            payload_fill(sbuf, bytes, 0, TAG_ONEWAY, it);
            CHECK_MPI(MPI_Start(&send));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));   /* started before the receive exists */
            CHECK_MPI(MPI_Wait(&send, MPI_STATUS_IGNORE));
        } else {
            MPI_Status st;
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_ONEWAY, MPI_COMM_WORLD, &st));
            check_message(rbuf, &st, 0, TAG_ONEWAY, it, "one-way");
        }
    }
    if (rank == 0) {
        CHECK_MPI(MPI_Request_free(&send));
        if (expect_regs >= 0 && have_regs && have_saved) {
            unsigned long long regs = read_counter("am_prepared_regs", &have_regs) - regs0;
            unsigned long long saved = read_counter("am_regs_saved", &have_saved) - saved0;
            CHECK(regs == (unsigned long long)expect_regs && saved == (unsigned long long)expect_saved,
                  "one-way: %llu registrations, %llu messages on the prepared one (expected %d and %d)", regs,
                  saved, expect_regs, expect_saved);
        }
    }
}

static void ordering(int rank, unsigned char *sbuf, unsigned char *rbuf)
{
    unsigned char *rbuf2 = malloc(bytes), *rbuf3 = malloc(bytes), *sbufs[3] = { sbuf, malloc(bytes), malloc(bytes) };
    CHECK(rbuf2 && rbuf3 && sbufs[1] && sbufs[2], "out of memory");
    MPI_Request any = MPI_REQUEST_NULL;
    if (rank == 1)
        CHECK_MPI(MPI_Recv_init(rbuf2, (int)bytes, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &any));
    for (int it = 0; it < iterations; it++) {
        int sends_first = it % 2 == 0;   /* the messages wait unexpected, or find the receives */
        if (rank == 0) {
            MPI_Request reqs[3];
            if (!sends_first)
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            for (int k = 0; k < 3; k++) {
                payload_fill(sbufs[k], bytes, 0, TAG_ORDER, 3 * it + k);
                CHECK_MPI(MPI_Isend(sbufs[k], (int)bytes, MPI_BYTE, 1, TAG_ORDER, MPI_COMM_WORLD, &reqs[k]));
            }
            if (sends_first)
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE));
        } else {
            MPI_Request reqs[3];
            MPI_Status sts[3];
            if (sends_first)
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_ORDER, MPI_COMM_WORLD, &reqs[0]));
            CHECK_MPI(MPI_Start(&any));
            reqs[1] = any;
            CHECK_MPI(MPI_Irecv(rbuf3, (int)bytes, MPI_BYTE, 0, TAG_ORDER, MPI_COMM_WORLD, &reqs[2]));
            if (!sends_first)
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Waitall(3, reqs, sts));
            check_message(rbuf, &sts[0], 0, TAG_ORDER, 3 * it, "first receive");
            check_message(rbuf2, &sts[1], 0, TAG_ORDER, 3 * it + 1, "persistent ANY_SOURCE receive");
            check_message(rbuf3, &sts[2], 0, TAG_ORDER, 3 * it + 2, "third receive");
        }
    }
    if (rank == 1)
        CHECK_MPI(MPI_Request_free(&any));
    free(rbuf2);
    free(rbuf3);
    free(sbufs[1]);
    free(sbufs[2]);
}

static void cancel(int rank, unsigned char *sbuf, unsigned char *rbuf)
{
    if (rank == 1) {
        MPI_Request recv;
        MPI_Status st;
        int cancelled = 0;
        CHECK_MPI(MPI_Recv_init(rbuf, (int)bytes, MPI_BYTE, 0, TAG_CANCEL, MPI_COMM_WORLD, &recv));
        for (int round = 0; round < 2; round++) {
            CHECK_MPI(MPI_Start(&recv));
            CHECK_MPI(MPI_Cancel(&recv));
            CHECK_MPI(MPI_Wait(&recv, &st));
            CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
            CHECK(cancelled && recv != MPI_REQUEST_NULL, "round %d: the started persistent receive was not cancelled",
                  round);
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));   /* now rank 0 sends */
        CHECK_MPI(MPI_Start(&recv));
        CHECK_MPI(MPI_Wait(&recv, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        CHECK(!cancelled, "the receive after the cancels says cancelled");
        check_message(rbuf, &st, 0, TAG_CANCEL, 7, "after cancel");
        CHECK_MPI(MPI_Request_free(&recv));
    } else {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        payload_fill(sbuf, bytes, 0, TAG_CANCEL, 7);
        CHECK_MPI(MPI_Send(sbuf, (int)bytes, MPI_BYTE, 1, TAG_CANCEL, MPI_COMM_WORLD));
    }
}

/* Requests freed inactive and active; rbuf_kept stays allocated to the end
 * (a freed active receive may still write into it). */
static void freeing(int rank, unsigned char *sbuf, unsigned char *rbuf, unsigned char *rbuf_kept)
{
    MPI_Request r;
    /* Inactive, never started. */
    CHECK_MPI(MPI_Send_init(sbuf, (int)bytes, MPI_BYTE, 1 - rank, TAG_NEVER, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Request_free(&r));
    CHECK_MPI(MPI_Recv_init(rbuf, (int)bytes, MPI_BYTE, MPI_ANY_SOURCE, TAG_NEVER, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Request_free(&r));
    if (rank == 0) {
        /* Active: the send still delivers its message, then goes. */
        payload_fill(sbuf, bytes, 0, TAG_FREED, 1);
        CHECK_MPI(MPI_Send_init(sbuf, (int)bytes, MPI_BYTE, 1, TAG_FREED, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Request_free(&r));
        CHECK(r == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
        MPI_Status st;
        CHECK_MPI(MPI_Recv(rbuf, 0, MPI_BYTE, 1, TAG_FREED, MPI_COMM_WORLD, &st));   /* it arrived */
        /* A message for rank 1's freed active receive. */
        payload_fill(sbuf, bytes, 0, TAG_FREED, 2);
        CHECK_MPI(MPI_Send(sbuf, (int)bytes, MPI_BYTE, 1, TAG_FREED, MPI_COMM_WORLD));
    } else {
        MPI_Status st;
        CHECK_MPI(MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_FREED, MPI_COMM_WORLD, &st));
        check_message(rbuf, &st, 0, TAG_FREED, 1, "freed active send");
        CHECK_MPI(MPI_Recv_init(rbuf_kept, (int)bytes, MPI_BYTE, 0, TAG_FREED, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Request_free(&r));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_FREED, MPI_COMM_WORLD));
    }
    /* MPI_PROC_NULL: complete at once, the standard's status. */
    MPI_Request pn[2];
    MPI_Status sts[2];
    int count = -1;
    CHECK_MPI(MPI_Send_init(sbuf, (int)bytes, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &pn[0]));
    CHECK_MPI(MPI_Recv_init(rbuf, (int)bytes, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &pn[1]));
    for (int it = 0; it < 2; it++) {
        CHECK_MPI(MPI_Startall(2, pn));
        CHECK_MPI(MPI_Waitall(2, pn, sts));
        CHECK_MPI(MPI_Get_count(&sts[1], MPI_BYTE, &count));
        CHECK(sts[1].MPI_SOURCE == MPI_PROC_NULL && sts[1].MPI_TAG == MPI_ANY_TAG && count == 0,
              "MPI_PROC_NULL receive: source %d tag %d count %d", sts[1].MPI_SOURCE, sts[1].MPI_TAG, count);
    }
    CHECK_MPI(MPI_Request_free(&pn[0]));
    CHECK_MPI(MPI_Request_free(&pn[1]));
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(argc >= 3 && size == 2, "usage: dn_persist BYTES ITERATIONS [rndv|eager], on 2 ranks");
    bytes = strtoull(argv[1], NULL, 0);
    iterations = atoi(argv[2]);
    const char *expect = argc > 3 ? argv[3] : "";
    int expect_regs = strcmp(expect, "rndv") == 0 ? 1 : strcmp(expect, "eager") == 0 ? 0 : -1;
    unsigned char *sbuf = malloc(bytes), *rbuf = malloc(bytes), *rbuf_kept = malloc(bytes);
    CHECK(sbuf && rbuf && rbuf_kept, "out of memory for %zu bytes", bytes);

    ping_pong(rank, sbuf, rbuf);
    one_way(rank, sbuf, rbuf, expect_regs, expect_regs ? iterations : 0);
    ordering(rank, sbuf, rbuf);
    cancel(rank, sbuf, rbuf);
    freeing(rank, sbuf, rbuf, rbuf_kept);

    report_ok();
    CHECK_MPI(MPI_T_finalize());
    CHECK_MPI(MPI_Finalize());
    free(sbuf);
    free(rbuf);
    free(rbuf_kept);
    return 0;
}
