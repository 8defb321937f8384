/*
 * tests/system/test_cli_pprof.c - `xfdr convert --output-format=pprof` (command/pprof.c): the
 * calls of a trace as a gzipped pprof profile.
 *
 * Every profile is read by the real client, `go tool pprof` from Debian's golang-go (installed
 * by `make deps`; without it the tests fail, they do not skip): its -top table (flat and cum
 * per function), its -traces (each sample's stack, leaf first), -comments and -diff_base.
 * What it prints is compared with values worked out by hand from the traces the tests build
 * (1 GHz, so that a tick is a nanosecond), and, for a recorded program, with `xfdr account`
 * and with the calls the program is known to make.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/preload_record.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "tests/support/trace_build.h"

/*
 * `go tool pprof ARGS... PROFILE` (at most 6 ARGS, NULL-ended), no node left out for being
 * small; returns its stdout (free it).
 */
static char *pprof(const char *profile, ...)
{
	char *argv[14] = {"go", "tool", "pprof", "-nodefraction=0", "-nodecount=100000"};
	struct child_result r;
	size_t n = 5;
	va_list ap;
	char *a, *out;

	va_start(ap, profile);
	while ((a = va_arg(ap, char *)) && n < 12)
		argv[n++] = a;
	va_end(ap);
	argv[n++] = (char *)profile;
	argv[n] = NULL;
	child_capture(argv, &r);
	if (r.status == 127)
		fail_msg("go is needed to read the profile (make deps installs golang-go)");
	if (r.status != 0)
		fail_msg("go tool pprof %s %s: status %d\n%s%s", argv[5], profile, r.status, r.out,
			 r.err);
	out = strdup(r.out);
	assert_non_null(out);
	child_result_free(&r);
	return out;
}

/* `xfdr convert --output-format=pprof -o OUT TRACE`: must succeed; returns OUT. */
static const char *convert(const char *trace, const char *out_name)
{
	const char *out = scratch_path(out_name);

	child_xfdr_ok("convert", "--output-format=pprof", "-o", out, trace, NULL);
	return out;
}

/* The flat and cum values of function name in a -top table ("ns" after them with -unit=ns). */
static void top_row(const char *top, const char *name, uint64_t *flat, uint64_t *cum)
{
	const char *line;
	char want[256];

	snprintf(want, sizeof(want), "%%  %s\n", name);
	line = text_line_of(top, want);
	if (!line)
		fail_msg("no row for %s in:\n%s", name, top);
	if (sscanf(line, " %" SCNu64 "%*[a-z] %*s %*s %" SCNu64, flat, cum) != 2 &&
	    sscanf(line, " %" SCNu64 " %*s %*s %" SCNu64, flat, cum) != 2)
		fail_msg("no numbers in the row of %s:\n%s", name, top);
}

static void assert_row(const char *top, const char *name, uint64_t flat, uint64_t cum)
{
	uint64_t f, c;

	top_row(top, name, &f, &c);
	if (f != flat || c != cum)
		fail_msg("%s: flat %" PRIu64 ", cum %" PRIu64 "; want %" PRIu64 ", %" PRIu64
			 " in:\n%s",
			 name, f, c, flat, cum, top);
}

/* ---- A hand-built trace --------------------------------------------------------------- */

#define T0 1000000ull

static const char names_map[] = "xfdr-map\t1\n"
				"program\t/usr/bin/hand\n"
				"function\t1\tmain\t0x1\t-\t-\n"
				"function\t2\ta\t0x2\t-\t-\n"
				"function\t3\tb\t0x3\t-\t-\n";

/*
 * 1 GHz: a tick is a nanosecond. Thread 1:
 *   main 0..1000 { a 100..400 { b 150..250 }  a 500..600 }
 * Thread 2: b 0..40.
 * Self: main 1000 - 300 - 100 = 600, a 200 + 100 = 300, b 100 + 40 = 140 (1040 in all).
 * a_calls: how many times main calls a after the first (each 100 ns, its end 100 ns before
 * main's).
 */
