/*
 * The active-message interface: what a BTL-shaped device provides, and the
 * shared matching core built on top of it.
 *
 * A device that cannot match messages by itself (DIMMnet's AOTF / BOTF /
 * PUSH / PULL, libfabric untagged messages in HASHI_OFI_MATCHING=core) fills
 * a struct hashi_am_ops: send a header + payload to a peer as one message,
 * optionally read remote memory, and progress. It hands every arriving
 * message to hashi_am_deliver(). The core (am_core.c) runs matching
 * (posted-receive and unexpected queues with per-source bins, ANY_SOURCE
 * ordered by sequence numbers), the eager, rendezvous and synchronous
 * protocols, probe / mprobe and cancel over those few calls, and exports the
 * result as the MTL-shaped table hashi_am_p2p_ops that the MPI layer uses
 * through hashi_device->p2p.
 *
 * Threading: like the rest of the device layer, the core runs one call at a
 * time; under MPI_THREAD_MULTIPLE the MPI layer's global lock makes it so
 * (docs/threads.md). All its state hangs off one struct, so finer locking can
 * come later.
 */
#ifndef HASHI_DEVICE_COMMON_AM_H
#define HASHI_DEVICE_COMMON_AM_H

#include <stddef.h>
#include <stdint.h>

#include "device/device.h"

/* Called when a send's buffers may be reused or a get's data has landed.
 * status is 0, or a negative device error (the core fails the request). */
typedef void (*hashi_am_done_fn)(void *arg, int status);

/* The most bytes of remote key an RMA-capable device ships in a header. */
#define HASHI_AM_RKEY_MAX 24

/* Capabilities (hashi_am_ops.flags). */
#define HASHI_AM_CAP_GET 0x1u      /* get() reads registered remote memory */
#define HASHI_AM_CAP_PUT 0x2u      /* put() writes registered remote memory, with a notice after the data */
#define HASHI_AM_CAP_NOTICE 0x4u   /* notice() carries 8-byte control messages (ACK, FIN) */

/* Notices carry values below this bound (the device may use the top bits). */
#define HASHI_AM_NOTICE_LIMIT (UINT64_C(1) << 62)

/* send() flags. */
#define HASHI_AM_SEND_BUFFERED 0x1u  /* copy now; done = handed to the transport */
#define HASHI_AM_SEND_NOWAIT 0x2u    /* may answer -EAGAIN instead of queueing (see send) */

/*
 * A receive-first announcement (optional, struct hashi_am_ann_ops): a
 * receive posted before its message offers its buffer to the sender ahead of
 * any RTS, bound to ONE message, the one with sequence number `seq` from that
 * sender (the core's per-pair order). The sender, when it starts that
 * message as a rendezvous, claims the announcement if the envelope matches
 * and writes the data straight into the buffer (put), the last piece
 * carrying the completion notice. Protocol and safety: am_core.c
 * ("receive-first announcements"), docs/dimmnet.md.
 */
struct hashi_am_ann {
    uint32_t context_id;
    int32_t source;         /* the receive's source: the sender's rank in the communicator */
    int32_t tag;            /* or MPI_ANY_TAG */
    uint32_t cookie;        /* the receive's (named by the completion notice) */
    uint32_t seq;           /* the one message it binds to */
    uint64_t capacity;      /* bytes the buffer takes */
    uint64_t token;         /* the device's: what peek saw, for claim */
    unsigned char rkey[HASHI_AM_RKEY_MAX];   /* the buffer's key (rkey_size bytes) */
};

enum { HASHI_AM_ANN_CLAIMED = 0, HASHI_AM_ANN_REVOKED = 1, HASHI_AM_ANN_ASKED = 2 };

struct hashi_am_ann_ops {
    /* Receiver: publish a in peer's memory (only one announcement to a peer
     * is outstanding at a time: the core publishes the next one after the
     * last was claimed, revoked or overtaken by message seq). 0, or -1 (not
     * now: the receive waits for the RTS as usual). */
    int (*publish)(int peer, const struct hashi_am_ann *a);
    /* Receiver: withdraw the outstanding announcement to peer (cancel).
     * HASHI_AM_ANN_REVOKED: withdrawn, no claim can follow; _CLAIMED: the
     * sender already claimed it (its data and completion notice are on the
     * way); _ASKED: the sender decides (a device without a remote
     * compare-and-swap asks its progress), and the device later either calls
     * hashi_am_ann_revoked() or the claim's notice arrives. Never waits for
     * the peer. */
    int (*revoke)(int peer);
    /* Sender: peer's announcement to this rank, if one is valid for message
     * seq (a filled, token set). 1, or 0 (none). */
    int (*peek)(int peer, uint32_t seq, struct hashi_am_ann *a);
    /* Sender: take the announcement peek returned, atomically against the
     * receiver's revoke, and store the message's tag and full size where
     * the receiver's result() reads them (visible before the put's notice).
     * 1: won; 0: lost (revoked or replaced meanwhile). */
    int (*claim)(int peer, const struct hashi_am_ann *a, int32_t tag, uint64_t size);
    /* Receiver, on the completion notice: the tag and size the claim stored. */
    void (*result)(int peer, int32_t *tag, uint64_t *size);
};

