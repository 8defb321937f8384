/*
 * tests/unit/runtime/test_runtime_drops_mt.c - drops keep a trace balanced: when an entry is
 * dropped, its exit is dropped too, whatever the cause (no_buffer, too_large, reentrant,
 * no_thread_slot), and every dropped event is counted, so that
 *   function records in the trace + drops + overwritten_events = events issued
 * holds per thread. The oracle is llvm-xray's YAML (each thread's exits must close its open
 * calls, innermost first) and the xfdr reader (`xfdr account` and `xfdr stack` must find no
 * exit without an entry).
 *
 * thread_max is 2 in this binary (the first init of a process fixes it): the no_thread_slot
 * case needs a full table; the other cases use at most two recording threads.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/support/map_parse.h"
#include "tests/support/runtime_test.h"

enum { THREAD_MAX = 2, IDS_MAX = 64 };

static int init_drops(size_t buffer_size, size_t buffer_max, int mode)
{
	struct xfdr_options o;

	ts_options(&o, buffer_size, buffer_max, mode);
	o.thread_max = THREAD_MAX;
	return xfdr_init(&o);
}

/* ---- The oracle --------------------------------------------------------------------------- */

/* One thread of the YAML: its open calls, and its function records in order. */
struct ythread {
	unsigned id;
	uint32_t stack[4096];
	size_t depth;
	uint64_t records;
	/* the first IDS_MAX records as "+fid" / "-fid" (entries positive, exits negative) */
	int64_t seq[IDS_MAX];
};

struct yview {
	struct ythread t[8];
	size_t threads;
	uint64_t customs;
};

static struct ythread *ythread_of(struct yview *v, unsigned id)
{
	size_t i;

	for (i = 0; i < v->threads; i++)
		if (v->t[i].id == id)
			return &v->t[i];
	if (v->threads == sizeof(v->t) / sizeof(v->t[0]))
		fail_msg("more than %zu threads in the YAML", v->threads);
	memset(&v->t[v->threads], 0, sizeof(v->t[0]));
	v->t[v->threads].id = id;
	return &v->t[v->threads++];
}

/*
 * Read path with llvm-xray (it must accept it) and check that every exit closes its thread's
 * innermost open call. Then `xfdr account` and `xfdr stack` must accept it without counting
 * an exit without its entry.
 */
static void check_balanced(const char *path, struct yview *v)
{
	const char *line, *eol = NULL, *f;
	struct child_result r;
	char *yaml;

	memset(v, 0, sizeof(*v));
	assert_int_equal(ts_llvm_yaml(path, &yaml), 0);
	line = strstr(yaml, "records:");
	assert_non_null(line);
	for (; (line = ts_next_record(line, &eol)); line = eol) {
		char kind[32] = "";
		unsigned fid = 0, thread = 0;
		struct ythread *t;
		int entry;

		/* not sscanf: it would measure the whole rest of the text each time */
		if ((f = ts_field(line, eol, "kind: "))) {
			size_t k = 0;

			while (f + k < eol && f[k] != ',' && k < sizeof(kind) - 1) {
				kind[k] = f[k];
				k++;
			}
			kind[k] = '\0';
		}
		if (strncmp(kind, "function-", 9)) {
			v->customs++;
			continue;
		}
		if ((f = ts_field(line, eol, "func-id: ")))
			fid = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "thread: ")))
			thread = (unsigned)strtoul(f, NULL, 10);
		t = ythread_of(v, thread);
		entry = !strncmp(kind, "function-enter", 14);
		if (t->records < IDS_MAX)
			t->seq[t->records] = entry ? (int64_t)fid : -(int64_t)fid;
		t->records++;
		if (entry) {
			if (t->depth == sizeof(t->stack) / sizeof(t->stack[0]))
				fail_msg("thread %u deeper than the checker follows", thread);
			t->stack[t->depth++] = fid;
			continue;
		}
		if (!t->depth)
			fail_msg("%s: thread %u: exit of %u without its entry", path, thread, fid);
		if (t->stack[t->depth - 1] != fid)
			fail_msg("%s: thread %u: exit of %u closes the call of %u", path, thread,
				 fid, t->stack[t->depth - 1]);
		t->depth--;
	}
	free(yaml);
	assert_int_equal(child_xfdr(&r, "account", path, NULL), 0);
	if (strstr(r.err, "without an entry"))
		fail_msg("xfdr account: %s", r.err);
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", path, NULL), 0);
	if (strstr(r.err, "without an entry"))
		fail_msg("xfdr stack: %s", r.err);
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "verify", path, NULL), 0);
	child_result_free(&r);
}

