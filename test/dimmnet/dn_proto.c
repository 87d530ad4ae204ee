/*
 * DIMMnet protocol paths, each forced by the test list's parameters
 * (docs/dimmnet.md). Every mode checks data byte for byte and status fields;
 * the list also checks the device's path counters (HASHI_DIMMNET_STATS) so a
 * path that silently stopped being taken fails.
 *
 *   eager COUNT SIZE     rank 0 sends COUNT standard messages of SIZE bytes to
 *                        rank 1, then a token on another tag; rank 1 receives
 *                        the token first (so every eager send completed
 *                        without rank 1), then the data in order
 *   handshake            receive-first and send-first at every size class, with
 *                        Send and Ssend, between rank 0 and the last rank
 *   flood COUNT          every rank but 0 sends COUNT messages of mixed sizes to
 *                        rank 0, which takes half with pre-posted ANY_SOURCE /
 *                        ANY_TAG receives and half as they come; per-source
 *                        order and contents checked
 *   barrier COUNT [COMMS] COUNT barriers, a different rank late each time; no
 *                        rank may leave before the late one entered. With
 *                        COMMS, on COMMS communicators of all ranks in turn
 *                        (dups and reversed splits, more than the device's
 *                        counter slots), every 7th round one freed and
 *                        replaced (its slot reused), every 3rd barrier
 *                        followed by a broadcast from a changing root
 *   busypull COUNT SIZE  ranks 0 and 1 send each other COUNT messages of SIZE
 *                        bytes at once (with a small ring, the busy pull's
 *                        case): into posted receives; unexpected, taken by
 *                        Iprobe, Mprobe / Mrecv and ANY_TAG receives in
 *                        order; blocking sends both ways before any receive
 *                        (must not deadlock); one truncated
 *   bidir COUNT SIZE     ranks 0 and 1 exchange messages of SIZE bytes both
 *                        ways at once (the bidirectional pull's case): two
 *                        windows of COUNT Isends after posting the Irecvs,
 *                        no barrier in between (arrivals before their
 *                        receive are read by it later), then COUNT blocking
 *                        Sends each after its own Irecv
 *   burst COUNT          rank 0 sends COUNT messages of 0 B - 8 KiB to rank 1 by
 *                        MPI_Isend back to back (half of them to receives posted
 *                        before a barrier, half to blocking receives after it);
 *                        contents, status and order checked. Prints the
 *                        fabric_batched delta of rank 0 around the Isends
 *                        ("burst batched N"): blocks that went in batches
 *                        (HASHI_FABRIC_COALESCE), -1 where there is no such
 *                        counter (no fabric transport)
 *   sendpair             rank 0 sends two small messages by blocking MPI_Send and
 *                        then makes no MPI call for 1.5 s; rank 1 must have the
 *                        second less than 1 s after the first (a blocking send
 *                        hands a held burst to the network: send_flush)
 *   pingpong COUNT       ranks 0 and 1 make COUNT round trips of 0 B - 40 KiB,
 *                        every 10th a pair of Isends answered once; contents
 *                        and status checked. Prints the fabric_deferred_reposts
 *                        delta of rank 1 around the loop ("pingpong deferred
 *                        N": receive buffers reposted at the next pass,
 *                        HASHI_FABRIC_DEFER_REPOST), -1 without the counter
 *   foreign              rank 1 runs with a foreign process-group id and sends
 *                        to rank 0, which must reject it (the list expects the
 *                        report and a failed job)
 */
#include "dn_data.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void mode_eager(int count, size_t bytes)
{
    CHECK(size >= 2, "eager needs 2 ranks");
    unsigned char *buf = malloc(bytes ? bytes : 1);
    CHECK(buf, "out of memory");
    int token = 0;
    if (rank == 0) {
        for (int i = 0; i < count; i++) {
            fill(buf, bytes, 0, i);
            CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        }
        token = count;
        CHECK_MPI(MPI_Send(&token, 1, MPI_INT, 1, 2, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &st));
        CHECK(token == count, "token %d, expected %d", token, count);
        for (int i = 0; i < count; i++) {
            memset(buf, 0xee, bytes);
            CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
            check_status(&st, 0, 1, bytes);
            verify(buf, bytes, 0, i, "eager");
        }
    }
    free(buf);
}

/* Sizes around every threshold of the default parameters and of the list's
 * shrunken ones (BOTF 464, PUSH_MIN, EAGER_MAX, receive buffer size). */
