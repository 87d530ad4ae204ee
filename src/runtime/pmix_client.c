/* PMIx client: job identity, locality and the modex. */
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/log.h"
#include "runtime/topo.h"
#include "runtime/wake.h"

#include <pmix.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct hashi_job hashi_job;
static pmix_proc_t self_proc;
static int pmix_up;

static int get_u32(const pmix_proc_t *proc, const char *key, uint32_t *out)
{
    pmix_value_t *val = NULL;
    if (PMIx_Get(proc, key, NULL, 0, &val) != PMIX_SUCCESS || !val)
        return -1;
    int rc = 0;
    switch (val->type) {
    case PMIX_UINT32: *out = val->data.uint32; break;
    case PMIX_UINT16: *out = val->data.uint16; break;
    case PMIX_INT: *out = (uint32_t)val->data.integer; break; /* Slurm's APPNUM */
    case PMIX_INT32: *out = (uint32_t)val->data.int32; break;
    case PMIX_UINT64: *out = (uint32_t)val->data.uint64; break;
    case PMIX_PROC_RANK: *out = val->data.rank; break;
    default: rc = -1; break;
    }
    PMIX_VALUE_RELEASE(val);
    return rc;
}

int hashi_rt_get_record(int rank, const char *key, void *out, size_t out_size, size_t *len)
{
    void *data = NULL;
    if (hashi_rt_get(rank, key, &data, len) != 0)
        return -1;
    memset(out, 0, out_size);
    memcpy(out, data, *len < out_size ? *len : out_size);
    free(data);
    return 0;
}

static char *get_string(const pmix_proc_t *proc, const char *key)
{
    pmix_value_t *val = NULL;
    if (PMIx_Get(proc, key, NULL, 0, &val) != PMIX_SUCCESS || !val)
        return NULL;
    char *s = NULL;
    if (val->type == PMIX_STRING && val->data.string)
        s = strdup(val->data.string);
    PMIX_VALUE_RELEASE(val);
    return s;
}

static void parse_local_peers(const char *list)
{
    const char *p = list;
    while (p && *p) {
        char *end;
        long r = strtol(p, &end, 10);
        if (end == p)
            break;
        if (r >= 0 && r < hashi_job.size)
            hashi_job.peer_is_local[r] = 1;
        p = *end == ',' ? end + 1 : NULL;
    }
}

static int job_key_from_env(void)
{
    const char *key = getenv("HASHI_JOB_KEY");
    if (key && *key) {
        hashi_job.key = strtoull(key, NULL, 16);
        return 0;
    }
    /* No launcher key (srun, a singleton): derive one every rank agrees on. */
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = hashi_job.nspace; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    if (hashi_job.singleton) {
        uint64_t r;
        if (getrandom(&r, sizeof r, 0) == sizeof r)
            h ^= r;
    }
    hashi_job.key = h ? h : 1;
    return 0;
}

/*
 * HASHI_VNODES=K (testing): the ranks of this machine act as K nodes of
 * consecutive ranks, so peers in other blocks are reached as remote ones
 * (the fabric transport, node-aware choices) while all of them still share
 * this machine's cores and wake words (peer_on_host).
 */
static int split_virtual_nodes(char *err, size_t errlen)
{
    hashi_job.host_node_id = hashi_job.node_id;
    hashi_job.host_local_size = hashi_job.local_size;
    hashi_job.peer_on_host = malloc((size_t)hashi_job.size);
    if (!hashi_job.peer_on_host) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(hashi_job.peer_on_host, hashi_job.peer_is_local, (size_t)hashi_job.size);
    int64_t k = hashi_param_int(HASHI_P_VNODES);
    if (k <= 1)
        return 0;
    if (hashi_job.num_nodes > 1 || hashi_job.local_size != hashi_job.size) {
        snprintf(err, errlen, "HASHI_VNODES=%lld splits the ranks of one machine, but this job spans %d nodes",
                 (long long)k, hashi_job.num_nodes);
        return -1;
    }
    if (k > hashi_job.size)
        k = hashi_job.size;
    /* Block distribution: node i holds ranks [i * size / k, (i + 1) * size / k). */
    int n = hashi_job.size, nodes = (int)k;
    hashi_job.node_of_rank = malloc((size_t)n * sizeof *hashi_job.node_of_rank);
    if (!hashi_job.node_of_rank) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0, node = 0; r < n; r++) {
        while ((int64_t)(node + 1) * n / nodes <= r)
            node++;
        hashi_job.node_of_rank[r] = node;
    }
    int my_node = hashi_job.node_of_rank[hashi_job.rank];
    int first = (int)((int64_t)my_node * n / nodes), end = (int)((int64_t)(my_node + 1) * n / nodes);
    for (int r = 0; r < n; r++)
        hashi_job.peer_is_local[r] = hashi_job.node_of_rank[r] == my_node;
    hashi_job.node_id = my_node;
    hashi_job.num_nodes = nodes;
    hashi_job.local_size = end - first;
    hashi_job.local_rank = hashi_job.rank - first;
    return 0;
}

