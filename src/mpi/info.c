/* MPI_Info: ordered (key, value) lists; MPI_INFO_ENV; MPI_Abi_get_info. */
#include "mpi/mpi_impl.h"
#include "mpi/handles.h"
#include "mpi/info.h"
#include "runtime/rt.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct info_entry {
    char *key, *value;
    struct info_entry *next;
};
struct MPI_ABI_Info {
    uint32_t magic;  /* HASHI_INFO_MAGIC: catches stale and garbage handles */
    struct info_entry *head, *tail;
    int nkeys;
};

#define HASHI_INFO_MAGIC 0x494e464fu /* "INFO" */

static struct MPI_ABI_Info info_env = { .magic = HASHI_INFO_MAGIC };

static struct MPI_ABI_Info *info_get(MPI_Info h)
{
    if (h == MPI_INFO_ENV) return &info_env;
    if (hashi_handle_is_predefined(h) || h->magic != HASHI_INFO_MAGIC) return NULL;
    return h;
}

#define INFO_ERR(func, code, ...) hashi_err_raise(func, HASHI_OBJ_NONE, NULL, code, __VA_ARGS__)

static int check_key(const char *func, const char *key)
{
    if (!key)
        return INFO_ERR(func, MPI_ERR_INFO_KEY, "key is NULL");
    size_t len = strlen(key);
    if (len == 0 || len >= MPI_MAX_INFO_KEY)
        return INFO_ERR(func, MPI_ERR_INFO_KEY, "key length %zu is not in 1..%d", len, MPI_MAX_INFO_KEY - 1);
    return MPI_SUCCESS;
}

static struct info_entry *find(struct MPI_ABI_Info *info, const char *key)
{
    for (struct info_entry *e = info->head; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

static int info_set(struct MPI_ABI_Info *info, const char *key, const char *value)
{
    struct info_entry *e = find(info, key);
    char *copy = strdup(value);
    if (!copy)
        return -1;
    if (e) {
        free(e->value);
        e->value = copy;
        return 0;
    }
    e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key))) {
        free(e);
        free(copy);
        return -1;
    }
    e->value = copy;
    if (info->tail) info->tail->next = e; else info->head = e;
    info->tail = e;
    info->nkeys++;
    return 0;
}

static void info_clear(struct MPI_ABI_Info *info)
{
    struct info_entry *e = info->head;
    while (e) {
        struct info_entry *next = e->next;
        free(e->key);
        free(e->value);
        free(e);
        e = next;
    }
    info->head = info->tail = NULL;
    info->nkeys = 0;
}

static struct MPI_ABI_Info *info_new(void)
{
    struct MPI_ABI_Info *info = calloc(1, sizeof *info);
    if (info)
        info->magic = HASHI_INFO_MAGIC;
    return info;
}

/* ---- for the rest of the library (info.h) ---- */

struct MPI_ABI_Info *hashi_info_get(MPI_Info h)
{
    return info_get(h);
}

int hashi_info_merge(struct MPI_ABI_Info *to, const struct MPI_ABI_Info *from)
{
    for (const struct info_entry *e = from ? from->head : NULL; e; e = e->next)
        if (info_set(to, e->key, e->value) != 0)
            return -1;
    return 0;
}

struct MPI_ABI_Info *hashi_info_copy(const struct MPI_ABI_Info *from)
{
    struct MPI_ABI_Info *copy = info_new();
    if (copy && hashi_info_merge(copy, from) != 0) {
        hashi_info_destroy(copy);
        return NULL;
    }
    return copy;
}

int hashi_info_put(struct MPI_ABI_Info *info, const char *key, const char *value)
{
    return info_set(info, key, value);
}

const char *hashi_info_value(const struct MPI_ABI_Info *info, const char *key)
{
    const struct info_entry *e = info ? find((struct MPI_ABI_Info *)info, key) : NULL;
    return e ? e->value : NULL;
}

void hashi_info_destroy(struct MPI_ABI_Info *info)
{
    if (!info || info == &info_env)
        return;
    hashi_handle_forget(info);
    info_clear(info);
    info->magic = 0;
    free(info);
}

/* ---- the calls ---- */

