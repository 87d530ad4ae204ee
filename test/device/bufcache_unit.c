/*
 * Unit test of the message buffers' cache (src/runtime/bufcache.c): a
 * buffer given back is handed out again for a request of its class, every
 * buffer is as big as asked and distinct from the others in use, buffers
 * outside the cached range and beyond a class's cap go back to malloc, and
 * drain empties everything (valgrind / ASan see no leak).
 */
#include "runtime/bufcache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

int main(void)
{
    /* Reuse within a class: 40 KiB and 64 KiB share the 64 KiB class. */
    unsigned char *a = hashi_buf_get(40000);
    CHECK(a, "get 40000");
    memset(a, 0xa5, 65536);   /* the whole class is usable (ASan would catch an overrun) */
    hashi_buf_put(a, 40000);
    unsigned char *b = hashi_buf_get(65536);
    CHECK(b == a, "a 64 KiB request did not reuse the 40000-byte buffer of its class");
    unsigned char *c = hashi_buf_get(65536);
    CHECK(c && c != b, "two buffers in use at once are the same");
    /* Another class does not take it. */
    hashi_buf_put(b, 65536);
    unsigned char *d = hashi_buf_get(16384);
    CHECK(d && d != b, "a 16 KiB request took a 64 KiB class's buffer");
    memset(d, 1, 16384);
    hashi_buf_put(c, 65536);
    hashi_buf_put(d, 16384);
    /* Small and huge ones are plain malloc / free. */
    void *small = hashi_buf_get(100), *huge = hashi_buf_get((size_t)2 << 20);
    CHECK(small && huge, "get small / huge");
    memset(huge, 2, (size_t)2 << 20);
    hashi_buf_put(small, 100);
    hashi_buf_put(huge, (size_t)2 << 20);
    /* Many at once: all distinct, all kept up to the cap, then freed. */
    enum { N = 300 };
    void *many[N];
    for (int i = 0; i < N; i++) {
        many[i] = hashi_buf_get(32768);
        CHECK(many[i], "get %d", i);
        memset(many[i], i & 0xff, 32768);
        for (int j = 0; j < i; j++)
            CHECK(many[j] != many[i], "buffers %d and %d are the same", j, i);
    }
    for (int i = 0; i < N; i++)
        hashi_buf_put(many[i], 32768);
    hashi_buf_put(NULL, 32768);   /* tolerated */
    hashi_buf_cache_drain();
    /* After a drain the cache starts empty and still works. */
    void *e = hashi_buf_get(8192);
    CHECK(e, "get after drain");
    hashi_buf_put(e, 8192);
    hashi_buf_cache_drain();
    printf("bufcache ok\n");
    return 0;
}
