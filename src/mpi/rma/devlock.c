/*
 * Passive-target locks on the device's lock words (docs/rma.md, "LLCM
 * locks"): where every member of a window has a word in its device memory
 * (hashi_device->rma.lock_alloc: DIMMnet's LLCM) and the device reaches
 * every member, MPI_Win_lock / unlock / lock_all / unlock_all are remote
 * atomics on the target's word, with no message and no code at the target.
 * The decision is collective: each member says in the creation allgather
 * whether it has a word and reaches everyone, and the window uses the words
 * only if all do (else every lock stays a LOCK / UNLOCK message: a word
 * and a message queue could not exclude each other).
 */
#include "mpi/rma/rma.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"

void rma_dev_lock_attach(struct rma_win *w, int flavor, struct MPI_ABI_Comm *c, int shm_want, struct rma_peer *mine)
{
    const struct hashi_device_rma_ops *ops = &hashi_device->rma;
    mine->lock_ok = 0;
    if (!ops->lock_alloc || !hashi_param_int(HASHI_P_RMA_DEVICE_LOCKS) || shm_want ||
        flavor == MPI_WIN_FLAVOR_SHARED)
        return;
    for (int r = 0; r < c->size; r++)
        if (!ops->reaches(hashi_comm_to_world(c, r)))
            return;   /* a member on fabric: the messages, for everyone */
    if (ops->lock_alloc(c->size, &mine->lock_ref) != MPI_SUCCESS)
        return;
    w->dev_lock_ref = mine->lock_ref;
    w->dev_lock_owned = 1;
    mine->lock_ok = 1;
}

void rma_dev_lock_setup(struct rma_win *w)
{
    int all = 1;
    for (int r = 0; r < w->size; r++)
        all &= w->peers[r].lock_ok != 0;
    w->dev_locks = all;
    if (!all)
        rma_dev_lock_detach(w);   /* every member sees the same: messages */
}

/* After MPI_Win_free's barrier: no origin holds or waits for the word. */
void rma_dev_lock_detach(struct rma_win *w)
{
    if (w->dev_lock_owned)
        hashi_device->rma.lock_free(w->size, w->dev_lock_ref);
    w->dev_lock_owned = 0;
}

struct lock_attempt {
    int world;
    uint64_t ref;
    int members;
    int exclusive;
    int rc;
    int wake;   /* after a shared grant: the waiter it lets in too, or -1 */
};

static int lock_attempt(void *arg)
{
    struct lock_attempt *a = arg;
    int taken = 0;
    a->rc = hashi_device->rma.lock_try(a->world, a->ref, a->members, a->exclusive, &taken, &a->wake);
    return taken || a->rc != MPI_SUCCESS;
}

/* The one waiter a grant or release named (if it sleeps: runtime/wake.h). */
static void wake_waiter(int world)
{
    if (world >= 0 && world != hashi_job.rank)
        hashi_wake_peer(world);
}

/*
 * A waiter registers in the target's word (its slot, then the count)
 * before the attempt that precedes any sleep, and a release reads the
 * count and the slots after changing the word: one of the two sees the
 * other (locked read-modify-writes, totally ordered), so either that
 * attempt finds the word free or the release wakes us (if we are the
 * oldest waiter it admits; else it wakes that one, and the next release
 * the next). The wait loop spins, yields, sleeps, and serves this
 * process's traffic meanwhile (the holder may be waiting for it).
 */
int rma_dev_lock(struct rma_win *w, int target, int lock_type)
{
    const struct hashi_device_rma_ops *ops = &hashi_device->rma;
    struct lock_attempt a = { hashi_comm_to_world(w->comm, target), w->peers[target].lock_ref, w->size,
                              lock_type == MPI_LOCK_EXCLUSIVE, MPI_SUCCESS, -1 };
    int rc = MPI_SUCCESS;
    if (!lock_attempt(&a)) {
        uint64_t slot;
        if ((rc = ops->lock_register(a.world, a.ref, w->rank, a.exclusive, 1, &slot)) != MPI_SUCCESS)
            return rc;
        hashi_progress_wait_until(lock_attempt, &a);
        rc = ops->lock_register(a.world, a.ref, w->rank, a.exclusive, 0, &slot);
    }
    if (a.rc != MPI_SUCCESS)
        return a.rc;
    wake_waiter(a.wake);
    return rc;
}

int rma_dev_unlock(struct rma_win *w, int target, int lock_type)
{
    int wake = -1;
    int rc = hashi_device->rma.lock_release(hashi_comm_to_world(w->comm, target), w->peers[target].lock_ref, w->size,
                                            lock_type == MPI_LOCK_EXCLUSIVE, &wake);
    if (rc == MPI_SUCCESS)
        wake_waiter(wake);
    return rc;
}