int hashi_rt_init(char *err, size_t errlen)
{
    memset(&hashi_job, 0, sizeof hashi_job);
    if (gethostname(hashi_job.hostname, sizeof hashi_job.hostname - 1) != 0)
        strcpy(hashi_job.hostname, "localhost");
    const char *dir = getenv("HASHI_JOB_DIR");
    if (dir)
        snprintf(hashi_job.job_dir, sizeof hashi_job.job_dir, "%s", dir);

    pmix_status_t rc = PMIx_Init(&self_proc, NULL, 0);
    if (rc != PMIX_SUCCESS && rc != PMIX_ERR_UNREACH) {
        snprintf(err, errlen, "PMIx_Init failed: %s", PMIx_Error_string(rc));
        return -1;
    }
    pmix_up = 1;
    /* Without a launcher PMIx returns UNREACH but works as a one-process job. */
    hashi_job.singleton = rc == PMIX_ERR_UNREACH;
    snprintf(hashi_job.nspace, sizeof hashi_job.nspace, "%s", self_proc.nspace);
    hashi_job.rank = (int)self_proc.rank;

    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, self_proc.nspace, PMIX_RANK_WILDCARD);
    uint32_t v;
    hashi_job.size = get_u32(&wild, PMIX_JOB_SIZE, &v) == 0 ? (int)v : 1;
    hashi_job.universe_size = get_u32(&wild, PMIX_UNIV_SIZE, &v) == 0 ? (int)v : hashi_job.size;
    hashi_job.local_size = get_u32(&wild, PMIX_LOCAL_SIZE, &v) == 0 ? (int)v : 1;
    hashi_job.num_nodes = get_u32(&wild, PMIX_NUM_NODES, &v) == 0 ? (int)v : 1;
    hashi_job.local_rank = get_u32(&self_proc, PMIX_LOCAL_RANK, &v) == 0 ? (int)v : 0;
    hashi_job.node_id = get_u32(&self_proc, PMIX_NODEID, &v) == 0 ? (int)v : 0;
    hashi_job.appnum = get_u32(&self_proc, PMIX_APPNUM, &v) == 0 ? (int)v : 0;
    if (hashi_job.size < 1 || hashi_job.rank < 0 || hashi_job.rank >= hashi_job.size) {
        /* Under Hashi's mpirun this means the launcher dropped the job's
         * namespace while we connected: the job is ending (another rank
         * failed) and our SIGTERM is on its way. Give it time to arrive
         * rather than add a misleading line to the job's output. */
        if (dir)
            for (int i = 0; i < 200; i++)
                usleep(10000);
        snprintf(err, errlen, "PMIx reports rank %d of a job of size %d", hashi_job.rank, hashi_job.size);
        return -1;
    }
    if (hashi_job.universe_size < hashi_job.size)
        hashi_job.universe_size = hashi_job.size;

    hashi_job.peer_is_local = calloc((size_t)hashi_job.size, 1);
    if (!hashi_job.peer_is_local) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *peers = get_string(&wild, PMIX_LOCAL_PEERS);
    if (peers) {
        parse_local_peers(peers);
        free(peers);
    } else if (hashi_job.local_size == hashi_job.size) {
        memset(hashi_job.peer_is_local, 1, (size_t)hashi_job.size);
    }
    hashi_job.peer_is_local[hashi_job.rank] = 1;
    if (split_virtual_nodes(err, errlen) != 0)
        return -1;
    job_key_from_env();
    hashi_log_set_rank(hashi_job.rank);
    return 0;
}

/*
 * Every rank's node from the launcher: PMIX_NODEID, else PMIX_HOSTNAME (nodes
 * numbered in order of first appearance), which every process reads alike.
 * NULL if it says neither for some rank.
 */
static int *nodes_from_launcher(void)
{
    int n = hashi_job.size;
    int *node = malloc((size_t)n * sizeof *node);
    char **host = calloc((size_t)n, sizeof *host);
    int ok = node && host;
    for (int r = 0; ok && r < n; r++) {
        pmix_proc_t proc;
        PMIX_LOAD_PROCID(&proc, self_proc.nspace, (pmix_rank_t)r);
        uint32_t v;
        if (get_u32(&proc, PMIX_NODEID, &v) == 0) {
            node[r] = (int)v;
            continue;
        }
        if (!(host[r] = get_string(&proc, PMIX_HOSTNAME))) {
            ok = 0;
            break;
        }
        node[r] = -1;
        for (int q = 0; q < r && node[r] < 0; q++)
            if (host[q] && strcmp(host[q], host[r]) == 0)
                node[r] = node[q];
        if (node[r] < 0)
            node[r] = n + r; /* a new host: an id no PMIX_NODEID of this job takes */
    }
    for (int r = 0; host && r < n; r++)
        free(host[r]);
    free(host);
    if (!ok) {
        free(node);
        return NULL;
    }
    return node;
}

