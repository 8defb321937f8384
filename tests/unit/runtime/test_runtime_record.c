/*
 * tests/unit/runtime/test_runtime_record.c - the record path with a controlled clock, the clock
 * itself, the drop buffer, the .map file, per-thread files, start at load and flush at exit.
 *
 * The record path is driven through its *_at entry points with chosen TSC and CPU values, so
 * every boundary is hit exactly. Expected bytes are computed here from the specification
 * (function word: bit 0 = 0, bits 1-3 action, bits 4-31 id, then the u32 delta; metadata
 * byte 0 = kind << 1 | 1), never with the writer's encoders; each file is also read by the
 * reader library and by llvm-xray.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "tests/support/runtime_test.h"
#include "tests/support/child.h"
#include "tests/support/map_parse.h"

#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "runtime/record/recorder.h"
#include "runtime/record/record_fast.h"
#include "runtime/record/thread.h"

enum { HDR = 32, MD = 16, FN = 8, PRE = 48 };

/* Metadata first bytes (little-endian: kind << 1 | 1). */
enum {
	K_NEW_BUFFER = 0x01,
	K_EOB = 0x03,
	K_NEW_CPU = 0x05,
	K_TSC_WRAP = 0x07,
	K_WALL = 0x09,
	K_CUSTOM = 0x0b,
	K_CALL_ARG = 0x0d,
};

static char path[512];

/* The thread ids of a session count from 1: this thread is the first of every session here. */
#define MAIN_THREAD_ID 1

static void expect_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			fail_msg("byte %zu of %zu is 0x%02x, expected 0", i, n, p[i]);
}

static void expect_preamble(const uint8_t *b, uint16_t cpu, uint64_t tsc)
{
	uint64_t now = (uint64_t)time(NULL);

	assert_int_equal(b[0], K_NEW_BUFFER);
	assert_int_equal(ts_get16(b + 1), MAIN_THREAD_ID);
	expect_zero(b + 3, 13);
	assert_int_equal(b[16], K_WALL);
	assert_true(ts_get64(b + 17) + 100 >= now && ts_get64(b + 17) <= now + 1);
	assert_true(ts_get32(b + 25) < 1000000);
	expect_zero(b + 29, 3);
	assert_int_equal(b[32], K_NEW_CPU);
	assert_int_equal(ts_get16(b + 33), cpu);
	assert_int_equal(ts_get64(b + 35), tsc);
	expect_zero(b + 43, 5);
}

static void expect_fn(const uint8_t *p, unsigned action, uint32_t fid, uint32_t delta)
{
	uint32_t w = ts_get32(p);

	assert_int_equal(w & 1u, 0);
	assert_int_equal((w >> 1) & 7u, action);
	assert_int_equal(w >> 4, fid);
	assert_int_equal(ts_get32(p + 4), delta);
}

static void expect_md_tsc(const uint8_t *p, unsigned kind_byte, uint64_t tsc)
{
	assert_int_equal(p[0], kind_byte);
	assert_int_equal(ts_get64(p + 1), tsc);
	expect_zero(p + 9, 7);
}

static void expect_new_cpu(const uint8_t *p, uint16_t cpu, uint64_t tsc)
{
	assert_int_equal(p[0], K_NEW_CPU);
	assert_int_equal(ts_get16(p + 1), cpu);
	assert_int_equal(ts_get64(p + 3), tsc);
	expect_zero(p + 11, 5);
}

static void expect_eob(const uint8_t *p, size_t rest)
{
	assert_int_equal(p[0], K_EOB);
	expect_zero(p + 1, rest - 1);
}

/*
 * The stack-context custom event at p, field by field from format.h's table: marker (kind 5,
 * payload size, TSC), "XFDRSTAK", version 1, depth, id count, ids, zero padding.
 */
