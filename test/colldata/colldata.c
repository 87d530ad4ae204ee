/*
 * The data-movement collectives against serial references: Gather(v),
 * Scatter(v), Allgather(v), Alltoall(v)(w), each blocking, nonblocking and
 * persistent (started three times with new data each time), small and large
 * (up to about 1 MiB per rank), every root, MPI_IN_PLACE, uneven counts with
 * zeros and out-of-order displacements, derived datatypes on either side
 * (strided, struct with a gap; send and receive types differing with the
 * same signature), Alltoallw with a type per peer, every algorithm (forced
 * through info hints on duplicates of world), the _c forms, split and dup
 * communicators used concurrently with world, several collectives
 * outstanding at once, and invalid arguments under MPI_ERRORS_RETURN.
 *
 * Data are ints: the value of int j of the block that rank `src` sends to
 * rank `dst` is val(src, dst, j). Every receive buffer starts filled with
 * GUARD; after the call it must equal, int for int, a serially computed
 * expected buffer (GUARD wherever nothing may be written: gaps of strided
 * types, unused displacements).
 *
 * Usage: colldata [quick]   (quick: small sizes only, for large rank counts)
 */
#include <string.h>

#include "test/colldata/colldata_util.h"

static int rank, size, quick;

/* ---- element layouts: how the stream of ints sits in a buffer ---- */

/* One element of `type` carries k ints at int offsets off[] and spans ext ints. */
struct layout {
    const char *name;
    MPI_Datatype type;
    int k, ext, off[2];
};
static struct layout L_INT, L_STRIDED, L_STRUCT;

static void layouts_init(void)
{
    L_INT = (struct layout){ "int", MPI_INT, 1, 1, { 0, 0 } };

    L_STRIDED = (struct layout){ "strided", strided_int_type(), 1, 2, { 0, 0 } };

    /* struct { int a; int gap; int b; }: two ints, extent three. */
    MPI_Datatype st;
    int blens[2] = { 1, 1 };
    MPI_Aint displs[2] = { 0, 2 * sizeof(int) };
    MPI_Datatype types[2] = { MPI_INT, MPI_INT };
    CHECK_MPI(MPI_Type_create_struct(2, blens, displs, types, &st));
    MPI_Datatype st3;
    CHECK_MPI(MPI_Type_create_resized(st, 0, 3 * sizeof(int), &st3));
    CHECK_MPI(MPI_Type_free(&st));
    CHECK_MPI(MPI_Type_commit(&st3));
    L_STRUCT = (struct layout){ "struct", st3, 2, 3, { 0, 2 } };
}

static void layouts_free(void)
{
    CHECK_MPI(MPI_Type_free(&L_STRIDED.type));
    CHECK_MPI(MPI_Type_free(&L_STRUCT.type));
}

/* Elements holding n ints (n a multiple of k). */
static long elems(const struct layout *l, long n)
{
    return n / l->k;
}
/* Ints of buffer spanned by n ints of stream. */
static long span(const struct layout *l, long n)
{
    return elems(l, n) * l->ext;
}

/* Write block (src -> dst) of n ints at buf + at (ints), in layout l. */
static void put_block(int *buf, long at, const struct layout *l, long n, int src, int dst)
{
    int *p = buf + at;
    for (long e = 0, j = 0; j < n; e++, p += l->ext)
        for (int i = 0; i < l->k && j < n; i++, j++)
            p[l->off[i]] = val(src, dst, j);
}

/* ---- Gather / Scatter ---- */

/* n ints from every rank to root; in_place: root's own block is already in recvbuf. */
static void test_gather(MPI_Comm comm, enum mode m, long n, int root, const struct layout *sl,
                        const struct layout *rl, int in_place)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    long rspan = span(rl, n);
    int *sbuf = alloc_ints(span(sl, n)), *rbuf = NULL, *want = NULL;
    if (me == root) {
        rbuf = alloc_ints(rspan * np);
        want = alloc_ints(rspan * np);
    }
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = (unsigned)(it * 7 + 1);
        put_block(sbuf, 0, sl, n, me, root);
        const void *sp = sbuf;
        if (me == root) {
            reset_guard(rbuf, want, rspan * np);
            for (int r = 0; r < np; r++)
                put_block(want, r * rspan, rl, n, r, root);
            if (in_place) {
                put_block(rbuf, me * rspan, rl, n, me, root);
                sp = MPI_IN_PLACE;
            }
        }
        RUN_COLL(m, it, req, Gather, gather,
                 (sp, (int)elems(sl, n), sl->type, rbuf, (int)elems(rl, n), rl->type, root, comm));
        if (me == root)
            compare(rbuf, want, rspan * np, "gather");
    }
    end_run(m, &req);
    free(sbuf);
    free(rbuf);
    free(want);
}

