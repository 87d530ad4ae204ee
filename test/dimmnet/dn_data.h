/*
 * Message contents and status checks shared by the DIMMnet protocol tests
 * (dn_proto, dn_rndv, dn_announce): every byte depends on the sender, the message's index
 * and its offset, so a byte from another message, rank or place shows.
 */
#ifndef HASHI_TEST_DN_DATA_H
#define HASHI_TEST_DN_DATA_H

#include "../util/check.h"
#include "../util/pvar.h"

#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned char pattern(int src, int idx, size_t i)
{
    return (unsigned char)(src * 31 + idx * 7 + (int)(i * 13) + (int)(i >> 8));
}

static inline void fill(unsigned char *buf, size_t n, int src, int idx)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern(src, idx, i);
}

static inline void verify(const unsigned char *buf, size_t n, int src, int idx, const char *what)
{
    for (size_t i = 0; i < n; i++)
        CHECK(buf[i] == pattern(src, idx, i), "%s: message %d from rank %d, byte %zu of %zu is %u, expected %u", what,
              idx, src, i, n, buf[i], pattern(src, idx, i));
}

static inline void check_status(const MPI_Status *st, int src, int tag, size_t bytes)
{
    MPI_Count n;
    CHECK(st->MPI_SOURCE == src, "status source %d, expected %d", st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "status tag %d, expected %d", st->MPI_TAG, tag);
    CHECK_MPI(MPI_Get_count_c(st, MPI_BYTE, &n));
    CHECK(n == (MPI_Count)bytes, "received %lld bytes, expected %zu", (long long)n, bytes);
}

/* A buffer with DN_GUARD bytes of 0xee on either side, to catch writes past a receive buffer. */
#define DN_GUARD 4096
static inline unsigned char *guarded(size_t n)
{
    unsigned char *p = malloc(n + 2 * DN_GUARD);
    CHECK(p, "out of memory for %zu bytes", n);
    memset(p, 0xee, n + 2 * DN_GUARD);
    return p + DN_GUARD;
}

static inline void guarded_free(unsigned char *p)
{
    free(p - DN_GUARD);
}

static inline void check_untouched(const unsigned char *p, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        CHECK(p[i] == 0xee, "%s: byte %zu outside the receive buffer was overwritten (%u)", what, i, p[i]);
}

#endif
