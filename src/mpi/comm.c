/*
 * Communicators: MPI_COMM_WORLD and MPI_COMM_SELF, creation (dup, idup,
 * split, split_type, create, create_group) with context ids agreed over the
 * parent (contextid.c), freeing by reference count, comparison, names,
 * hints, the predefined attributes and the generic barrier. Design and
 * measurements: docs/communicators.md.
 */
#include "mpi/attr.h"
#include "mpi/coll/coll.h"
#include "mpi/comm.h"
#include "mpi/handles.h"
#include "mpi/info.h"
#include "mpi/p2p.h"
#include "mpi/topo.h"
#include "runtime/rt.h"

#include <hwloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int hashi_comm_allgather_in_order(struct MPI_ABI_Comm *c, int tag, void *out, size_t block)
{
    int n = c->size;
    unsigned char *bytes = out, *rotated = malloc((size_t)n * block);
    if (!rotated)
        return MPI_ERR_NO_MEM;
    memcpy(rotated, bytes + (size_t)c->rank * block, block);
    int rc = allgather_bruck(c, tag, rotated, block);
    /* rotated[j] is rank (rank + j) % n's block. */
    for (int j = 0; rc == MPI_SUCCESS && j < n; j++)
        memcpy(bytes + (size_t)((c->rank + j) % n) * block, rotated + (size_t)j * block, block);
    free(rotated);
    return rc;
}

/* The error raised by the calls that do not take an intercommunicator. */
static int no_inter(const char *func, MPI_Comm comm, const char *argname)
{
    return hashi_err_comm(func, comm, MPI_ERR_COMM, "%s is an intercommunicator; %s takes an intracommunicator",
                          argname, func);
}

/* ---- communicator objects ---- */

/* A stand-in for MPI_Comm_create_group's agreement among the group's
 * members: it borrows the parent's context and owns none (see comm_release). */
#define HASHI_COMM_BORROWED_MAGIC 0x434f4d42u

void hashi_comm_destroy(struct MPI_ABI_Comm *c)
{
    if (c->magic == HASHI_COMM_BORROWED_MAGIC) {
        hashi_coll_comm_free(c);   /* whatever the agreement's collectives kept */
        hashi_group_release(c->group);
        free(c);
        return;
    }
    /* The last pending operation is done: nothing can match this context any more. */
    hashi_p2p_comm_destroyed(c);
    hashi_coll_comm_free(c);
    hashi_handle_forget(c);
    /* Not an idup that failed before it got its id, nor a sub-communicator. */
    if (c->magic == HASHI_COMM_MAGIC && !c->context_borrowed)
        hashi_context_put(c->context_id);
    hashi_attr_discard(&c->attributes); /* only left when creation failed half way */
    hashi_topo_free(c->topology);
    hashi_info_destroy(c->info);
    hashi_group_release(c->group);
    if (c->remote_group) {
        hashi_group_release(c->remote_group);
        hashi_comm_release(c->local_comm);
    }
    hashi_errhandler_release(c->errhandler);
    if (c->session)
        hashi_session_release(c->session);
    c->magic = 0; /* a stale handle used later fails the magic check (most of the time) */
    free(c);
}

/* A communicator object over `group` (retained), inheriting the parent's
 * error handler (MPI: new communicators do) and session (NULL parent:
 * neither). The name is not inherited; attributes, topology and hints are
 * the callers' business. */
struct MPI_ABI_Comm *hashi_comm_new(struct MPI_ABI_Group *group, uint32_t context_id,
                                    const struct MPI_ABI_Comm *parent)
{
    struct MPI_ABI_Errhandler *errhandler = parent ? parent->errhandler : NULL;
    struct MPI_ABI_Comm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->magic = HASHI_COMM_MAGIC;
    c->rank = group->rank;
    c->size = c->peer_size = group->size;
    c->context_id = context_id;
    hashi_group_retain(group);
    c->group = group;
    c->world_ranks = group->world_ranks;
    if (errhandler)
        hashi_errhandler_retain(errhandler);
    c->errhandler = errhandler;
    if (parent && parent->session)
        hashi_session_retain(c->session = parent->session);
    atomic_init(&c->refcount, 1);
    return c;
}

struct MPI_ABI_Comm *hashi_comm_arg(const char *func, MPI_Comm comm, int *rc)
{
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    *rc = c ? MPI_SUCCESS : hashi_err_invalid_comm(func, comm, "comm");
    return c;
}

int hashi_err_invalid_comm(const char *func, MPI_Comm h, const char *argname)
{
    return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_COMM,
                           h == MPI_COMM_NULL ? "%s is MPI_COMM_NULL" : "%s is not a valid communicator", argname);
}

/* The start of the calls that ask a communicator something: MPI initialized,
 * comm valid, the pointer argument `argname` (arg) not NULL. The
 * communicator, or NULL with the raised error in *rc. */
static struct MPI_ABI_Comm *comm_query(const char *func, MPI_Comm comm, const void *arg, const char *argname, int *rc)
{
    if (hashi_init_state != HASHI_STATE_INITIALIZED) {
        *rc = hashi_err_not_initialized(func);
        return NULL;
    }
    struct MPI_ABI_Comm *c = hashi_comm_arg(func, comm, rc);
    if (c && !arg)
        *rc = hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", argname);
    return arg ? c : NULL;
}

/* The error of a failed context id agreement, raised on the parent. */
static int agreement_error(const char *func, struct MPI_ABI_Comm *parent, int rc, int exhausted)
{
    if (exhausted)
        return hashi_err_comm(func, hashi_comm_handle(parent), MPI_ERR_OTHER,
                              "all %u communicator context ids are in use by some member of the communicator "
                              "(free communicators that are no longer needed)", hashi_context_ids());
    return hashi_err_comm(func, hashi_comm_handle(parent), rc,
                          "agreeing on a context id with the other members failed");
}

