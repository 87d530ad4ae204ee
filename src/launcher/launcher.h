/*
 * mpirun / mpiexec: a launcher with an embedded OpenPMIx server.
 *
 * One process tree per job (see docs/launcher.md):
 *
 *   mpirun (main thread: fork, watch, forward; PMIx progress thread: upcalls)
 *    +- reaper        own session; cleans up if mpirun dies (SIGKILL included)
 *    +- rank 0 .. N-1 one process group, led by rank 0; PR_SET_PDEATHSIG
 *
 * The modules below share struct job; only the main thread touches it, except
 * where a comment says otherwise.
 */
#ifndef HASHI_LAUNCHER_H
#define HASHI_LAUNCHER_H

#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Every message starts "mpirun: ", also when invoked as mpiexec (tests match it). */
#define LAUNCHER_NAME "mpirun"

/* Upper bound on -n: far beyond one node, small enough for pid and fd tables. */
#define LAUNCHER_MAX_RANKS 65535u

/* SIGTERM to the job, then SIGKILL to what is left after this long. */
#define KILL_GRACE_MS 100
/* After MPI_Abort, how long the aborting rank has to exit by itself before the kill. */
#define ABORT_EXIT_WAIT_MS 50
/* How long ending a job waits for PMIx to drop the namespace (normally < 1 ms). */
#define FORGET_JOB_WAIT_MS 200
/* PMIx_server_finalize takes a few ms (a few hundred under valgrind): past this it is stuck. */
#define FINALIZE_WATCHDOG_MS 2000
/* After SIGKILL, stop waiting for ranks stuck in the kernel after this long. */
#define KILL_GIVE_UP_MS 2000

/* Exit statuses of mpirun itself (a failing rank's own status otherwise). */
#define EXIT_LAUNCH_ERROR 1     /* bad usage, bad parameter, launch failure */
#define EXIT_NO_FINALIZE 1      /* a rank exited 0 after PMIx_Init without finalizing */
#define EXIT_NOT_EXECUTABLE 126
#define EXIT_NOT_FOUND 127
#define EXIT_TIMEOUT 124

/* ---- options.c: the command line ---- */

enum bind_policy { BIND_DEFAULT, BIND_CORE, BIND_NONE };

/* One environment change for the ranks, in command-line order. */
struct env_edit {
    const char *name;
    const char *value;      /* NULL: export mpirun's current value (-x VAR) */
    size_t name_len;
};

struct launch_options {
    unsigned nranks;
    enum bind_policy bind;
    bool tag_output;
    bool verbose;
    unsigned timeout_sec;       /* 0: none */
    struct env_edit *edits;     /* --device, --transport, -x */
    size_t nedits;
    char **argv;                /* the program and its arguments (into main's argv) */
};

/*
 * Parse argv. Returns -1 to continue with *opt filled, or an exit status for
 * main to return at once (0 after --help/--version, 1 after a usage error).
 */
int options_parse(int argc, char **argv, struct launch_options *opt);
void options_free(struct launch_options *opt);

/* ---- env.c: the ranks' environment ---- */

/* A NULL-terminated array of malloc'd "NAME=value" strings. */
struct envv {
    char **vars;
    size_t count, cap;
};

int envv_from_environ(struct envv *env);
int envv_set(struct envv *env, const char *name, size_t name_len, const char *value);
const char *envv_get(const struct envv *env, const char *name);
/* A malloc'd copy (strings too) for PMIx_server_setup_fork, which may realloc it. */
char **envv_copy(const struct envv *env);
void envv_free(struct envv *env);
void env_array_free(char **vars);

/*
 * The environment every rank starts from: mpirun's own, minus the inherited
 * PMIx client variables (PMIX_MCA_* stays) and a parent job's HASHI_JOB_* /
 * HASHI_LAUNCHER_*, plus the option edits. Validated with
 * hashi_params_check_environ. 0, or -1 with a message in err.
 */
int rank_env_build(const struct launch_options *opt, struct envv *env, char *err, size_t errlen);

/* Remove PMIX_* (not PMIX_MCA_*) from mpirun's own environment. */
void strip_own_pmix_environ(void);

/*
 * Find the program like execvp (PATH from the ranks' environment). 0 with a
 * malloc'd path in *resolved, or an exit status (126/127) after printing why.
 */
int find_program(const char *name, const char *path_var, char **resolved);

/* ---- jobdir.c: the private job directory and the job's names ---- */

