/*
 * The communication calls, origin side: MPI_Put, MPI_Get, MPI_Accumulate,
 * MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap, their
 * request forms and _c forms. Each checks its arguments, turns the target
 * datatype into segments (the origin holds the target's type map), and
 * sends the operation as request messages of at most RMA_MSG_MAX bytes
 * (move.c); replies (get data, old values) land in the origin buffer, or in
 * a staging copy unpacked once the last one is in.
 */
#include "mpi/rma/rma.h"
#include "mpi/coll/op.h"
#include "mpi/datatype_repr.h"

#include <stdlib.h>
#include <string.h>

/* ---- target segments ---- */

struct seglist {
    struct rma_seg *v;
    size_t n, cap;
    int failed;
};

static void seg_add(struct seglist *l, int64_t disp, int64_t len)
{
    if (len <= 0)
        return;
    if (l->n && l->v[l->n - 1].disp + l->v[l->n - 1].count == disp) {
        l->v[l->n - 1].count += len;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        struct rma_seg *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->failed = 1;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (struct rma_seg){ disp, len };
}

/* The byte runs of one instance of node at base, in stream order. */
static void walk(struct seglist *l, const struct hashi_type_repr *node, int64_t base)
{
    base += node->disp;
    switch (node->kind) {
    case HASHI_REPR_LEAF:
        seg_add(l, base, node->size);
        return;
    case HASHI_REPR_VEC:
        for (MPI_Count i = 0; i < node->count && !l->failed; i++)
            walk(l, node->u.vec.child, base + i * node->u.vec.stride);
        return;
    case HASHI_REPR_RUNS:
        for (MPI_Count i = 0; i < node->count; i++)
            seg_add(l, base + node->u.runs.offs[i], node->u.runs.lens[i]);
        return;
    case HASHI_REPR_SEQ:
        for (MPI_Count i = 0; i < node->count && !l->failed; i++)
            walk(l, &node->u.seq.items[i], base);
        return;
    }
}

/* (count, t) at target address `at` as byte runs, merged where they touch. */
static void byte_runs(struct seglist *l, int64_t at, MPI_Count count, const struct MPI_ABI_Datatype *t)
{
    if (hashi_type_is_contig_count(t, count)) {
        seg_add(l, at + t->true_lb, count * t->size);
        return;
    }
    MPI_Aint extent = hashi_type_extent(t);
    for (MPI_Count i = 0; i < count && !l->failed; i++)
        walk(l, t->repr, at + i * extent);
}

/* Byte runs -> runs of elements of basic type b (an accumulate's unit): an
 * element starts where the stream offset is a multiple of its size. A type
 * with padding (MPI_DOUBLE_INT) has one run per element at least. */
static void to_elements(struct seglist *l, const struct MPI_ABI_Datatype *b)
{
    int64_t size = b->size;
    if (size == hashi_type_extent(b)) {
        for (size_t i = 0; i < l->n; i++)
            l->v[i].count /= size;
        return;
    }
    size_t out = 0;
    int64_t pos = 0;
    for (size_t i = 0; i < l->n; i++) {
        int64_t len = l->v[i].count;
        if (pos % size == 0)
            l->v[out++] = (struct rma_seg){ l->v[i].disp - b->true_lb, 1 };
        pos += len;
    }
    l->n = out;
}

/* ---- results (get, get_accumulate): where replies land ---- */

struct getop {
    int left;                       /* chunks outstanding (+1 while issuing) */
    int error;
    char *stage;                    /* packed copy, or NULL: straight into place */
    void *raddr;
    MPI_Count rcount;
    struct MPI_ABI_Datatype *rt;    /* retained while a stage waits */
    size_t total;
    struct MPI_ABI_Request *ureq;   /* MPI_Rget's, or NULL */
};

static void chunk_done(void *arg, int error)
{
    struct getop *g = arg;
    if (error != MPI_SUCCESS && g->error == MPI_SUCCESS)
        g->error = error;
    if (--g->left > 0)
        return;
    if (g->stage) {
        hashi_type_unpack(g->raddr, g->rcount, g->rt, 0, g->stage, g->total);
        free(g->stage);
    }
    hashi_type_release(g->rt);
    if (g->ureq) {
        g->ureq->status.MPI_ERROR = g->error;
        hashi_request_complete(g->ureq);
    }
    free(g);
}

/* ---- sending ---- */

struct xfer {
    struct rma_win *w;
    int target;
    enum rma_kind kind;
    const void *oaddr;              /* data to send, or NULL */
    MPI_Count ocount;
    const struct MPI_ABI_Datatype *ot;
    const void *compare;            /* RMA_CAS */
    MPI_Datatype basic;             /* element type (MPI_BYTE for put / get) */
    const struct MPI_ABI_Datatype *bt;
    MPI_Op op;
    struct seglist segs;
    struct getop *g;                /* replies, or NULL */
    char *result;                   /* where replies go (g->stage or in place) */
};

/*
 * The next message's segments from (*si, *so): as many as fit RMA_MSG_MAX
 * with their data (element-aligned); written to out when given. Returns
 * the segment count, *data the data bytes.
 */
static size_t plan(const struct xfer *x, size_t *si, int64_t *so, struct rma_seg *out, size_t *data)
{
    int with_data = x->oaddr != NULL;
    int64_t esize = x->bt->size;
    MPI_Aint eext = hashi_type_extent(x->bt);
    size_t room = RMA_MSG_MAX - sizeof(struct rma_hdr), n = 0;
    *data = 0;
    while (*si < x->segs.n) {
        size_t need = sizeof(struct rma_seg) + (with_data ? (size_t)esize : 0);
        if (room < need)
            break;
        int64_t left = x->segs.v[*si].count - *so;
        int64_t take = left;
        if (with_data && (int64_t)((room - sizeof(struct rma_seg)) / (size_t)esize) < take)
            take = (int64_t)((room - sizeof(struct rma_seg)) / (size_t)esize);
        if (out)
            out[n] = (struct rma_seg){ x->segs.v[*si].disp + *so * eext, take };
        n++;
        room -= sizeof(struct rma_seg) + (with_data ? (size_t)(take * esize) : 0);
        *data += (size_t)(take * esize);
        *so += take;
        if (*so == x->segs.v[*si].count) {
            (*si)++;
            *so = 0;
        }
    }
    return n;
}

static int issue(struct xfer *x)
{
    size_t si = 0, offset = 0;
    int64_t so = 0;
    while (si < x->segs.n) {
        size_t si_next = si, data;
        int64_t so_next = so;
        size_t nseg = plan(x, &si_next, &so_next, NULL, &data);
        size_t carried = x->oaddr ? data : 0;
        size_t len = sizeof(struct rma_hdr) + nseg * sizeof(struct rma_seg) + carried;
        unsigned char *msg = malloc(len);
        if (!msg)
            return MPI_ERR_NO_MEM;
        struct rma_hdr *h = (void *)msg;
        struct rma_seg *segs = (void *)(msg + sizeof *h);
        plan(x, &si, &so, segs, &data);
        *h = (struct rma_hdr){ .kind = (uint8_t)x->kind, .op = (int32_t)(intptr_t)x->op,
                               .basic = (int32_t)(intptr_t)x->basic, .nseg = (uint32_t)nseg,
                               .data_bytes = data };
        if (carried)
            hashi_type_pack(x->oaddr, x->ocount, x->ot, offset, segs + nseg, carried);
        if (x->g) {
            int rc = rma_expect_reply(x->w, x->target, x->result + offset, data, chunk_done, x->g, &h->reply_tag);
            if (rc != MPI_SUCCESS) {
                free(msg);
                return rc;
            }
            x->g->left++;
        }
        int rc = rma_send_request(x->w, x->target, msg, len);
        if (rc != MPI_SUCCESS)
            return rc;
        offset += data;
    }
    return MPI_SUCCESS;
}

/* ---- the common call ---- */

struct op_args {
    const char *func;
    MPI_Win win;
    enum rma_kind kind;             /* RMA_PUT, RMA_GET, RMA_ACC, RMA_GACC, RMA_CAS */
    const void *oaddr;
    MPI_Count ocount;
    MPI_Datatype otype;
    void *raddr;
    MPI_Count rcount;
    MPI_Datatype rtype;
    const void *compare;
    int target;
    MPI_Aint tdisp;
    MPI_Count tcount;
    MPI_Datatype ttype;
    MPI_Op op;
    MPI_Request *request;           /* the R forms; NULL otherwise */
};

/* A request already complete (local completion, MPI_PROC_NULL, no data). */
static struct MPI_ABI_Request *new_request(int complete)
{
    struct MPI_ABI_Request *req = hashi_request_alloc(HASHI_REQ_COLL);
    if (!req)
        return NULL;
    hashi_status_set_empty(&req->status);
    hashi_request_retain(req);   /* the operation's, dropped at completion */
    if (complete)
        hashi_request_complete(req);
    return req;
}

static int finish_now(const struct op_args *a)
{
    if (!a->request)
        return MPI_SUCCESS;
    struct MPI_ABI_Request *req = new_request(1);
    if (!req)
        return hashi_err_win(a->func, a->win, MPI_ERR_NO_MEM, "out of memory");
    *a->request = req;
    return MPI_SUCCESS;
}

static int check_type(const struct op_args *a, MPI_Datatype type, const char *which,
                      const struct MPI_ABI_Datatype **out)
{
    const char *why;
    int rc = hashi_type_check(type, 1, &why);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(a->func, a->win, rc, "the %s datatype: %s", which, why);
    *out = hashi_type_get(type);
    return MPI_SUCCESS;
}

static const char *type_label(MPI_Datatype type)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    return t && t->name[0] ? t->name : "a derived datatype";
}

