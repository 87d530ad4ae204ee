/*
 * File views (MPI_File_set_view / get_view), the individual file pointer
 * (seek / get_position) and the mapping from view bytes to file offsets.
 *
 * A filetype is flattened once, at set_view, into the byte runs of one
 * instance (touching runs merged). View byte b then lies in instance
 * b / size, in the run found by binary search on the runs' cumulative ends;
 * a filetype that tiles the file without holes maps by addition alone.
 */
#include "mpi/io/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mpi/comm.h"
#include "mpi/datatype.h"
#include "mpi/info.h"

struct flattening {
    struct io_run *runs;
    MPI_Count n, cap;
    const char *problem;     /* why the filetype is not a valid one */
};

static int add_run(void *arg, MPI_Aint disp, MPI_Count len)
{
    struct flattening *fl = arg;
    struct io_run *last = fl->n ? &fl->runs[fl->n - 1] : NULL;
    if (disp < 0) {
        fl->problem = "the filetype has a negative displacement";
        return 1;
    }
    if (last && disp < last->off + last->len) {
        fl->problem = "the filetype's displacements are not monotonically non-decreasing";
        return 1;
    }
    if (last && disp == last->off + last->len) {
        last->len += len;
        last->end += len;
        return 0;
    }
    MPI_Offset prev_end = last ? last->end : 0;   /* before realloc moves the runs */
    if (fl->n == fl->cap) {
        MPI_Count cap = fl->cap ? 2 * fl->cap : 16;
        struct io_run *grown = realloc(fl->runs, (size_t)cap * sizeof *grown);
        if (!grown) {
            fl->problem = NULL;
            return -1;
        }
        fl->runs = grown;
        fl->cap = cap;
    }
    fl->runs[fl->n].off = disp;
    fl->runs[fl->n].len = len;
    fl->runs[fl->n].end = prev_end + len;
    fl->n++;
    return 0;
}

/* Flatten and check a view; the file keeps nothing until it is valid.
 * MPI_SUCCESS, or an error class with *why set. */
static int view_build(struct hashi_file *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                      const char **why)
{
    struct MPI_ABI_Datatype *et = hashi_type_get(etype), *ft = hashi_type_get(filetype);
    if (et->size <= 0) {
        *why = "the etype has no data (size 0)";
        return MPI_ERR_TYPE;
    }
    if (ft->size <= 0) {
        *why = "the filetype has no data (size 0)";
        return MPI_ERR_TYPE;
    }
    if (ft->size % et->size) {
        *why = "the filetype's size is not a multiple of the etype's: it is not made of etypes";
        return MPI_ERR_TYPE;
    }
    if (hashi_type_extent(et) < 0 || hashi_type_extent(ft) <= 0) {
        *why = "the etype or filetype has a negative or zero extent";
        return MPI_ERR_TYPE;
    }
    struct flattening fl = { NULL, 0, 0, NULL };
    int rc = hashi_type_visit_runs(ft, add_run, &fl);
    if (rc == 0 && fl.n && fl.runs[fl.n - 1].off + fl.runs[fl.n - 1].len > fl.runs[0].off + hashi_type_extent(ft))
        fl.problem = "the filetype's data is wider than its extent: consecutive instances would overlap", rc = 1;
    if (rc != 0) {
        free(fl.runs);
        *why = fl.problem ? fl.problem : "out of memory";
        return fl.problem ? MPI_ERR_TYPE : MPI_ERR_NO_MEM;
    }
    /* Retain first: the new types may be the old ones. */
    hashi_type_retain(et);
    hashi_type_retain(ft);
    io_view_release(f);
    f->disp = disp;
    f->etype_handle = etype;
    f->filetype_handle = filetype;
    f->etype = et;
    f->filetype = ft;
    f->etype_size = et->size;
    f->ft_size = ft->size;
    f->ft_extent = hashi_type_extent(ft);
    f->runs = fl.runs;
    f->nruns = fl.n;
    return MPI_SUCCESS;
}

