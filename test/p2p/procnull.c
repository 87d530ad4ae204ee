/*
 * procnull: every send and receive form aimed at MPI_PROC_NULL completes at
 * once without touching the buffer, and a receive's status says source
 * MPI_PROC_NULL, tag MPI_ANY_TAG, count 0; nothing reaches any rank.
 */
#include "p2p_util.h"

static void check_null_status(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Count count_c = -1;
    CHECK(st->MPI_SOURCE == MPI_PROC_NULL, "%s: MPI_SOURCE %d", what, st->MPI_SOURCE);
    CHECK(st->MPI_TAG == MPI_ANY_TAG, "%s: MPI_TAG %d", what, st->MPI_TAG);
    CHECK_MPI(MPI_Get_count(st, MPI_INT, &count));
    CHECK_MPI(MPI_Get_count_c(st, MPI_INT, &count_c));
    CHECK(count == 0 && count_c == 0, "%s: count %d / %lld", what, count, (long long)count_c);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    const int orig[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    MPI_Status st;
    MPI_Request req;
    const int P = MPI_PROC_NULL;

    CHECK_MPI(MPI_Send(buf, 8, MPI_INT, P, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Ssend(buf, 8, MPI_INT, P, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Rsend(buf, 8, MPI_INT, P, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Bsend(buf, 8, MPI_INT, P, 1, MPI_COMM_WORLD));   /* no buffer needed */
    CHECK_MPI(MPI_Recv(buf, 8, MPI_INT, P, 1, MPI_COMM_WORLD, &st));
    check_null_status(&st, "MPI_Recv");
    CHECK(memcmp(buf, orig, sizeof buf) == 0, "MPI_Recv from MPI_PROC_NULL wrote the buffer");

    const char *names[] = { "MPI_Isend", "MPI_Issend", "MPI_Irsend", "MPI_Ibsend", "MPI_Irecv" };
    for (int k = 0; k < 5; k++) {
        switch (k) {
        case 0: CHECK_MPI(MPI_Isend(buf, 8, MPI_INT, P, 2, MPI_COMM_WORLD, &req)); break;
        case 1: CHECK_MPI(MPI_Issend(buf, 8, MPI_INT, P, 2, MPI_COMM_WORLD, &req)); break;
        case 2: CHECK_MPI(MPI_Irsend(buf, 8, MPI_INT, P, 2, MPI_COMM_WORLD, &req)); break;
        case 3: CHECK_MPI(MPI_Ibsend(buf, 8, MPI_INT, P, 2, MPI_COMM_WORLD, &req)); break;
        default: CHECK_MPI(MPI_Irecv(buf, 8, MPI_INT, P, 2, MPI_COMM_WORLD, &req)); break;
        }
        int flag = 0;
        CHECK_MPI(MPI_Test(&req, &flag, &st));
        CHECK(flag && req == MPI_REQUEST_NULL, "%s to MPI_PROC_NULL was not complete at once", names[k]);
        if (k == 4)
            check_null_status(&st, names[k]);
    }
    CHECK(memcmp(buf, orig, sizeof buf) == 0, "MPI_Irecv from MPI_PROC_NULL wrote the buffer");

    /* Persistent requests, started several times. */
    MPI_Request preqs[2];
    CHECK_MPI(MPI_Send_init(buf, 8, MPI_INT, P, 3, MPI_COMM_WORLD, &preqs[0]));
    CHECK_MPI(MPI_Recv_init(buf, 8, MPI_INT, P, 3, MPI_COMM_WORLD, &preqs[1]));
    for (int it = 0; it < 3; it++) {
        MPI_Status sts[2];
        CHECK_MPI(MPI_Startall(2, preqs));
        int flag = 0;
        CHECK_MPI(MPI_Testall(2, preqs, &flag, sts));
        CHECK(flag, "persistent PROC_NULL requests were not complete at once");
        check_null_status(&sts[1], "persistent receive");
    }
    CHECK_MPI(MPI_Request_free(&preqs[0]));
    CHECK_MPI(MPI_Request_free(&preqs[1]));
    CHECK(memcmp(buf, orig, sizeof buf) == 0, "a PROC_NULL persistent receive wrote the buffer");

    /* Nothing arrived anywhere. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int flag = 1;
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    CHECK(!flag, "a message from rank %d arrived", st.MPI_SOURCE);
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
