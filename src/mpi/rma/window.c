/*
 * Window objects: the four creation flavors, MPI_Win_free, dynamic
 * attach / detach, shared memory and MPI_Win_shared_query, and what a window
 * carries besides its memory (group, name, hints, predefined attributes).
 * Error handlers are in errors.c, cached attributes in attr.c.
 */
#include "mpi/rma/rma.h"
#include "mpi/attr.h"
#include "mpi/handles.h"
#include "runtime/rt.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct rma_win *rma_win_arg(const char *func, MPI_Win win, int *rc)
{
    struct rma_win *w = rma_win_get(win);
    *rc = MPI_SUCCESS;
    if (!w)
        *rc = hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_WIN,
                              win == MPI_WIN_NULL ? "the window is MPI_WIN_NULL" : "not a valid window");
    return w;
}

int rma_rank_of_world(const struct rma_win *w, int world)
{
    for (int r = 0; r < w->size; r++)
        if (hashi_comm_to_world(w->comm, r) == world)
            return r;
    return -1;
}

/* ---- creation ---- */

static int shm_setup(struct rma_win *w, size_t align, char *why, size_t whylen);

static void win_destroy(struct rma_win *w)
{
    rma_device_detach(w);   /* before the memory goes */
    rma_dev_lock_detach(w);
    if (w->comm)
        hashi_comm_release(w->comm);
    if (w->reply_comm)
        hashi_comm_release(w->reply_comm);
    if (w->shm)
        munmap(w->shm, w->shm_len);
    free(w->owned);
    for (struct rma_region *r = w->regions, *next; r; r = next) {
        next = r->next;
        free(r);
    }
    if (w->info)
        hashi_info_destroy(w->info);
    free(w->peers);
    free(w->shm_offset);
    free(w->origin_error);
    free(w->lock_type);
    free(w->access);
    free(w->touched);
    free(w->pending);
    free(w->shm_posts_seen);
    w->h.magic = 0;
    hashi_handle_forget(&w->h);
    free(w);
}

/* Checks shared by the creation calls: the communicator, the hints, the
 * displacement unit and size. NULL with the error raised in *rc. */
static struct MPI_ABI_Comm *create_args(const char *func, MPI_Comm comm, MPI_Info info, MPI_Aint size,
                                        MPI_Aint disp_unit, MPI_Win *win, int *rc)
{
    struct MPI_ABI_Comm *c = hashi_comm_arg(func, comm, rc);
    if (!c)
        return NULL;
    if (hashi_comm_is_inter(c)) {
        /* A window's group is one group (MPI-4.1 12.2). */
        *rc = hashi_err_comm(func, comm, MPI_ERR_COMM, "comm is an intercommunicator; windows need an intracommunicator");
        return NULL;
    }
    if (info != MPI_INFO_NULL && !hashi_info_get(info)) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_INFO, "info is not a valid info object");
        return NULL;
    }
    if (size < 0) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_SIZE, "size %lld is negative", (long long)size);
        return NULL;
    }
    if (disp_unit <= 0) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_DISP, "disp_unit %lld is not positive", (long long)disp_unit);
        return NULL;
    }
    if (!win) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_ARG, "win is NULL");
        return NULL;
    }
    return c;
}

/*
 * The collective part every flavor shares: a private communicator over the
 * same group, every member's (base, size, disp_unit), the target service.
 * Errors are raised on the parent communicator.
 */
