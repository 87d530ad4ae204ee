/*
 * Collectives on intercommunicators (inter.c). Each collective's entry
 * hands an intercommunicator here before its own checks
 * (hashi_coll_is_inter); hashi_coll_call_comm refuses intercommunicators,
 * so a collective without an entry here raises MPI_ERR_COMM naming them.
 */
#ifndef HASHI_MPI_COLL_INTER_H
#define HASHI_MPI_COLL_INTER_H

#include "mpi/coll/coll.h"

static inline int hashi_coll_is_inter(MPI_Comm comm)
{
    const struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    return c && c->remote_group;
}

/* The start of every call on one: MPI initialized, a valid communicator,
 * the request pointer of the nonblocking and persistent forms. */
struct MPI_ABI_Comm *hashi_coll_inter_call(const struct hashi_coll_call *call, MPI_Comm comm, int *rc);

int hashi_coll_inter_barrier(const struct hashi_coll_call *call, MPI_Comm comm);
int hashi_coll_inter_bcast(const struct hashi_coll_call *call, void *buf, MPI_Count count, MPI_Datatype type,
                           int root, MPI_Comm comm);
int hashi_coll_inter_reduce(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm);
int hashi_coll_inter_allreduce(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf,
                               MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int hashi_coll_inter_allgather(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                               MPI_Datatype stype, void *recvbuf, MPI_Count rcount, const MPI_Count rcounts[],
                               const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm, int is_v);
int hashi_coll_inter_alltoall(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                              const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype stype,
                              const MPI_Datatype stypes[], void *recvbuf, MPI_Count rcount, const MPI_Count rcounts[],
                              const MPI_Aint rdispls[], MPI_Datatype rtype, const MPI_Datatype rtypes[],
                              MPI_Comm comm, int is_v, int is_w);
int hashi_coll_inter_gather(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                            MPI_Datatype stype, void *recvbuf, MPI_Count rcount, const MPI_Count rcounts[],
                            const MPI_Aint displs[], MPI_Datatype rtype, int root, MPI_Comm comm, int is_v);
int hashi_coll_inter_scatter(const struct hashi_coll_call *call, const void *sendbuf, MPI_Count scount,
                             const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype stype, void *recvbuf,
                             MPI_Count rcount, MPI_Datatype rtype, int root, MPI_Comm comm, int is_v);
/* counts: the local group's blocks (every member's, copied by the caller). */
int hashi_coll_inter_reduce_scatter(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf,
                                    const MPI_Count counts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm);

#endif
