/*
 * Groups: ordered sets of processes, each member named by its MPI_COMM_WORLD
 * rank. Groups are immutable and reference-counted, so a communicator and the
 * results of MPI_Comm_group share one object. The world group stores no
 * table (world_ranks NULL is the identity); lookups from world rank to group
 * rank go through a sorted index (comm.h), never an array of the job's size.
 */
#include "mpi/comm.h"
#include "mpi/handles.h"
#include "runtime/rt.h"

#include <stdlib.h>
#include <string.h>

struct MPI_ABI_Group hashi_group_world = { .magic = HASHI_GROUP_MAGIC, .rank = MPI_UNDEFINED, .refcount = 1 };
struct MPI_ABI_Group hashi_group_self = { .magic = HASHI_GROUP_MAGIC, .rank = MPI_UNDEFINED, .refcount = 1 };
struct MPI_ABI_Group hashi_group_empty = { .magic = HASHI_GROUP_MAGIC, .size = 0, .rank = MPI_UNDEFINED,
                                           .refcount = 1 };
/* MPI_COMM_SELF's one member. */
static int self_world_rank;

void hashi_groups_init(void)
{
    hashi_group_world.size = hashi_job.size;
    hashi_group_world.rank = hashi_job.rank;
    hashi_group_world.world_ranks = NULL;
    self_world_rank = hashi_job.rank;
    hashi_group_self.size = 1;
    hashi_group_self.rank = 0;
    hashi_group_self.world_ranks = &self_world_rank;
}

/* The predefined groups live as long as the library and ignore reference counts. */
static int group_is_static(const struct MPI_ABI_Group *g)
{
    return g == &hashi_group_world || g == &hashi_group_self || g == &hashi_group_empty;
}

struct MPI_ABI_Group *hashi_group_get(MPI_Group h)
{
    if (h == MPI_GROUP_EMPTY)
        return &hashi_group_empty;
    if (hashi_handle_is_predefined(h) || h->magic != HASHI_GROUP_MAGIC)
        return NULL;
    return (struct MPI_ABI_Group *)h;
}

MPI_Group hashi_group_handle(struct MPI_ABI_Group *g)
{
    return g == &hashi_group_empty ? MPI_GROUP_EMPTY : (MPI_Group)g;
}

void hashi_group_retain(struct MPI_ABI_Group *g)
{
    if (!group_is_static(g))
        hashi_ref_inc(&g->refcount);
}

void hashi_group_release(struct MPI_ABI_Group *g)
{
    if (!g || group_is_static(g))
        return;
    if (!hashi_ref_dec(&g->refcount))
        return;
    hashi_handle_forget(g);
    g->magic = 0; /* a stale handle used later fails the magic check (most of the time) */
    if (g->session)
        hashi_session_release(g->session);
    free(g->world_ranks);
    free(g);
}

/* A group made from `from` belongs to the same session (MPI-4 sec. 11.3). */
static struct MPI_ABI_Group *derived_from(struct MPI_ABI_Group *ng, const struct MPI_ABI_Group *from)
{
    if (ng && !group_is_static(ng) && from->session)
        hashi_session_retain(ng->session = from->session);
    return ng;
}

struct MPI_ABI_Group *hashi_group_from_world_ranks(int size, int *world_ranks)
{
    if (size == 0) {
        free(world_ranks);
        return &hashi_group_empty;
    }
    struct MPI_ABI_Group *g = malloc(sizeof *g);
    if (!g) {
        free(world_ranks);
        return NULL;
    }
    g->magic = HASHI_GROUP_MAGIC;
    g->size = size;
    g->world_ranks = world_ranks;
    g->session = NULL;
    g->rank = MPI_UNDEFINED;
    for (int i = 0; i < size; i++) {
        if (world_ranks[i] == hashi_job.rank) {
            g->rank = i;
            break;
        }
    }
    atomic_init(&g->refcount, 1);
    return g;
}

/* ---- world rank -> group rank ---- */

static int member_by_world(const void *a, const void *b)
{
    const struct hashi_group_member *x = a, *y = b;
    return (x->world > y->world) - (x->world < y->world);
}

