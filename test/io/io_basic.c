/*
 * MPI-IO basics on one shared file: explicit offsets and the individual
 * pointer (seek, get_position), byte-exact contents checked with plain
 * POSIX reads, EOF and the counts of short reads, non-contiguous memory,
 * the _c forms, set_size / preallocate / get_size, hints (get_info lists
 * what is honoured; file_perm sets the mode), atomicity, access mode and
 * group queries, MPI_MODE_APPEND, MPI_MODE_DELETE_ON_CLOSE, MPI_File_delete
 * and handle conversion.
 */
#include "io_util.h"

void io_basic(void);

#define N 250   /* ints per rank's block */
#define ISZ ((MPI_Offset)sizeof(int))

static int rank, size;

static int value(int r, int i)
{
    return r * 100000 + i;
}

static void check_count(const MPI_Status *st, MPI_Datatype type, int expect, const char *what)
{
    int count = -1;
    CHECK_MPI(MPI_Get_count(st, type, &count));
    CHECK(count == expect, "%s: MPI_Get_count gives %d, expected %d", what, count, expect);
}

static MPI_Offset file_size(MPI_File fh)
{
    MPI_Offset s = -1;
    CHECK_MPI(MPI_File_get_size(fh, &s));
    /* every rank calls it: nobody changes the file before all have looked */
    MPI_Barrier(MPI_COMM_WORLD);
    return s;
}

