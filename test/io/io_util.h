/*
 * Helpers of the io suite: a private directory made by rank 0 with mkdtemp
 * under $TMPDIR and shared with the others, file names in it, plain POSIX
 * reads to check what MPI-IO wrote, and the removal of the directory at the
 * end, which fails if anything (a data file, a shared pointer's companion
 * file) was left in it.
 */
#ifndef HASHI_TEST_IO_UTIL_H
#define HASHI_TEST_IO_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/check.h"

static char io_dir[512];

static inline void io_dir_make(MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(io_dir, sizeof io_dir, "%s/hashi-io-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        CHECK(mkdtemp(io_dir) != NULL, "mkdtemp(%s) failed", io_dir);
    }
    CHECK_MPI(MPI_Bcast(io_dir, sizeof io_dir, MPI_CHAR, 0, comm));
}

/* The path of `name` in the private directory (a static buffer per slot). */
static inline const char *io_path(const char *name)
{
    static char paths[4][640];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", io_dir, name);
    return p;
}

/* Every byte of the file, by POSIX read; *len gets its size. */
static inline unsigned char *io_slurp(const char *path, long *len)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open(%s) for checking failed", path);
    struct stat st;
    CHECK(fstat(fd, &st) == 0, "fstat failed");
    unsigned char *data = malloc((size_t)st.st_size + 1);
    CHECK(data != NULL, "out of memory");
    long got = 0;
    while (got < st.st_size) {
        ssize_t r = read(fd, data + got, (size_t)(st.st_size - got));
        CHECK(r > 0, "read(%s) failed", path);
        got += r;
    }
    close(fd);
    *len = (long)st.st_size;
    return data;
}

static inline int io_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Names left in the directory (0: empty), printed. */
static inline int io_dir_leftovers(void)
{
    DIR *d = opendir(io_dir);
    CHECK(d != NULL, "opendir(%s) failed", io_dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            fprintf(stderr, "left in %s: %s\n", io_dir, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

/* Collective: rank 0 removes the files named, checks nothing else is left
 * and removes the directory. */
static inline void io_dir_remove(MPI_Comm comm, const char *const *names, int n)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Barrier(comm);
    if (rank == 0) {
        for (int i = 0; i < n; i++)
            unlink(io_path(names[i]));
        CHECK(io_dir_leftovers() == 0, "files were left in the test directory");
        CHECK(rmdir(io_dir) == 0, "rmdir(%s) failed", io_dir);
    }
    MPI_Barrier(comm);
}

#endif
