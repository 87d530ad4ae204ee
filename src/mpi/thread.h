/*
 * MPI_THREAD_MULTIPLE: one process-wide recursive lock around every MPI call
 * (MPICH's "global" critical section). Every generated entry point takes it
 * when hashi_mt_locking is set (init sets it when MULTIPLE is provided);
 * waits give it up while they idle (hashi_progress_wait_until). Recursion is a
 * per-thread depth, so user callbacks that call MPI (reduction ops, error
 * handlers, attribute and generalized-request callbacks) re-enter freely.
 * Design and figures: docs/threads.md.
 */
#ifndef HASHI_MPI_THREAD_H
#define HASHI_MPI_THREAD_H

#include <stdatomic.h>

/* Set once by MPI_Init_thread when it provides MPI_THREAD_MULTIPLE (before
 * the program can start threads that call MPI); read by every entry point. */
extern int hashi_mt_locking;

/* Take / drop the lock around one MPI call (recursive per thread). */
void hashi_mt_enter(void);
void hashi_mt_exit(void);

/*
 * For waits. hashi_mt_release gives the lock up entirely and returns 1 when
 * the caller holds it at depth 1 (an MPI call waiting, not a callback nested
 * inside another call, whose caller may be half-way through library state);
 * hashi_mt_reacquire takes it back after a 1. hashi_mt_let_others_in hands
 * the lock to threads blocked on it, if any, and takes it back.
 */
int hashi_mt_release(void);
void hashi_mt_reacquire(void);
void hashi_mt_let_others_in_slow(void);
/* Threads blocked taking the lock right now. */
extern _Atomic int hashi_mt_contenders;

static inline void hashi_mt_let_others_in(void)
{
    if (__builtin_expect(atomic_load_explicit(&hashi_mt_contenders, memory_order_relaxed) > 0, 0))
        hashi_mt_let_others_in_slow();
}

#endif