int hashi_comm_create_from(const char *func, struct MPI_ABI_Comm *parent, int member, struct MPI_ABI_Group *group,
                           struct MPI_ABI_Comm **out)
{
    uint32_t context_id;
    int exhausted = 0;
    *out = NULL;
    int rc = hashi_context_agree(parent, member, -1, &context_id, &exhausted);
    if (rc != MPI_SUCCESS)
        return agreement_error(func, parent, rc, exhausted);
    if (!member)
        return MPI_SUCCESS;
    struct MPI_ABI_Comm *c = hashi_comm_new(group ? group : parent->group, context_id, parent);
    if (!c) {
        hashi_context_put(context_id);
        return hashi_err_comm(func, hashi_comm_handle(parent), MPI_ERR_NO_MEM, "out of memory");
    }
    *out = c;
    return MPI_SUCCESS;
}

uint32_t hashi_comm_sub_context(const struct MPI_ABI_Comm *parent, int which)
{
    if (hashi_job.num_nodes <= 1 || parent == &hashi_comm_self || parent->context_borrowed)
        return UINT32_MAX;
    uint32_t first = parent == &hashi_comm_world ? HASHI_CONTEXT_WORLD_SUB : parent->context_id + 2;
    return first + 2u * (uint32_t)which;
}

struct MPI_ABI_Comm *hashi_comm_new_sub(struct MPI_ABI_Comm *parent, int which, struct MPI_ABI_Group *group)
{
    uint32_t context_id = hashi_comm_sub_context(parent, which);
    if (context_id == UINT32_MAX)
        return NULL;
    struct MPI_ABI_Comm *c = hashi_comm_new(group, context_id, parent);
    if (c)
        c->context_borrowed = 1;
    return c;
}

/* ---- set-up and tear-down ---- */

static int attr_universe_size, attr_appnum;  /* MPI_UNIVERSE_SIZE, MPI_APPNUM: fixed at MPI_Init */

void hashi_comms_init(void)
{
    hashi_groups_init();
    hashi_context_pool_init(hashi_job.num_nodes > 1);

    hashi_comm_world.context_id = HASHI_CONTEXT_WORLD;
    hashi_comm_world.group = &hashi_group_world;
    hashi_comm_world.world_ranks = NULL;
    hashi_comm_world.rank = hashi_group_world.rank;
    hashi_comm_world.size = hashi_comm_world.peer_size = hashi_group_world.size;

    hashi_comm_self.context_id = HASHI_CONTEXT_SELF;
    hashi_comm_self.group = &hashi_group_self;
    hashi_comm_self.world_ranks = hashi_group_self.world_ranks;
    hashi_comm_self.rank = 0;
    hashi_comm_self.size = hashi_comm_self.peer_size = 1;

    attr_universe_size = hashi_job.universe_size;
    attr_appnum = hashi_job.appnum;
}

void hashi_comms_finalize_attributes(void)
{
    /* MPI_COMM_SELF first, newest attribute first: the standard's order, so
     * libraries can hook MPI_Finalize. A failing callback stops nothing
     * here: MPI_Finalize goes on. */
    struct MPI_ABI_Comm *predefined[] = { &hashi_comm_self, &hashi_comm_world };
    for (size_t i = 0; i < sizeof predefined / sizeof *predefined; i++) {
        if (hashi_attr_delete_all(HASHI_ATTR_COMM, hashi_comm_handle(predefined[i]), &predefined[i]->attributes)
            != MPI_SUCCESS)
            hashi_attr_discard(&predefined[i]->attributes);
    }
}

void hashi_comms_finalize(void)
{
    /* Communicators the application did not free are its leak; their memory
     * goes with the process. The predefined ones drop their handlers (a user
     * handler set on them is released) and hints. */
    struct MPI_ABI_Comm *predefined[] = { &hashi_comm_self, &hashi_comm_world };
    for (size_t i = 0; i < sizeof predefined / sizeof *predefined; i++) {
        hashi_errhandler_release(predefined[i]->errhandler);
        predefined[i]->errhandler = NULL;
        hashi_coll_comm_free(predefined[i]);
        hashi_info_destroy(predefined[i]->info);
        predefined[i]->info = NULL;
    }
    hashi_context_pool_finalize();
}

/* ---- hints ---- */

/* The hints the standard defines for communicators, with their defaults:
 * Comm_get_info reports them even when never set. Hashi accepts them and
 * does not rely on them (every assertion is allowed to be ignored). */
static const char *const comm_hint_defaults[][2] = {
    { "mpi_assert_no_any_tag", "false" },
    { "mpi_assert_no_any_source", "false" },
    { "mpi_assert_exact_length", "false" },
    { "mpi_assert_allow_overtaking", "false" },
};

/* Hints for a new communicator: `info` (an MPI_Info argument, replacing the
 * parent's: dup_with_info) or else the parent's (dup). */
static int comm_take_hints(struct MPI_ABI_Comm *c, const struct MPI_ABI_Info *parent_hints,
                           const struct MPI_ABI_Info *info, int use_info)
{
    const struct MPI_ABI_Info *from = use_info ? info : parent_hints;
    if (!from)
        return MPI_SUCCESS;
    c->info = hashi_info_copy(from);
    return c->info ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* An info argument: MPI_INFO_NULL (NULL, ok) or a valid object; -1 if invalid. */
static int info_arg(MPI_Info info, struct MPI_ABI_Info **obj)
{
    *obj = NULL;
    if (info == MPI_INFO_NULL)
        return 0;
    *obj = hashi_info_get(info);
    return *obj ? 0 : -1;
}

int hashi_impl_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    static const char func[] = "MPI_Comm_set_info";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return hashi_err_invalid_comm(func, comm, "comm");
    struct MPI_ABI_Info *obj;
    if (info_arg(info, &obj) != 0)
        return hashi_err_comm(func, comm, MPI_ERR_INFO, "info is not a valid info object");
    if (!obj)
        return MPI_SUCCESS;
    /* Keys set before and absent from info keep their values. */
    if (!c->info && !(c->info = hashi_info_copy(NULL)))
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    if (hashi_info_merge(c->info, obj) != 0)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    return MPI_SUCCESS;
}

