/*
 * The DIMMnet device: DIMMnet-1's messaging protocol (AOTF, BOTF, PUSH, PULL,
 * per-peer flag areas in LLCM, credited receive areas) on the transport layer
 * (src/transport/transport.h), under the shared matching core
 * (device/common/am.h). Design and wire formats: docs/dimmnet.md.
 */
#ifndef HASHI_DEVICE_DIMMNET_H
#define HASHI_DEVICE_DIMMNET_H

#include <stddef.h>
#include <stdint.h>

#include "device/common/am.h"
#include "device/device.h"
#include "transport/transport.h"

/* ---- wire: every block (BOTF) starts with this header ---- */
enum dn_block_type {
    DN_MSG = 1,     /* a whole core message follows (header + payload) */
    DN_PKT,         /* one packet of a core message, into receive buffer `buf` at `offset` */
    DN_AREA_REQ,    /* the sender asks for its receive area at this rank (first use) */
    DN_AREA,        /* the answer: remote key, buffer count and size */
    /* receive-first announcements towards peers on fabric, where only the
     * owner's progress writes its LLCM: */
    DN_LLCM,        /* bytes for the sender's flag area here, then the word publishing them (dn_llcm_msg) */
    DN_REVOKE,      /* the receiver cancels: swap its announcement word (8 bytes follow) to revoked */
    DN_REVOKED      /* the sender's answer: that word was still unclaimed and is revoked now */
};
#define DN_LAST 0x1u  /* DN_PKT: the message is complete; `total` is its length */

struct dn_hdr {
    uint8_t type;
    uint8_t flags;
    uint8_t buf;       /* DN_PKT: the receive buffer (the paper's byte flag naming a buffer) */
    uint8_t window;    /* DN_PKT: 0 / 1, alternating packet by packet */
    uint32_t pgid;     /* the sender's process-group id, checked on arrival */
    uint32_t offset;   /* DN_PKT: where the packet's bytes go in the buffer */
    uint32_t total;    /* DN_PKT with DN_LAST: the message's length */
};
#define DN_HDR_SIZE 16
/* A whole core message (DN_MSG) needs only type and pgid: its block header
 * is the first 8 bytes, so a small message fits one 64-byte ring slot. */
#define DN_MSG_HDR_SIZE 8
_Static_assert(sizeof(struct dn_hdr) == DN_HDR_SIZE, "dn_hdr is 16 bytes on the wire");
_Static_assert(offsetof(struct dn_hdr, offset) == DN_MSG_HDR_SIZE, "DN_MSG's header ends before the packet fields");

struct dn_area_msg {
    struct hashi_tl_rkey rkey;
    uint32_t nbufs, buf_size;
};

/* DN_LLCM: len bytes follow, for the sender's flag area at field (only the
 * announcement's words, [ann, bufstat)); then, unless word_field is
 * DN_LLCM_NO_WORD, word is stored at word_field (a release store). */
struct dn_llcm_msg {
    uint32_t field, len, word_field, reserved;
    uint64_t word;
};
#define DN_LLCM_NO_WORD UINT32_MAX

/* ---- LLCM layout (every rank's; offsets are the same job-wide) ----
 *   [0, DN_BARRIER_BYTES)          barrier epoch flags, one word per round
 *   DN_FLAGS_BASE + s * stride     the flag area written by peer s
 *   part_base (next 64 bytes)      DN_PART_WORDS words of partitioned
 *                                  requests (dimmnet_device.c)
 *   coll_base + l * coll_stride    the collective area written by the rank
 *                                  with local index l (dimmnet_coll.c):
 *                                  coll_base is the first 64-byte boundary
 *                                  after the partitioned requests' words
 *   sync_base = coll_base +        counter barriers (dimmnet_coll.c), if
 *     local ranks * coll_stride    they fit: DN_SYNC_SLOTS counter lines,
 *                                  then DN_SYNC_SLOTS release words
 *   chan_base (next 64 bytes)      DN_CHANNELS channels, if they fit: each
 *     + ch * local * chan_stride   one collective area per local rank of
 *                                  DN_CHANNEL_SLOTS packed slots      */
