/*
 * tests/system/test_cli_perfetto.c - `xfdr convert --output-format=perfetto`
 * (command/perfetto.c): Perfetto's protobuf trace.
 *
 * Every output is read by tests/system/perfetto_check.py with Debian's python3 and its
 * python3-protobuf (both installed by `make deps`; without them the tests fail, they do not
 * skip): `protoc --decode` against tests/system/perfetto_subset.proto, which carries the field
 * numbers of Perfetto's published .proto files, protobuf's text parser over what protoc
 * printed, zlib for the compressed chunks. The checker refuses what Perfetto could not use
 * (see its header) and prints one line per track and event, which the tests compare with
 * lines worked out by hand from the traces they build (the TSCs and the cycle frequency are
 * chosen so that the nanoseconds are easy to check in one's head; the comments show the sums).
 * A recorded program's slices are compared with llvm-xray's own trace_event output.
 */
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

#include "tests/support/child.h"
#include "tests/support/preload_record.h"
#include "tests/support/perfetto_check.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "tests/support/trace_build.h"
#include "tests/support/trace_gen.h"
#include "tests/support/version_enc.h"
#include "writer/payload.h"

/* `xfdr convert --output-format=perfetto -o OUT TRACE ARGS...`: must succeed silently. */
static void convert_ok(const char *trace, const char *out, const char *a1, const char *a2)
{
	child_xfdr_silent("convert", "--output-format=perfetto", "-o", out, trace, a1, a2, NULL);
}

/* Convert (compressed unless a1 says otherwise) and check; returns the checker's lines. */
static char *convert_lines(const char *trace, const char *a1, const char *a2)
{
	const char *out = scratch_path("out.perfetto");

	convert_ok(trace, out, a1, a2);
	return perfetto_check("lines", out, NULL);
}

/* The lines without the last one (PACKETS ...), which *tail gets (free both). */
static char *split_tail(char *lines, char **tail)
{
	char *p = strstr(lines, "PACKETS ");

	assert_non_null(p);
	*tail = strdup(p);
	assert_non_null(*tail);
	*p = '\0';
	return lines;
}

/* ---- A hand-built trace: names, threads, arguments, times -------------------------------- */

/* tb_timeline_trace() with the sidecar's text map (NULL: none). */
static const char *hand_trace(const char *map)
{
	const char *path = tb_timeline_trace("hand.xray");

	if (map)
		scratch_write_text("hand.xray.map", map);
	else
		unlink(scratch_path("hand.xray.map"));
	return path;
}

static const char hand_map[] = "xfdr-map\t1\n"
			       "thread\t1234\t7\tmain-thread\t0\t0\t0\t0\t0\t0\n"
			       "thread\t1240\t9\twork\"er\t0\t0\t0\t0\t0\t0\n"
			       "function\t1\tmain\t0x1\t-\t-\n"
			       "function\t2\tf\"q\\\x01\xff\xc3\xa9\t0x2\t-\t-\n"
			       "function\t3\ttail_callee\t0x3\t-\t-\n";

/*
 * Names from the .map (an id it does not name is "#ID"; the invalid UTF-8 byte as U+FFFD),
 * threads as tracks with their kernel tids and names, Entry_Args arguments as annotations,
 * a tail exit, a custom event as an instant, nanoseconds from the cycle frequency. Without a
 * `pid` line in the sidecar, a version 1 file's process is 1, as in the JSON.
 */
