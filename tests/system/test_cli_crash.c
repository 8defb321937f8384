/*
 * tests/system/test_cli_crash.c - a crash in `xfdr dump`: the "XFDRCRSH" event on its record line
 * and its frames, one line each, named from the sidecar's `frame` lines, else from the ELF
 * symbol table of the frame's module, else shown as a pc.
 *
 * Two traces: one built byte by byte with tests/support/image.h from the spec and format.h's
 * XFDRCRSH table (written out literally here, not with format.h's constants or the writer), so
 * the whole dump can be compared with lines worked out by hand; and one recorded by the
 * runtime through its public API (xfdr_custom_event() with a payload encoded here), whose
 * sidecar the runtime wrote and the test completes with the crash lines a crash flush adds.
 *
 * The frames' program counters are addresses of functions of this test binary, so the ELF
 * lookup has a real file to read: each is made an address of the file's symbols with the load
 * bias the dynamic linker reports (dladdr1), which is what the runtime writes as module_vaddr.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
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
#include "xfdr/xfdr.h"

/* ---- the frames -------------------------------------------------------------------------- */

/* Functions the frames point into: long enough that pc + 8 is still inside, never inlined. */
__attribute__((noinline)) static int crash_here(int x)
{
	volatile int acc = x;
	int i;

	for (i = 0; i < 3; i++)
		acc = acc * 3 + i;
	return acc;
}

__attribute__((noinline)) static int crash_caller(int x)
{
	volatile int acc = x;
	int i;

	for (i = 0; i < 3; i++)
		acc = crash_here(acc) + i;
	return acc;
}

static char exe[1024];		/* this binary */
static uint64_t pc0, pc1;	/* inside crash_here and crash_caller */
static uint64_t vaddr0, vaddr1; /* the same, as addresses of exe's symbols */
static char map_frames[8192];	/* the crash and frame lines of the hand-made trace */

/* addr as an address of its file's symbols: addr - the load bias. */
static uint64_t file_vaddr(const void *addr)
{
	struct link_map *lm = NULL;
	Dl_info info;

	assert_int_not_equal(dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP), 0);
	assert_non_null(lm);
	/* Both functions are in the main program, which has no name in its link map. */
	assert_true(!lm->l_name || !lm->l_name[0]);
	return (uint64_t)(uintptr_t)addr - (uint64_t)lm->l_addr;
}

static void find_frames(void)
{
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(len > 0);
	exe[len] = '\0';
	/* crash_here(x) = 27x + 5, so 1 -> 32 -> 870 -> 23497. */
	assert_int_equal(crash_caller(1), 23497);
	pc0 = (uint64_t)(uintptr_t)crash_here + 4;
	pc1 = (uint64_t)(uintptr_t)crash_caller + 8;
	vaddr0 = file_vaddr((const void *)(uintptr_t)pc0);
	vaddr1 = file_vaddr((const void *)(uintptr_t)pc1);
}

/* ---- the hand-made trace ----------------------------------------------------------------- */

/*
 * The XFDRCRSH payload, little-endian: "XFDRCRSH", u32 version, u32 signal, i32 si_code,
 * u32 tid, u64 fault address, u32 frame_count, u32 flags, then u64 pcs innermost first.
 */
#define CRSH_HEAD(version, sig, code, tid, addr, count, flags)                                     \
	'X', 'F', 'D', 'R', 'C', 'R', 'S', 'H', L32(version), L32(sig), L32(code), L32(tid),       \
	    L64(addr), L32(count), L32(flags)
/* CustomEventMarker: 0x0b (kind 5), u32 size, u64 tsc, 3 reserved. */
#define MARKER(size, tsc) 0x0b, L32(size), L64(tsc), Z3
/* NewCPUId: 0x05 (kind 2), u16 cpu, u64 tsc, 5 reserved. */
#define CPU(cpu, tsc) 0x05, L16(cpu), L64(tsc), Z5
/* Function record word: action << 1 | id << 4 (bit 0 = 0), then the u32 delta. */
#define FN(action, id, delta) L32((uint32_t)(action) << 1 | (uint32_t)(id) << 4), L32(delta)

