/*
 * errors: invalid arguments to the collectives return their error classes
 * under MPI_ERRORS_RETURN, with an error string naming the call, and start
 * nothing (a correct collective afterwards still works): root out of range,
 * MPI_COMM_NULL, MPI_REPLACE / MPI_NO_OP / MPI_OP_NULL in reductions, an op
 * the datatype does not support, negative counts, invalid datatypes, misused
 * MPI_IN_PLACE, the same buffer as input and output, a NULL request.
 */
#include <mpi.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

static void expect(int rc, int cls, const char *call, const char *what)
{
    int got = -1;
    MPI_Error_class(rc, &got);
    CHECK(got == cls, "%s (%s) returned class %d, expected %d", call, what, got, cls);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    CHECK(strstr(text, call) != NULL, "the error string '%s' does not name %s", text, call);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int in[4] = { 1, 2, 3, 4 }, out[4];
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm world = MPI_COMM_WORLD;

    /* root */
    expect(MPI_Bcast(in, 4, MPI_INT, size, world), MPI_ERR_ROOT, "MPI_Bcast", "root = size");
    expect(MPI_Bcast(in, 4, MPI_INT, -1, world), MPI_ERR_ROOT, "MPI_Bcast", "root = -1");
    expect(MPI_Reduce(in, out, 4, MPI_INT, MPI_SUM, size + 2, world), MPI_ERR_ROOT, "MPI_Reduce", "root > size");
    expect(MPI_Ireduce(in, out, 4, MPI_INT, MPI_SUM, -3, world, &req), MPI_ERR_ROOT, "MPI_Ireduce", "root < 0");
    expect(MPI_Bcast_init(in, 4, MPI_INT, size, world, MPI_INFO_NULL, &req), MPI_ERR_ROOT, "MPI_Bcast_init",
           "root = size");
    CHECK(req == MPI_REQUEST_NULL, "a failed call set the request");

    /* communicator */
    expect(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Barrier", "MPI_COMM_NULL");
    expect(MPI_Ibarrier(MPI_COMM_NULL, &req), MPI_ERR_COMM, "MPI_Ibarrier", "MPI_COMM_NULL");
    expect(MPI_Allreduce(in, out, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Allreduce",
           "MPI_COMM_NULL");
    expect(MPI_Scan(in, out, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Scan", "MPI_COMM_NULL");
    expect(MPI_Bcast(in, 4, MPI_INT, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Bcast", "MPI_COMM_NULL");

    /* ops */
    expect(MPI_Allreduce(in, out, 4, MPI_INT, MPI_REPLACE, world), MPI_ERR_OP, "MPI_Allreduce", "MPI_REPLACE");
    expect(MPI_Allreduce(in, out, 4, MPI_INT, MPI_NO_OP, world), MPI_ERR_OP, "MPI_Allreduce", "MPI_NO_OP");
    expect(MPI_Reduce(in, out, 4, MPI_INT, MPI_REPLACE, 0, world), MPI_ERR_OP, "MPI_Reduce", "MPI_REPLACE");
    expect(MPI_Iallreduce(in, out, 4, MPI_INT, MPI_OP_NULL, world, &req), MPI_ERR_OP, "MPI_Iallreduce",
           "MPI_OP_NULL");
    expect(MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_BAND, world), MPI_ERR_OP, "MPI_Allreduce",
           "MPI_BAND on MPI_DOUBLE");
    expect(MPI_Allreduce(in, out, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, world), MPI_ERR_OP, "MPI_Allreduce",
           "MPI_MAX on complex");
    expect(MPI_Scan(in, out, 2, MPI_INT, MPI_MAXLOC, world), MPI_ERR_OP, "MPI_Scan", "MPI_MAXLOC on MPI_INT");
    expect(MPI_Reduce_scatter_block(in, out, 1, MPI_INT, MPI_REPLACE, world), MPI_ERR_OP,
           "MPI_Reduce_scatter_block", "MPI_REPLACE");
    {
        /* the message names both the op and the type */
        int rc = MPI_Allreduce(in, out, 1, MPI_FLOAT, MPI_BXOR, world);
        char text[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, text, &len);
        CHECK(strstr(text, "MPI_BXOR") && strstr(text, "MPI_FLOAT"), "'%s' does not name MPI_BXOR and MPI_FLOAT",
              text);
    }

    /* counts and datatypes */
    expect(MPI_Allreduce(in, out, -1, MPI_INT, MPI_SUM, world), MPI_ERR_COUNT, "MPI_Allreduce", "count -1");
    expect(MPI_Bcast(in, -4, MPI_INT, 0, world), MPI_ERR_COUNT, "MPI_Bcast", "count -4");
    expect(MPI_Allreduce(in, out, 4, MPI_DATATYPE_NULL, MPI_SUM, world), MPI_ERR_TYPE, "MPI_Allreduce",
           "MPI_DATATYPE_NULL");
    MPI_Datatype uncommitted;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &uncommitted));
    expect(MPI_Bcast(in, 1, uncommitted, 0, world), MPI_ERR_TYPE, "MPI_Bcast", "an uncommitted type");
    CHECK_MPI(MPI_Type_free(&uncommitted));
    int *counts = malloc((size_t)size * sizeof *counts);
    for (int i = 0; i < size; i++)
        counts[i] = i == size - 1 ? -2 : 1;
    expect(MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, world), MPI_ERR_COUNT, "MPI_Reduce_scatter",
           "a negative recvcounts entry");
    free(counts);

    /* buffers */
    expect(MPI_Allreduce(in, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, world), MPI_ERR_BUFFER, "MPI_Allreduce",
           "recvbuf MPI_IN_PLACE");
    expect(MPI_Allreduce(in, in, 4, MPI_INT, MPI_SUM, world), MPI_ERR_BUFFER, "MPI_Allreduce",
           "sendbuf == recvbuf");
    expect(MPI_Bcast(MPI_IN_PLACE, 4, MPI_INT, 0, world), MPI_ERR_BUFFER, "MPI_Bcast", "MPI_IN_PLACE");
    if (size > 1) {
        int root = rank == 0 ? 1 : 0;
        expect(MPI_Reduce(MPI_IN_PLACE, out, 4, MPI_INT, MPI_SUM, root, world), MPI_ERR_BUFFER, "MPI_Reduce",
               "MPI_IN_PLACE at a non-root");
    }
    expect(MPI_Allreduce(NULL, out, 4, MPI_INT, MPI_SUM, world), MPI_ERR_BUFFER, "MPI_Allreduce",
           "a NULL sendbuf");
    expect(MPI_Iallreduce(in, out, 4, MPI_INT, MPI_SUM, world, NULL), MPI_ERR_ARG, "MPI_Iallreduce",
           "a NULL request");

    /* Nothing was started: a real collective still pairs up correctly. */
    int mine = rank + 1, total = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, world));
    CHECK(total == size * (size + 1) / 2, "allreduce after the errors gave %d", total);
    CHECK_MPI(MPI_Barrier(world));

    /* A collective request cannot be cancelled. */
    CHECK_MPI(MPI_Ibarrier(world, &req));
    expect(MPI_Cancel(&req), MPI_ERR_REQUEST, "MPI_Cancel", "a collective request");
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));

    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
