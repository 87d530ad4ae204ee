/*
 * Pieces every libfabric user in Hashi needs the same way (the ofi device,
 * the fabric transport): which provider entry to take, the one-line error
 * when a provider cannot serve, and naming shm regions so nothing outlives
 * the job.
 */
#ifndef HASHI_TRANSPORT_FI_UTIL_H
#define HASHI_TRANSPORT_FI_UTIL_H

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <stddef.h>

int hashi_fi_is_shm(const struct fi_info *info);

/* fi_close, for the fids of a teardown that may not exist. */
static inline void hashi_fi_close(struct fid *fid)
{
    if (fid)
        fi_close(fid);
}

/*
 * Take an entry of fi_getinfo's list. FI_PROVIDER set: libfabric already
 * kept only those providers, the first wins. Unset: when every peer to reach
 * shares the node prefer shm (it is the fastest there), else the first
 * provider that is not shm (shm cannot leave the node); with prefer_net, a
 * first choice of tcp;ofi_rxm gives way to `net` on the same fabric and
 * domain (the same sockets without rxm's completion signal, docs/ofi.md
 * "tcp: where the time goes").
 */
struct fi_info *hashi_fi_choose(struct fi_info *list, int peers_all_local, int prefer_net);

/*
 * Whether hashi_fi_choose will take shm, told before fi_getinfo (a device
 * sizes its messages before the transport opens libfabric): FI_PROVIDER
 * names shm first, or is unset and every peer shares the node. No libfabric
 * call.
 */
int hashi_fi_expect_shm(int peers_all_local);

/*
 * The one line a user sees when no provider offers what `who` needs
 * (rc: fi_getinfo's result): names FI_PROVIDER if set and points at
 * `fi_info -l`.
 */
void hashi_fi_unusable(char *err, size_t errlen, const char *who, const char *needs, int rc);

/*
 * shm names its shared region after the endpoint's source address,
 * "<pid>:0:0" by default: a rank killed before closing leaves the file in
 * /dev/shm and a later process with that pid fails fi_enable with EBUSY.
 * This names it "<job dir basename>-<tag>-<rank>", which mpirun and its
 * reaper remove with the job however it ends; without a launcher the name
 * carries the uid, job key and pid. Call before fi_endpoint on an shm entry
 * whose addr_format is FI_ADDR_STR. 0, or -1 with err.
 */
int hashi_fi_name_shm_endpoint(struct fi_info *info, const char *tag, char *err, size_t errlen);

/* Remove the name of the endpoint's shm region (once every peer mapped it). */
void hashi_fi_unlink_shm_name(struct fid_ep *ep, const char *who);

/*
 * A CQ's wait object, for a rank that sleeps while it waits (runtime/wake.h):
 * a file descriptor that becomes readable when the provider has something
 * for this rank, and the fabric for fi_trywait. fd is -1 when there is none.
 */
struct hashi_fi_wait {
    struct fid_fabric *fabric;
    struct fid_cq *cq;
    int fd;
};

/*
 * fi_cq_open, with a wait object (FI_WAIT_FD) when one is useful: the rank
 * may turn out oversubscribed (hashi_topo_may_oversubscribe), HASHI_WAIT_FD
 * is on and the provider is not shm (whose CQ nothing signals from outside:
 * a peer's data lands only in this rank's own progress). A provider that
 * refuses the wait object gets the CQ without one. *w says what came of it.
 * 0, or libfabric's negative error code.
 */
int hashi_fi_cq_open(struct fid_fabric *fabric, struct fid_domain *domain, const struct fi_info *info,
                     struct fi_cq_attr *attr, struct fid_cq **cq, struct hashi_fi_wait *w, const char *who);

/*
 * Right before blocking on w->fd: 0 when the provider agrees (nothing is
 * pending, the fd will signal what comes), nonzero when something is pending
 * (read the CQ instead). Under the caller's lock: FI_THREAD_DOMAIN.
 */
int hashi_fi_trywait(const struct hashi_fi_wait *w);

#endif
