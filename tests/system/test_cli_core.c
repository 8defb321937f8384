/*
 * tests/system/test_cli_core.c - `xfdr core`: a valid trace from the xfdr pool in a core dump.
 *
 * The cores are minimal ELF64 files of type ET_CORE built in the test (tests/support/
 * pool_layout.h): PT_LOAD segments at chosen addresses holding a locator page with the
 * descriptors, the buffers (split across segments, so that a buffer straddles two), decoys
 * (an "XFDRPOOL" at a page start that is no valid locator, a whole valid locator copy that is
 * not page-aligned), memory that was not dumped (filesz 0) and a note segment. The pool is the
 * scenario `xfdr recover` is tested with; llvm-xray (the independent oracle) lists what the
 * output holds. Errors: one line naming the file (and the offset for a malformed file),
 * nothing written; exit 1 for a malformed core, no pool or a write error, 2 for a usage error,
 * a core that cannot be opened or an OUT that exists without --force.
 */
#include <errno.h>
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
#include "tests/support/pool_layout.h"
#include "tests/support/rebuild_outputs.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "xfdr/format.h"

#define LOC 0x7f1234560000ull	/* the locator page */
#define BUFS 0x7f1234600000ull	/* the buffers */
#define NAMES 0x7f1234700000ull /* the names directory's page, when the core has one */
#define RODATA 0x400000ull
#define PAGE 4096u

/* Two pages of "read-only data": a page-aligned decoy and an unaligned valid locator copy. */
static void make_rodata(uint8_t *ro, const struct pl_pool *p)
{
	memset(ro, 0xab, 2 * PAGE);
	memcpy(ro + 0x10, p->meta, p->meta_bytes);
	memcpy(ro + PAGE, "XFDRPOOL", 8);
	memset(ro + PAGE + 8, 7, 120); /* layout version 0x07070707 */
}

/*
 * The scenario's core: a note, the rodata, undumped memory, the locator page, and the
 * buffers in segments split at `splits` (buffer-area offsets, ascending, ending with 2048),
 * each segment dumped unless its bit in `holes` is set.
 */
static const char *write_core_names(const char *name, const size_t *splits, size_t nsplits,
				    unsigned holes, const uint8_t *names)
{
	const char *path = scratch_path(name);
	static uint8_t ro[2 * PAGE], page[PAGE];
	struct pl_seg segs[16];
	struct pl_pool p;
	size_t n = 0, i, from = 0;

	pl_scenario(&p, BUFS, LOC, 0, 1);
	if (names)
		pl_loc64(&p, XFDR_POOL_NAMES_ADDR_OFF, NAMES);
	make_rodata(ro, &p);
	memset(page, 0, sizeof(page));
	memcpy(page, p.meta, p.meta_bytes);
	segs[n++] = (struct pl_seg){.type = 4 /* PT_NOTE */};
	segs[n++] = (struct pl_seg){RODATA, ro, sizeof(ro), sizeof(ro), 0};
	segs[n++] = (struct pl_seg){0x500000, NULL, 0, 0x10000, 0};
	segs[n++] = (struct pl_seg){LOC, page, sizeof(page), sizeof(page), 0};
	for (i = 0; i < nsplits; i++) {
		size_t len = splits[i] - from;

		segs[n++] =
		    (struct pl_seg){BUFS + from, p.bufs + from, holes >> i & 1 ? 0 : len, len, 0};
		from = splits[i];
	}
	if (names)
		segs[n++] = (struct pl_seg){NAMES, names, 4 * PAGE, 4 * PAGE, 0};
	pl_write_core(path, 4, segs, n);
	pl_free(&p);
	return path;
}

static const char *write_core(const char *name, const size_t *splits, size_t nsplits,
			      unsigned holes)
{
	return write_core_names(name, splits, nsplits, holes, NULL);
}

static const char *scenario_core(const char *name)
{
	/* Buffer 2 (bytes 512-767) straddles the two segments. */
	static const size_t splits[] = {640, 2048};

	return write_core(name, splits, 2, 0);
}

/* ---- The scenario ------------------------------------------------------------------------ */

