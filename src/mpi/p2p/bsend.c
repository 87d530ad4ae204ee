/*
 * Buffered mode: MPI_Bsend / Ibsend / Bsend_init copy the message into a
 * buffer the program attached (MPI_Buffer_attach for the World Model,
 * MPI_Session_attach_buffer for the communicators of a session,
 * MPI_Comm_attach_buffer for one communicator, which comes first;
 * MPI_BUFFER_AUTOMATIC lets the library allocate) and send the copy; the
 * call completes at once.
 *
 * The attached buffer is carved into segments, each a header followed by the
 * packed message, kept in address order; first fit, split, and merge with free
 * neighbours when a send completes. The header is far smaller than
 * MPI_BSEND_OVERHEAD, so a program that sizes its buffer as the standard says
 * always fits its messages.
 */
#include "mpi/p2p/p2p_impl.h"
#include "runtime/rt.h"
#include "runtime/wake.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SEGMENT_ALIGN alignof(max_align_t)

struct bsend_segment {
    struct bsend_segment *next, *prev;   /* address order (attached buffers only) */
    size_t size;                         /* header + data, a multiple of SEGMENT_ALIGN */
    int in_use;
    struct hashi_bsend_buffer *owner;
};

#define HEADER_SIZE ((sizeof(struct bsend_segment) + SEGMENT_ALIGN - 1) / SEGMENT_ALIGN * SEGMENT_ALIGN)
/* A free remainder smaller than this is left inside the used segment. */
#define MIN_SPLIT (HEADER_SIZE + 64)

_Static_assert(HEADER_SIZE + SEGMENT_ALIGN <= MPI_BSEND_OVERHEAD, "the Bsend header must fit MPI_BSEND_OVERHEAD");

static unsigned char *segment_data(struct bsend_segment *s)
{
    return (unsigned char *)s + HEADER_SIZE;
}

static void buffer_reset(struct hashi_bsend_buffer *b)
{
    memset(b, 0, sizeof *b);
}

static int buffer_attach(struct hashi_bsend_buffer *b, void *addr, MPI_Count size)
{
    buffer_reset(b);
    b->attached = 1;
    b->user_addr = addr;
    b->user_size = size;
    if (addr == MPI_BUFFER_AUTOMATIC) {
        b->automatic = 1;
        return MPI_SUCCESS;
    }
    uintptr_t start = ((uintptr_t)addr + SEGMENT_ALIGN - 1) & ~(uintptr_t)(SEGMENT_ALIGN - 1);
    uintptr_t end = (uintptr_t)addr + (uintptr_t)size;
    if (end < start + HEADER_SIZE + SEGMENT_ALIGN)
        return MPI_SUCCESS;   /* too small for any message: every Bsend will say so */
    struct bsend_segment *s = (struct bsend_segment *)start;
    *s = (struct bsend_segment){ .size = (end - start) / SEGMENT_ALIGN * SEGMENT_ALIGN, .owner = b };
    b->base = (unsigned char *)s;
    b->segments = s;
    return MPI_SUCCESS;
}

/* First fit; splits off the rest when it is worth a segment of its own. */
static struct bsend_segment *segment_alloc(struct hashi_bsend_buffer *b, size_t bytes)
{
    size_t need = HEADER_SIZE + (bytes + SEGMENT_ALIGN - 1) / SEGMENT_ALIGN * SEGMENT_ALIGN;
    if (b->automatic) {
        struct bsend_segment *s = aligned_alloc(SEGMENT_ALIGN, need);
        if (s)
            *s = (struct bsend_segment){ .size = need, .in_use = 1, .owner = b };
        return s;
    }
    for (struct bsend_segment *s = b->segments; s; s = s->next) {
        if (s->in_use || s->size < need)
            continue;
        if (s->size - need >= MIN_SPLIT) {
            struct bsend_segment *rest = (struct bsend_segment *)((unsigned char *)s + need);
            *rest = (struct bsend_segment){ .next = s->next, .prev = s, .size = s->size - need, .owner = b };
            if (s->next)
                s->next->prev = rest;
            s->next = rest;
            s->size = need;
        }
        s->in_use = 1;
        return s;
    }
    return NULL;
}

