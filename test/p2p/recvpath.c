/*
 * recvpath: the two paths of a blocking MPI_Recv (docs/p2p.md, "The
 * blocking receive's request"). Contiguous data within the eager limit from
 * a real source takes the request on the call's stack (MPI_T counter
 * p2p_recv_on_stack counts it); everything else the pooled request. Each
 * receive checks its bytes and status and which path it took:
 *   on the stack: a specific source and tag, ANY_SOURCE + ANY_TAG, a
 *   message that arrived before the receive, truncation into a short buffer
 *   (MPI_ERR_TRUNCATE, the prefix placed, nothing written past it), a
 *   synchronous sender, zero bytes, MPI_Recv_c, MPI_STATUS_IGNORE;
 *   pooled: a non-contiguous type, MPI_PROC_NULL, a message above the eager
 *   limit;
 * and every argument check of MPI_Recv and MPI_Send still raises its own
 * class. Argument `multiple`: the same under MPI_THREAD_MULTIPLE, where no
 * receive may take the stack path. Pairs (0,1), (2,3) ...; an odd rank out
 * only checks in.
 */
#include "p2p_util.h"
#include "../util/pvar.h"

#define BIG (4u << 20)   /* above every device's eager limit */

static int on_stack_found;

static unsigned long long on_stack_count(void)
{
    return read_counter("p2p_recv_on_stack", &on_stack_found);
}

/* The receive since `before` took the stack path (want 1) or not (want 0). */
static void expect_path(unsigned long long before, int want, int multiple, const char *what)
{
    unsigned long long now = on_stack_count();
    if (multiple)
        want = 0;
    CHECK(now - before == (unsigned long long)want, "%s: the stack path counted %llu, expected %d", what,
          now - before, want);
}

static void check_status(const MPI_Status *st, int source, int tag, int count, int error, const char *what)
{
    int n = -1;
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &n));
    CHECK(st->MPI_SOURCE == source && st->MPI_TAG == tag && n == count && st->MPI_ERROR == error,
          "%s: status source %d tag %d count %d error %d, expected %d %d %d %d", what, st->MPI_SOURCE,
          st->MPI_TAG, n, st->MPI_ERROR, source, tag, count, error);
}