static void test_hand_built(void **state)
{
	static const char want[] =
	    "P 1 \"hand.xray\"\n"
	    "T 1 1234 \"main-thread\"\n"
	    "B 1 1234 0 \"main\" {}\n"
	    "B 1 1234 1000 \"f\\\"q\\\\\\u0001\\ufffd\\u00e9\" "
	    "{\"arg0\":5,\"arg1\":1152921504606846976}\n"
	    "E 1 1234 1000 \"f\\\"q\\\\\\u0001\\ufffd\\u00e9\" {}\n"
	    "I 1 1234 1501 \"custom event\" {\"hex\":\"6869\",\"size\":2,\"text\":\"hi\"}\n"
	    "B 1 1234 2000 \"tail_callee\" {}\n"
	    "E 1 1234 2000 \"tail_callee\" {\"xfdr_end\":\"tail exit\"}\n"
	    "E 1 1234 10000000000 \"main\" {}\n"
	    "T 1 1240 \"work\\\"er\"\n"
	    "B 1 1240 500 \"#4\" {}\n"
	    "E 1 1240 500 \"#4\" {}\n";
	/* Without the sidecar: ids as names, thread ids as tids, no thread names. */
	static const char want_no_map[] =
	    "P 1 \"hand.xray\"\n"
	    "T 1 7 \"\"\n"
	    "B 1 7 0 \"1\" {}\n"
	    "B 1 7 1000 \"2\" {\"arg0\":5,\"arg1\":1152921504606846976}\n"
	    "E 1 7 1000 \"2\" {}\n";
	const char *path = hand_trace(hand_map);
	char *lines, *tail;

	(void)state;
	lines = split_tail(convert_lines(path, NULL, NULL), &tail);
	text_assert_equal(lines, want);
	/*
	 * 14 packets in four compressed chunks, two per thread (each thread's packets are chunks
	 * of their own: its head, then its body): the process's track, before its first thread's;
	 * per thread its first packet (track, defaults, annotation names) and its clock snapshot,
	 * then its 7 and 2 events.
	 */
	text_assert_equal(tail, "PACKETS 14 CHUNKS 4 PLAIN 0\n");
	free(lines);
	free(tail);

	lines = convert_lines(path, "--no-map", NULL);
	assert_memory_equal(lines, want_no_map, strlen(want_no_map));
	free(lines);
}

/* The sidecar's pid and program name the process, and its tracks' pid. */
static void test_process_from_map(void **state)
{
	static const char map[] = "xfdr-map\t1\n"
				  "pid\t4321\n"
				  "program\t/usr/bin/some prog\n"
				  "thread\t4322\t7\tmain-thread\t0\t0\t0\t0\t0\t0\n";
	const char *path = hand_trace(map);
	char *lines;

	(void)state;
	lines = convert_lines(path, NULL, NULL);
	text_assert_contains(lines, "P 4321 \"/usr/bin/some prog\"\nT 4321 4322 \"main-thread\"\n");
	text_assert_contains(lines, "B 4321 4322 0 \"#1\" {}\n");
	/* thread 9 has no `thread` line: its thread id is its tid */
	text_assert_contains(lines, "T 4321 9 \"\"\nB 4321 9 500 \"#4\" {}\n");
	assert_int_equal(text_count(lines, "P "), 1);
	free(lines);
}

/*
 * Thread id 0, where the runtime puts its process-wide drop counts, is no thread: its events
 * go on the process's track (Perfetto would take tid 0 for the idle process, which its viewers
 * hide). The sidecar's line for it is not a name (the reader skips thread id 0).
 */
static void test_thread_zero_is_the_process(void **state)
{
	static const char map[] = "xfdr-map\t1\n"
				  "pid\t4321\n"
				  "thread\t0\t0\tprocess\t0\t0\t0\t0\t0\t0\n";
	struct tb b;
	const char *path;
	char *lines;

	(void)state;
	tb_init(&b, 256, 1000000000ull);
	tb_buffer(&b, 0, 1, 1000);
	tb_custom(&b, "zero", 4, 1500);
	path = tb_write(&b, "zero.xray");
	scratch_write_text("zero.xray.map", map);
	lines = convert_lines(path, NULL, NULL);
	text_assert_equal(lines, "P 4321 \"zero.xray\"\n"
				 "I 4321 - 0 \"custom event\" "
				 "{\"hex\":\"7a65726f\",\"size\":4,\"text\":\"zero\"}\n"
				 "PACKETS 4 CHUNKS 2 PLAIN 0\n");
	free(lines);
}

/*
 * Without a sidecar, a version 3+ file's process is its buffers' Pid; a Pid of 0 becomes 1
 * (Perfetto takes pid 0 for the idle process, which its viewers hide). 2 GHz: 0.5 ns a tick.
 */
static void test_pid_from_buffers(void **state)
{
	struct enc e = {0};
	const char *path;
	size_t at;
	char *lines;

	(void)state;
	e_header(&e, 3, 0);
	at = e_buffer(&e, 5, 4242, 5, 7, 1, 1000);
	e_fn(&e, ENTER, 1, 0);
	e_fn(&e, EXIT, 1, 10);
	e_extents_end(&e, at);
	at = e_buffer(&e, 6, 0, 5, 8, 1, 2000);
	e_fn(&e, ENTER, 2, 0);
	e_fn(&e, EXIT, 2, 20);
	e_extents_end(&e, at);
	path = scratch_write("v3.xray", e.b, e.len);
	lines = convert_lines(path, NULL, NULL);
	text_assert_equal(lines, "P 1 \"v3.xray\"\n"
				 "T 1 6 \"\"\n"
				 "B 1 6 500 \"2\" {}\n"
				 "E 1 6 510 \"2\" {}\n"
				 "P 4242 \"v3.xray\"\n"
				 "T 4242 5 \"\"\n"
				 "B 4242 5 0 \"1\" {}\n"
				 "E 4242 5 5 \"1\" {}\n"
				 "PACKETS 10 CHUNKS 4 PLAIN 0\n");
	free(lines);
}