static void expect_stack(const uint8_t *p, uint64_t tsc, uint32_t depth, const uint32_t *ids,
			 uint32_t n)
{
	uint32_t size = (24 + 4 * n + 7) & ~7u, i;

	assert_int_equal(p[0], K_CUSTOM);
	assert_int_equal(ts_get32(p + 1), size);
	assert_int_equal(ts_get64(p + 5), tsc);
	expect_zero(p + 13, 3);
	p += MD;
	assert_memory_equal(p, "XFDRSTAK", 8);
	assert_int_equal(ts_get32(p + 8), 1);
	assert_int_equal(ts_get32(p + 12), depth);
	assert_int_equal(ts_get32(p + 16), n);
	assert_int_equal(ts_get32(p + 20), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(ts_get32(p + 24 + 4 * i), ids[i]);
	expect_zero(p + 24 + 4 * n, size - 24 - 4 * n);
}

/*
 * Flush, check the file size, read it: the header, nbuf buffers, and the drop buffer, which
 * needs 48 + 16 + 64 bytes, exactly 128 (buffers of 128 bytes and more).
 */
static uint8_t *flush_read(size_t bsize, size_t nbuf)
{
	size_t bytes;
	uint8_t *data;

	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	data = ts_slurp(path, &bytes);
	assert_int_equal(bytes, HDR + (nbuf + (bsize >= 128)) * bsize);
	assert_int_equal(ts_get16(data), 1);
	assert_int_equal(ts_get16(data + 2), 1);
	assert_int_equal(ts_get64(data + 16), bsize);
	return data;
}

/* llvm-xray must convert the file; returns its records. */
static size_t llvm_records(struct ts_yrec *out, size_t max)
{
	struct ts_yrec *copy;
	char *yaml;
	size_t n, i, k = 0;

	if (ts_llvm_yaml(path, &yaml))
		fail_msg("llvm-xray rejects %s:\n%s", path, yaml);
	n = ts_yaml_records(yaml, out, max);
	free(yaml);
	/*
	 * The drop-count buffer (thread 0) carries the file's earliest TSC so that
	 * `llvm-xray account` accepts the file, so it sorts first; the tests read the
	 * program's records first: move thread 0 behind them, keeping each group's order.
	 */
	copy = calloc(n ? n : 1, sizeof(*copy));
	assert_non_null(copy);
	for (i = 0; i < n; i++)
		if (out[i].thread != 0)
			copy[k++] = out[i];
	for (i = 0; i < n; i++)
		if (out[i].thread == 0)
			copy[k++] = out[i];
	memcpy(out, copy, n * sizeof(*copy));
	free(copy);
	return n;
}

static void reader_ok(void)
{
	xfdr_trace_close(ts_open_verified(path));
}

static void start_session(size_t bsize, size_t bmax)
{
	assert_int_equal(ts_init(bsize, bmax, 0), 0);
	assert_int_equal(xfdr_start(), 0);
}

/*
 * 9 entries into 128-byte buffers: 8 fit (the 16 bytes of EndOfBuffer stay), the 9th rotates
 * and its buffer starts with the stack context of the 8 open calls.
 */
static void rotation_at_exact_boundary(void **state)
{
	struct ts_yrec r[16];
	uint8_t *data, *b0, *b1;
	int i;

	(void)state;
	start_session(128, 8);
	for (i = 0; i < 9; i++)
		rec_function_at(1000 + 10 * (uint64_t)i, 3, XFDR_FN_ENTER, (uint32_t)i + 1);
	data = flush_read(128, 2);
	b0 = data + HDR;
	b1 = b0 + 128;
	expect_preamble(b0, 3, 1000);
	for (i = 0; i < 8; i++)
		expect_fn(b0 + PRE + FN * i, 0, (uint32_t)i + 1, i ? 10 : 0);
	expect_eob(b0 + PRE + 64, 16);
	expect_preamble(b1, 3, 1080);
	expect_stack(b1 + PRE, 1080, 8, (const uint32_t[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
	expect_fn(b1 + PRE + MD + 56, 0, 9, 0);
	assert_int_equal(PRE + MD + 56 + FN, 128); /* exactly full: no EndOfBuffer */
	free(data);
	reader_ok();
	/* the stack context, then the drop buffer (exactly 128 bytes) */
	assert_int_equal(llvm_records(r, 16), 11);
	assert_string_equal(r[8].kind, "custom-event");
	for (i = 0; i < 9; i++) {
		int k = i < 8 ? i : 9;

		assert_int_equal(r[k].fid, i + 1);
		assert_int_equal(r[k].tsc, 1000 + 10 * i);
		assert_int_equal(r[k].cpu, 3);
		assert_string_equal(r[k].kind, "function-enter");
	}
}

/* A group that fills the buffer to the last byte needs no EndOfBuffer. */
static void exact_fill_without_end_of_buffer(void **state)
{
	const uint64_t args[4] = {7, 0x1122334455667788ull, 3, 4};
	struct ts_yrec r[8];
	uint8_t *data, *b0, *b1;
	int i;

	(void)state;
	start_session(128, 4);
	rec_function_at(500, 1, XFDR_FN_ENTER, 1);
	rec_function_args_at(505, 1, XFDR_FN_ENTER_ARGS, 2, args, 4); /* 72 bytes: exact */
	rec_function_at(510, 1, XFDR_FN_EXIT, 2);
	data = flush_read(128, 2);
	b0 = data + HDR;
	b1 = b0 + 128;
	expect_preamble(b0, 1, 500);
	expect_fn(b0 + PRE, 0, 1, 0);
	expect_fn(b0 + PRE + 8, 3, 2, 5);
	for (i = 0; i < 4; i++)
		expect_md_tsc(b0 + PRE + 16 + MD * i, K_CALL_ARG, args[i]);
	assert_int_equal(PRE + 16 + MD * 4, 128);
	expect_preamble(b1, 1, 510);
	/* Calls 1 and 2 are open when the buffer begins (2's exit is its first record). */
	expect_stack(b1 + PRE, 510, 2, (const uint32_t[]){1, 2}, 2);
	expect_fn(b1 + PRE + MD + 32, 1, 2, 0);
	free(data);
	reader_ok();
	/* and the drop buffer */
	assert_int_equal(llvm_records(r, 8), 5);
	assert_string_equal(r[1].kind, "function-enter-arg");
	assert_string_equal(r[1].args, "7, 1234605616436508552, 3, 4 ");
	assert_string_equal(r[2].kind, "custom-event");
	assert_int_equal(r[3].tsc, 510);
	assert_string_equal(r[4].kind, "custom-event");
}

/* Entry_Args with its arguments and a custom event with its payload stay in one buffer. */
static void groups_never_straddle(void **state)
{
	const uint64_t args[3] = {1, 2, 3};
	struct ts_yrec r[16];
	uint8_t *data, *b0, *b1, *b2;
	int i;

	(void)state;
	start_session(128, 8);
	for (i = 0; i < 5; i++) /* 40 bytes: 40 left */
		rec_function_at(100 + (uint64_t)i, 2, XFDR_FN_ENTER, 10);
	rec_function_args_at(200, 2, XFDR_FN_ENTER_ARGS, 11, args, 3);	  /* 56: next buffer */
	assert_int_equal(rec_custom_event_at(300, 2, "hello", 5), 0);	  /* 16 + 8: exact fill */
	assert_int_equal(rec_custom_event_at(400, 2, "123456789", 9), 0); /* 32: next buffer */
	data = flush_read(128, 3);
	b0 = data + HDR;
	b1 = b0 + 128;
	b2 = b1 + 128;
	expect_fn(b0 + PRE + 32, 0, 10, 1);
	expect_eob(b0 + PRE + 40, 128 - PRE - 40);
	expect_preamble(b1, 2, 200);
	expect_fn(b1 + PRE, 3, 11, 0);
	for (i = 0; i < 3; i++)
		expect_md_tsc(b1 + PRE + 8 + MD * i, K_CALL_ARG, (uint64_t)i + 1);
	/* CustomEventMarker: u32 size at 1, u64 tsc at 5; payload zero-padded to 8. */
	assert_int_equal(b1[PRE + 56], K_CUSTOM);
	assert_int_equal(ts_get32(b1 + PRE + 57), 8);
	assert_int_equal(ts_get64(b1 + PRE + 61), 300);
	assert_memory_equal(b1 + PRE + 72, "hello\0\0\0", 8);
	assert_int_equal(PRE + 80, 128);
	expect_preamble(b2, 2, 400);
	/* Six calls open: the ids of the outermost two leave room for the 32-byte event. */
	expect_stack(b2 + PRE, 400, 6, (const uint32_t[]){10, 10}, 2);
	assert_int_equal(b2[PRE + 48], K_CUSTOM);
	assert_int_equal(ts_get32(b2 + PRE + 48 + 1), 16);
	assert_memory_equal(b2 + PRE + 48 + 16, "123456789\0\0\0\0\0\0\0", 16);
	assert_int_equal(PRE + 48 + 32, 128);
	free(data);
	reader_ok();
	assert_int_equal(llvm_records(r, 16), 10); /* with the stack context and drop buffer */
	assert_string_equal(r[5].args, "1, 2, 3 ");
	assert_string_equal(r[6].kind, "custom-event");
	assert_int_equal(r[6].tsc, 300);
	assert_string_equal(r[7].kind, "custom-event");
	assert_int_equal(r[7].tsc, 400);
}

/*
 * The drop-count custom event, read back field by field. In a process file it is stamped with
 * the earliest TSC of the file's buffers (tsc), so that llvm-xray account never meets a record
 * below it.
 */
static void expect_drop_buffer(const uint8_t *b, uint16_t thread_id, uint64_t no_buffer,
			       uint64_t reentrant, uint64_t too_large, uint32_t entries,
			       uint64_t tsc)
{
	const uint8_t *m = b + PRE, *pl = m + MD;

	assert_int_equal(b[0], K_NEW_BUFFER);
	assert_int_equal(ts_get16(b + 1), thread_id);
	assert_int_equal(b[32], K_NEW_CPU);
	assert_int_equal(ts_get64(b + 35), tsc);
	assert_int_equal(ts_get64(m + 5), tsc);
	assert_int_equal(m[0], K_CUSTOM);
	assert_int_equal(ts_get32(m + 1), 64 + 40 * entries);
	assert_memory_equal(pl, "XFDRDROP", 8);
	assert_int_equal(ts_get32(pl + 8), 2);
	assert_int_equal(ts_get32(pl + 12), entries);
	assert_int_equal(ts_get64(pl + 16), no_buffer);
	assert_int_equal(ts_get64(pl + 24), reentrant);
	assert_int_equal(ts_get64(pl + 32), too_large);
	assert_int_equal(ts_get64(pl + 40), 0);
	assert_int_equal(ts_get32(pl + 48), 0);
	assert_int_equal(ts_get64(pl + 56), 0); /* overwritten: bounded mode never reuses */
	if (entries) {
		assert_int_equal(ts_get32(pl + 64), ts_tid());
		assert_int_equal(ts_get16(pl + 68), MAIN_THREAD_ID);
		assert_int_equal(ts_get64(pl + 72), no_buffer);
		assert_int_equal(ts_get64(pl + 80), reentrant);
		assert_int_equal(ts_get64(pl + 88), too_large);
		assert_int_equal(ts_get64(pl + 96), 0);
	}
}

/* Too large for any buffer: dropped, counted, and the current buffer stays open. */
static void too_large_dropped_and_counted(void **state)
{
	const uint64_t args[5] = {1, 2, 3, 4, 5};
	static const char payload[65] =
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde";
	char map_path[600], value[64], *map;
	uint8_t *data, *b0;
	size_t n;

	(void)state;
	start_session(128, 4);
	rec_function_at(10, 0, XFDR_FN_ENTER, 1);
	/* 8 + 5 * 16 = 88 bytes: more than the 72 left here or the 80 of an empty buffer. */
	rec_function_args_at(11, 0, XFDR_FN_ENTER_ARGS, 2, args, 5);
	assert_int_equal(rec_custom_event_at(12, 0, payload, 65), -EMSGSIZE);
	assert_int_equal(rec_custom_event_at(13, 0, payload, 1u << 30), -EMSGSIZE);
	/* The exit of the dropped entry is dropped too (too_large, so 4 in all): never alone. */
	rec_function_at(14, 0, XFDR_FN_EXIT, 2);
	rec_function_at(14, 0, XFDR_FN_EXIT, 1);
	/* 16 + 64 = 80 bytes: exactly what an empty buffer holds. */
	assert_int_equal(rec_custom_event_at(15, 0, payload, 64), 0);
	data = flush_read(128, 2);
	b0 = data + HDR;
	expect_fn(b0 + PRE, 0, 1, 0);
	expect_fn(b0 + PRE + 8, 1, 1, 4);
	expect_eob(b0 + PRE + 16, 128 - PRE - 16);
	assert_int_equal(b0[128 + PRE], K_CUSTOM);
	free(data);
	reader_ok();
	assert_int_equal(ts_llvm_yaml(path, NULL), 0);
	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &n);
	assert_string_equal(ts_map_value(map, "dropped\ttoo_large", value, sizeof(value)), "4");
	free(map);
}

/* The reader gives the trace at path's first n events these times (and CPU cpu; -1: any). */
static void expect_event_times(const uint64_t *want, int n, int cpu)
{
	struct xfdr_trace *t = ts_open_verified(path);
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	int i;

	assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_FILE, &it, &err), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
		assert_int_equal(ev.tsc, want[i]);
		if (cpu >= 0)
			assert_int_equal(ev.cpu, cpu);
	}
	xfdr_trace_close(t);
}

/* Deltas just below, at and above 2^32, and a clock that went backwards. */
static void tsc_wrap_paths(void **state)
{
	const uint64_t b = 5000, t1 = b + 0xffffffffull, t2 = t1 + 0x100000000ull, t3 = t2 + 1,
		       t4 = t3 + 0x100000001ull, t5 = t4 - 1;
	struct ts_yrec r[8];
	uint8_t *data, *p;
	const uint64_t want[6] = {b, t1, t2, t3, t4, t4};

	(void)state;
	start_session(256, 4);
	rec_function_at(b, 4, XFDR_FN_ENTER, 1);
	rec_function_at(t1, 4, XFDR_FN_ENTER, 2); /* delta 2^32 - 1: fits */
	rec_function_at(t2, 4, XFDR_FN_ENTER, 3); /* delta 2^32: TSCWrap */
	rec_function_at(t3, 4, XFDR_FN_EXIT, 3);
	rec_function_at(t4, 4, XFDR_FN_EXIT, 2); /* delta 2^32 + 1: TSCWrap */
	rec_function_at(t5, 4, XFDR_FN_EXIT, 1); /* backwards by one: written at t4 */
	data = flush_read(256, 1);
	p = data + HDR;
	expect_preamble(p, 4, b);
	p += PRE;
	expect_fn(p, 0, 1, 0);
	expect_fn(p + 8, 0, 2, 0xffffffffu);
	expect_md_tsc(p + 16, K_TSC_WRAP, t2);
	expect_fn(p + 32, 0, 3, 0);
	expect_fn(p + 40, 1, 3, 1);
	expect_md_tsc(p + 48, K_TSC_WRAP, t4);
	expect_fn(p + 64, 1, 2, 0);
	expect_fn(p + 72, 1, 1, 0);
	expect_eob(p + 80, 256 - PRE - 80);
	free(data);

	expect_event_times(want, 6, 4);

	assert_int_equal(llvm_records(r, 8), 7); /* and the drop-count buffer's */
	assert_int_equal(r[0].tsc, b);
	assert_int_equal(r[1].tsc, t1);
	assert_int_equal(r[2].tsc, t2);
	assert_int_equal(r[3].tsc, t3);
	assert_int_equal(r[4].tsc, t4);
	assert_int_equal(r[5].tsc, t4);
	assert_int_equal(r[5].fid, 1);
	(void)t5;
}

/*
 * The fast path takes a delta only within one high half of the TSC; the slow path takes the
 * rest: a delta that fits across a multiple of 2^32 is an ordinary record (no TSCWrap), and a
 * clock one tick back in the same high half is written at the thread's time.
 */
static void delta_across_a_high_half(void **state)
{
	const uint64_t b = 0x1fffffff0ull, t1 = 0x200000010ull, t2 = t1 + 5, t3 = t2 - 1;
	const uint64_t want[4] = {b, t1, t2, t2};
	uint8_t *data, *p;

	(void)state;
	start_session(256, 4);
	rec_function_at(b, 4, XFDR_FN_ENTER, 1);
	rec_function_at(t1, 4, XFDR_FN_ENTER, 2); /* across 2^33: delta 0x20 */
	rec_function_at(t2, 4, XFDR_FN_EXIT, 2);  /* the fast path again */
	rec_function_at(t3, 4, XFDR_FN_EXIT, 1);  /* backwards by one */
	data = flush_read(256, 1);
	p = data + HDR;
	expect_preamble(p, 4, b);
	p += PRE;
	expect_fn(p, 0, 1, 0);
	expect_fn(p + 8, 0, 2, 0x20);
	expect_fn(p + 16, 1, 2, 5);
	expect_fn(p + 24, 1, 1, 0);
	expect_eob(p + 32, 256 - PRE - 32);
	free(data);
	expect_event_times(want, 4, 4);
}

static int pin(int cpu);
static void unpin(void);

/*
 * The hooks' clock read gives a CPU of CLOCK_CPU_UNKNOWN and up when the thread's rseq area has
 * none (cpu_id -1: not registered, -2: registration failed). Such a value matches no thread's
 * CPU, and the slow path records the CPU sched_getcpu() gives: the pinned one, never 0xfffe.
 */
static void unknown_cpu_takes_the_real_one(void **state)
{
	uint8_t *data, *p;

	(void)state;
	if (pin(0))
		skip();
	start_session(256, 4);
	rec_function_at(100, 0xfffffffeu, XFDR_FN_ENTER, 1);
	rec_function_at(110, 0xffffffffu, XFDR_FN_ENTER, 2);
	rec_function_at(120, 0, XFDR_FN_EXIT, 2);
	rec_function_at(130, CLOCK_CPU_UNKNOWN, XFDR_FN_EXIT, 1);
	unpin();
	data = flush_read(256, 1);
	p = data + HDR;
	expect_preamble(p, 0, 100);
	p += PRE;
	expect_fn(p, 0, 1, 0);
	expect_fn(p + 8, 0, 2, 10);
	expect_fn(p + 16, 1, 2, 10);
	expect_fn(p + 24, 1, 1, 10);
	expect_eob(p + 32, 256 - PRE - 32);
	free(data);
	reader_ok();
}

/*
 * A signal handler records between an event's clock read and its record (the hooks read the
 * clock before their guard): the interrupted event, written after the handler's, takes their
 * time; no TSCWrap back to its own (a negative self time in every reader before).
 */
static void handler_inside_an_event_keeps_time(void **state)
{
	static const uint64_t want[6] = {100, 300, 400, 400, 500, 600};
	uint8_t *data, *p;

	(void)state;
	start_session(256, 4);
	rec_function_at(100, 2, XFDR_FN_ENTER, 1);
	rec_function_at(300, 2, XFDR_FN_ENTER, 7); /* the handler */
	rec_function_at(400, 2, XFDR_FN_EXIT, 7);
	rec_function_at(200, 2, XFDR_FN_ENTER, 2); /* its clock read before the handler ran */
	rec_function_at(500, 2, XFDR_FN_EXIT, 2);
	rec_function_at(600, 2, XFDR_FN_EXIT, 1);
	data = flush_read(256, 1);
	p = data + HDR + PRE;
	expect_fn(p, 0, 1, 0);
	expect_fn(p + 8, 0, 7, 200);
	expect_fn(p + 16, 1, 7, 100);
	expect_fn(p + 24, 0, 2, 0);
	expect_fn(p + 32, 1, 2, 100);
	expect_fn(p + 40, 1, 1, 100);
	expect_eob(p + 48, 256 - PRE - 48);
	free(data);
	expect_event_times(want, 6, -1);
}

/* A new CPU writes NewCPUId (16-bit id, beyond 255) and restarts the delta at 0. */
static void cpu_change(void **state)
{
	struct ts_yrec r[8];
	uint8_t *data, *p;

	(void)state;
	start_session(256, 4);
	rec_function_at(100, 3, XFDR_FN_ENTER, 1);
	rec_function_at(150, 300, XFDR_FN_ENTER, 2);
	assert_int_equal(rec_custom_event_at(160, 7, "abcdefgh", 8), 0); /* no NewCPUId */
	rec_function_at(170, 300, XFDR_FN_EXIT, 2);
	rec_function_at(200, 3, XFDR_FN_EXIT, 1);
	data = flush_read(256, 1);
	p = data + HDR + PRE;
	expect_fn(p, 0, 1, 0);
	expect_new_cpu(p + 8, 300, 150);
	expect_fn(p + 24, 0, 2, 0);
	assert_int_equal(p[32], K_CUSTOM);
	expect_fn(p + 56, 1, 2, 20);
	expect_new_cpu(p + 64, 3, 200);
	expect_fn(p + 80, 1, 1, 0);
	free(data);
	reader_ok();
	assert_int_equal(llvm_records(r, 8), 6);
	assert_int_equal(r[1].cpu, 300);
	assert_int_equal(r[3].cpu, 300);
	assert_int_equal(r[3].tsc, 170);
	assert_int_equal(r[4].cpu, 3);
}

/* An exhausted pool drops and counts (no_buffer); the drop buffer and .map say so. */
static void pool_exhaustion_counted(void **state)
{
	char map_path[600], value[128];
	struct ts_yrec r[16];
	uint8_t *data;
	size_t n;
	char *map;
	int i;

	(void)state;
	start_session(128, 2); /* 8 function records per buffer */
	for (i = 0; i < 11; i++)
		rec_function_at(1000 + (uint64_t)i, 0, XFDR_FN_ENTER, (uint32_t)i);
	assert_int_equal(rec_custom_event_at(2000, 0, "x", 1), -ENOBUFS);
	data = flush_read(128, 2);
	/* The second buffer: the 8 open calls (72 bytes), then one entry fills it exactly. */
	expect_stack(data + HDR + 128 + PRE, 1008, 8, (const uint32_t[]){0, 1, 2, 3, 4, 5, 6, 7},
		     8);
	expect_fn(data + HDR + 128 + PRE + MD + 56, 0, 8, 0);
	assert_int_equal(PRE + MD + 56 + FN, 128);
	free(data);
	reader_ok();
	n = llvm_records(r, 16);
	assert_int_equal(n, 11); /* 8 entries, the stack context, 1 entry, the drop buffer */
	for (i = 0; i < 8; i++)
		assert_int_equal(r[i].fid, i);
	assert_string_equal(r[8].kind, "custom-event");
	assert_int_equal(r[9].fid, 8);
	assert_string_equal(r[10].kind, "custom-event");
	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &n);
	assert_string_equal(ts_map_value(map, "dropped\tno_buffer", value, sizeof(value)), "3");
	assert_string_equal(ts_map_value(map, "dropped\ttotal", value, sizeof(value)), "3");
	assert_string_equal(ts_map_value(map, "buffers_written", value, sizeof(value)), "2");
	free(map);
}

