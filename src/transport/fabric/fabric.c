/*
 * The fabric transport: transport.h's primitives over a libfabric RDM
 * endpoint, for any provider FI_PROVIDER selects that offers messages, RMA
 * and 8 bytes of remote CQ data (shm and tcp here). This file holds the
 * endpoint's life cycle, messages (blocks, notifications, wide tiny writes),
 * tiny writes in CQ data, the queue of refused operations and progress;
 * fabric_rma.c holds registration and PUSH / PULL.
 *
 * libfabric promises neither that an 8-byte remote write is atomic nor when
 * its bytes land (shm and tcp progress manually: data moves when the target
 * calls the provider). So a tiny write never writes the target's LLCM
 * directly: the store travels in the remote CQ data of a zero-length write,
 * and the target's progress performs it with one release store. Only this
 * rank's CPU ever writes its LLCM on behalf of a fabric peer.
 */
#include "transport/fabric/fabric.h"
#include "transport/fabric/fi_util.h"

#include "runtime/clock.h"
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/pvar.h"
#include "runtime/rt.h"
#include "runtime/wake.h"

#include <errno.h>
#include <inttypes.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sched.h>
#include <time.h>

#define FAB_ADDR_KEY "hashi.fabric.addr"
#define FAB_BLOB_MAGIC 0x46414231u /* "FAB1" */
#define FAB_SMALL_MSG 32           /* header + the largest fixed payload (a wide tiny write) */
#define CQ_BATCH 16

/* What each rank publishes in the modex. */
struct fab_blob {
    uint32_t magic;
    uint32_t addrlen;
    uint64_t llcm_size;
    uint64_t max_msg;
    uint64_t credits;           /* messages each sender may have unconsumed here */
    uint64_t bell_raddr, bell_key;
    unsigned char addr[256];
};

/* A block message buffer: the device writes the payload after the header.
 * A block sent in place (block_sendv) holds only the headers here, and done
 * runs once the provider is finished with the caller's payload. */
struct fab_slot {
    struct fab_op op;
    struct fab_slot *next_free;
    size_t wire_len;
    hashi_tl_done_fn done;
    void *arg;
    int status;
    _Alignas(8) unsigned char msg[];
};

struct fab_rbuf {
    struct fab_op op;
    unsigned char *buf;
    size_t len;
};

/* An arrival kept for the next progress: a copied message, or a CQ-data store. */
struct fab_parked {
    struct fab_parked *next;
    int is_store;
    uint64_t data;
    size_t len;
    _Alignas(8) unsigned char msg[];
};

struct fab_state fab;

/* Resources that only this file touches. */
static struct {
    unsigned char *slab;            /* tx slots */
    size_t slot_stride, nslots;
    struct fab_mem *slab_mem;
    struct fab_slot *free_slots;
    struct fab_rbuf *rbufs;
    size_t nrbufs;
    unsigned char *rbuf_mem;
    struct fab_mem *rbuf_reg;
    int multi_recv;
    int tagged;                     /* messages as tagged sends into tagged receives (tag 0) */
    struct fab_queue rx_pending;
    struct fab_parked *parked, *parked_tail;
    /* The entries of the last fi_cq_read, handled in order from next on. Kept
     * here, not on poll_cq's stack: a handler waiting for room polls again,
     * and that nested poll must see (credit returns) and park the rest of
     * the batch before it reads newer entries. */
    struct fi_cq_data_entry batch[CQ_BATCH];
    size_t batch_next, batch_len;
    /* The last CQ read found it empty: a sender out of credits right after
     * (dimmnet's queue flush follows the progress pass that read it) skips
     * its own read once and retries from the next pass. */
    int cq_seen_empty;
    struct fab_queue sent;          /* slots of blocks sent in place whose done is to run */
    size_t sendv_min;               /* HASHI_FABRIC_SENDV_MIN, SIZE_MAX: never */
    /* Coalescing (HASHI_FABRIC_COALESCE): blocks up to coalesce_max kicked
     * to a peer in the same pass as the one before (same pass: no progress
     * and no flush in between) join that peer's open batch. */
    size_t coalesce_max;            /* 0: off */
    size_t batch_cap;               /* bytes of a batch after its fab_hdr */
    int64_t burst_ns;               /* HASHI_FABRIC_BURST_US: at most this long after the block before */
    int64_t alloc_ns;               /* when the block being written was allocated (0: not read) */
    uint64_t pass;                  /* progress epoch: each fab_progress and flush moves it */
    int *batch_list;                /* peers with an open batch */
    size_t batch_count;
    int in_batch;                   /* delivering a batch's blocks: later arrivals wait (parked) */
    struct fab_rbuf *busy;          /* a handler is reading a message in this buffer */
    int busy_released;              /* ... which the provider handed back meanwhile */
    /* Single receive buffers (tagged on tcp): the last one a handler
     * finished with, reposted at the start of the next pass rather than
     * between a message's delivery and the reply it completes
     * (HASHI_FABRIC_DEFER_REPOST; one spare buffer covers it). */
    int defer_repost;
    struct fab_rbuf *deferred;
    struct fab_mem *bell_mem;
    _Alignas(64) unsigned char bell[64];    /* zero-length writes name it; nothing lands */
    unsigned char *scratch;                 /* realigns a message the provider placed off 8 */
} res;

static void warn(const char *what, ssize_t rc)
{
    hashi_log("fabric transport: %s failed: %s", what, fi_strerror((int)-rc));
}

static int fail(char *err, size_t errlen, const char *what, int rc)
{
    snprintf(err, errlen, "fabric transport: %s failed: %s", what, fi_strerror(-rc));
    return -1;
}

/* ------------------------------------------------------------ queues */

void fab_queue_push(struct fab_queue *q, struct fab_op *op)
{
    op->next = NULL;
    if (q->tail)
        q->tail->next = op;
    else
        q->head = op;
    q->tail = op;
}

static struct fab_op *queue_pop(struct fab_queue *q)
{
    struct fab_op *op = q->head;
    if (op) {
        q->head = op->next;
        if (!q->head)
            q->tail = NULL;
        op->next = NULL;
    }
    return op;
}

static void queue_push_front(struct fab_queue *q, struct fab_op *op)
{
    op->next = q->head;
    q->head = op;
    if (!q->tail)
        q->tail = op;
}

static struct fab_slot *slot_get(void)
{
    struct fab_slot *s = res.free_slots;
    if (s)
        res.free_slots = s->next_free;
    return s;
}

static void slot_put(struct fab_slot *s)
{
    s->done = NULL;
    s->next_free = res.free_slots;
    res.free_slots = s;
}

/* A slot's send completed: free it, or (sent in place) leave its done to
 * progress, which reports it outside the completion loop like an RMA's. */
static void send_complete(struct fab_slot *s, int status)
{
    if (!s->done) {
        slot_put(s);
        return;
    }
    s->status = status;
    fab_queue_push(&res.sent, &s->op);
}

/* ------------------------------------------------------------ arrivals */

/* Perform a tiny write in this rank's LLCM: one release store. */
static void llcm_store(uint64_t offset, unsigned size, uint64_t value, int src)
{
    if (!(size == 1 || size == 2 || size == 4 || size == 8) || offset % size ||
        offset + size > fab.cfg.llcm_size) {
        hashi_log("fabric transport: rank %d sent a tiny write of %u bytes at LLCM offset %llu, outside this "
                  "rank's %zu-byte LLCM: dropped", src, size, (unsigned long long)offset, fab.cfg.llcm_size);
        return;
    }
    unsigned char *p = (unsigned char *)fab.cfg.llcm + offset;
    switch (size) {
    case 1: __atomic_store_n((uint8_t *)p, (uint8_t)value, __ATOMIC_RELEASE); break;
    case 2: __atomic_store_n((uint16_t *)(void *)p, (uint16_t)value, __ATOMIC_RELEASE); break;
    case 4: __atomic_store_n((uint32_t *)(void *)p, (uint32_t)value, __ATOMIC_RELEASE); break;
    default: __atomic_store_n((uint64_t *)(void *)p, value, __ATOMIC_RELEASE); break;
    }
}

static uint64_t cq_offset(uint64_t data)
{
    return data >> FAB_CQ_VALUE_BITS & FAB_CQ_CREDIT_OFFSET;
}

static uint64_t cq_value(uint64_t data)
{
    return data & (((uint64_t)1 << FAB_CQ_VALUE_BITS) - 1);
}

static void cq_data_store(uint64_t data)
{
    llcm_store(cq_offset(data), 1u << (data >> 62), cq_value(data), -1);
}

/* ------------------------------------------------------------ credits */

/*
 * Flow control of messages. A message that finds no posted receive buffer
 * waits in the provider's unexpected queue, and tcp (ofi_rxm) then reports
 * later RMA completions, our CQ-data tiny writes, before it: the order
 * transport.h promises would break under a flood. So each sender may have at
 * most fab.credits messages unconsumed at a peer, and the peer's receive
 * buffers hold every sender's share: a message always lands in a posted
 * buffer. Consumed messages are credited back, half a share at a time, by a
 * zero-length write whose CQ data names FAB_CQ_CREDIT_OFFSET.
 */
