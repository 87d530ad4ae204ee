/*
 * LLCM collectives (docs/dimmnet.md, "LLCM collectives"): MPI_Barrier,
 * MPI_Bcast, MPI_Allreduce, MPI_Reduce and MPI_Alltoall of small data on any
 * communicator whose members all share this node (emu transport), as
 * synchronisation variables and payloads stored by AOTF into the peers'
 * LLCM, like the DIMMnet DSM paper's flags. Larger data (reductions,
 * broadcasts, allgather and alltoall blocks, as the caller offers them,
 * docs/collectives.md) puts only a key to the member's registered buffer
 * into the slot; the reader PULLs the data itself and acknowledges. From 3
 * members, data that fits a rank's stage (transport.h) goes through it
 * instead: copied in once by its owner, copied out or reduced in place by
 * the others (broadcasts, alltoall and allgather blocks, reductions).
 *
 * Flat, one step: every rank stores its contribution into each peer's
 * collective area (the slot of its own local index there), the pair
 * sequence after it as the flag, and waits for its peers' flags. An
 * oversubscribed rank thus needs to run once after the last arrival, where a
 * tree or dissemination hands the core over once per round.
 *
 * Reuse of the ring of slots per source (pair sequence s uses slot s mod
 * slots; the pair sequence counts collectives in which the two ranks
 * exchanged data, on both sides): before storing a payload for s into a
 * peer's slot, a writer must know that the peer consumed the payload it last
 * stored in that slot. It learns it from the peer's own data (a peer's
 * contribution to pair collective k proves that it finished k - 1: every
 * all-to-all shaped collective, and a broadcast from that peer) or, when it
 * only sent (a broadcast root), from the ack word the peer stores back after
 * consuming. Correct programs run their blocking
 * collectives in one order per pair of ranks across all communicators
 * (otherwise synchronising collectives would deadlock), and every member
 * takes or declines the device path on the same grounds, so both sides count
 * the same sequence.
 *
 * The counter barrier (the DSM paper's sync variable as a counter): every
 * member adds one to a word in the LLCM of the communicator's rank 0; the
 * one whose add completes the count stores the release into every other
 * member's LLCM. Oversubscribed, each core then runs each of its ranks
 * once per barrier, where a fan-in/fan-out hands the cores over about
 * three times as often. A communicator's counter line and release word
 * (slot) are agreed among its members at its first barrier.
 *
 * MPI_COMM_WORLD above HASHI_DIMMNET_COLL_RANKS ranks, or off the node, keeps
 * the dissemination barrier on epoch words: in round k rank i stores its
 * barrier epoch into word k of rank (i + 2^k) mod n and waits until its own
 * word k holds at least that epoch; one writer per word and growing epochs
 * make a fast rank's early store of the next epoch harmless.
 *
 * Nonblocking and persistent collectives (the device's op_* entries) run
 * the same flat collectives, the counter and the dissemination barrier and
 * the sparse exchange as state machines (op_step) on a channel per
 * communicator: see "Channels" and the machines below. A blocking call runs
 * the same machine to its end.
 */
#include "device/dimmnet/dimmnet.h"
#include "mpi/coll/op.h"
#include "mpi/datatype.h"
#include "mpi/comm.h"
#include "mpi/mpi_impl.h"
#include "mpi/p2p.h"
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hot helpers of the collectives' steps, inlined into every instance
 * of a step (see step_slots). */
#define DN_INLINE static inline __attribute__((always_inline))

/* What this rank knows of one peer on the node, in one ring (below). */
struct coll_peer {
    uint64_t seq;          /* pair sequence of the last collective we exchanged data in */
    uint64_t done;         /* the peer finished every pair collective up to this one */
    uint64_t payload[DN_COLL_SLOTS_MAX]; /* pair sequence of our last payload in each of its slots */
    uint64_t newest;       /* pair sequence of our newest payload there */
};

/*
 * A ring: one collective area per local rank in every rank's LLCM (slots
 * of flag + payload, an ack word), and what this rank knows of each peer's
 * use of its own. The blocking collectives share one ring (pair sequences
 * across every communicator); each channel is a ring of its own, which
 * only one communicator of ours uses at a time (see "Channels" below).
 */
struct ring {
    uint64_t base, stride;   /* the area of local index l: base + l * stride */
    size_t hdr;              /* the area's ack word up to the first slot */
    size_t slot_bytes;       /* flag word, payload */
    size_t payload;          /* bytes of a slot's payload */
    unsigned slots;          /* slots per area: a power of two */
    struct coll_peer *peer;  /* per world rank */
};

struct dn_comm_sync;
static struct dn_comm_sync *comm_state(struct MPI_ABI_Comm *c);

static struct {
    int flat;              /* the collective areas fit the LLCM: flat collectives run */
    int barrier_on, coll_on;   /* HASHI_DIMMNET_BARRIER, HASHI_DIMMNET_COLL */
    size_t max_bytes;      /* HASHI_DIMMNET_COLL_MAX: payload bound per contribution */
    int max_ranks;         /* HASHI_DIMMNET_COLL_RANKS */
    struct ring blk;       /* the blocking collectives' ring */
    struct ring *chan;     /* the channels (nchan of them, or none) */
    unsigned nchan;
    int my_index;
    int *local_index;      /* world rank -> local index, -1 off the node */
    unsigned char *llcm;
    /* the running blocking collective: members (world ranks) and pair sequences, by comm rank
     * (member: its communicator's cached array, flat_comm, or member_buf) */
    int *member, *member_buf;
    uint64_t *seq;
    uint64_t *seq_in;      /* reduce_segments: co.seq of its first step */
    uint64_t epoch;        /* MPI_COMM_WORLD dissemination barriers so far */
    int barrier_alg;       /* HASHI_DIMMNET_BARRIER_ALG: BARRIER_FLAT, _ROOTED, _COUNTER or _AUTO */
    uint64_t sync_base;    /* counter barriers: DN_SYNC_SLOTS lines, then release words */
    uint32_t sync_free;    /* slots no communicator of ours holds (bit s: slot s) */
    int sync_ok;           /* the sync area fits and every local peer can fetch_add */
    void *scratch;         /* copies of peers' contributions read in place */
    size_t scratch_len;
    int *readers;          /* by comm rank: the members reading our offered buffer */
    int *x_send, *x_recv;  /* dn_exchange: by comm rank, our block for / from it (-1: none) */
    int *sources;          /* struct sources */
    size_t segments_min;   /* HASHI_COLL_DEVICE_SEGMENTS_MIN: reduce_segments from 3 members */
    size_t exchange_read_min;  /* HASHI_COLL_DEVICE_EXCHANGE_READ_MIN (0: never, SIZE_MAX) */
    /* The staged broadcast: our stage (transport.h), the largest broadcast
     * staged (0: none), and the readers of our last one with their pair
     * sequences: we write the stage again once each has acknowledged. */
    unsigned char *stage;
    size_t stage_max;
    size_t blocks_stage_max;   /* blocks_staged: the most bytes a member stages (0: never) */
    size_t reduce_stage_max;   /* reduce_staged: the largest vector (0: never) */
    int *stage_reader;
    uint64_t *stage_seq;
    int stage_readers;
    struct hashi_device_coll_op *op_cache;   /* freed operation objects, for reuse */
} co;

/* Data larger than a slot (a reduction's contribution, a broadcast, the
 * blocks of an allgather or alltoall): the slot carries this and the reader
 * copies the data straight from the member's buffer. */
struct offer_desc {
    struct hashi_tl_rkey rkey;   /* the buffer, registered for the reader */
};

/* ------------------------------------------------------------ layout */

static uint64_t ring_area(const struct ring *r, int index)
{
    return r->base + (uint64_t)index * r->stride;
}

static uint64_t ring_slot(const struct ring *r, int index, uint64_t seq)
{
    return ring_area(r, index) + r->hdr + (seq & (r->slots - 1)) * r->slot_bytes;
}

static uint64_t area_off(int index)
{
    return ring_area(&co.blk, index);
}

static uint64_t load(uint64_t offset)
{
    return __atomic_load_n((const uint64_t *)(const void *)(co.llcm + offset), __ATOMIC_ACQUIRE);
}

/* What peer w stored for pair sequence seq in our LLCM. */
static const unsigned char *ring_data(const struct ring *r, int w, uint64_t seq)
{
    return co.llcm + ring_slot(r, co.local_index[w], seq) + DN_COLL_ALIGN;
}

static const unsigned char *data_from(int w, uint64_t seq)
{
    return ring_data(&co.blk, w, seq);
}

static void ring_learn(struct ring *r, int w, uint64_t k)
{
    if (k > r->peer[w].done)
        r->peer[w].done = k;
}

/* ------------------------------------------------------------ stores */

static __attribute__((noinline, cold)) int store_failed(int peer, int rc)
{
    hashi_log("dimmnet: LLCM collective store to rank %d failed (%d)", peer, rc);
    return MPI_ERR_OTHER;
}

/* A flag or word into peer's LLCM (AOTF); inlined into the steps. */
DN_INLINE int store_word(int peer, uint64_t offset, uint64_t value)
{
    int rc;
    while (__builtin_expect((rc = hashi_tl(peer)->tiny_write(peer, offset, value, 8)) != 0, 0)) {
        if (rc != -EAGAIN)
            return store_failed(peer, rc);
        hashi_dn_progress();   /* the transport's queue is full */
    }
    hashi_dn_stats.aotf++;
    return MPI_SUCCESS;
}

static int store(int peer, uint64_t offset, uint64_t value)
{
    return store_word(peer, offset, value);
}

/* Whether w consumed our payloads in r up to pair sequence `need` (its ack
 * word tells what our broadcasts alone cannot). */
DN_INLINE int ring_consumed(struct ring *r, int w, uint64_t need)
{
    if (r->peer[w].done >= need)
        return 1;
    ring_learn(r, w, load(ring_area(r, co.local_index[w])));
    return r->peer[w].done >= need;
}

struct consumed_wait {
    int w;
    uint64_t need;
};

static int consumed(void *arg)
{
    const struct consumed_wait *cw = arg;
    return ring_consumed(&co.blk, cw->w, cw->need);
}

/*
 * Whether our contribution of `bytes` for pair sequence seq may go into
 * w's slot now. A flag alone (barrier) may overwrite an unread flag:
 * readers wait for ">= their sequence", and the payload under it stays; a
 * payload must wait until the previous one in that slot was consumed. When
 * the ring is full (a root running ahead) the writer waits until the peer
 * took everything (*need, 0 before the first try), so that the next
 * slots - 1 stores need no wait: one hand-over per ring, not one per call.
 */
DN_INLINE int may_post(struct ring *r, int w, uint64_t seq, size_t bytes, uint64_t *need)
{
    struct coll_peer *p = &r->peer[w];
    if (bytes == 0 || ring_consumed(r, w, p->payload[seq & (r->slots - 1)])) {
        *need = 0;
        return 1;
    }
    if (!*need) {
        hashi_dn_stats.coll_slot_waits++;
        *need = p->newest;
    }
    if (!ring_consumed(r, w, *need))
        return 0;
    *need = 0;
    return 1;
}

/* Our contribution for pair sequence seq into w's slot of r: payload, then
 * the flag (issue order per peer makes the flag land last; a payload of up
 * to 48 bytes shares the flag's cache line in the lined layout, one miss
 * for the reader). may_post said yes. */
DN_INLINE int ring_write(struct ring *r, int w, uint64_t seq, const unsigned char *data, size_t bytes)
{
    struct coll_peer *p = &r->peer[w];
    uint64_t off = ring_slot(r, co.my_index, seq);
    int rc = MPI_SUCCESS;
    const struct hashi_tl_ops *tl = hashi_tl(w);
    if (bytes > 0 && tl->llcm_write) {
        /* One copy, where word by word each store paid a call and the wake
         * check's fence (256 bytes: 32 of them). */
        if (tl->llcm_write(w, off + DN_COLL_ALIGN, data, bytes) != 0) {
            hashi_log("dimmnet: LLCM collective store of %zu bytes to rank %d failed", bytes, w);
            return MPI_ERR_OTHER;
        }
    } else {
        for (size_t i = 0; i < bytes && rc == MPI_SUCCESS; i += 8) {
            uint64_t v = 0;
            memcpy(&v, data + i, bytes - i < 8 ? bytes - i : 8);
            rc = store(w, off + DN_COLL_ALIGN + i, v);
        }
    }
    if (rc == MPI_SUCCESS)
        rc = store_word(w, off, seq);
    if (bytes > 0)
        p->payload[seq & (r->slots - 1)] = p->newest = seq;
    return rc;
}

struct post_wait {
    int w;
    uint64_t seq, need;
    size_t bytes;
};

static int post_allowed(void *arg)
{
    struct post_wait *pw = arg;
    return may_post(&co.blk, pw->w, pw->seq, pw->bytes, &pw->need);
}

/* A blocking collective's contribution into w's slot of the blocking ring. */
static int post(int w, uint64_t seq, const unsigned char *data, size_t bytes)
{
    struct post_wait pw = { w, seq, 0, bytes };
    if (!post_allowed(&pw))
        hashi_progress_wait_until(post_allowed, &pw);
    return ring_write(&co.blk, w, seq, data, bytes);
}

/* Whether member's flag for pair sequence seq has arrived in r (the full
 * sequence, never a bit: a stale slot holds seq - slots or less; a larger
 * one is a later flag-only store over ours); then it also finished every
 * earlier pair collective. */
DN_INLINE int ring_arrived(struct ring *r, int w, uint64_t seq)
{
    if (load(ring_slot(r, co.local_index[w], seq)) < seq)
        return 0;
    ring_learn(r, w, seq - 1);
    return 1;
}

struct arrivals {
    const int *member;     /* world ranks */
    const uint64_t *seq;   /* the pair sequence expected from each */
    int n, skip;           /* entries; one to skip (ourselves), or -1 */
    int next;              /* entries before it have arrived */
};

static int arrived(void *arg)
{
    struct arrivals *a = arg;
    for (; a->next < a->n; a->next++)
        if (a->next != a->skip && !ring_arrived(&co.blk, a->member[a->next], a->seq[a->next]))
            return 0;
    return 1;
}

static void wait_arrivals(const int *member, const uint64_t *seq, int n, int skip)
{
    struct arrivals a = { member, seq, n, skip, 0 };
    if (!arrived(&a))
        hashi_progress_wait_until(arrived, &a);
}

/* ------------------------------------------------------------ flat collectives */

/* flat_comm's answer, worked out (members into `member`). */
static int flat_check(const struct MPI_ABI_Comm *c, int *member)
{
    if (!co.flat || c->size > co.max_ranks)
        return 0;
    for (int i = 0; i < c->size; i++) {
        int w = hashi_comm_to_world(c, i);
        if (i != c->rank && (co.local_index[w] < 0 || hashi_tl(w)->id != HASHI_TL_EMU))
            return 0;
        member[i] = w;
    }
    return 1;
}


