/*
 * tests/system/test_cli_trace_event.c - `xfdr convert --output-format=trace_event`
 * (command/trace_event.c): Chrome Trace Event JSON for ui.perfetto.dev and chrome://tracing.
 *
 * Every output is read back by a real JSON parser, Python's json module in a child process
 * (python3 must be installed: without it the tests fail, they do not skip). The checker below
 * rejects output that is not strict JSON in UTF-8, and checks what a viewer relies on: every
 * "B" has its "E" on its (pid, tid), innermost first, with the same name and the same args
 * (speedscope matches them so); timestamps never go down on a thread; instant events are
 * thread-scoped. It then prints each event as one line
 *   PH PID TID TS "NAME" {ARGS}
 * (TS exactly as written, read as a decimal; names and args re-encoded as ASCII JSON), which
 * the tests compare with lines worked out by hand from the traces they build with the writer
 * (the TSCs and the cycle frequency are chosen so that the microseconds are easy to check in
 * one's head; the comments show the sums). In "same" mode it compares our B/E events per
 * thread with llvm-xray's own trace_event output instead.
 *
 * speedscope's own importer, in headless Chromium, must place every event of the hand-built
 * traces (tests/support/speedscope.h).
 *
 * Real traces come from a small multi-threaded program compiled with -finstrument-functions and
 * recorded through LD_PRELOAD=libxfdr.so, in bounded mode and in ring mode (whose buffers begin
 * with XFDRSTAK stack contexts); random ones from tests/support/trace_gen.h, whose ground
 * truth gives every entry's and custom event's expected time.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/callstack.h"
#include "tests/support/trace_build.h"
#include "tests/support/trace_gen.h"
#include "tests/support/child.h"
#include "tests/support/pool_layout.h"
#include "tests/support/preload_record.h"
#include "tests/support/scratch.h"
#include "tests/support/speedscope.h"
#include "tests/support/text.h"
#include "writer/encode.h"
#include "writer/file.h"
#include "writer/payload.h"
#include "xfdr/format.h"

/* ---- The JSON checker (Python) ---------------------------------------------------------- */

static const char checker[] =
    "import decimal, json, sys\n"
    "D = decimal.Decimal\n"
    "\n"
    "def fail(msg):\n"
    "    print('ERROR: ' + msg)\n"
    "    sys.exit(1)\n"
    "\n"
    "def load(path):\n"
    "    raw = open(path, 'rb').read()\n"
    "    try:\n"
    "        text = raw.decode('utf-8')\n"
    "    except UnicodeDecodeError as e:\n"
    "        fail('not UTF-8: %s' % e)\n"
    "    def const(c):\n"
    "        fail('not JSON: ' + c)\n"
    "    try:\n"
    "        return json.loads(text, parse_float=D, parse_constant=const)\n"
    "    except ValueError as e:\n"
    "        fail('not JSON: %s' % e)\n"
    "\n"
    "def canon(v):\n"
    "    return json.dumps(v, sort_keys=True, separators=(',', ':'), default=str)\n"
    "\n"
    "def check(doc):\n"
    "    if type(doc) is not dict or type(doc.get('traceEvents')) is not list:\n"
    "        fail('no traceEvents list')\n"
    "    if doc.get('displayTimeUnit') != 'ns':\n"
    "        fail('displayTimeUnit is not ns')\n"
    "    stacks, last = {}, {}\n"
    "    for e in doc['traceEvents']:\n"
    "        ph, pid, tid, name = e.get('ph'), e.get('pid'), e.get('tid'), e.get('name')\n"
    "        if ph not in ('B', 'E', 'i', 'M') or type(pid) is not int or type(tid) is not int \\\n"
    "                or type(name) is not str:\n"
    "            fail('bad event ' + canon(e))\n"
    "        if ph == 'M':\n"
    "            continue\n"
    "        ts = e.get('ts')\n"
    "        if type(ts) is not D or ts < 0:\n"
    "            fail('bad ts ' + canon(e))\n"
    "        k = (pid, tid)\n"
    "        if k in last and ts < last[k]:\n"
    "            fail('ts goes down on %s: %s' % (k, canon(e)))\n"
    "        last[k] = ts\n"
    "        st = stacks.setdefault(k, [])\n"
    "        if ph == 'B':\n"
    "            st.append((name, canon(e.get('args'))))\n"
    "        elif ph == 'E':\n"
    "            if not st:\n"
    "                fail('E without B: ' + canon(e))\n"
    "            b = st.pop()\n"
    "            if b[0] != name:\n"
    "                fail('E closes another call: ' + canon(e))\n"
    "            if b[1] != canon(e.get('args')):\n"
    "                fail('E args differ from its B args %s: %s' % (b[1], canon(e)))\n"
    "        elif e.get('s') != 't':\n"
    "            fail('instant event not thread-scoped: ' + canon(e))\n"
    "    for k, st in stacks.items():\n"
    "        if st:\n"
    "            fail('B without E on %s: %s' % (k, st))\n"
    "\n"
    "def lines(doc):\n"
    "    for e in doc['traceEvents']:\n"
    "        ts = e.get('ts')\n"
    "        print(e['ph'], e['pid'], e['tid'], '-' if ts is None else str(ts),\n"
    "              json.dumps(e['name']), canon(e.get('args', {})))\n"
    "    print('OTHER', canon(doc.get('otherData', {})))\n"
    "\n"
    "def calls(doc):\n"
    "    seq = {}\n"
    "    for e in doc['traceEvents']:\n"
    "        if e.get('ph') in ('B', 'E'):\n"
    "            k = (int(e['pid']), int(e['tid']))\n"
    "            seq.setdefault(k, []).append((e['ph'], e['name'], float(e['ts'])))\n"
    "    return seq\n"
    "\n"
    "def same_calls(ours, theirs):\n"
    "    a, b = calls(ours), calls(theirs)\n"
    "    if sorted(a) != sorted(b):\n"
    "        fail('threads differ: %s vs %s' % (sorted(a), sorted(b)))\n"
    "    n = 0\n"
    "    for k in a:\n"
    "        x, y = a[k], b[k]\n"
    "        if [(p, m) for p, m, _ in x] != [(p, m) for p, m, _ in y]:\n"
    "            fail('calls differ on %s' % (k,))\n"
    "        for (_, _, t1), (_, _, t2) in zip(x, y):\n"
    "            if abs((t1 - x[0][2]) - (t2 - y[0][2])) > 0.002:\n"
    "                fail('times differ on %s: %s vs %s' % (k, t1, t2))\n"
    "        n += len(x)\n"
    "    print('SAME', len(a), n)\n"
    "\n"
    "def stitch(whole, parts):\n"
    "    # Parts consecutive in time; at each cut the slices a part ends (E, then an\n"
    "    # instant 'end: split') begin again first thing in the next (xfdr_begin split),\n"
    "    # outermost first, at the same time; with those taken out, the parts' B and E\n"
    "    # are the whole's, thread by thread.\n"
    "    want, got, last, cuts, reopen = calls(whole), {}, None, 0, {}\n"
    "    for i, doc in enumerate(parts):\n"
    "        check(doc)\n"
    "        evs = [e for e in doc['traceEvents'] if e['ph'] != 'M']\n"
    "        if evs and last is not None and min(e['ts'] for e in evs) < last:\n"
    "            fail('part %d begins before the one before ends' % (i + 1))\n"
    "        if evs:\n"
    "            last = max(e['ts'] for e in evs)\n"
    "        ended, opening, seen = {}, {}, set()\n"
    "        for j, e in enumerate(evs):\n"
    "            k = (int(e['pid']), int(e['tid']))\n"
    "            args = e.get('args') or {}\n"
    "            nxt = evs[j + 1] if j + 1 < len(evs) else {}\n"
    "            if e['ph'] == 'B' and args.get('xfdr_begin') == 'split':\n"
    "                if k in seen:\n"
    "                    fail('a split begin after the thread began: %s' % canon(e))\n"
    "                opening.setdefault(k, []).append((e['name'], e['ts']))\n"
    "                continue\n"
    "            seen.add(k)\n"
    "            if e['ph'] == 'E' and nxt.get('ph') == 'i' and nxt.get('name') == 'end: split':\n"
    "                ended.setdefault(k, []).append((e['name'], e['ts']))\n"
    "                continue\n"
    "            if e['ph'] == 'i' and e['name'] == 'end: split':\n"
    "                continue\n"
    "            if ended.get(k):\n"
    "                fail('an event after the split ends: %s' % canon(e))\n"
    "            if e['ph'] in ('B', 'E'):\n"
    "                got.setdefault(k, []).append((e['ph'], e['name'], float(e['ts'])))\n"
    "        if opening != reopen:\n"
    "            fail('part %d begins %s, the one before ended %s' % (i + 1, opening, reopen))\n"
    "        reopen = {k: v[::-1] for k, v in ended.items()}\n"
    "        cuts += sum(len(v) for v in ended.values())\n"
    "    if reopen:\n"
    "        fail('the last part ends at a cut: %s' % reopen)\n"
    "    for k in sorted(set(got) | set(want)):\n"
    "        g, w = got.get(k, []), want.get(k, [])\n"
    "        if g != w:\n"
    "            n = next((x for x in range(min(len(g), len(w))) if g[x] != w[x]),\n"
    "                     min(len(g), len(w)))\n"
    "            fail('thread %s differs at event %d: %s vs %s' % (k, n, g[n:n + 3], w[n:n + 3]))\n"
    "    print('PARTS', len(parts), 'CUT', cuts)\n"
    "\n"
    "doc = load(sys.argv[2])\n"
    "check(doc)\n"
    "if sys.argv[1] == 'lines':\n"
    "    lines(doc)\n"
    "elif sys.argv[1] == 'parts':\n"
    "    stitch(doc, [load(p) for p in sys.argv[3:]])\n"
    "else:\n"
    "    same_calls(doc, load(sys.argv[3]))\n";

