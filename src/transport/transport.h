/*
 * The transport layer: the "network hardware" the seed devices (DIMMnet and
 * later Maestro, BDS, DCFA) drive. One primitive set, two implementations:
 *   emu     the emulated NIC in shared memory, for peers on this node
 *           (src/transport/emu): remote stores are real CPU stores;
 *   fabric  the same primitives over libfabric (src/transport/fabric).
 * HASHI_TRANSPORT=auto picks per peer: emu when the peer shares the node,
 * fabric otherwise. A device reaches a peer's transport with hashi_tl(peer)
 * and calls the ops below; node-wide calls (progress, registration, LLCM,
 * wait) go through the hashi_transport_* functions, which serve every
 * transport in use.
 *
 * The primitives (the words of the DIMMnet paper in brackets):
 *   tiny_write   [AOTF]  1..8 bytes stored into the peer's LLCM
 *   llcm_write           several bytes into a mapped peer LLCM (emu only), published by a tiny_write
 *   llcm_fetch_add, llcm_cmpxchg   atomics on a peer's LLCM word (emu only)
 *   stage                a region of a local peer's memory read in place (emu only)
 *   block_*      [BOTF]  header + payload, <= block_max, ordered per peer
 *   put / get    [PUSH / PULL]  single-copy RMA on registered memory
 *   notify               a 64-bit event delivered in order with blocks
 *   progress, hashi_transport_wait (a sleep a peer's traffic ends)
 * Later devices fit the same set: Maestro's request queues are block sends
 * and notifications whose completions come back as done callbacks; BDS's
 * persistent regions are one registration plus put with a signal; DCFA's
 * command channel is block sends to the node's host rank.
 *
 * Conventions:
 * - Peers are world ranks. Sending to oneself works on every transport.
 * - Errors are negative errno values: -EAGAIN (no room now: call progress and
 *   retry), -EMSGSIZE (over a limit), -EINVAL (bad offset, size, key),
 *   -EIO (the transport failed; it has logged why).
 * - Completion callbacks (hashi_tl_done_fn) run from a later
 *   hashi_transport_progress() call of the initiator, never from inside the
 *   call that started the operation; status is 0 or a negative errno.
 * - Threading: one thread at a time (like the device layer).
 * - Progress: on emu a tiny write is visible in the peer's LLCM without the
 *   peer running any code; everything else (block and notify delivery, the
 *   staged PUT/GET path, and every arrival on fabric) happens inside the
 *   receiver's hashi_transport_progress(). Devices call it when they wait.
 */
#ifndef HASHI_TRANSPORT_H
#define HASHI_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

/* AOTF: the most bytes one tiny write stores. */
#define HASHI_TL_TINY_MAX 8
/* Bytes of a remote key (fits the device's AOTF/BOTF headers). */
#define HASHI_TL_RKEY_SIZE 24
/* Alignment of block messages as delivered (header start). */
#define HASHI_TL_BLOCK_ALIGN 8

enum hashi_tl_id { HASHI_TL_EMU, HASHI_TL_FABRIC, HASHI_TL_COUNT };

/* A remote key: fixed size, plain bytes, copy it anywhere (memcpy into a
 * header, out again on the other side). Produced by hashi_transport_rkey()
 * for one peer; meaningful only to that peer's transport. */
struct hashi_tl_rkey {
    unsigned char bytes[HASHI_TL_RKEY_SIZE];
};

/* A local registration: the region plus each active transport's handle. */
struct hashi_tl_mem {
    void *buf;
    size_t len;
    void *tl[HASHI_TL_COUNT];  /* per-transport handle (NULL: not in use) */
};

/* Completion of put / get: buffers may be reused, data has landed. */
typedef void (*hashi_tl_done_fn)(void *arg, int status);

/*
 * Delivery of a block message: called from the receiver's progress with the
 * sender's world rank and header + payload as the sender wrote them
 * (contiguous, HASHI_TL_BLOCK_ALIGN-aligned). The bytes are readable in
 * place until the handler returns (on emu they are the ring slot itself: the
 * handler copies the payload straight to where its header says). The handler
 * may send (block, notify, tiny, put, get) but must not call progress.
 */
typedef void (*hashi_tl_block_fn)(void *ctx, int src, const void *msg, size_t len);
/* Delivery of a notification, in order with src's blocks. Same rules. */
typedef void (*hashi_tl_notify_fn)(void *ctx, int src, uint64_t value);