#define DN_BARRIER_ROUNDS 32
#define DN_BARRIER_BYTES (DN_BARRIER_ROUNDS * 8)
#define DN_FLAGS_BASE 512
#define DN_SYNC_SLOTS 16   /* communicators a rank can be in with a counter barrier at once */
#define DN_SYNC_BYTES (DN_SYNC_SLOTS * 64 + DN_SYNC_SLOTS * 8)
#define DN_NOTICE_SLOTS 16
#define DN_VALID (UINT64_C(1) << 63)

/*
 * A receive-first announcement (am.h, struct hashi_am_ann): receiver s
 * offers this rank (the sender) a posted receive's buffer for this rank's
 * message `seq` to s. s writes the body (llcm_write), then the word (AOTF,
 * a release store: the body is visible before it); over fabric one DN_LLCM
 * block that this rank's progress applies in that order. The word:
 *   bits 63-62  state: DN_ANN_VALID, then CLAIMED (this rank's local
 *               compare-and-swap, the claim) or REVOKED (s's remote
 *               compare-and-swap, MPI_Cancel; over fabric this rank's own
 *               compare-and-swap on s's DN_REVOKE, answered by
 *               DN_REVOKED when it won); exactly one of them wins
 *   bits 61-32  generation (s counts its announcements to this rank)
 *   bits 31-0   seq, the one message it binds to
 * The claimer compares the whole word, so a body read while s replaced a
 * revoked announcement never gets claimed (the generation moved on).
 */
struct dn_ann {
    uint64_t word;
    uint32_t context_id;
    int32_t source, tag;
    uint32_t cookie;
    uint64_t capacity;
    struct hashi_tl_rkey rkey;
};
#define DN_ANN_STATE (UINT64_C(3) << 62)
#define DN_ANN_VALID (UINT64_C(1) << 62)
#define DN_ANN_CLAIMED (UINT64_C(2) << 62)
#define DN_ANN_REVOKED (UINT64_C(3) << 62)
#define DN_ANN_GEN_MASK ((UINT64_C(1) << 30) - 1)

/* A flag area: what peer s stores (AOTF) into this rank's LLCM. Only s
 * writes its words, except that this rank clears consumed slots and claims
 * s's announcement (ann.word, compare-and-swap against s's revoke). */
struct dn_flag_area {
    uint64_t hello;      /* DN_VALID | s's process-group id: written once, before anything else */
    uint64_t freed;      /* receive buffers of s's area this rank filled that s has freed (credit) */
    uint64_t notices_read; /* this rank's notices s has consumed (notice-ring credit) */
    uint64_t reserved;
    uint64_t notice[DN_NOTICE_SLOTS]; /* DN_VALID | core notice; 0 = empty */
    struct dn_ann ann;   /* s, receiving, announces a buffer for our next message to it */
    int64_t ann_tag;     /* s, sending, claimed our announcement: its message's tag and size, */
    uint64_t ann_size;   /* stored before the claim's put, read on its ANN_DONE notice */
    uint64_t bufstat[];  /* per buffer of this rank's receive area for s: DN_VALID | length (PUSH signal) */
};

/*
 * A collective area: what one local source rank stores into this rank's
 * LLCM for the flat LLCM collectives. A ring of slots (2 .. DN_COLL_SLOTS_MAX,
 * as many as fit the LLCM), used in turn by the pair sequence (collectives in
 * which the two ranks exchanged data, counted on both sides), each the
 * flag word, which holds the full pair sequence of the data and is stored
 * after it (tiny writes of one initiator land in issue order), and at
 * +DN_COLL_ALIGN the payload (HASHI_DIMMNET_COLL_MAX bytes rounded up to
 * DN_COLL_ALIGN). When the LLCM has room, slots are whole cache lines from
 * +64, so a payload of up to 48 bytes shares the line of its flag (the
 * reader takes one miss); otherwise they are packed from +DN_COLL_HDR.
 *   +0                         ack: the last pair sequence at which the
 *                              source consumed a broadcast or a
 *                              reduction's contribution of ours
 *   +hdr + j * slot            slot j = seq mod slots: the flag, the payload
 * slot = DN_COLL_ALIGN + payload (rounded up to 64 bytes, hdr 64, when
 * lined; hdr DN_COLL_HDR when packed); the area is rounded to 64 bytes.
 */
