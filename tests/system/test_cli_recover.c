/*
 * tests/system/test_cli_recover.c - `xfdr recover`: a valid trace from the live files of a
 * file-backed pool whose process died.
 *
 * The live files are built by hand (tests/support/pool_layout.h: the locator from format.h's
 * offsets, descriptors in a layout of the tests' own, records byte by byte), with everything
 * a dead recorder leaves: full and open buffers, a torn tail, a never-used buffer, one being
 * claimed, a stale one, two threads claimed out of index order. What the output must hold is
 * listed by `llvm-xray convert` (the independent oracle) and checked byte by byte where the
 * rebuild decides something (order, where each buffer is closed). Errors: one line naming the
 * file (and the offset), nothing written; exit 1 for a malformed input or a write error, 2 for
 * a usage error, an input that cannot be opened or an OUT that exists without --force.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/image.h"
#include "tests/support/pool_layout.h"
#include "tests/support/rebuild_outputs.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "xfdr/format.h"

/* The scenario's live files "<name>-live.xray" (+ .pool unless no_pool). Returns FILE. */
static const char *write_scenario(const char *name, uint64_t loc_hz, uint64_t header_hz,
				  int no_pool)
{
	char base[128];
	const char *live, *pool;
	struct pl_pool p;

	snprintf(base, sizeof(base), "%s-live.xray", name);
	live = scratch_path(base);
	pl_scenario(&p, 0x7f0000000000ull, 0x7e0000000000ull, loc_hz, 1);
	pl_write_live(&p, live, header_hz);
	if (!no_pool) {
		snprintf(base, sizeof(base), "%s-live.xray.pool", name);
		pool = scratch_path(base);
		pl_write_pool(&p, pool);
	}
	pl_free(&p);
	return live;
}

/*
 * The rebuilt file holds the kept buffers in claim order, each closed right after its last
 * whole record: thread ids 1 2 1 2 1, preamble TSCs 1000000 + k * 40000000, EndOfBuffer at
 * 72 (3 records after the preamble; the stale record after used_bytes dropped), 96, 56 (where
 * the buffer's own EndOfBuffer was), 64 (the stale records after used_bytes dropped), 64 (the
 * torn NewCPUId cut), and zeros up to 256.
 */
static void check_rebuilt_bytes(const char *path, uint64_t hz)
{
	static const uint16_t thread[] = {1, 2, 1, 2, 1};
	static const size_t eob_at[] = {72, 96, 56, 64, 64};
	size_t n, k, i;
	uint8_t *f = pl_read_file(path, &n), *b;

	assert_non_null(f);
	assert_int_equal(n, 32 + 5 * 256);
	assert_int_equal(f[0] | f[1] << 8, 1);
	assert_int_equal(f[2] | f[3] << 8, 1);
	assert_int_equal(f[4], 3); /* constant and nonstop TSC: the locator's invariant flag */
	assert_int_equal(img_le64(f + 8), hz);
	assert_int_equal(img_le64(f + 16), 256);
	for (k = 0; k < 5; k++) {
		b = f + 32 + k * 256;
		assert_int_equal(b[0], 0x01);
		assert_int_equal(b[1] | b[2] << 8, thread[k]);
		assert_int_equal(b[32], 0x05);
		assert_int_equal(img_le64(b + 35), 1000000ull + k * 40000000ull);
		assert_int_equal(b[eob_at[k]], 0x03);
		for (i = eob_at[k] + 1; i < 256; i++)
			assert_int_equal(b[i], 0);
	}
	free(f);
}

static const char scenario_summary[][80] = {
    "xfdr recover: 5 buffers of 2 threads kept, of 8 in the pool\n",
    "xfdr recover: 2 open buffers closed at their last complete record\n",
    "xfdr recover: 1 never-used buffer dropped\n",
    "xfdr recover: 1 buffer dropped: being claimed",
    "xfdr recover: 1 buffer dropped: stale bytes of an earlier use",
    "xfdr recover: 1 torn tail cut (8 bytes",
};

/* ---- The scenario --------------------------------------------------------------------------- */

static void test_recover_scenario(void **state)
{
	const char *live = write_scenario("a", 0, 0, 0);
	const char *out = scratch_path("a-recovered.xray");
	const char *map = scratch_path("a-recovered.xray.map");
	char want[1024];
	struct child_result r;
	size_t i;

	(void)state;
	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.out_len, 0);
	for (i = 0; i < sizeof(scenario_summary) / sizeof(scenario_summary[0]); i++)
		text_assert_contains(r.err, scenario_summary[i]);
	/* No rate in the locator, the header or a sidecar: 160000000 ticks in 80 ms. */
	text_assert_contains(r.err, "estimated from the buffers' wall clocks as 2000000000 Hz\n");
	snprintf(want, sizeof(want), "xfdr recover: wrote %s\n", out);
	text_assert_contains(r.err, want);
	assert_int_equal(text_count_lines(r.err), 8);
	child_result_free(&r);

	child_xfdr_ok("verify", out, NULL);
	pl_expect_events(out, PL_SCENARIO_EVENTS, 2000000000ull);
	check_rebuilt_bytes(out, 2000000000ull);

	/* No live sidecar: one is made from what the pool says. */
	pl_expect_scenario_map(map, out);
}

/* The live sidecar is carried over, naming OUT; its functions name the events. */
/*
 * `xfdr recover [--force] -o OUT LIVE` with LIVE.map the text live_fmt (its %s: LIVE): it
 * succeeds without estimating the rate (the scenarios below have it in the locator), and
 * OUT.map is exactly want_fmt (its %s: OUT).
 */