/* What the device asks for (hashi_transport_init). */
struct hashi_tl_config {
    size_t llcm_size;          /* bytes of this rank's LLCM (multiple of 8, > 0) */
    size_t block_max;          /* largest block message, header included (>= 64) */
    /* Largest block to a peer on fabric (0: block_max). A network moves a
     * block of any size in one operation, so a device may use blocks as big
     * as its eager messages there while emu's ring slots stay small. */
    size_t net_block_max;
    hashi_tl_block_fn on_block;
    hashi_tl_notify_fn on_notify;
    void *ctx;                 /* first argument of both handlers */
    /*
     * Filled by transport.c, not the device: the LLCM memory every transport
     * stores into. emu hosts it in its shared segment (sets it in init);
     * otherwise transport.c allocates it before the other transports' init.
     */
    void *llcm;
};

/* A tiny write performed at the target after a put's data is visible there
 * (the DIMMnet-2 completion status word: the receiver polls its LLCM). */
struct hashi_tl_signal {
    uint64_t offset;           /* into the target's LLCM, aligned to size */
    uint64_t value;
    unsigned size;             /* 1, 2, 4 or 8 */
};

/* One piece of a vector PUSH (putv). */
struct hashi_tl_piece {
    const void *src;
    size_t len;
    uint64_t offset;           /* into the peer's registered region */
};
#define HASHI_TL_PUTV_MAX 1024   /* the kernel's IOV_MAX */

struct hashi_tl_ops {
    const char *name;
    enum hashi_tl_id id;
    size_t max_rma;            /* largest single put / get (bigger: split) */

    /* ---- lifecycle (transport.c calls these; devices do not) ---- */
    /* Before the modex: create local resources, publish the address. */
    int (*init)(struct hashi_tl_config *cfg, char *err, size_t errlen);
    /* After the modex: reach every peer this transport serves (served[r]). */
    int (*connect)(const unsigned char *served, char *err, size_t errlen);
    /* After traffic stopped (the finalize fence): release everything. */
    void (*finalize)(void);
    /* Deliver arrivals, run completions; returns events handled (0: idle). */
    int (*progress)(void);
    /* Optional (NULL on emu): hand every block held back for coalescing to
     * the network. Devices call it (hashi_transport_flush) at the end of a
     * progress pass, after sends of their own made outside the transport's
     * progress (queued messages retried). */
    void (*flush)(void);
    /* Optional (NULL on emu): the wait object of hashi_transport_wait_fd. */
    int (*wait_fd)(void);
    int (*trywait)(void);

    /*
     * AOTF. Store the low `size` bytes (1, 2, 4, 8) of value at offset of
     * peer's LLCM (offset aligned to size, within llcm_size). The store is
     * atomic: a reader never sees a torn value (emu: a release store by the
     * initiator's CPU; fabric: the target's progress stores it). Writes from
     * one initiator to one peer land in issue order; and a tiny write lands
     * only after every block and notify this initiator sent before it is
     * queued at the peer (its next progress delivers them). Wakes the peer.
     * Returns 0, -EINVAL, or -EAGAIN (fabric queue full).
     */
    int (*tiny_write)(int peer, uint64_t offset, uint64_t value, unsigned size);
    /*
     * Several bytes into peer's LLCM at once, where the transport can store
     * them directly (emu: plain copies into the peer's mapped LLCM); NULL
     * where it cannot (fabric: the caller issues one tiny_write per word).
     * Neither atomic nor waking: the caller publishes the bytes with a
     * tiny_write (a flag) issued after it, which lands after them. Returns 0
     * or -EINVAL (outside llcm_size).
     */
    int (*llcm_write)(int peer, uint64_t offset, const void *data, size_t len);
    /*
     * A remote atomic add (the DSM paper's LLCM sync variable as a counter):
     * add `add` to the 8-byte word at offset of peer's LLCM and return the
     * word before in *old, atomically against every other initiator's
     * fetch_add on that word (emu: a locked add on the peer's mapped LLCM).
     * Does not wake the peer (a count is not a flag). NULL where the
     * transport cannot (fabric: no atomics over manual progress here).
     * 0 or -EINVAL (misaligned or outside llcm_size).
     */
    int (*llcm_fetch_add)(int peer, uint64_t offset, uint64_t add, uint64_t *old);
    /*
     * A remote compare-and-swap on the 8-byte word at offset of peer's LLCM:
     * if it holds `expected`, store `desired`; *old is the word before
     * (== expected: swapped), atomically against every other initiator's
     * atomics and the owner's own on that word (emu: a locked cmpxchg on the
     * peer's mapped LLCM; the peer runs no code). Does not wake the peer.
     * NULL where the transport cannot (fabric). 0 or -EINVAL (misaligned or
     * outside llcm_size). DIMMnet's receive-first announcements revoke an
     * announced buffer with it (docs/dimmnet.md).
     */
    int (*llcm_cmpxchg)(int peer, uint64_t offset, uint64_t expected, uint64_t desired, uint64_t *old);
    /*
     * The peer's stage: memory its owner writes and every rank on the node
     * reads in place (emu: a region of the owner's shared segment,
     * HASHI_EMU_STAGE_SIZE bytes), for data one rank hands to several at
     * once (a broadcast: one copy in, concurrent copies out, where single-copy
     * reads of one process's memory slow each other down). Its address here
     * and *size; NULL (and the op NULL) where there is none (fabric). Readers
     * learn when to read, and owners when they may write again, from flags
     * the caller keeps (tiny_write).
     */
    void *(*stage)(int peer, size_t *size);

