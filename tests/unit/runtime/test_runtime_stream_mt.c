/*
 * tests/unit/runtime/test_runtime_stream_mt.c - mode=stream with threads recording at once:
 * every thread's events reach the file whole and in its order while the writer keeps up, and
 * when it cannot, what is in the file and what was counted as stream_behind add up to what the
 * threads recorded. Run under ThreadSanitizer too (make check-tsan), with the writer thread.
 *
 * Each thread records the known sequence of runtime_test.h. Paced: each round every thread
 * records one buffer's worth at most, then all wait until the writer has handed every full
 * buffer back, so no claim can fail (four threads hold at most two buffers each of the eight).
 */
#include <inttypes.h>
#include <pthread.h>

#include "tests/support/runtime_test.h"
#include "tests/support/stream_test.h"

enum {
	BUFFER = 4096,
	BUFFERS = 8,
	THREADS = 4,
	PER_ROUND = (BUFFER - 128) / 8, /* less than a buffer of function records */
	ROUNDS = 40,
	WAIT_S = 20,
};

static char dir[256];
static pthread_barrier_t round_barrier;
static int paced;
static uint64_t per_thread = (uint64_t)ROUNDS * PER_ROUND;

static void fresh_dir(const char *name)
{
	st_fresh_dir(dir, sizeof(dir), name);
}

static void *recorder(void *arg)
{
	uint64_t k;

	for (k = 0; k < per_thread; k++) {
		ts_seq_issue(k);
		if (paced && k % PER_ROUND == PER_ROUND - 1) {
			if (pthread_barrier_wait(&round_barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
				st_wait_writer_caught_up(WAIT_S);
			pthread_barrier_wait(&round_barrier);
		}
	}
	return arg;
}

static void run_threads(char *path, size_t n)
{
	struct xfdr_options o;
	pthread_t t[THREADS];
	int i;

	ts_options(&o, BUFFER, BUFFERS, XFDR_MODE_STREAM);
	o.output = dir;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_barrier_init(&round_barrier, NULL, THREADS), 0);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, recorder, NULL), 0);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&round_barrier);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, n), 0);
}

/* Per thread id: the next event of the sequence it must hold. */
struct per_thread_seq {
	uint16_t ids[THREADS];
	uint64_t next[THREADS];
	int n;
};

static int check_thread_seq(const struct xfdr_event *ev, void *arg)
{
	struct per_thread_seq *s = arg;
	int i;

	if (ev->type != XFDR_EVENT_FUNCTION)
		return 0;
	for (i = 0; i < s->n && s->ids[i] != ev->thread_id; i++)
		;
	if (i == s->n) {
		assert_true(s->n < THREADS);
		s->ids[s->n++] = ev->thread_id;
	}
	if (ev->function_id != ts_seq_fid(s->next[i]) ||
	    ev->action != (unsigned)ts_seq_is_exit(s->next[i]))
		fail_msg("thread %u event %" PRIu64 ": fid %u action %u", ev->thread_id, s->next[i],
			 ev->function_id, ev->action);
	s->next[i]++;
	return 0;
}

static void threads_whole_and_in_order(void **state)
{
	struct per_thread_seq s = {0};
	char path[512];
	int i;

	(void)state;
	fresh_dir("paced");
	paced = 1;
	run_threads(path, sizeof(path));
	ts_each_event(path, XFDR_ORDER_FILE, check_thread_seq, &s);
	assert_int_equal(s.n, THREADS);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(s.next[i], per_thread);
	ts_tools_accept(path);
}

static int count_fn(const struct xfdr_event *ev, void *arg)
{
	*(uint64_t *)arg += ev->type == XFDR_EVENT_FUNCTION;
	return 0;
}

/* Unpaced: the threads outrun the writer; the file and the drops account for every event. */
static void threads_outrunning_the_writer_are_accounted(void **state)
{
	char path[512], map_path[600], v[64], *map;
	uint64_t in_file = 0, behind;
	size_t bytes;

	(void)state;
	fresh_dir("unpaced");
	paced = 0;
	per_thread = 20 * BUFFERS * BUFFER / 8; /* each thread alone twenty pools */
	run_threads(path, sizeof(path));
	ts_each_event(path, XFDR_ORDER_FILE, count_fn, &in_file);
	snprintf(map_path, sizeof(map_path), "%s.map", path);
	map = (char *)ts_slurp(map_path, &bytes);
	assert_non_null(ts_map_value(map, "stream_behind", v, sizeof(v)));
	behind = strtoull(v, NULL, 10);
	assert_non_null(ts_map_value(map, "dropped\ttotal", v, sizeof(v)));
	assert_int_equal(strtoull(v, NULL, 10), behind);
	free(map);
	print_message("stream of %d threads: %" PRIu64 " events in the file, %" PRIu64
		      " stream_behind\n",
		      THREADS, in_file, behind);
	assert_int_equal(in_file + behind, THREADS * per_thread);
	ts_tools_accept(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(threads_whole_and_in_order),
	    cmocka_unit_test(threads_outrunning_the_writer_are_accounted),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
