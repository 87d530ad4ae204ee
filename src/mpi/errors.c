/*
 * Error classes, codes and strings; error handlers and their invocation.
 *
 * Code space:
 *   0 .. MPI_ERR_LASTCODE        the standard's classes (and MPI_T return codes)
 *   USER_CLASS_BASE + n          classes added by MPI_Add_error_class
 *   USER_CODE_BASE + n           codes added by MPI_Add_error_code
 *   INSTANCE_BASE + seq<<15|cls  one raised error with its own message (why it
 *                                failed, naming the call), kept in a ring so that
 *                                MPI_Error_string can still print it afterwards
 */
#include "mpi/comm.h"
#include "mpi/handles.h"
#include "mpi/mpi_impl.h"
#include "runtime/rt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#define USER_CLASS_BASE 0x4000
#define USER_CODE_BASE 0x8000
#define USER_MAX 0x400
#define INSTANCE_BASE 0x10000
#define INSTANCE_CLASS_MASK 0x7fff
#define INSTANCE_RING 256

static const char *const standard_class_names[] = {
#define C(name, text) [name] = #name ": " text
    C(MPI_SUCCESS, "no error"),
    C(MPI_ERR_BUFFER, "invalid buffer pointer"),
    C(MPI_ERR_COUNT, "invalid count argument"),
    C(MPI_ERR_TYPE, "invalid datatype"),
    C(MPI_ERR_TAG, "invalid tag"),
    C(MPI_ERR_COMM, "invalid communicator"),
    C(MPI_ERR_RANK, "invalid rank"),
    C(MPI_ERR_REQUEST, "invalid request"),
    C(MPI_ERR_ROOT, "invalid root"),
    C(MPI_ERR_GROUP, "invalid group"),
    C(MPI_ERR_OP, "invalid operation"),
    C(MPI_ERR_TOPOLOGY, "invalid topology"),
    C(MPI_ERR_DIMS, "invalid dimension argument"),
    C(MPI_ERR_ARG, "invalid argument"),
    C(MPI_ERR_UNKNOWN, "unknown error"),
    C(MPI_ERR_TRUNCATE, "message truncated"),
    C(MPI_ERR_OTHER, "other error"),
    C(MPI_ERR_INTERN, "internal error"),
    C(MPI_ERR_PENDING, "pending request"),
    C(MPI_ERR_IN_STATUS, "error code is in status"),
    C(MPI_ERR_ACCESS, "permission denied"),
    C(MPI_ERR_AMODE, "invalid file access mode"),
    C(MPI_ERR_ASSERT, "invalid assertion"),
    C(MPI_ERR_BAD_FILE, "invalid file name"),
    C(MPI_ERR_BASE, "invalid base"),
    C(MPI_ERR_CONVERSION, "data conversion error"),
    C(MPI_ERR_DISP, "invalid displacement"),
    C(MPI_ERR_DUP_DATAREP, "data representation already defined"),
    C(MPI_ERR_FILE_EXISTS, "file exists"),
    C(MPI_ERR_FILE_IN_USE, "file in use"),
    C(MPI_ERR_FILE, "invalid file handle"),
    C(MPI_ERR_INFO_KEY, "invalid info key"),
    C(MPI_ERR_INFO_NOKEY, "info key not defined"),
    C(MPI_ERR_INFO_VALUE, "invalid info value"),
    C(MPI_ERR_INFO, "invalid info object"),
    C(MPI_ERR_IO, "I/O error"),
    C(MPI_ERR_KEYVAL, "invalid attribute key"),
    C(MPI_ERR_LOCKTYPE, "invalid lock type"),
    C(MPI_ERR_NAME, "name not published"),
    C(MPI_ERR_NO_MEM, "out of memory"),
    C(MPI_ERR_NOT_SAME, "arguments not identical across processes"),
    C(MPI_ERR_NO_SPACE, "no space left"),
    C(MPI_ERR_NO_SUCH_FILE, "no such file"),
    C(MPI_ERR_PORT, "invalid port"),
    C(MPI_ERR_QUOTA, "quota exceeded"),
    C(MPI_ERR_READ_ONLY, "read-only file or file system"),
    C(MPI_ERR_RMA_ATTACH, "memory cannot be attached"),
    C(MPI_ERR_RMA_CONFLICT, "conflicting accesses to window"),
    C(MPI_ERR_RMA_RANGE, "target memory outside the window"),
    C(MPI_ERR_RMA_SHARED, "memory cannot be shared"),
    C(MPI_ERR_RMA_SYNC, "wrong RMA synchronization"),
    C(MPI_ERR_SERVICE, "invalid service name"),
    C(MPI_ERR_SIZE, "invalid size"),
    C(MPI_ERR_SPAWN, "spawn error"),
    C(MPI_ERR_UNSUPPORTED_DATAREP, "unsupported data representation"),
    C(MPI_ERR_UNSUPPORTED_OPERATION, "operation not supported"),
    C(MPI_ERR_WIN, "invalid window"),
    C(MPI_ERR_RMA_FLAVOR, "wrong window flavor"),
    C(MPI_ERR_PROC_ABORTED, "a peer process aborted"),
    C(MPI_ERR_VALUE_TOO_LARGE, "value too large to store"),
    C(MPI_ERR_SESSION, "invalid session"),
    C(MPI_ERR_ERRHANDLER, "invalid error handler"),
    C(MPI_ERR_ABI, "ABI mismatch or unsupported ABI feature"),
#undef C
};
#define STANDARD_CLASSES ((int)(sizeof standard_class_names / sizeof *standard_class_names))

