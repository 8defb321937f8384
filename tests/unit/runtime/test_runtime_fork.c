/*
 * tests/unit/runtime/test_runtime_fork.c - a fork child never writes what its parent's files hold,
 * whatever runs first in it, and a child that records nothing costs no files.
 *
 * The program's own pthread_atfork() child handler is registered before the first
 * xfdr_init(), so it runs before xfdr's, as in a program that sets its handlers up early; and
 * _Fork() runs no handler at all. Both record at once in the child, with backing=file, where
 * the parent's buffers are a shared mapping of its live trace.
 */
#include <dirent.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "runtime/pool/pool.h"
#include "runtime/record/session.h"
#include "tests/support/runtime_test.h"

/* A child's 600 calls fill more than the buffer the parent was writing (4 KiB: 506 records). */
enum { FID_PARENT = 11, FID_CHILD = 12, PARENT_CALLS = 40, CHILD_CALLS = 600, CHILDREN = 8 };

static int child_records_at_fork; /* the program's atfork child handler records when set */

static void record_calls(uint32_t fid, int calls)
{
	int i;

	for (i = 0; i < calls; i++) {
		xfdr_enter(fid);
		xfdr_exit(fid);
	}
}

static void program_atfork_child(void)
{
	if (child_records_at_fork)
		record_calls(FID_CHILD, CHILD_CALLS);
}

static void init_backing_file(void)
{
	struct xfdr_options o;

	ts_options(&o, 4096, 8, XFDR_MODE_BOUNDED);
	o.backing = XFDR_BACKING_FILE;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
}

static void wait_exit0(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail_msg("child %d ended with status 0x%x", (int)pid, st);
}

struct fid_count {
	unsigned parent, child; /* calls of either, in every thread */
};

static int count_fids(const struct xfdr_event *ev, void *arg)
{
	struct fid_count *c = arg;

	if (ev->type != XFDR_EVENT_FUNCTION)
		return 0;
	c->parent += ev->function_id == FID_PARENT;
	c->child += ev->function_id == FID_CHILD;
	return 0;
}

/* The parent's trace holds its own calls, all of them, and none of the child's. */
static void expect_parent_trace_only(int parent_calls)
{
	struct fid_count c = {0};
	char path[512];

	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	ts_tools_accept(path);
	ts_each_event(path, XFDR_ORDER_THREAD, count_fids, &c);
	assert_int_equal(c.child, 0);
	assert_int_equal(c.parent, 2 * parent_calls);
}

/*
 * A program's atfork child handler, registered before xfdr_init(), records in the child before
 * xfdr's handler runs. Before, its records went into the parent's shared buffer.
 */
static void atfork_handler_first_cannot_write_parent(void **state)
{
	pid_t pid;

	(void)state;
	assert_int_equal(rt_fork_wipes, 0); /* no init yet in this process */
	init_backing_file();
	assert_int_equal(rt_fork_wipes, 1);
	record_calls(FID_PARENT, PARENT_CALLS);
	child_records_at_fork = 1;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	child_records_at_fork = 0;
	wait_exit0(pid);
	expect_parent_trace_only(PARENT_CALLS);
}

/* _Fork() runs no atfork handler: the child's first records come straight from the hooks. */
static void plain_fork_syscall_cannot_write_parent(void **state)
{
	pid_t pid;

	(void)state;
	init_backing_file();
	record_calls(FID_PARENT, PARENT_CALLS);
	pid = _Fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		record_calls(FID_CHILD, CHILD_CALLS);
		_exit(session_recording() == SESSION_OFF ? 2 : 0);
	}
	wait_exit0(pid);
	expect_parent_trace_only(PARENT_CALLS);
}

/* Names in ts_dir with "-PID-" in them (the runtime names every file after its pid). */
static int files_of(pid_t pid)
{
	char tag[32];
	struct dirent *e;
	DIR *d = opendir(ts_dir);
	int n = 0;

	assert_non_null(d);
	snprintf(tag, sizeof(tag), "-%d-", (int)pid);
	while ((e = readdir(d)))
		n += strstr(e->d_name, tag) != NULL;
	closedir(d);
	return n;
}

/*
 * Children that exit or exec without recording leave no file, with backing=file too (before,
 * each made live files of its own at fork, and one that called exit() flushed a trace).
 */
