/*
 * The ofi reference device: libfabric RDM endpoints, peers' addresses from the
 * PMIx modex. This file holds the endpoint's life cycle, the provider choice,
 * the completion loop and the queues of operations the provider refused for
 * now; ofi_tagged.c and ofi_am.c build the two matching modes on it.
 */
#include "device/device.h"
#include "device/ofi/ofi.h"
#include "device/ofi/ofi_tagbits.h"
#include "runtime/clock.h"
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/pvar.h"
#include "runtime/rt.h"
#include "transport/fabric/fi_util.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define OFI_ADDR_KEY "hashi.ofi.addr"
#define OFI_BLOB_MAGIC 0x4f464931u /* "OFI1" */
#define OFI_MIN_EAGER sizeof(struct ofi_rts)

/* What each rank publishes: its endpoint address and the settings peers
 * must agree on (matching mode) or size their buffers by (eager limit). */
struct ofi_blob {
    uint32_t magic;
    uint32_t matching;
    uint64_t eager_limit;
    uint32_t addrlen;
    unsigned char addr[256];
};

struct hashi_ofi hashi_ofi;
extern struct hashi_device_ops hashi_device_ofi;

static int fi_fail(char *err, size_t errlen, const char *what, int rc)
{
    snprintf(err, errlen, "ofi device: %s failed: %s", what, fi_strerror(-rc));
    return -1;
}

void hashi_ofi_warn(const char *what, ssize_t rc)
{
    hashi_log("ofi device: %s failed: %s", what, fi_strerror((int)-rc));
}

/* ------------------------------------------------------------ provider */

static struct fi_info *make_hints(enum ofi_matching want, int with_rma)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        return NULL;
    hints->caps = FI_MSG;
    if (want != OFI_MATCH_CORE)
        hints->caps |= FI_TAGGED;
    if (want != OFI_MATCH_TAGGED)
        hints->caps |= FI_MULTI_RECV;
    if (with_rma)
        hints->caps |= FI_RMA | FI_READ | FI_REMOTE_READ;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->av_type = FI_AV_TABLE;
    /* Modes the device handles: remote addresses either virtual or offsets,
     * keys chosen by the provider or by us; it registers only its own
     * allocated buffers. No FI_MR_LOCAL: user buffers go unregistered. */
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    return hints;
}

/*
 * Ask libfabric for endpoints that can serve the requested matching: with
 * RMA reads first (rendezvous), for auto both matching modes, then either.
 * *got says which capabilities the chosen entry has (auto: both modes).
 */
static int get_info(enum ofi_matching want, enum ofi_matching *got, char *err, size_t errlen)
{
    static const struct { enum ofi_matching want, caps; int rma; } attempts[] = {
        { OFI_MATCH_AUTO, OFI_MATCH_AUTO, 1 },
        { OFI_MATCH_AUTO, OFI_MATCH_TAGGED, 1 },
        { OFI_MATCH_AUTO, OFI_MATCH_CORE, 1 },
        { OFI_MATCH_AUTO, OFI_MATCH_CORE, 0 },
        { OFI_MATCH_TAGGED, OFI_MATCH_TAGGED, 1 },
        { OFI_MATCH_CORE, OFI_MATCH_CORE, 1 },
        { OFI_MATCH_CORE, OFI_MATCH_CORE, 0 },
    };
    int rc = -FI_ENODATA;
    for (size_t i = 0; i < sizeof attempts / sizeof *attempts; i++) {
        if (attempts[i].want != want)
            continue;
        struct fi_info *hints = make_hints(attempts[i].caps, attempts[i].rma);
        if (!hints) {
            snprintf(err, errlen, "ofi device: out of memory");
            return -1;
        }
        rc = fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, hints, &hashi_ofi.info_list);
        fi_freeinfo(hints);
        if (rc == 0 && hashi_ofi.info_list) {
            hashi_ofi.has_rma = attempts[i].rma;
            *got = attempts[i].caps;
            hashi_ofi.info = hashi_fi_choose(hashi_ofi.info_list, hashi_job.num_nodes <= 1,
                                             strcmp(hashi_param_str(HASHI_P_OFI_TCP), "net") == 0);
            return 0;
        }
        hashi_ofi.info_list = NULL;
    }
    const char *needs = want == OFI_MATCH_TAGGED ? "tagged RDM endpoints with RMA reads"
                                                 : "RDM endpoints with tagged messages or multi-receive buffers";
    hashi_fi_unusable(err, errlen, "ofi device", needs, rc);
    return -1;
}

