/*
 * tests/unit/reader/test_reader_crash_event.c - a crash in the reader library: the "XFDRCRSH"
 * payload decoder (xfdr_crash_event_decode), the sidecar's `crash` and `frame` lines
 * (xfdr_names_crash, xfdr_names_frame, xfdr_names_frame_at_pc) and the ELF symbol lookup that
 * names frames the sidecar could not (xfdr_elf_*, reader/elf_symbols.c).
 *
 * Every payload is written byte by byte here from format.h's XFDRCRSH table, not with its
 * constants or the writer:
 *   off 0 "XFDRCRSH" | 8 u32 version 1 | 12 u32 signal | 16 i32 si_code | 20 u32 tid
 *   | 24 u64 fault address | 32 u32 frame_count | 36 u32 flags | 40 u64 pcs, innermost first.
 * Each sidecar is written out literally; expected messages and offsets are read off by hand.
 * The ELF lookup is checked against the dynamic linker: the address of a function of this very
 * binary (and of libc), made a file address with the load bias dladdr1() reports, must be
 * named by the function's own name (or by a name the dynamic linker resolves to that address).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
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

#include "xfdr/reader.h"
#include "tests/support/image.h"
#include "tests/support/scratch.h"
#include "xfdr/reader.h"

#define TAG 'X', 'F', 'D', 'R', 'C', 'R', 'S', 'H'
#define LHEAD(version, sig, code, tid, addr, count, flags)                                         \
	TAG, L32(version), L32(sig), L32(code), L32(tid), L64(addr), L32(count), L32(flags)
#define BHEAD(version, sig, code, tid, addr, count, flags)                                         \
	TAG, B32(version), B32(sig), B32(code), B32(tid), B64(addr), B32(count), B32(flags)

static struct xfdr_crash_event ce;
static struct xfdr_error err;

static int decode(const uint8_t *p, uint32_t n, int big)
{
	memset(&ce, 0xa5, sizeof(ce));
	memset(&err, 0, sizeof(err));
	return xfdr_crash_event_decode(p, n, big, &ce, &err);
}

/* A rejected payload: offset and message as given, and *out untouched. */
static void expect_bad(const uint8_t *p, uint32_t n, int big, uint64_t offset, const char *text)
{
	struct xfdr_crash_event untouched;

	assert_int_equal(decode(p, n, big), -1);
	memset(&untouched, 0xa5, sizeof(untouched));
	assert_memory_equal(&ce, &untouched, sizeof(ce));
	assert_int_equal(err.offset, offset);
	assert_string_equal(err.text, text);
	/* err may be NULL. */
	assert_int_equal(xfdr_crash_event_decode(p, n, big, &ce, NULL), -1);
}

/* ---- the payload ------------------------------------------------------------------------- */

