/*
 * Completion calls (Wait/Test and their any/all/some forms, Request_get_status),
 * MPI_Request_free, MPI_Cancel, MPI_Start/Startall, and the library's own
 * waits. Inactive entries (MPI_REQUEST_NULL, persistent requests not started)
 * count as completed with an empty status, as the standard says.
 */
#include "mpi/p2p/p2p_impl.h"

#include <string.h>

static void set_empty(MPI_Status *status)
{
    if (status != MPI_STATUS_IGNORE)
        hashi_status_set_empty(status);
}

/* Finish one completed request; raise its error on its communicator. */
static int finish_one(const char *func, MPI_Request *handle, MPI_Status *status)
{
    struct MPI_ABI_Request *req = *handle;
    if (req->status.MPI_ERROR == MPI_SUCCESS && req->kind != HASHI_REQ_GREQ)
        return p2p_request_finish(handle, status);   /* nothing to raise */
    struct MPI_ABI_Comm *c = req->comm;
    int is_greq = req->kind == HASHI_REQ_GREQ;
    MPI_Status st = req->status;
    if (c)
        hashi_comm_retain(c);
    int rc = p2p_request_finish(handle, status);
    if (rc != MPI_SUCCESS) {
        if (is_greq)
            rc = hashi_err_raise(func, HASHI_OBJ_NONE, NULL, rc,
                                 "the generalized request's query or free function returned an error");
        else
            rc = p2p_raise_request_error(func, c, rc, &st);
    }
    if (c)
        hashi_comm_release(c);
    return rc;
}

/* ---- MPI_Wait / MPI_Test ---- */

