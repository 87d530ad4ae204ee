/*
 * Data access: every MPI_File read / write form (explicit offsets,
 * individual and shared pointers, collective, split collective,
 * nonblocking, the _c forms) funnels into io_access(), which checks the
 * arguments, finds where the access starts in the view and moves the data
 * with io_move().
 *
 * io_move() walks the view's byte runs for the stream range it is given,
 * merging runs that touch in the file, and does one pread / pwrite per
 * merged piece. Contiguous memory is used in place; anything else goes
 * through a bounce buffer (cb_buffer_size bytes) packed or unpacked by the
 * datatype engine. In atomic mode the whole file range of the access is
 * held under an fcntl lock (shared for reads, exclusive for writes), which
 * makes concurrent overlapping accesses sequentially consistent.
 *
 * Collective forms need no communication: each process moves its own data
 * (the standard's semantics allow it; there is no two-phase aggregation
 * yet). Nonblocking forms complete their I/O in the call, as ROMIO does on
 * POSIX file systems, and return a completed request carrying the status.
 */
#include "mpi/io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi/comm.h"
#include "mpi/datatype.h"
#include "mpi/request.h"

/* pread / pwrite all of n bytes (fewer only at the end of file). */
static int piece_io(int fd, char *mem, MPI_Offset off, MPI_Offset n, int is_write, MPI_Offset *done)
{
    MPI_Offset got = 0;
    while (got < n) {
        ssize_t r = is_write ? pwrite(fd, mem + got, (size_t)(n - got), off + got)
                             : pread(fd, mem + got, (size_t)(n - got), off + got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *done = got;
            return errno;
        }
        if (r == 0)
            break;   /* end of file (reads only) */
        got += r;
    }
    *done = got;
    return 0;
}

/* A merged piece waiting to be moved. */
struct pending {
    char *mem;
    MPI_Offset off, len;
};

/* Move `len` view bytes from view byte `vstart` to or from mem. */
static int view_move(struct hashi_file *f, MPI_Offset vstart, char *mem, MPI_Offset len, int is_write,
                     MPI_Offset *moved)
{
    *moved = 0;
    if (io_view_is_dense(f))
        return piece_io(f->fd, mem, io_view_file_offset(f, vstart), len, is_write, moved);
    MPI_Offset inst, within;
    MPI_Count j = io_view_locate(f, vstart, &inst, &within);
    struct pending p = { mem, 0, 0 };
    MPI_Offset done = 0;
    while (done < len) {
        const struct io_run *r = &f->runs[j];
        MPI_Offset k = r->len - within < len - done ? r->len - within : len - done;
        MPI_Offset off = f->disp + inst * f->ft_extent + r->off + within;
        if (p.len && off == p.off + p.len) {
            p.len += k;
        } else {
            if (p.len) {
                MPI_Offset got;
                int err = piece_io(f->fd, p.mem, p.off, p.len, is_write, &got);
                *moved += got;
                if (err || got < p.len)
                    return err;
            }
            p.mem = mem + done;
            p.off = off;
            p.len = k;
        }
        done += k;
        within = 0;
        if (++j == f->nruns) {
            j = 0;
            inst++;
        }
    }
    MPI_Offset got = 0;
    int err = p.len ? piece_io(f->fd, p.mem, p.off, p.len, is_write, &got) : 0;
    *moved += got;
    return err;
}

/* Atomic mode: an fcntl lock over the file range of the access. */
static int range_lock(struct hashi_file *f, MPI_Offset vbyte, MPI_Offset bytes, short type)
{
    struct flock lk = { 0 };
    lk.l_type = type;
    lk.l_whence = SEEK_SET;
    if (type != F_UNLCK || bytes > 0) {
        lk.l_start = io_view_file_offset(f, vbyte);
        lk.l_len = io_view_file_offset(f, vbyte + bytes - 1) + 1 - lk.l_start;
    }
    while (fcntl(f->fd, F_SETLKW, &lk) != 0)
        if (errno != EINTR)
            return errno;
    return 0;
}

