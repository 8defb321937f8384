/*
 * tests/unit/runtime/test_runtime_crash_busy.c - the fatal path (crash, terminate) leaves a trace
 * while another flush is stuck, and the two flushes share nothing they could spoil for each other.
 *
 * The stuck flush is held, not hoped for: write(2) is interposed, and the flushing thread's
 * trace header write (its first write after the snapshot) blocks until the test lets it go,
 * in most cases never, as a write to a file system that does not answer. Each case re-executes
 * this binary as "--child MODE DIR": thread A records and calls xfdr_flush(), which is held;
 * once it is, the main thread B records, then crashes or is terminated (or signals A so that
 * A itself is the thread on the fatal path). The parent checks how the child ended and how
 * fast, and reads what it left: a complete trace beside A's ".part", accepted by `xfdr verify`
 * and llvm-xray, holding the events of both threads, and for a crash its XFDRCRSH event and the
 * .map's crash line.
 *
 * Before the fatal path had a flush of its own, the crash retried the busy flush for 2 s and the
 * process died with nothing but A's ".part".
 *
 * Not an _mt test: ThreadSanitizer cannot follow a process that ends by its crash. Under
 * AddressSanitizer (XFDR_SANITIZED=1) its own SIGSEGV handler ends the crashing child with
 * status 1 (ts_expect_crash_end()).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>

#include "runtime/pool/pool.h"
#include "tests/support/map_parse.h"
#include "tests/support/runtime_test.h"

enum { FID_A = 1, FID_B = 2, FID_C = 3 };

#define CHILD_TIMEOUT_S 60
#define PATH_BYTES 512
/*
 * The child's pool is 1 MiB: its watchdog gives the fatal path 5 s. A flush that waits for the
 * held one waits 2 s and then has nothing; one that does not wait takes milliseconds.
 */
#define FAST_S 4.0

/* ---- the child ------------------------------------------------------------------------ */

static ssize_t (*real_write)(int, const void *, size_t);

/*
 * The header write of A's flush is held (once armed) until a_release is posted; that of B's
 * (the fatal path's, in mode "both") posts a_release and waits for A's flush to return first.
 */
static uint32_t a_tid, a_armed, b_tid, b_armed;
static sem_t a_held, a_release, a_done;

ssize_t write(int fd, const void *buf, size_t n)
{
	if (!real_write)
		real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (n == XFDR_FILE_HEADER_BYTES) {
		uint32_t me = ts_tid();

		if (me == __atomic_load_n(&a_tid, __ATOMIC_ACQUIRE) &&
		    __atomic_exchange_n(&a_armed, 0, __ATOMIC_ACQ_REL)) {
			sem_post(&a_held);
			while (sem_wait(&a_release))
				;
		} else if (me == __atomic_load_n(&b_tid, __ATOMIC_ACQUIRE) &&
			   __atomic_exchange_n(&b_armed, 0, __ATOMIC_ACQ_REL)) {
			sem_post(&a_release);
			while (sem_wait(&a_done))
				;
		}
	}
	return real_write(fd, buf, n);
}

static void say(const char *fmt, ...)
{
	char text[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (real_write(1, text, (size_t)n) != n)
		_exit(9);
}

static void *thread_a(void *arg)
{
	char path[PATH_BYTES];
	int rc;

	(void)arg;
	xfdr_enter(FID_A);
	xfdr_exit(FID_A);
	xfdr_enter(FID_A);
	say("a_tid=%u\n", ts_tid());
	__atomic_store_n(&a_tid, ts_tid(), __ATOMIC_RELEASE);
	__atomic_store_n(&a_armed, 1, __ATOMIC_RELEASE);
	rc = xfdr_flush(path, sizeof(path));
	say("a_flush=%d\n", rc);
	sem_post(&a_done);
	for (;;)
		pause();
	return NULL;
}

static int child_main(const char *mode, const char *dir)
{
	struct xfdr_options o;
	pthread_t a;

	real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	sem_init(&a_held, 0, 0);
	sem_init(&a_release, 0, 0);
	sem_init(&a_done, 0, 0);
	xfdr_options_default(&o);
	o.buffer_size = 65536;
	o.buffer_max = 16;
	o.flush_at_exit = 0;
	o.flush_on_crash = 1;
	o.flush_on_terminate = 1;
	o.output = dir;
	o.start = 1;
	if (xfdr_init(&o))
		return 2;
	xfdr_enter(FID_B);
	if (pthread_create(&a, NULL, thread_a, NULL))
		return 3;
	/* A holds the flush now, inside its header write. */
	while (sem_wait(&a_held))
		;
	if (!strcmp(mode, "both")) {
		__atomic_store_n(&b_tid, ts_tid(), __ATOMIC_RELEASE);
		__atomic_store_n(&b_armed, 1, __ATOMIC_RELEASE);
	}
	xfdr_enter(FID_C);
	if (!strcmp(mode, "crash_a") || !strcmp(mode, "term_a")) {
		/* A itself takes the fatal signal, inside its own xfdr_flush(). */
		pthread_kill(a, !strcmp(mode, "crash_a") ? SIGABRT : SIGTERM);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "term"))
		raise(SIGTERM);
	else if (!strcmp(mode, "both"))
		abort();
	else
		ts_store_to_null(1);
	xfdr_exit(FID_C);
	return 4;
}

