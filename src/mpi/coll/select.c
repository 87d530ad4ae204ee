/*
 * The one place that chooses every collective's algorithm, from the message
 * size, the communicator size and whether the op commutes: the reduction
 * family and MPI_Bcast first, then the data-movement collectives. Thresholds and per-collective overrides
 * (HASHI_COLL_<NAME>=algorithm, for tests and tuning) are parameters
 * (runtime/params.def, "collectives"), read once.
 *
 * A communicator's info hints override the parameters for that communicator:
 * key hashi_coll_<collective>, a value of HASHI_COLL_<COLLECTIVE> (tests use
 * it to run every algorithm in one launch; the program must set the same
 * hints on every rank, like any hint the standard says must agree).
 *
 * Node-aware (two-level) algorithms: hashi_coll_hier_select decides first
 * (hier.c asks it), with HASHI_COLL_HIER and the value "hier" of the
 * per-collective parameters and hints; hashi_coll_select sees only the
 * flat cases.
 *
 * Every rank must choose the same algorithm: the inputs (bytes of the whole
 * vector, count, communicator size, the op) are the same on every rank of a
 * correct program. An override naming an algorithm that cannot run the case
 * (Rabenseifner with a non-commutative op, or with fewer elements than
 * ranks) falls back to the one that can.
 */
#include "mpi/coll/coll.h"
#include "mpi/coll/coll_data.h"

#include "device/device.h"
#include "mpi/info.h"
#include "runtime/params.h"
#include "runtime/rt.h"

#include <pthread.h>
#include <string.h>

enum hier_mode { HIER_AUTO, HIER_ON, HIER_OFF };

static struct {
    enum hashi_coll_alg bcast, reduce, allreduce, reduce_scatter, barrier;
    size_t bcast_long, reduce_long, allreduce_long, allreduce_ring, reduce_scatter_long, device_read_min;
    size_t device_segments_min, device_reduce_stage_max;
    enum hier_mode hier;
    size_t hier_max;
} conf;
static pthread_once_t conf_once = PTHREAD_ONCE_INIT;
static void data_conf_load(void);

static enum hashi_coll_alg alg_named(const char *name)
{
    static const struct { const char *name; enum hashi_coll_alg alg; } names[] = {
        { "binomial", HASHI_ALG_BINOMIAL },
        { "scatter_allgather", HASHI_ALG_SCATTER_ALLGATHER },
        { "pipeline", HASHI_ALG_PIPELINE },
        { "rabenseifner", HASHI_ALG_RABENSEIFNER },
        { "recursive_doubling", HASHI_ALG_RECURSIVE_DOUBLING },
        { "ring", HASHI_ALG_RING },
        { "recursive_halving", HASHI_ALG_RECURSIVE_HALVING },
        { "pairwise", HASHI_ALG_PAIRWISE },
        { "reduce_scatterv", HASHI_ALG_REDUCE_SCATTERV },
        { "dissemination", HASHI_ALG_DISSEMINATION },
        { "hier", HASHI_ALG_HIER },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0)
            return names[i].alg;
    return HASHI_ALG_AUTO;   /* "auto" (the table validated the value) */
}

static enum hier_mode hier_mode_named(const char *v)
{
    return !v ? HIER_AUTO : strcmp(v, "on") == 0 ? HIER_ON : strcmp(v, "off") == 0 ? HIER_OFF : HIER_AUTO;
}

static void conf_load(void)
{
    conf.bcast = alg_named(hashi_param_str(HASHI_P_COLL_BCAST));
    conf.reduce = alg_named(hashi_param_str(HASHI_P_COLL_REDUCE));
    conf.allreduce = alg_named(hashi_param_str(HASHI_P_COLL_ALLREDUCE));
    conf.reduce_scatter = alg_named(hashi_param_str(HASHI_P_COLL_REDUCE_SCATTER));
    conf.barrier = alg_named(hashi_param_str(HASHI_P_COLL_BARRIER));
    conf.bcast_long = (size_t)hashi_param_int(HASHI_P_COLL_BCAST_LONG);
    conf.reduce_long = (size_t)hashi_param_int(HASHI_P_COLL_REDUCE_LONG);
    conf.allreduce_long = (size_t)hashi_param_int(HASHI_P_COLL_ALLREDUCE_LONG);
    conf.allreduce_ring = (size_t)hashi_param_int(HASHI_P_COLL_ALLREDUCE_RING);
    conf.reduce_scatter_long = (size_t)hashi_param_int(HASHI_P_COLL_REDUCE_SCATTER_LONG);
    conf.device_read_min = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_READ_MIN);
    conf.device_segments_min = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_SEGMENTS_MIN);
    conf.device_reduce_stage_max = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_REDUCE_STAGE_MAX);
    conf.hier = hier_mode_named(hashi_param_str(HASHI_P_COLL_HIER));
    conf.hier_max = (size_t)hashi_param_int(HASHI_P_COLL_HIER_MAX);
    data_conf_load();
}

