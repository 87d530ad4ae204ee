/*
 * The tool information interface (MPI_T): what a profiler or tuner reads
 * and sets through the standard instead of Hashi's environment variables.
 *
 *   control variables    every parameter of params.def, under its environment
 *                        name (HASHI_SLEEP_US ...); readable at any time,
 *                        writable until MPI_Init reads them (then
 *                        MPI_T_ERR_CVAR_SET_NOT_NOW), checked like the
 *                        environment is; ENUM parameters are MPI_T enums
 *   performance vars     the counters components register (runtime/pvar.h),
 *                        each read through a handle of a session as its
 *                        growth since the handle was allocated, reset or written
 *   categories           one per component (runtime, coll, ofi, emu, fabric,
 *                        dimmnet, am), holding its variables
 *   events               none are raised yet; one event source, the clock
 *                        MPI_T event timestamps would use
 *
 * MPI_T may be used before MPI_Init and after MPI_Finalize, between
 * MPI_T_init_thread and MPI_T_finalize. Errors are returned, never raised
 * through an error handler (the standard's rule for MPI_T).
 */
#include "mpi/mpi_impl.h"
#include "mpi/thread.h"
#include "runtime/clock.h"
#include "runtime/params.h"
#include "runtime/pvar.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A STRING control variable is read into this many chars at most (with its NUL). */
#define MPIT_STRING_MAX 1024
#define SESSION_MAGIC 0x54534553u   /* "SEST" */

static atomic_int mpit_users;      /* MPI_T_init_thread calls not yet finalized */

#define MPIT_CHECK_INIT()                                \
    do {                                                 \
        if (atomic_load(&mpit_users) <= 0)               \
            return MPI_T_ERR_NOT_INITIALIZED;            \
    } while (0)

/* ------------------------------------------------------------ strings */

/*
 * MPI_T's string convention: *len is the buffer's size on input; on return
 * the characters stored, NUL included. A NULL buffer or a zero length asks
 * only for the length needed. Both NULL: nothing asked.
 */
static void put_string(const char *s, char *buf, int *len)
{
    if (!len)
        return;
    int need = (int)strlen(s) + 1;
    if (!buf || *len <= 0) {
        *len = need;
        return;
    }
    int n = need < *len ? need : *len;
    memcpy(buf, s, (size_t)n - 1);
    buf[n - 1] = '\0';
    *len = n;
}

/* ------------------------------------------------------------ categories */

struct category {
    const char *name;
    const char *desc;
    const char *param_prefix;   /* the parameters whose names start so (NULL: the rest) */
};

/* Fixed: a category exists whether or not its component runs in this job. */
static const struct category categories[] = {
    { "hashi_runtime", "Start-up, waiting and the choice of device", NULL },
    { "hashi_coll", "Collective algorithms and their thresholds", "HASHI_COLL_" },
    { "hashi_ofi", "The ofi reference device (libfabric tagged messages)", "HASHI_OFI_" },
    { "hashi_am", "The shared matching core of the devices without matching of their own", NULL },
    { "hashi_emu", "The emu transport: the emulated NIC in shared memory", "HASHI_EMU_" },
    { "hashi_fabric", "The fabric transport: the seed devices' primitives over libfabric", "HASHI_FABRIC_" },
    { "hashi_dimmnet", "The DIMMnet device: AOTF, BOTF, PUSH/PULL, LLCM collectives", "HASHI_DIMMNET_" },
};
#define NCATEGORIES ((int)(sizeof categories / sizeof categories[0]))

static int param_category(int id)
{
    const char *name = hashi_param_table[id].name;
    for (int c = 0; c < NCATEGORIES; c++)
        if (categories[c].param_prefix && strncmp(name, categories[c].param_prefix, strlen(categories[c].param_prefix)) == 0)
            return c;
    return 0;
}

static int pvar_category(const struct hashi_pvar *v)
{
    for (int c = 0; c < NCATEGORIES; c++)
        if (v->category && strcmp(v->category, categories[c].name) == 0)
            return c;
    return 0;
}

/* ------------------------------------------------------------ control variables */

