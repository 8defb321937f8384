/*
 * bench/harness.c - timing, pinning, medians and the row protocol of bench/harness.h.
 *
 * Method: one unmeasured warm-up repetition, then `reps` repetitions of `events` events each,
 * every repetition timed on its own with CLOCK_MONOTONIC; the row reports the median (robust
 * against one repetition hit by an interrupt or a migration of the host's vCPU) with the
 * min and max beside it so a reader sees the spread.
 */
#include "bench/harness.h"

#include <cpuid.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef __x86_64__
#error "the benchmarks read the TSC and compare with XRay, which exist here only on x86-64"
#endif

BENCH_NOINSTR uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

BENCH_NOINSTR int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

BENCH_NOINSTR uint64_t bench_parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0) {
		fprintf(stderr, "bench: %s must be a positive integer, got '%s'\n", what, s);
		exit(2);
	}
	return v;
}

/*
 * Pin to the CPU we already run on: the one the scheduler chose is as good as any, and
 * staying there means no migration inside a timed loop (which would also make the
 * recorders write NewCPUId records the other rows do not pay for).
 */
BENCH_NOINSTR static void pin_self(const char *name)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (cpu < 0) {
		printf("info\tpinned\t%s: no (sched_getcpu: %s)\n", name, strerror(errno));
		return;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		printf("info\tpinned\t%s: no (sched_setaffinity: %s)\n", name, strerror(errno));
	else
		printf("info\tpinned\t%s: cpu %d\n", name, cpu);
}

/* bench_loop_workload() needs the depth; a loop function gets only the event count. */
static unsigned tree_depth;
static enum bench_workload workload;

BENCH_NOINSTR void bench_loop_workload(uint64_t events)
{
	uint64_t i;

	if (workload == BENCH_TREE) {
		bench_tree(tree_depth);
		return;
	}
	for (i = 0; i < events / 2; i++)
		bench_callee(i);
}

BENCH_NOINSTR int bench_wants(const struct bench_cfg *cfg, const char *key)
{
	return !cfg->row || !strcmp(cfg->row, key);
}

BENCH_NOINSTR const char *bench_workload_name(const struct bench_cfg *cfg)
{
	return cfg->workload == BENCH_TREE ? "tree" : "leaf";
}

/* The deepest tree whose 2 x (2^(depth+1) - 1) events fit in `events` (at least depth 1). */
BENCH_NOINSTR static unsigned depth_for(uint64_t events)
{
	unsigned d = 1;

	while (d < 40 && 2 * ((2ull << (d + 1)) - 1) <= events)
		d++;
	return d;
}

BENCH_NOINSTR void bench_init(struct bench_cfg *cfg, int argc, char **argv)
{
	const char *name;
	int i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->reps = 7;
	cfg->events = 2000000;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-r") && i + 1 < argc) {
			cfg->reps = (unsigned)bench_parse_u64(argv[++i], "-r (repetitions)");
		} else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			cfg->events = bench_parse_u64(argv[++i], "-n (events per repetition)");
		} else if (!strcmp(argv[i], "-b") && i + 1 < argc) {
			cfg->buf_bytes = bench_parse_u64(argv[++i], "-b (buffer bytes)");
		} else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
			cfg->buf_count = bench_parse_u64(argv[++i], "-m (buffer count)");
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			cfg->out_dir = argv[++i];
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			cfg->clock = argv[++i];
		} else if (!strcmp(argv[i], "-O") && i + 1 < argc && strchr(argv[i + 1], '=') &&
			   cfg->n_xfdr_opts < sizeof(cfg->xfdr_opts) / sizeof(cfg->xfdr_opts[0])) {
			cfg->xfdr_opts[cfg->n_xfdr_opts++] = argv[++i];
		} else if (!strcmp(argv[i], "-k") && i + 1 < argc) {
			cfg->row = argv[++i];
		} else if (!strcmp(argv[i], "-w") && i + 1 < argc &&
			   (!strcmp(argv[i + 1], "leaf") || !strcmp(argv[i + 1], "tree"))) {
			cfg->workload = !strcmp(argv[++i], "tree") ? BENCH_TREE : BENCH_LEAF;
		} else {
			fprintf(stderr,
				"usage: %s [-r REPS] [-n EVENTS] [-w leaf|tree] [-k ROW] [-b "
				"BUFFER_BYTES] "
				"[-m BUFFER_COUNT] [-o DIR] [-c CLOCK] [-O KEY=VALUE]...\n",
				argv[0]);
			exit(2);
		}
	}
	if (cfg->reps > 101) {
		fprintf(stderr, "bench: -r must be at most 101\n");
		exit(2);
	}
	/* Calls come in entry/exit pairs: an odd count could not be measured by every row. */
	cfg->events += cfg->events & 1;
	if (cfg->workload == BENCH_TREE) {
		cfg->tree_depth = depth_for(cfg->events);
		cfg->events = 2 * ((2ull << cfg->tree_depth) - 1);
	}
	tree_depth = cfg->tree_depth;
	workload = cfg->workload;
	name = strrchr(argv[0], '/');
	name = name ? name + 1 : argv[0];
	printf("info\tcompiler\t%s: %s %s\n", name,
#if defined(__clang__)
	       "clang",
#else
	       "gcc",
#endif
	       __VERSION__);
	pin_self(name);
}

