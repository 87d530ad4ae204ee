/*
 * Synchronization: fence, post / start / complete / wait / test, passive
 * target (lock, unlock, lock_all, unlock_all, the flushes) and MPI_Win_sync.
 *
 * Completion at the target is acknowledged, not counted: a target answers
 * a FLUSH, UNLOCK or COMPLETE request only after applying everything the
 * same origin sent before it (it applies each origin's messages in order),
 * so one round trip per target touched closes an epoch. A fence is that
 * flush to every target this process touched, then a barrier; nothing more
 * is exchanged for a target never written to. docs/rma.md has the costs.
 */
#include "mpi/rma/rma.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int rma_take_error(struct rma_win *w, const char *func)
{
    int error = w->error;
    if (error == MPI_SUCCESS)
        return MPI_SUCCESS;
    w->error = MPI_SUCCESS;
    return hashi_err_win(func, rma_handle(w), error,
                         error == MPI_ERR_RMA_RANGE
                             ? "an operation reached outside a target's window (or, on a dynamic window, outside "
                               "its attached memory)"
                             : "a target reported a failed operation");
}

/* FLUSH (or kind) to every target in `which` (NULL: those touched), then wait. */
static int close_targets(struct rma_win *w, const unsigned char *which, enum rma_kind kind)
{
    int rc = MPI_SUCCESS;
    for (int r = 0; r < w->size && rc == MPI_SUCCESS; r++) {
        if (which ? !which[r] : !w->touched[r])
            continue;
        rc = rma_control(w, r, kind, 0);
        w->touched[r] = 0;
    }
    rma_wait_replies(w, -1);
    return rc;
}

static int check_assert(const char *func, struct rma_win *w, int assert, int allowed)
{
    if (assert & ~allowed)
        return hashi_err_win(func, rma_handle(w), MPI_ERR_ASSERT, "assert %#x has bits not valid for %s",
                             (unsigned)assert, func);
    return MPI_SUCCESS;
}

/* ---- fence ---- */

int hashi_impl_Win_fence(int assert, MPI_Win win)
{
    static const char func[] = "MPI_Win_fence";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if ((rc = check_assert(func, w, assert,
                           MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)) != MPI_SUCCESS)
        return rc;
    if (w->lock_all || w->access_epoch)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "a %s epoch is open on the window",
                             w->lock_all ? "lock_all" : "start / complete");
    rma_dev_queue_issue_all(w);   /* its message parts count as touched */
    /* NOPRECEDE: no operation of ours to complete (the program says so).
     * A node-local window's operations are complete: its loads and stores
     * need only be ordered around the barrier. */
    if (w->shm_ctl)
        atomic_thread_fence(memory_order_seq_cst);
    else if (!(assert & MPI_MODE_NOPRECEDE))
        rc = close_targets(w, NULL, RMA_FLUSH);
    else
        rma_wait_replies(w, -1);
    if (rc == MPI_SUCCESS)
        rc = hashi_comm_barrier(w->comm);
    if (w->shm_ctl)
        atomic_thread_fence(memory_order_seq_cst);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, win, rc, "completing the epoch failed");
    w->fence_epoch = !(assert & MPI_MODE_NOSUCCEED);
    return rma_take_error(w, func);
}

/* ---- passive target ---- */

static int lock_type_check(const char *func, struct rma_win *w, int lock_type)
{
    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
        return hashi_err_win(func, rma_handle(w), MPI_ERR_LOCKTYPE,
                             "lock_type %d is neither MPI_LOCK_SHARED nor MPI_LOCK_EXCLUSIVE", lock_type);
    return MPI_SUCCESS;
}

static int rank_check(const char *func, struct rma_win *w, int rank)
{
    if (rank < 0 || rank >= w->size)
        return hashi_err_win(func, rma_handle(w), MPI_ERR_RANK, "rank %d is not in the window's group (size %d)",
                             rank, w->size);
    return MPI_SUCCESS;
}

int hashi_impl_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    static const char func[] = "MPI_Win_lock";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if ((rc = lock_type_check(func, w, lock_type)) != MPI_SUCCESS ||
        (rc = check_assert(func, w, assert, MPI_MODE_NOCHECK)) != MPI_SUCCESS)
        return rc;
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((rc = rank_check(func, w, rank)) != MPI_SUCCESS)
        return rc;
    if (w->lock_type[rank] || w->lock_all)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "rank %d is locked by this process already", rank);
    /* A fence without NOSUCCEED leaves no epoch that matters to a lock
     * (MPICH is as lenient): only start / complete conflicts. */
    if (w->access_epoch)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "a start / complete epoch is open on the window");
    if (assert & MPI_MODE_NOCHECK) {
        w->lock_type[rank] = -lock_type;   /* nobody else locks: no request */
        return MPI_SUCCESS;
    }
    if (w->shm_ctl) {
        rma_shm_lock(w, rank, lock_type);
        w->lock_type[rank] = lock_type;
        return MPI_SUCCESS;
    }
    if (w->dev_locks) {
        if ((rc = rma_dev_lock(w, rank, lock_type)) != MPI_SUCCESS)
            return hashi_err_win(func, win, rc, "rank %d's lock word does not carry this job's key", rank);
        w->lock_type[rank] = lock_type;
        return rma_take_error(w, func);
    }
    rc = rma_control(w, rank, RMA_LOCK, lock_type);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, win, rc, "sending the lock request to rank %d failed", rank);
    rma_wait_replies(w, rank);
    w->lock_type[rank] = lock_type;
    return rma_take_error(w, func);
}

