/*
 * user_errors MODE: error classes, codes and strings an application adds,
 * MPI_Comm_call_errhandler, and the default handler on an ordinary error.
 *   run    MPI_Add_error_class / _code / _string (strings kept, replaced,
 *          empty until set; bad arguments refused with MPI_ERR_ARG;
 *          MPI_LASTUSEDCODE follows); MPI_Remove_error_string / _code /
 *          _class in that order only, a removed number invalid afterwards;
 *          MPI_Comm_call_errhandler hands a user
 *          handler exactly the code given, with its communicator, and returns
 *          MPI_SUCCESS under MPI_ERRORS_RETURN. Prints "rank R of S run ok".
 *   fatal  MPI_Send to rank `size` under the default handler: the job ends;
 *          the testlist checks stderr for the call, the class and the reason.
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

#include "../util/check.h"

static int handler_calls, handler_code;
static MPI_Comm handler_comm = MPI_COMM_NULL;

static void record_error(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_comm = *comm;
    handler_code = *code;
}

static void expect_string(int code, const char *want)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = -1;
    memset(text, 'x', sizeof text);
    CHECK_MPI(MPI_Error_string(code, text, &len));
    CHECK(len == (int)strlen(want) && strcmp(text, want) == 0, "MPI_Error_string(%d) gave \"%s\" (%d), expected \"%s\"",
          code, text, len, want);
}

static void expect_class(int rc, int want, const char *what)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "%s succeeded", what);
    CHECK_MPI(MPI_Error_class(rc, &cls));
    CHECK(cls == want, "%s: class %d, expected %d", what, cls, want);
}

static int last_used_code(void)
{
    int *value = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &value, &flag));
    CHECK(flag && value, "MPI_LASTUSEDCODE is not set");
    return *value;
}

static void added_errors(void)
{
    int cls = -1, code1 = -1, code2 = -1, got = -1;
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK(cls > MPI_ERR_LASTCODE, "added class %d is not above MPI_ERR_LASTCODE %d", cls, MPI_ERR_LASTCODE);
    CHECK_MPI(MPI_Add_error_code(cls, &code1));
    CHECK_MPI(MPI_Add_error_code(cls, &code2));
    CHECK(code1 != code2 && code1 != cls && code2 != cls, "codes %d, %d of class %d are not distinct", code1, code2,
          cls);
    CHECK_MPI(MPI_Error_class(code1, &got));
    CHECK(got == cls, "code %d has class %d, expected %d", code1, got, cls);
    CHECK_MPI(MPI_Error_class(cls, &got));
    CHECK(got == cls, "class %d is not its own class (%d)", cls, got);
    CHECK(last_used_code() >= code2 && last_used_code() >= cls, "MPI_LASTUSEDCODE %d is below %d / %d",
          last_used_code(), code2, cls);

    expect_string(code2, "");   /* nothing set yet */
    CHECK_MPI(MPI_Add_error_string(cls, "the solver diverged"));
    CHECK_MPI(MPI_Add_error_string(code1, "the solver diverged at step 12"));
    expect_string(cls, "the solver diverged");
    expect_string(code1, "the solver diverged at step 12");
    CHECK_MPI(MPI_Add_error_string(code1, "replaced"));
    expect_string(code1, "replaced");
    expect_string(code2, "");

    /* Errors without an object are raised on MPI_COMM_SELF. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    expect_class(MPI_Add_error_string(MPI_ERR_RANK, "mine"), MPI_ERR_ARG, "a string for a predefined code");
    expect_class(MPI_Add_error_string(code2 + 1000, "none"), MPI_ERR_ARG, "a string for an unknown code");
    expect_class(MPI_Add_error_code(code1, &got), MPI_ERR_ARG, "a code of a code (not a class)");
    char *long_string = malloc(MPI_MAX_ERROR_STRING + 1);
    CHECK(long_string, "out of memory");
    memset(long_string, 'a', MPI_MAX_ERROR_STRING);
    long_string[MPI_MAX_ERROR_STRING] = '\0';
    expect_class(MPI_Add_error_string(code2, long_string), MPI_ERR_ARG, "a string of MPI_MAX_ERROR_STRING chars");
    free(long_string);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK_MPI(MPI_Error_string(MPI_ERR_RANK, text, &len));
    CHECK(len > 0 && strcmp(text, "mine") != 0, "MPI_ERR_RANK's string changed: \"%s\"", text);
}

/* MPI 4.1: strings go first, then codes, then their class; a removed
 * number is no longer valid anywhere. */
