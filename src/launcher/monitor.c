/*
 * The main loop: one poll() over the signalfd (SIGCHLD and the signals we
 * forward), the upcall eventfd, the ranks' output pipes and stdin. It sleeps
 * until something happens; the only timed waits are deadlines (--timeout,
 * the SIGTERM -> SIGKILL grace), never periodic polling.
 *
 * The first failure ends the job: SIGTERM to the process group, SIGKILL to
 * what is left KILL_GRACE_MS later. Once every rank is reaped the loop
 * returns and main cleans up and prints the one line about the failure.
 */
#include "launcher/launcher.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

bool job_fail(struct job *job, enum failure_kind kind, unsigned rank, pid_t pid, int code,
              const char *msg)
{
    if (job->failure.kind != FAIL_NONE)
        return false;
    job->failure.kind = kind;
    job->failure.rank = rank;
    job->failure.pid = pid;
    job->failure.code = code;
    job->failure.msg = msg ? strdup(msg) : NULL;
    return true;
}

/* The abort message on one line: no control characters, no trailing newline. */
static void one_line(char *s)
{
    size_t len = strlen(s);
    while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
        s[--len] = '\0';
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            s[i] = ' ';
}

int job_failure_report(const struct job *job)
{
    const struct job_failure *f = &job->failure;
    int pid = (int)f->pid;
    switch (f->kind) {
    case FAIL_NONE:
        return 0;
    case FAIL_EXIT_STATUS:
        launcher_error("rank %u (pid %d) exited with status %d", f->rank, pid, f->code);
        return f->code;
    case FAIL_SIGNAL:
        launcher_error("rank %u (pid %d) killed by signal %d (%s)", f->rank, pid, f->code,
                       strsignal(f->code));
        return 128 + f->code;
    case FAIL_ABORT: {
        if (f->msg)
            one_line(f->msg);
        /* MPI_Abort gives no message: one comes from the library ending the
         * job itself (a failed MPI_Init, a fatal error), and says why. */
        if (f->msg && f->msg[0])
            launcher_error("rank %u (pid %d): %s", f->rank, pid, f->msg);
        else
            launcher_error("rank %u (pid %d) called MPI_Abort with code %d", f->rank, pid, f->code);
        /* The shell sees the low 8 bits; an abort must never look like success. */
        int status = f->code & 0xff;
        return status ? status : 1;
    }
    case FAIL_NO_FINALIZE:
        launcher_error("rank %u (pid %d) exited without calling MPI_Finalize", f->rank, pid);
        return EXIT_NO_FINALIZE;
    case FAIL_TIMEOUT:
        launcher_error("job timed out after %u second%s", job->opt->timeout_sec,
                       job->opt->timeout_sec == 1 ? "" : "s");
        return EXIT_TIMEOUT;
    case FAIL_LAUNCH:
        launcher_error("%s", f->msg ? f->msg : "launch failed");
        return f->code ? f->code : EXIT_LAUNCH_ERROR;
    }
    return EXIT_LAUNCH_ERROR;
}

/*
 * Signal the whole job: the process group reaches the ranks and anything
 * they started; a rank that left the group (setsid) is signalled by pid.
 * Only while a rank is unreaped: the group id is then still reserved.
 */
static void signal_job(struct job *job, int sig)
{
    if (job->running == 0 || job->pgid <= 0)
        return;
    kill(-job->pgid, sig);
    for (unsigned r = 0; r < job->nranks; r++) {
        const struct rank_proc *rp = &job->ranks[r];
        if (rp->state == RANK_RUNNING && getpgid(rp->pid) != job->pgid)
            kill(rp->pid, sig);
    }
}