static void segment_merge_next(struct bsend_segment *s)
{
    struct bsend_segment *n = s->next;
    s->size += n->size;
    s->next = n->next;
    if (n->next)
        n->next->prev = s;
}

static void segment_free(struct bsend_segment *s)
{
    struct hashi_bsend_buffer *b = s->owner;
    if (b->automatic) {
        free(s);
        return;
    }
    s->in_use = 0;
    if (s->next && !s->next->in_use)
        segment_merge_next(s);
    if (s->prev && !s->prev->in_use)
        segment_merge_next(s->prev);
}

/* Complete the MPI_*_iflush_buffer requests waiting for an empty buffer. */
static void buffer_complete_flushes(struct hashi_bsend_buffer *b)
{
    struct MPI_ABI_Request *w = b->flush_waiters;
    b->flush_waiters = NULL;
    while (w) {
        struct MPI_ABI_Request *next = w->extra;
        w->extra = NULL;
        hashi_request_complete(w);
        w = next;
    }
}

/* The internal send of a buffered copy finished: give its segment back. */
static void bsend_done(struct MPI_ABI_Request *req)
{
    struct bsend_segment *s = req->extra;
    struct hashi_bsend_buffer *b = s->owner;
    segment_free(s);
    if (--b->pending == 0 && b->flush_waiters)
        buffer_complete_flushes(b);
}

/* ---- which buffer ---- */

/* The record of the buffer attached to a communicator or session (owner). */
static struct hashi_comm_buffer **comm_buffer_slot(const void *owner)
{
    struct hashi_comm_buffer **p = &hashi_p2p.comm_buffers;
    while (*p && (*p)->owner != owner)
        p = &(*p)->next;
    return p;
}

struct hashi_bsend_buffer *p2p_bsend_buffer_for(struct MPI_ABI_Comm *comm)
{
    struct hashi_comm_buffer *cb = *comm_buffer_slot(comm);
    if (!cb && comm->session)
        cb = *comm_buffer_slot(comm->session);
    if (cb)
        return &cb->buf;
    /* MPI_Buffer_attach's buffer belongs to the World Model's communicators. */
    return !comm->session && hashi_p2p.process_buffer.attached ? &hashi_p2p.process_buffer : NULL;
}

static int drain_completions(void)
{
    int total = 0, n;
    while ((n = hashi_progress_poll()) > 0)
        total += n;
    return total;
}

int p2p_bsend(const char *func, const void *buf, MPI_Count count, struct MPI_ABI_Datatype *t,
              int dest, int tag, struct MPI_ABI_Comm *comm, MPI_Comm handle)
{
    return p2p_bsend_copy(func, buf, count, t, dest, tag, comm, handle, NULL);
}