static void test_decode_valid(void **state)
{
	/* SIGSEGV (11), SEGV_MAPERR (1), tid 4321, at 0x10, three frames: 40 + 24 = 64 bytes. */
	static const uint8_t three[] = {LHEAD(1, 11, 1, 4321, 0x10, 3, 0), L64(0x55d0c0de1234ull),
					L64(0x55d0c0de0100ull), L64(0x7f0000001000ull)};
	/* Big-endian: SIGBUS (7), si_code -6 (SI_TKILL), tid 0x01020304, one frame. */
	static const uint8_t big[] = {BHEAD(1, 7, -6, 0x01020304, 0xdeadbeefcafef00dull, 1, 0),
				      B64(0x0102030405060708ull)};
	/* No frame (the unwinder found none); a flag bit not defined yet is kept. */
	static const uint8_t none[] = {LHEAD(1, 6, 0, 1, 0, 0, 0x80000000u)};
	static uint8_t full[40 + 8 * 64];
	static const uint8_t full_head[] = {LHEAD(1, 4, 2, 99, 0x400000, 64, 1)};
	uint32_t i;

	(void)state;
	assert_int_equal(decode(three, sizeof(three), 0), 0);
	assert_int_equal(ce.signal, 11);
	assert_int_equal(ce.code, 1);
	assert_int_equal(ce.tid, 4321);
	assert_int_equal(ce.fault_addr, 0x10);
	assert_int_equal(ce.frame_count, 3);
	assert_int_equal(ce.flags, 0);
	assert_true(ce.pcs[0] == 0x55d0c0de1234ull);
	assert_true(ce.pcs[1] == 0x55d0c0de0100ull);
	assert_true(ce.pcs[2] == 0x7f0000001000ull);

	assert_int_equal(decode(big, sizeof(big), 1), 0);
	assert_int_equal(ce.signal, 7);
	assert_int_equal(ce.code, -6);
	assert_int_equal(ce.tid, 0x01020304);
	assert_true(ce.fault_addr == 0xdeadbeefcafef00dull);
	assert_int_equal(ce.frame_count, 1);
	assert_true(ce.pcs[0] == 0x0102030405060708ull);

	assert_int_equal(decode(none, sizeof(none), 0), 0);
	assert_int_equal(ce.signal, 6);
	assert_int_equal(ce.frame_count, 0);
	assert_int_equal(ce.flags, 0x80000000u);

	/* The most frames an event holds, the stack deeper still (truncated flag). */
	memcpy(full, full_head, sizeof(full_head));
	for (i = 0; i < 64; i++) {
		const uint8_t pc[] = {L64(0x1000 + i)};

		memcpy(full + 40 + 8 * i, pc, 8);
	}
	assert_int_equal(sizeof(full), 552);
	assert_int_equal(decode(full, sizeof(full), 0), 0);
	assert_int_equal(ce.frame_count, 64);
	assert_int_equal(ce.flags, 1);
	assert_int_equal(ce.pcs[0], 0x1000);
	assert_int_equal(ce.pcs[63], 0x103f);
	assert_int_equal(xfdr_payload_has_tag(full, 8, "XFDRCRSH"), 1);
}

static void test_decode_invalid(void **state)
{
	static const uint8_t good[] = {LHEAD(1, 11, 1, 7, 0, 2, 0), L64(1), L64(2)};
	static const uint8_t stak[] = {'X', 'F',    'D',    'R',    'S',    'T',    'A',
				       'K', L32(1), L32(0), L32(0), L32(0), L64(0), L64(0)};
	static const uint8_t version2[] = {LHEAD(2, 11, 1, 7, 0, 0, 0)};
	static const uint8_t version0[] = {LHEAD(0, 11, 1, 7, 0, 0, 0)};
	static const uint8_t big[] = {BHEAD(1, 11, 1, 7, 0, 0, 0)};
	/* 65 frames: one above the most an event may hold, in a payload big enough for them. */
	static uint8_t over_max[40 + 8 * 65] = {LHEAD(1, 11, 1, 7, 0, 65, 0)};
	/* frame_count 5, but the payload holds 2 frames. */
	static const uint8_t too_many[] = {LHEAD(1, 11, 1, 7, 0, 5, 0), L64(1), L64(2)};
	/* frame_count 0xffffffff: not read as a size (it would wrap). */
	static const uint8_t huge[] = {LHEAD(1, 11, 1, 7, 0, 0xffffffffu, 0)};
	static const uint8_t long_by_8[] = {LHEAD(1, 11, 1, 7, 0, 1, 0), L64(1), L64(0)};

	(void)state;
	assert_int_equal(decode(good, sizeof(good), 0), 0);
	/* Truncated: inside the fixed part, inside the frames. */
	expect_bad(
	    good, 39, 0, 0,
	    "payload offset 0: expected at least 40 bytes for an XFDRCRSH payload, found 39");
	expect_bad(NULL, 0, 0, 0,
		   "payload offset 0: expected at least 40 bytes for an XFDRCRSH payload, found 0");
	expect_bad(good, 52, 0, 0,
		   "payload offset 0: expected 56 payload bytes for 2 frames, found 52");
	expect_bad(good, 48, 0, 0,
		   "payload offset 0: expected 56 payload bytes for 2 frames, found 48");
	expect_bad(stak, sizeof(stak), 0, 0,
		   "payload offset 0: expected the tag XFDRCRSH (5846445243525348), found "
		   "584644525354414b");
	expect_bad(version2, sizeof(version2), 0, 8,
		   "payload offset 8: expected XFDRCRSH layout version 1, found 2");
	expect_bad(version0, sizeof(version0), 0, 8,
		   "payload offset 8: expected XFDRCRSH layout version 1, found 0");
	/* A big-endian payload read as little-endian: version 0x01000000. */
	expect_bad(big, sizeof(big), 0, 8,
		   "payload offset 8: expected XFDRCRSH layout version 1, found 16777216");
	assert_int_equal(sizeof(over_max), 560);
	expect_bad(over_max, sizeof(over_max), 0, 32,
		   "payload offset 32: expected a frame_count of at most 64, found 65");
	expect_bad(too_many, sizeof(too_many), 0, 0,
		   "payload offset 0: expected 80 payload bytes for 5 frames, found 56");
	expect_bad(huge, sizeof(huge), 0, 32,
		   "payload offset 32: expected a frame_count of at most 64, found 4294967295");
	expect_bad(long_by_8, sizeof(long_by_8), 0, 0,
		   "payload offset 0: expected 48 payload bytes for 1 frames, found 56");
}

