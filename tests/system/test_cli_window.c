/*
 * tests/system/test_cli_window.c - windows on the reading verbs (command/reading_window.c,
 * analysis/window.h): --since, --until, --thread (by the trace's id and by the kernel's tid),
 * --window=common|all, and what each thread's span is told to be.
 *
 * One hand-built trace at 1 GHz (a tick is a nanosecond), T0 its first TSC:
 *   thread 1 (tid 4001, "main"), whole:   main 0..1000 { poll 100..900 }
 *   thread 2 (tid 4002, "worker"), ring mode overwrote 3 of its buffers: its first kept buffer
 *     begins inside work (a stack context at 600): crunch 610..700, crunch 710..800, work ends
 *     at 900
 *   the process file's drop counts (thread id 0): thread 2, tid 4002, overwritten 3.
 * Thread 2's history holds from 600 on, thread 1's all of it: the common window is 600..1000.
 * Every expected figure below is worked out by hand from those times.
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
#include "tests/support/runtime_test.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "tests/support/trace_build.h"
#include "writer/payload.h"

#define T0 1000000ull

static const char names_map[] = "xfdr-map\t1\n"
				"program\t/usr/bin/hand\n"
				"thread\t4001\t1\tmain\t0\t0\t0\t0\t0\t0\t0\n"
				"thread\t4002\t2\tworker\t0\t0\t0\t3\t0\t0\t0\n"
				"function\t1\tmain\t0x1\t-\t-\n"
				"function\t2\tpoll\t0x2\t-\t-\n"
				"function\t3\twork\t0x3\t-\t-\n"
				"function\t4\tcrunch\t0x4\t-\t-\n";

/* The trace (and its .map) as scratch file name; returns its path, which lasts. */
static char *window_trace(const char *name)
{
	static const uint32_t work[] = {3};
	const struct wr_drop_totals totals = {.overwritten = 3};
	const struct wr_drop_entry entry = {.tid = 4002, .thread_id = 2, .overwritten = 3};
	uint8_t drop[XFDR_DROP_FIXED_BYTES + XFDR_DROP_ENTRY_BYTES];
	char map[256];
	struct tb b;
	char *path;

	tb_init(&b, 512, 1000000000ull);
	tb_buffer(&b, 1, 1, T0);
	tb_fn(&b, ENTER, 1, 0);
	tb_fn(&b, ENTER, 2, 100);
	tb_fn(&b, EXIT, 2, 800);
	tb_fn(&b, EXIT, 1, 100);
	tb_buffer(&b, 2, 2, T0 + 600);
	tb_context(&b, 1, work, 1, T0 + 600);
	tb_fn(&b, ENTER, 4, 10);
	tb_fn(&b, EXIT, 4, 90);
	tb_fn(&b, ENTER, 4, 10);
	tb_fn(&b, EXIT, 4, 90);
	tb_fn(&b, EXIT, 3, 100);
	tb_buffer(&b, 0, 3, T0 + 1000);
	wr_drop_head(drop, &totals, 1);
	wr_drop_entry(drop + XFDR_DROP_FIXED_BYTES, &entry);
	tb_custom(&b, drop, sizeof(drop), T0 + 1000);
	path = strdup(tb_write(&b, name));
	assert_non_null(path);
	snprintf(map, sizeof(map), "%s.map", name);
	scratch_write_text(map, names_map);
	return path;
}

/* r's status must be want: else the test fails, showing its stderr. */
static void status_is(struct child_result *r, int want)
{
	if (r->status != want)
		fail_msg("exit status %d, want %d; stderr: %s", r->status, want, r->err);
}

/* `xfdr VERB ARGS... path` must exit 0 with exactly want_out and want_err. */
static void expect(const char *want_out, const char *want_err, const char *verb, ...)
{
	struct child_result r;
	char *argv[16];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)verb;
	va_start(ap, verb);
	while ((argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	assert_true(n < 16);
	child_xfdr(&r, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6], argv[7],
		   argv[8], argv[9], NULL);
	if (r.status)
		fail_msg("xfdr %s exited %d: %s", verb, r.status, r.err);
	if (want_out)
		text_assert_equal(r.out, want_out);
	if (want_err)
		text_assert_equal(r.err, want_err);
	child_result_free(&r);
}

