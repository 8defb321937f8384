/*
 * tests/unit/runtime/test_runtime_crash_unwind.c - a crash while another thread of the program is
 * inside libunwind leaves that thread as it was.
 *
 * libunwind's global cache: an unwind reads the caching policy, and when it is "global" blocks
 * every signal and takes the cache's lock; on the way out it reads the policy again, and
 * unlocks and restores the mask only if it is still "global". The crash handler used to set
 * the policy to "none": a thread inside that section then kept the lock and every signal
 * blocked for good.
 *
 * The window is held, not hoped for. The child ("--child DIR") defines dl_iterate_phdr(),
 * which libunwind calls inside that section: thread B, unwinding, is parked there. The main
 * thread A crashes. A watcher lets B go as soon as A is either waiting for the cache's lock
 * (its system call is futex, in /proc) or has reached the flush (an interposed renameat2(),
 * which then waits for B's report). B reports whether SIGUSR1 is still blocked after its
 * unwind returned, on stdout; the crash then completes.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "tests/support/child.h"
#include "tests/support/runtime_test.h"

#define CHILD_TIMEOUT_S 60
#define PATH_BYTES 512

/* ---- the child ------------------------------------------------------------------------ */

static sem_t b_parked, b_go, b_reported;
static __thread int park_here;
static volatile int parked_once, a_in_flush;
static pid_t tid_a;

/*
 * Not under AddressSanitizer: its runtime walks the modules with dl_iterate_phdr() before
 * dlsym() can answer (and the case is skipped there anyway).
 */
#ifndef __SANITIZE_ADDRESS__
int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	static int (*real)(int (*)(struct dl_phdr_info *, size_t, void *), void *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "dl_iterate_phdr");
	if (park_here && !parked_once) {
		parked_once = 1;
		sem_post(&b_parked);
		sem_wait(&b_go);
	}
	return real(cb, data);
}

/* The flush's rename of its trace: held until B has said how it came out. */
int renameat2(int old_dir, const char *old_path, int new_dir, const char *new_path, unsigned flags)
{
	if (!a_in_flush) {
		a_in_flush = 1;
		sem_wait(&b_reported);
	}
	return (int)syscall(SYS_renameat2, old_dir, old_path, new_dir, new_path, flags);
}
#endif

static int a_waits_in_futex(void)
{
	char path[64], text[64] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid_a);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	return n > 0 && !strncmp(text, "202 ", 4); /* SYS_futex on x86-64 */
}

static void *thread_b(void *arg)
{
	unw_context_t ctx;
	unw_cursor_t cur;
	sigset_t mask;

	(void)arg;
	park_here = 1;
	unw_getcontext(&ctx);
	unw_init_local(&cur, &ctx);
	while (unw_step(&cur) > 0)
		;
	park_here = 0;
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	printf("B: SIGUSR1 %s\n", sigismember(&mask, SIGUSR1) ? "blocked" : "open");
	fflush(stdout);
	sem_post(&b_reported);
	for (;;)
		pause();
	return NULL;
}

static void *watcher(void *arg)
{
	(void)arg;
	while (!a_in_flush && !a_waits_in_futex())
		sched_yield();
	sem_post(&b_go);
	return NULL;
}

static int child_main(const char *dir)
{
	struct xfdr_options o;
	pthread_t b, w;

	tid_a = (pid_t)syscall(SYS_gettid);
	xfdr_options_default(&o);
	o.output = dir;
	o.start = 1;
	o.flush_at_exit = 0;
	o.flush_on_crash = 1;
	if (xfdr_init(&o))
		return 2;
	sem_init(&b_parked, 0, 0);
	sem_init(&b_go, 0, 0);
	sem_init(&b_reported, 0, 0);
	if (pthread_create(&b, NULL, thread_b, NULL))
		return 3;
	sem_wait(&b_parked);
	if (pthread_create(&w, NULL, watcher, NULL))
		return 3;
	xfdr_enter(1);
	*(volatile int *)(uintptr_t)8 = 1;
	return 0;
}

/* ---- the parent ----------------------------------------------------------------------- */

static void other_unwind_left_as_it_was(void **state)
{
	char dir[PATH_BYTES];
	char *argv[] = {"test_runtime_crash_unwind", "--child", dir, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .program = "/proc/self/exe",
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = CHILD_TIMEOUT_S,
	};
	struct child_result r;

	(void)state;
	if (ts_sanitized()) {
		printf("skipped under a sanitizer: its own SIGSEGV handler ends the child\n");
		return;
	}
	snprintf(dir, sizeof(dir), "%sunwind/", ts_dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	child_run(&spec, &r);
	if (r.signal != SIGSEGV || !strstr(r.out, "B: SIGUSR1 open"))
		fail_msg("child ended with status %d (signal %d); stdout:\n%s\nstderr:\n%s",
			 r.status, r.signal, r.out, r.err);
	if (!strstr(r.err, "xfdr: SIGSEGV: wrote "))
		fail_msg("no trace: %s", r.err);
	child_result_free(&r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(other_unwind_left_as_it_was),
	};

	if (argc > 2 && !strcmp(argv[1], "--child"))
		return child_main(argv[2]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