/* The communicator's hint for this collective, else its parameter, or AUTO. */
static enum hashi_coll_alg override(const struct MPI_ABI_Comm *c, enum hashi_alg_choice_for coll)
{
    static const char *const keys[] = {
        [HASHI_CHOOSE_BCAST] = "hashi_coll_bcast",
        [HASHI_CHOOSE_REDUCE] = "hashi_coll_reduce",
        [HASHI_CHOOSE_ALLREDUCE] = "hashi_coll_allreduce",
        [HASHI_CHOOSE_REDUCE_SCATTER] = "hashi_coll_reduce_scatter",
        [HASHI_CHOOSE_BARRIER] = "hashi_coll_barrier",
        [HASHI_CHOOSE_ALLGATHER] = "hashi_coll_allgather",
        [HASHI_CHOOSE_GATHER] = "hashi_coll_gather",
        [HASHI_CHOOSE_SCATTER] = "hashi_coll_scatter",
    };
    const char *v = c->info ? hashi_info_value(c->info, keys[coll]) : NULL;
    if (coll == HASHI_CHOOSE_ALLGATHER || coll == HASHI_CHOOSE_GATHER || coll == HASHI_CHOOSE_SCATTER) {
        /* Their flat algorithms are the data-movement selector's. */
        if (!v || strcmp(v, "auto") == 0)
            v = hashi_param_str(coll == HASHI_CHOOSE_ALLGATHER ? HASHI_P_COLL_ALLGATHER
                                : coll == HASHI_CHOOSE_GATHER  ? HASHI_P_COLL_GATHER
                                                               : HASHI_P_COLL_SCATTER);
        return strcmp(v, "hier") == 0 ? HASHI_ALG_HIER : strcmp(v, "auto") == 0 ? HASHI_ALG_AUTO : HASHI_ALG_FLAT;
    }
    enum hashi_coll_alg alg = v ? alg_named(v) : HASHI_ALG_AUTO;
    if (alg != HASHI_ALG_AUTO)
        return alg;
    switch (coll) {
    case HASHI_CHOOSE_BCAST: return conf.bcast;
    case HASHI_CHOOSE_REDUCE: return conf.reduce;
    case HASHI_CHOOSE_ALLREDUCE: return conf.allreduce;
    case HASHI_CHOOSE_REDUCE_SCATTER: return conf.reduce_scatter;
    case HASHI_CHOOSE_BARRIER: return conf.barrier;
    case HASHI_CHOOSE_ALLGATHER:
    case HASHI_CHOOSE_GATHER:
    case HASHI_CHOOSE_SCATTER:
    case HASHI_CHOOSE_KINDS: break;
    }
    return HASHI_ALG_AUTO;
}