/*
 * Channels. Blocking collectives of a correct program meet in one order on
 * every pair of ranks, across communicators; nonblocking ones only in one
 * order per communicator (rank 0 may start Ibarrier on A, then on B, rank
 * 1 on B, then on A). So a nonblocking or persistent collective runs on its
 * communicator's channel: a ring whose pair sequences count only that
 * communicator's runs. A communicator's channel is its context id's pair
 * (its block of pairs when the job spans nodes: comm.h), when below
 * co.nchan: every member has that id, and no two communicators of one rank
 * hold it at once (the pool, contextid.c), so the channel needs no
 * agreement. Sequences are never reset: when the id passes to another
 * communicator, both ranks of a pair of it finished the same runs of the
 * old one, so their counters agree, and a late ack or flag holds a smaller
 * sequence than anything the new one waits for. NULL: no channel (the
 * device declines its nonblocking collectives; borrowed contexts share
 * their parent's id and never get one).
 */
static struct ring *channel(const struct MPI_ABI_Comm *c)
{
    if (!co.nchan || (c != &hashi_comm_world && (c->magic != HASHI_COMM_MAGIC || c->context_borrowed)))
        return NULL;
    uint32_t p = c->context_id / 2;
    if (hashi_job.num_nodes > 1)
        p /= HASHI_CONTEXT_BLOCK_PAIRS;
    return p < co.nchan ? &co.chan[p] : NULL;
}

/*
 * The LLCM collectives as pollable state machines: one operation object
 * runs one collective; op_step moves it as far as it goes without waiting.
 * A blocking call runs one to its end (run_now); the device's op_start /
 * op_progress (nonblocking and persistent calls, sched.c's device step) run
 * the same object from the progress engine.
 *
 * Runs that share a communicator's per-communicator state (its channel, its
 * counter barrier's generation, MPI_COMM_WORLD's barrier epoch) run one at
 * a time in the communicator's order: a queue per communicator, whose head
 * runs; the others wait in it (PH_QUEUED) and start when it completes.
 * Hence a member writes its contribution to run k only after finishing run
 * k - 1, which is what makes a peer's contribution to k proof that it
 * consumed everything before (the slot reuse rule above), and a counter
 * barrier's adds for k all come after every member's adds for k - 1.
 */
enum { V_SLOTS, V_COUNTER, V_DISSEM, V_EXCHANGE };
enum { PH_IDLE, PH_QUEUED, PH_POST, PH_WAIT, PH_DRAIN, PH_DONE };
/* The sparse exchange's own state (step_exchange, below). */
struct dn_xchg {
    const struct hashi_device_block *sends, *recvs;
    int *to, *from;        /* by comm rank: index into sends / recvs of a pair on the ring, or -1 */
    size_t slot_max;       /* blocks up to it travel in the slots */
    struct MPI_ABI_Comm *comm;
    int tag;
    int nsends, nrecvs;
    int nmid;              /* blocks that go as messages (room in msgs) */
    int noffer;            /* send blocks offered for reading (room in mem, readers) */
    void *extra;           /* msgs, mem and readers, when there are any (malloc'd) */
    struct MPI_ABI_Request **msgs;
    int nmsgs, msg_error;  /* messages posted in this run; the first failure to post one */
    struct hashi_tl_mem *mem;
    int *readers;          /* comm ranks told to read mem[k] */
    int posted, drained;   /* offered blocks posted / withdrawn in this run */
    int reading, read_done, read_status;   /* the offered block being read */
};
#define OP_RAW (-1)   /* kind: an exchange whose caller reads the slots itself */

struct hashi_device_coll_op {
    int kind;              /* HASHI_DEVICE_OP_*, or OP_RAW */
    int variant;           /* V_SLOTS: on ring; V_COUNTER: c's counter; V_DISSEM: world's epochs */
    struct dn_comm_sync *st;   /* its communicator's state (queue), or NULL: runs at once */
    struct ring *ring;
    int n, me, root;
    int *member;           /* world ranks, by comm rank */
    uint64_t *seq;         /* this run's pair sequences, by comm rank */
    const unsigned char *send;
    unsigned char *recv;
    size_t bytes, each;    /* each: alltoall's block stride in send (0: the same data for all) */
    size_t count;
    hashi_op_kernel_fn fn;
    /* running */
    int phase, k, error;
    uint64_t need, gen;
    int dist, round;
    /* Waiting: the word the step last found short of watch_seq (NULL: none);
     * until it gets there the step cannot move, and a poll looks at it alone
     * (op_watching). */
    const uint64_t *watch;
    uint64_t watch_seq;
    struct dn_xchg *x;     /* V_EXCHANGE: the sparse exchange's blocks and state (xs) */
    struct dn_xchg xs;
    struct hashi_device_coll_op *next;   /* c's queue */
};
typedef struct hashi_device_coll_op dn_op;

/* Whether the word at LLCM offset holds at least v; if not, op waits for it. */
DN_INLINE int op_reached(dn_op *op, uint64_t offset, uint64_t v)
{
    const uint64_t *word = (const uint64_t *)(const void *)(co.llcm + offset);
    if (__atomic_load_n(word, __ATOMIC_ACQUIRE) >= v)
        return 1;
    op->watch = word;
    op->watch_seq = v;
    return 0;
}

/* A waiting op whose watched word has not moved: no step can help. */
DN_INLINE int op_watching(const dn_op *op)
{
    return op->watch && __atomic_load_n(op->watch, __ATOMIC_RELAXED) < op->watch_seq;
}

/* ring_arrived for a run: a flag not there yet becomes op's watch. */
DN_INLINE int op_arrived(dn_op *op, struct ring *r, int w, uint64_t seq)
{
    if (!op_reached(op, ring_slot(r, co.local_index[w], seq), seq))
        return 0;
    ring_learn(r, w, seq - 1);
    return 1;
}

/* A communicator's state: its counter barrier (slot -1: none was free on
 * every member, so it keeps the other barriers; agreed: the first blocking
 * barrier agreed on it), counter barriers run so far, what the last
 * barrier was followed by (see follows_barrier), and the queue of its runs
 * that share its state (above). */
struct dn_comm_sync {
    int slot, agreed;
    uint64_t gen;
    int after_barrier;     /* the last device call on c was a barrier */
    int next_root;         /* the rooted collective that followed it, or -1 */
    dn_op *head, *tail;
    int flat;              /* flat_comm: 1 flat, -1 not, 0 not known yet */
    int member[];          /* flat: world ranks by comm rank (room for c->size up to co.max_ranks) */
};

static struct dn_comm_sync *comm_state(struct MPI_ABI_Comm *c)
{
    struct dn_comm_sync *st = c->device_state;
    size_t members = c->size <= co.max_ranks ? (size_t)c->size : 0;
    if (!st && (st = calloc(1, sizeof *st + members * sizeof st->member[0])) != NULL) {
        st->slot = -1;
        st->next_root = -1;
        c->device_state = st;
    }
    if (!st)
        hashi_log("dimmnet: out of memory for a communicator's collective state");
    return st;
}

/* Whether c is served flat: small enough and every member on this node
 * through emu (the same answer on every member). Points co.member at c's
 * members. Communicators and the members' transports never change, so the
 * answer and the members are kept in c's state from the first call (a
 * member loop per call was an eighth of a small blocking barrier in the
 * device); without that state (out of memory), worked out every time. */
DN_INLINE int flat_comm(struct MPI_ABI_Comm *c)
{
    struct dn_comm_sync *st = c->device_state;
    if (__builtin_expect(!st || !st->flat, 0)) {
        if (!(st = comm_state(c))) {
            co.member = co.member_buf;
            return flat_check(c, co.member);
        }
        st->flat = flat_check(c, st->member) ? 1 : -1;
    }
    co.member = st->member;
    return st->flat > 0;
}

static uint64_t counter_off(int slot)
{
    return co.sync_base + (uint64_t)slot * 64;
}

static uint64_t release_off(int slot)
{
    return co.sync_base + DN_SYNC_SLOTS * 64 + (uint64_t)slot * 8;
}

/*
 * The slot machine's helpers take the kind as an argument: the generic
 * entries pass op->kind, the blocking runs (run_blocking) a constant, so
 * that each blocking kind gets the same step with its tests on the kind
 * folded away (one step function, compiled once per blocking kind and once
 * for any kind).
 */
/* Rooted kinds whose members store into the root's slots alone (fan in),
 * and those whose root stores into every member's (fan out); in both the
 * pair sequences move only between the root and each other member. */
DN_INLINE int kind_fans_in(int kind)
{
    return kind == HASHI_DEVICE_OP_REDUCE || kind == HASHI_DEVICE_OP_GATHER;
}

DN_INLINE int kind_fans_out(int kind)
{
    return kind == HASHI_DEVICE_OP_BCAST || kind == HASHI_DEVICE_OP_SCATTER;
}

/* Prefix kinds: a member stores into the slots of the ranks above it and
 * reads those of the ranks below; every pair exchanges once, one way. */
DN_INLINE int kind_is_scan(int kind)
{
    return kind == HASHI_DEVICE_OP_SCAN || kind == HASHI_DEVICE_OP_EXSCAN;
}

/* The targets of our stores in this run, in order (comm ranks): the next
 * rank first, so that not every rank stores to rank 0 first; a fan-in's
 * non-root stores to the root alone, its root to nobody; a scan's member
 * to the ranks above it. */
DN_INLINE int op_targets(const dn_op *op, int kind)
{
    if (kind_fans_in(kind))
        return op->me != op->root;
    if (kind_is_scan(kind))
        return op->n - 1 - op->me;
    return op->n - 1;
}

DN_INLINE int op_target(const dn_op *op, int kind, int k)
{
    if (kind_fans_in(kind) && op->me != op->root)
        return op->root;
    int i = op->me + k;   /* 0 < k < n: no division */
    return i >= op->n ? i - op->n : i;
}

/* Start a run on a ring: take the pair sequences. */
DN_INLINE void ring_activate(dn_op *op, int kind)
{
    op->k = 1;
    op->need = 0;
    op->watch = NULL;
    op->error = MPI_SUCCESS;
    int receiver = (kind_fans_in(kind) || kind_fans_out(kind)) && op->me != op->root;
    if (receiver) {
        /* Pair sequences move only between the root and each other member. */
        op->seq[op->root] = ++op->ring->peer[op->member[op->root]].seq;
        op->phase = kind_fans_out(kind) ? PH_WAIT : PH_POST;
        return;
    }
    for (int i = 0; i < op->n; i++)
        if (i != op->me)
            op->seq[i] = ++op->ring->peer[op->member[i]].seq;
    op->phase = PH_POST;
    if (kind == HASHI_DEVICE_OP_REDUCE && op->send != op->recv)
        memcpy(op->recv, op->send, op->bytes);   /* the root's accumulator starts as its own */
    if (kind == HASHI_DEVICE_OP_GATHER || kind == HASHI_DEVICE_OP_SCATTER) {
        /* The root's own block, unless MPI_IN_PLACE left it where it belongs
         * (a gather's in recvbuf; a scatter's: no recvbuf). */
        unsigned char *own = kind == HASHI_DEVICE_OP_GATHER ? op->recv + (size_t)op->me * op->bytes : op->recv;
        const unsigned char *from = op->send + (size_t)op->me * op->each;
        if (own && own != from)
            memcpy(own, from, op->bytes);
    }
}

static void xchg_activate(dn_op *op);

/* Start running: take the pair sequences (ring), the generation (counter)
 * or the epoch (dissemination). */
DN_INLINE void op_activate(dn_op *op)
{
    if (op->variant == V_EXCHANGE) {
        xchg_activate(op);
        return;
    }
    if (op->variant == V_COUNTER) {
        op->k = 1;
        op->need = 0;
        op->watch = NULL;
        op->error = MPI_SUCCESS;
        op->gen = ++op->st->gen;
        op->phase = PH_POST;
        return;
    }
    if (op->variant == V_DISSEM) {
        op->k = 1;
        op->need = 0;
        op->watch = NULL;
        op->error = MPI_SUCCESS;
        op->gen = ++co.epoch;
        op->dist = 1;
        op->round = 0;
        op->phase = op->n > 1 ? PH_POST : PH_DONE;
        return;
    }
    ring_activate(op, op->kind);
}

/* Member i's contribution to us, in our slot of it (ours: in send). */
DN_INLINE const unsigned char *op_input(const dn_op *op, int i)
{
    return i == op->me ? op->send + (size_t)op->me * op->each : ring_data(op->ring, op->member[i], op->seq[i]);
}

/* x0 op (x1 op (... op x(last))) into recv, the contributions of members 0
 * .. last: the kernel does inout = in op inout, so rank order holds and
 * every member folding the same inputs gets a bit-identical result. */
DN_INLINE void op_fold(const dn_op *op, int last)
{
    memcpy(op->recv, op_input(op, last), op->bytes);
    for (int i = last - 1; i >= 0; i--)
        op->fn(op_input(op, i), op->recv, op->count);
}

/* An exchange's result, once every contribution is in our slots. */
DN_INLINE void op_gather(dn_op *op, int kind)
{
    int n = op->n, me = op->me;
    switch (kind) {
    case HASHI_DEVICE_OP_ALLREDUCE:
    case HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK:
        op_fold(op, n - 1);
        break;
    case HASHI_DEVICE_OP_SCAN:
        op_fold(op, me);
        break;
    case HASHI_DEVICE_OP_EXSCAN:
        if (me > 0)
            op_fold(op, me - 1);
        break;
    case HASHI_DEVICE_OP_ALLTOALL:
    case HASHI_DEVICE_OP_ALLGATHER:
        for (int i = 0; i < n; i++) {
            unsigned char *to = op->recv + (size_t)i * op->bytes;
            const unsigned char *from =
                i == me ? op->send + (size_t)me * op->each : ring_data(op->ring, op->member[i], op->seq[i]);
            if (to != from)   /* an allgather's MPI_IN_PLACE: our block is there */
                memcpy(to, from, op->bytes);
        }
        break;
    default:
        break;
    }
}

static int op_fail(dn_op *op, int rc)
{
    op->error = rc;
    op->phase = PH_DONE;
    return 1;
}

