/*
 * The shared matching core: MPI point-to-point over an active-message device
 * (am.h). Matching lives in match.c; this file runs the protocols.
 *
 * Wire protocol (every message starts with struct am_hdr):
 *   EAGER       payload follows; standard / ready sends up to the eager limit,
 *               complete at once (the device buffers them).
 *   EAGER_SYNC  the same for MPI_Ssend; the receiver answers ACK(cookie) when
 *               the message matches a receive, and the send completes on it.
 *   RTS         larger messages: size, the sender's cookie and, when the
 *               device can read remote memory, a remote key of the sender's
 *               buffer. On match the receiver either
 *                 - reads min(size, its buffer) bytes with get() in pieces and
 *                   answers FIN(cookie), or (no key)
 *                 - answers CTS(cookie, its own cookie, bytes wanted) and the
 *                   sender streams DATA fragments (offset in the header),
 *                   completing when the last fragment has left.
 *               Either answer implies the match, so RTS needs no extra ACK
 *               for MPI_Ssend. With a device that can write remote memory,
 *               a receive that was posted before its RTS arrived
 *               (receive-first) instead answers CTS with a key of its own
 *               buffer, and the sender puts the data there; the last piece
 *               carries the PUT_DONE notice, which the device hands over
 *               only once the data is visible (no separate FIN round).
 *               A keyed CTS carries, after the key, the 8-byte offset
 *               `from` where the put starts: 0, or in a split rendezvous
 *               (am.h) the end of the part the receiver reads itself with
 *               get() while the sender puts the rest; FIN_SPLIT tells the
 *               sender that read is over.
 * ACK, FIN, FIN_SPLIT, PUT_DONE and CANCEL_* travel as 8-byte notices when the device has them
 * (DIMMnet's AOTF), else as header-only messages.
 * EAGER, EAGER_SYNC and RTS carry a sequence number per (sender, receiver)
 * pair and are matched in that order even if the device reorders them (a
 * small stash holds early arrivals); control messages need no order.
 *   CANCEL      MPI_Cancel of a send: the message's envelope, sequence number
 *               and the sender's cookie; the receiver answers CANCEL_YES
 *               (withdrawn unmatched; nothing else about it follows) or
 *               CANCEL_NO (matched). See "send cancel" below.
 *
 * Receive-first announcements (devices with hashi_am_ops.ann, towards the
 * peers hashi_am_core_set_peer_announce names): a receive posted before its
 * message announces its buffer to the sender ahead of any RTS, bound to the
 * one message with the next sequence number k the receiver expects from it;
 * the sender, starting message k as a rendezvous, claims the announcement
 * if the envelope matches and puts the data straight into the buffer, the
 * last piece carrying ANN_DONE (cookie: the receive) as its notice; message
 * k arrives that way, with no RTS. See "receive-first announcements" below.
 *
 * Persistent requests (psend_init / precv_init): the buffer is registered
 * once for the request's life, and every rendezvous of its starts (the
 * RTS's key, the CTS's, an announcement's) uses that key; matching and the
 * choice of protocol stay per message. See "persistent requests" below.
 */
#include "device/common/am.h"
#include "device/common/cookie.h"
#include "device/common/match.h"
#include "mpi/request.h"
#include "runtime/bufcache.h"
#include "runtime/copy.h"
#include "runtime/log.h"
#include "runtime/rt.h"
#include "runtime/valgrind.h"
#include "runtime/wake.h"

#include <mpi.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

enum am_type {
    AM_EAGER = 1, AM_EAGER_SYNC, AM_RTS, AM_ACK, AM_FIN, AM_CTS, AM_DATA, AM_PUT_DONE, AM_FIN_SPLIT, AM_ANN_DONE,
    AM_CANCEL, AM_CANCEL_YES, AM_CANCEL_NO
};

struct am_hdr {
    uint8_t type;
    uint8_t rkey_len;       /* RTS, CTS: bytes of remote key right after the header (0: none) */
    uint16_t flags;         /* RTS: AM_PULL_NOW */
    int32_t src_world;      /* sender's world rank, for answers */
    uint32_t context_id;
    int32_t source;         /* sender's rank in the communicator */
    int32_t tag;
    uint32_t seq;           /* EAGER*, RTS: order per (sender, receiver); CANCEL: the message's */
    /* EAGER ends here (AM_SHORT_HDR): its size is what follows. */
    uint32_t cookie;        /* EAGER_SYNC, RTS, CANCEL: sender's request; ACK, FIN, CTS, CANCEL_*: the one answered */
    uint32_t cookie2;       /* CTS, DATA: the receiver's request */
    uint64_t size;          /* EAGER_SYNC: payload; RTS: message; CTS: bytes wanted; DATA: offset */
};
/* An RTS for an eager-sized message the device could not take at once
 * (hashi_am_core_set_busy_pull) or sent while traffic flows both ways
 * (hashi_am_core_set_bidir_pull): the receiver reads it without waiting
 * for a match (core.unread) and answers FIN. */
#define AM_PULL_NOW 0x1u

/* The plain eager header is the short form, so that a small message and its
 * envelope fit one cache line of a device's ring (DIMMnet on emu: slot 16 +
 * block 8 + 24 + up to 16 bytes of data). */
#define AM_SHORT_HDR offsetof(struct am_hdr, cookie)
_Static_assert(sizeof(struct am_hdr) + HASHI_AM_RKEY_MAX <= HASHI_AM_HDR_MAX, "RTS header too big");
_Static_assert(AM_SHORT_HDR == HASHI_AM_EAGER_HDR, "am.h names the eager header's size");
_Static_assert(sizeof(struct am_hdr) == HASHI_AM_LONG_HDR, "am.h names the long header's size");

/* Bytes of header on the wire in front of a message of this type. */
static inline size_t am_hdr_len(uint8_t type)
{
    return type == AM_EAGER ? AM_SHORT_HDR : sizeof(struct am_hdr);
}

/* Gets and DATA fragments in flight per rendezvous: enough to keep a device
 * busy without flooding its queues. */
#define RNDV_WINDOW 4

/* Per-request state in req->dev. */
enum { WAIT_LOCAL = 1, WAIT_ACK = 2, WAIT_FIN = 4, WAIT_CTS = 8, WAIT_CANCEL = 16 };

struct am_send_state {
    uint32_t cookie;
    unsigned waiting;       /* WAIT_* still outstanding */
    int error;              /* MPI error class from a failed device operation */
    void *mem;              /* registered buffer (RTS with a key) */
    uint32_t peer_cookie;   /* chunked: the receiver's request */
    uint64_t want, sent;    /* chunked / put: bytes the receiver wants, bytes handed to the device */
    int frags_out;
    uint8_t busy, again;    /* stream_more running / asked to run again (callbacks may nest) */
    uint8_t put_rkey_len;   /* receive-first: the receiver's key (0: chunked fragments) */
    uint8_t split_fin;      /* FIN_SPLIT overtook the CTS */
    uint8_t rndv;           /* announced by RTS: counted in the peer's rndv_out */
    uint8_t put_notice;     /* the last put piece's notice: AM_PUT_DONE, or AM_ANN_DONE (claimed announcement) */
    uint8_t on_wire;        /* a message (EAGER*, RTS) carries it: seq names it to a cancel */
    uint8_t claimed;        /* put into a claimed announcement: matched from the start */
    uint8_t cancelled;      /* the receiver removed it for MPI_Cancel */
    uint32_t seq;           /* its sequence number towards dest_world */
    unsigned char put_rkey[HASHI_AM_RKEY_MAX];
};

struct am_recv_state {
    struct hashi_mq_posted posted;
    uint32_t cookie;        /* chunked: our name in DATA fragments */
    int peer_world;
    int source, tag;        /* envelope of the matched message */
    int error;
    uint32_t peer_cookie;   /* the sender's request */
    uint64_t size;          /* message bytes */
    uint64_t want;          /* bytes placed: min(size, buffer) */
    uint64_t get_end;       /* get() reads [0, get_end): want, or the receiver's part of a split */
    uint64_t issued, landed;
    int gets_out;
    uint8_t parts;          /* split: its read's FIN and the sender's PUT_DONE, both needed to complete */
    uint8_t busy, again;    /* rndv_get_more running / asked to run again */
    uint8_t rkey_len;
    uint8_t pull_now;       /* read it all ourselves, no split, no put */
    uint8_t pulled_in;      /* an AM_PULL_NOW RTS, counted in its peer's pulls_in until read */
    unsigned char rkey[HASHI_AM_RKEY_MAX];
    void *mem;              /* receive-first: our buffer, registered for the sender's put */
};

union am_req_state {
    struct am_send_state s;
    struct am_recv_state r;
};
_Static_assert(sizeof(union am_req_state) <= HASHI_DEVICE_REQ_BYTES, "core state exceeds the request's device bytes");

static inline struct am_send_state *send_state(struct MPI_ABI_Request *req)
{
    return (struct am_send_state *)(void *)req->dev;
}
static inline struct am_recv_state *recv_state(struct MPI_ABI_Request *req)
{
    return (struct am_recv_state *)(void *)req->dev;
}
static inline struct MPI_ABI_Request *req_of_recv(struct am_recv_state *r)
{
    return container_of((unsigned char *)r, struct MPI_ABI_Request, dev);
}

/* A message that arrived before its receive (also what Mprobe hands out). */
struct am_unexp {
    struct hashi_mq_unexp q;
    uint8_t type;
    uint8_t rkey_len;
    uint8_t pulling;        /* busy pull: our read of the sender's buffer into data is under way */
    uint8_t unread;         /* busy pull: not read yet, on the core's unread list */
    uint8_t cancel_asked;   /* busy pull: its sender cancelled it while we read it (out of the queues) */
    int src_world;
    uint32_t seq;           /* its sequence number from src_world (a cancel names it) */
    uint32_t cancel_cookie; /* cancel_asked: the sender's request, answered once the read is over */
    int error;              /* busy pull: the read failed (MPI error class) */
    uint32_t cookie;
    uint64_t size;
    struct MPI_ABI_Request *req;  /* busy pull: the receive that matched it while pulling */
    size_t alloc;           /* bytes allocated (runtime/bufcache.h) */
    TAILQ_ENTRY(am_unexp) unread_link;   /* on core.unread while unread */
    unsigned char rkey[HASHI_AM_RKEY_MAX];
    unsigned char data[];   /* eager payload (busy pull: once read, it is one) */
};

static void unexp_free(struct am_unexp *u)
{
    hashi_buf_put(u, u->alloc);
}

/* A cancel that arrived before the message it names (in flight, or early). */
struct am_cancel {
    struct am_cancel *next;
    uint32_t seq;
    uint32_t cookie;        /* the sender's request */
};

/* An arrival ahead of its sequence number. */
struct am_early {
    struct am_early *next;
    uint32_t seq;
    size_t len;
    unsigned char msg[];
};

