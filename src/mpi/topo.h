/*
 * Process topologies (Cartesian, graph, distributed graph) cached on a
 * communicator as comm->topology (docs/topologies.md). The topology belongs
 * to the communicator: MPI_Comm_dup copies it, the communicator's last
 * release frees it.
 */
#ifndef HASHI_MPI_TOPO_H
#define HASHI_MPI_TOPO_H

#include "mpi/mpi_impl.h"

/* The neighbours of a communicator with a topology, in the order the standard
 * gives for neighbourhood collectives (Cartesian: for each dimension, the -1
 * then the +1 neighbour, MPI_PROC_NULL at non-periodic borders; graph: the
 * adjacency list; dist graph: sources and destinations as given). Returns
 * MPI_SUCCESS, or MPI_ERR_TOPOLOGY when the communicator has none. The arrays
 * belong to the communicator. */
int hashi_topo_neighbors(struct MPI_ABI_Comm *comm, int *indegree, const int **sources,
                         int *outdegree, const int **destinations);

/* A copy of a topology for a duplicated communicator (NULL in, NULL out);
 * NULL with *err = MPI_ERR_NO_MEM when out of memory. */
void *hashi_topo_dup(const void *topology, int *err);
/* Free a communicator's topology (NULL is fine). */
void hashi_topo_free(void *topology);

#endif