/* The slot variant: stores to the targets, then the arrivals we need. */
DN_INLINE int step_slots(dn_op *op, int kind)
{
    struct ring *r = op->ring;
    int rc;
    if (op->phase == PH_POST) {
        size_t bytes = kind == HASHI_DEVICE_OP_BARRIER ? 0 : op->bytes;
        for (int last = op_targets(op, kind); op->k <= last; op->k++) {
            int i = op_target(op, kind, op->k), w = op->member[i];
            if (!may_post(r, w, op->seq[i], bytes, &op->need))
                return 0;
            const unsigned char *data = bytes ? op->send + op->each * (size_t)i : NULL;
            if ((rc = ring_write(r, w, op->seq[i], data, bytes)) != MPI_SUCCESS)
                return op_fail(op, rc);
        }
        /* A fan-out's root and a fan-in's other members are done. */
        if (kind_fans_out(kind) || (kind_fans_in(kind) && op->me != op->root)) {
            op->phase = PH_DONE;
            return 1;
        }
        op->phase = PH_WAIT;
        op->k = kind_fans_in(kind) ? 1 : 0;
    }
    if (kind_fans_out(kind)) {
        int w = op->member[op->root];
        uint64_t seq = op->seq[op->root];
        if (!op_arrived(op, r, w, seq))
            return 0;
        memcpy(op->recv, ring_data(r, w, seq), op->bytes);
        /* The root learns nothing else from us: tell it the slot is free. */
        rc = store_word(w, ring_area(r, co.my_index), seq);
        op->phase = PH_DONE;
        op->error = rc;
        return 1;
    }
    if (kind_fans_in(kind)) {
        /* The root: each contribution in turn, reduced (predefined ops
         * commute; the order is the members') or put in its place, and
         * acknowledged. */
        for (; op->k < op->n; op->k++) {
            int i = op_target(op, kind, op->k), w = op->member[i];
            if (!op_arrived(op, r, w, op->seq[i]))
                return 0;
            if (kind == HASHI_DEVICE_OP_GATHER)
                memcpy(op->recv + (size_t)i * op->bytes, ring_data(r, w, op->seq[i]), op->bytes);
            else
                op->fn(ring_data(r, w, op->seq[i]), op->recv, op->count);
            if ((rc = store(w, ring_area(r, co.my_index), op->seq[i])) != MPI_SUCCESS)
                return op_fail(op, rc);
        }
        op->phase = PH_DONE;
        return 1;
    }
    /* A scan waits for the ranks below it alone, the others for everyone. */
    for (int last = kind_is_scan(kind) ? op->me : op->n; op->k < last; op->k++)
        if (op->k != op->me && !op_arrived(op, r, op->member[op->k], op->seq[op->k]))
            return 0;
    op_gather(op, kind);
    if (kind_is_scan(kind)) {
        /* The ranks below learn nothing else from us: free their slots. */
        for (int i = 0; i < op->me; i++)
            if ((rc = store_word(op->member[i], ring_area(r, co.my_index), op->seq[i])) != MPI_SUCCESS)
                return op_fail(op, rc);
    }
    op->phase = PH_DONE;
    return 1;
}

/*
 * The counter barrier (the DSM paper's sync variable as a counter): every
 * member adds one to a word in the LLCM of the communicator's rank 0; the
 * one whose add completes the count stores the release into every other
 * member's LLCM, rank 0 first (a rooted collective that follows waits for
 * it).
 */
DN_INLINE int step_counter(dn_op *op)
{
    struct dn_comm_sync *st = op->st;
    int rc;
    if (op->phase == PH_POST) {
        int root = op->member[0];
        uint64_t old;
        if (op->me == 0) {
            old = __atomic_fetch_add((uint64_t *)(void *)(co.llcm + counter_off(st->slot)), 1, __ATOMIC_ACQ_REL);
        } else if (hashi_tl(root)->llcm_fetch_add(root, counter_off(st->slot), 1, &old) != 0) {
            hashi_log("dimmnet: counter-barrier add at rank %d failed", root);
            return op_fail(op, MPI_ERR_INTERN);
        }
        hashi_dn_stats.counter_barriers++;
        if (old + 1 == op->gen * (uint64_t)op->n) {
            for (int k = 0; k < op->n; k++)
                if (k != op->me && (rc = store(op->member[k], release_off(st->slot), op->gen)) != MPI_SUCCESS)
                    return op_fail(op, rc);
            op->phase = PH_DONE;
            return 1;
        }
        op->phase = PH_WAIT;
    }
    if (!op_reached(op, release_off(st->slot), op->gen))
        return 0;
    op->phase = PH_DONE;
    return 1;
}

/*
 * MPI_COMM_WORLD beyond the flat bound: dissemination on epoch words. In
 * round k rank i stores its barrier epoch into word k of rank (i + 2^k) mod
 * n and waits until its own word k holds at least that epoch; one writer
 * per word and growing epochs make a fast rank's early store of the next
 * epoch harmless.
 */
DN_INLINE int step_dissem(dn_op *op)
{
    while (op->dist < op->n) {
        if (op->round >= DN_BARRIER_ROUNDS)
            return op_fail(op, MPI_ERR_INTERN);   /* 2^32 ranks: not reachable */
        uint64_t off = 8u * (uint64_t)op->round;
        if (op->phase == PH_POST) {
            int rc = store((op->me + op->dist) % op->n, off, op->gen);
            if (rc != MPI_SUCCESS)
                return op_fail(op, rc);
            op->phase = PH_WAIT;
        }
        if (!op_reached(op, off, op->gen))
            return 0;
        op->dist *= 2;
        op->round++;
        op->phase = PH_POST;
    }
    op->phase = PH_DONE;
    return 1;
}


/*
 * The sparse exchange (device.h `exchange`, the v and w forms and the
 * neighbourhood collectives) as a machine: the blocking entry runs it on
 * the blocking ring to its end (dn_exchange), the exchange operation of a
 * nonblocking or persistent call on its communicator's channel, in the
 * queue's order. Per pair, by the block's length (both ends know it): up
 * to slot_max in the slot; from HASHI_COLL_DEVICE_EXCHANGE_READ_MIN offered
 * (its key in the slot; the reader PULLs and acknowledges); in between a
 * message of the call's tag, posted when the run starts (before its turn
 * in the queue: the tag is the run's own) and polled. Phases: POST (our
 * slots, the next rank first), WAIT (the arrivals, the previous rank
 * first; one read at a time), DRAIN (our offered blocks' readers, then
 * the messages), so a run never waits inside a step.
 */

/* Which pairs use the ring and which go as messages, from the block
 * lengths alone (the same on both ends of a pair). */
static void xchg_plan(struct dn_xchg *x, int n, int me)
{
    for (int i = 0; i < n; i++)
        x->to[i] = x->from[i] = -1;
    x->nmid = x->noffer = 0;
    for (int side = 0; side < 2; side++) {
        const struct hashi_device_block *list = side ? x->recvs : x->sends;
        for (int k = 0, m = side ? x->nrecvs : x->nsends; k < m; k++) {
            int p = list[k].peer;
            if (p != me && list[k].bytes > x->slot_max && list[k].bytes < co.exchange_read_min) {
                x->nmid++;
            } else {
                (side ? x->from : x->to)[p] = k;
                x->noffer += !side && p != me && list[k].bytes > x->slot_max;   /* one send per peer */
            }
        }
    }
}

/* Room for the messages and offered blocks xchg_plan found (none: no malloc). */
static int xchg_extra(struct dn_xchg *x)
{
    size_t msgs = (size_t)x->nmid * sizeof *x->msgs, mem = (size_t)x->noffer * sizeof *x->mem;
    x->extra = msgs + mem ? malloc(msgs + mem + (size_t)x->noffer * sizeof *x->readers) : NULL;
    if (msgs + mem && !x->extra)
        return MPI_ERR_NO_MEM;
    /* Pointers first, then the ints (alignment). */
    x->msgs = x->extra;
    x->mem = (struct hashi_tl_mem *)(void *)((char *)x->extra + msgs);
    x->readers = (int *)(void *)((char *)x->extra + msgs + mem);
    return MPI_SUCCESS;
}

/* A run's messages (the pairs between the slots and the reads). */
static void xchg_post_messages(const dn_op *op)
{
    struct dn_xchg *x = op->x;
    x->nmsgs = 0;
    x->msg_error = MPI_SUCCESS;
    if (!x->nmid)
        return;
    uint32_t ctx = hashi_comm_coll_context(x->comm);
    for (int side = 0; side < 2 && x->msg_error == MPI_SUCCESS; side++) {
        const struct hashi_device_block *list = side ? x->recvs : x->sends;
        for (int k = 0, m = side ? x->nrecvs : x->nsends; k < m; k++) {
            const struct hashi_device_block *b = &list[k];
            if (b->peer == op->me || b->bytes <= x->slot_max || b->bytes >= co.exchange_read_min)
                continue;
            struct MPI_ABI_Request **r = &x->msgs[x->nmsgs];
            int rc = side ? hashi_irecv_internal(b->buf, (MPI_Count)b->bytes, MPI_BYTE, b->peer, x->tag, x->comm,
                                                 ctx, r)
                          : hashi_isend_internal(b->buf, (MPI_Count)b->bytes, MPI_BYTE, b->peer, x->tag, x->comm,
                                                 ctx, r);
            if (rc != MPI_SUCCESS) {
                x->msg_error = rc;   /* the ring part still runs: the peers wait for it */
                break;
            }
            x->nmsgs++;
        }
    }
}

/* Start a run: the pair sequences of the pairs on the ring, our own block. */
static void xchg_activate(dn_op *op)
{
    struct dn_xchg *x = op->x;
    op->k = 1;
    op->need = 0;
    op->watch = NULL;
    op->error = MPI_SUCCESS;
    x->posted = x->drained = x->reading = 0;
    for (int i = 0; i < op->n; i++)
        if (i != op->me && (x->to[i] >= 0 || x->from[i] >= 0))
            op->seq[i] = ++op->ring->peer[op->member[i]].seq;
    int me = op->me;
    if (x->to[me] >= 0 && x->from[me] >= 0) {
        const struct hashi_device_block *s = &x->sends[x->to[me]], *r = &x->recvs[x->from[me]];
        memcpy(r->buf, s->buf, s->bytes < r->bytes ? s->bytes : r->bytes);
    }
    op->phase = PH_POST;
}

static void xchg_read_done(void *arg, int status)
{
    struct dn_xchg *x = arg;
    x->read_status = status;
    x->read_done = 1;
}

/* A failure: what is under way still drains (a reader may be reading our
 * block, a message may be moving). */
static int xchg_fail(dn_op *op, int rc)
{
    if (op->error == MPI_SUCCESS)
        op->error = rc;
    op->phase = PH_DRAIN;
    return 0;
}

/* The step: moves the run as far as it goes; 1 once it has completed. */
static int step_exchange(dn_op *op)
{
    struct dn_xchg *x = op->x;
    struct ring *r = op->ring;
    int n = op->n, me = op->me, rc;
    if (op->phase == PH_POST) {
        for (; op->k < n; op->k++) {
            int i = me + op->k < n ? me + op->k : me + op->k - n, w = op->member[i];
            if (x->to[i] < 0)
                continue;
            const struct hashi_device_block *b = &x->sends[x->to[i]];
            if (b->bytes <= x->slot_max) {
                if (!may_post(r, w, op->seq[i], b->bytes, &op->need))
                    return 0;
                if ((rc = ring_write(r, w, op->seq[i], b->buf, b->bytes)) != MPI_SUCCESS)
                    return xchg_fail(op, rc);
                continue;
            }
            struct offer_desc d;
            if (!may_post(r, w, op->seq[i], sizeof d, &op->need))
                return 0;
            struct hashi_tl_mem *mem = &x->mem[x->posted];
            if (hashi_transport_mem_reg(b->buf, b->bytes, mem) != 0)
                return xchg_fail(op, MPI_ERR_NO_MEM);
            hashi_transport_rkey(mem, w, &d.rkey);
            if ((rc = ring_write(r, w, op->seq[i], (const unsigned char *)&d, sizeof d)) != MPI_SUCCESS) {
                hashi_transport_mem_dereg(mem);
                return xchg_fail(op, rc);
            }
            x->readers[x->posted++] = i;
        }
        op->phase = PH_WAIT;
        op->k = 1;
    }
    if (op->phase == PH_WAIT) {
        for (; op->k < n; op->k++) {
            int i = me - op->k >= 0 ? me - op->k : me - op->k + n, w = op->member[i];
            if (x->from[i] < 0)
                continue;
            const struct hashi_device_block *b = &x->recvs[x->from[i]];
            if (!op_arrived(op, r, w, op->seq[i]))
                return 0;
            if (b->bytes <= x->slot_max) {
                memcpy(b->buf, ring_data(r, w, op->seq[i]), b->bytes);
                /* One way: nothing of ours will tell it the slot is free. */
                if (x->to[i] < 0 && (rc = store_word(w, ring_area(r, co.my_index), op->seq[i])) != MPI_SUCCESS)
                    return xchg_fail(op, rc);
                continue;
            }
            if (!x->reading) {
                struct offer_desc d;
                memcpy(&d, ring_data(r, w, op->seq[i]), sizeof d);
                x->read_done = 0;
                rc = hashi_tl(w)->get(w, b->buf, b->bytes, NULL, &d.rkey, 0, xchg_read_done, x);
                if (rc == -EAGAIN)
                    return 0;   /* the transport's queue is full: again at the next poll */
                if (rc != 0) {
                    hashi_log("dimmnet: reading %zu bytes offered by rank %d failed (%d)", b->bytes, w, rc);
                    return xchg_fail(op, MPI_ERR_OTHER);
                }
                x->reading = 1;
            }
            if (!x->read_done)
                return 0;
            x->reading = 0;
            if (x->read_status != 0) {
                hashi_log("dimmnet: reading %zu bytes offered by rank %d failed (%d)", b->bytes, w, x->read_status);
                return xchg_fail(op, MPI_ERR_OTHER);
            }
            /* The ack frees the slot and, with every reader's, the block. */
            if ((rc = store_word(w, ring_area(r, co.my_index), op->seq[i])) != MPI_SUCCESS)
                return xchg_fail(op, rc);
        }
        op->phase = PH_DRAIN;
    }
    /* Our offered blocks stay registered until their readers have them
     * (after an error too); then the messages. A read of ours that an error
     * left under way ends before the buffer is the program's again. */
    if (x->reading && !x->read_done)
        return 0;
    for (; x->drained < x->posted; x->drained++) {
        int i = x->readers[x->drained];
        if (!ring_consumed(r, op->member[i], op->seq[i]))
            return 0;
        hashi_transport_mem_dereg(&x->mem[x->drained]);
    }
    for (; x->nmsgs > 0; x->nmsgs--) {
        struct MPI_ABI_Request *req = x->msgs[x->nmsgs - 1];
        if (!hashi_request_is_complete(req))
            return 0;
        if (req->status.MPI_ERROR != MPI_SUCCESS && x->msg_error == MPI_SUCCESS)
            x->msg_error = req->status.MPI_ERROR;
        hashi_request_free(req);
    }
    if (op->error == MPI_SUCCESS)
        op->error = x->msg_error;
    op->phase = PH_DONE;
    return 1;
}

