/*
 * bench/fork_cost.c - what a fork child that records nothing costs with xfdr recording in the
 * parent, beside the same process without xfdr.
 *
 * Rows, each repetition in a process of its own (this program runs itself with the row's name),
 * the rows taking turns:
 *   no-xfdr            xfdr linked in, never initialized;
 *   memory             recording, backing=memory, the default pool (256 buffers of 64 KiB);
 *   file               recording, backing=file, the same pool, in a temporary directory;
 *   threaded-no-xfdr   no-xfdr in a process that has had a thread: glibc's fork() takes its
 *                      multi-threaded path (the baseline of a program with threads);
 *   threaded-memory    memory, in such a process;
 *   cyg-memory         memory, once the -finstrument-functions hooks have met CYG_FUNCTIONS
 *                      functions (called here as instrumented code calls them): the function
 *                      map's tables created and grown, which used to start a thread;
 *   threaded-cyg-memory  cyg-memory in a process that has had a thread: the fork handlers
 *                      hold the map's locks and urcu-bp's across fork().
 * Each repetition times ROUNDS rounds of fork() + _exit(0) in the child + waitpid(), and of
 * fork() + execv("/bin/true") + waitpid(); the table shows the median microseconds of a round
 * over REPS repetitions, and the files the children left beyond the parent's live files (there
 * must be none: a nonzero count fails the run). Everything runs on one CPU, the one the
 * program starts on: with the child free to run on another, the same row moved by 100 us and
 * more between repetitions on the 2-vCPU VMs, pinned by about 10.
 * What a fork() copies, the same on every machine, from /proc/self/smaps and pagemap just
 * before the rounds: the mappings (all but MADV_DONTFORK ones); the kB of anonymous pages whose
 * page table entries it copies and write-protects (all but MADV_WIPEONFORK ones, which the
 * child gets zeroed); and the page-table pages the child gets (one for each 2 MiB, 1 GiB and
 * 512 GiB span that holds such a page or a guard marker). A page-table page is the largest of
 * these costs: the kernel allocates and zeroes it, 1 to 3 us each on the AMD EPYC VM (a
 * program mapping 50 of them itself), where a mapping costs 0.1 to 0.4 us. Every row first
 * writes to the heap, as a program does before it forks: the heap's page table is the
 * program's, not xfdr's.
 *
 *   fork_cost [-r REPS] [-n ROUNDS]        the table on stdout (-h: the usage)
 *   fork_cost --row NAME ROUNDS            one repetition of a row (internal)
 * Exit status: 0, 1 when a row failed, 2 on bad usage.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xfdr/xfdr.h"

#define MAX_REPS 31
#define CYG_FUNCTIONS 20000

/* The -finstrument-functions hooks (runtime/hooks/cyg.c). */
void __cyg_profile_func_enter(void *this_fn, void *call_site);
void __cyg_profile_func_exit(void *this_fn, void *call_site);

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One round: fork, the child exits (or execs /bin/true), the parent waits. 0 or -1. */
static int one_round(int exec_true)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (exec_true) {
			char *const argv[] = {"true", NULL};

			execv("/bin/true", argv);
		}
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return 0;
}

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Distinct spans at one level of the page tables (see the top); at most SPANS are told apart. */
#define SPANS 256
struct spans {
	uint64_t at[SPANS];
	int n;
};

static void spans_add(struct spans *s, uint64_t span)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->at[i] == span)
			return;
	if (s->n < SPANS)
		s->at[s->n++] = span;
}

/*
 * The pages of [start, end) that fork() copies the page table entries of (present, swapped or
 * a guard marker: /proc/self/pagemap bits 63, 62, 58), added to the spans of each level.
 */
static void spans_of_pages(int pagemap, unsigned long start, unsigned long end,
			   struct spans level[3])
{
	uint64_t e[512];
	unsigned long page = start;