static void sender(int me, int peer)
{
    unsigned char buf[64];
    payload_fill(buf, 8, me, 1, 0);
    CHECK_MPI(MPI_Send(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
    payload_fill(buf, 8, me, 11, 0);
    CHECK_MPI(MPI_Send(buf, 8, MPI_BYTE, peer, 11, MPI_COMM_WORLD));
    payload_fill(buf, 8, me, 3, 0);
    CHECK_MPI(MPI_Send(buf, 8, MPI_BYTE, peer, 3, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));          /* the receiver takes message 3 after this */
    payload_fill(buf, 64, me, 4, 0);
    CHECK_MPI(MPI_Send(buf, 64, MPI_BYTE, peer, 4, MPI_COMM_WORLD));
    payload_fill(buf, 8, me, 5, 0);
    CHECK_MPI(MPI_Ssend(buf, 8, MPI_BYTE, peer, 5, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, peer, 6, MPI_COMM_WORLD));
    payload_fill(buf, 8, me, 7, 0);
    CHECK_MPI(MPI_Send(buf, 8, MPI_BYTE, peer, 7, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Send(buf, 8, MPI_BYTE, peer, 8, MPI_COMM_WORLD));
    int ints[2] = { 1111, 2222 };
    CHECK_MPI(MPI_Send(ints, 2, MPI_INT, peer, 9, MPI_COMM_WORLD));
    unsigned char *big = malloc(BIG);
    CHECK(big != NULL, "out of memory");
    payload_fill(big, BIG, me, 10, 0);
    CHECK_MPI(MPI_Send(big, (int)BIG, MPI_BYTE, peer, 10, MPI_COMM_WORLD));
    free(big);
}

/* One blocking receive that must take the stack path: bytes, status, path. */
struct stack_case {
    const char *what;
    int source, tag;        /* what the receive names (wildcards allowed) */
    int bytes;
    int sent_tag;           /* tag of the message, and of its payload */
    int payload_tag;        /* the payload's tag when it differs (0: sent_tag) */
    int recv_c;             /* MPI_Recv_c */
    int ignore_status;      /* MPI_STATUS_IGNORE */
    int preset_error;       /* MPI_ERROR before the call: success leaves it */
};

static void stack_recv(int peer, int multiple, const struct stack_case *c)
{
    unsigned char buf[64];
    MPI_Status st;
    st.MPI_ERROR = c->preset_error;
    memset(buf, 0, sizeof buf);
    unsigned long long before = on_stack_count();
    MPI_Status *stp = c->ignore_status ? MPI_STATUS_IGNORE : &st;
    void *b = c->bytes ? buf : NULL;
    if (c->recv_c)
        CHECK_MPI(MPI_Recv_c(b, c->bytes, MPI_BYTE, c->source, c->tag, MPI_COMM_WORLD, stp));
    else
        CHECK_MPI(MPI_Recv(b, c->bytes, MPI_BYTE, c->source, c->tag, MPI_COMM_WORLD, stp));
    if (!c->ignore_status)
        check_status(&st, peer, c->sent_tag, c->bytes, c->preset_error, c->what);
    CHECK(payload_check(buf, (size_t)c->bytes, peer, c->payload_tag ? c->payload_tag : c->sent_tag, 0) < 0,
          "%s: wrong bytes", c->what);
    expect_path(before, 1, multiple, c->what);
}

static void receiver(int peer, int multiple)
{
    unsigned char buf[8];
    MPI_Status st;
    unsigned long long before;

    /* A specific source and tag (MPI_ERROR is left alone on success), then wildcards. */
    stack_recv(peer, multiple, &(struct stack_case){ .what = "specific", .source = peer, .tag = 1, .bytes = 8, .sent_tag = 1,
                                                     .preset_error = 12345 });
    stack_recv(peer, multiple, &(struct stack_case){ .what = "ANY_SOURCE, ANY_TAG", .source = MPI_ANY_SOURCE,
                                                     .tag = MPI_ANY_TAG, .bytes = 8, .sent_tag = 11 });

    /* Arrived before the receive (unexpected, taken at posting). */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Iprobe(peer, 3, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    stack_recv(peer, multiple, &(struct stack_case){ .what = "unexpected", .source = peer, .tag = 3, .bytes = 8,
                                                     .sent_tag = 3 });

    /* 64 bytes into 16: truncated, the prefix placed, nothing written past it. */
    unsigned char *shortbuf = guarded_alloc(16);
    before = on_stack_count();
    st.MPI_ERROR = MPI_SUCCESS;
    int rc = MPI_Recv(shortbuf, 16, MPI_BYTE, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &st);
    CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "truncation: class %d", error_class(rc));
    CHECK(error_class(st.MPI_ERROR) == MPI_ERR_TRUNCATE, "truncation: status.MPI_ERROR class %d",
          error_class(st.MPI_ERROR));
    check_status(&st, peer, 4, 16, st.MPI_ERROR, "truncation");
    CHECK(payload_check(shortbuf, 16, peer, 4, 0) < 0, "truncation: the prefix is wrong");
    CHECK(guards_intact(shortbuf, 16), "truncation: written past the buffer");
    expect_path(before, 1, multiple, "truncation");
    guarded_free(shortbuf);

    /* A synchronous sender: the receive completes after its acknowledgement is out. */
    stack_recv(peer, multiple, &(struct stack_case){ .what = "synchronous", .source = peer, .tag = 5, .bytes = 8,
                                                     .sent_tag = 5 });
    stack_recv(peer, multiple, &(struct stack_case){ .what = "zero bytes", .source = peer, .tag = 6, .bytes = 0,
                                                     .sent_tag = 6 });
    stack_recv(peer, multiple, &(struct stack_case){ .what = "MPI_Recv_c", .source = peer, .tag = 7, .bytes = 8,
                                                     .sent_tag = 7, .recv_c = 1 });
    /* The sender's buffer still holds message 7's payload. */
    stack_recv(peer, multiple, &(struct stack_case){ .what = "MPI_STATUS_IGNORE", .source = peer, .tag = 8, .bytes = 8,
                                                     .sent_tag = 8, .payload_tag = 7, .ignore_status = 1 });

    /* Pooled: every other int of a vector. */
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    int ints[3] = { -1, -1, -1 };
    before = on_stack_count();
    CHECK_MPI(MPI_Recv(ints, 1, every_other, peer, 9, MPI_COMM_WORLD, &st));
    CHECK(ints[0] == 1111 && ints[1] == -1 && ints[2] == 2222, "vector: %d %d %d", ints[0], ints[1], ints[2]);
    CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 9, "vector: status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    expect_path(before, 0, multiple, "non-contiguous");
    CHECK_MPI(MPI_Type_free(&every_other));

    before = on_stack_count();
    CHECK_MPI(MPI_Recv(buf, 8, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
    check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, st.MPI_ERROR, "MPI_PROC_NULL");
    expect_path(before, 0, multiple, "MPI_PROC_NULL");

    unsigned char *big = malloc(BIG);
    CHECK(big != NULL, "out of memory");
    before = on_stack_count();
    CHECK_MPI(MPI_Recv(big, (int)BIG, MPI_BYTE, peer, 10, MPI_COMM_WORLD, &st));
    check_status(&st, peer, 10, (int)BIG, st.MPI_ERROR, "above the eager limit");
    CHECK(payload_check(big, BIG, peer, 10, 0) < 0, "above the eager limit: wrong bytes");
    expect_path(before, 0, multiple, "above the eager limit");
    free(big);
}

/* Every check still raises its class, before either path (nothing is received). */
static void argument_checks(int size, int multiple)
{
    unsigned char buf[8] = { 0 };
    MPI_Status st;
    unsigned long long before = on_stack_count();
    CHECK_CLASS(MPI_Recv(buf, 8, MPI_BYTE, size, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Recv(buf, 8, MPI_BYTE, -7, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Recv(buf, 8, MPI_BYTE, 0, -5, MPI_COMM_WORLD, &st), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Recv(buf, -1, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Recv(buf, 8, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Recv(NULL, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_NULL, &st), MPI_ERR_COMM);
    CHECK_CLASS(MPI_Send(buf, 8, MPI_BYTE, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(buf, 8, MPI_BYTE, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(buf, 8, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Send(buf, -1, MPI_BYTE, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Send(buf, 8, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Send(NULL, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    expect_path(before, 0, multiple, "argument checks");
}

int main(int argc, char **argv)
{
    int multiple = argc > 1 && strcmp(argv[1], "multiple") == 0;
    int rank, size, provided;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided));
    CHECK(!multiple || provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided");
    int t_provided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &t_provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    (void)on_stack_count();
    CHECK(on_stack_found, "no MPI_T counter p2p_recv_on_stack");
    argument_checks(size, multiple);
    int partner = rank ^ 1;
    if (partner >= size)
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));   /* the pairs' one barrier */
    else if (rank % 2 == 0)
        sender(rank, partner);
    else
        receiver(partner, multiple);
    report_ok();
    CHECK_MPI(MPI_T_finalize());
    CHECK_MPI(MPI_Finalize());
    return 0;
}