/* ---- the sidecar -------------------------------------------------------------------------- */

static void expect_frame(const struct xfdr_map_frame *f, uint32_t index, uint64_t pc,
			 const char *symbol, const char *module, int have_vaddr, uint64_t vaddr)
{
	assert_int_equal(f->index, index);
	assert_true(f->pc == pc);
	if (symbol)
		assert_string_equal(f->symbol, symbol);
	else
		assert_null(f->symbol);
	if (module)
		assert_string_equal(f->module, module);
	else
		assert_null(f->module);
	assert_int_equal(f->have_module_vaddr, have_vaddr);
	assert_true(f->module_vaddr == vaddr);
}

/* A crash flush's sidecar: the crash and frame lines after the drops, before the threads. */
static void test_map_crash_lines(void **state)
{
	const char *path = scratch_write_text(
	    "crash.map", "xfdr-map\t1\n"
			 "pid\t42\n"
			 "dropped\ttotal\t0\n"
			 "crash\t11\tSIGSEGV\t1\t0x0\t4242\n"
			 "frame\t0\t0x55d0c0de1234\tcrash_here\t/path/prog\t0x1234\n"
			 "frame\t2\t0x7f12345678\t<unknown>\t/lib/libc.so.6\t0x27249\n"
			 "frame\t1\t0x55d0c0de0100\t_ZN3foo3barEv\t/path/prog\t0x100\n"
			 "frame\t3\t0xFFFFFFFFFFFFFFFF\t<unknown>\t-\t-\tlater\tfields\n"
			 "thread\t4242\t1\tprog\t0\t0\t0\t0\t0\t0\n"
			 "functions\tcyg\t1\n"
			 "function\t1\tmain\t0x1000\t/path/prog\t0x1000\n");
	struct xfdr_names *n = NULL;
	struct xfdr_map_crash mc;
	struct xfdr_map_frame f;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_string_equal(xfdr_names_get(n, 1), "main");
	assert_int_equal(xfdr_names_crash(n, &mc), 1);
	assert_int_equal(mc.signal, 11);
	assert_string_equal(mc.signal_name, "SIGSEGV");
	assert_int_equal(mc.code, 1);
	assert_int_equal(mc.fault_addr, 0);
	assert_int_equal(mc.tid, 4242);
	assert_int_equal(xfdr_names_frame_count(n), 4);

	/* By index, whatever the order of the lines. */
	assert_int_equal(xfdr_names_frame(n, 0, &f), 1);
	expect_frame(&f, 0, 0x55d0c0de1234ull, "crash_here", "/path/prog", 1, 0x1234);
	assert_int_equal(xfdr_names_frame(n, 1, &f), 1);
	expect_frame(&f, 1, 0x55d0c0de0100ull, "_ZN3foo3barEv", "/path/prog", 1, 0x100);
	assert_int_equal(xfdr_names_frame(n, 2, &f), 1);
	expect_frame(&f, 2, 0x7f12345678ull, NULL, "/lib/libc.so.6", 1, 0x27249);
	assert_int_equal(xfdr_names_frame(n, 3, &f), 1);
	expect_frame(&f, 3, UINT64_MAX, NULL, NULL, 0, 0);
	assert_int_equal(xfdr_names_frame(n, 4, &f), 0);

	/* By pc. */
	assert_int_equal(xfdr_names_frame_at_pc(n, 0x7f12345678ull, &f), 1);
	assert_int_equal(f.index, 2);
	assert_int_equal(xfdr_names_frame_at_pc(n, 0x55d0c0de1234ull, &f), 1);
	assert_int_equal(f.index, 0);
	assert_int_equal(xfdr_names_frame_at_pc(n, 0x1234, &f), 0);
	xfdr_names_free(n);

	/* No sidecar, or one without a crash. */
	assert_int_equal(xfdr_names_crash(NULL, &mc), 0);
	assert_int_equal(xfdr_names_frame(NULL, 0, &f), 0);
	assert_int_equal(xfdr_names_frame_at_pc(NULL, 0, &f), 0);
	assert_int_equal(xfdr_names_frame_count(NULL), 0);
	path = scratch_write_text("plain.map", "xfdr-map\t1\nfunction\t1\tmain\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_int_equal(xfdr_names_crash(n, &mc), 0);
	assert_int_equal(xfdr_names_frame(n, 0, &f), 0);
	assert_int_equal(xfdr_names_frame_at_pc(n, 0, &f), 0);
	xfdr_names_free(n);
}

/* The last crash is kept, with its own frames; a pc shared by two frames finds the lower. */
static void test_map_last_crash(void **state)
{
	const char *path =
	    scratch_write_text("two.map", "frame\t0\t0x1\tbefore_any\t-\t-\n"
					  "crash\t6\tSIGABRT\t-6\t0x0\t10\n"
					  "frame\t0\t0x10\tabort\t-\t-\n"
					  "frame\t1\t0x20\tmain\t-\t-\n"
					  "crash\t8\tSIGFPE\t-2147483648\t0xffffffffffffffff\t11\n"
					  "frame\t1\t0x30\tdivide\t/p\t0x30\n"
					  "frame\t0\t0x30\tdivide_too\t/p\t0x30\n"
					  "crash_later_key\tx\n"
					  "frames\ty\n");
	struct xfdr_names *n = NULL;
	struct xfdr_map_crash mc;
	struct xfdr_map_frame f;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_int_equal(xfdr_names_crash(n, &mc), 1);
	assert_int_equal(mc.signal, 8);
	assert_string_equal(mc.signal_name, "SIGFPE");
	assert_int_equal(mc.code, INT32_MIN);
	assert_true(mc.fault_addr == UINT64_MAX);
	assert_int_equal(mc.tid, 11);
	assert_int_equal(xfdr_names_frame_count(n), 2);
	assert_int_equal(xfdr_names_frame(n, 0, &f), 1);
	assert_string_equal(f.symbol, "divide_too");
	assert_int_equal(xfdr_names_frame(n, 1, &f), 1);
	assert_string_equal(f.symbol, "divide");
	assert_int_equal(xfdr_names_frame_at_pc(n, 0x30, &f), 1);
	assert_int_equal(f.index, 0);
	assert_int_equal(xfdr_names_frame_at_pc(n, 0x10, &f), 0); /* the first crash's */
	assert_int_equal(xfdr_names_frame_at_pc(n, 0x1, &f), 0);
	xfdr_names_free(n);
}

/* -2: each malformed crash or frame line, named by file, line number and byte offset. */
static void test_map_malformed(void **state)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
	    {"crash\t\tSIGSEGV\t1\t0x0\t1",
	     "expected a signal number (decimal) after 'crash<TAB>'"},
	    {"crash\tx11\tSIGSEGV\t1\t0x0\t1",
	     "expected a signal number (decimal) after 'crash<TAB>'"},
	    {"crash\t4294967296\tSIGSEGV\t1\t0x0\t1",
	     "expected a signal number (decimal) after 'crash<TAB>'"},
	    {"crash\t11", "expected a signal name after the signal number"},
	    {"crash\t11\t\t1\t0x0\t1", "expected a signal name after the signal number"},
	    {"crash\t11\tSIGSEGV", "expected an si_code (decimal, 32 bits) after the signal name"},
	    {"crash\t11\tSIGSEGV\t2147483648\t0x0\t1",
	     "expected an si_code (decimal, 32 bits) after the signal name"},
	    {"crash\t11\tSIGSEGV\t-2147483649\t0x0\t1",
	     "expected an si_code (decimal, 32 bits) after the signal name"},
	    {"crash\t11\tSIGSEGV\t-\t0x0\t1",
	     "expected an si_code (decimal, 32 bits) after the signal name"},
	    {"crash\t11\tSIGSEGV\t1\t0\t1",
	     "expected a fault address (0x hex, 64 bits) after the si_code"},
	    {"crash\t11\tSIGSEGV\t1\t0x\t1",
	     "expected a fault address (0x hex, 64 bits) after the si_code"},
	    {"crash\t11\tSIGSEGV\t1\t0x10000000000000000\t1",
	     "expected a fault address (0x hex, 64 bits) after the si_code"},
	    {"crash\t11\tSIGSEGV\t1\t0xfg\t1",
	     "expected a fault address (0x hex, 64 bits) after the si_code"},
	    {"crash\t11\tSIGSEGV\t1\t0x0", "expected a tid (decimal) after the fault address"},
	    {"crash\t11\tSIGSEGV\t1\t0x0\t-1", "expected a tid (decimal) after the fault address"},
	    {"frame\t\t0x1\tf\t-\t-", "expected a frame index (decimal) after 'frame<TAB>'"},
	    {"frame\t-1\t0x1\tf\t-\t-", "expected a frame index (decimal) after 'frame<TAB>'"},
	    {"frame\t0", "expected a pc (0x hex, 64 bits) after the frame index"},
	    {"frame\t0\t1234\tf\t-\t-", "expected a pc (0x hex, 64 bits) after the frame index"},
	    {"frame\t0\t0x1", "expected a symbol or <unknown> after the pc"},
	    {"frame\t0\t0x1\t\t-\t-", "expected a symbol or <unknown> after the pc"},
	    {"frame\t0\t0x1\tf", "expected a module path or - after the symbol"},
	    {"frame\t0\t0x1\tf\t\t-", "expected a module path or - after the symbol"},
	    {"frame\t0\t0x1\tf\t-",
	     "expected a module_vaddr (0x hex, 64 bits) or - after the module"},
	    {"frame\t0\t0x1\tf\t/p\t", "expected a module_vaddr (0x hex, 64 bits) or - after the "
				       "module"},
	    {"frame\t0\t0x1\tf\t/p\t--", "expected a module_vaddr (0x hex, 64 bits) or - after the "
					 "module"},
	    {"frame\t0\t0x1\tf\t/p\t4096", "expected a module_vaddr (0x hex, 64 bits) or - after "
					   "the module"},
	};
	struct xfdr_names *n;
	char text[256], want[512];
	const char *path;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* "xfdr-map\t1\n" is 11 bytes, "crash\t7\tSIGBUS\t2\t0x8\t3\n" 23: line 3 at 34. */
		snprintf(text, sizeof(text), "xfdr-map\t1\ncrash\t7\tSIGBUS\t2\t0x8\t3\n%s\n",
			 bad[i].line);
		path = scratch_write_text("bad.map", text);
		n = (struct xfdr_names *)&n;
		assert_int_equal(xfdr_names_load(path, &n, &err), -2);
		assert_null(n);
		assert_int_equal(err.offset, 34);
		snprintf(want, sizeof(want), "%s: line 3: %s, found '%.60s'", path, bad[i].why,
			 bad[i].line);
		assert_string_equal(err.text, want);
	}

	/* One frame index twice for one crash: the file and both pcs named. */
	path = scratch_write_text("twice.map", "crash\t11\tSIGSEGV\t1\t0x0\t1\n"
					       "frame\t2\t0xa\tf\t-\t-\n"
					       "frame\t2\t0xb\tg\t-\t-\n");
	n = (struct xfdr_names *)&n;
	assert_int_equal(xfdr_names_load(path, &n, &err), -2);
	assert_null(n);
	snprintf(want, sizeof(want), "%s: frame 2 is listed twice for one crash (pc 0xa and 0xb)",
		 path);
	assert_string_equal(err.text, want);
	assert_int_equal(err.offset, 0);

	/* ... but the same index in two crashes is one per crash. */
	path = scratch_write_text("again.map", "crash\t11\tSIGSEGV\t1\t0x0\t1\n"
					       "frame\t2\t0xa\tf\t-\t-\n"
					       "crash\t11\tSIGSEGV\t1\t0x0\t1\n"
					       "frame\t2\t0xb\tg\t-\t-\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	xfdr_names_free(n);
}