/* The same packets compressed (the default) as written plainly: only the chunks differ. */
static void test_compressed_same_as_plain(void **state)
{
	const char *path = hand_trace(hand_map);
	char *z, *plain, *zt, *pt;

	(void)state;
	z = split_tail(convert_lines(path, NULL, NULL), &zt);
	plain = split_tail(convert_lines(path, "--compress=none", NULL), &pt);
	text_assert_equal(plain, z);
	text_assert_equal(zt, "PACKETS 14 CHUNKS 4 PLAIN 0\n");
	text_assert_equal(pt, "PACKETS 14 CHUNKS 0 PLAIN 14\n");
	free(z);
	free(plain);
	free(zt);
	free(pt);
}

/* ---- Unbalanced calls and stack contexts ------------------------------------------------ */

/*
 * 1 GHz, base 1000: NS = TSC - 1000.
 * Thread 1, buffer at 1000: Exit 5 @1000 (no entry), Entry 6 @2000, Entry 8 @4000, then a
 * buffer at 6000 whose stack context says only 6 is open (8's exit was lost), Exit 6 @7000,
 * Entry 9 @8000 never exited.
 */
static void test_unbalanced(void **state)
{
	static const char want[] = "T 1 1 \"\"\n"
				   "B 1 1 0 \"5\" {\"xfdr_begin\":\"before trace\"}\n"
				   "E 1 1 0 \"5\" {}\n"
				   "B 1 1 1000 \"6\" {}\n"
				   "B 1 1 3000 \"8\" {}\n"
				   "E 1 1 5000 \"8\" {\"xfdr_end\":\"stack context\"}\n"
				   "I 1 1 5000 \"stack context\" "
				   "{\"depth\":1,\"ids_known\":1,\"open_calls\":\"rebuilt from the "
				   "context\",\"stack\":[\"6\"]}\n"
				   "E 1 1 6000 \"6\" {}\n"
				   "B 1 1 7000 \"9\" {}\n"
				   "E 1 1 7000 \"9\" {\"xfdr_end\":\"trace edge\"}\n";
	static const uint32_t six = 6;
	struct tb b;
	const char *path;
	char *lines, *th;

	(void)state;
	tb_init(&b, 256, 1000000000ull);
	tb_buffer(&b, 1, 1, 1000);
	tb_fn(&b, EXIT, 5, 0);
	tb_fn(&b, ENTER, 6, 1000);
	tb_fn(&b, ENTER, 8, 2000);
	tb_buffer(&b, 1, 2, 6000);
	tb_context(&b, 1, &six, 1, 6000);
	tb_fn(&b, EXIT, 6, 1000);
	tb_fn(&b, ENTER, 9, 1000);
	path = tb_write(&b, "unbalanced.xray");
	lines = convert_lines(path, "--no-map", NULL);
	th = strstr(lines, "T 1 1 ");
	assert_non_null(th);
	*strstr(th, "PACKETS") = '\0';
	text_assert_equal(th, want);
	free(lines);
}

/*
 * Calls entered before the trace, found only at their exits by the one walk Perfetto makes,
 * begin at the thread's first event in the thread's head, before its body: outermost first,
 * as trace_event (which walks twice) begins them. With --since, one that ended before the
 * window is left out, one still open when it opens begins there, below the calls open by
 * then. tb_unbalanced_trace(): 1 GHz, base 1000, so NS = TSC - 1000.
 */
