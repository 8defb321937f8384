/*
 * tests/e2e/record_prog.c - the program `xfdr record` runs in tests/system/test_cli_record.c. It
 * knows nothing of xfdr; the test builds it with -finstrument-functions, with clang's XRay
 * (linked with -lxfdr, and not), and with no instrumentation at all.
 *
 * It first prints "preload: <LD_PRELOAD or (none)>" on stdout, then does what argv[1] says:
 *   spin           main -> hot() spins 150 ms, warm() twice 40 ms, tiny() 1000 times: after
 *                  main, which holds them all, hot has by far the most total time
 *   exit N         a few calls, then exit(N)
 *   term           kills itself with SIGTERM inside a call (the recorder flushes, then dies)
 *   usr1 DIR       installs a SIGUSR1 handler, creates DIR/ready, waits at most 10 s for the
 *                  signal, writes "SIGUSR1 si_code=C" to DIR/got and exits 0 (3 on timeout)
 *   many N         N calls of tiny(): enough to fill a small pool
 *   threads N      main (named "early") calls tiny() once, then a thread named "late" calls it
 *                  N times and ends, then main calls it once more: in a small ring, main's
 *                  one buffer (never full) keeps both of its calls and late's oldest are lost
 *   segv           writes through a null pointer in crash_here(), called from main
 *   segv_unseen    the same, after setting SIGSEGV to SIG_DFL with the rt_sigaction system
 *                  call, which no library sees: whatever handler was there is gone
 *   heap_overflow  reads one byte past a malloc()ed block in read_past(), called from main:
 *                  built with AddressSanitizer, its report ends the program
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t got_code = 1; /* 1: not yet (si_code is <= 0 from kill) */

/*
 * Spin for a while in the calling function itself: the clock is read through libc, which is
 * not instrumented, so the spin adds no events and no callee's time.
 */
#define SPIN(seconds)                                                                              \
	do {                                                                                       \
		struct timespec ts_;                                                               \
		double end_;                                                                       \
                                                                                                   \
		clock_gettime(CLOCK_MONOTONIC, &ts_);                                              \
		end_ = (double)ts_.tv_sec + (double)ts_.tv_nsec / 1e9 + (seconds);                 \
		do {                                                                               \
			clock_gettime(CLOCK_MONOTONIC, &ts_);                                      \
			sink++;                                                                    \
		} while ((double)ts_.tv_sec + (double)ts_.tv_nsec / 1e9 < end_);                   \
	} while (0)

__attribute__((noinline)) static void hot(void)
{
	SPIN(0.150);
}

__attribute__((noinline)) static void warm(void)
{
	SPIN(0.040);
}

__attribute__((noinline)) static void tiny(unsigned long i)
{
	sink += i;
}

/* The "late" thread of the threads mode: *arg calls of tiny(). */
static void *late(void *arg)
{
	unsigned long i, n = *(unsigned long *)arg;

	prctl(PR_SET_NAME, "late", 0, 0, 0);
	for (i = 0; i < n; i++)
		tiny(i);
	return NULL;
}

__attribute__((noinline)) static void die_by_sigterm(void)
{
	kill(getpid(), SIGTERM);
	for (;;)
		pause();
}

static volatile int *volatile nowhere; /* NULL, read at run time: the fault stays */

__attribute__((noinline)) static void crash_here(void)
{
	*nowhere = 1;
}

__attribute__((noinline)) static void read_past(void)
{
	volatile char *block = malloc(8);

	if (block)
		sink = (unsigned char)block[8];
	free((void *)block);
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	got_code = si->si_code;
}

static int wait_usr1(const char *dir)
{
	struct sigaction sa;
	char path[4096];
	int waited;
	FILE *f;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	snprintf(path, sizeof(path), "%s/ready", dir);
	f = fopen(path, "w");
	if (!f)
		return 4;
	fclose(f);
	for (waited = 0; got_code == 1 && waited < 10000; waited++)
		usleep(1000);
	if (got_code == 1)
		return 3;
	snprintf(path, sizeof(path), "%s/got", dir);
	f = fopen(path, "w");
	if (!f)
		return 4;
	fprintf(f, "SIGUSR1 si_code=%d\n", (int)got_code);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *preload = getenv("LD_PRELOAD");
	unsigned long i, n;

	printf("preload: %s\n", preload && *preload ? preload : "(none)");
	fflush(stdout);
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "spin")) {
		hot();
		warm();
		warm();
		for (i = 0; i < 1000; i++)
			tiny(i);
		return 0;
	}
	if (!strcmp(argv[1], "exit") && argc > 2) {
		tiny(1);
		warm();
		exit(atoi(argv[2]));
	}
	if (!strcmp(argv[1], "term")) {
		tiny(1);
		die_by_sigterm();
	}
	if (!strcmp(argv[1], "segv_unseen")) {
		/* the kernel's struct sigaction: handler, flags, restorer, mask */
		unsigned long dfl[4] = {(unsigned long)SIG_DFL, 0, 0, 0};

		if (syscall(SYS_rt_sigaction, SIGSEGV, dfl, NULL, sizeof(unsigned long)))
			return 3;
	}
	if (!strcmp(argv[1], "segv") || !strcmp(argv[1], "segv_unseen")) {
		tiny(1);
		crash_here();
	}
	if (!strcmp(argv[1], "heap_overflow")) {
		tiny(1);
		read_past();
		return 0;
	}
	if (!strcmp(argv[1], "usr1") && argc > 2)
		return wait_usr1(argv[2]);
	if (!strcmp(argv[1], "threads") && argc > 2) {
		pthread_t t;

		n = strtoul(argv[2], NULL, 10);
		prctl(PR_SET_NAME, "early", 0, 0, 0);
		tiny(0);
		if (pthread_create(&t, NULL, late, &n) || pthread_join(t, NULL))
			return 3;
		tiny(1);
		return 0;
	}
	if (!strcmp(argv[1], "many") && argc > 2) {
		n = strtoul(argv[2], NULL, 10);
		for (i = 0; i < n; i++)
			tiny(i);
		return 0;
	}
	return 2;
}