static const char *const tool_error_names[] = {
    "MPI_T_ERR_CANNOT_INIT: tool interface cannot be initialized",
    "MPI_T_ERR_NOT_ACCESSIBLE: not accessible",
    "MPI_T_ERR_NOT_INITIALIZED: tool interface not initialized",
    "MPI_T_ERR_NOT_SUPPORTED: not supported",
    "MPI_T_ERR_MEMORY: out of memory",
    "MPI_T_ERR_INVALID: invalid use of the tool interface",
    "MPI_T_ERR_INVALID_INDEX: invalid index",
    "MPI_T_ERR_INVALID_ITEM: invalid item",
    "MPI_T_ERR_INVALID_SESSION: invalid session",
    "MPI_T_ERR_INVALID_HANDLE: invalid handle",
    "MPI_T_ERR_INVALID_NAME: invalid name",
    "MPI_T_ERR_OUT_OF_HANDLES: out of handles",
    "MPI_T_ERR_OUT_OF_SESSIONS: out of sessions",
    "MPI_T_ERR_CVAR_SET_NOT_NOW: cannot set the variable now",
    "MPI_T_ERR_CVAR_SET_NEVER: the variable cannot be set",
    "MPI_T_ERR_PVAR_NO_WRITE: the variable cannot be written",
    "MPI_T_ERR_PVAR_NO_STARTSTOP: the variable cannot be started or stopped",
    "MPI_T_ERR_PVAR_NO_ATOMIC: no atomic read-and-reset",
};

/* User-added classes and codes, and their strings (MPI_Add_error_*).
 * Numbers are never reused: a removed one (MPI_Remove_error_*) stays
 * invalid, so a stale copy of it cannot name a newer class. */
struct user_error { int error_class; char *string; int removed; };
static struct user_error user_classes[USER_MAX], user_codes[USER_MAX];
static int user_class_count, user_code_count;
static mtx_t user_lock;
static once_flag user_lock_once = ONCE_FLAG_INIT;
static void init_user_lock(void) { mtx_init(&user_lock, mtx_plain); }

/* The ring of recent raised errors with their messages. */
struct instance_error { int code; char message[MPI_MAX_ERROR_STRING]; };
static struct instance_error instances[INSTANCE_RING];
static atomic_uint instance_seq;

/* Classify a code: its class, or -1 if the code is not valid. */
static int code_to_class(int code)
{
    if (code >= 0 && code < STANDARD_CLASSES)
        return code;
    if (code >= MPI_T_ERR_CANNOT_INIT && code <= MPI_T_ERR_PVAR_NO_ATOMIC)
        return code;
    if (code >= USER_CLASS_BASE && code < USER_CLASS_BASE + user_class_count)
        return user_classes[code - USER_CLASS_BASE].removed ? -1 : code;
    if (code >= USER_CODE_BASE && code < USER_CODE_BASE + user_code_count)
        return user_codes[code - USER_CODE_BASE].removed ? -1 : user_codes[code - USER_CODE_BASE].error_class;
    if (code >= INSTANCE_BASE) {
        int cls = code & INSTANCE_CLASS_MASK;
        if (cls != code && code_to_class(cls) == cls)
            return cls;
    }
    return -1;
}

static const char *class_string(int cls)
{
    if (cls >= 0 && cls < STANDARD_CLASSES)
        return standard_class_names[cls];
    if (cls >= MPI_T_ERR_CANNOT_INIT && cls <= MPI_T_ERR_PVAR_NO_ATOMIC)
        return tool_error_names[cls - MPI_T_ERR_CANNOT_INIT];
    if (cls >= USER_CLASS_BASE && cls < USER_CLASS_BASE + user_class_count)
        return user_classes[cls - USER_CLASS_BASE].string ? user_classes[cls - USER_CLASS_BASE].string : "";
    return NULL;
}