/*
 * The drop buffer, byte by byte: totals and this thread's entry for every cause a thread can
 * have (re-entry is simulated by holding the guard, as a signal handler would find it).
 */
static void drop_buffer_layout(void **state)
{
	struct ts_yrec r[40];
	uint8_t *data;
	int i;

	(void)state;
	start_session(256, 1);
	for (i = 0; i < 29; i++) /* 24 fit in (256 - 48 - 16) bytes; 5 find no buffer */
		rec_function_at(100 + (uint64_t)i, 0, XFDR_FN_ENTER, 1);
	assert_int_equal(rec_custom_event_at(200, 0, path, 300), -EMSGSIZE);
	rec_self.slot->busy = 1;
	xfdr_enter(2);
	assert_int_equal(rec_custom_event_at(201, 0, "x", 1), -EDEADLK);
	rec_self.slot->busy = 0;
	data = flush_read(256, 1);
	expect_fn(data + HDR + PRE + 23 * FN, 0, 1, 1);
	expect_eob(data + HDR + 256 - 16, 16);
	expect_drop_buffer(data + HDR + 256, 0, 5, 2, 1, 1, 100);
	expect_eob(data + HDR + 256 + PRE + MD + 64 + 40, 256 - (PRE + MD + 64 + 40));
	free(data);
	reader_ok();
	assert_int_equal(llvm_records(r, 40), 25);
	assert_string_equal(r[24].kind, "custom-event");
	assert_memory_equal(r[24].data, "\"XFDRDROP\\x02\\0\\0\\0\\x01", 20);
}

