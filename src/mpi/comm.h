/*
 * Communicators and groups inside the library: the reference counts that let
 * pending operations outlive MPI_Comm_free, the group helpers communicator
 * creation is built on, and the tags the communicator layer reserves on a
 * communicator's internal context (docs/communicators.md).
 */
#ifndef HASHI_MPI_COMM_H
#define HASHI_MPI_COMM_H

#include "mpi/mpi_impl.h"

/*
 * Tags on the internal context (hashi_comm_coll_context()). User tags never
 * reach that context, so its whole tag space belongs to the library; the
 * communicator layer owns HASHI_TAG_COMM_FIRST .. HASHI_TAG_COMM_LAST, the
 * top of the 23-bit tag space every device carries (p2p.h lists the point-
 * to-point layer's tags and the range collectives keep to).
 */
#define HASHI_TAG_COMM_FIRST   0x7fff00
#define HASHI_TAG_BARRIER      (HASHI_TAG_COMM_FIRST + 0)  /* MPI_Barrier (dissemination) */
#define HASHI_TAG_SPLIT        (HASHI_TAG_COMM_FIRST + 2)  /* MPI_Comm_split: (color, key) allgather */
#define HASHI_TAG_DIST_GRAPH   (HASHI_TAG_COMM_FIRST + 3)  /* MPI_Dist_graph_create: edge exchange */
#define HASHI_TAG_SPLIT_TYPE   (HASHI_TAG_COMM_FIRST + 4)  /* MPI_Comm_split_type: hardware colours */
#define HASHI_TAG_INTER        (HASHI_TAG_COMM_FIRST + 5)  /* intercommunicator leaders (intercomm.c) */
/* Context id agreements take a tag of the parent's collective sequence
 * (hashi_coll_next_tag), so several can be in flight on one parent. */
#define HASHI_TAG_COMM_LAST    0x7fffff

/* Context ids are 16 bits (the ofi device's match bits) and come in pairs. */
#define HASHI_CONTEXT_ID_BITS 16
#define HASHI_CONTEXT_WORLD 0u
#define HASHI_CONTEXT_SELF  2u
/* Reserved in every process for partitioned point-to-point (p2p/partitioned.c):
 * 4 carries partition data, 5 the set-up messages, addressed by world rank. */
#define HASHI_CONTEXT_PARTITIONED 4u
/* Reserved in every process for MPI_Comm_create_from_group, which has no
 * parent communicator: its members agree on a new pair over this one. */
#define HASHI_CONTEXT_SESSIONS 6u
/* In a job spanning several nodes every communicator takes an aligned block
 * of pairs: its own, then its node-local and its node leaders'
 * sub-communicators' (coll/hier.c), which are then known to every member
 * without another agreement, so even a nonblocking collective can set them up
 * (MPICH's subcomm context bits do the same). WORLD's block is the first
 * (with SELF, partitioned and sessions); its sub-communicators take the second. */
#define HASHI_CONTEXT_BLOCK_PAIRS 4u
#define HASHI_CONTEXT_WORLD_SUB (2u * HASHI_CONTEXT_BLOCK_PAIRS)

/* ---- context ids (contextid.c) ---- */

/* several_nodes: the job spans several nodes (blocks of pairs, above). */
void hashi_context_pool_init(int several_nodes);
void hashi_context_pool_finalize(void);
/* Return a communicator's pair to the pool (when the object goes). */
void hashi_context_put(uint32_t context_id);
/* How many communicators' ids exist (for messages). */
unsigned hashi_context_ids(void);

/* Called once when an agreement ends: rc MPI_SUCCESS with the context id
 * (taken from this process's pool when joining), or an error class;
 * `exhausted` when every pair is in use by some member. */
typedef void hashi_context_done_fn(void *arg, int rc, int exhausted, uint32_t context_id);

/*
 * Agree with every member of `parent` (all must call, in the same order as
 * their other collectives on it) on a context id pair free in all of them;
 * members of the new communicator (`join`) take it. Messages go on the
 * parent's internal context with `tag`, or with the next tag of its
 * collective sequence when tag < 0. Runs in the progress engine: done() is
 * called from progress (or from here, when no message is needed). Returns
 * MPI_SUCCESS or an error class (then done() is never called).
 */
int hashi_context_agree_start(struct MPI_ABI_Comm *parent, int join, int tag, hashi_context_done_fn *done,
                              void *arg);
/* The blocking form: start and wait. */
int hashi_context_agree(struct MPI_ABI_Comm *parent, int join, int tag, uint32_t *context_id, int *exhausted);

/*
 * Two groups that are agreeing on an intercommunicator's id talk through
 * their leaders: `comm` (a communicator both leaders belong to, or one that
 * addresses the other group) with `peer` the remote leader's rank in it,
 * messages on `context` with `tag`.
 */
