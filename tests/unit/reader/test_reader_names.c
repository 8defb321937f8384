/*
 * tests/unit/reader/test_reader_names.c - the .map function names in the reader library
 * (xfdr_names_load/get/free, reader/names.c), against doc/map-format.md, and the window
 * of a snapshot (the `since_tsc` line, xfdr_names_since_tsc), and the thread names of the
 * `thread` lines (xfdr_names_thread), the pool's lines (xfdr_names_pool) and the functions'
 * sites (xfdr_names_function_site).
 *
 * Each sidecar is written out literally here; the expected names, return codes, messages and
 * offsets are read off that text by hand (the offsets are byte counts of the lines before).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/scratch.h"
#include "xfdr/reader.h"

/* A whole sidecar as the runtime writes it: only the function lines name anything. */
static void names_from_function_lines(void **state)
{
	const char *path =
	    scratch_write_text("ok.map", "xfdr-map\t1\n"
					 "pid\t42\n"
					 "thread\t42\t42\tprog\t0\t0\t0\n"
					 "functions\tcyg\t4\n"
					 "function\t1\tmain\t0x1000\t/bin/prog\t0x1000\n"
					 "function\t7\t_ZN3foo3barEv\t0x2000\t-\t-\n"
					 "function\t9\t<unknown>\t0x3000\t-\t-\n"
					 "function\t268435455\t<unassigned>\t-\t-\t-\n"
					 "a_later_key\tanything\n");
	struct xfdr_names *n = NULL;
	struct xfdr_error err;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_non_null(n);
	assert_string_equal(xfdr_names_get(n, 1), "main");
	assert_string_equal(xfdr_names_get(n, 7), "_ZN3foo3barEv"); /* C++ names stay mangled */
	assert_null(xfdr_names_get(n, 9));			    /* <...>: not a name */
	assert_null(xfdr_names_get(n, 268435455));
	assert_null(xfdr_names_get(n, 2));
	assert_null(xfdr_names_get(NULL, 1));
	xfdr_names_free(n);
}

/* The process and its parent: the first `pid` and `ppid` lines; a value that is no pid is 0. */
static void process_lines(void **state)
{
	const char *path = scratch_write_text("proc.map", "xfdr-map\t1\n"
							  "pid\t42\n"
							  "ppid\t7\n"
							  "program\t/bin/prog\n"
							  "pid\t43\n"
							  "ppid\t8\n");
	const char *bad = scratch_write_text("noproc.map", "xfdr-map\t1\n"
							   "ppid\t2147483648\n");
	struct xfdr_names *n = NULL;
	struct xfdr_error err;
	const char *program;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_int_equal(xfdr_names_pid(n, &program), 42);
	assert_string_equal(program, "/bin/prog");
	assert_int_equal(xfdr_names_ppid(n), 7);
	xfdr_names_free(n);
	assert_int_equal(xfdr_names_load(bad, &n, &err), 0);
	assert_int_equal(xfdr_names_pid(n, NULL), 0);
	assert_int_equal(xfdr_names_ppid(n), 0); /* above INT32_MAX */
	xfdr_names_free(n);
	assert_int_equal(xfdr_names_ppid(NULL), 0);
}

/*
 * Where a function line puts its function (xfdr_names_function_site): the module and the
 * address in it, each module kept once; a site that is `-`, malformed or missing is none, and
 * never costs the name.
 */
static void function_sites(void **state)
{
	const char *path =
	    scratch_write_text("sites.map", "xfdr-map\t1\n"
					    "function\t1\tmain\t0x55aa00001000\t/bin/prog\t0x1000\n"
					    "function\t2\tf\t0x55aa00002000\t/bin/prog\t0x2a0F\n"
					    "function\t3\tg\t0x7f0000003000\t/lib/libz.so.1\t0x30\n"
					    "function\t4\th\t0x4000\t-\t-\n"
					    "function\t5\ti\t0x5000\t/bin/prog\t-\n"
					    "function\t6\tj\t0x6000\t/bin/prog\t12\n"
					    "function\t7\tk\n"
					    "function\t8\t<unknown>\t0x8000\t/bin/prog\t0x80\n");
	struct xfdr_names *n = NULL;
	struct xfdr_error err;
	const char *module, *first;
	uint64_t vaddr;
	uint32_t id;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_int_equal(xfdr_names_function_site(n, 1, &module, &vaddr), 1);
	assert_string_equal(module, "/bin/prog");
	assert_int_equal(vaddr, 0x1000);
	first = module;
	assert_int_equal(xfdr_names_function_site(n, 2, &module, &vaddr), 1);
	assert_ptr_equal(module, first); /* one copy per module */
	assert_int_equal(vaddr, 0x2a0f);
	assert_int_equal(xfdr_names_function_site(n, 3, &module, &vaddr), 1);
	assert_string_equal(module, "/lib/libz.so.1");
	assert_int_equal(vaddr, 0x30);
	for (id = 4; id <= 8; id++)
		assert_int_equal(xfdr_names_function_site(n, id, &module, &vaddr), 0);
	for (id = 4; id <= 7; id++)
		assert_non_null(xfdr_names_get(n, id));
	assert_int_equal(xfdr_names_function_site(n, 9, &module, &vaddr), 0);
	assert_int_equal(xfdr_names_function_site(NULL, 1, &module, &vaddr), 0);
	xfdr_names_free(n);
}

