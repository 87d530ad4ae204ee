/*
 * The device interface: one table of operations, chosen once at MPI_Init from
 * HASHI_DEVICE. A device is a protocol (ofi, dimmnet, maestro, bds, dcfa); the
 * seed devices run on a transport (emu, fabric) underneath.
 *
 * Shapes. The MPI layer always talks to a device through the MTL-shaped
 * point-to-point table below (isend/irecv/probe/cancel, matching done by the
 * device). A device that matches by itself (ofi tagged, Maestro's engine) fills
 * it directly. A BTL-shaped device (DIMMnet: inline sends, buffered sends,
 * RDMA put/get) instead fills the active-message table of
 * device/common/am.h and takes the shared matching core's point-to-point table
 * (hashi_am_p2p_ops), which runs the eager / rendezvous / synchronous protocols
 * over it. Collective and RMA entry points are optional: NULL means the generic
 * algorithm of src/mpi/coll runs on the device's point-to-point.
 *
 * Addressing. Peers are named by their rank in MPI_COMM_WORLD (dest_world);
 * envelopes carry the sender's rank *in the communicator* and the communicator's
 * context id, so status.MPI_SOURCE needs no translation on the receive side.
 */
#ifndef HASHI_DEVICE_H
#define HASHI_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "runtime/export.h"

struct MPI_ABI_Request;
struct hashi_message;      /* a message matched by Mprobe, owned by the device */

/* What a receive or probe matches: wildcards are MPI_ANY_SOURCE / MPI_ANY_TAG. */
struct hashi_match {
    uint32_t context_id;
    int source;             /* rank in the communicator, or MPI_ANY_SOURCE */
    int tag;                /* or MPI_ANY_TAG */
};

/* What a probe learns about a pending message. */
struct hashi_envelope {
    int source;             /* rank in the communicator */
    int tag;
    uint64_t bytes;
};

/*
 * Conventions for every entry point below:
 * - They return MPI_SUCCESS, or an MPI error class (MPI_ERR_TAG, MPI_ERR_RANK,
 *   MPI_ERR_NO_MEM, MPI_ERR_OTHER ...) when the operation could not start; then
 *   the request is not completed and the caller raises the error.
 * - A request may complete inside the call that started it (an eager send, a
 *   receive whose message is already there): hashi_request_complete() runs
 *   before isend / irecv returns.
 * - Completion always fills req->status: MPI_ERROR, and for receives
 *   MPI_SOURCE (rank in the communicator), MPI_TAG, the byte count
 *   (hashi_status_set_bytes) and the cancelled flag.
 * - The device never loses an operation: when its queues are full it keeps the
 *   operation and posts it from progress().
 * - After making a message visible to a peer on this node, a device calls
 *   hashi_wake_peer(dest_world) (runtime/wake.h).
 */