static void removed_errors(void)
{
    int cls = -1, code = -1, got = -1;
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK_MPI(MPI_Add_error_code(cls, &code));
    CHECK_MPI(MPI_Add_error_string(cls, "class text"));
    CHECK_MPI(MPI_Add_error_string(code, "code text"));
    CHECK(last_used_code() >= code, "MPI_LASTUSEDCODE %d is below the new code %d", last_used_code(), code);

    expect_class(MPI_Remove_error_class(cls), MPI_ERR_ARG, "removing a class that still has a code");
    expect_class(MPI_Remove_error_code(code), MPI_ERR_ARG, "removing a code that still has a string");
    expect_class(MPI_Remove_error_string(MPI_ERR_RANK), MPI_ERR_ARG, "removing a predefined class's string");
    expect_class(MPI_Remove_error_code(cls), MPI_ERR_ARG, "MPI_Remove_error_code of a class");
    expect_class(MPI_Remove_error_class(code), MPI_ERR_ARG, "MPI_Remove_error_class of a code");
    expect_class(MPI_Remove_error_class(MPI_ERR_RANK), MPI_ERR_ARG, "removing a predefined class");
    expect_string(code, "code text");   /* the refused calls changed nothing */

    CHECK_MPI(MPI_Remove_error_string(code));
    expect_string(code, "");
    expect_class(MPI_Remove_error_string(code), MPI_ERR_ARG, "removing a string twice");
    CHECK_MPI(MPI_Remove_error_code(code));
    expect_class(MPI_Error_class(code, &got), MPI_ERR_ARG, "MPI_Error_class of a removed code");
    expect_class(MPI_Add_error_string(code, "again"), MPI_ERR_ARG, "a string for a removed code");
    expect_class(MPI_Remove_error_class(cls), MPI_ERR_ARG, "removing a class that still has a string");
    CHECK_MPI(MPI_Remove_error_string(cls));
    CHECK_MPI(MPI_Remove_error_class(cls));
    expect_class(MPI_Error_class(cls, &got), MPI_ERR_ARG, "MPI_Error_class of a removed class");
    expect_class(MPI_Add_error_code(cls, &got), MPI_ERR_ARG, "a code of a removed class");
    expect_class(MPI_Remove_error_class(cls), MPI_ERR_ARG, "removing a class twice");
    CHECK(last_used_code() < code, "MPI_LASTUSEDCODE %d still counts the removed code %d", last_used_code(), code);

    /* Numbers are not reused. */
    int cls2 = -1;
    CHECK_MPI(MPI_Add_error_class(&cls2));
    CHECK(cls2 != cls, "a new class reused the removed number %d", cls);
    CHECK_MPI(MPI_Remove_error_class(cls2));
}

static void call_errhandler(void)
{
    int cls = -1, code = -1;
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK_MPI(MPI_Add_error_code(cls, &code));
    MPI_Comm dup;
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_create_errhandler(record_error, &eh));
    CHECK_MPI(MPI_Comm_set_errhandler(dup, eh));
    CHECK_MPI(MPI_Errhandler_free(&eh));

    int codes[] = { code, cls, MPI_ERR_RANK };
    for (int i = 0; i < 3; i++) {
        handler_calls = 0;
        CHECK(MPI_Comm_call_errhandler(dup, codes[i]) == MPI_SUCCESS, "MPI_Comm_call_errhandler did not return "
              "MPI_SUCCESS after a handler that returned");
        CHECK(handler_calls == 1, "the handler ran %d times for code %d", handler_calls, codes[i]);
        CHECK(handler_code == codes[i], "the handler got code %d, expected %d", handler_code, codes[i]);
        int same = MPI_UNEQUAL;
        CHECK_MPI(MPI_Comm_compare(handler_comm, dup, &same));
        CHECK(same == MPI_IDENT, "the handler got another communicator");
    }
    /* MPI_ERRORS_RETURN: nothing happens, the call succeeds. */
    CHECK_MPI(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    handler_calls = 0;
    CHECK(MPI_Comm_call_errhandler(dup, code) == MPI_SUCCESS, "MPI_Comm_call_errhandler under MPI_ERRORS_RETURN");
    CHECK(handler_calls == 0, "the freed-from handler still ran");
    CHECK_MPI(MPI_Comm_free(&dup));
}

int main(int argc, char **argv)
{
    int rank = -1, size = -1;
    CHECK(argc == 2, "usage: user_errors run|fatal");
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (strcmp(argv[1], "fatal") == 0) {
        int value = 7;
        int rc = MPI_Send(&value, 1, MPI_INT, size, 3, MPI_COMM_WORLD);
        printf("NOT REACHED: MPI_Send to rank %d returned %d under the default handler\n", size, rc);
        fflush(stdout);
        return 0;
    }
    CHECK(strcmp(argv[1], "run") == 0, "unknown mode %s", argv[1]);
    added_errors();
    removed_errors();
    call_errhandler();
    CHECK_MPI(MPI_Finalize());
    printf("rank %d of %d run ok\n", rank, size);
    return 0;
}
