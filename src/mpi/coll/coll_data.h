/*
 * The data-movement collectives (Gather(v), Scatter(v), Allgather(v),
 * Alltoall(v)(w), the Neighbor_* family): what their files share.
 *
 * Every collective is one function taking a `struct hashi_coll_call`
 * (coll.h); it checks the arguments, builds one schedule with the algorithm
 * select.c chooses, and hands the schedule to hashi_coll_call_finish().
 */
#ifndef HASHI_MPI_COLL_DATA_H
#define HASHI_MPI_COLL_DATA_H

#include <mpi.h>
#include <stddef.h>

#include "mpi/coll/coll.h"

/* ---- argument checks: MPI_SUCCESS or the error raised on comm ---- */

/* Which buffer argument a check is about (names the arguments in messages). */
enum hashi_coll_side { HASHI_COLL_SEND, HASHI_COLL_RECV };

/* One buffer argument: count >= 0 (MPI_ERR_COUNT), a committed datatype
 * (MPI_ERR_TYPE), a buffer that is not NULL when there is data (MPI_BOTTOM
 * allowed with absolute-address types) and not MPI_IN_PLACE (MPI_ERR_BUFFER;
 * the caller has handled the places where the standard allows it). *t gets
 * the type object. */
int hashi_coll_check_data(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side,
                          const void *buf, MPI_Count count, MPI_Datatype type, struct MPI_ABI_Datatype **t);
/* The n counts and displacements of a v-form: present (MPI_ERR_ARG), counts
 * >= 0 (MPI_ERR_COUNT), buf not MPI_IN_PLACE (MPI_ERR_BUFFER); a NULL buf is
 * MPI_BOTTOM (absolute displacements). */
int hashi_coll_check_counts(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side, int n,
                            const void *buf, const MPI_Count counts[], const MPI_Aint displs[]);
/* A committed type for each of n entries (the w forms). */
int hashi_coll_check_types(const struct hashi_coll_call *call, MPI_Comm comm, enum hashi_coll_side side, int n,
                           const MPI_Datatype types[]);

/* ---- int forms of the v-collectives ---- */

/*
 * The large-count arrays of an int form: n counts (and displacements when
 * displs is not NULL) widened into one malloc'd block that *block owns (free
 * it after the _c call). NULL arrays stay NULL. MPI_ERR_NO_MEM or MPI_SUCCESS.
 */
int hashi_coll_widen(int n, const int counts[], const int displs[], MPI_Count **wcounts, MPI_Aint **wdispls,
                     void **block);
/* The size of comm, or 0 when comm is not a valid communicator (the _c form
 * then reports it). */
int hashi_coll_comm_size(MPI_Comm comm);
/* The number of sources and destinations of comm's topology, or 0/0. */
void hashi_coll_neighbor_counts(MPI_Comm comm, int *indegree, int *outdegree);

/* ---- rooted collectives (Gather, Scatter) ---- */

/*
 * The arguments of Gather(v) and Scatter(v), which mirror each other: every
 * rank's own block (`own`: the send side of a gather, the receive side of a
 * scatter; MPI_IN_PLACE at the root) and the root's buffer of all blocks
 * (`all`; the v-forms give counts and displacements instead of one count).
 */
struct hashi_coll_rooted {
    int root;
    int is_v;
    enum hashi_coll_side own_side;
    const void *own;
    MPI_Count own_count;
    MPI_Datatype own_type;
    const void *all;
    MPI_Count all_count;
    const MPI_Count *all_counts;
    const MPI_Aint *all_displs;
    MPI_Datatype all_type;
};
/* Checks them (the root's side at the root only); the communicator, or NULL
 * after raising. *blk: the bytes of one rank's block, which every rank knows
 * for the non-v forms (the root from its count, the others from their own);
 * for the v-forms the bytes of this rank's own block. */
struct MPI_ABI_Comm *hashi_coll_check_rooted(const struct hashi_coll_call *call, MPI_Comm comm,
                                             const struct hashi_coll_rooted *r, size_t *blk, int *rc);

/* Is this process the root of a rooted call on comm? (The int forms of the
 * v-collectives widen the root's arrays only: they are not significant, and
 * may be short, elsewhere.) */
int hashi_coll_is_root(MPI_Comm comm, int root);

/*
 * The binomial tree over relative ranks vr = (rank - root) mod n: the parent
 * of vr > 0 is vr - lowbit(vr); its children are vr + m for m = 1, 2, 4 ...
 * below lowbit(vr) (below n for the root) and below n; the subtree of vr is
 * the ranks vr .. vr + binomial_subtree(vr, n) - 1.
 */
