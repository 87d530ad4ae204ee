/*
 * Rabenseifner's reduce-scatter + gather / allgather family (commutative ops):
 * MPI_Reduce and MPI_Allreduce on long vectors, MPI_Reduce_scatter(_block)
 * by recursive halving. rabenseifner.c has the common plan.
 */
#ifndef HASHI_MPI_COLL_RABENSEIFNER_H
#define HASHI_MPI_COLL_RABENSEIFNER_H

#include "mpi/coll/coll.h"

/* Reduce: reduce-scatter by recursive halving, binomial gather to the root.
 * Needs count >= the largest power of two <= the communicator size. */
int hashi_coll_build_rabenseifner(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                                  MPI_Datatype type, MPI_Op op, int root, struct MPI_ABI_Comm *c);
/* Allreduce: reduce-scatter by recursive halving, allgather by recursive
 * doubling. */
int hashi_coll_build_allreduce_rabenseifner(struct hashi_sched *s, const void *sendbuf, void *recvbuf,
                                            MPI_Count count, MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c);
/* Reduce_scatter: recursive halving over blocks of counts[] (any counts). */
int hashi_coll_build_reduce_scatter_halving(struct hashi_sched *s, const void *sendbuf, void *recvbuf,
                                            const MPI_Count counts[], MPI_Datatype type, MPI_Op op,
                                            struct MPI_ABI_Comm *c);

#endif
