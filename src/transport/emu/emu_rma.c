/*
 * The emulated NIC, part 2: memory registration and PUSH / PULL.
 *
 * Two paths:
 * - single copy (CMA): the initiator copies straight between its buffer
 *   and the peer's registered region with process_vm_writev / readv; the
 *   peer runs no code. Used whenever the kernel allows it (checked against
 *   every local peer at connect) unless the size falls in the pipeline range.
 * - staged: the data goes through the data receiver's two-chunk staging
 *   window: the producer fills one chunk while the consumer drains the
 *   other (the BOTF two-window idea at scale). The peer's progress takes
 *   part: it drains a PUSH into its region (then stores the signal and
 *   answers PUT_DONE) or fills the initiator's window for a PULL. The
 *   window has one producer at a time, claimed by a compare-and-swap on its
 *   owner word; whoever consumes the last chunk frees it.
 * Completions are queued and run from progress (never inside put / get).
 * Large CMA copies (HASHI_EMU_CMA_DEFER) run from progress too, one per call
 * in issue order: a rank that matches many rendezvous at once then answers
 * all of them (CTS) before copying, and the peer copies its parts meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"
#include "transport/emu/emu.h"

/* A registered region (doubly linked: a rendezvous deregisters its buffer
 * in about the order registered, i.e. from the list's far end, and 64
 * messages in flight each way made that walk show in profiles). */
struct emu_reg {
    struct emu_reg *next, *prev;
    uint32_t id;
    uintptr_t addr;
    size_t len;
};

enum op_state { ST_CLAIM, ST_START, ST_STREAM, ST_WAIT_ACK, ST_CMA };

/* An initiator's put or get. */
struct emu_op {
    struct emu_op *next;
    int is_put;
    enum op_state state;
    int lpeer;
    unsigned char *local;
    size_t len, moved;
    uint64_t chunk;
    struct emu_rma_msg msg;     /* PUT_START / GET_REQ */
    hashi_tl_done_fn done;
    void *arg;
    int status;
};

/* A staged PUSH this rank drains from its window (one at a time: the window
 * has one producer). */
struct incoming_put {
    int active;
    int lsrc;
    unsigned char *dst;         /* NULL: refused, chunks are discarded */
    size_t len, moved;
    uint64_t chunk;
    struct emu_rma_msg msg;
};

/* A staged PULL this rank serves into a requester's window. */
struct served_get {
    struct served_get *next;
    int lreq;
    const unsigned char *src;
    size_t len, moved;
    uint64_t chunk;
};

static struct emu_reg *regs;
static uint32_t next_regid = 1;
static struct emu_op *pending, *completed, **completed_tail = &completed;
static struct emu_op *cma_queue, **cma_tail = &cma_queue;   /* deferred CMA copies, in issue order */
static struct incoming_put incoming;
static struct served_get *serving;
static int cma_warned;

int hashi_emu_rma_init(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    emu.cma_allowed = strcmp(hashi_param_str(HASHI_P_EMU_CMA), "off") != 0;
    emu.pipe_min = (size_t)hashi_param_int(HASHI_P_EMU_PIPE_MIN);
    emu.pipe_max = (size_t)hashi_param_int(HASHI_P_EMU_PIPE_MAX);
    emu.cma_defer = (size_t)hashi_param_int(HASHI_P_EMU_CMA_DEFER);
    return 0;
}

static void cma_disable(struct emu_peer *p, const char *why)
{
    p->cma = 0;
    if (!cma_warned++ && (hashi_log_level >= 1 || hashi_job.local_rank == 0))
        hashi_log("emu transport: single-copy CMA (process_vm_readv/writev) to rank %d is not permitted: %s; "
                  "PUSH/PULL are staged through shared memory instead (two copies)", p->world, why);
}

static const char *cma_reason(int e)
{
    switch (e) {
    case EPERM:
        return "EPERM (ptrace rules forbid it: another uid, a process that changed uid or is not dumpable, "
               "or a Yama ptrace_scope / seccomp policy)";
    case ENOSYS:
        return "ENOSYS (the kernel lacks CONFIG_CROSS_MEMORY_ATTACH)";
    default:
        return strerror(e);
    }
}

