/*
 * File handles: MPI_File_open / close / delete, size, sync, group, access
 * mode, hints and atomicity. Every process opens the file itself; rank 0
 * creates it first (so MPI_MODE_EXCL means what it says) and the group
 * agrees on the outcome, so either every member has the file open or none
 * has (docs/io.md).
 */
#include "mpi/io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <threads.h>
#include <unistd.h>

#include "mpi/comm.h"
#include "mpi/handles.h"
#include "mpi/info.h"

/* Bounce buffer bytes for non-contiguous accesses unless cb_buffer_size says. */
#define IO_DEFAULT_CHUNK ((size_t)4 << 20)

struct hashi_file *io_file_arg(const char *func, MPI_File fh, int *rc)
{
    struct MPI_ABI_File *h = hashi_file_get(fh);
    if (!h) {
        *rc = hashi_err_raise(func, HASHI_OBJ_FILE, MPI_FILE_NULL, MPI_ERR_FILE,
                              fh == MPI_FILE_NULL ? "the file is MPI_FILE_NULL" : "not a valid file handle");
        return NULL;
    }
    return (struct hashi_file *)h;
}

int io_errno_class(int err)
{
    switch (err) {
    case ENOENT: case ENOTDIR: return MPI_ERR_NO_SUCH_FILE;
    case EACCES: case EPERM: return MPI_ERR_ACCESS;
    case EEXIST: return MPI_ERR_FILE_EXISTS;
    case EROFS: return MPI_ERR_READ_ONLY;
    case ENOSPC: case EFBIG: return MPI_ERR_NO_SPACE;
    case EDQUOT: return MPI_ERR_QUOTA;
    case ENAMETOOLONG: case EISDIR: case ELOOP: return MPI_ERR_BAD_FILE;
    case ETXTBSY: case EBUSY: return MPI_ERR_FILE_IN_USE;
    default: return MPI_ERR_IO;
    }
}

int io_agree(struct MPI_ABI_Comm *comm, int cls)
{
    int all = cls;
    int rc = hashi_impl_Allreduce(&cls, &all, 1, MPI_INT, MPI_MAX, hashi_comm_handle(comm));
    return rc != MPI_SUCCESS ? rc : all;
}

/* "ufs:/path" and "nfs:/path" name the file system as ROMIO allows; a
 * POSIX path needs no prefix. */
static const char *strip_prefix(const char *name)
{
    static const char *const prefixes[] = { "ufs:", "nfs:", "posix:" };
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return name + strlen(prefixes[i]);
    return name;
}

static const char *amode_problem(int amode)
{
    const int known = MPI_MODE_RDONLY | MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL |
                      MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN | MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND;
    int access = !!(amode & MPI_MODE_RDONLY) + !!(amode & MPI_MODE_RDWR) + !!(amode & MPI_MODE_WRONLY);
    if (amode & ~known)
        return "amode has bits that are no MPI_MODE_* constant";
    if (access != 1)
        return "amode needs exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR and MPI_MODE_WRONLY";
    if ((amode & MPI_MODE_RDONLY) && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
        return "MPI_MODE_RDONLY cannot be combined with MPI_MODE_CREATE or MPI_MODE_EXCL";
    if ((amode & MPI_MODE_RDWR) && (amode & MPI_MODE_SEQUENTIAL))
        return "MPI_MODE_RDWR cannot be combined with MPI_MODE_SEQUENTIAL";
    return NULL;
}

/* The hints a file honours, from the user's info: cb_buffer_size (the
 * bounce buffer of non-contiguous accesses) and file_perm (at creation).
 * Others are ignored, as the standard allows. 0, or -1 out of memory. */
static int apply_hints(struct hashi_file *f, const struct MPI_ABI_Info *given)
{
    const char *v = given ? hashi_info_value(given, "cb_buffer_size") : NULL;
    if (v) {
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end == '\0' && n >= 4096 && n <= ((size_t)1 << 30))
            f->chunk = (size_t)n;
    }
    char text[32];
    snprintf(text, sizeof text, "%zu", f->chunk);
    if (hashi_info_put(f->info, "cb_buffer_size", text) != 0)
        return -1;
    v = given ? hashi_info_value(given, "file_perm") : NULL;
    if (v && hashi_info_put(f->info, "file_perm", v) != 0)
        return -1;
    return 0;
}