int hashi_impl_Wait(MPI_Request *request, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Wait");
    if (!request)
        return hashi_err_raise("MPI_Wait", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "the request pointer is NULL");
    if (*request == MPI_REQUEST_NULL) {
        set_empty(status);
        return MPI_SUCCESS;
    }
    struct MPI_ABI_Request *req;
    int rc = p2p_check_request_ptr("MPI_Wait", request, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    if (req->persistent && !req->active) {
        set_empty(status);
        return MPI_SUCCESS;
    }
    hashi_progress_wait(req);
    return finish_one("MPI_Wait", request, status);
}

int hashi_impl_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Test");
    if (!request || !flag)
        return hashi_err_raise("MPI_Test", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "%s is NULL",
                               !request ? "the request pointer" : "flag");
    if (*request == MPI_REQUEST_NULL) {
        *flag = 1;
        set_empty(status);
        return MPI_SUCCESS;
    }
    struct MPI_ABI_Request *req;
    int rc = p2p_check_request_ptr("MPI_Test", request, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    if (req->persistent && !req->active) {
        *flag = 1;
        set_empty(status);
        return MPI_SUCCESS;
    }
    if (!hashi_request_is_complete(req))
        hashi_progress_poll();
    if (!hashi_request_is_complete(req)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    *flag = 1;
    return finish_one("MPI_Test", request, status);
}

/* ---- the multiple-completion calls ---- */

struct request_array {
    int n;
    MPI_Request *reqs;
    int scan_from;      /* waitall: entries before this one are known complete */
    int index;          /* waitany: the completed entry, or MPI_UNDEFINED */
    int any_active;
};

static int entry_done(MPI_Request h)
{
    return !p2p_request_is_active(h) || hashi_request_is_complete(h);
}

static int all_done(void *arg)
{
    struct request_array *a = arg;
    while (a->scan_from < a->n && entry_done(a->reqs[a->scan_from]))
        a->scan_from++;
    return a->scan_from == a->n;
}

/* Any active entry complete (index set), or no active entry at all. */
static int any_done(void *arg)
{
    struct request_array *a = arg;
    a->any_active = 0;
    a->index = MPI_UNDEFINED;
    for (int i = 0; i < a->n; i++) {
        if (!p2p_request_is_active(a->reqs[i]))
            continue;
        a->any_active = 1;
        if (hashi_request_is_complete(a->reqs[i])) {
            a->index = i;
            return 1;
        }
    }
    return !a->any_active;
}

/*
 * After finishing several requests: when any failed, every status' MPI_ERROR
 * already says which, and the call reports MPI_ERR_IN_STATUS once, on the
 * communicator of the first failed request.
 */
struct multi_errors {
    int count;
    int first_index;
    int first_code;
    struct MPI_ABI_Comm *first_comm;   /* retained */
};

static void multi_finish(struct multi_errors *e, MPI_Request *handle, int index, MPI_Status *status)
{
    struct MPI_ABI_Request *req = *handle;
    if (req->status.MPI_ERROR == MPI_SUCCESS && req->kind != HASHI_REQ_GREQ) {
        /* The common case: nothing to report, so no hold on the communicator. */
        p2p_request_finish(handle, status);
        if (status != MPI_STATUS_IGNORE)
            status->MPI_ERROR = MPI_SUCCESS;
        return;
    }
    struct MPI_ABI_Comm *c = req->comm;
    if (c)
        hashi_comm_retain(c);
    int rc = p2p_request_finish(handle, status);
    if (status != MPI_STATUS_IGNORE)
        status->MPI_ERROR = rc;
    if (rc != MPI_SUCCESS && e->count++ == 0) {
        e->first_index = index;
        e->first_code = rc;
        e->first_comm = c;
        return;
    }
    if (c)
        hashi_comm_release(c);
}

static int multi_report(const char *func, struct multi_errors *e)
{
    if (e->count == 0)
        return MPI_SUCCESS;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    hashi_impl_Error_string(e->first_code, text, &len);
    MPI_Comm comm = e->first_comm ? p2p_comm_handle(e->first_comm) : MPI_COMM_SELF;
    int rc = hashi_err_comm(func, comm, MPI_ERR_IN_STATUS,
                            "%d request%s failed; the first, entry %d: %s", e->count,
                            e->count == 1 ? "" : "s", e->first_index, text);
    if (e->first_comm)
        hashi_comm_release(e->first_comm);
    return rc;
}

static MPI_Status *status_at(MPI_Status *statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* Finish every entry (all complete or inactive). */
static int finish_all(const char *func, int count, MPI_Request reqs[], MPI_Status *statuses)
{
    struct multi_errors e = { 0 };
    for (int i = 0; i < count; i++) {
        MPI_Status *st = status_at(statuses, i);
        if (!p2p_request_is_active(reqs[i])) {
            set_empty(st);
            continue;
        }
        struct MPI_ABI_Request *req = reqs[i];
        /* The common entries without multi_finish's layers (a window of
         * small messages is mostly these): the shared request of sends
         * complete in the call, and a plain receive that succeeded. */
        if (req->flags & HASHI_REQF_SHARED) {
            if (st != MPI_STATUS_IGNORE)
                *st = req->status;
            reqs[i] = MPI_REQUEST_NULL;
            continue;
        }
        if (req->kind == HASHI_REQ_RECV && req->status.MPI_ERROR == MPI_SUCCESS) {
            if (st != MPI_STATUS_IGNORE)
                *st = req->status;
            hashi_request_free(req);
            reqs[i] = MPI_REQUEST_NULL;
            continue;
        }
        multi_finish(&e, &reqs[i], i, st);
    }
    return multi_report(func, &e);
}

int hashi_impl_Waitall(int count, MPI_Request array_of_requests[], MPI_Status *array_of_statuses)
{
    HASHI_CHECK_INITIALIZED("MPI_Waitall");
    int rc = p2p_check_request_array("MPI_Waitall", count, array_of_requests);
    if (rc != MPI_SUCCESS)
        return rc;
    struct request_array a = { .n = count, .reqs = array_of_requests };
    hashi_progress_wait_until(all_done, &a);
    return finish_all("MPI_Waitall", count, array_of_requests, array_of_statuses);
}

int hashi_impl_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status *array_of_statuses)
{
    HASHI_CHECK_INITIALIZED("MPI_Testall");
    int rc = p2p_check_request_array("MPI_Testall", count, array_of_requests);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!flag)
        return hashi_err_raise("MPI_Testall", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "flag is NULL");
    struct request_array a = { .n = count, .reqs = array_of_requests };
    if (!all_done(&a)) {
        hashi_progress_poll();
        if (!all_done(&a)) {
            /* Not all complete: the standard leaves every request untouched. */
            *flag = 0;
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    return finish_all("MPI_Testall", count, array_of_requests, array_of_statuses);
}

static int finish_any(const char *func, struct request_array *a, int *indx, MPI_Status *status)
{
    *indx = a->index;
    if (a->index == MPI_UNDEFINED) {
        set_empty(status);
        return MPI_SUCCESS;
    }
    return finish_one(func, &a->reqs[a->index], status);
}

int hashi_impl_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Waitany");
    int rc = p2p_check_request_array("MPI_Waitany", count, array_of_requests);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!indx)
        return hashi_err_raise("MPI_Waitany", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "indx is NULL");
    struct request_array a = { .n = count, .reqs = array_of_requests };
    hashi_progress_wait_until(any_done, &a);
    return finish_any("MPI_Waitany", &a, indx, status);
}

int hashi_impl_Testany(int count, MPI_Request array_of_requests[], int *indx, int *flag, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Testany");
    int rc = p2p_check_request_array("MPI_Testany", count, array_of_requests);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!indx || !flag)
        return hashi_err_raise("MPI_Testany", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "%s is NULL",
                               !indx ? "indx" : "flag");
    struct request_array a = { .n = count, .reqs = array_of_requests };
    if (!any_done(&a)) {
        hashi_progress_poll();
        if (!any_done(&a)) {
            *flag = 0;
            *indx = MPI_UNDEFINED;
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    return finish_any("MPI_Testany", &a, indx, status);
}

/* Finish every completed active entry; *outcount MPI_UNDEFINED when none is active. */
static int finish_some(const char *func, int count, MPI_Request reqs[], int *outcount, int indices[],
                       MPI_Status *statuses)
{
    struct multi_errors e = { 0 };
    int n = 0, any_active = 0;
    for (int i = 0; i < count; i++) {
        if (!p2p_request_is_active(reqs[i]))
            continue;
        any_active = 1;
        if (!hashi_request_is_complete(reqs[i]))
            continue;
        indices[n] = i;
        multi_finish(&e, &reqs[i], i, status_at(statuses, n));
        n++;
    }
    *outcount = any_active ? n : MPI_UNDEFINED;
    return multi_report(func, &e);
}

static int some_args(const char *func, int incount, MPI_Request reqs[], int *outcount, int indices[])
{
    int rc = p2p_check_request_array(func, incount, reqs);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!outcount || (incount > 0 && !indices))
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "%s is NULL",
                               !outcount ? "outcount" : "array_of_indices");
    return MPI_SUCCESS;
}