struct job_ids {
    char dir[PATH_MAX];         /* $TMPDIR/hashi-<uid>.<pid>.<random>, mode 0700 */
    char pmix_dir[PATH_MAX];    /* dir/pmix: the PMIx server's tmpdir */
    const char *name;           /* basename of dir: the PMIx nspace and the /dev/shm prefix */
    char key[17];               /* HASHI_JOB_KEY: 64 random bits in hex */
};

int job_ids_create(struct job_ids *ids, char *err, size_t errlen) __attribute__((nonnull));
/* Remove the job directory tree and /dev/shm/<name>* (async-signal-safe enough for the reaper). */
void job_ids_cleanup(const char *dir, const char *shm_prefix);

/* ---- reaper.c: the process that cleans up when mpirun cannot ---- */

struct reaper {
    pid_t pid;
    int fd;                     /* write end; its EOF tells the reaper mpirun is gone */
};

/* argc / argv: mpirun's, for the reaper to write its own name over. */
int reaper_start(struct reaper *r, int argc, char **argv);
/* The reaper removes dir and the /dev/shm objects named after its basename. */
void reaper_watch_dir(struct reaper *r, const char *dir);
void reaper_watch_pgid(struct reaper *r, pid_t pgid);
void reaper_forget_pgid(struct reaper *r);
/* Normal end: the reaper exits without touching anything. */
void reaper_dismiss(struct reaper *r);

/* ---- server.c: the embedded PMIx server ---- */

/* What the PMIx progress thread reports to the main thread. */
enum upcall_kind {
    UPCALL_CONNECTED,           /* the rank called PMIx_Init */
    UPCALL_FINALIZED,           /* the rank called PMIx_Finalize */
    UPCALL_ABORT,               /* the rank called PMIx_Abort (MPI_Abort) */
    UPCALL_FENCE,               /* a fence went through the host (diagnostics only) */
};

struct upcall_event {
    struct upcall_event *next;
    enum upcall_kind kind;
    uint32_t rank;
    int status;                 /* ABORT: the code */
    char *msg;                  /* ABORT: the message, or NULL */
};

struct job;
struct hwloc_topology;

int server_start(struct job *job, struct hwloc_topology *topo, char *err, size_t errlen);
int server_register_job(struct job *job, char *err, size_t errlen);
/* register_client + setup_fork for one rank; env may be reallocated. */
int server_prepare_rank(struct job *job, unsigned rank, char ***env, char *err, size_t errlen);
/* The eventfd that becomes readable when upcall events are queued. */
int server_event_fd(void);
/* Take every queued event, oldest first (the caller frees them). */
struct upcall_event *server_take_events(void);
void upcall_event_free(struct upcall_event *ev);
/* Drop the job's namespace before its ranks are killed (waits at most wait_ms). */
void server_forget_job(int wait_ms);
void server_stop(void);

/* ---- spawn.c: binding and forking the ranks ---- */

int binding_plan(struct job *job, struct hwloc_topology *topo, char *err, size_t errlen);
/* Fork every rank. 0, or -1 after recording a launch failure in the job. */
int spawn_ranks(struct job *job);

/* ---- iof.c: the ranks' standard streams ---- */

enum { STREAM_OUT, STREAM_ERR, STREAM_COUNT };

/* A rank's stdout or stderr pipe when tagging output: bytes until a newline. */
struct out_stream {
    int fd;                     /* read end, -1 once closed */
    char *buf;
    size_t len, cap;
};

/* Bytes from mpirun's stdin waiting for rank 0 (when stdin is a terminal). */
struct stdin_forward {
    int src;                    /* mpirun's stdin, -1 when done */
    int dst;                    /* write end of rank 0's stdin pipe, -1 when closed */
    char buf[16384];
    size_t off, len;
};

void iof_stream_init(struct out_stream *s, int fd);
/* Read what is there and write the complete lines, tagged. */
void iof_stream_readable(struct job *job, unsigned rank, int which);
/* Read to EOF/EAGAIN, write any last partial line with a newline, close. */
void iof_stream_finish(struct job *job, unsigned rank, int which);
/* Free the tagging buffer (at exit). */
void iof_release(void);
void stdin_forward_readable(struct job *job);
void stdin_forward_writable(struct job *job);
void stdin_forward_stop(struct job *job);

/* ---- monitor.c: the main loop ---- */

/* Run until every rank has been reaped (the outcome is in job->failure). */
void job_monitor(struct job *job);
/* SIGTERM now, SIGKILL after KILL_GRACE_MS (idempotent). */
void job_terminate(struct job *job);

