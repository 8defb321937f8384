/*
 * runtime/hooks/fentry.c - the hooks of gcc's -pg -mfentry -minstrument-return=call.
 *
 * gcc then emits, after inlining (so an inlined copy costs nothing, unlike
 * -finstrument-functions), `call __fentry__` as the first instruction of every function (after
 * an endbr64 under -fcf-protection; 5 bytes e8 rel32, or 6 bytes ff 15 through the GOT in PIC,
 * which ld may relax to 67 e8) and `call __return__` right before each ret and each sibling-call
 * jmp. Neither gets an argument and both sit where gcc assumes no call: the stubs below keep
 * every register the code may rely on there (the argument registers, rax: the vararg count or a
 * sibcall target, r10: the static chain, r11: a sibcall target, xmm0-7; the return registers are
 * among them), align the stack and call the C side. x87 state is not touched by the runtime;
 * the upper halves of ymm/zmm are not saved (a __m256 argument could lose them on a slow path
 * that calls an AVX libc routine).
 *
 * Ids: __fentry__'s return address, less the call (5 or 6 bytes) and an endbr64, is the
 * function's first byte, mapped with fnmap_id() as -finstrument-functions' this_fn is: the
 * same ids, the same "cyg" group of the .map, real start addresses.
 *
 * Exits: __return__ does not know its function. Each thread keeps a shadow stack of (frame, id)
 * where frame is the address of the slot holding the function's return address: at __fentry__
 * and at __return__ alike it is the stub's entry rsp + 8 (rbp + 16 after push rbp). Frames
 * have strictly decreasing addresses from the bottom of the stack to the top.
 *   __fentry__(frame F): frames at addresses <= F are gone (a longjmp past them, or an
 *     uninstrumented tail call): each gets an Exit, topmost first, except one at F itself, the
 *     frame of a function that jumped to this one without __return__: Tail_Exit. Then F is
 *     pushed and its Enter recorded.
 *   __return__(frame F): frames below F (lower addresses) were abandoned (longjmp, exception):
 *     Exit each, then Exit the frame at F. No frame at F (entered before recording started, or
 *     in another session, or a function the include= and exclude= options leave out, which
 *     __fentry__ counts and pushes no frame for): nothing more is recorded.
 * All the events of one hook share its TSC, but for an entry that first had the thread's
 * shadow stack mapped or its id looked up in the map: it is stamped after that work, which is
 * the recorder's time and not the call's. A recording session that is not the stack's empties
 * it first, silently: its frames belong to an earlier trace.
 *
 * Depth: FENTRY_STACK_FRAMES (1024, uftrace's default depth limit) frames of 16 bytes, 16 KiB
 * per thread, mapped at the thread's first recorded entry and unmapped at its exit: the
 * initial-exec TLS (fentry_self) stays a few words, so libxfdr.so still fits glibc's static TLS
 * surplus. Real call chains are far shallower; deeper frames (runaway recursion) are entered
 * and exited as FNMAP_ID_NONE and counted ("too_deep" in the .map, one stderr line): `deeper`
 * counts those open above the full stack; a return or entry at or above the top frame closes
 * them first. A thread whose stack cannot be mapped, or that runs instrumented code after its
 * stack was released at exit, records every call that way ("no_stack").
 *
 * Signals: the stack is touched only by its own thread. A handler that runs between two hooks
 * nests on top: on the same stack its frames are deeper, so it pushes above ours and pops back
 * to them; on an alternate stack at a lower address the same holds. On an alternate stack at a
 * higher address its first entry takes the interrupted frames for gone: they get their exits
 * then (their later returns match nothing); still balanced, but early. A handler that runs
 * inside a hook (the busy guard is set) leaves the stack alone: its calls, all inside the
 * handler, are recorded as FNMAP_ID_NONE entries and exits ("nested"), balanced among
 * themselves. A handler that longjmps out of a hook leaves the guard set: that thread's later
 * calls are then recorded as "nested" (as rec_function_at()'s own guard drops them).
 *
 * Cost when not recording: the stubs compare the session word with SESSION_OFF and return: one
 * load and a branch. When recording: 9 GPR saves, the clock, the stack, the id cache
 * (fnmap_fast.h) and the inline record path (record_fast.h), in fentry_fast.c; the 8 xmm saves
 * only when that declines (a thread's first entry, a function's first call, frames abandoned,
 * a full stack, the record's own slow path). A thread's first recorded entry
 * maps its stack; a function's first call may allocate (fnmap_id()).
 *
 * x86-64 only (the TSC is needed anyway); elsewhere this file is empty.
 */
