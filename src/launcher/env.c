/* The ranks' environment, its validation, and finding the program. */
#include "launcher/launcher.h"
#include "runtime/params.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static int envv_reserve(struct envv *env, size_t more)
{
    if (env->count + more + 1 <= env->cap)
        return 0;
    size_t cap = env->cap ? env->cap : 64;
    while (cap < env->count + more + 1)
        cap *= 2;
    char **vars = realloc(env->vars, cap * sizeof *vars);
    if (!vars)
        return -1;
    env->vars = vars;
    env->cap = cap;
    return 0;
}

static ssize_t envv_find(const struct envv *env, const char *name, size_t name_len)
{
    for (size_t i = 0; i < env->count; i++)
        if (strncmp(env->vars[i], name, name_len) == 0 && env->vars[i][name_len] == '=')
            return (ssize_t)i;
    return -1;
}

int envv_from_environ(struct envv *env)
{
    memset(env, 0, sizeof *env);
    for (char **e = environ; *e; e++) {
        if (!strchr(*e, '='))
            continue;
        if (envv_reserve(env, 1) != 0 || !(env->vars[env->count] = strdup(*e)))
            return -1;
        env->count++;
    }
    if (envv_reserve(env, 0) != 0)
        return -1;
    env->vars[env->count] = NULL;
    return 0;
}

int envv_set(struct envv *env, const char *name, size_t name_len, const char *value)
{
    size_t vlen = strlen(value);
    char *kv = malloc(name_len + vlen + 2);
    if (!kv)
        return -1;
    memcpy(kv, name, name_len);
    kv[name_len] = '=';
    memcpy(kv + name_len + 1, value, vlen + 1);
    ssize_t at = envv_find(env, name, name_len);
    if (at >= 0) {
        free(env->vars[at]);
        env->vars[at] = kv;
        return 0;
    }
    if (envv_reserve(env, 1) != 0) {
        free(kv);
        return -1;
    }
    env->vars[env->count++] = kv;
    env->vars[env->count] = NULL;
    return 0;
}

const char *envv_get(const struct envv *env, const char *name)
{
    size_t len = strlen(name);
    ssize_t at = envv_find(env, name, len);
    return at >= 0 ? env->vars[at] + len + 1 : NULL;
}

/* Drop every variable for which drop(name) says so, keeping the order. */
static void envv_filter(struct envv *env, bool (*drop)(const char *kv))
{
    size_t kept = 0;
    for (size_t i = 0; i < env->count; i++) {
        if (drop(env->vars[i]))
            free(env->vars[i]);
        else
            env->vars[kept++] = env->vars[i];
    }
    env->count = kept;
    if (env->vars)
        env->vars[kept] = NULL;
}

char **envv_copy(const struct envv *env)
{
    char **copy = calloc(env->count + 1, sizeof *copy);
    if (!copy)
        return NULL;
    for (size_t i = 0; i < env->count; i++) {
        if (!(copy[i] = strdup(env->vars[i]))) {
            env_array_free(copy);
            return NULL;
        }
    }
    return copy;
}

void env_array_free(char **vars)
{
    if (!vars)
        return;
    for (char **v = vars; *v; v++)
        free(*v);
    free(vars);
}

void envv_free(struct envv *env)
{
    for (size_t i = 0; i < env->count; i++)
        free(env->vars[i]);
    free(env->vars);
    memset(env, 0, sizeof *env);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * A parent launcher's client identity (PMIX_NAMESPACE, PMIX_RANK, the server
 * URIs ...) would make our ranks try to join its job; its MCA settings are
 * the user's and stay.
 */
static bool is_inherited_pmix_client_var(const char *kv)
{
    return starts_with(kv, "PMIX_") && !starts_with(kv, "PMIX_MCA_");
}

/* Also a parent Hashi job's own identity: ours replaces it. */
static bool is_inherited_job_var(const char *kv)
{
    return is_inherited_pmix_client_var(kv) || starts_with(kv, "HASHI_JOB_") ||
           starts_with(kv, "HASHI_LAUNCHER_");
}

