/*
 * runtime/record/record_fast.h - one function entry or exit, the common case inline.
 *
 * The fast case is: the thread has a slot and is not already inside the runtime, its buffer
 * belongs to the session being recorded, the CPU is the one of its last record, the TSC
 * delta fits 32 bits and the 8-byte record fits (wr_fits: room for the EndOfBuffer stays);
 * an entry has room for its id on the shadow stack; an exit cannot erase its entry (elision
 * off, or something was recorded since). Then: the shadow stack moves, one record is
 * written, its length published with a release store (with elision on, an exit also publishes
 * the erase floor it moves: stable_bytes). No lock, no atomic read-modify-write, no system
 * call. Everything else goes to rec_function_slow().
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
 * rec_exit_final - the fast path's exit with elision on: the exit ends what may be erased, so
 * everything up to it is final and the flusher may copy it (stable_bytes). Releases the guard.
 */
static inline XFDR_NOINSTR __attribute__((always_inline)) void
rec_exit_final(struct rec_thread *t, struct thread_slot *s, size_t used, uint64_t tsc,
	       uint64_t word)
{
	t->erase_floor = used + XFDR_FN_RECORD_BYTES;
	t->depth--;
	/* as rec_function_at() writes a record */
	t->used = used + XFDR_FN_RECORD_BYTES;
	t->last_tsc = tsc;
	xfdr_store_relaxed((uint64_t *)(void *)(t->buf + used), word);
	/* pairs with the acquire of used_bytes and stable_bytes in the flusher */
	xfdr_store_release(&t->desc->used_bytes, used + XFDR_FN_RECORD_BYTES);
	xfdr_store_release(&t->desc->stable_bytes, used + XFDR_FN_RECORD_BYTES);
	rec_leave(s);
}

/*
 * Record a function event taken at (tsc, cpu). Context: see recorder.h.
 * Everything but the common case leaves through rec_function_slow(), the one door out: with
 * the guard taken here (held = the slot) when the thread has a slot and was not inside the
 * runtime, without it (held = NULL) when it has no slot yet or is re-entering.
 */
static inline XFDR_NOINSTR __attribute__((always_inline)) void
rec_function_at(uint64_t tsc, unsigned cpu, unsigned action, uint32_t fid)
{
	struct rec_thread *t = &rec_self;
	struct thread_slot *s = t->slot, *held = NULL;
	uint64_t delta;
	size_t used;

	if (XFDR_UNLIKELY(!s || xfdr_load_relaxed(&s->busy)))
		goto slow_path;
	xfdr_store_relaxed(&s->busy, 1u);
	held = s;
	/* A signal handler that runs from here on sees the guard; we see its records after. */
	xfdr_barrier();
	delta = tsc - t->last_tsc; /* huge when the clock went backwards: TSCWrap */
	used = t->used;
	if (XFDR_UNLIKELY(t->session != session_recording() || cpu != t->cpu ||
			  delta > UINT32_MAX || !wr_fits(t->size - used, XFDR_FN_RECORD_BYTES)))
		goto slow_path;
	if (rec_action_is_entry(action)) {
		/* deeper than the ids kept, or below 0 after unmatched exits: the slow path */
		if (XFDR_UNLIKELY((uint32_t)t->depth >= XFDR_STACK_IDS_MAX))
			goto slow_path;
		s->stack[t->depth++] = fid;
	} else {
		if (XFDR_UNLIKELY(t->elide_ticks)) {
			if (used >= t->erase_floor + XFDR_FN_RECORD_BYTES)
				goto slow_path;
			rec_exit_final(t, s, used, tsc,
				       wr_function_word(action, fid, (uint32_t)delta));
			return;
		}
		t->depth--;
	}
	/* used is kept in a register: the record store may alias the TLS block for the compiler */
	t->used = used + XFDR_FN_RECORD_BYTES;
	t->last_tsc = tsc;
	/* one word store, atomic for the sake of readers of a live process (put_words()) */
	xfdr_store_relaxed((uint64_t *)(void *)(t->buf + used),
			   wr_function_word(action, fid, (uint32_t)delta));
	/* pairs with the acquire of used_bytes in the flusher */
	xfdr_store_release(&t->desc->used_bytes, used + XFDR_FN_RECORD_BYTES);
	rec_leave(s);
	return;
slow_path:
	rec_function_slow(t, held, tsc, cpu, action, fid);
}

/* Record a function event now: the clock is read first, before any state is touched. */
static inline XFDR_NOINSTR __attribute__((always_inline)) void rec_function(unsigned action,
									    uint32_t fid)
{
	unsigned cpu;
	uint64_t tsc = clock_read(&cpu);

	rec_function_at(tsc, cpu, action, fid);
}

#endif /* XFDR_RUNTIME_RECORD_RECORD_FAST_H */