int p2p_bsend_copy(const char *func, const void *buf, MPI_Count count, struct MPI_ABI_Datatype *t, int dest,
                   int tag, struct MPI_ABI_Comm *comm, MPI_Comm handle, struct MPI_ABI_Request **copy_send)
{
    if (copy_send)
        *copy_send = NULL;
    if (dest == MPI_PROC_NULL)
        return MPI_SUCCESS;
    struct hashi_bsend_buffer *b = p2p_bsend_buffer_for(comm);
    size_t bytes = (size_t)hashi_type_bytes(t, count);
    if (!b)
        return hashi_err_comm(func, handle, MPI_ERR_BUFFER,
                              "no buffer is attached for a buffered send of %zu bytes "
                              "(MPI_Buffer_attach or MPI_Comm_attach_buffer)", bytes);
    struct bsend_segment *s = segment_alloc(b, bytes);
    if (!s && !b->automatic && b->pending > 0) {
        /* Sends that finished since the last progress give their space back. */
        drain_completions();
        s = segment_alloc(b, bytes);
    }
    if (!s)
        return hashi_err_comm(func, handle, b->automatic ? MPI_ERR_NO_MEM : MPI_ERR_BUFFER,
                              "the attached buffer (%lld bytes, %ld message%s pending) has no room for a "
                              "buffered send of %zu bytes plus MPI_BSEND_OVERHEAD",
                              (long long)b->user_size, b->pending, b->pending == 1 ? "" : "s", bytes);
    unsigned char *data = segment_data(s);
    if (bytes) {
        if (hashi_type_is_contig(t))
            memcpy(data, p2p_offset(buf, t->true_lb), bytes);
        else
            hashi_type_pack(buf, count, t, 0, data, bytes);
    }

    /* The copy goes out as a standard send of bytes; the program's request
     * (if any) completes now. */
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_SEND);
    if (!req) {
        segment_free(s);
        return hashi_err_comm(func, handle, MPI_ERR_NO_MEM, "no memory for a request");
    }
    struct MPI_ABI_Datatype *byte_type = hashi_type_get(MPI_BYTE);
    int rc = p2p_prepare_send(req, data, (MPI_Count)bytes, MPI_BYTE, byte_type, dest, tag, comm,
                              comm->context_id, HASHI_SEND_STANDARD);
    if (rc != MPI_SUCCESS) {
        hashi_request_free(req);
        segment_free(s);
        return hashi_err_comm(func, handle, rc, "preparing a buffered send failed");
    }
    req->extra = s;
    req->on_complete = bsend_done;
    b->pending++;
    rc = p2p_start_send(req);
    if (rc == MPI_SUCCESS && copy_send && hashi_p2p.cancel_sends) {
        *copy_send = req;   /* the program's request keeps the reference */
        return MPI_SUCCESS;
    }
    /* Nobody waits for this request: its completion frees it. A failed start
     * has completed it already (bsend_done gave the segment back). */
    hashi_request_free(req);
    if (rc != MPI_SUCCESS)
        return hashi_err_comm(func, handle, rc, "the device could not start a buffered send of %zu bytes to rank %d",
                              bytes, dest);
    return MPI_SUCCESS;
}

/* ---- MPI_Bsend, MPI_Ibsend, MPI_Bsend_init ---- */

static int bsend_call(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                      int tag, MPI_Comm comm, struct MPI_ABI_Request **copy_send)
{
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *t;
    int rc = p2p_check_args(func, buf, count, datatype, dest, tag, comm, 0, &c, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    return p2p_bsend_copy(func, buf, count, t, dest, tag, c, comm, copy_send);
}

int hashi_impl_Bsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED("MPI_Bsend");
    return bsend_call("MPI_Bsend", buf, count, datatype, dest, tag, comm, NULL);
}

int hashi_impl_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    HASHI_CHECK_INITIALIZED("MPI_Bsend");
    return bsend_call("MPI_Bsend", buf, count, datatype, dest, tag, comm, NULL);
}

static int ibsend_call(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                       int tag, MPI_Comm comm, MPI_Request *request)
{
    if (!request)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "the request pointer is NULL");
    struct MPI_ABI_Request *copy;
    int rc = bsend_call(func, buf, count, datatype, dest, tag, comm, &copy);
    if (rc != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Request *req = p2p_completed_request(HASHI_REQ_SEND, 0);
    if (!req) {
        if (copy)
            hashi_request_free(copy);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for a request");
    }
    req->send_mode = HASHI_SEND_BUFFERED;
    req->copy_send = copy;   /* MPI_Cancel withdraws it (none: to MPI_PROC_NULL) */
    *request = req;
    return MPI_SUCCESS;
}

