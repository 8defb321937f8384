/*
 * tests/system/test_runtime_core.c - the pool found in a core dump: `xfdr core`.
 *
 * A child records a known sequence of events into a memory-backed pool, then either waits
 * (blocked reading its stdin) while gdb takes a core of it with `gcore`, or crashes with no
 * handler of ours (flush_on_crash=0) so that the kernel writes a core. `xfdr core` must find
 * the pool through its "XFDRPOOL" locator and give a trace that `xfdr verify` and llvm-xray
 * accept, holding exactly the sequence, with the TSC frequency the child's locator had. The
 * gcore child initialises twice, the second time late enough for the locator to get the
 * frequency; the crashing one once, so its core has none and `xfdr core` estimates it.
 * And the runtime's own image holds no "XFDRPOOL" that a core search could take for a pool.
 *
 * Where gdb cannot attach (no ptrace), cores are not allowed (RLIMIT_CORE), or the kernel
 * hands cores to a program (core_pattern "|..."), the case is skipped with the reason printed.
 * Not under sanitizers: their shadow mappings make cores of terabytes of address space.
 */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include "tests/support/child.h"
#include "tests/support/runtime_test.h"

#include "runtime/pool/pool.h"

#define BUF_BYTES 4096u
#define BUF_COUNT 64u
/* 3000 events: 6 buffers of 504 records (4096 - 48 - 16 bytes), the last one still owned. */
#define EVENTS 3000u

/* ---- the children: ts_seq_issue()'s known sequence --------------------------------------- */

static int child_init(void)
{
	struct xfdr_options o;

	xfdr_options_default(&o);
	o.buffer_size = BUF_BYTES;
	o.buffer_max = BUF_COUNT;
	o.mode = XFDR_MODE_BOUNDED;
	o.flush_at_exit = 0;
	o.flush_on_crash = 0;
	o.flush_on_terminate = 0;
	o.output = "/nonexistent/"; /* nothing may be flushed */
	return xfdr_init(&o);
}

/*
 * The children: init (memory backing, bounded, no flush anywhere), EVENTS events. With
 * reinit, a second init 30 ms after the first, which gives the locator the TSC frequency
 * (the calibration's baseline is long enough by then). Returns the frequency the locator
 * has (0: unknown, xfdr core then estimates it), or -1 on failure.
 */
static int64_t child_record(int reinit)
{
	uint64_t k;

	if (child_init())
		return -1;
	if (reinit) {
		nanosleep(&(struct timespec){0, 30000000}, NULL);
		if (child_init())
			return -1;
	}
	if (xfdr_start())
		return -1;
	for (k = 0; k < EVENTS; k++)
		ts_seq_issue(k);
	xfdr_stop();
	return (int64_t)pool_locator_tsc_hz();
}

/* --wait-child: record, say "ready <hz>" on stdout, block until stdin closes. */
static int wait_child_main(void)
{
	int64_t hz = child_record(1);
	char c;

	if (hz <= 0)
		return 3;
	/* gdb attaches as a sibling, not a parent: allowed under Yama ptrace_scope 1 too. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	printf("ready %llu\n", (unsigned long long)hz);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

/* A crashing child's start: cores allowed (up to the hard limit), dumpable, cwd dir. 0, or 3. */
static int allow_core(const char *dir)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_CORE, &rl))
		return 3;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_CORE, &rl) || chdir(dir))
		return 3;
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	return 0;
}

/* --crash-child DIR: cores allowed, cwd DIR, record, say "hz N", then a null write. */
static int crash_child_main(const char *dir)
{
	int64_t hz;

	if (allow_core(dir))
		return 3;
	hz = child_record(0);
	if (hz < 0)
		return 5;
	printf("hz %llu\n", (unsigned long long)hz);
	fflush(stdout);
	signal(SIGSEGV, SIG_DFL);
	*(volatile int *)(uintptr_t)8 = 1;
	return 6;
}

/*
 * --names-child DIR: as --crash-child, but the events come through the -finstrument-functions
 * hooks (called here directly: this file is not instrumented) from two named threads, so that
 * only the core can say which function each id is and which thread each id was. Says
 * "tids MAIN WORKER at OUTER INNER" (the functions' addresses) before it crashes.
 */