void strip_own_pmix_environ(void)
{
    /* Collect first: unsetenv rearranges environ under our feet. */
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n += is_inherited_pmix_client_var(*e);
    if (n == 0)
        return;
    char **names = calloc(n, sizeof *names);
    if (!names)
        return;
    size_t k = 0;
    for (char **e = environ; *e && k < n; e++) {
        if (!is_inherited_pmix_client_var(*e))
            continue;
        const char *eq = strchr(*e, '=');
        names[k++] = eq ? strndup(*e, (size_t)(eq - *e)) : strdup(*e);
    }
    for (size_t i = 0; i < k; i++) {
        if (names[i])
            unsetenv(names[i]);
        free(names[i]);
    }
    free(names);
}

int rank_env_build(const struct launch_options *opt, struct envv *env, char *err, size_t errlen)
{
    if (envv_from_environ(env) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    envv_filter(env, is_inherited_job_var);

    for (size_t i = 0; i < opt->nedits; i++) {
        const struct env_edit *e = &opt->edits[i];
        const char *value = e->value;
        if (!value) {
            char name[256];
            if (e->name_len >= sizeof name) {
                snprintf(err, errlen, "-x: variable name too long");
                return -1;
            }
            memcpy(name, e->name, e->name_len);
            name[e->name_len] = '\0';
            value = getenv(name);
            if (!value) {
                /* Nothing to export; the ranks inherit mpirun's environment anyway. */
                launcher_error("warning: -x %s: not set in mpirun's environment, nothing exported",
                               name);
                continue;
            }
        }
        if (envv_set(env, e->name, e->name_len, value) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return hashi_params_check_environ(env->vars, err, errlen);
}

/* What execve would say about this path, without running it. */
static int check_executable(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno;
    if (S_ISDIR(st.st_mode))
        return EISDIR;
    if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0)
        return EACCES;
    return 0;
}

int find_program(const char *name, const char *path_var, char **resolved)
{
    *resolved = NULL;
    if (name[0] == '\0') {
        launcher_error("empty program name");
        return EXIT_NOT_FOUND;
    }
    if (strchr(name, '/')) {
        int rc = check_executable(name);
        if (rc == 0) {
            *resolved = strdup(name);
            return *resolved ? 0 : EXIT_LAUNCH_ERROR;
        }
        if (rc == ENOENT || rc == ENOTDIR) {
            launcher_error("%s: program not found", name);
            return EXIT_NOT_FOUND;
        }
        launcher_error("%s: cannot execute: %s", name, strerror(rc));
        return EXIT_NOT_EXECUTABLE;
    }

    /* execvp's search: every PATH entry in order, an empty entry is ".". */
    const char *path = path_var ? path_var : "/bin:/usr/bin";
    size_t name_len = strlen(name);
    int denied = 0;
    for (const char *p = path;; ) {
        const char *colon = strchr(p, ':');
        size_t dir_len = colon ? (size_t)(colon - p) : strlen(p);
        char *candidate = malloc(dir_len + name_len + 3);
        if (!candidate)
            return EXIT_LAUNCH_ERROR;
        if (dir_len == 0)
            snprintf(candidate, dir_len + name_len + 3, "./%s", name);
        else
            snprintf(candidate, dir_len + name_len + 3, "%.*s/%s", (int)dir_len, p, name);
        int rc = check_executable(candidate);
        if (rc == 0) {
            *resolved = candidate;
            return 0;
        }
        if (rc == EACCES || rc == EISDIR)
            denied = rc;
        free(candidate);
        if (!colon)
            break;
        p = colon + 1;
    }
    if (denied) {
        launcher_error("%s: cannot execute: %s", name, strerror(denied));
        return EXIT_NOT_EXECUTABLE;
    }
    launcher_error("%s: program not found (searched PATH)", name);
    return EXIT_NOT_FOUND;
}
