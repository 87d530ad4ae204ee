/*
 * The MPI layer's objects. Public handles are pointers to the structs defined
 * here (the standard ABI declares them incomplete); predefined handles are the
 * standard's small constants (< 0x400), mapped to static objects.
 */
#ifndef HASHI_MPI_IMPL_H
#define HASHI_MPI_IMPL_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/errors.h"
#include "mpi/gen_impl.h"
#include "mpi/refcount.h"

/* Any handle value below this is one of the standard's predefined constants. */
#define HASHI_PREDEFINED_LIMIT 0x1000u
static inline int hashi_handle_is_predefined(const void *h)
{
    return (uintptr_t)h < HASHI_PREDEFINED_LIMIT;
}

/* ---- error handlers ---- */
enum hashi_errhandler_kind {
    HASHI_EH_FATAL, HASHI_EH_RETURN, HASHI_EH_ABORT, HASHI_EH_USER
};
struct MPI_ABI_Errhandler {
    enum hashi_errhandler_kind kind;
    enum hashi_obj_kind obj_kind;  /* which object type a user handler is for */
    void (*user_fn)(void);         /* MPI_Comm_errhandler_function* etc. */
    atomic_int refcount;           /* predefined ones are never freed */
};
struct MPI_ABI_Errhandler *hashi_errhandler_get(MPI_Errhandler h);
struct MPI_ABI_Errhandler *hashi_errhandler_for_session(MPI_Errhandler errhandler);
void hashi_errhandler_retain(struct MPI_ABI_Errhandler *eh);
void hashi_errhandler_release(struct MPI_ABI_Errhandler *eh);
struct MPI_ABI_Errhandler *hashi_errhandler_win_default(void);   /* MPI_ERRORS_ARE_FATAL */

/* ---- groups ---- */
struct MPI_ABI_Group {
    uint32_t magic;               /* HASHI_GROUP_MAGIC */
    int size;
    int rank;                     /* this process's rank in the group, or MPI_UNDEFINED */
    int *world_ranks;             /* group rank -> MPI_COMM_WORLD rank */
    atomic_int refcount;
    struct MPI_ABI_Session *session; /* the session it derives from (retained), or NULL */
};
#define HASHI_GROUP_MAGIC 0x47525550u

/* ---- communicators ---- */
/*
 * Context ids come in pairs: context_id (even) carries user point-to-point,
 * context_id + 1 the library's own traffic on the communicator (collectives,
 * agreement), so internal messages never match a user's receive.
 */
struct MPI_ABI_Comm {
    uint32_t magic;               /* HASHI_COMM_MAGIC */
    int rank, size;               /* in the (local) group */
    /* The ranks point-to-point calls name: size, or an intercommunicator's
     * remote group size. world_ranks translates them (see below). */
    int peer_size;
    uint32_t context_id;
    int context_borrowed;         /* a sub-communicator's pair, owned by its parent's block (comm.h) */
    struct MPI_ABI_Group *group;  /* members, as world ranks */
    /* World ranks of the ranks point-to-point names: group->world_ranks (NULL:
     * the identity, world), for an intercommunicator remote_group's. */
    const int *world_ranks;
    struct MPI_ABI_Errhandler *errhandler;
    atomic_int refcount;
    char name[MPI_MAX_OBJECT_NAME];
    void *attributes;             /* cached attributes (attr.c) */
    void *info;                   /* hints (struct MPI_ABI_Info, info.h), or NULL for none */
    void *topology;               /* Cartesian / graph / dist-graph, or NULL */
    void *coll_state;             /* per-communicator collective state (coll/), or NULL */
    void *device_state;           /* the device's own (released by its coll.comm_free), or NULL */
    uint32_t coll_seq;            /* collective sequence: the next schedule's tag (coll/sched.c) */
    struct MPI_ABI_Session *session; /* the session it derives from (retained), or NULL: the World Model */
    /* An intercommunicator (intercomm.c): the remote group (retained; NULL
     * for an intracommunicator) and a hidden intracommunicator over the local
     * group, with its own context, for the collectives' local phases. */
    struct MPI_ABI_Group *remote_group;
    struct MPI_ABI_Comm *local_comm;
};
#define HASHI_COMM_MAGIC 0x434f4d4du
extern struct MPI_ABI_Comm hashi_comm_world, hashi_comm_self;

static inline uint32_t hashi_comm_coll_context(const struct MPI_ABI_Comm *c)
{
    return c->context_id + 1;
}
static inline int hashi_comm_to_world(const struct MPI_ABI_Comm *c, int rank)
{
    return c->world_ranks ? c->world_ranks[rank] : rank;
}

/* The object behind a communicator handle, or NULL if it is not a valid one. */
static inline struct MPI_ABI_Comm *hashi_comm_get(MPI_Comm h)
{
    if (h == MPI_COMM_WORLD) return &hashi_comm_world;
    if (h == MPI_COMM_SELF) return &hashi_comm_self;
    if (hashi_handle_is_predefined(h) || h->magic != HASHI_COMM_MAGIC) return NULL;
    return (struct MPI_ABI_Comm *)h;
}