static int pof2_floor(int n)
{
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

/* At 2 ranks Rabenseifner saves half of one reduction for a second message
 * round: measured on emu it loses below 64 KiB (16 KiB: 13.9 against 10.9 µs
 * for recursive doubling), ties at 64 KiB, wins above (256 KiB: 75 against
 * 81-109). */
#define ALLREDUCE_LONG_2RANKS ((size_t)64 << 10)

enum hashi_coll_alg hashi_coll_select(enum hashi_alg_choice_for coll, const struct MPI_ABI_Comm *c, size_t bytes,
                                      MPI_Count count, int commutative)
{
    pthread_once(&conf_once, conf_load);
    int n = c->size;
    enum hashi_coll_alg alg = override(c, coll);
    /* Here only when the two-level algorithm did not run (hier.c asked
     * hashi_coll_hier_select first): the thresholds choose. */
    if (alg == HASHI_ALG_HIER)
        alg = HASHI_ALG_AUTO;
    switch (coll) {
    case HASHI_CHOOSE_BARRIER:
        return HASHI_ALG_DISSEMINATION;
    case HASHI_CHOOSE_ALLGATHER:
    case HASHI_CHOOSE_GATHER:
    case HASHI_CHOOSE_SCATTER:
    case HASHI_CHOOSE_KINDS:
        return HASHI_ALG_FLAT;   /* hashi_coll_allgather_alg / _gather_alg / _scatter_alg choose */
    case HASHI_CHOOSE_BCAST:
        if (alg == HASHI_ALG_AUTO)
            alg = bytes >= conf.bcast_long && n >= 3 ? HASHI_ALG_SCATTER_ALLGATHER : HASHI_ALG_BINOMIAL;
        return alg;
    case HASHI_CHOOSE_REDUCE:
        /* Two ranks: the tree is one message; Rabenseifner would add a copy
         * and a second round for nothing (half the speed at 1 MiB). */
        if (alg == HASHI_ALG_AUTO)
            alg = bytes >= conf.reduce_long && n > 2 ? HASHI_ALG_RABENSEIFNER : HASHI_ALG_BINOMIAL;
        /* Rabenseifner splits the vector over a power of two of ranks and
         * combines blocks out of rank order. */
        if (alg == HASHI_ALG_RABENSEIFNER && (!commutative || count < pof2_floor(n) || n == 1))
            alg = HASHI_ALG_BINOMIAL;
        return alg;
    case HASHI_CHOOSE_ALLREDUCE:
        if (alg == HASHI_ALG_AUTO) {
            if (conf.allreduce_ring && bytes >= conf.allreduce_ring)
                alg = HASHI_ALG_RING;
            else if (bytes >= conf.allreduce_long && (n > 2 || bytes >= ALLREDUCE_LONG_2RANKS))
                alg = HASHI_ALG_RABENSEIFNER;
            else
                alg = HASHI_ALG_RECURSIVE_DOUBLING;
        }
        if (!commutative || n == 1)
            alg = HASHI_ALG_RECURSIVE_DOUBLING;
        else if (alg == HASHI_ALG_RABENSEIFNER && count < pof2_floor(n))
            alg = HASHI_ALG_RECURSIVE_DOUBLING;
        else if (alg == HASHI_ALG_RING && count < n)
            alg = HASHI_ALG_RECURSIVE_DOUBLING;
        return alg;
    case HASHI_CHOOSE_REDUCE_SCATTER:
        if (alg == HASHI_ALG_AUTO)
            alg = bytes >= conf.reduce_scatter_long ? HASHI_ALG_PAIRWISE : HASHI_ALG_RECURSIVE_HALVING;
        if (!commutative)
            alg = HASHI_ALG_REDUCE_SCATTERV;
        return alg;
    }
    return HASHI_ALG_AUTO;
}

int hashi_coll_device_reduction_ok(const struct MPI_ABI_Comm *c, int allreduce, size_t bytes, MPI_Count count,
                                   int commutative)
{
    pthread_once(&conf_once, conf_load);
    if (bytes <= hashi_device->coll.max_bytes)
        return 1;
    enum hashi_alg_choice_for coll = allreduce ? HASHI_CHOOSE_ALLREDUCE : HASHI_CHOOSE_REDUCE;
    if (override(c, coll) != HASHI_ALG_AUTO)
        return 0;
    /* Vectors that fit the device's stage, allreduce from 3 members and
     * reduce from 4 (at 3 the tree's two reads cost less than staging
     * every vector): each member reduces its segment out of the others'
     * stages in place, where the schedules and the reads hand the shared
     * cores over at every round (4 ranks on 2 cores, allreduce 64 KiB: 49
     * -> 29 us, reduce 128 KiB: 51 -> 41; docs/collectives.md). The device
     * applies the same rule (dn_reduce, dn_allreduce). */
    if (c->size > (allreduce ? 2 : 3) && bytes <= conf.device_reduce_stage_max)
        return 1;
    if (!conf.device_read_min || bytes < conf.device_read_min)
        return 0;
    /* Allreduce at 2 members: both read the other's vector and reduce it
     * locally, one exchange at every size where Rabenseifner needs two
     * (64 KiB: 27 -> 14 us, 256 KiB: 87 -> 47; docs/collectives.md). */
    if (allreduce && c->size == 2)
        return 1;
    /* From 3 members and HASHI_COLL_DEVICE_SEGMENTS_MIN: the device's
     * reduce-scatter and allgather (or gather) by reads, where Rabenseifner's
     * rendezvous copy as much and hand the cores over more often. */
    if (c->size > 2 && conf.device_segments_min && bytes >= conf.device_segments_min)
        return 1;
    /* A reduce on an oversubscribed node: the device's binomial tree of
     * reads at every size. Rabenseifner's reduce-scatter and gather hand the
     * shared cores over at each of their rendezvous (4 ranks on 2 cores:
     * 64 KiB 39 -> 23 us, 1 MiB 625 -> 500; docs/collectives.md). The same
     * answer on every member: the device serves only communicators within
     * one node. */
    if (!allreduce && hashi_job.oversubscribed)
        return 1;
    return hashi_coll_select(coll, c, bytes, count, commutative) ==
           (allreduce ? HASHI_ALG_RECURSIVE_DOUBLING : HASHI_ALG_BINOMIAL);
}

/*
 * Node-aware algorithms: a collective whose hint or parameter names a flat
 * algorithm stays flat; one naming "hier" runs on two levels whenever the
 * layout allows; "auto" follows the communicator's hint hashi_coll_hier,
 * else HASHI_COLL_HIER (auto: up to HASHI_COLL_HIER_MAX bytes; on: any
 * size; off: never). The layout allows it when the communicator spans more
 * than one node and some node holds more than one member; a non-commutative
 * op also needs every node's members to be consecutive ranks (then node
 * order is rank order). Every input is the same on every member, and so is
 * the layout (hier.c derives it from the launcher's node of every rank).
 */
struct hashi_coll_hier *hashi_coll_hier_select(enum hashi_alg_choice_for coll, struct MPI_ABI_Comm *c,
                                               const char *func, size_t bytes, int commutative, int *rc)
{
    pthread_once(&conf_once, conf_load);
    *rc = MPI_SUCCESS;
    if (c->size < 3)
        return NULL;   /* two nodes of one member each at most */
    enum hashi_coll_alg alg = override(c, coll);
    if (alg != HASHI_ALG_AUTO && alg != HASHI_ALG_HIER)
        return NULL;
    if (alg == HASHI_ALG_AUTO) {
        const char *v = c->info ? hashi_info_value(c->info, "hashi_coll_hier") : NULL;
        enum hier_mode mode = v ? hier_mode_named(v) : conf.hier;
        if (mode == HIER_OFF || (mode == HIER_AUTO && conf.hier_max && bytes > conf.hier_max))
            return NULL;
    }
    struct hashi_coll_hier *h = hashi_coll_hier_layout(c, func, rc);
    if (!h || !h->two_level || (!commutative && !h->in_order))
        return NULL;
    return h;
}

/* The two-level algorithm is asked for explicitly: the collective's hint
 * or parameter names hier, or hashi_coll_hier / HASHI_COLL_HIER says on. */
int hashi_coll_hier_forced(enum hashi_alg_choice_for coll, const struct MPI_ABI_Comm *c)
{
    pthread_once(&conf_once, conf_load);
    enum hashi_coll_alg alg = override(c, coll);
    if (alg != HASHI_ALG_AUTO)
        return alg == HASHI_ALG_HIER;
    const char *v = c->info ? hashi_info_value(c->info, "hashi_coll_hier") : NULL;
    return (v ? hier_mode_named(v) : conf.hier) == HIER_ON;
}

/* ---- data-movement collectives ----
 * Same order of precedence: the communicator's hint hashi_coll_<collective>,
 * then HASHI_COLL_<COLLECTIVE>, then the size thresholds. Alltoallv/w need
 * no agreement between ranks (see hashi_coll_alltoallv_alg). */

enum { FORCE_NONE = -1 };

static const char *const rooted_names[] = { [HASHI_ROOTED_BINOMIAL] = "binomial", [HASHI_ROOTED_LINEAR] = "linear" };
static const char *const allgather_names[] = { [HASHI_ALLGATHER_RECURSIVE_DOUBLING] = "recursive_doubling",
                                               [HASHI_ALLGATHER_BRUCK] = "bruck",
                                               [HASHI_ALLGATHER_RING] = "ring" };
static const char *const alltoall_names[] = { [HASHI_ALLTOALL_BRUCK] = "bruck",
                                              [HASHI_ALLTOALL_SCATTERED] = "scattered",
                                              [HASHI_ALLTOALL_PAIRWISE] = "pairwise" };
#define NAMES(a) (a), (int)(sizeof(a) / sizeof((a)[0]))

/* The algorithm a name stands for, or FORCE_NONE ("auto", NULL, unknown). */
static int named(const char *v, const char *const names[], int n)
{
    for (int i = 0; v && i < n; i++)
        if (names[i] && strcmp(v, names[i]) == 0)
            return i;
    return FORCE_NONE;
}

static struct {
    int gather, scatter, allgather, alltoall, alltoallv;   /* forced by parameter, or FORCE_NONE */
    size_t gather_long, scatter_long, allgather_long;
    size_t alltoall_short, alltoall_long;
    int alltoall_bruck_min, alltoall_window;
    size_t device_read_min[HASHI_DEVICE_ALLTOALL + 1], device_read_max[HASHI_DEVICE_ALLTOALL + 1];
    int device_read_ranks;
    size_t bcast_tree_min, many_read_min, blocks_stage_max;
    int device_exchange;
} data_conf;

static void data_conf_load(void)
{
    data_conf.gather = named(hashi_param_str(HASHI_P_COLL_GATHER), NAMES(rooted_names));
    data_conf.scatter = named(hashi_param_str(HASHI_P_COLL_SCATTER), NAMES(rooted_names));
    data_conf.allgather = named(hashi_param_str(HASHI_P_COLL_ALLGATHER), NAMES(allgather_names));
    data_conf.alltoall = named(hashi_param_str(HASHI_P_COLL_ALLTOALL), NAMES(alltoall_names));
    data_conf.alltoallv = named(hashi_param_str(HASHI_P_COLL_ALLTOALLV), NAMES(alltoall_names));
    data_conf.gather_long = (size_t)hashi_param_int(HASHI_P_COLL_GATHER_LONG);
    data_conf.scatter_long = (size_t)hashi_param_int(HASHI_P_COLL_SCATTER_LONG);
    data_conf.allgather_long = (size_t)hashi_param_int(HASHI_P_COLL_ALLGATHER_LONG);
    data_conf.alltoall_short = (size_t)hashi_param_int(HASHI_P_COLL_ALLTOALL_SHORT);
    data_conf.alltoall_long = (size_t)hashi_param_int(HASHI_P_COLL_ALLTOALL_LONG);
    data_conf.alltoall_bruck_min = (int)hashi_param_int(HASHI_P_COLL_ALLTOALL_BRUCK_MIN);
    int w = (int)hashi_param_int(HASHI_P_COLL_ALLTOALL_WINDOW);
    data_conf.alltoall_window = w < 1 ? 1 : w;
    data_conf.device_read_min[HASHI_DEVICE_BCAST] = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_BCAST_READ_MIN);
    data_conf.device_read_min[HASHI_DEVICE_ALLGATHER] = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_ALLGATHER_READ_MIN);
    data_conf.device_read_min[HASHI_DEVICE_ALLTOALL] = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_ALLTOALL_READ_MIN);
    data_conf.device_read_max[HASHI_DEVICE_BCAST] = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_BCAST_READ_MAX);
    data_conf.device_read_ranks = (int)hashi_param_int(HASHI_P_COLL_DEVICE_READ_RANKS);
    data_conf.bcast_tree_min = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_BCAST_TREE_MIN);
    data_conf.many_read_min = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_MANY_READ_MIN);
    data_conf.blocks_stage_max = (size_t)hashi_param_int(HASHI_P_COLL_DEVICE_BLOCKS_STAGE_MAX);
    data_conf.device_exchange = (int)hashi_param_int(HASHI_P_COLL_DEVICE_EXCHANGE);
}

