/*
 * tests/system/test_cli.c - the `xfdr` command, run as a user runs it.
 *
 * Every test fork/execs $XFDR_BIN with captured stdout and stderr and checks the exit status
 * and the exact messages. Traces are built with the writer (writer/encode.h, writer/file.h)
 * in a private temporary directory. Expected values come from two independent places:
 *  - hand-computed from the spec (the literal YAML and dump lines below; the arithmetic is
 *    in the comments), and
 *  - `$XFDR_LLVM_XRAY convert --output-format=yaml`, whose output xfdr must reproduce byte
 *    for byte, sorted (llvm-xray's default) and with --sort=false.
 *
 * What legitimately differs from llvm-xray is kept out of the compared files rather than
 * normalised away, and is checked on its own:
 *  - a file with no buffers: llvm-xray 14 fails to load it; xfdr prints "records: []";
 *  - a thread's buffers out of WallClockTime order: llvm-xray's comparator is not a strict
 *    weak order and may misorder them, so compared files only use orders it sorts right;
 *  - every compared buffer ends at a multiple of 8 bytes before its padding, because
 *    llvm-xray parses v1 padding as 8-byte records (custom payloads get a filler event).
 */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "writer/file.h"
#include "writer/encode.h"
#include "xfdr/format.h"

/* xfdr with its stdout closed before exec, stderr captured. */
static const struct child_spec stdout_closed = {
    .out = {.to = CHILD_CLOSED},
    .err = {.to = CHILD_CAPTURE},
};

/* ---- Building traces with the writer ---------------------------------------------------- */

struct tb {
	uint8_t *data;
	size_t len;
	size_t buf_bytes;
	size_t cur;  /* offset of the open buffer */
	size_t used; /* bytes used in it */
	int open;
};

static void tb_init(struct tb *b, size_t buf_bytes, uint64_t hz, int constant, int nonstop)
{
	struct wr_file_header h = {.cycle_frequency_hz = hz,
				   .buffer_bytes = buf_bytes,
				   .constant_tsc = constant,
				   .nonstop_tsc = nonstop};

	memset(b, 0, sizeof(*b));
	b->buf_bytes = buf_bytes;
	b->data = malloc(XFDR_FILE_HEADER_BYTES);
	assert_non_null(b->data);
	assert_int_equal(wr_encode_file_header(b->data, &h), XFDR_FILE_HEADER_BYTES);
	b->len = XFDR_FILE_HEADER_BYTES;
}

static void tb_end(struct tb *b)
{
	if (!b->open)
		return;
	assert_int_equal(wr_close_buffer(b->data + b->cur, b->used, b->buf_bytes), 0);
	b->open = 0;
}

/* Room for n more bytes in the open buffer, honouring the EndOfBuffer rule of wr_fits(). */
static uint8_t *tb_room(struct tb *b, size_t n)
{
	uint8_t *p;

	assert_true(b->open);
	assert_true(wr_fits(b->buf_bytes - b->used, n));
	p = b->data + b->cur + b->used;
	b->used += n;
	return p;
}

static void tb_buffer(struct tb *b, uint16_t tid, uint64_t sec, uint32_t usec, uint16_t cpu,
		      uint64_t tsc)
{
	tb_end(b);
	b->data = realloc(b->data, b->len + b->buf_bytes);
	assert_non_null(b->data);
	memset(b->data + b->len, 0, b->buf_bytes);
	b->cur = b->len;
	b->len += b->buf_bytes;
	b->used = 0;
	b->open = 1;
	wr_new_buffer(tb_room(b, XFDR_MD_RECORD_BYTES), tid);
	wr_wall_clock_time(tb_room(b, XFDR_MD_RECORD_BYTES), sec, usec);
	wr_new_cpu_id(tb_room(b, XFDR_MD_RECORD_BYTES), cpu, tsc);
}

static void tb_fn(struct tb *b, unsigned action, uint32_t fid, uint32_t delta)
{
	wr_function(tb_room(b, XFDR_FN_RECORD_BYTES), action, fid, delta);
}

static void tb_arg(struct tb *b, uint64_t v)
{
	wr_call_argument(tb_room(b, XFDR_MD_RECORD_BYTES), v);
}

static void tb_cpu(struct tb *b, uint16_t cpu, uint64_t tsc)
{
	wr_new_cpu_id(tb_room(b, XFDR_MD_RECORD_BYTES), cpu, tsc);
}

static void tb_wrap(struct tb *b, uint64_t tsc)
{
	wr_tsc_wrap(tb_room(b, XFDR_MD_RECORD_BYTES), tsc);
}

static void tb_custom(struct tb *b, const void *p, uint32_t n, uint64_t tsc)
{
	uint8_t *d = tb_room(b, XFDR_MD_RECORD_BYTES + n);

	wr_custom_event_marker(d, n, tsc);
	memcpy(d + XFDR_MD_RECORD_BYTES, p, n);
}

/* A custom event, plus a "zzz" filler event that brings the buffer back to a multiple of 8. */
static void tb_custom8(struct tb *b, const void *p, uint32_t n, uint64_t tsc)
{
	tb_custom(b, p, n, tsc);
	if (n % 8)
		tb_custom(b, "zzzzzzz", 8 - n % 8, tsc);
}

static const char *tb_write(struct tb *b, const char *name)
{
	const char *path = scratch_path(name);
	FILE *f;

	tb_end(b);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b->data, 1, b->len, f), b->len);
	assert_int_equal(fclose(f), 0);
	free(b->data);
	b->data = NULL;
	return path;
}

/* ---- Comparing with llvm-xray ----------------------------------------------------------- */