void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);
void core_named_outer(void);
void core_named_inner(void);

__attribute__((noinline)) void core_named_outer(void)
{
	__asm__ volatile("");
}

__attribute__((noinline)) void core_named_inner(void)
{
	__asm__ volatile("");
}

static void named_calls(void)
{
	__cyg_profile_func_enter((void *)core_named_outer, NULL);
	__cyg_profile_func_enter((void *)core_named_inner, NULL);
	__cyg_profile_func_exit((void *)core_named_inner, NULL);
	__cyg_profile_func_exit((void *)core_named_outer, NULL);
}

static void *named_worker(void *arg)
{
	prctl(PR_SET_NAME, "namedworker", 0, 0, 0);
	*(uint32_t *)arg = ts_tid();
	named_calls();
	return NULL;
}

static int names_child_main(const char *dir)
{
	pthread_t t;
	uint32_t worker = 0, i;

	if (allow_core(dir))
		return 3;
	prctl(PR_SET_NAME, "namesmain", 0, 0, 0);
	if (child_init() || xfdr_start())
		return 5;
	named_calls();
	if (pthread_create(&t, NULL, named_worker, &worker) || pthread_join(t, NULL))
		return 6;
	/* Renamed after its first event: the buffers it takes after are under its new name. */
	prctl(PR_SET_NAME, "mainrenamed", 0, 0, 0);
	for (i = 0; i < 2 * BUF_BYTES / (4 * XFDR_FN_RECORD_BYTES); i++)
		named_calls();
	printf("tids %u %u at 0x%llx 0x%llx\n", ts_tid(), worker,
	       (unsigned long long)(uintptr_t)core_named_outer,
	       (unsigned long long)(uintptr_t)core_named_inner);
	fflush(stdout);
	signal(SIGSEGV, SIG_DFL);
	*(volatile int *)(uintptr_t)8 = 1;
	return 7;
}

/* ---- checking a trace ---------------------------------------------------------------------- */

static uint64_t header_hz(const char *path)
{
	uint8_t h[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(read(fd, h, sizeof(h)), (ssize_t)sizeof(h));
	close(fd);
	return ts_get64(h + 8);
}

/*
 * `xfdr core CORE -o OUT`, then OUT must verify and hold exactly the sequence, with the rate
 * hz the locator had (0: unknown to the process, some rate estimated by xfdr core).
 */
static void core_gives_sequence(const char *core, uint64_t hz)
{
	char out[600];

	snprintf(out, sizeof(out), "%s.xray", core);
	child_xfdr_ok("core", core, "-o", out, NULL);
	child_xfdr_ok("verify", out, NULL);
	assert_int_equal(ts_seq_reader(out), EVENTS);
	assert_int_equal(ts_seq_llvm(out, EVENTS), EVENTS);
	if (hz)
		assert_int_equal(header_hz(out), hz);
	else
		assert_int_not_equal(header_hz(out), 0);
}

/* ---- gcore of a waiting child ---------------------------------------------------------------- */

static void gcore_of_waiting_child(void **state)
{
	char *argv[] = {"test_runtime_core", "--wait-child", NULL};
	char core[300], line[128] = "", pidtext[32], cmd[400];
	int to_child[2], from_child[2], st;
	posix_spawn_file_actions_t fa;
	struct child_result r;
	unsigned long long hz = 0;
	extern char **environ;
	struct pollfd pf;
	ssize_t n, got = 0;
	pid_t pid;

	(void)state;
	if (ts_sanitized()) {
		print_message("skipped: a sanitizer's shadow memory makes cores unmanageable\n");
		skip();
	}
	assert_int_equal(pipe2(to_child, O_CLOEXEC), 0);
	assert_int_equal(pipe2(from_child, O_CLOEXEC), 0);
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, to_child[0], 0), 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, from_child[1], 1), 0);
	assert_int_equal(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(to_child[0]);
	close(from_child[1]);
	pf = (struct pollfd){.fd = from_child[0], .events = POLLIN};
	while (!strchr(line, '\n') && got < (ssize_t)sizeof(line) - 1) {
		assert_true(poll(&pf, 1, 20000) == 1);
		n = read(from_child[0], line + got, sizeof(line) - 1 - (size_t)got);
		if (n <= 0)
			break;
		got += n;
		line[got] = '\0';
	}
	close(from_child[0]);
	if (sscanf(line, "ready %llu", &hz) != 1 || !hz) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		fail_msg("the child did not get ready: \"%s\"", line);
	}

	snprintf(core, sizeof(core), "%sgcore", ts_dir);
	snprintf(pidtext, sizeof(pidtext), "%d", (int)pid);
	snprintf(cmd, sizeof(cmd), "gcore %s", core);
	child_capture(
	    (char *[]){"gdb", "-batch", "-nx", "-p", pidtext, "-ex", cmd, "-ex", "detach", NULL},
	    &r);
	close(to_child[1]); /* the child may end now */
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (r.status || access(core, F_OK)) {
		print_message("skipped: gdb could not take a core (status %d): %.300s%.300s\n",
			      r.status, r.out, r.err);
		child_result_free(&r);
		skip();
	}
	child_result_free(&r);
	core_gives_sequence(core, hz);
}

