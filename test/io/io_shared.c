/*
 * The shared file pointer and atomic mode. write_shared from every rank,
 * several records each, concurrently: every record is in the file exactly
 * once, whole, and the pointer ends after all of them; read_shared hands
 * each record to exactly one reader. write_ordered puts the ranks' records
 * in rank order (with different sizes per rank), read_ordered gives them
 * back. seek_shared / get_position_shared in etype units of a view. Atomic
 * mode: writers rewrite the same strided region (thousands of separate
 * pieces per access) while a reader checks that every read sees one
 * writer's data only.
 */
#include "io_util.h"

void io_shared(void);

#define RECORDS 8    /* per rank */
#define RLEN 32      /* ints per record */
#define PIECES 512   /* ints in the atomic test's strided access */

static int rank, size;

void io_shared(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_dir_make(MPI_COMM_WORLD);
    const char *path = io_path("shared");
    MPI_File fh;
    MPI_Status st;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    /* etype: a record */
    MPI_Datatype record;
    CHECK_MPI(MPI_Type_contiguous(RLEN, MPI_INT, &record));
    CHECK_MPI(MPI_Type_commit(&record));
    CHECK_MPI(MPI_File_set_view(fh, 0, record, record, "native", MPI_INFO_NULL));

    /* ---- write_shared: every record exactly once ---- */
    int rec[RLEN];
    for (int k = 0; k < RECORDS; k++) {
        for (int i = 0; i < RLEN; i++)
            rec[i] = (rank * RECORDS + k) * 1000 + i;
        CHECK_MPI(MPI_File_write_shared(fh, rec, 1, record, &st));
        int count = -1;
        CHECK_MPI(MPI_Get_count(&st, record, &count));
        CHECK(count == 1, "write_shared counted %d records", count);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset shared = -1;
    CHECK_MPI(MPI_File_get_position_shared(fh, &shared));
    CHECK(shared == (MPI_Offset)size * RECORDS, "the shared pointer is at %lld records", (long long)shared);
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(path, &len);
        int total = size * RECORDS;
        CHECK(len == (long)total * RLEN * (long)sizeof(int), "POSIX size %ld", len);
        char *seen = calloc((size_t)total, 1);
        for (int r = 0; r < total; r++) {
            int v[RLEN];
            memcpy(v, data + (size_t)r * RLEN * sizeof(int), sizeof v);
            int id = v[0] / 1000;
            CHECK(id >= 0 && id < total && !seen[id], "record %d: id %d is out of range or seen twice", r, id);
            seen[id] = 1;
            for (int i = 0; i < RLEN; i++)
                CHECK(v[i] == id * 1000 + i, "record %d (id %d) is torn at int %d", r, id, i);
        }
        free(seen);
        free(data);
    }

    /* ---- read_shared: each record goes to exactly one reader ---- */
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    int mine = 0, ids[RECORDS * 64];
    for (;;) {
        CHECK_MPI(MPI_File_read_shared(fh, rec, 1, record, &st));
        int count = -1;
        CHECK_MPI(MPI_Get_count(&st, record, &count));
        if (count == 0)
            break;
        CHECK(count == 1 && mine < RECORDS * 64, "read_shared: count %d", count);
        ids[mine++] = rec[0] / 1000;
    }
    int total_read = 0;
    MPI_Allreduce(&mine, &total_read, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total_read == size * RECORDS, "read_shared handed out %d records, not %d", total_read, size * RECORDS);
    int *counts = calloc((size_t)size * RECORDS, sizeof(int)), *sum = calloc((size_t)size * RECORDS, sizeof(int));
    for (int i = 0; i < mine; i++)
        counts[ids[i]]++;
    MPI_Allreduce(counts, sum, size * RECORDS, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < size * RECORDS; i++)
        CHECK(sum[i] == 1, "record %d was read %d times", i, sum[i]);
    free(counts);
    free(sum);

    /* ---- write_ordered: rank order, rank r writing r + 1 records ---- */
    CHECK_MPI(MPI_File_set_size(fh, 0));
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    int *recs = malloc((size_t)(rank + 1) * RLEN * sizeof(int));
    for (int k = 0; k <= rank; k++)
        for (int i = 0; i < RLEN; i++)
            recs[k * RLEN + i] = rank * 1000 + k * 100 + i;
    CHECK_MPI(MPI_File_write_ordered(fh, recs, rank + 1, record, &st));
    MPI_Barrier(MPI_COMM_WORLD);   /* a collective write need not be done everywhere when it returns */
    CHECK_MPI(MPI_File_get_position_shared(fh, &shared));
    CHECK(shared == (MPI_Offset)size * (size + 1) / 2, "after write_ordered the pointer is at %lld", (long long)shared);
    if (rank == 0) {
        long len;
        unsigned char *data = io_slurp(path, &len);
        CHECK(len == (long)size * (size + 1) / 2 * RLEN * (long)sizeof(int), "write_ordered: POSIX size %ld", len);
        size_t at = 0;
        for (int r = 0; r < size; r++)
            for (int k = 0; k <= r; k++)
                for (int i = 0; i < RLEN; i++, at++) {
                    int v;
                    memcpy(&v, data + at * sizeof(int), sizeof v);
                    CHECK(v == r * 1000 + k * 100 + i, "write_ordered: rank %d record %d int %d is %d", r, k, i, v);
                }
        free(data);
    }
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    memset(recs, 0, (size_t)(rank + 1) * RLEN * sizeof(int));
    CHECK_MPI(MPI_File_read_ordered(fh, recs, rank + 1, record, &st));
    for (int k = 0; k <= rank; k++)
        CHECK(recs[k * RLEN + 5] == rank * 1000 + k * 100 + 5, "read_ordered: record %d is %d", k, recs[k * RLEN + 5]);
    free(recs);
    /* seek_shared relative to the pointer and to the end */
    CHECK_MPI(MPI_File_seek_shared(fh, -1, MPI_SEEK_CUR));
    CHECK_MPI(MPI_File_get_position_shared(fh, &shared));
    CHECK(shared == (MPI_Offset)size * (size + 1) / 2 - 1, "SEEK_CUR -1: %lld", (long long)shared);
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position_shared(fh, &shared));
    CHECK(shared == (MPI_Offset)size * (size + 1) / 2, "SEEK_END: %lld", (long long)shared);
    MPI_Type_free(&record);

    /* ---- atomic mode: strided overlapping writes never mix ---- */
    MPI_Datatype every_other, tiled;
    CHECK_MPI(MPI_Type_vector(1, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_create_resized(every_other, 0, 2 * sizeof(int), &tiled));
    CHECK_MPI(MPI_Type_commit(&tiled));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, tiled, "native", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    int *block = malloc(PIECES * sizeof(int));
    int writer = size == 1 || rank != 1;
    if (writer)
        for (int i = 0; i < PIECES; i++)
            block[i] = rank + 1;
    CHECK_MPI(MPI_File_write_at_all(fh, 0, block, writer ? PIECES : 0, MPI_INT, &st));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int round = 0; round < 10; round++) {
        if (writer) {
            CHECK_MPI(MPI_File_write_at(fh, 0, block, PIECES, MPI_INT, &st));
        } else {
            CHECK_MPI(MPI_File_read_at(fh, 0, block, PIECES, MPI_INT, &st));
            for (int i = 1; i < PIECES; i++)
                CHECK(block[i] == block[0], "atomic mode: a read saw writer %d's int at 0 and %d's at %d", block[0],
                      block[i], i);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_read_at(fh, 0, block, PIECES, MPI_INT, &st));
    for (int i = 1; i < PIECES; i++)
        CHECK(block[i] == block[0] && block[0] > 0, "atomic mode: the final data mixes writers (%d, %d at %d)",
              block[0], block[i], i);
    free(block);
    MPI_Type_free(&tiled);
    MPI_Type_free(&every_other);
    CHECK_MPI(MPI_File_close(&fh));

    const char *names[] = { "shared" };
    io_dir_remove(MPI_COMM_WORLD, names, 1);
}