static void test_before_trace(void **state)
{
	static const char want[] =
	    "T 1 1 \"\"\n"
	    "B 1 1 0 \"7\" {\"xfdr_begin\":\"before trace\"}\n"
	    "B 1 1 0 \"5\" {\"xfdr_begin\":\"before trace\"}\n"
	    "E 1 1 0 \"5\" {}\n"
	    "B 1 1 1000 \"6\" {}\n"
	    "E 1 1 2000 \"6\" {\"xfdr_end\":\"unwound\"}\n"
	    "E 1 1 2000 \"7\" {}\n"
	    "B 1 1 3000 \"8\" {}\n"
	    "I 1 1 4000 \"custom event\" {\"hex\":\"7461696c\",\"size\":4,\"text\":\"tail\"}\n"
	    "E 1 1 4000 \"8\" {\"xfdr_end\":\"trace edge\"}\n"
	    "T 1 2 \"\"\n"
	    "B 1 2 9000 \"9\" {}\n"
	    "E 1 2 9000 \"9\" {}\n";
	/* 2500: the window opens at Exit 7 (3000), 7 (entered before the trace) and 6 open. */
	static const char want_2500[] =
	    "T 1 1 \"\"\n"
	    "B 1 1 2000 \"7\" {\"xfdr_begin\":\"before trace\"}\n"
	    "B 1 1 2000 \"6\" {\"xfdr_begin\":\"before window\"}\n"
	    "E 1 1 2000 \"6\" {\"xfdr_end\":\"unwound\"}\n"
	    "E 1 1 2000 \"7\" {}\n"
	    "B 1 1 3000 \"8\" {}\n"
	    "I 1 1 4000 \"custom event\" {\"hex\":\"7461696c\",\"size\":4,\"text\":\"tail\"}\n"
	    "E 1 1 4000 \"8\" {\"xfdr_end\":\"trace edge\"}\n"
	    "T 1 2 \"\"\n"
	    "B 1 2 9000 \"9\" {}\n"
	    "E 1 2 9000 \"9\" {}\n";
	const char *path = tb_unbalanced_trace("unbalanced.xray");
	char *lines, *th;

	(void)state;
	lines = convert_lines(path, "--no-map", NULL);
	th = strstr(lines, "T 1 1 ");
	assert_non_null(th);
	*strstr(th, "PACKETS") = '\0';
	text_assert_equal(th, want);
	free(lines);

	lines = convert_lines(path, "--no-map", "--since=2500");
	th = strstr(lines, "T 1 1 ");
	assert_non_null(th);
	*strstr(th, "PACKETS") = '\0';
	text_assert_equal(th, want_2500);
	free(lines);

	/*
	 * --until=2500: 6 is open at 2500 and ends there; so does 7, entered before the trace,
	 * whose exit (3000) the walk finds only past the window: its end comes last. Thread 2
	 * has no event in the window and no call open across it: it is left out.
	 */
	lines = convert_lines(path, "--no-map", "--until=2500");
	th = strstr(lines, "T 1 1 ");
	assert_non_null(th);
	*strstr(th, "PACKETS") = '\0';
	text_assert_equal(th, "T 1 1 \"\"\n"
			      "B 1 1 0 \"7\" {\"xfdr_begin\":\"before trace\"}\n"
			      "B 1 1 0 \"5\" {\"xfdr_begin\":\"before trace\"}\n"
			      "E 1 1 0 \"5\" {}\n"
			      "B 1 1 1000 \"6\" {}\n"
			      "E 1 1 1500 \"6\" {\"xfdr_end\":\"window end\"}\n"
			      "E 1 1 1500 \"7\" {\"xfdr_end\":\"window end\"}\n");
	free(lines);
}

/* ---- --split-size ----------------------------------------------------------------------- */

#define SPLIT_BYTES (64u << 10)
#define SPLIT_PARTS_MAX 64

/*
 * The B, E and I lines of the checker's lines on track key ("PID TID "), appended to acc (a
 * text of cap bytes); with cut, not those of a cut (the "split" ends and begins).
 */
static void track_lines(const char *lines, const char *key, int cut, char *acc, size_t cap)
{
	size_t klen = strlen(key), n = strlen(acc);
	const char *p, *eol;

	for (p = lines; *p; p = eol + 1) {
		eol = strchr(p, '\n');
		assert_non_null(eol);
		if (!strchr("BEI", p[0]) || p[1] != ' ' || strncmp(p + 2, key, klen))
			continue;
		if (cut && memmem(p, (size_t)(eol - p), "\"split\"", 7))
			continue;
		assert_true(n + (size_t)(eol - p) + 2 < cap);
		memcpy(acc + n, p, (size_t)(eol - p) + 1);
		n += (size_t)(eol - p) + 1;
		acc[n] = '\0';
	}
}

/* How many lines of lines begin with ph and hold "split". */
static unsigned cut_lines(const char *lines, char ph)
{
	const char *p, *eol;
	unsigned n = 0;

	for (p = lines; *p; p = eol + 1) {
		eol = strchr(p, '\n');
		n += p[0] == ph && memmem(p, (size_t)(eol - p), "\"split\"", 7) != NULL;
	}
	return n;
}