int hashi_impl_Info_create(MPI_Info *info)
{
    if (!info)
        return INFO_ERR("MPI_Info_create", MPI_ERR_ARG, "info is NULL");
    struct MPI_ABI_Info *obj = info_new();
    if (!obj)
        return INFO_ERR("MPI_Info_create", MPI_ERR_NO_MEM, "out of memory");
    *info = obj;
    return MPI_SUCCESS;
}

int hashi_impl_Info_set(MPI_Info info, const char *key, const char *value)
{
    struct MPI_ABI_Info *obj = info_get(info);
    if (!obj || info == MPI_INFO_ENV)
        return INFO_ERR("MPI_Info_set", MPI_ERR_INFO, "not a user info object");
    int rc = check_key("MPI_Info_set", key);
    if (rc) return rc;
    if (!value)
        return INFO_ERR("MPI_Info_set", MPI_ERR_INFO_VALUE, "value is NULL");
    if (strlen(value) >= MPI_MAX_INFO_VAL)
        return INFO_ERR("MPI_Info_set", MPI_ERR_INFO_VALUE, "value of key %s is longer than MPI_MAX_INFO_VAL", key);
    if (info_set(obj, key, value) != 0)
        return INFO_ERR("MPI_Info_set", MPI_ERR_NO_MEM, "out of memory");
    return MPI_SUCCESS;
}

int hashi_impl_Info_delete(MPI_Info info, const char *key)
{
    struct MPI_ABI_Info *obj = info_get(info);
    if (!obj || info == MPI_INFO_ENV)
        return INFO_ERR("MPI_Info_delete", MPI_ERR_INFO, "not a user info object");
    int rc = check_key("MPI_Info_delete", key);
    if (rc) return rc;
    struct info_entry *prev = NULL;
    for (struct info_entry *e = obj->head; e; prev = e, e = e->next) {
        if (strcmp(e->key, key) != 0)
            continue;
        if (prev) prev->next = e->next; else obj->head = e->next;
        if (obj->tail == e) obj->tail = prev;
        obj->nkeys--;
        free(e->key);
        free(e->value);
        free(e);
        return MPI_SUCCESS;
    }
    return INFO_ERR("MPI_Info_delete", MPI_ERR_INFO_NOKEY, "key %s is not set", key);
}

int hashi_impl_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
    struct MPI_ABI_Info *obj = info_get(info);
    if (!obj)
        return INFO_ERR("MPI_Info_get", MPI_ERR_INFO, "invalid info object");
    int rc = check_key("MPI_Info_get", key);
    if (rc) return rc;
    if (!flag || !value || valuelen < 0)
        return INFO_ERR("MPI_Info_get", MPI_ERR_ARG, "flag or value is NULL, or valuelen < 0");
    struct info_entry *e = find(obj, key);
    *flag = e != NULL;
    if (e) {
        /* valuelen excludes the terminating NUL (the standard). */
        snprintf(value, (size_t)valuelen + 1, "%s", e->value);
    }
    return MPI_SUCCESS;
}

int hashi_impl_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag)
{
    struct MPI_ABI_Info *obj = info_get(info);
    if (!obj)
        return INFO_ERR("MPI_Info_get_string", MPI_ERR_INFO, "invalid info object");
    int rc = check_key("MPI_Info_get_string", key);
    if (rc) return rc;
    if (!flag || !buflen || *buflen < 0)
        return INFO_ERR("MPI_Info_get_string", MPI_ERR_ARG, "flag or buflen is NULL, or *buflen < 0");
    struct info_entry *e = find(obj, key);
    *flag = e != NULL;
    if (!e)
        return MPI_SUCCESS;
    int needed = (int)strlen(e->value) + 1;
    if (*buflen > 0 && value)
        snprintf(value, (size_t)*buflen, "%s", e->value);
    *buflen = needed;
    return MPI_SUCCESS;
}

int hashi_impl_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
    struct MPI_ABI_Info *obj = info_get(info);
    if (!obj)
        return INFO_ERR("MPI_Info_get_valuelen", MPI_ERR_INFO, "invalid info object");
    int rc = check_key("MPI_Info_get_valuelen", key);
    if (rc) return rc;
    if (!flag || !valuelen)
        return INFO_ERR("MPI_Info_get_valuelen", MPI_ERR_ARG, "flag or valuelen is NULL");
    struct info_entry *e = find(obj, key);
    *flag = e != NULL;
    if (e)
        *valuelen = (int)strlen(e->value);
    return MPI_SUCCESS;
}

