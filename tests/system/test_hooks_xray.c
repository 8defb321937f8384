/*
 * tests/system/test_hooks_xray.c - xfdr as the handler of clang's XRay sleds, end to end.
 *
 * tests/e2e/hooks_xray_prog.c is compiled with clang -fxray-instrument at -O0 and -O2 and
 * linked with libxfdr.a, and at -O2 with -lxfdr (the shared runtime: XRay's runtime symbols
 * are hidden, so -lxfdr links an object that hands them over), run with XFDR_OPTIONS=start=1
 * and its trace read back. Expected events come from
 * the program's source: at -O2 tail() jumps to leaf() (Tail_Exit, then leaf's entry), at -O0
 * it calls it. Names come from the .map sidecar, and llvm-xray must name the same ids from
 * the program's own instrumentation map. tests/e2e/hooks_xray_startstop.c checks that
 * xfdr_start() patches and xfdr_stop() unpatches the sleds; tests/e2e/hooks_xray_crash.c that
 * a crash handler does not.
 */
#include <signal.h>

#include "tests/support/e2e_calls.h"

#define CALLS_HEAD                                                                                 \
	"E main,C xfdr-hooks,E depth,E depth,E depth,E depth,X depth,X depth,X depth,X depth,"
#define CALLS_TAIL "A logged(3),X logged,X main"

static const char expected_O0[] = CALLS_HEAD "E tail,E leaf,X leaf,X tail," CALLS_TAIL;
static const char expected_O2[] = CALLS_HEAD "E tail,T tail,E leaf,X leaf," CALLS_TAIL;

static const char *const functions[] = {"main", "depth", "tail", "leaf", "logged"};

/* Run argv (env: more of the environment, may be NULL) with its output in log; log's text. */
static void run_read(char *const argv[], char *const env[], const char *log, char *text,
		     size_t size)
{
	size_t n;
	FILE *f;

	th_run_ok(argv, env, log);
	f = fopen(log, "r");
	assert_non_null(f);
	n = fread(text, 1, size - 1, f);
	text[n] = '\0';
	fclose(f);
}

enum link { STATIC, SHARED };

static void compile(const char *src_rel, const char *opt, enum link how, const char *dir,
		    char *prog)
{
	char src[TH_PATH_BYTES], libxfdr[TH_PATH_BYTES], log[TH_PATH_BYTES], inc[TH_PATH_BYTES];
	char incdir[TH_PATH_BYTES], libdir[TH_PATH_BYTES + 2];
	/* -g: llvm-xray's account and xfdr's both read the lines of its DWARF */
	char *argv[] = {"clang", (char *)opt, "-g", "-fxray-instrument",
			"-fxray-instruction-threshold=1", inc, src,
			/* pulls the runtime in: the program itself may not refer to xfdr */
			"-Wl,-u,xfdr_init", libxfdr, CHILD_RUNTIME_LIBS, "-lpthread", "-ldl", "-o",
			prog, NULL};
	char *shared_argv[] = {"clang",
			       (char *)opt,
			       "-fxray-instrument",
			       "-fxray-instruction-threshold=1",
			       inc,
			       src,
			       libdir,
			       "-lxfdr",
			       "-o",
			       prog,
			       NULL};

	th_src_file(src, src_rel);
	th_src_file(incdir, "include");
	th_join(inc, "-I", incdir);
	th_build_file(libxfdr, "lib/libxfdr.a");
	th_build_file(libdir + 2, "lib");
	memcpy(libdir, "-L", 2);
	th_join(prog, dir, "/prog");
	th_join(log, dir, "/build.log");
	th_run_ok(how == SHARED ? shared_argv : argv, NULL, log);
}

static void record(const char *dir, const char *prog, char *trace)
{
	char out[TH_PATH_BYTES], log[TH_PATH_BYTES], options[TH_PATH_BYTES + 32];
	char libpath[TH_PATH_BYTES + 16];
	char *argv[] = {(char *)prog, "3", NULL};
	char *env[] = {options, libpath, NULL};

	th_join(out, dir, "/out");
	assert_int_equal(mkdir(out, 0755), 0);
	th_join(log, dir, "/run.log");
	if (snprintf(options, sizeof(options), "XFDR_OPTIONS=start=1:output=%s/", out) >=
	    (int)sizeof(options))
		fail();
	th_build_file(libpath + 16, "lib");
	memcpy(libpath, "LD_LIBRARY_PATH=", 16);
	th_run_ok(argv, env, log);
	th_find_one(out, ".xray", trace);
}

