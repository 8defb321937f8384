/*
 * tests/system/test_hooks_fentry.c - the -pg -mfentry -minstrument-return=call hooks, end to end.
 *
 * tests/e2e/hooks_fentry_prog.c is compiled with gcc -pg -mfentry -minstrument-return=call
 * (hooks_fentry_tail.c always at -O2 without -minstrument-return=call: a sibling jmp with no
 * __return__), at -O0 and -O2, and recorded three ways: unmodified through
 * LD_PRELOAD=libxfdr.so.0 (linked with __return__ left to run time), linked with libxfdr.a, and
 * linked with -lxfdr; plus a non-PIE build (a 5-byte call __fentry__) and one with
 * -fcf-protection (endbr64 before it). The expected calls come from the program's source; the
 * names from the .map; the .map's addresses must be the symbols' values as nm reads them from
 * the program (the hook finds the function start from its return address). Each trace must
 * pass xfdr verify and llvm-xray convert, whose entry and exit counts must equal ours. The
 * program checks that its values crossed the hooks intact (exit status 2 otherwise).
 *
 * Under XFDR_SANITIZED=1 (the ASan build of libxfdr) the preloaded runs preload the compiler's
 * libasan first, and the linked programs are linked with -fsanitize=address,undefined.
 */
#include "tests/support/e2e_calls.h"

#define FENTRY_FLAGS "-pg", "-mfentry", "-minstrument-return=call"
#define CALLS_BYTES 65536
/* The hook's shadow stack capacity (FENTRY_STACK_FRAMES in runtime/hooks/fentry.c). */
#define STACK_FRAMES 1024
#define DEEP_CALLS 1030

enum link_mode {
	PRELOAD = 0, /* the program knows nothing of xfdr; __return__ resolved at run time */
	STATIC = 1,  /* libxfdr.a linked in */
	SHARED = 2,  /* -lxfdr (the linker script: libxfdr.so.0) */
};

struct variant {
	const char *opt;
	enum link_mode mode;
	const char *extra; /* one more compiler flag for the program, or NULL */
	const char *dir;   /* under the test root */
};

static int sanitized(void)
{
	const char *s = getenv("XFDR_SANITIZED");

	return s && !strcmp(s, "1");
}

/* Compile hooks_fentry_prog.c and hooks_fentry_tail.c for v into dir; returns through prog. */
static void build(const struct variant *v, const char *dir, char *prog)
{
	char src[TH_PATH_BYTES], tail_src[TH_PATH_BYTES], obj[TH_PATH_BYTES], tail[TH_PATH_BYTES];
	char log[TH_PATH_BYTES], lib[TH_PATH_BYTES], libdir[TH_PATH_BYTES + 8];
	char rpath[TH_PATH_BYTES + 16];
	const char *pie = v->extra && !strcmp(v->extra, "-fno-pie") ? "-no-pie" : "-pie";
	const char *extra = v->extra ? v->extra : "-g";
	const char *san = sanitized() ? "-fsanitize=address,undefined" : "-g";

	th_src_file(src, "tests/e2e/hooks_fentry_prog.c");
	th_src_file(tail_src, "tests/e2e/hooks_fentry_tail.c");
	th_join(obj, dir, "/prog.o");
	th_join(tail, dir, "/tail.o");
	th_join(prog, dir, "/prog");
	th_join(log, dir, "/build.log");
	{
		char *argv[] = {"gcc", (char *)v->opt, FENTRY_FLAGS, (char *)extra, "-c",
				src,   "-o",	       obj,	     NULL};

		th_run_ok(argv, NULL, log);
	}
	{
		char *argv[] = {"gcc", "-O2",	 "-pg", "-mfentry", (char *)extra,
				"-c",  tail_src, "-o",	tail,	    NULL};

		th_run_ok(argv, NULL, log);
	}
	/* -pg only when compiling: at link time it would add gcrt1.o (gprof's gmon.out). */
	if (v->mode == PRELOAD) {
		char *argv[] = {"gcc",
				(char *)pie,
				obj,
				tail,
				"-pthread",
				"-Wl,--unresolved-symbols=ignore-in-object-files",
				"-Wl,--export-dynamic-symbol=__return__",
				"-o",
				prog,
				NULL};

		th_run_ok(argv, NULL, log);
	} else if (v->mode == STATIC) {
		char *argv[] = {"gcc",	(char *)pie, obj,	  tail, lib,  CHILD_RUNTIME_LIBS,
				"-ldl", "-pthread",  (char *)san, "-o", prog, NULL};

		th_build_file(lib, "lib/libxfdr.a");
		th_run_ok(argv, NULL, log);
	} else {
		char *argv[] = {"gcc", (char *)pie, obj,	 tail, libdir, "-lxfdr",
				rpath, "-pthread",  (char *)san, "-o", prog,   NULL};

		th_build_file(lib, "lib");
		snprintf(libdir, sizeof(libdir), "-L%s", lib);
		snprintf(rpath, sizeof(rpath), "-Wl,-rpath,%s", lib);
		th_run_ok(argv, NULL, log);
	}
}