/*
 * Run the checker: mode "lines" on json, or "same" on json and llvm's output. Returns what it
 * printed (free it); a checker that fails, or no python3, fails the test.
 */
static char *check_json(const char *mode, const char *json, const char *llvm)
{
	char *argv[] = {"python3",    "-c", (char *)checker, (char *)mode, (char *)json,
			(char *)llvm, NULL};
	char what[600];

	snprintf(what, sizeof(what), "the JSON checker on %s", json);
	return child_output(argv, what);
}

/* `xfdr convert --output-format=trace_event ARGS... -o OUT TRACE`: must succeed silently. */
static void convert_ok(const char *trace, const char *out, const char *a1, const char *a2)
{
	child_xfdr_silent("convert", "--output-format=trace_event", "-o", out, trace, a1, a2, NULL);
}

/* Convert and check; returns the checker's lines. */
static char *convert_lines(const char *trace, const char *a1, const char *a2)
{
	const char *out = scratch_path("out.json");
	char *lines;

	convert_ok(trace, out, a1, a2);
	lines = check_json("lines", out, NULL);
	return lines;
}

/* The lines without the last one (OTHER, the summary), which *other gets (free both). */
static char *split_other(char *lines, char **other)
{
	char *p = strstr(lines, "OTHER ");

	assert_non_null(p);
	*other = strdup(p);
	assert_non_null(*other);
	*p = '\0';
	return lines;
}

/* The lines of events of thread (pid, tid), metadata included (free it). */
static char *thread_of(const char *lines, uint32_t pid, uint32_t tid)
{
	size_t cap = strlen(lines) + 1, n = 0, len;
	char *out = malloc(cap), key[32];
	const char *p = lines;

	assert_non_null(out);
	len = (size_t)snprintf(key, sizeof(key), " %" PRIu32 " %" PRIu32 " ", pid, tid);
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) + 1 : strlen(p);

		if (l > len && !strncmp(p + 1, key, len)) {
			memcpy(out + n, p, l);
			n += l;
		}
		p += l;
	}
	out[n] = '\0';
	return out;
}

/* ---- A hand-built trace: names, threads, arguments, times -------------------------------- */

/*
 * tb_timeline_trace() and its sidecar. ts = NS / 1000 us: 0.000, 1.000 (Entry_Args 2 and its
 * exit), 1.501 (custom), 2.000 (Entry 3 and its tail exit), 10000000.000 (Exit 1); thread 9 at
 * 0.500.
 */
static const char *hand_trace(void)
{
	static const char map[] = "xfdr-map\t1\n"
				  "thread\t1234\t7\tmain-thread\t0\t0\t0\t0\t0\t0\n"
				  "thread\t1240\t9\twork\"er\t0\t0\t0\t0\t0\t0\n"
				  "function\t1\tmain\t0x1\t-\t-\n"
				  "function\t2\tf\"q\\\x01\xff\xc3\xa9\t0x2\t-\t-\n"
				  "function\t3\ttail_callee\t0x3\t-\t-\n";
	const char *path = tb_timeline_trace("hand.xray");

	scratch_write_text("hand.xray.map", map);
	return path;
}

/*
 * Names from the .map (an id it does not name is "#ID"; quotes, backslashes, control bytes
 * and invalid UTF-8 escaped), threads by the kernel tids of their `thread` lines (the NewBuffer
 * id in args.xfdr_thread), Entry_Args arguments (2^60 is above 2^53, so a string), a tail exit,
 * a custom event, and ts from the cycle frequency. The sidecar's pid and program, where it has
 * them, are the process's.
 */
static void test_hand_built(void **state)
{
	static const char want[] =
	    "M 1 0 - \"process_name\" {\"name\":\"hand.xray\"}\n"
	    "M 1 1234 - \"thread_name\" {\"name\":\"main-thread\",\"xfdr_thread\":7}\n"
	    "B 1 1234 0.000 \"main\" {}\n"
	    "B 1 1234 1.000 \"f\\\"q\\\\\\u0001\\ufffd\\u00e9\" "
	    "{\"arg0\":5,\"arg1\":\"1152921504606846976\"}\n"
	    "E 1 1234 1.000 \"f\\\"q\\\\\\u0001\\ufffd\\u00e9\" "
	    "{\"arg0\":5,\"arg1\":\"1152921504606846976\"}\n"
	    "i 1 1234 1.501 \"custom event\" {\"hex\":\"6869\",\"size\":2,\"text\":\"hi\"}\n"
	    "B 1 1234 2.000 \"tail_callee\" {}\n"
	    "E 1 1234 2.000 \"tail_callee\" {}\n"
	    "i 1 1234 2.000 \"end: tail exit\" {\"function\":\"tail_callee\"}\n"
	    "E 1 1234 10000000.000 \"main\" {}\n"
	    "M 1 1240 - \"thread_name\" {\"name\":\"work\\\"er\",\"xfdr_thread\":9}\n"
	    "B 1 1240 0.500 \"#4\" {}\n"
	    "E 1 1240 0.500 \"#4\" {}\n";
	static const char want_no_map[] =
	    "M 1 0 - \"process_name\" {\"name\":\"hand.xray\"}\n"
	    "B 1 7 0.000 \"1\" {}\n"
	    "B 1 7 1.000 \"2\" {\"arg0\":5,\"arg1\":\"1152921504606846976\"}\n"
	    "E 1 7 1.000 \"2\" {\"arg0\":5,\"arg1\":\"1152921504606846976\"}\n";
	const char *path = hand_trace();
	char *lines, *other;

	(void)state;
	lines = split_other(convert_lines(path, NULL, NULL), &other);
	text_assert_equal(lines, want);
	text_assert_contains(other, "\"cycle_frequency\":2500000000");
	text_assert_contains(other, "\"tsc_base\":1000000000000000");
	text_assert_contains(other, "\"calls\":4,");
	text_assert_contains(other, "\"calls_without_entry\":0,");
	text_assert_contains(other, "\"calls_without_exit\":0,");
	free(lines);
	free(other);

	/* Without the sidecar, as llvm-xray without an instrumentation map: the bare ids. */
	lines = convert_lines(path, "--no-map", NULL);
	assert_memory_equal(lines, want_no_map, strlen(want_no_map));
	assert_null(strstr(lines, "thread_name"));
	free(lines);

	scratch_write_text("hand.xray.map", "xfdr-map\t1\n"
					    "pid\t4321\n"
					    "program\t/usr/bin/hand\n"
					    "thread\t1234\t7\tmain-thread\t0\t0\t0\t0\t0\t0\n");
	lines = convert_lines(path, NULL, NULL);
	text_assert_contains(lines, "M 4321 0 - \"process_name\" {\"name\":\"/usr/bin/hand\"}\n"
				    "M 4321 1234 - \"thread_name\" {\"name\":\"main-thread\","
				    "\"xfdr_thread\":7}\n"
				    "B 4321 1234 0.000 \"#1\" {}\n");
	text_assert_contains(lines, "B 4321 9 0.500 \"#4\" {}\n"); /* no thread line: its id */
	free(lines);
}

