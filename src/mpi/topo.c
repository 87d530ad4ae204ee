/*
 * Process topologies: Cartesian, graph and distributed graph, cached on a
 * communicator (comm->topology). Reordering is never done (the standard
 * allows keeping the ranks), so a topology communicator is the first
 * nnodes ranks of its parent, in order. Each topology keeps the neighbour
 * lists the neighbourhood collectives use (hashi_topo_neighbors).
 * docs/topologies.md.
 */
#include "mpi/topo.h"
#include "mpi/comm.h"
#include "mpi/p2p.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct topology {
    int kind;              /* MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH */
    /* Cartesian */
    int ndims;
    int *dims, *periods, *coords;  /* coords: this process's */
    /* graph (the whole graph, as given to MPI_Graph_create) */
    int nnodes, nedges;
    int *index, *edges;
    /* distributed graph: this process's edges; weights NULL when unweighted */
    int weighted;
    int *in_weights, *out_weights;
    /* neighbours in the order of the neighbourhood collectives */
    int indegree, outdegree;
    int *sources, *destinations;
};

/* Every array of a topology lives in one block after the header. */
static struct topology *topo_alloc(size_t ints, int **cursor)
{
    struct topology *t = calloc(1, sizeof *t + (ints ? ints : 1) * sizeof(int));
    if (t)
        *cursor = (int *)(t + 1);
    return t;
}

static int *take(int **cursor, size_t n)
{
    int *p = *cursor;
    *cursor += n;
    return p;
}

/* The block's size in ints, for copying. */
static size_t topo_ints(const struct topology *t)
{
    switch (t->kind) {
    case MPI_CART:
        return 5 * (size_t)t->ndims;
    case MPI_GRAPH:
        return (size_t)t->nnodes + (size_t)t->nedges + (size_t)t->indegree * 2;
    default:
        return ((size_t)t->indegree + (size_t)t->outdegree) * (t->weighted ? 2 : 1);
    }
}

void *hashi_topo_dup(const void *topology, int *err)
{
    *err = MPI_SUCCESS;
    if (!topology)
        return NULL;
    const struct topology *t = topology;
    size_t ints = topo_ints(t);
    struct topology *copy = malloc(sizeof *copy + (ints ? ints : 1) * sizeof(int));
    if (!copy) {
        *err = MPI_ERR_NO_MEM;
        return NULL;
    }
    memcpy(copy, t, sizeof *copy + ints * sizeof(int));
    /* Re-point every array into the copy's block. */
    const char *base = (const char *)t;
    char *nbase = (char *)copy;
#define REBASE(f) copy->f = t->f ? (int *)(nbase + ((const char *)t->f - base)) : NULL
    REBASE(dims);
    REBASE(periods);
    REBASE(coords);
    REBASE(index);
    REBASE(edges);
    REBASE(in_weights);
    REBASE(out_weights);
    REBASE(sources);
    REBASE(destinations);
#undef REBASE
    return copy;
}

void hashi_topo_free(void *topology)
{
    free(topology);
}

int hashi_topo_neighbors(struct MPI_ABI_Comm *comm, int *indegree, const int **sources, int *outdegree,
                         const int **destinations)
{
    const struct topology *t = comm->topology;
    if (!t)
        return MPI_ERR_TOPOLOGY;
    *indegree = t->indegree;
    *outdegree = t->outdegree;
    *sources = t->sources;
    *destinations = t->destinations;
    return MPI_SUCCESS;
}

/* ---- argument checks ---- */

/* The start of every call on a topology: MPI initialized, comm valid and
 * carrying a topology of `kind` (0: any). The topology (and in *c, when not
 * NULL, the communicator), or NULL with the raised error in *rc. */
static struct topology *topo_call(const char *func, MPI_Comm comm, int kind, struct MPI_ABI_Comm **c, int *rc)
{
    if (hashi_init_state != HASHI_STATE_INITIALIZED) {
        *rc = hashi_err_not_initialized(func);
        return NULL;
    }
    struct MPI_ABI_Comm *obj = hashi_comm_get(comm);
    if (!obj) {
        *rc = hashi_err_invalid_comm(func, comm, "comm");
        return NULL;
    }
    if (c)
        *c = obj;
    struct topology *t = obj->topology;
    if (!t || (kind && t->kind != kind)) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_TOPOLOGY, "the communicator has no %s topology",
                             kind == MPI_CART ? "Cartesian" : kind == MPI_GRAPH ? "graph"
                             : kind == MPI_DIST_GRAPH ? "distributed graph" : "");
        return NULL;
    }
    return t;
}

/* ---- Cartesian ---- */

/* The rank of coordinates (already in range) in a row-major grid. */
static int cart_rank_of(const struct topology *t, const int *coords)
{
    int rank = 0;
    for (int d = 0; d < t->ndims; d++)
        rank = rank * t->dims[d] + coords[d];
    return rank;
}

static void cart_coords_of(const struct topology *t, int rank, int *coords)
{
    for (int d = t->ndims - 1; d >= 0; d--) {
        coords[d] = rank % t->dims[d];
        rank /= t->dims[d];
    }
}

/* The rank `disp` steps along dimension d from this process, or
 * MPI_PROC_NULL past a non-periodic border. */
