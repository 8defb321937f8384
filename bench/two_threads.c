/*
 * bench/two_threads.c - the table of `make bench-threads`: xfdr's cost per event with one thread
 * and with two threads recording at once, beside the floor measured the same way.
 *
 * Every recording thread runs the leaf loop of the per-event table (a noinline callee alone in
 * its translation unit, bracketed by XFDR_ENTER/XFDR_EXIT), pinned to its own CPU (the first
 * CPUs of the process's affinity mask). The callee is bench/two_threads_callee.c, whose stores go
 * to thread-local variables: bench_callee (bench/callee.c) stores into globals every thread
 * writes, and two threads calling it slow each other through that shared cache line alone
 * (measured as its own row, so the difference stays visible). The threads of one configuration
 * start each repetition together (a barrier) and time it on their own, so each thread gets a
 * median, min and max over the repetitions; one unmeasured warm-up repetition comes first (thread
 * registration, its first buffer). Each measurement runs alone on the first CPU, alone on the
 * second, then on both at once; a thread's ratio compares it with its own CPU alone:
 *   floor  rdtsc + an 8-byte store into TLS per event, no call (bench/bench_base.c's floor);
 *   call   the bare callee loop, nothing recording;
 *   xfdr   the loop recorded, a fresh session per configuration (xfdr_init through the C
 *          API, a bounded pool large enough for every event, waited until populated);
 *   xfdr, bench_callee   the same with bench_callee, whose globals both threads write.
 * After each xfdr configuration, recording stops, xfdr_flush() writes one file into -o, and
 * the trace_count program (-C, bench/trace_count.c built) reads it back and deletes it: the
 * events it holds must be threads x (reps + 1) x events, with nothing dropped.
 * The target: each thread's xfdr figure in 2 threads within 10 % of its CPU's figure alone.
 * Two CPUs may be hyperthreads of one core, or vCPUs the host runs on one core, and then slow
 * each other whatever the program does: the floor's own 2-thread ratio shows how much.
 *
 *   threads -C TRACE_COUNT -o DIR [-r REPS] [-n EVENTS_PER_THREAD] [-b BUFFER_BYTES]
 *
 * Prints the table on stdout. Exit status: 0; 1 when a configuration failed, lost or dropped
 * events; 2 on bad usage.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/harness.h"
#include "bench/xfdr_row.h"
#include "xfdr/xfdr.h"

#define MAX_THREADS 2
#define MAX_REPS 101

enum what { W_FLOOR, W_CALL, W_XFDR, W_XFDR_SHARED, W_COUNT };

static const char *const what_names[W_COUNT] = {"floor (rdtsc + TLS store)", "call (unrecorded)",
						"xfdr XFDR_ENTER/XFDR_EXIT",
						"xfdr, callee.c's bench_callee"};

void two_threads_callee(uint64_t i); /* bench/two_threads_callee.c */

struct cfg {
	unsigned reps;
	uint64_t events;
	uint64_t buf_bytes;
	const char *out_dir;
	const char *counter;
};

/* One configuration: one measurement in n threads. */
struct run {
	const struct cfg *cfg;
	enum what what;
	unsigned nthreads;
	pthread_barrier_t barrier;
	int cpu[MAX_THREADS];
	int pinned[MAX_THREADS];
	double ns[MAX_THREADS][MAX_REPS];
};

struct worker {
	struct run *run;
	unsigned index;
};

/* What one configuration measured, per thread: sorted ns, median index reps / 2. */
struct result {
	double med[MAX_THREADS], min[MAX_THREADS], max[MAX_THREADS];
	int cpu[MAX_THREADS];
	char trace[200]; /* xfdr: events recorded / expected, drops; else "" */
	int failed;
};

/* The floor's slot: one per thread, as a recorder's thread state is. */
static __thread uint64_t floor_slot;

static inline uint64_t read_tsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static void loop_floor(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events; i++) {
		floor_slot = read_tsc();
		bench_barrier();
	}
}

static void loop_call(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events / 2; i++)
		two_threads_callee(i);
}

static void loop_xfdr(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events / 2; i++) {
		XFDR_ENTER(BENCH_FID);
		two_threads_callee(i);
		XFDR_EXIT(BENCH_FID);
	}
}

static void loop_xfdr_shared(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events / 2; i++) {
		XFDR_ENTER(BENCH_FID);
		bench_callee(i);
		XFDR_EXIT(BENCH_FID);
	}
}

static void (*const loops[W_COUNT])(uint64_t) = {loop_floor, loop_call, loop_xfdr,
						 loop_xfdr_shared};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *run = w->run;
	const struct cfg *cfg = run->cfg;
	void (*loop)(uint64_t) = loops[run->what];
	cpu_set_t set;
	uint64_t t0;
	unsigned r;

	CPU_ZERO(&set);
	CPU_SET(run->cpu[w->index], &set);
	run->pinned[w->index] = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
	for (r = 0; r <= cfg->reps; r++) {
		pthread_barrier_wait(&run->barrier);
		t0 = bench_now_ns();
		loop(cfg->events);
		/* r == 0 is the warm-up: registration, the first buffer, caches */
		if (r > 0)
			run->ns[w->index][r - 1] =
			    (double)(bench_now_ns() - t0) / (double)cfg->events;
	}
	return NULL;
}

