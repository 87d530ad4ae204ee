/* libfabric is opened with dlopen on first use (see fi_loader.c for why). */
#ifndef HASHI_TRANSPORT_FI_LOADER_H
#define HASHI_TRANSPORT_FI_LOADER_H

/* Load libfabric if not done yet: NULL on success, else why it failed. */
const char *hashi_fabric_load(void);

#endif