static int cart_shifted(const struct topology *t, int d, int disp)
{
    int c = t->coords[d] + disp;
    if (t->periods[d]) {
        c %= t->dims[d];
        if (c < 0)
            c += t->dims[d];
    } else if (c < 0 || c >= t->dims[d]) {
        return MPI_PROC_NULL;
    }
    int saved = t->coords[d];
    t->coords[d] = c;
    int rank = cart_rank_of(t, t->coords);
    t->coords[d] = saved;
    return rank;
}

/* A Cartesian topology for the process of `rank` in the grid. */
static struct topology *cart_new(int ndims, const int *dims, const int *periods, int rank)
{
    int *cur;
    struct topology *t = topo_alloc(5 * (size_t)ndims, &cur);
    if (!t)
        return NULL;
    t->kind = MPI_CART;
    t->ndims = ndims;
    t->dims = take(&cur, (size_t)ndims);
    t->periods = take(&cur, (size_t)ndims);
    t->coords = take(&cur, (size_t)ndims);
    t->sources = take(&cur, 2 * (size_t)ndims);
    t->destinations = t->sources; /* the same list both ways */
    for (int d = 0; d < ndims; d++) {
        t->dims[d] = dims[d];
        t->periods[d] = periods[d] != 0;
    }
    cart_coords_of(t, rank, t->coords);
    for (int d = 0; d < ndims; d++) {
        t->sources[2 * d] = cart_shifted(t, d, -1);
        t->sources[2 * d + 1] = cart_shifted(t, d, +1);
    }
    t->indegree = t->outdegree = 2 * ndims;
    return t;
}

/* The number of grid points, or -1 on overflow. */
static long long grid_size(int ndims, const int *dims)
{
    long long n = 1;
    for (int d = 0; d < ndims; d++) {
        n *= dims[d];
        if (n > INT_MAX)
            return -1;
    }
    return n;
}

/* The grid of Cart_create and Cart_map (ndims and dims already checked
 * present): every dimension positive, at most `size` points. The number of
 * points, or -1 with the raised error in *rc. */
static long long grid_arg(const char *func, MPI_Comm comm, int ndims, const int *dims, int size, int *rc)
{
    for (int d = 0; d < ndims; d++)
        if (dims[d] <= 0) {
            *rc = hashi_err_comm(func, comm, MPI_ERR_DIMS, "dims[%d] = %d is not positive", d, dims[d]);
            return -1;
        }
    long long n = grid_size(ndims, dims);
    if (n < 0 || n > size) {
        *rc = hashi_err_comm(func, comm, MPI_ERR_TOPOLOGY,
                             "the grid has %lld points, more than the communicator's %d processes", n, size);
        return -1;
    }
    return n;
}

/* The group of a topology communicator smaller than its parent: the parent's
 * first n ranks, in order (ranks are kept). NULL when out of memory. */
static struct MPI_ABI_Group *first_ranks_group(const struct MPI_ABI_Comm *parent, int n)
{
    int *world = malloc((size_t)n * sizeof *world);
    if (!world)
        return NULL;
    for (int r = 0; r < n; r++)
        world[r] = hashi_comm_to_world(parent, r);
    return hashi_group_from_world_ranks(n, world);
}

/* comm_old of a topology constructor: a valid intracommunicator. */
static int topology_parent(const char *func, MPI_Comm comm_old, struct MPI_ABI_Comm **parent)
{
    *parent = hashi_comm_get(comm_old);
    if (!*parent)
        return hashi_err_invalid_comm(func, comm_old, "comm_old");
    if (hashi_comm_is_inter(*parent))
        return hashi_err_comm(func, comm_old, MPI_ERR_COMM,
                              "comm_old is an intercommunicator (topologies are for intracommunicators)");
    return MPI_SUCCESS;
}

int hashi_impl_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
                           MPI_Comm *comm_cart)
{
    static const char func[] = "MPI_Cart_create";
    HASHI_CHECK_INITIALIZED(func);
    (void)reorder; /* ranks are kept: allowed by the standard */
    struct MPI_ABI_Comm *parent;
    int prc = topology_parent(func, comm_old, &parent);
    if (prc != MPI_SUCCESS)
        return prc;
    if (ndims < 0)
        return hashi_err_comm(func, comm_old, MPI_ERR_DIMS, "ndims %d is negative", ndims);
    if (!comm_cart || (ndims > 0 && (!dims || !periods)))
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "%s is NULL",
                              !comm_cart ? "comm_cart" : !dims ? "dims" : "periods");
    int rc;
    long long n = grid_arg(func, comm_old, ndims, dims, parent->size, &rc);
    if (n < 0)
        return rc;
    *comm_cart = MPI_COMM_NULL;
    int member = parent->rank < n;
    struct MPI_ABI_Group *group = NULL;
    if (member && n < parent->size && !(group = first_ranks_group(parent, (int)n)))
        member = 0; /* still take part; report below */
    struct topology *t = member ? cart_new(ndims, dims, periods, parent->rank) : NULL;
    int failed = parent->rank < n && (!t || (n < parent->size && !group));
    struct MPI_ABI_Comm *c;
    rc = hashi_comm_create_from(func, parent, member && !failed, group, &c);
    if (group)
        hashi_group_release(group);
    if (rc != MPI_SUCCESS || failed) {
        free(t);
        return rc != MPI_SUCCESS ? rc : hashi_err_comm(func, comm_old, MPI_ERR_NO_MEM, "out of memory");
    }
    if (c) {
        c->topology = t;
        *comm_cart = c;
    } else {
        free(t);
    }
    return MPI_SUCCESS;
}