/*
 * Tagged matching needs the provider to match unexpected messages against
 * wildcard receives (start-up check). auto takes tagged when it can, else
 * core; an explicit tagged request the provider cannot serve is an error.
 */
static int decide_matching(enum ofi_matching want, enum ofi_matching caps, char *err, size_t errlen)
{
    const char *prov = hashi_ofi.info->fabric_attr->prov_name;
    if (caps == OFI_MATCH_CORE) {
        hashi_ofi.matching = OFI_MATCH_CORE;
        return 0;
    }
    /* Only tagged endpoints to be had: auto cannot fall back. */
    if (caps == OFI_MATCH_TAGGED)
        want = OFI_MATCH_TAGGED;
    /* What tagged matching needs besides working wildcards. */
    char why[160] = "";
    uint64_t fmt = hashi_ofi.info->ep_attr->mem_tag_format;
    if (!hashi_ofi.has_rma)
        snprintf(why, sizeof why, "RMA reads (for its rendezvous)");
    else if (hashi_ofi.info->domain_attr->cq_data_size < 8)
        snprintf(why, sizeof why, "8 bytes of remote CQ data");
    else if (fmt && !(fmt >> 63))
        snprintf(why, sizeof why, "64 tag bits (its format is %#llx)", (unsigned long long)fmt);
    else if (hashi_job.size - 1 > OFI_MAX_CTRL_WORLD)
        snprintf(why, sizeof why, "room for more than %d ranks in its tag bits", OFI_MAX_CTRL_WORLD + 1);
    if (why[0]) {
        if (want == OFI_MATCH_TAGGED) {
            snprintf(err, errlen, "ofi device: provider %s lacks %s, which HASHI_OFI_MATCHING=tagged needs; "
                     "use HASHI_OFI_MATCHING=core", prov, why);
            return -1;
        }
        HASHI_DEBUG(1, "ofi device: provider %s lacks %s: using core matching", prov, why);
        hashi_ofi.matching = OFI_MATCH_CORE;
        return 0;
    }
    int wildcard_ok, peek_ok;
    if (hashi_ofi_selftest(&wildcard_ok, &peek_ok, err, errlen) != 0)
        return -1;
    hashi_ofi.probe_peek = peek_ok;
    if (wildcard_ok) {
        hashi_ofi.matching = OFI_MATCH_TAGGED;
        return 0;
    }
    if (want == OFI_MATCH_TAGGED) {
        snprintf(err, errlen,
                 "ofi device: provider %s (libfabric %u.%u) does not match messages that arrived before their "
                 "receive when the receive has wildcards (MPI_ANY_SOURCE, MPI_ANY_TAG), so HASHI_OFI_MATCHING=tagged "
                 "cannot run on it; use HASHI_OFI_MATCHING=core (or auto), or another FI_PROVIDER",
                 prov, FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
        return -1;
    }
    HASHI_DEBUG(1, "ofi device: provider %s cannot match unexpected messages against wildcard receives: "
                "using core matching", prov);
    hashi_ofi.matching = OFI_MATCH_CORE;
    return 0;
}

static int read_params(enum ofi_matching *want, char *err, size_t errlen)
{
    const char *m = hashi_param_str(HASHI_P_OFI_MATCHING);
    *want = strcasecmp(m, "core") == 0     ? OFI_MATCH_CORE
          : strcasecmp(m, "tagged") == 0   ? OFI_MATCH_TAGGED
                                           : OFI_MATCH_AUTO;
    int64_t eager = hashi_param_int(HASHI_P_OFI_EAGER_LIMIT);
    int64_t max_msg = hashi_param_int(HASHI_P_OFI_MAX_MSG);
    if (eager < 0 || eager > (16 << 20)) {
        snprintf(err, errlen, "ofi device: HASHI_OFI_EAGER_LIMIT=%lld is out of range (0 .. 16m)", (long long)eager);
        return -1;
    }
    if (max_msg < 4096) {
        snprintf(err, errlen, "ofi device: HASHI_OFI_MAX_MSG=%lld is too small (at least 4k)", (long long)max_msg);
        return -1;
    }
    /* A floor of 32 bytes: a rendezvous request must fit an eager buffer. */
    hashi_ofi.eager_limit = (size_t)eager < OFI_MIN_EAGER ? OFI_MIN_EAGER : (size_t)eager;
    hashi_ofi.max_xfer = (size_t)max_msg;
    return 0;
}

/* The device's diagnostics as MPI_T performance variables (runtime/pvar.h). */
static const struct hashi_pvar ofi_pvars[] = {
    { "ofi_eagain", "hashi_ofi", "operations the provider refused for a while (queued, retried)",
      &hashi_ofi.eagain_count },
};

static int ofi_init(char *err, size_t errlen)
{
    enum ofi_matching want, caps;
    memset(&hashi_ofi, 0, sizeof hashi_ofi);
    if (hashi_pvar_register(ofi_pvars, (int)(sizeof ofi_pvars / sizeof ofi_pvars[0])) != 0) {
        snprintf(err, errlen, "ofi device: out of memory registering performance variables");
        return -1;
    }
    /* ofi_rxm (the tcp path) accepts only 2048 posted receives by default;
     * receives beyond that wait in rx_pending in posting order, and a program
     * with thousands outstanding (test/p2p/many) could then starve a later
     * receive on another context that its peers need first. A deeper queue
     * (read when libfabric loads, so before fi_getinfo) covers 16k; the user's
     * own FI_OFI_RXM_RX_SIZE wins. */
    setenv("FI_OFI_RXM_RX_SIZE", "16384", 0);
    if (read_params(&want, err, errlen) != 0 || get_info(want, &caps, err, errlen) != 0)
        return -1;
    struct fi_info *info = hashi_ofi.info;

    hashi_ofi.inject_size = info->tx_attr->inject_size;
    if (info->ep_attr->max_msg_size && info->ep_attr->max_msg_size < hashi_ofi.max_xfer)
        hashi_ofi.max_xfer = info->ep_attr->max_msg_size;
    hashi_ofi.mr_virt_addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    hashi_ofi.mr_prov_key = (info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
    hashi_ofi.next_mr_key = 1;

    if (hashi_fi_is_shm(info) && info->addr_format == FI_ADDR_STR &&
        hashi_fi_name_shm_endpoint(info, "ofi", err, errlen) != 0)
        return -1;
    int rc;
    if ((rc = fi_fabric(info->fabric_attr, &hashi_ofi.fabric, NULL)))
        return fi_fail(err, errlen, "fi_fabric", rc);
    if ((rc = fi_domain(hashi_ofi.fabric, info, &hashi_ofi.domain, NULL)))
        return fi_fail(err, errlen, "fi_domain", rc);
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 0 };
    if ((rc = hashi_fi_cq_open(hashi_ofi.fabric, hashi_ofi.domain, info, &cq_attr, &hashi_ofi.cq, &hashi_ofi.wait,
                               "ofi device")))
        return fi_fail(err, errlen, "fi_cq_open", rc);
    struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .count = (size_t)hashi_job.size };
    if ((rc = fi_av_open(hashi_ofi.domain, &av_attr, &hashi_ofi.av, NULL)))
        return fi_fail(err, errlen, "fi_av_open", rc);
    if ((rc = fi_endpoint(hashi_ofi.domain, info, &hashi_ofi.ep, NULL)))
        return fi_fail(err, errlen, "fi_endpoint", rc);
    if ((rc = fi_ep_bind(hashi_ofi.ep, &hashi_ofi.cq->fid, FI_TRANSMIT | FI_RECV)))
        return fi_fail(err, errlen, "fi_ep_bind(cq)", rc);
    if ((rc = fi_ep_bind(hashi_ofi.ep, &hashi_ofi.av->fid, 0)))
        return fi_fail(err, errlen, "fi_ep_bind(av)", rc);
    if ((rc = fi_enable(hashi_ofi.ep)))
        return fi_fail(err, errlen, "fi_enable", rc);
    if (decide_matching(want, caps, err, errlen) != 0)
        return -1;
    HASHI_DEBUG(1, "ofi device: provider %s, fabric %s, %s matching%s", info->fabric_attr->prov_name,
                info->fabric_attr->name, hashi_ofi.matching == OFI_MATCH_TAGGED ? "tagged" : "core",
                hashi_ofi.has_rma ? "" : ", no RMA");
    rc = hashi_ofi.matching == OFI_MATCH_TAGGED ? hashi_ofi_tagged_init(err, errlen) : hashi_ofi_am_init(err, errlen);
    if (rc != 0)
        return -1;

    struct ofi_blob blob = { .magic = OFI_BLOB_MAGIC, .matching = hashi_ofi.matching,
                             .eager_limit = hashi_ofi.eager_limit };
    size_t addrlen = sizeof blob.addr;
    if ((rc = fi_getname(&hashi_ofi.ep->fid, blob.addr, &addrlen)))
        return fi_fail(err, errlen, "fi_getname", rc);
    blob.addrlen = (uint32_t)addrlen;
    if (hashi_rt_put(OFI_ADDR_KEY, &blob, offsetof(struct ofi_blob, addr) + addrlen) != 0) {
        snprintf(err, errlen, "ofi device: publishing the endpoint address through PMIx failed");
        return -1;
    }
    return 0;
}

