/*
 * tests/system/test_cli_stack.c - `xfdr stack`: folded stacks checked against times known from
 * how the traces were made, not from the pairer.
 *
 *  - A hand-built trace whose every call and duration is listed below, with the self and
 *    total time of each stack worked out by hand: merged, per thread, --value=total, --unit,
 *    --no-map, and calls without an entry or an exit.
 *  - A stack context whose calls are partly unnamed: one "[unknown]" frame for the run.
 *  - Random nested calls on several threads: the test keeps, while generating them, the self
 *    and total time of every stack; the output must list exactly those, and the self times
 *    must add up to the time of all outermost calls.
 *  - Bad input and bad options: one error line, exit 1 or 2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "tests/support/trace_gen.h"
#include "writer/payload.h"

#define K 1000ull /* every hand-made time is in thousands of ticks; the file runs at 2 GHz */
#define BASE 1000000ull

/* ---- building traces ---------------------------------------------------------------------- */

/* The buffers' order in the files this test writes. */
#define SHUFFLE_SEED 42

static void fn(struct tg_trace *tr, uint16_t tid, unsigned action, uint32_t fid, uint64_t t)
{
	struct tg_event *e = tg_push(tg_thread_of(tr, tid));

	e->action = action;
	e->fid = fid;
	e->tsc = BASE + t * K;
}

#define IN(tid, fid, t) fn(&tr, tid, XFDR_FN_ENTER, fid, t)
#define OUT(tid, fid, t) fn(&tr, tid, XFDR_FN_EXIT, fid, t)

/*
 * Thread 1 (main 1, a 2, b 3, c 4):
 *   main 0-200 { a 10-60 { b 20-50 } b 70-100 a 100-140 { b 110-130 } }
 *   main: total 200, self 200 - 50 - 30 - 40 = 80; main;a: 50 + 40 total, 20 + 20 self;
 *   main;a;b: 30 + 20; main;b: 30.
 * Thread 2: main 1000-1100 { c 1010-1060 }, then #5 from 1200 { #6 from 1250 } with no exit:
 *   both closed at 1250, the thread's last event: #5 total 50, self 50; #5;#6 total 0.
 *   main self 50, main;c 50.
 * Thread 3: #8 300-350, an exit of #7 at 400 with no entry (begun at 300, the thread's first
 *   event; the depth-0 call #8 counts as its child: self 100 - 50), then #9 from 450 { #10 from
 *   460 } with no exit: #9 total 10, self 10.
 * Self times add up to 200 + 150 + 110 = 460 (thousands of ticks).
 */
static const char *known_trace(void)
{
	struct tg_trace tr;
	const char *map;

	memset(&tr, 0, sizeof(tr));
	IN(1, 1, 0), IN(1, 2, 10), IN(1, 3, 20), OUT(1, 3, 50), OUT(1, 2, 60), IN(1, 3, 70);
	OUT(1, 3, 100), IN(1, 2, 100), IN(1, 3, 110), OUT(1, 3, 130), OUT(1, 2, 140);
	OUT(1, 1, 200);
	IN(2, 1, 1000), IN(2, 4, 1010), OUT(2, 4, 1060), OUT(2, 1, 1100), IN(2, 5, 1200);
	IN(2, 6, 1250);
	IN(3, 8, 300), OUT(3, 8, 350), OUT(3, 7, 400), IN(3, 9, 450), IN(3, 10, 460);
	map = scratch_write_text("known.xray.map", "xfdr-map\t1\nfunctions\txray\t4\n"
						   "function\t1\tmain\t0x1000\t-\t-\n"
						   "function\t2\ta\t0x1010\t-\t-\n"
						   "function\t3\tb\t0x1020\t-\t-\n"
						   "function\t4\tc\t0x1030\t-\t-\n"
						   "function\t5\t<unknown>\t0x1040\t-\t-\n");
	(void)map;
	return tg_write_scratch(&tr, 256, "known.xray", SHUFFLE_SEED);
}

/* Run `xfdr stack ARGS...` expecting exit 0; returns its stdout (caller frees), stderr in err. */
static char *stack_ok(char **err, ...)
{
	char *argv[16] = {0};
	struct child_result r;
	va_list ap;
	char *out;
	int n = 0, st;

	argv[n++] = "stack";
	va_start(ap, err);
	while (n < 11 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	assert_true(n < 11);
	va_end(ap);
	st = child_xfdr(&r, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6], argv[7],
			argv[8], argv[9], argv[10], NULL);
	if (st != 0)
		fail_msg("xfdr stack exited %d: %s", st, r.err);
	out = strdup(r.out);
	if (err)
		*err = strdup(r.err);
	child_result_free(&r);
	return out;
}

