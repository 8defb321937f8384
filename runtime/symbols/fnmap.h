/*
 * runtime/symbols/fnmap.h - the function-id map of the -finstrument-functions hooks, and the function
 * lines of the .map sidecar for every hook style.
 *
 * Ids: a function's address gets an id the first time any thread calls it, 1, 2, 3, ... in
 * that order; the same address keeps its id for the life of the process (sessions and
 * flushes included). Two threads that meet a new function at the same moment may each take
 * an id; one wins, the other id is never used (a gap in the numbering, never a duplicate).
 * When no id can be given the event is recorded with FNMAP_ID_NONE, so entries and exits stay
 * balanced, and the cause is counted, reported once on stderr and listed in the .map file:
 *   overflow   more distinct functions than 28-bit ids (FNMAP_ID_NONE - 1 of them)
 *   no_memory  a chunk of nodes or the hash table could not be allocated
 *   reentrant  a signal handler ran instrumented code while its thread was creating the map
 *
 * Function lines of the .map sidecar (one per id; tab-separated, written by flush):
 *   functions  <source> <count>          source: cyg (ids from this map) or xray (XRay's ids)
 *   function   <id> <name> <address> <module> <module_vaddr>
 *   functions_unnamed     <count>        functions listed with name <unknown>
 *   functions_unassigned  <cause> <lookups>   (only causes that happened)
 *   name:    the symbol (C++ names stay mangled), "<unknown>" when no symbol covers the
 *            address, "<unassigned>" for FNMAP_ID_NONE; control characters become '?'
 *   address: 0x-hex, as the process saw it;  module: the file mapped there, "-" if none;
 *   module_vaddr: 0x-hex address inside that file (for addr2line -e module), "-" if unknown.
 */
#ifndef XFDR_RUNTIME_SYMBOLS_FNMAP_H
#define XFDR_RUNTIME_SYMBOLS_FNMAP_H

#include <stdint.h>

#include "runtime/symbols/fnmap_fast.h"
#include "runtime/symbols/symbolizer.h"
#include "runtime/base/print.h"
#include "xfdr/format.h"

/* The largest 28-bit id: recorded when no id can be given. Never given to a function. */
#define FNMAP_ID_NONE XFDR_FUNCTION_ID_MAX
#define FNMAP_ID_FIRST 1u

enum fnmap_unassigned_cause {
	FNMAP_OVERFLOW = 0,
	FNMAP_NO_MEMORY = 1,
	FNMAP_REENTRANT = 2,
	FNMAP_CAUSES = 3,
};

/* Ids handed out so far (gaps from lost races included): the next id is this + 1. */
uint32_t fnmap_ids_given(void);

/* The address that owns id, 0 if none. Context: any, async-signal-safe. */
uintptr_t fnmap_addr_of(uint32_t id);

/* Lookups that got FNMAP_ID_NONE for this cause. */
uint64_t fnmap_unassigned(enum fnmap_unassigned_cause cause);

/*
 * fnmap_test_set_limit - tests only: ids from `first_refused` on are refused as overflow, so
 * the overflow path can be reached without 2^28 functions. 0 restores the real limit.
 */
void fnmap_test_set_limit(uint32_t first_refused);

/* ---- writing function lines --------------------------------------------------------------- */

struct fnmap_writer {
	int fd;
	int rc; /* first error (negative errno); later writes are skipped */
	struct pr_buf b;
	struct sym_table sym;
	int sym_ok;
	uint64_t listed;
	uint64_t unnamed;
};

/*
 * fnmap_writer_open - start writing function lines to fd (buffered; symbols are read from
 * the mapped files as needed). Context: async-signal-safe (open, read, mmap, write only).
 * Returns 0 or -ENOMEM (then nothing is written and close need not be called).
 */
int fnmap_writer_open(struct fnmap_writer *w, int fd);

/* "key<TAB>text<TAB>value" */
void fnmap_writer_kv(struct fnmap_writer *w, const char *key, const char *text, uint64_t value);

/* One "function" line for id at addr, with its name and module resolved now. */
void fnmap_writer_function(struct fnmap_writer *w, uint32_t id, uintptr_t addr);

/* Write what is buffered and the functions_unnamed line; release. Returns 0 or -errno. */
int fnmap_writer_close(struct fnmap_writer *w);

/* The lines of the cyg ids (nothing if the hooks never ran). */
void fnmap_list_functions(struct fnmap_writer *w);

/* The lines of XRay's ids (hooks/xray.c; nothing unless xfdr patched XRay's sleds). */
void hook_xray_list_functions(struct fnmap_writer *w);
/* XRay function ids to list: 0 unless xfdr patched the sleds at least once. */
uint32_t hook_xray_function_count(void);

#endif /* XFDR_RUNTIME_SYMBOLS_FNMAP_H */
