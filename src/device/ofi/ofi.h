/* The ofi device's state: one RDM endpoint per rank. */
#ifndef HASHI_DEVICE_OFI_H
#define HASHI_DEVICE_OFI_H

#include <rdma/fabric.h>

struct hashi_ofi {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    fi_addr_t *peers;      /* by world rank */
};
extern struct hashi_ofi hashi_ofi;

#endif
