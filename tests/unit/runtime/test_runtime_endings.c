/*
 * tests/unit/runtime/test_runtime_endings.c - fork and the ways a process ends without a signal.
 *
 * fork(): the child records alone, into its own files under its own pid and thread ids; the
 * parent's file holds only the parent's events and is written once. exit() from another
 * thread, or a return from main() while a thread records, flushes once; _exit() and exec()
 * write nothing (the flush at exit never runs: what xfdr.h documents). exit() called by two
 * threads at once is not tested: before glibc 2.41 the second caller may end the process
 * while the first runs the exit handlers. Every file is checked with the reader and with llvm-xray,
 * the independent oracle.
 */
#include <dirent.h>
#include <pthread.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "runtime/record/session.h"
#include "tests/support/child.h"
#include "tests/support/runtime_test.h"

extern char *program_invocation_short_name;

enum {
	PARENT_OPEN_FID = 1,
	CHILD_FID = 2,
	CHILD_FID_BEFORE_START = 3,
	THREAD_FID = 10, /* + thread index */
	EXIT_FID = 20,
	CHILD_CALLS = 1000,
};

static char trace_path[512], map_path[520];

/* The process file of pid's n-th flush, and its .map. */
static void names_for(pid_t pid, unsigned n)
{
	snprintf(trace_path, sizeof(trace_path), "%sxfdr-%s-%d-%u.xray", ts_dir,
		 program_invocation_short_name, (int)pid, n);
	snprintf(map_path, sizeof(map_path), "%s.map", trace_path);
}

/* Files in ts_dir whose name contains needle (NULL: all). */
static unsigned files_with(const char *needle)
{
	DIR *d = opendir(ts_dir);
	struct dirent *e;
	unsigned n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && (!needle || strstr(e->d_name, needle)))
			n++;
	closedir(d);
	return n;
}

/* Every record of trace_path through llvm-xray (which must accept it); caller frees. */
static size_t llvm_records(struct ts_yrec **out)
{
	char *yaml;
	size_t n;

	if (ts_llvm_yaml(trace_path, &yaml))
		fail_msg("llvm-xray rejects %s:\n%s", trace_path, yaml);
	n = ts_yaml_records(yaml, NULL, 0);
	*out = calloc(n + 1, sizeof(**out));
	assert_non_null(*out);
	ts_yaml_records(yaml, *out, n);
	free(yaml);
	return n;
}

static size_t count_fid(const struct ts_yrec *r, size_t n, unsigned fid, const char *kind)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += r[i].fid == fid && !strcmp(r[i].kind, kind);
	return k;
}

/* The "thread" lines of map_path: how many, and the tid of the first. */
static unsigned map_threads(uint32_t *first_tid)
{
	size_t bytes;
	char *map = (char *)ts_slurp(map_path, &bytes), *p = map;
	unsigned n = 0;

	while ((p = strstr(p, "\nthread\t"))) {
		if (!n)
			*first_tid = (uint32_t)strtoul(p + 8, NULL, 10);
		n++;
		p += 8;
	}
	free(map);
	return n;
}

static long map_pid(void)
{
	size_t bytes;
	char *map = (char *)ts_slurp(map_path, &bytes), value[32];
	long pid = -1;

	if (ts_map_value(map, "pid", value, sizeof(value)))
		pid = strtol(value, NULL, 10);
	free(map);
	return pid;
}

static void init_flushing_at_exit(void)
{
	struct xfdr_options o;

	xfdr_stop();
	xfdr_options_default(&o);
	o.buffer_size = 4096;
	o.buffer_max = 64;
	o.output = ts_dir;
	o.flush_at_exit = 1;
	o.flush_on_crash = 0;
	assert_int_equal(xfdr_init(&o), 0);
}

struct writer {
	pthread_t th;
	unsigned index;
	uint64_t calls;
};

static volatile int writers_stop;

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	/* Paced, so the files stay small enough to check record by record under a sanitizer. */
	while (!__atomic_load_n(&writers_stop, __ATOMIC_RELAXED)) {
		xfdr_enter(THREAD_FID + w->index);
		xfdr_exit(THREAD_FID + w->index);
		__atomic_add_fetch(&w->calls, 1, __ATOMIC_RELAXED);
		usleep(50);
	}
	return NULL;
}

