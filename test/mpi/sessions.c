/*
 * sessions MODE: the Sessions Model (MPI-4 chapter 11).
 *   only     no MPI_Init: two sessions; process sets listed and queried
 *            (lengths, truncation, mpi_size); groups from them;
 *            communicators from groups (world, disjoint halves with one
 *            string tag, two string tags in turn) that carry point-to-point,
 *            collectives and Bsend through the session's buffer; a session
 *            error handler; the runtime outlives the first session's end;
 *            MPI_Initialized / MPI_Finalized stay false.
 *   mixed    MPI_Init and a session: a session's communicator does not use
 *            MPI_Buffer_attach's buffer; an invalid session is
 *            MPI_ERR_SESSION; after MPI_Finalize the session's communicator
 *            still works until MPI_Session_finalize.
 *   restart  a session after the runtime stopped is refused (MPI_ERR_OTHER).
 * Prints "rank R of S MODE ok".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"

static int handler_calls, handler_code;
static MPI_Session handler_session = MPI_SESSION_NULL;

static void on_session_error(MPI_Session *session, int *code, ...)
{
    handler_calls++;
    handler_session = *session;
    handler_code = *code;
}

static void expect_class(int rc, int want, const char *what)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "%s succeeded", what);
    CHECK_MPI(MPI_Error_class(rc, &cls));
    CHECK(cls == want, "%s: class %d, expected %d", what, cls, want);
}

static MPI_Session open_session(const char *level)
{
    MPI_Info info;
    MPI_Session s = MPI_SESSION_NULL;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "thread_level", level));
    CHECK_MPI(MPI_Session_init(info, MPI_ERRORS_RETURN, &s));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK(s != MPI_SESSION_NULL, "MPI_Session_init gave MPI_SESSION_NULL");
    return s;
}

static void check_psets(MPI_Session s, int size)
{
    int n = -1;
    CHECK_MPI(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    CHECK(n >= 2, "%d process sets", n);
    int seen_world = 0, seen_self = 0;
    for (int i = 0; i < n; i++) {
        int len = 0;
        CHECK_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));
        char name[MPI_MAX_PSET_NAME_LEN];
        int got = sizeof name;
        CHECK_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &got, name));
        CHECK(len == (int)strlen(name) + 1 && got == len, "pset %d '%s': length %d / %d", i, name, len, got);
        seen_world += strcmp(name, "mpi://WORLD") == 0;
        seen_self += strcmp(name, "mpi://SELF") == 0;
        char small[5];
        int small_len = sizeof small;
        CHECK_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &small_len, small));
        CHECK(strlen(small) == 4 && strncmp(small, name, 4) == 0, "pset %d truncated to '%s'", i, small);

        MPI_Info info;
        char value[32];
        int vlen = sizeof value, flag = 0;
        CHECK_MPI(MPI_Session_get_pset_info(s, name, &info));
        CHECK_MPI(MPI_Info_get_string(info, "mpi_size", &vlen, value, &flag));
        int want = strcmp(name, "mpi://WORLD") == 0 ? size : 1;
        CHECK(flag && atoi(value) == want, "%s: mpi_size '%s', expected %d", name, flag ? value : "(none)", want);
        CHECK_MPI(MPI_Info_free(&info));
    }
    CHECK(seen_world == 1 && seen_self == 1, "mpi://WORLD listed %d times, mpi://SELF %d times", seen_world, seen_self);
    int len = 1;
    char name[8];
    expect_class(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, n, &len, name), MPI_ERR_ARG, "the pset after the last");
    MPI_Info info;
    expect_class(MPI_Session_get_pset_info(s, "mpi://NOWHERE", &info), MPI_ERR_ARG, "info of an unknown pset");
    MPI_Group g;
    expect_class(MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g), MPI_ERR_ARG, "a group of an unknown pset");
}

/* A communicator of the session's world, checked by a ring and a sum. */
static MPI_Comm world_comm(MPI_Session s, const char *tag, int rank, int size)
{
    MPI_Group g;
    MPI_Comm c;
    int grank = -1, gsize = -1;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Group_size(g, &gsize));
    CHECK_MPI(MPI_Group_rank(g, &grank));
    CHECK(gsize == size && grank == rank, "mpi://WORLD group: rank %d of %d", grank, gsize);
    CHECK_MPI(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    CHECK_MPI(MPI_Group_free(&g));
    CHECK(c != MPI_COMM_NULL, "MPI_Comm_create_from_group gave MPI_COMM_NULL");
    int crank = -1, csize = -1;
    CHECK_MPI(MPI_Comm_rank(c, &crank));
    CHECK_MPI(MPI_Comm_size(c, &csize));
    CHECK(crank == rank && csize == size, "communicator from mpi://WORLD: rank %d of %d", crank, csize);
    return c;
}

