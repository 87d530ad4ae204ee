#include "runtime/topo.h"
#include "runtime/rt.h"
#include "runtime/params.h"
#include "runtime/log.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void hashi_topo_decide(void)
{
    const char *mode = hashi_param_str(HASHI_P_OVERSUBSCRIBED);
    if (strcmp(mode, "yes") == 0 || strcmp(mode, "no") == 0) {
        hashi_job.oversubscribed = strcmp(mode, "yes") == 0;
        return;
    }
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int r = 0; r < hashi_job.size; r++) {
        if (!hashi_job.peer_on_host[r])
            continue;
        void *data = NULL;
        size_t len = 0;
        if (hashi_rt_get(r, TOPO_CPUSET_KEY, &data, &len) == 0 && len == sizeof(cpu_set_t))
            CPU_OR(&all, &all, (cpu_set_t *)data);
        free(data);
    }
    int cpus = CPU_COUNT(&all);
    hashi_job.oversubscribed = cpus > 0 && hashi_job.host_local_size > cpus;
    HASHI_DEBUG(1, "%d local ranks share %d cpus: %soversubscribed", hashi_job.host_local_size, cpus,
                hashi_job.oversubscribed ? "" : "not ");
}