static void expect_recovered_map(const char *live, const char *out, int force, const char *live_fmt,
				 const char *want_fmt)
{
	char live_map[256], out_map[256], text[2048], *got;
	struct child_result r;
	size_t n;

	snprintf(live_map, sizeof(live_map), "%s.map", live);
	snprintf(out_map, sizeof(out_map), "%s.map", out);
	snprintf(text, sizeof(text), live_fmt, live);
	pl_write_file(live_map, text, strlen(text));
	if (force)
		child_xfdr(&r, "recover", "--force", "-o", out, live, NULL);
	else
		child_xfdr(&r, "recover", "-o", out, live, NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "estimated"));
	child_result_free(&r);
	got = (char *)pl_read_file(out_map, &n);
	assert_non_null(got);
	snprintf(text, sizeof(text), want_fmt, out);
	text_assert_equal(got, text);
	free(got);
}

static void test_recover_keeps_live_map(void **state)
{
	const char *live = write_scenario("m", 3000000000ull, 0, 0);
	const char *out = scratch_path("m-out.xray");
	struct child_result r;

	(void)state;
	expect_recovered_map(
	    live, out, 0,
	    "xfdr-map\t1\npid\t4242\nprogram\t./prog\ntrace\t%s\ntsc_hz\t0\n"
	    "tsc_hz_method\tcalibrated\nbuffer_size\t256\nbuffer_max\t8\nbuffers_written\t0\n"
	    "thread\t1001\t1\tmain\t0\t0\t0\t0\t0\t0\n"
	    "thread\t1002\t2\tworker\t0\t0\t0\t0\t0\t0\n"
	    "functions\txray\t7\nfunction\t1\tmain\t0x1000\t-\t-\n"
	    "function\t7\tleaf\t0x7000\t-\t-",
	    "xfdr-map\t1\npid\t4242\nprogram\t./prog\ntrace\t%s\ntsc_hz\t3000000000\n"
	    "tsc_hz_method\tcalibrated\nbuffer_size\t256\nbuffer_max\t8\nbuffers_written\t5\n"
	    "thread\t1001\t1\tmain\t0\t0\t0\t0\t0\t0\n"
	    "thread\t1002\t2\tworker\t0\t0\t0\t0\t0\t0\n"
	    "functions\txray\t7\nfunction\t1\tmain\t0x1000\t-\t-\n"
	    "function\t7\tleaf\t0x7000\t-\t-\n");
	pl_expect_events(out, PL_SCENARIO_EVENTS, 3000000000ull);

	/* `xfdr convert OUT` reads OUT.map: the names keep working. */
	child_xfdr(&r, "convert", out, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out, "func-id: 1, function: main, cpu: 0, thread: 1, kind: "
				    "function-enter, tsc: 1000010,");
	text_assert_contains(r.out, "func-id: 7, function: leaf, cpu: 0, thread: 1, kind: "
				    "function-exit, tsc: 161000007,");
	child_result_free(&r);
}

/*
 * A live .map as backing=file leaves it: the head at start without a rate (not known yet), then
 * what the threads appended: a thread's line, function lines, the rate once known, the thread's
 * line again after it renamed itself. OUT.map has one rate, right after its trace line (the
 * locator's, with the live map's method), every other line as it was; a thread's last line
 * names it. Without any rate line in the live map, OUT.map still gets one.
 */
static void test_recover_appended_live_map(void **state)
{
	const char *live = write_scenario("ap", 3000000000ull, 0, 0);
	const char *out = scratch_path("ap-out.xray");
	struct child_result r;

	(void)state;
	expect_recovered_map(
	    live, out, 0,
	    "xfdr-map\t1\npid\t4242\nprogram\t./prog\ntrace\t%s\nbuffer_size\t256\n"
	    "thread\t1001\t1\tmain\t0\t0\t0\t0\t0\t0\n"
	    "function\t1\tmain\t0x1000\t-\t-\n"
	    "tsc_hz\t2999000000\ntsc_hz_method\tcalibrated\n"
	    "function\t7\tleaf\t0x7000\t-\t-\n"
	    "thread\t1001\t1\trenamed\t0\t0\t0\t0\t0\t0\n",
	    "xfdr-map\t1\npid\t4242\nprogram\t./prog\ntrace\t%s\ntsc_hz\t3000000000\n"
	    "tsc_hz_method\tcalibrated\nbuffer_size\t256\n"
	    "thread\t1001\t1\tmain\t0\t0\t0\t0\t0\t0\n"
	    "function\t1\tmain\t0x1000\t-\t-\n"
	    "function\t7\tleaf\t0x7000\t-\t-\n"
	    "thread\t1001\t1\trenamed\t0\t0\t0\t0\t0\t0\n");
	child_xfdr(&r, "convert", "--output-format=trace_event", out, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(
	    r.out, "\"pid\":4242,\"tid\":1001,\"args\":{\"name\":\"renamed\",\"xfdr_thread\":1}");
	assert_null(strstr(r.out, "\"args\":{\"name\":\"main\""));
	child_result_free(&r);

	/* Killed before the rate was known: OUT.map has the one its header got. */
	expect_recovered_map(live, out, 1, "xfdr-map\t1\npid\t4242\n",
			     "xfdr-map\t1\npid\t4242\ntrace\t%s\ntsc_hz\t3000000000\n");
}

/* No rate in the locator: the live header's, else the live sidecar's tsc_hz. */
static void test_recover_rate_sources(void **state)
{
	const char *live = write_scenario("hz", 0, 2500000000ull, 0);
	const char *out = scratch_path("hz-recovered.xray");
	struct child_result r;
	uint64_t hz = 0;
	char map[256];
	char *events;

	(void)state;
	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "estimated"));
	child_result_free(&r);
	events = pl_llvm_events(out, &hz);
	assert_int_equal(hz, 2500000000ull);
	free(events);

	live = write_scenario("hz2", 0, 0, 0);
	out = scratch_path("hz2-recovered.xray");
	snprintf(map, sizeof(map), "%s.map", live);
	pl_write_file(map, "xfdr-map\t1\ntsc_hz\t2200000000\n", 29);
	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "estimated"));
	child_result_free(&r);
	events = pl_llvm_events(out, &hz);
	assert_int_equal(hz, 2200000000ull);
	free(events);
}

