/*
 * tests/unit/runtime/test_runtime_integrity_mt.c - what a flush writes is a state its owner had,
 * and a buffer has one owner, whatever runs in between.
 *
 * The windows are held, not hoped for: write(2) is interposed so that a flush stops right
 * after its snapshot (the header is its first write), while another thread does what it
 * must not be able to tear; and the hand-back of a buffer is driven with the generation of an
 * earlier session's claim. Run under ThreadSanitizer by make check.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>

#include "runtime/pool/pool.h"
#include "runtime/record/recorder.h"
#include "runtime/record/record_fast.h"
#include "tests/support/map_parse.h"
#include "tests/support/runtime_test.h"

enum { FID_A = 7, FID_B = 9, CUSTOM_BYTES = 24 };

/* ---- write(2), held once at the next trace header ------------------------------------------ */

static int hold_next_header;  /* set by the test; the flusher takes it */
static sem_t header_reached;  /* posted by the held write */
static sem_t header_released; /* waited for by the held write */

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (n == XFDR_FILE_HEADER_BYTES &&
	    __atomic_exchange_n(&hold_next_header, 0, __ATOMIC_ACQ_REL)) {
		sem_post(&header_reached);
		while (sem_wait(&header_released))
			;
	}
	return real(fd, buf, n);
}

/* ---- a flush held between its snapshot and its copies --------------------------------------- */

struct flusher {
	pthread_t th;
	char path[512];
	int rc;
};

static void *flush_thread(void *arg)
{
	struct flusher *f = arg;

	f->rc = xfdr_flush(f->path, sizeof(f->path));
	return NULL;
}

/* Start a flush on its own thread and return once it has taken its snapshot. */
static void flush_start_held(struct flusher *f)
{
	__atomic_store_n(&hold_next_header, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&f->th, NULL, flush_thread, f), 0);
	while (sem_wait(&header_reached))
		;
}

static void flush_finish(struct flusher *f)
{
	sem_post(&header_released);
	assert_int_equal(pthread_join(f->th, NULL), 0);
	assert_int_equal(f->rc, 0);
}

/* What one thread's events in a trace are, and whether anything is not one of ours. */
struct tally {
	uint32_t thread_id;
	unsigned entries_a, exits_a, entries_b, exits_b, customs, strangers;
};

static int tally_event(const struct xfdr_event *ev, void *arg)
{
	struct tally *t = arg;

	if (ev->thread_id != t->thread_id)
		return 0;
	if (ev->type == XFDR_EVENT_CUSTOM) {
		t->customs++;
	} else if (ev->type == XFDR_EVENT_FUNCTION && ev->function_id == FID_A) {
		if (ev->action == XFDR_FN_ENTER)
			t->entries_a++;
		else
			t->exits_a++;
	} else if (ev->type == XFDR_EVENT_FUNCTION && ev->function_id == FID_B) {
		if (ev->action == XFDR_FN_ENTER)
			t->entries_b++;
		else
			t->exits_b++;
	} else if (ev->type == XFDR_EVENT_FUNCTION) {
		t->strangers++;
	}
	return 0;
}

/* The .map's elided count of the thread with kernel tid. */
static uint64_t elided_of(const char *trace, uint32_t tid)
{
	static struct mp_thread mt[8];
	const struct mp_thread *me;
	uint64_t elided;
	char *map = mp_read(trace);
	size_t n = mp_threads(map, mt, 8);

	me = mp_thread_of(mt, n, tid);
	assert_non_null(me);
	elided = me->elided;
	free(map);
	return elided;
}

static uint32_t owner_tid;

static void *owner_records(void *arg)
{
	uint8_t payload[CUSTOM_BYTES];
	struct flusher *f = arg;

	owner_tid = ts_tid();
	rec_function_at(1000, 0, XFDR_FN_ENTER, FID_A);
	rec_function_at(1001, 0, XFDR_FN_ENTER, FID_B);
	/* The flush fixes its lengths now, with both entries recorded... */
	flush_start_held(f);
	/* ...then B's exit erases B's entry (1 tick: elided) and a custom event takes its bytes. */
	rec_function_at(1002, 0, XFDR_FN_EXIT, FID_B);
	memset(payload, 0xA5, sizeof(payload));
	assert_int_equal(rec_custom_event_at(1003, 0, payload, sizeof(payload)), 0);
	rec_function_at(2000000000ull, 0, XFDR_FN_EXIT, FID_A);
	flush_finish(f);
	return NULL;
}

