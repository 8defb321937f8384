/*
 * tests/unit/runtime/test_runtime_fidelity.c - the recorder's own work stays outside the calls
 * it records (issue 28): a thread's first event (its slot, a buffer claimed, its pages, the
 * wall clock) and a buffer switch at an entry happen before the entry's timestamp; a buffer
 * switch at an exit happens after the exit's.
 *
 * The -finstrument-functions hooks: a function's first lookup in the map (a thread's first
 * miss creates its cache) happens before the entry's timestamp too.
 *
 * The recorder's work is made slow on purpose, not hoped to be: clock_gettime(CLOCK_REALTIME),
 * which take_buffer() calls once per buffer for its WallClockTime, pthread_setspecific(),
 * which the function map calls when it creates a thread's cache, and prctl(PR_GET_NAME), which
 * backing=file's live map calls for the thread's line each time it takes a buffer, are
 * interposed and sleep SLOW_MS on the thread that armed them. An empty call recorded around
 * that work must then last less than a tenth of it: without the fix it lasts at least SLOW_MS.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <time.h>

#include "tests/support/runtime_test.h"

#include "runtime/record/thread.h"
#include "writer/encode.h"

#define SLOW_MS 40
#define FID_EMPTY 7
#define FID_OUTER 8

/*
 * The next CLOCK_REALTIME read, pthread_setspecific(), prctl(PR_GET_NAME) on this thread sleeps
 * SLOW_MS first.
 */
static __thread int slow_next_wall_clock, slow_next_setspecific, slow_next_get_name;