static void test_known_merged_self(void **state)
{
	const char *path = known_trace();
	char *err, *out;

	(void)state;
	out = stack_ok(&err, path, NULL);
	text_assert_equal(out, "#5 50000\n"
			       "#7 50000\n"
			       "#8 50000\n"
			       "#9 10000\n"
			       "main 130000\n"
			       "main;a 40000\n"
			       "main;a;b 50000\n"
			       "main;b 30000\n"
			       "main;c 50000\n");
	/* The incomplete calls: #5 and #6, #9 and #10 without exit, #7 without entry. */
	text_assert_equal(err,
			  "xfdr stack: note: 5 of 14 calls are incomplete and kept with the "
			  "time seen: 4 without an exit (closed at their thread's last "
			  "event), 1 without an entry (begun at their thread's first event)\n");
	free(out);
	free(err);
}

static void test_known_total_and_units(void **state)
{
	const char *path = known_trace();
	char *out;

	(void)state;
	out = stack_ok(NULL, "--value=total", path, NULL);
	text_assert_equal(out, "#5 50000\n"
			       "#7 100000\n"
			       "#8 50000\n"
			       "#9 10000\n"
			       "main 300000\n"
			       "main;a 90000\n"
			       "main;a;b 50000\n"
			       "main;b 30000\n"
			       "main;c 50000\n");
	free(out);
	/* 2 GHz: 1000 ticks are 0.5 us. */
	out = stack_ok(NULL, "--unit=us", path, NULL);
	text_assert_equal(out, "#5 25\n#7 25\n#8 25\n#9 5\nmain 65\nmain;a 20\nmain;a;b 25\n"
			       "main;b 15\nmain;c 25\n");
	free(out);
	out = stack_ok(NULL, "--unit", "ns", "--value", "total", "-o", "-", path, NULL);
	text_assert_contains(out, "\nmain 150000\n");
	free(out);
	out = stack_ok(NULL, "--no-map", path, NULL);
	text_assert_equal(out, "#1 130000\n#1;#2 40000\n#1;#2;#3 50000\n#1;#3 30000\n"
			       "#1;#4 50000\n#5 50000\n#7 50000\n#8 50000\n#9 10000\n");
	free(out);
}

static void test_known_per_thread(void **state)
{
	const char *path = known_trace();
	char *out;

	(void)state;
	out = stack_ok(NULL, "--per-thread", "-o", scratch_path("pt.folded"), path, NULL);
	assert_string_equal(out, "");
	free(out);
	out = stack_ok(NULL, "-t", path, NULL);
	text_assert_equal(out, "thread 1;main 80000\n"
			       "thread 1;main;a 40000\n"
			       "thread 1;main;a;b 50000\n"
			       "thread 1;main;b 30000\n"
			       "thread 2;#5 50000\n"
			       "thread 2;main 50000\n"
			       "thread 2;main;c 50000\n"
			       "thread 3;#7 50000\n"
			       "thread 3;#8 50000\n"
			       "thread 3;#9 10000\n");
	free(out);
}

/*
 * Thread 4 begins inside five calls: a stack context at 0 names only the outermost (main);
 * four are unnamed. a 10-30 runs in the innermost; the exit of b (3) at 50 closes the
 * innermost unnamed call and names it b: b total 50 (from the context), self 50 - 20. The
 * three unnamed calls left and main stay open to 50 with self 0. One "[unknown]" frame
 * stands for the whole run.
 */