#define HASHI_DEVICE_P2P_DECLINE (-1)
struct hashi_device_p2p_ops {
    /*
     * Start a send of req->dev_bytes contiguous bytes at req->dev_buf to
     * req->dest_world, envelope (req->context_id, req->my_comm_rank, req->tag),
     * mode req->send_mode (standard, synchronous, ready). The device completes
     * the request with hashi_request_complete() when the buffer may be reused
     * (synchronous: after the receiver matched). Standard sends up to the
     * device's eager limit complete without the receiver's help.
     */
    int (*isend)(struct MPI_ABI_Request *req);
    /*
     * Post a receive of at most req->dev_bytes into req->dev_buf matching
     * req->match (req->dest_world: the source's world rank, -1 for
     * MPI_ANY_SOURCE). On completion the device sets status source, tag and byte
     * count (hashi_status_set_bytes: the bytes written) and MPI_ERR_TRUNCATE
     * in MPI_ERROR if the message was longer (never writing past dev_bytes).
     */
    int (*irecv)(struct MPI_ABI_Request *req);
    /* Nonblocking probe; *flag = 1 and env filled if a matching message is
     * there (env->bytes: the whole message). Drives progress itself. */
    int (*iprobe)(const struct hashi_match *m, int *flag, struct hashi_envelope *env);
    /* Matched probe: the message is removed from matching and returned in *msg. */
    int (*improbe)(const struct hashi_match *m, int *flag, struct hashi_envelope *env,
                   struct hashi_message **msg);
    /* Receive a message returned by improbe into req (dev_buf, dev_bytes). */
    int (*imrecv)(struct MPI_ABI_Request *req, struct hashi_message *msg);
    /*
     * Cancel a posted receive. Returns 1 if it was cancelled: the request is
     * then complete, with the cancelled flag set. Returns 0 if it had already
     * matched: it completes normally (possibly later); or if only the peer
     * can tell (DIMMnet's announcements over fabric): it completes later,
     * cancelled or normally, without the caller waiting for the peer here.
     */
    int (*cancel_recv)(struct MPI_ABI_Request *req);
    /*
     * Cancel a send (NULL if the device cannot). req is incomplete: still
     * under way, or completed already (an eager send, once its copy was
     * out) and reopened by the MPI layer, which then holds an operation
     * reference again. The device asks the receiver if it can and completes
     * req once more (on_complete is cleared) when it knows: with the
     * cancelled flag if the message was withdrawn before any receive
     * matched it (the receiver will never see it), else normally, after
     * everything the send waited for anyway. The verdict may need the
     * receiver's progress. Returns 1 if it asked, 0 if not (a send it
     * cannot name or that matched from the start: req completes as it
     * would have).
     */
    int (*cancel_send)(struct MPI_ABI_Request *req);
    /*
     * Optional (NULL: not offered): a standard or ready mode send of `bytes`
     * contiguous bytes that is complete when the call returns, with no
     * request: the device sends it now or keeps a copy in its queue (the
     * blocking MPI_Send of a small message needs nothing else). Returns
     * MPI_SUCCESS, HASHI_DEVICE_P2P_DECLINE when it does not send such a
     * message this way (larger than its eager limit: the caller takes isend),
     * or an error class.
     */
    int (*send_now)(const void *buf, size_t bytes, int dest_world, int tag, uint32_t context_id,
                    int my_comm_rank);
    /*
     * Optional persistent point-to-point (all three or none; NULL: every
     * MPI_Start is an isend / irecv with nothing prepared). psend_init runs
     * once at MPI_Send_init / Ssend_init / Rsend_init, precv_init at
     * MPI_Recv_init, on a request filled as isend / irecv will see it
     * (dev_buf, dev_bytes, dest_world, envelope or match; never
     * MPI_PROC_NULL, never buffered mode). The device may prepare what does
     * not depend on the message's match (register dev_buf, which the user
     * keeps for the request's life) and keep it in req->dev_prepared; every
     * MPI_Start then calls isend / irecv as usual, which use it, so matching
     * and protocol choice stay per message (an ANY_SOURCE receive matches in
     * posting order with every other receive). MPI_SUCCESS (prepared, or
     * nothing worth preparing) or an error class, which fails the _init
     * call. pfree releases req->dev_prepared when the request is destroyed:
     * after MPI_Request_free and the completion of its last start.
     */
    int (*psend_init)(struct MPI_ABI_Request *req);
    int (*precv_init)(struct MPI_ABI_Request *req);
    void (*pfree)(struct MPI_ABI_Request *req);
    /*
     * Optional (NULL: nothing is held back): hand to the network what send_now
     * kept back to send a burst as one message (dimmnet over fabric,
     * docs/transport.md "Coalescing"). A blocking MPI_Send calls it after
     * send_now, so its message is on its way when it returns; an MPI_Isend's
     * waits for the next progress pass.
     */
    void (*send_flush)(void);
    /* Advance communication; returns how many events it handled (0: idle). */
    int (*progress)(void);
    /* The largest message the device sends eagerly (standard mode completes locally). */
    size_t eager_limit;
    /* The largest tag the device carries: the value of MPI_TAG_UB. Larger tags
     * get MPI_ERR_TAG. At least (1 << 23) - 1. */
    int tag_ub;
};

