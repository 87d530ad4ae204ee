/*
 * Communicators: MPI_COMM_WORLD and MPI_COMM_SELF, creation (dup, split,
 * create) with context ids agreed over the parent, freeing by reference
 * count, comparison, names, the predefined attributes and the generic
 * barrier. Design and measurements: docs/communicators.md.
 */
#include "mpi/comm.h"
#include "mpi/p2p.h"
#include "runtime/rt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

/* ---- context ids ---- */

/*
 * The pool of context id pairs of this process: bit p of free_pairs set means
 * ids 2p (user point-to-point) and 2p+1 (internal) are not used by any
 * communicator this process belongs to. 16-bit ids give 32768 pairs, a 4 KiB
 * map. Agreements look at it one window of 2048 pairs (256 bytes) at a time,
 * so the usual creation moves 256 bytes per step, not 4 KiB.
 */
#define CONTEXT_PAIRS (1u << (HASHI_CONTEXT_ID_BITS - 1))
#define CONTEXT_MASK_WORDS (CONTEXT_PAIRS / 32)
#define CONTEXT_WINDOW_WORDS 64u
static struct {
    mtx_t lock;  /* the map is per process; threads creating communicators share it */
    uint32_t free_pairs[CONTEXT_MASK_WORDS];
} context_pool;

static void context_pool_init(void)
{
    mtx_init(&context_pool.lock, mtx_plain);
    memset(context_pool.free_pairs, 0xff, sizeof context_pool.free_pairs);
    /* MPI_COMM_WORLD (0/1) and MPI_COMM_SELF (2/3) */
    context_pool.free_pairs[0] &= ~((UINT32_C(1) << (HASHI_CONTEXT_WORLD / 2)) | (UINT32_C(1) << (HASHI_CONTEXT_SELF / 2)));
}

/* Copy `words` words of the map from word `first` on. */
static void context_pool_snapshot(uint32_t *mask, uint32_t first, uint32_t words)
{
    mtx_lock(&context_pool.lock);
    memcpy(mask, context_pool.free_pairs + first, words * sizeof *mask);
    mtx_unlock(&context_pool.lock);
}

/* Take pair p; 0, or -1 if it was not free here (an agreement bug). */
static int context_pool_take(uint32_t pair)
{
    uint32_t bit = UINT32_C(1) << (pair % 32);
    int rc = -1;
    mtx_lock(&context_pool.lock);
    if (context_pool.free_pairs[pair / 32] & bit) {
        context_pool.free_pairs[pair / 32] &= ~bit;
        rc = 0;
    }
    mtx_unlock(&context_pool.lock);
    return rc;
}

static void context_pool_put(uint32_t context_id)
{
    uint32_t pair = context_id / 2;
    mtx_lock(&context_pool.lock);
    context_pool.free_pairs[pair / 32] |= UINT32_C(1) << (pair % 32);
    mtx_unlock(&context_pool.lock);
}

/* ---- point-to-point on the internal context ---- */

/*
 * Send to dest and receive from source at once (both may be the same peer).
 * The send is posted first: if posting the receive fails there is only a send
 * to finish, which never waits for a receiver that will not come.
 */
static int exchange(struct MPI_ABI_Comm *c, int tag, const void *sbuf, size_t sbytes, int dest, void *rbuf,
                    size_t rbytes, int source)
{
    uint32_t context = hashi_comm_coll_context(c);
    struct MPI_ABI_Request *reqs[2];
    int rc = hashi_isend_internal(sbuf, (MPI_Count)sbytes, MPI_BYTE, dest, tag, c, context, &reqs[0]);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = hashi_irecv_internal(rbuf, (MPI_Count)rbytes, MPI_BYTE, source, tag, c, context, &reqs[1]);
    if (rc != MPI_SUCCESS) {
        (void)hashi_wait_internal(reqs[0], MPI_STATUS_IGNORE);
        return rc;
    }
    return hashi_waitall_internal(2, reqs);
}

static int send_internal(struct MPI_ABI_Comm *c, int tag, const void *buf, size_t bytes, int dest)
{
    struct MPI_ABI_Request *req;
    int rc = hashi_isend_internal(buf, (MPI_Count)bytes, MPI_BYTE, dest, tag, c, hashi_comm_coll_context(c), &req);
    return rc != MPI_SUCCESS ? rc : hashi_wait_internal(req, MPI_STATUS_IGNORE);
}