int io_rep_check_type(const struct io_datarep *rep, const struct MPI_ABI_Datatype *t, const char **why)
{
    int extent_rc;
    MPI_Count bytes = io_datarep_file_size(rep, t, &extent_rc);
    if (bytes == t->size)
        return MPI_SUCCESS;
    if (bytes < 0) {
        *why = "the data representation's dtype_file_extent_fn failed (or gave a negative extent)";
        return MPI_ERR_CONVERSION;
    }
    *why = rep->external32 ? "the type's external32 size is not its native size (MPI_LONG, MPI_WCHAR ...): "
                             "not supported in an external32 view"
                           : "the data representation's file extent of a basic type in it is not the native "
                             "size: Hashi supports only representations that keep the sizes";
    return MPI_ERR_UNSUPPORTED_DATAREP;
}

int io_view_default(struct hashi_file *f)
{
    const char *why;
    snprintf(f->datarep, sizeof f->datarep, "native");
    f->rep = NULL;
    return view_build(f, 0, MPI_BYTE, MPI_BYTE, &why);
}

void io_view_release(struct hashi_file *f)
{
    hashi_type_release(f->etype);
    hashi_type_release(f->filetype);
    f->etype = f->filetype = NULL;
    free(f->runs);
    f->runs = NULL;
    f->nruns = 0;
}

/* The filetype tiles the file from its first run on, without holes. */
int io_view_is_dense(const struct hashi_file *f)
{
    return f->nruns == 1 && f->runs[0].len == f->ft_extent;
}

MPI_Count io_view_locate(const struct hashi_file *f, MPI_Offset vbyte, MPI_Offset *inst, MPI_Offset *within)
{
    *inst = vbyte / f->ft_size;
    MPI_Offset q = vbyte - *inst * f->ft_size;
    MPI_Count lo = 0, hi = f->nruns - 1;
    while (lo < hi) {
        MPI_Count mid = lo + (hi - lo) / 2;
        if (f->runs[mid].end > q)
            hi = mid;
        else
            lo = mid + 1;
    }
    *within = q - (f->runs[lo].end - f->runs[lo].len);
    return lo;
}

MPI_Offset io_view_file_offset(const struct hashi_file *f, MPI_Offset vbyte)
{
    if (io_view_is_dense(f))
        return f->disp + f->runs[0].off + vbyte;
    MPI_Offset inst, within;
    MPI_Count j = io_view_locate(f, vbyte, &inst, &within);
    return f->disp + inst * f->ft_extent + f->runs[j].off + within;
}

MPI_Offset io_view_bytes_before(const struct hashi_file *f, MPI_Offset offset)
{
    MPI_Offset lb = f->filetype->lb;
    MPI_Offset b = offset - f->disp - lb;
    if (b <= 0)
        return 0;
    MPI_Offset inst = b / f->ft_extent;
    MPI_Offset rem = b - inst * f->ft_extent + lb;  /* from the instance's origin */
    MPI_Offset bytes = inst * f->ft_size;
    for (MPI_Count j = 0; j < f->nruns && f->runs[j].off < rem; j++)
        bytes += f->runs[j].off + f->runs[j].len <= rem ? f->runs[j].len : rem - f->runs[j].off;
    return bytes;
}

