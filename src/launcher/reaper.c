/*
 * The reaper: a small process forked before mpirun creates anything, so that
 * a job whose mpirun is killed (even by SIGKILL) leaves no rank and no file.
 *
 * It sits in read() on a pipe whose write end only mpirun holds (close-on-exec,
 * so no rank inherits it). mpirun tells it what to clean as it creates things;
 * EOF means mpirun is gone: SIGKILL to the job's process group, remove the job
 * directory and shared memory, exit. A normal exit sends "done" first. It runs
 * in its own session, ignoring the terminal's signals, so a ^C that kills
 * mpirun does not kill it before it has cleaned up; and under its own name
 * and command line ("hashi-reaper"), so `pkill mpirun` or `pkill -f <the
 * program>` aimed at a job kills mpirun but not the reaper that cleans up
 * after it.
 *
 * Messages are NUL-terminated records (paths may hold any other byte):
 *   "dir=<path>"  "pgid=<n>"  "nopgid"  "done"
 */
#include "launcher/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct reaper_state {
    char dir[PATH_MAX];
    const char *shm_prefix;     /* basename of dir */
    pid_t pgid;
};

static void reaper_cleanup_and_exit(const struct reaper_state *st)
{
    if (st->pgid > 0)
        kill(-st->pgid, SIGKILL);
    if (st->dir[0])
        job_ids_cleanup(st->dir, st->shm_prefix);
    _exit(0);
}

static void reaper_apply(struct reaper_state *st, const char *rec)
{
    if (strncmp(rec, "dir=", 4) == 0) {
        snprintf(st->dir, sizeof st->dir, "%s", rec + 4);
        const char *slash = strrchr(st->dir, '/');
        st->shm_prefix = slash ? slash + 1 : st->dir;
    } else if (strncmp(rec, "pgid=", 5) == 0) {
        st->pgid = (pid_t)strtol(rec + 5, NULL, 10);
    } else if (strcmp(rec, "nopgid") == 0) {
        /* Every rank is reaped: the group id may be reused, never signal it. */
        st->pgid = 0;
    } else if (strcmp(rec, "done") == 0) {
        _exit(0);
    }
}

/* Overwrite the command line inherited from mpirun: the argv strings lie
 * back to back in one block (whatever order option parsing left the
 * pointers in), which /proc/<pid>/cmdline shows. */
static void rename_command_line(int argc, char **argv)
{
    static const char title[] = "hashi-reaper";
    if (argc < 1 || !argv)
        return;
    char *start = NULL, *end = NULL;
    for (int i = 0; i < argc; i++) {
        if (!argv[i])
            continue;
        char *e = argv[i] + strlen(argv[i]) + 1;
        if (!start || argv[i] < start)
            start = argv[i];
        if (!end || e > end)
            end = e;
    }
    if (!start)
        return;
    size_t room = (size_t)(end - start);
    memset(start, 0, room);
    memcpy(start, title, room - 1 < sizeof title - 1 ? room - 1 : sizeof title - 1);
}

static __attribute__((noreturn)) void reaper_main(int fd, int argc, char **argv)
{
    setsid();
    prctl(PR_SET_NAME, "hashi-reaper", 0, 0, 0);
    rename_command_line(argc, argv);
    static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE };
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        signal(ignored[i], SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    /* Hold nothing of mpirun's: not the terminal, not a pipe a caller waits on. */
    if (fd > 3)
        close_range(3, (unsigned)fd - 1, 0);
    close_range((unsigned)fd + 1, ~0u, 0);
    int null_fd = open("/dev/null", O_RDWR);
    for (int std = 0; std < 3; std++)
        if (null_fd >= 0 && null_fd != std)
            dup2(null_fd, std);
    if (null_fd > 2)
        close(null_fd);

    struct reaper_state st = { .dir = "", .shm_prefix = NULL, .pgid = 0 };
    char buf[2 * PATH_MAX];
    size_t len = 0;
    for (;;) {
        if (len == sizeof buf)
            len = 0;                /* a record longer than any we send: drop it */
        ssize_t n = read(fd, buf + len, sizeof buf - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            reaper_cleanup_and_exit(&st);
        len += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < len; i++) {
            if (buf[i] == '\0') {
                reaper_apply(&st, buf + start);
                start = i + 1;
            }
        }
        memmove(buf, buf + start, len - start);
        len -= start;
    }
}

int reaper_start(struct reaper *r, int argc, char **argv)
{
    int fds[2];
    r->pid = -1;
    r->fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[1]);
        reaper_main(fds[0], argc, argv);
    }
    close(fds[0]);
    r->pid = pid;
    r->fd = fds[1];
    return 0;
}

static void reaper_send(struct reaper *r, const char *rec)
{
    if (r->fd < 0)
        return;
    /* mpirun ignores SIGPIPE: a dead reaper is an error here, not our death. */
    if (write_all(r->fd, rec, strlen(rec) + 1) != 0)
        launcher_log("reaper is gone (%s): no cleanup if mpirun is killed", strerror(errno));
}

void reaper_watch_dir(struct reaper *r, const char *dir)
{
    char rec[PATH_MAX + 8];
    snprintf(rec, sizeof rec, "dir=%s", dir);
    reaper_send(r, rec);
}

void reaper_watch_pgid(struct reaper *r, pid_t pgid)
{
    char rec[32];
    snprintf(rec, sizeof rec, "pgid=%d", (int)pgid);
    reaper_send(r, rec);
}

void reaper_forget_pgid(struct reaper *r)
{
    reaper_send(r, "nopgid");
}

void reaper_dismiss(struct reaper *r)
{
    reaper_send(r, "done");
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    /* It exits at once; reap it rather than leave a zombie to whichever init adopts it. */
    if (r->pid > 0)
        waitpid(r->pid, NULL, 0);
    r->pid = -1;
}