static void compare_with_llvm(const char *path, const char *sort)
{
	char sort_opt[32];
	char *argv[] = {(char *)child_llvm_xray(),
			"convert",
			"--output-format=yaml",
			sort_opt,
			(char *)path,
			NULL};
	struct child_result want, got;

	snprintf(sort_opt, sizeof(sort_opt), "--sort=%s", sort);
	child_capture(argv, &want);
	if (want.status != 0) {
		print_error("%s failed on %s: %s\n", child_llvm_xray(), path, want.err);
		fail();
	}
	child_xfdr(&got, "convert", "--output-format=yaml", sort_opt, path, NULL);
	assert_int_equal(got.status, 0);
	assert_int_equal(got.err_len, 0);
	if (got.out_len != want.out_len || memcmp(got.out, want.out, got.out_len)) {
		size_t i = 0;

		while (i < got.out_len && i < want.out_len && got.out[i] == want.out[i])
			i++;
		print_error("%s %s: xfdr and llvm-xray differ at byte %zu:\n xfdr: %.200s\n llvm: "
			    "%.200s\n",
			    path, sort_opt, i, got.out + (i > 80 ? i - 80 : 0),
			    want.out + (i > 80 ? i - 80 : 0));
		fail();
	}
	child_result_free(&want);
	child_result_free(&got);
}

static void compare_both_orders(const char *path)
{
	compare_with_llvm(path, "true");
	compare_with_llvm(path, "false");
}

/* ---- Fixtures ----------------------------------------------------------------------------- */

static int setup(void **state)
{
	signal(SIGPIPE, SIG_IGN);
	return scratch_setup(state);
}

/*
 * The hand-checked trace. Buffer 256 bytes at offset 32; records and their offsets:
 *   32 NewBuffer tid 42 | 48 WallClockTime 7 s 8 us | 64 NewCPUId cpu 3 tsc 100
 *   80 Entry f1 +5 -> 105 | 88 Entry_Args f2 +10 -> 115 | 96 arg 7 | 112 arg 2^63
 *  128 Exit f2 +0xffffffff -> 115 + 4294967295 = 4294967410 | 136 TSCWrap 1000
 *  152 Tail_Exit f1 +1 -> 1001 | 160 custom 8 bytes "ab cd ef" tsc 50 (base stays 1001)
 *  184 NewCPUId cpu 4 tsc 2000 | 200 Exit f1 +2 -> 2002 | 208 EndOfBuffer, padding to 288:
 *  288 - 224 = 64 bytes.
 */
static const char *small_trace(const char *name)
{
	struct tb b;

	tb_init(&b, 256, 1000000, 1, 0);
	tb_buffer(&b, 42, 7, 8, 3, 100);
	tb_fn(&b, XFDR_FN_ENTER, 1, 5);
	tb_fn(&b, XFDR_FN_ENTER_ARGS, 2, 10);
	tb_arg(&b, 7);
	tb_arg(&b, 1ull << 63);
	tb_fn(&b, XFDR_FN_EXIT, 2, 0xffffffffu);
	tb_wrap(&b, 1000);
	tb_fn(&b, XFDR_FN_TAIL_EXIT, 1, 1);
	tb_custom(&b, "ab cd ef", 8, 50);
	tb_cpu(&b, 4, 2000);
	tb_fn(&b, XFDR_FN_EXIT, 1, 2);
	return tb_write(&b, name);
}

#define YAML_HEAD                                                                                  \
	"---\n"                                                                                    \
	"header:\n"                                                                                \
	"  version:         1\n"                                                                   \
	"  type:            1\n"                                                                   \
	"  constant-tsc:    true\n"                                                                \
	"  nonstop-tsc:     false\n"                                                               \
	"  cycle-frequency: 1000000\n"

/* The custom event takes the function id of the thread's previous record (1) and cpu 0. */
#define R_CUSTOM                                                                                   \
	"  - { type: 0, func-id: 1, function: '1', cpu: 0, thread: 42, kind: custom-event, "       \
	"tsc: 50, data: ab cd ef }\n"
#define R_ENTER                                                                                    \
	"  - { type: 0, func-id: 1, function: '1', cpu: 3, thread: 42, kind: function-enter, "     \
	"tsc: 105, data: '' }\n"
#define R_ENTER_ARGS                                                                               \
	"  - { type: 0, func-id: 2, function: '2', args: [ 7, 9223372036854775808 ], cpu: 3, "     \
	"thread: 42, kind: function-enter-arg, tsc: 115, data: '' }\n"
#define R_TAIL                                                                                     \
	"  - { type: 0, func-id: 1, function: '1', cpu: 3, thread: 42, kind: "                     \
	"function-tail-exit, tsc: 1001, data: '' }\n"
#define R_EXIT1                                                                                    \
	"  - { type: 0, func-id: 1, function: '1', cpu: 4, thread: 42, kind: function-exit, "      \
	"tsc: 2002, data: '' }\n"
#define R_EXIT2                                                                                    \
	"  - { type: 0, func-id: 2, function: '2', cpu: 3, thread: 42, kind: function-exit, "      \
	"tsc: 4294967410, data: '' }\n"

