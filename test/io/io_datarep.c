/*
 * User data representations (MPI_Register_datarep, _c). "hashi-be" keeps
 * ints big-endian in the file: its conversion functions pack the memory
 * datatype (MPI_Pack) and swap every 4 bytes, so derived memory types and
 * strided views work. Checked: the file's bytes by POSIX read, the data
 * read back, that the functions saw the caller's datatype and count, the
 * _c form, MPI_CONVERSION_FN_NULL (native bytes), File_get_type_extent
 * through the extent function (and external32's MPI_LONG, 4), a failing
 * conversion (MPI_ERR_CONVERSION, nothing written), representations that
 * change sizes (MPI_ERR_UNSUPPORTED_DATAREP) and the registration errors.
 */
#include "io_util.h"

void io_datarep(void);

struct rep_state {
    int reads, writes, extents;
    int fail;               /* the conversions return MPI_ERR_OTHER */
    MPI_Aint int_extent;    /* what the extent function says of MPI_INT */
    MPI_Datatype last_type; /* the datatype the last conversion was given */
    MPI_Count last_count;
};

static void swap4(unsigned char *p, MPI_Count bytes)
{
    for (MPI_Count i = 0; i + 4 <= bytes; i += 4) {
        unsigned char a = p[i], b = p[i + 1];
        p[i] = p[i + 3];
        p[i + 1] = p[i + 2];
        p[i + 2] = b;
        p[i + 3] = a;
    }
}

/* Memory elements [position, position + count) of datatype <-> packed,
 * byte-swapped file bytes. */
static int convert(void *userbuf, MPI_Datatype datatype, MPI_Count count, void *filebuf, MPI_Offset position,
                   struct rep_state *s, int to_file)
{
    s->last_type = datatype;
    s->last_count = count;
    if (s->fail)
        return MPI_ERR_OTHER;
    MPI_Aint lb, extent;
    int size;
    MPI_Type_get_extent(datatype, &lb, &extent);
    MPI_Type_size(datatype, &size);
    char *mem = (char *)userbuf + position * extent;
    int pos = 0;
    if (to_file) {
        s->writes++;
        MPI_Pack(mem, (int)count, datatype, filebuf, (int)(count * size), &pos, MPI_COMM_SELF);
        swap4(filebuf, count * size);
    } else {
        s->reads++;
        swap4(filebuf, count * size);  /* the file buffer is ours to change */
        MPI_Unpack(filebuf, (int)(count * size), &pos, mem, (int)count, datatype, MPI_COMM_SELF);
    }
    return MPI_SUCCESS;
}

static int read_fn(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position, void *extra)
{
    return convert(userbuf, datatype, count, filebuf, position, extra, 0);
}

static int write_fn(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position, void *extra)
{
    return convert(userbuf, datatype, count, filebuf, position, extra, 1);
}

static int read_fn_c(void *userbuf, MPI_Datatype datatype, MPI_Count count, void *filebuf, MPI_Offset position,
                     void *extra)
{
    return convert(userbuf, datatype, count, filebuf, position, extra, 0);
}

static int write_fn_c(void *userbuf, MPI_Datatype datatype, MPI_Count count, void *filebuf, MPI_Offset position,
                      void *extra)
{
    return convert(userbuf, datatype, count, filebuf, position, extra, 1);
}

static int extent_fn(MPI_Datatype datatype, MPI_Aint *file_extent, void *extra)
{
    struct rep_state *s = extra;
    s->extents++;
    if (datatype == MPI_INT) {
        *file_extent = s->int_extent;
        return MPI_SUCCESS;
    }
    int size;
    MPI_Type_size(datatype, &size);
    *file_extent = size;
    return MPI_SUCCESS;
}

static int file_int_be(const unsigned char *p)
{
    return (int)((unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3]);
}

