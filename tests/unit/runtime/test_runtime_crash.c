/*
 * tests/unit/runtime/test_runtime_crash.c - the crash flush (flush_on_crash): a child that crashes
 * leaves a trace that `xfdr verify` and llvm-xray accept, with the crashing thread's last
 * calls, the "XFDRCRSH" event and the crash in the .map, and still dies by its signal.
 *
 * Each case re-executes this binary as "--child MODE DIR": the child records with the
 * manual API into DIR and crashes as MODE says. The parent checks how the child ended, then
 * reads what it left: the trace with the reader library and with both tools, the event's
 * payload decoded here from format.h's offsets (not with the writer's or the reader's code),
 * the .map's "crash" and "frame" lines as text.
 *
 * A program's own handler runs first (prog_handler.c): a fault it recovers from (a probe that
 * siglongjmp()s, a write barrier that unprotects the page, a raised signal it handles) is no
 * crash: the child goes on recording and exits 0 with a trace holding no crash event. One it
 * does not recover from (it resets the disposition and returns, raises the signal again,
 * aborts, or _exit()s) is recorded as any crash.
 *
 * Under a sanitizer (XFDR_SANITIZED=1) the sanitizer's runtime installed its SIGSEGV and
 * SIGBUS handlers before xfdr: they are the program's own to xfdr, run first, report and end
 * the child with status 1 by a raw exit_group. The crash is flushed from the sanitizer's death
 * callback: the same trace, a different ending (ts_expect_crash_end()).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "tests/support/runtime_test.h"
#include "tests/support/child.h"

#include "runtime/record/thread_fast.h"

enum { FID_A = 1, FID_B = 2, FID_C = 3, FID_RECURSE = 10, FID_OTHER = 20 };

#define CHILD_TIMEOUT_S 60
#define PATH_BYTES 512

/* ---- the child ------------------------------------------------------------------------ */

static volatile unsigned sink;
static const char *child_mode;

static int child_init(const char *dir)
{
	struct xfdr_options o;

	xfdr_options_default(&o);
	o.buffer_size = 65536;
	o.buffer_max = 16;
	o.flush_at_exit = 0;
	o.output = dir;
	o.start = 1;
	return xfdr_init(&o);
}

/* The last of three calls: here the child crashes as its mode says. */
static __attribute__((noinline)) void crash_c(void)
{
	xfdr_enter(FID_C);
	if (!strcmp(child_mode, "abort") || !strcmp(child_mode, "chain_abort"))
		abort();
	if (!strcmp(child_mode, "raise"))
		raise(SIGBUS);
	if (!strcmp(child_mode, "reraise"))
		raise(SIGSEGV);
	if (!strcmp(child_mode, "chain"))
		*(volatile int *)(uintptr_t)0x10 = 1;
	ts_store_to_null(1);
	xfdr_exit(FID_C);
}

static __attribute__((noinline)) void crash_b(void)
{
	xfdr_enter(FID_B);
	crash_c();
	xfdr_exit(FID_B);
}

static __attribute__((noinline)) void crash_a(void)
{
	xfdr_enter(FID_A);
	crash_b();
	xfdr_exit(FID_A);
}

/* 16 KiB below the caller touched, page by page, from the top: deeper than the recorder goes. */
static __attribute__((noinline)) void probe_stack(void)
{
	volatile char pad[16384];
	size_t i;

	for (i = sizeof(pad); i >= 4096; i -= 4096)
		pad[i - 1] = 0;
	pad[0] = 0;
}

/*
 * Unbounded recursion. Each level first touches the stack the recorder could use below it, so
 * the overflow faults here, never inside xfdr_enter() (that is the "recorder" case).
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static __attribute__((noinline)) unsigned recurse(unsigned n)
{
	volatile char frame[512];

	frame[0] = (char)n;
	probe_stack();
	xfdr_enter(FID_RECURSE);
	n = recurse(n + 1) + (unsigned)frame[0];
	xfdr_exit(FID_RECURSE);
	return n;
}
#pragma GCC diagnostic pop

static void chain_handler(int sig, siginfo_t *si, void *uc)
{
	char text[128];
	int n;

	(void)uc;
	if (sig == SIGABRT)
		n = snprintf(text, sizeof(text), "chained sig=%d code=%d self=%d\n", sig,
			     si->si_code, si->si_pid == getpid());
	else
		n = snprintf(text, sizeof(text), "chained sig=%d code=%d addr=%p\n", sig,
			     si->si_code, si->si_addr);
	if (write(2, text, (size_t)n) < 0)
		_exit(1);
	_exit(42);
}

/* Installed with signal() after xfdr started, as zstd installs its SIGSEGV handler. */
static void late_handler(int sig)
{
	char text[64];
	int n = snprintf(text, sizeof(text), "late handler sig=%d\n", sig);

	if (write(2, text, (size_t)n) < 0)
		_exit(1);
	_exit(43);
}

