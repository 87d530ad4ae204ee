/*
 * Attribute caching for every kind of object: keyvals (MPI_Comm_create_keyval,
 * MPI_Type_create_keyval, the deprecated MPI_Keyval_create) and the values
 * cached on communicators and datatypes, with their copy and delete
 * callbacks. docs/communicators.md, "Attributes".
 */
#include "mpi/attr.h"
#include "mpi/comm.h"
#include "mpi/datatype.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * A keyval. Its id is HASHI_KEYVAL_FIRST + its index in the table; the
 * standard's predefined keys are all below that. The user's handle holds one
 * reference and every attribute cached with it another, so a keyval freed
 * while attributes use it lives on (their delete callbacks still run) and
 * its id is reused only when the last of them goes.
 */
#define HASHI_KEYVAL_FIRST 1024

/* The special callback values of the standard (MPI_COMM_NULL_COPY_FN = 0,
 * MPI_COMM_DUP_FN = 1, MPI_COMM_NULL_DELETE_FN = 0, likewise for the others). */
#define ATTR_FN_NULL ((uintptr_t)0)
#define ATTR_FN_DUP  ((uintptr_t)1)

struct keyval {
    int in_use;
    int user_freed;              /* MPI_*_free_keyval was called */
    enum hashi_attr_kind kind;
    void (*copy_fn)(void);       /* the kind's copy function type, or ATTR_FN_NULL / ATTR_FN_DUP */
    void (*delete_fn)(void);     /* the kind's delete function type, or ATTR_FN_NULL */
    void *extra_state;
    int refs;
};

static struct {
    struct keyval *table;
    int count, capacity;
} keyvals;

/* An attribute cached on an object; lists are newest first. */
struct attribute {
    struct attribute *next;
    int keyval;
    void *value;
};

static struct keyval *keyval_get(int id)
{
    int i = id - HASHI_KEYVAL_FIRST;
    if (i < 0 || i >= keyvals.count || !keyvals.table[i].in_use)
        return NULL;
    return &keyvals.table[i];
}

static void keyval_release(int id)
{
    struct keyval *k = keyval_get(id);
    if (k && --k->refs == 0)
        memset(k, 0, sizeof *k);
}

static int keyval_create(enum hashi_attr_kind kind, void (*copy_fn)(void), void (*delete_fn)(void),
                         void *extra_state, int *id)
{
    int i;
    for (i = 0; i < keyvals.count && keyvals.table[i].in_use; i++)
        ;
    if (i == keyvals.count) {
        if (keyvals.count == keyvals.capacity) {
            int capacity = keyvals.capacity ? 2 * keyvals.capacity : 16;
            struct keyval *t = realloc(keyvals.table, (size_t)capacity * sizeof *t);
            if (!t)
                return MPI_ERR_NO_MEM;
            keyvals.table = t;
            keyvals.capacity = capacity;
        }
        keyvals.count++;
    }
    keyvals.table[i] = (struct keyval){ .in_use = 1, .kind = kind, .copy_fn = copy_fn, .delete_fn = delete_fn,
                                        .extra_state = extra_state, .refs = 1 };
    *id = HASHI_KEYVAL_FIRST + i;
    return MPI_SUCCESS;
}

/* Call a delete callback with the kind's own function type. */
static int call_delete(const struct keyval *k, void *handle, int id, void *value)
{
    if ((uintptr_t)k->delete_fn == ATTR_FN_NULL)
        return MPI_SUCCESS;
    switch (k->kind) {
    case HASHI_ATTR_COMM:
        return ((MPI_Comm_delete_attr_function *)k->delete_fn)((MPI_Comm)handle, id, value, k->extra_state);
    case HASHI_ATTR_TYPE:
        return ((MPI_Type_delete_attr_function *)k->delete_fn)((MPI_Datatype)handle, id, value, k->extra_state);
    case HASHI_ATTR_WIN:
        return ((MPI_Win_delete_attr_function *)k->delete_fn)((MPI_Win)handle, id, value, k->extra_state);
    }
    return MPI_ERR_INTERN;
}