static inline int hashi_binomial_lowbit(int vr, int n)
{
    if (vr)
        return vr & -vr;
    int m = 1;
    while (m < n)
        m <<= 1;
    return m;
}
static inline int hashi_binomial_subtree(int vr, int n)
{
    int low = hashi_binomial_lowbit(vr, n);
    return low < n - vr ? low : n - vr;
}

/* ---- algorithms (select.c chooses) ---- */

enum hashi_rooted_alg { HASHI_ROOTED_BINOMIAL, HASHI_ROOTED_LINEAR };
enum hashi_allgather_alg { HASHI_ALLGATHER_RECURSIVE_DOUBLING, HASHI_ALLGATHER_BRUCK, HASHI_ALLGATHER_RING };
enum hashi_alltoall_alg { HASHI_ALLTOALL_BRUCK, HASHI_ALLTOALL_SCATTERED, HASHI_ALLTOALL_PAIRWISE };

/* block_bytes: the data of one rank (one block of the root's buffer); c's
 * info hints hashi_coll_gather, _scatter, _allgather, _alltoall, _alltoallv
 * (the values of the parameters) override for that communicator. */
enum hashi_rooted_alg hashi_coll_gather_alg(const struct MPI_ABI_Comm *c, size_t block_bytes);
enum hashi_rooted_alg hashi_coll_scatter_alg(const struct MPI_ABI_Comm *c, size_t block_bytes);
enum hashi_allgather_alg hashi_coll_allgather_alg(const struct MPI_ABI_Comm *c, size_t block_bytes);
enum hashi_alltoall_alg hashi_coll_alltoall_alg(const struct MPI_ABI_Comm *c, size_t block_bytes);
/* Alltoallv/w: scattered or pairwise, by the largest block this rank sends
 * or receives (only this rank's view: any mix is correct). */
enum hashi_alltoall_alg hashi_coll_alltoallv_alg(const struct MPI_ABI_Comm *c, size_t max_block_bytes);
/* How many peers a scattered exchange talks to per round. */
int hashi_coll_alltoall_window(void);

/* Schedule builders for other builders (the node-aware Allgather, hier.c):
 * the algorithm the collective itself would choose, no argument checks.
 * Allgather when rcounts is NULL, else Allgatherv (arrays read while
 * building only). */
int hashi_coll_build_gather(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                            MPI_Count scount, MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                            MPI_Datatype rtype, int root);
int hashi_coll_build_scatter(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                             MPI_Count scount, MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                             MPI_Datatype rtype, int root);
int hashi_coll_build_allgather(struct hashi_sched *s, const struct MPI_ABI_Comm *c, const void *sendbuf,
                               MPI_Count scount, MPI_Datatype stype, void *recvbuf, MPI_Count rcount,
                               const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype);

/* ---- one side of an exchange: where each peer's block is ---- */

/*
 * Block i of a buffer: at buf + (displs ? displs[i] * unit : i * stride),
 * (counts ? counts[i] : count) elements of (types ? types[i] : type). Covers
 * Alltoall (uniform stride), Alltoallv (displacements in extents),
 * Alltoallw (in bytes, types per peer) and Neighbor_allgather's send side
 * (stride 0: every peer gets the same block).
 */
struct hashi_coll_blocks {
    char *buf;
    MPI_Count count;
    const MPI_Count *counts;
    MPI_Aint stride;
    const MPI_Aint *displs;
    MPI_Aint unit;
    MPI_Datatype type;
    const MPI_Datatype *types;
};

static inline char *hashi_blocks_ptr(const struct hashi_coll_blocks *b, int i)
{
    return b->buf + (b->displs ? b->displs[i] * b->unit : (MPI_Aint)i * b->stride);
}
static inline MPI_Count hashi_blocks_count(const struct hashi_coll_blocks *b, int i)
{
    return b->counts ? b->counts[i] : b->count;
}
static inline MPI_Datatype hashi_blocks_type(const struct hashi_coll_blocks *b, int i)
{
    return b->types ? b->types[i] : b->type;
}
/* Bytes of data in block i. */
size_t hashi_blocks_bytes(const struct hashi_coll_blocks *b, int i);

/* ---- the device's sparse exchange (device.h: the v and w forms, the neighbourhood collectives) ---- */

/* One side of a sparse exchange: m blocks of b, the k-th in MPI's matching
 * order being block order[k] (order NULL: k), which goes to (comes from)
 * the member peer[block] (peer NULL: the block's index; MPI_PROC_NULL:
 * nothing moves). */
struct hashi_coll_xside {
    int m;
    const int *peer;
    const int *order;
    const struct hashi_coll_blocks *b;
};
/* Whether blocking sparse exchanges on c go to the device (select.c:
 * HASHI_COLL_DEVICE_EXCHANGE; alltoallv: and no algorithm named). */
