/*
 * Status queries and setters: MPI_Get_count / Get_elements (from the 64-bit
 * byte count kept in the status' hidden fields), Test_cancelled, and the
 * setters generalized requests use to fill a status.
 */
#include "mpi/p2p/p2p_impl.h"

static int status_arg(const char *func, const void *status)
{
    if (!status)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "status is NULL (MPI_STATUS_IGNORE is not a status)");
    return MPI_SUCCESS;
}

static struct MPI_ABI_Datatype *status_type(const char *func, MPI_Datatype datatype, int *err)
{
    const char *why = NULL;
    int rc = hashi_type_check(datatype, 1, &why);
    if (rc != MPI_SUCCESS) {
        *err = hashi_err_raise(func, HASHI_OBJ_NONE, NULL, rc, "%s", why ? why : "invalid datatype");
        return NULL;
    }
    *err = MPI_SUCCESS;
    return hashi_type_get(datatype);
}

/* Whole elements of t in the status' bytes, or MPI_UNDEFINED. */
static MPI_Count count_of(const MPI_Status *status, const struct MPI_ABI_Datatype *t)
{
    uint64_t bytes = hashi_status_bytes(status);
    if (t->size == 0)
        return 0;   /* the standard: a zero-size datatype gives a count of zero */
    if (bytes % (uint64_t)t->size)
        return MPI_UNDEFINED;
    return (MPI_Count)(bytes / (uint64_t)t->size);
}

static int get_count(const char *func, const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = status_arg(func, status);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!count)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "count is NULL");
    struct MPI_ABI_Datatype *t = status_type(func, datatype, &rc);
    if (!t)
        return rc;
    *count = count_of(status, t);
    return MPI_SUCCESS;
}

static int get_elements(const char *func, const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = status_arg(func, status);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!count)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "count is NULL");
    struct MPI_ABI_Datatype *t = status_type(func, datatype, &rc);
    if (!t)
        return rc;
    *count = hashi_type_elements(t, hashi_status_bytes(status));
    return MPI_SUCCESS;
}

/* The int forms cannot hold more: MPI_UNDEFINED, as the standard says. */
static int to_int(MPI_Count v)
{
    return v == MPI_UNDEFINED || v > INT_MAX ? MPI_UNDEFINED : (int)v;
}

int hashi_impl_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return get_count("MPI_Get_count_c", status, datatype, count);
}

int hashi_impl_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count c = 0;
    int rc = get_count("MPI_Get_count", status, datatype, count ? &c : NULL);
    if (rc == MPI_SUCCESS)
        *count = to_int(c);
    return rc;
}

int hashi_impl_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return get_elements("MPI_Get_elements_c", status, datatype, count);
}

int hashi_impl_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return get_elements("MPI_Get_elements_x", status, datatype, count);
}

int hashi_impl_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count c = 0;
    int rc = get_elements("MPI_Get_elements", status, datatype, count ? &c : NULL);
    if (rc == MPI_SUCCESS)
        *count = to_int(c);
    return rc;
}

/*
 * The byte count for which MPI_Get_elements gives `count`: whole elements of
 * the type, then the first bytes of one more element that hold the rest (found
 * by asking the engine, only for types mixing basic types of several sizes).
 */
static int bytes_for_elements(const struct MPI_ABI_Datatype *t, MPI_Count count, uint64_t *bytes)
{
    if (t->size == 0 || t->nelem == 0) {
        *bytes = 0;
        return count == 0 ? 0 : -1;
    }
    if (t->elem_size > 0) {
        *bytes = (uint64_t)count * (uint64_t)t->elem_size;
        return 0;
    }
    uint64_t base = (uint64_t)(count / t->nelem) * (uint64_t)t->size;
    for (uint64_t b = 0; b <= (uint64_t)t->size; b++) {
        MPI_Count e = hashi_type_elements(t, base + b);
        if (e == MPI_UNDEFINED)
            continue;
        if (e == count) {
            *bytes = base + b;
            return 0;
        }
        if (e > count)
            break;
    }
    return -1;
}

static int set_elements(const char *func, MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc = status_arg(func, status);
    if (rc != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Datatype *t = status_type(func, datatype, &rc);
    if (!t)
        return rc;
    if (count < 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_COUNT, "count %lld is negative", (long long)count);
    uint64_t bytes;
    if (bytes_for_elements(t, count, &bytes) != 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "no prefix of the datatype's data holds exactly %lld basic elements", (long long)count);
    hashi_status_set_bytes(status, bytes);
    return MPI_SUCCESS;
}

int hashi_impl_Status_set_elements_c(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return set_elements("MPI_Status_set_elements_c", status, datatype, count);
}

int hashi_impl_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return set_elements("MPI_Status_set_elements_x", status, datatype, count);
}

int hashi_impl_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    return set_elements("MPI_Status_set_elements", status, datatype, count);
}

int hashi_impl_Status_set_cancelled(MPI_Status *status, int flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Status_set_cancelled");
    int rc = status_arg("MPI_Status_set_cancelled", status);
    if (rc != MPI_SUCCESS)
        return rc;
    hashi_status_set_cancelled(status, flag != 0);
    return MPI_SUCCESS;
}

int hashi_impl_Test_cancelled(const MPI_Status *status, int *flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Test_cancelled");
    int rc = status_arg("MPI_Test_cancelled", status);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!flag)
        return hashi_err_raise("MPI_Test_cancelled", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "flag is NULL");
    *flag = hashi_status_cancelled(status) != 0;
    return MPI_SUCCESS;
}

/* ---- MPI-4.1 field accessors (for languages without struct access) ---- */

static int field_get(const char *func, const MPI_Status *status, int *out, int value_of_field)
{
    int rc = status_arg(func, status);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!out)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "the result pointer is NULL");
    *out = value_of_field;
    return MPI_SUCCESS;
}

int hashi_impl_Status_get_source(const MPI_Status *status, int *source)
{
    HASHI_CHECK_INITIALIZED("MPI_Status_get_source");
    return field_get("MPI_Status_get_source", status, source, status ? status->MPI_SOURCE : 0);
}

int hashi_impl_Status_get_tag(const MPI_Status *status, int *tag)
{
    HASHI_CHECK_INITIALIZED("MPI_Status_get_tag");
    return field_get("MPI_Status_get_tag", status, tag, status ? status->MPI_TAG : 0);
}

int hashi_impl_Status_get_error(const MPI_Status *status, int *error)
{
    HASHI_CHECK_INITIALIZED("MPI_Status_get_error");
    return field_get("MPI_Status_get_error", status, error, status ? status->MPI_ERROR : 0);
}

int hashi_impl_Status_set_source(MPI_Status *status, int source)
{
    HASHI_CHECK_INITIALIZED("MPI_Status_set_source");
    int rc = status_arg("MPI_Status_set_source", status);
    if (rc == MPI_SUCCESS)
        status->MPI_SOURCE = source;
    return rc;
}

int hashi_impl_Status_set_tag(MPI_Status *status, int tag)
{
    HASHI_CHECK_INITIALIZED("MPI_Status_set_tag");
    int rc = status_arg("MPI_Status_set_tag", status);
    if (rc == MPI_SUCCESS)
        status->MPI_TAG = tag;
    return rc;
}

int hashi_impl_Status_set_error(MPI_Status *status, int error)
{
    HASHI_CHECK_INITIALIZED("MPI_Status_set_error");
    int rc = status_arg("MPI_Status_set_error", status);
    if (rc == MPI_SUCCESS)
        status->MPI_ERROR = error;
    return rc;
}
