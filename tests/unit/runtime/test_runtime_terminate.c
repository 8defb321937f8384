/*
 * tests/unit/runtime/test_runtime_terminate.c - the flush signal and the termination signals.
 *
 * flush_signal runs in this process: two threads write while the test signals itself, and
 * each signal leaves a file that `xfdr verify` and llvm-xray accept, while recording goes on.
 * SIGTERM and SIGINT end the process, so they run in a child (this binary again, "--child
 * MODE DIR"): two threads write, the child signals itself, and it must end killed by that
 * signal with a valid file left behind. A program that owns SIGTERM (its own handler) or
 * ignores SIGINT before init keeps it so.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "tests/support/runtime_test.h"
#include "tests/support/child.h"
#include "runtime/record/thread_fast.h"

#define CHILD_TIMEOUT_S 60
#define PATH_BYTES 512

/* ---- writers ---------------------------------------------------------------------------- */

struct writer {
	pthread_t th;
	uint32_t fid;
	int stop;	 /* relaxed atomics: a flag, no data behind it */
	uint64_t events; /* events issued so far */
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	/*
	 * Paced: unpaced writers wrap the ring (32 small buffers) while a flush runs, so a flush
	 * can find every chosen buffer of a thread reused; these tests are about the signals.
	 */
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		xfdr_enter(w->fid);
		xfdr_exit(w->fid);
		__atomic_fetch_add(&w->events, 2, __ATOMIC_RELAXED);
		usleep(20);
	}
	return NULL;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Start two writers (fids 1 and 2) and wait until each has recorded at least `events`. */
static int writers_start(struct writer w[2], uint64_t events)
{
	int i, tries;

	for (i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].fid = (uint32_t)i + 1;
		if (pthread_create(&w[i].th, NULL, writer_main, &w[i]))
			return -1;
	}
	for (tries = 0; tries < 10000; tries++) {
		if (__atomic_load_n(&w[0].events, __ATOMIC_RELAXED) >= events &&
		    __atomic_load_n(&w[1].events, __ATOMIC_RELAXED) >= events)
			return 0;
		sleep_ms(1);
	}
	return -1;
}

static void writers_stop(struct writer w[2])
{
	int i;

	for (i = 0; i < 2; i++)
		__atomic_store_n(&w[i].stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 2; i++)
		pthread_join(w[i].th, NULL);
}

static int init_with(const char *dir, int flush_signal, int on_terminate, int on_crash)
{
	struct xfdr_options o;

	xfdr_stop();
	xfdr_options_default(&o);
	o.buffer_size = 4096;
	o.buffer_max = 32;
	o.flush_at_exit = 0;
	o.output = dir;
	o.flush_signal = flush_signal;
	o.flush_on_terminate = on_terminate;
	o.flush_on_crash = on_crash;
	return xfdr_init(&o);
}

/* ---- the child -------------------------------------------------------------------------- */

static volatile sig_atomic_t own_handler_ran;

static void own_handler(int sig)
{
	(void)sig;
	own_handler_ran = 1;
}

/* Does the final file "<dir>xfdr-test_runtime_terminate-<pid>-<n>.xray.map" exist yet? */
static int map_written(const char *dir, unsigned n)
{
	char path[PATH_BYTES + 64];

	snprintf(path, sizeof(path), "%sxfdr-test_runtime_terminate-%d-%u.xray.map", dir,
		 (int)getpid(), n);
	return access(path, F_OK) == 0;
}

static int wait_for_map(const char *dir, unsigned n)
{
	int i;

	for (i = 0; i < 10000 && !map_written(dir, n); i++)
		sleep_ms(1);
	return map_written(dir, n);
}

/*
 * A thread of a pool or a coroutine runner: a 32 KiB stack, less than the flush needs. It
 * records (so it has xfdr's alternate stack), then takes the signal itself.
 */
enum { SMALL_STACK_BYTES = 32 * 1024 };

static void *small_stack_thread(void *arg)
{
	xfdr_enter(1);
	pthread_kill(pthread_self(), *(int *)arg);
	xfdr_exit(1);
	return NULL;
}

static int on_a_small_stack(int sig)
{
	pthread_attr_t attr;
	pthread_t th;

	if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, SMALL_STACK_BYTES) ||
	    pthread_create(&th, &attr, small_stack_thread, &sig))
		return 8;
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	return 0;
}