    /*
     * BOTF, in two steps like the hardware's window + kick. block_alloc
     * returns where to write a message of len bytes (<= block_max) for peer
     * (on emu: the slot in the peer's inbound ring, so the bytes are written
     * once), or NULL with *rc = -EAGAIN (ring full: progress and retry) or
     * -EMSGSIZE. block_kick publishes it (len may shrink, never grow): the
     * peer's progress delivers it to on_block, in kick order per
     * (initiator, peer). One allocation may be open per peer at a time; the
     * caller kicks it before any other send to that peer. Wakes the peer.
     * fabric may hold a small block kicked right after another to the same
     * peer (a burst) to send them as one message: it leaves at the next
     * progress pass or flush, or before any other traffic to that peer.
     */
    void *(*block_alloc)(int peer, size_t len, int *rc);
    void (*block_kick)(int peer, size_t len);
    /*
     * BOTF without the copy, where the network reads the sender's memory
     * anyway (fabric: fi_sendv of header and payload): the same message as
     * block_alloc + copy + block_kick, in the same order with the peer's
     * other traffic, but only the hdr_len header bytes are copied before
     * returning; payload is read in place until done(arg, status) runs (from
     * a later progress, as for put). Returns 0, -EAGAIN (no room now, as
     * block_alloc), -EMSGSIZE, or -ENOTSUP (not to this peer now: copy).
     * NULL where the copy into the slot is the transfer (emu).
     * block_sendv_min(peer): the smallest payload for which it pays (below,
     * block_alloc's copy is cheaper than waiting for the send's
     * completion); SIZE_MAX when never to this peer.
     */
    int (*block_sendv)(int peer, const void *hdr, size_t hdr_len, const void *payload, size_t len,
                       hashi_tl_done_fn done, void *arg);
    size_t (*block_sendv_min)(int peer);

    /* A notification: value reaches peer's on_notify in order with the
     * blocks. 0, or -EAGAIN. Wakes the peer. */
    int (*notify)(int peer, uint64_t value);
    /* Whether something peer sent waits undelivered here (emu: one load of
     * the inbound ring's next record). Optional (NULL: unknown). */
    int (*pending_from)(int peer);

    /*
     * PUSH: write len bytes at src into peer's registered region rkey at
     * offset; then, if sig is not NULL, perform the signal's tiny write at
     * the target (visible only after the data). src_mem is src's
     * registration or NULL. src must stay untouched until done(arg, status)
     * runs. Out of range (offset + len beyond the region) is -EINVAL.
     */
    int (*put)(int peer, const void *src, size_t len, const struct hashi_tl_mem *src_mem,
               const struct hashi_tl_rkey *rkey, uint64_t offset, const struct hashi_tl_signal *sig,
               hashi_tl_done_fn done, void *arg);
    /* PULL: read len bytes at offset of peer's region rkey into dst;
     * done(arg, status) once they are there. */
    int (*get)(int peer, void *dst, size_t len, const struct hashi_tl_mem *dst_mem,
               const struct hashi_tl_rkey *rkey, uint64_t offset, hashi_tl_done_fn done, void *arg);

    /*
     * Vector PUSH: n pieces (1 .. HASHI_TL_PUTV_MAX), each len bytes at src
     * to peer's registered region rkey at offset, in one transfer (emu: one
     * process_vm_writev with an iovec per piece, no code at the target);
     * the sources stay untouched until done(arg, status) runs once for
     * all, from a later progress. -EINVAL: a piece out of range (nothing
     * written); -ENOTSUP: not as one transfer to this peer now (emu without
     * CMA: the caller puts the pieces one by one). NULL where there is none
     * (fabric).
     */
    int (*putv)(int peer, const struct hashi_tl_piece *pieces, int n, const struct hashi_tl_rkey *rkey,
                hashi_tl_done_fn done, void *arg);

