/*
 * runtime/flush/prog_handler.c - the program's own crash handler, run first (see
 * prog_handler.h).
 *
 * Why first: a program may handle its own faults. A probe that reads an address under
 * sigsetjmp() and siglongjmp()s out of its SIGSEGV handler, a garbage collector that
 * mprotect()s its heap and unprotects a page in the handler, a JIT that moves the faulting
 * thread on: such a fault is not a crash, and the program must go on recording, as it would
 * have gone on without xfdr. Only running the handler tells; so xfdr's crash handler calls it
 * first, as the kernel would have (the same siginfo and context, the mask the kernel would
 * have set, SA_RESETHAND), and judges by what happens:
 *
 *   the handler does not return     siglongjmp(): recovered (nothing of ours is left to undo:
 *                                   the fatal path is not entered before this returns);
 *   it ends the process             _exit(), _Exit() (sig_interpose.c) and exit() (the exit
 *                                   flush) ask prog_handler_running(), and the crash is
 *                                   recorded and flushed first;
 *   it raises a signal of ours      abort() and the like come to xfdr's handler nested in it;
 *   it returns from a fault         recovered if it changed the registers (moved the thread
 *                                   on) or the faulting page now allows the access (the
 *                                   kernel's MADV_POPULATE_READ or _WRITE says so without
 *                                   touching the memory); otherwise the fault would come again
 *                                   for ever: a crash. SIGILL and SIGFPE with the same
 *                                   registers come again. Where no check can tell (an
 *                                   instruction fetch, a kernel without MADV_POPULATE_*), the
 *                                   fault's key is remembered and the same fault with the same
 *                                   registers next on this thread is the crash
 *                                   (prog_handler_repeats());
 *   it returns from a raised signal SIGABRT: a crash (abort() goes on to end the process by
 *                                   SIG_DFL, set inside libc where xfdr does not see it);
 *                                   the signal pending again (the handler raised it again,
 *                                   after signal(sig, SIG_DFL) as crash reporters do): a
 *                                   crash; else the program goes on.
 *
 * What is lost: a handler that ends the process with a raw exit_group system call, or that
 * never returns, leaves no trace. The sanitizers' runtimes end that way, and call their death
 * callback first: the life cycle registers the exit flush there (lifecycle.c), which asks
 * prog_handler_running() as an exit() would.
 *
 * The thread's current call (struct prog_call, on this handler's frame) is what an _exit()
 * inside the program's handler flushes by. A handler that siglongjmp()s leaves it behind,
 * pointing at a dead frame: it counts only while its frame is intact (magic, its own address,
 * the siginfo unchanged) and deeper than the caller's.
 *
 * Only async-signal-safe calls: sigprocmask, sigpending, sigaltstack, madvise.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/flush/prog_handler.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define CALL_MAGIC 0x786664722d63616cull

/* x86-64 page fault error code bits, in the context's REG_ERR */
#define PF_WRITE 0x2u
#define PF_FETCH 0x10u

struct prog_call {
	uint64_t magic;
	const struct prog_call *self;
	int sig;
	int on_altstack; /* the handler began on the alternate stack */
	siginfo_t *si;
	void *uc;
	siginfo_t si_copy;
};

/* A fault whose cure no check could tell, as the handler returned from it. */
struct fault_key {
	int sig;
	int code;
	void *addr;
	uint64_t regs; /* hash of the general registers */
};

static __thread struct prog_call *calling __attribute__((tls_model("initial-exec")));
static __thread struct fault_key unchecked __attribute__((tls_model("initial-exec")));

static size_t page_bytes;
static int populate_works; /* MADV_POPULATE_READ is known to this kernel */

void prog_handler_setup(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	uintptr_t here = (uintptr_t)&ps;

	page_bytes = ps > 0 ? (size_t)ps : 4096u;
	/* On an old kernel, EINVAL for every page: it would tell nothing. */
	populate_works =
	    !madvise((void *)(here & ~(uintptr_t)(page_bytes - 1)), page_bytes, MADV_POPULATE_READ);
}

