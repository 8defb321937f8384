/*
 * tests/system/test_hooks_filter.c - the include=, exclude= and max_depth= options, end to end.
 *
 * tests/e2e/hooks_filter_prog.c (main -> 3 x (a -> b -> 2 x c)) is built for each hook:
 * gcc -O2 -finstrument-functions preloaded (libxfdr.so.0) and linked with libxfdr.a, gcc -O2
 * -pg -mfentry -minstrument-return=call linked with -lxfdr, clang -O2 -fxray-instrument linked
 * with -lxfdr; each program once, then recorded under every option set of the table below.
 * The expected calls come from the program's source, the names from the .map; the .map must
 * give the options right after its func_duration_threshold_us line (only those set), the
 * totals filtered_calls and max_depth_calls, and the same counts on the thread's line. XRay
 * leaves the sleds of a left-out function unpatched: its calls are not counted (0).
 * A pattern that matched no function is named once, in one stderr line at exit.
 * tests/e2e/hooks_filter_names.cc checks the three forms of a C++ name (mangled, demangled with
 * and without parameters) and the backslash of a pattern; tests/e2e/hooks_filter_threads.c the
 * per-thread counts of two threads. Every trace must pass xfdr verify and llvm-xray convert.
 */
#include "tests/support/e2e_calls.h"
#include "tests/support/map_parse.h"

#define CALLS_BYTES 32768
#define LOG_BYTES 16384
#define THREADS_MAX 8

enum program_kind {
	CYG_PRELOAD,
	CYG_LINKED,
	FENTRY,
	XRAY,
	XRAY_OLD_BRIDGE,
	CXX_NAMES,
	THREADS,
	PROGRAMS,
};

struct program {
	const char *dir;	  /* under the test root */
	const char *src;	  /* under XFDR_SRC */
	int preload;		  /* run with LD_PRELOAD=libxfdr.so.0 */
	int counts_filtered;	  /* its hook counts the calls of left-out functions (not XRay) */
	char path[TH_PATH_BYTES]; /* once built */
};

static struct program programs[PROGRAMS] = {
    [CYG_PRELOAD] = {"cyg_preload", "tests/e2e/hooks_filter_prog.c", 1, 1, ""},
    [CYG_LINKED] = {"cyg_linked", "tests/e2e/hooks_filter_prog.c", 0, 1, ""},
    [FENTRY] = {"fentry", "tests/e2e/hooks_filter_prog.c", 0, 1, ""},
    [XRAY] = {"xray", "tests/e2e/hooks_filter_prog.c", 0, 0, ""},
    /* XRay's table as an older libxfdr linked it: the handler leaves functions out, and counts */
    [XRAY_OLD_BRIDGE] = {"xray_old_bridge", "tests/e2e/hooks_filter_prog.c", 0, 1, ""},
    [CXX_NAMES] = {"cxx_names", "tests/e2e/hooks_filter_names.cc", 1, 1, ""},
    [THREADS] = {"threads", "tests/e2e/hooks_filter_threads.c", 1, 1, ""},
};

/* Compile p into its directory, the first time only. */
static struct program *build(enum program_kind kind)
{
	struct program *p = &programs[kind];
	char dir[TH_PATH_BYTES], src[TH_PATH_BYTES], log[TH_PATH_BYTES], obj[TH_PATH_BYTES];
	char lib[TH_PATH_BYTES], libxfdr[TH_PATH_BYTES], libdir[TH_PATH_BYTES + 8];
	char rpath[TH_PATH_BYTES + 16];
	char *prog = p->path;

