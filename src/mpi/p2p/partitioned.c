/*
 * MPI-4 partitioned point-to-point (MPI_Psend_init, MPI_Precv_init, MPI_Pready*,
 * MPI_Parrived), built on the internal point-to-point of this layer, so every
 * device carries it unchanged. docs/p2p.md, "Partitioned communication", has
 * the design; in short:
 *
 *  - Pairing is decided locally: the n-th MPI_Psend_init on (comm, dest, tag)
 *    pairs with the n-th MPI_Precv_init on (comm, source, tag), counted on
 *    each side, so no matching message is needed to agree on it.
 *  - Traffic travels on a context id pair reserved for it in every process
 *    (HASHI_CONTEXT_PARTITIONED), addressed by world rank through
 *    MPI_COMM_WORLD's object, so user receives never see it.
 *  - The sender reserves a range of data tags (one per partition) from its own
 *    tag space at init and, at its first MPI_Start, sends one "hello" on the
 *    control context: (comm, its rank, tag, pairing number, partitions, bytes,
 *    first tag). Each MPI_Pready then starts the partition's persistent
 *    internal send, tag first + partition; the requests are made once and
 *    restarted every epoch.
 *  - The receiver keeps one wildcard receive for hellos posted while any
 *    partitioned receive still waits for its sender. Once its hello is in, it
 *    makes one persistent internal receive per *sender* partition (landing at
 *    that partition's byte offset, so partition counts may differ on the two
 *    sides) and posts them all at every MPI_Start; MPI_Parrived tests the
 *    receives that overlap the asked partition.
 *  - The user's request is the parent of the internal ones: it completes
 *    when the last of them does (hashi_request_complete's parent hook).
 *  - A device with partitioned entries (device.h, hashi_device_part_ops)
 *    may carry a request instead: the sender offers it in the hello (a
 *    device token), the receiver's device accepts or declines and tells the
 *    sender's, and until that answer the sender's Preadys only mark. A
 *    declined request runs the generic path above on both sides.
 */
#include "mpi/p2p/p2p_impl.h"
#include "runtime/log.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Partition data and hellos: the two ids of the reserved pair. */
#define PART_CONTEXT_DATA (HASHI_CONTEXT_PARTITIONED)
#define PART_CONTEXT_CTRL (HASHI_CONTEXT_PARTITIONED + 1)
#define PART_TAG_HELLO 0
/* Data tags are handed out from 1 .. the device's MPI_TAG_UB. */
#define PART_TAG_FIRST 1

/* Sender -> receiver, once, at the sender's first MPI_Start. Both ends run
 * the same binary on the same architecture, so the layout is native. */
struct part_hello {
    uint64_t total_bytes;
    uint64_t seq;               /* pairing number on (comm, source, tag) */
    uint32_t comm_context;      /* the communicator's user context id */
    int32_t source;             /* the sender's rank in the communicator */
    int32_t tag;
    int32_t partitions;         /* the sender's */
    int32_t base_tag;           /* partition p travels with tag base_tag + p */
    int32_t dev_offer;          /* the sender's device offers to carry it (dev_token) */
    uint64_t dev_token;
};

/* A tag range held by one partitioned send (sorted list, next-fit). */
struct part_tags {
    struct part_tags *next;
    int base, n;
};

/* Pairing counters: init calls so far on (comm, peer, tag), per direction. */
struct part_seq {
    struct part_seq *next;
    struct MPI_ABI_Comm *comm;  /* not retained: dropped when the comm goes */
    int peer, tag, is_send;
    uint64_t count;
};

/* A hello that arrived before its partitioned receive was initialised. */
struct part_early {
    struct part_early *next;
    struct part_hello hello;
    int source_world;
};

/* One partitioned request's state (req->extra). */
struct part_state {
    struct MPI_ABI_Request *req;    /* the user's request */
    int is_send;
    int proc_null;
    int partitions;                 /* this side's */
    MPI_Count part_bytes;           /* bytes per partition, this side */
    MPI_Count total;                /* partitions * part_bytes */
    int peer_world;
    uint64_t seq;
    unsigned char *base;            /* byte 0 of the data stream: in place, or stage */
    unsigned char *stage;           /* packed copy of non-contiguous data, or NULL */
    /* One persistent internal request per sender partition. */
    int nxfer;
    MPI_Count xfer_bytes;
    struct MPI_ABI_Request **xfer;
    int base_tag;
    struct part_tags *tags;         /* send: the range reserved for xfer */
    int hello_sent;                 /* send */
    unsigned char *ready;           /* send: marked ready in this epoch */
    /* Receive: hello known, this epoch's receives posted, a size mismatch. */
    int have_hello;
    int posted;
    int mismatch;                   /* MPI_ERR_TRUNCATE / MPI_ERR_COUNT, or 0 */
    uint64_t sender_total;
    int sender_partitions;
    /* Per epoch. */
    int pending;                    /* internal requests not complete yet */
    int error;                      /* first failure among them */
    struct part_state *next_waiting;
    /* Carried by the device (hashi_device->part): DEV_NONE is the generic path. */
    int dev;                        /* DEV_* */
    struct hashi_device_part *dp;
    int on_dev_list;                /* in an epoch (or offered) on part.dev_list */
    struct part_state *next_dev;
};

