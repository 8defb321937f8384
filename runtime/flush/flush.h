/*
 * runtime/flush/flush.h - write the pool to trace files and the .map sidecar.
 */
#ifndef XFDR_RUNTIME_FLUSH_FLUSH_H
#define XFDR_RUNTIME_FLUSH_FLUSH_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/pool/pool_types.h"

/*
 * flush_run - write every buffer holding data (one file, or one per thread: output.h), the
 * drop-count buffer, the .map file, and a stderr line when anything was dropped. With since
 * (a TSC; 0: everything), only buffers holding events at or after it, whole.
 * path_out receives the trace path (per-thread files: the .map path).
 * ctx: the flush context (pool_types.h) it writes in. One flush per context at a time, and
 * the pool is not set up meanwhile: POOL_FLUSH_ORDINARY's caller holds CTL_FLUSH_RUNNING,
 * POOL_FLUSH_RESERVE's is the fatal path's one thread, with init excluded. A flush in each
 * context may run at once: they write two files, both complete traces.
 * Context: async-signal-safe.
 * Returns 0, -ENAMETOOLONG, -EEXIST (no free file name), or a negative errno of open/write.
 */
int flush_run(enum pool_flush_id ctx, uint64_t since, char *path_out, size_t path_bytes);

/*
 * flush_nothing_recorded - 1 when this session has nothing to write: no buffer was ever taken
 * (no event, custom event or crash recorded), nothing was dropped and nothing left out (an
 * uninstrumented program with the runtime preloaded: `ls` under a recorded script). The exit
 * and terminate flushes then write no file. Context: async-signal-safe.
 */
int flush_nothing_recorded(void);

#endif /* XFDR_RUNTIME_FLUSH_FLUSH_H */