static void op_pass_on(dn_op *op);

/* Move op as far as it goes; 1 once it has completed. A completed head of
 * its communicator's queue starts the next run there. */
static int op_step(dn_op *op)
{
    int done;
    switch (op->phase) {
    case PH_DONE:
        return 1;
    case PH_IDLE:
    case PH_QUEUED:
        return 0;
    default:
        if (op_watching(op))
            return 0;
        done = op->variant == V_COUNTER    ? step_counter(op)
               : op->variant == V_DISSEM   ? step_dissem(op)
               : op->variant == V_EXCHANGE ? step_exchange(op)
                                           : step_slots(op, op->kind);
    }
    if (done && op->st && op->st->head == op)
        op_pass_on(op);
    return done;
}

/* op, the head of its communicator's queue, has completed: the next run
 * there starts. */
static void op_pass_on(dn_op *op)
{
    struct dn_comm_sync *st = op->st;
    st->head = op->next;
    if (!st->head)
        st->tail = NULL;
    op->next = NULL;
    if (st->head) {
        op_activate(st->head);
        op_step(st->head);
    }
}

/* Start op: at once, or after the runs ahead of it on its communicator's
 * queue (those that share the communicator's state: op->st set). */
static void op_begin(dn_op *op)
{
    struct dn_comm_sync *st = op->st;
    op->next = NULL;
    if (st && st->head) {
        st->tail->next = op;
        st->tail = op;
        op->phase = PH_QUEUED;
        return;
    }
    if (st)
        st->head = st->tail = op;
    op_activate(op);
    op_step(op);
}

static int op_step_pred(void *arg)
{
    return op_step(arg);
}

/* A run through the generic entries: start, wait until done. */
static int run_now(dn_op *op)
{
    op_begin(op);   /* has taken the first step */
    if (op->phase != PH_DONE)
        hashi_progress_wait_until(op_step_pred, op);
    return op->error;
}

/*
 * Blocking runs: the same machines, driven by the caller's wait without the
 * generic entries' dispatch. The operation lives on the caller's stack with
 * only the fields its machine reads set; the first step is taken inline and
 * the wait polls the kind's own instance of the step (step_slots with the
 * kind a constant), not op_step's switch on phase and variant. A run on the
 * blocking ring shares no per-communicator state with the channels' runs,
 * so it never queues (as before the machines). A barrier on the
 * communicator's counter or world's epochs does share it: it goes through
 * the queue when a nonblocking run is there (shared_barrier), and otherwise
 * is the queue's head while it runs, so that a run started meanwhile (a
 * schedule's later round) waits behind it as the order requires.
 */
/* The wait's predicate: the watched word alone while it has not moved (no
 * registers to save on that path), else the kind's step. */
#define BLK_STEP(name, step)                                                                                  \
    static __attribute__((noinline)) int name##_step(dn_op *op)                                               \
    {                                                                                                         \
        return step;                                                                                          \
    }                                                                                                         \
    static int name(void *arg)                                                                                \
    {                                                                                                         \
        return !op_watching(arg) && name##_step(arg);                                                         \
    }
BLK_STEP(blk_barrier, step_slots(op, HASHI_DEVICE_OP_BARRIER))
BLK_STEP(blk_raw, step_slots(op, OP_RAW))
BLK_STEP(blk_bcast, step_slots(op, HASHI_DEVICE_OP_BCAST))
BLK_STEP(blk_allreduce, step_slots(op, HASHI_DEVICE_OP_ALLREDUCE))
BLK_STEP(blk_reduce, step_slots(op, HASHI_DEVICE_OP_REDUCE))
BLK_STEP(blk_alltoall, step_slots(op, HASHI_DEVICE_OP_ALLTOALL))
BLK_STEP(blk_allgather, step_slots(op, HASHI_DEVICE_OP_ALLGATHER))
BLK_STEP(blk_gather, step_slots(op, HASHI_DEVICE_OP_GATHER))
BLK_STEP(blk_scatter, step_slots(op, HASHI_DEVICE_OP_SCATTER))
BLK_STEP(blk_scan, step_slots(op, HASHI_DEVICE_OP_SCAN))
BLK_STEP(blk_exscan, step_slots(op, HASHI_DEVICE_OP_EXSCAN))
BLK_STEP(blk_reduce_scatter, step_slots(op, HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK))
BLK_STEP(blk_counter, step_counter(op))
BLK_STEP(blk_dissem, step_dissem(op))
BLK_STEP(blk_exchange, step_exchange(op))
#undef BLK_STEP

/* A blocking run on the blocking ring of flat communicator c (flat_comm
 * pointed co.member at its members), with co.member and co.seq as its
 * arrays; kind is a constant at every call. */
DN_INLINE int run_blocking(int kind, const struct MPI_ABI_Comm *c, const void *send, void *recv, size_t bytes,
                           size_t each, size_t count, hashi_op_kernel_fn fn, int root)
{
    dn_op op;   /* what step_slots reads: set here and by ring_activate */
    op.kind = kind;
    op.ring = &co.blk;
    op.n = c->size;
    op.me = c->rank;
    op.root = root;
    op.member = co.member;
    op.seq = co.seq;
    op.send = send;
    op.recv = recv;
    op.bytes = bytes;
    op.each = each;
    op.count = count;
    op.fn = fn;
    ring_activate(&op, kind);
    if (!step_slots(&op, kind))
        hashi_progress_wait_until(kind == HASHI_DEVICE_OP_BARRIER     ? blk_barrier
                                  : kind == HASHI_DEVICE_OP_BCAST     ? blk_bcast
                                  : kind == HASHI_DEVICE_OP_ALLREDUCE ? blk_allreduce
                                  : kind == HASHI_DEVICE_OP_REDUCE    ? blk_reduce
                                  : kind == HASHI_DEVICE_OP_ALLTOALL  ? blk_alltoall
                                  : kind == HASHI_DEVICE_OP_ALLGATHER ? blk_allgather
                                  : kind == HASHI_DEVICE_OP_GATHER    ? blk_gather
                                  : kind == HASHI_DEVICE_OP_SCATTER   ? blk_scatter
                                  : kind == HASHI_DEVICE_OP_SCAN      ? blk_scan
                                  : kind == HASHI_DEVICE_OP_EXSCAN    ? blk_exscan
                                  : kind == HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK ? blk_reduce_scatter
                                                                      : blk_raw,
                                  &op);
    return op.error;
}

/* Every member's contribution to every other: ours for member i is `bytes`
 * at data + i * each (each 0: the same for all). On return co.seq holds the
 * pair sequences and every peer's data is in our LLCM (data_from). */
static int exchange(const struct MPI_ABI_Comm *c, const unsigned char *data, size_t each, size_t bytes)
{
    if (!data)
        return run_blocking(HASHI_DEVICE_OP_BARRIER, c, NULL, NULL, 0, 0, 0, NULL, -1);
    return run_blocking(OP_RAW, c, data, NULL, bytes, each, 0, NULL, -1);
}

/* A barrier sharing c's state: the counter (flat c with a slot) or the
 * world's dissemination, on c's queue behind its nonblocking runs. */
static __attribute__((noinline)) int shared_barrier_queued(struct MPI_ABI_Comm *c, struct dn_comm_sync *st,
                                                           int variant)
{
    dn_op op = { .kind = HASHI_DEVICE_OP_BARRIER, .variant = variant, .st = st, .n = c->size,
                 .me = c->rank, .member = co.member };
    return run_now(&op);
}

DN_INLINE int shared_barrier(struct MPI_ABI_Comm *c, struct dn_comm_sync *st, int variant)
{
    if (__builtin_expect(st->head != NULL, 0))
        return shared_barrier_queued(c, st, variant);   /* behind c's nonblocking runs */
    dn_op op;   /* what step_counter / step_dissem read: set here and by op_activate */
    op.kind = HASHI_DEVICE_OP_BARRIER;
    op.variant = variant;
    op.st = st;
    op.n = c->size;
    op.me = c->rank;
    op.member = co.member;
    op.next = NULL;
    st->head = st->tail = &op;
    op_activate(&op);
    if (!(variant == V_COUNTER ? step_counter(&op) : step_dissem(&op)))
        hashi_progress_wait_until(variant == V_COUNTER ? blk_counter : blk_dissem, &op);
    op_pass_on(&op);   /* still the head: whatever started meanwhile runs now */
    return op.error;
}

/* Fan-in to root, fan-out from it: one flag each way per member. The root
 * leaves first, so an oversubscribed rooted collective that follows (a
 * broadcast from that root) has its data stored before the others run
 * again; the flat exchange and the counter instead release the last rank
 * to arrive first. Pair sequences move between the root and each member
 * only, on both sides. */
static int rooted_barrier(const struct MPI_ABI_Comm *c, int root)
{
    int n = c->size, me = c->rank, rc = MPI_SUCCESS;
    if (me != root) {
        int w = co.member[root];
        uint64_t seq = ++co.blk.peer[w].seq;
        rc = post(w, seq, NULL, 0);
        if (rc == MPI_SUCCESS)
            wait_arrivals(&w, &seq, 1, -1);
        return rc;
    }
    for (int i = 0; i < n; i++)
        if (i != root)
            co.seq[i] = ++co.blk.peer[co.member[i]].seq;
    wait_arrivals(co.member, co.seq, n, root);
    for (int k = 1; k < n && rc == MPI_SUCCESS; k++) {
        int i = (root + k) % n;
        rc = post(co.member[i], co.seq[i], NULL, 0);
    }
    return rc;
}

/* ------------------------------------------------------------ counter barrier */

/*
 * Called by every blocking device collective on entry (before it may
 * decline: every member sees the same sequence of calls on c, so all
 * agree). A barrier that releases the last arriver first makes a broadcast
 * or reduction that follows wait for its root to be scheduled again (4
 * ranks on 2 cores, 8 B bcast after a barrier: 2.4-2.7 against 0.4-0.5 us
 * when the root leaves first); a counter barrier saves about 1 us over the
 * rooted one otherwise. So the next barrier on c is rooted at that root
 * when the last one was followed by a rooted collective, else a counter
 * barrier.
 */
static void follows_barrier(struct MPI_ABI_Comm *c, int root)
{
    struct dn_comm_sync *st = c->device_state;
    if (st && st->after_barrier) {
        st->after_barrier = 0;
        st->next_root = root;
    }
}

/* At the communicator's first blocking barrier: a flat exchange (itself a
 * barrier) of the members' free-slot masks; every member takes the lowest
 * slot free on all. The slot's words are zero: zeroed at start-up and when
 * the last communicator holding them went (comm_free below), after which
 * nobody writes them: every member's last barrier on it had completed. */
static int counter_setup(struct MPI_ABI_Comm *c, struct dn_comm_sync *st)
{
    uint64_t mask = co.sync_free;
    int rc = exchange(c, (const unsigned char *)&mask, 0, sizeof mask);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < c->size; i++)
        if (i != c->rank) {
            uint64_t theirs;
            memcpy(&theirs, data_from(co.member[i], co.seq[i]), sizeof theirs);
            mask &= theirs;
        }
    st->agreed = 1;
    st->slot = mask ? __builtin_ctzll(mask) : -1;
    st->next_root = -1;
    if (st->slot >= 0)
        co.sync_free &= ~(UINT32_C(1) << st->slot);
    else
        HASHI_DEBUG(1, "dimmnet: no counter-barrier slot free on every member of a communicator of %d ranks: "
                    "its barriers stay rooted", c->size);
    return MPI_SUCCESS;
}

static void dn_comm_free(struct MPI_ABI_Comm *c)
{
    struct dn_comm_sync *st = c->device_state;
    c->device_state = NULL;
    if (st && st->slot >= 0 && co.llcm) {
        /* Ours alone now (see counter_setup): clean for the next holder. */
        __atomic_store_n((uint64_t *)(void *)(co.llcm + release_off(st->slot)), 0, __ATOMIC_RELAXED);
        __atomic_store_n((uint64_t *)(void *)(co.llcm + counter_off(st->slot)), 0, __ATOMIC_RELAXED);
        co.sync_free |= UINT32_C(1) << st->slot;
    }
    free(st);
}

/* The counter barrier on flat communicator c if it has (or now gets) a
 * slot, rooted instead where follows_barrier says so;
 * HASHI_DEVICE_COLL_DECLINE if c cannot have a slot. */
static int try_counter_barrier(struct MPI_ABI_Comm *c)
{
    struct dn_comm_sync *st = comm_state(c);
    int rc;
    if (!st)
        return MPI_ERR_NO_MEM;
    if (!st->agreed)
        rc = counter_setup(c, st);   /* a barrier too */
    else if (st->slot < 0)
        return HASHI_DEVICE_COLL_DECLINE;
    else
        rc = st->next_root >= 0 ? rooted_barrier(c, st->next_root) : shared_barrier(c, st, V_COUNTER);
    st->after_barrier = 1;
    return rc;
}

enum { BARRIER_FLAT, BARRIER_ROOTED, BARRIER_COUNTER, BARRIER_AUTO };

/* auto: the counter while the node's ranks share cores (every rank of the
 * node decides alike: hashi_job.oversubscribed comes from the same modex
 * data), falling back to rooted where a communicator has no counter slot.
 * With a core each, the flat exchange is one step (2 ranks under chrt: 0.28
 * against 0.55 us rooted). Sharing cores, a rooted barrier hands each core
 * over about three times per barrier (docs/dimmnet.md, "Counter barrier"),
 * the counter about once per rank. */
static int barrier_kind(void)
{
    if (co.barrier_alg != BARRIER_AUTO)
        return co.barrier_alg;
    return hashi_job.oversubscribed ? BARRIER_COUNTER : BARRIER_FLAT;
}

/* A barrier on a flat communicator. */
static int flat_barrier(struct MPI_ABI_Comm *c)
{
    int kind = barrier_kind();
    if (kind == BARRIER_COUNTER) {
        int rc = co.sync_ok ? try_counter_barrier(c) : HASHI_DEVICE_COLL_DECLINE;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return rc;
        kind = hashi_job.oversubscribed ? BARRIER_ROOTED : BARRIER_FLAT;
    }
    return kind == BARRIER_ROOTED ? rooted_barrier(c, 0) : exchange(c, NULL, 0, 0);
}

static int dn_barrier(struct MPI_ABI_Comm *c)
{
    int rc;
    struct dn_comm_sync *st;
    if (flat_comm(c))
        rc = flat_barrier(c);
    else if (c == &hashi_comm_world)
        rc = (st = comm_state(c)) ? shared_barrier(c, st, V_DISSEM) : MPI_ERR_NO_MEM;
    else
        return HASHI_DEVICE_COLL_DECLINE;
    if (rc == MPI_SUCCESS)
        hashi_dn_stats.barriers++;
    return rc;
}