/* A sidecar that names nothing is valid and names nothing. */
static void empty_sidecar(void **state)
{
	const char *path = scratch_write_text("empty.map", "");
	struct xfdr_names *n = NULL;
	struct xfdr_error err;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_non_null(n);
	assert_null(xfdr_names_get(n, 0));
	xfdr_names_free(n);
}

/* -1: the file cannot be opened (a usage error for the command). */
static void missing_file(void **state)
{
	const char *path = scratch_path("absent.map");
	struct xfdr_names *n = (struct xfdr_names *)&n;
	struct xfdr_error err;
	char want[512];

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), -1);
	assert_null(n);
	snprintf(want, sizeof(want), "%s: %s", path, strerror(ENOENT));
	assert_string_equal(err.text, want);
}

/* -2: a malformed function line, named by line number and byte offset. */
static void malformed_line(void **state)
{
	/* "pid\t1\n" is 6 bytes, "function\t1\tmain\n" 16: the bad line starts at 22. */
	const char *path = scratch_write_text("bad.map", "pid\t1\n"
							 "function\t1\tmain\n"
							 "function\tx\tmain\n");
	struct xfdr_names *n = (struct xfdr_names *)&n;
	struct xfdr_error err;
	char want[512];

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), -2);
	assert_null(n);
	assert_int_equal(err.offset, 22);
	snprintf(want, sizeof(want), "%s: line 3: ", path);
	assert_memory_equal(err.text, want, strlen(want));
	assert_non_null(strstr(err.text, "function\tx\tmain"));

	/* An id past 28 bits is malformed too. */
	path = scratch_write_text("wide.map", "function\t268435456\tf\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), -2);
	assert_int_equal(err.offset, 0);
}

/* -2: one id named twice (as when XRay and -finstrument-functions ids meet in one process). */
static void id_named_twice(void **state)
{
	const char *path = scratch_write_text("twice.map", "function\t3\tf\n"
							   "function\t3\tg\n");
	struct xfdr_names *n = (struct xfdr_names *)&n;
	struct xfdr_error err;
	char want[512];

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), -2);
	assert_null(n);
	snprintf(want, sizeof(want), "%s: function id 3 is named twice ('f' and 'g')", path);
	assert_string_equal(err.text, want);
}

