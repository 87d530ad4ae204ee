/* Info objects inside the library: communicator hints, MPI_INFO_ENV. */
#ifndef HASHI_MPI_INFO_H
#define HASHI_MPI_INFO_H

#include <mpi.h>

struct MPI_ABI_Info;

/* The object behind a handle (MPI_INFO_ENV included), or NULL for
 * MPI_INFO_NULL and anything that is not an info object. */
struct MPI_ABI_Info *hashi_info_get(MPI_Info h);
/* A new object with the entries of `from` (NULL: empty); NULL when out of memory. */
struct MPI_ABI_Info *hashi_info_copy(const struct MPI_ABI_Info *from);
/* Set key to value (replacing); 0, or -1 when out of memory. */
int hashi_info_put(struct MPI_ABI_Info *info, const char *key, const char *value);
/* Set every entry of `from` in `to`; 0 or -1. */
int hashi_info_merge(struct MPI_ABI_Info *to, const struct MPI_ABI_Info *from);
/* The value of key, or NULL. */
const char *hashi_info_value(const struct MPI_ABI_Info *info, const char *key);
void hashi_info_destroy(struct MPI_ABI_Info *info);

#endif
