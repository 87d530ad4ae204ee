/*
 * Start-up checks of the provider's tag matching, run on the endpoint before
 * any peer knows its address, with messages it sends to itself under
 * control bits no application message uses (and all consumed again):
 *
 *   wildcard: a message that has already arrived (unexpected) must match a
 *     receive that ignores some of its bits. MPI_ANY_SOURCE, MPI_ANY_TAG and
 *     the device's protocol bits all rely on it. libfabric 1.17's shm
 *     compares unexpected messages bit for bit, so such a receive waits
 *     forever: tagged matching is not usable there.
 *   peek: FI_PEEK must leave the message in place, and FI_PEEK|FI_CLAIM then
 *     an FI_CLAIM receive must deliver exactly the claimed message.
 *     libfabric 1.17's shm handles FI_PEEK as a zero-byte receive (the
 *     message is consumed, with FI_ETRUNC); its udp (ofi_rxd) claims wrongly.
 *     Probes then receive into a device buffer instead.
 *
 * A message is made unexpected for sure by sending it before a second one
 * and receiving the second: ordered delivery (FI_ORDER_SAS) means the first
 * has arrived by then.
 */
#include "device/ofi/ofi.h"
#include "device/ofi/ofi_tagbits.h"
#include "runtime/log.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

struct scratch {
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t self;
};

/* The outcome of one operation on the scratch endpoint. */
struct probe_result {
    int done;
    int err;        /* 0 or the positive libfabric error */
    size_t len;
    uint64_t tag;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read completions until the one for ctx arrives or the time runs out. */
static int wait_for(struct scratch *s, struct fi_context2 *ctx, struct probe_result *r, double seconds)
{
    double deadline = now_s() + seconds;
    while (now_s() < deadline) {
        struct fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(s->cq, &e, 1);
        if (n == 1) {
            if (e.op_context == ctx) {
                r->done = 1;
                r->err = 0;
                r->len = e.len;
                r->tag = e.tag;
                return 0;
            }
            continue;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof err);
            if (fi_cq_readerr(s->cq, &err, 0) == 1 && err.op_context == ctx) {
                r->done = 1;
                r->err = err.err < 0 ? -err.err : err.err;
                r->len = err.len;
                return 0;
            }
        }
    }
    return -1;
}

static int send_self(struct scratch *s, uint64_t bits, double seconds)
{
    static const char text[8] = "hashi!?";
    double deadline = now_s() + seconds;
    for (;;) {
        ssize_t rc = fi_tinject(s->ep, text, sizeof text, s->self, bits);
        if (rc == 0)
            return 0;
        if (rc != -FI_EAGAIN || now_s() > deadline)
            return -1;
        struct fi_cq_tagged_entry e;
        (void)fi_cq_read(s->cq, &e, 1);  /* nothing is pending: this only drives progress */
    }
}

/* Send `first` and then `marker`, and receive `marker`: `first` is then unexpected. */
static int make_unexpected(struct scratch *s, uint64_t first, uint64_t marker)
{
    char buf[8];
    struct fi_context2 ctx;
    struct probe_result r = { 0 };
    if (send_self(s, first, 5.0) != 0 || send_self(s, marker, 5.0) != 0)
        return -1;
    if (fi_trecv(s->ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, marker, 0, &ctx) != 0)
        return -1;
    if (wait_for(s, &ctx, &r, 5.0) != 0 || r.err)
        return -1;
    return 0;
}

