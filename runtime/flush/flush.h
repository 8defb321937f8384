/*
 * runtime/flush/flush.h - write the pool to trace files and the .map sidecar.
 */
#ifndef XFDR_RUNTIME_FLUSH_FLUSH_H
#define XFDR_RUNTIME_FLUSH_FLUSH_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/record/thread_types.h"

/* Drop counts summed over the process (slots, unattributed, recycled). */
struct flush_drops {
	uint64_t cause[DROP_CAUSES];
	uint64_t total;
};

/*
 * flush_run - write every buffer holding data (per rt_cfg: one file, or one per thread), the
 * drop-count buffer, the .map file, and a stderr line when anything was dropped.
 * path_out receives the trace path (per-thread files: the .map path).
 * Context: async-signal-safe; the caller holds CTL_FLUSH_RUNNING.
 * Returns 0, -ENAMETOOLONG, -EEXIST (no free file name), or a negative errno of open/write.
 */
int flush_run(char *path_out, size_t path_bytes);

/* Sum the drop counters now. Context: async-signal-safe. */
void flush_sum_drops(struct flush_drops *d);

#endif /* XFDR_RUNTIME_FLUSH_FLUSH_H */
