/*
 * tests/unit/runtime/test_runtime_signal.c - signals that land inside the runtime, and errno.
 *
 * A helper thread signals the recording thread again and again; the handler records its own
 * entry/exit. A handler that interrupts the thread inside the runtime must find the guard
 * and be counted as a re-entry drop; one that interrupts it between events is recorded. In
 * every case the file stays valid and every event is either in it or counted.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "tests/support/runtime_test.h"

enum { MAIN_FID = 1, HANDLER_FID = 2 };

/* Main-loop events at most: with the handlers' they fit the pool (256 x 8184 records). */
#define MAIN_EVENTS_MAX 1500000u

static volatile uint64_t handler_calls;
static volatile int stop_signals;

static void handler(int sig)
{
	int saved = errno;

	(void)sig;
	xfdr_enter(HANDLER_FID);
	xfdr_exit(HANDLER_FID);
	__atomic_fetch_add(&handler_calls, 1, __ATOMIC_RELAXED);
	errno = saved;
}

struct sender {
	pthread_t target;
	uint64_t signals;
};

/* Signal the target, wait until the handler ran, again, until enough handlers ran. */
static void *sender(void *arg)
{
	struct sender *s = arg;
	uint64_t i;

	for (i = 0; i < s->signals; i++) {
		uint64_t before = __atomic_load_n(&handler_calls, __ATOMIC_RELAXED);
		struct timespec t0, now;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		pthread_kill(s->target, SIGUSR1);
		while (__atomic_load_n(&handler_calls, __ATOMIC_RELAXED) == before) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec > 5)
				break;
		}
	}
	__atomic_store_n(&stop_signals, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void signals_inside_the_runtime(void **state)
{
	struct sigaction sa;
	struct sender s;
	pthread_t th;
	char path[512], map_path[600], value[64], *yaml, *map;
	struct xfdr_trace *tr;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	uint64_t main_events = 0, main_seen = 0, handler_seen = 0, calls, dropped, reentrant;
	uint64_t per_signal;
	size_t n;
	int rc;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	/* 256 buffers of 64 KiB: room for every event the test issues. */
	assert_int_equal(ts_init(65536, 256, 0), 0);
	assert_int_equal(xfdr_start(), 0);
	s.target = pthread_self();
	s.signals = ts_sanitized() ? 2000 : 10000;
	assert_int_equal(pthread_create(&th, NULL, sender, &s), 0);
	per_signal = MAIN_EVENTS_MAX / s.signals;
	while (!__atomic_load_n(&stop_signals, __ATOMIC_RELAXED)) {
		uint32_t fid = MAIN_FID | (uint32_t)(main_events / 2) << 4;
		uint64_t budget =
		    (__atomic_load_n(&handler_calls, __ATOMIC_RELAXED) + 1) * per_signal;
		volatile unsigned spin;

		/*
		 * The events the pool holds are spread over the whole signalling, a share per
		 * handler run: had the loop spent them all at full speed before a slow sender (a
		 * loaded machine) got going, every later signal would find the thread outside the
		 * runtime, and none a re-entry.
		 */
		if (main_events < MAIN_EVENTS_MAX && main_events < budget) {
			if (main_events & 1)
				xfdr_exit(fid);
			else
				xfdr_enter(fid);
			main_events++;
		}
		/* Time outside the runtime too, and fewer events for the file to hold. */
		for (spin = 0; spin < 100; spin++)
			;
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	signal(SIGUSR1, SIG_DFL);
	assert_int_equal(xfdr_stop(), 0);
	calls = handler_calls;
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);

	/* The main sequence is complete and in order; handler events are whole pairs or gone. */
	tr = ts_open_verified(path);
	assert_int_equal(xfdr_events_begin(tr, XFDR_ORDER_FILE, &it, &err), 0);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		if (ev.type != XFDR_EVENT_FUNCTION)
			continue;
		if ((ev.function_id & 15) == HANDLER_FID) {
			handler_seen++;
			continue;
		}
		assert_int_equal(ev.function_id & 15, MAIN_FID);
		assert_int_equal(ev.function_id >> 4, (main_seen / 2) & 0xffffff);
		assert_int_equal(ev.action, main_seen & 1 ? XFDR_FN_EXIT : XFDR_FN_ENTER);
		main_seen++;
	}
	assert_int_equal(rc, 0);
	xfdr_trace_close(tr);

	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &n);
	dropped = strtoull(ts_map_value(map, "dropped\ttotal", value, sizeof(value)), NULL, 10);
	reentrant =
	    strtoull(ts_map_value(map, "dropped\treentrant", value, sizeof(value)), NULL, 10);
	free(map);
	assert_int_equal(main_seen, main_events);
	assert_int_equal(dropped, reentrant);
	if (handler_seen + reentrant != 2 * calls)
		fail_msg("handler: %llu recorded + %llu dropped != %llu issued",
			 (unsigned long long)handler_seen, (unsigned long long)reentrant,
			 (unsigned long long)(2 * calls));
	/* Thousands of signals: some found the thread inside the runtime, some did not. */
	if (!reentrant || !handler_seen)
		fail_msg("%llu signals, %llu main events: %llu handlers recorded, %llu re-entries",
			 (unsigned long long)calls, (unsigned long long)main_events,
			 (unsigned long long)handler_seen, (unsigned long long)reentrant);
	if (ts_llvm_yaml(path, &yaml))
		fail_msg("llvm-xray rejects %s: %.300s", path, yaml);
	free(yaml);
	unlink(path);
	unlink(map_path);
}

/* errno survives every path: first event (registration), rotation, drops, stopped. */
static void errno_preserved(void **state)
{
	int i;

	(void)state;
	assert_int_equal(ts_init(128, 2, 0), 0);
	xfdr_enter(1); /* stopped */
	assert_int_equal(xfdr_start(), 0);
	for (i = 0; i < 40; i++) { /* rotations, then the pool runs out */
		errno = EDOM;
		xfdr_enter(3);
		assert_int_equal(errno, EDOM);
		errno = ERANGE;
		xfdr_exit(3);
		assert_int_equal(errno, ERANGE);
	}
	errno = EILSEQ;
	assert_int_equal(xfdr_custom_event("abc", 3), -ENOBUFS);
	assert_int_equal(errno, EILSEQ);
	assert_int_equal(xfdr_stop(), 0);
	errno = EDOM;
	xfdr_enter(1);
	assert_int_equal(errno, EDOM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(errno_preserved),
	    cmocka_unit_test(signals_inside_the_runtime),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