#define COMMON_LINES(verb)                                                                         \
	"xfdr " verb ": window 600 ns to 1.000 us of 1.000 us (common: where every thread's kept " \
	"history holds; --window=all reads all of it)\n"                                           \
	"xfdr " verb ": thread 1 (tid 4001, main): 0 ns to 1.000 us\n"                             \
	"xfdr " verb ": thread 2 (tid 4002, worker): 600 ns to 900 ns, history before it lost (3 " \
	"buffers overwritten)\n"

/*
 * account, by default in the common window 600..1000: only the two crunch calls (90 ns each)
 * are whole in it; main and poll began before it (cut), work before the trace.
 */
static void test_account_common(void **state)
{
	char *t = window_trace("acc.xray");

	(void)state;
	expect("funcid,count,min,median,90%ile,99%ile,max,sum,debug,function\n"
	       "4,2,9.000000e-08,9.000000e-08,9.000000e-08,9.000000e-08,9.000000e-08,"
	       "1.800000e-07,\"(unknown)\",\"crunch\"\n",
	       COMMON_LINES("account") "xfdr account: not counted: 1 call begun before the "
				       "trace, 2 calls cut at an edge of the window\n",
	       "account", "-f", "csv", t, NULL);
	/* --window=all: main (1000) and poll (800) count too; the spans are still told. */
	expect("funcid,count,min,median,90%ile,99%ile,max,sum,debug,function\n"
	       "1,1,1.000000e-06,1.000000e-06,1.000000e-06,1.000000e-06,1.000000e-06,"
	       "1.000000e-06,\"(unknown)\",\"main\"\n"
	       "2,1,8.000000e-07,8.000000e-07,8.000000e-07,8.000000e-07,8.000000e-07,"
	       "8.000000e-07,\"(unknown)\",\"poll\"\n"
	       "4,2,9.000000e-08,9.000000e-08,9.000000e-08,9.000000e-08,9.000000e-08,"
	       "1.800000e-07,\"(unknown)\",\"crunch\"\n",
	       "xfdr account: thread 1 (tid 4001, main): 0 ns to 1.000 us\n"
	       "xfdr account: thread 2 (tid 4002, worker): 600 ns to 900 ns, history before it "
	       "lost (3 buffers overwritten)\n"
	       "xfdr account: not counted: 1 call begun before the trace\n",
	       "account", "-f", "csv", "--window=all", t, NULL);
	free(t);
}

/*
 * stack: in the common window main 600..1000 (400) holds poll 600..900 (300): self 100, 300;
 * work 600..900 (300, from the context: not cut) holds crunch 90 + 90: self 120, 180.
 * All of it: main 1000 - 800 = 200, poll 800.
 */
static void test_stack_windows(void **state)
{
	char *t = window_trace("st.xray");

	(void)state;
	expect("main 100\nmain;poll 300\nwork 120\nwork;crunch 180\n",
	       COMMON_LINES("stack") "xfdr stack: note: 3 of 5 calls are incomplete and kept with "
				     "the time seen: 1 begun before the trace (from a stack "
				     "context), 2 begun before the window (kept from its start)\n",
	       "stack", t, NULL);
	expect("main 200\nmain;poll 800\nwork 120\nwork;crunch 180\n", NULL, "stack",
	       "--window=all", t, NULL);
	/*
	 * 650..750: poll cut to 650..750 (100), main the same (self 0: no line); work cut to
	 * 650..750 (100) holds crunch 650..700 (50, cut) and 710..750 (40, cut): self 10, 90.
	 */
	expect("main;poll 100\nwork 10\nwork;crunch 90\n",
	       "xfdr stack: window 650 ns to 750 ns of 1.000 us\n"
	       "xfdr stack: thread 1 (tid 4001, main): 0 ns to 1.000 us\n"
	       "xfdr stack: thread 2 (tid 4002, worker): 600 ns to 900 ns, history before it lost "
	       "(3 buffers overwritten)\n"
	       "xfdr stack: note: 5 of 5 calls are incomplete and kept with the time seen: 1 "
	       "begun before the trace (from a stack context), 4 begun before the window (kept "
	       "from its start), 4 open at the window's end (kept up to it)\n",
	       "stack", "--since=650ns", "--until=750ns", t, NULL);
	/* The same edges as TSCs. */
	expect("main;poll 100\nwork 10\nwork;crunch 90\n", NULL, "stack", "--since=1000650",
	       "--until=1000750", t, NULL);
	free(t);
}

/*
 * --thread by the kernel's tid, by the trace's id, and a list. Thread 2 alone: its own span is
 * the common window, so nothing is narrowed.
 */
