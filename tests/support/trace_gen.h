/*
 * tests/support/trace_gen.h - random per-thread event lists, and a small encoder that turns
 * them into a whole FDR v1 file image with writer/encode.h and writer/file.h. Shared by
 * test_reader_roundtrip.c, test_interop.c and the verbs' tests.
 *
 * The generator is the ground truth: it decides what each thread did (function events with
 * their absolute TSC, CPU and arguments; custom events with their payload). The encoder then
 * writes them the way a recorder must:
 *
 *   buffer := NewBuffer(tid) WallClockTime NewCPUId(cpu, tsc of the first event) body
 *             (EndOfBuffer zeros | nothing when exactly full)
 *   before a function record: NewCPUId(cpu, tsc) if the CPU changed, else TSCWrap(tsc) if
 *             tsc - base does not fit 32 bits or goes backwards; the record then has delta 0
 *   before a custom event:    NewCPUId(cpu, tsc) if the CPU changed (the marker carries its
 *             own absolute TSC and leaves the delta base alone)
 *   a group (prefix, record, its CallArguments or payload) that wr_fits() refuses goes to a
 *   new buffer, whose preamble NewCPUId makes any prefix unnecessary.
 *
 * A reader that follows the spec must give back exactly the generated events per thread.
 * Each thread's buffers get increasing WallClockTimes; the file holds all buffers of all
 * threads in a shuffled order, so a reader has to order them itself.
 */
#ifndef XFDR_TESTS_SUPPORT_TRACE_GEN_H
#define XFDR_TESTS_SUPPORT_TRACE_GEN_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "writer/file.h"
#include "writer/encode.h"
#include "xfdr/format.h"
#include "xfdr/reader.h"

#define TG_MAX_ARGS 8

/* ---- random numbers: splitmix64, so a seed replays the whole run ---------------------- */

uint64_t tg_next(uint64_t *s);

/* Uniform in [0, n); n > 0. The bias of % is irrelevant for test input. */
uint64_t tg_below(uint64_t *s, uint64_t n);

/* 1 with probability pct / 100. */
int tg_chance(uint64_t *s, unsigned pct);

/*
 * The run's seed: XFDR_SEED (decimal or 0x-hex) to replay, else a fresh one. Printed either
 * way, so any failure can be replayed.
 */
uint64_t tg_seed(const char *test);

/* ---- the ground truth ------------------------------------------------------------------ */

struct tg_event {
	int custom; /* 0: function record, 1: custom event */
	unsigned action;
	uint32_t fid;
	uint64_t tsc; /* absolute */
	uint16_t cpu;
	uint32_t arg_count;
	uint64_t args[TG_MAX_ARGS];
	uint32_t payload_bytes;
	uint8_t *payload; /* malloc'd, NULL when payload_bytes is 0 */
};

struct tg_thread {
	uint16_t tid;
	struct tg_event *ev;
	size_t n, cap;
};

/* What the generator may produce. */
struct tg_params {
	size_t buffer_bytes;
	size_t threads;
	size_t max_events;   /* per thread: 1..max_events */
	int llvm_safe;	     /* payloads: multiples of 8, never empty, ASCII bytes only */
	int wall_mixed;	     /* buffers of a thread ordered only lexicographically (sec, usec) */
	unsigned custom_pct; /* share of custom events */
};

struct tg_trace {
	struct tg_params p;
	struct tg_thread *th;
	size_t threads;
};

/* What the encoder did, so a run can assert that it covered every case it claims to. */
struct tg_stats {
	uint64_t buffers, exactly_full, tsc_wraps, backward_wraps, cpu_changes, customs, args,
	    events;
};

void tg_stats_add(struct tg_stats *a, const struct tg_stats *b);

struct tg_event *tg_push(struct tg_thread *t);

/* The thread of tr with this tid, appended (empty) when tr has none yet. */
struct tg_thread *tg_thread_of(struct tg_trace *tr, uint16_t tid);

void tg_free(struct tg_trace *tr);

/* Bytes a fresh buffer offers to its body: everything after the preamble. */
size_t tg_body_room(size_t buffer_bytes);

/*
 * Fill tr from the seed. Every group (record with its args or payload) fits a fresh buffer's
 * body with room to spare for an EndOfBuffer, so the encoder can always place it.
 */
void tg_generate(struct tg_trace *tr, const struct tg_params *p, uint64_t *s);

/* ---- the encoder --------------------------------------------------------------------------- */

struct tg_file {
	uint8_t *data;
	size_t bytes;
	size_t buffers;
	struct tg_stats st;
};

/*
 * tg_encode - the whole file image: header (2 GHz, constant and nonstop TSC), then every
 * buffer of every thread in a shuffled order.
 */
void tg_encode(const struct tg_trace *tr, struct tg_file *f, uint64_t *s);

/*
 * tg_write_scratch - a hand-built tr encoded (buffers of buffer_bytes, shuffled by seed) into
 * the scratch file `name` (scratch.h); frees tr. Returns the file's path.
 */
const char *tg_write_scratch(struct tg_trace *tr, size_t buffer_bytes, const char *name,
			     uint64_t seed);

/*
 * tg_shallow_scratch - threads 1 .. threads, each in main (1) calling f (2) calling g (3)
 * `calls` times, interleaved in time (thread k's events at TSC 1000 + k, then 2000 + 40 i + k
 * + 0, 10, 20, 30 for call i, main's exit 1000 ticks after the last), into the scratch file
 * `name`. Returns its path.
 */
const char *tg_shallow_scratch(const char *name, uint16_t threads, unsigned calls);

/* ---- comparing with the reader ------------------------------------------------------------ */

void tg_sort_threads(struct tg_trace *tr);

/*
 * Does the reader's event match the generated one? Returns 1, or 0 after printing both and
 * what differs (the caller fails with the seed in view).
 */
int tg_event_matches(const struct xfdr_trace *t, const struct xfdr_event *got,
		     const struct tg_event *want, uint16_t tid);

/*
 * tg_check_trace - compare an open trace with tr, thread by thread, in XFDR_ORDER_THREAD order
 * (sorts tr's threads by id). Returns 0, or -1 after printing what went wrong (the caller
 * names the seed and fails).
 */
int tg_check_trace(struct xfdr_trace *t, struct tg_trace *tr, size_t buffers);

/* tg_check_image - the same for an in-memory image. */
int tg_check_image(struct tg_trace *tr, const struct tg_file *f);

#endif /* XFDR_TESTS_SUPPORT_TRACE_GEN_H */
