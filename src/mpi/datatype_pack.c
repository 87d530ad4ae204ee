/*
 * MPI_Pack, MPI_Unpack, MPI_Pack_size (and _c forms) and address arithmetic.
 *
 * The packed format is the engine's stream: the data bytes in type-map order,
 * nothing else (every rank of a job shares one representation). So
 * MPI_Pack_size is exactly count * size, and MPI_Pack writes exactly that.
 */
#include "mpi/datatype_internal.h"
#include "mpi/comm.h"

#include <limits.h>

/* The checks Pack and Unpack share; the object, or NULL after raising. */
static struct MPI_ABI_Datatype *pack_args(const char *func, MPI_Count count, MPI_Datatype datatype,
                                          MPI_Count bufsize, const MPI_Count *position, MPI_Comm comm,
                                          MPI_Count *bytes, int *rc)
{
    const char *why;
    if (!hashi_comm_arg(func, comm, rc))
        return NULL;
    if (count < 0) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_COUNT, "count is negative (%lld)", (long long)count);
        return NULL;
    }
    if (hashi_type_check(datatype, 1, &why) != MPI_SUCCESS) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_TYPE, "datatype: %s", why);
        return NULL;
    }
    if (!position) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_ARG, "position is NULL");
        return NULL;
    }
    if (bufsize < 0 || *position < 0) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is negative (%lld)",
                             bufsize < 0 ? "the buffer size" : "*position",
                             (long long)(bufsize < 0 ? bufsize : *position));
        return NULL;
    }
    struct MPI_ABI_Datatype *t = hashi_type_get(datatype);
    if (__builtin_mul_overflow(count, t->size, bytes)) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_COUNT, "count * datatype size overflows");
        return NULL;
    }
    if (*bytes > bufsize - *position) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_TRUNCATE,
                             "%lld bytes of data, but the packed buffer has %lld bytes after position %lld",
                             (long long)*bytes, (long long)(bufsize > *position ? bufsize - *position : 0),
                             (long long)*position);
        return NULL;
    }
    *rc = MPI_SUCCESS;
    return t;
}

static int pack(const char *func, const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf,
                MPI_Count outsize, MPI_Count *position, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    MPI_Count bytes;
    struct MPI_ABI_Datatype *t = pack_args(func, incount, datatype, outsize, position, comm, &bytes, &rc);
    if (!t)
        return rc;
    if (bytes > 0 && !outbuf)
        return hashi_err_comm(func, comm, MPI_ERR_BUFFER, "outbuf is NULL");
    /* inbuf may be MPI_BOTTOM (NULL): the type's displacements are addresses */
    if (bytes > 0)
        hashi_type_pack(inbuf, incount, t, 0, (char *)outbuf + *position, (size_t)bytes);
    *position += bytes;
    return MPI_SUCCESS;
}

int hashi_impl_Pack_c(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf,
                      MPI_Count outsize, MPI_Count *position, MPI_Comm comm)
{
    return pack("MPI_Pack_c", inbuf, incount, datatype, outbuf, outsize, position, comm);
}

int hashi_impl_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
                    int *position, MPI_Comm comm)
{
    MPI_Count pos = position ? *position : 0;
    int rc = pack("MPI_Pack", inbuf, incount, datatype, outbuf, outsize, position ? &pos : NULL, comm);
    if (rc == MPI_SUCCESS)
        *position = (int)pos;   /* <= outsize, an int */
    return rc;
}

static int unpack(const char *func, const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf,
                  MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    MPI_Count bytes;
    struct MPI_ABI_Datatype *t = pack_args(func, outcount, datatype, insize, position, comm, &bytes, &rc);
    if (!t)
        return rc;
    if (bytes > 0 && !inbuf)
        return hashi_err_comm(func, comm, MPI_ERR_BUFFER, "inbuf is NULL");
    if (bytes > 0)
        hashi_type_unpack(outbuf, outcount, t, 0, (const char *)inbuf + *position, (size_t)bytes);
    *position += bytes;
    return MPI_SUCCESS;
}

int hashi_impl_Unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf,
                        MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)
{
    return unpack("MPI_Unpack_c", inbuf, insize, position, outbuf, outcount, datatype, comm);
}

int hashi_impl_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                      MPI_Datatype datatype, MPI_Comm comm)
{
    MPI_Count pos = position ? *position : 0;
    int rc = unpack("MPI_Unpack", inbuf, insize, position ? &pos : NULL, outbuf, outcount, datatype, comm);
    if (rc == MPI_SUCCESS)
        *position = (int)pos;   /* <= insize, an int */
    return rc;
}

static int pack_size(const char *func, MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count *size)
{
    HASHI_CHECK_INITIALIZED(func);
    const char *why;
    int rc;
    if (!hashi_comm_arg(func, comm, &rc))
        return rc;
    if (incount < 0)
        return hashi_err_comm(func, comm, MPI_ERR_COUNT, "incount is negative (%lld)", (long long)incount);
    if (hashi_type_check(datatype, 0, &why) != MPI_SUCCESS)
        return hashi_err_comm(func, comm, MPI_ERR_TYPE, "datatype: %s", why);
    if (!size)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "size is NULL");
    if (__builtin_mul_overflow(incount, hashi_type_get(datatype)->size, size))
        return hashi_err_comm(func, comm, MPI_ERR_COUNT, "incount * datatype size overflows");
    return MPI_SUCCESS;
}

int hashi_impl_Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count *size)
{
    return pack_size("MPI_Pack_size_c", incount, datatype, comm, size);
}

int hashi_impl_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    MPI_Count bytes = 0;
    int rc = pack_size("MPI_Pack_size", incount, datatype, comm, size ? &bytes : NULL);
    if (rc != MPI_SUCCESS)
        return rc;
    if (bytes > INT_MAX)
        return hashi_err_comm("MPI_Pack_size", comm, MPI_ERR_VALUE_TOO_LARGE,
                              "the packed size (%lld bytes) does not fit in an int: use MPI_Pack_size_c",
                              (long long)bytes);
    *size = (int)bytes;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Addresses                                                               */
/* ---------------------------------------------------------------------- */

int hashi_impl_Get_address(const void *location, MPI_Aint *address)
{
    /* Pure arithmetic: usable before MPI_Init, like the Aint functions. */
    if (!address)
        return hashi_err_type("MPI_Get_address", MPI_ERR_ARG, "address is NULL");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}

/* Addresses wrap like the machine's (no signed overflow in C). */
MPI_Aint hashi_impl_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}

MPI_Aint hashi_impl_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}