static const size_t class_sizes[] = { 0, 1, 8, 100, 464, 465, 1000, 2048, 4095, 4096, 4097, 8191, 8192, 8193,
                                      16384, 65536 + 3, 1048576 + 5 };
#define NCLASSES (sizeof class_sizes / sizeof *class_sizes)

static void mode_handshake(void)
{
    int peer = size - 1;  /* rank 0 sends, the last rank receives; others only meet in the barriers */
    size_t maxb = class_sizes[NCLASSES - 1];
    unsigned char *buf = malloc(maxb);
    CHECK(buf, "out of memory");
    int idx = 0;
    for (int sync = 0; sync < 2; sync++) {
        for (int recv_first = 0; recv_first < 2; recv_first++) {
            for (size_t c = 0; c < NCLASSES; c++, idx++) {
                size_t n = class_sizes[c];
                int tag = 100 + idx;
                MPI_Status st;
                if (rank == 0) {
                    fill(buf, n, 0, idx);
                    MPI_Request rq;
                    if (recv_first) {
                        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                        if (sync)
                            CHECK_MPI(MPI_Ssend(buf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
                        else
                            CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
                    } else {
                        if (sync)
                            CHECK_MPI(MPI_Issend(buf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq));
                        else
                            CHECK_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq));
                        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                        CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
                    }
                } else if (rank == peer) {
                    memset(buf, 0xee, n + 1 < maxb ? n + 1 : maxb);
                    if (recv_first) {
                        /* Posted before the sender starts: the receive comes first. */
                        MPI_Request rq;
                        CHECK_MPI(MPI_Irecv(buf, (int)n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &rq));
                        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                        CHECK_MPI(MPI_Wait(&rq, &st));
                    } else {
                        /* The announcement waits unexpected before the receive is posted. */
                        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                        CHECK_MPI(MPI_Probe(0, tag, MPI_COMM_WORLD, &st));
                        check_status(&st, 0, tag, n);
                        CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
                    }
                    check_status(&st, 0, tag, n);
                    verify(buf, n, 0, idx, recv_first ? "receive-first" : "send-first");
                    if (n + 1 < maxb)
                        CHECK(buf[n] == 0xee, "a %zu-byte message wrote past its end", n);
                } else {
                    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                }
            }
        }
    }
    free(buf);
}

static const size_t flood_sizes[] = { 8, 300, 464, 2000, 6000, 8192, 20000, 0, 100000 };
#define NFLOOD (sizeof flood_sizes / sizeof *flood_sizes)

static size_t flood_size(int src, int idx)
{
    return flood_sizes[(size_t)(idx + src) % NFLOOD];
}

static void mode_flood(int count)
{
    size_t maxb = 100000;
    if (rank != 0) {
        MPI_Request *rq = malloc(sizeof *rq * (size_t)count);
        unsigned char **bufs = malloc(sizeof *bufs * (size_t)count);
        CHECK(rq && bufs, "out of memory");
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        for (int i = 0; i < count; i++) {
            size_t n = flood_size(rank, i);
            bufs[i] = malloc(n ? n : 1);
            CHECK(bufs[i], "out of memory");
            fill(bufs[i], n, rank, i);
            CHECK_MPI(MPI_Isend(bufs[i], (int)n, MPI_BYTE, 0, i, MPI_COMM_WORLD, &rq[i]));
        }
        CHECK_MPI(MPI_Waitall(count, rq, MPI_STATUSES_IGNORE));
        for (int i = 0; i < count; i++)
            free(bufs[i]);
        free(bufs);
        free(rq);
        return;
    }
    int total = count * (size - 1);
    int early = total / 2;
    int *next = calloc((size_t)size, sizeof *next);
    unsigned char *bufs = malloc(maxb * (size_t)(early ? early : 1));
    unsigned char *late = malloc(maxb);
    MPI_Request *rq = malloc(sizeof *rq * (size_t)(early ? early : 1));
    CHECK(next && bufs && late && rq, "out of memory");
    /* Half the receives wait before any message exists (receive-first for
     * the large ones), the rest arrive unexpected (send-first). */
    for (int i = 0; i < early; i++)
        CHECK_MPI(MPI_Irecv(bufs + maxb * (size_t)i, (int)maxb, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                            &rq[i]));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < total; i++) {
        MPI_Status st;
        unsigned char *b;
        if (i < early) {
            CHECK_MPI(MPI_Wait(&rq[i], &st));
            b = bufs + maxb * (size_t)i;
        } else {
            CHECK_MPI(MPI_Recv(late, (int)maxb, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            b = late;
        }
        int src = st.MPI_SOURCE;
        CHECK(src > 0 && src < size, "message from impossible source %d", src);
        int idx = next[src]++;
        CHECK(st.MPI_TAG == idx, "rank %d's message %d arrived as number %d (order broken)", src, st.MPI_TAG, idx);
        check_status(&st, src, idx, flood_size(src, idx));
        verify(b, flood_size(src, idx), src, idx, "flood");
    }
    for (int s = 1; s < size; s++)
        CHECK(next[s] == count, "got %d of rank %d's %d messages", next[s], s, count);
    free(next);
    free(bufs);
    free(late);
    free(rq);
}

/* A communicator of all ranks: a dup of world, or a split in reverse order
 * (its rank 0 is world's last). */
static MPI_Comm all_ranks_comm(int k)
{
    MPI_Comm c;
    if (k % 2 == 0)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    else
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &c));
    return c;
}

