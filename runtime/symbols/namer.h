/*
 * runtime/symbols/namer.h - name code addresses one at a time, keeping a snapshot of the
 * mappings between lookups (the symbolizer, symbolizer.h, takes one per walk).
 *
 * For the callers that name functions as they appear: the live .map's function lines
 * (runtime/flush/livemap.c) and the function filter's decisions (fnfilter.c). The snapshot is
 * taken at the first lookup, taken again when the program called dlclose() since, or when an
 * address lies in no file of it (a library loaded since), unless a fresh snapshot for such an
 * address did not help in the last second: reading /proc/self/maps for every function of a
 * code generator would cost more than it tells.
 */
#ifndef XFDR_RUNTIME_SYMBOLS_NAMER_H
#define XFDR_RUNTIME_SYMBOLS_NAMER_H

#include <stdint.h>

#include "runtime/symbols/symbolizer.h"

/* Zeroed: no snapshot. */
struct sym_namer {
	struct sym_table sym;
	int sym_ok;	    /* sym holds a snapshot */
	uint32_t closes;    /* unload_closes() when it was taken */
	uint64_t futile_ns; /* when a fresh snapshot last left an address without a file; 0 */
};

/*
 * sym_namer_lookup - fill r for addr (symbolizer.h's sym_lookup()); r's pointers stay valid
 * until the next call or sym_namer_close(). Context: async-signal-safe; one caller at a time
 * per namer.
 */
void sym_namer_lookup(struct sym_namer *nm, uintptr_t addr, struct sym_result *r);

/* sym_namer_close - release the snapshot (the namer stays usable). */
void sym_namer_close(struct sym_namer *nm);

/*
 * sym_namer_forget - drop the snapshot without unmapping it: for a fork child whose copy may
 * have been in the middle of a lookup by a thread it does not have.
 */
void sym_namer_forget(struct sym_namer *nm);

#endif /* XFDR_RUNTIME_SYMBOLS_NAMER_H */
