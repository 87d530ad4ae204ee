/* MPI matching queues: per-(context, source) bins plus ANY_SOURCE lists (see match.h). */
#include "device/common/match.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static void list_append(struct hashi_mq_list *l, struct hashi_mq_link *e)
{
    e->next = NULL;
    e->prev = l->last;
    if (l->last)
        l->last->next = e;
    else
        l->first = e;
    l->last = e;
}

void hashi_mq_init(struct hashi_mq *q)
{
    memset(q, 0, sizeof *q);
}

void hashi_mq_destroy(struct hashi_mq *q)
{
    for (size_t i = 0; i < q->capacity; i++) {
        if (q->table[i]) {
            free(q->table[i]->bins);
            free(q->table[i]);
        }
    }
    free(q->table);
    memset(q, 0, sizeof *q);
}

static size_t slot_of(uint32_t id, size_t capacity)
{
    /* Multiplicative hashing spreads consecutive context ids (allocated in pairs). */
    uint32_t h = id * 2654435769u;
    return (size_t)(h ^ (h >> 16)) & (capacity - 1);
}

static int table_grow(struct hashi_mq *q)
{
    size_t cap = q->capacity ? q->capacity * 2 : 64;
    struct hashi_mq_ctx **t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < q->capacity; i++) {
        struct hashi_mq_ctx *c = q->table[i];
        if (!c)
            continue;
        size_t s = slot_of(c->id, cap);
        while (t[s])
            s = (s + 1) & (cap - 1);
        t[s] = c;
    }
    free(q->table);
    q->table = t;
    q->capacity = cap;
    return 0;
}

/* ctx_get's way when the context is not the last one used. */
static __attribute__((noinline)) struct hashi_mq_ctx *ctx_lookup(struct hashi_mq *q, uint32_t id, int create)
{
    if (q->capacity) {
        for (size_t s = slot_of(id, q->capacity);; s = (s + 1) & (q->capacity - 1)) {
            struct hashi_mq_ctx *c = q->table[s];
            if (!c)
                break;
            if (c->id == id)
                return q->last = c;
        }
    }
    if (!create)
        return NULL;
    if ((q->count + 1) * 2 > q->capacity && table_grow(q) != 0)
        return NULL;
    struct hashi_mq_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->id = id;
    size_t s = slot_of(id, q->capacity);
    while (q->table[s])
        s = (s + 1) & (q->capacity - 1);
    q->table[s] = c;
    q->count++;
    return q->last = c;
}

/* The context's state; created on first use when create != 0 (NULL if out of
 * memory). Inline for the one-entry cache: every post and arrival asks. */
static inline struct hashi_mq_ctx *ctx_get(struct hashi_mq *q, uint32_t id, int create)
{
    if (q->last && q->last->id == id)
        return q->last;
    return ctx_lookup(q, id, create);
}

/* bin_get's way when the bin array must grow. */
static __attribute__((noinline)) struct hashi_mq_bin *bin_grow(struct hashi_mq_ctx *c, int source)
{
    int n = c->nbins ? c->nbins : 8;
    while (n <= source)
        n *= 2;
    /* Lists hold first/last pointers only, so moving the array is safe. */
    struct hashi_mq_bin *b = realloc(c->bins, (size_t)n * sizeof *b);
    if (!b)
        return NULL;
    memset(b + c->nbins, 0, (size_t)(n - c->nbins) * sizeof *b);
    c->bins = b;
    c->nbins = n;
    return &c->bins[source];
}

/* The bin of a source, growing the bin array as needed (NULL if out of memory). */
static inline struct hashi_mq_bin *bin_get(struct hashi_mq_ctx *c, int source)
{
    return source < c->nbins ? &c->bins[source] : bin_grow(c, source);
}

static int tag_matches(int want, int tag)
{
    return want == MPI_ANY_TAG || want == tag;
}

static struct hashi_mq_posted *first_posted_for_tag(struct hashi_mq_list *l, int tag)
{
    for (struct hashi_mq_link *e = l->first; e; e = e->next) {
        struct hashi_mq_posted *p = container_of(e, struct hashi_mq_posted, link);
        if (tag_matches(p->m.tag, tag))
            return p;
    }
    return NULL;
}

struct hashi_mq_posted *hashi_mq_match_arrival_general(struct hashi_mq *q, uint32_t context_id, int source, int tag)
{
    if (q->posted_count == 0)
        return NULL;
    struct hashi_mq_ctx *c = ctx_get(q, context_id, 0);
    if (!c)
        return NULL;
    struct hashi_mq_posted *specific = NULL, *any;
    struct hashi_mq_bin *b = source < c->nbins ? &c->bins[source] : NULL;
    if (b)
        specific = first_posted_for_tag(&b->posted, tag);
    any = first_posted_for_tag(&c->posted_any, tag);
    struct hashi_mq_posted *p = specific;
    if (any && (!p || any->seq < p->seq))
        p = any;
    if (!p)
        return NULL;
    hashi_mq_list_remove(p == any ? &c->posted_any : &b->posted, &p->link);
    p->queued = 0;
    q->posted_count--;
    return p;
}

