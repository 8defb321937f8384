/*
 * tests/unit/runtime/test_runtime_malloc.c - recording and flushing never allocate.
 *
 * The test binary takes over the allocator (tests/support/alloc_hook.h): while alloc_counting
 * is set, every call is counted, from every thread.
 */
#include <pthread.h>

#include "tests/support/alloc_hook.h"
#include "tests/support/runtime_test.h"

static pthread_barrier_t ready, go, done;

/* A second thread: its first event (registration) and its events are inside the window. */
static void *worker(void *arg)
{
	int i;

	(void)arg;
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&go);
	for (i = 0; i < 1000; i++) {
		xfdr_enter(7);
		xfdr_exit(7);
	}
	pthread_barrier_wait(&done);
	return NULL;
}

static void no_allocation_while_recording(void **state)
{
	char path[512];
	pthread_t th;
	int i;

	(void)state;
	/* Small buffers and pool: rotations, exhaustion and drops all happen in the window. */
	assert_int_equal(ts_init(512, 40, 0), 0);
	pthread_barrier_init(&ready, NULL, 2);
	pthread_barrier_init(&go, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	assert_int_equal(pthread_create(&th, NULL, worker, NULL), 0);
	/* Thread start-up (the sanitizers' own bookkeeping included) is outside the window. */
	pthread_barrier_wait(&ready);
	/* Touch the counting path once so lazy symbol binding is done before the window. */
	free(malloc(1));

	__atomic_store_n(&alloc_counting, 1, __ATOMIC_RELAXED);
	assert_int_equal(xfdr_start(), 0);
	pthread_barrier_wait(&go);
	for (i = 0; i < 2000; i++) {
		xfdr_enter(1);
		XFDR_ENTER_ARGS(2, (uint64_t)i, 5);
		xfdr_custom_event("payload", 7);
		xfdr_exit(2);
		xfdr_tail_exit(1);
	}
	pthread_barrier_wait(&done);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);
	__atomic_store_n(&alloc_counting, 0, __ATOMIC_RELAXED);

	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&go);
	pthread_barrier_destroy(&done);
	assert_int_equal(alloc_calls, 0);
	/* The window did record, rotate and drop (else it proved little). */
	{
		char map_path[600], value[64], *map;
		size_t n;

		snprintf(map_path, sizeof(map_path), "%s.map", path);
		map = (char *)ts_slurp(map_path, &n);
		assert_string_equal(ts_map_value(map, "buffers_written", value, sizeof(value)),
				    "40");
		assert_true(strtoull(ts_map_value(map, "dropped\tno_buffer", value, sizeof(value)),
				     NULL, 10) > 0);
		free(map);
	}
	xfdr_trace_close(ts_open_verified(path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(no_allocation_while_recording),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