struct am_peer {
    uint32_t send_seq;      /* next sequence number towards this peer */
    uint32_t recv_seq;      /* next sequence number expected from it */
    struct am_early *early; /* sorted by distance from recv_seq */
    uint8_t get_only;       /* rendezvous from this peer always by get (hashi_am_core_set_peer_get) */
    uint32_t rndv_out;      /* our announced (RTS) sends to it not complete yet */
    size_t bidir_pull_min;  /* eager messages to it from this size go as AM_PULL_NOW while its traffic
                               to us flows (0: never; hashi_am_core_set_bidir_pull) */
    uint32_t pulls_in;      /* its AM_PULL_NOW messages that arrived and that we have not read yet */
    size_t eager_limit;     /* largest payload sent to it eagerly (hashi_am_core_set_peer_eager) */
    size_t in_place_min;    /* eager payloads to it from this size are sent in place (0: never;
                               hashi_am_core_set_peer_in_place) */
    size_t plain_max;       /* payloads up to this go as a plain buffered EAGER whatever the traffic:
                               within eager_limit, below in_place_min, busy_pull_min and
                               bidir_pull_min (plain_update); am_send_now tests only this */
    /* receive-first announcements (hashi_am_core_set_peer_announce) */
    size_t ann_max;         /* our receives from it up to this size are announced (0: none, and no claims) */
    struct MPI_ABI_Request *ann_req;   /* our receive announced to it, outstanding (NULL: none) */
    void *ann_mem;          /* its buffer's registration */
    uint32_t ann_seq;       /* the message the announcement binds to */
    uint8_t ann_revoking;   /* cancelled, the device asked the peer: its answer or ANN_DONE ends it */
    struct am_cancel *cancels;   /* its cancels of messages that have not arrived yet */
};

static struct am_core {
    const struct hashi_am_ops *am;
    size_t stage_payload_lim;   /* eager payloads below this am_send_now writes into am->stage (0: none) */
    size_t eager_limit;
    size_t frag_payload;    /* DATA payload per fragment */
    int use_get;            /* senders register their buffer for the receiver's get */
    int use_put;            /* receivers may register theirs for the sender's put */
    int use_notice;         /* ACK / FIN / PUT_DONE as device notices */
    enum hashi_am_rndv rndv;
    size_t split_min;       /* AUTO: split messages of at least this many bytes (0: never) */
    size_t busy_pull_min;   /* eager messages from this size may go as AM_PULL_NOW (0: never) */
    unsigned split_pull;    /* percent of a split message the receiver reads */
    struct hashi_mq mq;
    struct hashi_cookies cookies;
    struct am_peer *peers;  /* by world rank */
    int npeers;
    TAILQ_HEAD(, am_unexp) unread;  /* busy pulls not read yet, oldest first (below) */
    const struct hashi_am_ann_ops *ann;  /* the device's announcement hooks (NULL: none) */
    size_t ann_floor;       /* receives up to this size are never announced (the smallest eager
                               limit of a peer that takes announcements; SIZE_MAX: none does) */
} core;

struct hashi_device_p2p_ops hashi_am_p2p_ops;
uint64_t hashi_am_busy_pulls, hashi_am_bidir_pulls;
uint64_t hashi_am_prepared_regs, hashi_am_regs_saved;

/* ---------------------------------------------------- persistent requests */

/*
 * A persistent request's buffer, registered once for the peer it talks to
 * and kept in req->dev_prepared until pfree (the user keeps the buffer for
 * the request's life; its contents may change between starts, which a
 * registration does not care about). Every rendezvous of its starts takes
 * this key instead of registering the buffer for one message (buf_reg). A
 * receive from MPI_ANY_SOURCE registers at its first rendezvous, and again
 * when one comes from another peer: keys are per peer. Only the buffer is
 * prepared: matching and the protocol stay per message. All are listed so
 * that finalize releases those the program never freed.
 */
struct am_prepared {
    LIST_ENTRY(am_prepared) link;
    struct MPI_ABI_Request *req;
    void *mem;              /* the registration (NULL: none yet) */
    int peer;               /* the world rank rkey is for */
    unsigned char rkey[HASHI_AM_RKEY_MAX];
};
static LIST_HEAD(, am_prepared) prepared_list = LIST_HEAD_INITIALIZER(prepared_list);

/* (Re)register p's buffer for peer. 0, or -1 (p stays unregistered). */
static int prepared_register(struct am_prepared *p, int peer)
{
    if (p->mem)
        core.am->mem_dereg(p->mem);
    p->mem = NULL;
    if (core.am->mem_reg(p->req->dev_buf, p->req->dev_bytes, peer, &p->mem, p->rkey) != 0) {
        p->mem = NULL;
        return -1;
    }
    p->peer = peer;
    hashi_am_prepared_regs++;
    return 0;
}

/* Register len bytes of req's buffer for peer, writing the key to rkey: a
 * persistent request's own registration, else one for this message. 0, or -1. */
static int buf_reg(struct MPI_ABI_Request *req, size_t len, int peer, void **mem, void *rkey)
{
    struct am_prepared *p = req->dev_prepared;
    if (!p)
        return core.am->mem_reg(req->dev_buf, len, peer, mem, rkey);
    if (p->mem && p->peer == peer)
        hashi_am_regs_saved++;
    else if (prepared_register(p, peer) != 0)
        return -1;
    memcpy(rkey, p->rkey, core.am->rkey_size);
    *mem = p->mem;
    return 0;
}

/* Release a registration buf_reg made: a persistent request keeps its own. */
static void buf_dereg(struct MPI_ABI_Request *req, void *mem)
{
    const struct am_prepared *p = req->dev_prepared;
    if (!p || p->mem != mem)
        core.am->mem_dereg(mem);
}

/* Why an RTS asks its receiver to read the message on arrival (send_rts). */
enum pull_why { PULL_NO, PULL_BUSY, PULL_BIDIR };

/*
 * Busy-pulled messages that arrived before their receive and are not read
 * yet, oldest first. A receive that matches one reads it straight into its
 * own buffer (one copy); a progress pass of the device that found nothing
 * else to do reads the oldest into its unexpected buffer
 * (hashi_am_core_idle), so that the send still completes without a match.
 * Reading each on arrival cost the rank that ran behind in a bidirectional
 * window a second copy of nearly every message: the peer's next window
 * arrived in the same pass as the last answers of the current one.
 */
size_t hashi_am_unread_pulls;   /* entries on core.unread */

static void unread_add(struct am_unexp *u)
{
    u->unread = 1;
    TAILQ_INSERT_TAIL(&core.unread, u, unread_link);
    hashi_am_unread_pulls++;
}

static void unread_remove(struct am_unexp *u)
{
    TAILQ_REMOVE(&core.unread, u, unread_link);
    u->unread = 0;
    hashi_am_unread_pulls--;
}

/* ---------------------------------------------------------------- helpers */

/* ACK, FIN, CTS; done(arg) runs once it is handed over (or if it fails). */
static uint64_t notice_value(uint8_t type, uint32_t cookie)
{
    return (uint64_t)type << 32 | cookie;
}

static void send_control(int dest, uint8_t type, uint32_t cookie, uint32_t cookie2, uint64_t size,
                         hashi_am_done_fn done, void *arg)
{
    if (core.use_notice && (type == AM_ACK || type == AM_FIN || type == AM_FIN_SPLIT || type == AM_CANCEL_YES ||
                            type == AM_CANCEL_NO)) {
        if (core.am->notice(dest, notice_value(type, cookie)) == 0) {
            if (done)
                done(arg, 0);
            return;
        }
        hashi_log("matching core: sending a notice to rank %d failed; its peer will wait", dest);
        if (done)
            done(arg, -1);
        return;
    }
    struct am_hdr h = {
        .type = type, .src_world = hashi_job.rank, .cookie = cookie, .cookie2 = cookie2, .size = size,
    };
    if (core.am->send(dest, &h, sizeof h, NULL, 0, HASHI_AM_SEND_BUFFERED, done, arg) != 0) {
        hashi_log("matching core: sending a control message to rank %d failed; its peer will wait", dest);
        if (done)
            done(arg, -1);
    }
}

static void complete_send(struct MPI_ABI_Request *req)
{
    struct am_send_state *s = send_state(req);
    if (s->cookie)
        hashi_cookie_free(&core.cookies, s->cookie);
    if (s->mem)
        buf_dereg(req, s->mem);
    if (s->rndv)
        core.peers[req->dest_world].rndv_out--;
    s->rndv = 0;
    s->cookie = 0;
    s->mem = NULL;
    req->status.MPI_ERROR = s->error;
    hashi_status_set_cancelled(&req->status, s->cancelled);
    hashi_request_complete(req);
}

static void send_progressed(struct MPI_ABI_Request *req, unsigned cleared)
{
    struct am_send_state *s = send_state(req);
    s->waiting &= ~cleared;
    if (!s->waiting)
        complete_send(req);
}

static void complete_recv(struct MPI_ABI_Request *req);

/* One part of a receive is over; the last one completes it (a split
 * rendezvous has two, everything else one). */
static void recv_part_done(struct MPI_ABI_Request *req)
{
    struct am_recv_state *r = recv_state(req);
    if (r->parts > 1) {
        r->parts--;
        return;
    }
    complete_recv(req);
}

/* The answer (ACK / FIN) a receive owed its sender is handed over. */
static void answered(void *arg, int status)
{
    (void)status;  /* the receive has its data either way; send_control logged a failure */
    recv_part_done(arg);
}

/* A receive's outcome: size bytes came, want of them were placed. */
static inline void recv_finish(struct MPI_ABI_Request *req, int source, int tag, uint64_t size, uint64_t want,
                               int error)
{
    req->status.MPI_SOURCE = source;
    req->status.MPI_TAG = tag;
    req->status.MPI_ERROR = error ? error : size > want ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    hashi_status_set_bytes(&req->status, want);
    hashi_status_set_cancelled(&req->status, 0);
    hashi_request_complete(req);
}

static void complete_recv(struct MPI_ABI_Request *req)
{
    struct am_recv_state *r = recv_state(req);
    if (r->cookie)
        hashi_cookie_free(&core.cookies, r->cookie);
    if (r->mem) {
        /* Offered to the sender's put: its bytes came in by the peer's own
         * single-copy write. */
        buf_dereg(req, r->mem);
        hashi_vg_written_by_peer(req->dev_buf, r->want);
    }
    r->cookie = 0;
    r->mem = NULL;
    recv_finish(req, r->source, r->tag, r->size, r->want, r->error);
}

/* --------------------------------------------------------- rendezvous (recv) */

static void rndv_get_more(struct MPI_ABI_Request *req);

