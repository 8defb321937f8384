/*
 * tests/system/test_cli_account.c - `xfdr account`, the per-function latency table.
 *
 * Two independent references:
 *  - `$XFDR_LLVM_XRAY account` (LLVM 14) on files it can account: a trace this test process
 *    records through the runtime, and hand-built one-thread files of many buffers whose
 *    WallClockTimes it orders right, with dozens of functions whose figures tie (so that its
 *    row order, a DenseMap's bucket order sorted by an unstable std::sort, is exercised) and
 *    ids far apart (so that buckets collide). Output must be equal byte for byte, text and
 *    CSV, for every sort key and order and --top; with exits dropped, equal to `account -d`.
 *  - Figures known by construction, where llvm-xray cannot account the file (asserted): a
 *    multi-threaded file, a one-thread file of 40 buffers with one WallClockTime second, and
 *    a flight-recorder file with lost entries, lost exits and a stack context. The test lays
 *    out every call's duration itself and computes count, order statistics and sum from them.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "writer/encode.h"
#include "writer/file.h"
#include "writer/payload.h"
#include "xfdr/format.h"
#include "xfdr/xfdr.h"

/* ---- Building traces with the writer ------------------------------------------------------ */

enum wall { WALL_STRICT, WALL_SAME_SECOND };

struct tb {
	uint8_t *data;
	size_t len, buf_bytes, cur, used;
	int open;
	/* the thread being written */
	uint16_t tid, cpu;
	uint64_t base, sec;
	uint32_t usec;
	enum wall wall;
};

static void tb_init(struct tb *b, size_t buf_bytes, uint64_t hz)
{
	struct wr_file_header h = {.cycle_frequency_hz = hz,
				   .buffer_bytes = buf_bytes,
				   .constant_tsc = 1,
				   .nonstop_tsc = 1};

	memset(b, 0, sizeof(*b));
	b->buf_bytes = buf_bytes;
	b->data = malloc(XFDR_FILE_HEADER_BYTES);
	assert_non_null(b->data);
	assert_int_equal(wr_encode_file_header(b->data, &h), XFDR_FILE_HEADER_BYTES);
	b->len = XFDR_FILE_HEADER_BYTES;
}

static void tb_close(struct tb *b)
{
	if (!b->open)
		return;
	assert_int_equal(wr_close_buffer(b->data + b->cur, b->used, b->buf_bytes), 0);
	b->open = 0;
}

static uint8_t *tb_room(struct tb *b, size_t n)
{
	uint8_t *p = b->data + b->cur + b->used;

	assert_true(wr_fits(b->buf_bytes - b->used, n));
	b->used += n;
	return p;
}

/* A new buffer of the current thread, its wall clock one step on, based at tsc. */
static void tb_buffer(struct tb *b, uint64_t tsc)
{
	tb_close(b);
	b->data = realloc(b->data, b->len + b->buf_bytes);
	assert_non_null(b->data);
	memset(b->data + b->len, 0, b->buf_bytes);
	b->cur = b->len;
	b->len += b->buf_bytes;
	b->used = 0;
	b->open = 1;
	wr_new_buffer(tb_room(b, XFDR_MD_RECORD_BYTES), b->tid);
	wr_wall_clock_time(tb_room(b, XFDR_MD_RECORD_BYTES), b->sec, b->usec);
	wr_new_cpu_id(tb_room(b, XFDR_MD_RECORD_BYTES), b->cpu, tsc);
	b->base = tsc;
	/* Strict: both parts grow, the only order llvm-xray's block comparator gets right. */
	if (b->wall == WALL_STRICT)
		b->sec++;
	b->usec++;
}

static void tb_thread(struct tb *b, uint16_t tid, enum wall wall)
{
	tb_close(b);
	b->tid = tid;
	b->cpu = tid % 4;
	b->sec = 1000;
	b->usec = 10;
	b->wall = wall;
}

/* A function record at absolute tsc (not below the last one), in a new buffer when full. */
static void tb_fn(struct tb *b, unsigned action, uint32_t fid, uint64_t tsc)
{
	assert_true(tsc >= b->base || !b->open);
	if (!b->open ||
	    !wr_fits(b->buf_bytes - b->used, 2 * XFDR_FN_RECORD_BYTES + XFDR_MD_RECORD_BYTES))
		tb_buffer(b, tsc);
	if (tsc - b->base > UINT32_MAX) {
		wr_tsc_wrap(tb_room(b, XFDR_MD_RECORD_BYTES), tsc);
		b->base = tsc;
	}
	wr_function(tb_room(b, XFDR_FN_RECORD_BYTES), action, fid, (uint32_t)(tsc - b->base));
	b->base = tsc;
}