/* Stopped: nothing recorded, nothing counted. A new session never writes the old buffer. */
static void stop_and_new_session(void **state)
{
	uint8_t *data;

	(void)state;
	start_session(128, 4);
	rec_function_at(10, 0, XFDR_FN_ENTER, 1);
	assert_int_equal(xfdr_stop(), 0);
	rec_function_at(11, 0, XFDR_FN_ENTER, 2);
	assert_int_equal(rec_custom_event_at(12, 0, "x", 1), -EAGAIN);
	assert_int_equal(xfdr_start(), 0);
	rec_function_at(13, 0, XFDR_FN_EXIT, 1);
	data = flush_read(128, 1);
	expect_fn(data + HDR + PRE, 0, 1, 0);
	expect_fn(data + HDR + PRE + 8, 1, 1, 3);
	expect_eob(data + HDR + PRE + 16, 128 - PRE - 16);
	free(data);
	assert_int_equal(xfdr_stop(), 0);

	start_session(128, 4); /* same geometry: buffers zeroed in place */
	rec_function_at(20, 1, XFDR_FN_ENTER, 9);
	data = flush_read(128, 1);
	expect_preamble(data + HDR, 1, 20);
	expect_fn(data + HDR + PRE, 0, 9, 0);
	expect_eob(data + HDR + PRE + 8, 128 - PRE - 8);
	free(data);
	reader_ok();
}

