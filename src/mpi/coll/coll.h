/*
 * Shared by the collective calls (the .c files of src/mpi/coll): argument checks that
 * raise on the call's communicator with a message naming the call, the one
 * place a built schedule becomes a blocking run, a request or a persistent
 * request, buffers for typed scratch data, the schedule builders (each
 * algorithm written once) and the algorithm choice (select.c).
 */
#ifndef HASHI_MPI_COLL_COLL_H
#define HASHI_MPI_COLL_COLL_H

#include <mpi.h>
#include <stddef.h>

#include "mpi/coll/op.h"
#include "mpi/coll/sched.h"
#include "mpi/datatype.h"
#include "mpi/mpi_impl.h"

/* How a collective call runs its schedule. */
enum hashi_coll_mode {
    HASHI_COLL_BLOCKING,     /* MPI_X: start + wait */
    HASHI_COLL_NONBLOCKING,  /* MPI_IX: start, the request goes to the program */
    HASHI_COLL_PERSISTENT,   /* MPI_X_init: an inactive request that replays the schedule */
};

/*
 * One call: its MPI name (for messages) and how it returns. Every collective
 * is one function taking this; the six entry points of a collective (X, IX,
 * X_init and their _c forms) are thin wrappers around it.
 */
struct hashi_coll_call {
    const char *func;
    enum hashi_coll_mode mode;
    MPI_Request *request;     /* nonblocking / persistent: where the request goes */
};

#define HASHI_COLL_CALL_BLOCKING(name) (&(struct hashi_coll_call){ (name), HASHI_COLL_BLOCKING, NULL })
#define HASHI_COLL_CALL_NONBLOCKING(name, req) (&(struct hashi_coll_call){ (name), HASHI_COLL_NONBLOCKING, (req) })
#define HASHI_COLL_CALL_PERSISTENT(name, req) (&(struct hashi_coll_call){ (name), HASHI_COLL_PERSISTENT, (req) })

/* ---- argument checks: MPI_SUCCESS or the raised error's code ---- */

/* The start of every collective call: MPI initialized, a valid communicator
 * (its object, or NULL after raising the error), the request pointer of the
 * nonblocking and persistent forms. */
struct MPI_ABI_Comm *hashi_coll_call_comm(const struct hashi_coll_call *call, MPI_Comm comm, int *rc);
/* The start of a call on one vector (Bcast, the reductions, scans):
 * hashi_coll_call_comm, then count >= 0 and a committed datatype (*t). */
struct MPI_ABI_Comm *hashi_coll_call_vector(const struct hashi_coll_call *call, MPI_Comm comm, MPI_Count count,
                                            MPI_Datatype type, struct MPI_ABI_Datatype **t, int *rc);
/* A count argument (named `what` in the message). */
int hashi_coll_check_count(const char *func, MPI_Comm comm, MPI_Count count, const char *what);
/* A committed datatype, or NULL after raising MPI_ERR_TYPE. */
struct MPI_ABI_Datatype *hashi_coll_check_type(const char *func, MPI_Comm comm, MPI_Datatype type,
                                               const char *what, int *rc);
/* A buffer of count elements of t: NULL only for MPI_BOTTOM-style types,
 * MPI_IN_PLACE only where the caller allows it (it checks that itself). */
int hashi_coll_check_buffer(const char *func, MPI_Comm comm, const void *buf, MPI_Count count,
                            const struct MPI_ABI_Datatype *t, const char *what);
int hashi_coll_check_root(const char *func, MPI_Comm comm, const struct MPI_ABI_Comm *c, int root);
/* An op usable in a collective on this datatype (MPI_ERR_OP naming both). */
int hashi_coll_check_op(const char *func, MPI_Comm comm, MPI_Op op, MPI_Datatype type);
/* The same buffer passed as send and receive buffer (MPI_ERR_BUFFER: that is
 * what MPI_IN_PLACE is for). */
int hashi_coll_check_alias(const struct hashi_coll_call *call, MPI_Comm comm, const void *sendbuf,
                           const void *recvbuf, size_t send_bytes);