/* A stack context (depth, ids outermost first) opening a new buffer, as the runtime writes. */
static void tb_context(struct tb *b, uint64_t tsc, const uint32_t *ids, uint32_t n)
{
	uint8_t payload[64];
	size_t bytes = wr_stack_context(payload, n, ids, n);

	tb_buffer(b, tsc);
	wr_custom_event_marker(tb_room(b, XFDR_MD_RECORD_BYTES), (uint32_t)bytes, tsc);
	memcpy(tb_room(b, bytes), payload, bytes);
}

static const char *tb_write(struct tb *b, const char *name)
{
	const char *path;

	tb_close(b);
	path = scratch_write(name, b->data, b->len);
	free(b->data);
	b->data = NULL;
	return path;
}

static size_t tb_buffers(const struct tb *b)
{
	return (b->len - XFDR_FILE_HEADER_BYTES) / b->buf_bytes;
}

/* ---- Known durations and the table they make --------------------------------------------- */

#define FN_MAX 8
#define CALLS_MAX 4096

struct known {
	uint32_t fid[FN_MAX];
	uint64_t d[FN_MAX][CALLS_MAX];
	size_t n[FN_MAX], nfn;
};

static void known_add(struct known *k, uint32_t fid, uint64_t d)
{
	size_t i;

	for (i = 0; i < k->nfn && k->fid[i] != fid; i++)
		;
	if (i == k->nfn) {
		assert_true(k->nfn < FN_MAX);
		k->fid[k->nfn++] = fid;
	}
	assert_true(k->n[i] < CALLS_MAX);
	k->d[i][k->n[i]++] = d;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

/*
 * The text table, rows by function id: order statistics at n / 2, n * 9 / 10, n * 99 / 100 of
 * the sorted durations (llvm-xray's nth_element positions), seconds = ticks / hz.
 */
static char *known_table(struct known *k, uint64_t hz)
{
	size_t cap = 256 + k->nfn * 256, len, i, j, n;
	char *s = malloc(cap);
	uint32_t ids[FN_MAX];
	double h = (double)hz;

	assert_non_null(s);
	len = (size_t)snprintf(
	    s, cap,
	    "Functions with latencies: %zu\n   funcid      count [      min,       "
	    "med,       90p,       99p,       max]       sum  function    \n",
	    k->nfn);
	memcpy(ids, k->fid, k->nfn * sizeof(ids[0]));
	qsort(ids, k->nfn, sizeof(ids[0]), cmp_u32);
	for (j = 0; j < k->nfn; j++) {
		uint64_t sum = 0, *d;

		for (i = 0; k->fid[i] != ids[j]; i++)
			;
		n = k->n[i];
		d = k->d[i];
		qsort(d, n, sizeof(*d), cmp_u64);
		for (size_t c = 0; c < n; c++)
			sum += d[c];
		len += (size_t)snprintf(s + len, cap - len,
					"%9u %10zu [%9.6f, %9.6f, %9.6f, %9.6f, %9.6f] %9.6f  "
					"(unknown): #%u\n",
					ids[j], n, (double)d[0] / h, (double)d[n / 2] / h,
					(double)d[n * 9 / 10] / h, (double)d[n * 99 / 100] / h,
					(double)d[n - 1] / h, (double)sum / h, ids[j]);
	}
	return s;
}

/* ---- Running both tools ------------------------------------------------------------------- */

static int llvm_account(const char *path, char *const *args, struct child_result *r)
{
	char *argv[24];
	size_t i = 0;

	argv[i++] = (char *)child_llvm_xray();
	argv[i++] = "account";
	while (args && *args)
		argv[i++] = *args++;
	argv[i++] = (char *)path;
	argv[i] = NULL;
	child_capture(argv, r);
	return r->status;
}

static int xfdr_account(const char *path, char *const *args, struct child_result *r)
{
	static const struct child_spec how = {
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	};
	char *a[24];
	size_t i = 0;

	while (args && *args)
		a[i++] = *args++;
	a[i++] = (char *)path;
	while (i < 24)
		a[i++] = NULL;
	/* child_xfdr_to() takes a NULL-terminated list; unused slots are NULL already. */
	return child_xfdr_to(r, &how, "account", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
			     a[8], a[9], NULL);
}

/* The option sets compared: every sort key, both orders, --top, both formats, recursion. */
static char *const option_sets[][8] = {
    {NULL},
    {"-s", "count", NULL},
    {"-s", "count", "-r", "dsc", NULL},
    {"-sort=min", NULL},
    {"--sort=med", "--sortorder=dsc", NULL},
    {"-s", "90p", NULL},
    {"-s", "99p", "-r", "dsc", NULL},
    {"-s", "max", "-p", "7", NULL},
    {"-s", "sum", "-r", "dsc", NULL},
    {"-s", "funcid", "-r", "dsc", "-top=3", NULL},
    {"-f", "csv", NULL},
    {"-format=csv", "-s", "count", "-r", "dsc", NULL},
    {"-f", "csv", "-s", "min", "-p", "11", NULL},
    {"-recursive-calls-only", NULL},
    {"--recursive-calls-only", "-s", "count", "-r", "dsc", NULL},
};

/* Every option set: llvm-xray (with extra, e.g. "-d") succeeds and xfdr --no-map prints the same.
 */
static void same_as_llvm(const char *path, const char *extra)
{
	struct child_result a, b;
	char *args[12];
	size_t s, i, k;

	for (s = 0; s < sizeof(option_sets) / sizeof(option_sets[0]); s++) {
		k = 0;
		if (extra)
			args[k++] = (char *)extra;
		for (i = 0; option_sets[s][i]; i++)
			args[k++] = option_sets[s][i];
		args[k] = NULL;
		if (llvm_account(path, args, &a) != 0)
			fail_msg("llvm-xray account failed on %s (option set %zu): %s", path, s,
				 a.err);
		args[0] = "--no-map";
		k = 1;
		for (i = 0; option_sets[s][i]; i++)
			args[k++] = option_sets[s][i];
		args[k] = NULL;
		assert_int_equal(xfdr_account(path, args, &b), 0);
		if (strcmp(a.out, b.out))
			print_error("option set %zu differs from llvm-xray account\n", s);
		text_assert_equal(b.out, a.out);
		child_result_free(&a);
		child_result_free(&b);
	}
}

/* ---- Random balanced calls ---------------------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Steps with many repeats, so that figures tie across functions. */
static uint64_t rnd_step(uint64_t *s)
{
	static const uint64_t steps[] = {0, 1, 1, 2, 5, 10, 100, 1000};

	return rnd(s) % 9 == 8 ? 1 + rnd(s) % 1000000 : steps[rnd(s) % 8];
}

/*
 * One thread of `events` random entries and exits over nfn functions (ids spread up to
 * fid_span, so that llvm-xray's buckets collide), at most max_depth deep, balanced at the end;
 * each exit is left out with probability drop_pct / 100.
 */
static void random_calls(struct tb *b, uint64_t *s, size_t nfn, uint32_t fid_span, size_t events,
			 unsigned max_depth, unsigned drop_pct)
{
	uint32_t fids[100], stack[64];
	unsigned depth = 0;
	uint64_t tsc = 1000000 + rnd(s) % 1000;
	size_t i;

	assert_true(nfn <= 100 && max_depth <= 64);
	for (i = 0; i < nfn; i++)
		fids[i] = 1 + (uint32_t)(rnd(s) % fid_span);
	for (i = 0; i < events || depth; i++) {
		unsigned action = XFDR_FN_ENTER;
		uint32_t fid;

		tsc += rnd_step(s);
		if (depth && (depth == max_depth || i >= events || rnd(s) % 2)) {
			fid = stack[--depth];
			action = rnd(s) % 4 == 0 ? XFDR_FN_TAIL_EXIT : XFDR_FN_EXIT;
			if (rnd(s) % 100 < drop_pct)
				continue;
		} else {
			fid = fids[rnd(s) % nfn];
			stack[depth++] = fid;
		}
		tb_fn(b, action, fid, tsc);
	}
}

/* ---- Equal to llvm-xray -------------------------------------------------------------------- */

/*
 * One thread, ~40 buffers in order, 70 functions with ids up to 5000: byte for byte equal to
 * llvm-xray for every option set, at 2.4 GHz and with no cycle frequency (raw ticks).
 */
static void test_matches_llvm_many_functions(void **state)
{
	static const uint64_t hz[] = {2400000000ull, 0};
	uint64_t seed = 20261123;
	struct tb b;
	const char *path;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		tb_init(&b, 1024, hz[i]);
		tb_thread(&b, 9, WALL_STRICT);
		random_calls(&b, &seed, 70, 5000, 4000, 8, 0);
		assert_true(tb_buffers(&b) > 30);
		path = tb_write(&b, "many.xray");
		same_as_llvm(path, NULL);
	}
}

