/* MPI_Init / MPI_Finalize: parameters, runtime, device, communicators. */
#include "mpi/mpi_impl.h"
#include "mpi/comm.h"
#include "mpi/coll/coll.h"
#include "mpi/coll/sched.h"
#include "mpi/p2p.h"
#include "mpi/thread.h"
#include "device/device.h"
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/topo.h"
#include "runtime/wake.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <unistd.h>

_Atomic int hashi_init_state = HASHI_STATE_PRE_INIT;
int hashi_thread_level = MPI_THREAD_SINGLE;
int hashi_refs_locked;
uintptr_t hashi_main_thread;

/* The highest thread level this build really provides (MULTIPLE: the
 * global lock of mpi/thread.h, docs/threads.md). */
#define HASHI_THREAD_LEVEL_MAX MPI_THREAD_MULTIPLE

struct MPI_ABI_Comm hashi_comm_world = { .magic = HASHI_COMM_MAGIC, .refcount = 1, .name = "MPI_COMM_WORLD" };
struct MPI_ABI_Comm hashi_comm_self = { .magic = HASHI_COMM_MAGIC, .refcount = 1, .name = "MPI_COMM_SELF" };

void hashi_errors_init(void);
void hashi_info_env_init(int argc, char **argv);

static int fence_released(void *flag)
{
    return atomic_load((_Atomic int *)flag);
}

/* Errors during MPI_Init cannot go through a communicator's handler yet:
 * they end the job with one line naming the call and the problem (printed
 * by the launcher, or here in a singleton or before PMIx is up). */
static __attribute__((noreturn)) void init_failed(const char *func, const char *why)
{
    char msg[1200];
    snprintf(msg, sizeof msg, "%s: %s", func, why);
    hashi_rt_abort(1, msg);
}

/*
 * Two ways into MPI share one runtime (MPI-4 sec. 11.2): the World Model
 * (MPI_Init ... MPI_Finalize, world_state) and any number of sessions
 * (MPI_Session_init ... MPI_Session_finalize, open_sessions). The first of
 * them starts the runtime (hashi_init_state: parameters, launcher, device,
 * the predefined objects); the last to end stops it, so every process stops
 * it exactly once, which is what the final fence with the other processes
 * needs. Once stopped it cannot start again in this process.
 */
static _Atomic int world_state = HASHI_STATE_PRE_INIT;
static int open_sessions;
static mtx_t model_lock;
static once_flag model_lock_once = ONCE_FLAG_INIT;
static void init_model_lock(void) { mtx_init(&model_lock, mtx_plain); }