/*
 * Optional collectives a device runs itself (DIMMnet: barrier on LLCM flags;
 * Maestro: switch barrier; DCFA: offload to the host process). Each entry may
 * be NULL. The blocking collective calls them before the generic schedule:
 * MPI_SUCCESS means done, HASHI_DEVICE_COLL_DECLINE that the generic
 * algorithm should run (a communicator or size the device does not handle),
 * anything else is an MPI error class. Arguments are already checked; data
 * is contiguous bytes (the caller packs derived types or declines).
 * Every member must take the same branch: a device decides to decline only
 * from what is the same on all members (communicator, root, byte count, op,
 * datatype of a reduction), and a caller offers a call to the device only on
 * such grounds too (not on a rank's own buffer layout).
 */
#define HASHI_DEVICE_COLL_DECLINE (-1)
struct MPI_ABI_Comm;

/* One collective call offered to a device as an operation object (op_init
 * below). Only the fields of the kind are meaningful; bytes is the whole
 * message (bcast), vector (allreduce, reduce, scan, exscan) or one rank's
 * block (alltoall, allgather, gather, scatter, reduce_scatter_block, whose
 * count is then one block's elements). recvbuf is NULL where this member
 * receives nothing: a gather's non-roots, a scatter root's MPI_IN_PLACE,
 * an exscan's rank 0. The exchange kind is the blocking `exchange` entry's
 * sparse exchange (sends, recvs and tag as there; sendbuf, recvbuf and
 * bytes unused). */
