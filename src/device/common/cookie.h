/*
 * Cookies: 32-bit names for local objects that a peer echoes back (the
 * sender's request in an RTS, answered by FIN or ACK). A cookie is an index
 * into a table plus a generation count, so a stale or forged cookie finds
 * nothing instead of a reused slot; no pointer ever goes on the wire.
 */
#ifndef HASHI_DEVICE_COMMON_COOKIE_H
#define HASHI_DEVICE_COMMON_COOKIE_H

#include <stdint.h>

struct hashi_cookie_slot;

struct hashi_cookies {
    struct hashi_cookie_slot *slots;
    uint32_t capacity;
    uint32_t free_head;        /* index + 1 of the first free slot, 0 if none */
    uint32_t in_use;
};

void hashi_cookies_init(struct hashi_cookies *t);
void hashi_cookies_destroy(struct hashi_cookies *t);
/* A new cookie naming obj; 0 if out of memory (0 is never a valid cookie). */
uint32_t hashi_cookie_new(struct hashi_cookies *t, void *obj);
/* The object a cookie names, or NULL if it is stale or invalid. */
void *hashi_cookie_get(const struct hashi_cookies *t, uint32_t cookie);
/* Retire a cookie (later lookups of it find nothing). */
void hashi_cookie_free(struct hashi_cookies *t, uint32_t cookie);

#endif
