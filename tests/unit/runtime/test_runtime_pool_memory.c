/*
 * tests/unit/runtime/test_runtime_pool_memory.c - the pool's memory (runtime/pool/pool_memory.c): a
 * 2 MiB aligned buffer area, the first buffers populated by xfdr_init() itself, the rest by the
 * "xfdr-prefault" thread, and pool_memory_ready() populating a buffer nobody populated yet.
 *
 * "Populated" is checked two ways: mincore(2) reports every page resident, and writing every
 * page afterwards costs the writing thread no minor page fault (a page populated only for
 * reading, or not at all, would). A buffer is made "not yet populated" on purpose with
 * MADV_DONTNEED after the background is done, so no test depends on winning a race with it.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "tests/support/runtime_test.h"

#include "runtime/pool/pool.h"

#define MIB ((size_t)1 << 20)
#define HUGE_PAGE_BYTES (2 * MIB)

static size_t page_bytes(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* The pages that hold [p, p + n): first page and page count. */
static uint8_t *page_span(const uint8_t *p, size_t n, size_t *pages)
{
	uintptr_t pg = page_bytes();
	uintptr_t start = (uintptr_t)p & ~(pg - 1);
	uintptr_t end = ((uintptr_t)p + n + pg - 1) & ~(pg - 1);

	*pages = (end - start) / pg;
	return (uint8_t *)start;
}

/* How many pages of [p, p + n) mincore(2) does not report resident. */
static size_t pages_missing(const uint8_t *p, size_t n)
{
	size_t pages, i, missing = 0;
	uint8_t *start = page_span(p, n, &pages);
	unsigned char *vec = malloc(pages);

	assert_non_null(vec);
	assert_int_equal(mincore(start, pages * page_bytes(), vec), 0);
	for (i = 0; i < pages; i++)
		missing += !(vec[i] & 1);
	free(vec);
	return missing;
}

static long thread_minor_faults(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_minflt;
}

/*
 * Minor faults the calling thread takes writing one byte into every page of [p, p + n). The
 * byte written is the one already there, so a pool buffer keeps its contents. Not checked by
 * a sanitizer: its first look at the shadow of a page would be a fault of its own.
 */
__attribute__((no_sanitize("address", "thread"))) static long write_faults(uint8_t *p, size_t n)
{
	size_t pg = page_bytes(), pages, i;
	uint8_t *start = page_span(p, n, &pages);
	long before = thread_minor_faults();

	/* No call in the loop: a sanitizer's bookkeeping of calls may fault too. */
	for (i = 0; i < pages; i++) {
		volatile uint8_t *b = start + i * pg;

		*b = *b;
	}
	return thread_minor_faults() - before;
}

static uint32_t ready_count(void)
{
	uint32_t i, n = 0;

	for (i = 0; i < rt_pool.count; i++)
		/* pairs with the release of mem_ready in pool_memory.c */
		n += xfdr_load_acquire(&rt_pool.descs[i].mem_ready) != 0;
	return n;
}

/* Wait (at most timeout_ms) until every buffer of the pool is marked ready; 1 if it was. */
static int all_ready_within(unsigned timeout_ms)
{
	const struct timespec tick = {0, 1000000};
	unsigned waited;

	for (waited = 0; ready_count() != rt_pool.count; waited++) {
		if (waited == timeout_ms)
			return 0;
		nanosleep(&tick, NULL);
	}
	return 1;
}

static void wait_all_ready(unsigned timeout_ms)
{
	if (!all_ready_within(timeout_ms))
		fail_msg("%u of %u buffers ready after %u ms", ready_count(), rt_pool.count,
			 timeout_ms);
}

/* The kernel tid of this process's thread named name, or 0. */
static pid_t find_thread(const char *name)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	assert_non_null(dir);
	while (!tid && (e = readdir(dir))) {
		char path[300], comm[64] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* the thread just ended */
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
		    comm[strlen(name)] == '\n')
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(dir);
	return tid;
}

/* The SigBlk mask of thread tid (bit n-1 = signal n), or fails the test. */
static uint64_t thread_blocked(pid_t tid)
{
	char path[100], line[256];
	unsigned long long mask = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "SigBlk: %llx", &mask) == 1;
	fclose(f);
	assert_true(found);
	return mask;
}

static int thread_alive(pid_t tid)
{
	char path[100];

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	return access(path, F_OK) == 0;
}