/* ---- the job ---- */

enum rank_state { RANK_NOT_STARTED, RANK_RUNNING, RANK_EXITED };

struct rank_proc {
    pid_t pid;
    enum rank_state state;
    bool connected;             /* PMIx_Init reached the server */
    bool finalized;             /* PMIx_Finalize reached the server */
    bool bound;
    cpu_set_t cpus;             /* affinity applied in the child when bound */
    struct out_stream out[STREAM_COUNT];
};

enum failure_kind {
    FAIL_NONE,
    FAIL_EXIT_STATUS,           /* exited non-zero */
    FAIL_SIGNAL,                /* killed by a signal */
    FAIL_ABORT,                 /* called MPI_Abort / PMIx_Abort */
    FAIL_NO_FINALIZE,           /* exited 0 after PMIx_Init without PMIx_Finalize */
    FAIL_TIMEOUT,
    FAIL_LAUNCH,                /* mpirun could not start a rank */
};

/* The first failure of the job: it alone decides the message and exit status. */
struct job_failure {
    enum failure_kind kind;
    unsigned rank;
    pid_t pid;
    int code;                   /* exit status, signal number or abort code */
    char *msg;                  /* abort message or launch error (malloc'd) */
};

enum stdin_mode {
    STDIN_DIRECT,               /* rank 0 inherits mpirun's stdin (file, pipe) */
    STDIN_FORWARD,              /* a terminal: mpirun copies it into a pipe */
    STDIN_NONE,                 /* a terminal that mpirun does not own: /dev/null */
};

/* pid -> rank, sorted by pid, for waitpid(-1) results. */
struct pid_rank {
    pid_t pid;
    unsigned rank;
};

struct job {
    const struct launch_options *opt;
    unsigned nranks;
    struct rank_proc *ranks;
    struct pid_rank *by_pid;
    unsigned nby_pid;
    unsigned running;           /* forked and not yet reaped */
    unsigned connected;         /* ranks that called PMIx_Init */

    struct job_ids ids;
    struct envv env;            /* base environment of every rank */
    char *program;              /* resolved path passed to execve */
    char **sh_argv;             /* "/bin/sh program args...", for ENOEXEC scripts */
    char hostname[256];

    pid_t launcher_pid;
    pid_t pgid;                 /* the job's process group (rank 0's pid), 0 before */
    struct reaper reaper;

    bool bind;                  /* ranks[].cpus is applied */
    unsigned ncores;

    enum stdin_mode stdin_mode;
    int devnull_fd;             /* stdin of every rank but 0 */
    struct stdin_forward fwd;
    bool out_broken[STREAM_COUNT];  /* our stdout/stderr is gone: stop forwarding */

    bool raised_nofile;
    unsigned long long nofile_soft; /* to restore in the ranks */

    int sig_fd;                 /* signalfd: SIGCHLD, SIGINT, SIGTERM, SIGHUP */
    sigset_t saved_sigmask;     /* mpirun's mask at start, restored in the ranks */
    bool sighup_ignored;        /* started under nohup: neither we nor the ranks see SIGHUP */

    /* Termination: 0 = not started, else the deadlines on CLOCK_MONOTONIC. */
    bool terminating;
    int64_t kill_deadline_ms;
    int64_t give_up_deadline_ms;
    int64_t timeout_deadline_ms;
    int64_t abort_deadline_ms;  /* the aborting rank's time to exit on its own */
    int forwarded_signals;

    struct job_failure failure;
};

/* Record the job's first failure (later ones are consequences). True if recorded. */
bool job_fail(struct job *job, enum failure_kind kind, unsigned rank, pid_t pid, int code,
              const char *msg);
/* Print the failure's one line on stderr (none for success); return mpirun's exit status. */
int job_failure_report(const struct job *job);

/* ---- util.c: clock, messages, small I/O helpers ---- */

extern bool launcher_verbose;

void launcher_clock_start(void);
int64_t monotonic_ms(void);
/* "mpirun: message" on stderr, written in one piece. */
void launcher_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "mpirun: [  12.345 ms] message" on stderr with --verbose. */
void launcher_log_at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define launcher_log(...) \
    do { if (launcher_verbose) launcher_log_at(__VA_ARGS__); } while (0)

/* Write everything, waiting if fd is non-blocking. 0, or -1 with errno. */
int write_all(int fd, const void *buf, size_t len);
int set_nonblocking(int fd);
/* Random bytes from getrandom(). 0 or -1. */
int random_bytes(void *buf, size_t len);

#endif