static int bcast_offered(void *buf, size_t bytes, int root, struct MPI_ABI_Comm *c);
static int bcast_tree(void *buf, size_t bytes, int root, struct MPI_ABI_Comm *c);
static int bcast_staged(void *buf, size_t bytes, int root, struct MPI_ABI_Comm *c);

static int dn_bcast(void *buf, size_t bytes, int root, struct MPI_ABI_Comm *c)
{
    follows_barrier(c, root);
    if (!flat_comm(c))
        return HASHI_DEVICE_COLL_DECLINE;
    int n = c->size, rc;
    if (bytes > co.max_bytes)
        rc = n == 2                ? bcast_offered(buf, bytes, root, c)
             : bytes <= co.stage_max ? bcast_staged(buf, bytes, root, c)
                                     : bcast_tree(buf, bytes, root, c);
    else
        rc = run_blocking(HASHI_DEVICE_OP_BCAST, c, buf, buf, bytes, 0, 0, NULL, root);
    if (rc == MPI_SUCCESS)
        hashi_dn_stats.coll_bcasts++;
    return rc;
}

struct get_wait {
    int done, status;
};

static void get_done(void *arg, int status)
{
    struct get_wait *g = arg;
    g->status = status;
    g->done = 1;
}

static int get_finished(void *arg)
{
    return ((const struct get_wait *)arg)->done;
}

/* Scratch for contributions read from peers (kept: reduces repeat). */
static void *reduce_scratch(size_t bytes)
{
    if (bytes > co.scratch_len) {
        void *p = realloc(co.scratch, bytes);
        if (!p)
            return NULL;
        co.scratch = p;
        co.scratch_len = bytes;
    }
    return co.scratch;
}

/* Bytes [offset, offset + bytes) of the buffer member i (comm rank) offers
 * us for pair sequence co.seq[i], once its key arrived, read single-copy
 * into dst, then acknowledged: that frees the slot and, with every reader's
 * ack, i's buffer. Our own CMA read leaves the data in our cache, where a
 * pushed message would leave it dirty in the sender's. */
static int read_offered(int i, void *dst, size_t bytes, uint64_t offset)
{
    int w = co.member[i];
    uint64_t seq = co.seq[i];
    wait_arrivals(&co.member[i], &co.seq[i], 1, -1);
    struct offer_desc d;
    memcpy(&d, data_from(w, seq), sizeof d);
    struct get_wait g = { 0, 0 };
    int rc;
    while ((rc = hashi_tl(w)->get(w, dst, bytes, NULL, &d.rkey, offset, get_done, &g)) == -EAGAIN)
        hashi_dn_progress();
    if (rc == 0 && !g.done)
        hashi_progress_wait_until(get_finished, &g);
    if (rc == 0)
        rc = g.status;
    if (rc != 0) {
        hashi_log("dimmnet: reading %zu bytes offered by rank %d failed (%d)", bytes, w, rc);
        return MPI_ERR_OTHER;
    }
    return store(w, area_off(co.my_index), seq);
}

/* The key to registered mem into the slot of reader i (comm rank), pair
 * sequence co.seq[i]. */
static int post_key(const struct hashi_tl_mem *mem, int i)
{
    int w = co.member[i];
    struct offer_desc d;
    hashi_transport_rkey(mem, w, &d.rkey);
    return post(w, co.seq[i], (const unsigned char *)&d, sizeof d);
}

/* Offer our send buffer to the members in readers[] (comm ranks; co.seq
 * holds the pair sequences): register it, post its key into each reader's
 * slot; *posted counts the readers told. withdraw() waits until each of them
 * has read it (acknowledged) and deregisters. */
static int offer(const unsigned char *mine, size_t bytes, const int *readers, int nreaders, struct hashi_tl_mem *mem,
                 int *posted)
{
    *posted = 0;
    if (hashi_transport_mem_reg((void *)(uintptr_t)mine, bytes, mem) != 0)
        return MPI_ERR_NO_MEM;   /* not a decline: the readers wait for us */
    int rc = MPI_SUCCESS;
    for (int k = 0; k < nreaders && rc == MPI_SUCCESS; k++) {
        rc = post_key(mem, readers[k]);
        if (rc == MPI_SUCCESS)
            ++*posted;
    }
    return rc;
}

static void withdraw(const int *readers, const uint64_t *seq, int posted, struct hashi_tl_mem *mem)
{
    for (int k = 0; k < posted; k++) {
        struct consumed_wait cw = { co.member[readers[k]], seq[readers[k]] };
        if (!consumed(&cw))
            hashi_progress_wait_until(consumed, &cw);
    }
    hashi_transport_mem_dereg(mem);
}

/* Member i's (comm rank) offered contribution, read into dst. */
static const unsigned char *contribution(int i, unsigned char *dst, size_t bytes, int *rc)
{
    *rc = read_offered(i, dst, bytes, 0);
    return dst;
}

/* Every other member of c as a reader of our buffer, the next rank first
 * (the order the slots are posted), with the pair sequence of this
 * collective in co.seq; returns co.readers. */
static int *all_readers(const struct MPI_ABI_Comm *c)
{
    int n = c->size;
    for (int k = 1; k < n; k++) {
        int i = (c->rank + k) % n;
        co.seq[i] = ++co.blk.peer[co.member[i]].seq;
        co.readers[k - 1] = i;
    }
    return co.readers;
}

/* Larger than a slot (the caller offers those only where the reads beat
 * its schedules, select.c): the root offers its buffer, every other member
 * reads it straight into its own (one copy, where the eager message copies
 * into the ring and out again) and acknowledges; the root returns once every
 * reader has read. From 3 members, bcast_tree. */
static int bcast_offered(void *buf, size_t bytes, int root, struct MPI_ABI_Comm *c)
{
    if (c->rank != root) {
        co.seq[root] = ++co.blk.peer[co.member[root]].seq;
        return read_offered(root, buf, bytes, 0);
    }
    int *readers = all_readers(c), posted;
    struct hashi_tl_mem mem;
    int rc = offer(buf, bytes, readers, c->size - 1, &mem, &posted);
    withdraw(readers, co.seq, posted, &mem);
    return rc;
}

/* Before we write our stage again: every member that was told to read its
 * last content has acknowledged (or shown by a later pair collective that it
 * is past it). */
static void stage_claim(void)
{
    for (int k = 0; k < co.stage_readers; k++) {
        struct consumed_wait cw = { co.stage_reader[k], co.stage_seq[k] };
        if (!consumed(&cw))
            hashi_progress_wait_until(consumed, &cw);
    }
    co.stage_readers = 0;
}

/* Tells member i (comm rank) that our stage holds its data, with the next
 * pair sequence (co.seq[i]), and remembers it as a reader stage_claim
 * waits for. */
static int stage_publish(int i)
{
    int w = co.member[i];
    co.seq[i] = ++co.blk.peer[w].seq;
    co.stage_reader[co.stage_readers] = w;
    co.stage_seq[co.stage_readers++] = co.seq[i];
    return post(w, co.seq[i], NULL, 0);
}

/* Member i's stage once its flag for co.seq[i] has arrived (its content
 * is ours to read until stage_release). */
static const unsigned char *stage_await(int i)
{
    int w = co.member[i];
    wait_arrivals(&co.member[i], &co.seq[i], 1, -1);
    size_t size;
    return hashi_tl(w)->stage(w, &size);
}

/* We are done with member i's stage: the acknowledgement its stage_claim waits for. */
static int stage_release(int i)
{
    return store(co.member[i], area_off(co.my_index), co.seq[i]);
}

/*
 * From 3 members, up to HASHI_COLL_DEVICE_BCAST_STAGE_MAX bytes, every
 * member on emu: the root copies the data into its stage and raises each
 * member's flag; each member copies it out of the root's stage, in place
 * through the shared mapping, and acknowledges. Two plain copies where the
 * tree of reads pays a CMA read per member (about 2.4 us before any data
 * moves) and a hand-over per round, and the readers copy at once without
 * slowing each other as concurrent CMA reads of one process do. The root
 * returns without waiting for the acknowledgements: its next staged
 * broadcast waits for them before writing the stage again. (At 2 members
 * one CMA read of the root's clean buffer beats copying through lines the
 * root has just dirtied: 64 KiB 7.3 against 14 us.)
 */
static int bcast_staged(void *buf, size_t bytes, int root, struct MPI_ABI_Comm *c)
{
    int n = c->size, rc = MPI_SUCCESS;
    if (c->rank != root) {
        co.seq[root] = ++co.blk.peer[co.member[root]].seq;
        memcpy(buf, stage_await(root), bytes);
        hashi_dn_stats.staged_bcasts++;
        return stage_release(root);
    }
    stage_claim();
    memcpy(co.stage, buf, bytes);
    hashi_dn_stats.staged_bcasts++;
    for (int k = 1; k < n && rc == MPI_SUCCESS; k++)
        rc = stage_publish((root + k) % n);
    return rc;
}

/*
 * From 3 members: a binomial tree of reads, counted from the root (vrank v).
 * v > 0 reads its parent v - hb(v), hb the highest bit of v, then offers its
 * buffer to its children v + m, m = 2 hb, 4 hb, ... < n (the root: m = 1,
 * 2, 4, ...), one after the other: each child is told once the previous one
 * has read. So no buffer has two readers at a time: concurrent reads of one
 * process's memory run at about half speed each here (4 ranks, 64 KiB: 30
 * us flat), and the readers of a round (v with one bit length) alternate
 * between the cores that round-robin binding gives ranks in turn (below
 * HASHI_COLL_DEVICE_BCAST_STAGE_MAX bcast_staged serves instead).
 */
static int bcast_tree(void *buf, size_t bytes, int root, struct MPI_ABI_Comm *c)
{
    int n = c->size, v = (c->rank - root + n) % n, rc = MPI_SUCCESS, m = 1;
    if (v > 0) {
        while (m * 2 <= v)
            m *= 2;
        int parent = (v - m + root) % n;
        co.seq[parent] = ++co.blk.peer[co.member[parent]].seq;
        rc = read_offered(parent, buf, bytes, 0);
        m *= 2;
    }
    if (rc != MPI_SUCCESS || v + m >= n)
        return rc;
    struct hashi_tl_mem mem;
    if (hashi_transport_mem_reg(buf, bytes, &mem) != 0)
        return MPI_ERR_NO_MEM;
    int *children = co.readers, posted = 0;
    for (; v + m < n && rc == MPI_SUCCESS; m *= 2) {
        int child = (v + m + root) % n, w = co.member[child];
        co.seq[child] = ++co.blk.peer[w].seq;
        rc = post_key(&mem, child);
        if (rc != MPI_SUCCESS)
            break;
        children[posted++] = child;
        struct consumed_wait cw = { w, co.seq[child] };
        if (!consumed(&cw))
            hashi_progress_wait_until(consumed, &cw);
    }
    withdraw(children, co.seq, posted, &mem);
    return rc;
}

/* Whether n members of a communicator put more than two on each CPU the
 * node's ranks may use (a local choice: the order of one's own reads needs
 * no agreement). */
static int crowded(int n)
{
    return hashi_job.host_cpus > 0 && n > 2 * hashi_job.host_cpus;
}

/* The members a collective still reads from (comm ranks), in the order we
 * prefer: the previous rank first, so that when every member runs at once
 * each buffer has one reader. */
struct sources {
    int *pending;
    int n, found;
    int in_order;          /* take them strictly in that order */
};

static void sources_init(struct sources *src, const struct MPI_ABI_Comm *c, int in_order)
{
    src->pending = co.sources;
    src->n = 0;
    src->in_order = in_order;
    for (int k = 1; k < c->size; k++)
        src->pending[src->n++] = (c->rank - k + c->size) % c->size;
}

/* The first pending member whose flag (for co.seq) has arrived, in found. */
static int source_ready(void *arg)
{
    struct sources *src = arg;
    for (int k = 0; k < (src->in_order ? 1 : src->n); k++) {
        int i = src->pending[k];
        if (load(ring_slot(&co.blk, co.local_index[co.member[i]], co.seq[i])) >= co.seq[i]) {
            src->found = k;
            return 1;
        }
    }
    return 0;
}

/* The next member to read from: the first in our order that is ready,
 * waiting only when none is (unless in_order). Sharing cores, a peer that
 * has not run yet then does not hold up the copies from those that have
 * (8 ranks on 2 cores, alltoall 64 KiB: 349 -> 311 us). */
static int next_source(struct sources *src)
{
    if (!source_ready(src))
        hashi_progress_wait_until(source_ready, src);
    int i = src->pending[src->found];
    src->n--;
    memmove(src->pending + src->found, src->pending + src->found + 1,
            (size_t)(src->n - src->found) * sizeof *src->pending);
    return i;
}

/* Alltoall (each = blk) and allgather (each = 0) larger than a slot: every
 * member offers its send buffer to all others and reads its block of each
 * peer's (at me * each) straight into recvbuf, all members copying at once;
 * one copy per block, no intermediate ring. */
static int blocks_offered(const unsigned char *sendbuf, size_t sendbytes, unsigned char *recvbuf, size_t each,
                          size_t blk, struct MPI_ABI_Comm *c)
{
    int n = c->size, me = c->rank, posted;
    int *readers = all_readers(c);
    struct hashi_tl_mem mem;
    int rc = offer(sendbuf, sendbytes, readers, n - 1, &mem, &posted);
    /* In order, unless more than two members share each core: CMA reads of
     * one process slow each other down, and taking peers out of turn makes
     * two readers of one buffer likelier (4 ranks on 2 cores, alltoall
     * 256 KiB: 235-253 in order, 247-268 not; an allgather's readers all
     * read the same pages). With more members per core, waiting for the
     * one in turn costs more hand-overs than that (8 ranks: above). */
    struct sources src;
    sources_init(&src, c, each == 0 || !crowded(n));
    while (src.n > 0 && rc == MPI_SUCCESS) {
        int i = next_source(&src);
        rc = read_offered(i, recvbuf + (size_t)i * blk, blk, (uint64_t)me * each);
    }
    /* Our own block last: the peers' acks come in meanwhile (first or last
     * measured alike at 2 ranks). */
    if (rc == MPI_SUCCESS)
        memcpy(recvbuf + (size_t)me * blk, sendbuf + (size_t)me * each, blk);
    withdraw(readers, co.seq, posted, &mem);
    return rc;
}

/*
 * From 3 members, where what a member hands the others fits its stage
 * (co.blocks_stage_max): an alltoall's blocks for the others (each = blk;
 * the block for the member k ranks on at (k - 1) * blk) or an allgather's
 * one block (each = 0). Each member copies them into its stage and raises
 * the others' flags; each member copies its block out of every peer's stage
 * in place, as their flags arrive, and acknowledges. No member waits for its
 * readers: the send buffer is free once staged, and the next write of the
 * stage waits for their acks (stage_claim). Plain copies, where a CMA read
 * costs about 2.4 us before any data and concurrent reads of one process
 * slow each other down (4 ranks on 2 cores, alltoall 16 KiB: 24 -> 17 us;
 * from 64 KiB the reads win again: docs/collectives.md).
 */
