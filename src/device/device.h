/*
 * The device interface: one table of operations, chosen once at MPI_Init from
 * HASHI_DEVICE. A device is a protocol (ofi, dimmnet, maestro, bds, dcfa); the
 * seed devices run on a transport (emu, fabric) underneath.
 *
 * This header carries the lifecycle every device implements. The point-to-point,
 * collective and RMA tables join it with the MPI point-to-point core.
 */
#ifndef HASHI_DEVICE_H
#define HASHI_DEVICE_H

#include <stddef.h>

struct hashi_device_ops {
    const char *name;
    const char *description;
    /* Transports the device can run on ("auto" always accepted), NULL if it has none. */
    const char *transports;
    /* Open local resources and publish this rank's address in the modex. */
    int (*init)(char *err, size_t errlen);
    /* After the modex exchange: reach every peer. */
    int (*connect)(char *err, size_t errlen);
    /* Release everything (after the finalize fence: no traffic is in flight). */
    void (*finalize)(void);
};

/* The device chosen at MPI_Init. */
extern const struct hashi_device_ops *hashi_device;

/*
 * Choose the device from HASHI_DEVICE / HASHI_TRANSPORT (validated against the
 * compiled devices and what each can run on). 0, or -1 with a message.
 */
int hashi_device_select(char *err, size_t errlen);

#endif
