/*
 * tests/system/test_cli_memory.c - every verb reads a large trace in memory that does not grow
 * with it.
 *
 * The trace (about 48 MiB, three threads of nested calls) is recorded by the runtime in a
 * child of this process (so that this process, whose peak a spawned child inherits, stays
 * small). Each verb then runs as a child, its output thrown away, and its peak resident set
 * (wait4()'s ru_maxrss, which counts the pages of the mapped trace it still holds as well as
 * its heap) must stay under a bound far below the file's size; `account`'s is its 8 bytes per
 * call, what exact percentiles need. Before the merge, `xfdr convert` of such a file held every
 * record twice (about 8 times the file).
 *
 * Not run under sanitizers: their shadow memory is what such a bound would measure.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/scratch.h"
#include "xfdr/xfdr.h"

extern char **environ;

#define THREADS 3
#define CALLS_PER_THREAD 1000000u /* two 8-byte events each: 48 MB of records in all */
#define MIB (1024u * 1024u)

static char trace_path[512];

static void nest(uint32_t id, unsigned depth)
{
	XFDR_ENTER(id);
	if (depth)
		nest(id + 1, depth - 1);
	XFDR_EXIT(id);
}

static void *record_thread(void *arg)
{
	unsigned i;

	(void)arg;
	for (i = 0; i < CALLS_PER_THREAD / 8; i++)
		nest(1 + i % 16, 7);
	return NULL;
}

/* In a child: the test's own peak must stay small, since a spawned child starts from it. */
static int record_in_child(void)
{
	struct xfdr_options o;
	pthread_t t[THREADS];
	int i;

	xfdr_options_default(&o);
	o.buffer_size = 65536;
	o.buffer_max = 1024; /* 64 MiB: every event of the run fits */
	o.output = scratch_path("big");
	o.start = 1;
	if (xfdr_init(&o))
		return 1;
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, record_thread, NULL))
			return 1;
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	xfdr_stop();
	if (xfdr_flush(trace_path, sizeof(trace_path)) < 0)
		return 1;
	/* The parent learns the name through the file system. */
	return rename(trace_path, scratch_path("big.xray")) ? 1 : 0;
}

static int record_trace(void **state)
{
	pid_t pid;
	int status;

	if (scratch_setup(state))
		return -1;
	snprintf(trace_path, sizeof(trace_path), "%s", scratch_path("big.xray"));
	if (getenv("XFDR_SANITIZED"))
		return 0;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(record_in_child());
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return 0;
}

/* Run xfdr with the arguments, output to /dev/null; returns its peak RSS in bytes. */
static uint64_t peak_rss(const char *first, ...)
{
	const char *bin = getenv("XFDR_BIN");
	char *argv[16];
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	va_list ap;
	pid_t pid;
	int n = 0, status;

	assert_non_null(bin);
	argv[n++] = (char *)bin;
	argv[n++] = (char *)first;
	va_start(ap, first);
	while (n < 15 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0), 0);
	assert_int_equal(posix_spawn(&pid, bin, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("xfdr %s ... failed (status 0x%x)", first, status);
	return (uint64_t)ru.ru_maxrss * 1024u;
}

static void check(uint64_t rss, uint64_t bound, const char *what)
{
	struct stat st;

	assert_int_equal(stat(trace_path, &st), 0);
	print_message("%-34s %5.1f MiB peak for a %.1f MiB trace\n", what, (double)rss / MIB,
		      (double)st.st_size / MIB);
	if (rss > bound)
		fail_msg("%s: peak RSS %.1f MiB, over the bound of %.1f MiB", what,
			 (double)rss / MIB, (double)bound / MIB);
}

static void test_memory_does_not_grow_with_the_trace(void **state)
{
	struct stat st;

	(void)state;
	if (getenv("XFDR_SANITIZED"))
		skip();
	assert_int_equal(stat(trace_path, &st), 0);
	assert_true(st.st_size > 40 * (off_t)MIB);
	check(peak_rss("verify", trace_path, NULL), 16 * MIB, "verify");
	check(peak_rss("convert", "--no-map", trace_path, NULL), 24 * MIB,
	      "convert (yaml, sorted)");
	check(peak_rss("convert", "--sort=false", trace_path, NULL), 24 * MIB,
	      "convert (yaml, --sort=false)");
	check(peak_rss("convert", "--output-format=trace_event", trace_path, NULL), 24 * MIB,
	      "convert (trace_event)");
	check(peak_rss("stack", trace_path, NULL), 24 * MIB, "stack");
	check(peak_rss("flame", trace_path, NULL), 24 * MIB, "flame");
	/* Exact percentiles: one 8-byte latency per call (THREADS x CALLS_PER_THREAD). */
	check(peak_rss("account", trace_path, NULL), 16 * MIB + 8ull * THREADS * CALLS_PER_THREAD,
	      "account");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_memory_does_not_grow_with_the_trace),
	};

	return cmocka_run_group_tests(tests, record_trace, scratch_teardown);
}