int hashi_impl_Ibsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Ibsend");
    return ibsend_call("MPI_Ibsend", buf, count, datatype, dest, tag, comm, request);
}

int hashi_impl_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                      MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Ibsend");
    return ibsend_call("MPI_Ibsend", buf, count, datatype, dest, tag, comm, request);
}

static int bsend_init_call(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                           int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    if (!request)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "the request pointer is NULL");
    struct MPI_ABI_Comm *c;
    struct MPI_ABI_Datatype *t;
    int rc = p2p_check_args(func, buf, count, datatype, dest, tag, comm, 0, &c, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_PREQ_SEND);
    if (!req)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for a request");
    /* Only the description is kept: each MPI_Start copies into the buffer. */
    req->user_buf = (void *)buf;
    req->count = count;
    req->datatype = datatype;
    req->type = t;
    hashi_type_retain(t);
    req->comm = c;
    hashi_comm_retain(c);
    req->peer = dest;
    req->tag = tag;
    req->send_mode = HASHI_SEND_BUFFERED;
    req->persistent = 1;
    atomic_store_explicit(&req->complete, 1, memory_order_relaxed);
    *request = req;
    return MPI_SUCCESS;
}

int hashi_impl_Bsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                            MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Bsend_init");
    return bsend_init_call("MPI_Bsend_init", buf, count, datatype, dest, tag, comm, request);
}

int hashi_impl_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Bsend_init");
    return bsend_init_call("MPI_Bsend_init", buf, count, datatype, dest, tag, comm, request);
}

/* ---- attach, detach, flush ---- */

static int buffer_empty(void *arg)
{
    return ((struct hashi_bsend_buffer *)arg)->pending == 0;
}

/* Wait until every message copied into b has been sent. */
static void buffer_flush(struct hashi_bsend_buffer *b)
{
    hashi_progress_wait_until(buffer_empty, b);
}

/* Where a buffer call raises its errors: the communicator or session it
 * names (MPI_Buffer_*: MPI_COMM_SELF), and the buffer's owner. */
struct buffer_call {
    const char *func;
    enum hashi_obj_kind kind;
    const void *handle;
    const void *owner;   /* the communicator or session object; NULL: the process */
    const char *noun;    /* "communicator", "session" */
};
#define BUFFER_ERR(call, code, ...) hashi_err_raise((call)->func, (call)->kind, (call)->handle, (code), __VA_ARGS__)

static int attach_args(const struct buffer_call *call, void *buffer, MPI_Count size)
{
    if (buffer == MPI_BUFFER_AUTOMATIC)
        return MPI_SUCCESS;
    if (size < 0)
        return BUFFER_ERR(call, MPI_ERR_ARG, "size %lld is negative", (long long)size);
    if (!buffer && size > 0)
        return BUFFER_ERR(call, MPI_ERR_BUFFER, "the buffer is NULL but size is %lld", (long long)size);
    return MPI_SUCCESS;
}

/* Detach's out-arguments: the address attached, and its size (0 for automatic;
 * the int form cannot hold more than INT_MAX). */
static void detach_results(const struct hashi_bsend_buffer *b, void *buffer_addr, MPI_Count *size)
{
    *(void **)buffer_addr = b->user_addr;
    *size = b->automatic ? 0 : b->user_size;
}

static int process_attach(const char *func, void *buffer, MPI_Count size)
{
    const struct buffer_call call = { func, HASHI_OBJ_COMM, MPI_COMM_SELF, NULL, "process" };
    int rc = attach_args(&call, buffer, size);
    if (rc != MPI_SUCCESS)
        return rc;
    if (hashi_p2p.process_buffer.attached)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_BUFFER,
                               "a buffer is attached already (MPI_Buffer_detach it first)");
    return buffer_attach(&hashi_p2p.process_buffer, buffer, size);
}

