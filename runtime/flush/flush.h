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

/* ---- the parts stream.c writes its files with ------------------------------------------ */

struct drop_totals;
struct drops_thread;

/*
 * flush_snapshot - choose the owned and full buffers (with since, a full one whose last record
 * is older is left out) and fix the length each is copied with, from the last claimed to the
 * first. Returns the count chosen, listed in x->order in claim order; x->notes by buffer index.
 * flush_sort_by_claim - sort the first n of x->order by x->notes[].seq (heap sort).
 * flush_copy_buffer - copy buffer i (pinned) into x->copy with the length the snapshot fixed:
 * the bytes copied, 0 when it was claimed anew since.
 * flush_write_header - the 32-byte file header for this pool.
 * flush_write_drop_buffer_at - the drop-count buffer at a byte offset (drops.h; x and n: the
 * buffers of the file, whose earliest TSC the process file's drop buffer takes).
 * Context: async-signal-safe; one flush per context at a time (flush_run()).
 */
uint32_t flush_snapshot(struct pool_flush_ctx *x, uint64_t since);
void flush_sort_by_claim(struct pool_flush_ctx *x, uint32_t n);
size_t flush_copy_buffer(struct pool_flush_ctx *x, uint32_t i);
int flush_write_header(int fd, uint64_t tsc_hz);
int flush_write_drop_buffer_at(int fd, const struct pool_flush_ctx *x, uint64_t offset, uint32_t n,
			       const struct drop_totals *head, const struct drops_thread *thread);

#endif /* XFDR_RUNTIME_FLUSH_FLUSH_H */