static int call_copy(const struct keyval *k, void *handle, int id, void *value, void **out, int *flag)
{
    *flag = 0;
    if ((uintptr_t)k->copy_fn == ATTR_FN_NULL)
        return MPI_SUCCESS;
    if ((uintptr_t)k->copy_fn == ATTR_FN_DUP) {
        *out = value;
        *flag = 1;
        return MPI_SUCCESS;
    }
    switch (k->kind) {
    case HASHI_ATTR_COMM:
        return ((MPI_Comm_copy_attr_function *)k->copy_fn)((MPI_Comm)handle, id, k->extra_state, value, out, flag);
    case HASHI_ATTR_TYPE:
        return ((MPI_Type_copy_attr_function *)k->copy_fn)((MPI_Datatype)handle, id, k->extra_state, value, out,
                                                          flag);
    case HASHI_ATTR_WIN:
        return ((MPI_Win_copy_attr_function *)k->copy_fn)((MPI_Win)handle, id, k->extra_state, value, out, flag);
    }
    return MPI_ERR_INTERN;
}

static struct attribute **attr_find(void **attrs, int id)
{
    struct attribute **p = (struct attribute **)attrs;
    while (*p && (*p)->keyval != id)
        p = &(*p)->next;
    return p;
}

/* Delete one attribute: its callback first; on failure it stays. */
static int attr_delete(enum hashi_attr_kind kind, void *handle, struct attribute **link)
{
    struct attribute *a = *link;
    int rc = call_delete(keyval_get(a->keyval), handle, a->keyval, a->value);
    (void)kind;
    if (rc != MPI_SUCCESS)
        return rc;
    *link = a->next;
    keyval_release(a->keyval);
    free(a);
    return MPI_SUCCESS;
}

static int attr_set(void **attrs, int id, void *value)
{
    struct attribute *a = malloc(sizeof *a);
    if (!a)
        return MPI_ERR_NO_MEM;
    a->keyval = id;
    a->value = value;
    a->next = *attrs;
    *attrs = a;
    keyval_get(id)->refs++;
    return MPI_SUCCESS;
}