#if defined(__x86_64__)

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/hooks/fentry.h"
#include "runtime/hooks/fentry_thread.h"
#include "runtime/record/record_fast.h"
#include "runtime/record/session.h"
#include "runtime/symbols/fnmap.h"
#include "runtime/symbols/fnmap_fast.h"
#include "xfdr/format.h"
#include "xfdr/xfdr.h"

/* The stubs test the session word's low half (little-endian: its first 4 bytes). */
_Static_assert(SESSION_OFF == 0xffffffffu, "the stubs compare with $-1");
_Static_assert(sizeof(rt_state.ctl) == 8 && __builtin_offsetof(struct rt_state, ctl) == 0,
	       "the stubs read the session at rt_state + 0");

__thread struct fentry_thread fentry_self __attribute__((tls_model("initial-exec")));

/* key_state's low half; while RUNNING its high half is the creator's pid (key_ready()). */
enum key_state {
	KEY_NONE = 0,
	KEY_RUNNING = 1,
	KEY_READY = 2,
	KEY_FAILED = 3,
};

static pthread_key_t stack_key;
static uint64_t key_state;

/* Called by the stubs; hidden, named in the assembly below. */
void fentry_enter(const uint8_t *ret, uintptr_t frame) XFDR_HIDDEN;
void fentry_return(uintptr_t frame) XFDR_HIDDEN;

/*
 * The stubs. Frame of both: push rbp (so gdb and libunwind walk through with the CFI below, and
 * frame-pointer walkers through rbp), then 16-byte aligned room for 9 GPRs and xmm0-7:
 *   0..127 xmm0-7 | 128 rax rcx rdx rsi rdi r8 r9 r10 r11 (..199) | 200 pad
 * 8(%rbp) is the address the stub returns to, 16(%rbp) the instrumented function's frame.
 * The GPRs are saved on every event; xmm0-7 only when the common case (fentry_fast.c, which
 * uses no vector register) declines and the full hook runs, or on every event in sanitizer
 * builds (whose checks may call code that uses them).
 */
#if defined(__CET__) && (__CET__ & 1)
#define FENTRY_ENDBR "endbr64\n\t"
#else
#define FENTRY_ENDBR ""
#endif

#define FENTRY_SAVE_GPRS                                                                           \
	"push %rbp\n\t"                                                                            \
	".cfi_adjust_cfa_offset 8\n\t"                                                             \
	".cfi_rel_offset %rbp, 0\n\t"                                                              \
	"mov %rsp, %rbp\n\t"                                                                       \
	".cfi_def_cfa_register %rbp\n\t"                                                           \
	"and $-16, %rsp\n\t"                                                                       \
	"sub $208, %rsp\n\t"                                                                       \
	"mov %rax, 128(%rsp)\n\t"                                                                  \
	"mov %rcx, 136(%rsp)\n\t"                                                                  \
	"mov %rdx, 144(%rsp)\n\t"                                                                  \
	"mov %rsi, 152(%rsp)\n\t"                                                                  \
	"mov %rdi, 160(%rsp)\n\t"                                                                  \
	"mov %r8, 168(%rsp)\n\t"                                                                   \
	"mov %r9, 176(%rsp)\n\t"                                                                   \
	"mov %r10, 184(%rsp)\n\t"                                                                  \
	"mov %r11, 192(%rsp)\n\t"

#define FENTRY_SAVE_XMM                                                                            \
	"movaps %xmm0, 0(%rsp)\n\t"                                                                \
	"movaps %xmm1, 16(%rsp)\n\t"                                                               \
	"movaps %xmm2, 32(%rsp)\n\t"                                                               \
	"movaps %xmm3, 48(%rsp)\n\t"                                                               \
	"movaps %xmm4, 64(%rsp)\n\t"                                                               \
	"movaps %xmm5, 80(%rsp)\n\t"                                                               \
	"movaps %xmm6, 96(%rsp)\n\t"                                                               \
	"movaps %xmm7, 112(%rsp)\n\t"

