/*
 * tests/unit/runtime/test_runtime_elide_mt.c - short-call elision while flushes copy the buffers.
 *
 * An erased entry's bytes are rewritten by the next record while a flush copies the buffer
 * (runtime/record/recorder.c try_elide(); the flush copies only below the erase floor,
 * runtime/flush/flush.c final_bytes()). Two writers
 * record, many times over, a long call A_k around a short call B; B is always elided, A_k
 * never. The main thread flushes all along. Every file must verify, and each thread's events
 * must be the A_k pairs in order inside each buffer, with at most one B entry: the very last
 * event of the thread in the file (B open at the moment of the copy). A torn copy would show
 * a B exit, a B entry in the middle, a lost A_k or a wrong time. Run under ThreadSanitizer by
 * make check.
 */
#include <pthread.h>

#include "runtime/record/record_fast.h"
#include "tests/support/runtime_test.h"

enum { WRITERS = 2, FID_B = 1, FID_A0 = 16 };

/* A_k starts every STEP ticks and lasts A_TICKS, far above the 1 us threshold; B lasts 1. */
#define STEP 10000000ull
#define A_TICKS 5000000ull

static uint64_t pairs_per_writer;
static uint32_t writers_done;

/* Writer w: A_k at base + STEP k, lasting A_TICKS; B inside it, 1 tick long. */
static void *writer(void *arg)
{
	uint64_t w = (uintptr_t)arg, k;
	uint64_t base = STEP + w * 100000000000000000ull;

	for (k = 0; k < pairs_per_writer; k++) {
		uint64_t t = base + STEP * k;
		uint32_t a = FID_A0 + (uint32_t)(k % 1000000);

		rec_function_at(t, 0, XFDR_FN_ENTER, a);
		rec_function_at(t + 1, 0, XFDR_FN_ENTER, FID_B);
		rec_function_at(t + 2, 0, XFDR_FN_EXIT, FID_B);
		rec_function_at(t + A_TICKS, 0, XFDR_FN_EXIT, a);
	}
	__atomic_add_fetch(&writers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct thread_check {
	uint16_t id;
	int seen;
	uint64_t next_pair; /* the A_k expected next, once known */
	int in_a;	    /* inside A_k */
	int b_open;	    /* a B entry was seen: nothing may follow */
	uint64_t buffer;    /* buffer of the last event */
};

static void check_event(const char *file, struct thread_check *c, const struct xfdr_event *ev)
{
	if (c->b_open)
		fail_msg("%s: thread %u: an event after an unfinished short call", file, c->id);
	/*
	 * Between buffers the sequence may jump: a buffer reused while the flush ran is
	 * missing (the .map counts it). Inside a buffer it may not.
	 */
	if (c->seen && ev->buffer_index != c->buffer)
		c->seen = 0;
	c->buffer = ev->buffer_index;
	if (ev->function_id == FID_B) {
		if (ev->action != XFDR_FN_ENTER || !c->in_a)
			fail_msg("%s: thread %u: short call record %u outside its caller", file,
				 c->id, ev->action);
		c->b_open = 1;
		return;
	}
	if (ev->function_id < FID_A0)
		fail_msg("%s: thread %u: unknown function %u", file, c->id, ev->function_id);
	if (ev->action == XFDR_FN_ENTER) {
		uint64_t k = ev->function_id - FID_A0;

		if (c->in_a && c->seen)
			fail_msg("%s: thread %u: A entered twice", file, c->id);
		if (c->seen && k != c->next_pair % 1000000)
			fail_msg("%s: thread %u: A_%llu after A_%llu", file, c->id,
				 (unsigned long long)k, (unsigned long long)c->next_pair);
		if (ev->tsc % STEP != 0)
			fail_msg("%s: thread %u: A entry at %llu", file, c->id,
				 (unsigned long long)ev->tsc);
		c->next_pair = k + 1;
		c->in_a = 1;
	} else {
		/* the first event of a buffer whose predecessors are gone may be an exit */
		if (c->seen && !c->in_a)
			fail_msg("%s: thread %u: A exit without entry", file, c->id);
		if (ev->tsc % STEP != A_TICKS)
			fail_msg("%s: thread %u: A exit at %llu", file, c->id,
				 (unsigned long long)ev->tsc);
		if (!c->seen)
			c->next_pair = ev->function_id - FID_A0 + 1;
		c->in_a = 0;
	}
	c->seen = 1;
}

static void check_file(const char *file)
{
	struct xfdr_trace *tr = ts_open_verified(file);
	struct thread_check c[WRITERS + 1];
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	int rc, n = 0, i;

	memset(c, 0, sizeof(c));
	assert_int_equal(xfdr_events_begin(tr, XFDR_ORDER_THREAD, &it, &err), 0);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		if (ev.type != XFDR_EVENT_FUNCTION)
			continue;
		for (i = 0; i < n && c[i].id != ev.thread_id; i++)
			;
		if (i == n) {
			assert_true(n < WRITERS);
			c[n++].id = ev.thread_id;
		}
		check_event(file, &c[i], &ev);
	}
	if (rc < 0)
		fail_msg("%s", err.text);
	xfdr_trace_close(tr);
}

static void remove_trace(const char *file)
{
	char map[600];

	snprintf(map, sizeof(map), "%s.map", file);
	unlink(file);
	unlink(map);
}

static void elision_races_flush(void **state)
{
	struct xfdr_options o;
	pthread_t th[WRITERS];
	char path[512];
	int flushes = 0;
	uintptr_t w;
	char *map, mp[600];
	size_t n;

	(void)state;
	pairs_per_writer = ts_sanitized() ? 100000 : 1000000;
	writers_done = 0;
	xfdr_options_default(&o);
	o.buffer_size = 1024;
	o.buffer_max = 16;
	o.flush_at_exit = 0;
	o.output = ts_dir;
	o.mode = XFDR_MODE_RING;
	o.func_duration_threshold_us = 1; /* B's 1 tick always, A's A_TICKS never */
	assert_int_equal(xfdr_init(&o), 0);
	assert_true(rec_elide_ticks > 2 && rec_elide_ticks < A_TICKS);
	assert_int_equal(xfdr_start(), 0);
	for (w = 0; w < WRITERS; w++)
		assert_int_equal(pthread_create(&th[w], NULL, writer, (void *)w), 0);
	while (__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE) < WRITERS) {
		assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
		check_file(path);
		remove_trace(path);
		flushes++;
	}
	for (w = 0; w < WRITERS; w++)
		assert_int_equal(pthread_join(th[w], NULL), 0);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	check_file(path);
	if (ts_llvm_yaml(path, NULL))
		fail_msg("llvm-xray rejects %s", path);
	snprintf(mp, sizeof(mp), "%s.map", path);
	map = (char *)ts_slurp(mp, &n);
	{
		char value[64];

		assert_non_null(ts_map_value(map, "elided", value, sizeof(value)));
		assert_int_equal(strtoull(value, NULL, 10), WRITERS * pairs_per_writer);
	}
	free(map);
	remove_trace(path);
	print_message("%d flushes raced the writers\n", flushes);
	assert_true(flushes > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(elision_races_flush),
	};

	/* The *_at forms are given the clock: buffers taken for entries keep it (recorder.h). */
	rec_inspect_clock_given(1);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
