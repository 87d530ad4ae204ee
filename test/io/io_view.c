/*
 * File views. A global 2D array of ints (value = row * COLS + col) is
 * written collectively through MPI_Type_create_subarray views, one block
 * per rank of a 2D decomposition, then read back with another
 * decomposition (row slabs, then column slabs) and checked element by
 * element, and by plain POSIX reads. Also: a vector filetype with an etype
 * and a displacement, a resized filetype interleaving the ranks' records,
 * get_view (derived types come back usable), get_byte_offset, seek in etype
 * units and SEEK_END of a view with holes, get_type_extent, and the checks
 * set_view makes (overlapping or non-monotonic filetypes, negative
 * displacements, unsupported data representations).
 */
#include "io_util.h"

void io_view(void);

#define ROWS 24
#define COLS 36
#define HEADER 64   /* bytes before the array: the views' displacement */

static int rank, size;

static int cell(int r, int c)
{
    return r * COLS + c;
}

/* Write or check `rows` x `cols` at (r0, c0) through a subarray view. */
static void subarray_io(MPI_File fh, int r0, int c0, int rows, int cols, int is_write)
{
    int gsizes[2] = { ROWS, COLS }, lsizes[2] = { rows, cols }, starts[2] = { r0, c0 };
    MPI_Datatype sub;
    CHECK_MPI(MPI_Type_create_subarray(2, gsizes, lsizes, starts, MPI_ORDER_C, MPI_INT, &sub));
    CHECK_MPI(MPI_Type_commit(&sub));
    CHECK_MPI(MPI_File_set_view(fh, HEADER, MPI_INT, sub, "native", MPI_INFO_NULL));
    int *local = calloc((size_t)rows * cols + 1, sizeof(int));
    MPI_Status st;
    if (is_write) {
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                local[r * cols + c] = cell(r0 + r, c0 + c);
        CHECK_MPI(MPI_File_write_all(fh, local, rows * cols, MPI_INT, &st));
    } else {
        CHECK_MPI(MPI_File_read_all(fh, local, rows * cols, MPI_INT, &st));
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                CHECK(local[r * cols + c] == cell(r0 + r, c0 + c), "subarray (%d,%d)+(%d,%d): cell (%d,%d) is %d",
                      r0, c0, rows, cols, r0 + r, c0 + c, local[r * cols + c]);
    }
    int count = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == rows * cols, "subarray access moved %d ints of %d", count, rows * cols);
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == rows * cols, "the pointer is at %lld etypes after the access", (long long)pos);
    free(local);
    MPI_Type_free(&sub);
}

