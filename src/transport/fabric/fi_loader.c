/*
 * libfabric, loaded on first use.
 *
 * Linking libfabric into libmpi_abi would load it (and, on Debian, the PSM
 * libraries it depends on, whose constructor calibrates a clock by sleeping
 * about 120 ms) into every MPI program, whatever device it runs. Instead the
 * few functions libfabric really exports (everything else in its API is a
 * static inline call through an ops table) are defined here, hidden inside
 * the library, and forward to libfabric.so.1 opened with dlopen the first time
 * a device or transport reaches for it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <rdma/fabric.h>
#include <stdio.h>
#include <stdlib.h>

#include "transport/fabric/fi_loader.h"

#define FABRIC_SONAME "libfabric.so.1"

static void *fabric_handle;
static char load_error[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static int (*real_getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                           struct fi_info **);
static void (*real_freeinfo)(struct fi_info *);
static struct fi_info *(*real_dupinfo)(const struct fi_info *);
static int (*real_fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
static const char *(*real_strerror)(int);
static char *(*real_tostr)(const void *, enum fi_type);
static uint32_t (*real_version)(void);

static void load_fabric(void)
{
    /* libfabric's PSM providers install a SIGSEGV handler that prints a
     * backtrace and exits 1, hiding the signal from the launcher (which must
     * report "killed by signal 11" and exit 139). Keep the default unless the
     * user asked for their backtraces. */
    setenv("HFI_NO_BACKTRACE", "1", 0);
    setenv("IPATH_NO_BACKTRACE", "1", 0);
    fabric_handle = dlopen(FABRIC_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!fabric_handle) {
        snprintf(load_error, sizeof load_error, "%s could not be loaded (%s): install libfabric1",
                 FABRIC_SONAME, dlerror());
        return;
    }
    /* The default version of each symbol: the ABI of the headers we built with. */
    *(void **)&real_getinfo = dlsym(fabric_handle, "fi_getinfo");
    *(void **)&real_freeinfo = dlsym(fabric_handle, "fi_freeinfo");
    *(void **)&real_dupinfo = dlsym(fabric_handle, "fi_dupinfo");
    *(void **)&real_fabric = dlsym(fabric_handle, "fi_fabric");
    *(void **)&real_strerror = dlsym(fabric_handle, "fi_strerror");
    *(void **)&real_tostr = dlsym(fabric_handle, "fi_tostr");
    *(void **)&real_version = dlsym(fabric_handle, "fi_version");
    if (!real_getinfo || !real_freeinfo || !real_dupinfo || !real_fabric || !real_strerror ||
        !real_tostr || !real_version) {
        snprintf(load_error, sizeof load_error, "%s lacks the functions Hashi needs: %s", FABRIC_SONAME,
                 dlerror());
        dlclose(fabric_handle);
        fabric_handle = NULL;
    }
}

const char *hashi_fabric_load(void)
{
    pthread_once(&load_once, load_fabric);
    return fabric_handle ? NULL : load_error;
}

int fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
               const struct fi_info *hints, struct fi_info **info)
{
    if (hashi_fabric_load())
        return -FI_ENOSYS;
    return real_getinfo(version, node, service, flags, hints, info);
}

void fi_freeinfo(struct fi_info *info)
{
    if (!hashi_fabric_load())
        real_freeinfo(info);
}

struct fi_info *fi_dupinfo(const struct fi_info *info)
{
    return hashi_fabric_load() ? NULL : real_dupinfo(info);
}

int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    if (hashi_fabric_load())
        return -FI_ENOSYS;
    return real_fabric(attr, fabric, context);
}

const char *fi_strerror(int errnum)
{
    return hashi_fabric_load() ? "libfabric is not loaded" : real_strerror(errnum);
}

char *fi_tostr(const void *data, enum fi_type datatype)
{
    return hashi_fabric_load() ? NULL : real_tostr(data, datatype);
}

uint32_t fi_version(void)
{
    return hashi_fabric_load() ? 0 : real_version();
}
