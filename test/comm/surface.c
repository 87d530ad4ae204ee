/*
 * surface: the rest of the communicator and environment surface.
 *
 * - MPI_Comm_split_type: SHARED gives every rank of the node (here: all),
 *   ordered by key; MPI_UNDEFINED gives MPI_COMM_NULL; HW_GUIDED with
 *   "mpi_shared_memory" equals SHARED and reports its resource type; an
 *   unknown resource type gives MPI_COMM_NULL; HW_UNGUIDED gives a strict
 *   subset or MPI_COMM_NULL; each result carries traffic.
 * - MPI_Get_hw_resource_info and MPI_COMM_TYPE_RESOURCE_GUIDED (MPI-4.1).
 * - MPI_Comm_create_group over a subset (the odd ranks, in reverse order):
 *   non-members do not call; two disjoint groups with different tags.
 * - toint / fromint round trips for every kind of handle, predefined and
 *   dynamic; unknown integers give the kind's NULL; a freed object's index
 *   no longer converts.
 * - MPI_Alloc_mem alignment (small and large blocks, writable), Free_mem.
 * - Pcontrol, Comm_get_parent, Comm_test_inter, remote_size/remote_group
 *   (MPI_ERR_COMM), Comm_disconnect, Info (get_string, nthkey, dup, env).
 * Prints "rank R of S surface ok".
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"
#include "../util/suite.h"

static int me, n;

static int error_class(int rc)
{
    int cls = rc;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* A ring on comm: each rank gets its left neighbour's world rank. */
static void ring(MPI_Comm comm, const char *what)
{
    int rank, size, got = -1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int left = (rank - 1 + size) % size, left_world;
    MPI_Group_translate_ranks(g, 1, &left, wg, &left_world);
    CHECK_MPI(MPI_Sendrecv(&me, 1, MPI_INT, (rank + 1) % size, 5, &got, 1, MPI_INT, left, 5, comm,
                           MPI_STATUS_IGNORE));
    CHECK(got == left_world, "%s: ring got %d, expected world rank %d", what, got, left_world);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
}

/* The world ranks of this rank's node: one node, unless HASHI_VNODES=k
 * splits the job into k nodes of consecutive ranks (the cells' vnodes run). */
static void my_node(int *first, int *count)
{
    const char *e = getenv("HASHI_VNODES");
    int k = e ? atoi(e) : 1;
    k = k < 1 ? 1 : k > n ? n : k;
    int node = 0;
    while ((long)(node + 1) * n / k <= me)
        node++;
    *first = (int)((long)node * n / k);
    *count = (int)((long)(node + 1) * n / k) - *first;
}

/* Split with one info key set; the new communicator's size (0: MPI_COMM_NULL). */
static int split_with(int split, const char *key, const char *value)
{
    MPI_Info info;
    MPI_Comm c;
    int size = 0;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, key, value));
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, split, me, info, &c));
    CHECK_MPI(MPI_Info_free(&info));
    if (c != MPI_COMM_NULL) {
        MPI_Comm_size(c, &size);
        ring(c, value);
        CHECK_MPI(MPI_Comm_free(&c));
    }
    return size;
}

/*
 * MPI_Get_hw_resource_info (MPI-4.1): "hwloc://<level>" keys, "true" when
 * this process sits inside one object of the level; HW_GUIDED and
 * RESOURCE_GUIDED take those URIs and agree with the values. RESOURCE_GUIDED
 * also splits by process set; both keys at once is an error.
 */
