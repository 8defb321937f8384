/*
 * runtime/flush/mapfile.h - the .map sidecar: a small text file, one "key<TAB>value..." per line.
 *
 *   xfdr-map        1                       (format version of this file)
 *   pid             <pid>
 *   program         <argv[0]>
 *   trace           <trace file>            (one per trace file written by this flush)
 *   tsc_hz          <ticks per second>
 *   tsc_hz_method   cpuid-0x15 | calibrated | nominal-1GHz
 *   clock           rdtscp | rdtsc+sched_getcpu | clock_monotonic_raw+sched_getcpu
 *   constant_tsc    0|1
 *   nonstop_tsc     0|1
 *   buffer_size     <bytes>
 *   buffer_max      <buffers>
 *   buffers_written <buffers>               (drop-count buffers not included)
 *   dropped         <cause> <count>         (no_buffer, reentrant, too_large, no_thread_slot,
 *                                            total)
 *   thread          <tid> <tid16> <name> <no_buffer> <reentrant> <too_large>
 *
 * "thread" lists every thread that took a buffer or dropped an event in this session, still
 * running or not (a thread whose slot was recycled is not listed; its drops stay in totals).
 * Thread names have control characters replaced by '?'.
 */
#ifndef XFDR_RUNTIME_FLUSH_MAPFILE_H
#define XFDR_RUNTIME_FLUSH_MAPFILE_H

#include <stdint.h>

#include "runtime/flush/flush.h"
#include "runtime/base/print.h"

/* Write the lines before "trace". Returns 0 or a negative errno. Context: signal-safe. */
int map_write_head(int fd);
/* One "trace" line. */
int map_write_trace(int fd, const char *path);
/* Everything after the trace lines. */
int map_write_tail(int fd, uint64_t tsc_hz, uint64_t buffers_written,
		   const struct flush_drops *drops);

/* Append a thread name with control characters and tabs replaced. */
void map_put_name(struct pr_buf *b, const char *name);

#endif /* XFDR_RUNTIME_FLUSH_MAPFILE_H */