/*
 * trace_path converted whole and with --split-size=64K (a1, a2: NULL or other options): parts
 * OUT.0001.perfetto, ..., each but the last of 64 KiB or more; each a trace of its own that
 * the checker takes (every track described, every slice ended, names interned on its
 * sequence); a call open at a cut ends there and begins again in the next part; with those
 * taken out, each thread's slices and instants over the parts are the whole's. shallow: the
 * calls open at a cut are few, so a part is 64 KiB and at most a chunk (4 KiB of packets) and
 * the cut's ends more; else (deep stacks) at least half of each part is its own, so there are
 * at most twice as many parts as the size alone gives. Returns how many parts.
 */
static size_t check_split(const char *trace_path, const char *a1, const char *a2, int shallow)
{
	char *trace = strdup(trace_path), *out = strdup(scratch_path("split.perfetto"));
	char *whole, *parts[SPLIT_PARTS_MAX], name[64], *want, *got, key[32];
	size_t n, i, cap = 8u << 20;
	const char *t;
	unsigned pid, tid, threads = 0;
	struct stat st;
	uint64_t whole_bytes;

	assert_non_null(trace);
	assert_non_null(out);
	for (n = 1; n <= SPLIT_PARTS_MAX + 1; n++) {
		snprintf(name, sizeof(name), "split.%04zu.perfetto", n);
		unlink(scratch_path(name));
	}
	whole = convert_lines(trace, a1, a2);
	assert_int_equal(stat(scratch_path("out.perfetto"), &st), 0);
	whole_bytes = (uint64_t)st.st_size;
	child_xfdr_silent("convert", "-f", "perfetto", "--split-size=64K", "-o", out, trace, a1, a2,
			  NULL);
	for (n = 0; n <= SPLIT_PARTS_MAX; n++) {
		snprintf(name, sizeof(name), "split.%04zu.perfetto", n + 1);
		if (stat(scratch_path(name), &st))
			break;
		assert_true(n < SPLIT_PARTS_MAX);
		parts[n] = perfetto_check("lines", scratch_path(name), NULL);
		if (n > 0) { /* the one before is whole */
			snprintf(name, sizeof(name), "split.%04zu.perfetto", n);
			assert_int_equal(stat(scratch_path(name), &st), 0);
			assert_in_range((uint64_t)st.st_size, SPLIT_BYTES,
					shallow ? SPLIT_BYTES + (12u << 10) : UINT64_MAX);
			/* what part n ended at the cut begins again in part n + 1 */
			assert_int_equal(cut_lines(parts[n - 1], 'E'), cut_lines(parts[n], 'B'));
			assert_true(cut_lines(parts[n], 'B') > 0);
		}
	}
	assert_in_range(n, 1, 2 * whole_bytes / SPLIT_BYTES + 2);
	assert_int_equal(cut_lines(parts[n - 1], 'E'), 0);
	want = malloc(cap);
	got = malloc(cap);
	assert_non_null(want);
	assert_non_null(got);
	/* every thread track ("T PID TID NAME") of the whole */
	for (t = whole; (t = strstr(t, "\nT ")) != NULL; t++) {
		assert_int_equal(sscanf(t + 3, "%u %u", &pid, &tid), 2);
		snprintf(key, sizeof(key), "%u %u ", pid, tid);
		want[0] = got[0] = '\0';
		track_lines(whole, key, 0, want, cap);
		for (i = 0; i < n; i++)
			track_lines(parts[i], key, 1, got, cap);
		text_assert_equal(got, want);
		threads++;
	}
	assert_true(threads > 0);
	for (i = 0; i < n; i++)
		free(parts[i]);
	free(want);
	free(got);
	free(whole);
	free(trace);
	free(out);
	return n;
}

/*
 * tg_shallow_scratch() split, plain (it compresses too well to need cutting) whole and from a
 * window on; random traces of four threads (exits without entry, so many calls open from the
 * start; TSCs that go back; custom events) compressed.
 */
static void test_split(void **state)
{
	char *path = strdup(tg_shallow_scratch("shallow.xray", 3, 3000));
	uint64_t seed = tg_seed("test_cli_perfetto split"), s = seed;
	unsigned runs, many = 0;

	(void)state;
	assert_non_null(path);
	assert_in_range(check_split(path, "--compress=none", NULL, 1), 4, 12);
	assert_in_range(check_split(path, "--compress=none", "--since=60000", 1), 2, 8);
	free(path);
	for (runs = 0; runs < 3; runs++) {
		struct tg_params p = {
		    .buffer_bytes = 2048, .threads = 4, .max_events = 6000, .custom_pct = 3};
		struct tg_trace tr;
		struct tg_file f;

		tg_generate(&tr, &p, &s);
		tg_encode(&tr, &f, &s);
		path = strdup(scratch_write("random.xray", f.data, f.bytes));
		assert_non_null(path);
		many += check_split(path, NULL, NULL, 0) >= 2;
		free(path);
		tg_free(&tr);
		free(f.data);
	}
	assert_true(many >= 1);
}

