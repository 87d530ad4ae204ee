/*
 * MPI_<Kind>_toint / MPI_<Kind>_fromint for every handle kind. A predefined
 * handle's integer is its own value (< HASHI_PREDEFINED_LIMIT); a dynamic
 * object is entered in one table on its first toint and gets the index
 * HASHI_PREDEFINED_LIMIT + slot, kept until the object is destroyed
 * (hashi_handle_forget, called by each kind's destroy path). A hash map from
 * object address to slot makes toint O(1); freed slots are reused.
 */
#include "mpi/handles.h"
#include "mpi/comm.h"
#include "mpi/datatype.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

enum handle_kind {
    HK_COMM, HK_ERRHANDLER, HK_FILE, HK_GROUP, HK_INFO, HK_MESSAGE, HK_OP, HK_REQUEST, HK_SESSION, HK_TYPE, HK_WIN
};

struct slot {
    const void *obj;         /* NULL: free (next_free links it) */
    enum handle_kind kind;
    int next_free;
};

/* Open addressing, linear probing; HASH_TOMBSTONE marks a removed entry. */
#define HASH_EMPTY (-1)
#define HASH_TOMBSTONE (-2)

static struct {
    once_flag once;
    mtx_t lock;
    struct slot *slots;
    int nslots, capacity, free_head;
    int *hash;               /* slot numbers, HASH_EMPTY or HASH_TOMBSTONE */
    size_t hash_size, hash_used; /* hash_used counts tombstones too */
} table = { .once = ONCE_FLAG_INIT, .free_head = -1 };

atomic_size_t hashi_handles_registered;

static void table_init(void)
{
    mtx_init(&table.lock, mtx_plain);
}

static size_t hash_of(const void *obj, size_t size)
{
    uint64_t x = (uint64_t)(uintptr_t)obj;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (size_t)x & (size - 1);
}

/* Where obj is (or would go) in the hash. */
static size_t hash_find(const void *obj, int *found)
{
    size_t i = hash_of(obj, table.hash_size), tomb = SIZE_MAX;
    for (;; i = (i + 1) & (table.hash_size - 1)) {
        int s = table.hash[i];
        if (s == HASH_EMPTY) {
            *found = 0;
            return tomb != SIZE_MAX ? tomb : i;
        }
        if (s == HASH_TOMBSTONE) {
            if (tomb == SIZE_MAX)
                tomb = i;
        } else if (table.slots[s].obj == obj) {
            *found = 1;
            return i;
        }
    }
}

static int hash_grow(void)
{
    size_t old_size = table.hash_size, size = old_size ? old_size * 2 : 64;
    /* Filled mostly by tombstones: rebuild at the same size. */
    if (old_size && atomic_load_explicit(&hashi_handles_registered, memory_order_relaxed) * 4 < old_size)
        size = old_size;
    int *old = table.hash, *hash = malloc(size * sizeof *hash);
    if (!hash)
        return -1;
    for (size_t i = 0; i < size; i++)
        hash[i] = HASH_EMPTY;
    table.hash = hash;
    table.hash_size = size;
    table.hash_used = 0;
    for (size_t i = 0; i < old_size; i++) {
        if (old[i] < 0)
            continue;
        int found;
        table.hash[hash_find(table.slots[old[i]].obj, &found)] = old[i];
        table.hash_used++;
    }
    free(old);
    return 0;
}

static int handle_toint(enum handle_kind kind, const void *obj)
{
    if ((uintptr_t)obj < HASHI_PREDEFINED_LIMIT)
        return (int)(uintptr_t)obj;
    call_once(&table.once, table_init);
    mtx_lock(&table.lock);
    int value = -1, found = 0;
    if (table.hash_size && (table.hash_used + 1) * 4 > table.hash_size * 3 && hash_grow() != 0)
        goto out;
    if (!table.hash_size && hash_grow() != 0)
        goto out;
    size_t h = hash_find(obj, &found);
    if (found) {
        value = (int)HASHI_PREDEFINED_LIMIT + table.hash[h];
        goto out;
    }
    int s = table.free_head;
    if (s >= 0) {
        table.free_head = table.slots[s].next_free;
    } else {
        if (table.nslots == table.capacity) {
            if (table.capacity >= INT_MAX / 2 - (int)HASHI_PREDEFINED_LIMIT)
                goto out;
            int capacity = table.capacity ? 2 * table.capacity : 64;
            struct slot *slots = realloc(table.slots, (size_t)capacity * sizeof *slots);
            if (!slots)
                goto out;
            table.slots = slots;
            table.capacity = capacity;
        }
        s = table.nslots++;
    }
    table.slots[s] = (struct slot){ .obj = obj, .kind = kind, .next_free = -1 };
    if (table.hash[h] == HASH_EMPTY)
        table.hash_used++;
    table.hash[h] = s;
    atomic_fetch_add_explicit(&hashi_handles_registered, 1, memory_order_relaxed);
    value = (int)HASHI_PREDEFINED_LIMIT + s;
out:
    mtx_unlock(&table.lock);
    /* Out of memory: no integer can name the object. The NULL handle's value
     * is the only answer that fromint maps back safely. */
    return value;
}

/* The object an index names, if it is one of this kind; else NULL. */
static const void *handle_lookup(enum handle_kind kind, int value)
{
    long s = (long)value - (long)HASHI_PREDEFINED_LIMIT;
    const void *obj = NULL;
    call_once(&table.once, table_init);
    mtx_lock(&table.lock);
    if (s >= 0 && s < table.nslots && table.slots[s].obj && table.slots[s].kind == kind)
        obj = table.slots[s].obj;
    mtx_unlock(&table.lock);
    return obj;
}