int hashi_impl_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
    static const char func[] = "MPI_Comm_get_info";
    int rc;
    struct MPI_ABI_Comm *c = comm_query(func, comm, info_used, "info_used", &rc);
    if (!c)
        return rc;
    struct MPI_ABI_Info *out = hashi_info_copy(NULL);
    int failed = !out;
    for (size_t i = 0; !failed && i < sizeof comm_hint_defaults / sizeof *comm_hint_defaults; i++)
        failed = hashi_info_put(out, comm_hint_defaults[i][0], comm_hint_defaults[i][1]) != 0;
    if (!failed)
        failed = hashi_info_merge(out, c->info) != 0;
    if (failed) {
        hashi_info_destroy(out);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    *info_used = out;
    return MPI_SUCCESS;
}

/* ---- dup and idup ---- */

/*
 * What a duplicate inherits, set up before the agreement: the group (shared),
 * the error handler, the topology, the hints, and the attributes whose copy
 * callbacks ask for it. The object has no context id yet; for idup its magic
 * stays 0 until the agreement completes (using it earlier is erroneous and
 * gets MPI_ERR_COMM).
 */
static int dup_prepare(const char *func, struct MPI_ABI_Comm *parent, MPI_Comm parent_handle,
                       const struct MPI_ABI_Info *info, int use_info, struct MPI_ABI_Comm **out)
{
    struct MPI_ABI_Comm *c = hashi_comm_new(parent->group, 0, parent);
    if (!c)
        return hashi_err_comm(func, parent_handle, MPI_ERR_NO_MEM, "out of memory");
    c->magic = 0;
    int rc = comm_take_hints(c, parent->info, info, use_info);
    if (rc == MPI_SUCCESS && parent->topology) {
        c->topology = hashi_topo_dup(parent->topology, &rc);
        if (!c->topology && rc == MPI_SUCCESS)
            rc = MPI_ERR_NO_MEM;
    }
    if (rc != MPI_SUCCESS) {
        hashi_comm_release(c);
        return hashi_err_comm(func, parent_handle, rc, "out of memory");
    }
    rc = hashi_attr_copy_all(HASHI_ATTR_COMM, parent_handle, &parent->attributes, (MPI_Comm)c, &c->attributes);
    if (rc != MPI_SUCCESS) {
        hashi_comm_release(c);
        return hashi_err_comm(func, parent_handle, rc, "an attribute copy callback failed (error %d)", rc);
    }
    *out = c;
    return MPI_SUCCESS;
}

/* The arguments of every dup: the parent, and the info object when the call
 * takes one (info_obj NULL otherwise, or for MPI_INFO_NULL). */
static struct MPI_ABI_Comm *dup_args(const char *func, MPI_Comm comm, MPI_Info info, int use_info,
                                     struct MPI_ABI_Info **info_obj, int *rc)
{
    struct MPI_ABI_Comm *parent = hashi_comm_get(comm);
    *info_obj = NULL;
    if (!parent) {
        *rc = hashi_err_invalid_comm(func, comm, "comm");
        return NULL;
    }
    if (use_info && info_arg(info, info_obj) != 0) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_INFO, "info is not a valid info object");
        return NULL;
    }
    return parent;
}

static int comm_dup(const char *func, MPI_Comm comm, MPI_Info info, int use_info, MPI_Comm *newcomm)
{
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Info *info_obj;
    int rc;
    struct MPI_ABI_Comm *parent = dup_args(func, comm, info, use_info, &info_obj, &rc);
    if (!parent)
        return rc;
    if (!newcomm)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newcomm is NULL");
    *newcomm = MPI_COMM_NULL;
    struct MPI_ABI_Comm *c;
    rc = dup_prepare(func, parent, comm, info_obj, use_info, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    int exhausted = 0;
    if (hashi_comm_is_inter(parent)) {
        rc = hashi_inter_dup_finish(func, parent, c);
        if (rc != MPI_SUCCESS) {
            hashi_attr_discard(&c->attributes);
            hashi_comm_release(c);
            return rc;
        }
    } else if ((rc = hashi_context_agree(parent, 1, -1, &c->context_id, &exhausted)) != MPI_SUCCESS) {
        hashi_attr_discard(&c->attributes);
        hashi_comm_release(c);
        return agreement_error(func, parent, rc, exhausted);
    }
    c->magic = HASHI_COMM_MAGIC;
    *newcomm = c;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    return comm_dup("MPI_Comm_dup", comm, MPI_INFO_NULL, 0, newcomm);
}

int hashi_impl_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    return comm_dup("MPI_Comm_dup_with_info", comm, info, 1, newcomm);
}

/* MPI_Comm_idup's request: the new object, and where the user wants its handle. */
struct idup {
    struct MPI_ABI_Request *req;
    struct MPI_ABI_Comm *comm;
    MPI_Comm *newcomm;
};

static void idup_done(void *arg, int rc, int exhausted, uint32_t context_id)
{
    struct idup *d = arg;
    struct MPI_ABI_Request *req = d->req;
    (void)exhausted; /* reported as MPI_ERR_OTHER in the status */
    if (rc == MPI_SUCCESS) {
        d->comm->context_id = context_id;
        d->comm->magic = HASHI_COMM_MAGIC;
    } else {
        /* The handle the user holds must not name a half-made communicator. */
        *d->newcomm = MPI_COMM_NULL;
        hashi_attr_discard(&d->comm->attributes);
        hashi_comm_release(d->comm);
        req->status.MPI_ERROR = rc;
    }
    free(d);
    req->extra = NULL;
    hashi_request_complete(req);
}