void hashi_emu_rma_probe_cma(void)
{
    for (int i = 0; i < emu.nlocal; i++) {
        struct emu_peer *p = &emu.peer[i];
        p->cma = 0;
        if (i == emu.me || !emu.cma_allowed)
            continue;
        uint64_t magic = 0;
        struct iovec l = { &magic, sizeof magic };
        struct iovec r = { (void *)(uintptr_t)p->hdr->self_addr, sizeof magic };
        ssize_t n = process_vm_readv(p->pid, &l, 1, &r, 1, 0);
        if (n == (ssize_t)sizeof magic && magic == EMU_MAGIC)
            p->cma = 1;
        else if (n < 0 && errno == ESRCH)
            continue;   /* the peer already exited: the launcher ends the job, nothing to warn about */
        else
            cma_disable(p, n < 0 ? cma_reason(errno) : "the probe read wrong data");
    }
}

/* ---- registration ---------------------------------------------------- */

int hashi_emu_mem_reg(void *buf, size_t len, void **handle)
{
    struct emu_reg *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    r->id = next_regid++;
    if (next_regid == 0)
        next_regid = 1;
    r->addr = (uintptr_t)buf;
    r->len = len;
    r->next = regs;
    r->prev = NULL;
    if (regs)
        regs->prev = r;
    regs = r;
    *handle = r;
    return 0;
}

void hashi_emu_mem_dereg(void *handle)
{
    struct emu_reg *r = handle;
    if (r->prev)
        r->prev->next = r->next;
    else
        regs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    free(r);
}

void hashi_emu_rkey_pack(void *handle, const struct hashi_tl_mem *mem, int peer, struct hashi_tl_rkey *rkey)
{
    (void)mem;
    (void)peer;
    const struct emu_reg *r = handle;
    /* Our pid as the segment recorded it: getpid() is a system call. */
    struct emu_rkey k = { .addr = r->addr, .len = r->len, .regid = r->id, .pid = emu.seg->pid };
    memcpy(rkey->bytes, &k, sizeof k);
}

/* The target side's check of a staged request: a live registration covers it. */
static unsigned char *reg_lookup(uint32_t id, uint64_t addr, uint64_t len)
{
    for (struct emu_reg *r = regs; r; r = r->next)
        if (r->id == id && addr >= r->addr && len <= r->len && addr - r->addr <= r->len - len)
            return (unsigned char *)(uintptr_t)addr;
    return NULL;
}

/* ---- the staging window --------------------------------------------- */

/* Fill the window of segment h from src; returns chunks produced. */
static int window_produce(struct emu_seg_hdr *h, int target_world, const unsigned char *src, size_t len,
                          size_t *moved, uint64_t *chunk)
{
    int n = 0;
    size_t csize = h->win_chunk;
    while (*moved < len) {
        struct emu_chunk_flag *f = &h->win_flag[*chunk & 1];
        if (atomic_load_explicit(&f->full, memory_order_acquire))
            break;
        size_t c = len - *moved < csize ? len - *moved : csize;
        memcpy(emu_window(h) + (*chunk & 1) * csize, src + *moved, c);
        f->len = c;
        atomic_store_explicit(&f->full, 1, memory_order_release);
        *moved += c;
        (*chunk)++;
        n++;
    }
    if (n)
        hashi_wake_peer(target_world);
    return n;
}

/* Drain my own window into dst (NULL: discard); returns chunks consumed. */
static int window_consume(unsigned char *dst, size_t len, size_t *moved, uint64_t *chunk, int producer_world)
{
    struct emu_seg_hdr *h = emu.seg;
    int n = 0;
    while (*moved < len) {
        struct emu_chunk_flag *f = &h->win_flag[*chunk & 1];
        if (!atomic_load_explicit(&f->full, memory_order_acquire))
            break;
        size_t c = f->len;
        if (dst)
            memcpy(dst + *moved, emu_window(h) + (*chunk & 1) * h->win_chunk, c);
        atomic_store_explicit(&f->full, 0, memory_order_release);
        *moved += c;
        (*chunk)++;
        n++;
    }
    if (n)
        hashi_wake_peer(producer_world);   /* room for the producer */
    return n;
}

/* ---- initiator ------------------------------------------------------- */

static void complete(struct emu_op *op, int status)
{
    op->status = status;
    op->next = NULL;
    *completed_tail = op;
    completed_tail = &op->next;
}

static void unlink_pending(struct emu_op *op)
{
    for (struct emu_op **pp = &pending; *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            return;
        }
}

static struct emu_op *new_op(int is_put, int lpeer, void *local, size_t len, hashi_tl_done_fn done, void *arg)
{
    struct emu_op *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    op->is_put = is_put;
    op->lpeer = lpeer;
    op->local = local;
    op->len = len;
    op->done = done;
    op->arg = arg;
    return op;
}