static void test_scatter(MPI_Comm comm, enum mode m, long n, int root, const struct layout *sl,
                         const struct layout *rl, int in_place)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    long sspan = span(sl, n), rspan = span(rl, n);
    int *sbuf = me == root ? alloc_ints(sspan * np) : NULL;
    int *rbuf = alloc_ints(rspan), *want = alloc_ints(rspan);
    MPI_Request req = MPI_REQUEST_NULL;
    int root_in_place = in_place && me == root;
    for (int it = 0; it < iterations(m); it++) {
        salt = (unsigned)(it * 5 + 2);
        if (me == root)
            for (int r = 0; r < np; r++)
                put_block(sbuf, r * sspan, sl, n, root, r);
        reset_guard(rbuf, want, rspan);
        if (!root_in_place)   /* in place, the root's block stays in sendbuf */
            put_block(want, 0, rl, n, root, me);
        void *rp = root_in_place ? MPI_IN_PLACE : rbuf;
        RUN_COLL(m, it, req, Scatter, scatter,
                 (sbuf, (int)elems(sl, n), sl->type, rp, (int)elems(rl, n), rl->type, root, comm));
        compare(rbuf, want, rspan, "scatter");
    }
    end_run(m, &req);
    free(sbuf);
    free(rbuf);
    free(want);
}

/* v-forms: rank r's block has vcount(r, unit) ints (some zero), blocks laid
 * out in reverse rank order with a gap of one element between them. */
static long vcount(int r, long unit)
{
    return r % 3 == 1 ? 0 : unit * (1 + (r * 7) % 4);
}
static void v_layout(int np, long unit, const struct layout *l, int counts[], int displs[], long *total_ints)
{
    long at = 1;   /* element 0 stays unused */
    for (int r = np - 1; r >= 0; r--) {
        counts[r] = (int)elems(l, vcount(r, unit));
        displs[r] = (int)at;
        at += counts[r] + 1;
    }
    *total_ints = at * l->ext;
}

static void test_gatherv(MPI_Comm comm, enum mode m, long unit, int root, const struct layout *sl,
                         const struct layout *rl, int in_place)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    int *counts = malloc(np * sizeof(int)), *displs = malloc(np * sizeof(int));
    long total;
    v_layout(np, unit, rl, counts, displs, &total);
    long n = vcount(me, unit);
    int *sbuf = alloc_ints(span(sl, n));
    int *rbuf = me == root ? alloc_ints(total) : NULL, *want = me == root ? alloc_ints(total) : NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = (unsigned)(it * 3 + 11);
        put_block(sbuf, 0, sl, n, me, root);
        const void *sp = sbuf;
        if (me == root) {
            reset_guard(rbuf, want, total);
            for (int r = 0; r < np; r++)
                put_block(want, (long)displs[r] * rl->ext, rl, vcount(r, unit), r, root);
            if (in_place) {
                put_block(rbuf, (long)displs[me] * rl->ext, rl, n, me, root);
                sp = MPI_IN_PLACE;
            }
        }
        /* Non-roots pass NULL arrays: they are not significant there. */
        const int *rc = me == root ? counts : NULL, *rd = me == root ? displs : NULL;
        RUN_COLL(m, it, req, Gatherv, gatherv, (sp, (int)elems(sl, n), sl->type, rbuf, rc, rd, rl->type, root, comm));
        if (me == root)
            compare(rbuf, want, total, "gatherv");
    }
    end_run(m, &req);
    free(sbuf);
    free(rbuf);
    free(want);
    free(counts);
    free(displs);
}

