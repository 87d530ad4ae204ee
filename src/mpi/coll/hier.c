/*
 * Node-aware (two-level) collectives for communicators that span several
 * nodes with several members on some node (docs/collectives.md, "Node-aware
 * algorithms"). Each communicator learns its layout once, on the first
 * collective that selects a two-level algorithm, without communication:
 * which members share a node, a node-local sub-communicator (my node's
 * members, in parent rank order) and the leaders' communicator (the lowest
 * parent rank of each node, in node order). Both are internal: context ids
 * from the parent's block, errors returned to us (raised on the parent by
 * the caller), and a flat layout of their own, so their collectives never
 * come back here.
 *
 * Every algorithm is written once, as phases on the sub-communicators
 * (local reduce -> leaders' allreduce -> local broadcast ...). A phase runs
 * in one of two ways:
 *  - blocking calls (s == NULL) run each phase now through the collective's
 *    own entry on the sub-communicator, so the node-local phases reach the
 *    device's node collectives (dimmnet LLCM) when it takes them;
 *  - schedules (s != NULL: nonblocking, persistent, or a schedule that
 *    embeds a reduce) get each phase as a schedule built on the
 *    sub-communicator, added as a step (hashi_sched_sub), one round each.
 * Every member of a sub-communicator runs the same phases on it in the same
 * order, so the sub-communicators' tag sequences agree.
 */
#include "mpi/coll/coll.h"
#include "mpi/coll/coll_data.h"
#include "mpi/comm.h"
#include "runtime/pvar.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>

/* Communicators with nothing to gain (one node, one member per node) and
 * the sub-communicators themselves. */
static struct hashi_coll_hier flat_layout;

static void make_internal(struct MPI_ABI_Comm *sub, const struct MPI_ABI_Comm *parent, const char *what)
{
    struct MPI_ABI_Errhandler *eh = hashi_errhandler_get(MPI_ERRORS_RETURN);
    hashi_errhandler_retain(eh);
    hashi_errhandler_release(sub->errhandler);
    sub->errhandler = eh;
    sub->coll_state = &flat_layout;
    snprintf(sub->name, sizeof sub->name, "%s of %.100s", what, parent->name[0] ? parent->name : "a communicator");
}

/* The members of the node led by parent rank `leader` (leader < 0: every
 * node's leader), in parent rank order, as a group (NULL: out of memory). */
static struct MPI_ABI_Group *group_of(const struct MPI_ABI_Comm *c, const int *leader_of, int leader)
{
    int n = c->size, count = 0;
    int *world = malloc((size_t)n * sizeof *world);
    if (!world)
        return NULL;
    for (int i = 0; i < n; i++)
        if (leader < 0 ? leader_of[i] == i : leader_of[i] == leader)
            world[count++] = hashi_comm_to_world(c, i);
    return hashi_group_from_world_ranks(count, world);
}

struct member_node {
    int node, rank;
};

static int by_node_then_rank(const void *a, const void *b)
{
    const struct member_node *x = a, *y = b;
    return x->node != y->node ? (x->node < y->node ? -1 : 1) : x->rank - y->rank;
}

/*
 * Every member's node leader (the lowest parent rank on its node), from the
 * launcher's node of every rank (hashi_rt_node_of): no communication, the
 * same in every member. 0, or -1 when some rank's node is unknown.
 */
static int find_leaders(const struct MPI_ABI_Comm *c, int *leader_of)
{
    int n = c->size;
    struct member_node *m = malloc((size_t)n * sizeof *m);
    if (!m)
        return -1;
    for (int i = 0; i < n; i++) {
        m[i] = (struct member_node){ hashi_rt_node_of(hashi_comm_to_world(c, i)), i };
        if (m[i].node < 0) {
            free(m);
            return -1;
        }
    }
    qsort(m, (size_t)n, sizeof *m, by_node_then_rank);
    for (int i = 0; i < n; i++)
        leader_of[m[i].rank] = i > 0 && m[i - 1].node == m[i].node ? leader_of[m[i - 1].rank] : m[i].rank;
    free(m);
    return 0;
}

