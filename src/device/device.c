/* Device selection: the compiled devices, and the choice made once at MPI_Init;
 * the thread-level gate on the device's collectives. */
#include "device/device.h"
#include "runtime/params.h"
#include "runtime/rt.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern struct hashi_device_ops hashi_device_ofi;
extern struct hashi_device_ops hashi_device_dimmnet;

/* In order of preference for HASHI_DEVICE=auto across nodes; on one node
 * the order is reversed (hashi_device_auto_policy says why). */
static struct hashi_device_ops *const compiled_devices[] = {
    &hashi_device_ofi,
    &hashi_device_dimmnet,
};

const char hashi_device_auto_policy[] =
    "dimmnet (emu transport) when every rank is on one node: its latency and bandwidth there beat ofi's "
    "(docs/dimmnet.md) and libfabric is never loaded, which shortens start-up; ofi otherwise";

struct hashi_device_ops *hashi_device;

static int transport_allowed(const struct hashi_device_ops *dev, const char *transport)
{
    if (strcmp(transport, "auto") == 0)
        return 1;
    if (!dev->transports)
        return 0;
    size_t len = strlen(transport);
    for (const char *p = dev->transports; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && strncmp(p, transport, n) == 0)
            return 1;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

int hashi_device_select(char *err, size_t errlen)
{
    const char *name = hashi_param_str(HASHI_P_DEVICE);
    const char *transport = hashi_param_str(HASHI_P_TRANSPORT);
    size_t n = sizeof compiled_devices / sizeof *compiled_devices;
    int one_node = hashi_job.num_nodes <= 1;
    for (size_t k = 0; k < n; k++) {
        size_t i = one_node ? n - 1 - k : k;
        struct hashi_device_ops *dev = compiled_devices[i];
        if (strcmp(name, "auto") != 0 && strcasecmp(name, dev->name) != 0)
            continue;
        if (!transport_allowed(dev, transport)) {
            if (strcmp(name, "auto") == 0)
                continue;
            snprintf(err, errlen, "device %s cannot run on transport %s (it supports: %s)",
                     dev->name, transport, dev->transports ? dev->transports : "no transport choice; use auto");
            return -1;
        }
        hashi_device = dev;
        return 0;
    }
    snprintf(err, errlen, "no compiled device matches HASHI_DEVICE=%s HASHI_TRANSPORT=%s (devices: %s)",
             name, transport, hashi_param_table[HASHI_P_DEVICE].choices);
    return -1;
}

/*
 * The gate on device collectives under MPI_THREAD_MULTIPLE. A device's
 * collectives may keep state shared by every communicator (DIMMnet: per-rank
 * LLCM areas and per-pair sequence counters) and wait through
 * hashi_progress_wait_until, which gives the global lock up while it idles:
 * two threads running collectives on two communicators would interleave in
 * that state. So once any rank of the job runs with concurrent threads, every
 * rank drops its device collectives and runs the generic schedules over
 * point-to-point, which are safe under the lock. The choice must be the same
 * on every rank (a collective's members must run one algorithm), and ranks
 * may be given different levels: each rank publishes its own in the modex,
 * and every rank reads all of them after the exchange.
 */
#define THREADS_KEY "hashi.concurrent_threads"

int hashi_device_publish_threads(int concurrent)
{
    uint8_t flag = concurrent != 0;
    return hashi_rt_put(THREADS_KEY, &flag, sizeof flag);
}

int hashi_device_agree_threads(int concurrent, char *err, size_t errlen)
{
    int anywhere = concurrent != 0;
    for (int r = 0; r < hashi_job.size && !anywhere; r++) {
        if (r == hashi_job.rank)
            continue;
        uint8_t flag;
        size_t len;
        if (hashi_rt_get_record(r, THREADS_KEY, &flag, sizeof flag, &len) != 0 || len != sizeof flag) {
            snprintf(err, errlen, "cannot read rank %d's thread level from the modex (key %s)", r, THREADS_KEY);
            return -1;
        }
        anywhere = flag != 0;
    }
    if (anywhere) {
        /* comm_free stays: it releases whatever the device kept per communicator. */
        struct hashi_device_coll_ops none = { .comm_free = hashi_device->coll.comm_free };
        hashi_device->coll = none;
    }
    return 0;
}