static void exercise(MPI_Comm c, int salt)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK_MPI(MPI_Comm_size(c, &size));
    int out[4], in[4] = { -1, -1, -1, -1 };
    for (int i = 0; i < 4; i++)
        out[i] = salt * 1000 + rank * 10 + i;
    MPI_Status st;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK_MPI(MPI_Sendrecv(out, 4, MPI_INT, right, salt, in, 4, MPI_INT, left, salt, c, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == salt, "ring: status (%d, %d)", st.MPI_SOURCE, st.MPI_TAG);
    for (int i = 0; i < 4; i++)
        CHECK(in[i] == salt * 1000 + left * 10 + i, "ring: int %d is %d", i, in[i]);
    int sum = 0, mine = rank + salt;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == size * (size - 1) / 2 + size * salt, "allreduce gave %d", sum);
}

/* Bsend through the session's buffer (the communicator has none). */
static void session_bsend(MPI_Session s, MPI_Comm c)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK_MPI(MPI_Comm_size(c, &size));
    int bytes = 4 * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    char *buf = malloc((size_t)bytes);
    CHECK(buf, "out of memory");
    CHECK_MPI(MPI_Session_attach_buffer(s, buf, bytes));
    expect_class(MPI_Session_attach_buffer(s, buf, bytes), MPI_ERR_BUFFER, "a second session buffer");
    int out[4] = { rank, rank + 1, rank + 2, rank + 3 }, in[4];
    CHECK_MPI(MPI_Bsend(out, 4, MPI_INT, (rank + 1) % size, 9, c));
    CHECK_MPI(MPI_Recv(in, 4, MPI_INT, (rank + size - 1) % size, 9, c, MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++)
        CHECK(in[i] == (rank + size - 1) % size + i, "Bsend: int %d is %d", i, in[i]);
    CHECK_MPI(MPI_Session_flush_buffer(s));
    void *addr = NULL;
    int got = 0;
    CHECK_MPI(MPI_Session_detach_buffer(s, &addr, &got));
    CHECK(addr == buf && got == bytes, "detached %p (%d bytes), attached %p (%d)", addr, got, (void *)buf, bytes);
    free(buf);
}

static void session_errhandler(MPI_Session s)
{
    MPI_Errhandler eh, got;
    CHECK_MPI(MPI_Session_create_errhandler(on_session_error, &eh));
    CHECK_MPI(MPI_Session_set_errhandler(s, eh));
    CHECK_MPI(MPI_Session_get_errhandler(s, &got));
    CHECK(got == eh, "MPI_Session_get_errhandler gave another handler");
    CHECK_MPI(MPI_Errhandler_free(&got));
    CHECK_MPI(MPI_Errhandler_free(&eh));
    MPI_Group g;
    handler_calls = 0;
    int rc = MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g);
    int cls = -1;
    CHECK_MPI(MPI_Error_class(handler_code, &cls));
    CHECK(handler_calls == 1 && handler_session == s && cls == MPI_ERR_ARG && rc == handler_code,
          "session handler: %d calls, class %d, rc %d / %d", handler_calls, cls, rc, handler_code);
    CHECK_MPI(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER, "MPI_Session_call_errhandler: %d calls, code %d",
          handler_calls, handler_code);
    /* A communicator's handler is not a session's. */
    MPI_Errhandler comm_eh;
    CHECK_MPI(MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)(void (*)(void))on_session_error, &comm_eh));
    handler_calls = 0;
    CHECK(MPI_Session_set_errhandler(s, comm_eh) != MPI_SUCCESS && handler_calls == 1,
          "a communicator's handler set on a session");
    CHECK_MPI(MPI_Errhandler_free(&comm_eh));
    CHECK_MPI(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
}