/* Run prog with arguments (at most 2) recording into dir/out/; returns the trace's path. */
static void record(const struct variant *v, const char *dir, const char *prog, const char *a1,
		   const char *a2, char *trace)
{
	char out[TH_PATH_BYTES], log[TH_PATH_BYTES], options[TH_PATH_BYTES + 64];
	char preload[2 * TH_PATH_BYTES + 16], so[TH_PATH_BYTES];
	char *argv[] = {(char *)prog, (char *)a1, (char *)a2, NULL};
	char *env[] = {options, preload, NULL};

	th_join(out, dir, "/out");
	assert_int_equal(mkdir(out, 0755), 0);
	th_join(log, dir, "/run.log");
	snprintf(options, sizeof(options), "XFDR_OPTIONS=start=1:buffer_max=64:output=%s/", out);
	if (v->mode == PRELOAD) {
		th_build_file(so, "lib/libxfdr.so.0");
		if (sanitized()) {
			struct child_result r;
			char *cc[] = {"gcc", "-print-file-name=libasan.so", NULL};

			child_capture(cc, &r);
			assert_int_equal(r.status, 0);
			r.out[strcspn(r.out, "\n")] = '\0';
			snprintf(preload, sizeof(preload), "LD_PRELOAD=%s %s", r.out, so);
			child_result_free(&r);
		} else {
			snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", so);
		}
	} else {
		env[1] = NULL;
	}
	th_run_ok(argv, env, log);
	th_find_one(out, ".xray", trace);
}

/* The addresses of the .map are the functions' symbols: nm reads the same values. */
static void check_addresses(const char *map, const char *prog)
{
	char line[4096], *nm_argv[] = {"nm", "--defined-only", (char *)prog, NULL};
	struct child_result nm;
	unsigned checked = 0;
	FILE *f = fopen(map, "r");

	child_capture(nm_argv, &nm);
	assert_int_equal(nm.status, 0);
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[64], addr[32], module[TH_PATH_BYTES], vaddr[32], want[96];
		unsigned id;

		if (sscanf(line, "function\t%u\t%63[^\t]\t%31[^\t]\t%511[^\t]\t%31[^\n]", &id, name,
			   addr, module, vaddr) != 5 ||
		    name[0] == '<')
			continue;
		assert_string_equal(module, prog);
		/* nm: "<16 hex digits> <type> <name>" */
		snprintf(want, sizeof(want), "%016llx", strtoull(vaddr, NULL, 16));
		{
			const char *p = nm.out;
			int found = 0;

			while ((p = strstr(p, want))) {
				const char *n = p + 19, *end = strchr(p, '\n');

				if (end && (size_t)(end - n) == strlen(name) &&
				    !strncmp(n, name, strlen(name)))
					found = 1;
				p += 16;
			}
			if (!found)
				fail_msg("%s at %s in the .map, not so in nm %s", name, vaddr,
					 prog);
		}
		checked++;
	}
	fclose(f);
	child_result_free(&nm);
	assert_true(checked > 0);
}

/* llvm-xray convert counts as many entries, exits and tail exits as our reader. */
static void check_llvm_counts(const char *trace, const char *calls)
{
	char *argv[] = {(char *)th_env("XFDR_LLVM_XRAY", "llvm-xray"), "convert",
			"--output-format=yaml", (char *)trace, NULL};
	struct child_result r;
	size_t enter, exits, tails;
	char prefixed[CALLS_BYTES + 2];

	child_capture(argv, &r);
	assert_int_equal(r.status, 0);
	enter = th_count(r.out, "kind: function-enter,");
	exits = th_count(r.out, "kind: function-exit,");
	tails = th_count(r.out, "kind: function-tail-exit,");
	child_result_free(&r);
	snprintf(prefixed, sizeof(prefixed), ",%s", calls);
	assert_int_equal(enter, th_count(prefixed, ",E "));
	assert_int_equal(exits, th_count(prefixed, ",X "));
	assert_int_equal(tails, th_count(prefixed, ",T "));
	/* balanced */
	assert_int_equal(enter, exits + tails);
}