static mode_t create_perm(const struct MPI_ABI_Info *given)
{
    const char *v = given ? hashi_info_value(given, "file_perm") : NULL;
    if (v) {
        char *end;
        unsigned long n = strtoul(v, &end, 8);
        if (*end == '\0' && n <= 07777)
            return (mode_t)n;
    }
    return 0666;   /* less the umask, as open(2) does */
}

/* The open files, for MPI_Finalize (io_close_left_open). */
static struct hashi_file *open_files;
static mtx_t open_files_lock;
static once_flag open_files_once = ONCE_FLAG_INIT;

static void open_files_init(void)
{
    mtx_init(&open_files_lock, mtx_plain);
}

static void open_files_link(struct hashi_file *f)
{
    call_once(&open_files_once, open_files_init);
    mtx_lock(&open_files_lock);
    f->prev = NULL;
    f->next = open_files;
    if (open_files)
        open_files->prev = f;
    open_files = f;
    mtx_unlock(&open_files_lock);
}

static void open_files_unlink(struct hashi_file *f)
{
    mtx_lock(&open_files_lock);
    if (f->prev)
        f->prev->next = f->next;
    else
        open_files = f->next;
    if (f->next)
        f->next->prev = f->prev;
    mtx_unlock(&open_files_lock);
}

static void file_free(struct hashi_file *f)
{
    if (!f)
        return;
    io_view_release(f);
    if (f->info)
        hashi_info_destroy(f->info);
    hashi_errhandler_release(f->h.errhandler);
    hashi_comm_release(f->comm);
    f->h.magic = 0;
    hashi_handle_forget(&f->h);
    free(f->path);
    free(f->shared_path);
    free(f);
}

int hashi_impl_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    static const char func[] = "MPI_File_open";
    HASHI_CHECK_INITIALIZED(func);