static void mode_barrier(int count, int ncomms)
{
    /* One node: CLOCK_MONOTONIC is shared, so entry and exit times compare. */
    MPI_Comm *comms = malloc(sizeof(MPI_Comm) * (size_t)(ncomms > 0 ? ncomms : 1));
    CHECK(comms, "out of memory");
    for (int k = 0; k < ncomms; k++)
        comms[k] = all_ranks_comm(k);
    for (int i = 0; i < count; i++) {
        int late = i % size, which = ncomms ? (i * 7) % ncomms : 0;
        MPI_Comm c = ncomms ? comms[which] : MPI_COMM_WORLD;
        if (rank == late)
            usleep(i % 3 == 0 ? 2000 : 200);
        double t = now();
        CHECK_MPI(MPI_Barrier(c));
        double left = now();
        /* Tell everyone when the late rank entered, after the fact. */
        if (rank == late) {
            for (int r = 0; r < size; r++)
                if (r != rank)
                    CHECK_MPI(MPI_Send(&t, 1, MPI_DOUBLE, r, 7, MPI_COMM_WORLD));
        } else {
            CHECK_MPI(MPI_Recv(&t, 1, MPI_DOUBLE, late, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(left >= t, "barrier %d: left at %.9f before rank %d entered at %.9f", i, left, late, t);
        }
        if (ncomms && i % 3 == 0) {
            int root = (i / 3) % size, crank;
            CHECK_MPI(MPI_Comm_rank(c, &crank));
            int v = crank == root ? 1000 + i : -1;
            CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, root, c));
            CHECK(v == 1000 + i, "bcast %d from %d after a barrier: %d", i, root, v);
        }
        if (ncomms && i % 7 == 6) {
            CHECK_MPI(MPI_Comm_free(&comms[which]));
            comms[which] = all_ranks_comm(i);
        }
    }
    for (int k = 0; k < ncomms; k++)
        CHECK_MPI(MPI_Comm_free(&comms[k]));
    free(comms);
}

static void exchange_window(unsigned char *out, int count, size_t bytes, int peer, int tag, int base)
{
    MPI_Request *rq = malloc(sizeof *rq * (size_t)count);
    CHECK(rq, "out of memory");
    for (int i = 0; i < count; i++) {
        fill(out + (size_t)i * bytes, bytes, rank, base + i);
        CHECK_MPI(MPI_Isend(out + (size_t)i * bytes, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[i]));
    }
    CHECK_MPI(MPI_Waitall(count, rq, MPI_STATUSES_IGNORE));
    free(rq);
}

/* Ranks 0 and 1 as a pair communicator; the peer's rank, or -1 on the
 * others (which wait in the final barrier meanwhile). */
static int pair_up(const char *mode, MPI_Comm *pair)
{
    CHECK(size >= 2, "%s needs 2 ranks", mode);
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, pair));
    return rank > 1 ? -1 : 1 - rank;
}

