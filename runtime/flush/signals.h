/*
 * runtime/flush/signals.h - the signal triggers of a flush: the on-demand flush signal, the
 * termination signals and the crashes (see xfdr.h, "Survival").
 */
#ifndef XFDR_RUNTIME_FLUSH_SIGNALS_H
#define XFDR_RUNTIME_FLUSH_SIGNALS_H

#include <signal.h>
#include <stddef.h>

/*
 * What init asks for. The flush and stop of the life cycle (a higher layer) are registered
 * here, so that this layer never calls up.
 */
struct signal_plan {
	int flush_signal; /* 0: none */
	int on_terminate; /* SIGTERM, SIGINT */
	int on_crash;	  /* SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP */
	int (*flush)(char *path_out, size_t path_bytes);
	/* The flush of the fatal path (terminate, crash): a trace even while another runs. */
	int (*flush_fatal)(char *path_out, size_t path_bytes);
	int (*stop)(void);
	/* 1 when a terminating signal has nothing to write (NULL: always write) */
	int (*nothing_recorded)(void);
};

/*
 * signals_install - install (or, on a later init, update) the handlers the plan asks for and
 * restore the previous dispositions of those it no longer asks for.
 * Context: init only. Returns 0 or a negative errno of sigaction(2)/mmap(2).
 */
int signals_install(const struct signal_plan *p);

/*
 * signals_program_action - the program's sigaction(sig, act, old), when xfdr handles sig as a
 * crash: act (if any) becomes what xfdr chains to, and old gets what the program set before
 * (what was there before xfdr, at first); the handler in the kernel stays xfdr's. Returns 1
 * when so, 0 when the call is not xfdr's to answer (the caller makes it as it is).
 * Context: any, signal handlers included.
 */
int signals_program_action(int sig, const struct sigaction *act, struct sigaction *old);

/*
 * signals_exit_in_crash_handler - called as the process ends by _exit() or exit(): when the
 * calling thread is inside the program's handler of a crash (which xfdr ran first, see
 * prog_handler.h), record and flush that crash now and return 1; else 0.
 * Context: any thread, as the process ends.
 */
int signals_exit_in_crash_handler(void);

#endif /* XFDR_RUNTIME_FLUSH_SIGNALS_H */