/* The buffers of a reduction (Allreduce, Scan, Reduce_scatter, Reduce at the
 * root): recvbuf neither MPI_IN_PLACE nor sendbuf, sendbuf (unless
 * MPI_IN_PLACE) valid for send_count and recvbuf for recv_count elements. */
int hashi_coll_check_reduction_buffers(const struct hashi_coll_call *call, MPI_Comm comm, const void *sendbuf,
                                       MPI_Count send_count, const void *recvbuf, MPI_Count recv_count,
                                       const struct MPI_ABI_Datatype *t);

/* The checks of Allreduce and Scan/Exscan: hashi_coll_call_vector, the op,
 * and the reduction buffers of count elements. */
struct MPI_ABI_Comm *hashi_coll_call_allreduce(const struct hashi_coll_call *call, MPI_Comm comm,
                                               const void *sendbuf, const void *recvbuf, MPI_Count count,
                                               MPI_Datatype type, MPI_Op op, struct MPI_ABI_Datatype **t, int *rc);

/*
 * The end of every collective call: build_rc is what the builder returned on
 * s (s NULL: hashi_sched_create failed). Runs the schedule (blocking), or
 * makes *call->request from it; raises any failure on comm. Always consumes s.
 */
int hashi_coll_call_finish(const struct hashi_coll_call *call, MPI_Comm comm, struct hashi_sched *s,
                           int build_rc);

/* Copy typed data now (what a copy step does): MPI_ERR_TRUNCATE when the
 * destination holds fewer bytes than the source. */
int hashi_coll_copy(const void *src, MPI_Count scount, MPI_Datatype stype, void *dst, MPI_Count dcount,
                    MPI_Datatype dtype);

/* Schedule-owned room for count elements of t, as a buffer pointer to use
 * with (count, t) (it accounts for t's lower bound). NULL when out of memory. */
void *hashi_coll_tmpbuf(struct hashi_sched *s, MPI_Count count, const struct MPI_ABI_Datatype *t);

/*
 * A partial result being built in a schedule (trees, recursive doubling,
 * scans): where it is, whether that buffer may be written (the program's
 * send buffer may not), and a writable spare of the same shape. Builders
 * decide at build time which buffer holds what, so a non-commutative
 * combination costs no copy: acc op received lands in the receive buffer,
 * which becomes the accumulator.
 */
struct hashi_coll_acc {
    void *buf;
    int writable;
    void *spare;                    /* writable, or NULL */
    MPI_Count count;
    MPI_Datatype type;
    const struct MPI_ABI_Datatype *t;
    MPI_Op op;
    int commutative;
};
void hashi_coll_acc_init(struct hashi_coll_acc *acc, const void *buf, int writable, MPI_Count count,
                         MPI_Datatype type, MPI_Op op);
/* A writable buffer to receive a peer's partial result into. */
void *hashi_coll_acc_recvbuf(struct hashi_sched *s, struct hashi_coll_acc *acc);
/* Add the step that combines a received partial result (in `other`, from
 * acc_recvbuf) with the accumulator: other op acc when the other's ranks come
 * first (other_is_left), else acc op other. Afterwards acc->buf holds the
 * result; the reduce runs before any later step of the same round. */
int hashi_coll_acc_combine(struct hashi_sched *s, struct hashi_coll_acc *acc, void *other, int other_is_left);

/* The address of element i of a buffer of t. */
static inline void *hashi_coll_elem(const void *buf, MPI_Count i, const struct MPI_ABI_Datatype *t)
{
    return (char *)buf + i * hashi_type_extent(t);
}

/* ---- algorithm choice (select.c), from the parameters HASHI_COLL_* ---- */