enum hashi_device_coll_kind {
    HASHI_DEVICE_OP_BARRIER,
    HASHI_DEVICE_OP_BCAST,
    HASHI_DEVICE_OP_ALLREDUCE,
    HASHI_DEVICE_OP_REDUCE,
    HASHI_DEVICE_OP_ALLTOALL,
    HASHI_DEVICE_OP_ALLGATHER,
    HASHI_DEVICE_OP_GATHER,
    HASHI_DEVICE_OP_SCATTER,
    HASHI_DEVICE_OP_SCAN,
    HASHI_DEVICE_OP_EXSCAN,
    HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK,
    HASHI_DEVICE_OP_EXCHANGE,
};
struct hashi_device_block;
struct hashi_device_coll_args {
    enum hashi_device_coll_kind kind;
    struct MPI_ABI_Comm *comm;
    const void *sendbuf;
    void *recvbuf;        /* bcast: the buffer */
    size_t bytes;
    MPI_Count count;      /* reductions: count elements of the basic type `type` */
    MPI_Datatype type;
    MPI_Op op;
    int root;             /* bcast, reduce, gather, scatter */
    /* exchange: the blocks, which live (with what they point to) as long
     * as the operation object: a persistent request's every run moves the
     * same blocks, whose contents the program may change between runs. */
    const struct hashi_device_block *sends, *recvs;
    int nsends, nrecvs;
    int tag;              /* the schedule's tag (hashi_sched_device sets it) */
};
struct hashi_device_coll_op;   /* the device's */
/* One member's data for one peer in a sparse exchange (below). */
struct hashi_device_block {
    int peer;             /* rank in the communicator (may be the caller's own) */
    size_t bytes;         /* more than 0 */
    void *buf;            /* contiguous; read for a send, written for a receive */
};
struct hashi_device_coll_ops {
    int (*barrier)(struct MPI_ABI_Comm *comm);
    int (*bcast)(void *buf, size_t bytes, int root, struct MPI_ABI_Comm *comm);
    /* sendbuf is never MPI_IN_PLACE here (the caller copies first); a device
     * declines types or ops it has no kernel for. */
    int (*allreduce)(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                     struct MPI_ABI_Comm *comm);
    /* As allreduce, the result at root only (recvbuf is significant there
     * alone); at the root sendbuf may be recvbuf itself (MPI_IN_PLACE). */
    int (*reduce)(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
                  struct MPI_ABI_Comm *comm);
    /* bytes_per_rank contiguous bytes for each rank, in rank order, in both
     * buffers; sendbuf is never MPI_IN_PLACE (the caller copies first). */
    int (*alltoall)(const void *sendbuf, void *recvbuf, size_t bytes_per_rank, struct MPI_ABI_Comm *comm);
    /* bytes_per_rank contiguous bytes from this rank in sendbuf, every rank's
     * in rank order in recvbuf; sendbuf is never MPI_IN_PLACE. */
    int (*allgather)(const void *sendbuf, void *recvbuf, size_t bytes_per_rank, struct MPI_ABI_Comm *comm);
    /* bytes_per_rank contiguous bytes from every rank into root's recvbuf,
     * in rank order (recvbuf NULL elsewhere). At the root sendbuf may be
     * its own block in recvbuf (MPI_IN_PLACE): nothing to copy then. */
    int (*gather)(const void *sendbuf, void *recvbuf, size_t bytes_per_rank, int root, struct MPI_ABI_Comm *comm);
    /* The root's sendbuf holds bytes_per_rank bytes for each rank in rank
     * order (NULL elsewhere); every rank's block into its recvbuf, which is
     * NULL at a root passing MPI_IN_PLACE. */
    int (*scatter)(const void *sendbuf, void *recvbuf, size_t bytes_per_rank, int root, struct MPI_ABI_Comm *comm);
    /* Inclusive (exclusive: ranks below only) prefix reduction in rank
     * order, as allreduce's types and ops; exscan's rank 0 gets recvbuf
     * NULL and nothing is written. sendbuf is never MPI_IN_PLACE. */
    int (*scan)(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op, int exclusive,
                struct MPI_ABI_Comm *comm);
    /* sendbuf holds count elements for each rank in rank order; the
     * reduction (rank order) of every rank's block for us into recvbuf;
     * sendbuf is never MPI_IN_PLACE. */
    int (*reduce_scatter_block)(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                                struct MPI_ABI_Comm *comm);
    /*
     * A sparse exchange: the v and w forms (alltoallv / w, allgatherv,
     * gatherv, scatterv) and the neighbourhood collectives, whose counts
     * only each pair of members knows alike. This member sends sends[k] to
     * sends[k].peer and receives recvs[k] from recvs[k].peer: at most one
     * of each per peer (the caller concatenates several blocks for one
     * peer, in MPI's matching order), and a send to a peer is that peer's
     * receive from us, of the same length (MPI's equal type signatures);
     * a peer with nothing either way is not in the lists, on either side.
     * So a device chooses how to move each pair's data from its length,
     * which both ends know, and declines only on the communicator (every
     * member alike). A program whose lengths differ is erroneous: it may
     * get wrong data or an error, never a write past a receive's bytes.
     * Blocking; any size. `tag`, taken from the communicator's collective
     * sequence for this call, is the device's for messages of its own on
     * the communicator's internal context (hashi_isend_internal), e.g. for
     * pairs whose data suits neither its slots nor its reads.
     */
    int (*exchange)(const struct hashi_device_block *sends, int nsends, const struct hashi_device_block *recvs,
                    int nrecvs, struct MPI_ABI_Comm *comm, int tag);
    /* The most bytes (bcast: the message, allreduce and scans: the vector,
     * alltoall, gather, scatter, reduce_scatter_block: one rank's block) the
     * device carries in its own slots. Larger ones the
     * caller offers only where select.c allows (the device then reads the
     * members' buffers: hashi_coll_device_data_ok, _reduction_ok). A caller
     * packs non-contiguous data for whatever it offers, on every rank alike,
     * so that a rank's own layout never decides the path. */
    size_t max_bytes;
    /* Releases what the device keeps in comm->device_state (called as the
     * communicator goes, and for the predefined ones at MPI_Finalize). */
    void (*comm_free)(struct MPI_ABI_Comm *comm);