static void resource_guided(int node_count)
{
    MPI_Info hw;
    int nkeys, flag;
    char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
    CHECK_MPI(MPI_Get_hw_resource_info(&hw));
    CHECK(hw != MPI_INFO_NULL, "MPI_Get_hw_resource_info gave MPI_INFO_NULL");
    CHECK_MPI(MPI_Info_get_nkeys(hw, &nkeys));
    CHECK(nkeys >= 1, "MPI_Get_hw_resource_info: no keys");
    for (int k = 0; k < nkeys; k++) {
        CHECK_MPI(MPI_Info_get_nthkey(hw, k, key));
        CHECK_MPI(MPI_Info_get(hw, key, MPI_MAX_INFO_VAL, value, &flag));
        CHECK(strncmp(key, "hwloc://", 8) == 0, "hw resource key %s is not a hwloc:// URI", key);
        CHECK(flag && (strcmp(value, "true") == 0 || strcmp(value, "false") == 0), "hw resource %s = %s", key,
              value);
    }
    /* The machine always has PUs and packages: the keys every rank sees
     * alike, so every rank may split by them. */
    static const char *const levels[] = { "hwloc://Package", "hwloc://PU" };
    for (int l = 0; l < 2; l++) {
        CHECK_MPI(MPI_Info_get(hw, levels[l], MPI_MAX_INFO_VAL, value, &flag));
        CHECK(flag, "MPI_Get_hw_resource_info has no %s", levels[l]);
        int inside = strcmp(value, "true") == 0;
        int size = split_with(MPI_COMM_TYPE_HW_GUIDED, "mpi_hw_resource_type", levels[l]);
        CHECK(inside ? size >= 1 : size == 0, "HW_GUIDED %s: size %d, but the info says %s", levels[l], size, value);
        int again = split_with(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_hw_resource_type", levels[l]);
        CHECK(again == size, "RESOURCE_GUIDED %s: size %d, HW_GUIDED %d", levels[l], again, size);
    }
    CHECK_MPI(MPI_Info_free(&hw));
    CHECK(split_with(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_hw_resource_type", "mpi_shared_memory") == node_count,
          "RESOURCE_GUIDED mpi_shared_memory is not the node");
    CHECK(split_with(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_pset_name", "mpi://WORLD") == n,
          "RESOURCE_GUIDED mpi://WORLD is not the whole world");
    CHECK(split_with(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_pset_name", "mpi://SELF") == 1,
          "RESOURCE_GUIDED mpi://SELF is not one process");
    CHECK(split_with(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_pset_name", "mpi://NOWHERE") == 0,
          "RESOURCE_GUIDED with an unknown process set gave a communicator");
    CHECK(split_with(MPI_COMM_TYPE_RESOURCE_GUIDED, "other_key", "mpi://WORLD") == 0,
          "RESOURCE_GUIDED without its keys gave a communicator");

    MPI_Info both;
    MPI_Comm c = MPI_COMM_NULL;
    CHECK_MPI(MPI_Info_create(&both));
    CHECK_MPI(MPI_Info_set(both, "mpi_hw_resource_type", "hwloc://PU"));
    CHECK_MPI(MPI_Info_set(both, "mpi_pset_name", "mpi://WORLD"));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(error_class(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, both, &c))
              == MPI_ERR_INFO_VALUE && c == MPI_COMM_NULL,
          "RESOURCE_GUIDED with both keys is not MPI_ERR_INFO_VALUE");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Info_free(&both));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK(error_class(MPI_Get_hw_resource_info(NULL)) == MPI_ERR_ARG,
          "MPI_Get_hw_resource_info(NULL) is not MPI_ERR_ARG");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
}

static void split_type(void)
{
    MPI_Comm shared, guided, none, unknown, unguided;
    int first, count;
    my_node(&first, &count);
    /* Reverse key: ranks come out reversed. */
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, n - me, MPI_INFO_NULL, &shared));
    int size, rank;
    MPI_Comm_size(shared, &size);
    MPI_Comm_rank(shared, &rank);
    CHECK(size == count && rank == first + count - 1 - me, "SHARED: size %d rank %d (expected %d, %d)", size, rank,
          count, first + count - 1 - me);
    ring(shared, "SHARED");
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &none));
    CHECK(none == MPI_COMM_NULL, "MPI_UNDEFINED gave a communicator");

    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory"));
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, me, info, &guided));
    int result;
    CHECK(guided != MPI_COMM_NULL, "HW_GUIDED mpi_shared_memory gave MPI_COMM_NULL");
    MPI_Comm_size(guided, &size);
    CHECK(size == count, "HW_GUIDED mpi_shared_memory: size %d, expected the node's %d", size, count);
    if (count == n) {
        CHECK_MPI(MPI_Comm_compare(guided, MPI_COMM_WORLD, &result));
        CHECK(result == MPI_CONGRUENT, "HW_GUIDED mpi_shared_memory on one node: compare %d", result);
    }
    MPI_Info used;
    char value[MPI_MAX_INFO_VAL + 1];
    int flag;
    CHECK_MPI(MPI_Comm_get_info(guided, &used));
    CHECK_MPI(MPI_Info_get(used, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag && strcmp(value, "mpi_shared_memory") == 0, "HW_GUIDED: resource type hint %s",
          flag ? value : "(unset)");
    CHECK_MPI(MPI_Info_free(&used));
    ring(guided, "HW_GUIDED");

    CHECK_MPI(MPI_Info_set(info, "mpi_hw_resource_type", "no_such_resource"));
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, me, info, &unknown));
    CHECK(unknown == MPI_COMM_NULL, "HW_GUIDED with an unknown resource gave a communicator");
    CHECK_MPI(MPI_Info_free(&info));

    CHECK_MPI(MPI_Comm_split_type(shared, MPI_COMM_TYPE_HW_UNGUIDED, me, MPI_INFO_NULL, &unguided));
    if (unguided != MPI_COMM_NULL) {
        MPI_Comm_size(unguided, &size);
        CHECK(size < count, "HW_UNGUIDED gave a communicator of the whole parent (%d)", size);
        ring(unguided, "HW_UNGUIDED");
        CHECK_MPI(MPI_Comm_free(&unguided));
    }
    resource_guided(count);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(error_class(MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &none)) == MPI_ERR_ARG,
          "an unknown split type is not MPI_ERR_ARG");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Comm_free(&shared));
    CHECK_MPI(MPI_Comm_free(&guided));
}

