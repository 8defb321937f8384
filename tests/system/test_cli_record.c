/*
 * tests/system/test_cli_record.c - `xfdr record`: run a program with the recorder, summarize.
 *
 * tests/e2e/record_prog.c is built five ways by the group setup: gcc -finstrument-functions
 * (recorded through the preload), the same linked with libxfdr.a (must not be preloaded: two
 * runtimes), clang -fxray-instrument linked with -lxfdr (must not be preloaded), the same
 * without xfdr (refused: a preloaded runtime cannot reach XRay's hidden sleds) and without any
 * instrumentation (refused unless --force). The program prints its LD_PRELOAD, so the test sees
 * what xfdr record did. What the summary must say is known independently: the program spins
 * 150 ms in hot(), called once from main, and 80 ms in two calls of warm(), so hot and then
 * warm have the most self time; the event count must be llvm-xray's (the oracle) for the same file;
 * drop and overwrite counts must be those of the runtime's .map. Signals: a SIGTERM the program
 * sends itself kills xfdr record by SIGTERM too; SIGUSR1 sent to xfdr record's pid reaches the
 * program (which writes down what it got); a Ctrl-C typed on a terminal (the line discipline
 * signals the whole foreground group) kills the program but not xfdr record before its summary. The
 * ELF inspection is also fed truncated and mutated images in process (launcher/elf_probe.c is
 * linked into this test), so ASan sees any read outside the image.
 *
 * Under XFDR_SANITIZED=1 libxfdr.so.0 is the ASan build: xfdr record runs with the compiler's
 * libasan in LD_PRELOAD (it keeps a sanitizer runtime first) and the static link is sanitized.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pty.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/elf_probe.h"
#include "tests/support/child.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"

#define PATH_BYTES 1024
#define RUN_TIMEOUT_S 60

extern char **environ;

static char prog_cyg[PATH_BYTES], prog_static[PATH_BYTES], prog_xray[PATH_BYTES];
/* -finstrument-functions and AddressSanitizer, libxfdr.a linked in: a sanitized program */
static char prog_asan[PATH_BYTES];
static char prog_xray_alone[PATH_BYTES], prog_plain[PATH_BYTES], prog_plain_static[PATH_BYTES];
static char libdir[PATH_BYTES];
static char preload_env[PATH_BYTES + 16]; /* "LD_PRELOAD=<libasan>" under a sanitizer */

static int sanitized(void)
{
	const char *s = getenv("XFDR_SANITIZED");

	return s && !strcmp(s, "1");
}

static const char *env_or_fail(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v)
		fail_msg("%s is not set (run the tests through make check)", name);
	return v;
}