/* ---- xfdr's own events -------------------------------------------------------------------- */

/*
 * The drop counts with a thread's entry (a dictionary in an array), a crash with its frames
 * named from the sidecar (an array of strings; the signal's name; the fault address as a
 * pointer), and a crash payload that does not decode (its error, size, text and hex).
 * 1 GHz, base 1000: NS = TSC - 1000.
 */
static void test_xfdr_events(void **state)
{
	static const char map[] = "crash\t11\tSIGSEGV\t1\t0x10\t777\n"
				  "frame\t0\t0x1000\tcrash_c\t/bin/p\t0x100\n"
				  "frame\t1\t0x2000\t<unknown>\t/lib/x.so\t-\n";
	static const char want[] =
	    "I 1 1 0 \"xfdr drops\" {\"no_buffer\":1,\"no_thread_slot\":4,\"overwritten\":6,"
	    "\"reentrant\":2,\"threads\":[{\"no_buffer\":7,\"overwritten\":10,\"reentrant\":8,"
	    "\"thread_id\":1,\"tid\":777,\"too_large\":9}],\"threads_omitted\":5,\"too_large\":3}\n"
	    "I 1 1 1 \"crash SIGSEGV\" {\"backtrace\":[\"#0 0x1000 crash_c (/bin/p+0x100)\","
	    "\"#1 0x2000 (/lib/x.so)\",\"#2 0x3000\"],\"code\":-1,\"fault_addr\":\"0x10\","
	    "\"frame_count\":3,\"signal\":11,\"signal_name\":\"SIGSEGV\",\"tid\":777,"
	    "\"truncated\":\"yes (the stack had more frames)\"}\n"
	    "I 1 1 2 \"crash (invalid)\" {\"error\":\"payload offset 8: expected XFDRCRSH layout "
	    "version 1, found 2\",\"hex\":\"";
	static const uint64_t pcs[] = {0x1000, 0x2000, 0x3000};
	const struct wr_drop_totals totals = {1, 2, 3, 4, 5, 6};
	const struct wr_drop_entry entry = {777, 1, 7, 8, 9, 10};
	const struct wr_crash_info crash = {11, -1, 777, 0x10, XFDR_CRASH_TRUNCATED, 3, pcs};
	uint8_t drop[XFDR_DROP_FIXED_BYTES + XFDR_DROP_ENTRY_BYTES],
	    crsh[XFDR_CRASH_PAYLOAD_BYTES(3)];
	const char *path;
	char *lines, *th;
	struct tb b;

	(void)state;
	assert_int_equal(wr_drop_head(drop, &totals, 1), XFDR_DROP_FIXED_BYTES);
	wr_drop_entry(drop + XFDR_DROP_FIXED_BYTES, &entry);
	assert_int_equal(wr_crash(crsh, &crash), sizeof(crsh));
	tb_init(&b, 1024, 1000000000ull);
	tb_buffer(&b, 1, 1, 1000);
	tb_custom(&b, drop, sizeof(drop), 1000);
	tb_custom(&b, crsh, sizeof(crsh), 1001);
	crsh[XFDR_CRASH_VERSION_OFF] = 2;
	tb_custom(&b, crsh, sizeof(crsh), 1002);
	path = tb_write(&b, "xfdr_events.xray");
	scratch_write_text("xfdr_events.xray.map", map);
	lines = convert_lines(path, NULL, NULL);
	th = strstr(lines, "I 1 1 0 ");
	assert_non_null(th);
	assert_memory_equal(th, want, strlen(want));
	free(lines);
}

/* ---- Size: a call-heavy trace ------------------------------------------------------------- */

/*
 * 50,000 calls of 50 functions, ticks apart as a real program's: the compressed output is at
 * most 8 bytes per event (the FDR file's own size) and spans several chunks, each decoded.
 */