static int win_new(const char *func, struct MPI_ABI_Comm *parent, MPI_Info info, int flavor, void *base,
                   MPI_Aint size, MPI_Aint disp_unit, int shm_want, struct rma_win **out)
{
    MPI_Comm ph = hashi_comm_handle(parent);
    struct MPI_ABI_Comm *c, *rc_comm;
    int rc = hashi_comm_create_from(func, parent, 1, NULL, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = hashi_comm_create_from(func, parent, 1, NULL, &rc_comm);
    if (rc != MPI_SUCCESS) {
        hashi_comm_release(c);
        return rc;
    }
    snprintf(c->name, sizeof c->name, "%s", "a window's communicator");
    snprintf(rc_comm->name, sizeof rc_comm->name, "%s", "a window's reply communicator");
    int n = c->size;
    struct rma_win *w = calloc(1, sizeof *w);
    if (w) {
        w->comm = c;
        w->reply_comm = rc_comm;
        w->reply_context = rc_comm->context_id;
        w->peers = calloc((size_t)n, sizeof *w->peers);
        w->origin_error = calloc((size_t)n, sizeof *w->origin_error);
        w->lock_type = calloc((size_t)n, sizeof *w->lock_type);
        w->access = calloc((size_t)n, 1);
        w->touched = calloc((size_t)n, 1);
        w->pending = calloc((size_t)n, sizeof *w->pending);
        if (info != MPI_INFO_NULL)
            w->info = hashi_info_copy(hashi_info_get(info));
    }
    int failed = !w || !w->peers || !w->origin_error || !w->lock_type || !w->access || !w->touched ||
                 !w->pending || (info != MPI_INFO_NULL && !w->info);
    /* Every member takes part in the exchange, so a failure here cannot
     * leave the others waiting: it is agreed on through the sizes. */
    struct rma_peer mine = { (uint64_t)(uintptr_t)base, failed ? -1 : (int64_t)size, (int64_t)disp_unit, 0,
                             shm_want, 0, 0, { 0 } };
    /* The device's key travels with the rest: the device path is taken
     * only if every member attached (rma_device_setup). A member asking
     * for a node-local window has no memory yet: no device then. */
    if (!failed && size >= 0 && !shm_want)
        rma_device_attach(w, flavor, base, size, &mine);
    if (!failed && size >= 0)
        rma_dev_lock_attach(w, flavor, c, shm_want, &mine);
    struct rma_peer *all = failed ? malloc((size_t)n * sizeof *all) : w->peers;
    if (!all) {
        if (w) {
            w->comm = w->reply_comm = NULL;
            win_destroy(w);
        }
        hashi_comm_release(c);
        hashi_comm_release(rc_comm);
        return hashi_err_comm(func, ph, MPI_ERR_NO_MEM, "out of memory");
    }
    rc = hashi_impl_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                              hashi_comm_handle(c));
    int shm_all = 1;
    for (int r = 0; rc == MPI_SUCCESS && r < n; r++) {
        if (all[r].size < 0)
            failed = 1;
        shm_all &= all[r].shm_want != 0;
    }
    if (!w || all != w->peers)
        free(all);
    if (rc != MPI_SUCCESS || failed) {
        if (w) {
            w->comm = w->reply_comm = NULL;
            win_destroy(w);
        }
        hashi_comm_release(c);
        hashi_comm_release(rc_comm);
        return rc != MPI_SUCCESS ? rc : hashi_err_comm(func, ph, MPI_ERR_NO_MEM, "out of memory (on some member)");
    }
    w->h.magic = HASHI_WIN_MAGIC;
    w->h.errhandler = hashi_errhandler_win_default();
    w->rank = c->rank;
    w->size = n;
    w->flavor = flavor;
    w->base = base;
    w->win_size = size;
    w->disp_unit = disp_unit;
    w->post_expected = -1;
    w->reply_tag = RMA_TAG_FIRST;
    w->attr_model = MPI_WIN_UNIFIED;
    w->attr_flavor = flavor;
    w->attr_size = size;
    w->attr_disp_unit = disp_unit > INT32_MAX ? INT32_MAX : (int)disp_unit;
    w->shm_all = shm_all;
    rc = rma_device_setup(w);
    rma_dev_lock_setup(w);
    /* A node-local window gets no request messages: no service. */
    if (rc == MPI_SUCCESS && !shm_all)
        rc = rma_target_start(w);
    if (rc != MPI_SUCCESS) {
        win_destroy(w);
        return hashi_err_comm(func, ph, rc, "starting the window's target service failed");
    }
    *out = w;
    return MPI_SUCCESS;
}

static int win_create(const char *func, void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                      MPI_Comm comm, MPI_Win *win)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Comm *c = create_args(func, comm, info, size, disp_unit, win, &rc);
    if (!c)
        return rc;
    if (size > 0 && !base)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "base is NULL for a window of %lld bytes", (long long)size);
    struct rma_win *w;
    rc = win_new(func, c, info, MPI_WIN_FLAVOR_CREATE, base, size, disp_unit, 0, &w);
    if (rc != MPI_SUCCESS)
        return rc;
    *win = rma_handle(w);
    return MPI_SUCCESS;
}

int hashi_impl_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    return win_create("MPI_Win_create", base, size, disp_unit, info, comm, win);
}

int hashi_impl_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                            MPI_Win *win)
{
    return win_create("MPI_Win_create_c", base, size, disp_unit, info, comm, win);
}

