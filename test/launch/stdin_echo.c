/*
 * stdin_echo: rank 0 copies its standard input to standard output until EOF;
 * every other rank checks that its standard input is at EOF at once (mpirun
 * gives stdin to rank 0 only). The harness pipes a known text in and compares.
 */
#include <mpi.h>

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "../util/check.h"

static void copy_stdin_to_stdout(void)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n == 0)
            return;
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n > 0, "reading stdin: %s", strerror(errno));
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(STDOUT_FILENO, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            CHECK(w > 0, "writing stdout: %s", strerror(errno));
            done += w;
        }
    }
}

/* Not rank 0: stdin must be readable within a second and give EOF, not data,
 * not an error (a closed descriptor is not the same as an empty input). */
static void check_stdin_at_eof(void)
{
    struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
    int ready = poll(&pfd, 1, 1000);
    CHECK(ready == 1, "stdin is not at EOF: poll gave %d (%s)", ready, ready < 0 ? strerror(errno) : "not readable after 1 s");
    char c;
    ssize_t n = read(STDIN_FILENO, &c, 1);
    CHECK(n == 0, "stdin of a rank other than 0: read gave %zd (%s), expected EOF",
          n, n < 0 ? strerror(errno) : "data");
}

int main(int argc, char **argv)
{
    int rank = -1;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    if (rank == 0)
        copy_stdin_to_stdout();
    else
        check_stdin_at_eof();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
