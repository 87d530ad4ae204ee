/*
 * Point-to-point inside the library (collectives, communicator creation):
 * the same path as MPI_Isend / MPI_Irecv, without argument checks or the
 * error handler, on a communicator object and a context id the caller picks
 * (each communicator has a second context id for internal traffic, so library
 * messages never match user receives). These return MPI_SUCCESS or an error
 * class; raising it (with a message naming the MPI call) is the caller's job.
 *
 * Also here: the progress engine every waiting loop of the library uses.
 */
#ifndef HASHI_MPI_P2P_H
#define HASHI_MPI_P2P_H

#include <mpi.h>
#include "mpi/request.h"

struct MPI_ABI_Comm;

/*
 * Tags on a communicator's internal context (hashi_comm_coll_context()): user
 * tags never reach it, so its whole 23-bit tag space belongs to the library.
 * Collectives keep to HASHI_TAG_COLL_FIRST .. HASHI_TAG_COLL_LAST; the
 * communicator layer owns the top (HASHI_TAG_COMM_FIRST .. in mpi/comm.h).
 * The point-to-point layer sends nothing of its own (MPI_Finalize's barrier
 * is the communicator layer's hashi_comm_barrier).
 */
#define HASHI_TAG_COLL_FIRST 0
#define HASHI_TAG_COLL_LAST  0x7ffeff

int hashi_isend_internal(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                         struct MPI_ABI_Comm *comm, uint32_t context_id, struct MPI_ABI_Request **req);
int hashi_irecv_internal(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                         struct MPI_ABI_Comm *comm, uint32_t context_id, struct MPI_ABI_Request **req);
/* A standard send completed in the call where the device can (send_now:
 * small contiguous data; *req NULL), else started as hashi_isend_internal. */
int hashi_isend_now_internal(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                             struct MPI_ABI_Comm *comm, uint32_t context_id, struct MPI_ABI_Request **req);
/* Any send mode (synchronous sends for protocols that need the match). */
int hashi_isend_mode_internal(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                              struct MPI_ABI_Comm *comm, uint32_t context_id, enum hashi_send_mode mode,
                              struct MPI_ABI_Request **req);
/* Wait for one request and free it; MPI_SUCCESS or the request's error. */
int hashi_wait_internal(struct MPI_ABI_Request *req, MPI_Status *status);
/* Wait for n requests (NULL entries are skipped) and free them; the first error. */
int hashi_waitall_internal(int n, struct MPI_ABI_Request **reqs);

/* Drive progress until req completes, spinning or sleeping as the node allows. */
void hashi_progress_wait(struct MPI_ABI_Request *req);
/* Drive progress until done(arg) is true (a predicate over any state that
 * progress changes: several requests, a probe, a counter). done is never
 * called again once it returned true, so it may consume what it found. */
void hashi_progress_wait_until(int (*done)(void *arg), void *arg);
/* One round of progress on the device and every registered engine; returns
 * how many operations completed (0: nothing happened). */
int hashi_progress_poll(void);
/*
 * Engines that advance by polling (collective schedules) register here; every
 * progress round calls them after the device. Returns 0, or -1 when the table
 * is full. A hook returns how many operations it completed.
 */
int hashi_progress_register(int (*hook)(void));
void hashi_progress_unregister(int (*hook)(void));

/* The largest tag the device carries (the MPI_TAG_UB attribute's value). */
int hashi_p2p_tag_ub(void);

/* Called by the communicator code before a communicator object is destroyed:
 * detaches (after flushing) a buffer attached with MPI_Comm_attach_buffer. */
void hashi_p2p_comm_destroyed(struct MPI_ABI_Comm *comm);
void hashi_p2p_session_finalized(const struct MPI_ABI_Session *session);   /* its buffer goes */

#endif