static int win_allocate(const char *func, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                        void *baseptr, MPI_Win *win)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Comm *c = create_args(func, comm, info, size, disp_unit, win, &rc);
    if (!c)
        return rc;
    if (!baseptr)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "baseptr is NULL");
    /* 64-byte aligned, so any element type is aligned in it; one byte at
     * least, so a rank with size 0 still has a base. All members on this
     * node: the memory comes from a segment they all map, once every
     * member agreed (a node-local window, shm.c). */
    int shm_want = rma_shm_wanted(c, MPI_WIN_FLAVOR_ALLOCATE);
    void *mem = NULL;
    if (!shm_want && posix_memalign(&mem, 64, size > 0 ? (size_t)size : 1) != 0)
        mem = NULL;
    /* A failed allocation on one member is agreed on in win_new. */
    struct rma_win *w;
    rc = win_new(func, c, info, MPI_WIN_FLAVOR_ALLOCATE, mem, mem || shm_want ? size : -1, disp_unit, shm_want, &w);
    if (rc != MPI_SUCCESS) {
        free(mem);
        return rc;
    }
    if (w->shm_all) {
        char why[256];
        rc = shm_setup(w, 64, why, sizeof why);
        if (rc != MPI_SUCCESS) {
            win_destroy(w);
            return hashi_err_comm(func, comm, rc, "%s", why);
        }
        mem = w->base;
    } else if (shm_want) {
        /* Some member has HASHI_RMA_SHM off: ordinary memory after all. */
        if (posix_memalign(&mem, 64, size > 0 ? (size_t)size : 1) != 0) {
            rma_target_stop(w);
            win_destroy(w);
            return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
        }
        w->base = mem;
        w->peers[w->rank].base = (uint64_t)(uintptr_t)mem;
        w->owned = mem;
    } else {
        w->owned = mem;
    }
    *(void **)baseptr = mem;
    *win = rma_handle(w);
    return MPI_SUCCESS;
}

int hashi_impl_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                            MPI_Win *win)
{
    return win_allocate("MPI_Win_allocate", size, disp_unit, info, comm, baseptr, win);
}

int hashi_impl_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                              MPI_Win *win)
{
    return win_allocate("MPI_Win_allocate_c", size, disp_unit, info, comm, baseptr, win);
}

int hashi_impl_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    static const char func[] = "MPI_Win_create_dynamic";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Comm *c = create_args(func, comm, info, 0, 1, win, &rc);
    if (!c)
        return rc;
    struct rma_win *w;
    rc = win_new(func, c, info, MPI_WIN_FLAVOR_DYNAMIC, MPI_BOTTOM, 0, 1, 0, &w);
    if (rc != MPI_SUCCESS)
        return rc;
    *win = rma_handle(w);
    return MPI_SUCCESS;
}

/* ---- shared memory ---- */

/* One mapping for the whole window, made by member 0 and opened by the
 * others by name; the name is unlinked as soon as everyone has it mapped,
 * and it lives under the job directory's prefix, which mpirun's reaper
 * removes after any exit (as the emu transport's segments). */
static void shm_name(const struct rma_win *w, char *buf, size_t len)
{
    int leader = hashi_comm_to_world(w->comm, 0);
    if (hashi_job.job_dir[0]) {
        char dir[sizeof hashi_job.job_dir];
        snprintf(dir, sizeof dir, "%s", hashi_job.job_dir);
        snprintf(buf, len, "/%s-win-%d-%u", basename(dir), leader, (unsigned)w->comm->context_id);
    } else {
        snprintf(buf, len, "/hashi-%u-%016llx-win-%d-%u", (unsigned)getuid(), (unsigned long long)hashi_job.key,
                 leader, (unsigned)w->comm->context_id);
    }
}

/* Each member's part starts at a multiple of align (a power of two); the
 * control area of node-local windows (shm.c) follows the data, one cache
 * line per member. */