int hashi_group_index_build(struct hashi_group_index *idx, const struct MPI_ABI_Group *g)
{
    idx->group = g;
    idx->by_world = NULL;
    if (!g->world_ranks) /* the world group (or the empty one): the identity */
        return 0;
    idx->by_world = malloc((size_t)g->size * sizeof *idx->by_world);
    if (!idx->by_world)
        return -1;
    for (int i = 0; i < g->size; i++) {
        idx->by_world[i].world = g->world_ranks[i];
        idx->by_world[i].rank = i;
    }
    qsort(idx->by_world, (size_t)g->size, sizeof *idx->by_world, member_by_world);
    return 0;
}

int hashi_group_index_lookup(const struct hashi_group_index *idx, int world_rank)
{
    if (!idx->by_world)
        return world_rank >= 0 && world_rank < idx->group->size ? world_rank : MPI_UNDEFINED;
    int lo = 0, hi = idx->group->size - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int w = idx->by_world[mid].world;
        if (w == world_rank)
            return idx->by_world[mid].rank;
        if (w < world_rank)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return MPI_UNDEFINED;
}

void hashi_group_index_free(struct hashi_group_index *idx)
{
    free(idx->by_world);
    idx->by_world = NULL;
}

int hashi_group_compare(const struct MPI_ABI_Group *a, const struct MPI_ABI_Group *b)
{
    if (a == b)
        return MPI_IDENT;
    if (a->size != b->size)
        return MPI_UNEQUAL;
    int same_order = 1;
    for (int i = 0; i < a->size && same_order; i++)
        same_order = hashi_group_to_world(a, i) == hashi_group_to_world(b, i);
    if (same_order)
        return MPI_IDENT;
    /* Same size and members are distinct: the same set iff every member of b is in a. */
    struct hashi_group_index idx;
    if (hashi_group_index_build(&idx, a) != 0)
        return -1;
    int result = MPI_SIMILAR;
    for (int i = 0; i < b->size && result == MPI_SIMILAR; i++)
        if (hashi_group_index_lookup(&idx, hashi_group_to_world(b, i)) == MPI_UNDEFINED)
            result = MPI_UNEQUAL;
    hashi_group_index_free(&idx);
    return result;
}

/* ---- argument checks ---- */

#define GROUP_ERR(func, code, ...) hashi_err_raise((func), HASHI_OBJ_NONE, NULL, (code), __VA_ARGS__)
#define NO_MEM(func) GROUP_ERR(func, MPI_ERR_NO_MEM, "out of memory")

/* The error for a group argument that is not one. */
static int invalid_group(const char *func, MPI_Group h, const char *argname)
{
    return GROUP_ERR(func, MPI_ERR_GROUP, h == MPI_GROUP_NULL ? "%s is MPI_GROUP_NULL" : "%s is not a valid group",
                     argname);
}

/*
 * Check a list of n ranks of g for MPI_Group_incl / excl: each in range, none
 * twice. `chosen` (g->size bytes, zeroed) comes back marking the listed ranks.
 */
static int check_rank_list(const char *func, const struct MPI_ABI_Group *g, int n, const int ranks[],
                           unsigned char *chosen)
{
    for (int i = 0; i < n; i++) {
        int r = ranks[i];
        if (r < 0 || r >= g->size)
            return GROUP_ERR(func, MPI_ERR_RANK, "ranks[%d] = %d is not a rank of the group (size %d)", i, r,
                             g->size);
        if (chosen[r])
            return GROUP_ERR(func, MPI_ERR_RANK, "rank %d appears twice in ranks (ranks[%d])", r, i);
        chosen[r] = 1;
    }
    return MPI_SUCCESS;
}

/* The common checks of incl / excl: n, the arrays, the group. */
static int check_incl_excl(const char *func, MPI_Group group, struct MPI_ABI_Group *g, int n, const int ranks[],
                           MPI_Group *newgroup)
{
    if (!g)
        return invalid_group(func, group, "group");
    if (!newgroup)
        return GROUP_ERR(func, MPI_ERR_ARG, "newgroup is NULL");
    if (n < 0 || n > g->size)
        return GROUP_ERR(func, MPI_ERR_ARG, "n = %d is not in 0..%d (the group's size)", n, g->size);
    if (n > 0 && !ranks)
        return GROUP_ERR(func, MPI_ERR_ARG, "ranks is NULL");
    return MPI_SUCCESS;
}

