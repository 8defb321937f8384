/*
 * runtime/flush/crash_record.c - the crashing thread's backtrace and its "XFDRCRSH" event
 * (crash_record.h).
 *
 * libunwind's local unwinder, started from the signal frame (unw_init_local2 with
 * UNW_INIT_SIGNAL_FRAME, libunwind >= 1.6): frame 0 is the interrupted instruction itself and
 * is looked up as such, every later frame is a return address. The unwinder's one-time set-up
 * (a lock and a signal mask change) is done by crash_prepare() at init.
 *
 * libunwind's caching policy is left as it is. An unwind with the global cache reads the
 * policy, blocks every signal and takes the cache's lock; on its way out it reads the policy
 * again and unlocks and restores the mask only if it is still global. Setting it to "none"
 * here (as this file once did, to stay away from that lock) left a thread of the program that
 * was inside that section with the lock held and every signal blocked for good
 * (test_runtime_crash_unwind). Keeping the cache is safe: its holder has every signal blocked,
 * so this handler never interrupted it and at worst waits for a short section to end; a second
 * crashing thread waits on the fatal path and never unwinds.
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/base/print.h"
#include "runtime/flush/crash_record.h"
#include "runtime/record/recorder.h"
#include "writer/payload.h"
#include "xfdr/format.h"

static int prepared;

/* A few frames of an ordinary unwind, so that libunwind's lazy set-up runs here, not later. */
static __attribute__((noinline)) void warm_up(void)
{
	unw_context_t ctx;
	unw_cursor_t cur;
	int i;

	if (unw_getcontext(&ctx) || unw_init_local(&cur, &ctx))
		return;
	for (i = 0; i < 8 && unw_step(&cur) > 0; i++)
		;
}

void crash_prepare(void)
{
	if (prepared)
		return;
	prepared = 1;
	warm_up();
}

XFDR_NOINSTR void crash_signal_name(int sig, char out[CRASH_SIGNAME_BYTES])
{
	struct pr_buf b = {.text = out, .cap = CRASH_SIGNAME_BYTES};
	const char *abbrev = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : NULL;

	pr_str(&b, "SIG");
	if (abbrev) {
		pr_str(&b, abbrev);
	} else if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
		pr_str(&b, "RTMIN+");
		pr_u64(&b, (uint64_t)(sig - SIGRTMIN));
	} else {
		pr_i64(&b, sig);
	}
	pr_cstr(&b);
}

/* Signals whose si_addr is the faulting address, when the kernel sent them (si_code > 0). */
static XFDR_NOINSTR int has_fault_addr(int sig, const siginfo_t *si)
{
	return si && si->si_code > 0 &&
	       (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
		sig == SIGTRAP);
}

static XFDR_NOINSTR uint64_t context_pc(void *uc)
{
#if defined(__x86_64__)
	return (uint64_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uint64_t)((ucontext_t *)uc)->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

XFDR_NOINSTR void crash_capture(struct crash_report *r, int sig, const siginfo_t *si, void *uc)
{
	unw_cursor_t cur;
	unw_word_t ip;
	uint32_t n = 0;

	memset(r, 0, sizeof(*r));
	r->signal = sig;
	crash_signal_name(sig, r->signal_name);
	r->code = si ? si->si_code : 0;
	r->tid = (uint32_t)syscall(SYS_gettid);
	r->fault_addr = has_fault_addr(sig, si) ? (uint64_t)(uintptr_t)si->si_addr : 0;
	/* On x86-64 and aarch64, libunwind's unw_context_t is the ucontext_t a handler gets. */
	if (uc && unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
		for (;;) {
			if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || !ip)
				break;
			if (n == XFDR_CRASH_FRAMES_MAX) {
				r->flags |= XFDR_CRASH_TRUNCATED;
				break;
			}
			r->frames[n++] = (uint64_t)ip;
			if (unw_step(&cur) <= 0)
				break;
		}
	}
	if (!n && uc && context_pc(uc))
		r->frames[n++] = context_pc(uc);
	r->frame_count = n;
}

XFDR_NOINSTR int crash_record(const struct crash_report *r, size_t buffer_bytes)
{
	/* The buffer must hold its preamble, the marker, the payload and room for EndOfBuffer. */
	const size_t fixed =
	    XFDR_BUFFER_PREAMBLE_BYTES + 2 * XFDR_MD_RECORD_BYTES + XFDR_CRASH_FRAMES_OFF;
	uint64_t payload[XFDR_CRASH_PAYLOAD_BYTES(XFDR_CRASH_FRAMES_MAX) / 8];
	struct wr_crash_info c = {
	    .signal = (uint32_t)r->signal,
	    .code = r->code,
	    .tid = r->tid,
	    .fault_addr = r->fault_addr,
	    .flags = r->flags,
	    .frame_count = r->frame_count,
	    .frames = r->frames,
	};
	size_t fit;

	if (buffer_bytes < fixed)
		return -EMSGSIZE;
	fit = (buffer_bytes - fixed) / 8;
	if (c.frame_count > fit) {
		c.frame_count = (uint32_t)fit;
		c.flags |= XFDR_CRASH_TRUNCATED;
	}
	return rec_custom_event(payload, wr_crash((uint8_t *)payload, &c));
}
