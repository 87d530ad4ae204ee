/*
 * Copies of a few bytes, inline. A small message's header and payload are
 * copied on every send and receive; libc's memcpy costs a call and a size
 * dispatch (~20 instructions) where two overlapping fixed-size moves do.
 */
#ifndef HASHI_RUNTIME_COPY_H
#define HASHI_RUNTIME_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void hashi_copy(void *dst, const void *src, size_t len)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (len > 16) {
        memcpy(d, s, len);
    } else if (len >= 8) {
        /* Two 8-byte moves that overlap when len < 16 (fixed sizes: inlined). */
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + len - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + len - 8, &b, 8);
    } else if (len >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + len - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + len - 4, &b, 4);
    } else {
        for (size_t i = 0; i < len; i++)
            d[i] = s[i];
    }
}

#endif