static void mode_busypull(int count, size_t bytes)
{
    MPI_Comm pair;
    int peer = pair_up("busypull", &pair);
    if (peer < 0)
        return;
    unsigned char *out = malloc((size_t)count * bytes), *in = malloc((size_t)count * bytes);
    MPI_Request *rq = malloc(sizeof *rq * (size_t)count);
    CHECK(out && in && rq, "out of memory");
    MPI_Status st;

    /* Into posted receives. */
    for (int i = 0; i < count; i++)
        CHECK_MPI(MPI_Irecv(in + (size_t)i * bytes, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq[i]));
    CHECK_MPI(MPI_Barrier(pair));
    exchange_window(out, count, bytes, peer, 1, 0);
    for (int i = 0; i < count; i++) {
        CHECK_MPI(MPI_Wait(&rq[i], &st));
        check_status(&st, peer, 1, bytes);
        verify(in + (size_t)i * bytes, bytes, peer, i, "posted");
    }

    /* Unexpected: both send first, then take them in order. */
    CHECK_MPI(MPI_Barrier(pair));
    exchange_window(out, count, bytes, peer, 2, 1000);
    int flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    check_status(&st, peer, 2, bytes);
    for (int i = 0; i < count; i++) {
        memset(in, 0xee, bytes);
        if (i % 3 == 0) {
            MPI_Message msg;
            CHECK_MPI(MPI_Mprobe(peer, 2, MPI_COMM_WORLD, &msg, &st));
            check_status(&st, peer, 2, bytes);
            CHECK_MPI(MPI_Mrecv(in, (int)bytes, MPI_BYTE, &msg, &st));
        } else {
            CHECK_MPI(MPI_Recv(in, (int)bytes, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        }
        check_status(&st, peer, 2, bytes);
        verify(in, bytes, peer, 1000 + i, "unexpected");
    }

    /* Blocking sends both ways before either receives. */
    CHECK_MPI(MPI_Barrier(pair));
    for (int i = 0; i < count; i++) {
        fill(out, bytes, rank, 2000 + i);
        CHECK_MPI(MPI_Send(out, (int)bytes, MPI_BYTE, peer, 3, MPI_COMM_WORLD));
    }
    for (int i = 0; i < count; i++) {
        CHECK_MPI(MPI_Recv(in, (int)bytes, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &st));
        check_status(&st, peer, 3, bytes);
        verify(in, bytes, peer, 2000 + i, "blocking");
    }

    /* Truncated, whichever way it went: only the buffer's bytes written. */
    CHECK_MPI(MPI_Barrier(pair));
    exchange_window(out, count, bytes, peer, 4, 3000);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    for (int i = 0; i < count; i++) {
        size_t room = i == count - 1 ? bytes / 2 : bytes;
        memset(in, 0xee, bytes);
        int rc = MPI_Recv(in, (int)room, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &st);
        if (room < bytes) {
            int cls;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive: error class %d, expected MPI_ERR_TRUNCATE", cls);
            verify(in, room, peer, 3000 + i, "truncated");
            CHECK(in[room] == 0xee, "truncated receive wrote past its buffer");
        } else {
            CHECK(rc == MPI_SUCCESS, "receive %d failed", i);
            verify(in, bytes, peer, 3000 + i, "before the truncated one");
        }
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Comm_free(&pair));
    free(rq);
    free(in);
    free(out);
}

static void mode_bidir(int count, size_t bytes)
{
    MPI_Comm pair;
    int peer = pair_up("bidir", &pair);
    if (peer < 0)
        return;
    unsigned char *out = malloc((size_t)count * bytes), *in = malloc((size_t)count * bytes);
    MPI_Request *rq = malloc(sizeof *rq * 2 * (size_t)count);
    CHECK(out && in && rq, "out of memory");
    MPI_Status st;

    /* Windows both ways: Irecvs, then Isends. */
    for (int round = 0; round < 2; round++) {
        int base = round * count;
        memset(in, 0xee, (size_t)count * bytes);
        for (int i = 0; i < count; i++)
            CHECK_MPI(MPI_Irecv(in + (size_t)i * bytes, (int)bytes, MPI_BYTE, peer, 1, pair, &rq[i]));
        for (int i = 0; i < count; i++) {
            fill(out + (size_t)i * bytes, bytes, rank, base + i);
            CHECK_MPI(MPI_Isend(out + (size_t)i * bytes, (int)bytes, MPI_BYTE, peer, 1, pair, &rq[count + i]));
        }
        for (int i = 0; i < count; i++) {
            CHECK_MPI(MPI_Wait(&rq[i], &st));
            check_status(&st, peer, 1, bytes);
            verify(in + (size_t)i * bytes, bytes, peer, base + i, "window both ways");
        }
        CHECK_MPI(MPI_Waitall(count, rq + count, MPI_STATUSES_IGNORE));
    }

    /* Blocking sends, each with the peer's message posted first. */
    for (int i = 0; i < count; i++) {
        memset(in, 0xee, bytes);
        CHECK_MPI(MPI_Irecv(in, (int)bytes, MPI_BYTE, peer, 2, pair, &rq[0]));
        fill(out, bytes, rank, 5000 + i);
        CHECK_MPI(MPI_Send(out, (int)bytes, MPI_BYTE, peer, 2, pair));
        CHECK_MPI(MPI_Wait(&rq[0], &st));
        check_status(&st, peer, 2, bytes);
        verify(in, bytes, peer, 5000 + i, "blocking both ways");
    }

    CHECK_MPI(MPI_Comm_free(&pair));
    free(rq);
    free(in);
    free(out);
}

/* A fabric transport counter (MPI_T), or -1 when the library has none. */
static long long fabric_counter(const char *name)
{
    int provided, found;
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread");
    unsigned long long v = read_counter(name, &found);
    MPI_T_finalize();
    return found ? (long long)v : -1;
}

static void mode_burst(int count)
{
    static const size_t sizes[] = { 0, 1, 8, 100, 1000, 4095, 8192 };
    const int nsizes = (int)(sizeof sizes / sizeof *sizes);
    CHECK(size >= 2 && count >= 2 && count <= 256, "burst needs 2 ranks and 2 .. 256 messages");
    unsigned char *bufs[256];
    MPI_Request reqs[256];
    for (int i = 0; i < count; i++) {
        bufs[i] = malloc(8192);
        CHECK(bufs[i], "out of memory");
    }
    int early = count / 2;
    if (rank == 1)
        for (int i = 0; i < early; i++)
            CHECK_MPI(MPI_Irecv(bufs[i], 8192, MPI_BYTE, 0, i, MPI_COMM_WORLD, &reqs[i]));
    if (rank == 0)
        for (int i = 0; i < count; i++)
            fill(bufs[i], sizes[i % nsizes], 0, i);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        long long before = fabric_counter("fabric_batched");
        for (int i = 0; i < count; i++)
            CHECK_MPI(MPI_Isend(bufs[i], (int)sizes[i % nsizes], MPI_BYTE, 1, i, MPI_COMM_WORLD, &reqs[i]));
        long long after = fabric_counter("fabric_batched");
        CHECK_MPI(MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE));
        printf("burst batched %lld\n", before < 0 ? -1 : after - before);
    } else if (rank == 1) {
        MPI_Status st;
        for (int i = 0; i < early; i++) {
            CHECK_MPI(MPI_Wait(&reqs[i], &st));
            check_status(&st, 0, i, sizes[i % nsizes]);
            verify(bufs[i], sizes[i % nsizes], 0, i, "burst (posted first)");
        }
        for (int i = early; i < count; i++) {
            CHECK_MPI(MPI_Recv(bufs[i], 8192, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            check_status(&st, 0, i, sizes[i % nsizes]);    /* in order */
            verify(bufs[i], sizes[i % nsizes], 0, i, "burst (received after)");
        }
    }
    for (int i = 0; i < count; i++)
        free(bufs[i]);
}

static void mode_sendpair(void)
{
    CHECK(size >= 2, "sendpair needs 2 ranks");
    int v[2] = { 11, 22 };
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK_MPI(MPI_Send(&v[0], 1, MPI_INT, 1, 0, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(&v[1], 1, MPI_INT, 1, 1, MPI_COMM_WORLD));
        double until = now() + 1.5;
        while (now() < until)
            usleep(1000);   /* no MPI call: nothing progresses here */
    } else if (rank == 1) {
        int got[2] = { 0, 0 };
        CHECK_MPI(MPI_Recv(&got[0], 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t = now();
        CHECK_MPI(MPI_Recv(&got[1], 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double gap = now() - t;
        CHECK(got[0] == 11 && got[1] == 22, "received %d %d", got[0], got[1]);
        CHECK(gap < 1.0, "the second blocking send arrived %.2f s after the first: held until the sender's next MPI call",
              gap);
    }
}

static void mode_pingpong(int count)
{
    static const size_t sizes[] = { 0, 8, 256, 4096, 40000 };
    const int nsizes = (int)(sizeof sizes / sizeof *sizes);
    CHECK(size >= 2 && count >= 1, "pingpong needs 2 ranks and a count");
    unsigned char *a = malloc(40000), *b = malloc(40000);
    CHECK(a && b, "out of memory");
    MPI_Status st;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    long long before = rank == 1 ? fabric_counter("fabric_deferred_reposts") : 0;
    for (int i = 0; rank < 2 && i < count; i++) {
        size_t n = sizes[i % nsizes];
        int pair = i % 10 == 9;     /* two arrivals before the answer */
        if (rank == 0) {
            fill(a, n, 0, i);
            if (pair) {
                MPI_Request rq[2];
                fill(b, 100, 0, i + 1);
                CHECK_MPI(MPI_Isend(a, (int)n, MPI_BYTE, 1, i, MPI_COMM_WORLD, &rq[0]));
                CHECK_MPI(MPI_Isend(b, 100, MPI_BYTE, 1, i + 1, MPI_COMM_WORLD, &rq[1]));
                CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
            } else {
                CHECK_MPI(MPI_Send(a, (int)n, MPI_BYTE, 1, i, MPI_COMM_WORLD));
            }
            memset(a, 0, n);
            CHECK_MPI(MPI_Recv(a, 40000, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            check_status(&st, 1, i, n);
            verify(a, n, 1, i, "pingpong (answer)");
        } else {
            CHECK_MPI(MPI_Recv(a, 40000, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            check_status(&st, 0, i, n);
            verify(a, n, 0, i, "pingpong");
            if (pair) {
                CHECK_MPI(MPI_Recv(b, 40000, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                check_status(&st, 0, i + 1, 100);
                verify(b, 100, 0, i + 1, "pingpong (second of a pair)");
            }
            fill(a, n, 1, i);
            CHECK_MPI(MPI_Send(a, (int)n, MPI_BYTE, 0, i, MPI_COMM_WORLD));
        }
    }
    if (rank == 1) {
        long long after = fabric_counter("fabric_deferred_reposts");
        printf("pingpong deferred %lld\n", before < 0 ? -1 : after - before);
    }
    free(a);
    free(b);
}

static void mode_foreign(void)
{
    int v = 42;
    if (rank == 1) {
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD));
        sleep(5);  /* rank 0's rejection ends the job before this */
    } else if (rank == 0) {
        MPI_Request rq;
        int flag = 0;
        CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &rq));
        double until = now() + 5;
        while (!flag && now() < until)
            CHECK_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "a message from a foreign process group was accepted");
    }
    CHECK(0, "the foreign write was not rejected");
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2, "usage: dn_proto MODE [ARGS]");
    const char *mode = argv[1];
    /* The foreign-writer test gives rank 1 another process-group id before
     * MPI_Init reads its parameters (PMIX_RANK is set by the launcher). */
    if (strcmp(mode, "foreign") == 0) {
        const char *r = getenv("PMIX_RANK");
        if (r && atoi(r) == 1)
            setenv("HASHI_DIMMNET_PGID", "305419896", 1);
    }
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (strcmp(mode, "eager") == 0) {
        CHECK(argc == 4, "eager COUNT SIZE");
        mode_eager(atoi(argv[2]), (size_t)atol(argv[3]));
    } else if (strcmp(mode, "handshake") == 0) {
        mode_handshake();
    } else if (strcmp(mode, "flood") == 0) {
        CHECK(argc == 3, "flood COUNT");
        mode_flood(atoi(argv[2]));
    } else if (strcmp(mode, "barrier") == 0) {
        CHECK(argc == 3 || argc == 4, "barrier COUNT [COMMS]");
        mode_barrier(atoi(argv[2]), argc == 4 ? atoi(argv[3]) : 0);
    } else if (strcmp(mode, "bidir") == 0) {
        CHECK(argc == 4, "bidir COUNT SIZE");
        mode_bidir(atoi(argv[2]), (size_t)atol(argv[3]));
    } else if (strcmp(mode, "busypull") == 0) {
        CHECK(argc == 4, "busypull COUNT SIZE");
        mode_busypull(atoi(argv[2]), (size_t)atol(argv[3]));
    } else if (strcmp(mode, "burst") == 0) {
        CHECK(argc == 3, "burst COUNT");
        mode_burst(atoi(argv[2]));
    } else if (strcmp(mode, "sendpair") == 0) {
        mode_sendpair();
    } else if (strcmp(mode, "pingpong") == 0) {
        CHECK(argc == 3, "pingpong COUNT");
        mode_pingpong(atoi(argv[2]));
    } else if (strcmp(mode, "foreign") == 0) {
        mode_foreign();
    } else {
        CHECK(0, "unknown mode %s", mode);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d of %d ok\n", rank, size);
    fflush(stdout);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