int hashi_impl_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                        MPI_Status *array_of_statuses)
{
    HASHI_CHECK_INITIALIZED("MPI_Waitsome");
    int rc = some_args("MPI_Waitsome", incount, array_of_requests, outcount, array_of_indices);
    if (rc != MPI_SUCCESS)
        return rc;
    struct request_array a = { .n = incount, .reqs = array_of_requests };
    hashi_progress_wait_until(any_done, &a);
    return finish_some("MPI_Waitsome", incount, array_of_requests, outcount, array_of_indices,
                       array_of_statuses);
}

int hashi_impl_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                        MPI_Status *array_of_statuses)
{
    HASHI_CHECK_INITIALIZED("MPI_Testsome");
    int rc = some_args("MPI_Testsome", incount, array_of_requests, outcount, array_of_indices);
    if (rc != MPI_SUCCESS)
        return rc;
    hashi_progress_poll();
    return finish_some("MPI_Testsome", incount, array_of_requests, outcount, array_of_indices,
                       array_of_statuses);
}

/* ---- MPI_Request_get_status and its MPI-4.1 array forms: no freeing ---- */

/* Peek at one entry: 1 and its status if inactive or complete. */
static int peek_entry(const char *func, MPI_Request h, MPI_Status *status, int *err)
{
    *err = MPI_SUCCESS;
    if (!p2p_request_is_active(h)) {
        set_empty(status);
        return 1;
    }
    if (!hashi_request_is_complete(h))
        return 0;
    struct MPI_ABI_Request *req = h;
    int rc = p2p_request_peek(req, status);
    if (rc != MPI_SUCCESS) {
        if (req->kind == HASHI_REQ_GREQ)
            *err = hashi_err_raise(func, HASHI_OBJ_NONE, NULL, rc, "the generalized request's query function failed");
        else
            *err = p2p_raise_request_error(func, req->comm, rc, &req->status);
    }
    return 1;
}

