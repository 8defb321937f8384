/*
 * tests/system/test_cli_context.c - what the xfdr command makes of ring-mode and snapshot files:
 * the "XFDRSTAK" stack context in `xfdr dump` (decoded, and the depth and stack of the records
 * after it), and `xfdr convert --since=TSC|snapshot` (a snapshot's window).
 *
 * The trace is built byte by byte with tests/support/image.h from the spec and format.h's
 * XFDRSTAK table, written out literally here (not with format.h's constants, not with the
 * writer). The expected dump lines are worked out by hand in the comments; the expected YAML
 * of --since is llvm-xray's own output with the records before the window deleted.
 */
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
#include "tests/support/image.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"

/* ---- the trace --------------------------------------------------------------------------- */

/*
 * The XFDRSTAK payload, little-endian: "XFDRSTAK", u32 version, u32 depth, u32 id_count,
 * u32 reserved, u32 ids..., zero padding to a multiple of 8 bytes.
 */
#define STAK_HEAD(version, depth, count)                                                           \
	'X', 'F', 'D', 'R', 'S', 'T', 'A', 'K', L32(version), L32(depth), L32(count), L32(0)

/* CustomEventMarker: 0x0b (kind 5), u32 size, u64 tsc, 3 reserved. */
#define MARKER(size, tsc) 0x0b, L32(size), L64(tsc), Z3
/* NewCPUId: 0x05 (kind 2), u16 cpu, u64 tsc, 5 reserved. */
#define CPU(cpu, tsc) 0x05, L16(cpu), L64(tsc), Z5
/* Function record word: action << 1 | id << 4 (bit 0 = 0), then the u32 delta. */
#define FN(action, id, delta) L32((uint32_t)(action) << 1 | (uint32_t)(id) << 4), L32(delta)
#define ENTER 0
#define EXIT 1

/*
 * Buffer size 128, header at 0, four buffers:
 * buffer 0 @32, thread 7, 10 s 5 us, cpu 3 tsc 1000:
 *    80 marker 32 bytes tsc 1000: depth 3, ids 1 2 (one call unnamed) -> seeds [1 2 ?]
 *   128 Exit 9 +5 = 1005: closes the unnamed call (depth 2), which it names 9
 *   136 Entry 4 +5 = 1010 (depth 2), 144 Exit 4 +5 = 1015 (depth 2), 152 Exit 2 +5 = 1020
 *       (depth 1); the buffer is exactly full at 160.
 * buffer 1 @160, thread 7, 10 s 6 us, cpu 3 tsc 2000:
 *   208 marker 32 bytes tsc 2000: depth 1, id 1 (28 bytes + 4 padding): [1] is open: agrees
 *   256 Exit 1 +5 = 2005 (depth 0); 264 EndOfBuffer, padding 288 - 280 = 8.
 * buffer 2 @288, thread 8, 10 s 7 us, cpu 1 tsc 3000:
 *   336 marker 32 bytes tsc 3000: layout version 2: invalid, ignored
 *   384 Exit 5 +1 = 3001: nothing open (depth 0); 392 Entry 6 +1 = 3002 (depth 0);
 *   400 EndOfBuffer, padding 0.
 * buffer 3 @416, thread 8, 10 s 8 us, cpu 1 tsc 4000:
 *   464 marker 32 bytes tsc 4000: depth 1, id 7, but [6] is open: differs, ignored
 *   512 Exit 6 +2 = 4002 (depth 0); 520 EndOfBuffer, padding 544 - 536 = 8.
 */