#define FENTRY_RESTORE_XMM                                                                         \
	"movaps 0(%rsp), %xmm0\n\t"                                                                \
	"movaps 16(%rsp), %xmm1\n\t"                                                               \
	"movaps 32(%rsp), %xmm2\n\t"                                                               \
	"movaps 48(%rsp), %xmm3\n\t"                                                               \
	"movaps 64(%rsp), %xmm4\n\t"                                                               \
	"movaps 80(%rsp), %xmm5\n\t"                                                               \
	"movaps 96(%rsp), %xmm6\n\t"                                                               \
	"movaps 112(%rsp), %xmm7\n\t"

#define FENTRY_RESTORE_GPRS                                                                        \
	"mov 128(%rsp), %rax\n\t"                                                                  \
	"mov 136(%rsp), %rcx\n\t"                                                                  \
	"mov 144(%rsp), %rdx\n\t"                                                                  \
	"mov 152(%rsp), %rsi\n\t"                                                                  \
	"mov 160(%rsp), %rdi\n\t"                                                                  \
	"mov 168(%rsp), %r8\n\t"                                                                   \
	"mov 176(%rsp), %r9\n\t"                                                                   \
	"mov 184(%rsp), %r10\n\t"                                                                  \
	"mov 192(%rsp), %r11\n\t"                                                                  \
	"mov %rbp, %rsp\n\t"                                                                       \
	"pop %rbp\n\t"                                                                             \
	".cfi_def_cfa %rsp, 8\n\t"                                                                 \
	".cfi_restore %rbp\n\t"

/*
 * Not recording (the session is SESSION_OFF): return before touching anything. Recording: the
 * common case without the vector registers (fast, 1 when it did the event), else they are saved
 * and the full hook runs.
 */
#ifdef XFDR_SANITIZED
#define FENTRY_CALLS(args, fast, handler)                                                          \
	FENTRY_SAVE_XMM args "call " handler "\n\t" FENTRY_RESTORE_XMM
#else
#define FENTRY_CALLS(args, fast, handler)                                                          \
	args "call " fast "\n\t"                                                                   \
	     "test %eax, %eax\n\t"                                                                 \
	     "jnz 2f\n\t" FENTRY_SAVE_XMM args "call " handler "\n\t" FENTRY_RESTORE_XMM "2:\n\t"
#endif

#define FENTRY_STUB(name, args, fast, handler)                                                     \
	".pushsection .text\n\t"                                                                   \
	".globl " name "\n\t"                                                                      \
	".type " name ", @function\n\t"                                                            \
	".p2align 4\n" name ":\n\t"                                                                \
	".cfi_startproc\n\t" FENTRY_ENDBR "cmpl $-1, rt_state(%rip)\n\t"                           \
	"je 1f\n\t" FENTRY_SAVE_GPRS                                                               \
	FENTRY_CALLS(args, fast, handler) FENTRY_RESTORE_GPRS "1:\n\t"                             \
							      "ret\n\t"                            \
							      ".cfi_endproc\n\t"                   \
							      ".size " name ", .-" name "\n\t"     \
							      ".popsection\n\t"

__asm__(FENTRY_STUB("__fentry__", "mov 8(%rbp), %rdi\n\tlea 16(%rbp), %rsi\n\t",
		    "fentry_enter_fast", "fentry_enter")
	    FENTRY_STUB("__return__", "lea 16(%rbp), %rdi\n\t", "fentry_return_fast",
			"fentry_return"));

/* Thread exit: unmap the stack; a later hook of the thread goes stackless. */
static XFDR_NOINSTR void stack_release(void *frames)
{
	struct fentry_thread *t = &fentry_self;

	t->state = STACK_GONE;
	t->frames = NULL;
	t->depth = 0;
	/* A signal handler after this point sees no stack before the memory goes. */
	xfdr_barrier();
	munmap(frames, FENTRY_STACK_BYTES);
}