/* ---- the parent ----------------------------------------------------------------------- */

struct ended {
	char dir[PATH_BYTES];
	struct child_result r;
	double seconds;
	uint32_t a_tid;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run_mode(const char *mode, struct ended *e)
{
	char *argv[] = {"test_runtime_crash_busy", "--child", (char *)mode, e->dir, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .program = "/proc/self/exe",
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = CHILD_TIMEOUT_S,
	};
	const char *t;
	double t0 = now_s();

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s%s/", ts_dir, mode);
	assert_int_equal(mkdir(e->dir, 0755), 0);
	child_run(&spec, &e->r);
	e->seconds = now_s() - t0;
	t = strstr(e->r.out, "a_tid=");
	if (!t)
		fail_msg("the child did not get to its flush: status %d, stderr:\n%s", e->r.status,
			 e->r.err);
	e->a_tid = (uint32_t)strtoul(t + 6, NULL, 10);
}

/* The file <n> (with suffix) of the child in its directory. */
static void child_file(const struct ended *e, unsigned n, const char *suffix, char *out,
		       size_t out_bytes)
{
	snprintf(out, out_bytes, "%sxfdr-test_runtime_crash_busy-%d-%u%s", e->dir, (int)e->r.pid, n,
		 suffix);
}

static int exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* Ended by sig, fast, not by the watchdog, and said so: "xfdr: SIGxxx: wrote <trace>". */
static void expect_end(const struct ended *e, int sig, const char *sig_name, const char *trace)
{
	char line[PATH_BYTES + 64];

	ts_expect_crash_end(&e->r, sig);
	if (strstr(e->r.err, "giving up (the watchdog)") || e->seconds >= FAST_S)
		fail_msg("the fatal path took %.1f s; stderr:\n%s", e->seconds, e->r.err);
	snprintf(line, sizeof(line), "xfdr: %s: wrote %s\n", sig_name, trace);
	if (!strstr(e->r.err, line))
		fail_msg("stderr lacks '%s':\n%s", line, e->r.err);
}

/* What one thread's events in a trace are. */
struct tally {
	uint32_t thread_id;
	unsigned fid_a, fid_b, fid_c, crashes, others;
};

static int tally_event(const struct xfdr_event *ev, void *arg)
{
	struct tally *t = arg;

	if (ev->thread_id != t->thread_id)
		return 0;
	if (ev->type == XFDR_EVENT_CUSTOM && ev->payload_bytes >= 8 &&
	    !memcmp(ev->payload, XFDR_CRASH_MAGIC, 8))
		t->crashes++;
	else if (ev->type == XFDR_EVENT_FUNCTION && ev->function_id == FID_A)
		t->fid_a++;
	else if (ev->type == XFDR_EVENT_FUNCTION && ev->function_id == FID_B)
		t->fid_b++;
	else if (ev->type == XFDR_EVENT_FUNCTION && ev->function_id == FID_C)
		t->fid_c++;
	else if (ev->type == XFDR_EVENT_FUNCTION)
		t->others++;
	return 0;
}

/* The events of the thread with kernel tid in trace (its thread id from the .map). */
static void tally_of(const char *trace, const char *map, uint32_t tid, struct tally *t)
{
	static struct mp_thread mt[8];
	const struct mp_thread *me;
	size_t n = mp_threads(map, mt, 8);

	me = mp_thread_of(mt, n, tid);
	if (!me)
		fail_msg("%s.map has no thread line of tid %u", trace, tid);
	memset(t, 0, sizeof(*t));
	t->thread_id = me->id;
	ts_each_event(trace, XFDR_ORDER_FILE, tally_event, t);
}

/* The .map's "crash" lines; *tid the last one's thread. */
static unsigned map_crashes(const char *map, unsigned sig, uint32_t *tid)
{
	const char *p = map;
	unsigned n = 0, s, t;

	while ((p = strstr(p, "crash\t"))) {
		if (p == map || p[-1] == '\n') {
			assert_int_equal(sscanf(p, "crash\t%u\t%*[^\t]\t%*d\t%*x\t%u", &s, &t), 2);
			assert_int_equal(s, sig);
			*tid = t;
			n++;
		}
		p += 6;
	}
	return n;
}

/*
 * The trace of the fatal path, file <n> 1 (A's flush has <n> 0 and is still a ".part", unless
 * a_completes): accepted by both tools, with A's events and B's, its .map with one crash line
 * of crash_tid (0: none).
 */
static void expect_fatal_trace(const struct ended *e, const char *trace, unsigned sig,
			       uint32_t crash_tid, int a_completes)
{
	char part[PATH_BYTES + 64];
	struct tally a, b;
	uint32_t tid = 0;
	char *map;

	child_file(e, 0, a_completes ? ".xray" : ".xray.part", part, sizeof(part));
	if (!exists(part))
		fail_msg("no %s: A's flush was not where the test held it", part);
	ts_tools_accept(trace);
	map = mp_read(trace);
	tally_of(trace, map, (uint32_t)e->r.pid, &b);
	tally_of(trace, map, e->a_tid, &a);
	/* A: enter, exit, enter; B: its two entries, and its crash event if it crashed. */
	assert_int_equal(a.fid_a, 3);
	assert_int_equal(b.fid_b, 1);
	assert_int_equal(b.fid_c, 1);
	assert_int_equal(a.others + b.others, 0);
	assert_int_equal(a.crashes + b.crashes, crash_tid ? 1 : 0);
	assert_int_equal(map_crashes(map, sig, &tid), crash_tid ? 1 : 0);
	if (crash_tid) {
		assert_int_equal(tid, crash_tid);
		assert_int_equal(crash_tid == e->a_tid ? a.crashes : b.crashes, 1);
	}
	free(map);
}

/* B crashes while A's flush is held in its write: B's own trace, at once. */
static void crash_beside_a_held_flush(void **state)
{
	char trace[PATH_BYTES + 64];
	struct ended e;

	(void)state;
	run_mode("crash", &e);
	child_file(&e, 1, ".xray", trace, sizeof(trace));
	expect_end(&e, SIGSEGV, "SIGSEGV", trace);
	expect_fatal_trace(&e, trace, SIGSEGV, (uint32_t)e.r.pid, 0);
	child_result_free(&e.r);
}

/* SIGTERM on B while A's flush is held: the terminate path's trace, at once. */
static void terminate_beside_a_held_flush(void **state)
{
	char trace[PATH_BYTES + 64];
	struct ended e;

	(void)state;
	run_mode("term", &e);
	child_file(&e, 1, ".xray", trace, sizeof(trace));
	expect_end(&e, SIGTERM, "SIGTERM", trace);
	expect_fatal_trace(&e, trace, SIGTERM, 0, 0);
	child_result_free(&e.r);
}

/*
 * The thread inside the held xfdr_flush() crashes itself (an abort() a signal handler of the
 * program would make there; here SIGABRT sent to it): its own flush cannot go on, the fatal
 * path's writes the trace.
 */
static void crash_inside_the_held_flush(void **state)
{
	char trace[PATH_BYTES + 64];
	struct ended e;

	(void)state;
	run_mode("crash_a", &e);
	child_file(&e, 1, ".xray", trace, sizeof(trace));
	expect_end(&e, SIGABRT, "SIGABRT", trace);
	expect_fatal_trace(&e, trace, SIGABRT, e.a_tid, 0);
	child_result_free(&e.r);
}

/* SIGTERM lands on the thread inside the held xfdr_flush(). */
static void terminate_inside_the_held_flush(void **state)
{
	char trace[PATH_BYTES + 64];
	struct ended e;

	(void)state;
	run_mode("term_a", &e);
	child_file(&e, 1, ".xray", trace, sizeof(trace));
	expect_end(&e, SIGTERM, "SIGTERM", trace);
	expect_fatal_trace(&e, trace, SIGTERM, 0, 0);
	child_result_free(&e.r);
}

/*
 * The held flush is let go while the fatal path's runs (B's abort()), and completes first: two
 * files, both complete traces, each with its own .map, and no ".part" left.
 */
static void both_flushes_complete(void **state)
{
	char trace[PATH_BYTES + 64], first[PATH_BYTES + 64], path[PATH_BYTES + 80];
	struct tally a, b;
	uint32_t tid;
	struct ended e;
	char *map;

	(void)state;
	run_mode("both", &e);
	child_file(&e, 1, ".xray", trace, sizeof(trace));
	expect_end(&e, SIGABRT, "SIGABRT", trace);
	assert_non_null(strstr(e.r.out, "a_flush=0\n"));
	expect_fatal_trace(&e, trace, SIGABRT, (uint32_t)e.r.pid, 1);
	/* A's file: its snapshot came before B's last call and crash. */
	child_file(&e, 0, ".xray", first, sizeof(first));
	ts_tools_accept(first);
	map = mp_read(first);
	tally_of(first, map, e.a_tid, &a);
	tally_of(first, map, (uint32_t)e.r.pid, &b);
	assert_int_equal(a.fid_a, 3);
	assert_int_equal(b.fid_b, 1);
	assert_int_equal(a.crashes + b.crashes, 0);
	assert_int_equal(map_crashes(map, SIGABRT, &tid), 0);
	free(map);
	child_file(&e, 0, ".xray.part", path, sizeof(path));
	assert_false(exists(path));
	child_file(&e, 0, ".xray.map.part", path, sizeof(path));
	assert_false(exists(path));
	child_file(&e, 1, ".xray.part", path, sizeof(path));
	assert_false(exists(path));
	/* The two traces and their maps, nothing else. */
	assert_int_equal(ts_dir_entries(e.dir), 4);
	child_result_free(&e.r);
}

/* ---- in this process: what two flushers share --------------------------------------------- */

/*
 * Two flushers pin the same buffer (the fatal path's copy beside an ordinary one's): the
 * buffer stays pinned until both let go. With one pin bit, the first unpin freed it for ring
 * mode to claim under the other's copy.
 */
static void pins_are_counted(void **state)
{
	struct pool_reused reused;
	struct pool_desc *d;
	uint32_t gen;

	(void)state;
	assert_int_equal(ts_init_mode(4096, 1, 0, XFDR_MODE_RING), 0);
	d = pool_claim(&reused);
	assert_non_null(d);
	pool_publish_owned(d);
	gen = POOL_GEN(xfdr_load_relaxed(&d->ctl));
	assert_int_equal(pool_mark_full(d, gen, 64, 1), 1);
	assert_int_equal(pool_pin(d, gen), 1);
	assert_int_equal(pool_pin(d, gen), 1);
	pool_unpin(d);
	assert_true(xfdr_load_acquire(&d->ctl) & POOL_PINNED);
	assert_null(pool_claim(&reused)); /* the other flusher still copies it */
	pool_unpin(d);
	assert_false(xfdr_load_acquire(&d->ctl) & POOL_PINNED);
	assert_int_equal(POOL_STATE(xfdr_load_acquire(&d->ctl)), POOL_FULL);
	assert_ptr_equal(pool_claim(&reused), d);
	assert_int_equal(reused.reused, 1);
}

/* Resident pages of [p, p + n) (p page-aligned). */
static size_t resident_pages(const uint8_t *p, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (n + page - 1) / page, i, in = 0;
	unsigned char *vec = calloc(pages, 1);

	assert_non_null(vec);
	assert_int_equal(mincore((void *)(uintptr_t)p, n, vec), 0);
	for (i = 0; i < pages; i++)
		in += vec[i] & 1;
	free(vec);
	return in;
}

/* Does /proc/self/smaps give the mapping at addr the flag ("dc": MADV_DONTFORK)? */
static int mapping_has_flag(const void *addr, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, found = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		/* A mapping's first line: "lo-hi perms ..."; its fields follow ("Key: ..."). */
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && !strncmp(line, "VmFlags:", 8))
			found = strstr(line, flag) != NULL;
	}
	fclose(f);
	return found;
}