	while (page < end) {
		size_t want = (end - page) / 4096 < 512 ? (end - page) / 4096 : 512, i;
		ssize_t got = pread(pagemap, e, want * 8, (off_t)(page / 4096 * 8));

		if (got <= 0)
			return;
		for (i = 0; i < (size_t)got / 8; i++, page += 4096)
			if (e[i] >> 62 || (e[i] >> 58 & 1)) {
				spans_add(&level[0], page >> 21);
				spans_add(&level[1], page >> 30);
				spans_add(&level[2], page >> 39);
			}
	}
}

/*
 * What fork() copies of this process (see the top): *mappings, *anon_kb and *tables, or -1
 * each when /proc/self/smaps cannot be read (*tables -1 alone when pagemap cannot).
 */
static void fork_copies(int *mappings, long *anon_kb, int *tables)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	struct spans level[3] = {{{0}, 0}, {{0}, 0}, {{0}, 0}};
	unsigned long start = 0, end = 0;
	long kb = 0, anon = 0;
	char line[512];
	int n = 0;

	*mappings = *tables = -1;
	*anon_kb = -1;
	if (!f) {
		if (pagemap >= 0)
			close(pagemap);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			start = a;
			end = b;
			kb = 0;
		} else if (sscanf(line, "Anonymous: %ld kB", &kb) == 1) {
			continue;
		} else if (!strncmp(line, "VmFlags:", 8) && !strstr(line, " dc")) {
			n++;
			if (strstr(line, " wf"))
				continue;
			anon += kb;
			/* page tables are copied for anonymous pages and guard markers */
			if (pagemap >= 0 && (kb || strstr(line, " gu")))
				spans_of_pages(pagemap, start, end, level);
		}
	}
	fclose(f);
	*mappings = n;
	*anon_kb = anon;
	if (pagemap >= 0) {
		*tables = level[0].n + level[1].n + level[2].n;
		close(pagemap);
	}
}

/* A thread that has come and gone: glibc's fork() then takes its multi-threaded path for good. */
static void *no_work(void *arg)
{
	return arg;
}

/*
 * One repetition of a row: ROUNDS rounds of each kind; prints "<exit us> <exec us> <files left>
 * <mappings> <anonymous kB> <page tables>" (fork_copies()).
 * Returns 0, or 1 when a round failed or a child left a file.
 */