int hashi_impl_Win_unlock(int rank, MPI_Win win)
{
    static const char func[] = "MPI_Win_unlock";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((rc = rank_check(func, w, rank)) != MPI_SUCCESS)
        return rc;
    if (!w->lock_type[rank])
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "rank %d is not locked by this process (MPI_Win_lock first)",
                             rank);
    if (w->shm_ctl) {
        atomic_thread_fence(memory_order_seq_cst);
        if (w->lock_type[rank] > 0)
            rma_shm_unlock(w, rank);
        w->lock_type[rank] = 0;
        return MPI_SUCCESS;
    }
    rma_dev_queue_issue(w, rank);
    /* Unlock after NOCHECK only completes: no lock is held at the target.
     * A lock word is released once the epoch's operations are complete at
     * the target: device ones and replies waited for, messages flushed. */
    int word = w->dev_locks && w->lock_type[rank] > 0;
    if (!word || w->touched[rank])
        rc = rma_control(w, rank, w->lock_type[rank] < 0 || word ? RMA_FLUSH : RMA_UNLOCK, 0);
    w->touched[rank] = 0;
    rma_wait_replies(w, rank);
    if (word && rc == MPI_SUCCESS && (rc = rma_dev_unlock(w, rank, w->lock_type[rank])) != MPI_SUCCESS) {
        w->lock_type[rank] = 0;
        return hashi_err_win(func, win, rc, "rank %d's lock word does not carry this job's key", rank);
    }
    w->lock_type[rank] = 0;
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, win, rc, "sending the unlock request to rank %d failed", rank);
    return rma_take_error(w, func);
}

int hashi_impl_Win_lock_all(int assert, MPI_Win win)
{
    static const char func[] = "MPI_Win_lock_all";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if ((rc = check_assert(func, w, assert, MPI_MODE_NOCHECK)) != MPI_SUCCESS)
        return rc;
    int locked = w->lock_all;
    for (int r = 0; r < w->size; r++)
        locked |= w->lock_type[r] != 0;
    if (locked)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "the window is locked by this process already");
    /* A fence without NOSUCCEED leaves no epoch that matters to a lock
     * (MPICH is as lenient): only start / complete conflicts. */
    if (w->access_epoch)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "a start / complete epoch is open on the window");
    w->lock_all_nocheck = (assert & MPI_MODE_NOCHECK) != 0;
    if (!w->lock_all_nocheck && w->shm_ctl) {
        for (int r = 0; r < w->size; r++)
            rma_shm_lock(w, r, MPI_LOCK_SHARED);
    } else if (!w->lock_all_nocheck && w->dev_locks) {
        for (int r = 0; r < w->size; r++)
            if ((rc = rma_dev_lock(w, r, MPI_LOCK_SHARED)) != MPI_SUCCESS) {
                while (--r >= 0)
                    (void)rma_dev_unlock(w, r, MPI_LOCK_SHARED);
                return hashi_err_win(func, win, rc, "a lock word does not carry this job's key");
            }
    } else if (!w->lock_all_nocheck) {
        for (int r = 0; r < w->size && rc == MPI_SUCCESS; r++)
            rc = rma_control(w, r, RMA_LOCK, MPI_LOCK_SHARED);
        rma_wait_replies(w, -1);
        if (rc != MPI_SUCCESS)
            return hashi_err_win(func, win, rc, "sending the lock requests failed");
    }
    w->lock_all = 1;
    return rma_take_error(w, func);
}