struct MPI_T_enum_t {
    int param;
};
static struct MPI_T_enum_t param_enums[HASHI_P_COUNT];

struct MPI_T_cvar_handle_t {
    int param;
    int count;
};

static MPI_Datatype cvar_type(enum hashi_param_type t)
{
    switch (t) {
    case HASHI_PARAM_STRING: return MPI_CHAR;
    case HASHI_PARAM_INT:
    case HASHI_PARAM_SIZE: return MPI_COUNT;
    case HASHI_PARAM_BOOL:
    case HASHI_PARAM_ENUM: return MPI_INT;
    }
    return MPI_DATATYPE_NULL;
}

/* Choice k of a comma-separated list into out; -1 if there is none. */
static int nth_choice(const char *choices, int k, char *out, size_t outlen)
{
    const char *p = choices;
    for (int i = 0; p && *p; i++) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (i == k) {
            if (n >= outlen)
                n = outlen - 1;
            memcpy(out, p, n);
            out[n] = '\0';
            return 0;
        }
        p = comma ? comma + 1 : NULL;
    }
    return -1;
}

static int count_choices(const char *choices)
{
    int n = choices && *choices ? 1 : 0;
    for (const char *p = choices; p && *p; p++)
        n += *p == ',';
    return n;
}

static int choice_index(const char *choices, const char *value)
{
    char c[128];
    for (int k = 0; nth_choice(choices, k, c, sizeof c) == 0; k++)
        if (strcasecmp(c, value) == 0)
            return k;
    return -1;
}

/* Developers' and tests' knobs say so in their first words ("Testing: ...", "dimmnet, testing only: ..."). */
static int cvar_verbosity(int id)
{
    if (id == HASHI_P_DEVICE || id == HASHI_P_TRANSPORT || id == HASHI_P_VERBOSE)
        return MPI_T_VERBOSITY_USER_BASIC;
    const char *doc = hashi_param_table[id].doc;
    if (strncmp(doc, "Testing", 7) == 0 || strstr(doc, "testing only"))
        return MPI_T_VERBOSITY_MPIDEV_DETAIL;
    return MPI_T_VERBOSITY_TUNER_BASIC;
}

int hashi_impl_T_cvar_get_num(int *num_cvar)
{
    MPIT_CHECK_INIT();
    if (!num_cvar)
        return MPI_T_ERR_INVALID;
    *num_cvar = HASHI_P_COUNT;
    return MPI_SUCCESS;
}

int hashi_impl_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity, MPI_Datatype *datatype,
                                   MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *scope)
{
    MPIT_CHECK_INIT();
    if (cvar_index < 0 || cvar_index >= HASHI_P_COUNT)
        return MPI_T_ERR_INVALID_INDEX;
    const struct hashi_param_desc *p = &hashi_param_table[cvar_index];
    put_string(p->name, name, name_len);
    put_string(p->doc, desc, desc_len);
    if (verbosity)
        *verbosity = cvar_verbosity(cvar_index);
    if (datatype)
        *datatype = cvar_type(p->type);
    if (enumtype)
        *enumtype = p->type == HASHI_PARAM_ENUM ? &param_enums[cvar_index] : MPI_T_ENUM_NULL;
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (scope)
        *scope = MPI_T_SCOPE_ALL_EQ;   /* every rank must agree on them, and MPI_Init reads them */
    return MPI_SUCCESS;
}

int hashi_impl_T_cvar_get_index(const char *name, int *cvar_index)
{
    MPIT_CHECK_INIT();
    if (!name || !cvar_index)
        return MPI_T_ERR_INVALID;
    for (int i = 0; i < HASHI_P_COUNT; i++)
        if (strcmp(hashi_param_table[i].name, name) == 0) {
            *cvar_index = i;
            return MPI_SUCCESS;
        }
    return MPI_T_ERR_INVALID_NAME;
}

