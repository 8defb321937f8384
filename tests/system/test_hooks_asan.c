/*
 * tests/system/test_hooks_asan.c - a user program built with AddressSanitizer and UBSan, recorded.
 *
 * Users debug with -fsanitize=address and want the flight recorder in the same build. The
 * program of test_hooks_cyg.c (tests/e2e/hooks_cyg_prog.c and its shared library) is compiled
 * with -fsanitize=address,undefined -fno-sanitize-recover=all -finstrument-functions and gets
 * the runtime the three ways users give it: libxfdr.a linked in, -lxfdr (the shared runtime),
 * and LD_PRELOAD (after the sanitizer's own runtime, which must come first). Every entry and
 * exit must be recorded as without the sanitizers, and the sanitizers must report nothing: any
 * report ends the program with a non-zero status, which fails the run.
 *
 * clang's XRay cannot be tested this way: clang 14 refuses to link -fxray-instrument with
 * -fsanitize=address (both runtimes define the sanitizer common library).
 */
#include "tests/support/e2e_calls.h"

/* main(3), as in test_hooks_cyg.c: the program's call tree, from its source. */
static const char expected_calls[] =
    "E main,E depth,E depth,E depth,E depth,X depth,X depth,X depth,X depth,"
    "E tail,E leaf,X leaf,X tail,E lib_twice,E lib_helper,X lib_helper,X lib_twice,X main";

#define SAN_FLAGS "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"

enum link_mode { STATIC_ARCHIVE, SHARED_RUNTIME, PRELOADED };

/* The compiler's ASan runtime, which an LD_PRELOAD list must name first. */
static void asan_runtime(const char *cc, char *out, size_t n)
{
	char *argv[] = {(char *)cc, "-print-file-name=libasan.so", NULL};
	struct child_result r;

	child_capture(argv, &r);
	assert_int_equal(r.status, 0);
	snprintf(out, n, "%.*s", (int)strcspn(r.out, "\n"), r.out);
	child_result_free(&r);
	assert_true(out[0] == '/');
}

static void build(const char *cc, enum link_mode mode, const char *dir, char *prog)
{
	char lib_src[TH_PATH_BYTES], prog_src[TH_PATH_BYTES], lib[TH_PATH_BYTES];
	char libdir_flag[TH_PATH_BYTES + 8], rpath[TH_PATH_BYTES + 16], log[TH_PATH_BYTES];
	char xfdr_dir[TH_PATH_BYTES], xfdr_l[TH_PATH_BYTES + 8], xfdr_rpath[TH_PATH_BYTES + 16];
	char archive[TH_PATH_BYTES];

	th_src_file(lib_src, "tests/e2e/hooks_cyg_lib.c");
	th_src_file(prog_src, "tests/e2e/hooks_cyg_prog.c");
	th_join(lib, dir, "/libhooks.so");
	th_join(prog, dir, "/prog");
	th_join(log, dir, "/build.log");
	snprintf(libdir_flag, sizeof(libdir_flag), "-L%s", dir);
	snprintf(rpath, sizeof(rpath), "-Wl,-rpath,%s", dir);
	th_build_file(xfdr_dir, "lib");
	snprintf(xfdr_l, sizeof(xfdr_l), "-L%s", xfdr_dir);
	snprintf(xfdr_rpath, sizeof(xfdr_rpath), "-Wl,-rpath,%s", xfdr_dir);
	th_build_file(archive, "lib/libxfdr.a");
	{
		char *argv[] = {(char *)cc, "-O1",     SAN_FLAGS, "-finstrument-functions",
				"-fPIC",    "-shared", lib_src,	  "-o",
				lib,	    NULL};

		th_run_ok(argv, NULL, log);
	}
	if (mode == STATIC_ARCHIVE) {
		char *argv[] = {(char *)cc,
				"-O1",
				SAN_FLAGS,
				"-finstrument-functions",
				prog_src,
				libdir_flag,
				"-lhooks",
				rpath,
				"-Wl,-u,xfdr_init",
				archive,
				CHILD_RUNTIME_LIBS,
				"-lpthread",
				"-ldl",
				"-o",
				prog,
				NULL};

		th_run_ok(argv, NULL, log);
	} else if (mode == SHARED_RUNTIME) {
		char *argv[] = {(char *)cc, "-O1",	 SAN_FLAGS,  "-finstrument-functions",
				prog_src,   libdir_flag, "-lhooks",  rpath,
				xfdr_l,	    "-lxfdr",	 xfdr_rpath, "-o",
				prog,	    NULL};

		th_run_ok(argv, NULL, log);
	} else {
		char *argv[] = {(char *)cc, "-O1",	 SAN_FLAGS, "-finstrument-functions",
				prog_src,   libdir_flag, "-lhooks", rpath,
				"-o",	    prog,	 NULL};

		th_run_ok(argv, NULL, log);
	}
}

static void run_variant(const char *cc, enum link_mode mode, const char *sub)
{
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], out[TH_PATH_BYTES], log[TH_PATH_BYTES];
	char trace[TH_PATH_BYTES], map[TH_PATH_BYTES], calls[4096], options[TH_PATH_BYTES + 32];
	char preload[3 * TH_PATH_BYTES], asan[TH_PATH_BYTES], so[TH_PATH_BYTES];
	char *argv[] = {prog, "3", NULL};
	/* The sanitizers' exit status on a report, distinct from anything the program returns. */
	char *env[] = {options, "ASAN_OPTIONS=exitcode=86:detect_leaks=1",
		       "UBSAN_OPTIONS=halt_on_error=1:exitcode=86", preload, NULL};
	struct th_names names;

	th_path(dir, sub, 1);
	build(cc, mode, dir, prog);
	th_join(out, dir, "/out");
	assert_int_equal(mkdir(out, 0755), 0);
	snprintf(options, sizeof(options), "XFDR_OPTIONS=start=1:output=%s/", out);
	if (mode == PRELOADED) {
		asan_runtime(cc, asan, sizeof(asan));
		th_build_file(so, "lib/libxfdr.so.0");
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s %s", asan, so);
	} else {
		env[3] = NULL;
	}
	th_join(log, dir, "/run.log");
	th_run_ok(argv, env, log);
	th_find_one(out, ".xray", trace);
	th_join(map, trace, ".map");
	th_read_names(map, &names);
	th_calls(trace, &names, 0, calls, sizeof(calls));
	assert_string_equal(calls, expected_calls);
	th_join(log, dir, "/tools.log");
	th_tools_accept(trace, log);
}

static void gcc_static_archive(void **state)
{
	(void)state;
	run_variant("gcc", STATIC_ARCHIVE, "gcc-static");
}

static void gcc_shared_runtime(void **state)
{
	(void)state;
	run_variant("gcc", SHARED_RUNTIME, "gcc-shared");
}

static void gcc_preloaded(void **state)
{
	(void)state;
	run_variant("gcc", PRELOADED, "gcc-preload");
}

static void clang_shared_runtime(void **state)
{
	(void)state;
	run_variant("clang", SHARED_RUNTIME, "clang-shared");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(gcc_static_archive),
	    cmocka_unit_test(gcc_shared_runtime),
	    cmocka_unit_test(gcc_preloaded),
	    cmocka_unit_test(clang_shared_runtime),
	};

	return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