int hashi_impl_Cartdim_get(MPI_Comm comm, int *ndims)
{
    static const char func[] = "MPI_Cartdim_get";
    int rc;
    struct topology *t = topo_call(func, comm, MPI_CART, NULL, &rc);
    if (!t)
        return rc;
    if (!ndims)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "ndims is NULL");
    *ndims = t->ndims;
    return MPI_SUCCESS;
}

int hashi_impl_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
    static const char func[] = "MPI_Cart_get";
    int rc;
    struct topology *t = topo_call(func, comm, MPI_CART, NULL, &rc);
    if (!t)
        return rc;
    if (maxdims < t->ndims)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "maxdims %d is less than the %d dimensions", maxdims,
                              t->ndims);
    if (t->ndims > 0 && (!dims || !periods || !coords))
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "dims, periods or coords is NULL");
    for (int d = 0; d < t->ndims; d++) {
        dims[d] = t->dims[d];
        periods[d] = t->periods[d];
        coords[d] = t->coords[d];
    }
    return MPI_SUCCESS;
}

int hashi_impl_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
    static const char func[] = "MPI_Cart_rank";
    int rc;
    struct topology *t = topo_call(func, comm, MPI_CART, NULL, &rc);
    if (!t)
        return rc;
    if (!rank || (t->ndims > 0 && !coords))
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", !rank ? "rank" : "coords");
    int r = 0;
    for (int d = 0; d < t->ndims; d++) {
        int x = coords[d];
        if (t->periods[d]) {
            x %= t->dims[d];
            if (x < 0)
                x += t->dims[d];
        } else if (x < 0 || x >= t->dims[d]) {
            return hashi_err_comm(func, comm, MPI_ERR_ARG,
                                  "coords[%d] = %d is outside 0..%d of a non-periodic dimension", d, x,
                                  t->dims[d] - 1);
        }
        r = r * t->dims[d] + x;
    }
    *rank = r;
    return MPI_SUCCESS;
}

int hashi_impl_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
    static const char func[] = "MPI_Cart_coords";
    struct MPI_ABI_Comm *c;
    int rc;
    struct topology *t = topo_call(func, comm, MPI_CART, &c, &rc);
    if (!t)
        return rc;
    if (rank < 0 || rank >= c->size)
        return hashi_err_comm(func, comm, MPI_ERR_RANK, "rank %d is not in 0..%d", rank, c->size - 1);
    if (maxdims < t->ndims)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "maxdims %d is less than the %d dimensions", maxdims,
                              t->ndims);
    if (t->ndims > 0 && !coords)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "coords is NULL");
    cart_coords_of(t, rank, coords);
    return MPI_SUCCESS;
}

int hashi_impl_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest)
{
    static const char func[] = "MPI_Cart_shift";
    int rc;
    struct topology *t = topo_call(func, comm, MPI_CART, NULL, &rc);
    if (!t)
        return rc;
    if (direction < 0 || direction >= t->ndims)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "direction %d is not in 0..%d", direction, t->ndims - 1);
    if (!rank_source || !rank_dest)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", !rank_source ? "rank_source" : "rank_dest");
    /* Large displacements wrap (periodic) or leave the grid (not). */
    int d = t->dims[direction];
    int step = t->periods[direction] ? disp % d : (disp > d ? d : disp < -d ? -d : disp);
    *rank_source = cart_shifted(t, direction, -step);
    *rank_dest = cart_shifted(t, direction, step);
    return MPI_SUCCESS;
}

int hashi_impl_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    static const char func[] = "MPI_Cart_sub";
    struct MPI_ABI_Comm *c;
    int rc;
    struct topology *t = topo_call(func, comm, MPI_CART, &c, &rc);
    if (!t)
        return rc;
    if (!newcomm || (t->ndims > 0 && !remain_dims))
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", !newcomm ? "newcomm" : "remain_dims");
    *newcomm = MPI_COMM_NULL;
    /* Colour: the coordinates in the dropped dimensions; key: the rank in
     * the kept ones (row-major, so the new ranks follow the grid). */
    int color = 0, key = 0, ndims = 0;
    int *dims = malloc(2 * ((size_t)t->ndims + 1) * sizeof *dims), *periods;
    if (!dims)
        return hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    periods = dims + t->ndims + 1;
    for (int d = 0; d < t->ndims; d++) {
        if (remain_dims[d]) {
            key = key * t->dims[d] + t->coords[d];
            dims[ndims] = t->dims[d];
            periods[ndims++] = t->periods[d];
        } else {
            color = color * t->dims[d] + t->coords[d];
        }
    }
    /* Nothing kept: a 0-dimensional grid of one process. */
    struct topology *sub = cart_new(ndims, dims, periods, key);
    free(dims);
    struct MPI_ABI_Comm *nc;
    rc = hashi_comm_split(func, c, color, key, &nc);
    if (rc != MPI_SUCCESS || !sub) {
        free(sub);
        if (nc) {
            MPI_Comm h = nc;
            hashi_impl_Comm_free(&h);
        }
        return rc != MPI_SUCCESS ? rc : hashi_err_comm(func, comm, MPI_ERR_NO_MEM, "out of memory");
    }
    nc->topology = sub;
    *newcomm = nc;
    return MPI_SUCCESS;
}

