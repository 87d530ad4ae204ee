/*
 * Unit test of the shared matching queues (src/device/common/match.c),
 * compiled in directly: MPI ordering rules case by case, then a randomized
 * run checked step by step against a naive reference (one list per queue,
 * scanned in order), with wildcards, many contexts and growing bins.
 * Exits 0 and prints "match queues ok", or names the first wrong step.
 */
#include "device/common/match.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static void fail(int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "match_unit.c:%d: FAIL: ", line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}
#define CHECK(cond, ...) do { if (!(cond)) fail(__LINE__, __VA_ARGS__); } while (0)

/* A receive and a message as the tests see them. */
struct recv {
    struct hashi_mq_posted p;
    int id;
};
struct msg {
    struct hashi_mq_unexp u;
    int id;
};

static struct recv *post(struct hashi_mq *q, uint32_t ctx, int src, int tag, int id)
{
    struct recv *r = calloc(1, sizeof *r);
    CHECK(r, "out of memory");
    r->p.m = (struct hashi_match){ ctx, src, tag };
    r->id = id;
    CHECK(hashi_mq_post(q, &r->p) == 0, "post failed");
    return r;
}

/* The id of the receive an arrival matched (-1: none); *matched, if given,
 * gets the receive instead of it being freed. */
static int arrive_take(struct hashi_mq *q, uint32_t ctx, int src, int tag, struct recv **matched)
{
    struct hashi_mq_posted *p = hashi_mq_match_arrival(q, ctx, src, tag);
    if (!p)
        return -1;
    struct recv *r = container_of(p, struct recv, p);
    int id = r->id;
    if (matched)
        *matched = r;
    else
        free(r);
    return id;
}

static int arrive(struct hashi_mq *q, uint32_t ctx, int src, int tag)
{
    return arrive_take(q, ctx, src, tag, NULL);
}

static void queue_unexp(struct hashi_mq *q, uint32_t ctx, int src, int tag, int id)
{
    struct msg *m = calloc(1, sizeof *m);
    CHECK(m, "out of memory");
    m->u.context_id = ctx;
    m->u.source = src;
    m->u.tag = tag;
    m->id = id;
    CHECK(hashi_mq_add_unexp(q, &m->u) == 0, "add_unexp failed");
}

static int take(struct hashi_mq *q, uint32_t ctx, int src, int tag, int remove)
{
    struct hashi_match m = { ctx, src, tag };
    struct hashi_mq_unexp *u = hashi_mq_find_unexp(q, &m, remove);
    if (!u)
        return -1;
    struct msg *msg = container_of(u, struct msg, u);
    int id = msg->id;
    if (remove)
        free(msg);
    return id;
}

