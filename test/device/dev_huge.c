/*
 * A message of 2^31 + 8 bytes between ranks 0 and 1 (more than an int count
 * and more than HASHI_OFI_MAX_MSG's default, so the device splits its reads):
 * probe reports the size (MPI_Get_count gives MPI_UNDEFINED, _c the value),
 * every byte arrives, and a truncated receive of it gets the first bytes.
 * Needs about 4.5 GiB of memory. Prints "rank R of S huge ok".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"

#define HUGE_BYTES ((MPI_Count)(1ull << 31) + 8)

/* The data, word by word (a word-wide loop is several times faster than a
 * byte-wide one over 2 GiB), and its byte i for the byte-exact edges. */
static uint64_t word(size_t w)
{
    return (uint64_t)w * 0x9E3779B97F4A7C15ull ^ 0x5eed;
}

static unsigned char pattern(size_t i)
{
    uint64_t w = word(i / 8);
    unsigned char b[8];
    memcpy(b, &w, 8);
    return b[i % 8];
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = (size_t)HUGE_BYTES;
    if (rank < 2) {
        unsigned char *buf = malloc(n);
        CHECK(buf, "cannot allocate %zu bytes", n);
        if (rank == 0) {
            uint64_t *words = (uint64_t *)(void *)buf;
            for (size_t w = 0; w < n / 8; w++)
                words[w] = word(w);
            CHECK_MPI(MPI_Send_c(buf, HUGE_BYTES, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Send_c(buf, HUGE_BYTES, MPI_BYTE, 1, 2, MPI_COMM_WORLD));
        } else {
            MPI_Status st;
            MPI_Count count_c = 0;
            int count = 0;
            CHECK_MPI(MPI_Probe(0, 1, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &count_c));
            CHECK(count_c == HUGE_BYTES, "probe reports %lld bytes, expected %lld", (long long)count_c,
                  (long long)HUGE_BYTES);
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK(count == MPI_UNDEFINED, "MPI_Get_count of 2^31+8 bytes gave %d, expected MPI_UNDEFINED", count);
            memset(buf, 0, n);
            CHECK_MPI(MPI_Recv_c(buf, HUGE_BYTES, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &count_c));
            CHECK(count_c == HUGE_BYTES && st.MPI_SOURCE == 0 && st.MPI_TAG == 1,
                  "status after the receive: count %lld source %d tag %d", (long long)count_c, st.MPI_SOURCE,
                  st.MPI_TAG);
            const uint64_t *words = (const uint64_t *)(const void *)buf;
            for (size_t w = 0; w < n / 8; w++)
                CHECK(words[w] == word(w), "bytes %zu-%zu of %zu wrong", w * 8, w * 8 + 7, n);
            /* Truncated: only the first 2^31 - 1 bytes fit. */
            size_t room = (1ull << 31) - 1;
            memset(buf, 0, n);
            CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
            int rc = MPI_Recv_c(buf, (MPI_Count)room, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &st);
            int cls;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "truncated huge receive: error class %d", cls);
            for (size_t w = 0; w < room / 8; w++)
                CHECK(words[w] == word(w), "truncated huge receive: bytes %zu-%zu wrong", w * 8, w * 8 + 7);
            for (size_t i = room / 8 * 8; i < room; i++)
                CHECK(buf[i] == pattern(i), "truncated huge receive: byte %zu wrong", i);
            for (size_t i = room; i < n; i++)
                CHECK(buf[i] == 0, "truncated huge receive wrote byte %zu past its buffer", i);
        }
        free(buf);
    }
    printf("rank %d of %d huge ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