XFDR_NOINSTR int prog_handler_is_one(const struct sigaction *act)
{
	if (act->sa_flags & SA_SIGINFO)
		return act->sa_sigaction != NULL;
	return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

/* FNV-1a over the general registers: equal hashes, the thread is where it was. 0: unknown. */
static XFDR_NOINSTR uint64_t regs_hash(const void *ucv)
{
#if defined(__x86_64__)
	const ucontext_t *uc = ucv;
	const unsigned char *p = (const unsigned char *)uc->uc_mcontext.gregs;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < sizeof(uc->uc_mcontext.gregs); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
#else
	(void)ucv;
	return 0;
#endif
}

/*
 * Does the faulting page allow the access now? 1 yes (the handler cured it), 0 no (the fault
 * comes again), -1 no check tells.
 */
static XFDR_NOINSTR int fault_cured(int sig, const siginfo_t *si, const void *ucv)
{
#if defined(__x86_64__)
	const ucontext_t *uc = ucv;
	unsigned long err = (unsigned long)uc->uc_mcontext.gregs[REG_ERR];
	uintptr_t page = (uintptr_t)si->si_addr & ~(uintptr_t)(page_bytes - 1);

	if (!populate_works || (err & PF_FETCH))
		return -1;
	if (!(sig == SIGSEGV && (si->si_code == SEGV_MAPERR || si->si_code == SEGV_ACCERR)) &&
	    !(sig == SIGBUS && si->si_code == BUS_ADRERR))
		return -1;
	if (!madvise((void *)page, page_bytes,
		     (err & PF_WRITE) ? MADV_POPULATE_WRITE : MADV_POPULATE_READ))
		return 1;
	/* EINVAL: no such access; ENOMEM: nothing mapped; EFAULT: it would fault (SIGBUS) */
	return errno == EINVAL || errno == ENOMEM || errno == EFAULT ? 0 : -1;
#else
	(void)sig;
	(void)si;
	(void)ucv;
	return -1;
#endif
}

static XFDR_NOINSTR void key_of(struct fault_key *k, int sig, const siginfo_t *si, const void *uc)
{
	k->sig = sig;
	k->code = si->si_code;
	k->addr = si->si_addr;
	k->regs = regs_hash(uc);
}

XFDR_NOINSTR int prog_handler_repeats(int sig, const siginfo_t *si, const void *uc)
{
	struct fault_key k;

	if (!unchecked.sig || !si || !uc)
		return 0;
	key_of(&k, sig, si, uc);
	if (k.sig != unchecked.sig || k.code != unchecked.code || k.addr != unchecked.addr ||
	    k.regs != unchecked.regs)
		return 0;
	unchecked.sig = 0;
	return 1;
}

static XFDR_NOINSTR int on_altstack(void)
{
	stack_t ss;

	return !sigaltstack(NULL, &ss) && (ss.ss_flags & SS_ONSTACK);
}

/* The current call, if its frame is still the one that made it and holds the caller's. */
static XFDR_NOINSTR struct prog_call *live_call(const void *caller_frame)
{
	struct prog_call *c = calling;

	if (!c || c->magic != CALL_MAGIC || c->self != c ||
	    (const char *)caller_frame >= (char *)c || (c->on_altstack && !on_altstack()) ||
	    memcmp(&c->si_copy, c->si, sizeof(c->si_copy)))
		return NULL;
	return c;
}

XFDR_NOINSTR enum prog_verdict prog_handler_run(int sig, siginfo_t *si, void *ucv,
						const struct sigaction *act, int comes_again,
						void (*reset_to_default)(int sig))
{
	ucontext_t *uc = ucv;
	struct prog_call call, *outer = live_call(__builtin_frame_address(0));
	sigset_t theirs, ours, pending;
	uint64_t regs_before;
	int cured;

	if (!si || !uc)
		return PROG_CRASHED; /* not from the kernel: nothing to hand on */
	regs_before = regs_hash(uc);
	sigorset(&theirs, &uc->uc_sigmask, &act->sa_mask);
	if (!(act->sa_flags & SA_NODEFER))
		sigaddset(&theirs, sig);
	if (act->sa_flags & SA_RESETHAND)
		reset_to_default(sig);
	memset(&call, 0, sizeof(call));
	call.magic = CALL_MAGIC;
	call.self = &call;
	call.sig = sig;
	call.on_altstack = on_altstack();
	call.si = si;
	call.uc = uc;
	call.si_copy = *si;
	calling = &call;
	xfdr_barrier();
	sigprocmask(SIG_SETMASK, &theirs, &ours);
	if (act->sa_flags & SA_SIGINFO)
		act->sa_sigaction(sig, si, uc);
	else
		act->sa_handler(sig);
	sigprocmask(SIG_SETMASK, &ours, NULL);
	xfdr_barrier();
	calling = outer;
	if (!comes_again) {
		if (sig == SIGABRT)
			return PROG_CRASHED;
		sigpending(&pending);
		return sigismember(&pending, sig) == 1 ? PROG_CRASHED : PROG_RECOVERED;
	}
	if (regs_hash(uc) != regs_before)
		return PROG_RECOVERED;
	if (sig == SIGILL || sig == SIGFPE)
		return PROG_CRASHED;
	cured = fault_cured(sig, si, uc);
	if (cured < 0) {
		key_of(&unchecked, sig, si, uc);
		return PROG_RECOVERED;
	}
	return cured ? PROG_RECOVERED : PROG_CRASHED;
}

XFDR_NOINSTR int prog_handler_running(int *sig, siginfo_t **si, void **uc)
{
	struct prog_call *c = live_call(__builtin_frame_address(0));

	if (!c)
		return 0;
	*sig = c->sig;
	*si = c->si;
	*uc = c->uc;
	return 1;
}