/* ---- windows (rma/) ---- */
/*
 * The part of a window the rest of the layer sees (error handlers in
 * errors.c, attributes in attr.c); the one-sided engine's state follows it in
 * struct rma_win (rma/rma.h), which embeds this first.
 */
struct MPI_ABI_Win {
    uint32_t magic;               /* HASHI_WIN_MAGIC; 0 once freed */
    struct MPI_ABI_Errhandler *errhandler;
    void *attributes;             /* cached attributes (attr.c) */
};
#define HASHI_WIN_MAGIC 0x57494e44u
/* The object behind a window handle, or NULL if it is not a valid one. */
static inline struct MPI_ABI_Win *hashi_win_get(MPI_Win h)
{
    if (hashi_handle_is_predefined(h) || h->magic != HASHI_WIN_MAGIC) return NULL;
    return h;
}
/* Predefined window attributes (MPI_WIN_BASE ...): 1 if keyval is one, with
 * *found and *value set; 0 if not (rma/window.c). */
int hashi_win_predefined_attr(struct MPI_ABI_Win *w, int keyval, void **value, int *found);
#define hashi_err_win(func, win, code, ...) \
    hashi_err_raise((func), HASHI_OBJ_WIN, (const void *)(win), (code), __VA_ARGS__)

/* ---- files (io/) ---- */
/*
 * The part of a file handle the rest of the layer sees (error handlers in
 * errors.c); the MPI-IO state follows it in struct hashi_file (io/io.h).
 */
struct MPI_ABI_File {
    uint32_t magic;               /* HASHI_FILE_MAGIC; 0 once closed */
    struct MPI_ABI_Errhandler *errhandler;
};
#define HASHI_FILE_MAGIC 0x46494c45u
/* The object behind a file handle, or NULL if it is not a valid one. */
static inline struct MPI_ABI_File *hashi_file_get(MPI_File h)
{
    if (hashi_handle_is_predefined(h) || h->magic != HASHI_FILE_MAGIC) return NULL;
    return h;
}
/* The handler a new file starts with: the one set on MPI_FILE_NULL
 * (MPI_ERRORS_RETURN unless changed), retained for the caller. */
struct MPI_ABI_Errhandler *hashi_errhandler_file_default(void);
#define hashi_err_file(func, file, code, ...) \
    hashi_err_raise((func), HASHI_OBJ_FILE, (const void *)(file), (code), __VA_ARGS__)

/* ---- set-up and tear-down of each part, called by MPI_Init / MPI_Finalize ---- */
void hashi_types_init(void);        /* datatype.c: the predefined types */
void hashi_comms_init(void);        /* comm.c: world/self groups, context ids */
void hashi_comms_finalize(void);
/* MPI_Finalize after the last fence: close the files left open, forget the
 * data representations MPI_Register_datarep defined (io/datarep.c). */
void hashi_io_finalize(void);
void hashi_p2p_init(void);          /* p2p: request pools, Bsend state */
void hashi_p2p_finalize(void);
void hashi_rma_pvars_register(void); /* rma/shm.c: rma_shm_ops */

/* ---- sessions (session.c) ---- */
struct MPI_ABI_Session {
    uint32_t magic;                        /* HASHI_SESSION_MAGIC; 0 once finalized */
    atomic_int refcount;                   /* the program's, and one per derived communicator */
    struct MPI_ABI_Errhandler *errhandler;
    void *info;                            /* the hints given (struct MPI_ABI_Info), or NULL */
};
#define HASHI_SESSION_MAGIC 0x5345534eu
struct MPI_ABI_Session *hashi_session_get(MPI_Session h);
/* The session of a call's argument; NULL (MPI_ERR_SESSION raised, in *rc) if it is none. */
struct MPI_ABI_Session *hashi_session_arg(const char *func, MPI_Session session, int *rc);
void hashi_session_retain(struct MPI_ABI_Session *s);
void hashi_session_release(struct MPI_ABI_Session *s);
/* The runtime for one more session (started if needed; init.c): 0, or -1
 * with err set; and one session fewer (the last user stops it). */
int hashi_session_runtime_join(const char *func, int required, char *err, size_t errlen);
void hashi_session_runtime_leave(void);
/* Which instance of the process set `name` this process is in (every
 * process of mpi://WORLD is in one, of mpi://SELF each in its own), as a
 * split colour; MPI_UNDEFINED for a name that is no process set. */
int hashi_pset_instance(const char *name);
/* Errors raised on a session go to its handler (errors.c). */
#define hashi_err_session(func, session, code, ...) \
    hashi_err_raise((func), HASHI_OBJ_SESSION, (const void *)(session), (code), __VA_ARGS__)

/* ---- library state ---- */
enum hashi_init_state { HASHI_STATE_PRE_INIT, HASHI_STATE_INITIALIZED, HASHI_STATE_FINALIZED };
extern _Atomic int hashi_init_state;
extern int hashi_thread_level;
extern uintptr_t hashi_main_thread;

/* Calls that need MPI_Init first end with this when it has not happened. */
int hashi_err_not_initialized(const char *func);
#define HASHI_CHECK_INITIALIZED(func)                                          \
    do {                                                                       \
        if (hashi_init_state != HASHI_STATE_INITIALIZED)                       \
            return hashi_err_not_initialized(func);                            \
    } while (0)

#endif