static void test_scatterv(MPI_Comm comm, enum mode m, long unit, int root, const struct layout *sl,
                          const struct layout *rl, int in_place)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    int *counts = malloc(np * sizeof(int)), *displs = malloc(np * sizeof(int));
    long total;
    v_layout(np, unit, sl, counts, displs, &total);
    long n = vcount(me, unit);
    int *sbuf = me == root ? alloc_ints(total) : NULL;
    int *rbuf = alloc_ints(span(rl, n)), *want = alloc_ints(span(rl, n));
    int root_in_place = in_place && me == root;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = (unsigned)(it * 13 + 3);
        if (me == root)
            for (int r = 0; r < np; r++)
                put_block(sbuf, (long)displs[r] * sl->ext, sl, vcount(r, unit), root, r);
        reset_guard(rbuf, want, span(rl, n));
        if (!root_in_place)
            put_block(want, 0, rl, n, root, me);
        const int *sc = me == root ? counts : NULL, *sd = me == root ? displs : NULL;
        void *rp = root_in_place ? MPI_IN_PLACE : rbuf;
        RUN_COLL(m, it, req, Scatterv, scatterv, (sbuf, sc, sd, sl->type, rp, (int)elems(rl, n), rl->type, root, comm));
        compare(rbuf, want, span(rl, n), "scatterv");
    }
    end_run(m, &req);
    free(sbuf);
    free(rbuf);
    free(want);
    free(counts);
    free(displs);
}

/* ---- Allgather(v) ---- */

static void test_allgather(MPI_Comm comm, enum mode m, long n, const struct layout *sl, const struct layout *rl,
                           int in_place)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    long rspan = span(rl, n);
    int *sbuf = alloc_ints(span(sl, n)), *rbuf = alloc_ints(rspan * np), *want = alloc_ints(rspan * np);
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = (unsigned)(it * 17 + 4);
        put_block(sbuf, 0, sl, n, me, 0);
        reset_guard(rbuf, want, rspan * np);
        for (int r = 0; r < np; r++)
            put_block(want, r * rspan, rl, n, r, 0);
        const void *sp = sbuf;
        if (in_place) {
            put_block(rbuf, me * rspan, rl, n, me, 0);
            sp = MPI_IN_PLACE;
        }
        RUN_COLL(m, it, req, Allgather, allgather,
                 (sp, (int)elems(sl, n), sl->type, rbuf, (int)elems(rl, n), rl->type, comm));
        compare(rbuf, want, rspan * np, "allgather");
    }
    end_run(m, &req);
    free(sbuf);
    free(rbuf);
    free(want);
}

static void test_allgatherv(MPI_Comm comm, enum mode m, long unit, const struct layout *sl,
                            const struct layout *rl, int in_place)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    int *counts = malloc(np * sizeof(int)), *displs = malloc(np * sizeof(int));
    long total;
    v_layout(np, unit, rl, counts, displs, &total);
    long n = vcount(me, unit);
    int *sbuf = alloc_ints(span(sl, n)), *rbuf = alloc_ints(total), *want = alloc_ints(total);
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = (unsigned)(it * 19 + 5);
        put_block(sbuf, 0, sl, n, me, 0);
        reset_guard(rbuf, want, total);
        for (int r = 0; r < np; r++)
            put_block(want, (long)displs[r] * rl->ext, rl, vcount(r, unit), r, 0);
        const void *sp = sbuf;
        if (in_place) {
            put_block(rbuf, (long)displs[me] * rl->ext, rl, n, me, 0);
            sp = MPI_IN_PLACE;
        }
        RUN_COLL(m, it, req, Allgatherv, allgatherv,
                 (sp, (int)elems(sl, n), sl->type, rbuf, counts, displs, rl->type, comm));
        compare(rbuf, want, total, "allgatherv");
    }
    end_run(m, &req);
    free(sbuf);
    free(rbuf);
    free(want);
    free(counts);
    free(displs);
}

/* ---- Alltoall(v)(w) ---- */

static void test_alltoall(MPI_Comm comm, enum mode m, long n, const struct layout *sl, const struct layout *rl,
                          int in_place)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    if (in_place)
        sl = rl;   /* the data go out from recvbuf */
    long sspan = span(sl, n), rspan = span(rl, n);
    int *sbuf = alloc_ints(sspan * np), *rbuf = alloc_ints(rspan * np), *want = alloc_ints(rspan * np);
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = (unsigned)(it * 23 + 6);
        reset_guard(rbuf, want, rspan * np);
        for (int r = 0; r < np; r++) {
            put_block(in_place ? rbuf : sbuf, r * sspan, sl, n, me, r);
            put_block(want, r * rspan, rl, n, r, me);
        }
        const void *sp = in_place ? MPI_IN_PLACE : sbuf;
        RUN_COLL(m, it, req, Alltoall, alltoall,
                 (sp, (int)elems(sl, n), sl->type, rbuf, (int)elems(rl, n), rl->type, comm));
        compare(rbuf, want, rspan * np, "alltoall");
    }
    end_run(m, &req);
    free(sbuf);
    free(rbuf);
    free(want);
}