/* The buffer area starts on a huge-page boundary; xfdr_init() populated the first buffers. */
static void area_aligned_first_buffers_ready(void **state)
{
	uint32_t i;

	(void)state;
	assert_int_equal(ts_init(64 * 1024, 256, 0), 0);
	assert_int_equal(rt_pool.count, 256);
	assert_non_null(rt_pool.base);
	assert_int_equal((uintptr_t)rt_pool.base % HUGE_PAGE_BYTES, 0);
	assert_true(rt_pool.map_bytes >= 256 * 64 * 1024);
	/* 4 MiB, the part pool_memory.c populates before returning: ready without waiting. */
	for (i = 0; i < 64; i++) {
		struct pool_desc *d = &rt_pool.descs[i];

		assert_int_equal(xfdr_load_acquire(&d->mem_ready), 1);
		assert_ptr_equal(d->data, rt_pool.base + (size_t)i * 64 * 1024);
	}
	assert_int_equal(pages_missing(rt_pool.base, 4 * MIB), 0);
}

/* The background marks every buffer, and every page is then written without a fault. */
static void background_populates_every_buffer(void **state)
{
	size_t bytes = (size_t)64 * 1024 * 512;

	(void)state;
	assert_int_equal(ts_init(64 * 1024, 512, 0), 0); /* another geometry: a new mapping */
	wait_all_ready(5000);
	assert_int_equal(pages_missing(rt_pool.base, bytes), 0);
	assert_int_equal(write_faults(rt_pool.base, bytes), 0);
}

/*
 * pool_memory_ready() on a buffer whose pages are gone and whose mem_ready is 0 (what a claim
 * ahead of the background thread finds) populates every page of it and marks it.
 */
static void check_ready_populates(size_t buffer_bytes, uint32_t count)
{
	uint32_t idx[3] = {0, count / 2 + 1, count - 1};
	unsigned i;

	assert_int_equal(ts_init(buffer_bytes, count, 0), 0);
	wait_all_ready(5000); /* from here on, only this test touches mem_ready */
	for (i = 0; i < 3; i++) {
		struct pool_desc *d = &rt_pool.descs[idx[i]];
		size_t pages;
		uint8_t *start = page_span(d->data, buffer_bytes, &pages);

		assert_int_equal(madvise(start, pages * page_bytes(), MADV_DONTNEED), 0);
		xfdr_store_release(&d->mem_ready, (uint32_t)0);
		assert_int_equal(pages_missing(d->data, buffer_bytes), pages); /* the premise */

		pool_memory_ready(d);
		assert_int_equal(xfdr_load_acquire(&d->mem_ready), 1);
		assert_int_equal(pages_missing(d->data, buffer_bytes), 0);
		assert_int_equal(write_faults(d->data, buffer_bytes), 0);
	}
}

static void ready_populates_a_buffer(void **state)
{
	(void)state;
	check_ready_populates(64 * 1024, 256);
}

/* Buffers that do not start on a page boundary: the range is rounded out to whole pages. */
static void ready_populates_an_unaligned_buffer(void **state)
{
	(void)state;
	check_ready_populates(6000, 2000);
}

/* pool_memory_ready() on a buffer already marked does nothing and keeps errno. */
static void ready_is_cheap_when_marked(void **state)
{
	struct pool_desc *d;

	(void)state;
	assert_int_equal(ts_init(64 * 1024, 256, 0), 0);
	d = &rt_pool.descs[0];
	assert_int_equal(xfdr_load_acquire(&d->mem_ready), 1);
	errno = 12345;
	pool_memory_ready(d);
	assert_int_equal(errno, 12345);
	assert_int_equal(xfdr_load_acquire(&d->mem_ready), 1);
}

/*
 * The thread is named, blocks the program's signals, and a re-init with another geometry
 * while it runs stops it before the old pool is unmapped (a thread still walking the old pool
 * would crash on its unmapped descriptors).
 */