	if (prog[0])
		return p;
	th_path(dir, p->dir, 1);
	th_src_file(src, p->src);
	th_join(obj, dir, "/prog.o");
	th_join(prog, dir, "/prog");
	th_join(log, dir, "/build.log");
	th_build_file(lib, "lib");
	th_build_file(libxfdr, "lib/libxfdr.a");
	snprintf(libdir, sizeof(libdir), "-L%s", lib);
	snprintf(rpath, sizeof(rpath), "-Wl,-rpath,%s", lib);
	switch (kind) {
	case CYG_PRELOAD: {
		char *argv[] = {"gcc", "-O2", "-finstrument-functions", src, "-o", prog, NULL};

		th_run_ok(argv, NULL, log);
		break;
	}
	case CYG_LINKED: {
		char *argv[] = {"gcc",	     "-O2",   "-finstrument-functions",
				src,	     libxfdr, CHILD_RUNTIME_LIBS,
				"-lpthread", "-ldl",  "-o",
				prog,	     NULL};

		th_run_ok(argv, NULL, log);
		break;
	}
	case FENTRY: {
		char *cc[] = {"gcc", "-O2", "-pg", "-mfentry", "-minstrument-return=call",
			      "-c",  src,   "-o",  obj,	       NULL};
		/* -pg only when compiling: at link time it would add gcrt1.o */
		char *ld[] = {"gcc", "-pie",	 obj,  libdir, "-lxfdr",
			      rpath, "-pthread", "-o", prog,   NULL};

		th_run_ok(cc, NULL, log);
		th_run_ok(ld, NULL, log);
		break;
	}
	case XRAY: {
		char *argv[] = {"clang",
				"-O2",
				"-fxray-instrument",
				"-fxray-instruction-threshold=1",
				src,
				libdir,
				"-lxfdr",
				rpath,
				"-o",
				prog,
				NULL};

		th_run_ok(argv, NULL, log);
		break;
	}
	case XRAY_OLD_BRIDGE: {
		char bridge[TH_PATH_BYTES];
		char *argv[] = {"clang",
				"-O2",
				"-fxray-instrument",
				"-fxray-instruction-threshold=1",
				src,
				bridge,
				libdir,
				"-lxfdr",
				rpath,
				"-o",
				prog,
				NULL};

		th_src_file(bridge, "tests/e2e/hooks_filter_old_bridge.c");
		th_run_ok(argv, NULL, log);
		break;
	}
	case CXX_NAMES: {
		char *argv[] = {"g++", "-O2", "-finstrument-functions", src, "-o", prog, NULL};

		th_run_ok(argv, NULL, log);
		break;
	}
	case THREADS: {
		char *argv[] = {"gcc", "-O2", "-finstrument-functions", src, "-pthread", "-o",
				prog,  NULL};

		th_run_ok(argv, NULL, log);
		break;
	}
	default:
		fail();
	}
	return p;
}

/* A recorded run: its directory, trace, run log, .map text and names. */
struct run {
	char dir[TH_PATH_BYTES];
	char trace[TH_PATH_BYTES];
	char log[TH_PATH_BYTES];
	char *map; /* malloc'd */
	struct th_names names;
};

/* Run p with XFDR_OPTIONS=start=1:output=...:options in the fresh directory name. */
static void record(const struct program *p, const char *name, const char *options, struct run *r)
{
	char out[TH_PATH_BYTES], env_options[2 * TH_PATH_BYTES], so[TH_PATH_BYTES];
	char preload[TH_PATH_BYTES + 16];
	char *argv[] = {(char *)p->path, NULL};
	char *env[] = {env_options, preload, NULL};

	th_path(r->dir, name, 1);
	th_join(out, r->dir, "/out");
	assert_int_equal(mkdir(out, 0755), 0);
	th_join(r->log, r->dir, "/run.log");
	if (snprintf(env_options, sizeof(env_options), "XFDR_OPTIONS=start=1:output=%s/:%s", out,
		     options) >= (int)sizeof(env_options))
		fail();
	if (p->preload) {
		th_build_file(so, "lib/libxfdr.so.0");
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", so);
	} else {
		env[1] = NULL;
	}
	th_run_ok(argv, env, r->log);
	th_find_one(out, ".xray", r->trace);
	r->map = mp_read(r->trace);
	{
		char map_path[TH_PATH_BYTES];

		th_join(map_path, r->trace, ".map");
		th_read_names(map_path, &r->names);
	}
}

