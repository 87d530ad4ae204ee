/*
 * The neighbourhood collectives: MPI_Neighbor_allgather(v) and
 * MPI_Neighbor_alltoall(v)(w), blocking, nonblocking and persistent.
 *
 * One algorithm: a single round that posts a receive from every source and a
 * send to every destination of the communicator's topology
 * (hashi_topo_neighbors). The five calls differ only in where each block is
 * (struct hashi_coll_blocks); allgather's send side is one block repeated
 * (stride 0).
 *
 * Matching when a pair is joined by several edges (one tag per schedule, so
 * messages between two ranks match in posting order):
 *  - graph and distributed-graph topologies: the k-th edge from a to b meets
 *    the k-th edge into b from a (MPI-4.1 section 8.6): list order on both
 *    sides does it;
 *  - Cartesian: the block sent in direction -1 of dimension d is received as
 *    block +1 of d, and vice versa, also when both neighbours are the same
 *    process (periodic dimensions of size 1 or 2, MPI-4.1 example 8.10). The
 *    receives go in list order (-1 then +1), so the sends of each dimension
 *    go +1 first.
 */
#include "mpi/coll/coll_data.h"

#include "device/device.h"

#include <stdlib.h>

#include "mpi/topo.h"

enum neighbor_kind {
    NEIGHBOR_ALLGATHER, NEIGHBOR_ALLGATHERV, NEIGHBOR_ALLTOALL, NEIGHBOR_ALLTOALLV, NEIGHBOR_ALLTOALLW
};

static int build_neighbor(struct hashi_sched *s, int cartesian, int indegree, const int sources[], int outdegree,
                          const int destinations[], const struct hashi_coll_blocks *send,
                          const struct hashi_coll_blocks *recv)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < indegree && rc == MPI_SUCCESS; i++)
        if (hashi_blocks_bytes(recv, i) > 0)
            rc = hashi_sched_recv(s, hashi_blocks_ptr(recv, i), hashi_blocks_count(recv, i),
                                  hashi_blocks_type(recv, i), sources[i]);
    for (int k = 0; k < outdegree && rc == MPI_SUCCESS; k++) {
        int j = cartesian ? k ^ 1 : k;   /* Cartesian: +1 before -1 in each dimension */
        if (hashi_blocks_bytes(send, j) > 0)
            rc = hashi_sched_send(s, hashi_blocks_ptr(send, j), hashi_blocks_count(send, j),
                                  hashi_blocks_type(send, j), destinations[j]);
    }
    return rc;
}

/* The call on the device's sparse exchange, blocking or as a step of s,
 * the blocks in build_neighbor's order (which is MPI's matching order). */
static int device_neighbor(struct hashi_sched *s, struct MPI_ABI_Comm *c, int cartesian, int indegree,
                           const int sources[], int outdegree, const int destinations[],
                           const struct hashi_coll_blocks *send, const struct hashi_coll_blocks *recv)
{
    if (!(s ? hashi_device->coll.op_init != NULL : hashi_device->coll.exchange != NULL))
        return HASHI_DEVICE_COLL_DECLINE;
    int *order = NULL;
    if (cartesian && outdegree > 0) {
        if (!(order = malloc((size_t)outdegree * sizeof *order)))
            return MPI_ERR_NO_MEM;
        for (int k = 0; k < outdegree; k++)
            order[k] = k ^ 1;
    }
    const struct hashi_coll_xside xs = { outdegree, destinations, order, send }, xr = { indegree, sources, NULL, recv };
    int rc = s ? hashi_coll_device_exchange_step(s, c, 0, &xs, &xr) : hashi_coll_device_exchange(c, 0, &xs, &xr);
    free(order);
    return rc;
}

/* One side's arguments: one block (allgather, alltoall), v (counts and
 * displacements, one type), w (a type per block); fills in the strides. */