struct hashi_am_ops {
    const char *name;
    /*
     * Largest message (header + payload) one send() moves; the core keeps its
     * eager payloads and rendezvous fragments within it. Must be at least
     * HASHI_AM_MIN_SEND.
     */
    size_t max_send;
    unsigned flags;                 /* HASHI_AM_CAP_* */
    size_t max_get;                 /* largest single get(); bigger reads are split */
    size_t rkey_size;               /* bytes of a remote key (<= HASHI_AM_RKEY_MAX) */

    /*
     * Send hdr_len bytes of hdr followed by len bytes of data to world rank
     * dest as one message, delivered to dest's core in the order sent (or
     * with the core's sequence numbers restoring it).
     *   HASHI_AM_SEND_BUFFERED: the device copies hdr and data before
     *     returning (inline, or into its own bounce buffer); the caller may
     *     reuse both at once. done, if not NULL, runs once the message is in
     *     the transport's hands (not merely in the device's queue of
     *     operations the transport refused for now): the core completes a
     *     request only then, so a rank whose requests are all complete has
     *     nothing left for the device to send when MPI_Finalize stops
     *     progressing it. Exception: a copy held back only by the peer's
     *     flow control (DIMMnet's receive-buffer credits) may count as
     *     handed: the peer returns credit without this rank's help, and
     *     MPI_Finalize progresses the device until every rank has entered
     *     its fence, so the copy still leaves (eager sends complete locally).
     *   otherwise zero copy: hdr is copied before returning, data is read
     *     in place until done(arg, status) runs.
     * done may run before send returns. The device never loses a send: when
     * its queues are full it keeps the operation and posts it from
     * progress(). Returns 0, or -1 if the device cannot send at all (then
     * done is never called).
     *   HASHI_AM_SEND_NOWAIT: where keeping the message would cost the
     *     device a copy it thinks dearer than the receiver reading the
     *     sender's buffer (DIMMnet on emu: the peer's ring is full), it may
     *     return -EAGAIN instead, having sent and kept nothing.
     */
    int (*send)(int dest, const void *hdr, size_t hdr_len, const void *data, size_t len, unsigned flags,
                hashi_am_done_fn done, void *arg);

    /*
     * Optional (stage NULL: not offered): the device's buffer of stage_max
     * bytes where the core writes a small buffered message itself (header,
     * then payload), and send_staged(dest, len) sends those len bytes as
     * send(dest, stage, len, NULL, 0, HASHI_AM_SEND_BUFFERED, NULL, NULL)
     * would. The message is then built once, in place, not as a header
     * that the device copies again with the payload (every small MPI_Send
     * of the ping-pong). Set before hashi_am_core_init.
     */
    unsigned char *stage;
    size_t stage_max;
    int (*send_staged)(int dest, size_t len);

    /*
     * Optional RMA (HASHI_AM_CAP_GET / _PUT). mem_reg makes len bytes at buf
     * readable and writable by world rank peer (the only rank the key is
     * sent to; devices whose keys are per peer need it) and writes rkey_size
     * bytes of key into rkey; the key names offsets from buf. get reads len
     * bytes at offset of (peer, rkey) into local and calls done from
     * progress().
     */
    int (*mem_reg)(void *buf, size_t len, int peer, void **mem, void *rkey);
    void (*mem_dereg)(void *mem);
    int (*get)(int peer, void *local, size_t len, const void *rkey, uint64_t offset,
               hashi_am_done_fn done, void *arg);
    /*
     * put writes len bytes at local into offset of (peer, rkey), at most
     * max_put per call. If notice is not 0 (and < HASHI_AM_NOTICE_LIMIT),
     * peer's core receives it through hashi_am_deliver_notice() only once
     * this put's data is visible there (the DIMMnet-2 completion word written
     * by the transfer itself). done(arg, status): local may be reused and
     * the data has landed. Returns 0, or -1 (done never runs).
     */
    int (*put)(int peer, const void *local, size_t len, const void *rkey, uint64_t offset, uint64_t notice,
               hashi_am_done_fn done, void *arg);
    size_t max_put;

