/*
 * The fabric transport's internals, shared by fabric.c (endpoint, messages,
 * tiny writes, progress) and fabric_rma.c (registration, PUSH / PULL).
 * docs/transport.md ("fabric") describes the wire format and the ordering.
 *
 * One RDM endpoint per rank, one completion queue, peers in an AV table.
 * What goes over the wire from one initiator to one target:
 *   messages  (block, notify, wide tiny write): fi_inject / fi_send into the
 *             target's receive buffers, each starting with struct fab_hdr
 *             (on ofi_rxm: fi_tinject / fi_tsend, tag 0, into tagged
 *             receives: HASHI_FABRIC_TAGGED);
 *   tiny writes whose value fits 40 bits, and PUSH signals: a zero-length
 *             fi_inject_writedata / the PUSH's own fi_writedata, the store
 *             encoded in the 64 bits of remote CQ data (FAB_CQ_*);
 *   PUSH / PULL data: fi_write / fi_read on registered memory.
 * The endpoint is asked for FI_ORDER_SAS | SAW | WAS | WAW, so all of these
 * are placed at the target in issue order; the target's progress handles
 * them in the order its CQ reports them.
 */
#ifndef HASHI_TRANSPORT_FABRIC_H
#define HASHI_TRANSPORT_FABRIC_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"
#include "transport/fabric/fi_util.h"

/*
 * Wire header of every message: the sender (no FI_SOURCE needed), what
 * follows, and the credits for the receiver's own messages that the sender
 * returns with it (piggy-backed: traffic both ways needs no credit writes).
 */
struct fab_hdr {
    uint32_t src;       /* sender's world rank */
    uint32_t word;      /* kind << FAB_KIND_SHIFT | credits << FAB_CREDIT_SHIFT | payload length */
};
#define FAB_KIND_SHIFT 29
#define FAB_CREDIT_SHIFT 17
#define FAB_LEN_MASK ((1u << FAB_CREDIT_SHIFT) - 1)
#define FAB_CREDIT_MAX ((1u << (FAB_KIND_SHIFT - FAB_CREDIT_SHIFT)) - 1)

enum fab_kind {
    FAB_MSG_BLOCK = 1,  /* payload: the device's block message */
    FAB_MSG_NOTIFY,     /* payload: uint64 value */
    FAB_MSG_TINY,       /* payload: uint64 (offset << 8 | size), uint64 value (value needs > 40 bits) */
    FAB_MSG_BATCH       /* payload: blocks, each a FAB_ENTRY_HDR (uint32 length, uint32 0) and its bytes
                           padded to 8 (coalescing: fabric.c) */
};
#define FAB_ENTRY_HDR 8

/*
 * A tiny write in remote CQ data: size as log2 (2 bits), LLCM offset (22
 * bits: LLCMs up to 4 MiB), value (40 bits). Values that need more bits go
 * as FAB_MSG_TINY messages, in order with everything else.
 */
#define FAB_CQ_VALUE_BITS 40
#define FAB_CQ_OFFSET_BITS 22
/* The largest offset value is reserved: credit returns (value: source rank
 * << 16 | credits), so an LLCM holds less than 4 MiB. */
#define FAB_CQ_CREDIT_OFFSET (((uint64_t)1 << FAB_CQ_OFFSET_BITS) - 1)
#define FAB_LLCM_MAX ((size_t)FAB_CQ_CREDIT_OFFSET & ~(size_t)7)

static inline uint64_t fab_cq_encode(uint64_t offset, unsigned size, uint64_t value)
{
    unsigned lg = size == 8 ? 3 : size == 4 ? 2 : size == 2 ? 1 : 0;
    return (uint64_t)lg << 62 | offset << FAB_CQ_VALUE_BITS | value;
}

static inline int fab_cq_inline(uint64_t value)
{
    return value >> FAB_CQ_VALUE_BITS == 0;
}

/* ------------------------------------------------------------ operations */

enum fab_op_kind {
    FAB_OP_RECV,        /* a receive buffer (struct fab_rbuf) */
    FAB_OP_SEND,        /* a block slot sent with fi_send (struct fab_slot) */
    FAB_OP_RMA          /* a put or get (struct fab_rma) */
};

/*
 * Everything handed to libfabric starts with one of these: the provider
 * may use ctx (FI_CONTEXT2 mode) and returns its address as op_context.
 */
struct fab_op {
    struct fi_context2 ctx;
    enum fab_op_kind kind;
    int peer;
    struct fab_op *next;        /* pending queue, free list or done list */
};

struct fab_queue {
    struct fab_op *head, *tail;
};

/* A registration (hashi_tl_mem.tl[HASHI_TL_FABRIC]). */
struct fab_mem {
    struct fid_mr *mr;
    void *desc;
    char *buf;
    size_t len;
};

/* The key peers use (hashi_tl_rkey bytes). */
struct fab_rkey {
    uint64_t base;      /* remote address of offset 0: the buffer's address, or 0 without FI_MR_VIRT_ADDR */
    uint64_t key;
    uint64_t len;
};

/* A put or get, moved in pieces of at most max_rma bytes, one at a time. */
struct fab_rma {
    struct fab_op op;
    int is_put;
    int has_sig;
    int status;
    char *local;
    size_t len, pos, piece;     /* bytes, bytes done, bytes of the piece in flight */
    void *desc;
    struct fab_mem *tmp;        /* registration made for this operation (FI_MR_LOCAL) */
    uint64_t raddr, key;        /* remote address of byte 0 */
    struct hashi_tl_signal sig;
    hashi_tl_done_fn done;
    void *arg;
};