static int check_side(const struct hashi_coll_call *call, MPI_Comm comm, enum neighbor_kind kind,
                      enum hashi_coll_side side, int n, struct hashi_coll_blocks *b)
{
    int gathering = kind == NEIGHBOR_ALLGATHER || kind == NEIGHBOR_ALLGATHERV;
    int one_block = kind == NEIGHBOR_ALLTOALL || kind == NEIGHBOR_ALLGATHER || (side == HASHI_COLL_SEND && gathering);
    struct MPI_ABI_Datatype *t = NULL;
    int rc;
    if (one_block) {
        if ((rc = hashi_coll_check_data(call, comm, side, b->buf, b->count, b->type, &t)) != MPI_SUCCESS)
            return rc;
        /* Allgather sends the same block to everyone. */
        b->stride = side == HASHI_COLL_SEND && gathering ? 0 : b->count * hashi_type_extent(t);
        return MPI_SUCCESS;
    }
    if ((rc = hashi_coll_check_counts(call, comm, side, n, b->buf, b->counts, b->displs)) != MPI_SUCCESS)
        return rc;
    if (kind == NEIGHBOR_ALLTOALLW) {
        b->unit = 1;
        return hashi_coll_check_types(call, comm, side, n, b->types);
    }
    if ((rc = hashi_coll_check_data(call, comm, side, b->buf, 0, b->type, &t)) != MPI_SUCCESS)
        return rc;
    b->unit = hashi_type_extent(t);
    return MPI_SUCCESS;
}

static int neighbor(const struct hashi_coll_call *call, enum neighbor_kind kind, struct hashi_coll_blocks send,
                    struct hashi_coll_blocks recv, MPI_Comm comm)
{
    int rc;
    struct MPI_ABI_Comm *c = hashi_coll_call_comm(call, comm, &rc);
    if (!c)
        return rc;
    int indegree, outdegree;
    const int *sources, *destinations;
    if (hashi_topo_neighbors(c, &indegree, &sources, &outdegree, &destinations) != MPI_SUCCESS)
        return hashi_err_comm(call->func, comm, MPI_ERR_TOPOLOGY, "the communicator has no process topology");
    if ((rc = check_side(call, comm, kind, HASHI_COLL_SEND, outdegree, &send)) != MPI_SUCCESS ||
        (rc = check_side(call, comm, kind, HASHI_COLL_RECV, indegree, &recv)) != MPI_SUCCESS)
        return rc;
    int topo_kind = MPI_UNDEFINED;
    if ((rc = hashi_impl_Topo_test(comm, &topo_kind)) != MPI_SUCCESS)
        return rc;
    int cartesian = topo_kind == MPI_CART && outdegree % 2 == 0;

    if (call->mode == HASHI_COLL_BLOCKING) {
        rc = device_neighbor(NULL, c, cartesian, indegree, sources, outdegree, destinations, &send, &recv);
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return rc == MPI_SUCCESS ? rc : hashi_err_comm(call->func, comm, rc, "the device's exchange failed");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    /* Nonblocking and persistent: the device's exchange operation where it
     * takes the call (a persistent one works out its blocks here, once). */
    rc = s && call->mode != HASHI_COLL_BLOCKING
             ? device_neighbor(s, c, cartesian, indegree, sources, outdegree, destinations, &send, &recv)
             : HASHI_DEVICE_COLL_DECLINE;
    if (s && rc == HASHI_DEVICE_COLL_DECLINE)
        rc = build_neighbor(s, cartesian, indegree, sources, outdegree, destinations, &send, &recv);
    return hashi_coll_call_finish(call, comm, s, rc);
}

/* The int forms of the v and w calls: counts (and displacements, when given
 * as int) widened; n_send / n_recv are the topology's degrees. */
static int neighbor_int(const struct hashi_coll_call *call, enum neighbor_kind kind, struct hashi_coll_blocks send,
                        const int scounts[], const int sdispls[], struct hashi_coll_blocks recv,
                        const int rcounts[], const int rdispls[], MPI_Comm comm)
{
    int indegree, outdegree;
    hashi_coll_neighbor_counts(comm, &indegree, &outdegree);
    MPI_Count *wsc, *wrc;
    MPI_Aint *wsd, *wrd;
    void *sblock, *rblock = NULL;
    if (hashi_coll_widen(outdegree, scounts, sdispls, &wsc, &wsd, &sblock) != MPI_SUCCESS ||
        hashi_coll_widen(indegree, rcounts, rdispls, &wrc, &wrd, &rblock) != MPI_SUCCESS) {
        free(sblock);
        return hashi_err_comm(call->func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    /* Displacements given as MPI_Aint (the w forms) stay as they are. */
    send.counts = wsc;
    if (sdispls)
        send.displs = wsd;
    recv.counts = wrc;
    if (rdispls)
        recv.displs = wrd;
    int rc = neighbor(call, kind, send, recv, comm);
    free(sblock);
    free(rblock);
    return rc;
}

/* ---- entry points ---- */

#define ONE_BLOCK(b, c, t) ((struct hashi_coll_blocks){ .buf = (char *)(b), .count = (c), .type = (t) })
#define V_BLOCKS(b, cs, ds, t)                                                                                         \
    ((struct hashi_coll_blocks){.buf = (char *)(b), .counts = (cs), .displs = (ds), .type = (t)})
#define W_BLOCKS(b, cs, ds, ts)                                                                                        \
    ((struct hashi_coll_blocks){                                                                                       \
        .buf = (char *)(b), .counts = (cs), .displs = (ds), .type = MPI_DATATYPE_NULL, .types = (ts)})

int hashi_impl_Neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_allgather"), NEIGHBOR_ALLGATHER,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_allgather"), NEIGHBOR_ALLGATHER,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Ineighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                     MPI_Request *request)
{
    return neighbor(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_allgather", request), NEIGHBOR_ALLGATHER,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return neighbor(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_allgather", request), NEIGHBOR_ALLGATHER,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Neighbor_allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                         MPI_Info info, MPI_Request *request)
{
    (void)info;
    return neighbor(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_allgather_init", request), NEIGHBOR_ALLGATHER,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Neighbor_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                       MPI_Request *request)
{
    (void)info;
    return neighbor(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_allgather_init", request), NEIGHBOR_ALLGATHER,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                                     MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_allgatherv"), NEIGHBOR_ALLGATHERV,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), V_BLOCKS(recvbuf, recvcounts, displs, recvtype), comm);
}

int hashi_impl_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor_int(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_allgatherv"), NEIGHBOR_ALLGATHERV,
                        ONE_BLOCK(sendbuf, sendcount, sendtype), NULL, NULL, V_BLOCKS(recvbuf, NULL, NULL, recvtype),
                        recvcounts, displs, comm);
}