/* A node-local window (shm.c): the operation is loads and stores, done
 * when this returns; the request forms return complete requests. */
static int shm_op(const struct op_args *a, struct rma_win *w, const struct MPI_ABI_Datatype *tt,
                  const struct MPI_ABI_Datatype *ot, const struct MPI_ABI_Datatype *rt, MPI_Datatype basic,
                  const struct MPI_ABI_Datatype *bt, int64_t at, MPI_Count tbytes)
{
    struct rma_seg one;
    struct seglist l = { 0 };
    int elements = basic != MPI_BYTE;
    if (hashi_type_is_contig_count(tt, a->tcount) && (!elements || bt->size == hashi_type_extent(bt))) {
        /* One run, no list to build (the common case, kept cheap). */
        one = (struct rma_seg){ at + tt->true_lb, elements ? tbytes / bt->size : tbytes };
        l.v = &one;
        l.n = 1;
    } else {
        byte_runs(&l, at, a->tcount, tt);
        if (!l.failed && elements)
            to_elements(&l, bt);
        if (l.failed) {
            free(l.v);
            return hashi_err_win(a->func, a->win, MPI_ERR_NO_MEM, "out of memory");
        }
    }
    int no_op = a->op == MPI_NO_OP;
    struct rma_shm_op o = { .kind = a->kind, .target = a->target, .segs = l.v, .nseg = l.n,
                            .bytes = (size_t)tbytes, .oaddr = no_op ? NULL : a->oaddr, .ocount = a->ocount,
                            .ot = ot, .raddr = a->raddr, .rcount = a->rcount, .rt = rt, .compare = a->compare,
                            .op = a->op, .basic = basic, .bt = bt };
    int rc = rma_shm_op(w, &o);
    if (l.v != &one)
        free(l.v);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(a->func, a->win, rc, "the operation on rank %d failed", a->target);
    return finish_now(a);
}

