/*
 * tests/system/test_stress_mt.c - the recorder under load for XFDR_STRESS_SECONDS (default 30;
 * 8 under a sanitizer; `make stress` passes 300): 4 writer threads on 2 cores that keep
 * exiting and being replaced, flushes from another thread all the time, flush signals, ring
 * mode sessions and bounded ones in turn.
 *
 * After each session (a phase), with every thread stopped, its last flush must account for
 * every event each writer issued, exactly:
 *   function records in the file + drops + overwritten_events = function events issued
 * (the .map thread lines), the file's XFDRDROP event must say what the .map says, and every
 * file of the phase (the racing flushes, the signal flushes, the last one) must be valid for
 * `$XFDR_BIN verify`; a sample also for `llvm-xray convert --output-format=yaml`.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

#include "tests/support/map_parse.h"
#include "tests/support/runtime_test.h"

enum {
	WRITERS = 4,
	PHASE_THREADS_MAX = 3000, /* below thread_max: no slot of the phase is recycled */
	FILES_MAX = 4096,
	VERIFY_BATCH = 64,
};

#define FLUSH_SIGNAL SIGUSR2

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	nanosleep(&ts, NULL);
}

static unsigned stress_seconds(void)
{
	const char *s = getenv("XFDR_STRESS_SECONDS");

	if (s && *s && atoi(s) > 0)
		return (unsigned)atoi(s);
	return ts_sanitized() ? 8 : 30;
}

/* ---- The writers ------------------------------------------------------------------------- */

struct wrec {
	uint32_t tid;
	/* function events (entries with or without arguments, exits) and custom events dropped */
	uint64_t issued;
	uint64_t target;
	uint32_t seed;
	int done;
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * Nested calls, some entries with arguments (CallArgument records: metadata) and some custom
 * events (not function events): what a buffer holds besides function records varies.
 */
static void *writer_run(void *arg)
{
	struct wrec *w = arg;
	static const char tag[16] = "stress event";
	uint64_t args[3] = {1, 2, 3}, n = 0;
	uint32_t base = (w->seed & 0xff) << 8;

	w->tid = ts_tid();
	xfdr_enter(base);
	n++;
	while (n + 8 <= w->target) {
		uint32_t r = rnd(&w->seed);

		if (r % 16 == 0) {
			xfdr_enter_args(base + 1, args, 1 + r % 3);
		} else {
			xfdr_enter(base + 1);
		}
		xfdr_enter(base + 2 + r % 8);
		/* a dropped custom event is counted among the drops: issued here too */
		if (r % 64 == 1 && xfdr_custom_event(tag, sizeof(tag)))
			n++;
		xfdr_exit(base + 2 + r % 8);
		xfdr_exit(base + 1);
		n += 4;
	}
	xfdr_exit(base);
	n++;
	w->issued = n;
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A new writer in w, with its own seed and event budget drawn from seed. */
static void start_writer(struct wrec *w, uint32_t *seed, pthread_t *th)
{
	memset(w, 0, sizeof(*w));
	w->seed = rnd(seed) | 1;
	w->target = 20000 + rnd(seed) % 200000;
	assert_int_equal(pthread_create(th, NULL, writer_run, w), 0);
}

/* ---- One phase ----------------------------------------------------------------------------- */

struct phase {
	int stop;
	char *files[FILES_MAX]; /* the flusher's files */
	unsigned nfiles;
	unsigned flush_errors;
	unsigned signals;
};

static void *flusher_run(void *arg)
{
	struct phase *p = arg;
	char path[512];

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		if (xfdr_flush(path, sizeof(path)) == 0) {
			if (p->nfiles < FILES_MAX)
				p->files[p->nfiles++] = strdup(path);
			else
				unlink(path);
		} else {
			p->flush_errors++;
		}
		sleep_us(8000);
	}
	return NULL;
}

static void *signaller_run(void *arg)
{
	struct phase *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		kill(getpid(), FLUSH_SIGNAL);
		p->signals++;
		sleep_us(60000);
	}
	return NULL;
}

static int init_stress(int mode, size_t buffer_size, size_t buffer_max)
{
	struct xfdr_options o;

	ts_options(&o, buffer_size, buffer_max, mode);
	o.flush_signal = FLUSH_SIGNAL;
	return xfdr_init(&o);
}