/*
 * Buffer size 256, header at 0, one buffer @32 on thread 1, 10 s 5 us, cpu 2 tsc 1000:
 *    80 marker 96 bytes tsc 1500: signal (11), si_code 1, tid 4242, address 0x0, 7 frames
 *       (flags as given); 40 + 7 * 8 = 96
 *   192 marker 40 bytes tsc 1600: a crash of layout version 2 with no frames: invalid
 *   248 Entry 1 +5 = 1005; 256 EndOfBuffer, padding 288 - 272 = 16.
 */
static void write_trace(const char *name, uint32_t signal, uint32_t flags)
{
	static struct img m;

	img_init(&m, 256);
	img_buffer(&m, 1, 10, 5);
	PUT(&m, CPU(2, 1000));
	AT(&m, 80);
	PUT(&m, MARKER(96, 1500), CRSH_HEAD(1, signal, 1, 4242, 0, 7, flags));
	PUT(&m, L64(pc0), L64(pc1), L64(0x7f0000002000ull), L64(0x7f0000003000ull),
	    L64(0x7f0000004000ull), L64(0x7f0000005000ull), L64(0x7f0000006000ull));
	AT(&m, 192);
	PUT(&m, MARKER(40, 1600), CRSH_HEAD(2, 11, 1, 4242, 0, 0, 0));
	AT(&m, 248);
	PUT(&m, FN(0, 1, 5));
	img_close(&m);
	AT(&m, 288);
	scratch_write(name, m.b, m.len);
}

/*
 * The crash lines of a sidecar for that trace, frame by frame:
 *   0  named in the map ("map_name_wins"): the map's name, not the ELF's (crash_here)
 *   1  <unknown> in exe at vaddr1: named from exe's .symtab (crash_caller)
 *   2  the map's frame 2 has another pc; its frame 5 has this one: named by pc
 *   3  <unknown> in a module that does not exist: pc and module only
 *   4  <unknown> in a module that is not ELF (the sidecar itself): pc and module only
 *   5  the map's frame 5 has another pc, and no frame has this one: the pc only
 *   6  <unknown> in exe, no module_vaddr: pc and module only
 */
static void make_map_frames(const char *map_name)
{
	snprintf(map_frames, sizeof(map_frames),
		 "crash\t11\tSIGSEGV\t1\t0x0\t4242\n"
		 "frame\t0\t0x%" PRIx64 "\tmap_name_wins\t%s\t0x%" PRIx64 "\n"
		 "frame\t1\t0x%" PRIx64 "\t<unknown>\t%s\t0x%" PRIx64 "\n"
		 "frame\t2\t0x7f00000dead0\twrong_one\t-\t-\n"
		 "frame\t3\t0x7f0000003000\t<unknown>\t/nonexistent/libgone.so\t0x1234\n"
		 "frame\t4\t0x7f0000004000\t<unknown>\t%s\t0x10\n"
		 "frame\t5\t0x7f0000002000\tby_pc_name\t-\t-\n"
		 "frame\t6\t0x7f0000006000\t<unknown>\t%s\t-\n",
		 pc0, exe, vaddr0, pc1, exe, vaddr1, map_name, exe);
}

static void write_map(const char *name)
{
	static const char head[] = "xfdr-map\t1\npid\t4242\ndropped\ttotal\t0\n";
	static const char tail[] = "thread\t4242\t1\tcrashy\t0\t0\t0\t0\t0\t0\n"
				   "functions\tcyg\t1\nfunction\t1\tmain\t0x1\t-\t-\n";

	make_map_frames(name);
	scratch_write(name, head, strlen(head));
	scratch_append(name, map_frames, strlen(map_frames));
	scratch_append(name, tail, strlen(tail));
}

/*
 * The thread's span: its first event is the crash at 1500; its last, the Entry at 1005, is
 * earlier (the clock went back), so the span is the first event's alone. The .map names it.
 */
