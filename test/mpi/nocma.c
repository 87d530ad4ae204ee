/*
 * nocma: ranks that forbid single-copy access to their memory. Before
 * MPI_Init every rank gives up CAP_SYS_PTRACE (root keeps it otherwise, and
 * it overrides the next step) and makes itself not dumpable, so the kernel
 * refuses every process_vm_readv / writev between them with EPERM, as a
 * Yama ptrace_scope or a setuid program would. The emu transport must say
 * so once (the testlist checks stderr) and move rendezvous data through
 * shared memory instead: messages of 64 KiB, 1 MiB and 4 MiB + 3 both ways
 * arrive byte for byte. Prints "rank R of S nocma ok".
 */
#include <mpi.h>

#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../util/check.h"

static void forbid_cross_memory_access(void)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    CHECK(syscall(SYS_capget, &hdr, data) == 0, "capget failed");
    int word = CAP_SYS_PTRACE / 32;
    uint32_t bit = 1u << (CAP_SYS_PTRACE % 32);
    data[word].effective &= ~bit;
    data[word].permitted &= ~bit;
    data[word].inheritable &= ~bit;
    CHECK(syscall(SYS_capset, &hdr, data) == 0, "capset (dropping CAP_SYS_PTRACE) failed");
    CHECK(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0, "prctl(PR_SET_DUMPABLE, 0) failed");
}

static unsigned char pattern(int from, size_t len, size_t i)
{
    return (unsigned char)(i * 131u + len * 7u + (size_t)from * 29u);
}

int main(int argc, char **argv)
{
    forbid_cross_memory_access();
    int rank = -1, size = -1;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2, "run with 2 ranks");
    int peer = 1 - rank;
    const size_t sizes[] = { 65536, 1u << 20, (4u << 20) + 3 };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t len = sizes[k];
        unsigned char *out = malloc(len), *in = malloc(len);
        CHECK(out && in, "out of memory");
        for (size_t i = 0; i < len; i++)
            out[i] = pattern(rank, len, i);
        memset(in, 0, len);
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(out, (int)len, MPI_BYTE, peer, (int)k, in, (int)len, MPI_BYTE, peer, (int)k,
                               MPI_COMM_WORLD, &st));
        int count = -1;
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)len, "%zu bytes: count %d", len, count);
        for (size_t i = 0; i < len; i++)
            CHECK(in[i] == pattern(peer, len, i), "%zu bytes: byte %zu is %u, expected %u", len, i, in[i],
                  pattern(peer, len, i));
        free(out);
        free(in);
    }
    CHECK_MPI(MPI_Finalize());
    printf("rank %d of %d nocma ok\n", rank, size);
    return 0;
}