void job_terminate(struct job *job)
{
    if (job->terminating)
        return;
    job->terminating = true;
    job->abort_deadline_ms = 0;
    launcher_log("ending the job: SIGTERM, SIGKILL in %d ms", KILL_GRACE_MS);
    stdin_forward_stop(job);
    /*
     * The namespace goes before any rank dies of our signal: see
     * server_forget_job. (Stopping the ranks meanwhile would be worse: PMIx
     * reads a connecting client's handshake with blocking reads.)
     */
    server_forget_job(FORGET_JOB_WAIT_MS);
    signal_job(job, SIGTERM);
    job->kill_deadline_ms = monotonic_ms() + KILL_GRACE_MS;
}

static void handle_upcalls(struct job *job)
{
    struct upcall_event *ev = server_take_events();
    while (ev) {
        struct upcall_event *next = ev->next;
        struct rank_proc *rp = &job->ranks[ev->rank];
        switch (ev->kind) {
        case UPCALL_CONNECTED:
            if (!rp->connected) {
                rp->connected = true;
                job->connected++;
                launcher_log("rank %u: PMIx_Init (%u of %u connected)", ev->rank, job->connected,
                             job->nranks);
            }
            break;
        case UPCALL_FINALIZED:
            rp->finalized = true;
            launcher_log("rank %u: PMIx_Finalize", ev->rank);
            break;
        case UPCALL_ABORT:
            launcher_log("rank %u: PMIx_Abort with status %d", ev->rank, ev->status);
            /*
             * PMIx is still sending the rank its answer: killing it now makes
             * PMIx 4.2.2 close the socket under a pending write. MPI_Abort
             * exits right after the answer; the job ends when it has (or
             * ABORT_EXIT_WAIT_MS later).
             */
            if (job_fail(job, FAIL_ABORT, ev->rank, rp->pid, ev->status, ev->msg))
                job->abort_deadline_ms = monotonic_ms() + ABORT_EXIT_WAIT_MS;
            break;
        case UPCALL_FENCE:
            launcher_log("fence completed by the host (%d bytes)", ev->status);
            break;
        }
        upcall_event_free(ev);
        ev = next;
    }
}

static int compare_pid(const void *a, const void *b)
{
    pid_t x = ((const struct pid_rank *)a)->pid, y = ((const struct pid_rank *)b)->pid;
    return (x > y) - (x < y);
}

static int index_pids(struct job *job)
{
    job->by_pid = calloc(job->nranks, sizeof *job->by_pid);
    if (!job->by_pid)
        return -1;
    job->nby_pid = 0;
    for (unsigned r = 0; r < job->nranks; r++)
        if (job->ranks[r].state == RANK_RUNNING)
            job->by_pid[job->nby_pid++] = (struct pid_rank){ job->ranks[r].pid, r };
    qsort(job->by_pid, job->nby_pid, sizeof *job->by_pid, compare_pid);
    return 0;
}

static bool rank_of_pid(const struct job *job, pid_t pid, unsigned *rank)
{
    struct pid_rank key = { pid, 0 };
    const struct pid_rank *hit = bsearch(&key, job->by_pid, job->nby_pid, sizeof key, compare_pid);
    if (!hit)
        return false;
    *rank = hit->rank;
    return true;
}

/* Decide what one rank's end means for the job. */
static void rank_exited(struct job *job, unsigned r, int status)
{
    struct rank_proc *rp = &job->ranks[r];
    rp->state = RANK_EXITED;
    job->running--;
    if (r == 0)
        stdin_forward_stop(job);

    bool failed = false;
    if (WIFSIGNALED(status)) {
        launcher_log("rank %u: killed by signal %d", r, WTERMSIG(status));
        failed = job_fail(job, FAIL_SIGNAL, r, rp->pid, WTERMSIG(status), NULL);
    } else if (WIFEXITED(status)) {
        int code = WEXITSTATUS(status);
        launcher_log("rank %u: exited with status %d%s", r, code,
                     rp->connected && !rp->finalized ? " without PMIx_Finalize" : "");
        if (code != 0)
            failed = job_fail(job, FAIL_EXIT_STATUS, r, rp->pid, code, NULL);
        else if (rp->connected && !rp->finalized)
            failed = job_fail(job, FAIL_NO_FINALIZE, r, rp->pid, 0, NULL);
    }
    if (failed || (job->failure.kind == FAIL_ABORT && job->failure.rank == r))
        job_terminate(job);
}

