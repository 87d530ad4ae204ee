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

/* len in [w, 2w]: the first and the last w bytes, which overlap when len < 2w
 * (w is a constant once inlined, so these are plain moves). */
static inline __attribute__((always_inline)) void copy_ends(unsigned char *d, const unsigned char *s, size_t len,
                                                            size_t w)
{
    uint64_t head, tail;
    memcpy(&head, s, w);
    memcpy(&tail, s + len - w, w);
    memcpy(d, &head, w);
    memcpy(d + len - w, &tail, w);
}

static inline void hashi_copy(void *dst, const void *src, size_t len)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (len > 16) {
        memcpy(d, s, len);
    } else if (len >= 8) {
        copy_ends(d, s, len, 8);
    } else if (len >= 4) {
        copy_ends(d, s, len, 4);
    } else {
        for (size_t i = 0; i < len; i++)
            d[i] = s[i];
    }
}

#endif