int hashi_impl_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                             const char *datarep, MPI_Info info)
{
    static const char func[] = "MPI_File_set_view";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    const char *why = NULL;
    if ((rc = hashi_type_check(etype, 1, &why)) != MPI_SUCCESS)
        return hashi_err_file(func, fh, rc, "etype: %s", why ? why : "invalid datatype");
    if ((rc = hashi_type_check(filetype, 1, &why)) != MPI_SUCCESS)
        return hashi_err_file(func, fh, rc, "filetype: %s", why ? why : "invalid datatype");
    if (!datarep)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "datarep is NULL");
    const struct io_datarep *rep;
    if (!io_datarep_lookup(datarep, &rep))
        return hashi_err_file(func, fh, MPI_ERR_UNSUPPORTED_DATAREP,
                              "data representation '%s' is not defined (Hashi has \"native\", \"internal\", "
                              "\"external32\" and those registered with MPI_Register_datarep)", datarep);
    if ((rc = io_rep_check_type(rep, hashi_type_get(etype), &why)) != MPI_SUCCESS)
        return hashi_err_file(func, fh, rc, "etype in '%s': %s", datarep, why);
    if ((rc = io_rep_check_type(rep, hashi_type_get(filetype), &why)) != MPI_SUCCESS)
        return hashi_err_file(func, fh, rc, "filetype in '%s': %s", datarep, why);
    if (info != MPI_INFO_NULL && !hashi_info_get(info))
        return hashi_err_file(func, fh, MPI_ERR_INFO, "info is not a valid info object");
    if (f->split.active)
        return hashi_err_file(func, fh, MPI_ERR_OTHER, "a split collective (MPI_File_*_begin) has no _end yet");
    if (disp == MPI_DISPLACEMENT_CURRENT) {
        if (!(f->amode & MPI_MODE_SEQUENTIAL))
            return hashi_err_file(func, fh, MPI_ERR_ARG,
                                  "MPI_DISPLACEMENT_CURRENT is only for files opened MPI_MODE_SEQUENTIAL");
        /* The shared pointer's place in the file, in the old view. */
        MPI_Offset shared = 0;
        int err = io_shared_fetch_add(f, 0, &shared);
        if (err)
            return hashi_err_file(func, fh, io_errno_class(err), "reading the shared file pointer: %s", strerror(err));
        disp = io_view_file_offset(f, shared * f->etype_size);
    } else if (disp < 0) {
        return hashi_err_file(func, fh, MPI_ERR_ARG, "disp %lld is negative", (long long)disp);
    }
    /* Everyone is done with the old view (and its shared pointer) first. */
    int local = view_build(f, disp, etype, filetype, &why);
    int all = io_agree(f->comm, local);
    if (all != MPI_SUCCESS) {
        if (local == MPI_SUCCESS)
            io_view_default(f);
        return hashi_err_file(func, fh, all, "%s", local != MPI_SUCCESS ? why : "the view is invalid on another process");
    }
    snprintf(f->datarep, sizeof f->datarep, "%s", datarep);
    f->rep = rep;
    f->pos = 0;
    int err = f->comm->rank == 0 ? io_shared_set(f, 0) : 0;
    all = io_agree(f->comm, err ? io_errno_class(err) : MPI_SUCCESS);
    if (all != MPI_SUCCESS)
        return hashi_err_file(func, fh, all, "resetting the shared file pointer failed%s%s", err ? ": " : "",
                              err ? strerror(err) : " on rank 0");
    return MPI_SUCCESS;
}

int hashi_impl_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,
                             char *datarep)
{
    static const char func[] = "MPI_File_get_view";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!disp || !etype || !filetype || !datarep)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "disp, etype, filetype or datarep is NULL");
    *disp = f->disp;
    /* Derived types come back as new references the caller frees. */
    hashi_type_retain(f->etype);
    hashi_type_retain(f->filetype);
    *etype = f->etype_handle;
    *filetype = f->filetype_handle;
    snprintf(datarep, MPI_MAX_DATAREP_STRING, "%s", f->datarep);
    return MPI_SUCCESS;
}

static int type_extent(const char *func, MPI_File fh, MPI_Datatype datatype, MPI_Count *extent)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    const char *why = NULL;
    if ((rc = hashi_type_check(datatype, 0, &why)) != MPI_SUCCESS)
        return hashi_err_file(func, fh, rc, "%s", why ? why : "invalid datatype");
    if (!extent)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "extent is NULL");
    const struct MPI_ABI_Datatype *t = hashi_type_get(datatype);
    /* A basic type: its size in the view's representation. A derived one
     * is laid out as in memory, which views allow only when the sizes
     * are the native ones (io_rep_check_type). */
    if (t->predefined && t->basic_type != MPI_DATATYPE_NULL && t->nelem == 1) {
        int extent_rc;
        MPI_Count bytes = io_datarep_file_size(f->rep, t, &extent_rc);
        if (bytes < 0)
            return hashi_err_file(func, fh, MPI_ERR_CONVERSION,
                                  "the dtype_file_extent_fn of data representation '%s' failed (error %d)",
                                  f->datarep, extent_rc);
        *extent = bytes;
        return MPI_SUCCESS;
    }
    if ((rc = io_rep_check_type(f->rep, t, &why)) != MPI_SUCCESS)
        return hashi_err_file(func, fh, rc, "in '%s': %s", f->datarep, why);
    *extent = hashi_type_extent(t);
    return MPI_SUCCESS;
}

