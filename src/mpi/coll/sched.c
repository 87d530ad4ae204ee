/*
 * The collective engine: schedules of rounds of steps (sched.h has the
 * contract). A schedule is an array of steps in which a FENCE step ends a
 * round; running it means starting every step of the current round (posting
 * sends and receives in order, running local steps), then, once every
 * request of the round has completed, starting the next round.
 *
 * Who drives a schedule:
 *  - blocking (hashi_sched_run): the caller's wait loop; its predicate
 *    advances the schedule after every progress poll. The schedule is never
 *    on the engine's list and no request object is made.
 *  - nonblocking and persistent (hashi_sched_to_request): the schedule is on
 *    the engine's active list while it runs, and the progress hook registered
 *    with hashi_progress_register advances it at every poll of any MPI call.
 *
 * Cost on the hot path: schedule objects come from a small cache, steps live
 * in an array inside the object (grown only for long schedules), scratch
 * memory up to SCHED_INLINE_SCRATCH bytes too; so a small blocking
 * collective does no malloc at all.
 */
#include "mpi/coll/sched.h"

#include "mpi/coll/coll.h"

#include "device/device.h"
#include "mpi/comm.h"
#include "mpi/datatype.h"
#include "mpi/p2p.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum step_kind { STEP_SEND, STEP_RECV, STEP_REDUCE, STEP_COPY, STEP_CALLBACK, STEP_SUB, STEP_DEVICE, STEP_FENCE };

struct sched_step {
    enum step_kind kind;
    union {
        struct { void *buf; MPI_Count count; MPI_Datatype type; int peer; } p2p;
        struct { const void *in; void *inout; MPI_Count count; MPI_Datatype type; MPI_Op op; } reduce;
        struct {
            const void *src; MPI_Count scount; MPI_Datatype stype;
            void *dst; MPI_Count dcount; MPI_Datatype dtype;
        } copy;
        struct { int (*fn)(struct hashi_sched *s, void *arg); void *arg; } cb;
        struct hashi_sched *sub;    /* a schedule on another communicator, owned */
        struct hashi_device_coll_op *dev;   /* the device's operation, owned */
    } u;
    struct MPI_ABI_Request *req;    /* send / receive in flight */
    int dev_running;                /* STEP_DEVICE: started and not yet seen complete */
};

/* Steps kept inside the schedule object: enough for the trees, recursive
 * doubling and dissemination at a few hundred ranks without a malloc. */
#define SCHED_INLINE_STEPS 24
/* Scratch bytes inside the object: small reductions need no malloc. */
#define SCHED_INLINE_SCRATCH 512
/* Schedule objects kept for reuse after they are destroyed. */
#define SCHED_CACHE_MAX 16

/* Large scratch blocks kept for the next schedule: a collective on a 1 MiB
 * vector would otherwise malloc and free its temporaries on every call, and
 * glibc hands such blocks back to the kernel (mmap, or trimming the heap top),
 * so every call paid a page fault per 4 KiB (reduce at 1 MiB ran 4x slower
 * than Open MPI). A few blocks, the largest kept, bounded in bytes. */
#define SCRATCH_CACHE_BLOCKS 4
#define SCRATCH_CACHE_BYTES ((size_t)64 << 20)

struct scratch_block {
    struct scratch_block *next;
    size_t capacity;
    alignas(max_align_t) unsigned char data[];
};

struct hashi_sched {
    struct MPI_ABI_Comm *comm;      /* retained */
    int tag;
    int nsteps, cap;
    struct sched_step *steps;       /* inline_steps, or malloc'd when grown */

    /* running state */
    int pc;                         /* first step of the current round */
    int round_end;                  /* index of the round's FENCE, or nsteps */
    int scan;                       /* first step of the round that may still be pending */
    int running;                    /* a round is started and not yet complete */
    int finished;
    int error;                      /* first error class, MPI_SUCCESS */

    struct MPI_ABI_Request *request;  /* nonblocking / persistent; NULL when blocking */
    struct hashi_sched *prev, *next;  /* engine's active list */

    size_t scratch_used;
    struct scratch_block *scratch_blocks;
    struct hashi_sched *next_cached;
    alignas(max_align_t) unsigned char inline_scratch[SCHED_INLINE_SCRATCH];
    struct sched_step inline_steps[SCHED_INLINE_STEPS];
};

