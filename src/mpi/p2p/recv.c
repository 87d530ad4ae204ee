/*
 * Receives and probes: blocking, nonblocking and persistent receives, probes,
 * and matched probes with their message handles (MPI_Mprobe / MPI_Mrecv).
 * Contiguous data lands in place; non-contiguous data lands in a packed
 * buffer that the request's on_complete unpacks into the user's layout.
 */
#include "mpi/handles.h"
#include "mpi/p2p/p2p_impl.h"
#include "runtime/pvar.h"

#include <stdlib.h>
#include <string.h>

#define HASHI_MESSAGE_MAGIC 0x4d534721u   /* "MSG!" */

/* A message taken out of matching by MPI_Mprobe / MPI_Improbe. */
struct MPI_ABI_Message {
    uint32_t magic;
    struct MPI_ABI_Comm *comm;      /* retained until the message is received */
    struct hashi_message *msg;      /* the device's */
    struct hashi_envelope env;
};

/* Non-contiguous receive: unpack what arrived (at most the buffer). */
static void recv_unpack(struct MPI_ABI_Request *req)
{
    uint64_t got = hashi_status_bytes(&req->status);
    if (got > req->dev_bytes)
        got = req->dev_bytes;
    if (got)
        hashi_type_unpack(req->user_buf, req->count, req->type, 0, req->pack_buf, (size_t)got);
}

/* p2p_prepare_recv without the references (the caller decides). */
static inline int recv_describe(struct MPI_ABI_Request *req, void *buf, MPI_Count count, MPI_Datatype datatype,
                                struct MPI_ABI_Datatype *t, int source, int tag, struct MPI_ABI_Comm *comm,
                                uint32_t context_id)
{
    req->user_buf = buf;
    req->count = count;
    req->datatype = datatype;
    req->type = t;
    req->comm = comm;
    req->peer = source;
    req->tag = tag;
    req->context_id = context_id;
    req->match = (struct hashi_match){ .context_id = context_id, .source = source, .tag = tag };
    /* The source's world rank (-1: any), for devices that address it before a match. */
    req->dest_world = source >= 0 ? hashi_comm_to_world(comm, source) : -1;
    if (source == MPI_PROC_NULL) {
        req->flags |= HASHI_REQF_PROC_NULL;
        return MPI_SUCCESS;
    }
    req->dev_bytes = (size_t)hashi_type_bytes(t, count);
    if (hashi_type_is_contig(t) || req->dev_bytes == 0) {
        req->dev_buf = req->dev_bytes ? p2p_offset(buf, t->true_lb) : buf;
        return MPI_SUCCESS;
    }
    req->pack_buf = malloc(req->dev_bytes);
    if (!req->pack_buf)
        return MPI_ERR_NO_MEM;
    req->flags |= HASHI_REQF_PACK_OWNED;
    req->dev_buf = req->pack_buf;
    req->on_complete = recv_unpack;
    return MPI_SUCCESS;
}

int p2p_prepare_recv(struct MPI_ABI_Request *req, void *buf, MPI_Count count, MPI_Datatype datatype,
                     struct MPI_ABI_Datatype *t, int source, int tag, struct MPI_ABI_Comm *comm,
                     uint32_t context_id)
{
    hashi_type_retain(t);
    hashi_comm_retain(comm);
    return recv_describe(req, buf, count, datatype, t, source, tag, comm, context_id);
}

/* Reset the outcome fields and take the operation's reference. */
static void recv_arm(struct MPI_ABI_Request *req)
{
    hashi_status_set_empty(&req->status);
    req->flags &= ~(unsigned)HASHI_REQF_CANCEL_ASKED;
    atomic_store_explicit(&req->complete, 0, memory_order_relaxed);
    hashi_request_retain(req);
}

static void recv_complete_proc_null(struct MPI_ABI_Request *req)
{
    req->status.MPI_SOURCE = MPI_PROC_NULL;
    req->status.MPI_TAG = MPI_ANY_TAG;
    hashi_request_complete(req);
}