static int recv_internal(struct MPI_ABI_Comm *c, int tag, void *buf, size_t bytes, int source)
{
    struct MPI_ABI_Request *req;
    int rc = hashi_irecv_internal(buf, (MPI_Count)bytes, MPI_BYTE, source, tag, c, hashi_comm_coll_context(c), &req);
    return rc != MPI_SUCCESS ? rc : hashi_wait_internal(req, MPI_STATUS_IGNORE);
}

/*
 * Bitwise AND of `words` words over every member of c, result everywhere
 * (recursive doubling: log2(n) exchanges of the whole buffer). For a size n
 * that is not a power of two, the first 2*(n - p) ranks (p the largest power
 * of two <= n) pair up: the even one of each pair hands its data to the odd
 * one and gets the result back at the end, so p ranks do the doubling.
 * `scratch` holds one incoming buffer.
 */
static int allreduce_band(struct MPI_ABI_Comm *c, int tag, uint32_t *buf, uint32_t *scratch, size_t words)
{
    int n = c->size, rank = c->rank, rc = MPI_SUCCESS;
    size_t bytes = words * sizeof *buf;
    if (n == 1)
        return MPI_SUCCESS;
    int pof2 = 1;
    while (pof2 * 2 <= n)
        pof2 *= 2;
    int extra = n - pof2;
    int vrank; /* rank among the p ranks doing the doubling, or -1 */
    if (rank < 2 * extra) {
        if (rank % 2 == 0) {
            if ((rc = send_internal(c, tag, buf, bytes, rank + 1)) != MPI_SUCCESS)
                return rc;
            vrank = -1;
        } else {
            if ((rc = recv_internal(c, tag, scratch, bytes, rank - 1)) != MPI_SUCCESS)
                return rc;
            for (size_t i = 0; i < words; i++)
                buf[i] &= scratch[i];
            vrank = rank / 2;
        }
    } else {
        vrank = rank - extra;
    }
    if (vrank >= 0) {
        for (int mask = 1; mask < pof2; mask <<= 1) {
            int vpeer = vrank ^ mask;
            int peer = vpeer < extra ? 2 * vpeer + 1 : vpeer + extra;
            if ((rc = exchange(c, tag, buf, bytes, peer, scratch, bytes, peer)) != MPI_SUCCESS)
                return rc;
            for (size_t i = 0; i < words; i++)
                buf[i] &= scratch[i];
        }
    }
    if (rank < 2 * extra)
        rc = rank % 2 == 0 ? recv_internal(c, tag, buf, bytes, rank + 1) : send_internal(c, tag, buf, bytes, rank - 1);
    return rc;
}

/*
 * Allgather of `block` bytes from every member (Bruck: ceil(log2 n) steps
 * for any n). In step k each rank holds the blocks of ranks rank..rank+2^k-1,
 * sends them to rank - 2^k and appends those of rank + 2^k .. ; at the end
 * out[j] is the block of rank (rank + j) % n, which the caller rotates.
 * `out` holds n blocks, the first one already filled with this rank's.
 */
