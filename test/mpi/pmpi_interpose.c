/*
 * pmpi_interpose: the profiling interface. This program defines its own
 * MPI_Comm_rank and MPI_Comm_size, which count their calls and forward to
 * PMPI_Comm_rank / PMPI_Comm_size. The library's MPI_ names are weak aliases,
 * so these definitions must win; the library itself must not route its
 * internal work through them (the counts must be exactly the program's calls).
 */
#include <mpi.h>

#include <stdio.h>

#include "../util/check.h"

static int rank_calls, size_calls;

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    rank_calls++;
    return PMPI_Comm_rank(comm, rank);
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    size_calls++;
    return PMPI_Comm_size(comm, size);
}

int main(int argc, char **argv)
{
    int rank = -1, size = -1, prank = -2, psize = -2, self_rank = -1, self_size = -1;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK(rank_calls == 0 && size_calls == 0,
          "MPI_Init called the program's MPI_Comm_rank %d and MPI_Comm_size %d times", rank_calls, size_calls);

    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_SELF, &self_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_SELF, &self_size));
    CHECK(rank_calls == 2 && size_calls == 2,
          "the wrappers counted %d MPI_Comm_rank and %d MPI_Comm_size calls, expected 2 and 2",
          rank_calls, size_calls);

    /* Direct PMPI calls agree and bypass the wrappers. */
    CHECK_MPI(PMPI_Comm_rank(MPI_COMM_WORLD, &prank));
    CHECK_MPI(PMPI_Comm_size(MPI_COMM_WORLD, &psize));
    CHECK(prank == rank && psize == size, "PMPI gave rank %d of %d, MPI gave %d of %d", prank, psize, rank, size);
    CHECK(rank >= 0 && rank < size, "rank %d of %d", rank, size);
    CHECK(self_rank == 0 && self_size == 1, "MPI_COMM_SELF: rank %d of %d", self_rank, self_size);
    CHECK(rank_calls == 2 && size_calls == 2, "PMPI calls went through the wrappers");

    CHECK_MPI(MPI_Finalize());
    CHECK(rank_calls == 2 && size_calls == 2,
          "MPI_Finalize called the program's MPI_Comm_rank/size (%d/%d calls)", rank_calls, size_calls);
    printf("rank %d of %d interposed\n", rank, size);
    return 0;
}
