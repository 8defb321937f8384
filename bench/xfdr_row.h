/*
 * bench/xfdr_row.h - what every xfdr row shares: set the recorder up from the command line,
 * and after the timed loops check and report what it recorded.
 *
 * Any program that records through libxfdr (manual macros, the XRay handler, the
 * -finstrument-functions hooks) calls bench_xfdr_setup() before bench_measure() and
 * bench_xfdr_finish() after it; both print the row themselves when something fails.
 */
#ifndef XFDR_BENCH_XFDR_ROW_H
#define XFDR_BENCH_XFDR_ROW_H

#include "bench/harness.h"

/*
 * bench_xfdr_setup - xfdr_init() with buffer size and count from -b/-m, output directory -o,
 * clock -c (default: the runtime's choice), no flush at exit; then xfdr_start().
 * Configured through the C API only, so XFDR_OPTIONS cannot change what is measured.
 * Returns 0, or 1 after printing a FAILED row.
 */
int bench_xfdr_setup(const struct bench_cfg *cfg, const char *key, const char *label);

/*
 * bench_xfdr_finish - stop recording, flush, read the file back with libxfdr_reader and count
 * the Entry and Exit records of function id `fid`, delete the trace and its .map, and print
 * the row with a note saying how many of the (reps + 1) x events issued events the file
 * holds. The count does not trust the recorder's own drop counters; a file the reader rejects
 * or a function record of another id or kind fails the row.
 * Returns the program's exit status: 0 when every event is in the file, 1 otherwise.
 */
int bench_xfdr_finish(const struct bench_cfg *cfg, const char *key, const char *label, double *ns,
		      uint32_t fid);

#endif
