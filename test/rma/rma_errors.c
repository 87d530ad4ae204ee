/*
 * One-sided errors under MPI_ERRORS_RETURN: each bad call returns the
 * right class with a message naming the call, and changes nothing; the
 * window still works afterwards. A user window error handler is called
 * with the window and the code; MPI_Win_call_errhandler reaches it too.
 */
#include "../util/check.h"
#include "../util/suite.h"

static int rank, size, right;
static int handler_calls, handler_class;
static MPI_Win handler_win;

static void on_error(MPI_Win *win, int *code, ...)
{
    handler_calls++;
    handler_win = *win;
    MPI_Error_class(*code, &handler_class);
}

static void user_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)in, (void)inout, (void)len, (void)type;
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    /* Errors with no window (an invalid handle) go to MPI_COMM_SELF's handler;
     * creation errors to the communicator's. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    int buf[8] = { 0 }, res[8];
    MPI_Win win = MPI_WIN_NULL;
    CHECK_ERR(MPI_Put(buf, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_WIN_NULL), MPI_ERR_WIN, "MPI_Put");
    CHECK_ERR(MPI_Win_fence(0, MPI_WIN_NULL), MPI_ERR_WIN, "MPI_Win_fence");
    CHECK_ERR(MPI_Win_create(buf, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_SIZE, "MPI_Win_create");
    CHECK_ERR(MPI_Win_create(buf, 8, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_DISP, "MPI_Win_create");
    CHECK_ERR(MPI_Win_create(buf, 8, 1, MPI_INFO_NULL, MPI_COMM_NULL, &win), MPI_ERR_COMM, "MPI_Win_create");

    int *mem;
    CHECK_MPI(MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < 8; i++)
        mem[i] = 100 + i;
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "a window does not start with MPI_ERRORS_ARE_FATAL");
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    /* Outside any epoch. */
    CHECK_ERR(MPI_Put(buf, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "MPI_Put");
    CHECK_ERR(MPI_Get(res, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "MPI_Get");
    CHECK_ERR(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC, "MPI_Win_unlock");
    CHECK_ERR(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all");
    CHECK_ERR(MPI_Win_flush(right, win), MPI_ERR_RMA_SYNC, "MPI_Win_flush");
    CHECK_ERR(MPI_Win_flush_all(win), MPI_ERR_RMA_SYNC, "MPI_Win_flush_all");
    CHECK_ERR(MPI_Win_complete(win), MPI_ERR_RMA_SYNC, "MPI_Win_complete");
    CHECK_ERR(MPI_Win_wait(win), MPI_ERR_RMA_SYNC, "MPI_Win_wait");
    CHECK_ERR(MPI_Win_lock(12345, right, 0, win), MPI_ERR_LOCKTYPE, "MPI_Win_lock");
    CHECK_ERR(MPI_Win_lock(MPI_LOCK_SHARED, right, 1 << 20, win), MPI_ERR_ASSERT, "MPI_Win_lock");
    CHECK_ERR(MPI_Win_fence(MPI_MODE_NOCHECK, win), MPI_ERR_ASSERT, "MPI_Win_fence");
    CHECK_ERR(MPI_Win_lock(MPI_LOCK_SHARED, size, 0, win), MPI_ERR_RANK, "MPI_Win_lock");

    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CHECK_ERR(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC, "MPI_Win_lock");
    CHECK_ERR(MPI_Put(buf, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK, "MPI_Put");
    CHECK_ERR(MPI_Put(buf, 1, MPI_INT, right, -1, 1, MPI_INT, win), MPI_ERR_DISP, "MPI_Put");
    CHECK_ERR(MPI_Put(buf, 2, MPI_INT, right, 7, 2, MPI_INT, win), MPI_ERR_RMA_RANGE, "MPI_Put");
    CHECK_ERR(MPI_Get(res, 9, MPI_INT, right, 0, 9, MPI_INT, win), MPI_ERR_RMA_RANGE, "MPI_Get");
    CHECK_ERR(MPI_Put(buf, -1, MPI_INT, right, 0, -1, MPI_INT, win), MPI_ERR_COUNT, "MPI_Put");
    CHECK_ERR(MPI_Put(buf, 2, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_TYPE, "MPI_Put");
    CHECK_ERR(MPI_Put(buf, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_INT, win), MPI_ERR_TYPE, "MPI_Put");
    MPI_Datatype uncommitted;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &uncommitted));
    CHECK_ERR(MPI_Put(buf, 1, uncommitted, right, 0, 2, MPI_INT, win), MPI_ERR_TYPE, "MPI_Put");
    MPI_Type_free(&uncommitted);
    MPI_Op uop;
    CHECK_MPI(MPI_Op_create(user_op, 1, &uop));
    CHECK_ERR(MPI_Accumulate(buf, 1, MPI_INT, right, 0, 1, MPI_INT, uop, win), MPI_ERR_OP, "MPI_Accumulate");
    MPI_Op_free(&uop);
    CHECK_ERR(MPI_Accumulate(buf, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_OP_NULL, win), MPI_ERR_OP, "MPI_Accumulate");
    CHECK_ERR(MPI_Accumulate(buf, 1, MPI_FLOAT, right, 0, 1, MPI_INT, MPI_SUM, win), MPI_ERR_TYPE, "MPI_Accumulate");
    CHECK_ERR(MPI_Accumulate(buf, 1, MPI_FLOAT, right, 0, 1, MPI_FLOAT, MPI_BAND, win), MPI_ERR_OP, "MPI_Accumulate");
    CHECK_ERR(MPI_Fetch_and_op(buf, res, MPI_INT, right, 8, MPI_SUM, win), MPI_ERR_RMA_RANGE, "MPI_Fetch_and_op");
    MPI_Datatype pair;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_MPI(MPI_Type_commit(&pair));
    CHECK_ERR(MPI_Compare_and_swap(buf, buf, res, pair, right, 0, win), MPI_ERR_TYPE, "MPI_Compare_and_swap");
    MPI_Type_free(&pair);
    CHECK_ERR(MPI_Rput(buf, 1, MPI_INT, right, 0, 1, MPI_INT, win, NULL), MPI_ERR_ARG, "MPI_Rput");
    CHECK_ERR(MPI_Win_attach(win, buf, 4), MPI_ERR_RMA_FLAVOR, "MPI_Win_attach");
    MPI_Aint qs;
    int qd;
    void *qp;
    CHECK_ERR(MPI_Win_shared_query(win, 0, &qs, &qd, &qp), MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query");
    int keyval, flag;
    void *val;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
    CHECK_ERR(MPI_Win_get_attr(win, keyval, &val, &flag), MPI_ERR_KEYVAL, "MPI_Win_get_attr");
    MPI_Comm_free_keyval(&keyval);
    CHECK_ERR(MPI_Win_get_name(win, NULL, &flag), MPI_ERR_ARG, "MPI_Win_get_name");
    CHECK_ERR(MPI_Win_free(&win), MPI_ERR_RMA_SYNC, "MPI_Win_free");   /* a lock is held */
    CHECK_MPI(MPI_Win_unlock(right, win));

    /* Nothing was lost or changed: the window works, its memory is intact. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 8; i++)
        CHECK(mem[i] == 100 + i, "a failed call changed the window: int %d is %d", i, mem[i]);
    CHECK_MPI(MPI_Win_fence(0, win));
    int v = rank;
    CHECK_MPI(MPI_Put(&v, 1, MPI_INT, right, 3, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(mem[3] == (rank + size - 1) % size, "the put after the errors: %d", mem[3]);

    /* A user handler gets the window and the code. */
    MPI_Errhandler mine;
    CHECK_MPI(MPI_Win_create_errhandler(on_error, &mine));
    CHECK_MPI(MPI_Win_set_errhandler(win, mine));
    int rc = MPI_Win_lock(777, right, 0, win);
    CHECK(handler_calls == 1 && handler_win == win && handler_class == MPI_ERR_LOCKTYPE,
          "the user handler: %d calls, class %d", handler_calls, handler_class);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_LOCKTYPE, "the call returned class %d after the user handler", cls);
    CHECK_MPI(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && handler_class == MPI_ERR_OTHER, "MPI_Win_call_errhandler: %d calls", handler_calls);
    MPI_Errhandler_free(&mine);
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Win_free(&win));

    /* Dynamic windows: the target finds the range error, the next
     * synchronisation reports it. */
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    int region[4] = { 0 };
    CHECK_MPI(MPI_Win_attach(win, region, sizeof region));
    CHECK_ERR(MPI_Win_attach(win, region + 1, sizeof(int)), MPI_ERR_RMA_ATTACH, "MPI_Win_attach");
    CHECK_ERR(MPI_Win_detach(win, buf), MPI_ERR_RMA_ATTACH, "MPI_Win_detach");
    MPI_Aint addr, raddr;
    CHECK_MPI(MPI_Get_address(region, &addr));
    CHECK_MPI(MPI_Sendrecv(&addr, 1, MPI_AINT, (rank + size - 1) % size, 0, &raddr, 1, MPI_AINT, right, 0,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    CHECK_MPI(MPI_Put(buf, 8, MPI_INT, right, raddr, 8, MPI_INT, win));   /* 8 ints into 4 */
    CHECK_ERR(MPI_Win_flush(right, win), MPI_ERR_RMA_RANGE, "MPI_Win_flush");
    /* The same for a put large enough to travel as a message of its own. */
    char *large = calloc(1, 100000);
    CHECK(large, "out of memory");
    CHECK_MPI(MPI_Put(large, 100000, MPI_CHAR, right, raddr, 100000, MPI_CHAR, win));
    CHECK_ERR(MPI_Win_flush(right, win), MPI_ERR_RMA_RANGE, "MPI_Win_flush");
    free(large);
    CHECK_MPI(MPI_Put(buf, 2, MPI_INT, right, raddr, 2, MPI_INT, win));   /* fine again */
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_detach(win, region));
    CHECK_MPI(MPI_Win_free(&win));

    /* Shared windows need one node: only when the job spans several. */
    MPI_Comm node;
    int ns;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_Comm_size(node, &ns);
    if (ns < size) {
        int *p;
        CHECK_ERR(MPI_Win_allocate_shared(16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win), MPI_ERR_RMA_SHARED,
                  "MPI_Win_allocate_shared");
    }
    MPI_Comm_free(&node);
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
