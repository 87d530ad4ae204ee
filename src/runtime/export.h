/* The library is built with -fvisibility=hidden: only the MPI API and the few
 * hashi_* entry points the tools (mpirun, hashi_info) use are exported. */
#ifndef HASHI_RUNTIME_EXPORT_H
#define HASHI_RUNTIME_EXPORT_H
#define HASHI_EXPORT __attribute__((visibility("default")))
#endif