#define DUMP_THREAD "thread id=1 first_tsc=1500 last_tsc=1500 span_s=0.000000000..0.000000000\n"
#define DUMP_THREAD_NAMED                                                                          \
	"thread id=1 tid=4242 name=\"crashy\" first_tsc=1500 last_tsc=1500 "                       \
	"span_s=0.000000000..0.000000000\n"

static const char dump_head[] =
    "file: crash.xray\n"
    "header: version=1 type=1 bitfield=0x00000003 constant_tsc=1 nonstop_tsc=1 "
    "cycle_frequency=2000000000 buffer_size=256 byte_order=little buffers=1\n"
    "%s"
    "offset     buffer record            fields\n"
    "32         0      NewBuffer         thread=1\n"
    "48         0      WallClockTime     seconds=10 micros=5\n"
    "64         0      NewCPUId          cpu=2 tsc=1000\n"
    "80         0      CustomEventMarker size=96 tsc=1500 data=58464452435253480100000000000000... "
    "text=\"XFDRCRSH........\"... ";

static const char dump_tail[] =
    "192        0      CustomEventMarker size=40 tsc=1600 data=5846445243525348020000000b000000... "
    "text=\"XFDRCRSH........\"... crash=invalid reason=\"payload offset 8: expected XFDRCRSH "
    "layout version 1, found 2\"\n"
    "248        0      Entry             function=1 delta=5 tsc=1005 cpu=2%s depth=0\n"
    "256        0      EndOfBuffer       padding=16\n";

/*
 * The whole dump: head, the crash line (whose data preview shows signal in byte 12), frames;
 * named: the .map names the thread and function 1.
 */
static void expect_dump(const char *got, uint32_t signal, const char *crash, const char *frames,
			int named)
{
	char want[16384], head[sizeof(dump_head) + 256], tail[sizeof(dump_tail) + 32];
	char *sig;

	snprintf(head, sizeof(head), dump_head, named ? DUMP_THREAD_NAMED : DUMP_THREAD);
	snprintf(tail, sizeof(tail), dump_tail, named ? " name=\"main\"" : "");
	/* Bytes 12-15 of the payload are the signal: "0b000000" for 11. */
	sig = strstr(head, "0100000000000000...") + 8;
	snprintf(sig, 3, "%02x", signal & 0xff);
	sig[2] = '0';
	snprintf(want, sizeof(want), "%s%s\n%s%s", head, crash, frames, tail);
	text_assert_equal(got, want);
}

/*
 * " at FILE:LINE" of address vaddr of this binary, as addr2line (the oracle) gives it, without
 * the discriminator it may add.
 */
static void line_at(uint64_t vaddr, char *out, size_t n)
{
	char addr[32], *argv[] = {"addr2line", "-e", exe, addr, NULL};
	struct child_result r;

	snprintf(addr, sizeof(addr), "0x%" PRIx64, vaddr);
	child_capture(argv, &r);
	assert_int_equal(r.status, 0);
	r.out[strcspn(r.out, " \n")] = '\0';
	assert_non_null(strstr(r.out, "test_cli_crash.c:"));
	snprintf(out, n, " at %s", r.out);
	child_result_free(&r);
}

/*
 * The frames named from the .map, each with its source line where its module's DWARF has one
 * (the call's, before a return address); the modules that give no lines are named in a note.
 */
static void test_dump_crash(void **state)
{
	struct child_result r;
	char frames[8192], at0[600], at1[600];

	(void)state;
	write_trace("crash.xray", 11, 0);
	write_map("crash.xray.map");
	child_xfdr(&r, "dump", "crash.xray", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.err,
			     "xfdr dump: note: no source lines from /nonexistent/libgone.so: ");
	text_assert_contains(r.err, "xfdr dump: note: no source lines from crash.xray.map: ");
	assert_int_equal(text_count_lines(r.err), 2);
	line_at(vaddr0, at0, sizeof(at0));
	line_at(vaddr1 - 1, at1, sizeof(at1));
	snprintf(frames, sizeof(frames),
		 "    #0 0x%" PRIx64 " map_name_wins (%s+0x%" PRIx64 ")%s\n"
		 "    #1 0x%" PRIx64 " crash_caller (%s+0x%" PRIx64 ")%s\n"
		 "    #2 0x7f0000002000 by_pc_name\n"
		 "    #3 0x7f0000003000 (/nonexistent/libgone.so+0x1234)\n"
		 "    #4 0x7f0000004000 (crash.xray.map+0x10)\n"
		 "    #5 0x7f0000005000\n"
		 "    #6 0x7f0000006000 (%s)\n",
		 pc0, exe, vaddr0, at0, pc1, exe, vaddr1, at1, exe);
	expect_dump(r.out, 11, "crash=SIGSEGV signal=11 code=1 addr=0x0 tid=4242 frames=7", frames,
		    1);
	child_result_free(&r);

	/* --stacks changes function lines only. */
	child_xfdr(&r, "dump", "--stacks", "crash.xray", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out, frames);
	child_result_free(&r);
}