static void test_core_scenario(void **state)
{
	const char *core = scenario_core("scenario.core");
	char out[256], map[256], want[1024];
	struct child_result r;

	(void)state;
	snprintf(out, sizeof(out), "%s.xray", core);
	snprintf(map, sizeof(map), "%s.xray.map", core);
	child_xfdr(&r, "core", core, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.out_len, 0);
	text_assert_contains(r.err, "xfdr core: 5 buffers of 2 threads kept, of 8 in the pool\n");
	text_assert_contains(r.err,
			     "xfdr core: 2 open buffers closed at their last complete record\n");
	text_assert_contains(r.err, "xfdr core: 1 never-used buffer dropped\n");
	text_assert_contains(r.err, "xfdr core: 1 buffer dropped: being claimed");
	text_assert_contains(r.err, "xfdr core: 1 buffer dropped: stale bytes of an earlier use");
	text_assert_contains(r.err, "xfdr core: 1 torn tail cut (8 bytes");
	text_assert_contains(r.err, "estimated from the buffers' wall clocks as 2000000000 Hz\n");
	snprintf(want, sizeof(want), "xfdr core: wrote %s\n", out);
	text_assert_contains(r.err, want);
	/* One pool: the decoys are not mentioned. */
	assert_null(strstr(r.err, "pools"));
	text_assert_contains(r.err, "scenario.core: no names of threads or functions: the pool "
				    "locator points at no names directory (recorded by an older "
				    "xfdr)\n");
	assert_int_equal(text_count_lines(r.err), 9);
	child_result_free(&r);

	child_xfdr_ok("verify", out, NULL);
	pl_expect_events(out, PL_SCENARIO_EVENTS, 2000000000ull);

	pl_expect_scenario_map(map, out);

	/* Again: OUT exists now, a usage error like any refusal to clobber. */
	child_xfdr(&r, "core", core, NULL);
	assert_int_equal(r.status, 2);
	assert_int_equal(text_count_lines(r.err), 1);
	text_assert_contains(r.err, "exists (--force replaces it)");
	child_result_free(&r);
	child_xfdr(&r, "core", "--force", "-o", scratch_path("scenario-out.xray"), core, NULL);
	assert_int_equal(r.status, 0);
	child_result_free(&r);
	child_xfdr_ok("verify", scratch_path("scenario-out.xray"), NULL);
	assert_true(scratch_exists(scratch_path("scenario-out.xray.map")));

	/* OUT must never be the core, --force or not. */
	child_xfdr(&r, "core", "-f", "-o", core, core, NULL);
	assert_int_equal(r.status, 2);
	assert_int_equal(text_count_lines(r.err), 1);
	text_assert_contains(r.err, "OUT would replace the core file");
	child_result_free(&r);
}

/* ---- Names: the "XFDRNAMS" directory, built from format.h's offsets ---------------------- */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

/* A slot of this test's own layout (stride 64): tid 8, thread id 12, session 20, names 24, 40. */
static void put_slot(uint8_t *s, uint32_t tid, uint32_t id, uint32_t session, const char *name,
		     const char *exit_name)
{
	put32(s + 8, tid);
	put32(s + 12, id);
	put32(s + 20, session);
	memcpy(s + 24, name, strlen(name));
	memcpy(s + 40, exit_name, strlen(exit_name));
}

/*
 * The names page(s) at NAMES: three slots (the scenario's threads 1 and 2 of session 1, one
 * still running, one exited under a new name, and a thread of session 0), an XRay table of 3
 * ids (2 without a function) and a chunked map of ids 1 .. 6: chunk 0 holds 1 (live), 2 (lost
 * a race) and 3 (live, listing bits above the state); chunk 1 was never mapped; chunk 2 is past
 * the next id and points nowhere.
 */
