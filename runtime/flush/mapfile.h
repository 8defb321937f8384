/*
 * runtime/flush/mapfile.h - the .map sidecar beside every trace: the process, the clock, the
 * pool, the drops, the threads and the functions. One "key<TAB>value..." per line; the format
 * is specified in doc/map-format.md, which the reader's parser (reader/lib/names.c) follows
 * too. Every function here is async-signal-safe: each line is built in a stack buffer by the
 * printer and written with write(2). Each returns 0 or a negative errno.
 */
#ifndef XFDR_RUNTIME_FLUSH_MAPFILE_H
#define XFDR_RUNTIME_FLUSH_MAPFILE_H

#include <stdint.h>

struct drop_totals;

/* What one flush wrote. */
struct map_flush {
	uint64_t buffers_written; /* buffers of recorded events in the trace(s) */
	uint64_t buffers_reused;  /* ring mode reused them before the flusher copied them */
	uint64_t since_tsc;	  /* xfdr_flush_since()'s start; 0: a whole flush */
};

/* The lines before "trace": the format version, the pid, the program. */
int map_write_head(int fd);
/* One "trace" line. */
int map_write_trace(int fd, const char *path);
/*
 * Everything after the trace lines: clock, pool, the snapshot's start (since_tsc, when not
 * 0), drops and notes, threads, functions.
 */
int map_write_tail(int fd, uint64_t tsc_hz, const struct map_flush *st,
		   const struct drop_totals *drops);

#endif /* XFDR_RUNTIME_FLUSH_MAPFILE_H */