int hashi_attr_delete_all(enum hashi_attr_kind kind, void *handle, void **attrs)
{
    /* Newest first: the reverse of the order they were set (the standard's
     * order for MPI_COMM_SELF at MPI_Finalize; any order is allowed elsewhere). */
    while (*attrs) {
        int rc = attr_delete(kind, handle, (struct attribute **)attrs);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

void hashi_attr_discard(void **attrs)
{
    struct attribute *a = *attrs;
    while (a) {
        struct attribute *next = a->next;
        keyval_release(a->keyval);
        free(a);
        a = next;
    }
    *attrs = NULL;
}

int hashi_attr_copy_all(enum hashi_attr_kind kind, void *old_handle, void **old_attrs, void *new_handle,
                        void **new_attrs)
{
    /* Oldest first, appending, so the copy keeps the original's order. */
    int n = 0;
    for (struct attribute *a = *old_attrs; a; a = a->next)
        n++;
    struct attribute **order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order)
        return MPI_ERR_NO_MEM;
    int i = n;
    for (struct attribute *a = *old_attrs; a; a = a->next)
        order[--i] = a;
    int rc = MPI_SUCCESS;
    for (i = 0; i < n && rc == MPI_SUCCESS; i++) {
        const struct keyval *k = keyval_get(order[i]->keyval);
        void *value = NULL;
        int flag = 0;
        rc = call_copy(k, old_handle, order[i]->keyval, order[i]->value, &value, &flag);
        if (rc == MPI_SUCCESS && flag)
            rc = attr_set(new_attrs, order[i]->keyval, value);
    }
    free(order);
    if (rc != MPI_SUCCESS) {
        /* The duplicate will not exist: undo what was copied. */
        if (hashi_attr_delete_all(kind, new_handle, new_attrs) != MPI_SUCCESS)
            hashi_attr_discard(new_attrs);
    }
    return rc;
}

/* ---- the object behind a handle, per kind ---- */

struct attr_target {
    void *handle;
    void **attrs;
};

/* Raise on the object when it is a communicator or a window, else on no object. */
#define ATTR_ERR(func, kind, handle, code, ...)                                               \
    ((kind) == HASHI_ATTR_COMM && hashi_comm_get((MPI_Comm)(handle))                          \
         ? hashi_err_comm((func), (MPI_Comm)(handle), (code), __VA_ARGS__)                    \
     : (kind) == HASHI_ATTR_WIN && hashi_win_get((MPI_Win)(handle))                           \
         ? hashi_err_win((func), (MPI_Win)(handle), (code), __VA_ARGS__)                      \
         : hashi_err_raise((func), HASHI_OBJ_NONE, NULL, (code), __VA_ARGS__))

static int target_get(const char *func, enum hashi_attr_kind kind, void *handle, struct attr_target *t)
{
    t->handle = handle;
    if (kind == HASHI_ATTR_COMM) {
        struct MPI_ABI_Comm *c = hashi_comm_get((MPI_Comm)handle);
        if (!c)
            return hashi_err_invalid_comm(func, (MPI_Comm)handle, "comm");
        t->attrs = &c->attributes;
        return MPI_SUCCESS;
    }
    if (kind == HASHI_ATTR_WIN) {
        struct MPI_ABI_Win *w = hashi_win_get((MPI_Win)handle);
        if (!w)
            return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_WIN,
                                   (MPI_Win)handle == MPI_WIN_NULL ? "the window is MPI_WIN_NULL"
                                                                   : "not a valid window");
        t->attrs = &w->attributes;
        return MPI_SUCCESS;
    }
    struct MPI_ABI_Datatype *d = hashi_type_get((MPI_Datatype)handle);
    if (!d)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_TYPE,
                               (MPI_Datatype)handle == MPI_DATATYPE_NULL ? "datatype is MPI_DATATYPE_NULL"
                                                                         : "datatype is not a valid datatype");
    t->attrs = &d->attributes;
    return MPI_SUCCESS;
}

/* A user keyval of this kind, or the error. */
static int keyval_check(const char *func, enum hashi_attr_kind kind, void *handle, int id, struct keyval **out)
{
    struct keyval *k = keyval_get(id);
    if (!k || k->user_freed)
        return ATTR_ERR(func, kind, handle, MPI_ERR_KEYVAL, "keyval %d is not a valid attribute key", id);
    if (k->kind != kind)
        return ATTR_ERR(func, kind, handle, MPI_ERR_KEYVAL,
                          "keyval %d was created for another kind of object", id);
    *out = k;
    return MPI_SUCCESS;
}

/* ---- the calls, once for every kind ---- */

static int create_keyval(const char *func, enum hashi_attr_kind kind, void (*copy_fn)(void),
                         void (*delete_fn)(void), int *keyval, void *extra_state)
{
    if (!keyval)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "keyval is NULL");
    int rc = keyval_create(kind, copy_fn, delete_fn, extra_state, keyval);
    if (rc != MPI_SUCCESS)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, rc, "out of memory");
    return MPI_SUCCESS;
}