/* The map lists XRay's 5 ids, each with its name and the program as module. */
static void check_map(const char *map, const char *prog)
{
	char line[4096];
	unsigned listed = 0, seen = 0, i;
	FILE *f = fopen(map, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[64], module[TH_PATH_BYTES];
		unsigned id;

		if (sscanf(line, "functions\txray\t%u", &listed) == 1)
			continue;
		if (sscanf(line, "function\t%u\t%63[^\t]\t%*[^\t]\t%511[^\t]", &id, name, module) !=
		    3)
			continue;
		for (i = 0; i < 5 && strcmp(name, functions[i]); i++)
			;
		assert_true(i < 5);
		assert_string_equal(module, prog);
		seen++;
	}
	fclose(f);
	assert_int_equal(listed, 5);
	assert_int_equal(seen, 5);
}

/* Whether prog needs libxfdr.so.0 (readelf -d), i.e. was linked with the shared runtime. */
static int needs_shared_runtime(const char *dir, const char *prog)
{
	char log[TH_PATH_BYTES], text[16384];
	char *argv[] = {"readelf", "-d", (char *)prog, NULL};

	th_join(log, dir, "/readelf.log");
	run_read(argv, NULL, log, text, sizeof(text));
	return th_count(text, "Shared library: [libxfdr.so.0]") == 1;
}

static void run_variant(const char *opt, enum link how, const char *expected)
{
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], trace[TH_PATH_BYTES], map[TH_PATH_BYTES];
	char calls[4096], log[TH_PATH_BYTES], sub[64];
	struct th_names names;

	snprintf(sub, sizeof(sub), "%s%s", opt + 1, how == SHARED ? "-shared" : "");
	th_path(dir, sub, 1);
	compile("tests/e2e/hooks_xray_prog.c", opt, how, dir, prog);
	assert_int_equal(needs_shared_runtime(dir, prog), how == SHARED);
	record(dir, prog, trace);
	th_join(map, trace, ".map");
	th_read_names(map, &names);
	th_calls(trace, &names, 0, calls, sizeof(calls));
	assert_string_equal(calls, expected);
	check_map(map, prog);
	th_join(log, dir, "/tools.log");
	th_tools_accept(trace, log);
}

static void xray_O0(void **state)
{
	(void)state;
	run_variant("-O0", STATIC, expected_O0);
}

static void xray_O2(void **state)
{
	(void)state;
	run_variant("-O2", STATIC, expected_O2);
}

/* clang -fxray-instrument prog.c -lxfdr: the shared runtime records XRay's sleds too. */
static void xray_shared_library(void **state)
{
	(void)state;
	run_variant("-O2", SHARED, expected_O2);
}

/* Run llvm-xray with args; its output (stdout and stderr) into out. */
static void llvm_xray(char *const args[], const char *dir, char *out, size_t out_bytes)
{
	char *argv[16], log[TH_PATH_BYTES];
	size_t i;

	argv[0] = (char *)th_env("XFDR_LLVM_XRAY", "llvm-xray");
	for (i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	th_join(log, dir, "/llvm-xray.log");
	run_read(argv, NULL, log, out, out_bytes);
}

/*
 * XRay's ids are kept: llvm-xray names them from the program's instrumentation map.
 * `account` sums per function (every call of depth, 4, is there) and `convert -symbolize`
 * names each record.
 */
static void llvm_xray_names_functions(void **state)
{
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], trace[TH_PATH_BYTES], out[16384];
	size_t i;

	(void)state;
	th_path(dir, "llvm", 1);
	compile("tests/e2e/hooks_xray_prog.c", "-O2", STATIC, dir, prog);
	record(dir, prog, trace);
	{
		char *args[] = {"account", "-m", prog, trace, NULL};

		llvm_xray(args, dir, out, sizeof(out));
		assert_non_null(strstr(out, "Functions with latencies: 5"));
		for (i = 0; i < 5; i++)
			if (!strstr(out, functions[i]))
				fail_msg("llvm-xray account does not name %s:\n%s", functions[i],
					 out);
		assert_non_null(strstr(out, "         4 [")); /* depth's count */
	}
	{
		char *args[] = {"convert", "-m", prog, "-symbolize", "--output-format=yaml",
				trace,	   NULL};

		llvm_xray(args, dir, out, sizeof(out));
		assert_int_equal(th_count(out, "function: depth,"), 8);
		assert_int_equal(th_count(out, "function: logged,"), 2);
	}
}