static int child_main(const char *mode, const char *dir)
{
	struct writer w[2];
	int sig = !strcmp(mode, "int") ? SIGINT : SIGTERM;
	struct sigaction sa;

	if (!strcmp(mode, "own_handler")) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = own_handler;
		sigaction(SIGTERM, &sa, NULL);
		if (init_with(dir, 0, 1, 1) || xfdr_start())
			return 2;
		sigaction(SIGTERM, NULL, &sa);
		if (sa.sa_handler != own_handler)
			return 3;
		raise(SIGTERM);
		return own_handler_ran ? 0 : 4;
	}
	if (!strcmp(mode, "ignored")) {
		signal(SIGINT, SIG_IGN);
		if (init_with(dir, 0, 1, 1) || xfdr_start())
			return 2;
		sigaction(SIGINT, NULL, &sa);
		if (sa.sa_handler != SIG_IGN)
			return 3;
		raise(SIGINT);
		return 0;
	}
	if (!strcmp(mode, "nothing_exit"))
		return 0; /* XFDR_OPTIONS started recording at load: no event, drop or crash */
	if (!strcmp(mode, "nothing_term")) {
		raise(SIGTERM); /* flush_on_terminate: on by default from the environment */
		return 7;	/* still alive */
	}
	if (!strcmp(mode, "small_stack_flush")) {
		/* Only the flush signal asked for: no crash handling, alternate stacks anyway. */
		if (init_with(dir, SIGUSR2, 0, 0) || xfdr_start())
			return 2;
		return on_a_small_stack(SIGUSR2) || !map_written(dir, 0) ? 9 : 0;
	}
	if (!strcmp(mode, "small_stack_term")) {
		if (init_with(dir, 0, 1, 0) || xfdr_start())
			return 2;
		on_a_small_stack(SIGTERM);
		return 7; /* still alive */
	}
	/* "env": XFDR_OPTIONS started recording at load, with flush_on_terminate on by default. */
	if (strcmp(mode, "env") &&
	    (init_with(dir, !strcmp(mode, "flush_wins") ? SIGTERM : 0, 1, 1) || xfdr_start()))
		return 2;
	if (writers_start(w, 1000))
		return 5;
	if (!strcmp(mode, "flush_wins")) {
		/* SIGTERM is the flush signal: a snapshot each time, and the program goes on. */
		kill(getpid(), SIGTERM);
		if (!wait_for_map(dir, 0))
			return 6;
		kill(getpid(), SIGTERM);
		if (!wait_for_map(dir, 1))
			return 6;
		writers_stop(w);
		return 0;
	}
	/* To the process: any thread may take it, a writer as likely as this one. */
	kill(getpid(), sig);
	sleep_ms(10000);
	return 7; /* still alive */
}

/* ---- the parent ------------------------------------------------------------------------- */

/* The records of the file per thread id (1, 2, ...) and the largest TSC. */
static void count_events(const char *trace, uint64_t per_fid[3], uint64_t *max_tsc)
{
	struct xfdr_trace *t = ts_open_verified(trace);
	struct xfdr_event_iter it;
	struct xfdr_error err;
	struct xfdr_event ev;
	int rc;

	memset(per_fid, 0, 3 * sizeof(per_fid[0]));
	*max_tsc = 0;
	assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_FILE, &it, &err), 0);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		if (ev.type != XFDR_EVENT_FUNCTION)
			continue;
		assert_true(ev.function_id == 1 || ev.function_id == 2);
		per_fid[ev.function_id]++;
		if (ev.tsc > *max_tsc)
			*max_tsc = ev.tsc;
	}
	assert_int_equal(rc, 0);
	xfdr_trace_close(t);
}

struct ended {
	char dir[PATH_BYTES];
	char trace[PATH_BYTES + 64];
	struct child_result r;
};

static void run_child(const char *mode, const char *env_options, struct ended *e)
{
	char *argv[] = {"test_runtime_terminate", "--child", (char *)mode, e->dir, NULL};
	char env_entry[PATH_BYTES + 64];
	char *env[] = {env_entry, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .program = "/proc/self/exe",
	    .env_add = env,
	    .out = {.to = CHILD_DEVNULL},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = CHILD_TIMEOUT_S,
	};

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s%s/", ts_dir, mode);
	assert_int_equal(mkdir(e->dir, 0755), 0);
	/* Without options of its own the child must not start at load. */
	snprintf(env_entry, sizeof(env_entry), "XFDR_OPTIONS=%s%s", env_options ? env_options : "",
		 env_options ? e->dir : "");
	child_run(&spec, &e->r);
	snprintf(e->trace, sizeof(e->trace), "%sxfdr-test_runtime_terminate-%d-0.xray", e->dir,
		 (int)e->r.pid);
}