static void rules(void)
{
    struct hashi_mq q;
    hashi_mq_init(&q);
    const int ANY_S = MPI_ANY_SOURCE, ANY_T = MPI_ANY_TAG;

    /* Specific receive, then its message. */
    post(&q, 0, 1, 5, 1);
    CHECK(arrive(&q, 0, 1, 6) == -1, "tag 6 matched a receive for tag 5");
    CHECK(arrive(&q, 0, 2, 5) == -1, "source 2 matched a receive for source 1");
    CHECK(arrive(&q, 2, 1, 5) == -1, "context 2 matched a receive of context 0");
    CHECK(arrive(&q, 0, 1, 5) == 1, "the matching message did not find its receive");
    CHECK(arrive(&q, 0, 1, 5) == -1, "a receive matched twice");

    /* ANY_SOURCE posted first wins over a later specific receive, and back. */
    post(&q, 0, ANY_S, 7, 10);
    post(&q, 0, 3, 7, 11);
    CHECK(arrive(&q, 0, 3, 7) == 10, "the earlier ANY_SOURCE receive lost to a later specific one");
    CHECK(arrive(&q, 0, 3, 7) == 11, "the specific receive did not get the second message");
    post(&q, 0, 3, 7, 12);
    post(&q, 0, ANY_S, 7, 13);
    CHECK(arrive(&q, 0, 3, 7) == 12, "the earlier specific receive lost to a later ANY_SOURCE one");
    CHECK(arrive(&q, 0, 4, 7) == 13, "ANY_SOURCE did not take a message from another source");

    /* Tag wildcards within one source, in post order. */
    post(&q, 0, 1, ANY_T, 20);
    post(&q, 0, 1, 5, 21);
    CHECK(arrive(&q, 0, 1, 5) == 20, "ANY_TAG posted first lost");
    CHECK(arrive(&q, 0, 1, 9) == -1, "tag 9 matched a receive for tag 5");
    CHECK(arrive(&q, 0, 1, 5) == 21, "the tag-5 receive did not get its message");
    post(&q, 0, ANY_S, ANY_T, 22);
    CHECK(arrive(&q, 0, 9, 12345) == 22, "ANY_SOURCE/ANY_TAG did not match");

    /* Unexpected messages: arrival order per query. */
    queue_unexp(&q, 0, 2, 1, 30);
    queue_unexp(&q, 0, 1, 1, 31);
    queue_unexp(&q, 0, 2, 2, 32);
    queue_unexp(&q, 4, 2, 1, 33);
    CHECK(take(&q, 0, ANY_S, 1, 0) == 30, "probe ANY_SOURCE tag 1 missed the first arrival");
    CHECK(take(&q, 0, ANY_S, 1, 1) == 30, "receive ANY_SOURCE tag 1 missed the first arrival");
    CHECK(take(&q, 0, 2, ANY_T, 1) == 32, "receive source 2 ANY_TAG got the wrong message");
    CHECK(take(&q, 0, 2, ANY_T, 1) == -1, "source 2 had only two messages in context 0");
    CHECK(take(&q, 0, ANY_S, ANY_T, 1) == 31, "ANY/ANY missed the remaining message");
    CHECK(take(&q, 0, ANY_S, ANY_T, 1) == -1, "context 0 should be empty");
    CHECK(take(&q, 4, 2, 1, 1) == 33, "context 4's message is gone");

    /* Cancel: a cancelled receive matches nothing; a matched one cannot be cancelled. */
    struct recv *r = post(&q, 0, 5, 5, 40);
    CHECK(hashi_mq_cancel(&q, &r->p) == 1, "cancelling a queued receive failed");
    free(r);
    CHECK(arrive(&q, 0, 5, 5) == -1, "a cancelled receive matched");
    r = post(&q, 0, ANY_S, 6, 41);
    CHECK(hashi_mq_cancel(&q, &r->p) == 1, "cancelling a queued ANY_SOURCE receive failed");
    CHECK(hashi_mq_cancel(&q, &r->p) == 0, "cancelling twice succeeded");
    free(r);
    CHECK(q.posted_count == 0, "%zu receives left posted", q.posted_count);
    CHECK(q.unexp_count == 0, "%zu messages left unexpected", q.unexp_count);
    hashi_mq_destroy(&q);
}

/* ---- the randomized comparison with a naive reference ---- */

struct ref {
    int kind;                   /* 0 posted receive, 1 unexpected message */
    uint32_t ctx;
    int src, tag, id;
    uint64_t order;
};

#define NREF 4096
static struct ref refs[NREF];
static int nrefs;
static uint64_t order_counter;

static int ref_match(int want, int have, int any)
{
    return want == any || want == have;
}

/* Earliest posted receive matching an arrival; removes it. */
static int ref_arrive(uint32_t ctx, int src, int tag)
{
    int best = -1;
    for (int i = 0; i < nrefs; i++) {
        struct ref *r = &refs[i];
        if (r->kind != 0 || r->ctx != ctx || !ref_match(r->src, src, MPI_ANY_SOURCE) ||
            !ref_match(r->tag, tag, MPI_ANY_TAG))
            continue;
        if (best < 0 || r->order < refs[best].order)
            best = i;
    }
    if (best < 0)
        return -1;
    int id = refs[best].id;
    refs[best] = refs[--nrefs];
    return id;
}

static int ref_take(uint32_t ctx, int src, int tag, int remove)
{
    int best = -1;
    for (int i = 0; i < nrefs; i++) {
        struct ref *r = &refs[i];
        if (r->kind != 1 || r->ctx != ctx || !ref_match(src, r->src, MPI_ANY_SOURCE) ||
            !ref_match(tag, r->tag, MPI_ANY_TAG))
            continue;
        if (best < 0 || r->order < refs[best].order)
            best = i;
    }
    if (best < 0)
        return -1;
    int id = refs[best].id;
    if (remove)
        refs[best] = refs[--nrefs];
    return id;
}

static void ref_add(int kind, uint32_t ctx, int src, int tag, int id)
{
    CHECK(nrefs < NREF, "reference table full");
    refs[nrefs++] = (struct ref){ kind, ctx, src, tag, id, order_counter++ };
}

