/*
 * Oversubscribed binding (src/runtime/topo.c, docs/dimmnet.md "Sixth session").
 *
 *   oversub_bind bound | floating
 *
 * Run with more ranks than the machine's CPUs and no launcher binding (mpirun
 * binds only when every rank has a core). `bound`: every rank runs on exactly
 * one CPU, host-local rank i on the (i mod cpus)-th CPU of the machine's
 * set, so every CPU carries ranks/cpus ranks (give or take one).
 * `floating` (HASHI_OVERSUBSCRIBED_BIND=0): every rank keeps the whole set.
 * Then a few barriers and an allreduce, so the bound ranks still complete
 * collectives. With no more ranks than CPUs only the collectives are
 * checked (the launcher's binding applies then).
 */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || (strcmp(argv[1], "bound") != 0 && strcmp(argv[1], "floating") != 0)) {
        fprintf(stderr, "usage: oversub_bind bound|floating\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int want_bound = strcmp(argv[1], "bound") == 0;

    /* The machine's set: what the launcher (our parent, never bound) may
     * use; every CPU online if it cannot be read. */
    cpu_set_t machine;
    if (sched_getaffinity(getppid(), sizeof machine, &machine) != 0) {
        CPU_ZERO(&machine);
        for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &machine);
    }
    int ncpus = CPU_COUNT(&machine);
    int oversubscribed = ncpus >= 1 && size > ncpus;
    cpu_set_t mine;
    CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0, "sched_getaffinity failed");
    int count = CPU_COUNT(&mine), cpu = -1;
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
        if (CPU_ISSET(c, &mine))
            cpu = c;

    int *counts = malloc(sizeof(int) * (size_t)size), *cpus = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&count, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(&cpu, 1, MPI_INT, cpus, 1, MPI_INT, MPI_COMM_WORLD);
    if (!oversubscribed) {
        /* nothing of ours to check: the launcher binds */
    } else if (want_bound) {
        /* One machine: host-local rank = rank; rank r on the (r mod ncpus)-th
         * CPU of the machine's set. */
        for (int r = 0; r < size; r++) {
            int nth = -1, c = -1;
            while (nth < r % ncpus)
                if (CPU_ISSET(++c, &machine))
                    nth++;
            CHECK(counts[r] == 1, "rank %d may run on %d cpus, expected one (oversubscribed binding)", r,
                  counts[r]);
            CHECK(cpus[r] == c, "rank %d is bound to cpu %d, expected cpu %d (round-robin over %d cpus)", r,
                  cpus[r], c, ncpus);
        }
    } else {
        for (int r = 0; r < size; r++)
            CHECK(counts[r] == ncpus, "rank %d may run on %d of %d cpus: bound although HASHI_OVERSUBSCRIBED_BIND=0",
                  r, counts[r], ncpus);
    }

    for (int i = 0; i < 50; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    long one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size, "allreduce of ones gave %ld, expected %d", sum, size);
    free(counts);
    free(cpus);
    printf("rank %d of %d ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