static void test_call_heavy_size(void **state)
{
	enum { CALLS = 50000 };
	struct tb b;
	const char *path, *out = scratch_path("heavy.perfetto");
	struct stat st;
	char *lines, *tail;
	unsigned chunks, packets, plain;
	uint32_t i, x = 1;

	(void)state;
	tb_init(&b, 1 << 16, 3000000000ull);
	tb_buffer(&b, 1, 1, 1000);
	for (i = 0; i < CALLS; i++) {
		x = x * 1103515245u + 12345u;
		if ((i + 1) % 4000 == 0)
			tb_buffer(&b, 1, 1 + i / 4000, 1000 + (uint64_t)i * 200);
		tb_fn(&b, ENTER, 1 + (x >> 16) % 50, 20 + (x >> 8) % 100);
		tb_fn(&b, EXIT, 1 + (x >> 16) % 50, 5 + (x >> 4) % 300);
	}
	path = tb_write(&b, "heavy.xray");
	convert_ok(path, out, "--no-map", NULL);
	assert_int_equal(stat(out, &st), 0);
	if ((uint64_t)st.st_size > 8ull * 2 * CALLS)
		fail_msg("%lld bytes for %d events: more than 8 a event", (long long)st.st_size,
			 2 * CALLS);
	lines = split_tail(perfetto_check("lines", out, NULL), &tail);
	assert_int_equal(sscanf(tail, "PACKETS %u CHUNKS %u PLAIN %u", &packets, &chunks, &plain),
			 3);
	assert_true(chunks > 1);
	assert_int_equal(plain, 0);
	assert_int_equal(text_count(lines, "\nB 1 1 "), CALLS);
	assert_int_equal(text_count(lines, "\nE 1 1 "), CALLS);
	free(lines);
	free(tail);
}

/* ---- A recorded program -------------------------------------------------------------------- */

static const char program[] = "#include <pthread.h>\n"
			      "static volatile int sink;\n"
			      "static void leaf(int x) { sink = x; }\n"
			      "static void work(int n) { for (int i = 0; i < n; i++) leaf(i); }\n"
			      "static void *worker(void *name)\n"
			      "{\n"
			      "	pthread_setname_np(pthread_self(), name);\n"
			      "	work(3);\n"
			      "	return NULL;\n"
			      "}\n"
			      "int main(void)\n"
			      "{\n"
			      "	pthread_t a;\n"
			      "	pthread_setname_np(pthread_self(), \"pf-main\");\n"
			      "	pthread_create(&a, NULL, worker, \"pf-worker\");\n"
			      "	pthread_join(a, NULL);\n"
			      "	work(2);\n"
			      "	return 0;\n"
			      "}\n";

/*
 * The process and its threads as the system knew them (the pid in the trace's name, the
 * threads' kernel tids and names from the sidecar), each thread's calls named, and the same
 * slices, in the same order and at the same times, as llvm-xray finds in the file.
 */
static void test_real_program(void **state)
{
	char prog[256], trace[512], want[128], *lines, *same, *llvm_argv[8];
	const char *llvm = scratch_path("llvm.json"), *ours = scratch_path("ours.perfetto");
	unsigned pid, tid_main, tid_worker;
	struct child_result r;
	const char *p;

	(void)state;
	preload_build(program, prog, sizeof(prog));
	preload_record(prog, NULL, "rec", "", trace, sizeof(trace));
	p = strrchr(trace, '/');
	assert_int_equal(sscanf(p, "/xfdr-prog-%u-", &pid), 1);
	lines = convert_lines(trace, NULL, NULL);
	snprintf(want, sizeof(want), "P %u \"", pid);
	text_assert_contains(lines, want);
	p = text_line_of(lines, "\"pf-main\"\n");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "T %*u %u", &tid_main), 1);
	assert_int_equal(tid_main, pid); /* the main thread's tid is the pid */
	p = text_line_of(lines, "\"pf-worker\"\n");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "T %*u %u", &tid_worker), 1);
	assert_int_not_equal(tid_worker, pid);
	snprintf(want, sizeof(want), "B %u %u ", pid, tid_main);
	/* main, work and leaf x2 on the main thread; worker, work and leaf x3 on the worker */
	assert_int_equal(text_count(lines, want), 4);
	snprintf(want, sizeof(want), "B %u %u ", pid, tid_worker);
	assert_int_equal(text_count(lines, want), 5);
	text_assert_contains(lines, "\"leaf\" {}\n");
	/* Each begin's source location: the line of the function's first instruction (its
	   opening brace; leaf and work are written on one line each). */
	assert_int_equal(text_count(lines, "\"leaf\" {\"src\":\""), 5);
	assert_int_equal(text_count(lines, "/prog.c:3\"}\n"), 5);
	assert_int_equal(text_count(lines, "/prog.c:4\"}\n"), 2);
	assert_int_equal(text_count(lines, "/prog.c:6\"}\n"), 1);
	assert_int_equal(text_count(lines, "/prog.c:12\"}\n"), 1);
	text_assert_contains(lines, "\"xfdr drops\" {\"no_buffer\":0,");
	free(lines);

	/* Against llvm-xray, both without names: ids, thread ids and pid 1. */
	convert_ok(trace, ours, "--no-map", NULL);
	llvm_argv[0] = (char *)child_llvm_xray();
	llvm_argv[1] = "convert";
	llvm_argv[2] = "--output-format=trace_event";
	llvm_argv[3] = "-o";
	llvm_argv[4] = (char *)llvm;
	llvm_argv[5] = trace;
	llvm_argv[6] = NULL;
	child_capture(llvm_argv, &r);
	if (r.status != 0)
		fail_msg("llvm-xray convert %s: status %d\n%s", trace, r.status, r.err);
	child_result_free(&r);
	same = perfetto_check("same", ours, llvm);
	/* 2 threads: main 2 + work 2 + leaf 4, worker 2 + work 2 + leaf 6 */
	text_assert_equal(same, "SAME 2 18\n");
	free(same);
}