static void start_runtime(const char *func, int *argc, char ***argv, int required)
{
    char err[1024];
    if (hashi_params_load(err, sizeof err) != 0)
        init_failed(func, err);
    hashi_log_level = (int)hashi_param_int(HASHI_P_VERBOSE);

    if (hashi_rt_init(err, sizeof err) != 0)
        init_failed(func, err);
    if (hashi_coll_bcast_params_check(err, sizeof err) != 0)
        init_failed(func, err);
    if (hashi_device_select(err, sizeof err) != 0)
        init_failed(func, err);
    if (hashi_device->init(err, sizeof err) != 0)
        init_failed(func, err);
    int level = required < MPI_THREAD_SINGLE ? MPI_THREAD_SINGLE
              : required > HASHI_THREAD_LEVEL_MAX ? HASHI_THREAD_LEVEL_MAX : required;
    int concurrent = level == MPI_THREAD_MULTIPLE;
    if (hashi_device_publish_threads(concurrent) != 0)
        init_failed(func, "publishing this rank's thread level through PMIx failed");
    if (hashi_device->wait_fd && hashi_device->trywait)
        hashi_wake_use_fd(hashi_device->wait_fd(), hashi_device->trywait);
    if (hashi_wake_create(err, sizeof err) != 0)
        init_failed(func, err);
    if (hashi_topo_publish() != 0)
        init_failed(func, "publishing this rank's CPU set through PMIx failed");
    if (hashi_rt_exchange(err, sizeof err) != 0)
        init_failed(func, err);
    hashi_topo_decide();
    if (hashi_wake_attach(err, sizeof err) != 0)
        init_failed(func, err);
    if (hashi_device->connect(err, sizeof err) != 0)
        init_failed(func, err);
    /* After connect, so whatever collectives the device set up by now are
     * dropped; every rank must make the same choice of algorithms. */
    if (hashi_device_agree_threads(concurrent, err, sizeof err) != 0)
        init_failed(func, err);
    if (hashi_wake_needs_unlink()) {
        /* No launcher directory to hold it: unlink once every rank is attached. */
        if (hashi_rt_fence(err, sizeof err) != 0)
            init_failed(func, err);
        hashi_wake_unlink();
    }

    hashi_comm_world.rank = hashi_job.rank;
    hashi_comm_world.size = hashi_comm_world.peer_size = hashi_job.size;
    hashi_comm_world.context_id = 0;
    hashi_comm_self.rank = 0;
    hashi_comm_self.size = hashi_comm_self.peer_size = 1;
    hashi_comm_self.context_id = 2;
    hashi_errors_init();
    hashi_types_init();
    hashi_comms_init();
    hashi_coll_hier_pvars_register();
    hashi_rma_pvars_register();
    hashi_p2p_init();

    hashi_thread_level = level;
    /* Threads inside the library together need locked reference counts, and
     * every call takes the global lock (set before any thread of the program
     * can call MPI: none may before MPI_Init_thread returns). */
    hashi_refs_locked = concurrent;
    hashi_mt_locking = concurrent;
    hashi_info_env_init(argc ? *argc : 0, argv ? *argv : NULL);
    hashi_main_thread = (uintptr_t)pthread_self();
    HASHI_DEBUG(1, "initialized: rank %d of %d on %s, device %s%s", hashi_job.rank, hashi_job.size,
                hashi_job.hostname, hashi_device->name, hashi_job.singleton ? " (singleton)" : "");
    atomic_store(&hashi_init_state, HASHI_STATE_INITIALIZED);
}

/* The runtime for a new user: started now, or already running (then its
 * thread level stays: the device chose its algorithms for it with every
 * process). 0, or -1 when it was stopped already (err says so). */
static int runtime_join(const char *func, int *argc, char ***argv, int required, char *err, size_t errlen)
{
    int state = atomic_load(&hashi_init_state);
    if (state == HASHI_STATE_FINALIZED) {
        snprintf(err, errlen, "MPI cannot start again in this process: its runtime was stopped when MPI_Finalize "
                 "and every MPI_Session_finalize had been called");
        return -1;
    }
    if (state == HASHI_STATE_PRE_INIT)
        start_runtime(func, argc, argv, required);
    return 0;
}

/* The last user is gone: meet every process one final time and stop. */
static void stop_runtime(void)
{
    char err[1024];
    /* Finish this rank's sends and meet every rank over the device; then a
     * fence through the launcher during which the device keeps progressing
     * (a send may count as complete while the provider still holds its data
     * for a peer), so no peer waits for this rank's progress in vain. */
    hashi_p2p_finalize();
    _Atomic int fenced = 0;
    if (hashi_rt_fence_start(&fenced, err, sizeof err) != 0)
        hashi_log("MPI_Finalize: %s", err);
    else {
        hashi_progress_wait_until(fence_released, (void *)&fenced);
        /* PMIx's thread is still inside its callback, waking this rank:
         * let it leave before the wake words go (hashi_wake_detach). */
        hashi_rt_fence_finish(&fenced);
    }
    hashi_io_finalize();
    hashi_comms_finalize();
    hashi_sched_release_memory();
    hashi_device->finalize();
    hashi_wake_detach();
    atomic_store(&hashi_init_state, HASHI_STATE_FINALIZED);
    hashi_rt_finalize();
}

