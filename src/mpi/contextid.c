/*
 * Context ids: the pool of id pairs of this process and the agreement that
 * picks a pair free in every member of a parent communicator. The agreement
 * is a state machine driven by the progress engine, so the same code serves
 * blocking creation (start, then wait) and MPI_Comm_idup (start, return).
 * Design, and why concurrent agreements never hand out one id twice:
 * docs/communicators.md, "Context ids".
 */
#include "mpi/comm.h"
#include "mpi/coll/coll.h"
#include "mpi/coll/sched.h"
#include "mpi/p2p.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

/*
 * Bit p of free_pairs set: ids 2p (user point-to-point) and 2p+1 (internal)
 * are not used by any communicator this process belongs to. Bit p of
 * reserved set: an agreement in flight in this process offered pair p to its
 * peers and may still take it; no other agreement may offer it meanwhile.
 * 16-bit ids give 32768 pairs, 4 KiB per map. Agreements look at one window
 * of 2048 pairs (256 bytes) at a time.
 */
#define CONTEXT_PAIRS (1u << (HASHI_CONTEXT_ID_BITS - 1))
#define CONTEXT_MASK_WORDS (CONTEXT_PAIRS / 32)
#define CONTEXT_WINDOW_WORDS 64u
/* One more word travels with each window: all ones unless some member held
 * back free pairs reserved by its other agreements (AND: zero if any did). */
#define CONTEXT_MSG_WORDS (CONTEXT_WINDOW_WORDS + 1)
#define NOBODY_HELD_BACK UINT32_MAX

static struct {
    mtx_t lock; /* threads creating communicators share the maps */
    uint32_t free_pairs[CONTEXT_MASK_WORDS];
    uint32_t reserved[CONTEXT_MASK_WORDS];
    /* Pairs a communicator takes: 1, or HASHI_CONTEXT_BLOCK_PAIRS (aligned)
     * when the job spans several nodes, so that the communicator's two
     * node-aware sub-communicators find their pairs without agreeing. */
    uint32_t block;
} pool;

void hashi_context_pool_init(int several_nodes)
{
    mtx_init(&pool.lock, mtx_plain);
    memset(pool.free_pairs, 0xff, sizeof pool.free_pairs);
    memset(pool.reserved, 0, sizeof pool.reserved);
    pool.block = several_nodes ? HASHI_CONTEXT_BLOCK_PAIRS : 1;
    /* MPI_COMM_WORLD (0/1), MPI_COMM_SELF (2/3), partitioned (4/5),
     * sessions (6/7); with blocks, WORLD's block (those four) and its
     * sub-communicators' block. */
    uint32_t fixed = several_nodes ? (UINT32_C(1) << (HASHI_CONTEXT_WORLD_SUB / 2 + HASHI_CONTEXT_BLOCK_PAIRS)) - 1
                                   : (UINT32_C(1) << (HASHI_CONTEXT_WORLD / 2)) | (UINT32_C(1) << (HASHI_CONTEXT_SELF / 2)) |
                                         (UINT32_C(1) << (HASHI_CONTEXT_PARTITIONED / 2)) |
                                         (UINT32_C(1) << (HASHI_CONTEXT_SESSIONS / 2));
    pool.free_pairs[0] &= ~fixed;
}

/* The bits of the block that starts at `pair` within its word. */
static uint32_t block_bits(uint32_t pair)
{
    uint32_t bits = pool.block == 32 ? UINT32_MAX : (UINT32_C(1) << pool.block) - 1;
    return bits << (pair % 32);
}

void hashi_context_pool_finalize(void)
{
    mtx_destroy(&pool.lock);
}

void hashi_context_put(uint32_t context_id)
{
    uint32_t pair = context_id / 2;
    mtx_lock(&pool.lock);
    pool.free_pairs[pair / 32] |= block_bits(pair);
    mtx_unlock(&pool.lock);
}

/* ---- one agreement ---- */

enum agreement_state {
    AG_EVEN_FOLD,   /* rank < 2*extra, even: data sent to rank+1, result coming back */
    AG_ODD_FOLD,    /* rank < 2*extra, odd: receiving rank-1's data */
    AG_DOUBLING,    /* recursive doubling, next step `mask` */
    AG_EXCHANGE,    /* a doubling exchange in flight */
    AG_FINAL_SEND,  /* odd folded rank: handing the result to rank-1 */
    AG_RETRY,       /* start over at the first window on the next progress round */
    AG_DONE
};

