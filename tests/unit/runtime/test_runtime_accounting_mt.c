/*
 * tests/unit/runtime/test_runtime_accounting_mt.c - many threads: exact accounting, thread churn,
 * flushes while writers run. Also run under ThreadSanitizer (make check-tsan).
 *
 * Every writer issues a known sequence: event i of writer w is an entry (i even) or exit
 * (i odd) of function (w + 1) << fid_shift | i / 2 (28 bits: the shift leaves room for the
 * events of one writer, the rest for the writer). So each recorded event names its writer
 * and its position, and a file proves exactly which events it holds. Expected values come
 * from the sequences issued, never from the runtime.
 */
#include <pthread.h>
#include <time.h>

#include "tests/support/map_parse.h"
#include "tests/support/runtime_test.h"

enum { MAX_WRITERS = 1100 };

/* 19 bits: 1M events per writer, up to 511 writers; the churn test uses 4. */
static unsigned fid_shift = 19;

struct writer {
	unsigned index;
	uint64_t events; /* to issue, or (run mode) issued */
	uint32_t tid;
	volatile int *stop; /* run mode: issue until set */
	pthread_barrier_t *go;
};

static uint32_t fid_of(unsigned w, uint64_t i)
{
	return (uint32_t)(w + 1) << fid_shift | (uint32_t)(i / 2);
}

static void issue(unsigned w, uint64_t i)
{
	if (i & 1)
		xfdr_exit(fid_of(w, i));
	else
		xfdr_enter(fid_of(w, i));
}

static void *writer_fixed(void *arg)
{
	struct writer *wr = arg;
	uint64_t i;

	wr->tid = ts_tid();
	if (wr->go)
		pthread_barrier_wait(wr->go);
	for (i = 0; i < wr->events; i++)
		issue(wr->index, i);
	return NULL;
}

static void *writer_until_stopped(void *arg)
{
	struct writer *wr = arg;
	uint64_t i;

	wr->tid = ts_tid();
	pthread_barrier_wait(wr->go);
	for (i = 0; !__atomic_load_n(wr->stop, __ATOMIC_RELAXED) && i < wr->events; i++) {
		issue(wr->index, i);
		/* Paced, so the pool lasts across every snapshot: flushes meet live writers. */
		if ((i & 63) == 63) {
			struct timespec nap = {.tv_sec = 0, .tv_nsec = 50000};

			nanosleep(&nap, NULL);
		}
	}
	wr->events = i;
	return NULL;
}

/* Per writer: events found in the file (a prefix of its sequence), and its drop counts. */
struct tally {
	uint64_t recorded[MAX_WRITERS];
	uint32_t thread_id[MAX_WRITERS];
	uint64_t custom_events;
};

/*
 * Walk the file's events with the reader: every writer's events must be its sequence from 0
 * without a gap, all with one thread id. Anything else fails the test.
 */
static void tally_file(const char *file, unsigned writers, struct tally *t)
{
	struct xfdr_trace *tr = ts_open_verified(file);
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	int rc;

	memset(t, 0, sizeof(*t));
	assert_int_equal(xfdr_events_begin(tr, XFDR_ORDER_FILE, &it, &err), 0);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		unsigned w;
		uint64_t i;

		if (ev.type == XFDR_EVENT_CUSTOM) {
			t->custom_events++;
			continue;
		}
		w = (ev.function_id >> fid_shift) - 1;
		if (w >= writers)
			fail_msg("%s: function id %#x names no writer", file, ev.function_id);
		i = (uint64_t)(ev.function_id & ((1u << fid_shift) - 1)) * 2 +
		    (ev.action == XFDR_FN_EXIT);
		if (i != t->recorded[w])
			fail_msg("%s: writer %u: event %llu where %llu was due", file, w,
				 (unsigned long long)i, (unsigned long long)t->recorded[w]);
		if (ev.action != (i & 1 ? XFDR_FN_EXIT : XFDR_FN_ENTER))
			fail_msg("%s: writer %u event %llu: action %u", file, w,
				 (unsigned long long)i, ev.action);
		if (t->recorded[w] == 0)
			t->thread_id[w] = ev.thread_id;
		else if (t->thread_id[w] != ev.thread_id)
			fail_msg("%s: writer %u changed thread id", file, w);
		t->recorded[w]++;
	}
	if (rc < 0)
		fail_msg("%s: %s", file, err.text);
	xfdr_trace_close(tr);
}

