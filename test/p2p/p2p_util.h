/*
 * Helpers shared by the point-to-point tests: deterministic payloads that say
 * who sent them, buffers with guard zones, error-class checks, and the one
 * "rank R of S ok" line each program prints at the end (util/suite.h).
 */
#ifndef HASHI_TEST_P2P_UTIL_H
#define HASHI_TEST_P2P_UTIL_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"   /* report_ok */

/* Byte i of the message (source, tag, seq): any misplaced, stale or foreign
 * byte shows up. */
static inline unsigned char payload_byte(int source, int tag, int seq, size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)source * 40503u ^ (uint32_t)tag * 9973u ^ (uint32_t)seq * 131u;
    return (unsigned char)(x ^ x >> 13 ^ x >> 24);
}

static inline void payload_fill(void *buf, size_t n, int source, int tag, int seq)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = payload_byte(source, tag, seq, i);
}

/* The index of the first wrong byte, or -1. */
static inline long payload_check(const void *buf, size_t n, int source, int tag, int seq)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        if (p[i] != payload_byte(source, tag, seq, i))
            return (long)i;
    return -1;
}

#define GUARD_BYTES 64
#define GUARD_VALUE 0xA5

/* A receive buffer of n bytes followed (and preceded) by guard zones. */
static inline unsigned char *guarded_alloc(size_t n)
{
    unsigned char *raw = malloc(n + 2 * GUARD_BYTES);
    CHECK(raw != NULL, "out of memory for %zu bytes", n);
    memset(raw, GUARD_VALUE, n + 2 * GUARD_BYTES);
    return raw + GUARD_BYTES;
}

static inline int guards_intact(const unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < GUARD_BYTES; i++)
        if (buf[-1 - (long)i] != GUARD_VALUE || buf[n + i] != GUARD_VALUE)
            return 0;
    return 1;
}

static inline void guarded_free(unsigned char *buf)
{
    free(buf - GUARD_BYTES);
}

static inline int error_class(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls;
}

/* A call that must fail with exactly this error class (MPI_ERRORS_RETURN). */
#define CHECK_CLASS(call, want)                                                \
    do {                                                                       \
        int check_code_ = (call);                                              \
        int check_cls_ = error_class(check_code_);                             \
        CHECK(check_cls_ == (want), "%s returned class %d, expected %s (%d)", \
              #call, check_cls_, #want, (want));                               \
    } while (0)

#endif
