/*
 * The DIMMnet device (docs/dimmnet.md): an active-message device under the
 * shared matching core, built from the transport's primitives.
 *
 * Sending a core message (header + payload) to peer r:
 *   - fits one block and the payload is below HASHI_DIMMNET_PUSH_MIN:
 *     BOTF, written once into r's inbound slot and kicked; r's progress
 *     hands the slot itself to the core (OTF receive, no copy in between);
 *   - otherwise it takes a credit: one buffer of this rank's receive area at
 *     r (allocated on first use, DN_AREA_REQ / DN_AREA). Payloads of
 *     PUSH_MIN or more are staged and PUSHed there, the put's signal storing
 *     the buffer's status word in r's LLCM (the DIMMnet-2 completion word);
 *     smaller ones go as BOTF packets alternating windows 0 / 1, each copied
 *     by r to where its header says. r delivers its buffers in order, frees
 *     each at once (the core copies what it keeps) and stores its freed
 *     count into our LLCM by AOTF: the remaining-buffer count is the credit.
 * Control notices of the core (ACK, FIN, PUT_DONE) are AOTF stores into a
 * per-peer ring in the peer's flag area, credited the same way. Rendezvous
 * data moves by PULL (send-first) or PUSH (receive-first) on the user's
 * buffers (the core decides, HASHI_DIMMNET_RNDV).
 *
 * Nothing is lost: what cannot go now (no credit, ring full, transport
 * -EAGAIN) waits in a per-peer queue that progress drains in order.
 */
#include "device/dimmnet/dimmnet.h"
#include "device/device.h"
#include "mpi/p2p.h"
#include "runtime/bufcache.h"
#include "runtime/copy.h"
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/pvar.h"
#include "runtime/rt.h"
#include "transport/fabric/fi_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

extern struct hashi_device_ops hashi_device_dimmnet;

struct dn_stats hashi_dn_stats;

/* Staging buffers for PUSH sends (registered once). */
#define DN_STAGE_SLOTS 16

enum dn_op_kind { OP_SEND, OP_NOTICE, OP_GET, OP_PUT };

/* How far a message got that ran out of ring room part-way through its
 * packets (it keeps its buffer). */
struct dn_send_progress {
    int started;
    uint32_t buf;
    size_t sent;
};

/* An operation waiting for credit, ring room or the transport. */
struct dn_op {
    struct dn_op *next;
    enum dn_op_kind kind;
    struct dn_send_progress sp;
    hashi_am_done_fn done;
    void *arg;
    /* OP_SEND: the core message, as header + data (data may be our copy) */
    size_t hdr_len, len;
    const void *data;
    unsigned char *copy;        /* owned copy of data (buffered sends), or NULL */
    unsigned char hdr[HASHI_AM_HDR_MAX];
    /* OP_NOTICE / OP_PUT: the notice value; OP_GET / OP_PUT: the transfer */
    uint64_t value;
    void *local;
    size_t rma_len;
    struct hashi_tl_rkey rkey;
    uint64_t offset;
};

enum { AREA_NONE, AREA_REQUESTED, AREA_READY };

/* The receive area this rank keeps for one sender (in its own memory). */
struct dn_rarea {
    unsigned char *base;
    struct hashi_tl_mem mem;
    uint64_t next;              /* next buffer to deliver (cumulative count) */
};

struct dn_peer {
    /* as a sender towards this peer */
    int hello_sent;
    int area;                   /* AREA_* */
    struct hashi_tl_rkey area_rkey;
    uint32_t area_nbufs, area_buf_size;
    uint64_t used;              /* buffers of our area there we filled */
    uint64_t notices_sent;
    uint8_t window;             /* next BOTF packet's window */
    struct dn_op *q_head, *q_tail;  /* sends, in order */
    struct dn_op *n_head, *n_tail;  /* notices, puts and gets */
    int queued;                 /* on the device's list of peers with waiting operations */
    /* as a receiver from this peer */
    int polled;                 /* on the poll list */
    int open;                   /* its flag area's hello was checked */
    struct dn_rarea *rarea;
    uint64_t notices_read;
    int credit_dirty;           /* our freed / notices_read counts still to be stored at the peer */
    uint64_t freed_told, read_told; /* the counts last stored there */
    int area_answer;            /* its area request still to be answered (ring was full) */
    /* by the peer's transport (dn_connect): peers on emu get the dn-wide values */
    size_t block_payload, block_data; /* core bytes / payload bytes one block to it carries */
    size_t push_min;            /* payloads from this size go by PUSH, not in one block */
    size_t in_place_min;        /* one-block payloads from this size go in place (block_sendv; SIZE_MAX: never) */
    uint64_t freed_batch, notices_batch; /* credit counts stored there once this many are due */
    /* as a receiver: the words a poll of its flag area reads next (peer_has_news) */
    const uint64_t *notice_next, *bufstat_next;
    /* receive-first announcements (emu: we swap its LLCM word remotely; fabric: its progress
     * applies our DN_LLCM / DN_REVOKE blocks and answers DN_REVOKED) */
    int ann_ok;
    uint32_t ann_gen;           /* our announcements to it so far */
    uint64_t ann_word;          /* the word of the last one (what revoke expects) */
    int ann_asked;              /* fabric: we asked it to revoke ann_word, no answer yet */
    uint64_t revoke_out;        /* fabric: a DN_REVOKE of this word still to send (0: none) */
    uint64_t revoked_out;       /* fabric: our DN_REVOKED answer still to send (0: none) */
};

struct dn_stage {
    unsigned char *base;
    struct hashi_tl_mem mem;
    int free_list[DN_STAGE_SLOTS];
    int nfree;
};

static struct {
    struct hashi_am_ops ops;
    struct dn_peer *peers;
    int npeers;
    int *poll;                  /* peers whose flag areas this rank polls */
    int npoll;
    int *waiting;               /* peers with queued operations */
    int nwaiting;
    unsigned char *llcm;
    size_t flag_stride;
    size_t block_max;           /* transport block, our header included */
    size_t botf_payload;        /* core bytes one BOTF block carries */
    size_t botf_data;           /* of which payload at most (HASHI_DIMMNET_BOTF_MAX) */
    size_t net_botf_data;       /* payload of one block to a peer on fabric */
    size_t net_push_min;        /* PUSH_MIN for peers on fabric (SIZE_MAX unless set) */
    size_t eager, net_eager;    /* eager limit to peers on emu / on fabric (dn_connect tells the core) */
    uint32_t nbufs;             /* receive buffers per sender */
    size_t buf_size;            /* bytes per buffer (core header + payload) */
    size_t push_min;
    uint32_t pgid;
    int print_stats;
    size_t ann_test_delay_us;   /* HASHI_DIMMNET_ANNOUNCE_TEST_DELAY */
    int part_mode;              /* HASHI_DIMMNET_PART: PART_OFF, PART_AUTO, PART_ON */
    size_t part_base;           /* LLCM offset of the partitioned requests' words */
    unsigned char part_used[DN_PART_WORDS];
    struct dn_stage stage;
    int up;
} dn;

/* ------------------------------------------------------------ helpers */

static struct dn_flag_area *flags_of(int peer)
{
    return (struct dn_flag_area *)(void *)(dn.llcm + DN_FLAGS_BASE + (size_t)peer * dn.flag_stride);
}

/* Offset of a word of *our* flag area in a peer's LLCM. */
static uint64_t remote_flag_offset(size_t field_offset)
{
    return DN_FLAGS_BASE + (uint64_t)hashi_job.rank * dn.flag_stride + field_offset;
}