/* The code for one raised error, carrying its message. */
static int make_instance_code(int cls, const char *message)
{
    if (cls == MPI_SUCCESS || cls >= INSTANCE_BASE)
        return cls;
    unsigned seq = atomic_fetch_add(&instance_seq, 1u) % ((0x7fffffffu - INSTANCE_BASE) >> 15);
    int code = INSTANCE_BASE + (int)(seq << 15) + cls;
    struct instance_error *slot = &instances[seq % INSTANCE_RING];
    slot->code = code;
    snprintf(slot->message, sizeof slot->message, "%s", message);
    return code;
}

/* ---- error handlers ---- */
static struct MPI_ABI_Errhandler eh_fatal = { HASHI_EH_FATAL, HASHI_OBJ_NONE, NULL, 1 };
static struct MPI_ABI_Errhandler eh_return = { HASHI_EH_RETURN, HASHI_OBJ_NONE, NULL, 1 };
static struct MPI_ABI_Errhandler eh_abort = { HASHI_EH_ABORT, HASHI_OBJ_NONE, NULL, 1 };

static int errhandler_is_static(const struct MPI_ABI_Errhandler *eh)
{
    return eh == &eh_fatal || eh == &eh_return || eh == &eh_abort;
}

struct MPI_ABI_Errhandler *hashi_errhandler_get(MPI_Errhandler h)
{
    if (h == MPI_ERRORS_ARE_FATAL) return &eh_fatal;
    if (h == MPI_ERRORS_RETURN) return &eh_return;
    if (h == MPI_ERRORS_ABORT) return &eh_abort;
    if (hashi_handle_is_predefined(h)) return NULL;
    return h;
}

static MPI_Errhandler errhandler_handle(struct MPI_ABI_Errhandler *eh)
{
    if (eh == &eh_fatal) return MPI_ERRORS_ARE_FATAL;
    if (eh == &eh_return) return MPI_ERRORS_RETURN;
    if (eh == &eh_abort) return MPI_ERRORS_ABORT;
    return eh;
}

void hashi_errhandler_retain(struct MPI_ABI_Errhandler *eh)
{
    if (!errhandler_is_static(eh))
        atomic_fetch_add(&eh->refcount, 1);
}

void hashi_errhandler_release(struct MPI_ABI_Errhandler *eh)
{
    if (eh && !errhandler_is_static(eh) && atomic_fetch_sub(&eh->refcount, 1) == 1) {
        hashi_handle_forget(eh);
        free(eh);
    }
}

/* MPI_FILE_NULL's handler: what MPI_File_open gives new files, and the
 * handler of errors on no valid file. */
static struct MPI_ABI_Errhandler *file_default_eh = &eh_return;

static struct MPI_ABI_Errhandler *object_errhandler(enum hashi_obj_kind kind, const void *handle)
{
    if (kind == HASHI_OBJ_COMM) {
        struct MPI_ABI_Comm *comm = hashi_comm_get((MPI_Comm)(uintptr_t)handle);
        if (comm && comm->errhandler)
            return comm->errhandler;
        /* An invalid communicator: MPI-4 raises on the initial handler. */
    }
    if (kind == HASHI_OBJ_ERRHANDLER)
        return (struct MPI_ABI_Errhandler *)(uintptr_t)handle;
    if (kind == HASHI_OBJ_SESSION) {
        struct MPI_ABI_Session *session = hashi_session_get((MPI_Session)(uintptr_t)handle);
        if (session && session->errhandler)
            return session->errhandler;
    }
    if (kind == HASHI_OBJ_WIN) {
        struct MPI_ABI_Win *win = hashi_win_get((MPI_Win)(uintptr_t)handle);
        if (win && win->errhandler)
            return win->errhandler;
    }
    if (kind == HASHI_OBJ_FILE) {
        /* An invalid file (MPI_FILE_NULL included) and MPI_File_open raise on
         * MPI_FILE_NULL's handler (MPI 4.1 sec. 14.7). */
        struct MPI_ABI_File *file = hashi_file_get((MPI_File)(uintptr_t)handle);
        return file && file->errhandler ? file->errhandler : file_default_eh;
    }
    /* No object or an invalid one: MPI_COMM_SELF's handler, as MPI-4 says
     * for no object. */
    return hashi_comm_self.errhandler ? hashi_comm_self.errhandler : &eh_fatal;
}

