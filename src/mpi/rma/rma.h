/*
 * One-sided communication (MPI_Win_*, MPI_Put, MPI_Get, the accumulate
 * family), built on the layer's internal point-to-point so every device and
 * transport carries it unchanged. docs/rma.md has the design; in short:
 *
 *  - Each window owns two private communicators over its group: origin ->
 *    target requests travel on the first's context id, target -> origin
 *    replies on the second's (its context id + 1 carries the window's
 *    collectives: fence and free barriers), so window traffic never meets
 *    user messages nor the window's own collectives, whatever the tags.
 *  - An operation is one or more messages "header, target segments, data"
 *    of at most RMA_MSG_MAX bytes. The origin interprets the target datatype
 *    (the standard gives it the origin's type map) and ships it as a list of
 *    (displacement, element count) segments; origin data is packed by the
 *    datatype engine into the message, so the origin buffer is free on return.
 *  - The target applies the messages from a progress hook (target.c), in
 *    arrival order, one at a time: any MPI call that makes progress serves
 *    the windows of its process. Per origin they are applied in the order
 *    sent, so a FLUSH / UNLOCK / COMPLETE request behind the operations is
 *    answered only once they are all applied: that answer is completion.
 *  - move.c is the one place that moves bytes between origin and target
 *    (put these bytes at these segments, get those), which a device's RMA
 *    entries would replace (docs/device-interface.md, "RMA").
 */
#ifndef HASHI_MPI_RMA_H
#define HASHI_MPI_RMA_H

#include "mpi/mpi_impl.h"
#include "mpi/comm.h"
#include "mpi/datatype.h"
#include "mpi/info.h"
#include "mpi/p2p.h"
#include "mpi/request.h"
#include "device/device.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Largest request message (header + segments + data); an operation with more
 * is split into several, on element boundaries. */
#define RMA_MSG_MAX (64 * 1024)
/* Header receives a window keeps posted on its request context. */
#define RMA_SLOTS 4
/* Reply tags: RMA_TAG_POST carries MPI_Win_post's notices; the others are
 * handed out by the origin per reply. */
#define RMA_TAG_POST 1
#define RMA_TAG_FIRST 2
/* Data of direct puts travels on the reply context too, under tags of the
 * origin's from RMA_TAG_DATA up: never one a reply could have. */
#define RMA_TAG_DATA (1 << 22)
/* A put of at least this many bytes into one run of the target window goes
 * as a header and a message of its own, received in place (no copies). */
#define RMA_DIRECT_MIN (32 * 1024)

enum rma_kind {
    RMA_PUT = 1,     /* data -> segments */
    RMA_GET,         /* segments -> reply */
    RMA_ACC,         /* segments op= data */
    RMA_GACC,        /* reply = segments; segments op= data (Get_accumulate, Fetch_and_op) */
    RMA_CAS,         /* one element: reply = old; if old == compare: store */
    RMA_FLUSH,       /* reply (error) once everything before it is applied */
    RMA_LOCK,        /* reply once the lock is granted */
    RMA_UNLOCK,      /* release, reply (error) */
    RMA_COMPLETE,    /* MPI_Win_complete: counts for MPI_Win_wait, reply (error) */
    RMA_PUT_DIRECT,  /* one segment; its data follows as a message of its own (tag reply_tag) */
};

/* Every request message starts with this; both ends run the same binary. */
struct rma_hdr {
    uint8_t kind;            /* enum rma_kind */
    uint8_t pad[3];
    int32_t reply_tag;       /* on the reply context; 0: no reply */
    int32_t op;              /* accumulate: the predefined MPI_Op's handle value */
    int32_t basic;           /* the element type's handle value (MPI_BYTE for put / get) */
    int32_t lock_type;       /* RMA_LOCK */
    uint32_t nseg;           /* segments following the header */
    uint64_t data_bytes;     /* data following the segments (put, acc), or the reply's size (get) */
};

/* A run of elements of the message's basic type at disp in the target
 * window (absolute address for dynamic windows). */
struct rma_seg {
    int64_t disp;
    int64_t count;
};