static void make_names(uint8_t *d)
{
	uint8_t *src = d + XFDR_NAMES_HEADER_BYTES, *node;

	memset(d, 0, 4 * PAGE);
	memcpy(d, "XFDRNAMS", 8);
	put32(d + XFDR_NAMES_VERSION_OFF, 1);
	put32(d + XFDR_NAMES_BYTES_OFF, 64 + 2 * 64);
	put64(d + XFDR_NAMES_SLOTS_ADDR_OFF, NAMES + 0x400);
	put32(d + XFDR_NAMES_SLOT_COUNT_OFF, 3);
	put32(d + XFDR_NAMES_SLOT_STRIDE_OFF, 64);
	put32(d + XFDR_NAMES_TID_AT_OFF, 8);
	put32(d + XFDR_NAMES_THREAD_ID_AT_OFF, 12);
	put32(d + XFDR_NAMES_ID_SESSION_AT_OFF, 20);
	put32(d + XFDR_NAMES_NAME_AT_OFF, 24);
	put32(d + XFDR_NAMES_EXIT_NAME_AT_OFF, 40);
	put32(d + XFDR_NAMES_SOURCE_COUNT_OFF, 2);
	put_slot(d + 0x400, 1001, 1, 1, "main", "");
	put_slot(d + 0x440, 1002, 2, 1, "worker", "worker-done");
	put_slot(d + 0x480, 1003, 1, 0, "stale", "");

	memcpy(src, "xray", 4);
	put32(src + XFDR_NAMES_SRC_KIND_OFF, XFDR_NAMES_TABLE);
	put32(src + XFDR_NAMES_SRC_COUNT_OFF, 3);
	put64(src + XFDR_NAMES_SRC_TABLE_ADDR_OFF, NAMES + 0x800);
	put64(d + 0x800, 0x401000);
	put64(d + 0x810, 0x401200);

	src += XFDR_NAMES_SOURCE_BYTES;
	memcpy(src, "cyg", 3);
	put32(src + XFDR_NAMES_SRC_KIND_OFF, XFDR_NAMES_CHUNKS);
	put64(src + XFDR_NAMES_SRC_TABLE_ADDR_OFF, NAMES + 0x900);
	put64(src + XFDR_NAMES_SRC_COUNT_ADDR_OFF, NAMES + 0x8f0);
	put32(src + XFDR_NAMES_SRC_CHUNK_COUNT_OFF, 4);
	put32(src + XFDR_NAMES_SRC_CHUNK_IDS_OFF, 4);
	put32(src + XFDR_NAMES_SRC_NODE_STRIDE_OFF, 24);
	put32(src + XFDR_NAMES_SRC_ADDR_AT_OFF, 0);
	put32(src + XFDR_NAMES_SRC_STATE_AT_OFF, 16);
	put32(src + XFDR_NAMES_SRC_STATE_MASK_OFF, 0xff);
	put32(src + XFDR_NAMES_SRC_STATE_LIVE_OFF, 1);
	put32(d + 0x8f0, 7);
	put64(d + 0x900, NAMES + 0xa00);
	put64(d + 0x910, 0x7f0000000000ull); /* chunk 2: ids 8 .. 11, never read */
	node = d + 0xa00 + 24;
	put64(node, 0x402000);
	put32(node + 16, 1);
	node += 24;
	put64(node, 0x402100);
	put32(node + 16, 2);
	node += 24;
	put64(node, 0x402300);
	put32(node + 16, 0x301);
}

/*
 * With a names directory, the threads get their names and every function id its address;
 * a core whose notes name no file leaves the functions unnamed, and says so.
 */
static void test_core_names(void **state)
{
	static const size_t splits[] = {640, 2048};
	static uint8_t names[4 * PAGE];
	const char *core;
	char out[256], map[256];
	struct child_result r;
	char *text;
	size_t n;

	(void)state;
	make_names(names);
	core = write_core_names("names.core", splits, 2, 0, names);
	snprintf(out, sizeof(out), "%s.xray", core);
	snprintf(map, sizeof(map), "%s.xray.map", core);
	child_xfdr(&r, "core", core, NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "no names"));
	text_assert_contains(r.err, "names.core: 4 functions have no name (0 of the 0 files it had "
				    "mapped are not on this disk, or have no symbols for them)\n");
	child_result_free(&r);
	child_xfdr_ok("verify", out, NULL);
	text = (char *)pl_read_file(map, &n);
	assert_non_null(text);
	text_assert_contains(text, "buffers_written\t5\n"
				   "thread\t1001\t1\tmain\t0\t0\t0\t0\t0\t0\t0\t0\t0\n"
				   "thread\t1002\t2\tworker-done\t0\t0\t0\t0\t0\t0\t0\t0\t0\n"
				   "functions\txray\t3\n"
				   "function\t1\t<unknown>\t0x401000\t-\t-\n"
				   "function\t3\t<unknown>\t0x401200\t-\t-\n"
				   "functions\tcyg\t6\n"
				   "function\t1\t<unknown>\t0x402000\t-\t-\n"
				   "function\t3\t<unknown>\t0x402300\t-\t-\n"
				   "functions_unnamed\t4\n");
	assert_null(strstr(text, "stale"));
	free(text);
}

