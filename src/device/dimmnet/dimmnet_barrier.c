/*
 * LLCM synchronization variables (the DIMMnet DSM paper): MPI_Barrier as a
 * dissemination barrier on epoch flags in LLCM. In round k rank i stores its
 * barrier epoch into word k of rank (i + 2^k) mod n's LLCM by AOTF and waits
 * until its own word k holds at least that epoch. Each word has exactly one
 * writer (rank i - 2^k), epochs only grow, and every rank runs the same
 * sequence of barriers, so a fast rank's next epoch may overwrite a word
 * early without losing anything (">= epoch" still holds). On emu no remote
 * CPU takes part: the store lands in the waiter's memory directly.
 *
 * Only MPI_COMM_WORLD (and communicators with the same members in the same
 * order would need their own words): other communicators are declined and
 * take the generic message barrier.
 */
#include "device/dimmnet/dimmnet.h"
#include "mpi/mpi_impl.h"
#include "mpi/p2p.h"
#include "runtime/log.h"
#include "runtime/rt.h"

#include <errno.h>

static struct {
    uint64_t epoch;
    const uint64_t *word;   /* the flag being waited for */
    uint64_t want;
} bar;

static int flag_reached(void *arg)
{
    (void)arg;
    return __atomic_load_n(bar.word, __ATOMIC_ACQUIRE) >= bar.want;
}

void hashi_dn_barrier_init(void)
{
    bar.epoch = 0;
}

int hashi_dn_barrier(struct MPI_ABI_Comm *comm)
{
    if (comm != &hashi_comm_world)
        return HASHI_DEVICE_COLL_DECLINE;
    int n = comm->size, rank = comm->rank;
    if (n == 1)
        return MPI_SUCCESS;
    const uint64_t *flags = hashi_transport_llcm();
    uint64_t epoch = ++bar.epoch;
    int round = 0;
    for (int dist = 1; dist < n; dist *= 2, round++) {
        if (round >= DN_BARRIER_ROUNDS)
            return MPI_ERR_INTERN;  /* 2^32 ranks: not reachable */
        int to = (rank + dist) % n;
        int rc;
        while ((rc = hashi_tl(to)->tiny_write(to, 8u * (unsigned)round, epoch, 8)) == -EAGAIN)
            hashi_dn_progress();
        if (rc != 0) {
            hashi_log("dimmnet: barrier flag write to rank %d failed (%d)", to, rc);
            return MPI_ERR_OTHER;
        }
        hashi_dn_stats.aotf++;
        bar.word = &flags[round];
        bar.want = epoch;
        if (!flag_reached(NULL))
            hashi_progress_wait_until(flag_reached, NULL);
    }
    hashi_dn_stats.barriers++;
    return MPI_SUCCESS;
}