/* The hint on c, else the parameter: the forced algorithm or FORCE_NONE. */
static int forced(const struct MPI_ABI_Comm *c, const char *key, int param, const char *const names[], int n)
{
    pthread_once(&conf_once, conf_load);
    int alg = c->info ? named(hashi_info_value(c->info, key), names, n) : FORCE_NONE;
    return alg != FORCE_NONE ? alg : param;
}

/* Gather / Scatter on two levels: blocks below the collective's long
 * threshold only, unless the two-level algorithm is asked for by name: for
 * large blocks the flat linear algorithm moves each block once, the two
 * levels twice. */
int hashi_coll_hier_rooted_fits(enum hashi_alg_choice_for coll, const struct MPI_ABI_Comm *c, size_t block_bytes)
{
    pthread_once(&conf_once, conf_load);
    size_t long_bytes = coll == HASHI_CHOOSE_GATHER ? data_conf.gather_long : data_conf.scatter_long;
    return block_bytes < long_bytes || hashi_coll_hier_forced(coll, c);
}

enum hashi_rooted_alg hashi_coll_gather_alg(const struct MPI_ABI_Comm *c, size_t block_bytes)
{
    int alg = forced(c, "hashi_coll_gather", data_conf.gather, NAMES(rooted_names));
    if (alg != FORCE_NONE)
        return (enum hashi_rooted_alg)alg;
    return block_bytes < data_conf.gather_long ? HASHI_ROOTED_BINOMIAL : HASHI_ROOTED_LINEAR;
}