static void reap_children(struct job *job)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            break;
        unsigned r;
        if (rank_of_pid(job, pid, &r) && job->ranks[r].state == RANK_RUNNING) {
            /*
             * A finalize or abort is queued before PMIx releases the rank, so
             * before it can exit: now that the exit is seen, so is the event.
             */
            handle_upcalls(job);
            rank_exited(job, r, status);
        } else if (pid == job->reaper.pid) {
            launcher_log("the reaper (pid %d) exited: no cleanup if mpirun is killed", (int)pid);
            job->reaper.pid = -1;
        }
    }
    if (job->running == 0 && job->pgid > 0) {
        reaper_forget_pgid(&job->reaper);
        job->pgid = 0;
    }
}

static void forward_signal(struct job *job, int sig)
{
    job->forwarded_signals++;
    if (job->forwarded_signals == 1 || job->terminating) {
        launcher_log("forwarding signal %d (%s) to the ranks", sig, strsignal(sig));
        signal_job(job, sig);
        return;
    }
    /* Asked again and the ranks are still there: stop asking. */
    launcher_log("signal %d again: ending the job", sig);
    job_terminate(job);
}

static void handle_signals(struct job *job)
{
    struct signalfd_siginfo si[16];
    for (;;) {
        ssize_t n = read(job->sig_fd, si, sizeof si);
        if (n <= 0)
            break;
        bool child = false;
        for (size_t i = 0; i < (size_t)n / sizeof si[0]; i++) {
            if (si[i].ssi_signo == SIGCHLD)
                child = true;
            else
                forward_signal(job, (int)si[i].ssi_signo);
        }
        if (child)
            reap_children(job);
    }
}

static void check_deadlines(struct job *job, int64_t now)
{
    if (job->abort_deadline_ms && now >= job->abort_deadline_ms) {
        job->abort_deadline_ms = 0;
        job_terminate(job);
    }
    if (job->timeout_deadline_ms && now >= job->timeout_deadline_ms) {
        job->timeout_deadline_ms = 0;
        if (job_fail(job, FAIL_TIMEOUT, 0, 0, EXIT_TIMEOUT, NULL)) {
            launcher_log("timeout of %u s reached", job->opt->timeout_sec);
            job_terminate(job);
        }
    }
    if (job->kill_deadline_ms && now >= job->kill_deadline_ms) {
        job->kill_deadline_ms = 0;
        if (job->running > 0) {
            launcher_log("%u rank(s) still running: SIGKILL", job->running);
            signal_job(job, SIGKILL);
            job->give_up_deadline_ms = now + KILL_GIVE_UP_MS;
        }
    }
}