static int rma_op(const struct op_args *a)
{
    int rc;
    struct rma_win *w = rma_win_arg(a->func, a->win, &rc);
    if (!w)
        return rc;
    const char *func = a->func;
    MPI_Win win = a->win;
    if (a->request)
        *a->request = MPI_REQUEST_NULL;
    if (a->target == MPI_PROC_NULL)
        return finish_now(a);
    if (a->target < 0 || a->target >= w->size)
        return hashi_err_win(func, win, MPI_ERR_RANK, "target rank %d is not in the window's group (size %d)",
                             a->target, w->size);
    if (a->ocount < 0 || a->rcount < 0 || a->tcount < 0)
        return hashi_err_win(func, win, MPI_ERR_COUNT, "a count is negative (origin %lld, result %lld, target %lld)",
                             (long long)a->ocount, (long long)a->rcount, (long long)a->tcount);
    int accumulate = a->kind == RMA_ACC || a->kind == RMA_GACC;
    int no_op = accumulate && a->op == MPI_NO_OP;
    int sends = a->kind == RMA_PUT || a->kind == RMA_CAS || (accumulate && !no_op);
    int receives = a->kind == RMA_GET || a->kind == RMA_GACC || a->kind == RMA_CAS;
    const struct MPI_ABI_Datatype *ot = NULL, *rt = NULL, *tt;
    if (sends && (rc = check_type(a, a->otype, "origin", &ot)) != MPI_SUCCESS)
        return rc;
    if (receives && (rc = check_type(a, a->rtype, a->kind == RMA_GET ? "origin" : "result", &rt)) != MPI_SUCCESS)
        return rc;
    if ((rc = check_type(a, a->ttype, "target", &tt)) != MPI_SUCCESS)
        return rc;
    if (!rma_in_epoch(w, a->target))
        return hashi_err_win(func, win, MPI_ERR_RMA_SYNC,
                             "no access epoch is open to rank %d (MPI_Win_fence, MPI_Win_start, MPI_Win_lock "
                             "or MPI_Win_lock_all first)", a->target);

    MPI_Datatype basic = MPI_BYTE;
    if (accumulate || a->kind == RMA_CAS) {
        struct MPI_ABI_Op *o = a->kind == RMA_CAS ? NULL : hashi_op_get(a->op);
        if (a->kind != RMA_CAS && (a->op == MPI_OP_NULL || !o))
            return hashi_err_win(func, win, MPI_ERR_OP, "the op is not a valid MPI_Op");
        if (o && !o->predefined)
            return hashi_err_win(func, win, MPI_ERR_OP,
                                 "user-defined ops cannot be used in accumulate operations, only predefined ones");
        basic = tt->basic_type;
        if (basic == MPI_DATATYPE_NULL)
            return hashi_err_win(func, win, MPI_ERR_TYPE,
                                 "the target datatype %s is not made of one predefined type", type_label(a->ttype));
        if (ot && ot->basic_type != basic)
            return hashi_err_win(func, win, MPI_ERR_TYPE, "the origin datatype %s is not made of %s as the target's",
                                 type_label(a->otype), type_label(basic));
        if (rt && rt->basic_type != basic)
            return hashi_err_win(func, win, MPI_ERR_TYPE, "the result datatype %s is not made of %s as the target's",
                                 type_label(a->rtype), type_label(basic));
        if (o && o->index != HASHI_OP_REPLACE && o->index != HASHI_OP_NO_OP) {
            char why[160];
            if (hashi_op_check_collective(a->op, basic, why, sizeof why) != MPI_SUCCESS)
                return hashi_err_win(func, win, MPI_ERR_OP, "%s", why);
        }
        if (a->kind == RMA_CAS && hashi_type_get(basic)->size > 32)
            return hashi_err_win(func, win, MPI_ERR_TYPE, "%s is too large for MPI_Compare_and_swap",
                                 type_label(basic));
    }
    const struct MPI_ABI_Datatype *bt = hashi_type_get(basic);
    MPI_Count tbytes = hashi_type_bytes(tt, a->tcount);
    if (ot && hashi_type_bytes(ot, a->ocount) != tbytes)
        return hashi_err_win(func, win, MPI_ERR_TYPE,
                             "the origin has %lld bytes of data, the target %lld: the type signatures differ",
                             (long long)hashi_type_bytes(ot, a->ocount), (long long)tbytes);
    if (rt && hashi_type_bytes(rt, a->rcount) != tbytes)
        return hashi_err_win(func, win, MPI_ERR_TYPE,
                             "the result buffer has %lld bytes, the target %lld: the type signatures differ",
                             (long long)hashi_type_bytes(rt, a->rcount), (long long)tbytes);
    int64_t unit = w->peers[a->target].disp_unit;
    int64_t at = (int64_t)a->tdisp * unit;
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        if (a->tdisp < 0)
            return hashi_err_win(func, win, MPI_ERR_DISP, "target_disp %lld is negative", (long long)a->tdisp);
        if (tbytes > 0) {
            int64_t lo = at + tt->true_lb;
            int64_t hi = at + (a->tcount - 1) * hashi_type_extent(tt) + tt->true_ub;
            if (lo < 0 || hi > w->peers[a->target].size)
                return hashi_err_win(func, win, MPI_ERR_RMA_RANGE,
                                     "bytes [%lld, %lld) are outside rank %d's window of %lld bytes", (long long)lo,
                                     (long long)hi, a->target, (long long)w->peers[a->target].size);
        }
    }
    if (tbytes == 0 || (no_op && a->kind == RMA_ACC))
        return finish_now(a);
    if (w->shm_ctl)
        return shm_op(a, w, tt, ot, rt, basic, bt, at, tbytes);

    struct xfer x = { .w = w, .target = a->target, .kind = a->kind, .basic = basic, .bt = bt, .op = a->op };
    if (sends) {
        x.oaddr = a->oaddr;
        x.ocount = a->ocount;
        x.ot = ot;
    }
    if (no_op)
        x.kind = RMA_GET;   /* an atomic read, element by element */
    byte_runs(&x.segs, at, a->tcount, tt);
    if (!x.segs.failed && basic != MPI_BYTE)
        to_elements(&x.segs, bt);
    /* One large run at the target: the data goes as a message of its own,
     * received in place; a contiguous origin sends from the buffer itself,
     * which is then in use until the operation completes locally. */
    int direct = a->kind == RMA_PUT && !x.segs.failed && x.segs.n == 1 && tbytes >= RMA_DIRECT_MIN;
    /* One run to a target the device reaches: the device moves it, with no
     * message and no target code (move.c, "device path"). */
    int device = (a->kind == RMA_PUT || a->kind == RMA_GET) && !x.segs.failed && x.segs.n == 1 &&
                 rma_device_takes(w, a->target, (size_t)tbytes, a->kind == RMA_PUT, a->request != NULL);
    if (device)
        direct = 0;
    /* Put runs queued for the target go out before anything else to it. */
    if (w->dev_queue && !(device && a->kind == RMA_PUT && rma_dev_queues(w, a->target, (size_t)tbytes, a->request != NULL)))
        rma_dev_queue_issue(w, a->target);
    struct MPI_ABI_Request *ureq = NULL;
    if (!x.segs.failed && a->request)
        ureq = new_request(!receives && !direct && !device);
    if (x.segs.failed || (a->request && !ureq)) {
        free(x.segs.v);
        return hashi_err_win(func, win, MPI_ERR_NO_MEM, "out of memory");
    }
    if (receives) {
        struct getop *g = calloc(1, sizeof *g);
        if (g && !hashi_type_is_contig_count(rt, a->rcount))
            g->stage = malloc((size_t)tbytes);
        if (!g || (!hashi_type_is_contig_count(rt, a->rcount) && !g->stage)) {
            free(g);
            free(x.segs.v);
            if (ureq) {
                hashi_request_complete(ureq);
                hashi_request_free(ureq);
            }
            return hashi_err_win(func, win, MPI_ERR_NO_MEM, "out of memory");
        }
        g->left = 1;   /* held until every chunk is issued */
        g->raddr = a->raddr;
        g->rcount = a->rcount;
        g->rt = (struct MPI_ABI_Datatype *)rt;
        hashi_type_retain(g->rt);
        g->total = (size_t)tbytes;
        g->ureq = ureq;
        x.g = g;
        x.result = g->stage ? g->stage : (char *)a->raddr + rt->true_lb;
    }
    if (device && a->kind == RMA_GET) {
        x.g->left++;
        rc = rma_device_get(w, a->target, x.segs.v[0].disp, x.result, (size_t)tbytes, chunk_done, x.g);
        if (rc != MPI_SUCCESS)
            x.g->left--;
    } else if (direct || device) {
        const void *data = (const char *)a->oaddr + ot->true_lb;
        void *copy = NULL;
        if (!hashi_type_is_contig_count(ot, a->ocount)) {
            data = copy = malloc((size_t)tbytes);
            if (copy)
                hashi_type_pack(a->oaddr, a->ocount, ot, 0, copy, (size_t)tbytes);
        }
        rc = !data     ? MPI_ERR_NO_MEM
             : device ? rma_device_put(w, a->target, x.segs.v[0].disp, data, (size_t)tbytes, copy != NULL, ureq)
                      : rma_put_direct(w, a->target, x.segs.v[0].disp, data, (size_t)tbytes, copy != NULL, ureq);
        if (rc != MPI_SUCCESS) {
            free(copy);
            if (ureq) {
                hashi_request_complete(ureq);
                hashi_request_free(ureq);
                ureq = NULL;
            }
        }
    } else if (a->kind == RMA_CAS) {
        /* One element: the new value, then the one to compare with. */
        size_t size = (size_t)bt->size;
        unsigned char *msg = malloc(sizeof(struct rma_hdr) + sizeof(struct rma_seg) + 2 * size);
        rc = msg ? MPI_SUCCESS : MPI_ERR_NO_MEM;
        if (msg) {
            struct rma_hdr *h = (void *)msg;
            struct rma_seg *seg = (void *)(msg + sizeof *h);
            *h = (struct rma_hdr){ .kind = RMA_CAS, .basic = (int32_t)(intptr_t)basic, .nseg = 1,
                                   .data_bytes = size };
            *seg = x.segs.v[0];
            memcpy(seg + 1, (const char *)a->oaddr + bt->true_lb, size);
            memcpy((char *)(seg + 1) + size, (const char *)a->compare + bt->true_lb, size);
            rc = rma_expect_reply(w, a->target, x.result, size, chunk_done, x.g, &h->reply_tag);
            if (rc == MPI_SUCCESS) {
                x.g->left++;
                rc = rma_send_request(w, a->target, msg, sizeof *h + sizeof *seg + 2 * size);
            } else {
                free(msg);
            }
        }
    } else {
        rc = issue(&x);
    }
    free(x.segs.v);
    if (x.g)
        chunk_done(x.g, rc);   /* the issuing hold */
    if (ureq)
        *a->request = ureq;
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, win, rc, "sending the operation to rank %d failed", a->target);
    return MPI_SUCCESS;
}