/* The thread of the YAML whose records are exactly want[0..n) (+fid entry, -fid exit). */
static void expect_thread_records(const struct yview *v, unsigned id, const int64_t *want, size_t n)
{
	const struct ythread *t = NULL;
	size_t i;

	for (i = 0; i < v->threads; i++)
		if (v->t[i].id == id)
			t = &v->t[i];
	if (!t)
		fail_msg("thread %u has no records", id);
	if (t->records != n)
		fail_msg("thread %u: %llu records, %zu expected", id,
			 (unsigned long long)t->records, n);
	for (i = 0; i < n; i++)
		if (t->seq[i] != want[i])
			fail_msg("thread %u: record %zu is %lld, %lld expected", id, i,
				 (long long)t->seq[i], (long long)want[i]);
}

static int file_has(const char *path, const char *needle)
{
	size_t n;
	uint8_t *data = ts_slurp(path, &n);
	int found = memmem(data, n, needle, strlen(needle)) != NULL;

	free(data);
	return found;
}

/* ---- no_buffer in ring mode ---------------------------------------------------------------- */

struct holder {
	pthread_barrier_t *sync;
	uint32_t tid;
};

/* Takes a buffer with one entry, holds it until told, then exits (the buffer becomes full). */
static void *holder_run(void *arg)
{
	struct holder *h = arg;

	h->tid = ts_tid();
	xfdr_enter(100);
	pthread_barrier_wait(h->sync);
	pthread_barrier_wait(h->sync);
	return NULL;
}

/*
 * Ring mode, one buffer: while another thread owns it, this thread's entry of 1 finds no
 * buffer. Once that thread exited, the calls inside 1 reuse its buffer and are recorded; the
 * exit of 1 must be dropped with its entry (before, it was recorded alone). Its holder's
 * buffer held one function record: overwritten_events 1.
 */
static void ring_no_buffer_drops_the_exit(void **state)
{
	static const int64_t want[] = {2, -2, 3, -3};
	pthread_barrier_t sync;
	struct holder h = {.sync = &sync};
	static struct mp_thread mt[8];
	const struct mp_thread *me, *other;
	struct yview *v = malloc(sizeof(*v));
	char path[512], *map;
	pthread_t th;
	size_t n;

	(void)state;
	assert_non_null(v);
	assert_int_equal(init_drops(4096, 1, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_barrier_init(&sync, NULL, 2), 0);
	assert_int_equal(pthread_create(&th, NULL, holder_run, &h), 0);
	pthread_barrier_wait(&sync);
	xfdr_enter(1); /* no buffer: the holder owns the only one */
	pthread_barrier_wait(&sync);
	assert_int_equal(pthread_join(th, NULL), 0);
	xfdr_enter(2); /* reuses the holder's buffer */
	xfdr_exit(2);
	xfdr_exit(1); /* dropped: its entry was */
	xfdr_enter(3);
	xfdr_exit(3);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);
	pthread_barrier_destroy(&sync);

	check_balanced(path, v);
	map = mp_read(path);
	n = mp_threads(map, mt, 8);
	me = mp_thread_of(mt, n, ts_tid());
	other = mp_thread_of(mt, n, h.tid);
	assert_non_null(me);
	assert_non_null(other);
	expect_thread_records(v, me->id, want, 4);
	assert_int_equal(v->threads, 1);
	assert_int_equal(me->no_buffer, 2);
	assert_int_equal(mp_thread_drops(me), 2);
	assert_int_equal(other->overwritten, 1);
	assert_int_equal(other->overwritten_events, 1);
	assert_int_equal(mp_thread_drops(other), 0);
	assert_int_equal(mp_number(map, "overwritten_events"), 1);
	assert_int_equal(mp_number(map, "dropped\ttotal"), 2);
	/* The dropped call is left out of every stack context: the trace has none. */
	assert_false(file_has(path, XFDR_STACK_MAGIC));
	free(map);
	free(v);
}