/* The program's own faults: a probe that reads an address and siglongjmp()s out of a fault. */
static sigjmp_buf probe_env;
static volatile sig_atomic_t own_faults;

static void probe_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	own_faults++;
	siglongjmp(probe_env, 1);
}

/* NULL, read at run time: the probe's fault is not optimized away. */
static volatile int *volatile unmapped;

/* A probe of p; no_sanitize: UndefinedBehaviorSanitizer would stop the meant load of NULL. */
static __attribute__((noinline, no_sanitize("null"))) int readable(const volatile int *p)
{
	if (sigsetjmp(probe_env, 1))
		return 0;
	sink = (unsigned)*p;
	return 1;
}

/* A write barrier, as a garbage collector's: the page is read-only until the first store. */
static volatile int *barrier_page;

static void barrier_handler(int sig, siginfo_t *si, void *uc)
{
	long page = sysconf(_SC_PAGESIZE);

	(void)sig;
	(void)uc;
	own_faults++;
	if ((uintptr_t)si->si_addr - (uintptr_t)barrier_page >= (uintptr_t)page ||
	    mprotect((void *)barrier_page, (size_t)page, PROT_READ | PROT_WRITE))
		_exit(9);
}

static void returning_handler(int sig)
{
	(void)sig;
	own_faults++;
}

/* Crash reporters: say so, then let the default action end the process. */
static void say(const char *text)
{
	if (write(2, text, strlen(text)) < 0)
		_exit(1);
}

static void reset_handler(int sig)
{
	say("reset handler\n");
	signal(sig, SIG_DFL);
}

static void reraise_handler(int sig)
{
	say("reraise handler\n");
	signal(sig, SIG_DFL);
	raise(sig);
}

static void exiting_handler(int sig)
{
	(void)sig;
	say("exiting handler\n");
	exit(44);
}

static void aborting_handler(int sig)
{
	(void)sig;
	say("aborting handler\n");
	abort();
}

static void install(int sig, void (*handler)(int, siginfo_t *, void *), void (*plain)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	if (handler) {
		sa.sa_sigaction = handler;
		sa.sa_flags = SA_SIGINFO;
	} else {
		sa.sa_handler = plain;
	}
	sigaction(sig, &sa, NULL);
}

/* The modes that go on after their faults: calls A, B around them, a flush, exit 0. */
static int own_fault_mode(const char *mode)
{
	long page = sysconf(_SC_PAGESIZE);
	int i;

	if (!strcmp(mode, "probe_late"))
		install(SIGSEGV, probe_handler, NULL);
	xfdr_enter(FID_A);
	for (i = 0; i < 3; i++) {
		if (!strncmp(mode, "probe", 5) && readable(unmapped))
			return 7;
		if (!strcmp(mode, "barrier")) {
			/* the same store, each time the page is protected again */
			if (mprotect((void *)barrier_page, (size_t)page, PROT_READ))
				return 7;
			barrier_page[0] = i;
		}
		if (!strcmp(mode, "raised_handled"))
			raise(SIGSEGV);
	}
	xfdr_exit(FID_A);
	xfdr_enter(FID_B);
	xfdr_exit(FID_B);
	if (own_faults != 3)
		return 8;
	return xfdr_flush(NULL, 0) ? 9 : 0;
}

static pthread_barrier_t both_ready;

static void *other_thread(void *arg)
{
	(void)arg;
	xfdr_enter(FID_OTHER);
	pthread_barrier_wait(&both_ready);
	ts_store_to_null(2);
	return NULL;
}

/*
 * write(2), interposed: in the watchdog modes a trace header's write never returns, so the
 * crash flush hangs where a file system that does not answer would hang it.
 */
static int hang_header_write;

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (n == XFDR_FILE_HEADER_BYTES && hang_header_write)
		for (;;)
			pause();
	return real(fd, buf, n);
}

/* The crashing thread of "watchdog_sigwait": the process's first thread waits for SIGALRM. */
static void *crash_beside_sigwait(void *arg)
{
	(void)arg;
	xfdr_enter(FID_OTHER);
	ts_store_to_null(5);
	return NULL;
}

/*
 * A program's own alternate signal stack of SMALL_ALTSTACK_BYTES (what a program sized by
 * SIGSTKSZ gets on a CPU whose signal frame is small), above a page that faults: xfdr keeps a
 * program's alternate stack, so its whole crash path, the flush included, must fit there.
 * Under a sanitizer its report runs on that stack first, so the stack is the size the
 * sanitizer gives its own (4 x SIGSTKSZ: 54 KiB on the AMD EPYC VM, where xfdr's crash flush
 * used to overflow it). Returns 0 or -1.
 */
#define SMALL_ALTSTACK_BYTES (16u * 1024u)