static int comm_idup(const char *func, MPI_Comm comm, MPI_Info info, int use_info, MPI_Comm *newcomm,
                     MPI_Request *request)
{
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Info *info_obj;
    int rc;
    struct MPI_ABI_Comm *parent = dup_args(func, comm, info, use_info, &info_obj, &rc);
    if (!parent)
        return rc;
    if (!newcomm || !request)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", !newcomm ? "newcomm" : "request");
    struct idup *d = calloc(1, sizeof *d);
    struct MPI_ABI_Request *req = d ? hashi_request_alloc(HASHI_REQ_COLL) : NULL;
    if (!req) {
        free(d);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    rc = dup_prepare(func, parent, comm, info_obj, use_info, &d->comm);
    if (rc != MPI_SUCCESS) {
        free(d);
        hashi_request_free(req);
        return rc;
    }
    hashi_comm_retain(parent);
    req->comm = parent;
    req->extra = d;
    d->req = req;
    d->newcomm = newcomm;
    *newcomm = d->comm;
    *request = req;
    hashi_request_retain(req); /* the operation's reference, dropped at completion */
    if (hashi_comm_is_inter(parent)) {
        /* An intercommunicator's id is agreed by both groups in a blocking
         * exchange (intercomm.c): the request is complete on return. */
        rc = hashi_inter_dup_finish(func, parent, d->comm);
        idup_done(d, rc, 0, d->comm->context_id);
        return MPI_SUCCESS;
    }
    rc = hashi_context_agree_start(parent, 1, -1, idup_done, d);
    if (rc != MPI_SUCCESS) {
        hashi_attr_discard(&d->comm->attributes);
        hashi_comm_release(d->comm);
        free(d);
        *newcomm = MPI_COMM_NULL;
        *request = MPI_REQUEST_NULL;
        req->extra = NULL;
        hashi_request_complete(req);
        hashi_request_free(req);
        return hashi_err_comm(func, comm, rc, "starting the context id agreement failed");
    }
    return MPI_SUCCESS;
}

int hashi_impl_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    return comm_idup("MPI_Comm_idup", comm, MPI_INFO_NULL, 0, newcomm, request);
}

int hashi_impl_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request)
{
    return comm_idup("MPI_Comm_idup_with_info", comm, info, 1, newcomm, request);
}

/* ---- split ---- */

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

/*
 * The second half of a split, once every member's (color, key) is known:
 * entries[j] is parent rank (rank + j) % n's (the Bruck allgather's order).
 * Takes part in the agreement whatever this process's color.
 */
static int split_finish(const char *func, struct MPI_ABI_Comm *parent, const struct split_entry *entries,
                        int color, struct MPI_ABI_Comm **out)
{
    int n = parent->size, count = 0;
    *out = NULL;
    struct split_member *members = malloc((size_t)n * sizeof *members);
    int *world = malloc((size_t)n * sizeof *world);
    if (!members || !world) {
        free(members);
        free(world);
        return hashi_err_comm(func, hashi_comm_handle(parent), MPI_ERR_NO_MEM, "out of memory");
    }
    if (color != MPI_UNDEFINED) {
        for (int j = 0; j < n; j++)
            if (entries[j].color == color)
                members[count++] = (struct split_member){ entries[j].key, (parent->rank + j) % n };
        qsort(members, (size_t)count, sizeof *members, split_member_order);
    }
    for (int i = 0; i < count; i++)
        world[i] = hashi_comm_to_world(parent, members[i].parent_rank);
    free(members);
    struct MPI_ABI_Group *group = NULL;
    if (color != MPI_UNDEFINED && !(group = hashi_group_from_world_ranks(count, world))) {
        /* Still take part in the agreement: the others wait for it. */
        struct MPI_ABI_Comm *unused;
        hashi_comm_create_from(func, parent, 0, NULL, &unused);
        return hashi_err_comm(func, hashi_comm_handle(parent), MPI_ERR_NO_MEM, "out of memory");
    }
    if (color == MPI_UNDEFINED)
        free(world);
    int rc = hashi_comm_create_from(func, parent, color != MPI_UNDEFINED, group, out);
    if (group)
        hashi_group_release(group); /* the communicator holds its own reference */
    return rc;
}

int hashi_comm_split(const char *func, struct MPI_ABI_Comm *parent, int color, int key, struct MPI_ABI_Comm **out)
{
    struct split_entry *entries = malloc((size_t)parent->size * sizeof *entries);
    *out = NULL;
    if (!entries)
        return hashi_err_comm(func, hashi_comm_handle(parent), MPI_ERR_NO_MEM, "out of memory");
    entries[0] = (struct split_entry){ color, key };
    int rc = allgather_bruck(parent, HASHI_TAG_SPLIT, entries, sizeof *entries);
    if (rc != MPI_SUCCESS) {
        free(entries);
        return hashi_err_comm(func, hashi_comm_handle(parent), rc,
                              "exchanging colors and keys with the other members failed");
    }
    rc = split_finish(func, parent, entries, color, out);
    free(entries);
    return rc;
}

int hashi_impl_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Comm_split";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *parent = hashi_comm_get(comm);
    if (!parent)
        return hashi_err_invalid_comm(func, comm, "comm");
    if (!newcomm)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newcomm is NULL");
    if (color < 0 && color != MPI_UNDEFINED)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "color %d is negative (and not MPI_UNDEFINED)", color);
    *newcomm = MPI_COMM_NULL;
    struct MPI_ABI_Comm *c;
    int rc = hashi_comm_is_inter(parent) ? hashi_inter_split(func, parent, color, key, &c)
                                         : hashi_comm_split(func, parent, color, key, &c);
    if (rc == MPI_SUCCESS && c)
        *newcomm = c;
    return rc;
}

/* ---- split_type ---- */

