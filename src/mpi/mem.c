/*
 * MPI_Alloc_mem / MPI_Free_mem, and MPI_Pcontrol. Memory for communication
 * comes from hashi_mem_alloc: page-aligned always; from HASHI_MEM_HUGE_MIN
 * bytes on, a 2 MiB-aligned mapping advised for transparent huge pages
 * (THP is `madvise` on the target machines, and single-copy transfers
 * between processes run about twice as fast on huge pages:
 * docs/communicators.md, "Memory"). The one place where a device hook for
 * registering memory would go.
 */
#include "mpi/mem.h"
#include "mpi/mpi_impl.h"
#include "mpi/info.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <threads.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)
/* Below this, a huge page would mostly be waste. */
#define HASHI_MEM_HUGE_MIN ((size_t)4 << 20)

/* The large mappings handed out, to tell them from malloc'd blocks on free. */
struct mapping {
    void *base;
    size_t len;
    struct mapping *next;
};
static struct mapping *mappings;
static mtx_t mappings_lock;
static once_flag mappings_once = ONCE_FLAG_INIT;

static void mappings_init(void)
{
    mtx_init(&mappings_lock, mtx_plain);
}

void *hashi_mem_alloc(size_t size)
{
    if (size < HASHI_MEM_HUGE_MIN) {
        void *p = NULL;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        return posix_memalign(&p, page, size ? size : 1) == 0 ? p : NULL;
    }
    struct mapping *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    size_t len = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    /* Map one huge page more and trim, for a 2 MiB-aligned start. */
    char *raw = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        free(m);
        return NULL;
    }
    char *base = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (base > raw)
        munmap(raw, (size_t)(base - raw));
    if (base + len < raw + len + HUGE_PAGE)
        munmap(base + len, (size_t)(raw + len + HUGE_PAGE - (base + len)));
    (void)madvise(base, len, MADV_HUGEPAGE); /* advice: fine if the kernel declines */
    call_once(&mappings_once, mappings_init);
    m->base = base;
    m->len = len;
    mtx_lock(&mappings_lock);
    m->next = mappings;
    mappings = m;
    mtx_unlock(&mappings_lock);
    return base;
}

void hashi_mem_free(void *p)
{
    if (!p)
        return;
    call_once(&mappings_once, mappings_init);
    mtx_lock(&mappings_lock);
    struct mapping **link = &mappings;
    while (*link && (*link)->base != p)
        link = &(*link)->next;
    struct mapping *m = *link;
    if (m)
        *link = m->next;
    mtx_unlock(&mappings_lock);
    if (m) {
        munmap(m->base, m->len);
        free(m);
    } else {
        free(p);
    }
}

int hashi_impl_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    static const char func[] = "MPI_Alloc_mem";
    HASHI_CHECK_INITIALIZED(func);
    if (size < 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_SIZE, "size %lld is negative", (long long)size);
    if (info != MPI_INFO_NULL && !hashi_info_get(info))
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_INFO, "info is not a valid info object");
    if (!baseptr)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "baseptr is NULL");
    void *p = hashi_mem_alloc((size_t)size);
    if (!p)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "cannot allocate %lld bytes",
                               (long long)size);
    *(void **)baseptr = p;
    return MPI_SUCCESS;
}

int hashi_impl_Free_mem(void *base)
{
    HASHI_CHECK_INITIALIZED("MPI_Free_mem");
    hashi_mem_free(base);
    return MPI_SUCCESS;
}

int hashi_impl_Pcontrol(const int level)
{
    /* The standard defines no effect: profiling libraries intercept it. */
    (void)level;
    return MPI_SUCCESS;
}