enum { DEV_NONE, DEV_OFFERED, DEV_ON };

static struct {
    int live;                       /* partitioned requests in existence */
    int hook_registered;
    struct MPI_ABI_Request *hello_req;  /* the wildcard hello receive, or NULL */
    struct part_hello hello_in;
    struct part_state *waiting;     /* receives without a hello, init order */
    struct part_early *early;       /* hellos without a receive, arrival order */
    struct part_seq *seqs;
    struct part_tags *tags;         /* reserved data tag ranges, by base */
    int tag_cursor;                 /* next-fit: ranges are not reused soon */
    struct part_state *dev_list;    /* device-carried requests in an epoch, offers unanswered */
} part;

static int part_progress(void);

/* ---- pairing counters ---- */

static int next_seq(struct MPI_ABI_Comm *comm, int peer, int tag, int is_send, uint64_t *seq)
{
    struct part_seq *s;
    for (s = part.seqs; s; s = s->next)
        if (s->comm == comm && s->peer == peer && s->tag == tag && s->is_send == is_send)
            break;
    if (!s) {
        if (!(s = calloc(1, sizeof *s)))
            return MPI_ERR_NO_MEM;
        *s = (struct part_seq){ .next = part.seqs, .comm = comm, .peer = peer, .tag = tag, .is_send = is_send };
        part.seqs = s;
    }
    *seq = s->count++;
    return MPI_SUCCESS;
}

void p2p_part_comm_destroyed(struct MPI_ABI_Comm *comm)
{
    for (struct part_seq **p = &part.seqs; *p;) {
        struct part_seq *s = *p;
        if (s->comm == comm) {
            *p = s->next;
            free(s);
        } else {
            p = &s->next;
        }
    }
    /* Hellos for this communicator can no longer find a receive; its context
     * id may be reused by the next communicator. */
    for (struct part_early **p = &part.early; *p;) {
        struct part_early *e = *p;
        if (e->hello.comm_context == comm->context_id) {
            *p = e->next;
            free(e);
        } else {
            p = &e->next;
        }
    }
}

/* ---- data tag ranges (sender side) ---- */

static struct part_tags *tags_reserve(int n)
{
    long tag_max = hashi_p2p_tag_ub();
    long cursor = part.tag_cursor < PART_TAG_FIRST ? PART_TAG_FIRST : part.tag_cursor;
    for (int pass = 0; pass < 2; pass++) {
        long lo = pass == 0 ? cursor : PART_TAG_FIRST;
        struct part_tags **slot = &part.tags;
        while (*slot && (*slot)->base + (long)(*slot)->n <= lo)
            slot = &(*slot)->next;
        while (*slot && (*slot)->base < lo + n) {
            lo = (*slot)->base + (long)(*slot)->n;
            slot = &(*slot)->next;
        }
        if (lo + n - 1 > tag_max)
            continue;
        struct part_tags *t = malloc(sizeof *t);
        if (!t)
            return NULL;
        *t = (struct part_tags){ .next = *slot, .base = (int)lo, .n = n };
        *slot = t;
        part.tag_cursor = lo + n > tag_max ? PART_TAG_FIRST : (int)(lo + n);
        return t;
    }
    return NULL;
}

static void tags_release(struct part_tags *t)
{
    for (struct part_tags **p = &part.tags; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            free(t);
            return;
        }
    }
}

/* ---- the hello receive (receiver side) ---- */

static void hello_post(void)
{
    if (part.hello_req || !part.waiting)
        return;
    struct MPI_ABI_Request *req;
    int rc = hashi_irecv_internal(&part.hello_in, sizeof part.hello_in, MPI_BYTE, MPI_ANY_SOURCE, PART_TAG_HELLO,
                                  &hashi_comm_world, PART_CONTEXT_CTRL, &req);
    if (rc != MPI_SUCCESS) {
        /* Retried at the next progress round (the hook keeps running). */
        HASHI_DEBUG(1, "partitioned: posting the hello receive failed (%d), retrying", rc);
        return;
    }
    part.hello_req = req;
}