/*
 * Hardware levels for MPI_COMM_TYPE_HW_GUIDED / HW_UNGUIDED: the node
 * ("mpi_shared_memory"), then hwloc's object types from the largest down. A
 * process belongs to the object of a level whose CPU set contains its whole
 * binding; an unbound process belongs to no object below the node.
 */
static const char *const hw_levels[] = { "mpi_shared_memory", "Package", "NUMANode", "L3Cache", "L2Cache",
                                         "L1Cache", "Core", "PU" };
#define HW_LEVELS ((int)(sizeof hw_levels / sizeof *hw_levels))

static hwloc_topology_t hw_topology;
static int hw_topology_state; /* 0 not loaded, 1 loaded, -1 failed */

/* This process's colour at a hardware level, MPI_UNDEFINED when it is not
 * inside one object of that level. Colours of different nodes differ. */
static int hw_color(const char *level)
{
    if (strcmp(level, "mpi_shared_memory") == 0)
        return hashi_job.node_id;
    hwloc_obj_type_t type;
    if (hwloc_type_sscanf(level, &type, NULL, 0) != 0)
        return MPI_UNDEFINED;
    if (hw_topology_state == 0) {
        hw_topology_state = -1;
        if (hwloc_topology_init(&hw_topology) == 0) {
            if (hwloc_topology_load(hw_topology) == 0)
                hw_topology_state = 1;
            else
                hwloc_topology_destroy(hw_topology);
        }
    }
    if (hw_topology_state != 1)
        return MPI_UNDEFINED;
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    int color = MPI_UNDEFINED;
    if (bound && hwloc_get_cpubind(hw_topology, bound, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(bound)) {
        int n = hwloc_get_nbobjs_by_type(hw_topology, type);
        for (int i = 0; i < n && i < 0x8000; i++) {
            hwloc_obj_t obj = hwloc_get_obj_by_type(hw_topology, type, (unsigned)i);
            if (obj && obj->cpuset && hwloc_bitmap_isincluded(bound, obj->cpuset)) {
                color = (hashi_job.node_id & 0x7fff) << 16 | i;
                break;
            }
        }
    }
    hwloc_bitmap_free(bound);
    return color;
}

/* The level a mpi_hw_resource_type value names: a level's name, or the
 * URI form MPI-4.1 recommends and MPI_Get_hw_resource_info returns
 * ("hwloc://NUMANode"); -1 if none. */
static int hw_level_named(const char *value)
{
    static const char uri[] = "hwloc://";
    if (!value)
        return -1;
    if (strncasecmp(value, uri, sizeof uri - 1) == 0)
        value += sizeof uri - 1;
    for (int l = 0; l < HW_LEVELS; l++)
        if (strcasecmp(value, hw_levels[l]) == 0)
            return l;
    return -1;
}

int hashi_impl_Get_hw_resource_info(MPI_Info *hw_info)
{
    static const char func[] = "MPI_Get_hw_resource_info";
    HASHI_CHECK_INITIALIZED(func);
    if (!hw_info)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "hw_info is NULL");
    /* One key per hwloc level this machine has: "true" when the process is
     * bound inside a single object of that level (as MPI_COMM_TYPE_HW_GUIDED
     * would place it), "false" when its binding spans several. */
    struct MPI_ABI_Info *out = hashi_info_copy(NULL);
    int ok = out != NULL;
    for (int l = 1; ok && l < HW_LEVELS; l++) {
        int color = hw_color(hw_levels[l]);
        hwloc_obj_type_t type;
        if (hw_topology_state != 1 || hwloc_type_sscanf(hw_levels[l], &type, NULL, 0) != 0
            || hwloc_get_nbobjs_by_type(hw_topology, type) <= 0)
            continue;
        char key[64];
        snprintf(key, sizeof key, "hwloc://%s", hw_levels[l]);
        ok = hashi_info_put(out, key, color == MPI_UNDEFINED ? "false" : "true") == 0;
    }
    if (!ok) {
        hashi_info_destroy(out);
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    }
    *hw_info = out;
    return MPI_SUCCESS;
}

/* The kind of split for HW_UNGUIDED: the first level, from the node down,
 * that splits the parent into strictly smaller parts, from every member's
 * colours at every level (all[j * (HW_LEVELS + 1)]: key, then colours). */
static int unguided_level(const int *all, int n)
{
    for (int level = 0; level < HW_LEVELS; level++) {
        for (int j = 0; j < n; j++) {
            int color = all[j * (HW_LEVELS + 1) + 1 + level];
            if (color == MPI_UNDEFINED)
                continue;
            int same = 0;
            for (int k = 0; k < n; k++)
                same += all[k * (HW_LEVELS + 1) + 1 + level] == color;
            if (same < n)
                return level;
        }
    }
    return -1;
}