int hashi_impl_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle, int *count)
{
    (void)obj_handle;   /* bound to no object */
    MPIT_CHECK_INIT();
    if (cvar_index < 0 || cvar_index >= HASHI_P_COUNT)
        return MPI_T_ERR_INVALID_INDEX;
    if (!handle || !count)
        return MPI_T_ERR_INVALID;
    struct MPI_T_cvar_handle_t *h = malloc(sizeof *h);
    if (!h)
        return MPI_T_ERR_MEMORY;
    h->param = cvar_index;
    h->count = 1;
    if (hashi_param_table[cvar_index].type == HASHI_PARAM_STRING) {
        int need = (int)strlen(hashi_param_str((enum hashi_param_id)cvar_index)) + 1;
        h->count = need > MPIT_STRING_MAX ? need : MPIT_STRING_MAX;
    }
    *handle = h;
    *count = h->count;
    return MPI_SUCCESS;
}

int hashi_impl_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    MPIT_CHECK_INIT();
    if (!handle || *handle == MPI_T_CVAR_HANDLE_NULL)
        return MPI_T_ERR_INVALID_HANDLE;
    free(*handle);
    *handle = MPI_T_CVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

int hashi_impl_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    MPIT_CHECK_INIT();
    if (handle == MPI_T_CVAR_HANDLE_NULL)
        return MPI_T_ERR_INVALID_HANDLE;
    if (!buf)
        return MPI_T_ERR_INVALID;
    enum hashi_param_id id = (enum hashi_param_id)handle->param;
    const struct hashi_param_desc *p = &hashi_param_table[id];
    switch (p->type) {
    case HASHI_PARAM_STRING: {
        const char *v = hashi_param_str(id);
        size_t n = strlen(v);
        if (n > (size_t)handle->count - 1)
            n = (size_t)handle->count - 1;
        memcpy(buf, v, n);
        ((char *)buf)[n] = '\0';
        break;
    }
    case HASHI_PARAM_INT:
    case HASHI_PARAM_SIZE: {
        MPI_Count v = (MPI_Count)hashi_param_int(id);
        memcpy(buf, &v, sizeof v);
        break;
    }
    case HASHI_PARAM_BOOL: {
        int v = hashi_param_int(id) != 0;
        memcpy(buf, &v, sizeof v);
        break;
    }
    case HASHI_PARAM_ENUM: {
        int v = choice_index(p->choices, hashi_param_str(id));
        memcpy(buf, &v, sizeof v);
        break;
    }
    }
    return MPI_SUCCESS;
}

/*
 * Until MPI_Init, a write is the same as having set the environment
 * variable: the value is checked like one, then becomes the process's
 * variable, which MPI_Init reads (and hashi_param_* report at once).
 */
int hashi_impl_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    MPIT_CHECK_INIT();
    if (handle == MPI_T_CVAR_HANDLE_NULL)
        return MPI_T_ERR_INVALID_HANDLE;
    if (!buf)
        return MPI_T_ERR_INVALID;
    if (atomic_load(&hashi_init_state) != HASHI_STATE_PRE_INIT)
        return MPI_T_ERR_CVAR_SET_NOT_NOW;
    enum hashi_param_id id = (enum hashi_param_id)handle->param;
    const struct hashi_param_desc *p = &hashi_param_table[id];
    char value[MPIT_STRING_MAX + 1];
    switch (p->type) {
    case HASHI_PARAM_STRING: {
        size_t n = strnlen(buf, (size_t)handle->count);
        if (n >= sizeof value)
            return MPI_T_ERR_INVALID;
        memcpy(value, buf, n);
        value[n] = '\0';
        break;
    }
    case HASHI_PARAM_INT:
    case HASHI_PARAM_SIZE: {
        MPI_Count v;
        memcpy(&v, buf, sizeof v);
        snprintf(value, sizeof value, "%lld", (long long)v);
        break;
    }
    case HASHI_PARAM_BOOL: {
        int v;
        memcpy(&v, buf, sizeof v);
        snprintf(value, sizeof value, "%d", v != 0);
        break;
    }
    case HASHI_PARAM_ENUM: {
        int v;
        memcpy(&v, buf, sizeof v);
        if (nth_choice(p->choices, v, value, sizeof value) != 0)
            return MPI_T_ERR_INVALID;
        break;
    }
    }
    char err[512];
    if (hashi_param_check(id, value, err, sizeof err) != 0)
        return MPI_T_ERR_INVALID;
    if (setenv(p->name, value, 1) != 0)
        return MPI_T_ERR_MEMORY;
    (void)hashi_params_load(err, sizeof err);   /* another variable's bad value is MPI_Init's to report */
    return MPI_SUCCESS;
}