static void path_in_scratch(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void path_in_scratch(char *out, const char *fmt, ...)
{
	char name[PATH_BYTES / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (snprintf(out, PATH_BYTES, "%s/%s", scratch_dir, name) >= PATH_BYTES)
		fail_msg("path too long");
}

/* Run argv (a compiler), which must succeed; its output shown when it does not. */
static void run_ok(char *const argv[])
{
	struct child_result r;

	child_capture(argv, &r);
	if (r.status)
		fail_msg("%s failed (%d):\n%s%s", argv[0], r.status, r.out, r.err);
	child_result_free(&r);
}

/*
 * src with -finstrument-functions, libxfdr.a linked in (-u xfdr_init: the program calls no xfdr
 * function, the runtime must come in), compiled with flags and linked with last (each one
 * argument; "-g" where none is wanted).
 */
static void link_static(const char *src, const char *libxfdr_a, const char *flags, const char *last,
			const char *out)
{
	char *a[] = {"gcc",
		     "-O0",
		     "-g",
		     (char *)flags,
		     "-finstrument-functions",
		     (char *)src,
		     "-Wl,-u,xfdr_init",
		     (char *)libxfdr_a,
		     CHILD_RUNTIME_LIBS,
		     "-ldl",
		     "-pthread",
		     (char *)last,
		     "-o",
		     (char *)out,
		     NULL};

	run_ok(a);
}

static int build_programs(void **state)
{
	char src[PATH_BYTES], libxfdr_a[PATH_BYTES + 16], ldir[PATH_BYTES + 2];
	const char *san = sanitized() ? "-fsanitize=address,undefined" : "-g";

	if (scratch_setup(state))
		return -1;
	snprintf(src, sizeof(src), "%s/tests/e2e/record_prog.c", env_or_fail("XFDR_SRC"));
	snprintf(libdir, sizeof(libdir), "%s/lib", env_or_fail("XFDR_BUILD"));
	snprintf(libxfdr_a, sizeof(libxfdr_a), "%s/libxfdr.a", libdir);
	snprintf(ldir, sizeof(ldir), "-L%s", libdir);
	path_in_scratch(prog_cyg, "cyg");
	path_in_scratch(prog_static, "cyg_static");
	path_in_scratch(prog_xray, "xray");
	path_in_scratch(prog_xray_alone, "xray_alone");
	path_in_scratch(prog_asan, "cyg_asan");
	path_in_scratch(prog_plain, "plain");
	path_in_scratch(prog_plain_static, "plain_static");
	if (sanitized()) {
		struct child_result r;
		char *cc[] = {"gcc", "-print-file-name=libasan.so", NULL};

		child_capture(cc, &r);
		r.out[strcspn(r.out, "\n")] = '\0';
		snprintf(preload_env, sizeof(preload_env), "LD_PRELOAD=%s", r.out);
		child_result_free(&r);
	}
	{
		char *a[] = {"gcc", "-O0", "-g",     "-finstrument-functions",
			     src,   "-o",  prog_cyg, NULL};

		run_ok(a);
	}
	link_static(src, libxfdr_a, san, "-g", prog_static);
	/* Not UBSan: its null check would stop the "segv" mode's store before the fault. */
	link_static(src, libxfdr_a, "-fsanitize=address",
		    sanitized() ? "-lubsan" : "-g", /* libxfdr.a's UBSan checks */
		    prog_asan);
	{
		/* The ASan build of libxfdr.so.0 needs libasan named at link time. */
		char *a[] = {"clang",
			     "-O0",
			     "-fxray-instrument",
			     "-fxray-instruction-threshold=1",
			     src,
			     ldir,
			     "-lxfdr",
			     "-o",
			     prog_xray,
			     preload_env[0] ? preload_env + 11 : NULL,
			     NULL};

		run_ok(a);
	}
	{
		char *a[] = {"clang", "-O0", "-fxray-instrument", "-fxray-instruction-threshold=1",
			     src,     "-o",  prog_xray_alone,	  NULL};

		run_ok(a);
	}
	{
		char *a[] = {"gcc", "-O0", src, "-o", prog_plain, NULL};

		run_ok(a);
	}
	{
		/* LD_PRELOAD cannot reach it: xfdr is never in it. */
		char *a[] = {"gcc", "-O0", "-static", src, "-o", prog_plain_static, NULL};

		run_ok(a);
	}
	return 0;
}

/*
 * Run `xfdr record ARGS...` (NULL-terminated) with extra environment entries env (NULL: none;
 * at most 6), both streams captured. Death by a signal is in r->signal.
 */
static void record_env(struct child_result *r, char *const *env, ...)
{
	char *argv[40], *envs[8];
	size_t n = 0, e = 0;
	va_list ap;
	struct child_spec spec;

	argv[n++] = (char *)child_xfdr_bin();
	argv[n++] = "record";
	va_start(ap, env);
	while (n < 39 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	if (preload_env[0])
		envs[e++] = preload_env;
	while (env && *env && e < 7)
		envs[e++] = *env++;
	envs[e] = NULL;
	memset(&spec, 0, sizeof(spec));
	spec.argv = argv;
	spec.env_add = envs;
	spec.out.to = CHILD_CAPTURE;
	spec.err.to = CHILD_CAPTURE;
	spec.timeout_s = RUN_TIMEOUT_S;
	child_run(&spec, r);
}

#define record(r, ...) record_env((r), NULL, __VA_ARGS__)

/* A fresh output directory "<scratch>/<name>" (not created: xfdr record makes it). */
static void out_dir(char *out, const char *name)
{
	path_in_scratch(out, "%s", name);
}

/* The one "*.xray" file in dir, into trace; fails unless there is exactly one. */
static void one_trace(const char *dir, char *trace)
{
	char cmd[PATH_BYTES + 64];
	struct child_result r;
	char *argv[] = {"sh", "-c", cmd, NULL};

	snprintf(cmd, sizeof(cmd), "ls '%s'/*.xray", dir);
	child_capture(argv, &r);
	if (r.status || text_count_lines(r.out) != 1)
		fail_msg("expected one trace in %s, found:\n%s%s", dir, r.out, r.err);
	r.out[strcspn(r.out, "\n")] = '\0';
	snprintf(trace, PATH_BYTES, "%s", r.out);
	child_result_free(&r);
}

/* The files in dir whose names end with suffix (".xray": the traces). */
static int count_files(const char *dir, const char *suffix)
{
	char cmd[PATH_BYTES + 64];
	struct child_result r;
	char *argv[] = {"sh", "-c", cmd, NULL};
	int n;

	snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null | grep -c '%s$'", dir, suffix);
	child_capture(argv, &r);
	n = atoi(r.out);
	child_result_free(&r);
	return n;
}

static int count_traces(const char *dir)
{
	return count_files(dir, "\\.xray");
}

/* Function records in llvm-xray's YAML of trace (entries, exits, tail exits, with args). */
static long llvm_function_records(const char *trace)
{
	char *argv[] = {(char *)child_llvm_xray(), "convert", "--output-format=yaml", (char *)trace,
			NULL};
	struct child_result r;
	long n = 0;
	const char *p;

	child_capture(argv, &r);
	if (r.status)
		fail_msg("llvm-xray rejects %s:\n%s", trace, r.err);
	for (p = r.out; (p = strstr(p, "kind: function-")); p++)
		n++;
	child_result_free(&r);
	return n;
}

/* The number after "label" at the start of a summary line ("  events     N ..."). */
static long summary_number(const char *err, const char *label)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n  %s", label);
	p = strstr(err, key);
	if (!p)
		fail_msg("no '%s' line in the summary:\n%s", label, err);
	p += strlen(key);
	while (*p == ' ')
		p++;
	return strtol(p, NULL, 10);
}

/* Row i (0-based) of the top table: its total in ms, its calls and its name. */
static void top_row(const char *err, int i, double *self_ms, long *calls, char *name)
{
	const char *p = strstr(err, "function\n");
	char unit[8];
	double self;

	if (!p)
		fail_msg("no top table in:\n%s", err);
	p += strlen("function\n");
	while (i-- > 0) {
		p = strchr(p, '\n');
		assert_non_null(p);
		p++;
	}
	if (sscanf(p, " %lf %7s %*f %*s %ld %*f %*s %127s", &self, unit, calls, name) != 4)
		fail_msg("bad top row in:\n%s", err);
	*self_ms = !strcmp(unit, "s") ? self * 1e3 : !strcmp(unit, "ms") ? self : 0;
}

/* The map line "key<TAB>..." of path, after the key; "" when absent. */
static void map_value(const char *map, const char *key, char *out, size_t n)
{
	char line[4096];
	size_t klen = strlen(key);
	FILE *f = fopen(map, "r");

	if (!f)
		fail_msg("no sidecar %s", map);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == '\t') {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, n, "%s", line + klen + 1);
		}
	}
	fclose(f);
}

static void verify_ok(const char *trace)
{
	struct child_result r;

	if (child_xfdr(&r, "verify", trace, NULL))
		fail_msg("xfdr verify %s: %s", trace, r.err);
	child_result_free(&r);
}

/* ---- The recordings ----------------------------------------------------------------------- */