struct hashi_leader_link {
    struct MPI_ABI_Comm *comm;
    uint32_t context;
    int peer, tag;
};
/* The leader's side: send `bytes` and receive as many from the other leader. */
int hashi_leader_exchange(const struct hashi_leader_link *link, const void *sbuf, void *rbuf, size_t bytes);
/*
 * A context id pair free in every member of two disjoint groups (blocking):
 * each group ANDs its offers over its intracommunicator `local` to its
 * leader (rank `leader`), the leaders swap theirs over `link` (only read at
 * the leader), the leader broadcasts the result; the same windows,
 * reservations and retries as hashi_context_agree. Members with `join`
 * take the pair (split: every piece the same, they are disjoint).
 */
int hashi_context_agree_inter(struct MPI_ABI_Comm *local, int leader, const struct hashi_leader_link *link,
                              int join, uint32_t *context_id, int *exhausted);

/* ---- communicators ---- */

/* A communicator object over `group` (retained) with context_id, inheriting
 * the parent's error handler and session (parent NULL: neither). */
struct MPI_ABI_Comm *hashi_comm_new(struct MPI_ABI_Group *group, uint32_t context_id,
                                    const struct MPI_ABI_Comm *parent);
/* 1 for an intercommunicator. */
static inline int hashi_comm_is_inter(const struct MPI_ABI_Comm *c)
{
    return c->remote_group != NULL;
}

/* Sub-communicator `which` (0: node-local, 1: node leaders) of parent: its
 * context id, taken from the parent's block (UINT32_MAX: the parent has
 * none, e.g. a job on one node); and a communicator over `group` (retained;
 * the members of the parent that belong) on it, which owns no context id
 * (NULL: none, or out of memory). Every member finds the same id alone. */
uint32_t hashi_comm_sub_context(const struct MPI_ABI_Comm *parent, int which);
struct MPI_ABI_Comm *hashi_comm_new_sub(struct MPI_ABI_Comm *parent, int which, struct MPI_ABI_Group *group);

/* Pending operations hold a reference (requests retain their communicator),
 * so MPI_Comm_free only drops the user's one; the last release frees the
 * object and returns its context id to the pool. */
/* Inline: every request takes and drops one. WORLD and SELF are never freed. */
static inline int hashi_comm_is_static(const struct MPI_ABI_Comm *c)
{
    return c == &hashi_comm_world || c == &hashi_comm_self;
}
static inline void hashi_comm_retain(struct MPI_ABI_Comm *c)
{
    if (!hashi_comm_is_static(c))
        hashi_ref_inc(&c->refcount);
}
/* The last reference went: free the object, return its context id. */
void hashi_comm_destroy(struct MPI_ABI_Comm *c);
static inline void hashi_comm_release(struct MPI_ABI_Comm *c)
{
    if (c && !hashi_comm_is_static(c) && hashi_ref_dec(&c->refcount))
        hashi_comm_destroy(c);
}

/* The public handle of a communicator object. */
static inline MPI_Comm hashi_comm_handle(struct MPI_ABI_Comm *c)
{
    return c == &hashi_comm_world ? MPI_COMM_WORLD : c == &hashi_comm_self ? MPI_COMM_SELF : (MPI_Comm)c;
}

/* The error for a communicator argument (named argname) that is not one:
 * MPI_ERR_COMM, raised with no object's handler. */
int hashi_err_invalid_comm(const char *func, MPI_Comm h, const char *argname);
/* The object behind the communicator argument `comm` of func, or NULL with
 * the error raised in *rc (hashi_err_invalid_comm: MPI_ERR_COMM, on
 * MPI_COMM_SELF's handler, as an invalid handle has none of its own). */
struct MPI_ABI_Comm *hashi_comm_arg(const char *func, MPI_Comm comm, int *rc);

/* For the topology calls: a new communicator over `group` (NULL: the
 * parent's), made collectively over the parent; non-members (`member` 0)
 * get NULL in *out. Inherits the parent's error handler, nothing else.
 * MPI_SUCCESS or an error already raised on the parent. */
int hashi_comm_create_from(const char *func, struct MPI_ABI_Comm *parent, int member, struct MPI_ABI_Group *group,
                           struct MPI_ABI_Comm **out);
/* MPI_Comm_split without argument checks; the error is raised on the parent. */
int hashi_comm_split(const char *func, struct MPI_ABI_Comm *parent, int color, int key, struct MPI_ABI_Comm **out);

/* Allgather of `block` bytes from every member of c into out (rank order;
 * out[c->rank] already filled), on c's internal context with `tag`. */
