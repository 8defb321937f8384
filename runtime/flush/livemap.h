/*
 * runtime/flush/livemap.h - the live side of survival: with backing=file, the .map beside the
 * live pool file, written at start and kept current, so that `xfdr recover` can name threads
 * and functions after the process was killed; with either backing, the clock facts (TSC
 * frequency, invariant TSC) that the pool locator and the live trace header carry, so that
 * `xfdr recover` and `xfdr core` can give a trace its cycle_frequency.
 */
#ifndef XFDR_RUNTIME_FLUSH_LIVEMAP_H
#define XFDR_RUNTIME_FLUSH_LIVEMAP_H

/*
 * livemap_start - tell the pool whether the TSC is invariant, and its frequency when known or
 * cheap to get (a later init); with map_path, write the live map there now
 * ("<live>.xray.map": its trace line names "<live>.xray") and keep it current until
 * livemap_stop(); NULL: no live map (memory backing; a live map of an earlier session is
 * unlinked). With a live map a background thread, "xfdr-livemap", hands the TSC frequency to
 * the pool (locator and live header) once clock_tsc_hz() no longer needs to spin, and
 * rewrites the map about once a second when its threads, their names or the function ids
 * changed. Memory backing starts no thread: the flush layer hands the frequency over then.
 * The thread never records (it calls no hook), blocks every signal, is detached (a process
 * may exit while it runs) and holds no lock (fork-safe).
 * Context: init only, after pool_setup(). Returns 0; a live map that cannot be written or
 * kept current is reported with one stderr line and does not fail init (the trace survives
 * without names).
 */
int livemap_start(const char *map_path);

/*
 * livemap_stop - stop the thread and wait until it no longer touches the pool or the files
 * (the live map stays on disk). Idempotent. Context: init, exit; not a signal handler.
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
 * livemap_forget_after_fork - in a fork child: the live map and its keeper are the parent's;
 * drop them without touching the parent's files. Context: the child, right after fork();
 * async-signal-safe.
 */
void livemap_forget_after_fork(void);

#endif /* XFDR_RUNTIME_FLUSH_LIVEMAP_H */