/* `$XFDR_BIN verify` on files[0..n), a batch at a time: exit 0, nothing on stderr. */
static void verify_files(char **files, unsigned n)
{
	unsigned i, k;

	for (i = 0; i < n; i += k) {
		char *argv[VERIFY_BATCH + 3];
		struct child_spec spec;
		struct child_result r;

		argv[0] = (char *)child_xfdr_bin();
		argv[1] = "verify";
		for (k = 0; k < VERIFY_BATCH && i + k < n; k++)
			argv[2 + k] = files[i + k];
		argv[2 + k] = NULL;
		memset(&spec, 0, sizeof(spec));
		spec.argv = argv;
		spec.out.to = CHILD_CAPTURE;
		spec.err.to = CHILD_CAPTURE;
		spec.timeout_s = 300;
		child_run(&spec, &r);
		if (r.status || r.err_len)
			fail_msg("xfdr verify: status %d: %s", r.status, r.err);
		child_result_free(&r);
	}
}

/* The .xray files in ts_dir not in files[0..n) and not `last`: the signal flushes. */
static unsigned signal_files(char **out, unsigned max, char **files, unsigned n, const char *last)
{
	DIR *d = opendir(ts_dir);
	struct dirent *e;
	unsigned count = 0, i;

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[512];
		int known = 0;

		if (len < 5 || strcmp(e->d_name + len - 5, ".xray"))
			continue;
		snprintf(path, sizeof(path), "%s%s", ts_dir, e->d_name);
		for (i = 0; i < n && !known; i++)
			known = !strcmp(files[i], path);
		if (known || !strcmp(path, last) || count == max)
			continue;
		out[count++] = strdup(path);
	}
	closedir(d);
	return count;
}

static void unlink_trace(const char *path)
{
	char map[600];

	snprintf(map, sizeof(map), "%s.map", path);
	unlink(path);
	unlink(map);
}

/*
 * While the threads run, the runtime's stderr lines (one per flush: its drops, the buffers
 * reused under it, a signal flush that found another one running) go to a log in ts_dir:
 * thousands of them say nothing the checks do not.
 */
static void quiet(int on)
{
	static int saved = -1;
	char log[256];
	int fd;

	if (on) {
		snprintf(log, sizeof(log), "%sstress-stderr.log", ts_dir);
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		saved = dup(2);
		assert_true(saved >= 0);
		assert_int_equal(dup2(fd, 2), 2);
		close(fd);
	} else if (saved >= 0) {
		assert_int_equal(dup2(saved, 2), 2);
		close(saved);
		saved = -1;
	}
}

/* What the last file of a phase holds: function records per thread id, and XFDRDROP. */
struct tally {
	uint64_t records[65536];
	int drop_seen;
	uint64_t drop[5]; /* no_buffer, reentrant, too_large, no_thread_slot, overwritten */
	uint32_t drop_entries, drop_omitted;
	uint8_t drop_payload[64 + 40 * 64];
	uint32_t drop_payload_bytes;
};

static int tally_event(const struct xfdr_event *ev, void *arg)
{
	struct tally *t = arg;

	if (ev->type == XFDR_EVENT_FUNCTION) {
		t->records[ev->thread_id & 0xffff]++;
	} else if (ev->type == XFDR_EVENT_CUSTOM && ev->payload_bytes >= XFDR_DROP_FIXED_BYTES &&
		   !memcmp(ev->payload, XFDR_DROP_MAGIC, 8)) {
		if (t->drop_seen++)
			fail_msg("two XFDRDROP events");
		t->drop[0] = ts_get64(ev->payload + XFDR_DROP_NO_BUFFER_OFF);
		t->drop[1] = ts_get64(ev->payload + XFDR_DROP_REENTRANT_OFF);
		t->drop[2] = ts_get64(ev->payload + XFDR_DROP_TOO_LARGE_OFF);
		t->drop[3] = ts_get64(ev->payload + XFDR_DROP_NO_THREAD_SLOT_OFF);
		t->drop[4] = ts_get64(ev->payload + XFDR_DROP_OVERWRITTEN_OFF);
		t->drop_entries = ts_get32(ev->payload + XFDR_DROP_ENTRY_COUNT_OFF);
		t->drop_omitted = ts_get32(ev->payload + XFDR_DROP_OMITTED_OFF);
		t->drop_payload_bytes = ev->payload_bytes < sizeof(t->drop_payload)
					    ? ev->payload_bytes
					    : (uint32_t)sizeof(t->drop_payload);
		memcpy(t->drop_payload, ev->payload, t->drop_payload_bytes);
	}
	return 0;
}

/*
 * The last file of a phase, every writer stopped: each writer's events add up exactly, and
 * the XFDRDROP event agrees with the .map.
 */
