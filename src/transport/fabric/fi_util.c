/* Shared libfabric helpers (see fi_util.h). */
#include "transport/fabric/fi_util.h"

#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/topo.h"

#include <errno.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int hashi_fi_is_shm(const struct fi_info *info)
{
    return strcmp(info->fabric_attr->prov_name, "shm") == 0;
}

int hashi_fi_expect_shm(int peers_all_local)
{
    const char *prov = getenv("FI_PROVIDER");
    if (!prov)
        return peers_all_local;
    return strncmp(prov, "shm", 3) == 0 && (prov[3] == '\0' || prov[3] == ',' || prov[3] == ';');
}

static int same_name(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* libfabric's `net` entry for the interface (fabric) and domain of a
 * tcp;ofi_rxm entry, if the list has one. */
static struct fi_info *net_twin(struct fi_info *list, const struct fi_info *rxm)
{
    if (!same_name(rxm->fabric_attr->prov_name, "tcp;ofi_rxm"))
        return NULL;
    for (struct fi_info *i = list; i; i = i->next)
        if (same_name(i->fabric_attr->prov_name, "net") && same_name(i->fabric_attr->name, rxm->fabric_attr->name) &&
            same_name(i->domain_attr->name, rxm->domain_attr->name))
            return i;
    return NULL;
}

struct fi_info *hashi_fi_choose(struct fi_info *list, int peers_all_local, int prefer_net)
{
    if (getenv("FI_PROVIDER"))
        return list;
    if (peers_all_local) {
        for (struct fi_info *i = list; i; i = i->next)
            if (hashi_fi_is_shm(i))
                return i;
    }
    for (struct fi_info *i = list; i; i = i->next)
        if (!hashi_fi_is_shm(i)) {
            struct fi_info *net = prefer_net ? net_twin(list, i) : NULL;
            return net ? net : i;
        }
    return list;
}

void hashi_fi_unusable(char *err, size_t errlen, const char *who, const char *needs, int rc)
{
    const char *prov = getenv("FI_PROVIDER");
    if (prov)
        snprintf(err, errlen,
                 "%s: FI_PROVIDER=%s offers no %s here (fi_getinfo: %s); `fi_info -l` lists the providers "
                 "this machine has (unset FI_PROVIDER to let Hashi choose)",
                 who, prov, needs, fi_strerror(-rc));
    else
        snprintf(err, errlen,
                 "%s: no libfabric provider offers %s (fi_getinfo: %s); `fi_info -l` lists the providers "
                 "this machine has",
                 who, needs, fi_strerror(-rc));
}

int hashi_fi_name_shm_endpoint(struct fi_info *info, const char *tag, char *err, size_t errlen)
{
    char name[512];
    const char *slash = strrchr(hashi_job.job_dir, '/');
    int n;
    if (hashi_job.job_dir[0] && slash && slash[1])
        n = snprintf(name, sizeof name, "fi_shm://%s-%s-%d", slash + 1, tag, hashi_job.rank);
    else
        n = snprintf(name, sizeof name, "fi_shm://hashi-%u-%016llx-%s-%d-%d", (unsigned)getuid(),
                     (unsigned long long)hashi_job.key, tag, hashi_job.rank, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof name) {
        snprintf(err, errlen, "the job directory name is too long for a shm endpoint name (%s)", tag);
        return -1;
    }
    char *addr = strdup(name);
    if (!addr) {
        snprintf(err, errlen, "out of memory naming a shm endpoint (%s)", tag);
        return -1;
    }
    free(info->src_addr);
    info->src_addr = addr;
    info->src_addrlen = (size_t)n + 1;
    return 0;
}

void hashi_fi_unlink_shm_name(struct fid_ep *ep, const char *who)
{
    char addr[256];
    size_t len = sizeof addr - 1;
    if (fi_getname(&ep->fid, addr, &len) != 0)
        return;
    addr[len < sizeof addr ? len : sizeof addr - 1] = '\0';
    const char *name = strncmp(addr, "fi_shm://", 9) == 0 ? addr + 9 : addr;
    if (shm_unlink(name) != 0)
        HASHI_DEBUG(1, "%s: removing the name of shm region %s failed: %s", who, name, strerror(errno));
}

int hashi_fi_cq_open(struct fid_fabric *fabric, struct fid_domain *domain, const struct fi_info *info,
                     struct fi_cq_attr *attr, struct fid_cq **cq, struct hashi_fi_wait *w, const char *who)
{
    w->fabric = fabric;
    w->cq = NULL;
    w->fd = -1;
    if (hashi_param_int(HASHI_P_WAIT_FD) && !hashi_fi_is_shm(info) && hashi_topo_may_oversubscribe()) {
        struct fi_cq_attr with = *attr;
        with.wait_obj = FI_WAIT_FD;
        with.wait_cond = FI_CQ_COND_NONE;
        int rc = fi_cq_open(domain, &with, cq, NULL);
        if (rc == 0) {
            int fd = -1;
            if (fi_control(&(*cq)->fid, FI_GETWAIT, &fd) == 0 && fd >= 0) {
                w->cq = *cq;
                w->fd = fd;
                HASHI_DEBUG(1, "%s: the CQ's wait object is fd %d (a sleeping rank blocks on it)", who, fd);
                return 0;
            }
            fi_close(&(*cq)->fid);
            *cq = NULL;
        }
        HASHI_DEBUG(1, "%s: provider %s offers no CQ wait fd (%s): sleeping ranks wait on their futex word",
                    who, info->fabric_attr->prov_name, rc ? fi_strerror(-rc) : "FI_GETWAIT failed");
    }
    attr->wait_obj = FI_WAIT_NONE;
    return fi_cq_open(domain, attr, cq, NULL);
}

int hashi_fi_trywait(const struct hashi_fi_wait *w)
{
    struct fid *fids[1] = { &w->cq->fid };
    return fi_trywait(w->fabric, fids, 1) != FI_SUCCESS;
}