struct agreement {
    struct agreement *next;         /* in the list of agreements in flight */
    struct MPI_ABI_Comm *parent;    /* retained while the agreement runs */
    int tag, join;
    hashi_context_done_fn *done;
    void *done_arg;

    uint32_t first;                 /* the current window's first word */
    int held_back;                  /* some member held back reserved pairs in an earlier window */
    uint32_t offered[CONTEXT_WINDOW_WORDS]; /* pairs of this window this process reserved */

    /* The AND allreduce of one window (recursive doubling; see start_round). */
    enum agreement_state state;
    int pof2, extra, mask;
    struct MPI_ABI_Request *reqs[2];
    uint32_t buf[CONTEXT_MSG_WORDS], scratch[CONTEXT_MSG_WORDS];
};

static struct agreement *in_flight;
static int hook_registered;

static int post_send(struct agreement *a, int peer, struct MPI_ABI_Request **req)
{
    return hashi_isend_internal(a->buf, (MPI_Count)sizeof a->buf, MPI_BYTE, peer, a->tag, a->parent,
                                hashi_comm_coll_context(a->parent), req);
}

static int post_recv(struct agreement *a, int peer, struct MPI_ABI_Request **req)
{
    return hashi_irecv_internal(a->scratch, (MPI_Count)sizeof a->scratch, MPI_BYTE, peer, a->tag, a->parent,
                                hashi_comm_coll_context(a->parent), req);
}

static void and_scratch(struct agreement *a)
{
    for (size_t i = 0; i < CONTEXT_MSG_WORDS; i++)
        a->buf[i] &= a->scratch[i];
}

/* The peer of a doubling step, as a rank of the parent. */
static int doubling_peer(const struct agreement *a)
{
    int rank = a->parent->rank;
    int vrank = rank < 2 * a->extra ? rank / 2 : rank - a->extra;
    int vpeer = vrank ^ a->mask;
    return vpeer < a->extra ? 2 * vpeer + 1 : vpeer + a->extra;
}

/* Offer the free, unreserved pairs of the window that starts at word
 * `first` and reserve them: offered[] and msg[] get them, msg's last word
 * says whether this process held back pairs other agreements reserved. */
static void offer_pairs(uint32_t first, uint32_t *offered, uint32_t *msg)
{
    int others = 0;
    mtx_lock(&pool.lock);
    for (uint32_t w = 0; w < CONTEXT_WINDOW_WORDS; w++) {
        uint32_t free_bits = pool.free_pairs[first + w];
        uint32_t mine = free_bits & ~pool.reserved[first + w];
        others |= (free_bits & pool.reserved[first + w]) != 0;
        pool.reserved[first + w] |= mine;
        offered[w] = mine;
        msg[w] = mine;
    }
    mtx_unlock(&pool.lock);
    msg[CONTEXT_WINDOW_WORDS] = others ? 0 : NOBODY_HELD_BACK;
}

/* Drop the window's reservations, taking `pair` (CONTEXT_PAIRS: none) first
 * when joining; -1 if the pair was not one this process offered. */
static int settle_pairs(uint32_t first, const uint32_t *offered, uint32_t pair, int join)
{
    int rc = 0;
    mtx_lock(&pool.lock);
    for (uint32_t w = 0; w < CONTEXT_WINDOW_WORDS; w++)
        pool.reserved[first + w] &= ~offered[w];
    if (pair != CONTEXT_PAIRS && join) {
        uint32_t bits = block_bits(pair);
        /* It was offered by this process, so it is free and was ours. */
        if ((offered[pair / 32 - first] & bits) == bits && (pool.free_pairs[pair / 32] & bits) == bits)
            pool.free_pairs[pair / 32] &= ~bits;
        else
            rc = -1;
    }
    mtx_unlock(&pool.lock);
    return rc;
}

static void offer_window(struct agreement *a)
{
    offer_pairs(a->first, a->offered, a->buf);
}

static int settle_window(struct agreement *a, uint32_t pair)
{
    return settle_pairs(a->first, a->offered, pair, a->join);
}

static void finish(struct agreement *a, int rc, int exhausted, uint32_t context_id)
{
    a->state = AG_DONE;
    a->done(a->done_arg, rc, exhausted, context_id);
}