    /*
     * Nonblocking and persistent collectives (optional: all four or none).
     * The schedule engine runs them as one step, a *device operation*
     * (src/mpi/coll/sched.c): op_init makes the operation object for one
     * call when the device takes it (the same shared-ground rule as the
     * blocking entries: decline only on what every member sees alike, and
     * callers offer only so; data contiguous, at most max_bytes, sendbuf
     * never MPI_IN_PLACE nor recvbuf), HASHI_DEVICE_COLL_DECLINE, or an
     * error class. op_start begins one run (every run of a persistent
     * request, after the previous one completed); op_progress advances it
     * without waiting and sets *done once it has completed, returning
     * MPI_SUCCESS or the error class that failed it. op_free releases an
     * operation that is not running. Runs on one communicator follow the
     * order of their op_start, which is the communicator's collective order
     * (blocking calls included); they may complete in any order for the
     * program, and the device may have a run wait inside its own state
     * (never in op_start) for an earlier one.
     *
     * The exchange kind follows `exchange` above: offered on the
     * communicator alone (the caller packs strided blocks into staging
     * that lives with the schedule, so nothing about the layout reaches
     * the decision), with the schedule's tag for the device's own messages
     * (no other step of that schedule sends). A persistent one
     * (MPI_Alltoallv_init, MPI_Neighbor_alltoall_init, ...) is initialised
     * once with the same blocks for every run: the place where a device
     * may agree once on both sides' layouts of each pair (the BDS paper's
     * boundary tables: register the blocks, exchange their keys) so that
     * every run only moves data. DIMMnet does not yet: each run registers
     * what it offers (docs/dimmnet.md).
     */
    int (*op_init)(const struct hashi_device_coll_args *args, struct hashi_device_coll_op **op);
    int (*op_start)(struct hashi_device_coll_op *op);
    int (*op_progress)(struct hashi_device_coll_op *op, int *done);
    void (*op_free)(struct hashi_device_coll_op *op);
};

/*
 * Optional partitioned communication (MPI-4 MPI_Psend_init / MPI_Precv_init)
 * that a device runs itself: all entries or none (NULL: the generic path of
 * src/mpi/p2p/partitioned.c, one internal message per sender partition per
 * epoch, runs unchanged). The MPI layer keeps the argument checks, the
 * pairing and its one-time hello (sender -> receiver, at the sender's first
 * MPI_Start); the device moves the bytes. Both sides take the same path
 * because only one side decides:
 *   - send_offer (sender, first MPI_Start): the device offers to carry this
 *     request (*token, nonzero, rides on the hello) or declines
 *     (HASHI_DEVICE_P2P_DECLINE: no offer, the generic path);
 *   - recv_accept (receiver, once the hello with an offer is in): accept
 *     (MPI_SUCCESS, *dp) only if `acceptable` (the MPI layer's own
 *     conditions: same partition count and total, contiguous receive
 *     buffer) and the device can; else HASHI_DEVICE_P2P_DECLINE. Either way
 *     the device answers the sender;
 *   - send_answer (sender): 1 accepted, 0 declined (the caller frees dp and
 *     sends generically), -1 not known yet. No partition moves before it.
 * Data is part_bytes * partitions contiguous bytes at buf on both sides (a
 * sender packs non-contiguous data into its staging buffer before ready).
 * Per epoch: start on both sides (the receiver's allows the sender to write
 * this epoch into its buffer), ready(p) on the sender (the device keeps it
 * until allowed), arrived(p) on the receiver, and test until *done (the
 * receiver: every partition in; the sender: every partition's bytes gone),
 * which returns MPI_SUCCESS or the error class of the epoch. free releases
 * a request that is not in an epoch.
 */