int io_move(struct hashi_file *f, MPI_Offset vbyte, void *buf, MPI_Count count,
            const struct MPI_ABI_Datatype *type, MPI_Offset bytes, int is_write, MPI_Offset *moved)
{
    *moved = 0;
    if (bytes <= 0)
        return 0;
    int contig = hashi_type_is_contig_count(type, count);
    MPI_Offset chunk = contig || (MPI_Offset)f->chunk > bytes ? bytes : (MPI_Offset)f->chunk;
    char *bounce = NULL;
    if (!contig && !(bounce = malloc((size_t)chunk)))
        return ENOMEM;
    int err = f->atomic ? range_lock(f, vbyte, bytes, is_write ? F_WRLCK : F_RDLCK) : 0;
    for (MPI_Offset s = 0; !err && s < bytes;) {
        MPI_Offset len = bytes - s < chunk ? bytes - s : chunk;
        char *mem = contig ? (char *)buf + type->true_lb + s : bounce;
        if (!contig && is_write)
            hashi_type_pack(buf, count, type, (size_t)s, bounce, (size_t)len);
        MPI_Offset got = 0;
        err = view_move(f, vbyte + s, mem, len, is_write, &got);
        if (!contig && !is_write && got > 0)
            hashi_type_unpack(buf, count, type, (size_t)s, bounce, (size_t)got);
        s += got;
        *moved = s;
        if (got < len)
            break;
    }
    if (f->atomic) {
        int unlock_err = range_lock(f, vbyte, bytes, F_UNLCK);
        if (!err)
            err = unlock_err;
    }
    free(bounce);
    return err;
}

/* IO_ORDERED: where each process's data starts, in etypes: the shared
 * pointer, plus the sizes of the lower ranks' accesses. The pointer moves
 * once, by the total. 0, an errno, or -1 (a collective failed: *rc). */
static int ordered_start(struct hashi_file *f, MPI_Offset etypes, MPI_Offset *start, int *rc)
{
    struct MPI_ABI_Comm *c = f->comm;
    MPI_Comm ch = hashi_comm_handle(c);
    long long mine = etypes, before = 0, total = 0;
    *rc = hashi_impl_Exscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, ch);
    if (*rc == MPI_SUCCESS)
        *rc = hashi_impl_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, ch);
    if (*rc != MPI_SUCCESS)
        return -1;
    if (c->rank == 0)
        before = 0;   /* MPI_Exscan leaves rank 0's result undefined */
    long long base[2] = { 0, 0 };   /* the pointer, an errno */
    if (c->rank == 0) {
        MPI_Offset old = 0;
        base[1] = io_shared_fetch_add(f, total, &old);
        base[0] = old;
    }
    *rc = hashi_impl_Bcast(base, 2, MPI_LONG_LONG, 0, ch);
    if (*rc != MPI_SUCCESS)
        return -1;
    *start = base[0] + before;
    return (int)base[1];
}

/* A view in a converting representation: the data converted to or from
 * the file representation through a buffer of the whole access (the
 * layout is the native one, io_move). 0, an errno, or -1 with
 * *conversion_rc set when the conversion failed. */
static int converted_move(struct hashi_file *f, MPI_Offset vbyte, void *buf, MPI_Count count, MPI_Datatype datatype,
                          MPI_Offset bytes, int is_write, MPI_Offset *moved, int *conversion_rc)
{
    *moved = 0;
    if (bytes <= 0)
        return 0;
    struct MPI_ABI_Datatype *t = hashi_type_get(datatype);
    char *filebuf = malloc((size_t)bytes);
    if (!filebuf)
        return ENOMEM;
    int err = 0;
    if (is_write && (*conversion_rc = io_datarep_to_file(f->rep, buf, count, datatype, filebuf, bytes)) != MPI_SUCCESS)
        err = -1;
    if (!err)
        err = io_move(f, vbyte, filebuf, bytes, hashi_type_get(MPI_BYTE), bytes, is_write, moved);
    /* a short read: the whole elements that came */
    MPI_Count elements = *moved / t->size;
    if (!is_write && elements > 0) {
        int rc = io_datarep_from_file(f->rep, buf, elements, datatype, filebuf, elements * t->size);
        if (rc != MPI_SUCCESS && !err) {
            *conversion_rc = rc;
            err = -1;
        }
    }
    free(filebuf);
    return err;
}

