/*
 * bigmsg: one message of 2^31 + 8 bytes (beyond what an int count can say)
 * from rank 0 to rank 1 with MPI_Send_c / MPI_Recv_c, checked word by word;
 * MPI_Probe reports its size first; MPI_Get_count gives MPI_UNDEFINED, MPI_Get_count_c the exact count, and
 * MPI_Get_elements_c the same. Then the same amount as 2049 elements of a
 * 1 MiB contiguous type with an int count (sizes overflow an int, counts do
 * not). Two ranks; needs about 4.5 GB of memory in total.
 */
#include "p2p_util.h"

#include <stdint.h>

#define BIG (((size_t)1 << 31) + 8)

static uint64_t word(size_t i, uint64_t seed)
{
    return (uint64_t)i * 0x9E3779B97F4A7C15ull ^ seed;
}

static void fill(uint64_t *w, size_t nwords, uint64_t seed)
{
    for (size_t i = 0; i < nwords; i++)
        w[i] = word(i, seed);
}

static void verify(const uint64_t *w, size_t nwords, uint64_t seed, const char *what)
{
    for (size_t i = 0; i < nwords; i++)
        CHECK(w[i] == word(i, seed), "%s: word %zu (byte %zu) is wrong", what, i, i * 8);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2, "run with exactly 2 ranks");
    size_t nwords = BIG / 8;
    size_t mib_bytes = (size_t)2049 << 20;   /* the second message, a bit larger */
    uint64_t *buf = malloc(mib_bytes);
    CHECK(buf, "cannot allocate %zu bytes", mib_bytes);

    if (rank == 0) {
        fill(buf, nwords, 0x1234);
        CHECK_MPI(MPI_Send_c(buf, (MPI_Count)BIG, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
    } else {
        memset(buf, 0, BIG);
        MPI_Status st;
        /* The probe already knows the size (an int count cannot say it). */
        int probe_count = 0;
        MPI_Count probe_count_c = 0;
        CHECK_MPI(MPI_Probe(0, 1, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &probe_count));
        CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &probe_count_c));
        CHECK(probe_count == MPI_UNDEFINED && probe_count_c == (MPI_Count)BIG,
              "MPI_Probe of 2^31+8 bytes: Get_count %d, Get_count_c %lld", probe_count, (long long)probe_count_c);
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 1, "MPI_Probe status: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        CHECK_MPI(MPI_Recv_c(buf, (MPI_Count)BIG, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
        verify(buf, nwords, 0x1234, "MPI_BYTE message");
        int count = 0;
        MPI_Count count_c = 0, elements_c = 0;
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &count_c));
        CHECK_MPI(MPI_Get_elements_c(&st, MPI_BYTE, &elements_c));
        CHECK(count == MPI_UNDEFINED, "MPI_Get_count of 2^31+8 bytes gave %d, expected MPI_UNDEFINED", count);
        CHECK(count_c == (MPI_Count)BIG && elements_c == (MPI_Count)BIG, "MPI_Get_count_c %lld, elements %lld",
              (long long)count_c, (long long)elements_c);
    }

    /* 2049 MiB as 2049 elements of a 1 MiB type. */
    MPI_Datatype mib;
    CHECK_MPI(MPI_Type_contiguous(1 << 20, MPI_BYTE, &mib));
    CHECK_MPI(MPI_Type_commit(&mib));
    size_t bytes = mib_bytes;
    if (rank == 0) {
        fill(buf, bytes / 8, 0x5678);
        CHECK_MPI(MPI_Send(buf, 2049, mib, 1, 2, MPI_COMM_WORLD));
    } else {
        MPI_Status st;
        CHECK_MPI(MPI_Recv(buf, 2049, mib, 0, 2, MPI_COMM_WORLD, &st));
        verify(buf, bytes / 8, 0x5678, "1 MiB elements");
        int count = 0;
        CHECK_MPI(MPI_Get_count(&st, mib, &count));
        CHECK(count == 2049, "MPI_Get_count in 1 MiB elements: %d", count);
    }
    CHECK_MPI(MPI_Type_free(&mib));
    free(buf);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