int p2p_start_recv(struct MPI_ABI_Request *req)
{
    recv_arm(req);
    if (req->flags & HASHI_REQF_PROC_NULL) {
        recv_complete_proc_null(req);
        return MPI_SUCCESS;
    }
    int rc = hashi_device->p2p.irecv(req);
    if (rc != MPI_SUCCESS)
        p2p_fail_request(req, rc);
    return rc;
}

int p2p_start_mrecv(struct MPI_ABI_Request *req, struct hashi_message *msg)
{
    recv_arm(req);
    int rc = hashi_device->p2p.imrecv(req, msg);
    if (rc != MPI_SUCCESS)
        p2p_fail_request(req, rc);
    return rc;
}

int hashi_irecv_internal(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                         struct MPI_ABI_Comm *comm, uint32_t context_id, struct MPI_ABI_Request **out)
{
    struct MPI_ABI_Datatype *t = hashi_type_get(type);
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_RECV);
    *out = NULL;
    if (!t)
        return MPI_ERR_TYPE;
    if (!req)
        return MPI_ERR_NO_MEM;
    int rc = p2p_prepare_recv(req, buf, count, type, t, source, tag, comm, context_id);
    if (rc == MPI_SUCCESS)
        rc = p2p_start_recv(req);
    if (rc != MPI_SUCCESS) {
        hashi_request_free(req);
        return rc;
    }
    *out = req;
    return MPI_SUCCESS;
}

/* ---- receives ---- */

/* A started (or, persistent, an inactive) receive for checked arguments. */
static int recv_request_checked(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                                struct MPI_ABI_Datatype *t, int source, int tag, MPI_Comm comm,
                                struct MPI_ABI_Comm *c, int persistent, struct MPI_ABI_Request **out)
{
    struct MPI_ABI_Request *req = hashi_request_alloc(persistent ? HASHI_REQ_PREQ_RECV : HASHI_REQ_RECV);
    if (!req)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for a request");
    int rc = p2p_prepare_recv(req, buf, count, datatype, t, source, tag, c, c->context_id);
    if (rc == MPI_SUCCESS && persistent) {
        rc = p2p_make_persistent(req);
        if (rc == MPI_SUCCESS) {
            *out = req;
            return MPI_SUCCESS;
        }
        size_t bytes = req->dev_bytes;
        hashi_request_free(req);
        return hashi_err_comm(func, comm, rc,
                              "the device could not prepare a persistent receive of %zu bytes from rank %d", bytes,
                              source);
    }
    if (rc == MPI_SUCCESS)
        rc = p2p_start_recv(req);
    if (rc != MPI_SUCCESS) {
        size_t bytes = req->dev_bytes;
        hashi_request_free(req);
        return hashi_err_comm(func, comm, rc, "%s of %zu bytes from rank %d could not start",
                              rc == MPI_ERR_NO_MEM ? "allocating the unpack buffer of a receive"
                              : "the device receive", bytes, source);
    }
    *out = req;
    return MPI_SUCCESS;
}