/*
 * An erase between a flush's snapshot and its copy: the flush must write the buffer as its
 * owner had it (no half custom event, no EndOfBuffer lost, no padding read as records), and an
 * entry in the trace is never also counted as elided: records + 2 x elided <= issued.
 */
static void flush_racing_elision(void **state)
{
	struct xfdr_options o;
	struct flusher f = {.rc = -1};
	struct tally t = {0};
	pthread_t owner;
	char path[512];
	uint64_t elided;
	unsigned records;

	(void)state;
	ts_options(&o, 4096, 4, 0);
	o.func_duration_threshold_us = 1; /* B's one tick is short; A's 2e9 ticks are not */
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_create(&owner, NULL, owner_records, &f), 0);
	assert_int_equal(pthread_join(owner, NULL), 0);

	ts_tools_accept(f.path);
	elided = elided_of(f.path, owner_tid);
	t.thread_id = 1;
	ts_each_event(f.path, XFDR_ORDER_THREAD, tally_event, &t);
	records = t.entries_a + t.exits_a + t.entries_b + t.exits_b;
	assert_int_equal(t.strangers, 0);
	assert_true(t.customs <= 1);
	assert_int_equal(t.exits_b, 0); /* elided, never written */
	if (records + 2 * elided > 4)
		fail_msg("%u function records and %llu elided calls of 4 events issued", records,
			 (unsigned long long)elided);

	/* Once the owner is done, all of it: A's call, the custom event, B counted as elided. */
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	ts_tools_accept(path);
	memset(&t, 0, sizeof(t));
	t.thread_id = 1;
	ts_each_event(path, XFDR_ORDER_THREAD, tally_event, &t);
	assert_int_equal(t.entries_a, 1);
	assert_int_equal(t.exits_a, 1);
	assert_int_equal(t.entries_b + t.exits_b + t.strangers, 0);
	assert_int_equal(t.customs, 1);
	assert_int_equal(elided_of(path, owner_tid), 1);
}

/*
 * The thread that flushes keeps its own open calls, elision or not: the flush ends what its
 * own buffer may still erase. (Other threads' last plain entries wait for their next record.)
 */
static void flush_keeps_own_open_calls(void **state)
{
	struct xfdr_options o;
	struct tally t = {0};
	char path[512];

	(void)state;
	ts_options(&o, 4096, 4, 0);
	o.func_duration_threshold_us = 1;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	rec_function_at(1000, 0, XFDR_FN_ENTER, FID_A);
	rec_function_at(1001, 0, XFDR_FN_ENTER, FID_B);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	/* B's exit after the flush: its entry is in a trace, so it is not erased any more. */
	rec_function_at(1002, 0, XFDR_FN_EXIT, FID_B);
	rec_function_at(2000000000ull, 0, XFDR_FN_EXIT, FID_A);
	assert_int_equal(xfdr_stop(), 0);
	t.thread_id = 1;
	ts_each_event(path, XFDR_ORDER_THREAD, tally_event, &t);
	assert_int_equal(t.entries_a, 1);
	assert_int_equal(t.entries_b, 1);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	memset(&t, 0, sizeof(t));
	t.thread_id = 1;
	ts_each_event(path, XFDR_ORDER_THREAD, tally_event, &t);
	assert_int_equal(t.entries_b, 1);
	assert_int_equal(t.exits_b, 1);
	assert_int_equal(elided_of(path, ts_tid()), 0);
}

/* ---- one owner per buffer ------------------------------------------------------------------- */

static struct pool_desc *claim_owned(void)
{
	struct pool_reused reused;
	struct pool_desc *d = pool_claim(&reused);

	assert_non_null(d);
	pool_publish_owned(d);
	return d;
}

