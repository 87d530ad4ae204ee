/*
 * Data representations of MPI-IO views: "native" and "internal" (the memory
 * layout, no conversion), "external32" (big-endian, the datatype engine's
 * Pack_external) and the ones a program registers with
 * MPI_Register_datarep(_c). Hashi keeps a view's file layout the memory
 * layout, so it takes a representation only for types whose every basic
 * type has its native size in the file (the conversion may change the
 * bytes, not their number); docs/io.md "Data representations".
 */
#include "mpi/io/io.h"
#include "mpi/datatype.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

/* Registrations live until MPI_Finalize (they cannot be withdrawn). */
static struct io_datarep *registered;
static mtx_t registry_lock;
static once_flag registry_once = ONCE_FLAG_INIT;

static void registry_init(void)
{
    mtx_init(&registry_lock, mtx_plain);
}

const struct io_datarep io_datarep_external32 = { .name = "external32", .external32 = 1 };

static const struct io_datarep *find_locked(const char *name)
{
    for (const struct io_datarep *r = registered; r; r = r->next)
        if (strcmp(r->name, name) == 0)
            return r;
    return NULL;
}

int io_datarep_lookup(const char *name, const struct io_datarep **rep)
{
    *rep = NULL;
    if (strcmp(name, "native") == 0 || strcmp(name, "internal") == 0)
        return 1;
    if (strcmp(name, "external32") == 0) {
        *rep = &io_datarep_external32;
        return 1;
    }
    call_once(&registry_once, registry_init);
    mtx_lock(&registry_lock);
    *rep = find_locked(name);
    mtx_unlock(&registry_lock);
    return *rep != NULL;
}

struct leaf_call {
    const struct io_datarep *rep;
    int rc;         /* the extent function's error, if it failed */
};

static MPI_Count user_leaf(MPI_Datatype basic, void *arg)
{
    struct leaf_call *call = arg;
    MPI_Aint extent = 0;
    int rc = call->rep->extent_fn(basic, &extent, call->rep->extra_state);
    if (rc != MPI_SUCCESS) {
        call->rc = rc;
        return -1;
    }
    return extent < 0 ? -1 : (MPI_Count)extent;
}

MPI_Count io_datarep_file_size(const struct io_datarep *rep, const struct MPI_ABI_Datatype *t, int *extent_rc)
{
    *extent_rc = MPI_SUCCESS;
    if (!rep)
        return t->size;
    if (rep->external32)
        return hashi_type_external32_size(t);
    struct leaf_call call = { rep, MPI_SUCCESS };
    MPI_Count bytes = hashi_type_rep_size(t, user_leaf, &call);
    *extent_rc = call.rc;
    return bytes;
}

/* Run the representation's conversion over count elements of datatype
 * (userbuf) and the packed file bytes (filebuf), in calls of at most
 * INT_MAX elements for the int form; 0 or the function's error. */
static int convert(const struct io_datarep *rep, int to_file, void *userbuf, MPI_Datatype datatype, MPI_Count count,
                   char *filebuf, MPI_Count element_bytes)
{
    for (MPI_Count done = 0; done < count;) {
        MPI_Count n = count - done;
        int rc;
        if (rep->large) {
            MPI_Datarep_conversion_function_c *fn = to_file ? rep->write_c : rep->read_c;
            rc = fn(userbuf, datatype, n, filebuf + done * element_bytes, (MPI_Offset)done, rep->extra_state);
        } else {
            if (n > INT_MAX)
                n = INT_MAX;
            MPI_Datarep_conversion_function *fn = to_file ? rep->write : rep->read;
            rc = fn(userbuf, datatype, (int)n, filebuf + done * element_bytes, (MPI_Offset)done, rep->extra_state);
        }
        if (rc != MPI_SUCCESS)
            return rc;
        done += n;
    }
    return MPI_SUCCESS;
}

int io_datarep_has_conversion(const struct io_datarep *rep, int to_file)
{
    if (!rep)
        return 0;
    if (rep->external32)
        return 1;
    return rep->large ? (to_file ? rep->write_c : rep->read_c) != NULL : (to_file ? rep->write : rep->read) != NULL;
}