/* How often needle is in the n bytes at p (NULs included). */
static int count_in(const char *p, size_t n, const char *needle)
{
	size_t len = strlen(needle);
	const char *at, *end = p + n;
	int k = 0;

	while ((at = memmem(p, (size_t)(end - p), needle, len))) {
		k++;
		p = at + len;
	}
	return k;
}

/*
 * Recover the scenario named name with live .map text map, which holds no usable rate: the rate
 * is estimated from the scenario's wall clocks (2 GHz), said on stderr.
 */
static void expect_rate_estimated(const char *name, const char *map_text)
{
	const char *live = write_scenario(name, 0, 0, 0);
	char map[256], out[256];
	struct child_result r;
	uint64_t hz = 0;
	char *events;

	snprintf(map, sizeof(map), "%s.map", live);
	pl_write_file(map, map_text, strlen(map_text));
	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err, "estimated from the buffers' wall clocks as 2000000000 Hz");
	child_result_free(&r);
	snprintf(out, sizeof(out), "%s-recovered.xray", name);
	events = pl_llvm_events(scratch_path(out), &hz);
	assert_int_equal(hz, 2000000000ull);
	free(events);
}

/*
 * A live .map is an input like any other, and may be hostile: each case below broke recover
 * once (found by tests/fuzz/fuzz_recover.c). A NUL inside a line must not join the next line
 * on (a forged or lost `trace` line); the rate is read from whole lines only, and only from
 * digits (strtoull() would take "-5" for 2^64 - 5).
 */
static void test_recover_hostile_live_map(void **state)
{
	static const char nul_map[] = "xfdr-map\t1\nprogram\t./p\0rog\ntrace\tforged\n";
	static const char kept[] = "program\t./p\0rog\n";
	const char *live = write_scenario("nul", 3000000000ull, 0, 0);
	const char *out = scratch_path("nul-recovered.xray");
	char map[256], out_map[256], text[512], line[256], pad[255 - 8 + 1];
	size_t n;
	char *got;

	(void)state;
	snprintf(map, sizeof(map), "%s.map", live);
	snprintf(out_map, sizeof(out_map), "%s.map", out);
	pl_write_file(map, nul_map, sizeof(nul_map) - 1);
	child_xfdr_ok("recover", live, NULL);
	got = (char *)pl_read_file(out_map, &n);
	assert_non_null(got);
	assert_non_null(memmem(got, n, kept, sizeof(kept) - 1));
	snprintf(line, sizeof(line), "\ntrace\t%s\n", out);
	assert_non_null(memmem(got, n, line, strlen(line)));
	/* One trace line: the forged one was replaced, none was joined to the program line. */
	assert_null(memmem(got, n, "forged", 6));
	assert_int_equal(count_in(got, n, "\ntrace\t"), 1);
	free(got);

	/* A negative rate is no rate. */
	expect_rate_estimated("neg", "xfdr-map\t1\ntsc_hz\t-5\n");
	/*
	 * "tsc_hz\t7" at byte 255 of a long program line is part of that line, not a rate (fgets()
	 * into 256 bytes read the first 255 of the line).
	 */
	memset(pad, 'a', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	snprintf(text, sizeof(text), "xfdr-map\t1\nprogram\t%s%s", pad, "tsc_hz\t7\n");
	expect_rate_estimated("long", text);
}

/* An existing OUT is kept unless --force. */
static void test_recover_refuses_to_overwrite(void **state)
{
	const char *live = write_scenario("o", 0, 0, 0);
	const char *out = scratch_path("o-recovered.xray");
	struct child_result r;
	size_t n;
	uint8_t *b;

	(void)state;
	pl_write_file(out, "keep me", 7);
	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 2); /* a usage error, like any refusal to clobber */
	assert_int_equal(text_count_lines(r.err), 1);
	text_assert_contains(r.err, out);
	text_assert_contains(r.err, "exists (--force replaces it)");
	child_result_free(&r);
	b = pl_read_file(out, &n);
	assert_int_equal(n, 7);
	free(b);

	child_xfdr(&r, "recover", "--force", live, NULL);
	assert_int_equal(r.status, 0);
	child_result_free(&r);
	child_xfdr_ok("verify", out, NULL);

	/* Only OUT.map exists: refused all the same. */
	assert_int_equal(unlink(out), 0);
	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 2);
	assert_int_equal(text_count_lines(r.err), 1);
	text_assert_contains(r.err, ".map exists (--force replaces it)");
	child_result_free(&r);
	assert_false(scratch_exists(out));

	/* OUT must never be one of the inputs, --force or not. */
	child_xfdr(&r, "recover", "-f", "-o", live, live, NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "would replace an input file");
	child_result_free(&r);
}

/* Without FILE.pool: each buffer walked to its first invalid record, said to be a best effort. */
static void test_recover_without_pool(void **state)
{
	const char *live = write_scenario("np", 0, 2000000000ull, 1);
	const char *out = scratch_path("np-recovered.xray");
	struct child_result r;
	char *events;

	(void)state;
	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err, ".pool: not found: best-effort recovery");
	/* Every buffer whose start is a valid preamble: all but the never-used one. */
	text_assert_contains(r.err,
			     "xfdr recover: 7 buffers of 2 threads kept, of 8 in the pool\n");
	text_assert_contains(r.err, "xfdr recover: 1 never-used buffer dropped\n");
	text_assert_contains(r.err, "best effort: ");
	child_result_free(&r);
	child_xfdr_ok("verify", out, NULL);
	/* The stale records are in (nothing tells them apart without the descriptors). */
	events = pl_llvm_events(out, NULL);
	text_assert_contains(events, "t1 function-enter f1 @1000010\n");
	text_assert_contains(events, "t1 function-enter f8 @501\n");
	free(events);
}