/* Give up after an error: drop the step's requests (a send already posted
 * completes on its own), release this window's reservations. */
static void fail(struct agreement *a, int rc)
{
    for (int i = 0; i < 2; i++) {
        if (a->reqs[i])
            hashi_request_free(a->reqs[i]);
        a->reqs[i] = NULL;
    }
    settle_window(a, CONTEXT_PAIRS);
    finish(a, rc, 0, 0);
}

static int start_window(struct agreement *a);

/* The lowest block all of whose pairs are set in `word`, as a bit index; -1 if none. */
static int first_block(uint32_t word)
{
    if (pool.block == 1)
        return word ? __builtin_ctz(word) : -1;
    for (uint32_t b = 0; b < 32; b += pool.block)
        if ((word & block_bits(b)) == block_bits(b))
            return (int)b;
    return -1;
}

/* The lowest block set in the AND of the window at `first`, or CONTEXT_PAIRS. */
static uint32_t window_pick(uint32_t first, const uint32_t *and)
{
    for (uint32_t w = 0; w < CONTEXT_WINDOW_WORDS; w++) {
        int b = first_block(and[w]);
        if (b >= 0)
            return (first + w) * 32 + (uint32_t)b;
    }
    return CONTEXT_PAIRS;
}

/* The AND of the current window is in buf: take its lowest block, or move on. */
static void window_result(struct agreement *a)
{
    uint32_t pair = window_pick(a->first, a->buf);
    if (a->buf[CONTEXT_WINDOW_WORDS] != NOBODY_HELD_BACK)
        a->held_back = 1;
    if (settle_window(a, pair) != 0) {
        finish(a, MPI_ERR_INTERN, 0, 0);
        return;
    }
    if (pair != CONTEXT_PAIRS) {
        finish(a, MPI_SUCCESS, 0, 2 * pair);
        return;
    }
    a->first += CONTEXT_WINDOW_WORDS;
    if (a->first >= CONTEXT_MASK_WORDS) {
        if (!a->held_back) {
            finish(a, MPI_ERR_OTHER, 1, 0);
            return;
        }
        /* Pairs were only held back by other agreements in flight: they
         * finish and release them, so start over (every member saw the same
         * AND, so every member starts over) once progress has run them. */
        a->first = 0;
        a->held_back = 0;
        a->state = AG_RETRY;
        return;
    }
    int rc = start_window(a);
    if (rc != MPI_SUCCESS)
        fail(a, rc);
}

/*
 * Start the allreduce of one window. Recursive doubling over the largest
 * power of two p <= n ranks; the first 2*(n - p) ranks pair up first, the
 * even one handing its data to the odd one and getting the result back.
 */
static int start_window(struct agreement *a)
{
    int n = a->parent->size, rank = a->parent->rank, rc;
    a->reqs[0] = a->reqs[1] = NULL;
    offer_window(a);
    if (n == 1) {
        window_result(a);
        return MPI_SUCCESS;
    }
    if (rank < 2 * a->extra && rank % 2 == 0) {
        a->state = AG_EVEN_FOLD;
        if ((rc = post_send(a, rank + 1, &a->reqs[0])) != MPI_SUCCESS)
            return rc;
        return post_recv(a, rank + 1, &a->reqs[1]);
    }
    if (rank < 2 * a->extra) {
        a->state = AG_ODD_FOLD;
        return post_recv(a, rank - 1, &a->reqs[0]);
    }
    a->state = AG_DOUBLING;
    a->mask = 1;
    return MPI_SUCCESS;
}

/* Collect the requests of the step in flight: 1 if all completed (rc set), 0 if not yet. */
static int step_complete(struct agreement *a, int *rc)
{
    for (int i = 0; i < 2; i++)
        if (a->reqs[i] && !hashi_request_is_complete(a->reqs[i]))
            return 0;
    *rc = hashi_waitall_internal(2, a->reqs); /* completed: frees them without waiting */
    a->reqs[0] = a->reqs[1] = NULL;
    return 1;
}