static void test_convert_hand_checked(void **state)
{
	const char *path = small_trace("small.xray");
	struct child_result r;

	(void)state;
	child_xfdr(&r, "convert", "--output-format=yaml", path, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	text_assert_equal(r.out, YAML_HEAD
			  "records:\n" R_CUSTOM R_ENTER R_ENTER_ARGS R_TAIL R_EXIT1 R_EXIT2
			  "...\n");
	child_result_free(&r);

	/* Unsorted: recording order. Also the short and single-dash spellings. */
	child_xfdr(&r, "convert", "-f", "yaml", "-sort=false", path, NULL);
	assert_int_equal(r.status, 0);
	text_assert_equal(r.out, YAML_HEAD
			  "records:\n" R_ENTER R_ENTER_ARGS R_EXIT2 R_TAIL R_CUSTOM R_EXIT1
			  "...\n");
	child_result_free(&r);

	child_xfdr(&r, "convert", "--sort", path, NULL);
	assert_int_equal(r.status, 0);
	text_assert_equal(r.out, YAML_HEAD
			  "records:\n" R_CUSTOM R_ENTER R_ENTER_ARGS R_TAIL R_EXIT1 R_EXIT2
			  "...\n");
	child_result_free(&r);
}

static void test_convert_small_matches_llvm(void **state)
{
	(void)state;
	compare_both_orders(small_trace("small-llvm.xray"));
}

/* A file with no buffers is valid; llvm-xray 14 cannot load it, so this is checked alone. */
static void test_convert_header_only(void **state)
{
	struct tb b;
	const char *path;
	struct child_result r;

	(void)state;
	tb_init(&b, 64, 1000000, 1, 0);
	path = tb_write(&b, "empty.xray");
	child_xfdr(&r, "convert", path, NULL);
	assert_int_equal(r.status, 0);
	text_assert_equal(r.out, YAML_HEAD "records:         []\n...\n");
	child_result_free(&r);
}

/*
 * A thread's buffers go by (seconds, microseconds), whatever their file order. Here llvm-xray
 * differs: its comparator ("seconds < and microseconds <") finds {2 s, 100 us} and
 * {1 s, 900 us} equivalent and keeps the file order, so this is checked by hand, unsorted.
 */
static void test_convert_buffer_order_by_wall_clock(void **state)
{
	struct tb b;
	const char *path;
	struct child_result r;

	(void)state;
	tb_init(&b, 128, 1000000, 1, 0);
	tb_buffer(&b, 5, 2, 100, 0, 7000);
	tb_fn(&b, XFDR_FN_EXIT, 1, 1); /* 7001 */
	tb_buffer(&b, 5, 1, 900, 0, 3000);
	tb_fn(&b, XFDR_FN_ENTER, 1, 2); /* 3002 */
	path = tb_write(&b, "wall-order.xray");
	child_xfdr(&r, "convert", "--sort=false", path, NULL);
	assert_int_equal(r.status, 0);
	text_assert_equal(r.out, YAML_HEAD
			  "records:\n"
			  "  - { type: 0, func-id: 1, function: '1', cpu: 0, thread: 5, kind: "
			  "function-enter, tsc: 3002, data: '' }\n"
			  "  - { type: 0, func-id: 1, function: '1', cpu: 0, thread: 5, kind: "
			  "function-exit, tsc: 7001, data: '' }\n...\n");
	child_result_free(&r);
}

/*
 * Everything a thread does, over several buffers: every action, Entry_Args with 0, 1 and
 * many arguments, NewCPUId changes, TSCWrap forwards and backwards, deltas of 0 and
 * 0xffffffff, custom events first in a buffer and between records, an exactly full buffer
 * (no EndOfBuffer), function id 2^28-1, cpu 65535 and a TSC that wraps around 2^64.
 */
static void test_convert_one_thread_matches_llvm(void **state)
{
	struct tb b;
	int i;

	(void)state;
	tb_init(&b, 512, 2500000000ull, 1, 1);
	tb_buffer(&b, 7, 100, 5, 1, 1000);
	tb_custom(&b, "first!!!", 8, 999);
	tb_fn(&b, XFDR_FN_ENTER, 1, 10);
	tb_fn(&b, XFDR_FN_ENTER_ARGS, 2, 5);
	tb_arg(&b, 42);
	tb_arg(&b, UINT64_MAX);
	tb_fn(&b, XFDR_FN_EXIT, 2, 7);
	tb_fn(&b, XFDR_FN_TAIL_EXIT, 3, 1);
	tb_fn(&b, XFDR_FN_EXIT, 1, 3);
	tb_custom(&b, "hello, w", 8, 1500);
	tb_fn(&b, XFDR_FN_ENTER, 4, 100);
	tb_cpu(&b, 3, 5000);
	tb_fn(&b, XFDR_FN_EXIT, 4, 20);
	tb_wrap(&b, 0x100000000ull);
	tb_fn(&b, XFDR_FN_ENTER, 5, 0);
	tb_fn(&b, XFDR_FN_EXIT, 5, 0xffffffffu);
	tb_wrap(&b, 10); /* backwards */
	tb_fn(&b, XFDR_FN_ENTER_ARGS, XFDR_FUNCTION_ID_MAX, 1);
	tb_fn(&b, XFDR_FN_EXIT, XFDR_FUNCTION_ID_MAX, 1);

	tb_buffer(&b, 7, 101, 6, 65535, UINT64_MAX - 5);
	tb_fn(&b, XFDR_FN_ENTER_ARGS, 9, 1);
	for (i = 0; i < 20; i++)
		tb_arg(&b, (uint64_t)i * 1000000007ull);
	tb_fn(&b, XFDR_FN_EXIT, 9, 10); /* UINT64_MAX - 4 + 10 wraps to 5 */

	/*
	 * Exactly full: 48 bytes of preamble, 56 function records and a TSCWrap fill 512 bytes
	 * (a buffer may not end 8 bytes short: no EndOfBuffer would fit).
	 */
	tb_buffer(&b, 7, 102, 7, 2, 1ull << 40);
	for (i = 0; i < 56; i++)
		tb_fn(&b, i % 2 ? XFDR_FN_EXIT : XFDR_FN_ENTER, 11, 3);
	tb_wrap(&b, 1ull << 41);
	assert_int_equal(b.used, 512);
	/* The next buffer must still be found right after it. */
	tb_buffer(&b, 7, 103, 8, 2, 1ull << 42);
	tb_fn(&b, XFDR_FN_ENTER, 12, 0);
	compare_both_orders(tb_write(&b, "one-thread.xray"));
}

/*
 * Several threads: thread 0 (llvm-xray then prints no "thread" key), ids whose order in
 * llvm-xray's hash map is not ascending, equal TSCs on different threads (the stable sort
 * keeps llvm-xray's thread order), a buffer with no events, a thread that only has an empty
 * buffer, and buffers stored out of WallClockTime order (in an order llvm-xray sorts right).
 */
static void test_convert_threads_match_llvm(void **state)
{
	static const uint16_t tids[] = {64773, 0, 54123, 367, 57542, 33338, 1, 65535};
	struct tb b;
	unsigned i, k;

	(void)state;
	tb_init(&b, 256, 1000000000, 0, 1);
	for (i = 0; i < sizeof(tids) / sizeof(tids[0]); i++) {
		tb_buffer(&b, tids[i], 20, 20, (uint16_t)i, 1000);
		for (k = 0; k < 4; k++) {
			tb_fn(&b, XFDR_FN_ENTER, k, 10);
			tb_fn(&b, XFDR_FN_EXIT, k, 10);
		}
		tb_custom(&b, "same tsc", 8, 1010);
		/* An earlier buffer of the same thread, stored later in the file. */
		tb_buffer(&b, tids[i], 10, 10, (uint16_t)i, 500);
		tb_fn(&b, XFDR_FN_ENTER, 77, 10);
		tb_fn(&b, XFDR_FN_EXIT, 77, 0);
	}
	tb_buffer(&b, 54123, 30, 30, 9, 5000); /* no events */
	tb_buffer(&b, 4242, 1, 1, 0, 1);       /* a thread with an empty buffer only */
	tb_buffer(&b, 367, 40, 40, 3, 6000);
	tb_fn(&b, XFDR_FN_ENTER_ARGS, 5, 0); /* Entry_Args without arguments */
	tb_fn(&b, XFDR_FN_EXIT, 5, 1);
	compare_both_orders(tb_write(&b, "threads.xray"));
}

/*
 * Hundreds of pseudo-random thread ids: the hash map grows several times, and every fifth
 * buffer has no events, yet its thread still takes a place in llvm-xray's map.
 */
static void test_convert_many_threads_match_llvm(void **state)
{
	uint32_t x = 12345;
	struct tb b;
	int i;

	(void)state;
	tb_init(&b, 128, 1000, 1, 1);
	for (i = 0; i < 700; i++) {
		x = x * 1103515245u + 12345u;
		tb_buffer(&b, (uint16_t)(x >> 16), (uint64_t)i, (uint32_t)i, 0, 100 + i % 7);
		if (i % 5 == 0)
			continue;
		tb_fn(&b, XFDR_FN_ENTER, (uint32_t)i, 1);
		tb_fn(&b, XFDR_FN_EXIT, (uint32_t)i, 0);
	}
	compare_both_orders(tb_write(&b, "many-threads.xray"));
}

/*
 * Custom-event payloads against llvm-xray's YAML quoting: every byte value at the start,
 * middle and end of an 8-byte payload, YAML keywords, number shapes, quotes and spaces.
 */
static void test_convert_payload_quoting_matches_llvm(void **state)
{
	static const char *const words[] = {
	    "true",  "false",	   "True",  "TRUE",  "FALSE", "False", "fAlse", "yes",	"no",
	    "on",    "null",	   "Null",  "NULL",  "NuLL",  "~",     "1",	"12",	"-1",
	    "+1",    "1.5",	   ".5",    "1e3",   "1E3",   "1e-3",  "1e+3",	"1e",	"e1",
	    "E5",    "0x1F",	   "0x1f",  "0X1F",  "0x",    "0xg",   "0o17",	"0o8",	"0o",
	    "0b11",  ".inf",	   "-.inf", "+.inf", ".Inf",  ".INF",  "inf",	".nan", ".NaN",
	    ".NAN",  "nan",	   "1_000", "0.",    "1.",    "01.5",  "1.e5",	"1.5e", "1e5.",
	    "1.2.3", ".",	   ".e1",   "-",     "--",    "---",   "...",	"a: b", "a:b",
	    "a #b",  "a# b",	   " a",    "a ",    "\ta",   "a\t",   "a\tb",	"a\nb", "a\rb",
	    "it's",  "say \"hi\"", "a\\b",  "a/b",   "0",     "00",    "07",	"09",	"-.5",
	    "+.5",   "+",	   "1-2",   "12:30", "?",     "^a",    "_a",	"a^b",	"a b",
	    "a  b",  "1 2",	   " ",	    "\t",    ",a",    "a,b",   "a]b",
	};
	char p[8];
	struct tb b;
	unsigned c, pos, i;
	uint64_t tsc = 1;

	(void)state;
	tb_init(&b, 4096, 1000, 1, 1);
	tb_buffer(&b, 1, 1, 1, 0, 0);
	for (c = 0; c < 256; c++) {
		for (pos = 0; pos < 3; pos++) {
			static const unsigned at[] = {0, 3, 7};

			if (b.buf_bytes - b.used < 64)
				tb_buffer(&b, 1, tsc, (uint32_t)tsc, 0, tsc);
			memcpy(p, "abcdefg", 7);
			memmove(p + at[pos] + 1, p + at[pos], 7 - at[pos]);
			p[at[pos]] = (char)c;
			tb_custom(&b, p, 8, tsc++);
		}
	}
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (b.buf_bytes - b.used < 64)
			tb_buffer(&b, 1, tsc, (uint32_t)tsc, 0, tsc);
		tb_custom8(&b, words[i], (uint32_t)strlen(words[i]), tsc++);
	}
	compare_both_orders(tb_write(&b, "payload-quoting.xray"));
}