static int ofi_connect(char *err, size_t errlen)
{
    hashi_ofi.peers = calloc((size_t)hashi_job.size, sizeof *hashi_ofi.peers);
    if (!hashi_ofi.peers) {
        snprintf(err, errlen, "ofi device: out of memory");
        return -1;
    }
    hashi_ofi.peer_eager_max = hashi_ofi.eager_limit;
    /* Insert every address; peers[] maps world ranks to what the AV returned. */
    for (int r = 0; r < hashi_job.size; r++) {
        struct ofi_blob blob;
        size_t len = 0;
        if (hashi_rt_get_record(r, OFI_ADDR_KEY, &blob, sizeof blob, &len) != 0) {
            snprintf(err, errlen, "ofi device: rank %d published no endpoint address", r);
            return -1;
        }
        if (len < offsetof(struct ofi_blob, addr) || blob.magic != OFI_BLOB_MAGIC ||
            blob.addrlen > len - offsetof(struct ofi_blob, addr)) {
            snprintf(err, errlen, "ofi device: rank %d published a malformed endpoint address", r);
            return -1;
        }
        if (blob.matching != (uint32_t)hashi_ofi.matching) {
            snprintf(err, errlen,
                     "ofi device: rank %d uses HASHI_OFI_MATCHING=%s but this rank %s: set it the same for every rank",
                     r, blob.matching == OFI_MATCH_CORE ? "core" : "tagged",
                     hashi_ofi.matching == OFI_MATCH_CORE ? "core" : "tagged");
            return -1;
        }
        if (blob.eager_limit > hashi_ofi.peer_eager_max)
            hashi_ofi.peer_eager_max = (size_t)blob.eager_limit;
        if (r == hashi_job.rank && hashi_ofi.have_self_addr) {
            hashi_ofi.peers[r] = hashi_ofi.self_addr;
            continue;
        }
        int n = fi_av_insert(hashi_ofi.av, blob.addr, 1, &hashi_ofi.peers[r], 0, NULL);
        if (n != 1) {
            snprintf(err, errlen, "ofi device: fi_av_insert of rank %d's address failed", r);
            return -1;
        }
    }
    /* Alone with no launcher to clean up after a crash: the region only
     * maps itself (already done when its address went into the AV), so its
     * name can go now and an aborted singleton leaves nothing in /dev/shm. */
    if (hashi_job.size == 1 && !hashi_job.job_dir[0] && hashi_fi_is_shm(hashi_ofi.info))
        hashi_fi_unlink_shm_name(hashi_ofi.ep, "ofi device");
    return hashi_ofi.matching == OFI_MATCH_TAGGED ? hashi_ofi_tagged_connect(err, errlen)
                                                  : hashi_ofi_am_connect(err, errlen);
}

