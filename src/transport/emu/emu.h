/*
 * The emulated NIC: internals shared by emu.c (segments, rings, tiny writes,
 * progress) and emu_rma.c (registration, PUSH / PULL). docs/transport.md
 * describes the layout and the protocols.
 *
 * Each local rank owns one shared segment:
 *   header page | LLCM | inbound ring from each local rank | staging window
 * Peers map it and store into it directly: tiny writes into the LLCM, block
 * messages into "their" inbound ring (a byte ring of 64-byte units holding
 * variable-length records), staged RMA chunks into the window.
 */
#ifndef HASHI_TRANSPORT_EMU_H
#define HASHI_TRANSPORT_EMU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/transport.h"

#define EMU_MAGIC 0x32554d4549485341ull   /* "ASHIEMU2": variable-length ring records */
#define EMU_LINE 64
/* Rings are counted in units of one cache line: a record starts on a unit. */
#define EMU_UNIT 64
/* Largest ring: a skip record's unit count must fit its 16-bit field. */
#define EMU_RING_MAX_UNITS 65536u

/* Ring record kinds (emu_rec.kind). */
enum emu_kind {
    EMU_SKIP = 1,      /* covers the ring's end: the next record starts at unit 0 */
    EMU_BLOCK,         /* device block message */
    EMU_NOTIFY,        /* device notification: value in the payload */
    EMU_PUT_START,     /* staged PUSH begins: struct emu_rma_msg; chunks follow in the window */
    EMU_PUT_DONE,      /* target -> initiator: staged PUSH landed (status) */
    EMU_GET_REQ,       /* staged PULL: target, fill my window with this range */
    EMU_GET_ERR        /* target -> initiator: PULL refused (status) */
};

/* One staging-window half: the producer fills it, then sets full. */
struct emu_chunk_flag {
    _Atomic uint64_t full;
    uint64_t len;
    char pad[EMU_LINE - 16];
};

struct emu_seg_hdr {
    uint64_t magic;
    uint64_t key;               /* job key: attach refuses another job's segment */
    uint64_t seg_size;
    uint64_t self_addr;         /* this header's address in the owner (CMA probe) */
    uint32_t pid;
    uint32_t nlocal;
    uint32_t ring_units;        /* per inbound ring, a power of two */
    uint32_t rec_max;           /* largest record in bytes (header + block_max) */
    uint64_t llcm_off, llcm_size;
    uint64_t ring_off, ring_stride;
    uint64_t win_off, win_chunk;
    uint64_t stage_off, stage_size;   /* the owner's stage (transport.h: stage) */
    _Atomic uint32_t attached;  /* peers that mapped it; the last one unlinks the name */
    char pad0[EMU_LINE];
    /* The staging window's owner: 0 free, else the producer's local index + 1. */
    _Atomic uint32_t win_owner __attribute__((aligned(EMU_LINE)));
    struct emu_chunk_flag win_flag[2] __attribute__((aligned(EMU_LINE)));
};

/* A ring: the consumer's position on its own line, then ring_units units. */
struct emu_ring_ctrl {
    _Atomic uint64_t tail;      /* units consumed (written by the owner) */
    char pad[EMU_LINE - 8];
};

/*
 * A record: header + data, starting on a unit, spanning
 * emu_rec_units(len) units (never across the ring's end: a skip record
 * covers the rest first). seq = the record's unit position (a count that
 * never wraps) + 1 once complete: the consumer waits for tail + 1 in the
 * first word of the unit at its tail. Payload bytes of an older lap may
 * equal any later position + 1, so before publishing a record the producer
 * zeroes the first word of the unit after it if payload was ever written
 * there (emu.c, ring_publish): the consumer's next tail never shows a stale
 * value that matches.
 */
struct emu_rec {
    _Atomic uint64_t seq;
    uint32_t len;               /* data bytes */
    uint16_t kind;
    uint16_t units;             /* units covered, header included */
    unsigned char data[];
};
#define EMU_REC_HDR 16
_Static_assert(sizeof(struct emu_rec) == EMU_REC_HDR, "record header is 16 bytes");

static inline uint64_t emu_rec_units(size_t len)
{
    return (EMU_REC_HDR + len + EMU_UNIT - 1) / EMU_UNIT;
}

/* Staged RMA control message (PUT_START, GET_REQ, PUT_DONE, GET_ERR). */
struct emu_rma_msg {
    uint64_t cookie;            /* the initiator's op */
    uint64_t addr, len;         /* target range: region base + offset */
    uint64_t sig_off, sig_val;
    uint32_t regid;
    int16_t status;             /* replies: 0 or a negative errno */
    uint8_t sig_size;           /* 0: no signal */
    uint8_t pad;
};
/* Control messages are one-unit records, like notifications. */
_Static_assert(EMU_REC_HDR + sizeof(struct emu_rma_msg) <= EMU_UNIT, "RMA control message spans two units");

/* The emu rkey, in hashi_tl_rkey.bytes. */
struct emu_rkey {
    uint64_t addr;
    uint64_t len;
    uint32_t regid;
    uint32_t pid;
};
_Static_assert(sizeof(struct emu_rkey) <= HASHI_TL_RKEY_SIZE, "emu rkey too big");