static __attribute__((noreturn)) void fatal_abort(const char *message, int code, int is_abort_handler)
{
    char line[MPI_MAX_ERROR_STRING + 64];
    snprintf(line, sizeof line, "%s%s", message,
             is_abort_handler ? " (MPI_ERRORS_ABORT)" : " (MPI_ERRORS_ARE_FATAL: ending the job)");
    hashi_rt_abort(code > 0 && code < 256 ? code : 1, line);
}

static int dispatch(enum hashi_obj_kind kind, const void *handle, int code, int cls, const char *message);

int hashi_err_raise(const char *func, enum hashi_obj_kind kind, const void *handle,
                    int errcode, const char *fmt, ...)
{
    char reason[MPI_MAX_ERROR_STRING - 128];
    char message[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    int cls = code_to_class(errcode);
    const char *cname = class_string(cls >= 0 ? cls : MPI_ERR_UNKNOWN);
    /* "MPI_Send: MPI_ERR_RANK: invalid rank 5 (communicator size 2)" */
    size_t cname_len = strcspn(cname, ":");
    snprintf(message, sizeof message, "%s: %.*s: %s", func, (int)cname_len, cname, reason);
    /* A bare class gets an instance code carrying the message; a specific code
     * (user-added, or one raised further down) is passed on unchanged. */
    int code = cls == errcode ? make_instance_code(cls, message)
               : cls >= 0 ? errcode : make_instance_code(MPI_ERR_UNKNOWN, message);
    return dispatch(kind, handle, code, cls, message);
}

/* Hand `code` (of class cls, described by message) to the object's handler. */
static int dispatch(enum hashi_obj_kind kind, const void *handle, int code, int cls, const char *message)
{
    struct MPI_ABI_Errhandler *eh = object_errhandler(kind, handle);
    switch (eh->kind) {
    case HASHI_EH_RETURN:
        return code;
    case HASHI_EH_FATAL:
    case HASHI_EH_ABORT:
        fatal_abort(message, cls > 0 ? cls : 1, eh->kind == HASHI_EH_ABORT);
    case HASHI_EH_USER:
        if (eh->obj_kind == HASHI_OBJ_SESSION && (kind == HASHI_OBJ_SESSION || kind == HASHI_OBJ_ERRHANDLER)) {
            MPI_Session session = kind == HASHI_OBJ_SESSION ? (MPI_Session)(uintptr_t)handle : MPI_SESSION_NULL;
            ((MPI_Session_errhandler_function *)(void (*)(void))eh->user_fn)(&session, &code);
        } else if (eh->obj_kind == HASHI_OBJ_WIN && kind == HASHI_OBJ_WIN) {
            MPI_Win win = (MPI_Win)(uintptr_t)handle;
            ((MPI_Win_errhandler_function *)(void (*)(void))eh->user_fn)(&win, &code);
        } else if (eh->obj_kind == HASHI_OBJ_FILE && kind == HASHI_OBJ_FILE) {
            MPI_File file = hashi_file_get((MPI_File)(uintptr_t)handle) ? (MPI_File)(uintptr_t)handle : MPI_FILE_NULL;
            ((MPI_File_errhandler_function *)(void (*)(void))eh->user_fn)(&file, &code);
        } else if (eh->obj_kind == HASHI_OBJ_COMM && (kind == HASHI_OBJ_COMM || kind == HASHI_OBJ_NONE)) {
            MPI_Comm comm = kind == HASHI_OBJ_COMM ? (MPI_Comm)(uintptr_t)handle : MPI_COMM_SELF;
            ((MPI_Comm_errhandler_function *)(void (*)(void))eh->user_fn)(&comm, &code);
        }
        return code;
    }
    return code;
}

int hashi_err_unsupported(const char *func, enum hashi_obj_kind kind, const void *handle)
{
    return hashi_err_raise(func, kind, handle, MPI_ERR_UNSUPPORTED_OPERATION,
                           "%s is not implemented in Hashi yet (hashi_info --unsupported lists them)", func);
}

int hashi_err_not_initialized(const char *func)
{
    char line[256];
    snprintf(line, sizeof line, "%s called %s: it is an error (MPI_ERR_OTHER)", func,
             hashi_init_state == HASHI_STATE_FINALIZED
                 ? "after MPI_Finalize and every MPI_Session_finalize, outside MPI"
                 : "before MPI_Init or MPI_Session_init");
    hashi_rt_abort(MPI_ERR_OTHER, line);
}

/* ---- the MPI calls ---- */

int hashi_impl_Error_class(int errorcode, int *errorclass)
{
    int cls = code_to_class(errorcode);
    if (!errorclass)
        return hashi_err_raise("MPI_Error_class", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "errorclass is NULL");
    if (cls < 0)
        return hashi_err_raise("MPI_Error_class", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "%d is not a valid error code", errorcode);
    *errorclass = cls;
    return MPI_SUCCESS;
}

int hashi_impl_Error_string(int errorcode, char *string, int *resultlen)
{
    if (!string || !resultlen)
        return hashi_err_raise("MPI_Error_string", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "string or resultlen is NULL");
    int cls = code_to_class(errorcode);
    if (cls < 0)
        return hashi_err_raise("MPI_Error_string", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "%d is not a valid error code", errorcode);
    const char *text = NULL;
    if (errorcode >= INSTANCE_BASE) {
        unsigned seq = (unsigned)(errorcode - INSTANCE_BASE) >> 15;
        const struct instance_error *slot = &instances[seq % INSTANCE_RING];
        if (slot->code == errorcode)
            text = slot->message;
    } else if (errorcode >= USER_CODE_BASE && errorcode < USER_CODE_BASE + user_code_count) {
        /* A user code has its own string or none: MPI 4.1 sec. 9.5 gives ""
         * for one without, not its class's. */
        text = user_codes[errorcode - USER_CODE_BASE].string;
        if (!text)
            text = "";
    }
    if (!text)
        text = class_string(cls);
    *resultlen = snprintf(string, MPI_MAX_ERROR_STRING, "%s", text ? text : "");
    if (*resultlen >= MPI_MAX_ERROR_STRING)
        *resultlen = MPI_MAX_ERROR_STRING - 1;
    return MPI_SUCCESS;
}

int hashi_err_last_used_code(void)
{
    for (int n = user_code_count - 1; n >= 0; n--)
        if (!user_codes[n].removed)
            return USER_CODE_BASE + n;
    for (int n = user_class_count - 1; n >= 0; n--)
        if (!user_classes[n].removed)
            return USER_CLASS_BASE + n;
    return MPI_ERR_LASTCODE;
}

int hashi_impl_Add_error_class(int *errorclass)
{
    call_once(&user_lock_once, init_user_lock);
    mtx_lock(&user_lock);
    int n = user_class_count < USER_MAX ? user_class_count++ : -1;
    mtx_unlock(&user_lock);
    if (n < 0)
        return hashi_err_raise("MPI_Add_error_class", HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM,
                               "at most %d error classes can be added", USER_MAX);
    *errorclass = USER_CLASS_BASE + n;
    return MPI_SUCCESS;
}

int hashi_impl_Add_error_code(int errorclass, int *errorcode)
{
    if (code_to_class(errorclass) != errorclass || errorclass >= INSTANCE_BASE)
        return hashi_err_raise("MPI_Add_error_code", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "%d is not an error class", errorclass);
    call_once(&user_lock_once, init_user_lock);
    mtx_lock(&user_lock);
    int n = user_code_count < USER_MAX ? user_code_count : -1;
    if (n >= 0) {
        user_codes[n].error_class = errorclass;
        user_code_count++;
    }
    mtx_unlock(&user_lock);
    if (n < 0)
        return hashi_err_raise("MPI_Add_error_code", HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM,
                               "at most %d error codes can be added", USER_MAX);
    *errorcode = USER_CODE_BASE + n;
    return MPI_SUCCESS;
}

/* The entry of a user-added class, code, or either, that was not removed;
 * NULL if there is none. */
static struct user_error *user_class_entry(int code)
{
    if (code < USER_CLASS_BASE || code >= USER_CLASS_BASE + user_class_count)
        return NULL;
    struct user_error *entry = &user_classes[code - USER_CLASS_BASE];
    return entry->removed ? NULL : entry;
}

static struct user_error *user_code_entry(int code)
{
    if (code < USER_CODE_BASE || code >= USER_CODE_BASE + user_code_count)
        return NULL;
    struct user_error *entry = &user_codes[code - USER_CODE_BASE];
    return entry->removed ? NULL : entry;
}

static struct user_error *user_entry(int code)
{
    struct user_error *entry = user_class_entry(code);
    return entry ? entry : user_code_entry(code);
}

int hashi_impl_Add_error_string(int errorcode, const char *string)
{
    struct user_error *entry = user_entry(errorcode);
    if (!entry || !string)
        return hashi_err_raise("MPI_Add_error_string", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "%d is not a user-added error class or code", errorcode);
    if (strlen(string) >= MPI_MAX_ERROR_STRING)
        return hashi_err_raise("MPI_Add_error_string", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "the string is longer than MPI_MAX_ERROR_STRING");
    char *copy = strdup(string);
    if (!copy)
        return hashi_err_raise("MPI_Add_error_string", HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    call_once(&user_lock_once, init_user_lock);
    mtx_lock(&user_lock);
    free(entry->string);
    entry->string = copy;
    mtx_unlock(&user_lock);
    return MPI_SUCCESS;
}

/* MPI 4.1 sec. 9.5: a string goes first, then the codes, then their class. */
int hashi_impl_Remove_error_string(int errorcode)
{
    call_once(&user_lock_once, init_user_lock);
    mtx_lock(&user_lock);
    struct user_error *entry = user_entry(errorcode);
    char *string = entry ? entry->string : NULL;
    if (string)
        entry->string = NULL;
    mtx_unlock(&user_lock);
    if (!entry)
        return hashi_err_raise("MPI_Remove_error_string", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "%d is not a user-added error class or code", errorcode);
    if (!string)
        return hashi_err_raise("MPI_Remove_error_string", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "error %d has no string added by MPI_Add_error_string", errorcode);
    free(string);
    return MPI_SUCCESS;
}

int hashi_impl_Remove_error_code(int errorcode)
{
    call_once(&user_lock_once, init_user_lock);
    mtx_lock(&user_lock);
    struct user_error *entry = user_code_entry(errorcode);
    int has_string = entry && entry->string;
    if (entry && !has_string)
        entry->removed = 1;
    mtx_unlock(&user_lock);
    if (!entry)
        return hashi_err_raise("MPI_Remove_error_code", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "%d is not an error code added by MPI_Add_error_code", errorcode);
    if (has_string)
        return hashi_err_raise("MPI_Remove_error_code", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "error code %d still has a string: MPI_Remove_error_string first", errorcode);
    return MPI_SUCCESS;
}

int hashi_impl_Remove_error_class(int errorclass)
{
    call_once(&user_lock_once, init_user_lock);
    mtx_lock(&user_lock);
    struct user_error *entry = user_class_entry(errorclass);
    int codes = 0;
    for (int n = 0; entry && n < user_code_count; n++)
        codes += !user_codes[n].removed && user_codes[n].error_class == errorclass;
    int has_string = entry && entry->string;
    if (entry && !codes && !has_string)
        entry->removed = 1;
    mtx_unlock(&user_lock);
    if (!entry)
        return hashi_err_raise("MPI_Remove_error_class", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "%d is not an error class added by MPI_Add_error_class", errorclass);
    if (codes)
        return hashi_err_raise("MPI_Remove_error_class", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "error class %d still has %d error code%s: MPI_Remove_error_code first", errorclass,
                               codes, codes == 1 ? "" : "s");
    if (has_string)
        return hashi_err_raise("MPI_Remove_error_class", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "error class %d still has a string: MPI_Remove_error_string first", errorclass);
    return MPI_SUCCESS;
}

/* A user error handler for objects of obj_kind (the four
 * MPI_*_create_errhandler calls). */
static int user_errhandler_create(const char *func, enum hashi_obj_kind obj_kind, void (*fn)(void),
                                  MPI_Errhandler *errhandler)
{
    if (!fn || !errhandler)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "function or errhandler is NULL");
    struct MPI_ABI_Errhandler *eh = malloc(sizeof *eh);
    if (!eh)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    eh->kind = HASHI_EH_USER;
    eh->obj_kind = obj_kind;
    eh->user_fn = fn;
    atomic_init(&eh->refcount, 1);
    *errhandler = eh;
    return MPI_SUCCESS;
}

/* MPI_*_call_errhandler: the object's handler gets errorcode itself (no
 * instance code), which the program compares with its own codes. */
static int app_error_dispatch(const char *func, enum hashi_obj_kind obj_kind, const void *obj, int errorcode)
{
    int cls = code_to_class(errorcode);
    const char *cname = class_string(cls >= 0 ? cls : MPI_ERR_UNKNOWN);
    char message[MPI_MAX_ERROR_STRING];
    snprintf(message, sizeof message, "%s: %.*s: error %d raised by the application", func,
             (int)strcspn(cname, ":"), cname, errorcode);
    dispatch(obj_kind, obj, errorcode, cls, message);
    return MPI_SUCCESS;
}

int hashi_impl_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    return user_errhandler_create("MPI_Comm_create_errhandler", HASHI_OBJ_COMM, (void (*)(void))fn, errhandler);
}