static void check_accounting(const char *path, struct wrec *w, unsigned nw, int ring)
{
	static struct tally t;
	static struct mp_thread mt[PHASE_THREADS_MAX + 64];
	uint64_t sum_drops = 0, sum_over_events = 0, sum_over = 0, causes[3] = {0, 0, 0};
	unsigned i, with_counts = 0;
	char *map;
	size_t n;

	memset(&t, 0, sizeof(t));
	ts_each_event(path, XFDR_ORDER_FILE, tally_event, &t);
	map = mp_read(path);
	n = mp_threads(map, mt, sizeof(mt) / sizeof(mt[0]));
	for (i = 0; i < nw; i++) {
		const struct mp_thread *l = mp_thread_of(mt, n, w[i].tid);
		uint64_t recorded;

		if (!l)
			fail_msg("%s: writer %u (tid %u, %llu events) has no thread line", path, i,
				 w[i].tid, (unsigned long long)w[i].issued);
		recorded = l->id ? t.records[l->id] : 0;
		if (recorded + mp_thread_drops(l) + 2 * l->elided + l->overwritten_events !=
		    w[i].issued)
			fail_msg("%s: tid %u: %llu in the file + %llu dropped + 2 * %llu elided + "
				 "%llu overwritten_events != %llu issued",
				 path, w[i].tid, (unsigned long long)recorded,
				 (unsigned long long)mp_thread_drops(l),
				 (unsigned long long)l->elided,
				 (unsigned long long)l->overwritten_events,
				 (unsigned long long)w[i].issued);
		if (!ring && (l->overwritten || l->overwritten_events))
			fail_msg("%s: tid %u: bounded mode overwrote", path, w[i].tid);
		sum_drops += mp_thread_drops(l);
		sum_over_events += l->overwritten_events;
		sum_over += l->overwritten;
		causes[0] += l->no_buffer;
		causes[1] += l->reentrant;
		causes[2] += l->too_large;
		with_counts += mp_thread_drops(l) || l->overwritten;
	}
	/* The writers are every thread that recorded: the totals are theirs. */
	assert_int_equal(mp_number(map, "dropped\ttotal"), sum_drops);
	assert_int_equal(mp_number(map, "dropped\tno_buffer"), causes[0]);
	assert_int_equal(mp_number(map, "dropped\treentrant"), causes[1]);
	assert_int_equal(mp_number(map, "dropped\ttoo_large"), causes[2]);
	assert_int_equal(mp_number(map, "dropped\tno_thread_slot"), 0);
	assert_int_equal(mp_number(map, "overwritten"), sum_over);
	assert_int_equal(mp_number(map, "overwritten_events"), sum_over_events);
	/* The file's own drop event says the same (no flush raced with this one). */
	assert_int_equal(t.drop_seen, 1);
	assert_int_equal(t.drop[0], causes[0]);
	assert_int_equal(t.drop[1], causes[1]);
	assert_int_equal(t.drop[2], causes[2]);
	assert_int_equal(t.drop[3], 0);
	assert_int_equal(t.drop[4], sum_over);
	assert_int_equal(t.drop_entries + t.drop_omitted, with_counts);
	for (i = 0; i < t.drop_entries &&
		    XFDR_DROP_FIXED_BYTES + (i + 1) * XFDR_DROP_ENTRY_BYTES <= t.drop_payload_bytes;
	     i++) {
		const uint8_t *e =
		    t.drop_payload + XFDR_DROP_FIXED_BYTES + i * XFDR_DROP_ENTRY_BYTES;
		const struct mp_thread *l =
		    mp_thread_of(mt, n, ts_get32(e + XFDR_DROP_ENTRY_TID_OFF));

		if (!l)
			fail_msg("%s: XFDRDROP entry of tid %u: no thread line", path,
				 ts_get32(e + XFDR_DROP_ENTRY_TID_OFF));
		assert_int_equal(ts_get64(e + XFDR_DROP_ENTRY_NO_BUFFER_OFF), l->no_buffer);
		assert_int_equal(ts_get64(e + XFDR_DROP_ENTRY_REENTRANT_OFF), l->reentrant);
		assert_int_equal(ts_get64(e + XFDR_DROP_ENTRY_TOO_LARGE_OFF), l->too_large);
		assert_int_equal(ts_get64(e + XFDR_DROP_ENTRY_OVERWRITTEN_OFF), l->overwritten);
	}
	free(map);
}

struct totals {
	unsigned phases, threads, flushes, signal_files;
	uint64_t events, overwritten_events, drops;
};

/*
 * One session: writers replaced as they finish, a flusher and a signaller, for `seconds`;
 * then the last flush and the checks.
 */
