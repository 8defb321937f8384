/*
 * runtime/flush/signals.c - the signal triggers of a flush (signals.h): the flush signal,
 * the termination signals and the crashes.
 *
 * One handler, on_signal(), serves every signal xfdr takes; entries[sig].role says what it
 * does there:
 *
 *   flush      flush_signal: write a snapshot and return; the program goes on recording.
 *   terminate  SIGTERM, SIGINT (flush_on_terminate): stop recording, flush, put the previous
 *              disposition back (SIG_DFL) and raise the signal again, so the process ends
 *              killed by it, as it would have without xfdr.
 *   crash      SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP (flush_on_crash): record the
 *              crashing thread's backtrace as "XFDRCRSH" (crash_record.c), stop, flush with the
 *              crash in the .map, put the previous disposition back and let the signal happen
 *              again: a fault (si_code > 0) re-executes when the handler returns; a raised
 *              signal (abort(), kill, int3) is queued again with its own siginfo and the
 *              thread's saved mask adjusted, so it arrives as the handler returns. A handler
 *              the program had installed before xfdr then runs (chaining); else the default
 *              action ends the process, with its core dump, exactly as without xfdr.
 *
 * Who owns a signal. flush_signal is taken whatever its disposition was (the user asked for
 * it by name; a replaced handler is named on stderr) and wins over the other roles, SIGTERM
 * and SIGINT included. A termination signal is taken only if its disposition is SIG_DFL when
 * signals_install() runs: a program that installed its own handler has its own plan for it,
 * and a signal set to SIG_IGN (nohup, a background job's SIGINT) must stay ignored, so such
 * a signal is left alone entirely, never chained. Crash signals are always taken and chain to
 * what was there, or to what the program set since: its sigaction() and signal() go through
 * sig_interpose.c, which for a crash signal changes only the program's disposition kept here
 * (prog_set()), so that xfdr's handler stays the kernel's. A later init keeps the signals it took,
 * takes what it asks for anew, and puts back the dispositions of those it no longer asks for; a
 * signal whose handler the program replaced since is the program's from then on.
 *
 * The fatal path (terminate and crash) runs in one thread at a time (fatal_owner, claimed by
 * compare-exchange). A thread that takes a fatal signal while another thread is on the path
 * waits for it, bounded, and then dies by its own signal without a flush of its own: the
 * owner's flush is the one the process leaves. The same thread entering the path again (a
 * crash inside its own handling that is not a blocked fault, e.g. an abort() in libunwind, or
 * a crash inside the terminate flush) dies at once by the new signal with SIG_DFL. A fault
 * while the crash handler runs is a blocked signal: the kernel ends the process by it.
 *
 * The fatal path's flush is the life cycle's flush_fatal: it does not wait for a flush that
 * another thread runs (however slow its writes), nor for one this thread was inside when the
 * signal came; it writes beside it, into a file of its own (lifecycle.c).
 *
 * Never hang: the crash handler's mask blocks every crash and termination signal and the
 * flush signal; and for the time of the fatal path a watchdog runs: a POSIX timer that sends
 * SIGALRM to the thread on the path alone (SIGEV_THREAD_ID), with a SIGALRM handler installed
 * only then. Not alarm(): its SIGALRM is the process's, and a program thread that sigwait()s for
 * SIGALRM would take it. When it fires (libunwind or the flush hangs: a lock held by a dead
 * thread, a file system that does not answer), the fatal signal gets SIG_DFL and is raised
 * again, so the process still dies by it. The watchdog's time is WATCHDOG_BASE_S plus one
 * second per WATCHDOG_BYTES_PER_S bytes of pool. The program's own alarms are left alone (one
 * that lands on the path's thread is dropped: the process is ending), and its SIGALRM
 * disposition is put back when the path ends.
 *
 * A crash inside a flush that this thread runs from one of these handlers (tracked per
 * thread) is recorded and reported, but not flushed: the fault may be the flush's own. A crash
 * inside an xfdr_flush() the program called is flushed beside it.
 *
 * Only async-signal-safe calls in the handlers: sigaction, sigprocmask, tgkill,
 * rt_tgsigqueueinfo, timer_create/settime/delete (the system calls), alarm, nanosleep,
 * clock_gettime, write, and the flush's own (flush.c); libunwind is the exception that
 * crash_record.c discusses.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/base/monotonic.h"
#include "runtime/base/print.h"
#include "runtime/flush/crash_record.h"
#include "runtime/flush/mapfile.h"
#include "runtime/flush/prog_handler.h"
#include "runtime/flush/sig_interpose.h"
#include "runtime/flush/signals.h"
#include "runtime/pool/pool.h"
#include "runtime/record/altstack.h"

#define WATCHDOG_BASE_S 5u
#define WATCHDOG_BYTES_PER_S (64u * 1024u * 1024u)
/* A thread waiting for another one's fatal path waits past that path's watchdog. */
#define FATAL_WAIT_EXTRA_MS 2000u