/* Record prog run with a1 a2 under v; the calls of thread tid16 (0: all) into calls. */
static void run(const struct variant *v, const char *a1, const char *a2, uint16_t tid16,
		char *calls, char *map)
{
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], trace[TH_PATH_BYTES], log[TH_PATH_BYTES];
	static struct th_names names;

	th_path(dir, v->dir, 1);
	build(v, dir, prog);
	record(v, dir, prog, a1, a2, trace);
	th_join(map, trace, ".map");
	th_read_names(map, &names);
	th_calls(trace, &names, tid16, calls, CALLS_BYTES);
	check_addresses(map, prog);
	th_join(log, dir, "/tools.log");
	th_tools_accept(trace, log);
	{
		static char all[CALLS_BYTES];

		th_calls(trace, &names, 0, all, sizeof(all));
		check_llvm_counts(trace, all);
	}
}

#define VALUES_CALLS                                                                               \
	"E mix,X mix,E six,X six,E make_pair,X make_pair,E make_big,X make_big,E vsum,X vsum,"     \
	"E scale_ld,X scale_ld,"
/*
 * longjmp: jump_return's own return exits the three abandoned frames first; jump_call's call
 * of leaf finds them gone, nest1's frame at leaf's own address (a tail call, as far as the
 * stack can tell).
 */
#define JUMP_CALLS                                                                                 \
	"E jump_return,E nest1,E nest2,E nest3,X nest3,X nest2,X nest1,X jump_return,"             \
	"E jump_call,E nest1,E nest2,E nest3,X nest3,X nest2,T nest1,E leaf,X leaf,X jump_call,"

/* -O0: twice() is a call; sibling() calls leaf. */
static const char calls_O0[] =
    "E main,E run_calls,E depth,E depth,E depth,E depth,X depth,X depth,X depth,X depth,"
    "E twice,X twice,E tailer,T tailer,E leaf,X leaf,E sibling,E leaf,X leaf,X "
    "sibling," VALUES_CALLS JUMP_CALLS "X run_calls,X main";

/* -O2: twice() is inlined (no events); sibling() returns (__return__), then jumps to leaf. */
static const char calls_O2[] =
    "E main,E run_calls,E depth,E depth,E depth,E depth,X depth,X depth,X depth,X depth,"
    "E tailer,T tailer,E leaf,X leaf,E sibling,X sibling,E leaf,X leaf," VALUES_CALLS JUMP_CALLS
    "X run_calls,X main";

static void calls_variant(const struct variant *v)
{
	static char calls[CALLS_BYTES];
	char map[TH_PATH_BYTES];

	run(v, "calls", NULL, 0, calls, map);
	assert_string_equal(calls, strcmp(v->opt, "-O0") ? calls_O2 : calls_O0);
}