/*
 * The thread-exit key, created once; 0 when it cannot be (the thread then stays stackless).
 * A fork child inherits KEY_RUNNING but not the thread creating the key, so RUNNING names the
 * creator's process: a waiter in another process (a fork child's) creates a key of its own
 * (the creator's, if it got one, is leaked). No fork handler is needed.
 */
static XFDR_NOINSTR int key_ready(void)
{
	uint64_t st = xfdr_load_acquire(&key_state), mine;

	if (XFDR_LIKELY(st == KEY_READY))
		return 1;
	mine = (uint64_t)(uint32_t)getpid() << 32 | KEY_RUNNING;
	for (;;) {
		if (st == KEY_NONE && xfdr_cas(&key_state, &st, mine)) {
			st = pthread_key_create(&stack_key, stack_release) ? KEY_FAILED : KEY_READY;
			/* pairs with the acquire above: the key before "ready" */
			xfdr_store_release(&key_state, st);
			return st == KEY_READY;
		}
		if ((uint32_t)st != KEY_RUNNING)
			return st == KEY_READY;
		if (st != mine) {
			/* Created by a thread of the process we were forked from: not here. */
			if (xfdr_cas(&key_state, &st, (uint64_t)KEY_NONE))
				st = KEY_NONE;
			continue;
		}
		/* Another thread is creating it (a few instructions); we are never nested here. */
		sched_yield();
		st = xfdr_load_acquire(&key_state);
	}
}

/* Map the thread's stack (its first recorded entry). Returns 0 when it stays stackless. */
static XFDR_COLD XFDR_NOINSTR int stack_create(struct fentry_thread *t)
{
	int saved = errno;
	void *p;

	t->state = STACK_GONE;
	if (!key_ready())
		goto out;
	p = mmap(NULL, FENTRY_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED)
		goto out;
	if (pthread_setspecific(stack_key, p)) {
		munmap(p, FENTRY_STACK_BYTES);
		goto out;
	}
	t->frames = p;
	t->depth = 0;
	t->state = STACK_READY;
out:
	errno = saved;
	return t->state == STACK_READY;
}

/* Empty the stack of an earlier session: its frames are not in this trace. */
static inline XFDR_NOINSTR void sync_session(struct fentry_thread *t, uint32_t session)
{
	if (XFDR_UNLIKELY(t->session != session)) {
		t->depth = 0;
		t->deeper = 0;
		t->session = session;
	}
}

/* Exit every call open above the stack (or, stackless, every open call). */
static XFDR_NOINSTR void close_deeper(struct fentry_thread *t, uint64_t tsc, unsigned cpu)
{
	while (t->deeper) {
		rec_function_at(tsc, cpu, XFDR_FN_EXIT, FNMAP_ID_NONE);
		t->deeper--;
	}
}

/* Exit the frames above index keep (depth becomes keep); the topmost first. */
static inline XFDR_NOINSTR void pop_to(struct fentry_thread *t, uint32_t keep, uint64_t tsc,
				       unsigned cpu)
{
	uint32_t d = t->depth;

	while (d > keep) {
		d--;
		rec_function_at(tsc, cpu, XFDR_FN_EXIT, t->frames[d].id);
		t->depth = d;
	}
}

