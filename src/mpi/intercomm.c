/*
 * Intercommunicators (MPI-4.1 7.6): MPI_Intercomm_create,
 * MPI_Intercomm_create_from_groups, MPI_Intercomm_merge, and the dup and
 * split of an intercommunicator. An intercommunicator is a communicator
 * object whose group is the local group and whose remote_group is the
 * other; point-to-point names ranks of the remote group (world_ranks and
 * peer_size are the remote group's), and the envelope's source, the
 * sender's local rank, is its rank in the receiver's remote group. Both
 * groups share one context id pair, free in every member of both
 * (hashi_context_agree_inter); a hidden intracommunicator over the local
 * group (local_comm, its own pair) carries the local phases of the
 * collectives (coll/inter.c). Design: docs/communicators.md,
 * "Intercommunicators".
 */
#include "mpi/coll/coll.h"
#include "mpi/comm.h"
#include "mpi/info.h"
#include "mpi/p2p.h"

#include <stdlib.h>
#include <string.h>

/* Broadcast `count` ints from the leader over an intracommunicator. */
static int bcast_ints(struct MPI_ABI_Comm *local, int leader, int *buf, int count)
{
    if (local->size == 1)
        return MPI_SUCCESS;
    struct hashi_sched *s = hashi_sched_create(local);
    if (!s)
        return MPI_ERR_NO_MEM;
    int rc = hashi_coll_build_bcast(s, buf, count, MPI_INT, leader, local);
    if (rc != MPI_SUCCESS) {
        hashi_sched_destroy(s);
        return rc;
    }
    return hashi_sched_run(s);
}

/* The world ranks of g (a malloc'd copy; NULL when out of memory). */
static int *world_ranks_of(const struct MPI_ABI_Group *g)
{
    int *w = malloc((size_t)(g->size ? g->size : 1) * sizeof *w);
    for (int i = 0; w && i < g->size; i++)
        w[i] = hashi_group_to_world(g, i);
    return w;
}

/*
 * The leaders swap their groups over the link and tell their groups: the
 * remote group (a new reference in *remote). Every member of `local` calls.
 */
