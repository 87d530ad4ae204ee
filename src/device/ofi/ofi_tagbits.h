/*
 * The ofi device's 64 match bits (tagged matching mode).
 *
 * Application messages (bit 63 clear):
 *
 *   63    62    61    60   59 ........ 44  43 ............ 24  23 ........ 0
 *   0   SYNC  RNDV    0    context id (16)  source rank (20)   tag (24)
 *
 *   The source is the sender's rank in the communicator: the tcp provider
 *   (ofi_rxm) has no FI_DIRECTED_RECV, so the source must be in the bits.
 *   Receives ignore SYNC and RNDV, and the source / tag fields for
 *   MPI_ANY_SOURCE / MPI_ANY_TAG; bit 63 and bit 60 are never ignored, so a
 *   receive can only match application messages.
 *   SYNC: MPI_Ssend eager message; remote CQ data = sender world rank << 32 |
 *         cookie; the receiver answers ACK after the match.
 *   RNDV: payload is a struct ofi_rts (sender's registered buffer); remote CQ
 *         data = message size (what a probe reports).
 *
 * Control messages (bit 63 set), received with exact bits only:
 *
 *   63   62 .. 60   59 ............... 32   31 ............... 0
 *   1    type        sender world rank (28)  cookie (32)
 *
 *   The waiting side posts the receive for (type, its peer, its cookie)
 *   before the peer can answer, so answers never meet application receives.
 *   CANCEL (a sender withdrawing its rendezvous or synchronous message,
 *   payload struct ofi_cancel) goes to a receive every rank keeps posted
 *   for any world rank and cookie; its answers CANCEL_NO and CANCEL_YES
 *   differ in bit 60 only, so the sender's one receive for the verdict
 *   ignores that bit.
 */
#ifndef HASHI_DEVICE_OFI_TAGBITS_H
#define HASHI_DEVICE_OFI_TAGBITS_H

#include <stdint.h>

#define OFI_TB_CTRL      (1ull << 63)
#define OFI_TB_SYNC      (1ull << 62)
#define OFI_TB_RNDV      (1ull << 61)
#define OFI_TB_CTX_SHIFT 44
#define OFI_TB_SRC_SHIFT 24
#define OFI_TB_CTX_MASK  (0xffffull << OFI_TB_CTX_SHIFT)
#define OFI_TB_SRC_MASK  (0xfffffull << OFI_TB_SRC_SHIFT)
#define OFI_TB_TAG_MASK  0xffffffull
#define OFI_TB_PROTO     (OFI_TB_SYNC | OFI_TB_RNDV)

/* Limits: larger values cannot be carried (MPI_ERR_TAG / MPI_ERR_RANK). */
#define OFI_TAG_UB       ((1 << 24) - 1)
#define OFI_MAX_CONTEXT  0xffffu
#define OFI_MAX_SOURCE   ((1 << 20) - 1)
#define OFI_MAX_CTRL_WORLD ((1 << 28) - 1)

enum ofi_ctrl_type {
    OFI_CTRL_ACK = 1,
    OFI_CTRL_FIN = 2,
    OFI_CTRL_SELFTEST = 3,
    OFI_CTRL_CANCEL = 4,
    OFI_CTRL_CANCEL_NO = 6,
    OFI_CTRL_CANCEL_YES = 7,
};
/* Ignore mask of the receive that takes a CANCEL from any rank, for any cookie. */
#define OFI_TB_CTRL_PEER_MASK ((uint64_t)OFI_MAX_CTRL_WORLD << 32 | 0xffffffffull)
/* Ignore mask of the sender's receive for either verdict. */
#define OFI_TB_CTRL_VERDICT_BIT (1ull << 60)

/* A CANCEL's payload: the envelope bits the withdrawn message carries (the
 * receiver pulls that sender's messages on that context to find it). */
struct ofi_cancel {
    uint32_t context_id;
    int32_t source;         /* the sender's rank in the communicator */
};

/* The RTS payload of a rendezvous message. */
struct ofi_rts {
    uint64_t raddr;         /* remote address for fi_read (virtual or offset) */
    uint64_t key;           /* MR key */
    uint64_t size;          /* message bytes */
    int32_t world;          /* sender's world rank: where FIN goes */
    uint32_t cookie;        /* names the send in FIN */
};

static inline uint64_t ofi_tb_user(uint32_t context_id, int source, int tag)
{
    return (uint64_t)context_id << OFI_TB_CTX_SHIFT | (uint64_t)(uint32_t)source << OFI_TB_SRC_SHIFT |
           (uint64_t)(uint32_t)tag;
}

/* Bits and ignore mask for a receive; wildcards are negative (MPI_ANY_*). */
static inline void ofi_tb_recv(uint32_t context_id, int source, int tag, uint64_t *bits, uint64_t *ignore)
{
    *bits = (uint64_t)context_id << OFI_TB_CTX_SHIFT;
    *ignore = OFI_TB_PROTO;
    if (source < 0)
        *ignore |= OFI_TB_SRC_MASK;
    else
        *bits |= (uint64_t)(uint32_t)source << OFI_TB_SRC_SHIFT;
    if (tag < 0)
        *ignore |= OFI_TB_TAG_MASK;
    else
        *bits |= (uint64_t)(uint32_t)tag;
}

static inline int ofi_tb_source(uint64_t bits)
{
    return (int)((bits & OFI_TB_SRC_MASK) >> OFI_TB_SRC_SHIFT);
}
static inline int ofi_tb_tag(uint64_t bits)
{
    return (int)(bits & OFI_TB_TAG_MASK);
}
static inline uint32_t ofi_tb_context(uint64_t bits)
{
    return (uint32_t)((bits & OFI_TB_CTX_MASK) >> OFI_TB_CTX_SHIFT);
}

static inline uint64_t ofi_tb_ctrl(enum ofi_ctrl_type type, int world, uint32_t cookie)
{
    return OFI_TB_CTRL | (uint64_t)type << 60 | (uint64_t)(uint32_t)world << 32 | cookie;
}
static inline int ofi_tb_ctrl_world(uint64_t bits)
{
    return (int)((bits >> 32) & OFI_MAX_CTRL_WORLD);
}
static inline enum ofi_ctrl_type ofi_tb_ctrl_type(uint64_t bits)
{
    return (enum ofi_ctrl_type)((bits >> 60) & 7);
}

/* Whether a message with these bits matches a receive posted with (bits, ignore):
 * the provider's rule, for tests and the device's own probe buffer. */
static inline int ofi_tb_matches(uint64_t msg, uint64_t bits, uint64_t ignore)
{
    return ((msg ^ bits) & ~ignore) == 0;
}

#endif
