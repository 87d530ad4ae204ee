/*
 * One-sided data movement, byte for byte: every rank writes into and reads
 * from its right neighbour's window (and its own), so 2 and 4 ranks run the
 * same code with one or two peers.
 *
 *  - MPI_Put / MPI_Get under fence, PSCW, lock / unlock, lock_all + flush;
 *    sizes from 1 byte to several request messages (1 MiB, split);
 *  - derived datatypes at origin and target: vector, indexed, struct, and
 *    a vector of a struct, in both directions;
 *  - MPI_Rput / MPI_Rget requests (data in the buffer once MPI_Wait returns);
 *  - MPI_Win_allocate, dynamic windows (attach, MPI_Get_address as the
 *    displacement, detach), a window of size 0 on odd ranks;
 *  - MPI_PROC_NULL targets and zero counts: nothing happens;
 *  - predefined attributes, names, MPI_Win_get_group, info, keyvals.
 */
#include "../util/check.h"
#include "../util/suite.h"

#include <stddef.h>
#include <stdint.h>

static int rank, size, right, left;

static unsigned char pat(int who, int round, size_t i)
{
    return (unsigned char)(i * 7u + (size_t)who * 31u + (size_t)round * 13u + 5u);
}

/* Put then get (fence epochs) of n bytes into right's window of created memory. */
static void fence_bytes(size_t n, int round)
{
    unsigned char *mem = malloc(n), *src = malloc(n), *back = malloc(n);
    CHECK(mem && src && back, "out of memory");
    memset(mem, 0xee, n);
    for (size_t i = 0; i < n; i++)
        src[i] = pat(rank, round, i);
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, (MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    CHECK_MPI(MPI_Put(src, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (size_t i = 0; i < n; i++)
        CHECK(mem[i] == pat(left, round, i), "put of %zu bytes: byte %zu is %d, expected %d", n, i, mem[i],
              pat(left, round, i));
    memset(back, 0, n);
    CHECK_MPI(MPI_Get(back, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(memcmp(back, src, n) == 0, "get of %zu bytes differs from what was put", n);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free did not set MPI_WIN_NULL");
    free(mem);
    free(src);
    free(back);
}

/* PSCW: each rank exposes to left and accesses right. */
static void pscw(void)
{
    int *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < 64; i++)
        mem[i] = -1;
    MPI_Group world, gl, gr;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_incl(world, 1, &left, &gl));
    CHECK_MPI(MPI_Group_incl(world, 1, &right, &gr));
    for (int round = 0; round < 3; round++) {
        int src[64], got[8];
        for (int i = 0; i < 64; i++)
            src[i] = rank * 1000 + round * 100 + i;
        CHECK_MPI(MPI_Win_post(gl, 0, win));
        CHECK_MPI(MPI_Win_start(gr, 0, win));
        CHECK_MPI(MPI_Put(src, 64, MPI_INT, right, 0, 64, MPI_INT, win));
        CHECK_MPI(MPI_Win_complete(win));
        CHECK_MPI(MPI_Win_wait(win));
        for (int i = 0; i < 64; i++)
            CHECK(mem[i] == left * 1000 + round * 100 + i, "PSCW round %d: element %d is %d", round, i, mem[i]);
        /* Read back from right with a displacement in ints; test for the end. */
        CHECK_MPI(MPI_Win_post(gl, MPI_MODE_NOPUT, win));
        CHECK_MPI(MPI_Win_start(gr, 0, win));
        CHECK_MPI(MPI_Get(got, 8, MPI_INT, right, 56, 8, MPI_INT, win));
        CHECK_MPI(MPI_Win_complete(win));
        for (int i = 0; i < 8; i++)
            CHECK(got[i] == rank * 1000 + round * 100 + 56 + i, "PSCW get: element %d is %d", i, got[i]);
        int flag = 0;
        while (!flag)
            CHECK_MPI(MPI_Win_test(win, &flag));
    }
    CHECK_MPI(MPI_Group_free(&gl));
    CHECK_MPI(MPI_Group_free(&gr));
    CHECK_MPI(MPI_Group_free(&world));
    CHECK_MPI(MPI_Win_free(&win));
}

/* Passive target: lock / put / unlock, then lock_all + flush + get. */
static void passive(void)
{
    enum { N = 3000 };
    double *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < N; i++)
        mem[i] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double src[N], got[N];
    for (int i = 0; i < N; i++)
        src[i] = rank + i * 0.5;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    CHECK_MPI(MPI_Put(src, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* The unified model: our own memory shows the left neighbour's put
     * (MPI_Win_sync orders our loads after the epoch). */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK_MPI(MPI_Win_sync(win));
    for (int i = 0; i < N; i++)
        CHECK(mem[i] == left + i * 0.5, "lock/unlock put: element %d is %g", i, mem[i]);
    CHECK_MPI(MPI_Win_unlock(rank, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int k = 0; k < 4; k++) {
        double v[2] = { rank * 10.0 + k, -k };
        CHECK_MPI(MPI_Put(v, 2, MPI_DOUBLE, right, 2 * k, 2, MPI_DOUBLE, win));
    }
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_MPI(MPI_Get(got, 8, MPI_DOUBLE, right, 0, 8, MPI_DOUBLE, win));
    CHECK_MPI(MPI_Win_flush_local(right, win));
    for (int k = 0; k < 4; k++)
        CHECK(got[2 * k] == rank * 10.0 + k && got[2 * k + 1] == -k, "lock_all put+flush+get: pair %d is %g %g", k,
              got[2 * k], got[2 * k + 1]);
    CHECK_MPI(MPI_Win_flush_all(win));
    CHECK_MPI(MPI_Win_flush_local_all(win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_free(&win));
}

/* Derived datatypes on both sides. */
struct rec {
    int a;
    double b;
    char c;
};

static void datatypes(void)
{
    enum { M = 40 };
    int *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(4 * M * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < 4 * M; i++)
        mem[i] = -1;
    int src[2 * M];
    for (int i = 0; i < 2 * M; i++)
        src[i] = rank * 100000 + i;
    /* Origin: every other int of src (vector); target: blocks of 3 ints every 4 (vector). */
    MPI_Datatype ovec, tvec, tidx;
    CHECK_MPI(MPI_Type_vector(M, 1, 2, MPI_INT, &ovec));
    CHECK_MPI(MPI_Type_commit(&ovec));
    CHECK_MPI(MPI_Type_vector(M / 4, 3, 4, MPI_INT, &tvec));   /* 30 ints */
    CHECK_MPI(MPI_Type_commit(&tvec));
    int lens[3] = { 4, 2, 4 }, disps[3] = { 3 * M + 9, 3 * M, 3 * M + 20 };   /* out of order */
    CHECK_MPI(MPI_Type_indexed(3, lens, disps, MPI_INT, &tidx));
    CHECK_MPI(MPI_Type_commit(&tidx));
    CHECK_MPI(MPI_Win_fence(0, win));
    /* 30 ints (every other of src) into the vector; 10 into the indexed type. */
    MPI_Datatype o30;
    CHECK_MPI(MPI_Type_vector(30, 1, 2, MPI_INT, &o30));
    CHECK_MPI(MPI_Type_commit(&o30));
    CHECK_MPI(MPI_Put(src, 1, o30, right, 0, 1, tvec, win));
    CHECK_MPI(MPI_Put(src + 60, 10, MPI_INT, right, 0, 1, tidx, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    int k = 0;
    for (int blk = 0; blk < M / 4; blk++) {
        for (int j = 0; j < 3; j++, k++)
            CHECK(mem[blk * 4 + j] == left * 100000 + 2 * k, "vector put: int %d is %d", blk * 4 + j,
                  mem[blk * 4 + j]);
        CHECK(mem[blk * 4 + 3] == -1, "vector put wrote the gap at %d", blk * 4 + 3);
    }
    k = 60;
    for (int b = 0; b < 3; b++)
        for (int j = 0; j < lens[b]; j++, k++)
            CHECK(mem[disps[b] + j] == left * 100000 + k, "indexed put: int %d is %d", disps[b] + j,
                  mem[disps[b] + j]);
    /* Get the indexed ints back through a vector at the origin. */
    int back[20];
    for (int i = 0; i < 20; i++)
        back[i] = -7;
    MPI_Datatype ov10;
    CHECK_MPI(MPI_Type_vector(10, 1, 2, MPI_INT, &ov10));
    CHECK_MPI(MPI_Type_commit(&ov10));
    CHECK_MPI(MPI_Get(back, 1, ov10, right, 0, 1, tidx, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 10; i++) {
        CHECK(back[2 * i] == rank * 100000 + 60 + i, "indexed get: %d is %d", i, back[2 * i]);
        CHECK(back[2 * i + 1] == -7, "indexed get wrote the gap %d", 2 * i + 1);
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK_MPI(MPI_Win_free(&win));

    /* Structs: an array of struct rec at the target, their fields from a
     * packed origin buffer (int, double, char) of the same signature. */
    struct rec *recs;
    CHECK_MPI(MPI_Win_allocate(8 * sizeof(struct rec), sizeof(struct rec), MPI_INFO_NULL, MPI_COMM_WORLD, &recs, &win));
    memset(recs, 0, 8 * sizeof(struct rec));
    MPI_Datatype trec, tvrec;
    int blens[3] = { 1, 1, 1 };
    MPI_Aint offs[3] = { offsetof(struct rec, a), offsetof(struct rec, b), offsetof(struct rec, c) };
    MPI_Datatype types[3] = { MPI_INT, MPI_DOUBLE, MPI_CHAR };
    CHECK_MPI(MPI_Type_create_struct(3, blens, offs, types, &trec));
    CHECK_MPI(MPI_Type_create_resized(trec, 0, sizeof(struct rec), &tvrec));
    CHECK_MPI(MPI_Type_commit(&tvrec));
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(4, 1, 2, tvrec, &every_other));   /* records 0, 2, 4, 6 */
    CHECK_MPI(MPI_Type_commit(&every_other));
    struct rec out[4];
    for (int i = 0; i < 4; i++)
        out[i] = (struct rec){ rank * 10 + i, rank + i / 4.0, (char)('a' + rank + i) };
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(out, 4, tvrec, right, 0, 1, every_other, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 8; i++) {
        if (i % 2) {
            CHECK(recs[i].a == 0 && recs[i].b == 0 && recs[i].c == 0, "struct put wrote record %d", i);
        } else {
            int j = i / 2;
            CHECK(recs[i].a == left * 10 + j && recs[i].b == left + j / 4.0 && recs[i].c == (char)('a' + left + j),
                  "struct put: record %d is %d %g %d", i, recs[i].a, recs[i].b, recs[i].c);
        }
    }
    struct rec in[4];
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_Get(in, 4, tvrec, right, 0, 1, every_other, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < 4; i++)
        CHECK(in[i].a == out[i].a && in[i].b == out[i].b && in[i].c == out[i].c, "struct get: record %d", i);
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Type_free(&ovec);
    MPI_Type_free(&tvec);
    MPI_Type_free(&tidx);
    MPI_Type_free(&o30);
    MPI_Type_free(&ov10);
    MPI_Type_free(&trec);
    MPI_Type_free(&tvrec);
    MPI_Type_free(&every_other);
}

/* Request-based operations. */
static void requests(void)
{
    enum { N = 20000 };
    long *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < N; i++)
        mem[i] = 0;
    /* The neighbour's puts may land at once (node-local windows, the device
     * path): not before these stores. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    long *src = malloc(N * sizeof(long)), *got = malloc(N * sizeof(long));
    CHECK(src && got, "out of memory");
    for (int i = 0; i < N; i++)
        src[i] = (long)rank << 32 | i;
    CHECK_MPI(MPI_Win_lock_all(0, win));
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Rput(src, N / 2, MPI_LONG, right, 0, N / 2, MPI_LONG, win, &reqs[0]));
    CHECK_MPI(MPI_Rput(src + N / 2, N / 2, MPI_LONG, right, N / 2, N / 2, MPI_LONG, win, &reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    memset(src, 0, N * sizeof(long));   /* local completion: the data was taken */
    CHECK_MPI(MPI_Win_flush(right, win));
    MPI_Request r;
    CHECK_MPI(MPI_Rget(got, N, MPI_LONG, right, 0, N, MPI_LONG, win, &r));
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&r, &st));
    for (int i = 0; i < N; i++)
        CHECK(got[i] == ((long)rank << 32 | i), "Rget: element %d is %lx", i, (unsigned long)got[i]);
    /* A request to MPI_PROC_NULL is complete at once. */
    CHECK_MPI(MPI_Rget(got, 1, MPI_LONG, MPI_PROC_NULL, 0, 1, MPI_LONG, win, &r));
    int flag = 0;
    CHECK_MPI(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CHECK(flag && r == MPI_REQUEST_NULL, "an Rget to MPI_PROC_NULL is not complete");
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_free(&win));
    free(src);
    free(got);
}

/* Dynamic windows: displacements are addresses. */
static void dynamic(void)
{
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int *region = calloc(100, sizeof(int));
    CHECK(region, "out of memory");
    CHECK_MPI(MPI_Win_attach(win, region, 100 * sizeof(int)));
    MPI_Aint mine, theirs;
    CHECK_MPI(MPI_Get_address(region + 10, &mine));
    CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_AINT, left, 0, &theirs, 1, MPI_AINT, right, 0, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    int v[5] = { rank, rank + 1, rank + 2, rank + 3, rank + 4 }, g[5];
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    CHECK_MPI(MPI_Put(v, 5, MPI_INT, right, theirs, 5, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_MPI(MPI_Get(g, 3, MPI_INT, right, MPI_Aint_add(theirs, 2 * sizeof(int)), 3, MPI_INT, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK(g[0] == rank + 2 && g[1] == rank + 3 && g[2] == rank + 4, "dynamic get: %d %d %d", g[0], g[1], g[2]);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 5; i++)
        CHECK(region[10 + i] == left + i, "dynamic put: int %d is %d", 10 + i, region[10 + i]);
    CHECK(region[9] == 0 && region[15] == 0, "dynamic put wrote outside its range");
    CHECK_MPI(MPI_Win_detach(win, region));
    int flavor_flag, *flavor;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flavor_flag));
    CHECK(flavor_flag && *flavor == MPI_WIN_FLAVOR_DYNAMIC, "dynamic window's flavor attribute");
    CHECK_MPI(MPI_Win_free(&win));
    free(region);
}

/* Sizes 0 on odd ranks, MPI_PROC_NULL, zero counts; attributes, names, group, info. */
static int delete_calls;
static int count_delete(MPI_Win w, int keyval, void *value, void *extra)
{
    (void)w, (void)keyval, (void)extra;
    CHECK(value == (void *)&delete_calls, "delete callback got the wrong value");
    delete_calls++;
    return MPI_SUCCESS;
}

static void objects(void)
{
    char *base = NULL;
    MPI_Aint sz = rank % 2 ? 0 : 16;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(sz, 2, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    void *abase;
    MPI_Aint *asize;
    int *aunit, *amodel, *aflavor, flag;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &abase, &flag));
    CHECK(flag && abase == base, "MPI_WIN_BASE");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &asize, &flag));
    CHECK(flag && *asize == sz, "MPI_WIN_SIZE is %lld", (long long)*asize);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &aunit, &flag));
    CHECK(flag && *aunit == 2, "MPI_WIN_DISP_UNIT");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &amodel, &flag));
    CHECK(flag && *amodel == MPI_WIN_UNIFIED, "MPI_WIN_MODEL");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &aflavor, &flag));
    CHECK(flag && *aflavor == MPI_WIN_FLAVOR_ALLOCATE, "MPI_WIN_CREATE_FLAVOR");
    int keyval;
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, &keyval, NULL));
    void *got;
    CHECK_MPI(MPI_Win_get_attr(win, keyval, &got, &flag));
    CHECK(!flag, "an attribute never set is found");
    CHECK_MPI(MPI_Win_set_attr(win, keyval, &delete_calls));
    CHECK_MPI(MPI_Win_get_attr(win, keyval, &got, &flag));
    CHECK(flag && got == &delete_calls, "MPI_Win_get_attr after set");
    CHECK_MPI(MPI_Win_delete_attr(win, keyval));
    CHECK(delete_calls == 1, "delete callback ran %d times", delete_calls);
    CHECK_MPI(MPI_Win_set_attr(win, keyval, &delete_calls));

    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK_MPI(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0 && name[0] == 0, "a new window has a name: '%s'", name);
    CHECK_MPI(MPI_Win_set_name(win, "halo window"));
    CHECK_MPI(MPI_Win_get_name(win, name, &len));
    CHECK(len == 11 && strcmp(name, "halo window") == 0, "MPI_Win_get_name: '%s'", name);

    MPI_Group g, world;
    int result;
    CHECK_MPI(MPI_Win_get_group(win, &g));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_compare(g, world, &result));
    CHECK(result == MPI_IDENT, "MPI_Win_get_group is not the communicator's group");
    MPI_Group_free(&g);
    MPI_Group_free(&world);

    MPI_Info info, used;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "no_locks", "true"));
    CHECK_MPI(MPI_Win_set_info(win, info));
    CHECK_MPI(MPI_Win_get_info(win, &used));
    char value[64];
    CHECK_MPI(MPI_Info_get_string(used, "no_locks", &(int){ sizeof value }, value, &flag));
    CHECK(flag && strcmp(value, "true") == 0, "MPI_Win_get_info: no_locks is '%s'", value);
    MPI_Info_free(&info);
    MPI_Info_free(&used);

    MPI_Errhandler eh;
    CHECK_MPI(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "a new window's error handler is not MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&eh);
    CHECK(MPI_Win_f2c(MPI_Win_c2f(win)) == win, "MPI_Win_c2f / f2c do not round-trip");

    /* Nothing happens for MPI_PROC_NULL and zero counts, even on size-0 windows. */
    char b[4] = { 1, 2, 3, 4 };
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(b, 4, MPI_CHAR, MPI_PROC_NULL, 1000, 4, MPI_CHAR, win));
    CHECK_MPI(MPI_Get(b, 4, MPI_CHAR, MPI_PROC_NULL, 1000, 4, MPI_CHAR, win));
    CHECK_MPI(MPI_Accumulate(b, 4, MPI_CHAR, MPI_PROC_NULL, 0, 4, MPI_CHAR, MPI_SUM, win));
    CHECK_MPI(MPI_Put(b, 0, MPI_CHAR, right, 0, 0, MPI_CHAR, win));
    if (rank % 2 == 1 && sz == 0)
        CHECK_MPI(MPI_Put(b, 2, MPI_CHAR, left, 3, 2, MPI_CHAR, win));   /* left is even: 16 bytes */
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(b[0] == 1 && b[3] == 4, "an operation on MPI_PROC_NULL changed the buffer");
    if (rank % 2 == 0 && size > 1 && (rank + 1) < size)
        CHECK(base[6] == 1 && base[7] == 2, "put into a window beside size-0 ones: %d %d", base[6], base[7]);
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(delete_calls == 2, "MPI_Win_free ran the delete callback %d times", delete_calls - 1);
    CHECK_MPI(MPI_Win_free_keyval(&keyval));
}