/* Without a sidecar: the host's name for the signal, and the pcs alone. */
static void test_dump_crash_no_map(void **state)
{
	struct child_result r;
	char frames[8192];

	(void)state;
	write_trace("crash.xray", 11, 1);
	write_map("crash.xray.map");
	snprintf(frames, sizeof(frames),
		 "    #0 0x%" PRIx64 "\n    #1 0x%" PRIx64 "\n    #2 0x7f0000002000\n"
		 "    #3 0x7f0000003000\n    #4 0x7f0000004000\n    #5 0x7f0000005000\n"
		 "    #6 0x7f0000006000\n",
		 pc0, pc1);
	child_xfdr(&r, "dump", "--no-map", "crash.xray", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	expect_dump(r.out, 11,
		    "crash=SIGSEGV signal=11 code=1 addr=0x0 tid=4242 frames=7 truncated=1", frames,
		    0);
	child_result_free(&r);

	/* A sidecar with no crash lines names no frame either. */
	scratch_write_text("crash.xray.map", "xfdr-map\t1\n");
	child_xfdr(&r, "dump", "crash.xray", NULL);
	assert_int_equal(r.status, 0);
	expect_dump(r.out, 11,
		    "crash=SIGSEGV signal=11 code=1 addr=0x0 tid=4242 frames=7 truncated=1", frames,
		    0);
	child_result_free(&r);
}

/*
 * The signal's name: the sidecar's for its own signal number (even one the host would name
 * otherwise), the host's for another number, '?' for a number the host has no name for.
 */
static void test_dump_signal_names(void **state)
{
	static const char map_bus[] = "crash\t7\tSIGBUS-as-recorded\t2\t0x8\t1\n";
	struct child_result r;

	(void)state;
	write_trace("crash.xray", 7, 0);
	scratch_write_text("crash.xray.map", map_bus);
	child_xfdr(&r, "dump", "crash.xray", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out,
			     "... crash=SIGBUS-as-recorded signal=7 code=1 addr=0x0 tid=4242 "
			     "frames=7\n    #0 0x");
	child_result_free(&r);

	write_trace("crash.xray", 11, 0);
	child_xfdr(&r, "dump", "crash.xray", NULL);
	text_assert_contains(r.out,
			     "... crash=SIGSEGV signal=11 code=1 addr=0x0 tid=4242 frames=7\n");
	child_result_free(&r);

	write_trace("crash.xray", 200, 0);
	child_xfdr(&r, "dump", "crash.xray", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out, "... crash=? signal=200 code=1 addr=0x0 tid=4242 frames=7\n");
	child_result_free(&r);
}

/* A malformed frame line makes the sidecar bad: exit 1, one line naming the file and line. */
static void test_dump_bad_map(void **state)
{
	static const char bad[] = "xfdr-map\t1\ncrash\t11\tSIGSEGV\t1\t0x0\t4242\n"
				  "frame\t0\t0x1234\tf\n";
	struct child_result r;

	(void)state;
	write_trace("crash.xray", 11, 0);
	scratch_write_text("crash.xray.map", bad);
	child_xfdr(&r, "dump", "crash.xray", NULL);
	assert_int_equal(r.status, 1);
	text_assert_only_error_line(
	    &r, "xfdr dump: crash.xray.map: line 3: expected a module path or - "
		"after the symbol, found 'frame\t0\t0x1234\tf'");
	child_result_free(&r);
	child_xfdr(&r, "convert", "crash.xray", NULL);
	assert_int_equal(r.status, 1);
	text_assert_only_error_line(&r, "xfdr convert: crash.xray.map: line 3: ");
	child_result_free(&r);
}

/* ---- a trace the runtime wrote -------------------------------------------------------------- */

static void test_dump_runtime_trace(void **state)
{
	/* A crash of SIGSEGV at 0x28 on tid 99 with two frames, from format.h's offsets. */
	const uint8_t payload[] = {CRSH_HEAD(1, 11, 2, 99, 0x28, 2, 0), L64(pc1), L64(pc0)};
	struct xfdr_options o;
	struct child_result r;
	char path[1024], map[1100], lines[8192], want[8192], at0[600], at1[600];
	FILE *f;

	(void)state;
	assert_int_equal(sizeof(payload), 56);
	xfdr_options_default(&o);
	o.buffer_size = 4096;
	o.buffer_max = 4;
	o.flush_at_exit = 0;
	o.output = "./";
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(xfdr_custom_event(payload, sizeof(payload)), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);

	/* What a crash flush adds to the sidecar: frame 0 unnamed, frame 1 named. */
	snprintf(map, sizeof(map), "%s.map", path);
	snprintf(lines, sizeof(lines),
		 "crash\t11\tSIGSEGV\t2\t0x28\t99\n"
		 "frame\t0\t0x%" PRIx64 "\t<unknown>\t%s\t0x%" PRIx64 "\n"
		 "frame\t1\t0x%" PRIx64 "\tcrash_here\t%s\t0x%" PRIx64 "\n",
		 pc1, exe, vaddr1, pc0, exe, vaddr0);
	f = fopen(map, "a");
	assert_non_null(f);
	assert_true(fputs(lines, f) >= 0);
	assert_int_equal(fclose(f), 0);

	child_xfdr(&r, "verify", path, NULL);
	assert_int_equal(r.status, 0);
	child_result_free(&r);
	child_xfdr(&r, "dump", path, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	line_at(vaddr1, at0, sizeof(at0));
	line_at(vaddr0 - 1, at1, sizeof(at1));
	snprintf(want, sizeof(want),
		 " crash=SIGSEGV signal=11 code=2 addr=0x28 tid=99 frames=2\n"
		 "    #0 0x%" PRIx64 " crash_caller (%s+0x%" PRIx64 ")%s\n"
		 "    #1 0x%" PRIx64 " crash_here (%s+0x%" PRIx64 ")%s\n",
		 pc1, exe, vaddr1, at0, pc0, exe, vaddr0, at1);
	/* The TSC is the runtime's: compare from the crash fields on. */
	text_assert_contains(r.out, want);
	text_assert_contains(r.out, "CustomEventMarker size=56 tsc=");
	text_assert_contains(r.out, "text=\"XFDRCRSH........\"... crash=SIGSEGV");
	child_result_free(&r);

	/* The crash lines leave convert's names alone. */
	child_xfdr(&r, "convert", path, NULL);
	assert_int_equal(r.status, 0);
	child_result_free(&r);
}

static void test_help(void **state)
{
	struct child_result r;

	(void)state;
	child_xfdr(&r, "dump", "--help", NULL);
	assert_int_equal(r.status, 0);
	text_assert_contains(r.out, "XFDRCRSH");
	text_assert_contains(r.out, "#I 0xPC NAME (MODULE+0xMODULE_VADDR)");
	child_result_free(&r);
}

static int setup(void **state)
{
	if (scratch_setup_cwd(state))
		return -1;
	find_frames();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dump_crash),	       cmocka_unit_test(test_dump_crash_no_map),
	    cmocka_unit_test(test_dump_signal_names),  cmocka_unit_test(test_dump_bad_map),
	    cmocka_unit_test(test_dump_runtime_trace), cmocka_unit_test(test_help),
	};

	return cmocka_run_group_tests(tests, setup, scratch_teardown);
}