static int recv_request(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                        int tag, MPI_Comm comm, int persistent, struct MPI_ABI_Request **out)
{
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *t;
    int rc = p2p_check_args(func, buf, count, datatype, source, tag, comm, 1, &c, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    return recv_request_checked(func, buf, count, datatype, t, source, tag, comm, c, persistent, out);
}

/* Blocking receives served by recv_on_stack (MPI_T pvar p2p_recv_on_stack):
 * tests see which path a receive took. Written by the one thread there is. */
static uint64_t recv_on_stack_count;

void p2p_recv_pvars_register(void)
{
    static const struct hashi_pvar vars[] = {
        { "p2p_recv_on_stack", "hashi_p2p", "blocking receives whose request lived on the call's stack",
          &recv_on_stack_count },
    };
    (void)hashi_pvar_register(vars, 1);   /* out of memory: counted, unseen */
}

/*
 * Whether a blocking receive may keep its request on its own stack
 * (recv_on_stack): contiguous data (no pack buffer) within the eager limit
 * (the small receives the saving matters for), a real source, and no
 * MPI_THREAD_MULTIPLE (there another thread may free the communicator
 * while we wait, so the request must hold a reference on it).
 */
static inline int recv_on_stack_fits(const struct MPI_ABI_Datatype *t, MPI_Count count, int source)
{
    return !hashi_refs_locked && source != MPI_PROC_NULL && hashi_type_is_contig(t) &&
           (size_t)hashi_type_bytes(t, count) <= hashi_device->p2p.eager_limit;
}

/*
 * The blocking receive of recv_on_stack_fits: the request lives in this
 * frame. The program never sees it (no handle: no Cancel, Request_free or
 * Wait on it), the call returns only once it completed, and the device
 * touches a request no more after completing it (request.h), so it needs
 * no pool, no references on the communicator and the type (nothing can
 * free them during the call) and no destroy path: per message about 150
 * instructions fewer than the pooled request (docs/p2p.md).
 */
static int recv_on_stack(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                         struct MPI_ABI_Datatype *t, int source, int tag, MPI_Comm comm, struct MPI_ABI_Comm *c,
                         MPI_Status *status)
{
    struct MPI_ABI_Request req;
    recv_on_stack_count++;
    p2p_request_init(&req, HASHI_REQ_RECV);
    recv_describe(&req, buf, count, datatype, t, source, tag, c, c->context_id);   /* contiguous: cannot fail */
    recv_arm(&req);
    int rc = hashi_device->p2p.irecv(&req);
    if (rc != MPI_SUCCESS)
        return hashi_err_comm(func, comm, rc, "the device receive of %zu bytes from rank %d could not start",
                              req.dev_bytes, source);
    hashi_progress_wait(&req);
    int err = req.status.MPI_ERROR;
    p2p_copy_status(status, &req.status, err);
    if (err != MPI_SUCCESS)
        return p2p_raise_request_error(func, c, err, &req.status);
    return MPI_SUCCESS;
}

/* Wait for a started receive, hand out its status, free it, report its error. */
static int recv_wait(const char *func, struct MPI_ABI_Request *req, MPI_Status *status)
{
    hashi_progress_wait(req);
    MPI_Request handle = req;
    /* No error to raise (a receive's finish returns its MPI_ERROR): the
     * communicator need not outlive the request. */
    if (req->status.MPI_ERROR == MPI_SUCCESS)
        return p2p_request_finish(&handle, status);
    struct MPI_ABI_Comm *c = req->comm;   /* NULL for MPI_MESSAGE_NO_PROC */
    if (c)
        hashi_comm_retain(c);
    MPI_Status st = req->status;
    int rc = p2p_request_finish(&handle, status);
    if (rc != MPI_SUCCESS)
        rc = p2p_raise_request_error(func, c, rc, &st);
    if (c)
        hashi_comm_release(c);
    return rc;
}

static int recv_blocking(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                         int tag, MPI_Comm comm, MPI_Status *status)
{
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *t;
    int rc = p2p_check_args(func, buf, count, datatype, source, tag, comm, 1, &c, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    if (recv_on_stack_fits(t, count, source))
        return recv_on_stack(func, buf, count, datatype, t, source, tag, comm, c, status);
    struct MPI_ABI_Request *req;
    rc = recv_request_checked(func, buf, count, datatype, t, source, tag, comm, c, 0, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    return recv_wait(func, req, status);
}

static int recv_nonblocking(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                            int tag, MPI_Comm comm, int persistent, MPI_Request *request)
{
    if (!request)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "the request pointer is NULL");
    struct MPI_ABI_Request *req;
    int rc = recv_request(func, buf, count, datatype, source, tag, comm, persistent, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    *request = req;
    return MPI_SUCCESS;
}

int hashi_impl_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                      MPI_Comm comm, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Recv");
    return recv_blocking("MPI_Recv", buf, count, datatype, source, tag, comm, status);
}

int hashi_impl_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                    MPI_Comm comm, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Recv");
    return recv_blocking("MPI_Recv", buf, count, datatype, source, tag, comm, status);
}

int hashi_impl_Irecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                       MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Irecv");
    return recv_nonblocking("MPI_Irecv", buf, count, datatype, source, tag, comm, 0, request);
}

