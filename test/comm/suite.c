/*
 * suite: the communicator programs below in one launch per (cell, rank
 * count); see util/suite_main.h. Part <name> is comm/<name>.c compiled
 * through comm/parts/<name>.c. Not attrs: it checks what the real
 * MPI_Finalize does (the delete callbacks of MPI_COMM_SELF's attributes).
 */
#define SUITE_PARTS(X)                                                                                         \
    X(groups) X(split) X(dup_free) X(compare_attrs) X(barrier) X(errors) X(idup) X(surface) X(topo) X(inter)

#include "../util/suite_main.h"
