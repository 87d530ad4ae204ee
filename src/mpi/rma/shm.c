/*
 * Node-local windows: when every member of a window shares the node, its
 * memory is one shared-memory segment all of them map (window.c makes it),
 * and one-sided operations are loads and stores into the target's part,
 * complete when the call returns. Synchronization lives in the segment too:
 * per member a reader-writer lock word (MPI_Win_lock), an accumulate lock
 * (held around every accumulate-family op on that member, so they are
 * atomic with respect to each other), a count of MPI_Win_complete notices;
 * and a matrix of MPI_Win_post notices per (origin, target) pair. Nothing
 * needs the target's progress: a target busy computing delays nobody.
 * docs/rma.md, "Node-local windows".
 */
#include "mpi/rma/rma.h"
#include "mpi/coll/op.h"
#include "runtime/params.h"
#include "runtime/pvar.h"
#include "runtime/rt.h"
#include "runtime/wake.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define RMA_SHM_WRITER 0x80000000u

uint64_t rma_shm_ops_count;

void hashi_rma_pvars_register(void)
{
    static const struct hashi_pvar vars[] = {
        { "rma_shm_ops", "hashi_runtime",
          "one-sided operations done by loads and stores into a node-local window's shared segment", &rma_shm_ops_count },
    };
    (void)hashi_pvar_register(vars, 1);   /* out of memory: counted, unseen */
}

size_t rma_shm_ctl_bytes(int n)
{
    return (size_t)n * sizeof(struct rma_shm_ctl) + (size_t)n * (size_t)n * sizeof(_Atomic uint32_t);
}

int rma_shm_wanted(struct MPI_ABI_Comm *c, int flavor)
{
    if (!hashi_param_int(HASHI_P_RMA_SHM))
        return 0;
    if (flavor == MPI_WIN_FLAVOR_SHARED)
        return 1;   /* its caller checked locality */
    if (flavor != MPI_WIN_FLAVOR_ALLOCATE)
        return 0;   /* the program's memory cannot be shared */
    /* Locality is symmetric, so every member answers alike. */
    for (int r = 0; r < c->size; r++) {
        int world = hashi_comm_to_world(c, r);
        if (world != hashi_job.rank && !(hashi_job.peer_is_local && hashi_job.peer_is_local[world]))
            return 0;
    }
    return 1;
}

