/*
 * AOTF against an 8-byte BOTF round trip, and the machine's floor: a
 * cross-process cache-line ping-pong (docs/dimmnet.md). Two ranks, straight
 * on the transport layer (no MPI), so the figures are the primitives' own:
 *
 *   floor  two processes forked here ping-pong through one shared cache line
 *          (flag + payload), spinning with PAUSE
 *   aotf   rank 0 stores k into rank 1's LLCM, rank 1 answers k into rank 0's
 *   botf   the same with 8-byte block messages (header 16 + 8 bytes)
 *
 * Each figure is measured REPS times (the two vCPUs move between "near" and
 * "far" placements; machine-notes.md): best and median round trip, in ns.
 *   mpirun -n 2 [-x HASHI_TRANSPORT=emu|fabric] examples/bench/dimmnet_rtt [rounds [floor: 1 | 0]]
 */
#include "runtime/log.h"
#include "runtime/params.h"
#include "runtime/rt.h"
#include "runtime/wake.h"
#include "transport/transport.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPS 7
#define LLCM_SIZE 4096
#define BLOCK_MAX 64

static char err[1024];
static int me;
static volatile uint64_t blocks_seen;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "dimmnet_rtt: rank %d: %s\n", me, what);
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, double *rtt)
{
    qsort(rtt, REPS, sizeof *rtt, cmp_double);
    printf("%-6s round trip best %8.1f ns  median %8.1f ns   (one way %.1f / %.1f ns)\n", name, rtt[0],
           rtt[REPS / 2], rtt[0] / 2, rtt[REPS / 2] / 2);
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* The floor: one shared cache line between two forked processes, one per
 * core (the launcher may have bound this rank to one CPU). */
static void floor_pingpong(long rounds)
{
    double rtt[REPS];
    cpu_set_t saved;
    sched_getaffinity(0, sizeof saved, &saved);
    pin(0);
    for (int rep = 0; rep < REPS; rep++) {
        volatile uint64_t *line = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (line == MAP_FAILED)
            die("mmap");
        line[0] = 0;
        pid_t pid = fork();
        if (pid == 0) {
            pin(1);
            for (long k = 1; k <= rounds; k++) {
                while (__atomic_load_n(&line[0], __ATOMIC_ACQUIRE) != (uint64_t)(2 * k - 1))
                    __builtin_ia32_pause();
                __atomic_store_n(&line[0], (uint64_t)(2 * k), __ATOMIC_RELEASE);
            }
            _exit(0);
        }
        double t0 = now_ns();
        for (long k = 1; k <= rounds; k++) {
            __atomic_store_n(&line[0], (uint64_t)(2 * k - 1), __ATOMIC_RELEASE);
            while (__atomic_load_n(&line[0], __ATOMIC_ACQUIRE) != (uint64_t)(2 * k))
                __builtin_ia32_pause();
        }
        rtt[rep] = (now_ns() - t0) / (double)rounds;
        waitpid(pid, NULL, 0);
        munmap((void *)line, 4096);
    }
    sched_setaffinity(0, sizeof saved, &saved);
    report("floor", rtt);
}

static void on_block(void *ctx, int src, const void *msg, size_t len)
{
    (void)ctx;
    (void)src;
    (void)msg;
    (void)len;
    blocks_seen++;
}

static void on_notify(void *ctx, int src, uint64_t value)
{
    (void)ctx;
    (void)src;
    (void)value;
}

static void wait_word(const uint64_t *w, uint64_t want)
{
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) < want)
        if (!hashi_transport_progress())
            __builtin_ia32_pause();
}

static void wait_blocks(uint64_t want)
{
    while (blocks_seen < want)
        if (!hashi_transport_progress())
            __builtin_ia32_pause();
}

static void aotf_pingpong(long rounds)
{
    double rtt[REPS];
    const uint64_t *word = hashi_transport_llcm();
    int peer = 1 - me;
    uint64_t k = 0;
    for (int rep = 0; rep < REPS; rep++) {
        if (hashi_rt_fence(err, sizeof err) != 0)
            die(err);
        double t0 = now_ns();
        for (long i = 0; i < rounds; i++) {
            k++;
            if (me == 0) {
                while (hashi_tl(peer)->tiny_write(peer, 0, k, 8) != 0)
                    hashi_transport_progress();
                wait_word(word, k);
            } else {
                wait_word(word, k);
                while (hashi_tl(peer)->tiny_write(peer, 0, k, 8) != 0)
                    hashi_transport_progress();
            }
        }
        rtt[rep] = (now_ns() - t0) / (double)rounds;
    }
    if (me == 0)
        report("aotf", rtt);
}

static void botf_pingpong(long rounds)
{
    double rtt[REPS];
    int peer = 1 - me;
    uint64_t payload = 0;
    unsigned char hdr[16] = { 0 };
    for (int rep = 0; rep < REPS; rep++) {
        if (hashi_rt_fence(err, sizeof err) != 0)
            die(err);
        double t0 = now_ns();
        for (long i = 0; i < rounds; i++) {
            payload++;
            if (me == 0) {
                while (hashi_tl_block_send(peer, hdr, sizeof hdr, &payload, sizeof payload) != 0)
                    hashi_transport_progress();
                wait_blocks(payload);
            } else {
                wait_blocks(payload);
                while (hashi_tl_block_send(peer, hdr, sizeof hdr, &payload, sizeof payload) != 0)
                    hashi_transport_progress();
            }
        }
        rtt[rep] = (now_ns() - t0) / (double)rounds;
    }
    if (me == 0)
        report("botf", rtt);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 100000;
    if (hashi_params_load(err, sizeof err) != 0)
        die(err);
    if (hashi_rt_init(err, sizeof err) != 0)
        die(err);
    me = hashi_job.rank;
    if (hashi_job.size != 2)
        die("run with 2 ranks");
    /* A third process spinning beside the two ranks: under chrt -f on two
     * cores the floor then starves the other rank; skip it with a 0. */
    if (me == 0 && (argc < 3 || atoi(argv[2]) != 0))
        floor_pingpong(rounds);
    struct hashi_tl_config cfg = {
        .llcm_size = LLCM_SIZE, .block_max = BLOCK_MAX, .on_block = on_block, .on_notify = on_notify,
    };
    if (hashi_transport_init(&cfg, err, sizeof err) != 0 || hashi_wake_create(err, sizeof err) != 0 ||
        hashi_rt_exchange(err, sizeof err) != 0 || hashi_wake_attach(err, sizeof err) != 0 ||
        hashi_transport_connect(err, sizeof err) != 0 || hashi_rt_fence(err, sizeof err) != 0)
        die(err);
    if (hashi_wake_needs_unlink())
        hashi_wake_unlink();
    if (me == 0)
        printf("transport %s\n", hashi_tl(1)->name);
    aotf_pingpong(rounds);
    botf_pingpong(rounds);
    if (hashi_rt_fence(err, sizeof err) != 0)
        die(err);
    hashi_transport_finalize();
    hashi_wake_detach();
    hashi_rt_finalize();
    return 0;
}