enum sig_role {
	ROLE_NONE = 0, /* not ours: our handler is not installed */
	ROLE_FLUSH = 1,
	ROLE_TERMINATE = 2,
	ROLE_CRASH = 3,
};

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
static const int terminate_signals[] = {SIGTERM, SIGINT};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The program's disposition of a signal: the one ours replaced, or for a crash signal the one
 * the program set since (sig_interpose.c). Put back when we let go; a crash chains to it. Two
 * copies, prog[prog_at & 1] the current one, so that a handler never reads one half written.
 */
struct sig_entry {
	int role; /* enum sig_role, read by the handler */
	struct sigaction prog[2];
	unsigned prog_at;
};

/* Written by signals_install() (init) before the handler is installed, read by handlers. */
static struct sig_entry entries[NSIG];
static int (*plan_flush)(char *path_out, size_t path_bytes);
static int (*plan_flush_fatal)(char *path_out, size_t path_bytes);
static int (*plan_stop)(void);
static int (*plan_nothing_recorded)(void);
static int plan_flush_signal;
static unsigned watchdog_s;

/* The fatal path. */
static uint32_t fatal_owner;	   /* tid on the path; 0: nobody */
static int fatal_signal;	   /* its signal, for the watchdog */
static struct crash_report report; /* the owner's crash, for the event and the .map */
static struct sigaction alarm_saved_action;
static int watchdog_timer = -1; /* the kernel's timer id; -1: none (alarm() then) */
static unsigned alarm_saved_s;	/* the program's alarm, when alarm() had to stand in */

/* This thread runs a flush from one of our handlers (a crash there cannot flush). */
static __thread int in_our_flush __attribute__((tls_model("initial-exec")));

static XFDR_NOINSTR void prog_get(int sig, struct sigaction *out)
{
	const struct sig_entry *e = &entries[sig];

	/* pairs with the release in prog_set(): the copy is whole before its index */
	*out = e->prog[xfdr_load_acquire(&e->prog_at) & 1u];
}

static XFDR_NOINSTR void prog_set(int sig, const struct sigaction *act)
{
	struct sig_entry *e = &entries[sig];
	unsigned at = xfdr_load_relaxed(&e->prog_at) + 1u;

	e->prog[at & 1u] = *act;
	xfdr_store_release(&e->prog_at, at);
}

static XFDR_NOINSTR int is_ignored(const struct sigaction *a)
{
	return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN;
}

static int is_crash_signal(int sig)
{
	size_t i;

	for (i = 0; i < COUNT(crash_signals); i++)
		if (crash_signals[i] == sig)
			return 1;
	return 0;
}

static XFDR_NOINSTR uint32_t self_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static XFDR_NOINSTR void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * 1000000L};

	nanosleep(&ts, NULL);
}

/* "xfdr: SIGUSR2: wrote PATH", or what went wrong. */
static XFDR_NOINSTR void report_line(int sig, const char *what, int rc, const char *path)
{
	char text[PATH_MAX + 96], name[CRASH_SIGNAME_BYTES];
	struct pr_buf b = PR_BUF_INIT(text);

	crash_signal_name(sig, name);
	pr_str(&b, name);
	pr_str(&b, ": ");
	if (what) {
		pr_str(&b, what);
	} else if (rc) {
		pr_str(&b, "flush failed: ");
		pr_str(&b, pr_errno_name(rc));
	} else {
		pr_str(&b, "wrote ");
		pr_str(&b, path);
		pr_note(&b);
		return;
	}
	pr_line(&b);
}

