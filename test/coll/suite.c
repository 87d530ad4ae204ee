/*
 * suite: the collective programs below in one launch per (cell, rank count);
 * see util/suite_main.h. Part <name> is coll/<name>.c compiled through
 * coll/parts/<name>.c.
 */
#define SUITE_PARTS(X) X(reductions) X(ops) X(overlap) X(errors) X(icoll)

#include "../util/suite_main.h"