/* ---- the calls ---- */

/* A put or get of one contiguous predefined-or-committed type, the same at
 * both ends, on a node-local window, every argument valid: one memcpy,
 * without rma_op's general machinery (a third of a small put's cost).
 * Anything else, an error to raise included, returns 0 for rma_op. */
static inline int shm_fast(MPI_Win win, int put, const void *oaddr, void *raddr, MPI_Count count,
                           MPI_Datatype otype, int target, MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype)
{
    struct rma_win *w = rma_win_get(win);
    if (!w || !w->shm_ctl || otype != ttype || count != tcount || count <= 0 || tdisp < 0 || target < 0 ||
        target >= w->size)
        return 0;
    const struct MPI_ABI_Datatype *t = hashi_type_get(ttype);
    if (!t || !t->committed || !t->contiguous || !rma_in_epoch(w, target))
        return 0;
    const struct rma_peer *p = &w->peers[target];
    int64_t lo = (int64_t)tdisp * p->disp_unit + t->true_lb, bytes = (int64_t)t->size * count;
    if (lo < 0 || lo + bytes > p->size)
        return 0;
    char *at = (char *)(uintptr_t)p->base + lo;
    if (put)
        memcpy(at, (const char *)oaddr + t->true_lb, (size_t)bytes);
    else
        memcpy((char *)raddr + t->true_lb, at, (size_t)bytes);
    rma_shm_ops_count++;
    return 1;
}

