/*
 * The emulated NIC: internals shared by emu.c (segments, rings, tiny writes,
 * progress) and emu_rma.c (registration, PUSH / PULL). docs/transport.md
 * describes the layout and the protocols.
 *
 * Each local rank owns one shared segment:
 *   header page | LLCM | inbound ring from each local rank | staging window
 * Peers map it and store into it directly: tiny writes into the LLCM, block
 * messages into "their" inbound ring, staged RMA chunks into the window.
 */
#ifndef HASHI_TRANSPORT_EMU_H
#define HASHI_TRANSPORT_EMU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/transport.h"

#define EMU_MAGIC 0x31554d4549485341ull   /* "ASHIEMU1" */
#define EMU_LINE 64

/* Ring message kinds (emu_slot.kind). */
enum emu_kind {
    EMU_BLOCK = 1,     /* device block message */
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
    uint32_t slots;             /* per inbound ring */
    uint32_t slot_size;
    uint64_t llcm_off, llcm_size;
    uint64_t ring_off, ring_stride;
    uint64_t win_off, win_chunk;
    _Atomic uint32_t attached;  /* peers that mapped it; the last one unlinks the name */
    char pad0[EMU_LINE];
    /* The staging window's owner: 0 free, else the producer's local index + 1. */
    _Atomic uint32_t win_owner __attribute__((aligned(EMU_LINE)));
    struct emu_chunk_flag win_flag[2] __attribute__((aligned(EMU_LINE)));
};

/* A ring: the consumer's position on its own line, then the slots. */
struct emu_ring_ctrl {
    _Atomic uint64_t tail;      /* messages consumed (written by the owner) */
    char pad[EMU_LINE - 8];
};

/* A slot: seq = (message number + 1) once complete; data follows. */
struct emu_slot {
    _Atomic uint64_t seq;
    uint32_t len;
    uint32_t kind;
    unsigned char data[];
};
#define EMU_SLOT_HDR 16

/* Staged RMA control message (PUT_START, GET_REQ, PUT_DONE, GET_ERR). */
struct emu_rma_msg {
    uint64_t cookie;            /* the initiator's op */
    uint64_t addr, len;         /* target range: region base + offset */
    uint32_t regid;
    int32_t status;             /* replies */
    uint64_t sig_off, sig_val;
    uint32_t sig_size;          /* 0: no signal */
    uint32_t pad;
};

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
    /* Producer side of my ring in the peer's segment. */
    uint64_t head, cached_tail;
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
    uint64_t *ring_tail;        /* consumer positions of my inbound rings (private copy) */
    struct emu_slot **ring_next; /* the slot at each ring_tail: what a poll reads */
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
static inline struct emu_slot *emu_slot_at(struct emu_seg_hdr *h, int from, uint64_t n)
{
    /* slots is a power of two: a mask, not a division, on every poll */
    return (struct emu_slot *)((unsigned char *)(emu_ring(h, from) + 1) + (n & (h->slots - 1)) * h->slot_size);
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
int hashi_emu_mem_reg(void *buf, size_t len, void **handle);
void hashi_emu_mem_dereg(void *handle);
void hashi_emu_rkey_pack(void *handle, const struct hashi_tl_mem *mem, int peer, struct hashi_tl_rkey *rkey);
/* The tiny store itself (validated by the caller). */
void hashi_emu_store(struct emu_seg_hdr *h, uint64_t offset, uint64_t value, unsigned size);

#endif