/*
 * The layout every member derives alike from the nodes of the members, and
 * the two sub-communicators on the context ids of c's block
 * (hashi_comm_new_sub). Nothing is exchanged, so any call may set it up, a
 * nonblocking one included. The flat layout when there is nothing to gain
 * or the nodes are unknown.
 */
static int setup(struct MPI_ABI_Comm *c, const char *func, struct hashi_coll_hier **out)
{
    int n = c->size, me = c->rank, rc = MPI_SUCCESS;
    *out = &flat_layout;
    if (hashi_comm_sub_context(c, 0) == UINT32_MAX)
        return MPI_SUCCESS;
    int *leader_of = malloc((size_t)n * sizeof *leader_of);
    int *node_of = malloc((size_t)n * sizeof *node_of);
    int *local_rank_of = malloc((size_t)n * sizeof *local_rank_of);
    int *members = calloc((size_t)n, sizeof *members);
    int *node_first = malloc((size_t)n * sizeof *node_first);
    struct hashi_coll_hier *h = calloc(1, sizeof *h);
    if (!leader_of || !node_of || !local_rank_of || !members || !node_first || !h) {
        rc = hashi_err_comm(func, hashi_comm_handle(c), MPI_ERR_NO_MEM, "out of memory for the node layout");
        goto fail;
    }
    if (find_leaders(c, leader_of) != 0)
        goto flat;

    /* Nodes in the order of their leaders; ranks on a node in parent order. */
    int nodes = 0, max_members = 0, in_order = 1;
    for (int i = 0; i < n; i++) {
        int l = leader_of[i];
        if (l == i) {
            node_first[nodes] = i;
            node_of[i] = nodes++;
        } else {
            node_of[i] = node_of[l];
        }
        local_rank_of[i] = members[node_of[i]]++;
        if (members[node_of[i]] > max_members)
            max_members = members[node_of[i]];
        if (i > 0 && l != i && l != leader_of[i - 1])
            in_order = 0;
    }
    if (nodes < 2 || max_members < 2)
        goto flat;

    int my_leader = leader_of[me];
    struct MPI_ABI_Group *local_group = group_of(c, leader_of, my_leader);
    struct MPI_ABI_Group *leaders_group = me == my_leader ? group_of(c, leader_of, -1) : NULL;
    if (local_group)
        h->local = hashi_comm_new_sub(c, 0, local_group);
    if (leaders_group)
        h->leaders = hashi_comm_new_sub(c, 1, leaders_group);
    if (local_group)
        hashi_group_release(local_group);
    if (leaders_group)
        hashi_group_release(leaders_group);
    if (!h->local || (me == my_leader && !h->leaders)) {
        /* The others go on with the two levels: no way to stay in step. */
        rc = hashi_err_comm(func, hashi_comm_handle(c), MPI_ERR_NO_MEM, "out of memory for the node layout");
        goto fail;
    }
    make_internal(h->local, c, "node-local");
    if (h->leaders)
        make_internal(h->leaders, c, "node leaders");
    h->two_level = 1;
    h->in_order = in_order;
    h->nodes = nodes;
    h->node_of = node_of;
    h->local_rank_of = local_rank_of;
    h->node_first = node_first;
    h->node_size = members;
    free(leader_of);
    *out = h;
    return MPI_SUCCESS;
fail:
    *out = NULL;
flat:
    if (h) {
        hashi_comm_release(h->local);
        hashi_comm_release(h->leaders);
        free(h);
    }
    free(leader_of);
    free(node_of);
    free(local_rank_of);
    free(members);
    free(node_first);
    return rc;
}

