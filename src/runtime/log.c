#include "runtime/log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int hashi_log_level;
static int log_rank = -1;

void hashi_log_set_rank(int rank)
{
    log_rank = rank;
}

void hashi_vlog(const char *fmt, va_list ap)
{
    /* One write per message so lines from several ranks do not interleave. */
    char line[2048];
    int n = log_rank >= 0 ? snprintf(line, sizeof line, "hashi[%d]: ", log_rank)
                          : snprintf(line, sizeof line, "hashi: ");
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (m < 0)
        return;
    size_t len = strlen(line);
    if (len + 1 < sizeof line && (len == 0 || line[len - 1] != '\n')) {
        line[len++] = '\n';
        line[len] = '\0';
    }
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void hashi_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hashi_vlog(fmt, ap);
    va_end(ap);
}