int hashi_impl_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Comm_split_type";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *parent = hashi_comm_get(comm);
    if (!parent)
        return hashi_err_invalid_comm(func, comm, "comm");
    if (hashi_comm_is_inter(parent))
        return no_inter(func, comm, "comm");
    struct MPI_ABI_Info *info_obj;
    if (info_arg(info, &info_obj) != 0)
        return hashi_err_comm(func, comm, MPI_ERR_INFO, "info is not a valid info object");
    if (!newcomm)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newcomm is NULL");
    *newcomm = MPI_COMM_NULL;

    int n = parent->size, color, rc, level = -1;
    switch (split_type) {
    case MPI_UNDEFINED:
        color = MPI_UNDEFINED;
        break;
    case MPI_COMM_TYPE_SHARED:
        color = hashi_job.node_id;
        break;
    case MPI_COMM_TYPE_HW_GUIDED: {
        /* The level the info names; an unknown one gives MPI_COMM_NULL. */
        level = hw_level_named(hashi_info_value(info_obj, "mpi_hw_resource_type"));
        color = level < 0 ? MPI_UNDEFINED : hw_color(hw_levels[level]);
        break;
    }
    case MPI_COMM_TYPE_HW_UNGUIDED: {
        /* Every member's colour at every level, then the first level that
         * splits the parent (the same answer everywhere). */
        int *all = malloc((size_t)n * (HW_LEVELS + 1) * sizeof *all);
        struct split_entry *entries = malloc((size_t)n * sizeof *entries);
        if (!all || !entries) {
            free(all);
            free(entries);
            return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
        }
        all[0] = key;
        for (int l = 0; l < HW_LEVELS; l++)
            all[1 + l] = hw_color(hw_levels[l]);
        rc = allgather_bruck(parent, HASHI_TAG_SPLIT_TYPE, all, (HW_LEVELS + 1) * sizeof *all);
        if (rc != MPI_SUCCESS) {
            free(all);
            free(entries);
            return hashi_err_comm(func, comm, rc, "exchanging hardware locations with the other members failed");
        }
        level = unguided_level(all, n);
        for (int j = 0; j < n; j++)
            entries[j] = (struct split_entry){ level < 0 ? MPI_UNDEFINED : all[j * (HW_LEVELS + 1) + 1 + level],
                                               all[j * (HW_LEVELS + 1)] };
        color = entries[0].color;
        free(all);
        struct MPI_ABI_Comm *c;
        rc = split_finish(func, parent, entries, color, &c);
        free(entries);
        if (rc != MPI_SUCCESS || !c)
            return rc;
        *newcomm = c;
        goto hints;
    }
    case MPI_COMM_TYPE_RESOURCE_GUIDED: {
        /* A hardware level as HW_GUIDED, or a process set (MPI-4.1 7.4.2):
         * each of its instances becomes one communicator. Unknown names give
         * MPI_COMM_NULL; both keys at once is erroneous. */
        const char *hw = hashi_info_value(info_obj, "mpi_hw_resource_type");
        const char *pset = hashi_info_value(info_obj, "mpi_pset_name");
        if (hw && pset)
            return hashi_err_comm(func, comm, MPI_ERR_INFO_VALUE,
                                  "info gives both mpi_hw_resource_type and mpi_pset_name; "
                                  "MPI_COMM_TYPE_RESOURCE_GUIDED takes one of them");
        if (hw) {
            level = hw_level_named(hw);
            color = level < 0 ? MPI_UNDEFINED : hw_color(hw_levels[level]);
        } else {
            color = pset ? hashi_pset_instance(pset) : MPI_UNDEFINED;
        }
        break;
    }
    default:
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "split_type %d is not a communicator split type", split_type);
    }
    struct MPI_ABI_Comm *c;
    rc = hashi_comm_split(func, parent, color, key, &c);
    if (rc != MPI_SUCCESS || !c)
        return rc;
    *newcomm = c;
hints:
    if (level >= 0) {
        /* Which kind of resource the new communicator spans (MPI-4.0 7.4.2). */
        struct MPI_ABI_Comm *nc = *newcomm;
        if ((nc->info || (nc->info = hashi_info_copy(NULL)))
            && hashi_info_put(nc->info, "mpi_hw_resource_type", hw_levels[level]) == 0)
            return MPI_SUCCESS;
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    return MPI_SUCCESS;
}

/* ---- create, create_group ---- */

/* The communicator and group arguments of both calls: the group must be a
 * subset of the communicator's (MPI_ERR_GROUP naming the outsider). */
static int subgroup_args(const char *func, MPI_Comm comm, MPI_Group group, struct MPI_ABI_Comm **parent,
                         struct MPI_ABI_Group **g)
{
    *parent = hashi_comm_get(comm);
    if (!*parent)
        return hashi_err_invalid_comm(func, comm, "comm");
    *g = hashi_group_get(group);
    if (!*g)
        return hashi_err_comm(func, comm, MPI_ERR_GROUP,
                              group == MPI_GROUP_NULL ? "group is MPI_GROUP_NULL" : "group is not a valid group");
    struct hashi_group_index parent_members;
    if (hashi_group_index_build(&parent_members, (*parent)->group) != 0)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    int outsider = -1;
    for (int i = 0; i < (*g)->size && outsider < 0; i++)
        if (hashi_group_index_lookup(&parent_members, hashi_group_to_world(*g, i)) == MPI_UNDEFINED)
            outsider = i;
    hashi_group_index_free(&parent_members);
    if (outsider >= 0)
        return hashi_err_comm(func, comm, MPI_ERR_GROUP,
                              "rank %d of the group (MPI_COMM_WORLD rank %d) is not a member of the communicator",
                              outsider, hashi_group_to_world(*g, outsider));
    return MPI_SUCCESS;
}

int hashi_impl_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Comm_create";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *parent;
    struct MPI_ABI_Group *g;
    int rc = subgroup_args(func, comm, group, &parent, &g);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!newcomm)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newcomm is NULL");
    *newcomm = MPI_COMM_NULL;
    /* Each process may pass its own group (MPI-2.2: disjoint subgroups in one
     * call); subgroup_args checked that it is a subset of the communicator's. */
    struct MPI_ABI_Comm *c;
    if (hashi_comm_is_inter(parent)) {
        /* MPI-2.2: each side passes a subgroup of its local group; the
         * result joins the two (MPI_COMM_NULL if either is empty). A split
         * with the members' group ranks as keys gives exactly that. */
        int member = g->rank != MPI_UNDEFINED;
        rc = hashi_inter_split(func, parent, member ? 0 : MPI_UNDEFINED, member ? g->rank : 0, &c);
    } else {
        rc = hashi_comm_create_from(func, parent, g->rank != MPI_UNDEFINED, g, &c);
    }
    if (rc == MPI_SUCCESS && c)
        *newcomm = c;
    return rc;
}

/* A context id agreed among the members of g only (every caller a member),
 * on the context pair `on` with `tag` (which keeps concurrent calls apart),
 * through a stand-in communicator over the group that borrows `on`. */
