/*
 * tests/system/test_hooks_cyg.c - the -finstrument-functions hooks, end to end.
 *
 * tests/e2e/hooks_cyg_prog.c (+ its shared library hooks_cyg_lib.c) is compiled here with
 * gcc and clang at -O0 and -O2, run under xfdr and its trace read back. The expected calls
 * come from the program's source; the names from the .map sidecar; the ids must be in the
 * order the functions were first called. Each program is recorded unmodified through
 * LD_PRELOAD=libxfdr.so, one more is linked with libxfdr.a, and that one again under
 * valgrind's memcheck (whose CPUID is not the host's: see clock_cpu_has_rdtscp()), which must
 * find no error but libunwind's own (tests/system/valgrind.supp).
 */
#include "tests/support/e2e_calls.h"

/* main(3): depth(3..0), tail(3) -> leaf(6), lib_twice(3) -> lib_helper(3). */
static const char expected_calls[] =
    "E main,E depth,E depth,E depth,E depth,X depth,X depth,X depth,X depth,"
    "E tail,E leaf,X leaf,X tail,E lib_twice,E lib_helper,X lib_helper,X lib_twice,X main";

/* First-seen order: ids 1, 2, ... */
static const char *const first_seen[] = {"main", "depth",     "tail",
					 "leaf", "lib_twice", "lib_helper"};

enum link_mode {
	PRELOAD = 0, /* the program knows nothing of xfdr */
	LINKED = 1,  /* libxfdr.a linked in */
};

struct variant {
	const char *cc;
	const char *opt;
	enum link_mode mode;
	const char *dir; /* under the test root */
	int valgrind;	 /* run under valgrind's memcheck (LINKED only: nothing to preload) */
};

/* Compile the library and the program of v into dir; returns through prog. */
static void build(const struct variant *v, const char *dir, char *prog)
{
	char lib_src[TH_PATH_BYTES], prog_src[TH_PATH_BYTES], lib[TH_PATH_BYTES];
	char libdir_flag[TH_PATH_BYTES + 8], rpath[TH_PATH_BYTES + 16], log[TH_PATH_BYTES];
	char libxfdr[TH_PATH_BYTES];

	th_src_file(lib_src, "tests/e2e/hooks_cyg_lib.c");
	th_src_file(prog_src, "tests/e2e/hooks_cyg_prog.c");
	th_join(lib, dir, "/libhooks.so");
	th_join(prog, dir, "/prog");
	th_join(log, dir, "/build.log");
	snprintf(libdir_flag, sizeof(libdir_flag), "-L%s", dir);
	snprintf(rpath, sizeof(rpath), "-Wl,-rpath,%s", dir);
	{
		char *argv[] = {(char *)v->cc,
				(char *)v->opt,
				"-finstrument-functions",
				"-fPIC",
				"-shared",
				lib_src,
				"-o",
				lib,
				NULL};

		th_run_ok(argv, NULL, log);
	}
	if (v->mode == PRELOAD) {
		char *argv[] = {(char *)v->cc, (char *)v->opt, "-finstrument-functions",
				prog_src,      libdir_flag,    "-lhooks",
				rpath,	       "-o",	       prog,
				NULL};

		th_run_ok(argv, NULL, log);
	} else {
		char *argv[] = {(char *)v->cc,
				(char *)v->opt,
				"-finstrument-functions",
				prog_src,
				libdir_flag,
				"-lhooks",
				rpath,
				libxfdr,
				CHILD_RUNTIME_LIBS,
				"-lpthread",
				"-ldl",
				"-o",
				prog,
				NULL};

		th_build_file(libxfdr, "lib/libxfdr.a");
		th_run_ok(argv, NULL, log);
	}
}

/* Run prog 3 recording into out/; returns the trace's path. */
static void record(const struct variant *v, const char *dir, const char *prog, char *trace)
{
	char out[TH_PATH_BYTES], log[TH_PATH_BYTES], options[TH_PATH_BYTES + 32];
	char preload[TH_PATH_BYTES + 16], so[TH_PATH_BYTES];
	char supp[TH_PATH_BYTES], supp_flag[TH_PATH_BYTES + 16];
	char *argv[] = {(char *)prog, "3", NULL};
	char *valgrind_argv[] = {"valgrind", "-q", "--error-exitcode=99", supp_flag, (char *)prog,
				 "3",	     NULL};
	char *env[] = {options, preload, NULL};

	th_src_file(supp, "tests/system/valgrind.supp");
	snprintf(supp_flag, sizeof(supp_flag), "--suppressions=%s", supp);
	th_join(out, dir, "/out");
	assert_int_equal(mkdir(out, 0755), 0);
	th_join(log, dir, "/run.log");
	snprintf(options, sizeof(options), "XFDR_OPTIONS=start=1:output=%s/", out);
	if (v->mode == PRELOAD) {
		th_build_file(so, "lib/libxfdr.so.0");
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", so);
	} else {
		env[1] = NULL;
	}
	th_run_ok(v->valgrind ? valgrind_argv : argv, env, log);
	th_find_one(out, ".xray", trace);
}