void hashi_handle_forget_registered(const void *obj)
{
    call_once(&table.once, table_init);
    mtx_lock(&table.lock);
    int found = 0;
    size_t h = table.hash_size ? hash_find(obj, &found) : 0;
    if (found) {
        int s = table.hash[h];
        table.hash[h] = HASH_TOMBSTONE;
        table.slots[s] = (struct slot){ .obj = NULL, .next_free = table.free_head };
        table.free_head = s;
        atomic_fetch_sub_explicit(&hashi_handles_registered, 1, memory_order_relaxed);
    }
    mtx_unlock(&table.lock);
}

/* ---- the calls: predefined values first, then the table ---- */

#define TOINT(Kind, Type, kind, null)                                                         \
    int hashi_impl_##Kind##_toint(Type h)                                                     \
    {                                                                                         \
        int v = handle_toint(kind, h);                                                        \
        return v >= 0 ? v : (int)(intptr_t)(null);                                            \
    }

TOINT(Comm, MPI_Comm, HK_COMM, MPI_COMM_NULL)
TOINT(Errhandler, MPI_Errhandler, HK_ERRHANDLER, MPI_ERRHANDLER_NULL)
TOINT(File, MPI_File, HK_FILE, MPI_FILE_NULL)
TOINT(Group, MPI_Group, HK_GROUP, MPI_GROUP_NULL)
TOINT(Info, MPI_Info, HK_INFO, MPI_INFO_NULL)
TOINT(Message, MPI_Message, HK_MESSAGE, MPI_MESSAGE_NULL)
TOINT(Op, MPI_Op, HK_OP, MPI_OP_NULL)
TOINT(Request, MPI_Request, HK_REQUEST, MPI_REQUEST_NULL)
TOINT(Session, MPI_Session, HK_SESSION, MPI_SESSION_NULL)
TOINT(Type, MPI_Datatype, HK_TYPE, MPI_DATATYPE_NULL)
TOINT(Win, MPI_Win, HK_WIN, MPI_WIN_NULL)

/* Predefined values each kind has (beyond its NULL). */
static int predefined_op(uintptr_t v)
{
    return (v >= (uintptr_t)MPI_SUM && v <= (uintptr_t)MPI_PROD) || (v >= (uintptr_t)MPI_BAND && v <= (uintptr_t)MPI_BXOR)
           || (v >= (uintptr_t)MPI_LAND && v <= (uintptr_t)MPI_LXOR) || v == (uintptr_t)MPI_MINLOC
           || v == (uintptr_t)MPI_MAXLOC || v == (uintptr_t)MPI_REPLACE || v == (uintptr_t)MPI_NO_OP;
}

static int predefined_value(enum handle_kind kind, uintptr_t v)
{
    switch (kind) {
    case HK_COMM: return v == (uintptr_t)MPI_COMM_WORLD || v == (uintptr_t)MPI_COMM_SELF;
    case HK_GROUP: return v == (uintptr_t)MPI_GROUP_EMPTY;
    case HK_INFO: return v == (uintptr_t)MPI_INFO_ENV;
    case HK_MESSAGE: return v == (uintptr_t)MPI_MESSAGE_NO_PROC;
    case HK_ERRHANDLER:
        return v == (uintptr_t)MPI_ERRORS_ARE_FATAL || v == (uintptr_t)MPI_ERRORS_RETURN
               || v == (uintptr_t)MPI_ERRORS_ABORT;
    case HK_OP: return predefined_op(v);
    case HK_TYPE: return v != (uintptr_t)MPI_DATATYPE_NULL && hashi_type_get((MPI_Datatype)v) != NULL;
    default: return 0;
    }
}

#define FROMINT(Kind, Type, kind, null)                                                       \
    Type hashi_impl_##Kind##_fromint(int value)                                               \
    {                                                                                         \
        if (value >= 0 && (unsigned)value < HASHI_PREDEFINED_LIMIT)                           \
            return predefined_value(kind, (uintptr_t)value) ? (Type)(uintptr_t)value : (null); \
        const void *obj = handle_lookup(kind, value);                                         \
        return obj ? (Type)(uintptr_t)obj : (null);                                           \
    }

FROMINT(Comm, MPI_Comm, HK_COMM, MPI_COMM_NULL)
FROMINT(Errhandler, MPI_Errhandler, HK_ERRHANDLER, MPI_ERRHANDLER_NULL)
FROMINT(File, MPI_File, HK_FILE, MPI_FILE_NULL)
FROMINT(Group, MPI_Group, HK_GROUP, MPI_GROUP_NULL)
FROMINT(Info, MPI_Info, HK_INFO, MPI_INFO_NULL)
FROMINT(Message, MPI_Message, HK_MESSAGE, MPI_MESSAGE_NULL)
FROMINT(Op, MPI_Op, HK_OP, MPI_OP_NULL)
FROMINT(Request, MPI_Request, HK_REQUEST, MPI_REQUEST_NULL)
FROMINT(Session, MPI_Session, HK_SESSION, MPI_SESSION_NULL)
FROMINT(Type, MPI_Datatype, HK_TYPE, MPI_DATATYPE_NULL)
FROMINT(Win, MPI_Win, HK_WIN, MPI_WIN_NULL)
