/*
 * Sleeping and waking ranks on one node. When ranks outnumber cores, a rank
 * that waits must not burn its core's time slice: it spins briefly, then sleeps
 * on a futex word of its own in a per-node shared segment; a local peer that
 * sends it something wakes it. (libfabric's shm CQ offers no wait object, and
 * a futex costs nothing when nobody sleeps.)
 *
 * The protocol is Dekker-style: the waiter announces `sleeping`, then checks
 * for work once more, then sleeps unless `seq` moved; a sender makes its
 * message visible, then (full fence) reads `sleeping` and bumps `seq` + wakes
 * only if set. Either the waiter's last check sees the message or the sender
 * sees the flag. A timeout bounds the sleep for traffic that does not come from
 * a local peer's send (a provider's internal acknowledgements, remote nodes).
 */
#ifndef HASHI_RUNTIME_WAKE_H
#define HASHI_RUNTIME_WAKE_H

#include <stddef.h>

/* Before the modex exchange: the node's first rank creates the segment. */
int hashi_wake_create(char *err, size_t errlen);
/* After the exchange: every local rank attaches (and checks the job key). */
int hashi_wake_attach(char *err, size_t errlen);
/* After a fence that follows every local rank's attach: drop the segment's name
 * (only when it lives in /dev/shm, i.e. there is no launcher job directory). */
void hashi_wake_unlink(void);
int hashi_wake_needs_unlink(void);
void hashi_wake_detach(void);

/* After making a message visible to local peer `world_rank`: wake it if it sleeps. */
void hashi_wake_peer(int world_rank);

/*
 * One idle round of a wait loop: announce sleep, run `poll` once more, and
 * sleep (at most timeout_us) unless poll made progress or a peer woke us.
 * Returns poll's result (work done before sleeping), or 0 after a sleep.
 */
int hashi_wake_sleep(int (*poll)(void), long timeout_us);

/* Whether sleeping is in use (the node is oversubscribed). */
int hashi_wake_enabled(void);

#endif