/* Ints rank src sends rank dst in the v and w tests: uneven, some zero, even
 * (the struct layout carries two ints per element). In place, what a pair
 * sends each other must match (one count per peer), so symmetric. */
static int a2av_symmetric;
static long a2av_count(int src, int dst, long unit)
{
    if (a2av_symmetric)
        return (src + dst) % 4 == 3 ? 0 : 2 * unit * (1 + (src * dst + src + dst) % 3);
    return (src + 2 * dst) % 4 == 3 ? 0 : 2 * unit * (1 + (src + dst) % 3);
}

/* Blocks placed in reverse peer order with a one-element gap; displacements
 * in elements (v) or bytes (w: element size of the peer's layout). */
static long a2a_place(int np, int me, long unit, int sending, const struct layout *const lay[], long counts[],
                      long displs_ints[])
{
    long at = 6;   /* leave room at the start (a multiple of every ext) */
    for (int p = np - 1; p >= 0; p--) {
        long n = sending ? a2av_count(me, p, unit) : a2av_count(p, me, unit);
        counts[p] = elems(lay[p], n);
        /* element-aligned for v (one layout): at is a multiple of ext */
        displs_ints[p] = at;
        at += span(lay[p], n) + lay[p]->ext;
        at = (at + 5) / 6 * 6;   /* a multiple of every ext (1, 2, 3) */
    }
    return at;
}

static void test_alltoallvw(MPI_Comm comm, enum mode m, long unit, int is_w, const struct layout *sl0,
                            const struct layout *rl0, int in_place)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    const struct layout *all[3] = { &L_INT, &L_STRIDED, &L_STRUCT };
    a2av_symmetric = in_place;
    const struct layout **slay = malloc(np * sizeof *slay), **rlay = malloc(np * sizeof *rlay);
    for (int p = 0; p < np; p++) {
        /* w: a different layout per peer, and the two sides of an edge differ. */
        slay[p] = is_w ? all[(p + me) % 3] : sl0;
        rlay[p] = is_w ? all[(p + me + 1) % 3] : rl0;
        if (in_place)
            slay[p] = rlay[p];
    }
    long *scount = malloc(np * sizeof(long)), *rcount = malloc(np * sizeof(long));
    long *sdisp = malloc(np * sizeof(long)), *rdisp = malloc(np * sizeof(long));
    long stotal = a2a_place(np, me, unit, 1, slay, scount, sdisp);
    long rtotal = a2a_place(np, me, unit, 0, rlay, rcount, rdisp);
    if (in_place) {
        /* In place the data go out from recvbuf, laid out as the receive side. */
        for (int p = 0; p < np; p++) {
            scount[p] = rcount[p];
            sdisp[p] = rdisp[p];
        }
        stotal = rtotal;
    }
    int *sc = malloc(np * sizeof(int)), *rc = malloc(np * sizeof(int));
    int *sd = malloc(np * sizeof(int)), *rd = malloc(np * sizeof(int));
    MPI_Datatype *st = malloc(np * sizeof(MPI_Datatype)), *rt = malloc(np * sizeof(MPI_Datatype));
    for (int p = 0; p < np; p++) {
        sc[p] = (int)scount[p];
        rc[p] = (int)rcount[p];
        /* v: displacements in extents of the one type; w: in bytes */
        sd[p] = (int)(is_w ? sdisp[p] * (long)sizeof(int) : sdisp[p] / slay[p]->ext);
        rd[p] = (int)(is_w ? rdisp[p] * (long)sizeof(int) : rdisp[p] / rlay[p]->ext);
        st[p] = slay[p]->type;
        rt[p] = rlay[p]->type;
    }
    int *sbuf = alloc_ints(stotal), *rbuf = alloc_ints(rtotal), *want = alloc_ints(rtotal);
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = 0; it < iterations(m); it++) {
        salt = (unsigned)(it * 29 + 7 + is_w);
        reset_guard(rbuf, want, rtotal);
        for (int p = 0; p < np; p++) {
            put_block(in_place ? rbuf : sbuf, sdisp[p], slay[p], a2av_count(me, p, unit), me, p);
            put_block(want, rdisp[p], rlay[p], a2av_count(p, me, unit), p, me);
        }
        const void *sp = in_place ? MPI_IN_PLACE : sbuf;
        if (is_w)
            RUN_COLL(m, it, req, Alltoallw, alltoallw, (sp, sc, sd, st, rbuf, rc, rd, rt, comm));
        else
            RUN_COLL(m, it, req, Alltoallv, alltoallv, (sp, sc, sd, sl0->type, rbuf, rc, rd, rl0->type, comm));
        compare(rbuf, want, rtotal, is_w ? "alltoallw" : "alltoallv");
    }
    end_run(m, &req);
    free(sbuf), free(rbuf), free(want);
    free(sc), free(rc), free(sd), free(rd), free(st), free(rt);
    free(scount), free(rcount), free(sdisp), free(rdisp), free(slay), free(rlay);
}