/* What every member knows of every other at creation. */
struct rma_peer {
    uint64_t base;           /* its base address (shared windows: in its own mapping) */
    int64_t size;
    int64_t disp_unit;
    int64_t dev_ok;          /* its device attach succeeded (the key is valid) */
    int64_t shm_want;        /* it asks for a node-local window (all must: shm.c) */
    int64_t lock_ok;         /* it has a device lock word and the device reaches every member (devlock.c) */
    uint64_t lock_ref;       /* that word, as hashi_device->rma's lock entries name it */
    unsigned char dev_key[HASHI_DEVICE_RMA_KEY_MAX];   /* hashi_device->rma's key to its memory */
};

/* A region attached to a dynamic window. */
struct rma_region {
    struct rma_region *next;
    uintptr_t base;
    size_t size;
};

/* A lock request the target could not grant yet. */
struct rma_lock_waiter {
    struct rma_lock_waiter *next;
    int origin, type, reply_tag;
};

/* A FLUSH, UNLOCK or COMPLETE held back until an origin's direct puts are in. */
struct rma_deferred {
    struct rma_deferred *next;
    int origin, kind, reply_tag;
};

/* A posted request receive. */
struct rma_slot {
    struct MPI_ABI_Request *req;
    unsigned char *buf;
};

struct rma_win {
    struct MPI_ABI_Win h;           /* first: the handle is its address */
    struct rma_win *next;           /* live windows (the progress hook's list) */
    struct MPI_ABI_Comm *comm;      /* private: requests on its context_id, collectives on + 1 */
    struct MPI_ABI_Comm *reply_comm;/* private too: only its context id is used, for replies */
    uint32_t reply_context;
    int rank, size;
    int flavor;                     /* MPI_WIN_FLAVOR_* */
    void *base;
    MPI_Aint win_size, disp_unit;
    struct rma_peer *peers;         /* size entries */
    char name[MPI_MAX_OBJECT_NAME];
    struct MPI_ABI_Info *info;      /* hints given, or NULL */
    void *owned;                    /* MPI_Win_allocate's memory, or NULL */
    void *shm;                      /* MPI_Win_allocate_shared's mapping, or NULL */
    size_t shm_len;
    MPI_Aint *shm_offset;           /* shared: each member's offset in the mapping */
    struct rma_region *regions;     /* dynamic */
    MPI_Aint attr_size;             /* what the predefined attributes point to */
    int attr_disp_unit, attr_flavor, attr_model;

    /* ---- target side (target.c) ---- */
    struct rma_slot slots[RMA_SLOTS];
    int slot_head;                  /* the next to complete: posting order */
    int *origin_error;              /* first failure of each origin's operations, until reported */
    int lock_exclusive;             /* an exclusive holder */
    int lock_shared;                /* shared holders */
    struct rma_lock_waiter *lock_queue, **lock_tail;
    int completes;                  /* MPI_Win_complete notices in this exposure epoch */
    int *direct_pending;            /* per origin: direct put data not in yet */
    struct rma_deferred *deferred, **deferred_tail;
    int post_expected;              /* MPI_Win_post's group size; -1: not posted */

    /* ---- origin side (ops.c, sync.c) ---- */
    int fence_epoch;                /* between fences (not after NOSUCCEED) */
    int lock_all;                   /* MPI_Win_lock_all held */
    int lock_all_nocheck;
    int *lock_type;                 /* per target: 0, or MPI_LOCK_* held (negative: NOCHECK) */
    unsigned char *access;          /* per target: in the MPI_Win_start group */
    int access_epoch;               /* MPI_Win_start called, not completed */
    unsigned char *touched;         /* per target: operations since its last completion */
    int *pending;                   /* per target: replies not in yet */
    int reply_tag;                  /* the last reply tag handed out */
    int data_tag;                   /* the last direct put data tag */
    int error;                      /* first failure a target reported, raised by the next sync call */