static XFDR_NOINSTR int flush_once(int (*flush)(char *, size_t), char *path, size_t bytes)
{
	int rc;

	in_our_flush = 1;
	xfdr_barrier();
	rc = flush(path, bytes);
	xfdr_barrier();
	in_our_flush = 0;
	return rc;
}

static XFDR_NOINSTR void set_mask(int how, int sig)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(how, &set, NULL);
}

/* Raise sig on this thread and unblock it: with a fatal disposition, the process ends here. */
static XFDR_NOINSTR void raise_now(int sig)
{
	syscall(SYS_tgkill, (long)getpid(), (long)self_tid(), (long)sig);
	set_mask(SIG_UNBLOCK, sig);
}

static XFDR_NOINSTR void default_action(struct sigaction *a)
{
	memset(a, 0, sizeof(*a));
	a->sa_handler = SIG_DFL;
	sigemptyset(&a->sa_mask);
}

/* End the process by sig with its default action (all ours terminate, most dump core). */
static XFDR_NOINSTR void die_now(int sig)
{
	struct sigaction dfl;

	default_action(&dfl);
	sig_real_action(sig, &dfl, NULL);
	raise_now(sig);
	/* Not reached: the default action of sig ends the process. Not _exit(): ours flushes. */
	syscall(SYS_exit_group, (long)(128 + sig));
}

/* Put back what our handler replaced; the next sig goes where it went before xfdr. */
static XFDR_NOINSTR void let_go(int sig)
{
	struct sigaction p;

	prog_get(sig, &p);
	sig_real_action(sig, &p, NULL);
	xfdr_store_relaxed(&entries[sig].role, (int)ROLE_NONE);
}

static XFDR_NOINSTR void on_watchdog(int unused, siginfo_t *si, void *uc)
{
	int sig = xfdr_load_relaxed(&fatal_signal);
	char text[160], name[CRASH_SIGNAME_BYTES];
	struct pr_buf b = PR_BUF_INIT(text);

	(void)unused;
	(void)uc;
	/* The program's alarm (or anyone's SIGALRM) while our timer runs. */
	if (watchdog_timer >= 0 &&
	    (si->si_code != SI_TIMER || si->si_value.sival_ptr != (void *)&watchdog_timer))
		return;
	crash_signal_name(sig, name);
	pr_str(&b, name);
	pr_str(&b, ": unwinding and flushing did not end within ");
	pr_u64(&b, watchdog_s);
	pr_str(&b, " s: giving up (the watchdog)");
	pr_line(&b);
	die_now(sig);
}

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid /* glibc before 2.35 lacks the name */
#endif

/*
 * A timer that sends SIGALRM to this thread only, in s seconds, its value the address of *id
 * (how the handler knows it). The system calls themselves: glibc's timer_create() is not
 * async-signal-safe. Returns 0 with *id set, or -1 with *id -1.
 */
static XFDR_NOINSTR int timer_start(int *id, unsigned s)
{
	struct itimerspec when;
	struct sigevent ev;
	int kid;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGALRM;
	ev.sigev_value.sival_ptr = id;
	ev.sigev_notify_thread_id = (pid_t)self_tid();
	*id = -1;
	if (syscall(SYS_timer_create, (long)CLOCK_MONOTONIC, &ev, &kid))
		return -1;
	memset(&when, 0, sizeof(when));
	when.it_value.tv_sec = (time_t)s;
	if (syscall(SYS_timer_settime, (long)kid, 0L, &when, NULL)) {
		syscall(SYS_timer_delete, (long)kid);
		return -1;
	}
	*id = kid;
	return 0;
}