int hashi_impl_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)
{
    static const char func[] = "MPI_Cart_map";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return hashi_err_invalid_comm(func, comm, "comm");
    (void)periods;
    if (ndims < 0)
        return hashi_err_comm(func, comm, MPI_ERR_DIMS, "ndims %d is negative", ndims);
    if (!newrank || (ndims > 0 && !dims))
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", !newrank ? "newrank" : "dims");
    int rc;
    long long n = grid_arg(func, comm, ndims, dims, c->size, &rc);
    if (n < 0)
        return rc;
    *newrank = c->rank < n ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

/* ---- MPI_Dims_create ---- */

/*
 * The most balanced factorisation: among all non-increasing sequences of k
 * factors with product m, the one whose largest and smallest factors are
 * closest (ties: the lexicographically smallest). Depth-first over the
 * divisors of m (at most 1536 below 2^31), cut as soon as a prefix cannot
 * cover the rest or cannot beat the best spread found.
 */
struct dims_search {
    int k;
    const int *divisors;     /* of the original m, descending */
    int ndivisors;
    int *cur, *best;
    int best_spread;
};

static void dims_search(struct dims_search *s, int depth, int m, int maxf)
{
    if (depth == s->k - 1) {
        if (m > maxf)
            return;
        s->cur[depth] = m;
        int spread = s->cur[0] - m, better = spread < s->best_spread;
        for (int i = 0; spread == s->best_spread && i < s->k; i++)
            if (s->cur[i] != s->best[i]) {
                better = s->cur[i] < s->best[i];
                break;
            }
        if (better) {
            s->best_spread = spread;
            memcpy(s->best, s->cur, (size_t)s->k * sizeof *s->best);
        }
        return;
    }
    for (int i = 0; i < s->ndivisors; i++) {
        int f = s->divisors[i];
        if (f > maxf || m % f)
            continue;
        long long p = 1; /* f^(factors left) must reach m: smaller f cannot */
        for (int j = depth; j < s->k && p < m; j++)
            p *= f;
        if (p < m)
            break;
        if (depth > 0 && s->cur[0] - f > s->best_spread)
            break; /* the smallest factor is at most f: spread too large already */
        s->cur[depth] = f;
        dims_search(s, depth + 1, m / f, f);
    }
}

/* The divisors of m, largest first; their count, or -1 when out of memory. */
static int divisors_of(int m, int **out)
{
    int n = 0, cap = 64;
    int *d = malloc((size_t)cap * sizeof *d);
    for (int f = 1; d && (long long)f * f <= m; f++) {
        if (m % f)
            continue;
        if (n + 2 > cap) {
            int *grown = realloc(d, (size_t)(cap *= 2) * sizeof *d);
            if (!grown) {
                free(d);
                d = NULL;
                break;
            }
            d = grown;
        }
        d[n++] = f;
        if (f != m / f)
            d[n++] = m / f;
    }
    if (!d)
        return -1;
    for (int i = 1; i < n; i++) /* insertion sort, descending: n is small */
        for (int j = i; j > 0 && d[j] > d[j - 1]; j--) {
            int x = d[j];
            d[j] = d[j - 1];
            d[j - 1] = x;
        }
    *out = d;
    return n;
}

int hashi_impl_Dims_create(int nnodes, int ndims, int dims[])
{
    static const char func[] = "MPI_Dims_create";
    HASHI_CHECK_INITIALIZED(func);
    if (ndims < 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_DIMS, "ndims %d is negative", ndims);
    if (nnodes <= 0)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "nnodes %d is not positive", nnodes);
    if (ndims > 0 && !dims)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_ARG, "dims is NULL");
    long long fixed = 1;
    int free_dims = 0;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] < 0)
            return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_DIMS, "dims[%d] = %d is negative", d,
                                   dims[d]);
        if (dims[d] == 0)
            free_dims++;
        else if ((fixed *= dims[d]) > nnodes)
            break;
    }
    if (fixed > nnodes || nnodes % fixed)
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_DIMS,
                               "nnodes %d is not a multiple of the product of the fixed dimensions", nnodes);
    int m = (int)(nnodes / fixed);
    if (free_dims == 0) {
        if (m != 1)
            return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_DIMS,
                                   "the fixed dimensions' product %lld is not nnodes %d", fixed, nnodes);
        return MPI_SUCCESS;
    }
    int *cur = malloc(2 * (size_t)free_dims * sizeof *cur), *divisors = NULL;
    int ndivisors = cur ? divisors_of(m, &divisors) : -1;
    if (ndivisors < 0) {
        free(cur);
        return hashi_err_raise(func, HASHI_OBJ_NONE, NULL, MPI_ERR_NO_MEM, "out of memory");
    }
    struct dims_search s = { free_dims, divisors, ndivisors, cur, cur + free_dims, INT_MAX };
    dims_search(&s, 0, m, m);
    free(divisors);
    /* The free entries, in order, get the factors largest first. */
    for (int d = 0, i = 0; d < ndims; d++)
        if (dims[d] == 0)
            dims[d] = s.best[i++];
    free(cur);
    return MPI_SUCCESS;
}