int hashi_comm_agree_among(struct MPI_ABI_Group *g, uint32_t on, int tag, uint32_t *context_id, int *exhausted)
{
    struct MPI_ABI_Comm *among = hashi_comm_new(g, on, NULL);
    if (!among)
        return MPI_ERR_NO_MEM;
    among->magic = HASHI_COMM_BORROWED_MAGIC;
    int rc = hashi_context_agree(among, 1, tag, context_id, exhausted);
    hashi_comm_release(among);
    return rc;
}

/* The tag of a string tag: concurrent MPI_Comm_create_from_group calls
 * with different strings stay apart (FNV-1a, within MPI_TAG_UB). */
int hashi_comm_string_tag(const char *stringtag)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)stringtag; *p; p++)
        h = (h ^ *p) * 16777619u;
    return (int)(h % ((uint32_t)hashi_p2p_tag_ub() + 1u));
}

int hashi_comm_from_group_args(const char *func, const char *stringtag, MPI_Info info, MPI_Errhandler errhandler,
                               struct MPI_ABI_Errhandler **eh, struct MPI_ABI_Info **hints)
{
    if (!stringtag)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "stringtag is NULL");
    if (strlen(stringtag) >= MPI_MAX_STRINGTAG_LEN)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "stringtag is longer than MPI_MAX_STRINGTAG_LEN - 1 (%d) characters",
                               MPI_MAX_STRINGTAG_LEN - 1);
    *eh = hashi_errhandler_get(errhandler);
    if (!*eh || ((*eh)->kind == HASHI_EH_USER && (*eh)->obj_kind != HASHI_OBJ_COMM))
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "errhandler is not an error handler for communicators");
    *hints = NULL;
    if (info != MPI_INFO_NULL && !(*hints = hashi_info_get(info)))
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_INFO, "info is not a valid info object");
    return MPI_SUCCESS;
}

int hashi_impl_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                                      MPI_Errhandler errhandler, MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Comm_create_from_group";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Group *g = hashi_group_get(group);
    if (!g)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_GROUP,
                               group == MPI_GROUP_NULL ? "group is MPI_GROUP_NULL" : "group is not a valid group");
    if (!newcomm)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "newcomm is NULL");
    struct MPI_ABI_Errhandler *eh;
    struct MPI_ABI_Info *hints;
    int rc = hashi_comm_from_group_args(func, stringtag, info, errhandler, &eh, &hints);
    if (rc != MPI_SUCCESS)
        return rc;
    *newcomm = MPI_COMM_NULL;
    if (g->size == 0)
        return MPI_SUCCESS;   /* MPI_GROUP_EMPTY */
    if (g->rank == MPI_UNDEFINED)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_GROUP,
                               "the calling process is not a member of the group");
    /* No parent communicator: the members agree on the pair every process
     * keeps for this (HASHI_CONTEXT_SESSIONS). */
    uint32_t context_id;
    int exhausted = 0;
    rc = hashi_comm_agree_among(g, HASHI_CONTEXT_SESSIONS, hashi_comm_string_tag(stringtag), &context_id, &exhausted);
    if (rc != MPI_SUCCESS)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, exhausted ? MPI_ERR_OTHER : rc,
                               exhausted ? "all %u communicator context ids are in use by some member of the group"
                                         : "agreeing on a context id with the other members failed",
                               hashi_context_ids());
    struct MPI_ABI_Comm *c = hashi_comm_new(g, context_id, NULL);
    if (!c || comm_take_hints(c, NULL, hints, hints != NULL) != MPI_SUCCESS) {
        if (c)
            hashi_comm_release(c);
        else
            hashi_context_put(context_id);
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    }
    hashi_errhandler_retain(eh);
    c->errhandler = eh;
    /* The session the group came from (MPI_Group_from_session_pset). */
    if (g->session)
        hashi_session_retain(c->session = g->session);
    *newcomm = c;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Comm_create_group";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *parent;
    struct MPI_ABI_Group *g;
    int rc = subgroup_args(func, comm, group, &parent, &g);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!newcomm)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newcomm is NULL");
    if (hashi_comm_is_inter(parent))
        return no_inter(func, comm, "comm");
    if (tag < 0 || tag > hashi_p2p_tag_ub())
        return hashi_err_comm(func, comm, MPI_ERR_TAG, "tag %d is not in 0..MPI_TAG_UB (%d)", tag,
                              hashi_p2p_tag_ub());
    *newcomm = MPI_COMM_NULL;
    /* Only the group's members call; a process outside it is erroneous. */
    if (g->rank == MPI_UNDEFINED)
        return hashi_err_comm(func, comm, MPI_ERR_GROUP, "the calling process is not a member of the group");

    uint32_t context_id;
    int exhausted = 0;
    rc = hashi_comm_agree_among(g, parent->context_id, tag, &context_id, &exhausted);
    if (rc != MPI_SUCCESS)
        return agreement_error(func, parent, rc, exhausted);
    struct MPI_ABI_Comm *c = hashi_comm_new(g, context_id, parent);
    if (!c) {
        hashi_context_put(context_id);
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    *newcomm = c;
    return MPI_SUCCESS;
}

/* ---- free, disconnect ---- */

static int comm_only_user_ref(void *arg)
{
    return atomic_load_explicit(&((struct MPI_ABI_Comm *)arg)->refcount, memory_order_acquire) == 1;
}

