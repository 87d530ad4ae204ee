#include "runtime/wake.h"
#include "runtime/log.h"
#include "runtime/rt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAKE_MAGIC 0x48415348574b3031ULL /* "HASHWK01" */

struct wake_word {
    _Atomic uint32_t seq;
    _Atomic uint32_t sleeping;
    /* Set once at attach: the owner sleeps in poll(2), wake it through its
     * FIFO (not the futex). */
    _Atomic uint32_t in_poll;
    /* Local peers that opened the owner's FIFO: the last one removes its name. */
    _Atomic uint32_t fifo_opened;
    char pad[64 - 4 * sizeof(uint32_t)];
};

struct wake_segment {
    uint64_t magic;
    uint64_t job_key;
    uint32_t nlocal;
    char pad[64 - 2 * sizeof(uint64_t) - sizeof(uint32_t)];
    struct wake_word words[];
};

static struct wake_segment *segment;
static size_t segment_len;
static int *local_index;        /* world rank -> index among local ranks, -1 if remote */
static struct wake_word *my_word;
static int enabled;
int hashi_wake_enabled_flag;       /* enabled, for the inline test in wake.h */
static char shm_name[128];      /* set when the segment lives in /dev/shm (no job dir) */

/* Sleeping in poll(2): the provider's wait object and the FIFOs. */
static int provider_fd = -1;
static int (*provider_trywait)(void);
static int fd_mode;             /* this rank sleeps in poll(2) */
static int my_fifo = -1;        /* this rank's FIFO, read and write (O_RDWR: never a POLLHUP) */
static int *fifo_fd;            /* local index -> that rank's FIFO, write end (-1: none) */
static uint32_t nlocal_ranks;
/* This rank's threads asleep in poll(2); the last to leave empties the FIFO. */
static pthread_mutex_t fifo_lock = PTHREAD_MUTEX_INITIALIZER;
static int fifo_sleepers;

static int segment_path(char *path, size_t len)
{
    if (hashi_job.job_dir[0]) {
        snprintf(path, len, "%s/wake.%d", hashi_job.job_dir, hashi_job.host_node_id);
        return 0;
    }
    snprintf(shm_name, sizeof shm_name, "/hashi-%u-%016llx-wake.%d", (unsigned)getuid(),
             (unsigned long long)hashi_job.key, hashi_job.host_node_id);
    snprintf(path, len, "%s", shm_name);
    return 1;
}

static int open_segment(int create, int *is_shm)
{
    char path[4200];
    *is_shm = segment_path(path, sizeof path);
    int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
    return *is_shm ? shm_open(path, flags, 0600) : open(path, flags, 0600);
}

static int compute_layout(void)
{
    local_index = malloc(sizeof(int) * (size_t)hashi_job.size);
    if (!local_index)
        return -1;
    int n = 0;
    for (int r = 0; r < hashi_job.size; r++)
        local_index[r] = hashi_job.peer_on_host[r] ? n++ : -1;
    segment_len = sizeof(struct wake_segment) + (size_t)n * sizeof(struct wake_word);
    return n;
}

void hashi_wake_use_fd(int fd, int (*trywait)(void))
{
    provider_fd = trywait ? fd : -1;
    provider_trywait = trywait;
}

static void fifo_path(char *path, size_t len, int index)
{
    snprintf(path, len, "%s/wake.%d.fifo.%d", hashi_job.job_dir, hashi_job.host_node_id, index);
}

/*
 * A rank that may sleep on its provider's fd gets a FIFO in the job
 * directory before the exchange, so that every local peer finds it at attach.
 * Without one (no job directory, no wait fd, mkfifo failed) it keeps the
 * futex: peers look for the FIFO and take its absence for that.
 */
static void create_fifo(void)
{
    if (provider_fd < 0 || !hashi_job.job_dir[0])
        return;
    char path[4200];
    fifo_path(path, sizeof path, local_index[hashi_job.rank]);
    if (mkfifo(path, 0600) != 0) {
        HASHI_DEBUG(1, "wake: mkfifo %s failed (%s): sleeping on the futex word", path, strerror(errno));
        return;
    }
    my_fifo = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (my_fifo < 0) {
        HASHI_DEBUG(1, "wake: opening %s failed (%s): sleeping on the futex word", path, strerror(errno));
        unlink(path);
    }
}

/* Open every local peer's FIFO (write end; O_RDWR, so that a peer gone
 * first never makes a write raise SIGPIPE). The last peer to open one
 * removes its name: the open descriptors are all that is needed. */