static int free_keyval(const char *func, enum hashi_attr_kind kind, int *keyval)
{
    if (!keyval)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "keyval is NULL");
    struct keyval *k;
    int rc = keyval_check(func, kind, NULL, *keyval, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    k->user_freed = 1;
    keyval_release(*keyval);
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

/* The arguments of set and delete: the object, and a keyval of its kind. */
static int target_keyval_get(const char *func, enum hashi_attr_kind kind, void *handle, int keyval,
                             struct attr_target *t)
{
    struct keyval *k;
    int rc = target_get(func, kind, handle, t);
    return rc != MPI_SUCCESS ? rc : keyval_check(func, kind, handle, keyval, &k);
}

/* Delete the attribute at *link (its delete callback runs), raising a failure. */
static int delete_cached(const char *func, enum hashi_attr_kind kind, void *handle, int keyval,
                         struct attribute **link)
{
    int rc = attr_delete(kind, handle, link);
    if (rc != MPI_SUCCESS)
        return ATTR_ERR(func, kind, handle, rc, "the delete callback of keyval %d failed", keyval);
    return MPI_SUCCESS;
}

static int set_attr(const char *func, enum hashi_attr_kind kind, void *handle, int keyval, void *value)
{
    struct attr_target t;
    int rc = target_keyval_get(func, kind, handle, keyval, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    struct attribute **link = attr_find(t.attrs, keyval);
    /* Replacing a value deletes the old one first (its callback runs). */
    if (*link && (rc = delete_cached(func, kind, handle, keyval, link)) != MPI_SUCCESS)
        return rc;
    if ((rc = attr_set(t.attrs, keyval, value)) != MPI_SUCCESS)
        return ATTR_ERR(func, kind, handle, rc, "out of memory caching keyval %d", keyval);
    return MPI_SUCCESS;
}

static int get_attr(const char *func, enum hashi_attr_kind kind, void *handle, int keyval, void *value,
                    int *flag)
{
    struct attr_target t;
    int rc = target_get(func, kind, handle, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!value || !flag)
        return ATTR_ERR(func, kind, handle, MPI_ERR_ARG, "%s is NULL", !value ? "attribute_val" : "flag");
    if (kind == HASHI_ATTR_COMM) {
        void *predefined;
        int found;
        if (hashi_comm_predefined_attr(keyval, &predefined, &found)) {
            *flag = found;
            if (found)
                *(void **)value = predefined;
            return MPI_SUCCESS;
        }
    }
    if (kind == HASHI_ATTR_WIN) {
        void *predefined;
        int found;
        if (hashi_win_predefined_attr(hashi_win_get((MPI_Win)handle), keyval, &predefined, &found)) {
            *flag = found;
            if (found)
                *(void **)value = predefined;
            return MPI_SUCCESS;
        }
    }
    struct keyval *k;
    if ((rc = keyval_check(func, kind, handle, keyval, &k)) != MPI_SUCCESS)
        return rc;
    struct attribute *a = *attr_find(t.attrs, keyval);
    *flag = a != NULL;
    if (a)
        *(void **)value = a->value;
    return MPI_SUCCESS;
}

static int delete_attr(const char *func, enum hashi_attr_kind kind, void *handle, int keyval)
{
    struct attr_target t;
    int rc = target_keyval_get(func, kind, handle, keyval, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    struct attribute **link = attr_find(t.attrs, keyval);
    if (!*link)
        return MPI_SUCCESS; /* nothing cached: nothing to delete (as MPICH and Open MPI do) */
    return delete_cached(func, kind, handle, keyval, link);
}

/* ---- communicators ---- */

int hashi_impl_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                  MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                                  void *extra_state)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_create_keyval");
    return create_keyval("MPI_Comm_create_keyval", HASHI_ATTR_COMM, (void (*)(void))comm_copy_attr_fn,
                         (void (*)(void))comm_delete_attr_fn, comm_keyval, extra_state);
}

int hashi_impl_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                             void *extra_state)
{
    HASHI_CHECK_INITIALIZED("MPI_Keyval_create");
    /* The MPI-1 callbacks have the communicator callbacks' signatures. */
    return create_keyval("MPI_Keyval_create", HASHI_ATTR_COMM, (void (*)(void))copy_fn, (void (*)(void))delete_fn,
                         keyval, extra_state);
}

int hashi_impl_Comm_free_keyval(int *comm_keyval)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_free_keyval");
    return free_keyval("MPI_Comm_free_keyval", HASHI_ATTR_COMM, comm_keyval);
}

