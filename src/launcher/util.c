/* Clock, messages and small I/O helpers shared by the launcher's modules. */
#include "launcher/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

bool launcher_verbose;
static struct timespec launcher_t0;

void launcher_clock_start(void)
{
    clock_gettime(CLOCK_MONOTONIC, &launcher_t0);
}

int64_t monotonic_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Messages go out in one write so lines from concurrent writers never mix. */
static void emit(const char *stamp, const char *fmt, va_list ap)
{
    char line[2048];
    int n = snprintf(line, sizeof line, "%s: %s", LAUNCHER_NAME, stamp);
    if (n < 0)
        return;
    size_t used = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    int m = vsnprintf(line + used, sizeof line - used, fmt, ap);
    if (m > 0)
        used += (size_t)m < sizeof line - used ? (size_t)m : sizeof line - used - 1;
    if (used >= sizeof line - 1)
        used = sizeof line - 2;
    line[used++] = '\n';
    (void)write_all(STDERR_FILENO, line, used);
}

void launcher_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit("", fmt, ap);
    va_end(ap);
}

void launcher_log_at(const char *fmt, ...)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double ms = (double)(now.tv_sec - launcher_t0.tv_sec) * 1e3 +
                (double)(now.tv_nsec - launcher_t0.tv_nsec) / 1e6;
    char stamp[32];
    snprintf(stamp, sizeof stamp, "[%9.3f ms] ", ms);
    va_list ap;
    va_start(ap, fmt);
    emit(stamp, fmt, ap);
    va_end(ap);
}

int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* Someone gave us a non-blocking stdout: wait for room rather than drop. */
            struct pollfd pfd = { .fd = fd, .events = POLLOUT };
            if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

int set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -1;
    return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int random_bytes(void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
