/*
 * suite: the data-movement collective programs in one launch per (cell,
 * rank count); see util/suite_main.h. Part <name> is colldata/<name>.c
 * compiled through colldata/parts/<name>.c.
 */
#define SUITE_PARTS(X) X(colldata) X(neighbor)

#include "../util/suite_main.h"
