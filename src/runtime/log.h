/* Diagnostics: one prefix, one verbosity knob (HASHI_VERBOSE). */
#ifndef HASHI_RUNTIME_LOG_H
#define HASHI_RUNTIME_LOG_H

#include <stdarg.h>

/* Verbosity, read from the parameter table at init. */
extern int hashi_log_level;

/* "hashi[rank]: message" on stderr. */
void hashi_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hashi_vlog(const char *fmt, va_list ap);

#define HASHI_DEBUG(level, ...) \
    do { if (hashi_log_level >= (level)) hashi_log(__VA_ARGS__); } while (0)

/* Set once the rank is known, for the message prefix. */
void hashi_log_set_rank(int rank);

#endif