/* ---- graph ---- */

int hashi_impl_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int reorder,
                            MPI_Comm *comm_graph)
{
    static const char func[] = "MPI_Graph_create";
    HASHI_CHECK_INITIALIZED(func);
    (void)reorder;
    struct MPI_ABI_Comm *parent;
    int prc = topology_parent(func, comm_old, &parent);
    if (prc != MPI_SUCCESS)
        return prc;
    if (!comm_graph)
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "comm_graph is NULL");
    if (nnodes < 0 || nnodes > parent->size)
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "nnodes %d is not in 0..%d", nnodes, parent->size);
    if (nnodes > 0 && (!index || !edges))
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "%s is NULL", !index ? "index" : "edges");
    int nedges = nnodes > 0 ? index[nnodes - 1] : 0;
    for (int i = 0; i < nnodes; i++)
        if (index[i] < (i ? index[i - 1] : 0))
            return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "index[%d] = %d is less than the entry before", i,
                                  index[i]);
    for (int e = 0; e < nedges; e++)
        if (edges[e] < 0 || edges[e] >= nnodes)
            return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "edges[%d] = %d is not a node (0..%d)", e, edges[e],
                                  nnodes - 1);
    *comm_graph = MPI_COMM_NULL;
    int member = parent->rank < nnodes;
    struct topology *t = NULL;
    if (member) {
        int first = parent->rank ? index[parent->rank - 1] : 0, degree = index[parent->rank] - first;
        int *cur;
        t = topo_alloc((size_t)nnodes + (size_t)nedges + 2 * (size_t)degree, &cur);
        if (t) {
            t->kind = MPI_GRAPH;
            t->nnodes = nnodes;
            t->nedges = nedges;
            t->index = take(&cur, (size_t)nnodes);
            t->edges = take(&cur, (size_t)nedges);
            t->sources = take(&cur, (size_t)degree);
            t->destinations = take(&cur, (size_t)degree);
            memcpy(t->index, index, (size_t)nnodes * sizeof *index);
            memcpy(t->edges, edges, (size_t)nedges * sizeof *edges);
            memcpy(t->sources, edges + first, (size_t)degree * sizeof *edges);
            memcpy(t->destinations, edges + first, (size_t)degree * sizeof *edges);
            t->indegree = t->outdegree = degree;
        }
    }
    struct MPI_ABI_Group *group = member && nnodes < parent->size ? first_ranks_group(parent, nnodes) : NULL;
    int failed = member && (!t || (nnodes < parent->size && !group));
    struct MPI_ABI_Comm *c;
    int rc = hashi_comm_create_from(func, parent, member && !failed, group, &c);
    if (group)
        hashi_group_release(group);
    if (rc != MPI_SUCCESS || failed || !c) {
        free(t);
        return rc != MPI_SUCCESS ? rc
               : failed          ? hashi_err_comm(func, comm_old, MPI_ERR_NO_MEM, "out of memory")
                                 : MPI_SUCCESS;
    }
    c->topology = t;
    *comm_graph = c;
    return MPI_SUCCESS;
}

int hashi_impl_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
    static const char func[] = "MPI_Graphdims_get";
    int rc;
    struct topology *t = topo_call(func, comm, MPI_GRAPH, NULL, &rc);
    if (!t)
        return rc;
    if (!nnodes || !nedges)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "%s is NULL", !nnodes ? "nnodes" : "nedges");
    *nnodes = t->nnodes;
    *nedges = t->nedges;
    return MPI_SUCCESS;
}

int hashi_impl_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[])
{
    static const char func[] = "MPI_Graph_get";
    int rc;
    struct topology *t = topo_call(func, comm, MPI_GRAPH, NULL, &rc);
    if (!t)
        return rc;
    if (maxindex < 0 || maxedges < 0 || (maxindex > 0 && !index) || (maxedges > 0 && !edges))
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "maxindex/maxedges negative or index/edges NULL");
    /* The first maxindex / maxedges entries (the standard's truncation). */
    memcpy(index, t->index, (size_t)(maxindex < t->nnodes ? maxindex : t->nnodes) * sizeof *index);
    memcpy(edges, t->edges, (size_t)(maxedges < t->nedges ? maxedges : t->nedges) * sizeof *edges);
    return MPI_SUCCESS;
}

/* The start of both neighbour queries of a graph (topo_call): the adjacency
 * list of node `rank`, *degree entries at *adjacent. */
static int graph_node_call(const char *func, MPI_Comm comm, int rank, const int **adjacent, int *degree)
{
    int rc;
    struct topology *t = topo_call(func, comm, MPI_GRAPH, NULL, &rc);
    if (!t)
        return rc;
    if (rank < 0 || rank >= t->nnodes)
        return hashi_err_comm(func, comm, MPI_ERR_RANK, "rank %d is not a node (0..%d)", rank, t->nnodes - 1);
    int first = rank ? t->index[rank - 1] : 0;
    *degree = t->index[rank] - first;
    *adjacent = t->edges + first;
    return MPI_SUCCESS;
}