/* -v: one line per buffer, saying what became of it and why. */
static void test_recover_verbose(void **state)
{
	const char *live = write_scenario("v", 2000000000ull, 0, 0);
	struct child_result r;

	(void)state;
	child_xfdr(&r, "recover", "-v", live, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err,
			     "xfdr recover: buffer 1: free, used 0, claim 0, thread 0 (tid 0): "
			     "free (never used)\n");
	text_assert_contains(r.err,
			     "xfdr recover: buffer 3: owned, used 72, claim 4, thread 1 "
			     "(tid 1001): kept 64 bytes; stopped at byte 64: expected 16 bytes "
			     "for NewCPUId record, found 8 before the end of the buffer");
	text_assert_contains(r.err, "xfdr recover: buffer 7: full, used 56, claim 6, thread 2 "
				    "(tid 1002): stale");
	child_result_free(&r);
}

/* One buffer only: no span to estimate the rate from, so 1 GHz with a warning. */
static void test_recover_rate_assumed(void **state)
{
	const char *live = scratch_path("one-live.xray"), *out = scratch_path("one-recovered.xray");
	char pool[256];
	struct child_result r;
	struct pl_pool p;
	size_t at;

	(void)state;
	pl_init(&p, 2, 64, 7, 0x10000, 0, 0, 1, 0);
	at = pl_preamble(&p, 1, 9, 5, 0, 0, 100);
	at = pl_fn(&p, 1, at, XFDR_FN_ENTER, 3, 1);
	at = pl_fn(&p, 1, at, XFDR_FN_EXIT, 3, 1);
	pl_desc(&p, 1, PL_OWNED, 1, at, 0, 77, 9, 100, 0);
	pl_write_live(&p, live, 0);
	snprintf(pool, sizeof(pool), "%s.pool", live);
	pl_write_pool(&p, pool);
	pl_free(&p);

	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err, "xfdr recover: 1 buffer of 1 thread kept, of 2 in the pool\n");
	text_assert_contains(r.err, "warning: TSC rate not recorded");
	text_assert_contains(r.err, "assuming 1000000000 Hz");
	child_result_free(&r);
	/* Exactly full after the function record (64 bytes): no EndOfBuffer, still valid. */
	child_xfdr_ok("verify", out, NULL);
	pl_expect_events(out, "t9 function-enter f3 @101\nt9 function-exit f3 @102\n",
			 1000000000ull);
}

/* ---- Errors -----------------------------------------------------------------------------------
 */

/* Run recover on live; exit status, one stderr line starting with want, no output file. */
static void expect_error(const char *path, int status, const char *want)
{
	pl_expect_error("recover", path, status, want);
}

struct pool_break {
	unsigned off;
	unsigned bytes; /* 4 or 8 */
	uint64_t value;
	const char *want; /* after "POOL: " */
};

static void test_recover_errors(void **state)
{
	static const struct pool_break breaks[] = {
	    {0, 8, 0x584f4f5052444658ull /* "XFDRPOOX" */,
	     "offset 0: expected magic \"XFDRPOOL\", found \"XFDRPOOX\""},
	    {8, 4, 2,
	     "offset 8: expected layout version 1 (bytes 01 00 00 00 or 00 00 00 01), "
	     "found bytes 02 00 00 00"},
	    {12, 4, 100, "offset 12: expected header_bytes of 128 to"},
	    {32, 8, 20, "offset 32: expected buffer_bytes of 48 to"},
	    {40, 4, 0, "offset 40: expected buffer_count of 1 to"},
	    {44, 4, 12, "offset 44: expected desc_stride of 8 to 4096, a multiple of 8, found 12"},
	    {68, 4, 70,
	     "offset 68: expected the offset of ctl (8 bytes) inside the 72-byte "
	     "descriptor, found 70"},
	    {80, 4, 69,
	     "offset 80: expected the offset of thread_id (4 bytes) inside the "
	     "72-byte descriptor, found 69"},
	    {24, 8, ~0ull - 100,
	     "offset 24: expected 8 buffers of 256 bytes from buffers_addr to "
	     "fit below 2^64"},
	};
	const char *live = scratch_path("e-live.xray");
	char pool[256], want[512];
	struct child_result r;
	struct pl_pool p;
	size_t i;

	(void)state;
	snprintf(pool, sizeof(pool), "%s.pool", live);

	/* No such file: an input that cannot be opened is a 2, as for every verb. */
	snprintf(want, sizeof(want), "xfdr recover: %s: No such file or directory",
		 scratch_path("nothing-live.xray"));
	expect_error(scratch_path("nothing-live.xray"), 2, want);

	/* A broken field of the locator, one at a time. */
	for (i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
		pl_scenario(&p, 0x7f0000000000ull, 0, 0, 1);
		pl_write_live(&p, live, 0);
		if (breaks[i].bytes == 4)
			pl_loc32(&p, breaks[i].off, (uint32_t)breaks[i].value);
		else
			pl_loc64(&p, breaks[i].off, breaks[i].value);
		pl_write_pool(&p, pool);
		pl_free(&p);
		snprintf(want, sizeof(want), "%s: %s", pool, breaks[i].want);
		expect_error(live, 1, want);
	}

	/* A truncated .pool: the descriptors end early; the locator itself cut. */
	pl_scenario(&p, 0x7f0000000000ull, 0, 0, 1);
	pl_write_live(&p, live, 0);
	pl_write_file(pool, p.meta, 128 + 3 * PL_STRIDE);
	snprintf(want, sizeof(want),
		 "%s: offset 344: expected 8 descriptors of 72 bytes from offset 128 (704 bytes "
		 "in all), found the end of the file",
		 pool);
	expect_error(live, 1, want);
	pl_write_file(pool, p.meta, 40);
	snprintf(want, sizeof(want),
		 "%s: offset 40: expected a 128-byte pool locator, found 40 "
		 "bytes",
		 pool);
	expect_error(live, 1, want);
	pl_write_file(pool, p.meta, 0);
	snprintf(want, sizeof(want),
		 "%s: offset 0: expected a 128-byte pool locator, found an "
		 "empty file\n",
		 pool);
	expect_error(live, 1, want);

	/* The live file: bad header, a buffer size the pool does not have, empty. */
	pl_write_pool(&p, pool);
	pl_write_live(&p, live, 0);
	pl_write_file(live, "\x02\x00\x01\x00", 4);
	snprintf(want, sizeof(want), "%s: offset 0: expected a 32-byte file header, found 4 bytes",
		 live);
	expect_error(live, 1, want);
	{
		uint8_t h[32] = {2, 0, 1, 0};

		pl_write_file(live, h, sizeof(h));
		snprintf(want, sizeof(want), "%s: offset 0: expected version 1", live);
		expect_error(live, 1, want);
		h[0] = 1;
		h[1] = 0;
		h[17] = 2; /* buffer_size 512 */
		pl_write_file(live, h, sizeof(h));
		snprintf(want, sizeof(want),
			 "%s: offset 16: expected buffer_size 256 (the "
			 "buffer_bytes of %s), found 512",
			 live, pool);
		expect_error(live, 1, want);
	}
	pl_write_file(live, "", 0);
	snprintf(want, sizeof(want),
		 "%s: offset 0: expected a 32-byte file header, found an "
		 "empty file",
		 live);
	expect_error(live, 1, want);
	pl_free(&p);

	/* OUT where nothing can be created. */
	live = write_scenario("w", 0, 0, 0);
	child_xfdr(&r, "recover", "-o", "/nonexistent-dir/w.xray", live, NULL);
	assert_int_equal(r.status, 1);
	assert_int_equal(text_count_lines(r.err), 1);
	text_assert_contains(r.err, "xfdr recover: /nonexistent-dir/w.xray: cannot create: No such "
				    "file or directory\n");
	child_result_free(&r);

	/* A directory. */
	snprintf(want, sizeof(want), "xfdr recover: %s: Is a directory", scratch_dir);
	child_xfdr(&r, "recover", "-o", scratch_path("dir.xray"), scratch_dir, NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, want);
	child_result_free(&r);
}

