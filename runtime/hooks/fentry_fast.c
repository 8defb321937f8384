/*
 * runtime/hooks/fentry_fast.c - the common case of the -pg -mfentry hooks (fentry.c), built
 * without vector registers (-mgeneral-regs-only, Makefile) and making no call: the stubs call
 * it having saved only the general registers the ABI lets it clobber, and save the vector
 * registers (xmm0-7: the instrumented function's arguments) only when it declines and the full
 * hook runs. It declines, having changed nothing, for everything but an entry that pushes one
 * frame on a mapped stack with its id in this thread's cache (or, for a function the filters
 * leave out, pushes nothing), a return that pops the top frame, its own, and a return of a
 * function with no frame; and whenever the record itself needs the slow path
 * (rec_function_fast()).
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

/* The hooks' guard taken; 0 (nothing changed) when a hook of this thread holds it. */
static inline XFDR_NOINSTR int fast_begin(struct fentry_thread *t)
{
	if (XFDR_UNLIKELY(xfdr_load_relaxed(&t->busy)))
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

/*
 * The id comes before the clock: a function the include= and exclude= options leave out costs
 * the cache lookup and one count, and pushes no frame (its return then finds none of its own).
 */
XFDR_NOINSTR int fentry_enter_fast(const uint8_t *ret, uintptr_t frame)
{
	struct fentry_thread *t = &fentry_self;
	struct clock_now now;
	uint32_t d, id;
	int done = 0;

	if (!fast_begin(t))
		return 0;
	d = t->depth;
	/* frames at or below this one are gone (the full hook closes them), or a full stack */
	if (XFDR_LIKELY(t->session == session_recording() && t->state == STACK_READY &&
			!t->deeper && (!d || t->frames[d - 1].frame > frame) &&
			d < FENTRY_STACK_FRAMES &&
			fnmap_id_cached((const void *)fn_start(ret), &id))) {
		/* a thread without a slot yet registers in the full hook */
		if (XFDR_UNLIKELY(id & FNMAP_ID_FILTERED)) {
			done = rec_count_filtered_owned();
		} else if (XFDR_LIKELY(clock_now_inline(&now) &&
				       rec_function_fast(now, XFDR_FN_ENTER, id, 0))) {
			t->frames[d].frame = frame;
			t->frames[d].id = id;
			t->depth = d + 1;
			done = 1;
		}
	}
	return fast_end(t, done);
}

/*
 * The top frame is this function's: no frame below it was abandoned, its exit is recorded. The
 * top frame is above it (or there is none): the function is not on the stack (left out by the
 * filters, or entered before recording began) and nothing below it is, so there is nothing to
 * record.
 */
XFDR_NOINSTR int fentry_return_fast(uintptr_t frame)
{
	struct fentry_thread *t = &fentry_self;
	struct clock_now now;
	uint32_t d;
	int done = 0;

	if (!fast_begin(t))
		return 0;
	d = t->depth;
	if (XFDR_LIKELY(t->session == session_recording() && t->state == STACK_READY &&
			!t->deeper)) {
		if (XFDR_LIKELY(d && t->frames[d - 1].frame == frame)) {
			if (XFDR_LIKELY(
				clock_now_inline(&now) &&
				rec_function_fast(now, XFDR_FN_EXIT, t->frames[d - 1].id, 0))) {
				t->depth = d - 1;
				done = 1;
			}
		} else if (!d || t->frames[d - 1].frame > frame) {
			done = 1;
		}
	}
	return fast_end(t, done);
}

#endif