static XFDR_NOINSTR void watchdog_arm(int sig)
{
	struct sigaction wd;

	memset(&wd, 0, sizeof(wd));
	wd.sa_sigaction = on_watchdog;
	wd.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigfillset(&wd.sa_mask);
	xfdr_store_relaxed(&fatal_signal, sig);
	sig_real_action(SIGALRM, &wd, &alarm_saved_action);
	/* This thread takes it, whatever the program's masks. */
	set_mask(SIG_UNBLOCK, SIGALRM);
	if (timer_start(&watchdog_timer, watchdog_s))
		alarm_saved_s = alarm(watchdog_s); /* no timer to be had: the process's alarm */
}

static XFDR_NOINSTR void watchdog_disarm(void)
{
	if (watchdog_timer >= 0) {
		syscall(SYS_timer_delete, (long)watchdog_timer);
		watchdog_timer = -1;
	} else {
		alarm(0);
	}
	sig_real_action(SIGALRM, &alarm_saved_action, NULL);
	if (alarm_saved_s)
		alarm(alarm_saved_s);
	alarm_saved_s = 0;
}

/*
 * Claim the fatal path. Returns 1 when claimed. Otherwise: the calling thread was already on
 * it (it dies here by sig), or it waited for the other thread (bounded) and returns 0.
 */
static XFDR_NOINSTR int fatal_enter(int sig)
{
	uint32_t me = self_tid(), owner = 0;
	uint64_t deadline;

	if (xfdr_cas(&fatal_owner, &owner, me))
		return 1;
	if (owner == me)
		die_now(sig);
	deadline = mono_ms() + (uint64_t)watchdog_s * 1000u + FATAL_WAIT_EXTRA_MS;
	while (xfdr_load_acquire(&fatal_owner) == owner && mono_ms() < deadline)
		sleep_ms(1);
	return 0;
}

static XFDR_NOINSTR void fatal_leave(void)
{
	/* pairs with the acquire in fatal_enter() */
	xfdr_store_release(&fatal_owner, 0u);
}

static XFDR_NOINSTR void flush_now(int sig)
{
	char path[PATH_MAX];
	int rc = flush_once(plan_flush, path, sizeof(path));

	report_line(sig, NULL, rc, path);
}

/*
 * The fatal path's file name: one thread at a time is on it (fatal_enter()), and its stack may
 * be a program's small alternate stack, or a sanitizer's under its report.
 */
static char fatal_path[PATH_MAX];

static XFDR_NOINSTR void terminate(int sig)
{
	int rc;

	if (fatal_enter(sig)) {
		watchdog_arm(sig);
		if (plan_stop)
			plan_stop();
		/* A process that recorded nothing leaves no file, as at exit. */
		if (!plan_nothing_recorded || !plan_nothing_recorded()) {
			rc = flush_once(plan_flush_fatal, fatal_path, sizeof(fatal_path));
			report_line(sig, NULL, rc, fatal_path);
		}
		watchdog_disarm();
		fatal_leave();
	}
	let_go(sig);
	raise_now(sig);
}

/* Will the signal come again by itself when the handler returns (a fault re-executes)? */
static XFDR_NOINSTR int comes_again(int sig, const siginfo_t *si)
{
	if (!si || si->si_code <= 0 || sig == SIGTRAP || sig == SIGABRT)
		return 0;
	/* An action-optional machine check is not tied to the instruction. */
	return !(sig == SIGBUS && si->si_code == BUS_MCEERR_AO);
}

/*
 * The crash's fatal path: record it (capture, the event, the .map), stop, flush. By the
 * thread's crash, or, inside a program's handler (an abort() there, an _exit()), by the crash
 * that handler was called for: that is where the program went wrong.
 */
static XFDR_NOINSTR void crash_flush(int sig, siginfo_t *si, void *uc)
{
	int crash_sig = sig;
	int rc;

	if (!fatal_enter(sig))
		return;
	watchdog_arm(sig);
	prog_handler_running(&crash_sig, &si, &uc); /* changes nothing outside one */
	crash_capture(&report, crash_sig, si, uc);
	/* Not recorded when the crash is inside the recorder, or when not recording. */
	crash_record(&report, rt_pool.buffer_bytes);
	map_set_crash(&report);
	if (plan_stop)
		plan_stop();
	/* Named by the crash the trace holds. */
	if (in_our_flush) {
		report_line(crash_sig, "not flushed: the crash is inside a flush of this thread", 0,
			    NULL);
	} else {
		rc = flush_once(plan_flush_fatal, fatal_path, sizeof(fatal_path));
		report_line(crash_sig, NULL, rc, fatal_path);
	}
	map_set_crash(NULL);
	watchdog_disarm();
	fatal_leave();
}