int hashi_rt_node_of(int rank)
{
    if (hashi_job.num_nodes <= 1)
        return 0;
    if (!hashi_job.node_of_rank && !(hashi_job.node_of_rank = nodes_from_launcher()))
        return -1;
    return hashi_job.node_of_rank[rank];
}

void hashi_rt_finalize(void)
{
    if (pmix_up) {
        PMIx_Finalize(NULL, 0);
        pmix_up = 0;
    }
    free(hashi_job.peer_is_local);
    hashi_job.peer_is_local = NULL;
    free(hashi_job.peer_on_host);
    hashi_job.peer_on_host = NULL;
    free(hashi_job.node_of_rank);
    hashi_job.node_of_rank = NULL;
}

void hashi_rt_abort(int code, const char *msg)
{
    fflush(stdout);
    int reported = 0;
    if (pmix_up && !hashi_job.singleton) {
        pmix_proc_t wild;
        PMIX_LOAD_PROCID(&wild, self_proc.nspace, PMIX_RANK_WILDCARD);
        /* The launcher kills the job, prints msg once for the job (not once
         * per failing rank) and exits with code. */
        reported = PMIx_Abort(code, msg ? msg : "", &wild, 1) == PMIX_SUCCESS;
    }
    /* A singleton, PMIx not up yet, or a launcher that refused the abort:
     * nobody else will say why. */
    if (!reported && msg && *msg)
        hashi_log("%s", msg);
    fflush(stderr);
    _exit(code);
}

int hashi_rt_put(const char *key, const void *data, size_t len)
{
    pmix_value_t val;
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)(uintptr_t)data;
    val.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &val);
    return rc == PMIX_SUCCESS ? 0 : -1;
}

static int fence(int collect, char *err, size_t errlen)
{
    if (hashi_job.singleton)
        return 0;
    pmix_info_t info;
    bool yes = true;
    PMIX_INFO_CONSTRUCT(&info);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, self_proc.nspace, PMIX_RANK_WILDCARD);
    pmix_status_t rc = PMIx_Fence(&wild, 1, collect ? &info : NULL, collect ? 1 : 0);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) {
        /* PARTIAL_SUCCESS: a peer died before reaching the fence. */
        snprintf(err, errlen, "PMIx_Fence failed: %s%s", PMIx_Error_string(rc),
                 rc == PMIX_ERR_PARTIAL_SUCCESS ? " (a rank of the job has exited)" : "");
        return -1;
    }
    return 0;
}

static void fence_released(pmix_status_t status, void *cbdata)
{
    (void)status;   /* a failed fence ends waiting too: the peers are gone */
    _Atomic int *done = cbdata;
    atomic_store(done, HASHI_RT_FENCE_RELEASED);
    /* This rank may sleep in its progress loop: wake it now. The main thread
     * may see RELEASED and go on before this returns, so it waits for
     * FINISHED before unmapping the wake words (a SIGSEGV here otherwise). */
    hashi_wake_peer(hashi_job.rank);
    atomic_store(done, HASHI_RT_FENCE_FINISHED);
}

int hashi_rt_fence_start(_Atomic int *done, char *err, size_t errlen)
{
    atomic_store(done, 0);
    if (hashi_job.singleton) {
        atomic_store(done, HASHI_RT_FENCE_FINISHED);
        return 0;
    }
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, self_proc.nspace, PMIX_RANK_WILDCARD);
    pmix_status_t rc = PMIx_Fence_nb(&wild, 1, NULL, 0, fence_released, (void *)done);
    if (rc != PMIX_SUCCESS) {
        snprintf(err, errlen, "PMIx_Fence_nb failed: %s", PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

void hashi_rt_fence_finish(_Atomic int *done)
{
    while (atomic_load(done) != HASHI_RT_FENCE_FINISHED)
        sched_yield();
}

int hashi_rt_exchange(char *err, size_t errlen)
{
    if (PMIx_Commit() != PMIX_SUCCESS) {
        snprintf(err, errlen, "PMIx_Commit failed");
        return -1;
    }
    return fence(1, err, errlen);
}

int hashi_rt_fence(char *err, size_t errlen)
{
    return fence(0, err, errlen);
}

int hashi_rt_get(int rank, const char *key, void **data, size_t *len)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&proc, self_proc.nspace, (pmix_rank_t)rank);
    if (PMIx_Get(&proc, key, NULL, 0, &val) != PMIX_SUCCESS || !val)
        return -1;
    int rc = -1;
    if (val->type == PMIX_BYTE_OBJECT) {
        *len = val->data.bo.size;
        *data = malloc(*len ? *len : 1);
        if (*data) {
            memcpy(*data, val->data.bo.bytes, *len);
            rc = 0;
        }
    }
    PMIX_VALUE_RELEASE(val);
    return rc;
}