static int comm_free(const char *func, MPI_Comm *comm, int wait_pending)
{
    HASHI_CHECK_INITIALIZED(func);
    if (!comm)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "comm is NULL");
    struct MPI_ABI_Comm *c = hashi_comm_get(*comm);
    if (!c)
        return hashi_err_invalid_comm(func, *comm, "*comm");
    if (hashi_comm_is_static(c))
        return hashi_err_comm(func, *comm, MPI_ERR_COMM, "%s cannot be freed",
                              c == &hashi_comm_world ? "MPI_COMM_WORLD" : "MPI_COMM_SELF");
    /* Attributes are deleted at the call (their callbacks may still use
     * the communicator); a failing callback fails the call. */
    int rc = hashi_attr_delete_all(HASHI_ATTR_COMM, *comm, &c->attributes);
    if (rc != MPI_SUCCESS)
        return hashi_err_comm(func, *comm, rc, "an attribute delete callback failed (error %d)", rc);
    if (wait_pending) {
        /* Pending operations hold references: the user's is the last one
         * when they have all completed. */
        hashi_progress_wait_until(comm_only_user_ref, c);
    }
    /* Pending operations keep their own references: they complete normally,
     * and the context id returns to the pool only after the last of them. */
    *comm = MPI_COMM_NULL;
    hashi_comm_release(c);
    return MPI_SUCCESS;
}

int hashi_impl_Comm_free(MPI_Comm *comm)
{
    return comm_free("MPI_Comm_free", comm, 0);
}

int hashi_impl_Comm_disconnect(MPI_Comm *comm)
{
    /* On an intracommunicator: MPI_Comm_free after every pending
     * communication on it has completed. */
    return comm_free("MPI_Comm_disconnect", comm, 1);
}

/* ---- inquiry ---- */

int hashi_impl_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    static const char func[] = "MPI_Comm_group";
    int rc;
    struct MPI_ABI_Comm *c = comm_query(func, comm, group, "group", &rc);
    if (!c)
        return rc;
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
        return hashi_err_invalid_comm(func, !c1 ? comm1 : comm2, !c1 ? "comm1" : "comm2");
    if (!result)
        return hashi_err_comm(func, comm1, MPI_ERR_ARG, "result is NULL");
    if (c1 == c2) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (hashi_comm_is_inter(c1) != hashi_comm_is_inter(c2)) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    int cmp = hashi_group_compare(c1->group, c2->group);
    if (cmp >= 0 && hashi_comm_is_inter(c1)) {
        /* Both groups count: the weaker of the two results. */
        int rcmp = hashi_group_compare(c1->remote_group, c2->remote_group);
        cmp = rcmp < 0 ? rcmp : cmp == MPI_UNEQUAL || rcmp == MPI_UNEQUAL ? MPI_UNEQUAL
                              : cmp == MPI_SIMILAR || rcmp == MPI_SIMILAR ? MPI_SIMILAR : MPI_IDENT;
    }
    if (cmp < 0)
        return hashi_err_comm(func, comm1, MPI_ERR_NO_MEM, "out of memory");
    /* Different communicators (contexts): the same group in order is congruent. */
    *result = cmp == MPI_IDENT ? MPI_CONGRUENT : cmp;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_test_inter(MPI_Comm comm, int *flag)
{
    static const char func[] = "MPI_Comm_test_inter";
    int rc;
    struct MPI_ABI_Comm *c = comm_query(func, comm, flag, "flag", &rc);
    if (!c)
        return rc;
    *flag = hashi_comm_is_inter(c);
    return MPI_SUCCESS;
}

/* The start of the remote group queries: an intercommunicator, arg not NULL. */
static struct MPI_ABI_Comm *inter_query(const char *func, MPI_Comm comm, const void *arg, const char *argname,
                                        int *rc)
{
    struct MPI_ABI_Comm *c = comm_query(func, comm, arg, argname, rc);
    if (c && !hashi_comm_is_inter(c)) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_COMM, "comm is an intracommunicator (it has no remote group)");
        return NULL;
    }
    return c;
}

int hashi_impl_Comm_remote_size(MPI_Comm comm, int *size)
{
    int rc;
    struct MPI_ABI_Comm *c = inter_query("MPI_Comm_remote_size", comm, size, "size", &rc);
    if (!c)
        return rc;
    *size = c->remote_group->size;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
    int rc;
    struct MPI_ABI_Comm *c = inter_query("MPI_Comm_remote_group", comm, group, "group", &rc);
    if (!c)
        return rc;
    hashi_group_retain(c->remote_group);
    *group = hashi_group_handle(c->remote_group);
    return MPI_SUCCESS;
}

int hashi_impl_Comm_get_parent(MPI_Comm *parent)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_get_parent");
    if (!parent)
        return hashi_err_raise("MPI_Comm_get_parent", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "parent is NULL");
    *parent = MPI_COMM_NULL; /* no process is started by MPI_Comm_spawn */
    return MPI_SUCCESS;
}

int hashi_impl_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    static const char func[] = "MPI_Comm_set_name";
    int rc;
    struct MPI_ABI_Comm *c = comm_query(func, comm, comm_name, "comm_name", &rc);
    if (!c)
        return rc;
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
        return hashi_err_invalid_comm(func, comm, "comm");
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

int hashi_comm_predefined_attr(int keyval, void **value, int *found)
{
    const int *v = NULL;
    switch (keyval) {
    case MPI_TAG_UB:
        attr_tag_ub = hashi_p2p_tag_ub();
        v = &attr_tag_ub;
        break;
    case MPI_HOST:
        v = &attr_host;
        break;
    case MPI_IO:
        v = &attr_io;
        break;
    case MPI_WTIME_IS_GLOBAL:
        v = &attr_wtime_is_global;
        break;
    case MPI_UNIVERSE_SIZE:
        v = attr_universe_size > 0 ? &attr_universe_size : NULL;
        break;
    case MPI_APPNUM:
        v = attr_appnum >= 0 ? &attr_appnum : NULL;
        break;
    case MPI_LASTUSEDCODE:
        atomic_store(&attr_last_used_code, hashi_err_last_used_code());
        v = (const int *)&attr_last_used_code;
        break;
    default:
        return 0;
    }
    *found = v != NULL;
    *value = (void *)v;
    return 1;
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
