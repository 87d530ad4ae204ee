/*
 * The runtime: who this process is in the job, and the PMIx wire-up (modex)
 * that devices use to exchange their addresses. Ranks are plain PMIx clients,
 * so the same binary runs under Hashi's mpirun, srun --mpi=pmix and Open MPI's
 * mpirun; without a launcher it is a one-rank job (singleton).
 */
#ifndef HASHI_RUNTIME_RT_H
#define HASHI_RUNTIME_RT_H

#include <stddef.h>
#include <stdint.h>

struct hashi_job {
    int rank, size;             /* in MPI_COMM_WORLD */
    int local_rank, local_size; /* among the ranks on this node */
    int node_id, num_nodes;
    int appnum;
    int universe_size;
    int singleton;              /* started without a launcher */
    int oversubscribed;         /* more ranks on this node than cores they may use */
    int host_cpus;              /* CPUs the ranks on this machine may use (their cpusets' union; 0: unknown) */
    uint64_t key;               /* job key: checked when attaching shared resources */
    char hostname[256];
    char job_dir[4096];         /* private 0700 directory removed by the launcher ("" if none) */
    char nspace[256];
    unsigned char *peer_is_local; /* size entries: 1 if the rank shares this node */
    /* The machine itself, which HASHI_VNODES may split into virtual nodes
     * (otherwise the same as the node): what shares cores and wake words. */
    int host_node_id, host_local_size;
    unsigned char *peer_on_host;
    int *node_of_rank;          /* size entries, filled on first use: hashi_rt_node_of */
};

extern struct hashi_job hashi_job;

/* Connect to the launcher (or become a singleton). 0, or -1 with a message in err. */
int hashi_rt_init(char *err, size_t errlen);
/* The node of world rank r (the virtual node under HASHI_VNODES), numbered
 * alike in every process of the job; -1 if the launcher does not say. The
 * first call in a job spanning several nodes asks PMIx about every rank. */
int hashi_rt_node_of(int rank);
/* Tell the launcher this rank finalized cleanly. */
void hashi_rt_finalize(void);
/* End the whole job with this exit code (MPI_Abort). msg, if not NULL, is
 * the one line that says why: the launcher prints it (naming the rank) or,
 * without one, it is logged here; callers do not log it themselves, or a
 * failure would be told twice. Never returns. */
__attribute__((noreturn)) void hashi_rt_abort(int code, const char *msg);

/* Modex: publish a blob under a key, then exchange with every rank (collective). */
int hashi_rt_put(const char *key, const void *data, size_t len);
int hashi_rt_exchange(char *err, size_t errlen);
/* Fetch a peer's blob after the exchange. *data is malloc'd (caller frees). */
int hashi_rt_get(int rank, const char *key, void **data, size_t *len);
/* The same into a fixed-size record: out is zero-filled, then receives up to
 * out_size bytes of the blob; *len is the blob's own length (for the caller's
 * checks of what it holds). */
int hashi_rt_get_record(int rank, const char *key, void *out, size_t out_size, size_t *len);
/* A barrier through the launcher (slow path: init and finalize only). */
int hashi_rt_fence(char *err, size_t errlen);
/* The same, started without blocking: *done becomes HASHI_RT_FENCE_RELEASED
 * (from PMIx's thread) once every rank has entered it, so the caller can keep
 * its device progressing meanwhile (MPI_Finalize); then, after that thread has
 * woken this rank, HASHI_RT_FENCE_FINISHED: only from then on may the caller
 * tear down what the wake-up touches. 0, or -1 with a message. */
#define HASHI_RT_FENCE_RELEASED 1
#define HASHI_RT_FENCE_FINISHED 2
int hashi_rt_fence_start(_Atomic int *done, char *err, size_t errlen);
/* After *done was seen released: wait (yielding) until PMIx's thread has left
 * the callback, which writes *done once more. Every caller must, before *done
 * goes out of scope or the wake words are unmapped. */
void hashi_rt_fence_finish(_Atomic int *done);

#endif