struct hashi_coll_hier *hashi_coll_hier_layout(struct MPI_ABI_Comm *c, const char *func, int *rc)
{
    *rc = MPI_SUCCESS;
    if (c->coll_state)
        return c->coll_state;
    /* All members on this node: everyone sees that without asking. */
    int here = 0;
    for (int i = 0; i < c->size; i++)
        here += hashi_job.peer_is_local[hashi_comm_to_world(c, i)];
    if (here == c->size)
        return c->coll_state = &flat_layout;
    struct hashi_coll_hier *h;
    *rc = setup(c, func, &h);
    return h ? (c->coll_state = h) : NULL;
}

void hashi_coll_comm_free(struct MPI_ABI_Comm *c)
{
    if (c->device_state && hashi_device->coll.comm_free)
        hashi_device->coll.comm_free(c);
    struct hashi_coll_hier *h = c->coll_state;
    c->coll_state = NULL;
    if (!h || h == &flat_layout)
        return;
    hashi_comm_release(h->local);
    hashi_comm_release(h->leaders);
    free(h->node_of);
    free(h->local_rank_of);
    free(h->node_first);
    free(h->node_size);
    free(h);
}

/* ---- phases: a collective on a sub-communicator, now or as a step of s ---- */

static int add_phase(struct hashi_sched *s, struct hashi_sched *sub, int build_rc)
{
    if (!sub)
        return MPI_ERR_NO_MEM;
    if (build_rc != MPI_SUCCESS) {
        hashi_sched_destroy(sub);
        return build_rc;
    }
    int rc = hashi_sched_sub(s, sub);
    return rc == MPI_SUCCESS ? hashi_sched_fence(s) : rc;
}

static int phase_barrier(struct hashi_sched *s, struct MPI_ABI_Comm *sub)
{
    if (sub->size == 1)
        return MPI_SUCCESS;
    if (!s)
        return hashi_impl_Barrier(hashi_comm_handle(sub));
    struct hashi_sched *x = hashi_sched_create(sub);
    return add_phase(s, x, x ? hashi_coll_build_barrier(x, sub) : MPI_ERR_NO_MEM);
}

static int phase_bcast(struct hashi_sched *s, struct MPI_ABI_Comm *sub, void *buf, MPI_Count count,
                       MPI_Datatype type, int root)
{
    if (sub->size == 1)
        return MPI_SUCCESS;
    if (!s)
        return hashi_impl_Bcast_c(buf, count, type, root, hashi_comm_handle(sub));
    struct hashi_sched *x = hashi_sched_create(sub);
    return add_phase(s, x, x ? hashi_coll_build_bcast(x, buf, count, type, root, sub) : MPI_ERR_NO_MEM);
}

/* sendbuf MPI_IN_PLACE at the root only (the data is in recvbuf). */
static int phase_reduce(struct hashi_sched *s, struct MPI_ABI_Comm *sub, const void *sendbuf, void *recvbuf,
                        MPI_Count count, MPI_Datatype type, MPI_Op op, int root)
{
    if (!s)
        return hashi_impl_Reduce_c(sendbuf, recvbuf, count, type, op, root, hashi_comm_handle(sub));
    struct hashi_sched *x = hashi_sched_create(sub);
    return add_phase(s, x, x ? hashi_coll_build_reduce(x, sendbuf, recvbuf, count, type, op, root, sub)
                             : MPI_ERR_NO_MEM);
}

static int phase_allreduce(struct hashi_sched *s, struct MPI_ABI_Comm *sub, const void *sendbuf, void *recvbuf,
                           MPI_Count count, MPI_Datatype type, MPI_Op op)
{
    if (!s)
        return hashi_impl_Allreduce_c(sendbuf, recvbuf, count, type, op, hashi_comm_handle(sub));
    struct hashi_sched *x = hashi_sched_create(sub);
    return add_phase(s, x, x ? hashi_coll_build_allreduce(x, sendbuf, recvbuf, count, type, op, sub)
                             : MPI_ERR_NO_MEM);
}

/* buf goes from local rank `from` to `to` of sub; every member of sub takes
 * part (the others with an empty schedule), so its tags stay in step. */
