/*
 * Collective schedules: every collective algorithm is written once, as a
 * schedule of steps that the progress engine runs. A blocking collective is
 * build + start + wait, a nonblocking one build + start (the request goes to
 * the user), a persistent one (MPI_X_init) builds once and replays the same
 * schedule at every MPI_Start.
 *
 * Steps run in *rounds*: every step added between two hashi_sched_fence()
 * calls starts together; the next round starts once all steps of the
 * current one have completed. Sends and receives of a round are posted in the
 * order they were added, so two messages between the same pair in one
 * schedule keep their order (non-overtaking). Within a round, steps start
 * in the order they were added and a local step (reduce, copy, callback) has
 * finished before the next step starts: a round may reduce the data the
 * previous round received and then send the result.
 *
 * Messages travel on the communicator's internal context
 * (hashi_comm_coll_context) with one tag per schedule, taken from the
 * communicator's collective sequence when the schedule is created: every
 * rank creates the schedules of a communicator in the same order (the
 * standard requires collectives to be called in the same order), so the tags
 * agree, and concurrent nonblocking collectives never match each other's
 * messages.
 *
 * Buffers named in steps must stay valid while the schedule lives: the
 * user's buffers, or scratch space from hashi_sched_scratch() (freed with
 * the schedule). A persistent schedule re-runs its steps unchanged; steps
 * whose arguments depend on data only known when running are callbacks.
 *
 * Errors: builders return MPI_SUCCESS or MPI_ERR_NO_MEM / MPI_ERR_INTERN;
 * a failing step fails the request (status.MPI_ERROR) and the remaining
 * rounds are skipped.
 */
#ifndef HASHI_MPI_COLL_SCHED_H
#define HASHI_MPI_COLL_SCHED_H

#include <mpi.h>
#include <stddef.h>

#include "mpi/mpi_impl.h"
#include "mpi/request.h"

struct hashi_sched;

/* A new, empty schedule for one collective on comm (takes the next tag of
 * comm's collective sequence). NULL when out of memory. */
struct hashi_sched *hashi_sched_create(struct MPI_ABI_Comm *comm);
/* Free a schedule that was never turned into a request (a builder failed). */
void hashi_sched_destroy(struct hashi_sched *s);

/* Point-to-point steps (ranks are ranks in the schedule's communicator;
 * MPI_PROC_NULL is a no-op step). */
int hashi_sched_send(struct hashi_sched *s, const void *buf, MPI_Count count, MPI_Datatype type, int dest);
int hashi_sched_recv(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int source);

/* Local steps, run when their round starts. */
/* inout[i] = in[i] op inout[i] (the standard's order: in is the left operand). */
int hashi_sched_reduce(struct hashi_sched *s, const void *in, void *inout, MPI_Count count, MPI_Datatype type,
                       MPI_Op op);
/* Copy (pack/unpack through the datatype engine when types differ). */
int hashi_sched_copy(struct hashi_sched *s, const void *src, MPI_Count scount, MPI_Datatype stype, void *dst,
                     MPI_Count dcount, MPI_Datatype dtype);
/* Run fn(s, arg) when the round starts; it returns MPI_SUCCESS or an error
 * class. It may not add steps. */
int hashi_sched_callback(struct hashi_sched *s, int (*fn)(struct hashi_sched *s, void *arg), void *arg);

/* Run `sub`, a schedule built on another communicator (a node-local or
 * leaders' sub-communicator: its own context and tag), as a step: it starts
 * with its round, and the round completes when sub has finished; its error
 * fails this schedule. This schedule owns sub from now on (destroyed with
 * it, also when adding the step fails); persistent replays rerun it. */
int hashi_sched_sub(struct hashi_sched *s, struct hashi_sched *sub);

/*
 * Offer the collective `args` describes to the device as one step, a
 * *device operation* (device.h, op_init): MPI_SUCCESS when the device took
 * it (the step starts with its round and completes when the device says
 * so; a persistent replay starts it again), HASHI_DEVICE_COLL_DECLINE when
 * it did not (nothing added: build the generic algorithm), or an error.
 * Callers offer it only on grounds every member shares (select.c), as for
 * the blocking entries, and put it in a round of its own.
 */
struct hashi_device_coll_args;
int hashi_sched_device(struct hashi_sched *s, const struct hashi_device_coll_args *args);
/* The steps added so far, and dropping those added after such a mark (the
 * packing around a device operation the device then declined). */
int hashi_sched_mark(const struct hashi_sched *s);
void hashi_sched_rollback(struct hashi_sched *s, int mark);

/* End the current round. */
int hashi_sched_fence(struct hashi_sched *s);

/* bytes of scratch memory owned by the schedule (aligned for any type);
 * NULL when out of memory. */
void *hashi_sched_scratch(struct hashi_sched *s, size_t bytes);
/* MPI_Finalize: free the destroyed schedules and scratch blocks kept for reuse. */
void hashi_sched_release_memory(void);

/*
 * Turn a built schedule into a request of kind HASHI_REQ_COLL (the schedule
 * belongs to the request from then on, even on failure).
 *   persistent = 0: the schedule starts now; the request completes when its
 *                   last round has.
 *   persistent = 1: an inactive persistent request; MPI_Start runs the
 *                   schedule from its first round.
 */
int hashi_sched_to_request(struct hashi_sched *s, int persistent, struct MPI_ABI_Request **req);

/* Blocking form: start, wait, free. Returns MPI_SUCCESS or the error class. */
int hashi_sched_run(struct hashi_sched *s);

/* The next tag of comm's collective sequence, for library protocols that do
 * not use a schedule (nonblocking communicator creation): every rank takes
 * tags of a communicator in the same order. */
int hashi_coll_next_tag(struct MPI_ABI_Comm *comm);

#endif