int hashi_coll_device_exchange_ok(const struct MPI_ABI_Comm *c, int alltoallv);
/* A blocking sparse exchange on the device: each member's blocks for one
 * peer are concatenated in order (packed unless one contiguous block), and
 * unpacked likewise on the other side. The result,
 * HASHI_DEVICE_COLL_DECLINE (no entry, not allowed, or the device
 * declines: the same on every member), or an error class. */
int hashi_coll_device_exchange(struct MPI_ABI_Comm *c, int alltoallv, const struct hashi_coll_xside *send,
                               const struct hashi_coll_xside *recv);

/* The same as a step of a nonblocking or persistent schedule s: copy
 * steps packing the staged send blocks, the device's exchange operation
 * (HASHI_DEVICE_OP_EXCHANGE, on the schedule's tag), copy steps unpacking
 * the staged receive blocks, each in a round of its own. The blocks and
 * the staging are computed once and live with the schedule (a persistent
 * request's runs reuse them). Offered on the same grounds as the blocking
 * form; the sides' arrays are read while building only. MPI_SUCCESS, an
 * error, or HASHI_DEVICE_COLL_DECLINE with no step added. */
int hashi_coll_device_exchange_step(struct hashi_sched *s, struct MPI_ABI_Comm *c, int alltoallv,
                                    const struct hashi_coll_xside *send, const struct hashi_coll_xside *recv);

/* Gatherv (gathering) or Scatterv on the device's sparse exchange,
 * blocking (s NULL) or as a step of schedule s: `mine` is this member's
 * one block to or from the root (NULL: the root's MPI_IN_PLACE, its block
 * stays), `all` the root's n blocks (NULL elsewhere). From 3 members; as
 * hashi_coll_device_exchange(_step). */
int hashi_coll_device_rooted_v(struct hashi_sched *s, struct MPI_ABI_Comm *c, int root, int gathering,
                               const struct hashi_coll_blocks *mine, const struct hashi_coll_blocks *all);
/* The ranks 0 .. n-1 with `skip` as MPI_PROC_NULL (malloc'd; NULL: out of
 * memory): the peers of an exchange that leaves one member's block alone. */
int *hashi_coll_peers_but(int n, int skip);

/* ---- the device's block collectives (alltoall, allgather, gather, scatter) ---- */

/* Whether a blocking broadcast of `bytes` (allgather, alltoall: a block of
 * `bytes`) goes to the device (select.c): up to its max_bytes always, above
 * where its reads beat the schedules (HASHI_COLL_DEVICE_*_READ_MIN). The same
 * answer on every member: the byte count, the communicator and its hints.
 * A caller it says yes to packs non-contiguous layouts at any size. */
enum hashi_coll_device_data { HASHI_DEVICE_BCAST, HASHI_DEVICE_ALLGATHER, HASHI_DEVICE_ALLTOALL };
int hashi_coll_device_data_ok(enum hashi_coll_device_data coll, const struct MPI_ABI_Comm *c, size_t bytes);

/* One side of a device call: count elements of type at buf, which are bytes
 * long; packed into a temporary unless contiguous (always when must_pack:
 * an MPI_IN_PLACE input the device must not read where it writes). */
struct hashi_coll_device_side {
    void *buf;
    MPI_Count count;
    const struct MPI_ABI_Datatype *type;
    size_t bytes;
    int must_pack;
};
/* Run the block collective a describes (its kind, comm, bytes: one
 * member's block, root) through the device's blocking entry on send and
 * recv (NULL: this member has nothing on that side), packing and unpacking
 * where the layouts need it. The device's result, or MPI_ERR_NO_MEM. */
struct hashi_device_coll_args;
int hashi_coll_device_blocks(const struct hashi_device_coll_args *a, const struct hashi_coll_device_side *send,
                             const struct hashi_coll_device_side *recv);
/* The same as a step of a nonblocking or persistent schedule: the device's
 * operation a describes, with copy steps packing send before it and
 * unpacking recv after it where the layouts need it (stype, rtype: their
 * handles). Offered up to the device's max_bytes per block (the blocking
 * rule's first case). MPI_SUCCESS, an error, or HASHI_DEVICE_COLL_DECLINE
 * with nothing added. */
int hashi_coll_device_blocks_step(struct hashi_sched *s, const struct hashi_device_coll_args *a,
                                  const struct hashi_coll_device_side *send, MPI_Datatype stype,
                                  const struct hashi_coll_device_side *recv, MPI_Datatype rtype);

#endif