static unsigned long long rng_state = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

static void randomized(int steps, int nsrc, int ntag, int nctx)
{
    struct hashi_mq q;
    hashi_mq_init(&q);
    struct recv *live[NREF];
    int nlive = 0;
    nrefs = 0;
    for (int step = 0; step < steps; step++) {
        uint32_t ctx = (uint32_t)rnd((unsigned)nctx) * 2;
        int src = (int)rnd((unsigned)nsrc), tag = (int)rnd((unsigned)ntag);
        int id = step + 1;
        switch (rnd(6)) {
        case 0:
        case 1: { /* a receive is posted: unexpected queue first, like a device does */
            int s = rnd(4) == 0 ? MPI_ANY_SOURCE : src, t = rnd(4) == 0 ? MPI_ANY_TAG : tag;
            int want = ref_take(ctx, s, t, 1);
            int got = take(&q, ctx, s, t, 1);
            CHECK(got == want, "step %d: receive (%u,%d,%d) found message %d, reference %d", step, ctx, s, t, got, want);
            if (got < 0 && nlive < NREF && nrefs < NREF) {
                live[nlive++] = post(&q, ctx, s, t, id);
                ref_add(0, ctx, s, t, id);
            }
            break;
        }
        case 2:
        case 3: { /* a message arrives */
            int want = ref_arrive(ctx, src, tag);
            struct recv *matched = NULL;
            int got = arrive_take(&q, ctx, src, tag, &matched);
            CHECK(got == want, "step %d: arrival (%u,%d,%d) matched receive %d, reference %d", step, ctx, src, tag,
                  got, want);
            if (matched) {
                for (int i = 0; i < nlive; i++)
                    if (live[i] == matched) {
                        live[i] = live[--nlive];
                        break;
                    }
                free(matched);
            } else if (nrefs < NREF) {
                queue_unexp(&q, ctx, src, tag, id);
                ref_add(1, ctx, src, tag, id);
            }
            break;
        }
        case 4: { /* a probe */
            int s = rnd(2) ? MPI_ANY_SOURCE : src, t = rnd(2) ? MPI_ANY_TAG : tag;
            int want = ref_take(ctx, s, t, 0), got = take(&q, ctx, s, t, 0);
            CHECK(got == want, "step %d: probe (%u,%d,%d) saw %d, reference %d", step, ctx, s, t, got, want);
            break;
        }
        case 5: /* cancel a random live receive */
            if (nlive) {
                int k = (int)rnd((unsigned)nlive);
                struct recv *r = live[k];
                CHECK(hashi_mq_cancel(&q, &r->p) == 1, "step %d: cancel of a live receive failed", step);
                for (int i = 0; i < nrefs; i++)
                    if (refs[i].kind == 0 && refs[i].id == r->id) {
                        refs[i] = refs[--nrefs];
                        break;
                    }
                free(r);
                live[k] = live[--nlive];
            }
            break;
        }
        int posted = 0, unexp = 0;
        for (int i = 0; i < nrefs; i++)
            *(refs[i].kind ? &unexp : &posted) += 1;
        CHECK(q.posted_count == (size_t)posted && q.unexp_count == (size_t)unexp,
              "step %d: queue sizes %zu/%zu, reference %d/%d", step, q.posted_count, q.unexp_count, posted, unexp);
    }
    for (int i = 0; i < nlive; i++) {
        CHECK(hashi_mq_cancel(&q, &live[i]->p) == 1, "final cancel failed");
        free(live[i]);
    }
    while (take(&q, 0, MPI_ANY_SOURCE, MPI_ANY_TAG, 1) >= 0)
        ;
    for (int c = 0; c < nctx; c++)
        while (take(&q, (uint32_t)c * 2, MPI_ANY_SOURCE, MPI_ANY_TAG, 1) >= 0)
            ;
    CHECK(q.unexp_count == 0 && q.posted_count == 0, "queues not empty at the end");
    hashi_mq_destroy(&q);
}

int main(void)
{
    rules();
    randomized(60000, 3, 3, 1);       /* dense: many collisions, wildcards everywhere */
    randomized(60000, 40, 5, 7);      /* several contexts and sources */
    randomized(20000, 5000, 2, 300);  /* bins and the context table grow */
    printf("match queues ok\n");
    return 0;
}
