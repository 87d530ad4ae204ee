/*
 * The shared file pointer, kept where every process can reach it without
 * any other process calling MPI: an 8-byte counter (etypes, native
 * byte order) in a hidden companion file next to the data file,
 *     <dir>/.<name>.hashi-shfp.<pid of rank 0>.<open number>
 * read and advanced under an exclusive fcntl lock. The name is unique per
 * open (rank 0's pid and counter are broadcast), so two opens of one file
 * do not share a pointer. The companion is created by the first process
 * that needs it (an empty one reads as 0), which costs nothing to programs
 * that never use the shared pointer and lets read-only directories work
 * for them; rank 0 removes it at close (MPI_MODE_DELETE_ON_CLOSE too).
 * Works across nodes on any file system with working POSIX locks (NFS with
 * lockd, Lustre, GPFS), as ROMIO's equivalent does.
 */
#include "mpi/io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi/comm.h"

static unsigned long long opens;   /* this process's MPI_File_open count */

static char *companion_name(const char *path, long long pid, long long serial)
{
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(path) + 64;
    char *name = malloc(n);
    if (name)
        snprintf(name, n, "%.*s.%s.hashi-shfp.%lld.%lld", dir_len, path, base, pid, serial);
    return name;
}

/* The companion's descriptor, opened (and created) on first use. */
static int companion_fd(struct hashi_file *f, int create, int *fd)
{
    if (f->shared_fd < 0) {
        /* 0600: the pointer is the job's own, never another user's to move. */
        f->shared_fd = open(f->shared_path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
        if (f->shared_fd < 0)
            return errno;
    }
    *fd = f->shared_fd;
    return 0;
}

static int lock_counter(int fd, short type)
{
    struct flock lk = { 0 };
    lk.l_type = type;
    lk.l_whence = SEEK_SET;
    lk.l_start = 0;
    lk.l_len = sizeof(int64_t);
    while (fcntl(fd, F_SETLKW, &lk) != 0)
        if (errno != EINTR)
            return errno;
    return 0;
}

static int read_counter(int fd, int64_t *value)
{
    int64_t v = 0;
    ssize_t r = pread(fd, &v, sizeof v, 0);
    if (r < 0)
        return errno;
    *value = r == (ssize_t)sizeof v ? v : 0;   /* new and empty: 0 */
    return 0;
}

static int write_counter(int fd, int64_t value)
{
    ssize_t r = pwrite(fd, &value, sizeof value, 0);
    return r == (ssize_t)sizeof value ? 0 : r < 0 ? errno : EIO;
}

int io_shared_fetch_add(struct hashi_file *f, MPI_Offset delta, MPI_Offset *old)
{
    int fd = -1;
    int err = companion_fd(f, 1, &fd);
    if (err)
        return err;
    if ((err = lock_counter(fd, F_WRLCK)) != 0)
        return err;
    int64_t value = 0;
    err = read_counter(fd, &value);
    if (!err && delta)
        err = write_counter(fd, value + delta);
    int unlock_err = lock_counter(fd, F_UNLCK);
    *old = value;
    return err ? err : unlock_err;
}

int io_shared_set(struct hashi_file *f, MPI_Offset value)
{
    int fd = -1;
    /* No companion yet reads as 0 already. */
    int err = companion_fd(f, value != 0, &fd);
    if (err)
        return err == ENOENT && value == 0 ? 0 : err;
    if ((err = lock_counter(fd, F_WRLCK)) != 0)
        return err;
    err = write_counter(fd, value);
    int unlock_err = lock_counter(fd, F_UNLCK);
    return err ? err : unlock_err;
}

int io_shared_open(struct hashi_file *f, MPI_Offset initial)
{
    long long id[2] = { (long long)getpid(), (long long)opens++ };
    int rc = hashi_impl_Bcast(id, 2, MPI_LONG_LONG, 0, hashi_comm_handle(f->comm));
    if (rc != MPI_SUCCESS)
        return rc;
    f->shared_path = companion_name(f->path, id[0], id[1]);
    int err = !f->shared_path ? ENOMEM : f->comm->rank == 0 && initial ? io_shared_set(f, initial) : 0;
    int all = io_agree(f->comm, err ? io_errno_class(err) : MPI_SUCCESS);
    if (all != MPI_SUCCESS) {
        if (f->shared_fd >= 0)
            close(f->shared_fd);
        if (f->comm->rank == 0 && f->shared_path)
            unlink(f->shared_path);
        return hashi_err_raise("MPI_File_open", HASHI_OBJ_FILE, MPI_FILE_NULL, all,
                               "cannot set up the shared file pointer%s%s", err ? ": " : "", err ? strerror(err) : "");
    }
    return MPI_SUCCESS;
}

void io_shared_close(struct hashi_file *f)
{
    if (f->shared_fd >= 0)
        close(f->shared_fd);
    f->shared_fd = -1;
    if (f->comm->rank == 0 && f->shared_path)
        unlink(f->shared_path);   /* ENOENT: it was never needed */
}

static int get_shared(const char *func, MPI_File fh, struct hashi_file **out)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    *out = f;
    return f ? MPI_SUCCESS : rc;
}

int hashi_impl_File_get_position_shared(MPI_File fh, MPI_Offset *offset)
{
    static const char func[] = "MPI_File_get_position_shared";
    struct hashi_file *f;
    int rc = get_shared(func, fh, &f);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!offset)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "offset is NULL");
    int err = io_shared_fetch_add(f, 0, offset);
    if (err)
        return hashi_err_file(func, fh, io_errno_class(err), "the shared file pointer ('%s'): %s", f->shared_path,
                              strerror(err));
    return MPI_SUCCESS;
}

int hashi_impl_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence)
{
    static const char func[] = "MPI_File_seek_shared";
    struct hashi_file *f;
    int rc = get_shared(func, fh, &f);
    if (rc != MPI_SUCCESS)
        return rc;
    /* Collective, with the same arguments everywhere: rank 0 moves it. */
    long long args[4] = { offset, whence, -(long long)offset, -(long long)whence }, agreed[4];
    rc = hashi_impl_Allreduce(args, agreed, 4, MPI_LONG_LONG, MPI_MAX, hashi_comm_handle(f->comm));
    if (rc != MPI_SUCCESS)
        return rc;
    if (agreed[0] != -agreed[2] || agreed[1] != -agreed[3])
        return hashi_err_file(func, fh, MPI_ERR_NOT_SAME, "the processes gave different offsets or whence");
    const char *why = NULL;
    int err = 0;
    if (f->comm->rank == 0) {
        MPI_Offset current = 0, target = 0;
        err = whence == MPI_SEEK_CUR ? io_shared_fetch_add(f, 0, &current) : 0;
        if (!err)
            err = io_seek_target(f, current, offset, whence, &target, &why);
        if (!err)
            err = io_shared_set(f, target);
    } else if (whence != MPI_SEEK_SET && whence != MPI_SEEK_CUR && whence != MPI_SEEK_END) {
        err = -1;
        why = "whence is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END";
    }
    int all = io_agree(f->comm, err < 0 ? MPI_ERR_ARG : err ? io_errno_class(err) : MPI_SUCCESS);
    if (all != MPI_SUCCESS)
        return hashi_err_file(func, fh, all, "%s (offset %lld, whence %d)",
                              err < 0 ? why : err ? strerror(err) : "the seek failed on rank 0", (long long)offset, whence);
    return MPI_SUCCESS;
}