/* --force replaces a regular file, nothing else (tests/support/rebuild_outputs.h). */
static void test_core_force_only_regular_files(void **state)
{
	char core[256];

	(void)state;
	snprintf(core, sizeof(core), "%s", scenario_core("nr.core"));
	rebuild_expect_only_regular_replaced("core", core, NULL);
}

/* -v names the pool found and why the decoy is none. */
static void test_core_verbose(void **state)
{
	const char *core = scenario_core("verbose.core");
	struct child_result r;

	(void)state;
	child_xfdr(&r, "core", "-v", "-o", scratch_path("verbose.xray"), core, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err, "xfdr core: \"XFDRPOOL\" at 0x401000 is not a pool: offset 8: "
				    "expected layout version 1");
	text_assert_contains(r.err, "xfdr core: pool at 0x7f1234560000: session 1, pid 4242, 8 "
				    "buffers of 256 bytes at 0x7f1234600000\n");
	text_assert_contains(r.err, "xfdr core: buffer 3: owned, used 72, claim 4, thread 1 (tid "
				    "1001): kept 64 bytes; stopped at byte 64");
	child_result_free(&r);
}

/* A buffer whose memory is not in the core is counted and left out; the others are kept. */
static void test_core_memory_not_dumped(void **state)
{
	/* Buffer 6 (bytes 1536-1791) in a segment with no file bytes. */
	static const size_t splits[] = {1536, 1792, 2048};
	const char *core = write_core("hole.core", splits, 3, 2);
	const char *out = scratch_path("hole.xray");
	const char *want = PL_SCENARIO_EVENTS;
	struct child_result r;
	int i;

	(void)state;
	child_xfdr(&r, "core", "-o", out, core, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err, "xfdr core: 4 buffers of 2 threads kept, of 8 in the pool\n");
	text_assert_contains(r.err,
			     "xfdr core: 1 buffer dropped: not in the core (memory not "
			     "dumped; the pool is file-backed: `xfdr recover` reads its live "
			     "file)\n");
	child_result_free(&r);
	child_xfdr_ok("verify", out, NULL);
	/* Buffer 6 held the first three events. */
	for (i = 0; i < 3; i++)
		want = strchr(want, '\n') + 1;
	pl_expect_events(out, want, 0);
}

/* A core cut short (RLIMIT_CORE): a warning, and what is missing reads as absent. */
static void test_core_truncated(void **state)
{
	const char *core = scenario_core("cut.core");
	const char *out = scratch_path("cut.xray");
	struct child_result r;
	uint8_t *b;
	size_t n;

	(void)state;
	b = pl_read_file(core, &n);
	assert_non_null(b);
	/* The file ends 256 bytes into the second buffer segment (buffer area offset 896). */
	pl_write_file(core, b, n - PAGE + 256);
	free(b);
	child_xfdr(&r, "core", "-o", out, core, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err, "warning: the file ends inside 1 of its segments");
	/* Buffers 0, 2 and the used bytes of 3 (768-839) are in; 5, 6 and 7 are cut off. */
	text_assert_contains(r.err, "xfdr core: 3 buffers of 2 threads kept, of 8 in the pool\n");
	text_assert_contains(r.err, "xfdr core: 3 buffers dropped: not in the core");
	child_result_free(&r);
	child_xfdr_ok("verify", out, NULL);
}

/* An older pool of the same process: the newest session is used, and said so. */
static void test_core_two_pools(void **state)
{
	const char *core = scratch_path("two.core"), *out = scratch_path("two.xray");
	static uint8_t page[PAGE], old_page[PAGE];
	struct pl_pool p, old;
	struct pl_seg segs[4];
	struct child_result r;
	size_t at;

	(void)state;
	pl_scenario(&p, BUFS, LOC, 0, 2);
	memcpy(page, p.meta, p.meta_bytes);
	/* The old pool lies higher in memory, so address order does not decide. */
	pl_init(&old, 2, 256, PL_SCENARIO_PID, 0x7f2000100000ull, 0x7f2000000000ull, 0, 1, 0);
	at = pl_preamble(&old, 0, 5, 50, 0, 0, 10);
	at = pl_fn(&old, 0, at, XFDR_FN_ENTER, 42, 1);
	pl_desc(&old, 0, PL_FULL, 1, at, 0, 999, 5, 10, 11);
	memcpy(old_page, old.meta, old.meta_bytes);
	segs[0] = (struct pl_seg){LOC, page, PAGE, PAGE, 0};
	segs[1] = (struct pl_seg){BUFS, p.bufs, 2048, 2048, 0};
	segs[2] = (struct pl_seg){0x7f2000000000ull, old_page, PAGE, PAGE, 0};
	segs[3] = (struct pl_seg){0x7f2000100000ull, old.bufs, 512, 512, 0};
	pl_write_core(core, 4, segs, 4);
	pl_free(&p);

	child_xfdr(&r, "core", "-o", out, core, NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err,
			     "xfdr core: 2 xfdr pools in this core (the process "
			     "re-initialised?): using the newest, session 2 at 0x7f1234560000\n");
	child_result_free(&r);
	pl_expect_events(out, PL_SCENARIO_EVENTS, 0);

	/* With the newer one gone, the older one is the pool. */
	pl_write_core(core, 4, segs + 2, 2);
	child_xfdr(&r, "core", "-f", "-o", out, core, NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "pools"));
	child_result_free(&r);
	pl_expect_events(out, "t5 function-enter f42 @11\n", 0);
	pl_free(&old);
}