/* In `account`'s text, the debug column of the row of function name: "FILE:LINE:COL". */
static void debug_column(const char *table, const char *name, char *out, size_t size)
{
	char tail[80];
	const char *end, *start;

	snprintf(tail, sizeof(tail), ": %s\n", name);
	end = strstr(table, tail);
	if (!end)
		fail_msg("no row for %s in:\n%s", name, table);
	for (start = end; start > table && start[-1] != ' '; start--)
		;
	if ((size_t)(end - start) >= size)
		fail();
	memcpy(out, start, (size_t)(end - start));
	out[end - start] = '\0';
}

/*
 * The timelines place a function where it is defined: where the line table says line 0 for
 * its first instruction (clang -O1, the last program account_debug_column_as_llvm() built),
 * the line of its declaration (tests/e2e/hooks_xray_prog.c: leaf at 28, tail 35, logged 42).
 */
static void timeline_source_lines(const char *trace)
{
	static const struct {
		const char *fn;
		int line;
	} want[] = {{"leaf", 28}, {"tail", 35}, {"logged", 42}};
	char *argv[] = {(char *)th_env("XFDR_BIN", NULL), "convert", "--output-format=trace_event",
			(char *)trace, NULL};
	char log[TH_PATH_BYTES], key[160], src[80];
	static char text[1 << 20];
	size_t i, calls, placed;

	snprintf(log, sizeof(log), "%s.json", trace);
	run_read(argv, NULL, log, text, sizeof(text));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		/* every B event of the function names its line: trace_event.c writes them whole */
		snprintf(key, sizeof(key), "{\"name\":\"%s\",\"cat\":\"function\",\"ph\":\"B\"",
			 want[i].fn);
		snprintf(src, sizeof(src), "\"src\":\"hooks_xray_prog.c:%d\"", want[i].line);
		calls = th_count(text, key);
		placed = 0;
		for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
			const char *eol = strchr(p, '\n'), *at = strstr(p, src);

			placed += at && (!eol || at < eol);
		}
		if (!calls || placed != calls)
			fail_msg("%s: %zu of %zu calls at line %d in %s", want[i].fn, placed, calls,
				 want[i].line, log);
	}
}

/*
 * The debug column of `xfdr account` (from the DWARF of the module the .map names) is what
 * llvm-xray's symbolizer finds from the program's instrumentation map: file, line and column
 * of every function's first instruction. At -O1 clang gives the sled before the prologue line
 * 0, which llvm-xray prints as "FILE:0:0": so must xfdr.
 */
static void account_debug_column_as_llvm(void **state)
{
	static const char *const opts[] = {"-O0", "-O1"};
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], trace[TH_PATH_BYTES], log[TH_PATH_BYTES];
	char theirs[16384], ours[16384], a[256], b[256], sub[16];
	char *argv[] = {(char *)th_env("XFDR_BIN", NULL), "account", trace, NULL};
	char *args[] = {"account", "-m", prog, trace, NULL};
	size_t i, k;

	(void)state;
	for (k = 0; k < 2; k++) {
		snprintf(sub, sizeof(sub), "debug%s", opts[k]);
		th_path(dir, sub, 1);
		compile("tests/e2e/hooks_xray_prog.c", opts[k], STATIC, dir, prog);
		record(dir, prog, trace);
		llvm_xray(args, dir, theirs, sizeof(theirs));
		th_join(log, dir, "/xfdr-account.log");
		run_read(argv, NULL, log, ours, sizeof(ours));
		for (i = 0; i < 5; i++) {
			debug_column(theirs, functions[i], a, sizeof(a));
			debug_column(ours, functions[i], b, sizeof(b));
			if (strcmp(a, b) || !strstr(a, "hooks_xray_prog.c:"))
				fail_msg("%s %s: llvm-xray says %s, xfdr %s", opts[k], functions[i],
					 a, b);
		}
	}
	timeline_source_lines(trace);
}