void io_datarep(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_dir_make(MPI_COMM_WORLD);
    const char *path = io_path("rep");
    static struct rep_state be = { .int_extent = 4 }, be_c = { .int_extent = 4 }, shortened = { .int_extent = 2 },
                            nullfn = { .int_extent = 4 };

    /* ---- registration: names once, no built-in names, the extent function needed ---- */
    CHECK_MPI(MPI_Register_datarep("hashi-be", read_fn, write_fn, extent_fn, &be));
    CHECK_MPI(MPI_Register_datarep_c("hashi-be-c", read_fn_c, write_fn_c, extent_fn, &be_c));
    CHECK_MPI(MPI_Register_datarep("hashi-short", read_fn, write_fn, extent_fn, &shortened));
    CHECK_MPI(MPI_Register_datarep("hashi-null", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent_fn, &nullfn));
    CHECK_ERR(MPI_Register_datarep("hashi-be", read_fn, write_fn, extent_fn, &be), MPI_ERR_DUP_DATAREP,
              "MPI_Register_datarep");
    CHECK_ERR(MPI_Register_datarep_c("hashi-be", read_fn_c, write_fn_c, extent_fn, &be), MPI_ERR_DUP_DATAREP,
              "MPI_Register_datarep_c");
    CHECK_ERR(MPI_Register_datarep("external32", read_fn, write_fn, extent_fn, &be), MPI_ERR_DUP_DATAREP,
              "MPI_Register_datarep");
    CHECK_ERR(MPI_Register_datarep("native", read_fn, write_fn, extent_fn, &be), MPI_ERR_DUP_DATAREP,
              "MPI_Register_datarep");
    CHECK_ERR(MPI_Register_datarep("hashi-noextent", read_fn, write_fn, NULL, &be), MPI_ERR_ARG,
              "MPI_Register_datarep");
    CHECK_ERR(MPI_Register_datarep("", read_fn, write_fn, extent_fn, &be), MPI_ERR_ARG, "MPI_Register_datarep");

    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));

    /* ---- a strided view in hashi-be: rank r owns every size-th int from r ---- */
    enum { N = 40 };
    MPI_Datatype stride, mem;
    CHECK_MPI(MPI_Type_vector(N, 1, size, MPI_INT, &stride));
    MPI_Datatype stride_resized;
    CHECK_MPI(MPI_Type_create_resized(stride, 0, (MPI_Aint)(N * size * sizeof(int)), &stride_resized));
    CHECK_MPI(MPI_Type_commit(&stride_resized));
    CHECK_MPI(MPI_Type_vector(N / 2, 1, 2, MPI_INT, &mem));   /* N/2 ints, every other one of a buffer */
    CHECK_MPI(MPI_Type_commit(&mem));
    CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)(rank * sizeof(int)), MPI_INT, stride_resized, "hashi-be",
                                MPI_INFO_NULL));
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_Offset disp;
    MPI_Datatype etype, ftype;
    CHECK_MPI(MPI_File_get_view(fh, &disp, &etype, &ftype, rep));
    CHECK(!strcmp(rep, "hashi-be"), "get_view names '%s'", rep);
    if (ftype != MPI_INT)
        MPI_Type_free(&ftype);
    int values[N], spread[N];
    for (int i = 0; i < N; i++)
        values[i] = 0x01000000 * (rank + 1) + 0x10000 * i + 0x0102;
    for (int i = 0; i < N / 2; i++) {
        spread[2 * i] = values[N / 2 + i];
        spread[2 * i + 1] = -1;
    }
    MPI_Status st;
    int before = be.writes;
    CHECK_MPI(MPI_File_write_all(fh, values, N / 2, MPI_INT, &st));        /* ints 0 .. N/2-1 of mine */
    CHECK(be.writes == before + 1 && be.last_type == MPI_INT && be.last_count == N / 2,
          "the write conversion saw %d calls, count %lld", be.writes - before, (long long)be.last_count);
    CHECK_MPI(MPI_File_write_all(fh, spread, 1, mem, &st));                /* ints N/2 .. N-1, strided memory */
    CHECK(be.last_type == mem && be.last_count == 1, "the conversion was not given the memory datatype");
    int count = -1;
    CHECK_MPI(MPI_Get_count(&st, mem, &count));
    CHECK(count == 1, "write_all of 1 strided element: count %d", count);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(path, &len);
        CHECK(len == (long)(N * size * sizeof(int)), "file size %ld", len);
        for (int i = 0; i < N * size; i++) {
            int r = i % size, k = i / size;
            int want = 0x01000000 * (r + 1) + 0x10000 * k + 0x0102;
            CHECK(file_int_be(data + 4 * i) == want, "hashi-be: file int %d is %08x, expected %08x (big-endian)", i,
                  file_int_be(data + 4 * i), want);
        }
        free(data);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int back[N];
    memset(back, 0, sizeof back);
    before = be.reads;
    CHECK_MPI(MPI_File_read_at_all(fh, 0, back, N, MPI_INT, &st));
    CHECK(be.reads == before + 1, "the read conversion ran %d times", be.reads - before);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == values[i], "hashi-be read back: int %d is %08x, expected %08x", i, back[i], values[i]);
    int spread_back[N];
    for (int i = 0; i < N; i++)
        spread_back[i] = -7;
    CHECK_MPI(MPI_File_read_at_all(fh, N / 2, spread_back, 1, mem, &st));
    for (int i = 0; i < N / 2; i++)
        CHECK(spread_back[2 * i] == values[N / 2 + i] && spread_back[2 * i + 1] == -7,
              "strided read back: slot %d is %08x / %d", i, spread_back[2 * i], spread_back[2 * i + 1]);
    /* a read past the end: the whole elements that are there */
    CHECK_MPI(MPI_File_read_at(fh, N - 3, back, 8, MPI_INT, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 3 && back[0] == values[N - 3] && back[2] == values[N - 1], "read at the end: %d ints", count);

    /* ---- File_get_type_extent asks the extent function ---- */
    MPI_Aint ext = 0;
    int extents = be.extents;
    CHECK_MPI(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    CHECK(ext == 4 && be.extents > extents, "get_type_extent(MPI_INT) = %ld", (long)ext);

    /* ---- a failing conversion: MPI_ERR_CONVERSION, the file unchanged ---- */
    be.fail = 1;
    int junk[2] = { 5, 6 };
    CHECK_ERR(MPI_File_write_at(fh, 0, junk, 2, MPI_INT, &st), MPI_ERR_CONVERSION, "MPI_File_write_at");
    CHECK_ERR(MPI_File_read_at(fh, 0, back, 2, MPI_INT, &st), MPI_ERR_CONVERSION, "MPI_File_read_at");
    be.fail = 0;
    CHECK_MPI(MPI_File_read_at(fh, 0, back, 2, MPI_INT, &st));
    CHECK(back[0] == values[0] && back[1] == values[1], "a failed write changed the file");
    CHECK_MPI(MPI_Type_free(&stride_resized));
    CHECK_MPI(MPI_Type_free(&stride));
    CHECK_MPI(MPI_Type_free(&mem));

    /* ---- the _c registration: its functions run ---- */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "hashi-be-c", MPI_INFO_NULL));
    int mine[3] = { 0x0a0b0c0d + rank, rank, -rank };
    CHECK_MPI(MPI_File_write_at_all(fh, 3 * rank, mine, 3, MPI_INT, &st));
    CHECK(be_c.writes == 1 && be_c.last_count == 3, "the _c write conversion ran %d times", be_c.writes);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(path, &len);
        CHECK(file_int_be(data) == 0x0a0b0c0d, "hashi-be-c: first int %08x", file_int_be(data));
        free(data);
    }
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_at_all(fh, 3 * rank, back, 3, MPI_INT, &st));
    CHECK(be_c.reads == 1 && back[0] == mine[0] && back[1] == rank && back[2] == -rank, "hashi-be-c read back");

    /* ---- MPI_CONVERSION_FN_NULL: native bytes ---- */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "hashi-null", MPI_INFO_NULL));
    int plain = 0x11223344 + rank;
    CHECK_MPI(MPI_File_write_at_all(fh, rank, &plain, 1, MPI_INT, &st));
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(path, &len);
        int first;
        memcpy(&first, data, sizeof first);
        CHECK(first == 0x11223344, "hashi-null: the first int is %08x, not native", first);
        free(data);
    }
    int plain_back = 0;
    CHECK_MPI(MPI_File_read_at_all(fh, rank, &plain_back, 1, MPI_INT, &st));
    CHECK(plain_back == plain, "hashi-null read back %08x", plain_back);

    /* ---- sizes that change: refused; external32's MPI_LONG is 4 bytes ---- */
    CHECK_ERR(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "hashi-short", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP,
              "MPI_File_set_view");
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_get_type_extent(fh, MPI_LONG, &ext));
    CHECK(ext == 4, "external32 extent of MPI_LONG is %ld, not 4", (long)ext);
    CHECK_MPI(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
    CHECK(ext == 8, "external32 extent of MPI_DOUBLE is %ld", (long)ext);
    CHECK_MPI(MPI_File_close(&fh));

    const char *names[] = { "rep" };
    io_dir_remove(MPI_COMM_WORLD, names, 1);
}
