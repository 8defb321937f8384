/*
 * bench/startup.c - what a large pool costs at start: xfdr_init() and the time until the whole
 * pool is populated, beside what xfdr did before (one mmap with MAP_POPULATE, 4 KiB pages).
 *
 * For pools of 64, 1024 and 4096 buffers of 1 MiB, three methods, one after the other, never
 * side by side:
 *   MAP_POPULATE  mmap(MAP_POPULATE) of the pool's size with transparent huge pages disabled
 *                 for the process (prctl PR_SET_THP_DISABLE): the old pool_memory_map();
 *   xfdr          xfdr_init() with that geometry, then the time until every buffer's mem_ready
 *                 is set (the background thread is done), polled every 100 us; and the share
 *                 of the pool the kernel backed with huge pages (/proc/self/smaps);
 *   xfdr, no THP  the same with huge pages disabled, as on a kernel without THP.
 * After each xfdr measurement an init with one buffer releases the pool (untimed), so every
 * timed init maps a new one. The order of the methods rotates from one repetition to the next.
 *
 * Warm or cold memory: on a VM that returns freed memory to its host (virtio-balloon free page
 * reporting, about 2 s after it was freed), touching it again faults in the host too, often ten
 * times the guest's own cost. By default each size starts with one untimed xfdr pass and the
 * measurements follow back to back, so they mostly find warm memory; -w SECONDS sleeps that
 * long before every measurement instead, so that all of them find cold memory (what a program
 * started on an idle VM meets).
 *
 *   startup [-r REPS] [-w SECONDS]   the table on stdout (median of REPS, default 3)
 * Exit status: 0, 1 when a measurement failed (the table is printed anyway), 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "runtime/pool/pool.h" /* rt_pool: the descriptors' mem_ready (libxfdr.a, hidden) */
#include "xfdr/xfdr.h"

#define MIB ((size_t)1 << 20)
#define MAX_REPS 15
#define POPULATED_TIMEOUT_MS 120000.0

enum method { M_BASELINE, M_XFDR, M_XFDR_NOTHP, M_COUNT };

/* One repetition of one size. */
struct sample {
	double baseline_ms;
	double init_ms[2], populated_ms[2]; /* [0]: THP as the kernel is set up, [1]: disabled */
	double huge_pct;		    /* of the pool, THP as set up */
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int thp_disable(int off)
{
	return prctl(PR_SET_THP_DISABLE, off ? 1 : 0, 0, 0, 0);
}

/* Milliseconds mmap(MAP_POPULATE) of bytes takes with 4 KiB pages, or -1. */
static double baseline_ms(size_t bytes)
{
	double t0, ms;
	void *p;

	if (thp_disable(1))
		return -1;
	t0 = now_ms();
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		 -1, 0);
	ms = now_ms() - t0;
	if (p != MAP_FAILED)
		munmap(p, bytes);
	thp_disable(0);
	return p == MAP_FAILED ? -1 : ms;
}

static int init_pool(size_t buffers)
{
	struct xfdr_options o;

	xfdr_options_default(&o);
	o.buffer_size = MIB;
	o.buffer_max = buffers;
	o.flush_at_exit = 0;
	return xfdr_init(&o);
}

/* Wait until every buffer is marked populated; the time it happened, or -1 on a time-out. */
static double wait_populated(double t0)
{
	const struct timespec tick = {0, 100000};
	uint32_t i = 0;

	while (i < rt_pool.count) {
		/* pairs with the release of mem_ready in pool_memory.c */
		if (__atomic_load_n(&rt_pool.descs[i].mem_ready, __ATOMIC_ACQUIRE)) {
			i++;
			continue;
		}
		if (now_ms() - t0 > POPULATED_TIMEOUT_MS)
			return -1;
		nanosleep(&tick, NULL);
	}
	return now_ms();
}