int hashi_impl_Ineighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return neighbor(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_allgatherv", request), NEIGHBOR_ALLGATHERV,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), V_BLOCKS(recvbuf, recvcounts, displs, recvtype), comm);
}

int hashi_impl_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                    MPI_Request *request)
{
    return neighbor_int(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_allgatherv", request), NEIGHBOR_ALLGATHERV,
                        ONE_BLOCK(sendbuf, sendcount, sendtype), NULL, NULL, V_BLOCKS(recvbuf, NULL, NULL, recvtype),
                        recvcounts, displs, comm);
}

int hashi_impl_Neighbor_allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                          void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return neighbor(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_allgatherv_init", request), NEIGHBOR_ALLGATHERV,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), V_BLOCKS(recvbuf, recvcounts, displs, recvtype), comm);
}

int hashi_impl_Neighbor_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                        MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return neighbor_int(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_allgatherv_init", request), NEIGHBOR_ALLGATHERV,
                        ONE_BLOCK(sendbuf, sendcount, sendtype), NULL, NULL, V_BLOCKS(recvbuf, NULL, NULL, recvtype),
                        recvcounts, displs, comm);
}

int hashi_impl_Neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_alltoall"), NEIGHBOR_ALLTOALL,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_alltoall"), NEIGHBOR_ALLTOALL,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Ineighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return neighbor(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_alltoall", request), NEIGHBOR_ALLTOALL,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return neighbor(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_alltoall", request), NEIGHBOR_ALLTOALL,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Neighbor_alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                        MPI_Info info, MPI_Request *request)
{
    (void)info;
    return neighbor(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_alltoall_init", request), NEIGHBOR_ALLTOALL,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                      MPI_Request *request)
{
    (void)info;
    return neighbor(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_alltoall_init", request), NEIGHBOR_ALLTOALL,
                    ONE_BLOCK(sendbuf, sendcount, sendtype), ONE_BLOCK(recvbuf, recvcount, recvtype), comm);
}

int hashi_impl_Neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_alltoallv"), NEIGHBOR_ALLTOALLV,
                    V_BLOCKS(sendbuf, sendcounts, sdispls, sendtype), V_BLOCKS(recvbuf, recvcounts, rdispls, recvtype),
                    comm);
}