/* SA_RESETHAND of the program's handler: as the kernel would reset it, at delivery. */
static XFDR_NOINSTR void reset_program_action(int sig)
{
	struct sigaction dfl;

	default_action(&dfl);
	prog_set(sig, &dfl);
}

static XFDR_NOINSTR void crash(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	int again = comes_again(sig, si), ran = 0;
	struct sigaction prog;

	prog_get(sig, &prog);
	/*
	 * A raised signal the program ignores stays ignored: no crash. Not SIGABRT: abort()
	 * ends the process anyway (it sets SIG_DFL and raises again), so that one is flushed.
	 */
	if (!again && sig != SIGABRT && is_ignored(&prog))
		return;
	/* The program's own handler first: it may cure the fault (prog_handler.c). */
	if (prog_handler_is_one(&prog) && xfdr_load_relaxed(&fatal_owner) != self_tid() &&
	    !prog_handler_repeats(sig, si, uc)) {
		if (prog_handler_run(sig, si, uc, &prog, again, reset_program_action) ==
		    PROG_RECOVERED)
			return;
		ran = 1;
	}
	crash_flush(sig, si, uc);
	let_go(sig);
	/*
	 * A fault comes again as the handler returns; the program's handler that ran has done
	 * what it does (abort() goes on, a signal it raised again is pending).
	 */
	if (again || ran)
		return;
	prog_get(sig, &prog);
	if (is_ignored(&prog))
		return;
	/*
	 * Pending now, delivered as the handler returns and the thread's mask comes back. Sent
	 * with the siginfo it came with (a process may queue any si_code to itself), so the
	 * program's handler, or the core dump, sees the same sender and code.
	 */
	if (uc)
		sigdelset(&uc->uc_sigmask, sig);
	if (!si || syscall(SYS_rt_tgsigqueueinfo, (long)getpid(), (long)self_tid(), (long)sig, si))
		syscall(SYS_tgkill, (long)getpid(), (long)self_tid(), (long)sig);
	if (!uc)
		set_mask(SIG_UNBLOCK, sig);
}

/*
 * An _exit() or exit() inside the program's handler of a crash: the crash, recorded and
 * flushed before the process ends. Every signal but the watchdog's blocked: the process is
 * ending, the flush must not be interrupted.
 */
XFDR_NOINSTR int signals_exit_in_crash_handler(void)
{
	siginfo_t *si;
	sigset_t all;
	void *uc;
	int sig;

	if (!prog_handler_running(&sig, &si, &uc))
		return 0;
	sigfillset(&all);
	sigdelset(&all, SIGALRM);
	sigprocmask(SIG_SETMASK, &all, NULL);
	crash_flush(sig, si, uc);
	return 1;
}

static XFDR_NOINSTR void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (sig > 0 && sig < NSIG) {
		switch (xfdr_load_relaxed(&entries[sig].role)) {
		case ROLE_FLUSH:
			flush_now(sig);
			break;
		case ROLE_TERMINATE:
			terminate(sig);
			break;
		case ROLE_CRASH:
			crash(sig, si, uc);
			break;
		default:
			break;
		}
	}
	errno = saved;
}

XFDR_NOINSTR int signals_program_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction was;

	if (sig <= 0 || sig >= NSIG || xfdr_load_relaxed(&entries[sig].role) != ROLE_CRASH)
		return 0;
	prog_get(sig, &was);
	/* Ours given back (read from the kernel some other way, and restored): no change. */
	if (act && !((act->sa_flags & SA_SIGINFO) && act->sa_sigaction == on_signal))
		prog_set(sig, act);
	if (old)
		*old = was;
	return 1;
}

