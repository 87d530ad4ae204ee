/*
 * errors: under MPI_ERRORS_RETURN every bad argument of the point-to-point
 * calls gives its own error class (invalid rank, tag, count, datatype,
 * communicator, NULL buffer with count > 0, bad or misused request, NULL
 * out-arguments), with an error string naming the call, and nothing is sent:
 * after all the failed calls, one good message still arrives first. A user
 * error handler on the communicator is called with the class too.
 */
#include "p2p_util.h"

static int handler_calls, handler_last_class;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    handler_last_class = error_class(*code);
}

static void check_names(int code, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK_MPI(MPI_Error_string(code, text, &len));
    CHECK(strstr(text, call) != NULL, "the error string '%s' does not name %s", text, call);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    /* Errors without a communicator (requests, MPI_COMM_NULL) go to MPI_COMM_SELF's. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int peer = (rank + 1) % size;
    int buf[4] = { 1, 2, 3, 4 };
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    int flag;

    /* rank */
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, -5, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Recv(buf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Isend(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &req), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Iprobe(size, 0, MPI_COMM_WORLD, &flag, &st), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, 1, 0, MPI_COMM_SELF), MPI_ERR_RANK);
    check_names(MPI_Ssend(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), "MPI_Ssend");
    CHECK(req == MPI_REQUEST_NULL, "a failed MPI_Isend set the request");

    /* tag */
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, peer, -1, MPI_COMM_WORLD), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Recv(buf, 1, MPI_INT, peer, -7, MPI_COMM_WORLD, &st), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Issend(buf, 1, MPI_INT, peer, -3, MPI_COMM_WORLD, &req), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Probe(peer, -4, MPI_COMM_WORLD, &st), MPI_ERR_TAG);

    /* count */
    CHECK_CLASS(MPI_Send(buf, -1, MPI_INT, peer, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Recv_c(buf, -1, MPI_INT, peer, 0, MPI_COMM_WORLD, &st), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Irecv(buf, -2, MPI_INT, peer, 0, MPI_COMM_WORLD, &req), MPI_ERR_COUNT);
    check_names(MPI_Isend(buf, -2, MPI_INT, peer, 0, MPI_COMM_WORLD, &req), "MPI_Isend");

    /* datatype: null, not committed */
    CHECK_CLASS(MPI_Send(buf, 1, MPI_DATATYPE_NULL, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Recv(buf, 1, MPI_DATATYPE_NULL, peer, 0, MPI_COMM_WORLD, &st), MPI_ERR_TYPE);
    MPI_Datatype uncommitted;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &uncommitted));
    CHECK_CLASS(MPI_Send(buf, 1, uncommitted, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_MPI(MPI_Type_free(&uncommitted));

    /* communicator */
    CHECK_CLASS(MPI_Send(buf, 1, MPI_INT, peer, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    CHECK_CLASS(MPI_Recv(buf, 1, MPI_INT, peer, 0, MPI_COMM_NULL, &st), MPI_ERR_COMM);
    CHECK_CLASS(MPI_Iprobe(peer, 0, MPI_COMM_NULL, &flag, &st), MPI_ERR_COMM);
    CHECK_CLASS(MPI_Send_init(buf, 1, MPI_INT, peer, 0, MPI_COMM_NULL, &req), MPI_ERR_COMM);

    /* buffer: NULL with count > 0 (count 0 is fine, checked below) */
    CHECK_CLASS(MPI_Send(NULL, 4, MPI_INT, peer, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Recv(NULL, 4, MPI_INT, peer, 0, MPI_COMM_WORLD, &st), MPI_ERR_BUFFER);
    CHECK_CLASS(MPI_Isend(NULL, 1, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &req), MPI_ERR_BUFFER);

    /* requests */
    MPI_Request null_req = MPI_REQUEST_NULL;
    CHECK_CLASS(MPI_Request_free(&null_req), MPI_ERR_REQUEST);
    CHECK_CLASS(MPI_Start(&null_req), MPI_ERR_REQUEST);
    CHECK_CLASS(MPI_Cancel(&null_req), MPI_ERR_REQUEST);
    CHECK_CLASS(MPI_Wait(NULL, &st), MPI_ERR_ARG);
    MPI_Request bogus = (MPI_Request)(void *)&buf[0];   /* not a request */
    memset(buf, 0, sizeof buf);
    CHECK_CLASS(MPI_Wait(&bogus, &st), MPI_ERR_REQUEST);
    CHECK_CLASS(MPI_Test(&bogus, &flag, &st), MPI_ERR_REQUEST);
    MPI_Request arr[2] = { MPI_REQUEST_NULL, bogus };
    CHECK_CLASS(MPI_Waitall(2, arr, MPI_STATUSES_IGNORE), MPI_ERR_REQUEST);
    CHECK_CLASS(MPI_Waitall(-1, arr, MPI_STATUSES_IGNORE), MPI_ERR_COUNT);
    /* A freed request's handle is stale. */
    MPI_Request stale;
    CHECK_MPI(MPI_Send_init(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &stale));
    MPI_Request copy = stale;
    CHECK_MPI(MPI_Request_free(&stale));
    CHECK_CLASS(MPI_Start(&copy), MPI_ERR_REQUEST);
    /* MPI_Start on a request that is not persistent, or active already. */
    MPI_Request self_req;
    int self_buf = 0;
    CHECK_MPI(MPI_Irecv(&self_buf, 1, MPI_INT, 0, 99, MPI_COMM_SELF, &self_req));
    CHECK_CLASS(MPI_Start(&self_req), MPI_ERR_REQUEST);
    int one = 1;
    CHECK_MPI(MPI_Send(&one, 1, MPI_INT, 0, 99, MPI_COMM_SELF));
    CHECK_MPI(MPI_Wait(&self_req, &st));
    CHECK(self_buf == 1, "self message: %d", self_buf);
    MPI_Request preq;
    CHECK_MPI(MPI_Recv_init(&self_buf, 1, MPI_INT, 0, 98, MPI_COMM_SELF, &preq));
    CHECK_MPI(MPI_Start(&preq));
    CHECK_CLASS(MPI_Start(&preq), MPI_ERR_REQUEST);
    CHECK_MPI(MPI_Send(&one, 1, MPI_INT, 0, 98, MPI_COMM_SELF));
    CHECK_MPI(MPI_Wait(&preq, &st));
    /* Cancelling an inactive persistent request is an error. */
    CHECK_CLASS(MPI_Cancel(&preq), MPI_ERR_REQUEST);
    CHECK_MPI(MPI_Request_free(&preq));

    /* NULL out-arguments */
    CHECK_CLASS(MPI_Isend(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Iprobe(peer, 0, MPI_COMM_WORLD, NULL, &st), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Test(&null_req, NULL, &st), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Get_count(NULL, MPI_INT, &flag), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Waitany(1, &null_req, NULL, &st), MPI_ERR_ARG);

    /* Messages: MPI_Mrecv of MPI_MESSAGE_NULL. */
    MPI_Message msg = MPI_MESSAGE_NULL;
    CHECK_CLASS(MPI_Mrecv(buf, 1, MPI_INT, &msg, &st), MPI_ERR_REQUEST);

    /* A user handler sees the error and the call returns it. */
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_create_errhandler(count_errors, &eh));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    int rc = MPI_Send(buf, 1, MPI_INT, peer, -1, MPI_COMM_WORLD);
    CHECK(handler_calls == 1 && handler_last_class == MPI_ERR_TAG, "user handler: %d calls, class %d",
          handler_calls, handler_last_class);
    CHECK(error_class(rc) == MPI_ERR_TAG, "with a user handler the call returned class %d", error_class(rc));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_free(&eh));

    /* Nothing of the failed calls was sent: the first message is this one,
     * and zero-count sends with NULL buffers are legal. */
    int token = 1000 + rank, got = -1;
    CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, peer, 5, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, peer, 0, &got, 1, MPI_INT, (rank + size - 1) % size, 0,
                           MPI_COMM_WORLD, &st));
    CHECK(got == 1000 + (rank + size - 1) % size, "after the errors: got %d", got);
    int pending = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &pending, &st));
    CHECK(!pending, "a message from rank %d tag %d was left over: a failed call sent it", st.MPI_SOURCE, st.MPI_TAG);
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