int hashi_impl_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)
{
    MPIT_CHECK_INIT();
    if (enumtype < &param_enums[0] || enumtype >= &param_enums[HASHI_P_COUNT] ||
        hashi_param_table[enumtype->param].type != HASHI_PARAM_ENUM)
        return MPI_T_ERR_INVALID_HANDLE;
    const struct hashi_param_desc *p = &hashi_param_table[enumtype->param];
    if (num)
        *num = count_choices(p->choices);
    put_string(p->name, name, name_len);
    return MPI_SUCCESS;
}

int hashi_impl_T_enum_get_item(MPI_T_enum enumtype, int indx, int *value, char *name, int *name_len)
{
    MPIT_CHECK_INIT();
    if (enumtype < &param_enums[0] || enumtype >= &param_enums[HASHI_P_COUNT] ||
        hashi_param_table[enumtype->param].type != HASHI_PARAM_ENUM)
        return MPI_T_ERR_INVALID_HANDLE;
    char choice[128];
    if (nth_choice(hashi_param_table[enumtype->param].choices, indx, choice, sizeof choice) != 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (value)
        *value = indx;
    put_string(choice, name, name_len);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ performance variables */

struct MPI_T_pvar_handle_t {
    struct MPI_T_pvar_session_t *session;
    struct MPI_T_pvar_handle_t *next;
    int index;
    uint64_t base;        /* the counter's value the handle reads as 0 */
};

struct MPI_T_pvar_session_t {
    unsigned magic;
    struct MPI_T_pvar_handle_t *handles;
    struct MPI_T_pvar_session_t *next;
};

/* Sessions still open, freed by the last MPI_T_finalize. */
static struct MPI_T_pvar_session_t *sessions;

static int session_ok(MPI_T_pvar_session s)
{
    return s != MPI_T_PVAR_SESSION_NULL && s->magic == SESSION_MAGIC;
}

static int handle_of(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    for (struct MPI_T_pvar_handle_t *x = s->handles; x; x = x->next)
        if (x == h)
            return 1;
    return 0;
}

static uint64_t pvar_now(int index)
{
    return __atomic_load_n(hashi_pvar_get(index)->counter, __ATOMIC_RELAXED);
}

int hashi_impl_T_pvar_get_num(int *num_pvar)
{
    MPIT_CHECK_INIT();
    if (!num_pvar)
        return MPI_T_ERR_INVALID;
    *num_pvar = hashi_pvar_count();
    return MPI_SUCCESS;
}

int hashi_impl_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                                   MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                                   int *bind, int *readonly, int *continuous, int *atomic)
{
    MPIT_CHECK_INIT();
    const struct hashi_pvar *v = hashi_pvar_get(pvar_index);
    if (!v)
        return MPI_T_ERR_INVALID_INDEX;
    put_string(v->name, name, name_len);
    put_string(v->desc, desc, desc_len);
    if (verbosity)
        *verbosity = MPI_T_VERBOSITY_TUNER_DETAIL;
    if (var_class)
        *var_class = MPI_T_PVAR_CLASS_COUNTER;
    if (datatype)
        *datatype = MPI_UNSIGNED_LONG_LONG;
    if (enumtype)
        *enumtype = MPI_T_ENUM_NULL;
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (readonly)
        *readonly = 0;      /* a handle's view may be written or reset; the counter never is */
    if (continuous)
        *continuous = 1;
    if (atomic)
        *atomic = 0;
    return MPI_SUCCESS;
}

int hashi_impl_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    MPIT_CHECK_INIT();
    if (!name || !pvar_index)
        return MPI_T_ERR_INVALID;
    if (var_class == MPI_T_PVAR_CLASS_COUNTER)
        for (int i = 0; i < hashi_pvar_count(); i++)
            if (strcmp(hashi_pvar_get(i)->name, name) == 0) {
                *pvar_index = i;
                return MPI_SUCCESS;
            }
    return MPI_T_ERR_INVALID_NAME;
}

