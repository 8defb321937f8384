/*
 * runtime/flush/prog_handler.h - a crash signal's handler that the program installed runs
 * first, inside xfdr's, so that a fault the program recovers from (a probe with siglongjmp(),
 * a garbage collector's write barrier) is not taken for a crash (see prog_handler.c).
 */
#ifndef XFDR_RUNTIME_FLUSH_PROG_HANDLER_H
#define XFDR_RUNTIME_FLUSH_PROG_HANDLER_H

#include <signal.h>

enum prog_verdict {
	PROG_RECOVERED = 0, /* the program goes on: no crash */
	PROG_CRASHED = 1,   /* a crash: the fault comes again, the signal was raised again, ... */
};

/*
 * prog_handler_setup - find out once what the fault checks can use (the kernel's
 * MADV_POPULATE_READ). Context: init.
 */
void prog_handler_setup(void);

/*
 * prog_handler_is_one - does act name a handler (not SIG_DFL, not SIG_IGN)?
 */
int prog_handler_is_one(const struct sigaction *act);

/*
 * prog_handler_repeats - is this fault the one the program's handler returned from last on
 * this thread, again with the same registers (the handler cured nothing xfdr could check)?
 * Context: xfdr's crash handler.
 */
int prog_handler_repeats(int sig, const siginfo_t *si, const void *uc);

/*
 * prog_handler_run - run act's handler for signal sig as the kernel would have: with the mask
 * it would have set and its SA_RESETHAND (reset calls reset_to_default(sig)), on this stack.
 * It may not return (siglongjmp()). When it returns, says whether that was a crash:
 *   fault (comes_again)  the handler changed the registers, or the page is accessible now:
 *                        recovered; otherwise the fault would come again: crashed;
 *   raised signal        SIGABRT (abort() goes on to end the process) or sig pending again
 *                        (the handler raised it again): crashed; otherwise recovered.
 * Context: xfdr's crash handler, not on the fatal path.
 */
enum prog_verdict prog_handler_run(int sig, siginfo_t *si, void *uc, const struct sigaction *act,
				   int comes_again, void (*reset_to_default)(int sig));

/*
 * prog_handler_running - is the calling thread inside a program's handler that
 * prog_handler_run() called (an _exit() or exit() from there)? Then 1, with the crash's
 * signal, siginfo and context; 0 otherwise.
 * Context: any.
 */
int prog_handler_running(int *sig, siginfo_t **si, void **uc);

#endif /* XFDR_RUNTIME_FLUSH_PROG_HANDLER_H */