static struct {
    struct hashi_sched *active_head, *active_tail;
    struct hashi_sched *cache;
    int cached;
    int hook_registered;
    int in_hook;                    /* the hook does not re-enter itself (user ops may call MPI) */
    struct scratch_block *scratch_cache[SCRATCH_CACHE_BLOCKS];
    size_t scratch_cached_bytes;
} engine;

void hashi_sched_release_memory(void)
{
    while (engine.cache) {
        struct hashi_sched *s = engine.cache;
        engine.cache = s->next_cached;
        free(s);
    }
    engine.cached = 0;
    for (int i = 0; i < SCRATCH_CACHE_BLOCKS; i++) {
        free(engine.scratch_cache[i]);
        engine.scratch_cache[i] = NULL;
    }
    engine.scratch_cached_bytes = 0;
}

/* A cached block of at least `bytes` (the smallest that fits), or NULL. */
static struct scratch_block *scratch_cache_take(size_t bytes)
{
    int best = -1;
    for (int i = 0; i < SCRATCH_CACHE_BLOCKS; i++) {
        struct scratch_block *b = engine.scratch_cache[i];
        if (b && b->capacity >= bytes && (best < 0 || b->capacity < engine.scratch_cache[best]->capacity))
            best = i;
    }
    if (best < 0)
        return NULL;
    struct scratch_block *b = engine.scratch_cache[best];
    engine.scratch_cache[best] = NULL;
    engine.scratch_cached_bytes -= b->capacity;
    return b;
}

/* Keep b for later if it is worth it, else free it (or the smallest cached
 * block, when b is larger and the cache is full). */
static void scratch_cache_give(struct scratch_block *b)
{
    int slot = -1;
    for (int i = 0; i < SCRATCH_CACHE_BLOCKS && slot < 0; i++)
        if (!engine.scratch_cache[i])
            slot = i;
    if (slot < 0) {
        for (int i = 0; i < SCRATCH_CACHE_BLOCKS; i++)
            if (slot < 0 || engine.scratch_cache[i]->capacity < engine.scratch_cache[slot]->capacity)
                slot = i;
        if (engine.scratch_cache[slot]->capacity >= b->capacity) {
            free(b);
            return;
        }
        engine.scratch_cached_bytes -= engine.scratch_cache[slot]->capacity;
        free(engine.scratch_cache[slot]);
        engine.scratch_cache[slot] = NULL;
    }
    if (engine.scratch_cached_bytes + b->capacity > SCRATCH_CACHE_BYTES) {
        free(b);
        return;
    }
    engine.scratch_cache[slot] = b;
    engine.scratch_cached_bytes += b->capacity;
}

/* ---- tags ---- */

#define COLL_TAG_SPAN ((uint32_t)(HASHI_TAG_COLL_LAST - HASHI_TAG_COLL_FIRST + 1))

int hashi_coll_next_tag(struct MPI_ABI_Comm *comm)
{
    uint32_t seq = comm->coll_seq++;
    return HASHI_TAG_COLL_FIRST + (int)(seq % COLL_TAG_SPAN);
}

/* ---- building ---- */

struct hashi_sched *hashi_sched_create(struct MPI_ABI_Comm *comm)
{
    struct hashi_sched *s = engine.cache;
    if (s) {
        engine.cache = s->next_cached;
        engine.cached--;
    } else {
        s = malloc(sizeof *s);
        if (!s)
            return NULL;
    }
    /* Everything before the inline areas; those are written before use. */
    memset(s, 0, offsetof(struct hashi_sched, inline_scratch));
    s->steps = s->inline_steps;
    s->cap = SCHED_INLINE_STEPS;
    s->comm = comm;
    hashi_comm_retain(comm);
    s->tag = hashi_coll_next_tag(comm);
    return s;
}