/* A snapshot's sidecar: since_tsc among keys the reader does not know, which it skips. */
static void since_tsc(void **state)
{
	const char *path = scratch_write_text("snap.map", "xfdr-map\t1\n"
							  "mode\tring\n"
							  "since_tsc\t18446744073709551615\n"
							  "func_duration_threshold_us\t5\n"
							  "overwritten\t12\n"
							  "function\t1\tmain\t0x1\t-\t-\n");
	struct xfdr_names *n = NULL;
	struct xfdr_error err;
	uint64_t tsc = 7;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_int_equal(xfdr_names_since_tsc(n, &tsc), 1);
	assert_true(tsc == UINT64_MAX);
	assert_string_equal(xfdr_names_get(n, 1), "main");
	xfdr_names_free(n);

	/* A later field after the TSC is skipped; 0 is a window too. */
	path = scratch_write_text("snap0.map", "since_tsc\t0\tlater\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	tsc = 7;
	assert_int_equal(xfdr_names_since_tsc(n, &tsc), 1);
	assert_int_equal(tsc, 0);
	xfdr_names_free(n);

	/* Not a snapshot: no since_tsc (a key that only starts like it does not count). */
	path = scratch_write_text("plain.map", "since_tsc_x\t5\nsince\t5\nfunction\t1\tmain\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	tsc = 7;
	assert_int_equal(xfdr_names_since_tsc(n, &tsc), 0);
	assert_int_equal(tsc, 7);
	xfdr_names_free(n);
	assert_int_equal(xfdr_names_since_tsc(NULL, &tsc), 0);
}

/* -2: a since_tsc that is not a decimal u64, or a second one. */
static void since_tsc_malformed(void **state)
{
	static const char *const bad[] = {
	    "since_tsc\t\n",	 "since_tsc\t12x\n", "since_tsc\t-1\n",
	    "since_tsc\t 12\n",	 "since_tsc\t+12\n", "since_tsc\t18446744073709551616\n",
	    "since_tsc\t0x10\n",
	};
	struct xfdr_names *n = (struct xfdr_names *)&n;
	struct xfdr_error err;
	char want[512];
	const char *path;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[64];

		/* "pid\t1\n" is 6 bytes: the bad line 2 starts at 6. */
		snprintf(text, sizeof(text), "pid\t1\n%s", bad[i]);
		path = scratch_write_text("badsince.map", text);
		n = (struct xfdr_names *)&n;
		assert_int_equal(xfdr_names_load(path, &n, &err), -2);
		assert_null(n);
		assert_int_equal(err.offset, 6);
		snprintf(want, sizeof(want),
			 "%s: line 2: expected a decimal TSC (0..18446744073709551615) after "
			 "'since_tsc<TAB>', found '",
			 path);
		assert_memory_equal(err.text, want, strlen(want));
	}

	path = scratch_write_text("twosince.map", "since_tsc\t5\nsince_tsc\t5\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), -2);
	assert_null(n);
	assert_int_equal(err.offset, 12);
	snprintf(want, sizeof(want),
		 "%s: line 2: expected at most one since_tsc line, found 'since_tsc\t5'", path);
	assert_string_equal(err.text, want);
}

/*
 * Thread lines: "thread<TAB>TID<TAB>THREAD_ID<TAB>NAME<TAB>counts...", looked up by THREAD_ID (the
 * NewBuffer id). Lines that name no buffer's thread are skipped, never an error.
 */
static void thread_names(void **state)
{
	const char *path =
	    scratch_write_text("threads.map", "xfdr-map\t1\n"
					      "thread\t4242\t1\tmain prog\t0\t0\t0\t0\t0\t0\n"
					      "thread\t4250\t3\tworker-2\t1\t2\t3\t4\t5\t6\n"
					      "thread\t4251\t0\tonly-dropped\t9\t0\t0\t0\t0\t0\n"
					      "thread\t4252\t5\t\t0\t0\t0\t0\t0\t0\n"
					      "thread\t4253\t6\t<unknown>\t0\t0\t0\t0\t0\t0\n"
					      "thread\t4254\t7\tbare\n"
					      "thread\tx\t8\tbad-tid\n"
					      "thread\t4256\t9x\tbad-id\n"
					      "thread\t4257\t10\n"
					      "thread\t4258\t3\tsecond-for-3\t0\t0\t0\t0\t0\t0\n"
					      "thread\t4259\t65535\tq\"\\\x01\xff\n"
					      "threads\t4260\t11\tnot-a-thread-line\n"
					      "function\t1\tmain\n");
	static const uint32_t unnamed[] = {0, 2, 4, 5, 6, 8, 9, 10, 11, 12, 65534};
	struct xfdr_names *n = NULL;
	struct xfdr_error err;
	uint32_t tid = 1;
	size_t i;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_string_equal(xfdr_names_thread(n, 1, &tid), "main prog");
	assert_int_equal(tid, 4242);
	/* The last line of an id wins (a live map names a renamed thread again). */
	assert_string_equal(xfdr_names_thread(n, 3, &tid), "second-for-3");
	assert_int_equal(tid, 4258);
	/* Only the three leading fields are needed. */
	assert_string_equal(xfdr_names_thread(n, 7, NULL), "bare");
	/* Names are kept byte for byte (the runtime writes control characters as '?'). */
	assert_string_equal(xfdr_names_thread(n, 65535, &tid), "q\"\\\x01\xff");
	assert_int_equal(tid, 4259);
	/* Id 0 (no buffer), an empty name, <unknown>, malformed lines, other keys: no name. */
	for (i = 0; i < sizeof(unnamed) / sizeof(unnamed[0]); i++) {
		tid = 1;
		assert_null(xfdr_names_thread(n, unnamed[i], &tid));
		assert_int_equal(tid, 0);
	}
	assert_string_equal(xfdr_names_get(n, 1), "main");
	xfdr_names_free(n);

	/* No sidecar, or one without thread lines. */
	tid = 1;
	assert_null(xfdr_names_thread(NULL, 1, &tid));
	assert_int_equal(tid, 0);
	path = scratch_write_text("nothreads.map", "function\t1\tmain\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_null(xfdr_names_thread(n, 1, NULL));
	xfdr_names_free(n);
}

/*
 * The pool's lines (xfdr_names_pool): numbers as the runtime writes them; the first line of a
 * key (of a drop cause) counts; a value that is not a number, an unknown cause, a key without a
 * value: as no line, and never an invalid sidecar.
 */
static void pool_facts(void **state)
{
	const char *path = scratch_write_text("pool.map", "xfdr-map\t1\n"
							  "buffer_size\t65536\n"
							  "buffer_max\t256\n"
							  "buffer_max\t7\n"
							  "mode\tring\n"
							  "mode\tbounded\n"
							  "buffers_written\t+3\n"
							  "buffers_written\t3\n"
							  "dropped\tno_buffer\t12\n"
							  "dropped\tno_buffer\t99\n"
							  "dropped\ttoo_large\t0002\n"
							  "dropped\tgremlins\t5\n"
							  "dropped\ttotal\t12\n"
							  "overwritten\t18446744073709551615\n"
							  "function\t1\tmain\n");
	struct xfdr_map_pool p;
	struct xfdr_names *n = NULL;
	struct xfdr_error err;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	xfdr_names_pool(n, &p);
	assert_string_equal(p.mode, "ring");
	assert_true(p.have_buffer_size && p.buffer_size == 65536);
	assert_true(p.have_buffer_max && p.buffer_max == 256);
	/* "+3" is no number; the key's first line was that one: no buffers_written */
	assert_false(p.have_buffers_written);
	assert_true(p.have_overwritten && p.overwritten == UINT64_MAX);
	assert_true(p.have_drops);
	assert_int_equal(p.dropped[XFDR_MAP_DROP_NO_BUFFER], 12);
	assert_int_equal(p.dropped[XFDR_MAP_DROP_TOO_LARGE], 0); /* "0002" is no number */
	assert_int_equal(p.dropped[XFDR_MAP_DROP_REENTRANT], 0);
	assert_int_equal(p.dropped[XFDR_MAP_DROP_TOTAL], 12);
	assert_string_equal(xfdr_names_get(n, 1), "main");
	xfdr_names_free(n);

	/* No such lines, and no sidecar: nothing. */
	path = scratch_write_text("nopool.map", "function\t1\tmain\nmode\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	xfdr_names_pool(n, &p);
	assert_null(p.mode);
	assert_false(p.have_buffer_size || p.have_buffer_max || p.have_drops);
	xfdr_names_free(n);
	memset(&p, 0xa5, sizeof(p));
	xfdr_names_pool(NULL, &p);
	assert_null(p.mode);
	assert_false(p.have_buffer_max || p.have_overwritten || p.have_drops);
}

/* The rate and how it was found: the first line of each counts; a bad rate is no rate. */
static void rate_and_method(void **state)
{
	const char *path = scratch_write_text("rate.map", "xfdr-map\t1\n"
							  "tsc_hz\t2100000000\n"
							  "tsc_hz_methods\tnot-this\n"
							  "tsc_hz_method\tcpuid-0x15\tlater\n"
							  "tsc_hz\t5\n"
							  "tsc_hz_method\tcalibrated\n");
	struct xfdr_names *n = NULL;
	struct xfdr_error err;
	uint64_t hz = 0;

	(void)state;
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_int_equal(xfdr_names_tsc_hz(n, &hz), 1);
	assert_true(hz == 2100000000u);
	assert_string_equal(xfdr_names_tsc_hz_method(n), "cpuid-0x15");
	xfdr_names_free(n);

	path = scratch_write_text("norate.map", "tsc_hz\t12x\n");
	assert_int_equal(xfdr_names_load(path, &n, &err), 0);
	assert_int_equal(xfdr_names_tsc_hz(n, &hz), 0);
	assert_null(xfdr_names_tsc_hz_method(n));
	xfdr_names_free(n);
	assert_null(xfdr_names_tsc_hz_method(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names_from_function_lines),
	    cmocka_unit_test(process_lines),
	    cmocka_unit_test(function_sites),
	    cmocka_unit_test(pool_facts),
	    cmocka_unit_test(empty_sidecar),
	    cmocka_unit_test(missing_file),
	    cmocka_unit_test(malformed_line),
	    cmocka_unit_test(id_named_twice),
	    cmocka_unit_test(since_tsc),
	    cmocka_unit_test(since_tsc_malformed),
	    cmocka_unit_test(thread_names),
	    cmocka_unit_test(rate_and_method),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