/* Pin the calling thread to one CPU; returns 0 or -1 if that CPU is not usable. */
static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -1 : 0;
}

static void unpin(void)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void check_clock_source(int requested, int expect_source)
{
	int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN), c;
	uint64_t last = 0;

	assert_int_equal(clock_init(requested), expect_source);
	assert_int_equal(clock_source(), expect_source);
	for (c = 0; c < cpus && c < 4; c++) {
		unsigned cpu = 9999;
		struct clock_now now;
		uint64_t tsc;

		if (pin(c))
			continue;
		tsc = clock_read(&cpu);
		assert_int_equal(cpu, (unsigned)c);
		/* the hooks' read: inline where rdtscp or the rseq area gives the CPU */
		if (clock_now_inline(&now)) {
			assert_true(expect_source != CLOCK_SRC_RDTSC || clock_cpu_from_rseq());
			assert_int_equal(now.cpu, (unsigned)c);
			assert_true(clock_now_tsc(&now) > tsc);
		} else {
			assert_true(expect_source == CLOCK_SRC_RDTSC && !clock_cpu_from_rseq());
		}
		assert_int_equal(clock_getcpu(), (unsigned)c);
		assert_int_equal(clock_getcpu_slow(), (unsigned)c);
		assert_true(tsc > last);
		last = tsc;
	}
	unpin();
}