/* Copy with process_vm_*; 0 or -errno (partial transfers are continued). */
static int cma_copy(int is_put, pid_t pid, unsigned char *local, uint64_t remote, size_t len)
{
    while (len > 0) {
        struct iovec l = { local, len }, r = { (void *)(uintptr_t)remote, len };
        ssize_t n = is_put ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        local += n;
        remote += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

/* Validate a request against the key; the absolute remote address or 0. */
static int check_key(struct emu_peer *p, const struct hashi_tl_rkey *rkey, uint64_t offset, size_t len,
                     struct emu_rkey *k)
{
    memcpy(k, rkey->bytes, sizeof *k);
    if (k->pid != (uint32_t)p->pid || offset > k->len || len > k->len - offset)
        return -EINVAL;
    return 0;
}

/* Hand op to the staged path (PUT_START / GET_REQ through the window). */
static void stage(struct emu_op *op)
{
    op->state = ST_CLAIM;
    op->next = pending;
    pending = op;
}

/* Move op's bytes now: memcpy to oneself, else CMA, then store the signal and
 * queue the completion. A copy the kernel refuses goes staged instead. */
static void single_copy(struct emu_op *op)
{
    struct emu_peer *p = &emu.peer[op->lpeer];
    uint64_t remote = op->msg.addr;
    int rc = 0;
    if (op->lpeer == emu.me)
        memcpy(op->is_put ? (void *)(uintptr_t)remote : op->local,
               op->is_put ? op->local : (void *)(uintptr_t)remote, op->len);
    else if (op->len)
        rc = cma_copy(op->is_put, p->pid, op->local, remote, op->len);
    if (rc == -EPERM || rc == -ENOSYS) {
        cma_disable(p, cma_reason(-rc));
        stage(op);
        return;
    }
    if (rc == 0 && op->msg.sig_size) {
        atomic_thread_fence(memory_order_seq_cst);   /* the signal lands after the data */
        hashi_emu_store(p->hdr, op->msg.sig_off, op->msg.sig_val, op->msg.sig_size);
        hashi_wake_peer(p->world);
    }
    complete(op, rc);
}

static int start(int is_put, int peer, unsigned char *local, size_t len, const struct hashi_tl_rkey *rkey,
                 uint64_t offset, const struct hashi_tl_signal *sig, hashi_tl_done_fn done, void *arg)
{
    int lp = emu.local_of[peer];
    struct emu_peer *p = &emu.peer[lp];
    struct emu_rkey k;
    if (check_key(p, rkey, offset, len, &k) != 0)
        return -EINVAL;
    if (sig && ((sig->size != 1 && sig->size != 2 && sig->size != 4 && sig->size != 8) ||
                sig->offset % sig->size || sig->offset + sig->size > emu.cfg.llcm_size))
        return -EINVAL;
    struct emu_op *op = new_op(is_put, lp, local, len, done, arg);
    if (!op)
        return -ENOMEM;
    uint64_t remote = k.addr + offset;
    int staged = p->cma && (!emu.pipe_min || len < emu.pipe_min || (emu.pipe_max && len > emu.pipe_max)) ? 0 : 1;
    op->msg.cookie = (uint64_t)(uintptr_t)op;
    op->msg.addr = remote;
    op->msg.len = len;
    op->msg.regid = k.regid;
    if (sig) {
        op->msg.sig_off = sig->offset;
        op->msg.sig_val = sig->value;
        op->msg.sig_size = sig->size;
    }
    if (lp != emu.me && !staged && emu.cma_defer && len >= emu.cma_defer) {
        op->state = ST_CMA;
        *cma_tail = op;
        cma_tail = &op->next;
        return 0;
    }
    if (lp == emu.me || len == 0 || !staged) {
        single_copy(op);
        return 0;
    }
    stage(op);
    return 0;
}

int hashi_emu_put(int peer, const void *src, size_t len, const struct hashi_tl_mem *src_mem,
                  const struct hashi_tl_rkey *rkey, uint64_t offset, const struct hashi_tl_signal *sig,
                  hashi_tl_done_fn done, void *arg)
{
    (void)src_mem;
    return start(1, peer, (unsigned char *)(uintptr_t)src, len, rkey, offset, sig, done, arg);
}

int hashi_emu_get(int peer, void *dst, size_t len, const struct hashi_tl_mem *dst_mem,
                  const struct hashi_tl_rkey *rkey, uint64_t offset, hashi_tl_done_fn done, void *arg)
{
    (void)dst_mem;
    return start(0, peer, dst, len, rkey, offset, NULL, done, arg);
}

/* Vector PUSH: every piece checked, then one process_vm_writev (a partial
 * transfer is continued piece by piece); the completion is queued as a
 * put's. Without CMA the staged window would take the pieces one at a
 * time: -ENOTSUP, the caller puts them. */
int hashi_emu_putv(int peer, const struct hashi_tl_piece *pieces, int n, const struct hashi_tl_rkey *rkey,
                   hashi_tl_done_fn done, void *arg)
{
    int lp = emu.local_of[peer];
    struct emu_peer *p = &emu.peer[lp];
    if (n < 1 || n > HASHI_TL_PUTV_MAX)
        return -EINVAL;
    if (lp != emu.me && !p->cma)
        return -ENOTSUP;
    struct emu_rkey k;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (check_key(p, rkey, pieces[i].offset, pieces[i].len, &k) != 0)
            return -EINVAL;
        total += pieces[i].len;
    }
    struct emu_op *op = new_op(1, lp, NULL, total, done, arg);
    struct iovec *iov = malloc(2 * (size_t)n * sizeof *iov);
    if (!op || !iov) {
        free(op);
        free(iov);
        return -ENOMEM;
    }
    struct iovec *remote = iov + n;
    for (int i = 0; i < n; i++) {
        iov[i] = (struct iovec){ (void *)(uintptr_t)pieces[i].src, pieces[i].len };
        remote[i] = (struct iovec){ (void *)(uintptr_t)(k.addr + pieces[i].offset), pieces[i].len };
    }
    int rc = 0;
    if (lp == emu.me) {
        for (int i = 0; i < n; i++)
            memcpy(remote[i].iov_base, iov[i].iov_base, iov[i].iov_len);
    } else {
        ssize_t done_bytes;
        do
            done_bytes = process_vm_writev(p->pid, iov, (unsigned long)n, remote, (unsigned long)n, 0);
        while (done_bytes < 0 && errno == EINTR);
        if (done_bytes < 0 && (errno == EPERM || errno == ENOSYS)) {
            cma_disable(p, cma_reason(errno));
            free(op);
            free(iov);
            return -ENOTSUP;   /* nothing written: the caller puts them staged */
        }
        if (done_bytes < 0)
            rc = -errno;
        /* A short transfer (a fault part way): the rest piece by piece. */
        size_t skip = done_bytes < 0 ? total : (size_t)done_bytes;
        for (int i = 0; i < n && rc == 0; i++) {
            if (skip >= iov[i].iov_len) {
                skip -= iov[i].iov_len;
                continue;
            }
            rc = cma_copy(1, p->pid, (unsigned char *)iov[i].iov_base + skip, (uint64_t)(uintptr_t)remote[i].iov_base + skip,
                          iov[i].iov_len - skip);
            skip = 0;
        }
    }
    free(iov);
    complete(op, rc);
    return 0;
}

/* Advance one staged op; returns events. */
static int advance(struct emu_op *op)
{
    struct emu_peer *p = &emu.peer[op->lpeer];
    int n = 0;
    if (op->state == ST_CLAIM) {
        /* PUSH fills the peer's window, PULL has the peer fill mine. */
        struct emu_seg_hdr *win = op->is_put ? p->hdr : emu.seg;
        uint32_t want = (uint32_t)(op->is_put ? emu.me : op->lpeer) + 1, free_ = 0;
        if (!atomic_compare_exchange_strong(&win->win_owner, &free_, want))
            return 0;
        op->state = ST_START;
        n++;
    }
    if (op->state == ST_START) {
        if (hashi_emu_send_ctrl(op->lpeer, op->is_put ? EMU_PUT_START : EMU_GET_REQ, &op->msg, sizeof op->msg))
            return n;
        op->state = op->is_put ? ST_STREAM : ST_WAIT_ACK;
        n++;
    }
    if (op->state == ST_STREAM) {
        n += window_produce(p->hdr, p->world, op->local, op->len, &op->moved, &op->chunk);
        if (op->moved == op->len)
            op->state = ST_WAIT_ACK;   /* PUT_DONE completes it */
    } else if (op->state == ST_WAIT_ACK && !op->is_put) {
        n += window_consume(op->local, op->len, &op->moved, &op->chunk, p->world);
        if (op->moved == op->len) {
            atomic_store_explicit(&emu.seg->win_owner, 0, memory_order_release);
            unlink_pending(op);
            complete(op, 0);
        }
    }
    return n;
}

/* ---- target ---------------------------------------------------------- */

void hashi_emu_rma_message(int lsrc, enum emu_kind kind, const struct emu_rma_msg *m)
{
    switch (kind) {
    case EMU_PUT_START:
        /* The window's owner word admits one producer: no PUSH can be active. */
        incoming.active = 1;
        incoming.lsrc = lsrc;
        incoming.dst = reg_lookup(m->regid, m->addr, m->len);
        incoming.len = m->len;
        incoming.moved = 0;
        incoming.chunk = 0;
        incoming.msg = *m;
        incoming.msg.status = incoming.dst ? 0 : -EINVAL;
        break;
    case EMU_GET_REQ: {
        const unsigned char *src = reg_lookup(m->regid, m->addr, m->len);
        struct served_get *g = src ? calloc(1, sizeof *g) : NULL;
        if (!g) {
            struct emu_rma_msg r = *m;
            r.status = src ? -ENOMEM : -EINVAL;
            hashi_emu_send_ctrl_later(lsrc, EMU_GET_ERR, &r, sizeof r);
            break;
        }
        g->lreq = lsrc;
        g->src = src;
        g->len = m->len;
        g->next = serving;
        serving = g;
        break;
    }
    case EMU_PUT_DONE:
    case EMU_GET_ERR: {
        struct emu_op *op = (struct emu_op *)(uintptr_t)m->cookie;
        if (kind == EMU_GET_ERR)
            atomic_store_explicit(&emu.seg->win_owner, 0, memory_order_release);
        unlink_pending(op);
        complete(op, m->status);
        break;
    }
    default:
        hashi_log("emu transport: unknown ring message kind %d from rank %d (ignored)", (int)kind,
                  emu.peer[lsrc].world);
        break;
    }
}

static int serve(void)
{
    int n = 0;
    if (incoming.active) {
        struct emu_peer *src = &emu.peer[incoming.lsrc];
        n += window_consume(incoming.dst, incoming.len, &incoming.moved, &incoming.chunk, src->world);
        if (incoming.moved == incoming.len) {
            const struct emu_rma_msg *m = &incoming.msg;
            if (m->status == 0 && m->sig_size)
                hashi_emu_store(emu.seg, m->sig_off, m->sig_val, m->sig_size);
            incoming.active = 0;
            atomic_store_explicit(&emu.seg->win_owner, 0, memory_order_release);
            hashi_emu_send_ctrl_later(incoming.lsrc, EMU_PUT_DONE, m, sizeof *m);
        }
    }
    for (struct served_get **pp = &serving; *pp;) {
        struct served_get *g = *pp;
        struct emu_peer *req = &emu.peer[g->lreq];
        n += window_produce(req->hdr, req->world, g->src, g->len, &g->moved, &g->chunk);
        if (g->moved == g->len) {
            *pp = g->next;
            free(g);
        } else {
            pp = &g->next;
        }
    }
    return n;
}

__attribute__((noinline)) static int rma_progress(void)
{
    int n = 0;
    if (cma_queue) {
        /* One deferred copy per call: the caller polls its rings in between. */
        struct emu_op *op = cma_queue;
        cma_queue = op->next;
        if (!cma_queue)
            cma_tail = &cma_queue;
        single_copy(op);
        n++;
    }
    if (completed) {
        /* done() may start new operations: run the list as it was. */
        struct emu_op *list = completed;
        completed = NULL;
        completed_tail = &completed;
        while (list) {
            struct emu_op *op = list;
            list = op->next;
            if (op->done)
                op->done(op->arg, op->status);
            free(op);
            n++;
        }
    }
    for (struct emu_op *op = pending, *next; op; op = next) {
        next = op->next;
        n += advance(op);
    }
    if (incoming.active || serving)
        n += serve();
    return n;
}

/* Called on every poll: the idle test alone stays cheap (no register saves). */
int hashi_emu_rma_progress(void)
{
    if (!cma_queue && !completed && !pending && !incoming.active && !serving)
        return 0;
    return rma_progress();
}

void hashi_emu_rma_finalize(void)
{
    while (cma_queue) {
        struct emu_op *op = cma_queue;
        cma_queue = op->next;
        free(op);
    }
    cma_tail = &cma_queue;
    while (pending) {
        struct emu_op *op = pending;
        pending = op->next;
        free(op);
    }
    while (completed) {
        struct emu_op *op = completed;
        completed = op->next;
        free(op);
    }
    completed_tail = &completed;
    while (serving) {
        struct served_get *g = serving;
        serving = g->next;
        free(g);
    }
    while (regs) {
        struct emu_reg *r = regs;
        regs = r->next;
        free(r);
    }
    memset(&incoming, 0, sizeof incoming);
    cma_warned = 0;
}
