/*
 * unsupported MODE: a function Hashi does not implement (MPI_Comm_spawn, and
 * MPI_Open_port for an error without an object) under each error handler.
 *   fatal         default handler: the job ends, stderr names the function and
 *                 MPI_ERR_UNSUPPORTED_OPERATION; nothing reaches stdout
 *   abort         MPI_ERRORS_ABORT on MPI_COMM_WORLD: the job ends the same way
 *   return        MPI_ERRORS_RETURN on MPI_COMM_WORLD: the call returns a code of
 *                 class MPI_ERR_UNSUPPORTED_OPERATION whose string names the
 *                 function, and the program goes on to MPI_Finalize
 *   self-return   MPI_ERRORS_RETURN on MPI_COMM_SELF only: MPI_Open_port (no
 *                 communicator argument) returns the error through it
 *   user          a user handler on MPI_COMM_WORLD is called with the
 *                 communicator and the code, and the call returns that code
 * The continuing modes print "rank R of S MODE ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

#include "../util/check.h"

static int handler_calls;
static MPI_Comm handler_comm = MPI_COMM_NULL;
static int handler_code = MPI_SUCCESS;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_comm = *comm;
    handler_code = *code;
}

static int call_spawn(void)
{
    MPI_Comm intercomm = MPI_COMM_NULL;
    char command[] = "true";
    return MPI_Comm_spawn(command, MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &intercomm,
                          MPI_ERRCODES_IGNORE);
}

/* rc must be an error of class MPI_ERR_UNSUPPORTED_OPERATION whose string names func. */
static void check_unsupported_error(int rc, const char *func)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int cls = -1, len = -1;
    CHECK(rc != MPI_SUCCESS, "%s returned MPI_SUCCESS", func);
    CHECK_MPI(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "%s returned code %d of class %d, expected "
          "MPI_ERR_UNSUPPORTED_OPERATION (%d)", func, rc, cls, MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_MPI(MPI_Error_string(rc, text, &len));
    CHECK(strstr(text, func) != NULL, "the string of %s's error does not name it: \"%s\"", func, text);
}

static void ends_the_job(const char *mode, MPI_Errhandler handler)
{
    if (handler != MPI_ERRHANDLER_NULL)
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler));
    int rc = call_spawn();
    printf("NOT REACHED: MPI_Comm_spawn returned %d under the %s handler\n", rc, mode);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank = -1, size = -1;
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    CHECK(argc == 2, "usage: unsupported fatal|abort|return|self-return|user");
    const char *mode = argv[1];
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));

    if (strcmp(mode, "fatal") == 0) {
        ends_the_job(mode, MPI_ERRHANDLER_NULL);
        return 0;
    } else if (strcmp(mode, "abort") == 0) {
        ends_the_job(mode, MPI_ERRORS_ABORT);
        return 0;
    } else if (strcmp(mode, "return") == 0) {
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler));
        CHECK(handler == MPI_ERRORS_RETURN, "MPI_Comm_get_errhandler does not give back MPI_ERRORS_RETURN");
        CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_SELF, &handler));
        CHECK(handler == MPI_ERRORS_ARE_FATAL, "setting MPI_COMM_WORLD's handler changed MPI_COMM_SELF's");
        check_unsupported_error(call_spawn(), "MPI_Comm_spawn");
        /* Still usable afterwards. */
        check_unsupported_error(call_spawn(), "MPI_Comm_spawn");
    } else if (strcmp(mode, "self-return") == 0) {
        char port[MPI_MAX_PORT_NAME];
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
        CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler));
        CHECK(handler == MPI_ERRORS_ARE_FATAL, "setting MPI_COMM_SELF's handler changed MPI_COMM_WORLD's");
        check_unsupported_error(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
    } else if (strcmp(mode, "user") == 0) {
        MPI_Errhandler mine = MPI_ERRHANDLER_NULL;
        CHECK_MPI(MPI_Comm_create_errhandler(count_errors, &mine));
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, mine));
        int rc = call_spawn();
        CHECK(handler_calls == 1, "the user handler was called %d times, expected once", handler_calls);
        CHECK(handler_comm == MPI_COMM_WORLD, "the user handler got another communicator than MPI_COMM_WORLD");
        CHECK(handler_code == rc, "the user handler got code %d, the call returned %d", handler_code, rc);
        check_unsupported_error(rc, "MPI_Comm_spawn");
    } else {
        CHECK(0, "unknown mode \"%s\"", mode);
    }

    printf("rank %d of %d %s ok\n", rank, size, mode);
    fflush(stdout);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