static void release_step_refs(struct sched_step *st)
{
    switch (st->kind) {
    case STEP_SEND:
    case STEP_RECV:
        if (!hashi_handle_is_predefined(st->u.p2p.type))
            hashi_type_release(hashi_type_get(st->u.p2p.type));
        break;
    case STEP_REDUCE:
        if (!hashi_handle_is_predefined(st->u.reduce.type))
            hashi_type_release(hashi_type_get(st->u.reduce.type));
        hashi_op_release(st->u.reduce.op);
        break;
    case STEP_SUB:
        hashi_sched_destroy(st->u.sub);
        break;
    case STEP_DEVICE:
        hashi_device->coll.op_free(st->u.dev);
        break;
    case STEP_COPY:
        if (!hashi_handle_is_predefined(st->u.copy.stype))
            hashi_type_release(hashi_type_get(st->u.copy.stype));
        if (!hashi_handle_is_predefined(st->u.copy.dtype))
            hashi_type_release(hashi_type_get(st->u.copy.dtype));
        break;
    default:
        break;
    }
}

void hashi_sched_destroy(struct hashi_sched *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nsteps; i++) {
        /* A schedule destroyed with requests in flight would leave the device
         * writing into freed memory: never happens (requests finish before). */
        if (s->steps[i].req)
            hashi_request_free(s->steps[i].req);
        release_step_refs(&s->steps[i]);
    }
    if (s->steps != s->inline_steps)
        free(s->steps);
    while (s->scratch_blocks) {
        struct scratch_block *b = s->scratch_blocks;
        s->scratch_blocks = b->next;
        scratch_cache_give(b);
    }
    hashi_comm_release(s->comm);
    if (engine.cached < SCHED_CACHE_MAX) {
        s->next_cached = engine.cache;
        engine.cache = s;
        engine.cached++;
    } else {
        free(s);
    }
}

static struct sched_step *add_step(struct hashi_sched *s, enum step_kind kind)
{
    if (s->nsteps == s->cap) {
        int cap = s->cap * 2;
        struct sched_step *steps;
        if (s->steps == s->inline_steps) {
            steps = malloc((size_t)cap * sizeof *steps);
            if (steps)
                memcpy(steps, s->inline_steps, sizeof s->inline_steps);
        } else {
            steps = realloc(s->steps, (size_t)cap * sizeof *steps);
        }
        if (!steps)
            return NULL;
        s->steps = steps;
        s->cap = cap;
    }
    struct sched_step *st = &s->steps[s->nsteps++];
    st->kind = kind;
    st->req = NULL;
    st->dev_running = 0;
    return st;
}

/* Derived datatypes named by steps stay alive with the schedule (the program
 * may free its handle while a nonblocking collective runs). */
static void retain_type(MPI_Datatype type)
{
    if (!hashi_handle_is_predefined(type)) {
        struct MPI_ABI_Datatype *t = hashi_type_get(type);
        if (t)
            hashi_type_retain(t);
    }
}

static int add_p2p(struct hashi_sched *s, enum step_kind kind, void *buf, MPI_Count count, MPI_Datatype type,
                   int peer)
{
    if (peer == MPI_PROC_NULL)
        return MPI_SUCCESS;
    struct sched_step *st = add_step(s, kind);
    if (!st)
        return MPI_ERR_NO_MEM;
    st->u.p2p.buf = buf;
    st->u.p2p.count = count;
    st->u.p2p.type = type;
    st->u.p2p.peer = peer;
    retain_type(type);
    return MPI_SUCCESS;
}

int hashi_sched_send(struct hashi_sched *s, const void *buf, MPI_Count count, MPI_Datatype type, int dest)
{
    return add_p2p(s, STEP_SEND, (void *)buf, count, type, dest);
}

int hashi_sched_recv(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int source)
{
    return add_p2p(s, STEP_RECV, buf, count, type, source);
}

int hashi_sched_reduce(struct hashi_sched *s, const void *in, void *inout, MPI_Count count, MPI_Datatype type,
                       MPI_Op op)
{
    if (count == 0)
        return MPI_SUCCESS;
    struct sched_step *st = add_step(s, STEP_REDUCE);
    if (!st)
        return MPI_ERR_NO_MEM;
    st->u.reduce.in = in;
    st->u.reduce.inout = inout;
    st->u.reduce.count = count;
    st->u.reduce.type = type;
    st->u.reduce.op = op;
    retain_type(type);
    hashi_op_retain(op);
    return MPI_SUCCESS;
}