int hashi_impl_Buffer_attach_c(void *buffer, MPI_Count size)
{
    HASHI_CHECK_INITIALIZED("MPI_Buffer_attach");
    return process_attach("MPI_Buffer_attach", buffer, size);
}

int hashi_impl_Buffer_attach(void *buffer, int size)
{
    HASHI_CHECK_INITIALIZED("MPI_Buffer_attach");
    return process_attach("MPI_Buffer_attach", buffer, size);
}

static int process_detach(const char *func, void *buffer_addr, MPI_Count *size)
{
    if (!buffer_addr)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "buffer_addr is NULL");
    struct hashi_bsend_buffer *b = &hashi_p2p.process_buffer;
    if (!b->attached)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_BUFFER, "no buffer is attached");
    buffer_flush(b);
    detach_results(b, buffer_addr, size);
    buffer_reset(b);
    return MPI_SUCCESS;
}

int hashi_impl_Buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    HASHI_CHECK_INITIALIZED("MPI_Buffer_detach");
    if (!size)
        return hashi_err_raise("MPI_Buffer_detach", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "size is NULL");
    return process_detach("MPI_Buffer_detach", buffer_addr, size);
}

int hashi_impl_Buffer_detach(void *buffer_addr, int *size)
{
    HASHI_CHECK_INITIALIZED("MPI_Buffer_detach");
    if (!size)
        return hashi_err_raise("MPI_Buffer_detach", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "size is NULL");
    MPI_Count sz = 0;
    int rc = process_detach("MPI_Buffer_detach", buffer_addr, &sz);
    if (rc == MPI_SUCCESS)
        *size = sz > INT_MAX ? INT_MAX : (int)sz;
    return rc;
}

int hashi_impl_Buffer_flush(void)
{
    HASHI_CHECK_INITIALIZED("MPI_Buffer_flush");
    if (hashi_p2p.process_buffer.attached)
        buffer_flush(&hashi_p2p.process_buffer);
    return MPI_SUCCESS;
}

/* A request that completes once every message in b has been sent. */
static int buffer_iflush(const struct buffer_call *call, struct hashi_bsend_buffer *b, MPI_Request *request)
{
    if (!request)
        return BUFFER_ERR(call, MPI_ERR_ARG, "the request pointer is NULL");
    if (!b || b->pending == 0) {
        struct MPI_ABI_Request *done = p2p_completed_request(HASHI_REQ_SEND, 0);
        if (!done)
            return BUFFER_ERR(call, MPI_ERR_NO_MEM, "no memory for a request");
        *request = done;
        return MPI_SUCCESS;
    }
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_SEND);
    if (!req)
        return BUFFER_ERR(call, MPI_ERR_NO_MEM, "no memory for a request");
    hashi_request_retain(req);   /* the flush's "operation" */
    req->extra = b->flush_waiters;
    b->flush_waiters = req;
    *request = req;
    return MPI_SUCCESS;
}

int hashi_impl_Buffer_iflush(MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Buffer_iflush");
    struct hashi_bsend_buffer *b = hashi_p2p.process_buffer.attached ? &hashi_p2p.process_buffer : NULL;
    const struct buffer_call call = { "MPI_Buffer_iflush", HASHI_OBJ_COMM, MPI_COMM_SELF, NULL, "process" };
    return buffer_iflush(&call, b, request);
}

/* ---- a communicator's or a session's buffer (MPI-4.1) ---- */

static int owned_attach(const struct buffer_call *call, void *buffer, MPI_Count size)
{
    int rc = attach_args(call, buffer, size);
    if (rc != MPI_SUCCESS)
        return rc;
    if (*comm_buffer_slot(call->owner))
        return BUFFER_ERR(call, MPI_ERR_BUFFER, "a buffer is attached to this %s already (detach it first)",
                          call->noun);
    struct hashi_comm_buffer *cb = malloc(sizeof *cb);
    if (!cb)
        return BUFFER_ERR(call, MPI_ERR_NO_MEM, "out of memory");
    cb->owner = call->owner;
    buffer_attach(&cb->buf, buffer, size);
    cb->next = hashi_p2p.comm_buffers;
    hashi_p2p.comm_buffers = cb;
    return MPI_SUCCESS;
}

