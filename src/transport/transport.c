/*
 * Transport selection and the node-wide calls: which transport serves each
 * peer (HASHI_TRANSPORT), one LLCM shared by all of them, registration with
 * every transport in use, progress and wait over all of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"
#include "transport/transport.h"

extern const struct hashi_tl_ops hashi_tl_emu_ops;
extern const struct hashi_tl_ops hashi_tl_fabric_ops;

const struct hashi_tl_ops **hashi_tl_peer;

static const struct hashi_tl_ops *active[HASHI_TL_COUNT];  /* in use, by id */
/* The progress of the only transport in use (a node of its own: emu), else
 * NULL: every pass of every wait comes here, one call instead of a loop. */
static int (*only_progress)(void);
void (*hashi_tl_flush)(void);   /* the one transport in use that coalesces (fabric), or NULL */
static unsigned char *served[HASHI_TL_COUNT];               /* per world rank */
static struct hashi_tl_config config;
static void *llcm_heap;                                     /* when no emu hosts it */

static const struct hashi_tl_ops *table_of(enum hashi_tl_id t)
{
    return t == HASHI_TL_EMU ? &hashi_tl_emu_ops : &hashi_tl_fabric_ops;
}

int hashi_transport_in_use(enum hashi_tl_id t)
{
    return active[t] != NULL;
}

/* Decide per peer from HASHI_TRANSPORT and the job's layout. */
static int choose(char *err, size_t errlen)
{
    const char *want = hashi_param_str(HASHI_P_TRANSPORT);
    int n = hashi_job.size;
    for (int t = 0; t < HASHI_TL_COUNT; t++) {
        served[t] = calloc((size_t)n, 1);
        if (!served[t]) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    for (int r = 0; r < n; r++) {
        int local = r == hashi_job.rank || hashi_job.peer_is_local[r];
        enum hashi_tl_id t;
        if (!strcmp(want, "emu")) {
            if (!local) {
                snprintf(err, errlen,
                         "HASHI_TRANSPORT=emu serves ranks on this node only, but rank %d runs on another "
                         "node (use auto or fabric)", r);
                return -1;
            }
            t = HASHI_TL_EMU;
        } else if (!strcmp(want, "fabric")) {
            t = HASHI_TL_FABRIC;
        } else {
            t = local ? HASHI_TL_EMU : HASHI_TL_FABRIC;
        }
        served[t][r] = 1;
        active[t] = table_of(t);
        if (active[t]->flush)
            hashi_tl_flush = active[t]->flush;
    }
    int in_use = 0;
    for (int t = 0; t < HASHI_TL_COUNT; t++)
        if (active[t]) {
            in_use++;
            only_progress = active[t]->progress;
        }
    if (in_use != 1)
        only_progress = NULL;
    return 0;
}

int hashi_transport_init(const struct hashi_tl_config *cfg, char *err, size_t errlen)
{
    if (cfg->llcm_size == 0 || cfg->llcm_size % 8 || cfg->block_max < 64 || !cfg->on_block ||
        !cfg->on_notify) {
        snprintf(err, errlen, "transport: bad configuration (LLCM %zu bytes, block_max %zu)", cfg->llcm_size,
                 cfg->block_max);
        return -1;
    }
    config = *cfg;
    config.llcm = NULL;
    if (choose(err, errlen) != 0)
        return -1;
    hashi_tl_peer = calloc((size_t)hashi_job.size, sizeof *hashi_tl_peer);
    if (!hashi_tl_peer) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0; r < hashi_job.size; r++)
        hashi_tl_peer[r] = served[HASHI_TL_EMU][r] ? active[HASHI_TL_EMU] : active[HASHI_TL_FABRIC];
    /* emu first: it hosts the LLCM in its shared segment, fabric stores into the same one. */
    if (active[HASHI_TL_EMU] && active[HASHI_TL_EMU]->init(&config, err, errlen) != 0)
        return -1;
    if (!config.llcm) {
        if (posix_memalign(&llcm_heap, 4096, config.llcm_size) != 0) {
            snprintf(err, errlen, "out of memory for the LLCM (%zu bytes)", config.llcm_size);
            return -1;
        }
        memset(llcm_heap, 0, config.llcm_size);
        config.llcm = llcm_heap;
    }
    if (active[HASHI_TL_FABRIC] && active[HASHI_TL_FABRIC]->init(&config, err, errlen) != 0)
        return -1;
    return 0;
}