int hashi_impl_T_pvar_session_create(MPI_T_pvar_session *session)
{
    MPIT_CHECK_INIT();
    if (!session)
        return MPI_T_ERR_INVALID;
    struct MPI_T_pvar_session_t *s = calloc(1, sizeof *s);
    if (!s)
        return MPI_T_ERR_MEMORY;
    s->magic = SESSION_MAGIC;
    s->next = sessions;
    sessions = s;
    *session = s;
    return MPI_SUCCESS;
}

static void session_destroy(struct MPI_T_pvar_session_t *s)
{
    while (s->handles) {
        struct MPI_T_pvar_handle_t *h = s->handles;
        s->handles = h->next;
        free(h);
    }
    s->magic = 0;
    free(s);
}

int hashi_impl_T_pvar_session_free(MPI_T_pvar_session *session)
{
    MPIT_CHECK_INIT();
    if (!session || !session_ok(*session))
        return MPI_T_ERR_INVALID_SESSION;
    for (struct MPI_T_pvar_session_t **p = &sessions; *p; p = &(*p)->next)
        if (*p == *session) {
            *p = (*session)->next;
            break;
        }
    session_destroy(*session);
    *session = MPI_T_PVAR_SESSION_NULL;
    return MPI_SUCCESS;
}

int hashi_impl_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                                       MPI_T_pvar_handle *handle, int *count)
{
    (void)obj_handle;   /* bound to no object */
    MPIT_CHECK_INIT();
    if (!session_ok(session))
        return MPI_T_ERR_INVALID_SESSION;
    if (!hashi_pvar_get(pvar_index))
        return MPI_T_ERR_INVALID_INDEX;
    if (!handle || !count)
        return MPI_T_ERR_INVALID;
    struct MPI_T_pvar_handle_t *h = malloc(sizeof *h);
    if (!h)
        return MPI_T_ERR_MEMORY;
    h->session = session;
    h->index = pvar_index;
    h->base = 0;            /* a counter reads what it has counted since the process began */
    h->next = session->handles;
    session->handles = h;
    *handle = h;
    *count = 1;
    return MPI_SUCCESS;
}

int hashi_impl_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    MPIT_CHECK_INIT();
    if (!session_ok(session))
        return MPI_T_ERR_INVALID_SESSION;
    if (!handle || !handle_of(session, *handle))
        return MPI_T_ERR_INVALID_HANDLE;
    for (struct MPI_T_pvar_handle_t **p = &session->handles; *p; p = &(*p)->next)
        if (*p == *handle) {
            *p = (*handle)->next;
            break;
        }
    free(*handle);
    *handle = MPI_T_PVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

/* The common checks of the calls on one handle or on MPI_T_PVAR_ALL_HANDLES. */
static int pvar_call_check(MPI_T_pvar_session session, MPI_T_pvar_handle handle, int all_allowed)
{
    if (atomic_load(&mpit_users) <= 0)
        return MPI_T_ERR_NOT_INITIALIZED;
    if (!session_ok(session))
        return MPI_T_ERR_INVALID_SESSION;
    if (handle == MPI_T_PVAR_ALL_HANDLES)
        return all_allowed ? MPI_SUCCESS : MPI_T_ERR_INVALID_HANDLE;
    return handle_of(session, handle) ? MPI_SUCCESS : MPI_T_ERR_INVALID_HANDLE;
}

/* Every variable is continuous: one cannot be started or stopped; with
 * MPI_T_PVAR_ALL_HANDLES continuous variables are skipped (success). */
int hashi_impl_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    int rc = pvar_call_check(session, handle, 1);
    if (rc != MPI_SUCCESS)
        return rc;
    return handle == MPI_T_PVAR_ALL_HANDLES ? MPI_SUCCESS : MPI_T_ERR_PVAR_NO_STARTSTOP;
}