int io_access(const char *func, MPI_File fh, enum io_where where, MPI_Offset offset, void *buf,
              MPI_Count count, MPI_Datatype datatype, int is_write, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (count < 0)
        return hashi_err_file(func, fh, MPI_ERR_COUNT, "count %lld is negative", (long long)count);
    const char *why = NULL;
    if ((rc = hashi_type_check(datatype, 1, &why)) != MPI_SUCCESS)
        return hashi_err_file(func, fh, rc, "%s", why ? why : "invalid datatype");
    struct MPI_ABI_Datatype *t = hashi_type_get(datatype);
    MPI_Offset bytes = (MPI_Offset)hashi_type_bytes(t, count);
    if (!buf && bytes > 0)
        return hashi_err_file(func, fh, MPI_ERR_BUFFER, "buf is NULL");
    if (is_write && (f->amode & MPI_MODE_RDONLY))
        return hashi_err_file(func, fh, MPI_ERR_READ_ONLY, "the file was opened MPI_MODE_RDONLY: it cannot be written");
    if (!is_write && (f->amode & MPI_MODE_WRONLY))
        return hashi_err_file(func, fh, MPI_ERR_ACCESS, "the file was opened MPI_MODE_WRONLY: it cannot be read");
    if ((f->amode & MPI_MODE_SEQUENTIAL) && (where == IO_AT || where == IO_INDIVIDUAL))
        return hashi_err_file(func, fh, MPI_ERR_UNSUPPORTED_OPERATION,
                              "the file was opened MPI_MODE_SEQUENTIAL: only the shared file pointer can be used");
    if (where == IO_AT && offset < 0)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "offset %lld is negative", (long long)offset);
    if (f->rep && (rc = io_rep_check_type(f->rep, t, &why)) != MPI_SUCCESS)
        return hashi_err_file(func, fh, rc, "the datatype in '%s': %s", f->datarep, why);
    if (bytes % f->etype_size)
        return hashi_err_file(func, fh, MPI_ERR_TYPE,
                              "%lld bytes of data are not a whole number of etypes (%lld bytes each)",
                              (long long)bytes, (long long)f->etype_size);
    MPI_Offset etypes = bytes / f->etype_size, start = 0;
    int err = 0;
    switch (where) {
    case IO_AT: start = offset; break;
    case IO_INDIVIDUAL: start = f->pos; break;
    case IO_SHARED: err = io_shared_fetch_add(f, etypes, &start); break;
    case IO_ORDERED:
        err = ordered_start(f, etypes, &start, &rc);
        if (err < 0)
            return rc;
        break;
    }
    if (err)
        return hashi_err_file(func, fh, io_errno_class(err), "the shared file pointer ('%s'): %s",
                              f->shared_path, strerror(err));
    MPI_Offset moved = 0;
    int conversion_rc = MPI_SUCCESS;
    if (io_datarep_has_conversion(f->rep, is_write))
        err = converted_move(f, start * f->etype_size, buf, count, datatype, bytes, is_write, &moved,
                             &conversion_rc);
    else
        err = io_move(f, start * f->etype_size, buf, count, t, bytes, is_write, &moved);
    if (where == IO_INDIVIDUAL)
        f->pos = start + moved / f->etype_size;
    if (status != MPI_STATUS_IGNORE) {
        hashi_status_set_empty(status);
        hashi_status_set_bytes(status, (uint64_t)moved);
    }
    if (err < 0)
        return hashi_err_file(func, fh, MPI_ERR_CONVERSION,
                              "the %s conversion function of data representation '%s' returned error %d (file '%s')",
                              is_write ? "write" : "read", f->datarep, conversion_rc, f->path);
    if (err)
        return hashi_err_file(func, fh, err == ENOMEM ? MPI_ERR_NO_MEM : io_errno_class(err), "%s '%s': %s",
                              is_write ? "writing" : "reading", f->path, strerror(err));
    return MPI_SUCCESS;
}