/* xfdr_start() patches the sleds, xfdr_stop() unpatches them; stopped calls leave no trace. */
static void start_stop_patches(void **state)
{
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], out[TH_PATH_BYTES], log[TH_PATH_BYTES];
	char trace[TH_PATH_BYTES], map[TH_PATH_BYTES], calls[1024], arg[TH_PATH_BYTES];
	struct th_names names;
	int rc;

	(void)state;
	th_path(dir, "startstop", 1);
	compile("tests/e2e/hooks_xray_startstop.c", "-O2", STATIC, dir, prog);
	th_join(out, dir, "/out");
	assert_int_equal(mkdir(out, 0755), 0);
	th_join(arg, out, "/");
	th_join(log, dir, "/run.log");
	{
		char *argv[] = {prog, arg, NULL};

		rc = th_run(argv, NULL, log);
		if (rc) {
			child_print_file(log);
			fail_msg("hooks_xray_startstop failed check %d (see its source)", rc);
		}
	}
	th_find_one(out, ".xray", trace);
	th_join(map, trace, ".map");
	th_read_names(map, &names);
	th_calls(trace, &names, 0, calls, sizeof(calls));
	assert_string_equal(calls, "E before,X before,E after,X after");
}

/*
 * A crash in an XRay program: the handler turns the session off and flushes; it does not
 * unpatch the sleds, which mprotect()s the code under XRay's lock (here an mprotect() that
 * never returns: the handler used to hang in it until the watchdog, and leave no trace).
 */
static void crash_does_not_unpatch(void **state)
{
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], out[TH_PATH_BYTES], log[TH_PATH_BYTES];
	char options[TH_PATH_BYTES + 32], trace[TH_PATH_BYTES];
	char *argv[] = {prog, NULL};
	char *env[] = {options, NULL};
	int rc;

	(void)state;
	th_path(dir, "crash", 1);
	compile("tests/e2e/hooks_xray_crash.c", "-O2", STATIC, dir, prog);
	th_join(out, dir, "/out");
	assert_int_equal(mkdir(out, 0755), 0);
	th_join(log, dir, "/run.log");
	snprintf(options, sizeof(options), "XFDR_OPTIONS=start=1:output=%s/", out);
	rc = th_run(argv, env, log);
	if (rc != 128 + SIGSEGV) {
		child_print_file(log);
		fail_msg("the program ended with %d, not by SIGSEGV", rc);
	}
	th_find_one(out, ".xray", trace);
	th_join(log, dir, "/tools.log");
	th_tools_accept(trace, log);
}

/*
 * Preloading libxfdr.so into an XRay program cannot reach XRay's hidden runtime: nothing is
 * recorded from the sleds, and xfdr says so once instead of leaving an empty trace unexplained.
 */
static void preloaded_into_xray_says_why(void **state)
{
	char dir[TH_PATH_BYTES], src[TH_PATH_BYTES], prog[TH_PATH_BYTES], log[TH_PATH_BYTES];
	char so[TH_PATH_BYTES], preload[TH_PATH_BYTES + 16], options[TH_PATH_BYTES + 32];
	char text[4096];

	(void)state;
	th_path(dir, "preloaded", 1);
	th_src_file(src, "tests/e2e/hooks_xray_prog.c");
	th_join(prog, dir, "/prog");
	th_join(log, dir, "/run.log");
	{
		char *argv[] = {"clang",
				"-O2",
				"-fxray-instrument",
				"-fxray-instruction-threshold=1",
				src,
				"-o",
				prog,
				NULL};

		th_run_ok(argv, NULL, log);
	}
	th_build_file(so, "lib/libxfdr.so.0");
	if (snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", so) >= (int)sizeof(preload) ||
	    snprintf(options, sizeof(options), "XFDR_OPTIONS=start=1:output=%s/", dir) >=
		(int)sizeof(options))
		fail();
	{
		char *argv[] = {prog, "3", NULL};
		char *env[] = {preload, options, NULL};

		run_read(argv, env, log, text, sizeof(text));
	}
	assert_int_equal(th_count(text, "has XRay sleds, but its XRay runtime is hidden"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(xray_O0),
	    cmocka_unit_test(xray_O2),
	    cmocka_unit_test(xray_shared_library),
	    cmocka_unit_test(llvm_xray_names_functions),
	    cmocka_unit_test(account_debug_column_as_llvm),
	    cmocka_unit_test(start_stop_patches),
	    cmocka_unit_test(crash_does_not_unpatch),
	    cmocka_unit_test(preloaded_into_xray_says_why),
	};

	return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