static int exchange_groups(struct MPI_ABI_Comm *local, int leader, const struct hashi_leader_link *link,
                           struct MPI_ABI_Group **remote)
{
    int n = 0, rc = MPI_SUCCESS;
    *remote = NULL;
    if (local->rank == leader)
        rc = hashi_leader_exchange(link, &local->size, &n, sizeof n);
    if (rc == MPI_SUCCESS)
        rc = bcast_ints(local, leader, &n, 1);
    if (rc != MPI_SUCCESS)
        return rc;
    if (n <= 0)
        return MPI_ERR_INTERN;
    int *world = malloc((size_t)n * sizeof *world);
    int *mine = local->rank == leader ? world_ranks_of(local->group) : NULL;
    if (!world || (local->rank == leader && !mine)) {
        free(world);
        free(mine);
        return MPI_ERR_NO_MEM;
    }
    if (local->rank == leader) {
        /* Each side sends its own size's worth: send and receive apart. */
        struct MPI_ABI_Request *reqs[2];
        rc = hashi_isend_internal(mine, local->size, MPI_INT, link->peer, link->tag, link->comm, link->context,
                                  &reqs[0]);
        if (rc == MPI_SUCCESS) {
            rc = hashi_irecv_internal(world, n, MPI_INT, link->peer, link->tag, link->comm, link->context, &reqs[1]);
            if (rc == MPI_SUCCESS)
                rc = hashi_waitall_internal(2, reqs);
            else
                (void)hashi_wait_internal(reqs[0], MPI_STATUS_IGNORE);
        }
    }
    free(mine);
    if (rc == MPI_SUCCESS)
        rc = bcast_ints(local, leader, world, n);
    if (rc != MPI_SUCCESS) {
        free(world);
        return rc;
    }
    *remote = hashi_group_from_world_ranks(n, world);
    return *remote ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* 1 if the two groups share a process. */
static int groups_overlap(const struct MPI_ABI_Group *a, const struct MPI_ABI_Group *b, int *rc)
{
    struct hashi_group_index idx;
    *rc = MPI_SUCCESS;
    if (hashi_group_index_build(&idx, a) != 0) {
        *rc = MPI_ERR_NO_MEM;
        return 0;
    }
    int overlap = 0;
    for (int i = 0; i < b->size && !overlap; i++)
        overlap = hashi_group_index_lookup(&idx, hashi_group_to_world(b, i)) != MPI_UNDEFINED;
    hashi_group_index_free(&idx);
    return overlap;
}

/*
 * The intercommunicator over the hidden local communicator `hidden` (whose
 * reference this takes over, also on failure; NULL when not joining) and
 * `remote` (retained here), on a pair agreed by both groups over `agree` (an
 * intracommunicator of the local side, leader `leader`) and `link`; joining
 * when `hidden` is not NULL (else *out stays NULL). Error handler and
 * session from `parent` (NULL: none). MPI_SUCCESS or a class; *exhausted as
 * hashi_context_agree's.
 */
static int inter_make(struct MPI_ABI_Comm *agree, int leader, const struct hashi_leader_link *link,
                      struct MPI_ABI_Comm *hidden, struct MPI_ABI_Group *remote,
                      const struct MPI_ABI_Comm *parent, struct MPI_ABI_Comm **out, int *exhausted)
{
    uint32_t context_id;
    *out = NULL;
    int rc = hashi_context_agree_inter(agree, leader, link, hidden != NULL, &context_id, exhausted);
    if (rc != MPI_SUCCESS || !hidden) {
        if (hidden)
            hashi_comm_release(hidden);
        return rc;
    }
    struct MPI_ABI_Comm *c = hashi_comm_new(hidden->group, context_id, parent);
    if (!c) {
        hashi_context_put(context_id);
        hashi_comm_release(hidden);
        return MPI_ERR_NO_MEM;
    }
    hashi_inter_attach(c, hidden, remote);
    *out = c;
    return MPI_SUCCESS;
}

void hashi_inter_attach(struct MPI_ABI_Comm *c, struct MPI_ABI_Comm *local, struct MPI_ABI_Group *remote)
{
    hashi_group_retain(remote);
    c->remote_group = remote;
    c->peer_size = remote->size;
    c->world_ranks = remote->world_ranks;
    c->local_comm = local;
}

/* An error raised on communicator h, or on no object for MPI_COMM_NULL
 * (MPI_Intercomm_create_from_groups has no communicator argument). */
#define raise_on(func, h, code, ...)                                                                 \
    hashi_err_raise((func), (h) == MPI_COMM_NULL ? HASHI_OBJ_NONE : HASHI_OBJ_COMM,                 \
                    (h) == MPI_COMM_NULL ? NULL : (const void *)(h), (code), __VA_ARGS__)

/* The error of a failed creation, raised on `h`. */
static int creation_error(const char *func, MPI_Comm h, int rc, int exhausted)
{
    if (exhausted)
        return raise_on(func, h, MPI_ERR_OTHER,
                              "all %u communicator context ids are in use by some member of the two groups",
                              hashi_context_ids());
    return raise_on(func, h, rc, "%s",
                    rc == MPI_ERR_NO_MEM ? "out of memory"
                                               : "setting up the intercommunicator with the other group failed");
}

/* The rest of both creation calls, once the hidden local communicator
 * exists: groups, overlap check, id. */
static int inter_finish_create(const char *func, MPI_Comm errh, struct MPI_ABI_Comm *local, int leader,
                               const struct hashi_leader_link *link, const struct MPI_ABI_Comm *parent,
                               struct MPI_ABI_Comm **out)
{
    struct MPI_ABI_Group *remote;
    int exhausted = 0;
    int rc = exchange_groups(local, leader, link, &remote);
    if (rc != MPI_SUCCESS) {
        hashi_comm_release(local);
        return creation_error(func, errh, rc, 0);
    }
    /* Both sides see the same two groups: both fail alike. */
    if (groups_overlap(local->group, remote, &rc) || rc != MPI_SUCCESS) {
        hashi_comm_release(local);
        hashi_group_release(remote);
        if (rc != MPI_SUCCESS)
            return creation_error(func, errh, rc, 0);
        return raise_on(func, errh, MPI_ERR_GROUP,
                              "the local and remote groups of an intercommunicator must be disjoint "
                              "(the leaders' groups share a process)");
    }
    rc = inter_make(local, leader, link, local, remote, parent, out, &exhausted);
    hashi_group_release(remote);
    return rc == MPI_SUCCESS ? MPI_SUCCESS : creation_error(func, errh, rc, exhausted);
}

int hashi_impl_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader,
                                int tag, MPI_Comm *newintercomm)
{
    static const char func[] = "MPI_Intercomm_create";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *local = hashi_comm_get(local_comm);
    if (!local)
        return hashi_err_invalid_comm(func, local_comm, "local_comm");
    if (hashi_comm_is_inter(local))
        return hashi_err_comm(func, local_comm, MPI_ERR_COMM, "local_comm is an intercommunicator");
    if (!newintercomm)
        return hashi_err_comm(func, local_comm, MPI_ERR_ARG, "newintercomm is NULL");
    if (local_leader < 0 || local_leader >= local->size)
        return hashi_err_comm(func, local_comm, MPI_ERR_RANK, "local_leader %d is not a rank of local_comm (size %d)",
                              local_leader, local->size);
    if (tag < 0 || tag > hashi_p2p_tag_ub())
        return hashi_err_comm(func, local_comm, MPI_ERR_TAG, "tag %d is not in 0..MPI_TAG_UB (%d)", tag,
                              hashi_p2p_tag_ub());
    *newintercomm = MPI_COMM_NULL;
    /* peer_comm and remote_leader are significant at the local leader only. */
    struct hashi_leader_link link = { 0 };
    if (local->rank == local_leader) {
        struct MPI_ABI_Comm *peer = hashi_comm_get(peer_comm);
        if (!peer)
            return hashi_err_invalid_comm(func, peer_comm, "peer_comm");
        if (remote_leader < 0 || remote_leader >= peer->peer_size)
            return hashi_err_comm(func, local_comm, MPI_ERR_RANK,
                                  "remote_leader %d is not a rank of peer_comm (size %d)", remote_leader,
                                  peer->peer_size);
        /* The user's tag on peer_comm's point-to-point context (the
         * standard's way to keep it apart from the program's traffic). */
        link = (struct hashi_leader_link){ peer, peer->context_id, remote_leader, tag };
    }
    struct MPI_ABI_Comm *hidden;
    int rc = hashi_comm_create_from(func, local, 1, NULL, &hidden);
    if (rc != MPI_SUCCESS)
        return rc;
    struct MPI_ABI_Comm *c;
    rc = inter_finish_create(func, local_comm, hidden, local_leader, &link, local, &c);
    if (rc == MPI_SUCCESS)
        *newintercomm = c;
    return rc;
}