int hashi_impl_Info_get_nkeys(MPI_Info info, int *nkeys)
{
    struct MPI_ABI_Info *obj = info_get(info);
    if (!obj)
        return INFO_ERR("MPI_Info_get_nkeys", MPI_ERR_INFO, "invalid info object");
    if (!nkeys)
        return INFO_ERR("MPI_Info_get_nkeys", MPI_ERR_ARG, "nkeys is NULL");
    *nkeys = obj->nkeys;
    return MPI_SUCCESS;
}

int hashi_impl_Info_get_nthkey(MPI_Info info, int n, char *key)
{
    struct MPI_ABI_Info *obj = info_get(info);
    if (!obj)
        return INFO_ERR("MPI_Info_get_nthkey", MPI_ERR_INFO, "invalid info object");
    if (!key)
        return INFO_ERR("MPI_Info_get_nthkey", MPI_ERR_ARG, "key is NULL");
    if (n < 0 || n >= obj->nkeys)
        return INFO_ERR("MPI_Info_get_nthkey", MPI_ERR_ARG, "n = %d is not in 0..%d", n, obj->nkeys - 1);
    struct info_entry *e = obj->head;
    while (n--)
        e = e->next;
    snprintf(key, MPI_MAX_INFO_KEY, "%s", e->key);
    return MPI_SUCCESS;
}

int hashi_impl_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
    struct MPI_ABI_Info *obj = info_get(info);
    if (!obj)
        return INFO_ERR("MPI_Info_dup", MPI_ERR_INFO, "invalid info object");
    if (!newinfo)
        return INFO_ERR("MPI_Info_dup", MPI_ERR_ARG, "newinfo is NULL");
    struct MPI_ABI_Info *copy = hashi_info_copy(obj);
    if (!copy)
        return INFO_ERR("MPI_Info_dup", MPI_ERR_NO_MEM, "out of memory");
    *newinfo = copy;
    return MPI_SUCCESS;
}

int hashi_impl_Info_free(MPI_Info *info)
{
    if (!info || *info == MPI_INFO_NULL || *info == MPI_INFO_ENV || !info_get(*info))
        return INFO_ERR("MPI_Info_free", MPI_ERR_INFO, "not a user info object");
    hashi_info_destroy(*info);
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}

/* MPI_INFO_ENV: what the process was started with (MPI-4 section 11.2.4). */
void hashi_info_env_init(int argc, char **argv);
void hashi_info_env_init(int argc, char **argv)
{
    char buf[PATH_MAX];
    info_clear(&info_env);
    if (argc > 0 && argv && argv[0]) {
        info_set(&info_env, "command", argv[0]);
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 1; i < argc && used < sizeof buf; i++)
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i > 1 ? " " : "", argv[i]);
        info_set(&info_env, "argv", buf);
    }
    snprintf(buf, sizeof buf, "%d", hashi_job.size);
    info_set(&info_env, "maxprocs", buf);
    info_set(&info_env, "host", hashi_job.hostname);
    info_set(&info_env, "arch", "x86_64");
    if (getcwd(buf, sizeof buf))
        info_set(&info_env, "wdir", buf);
    const char *level = hashi_thread_level == MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE"
                      : hashi_thread_level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                      : hashi_thread_level == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                                                                    : "MPI_THREAD_SINGLE";
    info_set(&info_env, "thread_level", level);
}

int hashi_impl_Info_create_env(int argc, char *argv[], MPI_Info *info)
{
    if (!info)
        return INFO_ERR("MPI_Info_create_env", MPI_ERR_ARG, "info is NULL");
    (void)argc;
    (void)argv;
    return hashi_impl_Info_dup(MPI_INFO_ENV, info);
}

int hashi_impl_Abi_get_info(MPI_Info *info)
{
    char buf[32];
    int rc = hashi_impl_Info_create(info);
    if (rc) return rc;
    struct MPI_ABI_Info *obj = *info;
    snprintf(buf, sizeof buf, "%zu", sizeof(MPI_Aint));
    info_set(obj, "mpi_aint_size", buf);
    snprintf(buf, sizeof buf, "%zu", sizeof(MPI_Count));
    info_set(obj, "mpi_count_size", buf);
    snprintf(buf, sizeof buf, "%zu", sizeof(MPI_Offset));
    info_set(obj, "mpi_offset_size", buf);
    return MPI_SUCCESS;
}