/* ---- nonblocking forms: done in the call, a completed request ---- */

static int done_query(void *extra, MPI_Status *status)
{
    *status = *(MPI_Status *)extra;
    return MPI_SUCCESS;
}

static int done_free(void *extra)
{
    free(extra);
    return MPI_SUCCESS;
}

static int io_nonblocking(const char *func, MPI_File fh, enum io_where where, MPI_Offset offset, void *buf,
                          MPI_Count count, MPI_Datatype datatype, int is_write, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED(func);
    if (!request)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "request is NULL");
    MPI_Status *st = malloc(sizeof *st);
    if (!st)
        return hashi_err_file(func, fh, MPI_ERR_NO_MEM, "out of memory");
    int rc = io_access(func, fh, where, offset, buf, count, datatype, is_write, st);
    if (rc != MPI_SUCCESS) {
        free(st);
        return rc;
    }
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_GREQ);
    if (!req) {
        free(st);
        return hashi_err_file(func, fh, MPI_ERR_NO_MEM, "no memory for a request");
    }
    /* A generalized request that is complete already: the completion calls
     * take its status from done_query, then done_free releases it. */
    req->greq_query = done_query;
    req->greq_free = done_free;
    req->extra = st;
    atomic_store_explicit(&req->complete, 1, memory_order_release);
    *request = req;
    return MPI_SUCCESS;
}

/* ---- split collectives: done at _begin, the status kept for _end ---- */

static int split_begin(const char *func, MPI_File fh, enum io_where where, MPI_Offset offset, void *buf,
                       MPI_Count count, MPI_Datatype datatype, int is_write)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (f->split.active)
        return hashi_err_file(func, fh, MPI_ERR_OTHER,
                              "a split collective is active on this file already (one at a time, MPI 4.1 sec. 14.4.5)");
    MPI_Status st;
    rc = io_access(func, fh, where, offset, buf, count, datatype, is_write, &st);
    if (rc != MPI_SUCCESS)
        return rc;
    f->split.active = 1;
    f->split.is_write = is_write;
    f->split.where = where;
    f->split.buf = buf;
    f->split.status = st;
    return MPI_SUCCESS;
}

static int split_end(const char *func, MPI_File fh, const void *buf, MPI_Status *status, enum io_where where,
                     int is_write)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!f->split.active || f->split.is_write != is_write || f->split.where != (int)where)
        return hashi_err_file(func, fh, MPI_ERR_OTHER, "no split collective of this kind was begun on this file");
    if (buf != f->split.buf)
        return hashi_err_file(func, fh, MPI_ERR_BUFFER, "buf is not the buffer given to the _begin call");
    f->split.active = 0;
    if (status != MPI_STATUS_IGNORE)
        *status = f->split.status;
    return MPI_SUCCESS;
}

/* ---- the MPI calls: one line each onto the functions above ---- */

#define RW_BLOCKING(NAME, WHERE, IS_WRITE, CONST)                                                            \
    int hashi_impl_File_##NAME(MPI_File fh, CONST void *buf, int count, MPI_Datatype datatype,              \
                               MPI_Status *status)                                                          \
    {                                                                                                       \
        return io_access("MPI_File_" #NAME, fh, WHERE, 0, (void *)(uintptr_t)buf, count, datatype, IS_WRITE, \
                         status);                                                                           \
    }                                                                                                       \
    int hashi_impl_File_##NAME##_c(MPI_File fh, CONST void *buf, MPI_Count count, MPI_Datatype datatype,    \
                                   MPI_Status *status)                                                      \
    {                                                                                                       \
        return io_access("MPI_File_" #NAME "_c", fh, WHERE, 0, (void *)(uintptr_t)buf, count, datatype,     \
                         IS_WRITE, status);                                                                 \
    }