/* Inputs that exist but cannot be opened or are no regular files: exit 2, nothing written. */
static void test_recover_unreadable_inputs(void **state)
{
	const char *live = write_scenario("u", 0, 0, 0);
	char pool[256], map[256], want[512], fifo[256];

	(void)state;
	snprintf(pool, sizeof(pool), "%s.pool", live);
	snprintf(map, sizeof(map), "%s.map", live);

	/* A FIFO is refused at once, not waited on. */
	snprintf(fifo, sizeof(fifo), "%s/u-fifo-live.xray", scratch_dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(want, sizeof(want), "xfdr recover: %s: not a regular file\n", fifo);
	expect_error(fifo, 2, want);

	/* FILE.pool and FILE.map are inputs too, when present. */
	assert_int_equal(rename(pool, scratch_path("u-saved.pool")), 0);
	assert_int_equal(mkdir(pool, 0700), 0);
	snprintf(want, sizeof(want), "xfdr recover: %s: Is a directory\n", pool);
	expect_error(live, 2, want);
	assert_int_equal(rmdir(pool), 0);
	assert_int_equal(rename(scratch_path("u-saved.pool"), pool), 0);
	assert_int_equal(mkdir(map, 0700), 0);
	snprintf(want, sizeof(want), "xfdr recover: %s: Is a directory\n", map);
	expect_error(live, 2, want);
	assert_int_equal(rmdir(map), 0);

	/* Permission denied (root reads everything: nothing to check then). */
	if (geteuid() != 0) {
		assert_int_equal(chmod(live, 0), 0);
		snprintf(want, sizeof(want), "xfdr recover: %s: Permission denied\n", live);
		expect_error(live, 2, want);
		assert_int_equal(chmod(live, 0600), 0);
	}
}

/* A live file shorter than the pool says: the missing buffers are counted, the rest kept. */
static void test_recover_short_live_file(void **state)
{
	const char *live = write_scenario("s", 2000000000ull, 0, 0);
	const char *out = scratch_path("s-recovered.xray");
	struct child_result r;
	size_t n;
	uint8_t *b = pl_read_file(live, &n);

	(void)state;
	assert_non_null(b);
	pl_write_file(live, b, 32 + 6 * 256); /* buffers 6 and 7 gone */
	free(b);
	child_xfdr(&r, "recover", live, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err,
			     "xfdr recover: 4 buffers of 2 threads kept, of 8 in the pool\n");
	text_assert_contains(r.err, "xfdr recover: 2 buffers dropped: missing from the live file");
	child_result_free(&r);
	child_xfdr_ok("verify", out, NULL);
}

/* ---- Usage --------------------------------------------------------------------------------------
 */

static void test_recover_usage(void **state)
{
	struct child_result r;

	(void)state;
	pl_expect_usage("xfdr recover: missing FILE", "recover", NULL);
	pl_expect_usage("one FILE at a time; extra operand 'b'", "recover", "a", "b", NULL);
	pl_expect_usage("'--frob'", "recover", "--frob", "a", NULL);
	pl_expect_usage("option '-o' needs an argument", "recover", "a", "-o", NULL);

	pl_expect_help("recover", "--force",
		       "2 usage error, FILE missing or unreadable, or OUT\nexists", NULL);

	child_xfdr(&r, "--help", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out, "\n  recover FILE ");
	text_assert_contains(r.out, "\n  core CORE ");
	/* recover and core follow the one exit status convention: no exception to state. */
	text_assert_contains(r.out, "2 usage error or\nunreadable file.\n");
	assert_null(strstr(r.out, "recover and core:"));
	child_result_free(&r);

	/* The default OUT of a name without -live.xray. */
	{
		const char *live = write_scenario("plain", 0, 0, 0);
		char path[256], pool[256];
		uint8_t *b;
		size_t n;

		snprintf(path, sizeof(path), "%s/plain.xray", scratch_dir);
		snprintf(pool, sizeof(pool), "%s/plain.xray.pool", scratch_dir);
		assert_int_equal(rename(live, path), 0);
		snprintf(path, sizeof(path), "%s.pool", live);
		assert_int_equal(rename(path, pool), 0);
		snprintf(path, sizeof(path), "%s/plain.xray", scratch_dir);
		child_xfdr(&r, "recover", path, NULL);
		assert_int_equal(r.status, 0);
		child_result_free(&r);
		snprintf(path, sizeof(path), "%s/plain.xray.recovered.xray", scratch_dir);
		b = pl_read_file(path, &n);
		assert_non_null(b);
		free(b);
	}
}

/* ---- --salvage: a trace file cut short (a flush killed midway leaves NAME.xray.part) -------- */

/* Function records by hand (spec table: bit 0 clear, action in bits 1-3, id from bit 4). */
static void fn_rec(struct img *m, unsigned action, uint32_t fid, uint32_t delta)
{
	PUT(m, L32(fid << 4 | action << 1), L32(delta));
}

/*
 * Buffers of 128 bytes: 0 thread 1 (f1 entered and exited), 1 thread 2 (f2), 2 thread 1 with
 * an invalid record after its preamble, at 288 + 48 (metadata kind 9, unknown in version 1),
 * 3 thread 2 (f3); then `tail` bytes of a fifth, cut by the kill.
 */
static const char *write_cut(const char *name, size_t tail)
{
	struct img m;
	uint16_t tid[] = {1, 2, 1, 2};
	uint32_t fid[] = {1, 2, 9, 3};
	size_t i;

	img_init(&m, 128);
	for (i = 0; i < 4; i++) {
		img_buffer(&m, tid[i], 100, (uint32_t)i);
		PUT(&m, 0x05, L16(0), L64(1000 * (i + 1)), Z5); /* NewCPUId cpu 0 */
		if (i == 2)
			PUT(&m, 0x13, Z15); /* kind 9 */
		fn_rec(&m, 0, fid[i], 10);
		fn_rec(&m, 1, fid[i], 5);
		img_close(&m);
	}
	img_buffer(&m, 1, 100, 9);
	PUT(&m, 0x05, L16(0), L64(9000), Z5);
	assert_true(tail <= m.len - 4 * 128 - 32);
	m.len = 32 + 4 * 128 + tail;
	return scratch_write(name, m.b, m.len);
}

static void test_salvage_part(void **state)
{
	static const char want_events[] = "t1 function-enter f1 @1010\n"
					  "t1 function-exit f1 @1015\n"
					  "t2 function-enter f2 @2010\n"
					  "t2 function-exit f2 @2015\n"
					  "t2 function-enter f3 @4010\n"
					  "t2 function-exit f3 @4015\n";
	const char *part = write_cut("run-7-0.xray.part", 40);
	const char *out = scratch_path("run-7-0-salvaged.xray");
	const char *out_map = scratch_path("run-7-0-salvaged.xray.map");
	struct child_result r;
	char want[1024];
	char *map;
	size_t n;

	(void)state;
	scratch_write_text("run-7-0.xray.map",
			   "xfdr-map\t1\npid\t7\ntrace\trun-7-0.xray\n"
			   "tsc_hz\t2000000000\nfunction\t1\tmain\t0x1\t-\t-\n");
	/* .part implies --salvage. */
	child_xfdr(&r, "recover", part, NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want),
		 "xfdr recover: %s: offset 336: buffer 2 left out (invalid): expected a metadata "
		 "record kind 0-6 (NewBuffer .. CallArgument), found kind 9\n"
		 "xfdr recover: %s: kept 3 of 4 whole buffers\n"
		 "xfdr recover: %s: left out 1 invalid buffer (128 bytes)\n"
		 "xfdr recover: %s: offset 544: discarded 40 bytes, a partial buffer (40 of 128 "
		 "bytes)\n"
		 "xfdr recover: wrote %s\n",
		 part, part, part, part, out);
	text_assert_equal(r.err, want);
	child_result_free(&r);
	child_xfdr_ok("verify", out, NULL);
	/* llvm-xray reads the whole buffers, and nothing else. */
	pl_expect_events(out, want_events, 2000000000ull);
	/* The run's sidecar, naming the salvaged file. */
	map = (char *)pl_read_file(out_map, &n);
	assert_non_null(map);
	snprintf(want, sizeof(want),
		 "xfdr-map\t1\npid\t7\ntrace\t%s\ntsc_hz\t2000000000\n"
		 "function\t1\tmain\t0x1\t-\t-\n",
		 out);
	text_assert_equal(map, want);
	free(map);

	/* It exists now: --force replaces it; -o names another. */
	child_xfdr(&r, "recover", part, NULL);
	assert_int_equal(r.status, 2);
	child_result_free(&r);
	child_xfdr_ok("recover", "--force", part, NULL);
	child_xfdr_ok("recover", "-o", scratch_path("other.xray"), part, NULL);
	pl_expect_events(scratch_path("other.xray"), want_events, 0);
}