static uint64_t credit_cqdata(int count)
{
    return FAB_CQ_CREDIT_OFFSET << FAB_CQ_VALUE_BITS | (uint64_t)hashi_job.rank << 16 | (uint64_t)count;
}

/*
 * Send the credits owed, as far as the provider takes them now (never
 * waits). A peer the provider refuses for now (its queue is full, or rxm is
 * still connecting to it, which needs that peer's progress) stays listed
 * and does not hold back the others' credits. A peer whose credits a
 * message has carried back meanwhile (fab_hdr_make) needs no write.
 */
static void flush_owed(void)
{
    size_t kept = 0;
    for (size_t i = 0; i < fab.owed_count; i++) {
        int src = fab.owed_list[i];
        struct fab_peer *p = &fab.peers[src];
        if (!p->owed) {
            p->owed_listed = 0;
            continue;
        }
        ssize_t rc = fi_inject_writedata(fab.ep, NULL, 0, credit_cqdata(p->owed), p->addr, p->bell_raddr,
                                         p->bell_key);
        if (rc == -FI_EAGAIN) {
            fab.owed_list[kept++] = src;
            continue;
        }
        if (rc) {
            warn("returning credits (fi_inject_writedata)", rc);
        } else {
            fab.credit_writes++;
            hashi_wake_peer(src);
        }
        p->n_cred_sent += (uint64_t)p->owed;
        p->owed = 0;
        p->owed_listed = 0;
    }
    fab.owed_count = kept;
}

/* A message from src was consumed (delivered, or copied out of the buffer). */
static void consumed(int src)
{
    if (src < 0 || src >= hashi_job.size || !fab.peers || !fab.peers[src].llcm_size)
        return;
    struct fab_peer *p = &fab.peers[src];
    p->n_consumed++;
    if (++p->owed >= fab.credit_batch && !p->owed_listed) {
        p->owed_listed = 1;
        fab.owed_list[fab.owed_count++] = src;
        flush_owed();
    }
}

/* Credits src gave back: in a credit write's CQ data or a message's header. */
static void credits_add(int src, unsigned count)
{
    if (src < 0 || src >= hashi_job.size || !fab.peers || !fab.peers[src].llcm_size) {
        hashi_log("fabric transport: credits from unknown rank %d: dropped", src);
        return;
    }
    fab.peers[src].credits += (int)count;
    fab.peers[src].n_cred_got += count;
}

static void credits_returned(uint64_t data)
{
    uint64_t v = cq_value(data);
    credits_add((int)(v >> 16), (unsigned)(v & 0xffff));
}

/*
 * The header of a message to peer, carrying back the credits owed to it
 * (at most FAB_CREDIT_MAX): a peer that sends to us as often as we send to
 * it (a ping-pong, an exchange) then never needs a credit write, which
 * costs a send(2) here and a CQ entry there (one per credit_batch messages).
 */
static struct fab_hdr fab_hdr_make(int peer, enum fab_kind kind, size_t len)
{
    struct fab_peer *p = &fab.peers[peer];
    unsigned back = p->owed < (int)FAB_CREDIT_MAX ? (unsigned)p->owed : FAB_CREDIT_MAX;
    p->owed -= (int)back;
    p->n_cred_sent += back;
    return (struct fab_hdr){ .src = (uint32_t)hashi_job.rank,
                             .word = (uint32_t)kind << FAB_KIND_SHIFT | back << FAB_CREDIT_SHIFT | (uint32_t)len };
}

static unsigned hdr_credits(const struct fab_hdr *h)
{
    return h->word >> FAB_CREDIT_SHIFT & FAB_CREDIT_MAX;
}

/* A message that never left: the credits its header carried are owed again. */
static void hdr_credits_lost(int peer, const void *msg)
{
    struct fab_hdr h;
    memcpy(&h, msg, sizeof h);
    fab.peers[peer].owed += (int)hdr_credits(&h);
    fab.peers[peer].n_cred_sent -= hdr_credits(&h);
}

/* A block handed to the device, realigned first if the provider placed it off. */
static void deliver_block(int src, const unsigned char *payload, size_t len)
{
    /* Providers pack multi-receive buffers as they like: realign if needed. */
    if ((uintptr_t)payload % HASHI_TL_BLOCK_ALIGN) {
        memcpy(res.scratch, payload, len);
        payload = res.scratch;
    }
    fab.cfg.on_block(fab.cfg.ctx, src, payload, len);
}

/*
 * A batch: its blocks in order. Arrivals a handler's nested progress reads
 * meanwhile are parked (completion), so none overtakes the batch's later
 * blocks.
 */
static void deliver_batch(int src, const unsigned char *p, size_t len)
{
    int outer = res.in_batch;
    res.in_batch = 1;
    while (len) {
        uint32_t blen = 0;
        if (len >= FAB_ENTRY_HDR)
            memcpy(&blen, p, sizeof blen);
        size_t step = FAB_ENTRY_HDR + (((size_t)blen + 7) & ~(size_t)7);
        if (len < step) {
            hashi_log("fabric transport: dropped the rest of a malformed batch from rank %d (%zu bytes)", src, len);
            break;
        }
        deliver_block(src, p + FAB_ENTRY_HDR, blen);
        p += step;
        len -= step;
    }
    res.in_batch = outer;
}

static void deliver(const unsigned char *buf, size_t len)
{
    struct fab_hdr h;
    if (len < sizeof h) {
        hashi_log("fabric transport: dropped a %zu-byte message (shorter than its header)", len);
        return;
    }
    memcpy(&h, buf, sizeof h);
    unsigned kind = h.word >> FAB_KIND_SHIFT;
    size_t plen = h.word & FAB_LEN_MASK;     /* its credits were taken at the CQ (completion) */
    int src = (int)h.src;
    if (plen > len - sizeof h || src < 0 || src >= hashi_job.size) {
        hashi_log("fabric transport: dropped a malformed message (%zu bytes, says %zu from rank %d)", len, plen, src);
        return;
    }
    const unsigned char *payload = buf + sizeof h;
    switch (kind) {
    case FAB_MSG_BLOCK:
        deliver_block(src, payload, plen);
        break;
    case FAB_MSG_NOTIFY: {
        uint64_t v;
        if (plen != sizeof v)
            goto bad;
        memcpy(&v, payload, sizeof v);
        fab.cfg.on_notify(fab.cfg.ctx, src, v);
        break;
    }
    case FAB_MSG_BATCH:
        deliver_batch(src, payload, plen);
        break;
    case FAB_MSG_TINY: {
        uint64_t w[2];
        if (plen != sizeof w)
            goto bad;
        memcpy(w, payload, sizeof w);
        llcm_store(w[0] >> 8, (unsigned)(w[0] & 0xff), w[1], src);
        break;
    }
    default:
        goto bad;
    }
    return;
bad:
    hashi_log("fabric transport: dropped a message of unknown kind %u (%zu bytes) from rank %d", kind, plen, src);
}

/*
 * Arrivals must reach the device in CQ order. While a sender waits for the
 * provider to take a message (back-pressure, below) it drains the CQ but
 * may run no handler: arrivals are copied into the parked list, and once
 * anything is parked every later arrival joins it, until progress has
 * handled them all.
 */
static struct fab_parked *park_new(int is_store, uint64_t data, const void *msg, size_t len)
{
    struct fab_parked *p = malloc(sizeof *p + len);
    if (!p) {
        hashi_log("fabric transport: out of memory keeping an arrival: lost");
        return NULL;
    }
    p->next = NULL;
    p->is_store = is_store;
    p->data = data;
    p->len = len;
    if (len)
        memcpy(p->msg, msg, len);
    return p;
}

static void park_append(struct fab_parked *p)
{
    if (!p)
        return;
    if (res.parked_tail)
        res.parked_tail->next = p;
    else
        res.parked = p;
    res.parked_tail = p;
}

static void park_arrival(int is_store, uint64_t data, const void *msg, size_t len)
{
    park_append(park_new(is_store, data, msg, len));
}

static int run_parked(void)
{
    int n = 0;
    struct fab_parked *p;
    if (res.in_batch)
        return 0;   /* a batch's later blocks come first */
    while ((p = res.parked)) {
        /* Unlinked first: a handler's send may park more behind it. */
        res.parked = p->next;
        if (!res.parked)
            res.parked_tail = NULL;
        if (p->is_store)
            cq_data_store(p->data);
        else
            deliver(p->msg, p->len);
        free(p);
        n++;
    }
    return n;
}

/* Every CQ read goes through here (counted: HASHI_VERBOSE=2 prints the totals at finalize). */
static inline ssize_t cq_read(void)
{
    ssize_t n = fi_cq_read(fab.cq, res.batch, CQ_BATCH);
    fab.cq_reads++;
    res.cq_seen_empty = n == -FI_EAGAIN;
    fab.cq_empty_reads += (uint64_t)res.cq_seen_empty;
    return n;
}

/* A receive buffer finished with by the device (or copied): post it again. */
static void rbuf_recycle(struct fab_op *op);
static void rbuf_defer(struct fab_rbuf *r);
static int retry(struct fab_queue *q);

/*
 * One completion. handle: run handlers now (progress), else park (a sender
 * waiting for room). Completions of our own sends and RMA never call out.
 */