static void test_threads(void **state)
{
	char *t = window_trace("th.xray");
	struct child_result r;

	(void)state;
	expect("work 120\nwork;crunch 180\n", NULL, "stack", "--thread=4002", t, NULL);
	expect("work 120\nwork;crunch 180\n", NULL, "stack", "--thread=2", t, NULL);
	/* Thread 1 alone lost nothing: all of its time, and nothing told on stderr but the note. */
	expect("main 200\nmain;poll 800\n", "", "stack", "--thread=4001", t, NULL);
	expect(NULL, NULL, "stack", "--thread=4001,2", t, NULL);

	child_xfdr(&r, "stack", "--thread=77", t, NULL);
	status_is(&r, 2);
	text_assert_contains(r.err, "'--thread': no thread with id or tid 77 in ");
	text_assert_contains(r.err, "(its threads: 1 (tid 4001), 2 (tid 4002))");
	child_result_free(&r);
	child_xfdr(&r, "stack", "--thread=1,", t, NULL);
	status_is(&r, 2);
	text_assert_contains(r.err, "'--thread' takes thread ids or tids, comma-separated");
	child_result_free(&r);
	/* A number that is one thread's id and another's tid is refused, not guessed. */
	scratch_write_text("th.xray.map", "xfdr-map\t1\nthread\t2\t1\tmain\t0\t0\t0\t0\t0\t0\t0\n");
	child_xfdr(&r, "stack", "--thread=2", t, NULL);
	status_is(&r, 2);
	text_assert_contains(r.err, "'--thread=2' is thread 2 of ");
	text_assert_contains(r.err, "and the thread of tid 2 (thread 1)");
	child_result_free(&r);
	free(t);
}

/* flame: the window in its title. */
static void test_flame_title(void **state)
{
	char *t = window_trace("fl.xray");
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "flame", t, NULL), 0);
	text_assert_contains(r.out, "Flame graph: fl.xray, 600 ns to 1.000 us of 1.000 us (common "
				    "window)</text>");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "flame", "--window=all", t, NULL), 0);
	text_assert_contains(r.out, "Flame graph: fl.xray</text>");
	child_result_free(&r);
	free(t);
}

/*
 * dump: each thread's span under the header; --thread and a window leave out the other
 * records. Thread 2 from 650 to 750 ns: crunch's exit at 700 and its entry at 710.
 */
static void test_dump(void **state)
{
	char *t = window_trace("du.xray");
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "dump", t, NULL), 0);
	text_assert_contains(r.out, "\nthread id=1 tid=4001 name=\"main\" first_tsc=1000000 "
				    "last_tsc=1001000 span_s=0.000000000..0.000001000\n"
				    "thread id=2 tid=4002 name=\"worker\" first_tsc=1000600 "
				    "last_tsc=1000900 span_s=0.000000600..0.000000900 lost=start\n"
				    "offset ");
	text_assert_contains(r.out, " function=2 delta=100 tsc=1000100 cpu=0 name=\"poll\" ");
	assert_int_equal(text_count(r.out, "Entry "), 4);
	child_result_free(&r);

	assert_int_equal(
	    child_xfdr(&r, "dump", "--thread=4002", "--since=650ns", "--until=750ns", t, NULL), 0);
	assert_null(strstr(r.out, "thread id=1 "));
	text_assert_contains(r.out, "lost=start\nwindow since_tsc=1000650 until_tsc=1000750 "
				    "span_s=0.000000650..0.000000750\noffset ");
	assert_int_equal(text_count(r.out, "\n"), 7); /* file, header, thread, window, 3 lines */
	text_assert_contains(r.out, "Exit              function=4 delta=90 tsc=1000700 cpu=0 "
				    "name=\"crunch\" depth=1\n");
	text_assert_contains(r.out, "Entry             function=4 delta=10 tsc=1000710 cpu=0 "
				    "name=\"crunch\" depth=1\n");
	child_result_free(&r);
	free(t);
}

/*
 * The YAML of a window is llvm-xray's YAML without the records outside it: those of the threads
 * of the window (thread 0, the drop counts', whatever the window) with a TSC from lo to hi.
 */