static int shm_setup(struct rma_win *w, size_t align, char *why, size_t whylen)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!(w->shm_offset = calloc((size_t)w->size, sizeof *w->shm_offset))) {
        snprintf(why, whylen, "out of memory");
        return MPI_ERR_NO_MEM;
    }
    size_t total = 0;
    for (int r = 0; r < w->size; r++) {
        w->shm_offset[r] = (MPI_Aint)total;
        total += (size_t)w->peers[r].size;
        total = (total + align - 1) & ~(align - 1);
    }
    size_t ctl_offset = (total + 63) & ~(size_t)63;
    total = ctl_offset + rma_shm_ctl_bytes(w->size);
    w->shm_len = (total + page - 1) / page * page;
    char name[256];
    shm_name(w, name, sizeof name);
    int fd = -1;
    if (w->rank == 0) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0 && ftruncate(fd, (off_t)w->shm_len) != 0) {
            close(fd);
            shm_unlink(name);
            fd = -1;
        }
    }
    int ok = w->rank != 0 || fd >= 0;
    /* Member 0's success (its creation) decides for all. */
    int all_ok = ok;
    int brc = hashi_impl_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, hashi_comm_handle(w->comm));
    if (brc != MPI_SUCCESS)
        return brc;
    if (!all_ok) {
        if (fd >= 0)
            close(fd);
        snprintf(why, whylen, "creating the shared segment /dev/shm%.128s (%zu bytes) failed%s", name, w->shm_len,
                 w->rank == 0 ? ": is /dev/shm full?" : "");
        return MPI_ERR_NO_MEM;
    }
    if (w->rank != 0)
        fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    void *p = fd >= 0 ? mmap(NULL, w->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    ok = p != MAP_FAILED;
    brc = hashi_impl_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, hashi_comm_handle(w->comm));
    if (w->rank == 0)
        shm_unlink(name);   /* every member has it open or has given up */
    if (brc != MPI_SUCCESS || !all_ok) {
        if (p != MAP_FAILED)
            munmap(p, w->shm_len);
        snprintf(why, whylen, "mapping the shared segment failed on some member");
        return brc != MPI_SUCCESS ? brc : MPI_ERR_NO_MEM;
    }
    w->shm = p;
    w->base = (char *)p + w->shm_offset[w->rank];
    for (int r = 0; r < w->size; r++)
        w->peers[r].base = (uint64_t)(uintptr_t)((char *)p + w->shm_offset[r]);
    if (w->shm_all && rma_shm_attach(w, (char *)p + ctl_offset) != MPI_SUCCESS) {
        snprintf(why, whylen, "out of memory");
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

static int win_allocate_shared(const char *func, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                               void *baseptr, MPI_Win *win)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Comm *c = create_args(func, comm, info, size, disp_unit, win, &rc);
    if (!c)
        return rc;
    if (!baseptr)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "baseptr is NULL");
    /* Every member sees the same answer (locality is symmetric). */
    for (int r = 0; r < c->size; r++) {
        int world = hashi_comm_to_world(c, r);
        if (world != hashi_job.rank && !(hashi_job.peer_is_local && hashi_job.peer_is_local[world]))
            return hashi_err_comm(func, comm, MPI_ERR_RMA_SHARED,
                                  "rank %d of the communicator (world rank %d) is on another node: shared "
                                  "windows need every member on one node (MPI_Comm_split_type with "
                                  "MPI_COMM_TYPE_SHARED makes such a communicator)", r, world);
    }
    struct rma_win *w;
    rc = win_new(func, c, info, MPI_WIN_FLAVOR_SHARED, NULL, size, disp_unit,
                 rma_shm_wanted(c, MPI_WIN_FLAVOR_SHARED), &w);
    if (rc != MPI_SUCCESS)
        return rc;
    /* Contiguous by default (MPI 4.1 sec. 12.2.3), elements of every type
     * aligned; with alloc_shared_noncontig each member starts on its own page. */
    const char *noncontig = w->info ? hashi_info_value(w->info, "alloc_shared_noncontig") : NULL;
    char why[256];
    rc = shm_setup(w, noncontig && strcmp(noncontig, "true") == 0 ? (size_t)sysconf(_SC_PAGESIZE) : 16, why,
                   sizeof why);
    if (rc != MPI_SUCCESS) {
        rma_target_stop(w);
        win_destroy(w);
        return hashi_err_comm(func, comm, rc, "%s", why);
    }
    *(void **)baseptr = w->base;
    *win = rma_handle(w);
    return MPI_SUCCESS;
}

int hashi_impl_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                   MPI_Win *win)
{
    return win_allocate_shared("MPI_Win_allocate_shared", size, disp_unit, info, comm, baseptr, win);
}

int hashi_impl_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                                     void *baseptr, MPI_Win *win)
{
    return win_allocate_shared("MPI_Win_allocate_shared_c", size, disp_unit, info, comm, baseptr, win);
}