static void test_context_unknown(void **state)
{
	struct tg_trace tr;
	struct tg_event *e;
	const uint32_t ids[1] = {1};
	char *out, *err;
	const char *path;

	(void)state;
	memset(&tr, 0, sizeof(tr));
	e = tg_push(tg_thread_of(&tr, 4));
	e->custom = 1;
	e->tsc = BASE;
	e->payload_bytes = XFDR_STACK_PAYLOAD_BYTES(1);
	e->payload = calloc(1, e->payload_bytes);
	assert_non_null(e->payload);
	assert_int_equal(wr_stack_context(e->payload, 5, ids, 1), e->payload_bytes);
	IN(4, 2, 10), OUT(4, 2, 30), OUT(4, 3, 50);
	scratch_write_text("ctx.xray.map",
			   "function\t1\tmain;x\t0x1\t-\t-\n"
			   "function\t2\ta\t0x2\t-\t-\nfunction\t3\tb\t0x3\t-\t-\n");
	path = tg_write_scratch(&tr, 512, "ctx.xray", SHUFFLE_SEED);
	out = stack_ok(&err, path, NULL);
	/* ';' in a name would split the frame: it is written ':'. */
	text_assert_equal(out, "main:x;[unknown];a 20000\nmain:x;[unknown];b 30000\n");
	text_assert_contains(err, "note: 5 of 6 calls are incomplete");
	free(out);
	free(err);
	out = stack_ok(NULL, "--value=total", path, NULL);
	text_assert_equal(out, "main:x 50000\nmain:x;[unknown] 150000\nmain:x;[unknown];a 20000\n"
			       "main:x;[unknown];b 50000\n");
	free(out);
}

/* ---- random nested calls ------------------------------------------------------------------ */

struct want {
	char stack[200];
	uint64_t self, total;
};

struct wants {
	struct want *v;
	size_t n, cap;
};

static void want_add(struct wants *w, const char *stack, uint64_t self, uint64_t total)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		if (!strcmp(w->v[i].stack, stack)) {
			w->v[i].self += self;
			w->v[i].total += total;
			return;
		}
	}
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->v = realloc(w->v, w->cap * sizeof(*w->v));
		assert_non_null(w->v);
	}
	snprintf(w->v[w->n].stack, sizeof(w->v[0].stack), "%s", stack);
	w->v[w->n].self = self;
	w->v[w->n++].total = total;
}

/* One call and its callees at *tsc; adds it to both wants. Returns its total time. */
static uint64_t gen_call(struct tg_thread *th, uint64_t *s, uint64_t *tsc, char *merged,
			 char *per_thread, int depth, struct wants *wm, struct wants *wp)
{
	uint32_t fid = (uint32_t)tg_below(s, 6);
	size_t lm = strlen(merged), lp = strlen(per_thread);
	uint64_t start = *tsc, child = 0, total;
	struct tg_event *e = tg_push(th);
	unsigned kids, k;

	e->action = XFDR_FN_ENTER;
	e->fid = fid;
	e->tsc = *tsc;
	snprintf(merged + lm, 200 - lm, "%sf%u", lm ? ";" : "", fid);
	snprintf(per_thread + lp, 200 - lp, ";f%u", fid);
	*tsc += tg_below(s, 100);
	kids = depth < 5 ? (unsigned)tg_below(s, 4) : 0;
	for (k = 0; k < kids; k++) {
		child += gen_call(th, s, tsc, merged, per_thread, depth + 1, wm, wp);
		*tsc += tg_below(s, 50);
	}
	/* Sometimes a long gap: the encoder then needs a TSCWrap. */
	*tsc += tg_chance(s, 5) ? (1ull << 32) + tg_below(s, 1000) : tg_below(s, 100);
	e = tg_push(th);
	e->action = XFDR_FN_EXIT;
	e->fid = fid;
	e->tsc = *tsc;
	total = *tsc - start;
	want_add(wm, merged, total - child, total);
	want_add(wp, per_thread, total - child, total);
	merged[lm] = '\0';
	per_thread[lp] = '\0';
	return total;
}

/* Every line of out is a wanted stack with its value, and every nonzero want is there. */
static void check_folded(const char *out, const struct wants *w, int total, uint64_t sum_want)
{
	const char *p = out;
	uint64_t sum = 0;
	size_t lines = 0, nonzero = 0, i;

	while (*p) {
		const char *nl = strchr(p, '\n'), *sp;
		char stack[200];
		uint64_t v;

		assert_non_null(nl);
		for (sp = nl; sp > p && sp[-1] != ' '; sp--)
			;
		assert_true(sp > p && (size_t)(sp - 1 - p) < sizeof(stack));
		memcpy(stack, p, (size_t)(sp - 1 - p));
		stack[sp - 1 - p] = '\0';
		v = strtoull(sp, NULL, 10);
		for (i = 0; i < w->n && strcmp(w->v[i].stack, stack); i++)
			;
		if (i == w->n)
			fail_msg("unexpected stack '%s'", stack);
		if (v != (total ? w->v[i].total : w->v[i].self))
			fail_msg("stack '%s': %llu, want %llu", stack, (unsigned long long)v,
				 (unsigned long long)(total ? w->v[i].total : w->v[i].self));
		sum += v;
		lines++;
		p = nl + 1;
	}
	for (i = 0; i < w->n; i++)
		nonzero += (total ? w->v[i].total : w->v[i].self) != 0;
	assert_int_equal(lines, nonzero);
	if (!total)
		assert_int_equal(sum, sum_want);
}