/* No receive waits any more: take the wildcard receive back. */
static void hello_retract(void)
{
    if (!part.hello_req || part.waiting || hashi_request_is_complete(part.hello_req))
        return;
    if (hashi_device->p2p.cancel_recv(part.hello_req)) {
        hashi_request_free(part.hello_req);
        part.hello_req = NULL;
    }
    /* else it matched a hello: the hook files it with the early ones */
}

static void hook_update(void)
{
    if ((part.live || part.hello_req) && !part.hook_registered) {
        if (hashi_progress_register(part_progress) == 0)
            part.hook_registered = 1;
    } else if (!part.live && !part.hello_req && part.hook_registered) {
        hashi_progress_unregister(part_progress);
        part.hook_registered = 0;
    }
}

/* ---- device-carried requests ---- */

static void dev_list_add(struct part_state *st)
{
    if (st->on_dev_list)
        return;
    st->on_dev_list = 1;
    st->next_dev = part.dev_list;
    part.dev_list = st;
}

static void dev_list_remove(struct part_state *st)
{
    if (!st->on_dev_list)
        return;
    for (struct part_state **p = &part.dev_list; *p; p = &(*p)->next_dev) {
        if (*p == st) {
            *p = st->next_dev;
            break;
        }
    }
    st->on_dev_list = 0;
    st->next_dev = NULL;
}

/* ---- epochs ---- */

static void epoch_done(struct part_state *st)
{
    struct MPI_ABI_Request *req = st->req;
    if (st->is_send) {
        hashi_status_set_empty(&req->status);
    } else {
        req->status.MPI_SOURCE = st->proc_null ? MPI_PROC_NULL : req->peer;
        req->status.MPI_TAG = st->proc_null ? MPI_ANY_TAG : req->tag;
        hashi_status_set_bytes(&req->status, st->proc_null || st->mismatch ? 0 : (uint64_t)st->total);
        hashi_status_set_cancelled(&req->status, 0);
    }
    req->status.MPI_ERROR = st->mismatch ? st->mismatch : st->error;
    hashi_request_complete(req);
}

static void child_done(struct MPI_ABI_Request *parent, struct MPI_ABI_Request *child)
{
    struct part_state *st = parent->extra;
    int err = child->status.MPI_ERROR;
    /* A mismatched receive drains the sender's partitions into nothing: their
     * truncation is expected, the request reports the mismatch itself. */
    if (err != MPI_SUCCESS && !st->mismatch && st->error == MPI_SUCCESS)
        st->error = err;
    if (--st->pending == 0)
        epoch_done(st);
}

/* Receive into a staging buffer: unpack the partition's bytes as they land. */
static void recv_unpack_range(struct MPI_ABI_Request *child)
{
    struct part_state *st = child->extra;
    MPI_Count offset = (MPI_Count)(child->tag - st->base_tag) * st->xfer_bytes;
    uint64_t got = hashi_status_bytes(&child->status);
    if (got > child->dev_bytes)
        got = child->dev_bytes;
    if (got)
        hashi_type_unpack(st->req->user_buf, st->req->count, st->req->type, (size_t)offset,
                          st->stage + offset, (size_t)got);
}

static void xfer_free_all(struct part_state *st)
{
    for (int i = 0; i < st->nxfer; i++)
        if (st->xfer && st->xfer[i])
            hashi_request_free(st->xfer[i]);
    free(st->xfer);
    st->xfer = NULL;
    st->nxfer = 0;
}

/* One persistent internal request per sender partition, made once. */
static int xfer_create(struct part_state *st, int n, MPI_Count bytes, int drain)
{
    struct MPI_ABI_Datatype *byte_type = hashi_type_get(MPI_BYTE);
    st->xfer = calloc((size_t)n, sizeof *st->xfer);
    if (!st->xfer)
        return MPI_ERR_NO_MEM;
    st->nxfer = n;
    st->xfer_bytes = bytes;
    for (int i = 0; i < n; i++) {
        struct MPI_ABI_Request *x = hashi_request_alloc(st->is_send ? HASHI_REQ_PREQ_SEND : HASHI_REQ_PREQ_RECV);
        if (!x)
            goto no_mem;
        st->xfer[i] = x;
        void *at = st->base + (size_t)i * (size_t)bytes;
        int rc = st->is_send
                 ? p2p_prepare_send(x, at, bytes, MPI_BYTE, byte_type, st->peer_world, st->base_tag + i,
                                    &hashi_comm_world, PART_CONTEXT_DATA, HASHI_SEND_STANDARD)
                 : p2p_prepare_recv(x, drain ? NULL : at, drain ? 0 : bytes, MPI_BYTE, byte_type, st->peer_world,
                                    st->base_tag + i, &hashi_comm_world, PART_CONTEXT_DATA);
        if (rc != MPI_SUCCESS)
            goto no_mem;
        x->persistent = 1;
        atomic_store_explicit(&x->complete, 1, memory_order_relaxed);   /* inactive */
        x->parent = st->req;
        x->extra = st;
        if (!st->is_send && st->stage && !drain)
            x->on_complete = recv_unpack_range;
    }
    return MPI_SUCCESS;
no_mem:
    xfer_free_all(st);
    return MPI_ERR_NO_MEM;
}