int hashi_impl_File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint *extent)
{
    MPI_Count e = 0;
    int rc = type_extent("MPI_File_get_type_extent", fh, datatype, extent ? &e : NULL);
    if (rc == MPI_SUCCESS)
        *extent = (MPI_Aint)e;
    return rc;
}

int hashi_impl_File_get_type_extent_c(MPI_File fh, MPI_Datatype datatype, MPI_Count *extent)
{
    return type_extent("MPI_File_get_type_extent_c", fh, datatype, extent);
}

int hashi_impl_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset *disp)
{
    static const char func[] = "MPI_File_get_byte_offset";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!disp)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "disp is NULL");
    if (offset < 0)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "offset %lld is negative", (long long)offset);
    *disp = io_view_file_offset(f, offset * f->etype_size);
    return MPI_SUCCESS;
}

/* The end of file in etypes of the view (a partly covered etype counts). */
static int eof_etypes(struct hashi_file *f, MPI_Offset *etypes)
{
    struct stat st;
    if (fstat(f->fd, &st) != 0)
        return errno;
    MPI_Offset bytes = io_view_bytes_before(f, st.st_size);
    *etypes = (bytes + f->etype_size - 1) / f->etype_size;
    return 0;
}

int io_seek_target(struct hashi_file *f, MPI_Offset current, MPI_Offset offset, int whence, MPI_Offset *target,
                   const char **why)
{
    MPI_Offset base = 0;
    switch (whence) {
    case MPI_SEEK_SET: base = 0; break;
    case MPI_SEEK_CUR: base = current; break;
    case MPI_SEEK_END: {
        int err = eof_etypes(f, &base);
        if (err)
            return err;
        break;
    }
    default:
        *why = "whence is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END";
        return -1;
    }
    if (base + offset < 0) {
        *why = "the new position would be before the start of the view";
        return -1;
    }
    *target = base + offset;
    return 0;
}

int hashi_impl_File_seek(MPI_File fh, MPI_Offset offset, int whence)
{
    static const char func[] = "MPI_File_seek";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (f->amode & MPI_MODE_SEQUENTIAL)
        return hashi_err_file(func, fh, MPI_ERR_UNSUPPORTED_OPERATION,
                              "the file was opened MPI_MODE_SEQUENTIAL: it has no individual file pointer");
    const char *why = NULL;
    MPI_Offset target;
    int err = io_seek_target(f, f->pos, offset, whence, &target, &why);
    if (err < 0)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "%s (offset %lld, whence %d)", why, (long long)offset, whence);
    if (err)
        return hashi_err_file(func, fh, io_errno_class(err), "fstat: %s", strerror(err));
    f->pos = target;
    return MPI_SUCCESS;
}

int hashi_impl_File_get_position(MPI_File fh, MPI_Offset *offset)
{
    static const char func[] = "MPI_File_get_position";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct hashi_file *f = io_file_arg(func, fh, &rc);
    if (!f)
        return rc;
    if (!offset)
        return hashi_err_file(func, fh, MPI_ERR_ARG, "offset is NULL");
    if (f->amode & MPI_MODE_SEQUENTIAL)
        return hashi_err_file(func, fh, MPI_ERR_UNSUPPORTED_OPERATION,
                              "the file was opened MPI_MODE_SEQUENTIAL: it has no individual file pointer");
    *offset = f->pos;
    return MPI_SUCCESS;
}