#define DN_COLL_HDR 16
#define DN_COLL_SLOTS_MAX 8   /* how far a broadcast root may run ahead */
#define DN_COLL_ALIGN 16   /* payloads are reduced in place: aligned like any basic type */
/* Channels (dimmnet_coll.c): the nonblocking and persistent collectives'
 * rings, one per communicator, after the counter barriers' words. */
#define DN_CHANNELS 16
#define DN_CHANNEL_SLOTS 4
/* Partitioned requests (dimmnet_device.c, "partitioned requests"): a
 * region of DN_PART_WORDS 8-byte words right after the flag areas (the
 * collective area starts after it): a sender's slot of DN_PART_SLOT words
 * (grant epoch, answer, the receiver's arrival offset and key) or a
 * receiver's arrival words, one per partition. */
#define DN_PART_WORDS 512
#define DN_PART_SLOT 8
#define DN_PART_BYTES (DN_PART_WORDS * 8)

/* Counters (HASHI_DIMMNET_STATS prints them at MPI_Finalize). */
struct dn_stats {
    uint64_t aotf, botf, botf_packets, window[2], push, pull, put, area_requests;
    uint64_t credit_waits, ring_waits, notices_in, blocks_in, barriers;
    /* LLCM collectives (barriers above counts both barrier kinds) */
    uint64_t coll_bcasts, coll_allreduces, coll_alltoalls, coll_slot_waits, coll_allgathers;
    uint64_t counter_barriers;   /* of barriers: those on an LLCM counter */
    uint64_t coll_gathers, coll_scatters, coll_scans, coll_exscans, coll_reduce_scatters;
    uint64_t coll_exchanges;   /* sparse exchanges: the v and w forms, the neighbourhood collectives */
    uint64_t coll_nb_ops;        /* nonblocking / persistent runs on LLCM (also counted by kind above) */
    uint64_t staged_bcasts;      /* of coll_bcasts: through the root's stage */
    uint64_t in_place;           /* of botf: sent from the caller's memory (block_sendv) */
    /* receive-first announcements: published (as receiver), claimed (as
     * sender), receives completed by a claim, revoked by MPI_Cancel, and
     * cancels that found their announcement claimed already */
    uint64_t announces, claims, announced, revokes, revokes_lost;
    /* partitioned requests on the device (emu peers): partitions PUSHed
     * into place (as sender), epochs granted (as receiver), partitions
     * readied before their grant and kept until it (as sender), requests
     * whose offer this rank's receive accepted; PUSHes (a run of
     * consecutive partitions readied before the grant goes as one) */
    uint64_t part_puts, part_grants, part_early, part_accepted, part_pushes;
    /* one-sided: contiguous MPI_Put / MPI_Get runs PUSHed / PULLed straight
     * into / out of a peer's registered window (dimmnet_rma.c) */
    uint64_t rma_puts, rma_gets;
    uint64_t rma_pushv;   /* of rma_puts' runs: vector PUSHes that carried them (one system call each) */
    /* window locks taken on LLCM words (as origin; dimmnet_rma.c), of
     * those the ones that had to wait for another holder, and the waiters
     * this rank's releases and shared grants named for waking (one at most
     * each) */
    uint64_t rma_locks, rma_lock_waits, rma_lock_wakes;
};

/* Shared between the device's files. */
extern struct dn_stats hashi_dn_stats;
int hashi_dn_progress(void);
/* The RMA entries (dimmnet_rma.c). */
extern const struct hashi_device_rma_ops hashi_dn_rma_ops;
/* Words of the partitioned requests' LLCM region for the RMA entries'
 * lock words (dimmnet_device.c): the offset of n cleared words, 0 when the
 * region is full; and the job's process-group id (the words' key). */
uint64_t hashi_dn_llcm_words_alloc(int n);
void hashi_dn_llcm_words_free(uint64_t offset, int n);
uint32_t hashi_dn_pgid(void);

/* LLCM collectives (dimmnet_coll.c). hashi_dn_coll_ops fills the device's
 * table from the parameters (at init); hashi_dn_coll_init lays the
 * collective area out after the flag areas, which end at flags_end (at
 * connect: the LLCM exists); 0, or -1 with a message. */
void hashi_dn_coll_ops(struct hashi_device_coll_ops *ops);
int hashi_dn_coll_init(size_t flags_end, char *err, size_t errlen);
void hashi_dn_coll_finalize(void);

#endif