int hashi_mq_add_unexp(struct hashi_mq *q, struct hashi_mq_unexp *u)
{
    struct hashi_mq_ctx *c = ctx_get(q, u->context_id, 1);
    struct hashi_mq_bin *b = c ? bin_get(c, u->source) : NULL;
    if (!b)
        return -1;
    list_append(&b->unexp, &u->by_source);
    list_append(&c->unexp_all, &u->by_arrival);
    q->unexp_count++;
    return 0;
}

static void unexp_remove(struct hashi_mq *q, struct hashi_mq_ctx *c, struct hashi_mq_unexp *u)
{
    hashi_mq_list_remove(&c->bins[u->source].unexp, &u->by_source);
    hashi_mq_list_remove(&c->unexp_all, &u->by_arrival);
    q->unexp_count--;
}

struct hashi_mq_unexp *hashi_mq_find_unexp(struct hashi_mq *q, const struct hashi_match *m, int remove)
{
    if (q->unexp_count == 0)
        return NULL;
    struct hashi_mq_ctx *c = ctx_get(q, m->context_id, 0);
    if (!c)
        return NULL;
    struct hashi_mq_unexp *found = NULL;
    if (m->source == MPI_ANY_SOURCE) {
        for (struct hashi_mq_link *e = c->unexp_all.first; e; e = e->next) {
            struct hashi_mq_unexp *u = container_of(e, struct hashi_mq_unexp, by_arrival);
            if (tag_matches(m->tag, u->tag)) {
                found = u;
                break;
            }
        }
    } else if (m->source >= 0 && m->source < c->nbins) {
        for (struct hashi_mq_link *e = c->bins[m->source].unexp.first; e; e = e->next) {
            struct hashi_mq_unexp *u = container_of(e, struct hashi_mq_unexp, by_source);
            if (tag_matches(m->tag, u->tag)) {
                found = u;
                break;
            }
        }
    }
    if (found && remove)
        unexp_remove(q, c, found);
    return found;
}

struct hashi_mq_unexp *hashi_mq_take_unexp(struct hashi_mq *q, uint32_t context_id, int source,
                                           int (*is_it)(const struct hashi_mq_unexp *u, const void *arg),
                                           const void *arg)
{
    struct hashi_mq_ctx *c = q->unexp_count ? ctx_get(q, context_id, 0) : NULL;
    if (!c || source < 0 || source >= c->nbins)
        return NULL;
    for (struct hashi_mq_link *e = c->bins[source].unexp.first; e; e = e->next) {
        struct hashi_mq_unexp *u = container_of(e, struct hashi_mq_unexp, by_source);
        if (is_it(u, arg)) {
            unexp_remove(q, c, u);
            return u;
        }
    }
    return NULL;
}

int hashi_mq_post(struct hashi_mq *q, struct hashi_mq_posted *p)
{
    struct hashi_mq_ctx *c = ctx_get(q, p->m.context_id, 1);
    if (!c)
        return -1;
    struct hashi_mq_list *l;
    if (p->m.source == MPI_ANY_SOURCE) {
        l = &c->posted_any;
    } else {
        struct hashi_mq_bin *b = bin_get(c, p->m.source);
        if (!b)
            return -1;
        l = &b->posted;
    }
    p->seq = q->next_seq++;
    p->queued = 1;
    list_append(l, &p->link);
    q->posted_count++;
    return 0;
}

/* Whether two receives' tags can both match one message. */
static int tags_overlap(int a, int b)
{
    return a == MPI_ANY_TAG || b == MPI_ANY_TAG || a == b;
}

int hashi_mq_posted_first(struct hashi_mq *q, const struct hashi_mq_posted *p)
{
    if (!p->queued || p->m.source == MPI_ANY_SOURCE)
        return 0;
    struct hashi_mq_ctx *c = ctx_get(q, p->m.context_id, 0);
    if (!c || p->m.source >= c->nbins)
        return 0;
    for (struct hashi_mq_link *e = c->bins[p->m.source].posted.first; e && e != &p->link; e = e->next)
        if (tags_overlap(container_of(e, struct hashi_mq_posted, link)->m.tag, p->m.tag))
            return 0;
    for (struct hashi_mq_link *e = c->posted_any.first; e; e = e->next) {
        const struct hashi_mq_posted *a = container_of(e, struct hashi_mq_posted, link);
        if (a->seq > p->seq)
            break;   /* in post order: the rest came later */
        if (tags_overlap(a->m.tag, p->m.tag))
            return 0;
    }
    return 1;
}

int hashi_mq_cancel(struct hashi_mq *q, struct hashi_mq_posted *p)
{
    if (!p->queued)
        return 0;
    struct hashi_mq_ctx *c = ctx_get(q, p->m.context_id, 0);
    if (!c)
        return 0;
    hashi_mq_list_remove(p->m.source == MPI_ANY_SOURCE ? &c->posted_any : &c->bins[p->m.source].posted, &p->link);
    p->queued = 0;
    q->posted_count--;
    return 1;
}

void hashi_mq_drain_unexp(struct hashi_mq *q, void (*fn)(struct hashi_mq_unexp *u, void *arg), void *arg)
{
    for (size_t i = 0; i < q->capacity; i++) {
        struct hashi_mq_ctx *c = q->table[i];
        while (c && c->unexp_all.first) {
            struct hashi_mq_unexp *u = container_of(c->unexp_all.first, struct hashi_mq_unexp, by_arrival);
            unexp_remove(q, c, u);
            fn(u, arg);
        }
    }
}
