/*
 * MPI matching queues: posted receives and unexpected messages.
 *
 * Layout. Per context id, a bin per source rank holds that source's posted
 * receives and unexpected messages in order, so a receive or an arrival from
 * a specific source looks only at its own bin. Receives with MPI_ANY_SOURCE
 * wait in one list per context; unexpected messages are also threaded on a
 * per-context list in arrival order, which is what an ANY_SOURCE receive
 * searches. Every posted receive takes a sequence number: an arrival that
 * matches both the head of its source's bin and an ANY_SOURCE receive goes to
 * the one posted first, which is MPI's rule.
 *
 * Entries are embedded in their owners (request, unexpected-message record);
 * the queues never allocate per message, only per context and bin array.
 * No locking: the owner serialises calls.
 */
#ifndef HASHI_DEVICE_COMMON_MATCH_H
#define HASHI_DEVICE_COMMON_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "device/device.h"

struct hashi_mq_link {
    struct hashi_mq_link *next, *prev;
};
struct hashi_mq_list {
    struct hashi_mq_link *first, *last;
};

/* Unlink e from l (the arrival's inline match and match.c share it). */
static inline void hashi_mq_list_remove(struct hashi_mq_list *l, struct hashi_mq_link *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->first = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->last = e->prev;
    e->next = e->prev = NULL;
}

struct hashi_mq_posted {
    struct hashi_mq_link link;
    uint64_t seq;               /* post order (set by hashi_mq_post) */
    struct hashi_match m;       /* source and tag may be wildcards */
    int queued;                 /* still waiting in the queue */
};

struct hashi_mq_unexp {
    struct hashi_mq_link by_source;   /* in the source's bin */
    struct hashi_mq_link by_arrival;  /* in the context's arrival list */
    uint32_t context_id;
    int source;                 /* rank in the communicator */
    int tag;
};

struct hashi_mq_bin {
    struct hashi_mq_list posted, unexp;
};

struct hashi_mq_ctx {
    uint32_t id;
    struct hashi_mq_list posted_any;  /* MPI_ANY_SOURCE receives, in post order */
    struct hashi_mq_list unexp_all;   /* unexpected messages, in arrival order */
    int nbins;
    struct hashi_mq_bin *bins;        /* by source rank */
};

struct hashi_mq {
    struct hashi_mq_ctx **table;      /* open addressing on context id */
    size_t capacity, count;
    struct hashi_mq_ctx *last;        /* one-entry cache: most traffic is on one context */
    uint64_t next_seq;
    size_t posted_count, unexp_count; /* for diagnostics */
};

void hashi_mq_init(struct hashi_mq *q);
/* Free the tables; entries still queued belong to their owners. */
void hashi_mq_destroy(struct hashi_mq *q);

/*
 * An envelope arrived: remove and return the posted receive it matches (the
 * earliest posted among its source's bin and the ANY_SOURCE list), or NULL.
 */
struct hashi_mq_posted *hashi_mq_match_arrival_general(struct hashi_mq *q, uint32_t context_id, int source,
                                                       int tag);
static inline struct hashi_mq_posted *hashi_mq_match_arrival(struct hashi_mq *q, uint32_t context_id, int source,
                                                             int tag)
{
    /* Inline for the common case, on the path of every arriving message: the
     * last context used, no ANY_SOURCE receive waiting in it, and the first
     * receive in the source's bin takes the message (it is then the earliest
     * posted that matches). Anything else: the general search. */
    struct hashi_mq_ctx *c = q->last;
    if (c && c->id == context_id && !c->posted_any.first && source >= 0 && source < c->nbins) {
        struct hashi_mq_list *l = &c->bins[source].posted;
        struct hashi_mq_link *head = l->first;
        if (head) {
            struct hashi_mq_posted *p =
                (struct hashi_mq_posted *)((char *)head - offsetof(struct hashi_mq_posted, link));
            if (p->m.tag == tag || p->m.tag == MPI_ANY_TAG) {
                /* A list's first entry has no prev: said so, the compiler
                 * drops that test and load from the shared unlink. */
                if (head->prev)
                    __builtin_unreachable();
                hashi_mq_list_remove(l, head);
                p->queued = 0;
                q->posted_count--;
                return p;
            }
        }
    }
    return hashi_mq_match_arrival_general(q, context_id, source, tag);
}

/* Queue an unexpected message (context_id, source, tag set). 0, or -1 out of memory. */
int hashi_mq_add_unexp(struct hashi_mq *q, struct hashi_mq_unexp *u);

/*
 * The earliest unexpected message a receive or probe with m would match, or
 * NULL. remove != 0 takes it out of the queues.
 */
struct hashi_mq_unexp *hashi_mq_find_unexp(struct hashi_mq *q, const struct hashi_match *m, int remove);

/*
 * Remove and return the earliest unexpected message of (context_id, source)
 * for which is_it(u, arg) is true, or NULL (a sender's cancel naming its
 * message, am_core.c).
 */
struct hashi_mq_unexp *hashi_mq_take_unexp(struct hashi_mq *q, uint32_t context_id, int source,
                                           int (*is_it)(const struct hashi_mq_unexp *u, const void *arg),
                                           const void *arg);

/* Queue a receive that found no unexpected message (p->m set). 0, or -1 out of memory. */
int hashi_mq_post(struct hashi_mq *q, struct hashi_mq_posted *p);

/*
 * Whether a queued receive with a specific source is the one any message
 * it matches would go to: no receive posted before it in its source's bin or
 * in its context's ANY_SOURCE list matches a tag that it matches too
 * (receive-first announcements, am_core.c). 1 or 0.
 */
int hashi_mq_posted_first(struct hashi_mq *q, const struct hashi_mq_posted *p);

/* Take a posted receive out of the queue (cancel): 1 if it was queued, 0 if already matched. */
int hashi_mq_cancel(struct hashi_mq *q, struct hashi_mq_posted *p);

/* Call fn on every unexpected message after removing it (finalize). */
void hashi_mq_drain_unexp(struct hashi_mq *q, void (*fn)(struct hashi_mq_unexp *u, void *arg), void *arg);

#endif
