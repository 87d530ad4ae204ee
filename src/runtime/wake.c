#include "runtime/wake.h"
#include "runtime/log.h"
#include "runtime/rt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
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
    char pad[64 - 2 * sizeof(uint32_t)];
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
static char shm_name[128];      /* set when the segment lives in /dev/shm (no job dir) */

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

int hashi_wake_create(char *err, size_t errlen)
{
    if (hashi_job.singleton || hashi_job.host_local_size < 2)
        return 0;
    int nlocal = compute_layout();
    if (nlocal < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
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
    enabled = hashi_job.oversubscribed;
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
    if (segment)
        munmap(segment, segment_len);
    segment = NULL;
    my_word = NULL;
    enabled = 0;
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

void hashi_wake_peer(int world_rank)
{
    if (!enabled || local_index[world_rank] < 0)
        return;
    struct wake_word *w = &segment->words[local_index[world_rank]];
    store_load_fence();
    if (atomic_load_explicit(&w->sleeping, memory_order_relaxed)) {
        atomic_fetch_add(&w->seq, 1);
        futex(&w->seq, FUTEX_WAKE, INT_MAX, NULL);
    }
}

int hashi_wake_sleep(int (*poll)(void), long timeout_us)
{
    if (!enabled) {
        sched_yield();
        return poll();
    }
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
