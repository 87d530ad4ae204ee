/*
 * The DIMMnet device's large-message paths, above all the split rendezvous
 * (the receiver PULLs the front of a message while the sender PUSHes the rest
 * into the receiver's buffer; docs/dimmnet.md "Large messages"). The test list
 * forces the path with parameters and checks the device's put / pull counters
 * (HASHI_DIMMNET_STATS), which only a split can make add up as expected. Every
 * mode checks data byte for byte, status fields and the bytes around the
 * receive buffer.
 *
 *   order recv|send MIN  rank 0 sends to rank 1 at sizes around MIN (the split
 *                        threshold) and its 4 KiB rounding, with Send and
 *                        Ssend; `recv`: every receive is posted first; `send`:
 *                        every message waits unexpected (Probe) first
 *   both COUNT           ranks 0 and 1 exchange COUNT messages each way at
 *                        once, half of the receives posted before the sends;
 *                        an anchor message each way, sent first and received
 *                        only afterwards (rank 1's first), keeps each side's
 *                        own rendezvous outstanding throughout, so the rule
 *                        "both ways: the receiver reads it all" applies to
 *                        every exchanged message whatever the timing
 *   anysource COUNT      every rank but 0 sends COUNT messages to rank 0, which
 *                        receives them with ANY_SOURCE / ANY_TAG, half
 *                        pre-posted; per-source order and contents checked
 *   truncate             messages longer than the receive buffer, both orders:
 *                        MPI_ERR_TRUNCATE, the buffer's part delivered,
 *                        nothing written past it, the send succeeds
 *   derived              receives into a strided vector type, both orders: the
 *                        blocks filled, the gaps untouched
 */
#include "dn_data.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;



/* Rank 0 sends n bytes to rank 1 with the receive first or the send first. */
static void one_transfer(size_t n, int idx, int recv_first, int sync)
{
    int tag = 100 + idx;
    unsigned char *buf = guarded(n);
    if (rank == 0) {
        fill(buf, n, 0, idx);
        MPI_Request rq;
        if (recv_first) {
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(sync ? MPI_Ssend(buf, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD)
                           : MPI_Send(buf, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD));
        } else {
            CHECK_MPI(sync ? MPI_Issend(buf, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &rq)
                           : MPI_Isend(buf, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &rq));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        }
    } else if (rank == 1) {
        MPI_Status st;
        if (recv_first) {
            MPI_Request rq;
            CHECK_MPI(MPI_Irecv(buf, (int)n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &rq));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&rq, &st));
        } else {
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Probe(0, tag, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
        }
        check_status(&st, 0, tag, n);
        verify(buf, n, 0, idx, recv_first ? "receive-first" : "send-first");
        check_untouched(buf - DN_GUARD, DN_GUARD, "before");
        check_untouched(buf + n, DN_GUARD, "after");
    } else {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    guarded_free(buf);
}

