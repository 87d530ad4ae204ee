/*
 * Binding and forking the ranks.
 *
 * Ranks are forked from the main thread (PR_SET_PDEATHSIG follows the thread
 * that forked, and the main thread lives as long as mpirun). mpirun has PMIx
 * threads by then, so the child does only async-signal-safe work before
 * execve: everything it needs (environment, cpu set, fds) is prepared first.
 */
#include "launcher/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

int binding_plan(struct job *job, struct hwloc_topology *topo, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    job->bind = false;
    if (!topo) {
        launcher_log("no topology: ranks are not bound");
        return 0;
    }
    /* Cores the topology shows are the ones we may use (hwloc drops disallowed PUs). */
    hwloc_obj_type_t unit = HWLOC_OBJ_CORE;
    int ncores = hwloc_get_nbobjs_by_type(topo, unit);
    if (ncores <= 0) {
        unit = HWLOC_OBJ_PU;
        ncores = hwloc_get_nbobjs_by_type(topo, unit);
    }
    job->ncores = ncores > 0 ? (unsigned)ncores : 0;
    if (job->ncores == 0)
        return 0;

    switch (job->opt->bind) {
    case BIND_CORE: job->bind = true; break;
    case BIND_NONE: job->bind = false; break;
    case BIND_DEFAULT: job->bind = job->nranks <= job->ncores; break;
    }
    launcher_log("%u cores, %u ranks: %s", job->ncores, job->nranks,
                 job->bind ? "binding rank i to core i mod cores" : "not binding");
    if (!job->bind)
        return 0;

    for (unsigned r = 0; r < job->nranks; r++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, unit, r % job->ncores);
        struct rank_proc *rp = &job->ranks[r];
        if (!core || hwloc_cpuset_to_glibc_sched_affinity(topo, core->cpuset, &rp->cpus,
                                                          sizeof rp->cpus) != 0)
            continue;       /* this rank runs unbound rather than not at all */
        rp->bound = true;
        if (launcher_verbose) {
            char *list = NULL;
            hwloc_bitmap_list_asprintf(&list, core->cpuset);
            launcher_log("rank %u: core %u (cpus %s)", r, r % job->ncores, list ? list : "?");
            free(list);
        }
    }
    return 0;
}

/* In the child: become rank r. Only async-signal-safe calls until execve. */
static __attribute__((noreturn)) void rank_exec(const struct job *job, unsigned r, char **env,
                                                int in_fd, int out_fd, int err_fd)
{
    /* One process group for the job, so one kill() reaches all of it. */
    setpgid(0, job->pgid);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != job->launcher_pid)
        _exit(EXIT_LAUNCH_ERROR);           /* mpirun died before the prctl */

    /*
     * Signals mpirun forwards must be able to end the rank (a script's
     * background job would otherwise hand down an ignored SIGINT); a nohup
     * stays. The mask is the one mpirun was started with.
     */
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    static const int defaulted[] = { SIGPIPE, SIGTTIN, SIGINT, SIGTERM };
    for (size_t i = 0; i < sizeof defaulted / sizeof defaulted[0]; i++)
        sigaction(defaulted[i], &dfl, NULL);
    if (!job->sighup_ignored)
        sigaction(SIGHUP, &dfl, NULL);
    sigprocmask(SIG_SETMASK, &job->saved_sigmask, NULL);
    if (job->raised_nofile) {
        struct rlimit lim;
        if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
            lim.rlim_cur = (rlim_t)job->nofile_soft;
            setrlimit(RLIMIT_NOFILE, &lim);
        }
    }

    if (in_fd != STDIN_FILENO)
        dup2(in_fd, STDIN_FILENO);
    if (out_fd >= 0)
        dup2(out_fd, STDOUT_FILENO);
    if (err_fd >= 0)
        dup2(err_fd, STDERR_FILENO);
    /* Nothing else of mpirun's (PMIx sockets, inherited fds) reaches the program. */
    close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);

    const struct rank_proc *rp = &job->ranks[r];
    if (rp->bound)
        sched_setaffinity(0, sizeof rp->cpus, &rp->cpus);

    execve(job->program, job->opt->argv, env);
    if (errno == ENOEXEC)                   /* a script without #!: what execvp does */
        execve(job->sh_argv[0], job->sh_argv, env);
    int exec_errno = errno;
    /* mpirun never calls setlocale: strerror returns a static string here. */
    const char *why = strerror(exec_errno);
    const char *parts[] = { LAUNCHER_NAME ": cannot execute ", job->program, ": ", why, "\n" };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (write(STDERR_FILENO, parts[i], strlen(parts[i])) < 0)
            break;
    _exit(exec_errno == ENOENT ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE);
}

