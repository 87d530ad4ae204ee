/*
 * Every nonblocking and split collective form: iwrite / iread (+_at, _all,
 * _at_all, _shared and the _c forms) return real requests that MPI_Wait,
 * MPI_Test, MPI_Waitall and MPI_Request_get_status complete with the right
 * status; the *_begin / *_end pairs move the data and give the status at
 * _end. Each rank works on its own region of one file; the contents are
 * checked by reading them back and by plain POSIX reads.
 */
#include "io_util.h"

void io_nonblocking(void);

#define N 64   /* ints per access */

static int rank, size;

static void fill(int *buf, int tag)
{
    for (int i = 0; i < N; i++)
        buf[i] = tag * 1000000 + rank * 1000 + i;
}

static void expect(const int *buf, int tag, const char *what)
{
    for (int i = 0; i < N; i++)
        CHECK(buf[i] == tag * 1000000 + rank * 1000 + i, "%s: int %d is %d", what, i, buf[i]);
}

static void expect_count(const MPI_Status *st, int n, const char *what)
{
    int count = -1;
    CHECK_MPI(MPI_Get_count(st, MPI_INT, &count));
    CHECK(count == n, "%s: the status counts %d ints, expected %d", what, count, n);
}

/* The byte offset of region k of this rank. */
static MPI_Offset region(int k)
{
    return ((MPI_Offset)k * size + rank) * N * (MPI_Offset)sizeof(int);
}