/* Receiver: post this epoch's receives (the hello is known, the request active). */
static void recv_post_all(struct part_state *st)
{
    st->posted = 1;
    st->pending = st->nxfer;
    st->error = MPI_SUCCESS;
    if (st->dev == DEV_ON) {
        /* The device lets the sender write this epoch; the hook sees it in. */
        int rc = hashi_device->part.start(st->dp);
        if (rc != MPI_SUCCESS) {
            st->error = rc;
            epoch_done(st);
            return;
        }
        dev_list_add(st);
        return;
    }
    if (st->nxfer == 0) {
        /* no internal requests (could not make them): report that */
        if (st->error == MPI_SUCCESS && !st->mismatch)
            st->error = MPI_ERR_NO_MEM;
        epoch_done(st);
        return;
    }
    /* A receive may complete inside its start: pending counts them all first. */
    for (int i = 0; i < st->nxfer; i++)
        p2p_start_recv(st->xfer[i]);   /* a failure completes it with the error */
}

/* Receiver: its sender's hello is in. */
static void hello_attach(struct part_state *st, const struct part_hello *h, int source_world)
{
    st->have_hello = 1;
    st->base_tag = h->base_tag;
    st->sender_total = h->total_bytes;
    st->sender_partitions = h->partitions;
    if (source_world != st->peer_world)
        HASHI_DEBUG(1, "partitioned: hello from world rank %d for a receive from world rank %d",
                    source_world, st->peer_world);
    if (h->total_bytes != (uint64_t)st->total)
        st->mismatch = h->total_bytes > (uint64_t)st->total ? MPI_ERR_TRUNCATE : MPI_ERR_COUNT;
    if (h->dev_offer && hashi_device->part.recv_accept) {
        /* The device answers the sender's either way: both take its path or neither. */
        int acceptable = !st->mismatch && h->partitions == st->partitions && !st->stage && st->total > 0;
        if (hashi_device->part.recv_accept(st->peer_world, h->dev_token, st->base, (size_t)st->part_bytes,
                                           st->partitions, acceptable, &st->dp) == MPI_SUCCESS) {
            st->dev = DEV_ON;
            if (st->req->active && !st->posted)
                recv_post_all(st);
            return;
        }
        st->dp = NULL;
    }
    MPI_Count sender_part_bytes = h->partitions > 0 ? (MPI_Count)(h->total_bytes / (uint64_t)h->partitions) : 0;
    if (h->partitions <= 0 || xfer_create(st, h->partitions, sender_part_bytes, st->mismatch != 0) != MPI_SUCCESS)
        HASHI_DEBUG(1, "partitioned: no memory for %d partition receives", h->partitions);
    if (st->req->active && !st->posted)
        recv_post_all(st);
}

static void hello_deliver(const struct part_hello *h, int source_world)
{
    for (struct part_state **p = &part.waiting; *p; p = &(*p)->next_waiting) {
        struct part_state *st = *p;
        if (st->req->comm->context_id == h->comm_context && st->req->peer == h->source &&
            st->req->tag == h->tag && st->seq == h->seq) {
            *p = st->next_waiting;
            st->next_waiting = NULL;
            hello_attach(st, h, source_world);
            return;
        }
    }
    struct part_early *e = malloc(sizeof *e);
    if (!e) {
        HASHI_DEBUG(0, "partitioned: no memory to keep a hello from world rank %d: its receive will wait",
                    source_world);
        return;
    }
    *e = (struct part_early){ .hello = *h, .source_world = source_world };
    struct part_early **tail = &part.early;
    while (*tail)
        tail = &(*tail)->next;
    *tail = e;
}

/* Sender: the receiver's device answered the offer. Partitions marked
 * ready so far go now, by the device or as the generic messages. */
static void dev_answered(struct part_state *st, int accepted)
{
    if (accepted) {
        st->dev = DEV_ON;
        for (int p = 0; p < st->partitions; p++)
            if (st->ready[p])
                hashi_device->part.ready(st->dp, p);   /* the device keeps its own errors */
        return;
    }
    hashi_device->part.free(st->dp);
    st->dp = NULL;
    st->dev = DEV_NONE;
    dev_list_remove(st);
    for (int p = 0; p < st->partitions; p++)
        if (st->ready[p])
            p2p_start_send(st->xfer[p]);   /* a failure completes it with the error */
}

