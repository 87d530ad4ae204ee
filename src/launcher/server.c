/*
 * The embedded OpenPMIx server.
 *
 * The main thread initialises it, registers the job and prepares each rank's
 * environment. The upcalls below run on PMIx's own progress thread: they must
 * return quickly and never call a blocking PMIx function (that would deadlock
 * the thread that completes it). Each one records what happened as an event
 * on a mutex-protected queue, wakes the main thread through an eventfd, and
 * answers PMIx at once. An event is queued before the callback releases the
 * client, so the main thread always sees "finalized" or "abort" before the
 * rank's exit that follows it.
 */
#include "launcher/launcher.h"

#include <dlfcn.h>
#include <errno.h>
#include <hwloc.h>
#include <pmix.h>
#include <pmix_server.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static struct {
    char nspace[PMIX_MAX_NSLEN + 1];
    uint32_t nranks;
    bool initialized;
    bool registered;                /* the job's namespace is known to the server */
    int wake_fd;
    pthread_mutex_t lock;           /* guards head/tail: the only state both threads touch */
    struct upcall_event *head, *tail;
} srv = { .wake_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

/* Deregistration is asynchronous: its callback may come after we stop waiting. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;            /* on CLOCK_MONOTONIC, set up by server_start */
    bool done;
} forget = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- upcall side (PMIx progress thread) ---- */

/* The rank of one of our processes, or false for anyone else (a tool, another nspace). */
static bool job_rank_of(const pmix_proc_t *proc, uint32_t *rank)
{
    if (!proc || strncmp(proc->nspace, srv.nspace, PMIX_MAX_NSLEN) != 0 || proc->rank >= srv.nranks)
        return false;
    *rank = proc->rank;
    return true;
}

static void post_event(enum upcall_kind kind, uint32_t rank, int status, const char *msg)
{
    struct upcall_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return;             /* the rank's exit status still tells the main thread enough */
    ev->kind = kind;
    ev->rank = rank;
    ev->status = status;
    if (msg && *msg)
        ev->msg = strdup(msg);

    pthread_mutex_lock(&srv.lock);
    if (srv.tail)
        srv.tail->next = ev;
    else
        srv.head = ev;
    srv.tail = ev;
    pthread_mutex_unlock(&srv.lock);

    uint64_t one = 1;
    ssize_t n = write(srv.wake_fd, &one, sizeof one);
    (void)n;                /* only fails if the counter is saturated: already awake */
}

static void note_connected(const pmix_proc_t *proc)
{
    uint32_t rank;
    if (job_rank_of(proc, &rank))
        post_event(UPCALL_CONNECTED, rank, 0, NULL);
}

/* 4.2.2 passes no callback (notification only); later versions may pass one. */
static pmix_status_t on_client_connected2(const pmix_proc_t *proc, void *server_object,
                                          pmix_info_t info[], size_t ninfo,
                                          pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object; (void)info; (void)ninfo;
    note_connected(proc);
    if (!cbfunc)
        return PMIX_OPERATION_SUCCEEDED;
    cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static pmix_status_t on_client_connected(const pmix_proc_t *proc, void *server_object,
                                         pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    return on_client_connected2(proc, server_object, NULL, 0, cbfunc, cbdata);
}

/* The client stays blocked in PMIx_Finalize until the callback runs. */
static pmix_status_t on_client_finalized(const pmix_proc_t *proc, void *server_object,
                                         pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    uint32_t rank;
    if (job_rank_of(proc, &rank))
        post_event(UPCALL_FINALIZED, rank, 0, NULL);
    if (cbfunc)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

/* MPI_Abort: whatever procs the client names, the whole job ends with its status. */
static pmix_status_t on_abort(const pmix_proc_t *proc, void *server_object, int status,
                              const char msg[], pmix_proc_t procs[], size_t nprocs,
                              pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object; (void)procs; (void)nprocs;
    uint32_t rank;
    if (job_rank_of(proc, &rank))
        post_event(UPCALL_ABORT, rank, status, msg);
    if (cbfunc)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static void release_fence_copy(void *cbdata)
{
    free(cbdata);
}

/*
 * One node: our blob is everyone's, the collective is complete. PMIx keeps
 * the buffer it is handed until the release callback, and the data we are
 * given is only lent for the upcall: hand back a copy.
 */
static pmix_status_t on_fence(const pmix_proc_t procs[], size_t nprocs,
                              const pmix_info_t info[], size_t ninfo,
                              char *data, size_t ndata,
                              pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)procs; (void)nprocs; (void)info; (void)ninfo;
    post_event(UPCALL_FENCE, 0, (int)ndata, NULL);
    char *copy = NULL;
    if (ndata > 0) {
        copy = malloc(ndata);
        if (!copy)
            return PMIX_ERR_NOMEM;
        memcpy(copy, data, ndata);
    }
    if (cbfunc)
        cbfunc(PMIX_SUCCESS, copy, ndata, cbdata, copy ? release_fence_copy : NULL, copy);
    else
        free(copy);
    return PMIX_SUCCESS;
}

/* Every rank is on this node: PMIx never needs another server's data. */
static pmix_status_t on_direct_modex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
                                     pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)proc; (void)info; (void)ninfo; (void)cbfunc; (void)cbdata;
    return PMIX_ERR_NOT_SUPPORTED;
}