#define OPEN_ERR(code, ...) hashi_err_raise(func, HASHI_OBJ_FILE, MPI_FILE_NULL, (code), __VA_ARGS__)
    struct MPI_ABI_Comm *parent = hashi_comm_get(comm);
    if (!parent)
        return OPEN_ERR(MPI_ERR_COMM, comm == MPI_COMM_NULL ? "comm is MPI_COMM_NULL" : "comm is not a valid communicator");
    if (hashi_comm_is_inter(parent))
        return OPEN_ERR(MPI_ERR_COMM, "comm is an intercommunicator; files need an intracommunicator");
    if (!fh)
        return OPEN_ERR(MPI_ERR_ARG, "fh is NULL");
    if (!filename)
        return OPEN_ERR(MPI_ERR_BAD_FILE, "filename is NULL");
    const char *problem = amode_problem(amode);
    if (problem)
        return OPEN_ERR(MPI_ERR_AMODE, "%s (amode 0x%x)", problem, (unsigned)amode);
    if (info != MPI_INFO_NULL && !hashi_info_get(info))
        return OPEN_ERR(MPI_ERR_INFO, "info is not a valid info object");
    const char *path = strip_prefix(filename);
    if (!*path)
        return OPEN_ERR(MPI_ERR_BAD_FILE, "the file name is empty");

    struct MPI_ABI_Comm *c;
    int rc = hashi_comm_create_from(func, parent, 1, NULL, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    snprintf(c->name, sizeof c->name, "%s", "a file's communicator");
    MPI_Comm ch = hashi_comm_handle(c);

    /* The standard requires the same amode everywhere: check it. */
    int modes[2] = { amode, -amode }, agreed[2];
    rc = hashi_impl_Allreduce(modes, agreed, 2, MPI_INT, MPI_MAX, ch);
    if (rc != MPI_SUCCESS) {
        hashi_comm_release(c);
        return rc;
    }
    if (agreed[0] != -agreed[1]) {
        hashi_comm_release(c);
        return OPEN_ERR(MPI_ERR_NOT_SAME, "the processes gave different amodes (this one 0x%x)", (unsigned)amode);
    }

    int flags = (amode & MPI_MODE_RDONLY) ? O_RDONLY : (amode & MPI_MODE_WRONLY) ? O_WRONLY : O_RDWR;
    flags |= O_CLOEXEC;
    int create_flags = (amode & MPI_MODE_CREATE ? O_CREAT : 0) | (amode & MPI_MODE_EXCL ? O_EXCL : 0);
    struct MPI_ABI_Info *given = info != MPI_INFO_NULL ? hashi_info_get(info) : NULL;
    mode_t perm = create_perm(given);
    /* Rank 0 creates, then the others open what exists. */
    int fd = -1, err = 0;
    if (c->rank == 0) {
        fd = open(path, flags | create_flags, perm);
        err = fd < 0 ? errno : 0;
    }
    int first = io_agree(c, c->rank == 0 && fd < 0 ? io_errno_class(err) : MPI_SUCCESS);
    if (first == MPI_SUCCESS && c->rank != 0) {
        fd = open(path, flags, perm);
        err = fd < 0 ? errno : 0;
    }
    int all = first == MPI_SUCCESS ? io_agree(c, fd < 0 ? io_errno_class(err) : MPI_SUCCESS) : first;

    struct hashi_file *f = NULL;
    if (all == MPI_SUCCESS) {
        f = calloc(1, sizeof *f);
        if (f) {
            f->comm = c;
            f->fd = fd;
            f->shared_fd = -1;
            f->amode = amode;
            f->chunk = IO_DEFAULT_CHUNK;
            f->path = strdup(path);
            f->info = hashi_info_copy(NULL);
            f->h.errhandler = hashi_errhandler_file_default();
        }
        int local = !f || !f->path || !f->info || apply_hints(f, given) != 0 || io_view_default(f) != 0
                        ? MPI_ERR_NO_MEM : MPI_SUCCESS;
        all = io_agree(c, local);
    }
    if (all != MPI_SUCCESS) {
        if (fd >= 0)
            close(fd);
        if (f)
            file_free(f);
        else
            hashi_comm_release(c);
        if (all == MPI_ERR_NO_MEM)
            return OPEN_ERR(all, "out of memory (on some process)");
        if (err)
            return OPEN_ERR(all, "cannot open '%s': %s", path, strerror(err));
        return OPEN_ERR(all, "another process could not open '%s'", path);
    }
    f->h.magic = HASHI_FILE_MAGIC;
    MPI_Offset initial = 0;
    if (amode & MPI_MODE_APPEND) {
        /* Both file pointers start at the end of the file. */
        struct stat st;
        if (fstat(fd, &st) == 0)
            initial = st.st_size;
        f->pos = initial;
    }
    rc = io_shared_open(f, initial);
    if (rc != MPI_SUCCESS) {
        close(fd);
        file_free(f);
        return rc;
    }
    open_files_link(f);
    *fh = &f->h;
    return MPI_SUCCESS;
#undef OPEN_ERR
}

void io_close_left_open(void)
{
    if (!open_files)
        return;
    while (open_files) {
        struct hashi_file *f = open_files;
        open_files = f->next;
        close(f->fd);
        io_shared_close(f);
        if (f->comm->rank == 0 && (f->amode & MPI_MODE_DELETE_ON_CLOSE))
            unlink(f->path);
        file_free(f);
    }
}

