/*
 * mpirun: check everything that can be checked before creating anything,
 * start the reaper, then the job directory, the PMIx server and the ranks;
 * watch them; clean up; exit with the job's status.
 */
#include "launcher/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* Pipes and sockets must never land on 0-2: a closed std fd becomes /dev/null. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int null_fd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (null_fd >= 0 && null_fd != fd) {
            dup2(null_fd, fd);
            close(null_fd);
        }
    }
}

/* What the main loop reads from its signalfd. */
static void watched_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

/*
 * The signals mpirun watches are blocked from the start (a signalfd reads
 * them later) so PMIx's threads inherit the block and none of them can take
 * the default action for us. SIGINT and SIGTERM are ours even if inherited
 * ignored (a script's background job ignores SIGINT): mpirun stays
 * interruptible, as other mpiruns are. An ignored SIGHUP is a nohup, kept.
 */
static pthread_t main_thread;

/* A thread that unblocks the watched signals (PMIx's do) hands them back to the
 * main thread, where they stay blocked and wait for the signalfd. */
static void forward_to_main(int sig)
{
    if (!pthread_equal(pthread_self(), main_thread))
        pthread_kill(main_thread, sig);
}

static void setup_signals(struct job *job)
{
    struct sigaction dfl = { .sa_handler = forward_to_main }, ign = { .sa_handler = SIG_IGN }, old;
    main_thread = pthread_self();
    sigset_t watched;
    watched_signals(&watched);
    sigprocmask(SIG_BLOCK, &watched, &job->saved_sigmask);

    /* A parent that ignores SIGCHLD would have the kernel reap our ranks for us. */
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGHUP, NULL, &old);
    job->sighup_ignored = old.sa_handler == SIG_IGN;
    /* Writes to a closed pipe (our stdout, rank 0's stdin, the reaper) are errors, not death. */
    sigaction(SIGPIPE, &ign, NULL);
    /* Reading the terminal after losing the foreground gives EIO instead of stopping us. */
    sigaction(SIGTTIN, &ign, NULL);
}

static int open_signalfd(struct job *job, char *err, size_t errlen)
{
    sigset_t watched;
    watched_signals(&watched);
    job->sig_fd = signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC);
    if (job->sig_fd < 0) {
        snprintf(err, errlen, "signalfd: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static enum stdin_mode choose_stdin_mode(void)
{
    if (!isatty(STDIN_FILENO))
        return STDIN_DIRECT;
    /* A terminal we do not own (mpirun run in the background) is not read at all. */
    return tcgetpgrp(STDIN_FILENO) == getpgrp() ? STDIN_FORWARD : STDIN_NONE;
}

/* PMIx keeps a socket per rank and tagging two pipes: make room for many ranks. */
static void raise_fd_limit(struct job *job)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
        return;
    rlim_t want = (rlim_t)job->nranks * 4 + 256;
    if (lim.rlim_cur >= want)
        return;
    job->nofile_soft = (unsigned long long)lim.rlim_cur;
    lim.rlim_cur = lim.rlim_max == RLIM_INFINITY || lim.rlim_max > want ? want : lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) == 0)
        job->raised_nofile = true;
}

static hwloc_topology_t load_topology(void)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return NULL;
    /*
     * Cores and PUs come from Linux sysfs; the CPUID (x86) backend only adds
     * detail nobody here uses, costs about 0.5 ms, and prints a warning
     * under valgrind. The topology is lent to PMIx, which needs no more.
     */
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return NULL;
    }
    return topo;
}

/* "/bin/sh program args...": how execvp runs a script that has no #! line. */
static char **make_sh_argv(const char *program, char **argv)
{
    size_t argc = 0;
    while (argv[argc])
        argc++;
    char **sh_argv = calloc(argc + 2, sizeof *sh_argv);
    if (!sh_argv)
        return NULL;
    sh_argv[0] = "/bin/sh";
    sh_argv[1] = (char *)program;
    for (size_t i = 1; i < argc; i++)
        sh_argv[i + 1] = argv[i];
    return sh_argv;
}