static int allgather_bruck(struct MPI_ABI_Comm *c, int tag, void *out, size_t block)
{
    int n = c->size, rank = c->rank;
    unsigned char *blocks = out;
    for (int dist = 1; dist < n; dist *= 2) {
        int count = dist < n - dist ? dist : n - dist;
        int rc = exchange(c, tag, blocks, (size_t)count * block, (rank - dist + n) % n,
                          blocks + (size_t)dist * block, (size_t)count * block, (rank + dist) % n);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/*
 * Agree on a context id for a communicator being made from `parent`: every
 * member of the parent contributes its map of free pairs, the AND over the
 * parent gives the pairs free in all of them, and the lowest wins (the same
 * answer everywhere). The maps go one window at a time, lowest first; all
 * members see the same AND, so they move to the next window together, and
 * the answer is the same as with the whole map. Only the members of the new
 * communicator (`join`) take the pair from their pool; the others just
 * helped decide. Because the id is free in every member of the parent, it
 * differs from the id of every communicator any of them is already in,
 * whatever its parent was.
 */
static int agree_context_id(const char *func, struct MPI_ABI_Comm *parent, int join, uint32_t *context_id)
{
    uint32_t mask[CONTEXT_WINDOW_WORDS], scratch[CONTEXT_WINDOW_WORDS];
    uint32_t pair = CONTEXT_PAIRS;
    for (uint32_t first = 0; first < CONTEXT_MASK_WORDS && pair == CONTEXT_PAIRS; first += CONTEXT_WINDOW_WORDS) {
        context_pool_snapshot(mask, first, CONTEXT_WINDOW_WORDS);
        int rc = allreduce_band(parent, HASHI_TAG_CONTEXT_ID, mask, scratch, CONTEXT_WINDOW_WORDS);
        if (rc != MPI_SUCCESS)
            return hashi_err_comm(func, parent, rc, "agreeing on a context id with the other members failed");
        for (uint32_t w = 0; w < CONTEXT_WINDOW_WORDS; w++) {
            if (mask[w]) {
                pair = (first + w) * 32 + (uint32_t)__builtin_ctz(mask[w]);
                break;
            }
        }
    }
    if (pair == CONTEXT_PAIRS)
        return hashi_err_comm(func, parent, MPI_ERR_OTHER,
                              "all %u communicator context ids are in use by some member of the communicator "
                              "(free communicators that are no longer needed)", CONTEXT_PAIRS);
    if (join && context_pool_take(pair) != 0)
        return hashi_err_comm(func, parent, MPI_ERR_INTERN, "agreed context id %u is not free in this process",
                              2 * pair);
    *context_id = 2 * pair;
    return MPI_SUCCESS;
}

/* ---- communicator objects ---- */

static int comm_is_static(const struct MPI_ABI_Comm *c)
{
    return c == &hashi_comm_world || c == &hashi_comm_self;
}

void hashi_comm_retain(struct MPI_ABI_Comm *c)
{
    if (!comm_is_static(c))
        atomic_fetch_add_explicit(&c->refcount, 1, memory_order_relaxed);
}

void hashi_comm_release(struct MPI_ABI_Comm *c)
{
    if (!c || comm_is_static(c))
        return;
    if (atomic_fetch_sub_explicit(&c->refcount, 1, memory_order_acq_rel) != 1)
        return;
    /* The last pending operation is done: nothing can match this context any more. */
    hashi_p2p_comm_destroyed(c);
    context_pool_put(c->context_id);
    hashi_group_release(c->group);
    hashi_errhandler_release(c->errhandler);
    c->magic = 0; /* a stale handle used later fails the magic check (most of the time) */
    free(c);
}

/* A communicator over `group` (retained) with a context id taken from the pool,
 * inheriting the parent's error handler (MPI: new communicators do). */
static struct MPI_ABI_Comm *comm_new(struct MPI_ABI_Group *group, uint32_t context_id,
                                     struct MPI_ABI_Errhandler *errhandler)
{
    struct MPI_ABI_Comm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->magic = HASHI_COMM_MAGIC;
    c->rank = group->rank;
    c->size = group->size;
    c->context_id = context_id;
    hashi_group_retain(group);
    c->group = group;
    c->world_ranks = group->world_ranks;
    if (errhandler)
        hashi_errhandler_retain(errhandler);
    c->errhandler = errhandler;
    atomic_init(&c->refcount, 1);
    /* Not inherited: the name (MPI), topology and cached attributes (their
     * layers copy what the standard says when they arrive). */
    return c;
}

/* Finish creating: the object, or MPI_ERR_NO_MEM with the context id returned. */
static int comm_finish(const char *func, struct MPI_ABI_Comm *parent, struct MPI_ABI_Group *group,
                       uint32_t context_id, MPI_Comm *newcomm)
{
    struct MPI_ABI_Comm *c = comm_new(group, context_id, parent->errhandler);
    if (!c) {
        context_pool_put(context_id);
        return hashi_err_comm(func, parent, MPI_ERR_NO_MEM, "out of memory");
    }
    *newcomm = c;
    return MPI_SUCCESS;
}

/* The error for a communicator argument that is not one. */
static int invalid_comm(const char *func, MPI_Comm h, const char *argname)
{
    return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_COMM,
                           h == MPI_COMM_NULL ? "%s is MPI_COMM_NULL" : "%s is not a valid communicator", argname);
}

/* ---- set-up and tear-down ---- */

static int attr_universe_size, attr_appnum;  /* MPI_UNIVERSE_SIZE, MPI_APPNUM: fixed at MPI_Init */

void hashi_comms_init(void)
{
    hashi_groups_init();
    context_pool_init();

    hashi_comm_world.context_id = HASHI_CONTEXT_WORLD;
    hashi_comm_world.group = &hashi_group_world;
    hashi_comm_world.world_ranks = NULL;
    hashi_comm_world.rank = hashi_group_world.rank;
    hashi_comm_world.size = hashi_group_world.size;

    hashi_comm_self.context_id = HASHI_CONTEXT_SELF;
    hashi_comm_self.group = &hashi_group_self;
    hashi_comm_self.world_ranks = hashi_group_self.world_ranks;
    hashi_comm_self.rank = 0;
    hashi_comm_self.size = 1;

    attr_universe_size = hashi_job.universe_size;
    attr_appnum = hashi_job.appnum;
}

void hashi_comms_finalize(void)
{
    /* Communicators the application did not free are its leak; their memory
     * goes with the process. The predefined ones drop their handlers (a user
     * handler set on them is released). */
    struct MPI_ABI_Comm *predefined[] = { &hashi_comm_self, &hashi_comm_world };
    for (size_t i = 0; i < sizeof predefined / sizeof *predefined; i++) {
        hashi_errhandler_release(predefined[i]->errhandler);
        predefined[i]->errhandler = NULL;
    }
    mtx_destroy(&context_pool.lock);
}

/* ---- creation ---- */

int hashi_impl_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Comm_dup";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *parent = hashi_comm_get(comm);
    if (!parent)
        return invalid_comm(func, comm, "comm");
    if (!newcomm)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newcomm is NULL");
    *newcomm = MPI_COMM_NULL;
    uint32_t context_id;
    int rc = agree_context_id(func, parent, 1, &context_id);
    if (rc != MPI_SUCCESS)
        return rc;
    /* The same members in the same order: the group object is shared. */
    return comm_finish(func, parent, parent->group, context_id, newcomm);
}

