/*
 * MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init. The blocking form asks the
 * device first (DIMMnet / Maestro barriers in hardware), the others offer it
 * as a device operation step (sched.h), then the node-aware
 * barrier (hier.c: node, leaders, node) on communicators spanning nodes;
 * otherwise, and for the other forms, the node-aware or a dissemination barrier: in round k every rank sends an
 * empty message to rank + 2^k and waits for one from rank - 2^k, so after
 * ceil(log2 n) rounds every rank has heard, directly or through others, from
 * every rank's entry.
 */
#include "mpi/coll/inter.h"
#include "mpi/coll/coll.h"

#include "device/device.h"

int hashi_coll_build_barrier(struct hashi_sched *s, struct MPI_ABI_Comm *c)
{
    int n = c->size, rank = c->rank, rc = hashi_coll_hier_barrier(s, c);
    if (rc != HASHI_COLL_FLAT)
        return rc;
    rc = MPI_SUCCESS;
    for (int dist = 1; dist < n && rc == MPI_SUCCESS; dist *= 2) {
        rc = hashi_sched_send(s, NULL, 0, MPI_BYTE, (rank + dist) % n);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, NULL, 0, MPI_BYTE, (rank - dist + n) % n);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
    }
    return rc;
}

/* The node-aware barrier run now: HASHI_COLL_FLAT when not chosen. */
static int hier_now(const struct hashi_coll_call *call, MPI_Comm comm, struct MPI_ABI_Comm *c)
{
    int rc = hashi_coll_hier_barrier(NULL, c);
    if (rc == HASHI_COLL_FLAT || rc == MPI_SUCCESS)
        return rc;
    return hashi_err_comm(call->func, comm, rc, "the node-aware barrier failed");
}

static int barrier(const struct hashi_coll_call *call, MPI_Comm comm)
{
    if (hashi_coll_is_inter(comm))
        return hashi_coll_inter_barrier(call, comm);
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_call_comm(call, comm, &rc);
    if (!c)
        return rc;
    if (call->mode == HASHI_COLL_BLOCKING) {
        if (c->size == 1)
            return MPI_SUCCESS;
        /* A device barrier that takes the communicator (dimmnet's one-sided
         * dissemination on MPI_COMM_WORLD spans nodes) beats the three
         * phases of the node-aware one, unless that one is forced. */
        int hier_first = hashi_coll_hier_forced(HASHI_CHOOSE_BARRIER, c);
        if (hier_first && (rc = hier_now(call, comm, c)) != HASHI_COLL_FLAT)
            return rc;
        if (hashi_device->coll.barrier) {
            rc = hashi_device->coll.barrier(c);
            if (rc == MPI_SUCCESS)
                return MPI_SUCCESS;
            if (rc != HASHI_DEVICE_COLL_DECLINE)
                return hashi_err_comm(call->func, comm, rc, "the device's barrier failed");
        }
        if (!hier_first && (rc = hier_now(call, comm, c)) != HASHI_COLL_FLAT)
            return rc;
    }
    struct hashi_sched *s = hashi_sched_create(c);
    rc = !s ? MPI_ERR_NO_MEM : HASHI_DEVICE_COLL_DECLINE;
    /* Nonblocking and persistent: the device's operation where it takes
     * the communicator (the blocking order: a forced node-aware barrier
     * first). */
    if (s && call->mode != HASHI_COLL_BLOCKING && c->size > 1 && !hashi_coll_hier_forced(HASHI_CHOOSE_BARRIER, c))
        rc = hashi_sched_device(s, &(struct hashi_device_coll_args){ .kind = HASHI_DEVICE_OP_BARRIER, .comm = c });
    if (rc == HASHI_DEVICE_COLL_DECLINE)
        rc = hashi_coll_build_barrier(s, c);
    return hashi_coll_call_finish(call, comm, s, rc);
}

int hashi_impl_Barrier(MPI_Comm comm)
{
    return barrier(HASHI_COLL_CALL_BLOCKING("MPI_Barrier"), comm);
}

int hashi_impl_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    return barrier(HASHI_COLL_CALL_NONBLOCKING("MPI_Ibarrier", request), comm);
}

int hashi_impl_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;   /* no info keys change how a barrier runs */
    return barrier(HASHI_COLL_CALL_PERSISTENT("MPI_Barrier_init", request), comm);
}
