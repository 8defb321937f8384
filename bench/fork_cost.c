/*
 * bench/fork_cost.c - what a fork child that records nothing costs with xfdr recording in the
 * parent, beside the same process without xfdr.
 *
 * Rows, each in a process of its own (this program runs itself with the row's name):
 *   no xfdr        xfdr linked in, never initialized;
 *   memory         recording, backing=memory, 256 buffers of 64 KiB (the default pool);
 *   file           recording, backing=file, the same pool, in a temporary directory.
 * Each row times ROUNDS rounds of fork() + _exit(0) in the child + waitpid(), and of
 * fork() + execv("/bin/true") + waitpid(), and prints the median microseconds of a round over
 * REPS repetitions. The file row also counts the files its children left (there must be none
 * beyond the parent's live files): a nonzero count fails the run.
 *
 *   fork_cost [-r REPS] [-n ROUNDS]        the table on stdout
 *   fork_cost --row NAME REPS ROUNDS        one row (internal)
 * Exit status: 0, 1 when a row failed, 2 on bad usage.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xfdr/xfdr.h"

#define MAX_REPS 31

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

static int run_row(const char *name, int reps, int rounds)
{
	double exit_us[MAX_REPS], exec_us[MAX_REPS];
	char dir[] = "/tmp/xfdr-fork-cost-XXXXXX", out[64];
	struct xfdr_options o;
	int r, k, before = 0, left;

	if (!mkdtemp(dir))
		return 1;
	if (strcmp(name, "no-xfdr")) {
		xfdr_options_default(&o);
		snprintf(out, sizeof(out), "%s/", dir);
		o.output = out;
		o.flush_at_exit = 0;
		o.backing = strcmp(name, "file") ? XFDR_BACKING_MEMORY : XFDR_BACKING_FILE;
		if (xfdr_init(&o) || xfdr_start()) {
			fprintf(stderr, "fork_cost: %s: xfdr_init failed\n", name);
			return 1;
		}
		xfdr_enter(1); /* the parent records: its thread holds a buffer */
		xfdr_exit(1);
	}
	before = dir_entries(dir);
	for (r = 0; r < reps; r++) {
		double t0 = now_us();

		for (k = 0; k < rounds; k++)
			if (one_round(0))
				return 1;
		exit_us[r] = (now_us() - t0) / rounds;
		t0 = now_us();
		for (k = 0; k < rounds; k++)
			if (one_round(1))
				return 1;
		exec_us[r] = (now_us() - t0) / rounds;
	}
	left = dir_entries(dir) - before;
	printf("%-10s %12.1f %14.1f %12d\n", name, median(exit_us, reps), median(exec_us, reps),
	       left);
	if (strcmp(name, "no-xfdr"))
		xfdr_stop();
	if (system("true") == -1 || (snprintf(out, sizeof(out), "rm -rf %s", dir), system(out)))
		return 1;
	return left ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const rows[] = {"no-xfdr", "memory", "file"};
	int reps = 5, rounds = 200, opt, status = 0;
	char cmd[4096];
	unsigned i;

	if (argc == 5 && !strcmp(argv[1], "--row"))
		return run_row(argv[2], atoi(argv[3]), atoi(argv[4]));
	while ((opt = getopt(argc, argv, "r:n:")) != -1) {
		if (opt == 'r')
			reps = atoi(optarg);
		else if (opt == 'n')
			rounds = atoi(optarg);
		else
			return 2;
	}
	if (reps < 1 || reps > MAX_REPS || rounds < 1)
		return 2;
	printf("fork children that record nothing: us per round (median of %d x %d rounds)\n", reps,
	       rounds);
	printf("%-10s %12s %14s %12s\n", "parent", "fork+_exit", "fork+exec true", "files left");
	fflush(stdout);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(cmd, sizeof(cmd), "'%s' --row %s %d %d", argv[0], rows[i], reps, rounds);
		if (system(cmd))
			status = 1;
	}
	return status;
}