int hashi_impl_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                     MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Irecv");
    return recv_nonblocking("MPI_Irecv", buf, count, datatype, source, tag, comm, 0, request);
}

int hashi_impl_Recv_init_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                           MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Recv_init");
    return recv_nonblocking("MPI_Recv_init", buf, count, datatype, source, tag, comm, 1, request);
}

int hashi_impl_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Recv_init");
    return recv_nonblocking("MPI_Recv_init", buf, count, datatype, source, tag, comm, 1, request);
}

/* ---- probes ---- */

static void status_from_envelope(MPI_Status *status, const struct hashi_envelope *env)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = env->source;
    status->MPI_TAG = env->tag;
    hashi_status_set_bytes(status, env->bytes);
    hashi_status_set_cancelled(status, 0);
}

static void status_proc_null(MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = MPI_PROC_NULL;
    status->MPI_TAG = MPI_ANY_TAG;
    hashi_status_set_bytes(status, 0);
    hashi_status_set_cancelled(status, 0);
}

static int probe_check(const char *func, int source, int tag, MPI_Comm comm, struct MPI_ABI_Comm **c)
{
    int rc;
    if (!(*c = hashi_comm_arg(func, comm, &rc)))
        return rc;
    if ((rc = p2p_check_rank(func, *c, comm, source, 1)) != MPI_SUCCESS)
        return rc;
    return p2p_check_tag(func, comm, tag, 1);
}

/* One probe attempt; `matched` selects improbe (the message leaves matching). */
struct probe {
    struct hashi_match match;
    int matched;
    int flag;
    int rc;
    struct hashi_envelope env;
    struct hashi_message *msg;
};

static int probe_once(void *arg)
{
    struct probe *p = arg;
    if (p->matched)
        p->rc = hashi_device->p2p.improbe(&p->match, &p->flag, &p->env, &p->msg);
    else
        p->rc = hashi_device->p2p.iprobe(&p->match, &p->flag, &p->env);
    return p->rc != MPI_SUCCESS || p->flag;
}

static struct MPI_ABI_Message *message_new(struct MPI_ABI_Comm *c, const struct probe *p)
{
    struct MPI_ABI_Message *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    m->magic = HASHI_MESSAGE_MAGIC;
    m->comm = c;
    hashi_comm_retain(c);
    m->msg = p->msg;
    m->env = p->env;
    return m;
}

static void message_free(struct MPI_ABI_Message *m)
{
    hashi_handle_forget(m);
    m->magic = 0;
    hashi_comm_release(m->comm);
    free(m);
}

/* Probe (blocking or not, plain or matched); the common body of the four calls. */
static int probe_call(const char *func, int source, int tag, MPI_Comm comm, int blocking, int matched,
                      int *flag, MPI_Message *message, MPI_Status *status)
{
    struct MPI_ABI_Comm *c;
    int rc = probe_check(func, source, tag, comm, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((!blocking && !flag) || (matched && !message))
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", matched && !message ? "message" : "flag");
    if (source == MPI_PROC_NULL) {
        status_proc_null(status);
        if (flag)
            *flag = 1;
        if (matched)
            *message = MPI_MESSAGE_NO_PROC;
        return MPI_SUCCESS;
    }
    struct probe p = { .match = { c->context_id, source, tag }, .matched = matched };
    if (blocking) {
        hashi_progress_wait_until(probe_once, &p);
    } else {
        /* A probe that keeps failing must still let messages in. */
        hashi_progress_poll();
        probe_once(&p);
    }
    if (p.rc != MPI_SUCCESS)
        return hashi_err_comm(func, comm, p.rc, "the device's probe failed");
    if (flag)
        *flag = p.flag;
    if (!p.flag)
        return MPI_SUCCESS;
    status_from_envelope(status, &p.env);
    if (matched) {
        struct MPI_ABI_Message *m = message_new(c, &p);
        if (!m)
            return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for a message handle");
        *message = m;
    }
    return MPI_SUCCESS;
}

int hashi_impl_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Iprobe");
    return probe_call("MPI_Iprobe", source, tag, comm, 0, 0, flag, NULL, status);
}