int hashi_impl_Session_create_errhandler(MPI_Session_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    return user_errhandler_create("MPI_Session_create_errhandler", HASHI_OBJ_SESSION, (void (*)(void))fn,
                                  errhandler);
}

/* A handler a session may have: a predefined one or one made for sessions;
 * NULL otherwise. */
struct MPI_ABI_Errhandler *hashi_errhandler_for_session(MPI_Errhandler errhandler)
{
    struct MPI_ABI_Errhandler *eh = hashi_errhandler_get(errhandler);
    return eh && (eh->kind != HASHI_EH_USER || eh->obj_kind == HASHI_OBJ_SESSION) ? eh : NULL;
}

int hashi_impl_Session_set_errhandler(MPI_Session session, MPI_Errhandler errhandler)
{
    static const char func[] = "MPI_Session_set_errhandler";
    struct MPI_ABI_Session *s = hashi_session_get(session);
    if (!s)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_SESSION, "not a valid session");
    struct MPI_ABI_Errhandler *eh = hashi_errhandler_for_session(errhandler);
    if (!eh)
        return hashi_err_session(func, session, MPI_ERR_ARG, "not an error handler for sessions");
    hashi_errhandler_retain(eh);
    hashi_errhandler_release(s->errhandler);
    s->errhandler = eh;
    return MPI_SUCCESS;
}