static int phase_move(struct hashi_sched *s, struct MPI_ABI_Comm *sub, void *buf, MPI_Count count,
                      MPI_Datatype type, int from, int to)
{
    struct hashi_sched *x = hashi_sched_create(sub);
    int rc = x ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (x && sub->rank == from)
        rc = hashi_sched_send(x, buf, count, type, to);
    else if (x && sub->rank == to)
        rc = hashi_sched_recv(x, buf, count, type, from);
    if (s)
        return add_phase(s, x, rc);
    if (rc != MPI_SUCCESS) {
        hashi_sched_destroy(x);
        return rc;
    }
    return hashi_sched_run(x);
}

static int phase_gather(struct hashi_sched *s, struct MPI_ABI_Comm *sub, const void *sendbuf, MPI_Count scount,
                        MPI_Datatype stype, void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, int root)
{
    if (!s)
        return hashi_impl_Gather_c(sendbuf, scount, stype, recvbuf, rcount, rtype, root, hashi_comm_handle(sub));
    struct hashi_sched *x = hashi_sched_create(sub);
    return add_phase(s, x, x ? hashi_coll_build_gather(x, sub, sendbuf, scount, stype, recvbuf, rcount, rtype, root)
                             : MPI_ERR_NO_MEM);
}

static int phase_scatter(struct hashi_sched *s, struct MPI_ABI_Comm *sub, const void *sendbuf, MPI_Count scount,
                         MPI_Datatype stype, void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, int root)
{
    struct hashi_sched *x = hashi_sched_create(sub);
    return add_phase(s, x, x ? hashi_coll_build_scatter(x, sub, sendbuf, scount, stype, recvbuf, rcount, rtype, root)
                             : MPI_ERR_NO_MEM);
}

/* In place: every member's block is already at displs[i] of recvbuf. */
static int phase_allgatherv(struct hashi_sched *s, struct MPI_ABI_Comm *sub, void *recvbuf, const MPI_Count counts[],
                            const MPI_Aint displs[], MPI_Datatype rtype)
{
    if (!s)
        return hashi_impl_Allgatherv_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, counts, displs, rtype,
                                       hashi_comm_handle(sub));
    struct hashi_sched *x = hashi_sched_create(sub);
    return add_phase(s, x, x ? hashi_coll_build_allgather(x, sub, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, 0,
                                                          counts, displs, rtype)
                             : MPI_ERR_NO_MEM);
}

/* Room for count elements of t: in the schedule, or malloc'd (*owned, freed
 * by the caller) when running now. */
static void *scratch(struct hashi_sched *s, MPI_Count count, MPI_Datatype type, void **owned)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    if (s)
        return hashi_coll_tmpbuf(s, count, t);
    size_t bytes = count > 0 ? (size_t)((count - 1) * hashi_type_extent(t) + (t->true_ub - t->true_lb)) : 1;
    *owned = malloc(bytes ? bytes : 1);
    return *owned ? (char *)*owned - t->true_lb : NULL;
}

/* ---- the algorithms ---- */

/* Nothing two-level can run: fewer than 3 members, or a layout already
 * found flat (one node, one member per node, a sub-communicator). The
 * selection would say so too, after computing sizes and reading
 * parameters: this is every small collective's first test. */
static inline int surely_flat(const struct MPI_ABI_Comm *c)
{
    return c->size < 3 || c->coll_state == &flat_layout;
}

/* Two-level algorithms built, by collective: MPI_T performance variables
 * (hashi_coll_hier_pvars_register), what the tests read to know the path. */
static uint64_t hier_built[HASHI_CHOOSE_KINDS];