static void run_accounting(unsigned writers, uint64_t events, size_t bsize, size_t bmax,
			   int expect_drops)
{
	struct writer wr[8];
	pthread_t th[8];
	pthread_barrier_t go;
	static struct tally t;
	char path[512], map_path[600];
	uint64_t total_recorded = 0, total_drops, issued = 0;
	static struct mp_thread mt[64];
	size_t nt;
	char *map;
	size_t n;
	unsigned w;

	assert_true(writers <= 8);
	assert_int_equal(ts_init(bsize, bmax, 0), 0);
	assert_int_equal(xfdr_start(), 0);
	pthread_barrier_init(&go, NULL, writers);
	for (w = 0; w < writers; w++) {
		wr[w] = (struct writer){.index = w, .events = events, .go = &go};
		assert_int_equal(pthread_create(&th[w], NULL, writer_fixed, &wr[w]), 0);
	}
	for (w = 0; w < writers; w++)
		assert_int_equal(pthread_join(th[w], NULL), 0);
	pthread_barrier_destroy(&go);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);

	tally_file(path, writers, &t);
	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &n);
	nt = mp_threads(map, mt, sizeof(mt) / sizeof(mt[0]));
	for (w = 0; w < writers; w++) {
		const struct mp_thread *th = mp_thread_of(mt, nt, wr[w].tid);
		uint64_t drops;

		assert_non_null(th);
		drops = mp_thread_drops(th);
		/* The file's NewBuffer id of the thread is the one the .map gives its tid. */
		if (t.recorded[w])
			assert_int_equal(t.thread_id[w], th->id);
		/* Per thread: what the file holds plus what was counted is what was issued. */
		if (t.recorded[w] + drops != events)
			fail_msg("writer %u: %llu recorded + %llu dropped != %llu issued", w,
				 (unsigned long long)t.recorded[w], (unsigned long long)drops,
				 (unsigned long long)events);
		total_recorded += t.recorded[w];
		issued += events;
	}
	total_drops = mp_number(map, "dropped\ttotal");
	assert_int_equal(mp_number(map, "dropped\tno_buffer"), total_drops);
	assert_int_equal(total_recorded + total_drops, issued);
	assert_int_equal(t.custom_events, 1); /* the drop-count event */
	if (expect_drops)
		assert_true(total_drops > 0);
	else
		assert_int_equal(total_drops, 0);
	free(map);
	unlink(path);
	unlink(map_path);
}

/* 2 threads x 1M events into a pool big enough for all: every event is in the file. */
static void exact_accounting_no_drops(void **state)
{
	uint64_t events = ts_sanitized() ? 100000 : 1000000;

	(void)state;
	/* (65536 - 64) / 8 = 8184 records per buffer; 2 x 123 buffers at most. */
	run_accounting(2, events, 65536, ts_sanitized() ? 40 : 260, 0);
}

/* The same with a pool far too small: drops, counted to the event, never corruption. */
static void exact_accounting_small_pool(void **state)
{
	(void)state;
	run_accounting(ts_sanitized() ? 2 : 4, ts_sanitized() ? 100000 : 1000000, 4096, 16, 1);
}