static int open_fifos(char *err, size_t errlen)
{
    nlocal_ranks = segment->nlocal;
    fifo_fd = malloc(sizeof(int) * nlocal_ranks);
    if (!fifo_fd) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int mine = local_index[hashi_job.rank];
    for (uint32_t i = 0; i < nlocal_ranks; i++)
        fifo_fd[i] = -1;
    fifo_fd[mine] = my_fifo;
    if (!hashi_job.job_dir[0])
        return 0;
    for (uint32_t i = 0; i < nlocal_ranks; i++) {
        if ((int)i == mine)
            continue;
        char path[4200];
        fifo_path(path, sizeof path, (int)i);
        int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            continue; /* that rank sleeps on its futex word */
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != getuid() ||
            (st.st_mode & 077)) {
            snprintf(err, errlen, "opening the wake FIFO %s failed: %s", path,
                     fd < 0 ? strerror(errno) : "not a FIFO of this user with mode 0600");
            if (fd >= 0)
                close(fd);
            return -1;
        }
        fifo_fd[i] = fd;
        if (atomic_fetch_add(&segment->words[i].fifo_opened, 1) + 1 == nlocal_ranks - 1)
            unlink(path);
    }
    return 0;
}

int hashi_wake_create(char *err, size_t errlen)
{
    if (hashi_job.singleton || hashi_job.host_local_size < 2)
        return 0;
    int nlocal = compute_layout();
    if (nlocal < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    create_fifo();
    if (local_index[hashi_job.rank] != 0)
        return 0;
    int is_shm;
    int fd = open_segment(1, &is_shm);
    if (fd < 0 || ftruncate(fd, (off_t)segment_len) != 0) {
        snprintf(err, errlen, "creating the node's wake segment failed: %s%s", strerror(errno),
                 errno == ENOSPC ? " (is /dev/shm or the temporary directory full?)" : "");
        if (fd >= 0) close(fd);
        return -1;
    }
    struct wake_segment *seg = mmap(NULL, segment_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED) {
        snprintf(err, errlen, "mapping the node's wake segment failed: %s", strerror(errno));
        return -1;
    }
    seg->job_key = hashi_job.key;
    seg->nlocal = (uint32_t)nlocal;
    atomic_thread_fence(memory_order_release);
    seg->magic = WAKE_MAGIC;
    segment = seg;
    return 0;
}

int hashi_wake_attach(char *err, size_t errlen)
{
    if (hashi_job.singleton || hashi_job.host_local_size < 2)
        return 0;
    if (!segment) {
        int is_shm;
        int fd = open_segment(0, &is_shm);
        if (fd < 0) {
            snprintf(err, errlen, "attaching the node's wake segment failed: %s", strerror(errno));
            return -1;
        }
        struct stat st;
        if (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 077) ||
            (size_t)st.st_size != segment_len) {
            close(fd);
            snprintf(err, errlen, "the node's wake segment has the wrong owner, mode or size: refusing it");
            return -1;
        }
        struct wake_segment *seg = mmap(NULL, segment_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (seg == MAP_FAILED) {
            snprintf(err, errlen, "mapping the node's wake segment failed: %s", strerror(errno));
            return -1;
        }
        if (seg->magic != WAKE_MAGIC || seg->job_key != hashi_job.key) {
            munmap(seg, segment_len);
            snprintf(err, errlen, "the wake segment belongs to another job (job key mismatch): refusing to attach");
            return -1;
        }
        segment = seg;
    }
    my_word = &segment->words[local_index[hashi_job.rank]];
    if (open_fifos(err, errlen) != 0)
        return -1;
    enabled = hashi_job.oversubscribed;
    hashi_wake_enabled_flag = enabled;
    /* Sleeping in poll(2) pays a trywait per sleep and a byte per wake-up
     * (docs/p2p.md): only when the rank sleeps at all. */
    fd_mode = enabled && my_fifo >= 0 && provider_fd >= 0;
    if (fd_mode)
        atomic_store(&my_word->in_poll, 1);
    HASHI_DEBUG(1, "wake: %s", !enabled ? "not sleeping (not oversubscribed)"
                               : fd_mode ? "sleeping in poll(2) on the provider's wait fd and the wake FIFO"
                                         : "sleeping on the futex word");
    return 0;
}

int hashi_wake_needs_unlink(void)
{
    return segment && shm_name[0];
}

void hashi_wake_unlink(void)
{
    if (segment && shm_name[0] && local_index[hashi_job.rank] == 0)
        shm_unlink(shm_name);
}

void hashi_wake_detach(void)
{
    if (fifo_fd) {
        for (uint32_t i = 0; i < nlocal_ranks; i++)
            if (fifo_fd[i] >= 0 && fifo_fd[i] != my_fifo)
                close(fifo_fd[i]);
        free(fifo_fd);
        fifo_fd = NULL;
    }
    if (my_fifo >= 0) {
        /* Normally gone already (the last peer to open it removed it). */
        char path[4200];
        fifo_path(path, sizeof path, local_index[hashi_job.rank]);
        unlink(path);
        close(my_fifo);
        my_fifo = -1;
    }
    fd_mode = 0;
    provider_fd = -1;
    provider_trywait = NULL;
    if (segment)
        munmap(segment, segment_len);
    segment = NULL;
    my_word = NULL;
    enabled = 0;
    hashi_wake_enabled_flag = 0;
    free(local_index);
    local_index = NULL;
}

int hashi_wake_enabled(void)
{
    return enabled;
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* Orders the caller's earlier stores (the data) before its next load (the
 * peer's `sleeping`): the other half of the sleeper's check. On x86 a locked
 * no-op on the stack does it at about half the cost of the MFENCE that a
 * seq_cst fence compiles to, and every message to a local peer pays it. */
static inline void store_load_fence(void)
{
#if defined(__x86_64__)
    __asm__ __volatile__("lock; orl $0, -4(%%rsp)" ::: "memory", "cc");
#else
    atomic_thread_fence(memory_order_seq_cst);
#endif
}

void hashi_wake_peer_sleeping(int world_rank)
{
    if (!enabled || local_index[world_rank] < 0)
        return;
    struct wake_word *w = &segment->words[local_index[world_rank]];
    store_load_fence();
    if (atomic_load_explicit(&w->sleeping, memory_order_relaxed)) {
        /* Pairs with the sleeper's announcement, which follows its in_poll
         * store: a rank seen asleep is seen with its way of sleeping. */
        atomic_thread_fence(memory_order_acquire);
        atomic_fetch_add(&w->seq, 1);
        int fd = fifo_fd[local_index[world_rank]];
        if (atomic_load_explicit(&w->in_poll, memory_order_relaxed) && fd >= 0) {
            /* Full (-EAGAIN): a wake-up is pending already. */
            char byte = 0;
            ssize_t rc = write(fd, &byte, 1);
            (void)rc;
        } else {
            futex(&w->seq, FUTEX_WAKE, INT_MAX, NULL);
        }
    }
}

int hashi_wake_arm(void)
{
    return fd_mode ? provider_trywait() : 0;
}

/*
 * hashi_wake_sleep in poll(2), on the provider's fd and this rank's FIFO. The
 * same protocol as the futex: announce (sleeping), poll once more (which
 * ends by arming the provider: hashi_wake_arm), and block unless seq moved.
 * A waker bumps seq before writing its byte, so a sleeper that saw seq
 * unmoved finds the byte in the FIFO. A byte stays there while any thread of
 * this rank sleeps (each of them must see it: one drain would hide it from
 * the others), and the last thread to leave empties the FIFO, under a lock
 * that also orders it before any later thread's announcement: a byte written
 * after that drain belongs to a later wake-up and at worst ends a later sleep
 * early.
 */
static int sleep_in_poll(int (*poll_fn)(void), long timeout_us)
{
    pthread_mutex_lock(&fifo_lock);
    uint32_t seen = atomic_load(&my_word->seq);
    atomic_fetch_add(&my_word->sleeping, 1);
    fifo_sleepers++;
    pthread_mutex_unlock(&fifo_lock);
    int done = poll_fn();
    if (done == 0 && atomic_load(&my_word->seq) == seen) {
        struct pollfd fds[2] = { { .fd = my_fifo, .events = POLLIN }, { .fd = provider_fd, .events = POLLIN } };
        struct timespec ts = { timeout_us / 1000000, (timeout_us % 1000000) * 1000 };
        ppoll(fds, 2, &ts, NULL);
    }
    pthread_mutex_lock(&fifo_lock);
    atomic_fetch_sub(&my_word->sleeping, 1);
    if (--fifo_sleepers == 0) {
        char sink[256];
        while (read(my_fifo, sink, sizeof sink) > 0)
            ;
    }
    pthread_mutex_unlock(&fifo_lock);
    return done;
}

int hashi_wake_sleep(int (*poll)(void), long timeout_us)
{
    if (!enabled) {
        sched_yield();
        return poll();
    }
    if (fd_mode)
        return sleep_in_poll(poll, timeout_us);
    uint32_t seen = atomic_load(&my_word->seq);
    /* A count, not a flag: under MPI_THREAD_MULTIPLE several threads of a
     * rank may sleep here at once, and the first to wake must not hide the
     * others from their wakers. */
    atomic_fetch_add(&my_word->sleeping, 1);
    int done = poll();
    if (done == 0) {
        struct timespec ts = { timeout_us / 1000000, (timeout_us % 1000000) * 1000 };
        futex(&my_word->seq, FUTEX_WAIT, seen, &ts);
    }
    atomic_fetch_sub(&my_word->sleeping, 1);
    return done;
}
