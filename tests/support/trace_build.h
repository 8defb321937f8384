/*
 * tests/support/trace_build.h - FDR version 1 traces built record by record with the writer
 * (writer/encode.h), for tests that need exact TSCs, threads, contexts and custom events.
 *
 * A trace is a header and buffers of buf_bytes; tb_buffer() closes the open buffer (its
 * EndOfBuffer) and begins the next with its preamble. Every tb_ call fails the test (cmocka)
 * rather than write a record that does not fit. tb_write() puts the file in the scratch
 * directory (tests/support/scratch.h).
 */
#ifndef XFDR_TESTS_SUPPORT_TRACE_BUILD_H
#define XFDR_TESTS_SUPPORT_TRACE_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/format.h"

#define ENTER XFDR_FN_ENTER
#define EXIT XFDR_FN_EXIT
#define TAIL XFDR_FN_TAIL_EXIT
#define ARGS XFDR_FN_ENTER_ARGS

struct tb {
	uint8_t *data;
	size_t len, buf_bytes, cur, used;
	int open;
};

/* A trace of buf_bytes buffers at cycle frequency hz (constant and nonstop TSC). */
void tb_init(struct tb *b, size_t buf_bytes, uint64_t hz);
/* A new buffer of thread tid, WallClockTime (1, usec), on CPU 0 at tsc. */
void tb_buffer(struct tb *b, uint16_t tid, uint32_t usec, uint64_t tsc);
/* A function record, delta ticks after the previous one. */
void tb_fn(struct tb *b, unsigned action, uint32_t fid, uint32_t delta);
/* A CallArgument. */
void tb_arg(struct tb *b, uint64_t v);
/* A TSCWrap to tsc. */
void tb_wrap(struct tb *b, uint64_t tsc);
/* A custom event of the n bytes at p, at tsc. */
void tb_custom(struct tb *b, const void *p, uint32_t n, uint64_t tsc);
/* An XFDRSTAK context of depth calls, the first id_count (<= 8) of them named by ids. */
void tb_context(struct tb *b, uint32_t depth, const uint32_t *ids, uint32_t id_count, uint64_t tsc);
/* The open buffer closed and the trace written as scratch file name; returns its path. */
const char *tb_write(struct tb *b, const char *name);

/* The first TSC of tb_timeline_trace(): 10^15, so that absolute microseconds would be large. */
#define TB_TIMELINE_T0 1000000000000000ull

/*
 * tb_timeline_trace - the trace whose times the tests of both timeline formats (trace_event,
 * perfetto) work out by hand, written as scratch file name; returns its path. 2.5 GHz: a tick
 * is 0.4 ns, so NS = (TSC - T0) * 0.4, rounded to the nearest (T0: TB_TIMELINE_T0, the base).
 * Thread 7 (buffer at T0):
 *   Entry 1          T0              0
 *   Entry_Args 2     T0 + 2500       1000        args 5, 2^60
 *   Exit 2           T0 + 2501       1000.4 -> 1000
 *   custom "hi"      T0 + 3752       1500.8 -> 1501
 *   Entry 3          T0 + 5000       2000
 *   Tail_Exit 3      T0 + 5001       2000.4 -> 2000
 *   Exit 1           T0 + 25 * 10^9  10^10 (after a TSCWrap)
 * Thread 9 (buffer at T0 + 1250): Entry 4 at 500, Exit 4 at 500.4 -> 500.
 */
const char *tb_timeline_trace(const char *name);

/*
 * tb_unbalanced_trace - calls without entry or exit, written as scratch file name; returns its
 * path. 1 GHz, base 1000.
 * Thread 1: Exit 5 @1000 (no entry), Entry 6 @2000, Exit 7 @3000 (no entry; 6 is open and
 * never exited), Entry 8 @4000 (never exited), custom "tail" @5000.
 * Thread 2: Entry 9 @10000, Exit 9 @9000 (the clock went back: a TSCWrap to 9000).
 */
const char *tb_unbalanced_trace(const char *name);

#endif /* XFDR_TESTS_SUPPORT_TRACE_BUILD_H */