/* ---- too_large ------------------------------------------------------------------------- */

/*
 * An entry with more arguments than an empty buffer holds is dropped (too_large); the calls
 * inside it are recorded, its exit is dropped and counted too.
 */
static void too_large_entry_drops_its_exit(void **state)
{
	static const int64_t want[] = {1, 3, -3, 4, -4, -1};
	static uint64_t args[300];
	static struct mp_thread mt[8];
	const struct mp_thread *me;
	struct yview *v = malloc(sizeof(*v));
	char path[512], *map;
	size_t n;

	(void)state;
	assert_non_null(v);
	assert_int_equal(init_drops(128, 8, XFDR_MODE_BOUNDED), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(1);
	xfdr_enter_args(2, args, 5); /* 8 + 5 * 16 bytes: more than an empty buffer's 64 */
	xfdr_enter(3);
	xfdr_exit(3);
	xfdr_exit(2);
	xfdr_enter(4);
	xfdr_exit(4);
	xfdr_exit(1);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);

	check_balanced(path, v);
	map = mp_read(path);
	n = mp_threads(map, mt, 8);
	me = mp_thread_of(mt, n, ts_tid());
	assert_non_null(me);
	expect_thread_records(v, me->id, want, 6);
	assert_int_equal(me->too_large, 2);
	assert_int_equal(mp_thread_drops(me), 2);
	assert_int_equal(mp_number(map, "dropped\ttotal"), 2);
	free(map);
	free(v);
}

/*
 * Deeper than the ids a stack context keeps (128), a dropped entry takes its whole call with
 * it: the calls inside are dropped and counted too (too_large), the calls after it are not.
 */
static void too_large_deep_drops_the_whole_call(void **state)
{
	enum { DEPTH = 130, BASE = 10 };
	static uint64_t args[300];
	static struct mp_thread mt[8];
	const struct mp_thread *me;
	const struct ythread *t;
	struct yview *v = malloc(sizeof(*v));
	char path[512], *map;
	unsigned i;
	size_t n;

	(void)state;
	assert_non_null(v);
	assert_int_equal(init_drops(4096, 8, XFDR_MODE_BOUNDED), 0);
	assert_int_equal(xfdr_start(), 0);
	for (i = 0; i < DEPTH; i++)
		xfdr_enter(BASE + i);
	xfdr_enter_args(2, args, 300); /* 8 + 300 * 16 bytes: more than 4096 */
	xfdr_enter(3);
	xfdr_exit(3);
	xfdr_exit(2);
	xfdr_enter(4);
	xfdr_exit(4);
	for (i = DEPTH; i-- > 0;)
		xfdr_exit(BASE + i);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);

	check_balanced(path, v);
	map = mp_read(path);
	n = mp_threads(map, mt, 8);
	me = mp_thread_of(mt, n, ts_tid());
	assert_non_null(me);
	assert_int_equal(v->threads, 1);
	t = &v->t[0];
	assert_int_equal(t->records, 2 * DEPTH + 2);
	assert_int_equal(t->depth, 0);
	assert_int_equal(me->too_large, 4);
	assert_int_equal(mp_thread_drops(me), 4);
	/* entries at depths 128 and 129, and 4 at 130; not the dropped ones */
	assert_int_equal(me->stack_overflow, 3);
	free(map);
	free(v);
}

/* ---- reentrant ------------------------------------------------------------------------- */

static volatile sig_atomic_t handled, handled_inside;