/*
 * Exits left out (as with an old runtime or a lost record): llvm-xray fails unless it deduces
 * sibling calls (-d); xfdr always does, prints what llvm-xray -d prints and tells the deduced
 * calls on stderr.
 */
static void test_matches_llvm_deduced(void **state)
{
	uint64_t seed = 777;
	struct child_result r;
	char *none[] = {NULL}, *nomap[] = {"--no-map", NULL};
	struct tb b;
	const char *path;

	(void)state;
	tb_init(&b, 2048, 1000000);
	tb_thread(&b, 3, WALL_STRICT);
	random_calls(&b, &seed, 12, 40, 1500, 6, 10);
	path = tb_write(&b, "deduced.xray");
	assert_int_not_equal(llvm_account(path, none, &r), 0);
	child_result_free(&r);
	same_as_llvm(path, "-d");
	assert_int_equal(xfdr_account(path, nomap, &r), 0);
	text_assert_contains(r.err, "calls whose exit was not recorded, closed at a caller's exit");
	assert_int_equal(text_count_lines(r.err), 1);
	child_result_free(&r);
}

/*
 * A trace this process records through the runtime (manual hooks, real TSC durations): equal
 * to llvm-xray's table.
 */
static void test_matches_llvm_runtime_trace(void **state)
{
	struct xfdr_options o;
	char path[4096], out[4200];
	struct child_result r;
	char *nomap[] = {"--no-map", NULL};
	volatile int spin;
	int i, j, k;

	(void)state;
	xfdr_options_default(&o);
	o.buffer_size = 1 << 16;
	o.buffer_max = 4;
	o.flush_at_exit = 0;
	snprintf(out, sizeof(out), "%s/", scratch_dir);
	o.output = out;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	for (i = 0; i < 200; i++) {
		xfdr_enter(1);
		for (j = 0; j < 3; j++) {
			xfdr_enter(2);
			for (k = 0; k < 5; k++) {
				xfdr_enter(40);
				for (spin = 0; spin < (i % 13) * 200 + k * 50; spin++)
					;
			}
			for (k = 0; k < 5; k++)
				xfdr_exit(40);
			xfdr_exit(2);
		}
		xfdr_enter(3);
		xfdr_tail_exit(3);
		xfdr_exit(1);
	}
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	same_as_llvm(path, NULL);
	assert_int_equal(xfdr_account(path, nomap, &r), 0);
	text_assert_contains(r.out, "Functions with latencies: 4\n");
	text_assert_contains(r.out, "       40       3000 [");
	text_assert_equal(r.err, "");
	child_result_free(&r);
}

