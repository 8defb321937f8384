/*
 * tests/system/test_cli_memory.c - every verb reads a large trace in memory that does not grow
 * with it.
 *
 * Two traces are recorded by the runtime, each in a child of this process (so that this
 * process, whose peak a spawned child inherits, stays small):
 *   - nested: about 48 MiB, three threads of nested calls in 4 MiB buffers, interleaved in the
 *     file. Before the merge, `xfdr convert` of such a file held every record twice (about 8
 *     times the file); `dump` held all of it; the walks kept the page a buffer shares with the
 *     next one, and with it the large folio the kernel maps around that page (2 MiB of another
 *     thread's buffer each);
 *   - two threads' buffers in turn, 4 MiB and 64 KiB (test_memory_does_not_keep_the_next_buffer);
 *   - many stacks: one thread whose 1.5 million calls walk at random among 32 functions up to
 *     10 deep, so that nearly every call has a stack of its own. Before the stack tree kept its
 *     runs on disk, `stack`, `flame` and pprof held every distinct stack (over 100 MiB).
 * Each verb then runs as a child, its output thrown away, and its peak resident set (wait4()'s
 * ru_maxrss, which counts the pages of the mapped trace it still holds as well as its heap)
 * must stay under a bound far below the file's size; `account`'s is its 8 bytes per call, what
 * exact percentiles need.
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
#include "tests/support/trace_build.h"
#include "xfdr/xfdr.h"

extern char **environ;

#define THREADS 3
#define CALLS_PER_THREAD 1000000u /* two 8-byte events each: 48 MB of records in all */
#define RANDOM_CALLS 1500000u
#define RANDOM_FUNCTIONS 32u
#define RANDOM_DEPTH 10u
#define MIB (1024u * 1024u)

#define ALTERNATING_BYTES (128u * MIB) /* two threads' buffers in turn */

static char trace_path[512], stacks_path[512], alternating_path[2][512];

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

/* A walk at random: deeper two times in three (always at depth 0), back up otherwise. */
static void random_stacks(void)
{
	uint32_t open[RANDOM_DEPTH], seed = 12345, depth = 0, calls = 0;

	while (calls < RANDOM_CALLS) {
		uint32_t r;

		seed = seed * 1103515245u + 12345u;
		r = seed >> 16;
		if (depth < RANDOM_DEPTH && (!depth || r % 3)) {
			open[depth] = 1 + r / 3 % RANDOM_FUNCTIONS;
			XFDR_ENTER(open[depth]);
			depth++;
			calls++;
		} else {
			depth--;
			XFDR_EXIT(open[depth]);
		}
	}
	while (depth--)
		XFDR_EXIT(open[depth]);
}

/*
 * In a child: the test's own peak must stay small, since a spawned child starts from it. Records
 * the nested threads, or the random stacks, into the scratch file name.
 */
static int record_in_child(int stacks, const char *name)
{
	struct xfdr_options o;
	pthread_t t[THREADS];
	char path[512];
	int i;

	xfdr_options_default(&o);
	o.buffer_size = 4 * MIB;
	o.buffer_max = 20; /* 80 MiB: every event of the run fits */
	o.output = scratch_path("big");
	o.start = 1;
	if (xfdr_init(&o))
		return 1;
	if (stacks) {
		random_stacks();
	} else {
		for (i = 0; i < THREADS; i++)
			if (pthread_create(&t[i], NULL, record_thread, NULL))
				return 1;
		for (i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
	}
	xfdr_stop();
	if (xfdr_flush(path, sizeof(path)) < 0)
		return 1;
	/* The parent learns the name through the file system. */
	return rename(path, scratch_path(name)) ? 1 : 0;
}

/*
 * Two threads' buffers of buf_bytes in turn, ALTERNATING_BYTES in all, each full to its last
 * byte: its EndOfBuffer ends 32 bytes into the next buffer's first page (the file header
 * shifts every buffer by 32).
 */
static int build_alternating_in_child(size_t buf_bytes, const char *name)
{
	struct tb b;
	uint32_t i, k;

	tb_init(&b, buf_bytes, 1000000000ull);
	for (i = 0; i < ALTERNATING_BYTES / buf_bytes; i++) {
		tb_buffer(&b, (uint16_t)(1 + i % 2), 1, 1000000ull * i);
		for (k = 0; b.buf_bytes - b.used >= XFDR_FN_RECORD_BYTES + XFDR_MD_RECORD_BYTES;
		     k++)
			tb_fn(&b, k % 2 ? EXIT : ENTER, 1 + k / 2 % 8, 1);
	}
	tb_write(&b, name);
	return 0;
}

/* stacks: 0 the nested threads, 1 the random stacks, 2 and 3 4 MiB and 64 KiB buffers in turn. */
static int record_one(int stacks, const char *name)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(stacks >= 2 ? build_alternating_in_child(stacks == 2 ? 4 * MIB : 65536, name)
				  : record_in_child(stacks, name));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return 0;
}

