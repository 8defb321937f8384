/*
 * runtime/flush/flush.h - write the pool to trace files and the .map sidecar.
 */
#ifndef XFDR_RUNTIME_FLUSH_FLUSH_H
#define XFDR_RUNTIME_FLUSH_FLUSH_H

#include <stddef.h>
#include <stdint.h>

/*
 * flush_run - write every buffer holding data (one file, or one per thread: output.h), the
 * drop-count buffer, the .map file, and a stderr line when anything was dropped. With since
 * (a TSC; 0: everything), only buffers holding events at or after it, whole.
 * path_out receives the trace path (per-thread files: the .map path).
 * Context: async-signal-safe; the caller holds CTL_FLUSH_RUNNING.
 * Returns 0, -ENAMETOOLONG, -EEXIST (no free file name), or a negative errno of open/write.
 */
int flush_run(uint64_t since, char *path_out, size_t path_bytes);

#endif /* XFDR_RUNTIME_FLUSH_FLUSH_H */
