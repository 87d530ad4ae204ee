/*
 * Point-to-point inside the library (collectives, communicator creation):
 * the same path as MPI_Isend / MPI_Irecv, without argument checks or the
 * error handler, on a communicator object and a context id the caller picks
 * (each communicator has a second context id for internal traffic, so library
 * messages never match user receives).
 */
#ifndef HASHI_MPI_P2P_H
#define HASHI_MPI_P2P_H

#include <mpi.h>
#include "mpi/request.h"

struct MPI_ABI_Comm;

int hashi_isend_internal(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                         struct MPI_ABI_Comm *comm, uint32_t context_id, struct MPI_ABI_Request **req);
int hashi_irecv_internal(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                         struct MPI_ABI_Comm *comm, uint32_t context_id, struct MPI_ABI_Request **req);
/* Wait for one request and free it; MPI_SUCCESS or the request's error. */
int hashi_wait_internal(struct MPI_ABI_Request *req, MPI_Status *status);
int hashi_waitall_internal(int n, struct MPI_ABI_Request **reqs);

/* Drive progress until req completes, spinning or sleeping as the node allows. */
void hashi_progress_wait(struct MPI_ABI_Request *req);
/* One round of progress on every device and pending schedule. */
int hashi_progress_poll(void);

#endif