static void preloaded_cyg_summary(void **state)
{
	char dir[PATH_BYTES], trace[PATH_BYTES], name[128], want[PATH_BYTES + 64];
	struct child_result r;
	double ms;
	long calls, events;

	(void)state;
	out_dir(dir, "deep/out"); /* two levels that do not exist yet */
	record(&r, "-o", dir, prog_cyg, "spin", NULL);
	if (r.status || r.signal)
		fail_msg("status %d:\n%s", r.status, r.err);
	text_assert_contains(r.out, "/lib/libxfdr.so.0");
	one_trace(dir, trace);
	verify_ok(trace);
	snprintf(want, sizeof(want), "  trace      %s (", trace);
	text_assert_contains(r.err, want);
	snprintf(want, sizeof(want), "  map        %s.map\n", trace);
	text_assert_contains(r.err, want);
	text_assert_contains(r.err, "exited with status 0");
	events = summary_number(r.err, "events");
	assert_int_equal(events, llvm_function_records(trace));
	assert_true(events >= 2 * (1 + 1 + 2 + 1000));
	assert_int_equal(summary_number(r.err, "threads"), 1);
	/* tiny()'s 1000 short calls left nearly every event */
	text_assert_contains(r.err, "  busiest    tiny\n             ");
	snprintf(want, sizeof(want),
		 "%% of the events, in calls under 1 us on average (xfdr funcs %s)\n", trace);
	text_assert_contains(r.err, want);
	text_assert_contains(r.err,
			     "             to leave them out: xfdr record --exclude=tiny ...\n");
	top_row(r.err, 0, &ms, &calls, name);
	assert_string_equal(name, "hot");
	assert_int_equal(calls, 1);
	assert_true(ms >= 150.0 && ms < 1000.0);
	/*
	 * warm spins 2 x 40 ms; main's own time (the loop around tiny()) is short on an idle
	 * machine but not on a loaded one, so warm is second or third.
	 */
	top_row(r.err, 1, &ms, &calls, name);
	if (strcmp(name, "warm"))
		top_row(r.err, 2, &ms, &calls, name);
	assert_string_equal(name, "warm");
	assert_int_equal(calls, 2);
	assert_true(ms >= 80.0 && ms < 500.0);
	child_result_free(&r);
}

/* Linked with the runtime: run as it is, one runtime, one trace. */
static void linked_not_preloaded(const char *prog, const char *sub, char *const *env)
{
	char dir[PATH_BYTES], trace[PATH_BYTES], name[128], other[128];
	struct child_result r;
	double ms;
	long calls;

	out_dir(dir, sub);
	record_env(&r, env, "-o", dir, "--top=2", prog, "spin", NULL);
	if (r.status || r.signal)
		fail_msg("status %d:\n%s%s", r.status, r.out, r.err);
	if (strstr(r.out, "libxfdr"))
		fail_msg("preloaded although linked with xfdr: %s", r.out);
	text_assert_contains(r.out, "preload: ");
	one_trace(dir, trace);
	verify_ok(trace);
	assert_int_equal(summary_number(r.err, "events"), llvm_function_records(trace));
	/* hot and warm, in either order: a loaded machine can stretch warm's 80 ms past hot's. */
	top_row(r.err, 0, &ms, &calls, name);
	top_row(r.err, 1, &ms, &calls, other);
	if (!((!strcmp(name, "hot") && !strcmp(other, "warm")) ||
	      (!strcmp(name, "warm") && !strcmp(other, "hot"))))
		fail_msg("hot and warm are not the top two:\n%s", r.err);
	/* --top=2: the heading, the columns, two rows, then the end of the summary. */
	assert_non_null(strstr(r.err, "  top 2 of "));
	assert_int_equal(text_count(strstr(r.err, "  top 2 of "), "\n"), 4);
	child_result_free(&r);
}

static void xray_linked_not_preloaded(void **state)
{
	char ld[PATH_BYTES + 32];
	char *env[] = {ld, NULL};

	(void)state;
	snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", libdir);
	linked_not_preloaded(prog_xray, "xray-out", env);
}

static void static_runtime_not_preloaded(void **state)
{
	(void)state;
	linked_not_preloaded(prog_static, "static-out", NULL);
}

static void xray_without_xfdr_refused(void **state)
{
	char dir[PATH_BYTES];
	struct child_result r;

	(void)state;
	out_dir(dir, "xray-alone-out");
	record(&r, "-o", dir, prog_xray_alone, "spin", NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.out, ""); /* it did not run */
	text_assert_contains(r.err, "has XRay sleds");
	text_assert_contains(r.err, "not linked with xfdr");
	text_assert_contains(r.err, "-lxfdr");
	assert_false(scratch_exists(dir)); /* refused before anything was made */
	child_result_free(&r);
}

static void uninstrumented_refused_unless_forced(void **state)
{
	char dir[PATH_BYTES];
	struct child_result r;

	(void)state;
	out_dir(dir, "plain-out");
	record(&r, "-o", dir, prog_plain, "exit", "0", NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.out, "");
	text_assert_contains(r.err, "has no instrumentation");
	text_assert_contains(r.err, "-finstrument-functions");
	text_assert_contains(r.err, "-fxray-instrument");
	text_assert_contains(r.err, "-pg -mfentry -minstrument-return=call");
	text_assert_contains(r.err, "--force");
	child_result_free(&r);

	record(&r, "-o", dir, "--force", prog_plain, "exit", "5", NULL);
	assert_int_equal(r.status, 5);
	text_assert_contains(r.out, "libxfdr.so.0"); /* ran, with the preload */
	/* It recorded nothing: no file, and the summary says why. */
	assert_int_equal(count_traces(dir), 0);
	assert_int_equal(count_files(dir, ""), 0); /* nor a .map */
	text_assert_contains(r.err, "no trace: nothing was recorded (no instrumented function ran "
				    "in pid ");
	child_result_free(&r);
}

/* A script is not ELF: run with the preload, nothing said about it. */
static void script_runs_preloaded(void **state)
{
	char dir[PATH_BYTES], script[PATH_BYTES + 64];
	struct child_result r;

	(void)state;
	out_dir(dir, "script-out");
	/* ls, preloaded too, records nothing and leaves no file */
	snprintf(script, sizeof(script), "#!/bin/sh\nls / >/dev/null\nexec '%s' exit 3\n",
		 prog_cyg);
	chmod(scratch_write_text("run.sh", script), 0755);
	record(&r, "-q", "-o", dir, scratch_path("run.sh"), NULL);
	assert_int_equal(r.status, 3);
	text_assert_contains(r.out, "libxfdr.so.0");
	/* -q: nothing of ours, nor the runtime's notes */
	assert_string_equal(r.err, "");
	assert_int_equal(count_traces(dir), 1);
	child_result_free(&r);
}

/*
 * Under `ulimit -f` smaller than one buffer: the program ends by its own exit status (not
 * SIGXFSZ), the runtime names the file and EFBIG, record says why there is no trace, and
 * nothing is left under a trace's name or as a .part.
 */