static void prefault_thread_and_reinit(void **state)
{
	const uint64_t must_block[] = {SIGINT,	SIGTERM, SIGHUP,  SIGUSR1, SIGUSR2,
				       SIGALRM, SIGPROF, SIGCHLD, SIGPIPE, SIGSEGV};
	const struct timespec tick = {0, 1000000};
	uint64_t blocked;
	unsigned i;
	pid_t tid;

	(void)state;
	/* 1 GiB: populating takes far longer than the look at /proc right after init. */
	assert_int_equal(ts_init(MIB, 1024, 0), 0);
	tid = find_thread("xfdr-prefault");
	assert_true(tid > 0);
	assert_true(ready_count() < rt_pool.count);
	blocked = thread_blocked(tid);
	for (i = 0; i < sizeof(must_block) / sizeof(must_block[0]); i++)
		if (!(blocked & (1ull << (must_block[i] - 1))))
			fail_msg("signal %d is not blocked on xfdr-prefault (SigBlk %llx)",
				 (int)must_block[i], (unsigned long long)blocked);

	assert_int_equal(ts_init(64 * 1024, 1024, 0), 0);
	assert_int_equal(rt_pool.count, 1024);
	for (i = 0; i < 2000 && thread_alive(tid); i++)
		nanosleep(&tick, NULL);
	assert_false(thread_alive(tid));
	wait_all_ready(5000);
	assert_int_equal(pages_missing(rt_pool.base, (size_t)64 * 1024 * 1024), 0);

	/* Twice more while a thread runs: the same geometry keeps it, another one stops it. */
	assert_int_equal(ts_init(MIB, 512, 0), 0);
	assert_int_equal(ts_init(MIB, 512, 0), 0);
	assert_int_equal(ts_init(MIB, 256, 0), 0);
	wait_all_ready(5000);
	assert_int_equal(pages_missing(rt_pool.base, 256 * MIB), 0);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Milliseconds xfdr_init() and the background take to populate a new pool. */
static double populate_ms(size_t buffer_bytes, uint32_t count)
{
	double t0 = now_ms();

	assert_int_equal(ts_init(buffer_bytes, count, 0), 0);
	wait_all_ready(20000);
	return now_ms() - t0;
}

/*
 * A re-init stops the thread between two chunks instead of waiting for it to walk the whole
 * old pool: it must take well under the time that walk takes. The walk is timed twice, on two
 * new 1 GiB mappings, and the faster counts: a first touch of memory the machine has not
 * used yet can cost ten times more (on a VM, the host faults too).
 */
static void reinit_stops_the_walk(void **state)
{
	double t0, full_ms, again_ms, reinit_ms;

	(void)state;
	full_ms = populate_ms(MIB, 1024);
	again_ms = populate_ms(MIB / 2, 2048);
	if (again_ms < full_ms)
		full_ms = again_ms;

	assert_int_equal(ts_init(MIB, 1024, 0), 0); /* 1 GiB again, a new mapping */
	assert_true(ready_count() < rt_pool.count);
	t0 = now_ms();
	assert_int_equal(ts_init(64 * 1024, 64, 0), 0);
	reinit_ms = now_ms() - t0;
	if (reinit_ms * 4 > full_ms)
		fail_msg("re-init took %.1f ms, populating 1 GiB %.1f ms", reinit_ms, full_ms);
}

/*
 * In a fork child neither the parent's pool (MADV_DONTFORK) nor its populating thread exists:
 * a re-init there maps a pool of its own and populates it without waiting for that thread.
 */
static int fork_child(const uint8_t *parent_base)
{
	alarm(30); /* a re-init waiting for a thread that is not there would hang */
	if (!msync((void *)parent_base, 4096, MS_ASYNC) || errno != ENOMEM)
		return 11; /* the parent's buffers are mapped here */
	/* 4 MiB: populated by xfdr_init() alone, no thread (TSan allows none after a fork). */
	if (ts_init(64 * 1024, 64, 0) || rt_pool.count != 64)
		return 12;
	if (ready_count() != 64)
		return 13;
	if (pages_missing(rt_pool.base, 4 * MIB))
		return 14;
	return 0;
}

static void fork_child_has_no_thread(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	assert_int_equal(ts_init(MIB, 1024, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fork_child(rt_pool.base));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("child killed by signal %d", WTERMSIG(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	wait_all_ready(10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(area_aligned_first_buffers_ready),
	    cmocka_unit_test(background_populates_every_buffer),
	    cmocka_unit_test(ready_populates_a_buffer),
	    cmocka_unit_test(ready_populates_an_unaligned_buffer),
	    cmocka_unit_test(ready_is_cheap_when_marked),
	    cmocka_unit_test(prefault_thread_and_reinit),
	    cmocka_unit_test(reinit_stops_the_walk),
	    cmocka_unit_test(fork_child_has_no_thread),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