/* Upcalls left NULL are reported to clients as not supported by PMIx itself. */
static pmix_server_module_t server_module = {
    .client_connected = on_client_connected,
    .client_connected2 = on_client_connected2,
    .client_finalized = on_client_finalized,
    .abort = on_abort,
    .fence_nb = on_fence,
    .direct_modex = on_direct_modex,
};

/* ---- main-thread side ---- */

int server_event_fd(void)
{
    return srv.wake_fd;
}

struct upcall_event *server_take_events(void)
{
    uint64_t count;
    ssize_t n = read(srv.wake_fd, &count, sizeof count);
    (void)n;                /* EAGAIN: nothing new since the last take */
    pthread_mutex_lock(&srv.lock);
    struct upcall_event *list = srv.head;
    srv.head = srv.tail = NULL;
    pthread_mutex_unlock(&srv.lock);
    return list;
}

void upcall_event_free(struct upcall_event *ev)
{
    if (ev) {
        free(ev->msg);
        free(ev);
    }
}

static bool registered(pmix_status_t rc)
{
    /* Blocking register calls answer OPERATION_SUCCEEDED in 4.2.2, SUCCESS elsewhere. */
    return rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED;
}

static void libevent_message(int severity, const char *msg)
{
    (void)severity;
    launcher_log("PMIx event loop (libevent): %s", msg);
}

/*
 * libevent, under PMIx's event loop, prints warnings of its own on stderr
 * when PMIx 4.2.2 closes a socket that still has a write event (a client
 * killed mid-request). They say nothing to the user and break the one-line
 * failure report: send them to --verbose instead. libevent is PMIx's
 * dependency, not ours, so its setter is looked up rather than linked; if
 * PMIx carries a renamed private copy, the lookup fails and nothing changes.
 */
static void quiet_libevent(void)
{
    typedef void (*log_cb)(int severity, const char *msg);
    typedef void (*set_log_cb)(log_cb cb);
    void *sym = dlsym(RTLD_DEFAULT, "event_set_log_callback");
    if (!sym)
        return;
    set_log_cb set;
    memcpy(&set, &sym, sizeof set);     /* object to function pointer, as POSIX allows */
    set(libevent_message);
}

