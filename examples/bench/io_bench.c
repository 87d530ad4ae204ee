/*
 * MPI-IO bandwidth on one shared file, written against plain MPI so the
 * same source runs under Hashi, Open MPI (OMPIO / ROMIO) and MPICH (ROMIO)
 * (run_bench.py io).
 *
 *   io_bench write          [max_block] [MiB per rank]   write_at_all, contiguous regions
 *   io_bench read           [max_block] [MiB per rank]   read_at_all of the same
 *   io_bench write_strided  [max_block] [MiB per rank]   write_all through a view that
 *                                                         interleaves the ranks' blocks
 *   io_bench read_strided   [max_block] [MiB per rank]   read_all through the same view
 *
 * Every rank moves its share (default 64 MiB) in blocks of each size from
 * 64 KiB up to max_block (default 4 MiB); the line per block size is the
 * aggregate bandwidth in MB/s: all ranks' bytes over the time from a
 * barrier before the first call to a barrier after the last. The file is in
 * a private directory under $TMPDIR (the page cache: no fsync is timed),
 * and removed at the end; a read mode writes the file first, untimed.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

/* One pass over the file in blocks of `block` bytes; seconds taken. */
static double pass(const char *path, int is_write, int strided, MPI_Offset block, MPI_Offset share, char *buf)
{
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, is_write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY,
                  MPI_INFO_NULL, &fh);
    MPI_Datatype contig, tile;
    if (strided) {
        /* rank r's block i is block i * size + r of the file */
        MPI_Type_contiguous((int)block, MPI_BYTE, &contig);
        MPI_Type_create_resized(contig, 0, (MPI_Aint)block * size, &tile);
        MPI_Type_commit(&tile);
        MPI_File_set_view(fh, (MPI_Offset)rank * block, MPI_BYTE, tile, "native", MPI_INFO_NULL);
    }
    MPI_Offset blocks = share / block;
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (MPI_Offset i = 0; i < blocks; i++) {
        if (strided) {
            if (is_write)
                MPI_File_write_all(fh, buf, (int)block, MPI_BYTE, &st);
            else
                MPI_File_read_all(fh, buf, (int)block, MPI_BYTE, &st);
        } else {
            MPI_Offset at = (MPI_Offset)rank * share + i * block;
            if (is_write)
                MPI_File_write_at_all(fh, at, buf, (int)block, MPI_BYTE, &st);
            else
                MPI_File_read_at_all(fh, at, buf, (int)block, MPI_BYTE, &st);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    MPI_File_close(&fh);
    if (strided) {
        MPI_Type_free(&tile);
        MPI_Type_free(&contig);
    }
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "write";
    MPI_Offset max = argc > 2 ? strtoll(argv[2], NULL, 0) : (MPI_Offset)4 << 20;
    MPI_Offset share = (argc > 3 ? strtoll(argv[3], NULL, 0) : 64) << 20;
    int is_write = !strncmp(mode, "write", 5), strided = strstr(mode, "strided") != NULL;
    if (strcmp(mode, "write") && strcmp(mode, "read") && strcmp(mode, "write_strided") &&
        strcmp(mode, "read_strided")) {
        if (rank == 0)
            fprintf(stderr, "unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char dir[512] = "", path[600];
    if (rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/io-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/data", dir);
    char *buf = malloc((size_t)max);
    memset(buf, rank + 1, (size_t)max);
    if (rank == 0)
        printf("# %s, %d ranks x %lld MiB\n# %-10s %12s\n", mode, size, (long long)(share >> 20), "Block", "MB/s");
    for (MPI_Offset block = 64 << 10; block <= max; block *= 4) {
        if (!is_write)
            pass(path, 1, strided, block, share, buf);
        double t = pass(path, is_write, strided, block, share, buf);
        if (rank == 0) {
            printf("%-12lld %12.1f\n", (long long)block, (double)share * size / t / 1e6);
            fflush(stdout);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        unlink(path);
        rmdir(dir);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