static struct hashi_coll_hier *chosen(enum hashi_alg_choice_for coll, struct MPI_ABI_Comm *c, size_t bytes,
                                      int commutative, int *rc)
{
    static const char *const names[] = { [HASHI_CHOOSE_BCAST] = "MPI_Bcast", [HASHI_CHOOSE_REDUCE] = "MPI_Reduce",
                                         [HASHI_CHOOSE_ALLREDUCE] = "MPI_Allreduce",
                                         [HASHI_CHOOSE_REDUCE_SCATTER] = "MPI_Reduce_scatter",
                                         [HASHI_CHOOSE_BARRIER] = "MPI_Barrier",
                                         [HASHI_CHOOSE_ALLGATHER] = "MPI_Allgather",
                                         [HASHI_CHOOSE_GATHER] = "MPI_Gather",
                                         [HASHI_CHOOSE_SCATTER] = "MPI_Scatter" };
    struct hashi_coll_hier *h = hashi_coll_hier_select(coll, c, names[coll], bytes, commutative, rc);
    if (h)
        hier_built[coll]++;
    return h;
}

void hashi_coll_hier_pvars_register(void)
{
    static const struct hashi_pvar vars[] = {
        { "coll_hier_barriers", "hashi_coll", "node-aware (two-level) MPI_Barrier runs built",
          &hier_built[HASHI_CHOOSE_BARRIER] },
        { "coll_hier_bcasts", "hashi_coll", "node-aware MPI_Bcast runs built", &hier_built[HASHI_CHOOSE_BCAST] },
        { "coll_hier_reduces", "hashi_coll", "node-aware MPI_Reduce runs built", &hier_built[HASHI_CHOOSE_REDUCE] },
        { "coll_hier_allreduces", "hashi_coll", "node-aware MPI_Allreduce runs built",
          &hier_built[HASHI_CHOOSE_ALLREDUCE] },
        { "coll_hier_allgathers", "hashi_coll", "node-aware MPI_Allgather runs built",
          &hier_built[HASHI_CHOOSE_ALLGATHER] },
        { "coll_hier_gathers", "hashi_coll", "node-aware MPI_Gather runs built", &hier_built[HASHI_CHOOSE_GATHER] },
        { "coll_hier_scatters", "hashi_coll", "node-aware MPI_Scatter runs built",
          &hier_built[HASHI_CHOOSE_SCATTER] },
    };
    /* Out of memory: the counters run on, unseen by tools. */
    (void)hashi_pvar_register(vars, (int)(sizeof vars / sizeof vars[0]));
}


int hashi_coll_hier_barrier(struct hashi_sched *s, struct MPI_ABI_Comm *c)
{
    if (surely_flat(c))
        return HASHI_COLL_FLAT;
    int rc;
    struct hashi_coll_hier *h = chosen(HASHI_CHOOSE_BARRIER, c, 0, 1, &rc);
    if (!h)
        return rc == MPI_SUCCESS ? HASHI_COLL_FLAT : rc;
    rc = phase_barrier(s, h->local);
    if (rc == MPI_SUCCESS && h->leaders)
        rc = phase_barrier(s, h->leaders);
    if (rc == MPI_SUCCESS)
        rc = phase_barrier(s, h->local);
    return rc;
}

int hashi_coll_hier_bcast(struct hashi_sched *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                          struct MPI_ABI_Comm *c)
{
    if (surely_flat(c))
        return HASHI_COLL_FLAT;
    int rc;
    size_t bytes = (size_t)hashi_type_bytes(hashi_type_get(type), count);
    struct hashi_coll_hier *h = chosen(HASHI_CHOOSE_BCAST, c, bytes, 1, &rc);
    if (!h)
        return rc == MPI_SUCCESS ? HASHI_COLL_FLAT : rc;
    int root_node = h->node_of[root], root_local = h->local_rank_of[root];
    rc = MPI_SUCCESS;
    if (h->node_of[c->rank] != root_node) {
        rc = h->leaders ? phase_bcast(s, h->leaders, buf, count, type, root_node) : MPI_SUCCESS;
        return rc == MPI_SUCCESS ? phase_bcast(s, h->local, buf, count, type, 0) : rc;
    }
    /* The root's node: from the root over the node, and from its leader to
     * the other leaders (leaders first when the root is the leader). */
    if (root_local != 0)
        rc = phase_bcast(s, h->local, buf, count, type, root_local);
    if (rc == MPI_SUCCESS && h->leaders)
        rc = phase_bcast(s, h->leaders, buf, count, type, root_node);
    if (rc == MPI_SUCCESS && root_local == 0)
        rc = phase_bcast(s, h->local, buf, count, type, 0);
    return rc;
}