int server_start(struct job *job, struct hwloc_topology *topo, char *err, size_t errlen)
{
    /* The deregistration wait is timed on the monotonic clock. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&forget.cond, &attr);
    pthread_condattr_destroy(&attr);

    srv.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (srv.wake_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        return -1;
    }

    /* The server's files go in the job directory, so the reaper can remove them. */
    pmix_info_t info[3];
    size_t ninfo = 0;
    PMIX_INFO_LOAD(&info[ninfo], PMIX_SERVER_TMPDIR, job->ids.pmix_dir, PMIX_STRING);
    ninfo++;
    PMIX_INFO_LOAD(&info[ninfo], PMIX_SYSTEM_TMPDIR, job->ids.pmix_dir, PMIX_STRING);
    ninfo++;
    /*
     * Lend PMIx our topology instead of letting it discover its own (saves
     * about 5 ms). Set by hand: loading a PMIX_TOPO value would duplicate it.
     */
    pmix_topology_t lent = { .source = "hwloc", .topology = topo };
    if (topo) {
        PMIX_INFO_CONSTRUCT(&info[ninfo]);
        PMIX_LOAD_KEY(info[ninfo].key, PMIX_TOPOLOGY2);
        info[ninfo].value.type = PMIX_TOPO;
        info[ninfo].value.data.topo = &lent;
        ninfo++;
    }
    pmix_status_t rc = PMIx_server_init(&server_module, info, ninfo);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) {
        snprintf(err, errlen, "cannot start the PMIx server: %s (PMIx needs the loopback interface)",
                 PMIx_Error_string(rc));
        return -1;
    }
    srv.initialized = true;
    quiet_libevent();
    return 0;
}

/* "0,1,...,n-1": the local peers, and the input PMIx compresses into the proc map. */
static char *rank_list(unsigned n)
{
    size_t cap = (size_t)n * 7 + 1;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t used = 0;
    for (unsigned r = 0; r < n; r++)
        used += (size_t)snprintf(s + used, cap - used, r ? ",%u" : "%u", r);
    return s;
}

static pmix_status_t add_proc_data(void *job_list, struct job *job, unsigned r)
{
    void *list = PMIx_Info_list_start();
    if (!list)
        return PMIX_ERR_NOMEM;
    pmix_rank_t rank = r;
    uint16_t local_rank = (uint16_t)r;  /* one node: local and node rank are the rank */
    uint32_t node_id = 0;
    /* PMIX_RANK first: that is how PMIx knows whose data the array holds. */
    pmix_status_t rc = PMIx_Info_list_add(list, PMIX_RANK, &rank, PMIX_PROC_RANK);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_LOCAL_RANK, &local_rank, PMIX_UINT16);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_NODE_RANK, &local_rank, PMIX_UINT16);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_NODEID, &node_id, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_HOSTNAME, job->hostname, PMIX_STRING);
    pmix_data_array_t darray;
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_convert(list, &darray);
    PMIx_Info_list_release(list);
    if (rc != PMIX_SUCCESS)
        return rc;
    rc = PMIx_Info_list_add(job_list, PMIX_PROC_DATA, &darray, PMIX_DATA_ARRAY);
    PMIX_DATA_ARRAY_DESTRUCT(&darray);
    return rc;
}

