/*
 * The Sessions Model (MPI-4 chapter 11): MPI_Session_init starts MPI for a
 * library without MPI_Init (or beside it), the process sets it can see
 * ("mpi://WORLD", "mpi://SELF") become groups, and MPI_Comm_create_from_group
 * makes communicators of them with no parent communicator. Sessions and the
 * World Model share one runtime (init.c says when it starts and stops); a
 * session's error handler takes the errors raised on it; its communicators
 * and groups keep a reference to it, so a session object outlives its
 * MPI_Session_finalize while they exist (using them then is erroneous but
 * cannot crash). Design: docs/communicators.md, "Sessions".
 */
#include "mpi/comm.h"
#include "mpi/handles.h"
#include "mpi/info.h"
#include "mpi/mpi_impl.h"
#include "mpi/p2p.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The process sets every process has, in the order MPI_Session_get_nth_pset
 * lists them. */
static const char *const psets[] = { "mpi://WORLD", "mpi://SELF" };
#define NPSETS ((int)(sizeof psets / sizeof *psets))

struct MPI_ABI_Session *hashi_session_get(MPI_Session h)
{
    if (h == MPI_SESSION_NULL || hashi_handle_is_predefined(h))
        return NULL;
    struct MPI_ABI_Session *s = (struct MPI_ABI_Session *)h;
    return s->magic == HASHI_SESSION_MAGIC ? s : NULL;
}

void hashi_session_retain(struct MPI_ABI_Session *s)
{
    atomic_fetch_add(&s->refcount, 1);
}

void hashi_session_release(struct MPI_ABI_Session *s)
{
    if (atomic_fetch_sub(&s->refcount, 1) != 1)
        return;
    hashi_handle_forget(s);
    hashi_errhandler_release(s->errhandler);
    hashi_info_destroy(s->info);
    free(s);
}

struct MPI_ABI_Session *hashi_session_arg(const char *func, MPI_Session session, int *rc)
{
    struct MPI_ABI_Session *s = hashi_session_get(session);
    *rc = s ? MPI_SUCCESS
            : hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_SESSION,
                              session == MPI_SESSION_NULL ? "session is MPI_SESSION_NULL" : "not a valid session");
    return s;
}

/* The thread level a "thread_level" hint asks for (MPI_THREAD_SINGLE when
 * absent); -1 for a value that names no level. */
