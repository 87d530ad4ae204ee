/* Where this process may run, and whether ranks outnumber the cores they share. */
#ifndef HASHI_RUNTIME_TOPO_H
#define HASHI_RUNTIME_TOPO_H

#include <stddef.h>

/* The CPUs this process may run on, as a list string "0-3,6". */
void hashi_topo_affinity_string(char *buf, size_t len);

/*
 * Decide hashi_job.oversubscribed: the ranks on this node publish their CPU
 * sets in the modex; if the union has fewer CPUs than local ranks, they share
 * cores and must yield or block while waiting. HASHI_OVERSUBSCRIBED overrides.
 * topo_publish before the exchange, topo_decide after it.
 */
int hashi_topo_publish(void);
void hashi_topo_decide(void);

/*
 * Before the exchange, from what this rank sees alone: whether topo_decide
 * may find it oversubscribed (devices then open a CQ wait object it can
 * sleep on). Exact for ranks nobody bound (they share one CPU set); a rank
 * bound to a single CPU is taken for one a launcher placed on a core of its
 * own (launchers bind only when every rank has one), unless the machine's
 * CPUs are fewer than its ranks.
 */
int hashi_topo_may_oversubscribe(void);

#endif