int hashi_impl_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return hashi_impl_T_pvar_start(session, handle);
}

int hashi_impl_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    int rc = pvar_call_check(session, handle, 0);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!buf)
        return MPI_T_ERR_INVALID;
    unsigned long long v = pvar_now(handle->index) - handle->base;
    memcpy(buf, &v, sizeof v);
    return MPI_SUCCESS;
}

int hashi_impl_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf)
{
    int rc = pvar_call_check(session, handle, 0);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!buf)
        return MPI_T_ERR_INVALID;
    unsigned long long v;
    memcpy(&v, buf, sizeof v);
    handle->base = pvar_now(handle->index) - v;   /* reads v now, and grows with the counter */
    return MPI_SUCCESS;
}

int hashi_impl_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    int rc = pvar_call_check(session, handle, 1);
    if (rc != MPI_SUCCESS)
        return rc;
    if (handle != MPI_T_PVAR_ALL_HANDLES) {
        handle->base = pvar_now(handle->index);
        return MPI_SUCCESS;
    }
    for (struct MPI_T_pvar_handle_t *h = session->handles; h; h = h->next)
        h->base = pvar_now(h->index);
    return MPI_SUCCESS;
}

int hashi_impl_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    int rc = pvar_call_check(session, handle, 0);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!buf)
        return MPI_T_ERR_INVALID;
    uint64_t now = pvar_now(handle->index);
    unsigned long long v = now - handle->base;
    memcpy(buf, &v, sizeof v);
    handle->base = now;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ categories (calls) */

int hashi_impl_T_category_get_num(int *num_cat)
{
    MPIT_CHECK_INIT();
    if (!num_cat)
        return MPI_T_ERR_INVALID;
    *num_cat = NCATEGORIES;
    return MPI_SUCCESS;
}

static int category_cvars(int c, int len, int *indices)
{
    int n = 0;
    for (int i = 0; i < HASHI_P_COUNT; i++)
        if (param_category(i) == c) {
            if (indices && n < len)
                indices[n] = i;
            n++;
        }
    return n;
}

static int category_pvars(int c, int len, int *indices)
{
    int n = 0;
    for (int i = 0; i < hashi_pvar_count(); i++)
        if (pvar_category(hashi_pvar_get(i)) == c) {
            if (indices && n < len)
                indices[n] = i;
            n++;
        }
    return n;
}

int hashi_impl_T_category_get_info(int cat_index, char *name, int *name_len, char *desc, int *desc_len,
                                       int *num_cvars, int *num_pvars, int *num_categories)
{
    MPIT_CHECK_INIT();
    if (cat_index < 0 || cat_index >= NCATEGORIES)
        return MPI_T_ERR_INVALID_INDEX;
    put_string(categories[cat_index].name, name, name_len);
    put_string(categories[cat_index].desc, desc, desc_len);
    if (num_cvars)
        *num_cvars = category_cvars(cat_index, 0, NULL);
    if (num_pvars)
        *num_pvars = category_pvars(cat_index, 0, NULL);
    if (num_categories)
        *num_categories = 0;
    return MPI_SUCCESS;
}

int hashi_impl_T_category_get_index(const char *name, int *cat_index)
{
    MPIT_CHECK_INIT();
    if (!name || !cat_index)
        return MPI_T_ERR_INVALID;
    for (int c = 0; c < NCATEGORIES; c++)
        if (strcmp(categories[c].name, name) == 0) {
            *cat_index = c;
            return MPI_SUCCESS;
        }
    return MPI_T_ERR_INVALID_NAME;
}

int hashi_impl_T_category_get_cvars(int cat_index, int len, int indices[])
{
    MPIT_CHECK_INIT();
    if (cat_index < 0 || cat_index >= NCATEGORIES)
        return MPI_T_ERR_INVALID_INDEX;
    if (len < 0 || (len > 0 && !indices))
        return MPI_T_ERR_INVALID;
    (void)category_cvars(cat_index, len, indices);
    return MPI_SUCCESS;
}