int hashi_impl_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Probe");
    return probe_call("MPI_Probe", source, tag, comm, 1, 0, NULL, NULL, status);
}

int hashi_impl_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Improbe");
    return probe_call("MPI_Improbe", source, tag, comm, 0, 1, flag, message, status);
}

int hashi_impl_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Mprobe");
    return probe_call("MPI_Mprobe", source, tag, comm, 1, 1, NULL, message, status);
}

/* ---- receiving matched messages ---- */

static struct MPI_ABI_Message *message_get(MPI_Message h)
{
    if ((uintptr_t)h < HASHI_PREDEFINED_LIMIT || ((uintptr_t)h & (_Alignof(struct MPI_ABI_Message) - 1)))
        return NULL;
    return h->magic == HASHI_MESSAGE_MAGIC ? h : NULL;
}

/*
 * Start the receive of a matched message into a new request; *message becomes
 * MPI_MESSAGE_NULL. MPI_MESSAGE_NO_PROC gives a completed PROC_NULL receive.
 */
static int mrecv_start(const char *func, void *buf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Message *message, struct MPI_ABI_Request **out)
{
    if (!message)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "the message pointer is NULL");
    if (*message == MPI_MESSAGE_NO_PROC) {
        int rc = p2p_check_count(func, MPI_COMM_SELF, count);
        if (rc != MPI_SUCCESS)
            return rc;
        struct MPI_ABI_Request *req = p2p_completed_request(HASHI_REQ_RECV, 1);
        if (!req)
            return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "no memory for a request");
        *message = MPI_MESSAGE_NULL;
        *out = req;
        return MPI_SUCCESS;
    }
    struct MPI_ABI_Message *m = message_get(*message);
    if (!m)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_REQUEST, "%s",
                               *message == MPI_MESSAGE_NULL ? "the message is MPI_MESSAGE_NULL"
                               : "the handle is not a matched message (received already?)");
    MPI_Comm comm = p2p_comm_handle(m->comm);
    int rc = p2p_check_count(func, comm, count);
    if (rc != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Datatype *t = p2p_check_type(func, comm, datatype, &rc);
    if (!t)
        return rc;
    if ((rc = p2p_check_buffer(func, comm, buf, count, t)) != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_RECV);
    if (!req)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for a request");
    rc = p2p_prepare_recv(req, buf, count, datatype, t, m->env.source, m->env.tag, m->comm, m->comm->context_id);
    if (rc != MPI_SUCCESS) {
        hashi_request_free(req);
        return hashi_err_comm(func, comm, rc, "no memory to unpack a message of %llu bytes",
                              (unsigned long long)m->env.bytes);
    }
    /* The message is consumed whatever the device says: it left matching. */
    rc = p2p_start_mrecv(req, m->msg);
    *message = MPI_MESSAGE_NULL;
    message_free(m);
    if (rc != MPI_SUCCESS) {
        hashi_request_free(req);
        return hashi_err_comm(func, comm, rc, "the device could not receive the matched message");
    }
    *out = req;
    return MPI_SUCCESS;
}

int hashi_impl_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    HASHI_CHECK_INITIALIZED("MPI_Mrecv");
    struct MPI_ABI_Request *req;
    int rc = mrecv_start("MPI_Mrecv", buf, count, datatype, message, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    return recv_wait("MPI_Mrecv", req, status);
}

int hashi_impl_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    return hashi_impl_Mrecv_c(buf, count, datatype, message, status);
}

int hashi_impl_Imrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,
                        MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Imrecv");
    if (!request)
        return hashi_err_raise("MPI_Imrecv", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "the request pointer is NULL");
    struct MPI_ABI_Request *req;
    int rc = mrecv_start("MPI_Imrecv", buf, count, datatype, message, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    *request = req;
    return MPI_SUCCESS;
}

int hashi_impl_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request)
{
    return hashi_impl_Imrecv_c(buf, count, datatype, message, request);
}
