/*
 * mpit: the tool information interface (MPI_T), as a tool uses it around a
 * 2-rank job. The harness runs it with HASHI_SLEEP_US=321 in the environment.
 *   - before MPI_T_init_thread every call answers MPI_T_ERR_NOT_INITIALIZED;
 *   - control variables: the parameter table by name and index, info and the
 *     string-length convention, each type read (the environment's value),
 *     enums, bad indices and names;
 *   - a write before MPI_Init reaches MPI_Init: HASHI_DIMMNET_STATS is
 *     switched on here, so (on dimmnet) the device prints its counters at
 *     MPI_Finalize (the harness checks stderr); bad values are refused and
 *     change nothing; after MPI_Init writes answer MPI_T_ERR_CVAR_SET_NOT_NOW;
 *   - categories hold every control variable exactly once;
 *   - performance variables (dimmnet; on ofi, its ofi_eagain): a handle of a session counts rank 0's
 *     block sends as it sends 10 messages; reset, write and readreset move
 *     the handle's view only; start/stop of a continuous variable; handles
 *     of one session are refused in another;
 *   - no events, one clock source; nested init/finalize; MPI_T after
 *     MPI_Finalize.
 * Prints "rank R of S mpit ok".
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/check.h"

#define CHECK_T(call)                                                                   \
    do {                                                                                \
        int rc_ = (call);                                                               \
        CHECK(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_);                        \
    } while (0)
#define CHECK_T_ERR(call, want)                                                         \
    do {                                                                                \
        int rc_ = (call);                                                               \
        CHECK(rc_ == (want), "%s returned %d, expected %s (%d)", #call, rc_, #want, want); \
    } while (0)

static int cvar_index(const char *name)
{
    int i = -1;
    CHECK_T(MPI_T_cvar_get_index(name, &i));
    return i;
}

static MPI_Count read_count(const char *name)
{
    MPI_T_cvar_handle h;
    int count = 0;
    MPI_Count v = -1;
    CHECK_T(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count));
    CHECK(count == 1, "%s: count %d", name, count);
    CHECK_T(MPI_T_cvar_read(h, &v));
    CHECK_T(MPI_T_cvar_handle_free(&h));
    CHECK(h == MPI_T_CVAR_HANDLE_NULL, "cvar_handle_free left the handle set");
    return v;
}

static int write_int(const char *name, int v)
{
    MPI_T_cvar_handle h;
    int count = 0;
    CHECK_T(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count));
    int rc = MPI_T_cvar_write(h, &v);
    CHECK_T(MPI_T_cvar_handle_free(&h));
    return rc;
}

static int read_int(const char *name)
{
    MPI_T_cvar_handle h;
    int count = 0, v = -7;
    CHECK_T(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count));
    CHECK_T(MPI_T_cvar_read(h, &v));
    CHECK_T(MPI_T_cvar_handle_free(&h));
    return v;
}

static void check_cvars_before_init(void)
{
    int n = 0;
    CHECK_T(MPI_T_cvar_get_num(&n));
    CHECK(n >= 50, "only %d control variables", n);

    /* Info of one variable, and the length convention. */
    int i = cvar_index("HASHI_SLEEP_US");
    char name[64], desc[512];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum et = (MPI_T_enum)1;
    CHECK_T(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &et, desc, &desc_len, &bind, &scope));
    CHECK(strcmp(name, "HASHI_SLEEP_US") == 0 && name_len == 15, "name \"%s\" length %d", name, name_len);
    CHECK(desc_len > 10 && (int)strlen(desc) + 1 == desc_len, "desc length %d for \"%s\"", desc_len, desc);
    CHECK(type == MPI_COUNT && et == MPI_T_ENUM_NULL, "HASHI_SLEEP_US: not an MPI_COUNT without enum");
    CHECK(bind == MPI_T_BIND_NO_OBJECT && scope == MPI_T_SCOPE_ALL_EQ, "bind %d scope %d", bind, scope);
    int need = 0;
    CHECK_T(MPI_T_cvar_get_info(i, NULL, &need, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(need == 15, "the length asked for is %d", need);
    char small[6];
    int small_len = sizeof small;
    CHECK_T(MPI_T_cvar_get_info(i, small, &small_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(strcmp(small, "HASHI") == 0 && small_len == 6, "truncated to \"%s\" (%d)", small, small_len);

    /* Every type, read as the environment set it (or the default). */
    CHECK(read_count("HASHI_SLEEP_US") == 321, "HASHI_SLEEP_US reads %lld, the environment says 321",
          (long long)read_count("HASHI_SLEEP_US"));
    CHECK(read_count("HASHI_OFI_EAGER_LIMIT") == 16384, "HASHI_OFI_EAGER_LIMIT (16k) reads %lld",
          (long long)read_count("HASHI_OFI_EAGER_LIMIT"));
    CHECK(read_int("HASHI_DIMMNET_STATS") == 0, "HASHI_DIMMNET_STATS is on before anyone set it");
    MPI_T_cvar_handle h;
    int count = 0;
    CHECK_T(MPI_T_cvar_handle_alloc(cvar_index("HASHI_CC"), NULL, &h, &count));
    CHECK(count >= 256, "a string variable's count is %d", count);
    char *s = malloc((size_t)count);
    CHECK(s != NULL, "out of memory");
    memset(s, 'x', (size_t)count);
    CHECK_T(MPI_T_cvar_read(h, s));
    CHECK(s[0] == '\0', "HASHI_CC reads \"%.20s\", expected \"\"", s);
    free(s);
    CHECK_T(MPI_T_cvar_handle_free(&h));

    /* An enum: HASHI_DEVICE's choices, in the table's order. */
    i = cvar_index("HASHI_DEVICE");
    CHECK_T(MPI_T_cvar_get_info(i, NULL, NULL, NULL, &type, &et, NULL, NULL, NULL, NULL));
    CHECK(type == MPI_INT && et != MPI_T_ENUM_NULL, "HASHI_DEVICE is not an enum");
    int items = 0;
    name_len = sizeof name;
    CHECK_T(MPI_T_enum_get_info(et, &items, name, &name_len));
    CHECK(items == 3 && strcmp(name, "HASHI_DEVICE") == 0, "enum \"%s\" has %d items", name, items);
    const char *expect[] = { "auto", "ofi", "dimmnet" };
    for (int k = 0; k < 3; k++) {
        int value = -1;
        name_len = sizeof name;
        CHECK_T(MPI_T_enum_get_item(et, k, &value, name, &name_len));
        CHECK(value == k && strcmp(name, expect[k]) == 0, "item %d is %d \"%s\"", k, value, name);
    }
    CHECK_T_ERR(MPI_T_enum_get_item(et, 3, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    const char *dev = getenv("HASHI_DEVICE");
    int want = !dev || strcmp(dev, "auto") == 0 ? 0 : strcmp(dev, "ofi") == 0 ? 1 : 2;
    CHECK(read_int("HASHI_DEVICE") == want, "HASHI_DEVICE reads %d, expected %d", read_int("HASHI_DEVICE"), want);

    /* Bad indices and names. */
    CHECK_T_ERR(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    CHECK_T_ERR(MPI_T_cvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    CHECK_T_ERR(MPI_T_cvar_get_index("HASHI_NO_SUCH_THING", &i), MPI_T_ERR_INVALID_NAME);
    CHECK_T_ERR(MPI_T_cvar_handle_alloc(n, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);

    /* Writes before MPI_Init: checked, then in force. */
    CHECK_T_ERR(write_int("HASHI_DEVICE", 3), MPI_T_ERR_INVALID);   /* no fourth device */
    CHECK(read_int("HASHI_DEVICE") == want, "a refused write changed HASHI_DEVICE");
    CHECK_T(write_int("HASHI_DIMMNET_STATS", 1));
    CHECK(read_int("HASHI_DIMMNET_STATS") == 1, "HASHI_DIMMNET_STATS does not read back 1");
    CHECK_T(MPI_T_cvar_handle_alloc(cvar_index("HASHI_OFI_EAGER_LIMIT"), NULL, &h, &count));
    MPI_Count bytes = -5;   /* a size is never negative */
    CHECK_T_ERR(MPI_T_cvar_write(h, &bytes), MPI_T_ERR_INVALID);
    CHECK(read_count("HASHI_OFI_EAGER_LIMIT") == 16384, "a refused write changed HASHI_OFI_EAGER_LIMIT");
    CHECK_T(MPI_T_cvar_handle_free(&h));
}

static void check_categories(void)
{
    int ncat = 0, ncvar = 0, total = 0;
    CHECK_T(MPI_T_category_get_num(&ncat));
    CHECK_T(MPI_T_cvar_get_num(&ncvar));
    CHECK(ncat == 7, "%d categories", ncat);
    for (int c = 0; c < ncat; c++) {
        char name[64];
        int name_len = sizeof name, nc = -1, np = -1, nsub = -1, nev = -1;
        CHECK_T(MPI_T_category_get_info(c, name, &name_len, NULL, NULL, &nc, &np, &nsub));
        CHECK(strncmp(name, "hashi_", 6) == 0 && nsub == 0, "category %d: \"%s\", %d subcategories", c, name, nsub);
        int back = -1;
        CHECK_T(MPI_T_category_get_index(name, &back));
        CHECK(back == c, "category \"%s\" is %d by name, %d by index", name, back, c);
        CHECK_T(MPI_T_category_get_num_events(c, &nev));
        CHECK(nev == 0, "category %s has %d events", name, nev);
        total += nc;
        if (strcmp(name, "hashi_dimmnet") == 0 && nc > 0) {
            int *idx = malloc(sizeof(int) * (size_t)nc);
            CHECK(idx != NULL, "out of memory");
            CHECK_T(MPI_T_category_get_cvars(c, nc, idx));
            for (int k = 0; k < nc; k++) {
                char vname[64];
                int vlen = sizeof vname;
                CHECK_T(MPI_T_cvar_get_info(idx[k], vname, &vlen, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
                CHECK(strncmp(vname, "HASHI_DIMMNET_", 14) == 0, "%s is in hashi_dimmnet", vname);
            }
            free(idx);
        }
    }
    CHECK(total == ncvar, "the categories hold %d control variables of %d", total, ncvar);
    CHECK_T_ERR(MPI_T_category_get_info(ncat, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    CHECK_T_ERR(MPI_T_category_get_index("hashi_nothing", &ncat), MPI_T_ERR_INVALID_NAME);
}

static unsigned long long pread(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    CHECK_T(MPI_T_pvar_read(s, h, &v));
    return v;
}

/* Rank 0 sends 10 eight-byte messages to rank 1, which the device sends as one block each. */
static void exchange(int rank)
{
    char buf[8] = "counted";
    for (int k = 0; k < 10; k++) {
        if (rank == 0)
            CHECK_MPI(MPI_Send(buf, 8, MPI_CHAR, 1, 5, MPI_COMM_WORLD));
        else if (rank == 1)
            CHECK_MPI(MPI_Recv(buf, 8, MPI_CHAR, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
}

static void check_pvars(int rank, int on_dimmnet)
{
    int idx = -1, np = 0;
    CHECK_T(MPI_T_pvar_get_num(&np));
    int rc = MPI_T_pvar_get_index("dimmnet_botf", MPI_T_PVAR_CLASS_COUNTER, &idx);
    if (!on_dimmnet) {
        CHECK(rc == MPI_T_ERR_INVALID_NAME, "dimmnet_botf exists off the dimmnet device (%d)", rc);
        CHECK_T(MPI_T_pvar_get_index("ofi_eagain", MPI_T_PVAR_CLASS_COUNTER, &idx));
        int cat = -1, ncat_pvars = 0;
        CHECK_T(MPI_T_category_get_index("hashi_ofi", &cat));
        CHECK_T(MPI_T_category_get_info(cat, NULL, NULL, NULL, NULL, NULL, &ncat_pvars, NULL));
        CHECK(ncat_pvars >= 1, "hashi_ofi holds %d performance variables", ncat_pvars);
        int in_cat = 0;
        CHECK_T(MPI_T_category_get_pvars(cat, 1, &in_cat));
        CHECK(in_cat == idx, "hashi_ofi's first variable is %d, ofi_eagain is %d", in_cat, idx);
        return;
    }
    CHECK(rc == MPI_SUCCESS && idx >= 0 && idx < np, "dimmnet_botf: %d, index %d of %d", rc, idx, np);
    CHECK_T_ERR(MPI_T_pvar_get_index("dimmnet_botf", MPI_T_PVAR_CLASS_TIMER, &idx), MPI_T_ERR_INVALID_NAME);
    char name[64];
    int name_len = sizeof name, vclass = 0, bind = 0, ro = -1, cont = -1, atomic = -1;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    CHECK_T(MPI_T_pvar_get_info(idx, name, &name_len, NULL, &vclass, &type, NULL, NULL, NULL, &bind, &ro, &cont,
                                &atomic));
    CHECK(strcmp(name, "dimmnet_botf") == 0 && vclass == MPI_T_PVAR_CLASS_COUNTER && type == MPI_UNSIGNED_LONG_LONG &&
          bind == MPI_T_BIND_NO_OBJECT && ro == 0 && cont == 1, "dimmnet_botf's info");

    MPI_T_pvar_session s, other;
    MPI_T_pvar_handle h, h2;
    int count = 0;
    CHECK_T(MPI_T_pvar_session_create(&s));
    CHECK_T(MPI_T_pvar_session_create(&other));
    CHECK_T(MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count));
    CHECK(count == 1, "count %d", count);
    CHECK_T(MPI_T_pvar_handle_alloc(s, idx, NULL, &h2, &count));
    CHECK_T_ERR(MPI_T_pvar_read(other, h, &(unsigned long long){ 0 }), MPI_T_ERR_INVALID_HANDLE);
    CHECK_T_ERR(MPI_T_pvar_start(s, h), MPI_T_ERR_PVAR_NO_STARTSTOP);
    CHECK_T(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES));
    CHECK_T(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES));

    CHECK_T(MPI_T_pvar_reset(s, h));
    CHECK(pread(s, h) == 0 || rank != 1, "a reset handle reads non-zero on a rank that sends nothing");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    unsigned long long before = pread(s, h), before2 = pread(s, h2);
    exchange(rank);
    unsigned long long after = pread(s, h), after2 = pread(s, h2);
    if (rank == 0)
        CHECK(after - before >= 10, "10 sends moved dimmnet_botf by %llu", after - before);
    CHECK(after2 - before2 == after - before, "two handles of one counter disagree");

    CHECK_T(MPI_T_pvar_reset(s, h));
    CHECK(pread(s, h) == 0, "a handle reset after traffic reads %llu", pread(s, h));
    CHECK(pread(s, h2) == after2, "resetting one handle moved another");

    unsigned long long v = 1000;
    CHECK_T(MPI_T_pvar_write(s, h, &v));
    CHECK(pread(s, h) >= 1000 && pread(s, h) < 1000 + 100, "a written handle reads %llu", pread(s, h));
    CHECK(pread(s, h2) == after2 || pread(s, h2) >= after2, "writing one handle moved another");
    unsigned long long rr = 0;
    CHECK_T(MPI_T_pvar_readreset(s, h, &rr));
    CHECK(rr >= 1000, "readreset read %llu", rr);
    exchange(rank);
    if (rank == 0)
        CHECK(pread(s, h) >= 10 && pread(s, h) < 1000, "after readreset and 10 sends: %llu", pread(s, h));
    CHECK_T(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES));
    CHECK(pread(s, h) < 10 && pread(s, h2) < 10, "reset of all handles left %llu / %llu", pread(s, h), pread(s, h2));

    CHECK_T(MPI_T_pvar_handle_free(s, &h));
    CHECK(h == MPI_T_PVAR_HANDLE_NULL, "pvar_handle_free left the handle set");
    CHECK_T_ERR(MPI_T_pvar_handle_free(other, &h2), MPI_T_ERR_INVALID_HANDLE);
    CHECK_T(MPI_T_pvar_session_free(&s));   /* frees h2 with it */
    CHECK(s == MPI_T_PVAR_SESSION_NULL, "pvar_session_free left the session set");
    CHECK_T_ERR(MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count), MPI_T_ERR_INVALID_SESSION);
    CHECK_T_ERR(MPI_T_pvar_handle_alloc(other, np, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
    CHECK_T(MPI_T_pvar_session_free(&other));
}

static void check_events_and_sources(void)
{
    int n = -1, idx = 0;
    CHECK_T(MPI_T_event_get_num(&n));
    CHECK(n == 0, "%d events", n);
    CHECK_T_ERR(MPI_T_event_get_index("anything", &idx), MPI_T_ERR_INVALID_NAME);
    MPI_T_event_registration reg;
    CHECK_T_ERR(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
    CHECK_T(MPI_T_source_get_num(&n));
    CHECK(n == 1, "%d sources", n);
    MPI_Count tps = 0, t0 = 0, t1 = 0;
    MPI_T_source_order order = 0;
    CHECK_T(MPI_T_source_get_info(0, NULL, NULL, NULL, NULL, &order, &tps, NULL, NULL));
    CHECK(order == MPI_T_SOURCE_ORDERED && tps == 1000000000, "source 0: order %d, %lld ticks/s", (int)order,
          (long long)tps);
    CHECK_T(MPI_T_source_get_timestamp(0, &t0));
    CHECK_T(MPI_T_source_get_timestamp(0, &t1));
    CHECK(t1 >= t0 && t0 > 0, "timestamps %lld then %lld", (long long)t0, (long long)t1);
    CHECK_T_ERR(MPI_T_source_get_timestamp(1, &t0), MPI_T_ERR_INVALID_INDEX);
}

int main(int argc, char **argv)
{
    int n = 0, provided = -1;
    CHECK_T_ERR(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_T_ERR(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_T(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided == MPI_THREAD_SINGLE, "provided %d", provided);
    CHECK_T(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));   /* nested */
    check_cvars_before_init();

    CHECK_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(read_count("HASHI_SLEEP_US") == 321, "HASHI_SLEEP_US changed at MPI_Init");
    CHECK_T_ERR(write_int("HASHI_DIMMNET_STATS", 0), MPI_T_ERR_CVAR_SET_NOT_NOW);
    const char *dev = getenv("HASHI_DEVICE");
    check_categories();
    check_pvars(rank, !dev || strcmp(dev, "ofi") != 0);
    check_events_and_sources();

    CHECK_T(MPI_T_finalize());
    CHECK_T(MPI_T_cvar_get_num(&n));            /* the nested init still holds */
    CHECK_T(MPI_T_finalize());
    CHECK_T_ERR(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_MPI(MPI_Finalize());

    /* After MPI_Finalize MPI_T still works. */
    CHECK_T(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(read_count("HASHI_SLEEP_US") == 321, "HASHI_SLEEP_US after MPI_Finalize");
    CHECK_T_ERR(write_int("HASHI_DIMMNET_STATS", 0), MPI_T_ERR_CVAR_SET_NOT_NOW);
    CHECK_T(MPI_T_finalize());
    printf("rank %d of %d mpit ok\n", rank, size);
    return 0;
}