static void completion(const struct fi_cq_data_entry *e, int handle)
{
    handle = handle && !res.parked && !res.in_batch;
    if (e->flags & FI_REMOTE_WRITE) {
        if (!(e->flags & FI_REMOTE_CQ_DATA))
            return;
        if (cq_offset(e->data) == FAB_CQ_CREDIT_OFFSET)
            credits_returned(e->data);     /* not ordered traffic: at once */
        else if (handle)
            cq_data_store(e->data);
        else
            park_arrival(1, e->data, NULL, 0);
        return;
    }
    struct fab_op *op = e->op_context;
    if (!op)
        return;
    switch (op->kind) {
    case FAB_OP_RECV: {
        struct fab_rbuf *r = (struct fab_rbuf *)op;
        if (e->flags & FI_RECV && e->len) {
            const unsigned char *msg = res.multi_recv ? e->buf : r->buf;
            struct fab_hdr h = { .src = UINT32_MAX };
            if (e->len >= sizeof h) {
                memcpy(&h, msg, sizeof h);
                /* Credits it carries back count at once, like a credit
                 * write's (parked or not: they are not ordered traffic). */
                if (hdr_credits(&h))
                    credits_add((int)h.src, hdr_credits(&h));
            }
            /* Credited before its handler runs: a handler may wait for
             * credits at the sender, whose handler may be waiting for ours
             * (with one credit nothing else would ever be returned). The
             * buffer it occupies meanwhile is the spare post_receives adds. */
            consumed((int)h.src);
            if (handle) {
                res.busy = r;
                deliver(msg, e->len);
                res.busy = NULL;
            } else {
                park_arrival(0, 0, msg, e->len);
            }
        }
        /* Multi-receive: the provider hands the buffer back once it is used up;
         * not while a handler (whose send is waiting for room) still reads it. */
        int released = !res.multi_recv || (e->flags & FI_MULTI_RECV);
        if (!handle && released && r == res.busy) {
            res.busy_released = 1;      /* recycled once its handler returns */
            break;
        }
        if (handle && res.busy_released) {
            res.busy_released = 0;
            released = 1;
        }
        if (released && handle && res.defer_repost)
            rbuf_defer(r);
        else if (released)
            rbuf_recycle(op);
        break;
    }
    case FAB_OP_SEND:
        send_complete((struct fab_slot *)op, 0);
        break;
    case FAB_OP_RMA:
        fab_rma_complete((struct fab_rma *)op, 0);
        break;
    }
}

static void error_completion(const struct fi_cq_err_entry *e)
{
    int err = e->err < 0 ? -e->err : e->err;   /* shm 1.17 negates it */
    struct fab_op *op = e->op_context;
    if (!op) {
        hashi_log("fabric transport: error completion without an operation: %s",
                  fi_cq_strerror(fab.cq, e->prov_errno, e->err_data, NULL, 0));
        return;
    }
    switch (op->kind) {
    case FAB_OP_RECV:
        if (err != FI_ECANCELED) {
            hashi_log("fabric transport: a receive failed: %s", fi_strerror(err));
            rbuf_recycle(op);
        }
        break;
    case FAB_OP_SEND:
        hashi_log("fabric transport: a block message to rank %d failed: %s", op->peer, fi_strerror(err));
        send_complete((struct fab_slot *)op, -EIO);
        break;
    case FAB_OP_RMA:
        hashi_log("fabric transport: %s with rank %d failed: %s",
                  ((struct fab_rma *)op)->is_put ? "a put" : "a get", op->peer, fi_strerror(err));
        fab_rma_complete((struct fab_rma *)op, -EIO);
        break;
    }
}

/*
 * Handle the completions of a CQ read that returned n (entries, or an error
 * other than -FI_EAGAIN; BATCH_LEFT: the rest of res.batch), then read a few
 * batches more at most, so one call cannot starve its caller. Entries are
 * taken from res.batch one at a time, so a handler that waits for room
 * (backoff) and polls again continues this very batch first: a credit return
 * already read from the CQ but still waiting behind the running handler
 * would otherwise never reach the waiting sender (the dimmnet flood hang on
 * tcp), and newer arrivals park behind the rest of the batch, in CQ order.
 * Out of line: an idle poll never gets here.
 */
#define BATCH_LEFT ((ssize_t)CQ_BATCH + 1)
static __attribute__((noinline)) int drain_cq(int handle, ssize_t n)
{
    int events = 0;
    for (int round = 0;;) {
        int fresh = n != BATCH_LEFT;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry e;
            memset(&e, 0, sizeof e);
            if (fi_cq_readerr(fab.cq, &e, 0) != 1)
                break;
            error_completion(&e);
            events++;
        } else if (n < 0) {
            if (n != -FI_EAGAIN)
                warn("fi_cq_read", n);
            break;
        } else {
            if (fresh) {
                res.batch_next = 0;
                res.batch_len = (size_t)n;
            }
            size_t got = res.batch_len - res.batch_next;
            while (res.batch_next < res.batch_len) {
                /* Copied and counted first: a handler may poll (and refill) the batch. */
                struct fi_cq_data_entry e = res.batch[res.batch_next++];
                completion(&e, handle);
            }
            events += (int)got;
            if (fresh && got < CQ_BATCH)
                break;      /* the CQ is drained */
        }
        if (++round == 4)
            break;
        n = res.batch_next < res.batch_len ? BATCH_LEFT : cq_read();
    }
    return events;
}

/* Read the CQ (or finish the batch a handler left) and handle what came. */
static int poll_cq(int handle)
{
    if (res.batch_next < res.batch_len)
        return drain_cq(handle, BATCH_LEFT);
    ssize_t n = cq_read();
    return n == -FI_EAGAIN ? 0 : drain_cq(handle, n);
}

/* ------------------------------------------------------------ posting */

/*
 * Back-pressure. Messages and tiny writes are in the provider's hands when
 * their call returns, like a store into the emulated NIC's ring: so a rank
 * that stops progressing afterwards (a fence, MPI_Finalize) strands nothing
 * in a queue of ours. When the provider refuses for now (the peer's queue
 * is full), wake the peer, drain our CQ without running handlers (the peer
 * may be waiting for room with us), and retry.
 */
static void backoff(int peer, unsigned *spins)
{
    fab.eagain++;
    hashi_wake_peer(peer);
    poll_cq(0);
    flush_owed();
    if (res.rx_pending.head)
        retry(&res.rx_pending);
    if (++*spins % 64 == 0)
        sched_yield();
}

static ssize_t rbuf_post(struct fab_rbuf *r)
{
    struct iovec iov = { .iov_base = r->buf, .iov_len = r->len };
    void *desc = res.rbuf_reg ? res.rbuf_reg->desc : NULL;
    if (res.tagged) {
        /* Tag 0, nothing ignored: every message of ours, in post order. */
        struct fi_msg_tagged msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
                                     .tag = 0, .ignore = 0, .context = &r->op.ctx };
        return fi_trecvmsg(fab.ep, &msg, 0);
    }
    struct fi_msg msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
                          .context = &r->op.ctx };
    return fi_recvmsg(fab.ep, &msg, res.multi_recv ? FI_MULTI_RECV : 0);
}

/* Hand a receive or RMA operation to the provider: 0, -FI_EAGAIN, or an error. */
static ssize_t op_post(struct fab_op *op)
{
    switch (op->kind) {
    case FAB_OP_RMA:  return fab_rma_post((struct fab_rma *)op);
    case FAB_OP_RECV: return rbuf_post((struct fab_rbuf *)op);
    case FAB_OP_SEND: break;    /* sent with back-pressure, never queued */
    }
    return -FI_EINVAL;
}

static void op_failed(struct fab_op *op, ssize_t rc)
{
    if (op->kind == FAB_OP_RMA) {
        hashi_log("fabric transport: a %s with rank %d failed: %s", ((struct fab_rma *)op)->is_put ? "put" : "get",
                  op->peer, fi_strerror((int)-rc));
        fab_rma_complete((struct fab_rma *)op, -EIO);
    } else {
        warn("posting a receive buffer", rc);
    }
}

int fab_submit(struct fab_op *op)
{
    int rx = op->kind == FAB_OP_RECV;
    struct fab_queue *q = rx ? &res.rx_pending : &fab.pending;
    if (q->head) {
        fab_queue_push(q, op);
        return 0;
    }
    ssize_t rc = op_post(op);
    if (rc == -FI_EAGAIN) {
        fab.eagain++;
        fab_queue_push(q, op);
        return 0;
    }
    if (rc)
        return (int)rc;
    if (!rx)
        hashi_wake_peer(op->peer);
    return 0;
}

static void rbuf_recycle(struct fab_op *op)
{
    int rc = fab_submit(op);
    if (rc)
        warn("posting a receive buffer", rc);
}

/* The deferred buffer back to the provider (the next pass, or a newer one deferred). */
static void repost_deferred(void)
{
    struct fab_rbuf *r = res.deferred;
    res.deferred = NULL;
    rbuf_recycle(&r->op);
}

/*
 * A handled message's buffer is reposted later: its handler may have
 * completed the receive a program waits for, whose reply (a ping-pong's
 * send) then leaves before the provider's receive posting (about 300
 * instructions of ofi_rxm on tcp). Only one waits at a time: a second
 * reposts the first, so a burst's buffers cycle as before.
 */