/* One member's contribution to MPI_Comm_split. */
struct split_entry {
    int color, key;
};
/* A member of the new communicator: ordered by key, then by rank in the parent. */
struct split_member {
    int key, parent_rank;
};

static int split_member_order(const void *a, const void *b)
{
    const struct split_member *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->parent_rank > y->parent_rank) - (x->parent_rank < y->parent_rank);
}

int hashi_impl_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Comm_split";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *parent = hashi_comm_get(comm);
    if (!parent)
        return invalid_comm(func, comm, "comm");
    if (!newcomm)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newcomm is NULL");
    if (color < 0 && color != MPI_UNDEFINED)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "color %d is negative (and not MPI_UNDEFINED)", color);
    *newcomm = MPI_COMM_NULL;

    int n = parent->size;
    struct split_entry *entries = malloc((size_t)n * sizeof *entries);
    struct split_member *members = malloc((size_t)n * sizeof *members);
    if (!entries || !members) {
        free(entries);
        free(members);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    entries[0] = (struct split_entry){ color, key };
    int rc = allgather_bruck(parent, HASHI_TAG_SPLIT, entries, sizeof *entries);
    if (rc != MPI_SUCCESS) {
        free(entries);
        free(members);
        return hashi_err_comm(func, comm, rc, "exchanging colors and keys with the other members failed");
    }
    /* entries[j] came from parent rank (rank + j) % n */
    int count = 0;
    if (color != MPI_UNDEFINED) {
        for (int j = 0; j < n; j++) {
            if (entries[j].color == color)
                members[count++] = (struct split_member){ entries[j].key, (parent->rank + j) % n };
        }
        qsort(members, (size_t)count, sizeof *members, split_member_order);
    }
    free(entries);

    /* Every member of the parent takes part, MPI_UNDEFINED ones included. */
    uint32_t context_id;
    rc = agree_context_id(func, parent, color != MPI_UNDEFINED, &context_id);
    if (rc != MPI_SUCCESS || color == MPI_UNDEFINED) {
        free(members);
        return rc;
    }
    int *world = malloc((size_t)count * sizeof *world);
    if (!world) {
        free(members);
        context_pool_put(context_id);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    for (int i = 0; i < count; i++)
        world[i] = hashi_comm_to_world(parent, members[i].parent_rank);
    free(members);
    struct MPI_ABI_Group *group = hashi_group_from_world_ranks(count, world);
    if (!group) {
        context_pool_put(context_id);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    rc = comm_finish(func, parent, group, context_id, newcomm);
    hashi_group_release(group); /* the communicator holds its own reference */
    return rc;
}

int hashi_impl_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Comm_create";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *parent = hashi_comm_get(comm);
    if (!parent)
        return invalid_comm(func, comm, "comm");
    struct MPI_ABI_Group *g = hashi_group_get(group);
    if (!g)
        return hashi_err_comm(func, comm, MPI_ERR_GROUP,
                              group == MPI_GROUP_NULL ? "group is MPI_GROUP_NULL" : "group is not a valid group");
    if (!newcomm)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newcomm is NULL");
    *newcomm = MPI_COMM_NULL;

    /* Each process may pass its own group (MPI-2.2: disjoint subgroups in one
     * call); each must be a subset of the communicator's. */
    struct hashi_group_index parent_members;
    if (hashi_group_index_build(&parent_members, parent->group) != 0)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    int outsider = -1;
    for (int i = 0; i < g->size && outsider < 0; i++)
        if (hashi_group_index_lookup(&parent_members, hashi_group_to_world(g, i)) == MPI_UNDEFINED)
            outsider = i;
    hashi_group_index_free(&parent_members);
    if (outsider >= 0)
        return hashi_err_comm(func, comm, MPI_ERR_GROUP,
                              "rank %d of the group (MPI_COMM_WORLD rank %d) is not a member of the communicator",
                              outsider, hashi_group_to_world(g, outsider));

    int member = g->rank != MPI_UNDEFINED;
    uint32_t context_id;
    int rc = agree_context_id(func, parent, member, &context_id);
    if (rc != MPI_SUCCESS || !member)
        return rc;
    return comm_finish(func, parent, g, context_id, newcomm);
}

int hashi_impl_Comm_free(MPI_Comm *comm)
{
    static const char func[] = "MPI_Comm_free";
    HASHI_CHECK_INITIALIZED(func);
    if (!comm)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "comm is NULL");
    struct MPI_ABI_Comm *c = hashi_comm_get(*comm);
    if (!c)
        return invalid_comm(func, *comm, "*comm");
    if (comm_is_static(c))
        return hashi_err_comm(func, *comm, MPI_ERR_COMM, "%s cannot be freed",
                              c == &hashi_comm_world ? "MPI_COMM_WORLD" : "MPI_COMM_SELF");
    /* Pending operations keep their own references: they complete normally,
     * and the context id returns to the pool only after the last of them. */
    *comm = MPI_COMM_NULL;
    hashi_comm_release(c);
    return MPI_SUCCESS;
}

