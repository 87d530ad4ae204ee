/*
 * attrs: attribute caching on communicators and datatypes.
 *
 * Copy and delete callbacks are counted and checked for their arguments
 * (object, keyval, extra_state, value): MPI_Comm_dup copies through user,
 * MPI_COMM_DUP_FN and MPI_COMM_NULL_COPY_FN keyvals; a copy callback that
 * declines (flag 0) leaves the attribute out; replacing a value deletes the
 * old one; MPI_Comm_free deletes every attribute at the call; a freed
 * keyval still deletes its attributes; a failing delete callback fails
 * MPI_Comm_delete_attr with its code; a failing copy callback fails the
 * dup. The same for datatypes (MPI_Type_dup, MPI_Type_free) and the
 * deprecated MPI-1 calls. Invalid keyvals get MPI_ERR_KEYVAL. Finally,
 * attributes on MPI_COMM_SELF are deleted first at MPI_Finalize, newest
 * first, while MPI still works: checked after MPI_Finalize returns.
 * Prints "rank R of S attrs ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"

static int me, n;
static int copies, deletes;
static int extra_marker;   /* &extra_marker is every keyval's extra_state */

/* The last delete seen. */
static void *last_deleted_value;
static int last_deleted_keyval;
static MPI_Comm last_deleted_comm;

