/*
 * bsend: buffered sends. MPI_Bsend / MPI_Ibsend complete at once, the send
 * buffer reusable immediately, while the receiver has not posted anything;
 * the attached space is reused once messages have gone (many more messages
 * than fit at once); a message bigger than the buffer gives MPI_ERR_BUFFER;
 * MPI_Buffer_detach waits until every buffered message has been sent and
 * returns the buffer and size attached; attaching twice is an error;
 * MPI_BUFFER_AUTOMATIC needs no space; MPI_Comm_attach_buffer gives a
 * communicator its own buffer, used instead of the process's. A ring.
 */
#include "p2p_util.h"

#define MSG 1000
#define ROUNDS 40

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char msg[MSG], in[MSG];

    /* No buffer attached: an error. */
    CHECK_CLASS(MPI_Bsend(msg, MSG, MPI_BYTE, right, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);

    /* Room for 4 messages at once. */
    int bufsize = 4 * (MSG + MPI_BSEND_OVERHEAD);
    unsigned char *attached = malloc((size_t)bufsize);
    CHECK_MPI(MPI_Buffer_attach(attached, bufsize));
    CHECK_CLASS(MPI_Buffer_attach(attached, bufsize), MPI_ERR_BUFFER);

    /* 4 messages while the right neighbour receives nothing yet: they must
     * complete at once (reusing msg between them). */
    for (int i = 0; i < 4; i++) {
        payload_fill(msg, MSG, rank, i, 0);
        if (i % 2) {
            MPI_Request req;
            CHECK_MPI(MPI_Ibsend(msg, MSG, MPI_BYTE, right, i, MPI_COMM_WORLD, &req));
            int flag = 0;
            CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            CHECK(flag, "an MPI_Ibsend request was not complete at once");
        } else {
            CHECK_MPI(MPI_Bsend(msg, MSG, MPI_BYTE, right, i, MPI_COMM_WORLD));
        }
        memset(msg, 0, MSG);
    }
    /* Bigger than the whole buffer: never fits. (Whether a fifth message
     * fits now depends on whether the device has sent the four already.) */
    CHECK_CLASS(MPI_Bsend(attached, bufsize, MPI_BYTE, right, 9, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++) {
        CHECK_MPI(MPI_Recv(in, MSG, MPI_BYTE, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(payload_check(in, MSG, left, i, 0) < 0, "buffered message %d: wrong bytes", i);
    }

    /* Many more messages than fit: the space is reused as they go. */
    for (int i = 0; i < ROUNDS; i++) {
        payload_fill(msg, MSG, rank, 100 + i, 1);
        int rc;
        double end = MPI_Wtime() + 20;
        /* A full buffer is the program's problem: wait for the receiver's
         * progress and retry, as an application would. */
        while ((rc = MPI_Bsend(msg, MSG, MPI_BYTE, right, 100 + i, MPI_COMM_WORLD)) != MPI_SUCCESS) {
            CHECK(error_class(rc) == MPI_ERR_BUFFER && MPI_Wtime() < end, "MPI_Bsend %d: class %d", i,
                  error_class(rc));
            int flag;
            MPI_Iprobe(left, 100 + i, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        }
        CHECK_MPI(MPI_Recv(in, MSG, MPI_BYTE, left, 100 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(payload_check(in, MSG, left, 100 + i, 1) < 0, "round %d: wrong bytes", i);
    }

    /* Detach waits for buffered messages still in flight: the receiver only
     * posts after a delay. */
    payload_fill(msg, MSG, rank, 200, 2);
    CHECK_MPI(MPI_Bsend(msg, MSG, MPI_BYTE, right, 200, MPI_COMM_WORLD));
    if (rank % 2) {
        double until = MPI_Wtime() + 0.1;
        while (MPI_Wtime() < until)
            ;
    }
    MPI_Request rreq;
    CHECK_MPI(MPI_Irecv(in, MSG, MPI_BYTE, left, 200, MPI_COMM_WORLD, &rreq));
    void *detached = NULL;
    int detached_size = -1;
    CHECK_MPI(MPI_Buffer_detach(&detached, &detached_size));
    CHECK(detached == attached && detached_size == bufsize, "MPI_Buffer_detach gave %p / %d, attached %p / %d",
          detached, detached_size, (void *)attached, bufsize);
    CHECK_MPI(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
    CHECK(payload_check(in, MSG, left, 200, 2) < 0, "detach round: wrong bytes");
    /* After detach the buffer is the program's again: scribbling on it cannot
     * disturb anything. */
    memset(attached, 0xee, (size_t)bufsize);
    CHECK_CLASS(MPI_Buffer_detach(&detached, &detached_size), MPI_ERR_BUFFER);

    /* MPI_BUFFER_AUTOMATIC: any size, no space to manage. */
    CHECK_MPI(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
    unsigned char *large = malloc(200000), *rlarge = malloc(200000);
    payload_fill(large, 200000, rank, 300, 3);
    CHECK_MPI(MPI_Bsend(large, 200000, MPI_BYTE, right, 300, MPI_COMM_WORLD));
    memset(large, 0, 200000);
    CHECK_MPI(MPI_Recv(rlarge, 200000, MPI_BYTE, left, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(payload_check(rlarge, 200000, left, 300, 3) < 0, "automatic buffer: wrong bytes");
    /* A non-contiguous buffered send: packed into the buffer at the call. */
    int strided[30], packed[10];
    for (int i = 0; i < 30; i++)
        strided[i] = rank * 1000 + i;
    MPI_Datatype every3;
    CHECK_MPI(MPI_Type_vector(10, 1, 3, MPI_INT, &every3));
    CHECK_MPI(MPI_Type_commit(&every3));
    CHECK_MPI(MPI_Bsend(strided, 1, every3, right, 301, MPI_COMM_WORLD));
    memset(strided, 0, sizeof strided);
    CHECK_MPI(MPI_Type_free(&every3));
    CHECK_MPI(MPI_Recv(packed, 10, MPI_INT, left, 301, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 10; i++)
        CHECK(packed[i] == left * 1000 + 3 * i, "strided buffered send: packed[%d] = %d", i, packed[i]);
    CHECK_MPI(MPI_Buffer_flush());
    CHECK_MPI(MPI_Buffer_detach(&detached, &detached_size));
    CHECK(detached == MPI_BUFFER_AUTOMATIC, "detaching the automatic buffer gave %p", detached);

    /* A communicator's own buffer: with no process buffer attached, Bsend on
     * a duplicate of MPI_COMM_WORLD works, on MPI_COMM_WORLD it does not. */
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    int csize = MSG + MPI_BSEND_OVERHEAD;
    void *cbuf = malloc((size_t)csize);
    CHECK_MPI(MPI_Comm_attach_buffer(dup, cbuf, csize));
    payload_fill(msg, MSG, rank, 400, 4);
    CHECK_MPI(MPI_Bsend(msg, MSG, MPI_BYTE, right, 400, dup));
    CHECK_CLASS(MPI_Bsend(msg, MSG, MPI_BYTE, right, 400, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    MPI_Request freq;
    CHECK_MPI(MPI_Comm_iflush_buffer(dup, &freq));
    CHECK_MPI(MPI_Recv(in, MSG, MPI_BYTE, left, 400, dup, MPI_STATUS_IGNORE));
    CHECK(payload_check(in, MSG, left, 400, 4) < 0, "communicator buffer: wrong bytes");
    CHECK_MPI(MPI_Wait(&freq, MPI_STATUS_IGNORE));
    void *cdet = NULL;
    int cdet_size = 0;
    CHECK_MPI(MPI_Comm_detach_buffer(dup, &cdet, &cdet_size));
    CHECK(cdet == cbuf && cdet_size == csize, "MPI_Comm_detach_buffer gave %p / %d", cdet, cdet_size);
    CHECK_MPI(MPI_Comm_free(&dup));
    free(cbuf);

    free(large);
    free(rlarge);
    free(attached);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
