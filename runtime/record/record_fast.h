/*
 * runtime/record/record_fast.h - one function entry or exit, the common case inline.
 *
 * The fast case is: the thread has a slot and is not already inside the runtime, its buffer
 * belongs to the session being recorded, the CPU is the one of its last record, the TSC
 * delta fits 32 bits and the 8-byte record fits below fast_end (room for the EndOfBuffer
 * stays); an entry has room for its id on the shadow stack. Then: the shadow stack moves, one
 * record is written, its length published with a release store (with elision on, an exit also
 * publishes the erase floor it moves: stable_bytes; or, when the call was short and its entry
 * may be the last record, goes to rec_exit_elide(), which erases that entry). No lock, no atomic
 * read-modify-write (the guard is one bts on the thread's own slot), no system call. Everything
 * else goes to rec_function_slow().
 */
#ifndef XFDR_RUNTIME_RECORD_RECORD_FAST_H
#define XFDR_RUNTIME_RECORD_RECORD_FAST_H

#include <stdint.h>

#include "runtime/record/clock_fast.h"
#include "runtime/base/compiler.h"
#include "runtime/record/recorder.h"
#include "runtime/record/session.h"
#include "runtime/record/thread_fast.h"
#include "writer/encode.h"
#include "xfdr/format.h"

/* The guard, released once the event is written. */
static inline XFDR_NOINSTR __attribute__((always_inline)) void rec_leave(struct thread_slot *s)
{
	xfdr_barrier();
	/* pairs with the acquire in thread_quiesce() */
	xfdr_store_release(&s->busy, 0u);
}

/*
 * rec_put_record - the function record `word` goes at used, its TSC's low half (lo, the high
 * half being last_hi) becomes the delta base, and its length is published. Returns the
 * buffer's descriptor. Context: the owner, guard held, every fast-path test passed.
 */
static inline XFDR_NOINSTR __attribute__((always_inline)) struct pool_desc *
rec_put_record(struct rec_thread *t, size_t used, uint32_t lo, uint64_t word)
{
	/* read before the record store, which may alias the TLS block for the compiler */
	struct pool_desc *d = t->desc;

	/* used is kept in a register for the same reason */
	t->used = used + XFDR_FN_RECORD_BYTES;
	t->last_lo = lo;
	/* one word store, atomic for the sake of readers of a live process (put_words()) */
	xfdr_store_relaxed((uint64_t *)(void *)(t->buf + used), word);
	/* pairs with the acquire of used_bytes in the flusher */
	xfdr_store_release(&d->used_bytes, used + XFDR_FN_RECORD_BYTES);
	return d;
}

/*
 * rec_exit_final - an exit with elision on that erases nothing: it ends what may be erased, so
 * everything up to it is final and the flusher may copy it (stable_bytes). Writes the record
 * as rec_put_record() does and releases the guard. Context: as rec_put_record().
 */
static inline XFDR_NOINSTR __attribute__((always_inline)) void
rec_exit_final(struct rec_thread *t, struct thread_slot *s, size_t used, uint32_t lo, uint64_t word)
{
	struct pool_desc *d;

	t->erase_floor = used + XFDR_FN_RECORD_BYTES;
	t->depth--;
	d = rec_put_record(t, used, lo, word);
	/* pairs with the acquire of stable_bytes in the flusher */
	xfdr_store_release(&d->stable_bytes, used + XFDR_FN_RECORD_BYTES);
	rec_leave(s);
}

/*
 * Record a function event taken at `now` (its CPU may be one clock_now_inline() knows none for:
 * it matches no thread's). Context: see recorder.h. Returns 1 when the event was dealt with.
 * may_call (a constant): 1, the uncommon cases go to rec_function_slow() (and elision's exit to
 * rec_exit_elide()); 0, the function makes no call: it returns 0 for them, having changed
 * nothing, and the caller records the event some other way (fentry_fast.c, whose code has no
 * vector registers saved for a call).
 * Everything but the common case leaves through rec_function_slow(), the one door out: with
 * the guard taken here (held = the slot) when the thread has a slot and was not inside the
 * runtime, without it (held = NULL) when it has no slot yet (thread_no_slot) or is
 * re-entering.
 * The delta: a TSC whose high half is last_hi's and whose low half is not below last_lo is
 * lo - last_lo, which fits the record's 32 bits; anything else (the clock went backwards, or
 * 2^32 ticks or more since the last record, or only across a multiple of 2^32, once in seconds)
 * is the slow path's, which writes a TSCWrap where it must.
 */