/*
 * A signal handler that runs instrumented code: two nested calls around a custom event,
 * whose result says whether the handler found its thread inside the runtime (-EDEADLK).
 */
static void on_signal(int sig)
{
	static const char tag[8] = "handler";

	(void)sig;
	xfdr_enter(50);
	xfdr_enter(51);
	if (xfdr_custom_event(tag, sizeof(tag)) == -EDEADLK)
		handled_inside = handled_inside + 1;
	xfdr_exit(51);
	xfdr_exit(50);
	handled = handled + 1;
}

/*
 * A signal handler's calls while its thread is inside the runtime are dropped (reentrant),
 * entries and exits alike: the guard stays taken while the handler runs, so the drops come in
 * whole handlers (5 events each) and every exit in the trace has its entry.
 *
 * The buffers are 1 MiB so that the thread fills at most 16 (at most 400000 rounds of 32
 * bytes and the handlers'): llvm-xray 14 orders a thread's buffers with a comparator that is
 * no strict weak order, which keeps the file's order only up to 16 of them, and then sorts the
 * records by TSC. An exit whose clock was read before a handler ran takes the handler's last
 * TSC (the thread's time never goes back), so the two tie; with the buffers out of order and
 * the tie across a buffer boundary, the exit came out before the handler's and the check
 * failed now and then under ThreadSanitizer, whose handlers run more slowly.
 */
static void reentrant_drops_whole_calls(void **state)
{
	enum { BUFFER = 1 << 20, LLVM_ORDERED_BUFFERS = 16 };
	struct sigaction sa, old;
	struct stat st;
	struct sigevent sev;
	struct itimerspec every = {.it_interval = {0, 20000}, .it_value = {0, 20000}};
	timer_t timer;
	static struct mp_thread mt[8];
	const struct mp_thread *me;
	struct yview *v = malloc(sizeof(*v));
	unsigned rounds, i;
	char path[512], *map;
	uint64_t issued, calls, inside;
	size_t n;

	(void)state;
	assert_non_null(v);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	handled = 0;
	handled_inside = 0;
	assert_int_equal(init_drops(BUFFER, LLVM_ORDERED_BUFFERS, XFDR_MODE_BOUNDED), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(1); /* registered before the first signal */
	/* SIGUSR1 to this thread every 20 us */
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev._sigev_un._tid = (pid_t)ts_tid(); /* sigev_notify_thread_id */
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &sev, &timer), 0);
	assert_int_equal(timer_settime(timer, 0, &every, NULL), 0);
	/* until 20 handlers found the thread inside the runtime (the pool holds it all) */
	for (i = 0; i < 400000 && (i < 20000 || handled < 200 || handled_inside < 20); i++) {
		xfdr_enter(2);
		xfdr_enter(3);
		xfdr_exit(3);
		xfdr_exit(2);
	}
	rounds = i;
	assert_int_equal(timer_delete(timer), 0);
	xfdr_exit(1);
	calls = (uint64_t)handled;
	inside = (uint64_t)handled_inside;
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);

	/* this thread's buffers and thread 0's drop counts: what llvm-xray orders right */
	assert_int_equal(stat(path, &st), 0);
	if ((size_t)st.st_size > XFDR_FILE_HEADER_BYTES + (LLVM_ORDERED_BUFFERS + 1) * BUFFER)
		fail_msg("%lld bytes: more than %d buffers of %zu bytes", (long long)st.st_size,
			 LLVM_ORDERED_BUFFERS, (size_t)BUFFER);
	check_balanced(path, v);
	map = mp_read(path);
	n = mp_threads(map, mt, 8);
	me = mp_thread_of(mt, n, ts_tid());
	assert_non_null(me);
	assert_int_equal(v->threads, 1);
	print_message("reentrant: %u rounds, %llu handlers, %llu inside the runtime\n", rounds,
		      (unsigned long long)calls, (unsigned long long)inside);
	/* ThreadSanitizer defers signals to its own safe points: maybe never inside. */
	assert_true(inside > 0 || ts_sanitized());
	/* Every event of the handlers that found the thread inside the runtime, nothing else. */
	assert_int_equal(me->reentrant, 5 * inside);
	assert_int_equal(me->no_buffer + me->too_large, 0);
	/* Function records: this thread's, and 4 of each handler that was not dropped. */
	issued = 2 + 4 * (uint64_t)rounds + 4 * calls;
	if (v->t[0].records + 4 * inside != issued)
		fail_msg("%llu records + %llu dropped, %llu issued",
			 (unsigned long long)v->t[0].records, (unsigned long long)(4 * inside),
			 (unsigned long long)issued);
	free(map);
	free(v);
}