/* A new group of the members of g at the given group ranks, in that order. */
static int group_select(const char *func, const struct MPI_ABI_Group *g, int n, const int ranks[],
                        MPI_Group *newgroup)
{
    int *world = malloc(n > 0 ? (size_t)n * sizeof *world : 1);
    if (!world)
        return NO_MEM(func);
    for (int i = 0; i < n; i++)
        world[i] = hashi_group_to_world(g, ranks[i]);
    struct MPI_ABI_Group *ng = derived_from(hashi_group_from_world_ranks(n, world), g);
    if (!ng)
        return NO_MEM(func);
    *newgroup = hashi_group_handle(ng);
    return MPI_SUCCESS;
}

/* A new group of the members of g not marked in `drop`, in group order. */
static int group_without(const char *func, struct MPI_ABI_Group *g, const unsigned char *drop, int ndrop,
                         MPI_Group *newgroup)
{
    if (ndrop == 0) { /* the same group: share the object */
        hashi_group_retain(g);
        *newgroup = hashi_group_handle(g);
        return MPI_SUCCESS;
    }
    int n = g->size - ndrop;
    int *world = malloc(n > 0 ? (size_t)n * sizeof *world : 1);
    if (!world)
        return NO_MEM(func);
    int k = 0;
    for (int r = 0; r < g->size; r++)
        if (!drop[r])
            world[k++] = hashi_group_to_world(g, r);
    struct MPI_ABI_Group *ng = derived_from(hashi_group_from_world_ranks(n, world), g);
    if (!ng)
        return NO_MEM(func);
    *newgroup = hashi_group_handle(ng);
    return MPI_SUCCESS;
}

/* ---- the MPI calls ---- */

int hashi_impl_Group_size(MPI_Group group, int *size)
{
    HASHI_CHECK_INITIALIZED("MPI_Group_size");
    struct MPI_ABI_Group *g = hashi_group_get(group);
    if (!g)
        return invalid_group("MPI_Group_size", group, "group");
    if (!size)
        return GROUP_ERR("MPI_Group_size", MPI_ERR_ARG, "size is NULL");
    *size = g->size;
    return MPI_SUCCESS;
}

int hashi_impl_Group_rank(MPI_Group group, int *rank)
{
    HASHI_CHECK_INITIALIZED("MPI_Group_rank");
    struct MPI_ABI_Group *g = hashi_group_get(group);
    if (!g)
        return invalid_group("MPI_Group_rank", group, "group");
    if (!rank)
        return GROUP_ERR("MPI_Group_rank", MPI_ERR_ARG, "rank is NULL");
    *rank = g->rank;
    return MPI_SUCCESS;
}

int hashi_impl_Group_free(MPI_Group *group)
{
    HASHI_CHECK_INITIALIZED("MPI_Group_free");
    if (!group)
        return GROUP_ERR("MPI_Group_free", MPI_ERR_ARG, "group is NULL");
    struct MPI_ABI_Group *g = hashi_group_get(*group);
    if (!g)
        return invalid_group("MPI_Group_free", *group, "*group");
    /* Freeing MPI_GROUP_EMPTY is allowed (MPI_Group_incl & co. return it). */
    hashi_group_release(g);
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}

int hashi_impl_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    static const char func[] = "MPI_Group_incl";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Group *g = hashi_group_get(group);
    int rc = check_incl_excl(func, group, g, n, ranks, newgroup);
    if (rc)
        return rc;
    unsigned char *chosen = calloc(g->size > 0 ? (size_t)g->size : 1, 1);
    if (!chosen)
        return NO_MEM(func);
    rc = check_rank_list(func, g, n, ranks, chosen);
    free(chosen);
    return rc ? rc : group_select(func, g, n, ranks, newgroup);
}

int hashi_impl_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    static const char func[] = "MPI_Group_excl";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Group *g = hashi_group_get(group);
    int rc = check_incl_excl(func, group, g, n, ranks, newgroup);
    if (rc)
        return rc;
    unsigned char *drop = calloc(g->size > 0 ? (size_t)g->size : 1, 1);
    if (!drop)
        return NO_MEM(func);
    rc = check_rank_list(func, g, n, ranks, drop);
    if (rc == MPI_SUCCESS)
        rc = group_without(func, g, drop, n, newgroup);
    free(drop);
    return rc;
}