    /* ---- device path (move.c; docs/rma.md, "Device path") ---- */
    struct hashi_device_win *dev_win;   /* this member's registration, or NULL */
    unsigned char *dev_reach;       /* per target: contiguous puts / gets go to the device; NULL: none */
    int *dev_pending;               /* per target: device operations not complete (also in pending) */
    struct rma_dev_target *dev_targets; /* per target: the completion argument of a plain device put */
    size_t dev_min, dev_max;        /* runs the device takes (HASHI_RMA_DEVICE_MIN, _MAX; max 0: any) */
    size_t dev_vec_max;             /* smaller put runs up to this are queued for a vector PUSH (0: none) */
    struct rma_dev_queue **dev_queue; /* per target: queued put runs, or NULL; the array NULL: no putv */

    /* ---- device lock words (devlock.c; docs/rma.md, "LLCM locks") ---- */
    int dev_locks;                  /* every member has one: locks are remote atomics, no messages */
    int dev_lock_owned;             /* this member's word is allocated (freed with the window) */
    uint64_t dev_lock_ref;

    /* ---- node-local windows (shm.c; docs/rma.md, "Node-local windows") ---- */
    int shm_all;                    /* every member asked for it: ops are loads and stores */
    struct rma_shm_ctl *shm_ctl;    /* per member, in the segment; NULL: messages */
    _Atomic uint32_t *shm_posts;    /* [origin * size + target]: target's MPI_Win_post notices to origin */
    uint32_t *shm_posts_seen;       /* per target: its notices our MPI_Win_start consumed */
    uint32_t shm_completes_seen;    /* MPI_Win_complete notices our MPI_Win_wait consumed */
};

/* Put runs queued for one target, issued as one vector PUSH when full or
 * at the first completion call (move.c): copies of their data, so the
 * origin buffer is free at once, as with a message. */
#define RMA_DEV_QUEUE_RUNS 64
#define RMA_DEV_QUEUE_BYTES (RMA_MSG_MAX - 32 - RMA_DEV_QUEUE_RUNS * 16)   /* what fits one request message */
struct rma_dev_queue {
    unsigned char *buf;             /* RMA_DEV_QUEUE_BYTES, or NULL until the next run */
    size_t used;
    int n;
    struct hashi_device_rma_piece piece[RMA_DEV_QUEUE_RUNS];
};

struct rma_dev_target {
    struct rma_win *w;
    int target;
};

/* The window behind a handle, or NULL (checked magic). */
static inline struct rma_win *rma_win_get(MPI_Win h)
{
    return (struct rma_win *)hashi_win_get(h);
}
/* A call's window argument: the object, or NULL with MPI_ERR_WIN raised in *rc. */
struct rma_win *rma_win_arg(const char *func, MPI_Win win, int *rc);
static inline MPI_Win rma_handle(struct rma_win *w)
{
    return (MPI_Win)&w->h;
}

/* ---- target.c: the service ---- */
/* Post the window's request receives and put it on the hook's list. */
int rma_target_start(struct rma_win *w);
/* Take it off and cancel its receives (nothing may still be on its way). */
void rma_target_stop(struct rma_win *w);

/* ---- move.c: moving bytes, origin side ---- */
/* A reply expected from target: `bytes` into `buf` (NULL: discarded into
 * scratch). done(arg, error class) runs on arrival (from progress). Counts in
 * w->pending[target] until then. */
typedef void rma_reply_fn(void *arg, int error);
int rma_expect_reply(struct rma_win *w, int target, void *buf, size_t bytes, rma_reply_fn *done, void *arg,
                     int *tag);
/* Send a message we own (malloc'd, freed once sent) to target's requests. */
int rma_send_request(struct rma_win *w, int target, void *msg, size_t len);
/* Send a reply (copied) on the reply context. */
int rma_send_reply(struct rma_win *w, int origin, int tag, const void *data, size_t len);
/* The same straight from window memory (a large get of one run): the origin
 * completes the get only once it has it all, before the window can go. */
int rma_send_reply_inplace(struct rma_win *w, int origin, int tag, const void *data, size_t len);
/* A control request (FLUSH, LOCK, UNLOCK, COMPLETE) whose reply is an error
 * class, folded into w->error. */
