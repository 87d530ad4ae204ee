/* Environment inquiry: ranks, clocks, names, versions. */
#include "mpi/mpi_impl.h"
#include "mpi/comm.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hashi_config.h"

int hashi_impl_Comm_rank(MPI_Comm comm, int *rank)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_rank");
    int rc;
    struct MPI_ABI_Comm *c = hashi_comm_arg("MPI_Comm_rank", comm, &rc);
    if (!c)
        return rc;
    if (!rank)
        return hashi_err_comm("MPI_Comm_rank", comm, MPI_ERR_ARG, "rank is NULL");
    *rank = c->rank;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_size(MPI_Comm comm, int *size)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_size");
    int rc;
    struct MPI_ABI_Comm *c = hashi_comm_arg("MPI_Comm_size", comm, &rc);
    if (!c)
        return rc;
    if (!size)
        return hashi_err_comm("MPI_Comm_size", comm, MPI_ERR_ARG, "size is NULL");
    *size = c->size;
    return MPI_SUCCESS;
}

/* A monotonic clock: MPI_Wtime never goes backwards, even when NTP steps. */
double hashi_impl_Wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double hashi_impl_Wtick(void)
{
    struct timespec res;
    if (clock_getres(CLOCK_MONOTONIC, &res) != 0 || (res.tv_sec == 0 && res.tv_nsec == 0))
        return 1e-9;
    return (double)res.tv_sec + (double)res.tv_nsec * 1e-9;
}

int hashi_impl_Get_processor_name(char *name, int *resultlen)
{
    if (!name || !resultlen)
        return hashi_err_raise("MPI_Get_processor_name", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "name or resultlen is NULL");
    char host[MPI_MAX_PROCESSOR_NAME];
    if (hashi_job.hostname[0])
        snprintf(host, sizeof host, "%s", hashi_job.hostname);
    else if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    *resultlen = (int)strlen(host);
    memcpy(name, host, (size_t)*resultlen + 1);
    return MPI_SUCCESS;
}

int hashi_impl_Get_version(int *version, int *subversion)
{
    if (!version || !subversion)
        return hashi_err_raise("MPI_Get_version", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "version or subversion is NULL");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int hashi_impl_Get_library_version(char *version, int *resultlen)
{
    if (!version || !resultlen)
        return hashi_err_raise("MPI_Get_library_version", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "version or resultlen is NULL");
    int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                     "Hashi %s (MPI %d.%d, standard ABI %d.%d, libmpi_abi.so.1)", PACKAGE_VERSION,
                     MPI_VERSION, MPI_SUBVERSION, MPI_ABI_VERSION, MPI_ABI_SUBVERSION);
    *resultlen = n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1;
    return MPI_SUCCESS;
}

int hashi_impl_Abi_get_version(int *abi_major, int *abi_minor)
{
    if (!abi_major || !abi_minor)
        return hashi_err_raise("MPI_Abi_get_version", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "abi_major or abi_minor is NULL");
    *abi_major = MPI_ABI_VERSION;
    *abi_minor = MPI_ABI_SUBVERSION;
    return MPI_SUCCESS;
}