#define CALLS_TEST(fn, opt, mode, extra)                                                           \
	static void fn(void **state)                                                               \
	{                                                                                          \
		static const struct variant v = {opt, mode, extra, #fn};                           \
                                                                                                   \
		(void)state;                                                                       \
		calls_variant(&v);                                                                 \
	}

CALLS_TEST(O0_preload, "-O0", PRELOAD, NULL)
CALLS_TEST(O2_preload, "-O2", PRELOAD, NULL)
CALLS_TEST(O0_static, "-O0", STATIC, NULL)
CALLS_TEST(O2_static, "-O2", STATIC, NULL)
CALLS_TEST(O0_shared, "-O0", SHARED, NULL)
CALLS_TEST(O2_shared, "-O2", SHARED, NULL)
/* call __fentry__ (e8 rel32, 5 bytes) instead of call *__fentry__@GOTPCREL(%rip) */
CALLS_TEST(O2_preload_no_pie, "-O2", PRELOAD, "-fno-pie")
/* endbr64 before the call: the .map must still give the function's first byte */
CALLS_TEST(O2_preload_cet, "-O2", PRELOAD, "-fcf-protection")
CALLS_TEST(O2_static_cet, "-O2", STATIC, "-fcf-protection")

/* Recursion deeper than the shadow stack: the frames beyond it are <unassigned>, balanced. */
static void deep_variant(const struct variant *v)
{
	static char calls[CALLS_BYTES], want[CALLS_BYTES];
	char map[TH_PATH_BYTES], line[256], count[32];
	unsigned i, fit = STACK_FRAMES - 1; /* main takes the first frame */
	int listed = 0;
	FILE *f;

	snprintf(count, sizeof(count), "%u", DEEP_CALLS);
	run(v, "deep", count, 0, calls, map);
	want[0] = '\0';
	th_append(want, sizeof(want), "E main");
	for (i = 0; i < DEEP_CALLS; i++)
		th_append(want, sizeof(want), i < fit ? "E deep" : "E <unassigned>");
	for (i = DEEP_CALLS; i-- > 0;)
		th_append(want, sizeof(want), i < fit ? "X deep" : "X <unassigned>");
	th_append(want, sizeof(want), "X main");
	assert_string_equal(calls, want);
	f = fopen(map, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long n;

		if (sscanf(line, "functions_unassigned\ttoo_deep\t%llu", &n) == 1) {
			assert_int_equal(n, DEEP_CALLS - fit);
			listed++;
		}
	}
	fclose(f);
	assert_int_equal(listed, 1);
}

static void deep_O2_preload(void **state)
{
	static const struct variant v = {"-O2", PRELOAD, NULL, "deep_O2_preload"};

	(void)state;
	deep_variant(&v);
}

static void deep_O0_static(void **state)
{
	static const struct variant v = {"-O0", STATIC, NULL, "deep_O0_static"};

	(void)state;
	deep_variant(&v);
}

/* Four threads, each its own stack: main's calls, and three times worker -> leaf. */
static void threads_variant(const struct variant *v)
{
	static char calls[CALLS_BYTES];
	char map[TH_PATH_BYTES], trace[TH_PATH_BYTES], *end;
	struct th_names names;
	uint16_t tid;

	run(v, "threads", NULL, 1, calls, map);
	/* -O2: `return run_threads();` is a sibling call, __return__ before the jmp */
	assert_string_equal(calls, "E main,X main,E run_threads,X run_threads");
	snprintf(trace, sizeof(trace), "%s", map);
	end = strstr(trace, ".map");
	assert_non_null(end);
	*end = '\0';
	th_read_names(map, &names);
	for (tid = 2; tid <= 5; tid++) {
		th_calls(trace, &names, tid, calls, CALLS_BYTES);
		assert_string_equal(calls, tid <= 4 ? "E worker,E leaf,X leaf,X worker" : "");
	}
}

static void threads_O2_preload(void **state)
{
	static const struct variant v = {"-O2", PRELOAD, NULL, "threads_O2_preload"};

	(void)state;
	threads_variant(&v);
}

static void threads_O2_static(void **state)
{
	static const struct variant v = {"-O2", STATIC, NULL, "threads_O2_static"};

	(void)state;
	threads_variant(&v);
}

/* Without the preload the program stops at its first __return__, with ld.so's message. */
static void no_preload_fails_clearly(void **state)
{
	static const struct variant v = {"-O2", PRELOAD, NULL, "no_preload"};
	char dir[TH_PATH_BYTES], prog[TH_PATH_BYTES], log[TH_PATH_BYTES];
	char *argv[] = {prog, "calls", NULL};
	struct child_result r;

	(void)state;
	th_path(dir, v.dir, 1);
	build(&v, dir, prog);
	th_join(log, dir, "/run.log");
	child_capture(argv, &r);
	assert_int_equal(r.status, 127);
	assert_non_null(strstr(r.err, "undefined symbol: __return__"));
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(O0_preload),	 cmocka_unit_test(O2_preload),
	    cmocka_unit_test(O0_static),	 cmocka_unit_test(O2_static),
	    cmocka_unit_test(O0_shared),	 cmocka_unit_test(O2_shared),
	    cmocka_unit_test(O2_preload_no_pie), cmocka_unit_test(O2_preload_cet),
	    cmocka_unit_test(O2_static_cet),	 cmocka_unit_test(deep_O2_preload),
	    cmocka_unit_test(deep_O0_static),	 cmocka_unit_test(threads_O2_preload),
	    cmocka_unit_test(threads_O2_static), cmocka_unit_test(no_preload_fails_clearly),
	};

	return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