/* Device-carried requests: answers to offers, epochs that completed. A
 * completion may free its request: the walk starts over after each event. */
static int dev_progress(void)
{
    int done = 0;
again:
    for (struct part_state *st = part.dev_list; st; st = st->next_dev) {
        if (st->dev == DEV_OFFERED) {
            int answer = hashi_device->part.send_answer(st->dp);
            if (answer < 0)
                continue;
            dev_answered(st, answer);
            done++;
            goto again;
        }
        int fin = 0;
        int rc = hashi_device->part.test(st->dp, &fin);
        if (!fin)
            continue;
        dev_list_remove(st);
        if (rc != MPI_SUCCESS && st->error == MPI_SUCCESS)
            st->error = rc;
        epoch_done(st);
        done++;
        goto again;
    }
    return done;
}

/* The progress hook: hellos that came in, device-carried epochs. */
static int part_progress(void)
{
    int done = part.dev_list ? dev_progress() : 0;
    while (part.hello_req && hashi_request_is_complete(part.hello_req)) {
        struct MPI_ABI_Request *req = part.hello_req;
        part.hello_req = NULL;
        int ok = req->status.MPI_ERROR == MPI_SUCCESS && !hashi_status_cancelled(&req->status) &&
                 hashi_status_bytes(&req->status) == sizeof part.hello_in;
        struct part_hello h = part.hello_in;
        int source_world = req->status.MPI_SOURCE;
        hashi_request_free(req);
        if (ok) {
            hello_deliver(&h, source_world);
            done++;
        }
        hello_post();
    }
    if (!part.hello_req)
        hello_post();   /* an earlier attempt failed */
    hook_update();
    return done;
}

/* ---- the requests' hooks ---- */

/* Sender: the hello, sent once and forgotten (the request frees its copy). */
static int hello_send(struct part_state *st, uint64_t dev_token)
{
    struct part_hello *h = malloc(sizeof *h);
    struct MPI_ABI_Request *r = hashi_request_alloc(HASHI_REQ_SEND);
    if (!h || !r) {
        free(h);
        if (r)
            hashi_request_free(r);
        return MPI_ERR_NO_MEM;
    }
    *h = (struct part_hello){ .total_bytes = (uint64_t)st->total, .seq = st->seq,
                              .comm_context = st->req->comm->context_id, .source = st->req->comm->rank,
                              .tag = st->req->tag, .partitions = st->nxfer, .base_tag = st->base_tag,
                              .dev_offer = dev_token != 0, .dev_token = dev_token };
    int rc = p2p_prepare_send(r, h, sizeof *h, MPI_BYTE, hashi_type_get(MPI_BYTE), st->peer_world, PART_TAG_HELLO,
                              &hashi_comm_world, PART_CONTEXT_CTRL, HASHI_SEND_STANDARD);
    if (rc == MPI_SUCCESS)
        rc = p2p_start_send(r);
    /* After the start, which would otherwise "pack" the copy onto itself. */
    r->pack_buf = h;
    r->flags |= HASHI_REQF_PACK_OWNED;
    hashi_request_free(r);
    return rc;
}

/* MPI_Start: the request is active, its operation reference taken. */
static int part_start(struct MPI_ABI_Request *req)
{
    struct part_state *st = req->extra;
    st->error = MPI_SUCCESS;
    if (st->proc_null) {
        if (st->ready)
            memset(st->ready, 0, (size_t)st->partitions);
        epoch_done(st);
        return MPI_SUCCESS;
    }
    if (st->is_send) {
        if (!st->hello_sent) {
            uint64_t token = 0;
            if (hashi_device->part.send_offer && st->total > 0 &&
                hashi_device->part.send_offer(st->peer_world, st->base, (size_t)st->part_bytes, st->partitions,
                                              &st->dp, &token) == MPI_SUCCESS && token)
                st->dev = DEV_OFFERED;
            else if (st->dp) {
                hashi_device->part.free(st->dp);
                st->dp = NULL;
            }
            int rc = hello_send(st, st->dev == DEV_OFFERED ? token : 0);
            if (rc != MPI_SUCCESS) {
                if (st->dp)
                    hashi_device->part.free(st->dp);
                st->dp = NULL;
                st->dev = DEV_NONE;
                /* not started: give the operation's reference back */
                atomic_store_explicit(&req->complete, 1, memory_order_relaxed);
                hashi_request_free(req);
                return rc;
            }
            st->hello_sent = 1;
        }
        memset(st->ready, 0, (size_t)st->partitions);
        st->pending = st->nxfer;
        if (st->dev != DEV_NONE) {
            int rc = hashi_device->part.start(st->dp);
            dev_list_add(st);
            if (rc != MPI_SUCCESS)
                st->error = rc;   /* reported when the epoch completes */
        }
        return MPI_SUCCESS;
    }
    st->posted = 0;
    if (st->have_hello)
        recv_post_all(st);
    return MPI_SUCCESS;
}