enum hashi_coll_alg {
    HASHI_ALG_AUTO,
    HASHI_ALG_BINOMIAL,            /* bcast, reduce */
    HASHI_ALG_SCATTER_ALLGATHER,   /* bcast (van de Geijn) */
    HASHI_ALG_PIPELINE,            /* bcast (segments down a k-ary tree) */
    HASHI_ALG_RABENSEIFNER,        /* reduce, allreduce */
    HASHI_ALG_RECURSIVE_DOUBLING,  /* allreduce, scan */
    HASHI_ALG_RING,                /* allreduce */
    HASHI_ALG_RECURSIVE_HALVING,   /* reduce_scatter */
    HASHI_ALG_PAIRWISE,            /* reduce_scatter */
    HASHI_ALG_REDUCE_SCATTERV,     /* reduce_scatter: reduce to rank 0, then scatter */
    HASHI_ALG_DISSEMINATION,       /* barrier */
    HASHI_ALG_HIER,                /* barrier, bcast, reduce, allreduce, allgather, gather, scatter:
                                      node-aware (hier.c) */
    HASHI_ALG_FLAT,                /* allgather: one of its flat algorithms (coll_data.h) is named */
};

enum hashi_alg_choice_for {
    HASHI_CHOOSE_BCAST, HASHI_CHOOSE_REDUCE, HASHI_CHOOSE_ALLREDUCE, HASHI_CHOOSE_REDUCE_SCATTER,
    HASHI_CHOOSE_BARRIER, HASHI_CHOOSE_ALLGATHER, HASHI_CHOOSE_GATHER, HASHI_CHOOSE_SCATTER,
    HASHI_CHOOSE_KINDS
};

/* HASHI_COLL_BCAST_SEGMENT / _FANOUT in range: 0, else -1 and err says
 * which (MPI_Init fails with it). */
int hashi_coll_bcast_params_check(char *err, size_t errlen);

/* The algorithm for a collective of `bytes` bytes (the whole vector) and
 * `count` elements on comm, with an op that is or is not commutative. Every
 * rank gets the same answer (its inputs are the same everywhere). */
enum hashi_coll_alg hashi_coll_select(enum hashi_alg_choice_for coll, const struct MPI_ABI_Comm *c,
                                      size_t bytes, MPI_Count count, int commutative);

/* Whether a blocking allreduce (else reduce) of `bytes` may go to the
 * device: up to the device's max_bytes always (its slots beat every
 * schedule); from HASHI_COLL_DEVICE_READ_MIN, both, where no hint or
 * parameter names an algorithm and the schedule would be recursive doubling
 * or the tree (the device's reductions are one step from every member to
 * every reader, which the larger-vector algorithms beat), and an allreduce
 * of 2 members at every size (both read the other's vector: one exchange
 * where Rabenseifner takes two). */
int hashi_coll_device_reduction_ok(const struct MPI_ABI_Comm *c, int allreduce, size_t bytes, MPI_Count count,
                                   int commutative);

/* The device's reduction of `kind` (device.h: HASHI_DEVICE_OP_ALLREDUCE,
 * _REDUCE with root, _SCAN, _EXSCAN, _REDUCE_SCATTER_BLOCK with count the
 * elements of one block) for a checked call, offered on shared grounds by
 * the caller: the device's result, or HASHI_DEVICE_COLL_DECLINE
 * (allreduce.c). */
int hashi_coll_device_reduction(int kind, const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                                MPI_Op op, int root, const struct MPI_ABI_Datatype *t, struct MPI_ABI_Comm *c);

/* The same as a step of a nonblocking or persistent schedule (up to the
 * device's max_bytes, with the packing it needs): MPI_SUCCESS, an error, or
 * HASHI_DEVICE_COLL_DECLINE with nothing added (allreduce.c). */
int hashi_coll_device_reduction_step(struct hashi_sched *s, int kind, const void *sendbuf, void *recvbuf,
                                     MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
                                     const struct MPI_ABI_Datatype *t, struct MPI_ABI_Comm *c);

/* ---- node-aware two-level algorithms (hier.c) ---- */

/*
 * A communicator's node layout (its coll_state), learnt once by the first
 * blocking collective that wants it, freed with the communicator. Flat (no
 * two_level) for communicators on one node, with one member per node, and
 * for the sub-communicators themselves.
 */
