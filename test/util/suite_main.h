/*
 * The main of a suite program: several test programs in one launch (one
 * MPI_Init, one MPI_Finalize), so a cell pays its start-up once per rank
 * count instead of once per program (on the fabric and ofi cells
 * libfabric's initialisation alone costs about 0.35 s per process).
 *
 *   mpirun -n N test/<dir>/suite [part[:arg] ...]     (no part: every part)
 *
 * The including file defines SUITE_PARTS(X), X(name) for each part; part
 * `name` is its program compiled through test/<dir>/parts/<name>.c (see
 * util/suite.h). Between parts: the part must have called MPI_Init,
 * MPI_Finalize and report_ok exactly once; every rank is past it (barrier);
 * it left no message behind (a stray one would be matched by a later part's
 * wildcard receive); the error handlers of MPI_COMM_WORLD and MPI_COMM_SELF
 * are fatal again. A failure names the part's file and line (CHECK). Prints
 * "rank R of S ok" once, after the last part.
 */
#ifndef HASHI_TEST_SUITE_MAIN_H
#define HASHI_TEST_SUITE_MAIN_H

#include <string.h>

#include "check.h"
#include "suite.h"

#define SUITE_DECLARE(name) int suite_part_##name(int argc, char **argv);
SUITE_PARTS(SUITE_DECLARE)

static const struct suite_part {
    const char *name;
    int (*run)(int argc, char **argv);
} suite_parts[] = {
#define SUITE_ENTRY(name) { #name, suite_part_##name },
    SUITE_PARTS(SUITE_ENTRY)
};
#define SUITE_NPARTS (sizeof suite_parts / sizeof suite_parts[0])

static const char *suite_current;             /* the part running */
static int suite_inits, suite_finalizes, suite_oks; /* its calls */

int suite_part_init(void)
{
    CHECK(suite_inits++ == 0, "part %s called MPI_Init twice", suite_current);
    return MPI_SUCCESS;
}

int suite_part_finalize(void)
{
    CHECK(suite_finalizes++ == 0, "part %s called MPI_Finalize twice", suite_current);
    return MPI_Barrier(MPI_COMM_WORLD);   /* collective, like the real one */
}

void suite_part_ok(void)
{
    suite_oks++;
}

static const struct suite_part *suite_find(const char *name, size_t len)
{
    for (size_t i = 0; i < SUITE_NPARTS; i++)
        if (strlen(suite_parts[i].name) == len && memcmp(suite_parts[i].name, name, len) == 0)
            return &suite_parts[i];
    return NULL;
}

static void suite_run(const struct suite_part *p, char *arg)
{
    char *argv[3] = { (char *)p->name, arg, NULL };
    suite_current = p->name;
    suite_inits = suite_finalizes = suite_oks = 0;
    int rc = p->run(arg ? 2 : 1, argv);
    CHECK(rc == 0, "part %s returned %d", p->name, rc);
    CHECK(suite_inits == 1 && suite_finalizes == 1 && suite_oks == 1,
          "part %s: %d MPI_Init, %d MPI_Finalize, %d ok (1 each expected)", p->name, suite_inits, suite_finalizes,
          suite_oks);
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
        for (size_t i = 0; i < SUITE_NPARTS; i++)
            suite_run(&suite_parts[i], NULL);
    } else {
        for (int a = 1; a < argc; a++) {
            char *colon = strchr(argv[a], ':');
            size_t len = colon ? (size_t)(colon - argv[a]) : strlen(argv[a]);
            const struct suite_part *p = suite_find(argv[a], len);
            CHECK(p, "no part named %.*s", (int)len, argv[a]);
            suite_run(p, colon ? colon + 1 : NULL);
        }
    }
    suite_current = NULL;
    report_ok();
    CHECK(PMPI_Finalize() == MPI_SUCCESS, "MPI_Finalize failed");
    return 0;
}

#endif