#define RW_AT(NAME, IS_WRITE, CONST)                                                                         \
    int hashi_impl_File_##NAME(MPI_File fh, MPI_Offset offset, CONST void *buf, int count,                  \
                               MPI_Datatype datatype, MPI_Status *status)                                   \
    {                                                                                                       \
        return io_access("MPI_File_" #NAME, fh, IO_AT, offset, (void *)(uintptr_t)buf, count, datatype,     \
                         IS_WRITE, status);                                                                 \
    }                                                                                                       \
    int hashi_impl_File_##NAME##_c(MPI_File fh, MPI_Offset offset, CONST void *buf, MPI_Count count,        \
                                   MPI_Datatype datatype, MPI_Status *status)                               \
    {                                                                                                       \
        return io_access("MPI_File_" #NAME "_c", fh, IO_AT, offset, (void *)(uintptr_t)buf, count,          \
                         datatype, IS_WRITE, status);                                                       \
    }

#define RW_NONBLOCKING(NAME, WHERE, IS_WRITE, CONST)                                                         \
    int hashi_impl_File_##NAME(MPI_File fh, CONST void *buf, int count, MPI_Datatype datatype,              \
                               MPI_Request *request)                                                        \
    {                                                                                                       \
        return io_nonblocking("MPI_File_" #NAME, fh, WHERE, 0, (void *)(uintptr_t)buf, count, datatype,     \
                              IS_WRITE, request);                                                           \
    }                                                                                                       \
    int hashi_impl_File_##NAME##_c(MPI_File fh, CONST void *buf, MPI_Count count, MPI_Datatype datatype,    \
                                   MPI_Request *request)                                                    \
    {                                                                                                       \
        return io_nonblocking("MPI_File_" #NAME "_c", fh, WHERE, 0, (void *)(uintptr_t)buf, count,          \
                              datatype, IS_WRITE, request);                                                 \
    }

#define RW_NONBLOCKING_AT(NAME, IS_WRITE, CONST)                                                             \
    int hashi_impl_File_##NAME(MPI_File fh, MPI_Offset offset, CONST void *buf, int count,                  \
                               MPI_Datatype datatype, MPI_Request *request)                                 \
    {                                                                                                       \
        return io_nonblocking("MPI_File_" #NAME, fh, IO_AT, offset, (void *)(uintptr_t)buf, count,          \
                              datatype, IS_WRITE, request);                                                 \
    }                                                                                                       \
    int hashi_impl_File_##NAME##_c(MPI_File fh, MPI_Offset offset, CONST void *buf, MPI_Count count,        \
                                   MPI_Datatype datatype, MPI_Request *request)                             \
    {                                                                                                       \
        return io_nonblocking("MPI_File_" #NAME "_c", fh, IO_AT, offset, (void *)(uintptr_t)buf, count,     \
                              datatype, IS_WRITE, request);                                                 \
    }