    /*
     * Optional (HASHI_AM_CAP_NOTICE): an 8-byte control message (value <
     * HASHI_AM_NOTICE_LIMIT, never 0) to dest's core, handed over through
     * hashi_am_deliver_notice(); no order with other traffic is promised.
     * The device never loses one (it queues when it must). 0, or -1.
     */
    int (*notice)(int dest, uint64_t value);

    /* Advance the device: complete sends and gets, deliver arrivals. Returns
     * the number of events handled (0: nothing happened). */
    int (*progress)(void);

    /* Optional: whether messages from world rank peer have arrived in the
     * device and wait to be handed over (its traffic towards us is under
     * way; hashi_am_core_set_bidir_pull). A load or two: no progress. */
    int (*pending_from)(int peer);

    /* Optional receive-first announcements (above; NULL: not offered). The
     * core uses them only towards peers hashi_am_core_set_peer_announce
     * names, and needs put with notices (HASHI_AM_CAP_PUT). */
    const struct hashi_am_ann_ops *ann;
};

/* The core header is at most this big; a device's max_send must exceed it. */
#define HASHI_AM_HDR_MAX 64
/* The header in front of a standard-mode eager payload (a device sizing its
 * inline messages for "header + N bytes of data" uses it), and the one in
 * front of every other message (Ssend's eager payload, control, RTS). */
#define HASHI_AM_EAGER_HDR 24
#define HASHI_AM_LONG_HDR 40
#define HASHI_AM_MIN_SEND (HASHI_AM_HDR_MAX + 64)

/*
 * Rendezvous flavours the core can run. The sender always announces a large
 * message first (RTS); what happens on the match depends on who came first:
 *   send-first  (the RTS waited in the unexpected queue) the receiver reads
 *               the sender's buffer (get) and answers FIN;
 *   receive-first (the RTS found the receive already posted) the receiver
 *               answers CTS with a key of its own buffer and the sender
 *               writes it (put, the last piece carrying the completion
 *               notice).
 */
enum hashi_am_rndv {
    HASHI_AM_RNDV_AUTO,     /* put when the receive came first, get when the send did, chunked without RMA */
    HASHI_AM_RNDV_GET,      /* always get (send-first handshake) */
    HASHI_AM_RNDV_CHUNKED,  /* receiver answers CTS, sender streams fragments (rounds of max_send) */
    HASHI_AM_RNDV_PUT,      /* always put (receive-first handshake) */
    HASHI_AM_RNDV_SPLIT     /* always split (below), whoever came first */
};

/*
 * Split rendezvous (devices with get and put): both cores copy at once. On
 * the match the receiver answers CTS with a key of its own buffer and the
 * offset `from`, reads [0, from) of the sender's buffer itself and answers
 * FIN_SPLIT, while the sender puts [from, size) with the PUT_DONE notice.
 * After hashi_am_core_init: messages of at least min_bytes (0: never, unless
 * the mode is HASHI_AM_RNDV_SPLIT) split in AUTO mode; the receiver reads
 * pull_percent of each (rounded to 4 KiB).
 */
void hashi_am_core_set_split(size_t min_bytes, unsigned pull_percent);

/*
 * Busy pull (devices with get): an eager message of at least min_bytes (0:
 * never) that the device cannot take at once (HASHI_AM_SEND_NOWAIT answered
 * -EAGAIN) goes as an RTS marked "pull now" instead of a queued copy. The
 * receiver reads it into the posted receive on arrival or, unmatched, into
 * the receive that matches it later, or into an unexpected buffer at its
 * device's first idle progress pass (hashi_am_core_idle), and answers FIN:
 * the send completes by the receiver's progress alone, as an eager one
 * would (no match needed), while the sender copies nothing. Both cores busy
 * (bidirectional windows), each message is then copied once, by its
 * receiver.
 */
void hashi_am_core_set_busy_pull(size_t min_bytes);
/* Messages sent that way so far (device statistics). */
extern uint64_t hashi_am_busy_pulls;
/*
 * Bidirectional pull (devices with get), after hashi_am_core_init: a
 * standard eager message to world rank peer of at least min_bytes (0:
 * never, the default) goes as a "pull now" RTS, without asking the device,
 * while peer's own messages to this rank are under way (its pull-now
 * messages not read yet, or the device's pending_from): traffic flows both
 * ways, both cores copy, and one read by the receiver costs less than a
 * copy on each side. For peers where a read is a local copy (DIMMnet on
 * emu), not a network round trip. Counted in hashi_am_bidir_pulls. 0, or
 * -1 when the core does not use get.
 */