static void silent_children_leave_no_files(void **state)
{
	char *const argv[] = {"true", NULL};
	pid_t pid, children[2 * CHILDREN];
	int i;

	(void)state;
	init_backing_file();
	record_calls(FID_PARENT, PARENT_CALLS);
	for (i = 0; i < CHILDREN; i++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			if (i % 2)
				_exit(0);
			exit(0); /* the exit handlers run, xfdr's flush among them */
		}
		wait_exit0(pid);
		children[2 * i] = pid;
		assert_int_equal(posix_spawnp(&pid, "true", NULL, NULL, argv, environ), 0);
		wait_exit0(pid);
		children[2 * i + 1] = pid;
	}
	for (i = 0; i < 2 * CHILDREN; i++)
		if (files_of(children[i]))
			fail_msg("child %d left %d files", (int)children[i], files_of(children[i]));
	record_calls(FID_PARENT, PARENT_CALLS);
	expect_parent_trace_only(2 * PARENT_CALLS);
}

/* A child of a stopped parent adopts nothing until it starts recording itself. */
static void child_starts_after_parent_stopped(void **state)
{
	struct fid_count c = {0};
	char path[512];
	pid_t pid;
	int st;

	(void)state;
	init_backing_file();
	record_calls(FID_PARENT, PARENT_CALLS);
	assert_int_equal(xfdr_stop(), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		record_calls(FID_PARENT, 1); /* not recording: nothing set up */
		if (session_recording() != SESSION_OFF || xfdr_start())
			_exit(2);
		record_calls(FID_CHILD, CHILD_CALLS);
		_exit(xfdr_stop() || xfdr_flush(path, sizeof(path)) ? 3 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* The child's trace is named after its pid, in the parent's output directory. */
	snprintf(path, sizeof(path), "%sxfdr-test_runtime_fork-%d-0.xray", ts_dir, (int)pid);
	ts_tools_accept(path);
	ts_each_event(path, XFDR_ORDER_THREAD, count_fids, &c);
	assert_int_equal(c.child, 2 * CHILD_CALLS);
	assert_int_equal(c.parent, 0);
}

static void *child_thread(void *arg)
{
	(void)arg;
	record_calls(FID_CHILD, CHILD_CALLS);
	return NULL;
}

struct per_thread {
	uint16_t ids[4];
	unsigned n, parent[4], child[4];
};

static int count_per_thread(const struct xfdr_event *ev, void *arg)
{
	struct per_thread *p = arg;
	unsigned i;

	if (ev->type != XFDR_EVENT_FUNCTION)
		return 0;
	for (i = 0; i < p->n && p->ids[i] != ev->thread_id; i++)
		;
	if (i == p->n) {
		assert_true(p->n < 4);
		p->ids[p->n++] = ev->thread_id;
	}
	p->parent[i] += ev->function_id == FID_PARENT;
	p->child[i] += ev->function_id == FID_CHILD;
	return 0;
}

/*
 * In the child made by make_child(), the first event comes from a thread the child made, while
 * the thread that forked (inside a call) records only after: each keeps a slot of its own, and
 * the forking thread's open call ends in the child's trace under the child's pid.
 */
static void child_thread_records_first(pid_t (*make_child)(void))
{
	struct per_thread p = {0};
	char path[512], map_path[600], *map, want[64];
	pthread_t th;
	size_t n;
	pid_t pid;

	xfdr_enter(FID_PARENT);
	pid = make_child();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (pthread_create(&th, NULL, child_thread, NULL) || pthread_join(th, NULL))
			_exit(2);
		record_calls(FID_CHILD, 1);
		xfdr_exit(FID_PARENT);
		_exit(xfdr_stop() || xfdr_flush(NULL, 0) ? 3 : 0);
	}
	wait_exit0(pid);
	xfdr_exit(FID_PARENT);
	snprintf(path, sizeof(path), "%sxfdr-test_runtime_fork-%d-0.xray", ts_dir, (int)pid);
	ts_tools_accept(path);
	ts_each_event(path, XFDR_ORDER_THREAD, count_per_thread, &p);
	assert_int_equal(p.n, 2);
	/* The thread made in the child: its calls alone. The forking one: its own, and the exit. */
	assert_int_equal(p.child[0] + p.child[1], 2 * CHILD_CALLS + 2);
	assert_true((p.parent[0] == 1 && p.parent[1] == 0 && p.child[0] == 2) ||
		    (p.parent[1] == 1 && p.parent[0] == 0 && p.child[1] == 2));
	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &n);
	snprintf(want, sizeof(want), "\nthread\t%d\t", (int)pid);
	if (!strstr(map, want))
		fail_msg("the forking thread is not listed under the child's pid %d:\n%s", (int)pid,
			 map);
	free(map);
}

static void child_thread_adopts_first(void **state)
{
	(void)state;
	init_backing_file();
	child_thread_records_first(fork);
	expect_parent_trace_only(1);
}