static int copy_plus_one(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    CHECK(extra == &extra_marker, "copy callback: extra_state %p", extra);
    copies++;
    *(void **)out = (void *)((char *)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

static int copy_decline(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    (void)extra;
    (void)in;
    (void)out;
    copies++;
    *flag = 0;
    return MPI_SUCCESS;
}

static int copy_fail(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    (void)extra;
    (void)in;
    (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    CHECK(extra == &extra_marker, "delete callback: extra_state %p", extra);
    deletes++;
    last_deleted_value = value;
    last_deleted_keyval = keyval;
    last_deleted_comm = comm;
    return MPI_SUCCESS;
}

static int fail_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    return MPI_ERR_ARG;
}

static void *get(MPI_Comm comm, int keyval, int *flag)
{
    void *v = NULL;
    CHECK_MPI(MPI_Comm_get_attr(comm, keyval, &v, flag));
    return v;
}

static void comm_attributes(void)
{
    int kv_user, kv_dup, kv_null, kv_decline;
    CHECK_MPI(MPI_Comm_create_keyval(copy_plus_one, count_delete, &kv_user, &extra_marker));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, count_delete, &kv_dup, &extra_marker));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &kv_null, &extra_marker));
    CHECK_MPI(MPI_Comm_create_keyval(copy_decline, count_delete, &kv_decline, &extra_marker));
    CHECK(kv_user != kv_dup && kv_dup != kv_null && kv_null != kv_decline, "keyvals are not distinct");

    MPI_Comm a;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    int flag = 1;
    get(a, kv_user, &flag);
    CHECK(!flag, "a new communicator has an attribute");
    char base[8];
    CHECK_MPI(MPI_Comm_set_attr(a, kv_user, base + 0));
    CHECK_MPI(MPI_Comm_set_attr(a, kv_dup, base + 2));
    CHECK_MPI(MPI_Comm_set_attr(a, kv_null, base + 4));
    CHECK_MPI(MPI_Comm_set_attr(a, kv_decline, base + 6));
    CHECK(get(a, kv_user, &flag) == base && flag, "get after set");

    /* Replacing deletes the old value first. */
    deletes = 0;
    CHECK_MPI(MPI_Comm_set_attr(a, kv_user, base + 1));
    CHECK(deletes == 1 && last_deleted_value == base && last_deleted_keyval == kv_user && last_deleted_comm == a,
          "replacing: %d deletes, value %p keyval %d", deletes, last_deleted_value, last_deleted_keyval);
    CHECK(get(a, kv_user, &flag) == base + 1, "value after replacing");

    /* Dup: user copy (+1), DUP_FN (same), NULL_COPY (absent), decline (absent). */
    copies = deletes = 0;
    MPI_Comm b;
    CHECK_MPI(MPI_Comm_dup(a, &b));
    CHECK(copies == 2 && deletes == 0, "dup: %d copy callbacks (expected 2), %d deletes", copies, deletes);
    CHECK(get(b, kv_user, &flag) == base + 2 && flag, "dup: user copy value");
    CHECK(get(b, kv_dup, &flag) == base + 2 && flag, "dup: MPI_COMM_DUP_FN value");
    get(b, kv_null, &flag);
    CHECK(!flag, "dup: MPI_COMM_NULL_COPY_FN attribute was copied");
    get(b, kv_decline, &flag);
    CHECK(!flag, "dup: a declined attribute was copied");
    CHECK(get(a, kv_user, &flag) == base + 1, "dup changed the parent's value");

    /* idup copies the same way. */
    copies = 0;
    MPI_Comm c;
    MPI_Request req;
    CHECK_MPI(MPI_Comm_idup(b, &c, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(copies == 1, "idup: %d copy callbacks (expected 1: b has user and dup_fn attributes)", copies);
    CHECK(get(c, kv_user, &flag) == base + 3 && flag, "idup: user copy value");
    CHECK(get(c, kv_dup, &flag) == base + 2 && flag, "idup: dup_fn value");

    /* Delete one, then free: every remaining attribute deleted at the call. */
    deletes = 0;
    CHECK_MPI(MPI_Comm_delete_attr(a, kv_dup));
    CHECK(deletes == 1 && last_deleted_value == base + 2 && last_deleted_keyval == kv_dup, "delete_attr");
    get(a, kv_dup, &flag);
    CHECK(!flag, "attribute still there after delete_attr");
    deletes = 0;
    MPI_Comm a_handle = a;
    CHECK_MPI(MPI_Comm_free(&a));
    CHECK(deletes == 3, "free of a: %d deletes (expected 3)", deletes);
    CHECK(last_deleted_comm == a_handle, "delete callback got another communicator");

    /* A freed keyval: its attributes are still deleted, the key unusable. */
    int kv_user_copy = kv_user;
    CHECK_MPI(MPI_Comm_free_keyval(&kv_user));
    CHECK(kv_user == MPI_KEYVAL_INVALID, "free_keyval did not reset the keyval");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN));
    int rc = MPI_Comm_set_attr(b, kv_user_copy, base), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "set_attr with a freed keyval: class %d", cls);
    deletes = 0;
    CHECK_MPI(MPI_Comm_free(&b));
    CHECK(deletes == 2, "free of b: %d deletes (expected 2, one with a freed keyval)", deletes);
    deletes = 0;
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK(deletes == 2, "free of c: %d deletes", deletes);

    /* A failing delete callback fails the call with its code, and the value stays. */
    int kv_fail;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, fail_delete, &kv_fail, NULL));
    MPI_Comm d;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    CHECK_MPI(MPI_Comm_set_attr(d, kv_fail, base));
    rc = MPI_Comm_delete_attr(d, kv_fail);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "delete_attr with a failing callback: class %d", cls);
    CHECK(get(d, kv_fail, &flag) == base && flag, "the attribute went despite the failing callback");
    rc = MPI_Comm_free(&d);
    CHECK(rc != MPI_SUCCESS && d != MPI_COMM_NULL, "free with a failing delete callback succeeded");
    /* Make it deletable, then free. */
    int kv_copyfail;
    CHECK_MPI(MPI_Comm_create_keyval(copy_fail, MPI_COMM_NULL_DELETE_FN, &kv_copyfail, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, kv_copyfail, base));
    MPI_Comm e = MPI_COMM_WORLD;
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &e);
    CHECK(rc != MPI_SUCCESS && e == MPI_COMM_NULL, "dup with a failing copy callback: rc %d", rc);
    CHECK_MPI(MPI_Comm_delete_attr(MPI_COMM_WORLD, kv_copyfail));
    CHECK_MPI(MPI_Comm_free_keyval(&kv_copyfail));

    /* Invalid keyvals. */
    int kv_type;
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &kv_type, NULL));
    struct { int kv; const char *what; } bad[] = { { kv_type, "a datatype keyval" }, { 999999, "an unknown keyval" },
                                                    { MPI_KEYVAL_INVALID, "MPI_KEYVAL_INVALID" } };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        void *v;
        rc = MPI_Comm_get_attr(MPI_COMM_WORLD, bad[i].kv, &v, &flag);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_KEYVAL, "get_attr with %s: class %d", bad[i].what, cls);
        rc = MPI_Comm_set_attr(MPI_COMM_WORLD, bad[i].kv, NULL);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_KEYVAL, "set_attr with %s: class %d", bad[i].what, cls);
    }
    int predefined = MPI_TAG_UB;
    rc = MPI_Comm_free_keyval(&predefined);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "freeing MPI_TAG_UB: class %d", cls);
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, base);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "setting MPI_TAG_UB: class %d", cls);
    CHECK_MPI(MPI_Type_free_keyval(&kv_type));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));

    CHECK_MPI(MPI_Comm_free_keyval(&kv_dup));
    CHECK_MPI(MPI_Comm_free_keyval(&kv_null));
    CHECK_MPI(MPI_Comm_free_keyval(&kv_decline));
    (void)kv_fail; /* d and its attribute stay: the delete callback refuses (the program's leak) */
}