/* The child ended killed by sig and left a valid file with both writers' events. */
static void expect_terminated(const struct ended *e, int sig, const char *name)
{
	uint64_t per_fid[3], max_tsc;
	char line[PATH_BYTES + 128];

	if (e->r.signal != sig)
		fail_msg("child ended with status %d (signal %d), expected signal %d; stderr:\n%s",
			 e->r.status, e->r.signal, sig, e->r.err);
	snprintf(line, sizeof(line), "xfdr: %s: wrote %s", name, e->trace);
	if (!strstr(e->r.err, line))
		fail_msg("stderr lacks '%s': %s", line, e->r.err);
	assert_int_equal(ts_count(e->r.err, "xfdr: "), 1);
	ts_tools_accept(e->trace);
	count_events(e->trace, per_fid, &max_tsc);
	assert_true(per_fid[1] > 0);
	assert_true(per_fid[2] > 0);
}

/*
 * A process that recorded nothing (the runtime preloaded into an uninstrumented `ls`) leaves no
 * file and says nothing, at exit and on SIGTERM: it wrote an empty trace and its .map before.
 */
static void nothing_recorded_leaves_no_file(void **state)
{
	struct ended e;

	(void)state;
	run_child("nothing_exit", "start=1:output=", &e);
	assert_int_equal(e.r.signal, 0);
	assert_int_equal(e.r.status, 0);
	assert_string_equal(e.r.err, "");
	assert_int_equal(ts_dir_entries(e.dir), 0);
	child_result_free(&e.r);
	run_child("nothing_term", "start=1:output=", &e);
	assert_int_equal(e.r.signal, SIGTERM);
	assert_string_equal(e.r.err, "");
	assert_int_equal(ts_dir_entries(e.dir), 0);
	child_result_free(&e.r);
}

static void sigterm_while_two_threads_write(void **state)
{
	struct ended e;

	(void)state;
	run_child("term", NULL, &e);
	expect_terminated(&e, SIGTERM, "SIGTERM");
	child_result_free(&e.r);
}

static void sigint_while_two_threads_write(void **state)
{
	struct ended e;

	(void)state;
	run_child("int", NULL, &e);
	expect_terminated(&e, SIGINT, "SIGINT");
	child_result_free(&e.r);
}

/* Recording from XFDR_OPTIONS: flush_on_terminate defaults to on. */
static void sigterm_with_options_from_the_environment(void **state)
{
	struct ended e;

	(void)state;
	run_child("env", "start=1 flush_at_exit=0 buffer_size=4096 buffer_max=32 output=", &e);
	expect_terminated(&e, SIGTERM, "SIGTERM");
	child_result_free(&e.r);
}

/* A SIGTERM handler installed before init stays the program's: it runs, xfdr does nothing. */
static void own_sigterm_handler_is_kept(void **state)
{
	struct ended e;

	(void)state;
	run_child("own_handler", NULL, &e);
	if (e.r.signal || e.r.status)
		fail_msg("child ended with status %d: %s", e.r.status, e.r.err);
	assert_null(strstr(e.r.err, "xfdr: SIGTERM"));
	assert_int_equal(access(e.trace, F_OK), -1);
	child_result_free(&e.r);
}

/* SIGINT ignored before init (nohup, background jobs) stays ignored. */
static void ignored_sigint_stays_ignored(void **state)
{
	struct ended e;

	(void)state;
	run_child("ignored", NULL, &e);
	if (e.r.signal || e.r.status)
		fail_msg("child ended with status %d: %s", e.r.status, e.r.err);
	assert_int_equal(access(e.trace, F_OK), -1);
	child_result_free(&e.r);
}

/* flush_signal=SIGTERM with flush_on_terminate: the flush signal's behaviour wins. */
static void flush_signal_wins_over_terminate(void **state)
{
	struct ended e;
	char second[PATH_BYTES + 64];

	(void)state;
	run_child("flush_wins", NULL, &e);
	if (e.r.signal || e.r.status)
		fail_msg("child ended with status %d (signal %d): %s", e.r.status, e.r.signal,
			 e.r.err);
	assert_int_equal(ts_count(e.r.err, "xfdr: SIGTERM: wrote "), 2);
	ts_tools_accept(e.trace);
	snprintf(second, sizeof(second), "%sxfdr-test_runtime_terminate-%d-1.xray", e.dir,
		 (int)e.r.pid);
	ts_tools_accept(second);
	child_result_free(&e.r);
}