static void rndv_recv_finished(struct MPI_ABI_Request *req)
{
    struct am_recv_state *r = recv_state(req);
    if (r->pulled_in) {
        core.peers[r->peer_world].pulls_in--;
        r->pulled_in = 0;
    }
    if (r->rkey_len)
        send_control(r->peer_world, r->parts ? AM_FIN_SPLIT : AM_FIN, r->peer_cookie, 0, 0, answered, req);
    else
        complete_recv(req);
}

static void get_done(void *arg, int status)
{
    struct MPI_ABI_Request *req = arg;
    struct am_recv_state *r = recv_state(req);
    r->gets_out--;
    if (status != 0 && !r->error) {
        hashi_log("matching core: reading a rendezvous message from rank %d failed", r->peer_world);
        r->error = MPI_ERR_OTHER;
    }
    rndv_get_more(req);
}

/* Keep up to RNDV_WINDOW reads in flight; finish when all have landed. A get
 * may complete inside the call that starts it: the busy flag turns such a
 * nested call into another round of the loop that is already running. */
static void rndv_get_more(struct MPI_ABI_Request *req)
{
    struct am_recv_state *r = recv_state(req);
    if (r->busy) {
        r->again = 1;
        return;
    }
    r->busy = 1;
    do {
        r->again = 0;
        while (!r->error && r->issued < r->get_end && r->gets_out < RNDV_WINDOW) {
            uint64_t left = r->get_end - r->issued;
            size_t piece = left < core.am->max_get ? (size_t)left : core.am->max_get;
            uint64_t offset = r->issued;
            r->issued += piece;
            r->gets_out++;
            if (core.am->get(r->peer_world, (char *)req->dev_buf + offset, piece, r->rkey, offset, get_done,
                             req) != 0) {
                r->gets_out--;
                r->error = MPI_ERR_OTHER;
                hashi_log("matching core: starting a read from rank %d failed", r->peer_world);
            }
        }
    } while (r->again);
    r->busy = 0;
    if (r->gets_out == 0 && (r->issued == r->get_end || r->error))
        rndv_recv_finished(req);
}

/* Offer our buffer to the sender's put of [from, want). 0: offered; 1: the
 * offer failed and completed the receive with an error; -1: nothing was sent
 * (fall back to another way). */
static int rndv_put_offer(struct MPI_ABI_Request *req, uint64_t from)
{
    struct am_recv_state *r = recv_state(req);
    unsigned char wire[sizeof(struct am_hdr) + HASHI_AM_RKEY_MAX];
    struct am_hdr h = {
        .type = AM_CTS, .rkey_len = (uint8_t)core.am->rkey_size, .src_world = hashi_job.rank,
        .cookie = r->peer_cookie, .size = r->want,
    };
    if (buf_reg(req, r->want, r->peer_world, &r->mem, wire + sizeof h) != 0) {
        r->mem = NULL;
        return -1;
    }
    r->cookie = hashi_cookie_new(&core.cookies, req);
    if (!r->cookie) {
        buf_dereg(req, r->mem);
        r->mem = NULL;
        return -1;
    }
    h.cookie2 = r->cookie;
    memcpy(wire, &h, sizeof h);
    /* The header and key fill HASHI_AM_HDR_MAX: `from` travels as the payload. */
    if (core.am->send(r->peer_world, wire, sizeof h + core.am->rkey_size, &from, sizeof from,
                      HASHI_AM_SEND_BUFFERED, NULL, NULL) != 0) {
        hashi_log("matching core: offering a receive buffer to rank %d failed", r->peer_world);
        r->error = MPI_ERR_OTHER;
        r->want = 0;
        complete_recv(req);
        return 1;
    }
    return 0;  /* PUT_DONE completes the receive */
}

/* Where a split of this receive starts the sender's put: the receiver reads
 * [0, from) itself. 0: do not split. */
static uint64_t rndv_split_point(const struct am_recv_state *r)
{
    if (!core.use_get || !core.use_put || !r->rkey_len || core.peers[r->peer_world].get_only)
        return 0;
    if (core.rndv != HASHI_AM_RNDV_SPLIT && !(core.rndv == HASHI_AM_RNDV_AUTO && core.split_min &&
                                               r->want >= core.split_min))
        return 0;
    /* Whole pages each (CMA pins pages; a page read by both sides costs twice). */
    uint64_t from = r->want / 100 * core.split_pull + r->want % 100 * core.split_pull / 100;
    from &= ~(uint64_t)4095;
    return from < r->want ? from : 0;
}

/* Which side moves a rendezvous message's data (see enum hashi_am_rndv). */
static int rndv_wants_put(const struct am_recv_state *r, int posted_first)
{
    if (!core.use_put || r->want == 0)
        return 0;
    if (core.peers[r->peer_world].get_only && r->rkey_len)
        return 0;
    if (core.rndv == HASHI_AM_RNDV_PUT || !r->rkey_len)
        return 1;
    return core.rndv == HASHI_AM_RNDV_AUTO && posted_first;
}

/* A receive matched an RTS (from the wire, posted_first, or the unexpected queue). */
static void rndv_recv_start(struct MPI_ABI_Request *req, int posted_first)
{
    struct am_recv_state *r = recv_state(req);
    r->want = r->size < req->dev_bytes ? r->size : req->dev_bytes;
    r->get_end = r->want;
    r->issued = r->landed = 0;
    r->gets_out = 0;
    r->busy = r->again = 0;
    r->parts = 0;
    if (r->pull_now) {
        /* The sender is busy (its peer's ring was full): read it all. */
        rndv_get_more(req);
        return;
    }
    uint64_t from = rndv_split_point(r);
    if (from) {
        /* Both parts at once: the sender's put starts on our CTS while we read. */
        int rc = rndv_put_offer(req, from);
        if (rc == 1)
            return;
        if (rc == 0) {
            r->parts = 2;
            r->get_end = from;
            rndv_get_more(req);
            return;
        }
    }
    if (rndv_wants_put(r, posted_first) && rndv_put_offer(req, 0) >= 0)
        return;
    if (r->rkey_len) {
        rndv_get_more(req);
        return;
    }
    /* Chunked: tell the sender what to stream and how to name us. */
    if (r->want > 0) {
        r->cookie = hashi_cookie_new(&core.cookies, req);
        if (!r->cookie) {
            r->error = MPI_ERR_NO_MEM;
            r->want = 0;
        }
    }
    /* Nothing to stream: the CTS itself releases the sender, so it must leave first. */
    send_control(r->peer_world, AM_CTS, r->peer_cookie, r->cookie, r->want, r->want == 0 ? answered : NULL,
                 r->want == 0 ? req : NULL);
}

/* ------------------------------------------------------------- matching */

/* A receive and a message met: place eager data or start the rendezvous. */
static inline void recv_matched(struct MPI_ABI_Request *req, uint8_t type, int src_world, int source, int tag,
                         uint32_t cookie, uint64_t size, const void *payload, const unsigned char *rkey,
                         uint8_t rkey_len, int posted_first, int pull_now)
{
    struct am_recv_state *r = recv_state(req);
    r->peer_world = src_world;
    r->source = source;
    r->tag = tag;
    r->size = size;
    r->error = 0;
    r->cookie = 0;
    r->peer_cookie = cookie;
    if (type == AM_RTS) {
        /* While our own large messages to the sender wait for it to read
         * them (both ways at once), it has its hands full: read this one
         * ourselves rather than split it or ask for a put (auto mode). */
        r->pulled_in = (uint8_t)pull_now;
        r->pull_now = (uint8_t)(pull_now || (rkey_len && core.rndv == HASHI_AM_RNDV_AUTO &&
                                             core.peers[src_world].rndv_out));
        r->rkey_len = rkey_len;
        if (rkey_len)
            memcpy(r->rkey, rkey, rkey_len);
        rndv_recv_start(req, posted_first);
        return;
    }
    r->want = size < req->dev_bytes ? size : req->dev_bytes;
    hashi_copy(req->dev_buf, payload, r->want);
    if (type == AM_EAGER_SYNC)
        send_control(src_world, AM_ACK, cookie, 0, 0, answered, req);
    else
        complete_recv(req);
}

/* A receive takes an unexpected message (a busy-pulled one once read: an
 * eager one then, unless the read failed; not read yet: the receive reads
 * it into its own buffer). */
static void deliver_unexp(struct MPI_ABI_Request *req, struct am_unexp *u)
{
    int unread = u->unread;
    if (unread)
        unread_remove(u);
    if (u->error)
        recv_finish(req, u->q.source, u->q.tag, u->size, 0, u->error);
    else
        recv_matched(req, u->type, u->src_world, u->q.source, u->q.tag, u->cookie, u->size, u->data, u->rkey,
                     u->rkey_len, 0, unread);
    unexp_free(u);
}

static void recv_from_unexp(struct MPI_ABI_Request *req, struct am_unexp *u)
{
    if (u->pulling)
        u->req = req;   /* still being read: the read's completion delivers it */
    else
        deliver_unexp(req, u);
}

static void queue_unexpected(const struct am_hdr *h, const unsigned char *body, size_t body_len);

/* Our read of a busy-pulled message into its unexpected buffer is over:
 * release the sender, and deliver to the receive that matched meanwhile. */
static void unexp_pulled(void *arg, int status)
{
    struct am_unexp *u = arg;
    u->pulling = 0;
    core.peers[u->src_world].pulls_in--;
    if (status != 0) {
        hashi_log("matching core: reading a message of %" PRIu64 " bytes from rank %d failed", u->size,
                  u->src_world);
        u->error = MPI_ERR_OTHER;
    }
    u->type = AM_EAGER;
    u->rkey_len = 0;
    if (!u->error)
        hashi_vg_written_by_peer(u->data, u->size);
    if (u->cancel_asked) {
        /* Cancelled while we read it: the answer alone releases the sender
         * (after a yes it expects nothing else about the message). */
        send_control(u->src_world, AM_CANCEL_YES, u->cancel_cookie, 0, 0, NULL, NULL);
        unexp_free(u);
        return;
    }
    send_control(u->src_world, AM_FIN, u->cookie, 0, 0, NULL, NULL);
    if (u->req)
        deliver_unexp(u->req, u);
}

/* Whether h is a busy-pull RTS we can read in one get (else a plain RTS). */
static inline int pulls_now(const struct am_hdr *h)
{
    return h->type == AM_RTS && (h->flags & AM_PULL_NOW) && h->rkey_len && h->size <= core.am->max_get;
}

/* EAGER, EAGER_SYNC or RTS, in sequence order. */
static void arrival(const struct am_hdr *h, const unsigned char *body, size_t body_len)
{
    struct hashi_mq_posted *p = hashi_mq_match_arrival(&core.mq, h->context_id, h->source, h->tag);
    const unsigned char *rkey = body;
    const unsigned char *payload = h->type == AM_RTS ? NULL : body;
    int pull_now = pulls_now(h);
    if (pull_now)
        core.peers[h->src_world].pulls_in++;   /* until read: its sender is busy with us */
    if (p) {
        struct am_recv_state *r = container_of(p, struct am_recv_state, posted);
        recv_matched(req_of_recv(r), h->type, h->src_world, h->source, h->tag, h->cookie, h->size, payload,
                     rkey, h->rkey_len, 1, pull_now);
        return;
    }
    queue_unexpected(h, body, body_len);
}

