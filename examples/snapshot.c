/*
 * examples/snapshot.c - save the history of the slowest request so far, from every thread.
 *
 * Worker threads serve requests in a loop; a request is a few instrumented functions, and now
 * and then it takes a slow path (a simulated cache miss). xfdr records all the time in ring
 * mode into a pool much smaller than the run, so the pool always holds only the newest
 * history. Each request notes xfdr_now() when it starts; when it turns out slower than every
 * request before it (in any thread), it calls xfdr_flush_since(start): the file holds the
 * buffers of every thread from that moment on, i.e. what the whole program did while the slow
 * request ran. Each snapshot is its own valid file; its .map says where the window begins
 * (since_tsc), and `xfdr convert --since=snapshot FILE` shows only that window.
 *
 * usage: snapshot [REQUESTS [OUTPUT]]   REQUESTS per worker (default 3000); OUTPUT is xfdr's
 *                                       output option: "DIR/" or "DIR/prefix" (default: .)
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xfdr/xfdr.h"

enum { WORKERS = 3 };

/* Function ids: the program's own, any number below 2^28. */
enum {
	ID_HANDLE_REQUEST = 1,
	ID_PARSE = 2,
	ID_LOOKUP = 3,
	ID_LOAD_FROM_DISK = 4, /* the slow path */
	ID_RENDER = 5,
};

static _Atomic uint64_t worst_ticks;  /* the slowest request so far, in xfdr_now() ticks */
static atomic_uint snapshots_written; /* files written */
static atomic_uint snapshots_busy;    /* skipped: another thread's snapshot was running */
static atomic_int snapshot_failed;    /* any other error */
static pthread_barrier_t start_line;  /* the workers start together */
static volatile uint64_t sink;	      /* keeps the simulated work from being optimized out */
static unsigned requests = 3000;

/* Simulated work: a nanosecond or two per step. */
static void work(unsigned steps)
{
	uint64_t x = steps;

	while (steps--)
		x = x * 6364136223846793005u + 1442695040888963407u;
	sink = x;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)us * 1000};

	nanosleep(&ts, NULL);
}

/* xorshift32: each worker's own random numbers, no shared state. */
static unsigned next_random(unsigned *state)
{
	unsigned x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *state = x;
}

static void parse(unsigned *rnd)
{
	XFDR_SCOPE(ID_PARSE);
	work(500 + next_random(rnd) % 1000);
}

static void load_from_disk(unsigned *rnd)
{
	XFDR_SCOPE(ID_LOAD_FROM_DISK);
	sleep_us(500 + next_random(rnd) % 4500); /* blocks 0.5 to 5 ms, as a disk read would */
}

static void lookup(unsigned *rnd)
{
	XFDR_SCOPE(ID_LOOKUP);
	if (next_random(rnd) % 300 == 0) /* a cache miss, now and then */
		load_from_disk(rnd);
	else
		work(1000 + next_random(rnd) % 3000);
}

static void render(unsigned *rnd)
{
	XFDR_SCOPE(ID_RENDER);
	work(1000 + next_random(rnd) % 1000);
}

static void handle_request(unsigned *rnd)
{
	XFDR_SCOPE(ID_HANDLE_REQUEST);
	parse(rnd);
	lookup(rnd);
	render(rnd);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Raise the shared "worst so far" to ticks; returns 1 if this request set a new record. */
static int new_worst(uint64_t ticks)
{
	uint64_t worst = atomic_load_explicit(&worst_ticks, memory_order_relaxed);

	while (ticks > worst)
		if (atomic_compare_exchange_weak_explicit(
			&worst_ticks, &worst, ticks, memory_order_relaxed, memory_order_relaxed))
			return 1;
	return 0;
}

static void *worker(void *arg)
{
	int index = (int)(intptr_t)arg;
	unsigned rnd = 2463534242u * (unsigned)index, i; /* never 0: xorshift stays 0 */
	char name[16], path[4096];

	snprintf(name, sizeof(name), "worker-%d", index);
	pthread_setname_np(pthread_self(), name); /* the .map names the thread */
	pthread_barrier_wait(&start_line);
	for (i = 1; i <= requests; i++) {
		uint64_t t0, ns0, ticks, us;
		int rc;

		sleep_us(20 + next_random(&rnd) % 80); /* waiting for the next request */
		/* The window starts before the request's first event: xfdr_now() is the trace's
		 * own clock, so t0 compares with every timestamp in the file. */
		t0 = xfdr_now();
		ns0 = now_ns();
		handle_request(&rnd);
		ticks = xfdr_now() - t0;
		us = (now_ns() - ns0) / 1000u; /* the same span in microseconds, for people */
		if (!new_worst(ticks))
			continue;
		/*
		 * Slowest so far: write every thread's history since this request began. This
		 * thread does the writing, after the request was measured, while the others go
		 * on recording (here under a millisecond; the first snapshot of a run may wait
		 * up to 20 ms for the clock's calibration).
		 */
		rc = xfdr_flush_since(t0, path, sizeof(path));
		if (rc == 0) {
			atomic_fetch_add(&snapshots_written, 1);
			printf("%s request %u: %llu ticks (%llu us), slowest so far: %s\n", name, i,
			       (unsigned long long)ticks, (unsigned long long)us, path);
		} else if (rc == -EBUSY) {
			/* Another thread's snapshot is being written (flushes never wait):
			 * this window is not saved. Go on serving. */
			atomic_fetch_add(&snapshots_busy, 1);
			printf("%s request %u: %llu ticks (%llu us), slowest so far: "
			       "another snapshot is being written, skipped\n",
			       name, i, (unsigned long long)ticks, (unsigned long long)us);
		} else {
			atomic_store(&snapshot_failed, 1);
			fprintf(stderr, "%s: xfdr_flush_since: %s\n", name, strerror(-rc));
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct xfdr_options o;
	pthread_t tid[WORKERS];
	int i, rc;

	if (argc > 1)
		requests = (unsigned)strtoul(argv[1], NULL, 10);
	if (argc > 3 || requests == 0) {
		fprintf(stderr, "usage: %s [REQUESTS [OUTPUT]]\n", argv[0]);
		return 2;
	}
	/*
	 * Ring mode (the default) with a small pool: 16 buffers of 4 KiB hold about the last
	 * thousand requests of all threads, a tenth of the run, so the pool wraps several
	 * times; it must still hold the longest window you want to save. No flush at exit:
	 * the snapshots are the output.
	 */
	xfdr_options_default(&o);
	o.mode = XFDR_MODE_RING;
	o.buffer_size = 4096;
	o.buffer_max = 16;
	o.flush_at_exit = 0;
	o.output = argc > 2 ? argv[2] : NULL;
	rc = xfdr_init(&o);
	if (!rc)
		rc = xfdr_start();
	if (rc) {
		fprintf(stderr, "xfdr: cannot start recording: %s\n", strerror(-rc));
		return 1;
	}
	pthread_barrier_init(&start_line, NULL, WORKERS);
	for (i = 0; i < WORKERS; i++)
		if (pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)(i + 1))) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	for (i = 0; i < WORKERS; i++)
		pthread_join(tid[i], NULL);
	xfdr_stop();
	printf("%d workers x %u requests: %u snapshots written, %u skipped (busy)\n", WORKERS,
	       requests, atomic_load(&snapshots_written), atomic_load(&snapshots_busy));
	return atomic_load(&snapshot_failed) || !atomic_load(&snapshots_written);
}
