/*
 * runtime/hooks/fentry_fast.c - the common case of the -pg -mfentry hooks (fentry.c), built
 * without vector registers (-mgeneral-regs-only, Makefile) and making no call: the stubs call
 * it having saved only the general registers the ABI lets it clobber, and save the vector
 * registers (xmm0-7: the instrumented function's arguments) only when it declines and the full
 * hook runs. It declines, having changed nothing, for everything but an entry that pushes one
 * frame on a mapped stack with its id in this thread's cache, and a return that pops the top
 * frame, its own; and whenever the record itself needs the slow path (rec_function_fast()).
 *
 * Sanitizer builds instrument memory accesses with calls that may use vector registers: there
 * the stubs save them on every event (XFDR_SANITIZED, Makefile), and this file changes nothing.
 *
 * x86-64 only, as fentry.c.
 */
#if defined(__x86_64__)

#include <stdint.h>

#include "runtime/base/compiler.h"
#include "runtime/hooks/fentry_thread.h"
#include "runtime/record/clock_fast.h"
#include "runtime/record/record_fast.h"
#include "runtime/record/session.h"
#include "runtime/symbols/fnmap_fast.h"
#include "xfdr/format.h"

/* The clock read inline and the hooks' guard taken; 0 (nothing changed) when either fails. */
static inline XFDR_NOINSTR int fast_begin(struct fentry_thread *t, struct clock_now *now)
{
	if (XFDR_UNLIKELY(!clock_now_inline(now) || xfdr_load_relaxed(&t->busy)))
		return 0;
	xfdr_store_relaxed(&t->busy, 1u);
	/* A signal handler from here on sees the guard. */
	xfdr_barrier();
	return 1;
}

static inline XFDR_NOINSTR int fast_end(struct fentry_thread *t, int done)
{
	xfdr_barrier();
	xfdr_store_relaxed(&t->busy, 0u);
	return done;
}

XFDR_NOINSTR int fentry_enter_fast(const uint8_t *ret, uintptr_t frame)
{
	struct fentry_thread *t = &fentry_self;
	struct clock_now now;
	uint32_t d, id;
	int done = 0;

	if (!fast_begin(t, &now))
		return 0;
	d = t->depth;
	/* frames at or below this one are gone (the full hook closes them), or a full stack */
	if (XFDR_LIKELY(t->session == session_recording() && t->state == STACK_READY &&
			!t->deeper && (!d || t->frames[d - 1].frame > frame) &&
			d < FENTRY_STACK_FRAMES &&
			fnmap_id_cached((const void *)fn_start(ret), &id) &&
			rec_function_fast(now, XFDR_FN_ENTER, id, 0))) {
		t->frames[d].frame = frame;
		t->frames[d].id = id;
		t->depth = d + 1;
		done = 1;
	}
	return fast_end(t, done);
}

XFDR_NOINSTR int fentry_return_fast(uintptr_t frame)
{
	struct fentry_thread *t = &fentry_self;
	struct clock_now now;
	uint32_t d;
	int done = 0;

	if (!fast_begin(t, &now))
		return 0;
	d = t->depth;
	/* the top frame is this function's: no frame below it was abandoned */
	if (XFDR_LIKELY(t->session == session_recording() && t->state == STACK_READY &&
			!t->deeper && d && t->frames[d - 1].frame == frame &&
			rec_function_fast(now, XFDR_FN_EXIT, t->frames[d - 1].id, 0))) {
		t->depth = d - 1;
		done = 1;
	}
	return fast_end(t, done);
}

#endif