int hashi_impl_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                  MPI_Datatype recvtype, MPI_Comm comm)
{
    return neighbor_int(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_alltoallv"), NEIGHBOR_ALLTOALLV,
                        V_BLOCKS(sendbuf, NULL, NULL, sendtype), sendcounts, sdispls,
                        V_BLOCKS(recvbuf, NULL, NULL, recvtype), recvcounts, rdispls, comm);
}

int hashi_impl_Ineighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                                     MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                     MPI_Request *request)
{
    return neighbor(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_alltoallv", request), NEIGHBOR_ALLTOALLV,
                    V_BLOCKS(sendbuf, sendcounts, sdispls, sendtype), V_BLOCKS(recvbuf, recvcounts, rdispls, recvtype),
                    comm);
}

int hashi_impl_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return neighbor_int(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_alltoallv", request), NEIGHBOR_ALLTOALLV,
                        V_BLOCKS(sendbuf, NULL, NULL, sendtype), sendcounts, sdispls,
                        V_BLOCKS(recvbuf, NULL, NULL, recvtype), recvcounts, rdispls, comm);
}

int hashi_impl_Neighbor_alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return neighbor(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_alltoallv_init", request), NEIGHBOR_ALLTOALLV,
                    V_BLOCKS(sendbuf, sendcounts, sdispls, sendtype), V_BLOCKS(recvbuf, recvcounts, rdispls, recvtype),
                    comm);
}

int hashi_impl_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                       MPI_Request *request)
{
    (void)info;
    return neighbor_int(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_alltoallv_init", request), NEIGHBOR_ALLTOALLV,
                        V_BLOCKS(sendbuf, NULL, NULL, sendtype), sendcounts, sdispls,
                        V_BLOCKS(recvbuf, NULL, NULL, recvtype), recvcounts, rdispls, comm);
}

int hashi_impl_Neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                                    const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                                    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    return neighbor(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_alltoallw"), NEIGHBOR_ALLTOALLW,
                    W_BLOCKS(sendbuf, sendcounts, sdispls, sendtypes),
                    W_BLOCKS(recvbuf, recvcounts, rdispls, recvtypes), comm);
}

int hashi_impl_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                  const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    return neighbor_int(HASHI_COLL_CALL_BLOCKING("MPI_Neighbor_alltoallw"), NEIGHBOR_ALLTOALLW,
                        W_BLOCKS(sendbuf, NULL, sdispls, sendtypes), sendcounts, NULL,
                        W_BLOCKS(recvbuf, NULL, rdispls, recvtypes), recvcounts, NULL, comm);
}

int hashi_impl_Ineighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                                     const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                     MPI_Request *request)
{
    return neighbor(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_alltoallw", request), NEIGHBOR_ALLTOALLW,
                    W_BLOCKS(sendbuf, sendcounts, sdispls, sendtypes),
                    W_BLOCKS(recvbuf, recvcounts, rdispls, recvtypes), comm);
}

int hashi_impl_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                   const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                   MPI_Request *request)
{
    return neighbor_int(HASHI_COLL_CALL_NONBLOCKING("MPI_Ineighbor_alltoallw", request), NEIGHBOR_ALLTOALLW,
                        W_BLOCKS(sendbuf, NULL, sdispls, sendtypes), sendcounts, NULL,
                        W_BLOCKS(recvbuf, NULL, rdispls, recvtypes), recvcounts, NULL, comm);
}

int hashi_impl_Neighbor_alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                         const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                         MPI_Request *request)
{
    (void)info;
    return neighbor(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_alltoallw_init", request), NEIGHBOR_ALLTOALLW,
                    W_BLOCKS(sendbuf, sendcounts, sdispls, sendtypes),
                    W_BLOCKS(recvbuf, recvcounts, rdispls, recvtypes), comm);
}

int hashi_impl_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                       MPI_Info info, MPI_Request *request)
{
    (void)info;
    return neighbor_int(HASHI_COLL_CALL_PERSISTENT("MPI_Neighbor_alltoallw_init", request), NEIGHBOR_ALLTOALLW,
                        W_BLOCKS(sendbuf, NULL, sdispls, sendtypes), sendcounts, NULL,
                        W_BLOCKS(recvbuf, NULL, rdispls, recvtypes), recvcounts, NULL, comm);
}