static void expect_yaml_window(const char *t, uint64_t lo, uint64_t hi, unsigned only_thread,
			       size_t records, char *const *args)
{
	char *argv[] = {(char *)child_llvm_xray(), "convert", "--output-format=yaml", (char *)t,
			NULL};
	struct child_result l, r;
	const char *line, *next, *tsc, *th;
	unsigned long thread;
	uint64_t at;
	char *want;
	size_t n = 0;

	child_capture(argv, &l);
	assert_int_equal(l.status, 0);
	want = calloc(1, l.out_len + 1);
	assert_non_null(want);
	for (line = l.out; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		tsc = strstr(line, ", tsc: ");
		th = strstr(line, ", thread: ");
		if (!strncmp(line, "  - {", 5)) {
			at = strtoull(tsc + 7, NULL, 10);
			thread = th ? strtoul(th + 10, NULL, 10) : 0;
			if (at < lo || at > hi || (only_thread && thread != only_thread))
				continue;
		}
		memcpy(want + n, line, (size_t)(next - line));
		n += (size_t)(next - line);
	}
	child_result_free(&l);
	assert_int_equal(child_xfdr(&r, "convert", "--no-map", args[0], args[1], args[2], t, NULL),
			 0);
	text_assert_equal(r.out, want);
	text_assert_equal(r.err, "");
	assert_int_equal(text_count(r.out, "  - {"), records);
	child_result_free(&r);
	free(want);
}

static void test_yaml(void **state)
{
	char *t = window_trace("ya.xray");
	char *edges[] = {"--since=650ns", "--until=750ns", "--thread=4002"};
	/*
	 * --window=common (convert reads all by default): 600 .. 1000 ns, 9 records: thread 1's
	 * exits of poll and main, thread 2's stack context, two crunch calls and work's exit, the
	 * drop counts.
	 */
	char *common[] = {"--window=common", "--window=common", "--window=common"};

	(void)state;
	expect_yaml_window(t, T0 + 650, T0 + 750, 2, 2, edges);
	expect_yaml_window(t, T0 + 600, T0 + 1000, 0, 9, common);
	free(t);
}

/*
 * trace_event from 650 to 750 ns: every call open at 750 ends there, with an instant "end:
 * window end" (poll, main, crunch, work); those open at 650 begin there "before window" (main,
 * poll, work, the first crunch: the annotation is on both their B and E events).
 */
static void test_timeline(void **state)
{
	char *t = window_trace("tl.xray"), *out = strdup(scratch_path("tl.json"));
	struct child_result r;
	size_t bytes;
	char *json;

	(void)state;
	assert_int_equal(child_xfdr(&r, "convert", "-f", "trace_event", "--since=650ns",
				    "--until=750ns", "-o", out, t, NULL),
			 0);
	child_result_free(&r);
	json = (char *)ts_slurp(out, &bytes);
	assert_int_equal(text_count(json, "\"name\":\"end: window end\""), 4);
	assert_int_equal(text_count(json, "\"xfdr_begin\":\"before window\""), 8);
	text_assert_contains(json, "\"until_tsc\":1000750");
	text_assert_contains(json, "\"calls_open_after_window\":4");
	free(json);
	free(out);
	free(t);
}

/* Edges that are not edges. */
static void test_usage(void **state)
{
	char *t = window_trace("us.xray");
	static const char *const bad[] = {"--since=1.5", "--since=ms", "--until=2h",
					  "--since=-5us"};
	struct child_result r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		child_xfdr(&r, "account", bad[i], t, NULL);
		status_is(&r, 2);
		text_assert_contains(r.err, "takes a TSC (a decimal number), a time from the "
					    "trace's start with a unit");
		child_result_free(&r);
	}
	child_xfdr(&r, "stack", "--since=2us", "--until=1us", t, NULL);
	status_is(&r, 2);
	text_assert_contains(r.err, "'--since' is after '--until': an empty window");
	child_result_free(&r);
	child_xfdr(&r, "stack", "--until=snapshot", t, NULL);
	status_is(&r, 2);
	text_assert_contains(r.err, "'--until=snapshot'");
	child_result_free(&r);
	child_xfdr(&r, "flame", "--window=some", t, NULL);
	status_is(&r, 2);
	text_assert_contains(r.err, "'--window' takes common or all, not 'some'");
	child_result_free(&r);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_account_common), cmocka_unit_test(test_stack_windows),
	    cmocka_unit_test(test_threads),	   cmocka_unit_test(test_flame_title),
	    cmocka_unit_test(test_dump),	   cmocka_unit_test(test_yaml),
	    cmocka_unit_test(test_timeline),	   cmocka_unit_test(test_usage),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