static void test_random_nested(void **state)
{
	uint64_t seed = tg_seed("test_random_nested"), s = seed, time_all = 0;
	struct wants wm = {0}, wp = {0};
	struct tg_trace tr;
	char merged[200], per_thread[200], *out;
	const char *path;
	size_t threads = 1 + (size_t)tg_below(&s, 5), i, calls;

	(void)state;
	memset(&tr, 0, sizeof(tr));
	for (i = 0; i < threads; i++) {
		struct tg_thread *th = tg_thread_of(&tr, (uint16_t)(100 + i * 7));
		uint64_t tsc = tg_next(&s) >> 8;

		for (calls = 1 + (size_t)tg_below(&s, 20); calls; calls--) {
			merged[0] = '\0';
			snprintf(per_thread, sizeof(per_thread), "thread %u", th->tid);
			time_all += gen_call(th, &s, &tsc, merged, per_thread, 0, &wm, &wp);
			tsc += tg_below(&s, 1000);
		}
	}
	scratch_write_text("rand.xray.map",
			   "function\t0\tf0\t0x1\t-\t-\nfunction\t1\tf1\t0x2\t-\t-\n"
			   "function\t2\tf2\t0x3\t-\t-\nfunction\t3\tf3\t0x4\t-\t-\n"
			   "function\t4\tf4\t0x5\t-\t-\nfunction\t5\tf5\t0x6\t-\t-\n");
	path = tg_write_scratch(&tr, 1024, "rand.xray", SHUFFLE_SEED);
	out = stack_ok(NULL, path, NULL);
	check_folded(out, &wm, 0, time_all);
	free(out);
	out = stack_ok(NULL, "--value=total", path, NULL);
	check_folded(out, &wm, 1, 0);
	free(out);
	out = stack_ok(NULL, "--per-thread", path, NULL);
	check_folded(out, &wp, 0, time_all);
	free(out);
	free(wm.v);
	free(wp.v);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void test_errors(void **state)
{
	struct child_result r;
	const char *path = known_trace();
	struct tg_trace tr;
	char bad[512];
	FILE *f;
	size_t n;

	(void)state;
	/* Cut short: not a whole number of buffers. */
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(bad, 1, sizeof(bad), f);
	fclose(f);
	assert_true(n > 100);
	scratch_write("cut.xray", bad, 100);
	assert_int_equal(child_xfdr(&r, "stack", scratch_path("cut.xray"), NULL), 1);
	text_assert_only_error_line(&r, scratch_path("cut.xray"));
	child_result_free(&r);

	assert_int_equal(child_xfdr(&r, "stack", scratch_path("missing.xray"), NULL), 2);
	text_assert_only_error_line(&r, "xfdr stack: ");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", "--value=self-ish", path, NULL), 2);
	text_assert_only_error_line(&r, "xfdr stack: '--value' takes self or total");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", "--unit=s", path, NULL), 2);
	text_assert_only_error_line(&r, "xfdr stack: '--unit' takes");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", "--bogus", path, NULL), 2);
	text_assert_only_error_line(&r, "xfdr stack: ");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", NULL), 2);
	text_assert_only_error_line(&r, "xfdr stack: missing FILE");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", "--map=x", "--no-map", path, NULL), 2);
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", "-o", path, path, NULL), 2);
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", "-o", "/nonexistent/dir/x", path, NULL), 1);
	text_assert_only_error_line(&r, "xfdr stack: /nonexistent/dir/x: cannot create");
	child_result_free(&r);

	assert_int_equal(child_xfdr(&r, "stack", "--help", NULL), 0);
	text_assert_contains(r.out, "usage: xfdr stack");
	child_result_free(&r);

	/* A trace with no calls: nothing to print, and that is fine. */
	memset(&tr, 0, sizeof(tr));
	tg_thread_of(&tr, 9);
	assert_int_equal(
	    child_xfdr(&r, "stack", tg_write_scratch(&tr, 256, "empty.xray", SHUFFLE_SEED), NULL),
	    0);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "");
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_merged_self), cmocka_unit_test(test_known_total_and_units),
	    cmocka_unit_test(test_known_per_thread),  cmocka_unit_test(test_context_unknown),
	    cmocka_unit_test(test_random_nested),     cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