static int shared_query(const char *func, MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                        void *baseptr)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (w->flavor != MPI_WIN_FLAVOR_SHARED)
        return hashi_err_win(func, win, MPI_ERR_RMA_FLAVOR,
                             "the window was not made by MPI_Win_allocate_shared");
    if (!size || !disp_unit || !baseptr)
        return hashi_err_win(func, win, MPI_ERR_ARG, "size, disp_unit or baseptr is NULL");
    if (rank == MPI_PROC_NULL) {
        /* The first member with memory, or the start of the segment. */
        for (rank = 0; rank < w->size - 1 && w->peers[rank].size == 0; rank++)
            ;
    } else if (rank < 0 || rank >= w->size) {
        return hashi_err_win(func, win, MPI_ERR_RANK, "rank %d is not in the window's group (size %d)", rank,
                             w->size);
    }
    *size = (MPI_Aint)w->peers[rank].size;
    *disp_unit = (MPI_Aint)w->peers[rank].disp_unit;
    *(void **)baseptr = (void *)(uintptr_t)w->peers[rank].base;
    return MPI_SUCCESS;
}

int hashi_impl_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    MPI_Aint unit = 0;
    int rc = shared_query("MPI_Win_shared_query", win, rank, size, disp_unit ? &unit : NULL, baseptr);
    if (rc == MPI_SUCCESS)
        *disp_unit = (int)unit;
    return rc;
}

int hashi_impl_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit, void *baseptr)
{
    return shared_query("MPI_Win_shared_query_c", win, rank, size, disp_unit, baseptr);
}

/* ---- dynamic windows ---- */

int hashi_impl_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    static const char func[] = "MPI_Win_attach";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return hashi_err_win(func, win, MPI_ERR_RMA_FLAVOR, "the window was not made by MPI_Win_create_dynamic");
    if (size < 0)
        return hashi_err_win(func, win, MPI_ERR_SIZE, "size %lld is negative", (long long)size);
    if (size > 0 && !base)
        return hashi_err_win(func, win, MPI_ERR_ARG, "base is NULL");
    uintptr_t lo = (uintptr_t)base, hi = lo + (uintptr_t)size;
    for (struct rma_region *r = w->regions; r; r = r->next)
        if (lo < r->base + r->size && r->base < hi)
            return hashi_err_win(func, win, MPI_ERR_RMA_ATTACH,
                                 "[%p, +%lld) overlaps a region attached already", base, (long long)size);
    struct rma_region *r = malloc(sizeof *r);
    if (!r)
        return hashi_err_win(func, win, MPI_ERR_NO_MEM, "out of memory");
    *r = (struct rma_region){ w->regions, lo, (size_t)size };
    w->regions = r;
    return MPI_SUCCESS;
}

int hashi_impl_Win_detach(MPI_Win win, const void *base)
{
    static const char func[] = "MPI_Win_detach";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return hashi_err_win(func, win, MPI_ERR_RMA_FLAVOR, "the window was not made by MPI_Win_create_dynamic");
    for (struct rma_region **p = &w->regions; *p; p = &(*p)->next) {
        if ((*p)->base == (uintptr_t)base) {
            struct rma_region *r = *p;
            *p = r->next;
            free(r);
            return MPI_SUCCESS;
        }
    }
    return hashi_err_win(func, win, MPI_ERR_RMA_ATTACH, "%p is not the base of a region attached to the window",
                         base);
}

/* ---- MPI_Win_free ---- */

int hashi_impl_Win_free(MPI_Win *win)
{
    static const char func[] = "MPI_Win_free";
    HASHI_CHECK_INITIALIZED(func);
    if (!win)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "win is NULL");
    int rc;
    struct rma_win *w = rma_win_arg(func, *win, &rc);
    if (!w)
        return rc;
    int locked = w->lock_all;
    for (int r = 0; r < w->size; r++)
        locked |= w->lock_type[r] != 0;
    if (locked || w->access_epoch || w->post_expected >= 0)
        return hashi_err_win(func, *win, MPI_ERR_RMA_SYNC, "an %s epoch is still open on the window",
                             w->post_expected >= 0 ? "exposure (MPI_Win_post without MPI_Win_wait)"
                             : w->access_epoch ? "access (MPI_Win_start without MPI_Win_complete)"
                                               : "access (a lock not unlocked)");
    /* Our own replies first; then nobody sends to anybody any more once
     * every member is here (every epoch is closed, each closing waited for
     * its target's answer). */
    rma_wait_replies(w, -1);
    rc = hashi_comm_barrier(w->comm);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, *win, rc, "the closing barrier failed");
    rc = hashi_attr_delete_all(HASHI_ATTR_WIN, *win, &w->h.attributes);
    if (rc != MPI_SUCCESS)
        return hashi_err_win(func, *win, rc, "an attribute's delete callback failed");
    rma_target_stop(w);
    hashi_errhandler_release(w->h.errhandler);
    win_destroy(w);
    *win = MPI_WIN_NULL;
    return MPI_SUCCESS;
}

