/*
 * runtime/flush/livemap.h - the live side of survival: with backing=file, the .map beside the
 * live pool file, written at start and appended to as threads and functions appear, so that
 * `xfdr recover` can name threads and functions after the process was killed; with either backing,
 * the clock facts (TSC frequency, invariant TSC) that the pool locator and the live trace header
 * carry, so that `xfdr recover` and `xfdr core` can give a trace its cycle_frequency.
 */
#ifndef XFDR_RUNTIME_FLUSH_LIVEMAP_H
#define XFDR_RUNTIME_FLUSH_LIVEMAP_H

/*
 * livemap_start - tell the pool whether the TSC is invariant, and its frequency when known or
 * cheap to get (a later init); with map_path, write the live map there now
 * ("<live>.xray.map": its trace line names "<live>.xray") with every function named so far,
 * and let the recording threads append to it until livemap_stop(); NULL: no live map (memory
 * backing; a live map of an earlier session is unlinked). No thread is started: recording
 * threads keep the map current as they bring news (a thread takes a buffer or exits: its
 * thread line, the rate, XRay's ids; the function map gives an id: its function line; through
 * thread_set_watcher() and fnmap_on_new_id()), and hand the TSC frequency to the pool once
 * clock_tsc_hz() no longer needs to spin (either backing).
 * Context: init only, after pool_setup(). Returns 0; a live map that cannot be written or
 * kept current is reported with one stderr line and does not fail init (the trace survives
 * without names).
 */
int livemap_start(const char *map_path);

/*
 * livemap_stop - stop appending to the live map (it stays on disk); waits for a thread that
 * is appending. Idempotent. Context: init, exit; not a signal handler.
 */
void livemap_stop(void);

/*
 * livemap_discard - livemap_stop(), then unlink the live map and the pool's live files (the
 * trace and its .pool; pool_discard_files()): after a complete flush at a clean exit, only
 * the flushed trace remains. Recording may go on into the unlinked files' mappings.
 * Context: as livemap_stop().
 */
void livemap_discard(void);

/*
 * livemap_forget_after_fork - in a fork child: the live map is the parent's; drop it without
 * touching the parent's files (the child's copy of its descriptor is closed). Context: the
 * child's one thread, before it records; async-signal-safe.
 */
void livemap_forget_after_fork(void);

#endif /* XFDR_RUNTIME_FLUSH_LIVEMAP_H */