/* Percent of the pool's mapping that /proc/self/smaps reports as AnonHugePages, or -1. */
static double huge_percent(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long start, end, kib;
	char line[512];
	int in_pool = 0;
	double pct = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in_pool = start == (unsigned long)(uintptr_t)rt_pool.base;
		else if (in_pool && sscanf(line, "AnonHugePages: %lu kB", &kib) == 1)
			pct = 100.0 * (double)kib * 1024 / (double)rt_pool.map_bytes;
	}
	fclose(f);
	return pct;
}

/* One xfdr measurement: xfdr_init() and populated (ms from the call), huge-page share. */
static int measure_xfdr(size_t buffers, int nothp, double *init_ms, double *populated_ms,
			double *huge_pct)
{
	double t0, t1, t2;
	int rc;

	if (nothp && thp_disable(1))
		return -errno;
	t0 = now_ms();
	rc = init_pool(buffers);
	t1 = now_ms();
	t2 = rc ? -1 : wait_populated(t0);
	if (huge_pct)
		*huge_pct = huge_percent();
	if (!rc && t2 < 0)
		rc = -ETIMEDOUT;
	/* Release the pool untimed, so that the next timed init maps a new one. */
	if (!rc)
		rc = init_pool(1);
	if (nothp)
		thp_disable(0);
	*init_ms = t1 - t0;
	*populated_ms = t2 - t0;
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void print_file_line(const char *label, const char *path)
{
	char line[256] = "?";
	FILE *f = fopen(path, "r");

	if (f) {
		if (!fgets(line, sizeof(line), f))
			strcpy(line, "?");
		fclose(f);
	}
	line[strcspn(line, "\n")] = '\0';
	printf("%s%s\n", label, line);
}

static void print_machine(void)
{
	char line[256], cpu[256] = "?";
	FILE *f = fopen("/proc/cpuinfo", "r");
	struct utsname u;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "model name : %255[^\n]", cpu) == 1)
			break;
	if (f)
		fclose(f);
	uname(&u);
	printf("machine:  %s; %ld online CPUs; %.1f GiB RAM; %s %s\n", cpu,
	       sysconf(_SC_NPROCESSORS_ONLN),
	       (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / (1024.0 * MIB),
	       u.sysname, u.release);
	print_file_line("THP:      enabled ", "/sys/kernel/mm/transparent_hugepage/enabled");
	print_file_line("          defrag  ", "/sys/kernel/mm/transparent_hugepage/defrag");
}

/* One timed measurement of one method into x; 0 or -1 (reported on stderr). */
static int measure(enum method m, size_t buffers, struct sample *x)
{
	int rc;

	switch (m) {
	case M_BASELINE:
		x->baseline_ms = baseline_ms(buffers * MIB);
		rc = x->baseline_ms < 0 ? -errno : 0;
		break;
	case M_XFDR:
		rc = measure_xfdr(buffers, 0, &x->init_ms[0], &x->populated_ms[0], &x->huge_pct);
		break;
	default:
		rc = measure_xfdr(buffers, 1, &x->init_ms[1], &x->populated_ms[1], NULL);
		break;
	}
	if (rc)
		fprintf(stderr, "startup: %zu MiB pool, method %d: %s\n", buffers, (int)m,
			strerror(-rc));
	return rc ? -1 : 0;
}