/* ---- the _c (large-count) forms ---- */

static void test_large_count_forms(MPI_Comm comm)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    const MPI_Count n = 3;
    int *sbuf = alloc_ints(n * np), *rbuf = alloc_ints(n * np), *want = alloc_ints(n * np);
    MPI_Count *counts = malloc(np * sizeof(MPI_Count));
    MPI_Aint *displs = malloc(np * sizeof(MPI_Aint));
    salt = 99;
    for (int r = 0; r < np; r++) {
        put_block(sbuf, r * n, &L_INT, n, me, r);
        put_block(want, r * n, &L_INT, n, r, me);
        counts[r] = n;
        displs[r] = (MPI_Aint)((np - 1 - r) * n);   /* reversed */
    }
    CHECK_MPI(MPI_Alltoall_c(sbuf, n, MPI_INT, rbuf, n, MPI_INT, comm));
    compare(rbuf, want, n * np, "alltoall_c");

    /* Alltoallv_c with reversed displacements on both sides. */
    for (int r = 0; r < np; r++)
        put_block(sbuf, (np - 1 - r) * n, &L_INT, n, me, r);
    reset_guard(rbuf, want, n * np);
    for (int r = 0; r < np; r++)
        put_block(want, (np - 1 - r) * n, &L_INT, n, r, me);
    MPI_Request req;
    CHECK_MPI(MPI_Ialltoallv_c(sbuf, counts, displs, MPI_INT, rbuf, counts, displs, MPI_INT, comm, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    compare(rbuf, want, n * np, "ialltoallv_c");

    /* Allgatherv_c, persistent. */
    put_block(sbuf, 0, &L_INT, n, me, 0);
    reset_guard(rbuf, want, n * np);
    for (int r = 0; r < np; r++)
        put_block(want, (np - 1 - r) * n, &L_INT, n, r, 0);
    CHECK_MPI(MPI_Allgatherv_init_c(sbuf, n, MPI_INT, rbuf, counts, displs, MPI_INT, comm, MPI_INFO_NULL, &req));
    CHECK_MPI(MPI_Start(&req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Request_free(&req));
    compare(rbuf, want, n * np, "allgatherv_init_c");

    /* Gather_c and Scatter_c at the last rank. */
    int root = np - 1;
    reset_guard(rbuf, want, n * np);
    put_block(sbuf, 0, &L_INT, n, me, root);
    for (int r = 0; r < np; r++)
        put_block(want, r * n, &L_INT, n, r, root);
    CHECK_MPI(MPI_Gather_c(sbuf, n, MPI_INT, rbuf, n, MPI_INT, root, comm));
    if (me == root)
        compare(rbuf, want, n * np, "gather_c");
    for (int r = 0; r < np; r++)
        put_block(sbuf, r * n, &L_INT, n, root, r);
    reset_guard(rbuf, want, n);
    put_block(want, 0, &L_INT, n, root, me);
    CHECK_MPI(MPI_Scatter_c(sbuf, n, MPI_INT, rbuf, n, MPI_INT, root, comm));
    compare(rbuf, want, n, "scatter_c");
    free(sbuf), free(rbuf), free(want), free(counts), free(displs);
}

/* ---- several at once, on world, a dup and a split, with p2p traffic ---- */

static void test_concurrent(void)
{
    MPI_Comm dup, half;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));   /* reversed order */
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);

    const long n = 64;
    salt = 1234;
    int *a2a_s = alloc_ints(n * size), *a2a_r = alloc_ints(n * size), *a2a_w = alloc_ints(n * size);
    int *ag_s = alloc_ints(n), *ag_r = alloc_ints(n * size), *ag_w = alloc_ints(n * size);
    int *g_s = alloc_ints(n), *g_r = alloc_ints(n * hsize), *g_w = alloc_ints(n * hsize);
    int *sc_s = alloc_ints(n * size), *sc_r = alloc_ints(n), *sc_w = alloc_ints(n);
    for (int r = 0; r < size; r++) {
        put_block(a2a_s, r * n, &L_INT, n, rank, r);
        put_block(a2a_w, r * n, &L_INT, n, r, rank);
        put_block(ag_w, r * n, &L_INT, n, r, 1000);
        put_block(sc_s, r * n, &L_INT, n, 2000 + size - 1, r);
    }
    put_block(ag_s, 0, &L_INT, n, rank, 1000);
    put_block(sc_w, 0, &L_INT, n, 2000 + size - 1, rank);
    /* half: gather at its rank 0 of each member's world rank's block */
    put_block(g_s, 0, &L_INT, n, rank, 3000);
    int *members = malloc(hsize * sizeof(int));
    CHECK_MPI(MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, half));
    for (int r = 0; r < hsize; r++)
        put_block(g_w, r * n, &L_INT, n, members[r], 3000);
    /* The scatter root's data names it as 2000 + size - 1 on every rank. */
    if (rank != size - 1)
        for (long i = 0; i < n * size; i++)
            sc_s[i] = GUARD;

    MPI_Request reqs[6];
    int token_out = rank * 7 + 1, token_in = -1;
    CHECK_MPI(MPI_Ialltoall(a2a_s, (int)n, MPI_INT, a2a_r, (int)n, MPI_INT, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Iallgather(ag_s, (int)n, MPI_INT, ag_r, (int)n, MPI_INT, dup, &reqs[1]));
    CHECK_MPI(MPI_Igather(g_s, (int)n, MPI_INT, g_r, (int)n, MPI_INT, 0, half, &reqs[2]));
    CHECK_MPI(MPI_Iscatter(sc_s, (int)n, MPI_INT, sc_r, (int)n, MPI_INT, size - 1, MPI_COMM_WORLD, &reqs[3]));
    /* user point-to-point on world with tag 0 meanwhile: must not mix with the collectives */
    CHECK_MPI(MPI_Irecv(&token_in, 1, MPI_INT, (rank - 1 + size) % size, 0, MPI_COMM_WORLD, &reqs[4]));
    CHECK_MPI(MPI_Isend(&token_out, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD, &reqs[5]));
    /* complete in an order unrelated to the start order */
    CHECK_MPI(MPI_Wait(&reqs[2], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Waitall(6, reqs, MPI_STATUSES_IGNORE));
    compare(a2a_r, a2a_w, n * size, "concurrent ialltoall (world)");
    compare(ag_r, ag_w, n * size, "concurrent iallgather (dup)");
    if (hrank == 0)
        compare(g_r, g_w, n * hsize, "concurrent igather (split)");
    compare(sc_r, sc_w, n, "concurrent iscatter (world)");
    CHECK(token_in == ((rank - 1 + size) % size) * 7 + 1, "p2p token %d among collectives", token_in);

    free(members);
    free(a2a_s), free(a2a_r), free(a2a_w), free(ag_s), free(ag_r), free(ag_w);
    free(g_s), free(g_r), free(g_w), free(sc_s), free(sc_r), free(sc_w);
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&half));
}