int hashi_impl_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Request_get_status");
    if (!flag)
        return hashi_err_raise("MPI_Request_get_status", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "flag is NULL");
    if (request != MPI_REQUEST_NULL && !hashi_request_get(request))
        return hashi_err_raise("MPI_Request_get_status", HASHI_OBJ_NONE, NULL, MPI_ERR_REQUEST,
                               "the handle is not a live request");
    int err;
    if (!(*flag = peek_entry("MPI_Request_get_status", request, status, &err))) {
        hashi_progress_poll();
        *flag = peek_entry("MPI_Request_get_status", request, status, &err);
    }
    return err;
}

int hashi_impl_Request_get_status_any(int count, const MPI_Request array_of_requests[], int *indx, int *flag,
                                      MPI_Status *status)
{
    const char *func = "MPI_Request_get_status_any";
    HASHI_CHECK_INITIALIZED(func);
    int rc = p2p_check_request_array(func, count, array_of_requests);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!indx || !flag)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "%s is NULL", !indx ? "indx" : "flag");
    for (int round = 0; round < 2; round++) {
        int any_active = 0;
        for (int i = 0; i < count; i++) {
            if (!p2p_request_is_active(array_of_requests[i]))
                continue;
            any_active = 1;
            int err;
            if (peek_entry(func, array_of_requests[i], status, &err)) {
                *flag = 1;
                *indx = i;
                return err;
            }
        }
        if (!any_active) {
            *flag = 1;
            *indx = MPI_UNDEFINED;
            set_empty(status);
            return MPI_SUCCESS;
        }
        if (round == 0)
            hashi_progress_poll();
    }
    *flag = 0;
    *indx = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int hashi_impl_Request_get_status_all(int count, const MPI_Request array_of_requests[], int *flag,
                                      MPI_Status *array_of_statuses)
{
    const char *func = "MPI_Request_get_status_all";
    HASHI_CHECK_INITIALIZED(func);
    int rc = p2p_check_request_array(func, count, array_of_requests);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!flag)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "flag is NULL");
    struct request_array a = { .n = count, .reqs = (MPI_Request *)array_of_requests };
    if (!all_done(&a)) {
        hashi_progress_poll();
        if (!all_done(&a)) {
            *flag = 0;
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    int failed = 0, first = -1, first_code = MPI_SUCCESS;
    for (int i = 0; i < count; i++) {
        MPI_Status *st = status_at(array_of_statuses, i);
        MPI_Request h = array_of_requests[i];
        int code = MPI_SUCCESS;
        if (!p2p_request_is_active(h))
            set_empty(st);
        else
            code = p2p_request_peek(h, st);
        if (st != MPI_STATUS_IGNORE)
            st->MPI_ERROR = code;
        if (code != MPI_SUCCESS && failed++ == 0) {
            first = i;
            first_code = code;
        }
    }
    if (!failed)
        return MPI_SUCCESS;
    return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_IN_STATUS,
                           "%d request%s failed; the first, entry %d, with error %d", failed,
                           failed == 1 ? "" : "s", first, first_code);
}