static void mode_order(int recv_first, size_t min)
{
    /* The split threshold and the page rounding of the receiver's part. */
    const size_t sizes[] = { 16385, 8191, 8192, 12287, 12288, min - 1, min, min + 1, min + 4095, min + 4096,
                             min + 8193, 3 * min + 7, 1048576, 1048576 + 5, 4194304 + 1 };
    int idx = 0;
    for (int sync = 0; sync < 2; sync++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            one_transfer(sizes[i], idx++, recv_first, sync);
}

static size_t both_size(int idx)
{
    static const size_t s[] = { 65536, 300000, 1048576 + 17, 20000, 131072 };
    return s[idx % 5];
}

static void mode_both(int count)
{
    CHECK(size == 2, "both needs 2 ranks");
    int peer = 1 - rank;
    unsigned char **rbuf = calloc((size_t)count, sizeof *rbuf), **sbuf = calloc((size_t)count, sizeof *sbuf);
    MPI_Request *rq = calloc(2 * (size_t)count, sizeof *rq);
    MPI_Status *st = calloc(2 * (size_t)count, sizeof *st);
    CHECK(rbuf && sbuf && rq && st, "out of memory");
    for (int i = 0; i < count; i++) {
        rbuf[i] = guarded(both_size(i));
        sbuf[i] = guarded(both_size(i));
        fill(sbuf[i], both_size(i), rank, i);
    }
    enum { ANCHOR_TAG = 1000, ANCHOR_SIZE = 20000 };
    unsigned char *anchor_out = guarded(ANCHOR_SIZE), *anchor_in = guarded(ANCHOR_SIZE);
    fill(anchor_out, ANCHOR_SIZE, rank, ANCHOR_TAG);
    MPI_Request anchor_rq;
    CHECK_MPI(MPI_Isend(anchor_out, ANCHOR_SIZE, MPI_BYTE, peer, ANCHOR_TAG, MPI_COMM_WORLD, &anchor_rq));
    int half = count / 2;
    for (int i = 0; i < half; i++)
        CHECK_MPI(MPI_Irecv(rbuf[i], (int)both_size(i), MPI_BYTE, peer, i, MPI_COMM_WORLD, &rq[i]));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < count; i++)
        CHECK_MPI(MPI_Isend(sbuf[i], (int)both_size(i), MPI_BYTE, peer, i, MPI_COMM_WORLD, &rq[count + i]));
    for (int i = half; i < count; i++)
        CHECK_MPI(MPI_Irecv(rbuf[i], (int)both_size(i), MPI_BYTE, peer, i, MPI_COMM_WORLD, &rq[i]));
    CHECK_MPI(MPI_Waitall(2 * count, rq, st));
    /* The anchors: rank 1 reads rank 0's while its own is still announced
     * (itself), then rank 0 reads rank 1's, announced long before (a pull). */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Status anchor_st;
    for (int turn = 1; turn >= 0; turn--) {
        if (rank == turn) {
            CHECK_MPI(MPI_Recv(anchor_in, ANCHOR_SIZE, MPI_BYTE, peer, ANCHOR_TAG, MPI_COMM_WORLD, &anchor_st));
            check_status(&anchor_st, peer, ANCHOR_TAG, ANCHOR_SIZE);
            verify(anchor_in, ANCHOR_SIZE, peer, ANCHOR_TAG, "anchor");
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Wait(&anchor_rq, MPI_STATUS_IGNORE));
    guarded_free(anchor_out);
    guarded_free(anchor_in);
    for (int i = 0; i < count; i++) {
        check_status(&st[i], peer, i, both_size(i));
        verify(rbuf[i], both_size(i), peer, i, "both ways");
        check_untouched(rbuf[i] + both_size(i), DN_GUARD, "after");
        guarded_free(rbuf[i]);
        guarded_free(sbuf[i]);
    }
    free(rbuf);
    free(sbuf);
    free(rq);
    free(st);
}

static size_t any_size(int src, int idx)
{
    return 40000 + (size_t)src * 70001 + (size_t)idx * 33331;
}

static void mode_anysource(int count)
{
    CHECK(size >= 2, "anysource needs 2 ranks");
    size_t maxb = any_size(size - 1, count - 1);
    if (rank != 0) {
        unsigned char *buf = guarded(maxb);
        for (int i = 0; i < count; i++) {
            fill(buf, any_size(rank, i), rank, i);
            if (i == count / 2)
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));  /* the first half waits unexpected, or not */
            CHECK_MPI(MPI_Send(buf, (int)any_size(rank, i), MPI_BYTE, 0, i, MPI_COMM_WORLD));
        }
        guarded_free(buf);
        return;
    }
    int total = count * (size - 1), posted = total / 2;
    unsigned char **buf = calloc((size_t)total, sizeof *buf);
    MPI_Request *rq = calloc((size_t)total, sizeof *rq);
    MPI_Status *st = calloc((size_t)total, sizeof *st);
    int *next = calloc((size_t)size, sizeof *next);
    CHECK(buf && rq && st && next, "out of memory");
    for (int i = 0; i < total; i++)
        buf[i] = guarded(maxb);
    for (int i = 0; i < posted; i++)
        CHECK_MPI(MPI_Irecv(buf[i], (int)maxb, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Waitall(posted, rq, st));
    for (int i = posted; i < total; i++)
        CHECK_MPI(MPI_Recv(buf[i], (int)maxb, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st[i]));
    for (int i = 0; i < total; i++) {
        int src = st[i].MPI_SOURCE, idx = st[i].MPI_TAG;
        CHECK(src >= 1 && src < size, "receive %d: source %d", i, src);
        CHECK(idx == next[src], "receive %d: message %d from rank %d overtook message %d", i, idx, src, next[src]);
        next[src]++;
        check_status(&st[i], src, idx, any_size(src, idx));
        verify(buf[i], any_size(src, idx), src, idx, "ANY_SOURCE");
        check_untouched(buf[i] + maxb, DN_GUARD, "after");
        guarded_free(buf[i]);
    }
    free(buf);
    free(rq);
    free(st);
    free(next);
}