/* An EAGER, EAGER_SYNC or RTS that no posted receive wanted: keep its
 * envelope (and an eager payload) for a later receive or probe. */
static void queue_unexpected(const struct am_hdr *h, const unsigned char *body, size_t body_len)
{
    int pull_now = pulls_now(h);
    size_t keep = pull_now ? (size_t)h->size : h->type == AM_RTS ? 0 : body_len;
    struct am_unexp *u = hashi_buf_get(sizeof *u + keep);
    if (!u) {
        hashi_log("matching core: out of memory queueing an unexpected message of %zu bytes from rank %d", keep,
                  h->src_world);
        abort();
    }
    u->alloc = sizeof *u + keep;
    u->q.context_id = h->context_id;
    u->q.source = h->source;
    u->q.tag = h->tag;
    u->type = h->type;
    u->src_world = h->src_world;
    u->seq = h->seq;
    u->cancel_asked = 0;
    u->cookie = h->cookie;
    u->size = h->size;
    u->rkey_len = h->type == AM_RTS ? h->rkey_len : 0;
    u->pulling = 0;
    u->unread = 0;
    u->error = 0;
    u->req = NULL;
    if (u->rkey_len)
        memcpy(u->rkey, body, u->rkey_len);   /* an RTS carries its key where a payload would be */
    if (keep && !pull_now)
        memcpy(u->data, body, keep);
    if (hashi_mq_add_unexp(&core.mq, &u->q) != 0) {
        hashi_log("matching core: out of memory in the unexpected queue");
        abort();
    }
    if (pull_now)
        unread_add(u);   /* read by its receive, or by an idle pass */
}

int hashi_am_core_idle(void)
{
    struct am_unexp *u = TAILQ_FIRST(&core.unread);
    if (!u)
        return 0;
    unread_remove(u);
    u->pulling = 1;   /* before the get: the read may complete inside the call */
    if (core.am->get(u->src_world, u->data, (size_t)u->size, u->rkey, 0, unexp_pulled, u) != 0)
        unexp_pulled(u, -1);
    return 1;
}

static void stash_early(struct am_peer *peer, const struct am_hdr *h, const void *msg, size_t len)
{
    struct am_early *e = malloc(sizeof *e + len);
    if (!e) {
        hashi_log("matching core: out of memory holding an out-of-order message from rank %d", h->src_world);
        abort();
    }
    e->seq = h->seq;
    e->len = len;
    memcpy(e->msg, msg, len);
    uint32_t dist = h->seq - peer->recv_seq;
    struct am_early **pp = &peer->early;
    while (*pp && (*pp)->seq - peer->recv_seq < dist)
        pp = &(*pp)->next;
    e->next = *pp;
    *pp = e;
}

static int parse(const void *msg, size_t len, struct am_hdr *h)
{
    if (len < AM_SHORT_HDR)
        return -1;
    memcpy(h, msg, AM_SHORT_HDR);
    if (h->type == AM_EAGER) {
        h->cookie = h->cookie2 = 0;
        h->size = len - AM_SHORT_HDR;
    } else {
        if (len < sizeof *h)
            return -1;
        memcpy(h, msg, sizeof *h);
    }
    if (h->src_world < 0 || h->src_world >= core.npeers)
        return -1;
    if ((h->type == AM_RTS || h->type == AM_CTS) && (h->rkey_len > HASHI_AM_RKEY_MAX || len < sizeof *h + h->rkey_len))
        return -1;
    if (h->type == AM_EAGER_SYNC && len - sizeof *h != h->size)
        return -1;  /* the payload is exactly the size it claims */
    return 0;
}

static void ann_drop(struct am_peer *peer);
static struct MPI_ABI_Request *ann_passed(struct am_peer *peer);
static void complete_cancelled_recv(struct MPI_ABI_Request *req);
static void ann_claimed(int src, struct MPI_ABI_Request *req);
static int cancelled_in_flight(struct am_peer *peer, const struct am_hdr *h);

/* Hand over the early arrivals from peer that are now in turn. Each is
 * counted before it is matched (as every arrival): a receive its
 * completion posts then sees the next sequence number as the next. */
static void replay_early(struct am_peer *peer)
{
    while (peer->early && peer->early->seq == peer->recv_seq) {
        struct am_early *e = peer->early;
        peer->early = e->next;
        struct am_hdr eh;
        parse(e->msg, e->len, &eh);   /* checked when it arrived */
        struct MPI_ABI_Request *cancelled = NULL;
        if (peer->ann_req && eh.seq == peer->ann_seq)
            cancelled = ann_passed(peer);
        peer->recv_seq++;
        size_t hl = am_hdr_len(eh.type);
        if (!peer->cancels || !cancelled_in_flight(peer, &eh))
            arrival(&eh, e->msg + hl, e->len - hl);
        free(e);
        if (cancelled)
            complete_cancelled_recv(cancelled);
    }
}

static void ordered_arrival(const struct am_hdr *h, const unsigned char *msg, size_t len)
{
    struct am_peer *peer = &core.peers[h->src_world];
    if (h->seq != peer->recv_seq) {
        stash_early(peer, h, msg, len);
        return;
    }
    struct MPI_ABI_Request *cancelled = NULL;
    if (peer->ann_req && h->seq == peer->ann_seq)
        cancelled = ann_passed(peer);   /* message k came the usual way: no claim can follow */
    /* Counted before it is matched: a receive that its completion posts
     * (a schedule's next step) must not announce for this message. */
    peer->recv_seq++;
    size_t hl = am_hdr_len(h->type);
    if (!peer->cancels || !cancelled_in_flight(peer, h))
        arrival(h, msg + hl, len - hl);
    if (cancelled)
        complete_cancelled_recv(cancelled);
    replay_early(peer);
}

/* ------------------------------------------------------------- send cancel */

/*
 * MPI_Cancel of a send (am_cancel_send): the sender asks the receiver with
 * CANCEL (the message's envelope and sequence number, the sender's cookie),
 * and the receiver answers CANCEL_YES (removed: it was not matched, and
 * nothing else about the message follows: no ACK, FIN or CTS) or
 * CANCEL_NO (matched: the message is delivered, and its usual answers
 * follow). The send completes when the answer and everything else it
 * waits for are in; cancelled after a yes. Where the message is:
 *   - arrived and unexpected (sequence number below recv_seq, in its
 *     source's bin of the unexpected queue): removed, yes. A busy pull being
 *     read into its unexpected buffer leaves the queues at once and is
 *     answered when the read is over (the sender's buffer is in use till
 *     then); one not read yet just goes;
 *   - arrived and matched (or taken by Mprobe): not in the queue, no;
 *   - not arrived yet (in flight behind the cancel, or early in the
 *     stash): the cancel waits in the peer's list and the message is
 *     dropped when its turn comes (it is counted in the order like any
 *     other), yes. Nothing can match it before then.
 * The device's flow control is untouched: an eager message was drained
 * from its ring (credits returned) like any other; only the core's copy
 * is freed.
 */

/* Receiver: message h (in sequence order) was cancelled before it came. */
static int cancelled_in_flight(struct am_peer *peer, const struct am_hdr *h)
{
    for (struct am_cancel **pp = &peer->cancels; *pp; pp = &(*pp)->next) {
        struct am_cancel *c = *pp;
        if (c->seq != h->seq)
            continue;
        *pp = c->next;
        send_control(h->src_world, AM_CANCEL_YES, c->cookie, 0, 0, NULL, NULL);
        free(c);
        return 1;
    }
    return 0;
}

static int unexp_is_message(const struct hashi_mq_unexp *q, const void *arg)
{
    const struct am_unexp *u = container_of(q, const struct am_unexp, q);
    const struct am_hdr *h = arg;
    return u->src_world == h->src_world && u->seq == h->seq;
}

/* Receiver: a sender asks to cancel its message h->seq. */
static void cancel_arrival(const struct am_hdr *h)
{
    struct am_peer *peer = &core.peers[h->src_world];
    if ((int32_t)(h->seq - peer->recv_seq) >= 0) {
        struct am_cancel *c = malloc(sizeof *c);
        if (!c) {
            hashi_log("matching core: out of memory holding a cancel from rank %d", h->src_world);
            abort();
        }
        c->seq = h->seq;
        c->cookie = h->cookie;
        c->next = peer->cancels;
        peer->cancels = c;
        return;
    }
    struct hashi_mq_unexp *q = hashi_mq_take_unexp(&core.mq, h->context_id, h->source, unexp_is_message, h);
    if (!q) {
        send_control(h->src_world, AM_CANCEL_NO, h->cookie, 0, 0, NULL, NULL);
        return;
    }
    struct am_unexp *u = container_of(q, struct am_unexp, q);
    if (u->pulling) {
        u->cancel_asked = 1;   /* unexp_pulled answers */
        u->cancel_cookie = h->cookie;
        return;
    }
    if (u->unread) {
        unread_remove(u);
        peer->pulls_in--;
    }
    unexp_free(u);
    send_control(h->src_world, AM_CANCEL_YES, h->cookie, 0, 0, NULL, NULL);
}

/* Sender: the receiver's verdict on our cancel. */
static void cancel_answered(struct MPI_ABI_Request *req, int removed, int src)
{
    struct am_send_state *s = send_state(req);
    if (!(s->waiting & WAIT_CANCEL)) {
        hashi_log("matching core: rank %d answered a cancel that was not asked", src);
        return;
    }
    if (!removed) {
        send_progressed(req, WAIT_CANCEL);
        return;
    }
    /* Removed unmatched: no ACK, FIN or CTS will come; only our own
     * device's reading of the buffer (WAIT_LOCAL) may still be under way. */
    s->cancelled = 1;
    s->error = MPI_SUCCESS;
    send_progressed(req, WAIT_CANCEL | WAIT_ACK | WAIT_FIN | WAIT_CTS);
}

/* The p2p table's cancel_send: req is incomplete (still under way, or
 * reopened by the MPI layer after an eager send's local completion). */
