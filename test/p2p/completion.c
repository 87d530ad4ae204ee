/*
 * completion: the semantics of the multiple-completion calls, driven on
 * MPI_COMM_SELF so that which request completes when is under the test's
 * control. Arrays of only null / inactive entries (MPI_UNDEFINED index and
 * outcount, flag true, empty status); MPI_Testall leaves everything untouched
 * while one request is pending; MPI_Waitany / Testany return the completed
 * entry and free just it; MPI_Waitsome / Testsome return compact indices and
 * statuses; MPI_Request_get_status (and its MPI-4.1 array forms) do not free.
 * Then the same calls over MPI_COMM_WORLD in a ring, to see real traffic, and
 * eager sends completed in the call (one shared request object) finished by
 * every route: Request_free, Cancel + Wait, Request_get_status, Test, Waitall.
 */
#include "p2p_util.h"

#define N 6

static void check_empty(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0,
          "%s: not an empty status (source %d, tag %d, count %d)", what, st->MPI_SOURCE, st->MPI_TAG, count);
}

static void send_self(int tag)
{
    int v = 1000 + tag;
    CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, tag, MPI_COMM_SELF));
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MPI_Status st, sts[N];
    int idx = -5, flag = -5, outcount = -5, indices[N];

    /* ---- only null and inactive entries ---- */
    int dummy;
    MPI_Request inactive;
    CHECK_MPI(MPI_Recv_init(&dummy, 1, MPI_INT, 0, 50, MPI_COMM_SELF, &inactive));
    MPI_Request nulls[3] = { MPI_REQUEST_NULL, inactive, MPI_REQUEST_NULL };
    CHECK_MPI(MPI_Waitany(3, nulls, &idx, &st));
    CHECK(idx == MPI_UNDEFINED, "MPI_Waitany over inactive entries: index %d", idx);
    check_empty(&st, "MPI_Waitany over inactive entries");
    CHECK_MPI(MPI_Testany(3, nulls, &idx, &flag, &st));
    CHECK(flag && idx == MPI_UNDEFINED, "MPI_Testany over inactive entries: flag %d index %d", flag, idx);
    CHECK_MPI(MPI_Waitsome(3, nulls, &outcount, indices, sts));
    CHECK(outcount == MPI_UNDEFINED, "MPI_Waitsome over inactive entries: outcount %d", outcount);
    CHECK_MPI(MPI_Testsome(3, nulls, &outcount, indices, sts));
    CHECK(outcount == MPI_UNDEFINED, "MPI_Testsome over inactive entries: outcount %d", outcount);
    CHECK_MPI(MPI_Testall(3, nulls, &flag, sts));
    CHECK(flag, "MPI_Testall over inactive entries: flag 0");
    check_empty(&sts[1], "MPI_Testall's status of an inactive entry");
    CHECK_MPI(MPI_Waitall(3, nulls, MPI_STATUSES_IGNORE));
    CHECK(nulls[1] == inactive, "MPI_Waitall freed an inactive persistent request");
    CHECK_MPI(MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Waitany(0, NULL, &idx, &st));
    CHECK(idx == MPI_UNDEFINED, "MPI_Waitany(0): index %d", idx);
    CHECK_MPI(MPI_Request_free(&inactive));

    /* ---- self-driven completions ---- */
    int vals[N];
    MPI_Request reqs[N];
    for (int i = 0; i < N; i++) {
        vals[i] = -1;
        CHECK_MPI(MPI_Irecv(&vals[i], 1, MPI_INT, 0, i, MPI_COMM_SELF, &reqs[i]));
    }
    reqs[5] = MPI_REQUEST_NULL;   /* a null entry among them */
    int pending = 5;

    CHECK_MPI(MPI_Testany(N, reqs, &idx, &flag, &st));
    CHECK(!flag && idx == MPI_UNDEFINED, "MPI_Testany with nothing complete: flag %d index %d", flag, idx);
    CHECK_MPI(MPI_Testsome(N, reqs, &outcount, indices, sts));
    CHECK(outcount == 0, "MPI_Testsome with nothing complete: outcount %d", outcount);

    send_self(3);
    CHECK_MPI(MPI_Waitany(N, reqs, &idx, &st));
    CHECK(idx == 3 && st.MPI_TAG == 3 && vals[3] == 1003, "MPI_Waitany: index %d tag %d value %d", idx, st.MPI_TAG,
          vals[3]);
    CHECK(reqs[3] == MPI_REQUEST_NULL, "MPI_Waitany did not free the completed request");
    pending--;

    /* Testall with requests still pending touches nothing. */
    send_self(0);
    MPI_Request before[N];
    memcpy(before, reqs, sizeof reqs);
    CHECK_MPI(MPI_Testall(N, reqs, &flag, sts));
    CHECK(!flag, "MPI_Testall with pending requests: flag 1");
    CHECK(memcmp(before, reqs, sizeof reqs) == 0, "MPI_Testall changed the array while returning flag 0");

    /* Request_get_status: complete, but not freed; then Wait frees it. */
    flag = 0;
    double end = MPI_Wtime() + 10;
    while (!flag && MPI_Wtime() < end)
        CHECK_MPI(MPI_Request_get_status(reqs[0], &flag, &st));
    CHECK(flag && st.MPI_TAG == 0, "MPI_Request_get_status: flag %d tag %d", flag, st.MPI_TAG);
    CHECK(reqs[0] != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
    int any_idx = -1;
    CHECK_MPI(MPI_Request_get_status_any(N, reqs, &any_idx, &flag, &st));
    CHECK(flag && any_idx == 0, "MPI_Request_get_status_any: flag %d index %d", flag, any_idx);
    CHECK_MPI(MPI_Request_get_status_some(N, reqs, &outcount, indices, sts));
    CHECK(outcount == 1 && indices[0] == 0, "MPI_Request_get_status_some: outcount %d", outcount);
    CHECK_MPI(MPI_Request_get_status_all(N, reqs, &flag, sts));
    CHECK(!flag, "MPI_Request_get_status_all with pending requests: flag 1");
    CHECK_MPI(MPI_Wait(&reqs[0], &st));
    CHECK(reqs[0] == MPI_REQUEST_NULL && vals[0] == 1000, "MPI_Wait after get_status");
    pending--;

    /* Waitsome / Testsome: compact indices and statuses. */
    send_self(4);
    send_self(1);
    int got = 0, seen[N] = { 0 };
    end = MPI_Wtime() + 10;
    while (got < 2 && MPI_Wtime() < end) {
        CHECK_MPI(MPI_Waitsome(N, reqs, &outcount, indices, sts));
        CHECK(outcount >= 1 && outcount <= 2 - got, "MPI_Waitsome: outcount %d", outcount);
        for (int k = 0; k < outcount; k++) {
            int i = indices[k];
            CHECK((i == 1 || i == 4) && !seen[i]++, "MPI_Waitsome: index %d", i);
            CHECK(sts[k].MPI_TAG == i && vals[i] == 1000 + i, "MPI_Waitsome: status %d tag %d", k, sts[k].MPI_TAG);
            CHECK(reqs[i] == MPI_REQUEST_NULL, "MPI_Waitsome did not free entry %d", i);
        }
        got += outcount;
    }
    pending -= 2;
    send_self(2);
    got = 0;
    end = MPI_Wtime() + 10;
    while (!got && MPI_Wtime() < end) {
        CHECK_MPI(MPI_Testsome(N, reqs, &outcount, indices, sts));
        got = outcount;
    }
    CHECK(got == 1 && indices[0] == 2 && sts[0].MPI_TAG == 2 && vals[2] == 1002, "MPI_Testsome: %d, index %d",
          got, indices[0]);
    pending--;
    CHECK(pending == 0, "bookkeeping");
    CHECK_MPI(MPI_Testall(N, reqs, &flag, MPI_STATUSES_IGNORE));
    CHECK(flag, "MPI_Testall with everything done: flag 0");

    /* ---- the same calls with real traffic: a ring, Waitany until all done ---- */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[N], in[N];
    MPI_Request ring[2 * N];
    for (int i = 0; i < N; i++) {
        out[i] = rank * 10 + i;
        in[i] = -1;
        CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, left, i, MPI_COMM_WORLD, &ring[i]));
    }
    for (int i = 0; i < N; i++)
        CHECK_MPI(MPI_Isend(&out[i], 1, MPI_INT, right, i, MPI_COMM_WORLD, &ring[N + i]));
    int done = 0, marks[2 * N] = { 0 };
    while (done < 2 * N) {
        CHECK_MPI(MPI_Waitany(2 * N, ring, &idx, &st));
        CHECK(idx >= 0 && idx < 2 * N && !marks[idx]++, "MPI_Waitany gave index %d twice or out of range", idx);
        if (idx < N)
            CHECK(st.MPI_SOURCE == left && st.MPI_TAG == idx && in[idx] == left * 10 + idx,
                  "ring receive %d: source %d tag %d value %d", idx, st.MPI_SOURCE, st.MPI_TAG, in[idx]);
        done++;
    }
    CHECK_MPI(MPI_Waitany(2 * N, ring, &idx, &st));
    CHECK(idx == MPI_UNDEFINED, "MPI_Waitany after everything completed: index %d", idx);

    /* ---- eager sends completed in the call (they may share one request
     * object): each handle finishes on its own, by every route, and the
     * others stay usable; the data all arrive, in order ---- */
    MPI_Request eager[N];
    for (int i = 0; i < N; i++) {
        out[i] = rank * 100 + i;
        in[i] = -1;
        CHECK_MPI(MPI_Isend(&out[i], 1, MPI_INT, right, 40, MPI_COMM_WORLD, &eager[i]));
    }
    CHECK_MPI(MPI_Request_free(&eager[0]));
    CHECK(eager[0] == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
    CHECK_MPI(MPI_Cancel(&eager[1]));   /* complete already: nothing to cancel */
    CHECK_MPI(MPI_Wait(&eager[1], &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(!flag && eager[1] == MPI_REQUEST_NULL, "cancelled eager send: cancelled %d", flag);
    int spins = 0;
    do {
        CHECK_MPI(MPI_Request_get_status(eager[2], &flag, MPI_STATUS_IGNORE));
    } while (!flag && ++spins < 1000000);
    CHECK(flag && eager[2] != MPI_REQUEST_NULL, "MPI_Request_get_status on an eager send: flag %d", flag);
    do {
        CHECK_MPI(MPI_Test(&eager[2], &flag, MPI_STATUS_IGNORE));
    } while (!flag);
    CHECK(eager[2] == MPI_REQUEST_NULL, "MPI_Test done but the handle is set");
    MPI_Status ests[N];
    CHECK_MPI(MPI_Waitall(N, eager, ests));
    for (int i = 0; i < N; i++)
        CHECK(eager[i] == MPI_REQUEST_NULL, "MPI_Waitall left entry %d set", i);
    for (int i = 0; i < N; i++) {
        CHECK_MPI(MPI_Recv(&in[i], 1, MPI_INT, left, 40, MPI_COMM_WORLD, &st));
        CHECK(in[i] == left * 100 + i, "eager send %d from rank %d: got %d", i, left, in[i]);
    }

    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