static int cpu_has_rdtscp(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;

	if (!__get_cpuid(0x80000001u, &a, &b, &c, &d))
		return 0;
	return (d >> 27) & 1;
#else
	return 0;
#endif
}

/* rdtsc + sched_getcpu (what the target VMs need) and rdtscp both give the real CPU. */
static void clock_paths(void **state)
{
	(void)state;
#if defined(__x86_64__) || defined(__i386__)
	assert_int_equal(clock_cpu_has_rdtscp(), cpu_has_rdtscp());
	check_clock_source(XFDR_CLOCK_RDTSC, CLOCK_SRC_RDTSC);
	if (cpu_has_rdtscp())
		check_clock_source(XFDR_CLOCK_RDTSCP, CLOCK_SRC_RDTSCP);
	else
		check_clock_source(XFDR_CLOCK_RDTSCP, CLOCK_SRC_RDTSC);
	/* auto: rdtscp only where it is there and no rseq area gives the CPU for free. */
	check_clock_source(XFDR_CLOCK_AUTO, cpu_has_rdtscp() && !clock_cpu_from_rseq()
						? CLOCK_SRC_RDTSCP
						: CLOCK_SRC_RDTSC);
#else
	check_clock_source(XFDR_CLOCK_AUTO, CLOCK_SRC_PORTABLE);
#endif
}

/* End to end with clock=rdtsc: the file's NewCPUId names the CPU the thread was pinned to. */
static void rdtsc_clock_in_file(void **state)
{
	struct xfdr_options o;
	int cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	uint8_t *data;

	(void)state;
	xfdr_stop();
	xfdr_options_default(&o);
	o.buffer_size = 128;
	o.buffer_max = 2;
	o.output = ts_dir;
	o.flush_at_exit = 0;
	o.clock = XFDR_CLOCK_RDTSC;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pin(cpu), 0);
	xfdr_enter(5);
	xfdr_exit(5);
	unpin();
	data = flush_read(128, 1);
	assert_int_equal(ts_get16(data + HDR + 33), cpu);
	expect_fn(data + HDR + PRE, 0, 5, 0);
	assert_int_equal(ts_get32(data + HDR + PRE + 8), 0x52); /* exit (1 << 1) | 5 << 4 */
	free(data);
	/* Back to the automatic choice for the tests that follow. */
	clock_init(XFDR_CLOCK_AUTO);
}

/* The frequency in the header agrees with elapsed CLOCK_MONOTONIC time within 0.1%. */
static void frequency_within_a_thousandth(void **state)
{
	struct timespec a, b, nap = {.tv_sec = 0, .tv_nsec = 300000000};
	uint64_t tsc_a, tsc_b, hz, file_hz;
	double measured, ns;
	uint8_t *data;

	(void)state;
	start_session(128, 2);
	clock_gettime(CLOCK_MONOTONIC, &a);
	tsc_a = clock_tsc();
	nanosleep(&nap, NULL);
	tsc_b = clock_tsc();
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	measured = (double)(tsc_b - tsc_a) * 1e9 / ns;
	hz = clock_tsc_hz();
	data = flush_read(128, 0);
	file_hz = ts_get64(data + 8);
	free(data);
	if (fabs((double)hz - measured) > measured * 1e-3 ||
	    fabs((double)file_hz - measured) > measured * 1e-3)
		fail_msg("tsc_hz %llu, in file %llu, measured %.0f", (unsigned long long)hz,
			 (unsigned long long)file_hz, measured);
}