/* ---- no_thread_slot ---------------------------------------------------------------------- */

struct slotless {
	pthread_barrier_t *sync;
	uint32_t tid;
};

/*
 * Enters 1 while the table is full (dropped, no slot), then, once a slot is free again,
 * enough events for the runtime to retry registering (every 1024): the rest of call 1 is
 * dropped with it, its exit too; the call after it is recorded.
 */
static void *slotless_run(void *arg)
{
	struct slotless *c = arg;
	unsigned i;

	c->tid = ts_tid();
	pthread_barrier_wait(c->sync); /* the holder has the second slot */
	xfdr_enter(1);
	pthread_barrier_wait(c->sync); /* entered 1 */
	pthread_barrier_wait(c->sync); /* the holder exited */
	for (i = 0; i < 2000; i++) {
		xfdr_enter(5);
		xfdr_exit(5);
	}
	xfdr_exit(1);
	xfdr_enter(2);
	xfdr_exit(2);
	return NULL;
}

static void no_thread_slot_drops_the_whole_call(void **state)
{
	static const int64_t want[] = {2, -2};
	pthread_barrier_t hsync, csync;
	struct holder h = {.sync = &hsync};
	struct slotless c = {.sync = &csync};
	static struct mp_thread mt[8];
	const struct mp_thread *other;
	struct yview *v = malloc(sizeof(*v));
	char path[512], *map;
	pthread_t hth, cth;
	size_t n;

	(void)state;
	assert_non_null(v);
	assert_int_equal(init_drops(4096, 8, XFDR_MODE_BOUNDED), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(7); /* this thread has the first slot */
	xfdr_exit(7);
	assert_int_equal(pthread_barrier_init(&hsync, NULL, 2), 0);
	assert_int_equal(pthread_barrier_init(&csync, NULL, 2), 0);
	assert_int_equal(pthread_create(&hth, NULL, holder_run, &h), 0);
	pthread_barrier_wait(&hsync);
	assert_int_equal(pthread_create(&cth, NULL, slotless_run, &c), 0);
	pthread_barrier_wait(&csync);
	pthread_barrier_wait(&csync);
	pthread_barrier_wait(&hsync);
	assert_int_equal(pthread_join(hth, NULL), 0);
	pthread_barrier_wait(&csync);
	assert_int_equal(pthread_join(cth, NULL), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);
	pthread_barrier_destroy(&hsync);
	pthread_barrier_destroy(&csync);

	check_balanced(path, v);
	map = mp_read(path);
	n = mp_threads(map, mt, 8);
	other = mp_thread_of(mt, n, c.tid);
	assert_non_null(other);
	expect_thread_records(v, other->id, want, 2);
	assert_int_equal(mp_thread_drops(other), 0);
	/* entry and exit of 1, and the 4000 events inside it */
	assert_int_equal(mp_number(map, "dropped\tno_thread_slot"), 4002);
	assert_int_equal(mp_number(map, "dropped\ttotal"), 4002);
	free(map);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(ring_no_buffer_drops_the_exit),
	    cmocka_unit_test(too_large_entry_drops_its_exit),
	    cmocka_unit_test(too_large_deep_drops_the_whole_call),
	    cmocka_unit_test(reentrant_drops_whole_calls),
	    cmocka_unit_test(no_thread_slot_drops_the_whole_call),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