int rma_control(struct rma_win *w, int target, enum rma_kind kind, int lock_type);
/* A direct put: header to target's requests, then `bytes` at data (ours to
 * free once sent when owned, else the program's, which it keeps until the
 * operation completes locally); ureq (or NULL) completes when it is sent.
 * Counts in w->pending[target] until then. */
int rma_put_direct(struct rma_win *w, int target, int64_t disp, const void *data, size_t bytes, int owned,
                   struct MPI_ABI_Request *ureq);
/* The device path: `bytes` contiguous bytes to / from target's window at
 * disp, as one device operation (w->dev_reach[target] is set). A put's data
 * (owned: ours to free) and a get's destination are in use until the
 * operation completes (counted in w->pending and w->dev_pending); then
 * ureq (a put's MPI_Rput request) completes, or done(arg, error class) runs
 * (a get). A FLUSH, UNLOCK or COMPLETE to the target waits for them first. */
int rma_device_put(struct rma_win *w, int target, int64_t disp, const void *data, size_t bytes, int owned,
                   struct MPI_ABI_Request *ureq);
/* Issue target's queued put runs: pieces of at least dev_min bytes
 * (adjacent runs merge) as one vector PUSH, the others as one PUT message
 * of many segments. Every synchronization call does it first (so its
 * touched[] checks see the message), and every other operation to the
 * target (so the target sees them in issue order). */
void rma_dev_queue_issue(struct rma_win *w, int target);
static inline void rma_dev_queue_issue_all(struct rma_win *w)
{
    for (int r = 0; w->dev_queue && r < w->size; r++)
        rma_dev_queue_issue(w, r);
}
/* Whether a put run to a target the device reaches is queued: a small run
 * (no request) that follows another operation to that target in the same
 * synchronization (touched: a message is on its way), so a burst goes as
 * one message while a lone put (put + flush, lock + put + unlock) travels
 * at once, as before the queue. */
static inline int rma_dev_queues(const struct rma_win *w, int target, size_t bytes, int has_request)
{
    return !has_request && w->dev_queue && bytes < w->dev_min && bytes <= w->dev_vec_max && w->touched[target];
}
/* Whether a put run of `bytes` to target goes to the device (its range, or
 * the vector queue for runs below it without a request). */
static inline int rma_device_takes(const struct rma_win *w, int target, size_t bytes, int is_put, int has_request)
{
    if (!w->dev_reach || !w->dev_reach[target])
        return 0;
    if (bytes >= w->dev_min && (!w->dev_max || bytes <= w->dev_max))
        return 1;
    return is_put && rma_dev_queues(w, target, bytes, has_request);
}
int rma_device_get(struct rma_win *w, int target, int64_t disp, void *dst, size_t bytes, rma_reply_fn *done,
                   void *arg);
/* Window creation and free: register this member's memory with the device
 * (mine->dev_ok, mine->dev_key), and after the allgather decide the path
 * per target; release it. */
void rma_device_attach(struct rma_win *w, int flavor, void *base, MPI_Aint size, struct rma_peer *mine);
int rma_device_setup(struct rma_win *w);
void rma_device_detach(struct rma_win *w);
/* Drive progress until no reply from target (-1: any) is outstanding. */
void rma_wait_replies(struct rma_win *w, int target);

/* ---- devlock.c: passive-target locks on the device's lock words ---- */
/* Before the creation allgather: this member's word (mine->lock_ok,
 * lock_ref) unless the window cannot use them; after it: w->dev_locks when
 * every member has one (else the word is freed); at free, after the
 * barrier: the word goes. */
void rma_dev_lock_attach(struct rma_win *w, int flavor, struct MPI_ABI_Comm *c, int shm_want, struct rma_peer *mine);
void rma_dev_lock_setup(struct rma_win *w);
void rma_dev_lock_detach(struct rma_win *w);
/* Take target's word (waiting through the progress loop) / release it and
 * wake the waiters; MPI_SUCCESS or an error class (the word is not ours). */
int rma_dev_lock(struct rma_win *w, int target, int lock_type);
int rma_dev_unlock(struct rma_win *w, int target, int lock_type);