static void file_size_limit_named(void **state)
{
	char dir[PATH_BYTES], script[PATH_BYTES + 64], cmd[PATH_BYTES + 64];
	char *ls[] = {"sh", "-c", cmd, NULL};
	struct child_result r, left;

	(void)state;
	out_dir(dir, "fsize-out");
	snprintf(script, sizeof(script), "#!/bin/sh\nulimit -f 1\nexec '%s' exit 3\n", prog_cyg);
	chmod(scratch_write_text("fsize.sh", script), 0755);
	record(&r, "-o", dir, scratch_path("fsize.sh"), NULL);
	assert_int_equal(r.signal, 0);
	assert_int_equal(r.status, 3);
	text_assert_contains(r.err, ".xray: EFBIG (file too large); lost ");
	text_assert_contains(r.err, "exited with status 3");
	text_assert_contains(r.err, "its flush could not write the file");
	snprintf(cmd, sizeof(cmd), "ls -A '%s'", dir);
	child_capture(ls, &left);
	assert_string_equal(left.out, "");
	child_result_free(&left);
	child_result_free(&r);
}

static void exit_status_forwarded(void **state)
{
	char dir[PATH_BYTES];
	struct child_result r;

	(void)state;
	out_dir(dir, "exit-out");
	record(&r, "-o", dir, prog_cyg, "exit", "7", NULL);
	assert_int_equal(r.signal, 0);
	assert_int_equal(r.status, 7);
	text_assert_contains(r.err, "exited with status 7");
	assert_int_equal(count_traces(dir), 1);
	child_result_free(&r);
}

static void sigterm_flushes_and_kills_record(void **state)
{
	char dir[PATH_BYTES], trace[PATH_BYTES];
	struct child_result r;

	(void)state;
	out_dir(dir, "term-out");
	record(&r, "-o", dir, prog_cyg, "term", NULL);
	assert_int_equal(r.signal, SIGTERM);
	text_assert_contains(r.err, "was killed by SIGTERM");
	one_trace(dir, trace);
	verify_ok(trace);
	assert_int_equal(summary_number(r.err, "events"), llvm_function_records(trace));
	child_result_free(&r);
}

/*
 * A crash: the summary shows the crashing thread's frames, the crash site first and named
 * (it used to point at `xfdr dump | tail`, which shows the outermost frames).
 */
static void crash_summary_shows_the_site(void **state)
{
	char dir[PATH_BYTES], trace[PATH_BYTES];
	struct child_result r;
	const char *site, *caller;

	(void)state;
	out_dir(dir, "segv-out");
	record(&r, "-o", dir, prog_cyg, "segv", NULL);
	/* ASan's SIGSEGV handler, the program's own to xfdr, ends it with a report and status 1. */
	if (sanitized())
		assert_int_equal(r.status, 1);
	else
		assert_int_equal(r.signal, SIGSEGV);
	one_trace(dir, trace);
	verify_ok(trace);
	text_assert_contains(r.err, "crash      SIGSEGV (code 1, address 0x0) in thread ");
	site = strstr(r.err, "    #0  crash_here (");
	caller = strstr(r.err, "    #1  main (");
	if (!site || !caller || caller < site)
		fail_msg("the frames are not the crash site, then its caller:\n%s", r.err);
	/* Four events in all: too few for a function to be named the busiest. */
	assert_null(strstr(r.err, "busiest"));
	child_result_free(&r);
}

/*
 * Record the AddressSanitizer-built program in mode: ASan reports (report_line) and ends it with
 * status 1 by a raw exit_group, no exit() or _exit() for xfdr to see; its death callback is
 * where xfdr flushes. There is one trace, and tools accept it.
 */
static void record_sanitized(const char *mode, const char *report_line, struct child_result *r,
			     char *trace)
{
	char dir[PATH_BYTES];

	out_dir(dir, mode);
	record(r, "-o", dir, prog_asan, mode, NULL);
	assert_int_equal(r->signal, 0);
	assert_int_equal(r->status, 1);
	text_assert_contains(r->err, report_line);
	one_trace(dir, trace);
	verify_ok(trace);
}

/*
 * A crash: ASan's SIGSEGV handler, there before xfdr's, is the program's own to xfdr and runs
 * first. The crash is flushed from the death callback, with its frames.
 */
static void sanitized_crash_leaves_a_trace(void **state)
{
	char trace[PATH_BYTES];
	struct child_result r;

	(void)state;
	record_sanitized("segv", "ERROR: AddressSanitizer: SEGV on unknown address", &r, trace);
	text_assert_contains(r.err, "crash      SIGSEGV (code 1, address 0x0) in thread ");
	text_assert_contains(r.err, "    #0  crash_here (");
	child_result_free(&r);
}

/* An error ASan finds without a signal (a read past a heap block) gets the exit flush. */
static void sanitizer_report_leaves_a_trace(void **state)
{
	char trace[PATH_BYTES];
	struct child_result r;

	(void)state;
	record_sanitized("heap_overflow", "ERROR: AddressSanitizer: heap-buffer-overflow", &r,
			 trace);
	/* main, tiny and read_past entered; tiny exited: the report came inside read_past */
	assert_int_equal(llvm_function_records(trace), 4);
	child_result_free(&r);
}

/*
 * No trace, and the summary says why: the program took SIGSEGV from xfdr with a system call no
 * library sees, so xfdr's handler never ran (the summary used to send the user to messages
 * that were never printed).
 */
static void no_trace_says_the_handler_never_ran(void **state)
{
	char dir[PATH_BYTES];
	struct child_result r;

	(void)state;
	out_dir(dir, "segv-unseen-out");
	record(&r, "-o", dir, prog_cyg, "segv_unseen", NULL);
	assert_int_equal(r.signal, SIGSEGV);
	text_assert_contains(r.err, "no trace: the program died by SIGSEGV, and xfdr's crash "
				    "handler never ran");
	child_result_free(&r);
}