static int record_traces(void **state)
{
	if (scratch_setup(state))
		return -1;
	snprintf(trace_path, sizeof(trace_path), "%s", scratch_path("big.xray"));
	snprintf(stacks_path, sizeof(stacks_path), "%s", scratch_path("stacks.xray"));
	snprintf(alternating_path[0], sizeof(alternating_path[0]), "%s",
		 scratch_path("alternating.xray"));
	snprintf(alternating_path[1], sizeof(alternating_path[1]), "%s",
		 scratch_path("alternating64k.xray"));
	if (getenv("XFDR_SANITIZED"))
		return 0;
	return record_one(0, "big.xray") || record_one(1, "stacks.xray") ||
		       record_one(2, "alternating.xray") || record_one(3, "alternating64k.xray")
		   ? -1
		   : 0;
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

static void check(const char *trace, uint64_t rss, uint64_t bound, const char *what)
{
	struct stat st;

	assert_int_equal(stat(trace, &st), 0);
	print_message("%-34s %5.1f MiB peak for a %.1f MiB trace\n", what, (double)rss / MIB,
		      (double)st.st_size / MIB);
	if (rss > bound)
		fail_msg("%s: peak RSS %.1f MiB, over the bound of %.1f MiB", what,
			 (double)rss / MIB, (double)bound / MIB);
}

static void test_memory_does_not_grow_with_the_trace(void **state)
{
	const char *t = trace_path;
	struct stat st;

	(void)state;
	if (getenv("XFDR_SANITIZED"))
		skip();
	assert_int_equal(stat(t, &st), 0);
	assert_true(st.st_size > 40 * (off_t)MIB);
	check(t, peak_rss("verify", t, NULL), 16 * MIB, "verify");
	check(t, peak_rss("dump", "--no-map", t, NULL), 16 * MIB, "dump");
	/* Sorted: the merge reads every thread's buffer at once (4 MiB each). */
	check(t, peak_rss("convert", "--no-map", t, NULL), 24 * MIB, "convert (yaml, sorted)");
	check(t, peak_rss("convert", "--sort=false", t, NULL), 16 * MIB,
	      "convert (yaml, --sort=false)");
	check(t, peak_rss("convert", "--output-format=trace_event", t, NULL), 16 * MIB,
	      "convert (trace_event)");
	check(t, peak_rss("convert", "--output-format=perfetto", t, NULL), 16 * MIB,
	      "convert (perfetto)");
	check(t, peak_rss("convert", "--output-format=pprof", t, NULL), 16 * MIB,
	      "convert (pprof)");
	check(t, peak_rss("stack", t, NULL), 16 * MIB, "stack");
	check(t, peak_rss("flame", t, NULL), 16 * MIB, "flame");
	/* Exact percentiles: one 8-byte latency per call (THREADS x CALLS_PER_THREAD). */
	check(t, peak_rss("account", t, NULL), 16 * MIB + 8ull * THREADS * CALLS_PER_THREAD,
	      "account");
	check(t, peak_rss("funcs", t, NULL), 16 * MIB + 8ull * THREADS * CALLS_PER_THREAD, "funcs");
}

/* The distinct stacks of the random walk: the folded lines of `xfdr stack --value=total`. */
static uint64_t distinct_stacks(void)
{
	const char *out = scratch_path("stacks.folded");
	char line[4096];
	uint64_t n = 0;
	FILE *f;

	assert_int_equal(peak_rss("stack", "--value=total", "-o", out, stacks_path, NULL) > 0, 1);
	f = fopen(out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	unlink(out);
	return n;
}

static void test_memory_does_not_grow_with_the_stacks(void **state)
{
	const char *t = stacks_path;
	uint64_t n;

	(void)state;
	if (getenv("XFDR_SANITIZED"))
		skip();
	/* Most calls have a stack of their own: the tree in memory would be over 100 MiB. */
	n = distinct_stacks();
	print_message("%llu distinct stacks\n", (unsigned long long)n);
	assert_true(n > RANDOM_CALLS * 3 / 4);
	check(t, peak_rss("stack", t, NULL), 40 * MIB, "stack (many stacks)");
	check(t, peak_rss("flame", t, NULL), 40 * MIB, "flame (many stacks)");
	check(t, peak_rss("convert", "--output-format=pprof", t, NULL), 40 * MIB,
	      "convert (pprof, many stacks)");
	/* Two such trees side by side, nothing of either held but the stack compared. */
	check(t, peak_rss("stack", "--diff", t, t, NULL), 64 * MIB, "stack --diff (many stacks)");
	check(t, peak_rss("flame", "--diff", t, t, NULL), 64 * MIB, "flame --diff (many stacks)");
}

/*
 * A walk gives back each buffer it has read and the pages around it that the kernel mapped
 * with it: reading a page maps the large folio it is in (readahead fills the page cache with
 * folios of up to 2 MiB on ext4) or its fault-around window, which hold the neighbouring
 * buffers, another thread's in a walk by thread. With 4 MiB buffers, keeping the page a buffer
 * shares with the next kept that folio (31 MiB before); with 64 KiB buffers, giving back only
 * the buffer's own pages kept the neighbours' (25.6 MiB before the 2 MiB regions).
 * The bound: about 12 MiB of the verb's own, and Perfetto's conversion and the stack tree walk
 * two threads at once, each in a folio while readahead may have mapped its next (2 x 2 x 2 MiB;
 * 14 MiB is usual, 16.1 was seen under load).
 */
#define IN_TURN_BOUND (20 * MIB)
static void test_memory_does_not_keep_the_next_buffer(void **state)
{
	static const char *const what[2][3] = {
	    {"convert (perfetto, 4 MiB in turn)", "convert (trace_event, 4 MiB in turn)",
	     "stack (4 MiB in turn)"},
	    {"convert (perfetto, 64 KiB in turn)", "convert (trace_event, 64 KiB in turn)",
	     "stack (64 KiB in turn)"},
	};
	unsigned i;
	int fd;

	(void)state;
	if (getenv("XFDR_SANITIZED"))
		skip();
	for (i = 0; i < 2; i++) {
		const char *t = alternating_path[i];

		/* Out of the page cache: the verbs read it back the way a large trace is read. */
		fd = open(t, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		close(fd);
		check(t, peak_rss("convert", "--output-format=perfetto", t, NULL), IN_TURN_BOUND,
		      what[i][0]);
		check(t, peak_rss("convert", "--output-format=trace_event", t, NULL), IN_TURN_BOUND,
		      what[i][1]);
		check(t, peak_rss("stack", t, NULL), IN_TURN_BOUND, what[i][2]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_memory_does_not_grow_with_the_trace),
	    cmocka_unit_test(test_memory_does_not_grow_with_the_stacks),
	    cmocka_unit_test(test_memory_does_not_keep_the_next_buffer),
	};

	return cmocka_run_group_tests(tests, record_traces, scratch_teardown);
}