static const char *hand_trace(const char *name, unsigned a_calls)
{
	char map[64];
	const char *path;
	struct tb b;
	unsigned i;

	tb_init(&b, 512, 1000000000ull);
	tb_buffer(&b, 1, 1, T0);
	tb_fn(&b, ENTER, 1, 0);
	tb_fn(&b, ENTER, 2, 100);
	tb_fn(&b, ENTER, 3, 50);
	tb_fn(&b, EXIT, 3, 100);
	tb_fn(&b, EXIT, 2, 150);
	for (i = 0; i < a_calls; i++) {
		tb_fn(&b, ENTER, 2, 100);
		tb_fn(&b, EXIT, 2, 100);
	}
	tb_fn(&b, EXIT, 1, 400);
	tb_buffer(&b, 2, 2, T0 + 5000);
	tb_fn(&b, ENTER, 3, 0);
	tb_fn(&b, EXIT, 3, 40);
	path = tb_write(&b, name);
	snprintf(map, sizeof(map), "%s.map", name);
	scratch_write_text(map, names_map);
	return path;
}

/* Both values of every function, the samples' stacks, the program and the comment. */
static void test_hand_built(void **state)
{
	const char *prof = convert(hand_trace("hand.xray", 1), "hand.pb.gz");
	char *top, *traces, *raw;

	(void)state;
	top = pprof(prof, "-top", "-unit=ns", NULL);
	text_assert_contains(top, "Type: wall\n"); /* the default sample type */
	text_assert_contains(top, "of 1040ns total");
	assert_row(top, "main", 600, 1000);
	assert_row(top, "a", 300, 400);
	assert_row(top, "b", 140, 140);
	free(top);

	top = pprof(prof, "-top", "-sample_index=calls", NULL);
	text_assert_contains(top, "Type: calls\n");
	text_assert_contains(top, "of 5 total");
	/* cum: the calls of the function and of everything below it */
	assert_row(top, "main", 1, 4);
	assert_row(top, "a", 2, 3);
	assert_row(top, "b", 2, 2);
	free(top);

	/* One sample per distinct stack, leaf first: b under a under main is not b alone. */
	traces = pprof(prof, "-traces", "-unit=ns", NULL);
	text_assert_contains(traces, "     600ns   main\n-");
	text_assert_contains(traces, "     300ns   a\n             main\n-");
	text_assert_contains(traces, "     100ns   b\n             a\n             main\n-");
	text_assert_contains(traces, "      40ns   b\n-");
	free(traces);

	raw = pprof(prof, "-raw", NULL);
	text_assert_contains(raw, "calls/count wall/nanoseconds[dflt]\n");
	text_assert_contains(raw, "/usr/bin/hand"); /* the mapping: the sidecar's program */
	text_assert_contains(raw, "[FN]");	    /* named: nothing for pprof to symbolize */
	text_assert_contains(raw, "Comment: xfdr convert --output-format=pprof ");
	/* The earliest WallClockTime (1 s and 1 us) and the span of the TSCs (T0 to T0 + 5040). */
	text_assert_contains(raw, "Time: 1970-01-01 00:00:01.000001 +0000 UTC\n");
	text_assert_contains(raw, "Duration: 5.04\n"); /* pprof prints 4 characters of 5.04us */
	free(raw);
}

/* Each sample is labelled with its thread: -tags sums them, -tagfocus keeps one. */
static void test_thread_labels(void **state)
{
	const char *prof = convert(hand_trace("hand.xray", 1), "hand.pb.gz");
	char *tags, *top;

	(void)state;
	tags = pprof(prof, "-tags", "-unit=ns", NULL);
	text_assert_contains(tags, "thread: Total 1040.0ns\n");
	text_assert_contains(tags, "1000.0ns (96.15%): thread 1\n");
	text_assert_contains(tags, "40.0ns ( 3.85%): thread 2\n");
	free(tags);
	top = pprof(prof, "-top", "-unit=ns", "-tagfocus=thread=thread 2", NULL);
	assert_row(top, "b", 40, 40);
	assert_null(strstr(top, "main"));
	free(top);
}

/* Without a sidecar every function is "#ID", as in `xfdr stack`. */
static void test_without_names(void **state)
{
	const char *trace = hand_trace("bare.xray", 1), *out = scratch_path("bare.pb.gz");
	char *top;

	(void)state;
	child_xfdr_ok("convert", "-f", "pprof", "--no-map", "-o", out, trace, NULL);
	top = pprof(out, "-top", "-unit=ns", NULL);
	assert_row(top, "#1", 600, 1000);
	assert_row(top, "#3", 140, 140);
	free(top);
}