/* The same death, xfdr never in the program (static: no LD_PRELOAD): the summary says so. */
static void no_trace_says_xfdr_was_not_loaded(void **state)
{
	char dir[PATH_BYTES];
	struct child_result r;

	(void)state;
	out_dir(dir, "segv-plain-out");
	record(&r, "-o", dir, "--force", prog_plain_static, "segv", NULL);
	assert_int_equal(r.signal, SIGSEGV);
	text_assert_contains(r.err, "and xfdr was not in it (pid ");
	child_result_free(&r);
}

/* Wait (at most 20 s) for path to exist. */
static void wait_for_file(const char *path)
{
	int i;

	for (i = 0; i < 20000 && !scratch_exists(path); i++)
		usleep(1000);
	if (!scratch_exists(path))
		fail_msg("%s never appeared", path);
}

static void sigusr1_forwarded(void **state)
{
	char dir[PATH_BYTES], sig_dir[PATH_BYTES], ready[PATH_BYTES], got[PATH_BYTES];
	char *argv[] = {
	    (char *)child_xfdr_bin(), "record", "-q", "-o", dir, prog_cyg, "usr1", sig_dir, NULL};
	char text[64] = "";
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st;
	FILE *f;

	(void)state;
	out_dir(dir, "usr1-out");
	path_in_scratch(sig_dir, "usr1");
	assert_int_equal(mkdir(sig_dir, 0755), 0);
	path_in_scratch(ready, "usr1/ready");
	path_in_scratch(got, "usr1/got");
	if (preload_env[0])
		setenv("LD_PRELOAD", preload_env + 11, 1);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	unsetenv("LD_PRELOAD");
	wait_for_file(ready);
	assert_int_equal(kill(pid, SIGUSR1), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	f = fopen(got, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	/* SI_USER: xfdr record's kill(), not a terminal's. */
	assert_string_equal(text, "SIGUSR1 si_code=0\n");
}

/*
 * Ctrl-C on a terminal: the line discipline sends SIGINT (SI_KERNEL) to the foreground group,
 * xfdr record and the program alike. The program flushes and dies; xfdr record must live to
 * print its summary, then die by SIGINT as the program did.
 */
static void terminal_interrupt_not_fatal(void **state)
{
	char dir[PATH_BYTES], sig_dir[PATH_BYTES], ready[PATH_BYTES];
	char out[16384];
	size_t len = 0;
	ssize_t n;
	pid_t pid;
	int master, st;

	(void)state;
	out_dir(dir, "tty-out");
	path_in_scratch(sig_dir, "tty");
	assert_int_equal(mkdir(sig_dir, 0755), 0);
	path_in_scratch(ready, "tty/ready");
	pid = forkpty(&master, NULL, NULL, NULL);
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = {
		    (char *)child_xfdr_bin(), "record", "-o", dir, prog_cyg, "usr1", sig_dir, NULL};

		if (preload_env[0])
			setenv("LD_PRELOAD", preload_env + 11, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	wait_for_file(ready);
	assert_int_equal(write(master, "\003", 1), 1);
	for (;;) {
		n = read(master, out + len, sizeof(out) - 1 - len);
		if (n <= 0)
			break; /* EIO once the last process holding the terminal is gone */
		len += (size_t)n;
	}
	out[len] = '\0';
	close(master);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGINT)
		fail_msg("xfdr record did not die by SIGINT (status %#x):\n%s", st, out);
	text_assert_contains(out, "was killed by SIGINT");
	text_assert_contains(out, "  events ");
	assert_int_equal(count_traces(dir), 1);
}

/* The caller's XFDR_OPTIONS come first: --mode and --option win over them. */
static void mode_and_options_reach_runtime(void **state)
{
	static char caller_bounded[] = "XFDR_OPTIONS=mode=bounded:buffer_max=100";
	static char caller_ring[] = "XFDR_OPTIONS=mode=ring:buffer_max=100";
	char *env_bounded[] = {caller_ring, NULL}, *env_ring[] = {caller_bounded, NULL};
	char dir[PATH_BYTES], trace[PATH_BYTES], map[PATH_BYTES + 8], v[256], want[300];
	struct child_result r;
	long events;

	(void)state;
	out_dir(dir, "bounded-out");
	record_env(&r, env_bounded, "-o", dir, "--mode=bounded", "--option", "buffer_max=4",
		   "--option", "buffer_size=4096", prog_cyg, "many", "20000", NULL);
	assert_int_equal(r.status, 0);
	one_trace(dir, trace);
	snprintf(map, sizeof(map), "%s.map", trace);
	map_value(map, "mode", v, sizeof(v));
	assert_string_equal(v, "bounded");
	map_value(map, "buffer_max", v, sizeof(v));
	assert_string_equal(v, "4");
	map_value(map, "buffer_size", v, sizeof(v));
	assert_string_equal(v, "4096");
	map_value(map, "dropped\tno_buffer", v, sizeof(v));
	assert_true(atol(v) > 0);
	snprintf(want, sizeof(want), "no_buffer %s", v);
	text_assert_contains(r.err, want);
	map_value(map, "dropped\ttotal", v, sizeof(v));
	assert_int_equal(summary_number(r.err, "dropped"), atol(v));
	events = summary_number(r.err, "events");
	assert_int_equal(events, llvm_function_records(trace));
	verify_ok(trace);
	child_result_free(&r);

	out_dir(dir, "ring-out");
	record_env(&r, env_ring, "-o", dir, "--mode=ring", "--option", "buffer_max=4", "--option",
		   "buffer_size=4096", prog_cyg, "many", "20000", NULL);
	assert_int_equal(r.status, 0);
	one_trace(dir, trace);
	snprintf(map, sizeof(map), "%s.map", trace);
	map_value(map, "mode", v, sizeof(v));
	assert_string_equal(v, "ring");
	map_value(map, "buffer_max", v, sizeof(v));
	assert_string_equal(v, "4");
	map_value(map, "overwritten", v, sizeof(v));
	assert_true(atol(v) > 0);
	snprintf(want, sizeof(want), " %s overwritten (older events lost)", v);
	text_assert_contains(r.err, want);
	assert_int_equal(summary_number(r.err, "events"), llvm_function_records(trace));
	child_result_free(&r);

	/* The whole run through four buffers; a writer behind is counted as stream_behind. */
	out_dir(dir, "stream-out");
	record_env(&r, env_ring, "-o", dir, "--mode=stream", "--option", "buffer_max=4", "--option",
		   "buffer_size=4096", prog_cyg, "many", "20000", NULL);
	assert_int_equal(r.status, 0);
	one_trace(dir, trace);
	snprintf(map, sizeof(map), "%s.map", trace);
	map_value(map, "mode", v, sizeof(v));
	assert_string_equal(v, "stream");
	text_assert_contains(r.err, "  pool       stream, 4 buffers of 4 KiB");
	map_value(map, "stream_behind", v, sizeof(v));
	events = atol(v);
	map_value(map, "dropped\tno_buffer", v, sizeof(v));
	assert_int_equal(atol(v), events);
	if (events)
		text_assert_contains(r.err, ": stream_behind, the writer fell behind");
	assert_true(summary_number(r.err, "events") > 0);
	assert_int_equal(summary_number(r.err, "events"), llvm_function_records(trace));
	verify_ok(trace);
	child_result_free(&r);

	/* Cut into files of five buffers, the newest two kept: two traces. */
	out_dir(dir, "stream-cut-out");
	record_env(&r, env_ring, "-o", dir, "--mode=stream", "--option", "buffer_size=4096",
		   "--option", "stream_max_bytes=20512", "--option", "stream_max_files=2", prog_cyg,
		   "many", "20000", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(count_traces(dir), 2);
	text_assert_contains(r.err, "also written during the run");
	child_result_free(&r);
}

/*
 * --include, --exclude and --max-depth reach the runtime as its options, a pattern with ':'
 * and a space escaped so that it stays one item; the summary says what they left out. spin:
 * main -> hot, warm x 2, tiny x 1000 (tests/e2e/record_prog.c).
 */
static void filters_reach_runtime(void **state)
{
	char dir[PATH_BYTES], trace[PATH_BYTES], map[PATH_BYTES + 8], v[256];
	struct child_result r;

	(void)state;
	out_dir(dir, "exclude-out");
	record(&r, "-o", dir, "--exclude=tiny,x y:z", "--max-depth=1", prog_cyg, "spin", NULL);
	if (r.status || r.signal)
		fail_msg("status %d:\n%s", r.status, r.err);
	one_trace(dir, trace);
	verify_ok(trace);
	snprintf(map, sizeof(map), "%s.map", trace);
	map_value(map, "exclude", v, sizeof(v));
	assert_string_equal(v, "tiny,x\\ y\\:z");
	map_value(map, "max_depth", v, sizeof(v));
	assert_string_equal(v, "1");
	map_value(map, "filtered_calls", v, sizeof(v));
	assert_string_equal(v, "1000");
	/* hot and warm twice, under main */
	map_value(map, "max_depth_calls", v, sizeof(v));
	assert_string_equal(v, "3");
	/* main alone is recorded */
	assert_int_equal(summary_number(r.err, "events"), 2);
	assert_int_equal(llvm_function_records(trace), 2);
	text_assert_contains(r.err,
			     "  left out   1 function by --include/--exclude (1000 calls); 3 "
			     "calls deeper than --max-depth\n");
	text_assert_contains(r.err, "xfdr: exclude=x\\ y\\:z: this pattern matched no function");
	child_result_free(&r);

	out_dir(dir, "include-out");
	record(&r, "-o", dir, "--include=main,h*", prog_cyg, "spin", NULL);
	assert_int_equal(r.status, 0);
	one_trace(dir, trace);
	snprintf(map, sizeof(map), "%s.map", trace);
	map_value(map, "include", v, sizeof(v));
	assert_string_equal(v, "main,h*");
	map_value(map, "functions_left_out", v, sizeof(v));
	assert_string_equal(v, "2"); /* warm, tiny */
	assert_int_equal(summary_number(r.err, "events"), 4);
	assert_null(strstr(r.err, "matched no function"));
	child_result_free(&r);
}

/*
 * More threads than buffers in ring mode: main holds the only buffer (never full, so never
 * reused) while "late" runs; every event of late's is dropped for want of a buffer. The summary
 * counts late among the threads, says it left nothing, and says what to raise.
 */
static void ring_threads_without_buffers(void **state)
{
	char dir[PATH_BYTES], trace[PATH_BYTES], map[PATH_BYTES + 8], v[256], want[512];
	struct child_result r;

	(void)state;
	out_dir(dir, "ring-threads-out");
	record(&r, "-o", dir, "--mode=ring", "--option", "buffer_max=1", prog_cyg, "threads", "100",
	       NULL);
	assert_int_equal(r.status, 0);
	one_trace(dir, trace);
	snprintf(map, sizeof(map), "%s.map", trace);
	map_value(map, "dropped\tno_buffer", v, sizeof(v));
	assert_true(atol(v) >= 200); /* late's 100 calls of tiny() at least */
	text_assert_contains(r.err, "  threads    1 of 2 (1 left no records: every event dropped "
				    "or overwritten)\n");
	snprintf(want, sizeof(want),
		 "(no_buffer %s): every buffer was a thread's current one; raise buffer_max above "
		 "the number of threads (2 here)\n",
		 v);
	text_assert_contains(r.err, want);
	child_result_free(&r);
}

/*
 * -q: no summary and none of the runtime's notes, though it wrote a trace and dropped events
 * (a bounded pool of two small buffers); an error still shows.
 */
static void quiet_says_only_errors(void **state)
{
	char dir[PATH_BYTES], trace[PATH_BYTES], map[PATH_BYTES + 8], v[256];
	struct child_result r;

	(void)state;
	out_dir(dir, "quiet-out");
	record(&r, "-q", "-o", dir, "--mode=bounded", "--option", "buffer_max=2", "--option",
	       "buffer_size=4096", prog_cyg, "many", "20000", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	one_trace(dir, trace);
	snprintf(map, sizeof(map), "%s.map", trace);
	map_value(map, "dropped\ttotal", v, sizeof(v));
	assert_true(atol(v) > 0);
	child_result_free(&r);
	record(&r, "-q", "-o", dir, "--option", "mode=circular", prog_cyg, "many", "10", NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, " not run: ");
	child_result_free(&r);
}

/* A time of the summary ("1.069 ms", "0 ns", "18.756 us", "2.5 s") in ns; *step: its last digit. */
static double summary_ns(const char *p, double *step)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{" ns", 1}, {" us", 1e3}, {" ms", 1e6}, {" s", 1e9}};
	const char *dot;
	char *end;
	double v = strtod(p, &end);
	size_t i, decimals;

	dot = memchr(p, '.', (size_t)(end - p));
	decimals = dot ? (size_t)(end - dot - 1) : 0;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strncmp(end, units[i].unit, strlen(units[i].unit))) {
			*step = units[i].ns;
			while (decimals--)
				*step /= 10;
			return v * units[i].ns;
		}
	fail_msg("no time at \"%.30s\"", p);
	return 0;
}

/* The line at p (without its newline) into buf. */
static void line_at(const char *p, char *buf, size_t n)
{
	size_t len = strcspn(p, "\n");

	assert_true(len < n);
	memcpy(buf, p, len);
	buf[len] = '\0';
}

/*
 * A ring too small for a thread's history: the summary gives the window every thread's kept
 * history covers, from where the ring lost the oldest of "late" (its first event kept, as
 * llvm-xray reads the file) to the end, and each thread's span; "early" lost nothing.
 */
static void ring_summary_window(void **state)
{
	char dir[PATH_BYTES], trace[PATH_BYTES], want[128], line[256];
	char *argv[] = {(char *)child_llvm_xray(), "convert", "--output-format=yaml", trace, NULL};
	struct child_result r, y;
	const char *w, *t1, *t2, *p;
	double start, end, end1, start2, step, hz;
	uint64_t first = UINT64_MAX, first_late = UINT64_MAX;

	(void)state;
	out_dir(dir, "window-out");
	record(&r, "-o", dir, "--mode=ring", "--option", "buffer_max=4", "--option",
	       "buffer_size=4096", prog_cyg, "threads", "20000", NULL);
	if (r.status || r.signal)
		fail_msg("status %d:\n%s", r.status, r.err);
	one_trace(dir, trace);
	assert_int_equal(summary_number(r.err, "threads"), 2);
	w = strstr(r.err, "\n  window     ");
	t1 = strstr(r.err, "\n    thread 1 (early) ");
	t2 = strstr(r.err, "\n    thread 2 (late) ");
	if (!w || !t1 || !t2)
		fail_msg("no window or span lines:\n%s", r.err);
	start = summary_ns(w + 14, &step);
	p = strstr(w, " to ");
	assert_non_null(p);
	end = summary_ns(p + 4, &step);
	snprintf(want, sizeof(want),
		 ": where every thread's kept history holds (the functions "
		 "below are of it)\n");
	text_assert_contains(w, want);
	/* early: from the first event to the end, nothing lost */
	line_at(t1 + 1, line, sizeof(line));
	assert_int_equal(strncmp(line, "    thread 1 (early) 0 ns to ", 29), 0);
	end1 = summary_ns(line + 29, &step);
	assert_true(end1 == end);
	assert_null(strstr(line, "lost"));
	/* late: its kept history begins the window, the older lost */
	line_at(t2 + 1, line, sizeof(line));
	start2 = summary_ns(line + 20, &step);
	assert_true(start2 == start);
	assert_non_null(strstr(line, ", older events lost"));
	assert_true(start > 0 && start < end);

	/* The oracle: late's first record after the trace's first, at the header's rate. */
	child_capture(argv, &y);
	assert_int_equal(y.status, 0);
	p = strstr(y.out, "cycle-frequency: ");
	assert_non_null(p);
	hz = strtod(p + 17, NULL);
	for (p = y.out; (p = strstr(p, "kind: function-")); p++) {
		const char *line = p, *th, *tsc;
		uint64_t v;

		while (line > y.out && line[-1] != '\n')
			line--;
		tsc = strstr(p, "tsc: ");
		th = strstr(line, "thread: ");
		assert_non_null(tsc);
		v = strtoull(tsc + 5, NULL, 10);
		first = v < first ? v : first;
		if (th && th < p && atoi(th + 8) == 2 && v < first_late)
			first_late = v;
	}
	child_result_free(&y);
	assert_true(first_late != UINT64_MAX && hz > 0);
	if (fabs(start - (double)(first_late - first) * 1e9 / hz) > step)
		fail_msg("the window starts at %.0f ns, late's first record at %.0f ns", start,
			 (double)(first_late - first) * 1e9 / hz);
	child_result_free(&r);
}

static void usage_errors(void **state)
{
	struct child_result r;

	(void)state;
	record(&r, NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "missing PROGRAM");
	child_result_free(&r);
	record(&r, "--mode=bad", prog_cyg, NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "'--mode' takes ring, bounded or stream, not 'bad'");
	assert_string_equal(r.out, "");
	child_result_free(&r);
	record(&r, "--option", "noequals", prog_cyg, NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "KEY=VALUE");
	child_result_free(&r);
	record(&r, "--option", "output=a:b", prog_cyg, NULL);
	assert_int_equal(r.status, 2);
	child_result_free(&r);
	record(&r, "--top=-1", prog_cyg, NULL);
	assert_int_equal(r.status, 2);
	child_result_free(&r);
	record(&r, "--max-depth=2x", prog_cyg, NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "'--max-depth' takes a number of open calls, not '2x'");
	child_result_free(&r);
	/* checked by the runtime's own parser before the program runs */
	record(&r, "--exclude=a,,b", prog_cyg, NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "bad value \"a,,b\" for exclude");
	assert_string_equal(r.out, "");
	child_result_free(&r);
	record(&r, "--bogus", prog_cyg, NULL);
	assert_int_equal(r.status, 2);
	child_result_free(&r);
	/* Options stop at PROGRAM: its own -o is its own. */
	record(&r, "-o", scratch_path("nothere-out"), "/no/such/program", "-o", "x", NULL);
	assert_int_equal(r.status, 127);
	text_assert_contains(r.err, "/no/such/program: No such file or directory");
	child_result_free(&r);
	record(&r, "-o", "/proc/no/such/dir", prog_cyg, NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "/proc/no/such/dir: cannot create the output directory");
	child_result_free(&r);
	record(&r, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	text_assert_contains(r.out, "usage: xfdr record [-o DIR]");
	text_assert_contains(r.out, "--mode=MODE");
	text_assert_contains(r.out, "Exit status:");
	child_result_free(&r);
}

/*
 * Options the runtime would not take are refused before the program runs, with the runtime's
 * own line: a typo (--option or the caller's XFDR_OPTIONS) and a pool larger than the machine.
 * The program prints "preload: ..." first thing: its stdout stays empty.
 */
static void bad_options_refused_before_running(void **state)
{
	char dir[PATH_BYTES], caller_typo[PATH_BYTES + 64];
	char *env_typo[] = {caller_typo, NULL};
	struct child_result r;

	(void)state;
	out_dir(dir, "refused-out");
	record(&r, "-o", dir, "--option", "mode=circular", prog_cyg, "many", "10", NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "xfdr: XFDR_OPTIONS: bad value \"circular\" for mode (ring, "
				    "bounded or stream; stream not with per_thread_files); "
				    "keeping ring\n");
	text_assert_contains(r.err, " not run: the runtime would not take XFDR_OPTIONS as given "
				    "(the line above); fix that option\n");
	assert_string_equal(r.out, "");
	assert_int_equal(count_traces(dir), 0);
	child_result_free(&r);
	/* Each size alone is valid; together they need 2^50 bytes. */
	record(&r, "-o", dir, "--option", "buffer_size=1g", "--option", "buffer_max=1048576",
	       prog_cyg, "many", "10", NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "xfdr: xfdr_init: buffer_size 1073741824 x buffer_max 1048576 "
				    "and thread_max 4096 need ");
	text_assert_contains(r.err, " not run: ");
	assert_string_equal(r.out, "");
	child_result_free(&r);
	/* start=1 and an output: a recorder started in xfdr record would write a trace there */
	snprintf(caller_typo, sizeof(caller_typo), "XFDR_OPTIONS=start=1:output=%s/:modee=ring",
		 dir);
	record_env(&r, env_typo, "-o", dir, prog_cyg, "many", "10", NULL);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, "xfdr: XFDR_OPTIONS: unknown key \"modee\" (value \"ring\")");
	assert_string_equal(r.out, "");
	child_result_free(&r);
	/* The check started nothing in xfdr record itself. */
	assert_int_equal(count_traces(dir), 0);
}

/* ---- The ELF inspection, in process ------------------------------------------------------- */

static uint8_t *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	p = malloc((size_t)len);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return p;
}