/* ---- ELF symbols ------------------------------------------------------------------------- */

/* Long enough that an address a few bytes in is still inside; not inlined, address taken. */
__attribute__((noinline)) static int crash_test_known_function(int x)
{
	volatile int acc = x;
	int i;

	for (i = 0; i < 3; i++)
		acc = acc * 7 + i;
	return acc;
}

/* The file holding addr and addr as an address of that file's symbols (addr - load bias). */
static void file_address(const void *addr, char *path, size_t n, uint64_t *vaddr)
{
	struct link_map *lm = NULL;
	Dl_info info;
	ssize_t len;

	assert_int_not_equal(dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP), 0);
	assert_non_null(lm);
	*vaddr = (uint64_t)(uintptr_t)addr - (uint64_t)lm->l_addr;
	if (lm->l_name && lm->l_name[0]) {
		snprintf(path, n, "%s", lm->l_name);
		return;
	}
	/* The main program has no name in its link map. */
	len = readlink("/proc/self/exe", path, n - 1);
	assert_true(len > 0);
	path[len] = '\0';
}

static void test_elf_lookup(void **state)
{
	char path[4096];
	struct xfdr_elf *e;
	const char *name;
	uint64_t vaddr, off = 99;
	void *addr;

	(void)state;
	assert_int_equal(crash_test_known_function(1), 7 * (7 * (7 + 0) + 1) + 2);

	/* A static function of this binary: in .symtab, not in .dynsym. */
	file_address((const void *)(uintptr_t)crash_test_known_function, path, sizeof(path),
		     &vaddr);
	assert_int_equal(xfdr_elf_open(path, &e), 0);
	name = xfdr_elf_symbol(e, vaddr, &off);
	assert_non_null(name);
	assert_string_equal(name, "crash_test_known_function");
	assert_int_equal(off, 0);
	name = xfdr_elf_symbol(e, vaddr + 5, &off);
	assert_non_null(name);
	assert_string_equal(name, "crash_test_known_function");
	assert_int_equal(off, 5);
	assert_string_equal(xfdr_elf_symbol(e, vaddr + 1, NULL), "crash_test_known_function");
	/* No function at the file's first byte (the ELF header), nor at the top of the space. */
	assert_null(xfdr_elf_symbol(e, 0, &off));
	assert_null(xfdr_elf_symbol(e, UINT64_MAX, &off));
	xfdr_elf_close(e);

	/* A function of libc, named through .dynsym (Debian strips libc's .symtab). */
	addr = dlsym(RTLD_DEFAULT, "getpid");
	assert_non_null(addr);
	file_address(addr, path, sizeof(path), &vaddr);
	assert_int_equal(xfdr_elf_open(path, &e), 0);
	name = xfdr_elf_symbol(e, vaddr, &off);
	assert_non_null(name);
	/* getpid has aliases (__getpid): whichever is named must be the same function. */
	assert_ptr_equal(dlsym(RTLD_DEFAULT, name), addr);
	assert_int_equal(off, 0);
	xfdr_elf_close(e);

	/* NULL names nothing; closing NULL is harmless. */
	assert_null(xfdr_elf_symbol(NULL, vaddr, &off));
	xfdr_elf_close(NULL);
}