int hashi_impl_Request_get_status_some(int incount, const MPI_Request array_of_requests[], int *outcount,
                                       int array_of_indices[], MPI_Status *array_of_statuses)
{
    const char *func = "MPI_Request_get_status_some";
    HASHI_CHECK_INITIALIZED(func);
    int rc = some_args(func, incount, (MPI_Request *)array_of_requests, outcount, array_of_indices);
    if (rc != MPI_SUCCESS)
        return rc;
    hashi_progress_poll();
    int n = 0, any_active = 0, failed = 0, first = -1;
    for (int i = 0; i < incount; i++) {
        MPI_Request h = array_of_requests[i];
        if (!p2p_request_is_active(h))
            continue;
        any_active = 1;
        if (!hashi_request_is_complete(h))
            continue;
        MPI_Status *st = status_at(array_of_statuses, n);
        int code = p2p_request_peek(h, st);
        if (st != MPI_STATUS_IGNORE)
            st->MPI_ERROR = code;
        if (code != MPI_SUCCESS && failed++ == 0)
            first = i;
        array_of_indices[n++] = i;
    }
    *outcount = any_active ? n : MPI_UNDEFINED;
    if (!failed)
        return MPI_SUCCESS;
    return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_IN_STATUS,
                           "%d request%s failed; the first is entry %d", failed, failed == 1 ? "" : "s", first);
}

/* ---- MPI_Request_free, MPI_Cancel ---- */