/* ---- invalid arguments (every rank detects each one: no one communicates) ---- */

static void test_errors(void)
{
    /* MPI_COMM_NULL's errors go to MPI_COMM_SELF's handler. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int buf[64];
    int *big = malloc(64 * size * sizeof(int)), *big2 = malloc(64 * size * sizeof(int));
    MPI_Request req;
    MPI_Datatype uncommitted;
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &uncommitted));

    CHECK_ERR(MPI_Gather(buf, 1, MPI_INT, big, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "MPI_Gather");
    CHECK_ERR(MPI_Scatter(big, 1, MPI_INT, buf, 1, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT, "MPI_Scatter");
    CHECK_ERR(MPI_Igatherv(buf, 1, MPI_INT, big, NULL, NULL, MPI_INT, size + 3, MPI_COMM_WORLD, &req),
              MPI_ERR_ROOT, "MPI_Igatherv");
    CHECK_ERR(MPI_Allgather(buf, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Allgather");
    CHECK_ERR(MPI_Alltoall_init(buf, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_NULL, MPI_INFO_NULL, &req),
              MPI_ERR_COMM, "MPI_Alltoall_init");
    CHECK_ERR(MPI_Alltoall(big, -1, MPI_INT, big2, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Alltoall");
    CHECK_ERR(MPI_Allgather(buf, 1, MPI_INT, big, -2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Allgather");
    CHECK_ERR(MPI_Allgather(buf, 1, MPI_DATATYPE_NULL, big, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Allgather");
    CHECK_ERR(MPI_Ialltoall(big, 1, uncommitted, big2, 2, MPI_INT, MPI_COMM_WORLD, &req),
              MPI_ERR_TYPE, "MPI_Ialltoall");
    CHECK_ERR(MPI_Allgather(buf, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "MPI_Allgather");
    CHECK_ERR(MPI_Allgather(buf, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD),
              MPI_ERR_BUFFER, "MPI_Allgather");
    CHECK_ERR(MPI_Alltoall(big, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "MPI_Alltoall");
    CHECK_ERR(MPI_Iallgather(buf, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Iallgather");

    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    MPI_Datatype *types = malloc(size * sizeof(MPI_Datatype));
    for (int r = 0; r < size; r++) {
        counts[r] = 1;
        displs[r] = r;
        types[r] = MPI_INT;
    }
    counts[size - 1] = -1;
    CHECK_ERR(MPI_Alltoallv(big, counts, displs, MPI_INT, big2, counts, displs, MPI_INT, MPI_COMM_WORLD),
              MPI_ERR_COUNT, "MPI_Alltoallv");
    CHECK_ERR(MPI_Allgatherv(buf, 1, MPI_INT, big, counts, displs, MPI_INT, MPI_COMM_WORLD),
              MPI_ERR_COUNT, "MPI_Allgatherv");
    counts[size - 1] = 1;
    CHECK_ERR(MPI_Alltoallw(big, counts, displs, NULL, big2, counts, displs, types, MPI_COMM_WORLD),
              MPI_ERR_ARG, "MPI_Alltoallw");
    types[0] = uncommitted;
    CHECK_ERR(MPI_Alltoallw(big, counts, displs, types, big2, counts, displs, types, MPI_COMM_WORLD),
              MPI_ERR_TYPE, "MPI_Alltoallw");
    CHECK_ERR(MPI_Alltoallv(big, NULL, displs, MPI_INT, big2, counts, displs, MPI_INT, MPI_COMM_WORLD),
              MPI_ERR_ARG, "MPI_Alltoallv");

    /* After all that, the communicator still works (no tag was consumed). */
    salt = 5;
    int *want = alloc_ints(size);
    for (int r = 0; r < size; r++) {
        put_block(big, r, &L_INT, 1, rank, r);
        put_block(want, r, &L_INT, 1, r, rank);
    }
    CHECK_MPI(MPI_Alltoall(big, 1, MPI_INT, big2, 1, MPI_INT, MPI_COMM_WORLD));
    compare(big2, want, size, "alltoall after errors");
    free(want);
    CHECK_MPI(MPI_Type_free(&uncommitted));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    free(big), free(big2), free(counts), free(displs), free(types);
}

