/*
 * MPI-IO (MPI_File_*) over POSIX files: every process opens the file itself
 * and moves its own data with pread / pwrite; views are flattened once into
 * byte runs; the shared file pointer lives in a hidden companion file
 * updated under fcntl locks. docs/io.md has the design.
 */
#ifndef HASHI_MPI_IO_H
#define HASHI_MPI_IO_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/mpi_impl.h"

struct MPI_ABI_Info;
struct MPI_ABI_Datatype;

/* One run of the filetype: `len` bytes at `off` from the start of a
 * filetype instance, and `end`, the view bytes up to its end. */
struct io_run {
    MPI_Offset off, len, end;
};

/* What the last split collective (MPI_File_*_begin) did, for its _end. */
struct io_split {
    int active;                 /* a _begin is waiting for its _end */
    int is_write, where;        /* which kind began (the _end must match) */
    const void *buf;            /* the _end's buf must be the same */
    MPI_Status status;
};

/* A data representation other than native / internal (datarep.c). */
struct io_datarep {
    char name[MPI_MAX_DATAREP_STRING];
    int external32;                 /* the built-in one: Pack_external */
    int large;                      /* registered by MPI_Register_datarep_c */
    MPI_Datarep_conversion_function *read, *write;
    MPI_Datarep_conversion_function_c *read_c, *write_c;
    MPI_Datarep_extent_function *extent_fn;
    void *extra_state;
    struct io_datarep *next;
};

struct hashi_file {
    struct MPI_ABI_File h;      /* first: handles point here */
    struct MPI_ABI_Comm *comm;  /* private communicator over the group */
    int fd;
    int amode;
    int atomic;                 /* MPI_File_set_atomicity */
    char *path;                 /* as opened (prefix removed) */
    struct MPI_ABI_Info *info;  /* the hints in use (get_info's answer) */
    size_t chunk;               /* bounce buffer bytes (hint cb_buffer_size) */

    /* The view. */
    MPI_Offset disp;
    MPI_Datatype etype_handle, filetype_handle;
    struct MPI_ABI_Datatype *etype, *filetype;    /* retained */
    MPI_Offset etype_size;
    MPI_Offset ft_size, ft_extent;  /* data bytes and extent of one filetype */
    struct io_run *runs;            /* one filetype instance's runs, coalesced */
    MPI_Count nruns;
    char datarep[MPI_MAX_DATAREP_STRING];
    const struct io_datarep *rep;   /* NULL: native / internal (datarep.c) */

    MPI_Offset pos;             /* individual file pointer, in etypes */

    /* The shared file pointer's companion file (shared.c). */
    int shared_fd;              /* -1: could not be created (shared_errno says why) */
    int shared_errno;
    char *shared_path;          /* removed by rank 0 at close */

    struct io_split split;
    struct hashi_file *prev, *next;     /* the open files (file.c) */
};

/* ---- file.c ---- */
/* The file behind a handle, or NULL with MPI_ERR_FILE raised in *rc. */
struct hashi_file *io_file_arg(const char *func, MPI_File fh, int *rc);
/* The error class for an errno from a POSIX call on a file. */
int io_errno_class(int err);
/* Allreduce (MAX) of an error class over the file's group: everyone learns
 * whether any member failed. MPI_SUCCESS or the largest class. */
int io_agree(struct MPI_ABI_Comm *comm, int cls);
/* MPI_Finalize, after every process stopped communicating: close what the
 * program left open (companion files and MPI_MODE_DELETE_ON_CLOSE files
 * removed by rank 0 as at MPI_File_close), without communicating. */
void io_close_left_open(void);

/* ---- view.c ---- */
/* The default view: displacement 0, MPI_BYTE etype and filetype, native. */
int io_view_default(struct hashi_file *f);
void io_view_release(struct hashi_file *f);
/* The view is one run covering its filetype's extent (plain offsets). */
int io_view_is_dense(const struct hashi_file *f);
/* Where view byte `vbyte` lies: the filetype instance (*inst), the run
 * (returned) and the bytes into that run (*within). */