static int am_cancel_send(struct MPI_ABI_Request *req)
{
    struct am_send_state *s = send_state(req);
    /* Nothing on the wire to name, or matched from the start (a claimed
     * announcement), or failed: it completes as it would have. */
    if (!s->on_wire || s->claimed || s->error) {
        if (!s->waiting)
            complete_send(req);
        return 0;
    }
    if (!s->cookie) {
        s->cookie = hashi_cookie_new(&core.cookies, req);   /* an eager send has none */
        if (!s->cookie) {
            if (!s->waiting)
                complete_send(req);
            return 0;
        }
    }
    struct am_hdr h = {
        .type = AM_CANCEL, .src_world = hashi_job.rank, .context_id = req->context_id,
        .source = req->my_comm_rank, .tag = req->tag, .seq = s->seq, .cookie = s->cookie,
    };
    s->waiting |= WAIT_CANCEL;
    if (core.am->send(req->dest_world, &h, sizeof h, NULL, 0, HASHI_AM_SEND_BUFFERED, NULL, NULL) != 0) {
        hashi_log("matching core: asking rank %d to cancel a message failed; it is not cancelled", req->dest_world);
        send_progressed(req, WAIT_CANCEL);
        return 0;
    }
    return 1;
}

/* --------------------------------------------------------- sender answers */

static void frag_done(void *arg, int status);

/* Receive-first: one piece of the put; the last one carries PUT_DONE and
 * leaves only after every other piece has landed, so its notice means all of
 * the data is there. Returns 0 if the piece must wait. */
static int put_piece(struct MPI_ABI_Request *req)
{
    struct am_send_state *s = send_state(req);
    uint64_t left = s->want - s->sent;
    size_t piece = left < core.am->max_put ? (size_t)left : core.am->max_put;
    int last = piece == left;
    if (last && s->frags_out > 0)
        return 0;
    uint64_t offset = s->sent;
    s->frags_out++;
    s->sent += piece;
    if (core.am->put(req->dest_world, (const char *)req->dev_buf + offset, piece, s->put_rkey, offset,
                     last ? notice_value(s->put_notice, s->peer_cookie) : 0, frag_done, req) != 0) {
        s->frags_out--;
        s->error = MPI_ERR_OTHER;
        hashi_log("matching core: writing a rendezvous message to rank %d failed", req->dest_world);
    }
    return 1;
}

/* Keep up to RNDV_WINDOW fragments or puts in flight (same nesting rule as
 * rndv_get_more). */
static void stream_more(struct MPI_ABI_Request *req)
{
    struct am_send_state *s = send_state(req);
    if (s->busy) {
        s->again = 1;
        return;
    }
    s->busy = 1;
    do {
        s->again = 0;
        while (s->sent < s->want && s->frags_out < RNDV_WINDOW && !s->error) {
            if (s->put_rkey_len) {
                if (!put_piece(req))
                    break;
                continue;
            }
            uint64_t left = s->want - s->sent;
            size_t n = left < core.frag_payload ? (size_t)left : core.frag_payload;
            uint64_t offset = s->sent;
            struct am_hdr h = {
                .type = AM_DATA, .src_world = hashi_job.rank, .cookie2 = s->peer_cookie, .size = offset,
            };
            s->frags_out++;
            s->sent += n;
            if (core.am->send(req->dest_world, &h, sizeof h, (const char *)req->dev_buf + offset, n, 0, frag_done,
                              req) != 0) {
                s->frags_out--;
                s->error = MPI_ERR_OTHER;
            }
        }
    } while (s->again);
    s->busy = 0;
    if (s->frags_out == 0 && (s->sent == s->want || s->error))
        send_progressed(req, WAIT_LOCAL);
}

static void frag_done(void *arg, int status)
{
    struct MPI_ABI_Request *req = arg;
    struct am_send_state *s = send_state(req);
    s->frags_out--;
    if (status != 0 && !s->error)
        s->error = MPI_ERR_OTHER;
    stream_more(req);
}

/* A split's receiver finished reading its part. Notices are not ordered with
 * messages, so this may overtake the CTS: the send then waits for the CTS
 * instead (the put is still to do). */
static void split_fin_arrived(struct MPI_ABI_Request *req)
{
    struct am_send_state *s = send_state(req);
    if (!s->put_rkey_len) {
        s->split_fin = 1;
        s->waiting = (s->waiting & ~WAIT_FIN) | WAIT_CTS;
        return;
    }
    send_progressed(req, WAIT_FIN);
}

static void control_arrival(const struct am_hdr *h, const unsigned char *body, size_t body_len)
{
    struct MPI_ABI_Request *req = hashi_cookie_get(&core.cookies, h->type == AM_DATA ? h->cookie2 : h->cookie);
    if (!req) {
        hashi_log("matching core: control message %u from rank %d names no pending request", h->type, h->src_world);
        return;
    }
    switch (h->type) {
    case AM_ACK:
        send_progressed(req, WAIT_ACK);
        break;
    case AM_FIN:
        send_progressed(req, WAIT_FIN);
        break;
    case AM_FIN_SPLIT:
        split_fin_arrived(req);
        break;
    case AM_CANCEL_YES:
    case AM_CANCEL_NO:
        cancel_answered(req, h->type == AM_CANCEL_YES, h->src_world);
        break;
    case AM_CTS: {
        struct am_send_state *s = send_state(req);
        s->peer_cookie = h->cookie2;
        s->want = h->size < req->dev_bytes ? h->size : req->dev_bytes;
        uint64_t from = 0;
        if (h->rkey_len && body_len >= (size_t)h->rkey_len + sizeof from)
            memcpy(&from, body + h->rkey_len, sizeof from);
        s->sent = from < s->want ? from : s->want;
        s->frags_out = 0;
        s->busy = s->again = 0;
        s->put_rkey_len = h->rkey_len;
        s->put_notice = AM_PUT_DONE;
        if (h->rkey_len) {
            if (!core.use_put || body_len < h->rkey_len) {
                hashi_log("matching core: rank %d offered a buffer for a put this device cannot do", h->src_world);
                s->error = MPI_ERR_OTHER;
                s->want = 0;
            }
            memcpy(s->put_rkey, body, h->rkey_len);
        }
        /* Receive-first answers a keyed RTS too: no FIN follows then, unless
         * the receiver reads [0, from) itself (split). */
        unsigned fin = from && !s->split_fin ? WAIT_FIN : 0;
        s->waiting = (s->waiting & ~(WAIT_CTS | WAIT_FIN)) | WAIT_LOCAL | fin;
        stream_more(req);
        break;
    }
    case AM_DATA: {
        struct am_recv_state *r = recv_state(req);
        uint64_t offset = h->size;
        if (offset > r->want || body_len > r->want - offset) {
            hashi_log("matching core: fragment from rank %d outside its message", h->src_world);
            return;
        }
        memcpy((char *)req->dev_buf + offset, body, body_len);
        r->landed += body_len;
        if (r->landed == r->want)
            complete_recv(req);
        break;
    }
    default:
        break;
    }
}

/*
 * A standard eager message that arrived in order: nearly every small
 * message. Straight into its posted receive (or the unexpected queue),
 * without the general path's parse, per-type dispatch and receive-state
 * fields (nothing reads them after an eager completion). Returns 0, having
 * done nothing, when the message is out of order, early ones wait or the
 * sender is out of range: the general path handles those.
 */
static inline int eager_in_order(const unsigned char *msg, size_t len)
{
    struct am_hdr h;
    memcpy(&h, msg, AM_SHORT_HDR);
    if ((uint32_t)h.src_world >= (uint32_t)core.npeers)
        return 0;
    struct am_peer *peer = &core.peers[h.src_world];
    if (h.seq != peer->recv_seq || peer->early || peer->cancels || (peer->ann_req && h.seq == peer->ann_seq))
        return 0;   /* (message k of an announcement: the general path ends it) */
    peer->recv_seq++;
    struct hashi_mq_posted *p = hashi_mq_match_arrival(&core.mq, h.context_id, h.source, h.tag);
    if (!p) {
        h.cookie = h.cookie2 = 0;
        h.size = len - AM_SHORT_HDR;
        queue_unexpected(&h, msg + AM_SHORT_HDR, len - AM_SHORT_HDR);
        return 1;
    }
    struct MPI_ABI_Request *req = req_of_recv(container_of(p, struct am_recv_state, posted));
    size_t size = len - AM_SHORT_HDR, want = size < req->dev_bytes ? size : req->dev_bytes;
    hashi_copy(req->dev_buf, msg + AM_SHORT_HDR, want);
    recv_finish(req, h.source, h.tag, size, want, 0);
    return 1;
}

void hashi_am_deliver(const void *msg, size_t len)
{
    if (len >= AM_SHORT_HDR && *(const uint8_t *)msg == AM_EAGER && eager_in_order(msg, len))
        return;
    struct am_hdr h;
    if (parse(msg, len, &h) != 0) {
        hashi_log("matching core: dropping a malformed message of %zu bytes", len);
        return;
    }
    const unsigned char *bytes = msg;
    switch (h.type) {
    case AM_EAGER:
    case AM_EAGER_SYNC:
    case AM_RTS:
        ordered_arrival(&h, bytes, len);
        break;
    case AM_ACK:
    case AM_FIN:
    case AM_FIN_SPLIT:
    case AM_CTS:
    case AM_DATA:
    case AM_CANCEL_YES:
    case AM_CANCEL_NO:
        control_arrival(&h, bytes + sizeof h, len - sizeof h);
        break;
    case AM_CANCEL:
        cancel_arrival(&h);
        break;
    default:
        hashi_log("matching core: dropping a message of unknown type %u from rank %d", h.type, h.src_world);
    }
}

/* ------------------------------------------ receive-first announcements */

/*
 * Receiver r, sender s, per pair at most one announcement outstanding.
 *
 * When. A receive R from s (never MPI_ANY_SOURCE) announces when it is
 * posted, if: s takes announcements (hashi_am_core_set_peer_announce), R's
 * buffer is above s's eager limit and at most ann_max, no announcement to s
 * is outstanding, no early message from s waits in the stash, and no
 * receive posted before R that a message R matches could go to (its bin,
 * the context's ANY_SOURCE list: hashi_mq_posted_first). No unexpected
 * message matches R (it would have been taken instead of posting). Then
 * every message from s before k = recv_seq has arrived and been matched,
 * so if message k matches R it goes to R: nothing posted earlier wants it,
 * anything posted later comes after R.
 *
 * Binding. The announcement names k; the sender claims it only for its
 * message k, only if the envelope matches (context, source, tag or
 * ANY_TAG), and only with the device's atomic claim. It is dead as soon as
 * message k was sent either way: the sender never looks at it again.
 *
 * Ends. (a) Claimed: ANN_DONE arrives once the data is visible; R completes
 * with the claim's tag and size (MPI_ERR_TRUNCATE past the capacity: only
 * capacity bytes were put), leaves the queue, and counts as the arrival of
 * message k, so stashed later messages follow it in order. (b) Message k
 * arrives the usual way: the sender passed it without claiming; R stays
 * posted like any receive (ann_passed). (c) MPI_Cancel: revoke; if the
 * sender claimed first, the cancel fails and (a) completes R. A device that
 * has to ask the sender (fabric: no remote compare-and-swap) answers later:
 * the sender withdrew it (hashi_am_ann_revoked: R cancelled), or (a), or
 * (b), which then cancels R before k is matched (no claim can follow any
 * more). It never waits for the sender.
 * While outstanding, R can only match message k (every
 * earlier message from s has arrived, later ones come after k), so (a),
 * (b) or (c) always ends it.
 */