/*
 * Minor page faults taken inside the timed repetitions of the last bench_measure(): a
 * recorder that maps its buffers lazily pays the first touch of each page there, one that
 * populates them at start does not, and the table shows which is which.
 */
static long last_faults;

/* Calls the callees counted during the last bench_measure(), and how many it made. */
static uint64_t last_calls, last_expected_calls;

BENCH_NOINSTR static long minor_faults(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

BENCH_NOINSTR void bench_measure(const struct bench_cfg *cfg, bench_loop_fn loop, int warmup,
				 double *ns)
{
	unsigned r;
	uint64_t t0, t1;
	long faults = 0, f0;
	uint64_t calls0 = bench_calls;

	if (warmup)
		loop(cfg->events);
	for (r = 0; r < cfg->reps; r++) {
		f0 = minor_faults();
		t0 = bench_now_ns();
		loop(cfg->events);
		t1 = bench_now_ns();
		faults += minor_faults() - f0;
		ns[r] = (double)(t1 - t0) / (double)cfg->events;
	}
	last_faults = faults;
	last_calls = bench_calls - calls0;
	last_expected_calls = (uint64_t)(cfg->reps + !!warmup) * (cfg->events / 2);
}

BENCH_NOINSTR void bench_print_row(const struct bench_cfg *cfg, const char *key, const char *label,
				   double *ns, const char *note)
{
	char failed[160];

	/* Rows without calls (the floor, the clocks) count none; every other row all of them. */
	if (last_calls != 0 && last_calls != last_expected_calls) {
		snprintf(failed, sizeof(failed), "FAILED: the callees counted %llu calls, not %llu",
			 (unsigned long long)last_calls, (unsigned long long)last_expected_calls);
		note = failed;
	}
	qsort(ns, cfg->reps, sizeof(*ns), bench_cmp_double);
	printf("row\t%s\t%s\t%.2f\t%.2f\t%.2f\t%u\t%llu\t%s\t%ld\t%s\t%llu\n", key, label,
	       ns[cfg->reps / 2], ns[0], ns[cfg->reps - 1], cfg->reps,
	       (unsigned long long)cfg->events, note ? note : "", last_faults,
	       bench_workload_name(cfg), (unsigned long long)last_calls);
	fflush(stdout);
}

BENCH_NOINSTR double bench_run_row(const struct bench_cfg *cfg, const char *key, const char *label,
				   bench_loop_fn loop, const char *note)
{
	double ns[101];

	bench_measure(cfg, loop, 1, ns);
	bench_print_row(cfg, key, label, ns, note);
	return ns[cfg->reps / 2];
}

BENCH_NOINSTR static void print_cpu_model(void)
{
	char line[512];
	char *v;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f) {
		printf("info\tcpu\tunknown (/proc/cpuinfo: %s)\n", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) != 0 || !(v = strchr(line, ':')))
			continue;
		v += 1 + (v[1] == ' ');
		v[strcspn(v, "\n")] = '\0';
		printf("info\tcpu\t%s\n", v);
		fclose(f);
		return;
	}
	fclose(f);
	printf("info\tcpu\tunknown (no model name in /proc/cpuinfo)\n");
}

/* The TSC's rate against CLOCK_MONOTONIC over 50 ms: what turns the recorders' ticks into time. */
BENCH_NOINSTR static void print_tsc_rate(void)
{
	uint64_t t0, c0, t1, c1;
	uint32_t lo, hi;

	t0 = bench_now_ns();
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	c0 = (uint64_t)hi << 32 | lo;
	do
		t1 = bench_now_ns();
	while (t1 - t0 < 50000000u);
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	c1 = (uint64_t)hi << 32 | lo;
	printf("info\ttsc_hz\t%.3f GHz (measured against CLOCK_MONOTONIC)\n",
	       (double)(c1 - c0) / (double)(t1 - t0));
}

BENCH_NOINSTR void bench_print_machine(void)
{
	unsigned a, b, c, d;
	struct utsname u;
	int rdtscp = 0, invariant = 0;

	print_cpu_model();
	/* What CPUID says, not /proc/cpuinfo: that is what the recorders test at run time. */
	if (__get_cpuid(0x80000001u, &a, &b, &c, &d))
		rdtscp = !!(d & (1u << 27));
	if (__get_cpuid(0x80000007u, &a, &b, &c, &d))
		invariant = !!(d & (1u << 8));
	printf("info\trdtscp\t%s (CPUID 0x80000001 EDX[27])\n", rdtscp ? "present" : "absent");
	printf("info\tinvariant_tsc\t%s (CPUID 0x80000007 EDX[8])\n", invariant ? "yes" : "no");
	print_tsc_rate();
	if (uname(&u) == 0)
		printf("info\tkernel\t%s %s %s\n", u.sysname, u.release, u.machine);
	printf("info\tonline_cpus\t%ld\n", sysconf(_SC_NPROCESSORS_ONLN));
}
