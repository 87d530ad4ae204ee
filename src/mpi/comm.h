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
#define HASHI_TAG_CONTEXT_ID   (HASHI_TAG_COMM_FIRST + 1)  /* context id agreement (allreduce AND) */
#define HASHI_TAG_SPLIT        (HASHI_TAG_COMM_FIRST + 2)  /* MPI_Comm_split: (color, key) allgather */
#define HASHI_TAG_COMM_LAST    0x7fffff

/* Context ids are 16 bits (the ofi device's match bits) and come in pairs. */
#define HASHI_CONTEXT_ID_BITS 16
#define HASHI_CONTEXT_WORLD 0u
#define HASHI_CONTEXT_SELF  2u

/* ---- communicators ---- */

/* Pending operations hold a reference (requests retain their communicator),
 * so MPI_Comm_free only drops the user's one; the last release frees the
 * object and returns its context id to the pool. */
void hashi_comm_retain(struct MPI_ABI_Comm *c);
void hashi_comm_release(struct MPI_ABI_Comm *c);

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