/* The trace passes xfdr verify and llvm-xray convert; the run's .map is freed. */
static void run_done(struct run *r)
{
	char log[TH_PATH_BYTES];

	th_join(log, r->dir, "/tools.log");
	th_tools_accept(r->trace, log);
	free(r->map);
	r->map = NULL;
}

/* Every exit of calls ("E f,X f,...") closes the innermost open entry of its name; none open. */
static void assert_balanced(const char *calls)
{
	static char open[256][64];
	size_t depth = 0;
	const char *p = calls;

	while (*p) {
		size_t len = strcspn(p, ",");
		char name[64];

		if (len < 3 || len - 2 >= sizeof(name) || (p[0] != 'E' && p[0] != 'X') ||
		    p[1] != ' ')
			fail_msg("unexpected event \"%.*s\" in %s", (int)len, p, calls);
		memcpy(name, p + 2, len - 2);
		name[len - 2] = '\0';
		if (p[0] == 'E') {
			assert_true(depth < 256);
			snprintf(open[depth++], sizeof(open[0]), "%s", name);
		} else if (!depth || strcmp(open[--depth], name)) {
			fail_msg("exit of %s does not close the open call: %s", name, calls);
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (depth)
		fail_msg("%zu calls left open: %s", depth, calls);
}

static int is_filter_line(const char *line)
{
	static const char *const keys[] = {"include\t", "exclude\t", "functions_left_out\t",
					   "max_depth\t"};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strncmp(line, keys[i], strlen(keys[i])))
			return 1;
	return 0;
}

/* The lines right after func_duration_threshold_us are block, and then no other filter line. */
static void assert_filter_lines(const char *map, const char *block)
{
	const char *p = strstr(map, "\nfunc_duration_threshold_us\t");

	if (!p || !(p = strchr(p + 1, '\n')))
		fail_msg("no func_duration_threshold_us line in the map:\n%s", map);
	p++;
	if (strncmp(p, block, strlen(block)))
		fail_msg("after func_duration_threshold_us the map says\n%.200s\nnot\n%s", p,
			 block);
	p += strlen(block);
	if (is_filter_line(p))
		fail_msg("one more filter line after\n%s:\n%.100s", block, p);
	/* and none anywhere else */
	for (p = strchr(p, '\n'); p; p = strchr(p + 1, '\n'))
		if (is_filter_line(p + 1))
			fail_msg("a filter line away from the others: %.100s", p + 1);
}

static void read_text(const char *path, char *text, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, size - 1, f);
	text[n] = '\0';
	fclose(f);
}

/*
 * The run log has one line saying that patterns matched nothing, starting with want, or none
 * when want is NULL.
 */
static void assert_unmatched_line(const char *log, const char *want)
{
	static char text[LOG_BYTES];
	const char *p;

	read_text(log, text, sizeof(text));
	if (!want) {
		if (th_count(text, "matched no function"))
			fail_msg("every pattern matched a function, yet the run says:\n%s", text);
		return;
	}
	if (th_count(text, "matched no function") != 1)
		fail_msg("not exactly one \"matched no function\" line in:\n%s", text);
	p = strstr(text, want);
	if (!p || (p != text && p[-1] != '\n'))
		fail_msg("no line starting with \"%s\" in:\n%s", want, text);
}

/* One option set and what it must give. */
struct filter_case {
	const char *name;      /* the run's directory, after the program's */
	const char *options;   /* appended to XFDR_OPTIONS */
	const char *calls;     /* th_calls() of every thread */
	const char *block;     /* the .map lines right after func_duration_threshold_us */
	uint64_t filtered;     /* filtered_calls, where the hook counts them (0 for XRay) */
	uint64_t deep;	       /* max_depth_calls */
	const char *unmatched; /* start of the run's one "matched no function" line, or NULL */
};