/* Context: the __fentry__ stub, recording was on a moment ago; any thread, signal handlers. */
XFDR_NOINSTR void fentry_enter(const uint8_t *ret, uintptr_t frame)
{
	struct fentry_thread *t = &fentry_self;
	uint32_t session = session_recording(), d, id;
	unsigned cpu;
	uint64_t tsc;

	if (XFDR_UNLIKELY(session == SESSION_OFF))
		return;
	tsc = clock_read(&cpu);
	if (XFDR_UNLIKELY(xfdr_load_relaxed(&t->busy))) {
		rec_function_at(tsc, cpu, XFDR_FN_ENTER, fnmap_refuse(FNMAP_NESTED));
		return;
	}
	xfdr_store_relaxed(&t->busy, 1u);
	/* A signal handler from here on sees the guard. */
	xfdr_barrier();
	sync_session(t, session);
	if (XFDR_UNLIKELY(t->state != STACK_READY)) {
		if (t->state == STACK_GONE || !stack_create(t)) {
			t->deeper++;
			rec_function_at(tsc, cpu, XFDR_FN_ENTER, fnmap_refuse(FNMAP_NO_STACK));
			goto out;
		}
		/* A new stack: no frame to exit below; the entry starts once it is mapped. */
		tsc = clock_read(&cpu);
	}
	d = t->depth;
	if (XFDR_UNLIKELY(t->deeper)) {
		/* deeper > 0 only while the stack is full */
		if (!d || frame < t->frames[d - 1].frame) {
			t->deeper++;
			rec_function_at(tsc, cpu, XFDR_FN_ENTER, fnmap_refuse(FNMAP_TOO_DEEP));
			goto out;
		}
		close_deeper(t, tsc, cpu);
	}
	while (d && t->frames[d - 1].frame <= frame) {
		d--;
		rec_function_at(tsc, cpu,
				t->frames[d].frame == frame ? XFDR_FN_TAIL_EXIT : XFDR_FN_EXIT,
				t->frames[d].id);
		t->depth = d;
	}
	if (XFDR_UNLIKELY(!fnmap_id_cached((const void *)fn_start(ret), &id))) {
		id = fnmap_id_uncached((const void *)fn_start(ret));
		/* The lookup is the recorder's time: the call starts once its id is known. */
		tsc = clock_read(&cpu);
	}
	if (XFDR_UNLIKELY(id & FNMAP_ID_FILTERED)) {
		/* left out: no frame, so its return finds none of its own */
		rec_count_filtered(XFDR_FN_ENTER);
		goto out;
	}
	if (XFDR_UNLIKELY(d == FENTRY_STACK_FRAMES)) {
		t->deeper++;
		rec_function_at(tsc, cpu, XFDR_FN_ENTER, fnmap_refuse(FNMAP_TOO_DEEP));
		goto out;
	}
	t->frames[d].frame = frame;
	t->frames[d].id = id;
	t->depth = d + 1;
	rec_function_at(tsc, cpu, XFDR_FN_ENTER, id);
out:
	xfdr_barrier();
	xfdr_store_relaxed(&t->busy, 0u);
}

/* Context: the __return__ stub, recording was on a moment ago; any thread, signal handlers. */
XFDR_NOINSTR void fentry_return(uintptr_t frame)
{
	struct fentry_thread *t = &fentry_self;
	uint32_t session = session_recording(), d, k;
	unsigned cpu;
	uint64_t tsc;

	if (XFDR_UNLIKELY(session == SESSION_OFF))
		return;
	tsc = clock_read(&cpu);
	if (XFDR_UNLIKELY(xfdr_load_relaxed(&t->busy))) {
		/* The entry was nested too (a handler returns before the hook it interrupted). */
		rec_function_at(tsc, cpu, XFDR_FN_EXIT, FNMAP_ID_NONE);
		return;
	}
	xfdr_store_relaxed(&t->busy, 1u);
	/* A signal handler from here on sees the guard. */
	xfdr_barrier();
	sync_session(t, session);
	d = t->state == STACK_READY ? t->depth : 0;
	if (XFDR_UNLIKELY(t->deeper)) {
		if (!d || frame < t->frames[d - 1].frame) {
			t->deeper--;
			rec_function_at(tsc, cpu, XFDR_FN_EXIT, FNMAP_ID_NONE);
			goto out;
		}
		close_deeper(t, tsc, cpu);
	}
	k = d;
	while (k && t->frames[k - 1].frame < frame)
		k--;
	if (k && t->frames[k - 1].frame == frame)
		k--;
	/* Everything below frame was abandoned; frame's own function ends (if it is ours). */
	if (k < d)
		pop_to(t, k, tsc, cpu);
out:
	xfdr_barrier();
	xfdr_store_relaxed(&t->busy, 0u);
}

/* ---- inspection (fentry.h) --------------------------------------------------------------- */

int fentry_inspect_key_started(void)
{
	return (uint32_t)xfdr_load_acquire(&key_state) != KEY_NONE;
}

int fentry_inspect_key_usable(void)
{
	static char probe;
	void *mine;

	if (!key_ready())
		return 0;
	mine = pthread_getspecific(stack_key);
	return !pthread_setspecific(stack_key, &probe) && !pthread_setspecific(stack_key, mine);
}

#endif /* __x86_64__ */