/* The first n CPUs the process may run on; returns how many there are (at most n). */
static unsigned pick_cpus(int *cpu, unsigned n)
{
	cpu_set_t set;
	unsigned found = 0;
	int c;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (c = 0; c < CPU_SETSIZE && found < n; c++)
		if (CPU_ISSET(c, &set))
			cpu[found++] = c;
	return found;
}

static int xfdr_session(const struct cfg *cfg, unsigned nthreads, char *err, size_t err_bytes)
{
	struct xfdr_options o;
	uint64_t records = (uint64_t)nthreads * (cfg->reps + 1) * cfg->events;
	uint64_t per_buf = cfg->buf_bytes / 8 - 64; /* less the preamble and call stacks */
	int rc;

	xfdr_options_default(&o);
	o.buffer_size = cfg->buf_bytes;
	/* every event, and a few buffers per thread spare */
	o.buffer_max = records / per_buf + 8 * nthreads + 8;
	o.output = cfg->out_dir;
	o.flush_at_exit = 0;
	o.mode = XFDR_MODE_BOUNDED;
	rc = bench_xfdr_start(&o);
	if (rc != 0)
		snprintf(err, err_bytes, "FAILED: xfdr set-up: %s", strerror(-rc));
	return rc;
}

/*
 * Flush, then count the file with the trace_count program (it verifies it with
 * libxfdr_reader and deletes it): "trace KEY events bytes drops note".
 */
static int xfdr_check(const struct cfg *cfg, unsigned nthreads, char *out, size_t out_bytes)
{
	char path[4096], cmd[8400], line[512];
	unsigned long long events, bytes, drops;
	unsigned long long expected = (unsigned long long)nthreads * (cfg->reps + 1) * cfg->events;
	FILE *p;
	int rc, ok = 0;

	xfdr_stop();
	rc = xfdr_flush(path, sizeof(path));
	if (rc != 0) {
		snprintf(out, out_bytes, "FAILED: xfdr_flush: %s", strerror(-rc));
		return 1;
	}
	snprintf(cmd, sizeof(cmd), "'%s' -d threads_%u '%s'", cfg->counter, nthreads, path);
	p = popen(cmd, "r");
	if (!p) {
		snprintf(out, out_bytes, "FAILED: popen %s: %s", cfg->counter, strerror(errno));
		return 1;
	}
	snprintf(out, out_bytes, "FAILED: no line from %s", cfg->counter);
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "trace\t%*s\t%llu\t%llu\t%llu", &events, &bytes, &drops) == 3) {
			ok = events == expected && drops == 0;
			snprintf(out, out_bytes, "%llu of %llu%s, dropped %llu, %.2f B/event",
				 events, expected, ok ? "" : " MISSING", drops,
				 events ? (double)bytes / (double)events : 0.0);
		} else if (strncmp(line, "trace\t", 6) == 0) {
			snprintf(out, out_bytes, "%.180s", line + 6);
		}
	}
	if (pclose(p) != 0)
		ok = 0;
	return !ok;
}

