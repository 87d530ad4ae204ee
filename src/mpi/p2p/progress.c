/*
 * Progress: one poll round (the device, then registered engines), and the
 * wait loop every blocking call uses. A rank with a core of its own spins
 * (HASHI_SPIN_COUNT idle polls between yields of its core); an oversubscribed
 * rank spins a two-thousandth of that, yields for HASHI_YIELD_US, then
 * sleeps (runtime/wake.h) on its wake word, or in poll(2) on its provider's
 * wait fd and its wake FIFO when the provider has one (tcp), until a local
 * peer's send or (poll) anything the provider gets wakes it, or the sleep's
 * bound passes: HASHI_SLEEP_US, doubled after every sleep that brought
 * nothing, up to HASHI_SLEEP_MAX_US. Under MPI_THREAD_MULTIPLE a wait gives the global
 * lock up while it yields or sleeps, and to threads blocked on it between
 * polls (docs/threads.md). Also the layer's init and MPI_Finalize's drain.
 */
#include "mpi/p2p/p2p_impl.h"
#include "mpi/thread.h"
#include "runtime/clock.h"
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"

#include <sched.h>
#include <stdint.h>
#include <string.h>

/*
 * Threads of this process asleep on its wake word under MPI_THREAD_MULTIPLE
 * (idle_sleep). A poll by another thread that found work wakes them: the
 * completion may be theirs, and no peer would wake them for it.
 */
static _Atomic int threads_asleep;

static void wake_threads_asleep(void)
{
    if (atomic_load_explicit(&threads_asleep, memory_order_relaxed) > 0)
        hashi_wake_peer(hashi_job.rank);
}

int hashi_progress_poll(void)
{
    int done = hashi_device->p2p.progress();
    /* Most of the time no engine is registered: the device's poll is all. */
    if (__builtin_expect(hashi_p2p.hook_count != 0, 0))
        for (int i = 0; i < hashi_p2p.hook_count; i++)
            done += hashi_p2p.hooks[i]();
    if (__builtin_expect(hashi_mt_locking, 0) && done > 0)
        wake_threads_asleep();
    return done;
}

int hashi_progress_register(int (*hook)(void))
{
    for (int i = 0; i < hashi_p2p.hook_count; i++)
        if (hashi_p2p.hooks[i] == hook)
            return 0;
    if (hashi_p2p.hook_count == HASHI_PROGRESS_HOOKS_MAX)
        return -1;
    hashi_p2p.hooks[hashi_p2p.hook_count++] = hook;
    return 0;
}

void hashi_progress_unregister(int (*hook)(void))
{
    for (int i = 0; i < hashi_p2p.hook_count; i++) {
        if (hashi_p2p.hooks[i] == hook) {
            memmove(&hashi_p2p.hooks[i], &hashi_p2p.hooks[i + 1],
                    (size_t)(hashi_p2p.hook_count - i - 1) * sizeof hashi_p2p.hooks[0]);
            hashi_p2p.hook_count--;
            return;
        }
    }
}

/*
 * The condition of the wait in progress, for the poll a sleeping rank makes
 * after announcing its sleep: a condition that becomes true without a
 * completion (a message arriving for MPI_Probe, a generalized request
 * completed by the user) must also count as "work found", or the rank would
 * sleep through the wake-up meant for it.
 */
struct wait_condition {
    int (*done)(void *arg);
    void *arg;
    /* done() returned true there. It is never asked again: a condition may
     * consume what it found (MPI_Mprobe's matched probe takes the message),
     * and a second call would find nothing and wait for ever. */
    int met;
};
/* initial-exec: a plain %fs-relative access, where the default model for a
 * shared library calls __tls_get_addr on every wait (twice on the path a
 * blocking receive takes after its message arrives). */
static _Thread_local struct wait_condition current_wait __attribute__((tls_model("initial-exec")));