int hashi_impl_Win_unlock_all(MPI_Win win)
{
    static const char func[] = "MPI_Win_unlock_all";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!w->lock_all)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "the window is not locked by MPI_Win_lock_all");
    rma_dev_queue_issue_all(w);
    if (w->shm_ctl) {
        atomic_thread_fence(memory_order_seq_cst);
        for (int r = 0; r < w->size && !w->lock_all_nocheck; r++)
            rma_shm_unlock(w, r);
    } else if (w->lock_all_nocheck) {
        rc = close_targets(w, NULL, RMA_FLUSH);
    } else if (w->dev_locks) {
        /* Everything complete at every target before any word is released. */
        rc = close_targets(w, NULL, RMA_FLUSH);
        for (int r = 0; r < w->size; r++) {
            int rel = rma_dev_unlock(w, r, MPI_LOCK_SHARED);
            if (rc == MPI_SUCCESS)
                rc = rel;
        }
    } else {
        for (int r = 0; r < w->size && rc == MPI_SUCCESS; r++) {
            rc = rma_control(w, r, RMA_UNLOCK, 0);
            w->touched[r] = 0;
        }
        rma_wait_replies(w, -1);
    }
    w->lock_all = 0;
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, win, rc, "sending the unlock requests failed");
    return rma_take_error(w, func);
}

static int passive_check(const char *func, struct rma_win *w, int rank)
{
    if (!w->lock_all && !w->lock_type[rank])
        return hashi_err_win(func, rma_handle(w), MPI_ERR_RMA_SYNC,
                             "rank %d is not locked by this process (no passive-target epoch)", rank);
    return MPI_SUCCESS;
}

int hashi_impl_Win_flush(int rank, MPI_Win win)
{
    static const char func[] = "MPI_Win_flush";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((rc = rank_check(func, w, rank)) != MPI_SUCCESS || (rc = passive_check(func, w, rank)) != MPI_SUCCESS)
        return rc;
    if (w->shm_ctl)
        atomic_thread_fence(memory_order_seq_cst);   /* the operations are complete */
    rma_dev_queue_issue(w, rank);
    if (w->touched[rank]) {
        rc = rma_control(w, rank, RMA_FLUSH, 0);
        w->touched[rank] = 0;
    }
    rma_wait_replies(w, rank);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, win, rc, "sending the flush request to rank %d failed", rank);
    return rma_take_error(w, func);
}

int hashi_impl_Win_flush_all(MPI_Win win)
{
    static const char func[] = "MPI_Win_flush_all";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!w->lock_all) {
        int locked = 0;
        for (int r = 0; r < w->size; r++)
            locked |= w->lock_type[r] != 0;
        if (!locked)
            return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "no passive-target epoch is open on the window");
    }
    if (w->shm_ctl)
        atomic_thread_fence(memory_order_seq_cst);
    rma_dev_queue_issue_all(w);
    rc = close_targets(w, NULL, RMA_FLUSH);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, win, rc, "sending the flush requests failed");
    return rma_take_error(w, func);
}

/* Local completion: the data of puts and accumulates was copied when they
 * were issued, so only replies (gets) are waited for. */
int hashi_impl_Win_flush_local(int rank, MPI_Win win)
{
    static const char func[] = "MPI_Win_flush_local";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((rc = rank_check(func, w, rank)) != MPI_SUCCESS || (rc = passive_check(func, w, rank)) != MPI_SUCCESS)
        return rc;
    rma_wait_replies(w, rank);
    return rma_take_error(w, func);
}

int hashi_impl_Win_flush_local_all(MPI_Win win)
{
    static const char func[] = "MPI_Win_flush_local_all";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    int locked = w->lock_all;
    for (int r = 0; r < w->size; r++)
        locked |= w->lock_type[r] != 0;
    if (!locked)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "no passive-target epoch is open on the window");
    rma_wait_replies(w, -1);
    return rma_take_error(w, func);
}

/* The unified model: public and private copies are one. A full barrier
 * orders this process's loads and stores against other processes' on
 * shared windows, and a progress round serves pending requests. */
int hashi_impl_Win_sync(MPI_Win win)
{
    static const char func[] = "MPI_Win_sync";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    if (!rma_win_arg(func, win, &rc))
        return rc;
    atomic_thread_fence(memory_order_seq_cst);
    hashi_progress_poll();
    return MPI_SUCCESS;
}

/* ---- post / start / complete / wait ---- */

/* The window ranks of a group's members into flags[]; MPI_ERR_GROUP when
 * one is not in the window. */
static int group_flags(const char *func, struct rma_win *w, MPI_Group group, unsigned char *flags, int *count)
{
    struct MPI_ABI_Group *g = hashi_group_get(group);
    if (!g)
        return hashi_err_win(func, rma_handle(w), MPI_ERR_GROUP, "not a valid group");
    *count = g->size;
    for (int i = 0; i < g->size; i++) {
        int r = rma_rank_of_world(w, hashi_group_to_world(g, i));
        if (r < 0)
            return hashi_err_win(func, rma_handle(w), MPI_ERR_GROUP,
                                 "member %d of the group is not in the window's group", i);
        if (flags)
            flags[r] = 1;
    }
    return MPI_SUCCESS;
}