/* -diff_base: two runs, the second calling a three more times (100 ns each, after 100 ns). */
static void test_diff_base(void **state)
{
	const char *base = convert(hand_trace("base.xray", 1), "base.pb.gz");
	const char *next = convert(hand_trace("next.xray", 4), "next.pb.gz");
	char arg[600], *top;

	(void)state;
	snprintf(arg, sizeof(arg), "-diff_base=%s", base);
	top = pprof(next, "-top", "-sample_index=calls", arg, NULL);
	assert_row(top, "a", 3, 3);
	free(top);
	top = pprof(next, "-top", "-unit=ns", arg, NULL);
	/* a: 300 ns more of its own; main: 100 ns more of its own per call (the gap before it) */
	assert_row(top, "a", 300, 300);
	assert_row(top, "main", 300, 600);
	free(top);
}

/*
 * A call still open at the end is kept with the time seen (to the thread's last event); a note
 * on stderr says so, and the profile's comments too.
 */
static void test_incomplete(void **state)
{
	const char *trace, *out = scratch_path("open.pb.gz");
	struct child_result r;
	struct tb b;
	char *top, *comments;

	(void)state;
	tb_init(&b, 256, 1000000000ull);
	tb_buffer(&b, 1, 1, T0);
	tb_fn(&b, ENTER, 1, 0);
	tb_fn(&b, ENTER, 2, 10);
	tb_fn(&b, EXIT, 2, 30);
	tb_fn(&b, ENTER, 3, 60); /* main open at the end: 0..100 */
	trace = tb_write(&b, "open.xray");
	scratch_write_text("open.xray.map", names_map);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "pprof", "-o", out, trace, NULL), 0);
	text_assert_contains(r.err, "note: 2 of 3 calls are incomplete");
	child_result_free(&r);
	top = pprof(out, "-top", "-unit=ns", NULL);
	assert_row(top, "main", 70, 100);
	assert_row(top, "a", 30, 30);
	free(top);
	top = pprof(out, "-top", "-sample_index=calls", NULL);
	assert_row(top, "b", 1, 1); /* entered at the last event: a call, no time */
	assert_row(top, "main", 1, 3);
	free(top);
	comments = pprof(out, "-comments", NULL);
	text_assert_contains(comments, "note: 2 of 3 calls are incomplete");
	free(comments);
}

/* ---- A recorded program --------------------------------------------------------------- */

static const char program[] = "#include <pthread.h>\n"
			      "static volatile int sink;\n"
			      "static void leaf(int x) { sink = x; }\n"
			      "static void work(int n) { for (int i = 0; i < n; i++) leaf(i); }\n"
			      "static void *worker(void *arg) { work(300); return arg; }\n"
			      "int main(void)\n"
			      "{\n"
			      "	pthread_t a, b;\n"
			      "	pthread_create(&a, NULL, worker, NULL);\n"
			      "	pthread_create(&b, NULL, worker, NULL);\n"
			      "	pthread_join(a, NULL);\n"
			      "	pthread_join(b, NULL);\n"
			      "	work(200);\n"
			      "	return 0;\n"
			      "}\n";

/* The count and sum (seconds) of function name in `xfdr account -f csv` output. */
static void account_row(const char *csv, const char *name, uint64_t *count, double *sum)
{
	char want[128];
	const char *line;

	snprintf(want, sizeof(want), ",\"%s\"\n", name);
	line = text_line_of(csv, want);
	if (!line)
		fail_msg("account has no row for %s:\n%s", name, csv);
	if (sscanf(line, "%*d,%" SCNu64 ",%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%lf", count, sum) != 2)
		fail_msg("account's row of %s unreadable:\n%s", name, csv);
}

/*
 * Three threads, no recursion: every function's calls are exactly those the program makes and
 * account counts, and its cum time is account's sum (which llvm-xray's account prints as
 * seconds with seven digits; pprof's nodes are rounded to the nanosecond each).
 */