static void only(int *rank, int *size)
{
    int flag = 1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(!flag, "MPI_Initialized is true before anything");
    MPI_Session s1 = open_session("MPI_THREAD_SINGLE");
    MPI_Session s2 = open_session("MPI_THREAD_FUNNELED");
    CHECK(s1 != s2, "two sessions share one handle");
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(!flag, "MPI_Initialized is true with sessions only");

    MPI_Info used;
    char level[64];
    int len = sizeof level;
    CHECK_MPI(MPI_Session_get_info(s1, &used));
    CHECK_MPI(MPI_Info_get_string(used, "thread_level", &len, level, &flag));
    CHECK(flag && strncmp(level, "MPI_THREAD_", 11) == 0, "thread_level of the session: '%s'", flag ? level : "");
    CHECK_MPI(MPI_Info_free(&used));

    /* The size comes from the world process set. */
    MPI_Info info;
    char value[32];
    len = sizeof value;
    CHECK_MPI(MPI_Session_get_pset_info(s1, "mpi://WORLD", &info));
    CHECK_MPI(MPI_Info_get_string(info, "mpi_size", &len, value, &flag));
    CHECK_MPI(MPI_Info_free(&info));
    *size = atoi(value);
    check_psets(s1, *size);

    /* Our rank: from the world group. */
    MPI_Group wg;
    CHECK_MPI(MPI_Group_from_session_pset(s1, "mpi://WORLD", &wg));
    CHECK_MPI(MPI_Group_rank(wg, rank));
    MPI_Comm world = world_comm(s1, "org.hashi.test.world", *rank, *size);
    exercise(world, 1);

    /* Disjoint halves with one string tag, at once. */
    int half[64], nh = 0;
    for (int r = *rank % 2; r < *size; r += 2)
        half[nh++] = r;
    MPI_Group hg;
    MPI_Comm hc;
    CHECK_MPI(MPI_Group_incl(wg, nh, half, &hg));
    CHECK_MPI(MPI_Comm_create_from_group(hg, "org.hashi.test.half", MPI_INFO_NULL, MPI_ERRORS_RETURN, &hc));
    exercise(hc, 2);
    int hs = 0;
    CHECK_MPI(MPI_Comm_size(hc, &hs));
    CHECK(hs == nh, "half communicator of size %d, expected %d", hs, nh);

    /* Two string tags over one group, and a communicator of the other
     * session; a dup keeps the session. */
    MPI_Comm a = world_comm(s1, "org.hashi.test.a", *rank, *size);
    MPI_Comm b = world_comm(s2, "org.hashi.test.b", *rank, *size);
    MPI_Comm adup;
    CHECK_MPI(MPI_Comm_dup(a, &adup));
    exercise(b, 3);
    exercise(a, 4);
    exercise(adup, 5);
    session_bsend(s1, adup);
    session_errhandler(s1);

    MPI_Comm self;
    MPI_Group sg;
    CHECK_MPI(MPI_Group_from_session_pset(s2, "mpi://SELF", &sg));
    CHECK_MPI(MPI_Comm_create_from_group(sg, "org.hashi.test.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &self));
    int ss = 0;
    CHECK_MPI(MPI_Comm_size(self, &ss));
    CHECK(ss == 1, "a communicator of mpi://SELF has %d members", ss);
    MPI_Comm empty = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "org.hashi.test.empty", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                         &empty));
    CHECK(empty == MPI_COMM_NULL, "a communicator of MPI_GROUP_EMPTY");

    CHECK_MPI(MPI_Comm_free(&self));
    CHECK_MPI(MPI_Group_free(&sg));
    CHECK_MPI(MPI_Comm_free(&adup));
    CHECK_MPI(MPI_Comm_free(&a));
    CHECK_MPI(MPI_Comm_free(&hc));
    CHECK_MPI(MPI_Group_free(&hg));
    CHECK_MPI(MPI_Comm_free(&world));
    CHECK_MPI(MPI_Group_free(&wg));
    CHECK_MPI(MPI_Session_finalize(&s1));
    CHECK(s1 == MPI_SESSION_NULL, "MPI_Session_finalize left the handle set");
    /* The second session still runs. */
    exercise(b, 6);
    CHECK_MPI(MPI_Comm_free(&b));
    CHECK_MPI(MPI_Session_finalize(&s2));
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(!flag, "MPI_Finalized is true with sessions only");
}