static int role_wanted(const struct signal_plan *p, int sig)
{
	if (p->flush_signal && sig == p->flush_signal)
		return ROLE_FLUSH;
	if (p->on_terminate && (sig == SIGTERM || sig == SIGINT))
		return ROLE_TERMINATE;
	if (p->on_crash && is_crash_signal(sig))
		return ROLE_CRASH;
	return ROLE_NONE;
}

/* Our sigaction for a role: what it blocks while it runs, and on which stack. */
static void our_action(struct sigaction *sa, int role)
{
	size_t i;

	memset(sa, 0, sizeof(*sa));
	sa->sa_sigaction = on_signal;
	sigemptyset(&sa->sa_mask);
	for (i = 0; i < COUNT(terminate_signals); i++)
		sigaddset(&sa->sa_mask, terminate_signals[i]);
	if (role != ROLE_FLUSH && plan_flush_signal)
		sigaddset(&sa->sa_mask, plan_flush_signal);
	/*
	 * Every role on the alternate stack: a flush needs tens of KiB, more than the stacks of
	 * some thread pools and coroutines hold, and a crash may be a stack overflow.
	 */
	if (role == ROLE_CRASH) {
		for (i = 0; i < COUNT(crash_signals); i++)
			sigaddset(&sa->sa_mask, crash_signals[i]);
		sa->sa_flags = SA_SIGINFO | SA_ONSTACK;
	} else {
		sa->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	}
}

static void notice_taken(int sig, const struct sigaction *cur)
{
	char text[160], name[CRASH_SIGNAME_BYTES];
	struct pr_buf b = PR_BUF_INIT(text);

	crash_signal_name(sig, name);
	pr_str(&b, "flush_signal ");
	pr_str(&b, name);
	pr_str(&b, (cur->sa_flags & SA_SIGINFO) || cur->sa_handler != SIG_IGN
		       ? ": the program's handler is replaced"
		       : ": no longer ignored");
	pr_line(&b);
}

static int install_one(int sig, int want)
{
	struct sig_entry *e = &entries[sig];
	struct sigaction cur, sa;
	int ours;

	if (want == ROLE_NONE && e->role == ROLE_NONE)
		return 0;
	if (sig_real_action(sig, NULL, &cur))
		return -errno;
	ours = (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal;
	if (!ours)
		e->role = ROLE_NONE; /* replaced by the program since: its own now */
	if (want == ROLE_NONE) {
		prog_get(sig, &cur);
		if (ours && sig_real_action(sig, &cur, NULL))
			return -errno;
		xfdr_store_relaxed(&e->role, (int)ROLE_NONE);
		return 0;
	}
	if (!ours) {
		int dfl = !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;

		if (want == ROLE_TERMINATE && !dfl)
			return 0; /* the program's: a handler of its own, or ignored */
		if (want == ROLE_FLUSH && !dfl)
			notice_taken(sig, &cur);
		prog_set(sig, &cur);
	}
	our_action(&sa, want);
	xfdr_store_relaxed(&e->role, want);
	if (sig_real_action(sig, &sa, NULL)) {
		xfdr_store_relaxed(&e->role, (int)ROLE_NONE);
		return -errno;
	}
	return 0;
}

int signals_install(const struct signal_plan *p)
{
	uint64_t pool_bytes = (uint64_t)rt_pool.count * rt_pool.buffer_bytes;
	int sig, rc = 0;

	plan_flush = p->flush;
	plan_flush_fatal = p->flush_fatal;
	plan_stop = p->stop;
	plan_nothing_recorded = p->nothing_recorded;
	plan_flush_signal = p->flush_signal;
	watchdog_s = WATCHDOG_BASE_S + (unsigned)(pool_bytes / WATCHDOG_BYTES_PER_S);
	if (p->on_crash || p->on_terminate || p->flush_signal) {
		rc = altstack_enable();
		if (rc)
			return rc;
	} else {
		altstack_disable();
	}
	if (p->on_crash) {
		crash_prepare();
		prog_handler_setup();
	}
	for (sig = 1; sig < NSIG && !rc; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			rc = install_one(sig, role_wanted(p, sig));
	return rc;
}