/*
 * Expand (first, last, stride) triplets into the ranks they name, checking
 * that every rank is in the group and none is named twice (so the list is at
 * most g->size long). A stride of 0, or one that walks away from `last`, is
 * MPI_ERR_ARG. `chosen` (g->size bytes, zeroed) marks the ranks; `list`
 * (g->size ints) receives them in order, *count how many.
 */
static int expand_ranges(const char *func, const struct MPI_ABI_Group *g, int n, int ranges[][3],
                         unsigned char *chosen, int *list, int *count)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0)
            return GROUP_ERR(func, MPI_ERR_ARG, "ranges[%d] = (%d, %d, %d) has stride 0", i, first, last, stride);
        if (first < 0 || first >= g->size || last < 0 || last >= g->size)
            return GROUP_ERR(func, MPI_ERR_RANK, "ranges[%d] = (%d, %d, %d) names a rank outside the group (size %d)",
                             i, first, last, stride, g->size);
        if ((stride > 0 && first > last) || (stride < 0 && first < last))
            return GROUP_ERR(func, MPI_ERR_ARG, "ranges[%d] = (%d, %d, %d): the stride leads away from the last rank",
                             i, first, last, stride);
        /* long long: first + stride may leave int's range on the last step */
        for (long long r = first; stride > 0 ? r <= last : r >= last; r += stride) {
            if (chosen[r])
                return GROUP_ERR(func, MPI_ERR_RANK, "rank %lld is named twice (again by ranges[%d] = (%d, %d, %d))",
                                 r, i, first, last, stride);
            chosen[r] = 1;
            list[total++] = (int)r;
        }
    }
    *count = total;
    return MPI_SUCCESS;
}

/* Range incl / excl share everything up to the expanded list. */
static int group_range(const char *func, MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup, int include)
{
    struct MPI_ABI_Group *g = hashi_group_get(group);
    if (!g)
        return invalid_group(func, group, "group");
    if (!newgroup)
        return GROUP_ERR(func, MPI_ERR_ARG, "newgroup is NULL");
    if (n < 0)
        return GROUP_ERR(func, MPI_ERR_ARG, "n = %d is negative", n);
    if (n > 0 && !ranges)
        return GROUP_ERR(func, MPI_ERR_ARG, "ranges is NULL");
    size_t cap = g->size > 0 ? (size_t)g->size : 1;
    unsigned char *chosen = calloc(cap, 1);
    int *list = malloc(cap * sizeof *list);
    if (!chosen || !list) {
        free(chosen);
        free(list);
        return NO_MEM(func);
    }
    int count = 0;
    int rc = expand_ranges(func, g, n, ranges, chosen, list, &count);
    if (rc == MPI_SUCCESS)
        rc = include ? group_select(func, g, count, list, newgroup) : group_without(func, g, chosen, count, newgroup);
    free(chosen);
    free(list);
    return rc;
}

int hashi_impl_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    HASHI_CHECK_INITIALIZED("MPI_Group_range_incl");
    return group_range("MPI_Group_range_incl", group, n, ranges, newgroup, 1);
}

int hashi_impl_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    HASHI_CHECK_INITIALIZED("MPI_Group_range_excl");
    return group_range("MPI_Group_range_excl", group, n, ranges, newgroup, 0);
}

enum set_op { SET_UNION, SET_INTERSECTION, SET_DIFFERENCE };

/*
 * Union: all of g1 in order, then the members of g2 not in g1 in g2's order.
 * Intersection and difference: the members of g1 that are (are not) in g2,
 * in g1's order.
 */