static int initialize(const char *func, int *argc, char ***argv, int required, int *provided)
{
    char err[1024];
    call_once(&model_lock_once, init_model_lock);
    mtx_lock(&model_lock);
    int expected = HASHI_STATE_PRE_INIT;
    if (!atomic_compare_exchange_strong(&world_state, &expected, HASHI_STATE_INITIALIZED)) {
        mtx_unlock(&model_lock);
        snprintf(err, sizeof err, "%s: MPI_ERR_OTHER: MPI is already %s", func,
                 expected == HASHI_STATE_FINALIZED ? "finalized" : "initialized");
        hashi_rt_abort(MPI_ERR_OTHER, err);
    }
    int rc = runtime_join(func, argc, argv, required, err, sizeof err);
    mtx_unlock(&model_lock);
    if (rc != 0)
        init_failed(func, err);
    if (provided)
        *provided = hashi_thread_level;
    return MPI_SUCCESS;
}

int hashi_session_runtime_join(const char *func, int required, char *err, size_t errlen)
{
    call_once(&model_lock_once, init_model_lock);
    mtx_lock(&model_lock);
    int rc = runtime_join(func, NULL, NULL, required, err, errlen);
    if (rc == 0)
        open_sessions++;
    mtx_unlock(&model_lock);
    return rc;
}

void hashi_session_runtime_leave(void)
{
    mtx_lock(&model_lock);
    int last = --open_sessions == 0 && atomic_load(&world_state) != HASHI_STATE_INITIALIZED;
    if (last)
        stop_runtime();
    mtx_unlock(&model_lock);
}

int hashi_impl_Init(int *argc, char ***argv)
{
    return initialize("MPI_Init", argc, argv, MPI_THREAD_SINGLE, NULL);
}

int hashi_impl_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
        init_failed("MPI_Init_thread", "MPI_ERR_ARG: required is not a thread level");
    return initialize("MPI_Init_thread", argc, argv, required, provided);
}

int hashi_impl_Initialized(int *flag)
{
    if (!flag)
        return hashi_err_raise("MPI_Initialized", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "flag is NULL");
    /* The World Model's: true after MPI_Init, and still true after
     * MPI_Finalize (the standard); sessions do not count. */
    *flag = atomic_load(&world_state) != HASHI_STATE_PRE_INIT;
    return MPI_SUCCESS;
}

int hashi_impl_Finalized(int *flag)
{
    if (!flag)
        return hashi_err_raise("MPI_Finalized", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "flag is NULL");
    *flag = atomic_load(&world_state) == HASHI_STATE_FINALIZED;
    return MPI_SUCCESS;
}

int hashi_impl_Finalize(void)
{
    int world = atomic_load(&world_state);
    if (world != HASHI_STATE_INITIALIZED)
        hashi_rt_abort(MPI_ERR_OTHER, world == HASHI_STATE_FINALIZED
                                          ? "MPI_Finalize called twice: it is an error (MPI_ERR_OTHER)"
                                          : "MPI_Finalize called before MPI_Init: it is an error (MPI_ERR_OTHER)");
    /* First, while everything still works: MPI_COMM_SELF's attribute delete
     * callbacks (the standard's hook for code that must run at finalize). */
    hashi_comms_finalize_attributes();
    mtx_lock(&model_lock);
    atomic_store(&world_state, HASHI_STATE_FINALIZED);
    if (open_sessions == 0)
        stop_runtime();
    mtx_unlock(&model_lock);
    return MPI_SUCCESS;
}

int hashi_impl_Abort(MPI_Comm comm, int errorcode)
{
    (void)comm; /* the whole job ends: the launcher kills every rank */
    fflush(stdout);
    /* The launcher prints which rank aborted and with which code. */
    hashi_rt_abort(errorcode, NULL);
}

int hashi_impl_Query_thread(int *provided)
{
    HASHI_CHECK_INITIALIZED("MPI_Query_thread");
    if (!provided)
        return hashi_err_raise("MPI_Query_thread", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "provided is NULL");
    *provided = hashi_thread_level;
    return MPI_SUCCESS;
}

int hashi_impl_Is_thread_main(int *flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Is_thread_main");
    if (!flag)
        return hashi_err_raise("MPI_Is_thread_main", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "flag is NULL");
    *flag = (uintptr_t)pthread_self() == hashi_main_thread;
    return MPI_SUCCESS;
}