/* Windows on MPI_COMM_SELF and on a communicator whose ranks run backwards
 * (window ranks are the communicator's, PSCW groups are translated). */
static void other_comms(void)
{
    int one = 0, v = 5;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(&one, sizeof one, sizeof one, MPI_INFO_NULL, MPI_COMM_SELF, &win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(one == 5, "a put on MPI_COMM_SELF's window: %d", one);
    CHECK_MPI(MPI_Win_free(&win));

    MPI_Comm back;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &back));
    int br, *mem;
    MPI_Comm_rank(back, &br);
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, back, &mem, &win));
    *mem = -1;
    MPI_Group bg, g0;
    CHECK_MPI(MPI_Comm_group(back, &bg));
    int zero = 0;
    CHECK_MPI(MPI_Group_incl(bg, 1, &zero, &g0));   /* window rank 0: world rank size - 1 */
    MPI_Barrier(back);
    if (br == 0)
        CHECK_MPI(MPI_Win_post(bg, 0, win));
    CHECK_MPI(MPI_Win_start(g0, 0, win));
    CHECK_MPI(MPI_Accumulate(&rank, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_MAX, win));
    CHECK_MPI(MPI_Win_complete(win));
    if (br == 0) {
        CHECK_MPI(MPI_Win_wait(win));
        CHECK(*mem == size - 1, "MAX over a reordered communicator's window: %d", *mem);
    }
    MPI_Group_free(&bg);
    MPI_Group_free(&g0);
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Comm_free(&back);
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    size_t sizes[] = { 1, 8, 100, 4096, 65536 - 40, 65536, 200000, 1 << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        fence_bytes(sizes[i], (int)i);
    pscw();
    passive();
    datatypes();
    requests();
    dynamic();
    objects();
    other_comms();
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