/* ------------------------------------------------------------ operations */

static void queue_append(struct ofi_queue *q, struct ofi_op *op)
{
    op->next = NULL;
    if (q->tail)
        q->tail->next = op;
    else
        q->head = op;
    q->tail = op;
}

/* Deliver a posting failure as an error completion, so the owner cleans up. */
static void fail_op(struct ofi_op *op, ssize_t rc)
{
    struct fi_cq_err_entry e;
    memset(&e, 0, sizeof e);
    e.op_context = op;
    e.err = (int)-rc;
    hashi_ofi_warn(op->cls->name, rc);
    op->cls->complete(op, NULL, &e);
}

void hashi_ofi_post(struct ofi_op *op)
{
    struct ofi_queue *q = op->cls->rx ? &hashi_ofi.rx_pending : &hashi_ofi.tx_pending;
    if (q->head) {
        queue_append(q, op);
        return;
    }
    ssize_t rc = op->cls->post(op);
    if (rc == -FI_EAGAIN) {
        hashi_ofi.eagain_count++;
        HASHI_DEBUG(3, "ofi device: %s refused for now, queued", op->cls->name);
        queue_append(q, op);
    } else if (rc) {
        fail_op(op, rc);
    }
}

int hashi_ofi_unqueue(struct ofi_op *op)
{
    struct ofi_queue *q = op->cls->rx ? &hashi_ofi.rx_pending : &hashi_ofi.tx_pending;
    struct ofi_op *prev = NULL;
    for (struct ofi_op *o = q->head; o; prev = o, o = o->next) {
        if (o != op)
            continue;
        if (prev)
            prev->next = o->next;
        else
            q->head = o->next;
        if (q->tail == o)
            q->tail = prev;
        o->next = NULL;
        return 1;
    }
    return 0;
}