static void close_pair(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    fds[0] = fds[1] = -1;
}

static int launch_failure(struct job *job, unsigned r, const char *what, int errnum)
{
    char msg[768];
    snprintf(msg, sizeof msg, "cannot start rank %u: %s%s%s", r, what,
             errnum ? ": " : "", errnum ? strerror(errnum) : "");
    job_fail(job, FAIL_LAUNCH, r, 0, EXIT_LAUNCH_ERROR, msg);
    return -1;
}

int spawn_ranks(struct job *job)
{
    const bool tag = job->opt->tag_output;
    int rank0_stdin[2] = { -1, -1 };
    if (job->stdin_mode == STDIN_FORWARD) {
        if (pipe2(rank0_stdin, O_CLOEXEC) != 0 || set_nonblocking(rank0_stdin[1]) != 0)
            return launch_failure(job, 0, "stdin pipe", errno);
        job->fwd.src = STDIN_FILENO;
        job->fwd.dst = rank0_stdin[1];
        rank0_stdin[1] = -1;
    }

    int rc = 0;
    for (unsigned r = 0; r < job->nranks; r++) {
        struct rank_proc *rp = &job->ranks[r];
        char err[512];
        char **env = envv_copy(&job->env);
        if (!env) {
            rc = launch_failure(job, r, "out of memory", 0);
            break;
        }
        if (server_prepare_rank(job, r, &env, err, sizeof err) != 0) {
            env_array_free(env);
            rc = launch_failure(job, r, err, 0);
            break;
        }
        int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
        if (tag && (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)) {
            int e = errno;
            close_pair(out_pipe);
            env_array_free(env);
            rc = launch_failure(job, r, "output pipe", e);
            break;
        }
        int in_fd = job->devnull_fd;
        if (r == 0 && job->stdin_mode == STDIN_DIRECT)
            in_fd = STDIN_FILENO;
        else if (r == 0 && job->stdin_mode == STDIN_FORWARD)
            in_fd = rank0_stdin[0];

        pid_t pid = fork();
        if (pid == 0)
            rank_exec(job, r, env, in_fd, out_pipe[1], err_pipe[1]);
        int fork_errno = errno;
        env_array_free(env);
        if (pid < 0) {
            close_pair(out_pipe);
            close_pair(err_pipe);
            rc = launch_failure(job, r, "fork", fork_errno);
            break;
        }

        /* Also from this side, so the group exists before the next fork relies on it. */
        if (job->pgid == 0) {
            setpgid(pid, pid);
            job->pgid = pid;
            reaper_watch_pgid(&job->reaper, pid);
        } else {
            setpgid(pid, job->pgid);
        }
        rp->pid = pid;
        rp->state = RANK_RUNNING;
        job->running++;

        if (tag) {
            close(out_pipe[1]);
            close(err_pipe[1]);
            set_nonblocking(out_pipe[0]);
            set_nonblocking(err_pipe[0]);
            iof_stream_init(&rp->out[STREAM_OUT], out_pipe[0]);
            iof_stream_init(&rp->out[STREAM_ERR], err_pipe[0]);
        }
        if (r == 0 && rank0_stdin[0] >= 0) {
            close(rank0_stdin[0]);
            rank0_stdin[0] = -1;
        }
        launcher_log("rank %u: pid %d", r, (int)pid);
    }
    close_pair(rank0_stdin);
    return rc;
}