/* ---- inquiry ---- */

int hashi_impl_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    static const char func[] = "MPI_Comm_group";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return invalid_comm(func, comm, "comm");
    if (!group)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "group is NULL");
    hashi_group_retain(c->group);
    *group = hashi_group_handle(c->group);
    return MPI_SUCCESS;
}

int hashi_impl_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    static const char func[] = "MPI_Comm_compare";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c1 = hashi_comm_get(comm1), *c2 = hashi_comm_get(comm2);
    if (!c1 || !c2)
        return invalid_comm(func, !c1 ? comm1 : comm2, !c1 ? "comm1" : "comm2");
    if (!result)
        return hashi_err_comm(func, comm1, MPI_ERR_ARG, "result is NULL");
    if (c1 == c2) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    int cmp = hashi_group_compare(c1->group, c2->group);
    if (cmp < 0)
        return hashi_err_comm(func, comm1, MPI_ERR_NO_MEM, "out of memory");
    /* Different communicators (contexts): the same group in order is congruent. */
    *result = cmp == MPI_IDENT ? MPI_CONGRUENT : cmp;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_test_inter(MPI_Comm comm, int *flag)
{
    static const char func[] = "MPI_Comm_test_inter";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return invalid_comm(func, comm, "comm");
    if (!flag)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "flag is NULL");
    *flag = 0; /* intercommunicators do not exist yet */
    return MPI_SUCCESS;
}