/* The raw text: one event per line, strings escaped (checked here without any parser). */
static void test_raw_text(void **state)
{
	const char *path = hand_trace(), *out = scratch_path("raw.json");
	struct child_result r;
	char *argv[] = {"cat", (char *)out, NULL};

	(void)state;
	convert_ok(path, out, NULL, NULL);
	child_capture(argv, &r);
	assert_int_equal(r.status, 0);
	assert_memory_equal(r.out, "{\"traceEvents\":[\n", 17);
	text_assert_contains(r.out,
			     "\n{\"name\":\"main\",\"cat\":\"function\",\"ph\":\"B\",\"pid\":1,"
			     "\"tid\":1234,\"ts\":0.000},\n");
	/* Control byte as \u0001, the invalid byte 0xff as U+FFFD, the valid UTF-8 é kept. */
	text_assert_contains(r.out, "{\"name\":\"f\\\"q\\\\\\u0001\\ufffd\xc3\xa9\",");
	text_assert_contains(r.out, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{");
	assert_int_equal(r.out[r.out_len - 1], '\n');
	child_result_free(&r);
}

/* ---- Unbalanced calls and --since --------------------------------------------------------- */

/* tb_unbalanced_trace(): 1 GHz, base 1000, so ts = (TSC - 1000) / 1000 us. */
static const char *unbalanced_trace(void)
{
	return tb_unbalanced_trace("unbalanced.xray");
}

/*
 * Exits without entry open at the thread's first timestamp, below everything (the later such
 * exit is the outer call); calls left open by an exit further down are closed at it
 * ("unwound"); calls never exited close at the thread's last event ("trace edge"); a TSC that
 * goes back is shown at the previous event's time.
 */
static void test_unbalanced(void **state)
{
	static const char want[] =
	    "M 1 0 - \"process_name\" {\"name\":\"unbalanced.xray\"}\n"
	    "B 1 1 0.000 \"7\" {\"xfdr_begin\":\"before trace\"}\n"
	    "B 1 1 0.000 \"5\" {\"xfdr_begin\":\"before trace\"}\n"
	    "E 1 1 0.000 \"5\" {\"xfdr_begin\":\"before trace\"}\n"
	    "B 1 1 1.000 \"6\" {}\n"
	    "E 1 1 2.000 \"6\" {}\n"
	    "i 1 1 2.000 \"end: unwound\" {\"function\":\"6\"}\n"
	    "E 1 1 2.000 \"7\" {\"xfdr_begin\":\"before trace\"}\n"
	    "B 1 1 3.000 \"8\" {}\n"
	    "i 1 1 4.000 \"custom event\" {\"hex\":\"7461696c\",\"size\":4,\"text\":\"tail\"}\n"
	    "E 1 1 4.000 \"8\" {}\n"
	    "i 1 1 4.000 \"end: trace edge\" {\"function\":\"8\"}\n"
	    "B 1 2 9.000 \"9\" {}\n"
	    "E 1 2 9.000 \"9\" {}\n";
	const char *path = unbalanced_trace();
	char *lines, *other;

	(void)state;
	lines = split_other(convert_lines(path, NULL, NULL), &other);
	text_assert_equal(lines, want);
	text_assert_contains(other, "\"calls\":5,");
	text_assert_contains(other, "\"calls_without_entry\":2,");
	text_assert_contains(other, "\"calls_without_exit\":1,");
	text_assert_contains(other, "\"calls_unwound\":1,");
	text_assert_contains(other, "\"tsc_backwards\":1,");
	free(lines);
	free(other);
}

/*
 * A context of depth calls naming 1 and 2, then an exit of 3 and one of 2: both reach the
 * unnamed calls first, so each closes one of them.
 */
static const char *deep_context_trace(const char *name, uint32_t depth)
{
	static const uint32_t ids[] = {1, 2};
	struct tb b;

	tb_init(&b, 256, 1000000000ull);
	tb_buffer(&b, 1, 1, 1000);
	tb_context(&b, depth, ids, 2, 1000);
	tb_fn(&b, EXIT, 3, 1000);
	tb_fn(&b, EXIT, 2, 1000);
	return tb_write(&b, name);
}

#define UNKNOWN_BEGIN                                                                              \
	"{\"reason\":\"deeper than the ids the stack context holds\","                             \
	"\"xfdr_begin\":\"stack context\"}\n"

/*
 * A stack context that counts many calls it does not name: up to 128 of them are one
 * "(unknown)" slice each; more are one slice standing for all (args.unnamed_calls), which ends
 * with the last of them. Before, a context of 2^24 unnamed calls (a few bytes of trace) wrote
 * 2^24 slices; the fuzzer's regression tests/fuzz/regressions/trace-event-unnamed-run has one.
 */
static void test_unnamed_run(void **state)
{
	static const char want[] =
	    "M 1 0 - \"process_name\" {\"name\":\"deep.xray\"}\n"
	    "B 1 1 0.000 \"1\" {\"xfdr_begin\":\"stack context\"}\n"
	    "B 1 1 0.000 \"2\" {\"xfdr_begin\":\"stack context\"}\n"
	    "B 1 1 0.000 \"(unknown)\" {\"reason\":\"deeper than the ids the stack context holds\","
	    "\"unnamed_calls\":16777216,\"xfdr_begin\":\"stack context\"}\n"
	    "i 1 1 0.000 \"stack context\" {\"depth\":16777218,\"ids_known\":2,"
	    "\"open_calls\":\"rebuilt from the context\",\"stack\":[\"1\",\"2\"]}\n"
	    "E 1 1 2.000 \"(unknown)\" {\"reason\":\"deeper than the ids the stack context holds\","
	    "\"unnamed_calls\":16777216,\"xfdr_begin\":\"stack context\"}\n"
	    "i 1 1 2.000 \"end: trace edge\" {\"function\":\"(unknown)\"}\n"
	    "E 1 1 2.000 \"2\" {\"xfdr_begin\":\"stack context\"}\n"
	    "i 1 1 2.000 \"end: trace edge\" {\"function\":\"2\"}\n"
	    "E 1 1 2.000 \"1\" {\"xfdr_begin\":\"stack context\"}\n"
	    "i 1 1 2.000 \"end: trace edge\" {\"function\":\"1\"}\n";
	char *lines, *other;

	(void)state;
	lines = split_other(
	    convert_lines(deep_context_trace("deep.xray", 2 + CALLSTACK_UNNAMED_MAX), NULL, NULL),
	    &other);
	text_assert_equal(lines, want);
	free(lines);
	free(other);

	/* 128 unnamed calls: a slice each, the exits closing the innermost two. */
	lines = convert_lines(deep_context_trace("d128.xray", 2 + 128), NULL, NULL);
	assert_int_equal(text_count(lines, "B 1 1 0.000 \"(unknown)\""), 128);
	assert_int_equal(text_count(lines, "E 1 1 1.000 \"(unknown)\" " UNKNOWN_BEGIN), 1);
	assert_int_equal(text_count(lines, "i 1 1 1.000 \"end: exit\" {\"exit_function\":\"3\","
					   "\"function\":\"(unknown)\"}"),
			 1);
	assert_int_equal(text_count(lines, "E 1 1 2.000 \"(unknown)\" " UNKNOWN_BEGIN), 127);
	assert_int_equal(text_count(lines, "i 1 1 2.000 \"end: exit\" {\"exit_function\":\"2\","
					   "\"function\":\"(unknown)\"}"),
			 1);
	assert_int_equal(
	    text_count(lines, "i 1 1 2.000 \"end: trace edge\" {\"function\":\"(unknown)\"}"), 126);
	assert_int_equal(text_count(lines, "unnamed_calls"), 0);
	free(lines);

	/* 129: one slice. */
	lines = convert_lines(deep_context_trace("d129.xray", 2 + 129), NULL, NULL);
	assert_int_equal(text_count(lines, "B 1 1 0.000 \"(unknown)\""), 1);
	assert_int_equal(text_count(lines, "\"unnamed_calls\":129"), 2); /* its B and its E */
	assert_int_equal(
	    text_count(lines, "i 1 1 2.000 \"end: trace edge\" {\"function\":\"(unknown)\"}"), 1);
	assert_int_equal(text_count(lines, "E 1 1 2.000 \"(unknown)\""), 1);
	free(lines);
}

/*
 * --since: a thread's output starts at its first event at or after the TSC; the calls open by
 * then begin there; everything after it on the thread is kept (the exit of 9 at 9000 follows
 * the entry at 10000), so every B keeps its E. Times keep the base of the whole trace.
 */
static void test_since(void **state)
{
	/* 2500: the window opens at Exit 7 (3000); 7 (entered before the trace) and 6 are open. */
	static const char want_2500[] =
	    "M 1 0 - \"process_name\" {\"name\":\"unbalanced.xray\"}\n"
	    "B 1 1 2.000 \"7\" {\"xfdr_begin\":\"before trace\"}\n"
	    "B 1 1 2.000 \"6\" {\"xfdr_begin\":\"before window\"}\n"
	    "E 1 1 2.000 \"6\" {\"xfdr_begin\":\"before window\"}\n"
	    "i 1 1 2.000 \"end: unwound\" {\"function\":\"6\"}\n"
	    "E 1 1 2.000 \"7\" {\"xfdr_begin\":\"before trace\"}\n"
	    "B 1 1 3.000 \"8\" {}\n"
	    "i 1 1 4.000 \"custom event\" {\"hex\":\"7461696c\",\"size\":4,\"text\":\"tail\"}\n"
	    "E 1 1 4.000 \"8\" {}\n"
	    "i 1 1 4.000 \"end: trace edge\" {\"function\":\"8\"}\n"
	    "B 1 2 9.000 \"9\" {}\n"
	    "E 1 2 9.000 \"9\" {}\n";
	/* 3500: nothing is open at Entry 8. */
	static const char want_3500[] =
	    "M 1 0 - \"process_name\" {\"name\":\"unbalanced.xray\"}\n"
	    "B 1 1 3.000 \"8\" {}\n"
	    "i 1 1 4.000 \"custom event\" {\"hex\":\"7461696c\",\"size\":4,\"text\":\"tail\"}\n"
	    "E 1 1 4.000 \"8\" {}\n"
	    "i 1 1 4.000 \"end: trace edge\" {\"function\":\"8\"}\n"
	    "B 1 2 9.000 \"9\" {}\n"
	    "E 1 2 9.000 \"9\" {}\n";
	/* 9500: thread 1 has no event left and is left out; thread 2's window opens at 10000. */
	static const char want_9500[] = "M 1 0 - \"process_name\" {\"name\":\"unbalanced.xray\"}\n"
					"B 1 2 9.000 \"9\" {}\n"
					"E 1 2 9.000 \"9\" {}\n";
	const char *path = unbalanced_trace();
	char *lines, *other;

	(void)state;
	lines = split_other(convert_lines(path, "--since=2500", NULL), &other);
	text_assert_equal(lines, want_2500);
	text_assert_contains(other, "\"tsc_base\":1000}");
	text_assert_contains(other, "\"since_tsc\":2500,");
	text_assert_contains(other, "\"calls_open_before_window\":1,");
	free(lines);
	free(other);

	lines = split_other(convert_lines(path, "--since=3500", NULL), &other);
	text_assert_equal(lines, want_3500);
	free(lines);
	free(other);

	lines = split_other(convert_lines(path, "--since=9500", NULL), &other);
	text_assert_equal(lines, want_9500);
	free(lines);
	free(other);

	/* After every event: an empty list, still valid. */
	lines = split_other(convert_lines(path, "--since=1000000", NULL), &other);
	text_assert_equal(lines, "");
	text_assert_contains(other, "\"calls\":0,");
	free(lines);
	free(other);
}

/* ---- Ring mode: buffers that begin with a stack context -------------------------------- */

/*
 * 1 GHz, base 100.
 * Thread 3: buffer @100: XFDRSTAK [10 11] @100, Exit 11 @110, Entry 12 @120, Exit 12 @130;
 *           buffer @200: XFDRSTAK [10] @200 (agrees with what is open), Exit 10 @210.
 * Thread 4: buffer @300: XFDRSTAK depth 3, ids [20] (two calls unnamed) @300, Exit 21 @310,
 *           Exit 22 @320, Exit 20 @330.
 * Thread 5: buffer @400: Entry 30 @400, Entry 31 @410 (the buffers with its exit are gone);
 *           buffer @500: XFDRSTAK [30 32] @500 (disagrees from depth 1), Exit 32 @510,
 *           Exit 30 @520.
 */
static const char *ring_trace(void)
{
	static const uint32_t ids_3a[] = {10, 11}, ids_3b[] = {10}, ids_4[] = {20},
			      ids_5[] = {30, 32};
	static const char map[] = "function\t10\touter\n"
				  "function\t11\tinner\n"
				  "function\t12\tleaf\n"
				  "function\t20\tdeep\n"
				  "function\t30\ta\n"
				  "function\t31\tb\n"
				  "function\t32\tc\n";
	const char *path;
	struct tb b;

	tb_init(&b, 256, 1000000000ull);
	tb_buffer(&b, 3, 1, 100);
	tb_context(&b, 2, ids_3a, 2, 100);
	tb_fn(&b, EXIT, 11, 10);
	tb_fn(&b, ENTER, 12, 10);
	tb_fn(&b, EXIT, 12, 10);
	tb_buffer(&b, 3, 2, 200);
	tb_context(&b, 1, ids_3b, 1, 200);
	tb_fn(&b, EXIT, 10, 10);
	tb_buffer(&b, 4, 3, 300);
	tb_context(&b, 3, ids_4, 1, 300);
	tb_fn(&b, EXIT, 21, 10);
	tb_fn(&b, EXIT, 22, 10);
	tb_fn(&b, EXIT, 20, 10);
	tb_buffer(&b, 5, 4, 400);
	tb_fn(&b, ENTER, 30, 0);
	tb_fn(&b, ENTER, 31, 10);
	tb_buffer(&b, 5, 5, 500);
	tb_context(&b, 2, ids_5, 2, 500);
	tb_fn(&b, EXIT, 32, 10);
	tb_fn(&b, EXIT, 30, 10);
	path = tb_write(&b, "ring.xray");
	scratch_write_text("ring.xray.map", map);
	return path;
}

/*
 * A context on a thread with nothing open opens its calls at its time; one that agrees changes
 * nothing; calls it counts but does not name are "(unknown)" until an exit closes them; one
 * that disagrees closes the open calls above the part that agrees and opens its own.
 */
static void test_ring_contexts(void **state)
{
	static const char want[] =
	    "M 1 0 - \"process_name\" {\"name\":\"ring.xray\"}\n"
	    "B 1 3 0.000 \"outer\" {\"xfdr_begin\":\"stack context\"}\n"
	    "B 1 3 0.000 \"inner\" {\"xfdr_begin\":\"stack context\"}\n"
	    "i 1 3 0.000 \"stack context\" {\"depth\":2,\"ids_known\":2,"
	    "\"open_calls\":\"rebuilt from the context\",\"stack\":[\"outer\",\"inner\"]}\n"
	    "E 1 3 0.010 \"inner\" {\"xfdr_begin\":\"stack context\"}\n"
	    "B 1 3 0.020 \"leaf\" {}\n"
	    "E 1 3 0.030 \"leaf\" {}\n"
	    "i 1 3 0.100 \"stack context\" {\"depth\":1,\"ids_known\":1,"
	    "\"open_calls\":\"agree with the context\",\"stack\":[\"outer\"]}\n"
	    "E 1 3 0.110 \"outer\" {\"xfdr_begin\":\"stack context\"}\n"
	    "B 1 4 0.200 \"deep\" {\"xfdr_begin\":\"stack context\"}\n"
	    "B 1 4 0.200 \"(unknown)\" " UNKNOWN_BEGIN "B 1 4 0.200 \"(unknown)\" " UNKNOWN_BEGIN
	    "i 1 4 0.200 \"stack context\" {\"depth\":3,\"ids_known\":1,"
	    "\"open_calls\":\"rebuilt from the context\",\"stack\":[\"deep\"]}\n"
	    "E 1 4 0.210 \"(unknown)\" " UNKNOWN_BEGIN
	    "i 1 4 0.210 \"end: exit\" {\"exit_function\":\"#21\",\"function\":\"(unknown)\"}\n"
	    "E 1 4 0.220 \"(unknown)\" " UNKNOWN_BEGIN
	    "i 1 4 0.220 \"end: exit\" {\"exit_function\":\"#22\",\"function\":\"(unknown)\"}\n"
	    "E 1 4 0.230 \"deep\" {\"xfdr_begin\":\"stack context\"}\n"
	    "B 1 5 0.300 \"a\" {}\n"
	    "B 1 5 0.310 \"b\" {}\n"
	    "E 1 5 0.400 \"b\" {}\n"
	    "i 1 5 0.400 \"end: stack context\" {\"function\":\"b\"}\n"
	    "B 1 5 0.400 \"c\" {\"xfdr_begin\":\"stack context\"}\n"
	    "i 1 5 0.400 \"stack context\" {\"depth\":2,\"ids_known\":2,"
	    "\"open_calls\":\"rebuilt from the context\",\"stack\":[\"a\",\"c\"]}\n"
	    "E 1 5 0.410 \"c\" {\"xfdr_begin\":\"stack context\"}\n"
	    "E 1 5 0.420 \"a\" {}\n";
	/* From 205 on, thread 3 starts at Exit 10, with outer open (from the first context). */
	static const char want_since_3[] =
	    "B 1 3 0.110 \"outer\" {\"xfdr_begin\":\"before window\"}\n"
	    "E 1 3 0.110 \"outer\" {\"xfdr_begin\":\"before window\"}\n";
	const char *path = ring_trace();
	char *lines, *other, *t3;

	(void)state;
	lines = split_other(convert_lines(path, NULL, NULL), &other);
	text_assert_equal(lines, want);
	/* outer, inner; deep and its two unnamed callees; c. */
	text_assert_contains(other, "\"calls_from_stack_context\":6,");
	text_assert_contains(other, "\"stack_contexts_applied\":3,");
	free(lines);
	free(other);

	lines = convert_lines(path, "--since=205", NULL);
	t3 = thread_of(lines, 1, 3);
	text_assert_equal(t3, want_since_3);
	assert_non_null(strstr(lines, "B 1 4 0.200 \"deep\""));
	assert_non_null(strstr(lines, "E 1 5 0.420 \"a\" {}\n"));
	free(t3);
	free(lines);
}

/* ---- In speedscope ------------------------------------------------------------------------ */

/*
 * speedscope's own importer (in headless Chromium) places every slice of the hand-built traces:
 * it matches each "E" to the open "B" by name and JSON of the args, and warns for each that
 * differs, each it cannot place and each still open at the end. Tail exits, unwinds, trace
 * edges, calls begun before the trace and by stack contexts, unnamed calls ended by exits and
 * by the edge, arguments.
 */
static const char *d130_trace(void)
{
	return deep_context_trace("d130.xray", 2 + 128);
}

static void test_speedscope_imports_cleanly(void **state)
{
	/* Each path is built when it is used: scratch_path() keeps only the last few. */
	const char *(*const build[])(void) = {hand_trace, ring_trace, d130_trace};
	/* The first thread of each, its name in speedscope's toolbar. */
	const char *first[] = {"hand.xray (pid 1), main-thread (tid 1234)",
			       "ring.xray (pid 1, tid 3)", "d130.xray (pid 1, tid 1)"};
	struct speedscope_view v;
	size_t i;

	(void)state;
	if (getenv("XFDR_SANITIZED") && !strcmp(getenv("XFDR_SANITIZED"), "1"))
		skip(); /* Chromium under the sanitizers' environment: not what is tested here */
	for (i = 0; i < sizeof(build) / sizeof(build[0]); i++) {
		char out[32];

		snprintf(out, sizeof(out), "speedscope-%zu.json", i);
		convert_ok(build[i](), scratch_path(out), NULL, NULL);
		speedscope_open(scratch_path(out), &v);
		if (speedscope_count(&v, "Importing as Trace Event Format profile") != 1 ||
		    speedscope_count(&v, "Tried to end") || speedscope_count(&v, "still open") ||
		    speedscope_count(&v, "stack was empty"))
			fail_msg("speedscope on %s said:\n%s", out, v.console);
		text_assert_contains(v.page, first[i]);
		speedscope_view_free(&v);
	}
}

/* ---- Custom events ---------------------------------------------------------------------- */

/*
 * 1 GHz, base 1000, thread 1, one buffer @1000: XFDRDROP @1000, XFDRCRSH @1001 (three frames,
 * the sidecar names frame 0 and gives frame 1 a module only), an arbitrary payload @1002, one
 * of 300 bytes @1003, an XFDRCRSH of layout version 2 @1004, an XFDRDROP of version 1 @1005,
 * an empty one @1006, an XFDRSTAK of version 2 @1007, Entry 1 @1008, Exit 1 @1009.
 */
static const char *custom_trace(void)
{
	static const char map[] = "crash\t11\tSIGSEGV\t1\t0x10\t777\n"
				  "frame\t0\t0x1000\tcrash_c\t/bin/p\t0x100\n"
				  "frame\t1\t0x2000\t<unknown>\t/lib/x.so\t-\n"
				  "function\t1\tmain\n";
	static const uint8_t odd[] = {'a',  '"',  '\\', '\n', 0x01, 0x7f, 0xff, 0xc3, 0xa9, 0xed,
				      0xa0, 0x80, 0xf0, 0x9f, 0x98, 0x80, 0,	0,    0};
	static const uint64_t pcs[] = {0x1000, 0x2000, 0x3000};
	const struct wr_drop_totals totals = {1, 2, 3, 4, 5, 6};
	const struct wr_drop_entry entry = {777, 1, 7, 8, 9, 10};
	const struct wr_crash_info crash = {11, 1, 777, 0x10, XFDR_CRASH_TRUNCATED, 3, pcs};
	uint8_t drop[XFDR_DROP_FIXED_BYTES + XFDR_DROP_ENTRY_BYTES],
	    crsh[XFDR_CRASH_PAYLOAD_BYTES(3)];
	uint8_t stak[XFDR_STACK_PAYLOAD_BYTES(1)], big[300];
	const uint32_t one = 1;
	const char *path;
	struct tb b;

	assert_int_equal(wr_drop_head(drop, &totals, 1), XFDR_DROP_FIXED_BYTES);
	wr_drop_entry(drop + XFDR_DROP_FIXED_BYTES, &entry);
	assert_int_equal(wr_crash(crsh, &crash), sizeof(crsh));
	memset(big, 'x', sizeof(big));
	tb_init(&b, 1024, 1000000000ull);
	tb_buffer(&b, 1, 1, 1000);
	tb_custom(&b, drop, sizeof(drop), 1000);
	tb_custom(&b, crsh, sizeof(crsh), 1001);
	tb_custom(&b, odd, sizeof(odd), 1002);
	tb_custom(&b, big, sizeof(big), 1003);
	crsh[XFDR_CRASH_VERSION_OFF] = 2;
	tb_custom(&b, crsh, sizeof(crsh), 1004);
	drop[XFDR_DROP_VERSION_OFF] = 1;
	tb_custom(&b, drop, sizeof(drop), 1005);
	tb_custom(&b, "", 0, 1006);
	wr_stack_context(stak, 1, &one, 1);
	stak[XFDR_STACK_VERSION_OFF] = 2;
	tb_custom(&b, stak, sizeof(stak), 1007);
	tb_fn(&b, ENTER, 1, 8);
	tb_fn(&b, EXIT, 1, 1);
	path = tb_write(&b, "custom.xray");
	scratch_write_text("custom.xray.map", map);
	return path;
}

/* xfdr's own payloads decoded, any other shown bounded and escaped, bad ones with the reason. */
static void test_custom_events(void **state)
{
	static const char want_head[] =
	    "M 1 0 - \"process_name\" {\"name\":\"custom.xray\"}\n"
	    "i 1 1 0.000 \"xfdr drops\" {\"no_buffer\":1,\"no_thread_slot\":4,\"overwritten\":6,"
	    "\"reentrant\":2,\"threads\":[{\"no_buffer\":7,\"overwritten\":10,\"reentrant\":8,"
	    "\"thread_id\":1,\"tid\":777,\"too_large\":9}],\"threads_omitted\":5,\"too_large\":3}\n"
	    "i 1 1 0.001 \"crash SIGSEGV\" {\"backtrace\":[\"#0 0x1000 crash_c (/bin/p+0x100)\","
	    "\"#1 0x2000 (/lib/x.so)\",\"#2 0x3000\"],\"code\":1,\"fault_addr\":\"0x10\","
	    "\"frame_count\":3,\"signal\":11,\"signal_name\":\"SIGSEGV\",\"tid\":777,"
	    "\"truncated\":\"yes (the stack had more frames)\"}\n"
	    "i 1 1 0.002 \"custom event\" {\"hex\":\"61225c0a017fffc3a9eda080f09f9880000000\","
	    "\"size\":19,\"text\":\"a\\\"\\\\\\n\\u0001\\u007f\\ufffd\\u00e9\\ufffd\\ufffd\\ufffd"
	    "\\ud83d\\ude00\"}\n";
	static const char want_tail[] =
	    "i 1 1 0.006 \"custom event\" {\"hex\":\"\",\"size\":0,\"text\":\"\"}\n"
	    "i 1 1 0.007 \"stack context (invalid)\" {\"error\":\"payload offset 8: expected "
	    "XFDRSTAK layout version 1, found 2\",\"hex\":\"58464452535441"
	    "4b020000000100000001000000000000000100000000000000\",\"size\":32,"
	    "\"text\":\"XFDRSTAK\\u0002\\u0000\\u0000\\u0000\\u0001\\u0000\\u0000\\u0000\\u0001"
	    "\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0001\"}\n"
	    "B 1 1 0.008 \"main\" {}\n"
	    "E 1 1 0.009 \"main\" {}\n";
	char want_big[1024], *p = want_big, *lines, *other, *at;
	int i;

	(void)state;
	/* 300 bytes of 'x': the first 256 as text, the first 64 in hex. */
	p += sprintf(p, "i 1 1 0.003 \"custom event\" {\"hex\":\"");
	for (i = 0; i < 64; i++)
		p += sprintf(p, "78");
	p += sprintf(p, "\",\"size\":300,\"text\":\"");
	for (i = 0; i < 256; i++)
		*p++ = 'x';
	sprintf(p, "\",\"truncated\":\"yes\"}\n");

	lines = split_other(convert_lines(custom_trace(), NULL, NULL), &other);
	assert_memory_equal(lines, want_head, strlen(want_head));
	at = lines + strlen(want_head);
	assert_memory_equal(at, want_big, strlen(want_big));
	at += strlen(want_big);
	assert_memory_equal(
	    at,
	    "i 1 1 0.004 \"crash (invalid)\" {\"error\":\"payload offset 8: "
	    "expected XFDRCRSH layout version 1, found 2\",\"hex\":\"5846445243525348",
	    strlen("i 1 1 0.004 \"crash (invalid)\" {\"error\":\"payload offset 8: "
		   "expected XFDRCRSH layout version 1, found 2\",\"hex\":\""
		   "5846445243525348"));
	at = strchr(at, '\n') + 1;
	assert_memory_equal(
	    at,
	    "i 1 1 0.005 \"xfdr drops (invalid)\" {\"error\":\"payload offset 8: "
	    "expected XFDRDROP layout version 2, found 1\",\"hex\":\"58464452",
	    strlen("i 1 1 0.005 \"xfdr drops (invalid)\" {\"error\":\"payload offset 8: "
		   "expected XFDRDROP layout version 2, found 1\",\"hex\":\"58464452"));
	at = strchr(at, '\n') + 1;
	text_assert_equal(at, want_tail);
	text_assert_contains(other, "\"stack_contexts_invalid\":1,");
	free(lines);
	free(other);
}

/* ---- Against llvm-xray ------------------------------------------------------------------- */

/* llvm-xray's own trace_event output of trace into out. */
static void llvm_trace_event(const char *trace, const char *out)
{
	char *argv[] = {(char *)child_llvm_xray(),
			"convert",
			"--output-format=trace_event",
			"-o",
			(char *)out,
			(char *)trace,
			NULL};
	struct child_result r;

	child_capture(argv, &r);
	if (r.status != 0)
		fail_msg("llvm-xray convert %s: status %d\n%s", trace, r.status, r.err);
	child_result_free(&r);
}

/* The same B/E events per thread, in the same order, as llvm-xray (times up to rounding). */
static void expect_same_as_llvm(const char *trace, const char *want)
{
	const char *ours = scratch_path("ours.json"), *theirs = scratch_path("llvm.json");
	char *same;

	convert_ok(trace, ours, "--no-map", NULL);
	llvm_trace_event(trace, theirs);
	same = check_json("same", ours, theirs);
	text_assert_equal(same, want);
	free(same);
}

/*
 * 2 GHz. Thread 1: 1 { 2 {} 3 { 4 {} } } in one buffer, then 1 {} in a later one; thread 2:
 * 5 {} 6 {} with a long call. 10 + 4 events.
 */
static void test_same_calls_as_llvm(void **state)
{
	struct tb b;
	const char *path;

	(void)state;
	tb_init(&b, 256, 2000000000ull);
	tb_buffer(&b, 1, 1, 5000);
	tb_fn(&b, ENTER, 1, 0);
	tb_fn(&b, ENTER, 2, 10);
	tb_fn(&b, EXIT, 2, 20);
	tb_fn(&b, ENTER, 3, 30);
	tb_fn(&b, ENTER, 4, 40);
	tb_fn(&b, EXIT, 4, 50);
	tb_fn(&b, EXIT, 3, 60);
	tb_fn(&b, EXIT, 1, 70);
	tb_buffer(&b, 2, 2, 6000);
	tb_fn(&b, ENTER, 5, 0);
	tb_fn(&b, EXIT, 5, 100);
	tb_fn(&b, ENTER, 6, 7);
	tb_fn(&b, EXIT, 6, 100000);
	tb_buffer(&b, 1, 3, 7000);
	tb_fn(&b, ENTER, 1, 0);
	tb_fn(&b, EXIT, 1, 5);
	path = tb_write(&b, "llvm.xray");
	expect_same_as_llvm(path, "SAME 2 14\n");
}

/* ---- Typed events and Pid records (compiler-rt's version 5) ---------------------------- */

/* Little-endian fields into p; returns the bytes written. */
static size_t put_le(uint8_t *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return (size_t)bytes;
}

/* A 16-byte metadata record of kind at p: the kind byte, then the fields. */
static uint8_t *md(uint8_t *p, unsigned kind)
{
	memset(p, 0, XFDR_MD_RECORD_BYTES);
	p[0] = (uint8_t)(kind << 1 | 1u);
	return p + 1;
}

/*
 * Version 5 at 2 GHz, written by hand from the spec's layouts: one buffer (BufferExtents,
 * NewBuffer thread 70000, WallClockTime, Pid 4242, NewCPUId cpu 2 tsc 1000), Entry 1 +10
 * (1010), Exit 1 +10 (1020), TypedEventMarker "tp" type 77 delta +3 (1023). Base 1010: the exit
 * at 10 ticks = 5 ns, the typed event at 13 ticks = 6.5 ns, rounded to 7.
 */
static void test_typed_event_v5(void **state)
{
	static const char want[] =
	    "M 4242 0 - \"process_name\" {\"name\":\"v5.xray\"}\n"
	    "B 4242 70000 0.000 \"1\" {}\n"
	    "E 4242 70000 0.005 \"1\" {}\n"
	    "i 4242 70000 0.007 \"typed event\" {\"hex\":\"7470\",\"size\":2,\"text\":\"tp\","
	    "\"type\":77}\n";
	uint8_t f[256], *p;
	size_t n = 0, extents;
	const char *path;
	char *lines, *other;

	(void)state;
	n += put_le(f + n, 5, 2);
	n += put_le(f + n, 1, 2);
	n += put_le(f + n, 3, 4);
	n += put_le(f + n, 2000000000ull, 8);
	n += put_le(f + n, 16384, 8);
	n += put_le(f + n, 0, 8);
	extents = n;
	md(f + n, XFDR_MD_BUFFER_EXTENTS);
	n += 16;
	p = md(f + n, XFDR_MD_NEW_BUFFER);
	put_le(p, 70000, 4);
	n += 16;
	p = md(f + n, XFDR_MD_WALL_CLOCK_TIME);
	put_le(p + put_le(p, 5, 8), 7, 4);
	n += 16;
	p = md(f + n, XFDR_MD_PID);
	put_le(p, 4242, 4);
	n += 16;
	p = md(f + n, XFDR_MD_NEW_CPU_ID);
	put_le(p + put_le(p, 2, 2), 1000, 8);
	n += 16;
	n += wr_function(f + n, ENTER, 1, 10);
	n += wr_function(f + n, EXIT, 1, 10);
	p = md(f + n, XFDR_MD_TYPED_EVENT);
	p += put_le(p, 2, 4);
	p += put_le(p, 3, 4);
	put_le(p, 77, 2);
	n += 16;
	memcpy(f + n, "tp", 2);
	n += 2;
	put_le(f + extents + 1, n - extents - 16, 8);
	path = scratch_write("v5.xray", f, n);

	lines = split_other(convert_lines(path, NULL, NULL), &other);
	text_assert_equal(lines, want);
	free(lines);
	free(other);
	expect_same_as_llvm(path, "SAME 1 2\n");
}

/* ---- A real program through the runtime ------------------------------------------------- */

/*
 * Three threads with names: main calls work(2) (two leaf() calls); each worker work(3). With an
 * argument n, main then recurses rec(40) -> ... -> rec(0) -> work(n): 41 rec frames under
 * main, and n leaf() calls at the bottom, to fill a small ring many times over.
 */
static const char program[] = "#include <pthread.h>\n"
			      "#include <stdlib.h>\n"
			      "static volatile int sink;\n"
			      "static void leaf(int x) { sink = x; }\n"
			      "static void work(int n) { for (int i = 0; i < n; i++) leaf(i); }\n"
			      "static int rec(int d, int n)\n"
			      "{\n"
			      "	if (d > 0)\n"
			      "		return rec(d - 1, n) + 1;\n"
			      "	work(n);\n"
			      "	return 0;\n"
			      "}\n"
			      "static void *worker(void *name)\n"
			      "{\n"
			      "	pthread_setname_np(pthread_self(), name);\n"
			      "	work(3);\n"
			      "	return NULL;\n"
			      "}\n"
			      "int main(int argc, char **argv)\n"
			      "{\n"
			      "	pthread_t a, b;\n"
			      "	int n = argc > 1 ? atoi(argv[1]) : 0;\n"
			      "	pthread_setname_np(pthread_self(), \"te-main\");\n"
			      "	pthread_create(&a, NULL, worker, \"te-worker-a\");\n"
			      "	pthread_join(a, NULL);\n"
			      "	pthread_create(&b, NULL, worker, \"te-worker-b\");\n"
			      "	pthread_join(b, NULL);\n"
			      "	work(2);\n"
			      "	if (n)\n"
			      "		rec(40, n);\n"
			      "	return 0;\n"
			      "}\n";

/* The pid of the process that recorded trace, from the file's name (xfdr-prog-PID-N.xray). */
static uint32_t pid_of(const char *trace)
{
	unsigned pid;

	assert_int_equal(sscanf(strrchr(trace, '/'), "/xfdr-prog-%u-", &pid), 1);
	return pid;
}

/* The tid of the thread_name line of process want_pid naming name in lines, or fail. */
static uint32_t tid_named(const char *lines, uint32_t want_pid, const char *name)
{
	char key[128];
	const char *p;
	unsigned pid, tid;

	snprintf(key, sizeof(key), " - \"thread_name\" {\"name\":\"%s\",\"xfdr_thread\":", name);
	p = text_line_of(lines, key);
	if (!p)
		fail_msg("no thread named %s in:\n%s", name, lines);
	assert_int_equal(sscanf(p, "M %u %u", &pid, &tid), 2);
	assert_int_equal(pid, want_pid);
	return tid;
}

/*
 * The line of program's text where each function's first instruction is: its opening brace
 * (gcc's line for the prologue), and the one line of leaf and work.
 */
static int line_of(const char *fn)
{
	static const struct {
		const char *fn;
		int line;
	} lines[] = {{"leaf", 4}, {"work", 5}, {"rec", 7}, {"worker", 14}, {"main", 20}};
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (!strcmp(lines[i].fn, fn))
			return lines[i].line;
	fail_msg("no line for %s", fn);
	return 0;
}

/* B and E of a thread: the function's calls (n each), balanced, with its source line. */
static void expect_calls(const char *lines, uint32_t pid, uint32_t tid, const char *fn, size_t n)
{
	char *th = thread_of(lines, pid, tid), b[96];

	snprintf(b, sizeof(b), " \"%s\" {\"src\":\"prog.c:%d\"}\n", fn, line_of(fn));
	if (text_count(th, b) != 2 * n)
		fail_msg("thread %u: want %zu calls of %s in:\n%s", tid, n, fn, th);
	free(th);
}

/*
 * A program recorded by the runtime: names from its sidecar (functions and threads), each
 * thread's calls, and the same calls as llvm-xray finds in the file.
 */
static void test_real_program(void **state)
{
	char prog[256], trace[512], *lines;
	uint32_t pid, tid;

	(void)state;
	preload_build(program, prog, sizeof(prog));
	preload_record(prog, "0", "plain", "", trace, sizeof(trace));
	lines = convert_lines(trace, NULL, NULL);
	/* The process and threads as the system knew them: the main thread's tid is the pid. */
	pid = pid_of(trace);
	tid = tid_named(lines, pid, "te-main");
	assert_int_equal(tid, pid);
	expect_calls(lines, pid, tid, "main", 1);
	expect_calls(lines, pid, tid, "work", 1);
	expect_calls(lines, pid, tid, "leaf", 2);
	tid = tid_named(lines, pid, "te-worker-a");
	assert_int_not_equal(tid, pid);
	expect_calls(lines, pid, tid, "worker", 1);
	expect_calls(lines, pid, tid, "leaf", 3);
	tid = tid_named(lines, pid, "te-worker-b");
	expect_calls(lines, pid, tid, "work", 1);
	expect_calls(lines, pid, tid, "leaf", 3);
	/* The drop counts, at the end of every file the runtime writes. */
	text_assert_contains(lines, "\"xfdr drops\" {\"no_buffer\":0,");
	text_assert_contains(lines, "\"calls_without_entry\":0,");
	text_assert_contains(lines, "\"calls_without_exit\":0,");
	free(lines);
	/* main 2 + work 2 + leaf 4; per worker: worker 2 + work 2 + leaf 6. */
	expect_same_as_llvm(trace, "SAME 3 28\n");
}

/*
 * Ring mode with four 1 KiB buffers: main's surviving buffers begin inside main -> rec x41 ->
 * work, each with an XFDRSTAK context. Those calls open at the first context's time and are
 * closed by their recorded exits: none is left without entry or exit.
 */
static void test_real_program_ring(void **state)
{
	char prog[256], trace[512], *lines, *th;
	uint32_t tid;

	(void)state;
	preload_build(program, prog, sizeof(prog));
	preload_record(prog, "20000", "ring", ":mode=ring:buffer_size=1024:buffer_max=4", trace,
		       sizeof(trace));
	lines = convert_lines(trace, NULL, NULL);
	tid = tid_named(lines, pid_of(trace), "te-main");
	th = thread_of(lines, pid_of(trace), tid);
	/* Each B and its E. */
	assert_int_equal(
	    text_count(th, "\"main\" {\"src\":\"prog.c:20\",\"xfdr_begin\":\"stack context\"}"), 2);
	assert_int_equal(
	    text_count(th, "\"rec\" {\"src\":\"prog.c:7\",\"xfdr_begin\":\"stack context\"}"), 82);
	assert_int_equal(
	    text_count(th, "\"work\" {\"src\":\"prog.c:5\",\"xfdr_begin\":\"stack context\"}"), 2);
	/* Each closed by its own exit. */
	assert_int_equal(text_count(th, "\"end: "), 0);
	assert_int_equal(text_count(th, "E 1"), text_count(th, "B 1"));
	text_assert_contains(lines, "\"calls_without_entry\":0,");
	text_assert_contains(lines, "\"calls_without_exit\":0,");
	free(th);
	free(lines);
}

/* ---- Output errors ------------------------------------------------------------------------- */

/* Many calls: an output of several MiB, more than the output buffer holds. */
static const char *big_trace(void)
{
	struct tb b;
	uint32_t i;

	tb_init(&b, 4096, 1000000000ull);
	for (i = 0; i < 40000; i++) {
		if (i % 200 == 0)
			tb_buffer(&b, 1, i / 200 + 1, 1000ull * i);
		tb_fn(&b, ENTER, 1 + i % 7, i % 200 ? 500 : 0);
		tb_fn(&b, EXIT, 1 + i % 7, 500);
	}
	return tb_write(&b, "big.xray");
}

static void test_write_error(void **state)
{
	const char *paths[] = {hand_trace(), big_trace()};
	struct child_result r;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		child_xfdr(&r, "convert", "--output-format=trace_event", "-o", "/dev/full",
			   paths[i], NULL);
		assert_int_equal(r.status, 1);
		text_assert_one_error_line(&r, "xfdr convert: /dev/full: write error: ");
		text_assert_contains(r.err, strerror(ENOSPC));
		child_result_free(&r);
	}
	/* The big one is whole and balanced when it can be written. */
	{
		char *lines = convert_lines(paths[1], NULL, NULL), *other;

		split_other(lines, &other);
		text_assert_contains(other, "\"calls\":40000,");
		text_assert_contains(other, "\"calls_without_entry\":0,");
		free(lines);
		free(other);
	}
}

/* ---- Random traces --------------------------------------------------------------------------- */

/* "S.mmm": microseconds of ns. */
static void us_text(char *out, size_t n, uint64_t ns)
{
	snprintf(out, n, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/*
 * The generator's threads (random entries, exits, arguments, custom events with any bytes,
 * TSCs that jump, wrap and go back) at 2 GHz: a tick is half a nanosecond, so an event at TSC
 * x (x raised to the thread's previous TSC when the clock went back) is at (d + 1) / 2 ns,
 * d = x - base, rounded half up. Every entry must be a "B" of its id (with its arguments) and
 * every custom event an "i", in the thread's order, at exactly that time.
 */
/* Is the line [at, eol) a "B" or an instant the pairing rules made, not an event's own? */
static int from_pairing(const char *at, const char *eol)
{
	size_t n = (size_t)(eol - at);

	return memmem(at, n, "\"xfdr_begin\"", 12) || (at[0] == 'i' && memmem(at, n, "\"end: ", 6));
}

static void check_random(uint64_t seed)
{
	struct tg_params p = {
	    .buffer_bytes = 512, .threads = 4, .max_events = 300, .custom_pct = 8};
	struct tg_trace tr;
	struct tg_file f;
	uint64_t s = seed, base = UINT64_MAX;
	char *lines, *other;
	size_t i, j, k;

	p.threads = 1 + (size_t)tg_below(&s, 4);
	tg_generate(&tr, &p, &s);
	tg_encode(&tr, &f, &s);
	tg_sort_threads(&tr);
	for (i = 0; i < tr.threads; i++)
		if (tr.th[i].ev[0].tsc < base)
			base = tr.th[i].ev[0].tsc;
	lines = convert_lines(scratch_write("random.xray", f.data, f.bytes), NULL, NULL);
	split_other(lines, &other);
	for (i = 0; i < tr.threads; i++) {
		const struct tg_thread *t = &tr.th[i];
		char *th = thread_of(lines, 1, t->tid), *at = th, *line, *eol = NULL;
		uint64_t last = t->ev[0].tsc;

		for (j = 0; j < t->n; j++) {
			const struct tg_event *e = &t->ev[j];
			char want[1024], ts[48];
			uint64_t x = e->tsc < last ? last : e->tsc, d = x - base;
			int len;

			last = x;
			if (!e->custom && e->action != ENTER && e->action != ARGS)
				continue;
			us_text(ts, sizeof(ts), (d >> 1) + (d & 1));
			if (e->custom) {
				len = snprintf(want, sizeof(want), "i 1 %u %s \"custom event\" {",
					       t->tid, ts);
			} else {
				len = snprintf(want, sizeof(want), "B 1 %u %s \"%u\" {", t->tid, ts,
					       e->fid);
				for (k = 0; k < e->arg_count; k++)
					len += snprintf(want + len, sizeof(want) - (size_t)len,
							e->args[k] > (1ull << 53)
							    ? "%s\"arg%zu\":\"%" PRIu64 "\""
							    : "%s\"arg%zu\":%" PRIu64,
							k ? "," : "", k, e->args[k]);
				len += snprintf(want + len, sizeof(want) - (size_t)len, "}\n");
			}
			/* The next line of that kind that does not come from the pairing rules. */
			for (line = NULL; !line && *at; at = eol + 1) {
				eol = strchr(at, '\n');
				assert_non_null(eol);
				if (!strncmp(at, e->custom ? "i 1 " : "B 1 ", 4) &&
				    !from_pairing(at, eol))
					line = at;
			}
			if (!line)
				fail_msg("seed %" PRIu64
					 ": thread %u: no line for event %zu, want %s",
					 seed, t->tid, j, want);
			if (strncmp(line, want, (size_t)len))
				fail_msg("seed %" PRIu64
					 ": thread %u event %zu:\nwant %s\ngot  %.*s",
					 seed, t->tid, j, want, (int)(eol - line), line);
		}
		/* Nothing else is an entry or a custom event. */
		for (; *at; at = eol + 1) {
			eol = strchr(at, '\n');
			if ((!strncmp(at, "i 1 ", 4) || !strncmp(at, "B 1 ", 4)) &&
			    !from_pairing(at, eol))
				fail_msg("seed %" PRIu64 ": thread %u: extra %.*s", seed, t->tid,
					 (int)(eol - at), at);
		}
		free(th);
	}
	free(lines);
	free(other);
	tg_free(&tr);
	free(f.data);
}

static void test_random(void **state)
{
	uint64_t seed = tg_seed("test_cli_trace_event"), s = seed;
	unsigned i;

	(void)state;
	for (i = 0; i < 12; i++)
		check_random(tg_next(&s));
}

/* ---- --split-size ----------------------------------------------------------------------- */

#define SPLIT_BYTES (64u << 10)
#define SPLIT_SLACK                                                                                \
	(4u << 10) /* of a shallow trace: a part passes the size by its last event,                \
		      the ends at the cut and its tail */
#define SPLIT_PARTS_MAX 128

/* The checker's "parts" mode on whole and the n files of its split. */
static char *check_parts(const char *whole, char **parts, size_t n)
{
	char *argv[SPLIT_PARTS_MAX + 6] = {"python3", "-c", (char *)checker, "parts",
					   (char *)whole};
	size_t i;

	for (i = 0; i < n; i++)
		argv[5 + i] = parts[i];
	return child_output(argv, "the JSON checker on the parts of a split");
}

/*
 * trace_path converted whole and with --split-size=64K (since: NULL or a --since option):
 * the parts are OUT.0001.json, ... in turn, each but the last of 64 KiB or more; each opens
 * alone (JSON whose every B has its E, its processes named); together they are the whole
 * timeline cut in time (the checker's stitch). shallow: the calls open at a cut are few, so a
 * part is 64 KiB and a little more; else (deep stacks) at least half of each part is its own,
 * so there are at most twice as many parts as the size alone gives. Returns how many parts.
 */
static size_t check_split(const char *trace_path, const char *since, int shallow)
{
	/* scratch_path()'s results last 7 calls */
	char *trace = strdup(trace_path), *whole = strdup(scratch_path("whole.json"));
	char *out = strdup(scratch_path("split.json"));
	char *parts[SPLIT_PARTS_MAX], *lines, want[64], *text;
	struct stat st;
	size_t n, i, len;
	unsigned cut;

	assert_non_null(trace);
	assert_non_null(whole);
	assert_non_null(out);
	for (n = 1; n <= SPLIT_PARTS_MAX + 1; n++) {
		snprintf(want, sizeof(want), "split.%04zu.json", n);
		unlink(scratch_path(want));
	}
	convert_ok(trace, whole, since, NULL);
	child_xfdr_silent("convert", "--output-format=trace_event", "--split-size=64K", "-o", out,
			  trace, since, NULL);
	assert_int_not_equal(stat(out, &st), 0); /* OUT itself is not made */
	for (n = 0; n <= SPLIT_PARTS_MAX; n++) {
		snprintf(want, sizeof(want), "split.%04zu.json", n + 1);
		if (stat(scratch_path(want), &st))
			break;
		assert_true(n < SPLIT_PARTS_MAX);
		parts[n] = strdup(scratch_path(want));
		assert_non_null(parts[n]);
		text = (char *)pl_read_file(parts[n], &len);
		assert_non_null(text);
		assert_non_null(strstr(text, "\"process_name\""));
		snprintf(want, sizeof(want), "\"part\":%zu,", n + 1);
		assert_non_null(strstr(text, want));
		free(text);
	}
	for (i = 0; i + 1 < n; i++) {
		assert_int_equal(stat(parts[i], &st), 0);
		assert_in_range((uint64_t)st.st_size, SPLIT_BYTES,
				shallow ? SPLIT_BYTES + SPLIT_SLACK : UINT64_MAX);
	}
	assert_int_equal(stat(whole, &st), 0);
	assert_in_range(n, 1, 2 * (uint64_t)st.st_size / SPLIT_BYTES + 2);
	lines = check_parts(whole, parts, n);
	snprintf(want, sizeof(want), "PARTS %zu CUT ", n);
	assert_int_equal(strncmp(lines, want, strlen(want)), 0);
	assert_int_equal(sscanf(lines + strlen(want), "%u", &cut), 1);
	assert_true(n < 2 || cut > 0);
	free(lines);
	for (i = 0; i < n; i++)
		free(parts[i]);
	free(trace);
	free(whole);
	free(out);
	return n;
}

/* tg_shallow_scratch(): about 10 parts of 64 KiB, every cut inside calls of every thread. */
static void test_split_shallow(void **state)
{
	char *path = strdup(tg_shallow_scratch("shallow.xray", 3, 1000));

	(void)state;
	assert_non_null(path);
	assert_in_range(check_split(path, NULL, 1), 8, 16);
	assert_in_range(check_split(path, "--since=20000", 1), 6, 14);
	free(path);
}

/*
 * Random traces of four threads (exits without entry, so many calls open from the start,
 * TSCs that go back, custom events): split, whole and from a window on.
 */
static void test_split_random(void **state)
{
	uint64_t seed = tg_seed("test_cli_trace_event split"), s = seed;
	unsigned runs, many = 0;

	(void)state;
	for (runs = 0; runs < 3; runs++) {
		struct tg_params p = {
		    .buffer_bytes = 2048, .threads = 4, .max_events = 3000, .custom_pct = 3};
		struct tg_trace tr;
		struct tg_file f;
		char since[48], *path;

		tg_generate(&tr, &p, &s);
		tg_encode(&tr, &f, &s);
		tg_sort_threads(&tr);
		path = strdup(scratch_write("split.xray", f.data, f.bytes));
		assert_non_null(path);
		many += check_split(path, NULL, 0) >= 3;
		/* from the middle of the first thread on */
		snprintf(since, sizeof(since), "--since=%" PRIu64, tr.th[0].ev[tr.th[0].n / 2].tsc);
		check_split(path, since, 0);
		free(path);
		tg_free(&tr);
		free(f.data);
	}
	assert_true(many >= 1); /* the traces are large enough to cut */
}

/*
 * --split-size wants a timeline, a file to name the parts after, a size that holds one, and
 * no --jobs.
 */
static void test_split_usage(void **state)
{
	const char *path = tb_timeline_trace("usage.xray");
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "convert", "--output-format=trace_event",
				    "--split-size=64K", path, NULL),
			 2);
	text_assert_contains(r.err, "'--split-size' writes files: give -o OUT");
	child_result_free(&r);
	assert_int_equal(
	    child_xfdr(&r, "convert", "--split-size=1M", "-o", scratch_path("u.yaml"), path, NULL),
	    2);
	text_assert_contains(r.err, "'--split-size' is an option of the timelines");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "perfetto", "--split-size=1M", "-j", "2",
				    "-o", scratch_path("u.perfetto"), path, NULL),
			 2);
	text_assert_contains(r.err, "'--jobs' and '--split-size' do not go together");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "--output-format=trace_event",
				    "--split-size=63K", "-o", scratch_path("u.json"), path, NULL),
			 2);
	text_assert_contains(r.err, "'--split-size' takes a size of at least 64K");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "--output-format=trace_event", "--split-size=2X",
				    "-o", scratch_path("u.json"), path, NULL),
			 2);
	text_assert_contains(r.err, "not '2X'");
	child_result_free(&r);
	/* A trace smaller than the size: one part, whole. */
	child_xfdr_silent("convert", "--output-format=trace_event", "--split-size=1G", "-o",
			  scratch_path("one.json"), path, NULL);
	assert_true(scratch_exists(scratch_path("one.0001.json")));
	assert_false(scratch_exists(scratch_path("one.0002.json")));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hand_built),
	    cmocka_unit_test(test_raw_text),
	    cmocka_unit_test(test_unbalanced),
	    cmocka_unit_test(test_since),
	    cmocka_unit_test(test_ring_contexts),
	    cmocka_unit_test(test_custom_events),
	    cmocka_unit_test(test_same_calls_as_llvm),
	    cmocka_unit_test(test_typed_event_v5),
	    cmocka_unit_test(test_real_program),
	    cmocka_unit_test(test_real_program_ring),
	    cmocka_unit_test(test_write_error),
	    cmocka_unit_test(test_random),
	    cmocka_unit_test(test_split_shallow),
	    cmocka_unit_test(test_split_random),
	    cmocka_unit_test(test_split_usage),
	    cmocka_unit_test(test_unnamed_run),
	    cmocka_unit_test(test_speedscope_imports_cleanly),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