/* ---- the kernel's core of a crashed child -----------------------------------------------------
 */

/* The kernel's core_pattern, or NULL (with why) when this test cannot find its cores. */
static int core_pattern_usable(char *why, size_t why_bytes)
{
	char pattern[512] = "";
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "r");
	struct rlimit rl;

	if (!f || !fgets(pattern, sizeof(pattern), f)) {
		if (f)
			fclose(f);
		snprintf(why, why_bytes, "cannot read /proc/sys/kernel/core_pattern");
		return 0;
	}
	fclose(f);
	pattern[strcspn(pattern, "\n")] = '\0';
	if (pattern[0] == '|' || strchr(pattern, '/') || !pattern[0]) {
		snprintf(why, why_bytes,
			 "core_pattern \"%s\" does not write cores into the crashing process's "
			 "directory",
			 pattern);
		return 0;
	}
	if (getrlimit(RLIMIT_CORE, &rl) || rl.rlim_max < 64u << 20) {
		snprintf(why, why_bytes, "the hard RLIMIT_CORE is too small for a core");
		return 0;
	}
	return 1;
}

/* The one regular file in dir (the core), into out; 0 if there is not exactly one. */
static int only_file(const char *dir, char *out, size_t out_bytes)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(out, out_bytes, "%s/%s", dir, e->d_name);
			found++;
		}
	closedir(d);
	return found == 1;
}

/*
 * Run this binary with mode and a fresh directory DIR (named after mode) for its core; r gets
 * what it said. The core's path into core; skips the test where the kernel writes none there.
 */
static void kernel_core_of(const char *mode, struct child_result *r, char *core, size_t core_bytes)
{
	char dir[300], why[700];

	if (ts_sanitized()) {
		print_message("skipped: a sanitizer's shadow memory makes cores unmanageable\n");
		skip();
	}
	if (!core_pattern_usable(why, sizeof(why))) {
		print_message("skipped: %s\n", why);
		skip();
	}
	snprintf(dir, sizeof(dir), "%skcore%s", ts_dir, mode);
	assert_int_equal(mkdir(dir, 0755), 0);
	{
		char *argv[] = {"test_runtime_core", (char *)mode, dir, NULL};
		struct child_spec spec = {
		    .argv = argv,
		    .program = "/proc/self/exe",
		    .out = {.to = CHILD_CAPTURE},
		    .err = {.to = CHILD_CAPTURE},
		    .timeout_s = 120,
		};

		child_run(&spec, r);
	}
	if (r->signal != SIGSEGV)
		fail_msg("the crash child ended with status %d (signal %d): %s%s", r->status,
			 r->signal, r->out, r->err);
	if (!only_file(dir, core, core_bytes)) {
		child_result_free(r);
		print_message("skipped: the kernel wrote no core into %s (container or "
			      "coredump policy)\n",
			      dir);
		skip();
	}
}