/*
 * fork() and wait; the child runs child_fn and exits with its result through exit(), whose
 * flush writes its file. Under a sanitizer the child flushes itself and leaves by _exit():
 * LeakSanitizer's check at exit hangs in the child of a multi-threaded process.
 */
static pid_t fork_and_wait(int (*child_fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = child_fn();

		if (!ts_sanitized())
			exit(rc);
		/* The flush at exit, which writes only when the child recorded. */
		if (session_recording() != SESSION_OFF && xfdr_stop() == 0)
			rc |= xfdr_flush(NULL, 0);
		_exit(rc);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	return pid;
}

static int child_records(void)
{
	int i;

	for (i = 0; i < CHILD_CALLS; i++) {
		xfdr_enter(CHILD_FID);
		xfdr_exit(CHILD_FID);
	}
	xfdr_exit(PARENT_OPEN_FID); /* the call open at fork() returns in the child too */
	return 0;
}

/* Two threads record while the main thread, inside a call, forks. */
static void fork_in_threaded_parent(void **state)
{
	struct writer w[2];
	struct ts_yrec *r;
	struct xfdr_trace *t;
	char parent_trace[512];
	uint32_t tid = 0;
	size_t n, i;
	pid_t child;
	unsigned k;

	(void)state;
	init_flushing_at_exit();
	assert_int_equal(xfdr_start(), 0);
	writers_stop = 0;
	for (k = 0; k < 2; k++) {
		w[k].index = k;
		w[k].calls = 0;
		assert_int_equal(pthread_create(&w[k].th, NULL, writer_main, &w[k]), 0);
	}
	while (!__atomic_load_n(&w[0].calls, __ATOMIC_RELAXED) ||
	       !__atomic_load_n(&w[1].calls, __ATOMIC_RELAXED))
		sched_yield();
	xfdr_enter(PARENT_OPEN_FID);
	child = fork_and_wait(child_records);
	__atomic_store_n(&writers_stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_join(w[k].th, NULL), 0);
	xfdr_exit(PARENT_OPEN_FID);
	xfdr_stop();
	assert_int_equal(xfdr_flush(parent_trace, sizeof(parent_trace)), 0);

	/* The child's file: its exit flush, only its own thread and events. */
	names_for(child, 0);
	t = ts_open_verified(trace_path);
	xfdr_trace_close(t);
	n = llvm_records(&r);
	assert_int_equal(count_fid(r, n, CHILD_FID, "function-enter"), CHILD_CALLS);
	assert_int_equal(count_fid(r, n, CHILD_FID, "function-exit"), CHILD_CALLS);
	assert_int_equal(count_fid(r, n, PARENT_OPEN_FID, "function-exit"), 1);
	assert_int_equal(count_fid(r, n, PARENT_OPEN_FID, "function-enter"), 0);
	for (i = 0; i < n; i++) {
		if (!strcmp(r[i].kind, "custom-event"))
			continue; /* the stack context, and the drop counts (thread 0) */
		assert_true(r[i].fid == CHILD_FID || r[i].fid == PARENT_OPEN_FID);
		assert_int_equal(r[i].thread, r[0].thread);
	}
	free(r);
	assert_int_equal(map_pid(), child);
	assert_int_equal(map_threads(&tid), 1);
	assert_int_equal(tid, (uint32_t)child); /* the main thread forked: its tid is the pid */

	/* The parent's file: the parent's threads, none of the child's events. */
	snprintf(trace_path, sizeof(trace_path), "%s", parent_trace);
	snprintf(map_path, sizeof(map_path), "%s.map", parent_trace);
	t = ts_open_verified(trace_path);
	xfdr_trace_close(t);
	n = llvm_records(&r);
	assert_int_equal(count_fid(r, n, CHILD_FID, "function-enter"), 0);
	assert_int_equal(count_fid(r, n, PARENT_OPEN_FID, "function-enter"), 1);
	assert_int_equal(count_fid(r, n, PARENT_OPEN_FID, "function-exit"), 1);
	assert_true(count_fid(r, n, THREAD_FID, "function-enter") > 0);
	assert_true(count_fid(r, n, THREAD_FID + 1, "function-enter") > 0);
	free(r);
	assert_int_equal(map_pid(), getpid());
	assert_int_equal(map_threads(&tid), 3);

	/* Written once each: two traces, two maps, nothing half-written. */
	assert_int_equal(files_with(".xray"), 4);
	assert_int_equal(files_with(".part"), 0);
	ts_dir_remove();
	ts_dir_make();
}

static int child_starts_itself(void)
{
	xfdr_enter(CHILD_FID_BEFORE_START); /* not recording: the parent had stopped */
	xfdr_exit(CHILD_FID_BEFORE_START);
	if (xfdr_start())
		return 1;
	xfdr_enter(CHILD_FID);
	xfdr_exit(CHILD_FID);
	return 0;
}

static int child_never_starts(void)
{
	xfdr_enter(CHILD_FID);
	xfdr_exit(CHILD_FID);
	return 0;
}

/* After start/stop cycles the parent forks while stopped: the child starts on its own. */
static void fork_after_start_stop_cycles(void **state)
{
	struct ts_yrec *r;
	size_t n;
	pid_t child;
	int cycle;

	(void)state;
	init_flushing_at_exit();
	for (cycle = 0; cycle < 3; cycle++) {
		assert_int_equal(xfdr_start(), 0);
		xfdr_enter(PARENT_OPEN_FID);
		xfdr_exit(PARENT_OPEN_FID);
		assert_int_equal(xfdr_stop(), 0);
	}
	child = fork_and_wait(child_starts_itself);
	names_for(child, 0);
	xfdr_trace_close(ts_open_verified(trace_path));
	n = llvm_records(&r);
	assert_int_equal(count_fid(r, n, CHILD_FID, "function-enter"), 1);
	assert_int_equal(count_fid(r, n, CHILD_FID_BEFORE_START, "function-enter"), 0);
	assert_int_equal(count_fid(r, n, PARENT_OPEN_FID, "function-enter"), 0);
	free(r);

	/* A child that never starts recording writes nothing at exit. */
	child = fork_and_wait(child_never_starts);
	names_for(child, 0);
	assert_int_equal(access(trace_path, F_OK), -1);

	/* The parent flushes its own three cycles, once. */
	assert_int_equal(xfdr_flush(trace_path, sizeof(trace_path)), 0);
	n = llvm_records(&r);
	assert_int_equal(count_fid(r, n, PARENT_OPEN_FID, "function-enter"), 3);
	assert_int_equal(count_fid(r, n, CHILD_FID, "function-enter"), 0);
	free(r);
	assert_int_equal(files_with(".xray"), 4);
	ts_dir_remove();
	ts_dir_make();
}

/*
 * A flush writes "<name>.part" and renames it: no ".part" stays, and a name whose ".part"
 * exists (a flush that died in it, maybe of an earlier process with this pid) is skipped,
 * its part left alone.
 */
static void flush_writes_part_then_renames(void **state)
{
	char first[512], planted[600], second[512], expect[512];
	struct stat st;
	unsigned n;
	int fd;

	(void)state;
	init_flushing_at_exit();
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(PARENT_OPEN_FID);
	xfdr_exit(PARENT_OPEN_FID);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(first, sizeof(first)), 0);
	assert_int_equal(files_with(".part"), 0);
	n = (unsigned)strtoul(strrchr(first, '-') + 1, NULL, 10);
	names_for(getpid(), n + 1);
	snprintf(planted, sizeof(planted), "%s.part", trace_path);
	fd = open(planted, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(xfdr_flush(second, sizeof(second)), 0);
	names_for(getpid(), n + 2);
	snprintf(expect, sizeof(expect), "%s", trace_path);
	assert_string_equal(second, expect);
	xfdr_trace_close(ts_open_verified(second));
	assert_int_equal(stat(planted, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(files_with(".part"), 1);
	ts_dir_remove();
	ts_dir_make();
}

/* ---- endings in a child started with XFDR_OPTIONS (start=1: the exit flush writes) ------- */

static pthread_barrier_t exit_barrier;

static void *exit_from_thread(void *arg)
{
	(void)arg;
	xfdr_enter(EXIT_FID);
	xfdr_exit(EXIT_FID);
	pthread_barrier_wait(&exit_barrier);
	exit(0);
}

/* Records until the process ends under it. */
static void *record_for_ever(void *arg)
{
	(void)arg;
	xfdr_enter(EXIT_FID);
	xfdr_exit(EXIT_FID);
	pthread_barrier_wait(&exit_barrier);
	for (;;) {
		xfdr_enter(EXIT_FID + 1);
		xfdr_exit(EXIT_FID + 1);
	}
	return NULL;
}

static int child_main(const char *how)
{
	pthread_t th;

	xfdr_enter(EXIT_FID);
	xfdr_exit(EXIT_FID);
	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		return 2;
	}
	pthread_barrier_init(&exit_barrier, NULL, 2);
	if (!strcmp(how, "return")) {
		/* main returns while another thread records: exit() runs in the main thread */
		pthread_create(&th, NULL, record_for_ever, NULL);
		pthread_barrier_wait(&exit_barrier);
		return 0;
	}
	/* "thread": exit() from another thread, while the main thread waits in pause() */
	pthread_create(&th, NULL, exit_from_thread, NULL);
	pthread_barrier_wait(&exit_barrier);
	for (;;)
		pause();
}

/*
 * Run this binary as "--child how" with start=1 (bounded: the thread that records until the end
 * must not overwrite its first events); returns the child's pid and stderr.
 */
static pid_t run_ending(const char *how, const char *more_options, struct child_result *r)
{
	char *argv[] = {"test_runtime_endings", "--child", (char *)how, NULL};
	char env_options[400];
	char *env[] = {env_options, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .program = "/proc/self/exe",
	    .env_add = env,
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = 60,
	};

	snprintf(env_options, sizeof(env_options),
		 "XFDR_OPTIONS=start=1 output=%s buffer_size=4096 buffer_max=8 mode=bounded %s",
		 ts_dir, more_options);
	child_run(&spec, r);
	assert_int_equal(r->signal, 0);
	assert_int_equal(r->status, 0);
	return r->pid;
}

static void exit_endings(void **state)
{
	static const char *const flushed[] = {"thread", "return"};
	static const char *const lost[] = {"_exit", "exec"};
	struct child_result r;
	struct ts_yrec *rec;
	char pid_part[32];
	size_t n, i;
	pid_t pid;

	(void)state;
	for (i = 0; i < 2; i++) {
		pid = run_ending(flushed[i], "", &r);
		names_for(pid, 0);
		n = llvm_records(&rec);
		assert_int_equal(count_fid(rec, n, EXIT_FID, "function-enter"), 2);
		free(rec);
		/* Flushed once: one "wrote" line, one trace and one .map of this pid. */
		assert_int_equal(ts_count(r.err, "wrote "), 1);
		snprintf(pid_part, sizeof(pid_part), "-%d-", (int)pid);
		assert_int_equal(files_with(pid_part), 2);
		child_result_free(&r);
	}
	for (i = 0; i < 2; i++) {
		pid = run_ending(lost[i], "", &r);
		snprintf(pid_part, sizeof(pid_part), "-%d-", (int)pid);
		assert_int_equal(files_with(pid_part), 0);
		assert_int_equal(ts_count(r.err, "wrote "), 0);
		child_result_free(&r);
	}
}

/*
 * backing=file: a clean exit writes the trace and removes the live files, which only matter
 * when the process dies unflushed; after _exit() they stay, and `xfdr recover` reads them.
 */
static void exit_with_file_backing(void **state)
{
	struct child_result r;
	struct ts_yrec *rec;
	char live[520];
	size_t n;
	pid_t pid;

	(void)state;
	pid = run_ending("thread", "backing=file", &r);
	child_result_free(&r);
	names_for(pid, 0);
	n = llvm_records(&rec);
	assert_int_equal(count_fid(rec, n, EXIT_FID, "function-enter"), 2);
	free(rec);
	snprintf(live, sizeof(live), "-%d-live", (int)pid);
	assert_int_equal(files_with(live), 0);

	pid = run_ending("_exit", "backing=file", &r);
	child_result_free(&r);
	snprintf(live, sizeof(live), "-%d-live.xray", (int)pid);
	assert_int_equal(files_with(live), 3); /* .xray, .xray.pool, .xray.map */
	snprintf(live, sizeof(live), "-%d-0.xray", (int)pid);
	assert_int_equal(files_with(live), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(fork_in_threaded_parent),
	    cmocka_unit_test(fork_after_start_stop_cycles),
	    cmocka_unit_test(flush_writes_part_then_renames),
	    cmocka_unit_test(exit_endings),
	    cmocka_unit_test(exit_with_file_backing),
	};

	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child_main(argv[2]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