/* Header bitfield: both TSC bits equal the CPU's invariant-TSC flag. */
static void header_tsc_flags(void **state)
{
	unsigned want = 0;
	uint8_t *data;

	(void)state;
#if defined(__x86_64__) || defined(__i386__)
	{
		unsigned a, b, c, d;

		if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u) {
			__cpuid(0x80000007u, a, b, c, d);
			want = (d >> 8) & 1 ? 3 : 0;
		}
	}
#endif
	start_session(128, 2);
	data = flush_read(128, 0);
	assert_int_equal(ts_get32(data + 4), want);
	expect_zero(data + 24, 8);
	free(data);
}

/* Public API: XFDR_SCOPE exits on every path; arguments; the .map names the thread. */
static int scoped(int n)
{
	XFDR_SCOPE(40);
	if (n == 1)
		return 1;
	XFDR_ENTER_ARGS(41, (uint64_t)n, 99);
	XFDR_EXIT(41);
	return 0;
}

static void public_api_and_map(void **state)
{
	char map_path[600], value[256], expect[64];
	struct ts_yrec r[16];
	size_t n;
	char *map;
	uint8_t *data;

	(void)state;
	start_session(256, 4);
	pthread_setname_np(pthread_self(), "rec\ttest");
	scoped(0);
	scoped(1);
	xfdr_tail_exit(42);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	reader_ok();
	assert_int_equal(llvm_records(r, 16), 8);
	assert_int_equal(r[0].fid, 40);
	assert_string_equal(r[0].kind, "function-enter");
	assert_string_equal(r[1].kind, "function-enter-arg");
	assert_string_equal(r[1].args, "0, 99 ");
	assert_string_equal(r[2].kind, "function-exit");
	assert_int_equal(r[3].fid, 40);
	assert_string_equal(r[3].kind, "function-exit");
	assert_string_equal(r[4].kind, "function-enter");
	assert_string_equal(r[5].kind, "function-exit");
	assert_string_equal(r[6].kind, "function-tail-exit");
	assert_int_equal(r[6].fid, 42);
	assert_int_equal(r[6].thread, MAIN_THREAD_ID);

	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &n);
	snprintf(expect, sizeof(expect), "%d", (int)getpid());
	assert_string_equal(ts_map_value(map, "xfdr-map", value, sizeof(value)), "1");
	assert_string_equal(ts_map_value(map, "pid", value, sizeof(value)), expect);
	assert_string_equal(ts_map_value(map, "trace", value, sizeof(value)), path);
	assert_string_equal(ts_map_value(map, "buffer_size", value, sizeof(value)), "256");
	data = ts_slurp(path, &n);
	snprintf(expect, sizeof(expect), "%llu", (unsigned long long)ts_get64(data + 8));
	free(data);
	assert_string_equal(ts_map_value(map, "tsc_hz", value, sizeof(value)), expect);
	/* tid, thread id, name, 3 drop causes, overwritten, elided, stack_overflow,
	 * overwritten_events, filtered_calls, max_depth_calls */
	snprintf(expect, sizeof(expect), "%u\t%u\trec?test\t0\t0\t0\t0\t0\t0\t0\t0\t0", ts_tid(),
		 MAIN_THREAD_ID);
	assert_string_equal(ts_map_value(map, "thread", value, sizeof(value)), expect);
	free(map);
	pthread_setname_np(pthread_self(), "test_runtime_re");
}

/*
 * Ring mode, one buffer of 136 bytes (9 records): call 2 open, the buffer full, the flusher's
 * pin on it (taken here as a flush takes it) leaves no buffer for the exit of 2: dropped, the
 * trace keeps the call open. The next buffer reuses the same one (its 9 function records
 * count as overwritten_events) and begins with a stack context of depth 0, although no call
 * is open: it tells a reader that the open call closed.
 */