void io_basic(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_dir_make(MPI_COMM_WORLD);
    const char *basic = io_path("basic");

    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, basic, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    int amode = 0;
    CHECK_MPI(MPI_File_get_amode(fh, &amode));
    CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "get_amode gives 0x%x", amode);
    MPI_Group fgroup, wgroup;
    int cmp = -1;
    CHECK_MPI(MPI_File_get_group(fh, &fgroup));
    MPI_Comm_group(MPI_COMM_WORLD, &wgroup);
    MPI_Group_compare(fgroup, wgroup, &cmp);
    CHECK(cmp == MPI_IDENT, "the file's group is not MPI_COMM_WORLD's");
    MPI_Group_free(&fgroup);
    MPI_Group_free(&wgroup);
    CHECK(MPI_File_f2c(MPI_File_c2f(fh)) == fh, "c2f / f2c do not round-trip");
    CHECK(file_size(fh) == 0, "a new file is not empty");
    MPI_Barrier(MPI_COMM_WORLD);   /* before anyone writes */

    /* ---- explicit offsets: each rank its block, collectively ---- */
    int block[N], back[N];
    for (int i = 0; i < N; i++)
        block[i] = value(rank, i);
    MPI_Status st;
    CHECK_MPI(MPI_File_write_at_all(fh, (MPI_Offset)rank * N * ISZ, block, N, MPI_INT, &st));
    check_count(&st, MPI_INT, N, "write_at_all");
    CHECK_MPI(MPI_File_sync(fh));
    int peer = (rank + 1) % size;
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)peer * N * ISZ, back, N, MPI_INT, &st));
    check_count(&st, MPI_INT, N, "read_at");
    for (int i = 0; i < N; i++)
        CHECK(back[i] == value(peer, i), "read_at: int %d of rank %d's block is %d", i, peer, back[i]);
    CHECK(file_size(fh) == (MPI_Offset)size * N * ISZ, "size %lld after the blocks", (long long)file_size(fh));
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(basic, &len);
        CHECK(len == (long)(size * N * ISZ), "POSIX size %ld", len);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < N; i++) {
                int v;
                memcpy(&v, data + ((size_t)r * N + i) * ISZ, sizeof v);
                CHECK(v == value(r, i), "POSIX read: rank %d's int %d is %d", r, i, v);
            }
        free(data);
    }

    /* ---- the individual pointer ---- */
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == 0, "the individual pointer starts at %lld", (long long)pos);
    CHECK_MPI(MPI_File_seek(fh, (MPI_Offset)peer * N * ISZ, MPI_SEEK_SET));
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read(fh, back, N, MPI_INT, &st));
    check_count(&st, MPI_INT, N, "read");
    CHECK(back[N - 1] == value(peer, N - 1), "read after seek: wrong data");
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)(peer + 1) * N * ISZ, "position %lld after read", (long long)pos);
    CHECK_MPI(MPI_File_seek(fh, -(MPI_Offset)(N / 2) * (MPI_Offset)ISZ, MPI_SEEK_CUR));
    CHECK_MPI(MPI_File_read_all(fh, back, N / 2, MPI_INT, &st));
    CHECK(back[0] == value(peer, N - N / 2), "read_all after SEEK_CUR: %d", back[0]);
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)size * N * ISZ, "SEEK_END gives %lld", (long long)pos);

    /* ---- end of file: a read there gets nothing, one across it the rest ---- */
    CHECK_MPI(MPI_File_read(fh, back, 10, MPI_INT, &st));
    check_count(&st, MPI_INT, 0, "read at EOF");
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)size * N * ISZ, "a read at EOF moved the pointer to %lld", (long long)pos);
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)size * N * ISZ - 2 * ISZ, back, 10, MPI_INT, &st));
    check_count(&st, MPI_INT, 2, "read across EOF");
    int elements = -1;
    CHECK_MPI(MPI_Get_elements(&st, MPI_INT, &elements));
    CHECK(elements == 2, "Get_elements across EOF gives %d", elements);
    CHECK(back[1] == value(size - 1, N - 1), "the last int read across EOF is %d", back[1]);
    /* 6 bytes of ints: not a whole int */
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)size * N * ISZ - 6, back, 4, MPI_INT, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &elements));
    CHECK(elements == MPI_UNDEFINED, "6 bytes counted as %d ints", elements);
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &elements));
    CHECK(elements == 6, "6 bytes counted as %d bytes", elements);

    /* ---- non-contiguous memory: every other int, after the blocks ---- */
    MPI_Barrier(MPI_COMM_WORLD);   /* everyone is done with the EOF checks */
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    MPI_Offset region = (MPI_Offset)size * N * ISZ + (MPI_Offset)rank * (N / 2) * ISZ;
    CHECK_MPI(MPI_File_write_at(fh, region, block, 1, every_other, &st));
    CHECK_MPI(MPI_Get_elements(&st, every_other, &elements));
    CHECK(elements == N / 2, "write of a vector: %d elements", elements);
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_at(fh, region, back, N / 2, MPI_INT, &st));
    for (int i = 0; i < N / 2; i++)
        CHECK(back[i] == value(rank, 2 * i), "vector write: int %d is %d", i, back[i]);
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_at(fh, region, back, 1, every_other, &st));
    for (int i = 0; i < N; i++)
        CHECK(back[i] == (i % 2 ? 0 : value(rank, i)), "vector read: int %d is %d", i, back[i]);
    MPI_Type_free(&every_other);

    /* ---- the _c forms ---- */
    MPI_Count ccount = -1;
    MPI_Offset cregion = (MPI_Offset)size * (N + N / 2) * ISZ + (MPI_Offset)rank * N * ISZ;
    CHECK_MPI(MPI_File_write_at_c(fh, cregion, block, (MPI_Count)N, MPI_INT, &st));
    CHECK_MPI(MPI_Get_count_c(&st, MPI_INT, &ccount));
    CHECK(ccount == N, "write_at_c count %lld", (long long)ccount);
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_at_c(fh, cregion, back, (MPI_Count)N, MPI_INT, &st));
    CHECK_MPI(MPI_Get_count_c(&st, MPI_INT, &ccount));
    CHECK(ccount == N && !memcmp(back, block, sizeof block), "read_at_c: %lld ints, data %s", (long long)ccount,
          memcmp(back, block, sizeof block) ? "wrong" : "right");
    CHECK_MPI(MPI_File_seek(fh, cregion, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_all_c(fh, back, (MPI_Count)N, MPI_INT, &st));
    CHECK_MPI(MPI_Get_count_c(&st, MPI_INT, &ccount));
    CHECK(ccount == N && back[7] == block[7], "read_all_c");
    MPI_Count extent = 0;
    CHECK_MPI(MPI_File_get_type_extent_c(fh, MPI_DOUBLE, &extent));
    CHECK(extent == sizeof(double), "get_type_extent_c(MPI_DOUBLE) = %lld", (long long)extent);

    /* ---- atomicity ---- */
    int flag = -1;
    CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 0, "atomic mode is on at open");
    CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 1, "set_atomicity(1) did not stick");
    CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)rank * ISZ, &block[0], 1, MPI_INT, &st));
    CHECK_MPI(MPI_File_set_atomicity(fh, 0));

    /* ---- size: set_size cuts and extends, preallocate only grows ---- */
    CHECK_MPI(MPI_File_set_size(fh, 100));
    CHECK(file_size(fh) == 100, "set_size(100) gives %lld", (long long)file_size(fh));
    CHECK_MPI(MPI_File_preallocate(fh, 4096));
    CHECK(file_size(fh) == 4096, "preallocate(4096) gives %lld", (long long)file_size(fh));
    CHECK_MPI(MPI_File_preallocate(fh, 10));
    CHECK(file_size(fh) == 4096, "preallocate(10) shrank the file to %lld", (long long)file_size(fh));
    CHECK_MPI(MPI_File_read_at(fh, 200, back, 4, MPI_INT, &st));
    CHECK(back[0] == 0 && back[3] == 0, "preallocated bytes are not zero");
    CHECK_MPI(MPI_File_set_size(fh, 0));
    CHECK(file_size(fh) == 0, "set_size(0) gives %lld", (long long)file_size(fh));
    if (rank == 0) {
        struct stat sb;
        CHECK(stat(basic, &sb) == 0 && sb.st_size == 0, "POSIX size after set_size(0)");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_write_at_all(fh, (MPI_Offset)rank * N * ISZ, block, N, MPI_INT, &st));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close did not set MPI_FILE_NULL");

    /* ---- MPI_MODE_APPEND: both pointers start at the end ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, basic, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)size * N * ISZ, "APPEND: the pointer starts at %lld", (long long)pos);
    MPI_Offset shared_pos = -1;
    CHECK_MPI(MPI_File_get_position_shared(fh, &shared_pos));
    CHECK(shared_pos == pos, "APPEND: the shared pointer starts at %lld", (long long)shared_pos);
    int tail = 4242 + rank;
    CHECK_MPI(MPI_File_write_at(fh, pos + rank * (MPI_Offset)ISZ, &tail, 1, MPI_INT, &st));
    CHECK_MPI(MPI_File_close(&fh));
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(basic, &len);
        CHECK(len == (long)((size_t)size * (N + 1) * ISZ), "APPEND: size %ld", len);
        int v;
        memcpy(&v, data + (size_t)size * N * ISZ, sizeof v);
        CHECK(v == 4242, "APPEND: the first appended int is %d", v);
        free(data);
    }

    /* ---- hints: honoured ones are listed, file_perm sets the mode ---- */
    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "65536");
    MPI_Info_set(info, "file_perm", "0600");
    MPI_Info_set(info, "no_such_hint", "1");
    const char *hinted = io_path("hinted");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, hinted, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, info, &fh));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_File_get_info(fh, &used));
    char val[MPI_MAX_INFO_VAL + 1];
    int found = 0;
    MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, val, &found);
    CHECK(found && !strcmp(val, "65536"), "cb_buffer_size: %s", found ? val : "(absent)");
    MPI_Info_get(used, "file_perm", MPI_MAX_INFO_VAL, val, &found);
    CHECK(found && !strcmp(val, "0600"), "file_perm: %s", found ? val : "(absent)");
    MPI_Info_get(used, "no_such_hint", MPI_MAX_INFO_VAL, val, &found);
    CHECK(!found, "an ignored hint is listed as used");
    MPI_Info_free(&used);
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "8192");
    CHECK_MPI(MPI_File_set_info(fh, info));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_File_get_info(fh, &used));
    MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, val, &found);
    CHECK(found && !strcmp(val, "8192"), "cb_buffer_size after set_info: %s", found ? val : "(absent)");
    MPI_Info_free(&used);
    if (rank == 0) {
        struct stat sb;
        CHECK(stat(hinted, &sb) == 0 && (sb.st_mode & 0777) == 0600, "file_perm 0600 gave mode %o",
              (unsigned)(sb.st_mode & 0777));
    }
    CHECK_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK_MPI(MPI_File_delete(hinted, MPI_INFO_NULL));
        CHECK(!io_exists(hinted), "MPI_File_delete left the file");
    }

    /* ---- MPI_MODE_DELETE_ON_CLOSE ---- */
    const char *doomed = io_path("doomed");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, doomed, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_write_shared(fh, block, 4, MPI_INT, &st));   /* the companion file exists now */
    CHECK(io_exists(doomed), "the file is not there before close");
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(!io_exists(doomed), "DELETE_ON_CLOSE left the file");

    const char *names[] = { "basic" };
    io_dir_remove(MPI_COMM_WORLD, names, 1);
}