static int small_altstack(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = ts_sanitized() ? 4 * (size_t)sysconf(_SC_SIGSTKSZ) : SMALL_ALTSTACK_BYTES;
	uint8_t *p =
	    mmap(NULL, page + bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_t ss = {.ss_size = bytes};

	if (p == MAP_FAILED || mprotect(p, page, PROT_NONE))
		return -1;
	ss.ss_sp = p + page;
	return sigaltstack(&ss, NULL);
}

static int child_main(const char *mode, const char *dir)
{
	child_mode = mode;
	if (!strcmp(mode, "small_altstack") && small_altstack())
		return 7;
	if (!strcmp(mode, "chain") || !strcmp(mode, "chain_abort")) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = chain_handler;
		sa.sa_flags = SA_SIGINFO;
		sigaction(strcmp(mode, "chain") ? SIGABRT : SIGSEGV, &sa, NULL);
	}
	if (!strncmp(mode, "watchdog", 8))
		hang_header_write = 1;
	if (!strcmp(mode, "probe"))
		install(SIGSEGV, probe_handler, NULL);
	if (!strcmp(mode, "barrier")) {
		barrier_page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (barrier_page == MAP_FAILED)
			return 3;
		install(SIGSEGV, barrier_handler, NULL);
	}
	if (!strcmp(mode, "raised_handled"))
		install(SIGSEGV, NULL, returning_handler);
	if (!strcmp(mode, "reset"))
		install(SIGSEGV, NULL, reset_handler);
	if (!strcmp(mode, "reraise"))
		install(SIGSEGV, NULL, reraise_handler);
	if (!strcmp(mode, "handler_aborts"))
		install(SIGSEGV, NULL, aborting_handler);
	if (!strcmp(mode, "handler_exits"))
		install(SIGSEGV, NULL, exiting_handler);
	if (child_init(dir))
		return 2;
	if (!strncmp(mode, "probe", 5) || !strcmp(mode, "barrier") ||
	    !strcmp(mode, "raised_handled"))
		return own_fault_mode(mode);
	if (!strcmp(mode, "chain_late")) {
		/*
		 * The program reads back what it set: first what was there before xfdr (the
		 * default, or a sanitizer runtime's handler).
		 */
		sighandler_t before = signal(SIGSEGV, late_handler);

		if (before == late_handler || (!ts_sanitized() && before != SIG_DFL) ||
		    signal(SIGSEGV, late_handler) != late_handler)
			return 6;
	}
	if (!strcmp(mode, "overflow")) {
		/* A stack of 1 MiB at most overflows quickly, whatever the shell's limit is. */
		struct rlimit rl;

		if (getrlimit(RLIMIT_STACK, &rl) == 0 &&
		    (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 20))) {
			rl.rlim_cur = 1u << 20;
			setrlimit(RLIMIT_STACK, &rl);
		}
		sink = recurse(0);
		return 0;
	}
	if (!strcmp(mode, "recorder")) {
		long page = sysconf(_SC_PAGESIZE);

		xfdr_enter(FID_A);
		/* The page the thread's next record goes to: the recorder itself faults. */
		if (mprotect((void *)((uintptr_t)(rec_self.buf + rec_self.used) &
				      ~(uintptr_t)(page - 1)),
			     (size_t)page, PROT_READ))
			return 4;
		xfdr_enter(FID_B);
		return 0;
	}
	if (!strcmp(mode, "nested")) {
		xfdr_enter(FID_A);
		/* The handler's XFDRCRSH event then faults: a crash during the crash handler. */
		if (mprotect(rec_self.buf, rec_self.size, PROT_NONE))
			return 4;
		ts_store_to_null(3);
		return 0;
	}
	if (!strcmp(mode, "watchdog_sigwait")) {
		/*
		 * A program's signal thread: SIGALRM blocked everywhere, taken by sigwait() here,
		 * in the process's first thread, which the kernel offers a process-wide SIGALRM
		 * first.
		 */
		sigset_t alrm;
		pthread_t th;
		int sig;

		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &alrm, NULL);
		if (pthread_create(&th, NULL, crash_beside_sigwait, NULL))
			return 5;
		for (;;)
			sigwait(&alrm, &sig);
	}
	if (!strcmp(mode, "two_threads")) {
		pthread_t th;

		pthread_barrier_init(&both_ready, NULL, 2);
		if (pthread_create(&th, NULL, other_thread, NULL))
			return 5;
		xfdr_enter(FID_A);
		pthread_barrier_wait(&both_ready);
		ts_store_to_null(4);
		return 0;
	}
	crash_a();
	return 0;
}

/* ---- the parent ----------------------------------------------------------------------- */