static void create_group(void)
{
    /* Odd ranks, reversed, with tag 11; even ranks, in order, with tag 12. */
    int odd[64], even[64], nodd = 0, neven = 0;
    for (int r = n - 1; r >= 0; r--)
        if (r % 2)
            odd[nodd++] = r;
    for (int r = 0; r < n; r++)
        if (r % 2 == 0)
            even[neven++] = r;
    MPI_Group wg, g;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int mine_odd = me % 2;
    CHECK_MPI(MPI_Group_incl(wg, mine_odd ? nodd : neven, mine_odd ? odd : even, &g));
    MPI_Comm c;
    CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, mine_odd ? 11 : 12, &c));
    int size, rank;
    MPI_Comm_size(c, &size);
    MPI_Comm_rank(c, &rank);
    /* The rank is the position in the list the group was made from. */
    int expect_rank = 0;
    const int *list = mine_odd ? odd : even;
    while (list[expect_rank] != me)
        expect_rank++;
    CHECK(size == (mine_odd ? nodd : neven) && rank == expect_rank, "create_group: size %d rank %d", size, rank);
    ring(c, "create_group");
    /* Only a subset calls: the others go on to something else meanwhile. */
    if (me < 2 && n >= 2) {
        int pair[2] = { 0, 1 };
        MPI_Group pg;
        MPI_Comm pc;
        CHECK_MPI(MPI_Group_incl(wg, 2, pair, &pg));
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, pg, 0, &pc));
        ring(pc, "create_group of ranks 0 and 1");
        CHECK_MPI(MPI_Comm_free(&pc));
        CHECK_MPI(MPI_Group_free(&pg));
    }
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Group_free(&wg));
}

static void ignore_error(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
}