int hashi_comm_allgather_in_order(struct MPI_ABI_Comm *c, int tag, void *out, size_t block);
/* A context id agreed among the members of g only (every caller a member)
 * on the pair `on` with `tag` (MPI_Comm_create_from_group's). */
int hashi_comm_agree_among(struct MPI_ABI_Group *g, uint32_t on, int tag, uint32_t *context_id, int *exhausted);
/* The tag of a string tag (FNV-1a within MPI_TAG_UB). */
int hashi_comm_string_tag(const char *stringtag);
/* The arguments MPI_Comm_create_from_group and MPI_Intercomm_create_from_groups
 * share: the string tag, the hints and the error handler (raised on no
 * object when wrong). */
struct MPI_ABI_Errhandler;
struct MPI_ABI_Info;
int hashi_comm_from_group_args(const char *func, const char *stringtag, MPI_Info info, MPI_Errhandler errhandler,
                               struct MPI_ABI_Errhandler **eh, struct MPI_ABI_Info **hints);

/* ---- intercommunicators (intercomm.c) ---- */

/* Make c (its context id set) an intercommunicator: `local` its hidden
 * local communicator (reference taken over), `remote` the remote group. */
void hashi_inter_attach(struct MPI_ABI_Comm *c, struct MPI_ABI_Comm *local, struct MPI_ABI_Group *remote);
/* The intercommunicator part of a dup of parent into c (made by dup_prepare):
 * its hidden local communicator and its id. MPI_SUCCESS or the raised error. */
int hashi_inter_dup_finish(const char *func, struct MPI_ABI_Comm *parent, struct MPI_ABI_Comm *c);
/* MPI_Comm_split of an intercommunicator (MPI-2.2); error raised on parent. */
int hashi_inter_split(const char *func, struct MPI_ABI_Comm *parent, int color, int key, struct MPI_ABI_Comm **out);

/* Predefined communicator attributes (MPI_TAG_UB ...): 1 if keyval is one,
 * with *found and *value (the address of an int) set; 0 if not. */
int hashi_comm_predefined_attr(int keyval, void **value, int *found);

/* MPI_Finalize's first step: delete the attributes of MPI_COMM_SELF (the
 * standard's hook for code that must run at finalize), then MPI_COMM_WORLD. */
void hashi_comms_finalize_attributes(void);

/* MPI_Barrier's algorithm on any communicator (no argument checks): also the
 * barrier other parts of the library run over the device. */
int hashi_comm_barrier(struct MPI_ABI_Comm *c);

/* ---- groups ---- */

/* The groups behind MPI_COMM_WORLD, MPI_COMM_SELF and MPI_GROUP_EMPTY. The
 * world group's world_ranks is NULL: the identity, like the communicator's. */
extern struct MPI_ABI_Group hashi_group_world, hashi_group_self, hashi_group_empty;
/* Fill in the world and self groups (hashi_comms_init, once hashi_job is known). */
void hashi_groups_init(void);

/* The object behind a group handle, or NULL if it is not a valid group. */
struct MPI_ABI_Group *hashi_group_get(MPI_Group h);
/* The handle that names a group object (MPI_GROUP_EMPTY for the empty group). */
MPI_Group hashi_group_handle(struct MPI_ABI_Group *g);

static inline int hashi_group_to_world(const struct MPI_ABI_Group *g, int rank)
{
    return g->world_ranks ? g->world_ranks[rank] : rank;
}

/* A new group of `size` members from a malloc'd array of world ranks, which
 * the group takes over (freed here on failure). Size 0 gives the empty group.
 * NULL when out of memory. */
struct MPI_ABI_Group *hashi_group_from_world_ranks(int size, int *world_ranks);
void hashi_group_retain(struct MPI_ABI_Group *g);
void hashi_group_release(struct MPI_ABI_Group *g);

/* MPI_IDENT, MPI_SIMILAR or MPI_UNEQUAL (MPI_Group_compare's results); -1 when
 * out of memory. */
int hashi_group_compare(const struct MPI_ABI_Group *a, const struct MPI_ABI_Group *b);

/*
 * A lookup from world rank to group rank: members sorted by world rank, so a
 * lookup costs O(log n) and building it O(n log n), independent of the job's
 * size. The world group needs no table (the identity).
 */
struct hashi_group_index {
    const struct MPI_ABI_Group *group;
    struct hashi_group_member { int world, rank; } *by_world;  /* NULL for the world group */
};
int hashi_group_index_build(struct hashi_group_index *idx, const struct MPI_ABI_Group *g);  /* 0 or -1 (memory) */
/* The rank in the group of the process with this world rank, or MPI_UNDEFINED. */
int hashi_group_index_lookup(const struct hashi_group_index *idx, int world_rank);
void hashi_group_index_free(struct hashi_group_index *idx);

#endif