#define PUT_ARGS(fn, k, req)                                                                                    \
    &(struct op_args){ .func = (fn), .win = win, .kind = (k), .oaddr = origin_addr, .ocount = origin_count,     \
                       .otype = origin_datatype, .target = target_rank, .tdisp = target_disp,                   \
                       .tcount = target_count, .ttype = target_datatype, .request = (req) }

int hashi_impl_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                   MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Put");
    if (shm_fast(win, 1, origin_addr, NULL, origin_count, origin_datatype, target_rank, target_disp, target_count,
                 target_datatype))
        return MPI_SUCCESS;
    return rma_op(PUT_ARGS("MPI_Put", RMA_PUT, NULL));
}

int hashi_impl_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank,
                     MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Put_c");
    if (shm_fast(win, 1, origin_addr, NULL, origin_count, origin_datatype, target_rank, target_disp, target_count,
                 target_datatype))
        return MPI_SUCCESS;
    return rma_op(PUT_ARGS("MPI_Put_c", RMA_PUT, NULL));
}

static int need_request(const char *func, MPI_Win win, MPI_Request *request)
{
    return request ? MPI_SUCCESS : hashi_err_win(func, win, MPI_ERR_ARG, "request is NULL");
}

int hashi_impl_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
                    MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Rput");
    int rc = need_request("MPI_Rput", win, request);
    return rc != MPI_SUCCESS ? rc : rma_op(PUT_ARGS("MPI_Rput", RMA_PUT, request));
}