static void conversions(void)
{
    /* Predefined: their own values, both ways. */
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "WORLD round trip");
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_SELF)) == MPI_COMM_SELF, "SELF round trip");
    CHECK(MPI_Comm_toint(MPI_COMM_NULL) == (int)(intptr_t)MPI_COMM_NULL, "COMM_NULL's value");
    CHECK(MPI_Type_fromint(MPI_Type_toint(MPI_DOUBLE)) == MPI_DOUBLE, "MPI_DOUBLE round trip");
    CHECK(MPI_Op_fromint(MPI_Op_toint(MPI_MAXLOC)) == MPI_MAXLOC, "MPI_MAXLOC round trip");
    CHECK(MPI_Errhandler_fromint(MPI_Errhandler_toint(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN, "ERRORS_RETURN");
    CHECK(MPI_Group_fromint(MPI_Group_toint(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY, "GROUP_EMPTY");
    CHECK(MPI_Info_fromint(MPI_Info_toint(MPI_INFO_ENV)) == MPI_INFO_ENV, "INFO_ENV");
    CHECK(MPI_Request_fromint(MPI_Request_toint(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "REQUEST_NULL");
    CHECK(MPI_Message_fromint(MPI_Message_toint(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC, "MESSAGE_NO_PROC");
    /* Unknown integers: the NULL handle of the kind. */
    CHECK(MPI_Comm_fromint(123456) == MPI_COMM_NULL, "an unknown comm integer");
    CHECK(MPI_Comm_fromint(-5) == MPI_COMM_NULL, "a negative comm integer");
    CHECK(MPI_Comm_fromint((int)(intptr_t)MPI_DOUBLE) == MPI_COMM_NULL, "a datatype's value as a comm");
    CHECK(MPI_Win_fromint(77) == MPI_WIN_NULL && MPI_File_fromint(77) == MPI_FILE_NULL, "unknown win/file");

    /* Dynamic objects of every kind that exists. */
    MPI_Comm dup;
    MPI_Group grp;
    MPI_Datatype vec;
    MPI_Info info;
    MPI_Errhandler eh;
    MPI_Request req;
    int buf = 0;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Group world_group;
    int first = 0;
    CHECK_MPI(MPI_Comm_group(dup, &world_group));
    CHECK_MPI(MPI_Group_incl(world_group, 1, &first, &grp));
    CHECK_MPI(MPI_Group_free(&world_group));
    CHECK_MPI(MPI_Type_vector(2, 1, 3, MPI_INT, &vec));
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Comm_create_errhandler(ignore_error, &eh));
    CHECK_MPI(MPI_Irecv(&buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &req));
    int ic = MPI_Comm_toint(dup), ig = MPI_Group_toint(grp), it = MPI_Type_toint(vec), ii = MPI_Info_toint(info);
    int ir = MPI_Request_toint(req);
    CHECK(ic >= 0x1000 && ig >= 0x1000 && it >= 0x1000 && ii >= 0x1000 && ir >= 0x1000,
          "dynamic handles got small integers: %d %d %d %d %d", ic, ig, it, ii, ir);
    int ie = MPI_Errhandler_toint(eh);
    CHECK(ie >= 0x1000 && MPI_Errhandler_fromint(ie) == eh, "errhandler round trip");
    CHECK(ic != ig && ic != it && ig != it && ii != ir && ie != ic, "two objects share an integer");
    CHECK(MPI_Comm_toint(dup) == ic && MPI_Type_toint(vec) == it, "toint is not stable");
    CHECK(MPI_Comm_fromint(ic) == dup && MPI_Group_fromint(ig) == grp && MPI_Type_fromint(it) == vec
              && MPI_Info_fromint(ii) == info && MPI_Request_fromint(ir) == req,
          "fromint(toint(h)) != h");
    CHECK(MPI_Group_fromint(ic) == MPI_GROUP_NULL && MPI_Comm_fromint(it) == MPI_COMM_NULL,
          "a comm's integer converted as another kind");
    /* The integer works as a handle again after a round trip through Fortran-style storage. */
    MPI_Comm back = MPI_Comm_f2c(MPI_Comm_c2f(dup));
    int result;
    CHECK_MPI(MPI_Comm_compare(back, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT, "converted communicator compares %d", result);
    /* Freed: the index no longer converts. */
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Group_free(&grp));
    CHECK_MPI(MPI_Type_free(&vec));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK(MPI_Comm_fromint(ic) == MPI_COMM_NULL, "a freed communicator's integer still converts");
    CHECK(MPI_Group_fromint(ig) == MPI_GROUP_NULL, "a freed group's integer still converts");
    CHECK(MPI_Type_fromint(it) == MPI_DATATYPE_NULL, "a freed datatype's integer still converts");
    CHECK(MPI_Info_fromint(ii) == MPI_INFO_NULL, "a freed info's integer still converts");
    CHECK(MPI_Request_fromint(ir) == MPI_REQUEST_NULL, "a freed request's integer still converts");
    CHECK_MPI(MPI_Errhandler_free(&eh));
}

static void memory(void)
{
    size_t sizes[] = { 0, 1, 100, 4096, 100000, (size_t)5 << 20, (size_t)9 << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        char *p = NULL;
        CHECK_MPI(MPI_Alloc_mem((MPI_Aint)sizes[i], MPI_INFO_NULL, &p));
        CHECK(p != NULL, "Alloc_mem(%zu) gave NULL", sizes[i]);
        CHECK((uintptr_t)p % 4096 == 0, "Alloc_mem(%zu) = %p is not page-aligned", sizes[i], (void *)p);
        if (sizes[i] >= ((size_t)4 << 20))
            CHECK((uintptr_t)p % (2u << 20) == 0, "Alloc_mem(%zu) = %p is not 2 MiB-aligned", sizes[i], (void *)p);
        memset(p, 0xa5, sizes[i]);
        if (sizes[i])
            CHECK((unsigned char)p[sizes[i] - 1] == 0xa5, "Alloc_mem memory not writable");
        CHECK_MPI(MPI_Free_mem(p));
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    void *p;
    int cls = error_class(MPI_Alloc_mem(-1, MPI_INFO_NULL, &p));
    CHECK(cls == MPI_ERR_SIZE, "Alloc_mem(-1): class %d", cls);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static void odds_and_ends(void)
{
    CHECK_MPI(MPI_Pcontrol(1));
    CHECK_MPI(MPI_Pcontrol(0));
    MPI_Comm parent = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "Comm_get_parent is not MPI_COMM_NULL");
    int flag = 1;
    CHECK_MPI(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CHECK(!flag, "WORLD is an intercommunicator");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int size;
    MPI_Group g;
    CHECK(error_class(MPI_Comm_remote_size(MPI_COMM_WORLD, &size)) == MPI_ERR_COMM, "remote_size");
    CHECK(error_class(MPI_Comm_remote_group(MPI_COMM_WORLD, &g)) == MPI_ERR_COMM, "remote_group");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    /* Disconnect waits for what is pending, then frees. */
    MPI_Comm d;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    int token = me, got = -1;
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Irecv(&got, 1, MPI_INT, (me - 1 + n) % n, 0, d, &reqs[0]));
    CHECK_MPI(MPI_Isend(&token, 1, MPI_INT, (me + 1) % n, 0, d, &reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Comm_disconnect(&d));
    CHECK(d == MPI_COMM_NULL && got == (me - 1 + n) % n, "disconnect");

    /* Info: get_string's length protocol, nthkey order, dup independence, env keys. */
    MPI_Info info, copy;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "alpha", "12345"));
    CHECK_MPI(MPI_Info_set(info, "beta", "x"));
    char buf[64];
    int buflen = 0;
    CHECK_MPI(MPI_Info_get_string(info, "alpha", &buflen, buf, &flag));
    CHECK(flag && buflen == 6, "get_string length query: flag %d buflen %d", flag, buflen);
    buflen = 3;
    CHECK_MPI(MPI_Info_get_string(info, "alpha", &buflen, buf, &flag));
    CHECK(flag && buflen == 6 && strcmp(buf, "12") == 0, "get_string truncated: %s (%d)", buf, buflen);
    CHECK_MPI(MPI_Info_dup(info, &copy));
    CHECK_MPI(MPI_Info_set(info, "alpha", "changed"));
    char key[MPI_MAX_INFO_KEY];
    int nkeys;
    CHECK_MPI(MPI_Info_get_nkeys(copy, &nkeys));
    CHECK_MPI(MPI_Info_get_nthkey(copy, 1, key));
    CHECK(nkeys == 2 && strcmp(key, "beta") == 0, "dup: %d keys, second %s", nkeys, key);
    buflen = sizeof buf;
    CHECK_MPI(MPI_Info_get_string(copy, "alpha", &buflen, buf, &flag));
    CHECK(flag && strcmp(buf, "12345") == 0, "the dup changed with its original: %s", buf);
    CHECK_MPI(MPI_Info_free(&copy));
    CHECK_MPI(MPI_Info_free(&info));
    static const char *const env_keys[] = { "command", "maxprocs", "host", "arch", "wdir", "thread_level" };
    for (size_t i = 0; i < sizeof env_keys / sizeof *env_keys; i++) {
        buflen = sizeof buf;
        CHECK_MPI(MPI_Info_get_string(MPI_INFO_ENV, env_keys[i], &buflen, buf, &flag));
        CHECK(flag, "MPI_INFO_ENV has no %s", env_keys[i]);
    }
    buflen = sizeof buf;
    CHECK_MPI(MPI_Info_get_string(MPI_INFO_ENV, "maxprocs", &buflen, buf, &flag));
    CHECK(atoi(buf) == n, "MPI_INFO_ENV maxprocs %s", buf);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    char longkey[MPI_MAX_INFO_KEY + 8];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    CHECK_MPI(MPI_Info_create(&info));
    CHECK(error_class(MPI_Info_set(info, longkey, "v")) == MPI_ERR_INFO_KEY, "an over-long key");
    CHECK(error_class(MPI_Info_delete(info, "absent")) == MPI_ERR_INFO_NOKEY, "deleting an absent key");
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    split_type();
    create_group();
    conversions();
    memory();
    odds_and_ends();
    report_ok();
    MPI_Finalize();
    return 0;
}