/* (b) Message k arrived the usual way (not matched yet): the announcement
 * is over. A cancel asked meanwhile (ann_revoking) succeeds now: R leaves
 * the queue before k is matched, so k cannot take it; the caller completes
 * it once k is matched and counted (its completion may post receives),
 * and the sender's late answer finds nothing asked. */
static __attribute__((noinline)) struct MPI_ABI_Request *ann_passed(struct am_peer *peer)
{
    struct MPI_ABI_Request *req = peer->ann_req;
    int cancel = peer->ann_revoking;
    ann_drop(peer);
    if (cancel && hashi_mq_cancel(&core.mq, &recv_state(req)->posted))
        return req;
    return NULL;
}

/* The outstanding announcement to this peer is over without a claim. */
static void ann_drop(struct am_peer *peer)
{
    struct am_recv_state *r = recv_state(peer->ann_req);
    if (r->cookie)
        hashi_cookie_free(&core.cookies, r->cookie);
    r->cookie = 0;
    buf_dereg(peer->ann_req, peer->ann_mem);
    peer->ann_mem = NULL;
    peer->ann_req = NULL;
    peer->ann_revoking = 0;
}

/* Announce a receive just posted, if nothing could mis-match (above). */
static __attribute__((noinline)) void maybe_announce(struct MPI_ABI_Request *req)
{
    int src = req->dest_world;
    if (src < 0 || src >= core.npeers)
        return;
    struct am_peer *peer = &core.peers[src];
    struct am_recv_state *r = recv_state(req);
    /* (eager_limit: ours towards it, equal both ways between emu peers) */
    if (!peer->ann_max || peer->ann_req || peer->early || req->dev_bytes <= peer->eager_limit ||
        req->dev_bytes > peer->ann_max || !hashi_mq_posted_first(&core.mq, &r->posted))
        return;
    struct hashi_am_ann a = {
        .context_id = req->match.context_id, .source = req->match.source, .tag = req->match.tag,
        .seq = peer->recv_seq, .capacity = req->dev_bytes,
    };
    void *mem;
    if (buf_reg(req, req->dev_bytes, src, &mem, a.rkey) != 0)
        return;
    a.cookie = hashi_cookie_new(&core.cookies, req);
    if (!a.cookie || core.ann->publish(src, &a) != 0) {
        if (a.cookie)
            hashi_cookie_free(&core.cookies, a.cookie);
        buf_dereg(req, mem);
        return;
    }
    r->cookie = a.cookie;
    peer->ann_req = req;
    peer->ann_mem = mem;
    peer->ann_seq = a.seq;
    peer->ann_revoking = 0;
}

/* (a) The sender claimed our announcement and its data is there. */
static void ann_claimed(int src, struct MPI_ABI_Request *req)
{
    struct am_peer *peer = &core.peers[src];
    struct am_recv_state *r = recv_state(req);
    if (peer->ann_req != req) {
        hashi_log("matching core: rank %d completed an announcement that is not outstanding", src);
        return;
    }
    if (peer->recv_seq != peer->ann_seq)
        hashi_log("matching core: rank %d's claimed message %" PRIu32 " is not the next expected (%" PRIu32 ")",
                  src, peer->ann_seq, peer->recv_seq);
    int32_t tag;
    uint64_t size;
    core.ann->result(src, &tag, &size);
    if (!hashi_mq_cancel(&core.mq, &r->posted))
        hashi_log("matching core: an announced receive from rank %d was not queued any more", src);
    r->mem = peer->ann_mem;   /* complete_recv releases it, and the cookie */
    peer->ann_mem = NULL;
    peer->ann_req = NULL;
    peer->ann_revoking = 0;   /* a cancel asked for meanwhile failed */
    r->peer_world = src;
    r->source = req->match.source;
    r->tag = tag;
    r->size = size;
    r->want = size < req->dev_bytes ? size : req->dev_bytes;
    r->error = 0;
    peer->recv_seq++;   /* message k arrived, before anything its completion posts */
    complete_recv(req);
    replay_early(peer);
}

/* (c) Withdraw req's announcement, if it has one. 1: none (any more); 0:
 * the sender claimed it, the receive completes when its data is there, or
 * the device asked the sender, whose answer (hashi_am_ann_revoked) or claim
 * (ANN_DONE) completes it later, from progress, or message k arriving the
 * usual way does (ann_passed). R stays posted meanwhile, but can match
 * only message k, and ann_passed takes it off before k is matched. */
static int ann_revoke(struct MPI_ABI_Request *req)
{
    int src = req->dest_world;
    if (src < 0 || src >= core.npeers || core.peers[src].ann_req != req)
        return 1;
    struct am_peer *peer = &core.peers[src];
    if (peer->ann_revoking)
        return 0;
    switch (core.ann->revoke(src)) {
    case HASHI_AM_ANN_REVOKED:
        ann_drop(peer);
        return 1;
    case HASHI_AM_ANN_ASKED:
        peer->ann_revoking = 1;
        return 0;
    default:
        return 0;
    }
}

static void complete_cancelled_recv(struct MPI_ABI_Request *req)
{
    req->status.MPI_SOURCE = MPI_ANY_SOURCE;
    req->status.MPI_TAG = MPI_ANY_TAG;
    req->status.MPI_ERROR = MPI_SUCCESS;
    hashi_status_set_bytes(&req->status, 0);
    hashi_status_set_cancelled(&req->status, 1);
    hashi_request_complete(req);
}

int hashi_am_ann_revoked(int src)
{
    if (src < 0 || src >= core.npeers)
        return 0;
    struct am_peer *peer = &core.peers[src];
    struct MPI_ABI_Request *req = peer->ann_req;
    if (!req || !peer->ann_revoking)
        return 0;   /* message k came the usual way first: the announcement is over */
    ann_drop(peer);
    if (!hashi_mq_cancel(&core.mq, &recv_state(req)->posted)) {
        hashi_log("matching core: a receive announced to rank %d was not queued any more", src);
        return 0;
    }
    complete_cancelled_recv(req);
    return 1;
}

/* Sender: message h (sequence send_seq, a rendezvous) to req->dest_world
 * goes into the receiver's announced buffer if one waits for it. 1: claimed,
 * the put is under way (the send completes when it is done); 0: send it the
 * usual way. */
static __attribute__((noinline)) int ann_try_claim(struct MPI_ABI_Request *req, const struct am_hdr *h)
{
    int dest = req->dest_world;
    struct am_peer *peer = &core.peers[dest];
    struct hashi_am_ann a;
    if (!core.ann->peek(dest, peer->send_seq, &a))
        return 0;
    if (a.context_id != h->context_id || a.source != h->source || (a.tag != MPI_ANY_TAG && a.tag != h->tag) ||
        a.capacity == 0)
        return 0;
    if (!core.ann->claim(dest, &a, h->tag, h->size))
        return 0;
    peer->send_seq++;   /* message k went */
    struct am_send_state *s = send_state(req);
    s->claimed = 1;
    s->want = h->size < a.capacity ? h->size : a.capacity;
    s->sent = 0;
    s->frags_out = 0;
    s->busy = s->again = 0;
    s->peer_cookie = a.cookie;
    s->put_rkey_len = (uint8_t)core.am->rkey_size;
    s->put_notice = AM_ANN_DONE;
    memcpy(s->put_rkey, a.rkey, core.am->rkey_size);
    s->waiting = WAIT_LOCAL;
    stream_more(req);
    return 1;
}

void hashi_am_deliver_notice(int src, uint64_t value)
{
    uint8_t type = (uint8_t)(value >> 32);
    uint32_t cookie = (uint32_t)value;
    struct MPI_ABI_Request *req = hashi_cookie_get(&core.cookies, cookie);
    if (!req || value >= HASHI_AM_NOTICE_LIMIT) {
        hashi_log("matching core: notice %#" PRIx64 " from rank %d names no pending request", value, src);
        return;
    }
    switch (type) {
    case AM_ACK:
        send_progressed(req, WAIT_ACK);
        break;
    case AM_FIN:
        send_progressed(req, WAIT_FIN);
        break;
    case AM_FIN_SPLIT:
        split_fin_arrived(req);
        break;
    case AM_PUT_DONE:
        recv_state(req)->landed = recv_state(req)->want;
        recv_part_done(req);
        break;
    case AM_ANN_DONE:
        ann_claimed(src, req);
        break;
    case AM_CANCEL_YES:
    case AM_CANCEL_NO:
        cancel_answered(req, type == AM_CANCEL_YES, src);
        break;
    default:
        hashi_log("matching core: dropping a notice of unknown type %u from rank %d", type, src);
    }
}

/* ---------------------------------------------------------- p2p entry points */

/* An eager copy is in the transport's hands: the standard send is complete
 * (unless a cancel waits for its answer). */
static void eager_done(void *arg, int status)
{
    struct MPI_ABI_Request *req = arg;
    if (status != 0)
        send_state(req)->error = MPI_ERR_OTHER;
    send_progressed(req, WAIT_LOCAL);
}

static void eager_sync_done(void *arg, int status)
{
    struct MPI_ABI_Request *req = arg;
    if (status != 0)
        send_state(req)->error = MPI_ERR_OTHER;
    send_progressed(req, WAIT_LOCAL);
}

/* Whether an eager message of len bytes to dest goes without the device's
 * copy (the request completes when the device is done reading the buffer). */
static inline int eager_in_place(int dest, size_t len)
{
    size_t min = core.peers[dest].in_place_min;
    return min && len >= min;
}

/* The flags of an eager send of len bytes to dest: may the device refuse to
 * queue? must it copy? */
static inline unsigned eager_flags(int dest, size_t len)
{
    unsigned copy = eager_in_place(dest, len) ? 0 : HASHI_AM_SEND_BUFFERED;
    return core.busy_pull_min && len >= core.busy_pull_min ? copy | HASHI_AM_SEND_NOWAIT : copy;
}

/*
 * Both ways at once: the destination's own messages to us are under way,
 * waiting to be read (pulls_in) or not yet taken from the device
 * (pending_from), so both cores have copies to make. An eager message of
 * bidir_pull_min or more then goes as AM_PULL_NOW: the receiver reads it
 * once, where the ring costs a copy on each side
 * (hashi_am_core_set_bidir_pull). Only traffic seen counts, never a
 * posted receive: in a ping-pong whose receive is posted before the send
 * nothing comes back until the peer has our message, and two copies on two
 * cores in turn beat one read there (32 / 64 KiB: 6.1 / 9.6 us against
 * 7.2 / 11.9).
 */