/* --salvage on a whole file keeps it all; on a header alone, writes a header alone. */
static void test_salvage_whole_and_empty(void **state)
{
	const char *path = write_cut("whole.xray", 0);
	struct child_result r;
	char want[1024];
	struct img m;

	(void)state;
	child_xfdr(&r, "recover", "--salvage", path, NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "xfdr recover: %s: kept 3 of 4 whole buffers\n", path);
	text_assert_contains(r.err, want);
	snprintf(want, sizeof(want), "xfdr recover: %s: no partial buffer at the end\n", path);
	text_assert_contains(r.err, want);
	child_result_free(&r);
	child_xfdr_ok("verify", scratch_path("whole-salvaged.xray"), NULL);
	/* No sidecar: one made from the header. */
	assert_true(scratch_exists(scratch_path("whole-salvaged.xray.map")));

	img_init(&m, 128);
	path = scratch_write("cut-in-header.xray.part", m.b, 32);
	child_xfdr(&r, "recover", path, NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "xfdr recover: %s: kept 0 of 0 whole buffers\n", path);
	text_assert_contains(r.err, want);
	child_result_free(&r);
	child_xfdr_ok("verify", scratch_path("cut-in-header-salvaged.xray"), NULL);

	/* Fewer than 32 bytes: nothing to salvage, said as the reader says it. */
	path = scratch_write("short.xray.part", m.b, 20);
	snprintf(want, sizeof(want),
		 "%s: offset 0: expected a 32-byte file header, found 20 bytes\n", path);
	child_xfdr_refused(want, "recover", path, NULL);
	assert_false(scratch_exists(scratch_path("short-salvaged.xray")));
}