static uint8_t *read_whole(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	uint8_t *p;

	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &sb), 0);
	*n = (size_t)sb.st_size;
	p = malloc(*n);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, *n, f), *n);
	fclose(f);
	return p;
}

/*
 * An image read elsewhere names what its file names, is used in place (a name points into it)
 * and is never unmapped; what is too short or not ELF is refused as from a file.
 */
static void test_elf_open_memory(void **state)
{
	char path[4096];
	struct xfdr_elf *e = (struct xfdr_elf *)&e;
	const char *name;
	uint64_t vaddr, off = 99;
	uint8_t *img;
	size_t n;

	(void)state;
	file_address((const void *)(uintptr_t)crash_test_known_function, path, sizeof(path),
		     &vaddr);
	img = read_whole(path, &n);
	assert_int_equal(xfdr_elf_open_memory(img, n, &e), 0);
	name = xfdr_elf_symbol(e, vaddr + 5, &off);
	assert_non_null(name);
	assert_string_equal(name, "crash_test_known_function");
	assert_int_equal(off, 5);
	assert_true((const uint8_t *)name > img && (const uint8_t *)name < img + n);
	assert_null(xfdr_elf_symbol(e, 0, &off));
	xfdr_elf_close(e);

	e = (struct xfdr_elf *)&e;
	assert_int_equal(xfdr_elf_open_memory(img, 63, &e), -ENOEXEC);
	assert_null(e);
	img[0] = 0; /* no ELF magic */
	assert_int_equal(xfdr_elf_open_memory(img, n, &e), -ENOEXEC);
	assert_null(e);
	free(img);
}