int hashi_impl_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                      int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype,
                      MPI_Win win, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Rput_c");
    int rc = need_request("MPI_Rput_c", win, request);
    return rc != MPI_SUCCESS ? rc : rma_op(PUT_ARGS("MPI_Rput_c", RMA_PUT, request));
}

#define GET_ARGS(fn, req)                                                                                       \
    &(struct op_args){ .func = (fn), .win = win, .kind = RMA_GET, .raddr = origin_addr, .rcount = origin_count, \
                       .rtype = origin_datatype, .target = target_rank, .tdisp = target_disp,                   \
                       .tcount = target_count, .ttype = target_datatype, .request = (req) }

int hashi_impl_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                   MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Get");
    if (shm_fast(win, 0, NULL, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                 target_datatype))
        return MPI_SUCCESS;
    return rma_op(GET_ARGS("MPI_Get", NULL));
}

int hashi_impl_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank,
                     MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Get_c");
    if (shm_fast(win, 0, NULL, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                 target_datatype))
        return MPI_SUCCESS;
    return rma_op(GET_ARGS("MPI_Get_c", NULL));
}

int hashi_impl_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
                    MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Rget");
    int rc = need_request("MPI_Rget", win, request);
    return rc != MPI_SUCCESS ? rc : rma_op(GET_ARGS("MPI_Rget", request));
}

int hashi_impl_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank,
                      MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win,
                      MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Rget_c");
    int rc = need_request("MPI_Rget_c", win, request);
    return rc != MPI_SUCCESS ? rc : rma_op(GET_ARGS("MPI_Rget_c", request));
}

