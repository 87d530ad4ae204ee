/*
 * basics: what MPI_THREAD_MULTIPLE promises besides concurrency itself.
 * The level provided and queried (also MPI_INFO_ENV's thread_level),
 * MPI_Is_thread_main from the main thread and from another one, requests
 * started in one thread and completed by MPI_Wait in another, and user
 * callbacks that call MPI from inside an MPI call made on a non-main thread
 * (a reduction op, an error handler, an attribute copy callback, a
 * generalized request's query function): the library's lock must let the
 * same thread back in, or these deadlock.
 */
#include "mt_util.h"

#include <time.h>

static int rank, size, partner;
static int callbacks_ran[4];
enum { CB_OP, CB_ERRHANDLER, CB_COPY, CB_QUERY };

static int other_is_main = -1;
static void *ask_is_main(int index)
{
    (void)index;
    CHECK_MPI(MPI_Is_thread_main(&other_is_main));
    int provided = -1;
    CHECK_MPI(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Query_thread on another thread gave %d", provided);
    return NULL;
}

/* ---- requests crossing threads ---- */
static MPI_Request recv_req, send_req;
static int recv_buf[3], send_buf[3];

static void *start_recv(int index)
{
    (void)index;
    CHECK_MPI(MPI_Irecv(recv_buf, 3, MPI_INT, partner, 5, MPI_COMM_WORLD, &recv_req));
    return NULL;
}

static void *wait_send(int index)
{
    (void)index;
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&send_req, &st));
    CHECK(send_req == MPI_REQUEST_NULL, "MPI_Wait left the send request set");
    return NULL;
}

/* ---- callbacks that call MPI ---- */
static void sum_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int type_size = 0, r = -1;
    CHECK_MPI(MPI_Type_size(*type, &type_size));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &r));
    CHECK(type_size == (int)sizeof(int) && r == rank, "inside the op: type size %d, rank %d", type_size, r);
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
    callbacks_ran[CB_OP] = 1;
}

static void on_error(MPI_Comm *comm, int *code, ...)
{
    int cls = -1, csize = -1;
    CHECK_MPI(MPI_Error_class(*code, &cls));
    CHECK_MPI(MPI_Comm_size(*comm, &csize));
    CHECK(cls == MPI_ERR_RANK && csize == size, "inside the error handler: class %d, size %d", cls, csize);
    callbacks_ran[CB_ERRHANDLER] = 1;
}

static int copy_attr(MPI_Comm old, int keyval, void *extra, void *value_in, void *value_out, int *flag)
{
    (void)keyval;
    (void)extra;
    int csize = -1;
    CHECK_MPI(MPI_Comm_size(old, &csize));
    *(void **)value_out = value_in;
    *flag = 1;
    callbacks_ran[CB_COPY] = csize == size;
    return MPI_SUCCESS;
}

static int greq_query(void *extra, MPI_Status *st)
{
    (void)extra;
    int r = -1;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Status_set_elements(st, MPI_INT, 7));
    CHECK_MPI(MPI_Status_set_cancelled(st, 0));
    st->MPI_SOURCE = r;
    st->MPI_TAG = 42;
    callbacks_ran[CB_QUERY] = 1;
    return MPI_SUCCESS;
}
static int greq_free(void *extra) { (void)extra; return MPI_SUCCESS; }
static int greq_cancel(void *extra, int complete) { (void)extra; (void)complete; return MPI_SUCCESS; }

static MPI_Request greq;
static void *complete_greq(void *p)
{
    (void)p;
    /* Give the main thread time to block in MPI_Wait first. */
    nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    CHECK_MPI(MPI_Grequest_complete(greq));
    return NULL;
}