/* ---- the MPI-1 calls ---- */

static int mpi1_copies;
static int mpi1_copy(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    (void)extra;
    mpi1_copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static void mpi1_attributes(void)
{
    int kv, flag;
    CHECK_MPI(MPI_Keyval_create(mpi1_copy, count_delete, &kv, &extra_marker));
    int value = 42;
    CHECK_MPI(MPI_Attr_put(MPI_COMM_WORLD, kv, &value));
    int *got = NULL;
    CHECK_MPI(MPI_Attr_get(MPI_COMM_WORLD, kv, &got, &flag));
    CHECK(flag && got == &value, "Attr_get after Attr_put");
    MPI_Comm d;
    mpi1_copies = 0;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    CHECK(mpi1_copies == 1, "MPI-1 copy callback ran %d times", mpi1_copies);
    CHECK_MPI(MPI_Attr_get(d, kv, &got, &flag));
    CHECK(flag && got == &value, "copied MPI-1 attribute");
    deletes = 0;
    CHECK_MPI(MPI_Attr_delete(d, kv));
    CHECK(deletes == 1 && last_deleted_value == &value, "Attr_delete");
    CHECK_MPI(MPI_Comm_free(&d));
    CHECK(deletes == 1, "freeing d deleted again");
    CHECK_MPI(MPI_Attr_delete(MPI_COMM_WORLD, kv));
    CHECK_MPI(MPI_Keyval_free(&kv));
    CHECK(kv == MPI_KEYVAL_INVALID, "Keyval_free did not reset the keyval");
}

/* ---- datatypes ---- */

static int type_copies, type_deletes;
static MPI_Datatype type_deleted_on;

static int type_copy(MPI_Datatype old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    CHECK(extra == &extra_marker, "type copy callback: extra_state");
    type_copies++;
    *(void **)out = (void *)((char *)in + 10);
    *flag = 1;
    return MPI_SUCCESS;
}

static int type_delete(MPI_Datatype type, int keyval, void *value, void *extra)
{
    (void)keyval;
    (void)value;
    (void)extra;
    type_deletes++;
    type_deleted_on = type;
    return MPI_SUCCESS;
}

static void type_attributes(void)
{
    int kv, flag;
    char base[16];
    CHECK_MPI(MPI_Type_create_keyval(type_copy, type_delete, &kv, &extra_marker));
    MPI_Datatype vec, copy;
    CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_set_attr(vec, kv, base));
    CHECK_MPI(MPI_Type_dup(vec, &copy));
    CHECK(type_copies == 1, "Type_dup: %d copy callbacks", type_copies);
    void *v = NULL;
    CHECK_MPI(MPI_Type_get_attr(copy, kv, &v, &flag));
    CHECK(flag && v == base + 10, "Type_dup: copied value %p", v);
    CHECK_MPI(MPI_Type_get_attr(vec, kv, &v, &flag));
    CHECK(flag && v == base, "Type_dup changed the original's value");
    /* Attributes on a predefined type work too. */
    CHECK_MPI(MPI_Type_set_attr(MPI_INT, kv, base + 1));
    CHECK_MPI(MPI_Type_get_attr(MPI_INT, kv, &v, &flag));
    CHECK(flag && v == base + 1, "attribute on MPI_INT");
    CHECK_MPI(MPI_Type_delete_attr(MPI_INT, kv));
    CHECK(type_deletes == 1 && type_deleted_on == MPI_INT, "Type_delete_attr on MPI_INT");
    MPI_Datatype copy_handle = copy;
    CHECK_MPI(MPI_Type_free(&copy));
    CHECK(type_deletes == 2 && type_deleted_on == copy_handle, "Type_free of the dup: %d deletes", type_deletes);
    CHECK_MPI(MPI_Type_free(&vec));
    CHECK(type_deletes == 3, "Type_free: %d deletes", type_deletes);
    /* A comm keyval on a type. */
    int kv_comm;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv_comm, NULL));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int rc = MPI_Type_set_attr(MPI_INT, kv_comm, NULL), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_KEYVAL, "a communicator keyval on a datatype: class %d", cls);
    CHECK_MPI(MPI_Comm_free_keyval(&kv_comm));
    CHECK_MPI(MPI_Type_free_keyval(&kv));
}