static void check_map(const char *map, const char *prog, const char *dir)
{
	char line[4096], lib[TH_PATH_BYTES];
	unsigned listed = 0, seen = 0;
	FILE *f = fopen(map, "r");

	th_join(lib, dir, "/libhooks.so");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[64], addr[32], module[TH_PATH_BYTES], vaddr[32];
		unsigned id;

		if (sscanf(line, "functions\tcyg\t%u", &listed) == 1)
			continue;
		if (sscanf(line, "function\t%u\t%63[^\t]\t%31[^\t]\t%511[^\t]\t%31[^\n]", &id, name,
			   addr, module, vaddr) != 5)
			continue;
		/* Ids are given in the order the functions were first called. */
		assert_true(id >= 1 && id <= 6);
		assert_string_equal(name, first_seen[id - 1]);
		assert_string_equal(module, strncmp(name, "lib_", 4) ? prog : lib);
		assert_true(!strncmp(addr, "0x", 2) && !strncmp(vaddr, "0x", 2));
		seen++;
	}
	fclose(f);
	assert_int_equal(listed, 6);
	assert_int_equal(seen, 6);
}

static void run_variant(const struct variant *v)
{
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], trace[TH_PATH_BYTES], map[TH_PATH_BYTES];
	char calls[4096], log[TH_PATH_BYTES];
	struct th_names names;

	th_path(dir, v->dir, 1);
	build(v, dir, prog);
	record(v, dir, prog, trace);
	th_join(map, trace, ".map");
	th_read_names(map, &names);
	th_calls(trace, &names, 0, calls, sizeof(calls));
	assert_string_equal(calls, expected_calls);
	check_map(map, prog, dir);
	th_join(log, dir, "/tools.log");
	th_tools_accept(trace, log);
}

static void gcc_O0_preload(void **state)
{
	static const struct variant v = {"gcc", "-O0", PRELOAD, "gcc-O0", 0};

	(void)state;
	run_variant(&v);
}

static void gcc_O2_preload(void **state)
{
	static const struct variant v = {"gcc", "-O2", PRELOAD, "gcc-O2", 0};

	(void)state;
	run_variant(&v);
}

static void clang_O0_preload(void **state)
{
	static const struct variant v = {"clang", "-O0", PRELOAD, "clang-O0", 0};

	(void)state;
	run_variant(&v);
}

static void clang_O2_preload(void **state)
{
	static const struct variant v = {"clang", "-O2", PRELOAD, "clang-O2", 0};

	(void)state;
	run_variant(&v);
}

static void gcc_O2_linked(void **state)
{
	static const struct variant v = {"gcc", "-O2", LINKED, "gcc-O2-linked", 0};

	(void)state;
	run_variant(&v);
}

static void gcc_O2_linked_under_valgrind(void **state)
{
	static const struct variant v = {"gcc", "-O2", LINKED, "gcc-O2-valgrind", 1};

	(void)state;
	run_variant(&v);
}

/* Without start=1 the preloaded library records nothing and writes no file. */
static void idle_writes_nothing(void **state)
{
	static const struct variant v = {"gcc", "-O2", PRELOAD, "idle", 0};
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], so[TH_PATH_BYTES], log[TH_PATH_BYTES];
	char preload[TH_PATH_BYTES + 16];
	char *argv[] = {prog, "3", NULL};
	char *env[] = {preload, "XFDR_OPTIONS=buffer_max=4", NULL};
	struct dirent *e;
	DIR *d;

	(void)state;
	th_path(dir, v.dir, 1);
	build(&v, dir, prog);
	th_build_file(so, "lib/libxfdr.so.0");
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", so);
	th_join(log, dir, "/run.log");
	assert_int_equal(chdir(dir), 0);
	th_run_ok(argv, env, log);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)))
		assert_null(strstr(e->d_name, ".xray"));
	closedir(d);
	assert_int_equal(chdir("/"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(gcc_O0_preload),	   cmocka_unit_test(gcc_O2_preload),
	    cmocka_unit_test(clang_O0_preload),	   cmocka_unit_test(clang_O2_preload),
	    cmocka_unit_test(gcc_O2_linked),	   cmocka_unit_test(gcc_O2_linked_under_valgrind),
	    cmocka_unit_test(idle_writes_nothing),
	};

	return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
