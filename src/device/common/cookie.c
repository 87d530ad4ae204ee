/* Cookies: index + generation names for local objects echoed by peers (cookie.h). */
#include "device/common/cookie.h"

#include <stdlib.h>
#include <string.h>

/* Low bits index the table, high bits count reuses of the slot. */
#define INDEX_BITS 22
#define INDEX_MASK ((1u << INDEX_BITS) - 1)
#define MAX_SLOTS INDEX_MASK

struct hashi_cookie_slot {
    void *obj;                 /* NULL when free */
    uint32_t generation;       /* 1 .. 2^(32-INDEX_BITS)-1, never 0 */
    uint32_t next_free;        /* index + 1, 0 ends the list */
};

void hashi_cookies_init(struct hashi_cookies *t)
{
    memset(t, 0, sizeof *t);
}

void hashi_cookies_destroy(struct hashi_cookies *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int grow(struct hashi_cookies *t)
{
    uint32_t cap = t->capacity ? t->capacity * 2 : 256;
    if (cap > MAX_SLOTS)
        cap = MAX_SLOTS;
    if (cap <= t->capacity)
        return -1;
    struct hashi_cookie_slot *s = realloc(t->slots, cap * sizeof *s);
    if (!s)
        return -1;
    /* Slot 0 stays unused so that cookie 0 never names anything. */
    for (uint32_t i = t->capacity ? t->capacity : 1; i < cap; i++) {
        s[i].obj = NULL;
        s[i].generation = 1;
        s[i].next_free = t->free_head;
        t->free_head = i + 1;
    }
    if (!t->capacity)
        memset(&s[0], 0, sizeof s[0]);
    t->slots = s;
    t->capacity = cap;
    return 0;
}

uint32_t hashi_cookie_new(struct hashi_cookies *t, void *obj)
{
    if (!t->free_head && grow(t) != 0)
        return 0;
    uint32_t i = t->free_head - 1;
    struct hashi_cookie_slot *s = &t->slots[i];
    t->free_head = s->next_free;
    s->obj = obj;
    t->in_use++;
    return s->generation << INDEX_BITS | i;
}

void *hashi_cookie_get(const struct hashi_cookies *t, uint32_t cookie)
{
    uint32_t i = cookie & INDEX_MASK;
    if (i == 0 || i >= t->capacity)
        return NULL;
    const struct hashi_cookie_slot *s = &t->slots[i];
    return s->generation == cookie >> INDEX_BITS ? s->obj : NULL;
}

void hashi_cookie_free(struct hashi_cookies *t, uint32_t cookie)
{
    uint32_t i = cookie & INDEX_MASK;
    if (i == 0 || i >= t->capacity)
        return;
    struct hashi_cookie_slot *s = &t->slots[i];
    if (s->generation != cookie >> INDEX_BITS || !s->obj)
        return;
    s->obj = NULL;
    s->generation = s->generation + 1 < (1u << (32 - INDEX_BITS)) ? s->generation + 1 : 1;
    s->next_free = t->free_head;
    t->free_head = i + 1;
    t->in_use--;
}