int hashi_impl_Session_get_errhandler(MPI_Session session, MPI_Errhandler *errhandler)
{
    static const char func[] = "MPI_Session_get_errhandler";
    struct MPI_ABI_Session *s = hashi_session_get(session);
    if (!s)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_SESSION, "not a valid session");
    if (!errhandler)
        return hashi_err_session(func, session, MPI_ERR_ARG, "errhandler is NULL");
    hashi_errhandler_retain(s->errhandler);
    *errhandler = errhandler_handle(s->errhandler);
    return MPI_SUCCESS;
}

int hashi_impl_Session_call_errhandler(MPI_Session session, int errorcode)
{
    static const char func[] = "MPI_Session_call_errhandler";
    if (!hashi_session_get(session))
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_SESSION, "not a valid session");
    return app_error_dispatch(func, HASHI_OBJ_SESSION, (const void *)(uintptr_t)session, errorcode);
}

int hashi_impl_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_set_errhandler");
    int rc;
    struct MPI_ABI_Comm *c = hashi_comm_arg("MPI_Comm_set_errhandler", comm, &rc);
    if (!c)
        return rc;
    struct MPI_ABI_Errhandler *eh = hashi_errhandler_get(errhandler);
    if (!eh || (eh->kind == HASHI_EH_USER && eh->obj_kind != HASHI_OBJ_COMM))
        return hashi_err_comm("MPI_Comm_set_errhandler", comm, MPI_ERR_ARG,
                              "not an error handler for communicators");
    hashi_errhandler_retain(eh);
    hashi_errhandler_release(c->errhandler);
    c->errhandler = eh;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_get_errhandler");
    int rc;
    struct MPI_ABI_Comm *c = hashi_comm_arg("MPI_Comm_get_errhandler", comm, &rc);
    if (!c)
        return rc;
    if (!errhandler)
        return hashi_err_comm("MPI_Comm_get_errhandler", comm, MPI_ERR_ARG, "errhandler is NULL");
    hashi_errhandler_retain(c->errhandler);
    *errhandler = errhandler_handle(c->errhandler);
    return MPI_SUCCESS;
}