int hashi_impl_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
    static const char func[] = "MPI_Graph_neighbors_count";
    const int *adjacent;
    int degree;
    int rc = graph_node_call(func, comm, rank, &adjacent, &degree);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!nneighbors)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "nneighbors is NULL");
    *nneighbors = degree;
    return MPI_SUCCESS;
}

int hashi_impl_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
    static const char func[] = "MPI_Graph_neighbors";
    const int *adjacent;
    int degree;
    int rc = graph_node_call(func, comm, rank, &adjacent, &degree);
    if (rc != MPI_SUCCESS)
        return rc;
    if (maxneighbors < 0 || (maxneighbors > 0 && !neighbors))
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "maxneighbors is negative or neighbors is NULL");
    memcpy(neighbors, adjacent, (size_t)(maxneighbors < degree ? maxneighbors : degree) * sizeof *neighbors);
    return MPI_SUCCESS;
}

int hashi_impl_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[], int *newrank)
{
    static const char func[] = "MPI_Graph_map";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return hashi_err_invalid_comm(func, comm, "comm");
    (void)index;
    (void)edges;
    if (nnodes < 1 || nnodes > c->size)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "nnodes %d is not in 1..%d", nnodes, c->size);
    if (!newrank)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "newrank is NULL");
    *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int hashi_impl_Topo_test(MPI_Comm comm, int *status)
{
    static const char func[] = "MPI_Topo_test";
    HASHI_CHECK_INITIALIZED(func);
    struct MPI_ABI_Comm *c = hashi_comm_get(comm);
    if (!c)
        return hashi_err_invalid_comm(func, comm, "comm");
    if (!status)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "status is NULL");
    const struct topology *t = c->topology;
    *status = t ? t->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

/* ---- distributed graph ---- */

/* A weights argument: MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY or an array. */
static int is_unweighted(const int *w)
{
    return w == MPI_UNWEIGHTED;
}

static struct topology *dist_new(int indegree, const int *sources, const int *sw, int outdegree,
                                 const int *destinations, const int *dw, int weighted)
{
    int *cur;
    size_t n = (size_t)indegree + (size_t)outdegree;
    struct topology *t = topo_alloc(n * (weighted ? 2 : 1), &cur);
    if (!t)
        return NULL;
    t->kind = MPI_DIST_GRAPH;
    t->weighted = weighted;
    t->indegree = indegree;
    t->outdegree = outdegree;
    t->sources = take(&cur, (size_t)indegree);
    t->destinations = take(&cur, (size_t)outdegree);
    memcpy(t->sources, sources, (size_t)indegree * sizeof *sources);
    memcpy(t->destinations, destinations, (size_t)outdegree * sizeof *destinations);
    if (weighted) {
        t->in_weights = take(&cur, (size_t)indegree);
        t->out_weights = take(&cur, (size_t)outdegree);
        if (indegree)
            memcpy(t->in_weights, sw, (size_t)indegree * sizeof *sw);
        if (outdegree)
            memcpy(t->out_weights, dw, (size_t)outdegree * sizeof *dw);
    }
    return t;
}

/* Ranks of a list: each in 0..size-1 (MPI_PROC_NULL is not a neighbour). */
static int check_ranks(const char *func, MPI_Comm comm, const char *what, int n, const int *ranks, int size)
{
    for (int i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= size)
            return hashi_err_comm(func, comm, MPI_ERR_RANK, "%s[%d] = %d is not a rank (0..%d)", what, i, ranks[i],
                                  size - 1);
    return MPI_SUCCESS;
}

/* Finish a dist graph: a duplicate of the parent (every process takes part)
 * carrying t (NULL when this process ran out of memory: fail after agreeing). */
static int dist_finish(const char *func, struct MPI_ABI_Comm *parent, MPI_Comm comm_old, struct topology *t,
                       MPI_Comm *comm_dist_graph)
{
    struct MPI_ABI_Comm *c;
    int rc = hashi_comm_create_from(func, parent, t != NULL, NULL, &c);
    if (rc != MPI_SUCCESS || !t) {
        free(t);
        return rc != MPI_SUCCESS ? rc : hashi_err_comm(func, comm_old, MPI_ERR_NO_MEM, "out of memory");
    }
    c->topology = t;
    *comm_dist_graph = c;
    return MPI_SUCCESS;
}

int hashi_impl_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                          const int sourceweights[], int outdegree, const int destinations[],
                                          const int destweights[], MPI_Info info, int reorder,
                                          MPI_Comm *comm_dist_graph)
{
    static const char func[] = "MPI_Dist_graph_create_adjacent";
    HASHI_CHECK_INITIALIZED(func);
    (void)info;
    (void)reorder;
    struct MPI_ABI_Comm *parent;
    int prc = topology_parent(func, comm_old, &parent);
    if (prc != MPI_SUCCESS)
        return prc;
    if (indegree < 0 || outdegree < 0)
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "indegree %d or outdegree %d is negative", indegree,
                              outdegree);
    if (!comm_dist_graph || (indegree && !sources) || (outdegree && !destinations))
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "comm_dist_graph, sources or destinations is NULL");
    int rc = check_ranks(func, comm_old, "sources", indegree, sources, parent->size);
    if (rc == MPI_SUCCESS)
        rc = check_ranks(func, comm_old, "destinations", outdegree, destinations, parent->size);
    if (rc != MPI_SUCCESS)
        return rc;
    int weighted = !is_unweighted(sourceweights) && !is_unweighted(destweights);
    if (weighted && ((indegree && (!sourceweights || sourceweights == MPI_WEIGHTS_EMPTY))
                     || (outdegree && (!destweights || destweights == MPI_WEIGHTS_EMPTY))))
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "a weights array is missing");
    *comm_dist_graph = MPI_COMM_NULL;
    struct topology *t = dist_new(indegree, sources, sourceweights, outdegree, destinations, destweights, weighted);
    return dist_finish(func, parent, comm_old, t, comm_dist_graph);
}