static void part_free(struct MPI_ABI_Request *req)
{
    struct part_state *st = req->extra;
    if (!st)
        return;
    dev_list_remove(st);
    if (st->dp)
        hashi_device->part.free(st->dp);
    st->dp = NULL;
    xfer_free_all(st);
    if (st->tags)
        tags_release(st->tags);
    for (struct part_state **p = &part.waiting; *p; p = &(*p)->next_waiting) {
        if (*p == st) {
            *p = st->next_waiting;
            break;
        }
    }
    free(st->stage);
    free(st->ready);
    free(st);
    req->extra = NULL;
    part.live--;
    hello_retract();
    hook_update();
}

/* ---- MPI_Psend_init / MPI_Precv_init ---- */

static int part_init(const char *func, void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                     int peer, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request, int is_send)
{
    (void)info;   /* no hints are interpreted */
    int rc;
    struct MPI_ABI_Comm *c = hashi_comm_arg(func, comm, &rc);
    if (!c)
        return rc;
    if (!request)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "the request pointer is NULL");
    if (partitions < 1)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "partitions is %d (at least 1)", partitions);
    if (partitions > hashi_p2p_tag_ub() - PART_TAG_FIRST + 1)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%d partitions: at most %d are supported", partitions,
                              hashi_p2p_tag_ub() - PART_TAG_FIRST + 1);
    if ((rc = p2p_check_count(func, comm, count)) != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Datatype *t = p2p_check_type(func, comm, datatype, &rc);
    if (!t)
        return rc;
    MPI_Count elements, part_bytes, total;
    if (__builtin_mul_overflow(count, (MPI_Count)partitions, &elements) ||
        __builtin_mul_overflow(count, t->size, &part_bytes) ||
        __builtin_mul_overflow(part_bytes, (MPI_Count)partitions, &total) || total > (MPI_Count)(SIZE_MAX / 2))
        return hashi_err_comm(func, comm, MPI_ERR_COUNT, "%d partitions of %lld elements of %lld bytes overflow",
                              partitions, (long long)count, (long long)t->size);
    if ((rc = p2p_check_buffer(func, comm, buf, elements, t)) != MPI_SUCCESS)
        return rc;
    if (!is_send && peer == MPI_ANY_SOURCE)
        return hashi_err_comm(func, comm, MPI_ERR_RANK, "MPI_ANY_SOURCE is not allowed for a partitioned receive");
    if ((rc = p2p_check_rank(func, c, comm, peer, !is_send)) != MPI_SUCCESS)
        return rc;
    if ((rc = p2p_check_tag(func, comm, tag, 0)) != MPI_SUCCESS)
        return rc;

    struct MPI_ABI_Request *req = hashi_request_alloc(is_send ? HASHI_REQ_PART_SEND : HASHI_REQ_PART_RECV);
    struct part_state *st = calloc(1, sizeof *st);
    if (!req || !st) {
        free(st);
        if (req)
            hashi_request_free(req);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "no memory for a partitioned request");
    }
    req->persistent = 1;
    atomic_store_explicit(&req->complete, 1, memory_order_relaxed);   /* inactive */
    req->user_buf = buf;
    req->count = elements;
    req->datatype = datatype;
    req->type = t;
    hashi_type_retain(t);
    req->comm = c;
    hashi_comm_retain(c);
    req->peer = peer;
    req->tag = tag;
    req->extra = st;
    req->start = part_start;
    req->on_free = part_free;
    req->on_child_complete = child_done;
    st->req = req;
    st->is_send = is_send;
    st->partitions = partitions;
    st->part_bytes = part_bytes;
    st->total = total;
    st->proc_null = peer == MPI_PROC_NULL;
    part.live++;
    hook_update();

    const char *what = "no memory for a partitioned request";
    rc = MPI_SUCCESS;
    if (is_send && !(st->ready = calloc((size_t)partitions, 1)))
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS && !st->proc_null) {
        st->peer_world = hashi_comm_to_world(c, peer);
        if (total > 0 && !hashi_type_is_contig(t)) {
            if (!(st->stage = malloc((size_t)total)))
                rc = MPI_ERR_NO_MEM;
            st->base = st->stage;
        } else {
            st->base = total > 0 ? p2p_offset(buf, t->true_lb) : buf;
        }
        if (rc == MPI_SUCCESS)
            rc = next_seq(c, peer, tag, is_send, &st->seq);
    }
    if (rc == MPI_SUCCESS && !st->proc_null && is_send) {
        if (!(st->tags = tags_reserve(partitions))) {
            rc = MPI_ERR_OTHER;
            what = "every data tag of partitioned communication is in use (free some partitioned sends)";
        } else {
            st->base_tag = st->tags->base;
            rc = xfer_create(st, partitions, part_bytes, 0);
        }
    }
    if (rc != MPI_SUCCESS) {
        hashi_request_free(req);   /* part_free releases the state */
        return hashi_err_comm(func, comm, rc, "%s", what);
    }
    if (!is_send && !st->proc_null) {
        /* Its hello may be here already; else wait for it. */
        struct part_early **p;
        for (p = &part.early; *p; p = &(*p)->next)
            if ((*p)->hello.comm_context == c->context_id && (*p)->hello.source == peer &&
                (*p)->hello.tag == tag && (*p)->hello.seq == st->seq)
                break;
        if (*p) {
            struct part_early *e = *p;
            *p = e->next;
            hello_attach(st, &e->hello, e->source_world);
            free(e);
        } else {
            struct part_state **tail = &part.waiting;
            while (*tail)
                tail = &(*tail)->next_waiting;
            *tail = st;
            hello_post();
        }
    }
    *request = req;
    return MPI_SUCCESS;
}

