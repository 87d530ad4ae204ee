/* The parameter table (params.def) and its environment parsing, done once. */
#ifndef HASHI_RUNTIME_PARAMS_H
#define HASHI_RUNTIME_PARAMS_H

#include <stddef.h>
#include <stdint.h>
#include "runtime/export.h"

enum hashi_param_type {
    HASHI_PARAM_STRING, HASHI_PARAM_INT, HASHI_PARAM_SIZE, HASHI_PARAM_BOOL, HASHI_PARAM_ENUM
};

enum hashi_param_id {
#define HASHI_PARAM(NAME, TYPE, DEFAULT, CHOICES, DOC) HASHI_P_##NAME,
#include "runtime/params.def"
#undef HASHI_PARAM
    HASHI_P_COUNT
};

struct hashi_param_desc {
    const char *name;             /* full variable name, e.g. "HASHI_DEVICE" */
    enum hashi_param_type type;
    const char *default_value;
    const char *choices;          /* ENUM only: "a,b,c" */
    const char *doc;
};

/* The static table, HASHI_P_COUNT entries, in params.def order. */
HASHI_EXPORT extern const struct hashi_param_desc hashi_param_table[HASHI_P_COUNT];
HASHI_EXPORT const char *hashi_param_type_name(enum hashi_param_type type);

/*
 * Check one value against a parameter. Returns 0 if valid; otherwise -1 and a
 * message naming the variable, the bad value and the valid choices in err.
 */
HASHI_EXPORT int hashi_param_check(enum hashi_param_id id, const char *value, char *err, size_t errlen);

/*
 * Check every HASHI_* variable of an environment (NULL-terminated "K=V" array):
 * values against their parameter, and names against the table (an unknown
 * HASHI_* name is an error naming the closest known one). Variables the runtime
 * sets for itself (HASHI_JOB_*, HASHI_LAUNCHER_*) are accepted. Returns 0 or -1 with err.
 */
HASHI_EXPORT int hashi_params_check_environ(char *const *envp, char *err, size_t errlen);

/* Load the process environment into the table (validating it). 0 or -1 with err. */
HASHI_EXPORT int hashi_params_load(char *err, size_t errlen);

/* Current value (from the environment at load time, else the default). */
HASHI_EXPORT const char *hashi_param_str(enum hashi_param_id id);
HASHI_EXPORT int64_t hashi_param_int(enum hashi_param_id id);   /* INT, SIZE, BOOL */
HASHI_EXPORT int hashi_param_is_set(enum hashi_param_id id);     /* set in the environment */

#endif
