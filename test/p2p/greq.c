/*
 * greq: generalized requests and the status setters they use. MPI_Wait and
 * MPI_Test on a generalized request return only after MPI_Grequest_complete,
 * with the status query_fn filled in (source, tag, MPI_Status_set_elements,
 * MPI_Status_set_cancelled), and call free_fn once, after query_fn; an error
 * from query_fn is the completion call's error; MPI_Cancel calls cancel_fn
 * with whether the request completed; MPI_Request_free before completion
 * defers free_fn to MPI_Grequest_complete; MPI_Request_get_status queries
 * without freeing. Also MPI_Get_count / Get_elements on hand-made statuses.
 */
#include "p2p_util.h"

struct op {
    int queries, frees, cancels, last_cancel_complete;
    int fail_query;
    int order_ok;   /* query_fn ran before free_fn */
};

static int query_fn(void *extra, MPI_Status *st)
{
    struct op *op = extra;
    op->queries++;
    MPI_Status_set_source(st, 3);
    MPI_Status_set_tag(st, 44);
    MPI_Status_set_elements(st, MPI_INT, 5);
    MPI_Status_set_cancelled(st, 0);
    return op->fail_query ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    struct op *op = extra;
    op->order_ok = op->queries > 0;
    op->frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    struct op *op = extra;
    op->cancels++;
    op->last_cancel_complete = complete;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Status st;
    int flag = -1, count = -1;

    /* Wait after Test: incomplete until MPI_Grequest_complete. */
    struct op a = { 0 };
    MPI_Request req;
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &a, &req));
    CHECK_MPI(MPI_Test(&req, &flag, &st));
    CHECK(!flag && a.queries == 0 && a.frees == 0, "a generalized request completed by itself");
    CHECK_MPI(MPI_Request_get_status(req, &flag, &st));
    CHECK(!flag, "MPI_Request_get_status: complete before MPI_Grequest_complete");
    CHECK_MPI(MPI_Cancel(&req));
    CHECK(a.cancels == 1 && a.last_cancel_complete == 0, "cancel_fn: %d calls, complete %d", a.cancels,
          a.last_cancel_complete);
    CHECK_MPI(MPI_Grequest_complete(req));
    CHECK_MPI(MPI_Request_get_status(req, &flag, &st));
    CHECK(flag && a.queries == 1 && a.frees == 0, "MPI_Request_get_status: flag %d, %d queries, %d frees", flag,
          a.queries, a.frees);
    memset(&st, 0, sizeof st);
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "MPI_Wait did not free the generalized request");
    CHECK(a.queries == 2 && a.frees == 1 && a.order_ok, "query_fn %d times, free_fn %d times (order %d)",
          a.queries, a.frees, a.order_ok);
    CHECK(st.MPI_SOURCE == 3 && st.MPI_TAG == 44, "status from query_fn: %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 5, "MPI_Status_set_elements(5 ints): MPI_Get_count %d", count);
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == 5 * (int)sizeof(int), "... in bytes %d", count);

    /* An error from query_fn is the call's error. */
    struct op b = { .fail_query = 1 };
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &b, &req));
    CHECK_MPI(MPI_Grequest_complete(req));
    CHECK_CLASS(MPI_Wait(&req, &st), MPI_ERR_OTHER);
    CHECK(b.frees == 1 && req == MPI_REQUEST_NULL, "after a failing query_fn: %d frees", b.frees);

    /* Cancel after completion says so; Request_free before completion
     * defers free_fn to MPI_Grequest_complete. */
    struct op c = { 0 };
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &req));
    MPI_Request keep = req;
    CHECK_MPI(MPI_Request_free(&req));
    CHECK(req == MPI_REQUEST_NULL && c.frees == 0, "MPI_Request_free ran free_fn before completion");
    CHECK_MPI(MPI_Grequest_complete(keep));
    CHECK(c.frees == 1 && c.queries == 0, "after MPI_Grequest_complete of a freed request: %d frees, %d queries",
          c.frees, c.queries);
    struct op d = { 0 };
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &d, &req));
    CHECK_MPI(MPI_Grequest_complete(req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK(d.cancels == 1 && d.last_cancel_complete == 1, "cancel_fn after completion: complete %d",
          d.last_cancel_complete);
    CHECK_CLASS(MPI_Grequest_complete(req), MPI_ERR_REQUEST);
    int idx = -1;
    CHECK_MPI(MPI_Waitany(1, &req, &idx, &st));
    CHECK(idx == 0 && d.frees == 1, "MPI_Waitany on a generalized request: index %d, %d frees", idx, d.frees);

    /* Hand-made statuses: counts, elements, cancelled. */
    MPI_Status hs;
    CHECK_MPI(MPI_Status_set_elements_c(&hs, MPI_DOUBLE, 3));
    CHECK_MPI(MPI_Get_count(&hs, MPI_DOUBLE, &count));
    CHECK(count == 3, "3 doubles: count %d", count);
    CHECK_MPI(MPI_Get_count(&hs, MPI_LONG_DOUBLE, &count));
    CHECK(count == MPI_UNDEFINED || sizeof(long double) == 8, "24 bytes as long doubles: count %d", count);
    CHECK_MPI(MPI_Get_elements(&hs, MPI_FLOAT, &count));
    CHECK(count == 6, "24 bytes as floats: elements %d", count);
    MPI_Datatype three;
    CHECK_MPI(MPI_Type_contiguous(3, MPI_SHORT, &three));
    CHECK_MPI(MPI_Type_commit(&three));
    CHECK_MPI(MPI_Status_set_elements(&hs, three, 7));   /* 7 shorts: two whole elements and one short */
    CHECK_MPI(MPI_Get_count(&hs, three, &count));
    CHECK(count == MPI_UNDEFINED, "7 shorts in 3-short elements: count %d", count);
    CHECK_MPI(MPI_Get_elements(&hs, three, &count));
    CHECK(count == 7, "7 shorts: elements %d", count);
    CHECK_MPI(MPI_Type_free(&three));
    CHECK_MPI(MPI_Status_set_cancelled(&hs, 1));
    CHECK_MPI(MPI_Test_cancelled(&hs, &flag));
    CHECK(flag == 1, "MPI_Status_set_cancelled(1): MPI_Test_cancelled %d", flag);
    CHECK_MPI(MPI_Status_set_cancelled(&hs, 0));
    CHECK_MPI(MPI_Test_cancelled(&hs, &flag));
    CHECK(flag == 0, "MPI_Status_set_cancelled(0): MPI_Test_cancelled %d", flag);
    int v = 0;
    CHECK_MPI(MPI_Status_set_error(&hs, MPI_ERR_TAG));
    CHECK_MPI(MPI_Status_get_error(&hs, &v));
    CHECK(v == MPI_ERR_TAG && hs.MPI_ERROR == MPI_ERR_TAG, "MPI_Status_get_error %d", v);
    CHECK_MPI(MPI_Status_set_source(&hs, 12));
    CHECK_MPI(MPI_Status_get_source(&hs, &v));
    CHECK(v == 12, "MPI_Status_get_source %d", v);
    CHECK_MPI(MPI_Status_set_tag(&hs, 13));
    CHECK_MPI(MPI_Status_get_tag(&hs, &v));
    CHECK(v == 13, "MPI_Status_get_tag %d", v);
    /* A count too large for an int: MPI_UNDEFINED in the int form. */
    CHECK_MPI(MPI_Status_set_elements_c(&hs, MPI_BYTE, (MPI_Count)1 << 32));
    CHECK_MPI(MPI_Get_count(&hs, MPI_BYTE, &count));
    MPI_Count big = 0;
    CHECK_MPI(MPI_Get_count_c(&hs, MPI_BYTE, &big));
    CHECK(count == MPI_UNDEFINED && big == (MPI_Count)1 << 32, "2^32 bytes: count %d, count_c %lld", count,
          (long long)big);
    CHECK_CLASS(MPI_Status_set_elements(&hs, MPI_INT, -1), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Get_count(&hs, MPI_DATATYPE_NULL, &count), MPI_ERR_TYPE);

    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