/* The single-threaded programs: record c, compare the calls, the .map and the run log. */
static void run_case(enum program_kind kind, const struct filter_case *c)
{
	static char calls[CALLS_BYTES];
	static struct run r;
	struct mp_thread t[THREADS_MAX];
	const struct program *p = build(kind);
	uint64_t filtered = p->counts_filtered ? c->filtered : 0;
	char name[128];
	size_t n;

	snprintf(name, sizeof(name), "%s-%s", p->dir, c->name);
	record(p, name, c->options, &r);
	th_calls(r.trace, &r.names, 0, calls, sizeof(calls));
	assert_string_equal(calls, c->calls);
	assert_balanced(calls);
	assert_filter_lines(r.map, c->block);
	assert_int_equal(mp_number(r.map, "filtered_calls"), filtered);
	assert_int_equal(mp_number(r.map, "max_depth_calls"), c->deep);
	n = mp_threads(r.map, t, THREADS_MAX);
	assert_int_equal(n, 1);
	assert_int_equal(t[0].id, 1);
	if (t[0].filtered_calls != filtered || t[0].max_depth_calls != c->deep)
		fail_msg("%s: the thread line counts %llu filtered and %llu max_depth calls, the "
			 "totals %llu and %llu",
			 name, (unsigned long long)t[0].filtered_calls,
			 (unsigned long long)t[0].max_depth_calls, (unsigned long long)filtered,
			 (unsigned long long)c->deep);
	assert_int_equal(mp_thread_drops(&t[0]), 0);
	assert_unmatched_line(r.log, c->unmatched);
	run_done(&r);
}

/* hooks_filter_prog.c: main -> 3 x (a -> b -> 2 x c). */
#define A_B_CC "E a,E b,E c,X c,E c,X c,X b,X a,"
#define A_CC "E a,E c,X c,E c,X c,X a,"

static const struct filter_case case_none = {
    "none", "", "E main," A_B_CC A_B_CC A_B_CC "X main", "", 0, 0, NULL,
};

/* b left out: c inside a, each of the 3 calls of b counted. */
static const struct filter_case case_exclude = {
    "exclude",
    "exclude=b",
    "E main," A_CC A_CC A_CC "X main",
    "exclude\tb\nfunctions_left_out\t1\n",
    3,
    0,
    NULL,
};

static const struct filter_case case_include = {
    "include",
    "include=main,a,c",
    "E main," A_CC A_CC A_CC "X main",
    "include\tmain,a,c\nfunctions_left_out\t1\n",
    3,
    0,
    NULL,
};

/* Only main and a: the 3 calls of b and the 6 of c (inside skipped b) are counted. */
static const struct filter_case case_max_depth = {
    "max_depth", "max_depth=2", "E main,E a,X a,E a,X a,E a,X a,X main", "max_depth\t2\n", 0,
    9,		 NULL,
};

/* The depth counts recorded calls only: with a left out, b is at depth 2, c beyond it. */
static const struct filter_case case_exclude_max_depth = {
    "exclude_max_depth",
    "exclude=a:max_depth=2",
    "E main,E b,X b,E b,X b,E b,X b,X main",
    "exclude\ta\nfunctions_left_out\t1\nmax_depth\t2\n",
    3,
    6,
    NULL,
};

static const struct filter_case case_unmatched = {
    "unmatched",
    "exclude=b,nosuchfn*",
    "E main," A_CC A_CC A_CC "X main",
    "exclude\tb,nosuchfn*\nfunctions_left_out\t1\n",
    3,
    0,
    "xfdr: exclude=nosuchfn*: this pattern matched no function called while recording",
};

/* Two patterns of two lists that match nothing: one line names both; exclude beats include. */
static const struct filter_case case_unmatched_both = {
    "unmatched_both",
    "include=main,a,b,c,zz*:exclude=b,nosuchfn*",
    "E main," A_CC A_CC A_CC "X main",
    "include\tmain,a,b,c,zz*\nexclude\tb,nosuchfn*\nfunctions_left_out\t1\n",
    3,
    0,
    "xfdr: include=zz*, exclude=nosuchfn*: these patterns matched no function called while "
    "recording",
};