static void measure(const struct cfg *cfg, enum what what, unsigned nthreads, const int *cpu,
		    struct result *res)
{
	static struct run run;
	struct worker w[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	unsigned t;

	memset(&run, 0, sizeof(run));
	memset(res, 0, sizeof(*res));
	run.cfg = cfg;
	run.what = what;
	run.nthreads = nthreads;
	for (t = 0; t < nthreads; t++)
		run.cpu[t] = cpu[t];
	if ((what == W_XFDR || what == W_XFDR_SHARED) &&
	    xfdr_session(cfg, nthreads, res->trace, sizeof(res->trace))) {
		res->failed = 1;
		return;
	}
	pthread_barrier_init(&run.barrier, NULL, nthreads);
	for (t = 0; t < nthreads; t++) {
		w[t].run = &run;
		w[t].index = t;
		if (pthread_create(&tid[t], NULL, worker_main, &w[t]) != 0) {
			fprintf(stderr, "threads: pthread_create failed\n");
			exit(1);
		}
	}
	for (t = 0; t < nthreads; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&run.barrier);
	for (t = 0; t < nthreads; t++) {
		qsort(run.ns[t], cfg->reps, sizeof(double), bench_cmp_double);
		res->med[t] = run.ns[t][cfg->reps / 2];
		res->min[t] = run.ns[t][0];
		res->max[t] = run.ns[t][cfg->reps - 1];
		res->cpu[t] = run.pinned[t] ? cpu[t] : -1;
	}
	if (what == W_XFDR || what == W_XFDR_SHARED)
		res->failed = xfdr_check(cfg, nthreads, res->trace, sizeof(res->trace));
}

/* "0-1", "0,2" or "?" : which CPUs share a core with cpu, as the kernel reports it */
static void siblings(int cpu, char *out, size_t bytes)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
		 cpu);
	snprintf(out, bytes, "?");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(out, (int)bytes, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

int main(int argc, char **argv)
{
	struct cfg cfg = {7, 2000000, 65536, NULL, NULL};
	struct result res[W_COUNT][MAX_THREADS + 1]; /* [0], [1]: alone on cpu[0], cpu[1] */
	int cpu[MAX_THREADS], opt, status = 0;
	char sib0[64], sib1[64];
	unsigned ncpu, n, t, k;
	enum what w;

	while ((opt = getopt(argc, argv, "C:o:r:n:b:")) != -1) {
		switch (opt) {
		case 'C':
			cfg.counter = optarg;
			break;
		case 'o':
			cfg.out_dir = optarg;
			break;
		case 'r':
			cfg.reps = (unsigned)bench_parse_u64(optarg, "-r");
			break;
		case 'n':
			cfg.events = bench_parse_u64(optarg, "-n");
			break;
		case 'b':
			cfg.buf_bytes = bench_parse_u64(optarg, "-b");
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc || !cfg.counter || !cfg.out_dir || cfg.reps > MAX_REPS ||
	    cfg.buf_bytes < 4096 || cfg.buf_bytes % 8)
		goto usage;
	cfg.events += cfg.events & 1;

	ncpu = pick_cpus(cpu, MAX_THREADS);
	printf(
	    "bench-threads: the leaf loop in 1 and 2 threads at once, each pinned to its own CPU; "
	    "%llu events a thread per repetition, median of %u (min..max); xfdr: libxfdr.a, "
	    "bounded pool, populated; target: xfdr's 2-thread figures within 10 %% of their CPU "
	    "alone\n",
	    (unsigned long long)cfg.events, cfg.reps);
	if (ncpu < MAX_THREADS) {
		printf("skipped: the process may run on %u CPU(s), 2 needed\n", ncpu);
		return 0;
	}
	/* per measurement: alone on the first CPU, alone on the second, then both at once */
	for (w = 0; w < W_COUNT; w++) {
		measure(&cfg, w, 1, &cpu[0], &res[w][0]);
		measure(&cfg, w, 1, &cpu[1], &res[w][1]);
		measure(&cfg, w, 2, cpu, &res[w][2]);
	}

	printf("%-32s %7s %4s %8s %17s %10s  %s\n", "what", "threads", "cpu", "ns/event",
	       "(min..max)", "x alone", "events recorded (trace_count)");
	for (w = 0; w < W_COUNT; w++) {
		for (k = 0; k <= MAX_THREADS; k++) {
			struct result *r = &res[w][k];

			n = k < MAX_THREADS ? 1 : MAX_THREADS;
			if (r->failed && r->med[0] == 0) {
				printf("%-32s %7u %s\n", what_names[w], n, r->trace);
				status = 1;
				continue;
			}
			for (t = 0; t < n; t++) {
				char ratio[24] = "";
				/* each thread against the same CPU running alone */
				double x = r->med[t] / res[w][t].med[0];

				if (n > 1)
					snprintf(ratio, sizeof(ratio), "%.2f%s", x,
						 w == W_XFDR && x > 1.10 ? " >1.10" : "");
				printf("%-32s %7u %4d %8.2f %8.2f..%-8.2f %10s  %s\n",
				       k == 0 ? what_names[w] : "", n, r->cpu[t], r->med[t],
				       r->min[t], r->max[t], ratio, t == 0 ? r->trace : "");
			}
			status |= r->failed;
		}
	}
	printf("xfdr added over the call, ns/event: alone %.2f and %.2f; both at once %.2f and "
	       "%.2f\n",
	       res[W_XFDR][0].med[0] - res[W_CALL][0].med[0],
	       res[W_XFDR][1].med[0] - res[W_CALL][1].med[0],
	       res[W_XFDR][2].med[0] - res[W_CALL][2].med[0],
	       res[W_XFDR][2].med[1] - res[W_CALL][2].med[1]);
	siblings(cpu[0], sib0, sizeof(sib0));
	siblings(cpu[1], sib1, sizeof(sib1));
	printf(
	    "CPUs %d and %d (core siblings as the kernel sees them: %s | %s): two hyperthreads, or "
	    "two vCPUs the host runs on one core, slow each other regardless of the recorder; "
	    "the floor's 2-thread ratio shows that share.\n",
	    cpu[0], cpu[1], sib0, sib1);
	printf(
	    "The callee stores into thread-local variables (bench/two_threads_callee.c); the last "
	    "row calls callee.c's bench_callee, whose globals both threads write.\n");
	return status;

usage:
	fprintf(stderr, "usage: threads -C TRACE_COUNT -o DIR [-r REPS] [-n EVENTS_PER_THREAD] "
			"[-b BUFFER_BYTES]\n");
	return 2;
}