int hashi_sched_copy(struct hashi_sched *s, const void *src, MPI_Count scount, MPI_Datatype stype, void *dst,
                     MPI_Count dcount, MPI_Datatype dtype)
{
    struct sched_step *st = add_step(s, STEP_COPY);
    if (!st)
        return MPI_ERR_NO_MEM;
    st->u.copy.src = src;
    st->u.copy.scount = scount;
    st->u.copy.stype = stype;
    st->u.copy.dst = dst;
    st->u.copy.dcount = dcount;
    st->u.copy.dtype = dtype;
    retain_type(stype);
    retain_type(dtype);
    return MPI_SUCCESS;
}

int hashi_sched_callback(struct hashi_sched *s, int (*fn)(struct hashi_sched *s, void *arg), void *arg)
{
    struct sched_step *st = add_step(s, STEP_CALLBACK);
    if (!st)
        return MPI_ERR_NO_MEM;
    st->u.cb.fn = fn;
    st->u.cb.arg = arg;
    return MPI_SUCCESS;
}

int hashi_sched_sub(struct hashi_sched *s, struct hashi_sched *sub)
{
    struct sched_step *st = add_step(s, STEP_SUB);
    if (!st) {
        hashi_sched_destroy(sub);
        return MPI_ERR_NO_MEM;
    }
    st->u.sub = sub;
    return MPI_SUCCESS;
}

int hashi_sched_mark(const struct hashi_sched *s)
{
    return s->nsteps;
}

void hashi_sched_rollback(struct hashi_sched *s, int mark)
{
    while (s->nsteps > mark)
        release_step_refs(&s->steps[--s->nsteps]);
}

int hashi_sched_device(struct hashi_sched *s, const struct hashi_device_coll_args *args)
{
    const struct hashi_device_coll_ops *ops = &hashi_device->coll;
    if (!ops->op_init)
        return HASHI_DEVICE_COLL_DECLINE;
    struct sched_step *st = add_step(s, STEP_DEVICE);
    if (!st)
        return MPI_ERR_NO_MEM;
    /* The device's own messages (the exchange kind's) use the schedule's
     * tag: no other step of this schedule sends. */
    struct hashi_device_coll_args a = *args;
    a.tag = s->tag;
    int rc = ops->op_init(&a, &st->u.dev);
    if (rc != MPI_SUCCESS)
        s->nsteps--;   /* declined or failed: no step */
    return rc;
}

