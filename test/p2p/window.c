/*
 * window: windows of small messages, the message-rate case, through both of
 * the receiver's ways: receives posted before the messages arrive (the
 * device hands an in-order eager message straight to the posted receive)
 * and messages that arrive first (the unexpected queue). Pairs of ranks
 * (0-1, 2-3, ...) on a communicator of their own; a rank without a partner
 * only reports.
 *   - 64 messages of 1-16 bytes, each receive sized exactly, every 5th with
 *     MPI_ANY_TAG and every 7th with MPI_ANY_SOURCE: data, guard zones,
 *     status source / tag / count of every entry of MPI_Waitall;
 *   - the same window with one receive a byte short: MPI_ERR_IN_STATUS,
 *     MPI_ERR_TRUNCATE in that status and MPI_SUCCESS in the others,
 *     nothing written past the short buffer;
 *   - a Waitall array mixing sends completed in the call, a receive,
 *     MPI_REQUEST_NULL and an inactive persistent request: handles and
 *     statuses as the standard says;
 *   - a receive matched against an unexpected rendezvous message, then
 *     cancelled before it completes: it completes normally, data intact.
 */
#include "p2p_util.h"

#define W 64
#define MAX_BYTES 16
#define TAG_GO 1000
#define TAG_BIG 1001
#define TAG_MIX 1002
#define BIG_BYTES (1 << 20)

static size_t msg_bytes(int w)
{
    return 1 + (size_t)w % MAX_BYTES;
}

/* The sender's half of a window: wait for "go" when the receiver posts
 * first, else send first and then "go" (which, not overtaking, arrives after
 * the window). */
static void send_window(MPI_Comm pair, int round, int posted_first)
{
    static unsigned char data[W][MAX_BYTES];
    MPI_Request reqs[W];
    MPI_Status st[W];
    if (posted_first)
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_GO, pair, MPI_STATUS_IGNORE));
    for (int w = 0; w < W; w++) {
        payload_fill(data[w], msg_bytes(w), 0, w, round);
        CHECK_MPI(MPI_Isend(data[w], (int)msg_bytes(w), MPI_BYTE, 1, w, pair, &reqs[w]));
    }
    if (!posted_first)
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_GO, pair));
    CHECK_MPI(MPI_Waitall(W, reqs, st));
    for (int w = 0; w < W; w++)
        CHECK(reqs[w] == MPI_REQUEST_NULL, "round %d: send %d's handle not freed by MPI_Waitall", round, w);
}

/* The receiver's half; short_entry >= 0 gets a buffer one byte short. */
static void recv_window(MPI_Comm pair, int round, int posted_first, int short_entry)
{
    unsigned char *buf[W];
    size_t room[W];
    MPI_Request reqs[W];
    MPI_Status st[W];
    if (!posted_first)
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_GO, pair, MPI_STATUS_IGNORE));
    for (int w = 0; w < W; w++) {
        room[w] = msg_bytes(w) - (w == short_entry);
        buf[w] = guarded_alloc(room[w]);
        int source = w % 7 == 3 ? MPI_ANY_SOURCE : 0;
        int tag = w % 5 == 2 ? MPI_ANY_TAG : w;
        st[w].MPI_ERROR = -1;
        CHECK_MPI(MPI_Irecv(buf[w], (int)room[w], MPI_BYTE, source, tag, pair, &reqs[w]));
    }
    if (posted_first)
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_GO, pair));
    int rc = MPI_Waitall(W, reqs, st);
    if (short_entry < 0)
        CHECK(rc == MPI_SUCCESS, "round %d: MPI_Waitall returned class %d", round, error_class(rc));
    else
        CHECK(error_class(rc) == MPI_ERR_IN_STATUS, "round %d: MPI_Waitall with a short receive returned class %d",
              round, error_class(rc));
    for (int w = 0; w < W; w++) {
        int count = -1;
        CHECK(reqs[w] == MPI_REQUEST_NULL, "round %d: receive %d's handle not freed", round, w);
        CHECK(st[w].MPI_SOURCE == 0 && st[w].MPI_TAG == w, "round %d: receive %d got source %d tag %d", round, w,
              st[w].MPI_SOURCE, st[w].MPI_TAG);
        CHECK_MPI(MPI_Get_count(&st[w], MPI_BYTE, &count));
        CHECK((size_t)count == room[w], "round %d: receive %d counted %d bytes, expected %zu", round, w, count,
              room[w]);
        if (short_entry >= 0) {
            int want = w == short_entry ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
            CHECK(error_class(st[w].MPI_ERROR) == want, "round %d: status %d has class %d, expected %d", round, w,
                  error_class(st[w].MPI_ERROR), want);
        }
        long bad = payload_check(buf[w], room[w], 0, w, round);
        CHECK(bad < 0, "round %d: receive %d wrong at byte %ld", round, w, bad);
        CHECK(guards_intact(buf[w], room[w]), "round %d: receive %d wrote outside its %zu bytes", round, w, room[w]);
        guarded_free(buf[w]);
    }
}