static uint64_t fuzz_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Files that are not ELF, cut short or corrupt: no name and no crash. */
static void test_elf_bad_files(void **state)
{
	char exe[4096];
	uint8_t *img, *copy;
	size_t n, i, k, shoff, at;
	uint64_t vaddr, seed = 0x5eed;
	struct xfdr_elf *e = (struct xfdr_elf *)&e;
	const char *path;
	int fd;

	(void)state;
	file_address((const void *)(uintptr_t)crash_test_known_function, exe, sizeof(exe), &vaddr);
	img = read_whole(exe, &n);
	copy = malloc(n);
	assert_non_null(copy);
	/* e_shoff: u64 at 40 of the ELF64 header; section headers are 64 bytes each. */
	shoff = (size_t)img_le64(img + 40);
	assert_true(shoff > 0 && shoff < n);

	assert_int_equal(xfdr_elf_open("/nonexistent/xfdr-no-such-file", &e), -ENOENT);
	assert_null(e);
	assert_int_equal(xfdr_elf_open(scratch_dir, &e), -ENOEXEC); /* a directory */
	path = scratch_write("text", "frame\t0\t0x1\n", 11);
	assert_int_equal(xfdr_elf_open(path, &e), -ENOEXEC);
	path = scratch_write("empty", "", 0);
	assert_int_equal(xfdr_elf_open(path, &e), -ENOEXEC);
	/* Cut inside the header, right after it, inside the section headers. */
	path = scratch_write("cut63", img, 63);
	assert_int_equal(xfdr_elf_open(path, &e), -ENOEXEC);
	path = scratch_write("cut64", img, 64);
	assert_int_equal(xfdr_elf_open(path, &e), -ENOEXEC);
	path = scratch_write("cutsh", img, shoff + 100);
	assert_int_equal(xfdr_elf_open(path, &e), -ENOEXEC);
	assert_null(e);
	/* 32-bit class, big-endian data: not read. */
	memcpy(copy, img, n);
	copy[4] = 1; /* EI_CLASS = ELFCLASS32 */
	path = scratch_write("class32", copy, n);
	assert_int_equal(xfdr_elf_open(path, &e), -ENOEXEC);
	memcpy(copy, img, n);
	copy[5] = 2; /* EI_DATA = ELFDATA2MSB */
	path = scratch_write("msb", copy, n);
	assert_int_equal(xfdr_elf_open(path, &e), -ENOEXEC);

	/* The symbol table's offset or size out of the file: that table is ignored. */
	for (k = 0; k < 2; k++) {
		memcpy(copy, img, n);
		for (i = 0; i < (n - shoff) / 64; i++) {
			uint8_t *sh = copy + shoff + 64 * i;

			if (sh[4] == 2 && !sh[5] && !sh[6] && !sh[7]) /* sh_type SHT_SYMTAB */
				memset(sh + (k ? 32 : 24), 0xff, 8);  /* sh_size / sh_offset */
		}
		path = scratch_write("badsymtab", copy, n);
		assert_int_equal(xfdr_elf_open(path, &e), 0);
		/* A static function is only in .symtab, so now nothing names it. */
		assert_null(xfdr_elf_symbol(e, vaddr, NULL));
		xfdr_elf_close(e);
	}

	/*
	 * Random damage to the header, the section headers and anywhere: up to 4 bytes changed
	 * in place in one copy of the file (each mapping is private and gone before the next
	 * change), and put back after each round.
	 */
	path = scratch_write("fuzz", img, n);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	for (k = 0; k < 1000; k++) {
		size_t hit[4], hits = 1 + fuzz_next(&seed) % 4;

		for (i = 0; i < hits; i++) {
			uint8_t b = (uint8_t)fuzz_next(&seed);

			switch (fuzz_next(&seed) % 3) {
			case 0:
				at = fuzz_next(&seed) % 64;
				break;
			case 1:
				at = shoff + fuzz_next(&seed) % (n - shoff);
				break;
			default:
				at = fuzz_next(&seed) % n;
				break;
			}
			hit[i] = at;
			assert_int_equal(pwrite(fd, &b, 1, (off_t)at), 1);
		}
		if (!xfdr_elf_open(path, &e)) {
			xfdr_elf_symbol(e, vaddr, NULL);
			xfdr_elf_symbol(e, fuzz_next(&seed), NULL);
			xfdr_elf_close(e);
		}
		for (i = hits; i-- > 0;)
			assert_int_equal(pwrite(fd, img + hit[i], 1, (off_t)hit[i]), 1);
	}
	close(fd);
	free(copy);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_valid),    cmocka_unit_test(test_decode_invalid),
	    cmocka_unit_test(test_map_crash_lines), cmocka_unit_test(test_map_last_crash),
	    cmocka_unit_test(test_map_malformed),   cmocka_unit_test(test_elf_lookup),
	    cmocka_unit_test(test_elf_bad_files),   cmocka_unit_test(test_elf_open_memory),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