int hashi_impl_File_close(MPI_File *fh)
{
    static const char func[] = "MPI_File_close";
    HASHI_CHECK_INITIALIZED(func);
    if (!fh)
        return hashi_err_raise(func, HASHI_OBJ_FILE, MPI_FILE_NULL, MPI_ERR_ARG, "fh is NULL");
    int rc;
    struct hashi_file *f = io_file_arg(func, *fh, &rc);
    if (!f)
        return rc;
    if (f->split.active)
        return hashi_err_file(func, *fh, MPI_ERR_OTHER, "a split collective (MPI_File_*_begin) has no _end yet");
    /* Everyone has finished with the file before it can go. */
    rc = hashi_comm_barrier(f->comm);
    int err = close(f->fd) != 0 ? errno : 0;
    io_shared_close(f);
    if (f->comm->rank == 0 && (f->amode & MPI_MODE_DELETE_ON_CLOSE) && unlink(f->path) != 0 && !err)
        err = errno;
    /* Nobody reopens it before it is deleted. */
    if (f->amode & MPI_MODE_DELETE_ON_CLOSE)
        hashi_comm_barrier(f->comm);
    char path[256];
    snprintf(path, sizeof path, "%s", f->path);
    open_files_unlink(f);
    file_free(f);
    *fh = MPI_FILE_NULL;
    if (err)
        return hashi_err_raise(func, HASHI_OBJ_FILE, MPI_FILE_NULL, io_errno_class(err), "closing '%s': %s",
                               path, strerror(err));
    return rc;
}

int hashi_impl_File_delete(const char *filename, MPI_Info info)
{
    static const char func[] = "MPI_File_delete";
    HASHI_CHECK_INITIALIZED(func);
    if (!filename)
        return hashi_err_raise(func, HASHI_OBJ_FILE, MPI_FILE_NULL, MPI_ERR_BAD_FILE, "filename is NULL");
    if (info != MPI_INFO_NULL && !hashi_info_get(info))
        return hashi_err_raise(func, HASHI_OBJ_FILE, MPI_FILE_NULL, MPI_ERR_INFO, "info is not a valid info object");
    const char *path = strip_prefix(filename);
    if (unlink(path) != 0) {
        int err = errno;
        return hashi_err_raise(func, HASHI_OBJ_FILE, MPI_FILE_NULL, io_errno_class(err), "cannot delete '%s': %s",
                               path, strerror(err));
    }
    return MPI_SUCCESS;
}

/* set_size and preallocate: rank 0 changes the file, the group agrees. */
static int resize(const char *func, MPI_File fh, MPI_Offset size, int grow_only)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (size < 0)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "size %lld is negative", (long long)size);
    if (f->amode & MPI_MODE_RDONLY)
        return hashi_err_file(func, fh, MPI_ERR_READ_ONLY, "the file was opened MPI_MODE_RDONLY");
    if (!grow_only && (f->amode & MPI_MODE_SEQUENTIAL))
        return hashi_err_file(func, fh, MPI_ERR_UNSUPPORTED_OPERATION,
                              "the file was opened MPI_MODE_SEQUENTIAL: its size cannot be set");
    /* The same size everywhere; and no process is still using the old
     * size when rank 0 changes it. */
    long long sizes[2] = { size, -size }, agreed[2];
    int rc2 = hashi_impl_Allreduce(sizes, agreed, 2, MPI_LONG_LONG, MPI_MAX, hashi_comm_handle(f->comm));
    if (rc2 != MPI_SUCCESS)
        return rc2;
    if (agreed[0] != -agreed[1])
        return hashi_err_file(func, fh, MPI_ERR_NOT_SAME, "the processes gave different sizes (this one %lld)",
                              (long long)size);
    int err = 0;
    if (f->comm->rank == 0) {
        struct stat st;
        if (fstat(f->fd, &st) != 0)
            err = errno;
        else if (!grow_only)
            err = ftruncate(f->fd, size) != 0 ? errno : 0;
        else if (size > st.st_size) {
            err = posix_fallocate(f->fd, 0, size);
            /* A file system without preallocation: the size at least. */
            if (err == EOPNOTSUPP || err == EINVAL)
                err = ftruncate(f->fd, size) != 0 ? errno : 0;
        }
    }
    int all = io_agree(f->comm, err ? io_errno_class(err) : MPI_SUCCESS);
    if (all != MPI_SUCCESS)
        return hashi_err_file(func, fh, all, "%s to %lld bytes failed%s%s", grow_only ? "preallocating" : "resizing",
                              (long long)size, err ? ": " : " on rank 0", err ? strerror(err) : "");
    return MPI_SUCCESS;
}