/* ---- sync.c ---- */
/* Whether an operation on target may be issued now. */
static inline int rma_in_epoch(const struct rma_win *w, int target)
{
    return w->fence_epoch || w->lock_all || w->lock_type[target] != 0 || (w->access_epoch && w->access[target]);
}
/* Raise (and clear) a failure a target reported. */
int rma_take_error(struct rma_win *w, const char *func);

/* ---- shm.c: node-local windows ---- */
/* One cache line per member in the window's segment, after the data. */
struct rma_shm_ctl {
    _Atomic uint32_t lock;          /* passive target: RMA_SHM_WRITER | shared holders */
    _Atomic uint32_t lock_waiters;  /* ranks waiting for it (an unlock wakes them) */
    _Atomic uint32_t acc;           /* held around every accumulate-family op on this member */
    _Atomic uint32_t completes;     /* MPI_Win_complete notices received, ever */
    unsigned char pad[48];
};
/* Operations done by loads and stores: the MPI_T counter rma_shm_ops
 * (what the tests read to know the path). */
extern uint64_t rma_shm_ops_count;
/* Bytes of control the segment needs after the data, for n members. */
size_t rma_shm_ctl_bytes(int n);
/* Whether this member asks for a node-local window (HASHI_RMA_SHM, and
 * for MPI_Win_allocate every member on this node). */
int rma_shm_wanted(struct MPI_ABI_Comm *c, int flavor);
/* After the segment is mapped: point at the control area (ctl at offset). */
int rma_shm_attach(struct rma_win *w, void *ctl);

/* One operation on a node-local window, issued and complete at once:
 * segments in bytes (put, get) or in elements of bt (the accumulate family),
 * displacements from the target's base. */
struct rma_shm_op {
    enum rma_kind kind;             /* RMA_PUT, RMA_GET, RMA_ACC, RMA_GACC, RMA_CAS */
    int target;
    const struct rma_seg *segs;
    size_t nseg;
    size_t bytes;                   /* the whole stream */
    const void *oaddr;              /* data (NULL: MPI_NO_OP) */
    MPI_Count ocount;
    const struct MPI_ABI_Datatype *ot;
    void *raddr;                    /* results (get, get_accumulate, cas), or NULL */
    MPI_Count rcount;
    const struct MPI_ABI_Datatype *rt;
    const void *compare;            /* RMA_CAS */
    MPI_Op op;
    MPI_Datatype basic;
    const struct MPI_ABI_Datatype *bt;
};
int rma_shm_op(struct rma_win *w, const struct rma_shm_op *op);
/* One integer of `size` (4 or 8) bytes at `at` in target's part, under its
 * accumulate lock: result = old, then add / replace / nothing / swap if
 * equal to *compare. */
enum rma_shm_atomic { RMA_SHM_SUM, RMA_SHM_REPLACE, RMA_SHM_NO_OP, RMA_SHM_CAS };
void rma_shm_atomic(struct rma_win *w, int target, char *at, size_t size, enum rma_shm_atomic what,
                    const void *origin, const void *compare, void *result);
/* Synchronization: a reader-writer word per target, PSCW counters. */
void rma_shm_lock(struct rma_win *w, int target, int lock_type);
void rma_shm_unlock(struct rma_win *w, int target);
void rma_shm_post(struct rma_win *w, const unsigned char *origins);
void rma_shm_start(struct rma_win *w);
void rma_shm_complete(struct rma_win *w);
/* MPI_Win_wait / test: the group's completes are in (consumes them when so). */
int rma_shm_completed(struct rma_win *w, int consume);

/* ---- target.c: applying elements, shared with shm.c ---- */
/* n elements of basic type t at `at` -> the packed stream. */
void rma_load_elements(const struct MPI_ABI_Datatype *t, const char *at, int64_t n, char *stream);
/* at[0..n) op= the packed stream's elements. */
int rma_combine_elements(MPI_Op op, MPI_Datatype basic, const struct MPI_ABI_Datatype *t, const char *stream,
                         char *at, int64_t n);

/* ---- window.c ---- */
/* A window member's rank in the window's group from a world rank, or -1. */
int rma_rank_of_world(const struct rma_win *w, int world);

#endif