void io_view(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_dir_make(MPI_COMM_WORLD);
    const char *path = io_path("array");
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));

    /* ---- 2D block decomposition, written collectively ---- */
    int dims[2] = { 0, 0 };
    MPI_Dims_create(size, 2, dims);
    int pr = rank / dims[1], pc = rank % dims[1];
    int brows = ROWS / dims[0], bcols = COLS / dims[1];
    subarray_io(fh, pr * brows, pc * bcols, brows, bcols, 1);
    CHECK_MPI(MPI_File_sync(fh));
    /* read back: row slabs, then column slabs (another decomposition) */
    subarray_io(fh, rank * (ROWS / size), 0, ROWS / size, COLS, 0);
    subarray_io(fh, 0, rank * (COLS / size), ROWS, COLS / size, 0);
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(path, &len);
        CHECK(len == HEADER + (long)(ROWS * COLS * sizeof(int)), "POSIX size %ld", len);
        for (int i = 0; i < HEADER; i++)
            CHECK(data[i] == 0, "the header was written (byte %d)", i);
        for (int i = 0; i < ROWS * COLS; i++) {
            int v;
            memcpy(&v, data + HEADER + (size_t)i * sizeof(int), sizeof v);
            CHECK(v == i, "POSIX read: int %d is %d", i, v);
        }
        free(data);
    }

    /* ---- get_view gives the view back; derived types are usable ---- */
    int gsizes[2] = { ROWS, COLS }, lsizes[2] = { 2, 3 }, starts[2] = { 1, 1 };
    MPI_Datatype sub, etype, ftype;
    CHECK_MPI(MPI_Type_create_subarray(2, gsizes, lsizes, starts, MPI_ORDER_C, MPI_INT, &sub));
    CHECK_MPI(MPI_Type_commit(&sub));
    CHECK_MPI(MPI_File_set_view(fh, HEADER, MPI_INT, sub, "native", MPI_INFO_NULL));
    MPI_Type_free(&sub);   /* the view keeps it */
    MPI_Offset disp = -1;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_MPI(MPI_File_get_view(fh, &disp, &etype, &ftype, rep));
    CHECK(disp == HEADER && etype == MPI_INT && !strcmp(rep, "native"), "get_view: disp %lld rep %s", (long long)disp, rep);
    int tsize = 0;
    CHECK_MPI(MPI_Type_size(ftype, &tsize));
    CHECK(tsize == 6 * (int)sizeof(int), "get_view's filetype has size %d", tsize);
    MPI_Type_free(&ftype);
    /* element 4 of the view is cell (2, 2) */
    MPI_Offset byte = -1;
    CHECK_MPI(MPI_File_get_byte_offset(fh, 4, &byte));
    CHECK(byte == HEADER + (MPI_Offset)cell(2, 2) * (MPI_Offset)sizeof(int), "get_byte_offset(4) = %lld", (long long)byte);
    int got[6] = { 0 };
    MPI_Status st;
    CHECK_MPI(MPI_File_seek(fh, 4, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read(fh, got, 2, MPI_INT, &st));
    CHECK(got[0] == cell(2, 2) && got[1] == cell(2, 3), "read at etype 4: %d %d", got[0], got[1]);
    /* the next instance of the filetype continues one array further */
    CHECK_MPI(MPI_File_read_at(fh, 6, got, 1, MPI_INT, &st));
    int count = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0, "a read past the array's end (next instance) got %d ints", count);
    /* SEEK_END: the end of file in the view's etypes (all 6 of instance 0) */
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == 6, "SEEK_END in the subarray view gives %lld", (long long)pos);

    /* ---- a vector filetype with a displacement, in double etypes ---- */
    const char *vpath = io_path("vector");
    MPI_File vf;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, vpath, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &vf));
    /* rank r owns doubles r, r + size, r + 2 size ... after 16 bytes */
    MPI_Datatype strided, resized;
    CHECK_MPI(MPI_Type_vector(1, 1, size, MPI_DOUBLE, &strided));
    CHECK_MPI(MPI_Type_create_resized(strided, 0, (MPI_Aint)size * (MPI_Aint)sizeof(double), &resized));
    CHECK_MPI(MPI_Type_commit(&resized));
    CHECK_MPI(MPI_File_set_view(vf, 16 + (MPI_Offset)rank * (MPI_Offset)sizeof(double), MPI_DOUBLE, resized,
                                "native", MPI_INFO_NULL));
    double mine[10];
    for (int i = 0; i < 10; i++)
        mine[i] = rank + i * size + 0.5;
    CHECK_MPI(MPI_File_write_all(vf, mine, 10, MPI_DOUBLE, &st));
    MPI_Aint ext = 0;
    CHECK_MPI(MPI_File_get_type_extent(vf, resized, &ext));
    CHECK(ext == (MPI_Aint)size * (MPI_Aint)sizeof(double), "get_type_extent of the resized type: %ld", (long)ext);
    CHECK_MPI(MPI_File_sync(vf));
    CHECK_MPI(MPI_File_set_view(vf, 16, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL));
    double all[64];
    CHECK_MPI(MPI_File_read_at(vf, 0, all, 10 * size, MPI_DOUBLE, &st));
    for (int i = 0; i < 10 * size; i++)
        CHECK(all[i] == i + 0.5, "interleaved doubles: %d is %g", i, all[i]);
    /* the view's checks */
    MPI_Datatype backwards, overlap;
    int blens[2] = { 1, 1 }, displs[2] = { 4, 0 };
    CHECK_MPI(MPI_Type_indexed(2, blens, displs, MPI_INT, &backwards));
    CHECK_MPI(MPI_Type_commit(&backwards));
    CHECK_ERR(MPI_File_set_view(vf, 0, MPI_INT, backwards, "native", MPI_INFO_NULL), MPI_ERR_TYPE, "MPI_File_set_view");
    CHECK_MPI(MPI_Type_create_resized(MPI_DOUBLE, 0, 4, &overlap));
    CHECK_MPI(MPI_Type_commit(&overlap));
    CHECK_ERR(MPI_File_set_view(vf, 0, MPI_INT, overlap, "native", MPI_INFO_NULL), MPI_ERR_TYPE, "MPI_File_set_view");
    CHECK_ERR(MPI_File_set_view(vf, 0, MPI_DOUBLE, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_TYPE, "MPI_File_set_view");
    CHECK_ERR(MPI_File_set_view(vf, -8, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_ARG, "MPI_File_set_view");
    CHECK_ERR(MPI_File_set_view(vf, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_ARG,
              "MPI_File_set_view");
    /* external32: big-endian in the file, native in memory; types whose
     * external32 size differs (MPI_LONG: 4 bytes) are refused */
    CHECK_ERR(MPI_File_set_view(vf, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP,
              "MPI_File_set_view");
    CHECK_MPI(MPI_File_set_view(vf, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    int ints[2] = { 0x01020304 + rank, -2 };
    CHECK_MPI(MPI_File_write_at(vf, 2 * rank, ints, 2, MPI_INT, &st));
    long longs[1] = { 7 };
    CHECK_ERR(MPI_File_write_at(vf, 0, longs, 1, MPI_LONG, &st), MPI_ERR_UNSUPPORTED_DATAREP, "MPI_File_write_at");
    CHECK_MPI(MPI_File_sync(vf));
    int ints_back[2] = { 0, 0 };
    CHECK_MPI(MPI_File_read_at(vf, 2 * rank, ints_back, 2, MPI_INT, &st));
    CHECK(ints_back[0] == ints[0] && ints_back[1] == -2, "external32 round trip: %x %d", ints_back[0], ints_back[1]);
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(vpath, &len);
        CHECK(data[0] == 1 && data[1] == 2 && data[2] == 3 && data[3] == 4 && data[4] == 0xff && data[7] == 0xfe,
              "external32 is not big-endian in the file: %02x %02x %02x %02x", data[0], data[1], data[2], data[3]);
        free(data);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_ERR(MPI_File_set_view(vf, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP,
              "MPI_File_set_view");
    CHECK_MPI(MPI_File_set_view(vf, 0, MPI_INT, MPI_INT, "internal", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_get_view(vf, &disp, &etype, &ftype, rep));
    CHECK(!strcmp(rep, "internal") && disp == 0, "get_view after internal: %s", rep);
    MPI_Type_free(&backwards);
    MPI_Type_free(&overlap);
    MPI_Type_free(&resized);
    MPI_Type_free(&strided);
    CHECK_MPI(MPI_File_close(&vf));
    CHECK_MPI(MPI_File_close(&fh));

    const char *names[] = { "array", "vector" };
    io_dir_remove(MPI_COMM_WORLD, names, 2);
}