static void lost_exit_gives_stack_context(void **state)
{
	static struct mp_thread mt[8];
	const struct mp_thread *me;
	struct pool_desc *d;
	uint8_t *data, *b0;
	char *map;
	size_t n;
	int i;

	(void)state;
	assert_int_equal(ts_init_mode(136, 1, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	rec_function_at(100, 0, XFDR_FN_ENTER, 2);
	for (i = 0; i < 4; i++) {
		rec_function_at(101 + 2 * (uint64_t)i, 0, XFDR_FN_ENTER, 3);
		rec_function_at(102 + 2 * (uint64_t)i, 0, XFDR_FN_EXIT, 3);
	}
	d = &rt_pool.descs[0];
	assert_int_equal(pool_pin(d, POOL_GEN(__atomic_load_n(&d->ctl, __ATOMIC_ACQUIRE))), 1);
	rec_function_at(110, 0, XFDR_FN_EXIT, 2); /* no room, the only buffer pinned */
	pool_unpin(d);
	rec_function_at(120, 0, XFDR_FN_ENTER, 5);
	rec_function_at(121, 0, XFDR_FN_EXIT, 5);
	/* No drop buffer: its 128 bytes leave 8 in a 136-byte one, too few for EndOfBuffer. */
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	data = ts_slurp(path, &n);
	assert_int_equal(n, HDR + 136);
	b0 = data + HDR;
	expect_preamble(b0, 0, 120);
	expect_stack(b0 + PRE, 120, 0, NULL, 0);
	expect_fn(b0 + PRE + MD + 24, 0, 5, 0);
	expect_fn(b0 + PRE + MD + 24 + FN, 1, 5, 1);
	expect_eob(b0 + PRE + MD + 24 + 2 * FN, 136 - PRE - MD - 24 - 2 * FN);
	free(data);
	reader_ok();
	assert_int_equal(ts_llvm_yaml(path, NULL), 0);
	map = mp_read(path);
	n = mp_threads(map, mt, 8);
	me = mp_thread_of(mt, n, ts_tid());
	assert_non_null(me);
	/* 12 issued = 2 in the trace + 1 dropped + 9 overwritten_events */
	assert_int_equal(me->no_buffer, 1);
	assert_int_equal(me->overwritten, 1);
	assert_int_equal(me->overwritten_events, 9);
	assert_int_equal(mp_number(map, "overwritten_events"), 9);
	free(map);
	xfdr_stop();
}

/* per_thread_files: one file per thread, each with only that thread's buffers. */
static void *worker(void *arg)
{
	uint32_t fid = (uint32_t)(uintptr_t)arg;
	uint32_t *tid = malloc(sizeof(*tid));

	*tid = ts_tid();
	xfdr_enter(fid);
	xfdr_exit(fid);
	return tid;
}

static void per_thread_files(void **state)
{
	struct ts_yrec r[8];
	pthread_t th[2];
	uint32_t tids[3];
	char value[600], *map, *line;
	size_t n, files = 0;
	unsigned ids_seen = 0;
	int i;

	(void)state;
	assert_int_equal(ts_init(256, 8, 1), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(100);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(101 + i)),
				 0);
	for (i = 0; i < 2; i++) {
		void *ret;

		assert_int_equal(pthread_join(th[i], &ret), 0);
		tids[i + 1] = *(uint32_t *)ret;
		free(ret);
	}
	tids[0] = ts_tid();
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_string_equal(path + strlen(path) - 4, ".map");
	map = (char *)ts_slurp(path, &n);
	for (line = map; (line = strstr(line, "trace\t")); line++) {
		char file[512];
		size_t k, want;
		unsigned who;

		sscanf(line + 6, "%511[^\n]", file);
		snprintf(path, sizeof(path), "%s", file);
		reader_ok();
		n = llvm_records(r, 8);
		assert_true(r[0].fid >= 100 && r[0].fid <= 102);
		who = r[0].fid - 100;
		want = who ? 3 : 2; /* the main thread's entry, or a worker's pair; the drops */
		assert_int_equal(n, want);
		/*
		 * Every record of the file is its thread's (the drop event has its id too): ids
		 * count from 1 in the order threads took buffers, the main thread first.
		 */
		for (k = 0; k < want; k++)
			assert_int_equal(r[k].thread, r[0].thread);
		if (!who)
			assert_int_equal(r[0].thread, MAIN_THREAD_ID);
		assert_true(r[0].thread >= 1 && r[0].thread <= 3);
		assert_false(ids_seen & (1u << r[0].thread));
		ids_seen |= 1u << r[0].thread;
		assert_non_null(strrchr(file, 't'));
		assert_int_equal(strtoul(strrchr(file, 't') + 1, NULL, 10), tids[who]);
		files++;
	}
	assert_int_equal(files, 3);
	assert_non_null(ts_map_value(map, "dropped\ttotal", value, sizeof(value)));
	free(map);
}

/* start=1 in XFDR_OPTIONS records from load; the flush at exit writes the file. */
static int child_main(void)
{
	xfdr_enter(77);
	xfdr_exit(77);
	return 0;
}

/* This binary again as "--child" with XFDR_OPTIONS=options, stderr to /dev/null; must exit 0. */
static pid_t run_child(const char *options)
{
	char *argv[] = {"test_runtime_record", "--child", NULL};
	char env_options[320];
	char *env[] = {env_options, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .program = "/proc/self/exe",
	    .env_add = env,
	    .err = {.to = CHILD_DEVNULL},
	};
	struct child_result r;

	assert_true(snprintf(env_options, sizeof(env_options), "XFDR_OPTIONS=%s", options) <
		    (int)sizeof(env_options));
	child_run(&spec, &r);
	child_result_free(&r);
	assert_true(r.signal == 0 && r.status == 0);
	return r.pid;
}

static void start_at_load_and_flush_at_exit(void **state)
{
	char options[300];
	struct ts_yrec r[8];
	pid_t pid;

	(void)state;
	snprintf(options, sizeof(options), "start=1 output=%s buffer_size=4096 buffer_max=4",
		 ts_dir);
	pid = run_child(options);
	snprintf(path, sizeof(path), "%sxfdr-test_runtime_record-%d-0.xray", ts_dir, (int)pid);
	reader_ok();
	assert_int_equal(llvm_records(r, 8), 3);
	assert_int_equal(r[0].fid, 77);
	assert_string_equal(r[1].kind, "function-exit");

	/* flush_at_exit=0: no file. */
	snprintf(options, sizeof(options), "start=1 flush_at_exit=0 output=%s buffer_max=4",
		 ts_dir);
	pid = run_child(options);
	snprintf(path, sizeof(path), "%sxfdr-test_runtime_record-%d-0.xray", ts_dir, (int)pid);
	assert_int_equal(access(path, F_OK), -1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(rotation_at_exact_boundary),
	    cmocka_unit_test(exact_fill_without_end_of_buffer),
	    cmocka_unit_test(groups_never_straddle),
	    cmocka_unit_test(too_large_dropped_and_counted),
	    cmocka_unit_test(tsc_wrap_paths),
	    cmocka_unit_test(delta_across_a_high_half),
	    cmocka_unit_test(unknown_cpu_takes_the_real_one),
	    cmocka_unit_test(handler_inside_an_event_keeps_time),
	    cmocka_unit_test(cpu_change),
	    cmocka_unit_test(pool_exhaustion_counted),
	    cmocka_unit_test(drop_buffer_layout),
	    cmocka_unit_test(stop_and_new_session),
	    cmocka_unit_test(clock_paths),
	    cmocka_unit_test(rdtsc_clock_in_file),
	    cmocka_unit_test(frequency_within_a_thousandth),
	    cmocka_unit_test(header_tsc_flags),
	    cmocka_unit_test(public_api_and_map),
	    cmocka_unit_test(lost_exit_gives_stack_context),
	    cmocka_unit_test(per_thread_files),
	    cmocka_unit_test(start_at_load_and_flush_at_exit),
	};

	/* The *_at forms are given the clock: buffers taken for entries keep it (recorder.h). */
	rec_inspect_clock_given(1);
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_main();
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