#define ACC_ARGS(fn, req)                                                                                       \
    &(struct op_args){ .func = (fn), .win = win, .kind = RMA_ACC, .oaddr = origin_addr, .ocount = origin_count, \
                       .otype = origin_datatype, .target = target_rank, .tdisp = target_disp,                   \
                       .tcount = target_count, .ttype = target_datatype, .op = op, .request = (req) }

/* The integer types whose MPI_SUM is an addition modulo 2^bits. */
static inline int plain_integer(MPI_Datatype t)
{
    return t == MPI_INT || t == MPI_LONG || t == MPI_LONG_LONG || t == MPI_UNSIGNED || t == MPI_UNSIGNED_LONG ||
           t == MPI_UNSIGNED_LONG_LONG || t == MPI_INT32_T || t == MPI_UINT32_T || t == MPI_INT64_T ||
           t == MPI_UINT64_T || t == MPI_AINT || t == MPI_COUNT || t == MPI_OFFSET;
}

/* MPI_Accumulate (SUM, REPLACE) of contiguous integers, floats or doubles,
 * the same type at both ends, on a node-local window, every argument
 * valid: rma_shm_op's own path (the kernel under the target's accumulate
 * lock) without rma_op's general machinery. -1: not taken (anything else,
 * an error to raise included, goes to rma_op); else rma_shm_op's result. */
static inline int shm_fast_acc(MPI_Win win, const void *oaddr, MPI_Count count, MPI_Datatype otype, int target,
                               MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype, MPI_Op op)
{
    struct rma_win *w = rma_win_get(win);
    if (!w || !w->shm_ctl || otype != ttype || count != tcount || count <= 0 || tdisp < 0 || target < 0 ||
        target >= w->size || !oaddr || (op != MPI_SUM && op != MPI_REPLACE) ||
        !(plain_integer(ttype) || ttype == MPI_DOUBLE || ttype == MPI_FLOAT) || !rma_in_epoch(w, target))
        return -1;
    const struct MPI_ABI_Datatype *t = hashi_type_get(ttype);
    const struct rma_peer *p = &w->peers[target];
    int64_t at = (int64_t)tdisp * p->disp_unit, bytes = (int64_t)t->size * count;
    if (at + bytes > p->size)
        return -1;
    struct rma_seg seg = { at, count };
    struct rma_shm_op o = { .kind = RMA_ACC, .target = target, .segs = &seg, .nseg = 1, .bytes = (size_t)bytes,
                            .oaddr = oaddr, .ocount = count, .ot = t, .op = op, .basic = ttype, .bt = t };
    return rma_shm_op(w, &o);
}

int hashi_impl_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                          MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Accumulate");
    int rc = shm_fast_acc(win, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                          target_datatype, op);
    if (rc >= 0)
        return rc == MPI_SUCCESS ? rc : hashi_err_win("MPI_Accumulate", win, rc, "the operation on rank %d failed", target_rank);
    return rma_op(ACC_ARGS("MPI_Accumulate", NULL));
}

int hashi_impl_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                            int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                            MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Accumulate_c");
    int rc = shm_fast_acc(win, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                          target_datatype, op);
    if (rc >= 0)
        return rc == MPI_SUCCESS ? rc : hashi_err_win("MPI_Accumulate_c", win, rc, "the operation on rank %d failed", target_rank);
    return rma_op(ACC_ARGS("MPI_Accumulate_c", NULL));
}

int hashi_impl_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                           MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                           MPI_Win win, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Raccumulate");
    int rc = need_request("MPI_Raccumulate", win, request);
    return rc != MPI_SUCCESS ? rc : rma_op(ACC_ARGS("MPI_Raccumulate", request));
}

int hashi_impl_Raccumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                             int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                             MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Raccumulate_c");
    int rc = need_request("MPI_Raccumulate_c", win, request);
    return rc != MPI_SUCCESS ? rc : rma_op(ACC_ARGS("MPI_Raccumulate_c", request));
}

#define GACC_ARGS(fn, req)                                                                                       \
    &(struct op_args){ .func = (fn), .win = win, .kind = RMA_GACC, .oaddr = origin_addr, .ocount = origin_count, \
                       .otype = origin_datatype, .raddr = result_addr, .rcount = result_count,                   \
                       .rtype = result_datatype, .target = target_rank, .tdisp = target_disp,                    \
                       .tcount = target_count, .ttype = target_datatype, .op = op, .request = (req) }