/*
 * MPI_Dist_graph_create: any process may name any edge, so every process
 * sends each other the edges that concern it: (source, destination, weight)
 * triples, a count first, on the parent's internal context. A process's
 * lists come out ordered by the rank that named the edge, then the order
 * it named them in: deterministic, and the same for the neighbour queries
 * and the neighbourhood collectives.
 */
struct edge {
    int source, destination, weight;
};

int hashi_impl_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                                 const int destinations[], const int weights[], MPI_Info info, int reorder,
                                 MPI_Comm *comm_dist_graph)
{
    static const char func[] = "MPI_Dist_graph_create";
    HASHI_CHECK_INITIALIZED(func);
    (void)info;
    (void)reorder;
    struct MPI_ABI_Comm *parent;
    int prc = topology_parent(func, comm_old, &parent);
    if (prc != MPI_SUCCESS)
        return prc;
    if (n < 0)
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "n %d is negative", n);
    if (!comm_dist_graph || (n && (!sources || !degrees)))
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "comm_dist_graph, sources or degrees is NULL");
    int size = parent->size, rc = check_ranks(func, comm_old, "sources", n, sources, size);
    if (rc != MPI_SUCCESS)
        return rc;
    long long total = 0;
    for (int i = 0; i < n; i++) {
        if (degrees[i] < 0)
            return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "degrees[%d] = %d is negative", i, degrees[i]);
        total += degrees[i];
    }
    if (total > INT_MAX)
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "too many edges");
    if (total && !destinations)
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "destinations is NULL");
    if ((rc = check_ranks(func, comm_old, "destinations", (int)total, destinations, size)) != MPI_SUCCESS)
        return rc;
    /* Weighted or not must agree everywhere; MPI_WEIGHTS_EMPTY with edges is an error. */
    int weighted = !is_unweighted(weights);
    if (weighted && total && (!weights || weights == MPI_WEIGHTS_EMPTY))
        return hashi_err_comm(func, comm_old, MPI_ERR_ARG, "weights is missing");
    *comm_dist_graph = MPI_COMM_NULL;

    /* Per peer: the edges it is a source or destination of (an edge from
     * p to q goes to both; to one peer once when p == q). */
    int *count = calloc((size_t)size * 2, sizeof *count), *recv_count = count + size;
    struct edge **out = calloc((size_t)size, sizeof *out);
    struct edge *mine = malloc(((size_t)total + 1) * sizeof *mine);
    struct MPI_ABI_Request **reqs = malloc((size_t)size * 2 * sizeof *reqs);
    int failed = !count || !out || !mine || !reqs;
    if (!failed) {
        for (int i = 0, e = 0; i < n; i++)
            for (int j = 0; j < degrees[i]; j++, e++) {
                mine[e] = (struct edge){ sources[i], destinations[e], weighted ? weights[e] : 1 };
                count[sources[i]]++;
                if (destinations[e] != sources[i])
                    count[destinations[e]]++;
            }
        for (int q = 0; q < size && !failed; q++) {
            out[q] = malloc(((size_t)count[q] + 1) * sizeof **out);
            failed = !out[q];
            count[q] = 0;
        }
        for (int e = 0; !failed && e < (int)total; e++) {
            out[mine[e].source][count[mine[e].source]++] = mine[e];
            if (mine[e].destination != mine[e].source)
                out[mine[e].destination][count[mine[e].destination]++] = mine[e];
        }
    }
    struct edge **in = failed ? NULL : calloc((size_t)size, sizeof *in);
    failed = failed || !in;
    /* Even after a local failure every process must exchange, or the others
     * would wait forever: a failed process sends empty lists. */
    if (failed && count)
        memset(count, 0, (size_t)size * sizeof *count);
    uint32_t ctx = hashi_comm_coll_context(parent);
    int nreq = 0;
    rc = MPI_SUCCESS;
    struct MPI_ABI_Request *req;
    int *zero_counts = failed ? calloc((size_t)size * 2, sizeof(int)) : NULL;
    int *sc = count ? count : zero_counts, *rcnt = count ? recv_count : zero_counts ? zero_counts + size : NULL;
    if (!sc || !rcnt || !reqs) {
        /* Nothing at all to exchange with: the job cannot go on consistently. */
        free(zero_counts);
        free(count);
        free(out);
        free(mine);
        free(reqs);
        free(in);
        return hashi_err_comm(func, comm_old, MPI_ERR_NO_MEM, "out of memory");
    }
    for (int q = 0; q < size && rc == MPI_SUCCESS; q++) {
        rc = hashi_irecv_internal(&rcnt[q], 1, MPI_INT, q, HASHI_TAG_DIST_GRAPH, parent, ctx, &req);
        if (rc == MPI_SUCCESS)
            reqs[nreq++] = req;
    }
    for (int q = 0; q < size && rc == MPI_SUCCESS; q++) {
        rc = hashi_isend_internal(&sc[q], 1, MPI_INT, q, HASHI_TAG_DIST_GRAPH, parent, ctx, &req);
        if (rc == MPI_SUCCESS)
            reqs[nreq++] = req;
    }
    int rc2 = hashi_waitall_internal(nreq, reqs);
    rc = rc != MPI_SUCCESS ? rc : rc2;
    nreq = 0;
    for (int q = 0; q < size && rc == MPI_SUCCESS; q++) {
        in[q] = malloc(((size_t)rcnt[q] + 1) * sizeof **in);
        if (!in[q])
            rc = MPI_ERR_NO_MEM; /* the others still send: receive into nothing is impossible */
        else
            rc = hashi_irecv_internal(in[q], (MPI_Count)rcnt[q] * 3, MPI_INT, q, HASHI_TAG_DIST_GRAPH, parent, ctx,
                                      &req);
        if (rc == MPI_SUCCESS)
            reqs[nreq++] = req;
    }
    for (int q = 0; q < size && rc == MPI_SUCCESS; q++) {
        rc = hashi_isend_internal(out && out[q] ? out[q] : NULL, (MPI_Count)sc[q] * 3, MPI_INT, q,
                                  HASHI_TAG_DIST_GRAPH, parent, ctx, &req);
        if (rc == MPI_SUCCESS)
            reqs[nreq++] = req;
    }
    rc2 = hashi_waitall_internal(nreq, reqs);
    rc = rc != MPI_SUCCESS ? rc : rc2;

    struct topology *t = NULL;
    if (rc == MPI_SUCCESS && !failed) {
        int indeg = 0, outdeg = 0, me = parent->rank;
        for (int q = 0; q < size; q++)
            for (int e = 0; e < rcnt[q]; e++) {
                indeg += in[q][e].destination == me;
                outdeg += in[q][e].source == me;
            }
        int *lists = malloc(((size_t)indeg + (size_t)outdeg) * 2 * sizeof *lists + 1);
        if (lists) {
            int *src = lists, *sw = src + indeg, *dst = sw + indeg, *dw = dst + outdeg, i = 0, o = 0;
            for (int q = 0; q < size; q++)
                for (int e = 0; e < rcnt[q]; e++) {
                    if (in[q][e].destination == me) {
                        src[i] = in[q][e].source;
                        sw[i++] = in[q][e].weight;
                    }
                    if (in[q][e].source == me) {
                        dst[o] = in[q][e].destination;
                        dw[o++] = in[q][e].weight;
                    }
                }
            t = dist_new(indeg, src, sw, outdeg, dst, dw, weighted);
            free(lists);
        }
    }
    for (int q = 0; q < size; q++) {
        if (out)
            free(out[q]);
        if (in)
            free(in[q]);
    }
    free(zero_counts);
    free(count);
    free(out);
    free(in);
    free(mine);
    free(reqs);
    if (rc != MPI_SUCCESS)
        return hashi_err_comm(func, comm_old, rc, "exchanging the graph's edges with the other members failed");
    return dist_finish(func, parent, comm_old, t, comm_dist_graph);
}