/* ---- What recover writes, and where (issue 25) ------------------------------------------ */

/*
 * --force replaces a regular file, nothing else (tests/support/rebuild_outputs.h), also
 * through --salvage, which shares the check.
 */
static void test_recover_force_only_regular_files(void **state)
{
	char live[256];

	(void)state;
	snprintf(live, sizeof(live), "%s", write_scenario("nr", 0, 0, 0));
	rebuild_expect_only_regular_replaced("recover", live, "--salvage");
}

/*
 * A live .map the reader would refuse (an id named twice, a frame index of -1, an id written
 * "+2") is carried over without those lines, each named on stderr with its line and why: what
 * recover writes, convert and dump read.
 */
static void test_recover_drops_bad_live_map_lines(void **state)
{
	const char *live = write_scenario("bm", 3000000000ull, 0, 0);
	const char *out = scratch_path("bm-out.xray");
	char live_map[256], out_map[256], text[2048], want[2048], *got;
	struct child_result r;
	size_t n;

	(void)state;
	snprintf(live_map, sizeof(live_map), "%s.map", live);
	snprintf(out_map, sizeof(out_map), "%s.map", out);
	snprintf(text, sizeof(text),
		 "xfdr-map\t1\npid\t4242\ntrace\t%s\ntsc_hz\t0\nfunctions\txray\t7\n"
		 "function\t1\tmain\t0x1000\t-\t-\n"
		 "function\t7\tleaf\t0x7000\t-\t-\n"
		 "function\t1\tagain\t0x1001\t-\t-\n"
		 "crash\t11\tSIGSEGV\t1\t0x0\t1001\n"
		 "frame\t-1\t0x10\tmain\t-\t-\n"
		 "frame\t0\t0x20\tleaf\t-\t-\n"
		 "function\t+2\tplus\t0x2\t-\t-\n",
		 live);
	pl_write_file(live_map, text, strlen(text));

	child_xfdr(&r, "recover", "-o", out, live, NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want),
		 "xfdr recover: %s: line 8: function id 1 is named twice ('main' at line 6, "
		 "'again' here); left out of %s\n"
		 "xfdr recover: %s: line 10: expected a frame index (decimal) after "
		 "'frame<TAB>', found 'frame\t-1\t0x10\tmain\t-\t-'; left out of %s\n"
		 "xfdr recover: %s: line 12: expected a function id (0..268435455) after "
		 "'function<TAB>', found 'function\t+2\tplus\t0x2\t-\t-'; left out of %s\n",
		 live_map, out_map, live_map, out_map, live_map, out_map);
	text_assert_contains(r.err, want);
	child_result_free(&r);

	got = (char *)pl_read_file(out_map, &n);
	assert_non_null(got);
	snprintf(want, sizeof(want),
		 "xfdr-map\t1\npid\t4242\ntrace\t%s\ntsc_hz\t3000000000\nfunctions\txray\t7\n"
		 "function\t1\tmain\t0x1000\t-\t-\n"
		 "function\t7\tleaf\t0x7000\t-\t-\n"
		 "crash\t11\tSIGSEGV\t1\t0x0\t1001\n"
		 "frame\t0\t0x20\tleaf\t-\t-\n",
		 out);
	text_assert_equal(got, want);
	free(got);

	/* The other verbs read it. */
	child_xfdr(&r, "convert", out, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out, "func-id: 1, function: main, cpu: 0, thread: 1, kind: "
				    "function-enter, tsc: 1000010,");
	child_result_free(&r);
	child_xfdr_ok("dump", out, NULL);
	child_xfdr_ok("convert", "-f", "trace_event", out, NULL);
}

/* One valid buffer of bs bytes for thread 1: f1 entered at TSC 1010 and exited at 1015. */
static void one_buffer(struct img *m)
{
	img_buffer(m, 1, 100, 0);
	PUT(m, 0x05, L16(0), L64(1000), Z5); /* NewCPUId cpu 0 */
	fn_rec(m, 0, 1, 10);
	fn_rec(m, 1, 1, 5);
	img_close(m);
}

/*
 * --salvage of a 4 GiB sparse file holding one buffer, 3 GiB in: the holes are skipped, not
 * read buffer by buffer (each run of them is one line on stderr, not a line per buffer), and
 * OUT holds the header and that buffer only.
 */
