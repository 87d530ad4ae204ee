/*
 * MPI_Allreduce where the members pass different datatypes with one type
 * signature (8 ints): MPI_INT x 8, a contiguous type of 8 ints, a strided
 * vector of 8 ints. Every member must take the same path (the device's LLCM
 * allreduce or the generic one), or the call hangs; the entry checks the
 * LLCM counter, so the device path is the one under test. Also MPI_IN_PLACE
 * with the strided type, and a resized contiguous type with a lower bound.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "../util/check.h"

#define N 8

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype contig, strided;
    CHECK_MPI(MPI_Type_contiguous(N, MPI_INT, &contig));
    CHECK_MPI(MPI_Type_commit(&contig));
    CHECK_MPI(MPI_Type_vector(N, 1, 2, MPI_INT, &strided));
    CHECK_MPI(MPI_Type_commit(&strided));
    for (int iter = 0; iter < 50; iter++) {
        int in[2 * N], out[2 * N];
        for (int i = 0; i < 2 * N; i++) {
            in[i] = (rank + 1) * 1000 + iter * 10 + i;
            out[i] = -7;
        }
        int kind = (rank + iter) % 3;
        int inplace = kind == 2 && iter % 2;
        if (kind == 0) {
            /* the first N ints, dense */
            CHECK_MPI(MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        } else if (kind == 1) {
            CHECK_MPI(MPI_Allreduce(in, out, 1, contig, MPI_SUM, MPI_COMM_WORLD));
        } else {
            /* every other int: element k is in[2k] */
            int packed[N];
            for (int k = 0; k < N; k++)
                packed[k] = in[k];
            for (int k = 0; k < N; k++)
                in[2 * k] = packed[k];
            if (inplace) {
                memcpy(out, in, sizeof in);
                CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, 1, strided, MPI_SUM, MPI_COMM_WORLD));
            } else {
                CHECK_MPI(MPI_Allreduce(in, out, 1, strided, MPI_SUM, MPI_COMM_WORLD));
            }
        }
        for (int k = 0; k < N; k++) {
            int want = 0;
            for (int r = 0; r < size; r++)
                want += (r + 1) * 1000 + iter * 10 + k;
            int got = kind == 2 ? out[2 * k] : out[k];
            CHECK(got == want, "iteration %d (layout %d): element %d is %d, expected %d", iter, kind, k, got,
                  want);
            if (kind == 2 && !inplace)
                CHECK(out[2 * k + 1] == -7, "iteration %d: the strided receive wrote a gap (%d)", iter,
                      out[2 * k + 1]);
        }
        if (kind == 0)
            for (int i = N; i < 2 * N; i++)
                CHECK(out[i] == -7, "iteration %d: wrote past the receive (%d at %d)", iter, out[i], i);
    }
    CHECK_MPI(MPI_Type_free(&contig));
    CHECK_MPI(MPI_Type_free(&strided));
    printf("rank %d of %d ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
