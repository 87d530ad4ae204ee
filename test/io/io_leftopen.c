/*
 * Files left open at MPI_Finalize: the part opens two files, uses the
 * shared pointer of both (so each has its hidden companion file) and
 * leaves them open, one MPI_MODE_DELETE_ON_CLOSE. After MPI_Finalize rank 0
 * checks with POSIX calls that only the plain data file is left in the
 * directory (holding every rank's record), then removes it.
 */
#include "io_util.h"

void io_leftopen(void);
void io_leftopen_check(void);

static int started, rank, size;

void io_leftopen(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_dir_make(MPI_COMM_WORLD);
    MPI_File keep, gone;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("kept"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &keep));
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("deleted"),
                            MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &gone));
    int record = 1000 + rank;
    CHECK_MPI(MPI_File_write_shared(keep, &record, 1, MPI_INT, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_File_write_shared(gone, &record, 1, MPI_INT, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_File_sync(keep));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int entries = 0;
        DIR *d = opendir(io_dir);
        CHECK(d != NULL, "opendir(%s) failed", io_dir);
        for (struct dirent *e; (e = readdir(d)) != NULL;)
            entries += e->d_name[0] != '.' || strstr(e->d_name, "hashi-shfp") != NULL;
        closedir(d);
        CHECK(entries == 4, "before MPI_Finalize: %d files, expected 2 and their 2 companions", entries);
    }
    started = 1;   /* both stay open: MPI_Finalize closes them */
}

/* After MPI_Finalize (no MPI calls). */
void io_leftopen_check(void)
{
    if (!started || rank != 0)
        return;
    DIR *d = opendir(io_dir);
    CHECK(d != NULL, "opendir(%s) failed", io_dir);
    int others = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "kept"))
            continue;
        fprintf(stderr, "left after MPI_Finalize: %s\n", e->d_name);
        others++;
    }
    closedir(d);
    CHECK(others == 0, "MPI_Finalize left %d files of files left open (companions, DELETE_ON_CLOSE)", others);
    long len;
    unsigned char *data = io_slurp(io_path("kept"), &len);
    CHECK(len == (long)(size * sizeof(int)), "the kept file has %ld bytes", len);
    int seen = 0;
    for (int i = 0; i < size; i++) {
        int v;
        memcpy(&v, data + i * sizeof v, sizeof v);
        CHECK(v >= 1000 && v < 1000 + size, "record %d is %d", i, v);
        seen |= 1 << (v - 1000);
    }
    CHECK(seen == (1 << size) - 1, "some rank's record is missing");
    free(data);
    unlink(io_path("kept"));
    CHECK(rmdir(io_dir) == 0, "rmdir(%s) failed", io_dir);
}