int hashi_coll_hier_reduce(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype type, MPI_Op op, int root, struct MPI_ABI_Comm *c)
{
    if (surely_flat(c))
        return HASHI_COLL_FLAT;
    int rc;
    size_t bytes = (size_t)hashi_type_bytes(hashi_type_get(type), count);
    struct hashi_coll_hier *h = chosen(HASHI_CHOOSE_REDUCE, c, bytes, hashi_op_is_commutative(op), &rc);
    if (!h)
        return rc == MPI_SUCCESS ? HASHI_COLL_FLAT : rc;
    int me = c->rank, root_node = h->node_of[root], root_local = h->local_rank_of[root];
    int on_root_node = h->node_of[me] == root_node;
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    void *owned = NULL;
    if (!h->leaders) {
        /* Our data to the leader; on the root's node the result from it. */
        rc = phase_reduce(s, h->local, mine, recvbuf, count, type, op, 0);
    } else {
        /* The node's partial result: where the result goes at the root,
         * else scratch; a node of one has only our own data. */
        void *acc = recvbuf;
        if (me != root && (h->local->size > 1 || on_root_node) && !(acc = scratch(s, count, type, &owned)))
            return MPI_ERR_NO_MEM;
        const void *part = mine;
        rc = MPI_SUCCESS;
        if (h->local->size > 1) {
            rc = phase_reduce(s, h->local, mine == acc ? MPI_IN_PLACE : mine, acc, count, type, op, 0);
            part = acc;
        }
        if (rc == MPI_SUCCESS)
            rc = phase_reduce(s, h->leaders, on_root_node && part == acc ? MPI_IN_PLACE : part, acc, count, type,
                              op, root_node);
        recvbuf = acc;   /* what the root's leader forwards */
    }
    if (rc == MPI_SUCCESS && on_root_node && root_local != 0)
        rc = phase_move(s, h->local, recvbuf, count, type, 0, root_local);
    free(owned);
    return rc;
}

int hashi_coll_hier_allreduce(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                              MPI_Datatype type, MPI_Op op, struct MPI_ABI_Comm *c)
{
    if (surely_flat(c))
        return HASHI_COLL_FLAT;
    int rc;
    size_t bytes = (size_t)hashi_type_bytes(hashi_type_get(type), count);
    struct hashi_coll_hier *h = chosen(HASHI_CHOOSE_ALLREDUCE, c, bytes, hashi_op_is_commutative(op), &rc);
    if (!h)
        return rc == MPI_SUCCESS ? HASHI_COLL_FLAT : rc;
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    const void *part = mine;
    rc = MPI_SUCCESS;
    if (h->local->size > 1) {
        /* The node's partial result into the leader's recvbuf. */
        rc = phase_reduce(s, h->local, h->leaders && mine == recvbuf ? MPI_IN_PLACE : mine, recvbuf, count, type,
                          op, 0);
        part = recvbuf;
    }
    if (rc == MPI_SUCCESS && h->leaders)
        rc = phase_allreduce(s, h->leaders, part == recvbuf ? MPI_IN_PLACE : part, recvbuf, count, type, op);
    if (rc == MPI_SUCCESS)
        rc = phase_bcast(s, h->local, recvbuf, count, type, 0);
    return rc;
}