static int group_set_op(const char *func, MPI_Group group1, MPI_Group group2, MPI_Group *newgroup, enum set_op op)
{
    struct MPI_ABI_Group *g1 = hashi_group_get(group1), *g2 = hashi_group_get(group2);
    if (!g1 || !g2)
        return invalid_group(func, !g1 ? group1 : group2, !g1 ? "group1" : "group2");
    if (!newgroup)
        return GROUP_ERR(func, MPI_ERR_ARG, "newgroup is NULL");
    size_t cap = (size_t)g1->size + (op == SET_UNION ? (size_t)g2->size : 0);
    int *world = malloc(cap > 0 ? cap * sizeof *world : 1);
    struct hashi_group_index idx;
    /* Union looks members of g2 up in g1; the others look g1's up in g2. */
    if (!world || hashi_group_index_build(&idx, op == SET_UNION ? g1 : g2) != 0) {
        free(world);
        return NO_MEM(func);
    }
    int n = 0;
    if (op == SET_UNION) {
        for (int i = 0; i < g1->size; i++)
            world[n++] = hashi_group_to_world(g1, i);
        for (int i = 0; i < g2->size; i++) {
            int w = hashi_group_to_world(g2, i);
            if (hashi_group_index_lookup(&idx, w) == MPI_UNDEFINED)
                world[n++] = w;
        }
    } else {
        int want_in_g2 = op == SET_INTERSECTION;
        for (int i = 0; i < g1->size; i++) {
            int w = hashi_group_to_world(g1, i);
            if ((hashi_group_index_lookup(&idx, w) != MPI_UNDEFINED) == want_in_g2)
                world[n++] = w;
        }
    }
    hashi_group_index_free(&idx);
    struct MPI_ABI_Group *ng = derived_from(hashi_group_from_world_ranks(n, world), g1);
    if (!ng)
        return NO_MEM(func);
    *newgroup = hashi_group_handle(ng);
    return MPI_SUCCESS;
}

int hashi_impl_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    HASHI_CHECK_INITIALIZED("MPI_Group_union");
    return group_set_op("MPI_Group_union", group1, group2, newgroup, SET_UNION);
}

int hashi_impl_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    HASHI_CHECK_INITIALIZED("MPI_Group_intersection");
    return group_set_op("MPI_Group_intersection", group1, group2, newgroup, SET_INTERSECTION);
}

int hashi_impl_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    HASHI_CHECK_INITIALIZED("MPI_Group_difference");
    return group_set_op("MPI_Group_difference", group1, group2, newgroup, SET_DIFFERENCE);
}

int hashi_impl_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[])
{
    static const char func[] = "MPI_Group_translate_ranks";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Group *g1 = hashi_group_get(group1), *g2 = hashi_group_get(group2);
    if (!g1 || !g2)
        return invalid_group(func, !g1 ? group1 : group2, !g1 ? "group1" : "group2");
    if (n < 0)
        return GROUP_ERR(func, MPI_ERR_ARG, "n = %d is negative", n);
    if (n > 0 && (!ranks1 || !ranks2))
        return GROUP_ERR(func, MPI_ERR_ARG, "%s is NULL", !ranks1 ? "ranks1" : "ranks2");
    /* Check everything before writing anything: ranks1 and ranks2 may alias. */
    for (int i = 0; i < n; i++)
        if (ranks1[i] != MPI_PROC_NULL && (ranks1[i] < 0 || ranks1[i] >= g1->size))
            return GROUP_ERR(func, MPI_ERR_RANK, "ranks1[%d] = %d is not a rank of group1 (size %d)", i, ranks1[i],
                             g1->size);
    struct hashi_group_index idx;
    if (hashi_group_index_build(&idx, g2) != 0)
        return NO_MEM(func);
    for (int i = 0; i < n; i++) {
        int r = ranks1[i];
        ranks2[i] = r == MPI_PROC_NULL ? MPI_PROC_NULL
                                       : hashi_group_index_lookup(&idx, hashi_group_to_world(g1, r));
    }
    hashi_group_index_free(&idx);
    return MPI_SUCCESS;
}

int hashi_impl_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    static const char func[] = "MPI_Group_compare";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Group *g1 = hashi_group_get(group1), *g2 = hashi_group_get(group2);
    if (!g1 || !g2)
        return invalid_group(func, !g1 ? group1 : group2, !g1 ? "group1" : "group2");
    if (!result)
        return GROUP_ERR(func, MPI_ERR_ARG, "result is NULL");
    int cmp = hashi_group_compare(g1, g2);
    if (cmp < 0)
        return NO_MEM(func);
    *result = cmp;
    return MPI_SUCCESS;
}