/*
 * The battery on one communicator: every collective in every mode at the
 * given sizes (ints per rank), every root at the sizes below `large` (the
 * last root at large), in place, then derived types on both sides.
 */
static void battery(MPI_Comm w, const long sizes[], int nsizes, long large)
{
    int np;
    MPI_Comm_size(w, &np);
    for (int m = BLOCKING; m <= PERSISTENT; m++) {
        for (int si = 0; si < nsizes; si++) {
            long n = sizes[si];
            for (int root = 0; root < np; root++) {
                if (n == large && large && root != np - 1)
                    continue;
                test_gather(w, m, n, root, &L_INT, &L_INT, 0);
                test_gather(w, m, n, root, &L_INT, &L_INT, 1);
                test_scatter(w, m, n, root, &L_INT, &L_INT, 0);
                test_scatter(w, m, n, root, &L_INT, &L_INT, 1);
                test_gatherv(w, m, n ? n : 2, root, &L_INT, &L_INT, root % 2);
                test_scatterv(w, m, n ? n : 2, root, &L_INT, &L_INT, root % 2);
            }
            test_allgather(w, m, n, &L_INT, &L_INT, 0);
            test_allgather(w, m, n, &L_INT, &L_INT, 1);
            test_allgatherv(w, m, n ? n : 2, &L_INT, &L_INT, 0);
            test_allgatherv(w, m, n ? n : 2, &L_INT, &L_INT, 1);
            test_alltoall(w, m, n, &L_INT, &L_INT, 0);
            test_alltoall(w, m, n, &L_INT, &L_INT, 1);
            long unit = n / 4 > 0 ? n / 4 : 1;
            test_alltoallvw(w, m, unit, 0, &L_INT, &L_INT, 0);
            test_alltoallvw(w, m, unit, 0, &L_INT, &L_INT, 1);
            test_alltoallvw(w, m, unit, 1, NULL, NULL, 0);
            test_alltoallvw(w, m, unit, 1, NULL, NULL, 1);
        }
        /* derived datatypes, different on the two sides with the same signature */
        const struct layout *pairs[][2] = { { &L_STRIDED, &L_INT }, { &L_INT, &L_STRUCT }, { &L_STRUCT, &L_STRIDED } };
        for (int p = 0; p < 3; p++) {
            const struct layout *sl = pairs[p][0], *rl = pairs[p][1];
            for (int si = 0; si < nsizes; si++) {
                long n = sizes[si];
                if (n == 0 || (n == large && m != BLOCKING))   /* large derived data: once is enough */
                    continue;
                int root = (p + si) % np;
                test_gather(w, m, n, root, sl, rl, 0);
                test_gather(w, m, n, root, sl, rl, 1);
                test_scatter(w, m, n, root, sl, rl, 0);
                test_scatter(w, m, n, root, sl, rl, 1);
                test_gatherv(w, m, n, root, sl, rl, 0);
                test_scatterv(w, m, n, root, sl, rl, 1);
                test_allgather(w, m, n, sl, rl, 0);
                test_allgather(w, m, n, rl, rl, 1);
                test_allgatherv(w, m, n, sl, rl, 0);
                test_alltoall(w, m, n, sl, rl, 0);
                test_alltoall(w, m, n, sl, rl, 1);
                test_alltoallvw(w, m, n / 4 > 0 ? n / 4 : 1, 0, sl, rl, 0);
                test_alltoallvw(w, m, n / 4 > 0 ? n / 4 : 1, 0, sl, rl, 1);
            }
        }
    }
}

