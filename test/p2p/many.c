/*
 * many: 10,000 receives and 10,000 sends outstanding at once on every rank
 * (a ring), completed by one MPI_Waitall; first with every receive posted
 * before any message arrives, then with every message sent before any receive
 * is posted. Each message carries (source, index); tags cycle through 7
 * values, so matching works through long queues in order.
 */
#include "p2p_util.h"

#define N 10000

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int (*out)[2] = malloc(sizeof *out * N), (*in)[2] = malloc(sizeof *in * N);
    MPI_Request *reqs = malloc(sizeof *reqs * 2 * N);
    MPI_Status *sts = malloc(sizeof *sts * 2 * N);
    CHECK(out && in && reqs && sts, "out of memory");

    for (int phase = 0; phase < 2; phase++) {
        for (int i = 0; i < N; i++) {
            out[i][0] = rank;
            out[i][1] = phase * N + i;
            in[i][0] = in[i][1] = -1;
        }
        if (phase == 0) {
            for (int i = 0; i < N; i++)
                CHECK_MPI(MPI_Irecv(in[i], 2, MPI_INT, left, i % 7, MPI_COMM_WORLD, &reqs[i]));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            for (int i = 0; i < N; i++)
                CHECK_MPI(MPI_Isend(out[i], 2, MPI_INT, right, i % 7, MPI_COMM_WORLD, &reqs[N + i]));
        } else {
            for (int i = 0; i < N; i++)
                CHECK_MPI(MPI_Isend(out[i], 2, MPI_INT, right, i % 7, MPI_COMM_WORLD, &reqs[N + i]));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            for (int i = 0; i < N; i++)
                CHECK_MPI(MPI_Irecv(in[i], 2, MPI_INT, left, i % 7, MPI_COMM_WORLD, &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(2 * N, reqs, sts));
        for (int i = 0; i < 2 * N; i++)
            CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        for (int i = 0; i < N; i++) {
            CHECK(in[i][0] == left && in[i][1] == phase * N + i, "phase %d receive %d got (%d, %d)", phase, i,
                  in[i][0], in[i][1]);
            CHECK(sts[i].MPI_SOURCE == left && sts[i].MPI_TAG == i % 7, "phase %d receive %d: status %d/%d",
                  phase, i, sts[i].MPI_SOURCE, sts[i].MPI_TAG);
        }
    }
    free(out);
    free(in);
    free(reqs);
    free(sts);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