/* Unlink and free a communicator's or session's buffer record after
 * flushing it. */
static void comm_buffer_remove(struct hashi_comm_buffer **slot, void *buffer_addr, MPI_Count *size)
{
    struct hashi_comm_buffer *cb = *slot;
    buffer_flush(&cb->buf);
    if (buffer_addr)
        detach_results(&cb->buf, buffer_addr, size);
    /* Flushing ran progress: the list may have changed in front of us. */
    slot = comm_buffer_slot(cb->owner);
    *slot = cb->next;
    free(cb);
}

static int owned_detach(const struct buffer_call *call, void *buffer_addr, MPI_Count *size)
{
    if (!buffer_addr || !size)
        return BUFFER_ERR(call, MPI_ERR_ARG, "%s is NULL", !buffer_addr ? "buffer_addr" : "size");
    struct hashi_comm_buffer **slot = comm_buffer_slot(call->owner);
    if (!*slot)
        return BUFFER_ERR(call, MPI_ERR_BUFFER, "no buffer is attached to this %s", call->noun);
    comm_buffer_remove(slot, buffer_addr, size);
    return MPI_SUCCESS;
}

/* The int form of a detach: sizes above INT_MAX read as INT_MAX. */
static int owned_detach_int(const struct buffer_call *call, void *buffer_addr, int *size)
{
    MPI_Count sz = 0;
    int rc = owned_detach(call, buffer_addr, size ? &sz : NULL);
    if (rc == MPI_SUCCESS)
        *size = sz > INT_MAX ? INT_MAX : (int)sz;
    return rc;
}

static void owned_flush(const void *owner)
{
    struct hashi_comm_buffer *cb = *comm_buffer_slot(owner);
    if (cb)
        buffer_flush(&cb->buf);
}

static int owned_iflush(const struct buffer_call *call, MPI_Request *request)
{
    struct hashi_comm_buffer *cb = *comm_buffer_slot(call->owner);
    return buffer_iflush(call, cb ? &cb->buf : NULL, request);
}

/* The call's communicator; NULL (the error raised in *rc) if it is not one. */
static struct MPI_ABI_Comm *comm_call(struct buffer_call *call, MPI_Comm comm, int *rc)
{
    struct MPI_ABI_Comm *c = hashi_comm_arg(call->func, comm, rc);
    *call = (struct buffer_call){ call->func, HASHI_OBJ_COMM, comm, c, "communicator" };
    return c;
}

static struct MPI_ABI_Session *session_call(struct buffer_call *call, MPI_Session session, int *rc)
{
    struct MPI_ABI_Session *s = hashi_session_arg(call->func, session, rc);
    *call = (struct buffer_call){ call->func, HASHI_OBJ_SESSION, session, s, "session" };
    return s;
}

int hashi_impl_Comm_attach_buffer_c(MPI_Comm comm, void *buffer, MPI_Count size)
{
    struct buffer_call call = { .func = "MPI_Comm_attach_buffer" };
    HASHI_CHECK_INITIALIZED(call.func);
    int rc;
    return comm_call(&call, comm, &rc) ? owned_attach(&call, buffer, size) : rc;
}

int hashi_impl_Comm_attach_buffer(MPI_Comm comm, void *buffer, int size)
{
    return hashi_impl_Comm_attach_buffer_c(comm, buffer, size);
}

int hashi_impl_Comm_detach_buffer_c(MPI_Comm comm, void *buffer_addr, MPI_Count *size)
{
    struct buffer_call call = { .func = "MPI_Comm_detach_buffer" };
    HASHI_CHECK_INITIALIZED(call.func);
    int rc;
    return comm_call(&call, comm, &rc) ? owned_detach(&call, buffer_addr, size) : rc;
}