static int retry_queue(struct ofi_queue *q)
{
    int posted = 0;
    while (q->head) {
        struct ofi_op *op = q->head;
        q->head = op->next;
        if (!q->head)
            q->tail = NULL;
        /* Taken off first: post may free an operation that completes at once. */
        ssize_t rc = op->cls->post(op);
        HASHI_DEBUG(4, "ofi device: retry %s: %zd", op->cls->name, rc);
        if (rc == -FI_EAGAIN) {
            op->next = q->head;
            q->head = op;
            if (!q->tail)
                q->tail = op;
            break;
        }
        posted++;
        if (rc)
            fail_op(op, rc);
    }
    return posted;
}

int hashi_ofi_retry_queues(void)
{
    return retry_queue(&hashi_ofi.tx_pending) + retry_queue(&hashi_ofi.rx_pending);
}

/* One error completion (fi_cq_read said -FI_EAVAIL); 1 if there was one. */
static __attribute__((noinline, cold)) int read_error_completion(void)
{
    struct fi_cq_err_entry e;
    memset(&e, 0, sizeof e);
    if (fi_cq_readerr(hashi_ofi.cq, &e, 0) != 1)
        return 0;
    /* Some providers (shm 1.17) report err negated. */
    if (e.err < 0)
        e.err = -e.err;
    struct ofi_op *op = e.op_context;
    HASHI_DEBUG(4, "ofi device: error completion of %s: %s, %zu bytes (%zu more), tag %#llx",
                op ? op->cls->name : "(none)", fi_strerror(e.err), e.len, e.olen, (unsigned long long)e.tag);
    if (op)
        op->cls->complete(op, NULL, &e);
    else
        hashi_log("ofi device: error completion without an operation: %s",
                  fi_cq_strerror(hashi_ofi.cq, e.prov_errno, e.err_data, NULL, 0));
    return 1;
}

static inline void complete_one(const struct fi_cq_tagged_entry *e)
{
    struct ofi_op *op = e->op_context;
    HASHI_DEBUG(4, "ofi device: completion of %s, %zu bytes, tag %#llx", op ? op->cls->name : "(none)", e->len,
                (unsigned long long)e->tag);
    if (op)
        op->cls->complete(op, e, NULL);
}

/*
 * The completions after a first read that returned n (> 0, or an error):
 * hand them out, then read a few batches more at most, so one call cannot
 * starve its caller. Out of line: an idle poll never gets here.
 */
static __attribute__((noinline)) int drain_more(struct fi_cq_tagged_entry *ents, ssize_t n);