int hashi_ofi_selftest(int *wildcard_ok, int *peek_ok, char *err, size_t errlen)
{
    double started = now_s();
    *wildcard_ok = *peek_ok = 0;
    struct scratch s = { .cq = hashi_ofi.cq, .ep = hashi_ofi.ep };
    char addr[256];
    size_t addrlen = sizeof addr;
    if (fi_getname(&hashi_ofi.ep->fid, addr, &addrlen) != 0 ||
        fi_av_insert(hashi_ofi.av, addr, 1, &s.self, 0, NULL) != 1) {
        snprintf(err, errlen, "ofi device: provider %s cannot address its own endpoint (start-up check)",
                 hashi_ofi.info->fabric_attr->prov_name);
        return -1;
    }
    hashi_ofi.self_addr = s.self;
    hashi_ofi.have_self_addr = 1;
    /* Control bits (bit 63) with a type no real control message has. */
    const uint64_t base = OFI_TB_CTRL | (uint64_t)OFI_CTRL_SELFTEST << 60;
    const uint64_t marker = base | 0x1;
    const uint64_t wild_msg = base | 0x0fff000000000055ull, wild_bits = base | 0x55, wild_ignore = 0x0fff000000000000ull;
    const uint64_t peek_msg = base | 0x77;
    char buf[8];
    struct fi_context2 ctx;
    struct probe_result r = { 0 };
    int rc = -1;

    if (make_unexpected(&s, wild_msg, marker) != 0) {
        snprintf(err, errlen, "ofi device: provider %s did not deliver messages to its own endpoint (start-up check)",
                 hashi_ofi.info->fabric_attr->prov_name);
        goto out;
    }
    if (fi_trecv(s.ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, wild_bits, wild_ignore, &ctx) != 0) {
        snprintf(err, errlen, "ofi device: a receive on the start-up check endpoint failed");
        goto out;
    }
    /* Already there, so a working provider matches while the receive is posted. */
    if (wait_for(&s, &ctx, &r, 0.02) == 0 && !r.err) {
        *wildcard_ok = 1;
    } else {
        fi_cancel(&s.ep->fid, &ctx);
        (void)wait_for(&s, &ctx, &r, 0.02);
        /* Take the test message out with its exact bits. */
        memset(&r, 0, sizeof r);
        if (fi_trecv(s.ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, wild_msg, 0, &ctx) == 0)
            (void)wait_for(&s, &ctx, &r, 1.0);
        rc = 0;
        goto out;  /* peeking is moot without working matching */
    }

    if (make_unexpected(&s, peek_msg, marker) != 0) {
        snprintf(err, errlen, "ofi device: provider %s did not deliver messages to its own endpoint (start-up check)",
                 hashi_ofi.info->fabric_attr->prov_name);
        goto out;
    }
    struct fi_msg_tagged msg = { .addr = FI_ADDR_UNSPEC, .tag = peek_msg, .ignore = 0, .context = &ctx };
    memset(&r, 0, sizeof r);
    int peek_works = 0;
    if (fi_trecvmsg(s.ep, &msg, FI_PEEK) == 0 && wait_for(&s, &ctx, &r, 0.2) == 0 && !r.err &&
        r.len == sizeof buf) {
        /* Still there? A plain receive must find it. */
        memset(&r, 0, sizeof r);
        if (fi_trecv(s.ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, peek_msg, 0, &ctx) == 0 &&
            wait_for(&s, &ctx, &r, 0.2) == 0 && !r.err)
            peek_works = 1;
        else
            fi_cancel(&s.ep->fid, &ctx);
    }
    /* Mprobe needs FI_CLAIM too: claim a message, then receive exactly it. */
    if (peek_works && make_unexpected(&s, peek_msg, marker) == 0) {
        memset(&r, 0, sizeof r);
        msg.context = &ctx;
        if (fi_trecvmsg(s.ep, &msg, FI_PEEK | FI_CLAIM) == 0 && wait_for(&s, &ctx, &r, 0.2) == 0 && !r.err) {
            /* A roomier buffer than the message: the length reported must be the message's. */
            char big[2 * sizeof buf];
            struct iovec iov = { big, sizeof big };
            memset(big, 0, sizeof big);
            msg.msg_iov = &iov;
            msg.iov_count = 1;
            memset(&r, 0, sizeof r);
            if (fi_trecvmsg(s.ep, &msg, FI_CLAIM) == 0 && wait_for(&s, &ctx, &r, 0.2) == 0 && !r.err &&
                r.len == sizeof buf && r.tag == peek_msg && memcmp(big, "hashi!?", sizeof buf) == 0)
                *peek_ok = 1;
        }
    }
    rc = 0;
out:
    HASHI_DEBUG(2, "ofi device: %s start-up check (%.1f ms): unexpected wildcard matching %s, FI_PEEK %s",
                hashi_ofi.info->fabric_attr->prov_name, (now_s() - started) * 1e3,
                *wildcard_ok ? "works" : "BROKEN", *peek_ok ? "and FI_CLAIM work" : "or FI_CLAIM fail");
    return rc;
}