static inline int bidir_pull(int dest, size_t len)
{
    const struct am_peer *peer = &core.peers[dest];
    return peer->bidir_pull_min && len >= peer->bidir_pull_min &&
           (peer->pulls_in || (core.am->pending_from && core.am->pending_from(dest)));
}

/* Recompute peer's plain_max after a change of any limit it folds in. */
static void plain_update(struct am_peer *peer)
{
    size_t max = peer->eager_limit;
    size_t below[3] = { peer->in_place_min, core.busy_pull_min, peer->bidir_pull_min };
    for (int i = 0; i < 3; i++)
        if (below[i] && below[i] - 1 < max)
            max = below[i] - 1;
    peer->plain_max = max;
}

/* Announce req's message (h: envelope filled) by RTS, with a key to its
 * buffer when the device can register it. pull_now (PULL_BUSY, PULL_BIDIR):
 * an eager message that the receiver reads on arrival; without a key it is
 * not sent (returns 1: the caller sends it eagerly after all). */
static int send_rts(struct MPI_ABI_Request *req, struct am_hdr *h, enum pull_why pull_now)
{
    struct am_send_state *s = send_state(req);
    struct am_peer *peer = &core.peers[req->dest_world];
    unsigned char wire[sizeof *h + HASHI_AM_RKEY_MAX];
    size_t hdr_len = sizeof *h;
    s->waiting = WAIT_CTS;
    h->rkey_len = 0;
    if (core.use_get && buf_reg(req, h->size, req->dest_world, &s->mem, wire + sizeof *h) == 0) {
        h->rkey_len = (uint8_t)core.am->rkey_size;
        hdr_len += core.am->rkey_size;
        s->waiting = WAIT_FIN;
    } else {
        s->mem = NULL;
        if (pull_now)
            return 1;
    }
    s->cookie = hashi_cookie_new(&core.cookies, req);
    if (!s->cookie) {
        if (s->mem)
            buf_dereg(req, s->mem);
        s->mem = NULL;
        return MPI_ERR_NO_MEM;
    }
    h->type = AM_RTS;
    h->flags = pull_now ? AM_PULL_NOW : 0;
    h->cookie = s->cookie;
    h->seq = peer->send_seq++;
    s->seq = h->seq;
    s->on_wire = 1;
    /* The RTS goes out as one buffer: header then key. */
    memcpy(wire, h, sizeof *h);
    if (core.am->send(req->dest_world, wire, hdr_len, NULL, 0, HASHI_AM_SEND_BUFFERED, NULL, NULL) != 0) {
        peer->send_seq--;
        s->on_wire = 0;
        if (s->mem)
            buf_dereg(req, s->mem);
        s->mem = NULL;
        hashi_cookie_free(&core.cookies, s->cookie);
        s->cookie = 0;
        return MPI_ERR_OTHER;
    }
    if (pull_now == PULL_BUSY)
        hashi_am_busy_pulls++;
    else if (pull_now == PULL_BIDIR)
        hashi_am_bidir_pulls++;
    s->rndv = 1;
    peer->rndv_out++;
    return MPI_SUCCESS;
}

/* req's message as one EAGER (h: envelope filled); the device's answer
 * (0, or -EAGAIN under HASHI_AM_SEND_NOWAIT, or another error). */
static int send_eager(struct MPI_ABI_Request *req, struct am_hdr *h, unsigned flags)
{
    struct am_peer *peer = &core.peers[req->dest_world];
    struct am_send_state *s = send_state(req);
    h->type = AM_EAGER;
    h->flags = 0;
    h->seq = peer->send_seq++;
    s->seq = h->seq;
    s->on_wire = 1;
    s->waiting = WAIT_LOCAL;
    int rc = core.am->send(req->dest_world, h, AM_SHORT_HDR, req->dev_buf, req->dev_bytes, flags, eager_done, req);
    if (rc != 0) {
        peer->send_seq--;
        s->on_wire = 0;
    }
    return rc;
}

static int am_isend(struct MPI_ABI_Request *req)
{
    struct am_send_state *s = send_state(req);
    memset(s, 0, sizeof *s);
    if (req->dest_world < 0 || req->dest_world >= core.npeers)
        return MPI_ERR_RANK;
    if (req->tag < 0)
        return MPI_ERR_TAG;
    size_t len = req->dev_bytes;
    struct am_hdr h;
    memset(&h, 0, sizeof h);
    h.src_world = hashi_job.rank;
    h.context_id = req->context_id;
    h.source = req->my_comm_rank;
    h.tag = req->tag;
    h.size = len;
    struct am_peer *peer = &core.peers[req->dest_world];

    if (len <= peer->eager_limit) {
        if (req->send_mode != HASHI_SEND_SYNC) {
            if (bidir_pull(req->dest_world, len)) {
                int rc = send_rts(req, &h, PULL_BIDIR);
                if (rc != 1)
                    return rc;
            }
            unsigned flags = eager_flags(req->dest_world, len);
            int rc = send_eager(req, &h, flags);
            if (rc != -EAGAIN || !(flags & HASHI_AM_SEND_NOWAIT))
                return rc == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
            /* The device would have queued a copy: let the receiver read it. */
            rc = send_rts(req, &h, PULL_BUSY);
            if (rc != 1)
                return rc;
            return send_eager(req, &h, flags & HASHI_AM_SEND_BUFFERED) == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
        }
        s->cookie = hashi_cookie_new(&core.cookies, req);
        if (!s->cookie)
            return MPI_ERR_NO_MEM;
        h.type = AM_EAGER_SYNC;
        h.cookie = s->cookie;
        h.seq = peer->send_seq++;
        s->seq = h.seq;
        s->on_wire = 1;
        s->waiting = WAIT_LOCAL | WAIT_ACK;
        if (core.am->send(req->dest_world, &h, sizeof h, req->dev_buf, len, 0, eager_sync_done, req) != 0) {
            peer->send_seq--;
            s->on_wire = 0;
            hashi_cookie_free(&core.cookies, s->cookie);
            s->cookie = 0;
            return MPI_ERR_OTHER;
        }
        return MPI_SUCCESS;
    }

    if (peer->ann_max && ann_try_claim(req, &h))
        return MPI_SUCCESS;
    return send_rts(req, &h, PULL_NO);
}

/* The blocking standard send of an eager message: the same EAGER message
 * am_isend sends, handed to the device as buffered (it copies what it must
 * queue), so it is complete at once and needs no request. */
static int am_send_now(const void *buf, size_t len, int dest_world, int tag, uint32_t context_id,
                       int my_comm_rank)
{
    if ((unsigned)dest_world >= (unsigned)core.npeers)
        return MPI_ERR_RANK;
    if (tag < 0)
        return MPI_ERR_TAG;
    struct am_peer *peer = &core.peers[dest_world];
    struct am_hdr h = {
        .type = AM_EAGER, .src_world = hashi_job.rank, .context_id = context_id, .source = my_comm_rank,
        .tag = tag, .seq = peer->send_seq, .size = len,
    };
    unsigned flags = HASHI_AM_SEND_BUFFERED;
    if (__builtin_expect(len <= peer->plain_max && len < core.stage_payload_lim, 1)) {
        /* Built once, in the device's buffer. */
        unsigned char *stage = core.am->stage;
        memcpy(stage, &h, AM_SHORT_HDR);
        hashi_copy(stage + AM_SHORT_HDR, buf, len);
        if (core.am->send_staged(dest_world, AM_SHORT_HDR + len) != 0)
            return MPI_ERR_OTHER;
        peer->send_seq++;
        return MPI_SUCCESS;
    }
    if (__builtin_expect(len > peer->plain_max, 0)) {
        /* Near a limit: the full tests (the traffic decides a bidirectional pull). */
        if (len > peer->eager_limit)
            return HASHI_DEVICE_P2P_DECLINE;
        if (bidir_pull(dest_world, len) || eager_in_place(dest_world, len))
            return HASHI_DEVICE_P2P_DECLINE;   /* the request path sends it as a pull, or in place */
        flags = eager_flags(dest_world, len);
    }
    int rc = core.am->send(dest_world, &h, AM_SHORT_HDR, buf, len, flags, NULL, NULL);
    if (rc == -EAGAIN && (flags & HASHI_AM_SEND_NOWAIT))
        return HASHI_DEVICE_P2P_DECLINE;   /* the request path sends it as a busy pull */
    if (rc != 0)
        return MPI_ERR_OTHER;
    peer->send_seq++;
    return MPI_SUCCESS;
}

static int am_irecv(struct MPI_ABI_Request *req)
{
    struct am_recv_state *r = recv_state(req);
    /* Only what is read before a match sets it: a memset of the whole
     * state compiles to `rep stosq`, whose start-up alone cost every
     * receive more than the rest of this function. recv_matched and
     * rndv_recv_start set the envelope, sizes and transfer counters;
     * posting sets the queue links. */
    r->cookie = 0;
    r->error = 0;
    r->mem = NULL;
    r->rkey_len = 0;
    r->parts = r->busy = r->again = 0;
    r->gets_out = 0;
    r->issued = r->landed = 0;
    r->posted.queued = 0;   /* a cancel after an unexpected match finds nothing queued */
    struct am_unexp *u = (struct am_unexp *)hashi_mq_find_unexp(&core.mq, &req->match, 1);
    if (u) {
        recv_from_unexp(req, u);
        return MPI_SUCCESS;
    }
    r->posted.m = req->match;
    if (hashi_mq_post(&core.mq, &r->posted) != 0)
        return MPI_ERR_NO_MEM;
    if (req->dev_bytes > core.ann_floor && req->match.source >= 0)
        maybe_announce(req);   /* not for small receives: no call on their path */
    return MPI_SUCCESS;
}

/* Whether a persistent request of len bytes with peer (world rank, -1: any)
 * may ever register its buffer: a rendezvous (above an eager limit), or as
 * a sender, an eager message the receiver reads (busy or bidirectional pull). */
static int prepare_worth(int is_send, size_t len, int peer)
{
    if (!(core.use_get || core.use_put) || len == 0)
        return 0;
    if (peer >= 0) {
        const struct am_peer *pp = &core.peers[peer];
        if (len > pp->eager_limit)
            return 1;
        return is_send && ((core.busy_pull_min && len >= core.busy_pull_min) ||
                           (pp->bidir_pull_min && len >= pp->bidir_pull_min));
    }
    for (int i = 0; i < core.npeers; i++)
        if (len > core.peers[i].eager_limit)
            return 1;
    return 0;
}

/* psend_init / precv_init: prepare req's buffer, registered now or at its
 * first rendezvous (below). Nothing to prepare is a success too. */