/* "median" or "min..max" of n values, into out. */
static const char *fmt_stat(double *v, unsigned n, int spread, char *out, size_t out_bytes)
{
	double m[MAX_REPS];

	memcpy(m, v, n * sizeof(*v));
	qsort(m, n, sizeof(*m), cmp_double);
	if (spread)
		snprintf(out, out_bytes, "%.0f..%.0f", m[0], m[n - 1]);
	else
		snprintf(out, out_bytes, "%.1f", n % 2 ? m[n / 2] : (m[n / 2 - 1] + m[n / 2]) / 2);
	return out;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {64, 1024, 4096}; /* buffers of 1 MiB */
	enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };
	static struct sample s[NSIZES][MAX_REPS];
	unsigned reps = 3, wait_s = 0, r, i, k;
	int opt, failed = 0;
	struct sample scratch;

	while ((opt = getopt(argc, argv, "r:w:")) != -1) {
		if (opt == 'r')
			reps = (unsigned)atoi(optarg);
		else if (opt == 'w')
			wait_s = (unsigned)atoi(optarg);
		if (opt == '?' || reps < 1 || reps > MAX_REPS || wait_s > 60) {
			fprintf(stderr, "usage: %s [-r REPS (1..%d)] [-w SECONDS (0..60)]\n",
				argv[0], MAX_REPS);
			return 2;
		}
	}
	if (init_pool(1)) { /* the runtime's one-time set-up, untimed */
		fprintf(stderr, "startup: xfdr_init failed\n");
		return 1;
	}
	for (i = 0; i < NSIZES; i++)
		for (r = 0; r < reps; r++)
			for (k = 0; k < M_COUNT; k++) {
				enum method m = (enum method)((k + r) % M_COUNT);

				if (wait_s)
					sleep(wait_s);
				else if (measure(m, sizes[i], &scratch))
					failed =
					    1; /* untimed: warms the memory this method takes */
				if (measure(m, sizes[i], &s[i][r]))
					failed = 1;
			}

	printf("xfdr start-up: ms until a pool of 1 MiB buffers is ready to record into\n");
	printf("command:  %s -r %u -w %u\n", argv[0], reps, wait_s);
	print_machine();
	printf(
	    "method:   median of %u, min..max below; %s memory (bench/README.md);\n"
	    "          MAP_POPULATE = the old pool_memory_map(): one mmap with MAP_POPULATE,\n"
	    "          4 KiB pages; xfdr_init = the call; populated = from the call until the\n"
	    "          background thread has populated every buffer; huge = share of the pool in\n"
	    "          transparent huge pages; no THP = the same with THP disabled\n\n",
	    reps, wait_s ? "cold" : "warm");
	printf("%-7s %7s  %12s  %9s %9s %5s  %9s %9s\n", "", "", "before", "xfdr", "", "", "xfdr,",
	       "no THP");
	printf("%-7s %7s  %12s  %9s %9s %5s  %9s %9s\n", "pool", "buffers", "MAP_POPULATE",
	       "xfdr_init", "populated", "huge", "xfdr_init", "populated");
	for (k = 0; k < 2; k++) {
		if (k)
			printf("min..max\n");
		for (i = 0; i < NSIZES; i++) {
			double v[6][MAX_REPS];
			char pool[32], c[6][32];

			for (r = 0; r < reps; r++) {
				v[0][r] = s[i][r].baseline_ms;
				v[1][r] = s[i][r].init_ms[0];
				v[2][r] = s[i][r].populated_ms[0];
				v[3][r] = s[i][r].huge_pct;
				v[4][r] = s[i][r].init_ms[1];
				v[5][r] = s[i][r].populated_ms[1];
			}
			if (sizes[i] >= 1024)
				snprintf(pool, sizeof(pool), "%zu GiB", sizes[i] / 1024);
			else
				snprintf(pool, sizeof(pool), "%zu MiB", sizes[i]);
			for (r = 0; r < 6; r++)
				fmt_stat(v[r], reps, k, c[r], sizeof(c[r]));
			/* The huge-page share, in percent, only beside the medians. */
			if (k)
				c[3][0] = '\0';
			else
				snprintf(c[3], sizeof(c[3]), "%.0f%%", atof(c[3]));
			printf("%-7s %7zu  %12s  %9s %9s %5s  %9s %9s\n", pool, sizes[i], c[0],
			       c[1], c[2], c[3], c[4], c[5]);
		}
	}
	if (failed)
		printf("\nNOT A CLEAN RUN: a measurement failed (stderr)\n");
	return failed;
}