struct fab_peer {
    fi_addr_t addr;
    uint64_t bell_raddr, bell_key;  /* target of zero-length tiny writes */
    size_t llcm_size;
    struct fab_slot *open;          /* block_alloc'd, not kicked yet */
    struct fab_slot *batch;         /* blocks of a burst held back to go as one message (coalescing) */
    size_t batch_len;               /* its bytes after the fab_hdr */
    int batch_alloc;                /* block_alloc'd into the batch, not kicked yet */
    int batch_listed;               /* in fabric.c's list of peers with a batch */
    uint64_t last_pass;             /* fab's progress epoch when the last block to it was kicked */
    int64_t last_kick_ns;           /* and when (hashi_now_ns) */
    int credits;                    /* messages we may still send it */
    int owed;                       /* its messages consumed here, not yet credited back */
    int owed_listed;
    uint64_t n_sent, n_consumed, n_cred_sent, n_cred_got;  /* diagnostics */
};

struct fab_state {
    struct fi_info *info_list, *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct hashi_fi_wait wait;  /* the CQ's wait object (fd -1: none) */
    struct fid_av *av;
    struct fid_ep *ep;

    struct hashi_tl_config cfg;
    struct fab_peer *peers;         /* by world rank (served ones filled) */
    int connected;

    size_t inject_size;
    size_t block_max;               /* largest block: cfg.net_block_max, at least cfg.block_max */
    size_t max_msg;                 /* header + block_max, rounded to 8 */
    size_t max_rma;                 /* largest single fi_write / fi_read */
    int mr_local, mr_virt_addr, mr_prov_key, mr_endpoint;
    uint64_t next_key;

    struct fab_queue pending;       /* RMA pieces to post (refused for now, or next), in order */
    int credits;                    /* messages each peer may have unconsumed here (HASHI_FABRIC_CREDITS) */
    int credit_batch;               /* credits returned in one write: half a share, at least 1 */
    int *owed_list;                 /* peers whose credits are due back */
    size_t owed_count;
    struct fab_queue done;          /* put / get completions to report */
    /* diagnostics, also MPI_T performance variables (fabric.c: fab_pvars) */
    uint64_t eagain, credit_waits;
    uint64_t credit_writes;         /* credits returned by a write of their own (not piggy-backed) */
    uint64_t batches, batched;      /* coalesced messages sent, blocks they carried */
    uint64_t cq_reads, cq_empty_reads;  /* CQ reads, those that found it empty */
    uint64_t deferred_reposts;      /* receive buffers reposted a pass late (HASHI_FABRIC_DEFER_REPOST) */
};
extern struct fab_state fab;

/*
 * Post a receive or an RMA operation now or, when the provider refuses it or
 * earlier ones of its side still wait, queue it (progress posts it in
 * order). 0, or a negative libfabric error other than -FI_EAGAIN.
 */
int fab_submit(struct fab_op *op);
void fab_queue_push(struct fab_queue *q, struct fab_op *op);
/*
 * Tiny write (checked by the caller) with the value in CQ data (a zero-length
 * write) or as a message. Like every message it is in the provider's hands
 * when this returns (see fabric.c, back-pressure).
 */
int fab_tiny_write(int peer, uint64_t offset, uint64_t value, unsigned size);
int fab_peer_ok(int peer);
/* Send peer's open batch of coalesced blocks, if any: every other kind of
 * traffic to peer calls it first, so the order transport.h promises holds. */
void fab_batch_send(int peer);
static inline void fab_batch_before(int peer)
{
    if (__builtin_expect(fab.peers[peer].batch != NULL, 0))
        fab_batch_send(peer);
}
int fab_tiny_valid(int peer, uint64_t offset, unsigned size);
/* Registration used by mem_reg and by operations on unregistered memory. */
int fab_mem_register(void *buf, size_t len, struct fab_mem **out);
void fab_mem_release(struct fab_mem *m);

/* fabric_rma.c */
ssize_t fab_rma_post(struct fab_rma *r);
/* A piece completed (status 0) or failed: queue the next piece on
 * fab.pending, or the operation on fab.done for progress to report. Posts
 * nothing itself (it runs inside the completion loop). */
void fab_rma_complete(struct fab_rma *r, int status);
/* Report a finished operation to its owner and free it. */
void fab_rma_finish(struct fab_rma *r);
/* Free without reporting (finalize). */
void fab_rma_free(struct fab_rma *r);
int fab_put(int peer, const void *src, size_t len, const struct hashi_tl_mem *src_mem,
            const struct hashi_tl_rkey *rkey, uint64_t offset, const struct hashi_tl_signal *sig,
            hashi_tl_done_fn done, void *arg);
int fab_get(int peer, void *dst, size_t len, const struct hashi_tl_mem *dst_mem, const struct hashi_tl_rkey *rkey,
            uint64_t offset, hashi_tl_done_fn done, void *arg);
int fab_mem_reg(void *buf, size_t len, void **handle);
void fab_mem_dereg(void *handle);
void fab_rkey_pack(void *handle, const struct hashi_tl_mem *mem, int peer, struct hashi_tl_rkey *rkey);

#endif