int hashi_impl_Intercomm_create_from_groups(MPI_Group local_group, int local_leader, MPI_Group remote_group,
                                            int remote_leader, const char *stringtag, MPI_Info info,
                                            MPI_Errhandler errhandler, MPI_Comm *newintercomm)
{
    static const char func[] = "MPI_Intercomm_create_from_groups";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Group *lg = hashi_group_get(local_group), *rg = hashi_group_get(remote_group);
    if (!lg || !rg)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_GROUP, "%s is not a valid group",
                               !lg ? "local_group" : "remote_group");
    if (!newintercomm)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "newintercomm is NULL");
    struct MPI_ABI_Errhandler *eh;
    struct MPI_ABI_Info *hints;
    int args_rc = hashi_comm_from_group_args(func, stringtag, info, errhandler, &eh, &hints);
    if (args_rc != MPI_SUCCESS)
        return args_rc;
    if (lg->rank == MPI_UNDEFINED)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_GROUP,
                               "the calling process is not a member of local_group");
    if (local_leader < 0 || local_leader >= lg->size)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_RANK,
                               "local_leader %d is not a rank of local_group (size %d)", local_leader, lg->size);
    if (remote_leader < 0 || remote_leader >= rg->size)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_RANK,
                               "remote_leader %d is not a rank of remote_group (size %d)", remote_leader, rg->size);
    *newintercomm = MPI_COMM_NULL;
    /* The local group agrees on its hidden communicator as
     * MPI_Comm_create_from_group does (the groups are disjoint, so the two
     * agreements on the sessions pair never meet); the leaders then talk on
     * the sessions pair's other context, addressed by world rank. */
    int tag = hashi_comm_string_tag(stringtag), exhausted = 0;
    uint32_t local_id;
    int rc = hashi_comm_agree_among(lg, HASHI_CONTEXT_SESSIONS, tag, &local_id, &exhausted);
    if (rc != MPI_SUCCESS)
        return creation_error(func, MPI_COMM_NULL, rc, exhausted);
    struct MPI_ABI_Comm *hidden = hashi_comm_new(lg, local_id, NULL);
    if (!hidden) {
        hashi_context_put(local_id);
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    }
    struct hashi_leader_link link = { &hashi_comm_world, HASHI_CONTEXT_SESSIONS,
                                      hashi_group_to_world(rg, remote_leader), tag };
    struct MPI_ABI_Comm *c;
    rc = inter_finish_create(func, MPI_COMM_NULL, hidden, local_leader, &link, NULL, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (hints && !(c->info = hashi_info_copy(hints))) {
        hashi_comm_release(c);
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    }
    hashi_errhandler_retain(eh);
    c->errhandler = eh;
    if (lg->session) {
        hashi_session_retain(c->session = lg->session);
        hashi_session_retain(hidden->session = lg->session);
    }
    *newintercomm = c;
    return MPI_SUCCESS;
}

