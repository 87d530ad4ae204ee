/* The parameter table: declared in params.def, parsed from the environment once. */
#include "runtime/params.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

const struct hashi_param_desc hashi_param_table[HASHI_P_COUNT] = {
#define HASHI_PARAM(NAME, TYPE, DEFAULT, CHOICES, DOC) \
    [HASHI_P_##NAME] = { "HASHI_" #NAME, HASHI_PARAM_##TYPE, DEFAULT, CHOICES, DOC },
#include "runtime/params.def"
#undef HASHI_PARAM
};

/* Variables the launcher and runtime set for the ranks themselves. */
static const char *const internal_prefixes[] = { "HASHI_JOB_", "HASHI_LAUNCHER_", "HASHI_TEST_" };

static const char *current_value[HASHI_P_COUNT];
static int64_t current_int[HASHI_P_COUNT];
static int value_is_set[HASHI_P_COUNT];
static int table_loaded;

const char *hashi_param_type_name(enum hashi_param_type type)
{
    switch (type) {
    case HASHI_PARAM_STRING: return "string";
    case HASHI_PARAM_INT: return "int";
    case HASHI_PARAM_SIZE: return "size";
    case HASHI_PARAM_BOOL: return "bool";
    case HASHI_PARAM_ENUM: return "enum";
    }
    return "?";
}

static int enum_has_choice(const char *choices, const char *value)
{
    size_t len = strlen(value);
    const char *p = choices;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && strncasecmp(p, value, n) == 0)
            return 1;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

/* Parse an integer with an optional k/m/g (SIZE) suffix. */
static int parse_int(const char *value, int allow_suffix, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 0);
    if (errno || end == value)
        return -1;
    if (allow_suffix && *end) {
        int shift = 0;
        switch (tolower((unsigned char)*end)) {
        case 'k': shift = 10; break;
        case 'm': shift = 20; break;
        case 'g': shift = 30; break;
        default: return -1;
        }
        end++;
        if (*end == 'i' || *end == 'I') end++;
        if (*end == 'b' || *end == 'B') end++;
        if (v < 0 || v > (INT64_MAX >> shift))
            return -1;
        v <<= shift;
    }
    if (*end)
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *value, int64_t *out)
{
    static const char *const yes[] = { "1", "yes", "true", "on" };
    static const char *const no[] = { "0", "no", "false", "off" };
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(value, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(value, no[i]) == 0) { *out = 0; return 0; }
    }
    return -1;
}

static int parse_value(enum hashi_param_id id, const char *value, int64_t *ival)
{
    const struct hashi_param_desc *d = &hashi_param_table[id];
    *ival = 0;
    switch (d->type) {
    case HASHI_PARAM_STRING: return 0;
    case HASHI_PARAM_INT: return parse_int(value, 0, ival);
    case HASHI_PARAM_SIZE: return parse_int(value, 1, ival) || *ival < 0 ? -1 : 0;
    case HASHI_PARAM_BOOL: return parse_bool(value, ival);
    case HASHI_PARAM_ENUM: return enum_has_choice(d->choices, value) ? 0 : -1;
    }
    return -1;
}

int hashi_param_check(enum hashi_param_id id, const char *value, char *err, size_t errlen)
{
    const struct hashi_param_desc *d = &hashi_param_table[id];
    int64_t ival;
    if (parse_value(id, value, &ival) == 0)
        return 0;
    switch (d->type) {
    case HASHI_PARAM_ENUM:
        snprintf(err, errlen, "invalid value '%s' for %s: valid choices are %s",
                 value, d->name, d->choices);
        break;
    case HASHI_PARAM_BOOL:
        snprintf(err, errlen, "invalid value '%s' for %s: expected 0/1, yes/no, true/false",
                 value, d->name);
        break;
    case HASHI_PARAM_SIZE:
        snprintf(err, errlen, "invalid value '%s' for %s: expected a size in bytes (k, m, g suffixes allowed)",
                 value, d->name);
        break;
    default:
        snprintf(err, errlen, "invalid value '%s' for %s: expected an integer", value, d->name);
        break;
    }
    return -1;
}

static int find_param(const char *name, size_t len)
{
    for (int i = 0; i < HASHI_P_COUNT; i++)
        if (strlen(hashi_param_table[i].name) == len &&
            strncmp(hashi_param_table[i].name, name, len) == 0)
            return i;
    return -1;
}

/* Edit distance, to suggest the parameter a misspelt name meant. */
static size_t edit_distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    size_t row[64];
    if (la >= 63 || lb >= 63)
        return 99;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

int hashi_params_check_environ(char *const *envp, char *err, size_t errlen)
{
    for (char *const *e = envp; e && *e; e++) {
        const char *kv = *e;
        if (strncmp(kv, "HASHI_", 6) != 0)
            continue;
        const char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        size_t namelen = (size_t)(eq - kv);
        int internal = 0;
        for (size_t i = 0; i < sizeof internal_prefixes / sizeof *internal_prefixes; i++)
            if (strncmp(kv, internal_prefixes[i], strlen(internal_prefixes[i])) == 0)
                internal = 1;
        if (internal)
            continue;
        int id = find_param(kv, namelen);
        if (id < 0) {
            const char *best = NULL;
            size_t best_d = 4;
            for (int i = 0; i < HASHI_P_COUNT; i++) {
                size_t dist = edit_distance(kv, namelen, hashi_param_table[i].name);
                if (dist < best_d) { best_d = dist; best = hashi_param_table[i].name; }
            }
            snprintf(err, errlen, "unknown parameter %.*s%s%s%s (hashi_info lists every parameter)",
                     (int)namelen, kv, best ? " (did you mean " : "", best ? best : "", best ? "?)" : "");
            return -1;
        }
        if (hashi_param_check((enum hashi_param_id)id, eq + 1, err, errlen) != 0)
            return -1;
    }
    return 0;
}

int hashi_params_load(char *err, size_t errlen)
{
    int rc = hashi_params_check_environ(environ, err, errlen);
    for (int i = 0; i < HASHI_P_COUNT; i++) {
        const char *env = getenv(hashi_param_table[i].name);
        int64_t ival;
        value_is_set[i] = env != NULL;
        current_value[i] = hashi_param_table[i].default_value;
        if (env && parse_value((enum hashi_param_id)i, env, &ival) == 0)
            current_value[i] = env;
        if (parse_value((enum hashi_param_id)i, current_value[i], &ival) == 0)
            current_int[i] = ival;
    }
    table_loaded = 1;
    return rc;
}

static void ensure_loaded(void)
{
    if (!table_loaded) {
        char err[256];
        (void)hashi_params_load(err, sizeof err);
    }
}

const char *hashi_param_str(enum hashi_param_id id)
{
    ensure_loaded();
    return current_value[id];
}

int64_t hashi_param_int(enum hashi_param_id id)
{
    ensure_loaded();
    return current_int[id];
}

int hashi_param_is_set(enum hashi_param_id id)
{
    ensure_loaded();
    return value_is_set[id];
}