int rma_shm_attach(struct rma_win *w, void *ctl)
{
    w->shm_ctl = ctl;
    w->shm_posts = (_Atomic uint32_t *)(w->shm_ctl + w->size);
    w->shm_posts_seen = calloc((size_t)w->size, sizeof *w->shm_posts_seen);
    if (!w->shm_posts_seen) {
        w->shm_ctl = NULL;
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

/* ---- waiting ---- */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* The accumulate lock is held for one operation's loads and stores, never
 * across a wait, so a short spin finds it free unless its holder lost its
 * core (oversubscribed): then hand the core over. */
static void acc_lock(struct rma_shm_ctl *c)
{
    unsigned spins = 0;
    while (atomic_exchange_explicit(&c->acc, 1, memory_order_acquire)) {
        while (atomic_load_explicit(&c->acc, memory_order_relaxed)) {
            if (++spins < 64)
                cpu_relax();
            else
                sched_yield();
        }
    }
}

static void acc_unlock(struct rma_shm_ctl *c)
{
    atomic_store_explicit(&c->acc, 0, memory_order_release);
}

/* Wake every other member that may sleep in a wait on this window (only
 * those that announced sleep cost a system call: runtime/wake.h). */
static void wake_member(struct rma_win *w, int r)
{
    if (r != w->rank)
        hashi_wake_peer(hashi_comm_to_world(w->comm, r));
}

static void rma_wake_others(struct rma_win *w)
{
    for (int r = 0; r < w->size; r++)
        wake_member(w, r);
}

struct lock_try {
    struct rma_shm_ctl *c;
    int type;
};

static int lock_try(void *arg)
{
    struct lock_try *t = arg;
    uint32_t v = atomic_load_explicit(&t->c->lock, memory_order_relaxed);
    if (t->type == MPI_LOCK_EXCLUSIVE)
        return v == 0 && atomic_compare_exchange_strong_explicit(&t->c->lock, &v, RMA_SHM_WRITER,
                                                                 memory_order_acquire, memory_order_relaxed);
    return !(v & RMA_SHM_WRITER) && atomic_compare_exchange_strong_explicit(&t->c->lock, &v, v + 1,
                                                                           memory_order_acquire,
                                                                           memory_order_relaxed);
}

/* The waits go through the progress engine's loop: it spins, then yields,
 * then (oversubscribed) sleeps on the rank's wake word, which the member
 * that releases what we wait for wakes; and it keeps serving the process's
 * other traffic, which the holder may be waiting for. */
void rma_shm_lock(struct rma_win *w, int target, int lock_type)
{
    struct lock_try t = { &w->shm_ctl[target], lock_type };
    if (lock_try(&t))
        return;
    /* Announced before the next try, so the unlock that frees it sees us
     * (both sides sequentially consistent). */
    atomic_fetch_add(&t.c->lock_waiters, 1);
    hashi_progress_wait_until(lock_try, &t);
    atomic_fetch_sub(&t.c->lock_waiters, 1);
}

void rma_shm_unlock(struct rma_win *w, int target)
{
    struct rma_shm_ctl *c = &w->shm_ctl[target];
    uint32_t v = atomic_load_explicit(&c->lock, memory_order_relaxed);
    if (v & RMA_SHM_WRITER)
        atomic_store_explicit(&c->lock, 0, memory_order_seq_cst);
    else
        atomic_fetch_sub_explicit(&c->lock, 1, memory_order_seq_cst);
    if (atomic_load(&c->lock_waiters))
        rma_wake_others(w);
}


/* ---- PSCW ---- */

void rma_shm_post(struct rma_win *w, const unsigned char *origins)
{
    for (int r = 0; r < w->size; r++) {
        if (!origins[r])
            continue;
        /* Release: our stores before the post are seen by the origin's
         * accesses that follow its MPI_Win_start. */
        atomic_fetch_add_explicit(&w->shm_posts[(size_t)r * (size_t)w->size + (size_t)w->rank], 1,
                                  memory_order_seq_cst);
        wake_member(w, r);
    }
}

static int posts_in(void *arg)
{
    struct rma_win *w = arg;
    for (int r = 0; r < w->size; r++) {
        if (!w->access[r])
            continue;
        uint32_t got = atomic_load_explicit(&w->shm_posts[(size_t)w->rank * (size_t)w->size + (size_t)r],
                                            memory_order_acquire);
        /* Generations: each post counts once, so a target's next epoch's
         * post never stands in for this one's. */
        if (got == w->shm_posts_seen[r])
            return 0;
    }
    return 1;
}

void rma_shm_start(struct rma_win *w)
{
    if (!posts_in(w))
        hashi_progress_wait_until(posts_in, w);
    for (int r = 0; r < w->size; r++)
        if (w->access[r])
            w->shm_posts_seen[r]++;
}

void rma_shm_complete(struct rma_win *w)
{
    for (int r = 0; r < w->size; r++) {
        if (!w->access[r])
            continue;
        /* Release: our puts are in the target's memory before it counts it. */
        atomic_fetch_add_explicit(&w->shm_ctl[r].completes, 1, memory_order_seq_cst);
        wake_member(w, r);
    }
}

int rma_shm_completed(struct rma_win *w, int consume)
{
    uint32_t got = atomic_load_explicit(&w->shm_ctl[w->rank].completes, memory_order_acquire);
    if ((int64_t)(uint32_t)(got - w->shm_completes_seen) < (int64_t)w->post_expected)
        return 0;
    if (consume)
        w->shm_completes_seen += (uint32_t)w->post_expected;
    return 1;
}

/* ---- operations ---- */

void rma_shm_atomic(struct rma_win *w, int target, char *at, size_t size, enum rma_shm_atomic what,
                    const void *origin, const void *compare, void *result)
{
    /* Integers as the low bytes of a uint64_t: addition modulo 2^(8 size)
     * comes out right whatever the byte order and signedness. */
    uint64_t old = 0, arg = 0, cmp = 0;
    if (origin)
        memcpy(&arg, origin, size);
    if (compare)
        memcpy(&cmp, compare, size);
    struct rma_shm_ctl *c = &w->shm_ctl[target];
    acc_lock(c);
    memcpy(&old, at, size);
    uint64_t val = what == RMA_SHM_SUM ? old + arg : arg;
    if (what == RMA_SHM_SUM || what == RMA_SHM_REPLACE || (what == RMA_SHM_CAS && old == cmp))
        memcpy(at, &val, size);
    acc_unlock(c);
    memcpy(result, &old, size);
}

/* Accumulate-family ops: under the target's accumulate lock, element runs
 * read into the result stream (get_accumulate, fetch_and_op, cas) and / or
 * combined with the origin stream. */
static int shm_accumulate(struct rma_win *w, const struct rma_shm_op *o, char *base, const char *stream,
                          char *result)
{
    const struct MPI_ABI_Datatype *t = o->bt;
    struct rma_shm_ctl *c = &w->shm_ctl[o->target];
    int rc = MPI_SUCCESS;
    acc_lock(c);
    if (o->kind == RMA_CAS) {
        char *at = base + o->segs[0].disp;
        size_t size = (size_t)t->size;
        memcpy(result, at, size);
        if (memcmp(result, (const char *)o->compare + t->true_lb, size) == 0)
            memcpy(at, (const char *)o->oaddr + t->true_lb, size);
        acc_unlock(c);
        return MPI_SUCCESS;
    }
    size_t off = 0;
    for (size_t i = 0; i < o->nseg && rc == MPI_SUCCESS; i++) {
        int64_t n = o->segs[i].count;
        char *at = base + o->segs[i].disp;
        if (result)
            rma_load_elements(t, at, n, result + off);
        if (stream)
            rc = rma_combine_elements(o->op, o->basic, t, stream + off, at, n);
        off += (size_t)(n * t->size);
    }
    acc_unlock(c);
    return rc;
}

int rma_shm_op(struct rma_win *w, const struct rma_shm_op *o)
{
    char *base = (char *)(uintptr_t)w->peers[o->target].base;
    rma_shm_ops_count++;
    if (o->kind == RMA_PUT) {
        if (o->nseg == 1 && hashi_type_is_contig_count(o->ot, o->ocount)) {
            memcpy(base + o->segs[0].disp, (const char *)o->oaddr + o->ot->true_lb, o->bytes);
            return MPI_SUCCESS;
        }
        size_t off = 0;
        for (size_t i = 0; i < o->nseg; i++) {
            hashi_type_pack(o->oaddr, o->ocount, o->ot, off, base + o->segs[i].disp, (size_t)o->segs[i].count);
            off += (size_t)o->segs[i].count;
        }
        return MPI_SUCCESS;
    }
    if (o->kind == RMA_GET) {
        if (o->nseg == 1 && hashi_type_is_contig_count(o->rt, o->rcount)) {
            memcpy((char *)o->raddr + o->rt->true_lb, base + o->segs[0].disp, o->bytes);
            return MPI_SUCCESS;
        }
        size_t off = 0;
        for (size_t i = 0; i < o->nseg; i++) {
            hashi_type_unpack(o->raddr, o->rcount, o->rt, off, base + o->segs[i].disp, (size_t)o->segs[i].count);
            off += (size_t)o->segs[i].count;
        }
        return MPI_SUCCESS;
    }
    /* The accumulate family: the origin's elements as a packed stream
     * (the buffer itself when it is one), results straight into place
     * when the result buffer is contiguous, else staged. */
    const char *stream = NULL;
    char *packed = NULL, *stage = NULL, *result = NULL;
    if (o->oaddr && o->kind != RMA_CAS) {
        if (hashi_type_is_contig_count(o->ot, o->ocount) && o->bt->contiguous) {
            stream = (const char *)o->oaddr + o->ot->true_lb;
        } else {
            if (!(packed = malloc(o->bytes)))
                return MPI_ERR_NO_MEM;
            hashi_type_pack(o->oaddr, o->ocount, o->ot, 0, packed, o->bytes);
            stream = packed;
        }
    }
    char cas_old[64];
    if (o->kind == RMA_CAS) {
        result = cas_old;
    } else if (o->raddr) {
        if (hashi_type_is_contig_count(o->rt, o->rcount) && o->bt->contiguous) {
            result = (char *)o->raddr + o->rt->true_lb;
        } else if (!(result = stage = malloc(o->bytes))) {
            free(packed);
            return MPI_ERR_NO_MEM;
        }
    }
    int rc = shm_accumulate(w, o, base, stream, result);
    if (o->kind == RMA_CAS)
        memcpy((char *)o->raddr + o->rt->true_lb, cas_old, (size_t)o->bt->size);
    else if (stage)
        hashi_type_unpack(o->raddr, o->rcount, o->rt, 0, stage, o->bytes);
    free(packed);
    free(stage);
    return rc;
}