int hashi_impl_Comm_detach_buffer(MPI_Comm comm, void *buffer_addr, int *size)
{
    struct buffer_call call = { .func = "MPI_Comm_detach_buffer" };
    HASHI_CHECK_INITIALIZED(call.func);
    int rc;
    return comm_call(&call, comm, &rc) ? owned_detach_int(&call, buffer_addr, size) : rc;
}

int hashi_impl_Comm_flush_buffer(MPI_Comm comm)
{
    struct buffer_call call = { .func = "MPI_Comm_flush_buffer" };
    HASHI_CHECK_INITIALIZED(call.func);
    int rc;
    if (!comm_call(&call, comm, &rc))
        return rc;
    owned_flush(call.owner);
    return MPI_SUCCESS;
}

int hashi_impl_Comm_iflush_buffer(MPI_Comm comm, MPI_Request *request)
{
    struct buffer_call call = { .func = "MPI_Comm_iflush_buffer" };
    HASHI_CHECK_INITIALIZED(call.func);
    int rc;
    return comm_call(&call, comm, &rc) ? owned_iflush(&call, request) : rc;
}

void hashi_p2p_comm_destroyed(struct MPI_ABI_Comm *comm)
{
    struct hashi_comm_buffer **slot = comm_buffer_slot(comm);
    if (*slot)
        comm_buffer_remove(slot, NULL, NULL);
    p2p_part_comm_destroyed(comm);
}

int hashi_impl_Session_attach_buffer_c(MPI_Session session, void *buffer, MPI_Count size)
{
    struct buffer_call call = { .func = "MPI_Session_attach_buffer" };
    int rc;
    return session_call(&call, session, &rc) ? owned_attach(&call, buffer, size) : rc;
}

int hashi_impl_Session_attach_buffer(MPI_Session session, void *buffer, int size)
{
    return hashi_impl_Session_attach_buffer_c(session, buffer, size);
}

int hashi_impl_Session_detach_buffer_c(MPI_Session session, void *buffer_addr, MPI_Count *size)
{
    struct buffer_call call = { .func = "MPI_Session_detach_buffer" };
    int rc;
    return session_call(&call, session, &rc) ? owned_detach(&call, buffer_addr, size) : rc;
}

int hashi_impl_Session_detach_buffer(MPI_Session session, void *buffer_addr, int *size)
{
    struct buffer_call call = { .func = "MPI_Session_detach_buffer" };
    int rc;
    return session_call(&call, session, &rc) ? owned_detach_int(&call, buffer_addr, size) : rc;
}

int hashi_impl_Session_flush_buffer(MPI_Session session)
{
    struct buffer_call call = { .func = "MPI_Session_flush_buffer" };
    int rc;
    if (!session_call(&call, session, &rc))
        return rc;
    owned_flush(call.owner);
    return MPI_SUCCESS;
}

int hashi_impl_Session_iflush_buffer(MPI_Session session, MPI_Request *request)
{
    struct buffer_call call = { .func = "MPI_Session_iflush_buffer" };
    int rc;
    return session_call(&call, session, &rc) ? owned_iflush(&call, request) : rc;
}

void hashi_p2p_session_finalized(const struct MPI_ABI_Session *session)
{
    struct hashi_comm_buffer **slot = comm_buffer_slot(session);
    if (*slot)
        comm_buffer_remove(slot, NULL, NULL);
}


void p2p_bsend_finalize(void)
{
    /* Pending messages were drained with every other send; drop the records. */
    while (hashi_p2p.comm_buffers) {
        struct hashi_comm_buffer *next = hashi_p2p.comm_buffers->next;
        free(hashi_p2p.comm_buffers);
        hashi_p2p.comm_buffers = next;
    }
    buffer_reset(&hashi_p2p.process_buffer);
}