static void test_agrees_with_account(void **state)
{
	static const struct {
		const char *name;
		uint64_t calls;
	} want[] = {{"leaf", 800}, {"work", 3}, {"worker", 2}, {"main", 1}};
	char prog[256], trace[512], *calls, *wall;
	struct child_result r;
	const char *prof;
	size_t i;

	(void)state;
	preload_build(program, prog, sizeof(prog));
	preload_record(prog, NULL, "rec", "", trace, sizeof(trace));
	prof = convert(trace, "prog.pb.gz");
	assert_int_equal(child_xfdr(&r, "account", "-f", "csv", trace, NULL), 0);
	calls = pprof(prof, "-top", "-sample_index=calls", NULL);
	wall = pprof(prof, "-top", "-unit=ns", NULL);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t count, flat, cum, ns_flat, ns_cum;
		double sum, diff;

		account_row(r.out, want[i].name, &count, &sum);
		assert_int_equal(count, want[i].calls);
		top_row(calls, want[i].name, &flat, &cum);
		assert_int_equal(flat, want[i].calls);
		top_row(wall, want[i].name, &ns_flat, &ns_cum);
		diff = (double)ns_cum - sum * 1e9;
		if (diff < 0)
			diff = -diff;
		if (diff > sum * 1e9 * 1e-6 + 10)
			fail_msg("%s: pprof's cum %" PRIu64 " ns, account's sum %.9f s",
				 want[i].name, ns_cum, sum);
	}
	child_result_free(&r);
	free(calls);
	free(wall);
}

/* The output of `addr2line -e MODULE VADDR` for the function the .map of trace names name. */
static void addr2line_of(const char *trace, const char *name, char *out, size_t n)
{
	char map[600], line[1024], module[512], vaddr[32], want[128], *argv[5];
	struct child_result r;
	FILE *f;
	int found = 0;

	snprintf(map, sizeof(map), "%s.map", trace);
	snprintf(want, sizeof(want), "\t%s\t", name);
	f = fopen(map, "r");
	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, "function\t", 9) && strstr(line, want) &&
			sscanf(line, "function\t%*u\t%*s\t%*s\t%511s\t%31s", module, vaddr) == 2;
	fclose(f);
	if (!found)
		fail_msg("%s names no function %s", map, name);
	argv[0] = "addr2line";
	argv[1] = "-e";
	argv[2] = module;
	argv[3] = vaddr;
	argv[4] = NULL;
	child_capture(argv, &r);
	assert_int_equal(r.status, 0);
	snprintf(out, n, "%.*s", (int)strcspn(r.out, "\n"), r.out);
	child_result_free(&r);
}

/*
 * Files and lines from the program's DWARF: each function's location is where addr2line puts
 * its first instruction (leaf, written on one line, is line 3 of the source); a program
 * stripped of its DWARF and a deleted one give names without lines, and one note each saying
 * why.
 */
static void test_source_lines(void **state)
{
	static const char *const fns[] = {"leaf", "work", "worker", "main"};
	char prog[256], stripped[300], trace[512], site[600], want[700], *raw;
	char *strip_argv[] = {"strip", "--strip-debug", stripped, NULL};
	struct child_result r;
	const char *prof;
	size_t i;

	(void)state;
	preload_build(program, prog, sizeof(prog));
	preload_record(prog, NULL, "lines", "", trace, sizeof(trace));
	prof = convert(trace, "lines.pb.gz");
	raw = pprof(prof, "-raw", NULL);
	text_assert_contains(raw, "[FN][FL][LN]");
	addr2line_of(trace, "leaf", site, sizeof(site));
	assert_non_null(strstr(site, "/prog.c:3"));
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		addr2line_of(trace, fns[i], site, sizeof(site));
		snprintf(want, sizeof(want), " M=1 %s %s s=%s\n", fns[i], site,
			 strrchr(site, ':') + 1);
		text_assert_contains(raw, want);
	}
	free(raw);

	snprintf(stripped, sizeof(stripped), "%s-stripped", prog);
	assert_int_equal(rename(prog, stripped), 0);
	child_capture(strip_argv, &r);
	assert_int_equal(r.status, 0);
	child_result_free(&r);
	preload_record(stripped, NULL, "stripped", "", trace, sizeof(trace));
	assert_int_equal(
	    child_xfdr(&r, "convert", "-f", "pprof", "-o", scratch_path("s.pb.gz"), trace, NULL),
	    0);
	snprintf(want, sizeof(want), "xfdr convert: note: no source lines from %s: ", stripped);
	text_assert_contains(r.err, want);
	assert_int_equal(text_count_lines(r.err), 1);
	child_result_free(&r);
	raw = pprof(scratch_path("s.pb.gz"), "-raw", NULL);
	text_assert_contains(raw, " M=1 leaf :0 s=0\n");
	free(raw);

	assert_int_equal(unlink(stripped), 0);
	assert_int_equal(
	    child_xfdr(&r, "convert", "-f", "pprof", "-o", scratch_path("s.pb.gz"), trace, NULL),
	    0);
	text_assert_contains(r.err, want);
	text_assert_contains(r.err, "No such file");
	child_result_free(&r);
}