int hashi_am_core_set_bidir_pull(int peer, size_t min_bytes);
extern uint64_t hashi_am_bidir_pulls;
/* Persistent requests (the core's psend_init / precv_init): registrations
 * made for them (once per request and peer), and rendezvous that used one
 * instead of registering the buffer for the message (device statistics). */
extern uint64_t hashi_am_prepared_regs, hashi_am_regs_saved;
/*
 * Pull-now messages (busy or bidirectional, below) that arrived before their
 * receive wait unread: the receive that matches one reads it into its own
 * buffer. A device whose
 * progress pass found nothing else to do calls hashi_am_core_idle() while
 * hashi_am_unread_pulls is not 0: it starts reading the oldest into an
 * unexpected buffer (returns 1; 0: none waits), so a send completes by the
 * receiver's progress alone even if no receive ever matches it.
 */
extern size_t hashi_am_unread_pulls;
int hashi_am_core_idle(void);

/*
 * After hashi_am_core_init: rendezvous messages from world rank peer are
 * always read by the receiver (get, then FIN), whoever came first and
 * whatever the size: for peers over a network, where a read is one request
 * and one response but a put first needs the CTS round trip. A message
 * without a key (the sender's registration failed) still streams. 0, or -1
 * when the core does not use get.
 */
int hashi_am_core_set_peer_get(int peer);

/*
 * After hashi_am_core_init: standard sends to world rank peer are eager up
 * to limit bytes, at most init's eager_limit (which stays the largest, the
 * p2p table's eager_limit): a device whose peers sit on transports with
 * different costs gives init the largest and lowers the others (DIMMnet:
 * 64 KiB to peers over tcp, where a rendezvous costs round trips, less on
 * the node). 0, or -1 when limit is above init's.
 */
int hashi_am_core_set_peer_eager(int peer, size_t limit);

/*
 * After hashi_am_core_init: eager messages to world rank peer of at least
 * min_bytes are handed to the device without HASHI_AM_SEND_BUFFERED (read in
 * place; the request completes when the device's done runs), and the
 * blocking send_now declines them (the request path sends them). For a
 * device whose transport moves such a message from the user's buffer
 * anyway (DIMMnet over fabric: fi_sendv), saving its copy. 0: never (the
 * default). 0, or -1 for a bad peer.
 */
int hashi_am_core_set_peer_in_place(int peer, size_t min_bytes);

/*
 * After hashi_am_core_init and hashi_am_core_set_peer_eager (the limit it
 * uses), for devices with announcements (hashi_am_ops.ann):
 * receives with world rank peer as their source, larger than its eager limit
 * and at most max_bytes (SIZE_MAX: any size; 0: never, the default), are
 * announced when posted if nothing could mis-match (am_core.c), and
 * rendezvous messages to peer claim its announcements. 0, or -1 when the
 * core cannot (no announcement hooks, no put, a bad peer).
 */
int hashi_am_core_set_peer_announce(int peer, size_t max_bytes);

/*
 * Set the core up on top of a device. eager_limit: largest payload sent
 * eagerly (capped by max_send minus the header). Returns 0, or -1 with a
 * message in err.
 */
int hashi_am_core_init(const struct hashi_am_ops *am, size_t eager_limit, enum hashi_am_rndv rndv,
                       char *err, size_t errlen);
/* Release the core's queues and buffers (after traffic has stopped). */
void hashi_am_core_finalize(void);

/*
 * A message arrived (header + payload as sent, contiguous, any alignment).
 * The core consumes it before returning: the device may reuse the bytes.
 */
void hashi_am_deliver(const void *msg, size_t len);

/* A notice (see hashi_am_ops.notice / put) arrived from world rank src. */
void hashi_am_deliver_notice(int src, uint64_t value);

/* The answer to an announcement revoke() left to peer (HASHI_AM_ANN_ASKED):
 * withdrawn unclaimed, the receive is cancelled. The device passes only the
 * answer for its latest announcement to peer. 1: a receive was cancelled;
 * 0: the announcement had ended meanwhile (its message came the usual way
 * and the receive matched it or stays posted): nothing to do. */
int hashi_am_ann_revoked(int peer);

/* The point-to-point table the core offers (fill hashi_device->p2p with it
 * after hashi_am_core_init; eager_limit is set by init). */
extern struct hashi_device_p2p_ops hashi_am_p2p_ops;

#endif