int hashi_ofi_drain_cq(struct fi_cq_tagged_entry *ents, ssize_t n)
{
    /* One completion (a ping-pong's every message): no loop to set up, and
     * the loop's registers are saved in drain_more only. */
    if (__builtin_expect(n == 1, 1)) {
        complete_one(&ents[0]);
        return 1;
    }
    return drain_more(ents, n);
}

static int drain_more(struct fi_cq_tagged_entry *ents, ssize_t n)
{
    int events = 0;
    for (int round = 0;;) {
        if (n > 0) {
            for (ssize_t i = 0; i < n; i++)
                complete_one(&ents[i]);
            events += (int)n;
            if (n < HASHI_OFI_CQ_BATCH)
                break;
        } else if (n == -FI_EAVAIL) {
            if (!read_error_completion())
                break;
            events++;
        } else {
            if (n != -FI_EAGAIN)
                hashi_ofi_warn("fi_cq_read", n);
            break;
        }
        if (++round == 4)
            break;
        n = fi_cq_read(hashi_ofi.cq, ents, HASHI_OFI_CQ_BATCH);
    }
    return events;
}

int hashi_ofi_progress(void)
{
    return hashi_ofi_poll();
}

int hashi_ofi_mr_reg(void *buf, size_t len, struct fid_mr **mr, uint64_t *raddr, uint64_t *key)
{
    uint64_t requested = hashi_ofi.mr_prov_key ? 0 : hashi_ofi.next_mr_key++;
    int rc = fi_mr_reg(hashi_ofi.domain, buf, len, FI_REMOTE_READ, 0, requested, 0, mr, NULL);
    if (rc)
        return rc;
    *key = fi_mr_key(*mr);
    *raddr = hashi_ofi.mr_virt_addr ? (uint64_t)(uintptr_t)buf : 0;
    return 0;
}

/* ------------------------------------------------------------ teardown */


static void ofi_finalize(void)
{
    /* Internal answers (FIN, ACK) the provider had refused may still wait:
     * give them a moment to leave, peers may be waiting for them. */
    if (hashi_ofi.ep) {
        int64_t deadline = hashi_now_ns() + 1000000000;
        while (hashi_ofi.tx_pending.head && hashi_now_ns() < deadline)
            hashi_ofi_progress();
    }
    /* The endpoint goes first: then no buffer is in the provider's hands. */
    if (hashi_ofi.ep) hashi_fi_close(&hashi_ofi.ep->fid);
    hashi_ofi.ep = NULL;
    if (hashi_ofi.matching == OFI_MATCH_TAGGED)
        hashi_ofi_tagged_finalize();
    else
        hashi_ofi_am_finalize();
    if (hashi_ofi.av) hashi_fi_close(&hashi_ofi.av->fid);
    if (hashi_ofi.cq) hashi_fi_close(&hashi_ofi.cq->fid);
    if (hashi_ofi.domain) hashi_fi_close(&hashi_ofi.domain->fid);
    if (hashi_ofi.fabric) hashi_fi_close(&hashi_ofi.fabric->fid);
    if (hashi_ofi.info_list) fi_freeinfo(hashi_ofi.info_list);
    free(hashi_ofi.peers);
    if (hashi_ofi.eagain_count)
        HASHI_DEBUG(1, "ofi device: the provider refused %" PRIu64 " operations for a while (queued, retried)",
                    hashi_ofi.eagain_count);
    memset(&hashi_ofi, 0, sizeof hashi_ofi);
}

static int ofi_wait_fd(void)
{
    return hashi_ofi.wait.fd;
}

static int ofi_trywait(void)
{
    return hashi_fi_trywait(&hashi_ofi.wait);
}

struct hashi_device_ops hashi_device_ofi = {
    .name = "ofi",
    .description = "reference device: libfabric RDM endpoints (FI_PROVIDER), matching by the provider's tagged "
                   "messages or by Hashi's matching core (HASHI_OFI_MATCHING)",
    .transports = NULL,
    .init = ofi_init,
    .connect = ofi_connect,
    .finalize = ofi_finalize,
    .wait_fd = ofi_wait_fd,
    .trywait = ofi_trywait,
};