static void run_phase(int ring, double seconds, struct totals *tot)
{
	static struct wrec w[PHASE_THREADS_MAX];
	static struct phase p;
	static char *sig[FILES_MAX];
	pthread_t wt[WRITERS], ft, st;
	unsigned slot_of[WRITERS], nw = 0, i, nsig;
	uint32_t seed = 2463534242u ^ (uint32_t)tot->phases * 2654435761u;
	char last[512];
	double end;
	char *mp;

	memset(&p, 0, sizeof(p));
	quiet(1);
	if (ring)
		assert_int_equal(init_stress(XFDR_MODE_RING, 8192, 24), 0);
	else
		assert_int_equal(init_stress(XFDR_MODE_BOUNDED, 8192, 256), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_create(&ft, NULL, flusher_run, &p), 0);
	assert_int_equal(pthread_create(&st, NULL, signaller_run, &p), 0);
	for (i = 0; i < WRITERS; i++) {
		start_writer(&w[nw], &seed, &wt[i]);
		slot_of[i] = nw++;
	}
	end = now_s() + seconds;
	while (now_s() < end) {
		for (i = 0; i < WRITERS; i++) {
			if (!__atomic_load_n(&w[slot_of[i]].done, __ATOMIC_ACQUIRE))
				continue;
			assert_int_equal(pthread_join(wt[i], NULL), 0);
			if (nw == PHASE_THREADS_MAX) {
				slot_of[i] = PHASE_THREADS_MAX; /* no new writer here */
				continue;
			}
			start_writer(&w[nw], &seed, &wt[i]);
			slot_of[i] = nw++;
		}
		if (nw == PHASE_THREADS_MAX)
			break;
		sleep_us(500);
	}
	for (i = 0; i < WRITERS; i++)
		if (slot_of[i] < PHASE_THREADS_MAX)
			assert_int_equal(pthread_join(wt[i], NULL), 0);
	__atomic_store_n(&p.stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(ft, NULL), 0);
	assert_int_equal(pthread_join(st, NULL), 0);
	sleep_us(20000); /* a flush signal still on its way lands before the last flush */
	assert_int_equal(xfdr_flush(last, sizeof(last)), 0);
	assert_int_equal(xfdr_stop(), 0);
	quiet(0);

	check_accounting(last, w, nw, ring);
	nsig = signal_files(sig, FILES_MAX, p.files, p.nfiles, last);
	/* every file valid; a sample for llvm-xray too */
	verify_files(p.files, p.nfiles);
	verify_files(sig, nsig);
	mp = last;
	verify_files(&mp, 1);
	assert_int_equal(ts_llvm_yaml(last, NULL), 0);
	if (p.nfiles)
		assert_int_equal(ts_llvm_yaml(p.files[p.nfiles / 2], NULL), 0);
	if (nsig)
		assert_int_equal(ts_llvm_yaml(sig[0], NULL), 0);

	tot->phases++;
	tot->threads += nw;
	tot->flushes += p.nfiles;
	tot->signal_files += nsig;
	for (i = 0; i < nw; i++)
		tot->events += w[i].issued;
	{
		char *map = mp_read(last);

		tot->overwritten_events += mp_number(map, "overwritten_events");
		tot->drops += mp_number(map, "dropped\ttotal");
		free(map);
	}
	for (i = 0; i < p.nfiles; i++) {
		unlink_trace(p.files[i]);
		free(p.files[i]);
	}
	for (i = 0; i < nsig; i++) {
		unlink_trace(sig[i]);
		free(sig[i]);
	}
	unlink_trace(last);
}

/* The writers share 2 cores (of those the test may use), so they preempt each other. */
static void two_cores(void)
{
	cpu_set_t have, use;
	int c, k = 0;

	if (sched_getaffinity(0, sizeof(have), &have))
		return;
	CPU_ZERO(&use);
	for (c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &have)) {
			CPU_SET(c, &use);
			k++;
		}
	sched_setaffinity(0, sizeof(use), &use);
}

static void stress(void **state)
{
	unsigned seconds = stress_seconds();
	double end, phase_s = seconds < 8 ? 1.0 : 2.0;
	struct totals tot;

	(void)state;
	memset(&tot, 0, sizeof(tot));
	two_cores();
	end = now_s() + seconds;
	do {
		/* every third session bounded, the others ring mode */
		run_phase(tot.phases % 3 != 2, phase_s, &tot);
	} while (now_s() + phase_s <= end);
	print_message("stress: %u s, %u sessions, %u threads, %llu events, %u flushes + %u by "
		      "signal, %llu overwritten_events, %llu drops\n",
		      seconds, tot.phases, tot.threads, (unsigned long long)tot.events, tot.flushes,
		      tot.signal_files, (unsigned long long)tot.overwritten_events,
		      (unsigned long long)tot.drops);
	assert_true(tot.phases >= 2);
	assert_true(tot.flushes > 0);
	assert_true(tot.overwritten_events > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(stress),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