static int requested_level(const struct MPI_ABI_Info *hints)
{
    static const struct { const char *name; int level; } levels[] = {
        { "MPI_THREAD_SINGLE", MPI_THREAD_SINGLE },
        { "MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED },
        { "MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED },
        { "MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE },
    };
    const char *want = hints ? hashi_info_value(hints, "thread_level") : NULL;
    if (!want)
        return MPI_THREAD_SINGLE;
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
        if (strcmp(want, levels[i].name) == 0)
            return levels[i].level;
    return -1;
}

static const char *level_name(int level)
{
    return level == MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE"
           : level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
           : level == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                                            : "MPI_THREAD_SINGLE";
}

int hashi_impl_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
{
    static const char func[] = "MPI_Session_init";
    /* Errors go to the handler given (there is no session yet); the fatal
     * one ends the process with the message. */
    struct MPI_ABI_Errhandler *eh = hashi_errhandler_for_session(errhandler);
    if (!eh)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "errhandler is not a predefined handler or one made by MPI_Session_create_errhandler");
    if (!session)
        return hashi_err_raise(func, HASHI_OBJ_ERRHANDLER, eh, MPI_ERR_ARG, "session is NULL");
    struct MPI_ABI_Info *hints = NULL;
    if (info != MPI_INFO_NULL && !(hints = hashi_info_get(info)))
        return hashi_err_raise(func, HASHI_OBJ_ERRHANDLER, eh, MPI_ERR_INFO, "info is not a valid info object");
    int level = requested_level(hints);
    if (level < 0)
        return hashi_err_raise(func, HASHI_OBJ_ERRHANDLER, eh, MPI_ERR_ARG,
                               "the thread_level hint '%s' is not MPI_THREAD_SINGLE, _FUNNELED, _SERIALIZED or "
                               "_MULTIPLE", hashi_info_value(hints, "thread_level"));
    struct MPI_ABI_Session *s = calloc(1, sizeof *s);
    if (!s || (hints && !(s->info = hashi_info_copy(hints)))) {
        free(s);
        return hashi_err_raise(func, HASHI_OBJ_ERRHANDLER, eh, MPI_ERR_NO_MEM, "out of memory");
    }
    char err[1024];
    if (hashi_session_runtime_join(func, level, err, sizeof err) != 0) {
        hashi_info_destroy(s->info);
        free(s);
        return hashi_err_raise(func, HASHI_OBJ_ERRHANDLER, eh, MPI_ERR_OTHER, "%s", err);
    }
    s->magic = HASHI_SESSION_MAGIC;
    atomic_init(&s->refcount, 1);
    hashi_errhandler_retain(eh);
    s->errhandler = eh;
    *session = s;
    return MPI_SUCCESS;
}

int hashi_impl_Session_finalize(MPI_Session *session)
{
    static const char func[] = "MPI_Session_finalize";
    if (!session)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "session is NULL");
    int rc;
    struct MPI_ABI_Session *s = hashi_session_arg(func, *session, &rc);
    if (!s)
        return rc;
    /* Messages still in the session's Bsend buffer go out first. */
    hashi_p2p_session_finalized(s);
    s->magic = 0;   /* the handle is dead from here on */
    *session = MPI_SESSION_NULL;
    hashi_session_release(s);
    hashi_session_runtime_leave();
    return MPI_SUCCESS;
}

int hashi_impl_Session_get_info(MPI_Session session, MPI_Info *info_used)
{
    static const char func[] = "MPI_Session_get_info";
    int rc;
    struct MPI_ABI_Session *s = hashi_session_arg(func, session, &rc);
    if (!s)
        return rc;
    if (!info_used)
        return hashi_err_session(func, session, MPI_ERR_ARG, "info_used is NULL");
    /* The hints given, and the thread level the session really has. */
    struct MPI_ABI_Info *out = hashi_info_copy(s->info);
    if (!out || hashi_info_put(out, "thread_level", level_name(hashi_thread_level)) != 0) {
        hashi_info_destroy(out);
        return hashi_err_session(func, session, MPI_ERR_NO_MEM, "out of memory");
    }
    *info_used = out;
    return MPI_SUCCESS;
}

int hashi_impl_Session_get_num_psets(MPI_Session session, MPI_Info info, int *npset_names)
{
    static const char func[] = "MPI_Session_get_num_psets";
    int rc;
    if (!hashi_session_arg(func, session, &rc))
        return rc;
    (void)info;   /* no hints change the sets */
    if (!npset_names)
        return hashi_err_session(func, session, MPI_ERR_ARG, "npset_names is NULL");
    *npset_names = NPSETS;
    return MPI_SUCCESS;
}

int hashi_impl_Session_get_nth_pset(MPI_Session session, MPI_Info info, int n, int *pset_len, char *pset_name)
{
    static const char func[] = "MPI_Session_get_nth_pset";
    int rc;
    if (!hashi_session_arg(func, session, &rc))
        return rc;
    (void)info;
    if (n < 0 || n >= NPSETS)
        return hashi_err_session(func, session, MPI_ERR_ARG, "n = %d is not in 0..%d (the number of process sets - 1)",
                                 n, NPSETS - 1);
    if (!pset_len || *pset_len < 0)
        return hashi_err_session(func, session, MPI_ERR_ARG, "pset_len is %s", pset_len ? "negative" : "NULL");
    int need = (int)strlen(psets[n]) + 1;
    /* 0: the caller asks for the length, terminator included (MPI-4 11.3.1). */
    if (*pset_len == 0) {
        *pset_len = need;
        return MPI_SUCCESS;
    }
    if (!pset_name)
        return hashi_err_session(func, session, MPI_ERR_ARG, "pset_name is NULL");
    snprintf(pset_name, (size_t)*pset_len, "%s", psets[n]);
    *pset_len = need;
    return MPI_SUCCESS;
}

/* The index of a process set's name, or -1. */
static int pset_index(const char *name)
{
    for (int i = 0; name && i < NPSETS; i++)
        if (strcmp(name, psets[i]) == 0)
            return i;
    return -1;
}

int hashi_pset_instance(const char *name)
{
    switch (name ? pset_index(name) : -1) {
    case 0:
        return 0;
    case 1:
        return hashi_job.rank;
    default:
        return MPI_UNDEFINED;
    }
}

static int unknown_pset(const char *func, MPI_Session session, const char *pset_name)
{
    return hashi_err_session(func, session, MPI_ERR_ARG, "'%s' is not a process set of this session (%s, %s)",
                             pset_name ? pset_name : "(NULL)", psets[0], psets[1]);
}

static int pset_size(int index)
{
    return index == 0 ? hashi_job.size : 1;
}

int hashi_impl_Session_get_pset_info(MPI_Session session, const char *pset_name, MPI_Info *info)
{
    static const char func[] = "MPI_Session_get_pset_info";
    int rc;
    if (!hashi_session_arg(func, session, &rc))
        return rc;
    if (!info)
        return hashi_err_session(func, session, MPI_ERR_ARG, "info is NULL");
    int index = pset_index(pset_name);
    if (index < 0)
        return unknown_pset(func, session, pset_name);
    char size[16];
    snprintf(size, sizeof size, "%d", pset_size(index));
    struct MPI_ABI_Info *out = hashi_info_copy(NULL);
    if (!out || hashi_info_put(out, "mpi_size", size) != 0) {
        hashi_info_destroy(out);
        return hashi_err_session(func, session, MPI_ERR_NO_MEM, "out of memory");
    }
    *info = out;
    return MPI_SUCCESS;
}

int hashi_impl_Group_from_session_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup)
{
    static const char func[] = "MPI_Group_from_session_pset";
    int rc;
    struct MPI_ABI_Session *s = hashi_session_arg(func, session, &rc);
    if (!s)
        return rc;
    if (!newgroup)
        return hashi_err_session(func, session, MPI_ERR_ARG, "newgroup is NULL");
    int index = pset_index(pset_name);
    if (index < 0)
        return unknown_pset(func, session, pset_name);
    int n = pset_size(index);
    int *world = malloc((size_t)n * sizeof *world);
    if (!world)
        return hashi_err_session(func, session, MPI_ERR_NO_MEM, "out of memory");
    for (int i = 0; i < n; i++)
        world[i] = index == 0 ? i : hashi_job.rank;
    struct MPI_ABI_Group *g = hashi_group_from_world_ranks(n, world);
    if (!g)
        return hashi_err_session(func, session, MPI_ERR_NO_MEM, "out of memory");
    hashi_session_retain(g->session = s);
    *newgroup = hashi_group_handle(g);
    return MPI_SUCCESS;
}