struct hashi_device_part;   /* the device's state for one partitioned request */
struct hashi_device_part_ops {
    int (*send_offer)(int peer_world, const void *buf, size_t part_bytes, int partitions,
                      struct hashi_device_part **dp, uint64_t *token);
    int (*recv_accept)(int peer_world, uint64_t token, void *buf, size_t part_bytes, int partitions,
                       int acceptable, struct hashi_device_part **dp);
    int (*send_answer)(struct hashi_device_part *dp);
    int (*start)(struct hashi_device_part *dp);
    int (*ready)(struct hashi_device_part *dp, int partition);
    int (*arrived)(struct hashi_device_part *dp, int partition);
    int (*test)(struct hashi_device_part *dp, int *done);
    void (*free)(struct hashi_device_part *dp);
};

/*
 * Optional one-sided communication a device moves itself (all entries or
 * none; NULL: every operation is a request message of src/mpi/rma/move.c).
 * At window creation (MPI_Win_create, MPI_Win_allocate with some memory)
 * every member calls win_attach; the key travels with the allgather of
 * (base, size, disp_unit), and the window uses the device only if every
 * member attached (all agree: they see the same allgather). Then, per
 * target, the origin alone chooses: a contiguous run of a put or get to a
 * target for which reaches() is 1 goes through put / get, everything else
 * as messages. put / get start the transfer and call done(arg, status)
 * from a later progress() once it is complete at the target (the bytes
 * visible there, or here for a get) and the local buffer is free; status
 * is 0 or a negative errno (-EINVAL: outside the registration, which the
 * layer raises as MPI_ERR_RMA_RANGE; anything else MPI_ERR_OTHER);
 * the caller waits for that before any completion call (flush, unlock,
 * complete, fence) answers. No target code runs: the device writes into
 * the registered window memory. MPI_SUCCESS, or an error class when the
 * transfer could not start (then done is never called).
 */
#define HASHI_DEVICE_RMA_KEY_MAX 32
typedef void hashi_device_rma_done_fn(void *arg, int error);
struct hashi_device_win;   /* the device's registration of one window's memory */
/* One run of a vector put: len bytes at src to offset in the target's window. */
struct hashi_device_rma_piece {
    const void *src;
    size_t len;
    uint64_t offset;
};
#define HASHI_DEVICE_RMA_PUTV_MAX 1024
struct hashi_device_rma_ops {
    /* Register size (> 0) bytes at base; *key (at most
     * HASHI_DEVICE_RMA_KEY_MAX bytes) is what peers pass to put / get.
     * HASHI_DEVICE_P2P_DECLINE: not on this job (no peer the device
     * reaches directly); an error class otherwise. */
    int (*win_attach)(void *base, size_t size, struct hashi_device_win **dw, void *key);
    void (*win_detach)(struct hashi_device_win *dw);
    /* Whether put / get reach target_world (a member that attached). */
    int (*reaches)(int target_world);
    int (*put)(int target_world, const void *key, uint64_t offset, const void *src, size_t len,
               hashi_device_rma_done_fn *done, void *arg);
    int (*get)(int target_world, const void *key, uint64_t offset, void *dst, size_t len,
               hashi_device_rma_done_fn *done, void *arg);
    /*
     * Optional (NULL: the layer puts each run by itself): a vector PUSH,
     * n runs (1 .. HASHI_DEVICE_RMA_PUTV_MAX) to target's window in one
     * transfer (dimmnet on emu: one process_vm_writev), complete like a put
     * (done once for all). HASHI_DEVICE_P2P_DECLINE: not as one transfer to
     * that target now (then put each); otherwise as put.
     */
    int (*putv)(int target_world, const void *key, const struct hashi_device_rma_piece *pieces, int n,
                hashi_device_rma_done_fn *done, void *arg);
    /*
     * Optional (NULL: MPI_Win_lock is LOCK / UNLOCK messages): a
     * reader-writer lock per window in each member's device memory, taken
     * and released by remote atomics with no code at the target (docs/rma.md,
     * "LLCM locks"). lock_alloc: this member's lock for a new window of
     * `members` members (*ref is what origins pass), HASHI_DEVICE_P2P_DECLINE
     * when there is no room; the window uses the locks only if every member
     * got one and reaches() every member (the layer decides, all alike);
     * lock_free after MPI_Win_free's barrier. lock_try: one attempt
     * (*taken 1, or 0: held by others). lock_register (on 1), between a
     * failed attempt and the next: `member` (the caller's index in the
     * window) waits, so a release that admits it may wake it (*slot: the
     * registration); on 0 once it took the lock (*slot as registered). lock_release drops a hold. *wake (lock_try granting a
     * shared hold, lock_release): the world rank of the one waiter to wake
     * (the oldest registered that the lock now admits), or -1. Each returns
     * MPI_SUCCESS, or an error class when the words do not carry this job's
     * key.
     */
    int (*lock_alloc)(int members, uint64_t *ref);
    void (*lock_free)(int members, uint64_t ref);
    int (*lock_try)(int target_world, uint64_t ref, int members, int exclusive, int *taken, int *wake);
    int (*lock_register)(int target_world, uint64_t ref, int member, int exclusive, int on, uint64_t *slot);
    int (*lock_release)(int target_world, uint64_t ref, int members, int exclusive, int *wake);
};