enum hashi_rooted_alg hashi_coll_scatter_alg(const struct MPI_ABI_Comm *c, size_t block_bytes)
{
    int alg = forced(c, "hashi_coll_scatter", data_conf.scatter, NAMES(rooted_names));
    if (alg != FORCE_NONE)
        return (enum hashi_rooted_alg)alg;
    return block_bytes < data_conf.scatter_long ? HASHI_ROOTED_BINOMIAL : HASHI_ROOTED_LINEAR;
}

enum hashi_allgather_alg hashi_coll_allgather_alg(const struct MPI_ABI_Comm *c, size_t block_bytes)
{
    int n = c->size, pow2 = (n & (n - 1)) == 0;
    int alg = forced(c, "hashi_coll_allgather", data_conf.allgather, NAMES(allgather_names));
    if (alg == FORCE_NONE) {
        if (block_bytes >= data_conf.allgather_long)
            alg = HASHI_ALLGATHER_RING;
        else
            alg = pow2 ? HASHI_ALLGATHER_RECURSIVE_DOUBLING : HASHI_ALLGATHER_BRUCK;
    }
    /* Recursive doubling needs a power of two; Bruck is its any-size form. */
    if (alg == HASHI_ALLGATHER_RECURSIVE_DOUBLING && !pow2)
        alg = HASHI_ALLGATHER_BRUCK;
    return (enum hashi_allgather_alg)alg;
}

