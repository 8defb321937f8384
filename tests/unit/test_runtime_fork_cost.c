/*
 * tests/unit/test_runtime_fork_cost.c - in a program with one thread, a fork child that records
 * nothing costs no more with xfdr recording than without it.
 *
 * What a fork costs beyond the kernel's copy of the page tables is page faults: after fork()
 * every page either process writes first is copied (or at least faulted writable again), and
 * each costs microseconds on the target VMs, where the fork itself costs about a hundred. So
 * the test counts them (getrusage() minor faults: the parent's own, and its children's) over
 * the same rounds of fork() + _exit() before xfdr_init() and with xfdr recording, in a process
 * whose only thread is the test's. Counts, not times: the same code faults the same pages.
 *
 * xfdr used to start a thread to populate the pool (and glibc's fork() then takes its
 * multi-threaded path: malloc's and stdio's locks, about 12 more faults), and its fork handlers
 * wrote to half a dozen pages of ours: about 20 faults a round in all.
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "test_runtime_support.h"

enum { WARM_ROUNDS = 4, ROUNDS = 40, FID = 7 };

static long minflt(int who)
{
	struct rusage ru;

	assert_int_equal(getrusage(who, &ru), 0);
	return ru.ru_minflt;
}

/* Minor faults of the parent and its children over ROUNDS rounds of fork() + _exit(0). */
static long faults_of_rounds(void)
{
	long self0 = 0, kids0 = 0;
	int i, st;

	for (i = 0; i < WARM_ROUNDS + ROUNDS; i++) {
		pid_t pid;

		if (i == WARM_ROUNDS) {
			self0 = minflt(RUSAGE_SELF);
			kids0 = minflt(RUSAGE_CHILDREN);
		}
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return minflt(RUSAGE_SELF) - self0 + minflt(RUSAGE_CHILDREN) - kids0;
}

static int task_count(void)
{
	return ts_dir_entries("/proc/self/task");
}

static void silent_child_faults_no_page_of_ours(void **state)
{
	struct xfdr_options o;
	long without, with;

	(void)state;
	if (ts_sanitized())
		skip(); /* the sanitizers' own fork handlers and shadow memory fault pages too */
	assert_int_equal(task_count(), 1);
	without = faults_of_rounds();
	xfdr_options_default(&o); /* the default pool: what a program gets */
	o.output = ts_dir;
	o.flush_at_exit = 0;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(FID); /* the parent records: it holds a buffer, a slot, a signal stack */
	xfdr_exit(FID);
	/* The default pool is populated by xfdr_init() itself: the program keeps its one thread. */
	assert_int_equal(task_count(), 1);
	with = faults_of_rounds();
	print_message("minor faults over %d rounds: %ld without xfdr, %ld recording\n", ROUNDS,
		      without, with);
	/*
	 * One fault a round is the child mapping in the code page of xfdr's atfork handler (code
	 * is not copied at fork, it faults in from the page cache); no page of our data is copied
	 * (about 20 faults a round before).
	 */
	assert_true(with <= without + ROUNDS + ROUNDS / 4);
	xfdr_stop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(silent_child_faults_no_page_of_ours),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