int hashi_impl_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
    static const char func[] = "MPI_Dist_graph_neighbors_count";
    int rc;
    struct topology *t = topo_call(func, comm, MPI_DIST_GRAPH, NULL, &rc);
    if (!t)
        return rc;
    if (!indegree || !outdegree || !weighted)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "indegree, outdegree or weighted is NULL");
    *indegree = t->indegree;
    *outdegree = t->outdegree;
    *weighted = t->weighted;
    return MPI_SUCCESS;
}

int hashi_impl_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                                    int maxoutdegree, int destinations[], int destweights[])
{
    static const char func[] = "MPI_Dist_graph_neighbors";
    int rc;
    struct topology *t = topo_call(func, comm, MPI_DIST_GRAPH, NULL, &rc);
    if (!t)
        return rc;
    if (maxindegree < t->indegree || maxoutdegree < t->outdegree)
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "maxindegree %d / maxoutdegree %d below the degrees %d / %d",
                              maxindegree, maxoutdegree, t->indegree, t->outdegree);
    if ((t->indegree && !sources) || (t->outdegree && !destinations))
        return hashi_err_comm(func, comm, MPI_ERR_ARG, "sources or destinations is NULL");
    memcpy(sources, t->sources, (size_t)t->indegree * sizeof *sources);
    memcpy(destinations, t->destinations, (size_t)t->outdegree * sizeof *destinations);
    if (t->weighted) {
        if (t->indegree && sourceweights && sourceweights != MPI_UNWEIGHTED && sourceweights != MPI_WEIGHTS_EMPTY)
            memcpy(sourceweights, t->in_weights, (size_t)t->indegree * sizeof *sourceweights);
        if (t->outdegree && destweights && destweights != MPI_UNWEIGHTED && destweights != MPI_WEIGHTS_EMPTY)
            memcpy(destweights, t->out_weights, (size_t)t->outdegree * sizeof *destweights);
    }
    return MPI_SUCCESS;
}