enum hashi_alltoall_alg hashi_coll_alltoall_alg(const struct MPI_ABI_Comm *c, size_t block_bytes)
{
    int alg = forced(c, "hashi_coll_alltoall", data_conf.alltoall, NAMES(alltoall_names));
    if (alg != FORCE_NONE)
        return (enum hashi_alltoall_alg)alg;
    if (block_bytes <= data_conf.alltoall_short && c->size >= data_conf.alltoall_bruck_min)
        return HASHI_ALLTOALL_BRUCK;
    return block_bytes >= data_conf.alltoall_long ? HASHI_ALLTOALL_PAIRWISE : HASHI_ALLTOALL_SCATTERED;
}

/* Any mix of scattered and pairwise across ranks is correct: both exchange
 * with peer rank + i / rank - i for i = 1 .. n-1 in increasing order, so a
 * message only ever waits for the same i on the other side. Bruck needs
 * uniform blocks: never here. */
enum hashi_alltoall_alg hashi_coll_alltoallv_alg(const struct MPI_ABI_Comm *c, size_t max_block_bytes)
{
    int alg = forced(c, "hashi_coll_alltoallv", data_conf.alltoallv, NAMES(alltoall_names));
    if (alg == FORCE_NONE)
        alg = max_block_bytes >= data_conf.alltoall_long ? HASHI_ALLTOALL_PAIRWISE : HASHI_ALLTOALL_SCATTERED;
    return alg == HASHI_ALLTOALL_BRUCK ? HASHI_ALLTOALL_SCATTERED : (enum hashi_alltoall_alg)alg;
}