static void *callbacks_thread(int index)
{
    (void)index;
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(sum_op, 1, &op));
    int in[5], out[5];
    for (int i = 0; i < 5; i++)
        in[i] = rank + i;
    CHECK_MPI(MPI_Allreduce(in, out, 5, MPI_INT, op, MPI_COMM_WORLD));
    for (int i = 0; i < 5; i++)
        CHECK(out[i] == size * (size - 1) / 2 + size * i, "user-op allreduce[%d] = %d", i, out[i]);
    CHECK_MPI(MPI_Op_free(&op));

    MPI_Comm dup;
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_create_errhandler(on_error, &eh));
    CHECK_MPI(MPI_Comm_set_errhandler(dup, eh));
    int x = 0, rc = MPI_Send(&x, 1, MPI_INT, size + 5, 0, dup);
    CHECK(rc != MPI_SUCCESS, "MPI_Send to rank %d succeeded", size + 5);
    CHECK_MPI(MPI_Errhandler_free(&eh));

    int keyval;
    static int value = 17;
    CHECK_MPI(MPI_Comm_create_keyval(copy_attr, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
    CHECK_MPI(MPI_Comm_set_attr(dup, keyval, &value));
    MPI_Comm dup2;
    CHECK_MPI(MPI_Comm_dup(dup, &dup2));
    int *got = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(dup2, keyval, &got, &flag));
    CHECK(flag && got == &value, "the copied attribute is missing");
    CHECK_MPI(MPI_Comm_free(&dup2));
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free_keyval(&keyval));
    return NULL;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, &rank, &size);
    partner = rank ^ 1;

    int provided = -1, is_main = -1;
    CHECK_MPI(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Query_thread gave %d", provided);
    CHECK_MPI(MPI_Is_thread_main(&is_main));
    CHECK(is_main == 1, "MPI_Is_thread_main on the main thread gave %d", is_main);
    mt_run(1, ask_is_main);
    CHECK(other_is_main == 0, "MPI_Is_thread_main on another thread gave %d", other_is_main);
    char level[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0;
    CHECK_MPI(MPI_Info_get_string(MPI_INFO_ENV, "thread_level", &(int){ sizeof level }, level, &flag));
    CHECK(flag && strcmp(level, "MPI_THREAD_MULTIPLE") == 0, "MPI_INFO_ENV thread_level is '%s' (flag %d)", level,
          flag);

    /* A receive started on one thread, completed on the main thread; a send
     * started on the main thread, completed on another. */
    mt_run(1, start_recv);
    for (int i = 0; i < 3; i++)
        send_buf[i] = rank * 10 + i;
    CHECK_MPI(MPI_Isend(send_buf, 3, MPI_INT, partner, 5, MPI_COMM_WORLD, &send_req));
    mt_run(1, wait_send);
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&recv_req, &st));
    CHECK(recv_req == MPI_REQUEST_NULL, "MPI_Wait left the receive request set");
    CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 5, "cross-thread receive: status (%d, %d)", st.MPI_SOURCE,
          st.MPI_TAG);
    for (int i = 0; i < 3; i++)
        CHECK(recv_buf[i] == partner * 10 + i, "cross-thread receive: int %d is %d", i, recv_buf[i]);

    /* Callbacks re-entering MPI, from a non-main thread. */
    mt_run(1, callbacks_thread);
    CHECK(callbacks_ran[CB_ERRHANDLER] && callbacks_ran[CB_COPY], "callbacks ran: error handler %d, copy %d",
          callbacks_ran[CB_ERRHANDLER], callbacks_ran[CB_COPY]);
    /* A reduction need not call the op on every rank (a node-aware one calls
     * it on the node leaders), but some rank must have called it. */
    int op_ran_anywhere = 0;
    CHECK_MPI(MPI_Allreduce(&callbacks_ran[CB_OP], &op_ran_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(size == 1 || op_ran_anywhere, "the user op of the allreduce ran on no rank");

    /* A generalized request completed on another thread while this one
     * waits for it in MPI_Wait; its query function calls MPI from inside
     * MPI_Wait. */
    CHECK_MPI(MPI_Grequest_start(greq_query, greq_free, greq_cancel, NULL, &greq));
    MPI_Request waited = greq;
    pthread_t completer;
    CHECK(pthread_create(&completer, NULL, complete_greq, NULL) == 0, "pthread_create failed");
    CHECK_MPI(MPI_Wait(&waited, &st));
    CHECK(pthread_join(completer, NULL) == 0, "pthread_join failed");
    int count = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(callbacks_ran[CB_QUERY] && st.MPI_SOURCE == rank && st.MPI_TAG == 42 && count == 7,
          "generalized request: query ran %d, status (%d, %d), count %d", callbacks_ran[CB_QUERY], st.MPI_SOURCE,
          st.MPI_TAG, count);

    return mt_finish(rank, size);
}