static int blocks_staged(const unsigned char *sendbuf, unsigned char *recvbuf, size_t each, size_t blk,
                         struct MPI_ABI_Comm *c)
{
    int n = c->size, me = c->rank, rc = MPI_SUCCESS;
    stage_claim();
    if (each == 0)
        memcpy(co.stage, sendbuf, blk);
    for (int k = 1; k < n && each; k++)
        memcpy(co.stage + (size_t)(k - 1) * blk, sendbuf + (size_t)((me + k) % n) * each, blk);
    for (int k = 1; k < n && rc == MPI_SUCCESS; k++)
        rc = stage_publish((me + k) % n);
    if (rc != MPI_SUCCESS)
        return rc;
    if (sendbuf + (size_t)me * each != recvbuf + (size_t)me * blk)
        memcpy(recvbuf + (size_t)me * blk, sendbuf + (size_t)me * each, blk);
    struct sources src;
    sources_init(&src, c, 0);
    while (src.n > 0 && rc == MPI_SUCCESS) {
        int i = next_source(&src);
        memcpy(recvbuf + (size_t)i * blk, stage_await(i) + (size_t)((me - i + n) % n - 1) * each, blk);
        rc = stage_release(i);
    }
    return rc;
}

/* The kernel for a reduction the device takes: a predefined op on an
 * unpadded type (the kernels step by the extent). User functions take the
 * generic path: it hands them the program's datatype, which a device never
 * sees. NULL: decline. */
static hashi_op_kernel_fn reduction_kernel(MPI_Datatype type, MPI_Op op, MPI_Count count, size_t *bytes)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    const struct MPI_ABI_Op *o = hashi_op_get(op);
    if (!t || !o || !o->predefined || t->size != hashi_type_extent(t))
        return NULL;
    *bytes = (size_t)hashi_type_bytes(t, count);
    return hashi_op_kernel((enum hashi_op_index)o->index, t->basic_type);
}

/* The start of every blocking reduction: the barrier bookkeeping (root:
 * the call's root, -1 for none), then the kernel if the device takes the
 * call on this communicator; NULL: decline. */
static hashi_op_kernel_fn reduction_start(struct MPI_ABI_Comm *c, int root, MPI_Datatype type, MPI_Op op,
                                          MPI_Count count, size_t *bytes)
{
    follows_barrier(c, root);
    hashi_op_kernel_fn fn = reduction_kernel(type, op, count, bytes);
    return fn && flat_comm(c) ? fn : NULL;
}

/* Elements [first, first + len) of count: member i's segment of n. */
static void segment(size_t count, int n, int i, size_t *first, size_t *len)
{
    *first = count * (size_t)i / (size_t)n;
    *len = count * (size_t)(i + 1) / (size_t)n - *first;
}

/*
 * From 3 members and HASHI_COLL_DEVICE_SEGMENTS_MIN: a reduce-scatter, then
 * an allgather (root < 0) or a gather to the root, all by reads. Member r
 * owns segment r of the vector: it reads segment r of each peer's send
 * buffer (peers r - 1, r - 2, ...: at any moment each buffer has one reader)
 * and reduces it into its segment; then the members read each other's
 * finished segments (allreduce), or the root reads them all. A member reads
 * 2(n - 1)/n of the vector and reduces (n - 1)/n, where reading every whole
 * vector (or a tree's root) costs n - 1 (log2 n) of each; 4 ranks on 2 cores,
 * 1 MiB allreduce: docs/collectives.md. One owner computes each segment, so
 * an allreduce's members hold bit-identical results.
 */
static int reduce_segments(const unsigned char *mine, unsigned char *out, size_t count, size_t elem,
                           hashi_op_kernel_fn fn, int root, struct MPI_ABI_Comm *c)
{
    int n = c->size, me = c->rank, all = root < 0, posted_in, posted_out = 0;
    size_t first, len;
    segment(count, n, me, &first, &len);
    size_t seg_bytes = len * elem;
    /* Scratch: where the reads land, then (a reduce's non-root, whose
     * recvbuf need not exist) our segment. */
    unsigned char *tmp = reduce_scratch(2 * seg_bytes);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    unsigned char *acc = all || me == root ? out + first * elem : tmp + seg_bytes;
    int *readers = all_readers(c);
    memcpy(co.seq_in, co.seq, (size_t)n * sizeof *co.seq);
    struct hashi_tl_mem in_mem, out_mem;
    int rc = offer(mine, count * elem, readers, n - 1, &in_mem, &posted_in);
    if (rc == MPI_SUCCESS && acc != mine + first * elem)   /* a root's MPI_IN_PLACE: there already */
        memcpy(acc, mine + first * elem, seg_bytes);
    for (int k = 1; k < n && rc == MPI_SUCCESS; k++) {
        int i = (me - k + n) % n;
        rc = read_offered(i, tmp, seg_bytes, first * elem);
        if (rc == MPI_SUCCESS)
            fn(tmp, acc, len);
    }
    if (rc == MPI_SUCCESS && all) {
        readers = all_readers(c);
        rc = offer(out, count * elem, readers, n - 1, &out_mem, &posted_out);
        for (int k = 1; k < n && rc == MPI_SUCCESS; k++) {
            int i = (me - k + n) % n;
            segment(count, n, i, &first, &len);
            rc = read_offered(i, out + first * elem, len * elem, first * elem);
        }
        withdraw(readers, co.seq, posted_out, &out_mem);
    } else if (rc == MPI_SUCCESS && me != root) {
        co.seq[root] = ++co.blk.peer[co.member[root]].seq;
        rc = offer(acc, seg_bytes, &root, 1, &out_mem, &posted_out);
        withdraw(&root, co.seq, posted_out, &out_mem);
    } else if (rc == MPI_SUCCESS) {
        /* The root: member i's segment is only written once i has read
         * ours from its place in the root's buffer (MPI_IN_PLACE). */
        for (int k = 1; k < n && rc == MPI_SUCCESS; k++) {
            int i = (me - k + n) % n;
            co.seq[i] = ++co.blk.peer[co.member[i]].seq;
            segment(count, n, i, &first, &len);
            rc = read_offered(i, out + first * elem, len * elem, 0);
        }
    }
    /* Our send buffer's readers, by the sequences of the first step (the
     * readers list is the same). */
    withdraw(readers, co.seq_in, posted_in, &in_mem);
    return rc;
}

/*
 * Allreduce from 3 members, reduce from 4, vectors that fit the stage
 * (co.reduce_stage_max; the rule is select.c's): every
 * member copies its vector into its stage and raises the others' flags;
 * member r owns segment r (as in reduce_segments) and reduces segment r of
 * each peer's stage, in place through the shared mapping, into segment r of
 * its own stage (nobody else reads that one), in a fixed order; then it
 * raises the flags again and the root (reduce) or every member (allreduce)
 * copies each finished segment out of its owner's stage. Plain loads and
 * copies where reduce_tree and Rabenseifner pay CMA reads or rendezvous and
 * a hand-over of the shared cores per round; each member reduces (n - 1)/n
 * of a vector, and one owner per segment keeps an allreduce's results
 * bit-identical everywhere. No member waits for its readers: the next write
 * of its stage does (stage_claim).
 */
static int reduce_staged(const unsigned char *mine, unsigned char *out, size_t count, size_t elem,
                         hashi_op_kernel_fn fn, int root, struct MPI_ABI_Comm *c)
{
    int n = c->size, me = c->rank, all = root < 0, rc = MPI_SUCCESS;
    size_t first, len;
    stage_claim();
    memcpy(co.stage, mine, count * elem);
    for (int k = 1; k < n && rc == MPI_SUCCESS; k++)
        rc = stage_publish((me + k) % n);
    segment(count, n, me, &first, &len);
    unsigned char *acc = co.stage + first * elem;
    for (int k = 1; k < n && rc == MPI_SUCCESS; k++) {
        int i = (me - k + n) % n;
        fn(stage_await(i) + first * elem, acc, len);
        rc = stage_release(i);
    }
    if (rc != MPI_SUCCESS)
        return rc;
    /* Our segment is final: tell whoever copies it. */
    if (!all && me != root)
        return stage_publish(root);
    for (int k = 1; k < n && all && rc == MPI_SUCCESS; k++)
        rc = stage_publish((me + k) % n);
    memcpy(out + first * elem, acc, len * elem);
    if (!all)
        for (int k = 1; k < n; k++)
            co.seq[(me + k) % n] = ++co.blk.peer[co.member[(me + k) % n]].seq;
    struct sources src;
    sources_init(&src, c, 0);
    while (src.n > 0 && rc == MPI_SUCCESS) {
        int i = next_source(&src);
        segment(count, n, i, &first, &len);
        memcpy(out + first * elem, stage_await(i) + first * elem, len * elem);
        rc = stage_release(i);
    }
    return rc;
}

/*
 * Flat, one step: every member's contribution to every other, in its slot
 * (up to max_bytes) or, larger, offered in place: each member reads every
 * other's vector (from 3 members and HASHI_COLL_DEVICE_SEGMENTS_MIN,
 * reduce_segments). Every rank
 * computes x0 op (x1 op (... op x(n-1))): the kernel does inout = in op
 * inout, so rank order holds and all results are bit-identical.
 */
static int dn_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                        struct MPI_ABI_Comm *c)
{
    size_t bytes = 0;
    hashi_op_kernel_fn fn = reduction_start(c, -1, type, op, count, &bytes);
    if (!fn)
        return HASHI_DEVICE_COLL_DECLINE;
    const unsigned char *mine = sendbuf;
    unsigned char *acc = recvbuf;
    int n = c->size, me = c->rank, rc = MPI_SUCCESS;
    if (bytes <= co.max_bytes) {
        rc = run_blocking(HASHI_DEVICE_OP_ALLREDUCE, c, mine, acc, bytes, 0, (size_t)count, fn, -1);
        if (rc == MPI_SUCCESS)
            hashi_dn_stats.coll_allreduces++;
        return rc;
    }
    if (n > 2 && bytes <= co.reduce_stage_max && (size_t)count >= (size_t)n) {
        rc = reduce_staged(mine, acc, (size_t)count, bytes / (size_t)count, fn, -1, c);
        if (rc == MPI_SUCCESS)
            hashi_dn_stats.coll_allreduces++;
        return rc;
    }
    if (n > 2 && co.segments_min && bytes >= co.segments_min && (size_t)count >= (size_t)n) {
        rc = reduce_segments(mine, acc, (size_t)count, bytes / (size_t)count, fn, -1, c);
        if (rc == MPI_SUCCESS)
            hashi_dn_stats.coll_allreduces++;
        return rc;
    }
    int *readers = all_readers(c), posted;
    struct hashi_tl_mem mem;
    rc = offer(mine, bytes, readers, n - 1, &mem, &posted);
    if (rc == MPI_SUCCESS) {
        if (n - 1 == me)
            memcpy(acc, mine, bytes);
        else
            contribution(n - 1, acc, bytes, &rc);
        unsigned char *tmp = reduce_scratch(bytes);
        if (!tmp && rc == MPI_SUCCESS)
            rc = MPI_ERR_NO_MEM;
        for (int i = n - 2; i >= 0 && rc == MPI_SUCCESS; i--) {
            const unsigned char *x = i == me ? mine : contribution(i, tmp, bytes, &rc);
            if (rc == MPI_SUCCESS)
                fn(x, acc, (size_t)count);
        }
    }
    withdraw(readers, co.seq, posted, &mem);
    if (rc == MPI_SUCCESS)
        hashi_dn_stats.coll_allreduces++;
    return rc;
}

/*
 * Larger than a slot: a binomial tree over the members counted from the
 * root (vrank = (rank - root) mod n). In round k a member whose vrank has bit
 * k set offers its partial (its send buffer, or the sum it built) to vrank -
 * 2^k and leaves once that one has read it; the others read the partial of
 * vrank + 2^k straight into their accumulator and reduce it there. The root
 * does log2(n) reads and reductions where a flat read does n - 1, and the
 * reads of one round run at once on different cores (4 ranks on 2 cores,
 * 64 KiB: 41 -> 25 us, docs/collectives.md). Each pair in the tree
 * exchanges once, on both sides, so the pair sequences agree.
 */
static int reduce_tree(const unsigned char *mine, unsigned char *recvbuf, size_t bytes, MPI_Count count,
                       hashi_op_kernel_fn fn, int root, struct MPI_ABI_Comm *c)
{
    int n = c->size, vr = (c->rank - root + n) % n, rc = MPI_SUCCESS;
    const unsigned char *partial = mine;
    unsigned char *acc = c->rank == root ? recvbuf : NULL, *tmp = NULL;
    int reduced = 0;
    for (int mask = 1; mask < n && rc == MPI_SUCCESS; mask <<= 1) {
        if (vr & mask) {
            int parent = (vr - mask + root) % n, posted;
            struct hashi_tl_mem mem;
            co.seq[parent] = ++co.blk.peer[co.member[parent]].seq;
            rc = offer(partial, bytes, &parent, 1, &mem, &posted);
            withdraw(&parent, co.seq, posted, &mem);
            return rc;
        }
        if (vr + mask >= n)
            continue;
        int child = (vr + mask + root) % n;
        co.seq[child] = ++co.blk.peer[co.member[child]].seq;
        if (!tmp) {
            /* An inner member accumulates in scratch (its recvbuf need not
             * exist); a second half of it takes the reads when the
             * accumulator holds our own data (the root's MPI_IN_PLACE). */
            unsigned char *scratch = reduce_scratch(acc ? bytes : 2 * bytes);
            if (!scratch)
                return MPI_ERR_NO_MEM;
            tmp = acc ? scratch : scratch + bytes;
            if (!acc)
                acc = scratch;
        }
        if (!reduced && acc != mine) {
            /* The first partial lands in the accumulator itself: acc = mine op it. */
            rc = read_offered(child, acc, bytes, 0);
            if (rc == MPI_SUCCESS)
                fn(mine, acc, (size_t)count);
        } else {
            rc = read_offered(child, tmp, bytes, 0);
            if (rc == MPI_SUCCESS)
                fn(tmp, acc, (size_t)count);
        }
        reduced = 1;
        partial = acc;
    }
    if (rc == MPI_SUCCESS && !reduced && c->rank == root && mine != recvbuf)
        memcpy(recvbuf, mine, bytes);
    return rc;
}