int hashi_impl_Errhandler_free(MPI_Errhandler *errhandler)
{
    if (!errhandler || *errhandler == MPI_ERRHANDLER_NULL || !hashi_errhandler_get(*errhandler))
        return hashi_err_raise("MPI_Errhandler_free", HASHI_OBJ_NONE, NULL, MPI_ERR_ARG,
                               "not a valid error handler");
    hashi_errhandler_release(hashi_errhandler_get(*errhandler));
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}

int hashi_impl_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    HASHI_CHECK_INITIALIZED("MPI_Comm_call_errhandler");
    int rc;
    if (!hashi_comm_arg("MPI_Comm_call_errhandler", comm, &rc))
        return rc;
    return app_error_dispatch("MPI_Comm_call_errhandler", HASHI_OBJ_COMM, (const void *)(uintptr_t)comm, errorcode);
}

/* ---- windows ---- */

int hashi_impl_Win_create_errhandler(MPI_Win_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    HASHI_CHECK_INITIALIZED("MPI_Win_create_errhandler");
    return user_errhandler_create("MPI_Win_create_errhandler", HASHI_OBJ_WIN, (void (*)(void))fn, errhandler);
}

static struct MPI_ABI_Win *win_arg(const char *func, MPI_Win win, int *rc)
{
    struct MPI_ABI_Win *w = hashi_win_get(win);
    if (!w)
        *rc = hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_WIN,
                              win == MPI_WIN_NULL ? "the window is MPI_WIN_NULL" : "not a valid window");
    return w;
}