/*
 * The reserve context costs no memory until the fatal path uses it: an ordinary flush writes
 * in its own context only, and neither init nor the flush touches the reserve's pages. Like
 * the pool, the scratch is left out of fork children.
 */
static void reserve_untouched_by_ordinary_flushes(void **state)
{
	const struct pool_flush_ctx *x = &rt_pool.flush[POOL_FLUSH_ORDINARY];
	const struct pool_flush_ctx *r = &rt_pool.flush[POOL_FLUSH_RESERVE];
	size_t reserve_bytes;
	char path[PATH_BYTES];

	(void)state;
	assert_int_equal(ts_init(65536, 4, 0), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(FID_A);
	xfdr_exit(FID_A);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	ts_tools_accept(path);
	assert_true(r->copy > x->copy);
	reserve_bytes = (size_t)(rt_pool.flush_scratch + rt_pool.flush_scratch_bytes - r->copy);
	assert_true(resident_pages(x->copy, 1) == 1); /* the check sees a copy that was made */
	assert_int_equal(resident_pages(r->copy, reserve_bytes), 0);
	if (rt_pool.dontfork)
		assert_true(mapping_has_flag(r->copy, " dc"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(crash_beside_a_held_flush),
	    cmocka_unit_test(terminate_beside_a_held_flush),
	    cmocka_unit_test(crash_inside_the_held_flush),
	    cmocka_unit_test(terminate_inside_the_held_flush),
	    cmocka_unit_test(both_flushes_complete),
	    cmocka_unit_test(pins_are_counted),
	    cmocka_unit_test(reserve_untouched_by_ordinary_flushes),
	};

	if (argc > 3 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], argv[3]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