static void nap(void)
{
	struct timespec left = {0, SLOW_MS * 1000000L};

	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (clk == CLOCK_REALTIME && slow_next_wall_clock) {
		slow_next_wall_clock = 0;
		nap();
	}
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

int pthread_setspecific(pthread_key_t key, const void *value)
{
	static int (*real)(pthread_key_t, const void *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_setspecific");
	if (slow_next_setspecific) {
		slow_next_setspecific = 0;
		nap();
	}
	return real(key, value);
}

int prctl(int option, ...)
{
	unsigned long arg[4];
	va_list ap;
	int i;

	va_start(ap, option);
	for (i = 0; i < 4; i++)
		arg[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_GET_NAME && slow_next_get_name) {
		slow_next_get_name = 0;
		nap();
	}
	return (int)syscall(SYS_prctl, option, arg[0], arg[1], arg[2], arg[3]);
}

/* The recorded calls on thread_id of fid (0: of any function but FID_OUTER): entry and exit TSCs.
 */
struct calls {
	uint32_t fid, thread_id;
	uint64_t enter[8], exit[8];
	unsigned entries, exits;
};

static int collect(const struct xfdr_event *ev, void *arg)
{
	struct calls *c = arg;

	if (ev->type != XFDR_EVENT_FUNCTION || ev->thread_id != c->thread_id ||
	    (c->fid ? ev->function_id != c->fid : ev->function_id == FID_OUTER))
		return 0;
	if (ev->action == XFDR_FN_ENTER && c->entries < 8)
		c->enter[c->entries++] = ev->tsc;
	else if (ev->action != XFDR_FN_ENTER && c->exits < 8)
		c->exit[c->exits++] = ev->tsc;
	return 0;
}

/* Flush, and the duration in ms of the one call of fid (as collect()) on thread_id. */
static double recorded_ms(uint32_t fid, uint32_t thread_id)
{
	char path[512];
	struct calls c = {.fid = fid, .thread_id = thread_id};
	struct xfdr_trace *t;
	uint64_t hz;

	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	t = ts_open_verified(path);
	hz = xfdr_trace_header(t)->cycle_frequency;
	xfdr_trace_close(t);
	assert_true(hz > 0);
	ts_each_event(path, XFDR_ORDER_FILE, collect, &c);
	assert_int_equal(c.entries, 1);
	assert_int_equal(c.exits, 1);
	assert_true(c.exit[0] >= c.enter[0]);
	return (double)(c.exit[0] - c.enter[0]) * 1e3 / (double)hz;
}

/* What a thread saw; checked by the test's thread (cmocka asserts there only). */
struct seen {
	uint32_t thread_id;
	int slowed;
};

static void *first_call(void *arg)
{
	struct seen *f = arg;

	/* The thread's first event: no slot, no buffer yet. */
	slow_next_wall_clock = 1;
	xfdr_enter(FID_EMPTY);
	xfdr_exit(FID_EMPTY);
	f->slowed = !slow_next_wall_clock;
	f->thread_id = rec_self.slot ? rec_self.slot->thread_id : 0;
	return NULL;
}

static void thread_first_call_is_empty(void **state)
{
	struct seen f = {0};
	pthread_t th;
	double ms;

	(void)state;
	assert_int_equal(ts_init(4096, 16, 0), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_create(&th, NULL, first_call, &f), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(f.slowed); /* the slow work did happen */
	assert_int_not_equal(f.thread_id, 0);
	ms = recorded_ms(FID_EMPTY, f.thread_id);
	if (ms >= SLOW_MS / 10.0)
		fail_msg("the thread's first call lasted %.3f ms: the recorder's set-up (%d ms) "
			 "is inside it",
			 ms, SLOW_MS);
	xfdr_stop();
}

/* Would the next function record fit in this thread's buffer? */
static int next_fits(void)
{
	return rec_self.buf && wr_fits(rec_self.size - rec_self.used, XFDR_FN_RECORD_BYTES);
}

/*
 * Record events until FID_EMPTY's next entry (at_exit 0) or the exit after it (at_exit 1) is
 * the first that does not fit. Each record takes 8 bytes and one fits while the room left is
 * exactly 8 or at least 24 (an EndOfBuffer must still fit after it): from room R, (R - 16) / 8
 * fit. Empty calls of FID_OUTER take two each; one unmatched entry of FID_OUTER + 1 sets the
 * parity. The thread stays on one CPU: a NewCPUId would take 16 bytes more. Returns whether
 * that unmatched entry is open (its exit is the caller's).
 */
static int fill_until_switch_at(int at_exit)
{
	cpu_set_t one;
	size_t events;
	int odd;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	xfdr_enter(FID_OUTER);
	xfdr_exit(FID_OUTER); /* the buffer is taken */
	assert_true(rec_self.size - rec_self.used >= 64);
	events = (rec_self.size - rec_self.used - 16) / XFDR_FN_RECORD_BYTES - (at_exit ? 1 : 0);
	odd = (int)(events & 1);
	if (odd)
		xfdr_enter(FID_OUTER + 1);
	for (events /= 2; events; events--) {
		xfdr_enter(FID_OUTER);
		xfdr_exit(FID_OUTER);
	}
	return odd;
}

/*
 * With a recorder set up by o (started here): FID_EMPTY's entry takes the next buffer, the work
 * *slow names made slow; the call must last less than a tenth of it.
 */
static void entry_switch_outside_the_call(const struct xfdr_options *o, int *slow)
{
	uint32_t thread_id;
	int outer_open;
	double ms;

	assert_int_equal(xfdr_init(o), 0);
	assert_int_equal(xfdr_start(), 0);
	outer_open = fill_until_switch_at(0);
	assert_false(next_fits());
	thread_id = rec_self.slot->thread_id;
	*slow = 1;
	xfdr_enter(FID_EMPTY); /* takes the next buffer */
	xfdr_exit(FID_EMPTY);
	assert_int_equal(*slow, 0);
	if (outer_open)
		xfdr_exit(FID_OUTER + 1);
	ms = recorded_ms(FID_EMPTY, thread_id);
	if (ms >= SLOW_MS / 10.0)
		fail_msg("a call whose entry took a new buffer (backing=%s) lasted %.3f ms",
			 o->backing == XFDR_BACKING_FILE ? "file" : "memory", ms);
	xfdr_stop();
}

static void entry_that_switches_buffers(void **state)
{
	struct xfdr_options o;

	(void)state;
	ts_options(&o, 4096, 16, XFDR_MODE_BOUNDED);
	entry_switch_outside_the_call(&o, &slow_next_wall_clock);
}

/* backing=file: the live map's line of the thread, written as it takes a buffer, is before too. */
static void entry_that_switches_buffers_live_map(void **state)
{
	struct xfdr_options o;

	(void)state;
	ts_options(&o, 4096, 16, XFDR_MODE_BOUNDED);
	o.backing = XFDR_BACKING_FILE;
	entry_switch_outside_the_call(&o, &slow_next_get_name);
}

static void exit_that_switches_buffers(void **state)
{
	uint32_t thread_id;
	int outer_open;
	double ms;

	(void)state;
	assert_int_equal(ts_init(4096, 16, 0), 0);
	assert_int_equal(xfdr_start(), 0);
	outer_open = fill_until_switch_at(1);
	thread_id = rec_self.slot->thread_id;
	assert_true(next_fits());
	xfdr_enter(FID_EMPTY); /* the last record that fits */
	assert_false(next_fits());
	slow_next_wall_clock = 1;
	xfdr_exit(FID_EMPTY); /* takes the next buffer, after its own time */
	assert_int_equal(slow_next_wall_clock, 0);
	if (outer_open)
		xfdr_exit(FID_OUTER + 1);
	ms = recorded_ms(FID_EMPTY, thread_id);
	if (ms >= SLOW_MS / 10.0)
		fail_msg("a call whose exit took a new buffer lasted %.3f ms", ms);
	xfdr_stop();
}

/* The -finstrument-functions hooks (runtime/hooks/cyg.c); no header declares them. */
void __cyg_profile_func_enter(void *this_fn, void *call_site);
void __cyg_profile_func_exit(void *this_fn, void *call_site);

/* A function address the map has not seen: the hooks take any address. */
static char never_called[1];

static void *cyg_first_lookup(void *arg)
{
	struct seen *f = arg;

	/* The thread's slot and buffer first, so that only the map's work is left. */
	xfdr_enter(FID_OUTER);
	xfdr_exit(FID_OUTER);
	slow_next_setspecific = 1;
	__cyg_profile_func_enter(never_called, NULL); /* the thread's first miss: its cache */
	__cyg_profile_func_exit(never_called, NULL);
	f->slowed = !slow_next_setspecific;
	f->thread_id = rec_self.slot ? rec_self.slot->thread_id : 0;
	return NULL;
}

static void cyg_first_lookup_outside_the_call(void **state)
{
	struct seen f = {0};
	pthread_t th;
	double ms;

	(void)state;
	assert_int_equal(ts_init(4096, 16, 0), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_create(&th, NULL, cyg_first_lookup, &f), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(f.slowed);
	ms = recorded_ms(0, f.thread_id); /* never_called: the one function but FID_OUTER */
	if (ms >= SLOW_MS / 10.0)
		fail_msg(
		    "a function's first call lasted %.3f ms: its id's lookup (%d ms) is inside it",
		    ms, SLOW_MS);
	xfdr_stop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(thread_first_call_is_empty),
	    cmocka_unit_test(entry_that_switches_buffers),
	    cmocka_unit_test(entry_that_switches_buffers_live_map),
	    cmocka_unit_test(exit_that_switches_buffers),
	    cmocka_unit_test(cyg_first_lookup_outside_the_call),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