static void probe_kinds(void **state)
{
	struct elf_probe p;

	(void)state;
	assert_int_equal(elf_probe_file(prog_cyg, &p), 0);
	assert_true(p.inspected && p.cyg && !p.xray && !p.xfdr_api && !p.xfdr_static &&
		    !p.xfdr_needed);
	assert_int_equal(elf_probe_file(prog_static, &p), 0);
	assert_true(p.cyg && p.xfdr_static && p.xfdr_api && !p.xfdr_needed);
	assert_int_equal(elf_probe_file(prog_xray, &p), 0);
	assert_true(p.xray && p.xfdr_needed && !p.xfdr_static && !p.cyg);
	assert_int_equal(elf_probe_file(prog_xray_alone, &p), 0);
	assert_true(p.xray && !p.xfdr_needed && !p.xfdr_static && !p.xfdr_api);
	assert_int_equal(elf_probe_file(prog_plain, &p), 0);
	assert_true(p.inspected && p.sections && !p.xray && !p.cyg && !p.fentry && !p.xfdr_api);
	assert_int_equal(elf_probe_file("/nonexistent/file", &p), ENOENT);
	assert_int_equal(elf_probe_file("/", &p), 0);
	assert_false(p.elf);
}

/* Every truncation and a few thousand mutations: each copy exactly as large as it says. */
static void probe_survives_damage(void **state)
{
	struct elf_probe p;
	size_t n, len, i, k;
	uint8_t *image = read_all(prog_xray, &n), *copy;
	unsigned seed = 12345;

	(void)state;
	for (len = 0; len <= n; len += len < 4096 ? 1 : 97) {
		copy = malloc(len ? len : 1);
		assert_non_null(copy);
		memcpy(copy, image, len);
		elf_probe_memory(copy, len, &p);
		assert_int_equal(p.elf, len >= 4);
		free(copy);
	}
	copy = malloc(n);
	assert_non_null(copy);
	for (i = 0; i < 3000; i++) {
		memcpy(copy, image, n);
		for (k = 0; k < 1 + i % 8; k++) {
			size_t at;

			seed = seed * 1103515245u + 12345u;
			/* Half in the ELF header, half anywhere. */
			at = k % 2 ? (seed >> 8) % n : (seed >> 8) % 64;
			seed = seed * 1103515245u + 12345u;
			copy[at] = (uint8_t)(seed >> 16);
		}
		elf_probe_memory(copy, n, &p);
	}
	free(copy);
	free(image);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(probe_kinds),
	    cmocka_unit_test(probe_survives_damage),
	    cmocka_unit_test(ring_summary_window),
	    cmocka_unit_test(usage_errors),
	    cmocka_unit_test(bad_options_refused_before_running),
	    cmocka_unit_test(preloaded_cyg_summary),
	    cmocka_unit_test(xray_linked_not_preloaded),
	    cmocka_unit_test(static_runtime_not_preloaded),
	    cmocka_unit_test(xray_without_xfdr_refused),
	    cmocka_unit_test(uninstrumented_refused_unless_forced),
	    cmocka_unit_test(script_runs_preloaded),
	    cmocka_unit_test(exit_status_forwarded),
	    cmocka_unit_test(file_size_limit_named),
	    cmocka_unit_test(sigterm_flushes_and_kills_record),
	    cmocka_unit_test(sigusr1_forwarded),
	    cmocka_unit_test(terminal_interrupt_not_fatal),
	    cmocka_unit_test(crash_summary_shows_the_site),
	    cmocka_unit_test(sanitized_crash_leaves_a_trace),
	    cmocka_unit_test(sanitizer_report_leaves_a_trace),
	    cmocka_unit_test(no_trace_says_the_handler_never_ran),
	    cmocka_unit_test(no_trace_says_xfdr_was_not_loaded),
	    cmocka_unit_test(mode_and_options_reach_runtime),
	    cmocka_unit_test(filters_reach_runtime),
	    cmocka_unit_test(ring_threads_without_buffers),
	    cmocka_unit_test(quiet_says_only_errors),
	};

	return cmocka_run_group_tests(tests, build_programs, scratch_teardown);
}