static int am_prepare(struct MPI_ABI_Request *req, int is_send)
{
    int peer = req->dest_world;
    if (peer >= core.npeers || !prepare_worth(is_send, req->dev_bytes, peer))
        return MPI_SUCCESS;
    struct am_prepared *p = calloc(1, sizeof *p);
    if (!p)
        return MPI_ERR_NO_MEM;
    p->req = req;
    p->peer = -1;
    LIST_INSERT_HEAD(&prepared_list, p, link);
    req->dev_prepared = p;
    /* The key now only where every rendezvous will send it: a sender's RTS,
     * a receiver's CTS (not from peers read by get only, whose receivers
     * never offer their buffer). On failure the first rendezvous tries again. */
    if (peer >= 0 && req->dev_bytes > core.peers[peer].eager_limit &&
        (is_send ? core.use_get : core.use_put && !core.peers[peer].get_only))
        prepared_register(p, peer);
    return MPI_SUCCESS;
}

static int am_psend_init(struct MPI_ABI_Request *req)
{
    return am_prepare(req, 1);
}

static int am_precv_init(struct MPI_ABI_Request *req)
{
    return am_prepare(req, 0);
}

/* The request is destroyed: nothing of it is in flight any more. */
static void prepared_release(struct am_prepared *p)
{
    if (p->mem)
        core.am->mem_dereg(p->mem);
    LIST_REMOVE(p, link);
    p->req->dev_prepared = NULL;
    free(p);
}

static void am_pfree(struct MPI_ABI_Request *req)
{
    if (req->dev_prepared)
        prepared_release(req->dev_prepared);
}

static void fill_envelope(const struct am_unexp *u, struct hashi_envelope *env)
{
    env->source = u->q.source;
    env->tag = u->q.tag;
    env->bytes = u->size;
}

static int am_iprobe(const struct hashi_match *m, int *flag, struct hashi_envelope *env)
{
    core.am->progress();
    struct am_unexp *u = (struct am_unexp *)hashi_mq_find_unexp(&core.mq, m, 0);
    *flag = u != NULL;
    if (u && env)
        fill_envelope(u, env);
    return MPI_SUCCESS;
}

static int am_improbe(const struct hashi_match *m, int *flag, struct hashi_envelope *env,
                      struct hashi_message **msg)
{
    core.am->progress();
    struct am_unexp *u = (struct am_unexp *)hashi_mq_find_unexp(&core.mq, m, 1);
    *flag = u != NULL;
    if (u) {
        if (env)
            fill_envelope(u, env);
        *msg = (struct hashi_message *)u;
    }
    return MPI_SUCCESS;
}

static int am_imrecv(struct MPI_ABI_Request *req, struct hashi_message *msg)
{
    memset(recv_state(req), 0, sizeof(struct am_recv_state));
    recv_from_unexp(req, (struct am_unexp *)msg);
    return MPI_SUCCESS;
}

static int am_cancel_recv(struct MPI_ABI_Request *req)
{
    struct am_recv_state *r = recv_state(req);
    if (!r->posted.queued || !ann_revoke(req))
        return 0;
    if (!hashi_mq_cancel(&core.mq, &r->posted))
        return 0;
    complete_cancelled_recv(req);
    return 1;
}

int hashi_am_core_init(const struct hashi_am_ops *am, size_t eager_limit, enum hashi_am_rndv rndv,
                       char *err, size_t errlen)
{
    memset(&core, 0, sizeof core);
    TAILQ_INIT(&core.unread);
    hashi_am_unread_pulls = 0;
    if (am->max_send < HASHI_AM_MIN_SEND) {
        snprintf(err, errlen, "matching core: device %s sends at most %zu bytes per message (%d needed)", am->name,
                 am->max_send, HASHI_AM_MIN_SEND);
        return -1;
    }
    core.am = am;
    core.stage_payload_lim = am->stage && am->send_staged && am->stage_max >= AM_SHORT_HDR
                                 ? am->stage_max - AM_SHORT_HDR + 1 : 0;
    size_t room = am->max_send - sizeof(struct am_hdr);
    core.eager_limit = eager_limit < room ? eager_limit : room;
    core.frag_payload = room;
    int can_get = (am->flags & HASHI_AM_CAP_GET) && am->get && am->mem_reg && am->mem_dereg && am->max_get &&
                  am->rkey_size <= HASHI_AM_RKEY_MAX;
    if (rndv == HASHI_AM_RNDV_GET && !can_get) {
        snprintf(err, errlen, "matching core: rendezvous by get requested, but device %s cannot read remote memory",
                 am->name);
        return -1;
    }
    int can_put = (am->flags & HASHI_AM_CAP_PUT) && am->put && am->mem_reg && am->mem_dereg && am->max_put &&
                  am->rkey_size <= HASHI_AM_RKEY_MAX;
    if (rndv == HASHI_AM_RNDV_SPLIT && !(can_get && can_put)) {
        snprintf(err, errlen, "matching core: split rendezvous requested, but device %s cannot both read and write "
                 "remote memory", am->name);
        return -1;
    }
    if (rndv == HASHI_AM_RNDV_PUT && !can_put) {
        snprintf(err, errlen, "matching core: rendezvous by put requested, but device %s cannot write remote memory",
                 am->name);
        return -1;
    }
    core.rndv = rndv;
    core.use_get = (rndv == HASHI_AM_RNDV_AUTO || rndv == HASHI_AM_RNDV_GET || rndv == HASHI_AM_RNDV_SPLIT) && can_get;
    core.use_put = (rndv == HASHI_AM_RNDV_AUTO || rndv == HASHI_AM_RNDV_PUT || rndv == HASHI_AM_RNDV_SPLIT) && can_put;
    core.split_pull = 50;
    core.use_notice = (am->flags & HASHI_AM_CAP_NOTICE) && am->notice;
    /* Announcements need a put whose notice follows the data. */
    core.ann_floor = SIZE_MAX;
    core.ann = can_put && core.use_notice && am->ann && am->ann->publish && am->ann->revoke && am->ann->peek &&
               am->ann->claim && am->ann->result ? am->ann : NULL;
    core.npeers = hashi_job.size;
    core.peers = calloc((size_t)core.npeers, sizeof *core.peers);
    if (!core.peers) {
        snprintf(err, errlen, "matching core: out of memory");
        return -1;
    }
    for (int i = 0; i < core.npeers; i++) {
        core.peers[i].eager_limit = core.eager_limit;
        plain_update(&core.peers[i]);
    }
    hashi_mq_init(&core.mq);
    hashi_cookies_init(&core.cookies);
    hashi_am_p2p_ops = (struct hashi_device_p2p_ops){
        .isend = am_isend,
        .irecv = am_irecv,
        .iprobe = am_iprobe,
        .improbe = am_improbe,
        .imrecv = am_imrecv,
        .cancel_recv = am_cancel_recv,
        .cancel_send = am_cancel_send,
        .send_now = am_send_now,
        .psend_init = am_psend_init,
        .precv_init = am_precv_init,
        .pfree = am_pfree,
        .progress = am->progress,   /* the device's own: no hop through the core */
        .eager_limit = core.eager_limit,
        .tag_ub = INT_MAX,
    };
    HASHI_DEBUG(1, "matching core on %s: eager up to %zu bytes, rendezvous by %s%s", am->name, core.eager_limit,
                core.use_get && core.use_put ? "get (send-first) or put (receive-first)"
                : core.use_get               ? "get"
                : core.use_put               ? "put"
                                             : "chunked messages",
                core.use_notice ? ", control by notices" : "");
    return 0;
}

int hashi_am_core_set_peer_get(int peer)
{
    if (!core.use_get || peer < 0 || peer >= core.npeers)
        return -1;
    core.peers[peer].get_only = 1;
    return 0;
}

int hashi_am_core_set_peer_eager(int peer, size_t limit)
{
    if (peer < 0 || peer >= core.npeers || limit > core.eager_limit)
        return -1;
    core.peers[peer].eager_limit = limit;
    plain_update(&core.peers[peer]);
    return 0;
}

int hashi_am_core_set_peer_announce(int peer, size_t max_bytes)
{
    if (!core.ann || !core.use_put || peer < 0 || peer >= core.npeers)
        return -1;
    struct am_peer *p = &core.peers[peer];
    p->ann_max = max_bytes > p->eager_limit ? max_bytes : 0;   /* nothing to announce at or below it */
    if (p->ann_max && p->eager_limit < core.ann_floor)
        core.ann_floor = p->eager_limit;
    return 0;
}

int hashi_am_core_set_peer_in_place(int peer, size_t min_bytes)
{
    if (peer < 0 || peer >= core.npeers)
        return -1;
    core.peers[peer].in_place_min = min_bytes;
    plain_update(&core.peers[peer]);
    return 0;
}

void hashi_am_core_set_busy_pull(size_t min_bytes)
{
    core.busy_pull_min = core.use_get ? min_bytes : 0;
    for (int i = 0; i < core.npeers; i++)
        plain_update(&core.peers[i]);
}

int hashi_am_core_set_bidir_pull(int peer, size_t min_bytes)
{
    if (!core.use_get || peer < 0 || peer >= core.npeers)
        return -1;
    core.peers[peer].bidir_pull_min = min_bytes;
    plain_update(&core.peers[peer]);
    return 0;
}

void hashi_am_core_set_split(size_t min_bytes, unsigned pull_percent)
{
    core.split_min = min_bytes;
    core.split_pull = pull_percent < 100 ? pull_percent : 100;
}

static void free_unexp(struct hashi_mq_unexp *q, void *arg)
{
    (void)arg;
    struct am_unexp *u = container_of(q, struct am_unexp, q);
    if (u->unread)
        unread_remove(u);
    if (!u->pulling)   /* a read still landing there (the sender never waited for it): leave it */
        unexp_free(u);
}

void hashi_am_core_finalize(void)
{
    if (!core.am)
        return;
    hashi_mq_drain_unexp(&core.mq, free_unexp, NULL);
    hashi_mq_destroy(&core.mq);
    hashi_cookies_destroy(&core.cookies);
    for (int i = 0; i < core.npeers; i++) {
        if (core.peers[i].ann_mem)   /* a receive still posted at MPI_Finalize */
            buf_dereg(core.peers[i].ann_req, core.peers[i].ann_mem);
        while (core.peers[i].cancels) {
            struct am_cancel *c = core.peers[i].cancels;
            core.peers[i].cancels = c->next;
            free(c);
        }
        while (core.peers[i].early) {
            struct am_early *e = core.peers[i].early;
            core.peers[i].early = e->next;
            free(e);
        }
    }
    /* Persistent requests the program never freed: their keys go with the
     * device (the requests' memory is reclaimed at exit). */
    while (!LIST_EMPTY(&prepared_list))
        prepared_release(LIST_FIRST(&prepared_list));
    free(core.peers);
    memset(&core, 0, sizeof core);
    hashi_buf_cache_drain();
}