static int poll_before_sleep(void)
{
    int n = hashi_progress_poll();
    if (n == 0 && current_wait.done && current_wait.done(current_wait.arg)) {
        current_wait.met = 1;
        n = 1;
    }
    /* Sleeping in poll(2) on the provider's fd: arm it here, where the lock
     * is held (the provider serves one thread at a time); a provider with
     * something pending says so and the rank polls again instead. */
    if (n == 0)
        n = hashi_wake_arm();
    return n;
}

/*
 * MPI_THREAD_MULTIPLE: a waiting thread gives up the global lock while it
 * yields or sleeps (mpi/thread.h), and polls only with the lock taken back.
 */
static int poll_before_sleep_locked(void)
{
    hashi_mt_reacquire();
    int n = poll_before_sleep();
    hashi_mt_release();
    return n;
}

static void idle_yield(void)
{
    int released = hashi_mt_release();
    sched_yield();
    if (released)
        hashi_mt_reacquire();
}

static int idle_sleep(long sleep_us)
{
    if (!hashi_mt_release())
        return hashi_wake_sleep(poll_before_sleep, sleep_us);
    atomic_fetch_add_explicit(&threads_asleep, 1, memory_order_relaxed);
    int n = hashi_wake_sleep(poll_before_sleep_locked, sleep_us);
    atomic_fetch_sub_explicit(&threads_asleep, 1, memory_order_relaxed);
    hashi_mt_reacquire();
    return n;
}

/* The wait loop, inlined into its two callers: with done known (a
 * request's completion) the check between polls is one load, not a call
 * through a pointer, also right after the poll that completed it. */
static inline __attribute__((always_inline)) void wait_loop(int (*done)(void *arg), void *arg)
{
    if (done(arg))
        return;
    struct wait_condition saved = current_wait;
    current_wait = (struct wait_condition){ done, arg, 0 };
    long idle = 0;
    long sleep_us = hashi_p2p.sleep_us;
    int64_t yield_start = 0;
    for (;;) {
        int n = hashi_progress_poll();
        if (done(arg))
            break;
        /* Threads blocked on the lock get it between two polls, busy or not. */
        if (__builtin_expect(hashi_mt_locking, 0))
            hashi_mt_let_others_in();
        if (n > 0) {
            idle = 0;
            yield_start = 0;
            sleep_us = hashi_p2p.sleep_us;
            continue;
        }
        if (++idle < hashi_p2p.spin_limit)
            continue;
        /* Idle for a while. An oversubscribed rank first hands its core to
         * the ranks sharing it (sched_yield between polls) for up to
         * HASHI_YIELD_US: a collective's next message usually comes from a
         * rank that only needs the core for a moment, and a yield hands it
         * over in a context switch where a futex sleep and wake-up cost
         * several microseconds on both sides. */
        if (hashi_p2p.yield_ns > 0 && hashi_wake_enabled()) {
            if (yield_start == 0) {
                yield_start = hashi_now_ns();
                idle_yield();
                continue;
            }
            if (hashi_now_ns() - yield_start < hashi_p2p.yield_ns) {
                idle_yield();
                continue;
            }
        }
        /* Still idle: an oversubscribed rank sleeps on its wake word (a local
         * sender wakes it) and, still idle, sleeps again at once; any other
         * yields its core once and spins again. */
        if (idle_sleep(sleep_us) > 0) {
            sleep_us = hashi_p2p.sleep_us;
            yield_start = 0;
        } else if (sleep_us < hashi_p2p.sleep_max_us) {
            /* Nothing came: the time bound only matters for traffic that
             * does not wake (remote peers, a provider's internal messages),
             * and doubling keeps each sleep shorter than the wait so far, so
             * a long wait (a rank parked in MPI_Recv or a barrier) stops
             * taking its core from the ranks at work every 200 us. */
            sleep_us = sleep_us * 2 < hashi_p2p.sleep_max_us ? sleep_us * 2 : hashi_p2p.sleep_max_us;
        }
        if (current_wait.met || done(arg))
            break;
        if (!hashi_wake_enabled())
            idle = 0;
    }
    current_wait = saved;
}