/* ---- Where llvm-xray fails ------------------------------------------------------------------ */

/*
 * Three threads, each with its own calls. llvm-xray reads thread after thread, thread 3 first
 * (its DenseMap's bucket order for these ids), and refuses any TSC below that first record's:
 * threads 1 and 2 began earlier, so it fails. Durations:
 * thread 1: f1 i * 10 + 5 around f2 of 3 (i = 0..29); thread 2: f1 of 7, 100 times; thread 3:
 * f3 of 1000 + i (i = 0..9) with f2 of 2 inside each.
 */
static void test_multithreaded_where_llvm_fails(void **state)
{
	struct known all, one;
	struct child_result r;
	char *none[] = {NULL}, *nomap[] = {"--no-map", NULL};
	char *thread2[] = {"--no-map", "--thread=2", NULL};
	char *want;
	struct tb b;
	const char *path;
	uint64_t t;
	int i;

	(void)state;
	memset(&all, 0, sizeof(all));
	memset(&one, 0, sizeof(one));
	tb_init(&b, 512, 1000);
	tb_thread(&b, 1, WALL_STRICT);
	for (t = 50000, i = 0; i < 30; i++, t += 1000) {
		tb_fn(&b, XFDR_FN_ENTER, 1, t);
		tb_fn(&b, XFDR_FN_ENTER, 2, t + 1);
		tb_fn(&b, XFDR_FN_EXIT, 2, t + 4);
		tb_fn(&b, XFDR_FN_EXIT, 1, t + (uint64_t)i * 10 + 5);
		known_add(&all, 1, (uint64_t)i * 10 + 5);
		known_add(&all, 2, 3);
	}
	tb_thread(&b, 2, WALL_STRICT);
	for (t = 100, i = 0; i < 100; i++, t += 10) {
		tb_fn(&b, XFDR_FN_ENTER, 1, t);
		tb_fn(&b, XFDR_FN_EXIT, 1, t + 7);
		known_add(&all, 1, 7);
		known_add(&one, 1, 7);
	}
	tb_thread(&b, 3, WALL_STRICT);
	for (t = 1000000, i = 0; i < 10; i++, t += 5000) {
		tb_fn(&b, XFDR_FN_ENTER, 3, t);
		tb_fn(&b, XFDR_FN_ENTER, 2, t + 10);
		tb_fn(&b, XFDR_FN_EXIT, 2, t + 12);
		tb_fn(&b, XFDR_FN_EXIT, 3, t + 1000 + (uint64_t)i);
		known_add(&all, 3, 1000 + (uint64_t)i);
		known_add(&all, 2, 2);
	}
	path = tb_write(&b, "threads.xray");

	assert_int_not_equal(llvm_account(path, none, &r), 0);
	child_result_free(&r);
	assert_int_equal(xfdr_account(path, nomap, &r), 0);
	want = known_table(&all, 1000);
	text_assert_equal(r.out, want);
	text_assert_equal(r.err, "");
	free(want);
	child_result_free(&r);

	assert_int_equal(xfdr_account(path, thread2, &r), 0);
	want = known_table(&one, 1000);
	text_assert_equal(r.out, want);
	free(want);
	child_result_free(&r);
}