/* Every algorithm, forced through the communicator's info hints (the keys
 * and values of coll_data_select.c), on a duplicate of world. */
static void forced_algorithms(const long sizes[], int nsizes)
{
    static const char *const sets[][10] = {
        { "hashi_coll_gather", "binomial", "hashi_coll_scatter", "binomial", "hashi_coll_allgather", "bruck",
          "hashi_coll_alltoall", "bruck", "hashi_coll_alltoallv", "pairwise" },
        { "hashi_coll_gather", "linear", "hashi_coll_scatter", "linear", "hashi_coll_allgather",
          "recursive_doubling", "hashi_coll_alltoall", "scattered", "hashi_coll_alltoallv", "scattered" },
        { "hashi_coll_allgather", "ring", "hashi_coll_alltoall", "pairwise", "hashi_coll_alltoallv", "pairwise",
          "hashi_coll_gather", "binomial", "hashi_coll_scatter", "linear" },
    };
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        MPI_Info info;
        MPI_Comm comm;
        CHECK_MPI(MPI_Info_create(&info));
        for (int i = 0; i < 10; i += 2)
            CHECK_MPI(MPI_Info_set(info, sets[k][i], sets[k][i + 1]));
        CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm));
        CHECK_MPI(MPI_Info_free(&info));
        battery(comm, sizes, nsizes, 0);
        CHECK_MPI(MPI_Comm_free(&comm));
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    layouts_init();

    /* ints per rank: 0, tiny, small, medium, and (not quick) about 1 MiB per rank in all */
    long large = quick ? 0 : (256L * 1024 / size) & ~1L;
    const long sizes[] = { 0, 2, 6, 300, large };
    battery(MPI_COMM_WORLD, sizes, large ? 5 : 4, large);
    const long small_sizes[] = { 0, 6, 300 };
    forced_algorithms(small_sizes, 3);
    test_large_count_forms(MPI_COMM_WORLD);
    test_concurrent();
    test_errors();

    layouts_free();
    report_ok();
    MPI_Finalize();
    return 0;
}