int hashi_impl_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
    static const char func[] = "MPI_Win_set_errhandler";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Win *w = win_arg(func, win, &rc);
    if (!w)
        return rc;
    struct MPI_ABI_Errhandler *eh = hashi_errhandler_get(errhandler);
    if (!eh || (eh->kind == HASHI_EH_USER && eh->obj_kind != HASHI_OBJ_WIN))
        return hashi_err_win(func, win, MPI_ERR_ARG, "not an error handler for windows");
    hashi_errhandler_retain(eh);
    hashi_errhandler_release(w->errhandler);
    w->errhandler = eh;
    return MPI_SUCCESS;
}

int hashi_impl_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
    static const char func[] = "MPI_Win_get_errhandler";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Win *w = win_arg(func, win, &rc);
    if (!w)
        return rc;
    if (!errhandler)
        return hashi_err_win(func, win, MPI_ERR_ARG, "errhandler is NULL");
    hashi_errhandler_retain(w->errhandler);
    *errhandler = errhandler_handle(w->errhandler);
    return MPI_SUCCESS;
}

int hashi_impl_Win_call_errhandler(MPI_Win win, int errorcode)
{
    static const char func[] = "MPI_Win_call_errhandler";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    if (!win_arg(func, win, &rc))
        return rc;
    return app_error_dispatch(func, HASHI_OBJ_WIN, (const void *)(uintptr_t)win, errorcode);
}

/* A new window starts with MPI_ERRORS_ARE_FATAL (MPI 4.1 sec. 9.3). */
struct MPI_ABI_Errhandler *hashi_errhandler_win_default(void)
{
    return &eh_fatal;
}

/* ---- files ---- */

int hashi_impl_File_create_errhandler(MPI_File_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    HASHI_CHECK_INITIALIZED("MPI_File_create_errhandler");
    return user_errhandler_create("MPI_File_create_errhandler", HASHI_OBJ_FILE, (void (*)(void))fn, errhandler);
}

/* The handler slot of a file argument: the file's, or MPI_FILE_NULL's
 * default; NULL (MPI_ERR_FILE raised in *rc) for anything else. */
static struct MPI_ABI_Errhandler **file_errhandler_slot(const char *func, MPI_File file, int *rc)
{
    if (file == MPI_FILE_NULL)
        return &file_default_eh;
    struct MPI_ABI_File *f = hashi_file_get(file);
    if (!f) {
        *rc = hashi_err_raise(func, HASHI_OBJ_FILE, MPI_FILE_NULL, MPI_ERR_FILE, "not a valid file handle");
        return NULL;
    }
    return &f->errhandler;
}

int hashi_impl_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler)
{
    static const char func[] = "MPI_File_set_errhandler";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Errhandler **slot = file_errhandler_slot(func, file, &rc);
    if (!slot)
        return rc;
    struct MPI_ABI_Errhandler *eh = hashi_errhandler_get(errhandler);
    if (!eh || (eh->kind == HASHI_EH_USER && eh->obj_kind != HASHI_OBJ_FILE))
        return hashi_err_file(func, file, MPI_ERR_ARG, "not an error handler for files");
    hashi_errhandler_retain(eh);
    hashi_errhandler_release(*slot);
    *slot = eh;
    return MPI_SUCCESS;
}

int hashi_impl_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler)
{
    static const char func[] = "MPI_File_get_errhandler";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    struct MPI_ABI_Errhandler **slot = file_errhandler_slot(func, file, &rc);
    if (!slot)
        return rc;
    if (!errhandler)
        return hashi_err_file(func, file, MPI_ERR_ARG, "errhandler is NULL");
    hashi_errhandler_retain(*slot);
    *errhandler = errhandler_handle(*slot);
    return MPI_SUCCESS;
}

int hashi_impl_File_call_errhandler(MPI_File file, int errorcode)
{
    static const char func[] = "MPI_File_call_errhandler";
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    if (!file_errhandler_slot(func, file, &rc))
        return rc;
    return app_error_dispatch(func, HASHI_OBJ_FILE, (const void *)(uintptr_t)file, errorcode);
}

struct MPI_ABI_Errhandler *hashi_errhandler_file_default(void)
{
    hashi_errhandler_retain(file_default_eh);
    return file_default_eh;
}

/* The handlers the communicators start with. */
void hashi_errors_init(void);
void hashi_errors_init(void)
{
    hashi_comm_world.errhandler = &eh_fatal;
    hashi_comm_self.errhandler = &eh_fatal;
}