/*
 * Up to a slot, flat, one step to the root: a member stores its
 * contribution into the root's slot and leaves. The root reduces each
 * contribution into recvbuf, which starts as its own (sendbuf may be
 * recvbuf: MPI_IN_PLACE), and acknowledges it, which frees the slot.
 * Larger: reduce_tree. Predefined ops commute: the order is the arrival's.
 */
static int dn_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
                     struct MPI_ABI_Comm *c)
{
    size_t bytes = 0;
    hashi_op_kernel_fn fn = reduction_start(c, root, type, op, count, &bytes);
    if (!fn)
        return HASHI_DEVICE_COLL_DECLINE;
    const unsigned char *mine = sendbuf;
    /* From 4 members (select.c: at 3 the tree is as fast). */
    if (bytes > co.max_bytes && c->size > 3 && bytes <= co.reduce_stage_max && (size_t)count >= (size_t)c->size)
        return reduce_staged(mine, recvbuf, (size_t)count, bytes / (size_t)count, fn, root, c);
    if (bytes > co.max_bytes && c->size > 2 && co.segments_min && bytes >= co.segments_min &&
        (size_t)count >= (size_t)c->size)
        return reduce_segments(mine, recvbuf, (size_t)count, bytes / (size_t)count, fn, root, c);
    if (bytes > co.max_bytes)
        return reduce_tree(mine, recvbuf, bytes, count, fn, root, c);
    return run_blocking(HASHI_DEVICE_OP_REDUCE, c, mine, recvbuf, bytes, 0, (size_t)count, fn, root);
}

static int dn_alltoall(const void *sendbuf, void *recvbuf, size_t bytes_per_rank, struct MPI_ABI_Comm *c)
{
    follows_barrier(c, -1);
    if (!flat_comm(c))
        return HASHI_DEVICE_COLL_DECLINE;
    int n = c->size, rc;
    if (bytes_per_rank > co.max_bytes) {
        if (n > 2 && bytes_per_rank * (size_t)(n - 1) <= co.blocks_stage_max)
            rc = blocks_staged(sendbuf, recvbuf, bytes_per_rank, bytes_per_rank, c);
        else
            rc = blocks_offered(sendbuf, bytes_per_rank * (size_t)n, recvbuf, bytes_per_rank, bytes_per_rank, c);
        if (rc == MPI_SUCCESS)
            hashi_dn_stats.coll_alltoalls++;
        return rc;
    }
    rc = run_blocking(HASHI_DEVICE_OP_ALLTOALL, c, sendbuf, recvbuf, bytes_per_rank, bytes_per_rank, 0, NULL, -1);
    if (rc == MPI_SUCCESS)
        hashi_dn_stats.coll_alltoalls++;
    return rc;
}

/* Allgather: the alltoall's one step with the same block to every member. */
static int dn_allgather(const void *sendbuf, void *recvbuf, size_t bytes_per_rank, struct MPI_ABI_Comm *c)
{
    follows_barrier(c, -1);
    if (!flat_comm(c))
        return HASHI_DEVICE_COLL_DECLINE;
    int n = c->size, rc;
    if (bytes_per_rank > co.max_bytes) {
        if (n > 2 && bytes_per_rank <= co.blocks_stage_max)
            rc = blocks_staged(sendbuf, recvbuf, 0, bytes_per_rank, c);
        else
            rc = blocks_offered(sendbuf, bytes_per_rank, recvbuf, 0, bytes_per_rank, c);
        if (rc == MPI_SUCCESS)
            hashi_dn_stats.coll_allgathers++;
        return rc;
    }
    rc = run_blocking(HASHI_DEVICE_OP_ALLGATHER, c, sendbuf, recvbuf, bytes_per_rank, 0, 0, NULL, -1);
    if (rc == MPI_SUCCESS)
        hashi_dn_stats.coll_allgathers++;
    return rc;
}

/*
 * Gather and scatter up to a slot, flat, one step: a gather's member stores
 * its block into the root's slot and leaves, the root copies each into its
 * place and acknowledges it (reduce's fan-in); a scatter's root stores each
 * member's block into that member's slot, which copies it out and
 * acknowledges (bcast's fan-out with a block per member). Larger blocks:
 * the generic algorithms (the caller offers only up to the slots).
 */
static int dn_gather(const void *sendbuf, void *recvbuf, size_t bytes_per_rank, int root, struct MPI_ABI_Comm *c)
{
    follows_barrier(c, root);
    if (!flat_comm(c) || bytes_per_rank > co.max_bytes)
        return HASHI_DEVICE_COLL_DECLINE;
    int rc = run_blocking(HASHI_DEVICE_OP_GATHER, c, sendbuf, recvbuf, bytes_per_rank, 0, 0, NULL, root);
    if (rc == MPI_SUCCESS)
        hashi_dn_stats.coll_gathers++;
    return rc;
}

static int dn_scatter(const void *sendbuf, void *recvbuf, size_t bytes_per_rank, int root, struct MPI_ABI_Comm *c)
{
    follows_barrier(c, root);
    if (!flat_comm(c) || bytes_per_rank > co.max_bytes)
        return HASHI_DEVICE_COLL_DECLINE;
    int rc = run_blocking(HASHI_DEVICE_OP_SCATTER, c, sendbuf, recvbuf, bytes_per_rank, bytes_per_rank, 0, NULL,
                          root);
    if (rc == MPI_SUCCESS)
        hashi_dn_stats.coll_scatters++;
    return rc;
}

/*
 * A sparse exchange (device.h: the v and w forms, the neighbourhood
 * collectives): one pair collective with every member we send to or
 * receive from, the others untouched (both ends of a pair know alike
 * whether it has data either way, so their pair sequences stay in step).
 * A pair with data both ways posts both ways, and each post proves the
 * poster finished the pair's previous collectives (the ring's reuse
 * rule); on a one-way pair (a gatherv's, a scatterv's) the receiver
 * acknowledges what it consumed instead, as a gather's root does, and the
 * sender waits for nothing. Data up to max_bytes travels in the slot; from
 * HASHI_COLL_DEVICE_EXCHANGE_READ_MIN a block is offered like the large
 * alltoall's: its key in the slot, the reader PULLs it and acknowledges,
 * and we return once every reader has; in between it goes as one message
 * on the call's tag, posted before the slots run. Both ends choose by the
 * block's length, which MPI makes the same on both.
 */
static int dn_exchange(const struct hashi_device_block *sends, int nsends, const struct hashi_device_block *recvs,
                       int nrecvs, struct MPI_ABI_Comm *c, int tag)
{
    follows_barrier(c, -1);
    if (!flat_comm(c))
        return HASHI_DEVICE_COLL_DECLINE;
    /* The machine (step_exchange) on the blocking ring, on the caller's
     * stack with the shared arrays; only its messages and registrations
     * take memory, and only when there are such pairs. */
    struct dn_xchg x = { .sends = sends, .recvs = recvs, .to = co.x_send, .from = co.x_recv,
                         .slot_max = co.max_bytes, .comm = c, .tag = tag, .nsends = nsends, .nrecvs = nrecvs };
    xchg_plan(&x, c->size, c->rank);
    if (xchg_extra(&x) != MPI_SUCCESS)
        return MPI_ERR_NO_MEM;   /* not a decline: the peers go ahead */
    dn_op op;   /* what step_exchange reads: set here and by xchg_activate */
    op.kind = HASHI_DEVICE_OP_EXCHANGE;
    op.variant = V_EXCHANGE;
    op.st = NULL;
    op.ring = &co.blk;
    op.n = c->size;
    op.me = c->rank;
    op.member = co.member;
    op.seq = co.seq;
    op.x = &x;
    xchg_post_messages(&op);
    xchg_activate(&op);
    if (!step_exchange(&op))
        hashi_progress_wait_until(blk_exchange, &op);
    free(x.extra);
    if (op.error == MPI_SUCCESS)
        hashi_dn_stats.coll_exchanges++;
    return op.error;
}

/*
 * Scan and exscan up to a slot, flat, one step: a member stores its vector
 * into the slot of every rank above it and folds those of the ranks below
 * in rank order (x0 op (x1 op ... x(r))), then acknowledges them (the
 * ranks below never read from it, so nothing else frees their slots).
 * Member r does r reductions; the generic recursive doubling log2 n rounds
 * of messages.
 */
static int dn_scan(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op, int exclusive,
                   struct MPI_ABI_Comm *c)
{
    size_t bytes = 0;
    hashi_op_kernel_fn fn = reduction_start(c, -1, type, op, count, &bytes);
    if (!fn || bytes > co.max_bytes)
        return HASHI_DEVICE_COLL_DECLINE;
    int rc = run_blocking(exclusive ? HASHI_DEVICE_OP_EXSCAN : HASHI_DEVICE_OP_SCAN, c, sendbuf, recvbuf, bytes, 0,
                          (size_t)count, fn, -1);
    if (rc == MPI_SUCCESS && exclusive)
        hashi_dn_stats.coll_exscans++;
    else if (rc == MPI_SUCCESS)
        hashi_dn_stats.coll_scans++;
    return rc;
}

/* Reduce_scatter_block up to a slot per block: the alltoall's one step
 * (block i of our vector into member i's slot), then allreduce's fold of
 * the blocks for us in rank order. */
static int dn_reduce_scatter_block(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                                   struct MPI_ABI_Comm *c)
{
    size_t bytes = 0;
    hashi_op_kernel_fn fn = reduction_start(c, -1, type, op, count, &bytes);
    if (!fn || bytes > co.max_bytes)
        return HASHI_DEVICE_COLL_DECLINE;
    int rc = run_blocking(HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK, c, sendbuf, recvbuf, bytes, bytes, (size_t)count, fn,
                          -1);
    if (rc == MPI_SUCCESS)
        hashi_dn_stats.coll_reduce_scatters++;
    return rc;
}

/* ------------------------------------------------------------ nonblocking and persistent */

/*
 * The device's operation for one nonblocking or persistent call: on the
 * communicator's channel (flat communicators that have one, data up to its
 * payload), or MPI_COMM_WORLD's dissemination barrier beyond the flat
 * bound. Everything else is declined, on grounds every member shares (the
 * communicator, its context id, the node's layout, the byte count, the op
 * and type).
 */
static void dn_op_free(dn_op *op);

/* An exchange operation's state in op (its to / from after the member
 * array), its pairs planned once: a persistent request's every run reuses
 * them. */
static int xchg_setup(dn_op *op, const struct hashi_device_coll_args *a, const struct ring *r, int n, int me)
{
    struct dn_xchg *x = &op->xs;
    *x = (struct dn_xchg){ .sends = a->sends, .recvs = a->recvs, .nsends = a->nsends, .nrecvs = a->nrecvs,
                           .to = op->member + co.max_ranks, .from = op->member + 2 * co.max_ranks,
                           .slot_max = co.max_bytes < r->payload ? co.max_bytes : r->payload, .comm = a->comm,
                           .tag = a->tag };
    xchg_plan(x, n, me);
    op->x = x;
    return xchg_extra(x);
}

static int dn_op_init(const struct hashi_device_coll_args *a, dn_op **out)
{
    struct MPI_ABI_Comm *c = a->comm;
    int flat = flat_comm(c), variant = V_SLOTS;
    struct ring *r = flat ? channel(c) : NULL;
    hashi_op_kernel_fn fn = NULL;
    size_t bytes = a->bytes;
    *out = NULL;
    switch (a->kind) {
    case HASHI_DEVICE_OP_BARRIER:
        if (!co.barrier_on || (!r && (flat || c != &hashi_comm_world)))
            return HASHI_DEVICE_COLL_DECLINE;
        variant = r ? V_SLOTS : V_DISSEM;
        bytes = 0;
        break;
    case HASHI_DEVICE_OP_BCAST:
        if (!co.coll_on || !r || bytes > r->payload)
            return HASHI_DEVICE_COLL_DECLINE;
        break;
    case HASHI_DEVICE_OP_ALLREDUCE:
    case HASHI_DEVICE_OP_REDUCE:
    case HASHI_DEVICE_OP_SCAN:
    case HASHI_DEVICE_OP_EXSCAN:
    case HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK:
        if (!co.coll_on || !r || !(fn = reduction_kernel(a->type, a->op, a->count, &bytes)) || bytes > r->payload)
            return HASHI_DEVICE_COLL_DECLINE;
        break;
    case HASHI_DEVICE_OP_ALLTOALL:
    case HASHI_DEVICE_OP_ALLGATHER:
    case HASHI_DEVICE_OP_GATHER:
    case HASHI_DEVICE_OP_SCATTER:
        if (!co.coll_on || !r || bytes > r->payload)
            return HASHI_DEVICE_COLL_DECLINE;
        break;
    case HASHI_DEVICE_OP_EXCHANGE:
        /* Any sizes: the communicator alone decides (device.h). */
        if (!co.coll_on || !r)
            return HASHI_DEVICE_COLL_DECLINE;
        variant = V_EXCHANGE;
        break;
    default:
        return HASHI_DEVICE_COLL_DECLINE;
    }
    int n = c->size;
    if (n < 2)
        return HASHI_DEVICE_COLL_DECLINE;
    /* Objects of co.max_ranks members, kept for reuse: a small nonblocking
     * call costs no malloc (the schedule engine's own objects are cached too). */
    dn_op *op = co.op_cache;
    if (op)
        co.op_cache = op->next;
    else
        op = malloc(sizeof *op + (size_t)co.max_ranks * (sizeof(uint64_t) + 3 * sizeof(int)));
    if (!op || !comm_state(c)) {
        free(op);
        return MPI_ERR_NO_MEM;   /* not a decline: the other members go ahead */
    }
    /* seq, member, then an exchange's to and from */
    op->seq = (uint64_t *)(void *)(op + 1);
    op->member = (int *)(void *)(op->seq + co.max_ranks);
    op->x = NULL;
    if (variant == V_EXCHANGE && xchg_setup(op, a, r, n, c->rank) != MPI_SUCCESS) {
        dn_op_free(op);
        return MPI_ERR_NO_MEM;
    }
    /* Every field set here or by op_activate (no memset: it was an eighth of
     * a small Ibarrier's cost in the device). */
    if (flat)
        memcpy(op->member, co.member, (size_t)n * sizeof *op->member);
    op->kind = (int)a->kind;
    op->variant = variant;
    op->st = c->device_state;
    op->ring = r;
    op->n = n;
    op->me = c->rank;
    op->root = a->root;
    op->send = a->kind == HASHI_DEVICE_OP_BCAST ? a->recvbuf : a->sendbuf;
    op->recv = a->recvbuf;
    op->bytes = bytes;
    /* The stride of the blocks in send, one for each member. */
    op->each = a->kind == HASHI_DEVICE_OP_ALLTOALL || a->kind == HASHI_DEVICE_OP_SCATTER ||
                       a->kind == HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK
                   ? bytes
                   : 0;
    op->count = (size_t)a->count;
    op->fn = fn;
    op->phase = PH_IDLE;
    op->k = op->error = op->dist = op->round = 0;
    op->need = op->gen = 0;
    op->next = NULL;
    *out = op;
    return MPI_SUCCESS;
}

