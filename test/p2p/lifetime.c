/*
 * lifetime: a pending operation keeps its communicator and datatype alive.
 * A receive with a derived (non-contiguous) type whose handle is freed
 * before the message arrives still unpacks into the right places; a
 * persistent send whose type was freed keeps working across starts; a
 * receive posted on a duplicated communicator that is freed before the
 * message arrives still completes, with the data and the status. Pairs.
 */
#include "p2p_util.h"

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int partner = (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL;
    int receiver = rank % 2;
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));

    if (partner != MPI_PROC_NULL) {
        /* 1. Receive type freed while the receive is pending. */
        double grid[40];
        if (receiver) {
            MPI_Datatype every4;
            CHECK_MPI(MPI_Type_vector(10, 1, 4, MPI_DOUBLE, &every4));
            CHECK_MPI(MPI_Type_commit(&every4));
            for (int i = 0; i < 40; i++)
                grid[i] = -1;
            MPI_Request req;
            CHECK_MPI(MPI_Irecv(grid, 1, every4, partner, 1, MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Type_free(&every4));
            CHECK(every4 == MPI_DATATYPE_NULL, "MPI_Type_free did not reset the handle");
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, 2, MPI_COMM_WORLD));   /* now send */
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            for (int i = 0; i < 40; i++)
                CHECK(grid[i] == (i % 4 == 0 ? 1000.0 + i / 4 : -1), "grid[%d] = %g", i, grid[i]);
        } else {
            double col[10];
            for (int i = 0; i < 10; i++)
                col[i] = 1000.0 + i;
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(col, 10, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD));
        }

        /* 2. A persistent send whose type was freed right after the init. */
        if (!receiver) {
            MPI_Datatype pairs;
            CHECK_MPI(MPI_Type_vector(5, 2, 3, MPI_INT, &pairs));   /* ints 0,1,3,4,6,7,9,10,12,13 */
            CHECK_MPI(MPI_Type_commit(&pairs));
            int src[15];
            MPI_Request preq;
            CHECK_MPI(MPI_Send_init(src, 1, pairs, partner, 3, MPI_COMM_WORLD, &preq));
            CHECK_MPI(MPI_Type_free(&pairs));
            for (int it = 0; it < 5; it++) {
                for (int i = 0; i < 15; i++)
                    src[i] = it * 100 + i;
                CHECK_MPI(MPI_Start(&preq));
                CHECK_MPI(MPI_Wait(&preq, MPI_STATUS_IGNORE));
            }
            CHECK_MPI(MPI_Request_free(&preq));
        } else {
            for (int it = 0; it < 5; it++) {
                int got[10];
                CHECK_MPI(MPI_Recv(got, 10, MPI_INT, partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                const int at[10] = { 0, 1, 3, 4, 6, 7, 9, 10, 12, 13 };
                for (int i = 0; i < 10; i++)
                    CHECK(got[i] == it * 100 + at[i], "start %d: got[%d] = %d", it, i, got[i]);
            }
        }

        /* 3. A receive on a communicator freed before the message arrives. */
        if (receiver) {
            int value = -1;
            MPI_Request req;
            CHECK_MPI(MPI_Irecv(&value, 1, MPI_INT, partner, 4, dup, &req));
            CHECK_MPI(MPI_Comm_free(&dup));
            CHECK(dup == MPI_COMM_NULL, "MPI_Comm_free did not reset the handle");
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, 5, MPI_COMM_WORLD));
            MPI_Status st;
            CHECK_MPI(MPI_Wait(&req, &st));
            CHECK(value == 4444 && st.MPI_SOURCE == partner && st.MPI_TAG == 4,
                  "receive on a freed communicator: value %d, status %d/%d", value, st.MPI_SOURCE, st.MPI_TAG);
        } else {
            int value = 4444;
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(&value, 1, MPI_INT, partner, 4, dup));
            CHECK_MPI(MPI_Comm_free(&dup));
        }
    } else {
        CHECK_MPI(MPI_Comm_free(&dup));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