static void rbuf_defer(struct fab_rbuf *r)
{
    if (res.deferred)
        repost_deferred();
    res.deferred = r;
    fab.deferred_reposts++;
}

static int retry(struct fab_queue *q)
{
    int posted = 0;
    struct fab_op *op;
    while ((op = queue_pop(q))) {
        ssize_t rc = op_post(op);
        if (rc == -FI_EAGAIN) {
            queue_push_front(q, op);
            break;
        }
        posted++;
        if (rc)
            op_failed(op, rc);
        else if (op->kind != FAB_OP_RECV)
            hashi_wake_peer(op->peer);
    }
    return posted;
}

/* A message injected (no completion), tagged (tag 0) or not as the endpoint's receives are. */
static ssize_t inject_msg(const void *buf, size_t len, fi_addr_t to)
{
    return res.tagged ? fi_tinject(fab.ep, buf, len, to, 0) : fi_inject(fab.ep, buf, len, to);
}

/* A message of at most FAB_SMALL_MSG bytes, or a zero-length write carrying cqdata. */
static int send_small(int peer, int is_write, uint64_t cqdata, const void *bytes, size_t len)
{
    const struct fab_peer *p = &fab.peers[peer];
    unsigned spins = 0;
    ssize_t rc;
    fab_batch_before(peer);
    for (;;) {
        rc = is_write ? fi_inject_writedata(fab.ep, NULL, 0, cqdata, p->addr, p->bell_raddr, p->bell_key)
                      : inject_msg(bytes, len, p->addr);
        if (rc != -FI_EAGAIN)
            break;
        backoff(peer, &spins);
    }
    if (rc) {
        warn(is_write ? "fi_inject_writedata" : "fi_inject", rc);
        if (!is_write)
            hdr_credits_lost(peer, bytes);
        return -EIO;
    }
    hashi_wake_peer(peer);
    return 0;
}

/* A slot holding a header and len payload bytes goes out padded to 8 bytes:
 * the padding is zeroed, so no stale or uninitialised heap leaves the rank. */
static void slot_pad(struct fab_slot *s, size_t len)
{
    size_t padded = (len + 7) & ~(size_t)7;
    memset(s->msg + sizeof(struct fab_hdr) + len, 0, padded - len);
    s->wire_len = sizeof(struct fab_hdr) + padded;
}

/* A slot's message the provider refused: its credits back, the slot free. */
static int slot_lost(struct fab_slot *s, ssize_t rc)
{
    hashi_log("fabric transport: a message to rank %d was lost: %s", s->op.peer, fi_strerror((int)-rc));
    hdr_credits_lost(s->op.peer, s->msg);
    slot_put(s);
    return -EIO;
}

/* A slot's message: injected if it fits, else fi_send (the slot returns on completion). */
static int send_slot(struct fab_slot *s)
{
    int peer = s->op.peer;
    fi_addr_t to = fab.peers[peer].addr;
    int inject = s->wire_len <= fab.inject_size;
    unsigned spins = 0;
    ssize_t rc;
    for (;;) {
        void *desc = res.slab_mem ? res.slab_mem->desc : NULL;
        if (inject)
            rc = inject_msg(s->msg, s->wire_len, to);
        else
            rc = res.tagged ? fi_tsend(fab.ep, s->msg, s->wire_len, desc, to, 0, &s->op.ctx)
                            : fi_send(fab.ep, s->msg, s->wire_len, desc, to, &s->op.ctx);
        if (rc != -FI_EAGAIN)
            break;
        backoff(peer, &spins);
    }
    if (rc)
        return slot_lost(s, rc);
    if (inject)
        slot_put(s);
    hashi_wake_peer(peer);
    return 0;
}

/* Take a credit for a message to peer, waiting for one if wait is set. */
static int credit_take(int peer, int wait)
{
    struct fab_peer *p = &fab.peers[peer];
    unsigned spins = 0;
    while (p->credits <= 0) {
        if (!wait)
            return -EAGAIN;
        fab.credit_waits++;
        backoff(peer, &spins);
    }
    p->credits--;
    p->n_sent++;
    return 0;
}

/* A transport message (notification, wide tiny write) with its header. */
static int send_message(int peer, enum fab_kind kind, const void *payload, size_t len)
{
    credit_take(peer, 1);
    size_t wire = sizeof(struct fab_hdr) + ((len + 7) & ~(size_t)7);
    struct fab_hdr h = fab_hdr_make(peer, kind, len);
    if (wire <= fab.inject_size && wire <= FAB_SMALL_MSG) {
        _Alignas(8) unsigned char bytes[FAB_SMALL_MSG] = { 0 };
        memcpy(bytes, &h, sizeof h);
        memcpy(bytes + sizeof h, payload, len);
        return send_small(peer, 0, 0, bytes, wire);
    }
    /* A provider with a tiny inject limit: through a slot. */
    fab_batch_before(peer);
    struct fab_slot *s;
    unsigned spins = 0;
    while (!(s = slot_get()))
        backoff(peer, &spins);
    memcpy(s->msg, &h, sizeof h);
    memcpy(s->msg + sizeof h, payload, len);
    s->op.kind = FAB_OP_SEND;
    s->op.peer = peer;
    slot_pad(s, len);
    return send_slot(s);
}

/* ------------------------------------------------------------ primitives */

int fab_peer_ok(int peer)
{
    return fab.connected && peer >= 0 && peer < hashi_job.size && fab.peers[peer].llcm_size;
}

int fab_tiny_valid(int peer, uint64_t offset, unsigned size)
{
    return (size == 1 || size == 2 || size == 4 || size == 8) && offset % size == 0 &&
           offset + size <= fab.peers[peer].llcm_size;
}

int fab_tiny_write(int peer, uint64_t offset, uint64_t value, unsigned size)
{
    if (size != 8)
        value &= ((uint64_t)1 << (size * 8)) - 1;
    if (fab_cq_inline(value))
        return send_small(peer, 1, fab_cq_encode(offset, size, value), NULL, 0);
    uint64_t payload[2] = { offset << 8 | size, value };
    return send_message(peer, FAB_MSG_TINY, payload, sizeof payload);
}

static int fab_tiny(int peer, uint64_t offset, uint64_t value, unsigned size)
{
    if (!fab_peer_ok(peer) || !fab_tiny_valid(peer, offset, size))
        return -EINVAL;
    return fab_tiny_write(peer, offset, value, size);
}

/* A slot and a credit for a block to peer, or NULL (-EAGAIN: retry after progress). */
static struct fab_slot *block_slot(int peer)
{
    if (fab.peers[peer].credits <= 0) {
        /* The peer has not consumed our earlier messages yet: look for
         * credits once, unless the last read found the CQ empty (a
         * streaming sender's queue flush comes right after its progress
         * pass read it: a second poll(2) on tcp would find nothing). */
        if (res.cq_seen_empty) {
            res.cq_seen_empty = 0;
        } else {
            poll_cq(0);
            flush_owed();
        }
    }
    if (!res.free_slots || credit_take(peer, 0) != 0)
        return NULL;
    return slot_get();
}

/*
 * Coalescing. Over tcp every message costs a send(2) at the sender and a
 * CQ entry, a credit and a reposted receive at the target, whatever its
 * size. So a block of at most coalesce_max bytes kicked to a peer in the
 * same pass as the block before it (no progress and no flush in between)
 * and less than burst_ns after it (a burst: MPI_Isend in a loop) is
 * appended to that peer's open batch, a slot holding blocks back to back
 * (FAB_MSG_BATCH: each behind an 8-byte length, padded to 8); the target
 * hands them to on_block in order.
 * The first block of a burst leaves at once, so a ping-pong is unchanged.
 * A batch leaves when the next block does not fit, at the start and end of
 * every progress pass, on flush (the device's end of pass), and before any
 * other traffic to that peer (notification, tiny write, block in place,
 * put, get), so the order transport.h promises holds. It takes one credit
 * and one send slot, like a block.
 */
void fab_batch_send(int peer)
{
    struct fab_peer *p = &fab.peers[peer];
    struct fab_slot *s = p->batch;
    if (!s || p->batch_alloc)
        return;     /* the caller kicks its block first (transport.h) */
    p->batch = NULL;
    struct fab_hdr h = fab_hdr_make(peer, FAB_MSG_BATCH, p->batch_len);
    memcpy(s->msg, &h, sizeof h);
    s->op.kind = FAB_OP_SEND;
    s->op.peer = peer;
    s->wire_len = sizeof h + p->batch_len;
    fab.batches++;
    send_slot(s);
}

/* Every open batch to the network; a new pass begins (the next block goes at once). */
static __attribute__((noinline)) void batches_send(void)
{
    for (size_t i = 0; i < res.batch_count; i++)
        fab_batch_send(res.batch_list[i]);
    size_t kept = 0;
    for (size_t i = 0; i < res.batch_count; i++) {
        struct fab_peer *p = &fab.peers[res.batch_list[i]];
        if (p->batch)
            res.batch_list[kept++] = res.batch_list[i];     /* its block is still being written */
        else
            p->batch_listed = 0;
    }
    res.batch_count = kept;
}