/* One run, in the communicator's order (its queue). A barrier takes the
 * communicator's counter where a blocking one would (decided here, in the
 * program's order of calls, alike on every member), else the channel's
 * flat exchange. */
static int dn_op_start(dn_op *op)
{
    struct dn_comm_sync *st = op->st;
    /* As the blocking calls do: a rooted call after a blocking barrier makes
     * the next blocking barrier rooted there (follows_barrier), so that an
     * oversubscribed root leaves it first (4 ranks on 2 cores, Ibcast + Wait
     * between barriers: 5-12 -> 1.0-1.2 us). */
    if (op->kind != HASHI_DEVICE_OP_BARRIER && st->after_barrier) {
        st->after_barrier = 0;
        st->next_root = kind_fans_in(op->kind) || kind_fans_out(op->kind) ? op->root : -1;
    }
    if (op->kind == HASHI_DEVICE_OP_BARRIER && op->variant != V_DISSEM)
        op->variant = barrier_kind() == BARRIER_COUNTER && co.sync_ok && st->agreed && st->slot >= 0 ? V_COUNTER
                                                                                                     : V_SLOTS;
    if (op->variant == V_EXCHANGE)
        xchg_post_messages(op);   /* the run's own tag: they need not wait for its turn */
    op_begin(op);
    return MPI_SUCCESS;
}

static int dn_op_progress(dn_op *op, int *done)
{
    if (!(*done = op_step(op)))
        return MPI_SUCCESS;
    if (op->error == MPI_SUCCESS) {
        hashi_dn_stats.coll_nb_ops++;
        switch (op->kind) {
        case HASHI_DEVICE_OP_BARRIER: hashi_dn_stats.barriers++; break;
        case HASHI_DEVICE_OP_BCAST: hashi_dn_stats.coll_bcasts++; break;
        case HASHI_DEVICE_OP_ALLTOALL: hashi_dn_stats.coll_alltoalls++; break;
        case HASHI_DEVICE_OP_ALLGATHER: hashi_dn_stats.coll_allgathers++; break;
        case HASHI_DEVICE_OP_GATHER: hashi_dn_stats.coll_gathers++; break;
        case HASHI_DEVICE_OP_SCATTER: hashi_dn_stats.coll_scatters++; break;
        case HASHI_DEVICE_OP_SCAN: hashi_dn_stats.coll_scans++; break;
        case HASHI_DEVICE_OP_EXSCAN: hashi_dn_stats.coll_exscans++; break;
        case HASHI_DEVICE_OP_REDUCE_SCATTER_BLOCK: hashi_dn_stats.coll_reduce_scatters++; break;
        case HASHI_DEVICE_OP_EXCHANGE: hashi_dn_stats.coll_exchanges++; break;
        default: hashi_dn_stats.coll_allreduces++; break;   /* reduce included, as for the blocking ones */
        }
    }
    return op->error;
}

static void dn_op_free(dn_op *op)
{
    if (op->x)
        free(op->x->extra);
    op->x = NULL;
    op->next = co.op_cache;
    co.op_cache = op;
}

/* ------------------------------------------------------------ set-up */

void hashi_dn_coll_ops(struct hashi_device_coll_ops *ops)
{
    int coll = (int)hashi_param_int(HASHI_P_DIMMNET_COLL);
    ops->op_init = hashi_param_int(HASHI_P_DIMMNET_BARRIER) || coll ? dn_op_init : NULL;
    ops->op_start = dn_op_start;
    ops->op_progress = dn_op_progress;
    ops->op_free = dn_op_free;
    ops->barrier = hashi_param_int(HASHI_P_DIMMNET_BARRIER) ? dn_barrier : NULL;
    ops->bcast = coll ? dn_bcast : NULL;
    ops->allreduce = coll ? dn_allreduce : NULL;
    ops->alltoall = coll ? dn_alltoall : NULL;
    ops->allgather = coll ? dn_allgather : NULL;
    ops->reduce = coll ? dn_reduce : NULL;
    ops->gather = coll ? dn_gather : NULL;
    ops->scatter = coll ? dn_scatter : NULL;
    ops->scan = coll ? dn_scan : NULL;
    ops->reduce_scatter_block = coll ? dn_reduce_scatter_block : NULL;
    ops->exchange = coll ? dn_exchange : NULL;
    ops->max_bytes = coll ? (size_t)hashi_param_int(HASHI_P_DIMMNET_COLL_MAX) : 0;
    ops->comm_free = dn_comm_free;
}

/* Sets the area layout for co.slots slots, in whole cache lines or packed;
 * whether the areas of `local` ranks fit the LLCM. */
static int layout_fits(int lines, int local, size_t llcm_size)
{
    struct ring *r = &co.blk;
    r->hdr = lines ? 64 : DN_COLL_HDR;
    r->slot_bytes = DN_COLL_ALIGN + r->payload;
    if (lines)
        r->slot_bytes = (r->slot_bytes + 63) & ~(size_t)63;
    r->stride = (r->hdr + r->slots * r->slot_bytes + 63) & ~(size_t)63;
    return r->base + (size_t)local * r->stride <= llcm_size;
}

/*
 * The channels after the counter barriers' words: DN_CHANNELS rings of
 * DN_CHANNEL_SLOTS packed slots, with the largest payload (a multiple of
 * DN_COLL_ALIGN, at most the blocking ring's) that the rest of the LLCM
 * holds for `local` ranks; none when not even DN_COLL_ALIGN bytes fit.
 * Every rank of the node computes the same layout. 0, or -1 out of memory.
 */
static int channels_init(int local, size_t llcm_size)
{
    uint64_t base = (co.sync_base + DN_SYNC_BYTES + 63) & ~(uint64_t)63;
    size_t min_area = DN_COLL_HDR + DN_CHANNEL_SLOTS * 2 * DN_COLL_ALIGN;
    co.nchan = 0;
    if (!co.flat || base >= llcm_size)
        return 0;
    size_t area = (size_t)((llcm_size - base) / ((uint64_t)DN_CHANNELS * (uint64_t)local)) & ~(size_t)63;
    if (area < min_area)
        return 0;
    size_t payload = ((area - DN_COLL_HDR) / DN_CHANNEL_SLOTS - DN_COLL_ALIGN) & ~(size_t)(DN_COLL_ALIGN - 1);
    if (payload > co.blk.payload)
        payload = co.blk.payload;
    struct coll_peer *peers = calloc((size_t)DN_CHANNELS * (size_t)hashi_job.size, sizeof *peers);
    co.chan = calloc(DN_CHANNELS, sizeof *co.chan);
    if (!peers || !co.chan) {
        free(peers);
        return -1;
    }
    size_t slot_bytes = DN_COLL_ALIGN + payload;
    size_t stride = (DN_COLL_HDR + DN_CHANNEL_SLOTS * slot_bytes + 63) & ~(size_t)63;
    for (unsigned ch = 0; ch < DN_CHANNELS; ch++)
        co.chan[ch] = (struct ring){ .base = base + (uint64_t)ch * local * stride, .stride = stride,
                                     .hdr = DN_COLL_HDR, .slot_bytes = slot_bytes, .payload = payload,
                                     .slots = DN_CHANNEL_SLOTS, .peer = peers + (size_t)ch * hashi_job.size };
    co.nchan = DN_CHANNELS;
    HASHI_DEBUG(1, "dimmnet: %u channels for nonblocking LLCM collectives, %d areas of %u slots of %zu bytes each "
                "at LLCM offset %llu", co.nchan, local, DN_CHANNEL_SLOTS, payload, (unsigned long long)base);
    return 0;
}

int hashi_dn_coll_init(size_t flags_end, char *err, size_t errlen)
{
    hashi_dn_coll_finalize();
    int n = hashi_job.size;
    co.local_index = malloc((size_t)n * sizeof *co.local_index);
    co.member = co.member_buf = malloc((size_t)n * sizeof *co.member);
    co.seq = malloc((size_t)n * sizeof *co.seq);
    co.seq_in = malloc((size_t)n * sizeof *co.seq_in);
    co.readers = malloc((size_t)n * sizeof *co.readers);
    co.x_send = malloc((size_t)n * sizeof *co.x_send);
    co.x_recv = malloc((size_t)n * sizeof *co.x_recv);
    co.sources = malloc((size_t)n * sizeof *co.sources);
    /* reduce_staged tells each member twice before the next stage_claim */
    co.stage_reader = malloc(2 * (size_t)n * sizeof *co.stage_reader);
    co.stage_seq = malloc(2 * (size_t)n * sizeof *co.stage_seq);
    co.blk.peer = calloc((size_t)n, sizeof *co.blk.peer);
    if (!co.local_index || !co.member || !co.seq || !co.seq_in || !co.readers || !co.x_send || !co.x_recv ||
        !co.sources || !co.stage_reader || !co.stage_seq || !co.blk.peer) {
        snprintf(err, errlen, "dimmnet: out of memory for the collective state of %d ranks", n);
        hashi_dn_coll_finalize();
        return -1;
    }
    /* Local indices in world order: every rank computes the same map. */
    int local = 0;
    for (int r = 0; r < n; r++)
        co.local_index[r] = r == hashi_job.rank || hashi_job.peer_is_local[r] ? local++ : -1;
    co.my_index = co.local_index[hashi_job.rank];
    int64_t max_ranks = hashi_param_int(HASHI_P_DIMMNET_COLL_RANKS);
    co.max_ranks = max_ranks < 0 ? 0 : max_ranks > n ? n : (int)max_ranks;
    co.max_bytes = (size_t)hashi_param_int(HASHI_P_DIMMNET_COLL_MAX);
    /* The caller's rule (select.c): both sides of the choice read one parameter. */
    co.segments_min = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_SEGMENTS_MIN);
    co.exchange_read_min = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_EXCHANGE_READ_MIN);
    if (!co.exchange_read_min)
        co.exchange_read_min = SIZE_MAX;
    const char *alg = hashi_param_str(HASHI_P_DIMMNET_BARRIER_ALG);
    co.barrier_alg = strcmp(alg, "rooted") == 0    ? BARRIER_ROOTED
                     : strcmp(alg, "flat") == 0    ? BARRIER_FLAT
                     : strcmp(alg, "counter") == 0 ? BARRIER_COUNTER
                                                   : BARRIER_AUTO;
    co.blk.payload = (co.max_bytes + DN_COLL_ALIGN - 1) & ~(size_t)(DN_COLL_ALIGN - 1);
    co.blk.base = (flags_end + 63) & ~(size_t)63;
    co.llcm = hashi_transport_llcm();
    size_t llcm_size = hashi_transport_llcm_size();
    /* As many slots as fit, at least two, in whole cache lines if they fit
     * (a small payload then shares its flag's line), else packed: every rank
     * of the node computes the same layout from the same parameters and
     * local rank count. */
    for (co.blk.slots = DN_COLL_SLOTS_MAX; co.blk.slots >= 2; co.blk.slots /= 2)
        if (layout_fits(1, local, llcm_size) || layout_fits(0, local, llcm_size))
            break;
    co.flat = co.max_ranks >= 2 && co.blk.slots >= 2;
    /* The counter barriers' words after the areas, where they fit. */
    co.sync_base = co.blk.base + (size_t)local * co.blk.stride;
    co.sync_free = (uint32_t)((UINT64_C(1) << DN_SYNC_SLOTS) - 1);
    co.sync_ok = co.flat && co.sync_base + DN_SYNC_BYTES <= llcm_size;
    for (int r = 0; r < n && co.sync_ok; r++)
        if (r != hashi_job.rank && hashi_job.peer_is_local[r])
            co.sync_ok = hashi_tl(r)->id == HASHI_TL_EMU && hashi_tl(r)->llcm_fetch_add;
    /* The staged broadcast: every rank of the node has a stage of the same
     * size (emu checks that at connect), so every member decides alike. */
    size_t stage_size = 0;
    const struct hashi_tl_ops *self_tl = hashi_tl(hashi_job.rank);
    co.stage = co.flat && self_tl->id == HASHI_TL_EMU && self_tl->stage
                   ? self_tl->stage(hashi_job.rank, &stage_size) : NULL;
    co.stage_max = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_BCAST_STAGE_MAX);
    if (!co.stage || co.stage_max > stage_size)
        co.stage_max = co.stage ? stage_size : 0;
    co.blocks_stage_max = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_BLOCKS_STAGE_MAX);
    if (!co.stage || co.blocks_stage_max > stage_size)
        co.blocks_stage_max = co.stage ? stage_size : 0;
    co.reduce_stage_max = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_REDUCE_STAGE_MAX);
    if (!co.stage || co.reduce_stage_max > stage_size)
        co.reduce_stage_max = co.stage ? stage_size : 0;
    co.stage_readers = 0;
    co.barrier_on = hashi_param_int(HASHI_P_DIMMNET_BARRIER) != 0;
    co.coll_on = hashi_param_int(HASHI_P_DIMMNET_COLL) != 0;
    if (channels_init(local, llcm_size) != 0) {
        snprintf(err, errlen, "dimmnet: out of memory for the collective channels of %d ranks", n);
        hashi_dn_coll_finalize();
        return -1;
    }
    if (!co.flat && co.max_ranks >= 2)
        HASHI_DEBUG(1, "dimmnet: %d collective areas of 2 slots of %zu bytes do not fit the LLCM (%zu bytes, %zu "
                    "used by flag areas): flat LLCM collectives off (raise HASHI_DIMMNET_LLCM_SIZE or lower "
                    "HASHI_DIMMNET_COLL_MAX)", local, co.blk.payload, llcm_size, co.blk.base);
    else
        HASHI_DEBUG(1, "dimmnet: flat LLCM collectives up to %d ranks and %zu bytes per contribution; %d areas of "
                    "%u slots (%zu bytes) at LLCM offset %zu", co.max_ranks, co.max_bytes, local, co.blk.slots,
                    (size_t)co.blk.stride, (size_t)co.blk.base);
    return 0;
}

void hashi_dn_coll_finalize(void)
{
    free(co.local_index);
    free(co.member_buf);
    free(co.seq);
    free(co.seq_in);
    free(co.blk.peer);
    free(co.chan ? co.chan[0].peer : NULL);
    free(co.chan);
    while (co.op_cache) {
        struct hashi_device_coll_op *op = co.op_cache;
        co.op_cache = op->next;
        free(op);
    }
    free(co.scratch);
    free(co.readers);
    free(co.x_send);
    free(co.x_recv);
    free(co.sources);
    free(co.stage_reader);
    free(co.stage_seq);
    memset(&co, 0, sizeof co);
}
