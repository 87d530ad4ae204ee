/* Device selection: the compiled devices, and the choice made once at MPI_Init. */
#include "device/device.h"
#include "runtime/params.h"
#include "runtime/rt.h"

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