/* A Waitall array of every kind of entry, on the rank that sends. */
static void mixed_array(MPI_Comm pair, int me)
{
    int other = 1 - me;
    int out = 100 + me, in = -1, unused = 0;
    MPI_Request reqs[5];
    MPI_Status st[5];
    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, other, TAG_MIX, pair, &reqs[0]));
    reqs[1] = MPI_REQUEST_NULL;
    CHECK_MPI(MPI_Send_init(&unused, 1, MPI_INT, other, TAG_MIX + 1, pair, &reqs[2]));
    MPI_Request persistent = reqs[2];
    CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, other, TAG_MIX, pair, &reqs[3]));
    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, other, TAG_MIX + 2, pair, &reqs[4]));
    for (int i = 0; i < 5; i++)
        st[i].MPI_TAG = st[i].MPI_SOURCE = -7;
    CHECK_MPI(MPI_Waitall(5, reqs, st));
    CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL && reqs[3] == MPI_REQUEST_NULL &&
              reqs[4] == MPI_REQUEST_NULL, "MPI_Waitall left a completed handle set");
    CHECK(reqs[2] == persistent, "MPI_Waitall changed an inactive persistent request's handle");
    CHECK(in == 100 + other, "the receive in a mixed array got %d", in);
    CHECK(st[3].MPI_SOURCE == other && st[3].MPI_TAG == TAG_MIX, "the receive's status says source %d tag %d",
          st[3].MPI_SOURCE, st[3].MPI_TAG);
    /* Empty statuses for the null and the inactive entries. */
    for (int i = 1; i <= 2; i++) {
        int count = -1;
        CHECK_MPI(MPI_Get_count(&st[i], MPI_INT, &count));
        CHECK(st[i].MPI_SOURCE == MPI_ANY_SOURCE && st[i].MPI_TAG == MPI_ANY_TAG && count == 0,
              "entry %d's status is not empty (source %d tag %d count %d)", i, st[i].MPI_SOURCE, st[i].MPI_TAG,
              count);
    }
    CHECK_MPI(MPI_Request_free(&reqs[2]));
    int extra = -1;
    CHECK_MPI(MPI_Recv(&extra, 1, MPI_INT, other, TAG_MIX + 2, pair, MPI_STATUS_IGNORE));
    CHECK(extra == 100 + other, "the second send of the mixed array carried %d", extra);
}

/* A receive that matched an unexpected rendezvous message, cancelled while
 * its transfer may still run: not cancelled, the data arrives whole. */
static void cancel_matched_big(MPI_Comm pair, int me)
{
    unsigned char *buf = malloc(BIG_BYTES);
    CHECK(buf != NULL, "out of memory");
    if (me == 0) {
        MPI_Request req;
        payload_fill(buf, BIG_BYTES, 0, TAG_BIG, 1);
        CHECK_MPI(MPI_Isend(buf, BIG_BYTES, MPI_BYTE, 1, TAG_BIG, pair, &req));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_GO, pair));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        MPI_Request req;
        MPI_Status st;
        int cancelled = -1, count = -1;
        memset(buf, 0, BIG_BYTES);
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_GO, pair, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Irecv(buf, BIG_BYTES, MPI_BYTE, 0, TAG_BIG, pair, &req));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        CHECK(!cancelled, "a receive that had matched its message was cancelled");
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == BIG_BYTES, "the rendezvous receive counted %d bytes", count);
        long bad = payload_check(buf, BIG_BYTES, 0, TAG_BIG, 1);
        CHECK(bad < 0, "the rendezvous receive is wrong at byte %ld", bad);
    }
    free(buf);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int partnered = (rank ^ 1) < size;
    MPI_Comm pair;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, partnered ? rank / 2 : MPI_UNDEFINED, rank, &pair));
    if (partnered) {
        int me;
        CHECK_MPI(MPI_Comm_rank(pair, &me));
        CHECK_MPI(MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN));
        int round = 0;
        for (int rep = 0; rep < 3; rep++) {
            for (int posted_first = 0; posted_first <= 1; posted_first++) {
                for (int short_entry = -1; short_entry <= 10; short_entry += 11) {
                    round++;
                    if (me == 0)
                        send_window(pair, round, posted_first);
                    else
                        recv_window(pair, round, posted_first, short_entry);
                }
            }
        }
        mixed_array(pair, me);
        cancel_matched_big(pair, me);
        CHECK_MPI(MPI_Comm_free(&pair));
    }
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
