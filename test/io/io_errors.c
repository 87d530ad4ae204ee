/*
 * MPI-IO errors. Files start with MPI_ERRORS_RETURN (the default handler on
 * MPI_FILE_NULL), so every error below is returned with its class and a
 * message naming the call: open's amode rules, files that do not exist,
 * EXCL on an existing file, permissions, bad file names, invalid handles,
 * counts, datatypes, reads of write-only and writes of read-only files,
 * SEQUENTIAL files, bad offsets and whence. All ranks agree on the outcome
 * of MPI_File_open. A user file error handler is called with the file and
 * the code (set on a file, and on MPI_FILE_NULL for open's errors), and
 * MPI_File_call_errhandler reaches it.
 */
#include "io_util.h"

void io_errors(void);

static int rank, size;
static int calls, last_class;
static MPI_File last_file;

static void on_error(MPI_File *file, int *code, ...)
{
    calls++;
    last_file = *file;
    MPI_Error_class(*code, &last_class);
}

void io_errors(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_dir_make(MPI_COMM_WORLD);
    MPI_File fh = MPI_FILE_NULL;
    MPI_Status st;
    int buf[16] = { 0 };
    const char *path = io_path("data");
    const char *missing = io_path("missing");

    MPI_Errhandler eh;
    CHECK_MPI(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "the default file error handler is not MPI_ERRORS_RETURN");

    /* ---- open: amode ---- */
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE, MPI_INFO_NULL, &fh), MPI_ERR_AMODE, "MPI_File_open");
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
              MPI_ERR_AMODE, "MPI_File_open");
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
              MPI_ERR_AMODE, "MPI_File_open");
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &fh),
              MPI_ERR_AMODE, "MPI_File_open");
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh),
              MPI_ERR_AMODE, "MPI_File_open");
    CHECK(fh == MPI_FILE_NULL, "a failed open set the handle");
    /* ---- open: the file system's answers ---- */
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE,
              "MPI_File_open");
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, io_path("no-dir/x"), MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
              MPI_ERR_NO_SUCH_FILE, "MPI_File_open");
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, "", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE, "MPI_File_open");
    char long_name[5000];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, long_name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE,
              "MPI_File_open");
    CHECK_ERR(MPI_File_open(MPI_COMM_NULL, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_COMM, "MPI_File_open");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)rank * sizeof buf, buf, 16, MPI_INT, &st));
    CHECK_MPI(MPI_File_close(&fh));
    /* EXCL on an existing file: every rank gets the error */
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh),
              MPI_ERR_FILE_EXISTS, "MPI_File_open");
    /* permissions (root may read anything: only if the check can hold) */
    if (rank == 0)
        chmod(path, 0200);
    MPI_Barrier(MPI_COMM_WORLD);
    if (geteuid() != 0)
        CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_ACCESS,
                  "MPI_File_open");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        chmod(path, 0600);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_ERR(MPI_File_delete(missing, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE, "MPI_File_delete");

    /* ---- invalid handles ---- */
    CHECK_ERR(MPI_File_read(MPI_FILE_NULL, buf, 1, MPI_INT, &st), MPI_ERR_FILE, "MPI_File_read");
    CHECK_ERR(MPI_File_close(&fh), MPI_ERR_FILE, "MPI_File_close");
    CHECK_ERR(MPI_File_get_size(MPI_FILE_NULL, NULL), MPI_ERR_FILE, "MPI_File_get_size");
    CHECK_ERR(MPI_File_set_view(MPI_FILE_NULL, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_FILE,
              "MPI_File_set_view");

    /* ---- read-only file: writes refused ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    CHECK_ERR(MPI_File_write(fh, buf, 1, MPI_INT, &st), MPI_ERR_READ_ONLY, "MPI_File_write");
    CHECK_ERR(MPI_File_write_at_all(fh, 0, buf, 1, MPI_INT, &st), MPI_ERR_READ_ONLY, "MPI_File_write_at_all");
    CHECK_ERR(MPI_File_set_size(fh, 0), MPI_ERR_READ_ONLY, "MPI_File_set_size");
    /* counts, types, buffers, offsets, whence */
    CHECK_ERR(MPI_File_read(fh, buf, -1, MPI_INT, &st), MPI_ERR_COUNT, "MPI_File_read");
    CHECK_ERR(MPI_File_read_c(fh, buf, (MPI_Count)-5, MPI_INT, &st), MPI_ERR_COUNT, "MPI_File_read_c");
    CHECK_ERR(MPI_File_read(fh, buf, 1, MPI_DATATYPE_NULL, &st), MPI_ERR_TYPE, "MPI_File_read");
    MPI_Datatype uncommitted;
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);
    CHECK_ERR(MPI_File_read(fh, buf, 1, uncommitted, &st), MPI_ERR_TYPE, "MPI_File_read");
    MPI_Type_free(&uncommitted);
    CHECK_ERR(MPI_File_read(fh, NULL, 4, MPI_INT, &st), MPI_ERR_BUFFER, "MPI_File_read");
    CHECK_ERR(MPI_File_read_at(fh, -4, buf, 1, MPI_INT, &st), MPI_ERR_ARG, "MPI_File_read_at");
    CHECK_ERR(MPI_File_seek(fh, -4, MPI_SEEK_SET), MPI_ERR_ARG, "MPI_File_seek");
    CHECK_ERR(MPI_File_seek(fh, 0, 12345), MPI_ERR_ARG, "MPI_File_seek");
    CHECK_ERR(MPI_File_seek_shared(fh, 0, 12345), MPI_ERR_ARG, "MPI_File_seek_shared");
    /* data not a whole number of etypes */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    CHECK_ERR(MPI_File_read(fh, buf, 3, MPI_SHORT, &st), MPI_ERR_TYPE, "MPI_File_read");
    MPI_Request req = MPI_REQUEST_NULL;
    CHECK_ERR(MPI_File_iread(fh, buf, -1, MPI_INT, &req), MPI_ERR_COUNT, "MPI_File_iread");
    CHECK(req == MPI_REQUEST_NULL, "a failed iread made a request");
    CHECK_ERR(MPI_File_set_atomicity(MPI_FILE_NULL, 1), MPI_ERR_FILE, "MPI_File_set_atomicity");
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- write-only file: reads refused ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    CHECK_ERR(MPI_File_read(fh, buf, 1, MPI_INT, &st), MPI_ERR_ACCESS, "MPI_File_read");
    CHECK_ERR(MPI_File_read_shared(fh, buf, 1, MPI_INT, &st), MPI_ERR_ACCESS, "MPI_File_read_shared");
    CHECK_ERR(MPI_File_iread_at(fh, 0, buf, 1, MPI_INT, &req), MPI_ERR_ACCESS, "MPI_File_iread_at");
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- SEQUENTIAL: only the shared pointer ---- */
    const char *seq = io_path("seq");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, seq, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL,
                            MPI_INFO_NULL, &fh));
    CHECK_ERR(MPI_File_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_seek");
    CHECK_ERR(MPI_File_write_at(fh, 0, buf, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_write_at");
    CHECK_ERR(MPI_File_write(fh, buf, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_write");
    CHECK_MPI(MPI_File_write_ordered(fh, buf, 2, MPI_INT, &st));
    /* MPI_DISPLACEMENT_CURRENT: the view starts where the shared pointer is */
    CHECK_MPI(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Offset disp = -1;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_MPI(MPI_File_get_view(fh, &disp, &et, &ft, rep));
    CHECK(disp == (MPI_Offset)size * 2 * (MPI_Offset)sizeof(int), "DISPLACEMENT_CURRENT gave %lld", (long long)disp);
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- user handlers: on a file, and on MPI_FILE_NULL for open ---- */
    MPI_Errhandler mine;
    CHECK_MPI(MPI_File_create_errhandler(on_error, &mine));
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "a new file's handler is not the default");
    CHECK_MPI(MPI_File_set_errhandler(fh, mine));
    int rc = MPI_File_write(fh, buf, 1, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS && calls == 1 && last_file == fh && last_class == MPI_ERR_READ_ONLY,
          "the file's handler: rc %d, %d calls, class %d", rc, calls, last_class);
    CHECK_MPI(MPI_File_call_errhandler(fh, MPI_ERR_IO));
    CHECK(calls == 2 && last_class == MPI_ERR_IO, "call_errhandler: %d calls, class %d", calls, last_class);
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, mine));
    rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS && calls == 3 && last_file == MPI_FILE_NULL && last_class == MPI_ERR_NO_SUCH_FILE,
          "open's error on MPI_FILE_NULL's handler: %d calls, class %d", calls, last_class);
    /* new files inherit it */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_Errhandler got;
    CHECK_MPI(MPI_File_get_errhandler(fh, &got));
    CHECK(got == mine, "a new file did not get MPI_FILE_NULL's handler");
    MPI_Errhandler_free(&got);
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_free(&mine));
    MPI_Errhandler comm_eh;
    MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)(void (*)(void))on_error, &comm_eh);
    CHECK_ERR(MPI_File_set_errhandler(MPI_FILE_NULL, comm_eh), MPI_ERR_ARG, "MPI_File_set_errhandler");
    MPI_Errhandler_free(&comm_eh);

    const char *names[] = { "data", "seq" };
    io_dir_remove(MPI_COMM_WORLD, names, 2);
}
