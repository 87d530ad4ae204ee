/*
 * Partitioned point-to-point (MPI-4): every rank sends to its right neighbour
 * and receives from its left one in a ring, so 2 and 4 ranks exercise the
 * same code with one or two peers each.
 *
 *  - data byte for byte per partition, new data each epoch, partitions
 *    readied in reverse, random, Pready_range and Pready_list order, over
 *    several epochs of the same requests; Parrived polled until every
 *    partition is in, each partition checked as soon as it has arrived,
 *    before MPI_Wait;
 *  - two pairs on the same communicator and tag, started and readied in the
 *    opposite order of their initialisation (pairing follows init order);
 *  - different partition counts on the two sides, zero-size partitions,
 *    a strided datatype on both sides, partitions above the eager limit;
 *  - error classes: Pready before Start, out of range, twice; Pready_range /
 *    Pready_list misuse; Parrived on a send; MPI_ANY_SOURCE; partitions 0;
 *    totals that differ (the receive fails, the sender still completes);
 *  - MPI_PROC_NULL, MPI_Cancel (no effect), MPI_Request_free.
 */
#include "../util/check.h"
#include "shuffle.h"

#include <stdint.h>

static int rank, size, right, left;

/* The byte at offset i of the message of (epoch, sender, stream). */
static unsigned char pattern(int epoch, int sender, int stream, size_t i)
{
    return (unsigned char)(i * 131u + (size_t)epoch * 17u + (size_t)sender * 59u + (size_t)stream * 101u + 1u);
}


enum order { ORDER_FORWARD, ORDER_REVERSE, ORDER_RANDOM, ORDER_RANGE, ORDER_LIST, ORDER_COUNT };

/* Mark every partition of an active send ready, in the given order. */
static void ready_all(MPI_Request req, int parts, enum order order)
{
    int idx[256];
    CHECK(parts <= 256, "too many partitions for the test");
    for (int i = 0; i < parts; i++)
        idx[i] = i;
    switch (order) {
    case ORDER_FORWARD:
        for (int i = 0; i < parts; i++)
            CHECK_MPI(MPI_Pready(i, req));
        break;
    case ORDER_REVERSE:
        for (int i = parts - 1; i >= 0; i--)
            CHECK_MPI(MPI_Pready(i, req));
        break;
    case ORDER_RANDOM:
        shuffle(idx, parts);
        for (int i = 0; i < parts; i++)
            CHECK_MPI(MPI_Pready(idx[i], req));
        break;
    case ORDER_RANGE:
        /* upper half first, then the lower */
        CHECK_MPI(MPI_Pready_range(parts / 2, parts - 1, req));
        if (parts / 2 > 0)
            CHECK_MPI(MPI_Pready_range(0, parts / 2 - 1, req));
        break;
    default:
        shuffle(idx, parts);
        CHECK_MPI(MPI_Pready_list(parts, idx, req));
        break;
    }
}

/*
 * One ring exchange per epoch on persistent partitioned requests: sparts x
 * scount ints out, rparts x rcount ints in (same totals). The receiver polls
 * MPI_Parrived and checks each partition the moment it reports arrival.
 */
