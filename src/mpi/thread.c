/*
 * The global lock of MPI_THREAD_MULTIPLE (thread.h, docs/threads.md). A plain
 * mutex plus a per-thread depth: only the outermost enter and exit touch the
 * mutex, so nested calls from user callbacks cost an increment.
 */
#include "mpi/thread.h"
#include "runtime/clock.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>

int hashi_mt_locking;
_Atomic int hashi_mt_contenders;

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
/* Bumped by every outermost acquisition: a thread handing the lock over sees
 * from it that another thread got in. */
static _Atomic uint64_t acquisitions;
/* This thread's nesting depth (0: does not hold the lock). initial-exec: a
 * plain %fs-relative access on every call. */
static _Thread_local int depth __attribute__((tls_model("initial-exec")));

/* How long a waiting thread holds back after handing the lock over: long
 * enough for a woken contender to be scheduled, short next to a wait. */
#define HANDOVER_NS 50000
#define HANDOVER_SPINS 64

static void acquire(void)
{
    if (pthread_mutex_trylock(&global_lock) != 0) {
        atomic_fetch_add_explicit(&hashi_mt_contenders, 1, memory_order_relaxed);
        pthread_mutex_lock(&global_lock);
        atomic_fetch_sub_explicit(&hashi_mt_contenders, 1, memory_order_relaxed);
    }
    /* Only the holder writes it: a load and a store, no locked instruction. */
    atomic_store_explicit(&acquisitions, atomic_load_explicit(&acquisitions, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

void hashi_mt_enter(void)
{
    if (depth++ == 0)
        acquire();
}

void hashi_mt_exit(void)
{
    if (--depth == 0)
        pthread_mutex_unlock(&global_lock);
}

int hashi_mt_release(void)
{
    if (!hashi_mt_locking || depth != 1)
        return 0;
    depth = 0;
    pthread_mutex_unlock(&global_lock);
    return 1;
}

void hashi_mt_reacquire(void)
{
    depth = 1;
    acquire();
}

void hashi_mt_let_others_in_slow(void)
{
    uint64_t seen = atomic_load_explicit(&acquisitions, memory_order_relaxed);
    if (!hashi_mt_release())
        return;
    /* An unlock followed at once by a lock would win against the contender
     * still waking from its futex: wait until it got in (or gave up), spinning
     * briefly, then yielding the core in case it shares ours. */
    int64_t start = 0;
    for (int i = 0; atomic_load_explicit(&acquisitions, memory_order_relaxed) == seen &&
                    atomic_load_explicit(&hashi_mt_contenders, memory_order_relaxed) > 0;
         i++) {
        if (i < HANDOVER_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        if (start == 0)
            start = hashi_now_ns();
        else if (hashi_now_ns() - start > HANDOVER_NS)
            break;
        sched_yield();
    }
    hashi_mt_reacquire();
}