struct crashed {
	char dir[PATH_BYTES];
	char trace[PATH_BYTES + 64];
	char map[PATH_BYTES + 72];
	struct child_result r;
	double seconds;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run the child in a fresh directory; the result (stderr captured) is in c->r. */
static void run_crash(const char *mode, struct crashed *c)
{
	char *argv[] = {"test_runtime_crash", "--child", (char *)mode, c->dir, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .program = "/proc/self/exe",
	    .out = {.to = CHILD_DEVNULL},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = CHILD_TIMEOUT_S,
	};
	double t0 = now_s();

	memset(c, 0, sizeof(*c));
	snprintf(c->dir, sizeof(c->dir), "%s%s/", ts_dir, mode);
	assert_int_equal(mkdir(c->dir, 0755), 0);
	child_run(&spec, &c->r);
	c->seconds = now_s() - t0;
	snprintf(c->trace, sizeof(c->trace), "%sxfdr-test_runtime_crash-%d-0.xray", c->dir,
		 (int)c->r.pid);
	snprintf(c->map, sizeof(c->map), "%s.map", c->trace);
}

static void expect_signal(const struct crashed *c, int sig)
{
	if (c->r.signal != sig)
		fail_msg("child ended with status %d (signal %d), expected signal %d; stderr:\n%s",
			 c->r.status, c->r.signal, sig, c->r.err);
}

/* What one thread's events end with: its last function records and its crash events. */
struct thread_tail {
	uint16_t thread_id;
	unsigned fn_count;
	unsigned action[64];
	uint32_t fid[64];
	unsigned crash_events;
	unsigned after_crash; /* events of the thread after its XFDRCRSH */
	uint8_t payload[XFDR_CRASH_PAYLOAD_BYTES(XFDR_CRASH_FRAMES_MAX)];
	uint32_t payload_bytes;
};

/*
 * Read the trace with the reader library; fill tail for the thread that recorded the XFDRCRSH
 * event (thread_id 0: none did; then the thread of want_fid's records). Returns the number of
 * XFDRCRSH events in the whole file.
 */
static unsigned read_tail(const char *trace, uint32_t want_fid, struct thread_tail *tail)
{
	struct xfdr_trace *t = ts_open_verified(trace);
	struct xfdr_event_iter it;
	struct xfdr_error err;
	struct xfdr_event ev;
	unsigned total = 0, pass;
	int rc;

	memset(tail, 0, sizeof(*tail));
	/* Pass 0 finds the thread; pass 1 collects its tail. */
	for (pass = 0; pass < 2; pass++) {
		assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err), 0);
		while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
			int crash = ev.type == XFDR_EVENT_CUSTOM && ev.payload_bytes >= 8 &&
				    !memcmp(ev.payload, XFDR_CRASH_MAGIC, 8);

			if (pass == 0) {
				if (crash) {
					total++;
					tail->thread_id = ev.thread_id;
				} else if (!tail->thread_id && ev.type == XFDR_EVENT_FUNCTION &&
					   ev.function_id == want_fid) {
					tail->thread_id = ev.thread_id;
				}
				continue;
			}
			if (ev.thread_id != tail->thread_id)
				continue;
			if (tail->crash_events)
				tail->after_crash++;
			if (crash) {
				tail->crash_events++;
				assert_true(ev.payload_bytes <= sizeof(tail->payload));
				memcpy(tail->payload, ev.payload, ev.payload_bytes);
				tail->payload_bytes = ev.payload_bytes;
			} else if (ev.type == XFDR_EVENT_FUNCTION) {
				unsigned k = tail->fn_count++ % 64;

				tail->action[k] = ev.action;
				tail->fid[k] = ev.function_id;
			}
		}
		assert_int_equal(rc, 0);
	}
	xfdr_trace_close(t);
	return total;
}

/* The i-th function record from the end (0: the last) of the tail. */
static void tail_fn(const struct thread_tail *tail, unsigned back, unsigned *action, uint32_t *fid)
{
	unsigned k;

	assert_true(back < tail->fn_count && back < 64);
	k = (tail->fn_count - 1 - back) % 64;
	*action = tail->action[k];
	*fid = tail->fid[k];
}

/* The crash as the XFDRCRSH payload says, decoded from format.h's offsets. */
struct crash_payload {
	uint32_t signal;
	int32_t code;
	uint32_t tid;
	uint64_t addr;
	uint32_t frame_count;
	uint32_t flags;
	uint64_t frames[XFDR_CRASH_FRAMES_MAX];
};