static inline void pass_end(void)
{
    res.pass++;
    if (res.batch_count)
        batches_send();
}

static void fab_flush(void)
{
    pass_end();
}

/* Where block len of peer goes in its batch, opening one; NULL: no slot or credit now. */
static void *batch_alloc(int peer, size_t len)
{
    struct fab_peer *p = &fab.peers[peer];
    if (p->batch && p->batch_len + FAB_ENTRY_HDR + ((len + 7) & ~(size_t)7) > res.batch_cap)
        fab_batch_send(peer);
    if (!p->batch) {
        if (!(p->batch = block_slot(peer)))
            return NULL;
        p->batch_len = 0;
        if (!p->batch_listed) {
            p->batch_listed = 1;
            res.batch_list[res.batch_count++] = peer;
        }
    }
    p->batch_alloc = 1;
    return p->batch->msg + sizeof(struct fab_hdr) + p->batch_len + FAB_ENTRY_HDR;
}

static void *fab_block_alloc(int peer, size_t len, int *rc)
{
    if (!fab_peer_ok(peer) || len > fab.block_max) {
        *rc = fab_peer_ok(peer) ? -EMSGSIZE : -EINVAL;
        return NULL;
    }
    struct fab_peer *p = &fab.peers[peer];
    *rc = 0;
    if (p->batch_alloc)
        return p->batch->msg + sizeof(struct fab_hdr) + p->batch_len + FAB_ENTRY_HDR;
    if (!p->open) {
        /* A block in the same pass as the one before it reads the clock: a
         * send that follows an old one (sent in MPI_Init, or before a
         * computation) is no burst, and leaves now. Any other block (a
         * ping-pong's every one) is no burst anyway: its kick reads the
         * clock after the send, off the message's way. */
        res.alloc_ns = 0;
        if (len <= res.coalesce_max && p->last_pass == res.pass) {
            res.alloc_ns = hashi_now_ns();
            if (res.alloc_ns - p->last_kick_ns < res.burst_ns) {
                void *at = batch_alloc(peer, len);
                if (!at)
                    *rc = -EAGAIN;
                return at;
            }
        }
        fab_batch_before(peer);     /* a larger block: the batch goes first */
        if (!(p->open = block_slot(peer))) {
            *rc = -EAGAIN;
            return NULL;
        }
    }
    return p->open->msg + sizeof(struct fab_hdr);
}

static void fab_block_kick(int peer, size_t len)
{
    struct fab_peer *p = &fab.peers[peer];
    p->last_pass = res.pass;
    p->last_kick_ns = res.alloc_ns;
    if (p->batch_alloc) {
        /* Appended: its length in front, zero padding behind. */
        unsigned char *e = p->batch->msg + sizeof(struct fab_hdr) + p->batch_len;
        uint32_t entry[2] = { (uint32_t)len, 0 };
        size_t padded = (len + 7) & ~(size_t)7;
        memcpy(e, entry, sizeof entry);
        memset(e + FAB_ENTRY_HDR + len, 0, padded - len);
        p->batch_len += FAB_ENTRY_HDR + padded;
        p->batch_alloc = 0;
        fab.batched++;
        return;
    }
    struct fab_slot *s = p->open;
    if (!s)
        return;
    p->open = NULL;
    struct fab_hdr h = fab_hdr_make(peer, FAB_MSG_BLOCK, len);
    memcpy(s->msg, &h, sizeof h);
    s->op.kind = FAB_OP_SEND;
    s->op.peer = peer;
    slot_pad(s, len);
    send_slot(s);
    if (!res.alloc_ns && res.coalesce_max)
        p->last_kick_ns = hashi_now_ns();
}

/*
 * A block whose payload the provider reads in place: the headers (ours and
 * the caller's) in a slot, the payload from the caller's memory, one
 * fi_tsendv / fi_sendv; padded to 8 bytes like a slot's message. The slot
 * stays with the provider until the send completes (rxm over tcp may keep
 * both iovs queued while the socket is full), then progress runs done.
 */
static int fab_block_sendv(int peer, const void *hdr, size_t hdr_len, const void *payload, size_t len,
                           hashi_tl_done_fn done, void *arg)
{
    if (!fab_peer_ok(peer))
        return -EINVAL;
    if (hdr_len + len > fab.block_max)
        return -EMSGSIZE;
    if (len < res.sendv_min || fab.peers[peer].open || fab.peers[peer].batch_alloc)
        return -ENOTSUP;
    fab_batch_before(peer);
    struct fab_slot *s = block_slot(peer);
    if (!s)
        return -EAGAIN;
    struct fab_hdr h = fab_hdr_make(peer, FAB_MSG_BLOCK, hdr_len + len);
    memcpy(s->msg, &h, sizeof h);
    memcpy(s->msg + sizeof h, hdr, hdr_len);
    s->op.kind = FAB_OP_SEND;
    s->op.peer = peer;
    s->done = done;
    s->arg = arg;
    static const unsigned char zeros[8];
    struct iovec iov[3] = { { s->msg, sizeof h + hdr_len }, { (void *)payload, len },
                            { (void *)zeros, (8 - (hdr_len + len) % 8) % 8 } };
    size_t count = iov[2].iov_len ? 3 : 2;
    fi_addr_t to = fab.peers[peer].addr;
    unsigned spins = 0;
    ssize_t rc;
    for (;;) {
        rc = res.tagged ? fi_tsendv(fab.ep, iov, NULL, count, to, 0, &s->op.ctx)
                        : fi_sendv(fab.ep, iov, NULL, count, to, &s->op.ctx);
        if (rc != -FI_EAGAIN)
            break;
        backoff(peer, &spins);
    }
    if (rc)
        return slot_lost(s, rc);
    hashi_wake_peer(peer);
    return 0;
}

static size_t fab_block_sendv_min(int peer)
{
    (void)peer;
    return res.sendv_min;
}

static int fab_notify(int peer, uint64_t value)
{
    if (!fab_peer_ok(peer))
        return -EINVAL;
    return send_message(peer, FAB_MSG_NOTIFY, &value, sizeof value);
}

/* Everything progress does besides reading the CQ: arrivals parked while a
 * sender waited, credits owed, refused operations, finished puts and gets. */
static __attribute__((noinline)) int progress_queues(void)
{
    int events = run_parked();
    if (fab.owed_count)
        flush_owed();
    if (fab.pending.head)
        events += retry(&fab.pending);
    if (res.rx_pending.head)
        events += retry(&res.rx_pending);
    struct fab_op *op;
    while ((op = queue_pop(&fab.done))) {
        fab_rma_finish((struct fab_rma *)op);
        events++;
    }
    while ((op = queue_pop(&res.sent))) {
        struct fab_slot *s = (struct fab_slot *)op;
        hashi_tl_done_fn done = s->done;
        void *arg = s->arg;
        int status = s->status;
        slot_put(s);
        done(arg, status);
        events++;
    }
    return events;
}

static int fab_progress(void)
{
    if (!fab.ep)
        return 0;
    pass_end();     /* held blocks leave before we look for their answers */
    if (res.deferred)
        repost_deferred();
    /* The idle pass, the one a waiting rank repeats: one CQ read and no
     * other work when nothing of ours waits (the provider's progress inside
     * fi_cq_read, a poll(2) on tcp, is the cost that remains). */
    if (__builtin_expect(!res.parked && res.batch_next == res.batch_len && !fab.owed_count && !fab.pending.head &&
                         !res.rx_pending.head && !fab.done.head && !res.sent.head, 1)) {
        ssize_t n = cq_read();
        if (__builtin_expect(n == -FI_EAGAIN, 1))
            return 0;
        int events = drain_cq(1, n);
        events += progress_queues();
        pass_end();     /* what the handlers sent in a burst */
        return events;
    }
    /* Parked arrivals go first: they are older than anything in the CQ. */
    int events = run_parked();
    events += poll_cq(1);
    events += progress_queues();
    pass_end();
    return events;
}

/* ------------------------------------------------------------ registration */

int fab_mem_register(void *buf, size_t len, struct fab_mem **out)
{
    struct fab_mem *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    uint64_t key = fab.mr_prov_key ? 0 : fab.next_key++;
    int rc = fi_mr_reg(fab.domain, buf, len, access, 0, key, 0, &m->mr, NULL);
    if (rc == 0 && fab.mr_endpoint) {
        rc = fi_mr_bind(m->mr, &fab.ep->fid, 0);
        if (rc == 0)
            rc = fi_mr_enable(m->mr);
    }
    if (rc) {
        warn("fi_mr_reg", rc);
        if (m->mr)
            fi_close(&m->mr->fid);
        free(m);
        return -EIO;
    }
    m->desc = fi_mr_desc(m->mr);
    m->buf = buf;
    m->len = len;
    *out = m;
    return 0;
}

void fab_mem_release(struct fab_mem *m)
{
    if (!m)
        return;
    if (m->mr)
        fi_close(&m->mr->fid);
    free(m);
}

/* ------------------------------------------------------------ life cycle */