/* ---- The command line and its errors -------------------------------------------------------- */

static void test_usage_and_errors(void **state)
{
	const char *path = hand_trace(hand_map);
	struct child_result r;

	(void)state;
	/* --compress belongs to perfetto */
	assert_int_equal(child_xfdr(&r, "convert", "--compress=none", path, NULL), 2);
	text_assert_contains(r.err, "'--compress' is an option of --output-format=perfetto");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "perfetto", "--compress=gzip", path, NULL),
			 2);
	text_assert_contains(r.err, "'--compress' takes deflate or none, not 'gzip'");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "protobuf", path, NULL), 2);
	text_assert_contains(r.err, "(supported: yaml, trace_event, perfetto, pprof)");
	child_result_free(&r);
	/* --jobs too, from 1 to 64 */
	assert_int_equal(child_xfdr(&r, "convert", "--jobs=2", path, NULL), 2);
	text_assert_contains(r.err, "'--jobs' is an option of --output-format=perfetto");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "perfetto", "--jobs=0", path, NULL), 2);
	text_assert_contains(r.err, "'--jobs' takes a number of threads from 1 to 64, not '0'");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "perfetto", "-j", "65", path, NULL), 2);
	text_assert_contains(r.err, "'--jobs' takes a number of threads from 1 to 64, not '65'");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "perfetto", "--jobs=two", path, NULL), 2);
	text_assert_contains(r.err, "'--jobs' takes a number of threads from 1 to 64, not 'two'");
	child_result_free(&r);
	/* a write error is reported and fails, with one job or with both threads at once */
	assert_int_equal(
	    child_xfdr(&r, "convert", "-f", "perfetto", "-o", "/dev/full", "--jobs=1", path, NULL),
	    1);
	text_assert_contains(r.err, "/dev/full: write error: ");
	child_result_free(&r);
	assert_int_equal(
	    child_xfdr(&r, "convert", "-f", "perfetto", "-o", "/dev/full", "--jobs=2", path, NULL),
	    1);
	text_assert_contains(r.err, "/dev/full: write error: ");
	assert_int_equal(text_count(r.err, "\n"), 1);
	child_result_free(&r);
	/* binary output is refused on a terminal, and nothing reaches it */
	assert_int_equal(child_xfdr_on_terminal(&r, "convert", "-f", "perfetto", path, NULL), 0);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "refusing to write a binary trace to a terminal");
	child_result_free(&r);
	/* --help names the format and the option */
	assert_int_equal(child_xfdr(&r, "convert", "--help", NULL), 0);
	text_assert_contains(r.out, "'perfetto':");
	text_assert_contains(r.out, "--compress=deflate|none");
	text_assert_contains(r.out, "-j, --jobs=N");
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hand_built),
	    cmocka_unit_test(test_process_from_map),
	    cmocka_unit_test(test_thread_zero_is_the_process),
	    cmocka_unit_test(test_pid_from_buffers),
	    cmocka_unit_test(test_compressed_same_as_plain),
	    cmocka_unit_test(test_unbalanced),
	    cmocka_unit_test(test_before_trace),
	    cmocka_unit_test(test_split),
	    cmocka_unit_test(test_xfdr_events),
	    cmocka_unit_test(test_call_heavy_size),
	    cmocka_unit_test(test_real_program),
	    cmocka_unit_test(test_usage_and_errors),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