int hashi_impl_Request_free(MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Request_free");
    struct MPI_ABI_Request *req;
    int rc = p2p_check_request_ptr("MPI_Request_free", request, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    /* An operation in flight keeps its own reference: it completes (and a
     * generalized request calls free_fn) without the handle. */
    hashi_request_free(req);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int hashi_impl_Cancel(MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Cancel");
    struct MPI_ABI_Request *req;
    int rc = p2p_check_request_ptr("MPI_Cancel", request, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    if (req->persistent && !req->active)
        return hashi_err_comm("MPI_Cancel", req->comm ? p2p_comm_handle(req->comm) : MPI_COMM_SELF,
                              MPI_ERR_REQUEST, "the persistent request is not active (MPI_Start it first)");
    switch (req->kind) {
    case HASHI_REQ_GREQ:
        if (req->greq_cancel) {
            rc = req->greq_cancel(req->extra, hashi_request_is_complete(req));
            if (rc != MPI_SUCCESS)
                return hashi_err_raise("MPI_Cancel", HASHI_OBJ_NONE, NULL, rc,
                                       "the generalized request's cancel function returned an error");
        }
        return MPI_SUCCESS;
    case HASHI_REQ_COLL:
        return hashi_err_comm("MPI_Cancel", p2p_comm_handle(req->comm), MPI_ERR_REQUEST,
                              "collective operations cannot be cancelled");
    case HASHI_REQ_PART_SEND:
    case HASHI_REQ_PART_RECV:
        /* Not cancelled (which the standard allows): the epoch completes normally. */
        return MPI_SUCCESS;
    default:
        break;
    }
    /* Sendrecv's compound requests are not cancelled: they complete normally. */
    unsigned nothing_to_cancel = HASHI_REQF_PROC_NULL | HASHI_REQF_CANCEL_ASKED | HASHI_REQF_COMPOUND |
                                 HASHI_REQF_SHARED;
    if (req->flags & nothing_to_cancel)
        return MPI_SUCCESS;
    if (req->kind == HASHI_REQ_RECV || req->kind == HASHI_REQ_PREQ_RECV) {
        if (hashi_request_is_complete(req))
            return MPI_SUCCESS;
        req->flags |= HASHI_REQF_CANCEL_ASKED;
        /* 1: cancelled (the device completes it with the flag); 0: matched
         * already, the receive completes normally. */
        hashi_device->p2p.cancel_recv(req);
        return MPI_SUCCESS;
    }
    /* A send, even one complete already (an eager message is complete once
     * its copy is out, but may still wait unmatched at the receiver): the
     * device asks the receiver, and MPI_Wait returns with its verdict. One
     * that failed has nothing to withdraw. A device that cannot cancel
     * sends (or HASHI_CANCEL_SENDS=none) lets them complete: Test_cancelled
     * then says false, which the standard allows. */
    if (!hashi_p2p.cancel_sends || (hashi_request_is_complete(req) && req->status.MPI_ERROR != MPI_SUCCESS))
        return MPI_SUCCESS;
    req->flags |= HASHI_REQF_CANCEL_ASKED;
    p2p_cancel_send(req);
    return MPI_SUCCESS;
}

/* ---- persistent requests: MPI_Start / MPI_Startall ---- */

static int start_one(const char *func, MPI_Request *request)
{
    struct MPI_ABI_Request *req;
    int rc = p2p_check_request_ptr(func, request, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Comm comm = req->comm ? p2p_comm_handle(req->comm) : MPI_COMM_SELF;
    if (!req->persistent)
        return hashi_err_comm(func, comm, MPI_ERR_REQUEST, "the request is not persistent");
    if (req->active)
        return hashi_err_comm(func, comm, MPI_ERR_REQUEST, "the persistent request is active already");
    req->active = 1;
    switch (req->kind) {
    case HASHI_REQ_PREQ_SEND:
        if (req->send_mode == HASHI_SEND_BUFFERED) {
            /* Copied out at once: the request completes as it starts. */
            struct MPI_ABI_Request *copy = NULL;
            rc = p2p_bsend_copy(func, req->user_buf, req->count, req->type, req->peer, req->tag, req->comm, comm,
                                &copy);
            if (rc == MPI_SUCCESS) {
                if (req->copy_send)
                    hashi_request_free(req->copy_send);   /* the previous start's */
                req->copy_send = copy;
                req->flags &= ~(unsigned)HASHI_REQF_CANCEL_ASKED;
                hashi_status_set_empty(&req->status);
                atomic_store_explicit(&req->complete, 0, memory_order_relaxed);
                hashi_request_retain(req);
                hashi_request_complete(req);
                return MPI_SUCCESS;
            }
            req->active = 0;
            return rc;   /* raised by p2p_bsend */
        }
        rc = p2p_start_send(req);
        break;
    case HASHI_REQ_PREQ_RECV:
        rc = p2p_start_recv(req);
        break;
    default:
        if (!req->start) {
            req->active = 0;
            return hashi_err_comm(func, comm, MPI_ERR_REQUEST, "this kind of request cannot be started");
        }
        hashi_status_set_empty(&req->status);
        atomic_store_explicit(&req->complete, 0, memory_order_relaxed);
        hashi_request_retain(req);
        rc = req->start(req);
        break;
    }
    if (rc != MPI_SUCCESS) {
        req->active = 0;
        return hashi_err_comm(func, comm, rc, "starting the persistent request failed");
    }
    return MPI_SUCCESS;
}

int hashi_impl_Start(MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Start");
    return start_one("MPI_Start", request);
}

int hashi_impl_Startall(int count, MPI_Request array_of_requests[])
{
    HASHI_CHECK_INITIALIZED("MPI_Startall");
    if (count < 0)
        return hashi_err_raise("MPI_Startall", HASHI_OBJ_NONE, NULL, MPI_ERR_COUNT, "count %d is negative", count);
    if (count > 0 && !array_of_requests)
        return hashi_err_raise("MPI_Startall", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "the array of requests is NULL");
    for (int i = 0; i < count; i++) {
        int rc = start_one("MPI_Startall", &array_of_requests[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* ---- the library's own waits ---- */

int hashi_wait_internal(struct MPI_ABI_Request *req, MPI_Status *status)
{
    hashi_progress_wait(req);
    int rc = req->status.MPI_ERROR;
    if (status)
        *status = req->status;
    if (req->persistent)
        req->active = 0;
    else
        hashi_request_free(req);
    return rc;
}

static int internal_all_done(void *arg)
{
    struct request_array *a = arg;
    struct MPI_ABI_Request **reqs = (struct MPI_ABI_Request **)a->reqs;
    while (a->scan_from < a->n && (!reqs[a->scan_from] || hashi_request_is_complete(reqs[a->scan_from])))
        a->scan_from++;
    return a->scan_from == a->n;
}

int hashi_waitall_internal(int n, struct MPI_ABI_Request **reqs)
{
    struct request_array a = { .n = n, .reqs = (MPI_Request *)reqs };
    hashi_progress_wait_until(internal_all_done, &a);
    int first_error = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        int rc = hashi_wait_internal(reqs[i], NULL);
        if (rc != MPI_SUCCESS && first_error == MPI_SUCCESS)
            first_error = rc;
        reqs[i] = NULL;
    }
    return first_error;
}
