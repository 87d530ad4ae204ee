/*
 * suite: many point-to-point test programs in one launch (one MPI_Init, one
 * MPI_Finalize), so a cell pays its start-up once per rank count instead of
 * once per program (on the fabric and ofi cells libfabric's initialisation
 * alone costs about 0.35 s per process).
 *
 *   mpirun -n N test/p2p/suite [part[:arg] ...]     (no part: every part)
 *
 * Each part is a program of test/p2p compiled by test/p2p/parts/<part>.c.
 * Between parts: the part must have reported ok and called MPI_Finalize
 * once; every rank is past it (barrier); it left no message behind (a stray
 * one would be matched by a later part's wildcard receive); the error
 * handlers of MPI_COMM_WORLD and MPI_COMM_SELF are fatal again. A failure
 * names the part's source file and line (CHECK). Prints "rank R of S ok"
 * once, after the last part.
 */
#include "p2p_util.h"
#include "suite_part.h"

#define PARTS(X)                                                                                               \
    X(integrity) X(ordering) X(anysource) X(truncate) X(errors) X(issend) X(probe) X(cancel) X(persistent)     \
    X(many) X(completion) X(datatypes) X(bsend) X(sendrecv) X(procnull) X(greq) X(stress) X(allsend) X(window)

#define DECLARE(name) int p2p_part_##name(int argc, char **argv);
PARTS(DECLARE)

static const struct part {
    const char *name;
    int (*run)(int argc, char **argv);
} parts[] = {
#define ENTRY(name) { #name, p2p_part_##name },
    PARTS(ENTRY)
};
#define NPARTS (sizeof parts / sizeof parts[0])

static const char *current;       /* the part running */
static int inits, finalizes, oks; /* its calls */

int p2p_suite_part_init(void)
{
    CHECK(inits++ == 0, "part %s called MPI_Init twice", current);
    return MPI_SUCCESS;
}

int p2p_suite_part_finalize(void)
{
    CHECK(finalizes++ == 0, "part %s called MPI_Finalize twice", current);
    return MPI_Barrier(MPI_COMM_WORLD);   /* collective, like the real one */
}

void p2p_suite_part_ok(void)
{
    oks++;
}

static const struct part *find_part(const char *name, size_t len)
{
    for (size_t i = 0; i < NPARTS; i++)
        if (strlen(parts[i].name) == len && memcmp(parts[i].name, name, len) == 0)
            return &parts[i];
    return NULL;
}

static void run_part(const struct part *p, char *arg)
{
    char *argv[3] = { (char *)p->name, arg, NULL };
    current = p->name;
    inits = finalizes = oks = 0;
    int rc = p->run(arg ? 2 : 1, argv);
    CHECK(rc == 0, "part %s returned %d", p->name, rc);
    CHECK(inits == 1 && finalizes == 1 && oks == 1, "part %s: %d MPI_Init, %d MPI_Finalize, %d ok (1 each expected)",
          p->name, inits, finalizes, oks);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    /* Everyone past the part, then nothing of it may still be waiting here. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int stray = 0;
    MPI_Status st;
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &stray, &st));
    CHECK(!stray, "part %s left a message behind (from rank %d, tag %d)", p->name, st.MPI_SOURCE, st.MPI_TAG);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    CHECK(PMPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init failed");
    if (argc < 2) {
        for (size_t i = 0; i < NPARTS; i++)
            run_part(&parts[i], NULL);
    } else {
        for (int a = 1; a < argc; a++) {
            char *colon = strchr(argv[a], ':');
            size_t len = colon ? (size_t)(colon - argv[a]) : strlen(argv[a]);
            const struct part *p = find_part(argv[a], len);
            CHECK(p, "no part named %.*s", (int)len, argv[a]);
            run_part(p, colon ? colon + 1 : NULL);
        }
    }
    current = NULL;
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    printf("rank %d of %d ok\n", rank, size);
    fflush(stdout);
    CHECK(PMPI_Finalize() == MPI_SUCCESS, "MPI_Finalize failed");
    return 0;
}