int hashi_impl_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    static const char func[] = "MPI_Win_post";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if ((rc = check_assert(func, w, assert, MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT)) != MPI_SUCCESS)
        return rc;
    if (w->post_expected >= 0)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "an exposure epoch is open already (MPI_Win_wait first)");
    unsigned char *origins = calloc((size_t)w->size, 1);
    if (!origins)
        return hashi_err_win(func, win, MPI_ERR_NO_MEM, "out of memory");
    int n;
    rc = group_flags(func, w, group, origins, &n);
    if (rc == MPI_SUCCESS) {
        w->completes = 0;
        w->post_expected = n;
        if (w->shm_ctl && !(assert & MPI_MODE_NOCHECK)) {
            atomic_thread_fence(memory_order_seq_cst);
            rma_shm_post(w, origins);
        }
        /* Tell each origin its accesses may start (Win_start waits for it);
         * with NOCHECK the matching starts carry it too and wait for nothing
         * (MPI 4.1 sec. 12.5.5), so no notice may be left unmatched. */
        for (int r = 0; r < w->size && rc == MPI_SUCCESS && !(assert & MPI_MODE_NOCHECK) && !w->shm_ctl; r++)
            if (origins[r])
                rc = rma_send_reply(w, r, RMA_TAG_POST, NULL, 0);
        if (rc != MPI_SUCCESS)
            rc = hashi_err_win(func, win, rc, "sending the post notices failed");
    }
    free(origins);
    return rc;
}

int hashi_impl_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    static const char func[] = "MPI_Win_start";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if ((rc = check_assert(func, w, assert, MPI_MODE_NOCHECK)) != MPI_SUCCESS)
        return rc;
    if (w->access_epoch)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "an access epoch is open already (MPI_Win_complete first)");
    memset(w->access, 0, (size_t)w->size);
    int n;
    if ((rc = group_flags(func, w, group, w->access, &n)) != MPI_SUCCESS)
        return rc;
    /* Wait for every target's post (MPI allows Win_start to block). The
     * notices are replies on the reply context under RMA_TAG_POST. */
    if (w->shm_ctl && !(assert & MPI_MODE_NOCHECK))
        rma_shm_start(w);
    for (int r = 0; r < w->size && !(assert & MPI_MODE_NOCHECK) && !w->shm_ctl; r++) {
        if (!w->access[r])
            continue;
        struct MPI_ABI_Request *req;
        rc = hashi_irecv_internal(NULL, 0, MPI_BYTE, r, RMA_TAG_POST, w->comm, w->reply_context, &req);
        if (rc == MPI_SUCCESS)
            rc = hashi_wait_internal(req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return hashi_err_win(func, win, rc, "waiting for rank %d's MPI_Win_post failed", r);
    }
    w->access_epoch = 1;
    return MPI_SUCCESS;
}

int hashi_impl_Win_complete(MPI_Win win)
{
    static const char func[] = "MPI_Win_complete";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!w->access_epoch)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "no access epoch is open (MPI_Win_start first)");
    rma_dev_queue_issue_all(w);
    if (w->shm_ctl) {
        atomic_thread_fence(memory_order_seq_cst);
        rma_shm_complete(w);
    } else {
        rc = close_targets(w, w->access, RMA_COMPLETE);
    }
    w->access_epoch = 0;
    memset(w->access, 0, (size_t)w->size);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, win, rc, "sending the completion notices failed");
    return rma_take_error(w, func);
}

static int all_completed(void *arg)
{
    struct rma_win *w = arg;
    if (w->shm_ctl)
        return rma_shm_completed(w, 0);
    return w->completes >= w->post_expected;
}

/* The exposure epoch's notices are in: count them as used. */
static void consume_completes(struct rma_win *w)
{
    if (w->shm_ctl)
        rma_shm_completed(w, 1);
    else
        w->completes -= w->post_expected;
    w->post_expected = -1;
}

int hashi_impl_Win_wait(MPI_Win win)
{
    static const char func[] = "MPI_Win_wait";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (w->post_expected < 0)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "no exposure epoch is open (MPI_Win_post first)");
    if (!all_completed(w))
        hashi_progress_wait_until(all_completed, w);
    consume_completes(w);
    return MPI_SUCCESS;
}

int hashi_impl_Win_test(MPI_Win win, int *flag)
{
    static const char func[] = "MPI_Win_test";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!flag)
        return hashi_err_win(func, win, MPI_ERR_ARG, "flag is NULL");
    if (w->post_expected < 0)
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC, "no exposure epoch is open (MPI_Win_post first)");
    if (!all_completed(w))
        hashi_progress_poll();
    *flag = all_completed(w);
    if (*flag)
        consume_completes(w);
    return MPI_SUCCESS;
}