/* A sidecar whose module is a device is not read as an ELF file (it would never end). */
static void test_module_not_a_file(void **state)
{
	const char *trace = hand_trace("dev.xray", 1), *out = scratch_path("dev.pb.gz");
	struct child_result r;
	char *top;

	(void)state;
	scratch_write_text("dev.xray.map", "xfdr-map\t1\n"
					   "function\t1\tmain\t0x1\t/dev/zero\t0x10\n"
					   "function\t2\ta\t0x2\t/dev/zero\t0x20\n");
	assert_int_equal(child_xfdr(&r, "convert", "-f", "pprof", "-o", out, trace, NULL), 0);
	assert_string_equal(
	    r.err, "xfdr convert: note: no source lines from /dev/zero: not a regular file\n");
	child_result_free(&r);
	top = pprof(out, "-top", "-unit=ns", NULL);
	assert_row(top, "main", 600, 1000);
	free(top);
}

/*
 * A window, 200 ns to 550 ns from the trace's start (T0): thread 1's calls cut to it, thread
 * 2 (at 5000 ns) left out. main 200..550 (350); a 200..400 (200, its child b 200..250: 50)
 * and a 500..550 (50); so self main 350 - 250 = 100, a 150 + 50 = 200, b 50.
 */
static void test_window(void **state)
{
	const char *trace = hand_trace("window.xray", 1), *out = scratch_path("window.pb.gz");
	struct child_result r;
	char *top;

	(void)state;
	assert_int_equal(child_xfdr(&r, "convert", "-f", "pprof", "--since=200ns", "--until=550ns",
				    "-o", out, trace, NULL),
			 0);
	child_result_free(&r);
	top = pprof(out, "-top", "-unit=ns", NULL);
	assert_row(top, "main", 100, 350);
	assert_row(top, "a", 200, 250);
	assert_row(top, "b", 50, 50);
	free(top);
}

/* ---- Usage and errors ------------------------------------------------------------------- */

static void test_usage_and_errors(void **state)
{
	const char *trace = hand_trace("use.xray", 1), *out = scratch_path("use.pb.gz");
	struct child_result r;
	struct tb b;

	(void)state;
	assert_int_equal(
	    child_xfdr(&r, "convert", "-f", "pprof", "--compress=none", "-o", out, trace, NULL), 2);
	text_assert_contains(r.err, "'--compress' is an option of --output-format=perfetto");
	child_result_free(&r);

	/* No cycle frequency: no nanoseconds. */
	tb_init(&b, 256, 0);
	tb_buffer(&b, 1, 1, T0);
	tb_fn(&b, ENTER, 1, 0);
	tb_fn(&b, EXIT, 1, 10);
	trace = tb_write(&b, "nohz.xray");
	assert_int_equal(child_xfdr(&r, "convert", "-f", "pprof", "-o", out, trace, NULL), 1);
	text_assert_contains(r.err, "cycle_frequency is 0");
	child_result_free(&r);

	/* Binary output is never written to a terminal. */
	assert_int_equal(
	    child_xfdr_on_terminal(&r, "convert", "-f", "pprof", hand_trace("tty.xray", 1), NULL),
	    0);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "refusing to write a binary profile to a terminal");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "--help", NULL), 0);
	text_assert_contains(r.out, "'pprof':");
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hand_built),	  cmocka_unit_test(test_thread_labels),
	    cmocka_unit_test(test_without_names), cmocka_unit_test(test_diff_base),
	    cmocka_unit_test(test_incomplete),	  cmocka_unit_test(test_agrees_with_account),
	    cmocka_unit_test(test_source_lines),  cmocka_unit_test(test_module_not_a_file),
	    cmocka_unit_test(test_window),	  cmocka_unit_test(test_usage_and_errors),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