int hashi_coll_hier_allgather(struct hashi_sched *s, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                              void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, struct MPI_ABI_Comm *c)
{
    if (surely_flat(c))
        return HASHI_COLL_FLAT;
    int rc, n = c->size, me = c->rank;
    const struct MPI_ABI_Datatype *rt = hashi_type_get(rtype);
    size_t bytes = (size_t)hashi_type_bytes(rt, rcount) * (size_t)n;
    if (bytes == 0)
        return HASHI_COLL_FLAT;
    /* The blocks of a node must be consecutive in recvbuf (in_order, as for
     * a non-commutative op) to be gathered in place and passed on as one. */
    struct hashi_coll_hier *h = chosen(HASHI_CHOOSE_ALLGATHER, c, bytes, 0, &rc);
    if (!h)
        return rc == MPI_SUCCESS ? HASHI_COLL_FLAT : rc;
    MPI_Aint block = (MPI_Aint)rcount * hashi_type_extent(rt);
    int local_rank = h->local_rank_of[me];
    char *mine = (char *)recvbuf + me * block;
    if (h->local->size > 1) {
        /* Into the node's range of recvbuf at the leader (its own block is
         * the range's first: in place there). */
        const void *sb = sendbuf;
        if (sendbuf == MPI_IN_PLACE && local_rank != 0) {
            sb = mine;
            scount = rcount;
            stype = rtype;
        }
        rc = phase_gather(s, h->local, sb, scount, stype, (char *)recvbuf + (me - local_rank) * block, rcount, rtype,
                          0);
    } else if (sendbuf != MPI_IN_PLACE) {
        rc = s ? hashi_sched_copy(s, sendbuf, scount, stype, mine, rcount, rtype)
               : hashi_coll_copy(sendbuf, scount, stype, mine, rcount, rtype);
    }
    if (rc == MPI_SUCCESS && h->leaders) {
        MPI_Count *counts = malloc((size_t)h->nodes * (sizeof *counts + sizeof(MPI_Aint)));
        if (!counts)
            return MPI_ERR_NO_MEM;
        MPI_Aint *displs = (MPI_Aint *)(counts + h->nodes);
        for (int k = 0; k < h->nodes; k++) {
            counts[k] = h->node_size[k] * rcount;
            displs[k] = h->node_first[k] * rcount;
        }
        rc = phase_allgatherv(s, h->leaders, recvbuf, counts, displs, rtype);   /* builders copy the arrays */
        free(counts);
    }
    if (rc == MPI_SUCCESS)
        rc = phase_bcast(s, h->local, recvbuf, n * rcount, rtype, 0);
    return rc;
}

/*
 * Gather and Scatter on two levels (always in a schedule s on c: the rooted
 * collectives build one schedule for every form). Every node's members must
 * be consecutive ranks, so that a node's blocks are one range of the root's
 * buffer. Off the root's node, a node's blocks meet at its leader, packed
 * (`blk` bytes each), and go between the leader and the root in one message
 * on c; on the root's node the node-local collective runs from or to the
 * root itself, in place in its buffer.
 */
static size_t one_block(const struct MPI_ABI_Comm *c, int root, MPI_Count root_count, MPI_Datatype root_type,
                        MPI_Count count, MPI_Datatype type)
{
    /* The root's side and everybody else's are one signature. */
    return c->rank == root ? (size_t)hashi_type_bytes(hashi_type_get(root_type), root_count)
                           : (size_t)hashi_type_bytes(hashi_type_get(type), count);
}