struct hashi_coll_hier {
    int two_level;
    int in_order;                  /* every node's members are consecutive ranks: node order is rank order */
    int nodes;
    int *node_first, *node_size;   /* by node: its lowest parent rank, its members */
    int *node_of;                  /* parent rank -> its node = its leader's rank in `leaders` */
    int *local_rank_of;            /* parent rank -> its rank in its node's `local` */
    struct MPI_ABI_Comm *local;    /* my node's members, in parent rank order */
    struct MPI_ABI_Comm *leaders;  /* the lowest rank of each node, in node order; NULL unless I am one */
};

/* The layout of c, set up on first use without communication; NULL when
 * the set-up failed (*rc: the error, raised on c naming func). */
struct hashi_coll_hier *hashi_coll_hier_layout(struct MPI_ABI_Comm *c, const char *func, int *rc);
/* Release c's layout (hashi_comm_release, MPI_Finalize for the predefined ones). */
void hashi_coll_comm_free(struct MPI_ABI_Comm *c);

/* select.c: the layout to run `coll` on two levels with, or NULL for the
 * flat algorithms (*rc MPI_SUCCESS) or a failed set-up (*rc the error). */
struct hashi_coll_hier *hashi_coll_hier_select(enum hashi_alg_choice_for coll, struct MPI_ABI_Comm *c,
                                               const char *func, size_t bytes, int commutative, int *rc);

/* 1 when the two-level algorithm is asked for explicitly (the collective's
 * hint or parameter says hier, or HASHI_COLL_HIER / hashi_coll_hier on):
 * then it goes before a device's own collective. */
int hashi_coll_hier_forced(enum hashi_alg_choice_for coll, const struct MPI_ABI_Comm *c);
/* Gather / Scatter blocks of block_bytes may run on two levels (select.c). */
int hashi_coll_hier_rooted_fits(enum hashi_alg_choice_for coll, const struct MPI_ABI_Comm *c, size_t block_bytes);

/*
 * The two-level algorithms. s NULL: a blocking call, run now (each phase
 * through the collective's entry on the sub-communicator, so the device's
 * node collectives serve the node-local phases); else added to s as
 * sub-schedule steps. HASHI_COLL_FLAT when the selection keeps the flat
 * algorithms; else MPI_SUCCESS or an error class.
 */
#define HASHI_COLL_FLAT (-1)
int hashi_coll_hier_barrier(struct hashi_sched *s, struct MPI_ABI_Comm *c);
int hashi_coll_hier_bcast(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                          struct MPI_ABI_Comm *c);
int hashi_coll_hier_reduce(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype type, MPI_Op op, int root, struct MPI_ABI_Comm *c);
int hashi_coll_hier_allreduce(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                              MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c);
int hashi_coll_hier_allgather(struct hashi_sched *s, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                              void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, struct MPI_ABI_Comm *c);
int hashi_coll_hier_gather(struct hashi_sched *s, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                           void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, int root, struct MPI_ABI_Comm *c);
int hashi_coll_hier_scatter(struct hashi_sched *s, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                            void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, int root, struct MPI_ABI_Comm *c);
/* The counters of two-level runs as MPI_T performance variables (MPI_Init). */
void hashi_coll_hier_pvars_register(void);

/* ---- schedule builders (one per algorithm family; no argument checks) ---- */

int hashi_coll_build_barrier(struct hashi_sched *s, struct MPI_ABI_Comm *c);
int hashi_coll_build_bcast(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                           struct MPI_ABI_Comm *c);
/* sendbuf may be MPI_IN_PLACE at the root. */
int hashi_coll_build_reduce(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype type, MPI_Op op, int root, struct MPI_ABI_Comm *c);
/* sendbuf may be MPI_IN_PLACE. */
int hashi_coll_build_allreduce(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                               MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c);
/* counts[i] elements for rank i (copied by the builder). */
int hashi_coll_build_reduce_scatter(struct hashi_sched *s, const void *sendbuf, void *recvbuf,
                                    const MPI_Count counts[], MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c);
int hashi_coll_build_scan(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype type, MPI_Op op, int exclusive, struct MPI_ABI_Comm *c);

#endif