/* A mapped peer (or this rank's own segment). */
struct emu_peer {
    int world;
    struct emu_seg_hdr *hdr;
    unsigned char *base;
    pid_t pid;
    int cma;                    /* process_vm_* works against it */
    /* Producer side of my ring in the peer's segment, in units. */
    unsigned char *ring;        /* its first unit */
    _Atomic uint64_t *ring_tail; /* its consumer's position */
    uint64_t head, cached_tail;
    struct emu_rec *open;       /* the reserved record (block_alloc .. block_kick) */
    uint64_t skip;              /* units the reservation skips at the ring's end first (0: none) */
    uint64_t open_units;        /* units reserved */
    /* One bit per unit: its first word may hold payload (it was inside a
     * record, or given back by a shrinking kick) and must be zeroed before
     * the consumer's tail can land there (emu.c, ring_publish). */
    uint64_t *dirty;
};

/* The consumer side of an inbound ring (private): what a poll compares,
 * together in one small record so that an idle poll is two loads a ring. */
struct emu_inbound {
    struct emu_rec *next;       /* the record at the tail: what a poll reads */
    uint64_t want;              /* its seq once complete: the tail (in units) + 1 */
    unsigned char *base;        /* the ring's first unit */
    _Atomic uint64_t *tail;     /* the tail word peers read (emu_ring_ctrl) */
};

struct emu_state {
    struct hashi_tl_config cfg;
    int nlocal, me;             /* local ranks; my local index */
    int *local_of;              /* world rank -> local index, -1 if not served */
    struct emu_peer *peer;      /* by local index (peer[me] is my own segment) */
    struct emu_seg_hdr *seg;    /* my segment */
    size_t seg_size;
    char name[256];             /* shm name of my segment */
    int named;                  /* the name still exists (not unlinked yet) */
    uint64_t ring_units;        /* units per ring (every segment of the node alike) */
    struct emu_inbound *in;     /* my inbound rings, by local index */
    /* Per-size RMA choice. */
    size_t pipe_min, pipe_max;
    size_t cma_defer;           /* CMA copies of at least this many bytes run from progress (0: never) */
    int cma_allowed;
};
extern struct emu_state emu;

static inline struct emu_ring_ctrl *emu_ring(struct emu_seg_hdr *h, int from)
{
    return (struct emu_ring_ctrl *)((unsigned char *)h + h->ring_off + (uint64_t)from * h->ring_stride);
}
/* The unit at position pos of the ring whose first unit is at base. */
static inline struct emu_rec *emu_unit(unsigned char *base, uint64_t pos)
{
    /* ring_units is a power of two: a mask, not a division */
    return (struct emu_rec *)(base + (pos & (emu.ring_units - 1)) * EMU_UNIT);
}
static inline unsigned char *emu_ring_units(struct emu_seg_hdr *h, int from)
{
    return (unsigned char *)(emu_ring(h, from) + 1);
}
static inline unsigned char *emu_window(struct emu_seg_hdr *h)
{
    return (unsigned char *)h + h->win_off;
}

/* Segments (the units attach-checked by the tests). */
struct emu_seg_hdr *hashi_emu_seg_create(const char *name, size_t size, uint64_t key, char *err, size_t errlen);
struct emu_seg_hdr *hashi_emu_seg_attach(const char *name, uint64_t key, char *err, size_t errlen);

/* Ring messages of the transport itself (emu.c). 0 or -EAGAIN. */
int hashi_emu_send_ctrl(int lpeer, enum emu_kind kind, const void *msg, size_t len);
/* Queue a control message for progress to retry when the ring is full. */
void hashi_emu_send_ctrl_later(int lpeer, enum emu_kind kind, const void *msg, size_t len);

/* emu_rma.c */
int hashi_emu_rma_init(char *err, size_t errlen);
void hashi_emu_rma_probe_cma(void);
int hashi_emu_rma_progress(void);
void hashi_emu_rma_message(int lsrc, enum emu_kind kind, const struct emu_rma_msg *m);
void hashi_emu_rma_finalize(void);
int hashi_emu_put(int peer, const void *src, size_t len, const struct hashi_tl_mem *src_mem,
                  const struct hashi_tl_rkey *rkey, uint64_t offset, const struct hashi_tl_signal *sig,
                  hashi_tl_done_fn done, void *arg);
int hashi_emu_get(int peer, void *dst, size_t len, const struct hashi_tl_mem *dst_mem,
                  const struct hashi_tl_rkey *rkey, uint64_t offset, hashi_tl_done_fn done, void *arg);
int hashi_emu_putv(int peer, const struct hashi_tl_piece *pieces, int n, const struct hashi_tl_rkey *rkey,
                   hashi_tl_done_fn done, void *arg);
int hashi_emu_mem_reg(void *buf, size_t len, void **handle);
void hashi_emu_mem_dereg(void *handle);
void hashi_emu_rkey_pack(void *handle, const struct hashi_tl_mem *mem, int peer, struct hashi_tl_rkey *rkey);
/* The tiny store itself (validated by the caller). */
void hashi_emu_store(struct emu_seg_hdr *h, uint64_t offset, uint64_t value, unsigned size);

#endif