int hashi_impl_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                              void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank,
                              MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                              MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Get_accumulate");
    return rma_op(GACC_ARGS("MPI_Get_accumulate", NULL));
}

int hashi_impl_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                                void *result_addr, MPI_Count result_count, MPI_Datatype result_datatype,
                                int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                                MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Get_accumulate_c");
    return rma_op(GACC_ARGS("MPI_Get_accumulate_c", NULL));
}

int hashi_impl_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                               void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank,
                               MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                               MPI_Win win, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Rget_accumulate");
    int rc = need_request("MPI_Rget_accumulate", win, request);
    return rc != MPI_SUCCESS ? rc : rma_op(GACC_ARGS("MPI_Rget_accumulate", request));
}

int hashi_impl_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                                 void *result_addr, MPI_Count result_count, MPI_Datatype result_datatype,
                                 int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                                 MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED("MPI_Rget_accumulate_c");
    int rc = need_request("MPI_Rget_accumulate_c", win, request);
    return rc != MPI_SUCCESS ? rc : rma_op(GACC_ARGS("MPI_Rget_accumulate_c", request));
}

/* MPI_Fetch_and_op (SUM, REPLACE, NO_OP) and MPI_Compare_and_swap of one
 * 4- or 8-byte integer on a node-local window, every argument valid: under
 * the target's accumulate lock as every accumulate-family operation, only
 * without rma_op's general machinery (about 1000 instructions). Anything
 * else, an error to raise included, returns 0 for rma_op. */
static inline int shm_fast_atomic(MPI_Win win, enum rma_kind kind, const void *oaddr, const void *compare,
                                  void *raddr, MPI_Datatype type, int target, MPI_Aint tdisp, MPI_Op op)
{
    struct rma_win *w = rma_win_get(win);
    if (!w || !w->shm_ctl || tdisp < 0 || target < 0 || target >= w->size || !raddr || !plain_integer(type) ||
        !rma_in_epoch(w, target))
        return 0;
    enum rma_shm_atomic what = kind == RMA_CAS ? RMA_SHM_CAS
                               : op == MPI_SUM ? RMA_SHM_SUM
                               : op == MPI_REPLACE ? RMA_SHM_REPLACE
                                                   : RMA_SHM_NO_OP;
    if ((kind != RMA_CAS && op != MPI_SUM && op != MPI_REPLACE && op != MPI_NO_OP) ||
        (what != RMA_SHM_NO_OP && !oaddr) || (kind == RMA_CAS && !compare))
        return 0;
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    const struct rma_peer *p = &w->peers[target];
    int64_t at = (int64_t)tdisp * p->disp_unit;
    if (!t || (t->size != 4 && t->size != 8) || at + t->size > p->size)
        return 0;
    rma_shm_atomic(w, target, (char *)(uintptr_t)p->base + at, (size_t)t->size, what,
                   what == RMA_SHM_NO_OP ? NULL : oaddr, compare, raddr);
    rma_shm_ops_count++;
    return 1;
}

int hashi_impl_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                            MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Fetch_and_op");
    if (shm_fast_atomic(win, RMA_GACC, origin_addr, NULL, result_addr, datatype, target_rank, target_disp, op))
        return MPI_SUCCESS;
    return rma_op(&(struct op_args){ .func = "MPI_Fetch_and_op", .win = win, .kind = RMA_GACC,
                                     .oaddr = origin_addr, .ocount = 1, .otype = datatype, .raddr = result_addr,
                                     .rcount = 1, .rtype = datatype, .target = target_rank, .tdisp = target_disp,
                                     .tcount = 1, .ttype = datatype, .op = op });
}

int hashi_impl_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                                MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
    HASHI_CHECK_INITIALIZED("MPI_Compare_and_swap");
    if (shm_fast_atomic(win, RMA_CAS, origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp,
                        MPI_REPLACE))
        return MPI_SUCCESS;
    const char *why;
    if (hashi_type_check(datatype, 1, &why) == MPI_SUCCESS && !hashi_type_get(datatype)->predefined && rma_win_get(win))
        return hashi_err_win("MPI_Compare_and_swap", win, MPI_ERR_TYPE, "the datatype must be a predefined one");
    return rma_op(&(struct op_args){ .func = "MPI_Compare_and_swap", .win = win, .kind = RMA_CAS,
                                     .oaddr = origin_addr, .ocount = 1, .otype = datatype, .compare = compare_addr,
                                     .raddr = result_addr, .rcount = 1, .rtype = datatype, .target = target_rank,
                                     .tdisp = target_disp, .tcount = 1, .ttype = datatype, .op = MPI_REPLACE });
}
