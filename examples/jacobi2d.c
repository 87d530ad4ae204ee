/*
 * jacobi2d: the heat equation on a plate, decomposed over a 2-D Cartesian
 * communicator (MPI_Dims_create + MPI_Cart_create), halos exchanged with
 * persistent point-to-point requests; columns travel as an MPI_Type_vector,
 * without packing. The problem, the decomposition and the bit-for-bit check
 * against a serial run are in jacobi2d.h.
 *
 *   mpirun -n 4 examples/jacobi2d [rows [columns [steps]]]     (default 120 90 200)
 */
#include "jacobi2d.h"

/* The eight requests that fill buffer b's halo frame from the four neighbours.
 * The tag says which way the data travels, so each receive matches the
 * opposite send even when a neighbour appears twice (it cannot here, the grid
 * is not periodic, but the habit costs nothing). */
static void halo_requests(const struct jacobi_grid *g, int b, MPI_Request req[8])
{
    enum { DOWNWARDS, UPWARDS, RIGHTWARDS, LEFTWARDS };
    long c0 = g->count0, c1 = g->count1;
    int n1 = (int)c1;
    MPI_Recv_init(jacobi_at(g, b, 0, 1), n1, MPI_DOUBLE, g->up, DOWNWARDS, g->cart, &req[0]);
    MPI_Recv_init(jacobi_at(g, b, c0 + 1, 1), n1, MPI_DOUBLE, g->down, UPWARDS, g->cart, &req[1]);
    MPI_Recv_init(jacobi_at(g, b, 1, 0), 1, g->column, g->left, RIGHTWARDS, g->cart, &req[2]);
    MPI_Recv_init(jacobi_at(g, b, 1, c1 + 1), 1, g->column, g->right, LEFTWARDS, g->cart, &req[3]);
    MPI_Send_init(jacobi_at(g, b, c0, 1), n1, MPI_DOUBLE, g->down, DOWNWARDS, g->cart, &req[4]);
    MPI_Send_init(jacobi_at(g, b, 1, 1), n1, MPI_DOUBLE, g->up, UPWARDS, g->cart, &req[5]);
    MPI_Send_init(jacobi_at(g, b, 1, c1), 1, g->column, g->right, RIGHTWARDS, g->cart, &req[6]);
    MPI_Send_init(jacobi_at(g, b, 1, 1), 1, g->column, g->left, LEFTWARDS, g->cart, &req[7]);
}

int main(int argc, char **argv)
{
    struct jacobi_grid g;
    MPI_Init(&argc, &argv);
    if (jacobi_setup(&g, argc, argv, "jacobi2d") != 0) {
        MPI_Finalize();
        return 2;
    }

    MPI_Request halo[2][8];
    halo_requests(&g, 0, halo[0]);
    halo_requests(&g, 1, halo[1]);

    double start = MPI_Wtime();
    for (int t = 0; t < g.steps; t++) {
        int from = t % 2;
        MPI_Startall(8, halo[from]);
        jacobi_sweep_inner(&g, from);
        MPI_Waitall(8, halo[from], MPI_STATUSES_IGNORE);
        jacobi_sweep_frame(&g, from);
    }
    double elapsed = MPI_Wtime() - start;
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 8; k++)
            MPI_Request_free(&halo[b][k]);

    int status = jacobi_finish(&g, "jacobi2d", elapsed);
    MPI_Finalize();
    return status;
}
