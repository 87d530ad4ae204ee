/* Built by FindMPI's flags: a singleton run (no launcher) prints its rank. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank = -1, size = 0;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("hello_findmpi: rank %d of %d\n", rank, size);
    return MPI_Finalize() == MPI_SUCCESS ? 0 : 3;
}