/* ---- MPI_Finalize ---- */

#define SELF_KEYS 3
static int finalize_order[SELF_KEYS], finalize_seen, finalize_mpi_usable = 1;

static int finalize_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)keyval;
    (void)extra;
    int finalized = 1, size = 0;
    MPI_Finalized(&finalized);
    /* MPI still works inside: not finalized, and calls on the communicator succeed. */
    if (finalized || comm != MPI_COMM_SELF || MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS || size != n)
        finalize_mpi_usable = 0;
    if (finalize_seen < SELF_KEYS)
        finalize_order[finalize_seen] = (int)(long)value;
    finalize_seen++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    comm_attributes();
    mpi1_attributes();
    type_attributes();
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));

    /* Three attributes on MPI_COMM_SELF, set in the order 1, 2, 3 (the
     * second replaced once: its position is that of the latest set). */
    int keys[SELF_KEYS];
    for (int i = 0; i < SELF_KEYS; i++)
        CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_delete, &keys[i], NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keys[1], (void *)0L));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keys[0], (void *)1L));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keys[1], (void *)2L)); /* deletes value 0 now */
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keys[2], (void *)3L));
    CHECK(finalize_seen == 1 && finalize_order[0] == 0, "replacing on SELF did not delete the old value");
    finalize_seen = 0;
    MPI_Finalize();
    CHECK(finalize_seen == SELF_KEYS, "MPI_Finalize ran %d delete callbacks on MPI_COMM_SELF (expected %d)",
          finalize_seen, SELF_KEYS);
    CHECK(finalize_order[0] == 3 && finalize_order[1] == 2 && finalize_order[2] == 1,
          "MPI_Finalize deleted in the order %d %d %d (expected 3 2 1: newest first)", finalize_order[0],
          finalize_order[1], finalize_order[2]);
    CHECK(finalize_mpi_usable, "MPI was not usable inside the finalize delete callbacks");
    printf("rank %d of %d attrs ok\n", me, n);
    return 0;
}