static struct fi_info *make_hints(int multi_recv, size_t inject, int tagged)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        return NULL;
    hints->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    if (multi_recv)
        hints->caps |= FI_MULTI_RECV;
    if (tagged)
        hints->caps |= FI_TAGGED;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->av_type = FI_AV_TABLE;
    /* Every registration mode the transport can honour (not FI_MR_RAW:
     * keys must fit 8 bytes of a remote key). */
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_ENDPOINT;
    /* Blocks, notifications and tiny writes (sends and writes) placed in issue order. */
    uint64_t order = FI_ORDER_SAS | FI_ORDER_SAW | FI_ORDER_WAS | FI_ORDER_WAW;
    hints->tx_attr->msg_order = order;
    hints->rx_attr->msg_order = order;
    hints->tx_attr->inject_size = inject;
    return hints;
}

/* The provider, fabric and domain chosen, asked again with other hints:
 * 1 if it agreed (fab.info replaced), else 0 (fab.info kept). */
static int requery(int multi_recv, size_t inject, int tagged)
{
    const struct fi_info *chosen = fab.info;
    if (!chosen->fabric_attr->prov_name || !chosen->fabric_attr->name || !chosen->domain_attr->name)
        return 0;
    struct fi_info *hints = make_hints(multi_recv, inject, tagged), *list = NULL;
    if (!hints)
        return 0;
    hints->fabric_attr->prov_name = strdup(chosen->fabric_attr->prov_name);
    hints->fabric_attr->name = strdup(chosen->fabric_attr->name);
    hints->domain_attr->name = strdup(chosen->domain_attr->name);
    int rc = -FI_ENOMEM;
    if (hints->fabric_attr->prov_name && hints->fabric_attr->name && hints->domain_attr->name)
        rc = fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    if (rc != 0 || !list)
        return 0;
    fi_freeinfo(fab.info_list);
    fab.info_list = fab.info = list;
    return 1;
}

/*
 * Refine the provider's attributes once it is chosen (one more fi_getinfo,
 * only when something is to be asked):
 *
 * Tagged messages (HASHI_FABRIC_TAGGED; auto: on ofi_rxm). ofi_rxm frames
 * an untagged message with its own 64-byte header, receives it into its
 * bounce buffer and copies it into our multi-receive buffer; a tagged one it
 * hands to the core provider (tcp), whose tag matching reads it straight
 * into a posted buffer: 72 bytes on the wire for an 8-byte MPI message
 * instead of 128, one copy fewer on arrival. The price is one posted buffer
 * per message (reposted after its handler) instead of multi-receive ones.
 *
 * The inject size (HASHI_FABRIC_INJECT, at most a whole message). ofi_rxm
 * reports 64 bytes but injects anything up to its buffer size when asked.
 * An injected block leaves no send completion to read and hands its slot
 * back at once: per 64-byte MPI message 4180 instructions against 5542 by
 * fi_send (callgrind, docs/transport.md "Inject size"). But rxm copies an
 * injected message twice where fi_send copies it once, so from a few KiB
 * fi_send is cheaper: hence 4k by default. A provider that cannot inject
 * that much refuses the hint and keeps its own size.
 */
static void refine_info(void)
{
    size_t want = (size_t)hashi_param_int(HASHI_P_FABRIC_INJECT);
    if (want > fab.max_msg)
        want = fab.max_msg;
    size_t inject = want > fab.info->tx_attr->inject_size ? want : 0;
    const char *tagged = hashi_param_str(HASHI_P_FABRIC_TAGGED);
    const char *prov = fab.info->fabric_attr->prov_name;
    if (strcmp(tagged, "yes") == 0 || (strcmp(tagged, "auto") == 0 && prov && strstr(prov, "ofi_rxm"))) {
        if (requery(0, inject, 1) || (inject && requery(0, 0, 1))) {
            res.tagged = 1;
            res.multi_recv = 0;
            return;
        }
    }
    if (inject)
        requery(res.multi_recv, inject, 0);
}

static int get_info(char *err, size_t errlen)
{
    int rc = -FI_ENODATA;
    for (int multi = hashi_param_int(HASHI_P_FABRIC_MULTI_RECV) != 0; multi >= 0; multi--) {
        struct fi_info *hints = make_hints(multi, 0, 0);
        if (!hints) {
            snprintf(err, errlen, "fabric transport: out of memory");
            return -1;
        }
        rc = fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, hints, &fab.info_list);
        fi_freeinfo(hints);
        if (rc == 0 && fab.info_list) {
            res.multi_recv = multi;
            fab.info = hashi_fi_choose(fab.info_list, hashi_job.num_nodes <= 1, 0);
            refine_info();
            return 0;
        }
        fab.info_list = NULL;
    }
    hashi_fi_unusable(err, errlen, "fabric transport",
                      "RDM endpoints with messages and RMA reads and writes placed in order (FI_ORDER_SAS, SAW, WAS, "
                      "WAW)", rc);
    return -1;
}

/* What fi_getinfo cannot filter for: say which need the provider misses. */
static int check_provider(char *err, size_t errlen)
{
    const struct fi_info *i = fab.info;
    const char *prov = i->fabric_attr->prov_name;
    char why[160] = "";
    if (i->domain_attr->cq_data_size < 8)
        snprintf(why, sizeof why, "8 bytes of remote CQ data (it has %zu), which tiny writes travel in",
                 i->domain_attr->cq_data_size);
    else if (i->domain_attr->mr_key_size > 8)
        snprintf(why, sizeof why, "memory keys of at most 8 bytes (its are %zu)", i->domain_attr->mr_key_size);
    else if (i->ep_attr->max_msg_size && i->ep_attr->max_msg_size < fab.max_msg)
        snprintf(why, sizeof why, "messages of %zu bytes (its limit is %zu)", fab.max_msg, i->ep_attr->max_msg_size);
    if (!why[0])
        return 0;
    snprintf(err, errlen, "fabric transport: provider %s lacks %s; choose another with FI_PROVIDER (`fi_info -l`)",
             prov, why);
    return -1;
}

static int post_receives(char *err, size_t errlen)
{
    /* Room for every possible sender's share of messages at once. */
    size_t share = (size_t)hashi_job.size * (size_t)fab.credits;
    size_t size, count;
    if (res.multi_recv) {
        size = (size_t)hashi_param_int(HASHI_P_FABRIC_RECV_BUF_SIZE);
        if (size < 4 * fab.max_msg)
            size = 4 * fab.max_msg;
        /* A buffer is handed back with up to a message's worth unused, and
         * one may be on its way back to us: two to spare. */
        size_t per = size / fab.max_msg - 1;
        count = (share + per - 1) / per + 2;
    } else {
        /* One more than the credits: a message is credited back before its
         * handler returns, and its buffer is reposted only then; one more
         * for the buffer whose repost waits for the next pass. */
        size = fab.max_msg;
        count = share + 1 + (size_t)res.defer_repost;
    }
    res.nrbufs = count;
    res.rbufs = calloc(count, sizeof *res.rbufs);
    if (!res.rbufs || posix_memalign((void **)&res.rbuf_mem, 4096, size * count) != 0) {
        snprintf(err, errlen, "fabric transport: out of memory for %zu receive buffers of %zu bytes", count, size);
        return -1;
    }
    if (fab.mr_local && fab_mem_register(res.rbuf_mem, size * count, &res.rbuf_reg) != 0) {
        snprintf(err, errlen, "fabric transport: registering the receive buffers failed");
        return -1;
    }
    if (res.multi_recv) {
        size_t min = fab.max_msg;
        int rc = fi_setopt(&fab.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min);
        if (rc)
            return fail(err, errlen, "fi_setopt(FI_OPT_MIN_MULTI_RECV)", rc);
    }
    for (size_t k = 0; k < count; k++) {
        struct fab_rbuf *r = &res.rbufs[k];
        r->op.kind = FAB_OP_RECV;
        r->op.peer = -1;
        r->buf = res.rbuf_mem + k * size;
        r->len = size;
        int rc = fab_submit(&r->op);
        if (rc)
            return fail(err, errlen, "fi_recvmsg", rc);
    }
    return 0;
}

static int make_slots(char *err, size_t errlen)
{
    int64_t n = hashi_param_int(HASHI_P_FABRIC_TX_SLOTS);
    if (n < 4 || n > 65536) {
        snprintf(err, errlen, "fabric transport: HASHI_FABRIC_TX_SLOTS=%lld is out of range (4 .. 65536)", (long long)n);
        return -1;
    }
    res.nslots = (size_t)n;
    res.slot_stride = (sizeof(struct fab_slot) + fab.max_msg + 63) & ~(size_t)63;
    if (posix_memalign((void **)&res.slab, 4096, res.slot_stride * res.nslots) != 0) {
        snprintf(err, errlen, "fabric transport: out of memory for %zu send slots", res.nslots);
        return -1;
    }
    if (fab.mr_local && fab_mem_register(res.slab, res.slot_stride * res.nslots, &res.slab_mem) != 0) {
        snprintf(err, errlen, "fabric transport: registering the send slots failed");
        return -1;
    }
    for (size_t k = res.nslots; k-- > 0;)
        slot_put((struct fab_slot *)(void *)(res.slab + k * res.slot_stride));
    return 0;
}