int hashi_impl_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    static const char func[] = "MPI_Comm_set_name";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return invalid_comm(func, comm, "comm");
    if (!comm_name)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "comm_name is NULL");
    /* Longer names are truncated to MPI_MAX_OBJECT_NAME - 1 characters. */
    snprintf(c->name, sizeof c->name, "%s", comm_name);
    return MPI_SUCCESS;
}

int hashi_impl_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
    static const char func[] = "MPI_Comm_get_name";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return invalid_comm(func, comm, "comm");
    if (!comm_name || !resultlen)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", !comm_name ? "comm_name" : "resultlen");
    size_t len = strnlen(c->name, sizeof c->name - 1);
    memcpy(comm_name, c->name, len);
    comm_name[len] = '\0';
    *resultlen = (int)len;
    return MPI_SUCCESS;
}

/* ---- predefined attributes ---- */

/* What the attribute values point to: MPI hands out addresses of ints. */
static int attr_tag_ub;                         /* the device's limit, known after MPI_Init */
static const int attr_host = MPI_PROC_NULL;     /* no host process */
static const int attr_io = MPI_ANY_SOURCE;      /* every rank can do I/O */
static const int attr_wtime_is_global = 0;      /* clocks are per node */
static _Atomic int attr_last_used_code;

static int comm_get_attr(const char *func, MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return invalid_comm(func, comm, "comm");
    if (!attribute_val || !flag)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", !attribute_val ? "attribute_val" : "flag");
    const int *value = NULL;
    switch (keyval) {
    case MPI_TAG_UB:
        attr_tag_ub = hashi_p2p_tag_ub();
        value = &attr_tag_ub;
        break;
    case MPI_HOST:
        value = &attr_host;
        break;
    case MPI_IO:
        value = &attr_io;
        break;
    case MPI_WTIME_IS_GLOBAL:
        value = &attr_wtime_is_global;
        break;
    case MPI_UNIVERSE_SIZE:
        value = attr_universe_size > 0 ? &attr_universe_size : NULL;
        break;
    case MPI_APPNUM:
        value = attr_appnum >= 0 ? &attr_appnum : NULL;
        break;
    case MPI_LASTUSEDCODE:
        atomic_store(&attr_last_used_code, hashi_err_last_used_code());
        value = (const int *)&attr_last_used_code;
        break;
    default:
        /* User keyvals (MPI_Comm_create_keyval) will be looked up in c->attributes. */
        return hashi_err_comm(func, comm, MPI_ERR_KEYVAL, "keyval %d is not a valid attribute key", keyval);
    }
    *flag = value != NULL;
    if (value)
        *(const int **)attribute_val = value;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_get_attr");
    return comm_get_attr("MPI_Comm_get_attr", comm, comm_keyval, attribute_val, flag);
}

int hashi_impl_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Attr_get");
    return comm_get_attr("MPI_Attr_get", comm, keyval, attribute_val, flag);
}

/* ---- barrier ---- */

/*
 * Dissemination barrier: in round k every rank signals rank + 2^k and waits
 * for rank - 2^k, so after ceil(log2 n) rounds each rank has heard, directly
 * or through others, from every rank's entry. Zero-byte messages on the
 * internal context; one tag suffices, because within a barrier the distances
 * 2^k < n are all different (each round has its own peer) and successive
 * barriers between the same pair are kept apart by message order.
 */
int hashi_comm_barrier(struct MPI_ABI_Comm *c)
{
    int n = c->size, rank = c->rank;
    char token = 0, sink;
    for (int dist = 1; dist < n; dist *= 2) {
        int rc = exchange(c, HASHI_TAG_BARRIER, &token, 0, (rank + dist) % n, &sink, 0, (rank - dist + n) % n);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int hashi_impl_Barrier(MPI_Comm comm)
{
    static const char func[] = "MPI_Barrier";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return invalid_comm(func, comm, "comm");
    int rc = hashi_comm_barrier(c);
    return rc == MPI_SUCCESS ? rc : hashi_err_comm(func, comm, rc, "exchanging with the other members failed");
}
