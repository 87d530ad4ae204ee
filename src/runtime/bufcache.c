/* Power-of-two classes of freed buffers (bufcache.h). */
#include "runtime/bufcache.h"

#include <stdlib.h>

#define CLASS_MIN_SHIFT 12                  /* 4 KiB */
#define CLASS_MAX_SHIFT 20                  /* 1 MiB: larger ones go back to malloc */
#define CLASSES (CLASS_MAX_SHIFT - CLASS_MIN_SHIFT + 1)
#define KEEP_BYTES ((size_t)8 << 20)        /* per class */

struct free_buf {
    struct free_buf *next;
};

static struct {
    struct free_buf *head[CLASSES];
    size_t kept[CLASSES];                   /* bytes on each list */
} cache;

/* The class of a buffer of len bytes, or -1 outside the cached range. */
static int class_of(size_t len)
{
    if (len < HASHI_BUF_CACHE_MIN || len > ((size_t)1 << CLASS_MAX_SHIFT))
        return -1;
    int shift = CLASS_MIN_SHIFT;
    while (((size_t)1 << shift) < len)
        shift++;
    return shift - CLASS_MIN_SHIFT;
}

void *hashi_buf_get(size_t len)
{
    int c = class_of(len);
    if (c < 0)
        return malloc(len ? len : 1);
    struct free_buf *b = cache.head[c];
    if (b) {
        cache.head[c] = b->next;
        cache.kept[c] -= (size_t)1 << (c + CLASS_MIN_SHIFT);
        return b;
    }
    return malloc((size_t)1 << (c + CLASS_MIN_SHIFT));
}

void hashi_buf_put(void *p, size_t len)
{
    int c = class_of(len);
    size_t bytes = c < 0 ? 0 : (size_t)1 << (c + CLASS_MIN_SHIFT);
    if (!p || c < 0 || cache.kept[c] + bytes > KEEP_BYTES) {
        free(p);
        return;
    }
    struct free_buf *b = p;
    b->next = cache.head[c];
    cache.head[c] = b;
    cache.kept[c] += bytes;
}

void hashi_buf_cache_drain(void)
{
    for (int c = 0; c < CLASSES; c++) {
        while (cache.head[c]) {
            struct free_buf *b = cache.head[c];
            cache.head[c] = b->next;
            free(b);
        }
        cache.kept[c] = 0;
    }
}
