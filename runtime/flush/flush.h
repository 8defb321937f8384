/*
 * runtime/flush/flush.h - write the pool to trace files and the .map sidecar.
 */
#ifndef XFDR_RUNTIME_FLUSH_FLUSH_H
#define XFDR_RUNTIME_FLUSH_FLUSH_H

#include <stddef.h>

/*
 * flush_run - write every buffer holding data (one file, or one per thread: output.h), the
 * drop-count buffer, the .map file, and a stderr line when anything was dropped.
 * path_out receives the trace path (per-thread files: the .map path).
 * Context: async-signal-safe; the caller holds CTL_FLUSH_RUNNING.
 * Returns 0, -ENAMETOOLONG, -EEXIST (no free file name), or a negative errno of open/write.
 */
int flush_run(char *path_out, size_t path_bytes);

#endif /* XFDR_RUNTIME_FLUSH_FLUSH_H */