int hashi_impl_T_category_get_pvars(int cat_index, int len, int indices[])
{
    MPIT_CHECK_INIT();
    if (cat_index < 0 || cat_index >= NCATEGORIES)
        return MPI_T_ERR_INVALID_INDEX;
    if (len < 0 || (len > 0 && !indices))
        return MPI_T_ERR_INVALID;
    (void)category_pvars(cat_index, len, indices);
    return MPI_SUCCESS;
}

/* The categories are flat and hold no events. */
int hashi_impl_T_category_get_categories(int cat_index, int len, int indices[])
{
    (void)len;
    (void)indices;
    MPIT_CHECK_INIT();
    return cat_index < 0 || cat_index >= NCATEGORIES ? MPI_T_ERR_INVALID_INDEX : MPI_SUCCESS;
}

int hashi_impl_T_category_get_num_events(int cat_index, int *num_events)
{
    MPIT_CHECK_INIT();
    if (cat_index < 0 || cat_index >= NCATEGORIES)
        return MPI_T_ERR_INVALID_INDEX;
    if (!num_events)
        return MPI_T_ERR_INVALID;
    *num_events = 0;
    return MPI_SUCCESS;
}

int hashi_impl_T_category_get_events(int cat_index, int len, int indices[])
{
    return hashi_impl_T_category_get_categories(cat_index, len, indices);
}

/* Categories change only by gaining performance variables (components register theirs as they start). */
int hashi_impl_T_category_changed(int *update_number)
{
    MPIT_CHECK_INIT();
    if (!update_number)
        return MPI_T_ERR_INVALID;
    *update_number = hashi_pvar_count();
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ events and sources */

/* No event types are raised: there is no valid event index, registration or
 * instance, so every call naming one reports it invalid. */
int hashi_impl_T_event_get_num(int *num_events)
{
    MPIT_CHECK_INIT();
    if (!num_events)
        return MPI_T_ERR_INVALID;
    *num_events = 0;
    return MPI_SUCCESS;
}

int hashi_impl_T_event_get_index(const char *name, int *event_index)
{
    (void)event_index;
    MPIT_CHECK_INIT();
    return name ? MPI_T_ERR_INVALID_NAME : MPI_T_ERR_INVALID;
}

int hashi_impl_T_event_get_info(int event_index, char *name, int *name_len, int *verbosity,
                                    MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
                                    int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc,
                                    int *desc_len, int *bind)
{
    (void)event_index, (void)name, (void)name_len, (void)verbosity, (void)array_of_datatypes;
    (void)array_of_displacements, (void)num_elements, (void)enumtype, (void)info, (void)desc, (void)desc_len;
    (void)bind;
    MPIT_CHECK_INIT();
    return MPI_T_ERR_INVALID_INDEX;
}

int hashi_impl_T_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info,
                                        MPI_T_event_registration *event_registration)
{
    (void)event_index, (void)obj_handle, (void)info, (void)event_registration;
    MPIT_CHECK_INIT();
    return MPI_T_ERR_INVALID_INDEX;
}

#define NO_REGISTRATION()                 \
    do {                                  \
        MPIT_CHECK_INIT();                \
        return MPI_T_ERR_INVALID_HANDLE;  \
    } while (0)

int hashi_impl_T_event_handle_free(MPI_T_event_registration event_registration, void *user_data,
                                       MPI_T_event_free_cb_function free_cb_function)
{
    (void)event_registration, (void)user_data, (void)free_cb_function;
    NO_REGISTRATION();
}

int hashi_impl_T_event_handle_get_info(MPI_T_event_registration event_registration, MPI_Info *info_used)
{
    (void)event_registration, (void)info_used;
    NO_REGISTRATION();
}

int hashi_impl_T_event_handle_set_info(MPI_T_event_registration event_registration, MPI_Info info)
{
    (void)event_registration, (void)info;
    NO_REGISTRATION();
}

int hashi_impl_T_event_register_callback(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
                                             MPI_Info info, void *user_data, MPI_T_event_cb_function event_cb_function)
{
    (void)event_registration, (void)cb_safety, (void)info, (void)user_data, (void)event_cb_function;
    NO_REGISTRATION();
}

