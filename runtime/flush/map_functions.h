/*
 * runtime/flush/map_functions.h - the function lines of the .map sidecar (doc/map-format.md):
 * which function each id of the trace is, with its symbol, address and module.
 *
 * Two id spaces can appear. The -finstrument-functions ids come from the id map in
 * runtime/symbols/ (a lower layer: listed by calling it). XRay's ids belong to compiler-rt
 * and are known only to the XRay hook, a higher layer: it registers them here, so that the
 * .map writer never calls up into a hook.
 */
#ifndef XFDR_RUNTIME_FLUSH_MAP_FUNCTIONS_H
#define XFDR_RUNTIME_FLUSH_MAP_FUNCTIONS_H

#include <stdint.h>

#include "runtime/base/print.h"
#include "runtime/symbols/namer.h"
#include "runtime/symbols/symbolizer.h"

/* The longest "function" line: its name and module are cut to 4096 bytes each. */
#define MAP_FN_LINE_BYTES (8u * 1024u + 256u)

/*
 * A space of function ids 1 .. count() that a hook owns: the .map lists it as
 * "functions <name> <count>" and one "function" line per id whose address is not 0.
 * Both callbacks must be async-signal-safe (a flush may run in a signal handler).
 */
struct map_fn_source {
	const char *name;
	uint32_t (*count)(void);
	uintptr_t (*addr_of)(uint32_t id);
	/*
	 * The addresses of ids 1 .. table_count in memory, or NULL: what a core dump keeps of
	 * this source (runtime/flush/names_directory.c); without it, its ids have no names in a
	 * trace rebuilt from a core.
	 */
	const uint64_t *table;
	uint32_t table_count;
};

/*
 * map_fn_register - list src in every later .map, before the -finstrument-functions ids and
 * after the sources registered earlier, and in the names directory. src must live as long as
 * the process. Context: init or start (serialised), not a signal handler racing a flush of
 * the same source.
 * Returns 0, or -ENOSPC when MAP_FN_SOURCES_MAX are registered already.
 */
#define MAP_FN_SOURCES_MAX 4
int map_fn_register(const struct map_fn_source *src);

/* map_fn_source_at - the i-th registered source, NULL if none (yet). Context: any. */
const struct map_fn_source *map_fn_source_at(uint32_t i);

/*
 * map_write_functions - append the function lines of every registered source and of the
 * -finstrument-functions id map to fd (nothing when there are no functions). Prints one
 * stderr line when some functions could not be named, unless the last line gave that count.
 * Context: async-signal-safe (reads /proc/self/maps and the mapped files' symbol tables with
 * open/read/mmap; no lock, no malloc). Returns 0 or a negative errno of write(2) or -ENOMEM.
 */
int map_write_functions(int fd);

/*
 * map_fn_namer_line - append the "function" line of id at addr to b, which has room for
 * MAP_FN_LINE_BYTES more, named through nm (one line at a time: the live map,
 * runtime/flush/livemap.c). Context: async-signal-safe; one caller at a time per namer.
 */
void map_fn_namer_line(struct sym_namer *nm, struct pr_buf *b, uint32_t id, uintptr_t addr);

#endif /* XFDR_RUNTIME_FLUSH_MAP_FUNCTIONS_H */