static void decode_payload(const struct thread_tail *tail, struct crash_payload *p)
{
	uint32_t i;

	assert_true(tail->payload_bytes >= 40);
	assert_memory_equal(tail->payload, "XFDRCRSH", 8);
	assert_int_equal(ts_get32(tail->payload + 8), 1);
	p->signal = ts_get32(tail->payload + 12);
	p->code = (int32_t)ts_get32(tail->payload + 16);
	p->tid = ts_get32(tail->payload + 20);
	p->addr = ts_get64(tail->payload + 24);
	p->frame_count = ts_get32(tail->payload + 32);
	p->flags = ts_get32(tail->payload + 36);
	assert_true(p->frame_count <= 64);
	assert_int_equal(tail->payload_bytes, 40 + 8 * p->frame_count);
	for (i = 0; i < p->frame_count; i++)
		p->frames[i] = ts_get64(tail->payload + 40 + 8 * i);
}

/* The .map's crash: its "crash" line fields and its frames. */
struct map_crash_lines {
	int found;
	unsigned signal;
	char name[32];
	int code;
	unsigned long long addr;
	unsigned tid;
	unsigned frames;
	unsigned long long pc[64];
	char symbol[64][128];
	int crash_before_thread; /* the crash line comes before the first thread line */
	int frames_follow;	 /* the frame lines come right after it, numbered from 0 */
};

