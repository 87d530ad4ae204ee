/*
 * suite: the point-to-point programs below in one launch per (cell, rank
 * count); see util/suite_main.h. Part <name> is p2p/<name>.c compiled
 * through p2p/parts/<name>.c.
 */
#define SUITE_PARTS(X)                                                                                         \
    X(integrity) X(ordering) X(anysource) X(truncate) X(errors) X(issend) X(probe) X(cancel) X(persistent)     \
    X(many) X(completion) X(datatypes) X(bsend) X(sendrecv) X(procnull) X(greq) X(stress) X(allsend) X(window)

#include "../util/suite_main.h"
