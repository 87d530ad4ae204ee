/*
 * The ranks' standard streams.
 *
 * Without --tag-output the ranks write straight to mpirun's stdout and stderr
 * (nothing to copy, nothing to lose). With it, each rank's stdout and stderr
 * are pipes: mpirun cuts them into lines and writes each line whole, prefixed
 * "[rank] ", so lines of different ranks never mix. A line longer than
 * IOF_MAX_LINE is cut there; a last line without a newline gets one.
 *
 * stdin goes to rank 0 only. A file or pipe is inherited directly; a terminal
 * is copied by mpirun into a pipe, because the ranks' process group is not
 * the terminal's foreground group and would be stopped (SIGTTIN) reading it.
 */
#include "launcher/launcher.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IOF_READ_CHUNK 65536
#define IOF_MAX_LINE (1u << 20)

/* Tagged lines of one read, assembled for a single write (main thread only). */
static char *tagged;
static size_t tagged_cap;

void iof_stream_init(struct out_stream *s, int fd)
{
    s->fd = fd;
    s->buf = NULL;
    s->len = s->cap = 0;
}

static void stream_close(struct out_stream *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

/*
 * Our own stdout (or stderr) is gone, e.g. `mpirun ... | head`: close every
 * rank's pipe of that kind, so the ranks see EPIPE / SIGPIPE just as if they
 * had been writing to it themselves.
 */
static void output_broken(struct job *job, int which)
{
    if (job->out_broken[which])
        return;
    job->out_broken[which] = true;
    for (unsigned r = 0; r < job->nranks; r++)
        stream_close(&job->ranks[r].out[which]);
}

static bool tagged_reserve(size_t need)
{
    if (need <= tagged_cap)
        return true;
    size_t cap = tagged_cap ? tagged_cap : IOF_READ_CHUNK;
    while (cap < need)
        cap *= 2;
    char *p = realloc(tagged, cap);
    if (!p)
        return false;
    tagged = p;
    tagged_cap = cap;
    return true;
}

/* Write the complete lines in s (and the rest too if final), tagged; keep the remainder. */
static void emit_lines(struct job *job, unsigned rank, int which, bool final)
{
    struct out_stream *s = &job->ranks[rank].out[which];
    char prefix[16];
    size_t prefix_len = (size_t)snprintf(prefix, sizeof prefix, "[%u] ", rank);
    size_t used = 0, start = 0;

    while (start < s->len) {
        const char *line = s->buf + start;
        size_t avail = s->len - start;
        const char *nl = memchr(line, '\n', avail);
        size_t line_len;
        bool add_newline = false;
        if (nl) {
            line_len = (size_t)(nl - line) + 1;
        } else if (final || avail >= IOF_MAX_LINE) {
            line_len = avail < IOF_MAX_LINE ? avail : IOF_MAX_LINE;
            add_newline = true;
        } else {
            break;
        }
        if (!tagged_reserve(used + prefix_len + line_len + 1))
            break;                          /* out of memory: keep the bytes for later */
        memcpy(tagged + used, prefix, prefix_len);
        memcpy(tagged + used + prefix_len, line, line_len);
        used += prefix_len + line_len;
        if (add_newline)
            tagged[used++] = '\n';
        start += line_len;
    }

    if (start > 0) {
        memmove(s->buf, s->buf + start, s->len - start);
        s->len -= start;
    }
    if (used > 0 && write_all(which == STREAM_OUT ? STDOUT_FILENO : STDERR_FILENO, tagged, used) != 0)
        output_broken(job, which);
}

/* Read once; returns bytes read, 0 at EOF, -1 if nothing now (or on error, with eof set). */
static ssize_t stream_read(struct out_stream *s, bool *eof)
{
    *eof = false;
    if (s->cap - s->len < IOF_READ_CHUNK) {
        size_t cap = s->cap ? s->cap * 2 : IOF_READ_CHUNK;
        while (cap - s->len < IOF_READ_CHUNK)
            cap *= 2;
        char *p = realloc(s->buf, cap);
        if (!p)
            return -1;
        s->buf = p;
        s->cap = cap;
    }
    ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
    if (n > 0) {
        s->len += (size_t)n;
        return n;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        *eof = true;
    return n == 0 ? 0 : -1;
}

void iof_stream_readable(struct job *job, unsigned rank, int which)
{
    struct out_stream *s = &job->ranks[rank].out[which];
    if (s->fd < 0)
        return;
    bool eof;
    if (stream_read(s, &eof) > 0)
        emit_lines(job, rank, which, false);
    if (eof)
        iof_stream_finish(job, rank, which);
}

void iof_stream_finish(struct job *job, unsigned rank, int which)
{
    struct out_stream *s = &job->ranks[rank].out[which];
    if (s->fd < 0)
        return;
    bool eof = false;
    /* Whatever is still in the pipe: the writers have exited, it is all there. */
    while (!eof && s->fd >= 0 && stream_read(s, &eof) > 0)
        emit_lines(job, rank, which, false);
    if (s->fd >= 0)
        emit_lines(job, rank, which, true);
    stream_close(s);
}

void iof_release(void)
{
    free(tagged);
    tagged = NULL;
    tagged_cap = 0;
}

/* ---- stdin of rank 0, when mpirun's stdin is a terminal ---- */

static void close_forward_pipe(struct job *job)
{
    if (job->fwd.dst >= 0)
        close(job->fwd.dst);
    job->fwd.dst = -1;
    job->fwd.off = job->fwd.len = 0;
}

void stdin_forward_stop(struct job *job)
{
    job->fwd.src = -1;              /* mpirun's stdin stays open: it is not ours to close */
    close_forward_pipe(job);
}

void stdin_forward_writable(struct job *job)
{
    struct stdin_forward *f = &job->fwd;
    while (f->dst >= 0 && f->len > 0) {
        ssize_t n = write(f->dst, f->buf + f->off, f->len);
        if (n > 0) {
            f->off += (size_t)n;
            f->len -= (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;                         /* rank 0 is not reading yet: poll for room */
        } else {
            stdin_forward_stop(job);        /* rank 0 closed its stdin or exited */
            return;
        }
    }
    f->off = 0;
    if (f->src < 0)
        close_forward_pipe(job);            /* EOF reached and everything delivered */
}

void stdin_forward_readable(struct job *job)
{
    struct stdin_forward *f = &job->fwd;
    if (f->src < 0 || f->len > 0)
        return;
    /* Only called when poll saw input: a terminal read then returns without blocking. */
    ssize_t n = read(f->src, f->buf, sizeof f->buf);
    if (n > 0) {
        f->off = 0;
        f->len = (size_t)n;
        stdin_forward_writable(job);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        /* ^D, or EIO once we are no longer the foreground job: rank 0 sees EOF. */
        f->src = -1;
        if (f->len == 0)
            close_forward_pipe(job);
    }
}