static size_t utf8_encode(uint32_t cp, uint8_t *o)
{
	if (cp < 0x80) {
		o[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (uint8_t)(0xc0 | cp >> 6);
		o[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (uint8_t)(0xe0 | cp >> 12);
		o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (uint8_t)(0xf0 | cp >> 18);
	o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * UTF-8 in payloads: every code point U+0080..U+10FFFF (printed raw or escaped, per
 * llvm-xray's idea of printable), then every two-byte sequence and the boundary cases of
 * three- and four-byte ones, valid or not (an invalid one ends the string with U+FFFD).
 */
static void test_convert_unicode_matches_llvm(void **state)
{
	static const uint8_t edge[] = {0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff};
	uint8_t p[1100];
	struct tb b;
	uint32_t cp = 0x80, tsc = 1;
	unsigned x, y, z;
	size_t n;

	(void)state;
	tb_init(&b, 8192, 1000, 1, 1);
	tb_buffer(&b, 1, 0, 0, 0, 0);
	while (cp <= 0x10ffff) {
		n = 0;
		p[n++] = 'a';
		for (; cp <= 0x10ffff && n < 1000; cp++) {
			if (cp >= 0xd800 && cp <= 0xdfff)
				continue;
			n += utf8_encode(cp, p + n);
		}
		if (b.buf_bytes - b.used < n + 64)
			tb_buffer(&b, 1, tsc, tsc, 0, tsc);
		tb_custom8(&b, p, (uint32_t)n, tsc++);
	}
	for (x = 0x80; x < 0x100; x++) {
		for (y = 0; y < 0x100; y++) {
			uint8_t s[4] = {'A', (uint8_t)x, (uint8_t)y, 'B'};

			if (b.buf_bytes - b.used < 64)
				tb_buffer(&b, 1, tsc, tsc, 0, tsc);
			tb_custom8(&b, s, 4, tsc++);
		}
	}
	for (x = 0xe0; x < 0x100; x++) {
		for (y = 0; y < sizeof(edge); y++) {
			for (z = 0; z < sizeof(edge); z++) {
				uint8_t s[6] = {'A', (uint8_t)x, edge[y], edge[z], 0x80, 'B'};

				if (b.buf_bytes - b.used < 64)
					tb_buffer(&b, 1, tsc, tsc, 0, tsc);
				tb_custom8(&b, s, 6, tsc++);
			}
		}
	}
	compare_both_orders(tb_write(&b, "unicode.xray"));
}

/* ---- Invalid input, output errors --------------------------------------------------------- */

/* small_trace() with the TSCWrap at offset 136 turned into metadata kind 7 (unknown). */
static const char *bad_trace(const char *name)
{
	const char *good = small_trace(name);
	uint8_t byte = wr_md_byte(7);
	int fd = open(good, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &byte, 1, 136), 1);
	assert_int_equal(close(fd), 0);
	return good;
}

static void test_convert_invalid_file(void **state)
{
	const char *path = bad_trace("bad-convert.xray");
	const char *out = scratch_path("bad-convert.yaml");
	char prefix[512];
	struct child_result r;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%s: offset 136: expected ", path);
	child_xfdr(&r, "convert", path, NULL);
	assert_int_equal(r.status, 1);
	assert_int_equal(r.out_len, 0); /* nothing that could pass for a converted trace */
	text_assert_one_error_line(&r, prefix);
	text_assert_contains(r.err, ", found ");
	child_result_free(&r);

	/* Nor an output file. */
	child_xfdr(&r, "convert", "-o", out, path, NULL);
	assert_int_equal(r.status, 1);
	text_assert_one_error_line(&r, prefix);
	assert_int_equal(access(out, F_OK), -1);
	child_result_free(&r);

	/* A file cut inside its buffer: the size no longer matches whole buffers. */
	assert_int_equal(truncate(path, 100), 0);
	snprintf(prefix, sizeof(prefix), "%s: offset ", path);
	child_xfdr(&r, "convert", path, NULL);
	assert_int_equal(r.status, 1);
	assert_int_equal(r.out_len, 0);
	text_assert_one_error_line(&r, prefix);
	child_result_free(&r);
}

static void slurp_append(char **buf, size_t *len, const char *p, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	assert_non_null(*buf);
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static char *read_file(const char *path, size_t *len)
{
	char *buf = NULL;
	char chunk[4096];
	size_t n;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	*len = 0;
	buf = calloc(1, 1);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		slurp_append(&buf, len, chunk, n);
	fclose(f);
	return buf;
}

static void test_convert_output_file(void **state)
{
	const char *path = small_trace("out.xray");
	const char *out = scratch_path("out.yaml");
	char opt[300];
	struct child_result r, s;
	size_t len;
	char *text;

	(void)state;
	child_xfdr(&s, "convert", path, NULL);
	assert_int_equal(s.status, 0);

	child_xfdr(&r, "convert", "-o", out, path, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.out_len + r.err_len, 0);
	text = read_file(out, &len);
	text_assert_equal(text, s.out);
	free(text);
	child_result_free(&r);

	/* --output=OUT overwrites; -o - is stdout. */
	snprintf(opt, sizeof(opt), "--output=%s", out);
	child_xfdr(&r, "convert", opt, "--sort=false", path, NULL);
	assert_int_equal(r.status, 0);
	text = read_file(out, &len);
	text_assert_equal(text, YAML_HEAD
			  "records:\n" R_ENTER R_ENTER_ARGS R_EXIT2 R_TAIL R_CUSTOM R_EXIT1
			  "...\n");
	free(text);
	child_result_free(&r);

	child_xfdr(&r, "convert", "-o", "-", path, NULL);
	assert_int_equal(r.status, 0);
	text_assert_equal(r.out, s.out);
	child_result_free(&r);
	child_result_free(&s);
}

static void test_convert_write_errors(void **state)
{
	const char *path = small_trace("werr.xray");
	struct child_result r;

	(void)state;
	child_xfdr(&r, "convert", "-o", "/nonexistent-dir/x.yaml", path, NULL);
	assert_int_equal(r.status, 1);
	text_assert_one_error_line(&r, "xfdr convert: /nonexistent-dir/x.yaml: ");
	text_assert_contains(r.err, strerror(ENOENT));
	child_result_free(&r);

	child_xfdr(&r, "convert", "-o", "/dev/full", path, NULL);
	assert_int_equal(r.status, 1);
	text_assert_one_error_line(&r, "xfdr convert: /dev/full: write error: ");
	text_assert_contains(r.err, strerror(ENOSPC));
	child_result_free(&r);

	child_xfdr_to(&r, &stdout_closed, "convert", path, NULL);
	assert_int_equal(r.status, 1);
	text_assert_one_error_line(&r, "xfdr convert: standard output: write error: ");
	child_result_free(&r);

	/* Writing over the input would truncate the mapping the records are read from. */
	child_xfdr(&r, "convert", "-o", path, path, NULL);
	assert_int_equal(r.status, 2);
	text_assert_one_error_line(&r, "xfdr convert: output ");
	text_assert_contains(r.err, "is the input file");
	child_result_free(&r);
}

/*
 * Progress: a trace over 64 MiB (one buffer of 65 MiB, nearly all zero padding, written
 * sparse) shows a percentage on a terminal stderr and nothing on a pipe, and the YAML on
 * stdout is the same either way.
 */
static void test_convert_progress_on_terminal_only(void **state)
{
	const size_t buf_bytes = 65u << 20;
	const char *path = scratch_path("big.xray");
	uint8_t head[XFDR_FILE_HEADER_BYTES + 4 * XFDR_MD_RECORD_BYTES + 8];
	struct wr_file_header h = {.cycle_frequency_hz = 1000,
				   .buffer_bytes = buf_bytes,
				   .constant_tsc = 1,
				   .nonstop_tsc = 1};
	const char *want = "---\nheader:\n  version:         1\n  type:            1\n"
			   "  constant-tsc:    true\n  nonstop-tsc:     true\n"
			   "  cycle-frequency: 1000\nrecords:\n"
			   "  - { type: 0, func-id: 3, function: '3', cpu: 1, thread: 2, kind: "
			   "function-enter, tsc: 14, data: '' }\n...\n";
	char tty_text[4096];
	size_t tty_len = 0;
	int master, slave, fd;
	struct child_result r;
	uint8_t *p;

	(void)state;
	p = head + wr_encode_file_header(head, &h);
	p += wr_new_buffer(p, 2);
	p += wr_wall_clock_time(p, 1, 1);
	p += wr_new_cpu_id(p, 1, 10);
	p += wr_function(p, XFDR_FN_ENTER, 3, 4);
	wr_end_of_buffer(p);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, head, sizeof(head)), (ssize_t)sizeof(head));
	assert_int_equal(ftruncate(fd, (off_t)(XFDR_FILE_HEADER_BYTES + buf_bytes)), 0);
	assert_int_equal(close(fd), 0);

	child_xfdr(&r, "convert", path, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	text_assert_equal(r.out, want);
	child_result_free(&r);

	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	child_xfdr_to(&r,
		      &(struct child_spec){.out = {.to = CHILD_CAPTURE},
					   .err = {.to = CHILD_FD, .fd = slave}},
		      "convert", path, NULL);
	close(slave);
	for (;;) {
		ssize_t n = read(master, tty_text + tty_len, sizeof(tty_text) - 1 - tty_len);

		if (n <= 0)
			break; /* EIO once the child's side is closed */
		tty_len += (size_t)n;
	}
	close(master);
	tty_text[tty_len] = '\0';
	assert_int_equal(r.status, 0);
	text_assert_equal(r.out, want);
	text_assert_contains(tty_text, "%");
	text_assert_contains(tty_text, "xfdr convert: ");
	child_result_free(&r);
}

/* ---- verify -------------------------------------------------------------------------------- */

static void test_verify(void **state)
{
	const char *good = small_trace("v-good.xray");
	const char *bad = bad_trace("v-bad.xray");
	const char *missing = scratch_path("v-missing.xray");
	char want[1024], prefix[512];
	struct child_result r;

	(void)state;
	child_xfdr(&r, "verify", good, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.out_len + r.err_len, 0);
	child_result_free(&r);

	child_xfdr(&r, "verify", "-v", good, good, NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "%s: ok\n%s: ok\n", good, good);
	text_assert_equal(r.out, want);
	assert_int_equal(r.err_len, 0);
	child_result_free(&r);

	snprintf(prefix, sizeof(prefix), "%s: offset 136: expected ", bad);
	child_xfdr(&r, "verify", "--verbose", good, bad, NULL);
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want), "%s: ok\n", good);
	text_assert_equal(r.out, want);
	text_assert_one_error_line(&r, prefix);
	text_assert_contains(r.err, ", found ");
	child_result_free(&r);

	/* One line per bad file; the worst status wins (unreadable: 2). */
	child_xfdr(&r, "verify", bad, missing, good, NULL);
	assert_int_equal(r.status, 2);
	assert_int_equal(r.out_len, 0);
	assert_int_equal(text_count_lines(r.err), 2);
	assert_true(strncmp(r.err, prefix, strlen(prefix)) == 0);
	snprintf(want, sizeof(want), "xfdr verify: %s: %s\n", missing, strerror(ENOENT));
	text_assert_contains(r.err, want);
	child_result_free(&r);

	child_xfdr(&r, "verify", scratch_dir, NULL);
	assert_int_equal(r.status, 2);
	snprintf(want, sizeof(want), "xfdr verify: %s: %s\n", scratch_dir, strerror(EISDIR));
	text_assert_equal(r.err, want);
	child_result_free(&r);

	/* -v with stdout closed: the "ok" line cannot be written. */
	child_xfdr_to(&r, &stdout_closed, "verify", "-v", good, NULL);
	assert_int_equal(r.status, 1);
	text_assert_one_error_line(&r, "xfdr verify: standard output: write error: ");
	child_result_free(&r);
}

/* An empty file is readable but not a trace: exit 1 with the reader's line, not 2. */
static void test_verify_empty_file(void **state)
{
	const char *path = scratch_path("zero.xray");
	char prefix[512];
	struct child_result r;
	FILE *f;

	(void)state;
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(prefix, sizeof(prefix), "%s: offset 0: expected ", path);
	child_xfdr(&r, "verify", path, NULL);
	assert_int_equal(r.status, 1);
	text_assert_one_error_line(&r, prefix);
	child_result_free(&r);
}

/* ---- dump ---------------------------------------------------------------------------------- */

/* A valid file's dump lists its threads' spans; an invalid one's cannot (threads: ""). */
#define DUMP_TOP(path, threads)                                                                    \
	"file: " path "\n"                                                                         \
	"header: version=1 type=1 bitfield=0x00000001 constant_tsc=1 nonstop_tsc=0 "               \
	"cycle_frequency=1000000 buffer_size=256 byte_order=little buffers=1\n" threads            \
	"offset     buffer record            fields\n"
/* Its events from 105 (the Entry) to 2002 (the last one) at 1 MHz: 1897 us. */
#define DUMP_THREAD "thread id=42 first_tsc=105 last_tsc=2002 span_s=0.000000000..0.001897000\n"
#define DUMP_TO_EXIT                                                                               \
	"32         0      NewBuffer         thread=42\n"                                          \
	"48         0      WallClockTime     seconds=7 micros=8\n"                                 \
	"64         0      NewCPUId          cpu=3 tsc=100\n"                                      \
	"80         0      Entry             function=1 delta=5 tsc=105 cpu=3 depth=0\n"           \
	"88         0      Entry_Args        function=2 delta=10 tsc=115 cpu=3 depth=1\n"          \
	"96         0      CallArgument      arg=7 hex=0x7\n"                                      \
	"112        0      CallArgument      arg=9223372036854775808 hex=0x8000000000000000\n"     \
	"128        0      Exit              function=2 delta=4294967295 tsc=4294967410 cpu=3 "    \
	"depth=1\n"
#define DUMP_REST                                                                                  \
	"136        0      TSCWrap           tsc=1000\n"                                           \
	"152        0      Tail_Exit         function=1 delta=1 tsc=1001 cpu=3 depth=0\n"          \
	"160        0      CustomEventMarker size=8 tsc=50 data=6162206364206566 "                 \
	"text=\"ab cd ef\"\n"                                                                      \
	"184        0      NewCPUId          cpu=4 tsc=2000\n"                                     \
	"200        0      Exit              function=1 delta=2 tsc=2002 cpu=4 depth=0\n"          \
	"208        0      EndOfBuffer       padding=64\n"

static void test_dump(void **state)
{
	char want[4096], prefix[512];
	const char *path;
	struct child_result r;

	(void)state;
	/* Relative paths keep the expected text independent of the temporary directory. */
	assert_int_equal(chdir(scratch_dir), 0);
	small_trace("d.xray");
	child_xfdr(&r, "dump", "d.xray", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	text_assert_equal(r.out, DUMP_TOP("d.xray", DUMP_THREAD) DUMP_TO_EXIT DUMP_REST);
	child_result_free(&r);

	/* Invalid: everything before the bad record, then the error line. */
	path = bad_trace("d-bad.xray");
	(void)path;
	child_xfdr(&r, "dump", "d-bad.xray", NULL);
	assert_int_equal(r.status, 1);
	text_assert_equal(r.out, DUMP_TOP("d-bad.xray", "") DUMP_TO_EXIT);
	snprintf(prefix, sizeof(prefix), "d-bad.xray: offset 136: expected ");
	text_assert_one_error_line(&r, prefix);
	child_result_free(&r);

	/* A long payload shows 16 bytes and an ellipsis. */
	{
		struct tb b;
		static const char text[] = "0123456789abcdef\"tail\x01\x02\x03";

		tb_init(&b, 256, 1, 0, 0);
		tb_buffer(&b, 1, 0, 0, 0, 0);
		tb_custom(&b, text, 24, 9);
		tb_write(&b, "d-long.xray");
	}
	child_xfdr(&r, "dump", "d-long.xray", NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want),
		 "80         0      CustomEventMarker size=24 tsc=9 "
		 "data=30313233343536373839616263646566... text=\"0123456789abcdef\"...\n"
		 "120        0      EndOfBuffer       padding=%d\n",
		 256 - (120 + 16 - 32));
	text_assert_contains(r.out, want);
	child_result_free(&r);
	assert_int_equal(chdir("/"), 0);
}

/* ---- usage ---------------------------------------------------------------------------------- */

struct usage_case {
	const char *args[6];
	const char *stderr_prefix;
	const char *names; /* the thing the message must name */
};

static void test_usage_errors(void **state)
{
	const char *good = small_trace("u.xray");
	const struct usage_case cases[] = {
	    {{NULL}, "xfdr: missing COMMAND", NULL},
	    {{"frobnicate", NULL}, "xfdr: unknown command", "'frobnicate'"},
	    {{"--frob", NULL}, "xfdr: unknown option", "'--frob'"},
	    {{"help", "nope", NULL}, "xfdr: unknown command", "'nope'"},
	    {{"verify", NULL}, "xfdr verify: missing FILE", NULL},
	    {{"verify", "--frob", good, NULL}, "xfdr verify: unknown", "'--frob'"},
	    {{"verify", "-x", good, NULL}, "xfdr verify: unknown option", "'-x'"},
	    {{"verify", "-xv", good, NULL}, "xfdr verify: unknown option", "'-x'"},
	    {{"dump", NULL}, "xfdr dump: missing FILE", NULL},
	    {{"dump", good, good, NULL}, "xfdr dump: one FILE at a time", NULL},
	    {{"dump", "--frob", good, NULL}, "xfdr dump: unknown", "'--frob'"},
	    {{"convert", NULL}, "xfdr convert: missing FILE", NULL},
	    {{"convert", good, good, NULL}, "xfdr convert: one FILE at a time", NULL},
	    {{"convert", "--frob", good, NULL}, "xfdr convert: unknown", "'--frob'"},
	    {{"convert", good, "-o", NULL}, "xfdr convert: option", "'-o'"},
	    {{"convert", good, "--output", NULL}, "xfdr convert: option", "'--output'"},
	    {{"convert", "-f", "raw", good, NULL}, "xfdr convert: unsupported", "'raw'"},
	    {{"convert", "--output-format=json", good, NULL},
	     "xfdr convert: unsupported",
	     "'json'"},
	    {{"convert", "--sort=maybe", good, NULL}, "xfdr convert: '--sort'", "'maybe'"},
	    {{"convert", "/nonexistent-dir/t.xray", NULL},
	     "xfdr convert: /nonexistent-dir/t.xray: ",
	     NULL},
	    {{"dump", "/nonexistent-dir/t.xray", NULL},
	     "xfdr dump: /nonexistent-dir/t.xray: ",
	     NULL},
	    {{"convert", "/", NULL}, "xfdr convert: /: ", NULL},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct usage_case *c = &cases[i];
		struct child_result r;

		child_xfdr(&r, c->args[0], c->args[1], c->args[2], c->args[3], c->args[4], NULL);
		if (r.status != 2)
			print_error("case %zu (%s): status %d, stderr %s\n", i,
				    c->args[0] ? c->args[0] : "-", r.status, r.err);
		assert_int_equal(r.status, 2);
		assert_int_equal(r.out_len, 0);
		text_assert_one_error_line(&r, c->stderr_prefix);
		if (c->names)
			text_assert_contains(r.err, c->names);
		child_result_free(&r);
	}
}

static void test_help(void **state)
{
	static const char *const verbs[] = {"verify", "dump", "convert"};
	char want[64];
	struct child_result r;
	size_t i;

	(void)state;
	child_xfdr(&r, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	assert_true(strncmp(r.out, "usage: xfdr COMMAND", 19) == 0);
	for (i = 0; i < 3; i++)
		text_assert_contains(r.out, verbs[i]);
	child_result_free(&r);

	child_xfdr(&r, "-h", NULL);
	assert_int_equal(r.status, 0);
	assert_true(strncmp(r.out, "usage: xfdr COMMAND", 19) == 0);
	child_result_free(&r);

	child_xfdr(&r, "--version", NULL);
	assert_int_equal(r.status, 0);
	assert_true(strncmp(r.out, "xfdr ", 5) == 0);
	assert_int_equal(text_count_lines(r.out), 1);
	child_result_free(&r);

	for (i = 0; i < 3; i++) {
		snprintf(want, sizeof(want), "usage: xfdr %s ", verbs[i]);
		child_xfdr(&r, verbs[i], "--help", NULL);
		assert_int_equal(r.status, 0);
		assert_int_equal(r.err_len, 0);
		assert_true(strncmp(r.out, want, strlen(want)) == 0);
		child_result_free(&r);

		/* -h wins over errors elsewhere on the line, as --help usually does. */
		child_xfdr(&r, verbs[i], "-h", "/nonexistent-dir/t.xray", NULL);
		assert_int_equal(r.status, 0);
		assert_true(strncmp(r.out, want, strlen(want)) == 0);
		child_result_free(&r);

		child_xfdr(&r, "help", verbs[i], NULL);
		assert_int_equal(r.status, 0);
		assert_true(strncmp(r.out, want, strlen(want)) == 0);
		child_result_free(&r);
	}

	/* Help that cannot be written is an error too. */
	child_xfdr_to(&r, &stdout_closed, "--help", NULL);
	assert_int_equal(r.status, 1);
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_convert_hand_checked),
	    cmocka_unit_test(test_convert_small_matches_llvm),
	    cmocka_unit_test(test_convert_header_only),
	    cmocka_unit_test(test_convert_buffer_order_by_wall_clock),
	    cmocka_unit_test(test_convert_one_thread_matches_llvm),
	    cmocka_unit_test(test_convert_threads_match_llvm),
	    cmocka_unit_test(test_convert_many_threads_match_llvm),
	    cmocka_unit_test(test_convert_payload_quoting_matches_llvm),
	    cmocka_unit_test(test_convert_unicode_matches_llvm),
	    cmocka_unit_test(test_convert_invalid_file),
	    cmocka_unit_test(test_convert_output_file),
	    cmocka_unit_test(test_convert_write_errors),
	    cmocka_unit_test(test_convert_progress_on_terminal_only),
	    cmocka_unit_test(test_verify),
	    cmocka_unit_test(test_verify_empty_file),
	    cmocka_unit_test(test_dump),
	    cmocka_unit_test(test_usage_errors),
	    cmocka_unit_test(test_help),
	};

	return cmocka_run_group_tests(tests, setup, scratch_teardown);
}