/* The link over an existing intercommunicator: local rank 0 to remote rank 0
 * on its internal context. */
static struct hashi_leader_link inter_link(struct MPI_ABI_Comm *inter)
{
    return (struct hashi_leader_link){ inter, hashi_comm_coll_context(inter), 0, HASHI_TAG_INTER };
}

/* The intercommunicator argument of a call that needs one. */
static struct MPI_ABI_Comm *inter_arg(const char *func, MPI_Comm comm, int *rc)
{
    struct MPI_ABI_Comm *c = hashi_comm_arg(func, comm, rc);
    if (c && !hashi_comm_is_inter(c)) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_COMM, "intercomm is an intracommunicator");
        return NULL;
    }
    return c;
}

int hashi_impl_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    static const char func[] = "MPI_Intercomm_merge";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Comm *inter = inter_arg(func, intercomm, &rc);
    if (!inter)
        return rc;
    if (!newintracomm)
        return hashi_err_comm(func, intercomm, MPI_ERR_ARG, "newintracomm is NULL");
    *newintracomm = MPI_COMM_NULL;
    struct MPI_ABI_Comm *local = inter->local_comm;
    struct hashi_leader_link link = inter_link(inter);
    /* Both groups learn both leaders' `high` (the standard has every
     * member of a group pass the same). */
    int highs[2] = { high != 0, 0 };
    rc = MPI_SUCCESS;
    if (local->rank == 0)
        rc = hashi_leader_exchange(&link, &highs[0], &highs[1], sizeof highs[1]);
    if (rc == MPI_SUCCESS)
        rc = bcast_ints(local, 0, highs, 2);
    if (rc != MPI_SUCCESS)
        return creation_error(func, intercomm, rc, 0);
    /* The group that said false first; when both said the same, the group
     * whose first member has the lower world rank (both sides know both). */
    struct MPI_ABI_Group *lg = inter->group, *rg = inter->remote_group;
    int local_first = highs[0] != highs[1] ? !highs[0]
                                           : hashi_group_to_world(lg, 0) < hashi_group_to_world(rg, 0);
    int n = lg->size + rg->size;
    int *world = malloc((size_t)n * sizeof *world);
    if (!world)
        return hashi_err_comm(func, intercomm, MPI_ERR_NO_MEM, "out of memory");
    const struct MPI_ABI_Group *first = local_first ? lg : rg, *second = local_first ? rg : lg;
    for (int i = 0; i < first->size; i++)
        world[i] = hashi_group_to_world(first, i);
    for (int i = 0; i < second->size; i++)
        world[first->size + i] = hashi_group_to_world(second, i);
    uint32_t context_id;
    int exhausted = 0;
    rc = hashi_context_agree_inter(local, 0, &link, 1, &context_id, &exhausted);
    if (rc != MPI_SUCCESS) {
        free(world);
        return creation_error(func, intercomm, rc, exhausted);
    }
    struct MPI_ABI_Group *g = hashi_group_from_world_ranks(n, world);
    struct MPI_ABI_Comm *c = g ? hashi_comm_new(g, context_id, inter) : NULL;
    if (g)
        hashi_group_release(g);
    if (!c) {
        hashi_context_put(context_id);
        return hashi_err_comm(func, intercomm, MPI_ERR_NO_MEM, "out of memory");
    }
    if (inter->session)
        hashi_session_retain(c->session = inter->session);
    *newintracomm = c;
    return MPI_SUCCESS;
}