static int set_job_env(struct job *job)
{
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)job->launcher_pid);
    const struct { const char *name, *value; } vars[] = {
        { "HASHI_JOB_DIR", job->ids.dir },
        { "HASHI_JOB_KEY", job->ids.key },
        { "HASHI_LAUNCHER_PID", pid },
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (envv_set(&job->env, vars[i].name, strlen(vars[i].name), vars[i].value) != 0)
            return -1;
    /* An explicit --bind-to none also keeps oversubscribed ranks from
     * binding themselves (runtime/topo.c). */
    static const char no_self_bind[] = "HASHI_OVERSUBSCRIBED_BIND";
    if (job->opt->bind == BIND_NONE &&
        envv_set(&job->env, no_self_bind, sizeof no_self_bind - 1, "0") != 0)
        return -1;
    return 0;
}

static void job_init(struct job *job, const struct launch_options *opt)
{
    memset(job, 0, sizeof *job);
    job->opt = opt;
    job->nranks = opt->nranks;
    job->launcher_pid = getpid();
    job->reaper.pid = -1;
    job->reaper.fd = -1;
    job->devnull_fd = -1;
    job->sig_fd = -1;
    job->fwd.src = job->fwd.dst = -1;
}

static void job_release(struct job *job)
{
    if (job->ranks)
        for (unsigned r = 0; r < job->nranks; r++)
            for (int w = 0; w < STREAM_COUNT; w++)
                iof_stream_finish(job, r, w);
    iof_release();
    free(job->ranks);
    free(job->by_pid);
    free(job->program);
    free(job->sh_argv);
    free(job->failure.msg);
    envv_free(&job->env);
    if (job->devnull_fd >= 0)
        close(job->devnull_fd);
    if (job->sig_fd >= 0)
        close(job->sig_fd);
}

/*
 * PMIx_server_finalize has been seen to deadlock inside OpenPMIx 4.2.2 after
 * clients died (see server_forget_job). Every rank is reaped by then and the
 * outcome reported: if it does not return, exit with the job's status anyway
 * and leave the files to the reaper.
 */
static volatile sig_atomic_t status_if_stuck;

static void finalize_stuck(int sig)
{
    (void)sig;
    static const char msg[] = LAUNCHER_NAME ": PMIx_server_finalize is stuck; exiting without it\n";
    if (launcher_verbose) {
        ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)n;
    }
    _exit(status_if_stuck);
}

static void stop_server_guarded(int status)
{
    status_if_stuck = status;
    struct sigaction act = { .sa_handler = finalize_stuck };
    sigaction(SIGALRM, &act, NULL);
    struct itimerval watchdog = {
        .it_value = { .tv_sec = FINALIZE_WATCHDOG_MS / 1000, .tv_usec = (FINALIZE_WATCHDOG_MS % 1000) * 1000 },
    };
    setitimer(ITIMER_REAL, &watchdog, NULL);
    server_stop();
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
}