/*
 * A thread that still holds a buffer of an earlier session (its exit raced a new xfdr_init())
 * hands it back with the generation of its claim: the buffer, set up again and claimed by
 * another thread since, stays that thread's. Before, the hand-back flipped owned to full
 * under the new owner, a third thread reclaimed it, and one buffer held two threads' records.
 */
static void stale_hand_back_leaves_new_owner(void **state)
{
	struct pool_desc *old, *now;
	uint32_t old_gen;
	uint64_t c;

	(void)state;
	assert_int_equal(ts_init_mode(4096, 1, 0, XFDR_MODE_RING), 0);
	old = claim_owned();
	old_gen = POOL_GEN(xfdr_load_relaxed(&old->ctl));
	/* A new session: the same memory, set up again in place. */
	assert_int_equal(ts_init_mode(4096, 1, 0, XFDR_MODE_RING), 0);
	now = claim_owned();
	assert_ptr_equal(now, old);
	assert_int_not_equal(POOL_GEN(xfdr_load_relaxed(&now->ctl)), old_gen);
	assert_int_equal(pool_mark_full(old, old_gen, 64, 1), 0);
	c = xfdr_load_acquire(&now->ctl);
	assert_int_equal(POOL_STATE(c), POOL_OWNED);
	/* Ring mode finds nothing to reclaim: the only buffer is owned. */
	{
		struct pool_reused reused;

		assert_null(pool_claim(&reused));
	}
	/* Its owner's hand-back still works, and keeps a flusher's pin. */
	assert_int_equal(pool_pin(now, POOL_GEN(c)), 1);
	assert_int_equal(pool_mark_full(now, POOL_GEN(c), 64, 2), 1);
	c = xfdr_load_acquire(&now->ctl);
	assert_int_equal(POOL_STATE(c), POOL_FULL);
	assert_true(c & POOL_PINNED);
	pool_unpin(now);
}

static sem_t exiter_recorded, exiter_may_exit;

static void *exiter(void *arg)
{
	(void)arg;
	rec_function_at(1000, 0, XFDR_FN_ENTER, FID_A);
	sem_post(&exiter_recorded);
	while (sem_wait(&exiter_may_exit))
		;
	return NULL; /* thread_exit() runs now */
}

/*
 * A thread that exits after a new session began leaves the buffer it held alone: the new
 * session's thread that took that buffer keeps recording into it, alone.
 */
static void exit_after_new_session_leaves_buffer(void **state)
{
	pthread_t th;
	struct pool_desc *d;
	struct tally t = {0};
	char path[512];

	(void)state;
	assert_int_equal(ts_init_mode(4096, 1, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_create(&th, NULL, exiter, NULL), 0);
	while (sem_wait(&exiter_recorded))
		;
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(ts_init_mode(4096, 1, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	rec_function_at(5000, 0, XFDR_FN_ENTER, FID_B); /* takes the one buffer */
	d = &rt_pool.descs[0];
	sem_post(&exiter_may_exit);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(POOL_STATE(xfdr_load_acquire(&d->ctl)), POOL_OWNED);
	rec_function_at(5001, 0, XFDR_FN_EXIT, FID_B);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	t.thread_id = 1;
	ts_each_event(path, XFDR_ORDER_THREAD, tally_event, &t);
	assert_int_equal(t.entries_b, 1);
	assert_int_equal(t.exits_b, 1);
	assert_int_equal(t.entries_a + t.exits_a + t.strangers, 0);
}

static int group_setup(void **state)
{
	sem_init(&header_reached, 0, 0);
	sem_init(&header_released, 0, 0);
	sem_init(&exiter_recorded, 0, 0);
	sem_init(&exiter_may_exit, 0, 0);
	return ts_group_setup(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(flush_racing_elision),
	    cmocka_unit_test(flush_keeps_own_open_calls),
	    cmocka_unit_test(stale_hand_back_leaves_new_owner),
	    cmocka_unit_test(exit_after_new_session_leaves_buffer),
	};

	return cmocka_run_group_tests(tests, group_setup, ts_group_teardown);
}