int hashi_impl_File_set_size(MPI_File fh, MPI_Offset size)
{
    return resize("MPI_File_set_size", fh, size, 0);
}

int hashi_impl_File_preallocate(MPI_File fh, MPI_Offset size)
{
    return resize("MPI_File_preallocate", fh, size, 1);
}

int hashi_impl_File_get_size(MPI_File fh, MPI_Offset *size)
{
    static const char func[] = "MPI_File_get_size";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!size)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "size is NULL");
    struct stat st;
    if (fstat(f->fd, &st) != 0)
        return hashi_err_file(func, fh, io_errno_class(errno), "fstat: %s", strerror(errno));
    *size = st.st_size;
    return MPI_SUCCESS;
}

int hashi_impl_File_sync(MPI_File fh)
{
    static const char func[] = "MPI_File_sync";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    int err = fsync(f->fd) != 0 ? errno : 0;
    /* Collective: after it, every process's writes are visible to all. */
    rc = hashi_comm_barrier(f->comm);
    if (err)
        return hashi_err_file(func, fh, io_errno_class(err), "fsync: %s", strerror(err));
    return rc;
}

int hashi_impl_File_get_group(MPI_File fh, MPI_Group *group)
{
    static const char func[] = "MPI_File_get_group";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!group)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "group is NULL");
    hashi_group_retain(f->comm->group);
    *group = hashi_group_handle(f->comm->group);
    return MPI_SUCCESS;
}

int hashi_impl_File_get_amode(MPI_File fh, int *amode)
{
    static const char func[] = "MPI_File_get_amode";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!amode)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "amode is NULL");
    *amode = f->amode;
    return MPI_SUCCESS;
}

int hashi_impl_File_set_info(MPI_File fh, MPI_Info info)
{
    static const char func[] = "MPI_File_set_info";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (info != MPI_INFO_NULL && !hashi_info_get(info))
        return hashi_err_file(func, fh, MPI_ERR_INFO, "info is not a valid info object");
    if (info != MPI_INFO_NULL && apply_hints(f, hashi_info_get(info)) != 0)
        return hashi_err_file(func, fh, MPI_ERR_NO_MEM, "out of memory");
    return MPI_SUCCESS;
}

int hashi_impl_File_get_info(MPI_File fh, MPI_Info *info_used)
{
    static const char func[] = "MPI_File_get_info";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!info_used)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "info_used is NULL");
    struct MPI_ABI_Info *out = hashi_info_copy(f->info);
    if (!out)
        return hashi_err_file(func, fh, MPI_ERR_NO_MEM, "out of memory");
    *info_used = out;
    return MPI_SUCCESS;
}

int hashi_impl_File_set_atomicity(MPI_File fh, int flag)
{
    static const char func[] = "MPI_File_set_atomicity";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    int mine[2] = { !!flag, -!!flag }, agreed[2];
    rc = hashi_impl_Allreduce(mine, agreed, 2, MPI_INT, MPI_MAX, hashi_comm_handle(f->comm));
    if (rc != MPI_SUCCESS)
        return rc;
    if (agreed[0] != -agreed[1])
        return hashi_err_file(func, fh, MPI_ERR_NOT_SAME, "the processes gave different flags (this one %d)", flag);
    f->atomic = !!flag;
    return MPI_SUCCESS;
}

int hashi_impl_File_get_atomicity(MPI_File fh, int *flag)
{
    static const char func[] = "MPI_File_get_atomicity";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!flag)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "flag is NULL");
    *flag = f->atomic;
    return MPI_SUCCESS;
}
