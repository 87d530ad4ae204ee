#include "runtime/topo.h"
#include "runtime/rt.h"
#include "runtime/params.h"
#include "runtime/log.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOPO_CPUSET_KEY "hashi.cpuset"

void hashi_topo_affinity_string(char *buf, size_t len)
{
    cpu_set_t set;
    size_t used = 0;
    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(buf, len, "unknown");
        return;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE && used < len; cpu++) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
            last++;
        int n = last > cpu ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", cpu, last)
                           : snprintf(buf + used, len - used, "%s%d", used ? "," : "", cpu);
        if (n < 0)
            break;
        used += (size_t)n;
        cpu = last;
    }
}

int hashi_topo_publish(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        CPU_ZERO(&set);
    return hashi_rt_put(TOPO_CPUSET_KEY, &set, sizeof set);
}

/*
 * Oversubscribed and unbound (the launcher binds only when every rank has a
 * core: Open MPI's policy too), the ranks float, and the kernel keeps moving
 * them: three ranks end up on one core and one on the other (the real-time
 * class never rebalances a task that only yields), or a rank migrates while
 * its peers hand the core over. Each wait in
 * a collective then costs more context switches than the two ranks per core
 * make necessary. Bound round-robin (host-local rank i to the i-th CPU of
 * the node's set, as mpirun --bind-to core), every core runs ranks/cpus of
 * them and hands over between those only (docs/dimmnet.md, "Sixth session":
 * 4 ranks on 2 cores under chrt, 8-byte barrier 3.9 -> 3.35 us, allreduce
 * 4.5 -> 4.2; 8 ranks: every small collective about twice as fast).
 * Only when every rank of the host was given the same set (nobody bound
 * them): a launcher's or the user's binding is left alone.
 */
static void bind_round_robin(const cpu_set_t *all, int same_sets)
{
    cpu_set_t mine;
    if (!hashi_param_int(HASHI_P_OVERSUBSCRIBED_BIND) || !same_sets ||
        sched_getaffinity(0, sizeof mine, &mine) != 0 || !CPU_EQUAL(&mine, all))
        return;
    int index = 0;
    for (int r = 0; r < hashi_job.rank; r++)
        index += hashi_job.peer_on_host[r] != 0;
    int target = index % CPU_COUNT(all), cpu = -1;
    for (int seen = -1; seen < target;)
        if (CPU_ISSET(++cpu, all))
            seen++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        HASHI_DEBUG(1, "binding to cpu %d failed: running unbound", cpu);
        return;
    }
    HASHI_DEBUG(1, "oversubscribed: host-local rank %d bound to cpu %d", index, cpu);
}

void hashi_topo_decide(void)
{
    cpu_set_t all;
    CPU_ZERO(&all);
    int same_sets = 1, first = 1;
    for (int r = 0; r < hashi_job.size; r++) {
        if (!hashi_job.peer_on_host[r])
            continue;
        void *data = NULL;
        size_t len = 0;
        if (hashi_rt_get(r, TOPO_CPUSET_KEY, &data, &len) == 0 && len == sizeof(cpu_set_t)) {
            if (!first && !CPU_EQUAL(&all, (cpu_set_t *)data))
                same_sets = 0;
            CPU_OR(&all, &all, (cpu_set_t *)data);
            first = 0;
        } else {
            same_sets = 0;
        }
        free(data);
    }
    int cpus = CPU_COUNT(&all);
    hashi_job.host_cpus = cpus;
    const char *mode = hashi_param_str(HASHI_P_OVERSUBSCRIBED);
    if (strcmp(mode, "yes") == 0 || strcmp(mode, "no") == 0) {
        hashi_job.oversubscribed = strcmp(mode, "yes") == 0;
        return;
    }
    hashi_job.oversubscribed = cpus > 0 && hashi_job.host_local_size > cpus;
    HASHI_DEBUG(1, "%d local ranks share %d cpus: %soversubscribed", hashi_job.host_local_size, cpus,
                hashi_job.oversubscribed ? "" : "not ");
    if (hashi_job.oversubscribed)
        bind_round_robin(&all, same_sets);
}

int hashi_topo_may_oversubscribe(void)
{
    const char *mode = hashi_param_str(HASHI_P_OVERSUBSCRIBED);
    if (strcmp(mode, "yes") == 0 || strcmp(mode, "no") == 0)
        return strcmp(mode, "yes") == 0;
    if (hashi_job.singleton || hashi_job.host_local_size < 2)
        return 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t mine;
    int cpus = sched_getaffinity(0, sizeof mine, &mine) == 0 ? CPU_COUNT(&mine) : 0;
    if (cpus <= 1)
        cpus = online > 0 ? (int)online : 1;
    return hashi_job.host_local_size > cpus;
}