static int poll_timeout(const struct job *job, int64_t now)
{
    int64_t next = 0;
    const int64_t deadlines[] = { job->timeout_deadline_ms, job->abort_deadline_ms,
                                  job->kill_deadline_ms, job->give_up_deadline_ms };
    for (size_t i = 0; i < sizeof deadlines / sizeof deadlines[0]; i++)
        if (deadlines[i] && (next == 0 || deadlines[i] < next))
            next = deadlines[i];
    if (next == 0)
        return -1;
    if (next <= now)
        return 0;
    return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

enum poll_slot_kind { SLOT_SIGNALS, SLOT_UPCALLS, SLOT_STDIN_IN, SLOT_STDIN_OUT, SLOT_STREAM };

struct poll_slot {
    enum poll_slot_kind kind;
    unsigned rank;
    int which;
};

void job_monitor(struct job *job)
{
    size_t cap = 4 + (size_t)job->nranks * STREAM_COUNT;
    struct pollfd *pfds = calloc(cap, sizeof *pfds);
    struct poll_slot *slots = calloc(cap, sizeof *slots);
    /* Out of memory: still end and reap the ranks, by blocking waits on the rank table. */
    bool degraded = !pfds || !slots || index_pids(job) != 0;
    if (degraded)
        job_fail(job, FAIL_LAUNCH, 0, 0, EXIT_LAUNCH_ERROR, "out of memory");

    if (job->failure.kind != FAIL_NONE)
        job_terminate(job);                 /* a launch failure: end what did start */
    else if (job->opt->timeout_sec)
        job->timeout_deadline_ms = monotonic_ms() + (int64_t)job->opt->timeout_sec * 1000;
    if (job->running == job->nranks)
        launcher_log("all %u ranks started", job->nranks);
    else if (job->running > 0)
        launcher_log("%u of %u ranks started", job->running, job->nranks);

    while (job->running > 0) {
        if (degraded) {
            int status;
            pid_t pid = waitpid(-1, &status, 0);
            if (pid < 0)
                break;
            for (unsigned r = 0; r < job->nranks; r++)
                if (job->ranks[r].pid == pid && job->ranks[r].state == RANK_RUNNING)
                    rank_exited(job, r, status);
            continue;
        }
        size_t n = 0;
        pfds[n] = (struct pollfd){ .fd = job->sig_fd, .events = POLLIN };
        slots[n++] = (struct poll_slot){ .kind = SLOT_SIGNALS };
        pfds[n] = (struct pollfd){ .fd = server_event_fd(), .events = POLLIN };
        slots[n++] = (struct poll_slot){ .kind = SLOT_UPCALLS };
        if (job->fwd.src >= 0 && job->fwd.len == 0) {
            pfds[n] = (struct pollfd){ .fd = job->fwd.src, .events = POLLIN };
            slots[n++] = (struct poll_slot){ .kind = SLOT_STDIN_IN };
        }
        if (job->fwd.dst >= 0 && job->fwd.len > 0) {
            pfds[n] = (struct pollfd){ .fd = job->fwd.dst, .events = POLLOUT };
            slots[n++] = (struct poll_slot){ .kind = SLOT_STDIN_OUT };
        }
        for (unsigned r = 0; r < job->nranks; r++) {
            for (int w = 0; w < STREAM_COUNT; w++) {
                if (job->ranks[r].out[w].fd < 0)
                    continue;
                pfds[n] = (struct pollfd){ .fd = job->ranks[r].out[w].fd, .events = POLLIN };
                slots[n++] = (struct poll_slot){ .kind = SLOT_STREAM, .rank = r, .which = w };
            }
        }

        int ready = poll(pfds, n, poll_timeout(job, monotonic_ms()));
        if (ready < 0 && errno != EINTR) {
            launcher_error("poll: %s", strerror(errno));
            break;
        }
        handle_upcalls(job);
        for (size_t i = 0; ready > 0 && i < n; i++) {
            if (!pfds[i].revents)
                continue;
            switch (slots[i].kind) {
            case SLOT_SIGNALS: handle_signals(job); break;
            case SLOT_UPCALLS: break;       /* handled above, every time round */
            case SLOT_STDIN_IN: stdin_forward_readable(job); break;
            case SLOT_STDIN_OUT: stdin_forward_writable(job); break;
            case SLOT_STREAM: iof_stream_readable(job, slots[i].rank, slots[i].which); break;
            }
        }

        int64_t now = monotonic_ms();
        check_deadlines(job, now);
        if (job->give_up_deadline_ms && now >= job->give_up_deadline_ms) {
            launcher_error("%u rank(s) did not exit after SIGKILL; giving up on them", job->running);
            break;
        }
    }

    if (job->running == 0 && job->pgid > 0) {
        reaper_forget_pgid(&job->reaper);
        job->pgid = 0;
    }
    /* Every writer is gone: what is left in the pipes is complete. */
    for (unsigned r = 0; r < job->nranks; r++)
        for (int w = 0; w < STREAM_COUNT; w++)
            iof_stream_finish(job, r, w);
    stdin_forward_stop(job);
    free(pfds);
    free(slots);
}