int server_register_job(struct job *job, char *err, size_t errlen)
{
    snprintf(srv.nspace, sizeof srv.nspace, "%s", job->ids.name);
    srv.nranks = job->nranks;

    char *peers = rank_list(job->nranks);
    char *node_map = NULL, *proc_map = NULL;
    void *list = NULL;
    pmix_status_t rc = peers ? PMIX_SUCCESS : PMIX_ERR_NOMEM;
    const char *failed = "building the job information";
    if (rc == PMIX_SUCCESS && (rc = PMIx_generate_regex(job->hostname, &node_map)) != PMIX_SUCCESS)
        failed = "PMIx_generate_regex";
    if (rc == PMIX_SUCCESS && (rc = PMIx_generate_ppn(peers, &proc_map)) != PMIX_SUCCESS)
        failed = "PMIx_generate_ppn";
    if (rc == PMIX_SUCCESS && !(list = PMIx_Info_list_start()))
        rc = PMIX_ERR_NOMEM;

    uint32_t size = job->nranks, zero = 0, one = 1;
    pmix_rank_t leader = 0;
#define ADD(key, value, type) \
    do { if (rc == PMIX_SUCCESS) rc = PMIx_Info_list_add(list, key, value, type); } while (0)
    ADD(PMIX_JOBID, job->ids.name, PMIX_STRING);
    ADD(PMIX_JOB_SIZE, &size, PMIX_UINT32);
    ADD(PMIX_UNIV_SIZE, &size, PMIX_UINT32);
    ADD(PMIX_MAX_PROCS, &size, PMIX_UINT32);
    ADD(PMIX_LOCAL_SIZE, &size, PMIX_UINT32);
    ADD(PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    ADD(PMIX_LOCALLDR, &leader, PMIX_PROC_RANK);
    ADD(PMIX_NODE_MAP, node_map, PMIX_REGEX);
    ADD(PMIX_PROC_MAP, proc_map, PMIX_REGEX);
    ADD(PMIX_APPNUM, &zero, PMIX_UINT32);
    ADD(PMIX_JOB_NUM_APPS, &one, PMIX_UINT32);
    ADD(PMIX_NUM_NODES, &one, PMIX_UINT32);
#undef ADD
    for (unsigned r = 0; r < job->nranks && rc == PMIX_SUCCESS; r++)
        rc = add_proc_data(list, job, r);

    pmix_data_array_t info;
    bool converted = false;
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_Info_list_convert(list, &info);
        converted = rc == PMIX_SUCCESS;
    }
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_server_register_nspace(srv.nspace, (int)job->nranks, info.array, info.size, NULL, NULL);
        failed = "PMIx_server_register_nspace";
        if (registered(rc))
            rc = PMIX_SUCCESS;
    }
    srv.registered = rc == PMIX_SUCCESS;
    if (converted)
        PMIX_DATA_ARRAY_DESTRUCT(&info);
    if (list)
        PMIx_Info_list_release(list);
    free(node_map);
    free(proc_map);
    free(peers);
    if (rc != PMIX_SUCCESS) {
        snprintf(err, errlen, "%s: %s", failed, PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

int server_prepare_rank(struct job *job, unsigned rank, char ***env, char *err, size_t errlen)
{
    (void)job;
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, srv.nspace, rank);
    pmix_status_t rc = PMIx_server_register_client(&proc, getuid(), getgid(), NULL, NULL, NULL);
    if (!registered(rc)) {
        snprintf(err, errlen, "PMIx_server_register_client(rank %u): %s", rank, PMIx_Error_string(rc));
        return -1;
    }
    rc = PMIx_server_setup_fork(&proc, env);
    if (rc != PMIX_SUCCESS) {
        snprintf(err, errlen, "PMIx_server_setup_fork(rank %u): %s", rank, PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

static void forget_done(pmix_status_t status, void *cbdata)
{
    (void)status; (void)cbdata;
    pthread_mutex_lock(&forget.lock);
    forget.done = true;
    pthread_cond_signal(&forget.cond);
    pthread_mutex_unlock(&forget.lock);
}

/*
 * OpenPMIx 4.2.2 can corrupt its client bookkeeping when several connected
 * clients die at once (some mid-request), and PMIx_server_finalize then
 * deadlocks (1-3% of killed jobs here). Dropping the namespace first, while
 * every client is still alive, makes their deaths plain socket closes: no
 * hang in 800 such runs. Bounded wait: a stuck progress thread must not
 * keep us from killing the job.
 */
void server_forget_job(int wait_ms)
{
    if (!srv.initialized || !srv.registered)
        return;
    srv.registered = false;
    PMIx_server_deregister_nspace(srv.nspace, forget_done, NULL);

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += wait_ms / 1000;
    deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&forget.lock);
    int rc = 0;
    while (!forget.done && rc == 0)
        rc = pthread_cond_timedwait(&forget.cond, &forget.lock, &deadline);
    bool done = forget.done;
    pthread_mutex_unlock(&forget.lock);
    if (!done)
        launcher_log("PMIx did not confirm the deregistration within %d ms", wait_ms);
}

void server_stop(void)
{
    if (srv.initialized) {
        PMIx_server_finalize();
        srv.initialized = false;
    }
    /* The progress thread is gone: whatever it queued last is ours to free. */
    struct upcall_event *ev = srv.head;
    while (ev) {
        struct upcall_event *next = ev->next;
        upcall_event_free(ev);
        ev = next;
    }
    srv.head = srv.tail = NULL;
    if (srv.wake_fd >= 0)
        close(srv.wake_fd);
    srv.wake_fd = -1;
}