static void ring_epochs(int sparts, int scount, int rparts, int rcount, int epochs, int stream)
{
    size_t sbytes = (size_t)sparts * (size_t)scount * sizeof(int), rbytes = (size_t)rparts * (size_t)rcount * sizeof(int);
    CHECK(sbytes == rbytes, "test set-up: totals differ");
    unsigned char *sbuf = malloc(sbytes + 1), *rbuf = malloc(rbytes + 1);
    CHECK(sbuf && rbuf, "out of memory");
    MPI_Request sreq, rreq;
    CHECK_MPI(MPI_Precv_init(rbuf, rparts, rcount, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    CHECK_MPI(MPI_Psend_init(sbuf, sparts, scount, MPI_INT, right, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    size_t rpart_bytes = (size_t)rcount * sizeof(int);
    for (int epoch = 0; epoch < epochs; epoch++) {
        for (size_t i = 0; i < sbytes; i++)
            sbuf[i] = pattern(epoch, rank, stream, i);
        memset(rbuf, 0xee, rbytes);
        /* Receive first on even epochs, send first on odd ones. */
        if (epoch % 2 == 0) {
            CHECK_MPI(MPI_Start(&rreq));
            CHECK_MPI(MPI_Start(&sreq));
        } else {
            MPI_Request both[2] = { sreq, rreq };
            CHECK_MPI(MPI_Startall(2, both));
        }
        ready_all(sreq, sparts, (enum order)((epoch + stream) % ORDER_COUNT));
        char *seen = calloc((size_t)rparts, 1);
        int remaining = rparts;
        long polls = 0;
        while (remaining > 0) {
            for (int q = 0; q < rparts; q++) {
                if (seen[q])
                    continue;
                int flag = 0;
                CHECK_MPI(MPI_Parrived(rreq, q, &flag));
                if (!flag)
                    continue;
                seen[q] = 1;
                remaining--;
                for (size_t i = q * rpart_bytes; i < (q + 1) * rpart_bytes; i++)
                    CHECK(rbuf[i] == pattern(epoch, left, stream, i),
                          "epoch %d: partition %d byte %zu is %d, expected %d (before MPI_Wait)", epoch, q, i,
                          rbuf[i], pattern(epoch, left, stream, i));
            }
            CHECK(++polls < 100000000L, "epoch %d: partitions never arrived", epoch);
        }
        free(seen);
        MPI_Status st;
        CHECK_MPI(MPI_Wait(&rreq, &st));
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        MPI_Count n;
        CHECK_MPI(MPI_Get_count_c(&st, MPI_INT, &n));
        CHECK(n == (MPI_Count)rparts * rcount, "Get_count %lld, expected %d", (long long)n, rparts * rcount);
        CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        /* inactive again: Parrived says true, Wait returns at once */
        int flag = 0;
        CHECK_MPI(MPI_Parrived(rreq, 0, &flag));
        CHECK(flag, "Parrived on an inactive request is false");
        for (size_t i = 0; i < rbytes; i++)
            CHECK(rbuf[i] == pattern(epoch, left, stream, i), "epoch %d byte %zu after Wait", epoch, i);
    }
    CHECK_MPI(MPI_Request_free(&sreq));
    CHECK_MPI(MPI_Request_free(&rreq));
    CHECK(sreq == MPI_REQUEST_NULL && rreq == MPI_REQUEST_NULL, "Request_free did not null the handles");
    free(sbuf);
    free(rbuf);
}

/* Two pairs on (comm, tag): initialised A then B on both sides, but started
 * and readied B first. Init order decides the pairing. */
static void two_pairs(void)
{
    enum { PARTS = 4, COUNT = 50 };
    int sa[PARTS * COUNT], sb[PARTS * COUNT], ra[PARTS * COUNT], rb[PARTS * COUNT];
    for (int i = 0; i < PARTS * COUNT; i++) {
        sa[i] = rank * 100000 + i;
        sb[i] = -(rank * 100000 + i) - 1;
    }
    MPI_Request sA, sB, rA, rB;
    CHECK_MPI(MPI_Psend_init(sa, PARTS, COUNT, MPI_INT, right, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &sA));
    CHECK_MPI(MPI_Precv_init(ra, PARTS, COUNT, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &rA));
    CHECK_MPI(MPI_Psend_init(sb, PARTS, COUNT, MPI_INT, right, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &sB));
    CHECK_MPI(MPI_Precv_init(rb, PARTS, COUNT, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &rB));
    for (int epoch = 0; epoch < 3; epoch++) {
        memset(ra, 0, sizeof ra);
        memset(rb, 0, sizeof rb);
        CHECK_MPI(MPI_Start(&rB));
        CHECK_MPI(MPI_Start(&sB));
        ready_all(sB, PARTS, ORDER_REVERSE);
        /* B completes without A ever being started (in the first epoch: A's
         * hello has not even been sent) */
        CHECK_MPI(MPI_Wait(&rB, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&sB, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Start(&sA));
        CHECK_MPI(MPI_Start(&rA));
        ready_all(sA, PARTS, ORDER_RANDOM);
        CHECK_MPI(MPI_Wait(&sA, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&rA, MPI_STATUS_IGNORE));
        for (int i = 0; i < PARTS * COUNT; i++) {
            CHECK(ra[i] == left * 100000 + i, "pair A element %d is %d (pairing order broken?)", i, ra[i]);
            CHECK(rb[i] == -(left * 100000 + i) - 1, "pair B element %d is %d (pairing order broken?)", i, rb[i]);
        }
    }
    MPI_Request all[4] = { sA, sB, rA, rB };
    for (int i = 0; i < 4; i++)
        CHECK_MPI(MPI_Request_free(&all[i]));
}

/* A strided type on both sides: every other double of a 2x longer array. */
static void strided(void)
{
    enum { PARTS = 6, COUNT = 5, N = PARTS * COUNT };
    double sbuf[2 * N], rbuf[2 * N];
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(1, 1, 2, MPI_DOUBLE, &every_other));
    MPI_Datatype resized;
    CHECK_MPI(MPI_Type_create_resized(every_other, 0, 2 * sizeof(double), &resized));
    CHECK_MPI(MPI_Type_commit(&resized));
    MPI_Request s, r;
    CHECK_MPI(MPI_Psend_init(sbuf, PARTS, COUNT, resized, right, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    /* the receiver: 3 partitions of 10 (different count, same total) */
    CHECK_MPI(MPI_Precv_init(rbuf, 3, 10, resized, left, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    CHECK_MPI(MPI_Type_free(&every_other));
    CHECK_MPI(MPI_Type_free(&resized));   /* the requests keep it */
    for (int epoch = 0; epoch < 3; epoch++) {
        for (int i = 0; i < 2 * N; i++) {
            sbuf[i] = i % 2 ? -1.0 : rank * 1000.0 + i + epoch * 0.5;
            rbuf[i] = -2.0;
        }
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Start(&s));
        ready_all(s, PARTS, ORDER_RANDOM);
        CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < 2 * N; i++)
            CHECK(rbuf[i] == (i % 2 ? -2.0 : left * 1000.0 + i + epoch * 0.5),
                  "strided epoch %d element %d is %g", epoch, i, rbuf[i]);
    }
    CHECK_MPI(MPI_Request_free(&s));
    CHECK_MPI(MPI_Request_free(&r));
}

static void expect_class(int rc, int cls, const char *what)
{
    int got = rc;
    MPI_Error_class(rc, &got);
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS)
        MPI_Error_string(rc, msg, &len);
    CHECK(got == cls, "%s: error class %d, expected %d (%s)", what, got, cls, msg);
}

static void errors(void)
{
    MPI_Comm comm;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int sbuf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, rbuf[8];
    MPI_Request s, r, x;
    expect_class(MPI_Psend_init(sbuf, 0, 2, MPI_INT, right, 0, comm, MPI_INFO_NULL, &x), MPI_ERR_ARG,
                 "0 partitions");
    expect_class(MPI_Precv_init(rbuf, 4, 2, MPI_INT, MPI_ANY_SOURCE, 0, comm, MPI_INFO_NULL, &x), MPI_ERR_RANK,
                 "MPI_ANY_SOURCE");
    expect_class(MPI_Psend_init(sbuf, 4, 2, MPI_INT, right, -5, comm, MPI_INFO_NULL, &x), MPI_ERR_TAG, "tag -5");
    expect_class(MPI_Psend_init(sbuf, 4, -1, MPI_INT, right, 0, comm, MPI_INFO_NULL, &x), MPI_ERR_COUNT,
                 "count -1");
    CHECK_MPI(MPI_Psend_init(sbuf, 4, 2, MPI_INT, right, 0, comm, MPI_INFO_NULL, &s));
    CHECK_MPI(MPI_Precv_init(rbuf, 4, 2, MPI_INT, left, 0, comm, MPI_INFO_NULL, &r));
    expect_class(MPI_Pready(0, s), MPI_ERR_REQUEST, "Pready before MPI_Start");
    int flag;
    expect_class(MPI_Parrived(s, 0, &flag), MPI_ERR_REQUEST, "Parrived on a send");
    expect_class(MPI_Pready(0, r), MPI_ERR_REQUEST, "Pready on a receive");
    expect_class(MPI_Pready(0, MPI_REQUEST_NULL), MPI_ERR_REQUEST, "Pready on MPI_REQUEST_NULL");
    CHECK_MPI(MPI_Start(&r));
    CHECK_MPI(MPI_Start(&s));
    expect_class(MPI_Start(&s), MPI_ERR_REQUEST, "MPI_Start on an active partitioned send");
    expect_class(MPI_Pready(4, s), MPI_ERR_ARG, "Pready partition 4 of 4");
    expect_class(MPI_Pready(-1, s), MPI_ERR_ARG, "Pready partition -1");
    expect_class(MPI_Parrived(r, 4, &flag), MPI_ERR_ARG, "Parrived partition 4 of 4");
    expect_class(MPI_Pready_range(2, 1, s), MPI_ERR_ARG, "Pready_range 2..1");
    expect_class(MPI_Pready_range(2, 4, s), MPI_ERR_ARG, "Pready_range 2..4");
    int dup_list[3] = { 1, 3, 1 };
    expect_class(MPI_Pready_list(3, dup_list, s), MPI_ERR_ARG, "Pready_list with partition 1 twice");
    CHECK_MPI(MPI_Cancel(&s));   /* no effect: the epoch completes normally */
    CHECK_MPI(MPI_Pready(1, s));
    expect_class(MPI_Pready(1, s), MPI_ERR_ARG, "Pready twice in one epoch");
    int rest[3] = { 0, 2, 3 };   /* the failed calls above marked nothing */
    CHECK_MPI(MPI_Pready_list(3, rest, s));
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&s, &st));
    CHECK_MPI(MPI_Wait(&r, &st));
    int cancelled = 1;
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK(!cancelled, "a partitioned receive reports cancelled");
    for (int i = 0; i < 8; i++)
        CHECK(rbuf[i] == i + 1, "element %d is %d", i, rbuf[i]);
    CHECK_MPI(MPI_Request_free(&s));
    CHECK_MPI(MPI_Request_free(&r));

    /* Totals that differ: 4 x 10 ints sent, 4 x 8 expected. The receive
     * fails (nothing is written), the sender still completes. */
    int big[40], small[32];
    for (int i = 0; i < 40; i++)
        big[i] = i;
    for (int i = 0; i < 32; i++)
        small[i] = -7;
    CHECK_MPI(MPI_Psend_init(big, 4, 10, MPI_INT, right, 1, comm, MPI_INFO_NULL, &s));
    CHECK_MPI(MPI_Precv_init(small, 4, 8, MPI_INT, left, 1, comm, MPI_INFO_NULL, &r));
    for (int epoch = 0; epoch < 2; epoch++) {
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Start(&s));
        ready_all(s, 4, ORDER_REVERSE);
        CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
        int rc = MPI_Wait(&r, &st);
        expect_class(rc, MPI_ERR_TRUNCATE, "receiving 160 bytes into a 128-byte partitioned receive");
        for (int i = 0; i < 32; i++)
            CHECK(small[i] == -7, "a mismatched partitioned receive wrote element %d", i);
    }
    CHECK_MPI(MPI_Request_free(&s));
    CHECK_MPI(MPI_Request_free(&r));
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
}

static void proc_null(void)
{
    int buf[4] = { 0 };
    MPI_Request s, r;
    CHECK_MPI(MPI_Psend_init(buf, 2, 2, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    CHECK_MPI(MPI_Precv_init(buf, 2, 2, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int epoch = 0; epoch < 2; epoch++) {
        CHECK_MPI(MPI_Start(&s));
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Pready_range(0, 1, s));
        int flag = 0;
        CHECK_MPI(MPI_Parrived(r, 1, &flag));
        CHECK(flag, "PROC_NULL partition not arrived");
        MPI_Status st;
        CHECK_MPI(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL status source %d", st.MPI_SOURCE);
        CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    }
    CHECK_MPI(MPI_Request_free(&s));
    CHECK_MPI(MPI_Request_free(&r));
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    rng_state = 12345u + (unsigned)rank;

    ring_epochs(8, 250, 8, 250, 6, 0);          /* equal partitions, every readying order */
    ring_epochs(4, 6, 3, 8, 5, 1);              /* 4 sender partitions, 3 receiver ones */
    ring_epochs(3, 8, 6, 4, 5, 2);              /* 3 sender partitions, 6 receiver ones */
    ring_epochs(4, 0, 4, 0, 3, 3);              /* zero-size partitions */
    ring_epochs(4, 64 * 1024, 4, 64 * 1024, 2, 4); /* 256 KiB partitions (rendezvous) */
    ring_epochs(64, 1, 64, 1, 5, 5);            /* many one-int partitions */
    two_pairs();
    strided();
    errors();
    proc_null();

    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d of %d ok\n", rank, size);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
