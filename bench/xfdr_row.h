/*
 * bench/xfdr_row.h - what every xfdr row shares: set the recorder up from the command line,
 * and after the timed loops flush what it recorded.
 *
 * Any program that records through libxfdr's C API (the macros, the hooks linked in) calls
 * bench_xfdr_setup() before bench_measure() and bench_xfdr_finish() after it; both print
 * the row themselves when something fails.
 */
#ifndef XFDR_BENCH_XFDR_ROW_H
#define XFDR_BENCH_XFDR_ROW_H

#include "bench/harness.h"
#include "xfdr/xfdr.h"

/*
 * bench_xfdr_setup - xfdr_init() with buffer size and count from -b/-m, output directory -o,
 * clock -c (default: the runtime's choice), no flush at exit; then xfdr_start().
 * Configured through the C API only, so XFDR_OPTIONS cannot change what is measured.
 * Returns 0, or 1 after printing a FAILED row.
 */
int bench_xfdr_setup(const struct bench_cfg *cfg, const char *key, const char *label);

/*
 * bench_xfdr_start - xfdr_init(o), wait until the pool is populated, xfdr_start().
 * Returns 0 or the negative errno of the step that failed.
 */
int bench_xfdr_start(const struct xfdr_options *o);

/*
 * bench_wait_pool_populated - return once the background thread has populated every buffer
 * of the pool: the rows measure recording, not start-up (make bench has a start-up table).
 */
void bench_wait_pool_populated(void);

/*
 * bench_xfdr_finish - stop recording, flush into the -o folder and print the row (FAILED when
 * the flush fails). What the file holds is counted afterwards, outside the process and its
 * timing, by bench/trace_count.c (the row's "trace" line). Returns the exit status: 0 or 1.
 */
int bench_xfdr_finish(const struct bench_cfg *cfg, const char *key, const char *label, double *ns);

#endif