/* ---- flush_signal in this process ------------------------------------------------------- */

struct flush_call {
	int sig;
};

static void signal_self(void *arg)
{
	const struct flush_call *c = arg;

	/* To this thread: the handler has run when pthread_kill() returns. */
	assert_int_equal(pthread_kill(pthread_self(), c->sig), 0);
}

/* Signal this thread, capture the handler's stderr line, return the path it names. */
static void flush_by_signal(int sig, const char *name, char *path, size_t path_bytes)
{
	struct flush_call c = {.sig = sig};
	char out[2048], want[64];
	const char *p;
	size_t n;

	ts_capture_stderr(signal_self, &c, out, sizeof(out));
	snprintf(want, sizeof(want), "xfdr: %s: wrote ", name);
	p = strstr(out, want);
	if (!p)
		fail_msg("no '%s' line on stderr: %s", want, out);
	p += strlen(want);
	n = strcspn(p, "\n");
	assert_true(n < path_bytes);
	memcpy(path, p, n);
	path[n] = '\0';
}

static void flush_signal_while_two_threads_write(void **state)
{
	struct writer w[2];
	char first[PATH_BYTES], second[PATH_BYTES];
	uint64_t per1[3], per2[3], max1, max2, before;
	struct sigaction sa;

	(void)state;
	assert_int_equal(init_with(ts_dir, SIGUSR2, 0, 1), 0);
	sigaction(SIGUSR2, NULL, &sa);
	assert_true(sa.sa_flags & SA_SIGINFO);
	assert_true(sa.sa_flags & SA_RESTART);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(writers_start(w, 2000), 0);
	flush_by_signal(SIGUSR2, "SIGUSR2", first, sizeof(first));
	/* The writers go on recording: more events, then a second snapshot. */
	before = __atomic_load_n(&w[0].events, __ATOMIC_RELAXED);
	while (__atomic_load_n(&w[0].events, __ATOMIC_RELAXED) < before + 2000 ||
	       __atomic_load_n(&w[1].events, __ATOMIC_RELAXED) < before + 2000)
		sleep_ms(1);
	flush_by_signal(SIGUSR2, "SIGUSR2", second, sizeof(second));
	writers_stop(w);
	assert_string_not_equal(first, second);
	ts_tools_accept(first);
	ts_tools_accept(second);
	count_events(first, per1, &max1);
	count_events(second, per2, &max2);
	assert_true(per1[1] > 0 && per1[2] > 0);
	assert_true(per2[1] > 0 && per2[2] > 0);
	assert_true(max2 > max1);
	assert_int_equal(xfdr_stop(), 0);
	/* A later init without a flush signal gives SIGUSR2 back (SIG_DFL here). */
	assert_int_equal(init_with(ts_dir, 0, 0, 1), 0);
	sigaction(SIGUSR2, NULL, &sa);
	assert_true(sa.sa_handler == SIG_DFL);
}

/* errno survives the flush handler. */
static void flush_signal_keeps_errno(void **state)
{
	char path[PATH_BYTES];

	(void)state;
	assert_int_equal(init_with(ts_dir, SIGUSR1, 0, 1), 0);
	errno = ERANGE;
	flush_by_signal(SIGUSR1, "SIGUSR1", path, sizeof(path));
	assert_int_equal(errno, ERANGE);
	assert_int_equal(init_with(ts_dir, 0, 0, 1), 0);
}

static void *alt_stack_probe(void *arg)
{
	stack_t *ss = arg;

	xfdr_enter(9);
	xfdr_exit(9);
	sigaltstack(NULL, ss);
	return NULL;
}