    /* Registration of local memory for peers' put / get (see the
     * hashi_transport_mem_* wrappers). rkey_pack writes the key a given peer
     * uses (this transport serves that peer). */
    int (*mem_reg)(void *buf, size_t len, void **handle);
    void (*mem_dereg)(void *handle);
    void (*rkey_pack)(void *handle, const struct hashi_tl_mem *mem, int peer, struct hashi_tl_rkey *rkey);
};

/* The table serving each world rank (valid after hashi_transport_connect). */
extern const struct hashi_tl_ops **hashi_tl_peer;
static inline const struct hashi_tl_ops *hashi_tl(int peer) { return hashi_tl_peer[peer]; }

/* BOTF in one call: copy hdr and payload into a block and kick it. */
static inline int hashi_tl_block_send(int peer, const void *hdr, size_t hdr_len, const void *payload,
                                      size_t len)
{
    const struct hashi_tl_ops *tl = hashi_tl(peer);
    int rc;
    unsigned char *slot = (unsigned char *)tl->block_alloc(peer, hdr_len + len, &rc);
    if (!slot)
        return rc;
    if (hdr_len)
        __builtin_memcpy(slot, hdr, hdr_len);
    if (len)
        __builtin_memcpy(slot + hdr_len, payload, len);
    tl->block_kick(peer, hdr_len + len);
    return 0;
}

/*
 * Lifecycle, called by the device: init from its init (before the modex:
 * chooses transports from HASHI_TRANSPORT and the job's layout, creates
 * segments, publishes addresses), connect from its connect (after the modex),
 * finalize from its finalize. 0, or -1 with a message in err.
 */
int hashi_transport_init(const struct hashi_tl_config *cfg, char *err, size_t errlen);
int hashi_transport_connect(char *err, size_t errlen);
void hashi_transport_finalize(void);
/* Whether transport t serves at least one peer (after init). */
int hashi_transport_in_use(enum hashi_tl_id t);

/* Progress every transport in use; returns events handled. */
int hashi_transport_progress(void);
/* Hand blocks held back for coalescing to the network (the flush op of
 * the transport in use that has one; one load on emu alone). */
extern void (*hashi_tl_flush)(void);
static inline void hashi_transport_flush(void)
{
    if (hashi_tl_flush)
        hashi_tl_flush();
}

/*
 * This rank's LLCM: llcm_size bytes, 8-byte aligned, zeroed at init, the same
 * memory whichever transport a peer uses. Its layout belongs to the device.
 * Read what peers store there with atomic acquire loads
 * (__atomic_load_n(p, __ATOMIC_ACQUIRE)); the device may also store there
 * itself (atomically) to reset flags.
 */
void *hashi_transport_llcm(void);
size_t hashi_transport_llcm_size(void);
/* The largest block message (config.block_max), the same on every transport. */
size_t hashi_transport_block_max(void);

/* Register len bytes at buf with every transport in use. 0, or a negative
 * errno (the region stays unregistered). */
int hashi_transport_mem_reg(void *buf, size_t len, struct hashi_tl_mem *mem);
void hashi_transport_mem_dereg(struct hashi_tl_mem *mem);
/* The key peer uses to reach mem (by its own transport for that peer). */
void hashi_transport_rkey(const struct hashi_tl_mem *mem, int peer, struct hashi_tl_rkey *rkey);

/*
 * The wait a peer can wake: one idle round for a device's wait loop. Runs
 * poll once more after announcing sleep, then sleeps at most timeout_us
 * unless poll made progress or a local peer's tiny write, block, notify or
 * put woke it, or (a rank sleeping on the provider's wait fd) anything
 * arrived over fabric (runtime/wake.h; otherwise remote traffic ends the
 * sleep by timeout).
 * When sleeping is off (the node is not oversubscribed) it just polls.
 * Returns poll's result, or 0 after a sleep.
 */
int hashi_transport_wait(int (*poll)(void), long timeout_us);

/*
 * The wait object of the transports in use, for a device's wait_fd / trywait
 * (device/device.h): a file descriptor that becomes readable when fabric's
 * provider has something for this rank, -1 when no transport in use has one
 * (emu alone: local peers wake the futex word); trywait, right before
 * blocking on it, 0 when that is safe, nonzero when something is pending.
 */
int hashi_transport_wait_fd(void);
int hashi_transport_trywait(void);

#endif
