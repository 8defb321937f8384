/*
 * runtime/flush/mapfile.h - the .map sidecar beside every trace: the process, the clock, the
 * pool, the drops, the threads and the functions. One "key<TAB>value..." per line; the format
 * is specified in doc/map-format.md, which the reader's parser (reader/names.c) follows
 * too. Every function here is async-signal-safe: each line is built in a stack buffer by the
 * printer and written with write(2). Each returns 0 or a negative errno.
 */
#ifndef XFDR_RUNTIME_FLUSH_MAPFILE_H
#define XFDR_RUNTIME_FLUSH_MAPFILE_H

#include <stdint.h>

#include "runtime/base/print.h"

struct crash_report;
struct drop_totals;
struct thread_slot;

/* What one flush wrote. */
struct map_flush {
	uint64_t buffers_written; /* buffers of recorded events in the trace(s) */
	uint64_t buffers_reused;  /* ring mode reused them before the flusher copied them */
	uint64_t since_tsc;	  /* xfdr_flush_since()'s start; 0: a whole flush */
};

/* The lines before "trace": the format version, the pid, the parent's pid, the program. */
int map_write_head(int fd);
/*
 * The pid of the process that started this one, for the "ppid" line: getppid() at init, or in
 * a fork child the process its recorder was set up in (getppid() there may already be a reaper).
 */
void map_note_parent(uint32_t pid);
/* One "trace" line. */
int map_write_trace(int fd, const char *path);
/*
 * Everything after the trace lines but the functions (map_functions.h): clock (its rate only
 * when tsc_hz is not 0), pool, the snapshot's start (since_tsc, when not 0), drops and notes,
 * the crash (see map_set_crash()), threads.
 */
int map_write_tail(int fd, uint64_t tsc_hz, const struct map_flush *st,
		   const struct drop_totals *drops);
/* map_clock_rate_lines - append the "tsc_hz" and "tsc_hz_method" lines to b (64 bytes free). */
void map_clock_rate_lines(struct pr_buf *b, uint64_t tsc_hz);
/*
 * map_thread_line - append the "thread" line of slot s in session to b (at least 256 bytes
 * free), with name (at most 16 bytes). Context: async-signal-safe; writes nothing.
 */
void map_thread_line(struct pr_buf *b, const struct thread_slot *s, uint32_t session,
		     const char *name);

/*
 * map_set_crash - the crash the next .map written by the crashing thread (c->tid) describes:
 * its "crash" line and one "frame" line per program counter, named by the symbolizer. The
 * crash handler sets it before its flush and clears it (NULL) after; a flush on any other
 * thread meanwhile writes no crash lines. c must stay valid until cleared.
 * Context: the crash handler; async-signal-safe.
 */
void map_set_crash(const struct crash_report *c);

#endif /* XFDR_RUNTIME_FLUSH_MAPFILE_H */