static void build(struct img *m)
{
	img_init(m, 128);

	img_buffer(m, 7, 10, 5);
	PUT(m, CPU(3, 1000));
	AT(m, 80);
	PUT(m, MARKER(32, 1000), STAK_HEAD(1, 3, 2), L32(1), L32(2));
	AT(m, 128);
	PUT(m, FN(EXIT, 9, 5), FN(ENTER, 4, 5), FN(EXIT, 4, 5), FN(EXIT, 2, 5));
	AT(m, 160);
	img_close(m);

	img_buffer(m, 7, 10, 6);
	PUT(m, CPU(3, 2000));
	AT(m, 208);
	PUT(m, MARKER(32, 2000), STAK_HEAD(1, 1, 1), L32(1), L32(0));
	AT(m, 256);
	PUT(m, FN(EXIT, 1, 5));
	img_close(m);

	img_buffer(m, 8, 10, 7);
	PUT(m, CPU(1, 3000));
	AT(m, 336);
	PUT(m, MARKER(32, 3000), STAK_HEAD(2, 1, 1), L32(1), L32(0));
	AT(m, 384);
	PUT(m, FN(EXIT, 5, 1), FN(ENTER, 6, 1));
	img_close(m);

	img_buffer(m, 8, 10, 8);
	PUT(m, CPU(1, 4000));
	AT(m, 464);
	PUT(m, MARKER(32, 4000), STAK_HEAD(1, 1, 1), L32(7), L32(0));
	AT(m, 512);
	PUT(m, FN(EXIT, 6, 2));
	img_close(m);
	AT(m, 544);
}

static void write_trace(const char *name)
{
	static struct img m;

	build(&m);
	scratch_write(name, m.b, m.len);
}

/* ---- dump -------------------------------------------------------------------------------- */

static const char dump_plain[] =
    "file: ctx.xray\n"
    "header: version=1 type=1 bitfield=0x00000003 constant_tsc=1 nonstop_tsc=1 "
    "cycle_frequency=2000000000 buffer_size=128 byte_order=little buffers=4\n"
    /* Thread 7 begins inside calls and the file has no drop counts: its start was lost. Its
       span 1000..2005, thread 8's 3000..4002 (its context does not decode) at 2 GHz from 1000. */
    "thread id=7 first_tsc=1000 last_tsc=2005 span_s=0.000000000..0.000000503 lost=start\n"
    "thread id=8 first_tsc=3000 last_tsc=4002 span_s=0.000001000..0.000001501\n"
    "offset     buffer record            fields\n"
    "32         0      NewBuffer         thread=7\n"
    "48         0      WallClockTime     seconds=10 micros=5\n"
    "64         0      NewCPUId          cpu=3 tsc=1000\n"
    "80         0      CustomEventMarker size=32 tsc=1000 data=584644525354414b0100000003000000... "
    "text=\"XFDRSTAK........\"... context=seeded depth=3 stack=1;2;?\n"
    "128        0      Exit              function=9 delta=5 tsc=1005 cpu=3 depth=2\n"
    "136        0      Entry             function=4 delta=5 tsc=1010 cpu=3 depth=2\n"
    "144        0      Exit              function=4 delta=5 tsc=1015 cpu=3 depth=2\n"
    "152        0      Exit              function=2 delta=5 tsc=1020 cpu=3 depth=1\n"
    "160        1      NewBuffer         thread=7\n"
    "176        1      WallClockTime     seconds=10 micros=6\n"
    "192        1      NewCPUId          cpu=3 tsc=2000\n"
    "208        1      CustomEventMarker size=32 tsc=2000 data=584644525354414b0100000001000000... "
    "text=\"XFDRSTAK........\"... context=agrees depth=1 stack=1\n"
    "256        1      Exit              function=1 delta=5 tsc=2005 cpu=3 depth=0\n"
    "264        1      EndOfBuffer       padding=8\n"
    "288        2      NewBuffer         thread=8\n"
    "304        2      WallClockTime     seconds=10 micros=7\n"
    "320        2      NewCPUId          cpu=1 tsc=3000\n"
    "336        2      CustomEventMarker size=32 tsc=3000 data=584644525354414b0200000001000000... "
    "text=\"XFDRSTAK........\"... context=invalid reason=\"payload offset 8: expected XFDRSTAK "
    "layout version 1, found 2\"\n"
    "384        2      Exit              function=5 delta=1 tsc=3001 cpu=1 depth=0\n"
    "392        2      Entry             function=6 delta=1 tsc=3002 cpu=1 depth=0\n"
    "400        2      EndOfBuffer       padding=0\n"
    "416        3      NewBuffer         thread=8\n"
    "432        3      WallClockTime     seconds=10 micros=8\n"
    "448        3      NewCPUId          cpu=1 tsc=4000\n"
    "464        3      CustomEventMarker size=32 tsc=4000 data=584644525354414b0100000001000000... "
    "text=\"XFDRSTAK........\"... context=differs depth=1 stack=7\n"
    "512        3      Exit              function=6 delta=2 tsc=4002 cpu=1 depth=0\n"
    "520        3      EndOfBuffer       padding=8\n";

