/*
 * Sleeping and waking ranks on one node. When ranks outnumber cores, a rank
 * that waits must not burn its core's time slice: it spins briefly, then
 * sleeps until something it waits for may have come.
 *
 * - On a futex word of its own in a per-node shared segment, which a local
 *   peer that sends it something wakes (libfabric's shm CQ offers no wait
 *   object, and a futex costs nothing when nobody sleeps). Its sleep is
 *   bounded by a timeout for traffic that does not come from a local peer's
 *   send (a provider's internal acknowledgements, remote nodes).
 * - Or, when its device's provider has a wait object (tcp: the CQ's fd; the
 *   device's wait_fd / trywait, handed over with hashi_wake_use_fd) and a
 *   launcher job directory holds a FIFO of its own: in poll(2) on both. A
 *   futex cannot be waited on together with an fd, so local peers then write
 *   a byte to the FIFO instead of waking the futex (the word's `in_poll`
 *   says which), and remote traffic wakes it through the provider's fd.
 *   Ranks without such a provider (shm, emu alone), without a job
 *   directory, or not oversubscribed keep the futex.
 *
 * The protocol is Dekker-style: the waiter announces `sleeping` (a count: under
 * MPI_THREAD_MULTIPLE several threads of a rank may sleep at once), then checks
 * for work once more (and arms the provider's wait object, hashi_wake_arm),
 * then sleeps unless `seq` moved; a sender makes its message visible, then
 * (full fence) reads `sleeping` and, only if set, bumps `seq` and wakes the
 * futex or writes the FIFO. Either the waiter's last check sees the message
 * or the sender sees the count.
 */
#ifndef HASHI_RUNTIME_WAKE_H
#define HASHI_RUNTIME_WAKE_H

#include <stddef.h>

/* Before hashi_wake_create: the device's wait object (device/device.h
 * wait_fd, trywait; fd -1 or trywait NULL: none). */
void hashi_wake_use_fd(int fd, int (*trywait)(void));

/* Before the modex exchange: the node's first rank creates the segment; a
 * rank with a wait object creates its FIFO in the job directory. */
int hashi_wake_create(char *err, size_t errlen);
/* After the exchange: every local rank attaches (and checks the job key) and
 * opens its local peers' FIFOs (the last to open one removes its name). */
int hashi_wake_attach(char *err, size_t errlen);
/* After a fence that follows every local rank's attach: drop the segment's name
 * (only when it lives in /dev/shm, i.e. there is no launcher job directory). */
void hashi_wake_unlink(void);
int hashi_wake_needs_unlink(void);
void hashi_wake_detach(void);

/* After making a message visible to local peer `world_rank`: wake it if it sleeps.
 * Inline test first: a rank with a core of its own never sleeps, and every
 * message to a local peer passes here (twice on emu: kick and drain). */
extern int hashi_wake_enabled_flag;
void hashi_wake_peer_sleeping(int world_rank);
static inline void hashi_wake_peer(int world_rank)
{
    if (__builtin_expect(hashi_wake_enabled_flag, 0))
        hashi_wake_peer_sleeping(world_rank);
}

/*
 * One idle round of a wait loop: announce sleep, run `poll` once more, and
 * sleep (at most timeout_us) unless poll made progress or a peer woke us.
 * Returns poll's result (work done before sleeping), or 0 after a sleep.
 * `poll`, when it finds nothing, must end with hashi_wake_arm() (and count a
 * nonzero answer as work), under whatever lock its polling takes.
 */
int hashi_wake_sleep(int (*poll)(void), long timeout_us);

/* Arm the provider's wait object before sleeping on it: 0 when blocking is
 * safe, nonzero when the provider has something pending (poll again). 0 when
 * this rank sleeps on its futex word. */
int hashi_wake_arm(void);

/* Whether sleeping is in use (the node is oversubscribed). */
int hashi_wake_enabled(void);

#endif
