/*
 * runtime/flush/sig_interpose.c - sigaction(), signal(), _exit() and _Exit(), interposed.
 *
 * A program that installs its own SIGSEGV handler after xfdr started (zstd's signal(SIGSEGV,
 * ABRThandler), a test framework, a JIT) would replace xfdr's crash handler, and its crash
 * would leave no trace. So xfdr exports both names, as the sanitizers' runtimes do (and as it
 * already does for dlclose()): the definition in libxfdr.a is the program's own, libxfdr.so
 * comes before libc. For a signal that xfdr handles as a crash, the program's call changes
 * only what xfdr chains to, and reads back what the program itself set last
 * (signals_program_action(), signals.c); every other call goes on unchanged. Calls inside
 * libc (abort()'s, for one) are not the program's and are not seen here.
 *
 * signal() is glibc's: BSD semantics (the handler stays installed, SA_RESTART, the signal
 * blocked while its handler runs). siginterrupt(), sysv_signal() and bsd_signal() are not
 * interposed and go to libc unchanged.
 *
 * _exit() and _Exit(): xfdr runs the program's crash handler first (prog_handler.c), and a
 * handler that ends the process with _exit() would leave no trace; called there, they record
 * and flush the crash first (signals_exit_in_crash_handler()). exit() needs no interposing:
 * its atexit handlers run, the exit flush among them. Both are weak: a static link takes
 * libc's _exit() when libc's own code needs it, and then the program's calls go there too
 * (such a handler's crash is not flushed); where ours stands alone, the next one is libc's or
 * the exit_group system call, which is all libc's does.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/flush/sig_interpose.h"
#include "runtime/flush/signals.h"
#include "xfdr/xfdr.h"

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static int (*next_action)(int, const struct sigaction *, struct sigaction *);
static void (*next_exit)(int);

/*
 * At load, before the program can call either name: after this, sig_real_action() is only a
 * call through a pointer (it runs in signal handlers, where dlsym() may not).
 */
__attribute__((constructor)) static void find_next_action(void)
{
	void *p = dlsym(RTLD_NEXT, "sigaction");

	*(void **)&next_action = p ? p : (void *)__sigaction;
	*(void **)&next_exit = dlsym(RTLD_NEXT, "_exit");
}

XFDR_NOINSTR int sig_real_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (XFDR_UNLIKELY(!next_action)) /* a constructor of another library, before ours */
		next_action = __sigaction;
	return next_action(sig, act, old);
}

XFDR_API XFDR_NOINSTR int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (signals_program_action(sig, act, old))
		return 0;
	return sig_real_action(sig, act, old);
}

XFDR_API XFDR_NOINSTR sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction act, old;

	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	if (sig > 0 && sig < NSIG)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = SA_RESTART;
	if (sigaction(sig, &act, &old))
		return SIG_ERR;
	return old.sa_handler;
}

static XFDR_NOINSTR __attribute__((noreturn)) void exit_now(int status)
{
	signals_exit_in_crash_handler();
	if (next_exit)
		next_exit(status);
	for (;;)
		syscall(SYS_exit_group, (long)status);
}

XFDR_API XFDR_NOINSTR __attribute__((weak)) void _exit(int status)
{
	exit_now(status);
}

XFDR_API XFDR_NOINSTR __attribute__((weak)) void _Exit(int status)
{
	exit_now(status);
}