int io_datarep_to_file(const struct io_datarep *rep, const void *buf, MPI_Count count, MPI_Datatype datatype,
                       char *filebuf, MPI_Offset bytes)
{
    if (rep->external32) {
        MPI_Count position = 0;
        return hashi_impl_Pack_external_c("external32", buf, count, datatype, filebuf, bytes, &position);
    }
    /* the functions take a non-const userbuf; a write does not change it */
    return convert(rep, 1, (void *)buf, datatype, count, filebuf, count ? bytes / count : 0);
}

int io_datarep_from_file(const struct io_datarep *rep, void *buf, MPI_Count count, MPI_Datatype datatype,
                         char *filebuf, MPI_Offset bytes)
{
    if (rep->external32) {
        MPI_Count position = 0;
        return hashi_impl_Unpack_external_c("external32", filebuf, bytes, &position, buf, count, datatype);
    }
    return convert(rep, 0, buf, datatype, count, filebuf, count ? bytes / count : 0);
}

static int register_datarep(const char *func, const char *datarep, MPI_Datarep_conversion_function *read,
                            MPI_Datarep_conversion_function *write, MPI_Datarep_conversion_function_c *read_c,
                            MPI_Datarep_conversion_function_c *write_c, MPI_Datarep_extent_function *extent_fn,
                            void *extra_state, int large)
{
    HASHI_CHECK_INITIALIZED(func);
    if (!datarep)
        return hashi_err_file(func, MPI_FILE_NULL, MPI_ERR_ARG, "datarep is NULL");
    size_t len = strlen(datarep);
    if (len == 0 || len >= MPI_MAX_DATAREP_STRING)
        return hashi_err_file(func, MPI_FILE_NULL, MPI_ERR_ARG,
                              "datarep must have 1 to %d characters (it has %zu)", MPI_MAX_DATAREP_STRING - 1, len);
    if (!extent_fn)
        return hashi_err_file(func, MPI_FILE_NULL, MPI_ERR_ARG, "dtype_file_extent_fn is NULL");
    const struct io_datarep *known;
    if (io_datarep_lookup(datarep, &known))
        return hashi_err_file(func, MPI_FILE_NULL, MPI_ERR_DUP_DATAREP,
                              "data representation '%s' is already defined", datarep);
    struct io_datarep *r = calloc(1, sizeof *r);
    if (!r)
        return hashi_err_file(func, MPI_FILE_NULL, MPI_ERR_NO_MEM, "out of memory");
    memcpy(r->name, datarep, len + 1);
    r->read = read;
    r->write = write;
    r->read_c = read_c;
    r->write_c = write_c;
    r->extent_fn = extent_fn;
    r->extra_state = extra_state;
    r->large = large;
    mtx_lock(&registry_lock);
    int dup = find_locked(datarep) != NULL;    /* another thread was first */
    if (!dup) {
        r->next = registered;
        registered = r;
    }
    mtx_unlock(&registry_lock);
    if (dup) {
        free(r);
        return hashi_err_file(func, MPI_FILE_NULL, MPI_ERR_DUP_DATAREP,
                              "data representation '%s' is already defined", datarep);
    }
    return MPI_SUCCESS;
}

int hashi_impl_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn,
                                MPI_Datarep_conversion_function *write_conversion_fn,
                                MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)
{
    return register_datarep("MPI_Register_datarep", datarep, read_conversion_fn, write_conversion_fn, NULL, NULL,
                            dtype_file_extent_fn, extra_state, 0);
}

int hashi_impl_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_conversion_fn,
                                  MPI_Datarep_conversion_function_c *write_conversion_fn,
                                  MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)
{
    return register_datarep("MPI_Register_datarep_c", datarep, NULL, NULL, read_conversion_fn, write_conversion_fn,
                            dtype_file_extent_fn, extra_state, 1);
}

void hashi_io_finalize(void)
{
    io_close_left_open();
    while (registered) {
        struct io_datarep *r = registered;
        registered = r->next;
        free(r);
    }
}