int hashi_inter_dup_finish(const char *func, struct MPI_ABI_Comm *parent, struct MPI_ABI_Comm *c)
{
    MPI_Comm h = hashi_comm_handle(parent);
    struct MPI_ABI_Comm *hidden;
    int rc = hashi_comm_create_from(func, parent->local_comm, 1, NULL, &hidden);
    if (rc != MPI_SUCCESS)
        return rc;
    struct hashi_leader_link link = inter_link(parent);
    int exhausted = 0;
    rc = hashi_context_agree_inter(parent->local_comm, 0, &link, 1, &c->context_id, &exhausted);
    if (rc != MPI_SUCCESS) {
        hashi_comm_release(hidden);
        return creation_error(func, h, rc, exhausted);
    }
    hashi_inter_attach(c, hidden, parent->remote_group);
    return MPI_SUCCESS;
}

/* ---- split ---- */

struct inter_split_entry {
    int color, key;
};

/* The members of one side with `color`, by key then rank: their world ranks
 * (malloc'd, *count of them; NULL with *count 0 when none). */
static int *split_side(const struct inter_split_entry *e, const struct MPI_ABI_Group *g, int color, int *count)
{
    int n = g->size, k = 0;
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    *count = 0;
    if (!order)
        return NULL;
    for (int i = 0; i < n; i++)
        if (e[i].color == color)
            order[k++] = i;
    /* Insertion sort by (key, rank): the groups are small, stable by rank. */
    for (int i = 1; i < k; i++) {
        int v = order[i], j = i;
        while (j > 0 && e[order[j - 1]].key > e[v].key)
            order[j] = order[j - 1], j--;
        order[j] = v;
    }
    for (int i = 0; i < k; i++)
        order[i] = hashi_group_to_world(g, order[i]);
    *count = k;
    return order;
}

