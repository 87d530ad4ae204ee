/*
 * error_strings: MPI_Error_class and MPI_Error_string on every error class of
 * the standard. Each class is its own class and has a non-empty string of a
 * consistent length, and no two classes share a string. Invalid codes give
 * MPI_ERR_ARG (raised, like every error without an object, on MPI_COMM_SELF's
 * handler, set to MPI_ERRORS_RETURN here). Prints "rank R of S N classes ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

#include "../util/check.h"

#define CLASS(name) { name, #name }
static const struct { int code; const char *name; } classes[] = {
    CLASS(MPI_SUCCESS), CLASS(MPI_ERR_BUFFER), CLASS(MPI_ERR_COUNT), CLASS(MPI_ERR_TYPE),
    CLASS(MPI_ERR_TAG), CLASS(MPI_ERR_COMM), CLASS(MPI_ERR_RANK), CLASS(MPI_ERR_REQUEST),
    CLASS(MPI_ERR_ROOT), CLASS(MPI_ERR_GROUP), CLASS(MPI_ERR_OP), CLASS(MPI_ERR_TOPOLOGY),
    CLASS(MPI_ERR_DIMS), CLASS(MPI_ERR_ARG), CLASS(MPI_ERR_UNKNOWN), CLASS(MPI_ERR_TRUNCATE),
    CLASS(MPI_ERR_OTHER), CLASS(MPI_ERR_INTERN), CLASS(MPI_ERR_PENDING), CLASS(MPI_ERR_IN_STATUS),
    CLASS(MPI_ERR_ACCESS), CLASS(MPI_ERR_AMODE), CLASS(MPI_ERR_ASSERT), CLASS(MPI_ERR_BAD_FILE),
    CLASS(MPI_ERR_BASE), CLASS(MPI_ERR_CONVERSION), CLASS(MPI_ERR_DISP), CLASS(MPI_ERR_DUP_DATAREP),
    CLASS(MPI_ERR_FILE_EXISTS), CLASS(MPI_ERR_FILE_IN_USE), CLASS(MPI_ERR_FILE), CLASS(MPI_ERR_INFO_KEY),
    CLASS(MPI_ERR_INFO_NOKEY), CLASS(MPI_ERR_INFO_VALUE), CLASS(MPI_ERR_INFO), CLASS(MPI_ERR_IO),
    CLASS(MPI_ERR_KEYVAL), CLASS(MPI_ERR_LOCKTYPE), CLASS(MPI_ERR_NAME), CLASS(MPI_ERR_NO_MEM),
    CLASS(MPI_ERR_NOT_SAME), CLASS(MPI_ERR_NO_SPACE), CLASS(MPI_ERR_NO_SUCH_FILE), CLASS(MPI_ERR_PORT),
    CLASS(MPI_ERR_QUOTA), CLASS(MPI_ERR_READ_ONLY), CLASS(MPI_ERR_RMA_ATTACH), CLASS(MPI_ERR_RMA_CONFLICT),
    CLASS(MPI_ERR_RMA_RANGE), CLASS(MPI_ERR_RMA_SHARED), CLASS(MPI_ERR_RMA_SYNC), CLASS(MPI_ERR_SERVICE),
    CLASS(MPI_ERR_SIZE), CLASS(MPI_ERR_SPAWN), CLASS(MPI_ERR_UNSUPPORTED_DATAREP),
    CLASS(MPI_ERR_UNSUPPORTED_OPERATION), CLASS(MPI_ERR_WIN), CLASS(MPI_ERR_RMA_FLAVOR),
    CLASS(MPI_ERR_PROC_ABORTED), CLASS(MPI_ERR_VALUE_TOO_LARGE), CLASS(MPI_ERR_SESSION),
    CLASS(MPI_ERR_ERRHANDLER), CLASS(MPI_ERR_ABI),
};
#define CLASS_COUNT (int)(sizeof classes / sizeof classes[0])

static char strings[CLASS_COUNT][MPI_MAX_ERROR_STRING];

static void check_invalid_code(int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int cls = -12345, len = -1;
    int rc = MPI_Error_class(code, &cls);
    CHECK(rc == MPI_ERR_ARG || (rc != MPI_SUCCESS && MPI_Error_class(rc, &cls) == MPI_SUCCESS && cls == MPI_ERR_ARG),
          "MPI_Error_class(%d) returned %d, expected an MPI_ERR_ARG error", code, rc);
    rc = MPI_Error_string(code, text, &len);
    CHECK(rc == MPI_ERR_ARG || (rc != MPI_SUCCESS && MPI_Error_class(rc, &cls) == MPI_SUCCESS && cls == MPI_ERR_ARG),
          "MPI_Error_string(%d) returned %d, expected an MPI_ERR_ARG error", code, rc);
}

int main(int argc, char **argv)
{
    int rank = -1, size = -1;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));

    for (int i = 0; i < CLASS_COUNT; i++) {
        int cls = -12345, len = -1;
        CHECK_MPI(MPI_Error_class(classes[i].code, &cls));
        CHECK(cls == classes[i].code, "MPI_Error_class(%s) gave %d, expected the class itself (%d)",
              classes[i].name, cls, classes[i].code);
        memset(strings[i], 'x', MPI_MAX_ERROR_STRING);
        CHECK_MPI(MPI_Error_string(classes[i].code, strings[i], &len));
        CHECK(len > 0 && len < MPI_MAX_ERROR_STRING, "MPI_Error_string(%s): resultlen %d", classes[i].name, len);
        CHECK(memchr(strings[i], '\0', MPI_MAX_ERROR_STRING) && (int)strlen(strings[i]) == len,
              "MPI_Error_string(%s): resultlen %d does not match the string", classes[i].name, len);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(strings[i], strings[j]) != 0, "%s and %s share the string \"%s\"",
                  classes[i].name, classes[j].name, strings[i]);
    }

    /* Distinct values too: a duplicated constant would hide a class. */
    for (int i = 0; i < CLASS_COUNT; i++)
        for (int j = 0; j < i; j++)
            CHECK(classes[i].code != classes[j].code, "%s and %s have the same value %d",
                  classes[i].name, classes[j].name, classes[i].code);
    CHECK(MPI_SUCCESS == 0, "MPI_SUCCESS is %d", MPI_SUCCESS);
    for (int i = 1; i < CLASS_COUNT; i++)
        CHECK(classes[i].code > 0 && classes[i].code <= MPI_ERR_LASTCODE,
              "%s (%d) is not in 1..MPI_ERR_LASTCODE (%d)", classes[i].name, classes[i].code, MPI_ERR_LASTCODE);

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    check_invalid_code(-1);
    check_invalid_code(-54321);

    printf("rank %d of %d %d classes ok\n", rank, size, CLASS_COUNT);
    fflush(stdout);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