int hashi_impl_Psend_init_c(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest,
                            int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Psend_init");
    return part_init("MPI_Psend_init", (void *)buf, partitions, count, datatype, dest, tag, comm, info, request, 1);
}

int hashi_impl_Psend_init(const void *buf, int partitions, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return hashi_impl_Psend_init_c(buf, partitions, count, datatype, dest, tag, comm, info, request);
}

int hashi_impl_Precv_init_c(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source,
                            int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Precv_init");
    return part_init("MPI_Precv_init", buf, partitions, count, datatype, source, tag, comm, info, request, 0);
}

int hashi_impl_Precv_init(void *buf, int partitions, int count, MPI_Datatype datatype, int source, int tag,
                          MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return hashi_impl_Precv_init_c(buf, partitions, count, datatype, source, tag, comm, info, request);
}

/* ---- MPI_Pready* ---- */

/* The request argument of Pready / Parrived: a partitioned request of the
 * right side; NULL after raising. */
static struct part_state *part_arg(const char *func, MPI_Request request, int want_send, int *rc)
{
    struct MPI_ABI_Request *req = hashi_request_get(request);
    enum hashi_req_kind kind = want_send ? HASHI_REQ_PART_SEND : HASHI_REQ_PART_RECV;
    if (!req || req->kind != kind) {
        *rc = hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_REQUEST, "%s",
                              request == MPI_REQUEST_NULL ? "the request is MPI_REQUEST_NULL"
                              : !req ? "the handle is not a live request"
                              : want_send ? "the request is not a partitioned send (MPI_Psend_init)"
                              : "the request is not a partitioned receive (MPI_Precv_init)");
        return NULL;
    }
    *rc = MPI_SUCCESS;
    return req->extra;
}

/* Checks one partition of an active send request; MPI_SUCCESS or raised. */
static int ready_check(const char *func, struct part_state *st, int partition)
{
    MPI_Comm comm = p2p_comm_handle(st->req->comm);
    if (!st->req->active)
        return hashi_err_comm(func, comm, MPI_ERR_REQUEST,
                              "the partitioned send is not active (MPI_Start it before marking partition %d ready)",
                              partition);
    if (partition < 0 || partition >= st->partitions)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "partition %d is out of range (the request has %d)",
                              partition, st->partitions);
    if (st->ready[partition])
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "partition %d was already marked ready in this epoch",
                              partition);
    return MPI_SUCCESS;
}

/* Mark one (checked) partition ready and send it. */
static int ready_one(const char *func, struct part_state *st, int p)
{
    st->ready[p] = 1;
    if (st->proc_null)
        return MPI_SUCCESS;
    size_t offset = (size_t)p * (size_t)st->part_bytes;
    if (st->stage && st->part_bytes > 0)
        hashi_type_pack(st->req->user_buf, st->req->count, st->req->type, offset, st->stage + offset,
                        (size_t)st->part_bytes);
    if (st->dev == DEV_OFFERED)
        return MPI_SUCCESS;   /* goes once the receiver's device answered (dev_answered) */
    if (st->dev == DEV_ON)
        return hashi_device->part.ready(st->dp, p);
    int rc = p2p_start_send(st->xfer[p]);   /* a failure completes it with the error */
    if (rc != MPI_SUCCESS)
        return hashi_err_comm(func, p2p_comm_handle(st->req->comm), rc,
                              "sending partition %d (%lld bytes) to rank %d failed", p,
                              (long long)st->part_bytes, st->req->peer);
    return MPI_SUCCESS;
}