/* libc's sigaction(), which xfdr's (runtime/flush/sig_interpose.c) stands in front of. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* The dispositions follow the options, init after init; threads get alternate stacks. */
static void dispositions_follow_the_options(void **state)
{
	struct sigaction before_segv, before_term, sa;
	pthread_t th;
	stack_t ss;

	(void)state;
	sigaction(SIGSEGV, NULL, &before_segv);
	sigaction(SIGTERM, NULL, &before_term);
	assert_true(before_term.sa_handler == SIG_DFL);

	assert_int_equal(init_with(ts_dir, 0, 1, 1), 0);
	sigaction(SIGTERM, NULL, &sa);
	assert_true((sa.sa_flags & SA_SIGINFO) && sa.sa_handler != SIG_DFL);
	/* The kernel's: the program's sigaction() reads back its own for a crash signal. */
	__sigaction(SIGSEGV, NULL, &sa);
	assert_true(sa.sa_flags & SA_SIGINFO);
	assert_true(sa.sa_flags & SA_ONSTACK);
	assert_true(sigismember(&sa.sa_mask, SIGABRT) && sigismember(&sa.sa_mask, SIGTERM));
	sigaction(SIGSEGV, NULL, &sa);
	assert_true(sa.sa_handler == before_segv.sa_handler);
	/* A thread that records gets an alternate stack for the crash handler. */
	assert_int_equal(xfdr_start(), 0);
	memset(&ss, 0, sizeof(ss));
	assert_int_equal(pthread_create(&th, NULL, alt_stack_probe, &ss), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ss.ss_flags & SS_DISABLE, 0);
	if (!ts_sanitized()) /* sanitizers give threads stacks of their own, which are kept */
		assert_int_equal(ss.ss_size, 64 * 1024);
	assert_int_equal(xfdr_stop(), 0);

	/* Neither asked for any more: both as they were. */
	assert_int_equal(init_with(ts_dir, 0, 0, 0), 0);
	sigaction(SIGTERM, NULL, &sa);
	assert_true(sa.sa_handler == SIG_DFL);
	sigaction(SIGSEGV, NULL, &sa);
	assert_true(sa.sa_handler == before_segv.sa_handler);
	assert_int_equal(sa.sa_flags & SA_SIGINFO, before_segv.sa_flags & SA_SIGINFO);
	assert_int_equal(xfdr_start(), 0);
	memset(&ss, 0, sizeof(ss));
	assert_int_equal(pthread_create(&th, NULL, alt_stack_probe, &ss), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (!ts_sanitized())
		assert_int_equal(ss.ss_flags & SS_DISABLE, SS_DISABLE);
	assert_int_equal(xfdr_stop(), 0);
}

/*
 * Can the kernel read the byte at p? write() from an unreadable page fails with EFAULT instead
 * of raising SIGSEGV (which cmocka's own handler would take). 1, 0, or -1 on another error.
 */
static int readable(const void *p)
{
	int fds[2], rc;
	ssize_t n;

	if (pipe(fds))
		return -1;
	n = write(fds[1], p, 1);
	rc = n == 1 ? 1 : n < 0 && errno == EFAULT ? 0 : -1;
	close(fds[0]);
	close(fds[1]);
	return rc;
}

/* What a probing thread found: its fork child's status and its alternate stack. */
struct alt_probe {
	int status;
	void *stack;
	uint32_t slot; /* the probing thread's slot, whose index chooses its stack */
};

/* A recording thread forks; the child probes its inherited alternate stack and the page below. */
static void *probe_alt_stack_in_child(void *arg)
{
	struct alt_probe *probe = arg;
	stack_t ss;
	pid_t pid;

	xfdr_enter(9);
	xfdr_exit(9);
	probe->slot = rec_slot(&rec_self) ? rec_slot(&rec_self)->index : UINT32_MAX;
	if (sigaltstack(NULL, &ss) || (ss.ss_flags & SS_DISABLE))
		return NULL;
	probe->stack = ss.ss_sp;
	pid = fork();
	if (pid == 0)
		_exit(readable(ss.ss_sp) == 1 && readable((const char *)ss.ss_sp - 1) == 0 ? 0 : 1);
	if (pid > 0)
		waitpid(pid, &probe->status, 0);
	return NULL;
}

enum { SLOT_HOLDERS = 40 }; /* more than the first region's 32 stacks (altstack.c) */
static pthread_barrier_t holders_done;

/* Holds a thread slot (and its alternate stack) until the probe is done. */
static void *hold_a_slot(void *arg)
{
	xfdr_enter(8);
	xfdr_exit(8);
	pthread_barrier_wait(&holders_done);
	return arg;
}

/* Probes an alternate stack with holders threads holding slots; fails the test if bad. */
static void probe_alt_stack(int holders, struct alt_probe *probe)
{
	pthread_t th, held[SLOT_HOLDERS];
	int i;

	probe->status = -1;
	probe->stack = NULL;
	probe->slot = UINT32_MAX;
	assert_int_equal(pthread_barrier_init(&holders_done, NULL, (unsigned)holders + 1), 0);
	for (i = 0; i < holders; i++)
		assert_int_equal(pthread_create(&held[i], NULL, hold_a_slot, NULL), 0);
	assert_int_equal(pthread_create(&th, NULL, probe_alt_stack_in_child, probe), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_barrier_wait(&holders_done);
	for (i = 0; i < holders; i++)
		assert_int_equal(pthread_join(held[i], NULL), 0);
	pthread_barrier_destroy(&holders_done);
	if (!WIFEXITED(probe->status) || WEXITSTATUS(probe->status))
		fail_msg(
		    "with %d threads holding slots, in the fork child, the alternate stack is not "
		    "readable or the page below it is (status 0x%x)",
		    holders, probe->status);
}

/*
 * Below each alternate stack is a guard, in a fork child too: a handler that overflows its
 * stack faults there instead of writing over the neighbouring slot's stack. (Where the kernel
 * has guard markers the guards are markers in one mapping, not PROT_NONE pages between
 * mappings: fork() copies one mapping, not two a thread.) So too for a thread whose slot is
 * beyond the first region of stacks, which is reserved when a slot first needs it.
 */
static void alt_stack_guard_below(void **state)
{
	struct alt_probe first, later;

	(void)state;
	if (ts_sanitized())
		skip(); /* sanitizers give threads stacks of their own, which are kept */
	assert_int_equal(init_with(ts_dir, 0, 0, 1), 0);
	assert_int_equal(xfdr_start(), 0);
	probe_alt_stack(0, &first);
	probe_alt_stack(SLOT_HOLDERS, &later);
	assert_int_equal(xfdr_stop(), 0);
	/*
	 * By slot, not by /proc/self/maps: the kernel merges a later region reserved next to the
	 * first into one mapping (guard markers do not split it), so the maps cannot tell them.
	 */
	if (first.slot >= 32 || later.slot < 32 || later.slot == UINT32_MAX)
		fail_msg("probed slots %u and %u, not one of the first 32 and one beyond",
			 first.slot, later.slot);
	assert_ptr_not_equal(first.stack, later.stack);
}

/*
 * The flush signal and SIGTERM taken by a thread whose stack is smaller than the flush's
 * frames: the handlers run on xfdr's alternate stack (they ran on the thread's: SIGSEGV).
 */
static void flush_signal_on_a_small_stack(void **state)
{
	struct ended e;

	(void)state;
	run_child("small_stack_flush", NULL, &e);
	if (e.r.signal || e.r.status)
		fail_msg("child ended with status %d (signal %d); stderr:\n%s", e.r.status,
			 e.r.signal, e.r.err);
	assert_non_null(strstr(e.r.err, "xfdr: SIGUSR2: wrote "));
	ts_tools_accept(e.trace);
	child_result_free(&e.r);
}

static void sigterm_on_a_small_stack(void **state)
{
	struct ended e;
	char line[PATH_BYTES + 128];

	(void)state;
	run_child("small_stack_term", NULL, &e);
	if (e.r.signal != SIGTERM)
		fail_msg("child ended with status %d (signal %d), expected SIGTERM; stderr:\n%s",
			 e.r.status, e.r.signal, e.r.err);
	snprintf(line, sizeof(line), "xfdr: SIGTERM: wrote %s", e.trace);
	assert_non_null(strstr(e.r.err, line));
	ts_tools_accept(e.trace);
	child_result_free(&e.r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(dispositions_follow_the_options),
	    cmocka_unit_test(alt_stack_guard_below),
	    cmocka_unit_test(flush_signal_while_two_threads_write),
	    cmocka_unit_test(flush_signal_keeps_errno),
	    cmocka_unit_test(sigterm_while_two_threads_write),
	    cmocka_unit_test(nothing_recorded_leaves_no_file),
	    cmocka_unit_test(sigint_while_two_threads_write),
	    cmocka_unit_test(sigterm_with_options_from_the_environment),
	    cmocka_unit_test(own_sigterm_handler_is_kept),
	    cmocka_unit_test(ignored_sigint_stays_ignored),
	    cmocka_unit_test(flush_signal_wins_over_terminate),
	    cmocka_unit_test(flush_signal_on_a_small_stack),
	    cmocka_unit_test(sigterm_on_a_small_stack),
	};

	if (argc > 3 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], argv[3]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