int hashi_coll_device_exchange_ok(const struct MPI_ABI_Comm *c, int alltoallv)
{
    pthread_once(&conf_once, conf_load);
    return data_conf.device_exchange &&
           (!alltoallv || forced(c, "hashi_coll_alltoallv", data_conf.alltoallv, NAMES(alltoall_names)) == FORCE_NONE);
}

int hashi_coll_alltoall_window(void)
{
    pthread_once(&conf_once, conf_load);
    return data_conf.alltoall_window;
}

/*
 * Blocking MPI_Bcast, MPI_Allgather, MPI_Alltoall on the device: up to its
 * max_bytes always (dimmnet: LLCM slots); above, from the collective's
 * HASHI_COLL_DEVICE_<X>_READ_MIN on communicators of at most
 * HASHI_COLL_DEVICE_READ_RANKS members where no hint or parameter names an
 * algorithm: there the members read each other's buffers single-copy
 * (dimmnet: CMA), which beats the schedules' eager copies through a ring
 * and their rendezvous handshakes (docs/collectives.md, "Sixth session").
 * A broadcast to one reader only up to HASHI_COLL_DEVICE_BCAST_READ_MAX:
 * larger, the rendezvous splits the copy between both ranks, where the read
 * has the receiver copy it all; to more, from
 * HASHI_COLL_DEVICE_BCAST_TREE_MIN at any size (the device's tree of reads).
 * Allgather and alltoall on larger communicators from
 * HASHI_COLL_DEVICE_MANY_READ_MIN; from 3 members at any size above the
 * slots where what a member hands the others (alltoall: its blocks for
 * them; allgather: its block) is at most HASHI_COLL_DEVICE_BLOCKS_STAGE_MAX:
 * the device copies it through the member's stage.
 */
int hashi_coll_device_data_ok(enum hashi_coll_device_data coll, const struct MPI_ABI_Comm *c, size_t bytes)
{
    if (bytes <= hashi_device->coll.max_bytes)
        return 1;
    pthread_once(&conf_once, conf_load);
    size_t min = data_conf.device_read_min[coll], max = data_conf.device_read_max[coll];
    if (coll == HASHI_DEVICE_BCAST && c->size > 2) {
        /* The device's tree of reads: one reader per buffer at a time. */
        min = data_conf.bcast_tree_min;
        max = 0;
    } else if (c->size > data_conf.device_read_ranks) {
        /* Oversubscribed, every member's reads of 16 KiB cost as much as
         * the schedules' eager copies; from 32 KiB they win (4 ranks on 2
         * cores, alltoall 48 KiB: 59 -> 39 us). */
        min = data_conf.many_read_min;
    }
    /* From 3 members, what a member hands the others fits the device's
     * stage (its blocks for them, or its one block): the device copies it
     * through the stage, cheaper than reads or the schedules' messages. */
    size_t staged_bytes = coll == HASHI_DEVICE_ALLTOALL ? bytes * (size_t)(c->size - 1) : bytes;
    int staged = coll != HASHI_DEVICE_BCAST && c->size > 2 && staged_bytes <= data_conf.blocks_stage_max;
    if (!staged && (!min || bytes < min || (max && bytes > max)))
        return 0;
    switch (coll) {
    case HASHI_DEVICE_BCAST:
        return override(c, HASHI_CHOOSE_BCAST) == HASHI_ALG_AUTO;
    case HASHI_DEVICE_ALLGATHER:
        return override(c, HASHI_CHOOSE_ALLGATHER) == HASHI_ALG_AUTO;
    case HASHI_DEVICE_ALLTOALL:
        return forced(c, "hashi_coll_alltoall", data_conf.alltoall, NAMES(alltoall_names)) == FORCE_NONE;
    }
    return 0;
}
