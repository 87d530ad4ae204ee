/*
 * The ofi reference device: libfabric RDM endpoints, peers' addresses from the
 * PMIx modex. This file holds the endpoint's life cycle; messaging builds on it.
 */
#include "device/device.h"
#include "device/ofi/ofi.h"
#include "runtime/log.h"
#include "runtime/rt.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFI_ADDR_KEY "hashi.ofi.addr"

struct hashi_ofi hashi_ofi;

static int fi_fail(char *err, size_t errlen, const char *what, int rc)
{
    snprintf(err, errlen, "ofi device: %s failed: %s", what, fi_strerror(-rc));
    return -1;
}

static int ofi_init(char *err, size_t errlen)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints) {
        snprintf(err, errlen, "ofi device: out of memory");
        return -1;
    }
    hints->caps = FI_TAGGED | FI_MSG;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    const char *prov = getenv("FI_PROVIDER");
    int rc = fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, hints, &hashi_ofi.info);
    fi_freeinfo(hints);
    if (rc != 0 || !hashi_ofi.info) {
        snprintf(err, errlen,
                 "ofi device: no libfabric provider offers tagged RDM endpoints%s%s%s (fi_getinfo: %s); "
                 "`fi_info -l` lists the providers this machine has",
                 prov ? " with FI_PROVIDER=" : "", prov ? prov : "", prov ? "" : "", fi_strerror(-rc));
        return -1;
    }
    struct fi_info *info = hashi_ofi.info;
    HASHI_DEBUG(1, "ofi device: provider %s, fabric %s", info->fabric_attr->prov_name, info->fabric_attr->name);

    if ((rc = fi_fabric(info->fabric_attr, &hashi_ofi.fabric, NULL)))
        return fi_fail(err, errlen, "fi_fabric", rc);
    if ((rc = fi_domain(hashi_ofi.fabric, info, &hashi_ofi.domain, NULL)))
        return fi_fail(err, errlen, "fi_domain", rc);
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 0 };
    if ((rc = fi_cq_open(hashi_ofi.domain, &cq_attr, &hashi_ofi.cq, NULL)))
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

    char addr[256];
    size_t addrlen = sizeof addr;
    if ((rc = fi_getname(&hashi_ofi.ep->fid, addr, &addrlen)))
        return fi_fail(err, errlen, "fi_getname", rc);
    if (hashi_rt_put(OFI_ADDR_KEY, addr, addrlen) != 0) {
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
    /* Insert every address in rank order so fi_addr_t r means rank r. */
    for (int r = 0; r < hashi_job.size; r++) {
        void *addr = NULL;
        size_t len = 0;
        if (hashi_rt_get(r, OFI_ADDR_KEY, &addr, &len) != 0) {
            snprintf(err, errlen, "ofi device: rank %d published no endpoint address", r);
            return -1;
        }
        int n = fi_av_insert(hashi_ofi.av, addr, 1, &hashi_ofi.peers[r], 0, NULL);
        free(addr);
        if (n != 1) {
            snprintf(err, errlen, "ofi device: fi_av_insert of rank %d's address failed", r);
            return -1;
        }
    }
    return 0;
}

static void close_fid(struct fid *fid)
{
    if (fid)
        fi_close(fid);
}

static void ofi_finalize(void)
{
    if (hashi_ofi.ep) close_fid(&hashi_ofi.ep->fid);
    if (hashi_ofi.av) close_fid(&hashi_ofi.av->fid);
    if (hashi_ofi.cq) close_fid(&hashi_ofi.cq->fid);
    if (hashi_ofi.domain) close_fid(&hashi_ofi.domain->fid);
    if (hashi_ofi.fabric) close_fid(&hashi_ofi.fabric->fid);
    if (hashi_ofi.info) fi_freeinfo(hashi_ofi.info);
    free(hashi_ofi.peers);
    memset(&hashi_ofi, 0, sizeof hashi_ofi);
}

struct hashi_device_ops hashi_device_ofi = {
    .name = "ofi",
    .description = "reference device: libfabric tagged messages on RDM endpoints (FI_PROVIDER selects the provider)",
    .transports = NULL,
    .init = ofi_init,
    .connect = ofi_connect,
    .finalize = ofi_finalize,
};