int hashi_transport_connect(char *err, size_t errlen)
{
    for (int t = 0; t < HASHI_TL_COUNT; t++)
        if (active[t] && active[t]->connect(served[t], err, errlen) != 0)
            return -1;
    return 0;
}

void hashi_transport_finalize(void)
{
    for (int t = HASHI_TL_COUNT - 1; t >= 0; t--) {
        if (active[t])
            active[t]->finalize();
        active[t] = NULL;
        free(served[t]);
        served[t] = NULL;
    }
    hashi_tl_flush = NULL;
    only_progress = NULL;
    free(hashi_tl_peer);
    hashi_tl_peer = NULL;
    free(llcm_heap);
    llcm_heap = NULL;
    memset(&config, 0, sizeof config);
}

int hashi_transport_progress(void)
{
    if (only_progress)
        return only_progress();
    int n = 0;
    for (int t = 0; t < HASHI_TL_COUNT; t++)
        if (active[t])
            n += active[t]->progress();
    return n;
}

void *hashi_transport_llcm(void)
{
    return config.llcm;
}

size_t hashi_transport_llcm_size(void)
{
    return config.llcm_size;
}

size_t hashi_transport_block_max(void)
{
    return config.block_max;
}

int hashi_transport_mem_reg(void *buf, size_t len, struct hashi_tl_mem *mem)
{
    memset(mem, 0, sizeof *mem);
    mem->buf = buf;
    mem->len = len;
    for (int t = 0; t < HASHI_TL_COUNT; t++) {
        if (!active[t])
            continue;
        int rc = active[t]->mem_reg(buf, len, &mem->tl[t]);
        if (rc != 0) {
            hashi_transport_mem_dereg(mem);
            return rc;
        }
    }
    return 0;
}

void hashi_transport_mem_dereg(struct hashi_tl_mem *mem)
{
    for (int t = 0; t < HASHI_TL_COUNT; t++) {
        if (active[t] && mem->tl[t])
            active[t]->mem_dereg(mem->tl[t]);
        mem->tl[t] = NULL;
    }
}

void hashi_transport_rkey(const struct hashi_tl_mem *mem, int peer, struct hashi_tl_rkey *rkey)
{
    const struct hashi_tl_ops *tl = hashi_tl_peer[peer];
    memset(rkey, 0, sizeof *rkey);
    tl->rkey_pack(mem->tl[tl->id], mem, peer, rkey);
}

int hashi_transport_wait_fd(void)
{
    for (int t = 0; t < HASHI_TL_COUNT; t++)
        if (active[t] && active[t]->wait_fd && active[t]->wait_fd() >= 0)
            return active[t]->wait_fd();
    return -1;
}

int hashi_transport_trywait(void)
{
    for (int t = 0; t < HASHI_TL_COUNT; t++)
        if (active[t] && active[t]->wait_fd && active[t]->wait_fd() >= 0)
            return active[t]->trywait();
    return 0;
}

/* The caller's poll for hashi_wake_sleep, then arming the wait object that
 * a rank sleeping in poll(2) blocks on (one thread at a time, as everywhere
 * in this layer). */
static int (*wait_poll)(void);

static int poll_and_arm(void)
{
    int n = wait_poll();
    return n ? n : hashi_wake_arm();
}

int hashi_transport_wait(int (*poll)(void), long timeout_us)
{
    if (!hashi_wake_enabled())
        return poll();
    wait_poll = poll;
    return hashi_wake_sleep(poll_and_arm, timeout_us);
}
