/*
 * suite: one-sided programs in one launch per (cell, rank count); see
 * util/suite_main.h. Part <name> is rma/<name>.c compiled through
 * rma/parts/<name>.c (rma_shm takes its mode: rma_shm:shm or rma_shm:off).
 */
#define SUITE_PARTS(X) X(rma_data) X(rma_errors) X(rma_shm)

#include "../util/suite_main.h"