int hashi_sched_fence(struct hashi_sched *s)
{
    /* An empty round (two fences in a row, or a fence first) is no round. */
    if (s->nsteps == 0 || s->steps[s->nsteps - 1].kind == STEP_FENCE)
        return MPI_SUCCESS;
    return add_step(s, STEP_FENCE) ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

void *hashi_sched_scratch(struct hashi_sched *s, size_t bytes)
{
    const size_t align = alignof(max_align_t);
    size_t rounded = (bytes + align - 1) / align * align;
    if (rounded <= SCHED_INLINE_SCRATCH - s->scratch_used) {
        void *p = s->inline_scratch + s->scratch_used;
        s->scratch_used += rounded;
        return p;
    }
    struct scratch_block *b = scratch_cache_take(bytes);
    if (!b) {
        b = malloc(sizeof *b + (bytes ? bytes : 1));
        if (!b)
            return NULL;
        b->capacity = bytes ? bytes : 1;
    }
    b->next = s->scratch_blocks;
    s->scratch_blocks = b;
    return b->data;
}

/* ---- running ---- */

int hashi_coll_copy(const void *src, MPI_Count scount, MPI_Datatype stype, void *dst, MPI_Count dcount,
                          MPI_Datatype dtype)
{
    const struct MPI_ABI_Datatype *st = hashi_type_get(stype), *dt = hashi_type_get(dtype);
    if (!st || !dt)
        return MPI_ERR_TYPE;
    size_t sbytes = (size_t)hashi_type_bytes(st, scount), dbytes = (size_t)hashi_type_bytes(dt, dcount);
    if (sbytes > dbytes)
        return MPI_ERR_TRUNCATE;
    if (sbytes == 0)
        return MPI_SUCCESS;
    int scontig = hashi_type_is_contig_count(st, scount), dcontig = hashi_type_is_contig_count(dt, dcount);
    const unsigned char *sp = (const unsigned char *)src + st->true_lb;
    unsigned char *dp = (unsigned char *)dst + dt->true_lb;
    if (scontig && dcontig) {
        if (sp != dp)
            memmove(dp, sp, sbytes);
    } else if (dcontig) {
        hashi_type_pack(src, scount, st, 0, dp, sbytes);
    } else if (scontig) {
        hashi_type_unpack(dst, dcount, dt, 0, sp, sbytes);
    } else {
        /* Both strided: through a bounce buffer, a chunk at a time. */
        unsigned char chunk[4096];
        for (size_t off = 0; off < sbytes;) {
            size_t n = sbytes - off < sizeof chunk ? sbytes - off : sizeof chunk;
            hashi_type_pack(src, scount, st, off, chunk, n);
            hashi_type_unpack(dst, dcount, dt, off, chunk, n);
            off += n;
        }
    }
    return MPI_SUCCESS;
}

static void reset(struct hashi_sched *s);
static int advance(struct hashi_sched *s);

/* Start the steps of the round at s->pc; sets round_end. */
static void start_round(struct hashi_sched *s)
{
    uint32_t ctx = hashi_comm_coll_context(s->comm);
    int i = s->pc;
    for (; i < s->nsteps; i++) {
        struct sched_step *st = &s->steps[i];
        int rc = MPI_SUCCESS;
        switch (st->kind) {
        case STEP_FENCE:
            goto end;
        case STEP_SEND:
            rc = hashi_isend_internal(st->u.p2p.buf, st->u.p2p.count, st->u.p2p.type, st->u.p2p.peer, s->tag,
                                      s->comm, ctx, &st->req);
            break;
        case STEP_RECV:
            rc = hashi_irecv_internal(st->u.p2p.buf, st->u.p2p.count, st->u.p2p.type, st->u.p2p.peer, s->tag,
                                      s->comm, ctx, &st->req);
            break;
        case STEP_REDUCE:
            rc = hashi_op_reduce(st->u.reduce.op, st->u.reduce.in, st->u.reduce.inout, st->u.reduce.count,
                                 st->u.reduce.type);
            break;
        case STEP_COPY:
            rc = hashi_coll_copy(st->u.copy.src, st->u.copy.scount, st->u.copy.stype, st->u.copy.dst,
                                       st->u.copy.dcount, st->u.copy.dtype);
            break;
        case STEP_CALLBACK:
            rc = st->u.cb.fn(s, st->u.cb.arg);
            break;
        case STEP_SUB:
            /* Started here, driven by this schedule's advance (never on the
             * engine's list itself). */
            reset(st->u.sub);
            advance(st->u.sub);
            break;
        case STEP_DEVICE:
            rc = hashi_device->coll.op_start(st->u.dev);
            st->dev_running = rc == MPI_SUCCESS;
            break;
        }
        if (rc != MPI_SUCCESS) {
            /* Post nothing more; the round still waits for what it posted. */
            if (s->error == MPI_SUCCESS)
                s->error = rc;
            i++;
            break;
        }
    }
end:
    s->round_end = i;
    s->scan = s->pc;
    s->running = 1;
}

/*
 * Move the schedule as far as it goes without waiting. Returns 1 once it has
 * finished (every round done, or a failed round drained).
 */
static int advance(struct hashi_sched *s)
{
    while (!s->finished) {
        if (s->running) {
            for (int i = s->scan; i < s->round_end; i++) {
                struct sched_step *st = &s->steps[i];
                if (st->kind == STEP_DEVICE) {
                    if (!st->dev_running)
                        continue;
                    int done = 0, err = hashi_device->coll.op_progress(st->u.dev, &done);
                    if (err == MPI_SUCCESS && !done) {
                        s->scan = i;
                        return 0;
                    }
                    st->dev_running = 0;
                    if (err != MPI_SUCCESS && s->error == MPI_SUCCESS)
                        s->error = err;
                    continue;
                }
                if (st->kind == STEP_SUB) {
                    if (!advance(st->u.sub)) {
                        s->scan = i;
                        return 0;
                    }
                    if (st->u.sub->error != MPI_SUCCESS && s->error == MPI_SUCCESS)
                        s->error = st->u.sub->error;
                    continue;
                }
                if (!st->req)
                    continue;
                if (!hashi_request_is_complete(st->req)) {
                    s->scan = i;
                    return 0;
                }
                int err = st->req->status.MPI_ERROR;
                hashi_request_free(st->req);
                st->req = NULL;
                if (err != MPI_SUCCESS && s->error == MPI_SUCCESS)
                    s->error = err;
            }
            s->running = 0;
            s->pc = s->round_end < s->nsteps ? s->round_end + 1 : s->nsteps;
        }
        if (s->error != MPI_SUCCESS || s->pc >= s->nsteps) {
            s->finished = 1;
            break;
        }
        start_round(s);
    }
    return 1;
}

static void reset(struct hashi_sched *s)
{
    s->pc = 0;
    s->round_end = 0;
    s->scan = 0;
    s->running = 0;
    s->finished = 0;
    s->error = MPI_SUCCESS;
}

/* ---- the engine's list of running nonblocking schedules ---- */

static void list_remove(struct hashi_sched *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        engine.active_head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        engine.active_tail = s->prev;
    s->prev = s->next = NULL;
}

static void list_append(struct hashi_sched *s)
{
    s->next = NULL;
    s->prev = engine.active_tail;
    if (engine.active_tail)
        engine.active_tail->next = s;
    else
        engine.active_head = s;
    engine.active_tail = s;
}

/* The schedule of a request has finished: complete the request (which drops
 * the operation's reference and may free request and schedule). */
static void complete_request(struct hashi_sched *s)
{
    struct MPI_ABI_Request *req = s->request;
    req->status.MPI_ERROR = s->error;
    hashi_request_complete(req);
}

static int engine_progress(void)
{
    if (engine.in_hook || !engine.active_head)
        return 0;
    engine.in_hook = 1;
    int completed = 0;
    for (struct hashi_sched *s = engine.active_head, *next; s; s = next) {
        next = s->next;
        if (advance(s)) {
            list_remove(s);
            complete_request(s);
            completed++;
        }
    }
    engine.in_hook = 0;
    return completed;
}

/* Start a request's schedule: finished at once (no communication, or a
 * failure to post), or onto the active list. */
static int launch(struct hashi_sched *s)
{
    if (!engine.hook_registered) {
        if (hashi_progress_register(engine_progress) != 0)
            return MPI_ERR_INTERN;
        engine.hook_registered = 1;
    }
    reset(s);
    if (advance(s))
        complete_request(s);
    else
        list_append(s);
    return MPI_SUCCESS;
}

static int request_start(struct MPI_ABI_Request *req)
{
    /* MPI_Start has taken the operation's reference and cleared the status. */
    return launch(req->extra);
}

static void request_freed(struct MPI_ABI_Request *req)
{
    hashi_sched_destroy(req->extra);
    req->extra = NULL;
}

int hashi_sched_to_request(struct hashi_sched *s, int persistent, struct MPI_ABI_Request **out)
{
    *out = NULL;
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_COLL);
    if (!req) {
        hashi_sched_destroy(s);
        return MPI_ERR_NO_MEM;
    }
    req->comm = s->comm;
    hashi_comm_retain(s->comm);
    req->extra = s;
    req->on_free = request_freed;
    s->request = req;
    if (persistent) {
        req->persistent = 1;
        req->start = request_start;
        atomic_store_explicit(&req->complete, 1, memory_order_relaxed);   /* inactive */
        *out = req;
        return MPI_SUCCESS;
    }
    hashi_request_retain(req);   /* the operation's reference */
    int rc = launch(s);
    if (rc != MPI_SUCCESS) {
        hashi_request_free(req);   /* the operation's */
        hashi_request_free(req);   /* the owner's: frees the schedule too */
        return rc;
    }
    *out = req;
    return MPI_SUCCESS;
}

static int blocking_done(void *arg)
{
    return advance(arg);
}

int hashi_sched_run(struct hashi_sched *s)
{
    reset(s);
    if (!advance(s))
        hashi_progress_wait_until(blocking_done, s);
    int rc = s->error;
    hashi_sched_destroy(s);
    return rc;
}