/* A boolean libfabric setting turned off in the environment. */
static int fi_env_off(const char *name)
{
    const char *v = getenv(name);
    return v && (strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0 ||
                 strcasecmp(v, "off") == 0);
}

/*
 * ofi_rxm carries a message eagerly only up to its eager limit; above it by
 * SAR or rendezvous, which a later write could overtake: every block must be
 * within it. The limit defaults to rxm's bounce-buffer size
 * (FI_OFI_RXM_BUFFER_SIZE, 16 KiB), and raising that costs dearly: rxm keeps
 * 4 pools of 1024 such buffers, resident from fi_endpoint on (66 KiB
 * buffers: a 4-rank hello held 280 MB per rank against 83). Over tcp rxm
 * sends an eager message straight from our slot (direct send) and tcp reads
 * it straight into our posted receive (dynamic receive buffers), so raising
 * FI_OFI_RXM_EAGER_LIMIT alone is enough: the bounce buffers stay 16 KiB.
 * Where the user turned either feature off, names a core provider other
 * than tcp (verbs needs the limit equal to the buffer size), or asks to
 * inject blocks above 16000 bytes (rxm injects through a bounce buffer), the
 * bounce buffers must hold a block: the buffer size is raised as before.
 * Read when libfabric initialises its providers; the user's settings win.
 * 1 when it raised the eager limit itself (rxm_check_eager_limit), else 0.
 */
static int rxm_keep_blocks_eager(void)
{
    if (fab.max_msg <= 16000)
        return 0;
    char v[32];
    snprintf(v, sizeof v, "%zu", fab.max_msg + 512);
    const char *prov = getenv("FI_PROVIDER");
    size_t inject = (size_t)hashi_param_int(HASHI_P_FABRIC_INJECT);
    int direct = !fi_env_off("FI_OFI_RXM_ENABLE_DIRECT_SEND") && !fi_env_off("FI_OFI_RXM_ENABLE_DYN_RBUF") &&
                 !getenv("FI_OFI_RXM_BUFFER_SIZE") && (!prov || strstr(prov, "tcp")) && inject <= 16000;
    const char *var = direct ? "FI_OFI_RXM_EAGER_LIMIT" : "FI_OFI_RXM_BUFFER_SIZE";
    int ours = !getenv(var);
    setenv(var, v, 0);
    return direct && ours;
}

/*
 * With FI_PROVIDER unset, the provider chosen may turn out to be ofi_rxm
 * over another core than tcp (verbs), whose eager messages go through
 * bounce buffers of the 16 KiB we left them: refuse, naming the fix, rather
 * than have rxm copy a block past one.
 */
static int rxm_check_eager_limit(int raised_limit, char *err, size_t errlen)
{
    const char *prov = fab.info->fabric_attr->prov_name;
    if (!raised_limit || !prov || !strstr(prov, "ofi_rxm") || strstr(prov, "tcp"))
        return 0;
    snprintf(err, errlen, "fabric transport: provider %s carries blocks of %zu bytes eagerly only with bounce "
             "buffers that big: set FI_OFI_RXM_BUFFER_SIZE=%zu, or HASHI_DIMMNET_FABRIC_EAGER=16k", prov,
             fab.max_msg, fab.max_msg + 512);
    return -1;
}

/* The transport's diagnostics as MPI_T performance variables (runtime/pvar.h). */
#define FAB_PVAR(field, what) { "fabric_" #field, "hashi_fabric", what, &fab.field }
static const struct hashi_pvar fab_pvars[] = {
    FAB_PVAR(eagain, "operations the provider refused for a while (queued, retried)"),
    FAB_PVAR(credit_waits, "sends that waited for a peer to credit messages back"),
    FAB_PVAR(credit_writes, "credits returned by a write of their own (not carried by a message)"),
    FAB_PVAR(cq_reads, "completion-queue reads"),
    FAB_PVAR(cq_empty_reads, "completion-queue reads that found nothing"),
    FAB_PVAR(batches, "messages that carried the blocks of a burst after its first (HASHI_FABRIC_COALESCE)"),
    FAB_PVAR(batched, "blocks sent in those messages"),
    FAB_PVAR(deferred_reposts, "receive buffers reposted at the next progress pass, after the reply to their message (HASHI_FABRIC_DEFER_REPOST)"),
};
#undef FAB_PVAR

static int fab_init(struct hashi_tl_config *cfg, char *err, size_t errlen)
{
    memset(&fab, 0, sizeof fab);
    memset(&res, 0, sizeof res);
    if (hashi_pvar_register(fab_pvars, (int)(sizeof fab_pvars / sizeof fab_pvars[0])) != 0)
        return fail(err, errlen, "registering performance variables", -FI_ENOMEM);
    fab.cfg = *cfg;
    fab.block_max = cfg->net_block_max > cfg->block_max ? cfg->net_block_max : cfg->block_max;
    fab.max_msg = sizeof(struct fab_hdr) + ((fab.block_max + 7) & ~(size_t)7);
    if (cfg->llcm_size > FAB_LLCM_MAX) {
        snprintf(err, errlen, "fabric transport: an LLCM of %zu bytes is too big (at most %zu: tiny writes name the "
                 "offset in 22 bits of CQ data)", cfg->llcm_size, FAB_LLCM_MAX);
        return -1;
    }
    if (fab.block_max > FAB_LEN_MASK) {
        snprintf(err, errlen, "fabric transport: blocks of %zu bytes are too big (at most %u)", fab.block_max,
                 FAB_LEN_MASK);
        return -1;
    }
    int64_t credits = hashi_param_int(HASHI_P_FABRIC_CREDITS);
    if (credits < 1 || credits > 65535) {
        snprintf(err, errlen, "fabric transport: HASHI_FABRIC_CREDITS=%lld is out of range (1 .. 65535)",
                 (long long)credits);
        return -1;
    }
    fab.credits = (int)credits;
    fab.credit_batch = fab.credits / 2 > 1 ? fab.credits / 2 : 1;
    res.coalesce_max = (size_t)hashi_param_int(HASHI_P_FABRIC_COALESCE);
    int64_t burst_us = hashi_param_int(HASHI_P_FABRIC_BURST_US);
    if (burst_us < 1 || burst_us > 1000000) {
        snprintf(err, errlen, "fabric transport: HASHI_FABRIC_BURST_US=%lld is out of range (1 .. 1000000)",
                 (long long)burst_us);
        return -1;
    }
    res.burst_ns = burst_us * 1000;
    /* A batch fills a largest message; its length must fit the header's field. */
    res.batch_cap = fab.max_msg - sizeof(struct fab_hdr);
    if (res.batch_cap > (FAB_LEN_MASK & ~(size_t)7))
        res.batch_cap = FAB_LEN_MASK & ~(size_t)7;
    if (res.coalesce_max > res.batch_cap - FAB_ENTRY_HDR - 7)
        res.coalesce_max = res.batch_cap - FAB_ENTRY_HDR - 7;   /* every coalesced block fits an empty batch */
    int64_t max_rma = hashi_param_int(HASHI_P_FABRIC_MAX_RMA);
    if (max_rma < 4096) {
        snprintf(err, errlen, "fabric transport: HASHI_FABRIC_MAX_RMA=%lld is too small (at least 4k)", (long long)max_rma);
        return -1;
    }
    int raised_limit = rxm_keep_blocks_eager();
    if (get_info(err, errlen) != 0 || check_provider(err, errlen) != 0 ||
        rxm_check_eager_limit(raised_limit, err, errlen) != 0)
        return -1;
    struct fi_info *info = fab.info;
    fab.inject_size = info->tx_attr->inject_size;
    res.defer_repost = !res.multi_recv && hashi_param_int(HASHI_P_FABRIC_DEFER_REPOST);
    int mode = info->domain_attr->mr_mode;
    fab.mr_local = (mode & FI_MR_LOCAL) || hashi_param_int(HASHI_P_FABRIC_MR_LOCAL);
    fab.mr_virt_addr = (mode & FI_MR_VIRT_ADDR) != 0;
    fab.mr_prov_key = (mode & FI_MR_PROV_KEY) != 0;
    fab.mr_endpoint = (mode & FI_MR_ENDPOINT) != 0;
    fab.next_key = 1;
    size_t rma_cap = info->ep_attr->max_msg_size ? info->ep_attr->max_msg_size : (size_t)max_rma;
    fab.max_rma = (size_t)max_rma < rma_cap ? (size_t)max_rma : rma_cap;
    /* In place: header, payload and padding as three iovs; rxm passes them
     * on with its own header in front, and copies into its bounce buffer
     * (too small for a big block) unless the core takes them all. */
    size_t sendv_min = (size_t)hashi_param_int(HASHI_P_FABRIC_SENDV_MIN);
    res.sendv_min = sendv_min && !fab.mr_local && info->tx_attr->iov_limit >= 4 ? sendv_min : SIZE_MAX;

    if (hashi_fi_is_shm(info) && info->addr_format == FI_ADDR_STR &&
        hashi_fi_name_shm_endpoint(info, "fab", err, errlen) != 0)
        return -1;
    int rc;
    if ((rc = fi_fabric(info->fabric_attr, &fab.fabric, NULL)))
        return fail(err, errlen, "fi_fabric", rc);
    if ((rc = fi_domain(fab.fabric, info, &fab.domain, NULL)))
        return fail(err, errlen, "fi_domain", rc);
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
    if ((rc = hashi_fi_cq_open(fab.fabric, fab.domain, info, &cq_attr, &fab.cq, &fab.wait, "fabric transport")))
        return fail(err, errlen, "fi_cq_open", rc);
    struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = (size_t)hashi_job.size };
    if ((rc = fi_av_open(fab.domain, &av_attr, &fab.av, NULL)))
        return fail(err, errlen, "fi_av_open", rc);
    if ((rc = fi_endpoint(fab.domain, info, &fab.ep, NULL)))
        return fail(err, errlen, "fi_endpoint", rc);
    if ((rc = fi_ep_bind(fab.ep, &fab.cq->fid, FI_TRANSMIT | FI_RECV)))
        return fail(err, errlen, "fi_ep_bind(cq)", rc);
    if ((rc = fi_ep_bind(fab.ep, &fab.av->fid, 0)))
        return fail(err, errlen, "fi_ep_bind(av)", rc);
    if ((rc = fi_enable(fab.ep)))
        return fail(err, errlen, "fi_enable", rc);

    if (posix_memalign((void **)&res.scratch, 64, fab.max_msg) != 0) {
        snprintf(err, errlen, "fabric transport: out of memory");
        return -1;
    }
    if (make_slots(err, errlen) != 0 || post_receives(err, errlen) != 0)
        return -1;
    if (fab_mem_register(res.bell, sizeof res.bell, &res.bell_mem) != 0) {
        snprintf(err, errlen, "fabric transport: registering the tiny-write target failed");
        return -1;
    }

    struct fab_blob blob = { .magic = FAB_BLOB_MAGIC, .llcm_size = cfg->llcm_size, .max_msg = fab.max_msg,
                             .credits = (uint64_t)fab.credits,
                             .bell_raddr = fab.mr_virt_addr ? (uint64_t)(uintptr_t)res.bell : 0,
                             .bell_key = fi_mr_key(res.bell_mem->mr) };
    size_t addrlen = sizeof blob.addr;
    if ((rc = fi_getname(&fab.ep->fid, blob.addr, &addrlen)))
        return fail(err, errlen, "fi_getname", rc);
    blob.addrlen = (uint32_t)addrlen;
    if (hashi_rt_put(FAB_ADDR_KEY, &blob, offsetof(struct fab_blob, addr) + addrlen) != 0) {
        snprintf(err, errlen, "fabric transport: publishing the endpoint address through PMIx failed");
        return -1;
    }
    HASHI_DEBUG(1, "fabric transport: provider %s, fabric %s, inject %zu, mr_mode %#x, %s receives", info->fabric_attr->prov_name,
                info->fabric_attr->name, fab.inject_size, mode, res.multi_recv ? "multi" : res.tagged ? "tagged single" : "single");
    return 0;
}

