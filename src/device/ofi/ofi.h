/*
 * The ofi device's state: one RDM endpoint per rank, one completion queue,
 * peers' addresses in an AV table indexed by world rank.
 *
 * Two matching modes share the endpoint life cycle, the completion loop and
 * the queues of operations the provider refused for now (-FI_EAGAIN):
 *   tagged (ofi_tagged.c)  libfabric tagged messages, matching in the provider;
 *   core   (ofi_am.c)      untagged messages into multi-receive buffers,
 *                          matching in the shared core (device/common/am.h).
 */
#ifndef HASHI_DEVICE_OFI_H
#define HASHI_DEVICE_OFI_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/fabric/fi_util.h"

struct ofi_op;

/* What an operation is: how to (re)post it and what its completion means. */
struct ofi_op_class {
    const char *name;
    int rx;     /* posts to the receive side (keeps receive order in its own queue) */
    /* Hand the operation to the provider: 0, -FI_EAGAIN (retry later), or
     * another negative libfabric error. May free op when it returns 0 and
     * the operation produces no completion (inject). */
    ssize_t (*post)(struct ofi_op *op);
    /* A completion: exactly one of e and err is non-NULL. */
    void (*complete)(struct ofi_op *op, const struct fi_cq_tagged_entry *e, const struct fi_cq_err_entry *err);
};

/*
 * Every operation given to libfabric is one of these, embedded in a request
 * or an internal object. The provider may use ctx (FI_CONTEXT2 mode) and
 * returns its address as op_context, so it comes first.
 */
struct ofi_op {
    struct fi_context2 ctx;
    const struct ofi_op_class *cls;
    struct ofi_op *next;    /* in a pending queue */
};

struct ofi_queue {
    struct ofi_op *head, *tail;
};

enum ofi_matching { OFI_MATCH_TAGGED, OFI_MATCH_CORE, OFI_MATCH_AUTO };

struct hashi_ofi {
    struct fi_info *info_list;   /* everything fi_getinfo offered */
    struct fi_info *info;        /* the entry in use */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct hashi_fi_wait wait;   /* the CQ's wait object (fd -1: none) */
    struct fid_av *av;
    struct fid_ep *ep;
    fi_addr_t *peers;            /* by world rank */
    fi_addr_t self_addr;         /* this endpoint, inserted by the start-up check */
    int have_self_addr;

    enum ofi_matching matching;  /* as decided at init (never AUTO afterwards) */
    int probe_peek;              /* FI_PEEK leaves messages in place (start-up check) */
    size_t inject_size;          /* provider's inject limit */
    size_t eager_limit;          /* this rank's HASHI_OFI_EAGER_LIMIT (as used) */
    size_t peer_eager_max;       /* the largest eager limit of any rank */
    size_t max_xfer;             /* largest single transfer (reads are split) */
    int has_rma;
    int mr_virt_addr;            /* remote addresses are virtual, else offsets */
    int mr_prov_key;             /* the provider chooses MR keys */
    uint64_t next_mr_key;

    struct ofi_queue tx_pending, rx_pending;  /* refused by the provider, in order */
    uint64_t eagain_count;                   /* diagnostics; MPI_T variable ofi_eagain */
};
extern struct hashi_ofi hashi_ofi;

/*
 * Post an operation, keeping order: if earlier operations of the same side
 * are still waiting, or the provider answers -FI_EAGAIN, it joins the queue
 * and progress posts it later. Other errors are reported through the
 * operation's completion with err set (never lost silently).
 */
void hashi_ofi_post(struct ofi_op *op);
/* Whether nothing waits in the queue of that side (then posting directly keeps order). */
static inline int hashi_ofi_queue_empty(int rx)
{
    return rx ? hashi_ofi.rx_pending.head == NULL : hashi_ofi.tx_pending.head == NULL;
}
/* Remove a queued operation that was never posted (cancel); 1 if it was queued. */
int hashi_ofi_unqueue(struct ofi_op *op);
/* Retry queued operations, then drain the completion queue. Returns events handled. */
int hashi_ofi_progress(void);

/* Completions read per fi_cq_read. */
#define HASHI_OFI_CQ_BATCH 16
/* The out-of-line halves of hashi_ofi_poll: posting what the queues hold,
 * and handing out n completions (or the error a read returned). */
int hashi_ofi_retry_queues(void);
int hashi_ofi_drain_cq(struct fi_cq_tagged_entry *ents, ssize_t n);

/*
 * hashi_ofi_progress for the device's progress entry points, inlined there:
 * a wait loop polls it millions of times, and an idle poll is then the
 * provider's fi_cq_read plus a few instructions, no call layer of our own.
 */
static inline __attribute__((always_inline)) int hashi_ofi_poll(void)
{
    int events = 0;
    if (__builtin_expect(((uintptr_t)hashi_ofi.tx_pending.head | (uintptr_t)hashi_ofi.rx_pending.head) != 0, 0))
        events = hashi_ofi_retry_queues();
    struct fi_cq_tagged_entry ents[HASHI_OFI_CQ_BATCH];
    ssize_t n = fi_cq_read(hashi_ofi.cq, ents, HASHI_OFI_CQ_BATCH);
    if (__builtin_expect(n == -FI_EAGAIN, 1))
        return events;
    return events + hashi_ofi_drain_cq(ents, n);
}

/* Register len bytes at buf for remote reads: *raddr and *key are what a peer's fi_read needs. */
int hashi_ofi_mr_reg(void *buf, size_t len, struct fid_mr **mr, uint64_t *raddr, uint64_t *key);

/* Report a failed libfabric call once per kind, with the error text. */
void hashi_ofi_warn(const char *what, ssize_t rc);

/*
 * Check the provider's tag matching on the fresh endpoint (ofi_selftest.c):
 * *wildcard_ok if a receive with ignore bits matches a message that arrived
 * before it, *peek_ok if FI_PEEK leaves the message in place. 0, or -1 with err.
 */
int hashi_ofi_selftest(int *wildcard_ok, int *peek_ok, char *err, size_t errlen);

/* Mode entry points: set hashi_device_ofi.p2p in init, finish wire-up in connect. */
int hashi_ofi_tagged_init(char *err, size_t errlen);
int hashi_ofi_tagged_connect(char *err, size_t errlen);
void hashi_ofi_tagged_finalize(void);
int hashi_ofi_am_init(char *err, size_t errlen);
int hashi_ofi_am_connect(char *err, size_t errlen);
void hashi_ofi_am_finalize(void);

#endif