static void mode_truncate(void)
{
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    const size_t sent[] = { 1048576 + 9, 200000 };
    const size_t room[] = { 524288 + 3, 70001 };
    int idx = 0;
    for (int recv_first = 0; recv_first < 2; recv_first++) {
        for (size_t k = 0; k < 2; k++, idx++) {
            size_t n = sent[k], m = room[k];
            int tag = 200 + idx;
            if (rank == 0) {
                unsigned char *buf = guarded(n);
                fill(buf, n, 0, idx);
                MPI_Request rq;
                CHECK_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &rq));
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
                guarded_free(buf);
            } else if (rank == 1) {
                unsigned char *buf = guarded(m);
                MPI_Request rq;
                MPI_Status st;
                if (recv_first)
                    CHECK_MPI(MPI_Irecv(buf, (int)m, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &rq));
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                if (!recv_first) {
                    CHECK_MPI(MPI_Probe(0, tag, MPI_COMM_WORLD, &st));
                    CHECK_MPI(MPI_Irecv(buf, (int)m, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &rq));
                }
                int rc = MPI_Wait(&rq, &st);
                int cls = -1;
                MPI_Error_class(rc, &cls);
                CHECK(cls == MPI_ERR_TRUNCATE, "a %zu-byte message into %zu bytes: error class %d, expected MPI_ERR_TRUNCATE",
                      n, m, cls);
                check_status(&st, 0, tag, m);
                verify(buf, m, 0, idx, "truncated");
                check_untouched(buf - DN_GUARD, DN_GUARD, "before");
                check_untouched(buf + m, DN_GUARD, "after");
                guarded_free(buf);
            } else {
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            }
        }
    }
}

static void mode_derived(void)
{
    /* COUNT blocks of BLOCK ints, STRIDE ints apart: 1 MiB of data, gaps between. */
    enum { COUNT = 2048, BLOCK = 128, STRIDE = 131 };
    size_t data = (size_t)COUNT * BLOCK * sizeof(int), span = (size_t)((COUNT - 1) * STRIDE + BLOCK) * sizeof(int);
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(COUNT, BLOCK, STRIDE, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    for (int recv_first = 0; recv_first < 2; recv_first++) {
        int tag = 300 + recv_first;
        if (rank == 0) {
            unsigned char *buf = guarded(data);
            fill(buf, data, 0, tag);
            MPI_Request rq;
            CHECK_MPI(MPI_Isend(buf, COUNT * BLOCK, MPI_INT, 1, tag, MPI_COMM_WORLD, &rq));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            guarded_free(buf);
        } else if (rank == 1) {
            unsigned char *buf = guarded(span), *expect = malloc(data);
            CHECK(expect, "out of memory");
            fill(expect, data, 0, tag);
            MPI_Request rq;
            MPI_Status st;
            if (recv_first)
                CHECK_MPI(MPI_Irecv(buf, 1, vec, 0, tag, MPI_COMM_WORLD, &rq));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            if (!recv_first) {
                CHECK_MPI(MPI_Probe(0, tag, MPI_COMM_WORLD, &st));
                CHECK_MPI(MPI_Irecv(buf, 1, vec, 0, tag, MPI_COMM_WORLD, &rq));
            }
            CHECK_MPI(MPI_Wait(&rq, &st));
            check_status(&st, 0, tag, data);
            size_t blk = BLOCK * sizeof(int), gap = (STRIDE - BLOCK) * sizeof(int);
            for (int b = 0; b < COUNT; b++) {
                const unsigned char *at = buf + (size_t)b * STRIDE * sizeof(int);
                CHECK(memcmp(at, expect + (size_t)b * blk, blk) == 0, "vector receive (%s first): block %d differs",
                      recv_first ? "receive" : "send", b);
                if (b + 1 < COUNT)
                    check_untouched(at + blk, gap, "a gap of the vector");
            }
            check_untouched(buf - DN_GUARD, DN_GUARD, "before");
            check_untouched(buf + span, DN_GUARD, "after");
            free(expect);
            guarded_free(buf);
        } else {
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
    CHECK_MPI(MPI_Type_free(&vec));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc >= 2, "usage: dn_rndv order recv|send MIN | both COUNT | anysource COUNT | truncate | derived");
    CHECK(size >= 2, "dn_rndv needs at least 2 ranks");
    const char *mode = argv[1];
    if (strcmp(mode, "order") == 0 && argc >= 4) {
        long long min = atoll(argv[3]);
        CHECK(min >= 4096, "order: MIN %lld must be at least 4096", min);
        mode_order(strcmp(argv[2], "recv") == 0, (size_t)min);
    } else if (strcmp(mode, "both") == 0 && argc >= 3) {
        mode_both(atoi(argv[2]));
    } else if (strcmp(mode, "anysource") == 0 && argc >= 3) {
        mode_anysource(atoi(argv[2]));
    } else if (strcmp(mode, "truncate") == 0) {
        mode_truncate();
    } else if (strcmp(mode, "derived") == 0) {
        mode_derived();
    } else {
        CHECK(0, "unknown mode or missing argument: %s", mode);
    }
    printf("rank %d of %d ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