struct hashi_device_ops {
    const char *name;
    const char *description;
    /* Transports the device can run on ("emu,fabric"), NULL if it chooses none. */
    const char *transports;
    /* Open local resources and publish this rank's address in the modex. */
    int (*init)(char *err, size_t errlen);
    /* After the modex exchange: reach every peer. */
    int (*connect)(char *err, size_t errlen);
    /* Release everything (after the finalize fence: no traffic is in flight). */
    void (*finalize)(void);
    /*
     * Optional (NULL: none), for a rank that sleeps while it waits
     * (runtime/wake.h): wait_fd, after init, is a file descriptor that
     * becomes readable when the device's provider has something for this
     * rank (a libfabric CQ's wait object), -1 if there is none; trywait, run
     * in the last poll before blocking on it (with the lock a poll takes),
     * is 0 when blocking is safe and nonzero when something is pending.
     */
    int (*wait_fd)(void);
    int (*trywait)(void);
    /* Point-to-point, filled by init (a device may choose its shape at run time). */
    struct hashi_device_p2p_ops p2p;
    /* Collectives the device runs itself (all NULL: the generic ones). */
    struct hashi_device_coll_ops coll;
    /* Partitioned communication the device runs itself (all NULL: generic). */
    struct hashi_device_part_ops part;
    /* One-sided communication the device moves itself (all NULL: generic). */
    struct hashi_device_rma_ops rma;
};

/* What HASHI_DEVICE=auto picks, and why (hashi_info prints it). */
HASHI_EXPORT extern const char hashi_device_auto_policy[];

/* The device chosen at MPI_Init. */
extern struct hashi_device_ops *hashi_device;

/*
 * Choose the device from HASHI_DEVICE / HASHI_TRANSPORT (validated against the
 * compiled devices and what each can run on). 0, or -1 with a message.
 */
int hashi_device_select(char *err, size_t errlen);

/*
 * MPI_THREAD_MULTIPLE: before the modex exchange, publish whether this rank
 * runs MPI calls from concurrent threads; after it, agree: if any rank does,
 * every rank's device collectives are dropped (device.c says why). 0, or -1
 * with a message.
 */
int hashi_device_publish_threads(int concurrent);
int hashi_device_agree_threads(int concurrent, char *err, size_t errlen);

#endif
