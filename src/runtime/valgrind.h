/*
 * Memcheck annotations. A peer's single-copy write (process_vm_writev: a
 * rendezvous PUT into a posted receive buffer) changes this process's memory
 * without any instruction of its own, so memcheck would keep flagging the
 * bytes as never written. The receiver declares them defined once the
 * transfer is complete. Without valgrind's header (or outside valgrind, where
 * the client request is a few no-op instructions) this costs nothing.
 */
#ifndef HASHI_RUNTIME_VALGRIND_H
#define HASHI_RUNTIME_VALGRIND_H

#include "hashi_config.h"

#ifdef HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#define hashi_vg_written_by_peer(addr, len) ((void)VALGRIND_MAKE_MEM_DEFINED((addr), (len)))
#else
#define hashi_vg_written_by_peer(addr, len) ((void)(addr), (void)(len))
#endif

#endif