static uint64_t load_word(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void clear_word(uint64_t *p)
{
    __atomic_store_n(p, 0, __ATOMIC_RELAXED);
}

__attribute__((noreturn)) static void reject(int peer, const char *what, uint32_t pgid)
{
    char msg[256];
    snprintf(msg, sizeof msg,
             "dimmnet: rank %d rejected %s from rank %d: process-group id %#" PRIx32
             " is not this job's (%#" PRIx32 "); a foreign process wrote into this rank's flag area",
             hashi_job.rank, what, peer, pgid, dn.pgid);
    hashi_rt_abort(MPI_ERR_OTHER, msg);
}

static void poll_add(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    if (!p->polled) {
        p->polled = 1;
        dn.poll[dn.npoll++] = peer;
    }
}

static void waiting_add(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    if (!p->queued) {
        p->queued = 1;
        dn.waiting[dn.nwaiting++] = peer;
    }
}

static void enqueue(struct dn_op **head, struct dn_op **tail, struct dn_op *op)
{
    op->next = NULL;
    if (*tail)
        (*tail)->next = op;
    else
        *head = op;
    *tail = op;
}

/* AOTF with retry bookkeeping left to the caller: 0 or -EAGAIN. */
static int aotf(int peer, uint64_t offset, uint64_t value)
{
    int rc = hashi_tl(peer)->tiny_write(peer, offset, value, 8);
    if (rc == 0)
        hashi_dn_stats.aotf++;
    else if (rc != -EAGAIN)
        hashi_log("dimmnet: a tiny write to rank %d failed (%d)", peer, rc);
    return rc;
}

/* Before anything else reaches a peer: our valid flag and process-group id
 * in our flag area there, and the peer on our poll list (answers come back
 * into our LLCM). */
__attribute__((noinline)) static int say_hello_first(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    if (aotf(peer, remote_flag_offset(offsetof(struct dn_flag_area, hello)), DN_VALID | dn.pgid) != 0)
        return -1;
    p->hello_sent = 1;
    poll_add(peer);
    return 0;
}

static inline int say_hello(int peer)
{
    return dn.peers[peer].hello_sent ? 0 : say_hello_first(peer);
}

/* Store our freed / notices_read counts at the peer when they moved
 * (cumulative: the last store wins, so a failed one is simply redone later). */
static void return_credit(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    p->credit_dirty = 1;
    if (say_hello(peer) != 0)
        return;
    if (p->rarea && p->rarea->next - p->freed_told >= p->freed_batch) {
        if (aotf(peer, remote_flag_offset(offsetof(struct dn_flag_area, freed)), p->rarea->next) != 0)
            return;
        p->freed_told = p->rarea->next;
    }
    if (p->notices_read - p->read_told >= p->notices_batch) {
        if (aotf(peer, remote_flag_offset(offsetof(struct dn_flag_area, notices_read)), p->notices_read) != 0)
            return;
        p->read_told = p->notices_read;
    }
    p->credit_dirty = 0;
}

/* ------------------------------------------------------------- sending */

/* Copy bytes [from, from + n) of the message hdr ++ data to dst. */
static void copy_message(unsigned char *dst, const struct dn_op *op, size_t from, size_t n)
{
    if (from < op->hdr_len) {
        size_t h = op->hdr_len - from < n ? op->hdr_len - from : n;
        memcpy(dst, op->hdr + from, h);
        dst += h;
        from += h;
        n -= h;
    }
    if (n)
        memcpy(dst, (const unsigned char *)op->data + (from - op->hdr_len), n);
}

/* Whether a core message to p goes as one BOTF block: up to the block's
 * payload (BOTF_MAX, or the peer's transport's own) behind any core header,
 * and below PUSH_MIN (larger payloads go by PUSH into a receive buffer). */
static inline int one_block(const struct dn_peer *p, size_t hdr_len, size_t len)
{
    return len <= p->block_data && hdr_len + len <= p->block_payload && (len == 0 || len < p->push_min);
}

/* BOTF: the core message (header, then payload) in one block, behind the
 * short block header (DN_MSG needs no packet fields). */
static inline __attribute__((always_inline)) int send_block_inline(int peer, const void *hdr, size_t hdr_len,
                                                                   const void *data, size_t len)
{
    const struct hashi_tl_ops *tl = hashi_tl(peer);
    size_t total = DN_MSG_HDR_SIZE + hdr_len + len;
    int rc;
    unsigned char *slot = tl->block_alloc(peer, total, &rc);
    if (!slot)
        return rc;
    struct dn_hdr h = { .type = DN_MSG, .pgid = dn.pgid };
    memcpy(slot, &h, DN_MSG_HDR_SIZE);
    /* The core's two header sizes as fixed-size copies (inlined). */
    if (hdr_len == HASHI_AM_EAGER_HDR)
        memcpy(slot + DN_MSG_HDR_SIZE, hdr, HASHI_AM_EAGER_HDR);
    else
        memcpy(slot + DN_MSG_HDR_SIZE, hdr, hdr_len);
    hashi_copy(slot + DN_MSG_HDR_SIZE + hdr_len, data, len);
    tl->block_kick(peer, total);
    hashi_dn_stats.botf++;
    return 0;
}

/* For the other senders (the fast path of dn_send inlines it). */
static int send_block(int peer, const void *hdr, size_t hdr_len, const void *data, size_t len)
{
    return send_block_inline(peer, hdr, hdr_len, data, len);
}

/*
 * A one-block message whose payload the transport sends from the caller's
 * memory (fabric: fi_sendv), saving send_block's copy; done(arg, status)
 * runs once the transport has read it. -ENOTSUP: send it by send_block.
 */
static int send_block_in_place(int peer, const void *hdr, size_t hdr_len, const void *data, size_t len,
                               hashi_am_done_fn done, void *arg)
{
    unsigned char wire[DN_MSG_HDR_SIZE + HASHI_AM_HDR_MAX];
    struct dn_hdr h = { .type = DN_MSG, .pgid = dn.pgid };
    memcpy(wire, &h, DN_MSG_HDR_SIZE);
    memcpy(wire + DN_MSG_HDR_SIZE, hdr, hdr_len);
    int rc = hashi_tl(peer)->block_sendv(peer, wire, DN_MSG_HDR_SIZE + hdr_len, data, len, done, arg);
    if (rc == 0) {
        hashi_dn_stats.botf++;
        hashi_dn_stats.in_place++;
    }
    return rc;
}

static inline int in_place(const struct dn_peer *p, size_t len, hashi_am_done_fn done)
{
    return done && len >= p->in_place_min;
}

static int request_area(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    if (p->area != AREA_NONE)
        return 0;
    int rc;
    const struct hashi_tl_ops *tl = hashi_tl(peer);
    unsigned char *slot = tl->block_alloc(peer, DN_HDR_SIZE, &rc);
    if (!slot)
        return rc;
    struct dn_hdr h = { .type = DN_AREA_REQ, .pgid = dn.pgid };
    memcpy(slot, &h, sizeof h);
    tl->block_kick(peer, DN_HDR_SIZE);
    p->area = AREA_REQUESTED;
    hashi_dn_stats.area_requests++;
    return 0;
}

/* Remaining receive buffers at the peer: the eager credit. */
static uint64_t credits(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    uint64_t freed = load_word(&flags_of(peer)->freed);
    return p->area_nbufs - (p->used - freed);
}

static void stage_done(void *arg, int status)
{
    int slot = (int)(intptr_t)arg;
    if (status != 0)
        hashi_log("dimmnet: a PUSH into a receive buffer failed (%d)", status);
    dn.stage.free_list[dn.stage.nfree++] = slot;
}

/* PUSH the whole message into buffer b of our area at peer; the signal
 * stores the buffer's status word there once the data is visible. */
static int send_push(int peer, const struct dn_op *op, uint32_t b)
{
    if (dn.stage.nfree == 0)
        return -EAGAIN;
    struct dn_peer *p = &dn.peers[peer];
    size_t total = op->hdr_len + op->len;
    int slot = dn.stage.free_list[dn.stage.nfree - 1];
    unsigned char *src = dn.stage.base + (size_t)slot * dn.buf_size;
    copy_message(src, op, 0, total);
    struct hashi_tl_signal sig = {
        .offset = remote_flag_offset(offsetof(struct dn_flag_area, bufstat) + 8u * b),
        .value = DN_VALID | total,
        .size = 8,
    };
    int rc = hashi_tl(peer)->put(peer, src, total, &dn.stage.mem, &p->area_rkey, (uint64_t)b * p->area_buf_size, &sig,
                                 stage_done, (void *)(intptr_t)slot);
    if (rc == 0) {
        dn.stage.nfree--;
        hashi_dn_stats.push++;
    }
    return rc;
}

/* BOTF packets into buffer b, alternating windows; *sent tracks how far a
 * message that ran out of ring room got. */
static int send_packets(int peer, const struct dn_op *op, uint32_t b, size_t *sent)
{
    struct dn_peer *p = &dn.peers[peer];
    const struct hashi_tl_ops *tl = hashi_tl(peer);
    size_t total = op->hdr_len + op->len;
    while (*sent < total) {
        size_t n = total - *sent < p->block_payload ? total - *sent : p->block_payload;
        int rc;
        unsigned char *slot = tl->block_alloc(peer, DN_HDR_SIZE + n, &rc);
        if (!slot)
            return rc;
        int last = *sent + n == total;
        struct dn_hdr h = {
            .type = DN_PKT, .flags = last ? DN_LAST : 0, .buf = (uint8_t)b, .window = p->window,
            .pgid = dn.pgid, .offset = (uint32_t)*sent, .total = (uint32_t)total,
        };
        memcpy(slot, &h, sizeof h);
        copy_message(slot + DN_HDR_SIZE, op, *sent, n);
        tl->block_kick(peer, DN_HDR_SIZE + n);
        hashi_dn_stats.botf_packets++;
        hashi_dn_stats.window[p->window]++;
        p->window ^= 1;
        *sent += n;
    }
    return 0;
}

/*
 * Try to hand one message to the transport. 0: gone; -EAGAIN: keep it
 * queued (no credit, no ring room, no area yet); other: failed.
 */
static int try_send(int peer, struct dn_op *op)
{
    struct dn_peer *p = &dn.peers[peer];
    struct dn_send_progress *sp = &op->sp;
    size_t total = op->hdr_len + op->len;
    int push = op->len > 0 && op->len >= dn.push_min;
    if (!sp->started && one_block(p, op->hdr_len, op->len)) {
        if (!op->copy && in_place(p, op->len, op->done)) {
            int rc = send_block_in_place(peer, op->hdr, op->hdr_len, op->data, op->len, op->done, op->arg);
            if (rc == 0)
                op->done = NULL;    /* the transport runs it */
            if (rc != -ENOTSUP) {
                if (rc == -EAGAIN)
                    hashi_dn_stats.ring_waits++;
                return rc;
            }
        }
        int rc = send_block(peer, op->hdr, op->hdr_len, op->data, op->len);
        if (rc == -EAGAIN)
            hashi_dn_stats.ring_waits++;
        return rc;
    }
    if (p->area != AREA_READY) {
        int rc = request_area(peer);
        return rc ? rc : -EAGAIN;
    }
    if (total > p->area_buf_size) {
        hashi_log("dimmnet: a %zu-byte message does not fit rank %d's %u-byte receive buffers "
                  "(HASHI_DIMMNET_RECV_BUF_SIZE must be the same on every rank)", total, peer, p->area_buf_size);
        return -EMSGSIZE;
    }
    if (!sp->started) {
        if (credits(peer) == 0) {
            hashi_dn_stats.credit_waits++;
            return -EAGAIN;
        }
        sp->buf = (uint32_t)(p->used % p->area_nbufs);
        if (push) {
            int rc = send_push(peer, op, sp->buf);
            if (rc == 0)
                p->used++;
            return rc;
        }
        sp->started = 1;
        sp->sent = 0;
        p->used++;
    }
    int rc = send_packets(peer, op, sp->buf, &sp->sent);
    if (rc == -EAGAIN)
        hashi_dn_stats.ring_waits++;
    return rc;
}

static void op_init_send(struct dn_op *op, const void *hdr, size_t hdr_len, const void *data, size_t len)
{
    op->kind = OP_SEND;
    op->sp = (struct dn_send_progress){ 0 };
    op->hdr_len = hdr_len;
    op->len = len;
    op->data = data;
    op->copy = NULL;
    memcpy(op->hdr, hdr, hdr_len);
}

static void op_free(struct dn_op *op)
{
    if (op->copy)
        hashi_buf_put(op->copy, op->len);
    free(op);
}

/* The peer's blocks wait in our inbound ring (on emu, the transport that can tell). */
static int dn_pending_from(int peer)
{
    const struct hashi_tl_ops *tl = hashi_tl(peer);
    return tl->pending_from && tl->pending_from(peer);
}

/* dn_send's every other case: in place, several blocks, queued behind
 * others or for the first hello, the ring full. */
__attribute__((noinline)) static int dn_send_other(int dest, const void *hdr, size_t hdr_len, const void *data,
                                                   size_t len, unsigned flags, hashi_am_done_fn done, void *arg)
{
    if (dest < 0 || dest >= dn.npeers || hdr_len > HASHI_AM_HDR_MAX || hdr_len + len > dn.buf_size)
        return -1;
    struct dn_peer *p = &dn.peers[dest];
    struct dn_op op;
    int have_op = 0;
    if (!p->q_head && say_hello(dest) == 0) {
        /* Nothing queued before it: send now. The common case, one BOTF
         * block, needs no op (try_send would do the same after building one). */
        int rc = -ENOTSUP;
        if (!(flags & HASHI_AM_SEND_BUFFERED) && in_place(p, len, done) && one_block(p, hdr_len, len)) {
            rc = send_block_in_place(dest, hdr, hdr_len, data, len, done, arg);
            if (rc == 0)
                return 0;   /* done runs from the transport's progress */
        }
        if (rc != -ENOTSUP) {
            hashi_dn_stats.ring_waits += rc == -EAGAIN;     /* kept below, sent by flush_queues */
        } else if (one_block(p, hdr_len, len)) {
            rc = send_block(dest, hdr, hdr_len, data, len);
            if (rc == -EAGAIN)
                hashi_dn_stats.ring_waits++;
        } else {
            op_init_send(&op, hdr, hdr_len, data, len);
            have_op = 1;
            rc = try_send(dest, &op);   /* may get part-way: op keeps how far */
        }
        if (rc == 0) {
            if (done)
                done(arg, 0);
            return 0;
        }
        if (rc != -EAGAIN)
            return -1;
    }
    /* Its ring full and its own messages waiting for us, the peer (on emu:
     * the transport that can tell) is as busy as we are (both ways at
     * once): it reads the message itself faster than we could copy it
     * aside and then into its ring. Sending only, we keep copying (the
     * receiver is the bottleneck). */
    if ((flags & HASHI_AM_SEND_NOWAIT) && !have_op && one_block(p, hdr_len, len) && dn_pending_from(dest))
        return -EAGAIN;
    if (!have_op)
        op_init_send(&op, hdr, hdr_len, data, len);
    struct dn_op *q = malloc(sizeof *q);
    if (!q) {
        hashi_log("dimmnet: out of memory queueing a message for rank %d", dest);
        return -1;
    }
    *q = op;
    if (flags & HASHI_AM_SEND_BUFFERED) {
        if (len) {
            q->copy = hashi_buf_get(len);
            if (!q->copy) {
                free(q);
                return -1;
            }
            memcpy(q->copy, data, len);
        }
        q->data = q->copy;
        q->done = NULL;
        /* Held back only by the peer (credit, ring room): it counts as
         * handed over (am.h), so eager sends complete locally. */
        if (done)
            done(arg, 0);
    } else {
        q->done = done;
        q->arg = arg;
    }
    enqueue(&p->q_head, &p->q_tail, q);
    waiting_add(dest);
    return 0;
}

/* The common case alone in a small frame (no op on the stack): a buffered
 * message in one block to a peer already greeted, nothing queued for it. */
static int dn_send(int dest, const void *hdr, size_t hdr_len, const void *data, size_t len, unsigned flags,
                   hashi_am_done_fn done, void *arg)
{
    if (__builtin_expect((unsigned)dest < (unsigned)dn.npeers && (flags & HASHI_AM_SEND_BUFFERED) &&
                         hdr_len <= HASHI_AM_HDR_MAX && hdr_len + len <= dn.buf_size, 1)) {
        const struct dn_peer *p = &dn.peers[dest];
        if (!p->q_head && p->hello_sent && one_block(p, hdr_len, len) &&
            send_block_inline(dest, hdr, hdr_len, data, len) == 0) {
            if (done)
                done(arg, 0);
            return 0;
        }
    }
    return dn_send_other(dest, hdr, hdr_len, data, len, flags, done, arg);
}

/* ------------------------------------------------- notices, PUSH, PULL */

static int notice_room(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    return p->notices_sent - load_word(&flags_of(peer)->notices_read) < DN_NOTICE_SLOTS;
}

static uint64_t notice_slot_offset(int peer)
{
    uint64_t slot = dn.peers[peer].notices_sent % DN_NOTICE_SLOTS;
    return remote_flag_offset(offsetof(struct dn_flag_area, notice) + 8 * slot);
}

static int try_notice(int peer, uint64_t value)
{
    if (say_hello(peer) != 0 || !notice_room(peer))
        return -EAGAIN;
    int rc = aotf(peer, notice_slot_offset(peer), DN_VALID | value);
    if (rc == 0)
        dn.peers[peer].notices_sent++;
    return rc;
}

/* A core put: the user's data into the peer's registered buffer; a notice
 * rides on the put as its signal (stored after the data), taking a slot of
 * the notice ring. */
static int try_put(int peer, struct dn_op *op)
{
    struct hashi_tl_signal sig, *sigp = NULL;
    if (op->value) {
        if (say_hello(peer) != 0 || !notice_room(peer))
            return -EAGAIN;
        sig = (struct hashi_tl_signal){ .offset = notice_slot_offset(peer), .value = DN_VALID | op->value, .size = 8 };
        sigp = &sig;
    }
    int rc = hashi_tl(peer)->put(peer, op->local, op->rma_len, NULL, &op->rkey, op->offset, sigp, op->done, op->arg);
    if (rc == 0) {
        hashi_dn_stats.put++;
        if (sigp)
            dn.peers[peer].notices_sent++;
    }
    return rc;
}

static int try_get(int peer, struct dn_op *op)
{
    int rc = hashi_tl(peer)->get(peer, op->local, op->rma_len, NULL, &op->rkey, op->offset, op->done, op->arg);
    if (rc == 0)
        hashi_dn_stats.pull++;
    return rc;
}

static int try_other(int peer, struct dn_op *op)
{
    switch (op->kind) {
    case OP_NOTICE:
        return try_notice(peer, op->value);
    case OP_PUT:
        return try_put(peer, op);
    case OP_GET:
        return try_get(peer, op);
    default:
        return -EINVAL;
    }
}

/* Start op now if nothing of its kind waits for the peer, else queue it. */
static int start_other(int peer, struct dn_op *op)
{
    struct dn_peer *p = &dn.peers[peer];
    if (!p->n_head) {
        int rc = try_other(peer, op);
        if (rc == 0)
            return 0;
        if (rc != -EAGAIN)
            return -1;
    }
    struct dn_op *q = malloc(sizeof *q);
    if (!q)
        return -1;
    *q = *op;
    q->copy = NULL;
    enqueue(&p->n_head, &p->n_tail, q);
    waiting_add(peer);
    return 0;
}

static int dn_notice(int dest, uint64_t value)
{
    if (dest < 0 || dest >= dn.npeers || value == 0 || value >= HASHI_AM_NOTICE_LIMIT)
        return -1;
    struct dn_op op = { .kind = OP_NOTICE, .value = value };
    return start_other(dest, &op);
}

static int dn_put(int peer, const void *local, size_t len, const void *rkey, uint64_t offset, uint64_t notice,
                  hashi_am_done_fn done, void *arg)
{
    if (peer < 0 || peer >= dn.npeers || notice >= HASHI_AM_NOTICE_LIMIT)
        return -1;
    struct dn_op op = {
        .kind = OP_PUT, .done = done, .arg = arg, .value = notice, .local = (void *)(uintptr_t)local,
        .rma_len = len, .offset = offset,
    };
    memcpy(&op.rkey, rkey, sizeof op.rkey);
    return start_other(peer, &op);
}

static int dn_get(int peer, void *local, size_t len, const void *rkey, uint64_t offset, hashi_am_done_fn done,
                  void *arg)
{
    if (peer < 0 || peer >= dn.npeers)
        return -1;
    struct dn_op op = {
        .kind = OP_GET, .done = done, .arg = arg, .local = local, .rma_len = len, .offset = offset,
    };
    memcpy(&op.rkey, rkey, sizeof op.rkey);
    return start_other(peer, &op);
}

static int dn_mem_reg(void *buf, size_t len, int peer, void **mem, void *rkey)
{
    struct hashi_tl_mem *m = malloc(sizeof *m);
    if (!m)
        return -1;
    if (hashi_transport_mem_reg(buf, len, m) != 0) {
        free(m);
        return -1;
    }
    struct hashi_tl_rkey k;
    hashi_transport_rkey(m, peer, &k);
    memcpy(rkey, &k, sizeof k);
    *mem = m;
    return 0;
}

static void dn_mem_dereg(void *mem)
{
    hashi_transport_mem_dereg(mem);
    free(mem);
}

/* ------------------------------------------ receive-first announcements */

/*
 * len bytes into our flag area at the peer (field: their offset in it),
 * then, unless word_field is DN_LLCM_NO_WORD, the word that publishes them.
 * emu stores them itself (llcm_write; the word's AOTF is a release store
 * landing after them); over fabric only the owner's progress writes its
 * LLCM, so one DN_LLCM block carries both and on_block applies them in the
 * same order. 0, -EAGAIN (no room now), or -1.
 */
static int flag_area_store(int peer, size_t field, const void *data, size_t len, size_t word_field, uint64_t word)
{
    const struct hashi_tl_ops *tl = hashi_tl(peer);
    if (tl->llcm_write) {
        if (tl->llcm_write(peer, remote_flag_offset(field), data, len) != 0)
            return -1;
        return word_field == DN_LLCM_NO_WORD ? 0 : aotf(peer, remote_flag_offset(word_field), word);
    }
    struct dn_hdr h = { .type = DN_LLCM, .pgid = dn.pgid };
    struct dn_llcm_msg m = { .field = (uint32_t)field, .len = (uint32_t)len, .word_field = (uint32_t)word_field,
                             .word = word };
    size_t total = DN_HDR_SIZE + sizeof m + len;
    int rc;
    unsigned char *slot = tl->block_alloc(peer, total, &rc);
    if (!slot)
        return rc;
    memcpy(slot, &h, DN_HDR_SIZE);
    memcpy(slot + DN_HDR_SIZE, &m, sizeof m);
    memcpy(slot + DN_HDR_SIZE + sizeof m, data, len);
    tl->block_kick(peer, total);
    hashi_dn_stats.botf++;
    return 0;
}

/* The sender's side of flag_area_store over fabric: a peer's DN_LLCM block
 * into its flag area here, limited to the announcement's words. */
static void llcm_block_arrived(int src, const unsigned char *body, size_t body_len)
{
    struct dn_llcm_msg m;
    const size_t lo = offsetof(struct dn_flag_area, ann), hi = offsetof(struct dn_flag_area, bufstat);
    if (body_len >= sizeof m)
        memcpy(&m, body, sizeof m);
    if (body_len < sizeof m || m.len != body_len - sizeof m || m.field < lo || m.field > hi || m.len > hi - m.field ||
        (m.word_field != DN_LLCM_NO_WORD && (m.word_field < lo || m.word_field > hi - 8 || m.word_field % 8))) {
        hashi_log("dimmnet: dropping an LLCM store from rank %d outside its announcement words", src);
        return;
    }
    unsigned char *f = (unsigned char *)flags_of(src);
    memcpy(f + m.field, body + sizeof m, m.len);
    if (m.word_field != DN_LLCM_NO_WORD)
        __atomic_store_n((uint64_t *)(void *)(f + m.word_field), m.word, __ATOMIC_RELEASE);
}

/* A DN_REVOKE or DN_REVOKED block naming an announcement word. */
static int send_ann_word(int peer, uint8_t type, uint64_t word)
{
    struct {
        struct dn_hdr h;
        uint64_t word;
    } msg = { .h = { .type = type, .pgid = dn.pgid }, .word = word };
    int rc = hashi_tl_block_send(peer, &msg, sizeof msg, NULL, 0);
    if (rc == 0)
        hashi_dn_stats.botf++;
    else if (rc != -EAGAIN)
        hashi_log("dimmnet: sending an announcement's %s to rank %d failed (%d)",
                  type == DN_REVOKE ? "revoke" : "revoke answer", peer, rc);
    return rc;
}

/* Sender, fabric: the receiver cancels the announcement whose word it
 * names. Our compare-and-swap against our own claim settles it: won, the
 * receive is cancelled (answer DN_REVOKED); lost, we claimed it (the
 * data and ANN_DONE are under way) or a newer announcement replaced it
 * (the receiver ignores answers but the last): no answer. */
static void ann_revoke_arrived(int src, uint64_t word)
{
    uint64_t expected = word;
    if ((word & DN_ANN_STATE) != DN_ANN_VALID ||
        !__atomic_compare_exchange_n(&flags_of(src)->ann.word, &expected, (word & ~DN_ANN_STATE) | DN_ANN_REVOKED, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    struct dn_peer *p = &dn.peers[src];
    if (send_ann_word(src, DN_REVOKED, word) != 0) {
        p->revoked_out = word;   /* progress sends it (flush_queues) */
        waiting_add(src);
    }
}

/* Receiver, fabric: the sender's answer. Only the one for our last
 * announcement, still asked, counts; the core ignores it if the message
 * came the usual way meanwhile (the cancel then failed). */
static void ann_revoked_arrived(int src, uint64_t word)
{
    struct dn_peer *p = &dn.peers[src];
    if (!p->ann_asked || word != p->ann_word)
        return;
    p->ann_asked = 0;
    if (hashi_am_ann_revoked(src))
        hashi_dn_stats.revokes++;
}

/* Receiver: our announcement into our flag area at the peer, published by
 * its word (flag_area_store). */
static int ann_publish(int peer, const struct hashi_am_ann *a)
{
    struct dn_peer *p = &dn.peers[peer];
    if (!p->ann_ok || say_hello(peer) != 0)
        return -1;
    struct dn_ann body = {
        .context_id = a->context_id, .source = a->source, .tag = a->tag, .cookie = a->cookie,
        .capacity = a->capacity,
    };
    memcpy(&body.rkey, a->rkey, sizeof body.rkey);
    size_t off = offsetof(struct dn_ann, context_id);
    uint32_t gen = (p->ann_gen + 1) & DN_ANN_GEN_MASK;
    uint64_t word = DN_ANN_VALID | (uint64_t)gen << 32 | a->seq;
    if (flag_area_store(peer, offsetof(struct dn_flag_area, ann) + off, (const unsigned char *)&body + off,
                        sizeof body - off, offsetof(struct dn_flag_area, ann.word), word) != 0)
        return -1;
    p->ann_gen = gen;
    p->ann_word = word;
    p->ann_asked = 0;
    hashi_dn_stats.announces++;
    return 0;
}

/* Receiver: withdraw our announcement. emu: swap its word at the peer from
 * valid to revoked, unless the peer swapped it to claimed first. fabric: ask
 * the peer's progress to (DN_REVOKE); its answer or the claim's notice
 * comes later. */
static int ann_revoke(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    if (!hashi_tl(peer)->llcm_cmpxchg) {
        p->ann_asked = 1;
        if (send_ann_word(peer, DN_REVOKE, p->ann_word) != 0) {
            p->revoke_out = p->ann_word;   /* progress sends it (flush_queues) */
            waiting_add(peer);
        }
        return HASHI_AM_ANN_ASKED;
    }
    uint64_t old;
    uint64_t revoked = (p->ann_word & ~DN_ANN_STATE) | DN_ANN_REVOKED;
    if (hashi_tl(peer)->llcm_cmpxchg(peer, remote_flag_offset(offsetof(struct dn_flag_area, ann.word)), p->ann_word,
                                     revoked, &old) != 0) {
        hashi_log("dimmnet: revoking an announcement at rank %d failed; the receive stays posted", peer);
        return HASHI_AM_ANN_CLAIMED;
    }
    if (old == p->ann_word) {
        hashi_dn_stats.revokes++;
        return HASHI_AM_ANN_REVOKED;
    }
    if (old != ((p->ann_word & ~DN_ANN_STATE) | DN_ANN_CLAIMED))
        hashi_log("dimmnet: rank %d holds announcement word %#" PRIx64 ", not ours (%#" PRIx64 ")", peer, old,
                  p->ann_word);
    else
        hashi_dn_stats.revokes_lost++;
    return HASHI_AM_ANN_CLAIMED;   /* its notice completes the receive */
}

/* Sender: the peer's announcement in our LLCM, if it is valid for seq. */
static int ann_peek(int peer, uint32_t seq, struct hashi_am_ann *a)
{
    if (!dn.peers[peer].ann_ok)
        return 0;
    struct dn_flag_area *f = flags_of(peer);
    uint64_t word = load_word(&f->ann.word);
    if ((word & DN_ANN_STATE) != DN_ANN_VALID || (uint32_t)word != seq)
        return 0;
    uint64_t hello = load_word(&f->hello);
    if (!(hello & DN_VALID))
        return 0;
    if ((uint32_t)hello != dn.pgid)
        reject(peer, "an announcement", (uint32_t)hello);
    /* After the word's acquire load: the body written before it. If the
     * peer rewrites it meanwhile (revoked, a new one), the claim fails. */
    a->token = word;
    a->seq = seq;
    a->context_id = f->ann.context_id;
    a->source = f->ann.source;
    a->tag = f->ann.tag;
    a->cookie = f->ann.cookie;
    a->capacity = f->ann.capacity;
    memcpy(a->rkey, &f->ann.rkey, sizeof f->ann.rkey);
    return 1;
}

/* HASHI_DIMMNET_ANNOUNCE_TEST_DELAY: spin (no progress) between reading an
 * announcement and claiming it, so that tests race MPI_Cancel against the
 * claim at will (the compare-and-swap must settle it). */
static __attribute__((noinline, cold)) void ann_test_delay(void)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < (long)dn.ann_test_delay_us);
}

/* Sender: tell the peer our message's tag and size, then claim (against
 * the peer's revoke); the put's notice, stored after the data, comes later.
 * The result goes first because over fabric its block may find no room:
 * then the message goes by RTS and the announcement dies unclaimed. The
 * peer reads the result only on the claim's notice, so one stored by a
 * claim that then loses is never read. */
static int ann_claim(int peer, const struct hashi_am_ann *a, int32_t tag, uint64_t size)
{
    if (say_hello(peer) != 0)
        return 0;
    if (dn.ann_test_delay_us)
        ann_test_delay();   /* testing: widen the window between reading and claiming */
    struct {
        int64_t tag;
        uint64_t size;
    } res = { tag, size };
    _Static_assert(offsetof(struct dn_flag_area, ann_size) == offsetof(struct dn_flag_area, ann_tag) + 8,
                   "the claim's result is two adjacent words");
    if (flag_area_store(peer, offsetof(struct dn_flag_area, ann_tag), &res, sizeof res, DN_LLCM_NO_WORD, 0) != 0)
        return 0;
    uint64_t expected = a->token;
    if (!__atomic_compare_exchange_n(&flags_of(peer)->ann.word, &expected,
                                     (a->token & ~DN_ANN_STATE) | DN_ANN_CLAIMED, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return 0;
    hashi_dn_stats.claims++;
    return 1;
}

/* Receiver, on the claim's notice: what the sender stored. */
static void ann_result(int peer, int32_t *tag, uint64_t *size)
{
    struct dn_peer *p = &dn.peers[peer];
    if (p->ann_asked) {   /* fabric: our revoke came after the claim */
        p->ann_asked = 0;
        hashi_dn_stats.revokes_lost++;
    }
    const struct dn_flag_area *f = flags_of(peer);
    *tag = (int32_t)__atomic_load_n(&f->ann_tag, __ATOMIC_RELAXED);
    *size = __atomic_load_n(&f->ann_size, __ATOMIC_RELAXED);
    hashi_dn_stats.announced++;
}

static const struct hashi_am_ann_ops dn_ann_ops = {
    .publish = ann_publish,
    .revoke = ann_revoke,
    .peek = ann_peek,
    .claim = ann_claim,
    .result = ann_result,
};

static int send_area_answer(int src);

/* Drain the queues of every peer with waiting operations, in order. */
__attribute__((noinline)) static int flush_queues(void)
{
    int events = 0;
    for (int i = 0; i < dn.nwaiting;) {
        int peer = dn.waiting[i];
        struct dn_peer *p = &dn.peers[peer];
        if (p->area_answer && send_area_answer(peer) == 0)
            events++;
        if (p->revoke_out && send_ann_word(peer, DN_REVOKE, p->revoke_out) == 0) {
            p->revoke_out = 0;
            events++;
        }
        if (p->revoked_out && send_ann_word(peer, DN_REVOKED, p->revoked_out) == 0) {
            p->revoked_out = 0;
            events++;
        }
        while (p->n_head) {
            struct dn_op *op = p->n_head;
            int rc = try_other(peer, op);
            if (rc == -EAGAIN)
                break;
            p->n_head = op->next;
            if (!p->n_head)
                p->n_tail = NULL;
            if (rc != 0) {
                hashi_log("dimmnet: a queued operation for rank %d failed (%d)", peer, rc);
                if (op->done)
                    op->done(op->arg, rc);
            }
            free(op);
            events++;
        }
        while (p->q_head) {
            struct dn_op *op = p->q_head;
            int rc = say_hello(peer) == 0 ? try_send(peer, op) : -EAGAIN;
            if (rc == -EAGAIN)
                break;
            p->q_head = op->next;
            if (!p->q_head)
                p->q_tail = NULL;
            if (rc != 0)
                hashi_log("dimmnet: a queued message for rank %d failed (%d)", peer, rc);
            if (op->done)
                op->done(op->arg, rc);
            op_free(op);
            events++;
        }
        if (p->credit_dirty)
            return_credit(peer);
        if (!p->q_head && !p->n_head && !p->credit_dirty && !p->area_answer && !p->revoke_out && !p->revoked_out) {
            p->queued = 0;
            dn.waiting[i] = dn.waiting[--dn.nwaiting];
        } else {
            i++;
        }
    }
    return events;
}

/* ------------------------------------------------------------ receiving */

static struct dn_rarea *area_create(int peer)
{
    struct dn_rarea *a = calloc(1, sizeof *a);
    size_t bytes = (size_t)dn.nbufs * dn.buf_size;
    if (!a || posix_memalign((void **)&a->base, 64, bytes) != 0) {
        free(a);
        return NULL;
    }
    memset(a->base, 0, bytes);  /* fault the pages in now, not on the first message */
    if (hashi_transport_mem_reg(a->base, bytes, &a->mem) != 0) {
        free(a->base);
        free(a);
        return NULL;
    }
    (void)peer;
    return a;
}

static void area_destroy(struct dn_rarea *a)
{
    if (!a)
        return;
    hashi_transport_mem_dereg(&a->mem);
    free(a->base);
    free(a);
}

static int send_area_answer(int src)
{
    struct dn_peer *p = &dn.peers[src];
    struct {
        struct dn_hdr h;
        struct dn_area_msg m;
    } msg = { .h = { .type = DN_AREA, .pgid = dn.pgid }, .m = { .nbufs = dn.nbufs, .buf_size = (uint32_t)dn.buf_size } };
    hashi_transport_rkey(&p->rarea->mem, src, &msg.m.rkey);
    int rc = hashi_tl_block_send(src, &msg, sizeof msg, NULL, 0);
    if (rc == 0) {
        p->area_answer = 0;
        hashi_dn_stats.botf++;
    } else if (rc != -EAGAIN) {
        hashi_log("dimmnet: answering rank %d's receive-area request failed (%d)", src, rc);
        hashi_rt_abort(MPI_ERR_INTERN, "dimmnet: could not answer a receive-area request");
    }
    return rc;
}

/* A sender asked for its receive area: make it and answer with its key. */
static void area_requested(int src)
{
    struct dn_peer *p = &dn.peers[src];
    if (!p->rarea) {
        p->rarea = area_create(src);
        if (!p->rarea) {
            hashi_log("dimmnet: out of memory for rank %d's receive area (%u x %zu bytes)", src, dn.nbufs,
                      dn.buf_size);
            hashi_rt_abort(MPI_ERR_NO_MEM, "dimmnet: out of memory for a receive area");
        }
        p->bufstat_next = &flags_of(src)->bufstat[0];   /* polls watch its first buffer now */
    }
    poll_add(src);
    p->area_answer = 1;
    if (send_area_answer(src) == -EAGAIN)
        waiting_add(src);  /* the ring back is full: progress answers later */
}

static void on_block(void *ctx, int src, const void *msg, size_t len)
{
    (void)ctx;
    struct dn_hdr h;
    if (len < DN_MSG_HDR_SIZE || src < 0 || src >= dn.npeers) {
        hashi_log("dimmnet: dropping a malformed block of %zu bytes from rank %d", len, src);
        return;
    }
    memcpy(&h, msg, DN_MSG_HDR_SIZE);
    size_t hdr_size = DN_MSG_HDR_SIZE;
    if (h.type != DN_MSG) {
        if (len < DN_HDR_SIZE) {
            hashi_log("dimmnet: dropping a malformed block of %zu bytes from rank %d", len, src);
            return;
        }
        memcpy(&h, msg, DN_HDR_SIZE);
        hdr_size = DN_HDR_SIZE;
    }
    if (h.pgid != dn.pgid)
        reject(src, "a block", h.pgid);
    hashi_dn_stats.blocks_in++;
    const unsigned char *body = (const unsigned char *)msg + hdr_size;
    size_t body_len = len - hdr_size;
    struct dn_peer *p = &dn.peers[src];
    switch (h.type) {
    case DN_MSG:
        hashi_am_deliver(body, body_len);
        break;
    case DN_PKT: {
        struct dn_rarea *a = p->rarea;
        if (!a || h.buf >= dn.nbufs || h.offset > dn.buf_size || body_len > dn.buf_size - h.offset ||
            h.total > dn.buf_size) {
            hashi_log("dimmnet: dropping a packet from rank %d outside its receive area", src);
            return;
        }
        /* OTF receive: the bytes go where the header says. */
        memcpy(a->base + (size_t)h.buf * dn.buf_size + h.offset, body, body_len);
        if (h.flags & DN_LAST)
            __atomic_store_n(&flags_of(src)->bufstat[h.buf], DN_VALID | h.total, __ATOMIC_RELAXED);
        break;
    }
    case DN_AREA_REQ:
        area_requested(src);
        break;
    case DN_AREA: {
        struct dn_area_msg m;
        if (body_len < sizeof m || p->area != AREA_REQUESTED) {
            hashi_log("dimmnet: dropping an unexpected area answer from rank %d", src);
            return;
        }
        memcpy(&m, body, sizeof m);
        if (m.nbufs == 0 || m.nbufs > 255 || m.buf_size < HASHI_AM_MIN_SEND) {
            hashi_log("dimmnet: rank %d offered an unusable receive area (%u buffers of %u bytes)", src, m.nbufs,
                      m.buf_size);
            return;
        }
        p->area_rkey = m.rkey;
        p->area_nbufs = m.nbufs;
        p->area_buf_size = m.buf_size;
        p->area = AREA_READY;
        break;
    }
    case DN_LLCM:
        llcm_block_arrived(src, body, body_len);
        break;
    case DN_REVOKE:
    case DN_REVOKED: {
        uint64_t word;
        if (body_len < sizeof word) {
            hashi_log("dimmnet: dropping a malformed announcement block from rank %d", src);
            return;
        }
        memcpy(&word, body, sizeof word);
        if (h.type == DN_REVOKE)
            ann_revoke_arrived(src, word);
        else
            ann_revoked_arrived(src, word);
        break;
    }
    default:
        hashi_log("dimmnet: dropping a block of unknown type %u from rank %d", h.type, src);
    }
}

static void on_notify(void *ctx, int src, uint64_t value)
{
    (void)ctx;
    hashi_log("dimmnet: unexpected transport notification %#" PRIx64 " from rank %d", value, src);
}

/* Check a peer's flag area: its hello, notices, filled receive buffers. */
/* Whether the peer's flag area holds anything new: two loads per peer on an
 * idle poll (its next notice slot, its next receive buffer's status). */
static inline int peer_has_news(const struct dn_peer *p)
{
    return !p->open || load_word(p->notice_next) || (p->bufstat_next && load_word(p->bufstat_next));
}

__attribute__((noinline)) static int poll_peer(int peer)
{
    struct dn_peer *p = &dn.peers[peer];
    struct dn_flag_area *f = flags_of(peer);
    if (!p->open) {
        uint64_t hello = load_word(&f->hello);
        if (!(hello & DN_VALID))
            return 0;  /* its first tiny write has not landed yet */
        if ((uint32_t)hello != dn.pgid)
            reject(peer, "a flag-area write", (uint32_t)hello);
        p->open = 1;
        /* Before anything is delivered: a delivery may run progress again,
         * whose peer_has_news reads this pointer of an open peer. */
        p->notice_next = &f->notice[p->notices_read % DN_NOTICE_SLOTS];
    }
    int events = 0, consumed = 0;
    for (;;) {
        uint64_t *slot = &f->notice[p->notices_read % DN_NOTICE_SLOTS];
        uint64_t v = load_word(slot);
        if (!v)
            break;
        clear_word(slot);
        p->notices_read++;
        consumed++;
        hashi_dn_stats.notices_in++;
        hashi_am_deliver_notice(peer, v & ~DN_VALID);
    }
    struct dn_rarea *a = p->rarea;
    if (a) {
        for (;;) {
            uint32_t b = (uint32_t)(a->next % dn.nbufs);
            uint64_t st = load_word(&f->bufstat[b]);
            if (!st)
                break;
            clear_word(&f->bufstat[b]);
            size_t len = (size_t)(st & 0xffffffffu);
            a->next++;
            consumed++;
            if (len <= dn.buf_size)
                hashi_am_deliver(a->base + (size_t)b * dn.buf_size, len);
            else
                hashi_log("dimmnet: rank %d's buffer %u claims %zu bytes; dropped", peer, b, len);
        }
    }
    p->notice_next = &f->notice[p->notices_read % DN_NOTICE_SLOTS];
    if (a)
        p->bufstat_next = &f->bufstat[a->next % dn.nbufs];
    if (consumed) {
        events += consumed;
        return_credit(peer);
        if (p->credit_dirty)
            waiting_add(peer);
    }
    return events;
}

int hashi_dn_progress(void)
{
    int events = hashi_transport_progress();
    for (int i = 0; i < dn.npoll; i++)
        if (peer_has_news(&dn.peers[dn.poll[i]]))
            events += poll_peer(dn.poll[i]);
    if (dn.nwaiting)
        events += flush_queues();
    if (!events && hashi_am_unread_pulls)
        events = hashi_am_core_idle();   /* nothing else to do: read a waiting pull announcement */
    hashi_transport_flush();    /* fabric: blocks this pass sent in a burst (queued ones retried) */
    return events;
}

/* ------------------------------------------------ partitioned requests */

/*
 * MPI-4 partitioned requests carried by the device (device.h,
 * hashi_device_part_ops; docs/dimmnet.md, "Partitioned requests"), for
 * peers on emu. The sender's first MPI_Start offers the request: the token
 * in the MPI layer's hello is the LLCM offset of a slot of DN_PART_SLOT
 * words in the sender's LLCM:
 *   +0   grant: the last epoch the receiver started (its AOTF)
 *   +8   answer: DN_PART_ACCEPT / DN_PART_DECLINE (AOTF, after the body)
 *   +16  body (llcm_write by the receiver): the offset of its arrival words
 *        in its LLCM, then the key of its receive buffer (registered once)
 * The receiver's arrival words (one per partition, in its LLCM) say which
 * epoch's bytes landed: MPI_Pready(p) PUSHes partition p into place with a
 * signal storing DN_PART_ARRIVAL(epoch, p) into word p, after the data. A
 * Pready before the grant waits in the request (part_early) until a test
 * sees the grant; then each run of consecutive waiting partitions a..b goes
 * as one PUSH whose signal stores DN_PART_ARRIVAL(epoch, a) into word b
 * alone (a put is a system call on emu: one per run, not per partition).
 * Partition p has arrived when the first word q >= p of this epoch starts
 * its run at or before p.
 */
#define DN_PART_FIRST_BITS 20   /* DN_PART_WORDS partitions at most */
#define DN_PART_ARRIVAL(epoch, first) (((uint64_t)(epoch) << DN_PART_FIRST_BITS) | (uint64_t)(first))
#define DN_PART_ACCEPT 1
#define DN_PART_DECLINE 2

struct part_run {
    struct hashi_device_part *dp;
    int len;                    /* partitions in the PUSH that starts here */
};

struct hashi_device_part {
    int peer, is_send, partitions;
    size_t part_bytes;
    unsigned char *buf;
    uint64_t epoch;             /* the current one (1, 2, ...) */
    int word, nwords;           /* ours in the region: the sender's slot, the receiver's arrival words */
    int error;                  /* the epoch's first failure (an error class) */
    /* sender */
    int accepted;
    uint64_t remote_off;        /* the receiver's arrival words */
    struct hashi_tl_rkey rkey;  /* the receiver's buffer */
    unsigned char *queued;      /* readied, not put yet */
    struct part_run *runs;      /* by first partition: the PUSHes in flight */
    int nqueued, completed;
    /* receiver */
    struct hashi_tl_mem mem;
    int registered;
    uint64_t grant_off;         /* the sender's slot */
    int scan;                   /* arrival words before it are in */
};

struct dn_part_body {
    uint64_t arrival_off;
    struct hashi_tl_rkey rkey;
};
_Static_assert(2 * 8 + sizeof(struct dn_part_body) <= DN_PART_SLOT * 8, "a sender's slot holds the answer's body");

static uint64_t *part_word(int w)
{
    return (uint64_t *)(void *)(dn.llcm + dn.part_base + 8 * (size_t)w);
}

static uint64_t part_off(int w)
{
    return dn.part_base + 8 * (uint64_t)w;
}

/* First fit of n words (aligned to align) in the region, cleared; -1 if full. */
static int part_words_alloc(int n, int align)
{
    if (n <= 0 || n > DN_PART_WORDS || align <= 0)
        return -1;
    for (int i = 0; i + n <= DN_PART_WORDS; i += align) {
        int j = 0;
        while (j < n && !dn.part_used[i + j])
            j++;
        if (j < n)
            continue;
        memset(&dn.part_used[i], 1, (size_t)n);
        for (j = 0; j < n; j++)
            clear_word(part_word(i + j));
        return i;
    }
    return -1;
}

static void part_words_free(int w, int n)
{
    if (w >= 0 && n > 0 && w + n <= DN_PART_WORDS)
        memset(&dn.part_used[w], 0, (size_t)n);
}

/* The region's words lent to the device's other files (dimmnet_rma.c's
 * window lock words): the LLCM offset of n cleared words, or 0 when full. */
uint64_t hashi_dn_llcm_words_alloc(int n)
{
    int w = part_words_alloc(n, 1);
    return w < 0 ? 0 : part_off(w);
}

void hashi_dn_llcm_words_free(uint64_t offset, int n)
{
    if (offset >= dn.part_base)
        part_words_free((int)((offset - dn.part_base) / 8), n);
}

uint32_t hashi_dn_pgid(void)
{
    return dn.pgid;
}

/* An AOTF that must land (emu never refuses; fabric's queue drains). */
static void part_aotf(int peer, uint64_t offset, uint64_t value)
{
    int rc;
    while ((rc = aotf(peer, offset, value)) == -EAGAIN)
        hashi_transport_progress();
}

static void part_free(struct hashi_device_part *dp)
{
    if (!dp)
        return;
    part_words_free(dp->word, dp->nwords);
    if (dp->registered)
        hashi_transport_mem_dereg(&dp->mem);
    free(dp->queued);
    free(dp->runs);
    free(dp);
}

/*
 * HASHI_DIMMNET_PART=auto carries partitions of DN_PART_AUTO_MIN ..
 * DN_PART_AUTO_MAX bytes, where one PUSH (a process_vm_writev on emu) beats
 * the generic path (2 ranks, 8 partitions each way, per epoch: 16 / 32 / 64
 * KiB 57-88 / 89-91 / 160-176 us against 94-134 / 113-123 / 253-269);
 * below, the ring's copies win (8 B 14-15 against 4 us, 4 KiB even), above,
 * the split rendezvous with both ranks copying (128 KiB 403-473 against
 * 279-329 us, 1 MiB 3.8-4.0 against 3.1-3.3 ms). Both sides see the same
 * partition size whenever the receiver can accept (same count and total).
 */
#define DN_PART_AUTO_MIN (16 * 1024)
#define DN_PART_AUTO_MAX (64 * 1024)
enum { PART_OFF, PART_AUTO, PART_ON };

static int part_emu(int peer, size_t part_bytes)
{
    const struct hashi_tl_ops *tl = hashi_tl(peer);
    if (dn.part_mode == PART_OFF ||
        (dn.part_mode == PART_AUTO && (part_bytes < DN_PART_AUTO_MIN || part_bytes > DN_PART_AUTO_MAX)))
        return 0;
    return tl && tl->id == HASHI_TL_EMU && tl->llcm_write;
}

static int part_send_offer(int peer, const void *buf, size_t part_bytes, int partitions,
                           struct hashi_device_part **dpp, uint64_t *token)
{
    if (!part_emu(peer, part_bytes) || part_bytes == 0 || partitions < 1 || partitions > DN_PART_WORDS)
        return HASHI_DEVICE_P2P_DECLINE;
    struct hashi_device_part *dp = calloc(1, sizeof *dp);
    if (!dp || !(dp->queued = calloc((size_t)partitions, 1)) ||
        !(dp->runs = calloc((size_t)partitions, sizeof *dp->runs))) {
        if (dp)
            free(dp->queued);
        free(dp);
        return HASHI_DEVICE_P2P_DECLINE;
    }
    dp->word = part_words_alloc(DN_PART_SLOT, DN_PART_SLOT);
    if (dp->word < 0) {
        free(dp->queued);
        free(dp);
        return HASHI_DEVICE_P2P_DECLINE;
    }
    dp->nwords = DN_PART_SLOT;
    dp->peer = peer;
    dp->is_send = 1;
    dp->partitions = partitions;
    dp->part_bytes = part_bytes;
    dp->buf = (unsigned char *)(uintptr_t)buf;
    *dpp = dp;
    *token = part_off(dp->word);
    return MPI_SUCCESS;
}

static int part_recv_accept(int peer, uint64_t token, void *buf, size_t part_bytes, int partitions, int acceptable,
                            struct hashi_device_part **dpp)
{
    struct hashi_device_part *dp = NULL;
    int ok = acceptable && part_emu(peer, part_bytes) && token % 8 == 0 && part_bytes > 0 && partitions >= 1 &&
             partitions <= DN_PART_WORDS && (dp = calloc(1, sizeof *dp)) != NULL;
    if (ok) {
        dp->word = part_words_alloc(partitions, 1);
        dp->nwords = partitions;
        ok = dp->word >= 0;
    }
    if (ok)
        ok = hashi_transport_mem_reg(buf, part_bytes * (size_t)partitions, &dp->mem) == 0;
    if (ok) {
        dp->registered = 1;
        struct dn_part_body body = { .arrival_off = part_off(dp->word) };
        hashi_transport_rkey(&dp->mem, peer, &body.rkey);
        ok = hashi_tl(peer)->llcm_write(peer, token + 16, &body, sizeof body) == 0;
    }
    if (!ok) {
        if (dp && dp->word < 0)
            dp->nwords = 0;
        part_free(dp);
        part_aotf(peer, token + 8, DN_PART_DECLINE);
        return HASHI_DEVICE_P2P_DECLINE;
    }
    part_aotf(peer, token + 8, DN_PART_ACCEPT);   /* lands after the body */
    hashi_dn_stats.part_accepted++;
    dp->peer = peer;
    dp->partitions = partitions;
    dp->part_bytes = part_bytes;
    dp->buf = buf;
    dp->grant_off = token;
    *dpp = dp;
    return MPI_SUCCESS;
}

static int part_send_answer(struct hashi_device_part *dp)
{
    uint64_t a = load_word(part_word(dp->word + 1));
    if (a == DN_PART_DECLINE)
        return 0;
    if (a != DN_PART_ACCEPT)
        return -1;
    struct dn_part_body body;
    memcpy(&body, part_word(dp->word + 2), sizeof body);   /* visible: the answer was loaded with acquire */
    dp->remote_off = body.arrival_off;
    dp->rkey = body.rkey;
    dp->accepted = 1;
    return 1;
}

static int part_granted(const struct hashi_device_part *dp)
{
    return dp->accepted && load_word(part_word(dp->word)) >= dp->epoch;
}

static void part_put_done(void *arg, int status)
{
    struct part_run *run = arg;
    struct hashi_device_part *dp = run->dp;
    if (status != 0 && dp->error == MPI_SUCCESS)
        dp->error = MPI_ERR_OTHER;
    dp->completed += run->len;
}

/* PUSH partitions a..b into place; the signal stores the run's arrival into word b. */
static void part_put(struct hashi_device_part *dp, int a, int b)
{
    size_t at = (size_t)a * dp->part_bytes, len = (size_t)(b - a + 1) * dp->part_bytes;
    struct hashi_tl_signal sig = {
        .offset = dp->remote_off + 8 * (uint64_t)b, .value = DN_PART_ARRIVAL(dp->epoch, a), .size = 8,
    };
    struct part_run *run = &dp->runs[a];
    *run = (struct part_run){ .dp = dp, .len = b - a + 1 };
    int rc = hashi_tl(dp->peer)->put(dp->peer, dp->buf + at, len, NULL, &dp->rkey, at, &sig, part_put_done, run);
    if (rc == -EAGAIN) {
        for (int p = a; p <= b; p++) {
            if (!dp->queued[p]) {
                dp->queued[p] = 1;
                dp->nqueued++;
            }
        }
        return;
    }
    if (rc != 0) {
        hashi_log("dimmnet: putting partitions %d..%d (%zu bytes) to rank %d failed (%d)", a, b, len, dp->peer, rc);
        if (dp->error == MPI_SUCCESS)
            dp->error = MPI_ERR_OTHER;
        dp->completed += b - a + 1;
        return;
    }
    hashi_dn_stats.part_puts += (uint64_t)(b - a + 1);
    hashi_dn_stats.part_pushes++;
}

static int part_start(struct hashi_device_part *dp)
{
    dp->epoch++;
    dp->error = MPI_SUCCESS;
    if (dp->is_send) {
        dp->completed = 0;
        dp->nqueued = 0;
        memset(dp->queued, 0, (size_t)dp->partitions);
        return MPI_SUCCESS;
    }
    dp->scan = 0;
    part_aotf(dp->peer, dp->grant_off, dp->epoch);   /* the sender may write this epoch now */
    hashi_dn_stats.part_grants++;
    return MPI_SUCCESS;
}

static int part_ready(struct hashi_device_part *dp, int p)
{
    if (!part_granted(dp)) {
        dp->queued[p] = 1;
        dp->nqueued++;
        hashi_dn_stats.part_early++;
        return MPI_SUCCESS;
    }
    part_put(dp, p, p);
    return MPI_SUCCESS;
}

/* The first word at or after p written in this epoch covers p if its run starts at or before p. */
static int part_arrived(struct hashi_device_part *dp, int p)
{
    for (int q = p; q < dp->partitions; q++) {
        uint64_t v = load_word(part_word(dp->word + q));
        if (v >> DN_PART_FIRST_BITS != dp->epoch)
            continue;   /* not written in this epoch (yet) */
        return (int)(v & ((UINT64_C(1) << DN_PART_FIRST_BITS) - 1)) <= p;
    }
    return 0;
}

static int part_test(struct hashi_device_part *dp, int *done)
{
    if (dp->is_send) {
        if (dp->nqueued && part_granted(dp)) {
            dp->nqueued = 0;
            for (int p = 0; p < dp->partitions; p++) {
                if (!dp->queued[p])
                    continue;
                int b = p;
                while (b + 1 < dp->partitions && dp->queued[b + 1])
                    b++;
                memset(&dp->queued[p], 0, (size_t)(b - p + 1));
                part_put(dp, p, b);   /* -EAGAIN queues the run again */
                p = b;
            }
        }
        *done = dp->completed == dp->partitions;
        return dp->error;
    }
    /* Past every run in: the first word of this epoch at or after scan ends a run starting at or before it. */
    while (dp->scan < dp->partitions) {
        int q = dp->scan;
        uint64_t v = 0;
        while (q < dp->partitions && (v = load_word(part_word(dp->word + q))) >> DN_PART_FIRST_BITS != dp->epoch)
            q++;
        if (q == dp->partitions || (int)(v & ((UINT64_C(1) << DN_PART_FIRST_BITS) - 1)) > dp->scan)
            break;
        dp->scan = q + 1;
    }
    *done = dp->scan == dp->partitions;
    return dp->error;
}

static const struct hashi_device_part_ops dn_part_ops = {
    .send_offer = part_send_offer,
    .recv_accept = part_recv_accept,
    .send_answer = part_send_answer,
    .start = part_start,
    .ready = part_ready,
    .arrived = part_arrived,
    .test = part_test,
    .free = part_free,
};

/* ------------------------------------------------------------ life cycle */

static uint32_t job_pgid(void)
{
    int64_t forced = hashi_param_int(HASHI_P_DIMMNET_PGID);
    if (forced > 0)
        return (uint32_t)forced;
    uint32_t id = (uint32_t)(hashi_job.key ^ (hashi_job.key >> 32));
    return id ? id : 1;
}

/*
 * On emu the eager limit defaults to 4 KiB, not 16 KiB: above it a copy by
 * CMA (the rendezvous) beats cutting the message into 464-byte packets and
 * copying it twice (64-message window at 8 / 16 KiB: 4.4 / 5.7 GB/s against
 * 2.0 / 2.1; ping-pong 1 us slower at 8 KiB). Over a network a rendezvous
 * costs a round trip, so 16 KiB stays the default there.
 */
#define DN_EAGER_MAX_EMU 4096
/* Over libfabric a block is one fi_send whatever its size, and cutting a
 * message into 464-byte packets only multiplies sends and credit returns
 * (tcp ping-pong at 512 B / 4 KiB: 30 / 76 us in 464-byte packets, 8.2 / 9.2
 * in 4 KiB blocks; the ofi device: 9.8 / 9.4), so blocks are 4 KiB there. */
#define DN_BOTF_MAX_FABRIC 4096
/* On emu too, unless many ranks share the node: one 4 KiB block is one copy
 * into the ring and one out of it, where 464-byte packets add a copy through
 * a receive buffer and a slot per packet (2 ranks, chrt: ping-pong at 2 / 4
 * KiB 0.99 / 1.46 us against 1.69 / 2.96; window at 4 KiB 8.7 GB/s against
 * 1.8; Open MPI 3.3 us and 2.1 GB/s). A slot then takes 4.2 KiB, 270 KiB per
 * ring of 64; beyond DN_EMU_BIG_BLOCK_RANKS local ranks the rings would take
 * too much of the node's memory, and the hardware's 464 stays. */
#define DN_BOTF_MAX_EMU 4096
#define DN_EMU_BIG_BLOCK_RANKS 16
/* With a few ranks on the node (every peer on emu), blocks, the eager limit
 * and the receive buffers (the core's largest message) grow to 64 KiB: a
 * message up to 64 KiB is then one copy into the ring and one out, where the
 * rendezvous cost a round trip and a CMA system call. emu's rings hold
 * variable-length records, so small messages still pack one line apart
 * (docs/dimmnet.md, "Sixth session: variable-length ring records"; 2 ranks,
 * chrt, 16 KiB -> 64 KiB blocks: ping-pong 32 KiB 9.1-9.4 -> 5.5-5.9 us,
 * window 32 / 64 KiB 5.1-5.8 / 5.9-6.1 -> 9.4-9.8 / 9.5-9.7 GB/s, 8 B
 * unchanged). A ring takes 1 MiB, 16 MiB for 4 ranks. */
#define DN_BOTF_MAX_EMU_FEW 65536
#define DN_EMU_HUGE_BLOCK_RANKS 4
/* Largest block to a fabric peer: every peer's receive buffers at a rank
 * hold HASHI_FABRIC_CREDITS of them (64 x 64 KiB = 4 MiB per peer). */
#define DN_NET_BLOCK_MAX 65536

/*
 * The eager limit towards peers on fabric (HASHI_DIMMNET_FABRIC_EAGER, 64k).
 * Over a network provider (tcp) a rendezvous costs RTS, read request, read
 * response and FIN through ofi_rxm, while an eager block is one fi_send that
 * rxm's eager protocol carries (fabric.c raises its eager limit to our
 * largest block, not its bounce buffers): 2 ranks on tcp, 32 / 64 KiB
 * ping-pong 35 / 46 us by rendezvous against 18-20 / 28-36 eager. On shm the
 * rendezvous is one local copy and eager 64 KiB lost latency, so there, and
 * when EAGER_MAX or BOTF_MAX is set (tests forcing paths), the plain limit
 * stays unless this is set too.
 */
static int64_t fabric_eager(int64_t eager, char *err, size_t errlen)
{
    int64_t net = hashi_param_int(HASHI_P_DIMMNET_FABRIC_EAGER);
    if (net < 0 || net > DN_NET_BLOCK_MAX) {
        snprintf(err, errlen, "dimmnet: HASHI_DIMMNET_FABRIC_EAGER=%" PRId64 " must be 0 .. 64k (one block)", net);
        return -1;
    }
    if (hashi_param_is_set(HASHI_P_DIMMNET_FABRIC_EAGER))
        return net;
    if (hashi_param_is_set(HASHI_P_DIMMNET_EAGER_MAX) || hashi_param_is_set(HASHI_P_DIMMNET_BOTF_MAX) ||
        hashi_fi_expect_shm(hashi_job.num_nodes <= 1))
        return eager;
    return net;
}

static int all_peers_on_emu(void)
{
    if (strcmp(hashi_param_str(HASHI_P_TRANSPORT), "fabric") == 0)
        return 0;
    for (int r = 0; r < hashi_job.size; r++)
        if (!hashi_job.peer_is_local[r])
            return 0;
    return 1;
}

/*
 * The device's counters, each printed under its label by print_stats and
 * exposed to tools as an MPI_T performance variable (runtime/pvar.h,
 * src/mpi/mpit.c): one table for both, in the printed order.
 */
struct dn_counter {
    const char *label;
    struct hashi_pvar pvar;
};
#define DN_COUNTER(label, field, what) { label, { "dimmnet_" label, "hashi_dimmnet", what, &hashi_dn_stats.field } }
#define AM_COUNTER(label, var, what) { label, { "am_" label, "hashi_am", what, &var } }
static const struct dn_counter dn_counters[] = {
    DN_COUNTER("aotf", aotf, "AOTF tiny stores into peers' LLCM"),
    DN_COUNTER("botf", botf, "BOTF block sends (one whole core message each)"),
    DN_COUNTER("packets", botf_packets, "BOTF packets of messages cut into a receive buffer"),
    DN_COUNTER("window0", window[0], "of the packets, those sent through window 0"),
    DN_COUNTER("window1", window[1], "of the packets, those sent through window 1"),
    DN_COUNTER("push", push, "PUSH transfers into peers' receive buffers"),
    DN_COUNTER("put", put, "rendezvous PUSHes into a matched receive"),
    DN_COUNTER("pull", pull, "rendezvous PULLs from a sender's buffer"),
    DN_COUNTER("area_requests", area_requests, "receive areas asked of peers (first medium message to each)"),
    DN_COUNTER("credit_waits", credit_waits, "sends that waited for a peer's receive-buffer credit"),
    DN_COUNTER("ring_waits", ring_waits, "sends that waited for room in a peer's ring"),
    DN_COUNTER("notices_in", notices_in, "AOTF notices (ACK, FIN, PUT_DONE) received"),
    DN_COUNTER("blocks_in", blocks_in, "blocks received"),
    DN_COUNTER("llcm_barriers", barriers, "barriers on LLCM flags"),
    DN_COUNTER("llcm_bcasts", coll_bcasts, "broadcasts on LLCM slots, the root's stage or reads"),
    DN_COUNTER("llcm_allreduces", coll_allreduces, "reductions on LLCM slots, stages or reads"),
    DN_COUNTER("llcm_alltoalls", coll_alltoalls, "all-to-alls on LLCM slots, stages or reads"),
    DN_COUNTER("llcm_slot_waits", coll_slot_waits, "LLCM collectives that waited for a peer to free a slot"),
    DN_COUNTER("llcm_allgathers", coll_allgathers, "allgathers on LLCM slots, stages or reads"),
    DN_COUNTER("llcm_counter_barriers", counter_barriers, "of the barriers, those on an LLCM counter"),
    DN_COUNTER("llcm_nb_colls", coll_nb_ops, "nonblocking and persistent collectives run on LLCM"),
    DN_COUNTER("llcm_gathers", coll_gathers, "gathers on LLCM slots"),
    DN_COUNTER("llcm_scatters", coll_scatters, "scatters on LLCM slots"),
    DN_COUNTER("llcm_scans", coll_scans, "inclusive scans on LLCM slots"),
    DN_COUNTER("llcm_exscans", coll_exscans, "exclusive scans on LLCM slots"),
    DN_COUNTER("llcm_reduce_scatters", coll_reduce_scatters, "reduce_scatter_blocks on LLCM slots"),
    AM_COUNTER("busy_pulls", hashi_am_busy_pulls, "sends read by their receiver from the sender's buffer (ring full)"),
    AM_COUNTER("bidir_pulls", hashi_am_bidir_pulls, "sends read by their receiver while both ranks send to each other"),
    DN_COUNTER("in_place", in_place, "block sends made from the caller's memory (fabric sendv)"),
    DN_COUNTER("staged_bcasts", staged_bcasts, "of the broadcasts, those through the root's stage"),
    DN_COUNTER("announces", announces, "receives announced to their sender before its message (receive-first)"),
    DN_COUNTER("claims", claims, "announcements this rank's sends claimed and put data into"),
    DN_COUNTER("announced", announced, "announced receives completed by the sender's put"),
    DN_COUNTER("revokes", revokes, "announcements withdrawn by MPI_Cancel"),
    DN_COUNTER("revokes_lost", revokes_lost, "cancels that found their announcement already claimed"),
    DN_COUNTER("part_puts", part_puts, "partitions of partitioned sends PUSHed straight into the receive buffer"),
    DN_COUNTER("part_grants", part_grants, "epochs of device-carried partitioned receives granted to the sender"),
    DN_COUNTER("part_early", part_early, "partitions readied before the receiver granted their epoch (kept until it)"),
    DN_COUNTER("part_accepted", part_accepted, "partitioned receives this rank's device took (buffer exposed once)"),
    DN_COUNTER("part_pushes", part_pushes, "PUSHes of partitions (a run readied before its grant goes as one)"),
    AM_COUNTER("prepared_regs", hashi_am_prepared_regs, "buffers of persistent requests registered (once per request and peer)"),
    AM_COUNTER("regs_saved", hashi_am_regs_saved, "rendezvous that used their persistent request's registration instead of registering"),
    DN_COUNTER("llcm_exchanges", coll_exchanges,
               "sparse exchanges (v and w forms, neighbourhood collectives) on LLCM slots or reads"),
    DN_COUNTER("rma_puts", rma_puts, "contiguous MPI_Put runs PUSHed straight into a peer's registered window"),
    DN_COUNTER("rma_gets", rma_gets, "contiguous MPI_Get runs PULLed straight from a peer's registered window"),
    DN_COUNTER("rma_pushv", rma_pushv, "vector PUSHes, each carrying several of rma_puts' runs in one transfer"),
    DN_COUNTER("rma_locks", rma_locks, "MPI_Win_lock / lock_all locks taken on a target's LLCM lock word (no message)"),
    DN_COUNTER("rma_lock_waits", rma_lock_waits, "of rma_locks: those that waited for another holder"),
    DN_COUNTER("rma_lock_wakes", rma_lock_wakes,
               "waiters this rank's lock releases and shared grants let in and woke (at most one each)"),
};
#undef DN_COUNTER
#undef AM_COUNTER
#define DN_COUNTERS (sizeof dn_counters / sizeof dn_counters[0])

static int register_counters(void)
{
    for (size_t i = 0; i < DN_COUNTERS; i++)
        if (hashi_pvar_register(&dn_counters[i].pvar, 1) != 0)
            return -1;
    return 0;
}

static int dn_init(char *err, size_t errlen)
{
    memset(&dn, 0, sizeof dn);
    memset(&hashi_dn_stats, 0, sizeof hashi_dn_stats);
    int64_t nbufs = hashi_param_int(HASHI_P_DIMMNET_RECV_BUFS);
    int64_t buf_payload = hashi_param_int(HASHI_P_DIMMNET_RECV_BUF_SIZE);
    int64_t botf = hashi_param_int(HASHI_P_DIMMNET_BOTF_MAX);
    int64_t eager = hashi_param_int(HASHI_P_DIMMNET_EAGER_MAX);
    if (nbufs < 1 || nbufs > 255) {
        snprintf(err, errlen, "dimmnet: HASHI_DIMMNET_RECV_BUFS=%" PRId64 " must be 1 .. 255 (a byte names a buffer)",
                 nbufs);
        return -1;
    }
    if (buf_payload < 64 || buf_payload > (INT64_C(1) << 30)) {
        snprintf(err, errlen, "dimmnet: HASHI_DIMMNET_RECV_BUF_SIZE=%" PRId64 " must be 64 bytes .. 1 GiB", buf_payload);
        return -1;
    }
    if (botf < 8 || botf > 65536) {
        snprintf(err, errlen, "dimmnet: HASHI_DIMMNET_BOTF_MAX=%" PRId64 " must be 8 .. 65536", botf);
        return -1;
    }
    int emu_only = all_peers_on_emu();
    int few_on_emu = emu_only && hashi_job.local_size <= DN_EMU_HUGE_BLOCK_RANKS &&
                     !hashi_param_is_set(HASHI_P_DIMMNET_BOTF_MAX) && !hashi_param_is_set(HASHI_P_DIMMNET_EAGER_MAX);
    if (!hashi_param_is_set(HASHI_P_DIMMNET_EAGER_MAX) && emu_only)
        eager = few_on_emu ? DN_BOTF_MAX_EMU_FEW : DN_EAGER_MAX_EMU;
    if (!hashi_param_is_set(HASHI_P_DIMMNET_BOTF_MAX) && !emu_only)
        botf = DN_BOTF_MAX_FABRIC;
    else if (few_on_emu)
        botf = DN_BOTF_MAX_EMU_FEW;
    else if (!hashi_param_is_set(HASHI_P_DIMMNET_BOTF_MAX) && hashi_job.local_size <= DN_EMU_BIG_BLOCK_RANKS)
        botf = DN_BOTF_MAX_EMU;
    if (eager < 0)
        eager = 0;
    int64_t net_eager = emu_only ? eager : fabric_eager(eager, err, errlen);
    if (net_eager < 0)
        return -1;
    if (!emu_only && !hashi_param_is_set(HASHI_P_DIMMNET_RECV_BUF_SIZE) && buf_payload < net_eager)
        buf_payload = net_eager;   /* the core sends nothing larger than a buffer */
    if (few_on_emu && !hashi_param_is_set(HASHI_P_DIMMNET_RECV_BUF_SIZE) && buf_payload < eager)
        buf_payload = eager;   /* the core sends nothing larger than a buffer */
    dn.nbufs = (uint32_t)nbufs;
    /* A buffer holds the core's header in front of the payload. */
    dn.buf_size = ((size_t)buf_payload + HASHI_AM_HDR_MAX + 63) & ~(size_t)63;
    dn.botf_payload = (size_t)HASHI_AM_LONG_HDR + (size_t)botf;
    dn.botf_data = (size_t)botf;
    dn.block_max = (DN_HDR_SIZE + dn.botf_payload + 7) & ~(size_t)7;
    dn.push_min = (size_t)hashi_param_int(HASHI_P_DIMMNET_PUSH_MIN);
    if (few_on_emu && !hashi_param_is_set(HASHI_P_DIMMNET_PUSH_MIN) && dn.push_min <= dn.botf_data)
        dn.push_min = dn.botf_data + 1;   /* every eager message is one block */
    /* Peers on fabric: one block (one fi_send) holds any eager message, and
     * only a PUSH_MIN set by the user moves one through a receive buffer. */
    dn.net_botf_data = dn.botf_data;
    dn.net_push_min = hashi_param_is_set(HASHI_P_DIMMNET_PUSH_MIN) ? dn.push_min : SIZE_MAX;
    if (!hashi_param_is_set(HASHI_P_DIMMNET_BOTF_MAX) && !emu_only) {
        size_t room = dn.buf_size - HASHI_AM_LONG_HDR;      /* the core's eager cap */
        size_t want = (size_t)net_eager < room ? (size_t)net_eager : room;
        want = want < DN_BOTF_MAX_FABRIC ? DN_BOTF_MAX_FABRIC : want > DN_NET_BLOCK_MAX ? DN_NET_BLOCK_MAX : want;
        dn.net_botf_data = want;
    }
    size_t net_block_max = (DN_HDR_SIZE + HASHI_AM_LONG_HDR + dn.net_botf_data + 7) & ~(size_t)7;
    dn.pgid = job_pgid();
    dn.print_stats = (int)hashi_param_int(HASHI_P_DIMMNET_STATS);
    if (register_counters() != 0) {
        snprintf(err, errlen, "dimmnet: out of memory registering performance variables");
        return -1;
    }
    dn.ann_test_delay_us = (size_t)hashi_param_int(HASHI_P_DIMMNET_ANNOUNCE_TEST_DELAY);
    dn.npeers = hashi_job.size;
    dn.flag_stride = (sizeof(struct dn_flag_area) + 8 * (size_t)dn.nbufs + 63) & ~(size_t)63;
    size_t llcm = (size_t)hashi_param_int(HASHI_P_DIMMNET_LLCM_SIZE);
    size_t needed = DN_FLAGS_BASE + (size_t)dn.npeers * dn.flag_stride;
    if (llcm < needed) {
        HASHI_DEBUG(1, "dimmnet: LLCM grown from %zu to %zu bytes for %d flag areas of %zu bytes", llcm, needed,
                    dn.npeers, dn.flag_stride);
        llcm = needed;
    }
    /* The partitioned requests' words follow the flag areas, on top of the
     * size asked for: the collective area keeps the room it had. */
    dn.part_base = (needed + 63) & ~(size_t)63;
    llcm += dn.part_base - needed + DN_PART_BYTES;
    const char *part_mode = hashi_param_str(HASHI_P_DIMMNET_PART);
    dn.part_mode = strcasecmp(part_mode, "on") == 0 ? PART_ON : strcasecmp(part_mode, "off") == 0 ? PART_OFF : PART_AUTO;
    llcm = (llcm + 7) & ~(size_t)7;
    dn.peers = calloc((size_t)dn.npeers, sizeof *dn.peers);
    dn.poll = calloc((size_t)dn.npeers, sizeof *dn.poll);
    dn.waiting = calloc((size_t)dn.npeers, sizeof *dn.waiting);
    if (!dn.peers || !dn.poll || !dn.waiting) {
        snprintf(err, errlen, "dimmnet: out of memory for %d peers", dn.npeers);
        return -1;
    }
    struct hashi_tl_config cfg = {
        .llcm_size = llcm, .block_max = dn.block_max, .net_block_max = net_block_max, .on_block = on_block,
        .on_notify = on_notify,
    };
    if (hashi_transport_init(&cfg, err, errlen) != 0)
        return -1;

    dn.ops = (struct hashi_am_ops){
        .name = "dimmnet",
        .max_send = dn.buf_size,
        .flags = HASHI_AM_CAP_GET | HASHI_AM_CAP_PUT | HASHI_AM_CAP_NOTICE,
        .max_get = SIZE_MAX,
        .max_put = SIZE_MAX,
        .rkey_size = sizeof(struct hashi_tl_rkey),
        .send = dn_send,
        .mem_reg = dn_mem_reg,
        .mem_dereg = dn_mem_dereg,
        .get = dn_get,
        .put = dn_put,
        .notice = dn_notice,
        .progress = hashi_dn_progress,
        .pending_from = dn_pending_from,
        .ann = &dn_ann_ops,
    };
    const char *rndv = hashi_param_str(HASHI_P_DIMMNET_RNDV);
    enum hashi_am_rndv mode = strcasecmp(rndv, "pull") == 0     ? HASHI_AM_RNDV_GET
                              : strcasecmp(rndv, "push") == 0   ? HASHI_AM_RNDV_PUT
                              : strcasecmp(rndv, "rounds") == 0 ? HASHI_AM_RNDV_CHUNKED
                              : strcasecmp(rndv, "split") == 0  ? HASHI_AM_RNDV_SPLIT
                                                                : HASHI_AM_RNDV_AUTO;
    int64_t split_pull = hashi_param_int(HASHI_P_DIMMNET_SPLIT_PULL);
    if (split_pull < 0 || split_pull > 100) {
        snprintf(err, errlen, "dimmnet: HASHI_DIMMNET_SPLIT_PULL=%" PRId64 " must be a percentage (0 .. 100)",
                 split_pull);
        return -1;
    }
    /* The core gets the larger limit; dn_connect lowers it per peer. */
    dn.eager = (size_t)eager;
    dn.net_eager = (size_t)net_eager;
    if (hashi_am_core_init(&dn.ops, dn.eager > dn.net_eager ? dn.eager : dn.net_eager, mode, err, errlen) != 0)
        return -1;
    hashi_am_core_set_split((size_t)hashi_param_int(HASHI_P_DIMMNET_SPLIT_MIN), (unsigned)split_pull);
    hashi_am_core_set_busy_pull((size_t)hashi_param_int(HASHI_P_DIMMNET_BUSY_PULL_MIN));
    hashi_device_dimmnet.p2p = hashi_am_p2p_ops;
    hashi_dn_coll_ops(&hashi_device_dimmnet.coll);
    /* Set even when HASHI_DIMMNET_PART is off: a receive still answers (declines) an offer. */
    hashi_device_dimmnet.part = dn_part_ops;
    hashi_device_dimmnet.rma = hashi_dn_rma_ops;
    return 0;
}

/*
 * Receive-first announcements (HASHI_DIMMNET_ANNOUNCE, docs/dimmnet.md): the
 * largest receive announced to a peer on emu (net 0) or on fabric (net 1);
 * 0: none. on: every receive above the eager limit, up to ANNOUNCE_MAX only
 * when it is set; off: none; auto, fabric: the same as on; auto, emu: up to
 * ANNOUNCE_MAX (8k) and below SPLIT_MIN; auto only while
 * HASHI_DIMMNET_RNDV is auto (forced modes keep their handshake). Where the
 * split runs both cores copy, which beats one put without the CTS round
 * trip (4 ranks, 128 KiB / 1 MiB ping-pong 25.4-26.0 / 124-131 us split,
 * 39.5-42.0 / 210-236 announced); from 16 KiB up to the split, 64-message
 * windows at 8 ranks lost 2-5% while ping-pong won 4-13% ("Receive-first
 * announcements": figures), so auto keeps to where neither lost.
 */
static size_t announce_max(int net)
{
    const char *mode = hashi_param_str(HASHI_P_DIMMNET_ANNOUNCE);
    size_t max = (size_t)hashi_param_int(HASHI_P_DIMMNET_ANNOUNCE_MAX);
    int max_set = hashi_param_is_set(HASHI_P_DIMMNET_ANNOUNCE_MAX) && max;
    if (strcasecmp(mode, "off") == 0)
        return 0;
    if (strcasecmp(mode, "on") == 0)
        return max_set ? max : SIZE_MAX;
    if (strcasecmp(hashi_param_str(HASHI_P_DIMMNET_RNDV), "auto") != 0)
        return 0;
    /* Fabric peers read rendezvous data (PULL, no split): a claimed put
     * saves the RTS and the read request, which won the receive-first
     * ping-pong at every rendezvous size on both providers ("Announcements
     * over fabric": figures), so auto takes every size there. */
    if (net)
        return max_set ? max : SIZE_MAX;
    size_t split = (size_t)hashi_param_int(HASHI_P_DIMMNET_SPLIT_MIN);
    return split && max >= split ? split - 1 : max;
}

/* An eager limit as the core applies it: at most its own (the largest,
 * capped by the receive buffers: hashi_am_core_init). */
static size_t core_capped(size_t eager)
{
    return eager < hashi_am_p2p_ops.eager_limit ? eager : hashi_am_p2p_ops.eager_limit;
}

static int dn_connect(char *err, size_t errlen)
{
    if (hashi_transport_connect(err, errlen) != 0)
        return -1;
    dn.llcm = hashi_transport_llcm();
    /* Blocking sends hand a held burst to the network (fabric coalescing). */
    hashi_device_dimmnet.p2p.send_flush = hashi_tl_flush;
    /* RMA sizes the transports allow (the core splits bigger transfers). */
    size_t max_rma = SIZE_MAX;
    for (int r = 0; r < dn.npeers; r++) {
        const struct hashi_tl_ops *tl = hashi_tl(r);
        if (tl && tl->max_rma && tl->max_rma < max_rma)
            max_rma = tl->max_rma;
    }
    dn.ops.max_get = dn.ops.max_put = max_rma;
    /* Over fabric the tcp round trip, not the copy, is the cost: credits go
     * back in batches (the sender waits only with all of them used, and then
     * all are due) and rendezvous data is read by the receiver, never put
     * after a CTS (HASHI_DIMMNET_FABRIC_RNDV, unless HASHI_DIMMNET_RNDV is set). */
    int net_get = !hashi_param_is_set(HASHI_P_DIMMNET_RNDV) &&
                  strcasecmp(hashi_param_str(HASHI_P_DIMMNET_FABRIC_RNDV), "pull") == 0;
    size_t ann_max = announce_max(0), net_ann_max = announce_max(1);
    for (int r = 0; r < dn.npeers; r++) {
        struct dn_peer *p = &dn.peers[r];
        int net = hashi_tl(r) && hashi_tl(r)->id == HASHI_TL_FABRIC;
        p->block_payload = HASHI_AM_LONG_HDR + (net ? dn.net_botf_data : dn.botf_data);
        p->block_data = net ? dn.net_botf_data : dn.botf_data;
        p->push_min = net ? dn.net_push_min : dn.push_min;
        const struct hashi_tl_ops *tl = hashi_tl(r);
        p->in_place_min = tl && tl->block_sendv ? tl->block_sendv_min(r) : SIZE_MAX;
        if (p->in_place_min != SIZE_MAX)
            hashi_am_core_set_peer_in_place(r, p->in_place_min);
        p->freed_batch = net && dn.nbufs > 1 ? dn.nbufs / 2 : 1;
        p->notices_batch = net ? DN_NOTICE_SLOTS / 2 : 1;
        if (net && net_get)
            hashi_am_core_set_peer_get(r);
        hashi_am_core_set_peer_eager(r, core_capped(net ? dn.net_eager : dn.eager));
        if (!net)   /* a read is one local copy (CMA) only on emu */
            hashi_am_core_set_bidir_pull(r, (size_t)hashi_param_int(HASHI_P_DIMMNET_BIDIR_PULL_MIN));
        /* Announcements: on emu we write and swap the peer's LLCM words ourselves; over
         * fabric its progress does (DN_LLCM, DN_REVOKE), so a cancel asks it. */
        size_t peer_ann_max = net ? net_ann_max : ann_max;
        p->ann_ok = peer_ann_max && r != hashi_job.rank && tl && (net || (tl->llcm_write && tl->llcm_cmpxchg)) &&
                    hashi_am_core_set_peer_announce(r, peer_ann_max) == 0;
    }
    size_t stage_bytes = (size_t)DN_STAGE_SLOTS * dn.buf_size;
    if (posix_memalign((void **)&dn.stage.base, 64, stage_bytes) != 0) {
        snprintf(err, errlen, "dimmnet: out of memory for %zu bytes of PUSH staging", stage_bytes);
        return -1;
    }
    memset(dn.stage.base, 0, stage_bytes);
    int rc = hashi_transport_mem_reg(dn.stage.base, stage_bytes, &dn.stage.mem);
    if (rc != 0) {
        snprintf(err, errlen, "dimmnet: registering the PUSH staging buffers failed (%s)", strerror(-rc));
        return -1;
    }
    for (int i = 0; i < DN_STAGE_SLOTS; i++)
        dn.stage.free_list[i] = i;
    dn.stage.nfree = DN_STAGE_SLOTS;
    if (hashi_dn_coll_init(dn.part_base + DN_PART_BYTES, err, errlen) != 0)
        return -1;
    dn.up = 1;
    HASHI_DEBUG(1, "dimmnet: BOTF blocks of %zu bytes (%zu of payload), %u receive buffers of %zu bytes per sender, "
                "eager up to %zu bytes (%zu to peers on fabric), PUSH from %zu bytes, process group %#" PRIx32,
                dn.block_max, dn.botf_data, dn.nbufs, dn.buf_size,
                core_capped(dn.eager), core_capped(dn.net_eager), dn.push_min, dn.pgid);
    return 0;
}

/* The counters, one line at MPI_Finalize (HASHI_DIMMNET_STATS; tests match it). */
static void print_stats(void)
{
    char line[2048];
    int n = snprintf(line, sizeof line, "dimmnet stats rank %d:", hashi_job.rank);
    for (size_t i = 0; i < DN_COUNTERS && n < (int)sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s %" PRIu64, dn_counters[i].label,
                      *dn_counters[i].pvar.counter);
    fprintf(stderr, "%s\n", line);
}

static void dn_finalize(void)
{
    if (dn.print_stats)
        print_stats();
    hashi_am_core_finalize();
    hashi_dn_coll_finalize();
    for (int r = 0; dn.peers && r < dn.npeers; r++) {
        struct dn_peer *p = &dn.peers[r];
        for (struct dn_op **head = &p->q_head; head; head = head == &p->q_head ? &p->n_head : NULL) {
            while (*head) {
                struct dn_op *op = *head;
                *head = op->next;
                op_free(op);
            }
        }
        area_destroy(p->rarea);
    }
    if (dn.up) {
        hashi_transport_mem_dereg(&dn.stage.mem);
        free(dn.stage.base);
    }
    hashi_transport_finalize();
    free(dn.peers);
    free(dn.poll);
    free(dn.waiting);
    memset(&dn, 0, sizeof dn);
    hashi_buf_cache_drain();   /* the queued copies freed above */
}

struct hashi_device_ops hashi_device_dimmnet = {
    .name = "dimmnet",
    .description = "DIMMnet-1 protocol (AOTF, BOTF, PUSH/PULL, LLCM flag areas) on the emu or fabric transport",
    .transports = "emu,fabric",
    .init = dn_init,
    .connect = dn_connect,
    .finalize = dn_finalize,
    .wait_fd = hashi_transport_wait_fd,
    .trywait = hashi_transport_trywait,
};