#define RW_SPLIT(NAME, WHERE, IS_WRITE, CONST)                                                               \
    int hashi_impl_File_##NAME##_begin(MPI_File fh, CONST void *buf, int count, MPI_Datatype datatype)      \
    {                                                                                                       \
        return split_begin("MPI_File_" #NAME "_begin", fh, WHERE, 0, (void *)(uintptr_t)buf, count,         \
                           datatype, IS_WRITE);                                                             \
    }                                                                                                       \
    int hashi_impl_File_##NAME##_begin_c(MPI_File fh, CONST void *buf, MPI_Count count,                     \
                                         MPI_Datatype datatype)                                             \
    {                                                                                                       \
        return split_begin("MPI_File_" #NAME "_begin_c", fh, WHERE, 0, (void *)(uintptr_t)buf, count,       \
                           datatype, IS_WRITE);                                                             \
    }                                                                                                       \
    int hashi_impl_File_##NAME##_end(MPI_File fh, CONST void *buf, MPI_Status *status)                      \
    {                                                                                                       \
        return split_end("MPI_File_" #NAME "_end", fh, buf, status, WHERE, IS_WRITE);                       \
    }

#define RW_SPLIT_AT(NAME, IS_WRITE, CONST)                                                                   \
    int hashi_impl_File_##NAME##_begin(MPI_File fh, MPI_Offset offset, CONST void *buf, int count,          \
                                       MPI_Datatype datatype)                                               \
    {                                                                                                       \
        return split_begin("MPI_File_" #NAME "_begin", fh, IO_AT, offset, (void *)(uintptr_t)buf, count,    \
                           datatype, IS_WRITE);                                                             \
    }                                                                                                       \
    int hashi_impl_File_##NAME##_begin_c(MPI_File fh, MPI_Offset offset, CONST void *buf, MPI_Count count,  \
                                         MPI_Datatype datatype)                                             \
    {                                                                                                       \
        return split_begin("MPI_File_" #NAME "_begin_c", fh, IO_AT, offset, (void *)(uintptr_t)buf, count,  \
                           datatype, IS_WRITE);                                                             \
    }                                                                                                       \
    int hashi_impl_File_##NAME##_end(MPI_File fh, CONST void *buf, MPI_Status *status)                      \
    {                                                                                                       \
        return split_end("MPI_File_" #NAME "_end", fh, buf, status, IO_AT, IS_WRITE);                       \
    }

#define NOCONST
RW_BLOCKING(read, IO_INDIVIDUAL, 0, NOCONST)
RW_BLOCKING(write, IO_INDIVIDUAL, 1, const)
RW_BLOCKING(read_all, IO_INDIVIDUAL, 0, NOCONST)
RW_BLOCKING(write_all, IO_INDIVIDUAL, 1, const)
RW_BLOCKING(read_shared, IO_SHARED, 0, NOCONST)
RW_BLOCKING(write_shared, IO_SHARED, 1, const)
RW_BLOCKING(read_ordered, IO_ORDERED, 0, NOCONST)
RW_BLOCKING(write_ordered, IO_ORDERED, 1, const)
RW_AT(read_at, 0, NOCONST)
RW_AT(write_at, 1, const)
RW_AT(read_at_all, 0, NOCONST)
RW_AT(write_at_all, 1, const)
RW_NONBLOCKING(iread, IO_INDIVIDUAL, 0, NOCONST)
RW_NONBLOCKING(iwrite, IO_INDIVIDUAL, 1, const)
RW_NONBLOCKING(iread_all, IO_INDIVIDUAL, 0, NOCONST)
RW_NONBLOCKING(iwrite_all, IO_INDIVIDUAL, 1, const)
RW_NONBLOCKING(iread_shared, IO_SHARED, 0, NOCONST)
RW_NONBLOCKING(iwrite_shared, IO_SHARED, 1, const)
RW_NONBLOCKING_AT(iread_at, 0, NOCONST)
RW_NONBLOCKING_AT(iwrite_at, 1, const)
RW_NONBLOCKING_AT(iread_at_all, 0, NOCONST)
RW_NONBLOCKING_AT(iwrite_at_all, 1, const)
RW_SPLIT(read_all, IO_INDIVIDUAL, 0, NOCONST)
RW_SPLIT(write_all, IO_INDIVIDUAL, 1, const)
RW_SPLIT(read_ordered, IO_ORDERED, 0, NOCONST)
RW_SPLIT(write_ordered, IO_ORDERED, 1, const)
RW_SPLIT_AT(read_at_all, 0, NOCONST)
RW_SPLIT_AT(write_at_all, 1, const)