/*
 * One thread, 40 buffers within one WallClockTime second: llvm-xray's block comparator ("seconds
 * < and microseconds <") finds them all equal and its std::sort shuffles them, so it fails.
 * Calls: f1 of 20 ticks around f2 of 1 + i % 7 (i = 0..399).
 */
static void test_many_buffers_where_llvm_fails(void **state)
{
	struct known k;
	struct child_result r;
	char *none[] = {NULL};
	char *want;
	struct tb b;
	const char *path;
	uint64_t t;
	int i;

	(void)state;
	memset(&k, 0, sizeof(k));
	tb_init(&b, 384, 1000);
	tb_thread(&b, 7, WALL_SAME_SECOND);
	for (t = 5000, i = 0; i < 400; i++, t += 25) {
		tb_fn(&b, XFDR_FN_ENTER, 1, t);
		tb_fn(&b, XFDR_FN_ENTER, 2, t + 3);
		tb_fn(&b, XFDR_FN_EXIT, 2, t + 4 + (uint64_t)(i % 7));
		tb_fn(&b, XFDR_FN_EXIT, 1, t + 20);
		known_add(&k, 1, 20);
		known_add(&k, 2, 1 + (uint64_t)(i % 7));
	}
	assert_true(tb_buffers(&b) >= 40);
	path = tb_write(&b, "buffers.xray");

	assert_int_not_equal(llvm_account(path, none, &r), 0);
	child_result_free(&r);
	assert_int_equal(xfdr_account(path, none, &r), 0);
	want = known_table(&k, 1000);
	text_assert_equal(r.out, want);
	text_assert_equal(r.err, "");
	free(want);
	child_result_free(&r);
}

/*
 * A flight recorder's file (hz 1000):
 *   thread 1: Exit 9 @1000 (no entry), Entry 1 @1010, Entry 2 @1020, Entry 3 @1030 (its exit
 *             lost), Exit 2 @1050 (2: 30, 3 closed there: 20), Exit 8 @1060 (no entry), Entry 4
 *             @1070, Exit 4 @1075 (5); 1 still open at the end.
 *   thread 2: a buffer that begins inside 6 > 7 (stack context @2000), Exit 7 @2010, Entry 4
 *             @2020, Exit 4 @2030 (10), Exit 6 @2040: 7 and 6 began before the trace.
 * Counted: 2 once (30), 3 once (20, deduced), 4 twice (5, 10). Not counted: 2 exits without an
 * entry, 1 call open at the end, 2 calls begun before the trace.
 */