static void test_salvage_sparse_file(void **state)
{
	const uint64_t bs = 4096, size = 4ull << 30, at = 32 + (3ull << 30) / bs * bs;
	const char *path = scratch_path("sparse.xray.part");
	const char *out = scratch_path("sparse-salvaged.xray");
	struct child_spec how = {
	    .out = {.to = CHILD_CAPTURE}, .err = {.to = CHILD_CAPTURE}, .timeout_s = 300};
	struct child_result r;
	struct stat st;
	struct img m;
	char want[256];
	int fd;

	(void)state;
	img_init(&m, bs);
	one_buffer(&m);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	assert_int_equal(pwrite(fd, m.b, 32, 0), 32);
	assert_int_equal(pwrite(fd, m.b + 32, bs, (off_t)at), (ssize_t)bs);
	assert_int_equal(close(fd), 0);
	assert_int_equal(stat(path, &st), 0);
	if ((uint64_t)st.st_blocks * 512 > 1u << 20) {
		skip(); /* the file system here does not keep files sparse */
		return;
	}

	child_xfdr_to(&r, &how, "recover", path, NULL);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "xfdr recover: %s: kept 1 of %llu whole buffers\n", path,
		 (unsigned long long)((size - 32) / bs));
	text_assert_contains(r.err, want);
	text_assert_contains(r.err, " left out (a hole: never written)\n");
	/* A line per run of holes and per buffer read around the data: a handful, not a million. */
	assert_true(text_count_lines(r.err) <= 12);
	child_result_free(&r);

	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_size, 32 + bs);
	assert_true((uint64_t)st.st_blocks * 512 <= 64 * 1024);
	pl_expect_events(out, "t1 function-enter f1 @1010\nt1 function-exit f1 @1015\n", 0);
}

/*
 * A signal in the middle of writing OUT: SIGINT, SIGTERM or SIGHUP still ends recover, by that
 * signal, and no temporary file is left. Deterministic: with -v recover writes a line per
 * buffer on stderr while OUT is being written; stderr is a pipe of one page the test does not
 * read, so recover blocks inside that window until the signal comes.
 */
static void test_recover_interrupted_leaves_no_tmp(void **state)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	char *argv[] = {(char *)child_xfdr_bin(), "recover", "-v", "--salvage", NULL, NULL};
	char path[256], out[256], out_map[256];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t dfl, none;
	struct img m;
	char drain[4096];
	size_t i, k;
	int p[2], status, tries;
	pid_t pid;

	(void)state;
	/* 2000 valid buffers of 128 bytes: 2000 "buffer N kept" lines, far more than a page. */
	img_init(&m, 128);
	one_buffer(&m);
	snprintf(path, sizeof(path), "%s", scratch_write("int.xray", m.b, 32));
	for (k = 0; k < 2000; k++)
		scratch_append("int.xray", m.b + 32, 128);
	snprintf(out, sizeof(out), "%s", scratch_path("int-salvaged.xray"));
	snprintf(out_map, sizeof(out_map), "%s", scratch_path("int-salvaged.xray.map"));
	argv[4] = path;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		assert_int_equal(pipe(p), 0);
		assert_true(fcntl(p[0], F_SETPIPE_SZ, 4096) > 0);
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, p[1], 2);
		posix_spawn_file_actions_addclose(&fa, p[0]);
		posix_spawn_file_actions_addclose(&fa, p[1]);
		/* The signals as a shell starts a program: default actions, none blocked. */
		posix_spawnattr_init(&attr);
		sigemptyset(&dfl);
		sigaddset(&dfl, SIGTERM);
		sigaddset(&dfl, SIGINT);
		sigaddset(&dfl, SIGHUP);
		sigemptyset(&none);
		posix_spawnattr_setsigdefault(&attr, &dfl);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
		assert_int_equal(posix_spawn(&pid, argv[0], &fa, &attr, argv, environ), 0);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&attr);
		close(p[1]);

		/* The temporary file appears, and stays: recover waits on the full pipe. */
		for (tries = 0; tries < 1000 && scratch_count_named(".tmp.") == 0; tries++)
			usleep(10000);
		assert_int_equal(scratch_count_named(".tmp."), 1);
		assert_int_equal(waitpid(pid, &status, WNOHANG), 0);

		assert_int_equal(kill(pid, sigs[i]), 0);
		while (read(p[0], drain, sizeof(drain)) > 0)
			;
		close(p[0]);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), sigs[i]);
		assert_int_equal(scratch_count_named(".tmp."), 0);
		assert_false(scratch_exists(out));
		assert_false(scratch_exists(out_map));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_recover_scenario),
	    cmocka_unit_test(test_recover_keeps_live_map),
	    cmocka_unit_test(test_recover_appended_live_map),
	    cmocka_unit_test(test_recover_rate_sources),
	    cmocka_unit_test(test_recover_hostile_live_map),
	    cmocka_unit_test(test_recover_refuses_to_overwrite),
	    cmocka_unit_test(test_recover_without_pool),
	    cmocka_unit_test(test_recover_verbose),
	    cmocka_unit_test(test_recover_rate_assumed),
	    cmocka_unit_test(test_recover_errors),
	    cmocka_unit_test(test_recover_unreadable_inputs),
	    cmocka_unit_test(test_recover_short_live_file),
	    cmocka_unit_test(test_recover_usage),
	    cmocka_unit_test(test_salvage_part),
	    cmocka_unit_test(test_salvage_whole_and_empty),
	    cmocka_unit_test(test_recover_force_only_regular_files),
	    cmocka_unit_test(test_recover_drops_bad_live_map_lines),
	    cmocka_unit_test(test_salvage_sparse_file),
	    cmocka_unit_test(test_recover_interrupted_leaves_no_tmp),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