int hashi_impl_Pready(int partition, MPI_Request request)
{
    HASHI_CHECK_INITIALIZED("MPI_Pready");
    int rc;
    struct part_state *st = part_arg("MPI_Pready", request, 1, &rc);
    if (!st)
        return rc;
    if ((rc = ready_check("MPI_Pready", st, partition)) != MPI_SUCCESS)
        return rc;
    return ready_one("MPI_Pready", st, partition);
}

int hashi_impl_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
    const char *func = "MPI_Pready_range";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct part_state *st = part_arg(func, request, 1, &rc);
    if (!st)
        return rc;
    if (partition_low > partition_high)
        return hashi_err_comm(func, p2p_comm_handle(st->req->comm), MPI_ERR_ARG,
                              "partition_low %d is above partition_high %d", partition_low, partition_high);
    /* All checked before any is sent: a failing call marks nothing. */
    for (int p = partition_low; p <= partition_high; p++)
        if ((rc = ready_check(func, st, p)) != MPI_SUCCESS)
            return rc;
    for (int p = partition_low; p <= partition_high; p++)
        if ((rc = ready_one(func, st, p)) != MPI_SUCCESS)
            return rc;
    return MPI_SUCCESS;
}

int hashi_impl_Pready_list(int length, const int array_of_partitions[], MPI_Request request)
{
    const char *func = "MPI_Pready_list";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct part_state *st = part_arg(func, request, 1, &rc);
    if (!st)
        return rc;
    MPI_Comm comm = p2p_comm_handle(st->req->comm);
    if (length < 0)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "length %d is negative", length);
    if (length > 0 && !array_of_partitions)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "array_of_partitions is NULL but length is %d", length);
    int i;
    for (i = 0; i < length; i++) {
        if ((rc = ready_check(func, st, array_of_partitions[i])) != MPI_SUCCESS)
            break;
        st->ready[array_of_partitions[i]] = 2;   /* claimed by this call: catches duplicates in the list */
    }
    for (int j = 0; j < i; j++)
        st->ready[array_of_partitions[j]] = 0;
    if (i < length)
        return rc;
    for (i = 0; i < length; i++)
        if ((rc = ready_one(func, st, array_of_partitions[i])) != MPI_SUCCESS)
            return rc;
    return MPI_SUCCESS;
}

/* ---- MPI_Parrived ---- */

/* Whether every sender partition overlapping receive partition q is in. */
static int arrived(const struct part_state *st, int q)
{
    if (!st->posted)
        return 0;
    if (st->dev == DEV_ON)
        return hashi_device->part.arrived(st->dp, q);
    if (st->nxfer == 0)
        return 1;   /* failed: completed with the error */
    int lo, hi;
    if (st->xfer_bytes == 0 || st->part_bytes == 0) {
        /* No bytes to locate by: map partitions proportionally. */
        lo = hi = (int)((int64_t)q * st->nxfer / st->partitions);
    } else {
        MPI_Count first = (MPI_Count)q * st->part_bytes, last = first + st->part_bytes - 1;
        lo = (int)(first / st->xfer_bytes);
        hi = (int)(last / st->xfer_bytes);
        if (hi >= st->nxfer)
            hi = st->nxfer - 1;
    }
    for (int i = lo; i <= hi; i++)
        if (!hashi_request_is_complete(st->xfer[i]))
            return 0;
    return 1;
}

int hashi_impl_Parrived(MPI_Request request, int partition, int *flag)
{
    const char *func = "MPI_Parrived";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct part_state *st = part_arg(func, request, 0, &rc);
    if (!st)
        return rc;
    MPI_Comm comm = p2p_comm_handle(st->req->comm);
    if (!flag)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "flag is NULL");
    if (partition < 0 || partition >= st->partitions)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "partition %d is out of range (the request has %d)",
                              partition, st->partitions);
    /* An inactive request has nothing pending: like MPI_Test, true. */
    if (!st->req->active || st->proc_null || hashi_request_is_complete(st->req)) {
        *flag = 1;
    } else {
        *flag = arrived(st, partition);
        if (!*flag) {
            hashi_progress_poll();
            *flag = arrived(st, partition);
        }
    }
    if (*flag && st->mismatch)
        return hashi_err_comm(func, comm, st->mismatch,
                              "the matching partitioned send has %llu bytes in %d partitions, this receive %lld bytes "
                              "in %d: nothing was received",
                              (unsigned long long)st->sender_total, st->sender_partitions, (long long)st->total,
                              st->partitions);
    return MPI_SUCCESS;
}
