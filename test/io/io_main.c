/*
 * The io suite's one program: every part in one launch per (cell, ranks),
 * in order; arguments name the parts to run (default: all). Each part makes
 * and removes its own private directory under $TMPDIR.
 */
#include "io_util.h"

void io_basic(void);
void io_view(void);
void io_nonblocking(void);
void io_shared(void);
void io_errors(void);
void io_datarep(void);
void io_leftopen(void);
void io_leftopen_check(void);

static const struct {
    const char *name;
    void (*run)(void);
} parts[] = {
    { "basic", io_basic },
    { "view", io_view },
    { "nonblocking", io_nonblocking },
    { "shared", io_shared },
    { "errors", io_errors },
    { "datarep", io_datarep },
    { "leftopen", io_leftopen },   /* last: its files stay open */
};

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        int wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            wanted |= !strcmp(argv[a], parts[i].name);
        if (wanted)
            parts[i].run();
    }
    MPI_Finalize();
    io_leftopen_check();
    printf("rank %d of %d ok\n", rank, size);
    return 0;
}
