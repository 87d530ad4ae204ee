/*
 * jacobi2d_neighbor: the same plate as jacobi2d, with the whole halo exchange
 * as one persistent neighbourhood collective (MPI_Neighbor_alltoallw_init, MPI-4)
 * on the Cartesian communicator. The problem, the decomposition and the
 * bit-for-bit check against a serial run are in jacobi2d.h.
 *
 *   mpirun -n 4 examples/jacobi2d_neighbor [rows [columns [steps]]]     (default 120 90 200)
 *
 * On a Cartesian communicator the neighbours are, in order, the source and
 * the destination of MPI_Cart_shift in dimension 0, then in dimension 1: here
 * up, down, left, right. Block k of the send side goes to neighbour k and
 * block k of the receive side comes from it. The alltoallw form takes a
 * datatype and a byte displacement per neighbour, so rows (contiguous) and
 * columns (a vector type) go straight from and into the field. Neighbours
 * beyond the plate's border are MPI_PROC_NULL: their blocks are not sent and
 * their halo is left as it is (the fixed border temperatures).
 */
#include "jacobi2d.h"

/* The persistent exchange that fills buffer b's halo frame. Sends are
 * described from the first interior point, receives from the frame's corner,
 * so the two buffer arguments are distinct (their regions never overlap). */
static void halo_exchange(const struct jacobi_grid *g, int b, MPI_Request *req)
{
    long c0 = g->count0, c1 = g->count1, row = g->stride * (long)sizeof(double);
    const long d = (long)sizeof(double);
    /* up, down, left, right */
    int counts[4] = {(int)c1, (int)c1, 1, 1};
    MPI_Datatype types[4] = {MPI_DOUBLE, MPI_DOUBLE, g->column, g->column};
    MPI_Aint send_at[4] = {0, (c0 - 1) * row, 0, (c1 - 1) * d};
    MPI_Aint recv_at[4] = {d, (c0 + 1) * row + d, row, row + (c1 + 1) * d};
    MPI_Neighbor_alltoallw_init(jacobi_at(g, b, 1, 1), counts, send_at, types, jacobi_at(g, b, 0, 0), counts,
                                recv_at, types, g->cart, MPI_INFO_NULL, req);
}

int main(int argc, char **argv)
{
    struct jacobi_grid g;
    MPI_Init(&argc, &argv);
    if (jacobi_setup(&g, argc, argv, "jacobi2d_neighbor") != 0) {
        MPI_Finalize();
        return 2;
    }

    MPI_Request halo[2];
    halo_exchange(&g, 0, &halo[0]);
    halo_exchange(&g, 1, &halo[1]);

    double start = MPI_Wtime();
    for (int t = 0; t < g.steps; t++) {
        int from = t % 2;
        MPI_Start(&halo[from]);
        jacobi_sweep_inner(&g, from);
        MPI_Wait(&halo[from], MPI_STATUS_IGNORE);
        jacobi_sweep_frame(&g, from);
    }
    double elapsed = MPI_Wtime() - start;
    MPI_Request_free(&halo[0]);
    MPI_Request_free(&halo[1]);

    int status = jacobi_finish(&g, "jacobi2d_neighbor", elapsed);
    MPI_Finalize();
    return status;
}