static void read_map_crash(const char *map_path, struct map_crash_lines *m)
{
	size_t n;
	char *map = (char *)ts_slurp(map_path, &n), *line, *save = NULL;
	int seen_thread = 0, last_was_crash_or_frame = 0;

	memset(m, 0, sizeof(*m));
	m->frames_follow = 1;
	for (line = strtok_r(map, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned idx;
		unsigned long long pc;
		char sym[128];

		if (!strncmp(line, "thread\t", 7))
			seen_thread = 1;
		if (!strncmp(line, "crash\t", 6)) {
			assert_int_equal(sscanf(line, "crash\t%u\t%31[^\t]\t%d\t%llx\t%u",
						&m->signal, m->name, &m->code, &m->addr, &m->tid),
					 5);
			assert_non_null(strstr(line, "\t0x"));
			m->found++;
			m->crash_before_thread = !seen_thread;
			last_was_crash_or_frame = 1;
			continue;
		}
		if (!strncmp(line, "frame\t", 6)) {
			char module[256], vaddr[64];

			/* frame, index, pc, symbol, module, module_vaddr: six fields */
			assert_int_equal(sscanf(line, "frame\t%u\t%llx\t%127[^\t]\t%255[^\t]\t%63s",
						&idx, &pc, sym, module, vaddr),
					 5);
			assert_true(!strncmp(line + 6 + strcspn(line + 6, "\t") + 1, "0x", 2));
			assert_true(!strcmp(vaddr, "-") || !strncmp(vaddr, "0x", 2));
			if (!last_was_crash_or_frame || idx != m->frames)
				m->frames_follow = 0;
			if (idx < 64) {
				m->pc[idx] = pc;
				snprintf(m->symbol[idx], sizeof(m->symbol[idx]), "%s", sym);
			}
			m->frames++;
			continue;
		}
		last_was_crash_or_frame = 0;
	}
	free(map);
}

static int map_has_symbol(const struct map_crash_lines *m, const char *sym)
{
	unsigned i;

	for (i = 0; i < m->frames && i < 64; i++)
		if (!strcmp(m->symbol[i], sym))
			return 1;
	return 0;
}

/*
 * The checks every recorded crash passes: tools accept the file; the crashing thread's last
 * function records are entries of fids (innermost last), then its XFDRCRSH and nothing else;
 * payload and .map agree with each other and with the signal; a frame names `function`.
 */
static void expect_recorded_crash(const struct crashed *c, int sig, int code, const uint32_t *fids,
				  unsigned nfids, const char *function, struct crash_payload *p)
{
	struct thread_tail tail;
	struct map_crash_lines m;
	char stderr_want[64];
	unsigned i, action;
	uint32_t fid;

	ts_tools_accept(c->trace);
	assert_int_equal(read_tail(c->trace, fids[0], &tail), 1);
	assert_int_equal(tail.crash_events, 1);
	assert_int_equal(tail.after_crash, 0);
	for (i = 0; i < nfids; i++) {
		tail_fn(&tail, i, &action, &fid);
		assert_int_equal(action, XFDR_FN_ENTER);
		assert_int_equal(fid, fids[nfids - 1 - i]);
	}
	decode_payload(&tail, p);
	assert_int_equal(p->signal, sig);
	assert_int_equal(p->code, code);
	assert_true(p->frame_count >= 1);

	read_map_crash(c->map, &m);
	assert_int_equal(m.found, 1);
	assert_true(m.crash_before_thread);
	assert_true(m.frames_follow);
	assert_int_equal(m.signal, sig);
	assert_string_equal(m.name, sig == SIGSEGV   ? "SIGSEGV"
				    : sig == SIGABRT ? "SIGABRT"
						     : "SIGBUS");
	assert_int_equal(m.code, code);
	assert_int_equal(m.tid, p->tid);
	assert_int_equal(m.addr, p->addr);
	assert_int_equal(m.frames, p->frame_count);
	for (i = 0; i < m.frames; i++)
		assert_int_equal(m.pc[i], p->frames[i]);
	if (!map_has_symbol(&m, function))
		fail_msg("no frame of %s names %s (frame 0: %s)", c->map, function, m.symbol[0]);
	snprintf(stderr_want, sizeof(stderr_want), "xfdr: %s: wrote ", m.name);
	if (!strstr(c->r.err, stderr_want))
		fail_msg("stderr lacks '%s': %s", stderr_want, c->r.err);
}

static const uint32_t three_calls[] = {FID_A, FID_B, FID_C};

static void segfault_three_calls_deep(void **state)
{
	struct crashed c;
	struct crash_payload p;

	(void)state;
	run_crash("segv", &c);
	ts_expect_crash_end(&c.r, SIGSEGV);
	expect_recorded_crash(&c, SIGSEGV, SEGV_MAPERR, three_calls, 3, "crash_c", &p);
	assert_int_equal(p.tid, (uint32_t)c.r.pid); /* the main thread */
	assert_int_equal(p.addr, 0);
	assert_int_equal(p.flags, 0);
	child_result_free(&c.r);
}

/* The child of mode crashes by sig (code) in crash_c, three calls deep: ended and recorded so. */
static void expect_three_calls_crash(const char *mode, int sig, int code)
{
	struct crashed c;
	struct crash_payload p;

	run_crash(mode, &c);
	ts_expect_crash_end(&c.r, sig);
	expect_recorded_crash(&c, sig, code, three_calls, 3, "crash_c", &p);
	child_result_free(&c.r);
}

/* The same on a program's own small alternate stack: the crash flush fits on it. */
static void segfault_on_a_small_alternate_stack(void **state)
{
	(void)state;
	expect_three_calls_crash("small_altstack", SIGSEGV, SEGV_MAPERR);
}

static void abort_three_calls_deep(void **state)
{
	struct crashed c;
	struct crash_payload p;
	struct map_crash_lines m;

	(void)state;
	run_crash("abort", &c);
	expect_signal(&c, SIGABRT);
	expect_recorded_crash(&c, SIGABRT, SI_TKILL, three_calls, 3, "crash_c", &p);
	/* abort() raised it: frame 0 is inside libc, the callers follow. */
	read_map_crash(c.map, &m);
	assert_true(map_has_symbol(&m, "crash_b"));
	assert_true(map_has_symbol(&m, "abort"));
	assert_int_equal(p.addr, 0);
	child_result_free(&c.r);
}

static void raised_sigbus(void **state)
{
	(void)state;
	expect_three_calls_crash("raise", SIGBUS, SI_TKILL);
}

static void stack_overflow_on_the_alternate_stack(void **state)
{
	static const uint32_t deep[] = {FID_RECURSE, FID_RECURSE, FID_RECURSE};
	struct crashed c;
	struct crash_payload p;

	(void)state;
	run_crash("overflow", &c);
	ts_expect_crash_end(&c.r, SIGSEGV);
	expect_recorded_crash(&c, SIGSEGV, SEGV_MAPERR, deep, 3, "recurse", &p);
	/* Thousands of frames: the 64 innermost are kept. */
	assert_int_equal(p.frame_count, XFDR_CRASH_FRAMES_MAX);
	assert_int_equal(p.flags & XFDR_CRASH_TRUNCATED, XFDR_CRASH_TRUNCATED);
	child_result_free(&c.r);
}

/*
 * stderr holds the program's handler's line, then says the crash flush wrote its trace: the
 * handler ran first, and the crash was flushed as the handler ended the process.
 */
static void expect_handler_then_wrote(const struct crashed *c, const char *sig_name,
				      const char *handler_line)
{
	char wrote_line[64];
	const char *wrote, *handler;

	snprintf(wrote_line, sizeof(wrote_line), "xfdr: %s: wrote ", sig_name);
	wrote = strstr(c->r.err, wrote_line);
	handler = strstr(c->r.err, handler_line);
	if (!wrote || !handler || handler > wrote)
		fail_msg("stderr lacks '%s' before '%s':\n%s", handler_line, wrote_line, c->r.err);
}

/* A handler the program installed before xfdr runs with the real fault; its _exit() flushes. */
static void chains_to_the_programs_handler(void **state)
{
	struct crashed c;
	struct crash_payload p;

	(void)state;
	run_crash("chain", &c);
	assert_int_equal(c.r.signal, 0);
	assert_int_equal(c.r.status, 42);
	expect_recorded_crash(&c, SIGSEGV, SEGV_MAPERR, three_calls, 3, "crash_c", &p);
	assert_int_equal(p.addr, 0x10);
	expect_handler_then_wrote(&c, "SIGSEGV", "chained sig=11 code=1 addr=0x10");
	child_result_free(&c.r);
}

/*
 * The program installs its handler with signal() after xfdr started: xfdr's stays in the
 * kernel and runs it, and the crash is flushed as it _exit()s (it used to be replaced: no trace
 * at all).
 */
static void chains_to_a_handler_installed_later(void **state)
{
	struct crashed c;
	struct crash_payload p;

	(void)state;
	run_crash("chain_late", &c);
	if (c.r.signal || c.r.status != 43)
		fail_msg("child ended with status %d (signal %d), expected 43; stderr:\n%s",
			 c.r.status, c.r.signal, c.r.err);
	expect_recorded_crash(&c, SIGSEGV, SEGV_MAPERR, three_calls, 3, "crash_c", &p);
	expect_handler_then_wrote(&c, "SIGSEGV", "late handler sig=11");
	child_result_free(&c.r);
}

/* A raised signal chains too, with the siginfo it came with (abort(): SI_TKILL from itself). */
static void chains_a_raised_signal(void **state)
{
	struct crashed c;
	struct crash_payload p;

	(void)state;
	run_crash("chain_abort", &c);
	assert_int_equal(c.r.signal, 0);
	assert_int_equal(c.r.status, 42);
	expect_recorded_crash(&c, SIGABRT, SI_TKILL, three_calls, 3, "crash_c", &p);
	expect_handler_then_wrote(&c, "SIGABRT", "chained sig=6 code=-6 self=1");
	child_result_free(&c.r);
}

/*
 * A fault the program's own handler recovers from: the child exits 0, said nothing of a crash,
 * and its trace has every call (after the faults too) and no crash event.
 */
static void expect_recovered(const char *mode)
{
	struct thread_tail tail;
	struct crashed c;
	unsigned action;
	uint32_t fid;

	run_crash(mode, &c);
	if (c.r.signal || c.r.status)
		fail_msg("child ended with status %d (signal %d), expected 0; stderr:\n%s",
			 c.r.status, c.r.signal, c.r.err);
	if (strstr(c.r.err, "SIGSEGV"))
		fail_msg("a recovered fault taken for a crash: %s", c.r.err);
	ts_tools_accept(c.trace);
	assert_int_equal(read_tail(c.trace, FID_A, &tail), 0);
	tail_fn(&tail, 0, &action, &fid);
	assert_int_equal(action, XFDR_FN_EXIT);
	assert_int_equal(fid, FID_B);
	tail_fn(&tail, 2, &action, &fid);
	assert_int_equal(action, XFDR_FN_EXIT);
	assert_int_equal(fid, FID_A);
	child_result_free(&c.r);
}

/* A probe: three reads of NULL, each siglongjmp()ed out of (handler installed before xfdr). */
static void probe_that_recovers(void **state)
{
	(void)state;
	expect_recovered("probe");
}

/* The same, its handler installed after xfdr started (through the interposed sigaction()). */
static void probe_installed_later_recovers(void **state)
{
	(void)state;
	expect_recovered("probe_late");
}

/* A write barrier: the handler unprotects the page and returns; the store then succeeds. */
static void write_barrier_recovers(void **state)
{
	(void)state;
	expect_recovered("barrier");
}

/* raise(SIGSEGV) that the program's handler takes and returns from: the program goes on. */
static void raised_signal_handled(void **state)
{
	(void)state;
	expect_recovered("raised_handled");
}

/*
 * A program's handler that does not recover: the child ends by dying_sig (or with status
 * exit_status when dying_sig is 0), after the handler's line; the crash recorded is the
 * SIGSEGV of crash_c with code, flushed as the handler ended the process.
 */
static void expect_handler_crash(const char *mode, int dying_sig, int exit_status, int code,
				 const char *handler_line)
{
	struct crashed c;
	struct crash_payload p;

	run_crash(mode, &c);
	if (dying_sig)
		expect_signal(&c, dying_sig);
	else if (c.r.signal || c.r.status != exit_status)
		fail_msg("child ended with status %d (signal %d), expected %d; stderr:\n%s",
			 c.r.status, c.r.signal, exit_status, c.r.err);
	expect_recorded_crash(&c, SIGSEGV, code, three_calls, 3, "crash_c", &p);
	expect_handler_then_wrote(&c, "SIGSEGV", handler_line);
	child_result_free(&c.r);
}

/* The handler sets SIG_DFL and returns: the fault comes again and kills. That is a crash. */
static void handler_resets_and_returns(void **state)
{
	(void)state;
	expect_handler_crash("reset", SIGSEGV, 0, SEGV_MAPERR, "reset handler");
}

/* The handler of a raised SIGSEGV raises it again with SIG_DFL: a crash. */
static void handler_raises_again(void **state)
{
	(void)state;
	expect_handler_crash("reraise", SIGSEGV, 0, SI_TKILL, "reraise handler");
}

/* The handler calls exit(): its atexit handlers run, the crash is flushed among them. */
static void handler_exits(void **state)
{
	(void)state;
	expect_handler_crash("handler_exits", 0, 44, SEGV_MAPERR, "exiting handler");
}

/* The handler abort()s: the process dies by SIGABRT, the fault it was called for is recorded. */
static void handler_aborts(void **state)
{
	(void)state;
	expect_handler_crash("handler_aborts", SIGABRT, 0, SEGV_MAPERR, "aborting handler");
}

/* The crash is inside xfdr_enter(): not recordable (counted), flushed, and the child dies. */
static void crash_inside_the_recorder(void **state)
{
	struct crashed c;
	struct map_crash_lines m;
	struct thread_tail tail;
	char value[64];
	size_t n;
	char *map;

	(void)state;
	run_crash("recorder", &c);
	ts_expect_crash_end(&c.r, SIGSEGV);
	assert_true(c.seconds < 10);
	ts_tools_accept(c.trace);
	assert_int_equal(read_tail(c.trace, FID_A, &tail), 0);
	read_map_crash(c.map, &m);
	assert_int_equal(m.found, 1);
	assert_int_equal(m.signal, SIGSEGV);
	assert_true(m.frames >= 1);
	assert_string_equal(m.symbol[0], "xfdr_enter");
	map = (char *)ts_slurp(c.map, &n);
	assert_non_null(ts_map_value(map, "dropped\treentrant", value, sizeof(value)));
	assert_string_equal(value, "1");
	free(map);
	child_result_free(&c.r);
}

/* The crash handler itself faults: the kernel ends the child at once, by SIGSEGV. */
static void crash_during_the_handler(void **state)
{
	struct crashed c;

	(void)state;
	run_crash("nested", &c);
	expect_signal(&c, SIGSEGV);
	assert_true(c.seconds < 10);
	child_result_free(&c.r);
}

/* Two threads crash at once: one flushes, the other waits; one crash in the file. */
static void two_threads_crash(void **state)
{
	struct crashed c;
	struct map_crash_lines m;
	struct thread_tail tail;

	(void)state;
	run_crash("two_threads", &c);
	ts_expect_crash_end(&c.r, SIGSEGV);
	assert_true(c.seconds < 20);
	ts_tools_accept(c.trace);
	assert_int_equal(read_tail(c.trace, FID_A, &tail), 1);
	read_map_crash(c.map, &m);
	assert_int_equal(m.found, 1);
	assert_int_equal(ts_count(c.r.err, "xfdr: SIGSEGV: wrote "), 1);
	child_result_free(&c.r);
}

/* The crash flush of mode hangs (a write that never returns): the watchdog ends it by SIGSEGV. */
static void expect_watchdog(const char *mode)
{
	struct crashed c;

	run_crash(mode, &c);
	expect_signal(&c, SIGSEGV);
	if (!strstr(c.r.err, "giving up (the watchdog)"))
		fail_msg("no watchdog line on stderr: %s", c.r.err);
	assert_true(c.seconds < 30);
	child_result_free(&c.r);
}

static void watchdog_ends_a_hung_flush(void **state)
{
	(void)state;
	expect_watchdog("watchdog");
}

/*
 * The same, while the program's first thread sigwait()s for SIGALRM: the watchdog's signal
 * goes to the crashing thread alone (alarm()'s went to the waiting thread: the child hung).
 */
static void watchdog_beside_a_signal_thread(void **state)
{
	(void)state;
	expect_watchdog("watchdog_sigwait");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(segfault_three_calls_deep),
	    cmocka_unit_test(segfault_on_a_small_alternate_stack),
	    cmocka_unit_test(abort_three_calls_deep),
	    cmocka_unit_test(raised_sigbus),
	    cmocka_unit_test(stack_overflow_on_the_alternate_stack),
	    cmocka_unit_test(chains_to_the_programs_handler),
	    cmocka_unit_test(chains_a_raised_signal),
	    cmocka_unit_test(chains_to_a_handler_installed_later),
	    cmocka_unit_test(probe_that_recovers),
	    cmocka_unit_test(probe_installed_later_recovers),
	    cmocka_unit_test(write_barrier_recovers),
	    cmocka_unit_test(raised_signal_handled),
	    cmocka_unit_test(handler_resets_and_returns),
	    cmocka_unit_test(handler_raises_again),
	    cmocka_unit_test(handler_aborts),
	    cmocka_unit_test(handler_exits),
	    cmocka_unit_test(crash_inside_the_recorder),
	    cmocka_unit_test(crash_during_the_handler),
	    cmocka_unit_test(two_threads_crash),
	    cmocka_unit_test(watchdog_ends_a_hung_flush),
	    cmocka_unit_test(watchdog_beside_a_signal_thread),
	};

	if (argc > 3 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], argv[3]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