static inline XFDR_NOINSTR __attribute__((always_inline)) int
rec_function_fast(struct clock_now now, unsigned action, uint32_t fid, int may_call)
{
	struct rec_thread *t = &rec_self;
	struct thread_slot *s = t->slot, *held = NULL;
	uint32_t lo = now.lo, hi = now.hi, cpu = now.cpu, delta;
	size_t used;
	uint64_t word;

	if (XFDR_UNLIKELY(xfdr_own_test_and_set(&s->busy)))
		goto slow_path;
	held = s;
	/* A signal handler that runs from here on sees the guard; we see its records after. */
	xfdr_barrier();
	used = t->used;
	if (XFDR_UNLIKELY(session_recording() != t->session || cpu != t->cpu || hi != t->last_hi ||
			  __builtin_sub_overflow(lo, t->last_lo, &delta) || used >= t->fast_end))
		goto slow_path;
	word = wr_function_word(action, fid, delta);
	if (rec_action_is_entry(action)) {
		/*
		 * deeper than the ids kept or than max_depth, or below 0 after unmatched exits:
		 * the slow path
		 */
		if (XFDR_UNLIKELY((uint32_t)t->depth >= t->depth_limit))
			goto slow_path;
		s->stack[t->depth++] = fid;
	} else {
		if (XFDR_UNLIKELY(t->elide_ticks)) {
			/*
			 * Only a call that ended within the threshold with a record above the
			 * erase floor may be erased; every other exit is final, here. The delta
			 * and the threshold are read again so that the plain exit keeps no copy.
			 */
			if (wr_function_word_delta(word) > xfdr_load_relaxed(&t->elide_ticks) ||
			    used < t->erase_floor + XFDR_FN_RECORD_BYTES) {
				rec_exit_final(t, s, used, lo, word);
				return 1;
			}
			if (!may_call)
				goto slow_path;
			/* a tail call: this path stays a leaf that saves no register */
			rec_exit_elide(s, used, clock_now_tsc(&now), cpu, word);
			return 1;
		}
		t->depth--;
	}
	rec_put_record(t, used, lo, word);
	rec_leave(s);
	return 1;
slow_path:
	if (!may_call) {
		if (held)
			rec_leave(held);
		return 0;
	}
	rec_function_slow(t, held, clock_now_tsc(&now), cpu, action, fid);
	return 1;
}

/*
 * rec_count_filtered_owned - one call the filters leave out, counted in the thread's slot: 1,
 * or 0 (nothing counted) when the thread has no slot yet. Calls nothing.
 */
static inline XFDR_NOINSTR __attribute__((always_inline)) int rec_count_filtered_owned(void)
{
	struct thread_slot *s = rec_self.slot;

	if (XFDR_UNLIKELY(s == &thread_no_slot))
		return 0;
	xfdr_add_own(&s->noted[NOTE_FILTERED]);
	return 1;
}

/*
 * rec_count_filtered - a hook's event of a function the include= and exclude= options leave
 * out (runtime/symbols/fnfilter.h): its entry counts one call for the thread (filtered_calls in
 * the .map), its exit nothing. Context: any thread, signal handlers included; one add.
 */
static inline XFDR_NOINSTR __attribute__((always_inline)) void rec_count_filtered(unsigned action)
{
	if (rec_action_is_entry(action) && XFDR_UNLIKELY(!rec_count_filtered_owned()))
		rec_count_filtered_slotless();
}

/* rec_function_fast() that takes the slow path where it must: the event is always recorded. */
static inline XFDR_NOINSTR __attribute__((always_inline)) void
rec_function_now(struct clock_now now, unsigned action, uint32_t fid)
{
	(void)rec_function_fast(now, action, fid, 1);
}

/* The same, the event taken at (tsc, cpu). */
static inline XFDR_NOINSTR __attribute__((always_inline)) void
rec_function_at(uint64_t tsc, unsigned cpu, unsigned action, uint32_t fid)
{
	struct clock_now now = {.lo = (uint32_t)tsc, .hi = (uint32_t)(tsc >> 32), .cpu = cpu};

	rec_function_now(now, action, fid);
}

/* Record a function event now: the clock is read first, before any state is touched. */
static inline XFDR_NOINSTR __attribute__((always_inline)) void rec_function(unsigned action,
									    uint32_t fid)
{
	struct clock_now now;

	if (XFDR_UNLIKELY(!clock_now_inline(&now))) {
		rec_function_clock_call(action, fid);
		return;
	}
	rec_function_now(now, action, fid);
}

#endif /* XFDR_RUNTIME_RECORD_RECORD_FAST_H */