static int fab_connect(const unsigned char *served, char *err, size_t errlen)
{
    fab.peers = calloc((size_t)hashi_job.size, sizeof *fab.peers);
    fab.owed_list = calloc((size_t)hashi_job.size, sizeof *fab.owed_list);
    res.batch_list = calloc((size_t)hashi_job.size, sizeof *res.batch_list);
    if (!fab.peers || !fab.owed_list || !res.batch_list) {
        snprintf(err, errlen, "fabric transport: out of memory");
        return -1;
    }
    for (int r = 0; r < hashi_job.size; r++) {
        if (!served[r])
            continue;
        struct fab_blob blob;
        size_t len = 0;
        if (hashi_rt_get_record(r, FAB_ADDR_KEY, &blob, sizeof blob, &len) != 0) {
            snprintf(err, errlen, "fabric transport: rank %d published no endpoint address", r);
            return -1;
        }
        if (len < offsetof(struct fab_blob, addr) || blob.magic != FAB_BLOB_MAGIC ||
            blob.addrlen > len - offsetof(struct fab_blob, addr)) {
            snprintf(err, errlen, "fabric transport: rank %d published a malformed endpoint address", r);
            return -1;
        }
        if (blob.max_msg != fab.max_msg) {
            snprintf(err, errlen, "fabric transport: rank %d sends blocks of up to %llu bytes but this rank "
                     "receives %zu: give every rank the same device settings", r,
                     (unsigned long long)blob.max_msg, fab.max_msg);
            return -1;
        }
        struct fab_peer *p = &fab.peers[r];
        if (fi_av_insert(fab.av, blob.addr, 1, &p->addr, 0, NULL) != 1) {
            snprintf(err, errlen, "fabric transport: fi_av_insert of rank %d's address failed", r);
            return -1;
        }
        p->credits = (int)blob.credits;
        p->bell_raddr = blob.bell_raddr;
        p->bell_key = blob.bell_key;
        p->llcm_size = (size_t)blob.llcm_size;
    }
    fab.connected = 1;
    /* Alone with no launcher to clean up after a crash: nobody else maps the
     * region, so its name can go now. */
    if (hashi_job.size == 1 && !hashi_job.job_dir[0] && hashi_fi_is_shm(fab.info))
        hashi_fi_unlink_shm_name(fab.ep, "fabric transport");
    return 0;
}


static void free_queue(struct fab_queue *q)
{
    struct fab_op *op;
    while ((op = queue_pop(q)))
        if (op->kind == FAB_OP_RMA)
            fab_rma_free((struct fab_rma *)op);
}

static void fab_finalize(void)
{
    /* Puts and gets the provider refused may still wait: peers may need them. */
    if (fab.ep) {
        pass_end();
        int64_t deadline = hashi_now_ns() + 1000000000;
        while (fab.pending.head && hashi_now_ns() < deadline)
            fab_progress();
    }
    for (struct fab_parked *p = res.parked, *next; p; p = next) {
        next = p->next;
        free(p);
    }
    /* The endpoint first: then no buffer is in the provider's hands. */
    if (fab.ep)
        hashi_fi_close(&fab.ep->fid);
    fab.ep = NULL;
    free_queue(&fab.pending);
    free_queue(&fab.done);
    res.rx_pending.head = res.rx_pending.tail = NULL;
    fab_mem_release(res.bell_mem);
    fab_mem_release(res.rbuf_reg);
    fab_mem_release(res.slab_mem);
    if (fab.av) hashi_fi_close(&fab.av->fid);
    if (fab.cq) hashi_fi_close(&fab.cq->fid);
    if (fab.domain) hashi_fi_close(&fab.domain->fid);
    if (fab.fabric) hashi_fi_close(&fab.fabric->fid);
    if (fab.info_list) fi_freeinfo(fab.info_list);
    if (fab.eagain)
        HASHI_DEBUG(1, "fabric transport: the provider refused %" PRIu64 " operations for a while (queued, retried)",
                    fab.eagain);
    free(res.rbufs);
    free(res.rbuf_mem);
    free(res.slab);
    free(res.scratch);
    if (fab.credit_waits)
        HASHI_DEBUG(1, "fabric transport: waited %" PRIu64 " times for a peer to credit messages back", fab.credit_waits);
    HASHI_DEBUG(2, "fabric transport: %" PRIu64 " CQ reads, %" PRIu64 " of them empty; %" PRIu64 " credit writes; %" PRIu64
                " batches carried %" PRIu64 " blocks", fab.cq_reads, fab.cq_empty_reads, fab.credit_writes, fab.batches,
                fab.batched);
    for (int r = 0; fab.peers && r < hashi_job.size; r++) {
        const struct fab_peer *p = &fab.peers[r];
        if (p->n_sent || p->n_consumed)
            HASHI_DEBUG(2, "fabric transport: rank %d: %llu messages sent, %llu credits back; %llu consumed, %llu "
                        "credited", r, (unsigned long long)p->n_sent, (unsigned long long)p->n_cred_got,
                        (unsigned long long)p->n_consumed, (unsigned long long)p->n_cred_sent);
    }
    free(fab.peers);
    free(fab.owed_list);
    free(res.batch_list);
    memset(&res, 0, sizeof res);
    memset(&fab, 0, sizeof fab);
}

static int fab_wait_fd(void)
{
    return fab.wait.fd;
}

static int fab_trywait(void)
{
    return hashi_fi_trywait(&fab.wait);
}

const struct hashi_tl_ops hashi_tl_fabric_ops = {
    .name = "fabric",
    .id = HASHI_TL_FABRIC,
    /* Puts and gets of any length: pieces of HASHI_FABRIC_MAX_RMA are cut here. */
    .max_rma = SIZE_MAX,
    .init = fab_init,
    .connect = fab_connect,
    .finalize = fab_finalize,
    .progress = fab_progress,
    .flush = fab_flush,
    .wait_fd = fab_wait_fd,
    .trywait = fab_trywait,
    .tiny_write = fab_tiny,
    .block_alloc = fab_block_alloc,
    .block_kick = fab_block_kick,
    .block_sendv = fab_block_sendv,
    .block_sendv_min = fab_block_sendv_min,
    .notify = fab_notify,
    .put = fab_put,
    .get = fab_get,
    .mem_reg = fab_mem_reg,
    .mem_dereg = fab_mem_dereg,
    .rkey_pack = fab_rkey_pack,
};