void hashi_progress_wait_until(int (*done)(void *arg), void *arg)
{
    wait_loop(done, arg);
}

static int request_done(void *arg)
{
    return hashi_request_is_complete(arg);
}

void hashi_progress_wait(struct MPI_ABI_Request *req)
{
    wait_loop(request_done, req);
}

/* ---- set-up and tear-down ---- */

int hashi_p2p_tag_ub(void)
{
    return hashi_p2p.tag_ub;
}

void hashi_p2p_init(void)
{
    /* A rank with a core of its own spins HASHI_SPIN_COUNT idle polls before
     * yielding; one sharing its core with other ranks sleeps much sooner, or
     * its spinning delays the very peers it waits for (docs/p2p.md). */
    long spin = (long)hashi_param_int(HASHI_P_SPIN_COUNT);
    hashi_p2p.oversubscribed = hashi_job.oversubscribed;
    hashi_p2p.spin_limit = hashi_p2p.oversubscribed ? spin / HASHI_OVERSUBSCRIBED_SPIN_DIVISOR : spin;
    if (hashi_p2p.spin_limit < 1)
        hashi_p2p.spin_limit = 1;
    hashi_p2p.sleep_us = (long)hashi_param_int(HASHI_P_SLEEP_US);
    if (hashi_p2p.sleep_us < 1)
        hashi_p2p.sleep_us = 1;
    hashi_p2p.yield_ns = (int64_t)hashi_param_int(HASHI_P_YIELD_US) * 1000;
    hashi_p2p.sleep_max_us = (long)hashi_param_int(HASHI_P_SLEEP_MAX_US);
    if (hashi_p2p.sleep_max_us < hashi_p2p.sleep_us)
        hashi_p2p.sleep_max_us = hashi_p2p.sleep_us;
    /* The device's own limit (larger tags get MPI_ERR_TAG); never below the
     * 2^23 - 1 Hashi promises. */
    hashi_p2p.tag_ub = hashi_device->p2p.tag_ub > HASHI_P2P_DEFAULT_TAG_UB ? hashi_device->p2p.tag_ub
                                                                           : HASHI_P2P_DEFAULT_TAG_UB;
    const char *cancel = hashi_param_str(HASHI_P_CANCEL_SENDS);
    hashi_p2p.cancel_sends = hashi_device->p2p.cancel_send && strcmp(cancel, "none") != 0;
    hashi_p2p.isend_shared = !hashi_p2p.cancel_sends || strcmp(cancel, "all") != 0;
    atomic_init(&hashi_p2p.sends_in_flight, 0);
    p2p_requests_init();
    p2p_recv_pvars_register();
    HASHI_DEBUG(2, "p2p: waits spin %ld idle polls, then %s; tag_ub %d, eager limit %zu",
                hashi_p2p.spin_limit, hashi_wake_enabled() ? "sleep (oversubscribed)" : "yield",
                hashi_p2p.tag_ub, hashi_device->p2p.eager_limit);
}

static int no_sends_in_flight(void *arg)
{
    (void)arg;
    return atomic_load_explicit(&hashi_p2p.sends_in_flight, memory_order_relaxed) == 0;
}

void hashi_p2p_finalize(void)
{
    /* Sends the program freed while active, buffered sends: finish them. */
    hashi_progress_wait_until(no_sends_in_flight, NULL);
    /* Then every rank has finished its point-to-point traffic, so the
     * launcher's fence that follows never leaves a peer waiting for data (or
     * for this rank's progress) it needs to get there. */
    int rc = hashi_comm_barrier(&hashi_comm_world);
    if (rc != MPI_SUCCESS)
        hashi_log("MPI_Finalize: the closing barrier over the device failed (error class %d)", rc);
    p2p_bsend_finalize();
    p2p_requests_finalize();
    hashi_p2p.hook_count = 0;
}