int hashi_inter_split(const char *func, struct MPI_ABI_Comm *parent, int color, int key, struct MPI_ABI_Comm **out)
{
    MPI_Comm h = hashi_comm_handle(parent);
    struct MPI_ABI_Comm *local = parent->local_comm;
    int ln = parent->size, rn = parent->peer_size, rc = MPI_SUCCESS;
    *out = NULL;
    struct inter_split_entry *mine = calloc((size_t)ln, sizeof *mine), *theirs = calloc((size_t)rn, sizeof *theirs);
    if (!mine || !theirs) {
        free(mine);
        free(theirs);
        return hashi_err_comm(func, h, MPI_ERR_NO_MEM, "out of memory");
    }
    /* Every member's (color, key) on both sides: gathered locally, swapped
     * by the leaders, broadcast. */
    mine[local->rank] = (struct inter_split_entry){ color, key };
    rc = hashi_comm_allgather_in_order(local, HASHI_TAG_SPLIT, mine, sizeof *mine);
    struct hashi_leader_link link = inter_link(parent);
    if (rc == MPI_SUCCESS && local->rank == 0) {
        struct MPI_ABI_Request *reqs[2];
        rc = hashi_isend_internal(mine, (MPI_Count)ln * 2, MPI_INT, 0, link.tag, parent, link.context, &reqs[0]);
        if (rc == MPI_SUCCESS) {
            rc = hashi_irecv_internal(theirs, (MPI_Count)rn * 2, MPI_INT, 0, link.tag, parent, link.context, &reqs[1]);
            rc = rc == MPI_SUCCESS ? hashi_waitall_internal(2, reqs) : hashi_wait_internal(reqs[0], MPI_STATUS_IGNORE);
        }
    }
    if (rc == MPI_SUCCESS)
        rc = bcast_ints(local, 0, (int *)theirs, rn * 2);
    if (rc != MPI_SUCCESS) {
        free(mine);
        free(theirs);
        return hashi_err_comm(func, h, rc, "exchanging colors and keys with the other members failed");
    }
    int lcount = 0, rcount = 0;
    int *lworld = NULL, *rworld = NULL;
    int member = 0;
    if (color != MPI_UNDEFINED) {
        lworld = split_side(mine, parent->group, color, &lcount);
        rworld = split_side(theirs, parent->remote_group, color, &rcount);
        if (!lworld || !rworld)
            rc = MPI_ERR_NO_MEM;
        member = rc == MPI_SUCCESS && rcount > 0; /* a colour only this side has: MPI_COMM_NULL */
    }
    free(mine);
    free(theirs);
    struct MPI_ABI_Group *lgroup = NULL, *rgroup = NULL;
    if (member) {
        lgroup = hashi_group_from_world_ranks(lcount, lworld);
        rgroup = hashi_group_from_world_ranks(rcount, rworld);
        lworld = rworld = NULL;
        if (!lgroup || !rgroup)
            member = 0, rc = MPI_ERR_NO_MEM;
    }
    free(lworld);
    free(rworld);
    /* Everybody takes part in both agreements (the hidden local
     * communicators', then the pieces' common id): the pieces are
     * disjoint, so they can all take the same ids. */
    struct MPI_ABI_Comm *hidden = NULL;
    int rc2 = hashi_comm_create_from(func, local, member, lgroup, &hidden);
    if (rc2 == MPI_SUCCESS) {
        int exhausted = 0;
        rc2 = inter_make(local, 0, &link, hidden, rgroup, parent, out, &exhausted);
        if (rc2 != MPI_SUCCESS)
            rc2 = creation_error(func, h, rc2, exhausted);
    }
    if (lgroup)
        hashi_group_release(lgroup);
    if (rgroup)
        hashi_group_release(rgroup);
    if (rc2 != MPI_SUCCESS)
        return rc2;
    if (rc != MPI_SUCCESS) {
        hashi_comm_release(*out);
        *out = NULL;
        return hashi_err_comm(func, h, rc, "out of memory");
    }
    if (*out && parent->session)
        hashi_session_retain((*out)->session = parent->session);
    return MPI_SUCCESS;
}