/* Advance as far as the messages allow; 1 if anything moved. */
static int advance(struct agreement *a)
{
    int moved = 0, rc = MPI_SUCCESS;
    while (a->state != AG_DONE) {
        int rank = a->parent->rank;
        switch (a->state) {
        case AG_EVEN_FOLD:
        case AG_ODD_FOLD:
        case AG_EXCHANGE:
        case AG_FINAL_SEND:
            if (!step_complete(a, &rc))
                return moved;
            moved = 1;
            if (rc != MPI_SUCCESS) {
                fail(a, rc);
                return moved;
            }
            if (a->state == AG_EVEN_FOLD) {
                memcpy(a->buf, a->scratch, sizeof a->buf);
                window_result(a);
            } else if (a->state == AG_FINAL_SEND) {
                window_result(a);
            } else {
                and_scratch(a);
                if (a->state == AG_EXCHANGE)
                    a->mask <<= 1;
                else
                    a->mask = 1;
                a->state = AG_DOUBLING;
            }
            break;
        case AG_DOUBLING:
            if (a->mask < a->pof2) {
                int peer = doubling_peer(a);
                a->state = AG_EXCHANGE;
                rc = post_send(a, peer, &a->reqs[0]);
                if (rc == MPI_SUCCESS)
                    rc = post_recv(a, peer, &a->reqs[1]);
            } else if (rank < 2 * a->extra) {
                a->state = AG_FINAL_SEND;
                rc = post_send(a, rank - 1, &a->reqs[0]);
            } else {
                window_result(a);
            }
            if (rc != MPI_SUCCESS) {
                fail(a, rc);
                return 1;
            }
            moved = 1;
            break;
        case AG_RETRY:
            rc = start_window(a);
            if (rc != MPI_SUCCESS) {
                fail(a, rc);
                return 1;
            }
            if (a->state == AG_RETRY)
                return moved; /* still held back (one member): wait for the others to finish */
            moved = 1;
            break;
        case AG_DONE:
            break;
        }
    }
    return moved;
}

/* The progress hook: advance every agreement in flight, retire finished ones. */
static int agreements_progress(void)
{
    static int running; /* a completion callback may poll progress again */
    if (running)
        return 0;
    running = 1;
    int moved = 0;
    for (struct agreement **p = &in_flight; *p;) {
        struct agreement *a = *p;
        moved += advance(a);
        if (a->state == AG_DONE) {
            *p = a->next;
            hashi_comm_release(a->parent);
            free(a);
        } else {
            p = &a->next;
        }
    }
    if (!in_flight && hook_registered) {
        hashi_progress_unregister(agreements_progress);
        hook_registered = 0;
    }
    running = 0;
    return moved;
}

int hashi_context_agree_start(struct MPI_ABI_Comm *parent, int join, int tag, hashi_context_done_fn *done,
                              void *arg)
{
    struct agreement *a = calloc(1, sizeof *a);
    if (!a)
        return MPI_ERR_NO_MEM;
    a->parent = parent;
    a->join = join;
    a->done = done;
    a->done_arg = arg;
    /* Every member starts the agreements of a parent in the same order, so
     * sequence tags agree; concurrent agreements on one parent never mix. */
    a->tag = tag >= 0 ? tag : hashi_coll_next_tag(parent);
    int n = parent->size;
    a->pof2 = 1;
    while (a->pof2 * 2 <= n)
        a->pof2 *= 2;
    a->extra = n - a->pof2;
    if (!hook_registered) {
        if (hashi_progress_register(agreements_progress) != 0) {
            free(a);
            return MPI_ERR_INTERN;
        }
        hook_registered = 1;
    }
    hashi_comm_retain(parent);
    int rc = start_window(a);
    if (rc != MPI_SUCCESS && a->state != AG_DONE)
        fail(a, rc);
    /* Finished or not, it goes on the list: the hook frees finished ones, so
     * the caller's callback never races with freeing. */
    a->next = in_flight;
    in_flight = a;
    agreements_progress();
    return MPI_SUCCESS;
}

/* ---- the blocking form ---- */

struct blocking_result {
    int finished, rc, exhausted;
    uint32_t context_id;
};

static void blocking_done(void *arg, int rc, int exhausted, uint32_t context_id)
{
    struct blocking_result *r = arg;
    r->rc = rc;
    r->exhausted = exhausted;
    r->context_id = context_id;
    r->finished = 1;
}

static int blocking_finished(void *arg)
{
    return ((struct blocking_result *)arg)->finished;
}