static void kernel_core_of_crashed_child(void **state)
{
	char core[600];
	struct child_result r;
	unsigned long long hz = 0;

	(void)state;
	kernel_core_of("--crash-child", &r, core, sizeof(core));
	if (sscanf(r.out, "hz %llu", &hz) != 1)
		fail_msg("the crash child said \"%s\"", r.out);
	child_result_free(&r);
	core_gives_sequence(core, hz);
}

/*
 * The trace rebuilt from a core names its threads and functions as a flush's .map does: the
 * names directory gives the slots and the id map, the core's notes the files, and the test
 * binary's symbol table the names. The main thread renamed itself after its first buffer and
 * took more: it is named as at its last buffer (it kept its first name before).
 */
static void kernel_core_keeps_names(void **state)
{
	char core[600], out[700], exe[512], want[1024], *map;
	unsigned tid_main = 0, tid_worker = 0;
	unsigned long long outer = 0, inner = 0;
	struct child_result r;
	ssize_t n;
	size_t bytes;

	(void)state;
	kernel_core_of("--names-child", &r, core, sizeof(core));
	if (sscanf(r.out, "tids %u %u at %llx %llx", &tid_main, &tid_worker, &outer, &inner) != 4)
		fail_msg("the names child said \"%s\"", r.out);
	child_result_free(&r);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(out, sizeof(out), "%s.xray", core);
	child_capture((char *[]){getenv("XFDR_BIN"), "core", core, "-o", out, NULL}, &r);
	assert_int_equal(r.status, 0);
	/* every function is named: no line about unnamed ones or missing names */
	assert_null(strstr(r.err, "no name"));
	child_result_free(&r);
	child_xfdr_ok("verify", out, NULL);

	snprintf(want, sizeof(want), "%s.map", out);
	map = (char *)ts_slurp(want, &bytes);
	snprintf(want, sizeof(want), "\nthread\t%u\t1\tmainrenamed\t", tid_main);
	assert_non_null(strstr(map, want));
	snprintf(want, sizeof(want), "\nthread\t%u\t2\tnamedworker\t", tid_worker);
	assert_non_null(strstr(map, want));
	assert_non_null(strstr(map, "\nfunctions\tcyg\t2\n"));
	snprintf(want, sizeof(want), "\nfunction\t1\tcore_named_outer\t0x%llx\t%s\t0x", outer, exe);
	assert_non_null(strstr(map, want));
	snprintf(want, sizeof(want), "\nfunction\t2\tcore_named_inner\t0x%llx\t%s\t0x", inner, exe);
	assert_non_null(strstr(map, want));
	free(map);

	/* the reader's verbs name them from the .map */
	child_capture((char *[]){getenv("XFDR_BIN"), "dump", out, NULL}, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "name=\"core_named_inner\""));
	child_result_free(&r);
}

/*
 * The runtime builds the locator's magic at run time: libxfdr.so holds no "XFDRPOOL" (code,
 * data or strings), so a core's copy of the library's pages never looks like a pool.
 */
static void magic_not_in_the_library(void **state)
{
	const char *build = getenv("XFDR_BUILD");
	char so[600];
	uint8_t *image;
	size_t n;

	(void)state;
	if (!build || !*build)
		fail_msg("XFDR_BUILD is not set (run the tests through make check)");
	snprintf(so, sizeof(so), "%s/lib/libxfdr.so.0", build);
	image = ts_slurp(so, &n);
	assert_true(n > 4096);
	assert_null(memmem(image, n, "XFDRPOOL", 8));
	free(image);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(magic_not_in_the_library),
	    cmocka_unit_test(gcore_of_waiting_child),
	    cmocka_unit_test(kernel_core_of_crashed_child),
	    cmocka_unit_test(kernel_core_keeps_names),
	};

	if (argc == 2 && !strcmp(argv[1], "--wait-child"))
		return wait_child_main();
	if (argc == 3 && !strcmp(argv[1], "--crash-child"))
		return crash_child_main(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--names-child"))
		return names_child_main(argv[2]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