/* ---- group, name, hints, predefined attributes ---- */

int hashi_impl_Win_get_group(MPI_Win win, MPI_Group *group)
{
    static const char func[] = "MPI_Win_get_group";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!group)
        return hashi_err_win(func, win, MPI_ERR_ARG, "group is NULL");
    hashi_group_retain(w->comm->group);
    *group = hashi_group_handle(w->comm->group);
    return MPI_SUCCESS;
}

int hashi_impl_Win_set_name(MPI_Win win, const char *win_name)
{
    static const char func[] = "MPI_Win_set_name";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!win_name)
        return hashi_err_win(func, win, MPI_ERR_ARG, "win_name is NULL");
    snprintf(w->name, sizeof w->name, "%s", win_name);   /* truncated as MPI_Comm_set_name */
    return MPI_SUCCESS;
}

int hashi_impl_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
    static const char func[] = "MPI_Win_get_name";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!win_name || !resultlen)
        return hashi_err_win(func, win, MPI_ERR_ARG, "%s is NULL", !win_name ? "win_name" : "resultlen");
    size_t len = strnlen(w->name, sizeof w->name - 1);
    memcpy(win_name, w->name, len);
    win_name[len] = '\0';
    *resultlen = (int)len;
    return MPI_SUCCESS;
}

int hashi_impl_Win_set_info(MPI_Win win, MPI_Info info)
{
    static const char func[] = "MPI_Win_set_info";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (info == MPI_INFO_NULL)
        return MPI_SUCCESS;
    struct MPI_ABI_Info *obj = hashi_info_get(info);
    if (!obj)
        return hashi_err_win(func, win, MPI_ERR_INFO, "info is not a valid info object");
    if (!w->info && !(w->info = hashi_info_copy(NULL)))
        return hashi_err_win(func, win, MPI_ERR_NO_MEM, "out of memory");
    if (hashi_info_merge(w->info, obj) != 0)
        return hashi_err_win(func, win, MPI_ERR_NO_MEM, "out of memory");
    return MPI_SUCCESS;
}

/* The hints a window reports when not given others (MPI 4.1 sec. 12.2.7). */
static const char *const win_hint_defaults[][2] = {
    { "no_locks", "false" },
    { "accumulate_ordering", "rar,raw,war,waw" },
    { "accumulate_ops", "same_op_no_op" },
    { "same_size", "false" },
    { "same_disp_unit", "false" },
};

int hashi_impl_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
    static const char func[] = "MPI_Win_get_info";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct rma_win *w = rma_win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!info_used)
        return hashi_err_win(func, win, MPI_ERR_ARG, "info_used is NULL");
    struct MPI_ABI_Info *out = hashi_info_copy(NULL);
    int failed = !out;
    for (size_t i = 0; !failed && i < sizeof win_hint_defaults / sizeof *win_hint_defaults; i++)
        failed = hashi_info_put(out, win_hint_defaults[i][0], win_hint_defaults[i][1]) != 0;
    if (!failed && w->info)
        failed = hashi_info_merge(out, w->info) != 0;
    if (failed) {
        if (out)
            hashi_info_destroy(out);
        return hashi_err_win(func, win, MPI_ERR_NO_MEM, "out of memory");
    }
    *info_used = out;
    return MPI_SUCCESS;
}

int hashi_win_predefined_attr(struct MPI_ABI_Win *h, int keyval, void **value, int *found)
{
    struct rma_win *w = (struct rma_win *)h;
    *found = 1;
    switch (keyval) {
    case MPI_WIN_BASE: *value = w->base; return 1;
    case MPI_WIN_SIZE: *value = &w->attr_size; return 1;
    case MPI_WIN_DISP_UNIT: *value = &w->attr_disp_unit; return 1;
    case MPI_WIN_CREATE_FLAVOR: *value = &w->attr_flavor; return 1;
    case MPI_WIN_MODEL: *value = &w->attr_model; return 1;
    default: *found = 0; return 0;
    }
}