MPI_Count io_view_locate(const struct hashi_file *f, MPI_Offset vbyte, MPI_Offset *inst, MPI_Offset *within);
/* The file offset of view byte `vbyte` (data bytes from the view's start). */
MPI_Offset io_view_file_offset(const struct hashi_file *f, MPI_Offset vbyte);
/* The view bytes that lie before file offset `offset` (at the end of file:
 * what a reader of the view finds there). */
MPI_Offset io_view_bytes_before(const struct hashi_file *f, MPI_Offset offset);
/* Views keep the native layout whatever the representation: they take
 * only types whose file size is their native size (external32: not
 * MPI_LONG, MPI_WCHAR ...). MPI_SUCCESS, or the error class with *why set. */
int io_rep_check_type(const struct io_datarep *rep, const struct MPI_ABI_Datatype *t, const char **why);
/* The new value of a file pointer now at `current` (etypes) after a seek:
 * 0, an errno (from fstat), or -1 with *why set when the arguments are wrong. */
int io_seek_target(struct hashi_file *f, MPI_Offset current, MPI_Offset offset, int whence, MPI_Offset *target,
                   const char **why);

/* ---- rw.c ---- */
/* The kinds of positioning of a data access. */
enum io_where { IO_AT, IO_INDIVIDUAL, IO_SHARED, IO_ORDERED };
/*
 * One data access as every MPI_File read / write form describes it: check the
 * arguments, move the data (collectives are no different from independent
 * accesses here, except IO_ORDERED), fill *status. Errors are raised on the
 * file. `offset` is used for IO_AT, in etypes.
 */
int io_access(const char *func, MPI_File fh, enum io_where where, MPI_Offset offset, void *buf,
              MPI_Count count, MPI_Datatype datatype, int is_write, MPI_Status *status);
/* Move `bytes` bytes of the stream of (buf, count, type) from stream
 * offset 0 at view byte `vbyte`; *moved gets the bytes moved (fewer than
 * asked for a read that reaches the end of file). 0 or an errno. */
int io_move(struct hashi_file *f, MPI_Offset vbyte, void *buf, MPI_Count count,
            const struct MPI_ABI_Datatype *type, MPI_Offset bytes, int is_write, MPI_Offset *moved);

/* ---- datarep.c ---- */
extern const struct io_datarep io_datarep_external32;
/* 1 when `name` is a data representation (*rep: NULL for native /
 * internal), else 0. */
int io_datarep_lookup(const char *name, const struct io_datarep **rep);
/* Bytes of one element of t in the file under rep (NULL: native); -1 when
 * the extent function failed (*extent_rc: its error). */
MPI_Count io_datarep_file_size(const struct io_datarep *rep, const struct MPI_ABI_Datatype *t, int *extent_rc);
/* rep converts in that direction (MPI_CONVERSION_FN_NULL: it does not). */
int io_datarep_has_conversion(const struct io_datarep *rep, int to_file);
/* count elements between memory (buf, datatype) and `bytes` packed file
 * bytes; MPI_SUCCESS or the conversion's error. */
int io_datarep_to_file(const struct io_datarep *rep, const void *buf, MPI_Count count, MPI_Datatype datatype,
                       char *filebuf, MPI_Offset bytes);
int io_datarep_from_file(const struct io_datarep *rep, void *buf, MPI_Count count, MPI_Datatype datatype,
                         char *filebuf, MPI_Offset bytes);

/* ---- shared.c ---- */
/* Create (rank 0) and open (everyone) the companion file: collective. */
int io_shared_open(struct hashi_file *f, MPI_Offset initial);
/* Close it; rank 0 removes it (collective). */
void io_shared_close(struct hashi_file *f);
/* Add `delta` etypes to the shared pointer under its lock; *old gets the
 * value before. 0 or an errno. */
int io_shared_fetch_add(struct hashi_file *f, MPI_Offset delta, MPI_Offset *old);
int io_shared_set(struct hashi_file *f, MPI_Offset value);

#endif