/* The map of trace path holds "pid\tPID\nppid\tPPID\n"; fails showing it otherwise. */
static void expect_process_lines(const char *path, pid_t pid, pid_t ppid)
{
	char map_path[600], want[64], *map;
	size_t n;

	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &n);
	snprintf(want, sizeof(want), "\npid\t%d\nppid\t%d\n", (int)pid, (int)ppid);
	if (!strstr(map, want))
		fail_msg("%s does not say pid %d, ppid %d:\n%s", map_path, (int)pid, (int)ppid,
			 map);
	free(map);
}

/*
 * Each .map names the process that started its process (`ppid`): the test's parent for the
 * test, the test for its child, the child for a grandchild that records only once the child
 * has exited and the grandchild has been handed to a reaper (this test, made a subreaper so
 * that it can wait for it): getppid() there names the reaper.
 */
static void ppid_names_the_forking_process(void **state)
{
	char path[512];
	pid_t child, grandchild;
	int gate[2], info[2];

	(void)state;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	init_backing_file();
	record_calls(FID_PARENT, 1);
	assert_int_equal(pipe(gate), 0);
	assert_int_equal(pipe(info), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pid_t me = getpid();

		record_calls(FID_CHILD, 1);
		grandchild = fork();
		if (grandchild == 0) {
			char c;

			/* The gate closes when the child has exited; then wait to be reparented. */
			close(gate[1]);
			if (read(gate[0], &c, 1) != 0)
				_exit(4);
			while (getppid() == me)
				usleep(1000);
			record_calls(FID_CHILD, 1);
			_exit(xfdr_stop() || xfdr_flush(NULL, 0) ? 3 : 0);
		}
		if (grandchild < 0 ||
		    write(info[1], &grandchild, sizeof(grandchild)) != sizeof(grandchild))
			_exit(2);
		_exit(xfdr_stop() || xfdr_flush(NULL, 0) ? 3 : 0);
	}
	close(gate[1]);
	close(info[1]);
	assert_int_equal(read(info[0], &grandchild, sizeof(grandchild)), sizeof(grandchild));
	wait_exit0(child);
	wait_exit0(grandchild);
	close(gate[0]);
	close(info[0]);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
	snprintf(path, sizeof(path), "%sxfdr-test_runtime_fork-%d-0.xray", ts_dir, (int)child);
	expect_process_lines(path, child, getpid());
	snprintf(path, sizeof(path), "%sxfdr-test_runtime_fork-%d-0.xray", ts_dir, (int)grandchild);
	expect_process_lines(path, grandchild, child);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	expect_process_lines(path, getpid(), getppid());
}

/* A thread that records, forks a child that exits, and stays (its slot taken) until released. */
static void *forks_then_waits(void *arg)
{
	pthread_barrier_t *b = arg;
	pid_t pid;

	record_calls(FID_PARENT, 1);
	pid = fork();
	if (pid == 0)
		_exit(0);
	wait_exit0(pid);
	pthread_barrier_wait(b); /* forked */
	pthread_barrier_wait(b); /* released */
	return NULL;
}

/*
 * _Fork() after another thread's fork(): the child must not take that thread's slot for its
 * forking thread's (thread_fork.h). It did once fork()'s parent handler stopped forgetting it
 * (a write after fork(): a page fault): the slot of the thread that _Fork()ed was freed and
 * given to the child's new thread, and the two threads' records went into one buffer.
 */
static void plain_fork_after_another_threads_fork(void **state)
{
	pthread_barrier_t b;
	pthread_t other;

	(void)state;
	init_backing_file();
	record_calls(FID_PARENT, 1); /* this thread takes the first slot */
	assert_int_equal(pthread_barrier_init(&b, NULL, 2), 0);
	assert_int_equal(pthread_create(&other, NULL, forks_then_waits, &b), 0);
	pthread_barrier_wait(&b);
	child_thread_records_first(_Fork);
	pthread_barrier_wait(&b);
	assert_int_equal(pthread_join(other, NULL), 0);
	pthread_barrier_destroy(&b);
	expect_parent_trace_only(3);
}

static int group_setup(void **state)
{
	/* Before any xfdr_init() of this process: the program's handler runs first in children. */
	assert_int_equal(pthread_atfork(NULL, NULL, program_atfork_child), 0);
	return ts_group_setup(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(atfork_handler_first_cannot_write_parent),
	    cmocka_unit_test(plain_fork_syscall_cannot_write_parent),
	    cmocka_unit_test(silent_children_leave_no_files),
	    cmocka_unit_test(child_starts_after_parent_stopped),
	    cmocka_unit_test(child_thread_adopts_first),
	    cmocka_unit_test(plain_fork_after_another_threads_fork),
	    cmocka_unit_test(ppid_names_the_forking_process),
	};

	return cmocka_run_group_tests(tests, group_setup, ts_group_teardown);
}