static int run_row(const char *name, int rounds)
{
	char dir[] = "/tmp/xfdr-fork-cost-XXXXXX", out[64];
	const char *kind = name;
	struct xfdr_options o;
	double t0, exit_us, exec_us;
	int k, before, left, cyg = 0, mappings, tables;
	long anon_kb;
	char *heap = malloc(64);

	if (!heap || !mkdtemp(dir))
		return 1;
	heap[0] = 1; /* see the top */
	if (!strncmp(name, "threaded-", 9)) {
		pthread_t t;

		kind = name + 9;
		if (pthread_create(&t, NULL, no_work, NULL) || pthread_join(t, NULL))
			return 1;
	}
	if (!strncmp(kind, "cyg-", 4)) {
		cyg = 1;
		kind += 4;
	}
	if (strcmp(kind, "no-xfdr")) {
		xfdr_options_default(&o);
		snprintf(out, sizeof(out), "%s/", dir);
		o.output = out;
		o.flush_at_exit = 0;
		o.backing = strcmp(kind, "file") ? XFDR_BACKING_MEMORY : XFDR_BACKING_FILE;
		if (xfdr_init(&o) || xfdr_start()) {
			fprintf(stderr, "fork_cost: %s: xfdr_init failed\n", name);
			return 1;
		}
		xfdr_enter(1); /* the parent records: its thread holds a buffer */
		xfdr_exit(1);
	}
	/* Synthetic function addresses: the hooks take any address and never read it. */
	for (k = 0; cyg && k < CYG_FUNCTIONS; k++) {
		__cyg_profile_func_enter((void *)(0x100000000000ul + 16ul * (unsigned)k), NULL);
		__cyg_profile_func_exit((void *)(0x100000000000ul + 16ul * (unsigned)k), NULL);
	}
	before = dir_entries(dir);
	fork_copies(&mappings, &anon_kb, &tables);
	t0 = now_us();
	for (k = 0; k < rounds; k++)
		if (one_round(0))
			return 1;
	exit_us = (now_us() - t0) / rounds;
	t0 = now_us();
	for (k = 0; k < rounds; k++)
		if (one_round(1))
			return 1;
	exec_us = (now_us() - t0) / rounds;
	left = dir_entries(dir) - before;
	printf("%.3f %.3f %d %d %ld %d\n", exit_us, exec_us, left, mappings, anon_kb, tables);
	free(heap);
	if (strcmp(kind, "no-xfdr"))
		xfdr_stop();
	snprintf(out, sizeof(out), "rm -rf %s", dir);
	if (system(out))
		return 1;
	return left ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const rows[] = {
	    "no-xfdr",
	    "memory",
	    "file",
	    "threaded-no-xfdr",
	    "threaded-memory",
	    "cyg-memory",
	    "threaded-cyg-memory",
	};
	enum { ROWS = sizeof(rows) / sizeof(rows[0]) };
	double exit_us[ROWS][MAX_REPS], exec_us[ROWS][MAX_REPS];
	int reps = 5, rounds = 200, opt, help = 0, status = 0, r, left[ROWS] = {0},
	    mappings[ROWS] = {0}, tables[ROWS] = {0};
	long anon_kb[ROWS] = {0};
	int cpu = sched_getcpu();
	cpu_set_t one;
	char cmd[4096];
	unsigned i;

	if (argc == 4 && !strcmp(argv[1], "--row"))
		return run_row(argv[2], atoi(argv[3]));
	while ((opt = getopt(argc, argv, "hr:n:")) != -1) {
		if (opt == 'r')
			reps = atoi(optarg);
		else if (opt == 'n')
			rounds = atoi(optarg);
		else if (opt == 'h')
			help = 1;
		else
			reps = 0; /* an unknown option: the usage, on stderr */
	}
	if (help || reps < 1 || reps > MAX_REPS || rounds < 1 || optind != argc) {
		fprintf(help ? stdout : stderr,
			"usage: %s [-r REPS (1..%d, default 5)] [-n ROUNDS (default 200)]\n"
			"       %s --row NAME ROUNDS   (one repetition of a row; internal)\n",
			argv[0], MAX_REPS, argv[0]);
		return help ? 0 : 2;
	}
	/* Every row process and its children inherit it. */
	CPU_ZERO(&one);
	if (cpu >= 0) {
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			cpu = -1;
	}
	/* The rows take turns, so that the machine's drift falls on all of them alike. */
	for (r = 0; r < reps; r++)
		for (i = 0; i < ROWS; i++) {
			FILE *f;
			int n, files = 0;

			snprintf(cmd, sizeof(cmd), "'%s' --row %s %d", argv[0], rows[i], rounds);
			f = popen(cmd, "r");
			n = f ? fscanf(f, "%lf %lf %d %d %ld %d", &exit_us[i][r], &exec_us[i][r],
				       &files, &mappings[i], &anon_kb[i], &tables[i])
			      : 0;
			if (!f || pclose(f) || n != 6) {
				fprintf(stderr, "fork_cost: row %s failed\n", rows[i]);
				status = 1;
				exit_us[i][r] = exec_us[i][r] = 0;
			}
			left[i] += files;
		}
	printf("fork children that record nothing: us per round (median of %d x %d rounds)\n", reps,
	       rounds);
	if (cpu >= 0)
		printf("pinned:   every process on CPU %d\n", cpu);
	else
		printf("pinned:   no (sched_setaffinity failed): expect wide variation\n");
	printf("copied:   what fork() copies: mappings, kB of anonymous pages whose page table\n"
	       "          entries it copies and write-protects, and the page-table pages the\n"
	       "          child gets for them (/proc/self/smaps and pagemap; -1: unreadable)\n");
	printf("%-20s %12s %14s %12s %9s %9s %12s\n", "parent", "fork+_exit", "fork+exec true",
	       "files left", "mappings", "anon kB", "page tables");
	for (i = 0; i < ROWS; i++)
		printf("%-20s %12.1f %14.1f %12d %9d %9ld %12d\n", rows[i],
		       median(exit_us[i], reps), median(exec_us[i], reps), left[i], mappings[i],
		       anon_kb[i], tables[i]);
	return status;
}