static void test_unbalanced_flight_recorder_file(void **state)
{
	static const uint32_t ctx[] = {6, 7};
	struct known k;
	struct child_result r;
	char *none[] = {NULL}, *csv[] = {"-f", "csv", "--window=all", NULL};
	char *all[] = {"--window=all", NULL};
	char *want;
	struct tb b;
	const char *path;

	(void)state;
	memset(&k, 0, sizeof(k));
	tb_init(&b, 4096, 1000);
	tb_thread(&b, 1, WALL_STRICT);
	tb_fn(&b, XFDR_FN_EXIT, 9, 1000);
	tb_fn(&b, XFDR_FN_ENTER, 1, 1010);
	tb_fn(&b, XFDR_FN_ENTER, 2, 1020);
	tb_fn(&b, XFDR_FN_ENTER, 3, 1030);
	tb_fn(&b, XFDR_FN_EXIT, 2, 1050);
	tb_fn(&b, XFDR_FN_EXIT, 8, 1060);
	tb_fn(&b, XFDR_FN_ENTER, 4, 1070);
	tb_fn(&b, XFDR_FN_EXIT, 4, 1075);
	tb_thread(&b, 2, WALL_STRICT);
	tb_context(&b, 2000, ctx, 2);
	tb_fn(&b, XFDR_FN_EXIT, 7, 2010);
	tb_fn(&b, XFDR_FN_ENTER, 4, 2020);
	tb_fn(&b, XFDR_FN_EXIT, 4, 2030);
	tb_fn(&b, XFDR_FN_EXIT, 6, 2040);
	path = tb_write(&b, "unbalanced.xray");
	known_add(&k, 2, 30);
	known_add(&k, 3, 20);
	known_add(&k, 4, 5);
	known_add(&k, 4, 10);

	assert_int_equal(xfdr_account(path, all, &r), 0);
	want = known_table(&k, 1000);
	text_assert_equal(r.out, want);
	free(want);
	text_assert_equal(r.err,
			  "xfdr account: thread 1: 0 ns to 75.000 ms\n"
			  "xfdr account: thread 2: 1.000 s to 1.040 s, history before it lost (it "
			  "begins inside calls)\n"
			  "xfdr account: not counted: 2 exits without an entry, 1 call still "
			  "open at the end, 2 calls begun before the trace; counted: 1 call "
			  "whose exit was not recorded, closed at a caller's exit\n");
	child_result_free(&r);

	/*
	 * By default, the common window: thread 2 lost what came before its first buffer (it
	 * begins inside calls), so only 2000..2040 is read, where thread 1 ran nothing: of all the
	 * calls only thread 2's 4 (10) counts, and its two calls begun before the trace do not.
	 */
	memset(&k, 0, sizeof(k));
	known_add(&k, 4, 10);
	assert_int_equal(xfdr_account(path, none, &r), 0);
	want = known_table(&k, 1000);
	text_assert_equal(r.out, want);
	free(want);
	text_assert_equal(r.err,
			  "xfdr account: window 1.000 s to 1.040 s of 1.040 s (common: where every "
			  "thread's kept history holds; --window=all reads all of it)\n"
			  "xfdr account: thread 1: 0 ns to 75.000 ms\n"
			  "xfdr account: thread 2: 1.000 s to 1.040 s, history before it lost (it "
			  "begins inside calls)\n"
			  "xfdr account: not counted: 2 calls begun before the trace\n");
	child_result_free(&r);

	assert_int_equal(xfdr_account(path, csv, &r), 0);
	text_assert_equal(r.out, "funcid,count,min,median,90%ile,99%ile,max,sum,debug,function\n"
				 "2,1,3.000000e-02,3.000000e-02,3.000000e-02,3.000000e-02,"
				 "3.000000e-02,3.000000e-02,\"(unknown)\",\"#2\"\n"
				 "3,1,2.000000e-02,2.000000e-02,2.000000e-02,2.000000e-02,"
				 "2.000000e-02,2.000000e-02,\"(unknown)\",\"#3\"\n"
				 "4,2,5.000000e-03,1.000000e-02,1.000000e-02,1.000000e-02,"
				 "1.000000e-02,1.500000e-02,\"(unknown)\",\"#4\"\n");
	child_result_free(&r);
}

/*
 * --recursive-calls-only on a stack 100000 calls deep (each call its own function; at the
 * bottom, function 10, the outermost, again): the one recursive call and its outer call count,
 * as llvm-xray says. Asking at every exit whether its function was open below by walking the
 * stack made this quadratic (minutes); it must take well under a second of work.
 */