/* 1000 short-lived threads, a few at a time: every one's events are in the file. */
static void thread_churn(void **state)
{
	enum { THREADS = 1000, EVENTS = 10, WAVE = 8 };
	static struct writer wr[THREADS];
	static struct tally t;
	static unsigned char id_seen[THREADS + 1];
	pthread_t th[WAVE];
	char path[512], map_path[600];
	static struct mp_thread mt[THREADS + 64];
	size_t n, nt;
	char *map;
	unsigned i, k;

	(void)state;
	fid_shift = 4;
	assert_int_equal(ts_init(256, THREADS + 8, 0), 0);
	assert_int_equal(xfdr_start(), 0);
	for (i = 0; i < THREADS; i += WAVE) {
		for (k = 0; k < WAVE && i + k < THREADS; k++) {
			wr[i + k] = (struct writer){.index = i + k, .events = EVENTS};
			assert_int_equal(pthread_create(&th[k], NULL, writer_fixed, &wr[i + k]), 0);
		}
		for (k = 0; k < WAVE && i + k < THREADS; k++)
			assert_int_equal(pthread_join(th[k], NULL), 0);
	}
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	tally_file(path, THREADS, &t);
	for (i = 0; i < THREADS; i++) {
		if (t.recorded[i] != EVENTS)
			fail_msg("thread %u: %llu of %d events", i,
				 (unsigned long long)t.recorded[i], EVENTS);
	}
	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &n);
	nt = mp_threads(map, mt, sizeof(mt) / sizeof(mt[0]));
	/* Thread ids: one per thread of the file, 1 to THREADS, as the .map pairs them. */
	memset(id_seen, 0, sizeof(id_seen));
	for (i = 0; i < THREADS; i++) {
		const struct mp_thread *th = mp_thread_of(mt, nt, wr[i].tid);
		uint32_t id;

		assert_non_null(th);
		id = th->id;
		assert_int_equal(t.thread_id[i], id);
		assert_true(id >= 1 && id <= THREADS);
		assert_false(id_seen[id]);
		id_seen[id] = 1;
	}
	/* Every exited thread is in the thread table; nothing was dropped. */
	assert_true(ts_count(map, "\nthread\t") >= THREADS);
	assert_int_equal(mp_number(map, "dropped\ttotal"), 0);
	assert_int_equal(mp_number(map, "buffers_written"), THREADS);
	free(map);
	if (ts_llvm_yaml(path, NULL))
		fail_msg("llvm-xray rejects %s", path);
	unlink(path);
	unlink(map_path);
	fid_shift = 19;
}

/* Snapshots while two writers run: each one valid, each writer's events a gap-free prefix. */
static void flush_while_writers_run(void **state)
{
	enum { WRITERS = 2, SNAPSHOTS = 12 };
	/* Static: a failing check leaves this frame while the writers still use these. */
	static struct writer wr[WRITERS];
	static pthread_t th[WRITERS];
	static pthread_barrier_t go;
	static volatile int stop;
	static struct tally t;
	uint64_t last[WRITERS] = {0}, first_total = 0, last_total = 0;
	char path[512], map_path[600];
	unsigned w, s;

	(void)state;
	stop = 0;
	assert_int_equal(ts_init(16384, 96, 0), 0);
	assert_int_equal(xfdr_start(), 0);
	pthread_barrier_init(&go, NULL, WRITERS + 1);
	for (w = 0; w < WRITERS; w++) {
		wr[w] = (struct writer){.index = w, .events = 1u << 19, .stop = &stop, .go = &go};
		assert_int_equal(pthread_create(&th[w], NULL, writer_until_stopped, &wr[w]), 0);
	}
	pthread_barrier_wait(&go);
	for (s = 0; s < SNAPSHOTS; s++) {
		struct timespec nap = {.tv_sec = 0, .tv_nsec = 5000000};

		nanosleep(&nap, NULL);
		assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
		tally_file(path, WRITERS, &t);
		last_total = 0;
		for (w = 0; w < WRITERS; w++) {
			/* A later snapshot holds at least what an earlier one did. */
			assert_true(t.recorded[w] >= last[w]);
			last[w] = t.recorded[w];
			last_total += t.recorded[w];
		}
		if (s == 0)
			first_total = last_total;
		if ((s == 0 || s == SNAPSHOTS - 1) && ts_llvm_yaml(path, NULL))
			fail_msg("llvm-xray rejects snapshot %u: %s", s, path);
		snprintf(map_path, sizeof(map_path), "%s.map", path);
		unlink(path);
		unlink(map_path);
	}
	/* The writers were recording while the snapshots were taken. */
	assert_true(last_total > first_total);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (w = 0; w < WRITERS; w++)
		assert_int_equal(pthread_join(th[w], NULL), 0);
	pthread_barrier_destroy(&go);
	assert_int_equal(xfdr_stop(), 0);
	/* After the writers stopped: the last file accounts for every event issued. */
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	tally_file(path, WRITERS, &t);
	{
		size_t n;
		char *map;
		uint64_t recorded = 0, issued = 0;

		snprintf(map_path, sizeof(map_path), "%s.map", path);
		map = (char *)ts_slurp(map_path, &n);
		for (w = 0; w < WRITERS; w++) {
			recorded += t.recorded[w];
			issued += wr[w].events;
		}
		assert_int_equal(recorded + mp_number(map, "dropped\ttotal"), issued);
		free(map);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(exact_accounting_no_drops),
	    cmocka_unit_test(exact_accounting_small_pool),
	    cmocka_unit_test(thread_churn),
	    cmocka_unit_test(flush_while_writers_run),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