int hashi_coll_hier_gather(struct hashi_sched *s, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                           void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, int root, struct MPI_ABI_Comm *c)
{
    if (surely_flat(c))
        return HASHI_COLL_FLAT;
    int rc, me = c->rank;
    size_t blk = one_block(c, root, rcount, rtype, scount, stype);
    if (blk == 0 || !hashi_coll_hier_rooted_fits(HASHI_CHOOSE_GATHER, c, blk))
        return HASHI_COLL_FLAT;
    struct hashi_coll_hier *h = chosen(HASHI_CHOOSE_GATHER, c, blk * (size_t)c->size, 0, &rc);
    if (!h)
        return rc == MPI_SUCCESS ? HASHI_COLL_FLAT : rc;
    int root_node = h->node_of[root], my_node = h->node_of[me], local_rank = h->local_rank_of[me];
    MPI_Aint rblk = me == root ? rcount * hashi_type_extent(hashi_type_get(rtype)) : 0;
    char *stage = NULL;
    if (my_node == root_node) {
        rc = phase_gather(s, h->local, sendbuf, scount, stype,
                          me == root ? (char *)recvbuf + h->node_first[root_node] * rblk : NULL, rcount, rtype,
                          h->local_rank_of[root]);
    } else {
        if (local_rank == 0 && !(stage = hashi_sched_scratch(s, (size_t)h->node_size[my_node] * blk)))
            return MPI_ERR_NO_MEM;
        rc = phase_gather(s, h->local, sendbuf, scount, stype, stage, (MPI_Count)blk, MPI_BYTE, 0);
    }
    if (rc != MPI_SUCCESS)
        return rc;
    if (me == root) {
        for (int k = 0; k < h->nodes && rc == MPI_SUCCESS; k++)
            if (k != root_node)
                rc = hashi_sched_recv(s, (char *)recvbuf + h->node_first[k] * rblk, h->node_size[k] * rcount, rtype,
                                      h->node_first[k]);
    } else if (stage) {
        rc = hashi_sched_send(s, stage, (MPI_Count)((size_t)h->node_size[my_node] * blk), MPI_BYTE, root);
    }
    return rc == MPI_SUCCESS ? hashi_sched_fence(s) : rc;
}

int hashi_coll_hier_scatter(struct hashi_sched *s, const void *sendbuf, MPI_Count scount, MPI_Datatype stype,
                            void *recvbuf, MPI_Count rcount, MPI_Datatype rtype, int root, struct MPI_ABI_Comm *c)
{
    if (surely_flat(c))
        return HASHI_COLL_FLAT;
    int rc, me = c->rank;
    size_t blk = one_block(c, root, scount, stype, rcount, rtype);
    if (blk == 0 || !hashi_coll_hier_rooted_fits(HASHI_CHOOSE_SCATTER, c, blk))
        return HASHI_COLL_FLAT;
    struct hashi_coll_hier *h = chosen(HASHI_CHOOSE_SCATTER, c, blk * (size_t)c->size, 0, &rc);
    if (!h)
        return rc == MPI_SUCCESS ? HASHI_COLL_FLAT : rc;
    int root_node = h->node_of[root], my_node = h->node_of[me], local_rank = h->local_rank_of[me];
    MPI_Aint sblk = me == root ? scount * hashi_type_extent(hashi_type_get(stype)) : 0;
    char *stage = NULL;
    rc = MPI_SUCCESS;
    if (me == root) {
        for (int k = 0; k < h->nodes && rc == MPI_SUCCESS; k++)
            if (k != root_node)
                rc = hashi_sched_send(s, (const char *)sendbuf + h->node_first[k] * sblk, h->node_size[k] * scount,
                                      stype, h->node_first[k]);
    } else if (my_node != root_node && local_rank == 0) {
        size_t bytes = (size_t)h->node_size[my_node] * blk;
        if (!(stage = hashi_sched_scratch(s, bytes)))
            return MPI_ERR_NO_MEM;
        rc = hashi_sched_recv(s, stage, (MPI_Count)bytes, MPI_BYTE, root);
    }
    if (rc == MPI_SUCCESS)
        rc = hashi_sched_fence(s);
    if (rc != MPI_SUCCESS)
        return rc;
    if (my_node == root_node)
        return phase_scatter(s, h->local, me == root ? (const char *)sendbuf + h->node_first[root_node] * sblk : NULL,
                             scount, stype, recvbuf, rcount, rtype, h->local_rank_of[root]);
    return phase_scatter(s, h->local, stage, (MPI_Count)blk, MPI_BYTE, recvbuf, rcount, rtype, 0);
}
