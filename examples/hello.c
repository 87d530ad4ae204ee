/* hello: each rank prints its rank, the job size, its host and the CPUs it is bound to. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <mpi.h>
#include <sched.h>
#include <stdio.h>

static void cpu_list(char *buf, size_t len)
{
    cpu_set_t set;
    size_t used = 0;
    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int cpu = 0; cpu < CPU_SETSIZE && used + 8 < len; cpu++)
        if (CPU_ISSET(cpu, &set))
            used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", cpu);
}

int main(int argc, char **argv)
{
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME], cpus[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    cpu_list(cpus, sizeof cpus);
    printf("rank %d of %d on %s, bound to cpu %s\n", rank, size, host, cpus);
    MPI_Finalize();
    return 0;
}