int hashi_impl_Keyval_free(int *keyval)
{
    HASHI_CHECK_INITIALIZED("MPI_Keyval_free");
    return free_keyval("MPI_Keyval_free", HASHI_ATTR_COMM, keyval);
}

int hashi_impl_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_set_attr");
    return set_attr("MPI_Comm_set_attr", HASHI_ATTR_COMM, comm, comm_keyval, attribute_val);
}

int hashi_impl_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    HASHI_CHECK_INITIALIZED("MPI_Attr_put");
    return set_attr("MPI_Attr_put", HASHI_ATTR_COMM, comm, keyval, attribute_val);
}

int hashi_impl_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_get_attr");
    return get_attr("MPI_Comm_get_attr", HASHI_ATTR_COMM, comm, comm_keyval, attribute_val, flag);
}

int hashi_impl_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Attr_get");
    return get_attr("MPI_Attr_get", HASHI_ATTR_COMM, comm, keyval, attribute_val, flag);
}

int hashi_impl_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_delete_attr");
    return delete_attr("MPI_Comm_delete_attr", HASHI_ATTR_COMM, comm, comm_keyval);
}

int hashi_impl_Attr_delete(MPI_Comm comm, int keyval)
{
    HASHI_CHECK_INITIALIZED("MPI_Attr_delete");
    return delete_attr("MPI_Attr_delete", HASHI_ATTR_COMM, comm, keyval);
}

/* ---- datatypes ---- */

int hashi_impl_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                                  MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                                  void *extra_state)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_create_keyval");
    return create_keyval("MPI_Type_create_keyval", HASHI_ATTR_TYPE, (void (*)(void))type_copy_attr_fn,
                         (void (*)(void))type_delete_attr_fn, type_keyval, extra_state);
}

int hashi_impl_Type_free_keyval(int *type_keyval)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_free_keyval");
    return free_keyval("MPI_Type_free_keyval", HASHI_ATTR_TYPE, type_keyval);
}

int hashi_impl_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_set_attr");
    return set_attr("MPI_Type_set_attr", HASHI_ATTR_TYPE, datatype, type_keyval, attribute_val);
}

int hashi_impl_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_get_attr");
    return get_attr("MPI_Type_get_attr", HASHI_ATTR_TYPE, datatype, type_keyval, attribute_val, flag);
}

int hashi_impl_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
    HASHI_CHECK_INITIALIZED("MPI_Type_delete_attr");
    return delete_attr("MPI_Type_delete_attr", HASHI_ATTR_TYPE, datatype, type_keyval);
}

/* ---- windows ---- */

int hashi_impl_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                                 MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
                                 void *extra_state)
{
    HASHI_CHECK_INITIALIZED("MPI_Win_create_keyval");
    return create_keyval("MPI_Win_create_keyval", HASHI_ATTR_WIN, (void (*)(void))win_copy_attr_fn,
                         (void (*)(void))win_delete_attr_fn, win_keyval, extra_state);
}

int hashi_impl_Win_free_keyval(int *win_keyval)
{
    HASHI_CHECK_INITIALIZED("MPI_Win_free_keyval");
    return free_keyval("MPI_Win_free_keyval", HASHI_ATTR_WIN, win_keyval);
}

int hashi_impl_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
    HASHI_CHECK_INITIALIZED("MPI_Win_set_attr");
    return set_attr("MPI_Win_set_attr", HASHI_ATTR_WIN, win, win_keyval, attribute_val);
}

int hashi_impl_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
    HASHI_CHECK_INITIALIZED("MPI_Win_get_attr");
    return get_attr("MPI_Win_get_attr", HASHI_ATTR_WIN, win, win_keyval, attribute_val, flag);
}

int hashi_impl_Win_delete_attr(MPI_Win win, int win_keyval)
{
    HASHI_CHECK_INITIALIZED("MPI_Win_delete_attr");
    return delete_attr("MPI_Win_delete_attr", HASHI_ATTR_WIN, win, win_keyval);
}