/* Everything after the reaper exists: resources, ranks, the wait. */
static void run_job(struct job *job, hwloc_topology_t *topo)
{
    char err[1024];
    if (job_ids_create(&job->ids, err, sizeof err) != 0) {
        job_fail(job, FAIL_LAUNCH, 0, 0, EXIT_LAUNCH_ERROR, err);
        return;
    }
    reaper_watch_dir(&job->reaper, job->ids.dir);
    launcher_log("job directory %s", job->ids.dir);
    if (set_job_env(job) != 0) {
        job_fail(job, FAIL_LAUNCH, 0, 0, EXIT_LAUNCH_ERROR, "out of memory");
        return;
    }

    job->stdin_mode = choose_stdin_mode();
    job->devnull_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (job->devnull_fd < 0) {
        snprintf(err, sizeof err, "/dev/null: %s", strerror(errno));
        job_fail(job, FAIL_LAUNCH, 0, 0, EXIT_LAUNCH_ERROR, err);
        return;
    }
    raise_fd_limit(job);
    if (open_signalfd(job, err, sizeof err) != 0) {
        job_fail(job, FAIL_LAUNCH, 0, 0, EXIT_LAUNCH_ERROR, err);
        return;
    }

    *topo = load_topology();
    launcher_log("topology %s", *topo ? "loaded" : "unavailable");
    if (binding_plan(job, *topo, err, sizeof err) != 0 ||
        server_start(job, *topo, err, sizeof err) != 0) {
        job_fail(job, FAIL_LAUNCH, 0, 0, EXIT_LAUNCH_ERROR, err);
        return;
    }
    launcher_log("PMIx server up");
    if (server_register_job(job, err, sizeof err) != 0) {
        job_fail(job, FAIL_LAUNCH, 0, 0, EXIT_LAUNCH_ERROR, err);
        return;
    }
    launcher_log("namespace %s registered", job->ids.name);
    spawn_ranks(job);
    job_monitor(job);
}

int main(int argc, char **argv)
{
    launcher_clock_start();
    ensure_std_fds();

    struct launch_options opt;
    int rc = options_parse(argc, argv, &opt);
    if (rc >= 0) {
        options_free(&opt);
        return rc;
    }
    launcher_verbose = opt.verbose;

    struct job job;
    job_init(&job, &opt);
    setup_signals(&job);

    /* Launch speed (about 2x for small jobs); the ranks inherit it. The user's choice wins. */
    setenv("PMIX_MCA_gds", "hash", 0);

    /* Everything that can be refused is refused before anything is created. */
    char err[1024];
    if (rank_env_build(&opt, &job.env, err, sizeof err) != 0) {
        launcher_error("%s", err);
        job_release(&job);
        options_free(&opt);
        return EXIT_LAUNCH_ERROR;
    }
    const char *verbose_param = envv_get(&job.env, "HASHI_VERBOSE");
    if (verbose_param && atoi(verbose_param) > 0)
        launcher_verbose = true;
    rc = find_program(opt.argv[0], envv_get(&job.env, "PATH"), &job.program);
    if (rc == 0 && (!(job.sh_argv = make_sh_argv(job.program, opt.argv)) ||
                    !(job.ranks = calloc(job.nranks, sizeof *job.ranks)))) {
        launcher_error("out of memory");
        rc = EXIT_LAUNCH_ERROR;
    }
    if (rc != 0) {
        job_release(&job);
        options_free(&opt);
        return rc;
    }
    for (unsigned r = 0; r < job.nranks; r++)
        for (int w = 0; w < STREAM_COUNT; w++)
            job.ranks[r].out[w].fd = -1;
    if (gethostname(job.hostname, sizeof job.hostname - 1) != 0)
        snprintf(job.hostname, sizeof job.hostname, "localhost");
    strip_own_pmix_environ();
    launcher_log("%u rank(s) of %s", job.nranks, job.program);

    /* From here on, whatever exists is known to the reaper first. */
    if (reaper_start(&job.reaper, argc, argv) != 0) {
        launcher_error("cannot start the reaper: %s", strerror(errno));
        job_release(&job);
        options_free(&opt);
        return EXIT_LAUNCH_ERROR;
    }
    launcher_log("reaper pid %d", (int)job.reaper.pid);

    hwloc_topology_t topo = NULL;
    run_job(&job, &topo);

    /* Every rank is reaped and its output written: the verdict first, then teardown. */
    int status = job_failure_report(&job);
    stop_server_guarded(status);
    if (topo)
        hwloc_topology_destroy(topo);
    if (job.ids.dir[0])
        job_ids_cleanup(job.ids.dir, job.ids.name);
    reaper_dismiss(&job.reaper);
    launcher_log("cleaned up");

    job_release(&job);
    options_free(&opt);
    return status;
}