static void test_dump_stack_context(void **state)
{
	struct child_result r;

	(void)state;
	write_trace("ctx.xray");
	child_xfdr(&r, "dump", "ctx.xray", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	text_assert_equal(r.out, dump_plain);
	child_result_free(&r);
}

/*
 * --stacks, ids only (no sidecar): each function line ends with its callers and itself.
 * Named from a sidecar: 1 main, 2 work, 9 leaf; 4 and 7 have no name ('#ID'), 6 is
 * <unknown> in the map (unnamed too).
 */
static void test_dump_stacks(void **state)
{
	struct child_result r;

	(void)state;
	write_trace("st.xray");
	child_xfdr(&r, "dump", "--stacks", "st.xray", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	text_assert_contains(r.out,
			     "text=\"XFDRSTAK........\"... context=seeded depth=3 stack=1;2;?\n"
			     "128        0      Exit              function=9 delta=5 tsc=1005 "
			     "cpu=3 depth=2 stack=1;2;9\n"
			     "136        0      Entry             function=4 delta=5 tsc=1010 "
			     "cpu=3 depth=2 stack=1;2;4\n"
			     "144        0      Exit              function=4 delta=5 tsc=1015 "
			     "cpu=3 depth=2 stack=1;2;4\n"
			     "152        0      Exit              function=2 delta=5 tsc=1020 "
			     "cpu=3 depth=1 stack=1;2\n");
	text_assert_contains(r.out,
			     "256        1      Exit              function=1 delta=5 tsc=2005 "
			     "cpu=3 depth=0 stack=1\n");
	text_assert_contains(r.out,
			     "392        2      Entry             function=6 delta=1 tsc=3002 "
			     "cpu=1 depth=0 stack=6\n");
	child_result_free(&r);

	scratch_write_text(
	    "st.xray.map",
	    "xfdr-map\t1\nfunction\t1\tmain\t0x1\t-\t-\nfunction\t2\twork\t0x2\t-\t-\n"
	    "function\t6\t<unknown>\t0x6\t-\t-\nfunction\t9\tleaf\t0x9\t-\t-\n");
	child_xfdr(&r, "dump", "--stacks", "st.xray", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out,
			     "context=seeded depth=3 stack=main;work;?\n"
			     "128        0      Exit              function=9 delta=5 tsc=1005 "
			     "cpu=3 name=\"leaf\" depth=2 stack=main;work;leaf\n"
			     "136        0      Entry             function=4 delta=5 tsc=1010 "
			     "cpu=3 depth=2 stack=main;work;#4\n");
	text_assert_contains(r.out, "context=differs depth=1 stack=#7\n");
	text_assert_contains(r.out, "cpu=1 depth=0 stack=#6\n");
	child_result_free(&r);

	/* Without --stacks the context line still names its frames; --no-map shows ids. */
	child_xfdr(&r, "dump", "st.xray", NULL);
	text_assert_contains(r.out, "context=seeded depth=3 stack=main;work;?\n");
	text_assert_contains(r.out, "cpu=3 depth=2\n");
	text_assert_contains(r.out, "cpu=3 name=\"work\" depth=1\n");
	child_result_free(&r);
	child_xfdr(&r, "dump", "--no-map", "st.xray", NULL);
	text_assert_contains(r.out, "context=seeded depth=3 stack=1;2;?\n");
	child_result_free(&r);

	/* A missing --map is an unreadable input; --map with --no-map a usage error. */
	child_xfdr(&r, "dump", "--map=none.map", "st.xray", NULL);
	assert_int_equal(r.status, 2);
	text_assert_only_error_line(&r, "xfdr dump: none.map: ");
	child_result_free(&r);
	child_xfdr(&r, "dump", "--map=st.xray.map", "--no-map", "st.xray", NULL);
	assert_int_equal(r.status, 2);
	text_assert_only_error_line(&r, "xfdr dump: --map and --no-map exclude each other");
	child_result_free(&r);
}

/*
 * A context deeper than it names, over 128 ids, and a run of unnamed calls: depth 131 with
 * 128 ids (all 3), i.e. 3 unnamed calls, then two exits of 5 and one of 3.
 *   marker @80, payload 24 + 512 = 536 bytes -> 632; Exit 5 @632 (depth 130), Exit 5 @640
 *   (depth 129), Exit 3 @648 (depth 128: the last unnamed call, named 3); buffer 1024.
 */
static void test_dump_deep_context(void **state)
{
	static struct img m;
	struct child_result r;
	char want[2048];
	int i, n;

	(void)state;
	img_init(&m, 1024);
	img_buffer(&m, 1, 0, 0);
	PUT(&m, CPU(0, 100));
	PUT(&m, MARKER(536, 100), STAK_HEAD(1, 131, 128));
	for (i = 0; i < 128; i++)
		PUT(&m, L32(3));
	AT(&m, 632);
	PUT(&m, FN(EXIT, 5, 1), FN(EXIT, 5, 1), FN(EXIT, 3, 1));
	img_close(&m);
	scratch_write("deep.xray", m.b, m.len);

	child_xfdr(&r, "dump", "--stacks", "deep.xray", NULL);
	assert_int_equal(r.status, 0);
	n = snprintf(want, sizeof(want), "context=seeded depth=131 stack=");
	for (i = 0; i < 128; i++)
		n += snprintf(want + n, sizeof(want) - (size_t)n, "3;");
	snprintf(want + n, sizeof(want) - (size_t)n, "?*3\n");
	text_assert_contains(r.out, want);
	text_assert_contains(r.out, "function=5 delta=1 tsc=101 cpu=0 depth=130 stack=3;3;3;");
	n = snprintf(want, sizeof(want), "depth=130 stack=");
	for (i = 0; i < 128; i++)
		n += snprintf(want + n, sizeof(want) - (size_t)n, "3;");
	snprintf(want + n, sizeof(want) - (size_t)n, "?*2;5\n");
	text_assert_contains(r.out, want);
	n = snprintf(want, sizeof(want), "tsc=102 cpu=0 depth=129 stack=");
	for (i = 0; i < 128; i++)
		n += snprintf(want + n, sizeof(want) - (size_t)n, "3;");
	snprintf(want + n, sizeof(want) - (size_t)n, "?;5\n");
	text_assert_contains(r.out, want);
	n = snprintf(want, sizeof(want), "tsc=103 cpu=0 depth=128 stack=");
	for (i = 0; i < 128; i++)
		n += snprintf(want + n, sizeof(want) - (size_t)n, "3;");
	snprintf(want + n, sizeof(want) - (size_t)n, "3\n");
	text_assert_contains(r.out, want);
	child_result_free(&r);
}

/* ---- convert --since ---------------------------------------------------------------------- */

/*
 * llvm-xray's YAML of path, without the record lines whose tsc is below since; when none is
 * left, the list is written "[]" as LLVM's YAML writer writes an empty sequence.
 */
static char *llvm_yaml_since(const char *path, const char *sort, uint64_t since)
{
	char sort_opt[32];
	char *argv[] = {(char *)child_llvm_xray(),
			"convert",
			"--output-format=yaml",
			sort_opt,
			(char *)path,
			NULL};
	struct child_result r;
	char *out, *line, *next, *tsc;
	size_t n = 0;

	snprintf(sort_opt, sizeof(sort_opt), "--sort=%s", sort);
	child_capture(argv, &r);
	if (r.status) {
		print_error("%s failed on %s: %s\n", child_llvm_xray(), path, r.err);
		fail();
	}
	out = calloc(1, r.out_len + 1);
	assert_non_null(out);
	for (line = r.out; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		tsc = strstr(line, ", tsc: ");
		if (!strncmp(line, "  - {", 5) && tsc && tsc < next &&
		    strtoull(tsc + 7, NULL, 10) < since)
			continue;
		memcpy(out + n, line, (size_t)(next - line));
		n += (size_t)(next - line);
	}
	child_result_free(&r);
	line = strstr(out, "records:\n...\n");
	if (line) {
		out = realloc(out, n + 16);
		assert_non_null(out);
		line = strstr(out, "records:\n...\n");
		memcpy(line, "records:         []\n...\n", sizeof("records:         []\n...\n"));
	}
	return out;
}

static void test_convert_since(void **state)
{
	static const uint64_t windows[] = {0, 1010, 2001, 3001, 5000};
	struct child_result r;
	char opt[64], *want;
	size_t i, k;

	(void)state;
	write_trace("since.xray");
	for (i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
		for (k = 0; k < 2; k++) {
			const char *sort = k ? "false" : "true";
			char sort_opt[32];

			snprintf(opt, sizeof(opt), "--since=%llu", (unsigned long long)windows[i]);
			snprintf(sort_opt, sizeof(sort_opt), "--sort=%s", sort);
			want = llvm_yaml_since("since.xray", sort, windows[i]);
			child_xfdr(&r, "convert", opt, sort_opt, "since.xray", NULL);
			assert_int_equal(r.status, 0);
			assert_int_equal(r.err_len, 0);
			text_assert_equal(r.out, want);
			free(want);
			child_result_free(&r);
		}
	}

	/* By hand: from 2001 on, sorted: thread 7's Exit 1 at 2005 comes first. */
	child_xfdr(&r, "convert", "--since=2001", "since.xray", NULL);
	text_assert_contains(r.out,
			     "records:\n  - { type: 0, func-id: 1, function: '1', cpu: 3, thread: "
			     "7, kind: function-exit, tsc: 2005, data: '' }\n");
	assert_null(strstr(r.out, "tsc: 2000,"));
	child_result_free(&r);
	/* A window after every record: an empty list, as for a file with no records. */
	child_xfdr(&r, "convert", "--since=5000", "since.xray", NULL);
	text_assert_contains(r.out, "records:         []\n...\n");
	child_result_free(&r);
}

static void test_convert_since_snapshot(void **state)
{
	static const char map[] = "xfdr-map\t1\nmode\tring\nsince_tsc\t2001\n"
				  "function\t1\tmain\t0x1\t-\t-\nfunction\t6\tsix\t0x6\t-\t-\n"
				  "overwritten\t3\n";
	struct child_result a, b;

	(void)state;
	write_trace("snap.xray");
	scratch_write_text("snap.xray.map", map);

	/* The sidecar's window and names, exactly as the window written out. */
	child_xfdr(&a, "convert", "--since=snapshot", "snap.xray", NULL);
	child_xfdr(&b, "convert", "--since=2001", "snap.xray", NULL);
	assert_int_equal(a.status, 0);
	assert_int_equal(a.err_len, 0);
	text_assert_equal(a.out, b.out);
	text_assert_contains(a.out, "records:\n  - { type: 0, func-id: 1, function: main, cpu: 3, "
				    "thread: 7, kind: function-exit, tsc: 2005, data: '' }\n");
	text_assert_contains(a.out,
			     "function: six, cpu: 1, thread: 8, kind: function-exit, tsc: 4002");
	child_result_free(&a);
	child_result_free(&b);

	/* --no-map: the window still comes from FILE.map, the names do not. */
	child_xfdr(&a, "convert", "--since=snapshot", "--no-map", "snap.xray", NULL);
	child_xfdr(&b, "convert", "--since=2001", "--no-map", "snap.xray", NULL);
	assert_int_equal(a.status, 0);
	text_assert_equal(a.out, b.out);
	text_assert_contains(a.out,
			     "function: '1', cpu: 3, thread: 7, kind: function-exit, tsc: 2005");
	child_result_free(&a);
	child_result_free(&b);

	/* --map MAP gives it too. */
	write_trace("other.xray");
	child_xfdr(&a, "convert", "--since=snapshot", "--map=snap.xray.map", "other.xray", NULL);
	assert_int_equal(a.status, 0);
	text_assert_contains(a.out, "records:\n  - { type: 0, func-id: 1, function: main, cpu: 3, "
				    "thread: 7, kind: function-exit, tsc: 2005, data: '' }\n");
	child_result_free(&a);

	/* No sidecar at all: exit 2, naming the sidecar it looked for. */
	child_xfdr(&a, "convert", "--since=snapshot", "other.xray", NULL);
	assert_int_equal(a.status, 2);
	text_assert_only_error_line(&a,
				    "xfdr convert: --since=snapshot: other.xray.map: No such file");
	child_result_free(&a);

	/* A sidecar without since_tsc (not a snapshot): exit 2, naming it. */
	scratch_write_text("other.xray.map", "xfdr-map\t1\nfunction\t1\tmain\t0x1\t-\t-\n");
	child_xfdr(&a, "convert", "--since=snapshot", "other.xray", NULL);
	assert_int_equal(a.status, 2);
	text_assert_only_error_line(
	    &a, "xfdr convert: --since=snapshot: other.xray.map has no since_tsc");
	child_result_free(&a);
	/* ... which changes nothing without --since. */
	child_xfdr(&a, "convert", "other.xray", NULL);
	assert_int_equal(a.status, 0);
	text_assert_contains(a.out, "function: main");
	child_result_free(&a);

	/* A malformed since_tsc line makes the sidecar bad: exit 1, file and line named. */
	scratch_write_text("other.xray.map", "xfdr-map\t1\nsince_tsc\t12x\n");
	child_xfdr(&a, "convert", "--since=snapshot", "other.xray", NULL);
	assert_int_equal(a.status, 1);
	text_assert_only_error_line(&a,
				    "xfdr convert: other.xray.map: line 2: expected a decimal TSC");
	child_result_free(&a);
	child_xfdr(&a, "dump", "other.xray", NULL);
	assert_int_equal(a.status, 1);
	child_result_free(&a);
}

static void test_usage(void **state)
{
	static const char *const bad[] = {"--since=", "--since=-1", "--since=12a", "--since=snap",
					  "--since=18446744073709551616"};
	struct child_result r;
	char want[128];
	size_t i;

	(void)state;
	write_trace("u.xray");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		child_xfdr(&r, "convert", bad[i], "u.xray", NULL);
		assert_int_equal(r.status, 2);
		snprintf(want, sizeof(want), "xfdr convert: '--since' takes a TSC");
		text_assert_only_error_line(&r, want);
		text_assert_contains(r.err, strchr(bad[i], '=') + 1);
		child_result_free(&r);
	}
	child_xfdr(&r, "convert", "--since", "u.xray", NULL);
	assert_int_equal(r.status, 2);
	child_result_free(&r);
	child_xfdr(&r, "convert", "--since=18446744073709551615", "u.xray", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out, "records:         []\n");
	child_result_free(&r);

	child_xfdr(&r, "convert", "--help", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out, "[--since=WHEN] [--until=WHEN] [--thread=LIST]");
	text_assert_contains(r.out, "since_tsc");
	child_result_free(&r);
	child_xfdr(&r, "dump", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_true(!strncmp(r.out,
			     "usage: xfdr dump [--stacks] [--since=WHEN] [--until=WHEN] "
			     "[--thread=LIST]\n",
			     strlen("usage: xfdr dump [--stacks] [--since=WHEN] [--until=WHEN] "
				    "[--thread=LIST]\n")));
	text_assert_contains(r.out, "XFDRSTAK");
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dump_stack_context),	   cmocka_unit_test(test_dump_stacks),
	    cmocka_unit_test(test_dump_deep_context),	   cmocka_unit_test(test_convert_since),
	    cmocka_unit_test(test_convert_since_snapshot), cmocka_unit_test(test_usage),
	};

	return cmocka_run_group_tests(tests, scratch_setup_cwd, scratch_teardown);
}