void io_nonblocking(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_dir_make(MPI_COMM_WORLD);
    const char *path = io_path("nb");
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    int out[8][N], in[N];
    MPI_Request req, reqs[4];
    MPI_Status st, sts[4];

    /* ---- explicit offsets: iwrite_at / iread_at, Wait and Test ---- */
    fill(out[0], 1);
    CHECK_MPI(MPI_File_iwrite_at(fh, region(0), out[0], N, MPI_INT, &req));
    CHECK(req != MPI_REQUEST_NULL, "iwrite_at gave no request");
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "Wait did not free the request");
    expect_count(&st, N, "iwrite_at");
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_File_iread_at(fh, region(0), in, N, MPI_INT, &req));
    int flag = 0;
    for (int tries = 0; !flag && tries < 1000000; tries++)
        CHECK_MPI(MPI_Test(&req, &flag, &st));
    CHECK(flag, "MPI_Test never completed iread_at");
    expect_count(&st, N, "iread_at");
    expect(in, 1, "iread_at");

    /* ---- collective explicit offsets and the _c forms, with Waitall ---- */
    fill(out[1], 2);
    fill(out[2], 3);
    CHECK_MPI(MPI_File_iwrite_at_all(fh, region(1), out[1], N, MPI_INT, &reqs[0]));
    CHECK_MPI(MPI_File_iwrite_at_c(fh, region(2), out[2], (MPI_Count)N, MPI_INT, &reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, sts));
    expect_count(&sts[0], N, "iwrite_at_all");
    expect_count(&sts[1], N, "iwrite_at_c");
    int in2[N];
    CHECK_MPI(MPI_File_iread_at_all(fh, region(1), in, N, MPI_INT, &reqs[0]));
    CHECK_MPI(MPI_File_iread_at_all_c(fh, region(2), in2, (MPI_Count)N, MPI_INT, &reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, sts));
    expect(in, 2, "iread_at_all");
    expect(in2, 3, "iread_at_all_c");
    MPI_Count ccount = 0;
    CHECK_MPI(MPI_Get_count_c(&sts[1], MPI_INT, &ccount));
    CHECK(ccount == N, "iread_at_all_c: %lld ints", (long long)ccount);

    /* ---- the individual pointer: iwrite, iwrite_all, iread, iread_all ---- */
    fill(out[3], 4);
    fill(out[4], 5);
    CHECK_MPI(MPI_File_seek(fh, region(3), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iwrite(fh, out[3], N, MPI_INT, &req));
    CHECK_MPI(MPI_Request_get_status(req, &flag, &st));
    CHECK(flag, "Request_get_status: iwrite not complete");
    expect_count(&st, N, "iwrite (get_status)");
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK_MPI(MPI_File_seek(fh, region(4), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iwrite_all_c(fh, out[4], (MPI_Count)N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == region(4) + N * (MPI_Offset)sizeof(int), "the pointer after iwrite_all_c: %lld", (long long)pos);
    CHECK_MPI(MPI_File_seek(fh, region(3), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iread(fh, in, N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    expect(in, 4, "iread");
    CHECK_MPI(MPI_File_seek(fh, region(4), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iread_all(fh, in, N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    expect(in, 5, "iread_all");
    CHECK_MPI(MPI_File_seek(fh, region(4), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iread_c(fh, in, (MPI_Count)N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    expect(in, 5, "iread_c");
    CHECK_MPI(MPI_File_seek(fh, region(3), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iwrite_c(fh, out[3], (MPI_Count)N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK_MPI(MPI_File_seek(fh, region(4), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iread_all_c(fh, in, (MPI_Count)N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    expect(in, 5, "iread_all_c");
    CHECK_MPI(MPI_File_iwrite_at_all_c(fh, region(1), out[1], (MPI_Count)N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK_MPI(MPI_File_iread_at_c(fh, region(1), in, (MPI_Count)N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    expect(in, 2, "iread_at_c");

    /* ---- split collectives ---- */
    fill(out[5], 6);
    fill(out[6], 7);
    CHECK_MPI(MPI_File_write_at_all_begin(fh, region(5), out[5], N, MPI_INT));
    CHECK_MPI(MPI_File_write_at_all_end(fh, out[5], &st));
    expect_count(&st, N, "write_at_all_end");
    CHECK_MPI(MPI_File_read_at_all_begin_c(fh, region(5), in, (MPI_Count)N, MPI_INT));
    memset(&st, 0, sizeof st);
    CHECK_MPI(MPI_File_read_at_all_end(fh, in, &st));
    expect_count(&st, N, "read_at_all_end");
    expect(in, 6, "read_at_all_begin_c");
    CHECK_MPI(MPI_File_write_at_all_begin_c(fh, region(5), out[5], (MPI_Count)N, MPI_INT));
    CHECK_MPI(MPI_File_write_at_all_end(fh, out[5], &st));
    CHECK_MPI(MPI_File_read_at_all_begin(fh, region(5), in, N, MPI_INT));
    CHECK_MPI(MPI_File_read_at_all_end(fh, in, &st));
    expect(in, 6, "read_at_all_begin");
    CHECK_MPI(MPI_File_seek(fh, region(6), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_write_all_begin(fh, out[6], N, MPI_INT));
    CHECK_MPI(MPI_File_write_all_end(fh, out[6], &st));
    expect_count(&st, N, "write_all_end");
    CHECK_MPI(MPI_File_seek(fh, region(6), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_all_begin(fh, in, N, MPI_INT));
    CHECK_MPI(MPI_File_read_all_end(fh, in, &st));
    expect(in, 7, "read_all_begin");
    CHECK_MPI(MPI_File_seek(fh, region(6), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_write_all_begin_c(fh, out[6], (MPI_Count)N, MPI_INT));
    CHECK_MPI(MPI_File_write_all_end(fh, out[6], &st));
    CHECK_MPI(MPI_File_seek(fh, region(6), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_all_begin_c(fh, in, (MPI_Count)N, MPI_INT));
    CHECK_MPI(MPI_File_read_all_end(fh, in, &st));
    expect(in, 7, "read_all_begin_c");
    /* one split collective at a time; an _end needs its _begin */
    CHECK_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    CHECK_ERR(MPI_File_read_all_end(fh, in, &st), MPI_ERR_OTHER, "MPI_File_read_all_end");
    CHECK_MPI(MPI_File_read_at_all_begin(fh, region(5), in, N, MPI_INT));
    CHECK_ERR(MPI_File_read_at_all_begin(fh, region(5), in, N, MPI_INT), MPI_ERR_OTHER, "MPI_File_read_at_all_begin");
    CHECK_ERR(MPI_File_write_at_all_end(fh, in, &st), MPI_ERR_OTHER, "MPI_File_write_at_all_end");
    CHECK_MPI(MPI_File_read_at_all_end(fh, in, &st));

    /* ---- shared pointer: iwrite_shared / iread_shared, ordered split ---- */
    MPI_Offset base = (MPI_Offset)8 * size * N * (MPI_Offset)sizeof(int);   /* after the regions */
    CHECK_MPI(MPI_File_seek_shared(fh, base, MPI_SEEK_SET));
    fill(out[7], 8);
    /* each rank one record; the records land in some order, each once */
    CHECK_MPI(MPI_File_iwrite_shared(fh, out[7], N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    expect_count(&st, N, "iwrite_shared");
    CHECK_MPI(MPI_File_iwrite_shared_c(fh, out[7], (MPI_Count)N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset shared = -1;
    CHECK_MPI(MPI_File_get_position_shared(fh, &shared));
    CHECK(shared == base + 2 * size * N * (MPI_Offset)sizeof(int), "the shared pointer is at %lld", (long long)shared);
    /* read them back through the shared pointer: size*2 records of N ints */
    CHECK_MPI(MPI_File_seek_shared(fh, base, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iread_shared(fh, in, N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    expect_count(&st, N, "iread_shared");
    CHECK(in[0] / 1000000 == 8 && in[N - 1] % 1000 == N - 1, "iread_shared: a record starts with %d", in[0]);
    CHECK_MPI(MPI_File_iread_shared_c(fh, in, (MPI_Count)N, MPI_INT, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(in[0] / 1000000 == 8, "iread_shared_c: a record starts with %d", in[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_get_position_shared(fh, &shared));
    CHECK(shared == base + 2 * size * N * (MPI_Offset)sizeof(int), "after the shared reads: %lld", (long long)shared);

    CHECK_MPI(MPI_File_write_ordered_begin(fh, out[0], N, MPI_INT));
    CHECK_MPI(MPI_File_write_ordered_end(fh, out[0], &st));
    expect_count(&st, N, "write_ordered_end");
    CHECK_MPI(MPI_File_seek_shared(fh, base + 2 * size * N * (MPI_Offset)sizeof(int), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_ordered_begin(fh, in, N, MPI_INT));
    CHECK_MPI(MPI_File_read_ordered_end(fh, in, &st));
    expect(in, 1, "read_ordered_begin");
    CHECK_MPI(MPI_File_write_ordered_begin_c(fh, out[0], (MPI_Count)N, MPI_INT));
    CHECK_MPI(MPI_File_write_ordered_end(fh, out[0], &st));
    CHECK_MPI(MPI_File_read_ordered_begin_c(fh, in, (MPI_Count)N, MPI_INT));
    CHECK_MPI(MPI_File_read_ordered_end(fh, in, &st));
    expect_count(&st, 0, "read_ordered at EOF");
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- POSIX check of the regions each rank wrote ---- */
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(path, &len);
        CHECK(len == base + 4 * (long)size * N * (long)sizeof(int), "POSIX size %ld", len);
        const int tags[] = { 1, 2, 3, 4, 5, 6, 7 };
        for (int k = 0; k < 7; k++)
            for (int r = 0; r < size; r++)
                for (int i = 0; i < N; i++) {
                    int v;
                    memcpy(&v, data + (((size_t)k * size + r) * N + i) * sizeof(int), sizeof v);
                    CHECK(v == tags[k] * 1000000 + r * 1000 + i, "POSIX: region %d of rank %d int %d is %d", k, r, i, v);
                }
        free(data);
    }
    const char *names[] = { "nb" };
    io_dir_remove(MPI_COMM_WORLD, names, 1);
}