/* ---- Errors --------------------------------------------------------------------------------- */

/* `xfdr core path`: exit status, one stderr line starting with want, no output. */
static void expect_error(const char *path, int status, const char *want)
{
	pl_expect_error("core", path, status, want);
}

static void test_core_errors(void **state)
{
	const char *path = scratch_path("bad.core");
	static uint8_t ro[2 * PAGE], page[PAGE];
	uint8_t elf32[64] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
	uint8_t odd[64] = {0x7f, 'E', 'L', 'F', 2, 9, 1};
	struct pl_seg segs[3];
	struct pl_pool p;
	char want[600], fifo[256];
	uint8_t *b;
	size_t n;

	(void)state;
	/* A core that cannot be opened is a 2, as for every verb; a malformed one a 1. */
	snprintf(want, sizeof(want), "xfdr core: %s: No such file or directory",
		 scratch_path("none.core"));
	expect_error(scratch_path("none.core"), 2, want);
	snprintf(want, sizeof(want), "xfdr core: %s: Is a directory\n", scratch_dir);
	expect_error(scratch_dir, 2, want);
	/* A FIFO is refused at once, not waited on. */
	snprintf(fifo, sizeof(fifo), "%s/fifo.core", scratch_dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(want, sizeof(want), "xfdr core: %s: not a regular file\n", fifo);
	expect_error(fifo, 2, want);
	/* Permission denied (root reads everything: nothing to check then). */
	if (geteuid() != 0) {
		pl_write_file(path, "hello world\n", 12);
		assert_int_equal(chmod(path, 0), 0);
		snprintf(want, sizeof(want), "xfdr core: %s: Permission denied\n", path);
		expect_error(path, 2, want);
		assert_int_equal(chmod(path, 0600), 0);
	}

	pl_write_file(path, "hello world\n", 12);
	snprintf(
	    want, sizeof(want),
	    "%s: offset 0: expected an ELF file (bytes 7f 45 4c 46), found bytes 68 65 6c 6c\n",
	    path);
	expect_error(path, 1, want);

	pl_write_file(path, "", 0);
	snprintf(want, sizeof(want),
		 "%s: offset 0: expected an ELF file (bytes 7f 45 4c 46), found an empty file\n",
		 path);
	expect_error(path, 1, want);

	pl_write_file(path, elf32, sizeof(elf32));
	snprintf(want, sizeof(want),
		 "%s: offset 4: expected a 64-bit ELF file (class 2), found class 1 (32-bit)\n",
		 path);
	expect_error(path, 1, want);

	pl_write_file(path, odd, sizeof(odd));
	snprintf(want, sizeof(want),
		 "%s: offset 5: expected byte order 1 (little-endian) or 2 (big-endian), found 9\n",
		 path);
	expect_error(path, 1, want);

	pl_write_file(path, odd, 20);
	odd[5] = 1;
	pl_write_file(path, odd, 20);
	snprintf(want, sizeof(want),
		 "%s: offset 20: expected a 64-byte ELF header, found 20 bytes\n", path);
	expect_error(path, 1, want);

	/* An executable and a shared object are not cores, whatever they hold. */
	pl_scenario(&p, BUFS, LOC, 0, 1);
	memcpy(page, p.meta, p.meta_bytes);
	segs[0] = (struct pl_seg){LOC, page, PAGE, PAGE, 0};
	segs[1] = (struct pl_seg){BUFS, p.bufs, 2048, 2048, 0};
	pl_write_core(path, 2, segs, 2);
	snprintf(want, sizeof(want),
		 "%s: offset 16: expected a core file (e_type 4, ET_CORE), found e_type 2 "
		 "(ET_EXEC, an executable)\n",
		 path);
	expect_error(path, 1, want);
	pl_write_core(path, 3, segs, 2);
	snprintf(want, sizeof(want),
		 "%s: offset 16: expected a core file (e_type 4, ET_CORE), found e_type 3 (ET_DYN",
		 path);
	expect_error(path, 1, want);

	/* Program headers past the end of the file. */
	pl_write_core(path, 4, segs, 2);
	b = pl_read_file(path, &n);
	assert_non_null(b);
	pl_write_file(path, b, 64 + 56);
	free(b);
	snprintf(want, sizeof(want),
		 "%s: offset 32: expected 2 program headers of 56 bytes from offset 64, found the "
		 "end of the file at 120\n",
		 path);
	expect_error(path, 1, want);

	/* No pool: nothing that looks like one; only a decoy; a locator without descriptors. */
	segs[0] = (struct pl_seg){RODATA, p.bufs, 2048, 2048, 0};
	pl_write_core(path, 4, segs, 1);
	snprintf(want, sizeof(want),
		 "xfdr core: %s: no xfdr pool in this core: was the process running xfdr? (with "
		 "backing=file, `xfdr recover` reads the live file)\n",
		 path);
	expect_error(path, 1, want);

	make_rodata(ro, &p);
	segs[0] = (struct pl_seg){RODATA, ro, sizeof(ro), sizeof(ro), 0};
	pl_write_core(path, 4, segs, 1);
	snprintf(want, sizeof(want),
		 "xfdr core: %s: no xfdr pool in this core: was the process running xfdr? (1 "
		 "\"XFDRPOOL\" at a page start did not validate, the first at 0x401000: offset 8: "
		 "expected layout version 1",
		 path);
	expect_error(path, 1, want);

	/* The locator page alone (its descriptors past the dumped 256 bytes). */
	segs[0] = (struct pl_seg){LOC, page, 256, PAGE, 0};
	pl_write_core(path, 4, segs, 1);
	snprintf(
	    want, sizeof(want),
	    "xfdr core: %s: no xfdr pool in this core: was the process running xfdr? (1 "
	    "\"XFDRPOOL\" at a page start did not validate, the first at 0x7f1234560000: its 8 "
	    "descriptors (576 bytes at 0x7f1234560080) are not all in the core)\n",
	    path);
	expect_error(path, 1, want);

	/* descs_addr elsewhere than after the locator: not this locator's descriptors. */
	pl_loc64(&p, XFDR_POOL_DESCS_ADDR_OFF, 0x1000);
	memcpy(page, p.meta, p.meta_bytes);
	segs[0] = (struct pl_seg){LOC, page, PAGE, PAGE, 0};
	pl_write_core(path, 4, segs, 2);
	snprintf(want, sizeof(want),
		 "xfdr core: %s: no xfdr pool in this core: was the process running xfdr? (1 "
		 "\"XFDRPOOL\" at a page start did not validate, the first at 0x7f1234560000: "
		 "offset 96: expected descs_addr 0 or 0x7f1234560080",
		 path);
	expect_error(path, 1, want);
	pl_free(&p);
}

static void test_core_usage(void **state)
{
	(void)state;
	pl_expect_usage("xfdr core: missing CORE", "core", NULL);
	pl_expect_usage("one CORE at a time; extra operand 'b'", "core", "a", "b", NULL);
	pl_expect_usage("unknown option '-x'", "core", "-x", "a", NULL);
	pl_expect_usage("'--frob'", "core", "--frob", "a", NULL);
	pl_expect_usage("option '-o' needs an argument", "core", "a", "-o", NULL);

	pl_expect_help("core", "2 usage error,\nCORE missing or unreadable, or OUT exists", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_core_scenario),
	    cmocka_unit_test(test_core_names),
	    cmocka_unit_test(test_core_verbose),
	    cmocka_unit_test(test_core_memory_not_dumped),
	    cmocka_unit_test(test_core_truncated),
	    cmocka_unit_test(test_core_two_pools),
	    cmocka_unit_test(test_core_errors),
	    cmocka_unit_test(test_core_usage),
	    cmocka_unit_test(test_core_force_only_regular_files),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