static void mixed(int *rank, int *size)
{
    CHECK_MPI(MPI_Init(NULL, NULL));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MPI_Session s = open_session("MPI_THREAD_SINGLE");
    MPI_Comm c = world_comm(s, "org.hashi.test.mixed", *rank, *size);
    exercise(c, 7);

    MPI_Session bogus = (MPI_Session)(void *)&bogus;
    int n = 0;
    expect_class(MPI_Session_get_num_psets(bogus, MPI_INFO_NULL, &n), MPI_ERR_SESSION, "an invalid session");
    expect_class(MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n), MPI_ERR_SESSION,
                 "MPI_SESSION_NULL");

    /* MPI_Buffer_attach's buffer is the World Model's. */
    int bytes = 64 + MPI_BSEND_OVERHEAD, x = 1;
    char *buf = malloc((size_t)bytes);
    CHECK(buf, "out of memory");
    CHECK_MPI(MPI_Buffer_attach(buf, bytes));
    expect_class(MPI_Bsend(&x, 1, MPI_INT, 0, 1, c), MPI_ERR_BUFFER, "Bsend on a session's communicator "
                 "with only MPI_Buffer_attach's buffer");
    void *addr;
    CHECK_MPI(MPI_Buffer_detach(&addr, &bytes));
    free(buf);

    CHECK_MPI(MPI_Finalize());
    int flag = 0;
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag, "MPI_Finalized is false after MPI_Finalize");
    /* The session keeps the runtime. */
    exercise(c, 8);
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Session_finalize(&s));
}

static void restart(int *rank, int *size)
{
    MPI_Session s = open_session("MPI_THREAD_SINGLE");
    MPI_Group g;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Group_rank(g, rank));
    CHECK_MPI(MPI_Group_size(g, size));
    CHECK_MPI(MPI_Group_free(&g));
    MPI_Comm c = world_comm(s, "org.hashi.test.restart", *rank, *size);
    exercise(c, 9);
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Session_finalize(&s));
    int rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    CHECK(rc != MPI_SUCCESS, "a session after the runtime stopped was granted");
    int cls = -1;
    CHECK_MPI(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_OTHER, "a session after the runtime stopped: class %d", cls);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2, "usage: sessions only|mixed|restart");
    int rank = -1, size = -1;
    if (strcmp(argv[1], "only") == 0)
        only(&rank, &size);
    else if (strcmp(argv[1], "mixed") == 0)
        mixed(&rank, &size);
    else if (strcmp(argv[1], "restart") == 0)
        restart(&rank, &size);
    else
        CHECK(0, "unknown mode %s", argv[1]);
    printf("rank %d of %d %s ok\n", rank, size, argv[1]);
    return 0;
}