int hashi_impl_T_event_callback_get_info(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
                                             MPI_Info *info_used)
{
    (void)event_registration, (void)cb_safety, (void)info_used;
    NO_REGISTRATION();
}

int hashi_impl_T_event_callback_set_info(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
                                             MPI_Info info)
{
    (void)event_registration, (void)cb_safety, (void)info;
    NO_REGISTRATION();
}

int hashi_impl_T_event_set_dropped_handler(MPI_T_event_registration event_registration,
                                               MPI_T_event_dropped_cb_function dropped_cb_function)
{
    (void)event_registration, (void)dropped_cb_function;
    NO_REGISTRATION();
}

/* Instances exist only inside an event callback, which never runs. */
int hashi_impl_T_event_copy(MPI_T_event_instance event_instance, void *buffer)
{
    (void)event_instance, (void)buffer;
    NO_REGISTRATION();
}

int hashi_impl_T_event_get_source(MPI_T_event_instance event_instance, int *source_index)
{
    (void)event_instance, (void)source_index;
    NO_REGISTRATION();
}

int hashi_impl_T_event_get_timestamp(MPI_T_event_instance event_instance, MPI_Count *event_timestamp)
{
    (void)event_instance, (void)event_timestamp;
    NO_REGISTRATION();
}

int hashi_impl_T_event_read(MPI_T_event_instance event_instance, int element_index, void *buffer)
{
    (void)event_instance, (void)element_index, (void)buffer;
    NO_REGISTRATION();
}

/* One source: the monotonic clock of this process, in nanoseconds. */
int hashi_impl_T_source_get_num(int *num_sources)
{
    MPIT_CHECK_INIT();
    if (!num_sources)
        return MPI_T_ERR_INVALID;
    *num_sources = 1;
    return MPI_SUCCESS;
}

int hashi_impl_T_source_get_info(int source_index, char *name, int *name_len, char *desc, int *desc_len,
                                     MPI_T_source_order *ordering, MPI_Count *ticks_per_second,
                                     MPI_Count *max_ticks, MPI_Info *info)
{
    MPIT_CHECK_INIT();
    if (source_index != 0)
        return MPI_T_ERR_INVALID_INDEX;
    put_string("hashi_clock", name, name_len);
    put_string("CLOCK_MONOTONIC of this process, in nanoseconds", desc, desc_len);
    if (ordering)
        *ordering = MPI_T_SOURCE_ORDERED;
    if (ticks_per_second)
        *ticks_per_second = 1000000000;
    if (max_ticks)
        *max_ticks = INT64_MAX;
    if (info)
        *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}

int hashi_impl_T_source_get_timestamp(int source_index, MPI_Count *timestamp)
{
    MPIT_CHECK_INIT();
    if (source_index != 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (!timestamp)
        return MPI_T_ERR_INVALID;
    *timestamp = hashi_now_ns();
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ life cycle */

int hashi_impl_T_init_thread(int required, int *provided)
{
    if (!provided)
        return MPI_T_ERR_INVALID;
    if (atomic_fetch_add(&mpit_users, 1) == 0)
        for (int i = 0; i < HASHI_P_COUNT; i++)
            param_enums[i].param = i;
    /* Under MPI_THREAD_MULTIPLE every MPI_T call takes the global lock
     * (mpi/thread.h); before MPI_Init nothing serialises them. */
    int cap = hashi_mt_locking ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
    *provided = required < cap ? required : cap;
    return MPI_SUCCESS;
}

int hashi_impl_T_finalize(void)
{
    int users = atomic_load(&mpit_users);
    do {
        if (users <= 0)
            return MPI_T_ERR_NOT_INITIALIZED;
    } while (!atomic_compare_exchange_weak(&mpit_users, &users, users - 1));
    if (users == 1)
        while (sessions) {
            struct MPI_T_pvar_session_t *s = sessions;
            sessions = s->next;
            session_destroy(s);
        }
    return MPI_SUCCESS;
}
