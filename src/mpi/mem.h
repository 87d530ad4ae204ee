/* Memory for communication buffers (MPI_Alloc_mem), mem.c. */
#ifndef HASHI_MPI_MEM_H
#define HASHI_MPI_MEM_H

#include <stddef.h>

/* `size` bytes, page-aligned; large blocks 2 MiB-aligned with huge pages
 * advised. Size 0 gives a distinct block. NULL when out of memory. */
void *hashi_mem_alloc(size_t size);
/* Free a block from hashi_mem_alloc (NULL is fine). */
void hashi_mem_free(void *p);

#endif