static void test_recursive_deep_stack(void **state)
{
	static const uint32_t ctx[] = {6, 7};
	char *rec[] = {"--recursive-calls-only", NULL};
	struct child_result a, r;
	struct known k;
	struct timespec t0, t1;
	struct tb b;
	const char *path;
	uint32_t i, n = 100000;
	uint64_t tsc = 1000;
	char *want;

	(void)state;
	tb_init(&b, 65536, 1000000);
	tb_thread(&b, 1, WALL_STRICT);
	for (i = 0; i < n; i++)
		tb_fn(&b, XFDR_FN_ENTER, 10 + i, tsc++);
	tb_fn(&b, XFDR_FN_ENTER, 10, tsc++);
	tb_fn(&b, XFDR_FN_EXIT, 10, tsc++);
	for (i = n; i > 0; i--)
		tb_fn(&b, XFDR_FN_EXIT, 10 + i - 1, tsc++);
	path = tb_write(&b, "deep.xray");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(
	    xfdr_account(path, (char *[]){"--no-map", "--recursive-calls-only", NULL}, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(llvm_account(path, (char *[]){"-recursive-calls-only", NULL}, &a), 0);
	text_assert_equal(r.out, a.out);
	text_assert_contains(r.out, "Functions with latencies: 1\n");
	text_assert_contains(r.out, "       10          2 [");
	assert_true(t1.tv_sec - t0.tv_sec < 20);
	child_result_free(&a);
	child_result_free(&r);

	/*
	 * A stack context's named calls are open below too: 6 entered under the context's 6
	 * counts (the context's own 6 began before the trace and does not).
	 */
	memset(&k, 0, sizeof(k));
	tb_init(&b, 4096, 1000);
	tb_thread(&b, 2, WALL_STRICT);
	tb_context(&b, 2000, ctx, 2);
	tb_fn(&b, XFDR_FN_ENTER, 6, 2010);
	tb_fn(&b, XFDR_FN_EXIT, 6, 2030);
	tb_fn(&b, XFDR_FN_ENTER, 8, 2040);
	tb_fn(&b, XFDR_FN_EXIT, 8, 2045);
	tb_fn(&b, XFDR_FN_EXIT, 7, 2050);
	tb_fn(&b, XFDR_FN_EXIT, 6, 2060);
	path = tb_write(&b, "context.xray");
	known_add(&k, 6, 20);
	assert_int_equal(xfdr_account(path, rec, &r), 0);
	want = known_table(&k, 1000);
	text_assert_equal(r.out, want);
	free(want);
	child_result_free(&r);
}

/* Names from the .map sidecar (default, or --map), '#ID' for ids it does not name; --sort=func. */
static void test_names_and_sort_by_name(void **state)
{
	struct child_result r;
	char *none[] = {NULL}, *byname[] = {"-s", "func", NULL};
	char *dsc[] = {"--sort=func", "--sortorder=dsc", "-f", "csv", NULL};
	char mapopt[4200];
	char *other[] = {mapopt, NULL};
	struct tb b;
	const char *path;

	(void)state;
	tb_init(&b, 512, 1000);
	tb_thread(&b, 1, WALL_STRICT);
	tb_fn(&b, XFDR_FN_ENTER, 1, 100);
	tb_fn(&b, XFDR_FN_ENTER, 2, 110);
	tb_fn(&b, XFDR_FN_EXIT, 2, 120);
	tb_fn(&b, XFDR_FN_ENTER, 3, 130);
	tb_fn(&b, XFDR_FN_EXIT, 3, 135);
	tb_fn(&b, XFDR_FN_EXIT, 1, 200);
	path = tb_write(&b, "named.xray");
	scratch_write_text("named.xray.map", "xfdr-map\t1\nfunction\t1\tzeta\t0x1000\t/bin/x\n"
					     "function\t2\talpha \"q\"\t0x2000\t/bin/x\n");
	assert_int_equal(xfdr_account(path, none, &r), 0);
	text_assert_contains(r.out, "  (unknown): zeta\n");
	text_assert_contains(r.out, "  (unknown): alpha \"q\"\n");
	text_assert_contains(r.out, "  (unknown): #3\n");
	child_result_free(&r);

	/* By name: "#3" < "alpha \"q\"" < "zeta" in byte order. */
	assert_int_equal(xfdr_account(path, byname, &r), 0);
	text_assert_contains(r.out, "): #3\n        2 ");
	text_assert_contains(r.out, "): alpha \"q\"\n        1 ");
	child_result_free(&r);
	assert_int_equal(xfdr_account(path, dsc, &r), 0);
	text_assert_equal(r.out, "funcid,count,min,median,90%ile,99%ile,max,sum,debug,function\n"
				 "1,1,1.000000e-01,1.000000e-01,1.000000e-01,1.000000e-01,"
				 "1.000000e-01,1.000000e-01,\"(unknown)\",\"zeta\"\n"
				 "2,1,1.000000e-02,1.000000e-02,1.000000e-02,1.000000e-02,"
				 "1.000000e-02,1.000000e-02,\"(unknown)\",\"alpha \"\"q\"\"\"\n"
				 "3,1,5.000000e-03,5.000000e-03,5.000000e-03,5.000000e-03,"
				 "5.000000e-03,5.000000e-03,\"(unknown)\",\"#3\"\n");
	child_result_free(&r);

	scratch_write_text("other.map", "xfdr-map\t1\nfunction\t3\tthree\t0x3000\t/bin/x\n");
	snprintf(mapopt, sizeof(mapopt), "--map=%s", scratch_path("other.map"));
	assert_int_equal(xfdr_account(path, other, &r), 0);
	text_assert_contains(r.out, "  (unknown): three\n");
	text_assert_contains(r.out, "  (unknown): #1\n");
	child_result_free(&r);
}

/* ---- Errors ------------------------------------------------------------------------------- */

static void expect_usage(char *const *args, const char *path, const char *prefix)
{
	struct child_result r;

	assert_int_equal(xfdr_account(path, args, &r), 2);
	text_assert_only_error_line(&r, prefix);
	child_result_free(&r);
}

static void test_errors(void **state)
{
	struct child_result r;
	char *none[] = {NULL}, *help[] = {"--help", NULL};
	char *bad_sort[] = {"-s", "avg", NULL}, *bad_order[] = {"-r", "up", NULL};
	char *bad_top[] = {"--top=x", NULL}, *bad_fmt[] = {"-f", "yaml", NULL};
	char *bad_thread[] = {"--thread=5", NULL}, *instr[] = {"-instr_map", "prog", NULL};
	char *both[] = {"--map=x.map", "--no-map", NULL}, *self[] = {"-o", NULL, NULL};
	struct tb b;
	const char *path, *cut;

	(void)state;
	tb_init(&b, 256, 1000);
	tb_thread(&b, 1, WALL_STRICT);
	tb_fn(&b, XFDR_FN_ENTER, 1, 100);
	tb_fn(&b, XFDR_FN_EXIT, 1, 110);
	tb_thread(&b, 4, WALL_STRICT);
	tb_fn(&b, XFDR_FN_ENTER, 1, 100);
	tb_fn(&b, XFDR_FN_EXIT, 1, 110);
	path = tb_write(&b, "small.xray");

	expect_usage(bad_sort, path, "xfdr account: '--sort' takes funcid, count");
	expect_usage(bad_order, path, "xfdr account: '--sortorder' takes asc or dsc");
	expect_usage(bad_top, path, "xfdr account: '--top' takes a whole number");
	expect_usage(bad_fmt, path, "xfdr account: '--format' takes text or csv");
	expect_usage(bad_thread, path, "xfdr account: ");
	expect_usage(instr, path, "xfdr account: '-instr_map' is not supported");
	expect_usage(both, path, "xfdr account: --map and --no-map exclude each other");
	expect_usage(none, scratch_path("missing.xray"), "xfdr account: ");
	self[1] = (char *)path;
	expect_usage(self, path, "xfdr account: output");

	assert_int_equal(xfdr_account(path, bad_thread, &r), 2);
	text_assert_contains(r.err, "'--thread': no thread with id or tid 5 in ");
	text_assert_contains(r.err, "(its threads: 1, 4)");
	child_result_free(&r);

	/* A file cut inside its second buffer: exit 1, the reader's one line, nothing printed. */
	{
		static uint8_t img[32 + 256 + 100];
		FILE *f = fopen(path, "rb");

		assert_non_null(f);
		assert_int_equal(fread(img, 1, sizeof(img), f), sizeof(img));
		fclose(f);
		cut = scratch_write("cut.xray", img, sizeof(img));
	}
	assert_int_equal(xfdr_account(cut, none, &r), 1);
	text_assert_only_error_line(&r, cut);
	child_result_free(&r);

	assert_int_equal(xfdr_account(path, help, &r), 0);
	text_assert_contains(r.out, "usage: xfdr account");
	text_assert_contains(r.out, "not counted");
	text_assert_equal(r.err, "");
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_matches_llvm_many_functions),
	    cmocka_unit_test(test_matches_llvm_deduced),
	    cmocka_unit_test(test_matches_llvm_runtime_trace),
	    cmocka_unit_test(test_multithreaded_where_llvm_fails),
	    cmocka_unit_test(test_many_buffers_where_llvm_fails),
	    cmocka_unit_test(test_unbalanced_flight_recorder_file),
	    cmocka_unit_test(test_names_and_sort_by_name),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_recursive_deep_stack),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