int hashi_context_agree(struct MPI_ABI_Comm *parent, int join, int tag, uint32_t *context_id, int *exhausted)
{
    struct blocking_result r = { 0 };
    int rc = hashi_context_agree_start(parent, join, tag, blocking_done, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    hashi_progress_wait_until(blocking_finished, &r);
    *context_id = r.context_id;
    *exhausted = r.exhausted;
    return r.rc;
}

unsigned hashi_context_ids(void)
{
    return CONTEXT_PAIRS / pool.block;
}

/* ---- two groups: an intercommunicator's id ---- */

int hashi_leader_exchange(const struct hashi_leader_link *link, const void *sbuf, void *rbuf, size_t bytes)
{
    struct MPI_ABI_Request *reqs[2];
    int rc = hashi_isend_internal(sbuf, (MPI_Count)bytes, MPI_BYTE, link->peer, link->tag, link->comm,
                                  link->context, &reqs[0]);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = hashi_irecv_internal(rbuf, (MPI_Count)bytes, MPI_BYTE, link->peer, link->tag, link->comm, link->context,
                              &reqs[1]);
    if (rc != MPI_SUCCESS) {
        (void)hashi_wait_internal(reqs[0], MPI_STATUS_IGNORE);
        return rc;
    }
    return hashi_waitall_internal(2, reqs);
}

/* One window's AND over both groups: reduce to the leader of `local`, the
 * leaders swap and AND, the leader broadcasts. */
static int window_and_inter(struct MPI_ABI_Comm *local, int leader, const struct hashi_leader_link *link,
                            uint32_t *msg)
{
    uint32_t mine[CONTEXT_MSG_WORDS], remote[CONTEXT_MSG_WORDS];
    int rc = MPI_SUCCESS;
    memcpy(mine, msg, sizeof mine);
    if (local->size > 1) {
        struct hashi_sched *s = hashi_sched_create(local);
        rc = s ? hashi_coll_build_reduce(s, mine, msg, CONTEXT_MSG_WORDS, MPI_UINT32_T, MPI_BAND, leader, local)
               : MPI_ERR_NO_MEM;
        if (s)
            rc = rc == MPI_SUCCESS ? hashi_sched_run(s) : (hashi_sched_destroy(s), rc);
    }
    if (rc == MPI_SUCCESS && local->rank == leader) {
        rc = hashi_leader_exchange(link, msg, remote, sizeof remote);
        for (size_t i = 0; i < CONTEXT_MSG_WORDS; i++)
            msg[i] &= remote[i];
    }
    if (rc == MPI_SUCCESS && local->size > 1) {
        struct hashi_sched *s = hashi_sched_create(local);
        rc = s ? hashi_coll_build_bcast(s, msg, CONTEXT_MSG_WORDS, MPI_UINT32_T, leader, local) : MPI_ERR_NO_MEM;
        if (s)
            rc = rc == MPI_SUCCESS ? hashi_sched_run(s) : (hashi_sched_destroy(s), rc);
    }
    return rc;
}

int hashi_context_agree_inter(struct MPI_ABI_Comm *local, int leader, const struct hashi_leader_link *link,
                              int join, uint32_t *context_id, int *exhausted)
{
    uint32_t offered[CONTEXT_WINDOW_WORDS], msg[CONTEXT_MSG_WORDS];
    uint32_t first = 0;
    int held_back = 0;
    *exhausted = 0;
    for (;;) {
        offer_pairs(first, offered, msg);
        int rc = window_and_inter(local, leader, link, msg);
        if (rc != MPI_SUCCESS) {
            settle_pairs(first, offered, CONTEXT_PAIRS, 0);
            return rc;
        }
        /* Every member of both groups has the same AND: the same choice. */
        uint32_t pair = window_pick(first, msg);
        held_back |= msg[CONTEXT_WINDOW_WORDS] != NOBODY_HELD_BACK;
        if (settle_pairs(first, offered, pair, join) != 0)
            return MPI_ERR_INTERN;
        if (pair != CONTEXT_PAIRS) {
            *context_id = 2 * pair;
            return MPI_SUCCESS;
        }
        first += CONTEXT_WINDOW_WORDS;
        if (first >= CONTEXT_MASK_WORDS) {
            if (!held_back) {
                *exhausted = 1;
                return MPI_ERR_OTHER;
            }
            /* Only held back by agreements in flight: their progress runs
             * while the next round's messages are awaited. */
            first = 0;
            held_back = 0;
        }
    }
}
