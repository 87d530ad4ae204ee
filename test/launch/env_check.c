/*
 * env_check NAME=VALUE... [!NAME...]: every rank checks that its environment
 * has each NAME set to exactly VALUE (and each !NAME unset), then prints
 * "rank R of S env ok". Used for mpirun's -x VAR and -x VAR=value.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"

int main(int argc, char **argv)
{
    int rank = -1, size = -1;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(argc > 1, "usage: env_check NAME=VALUE... [!NAME...]");

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] == '!') {
            const char *value = getenv(arg + 1);
            CHECK(value == NULL, "%s is set to \"%s\", expected it unset", arg + 1, value);
            continue;
        }
        const char *eq = strchr(arg, '=');
        CHECK(eq && eq != arg, "argument \"%s\" is not NAME=VALUE or !NAME", arg);
        char name[256];
        size_t len = (size_t)(eq - arg);
        CHECK(len < sizeof name, "variable name too long in \"%s\"", arg);
        memcpy(name, arg, len);
        name[len] = '\0';
        const char *value = getenv(name);
        CHECK(value != NULL, "%s is not set, expected \"%s\"", name, eq + 1);
        CHECK(strcmp(value, eq + 1) == 0, "%s is \"%s\", expected \"%s\"", name, value, eq + 1);
    }

    printf("rank %d of %d env ok\n", rank, size);
    fflush(stdout);
    CHECK_MPI(MPI_Finalize());
    return 0;
}
