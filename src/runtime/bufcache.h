/*
 * Reuse of the large, short-lived buffers of message queues: a copy the
 * device keeps of a send it could not post yet, the payload of an
 * unexpected message. Freeing and allocating 16-64 KiB per message makes
 * glibc trim the top of its heap and grow it again, and each regrown page
 * faults and is zeroed: two ranks sending 32 KiB windows to each other
 * reached 2.9 GB/s, 5.7 with trimming off (docs/dimmnet.md, "Busy pull").
 * A library must not change the application's malloc settings, so the
 * buffers of at least HASHI_BUF_CACHE_MIN bytes are kept in power-of-two
 * classes instead, a few MiB at most. One thread at a time (the library's
 * progress lock).
 */
#ifndef HASHI_RUNTIME_BUFCACHE_H
#define HASHI_RUNTIME_BUFCACHE_H

#include <stddef.h>

#define HASHI_BUF_CACHE_MIN 4096

/* At least len bytes, or NULL. */
void *hashi_buf_get(size_t len);
/* Give back p, obtained by hashi_buf_get(len) with this same len. */
void hashi_buf_put(void *p, size_t len);
/* Free every kept buffer (MPI_Finalize). */
void hashi_buf_cache_drain(void);

#endif