/*
 * main left out: the first call of the thread, before it recorded anything, is counted on its
 * thread line as every other (the total alone is not enough).
 */
static const struct filter_case case_main_left_out = {
    "main_left_out",
    "include=a,b,c",
    A_B_CC A_B_CC "E a,E b,E c,X c,E c,X c,X b,X a",
    "include\ta,b,c\nfunctions_left_out\t1\n",
    1,
    0,
    NULL,
};

#define CASE_TEST(prefix, kind, c)                                                                 \
	static void prefix##_##c(void **state)                                                     \
	{                                                                                          \
		(void)state;                                                                       \
		run_case(kind, &case_##c);                                                         \
	}

#define HOOK_TESTS(prefix, kind)                                                                   \
	CASE_TEST(prefix, kind, none)                                                              \
	CASE_TEST(prefix, kind, exclude)                                                           \
	CASE_TEST(prefix, kind, include)                                                           \
	CASE_TEST(prefix, kind, max_depth)                                                         \
	CASE_TEST(prefix, kind, exclude_max_depth)                                                 \
	CASE_TEST(prefix, kind, unmatched)                                                         \
	CASE_TEST(prefix, kind, unmatched_both)                                                    \
	CASE_TEST(prefix, kind, main_left_out)

HOOK_TESTS(cyg_preload, CYG_PRELOAD)
HOOK_TESTS(cyg_linked, CYG_LINKED)
HOOK_TESTS(fentry, FENTRY)
HOOK_TESTS(xray, XRAY)
HOOK_TESTS(xray_old_bridge, XRAY_OLD_BRIDGE)

#define HOOK_UNIT_TESTS(prefix)                                                                    \
	cmocka_unit_test(prefix##_none), cmocka_unit_test(prefix##_exclude),                       \
	    cmocka_unit_test(prefix##_include), cmocka_unit_test(prefix##_max_depth),              \
	    cmocka_unit_test(prefix##_exclude_max_depth), cmocka_unit_test(prefix##_unmatched),    \
	    cmocka_unit_test(prefix##_unmatched_both), cmocka_unit_test(prefix##_main_left_out)

/*
 * hooks_filter_names.cc as the .map names its functions (mangled):
 * main -> ns::foo -> Counter::add, ns::bar -> ns::foo -> Counter::add,
 * Counter::mix(int, int) -> Counter::add.
 */
#define FOO "_ZN2ns3fooEi"
#define BAR "_ZN2ns3barEi"
#define ADD "_ZN7Counter3addEi"
#define MIX "_ZN7Counter3mixEii"
#define CALL_ADD "E " ADD ",X " ADD ","
#define CALL_FOO "E " FOO "," CALL_ADD "X " FOO ","
#define CALL_MIX "E " MIX "," CALL_ADD "X " MIX ","

static const struct filter_case cxx_cases[] = {
    /* the demangled name without parameters, as a glob: ns::foo and ns::bar */
    {"ns_glob", "exclude=ns::*", "E main," CALL_ADD CALL_ADD CALL_MIX "X main",
     "exclude\tns::*\nfunctions_left_out\t2\n", 3, 0, NULL},
    /* demangled with parameters: ns::foo only */
    {"with_params", "exclude=ns::foo(int)",
     "E main," CALL_ADD "E " BAR "," CALL_ADD "X " BAR "," CALL_MIX "X main",
     "exclude\tns::foo(int)\nfunctions_left_out\t1\n", 2, 0, NULL},
    /* the mangled symbol: ns::bar only */
    {"mangled", "exclude=" BAR, "E main," CALL_FOO CALL_FOO CALL_MIX "X main",
     "exclude\t" BAR "\nfunctions_left_out\t1\n", 1, 0, NULL},
    /* a backslash keeps the comma in the pattern and the space in the option item */
    {"escaped", "exclude=Counter::mix(int\\,\\ int)",
     "E main," CALL_FOO "E " BAR "," CALL_FOO "X " BAR "," CALL_ADD "X main",
     "exclude\tCounter::mix(int\\,\\ int)\nfunctions_left_out\t1\n", 1, 0, NULL},
    /* include by the demangled name without parameters: ns::foo (and main) alone */
    {"include_bare", "include=main,ns::foo",
     "E main,E " FOO ",X " FOO ",E " FOO ",X " FOO ",X main",
     "include\tmain,ns::foo\nfunctions_left_out\t3\n", 5, 0, NULL},
    /* the parameters are compared: ns::foo(long) is no function here */
    {"other_params", "exclude=ns::foo(long)",
     "E main," CALL_FOO "E " BAR "," CALL_FOO "X " BAR "," CALL_MIX "X main",
     "exclude\tns::foo(long)\nfunctions_left_out\t0\n", 0, 0,
     "xfdr: exclude=ns::foo(long): this pattern matched no function called while recording"},
};

static void cxx_names(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cxx_cases) / sizeof(cxx_cases[0]); i++)
		run_case(CXX_NAMES, &cxx_cases[i]);
}

/* hooks_filter_threads.c's two workers (WORKER_A_CALLS, WORKER_B_CALLS). */
#define WORKER_A_CALLS 200
#define WORKER_B_CALLS 300

/*
 * exclude=skipped with two threads: each worker's thread line counts its own calls of skipped,
 * as many as its calls of kept (recorded right inside worker); main's counts none.
 */
static void threads_count_their_own(void **state)
{
	static char calls[CALLS_BYTES], want[CALLS_BYTES];
	static struct run r;
	struct mp_thread t[THREADS_MAX];
	const struct program *p = build(THREADS);
	int seen_a = 0, seen_b = 0, seen_main = 0;
	size_t n, i, k;

	(void)state;
	record(p, "threads-exclude", "exclude=skipped", &r);
	assert_filter_lines(r.map, "exclude\tskipped\nfunctions_left_out\t1\n");
	assert_int_equal(mp_number(r.map, "filtered_calls"), WORKER_A_CALLS + WORKER_B_CALLS);
	assert_int_equal(mp_number(r.map, "max_depth_calls"), 0);
	th_calls(r.trace, &r.names, 0, calls, sizeof(calls));
	assert_balanced(calls);
	assert_int_equal(th_count(calls, "skipped"), 0);
	n = mp_threads(r.map, t, THREADS_MAX);
	assert_int_equal(n, 3);
	for (i = 0; i < n; i++) {
		assert_true(t[i].id >= 1 && t[i].id <= 3);
		assert_int_equal(mp_thread_drops(&t[i]), 0);
		assert_int_equal(t[i].max_depth_calls, 0);
		th_calls(r.trace, &r.names, (uint16_t)t[i].id, calls, sizeof(calls));
		if (!strcmp(calls, "E main,X main")) {
			assert_int_equal(t[i].filtered_calls, 0);
			seen_main++;
			continue;
		}
		want[0] = '\0';
		th_append(want, sizeof(want), "E worker");
		for (k = 0; k < t[i].filtered_calls; k++)
			th_append(want, sizeof(want), "E kept,X kept");
		th_append(want, sizeof(want), "X worker");
		assert_string_equal(calls, want);
		seen_a += t[i].filtered_calls == WORKER_A_CALLS;
		seen_b += t[i].filtered_calls == WORKER_B_CALLS;
	}
	assert_int_equal(seen_main, 1);
	assert_int_equal(seen_a, 1);
	assert_int_equal(seen_b, 1);
	assert_unmatched_line(r.log, NULL);
	run_done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    HOOK_UNIT_TESTS(cyg_preload),
	    HOOK_UNIT_TESTS(cyg_linked),
	    HOOK_UNIT_TESTS(fentry),
	    HOOK_UNIT_TESTS(xray),
	    HOOK_UNIT_TESTS(xray_old_bridge),
	    cmocka_unit_test(cxx_names),
	    cmocka_unit_test(threads_count_their_own),
	};

	return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
