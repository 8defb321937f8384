/*
 * runtime/record/recorder.c - the slow record path and the events that are never fast.
 *
 * A thread's buffer, as written here (every byte through writer/encode.h):
 *
 *   NewBuffer(thread id) WallClockTime(CLOCK_REALTIME) NewCPUId(cpu, tsc)   <- when taken
 *   [CustomEventMarker "XFDRSTAK" payload]         <- when the thread is inside calls
 *   { Function | NewCPUId Function | TSCWrap Function | Entry_Args CallArgument*
 *     | CustomEventMarker payload }*
 *
 * Groups in braces go into one buffer whole: when a group does not fit (wr_fits keeps the 16
 * bytes of the EndOfBuffer the flusher appends), the buffer is handed back full and the group
 * starts the next one, whose preamble already carries the CPU and an absolute TSC, so the
 * group needs neither NewCPUId nor TSCWrap there. A group that cannot fit even in an empty
 * buffer is dropped and counted (too_large) without closing the current buffer.
 *
 * Deltas count from the previous function record (or NewCPUId/TSCWrap). Custom events carry
 * an absolute TSC and do not move the delta base, as FDR v1 readers expect.
 *
 * Drops keep the trace balanced: a stack-based reader never sees an exit without its entry
 * because of a drop. An entry that is dropped (no_buffer, too_large) stays on the shadow stack
 * marked (REC_STACK_DROPPED with its cause) and its exit is dropped and counted too, under the
 * same cause; the calls inside it are recorded. An entry dropped deeper than the ids kept, or
 * while the thread has no slot, takes its whole call with it (rec_thread.skip: every event
 * until its exit is dropped and counted). While either holds, every event of the thread takes
 * the slow path (divert()); the fast path is unchanged. Reentrant drops need neither: a hook
 * that finds its thread inside the runtime is in a signal handler that runs, entries and
 * exits, while the interrupted event holds the guard. An exit dropped while its entry is in
 * the trace leaves that call open there: the next buffer's stack context (written even at
 * depth 0 then) gives the true depth, without it. Stack contexts leave marked calls out.
 *
 * Short-call elision: the plain entries written since the last other record (erase_floor)
 * may be erased by the exit of the same function within the threshold; the delta base then
 * goes back to the record before the entry (its TSC minus its delta), so every kept record
 * keeps its exact time. An entry in an earlier buffer is never erased.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "runtime/record/clock_fast.h"
#include "runtime/base/compiler.h"
#include "runtime/pool/pool.h"
#include "runtime/record/recorder.h"
#include "runtime/record/record_fast.h"
#include "runtime/record/session.h"
#include "runtime/record/thread.h"
#include "writer/encode.h"
#include "writer/payload.h"
#include "xfdr/format.h"

/* Registration is retried after this many events once the thread table was found full. */
#define SLOTLESS_RETRY_EVENTS 1024u

uint64_t rec_elide_ticks;
uint64_t rec_elide_us;
uint32_t rec_depth_max;

static XFDR_NOINSTR void count_drop(struct thread_slot *s, enum drop_cause cause, uint32_t session)
{
	xfdr_add_relaxed(&s->dropped[cause], (uint64_t)1);
	xfdr_store_relaxed(&s->session, session);
}

/* A drop of a thread with a slot; no_thread_slot is never per thread (thread_types.h). */
static XFDR_NOINSTR void count_cause(struct thread_slot *s, uint32_t cause, uint32_t session)
{
	if (cause == DROP_NO_THREAD_SLOT)
		xfdr_add_relaxed(&thread_table.unattributed[DROP_NO_THREAD_SLOT], (uint64_t)1);
	else
		count_drop(s, (enum drop_cause)cause, session);
}

/* What a drop of each cause returns to the caller of rec_event_at(). */
static XFDR_NOINSTR int cause_rc(uint32_t cause)
{
	switch (cause) {
	case DROP_NO_BUFFER:
		return -ENOBUFS;
	case DROP_TOO_LARGE:
		return -EMSGSIZE;
	case DROP_NO_THREAD_SLOT:
		return -EUSERS;
	default:
		return -EDEADLK;
	}
}

/*
 * The thread whose buffer ring mode reused gets it counted, with the function records the
 * buffer held, if its slot is still its own.
 */
static XFDR_NOINSTR void count_overwritten(const struct pool_reused *r)
{
	uint32_t n;
	struct thread_slot *slots = thread_slots_used(&n);
	uint64_t *noted = thread_table.noted_elsewhere;

	if (r->owner_slot < n && xfdr_load_relaxed(&slots[r->owner_slot].tid) == r->owner_tid)
		noted = slots[r->owner_slot].noted;
	xfdr_add_relaxed(&noted[NOTE_OVERWRITTEN], (uint64_t)1);
	xfdr_add_relaxed(&noted[NOTE_OVERWRITTEN_EVENTS], r->fn_records);
}

/*
 * While calls with dropped entries are open, the fast path must not see the thread's events:
 * a CPU no query returns sends each one to the slow path (record_fast.h), the real one waits
 * in held_cpu. undivert() puts it back for the slow path's own use.
 */
static XFDR_NOINSTR void divert(struct rec_thread *t)
{
	if ((t->marked || t->skip) && t->cpu != REC_NO_CPU) {
		t->held_cpu = t->cpu;
		t->cpu = REC_NO_CPU;
	}
}

static XFDR_NOINSTR void undivert(struct rec_thread *t)
{
	/* A thread with a buffer has a CPU unless it is diverted (take_buffer()). */
	if (t->buf && t->cpu == REC_NO_CPU)
		t->cpu = t->held_cpu;
}

/*
 * Entering (1) or leaving a call dropped whole: its events are dropped and counted. Inside a
 * call deeper than max_depth they are left out, and each entry counted as a call.
 */
static XFDR_NOINSTR int skip_event(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				   unsigned action)
{
	int entry = rec_action_is_entry(action);

	if (entry) {
		if (t->skip < UINT32_MAX)
			t->skip++;
	} else {
		t->skip--;
	}
	if (t->skip_cause == REC_SKIP_MAX_DEPTH) {
		if (entry && s)
			xfdr_add_relaxed(&s->noted[NOTE_MAX_DEPTH], (uint64_t)1);
		return 0;
	}
	if (s)
		count_cause(s, t->skip_cause, session);
	return cause_rc(t->skip_cause);
}

/* An entry past max_depth: its whole call is left out (skip_event()). */
static XFDR_NOINSTR int too_deep(const struct rec_thread *t)
{
	uint32_t max = xfdr_load_relaxed(&rec_depth_max);

	return max && (uint32_t)t->depth >= max;
}

/*
 * The stack context after a preamble: as many of the shadow stack's ids as leave room for
 * the event that needs `need` bytes (every id, but for tiny buffers). Returns bytes written.
 */
static XFDR_NOINSTR size_t write_stack_context(uint8_t *p, size_t room, uint32_t depth,
					       const struct rec_thread *t,
					       const struct thread_slot *s, uint64_t tsc,
					       size_t need)
{
	uint32_t n = depth < XFDR_STACK_IDS_MAX ? depth : XFDR_STACK_IDS_MAX;
	uint32_t kept[XFDR_STACK_IDS_MAX];
	const uint32_t *ids = s->stack;
	size_t payload;
	uint32_t i, k;

	if (t->marked) {
		/* Calls whose entries were dropped are not in the trace: leave them out. */
		for (i = k = 0; i < n; i++)
			if (!(s->stack[i] & REC_STACK_DROPPED))
				kept[k++] = s->stack[i] & XFDR_FUNCTION_ID_MAX;
		depth -= n - k;
		n = k;
		ids = kept;
	}

	for (;; n--) {
		payload = XFDR_STACK_PAYLOAD_BYTES(n);
		if (room >= XFDR_MD_RECORD_BYTES + payload &&
		    wr_fits(room - XFDR_MD_RECORD_BYTES - payload, need))
			break;
		if (!n)
			return 0;
	}
	p += wr_custom_event_marker(p, (uint32_t)payload, tsc);
	wr_stack_context(p, depth, ids, n);
	return XFDR_MD_RECORD_BYTES + payload;
}

/* Set by tests that drive the clock through the *_at forms (rec_inspect_clock_given()). */
static uint32_t clock_given;

void rec_inspect_clock_given(int given)
{
	xfdr_store_relaxed(&clock_given, given ? 1u : 0u);
}

/*
 * Take a buffer and write its preamble, and the stack context when the thread is inside
 * calls (depth: open when the buffer begins, before the event that asked for it) or lost an
 * exit since its last buffer began, leaving room for the `need` bytes of that event.
 * restamp (the event is a function entry): the claim, the pages, the live map's line, the wall
 * clock and the first writes into the buffer are the recorder's time, not the call's, so *tsc
 * and *cpu are read again after them and the call starts when its buffer is ready (an exit
 * keeps the time it was taken at: the work comes after it). Returns 0 or -ENOBUFS.
 */
static XFDR_NOINSTR int take_buffer(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				    uint64_t *tsc_io, unsigned *cpu_io, size_t need, uint32_t depth,
				    int restamp)
{
	struct pool_reused reused;
	struct pool_desc *d = pool_claim(&reused);
	size_t bytes = rt_pool.buffer_bytes;
	uint32_t thread_id;
	struct timespec wall;
	uint64_t tsc;
	unsigned cpu;
	uint8_t *p;

	if (!d)
		return -ENOBUFS;
	if (reused.reused)
		count_overwritten(&reused);
	pool_memory_ready(d);
	thread_id = thread_id_in_session(s, session);
	xfdr_store_relaxed(&d->owner_slot, s->index);
	xfdr_store_relaxed(&d->owner_tid, xfdr_load_relaxed(&s->tid));
	xfdr_store_relaxed(&d->owner_thread_id, thread_id);
	thread_name_refresh(s);
	/* The live map's line of the thread (a system call or two): before the restamp too. */
	thread_tell_watcher(s);
	clock_gettime(CLOCK_REALTIME, &wall);
	/*
	 * The records that need no TSC first: a process's first write into the pool took 5-7 us
	 * on the AMD EPYC VM (its first touch of the populated huge page), and is ours too.
	 */
	p = d->data;
	p += wr_new_buffer(p, (uint16_t)thread_id);
	p += wr_wall_clock_time(p, (uint64_t)wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
	if (restamp && !xfdr_load_relaxed(&clock_given))
		*tsc_io = clock_read(cpu_io);
	tsc = *tsc_io;
	cpu = *cpu_io;
	xfdr_store_relaxed(&d->first_tsc, tsc);
	p += wr_new_cpu_id(p, (uint16_t)cpu, tsc);
	if (depth > t->marked || t->exit_lost)
		p += write_stack_context(p, bytes - (size_t)(p - d->data), depth, t, s, tsc, need);
	t->exit_lost = 0;
	/* All of it metadata: ring mode counts the function records past it (pool.c). */
	xfdr_store_relaxed(&d->meta_bytes, (size_t)(p - d->data));
	t->elide_ticks = xfdr_load_relaxed(&rec_elide_ticks);
	xfdr_store_relaxed(&d->erasable, t->elide_ticks ? 1u : 0u);
	xfdr_store_relaxed(&d->stable_bytes, (size_t)(p - d->data));
	/* pairs with the acquire of used_bytes in the flusher */
	xfdr_store_release(&d->used_bytes, (size_t)(p - d->data));
	pool_publish_owned(d);
	t->buf = d->data;
	t->desc = d;
	t->desc_gen = POOL_GEN(xfdr_load_relaxed(&d->ctl));
	t->size = bytes;
	t->fast_end = rec_fast_end(bytes);
	t->depth_limit = xfdr_load_relaxed(&rec_depth_max);
	if (!t->depth_limit || t->depth_limit > XFDR_STACK_IDS_MAX)
		t->depth_limit = XFDR_STACK_IDS_MAX;
	t->used = (size_t)(p - d->data);
	t->erase_floor = t->used;
	t->session = session;
	t->cpu = cpu;
	t->last_tsc = tsc;
	xfdr_store_relaxed(&s->session, session);
	return 0;
}

static XFDR_NOINSTR size_t event_bytes(const struct rec_event *ev)
{
	if (ev->kind == REC_EV_CUSTOM)
		return XFDR_MD_RECORD_BYTES + ((ev->bytes + 7) & ~(size_t)7);
	return XFDR_FN_RECORD_BYTES + (size_t)ev->nargs * XFDR_MD_RECORD_BYTES;
}

/*
 * erase_last_entry - a short call's entry, the buffer's last record, is erased: the delta base
 * moves back to the record before it (entry_delta earlier) and the call counts as elided.
 * The entry lies above the erase floor, so no flusher ever copied it (stable_bytes): erasing
 * it, and rewriting its bytes with the next record, races with nobody.
 */
static inline XFDR_NOINSTR void erase_last_entry(struct rec_thread *t, struct thread_slot *s,
						 uint32_t entry_delta)
{
	t->used -= XFDR_FN_RECORD_BYTES;
	t->last_tsc -= entry_delta;
	/* one instruction: a signal handler that elides on this thread cannot lose a count */
	xfdr_add_own(&s->noted[NOTE_ELIDED]);
	/* for `xfdr recover` and `core`, which read a dead owner's buffers up to used_bytes */
	xfdr_store_release(&t->desc->used_bytes, t->used);
}

/*
 * try_elide - an exit of fid at tsc: when the buffer's last record is fid's entry (nothing
 * recorded since), no older than the threshold, erase it (erase_last_entry()). Returns 1 when
 * erased (the exit is then not written).
 */
static XFDR_NOINSTR int try_elide(struct rec_thread *t, struct thread_slot *s, uint64_t tsc,
				  uint32_t fid)
{
	unsigned action;
	uint32_t efid, delta;

	if (!t->elide_ticks || t->used < t->erase_floor + XFDR_FN_RECORD_BYTES)
		return 0;
	wr_function_read(t->buf + t->used - XFDR_FN_RECORD_BYTES, &action, &efid, &delta);
	if (action != XFDR_FN_ENTER || efid != (fid & XFDR_FUNCTION_ID_MAX) || tsc < t->last_tsc ||
	    tsc - t->last_tsc > t->elide_ticks)
		return 0;
	erase_last_entry(t, s, delta);
	return 1;
}

XFDR_NOINSTR void rec_exit_elide(struct thread_slot *s, size_t used, uint64_t tsc, unsigned cpu,
				 uint64_t word)
{
	struct rec_thread *t = &rec_self;
	uint8_t record[XFDR_FN_RECORD_BYTES];
	uint32_t fid, delta, entry_word, entry_delta;
	unsigned action;

	memcpy(record, &word, sizeof(record));
	wr_function_read(record, &action, &fid, &delta);
	memcpy(&entry_word, t->buf + used - XFDR_FN_RECORD_BYTES + XFDR_FN_WORD_OFF,
	       sizeof(entry_word));
	if (XFDR_UNLIKELY(entry_word != wr_fn_word(XFDR_FN_ENTER, fid))) {
		/* the last record is another function's entry: an unbalanced trace */
		rec_function_slow(t, s, tsc, cpu, action, fid);
		return;
	}
	memcpy(&entry_delta, t->buf + used - XFDR_FN_RECORD_BYTES + XFDR_FN_DELTA_OFF,
	       sizeof(entry_delta));
	erase_last_entry(t, s, entry_delta);
	t->depth--;
	rec_leave(s);
}

/*
 * The shadow stack follows every function event the thread records, elides or drops: an
 * entry once it is written (id: fid, or fid marked dropped), an exit before.
 */
static XFDR_NOINSTR void shadow_stack_push(struct rec_thread *t, struct thread_slot *s, uint32_t id)
{
	if (t->depth < XFDR_STACK_IDS_MAX)
		s->stack[t->depth] = id;
	else
		xfdr_add_relaxed(&s->noted[NOTE_STACK_OVERFLOW], (uint64_t)1);
	if (t->depth < INT32_MAX)
		t->depth++;
}

/*
 * A function event is dropped for cause: counted; an entry is marked on the shadow stack, or
 * beyond the ids kept starts a call dropped whole; an exit whose entry is in the trace makes
 * the next buffer's stack context say the depth without it.
 */
static XFDR_NOINSTR int drop_function(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				      const struct rec_event *ev, uint32_t open_calls,
				      enum drop_cause cause)
{
	count_drop(s, cause, session);
	if (ev->kind != REC_EV_FUNCTION)
		return cause_rc(cause);
	if (!rec_action_is_entry(ev->action)) {
		if (open_calls)
			t->exit_lost = 1;
	} else if (t->depth < XFDR_STACK_IDS_MAX) {
		s->stack[t->depth++] = (ev->fid & XFDR_FUNCTION_ID_MAX) | REC_STACK_DROPPED |
				       (uint32_t)cause << REC_STACK_CAUSE_SHIFT;
		t->marked++;
	} else {
		t->skip = 1;
		t->skip_cause = cause;
		t->skip_session = session;
	}
	return cause_rc(cause);
}

XFDR_NOINSTR void rec_seal_self(void)
{
	struct rec_thread *t = &rec_self;
	struct thread_slot *s = rec_slot(t);

	if (!s || xfdr_load_relaxed(&s->busy))
		return;
	xfdr_store_relaxed(&s->busy, 1u);
	xfdr_barrier();
	if (t->desc && t->session == xfdr_load_relaxed(&rt_pool.session)) {
		t->erase_floor = t->used;
		/* pairs with the acquire of stable_bytes in the flusher */
		xfdr_store_release(&t->desc->stable_bytes, t->used);
	}
	xfdr_barrier();
	/* pairs with the acquire in thread_quiesce() */
	xfdr_store_release(&s->busy, 0u);
}

/*
 * put_words - copy bytes (zero-padded to whole 8-byte words) to a buffer's next records with
 * relaxed atomic 8-byte stores; returns the end. Word stores keep defined, and visible to
 * ThreadSanitizer, a reader that is not the flusher (`xfdr core` reads a live process's
 * memory). On x86-64 each is a plain move.
 */
static XFDR_NOINSTR uint8_t *put_words(uint8_t *dst, const void *src, size_t bytes)
{
	const uint8_t *s = src;
	uint64_t w;
	size_t i;

	for (i = 0; i < bytes; i += 8) {
		w = 0;
		memcpy(&w, s + i, bytes - i < 8 ? bytes - i : 8);
		xfdr_store_relaxed((uint64_t *)(void *)(dst + i), w);
	}
	return dst + i;
}

/*
 * append_group - write one event group (need bytes, which fit) at the end of the thread's
 * buffer: a NewCPUId or TSCWrap first when the function record's delta needs one, and publish
 * it to the flusher. Context: as write_group(), the group's room taken.
 */
static XFDR_NOINSTR void append_group(struct rec_thread *t, struct thread_slot *s, uint64_t tsc,
				      unsigned cpu, const struct rec_event *ev, size_t need)
{
	uint8_t md[XFDR_MD_RECORD_BYTES] __attribute__((aligned(8))); /* one metadata record */
	uint8_t *p, *start;
	size_t meta;
	unsigned i;

	p = start = t->buf + t->used;
	if (ev->kind == REC_EV_FUNCTION) {
		uint64_t w;

		if (cpu != t->cpu) {
			p = put_words(p, md, wr_new_cpu_id(md, (uint16_t)cpu, tsc));
			t->cpu = cpu;
			t->last_tsc = tsc;
		} else if (tsc - t->last_tsc > UINT32_MAX) {
			p = put_words(p, md, wr_tsc_wrap(md, tsc));
			t->last_tsc = tsc;
		}
		t->erase_floor = (size_t)(p - t->buf);
		w = wr_function_word(ev->action, ev->fid, (uint32_t)(tsc - t->last_tsc));
		p = put_words(p, &w, sizeof(w));
		for (i = 0; i < ev->nargs; i++)
			p = put_words(p, md, wr_call_argument(md, ev->args[i]));
		t->last_tsc = tsc;
		/* Only a plain entry may be erased; anything else ends what can be. */
		if (ev->action != XFDR_FN_ENTER || ev->nargs)
			t->erase_floor = (size_t)(p - t->buf);
		if (rec_action_is_entry(ev->action))
			shadow_stack_push(t, s, ev->fid);
		meta = (size_t)(p - start) - XFDR_FN_RECORD_BYTES;
	} else {
		p = put_words(
		    p, md,
		    wr_custom_event_marker(md, (uint32_t)(need - XFDR_MD_RECORD_BYTES), tsc));
		p = put_words(p, ev->data, ev->bytes);
		t->erase_floor = (size_t)(p - t->buf);
		meta = (size_t)(p - start);
	}
	if (meta)
		xfdr_store_relaxed(&t->desc->meta_bytes,
				   xfdr_load_relaxed(&t->desc->meta_bytes) + meta);
	t->used = (size_t)(p - t->buf);
	/* pairs with the acquire of used_bytes and stable_bytes in the flusher */
	xfdr_store_release(&t->desc->used_bytes, t->used);
	xfdr_store_release(&t->desc->stable_bytes, t->erase_floor);
}

/*
 * write_group - put one event group into the thread's buffer, rotating it if needed.
 * Context: guard held, session is the one being recorded, the thread not diverted.
 */
static XFDR_NOINSTR int write_group(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				    uint64_t tsc, unsigned cpu, const struct rec_event *ev)
{
	size_t buffer_bytes = rt_pool.buffer_bytes;
	size_t need, prefix = 0;
	uint32_t open_calls;

	if (t->session != session)
		rec_thread_forget_buffer(t); /* an older session's buffer: never written again */
	if (t->stack_session != session) {
		/* calls open before this session are not on its stack */
		t->depth = 0;
		t->marked = 0;
		t->exit_lost = 0;
		t->stack_session = session;
	}
	if (t->skip && t->skip_session != session)
		t->skip = 0;
	/*
	 * Earlier than what the thread last wrote: a signal handler's events came between this
	 * event's clock read (the hooks read it first, before their guard) and its record. The
	 * event happened after them, in the thread's own order: it takes their time, and the
	 * thread's time never goes back (the fast path sends such an event here, its delta huge).
	 */
	if (t->buf && tsc < t->last_tsc)
		tsc = t->last_tsc;
	if (ev->kind == REC_EV_FUNCTION && t->skip)
		return skip_event(t, s, session, ev->action);
	if (t->depth < 0)
		t->depth = 0;
	if (ev->kind == REC_EV_FUNCTION && rec_action_is_entry(ev->action) && too_deep(t)) {
		t->skip_cause = REC_SKIP_MAX_DEPTH;
		t->skip_session = session;
		return skip_event(t, s, session, ev->action);
	}
	/*
	 * A buffer this event opens describes the calls open before it: an entry is not one
	 * yet, an exit's call still is (its id stays in the stack array after the pop).
	 */
	open_calls = (uint32_t)t->depth;
	if (ev->kind == REC_EV_FUNCTION && !rec_action_is_entry(ev->action) && open_calls) {
		uint32_t top = open_calls <= XFDR_STACK_IDS_MAX ? s->stack[open_calls - 1] : 0;

		t->depth--;
		if (top & REC_STACK_DROPPED) {
			/* its entry was dropped: so is the exit, under the same cause */
			uint32_t cause = (top >> REC_STACK_CAUSE_SHIFT) & 3u;

			t->marked--;
			count_cause(s, cause, session);
			return cause_rc(cause);
		}
	}
	if (ev->kind == REC_EV_FUNCTION && !rec_action_is_entry(ev->action) && t->buf &&
	    try_elide(t, s, tsc, ev->fid))
		return 0;
	if (ev->kind == REC_EV_CUSTOM && ev->bytes > buffer_bytes)
		return drop_function(t, s, session, ev, open_calls, DROP_TOO_LARGE);
	need = event_bytes(ev);
	if (t->buf && ev->kind == REC_EV_FUNCTION &&
	    (cpu != t->cpu || tsc - t->last_tsc > UINT32_MAX))
		prefix = XFDR_MD_RECORD_BYTES;
	if (!t->buf || !wr_fits(t->size - t->used, prefix + need)) {
		/* A fresh buffer's preamble sets CPU and TSC: the group needs no prefix there. */
		if (buffer_bytes < XFDR_BUFFER_PREAMBLE_BYTES ||
		    !wr_fits(buffer_bytes - XFDR_BUFFER_PREAMBLE_BYTES, need))
			return drop_function(t, s, session, ev, open_calls, DROP_TOO_LARGE);
		if (t->buf)
			rec_thread_close_buffer(t);
		if (take_buffer(t, s, session, &tsc, &cpu, need, open_calls,
				ev->kind == REC_EV_FUNCTION && rec_action_is_entry(ev->action)))
			return drop_function(t, s, session, ev, open_calls, DROP_NO_BUFFER);
	}
	append_group(t, s, tsc, cpu, ev, need);
	return 0;
}

/* write_group() with the thread's real CPU, diverted again after if drops keep calls open. */
static XFDR_NOINSTR int write_event(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				    uint64_t tsc, unsigned cpu, const struct rec_event *ev)
{
	int rc;

	undivert(t);
	rc = write_group(t, s, session, tsc, cpu, ev);
	divert(t);
	return rc;
}

static uint32_t (*fork_adopt)(void);

void rec_on_fork_child(uint32_t (*adopt)(void))
{
	fork_adopt = adopt;
}

/* Is session one to record into: neither SESSION_OFF nor SESSION_NONE? One compare. */
static inline XFDR_NOINSTR int session_live(uint32_t session)
{
	return session - 1u < SESSION_OFF - 1u;
}

/*
 * A session word that is not a session: SESSION_NONE is a fork child's zeroed one (session.h),
 * and the child sets up its own recorder now, on its first event (or finds it records
 * nothing); before the first init, it means not recording. Returns the session to record into,
 * or SESSION_OFF.
 */
static XFDR_COLD XFDR_NOINSTR uint32_t session_not_live(uint32_t session)
{
	if (session != SESSION_NONE || !rt_forked() || !fork_adopt)
		return SESSION_OFF;
	return fork_adopt();
}

/* The session an event is recorded into, or SESSION_OFF. */
static inline XFDR_NOINSTR uint32_t session_of_event(void)
{
	uint32_t session = session_recording();

	return XFDR_LIKELY(session_live(session)) ? session : session_not_live(session);
}

XFDR_COLD XFDR_NOINSTR void rec_function_slow(struct rec_thread *t, struct thread_slot *held,
					      uint64_t tsc, unsigned cpu, unsigned action,
					      uint32_t fid)
{
	struct rec_event ev = {.kind = REC_EV_FUNCTION, .action = action, .fid = fid};
	int saved = errno;
	uint32_t session;

	cpu = clock_cpu_known(cpu);
	if (!held) {
		rec_event_at(tsc, cpu, &ev);
		return;
	}
	session = session_of_event();
	if (session != SESSION_OFF)
		write_event(t, held, session, tsc, cpu, &ev);
	xfdr_barrier();
	/* pairs with the acquire in thread_quiesce() */
	xfdr_store_release(&held->busy, 0u);
	errno = saved;
}

XFDR_COLD XFDR_NOINSTR void rec_function_clock_call(unsigned action, uint32_t fid)
{
	unsigned cpu;
	uint64_t tsc = clock_read(&cpu);

	rec_function_at(tsc, cpu, action, fid);
}

/* The thread's slot, registering it first if needed; NULL with *rc set when there is none. */
static XFDR_NOINSTR struct thread_slot *thread_slot(struct rec_thread *t, int *rc)
{
	struct thread_slot *s = rec_slot(t);

	if (XFDR_LIKELY(s))
		return s;
	if (session_of_event() == SESSION_OFF) {
		*rc = -EAGAIN;
		return NULL;
	}
	if (t->registering) {
		xfdr_add_relaxed(&thread_table.unattributed[DROP_REENTRANT], (uint64_t)1);
		*rc = -EDEADLK;
		return NULL;
	}
	if (t->slotless && ++t->slotless % SLOTLESS_RETRY_EVENTS) {
		xfdr_add_relaxed(&thread_table.unattributed[DROP_NO_THREAD_SLOT], (uint64_t)1);
		*rc = -EUSERS;
		return NULL;
	}
	t->registering = 1;
	xfdr_barrier();
	s = thread_register(t);
	xfdr_barrier();
	t->registering = 0;
	if (!s) {
		t->slotless = 1;
		xfdr_add_relaxed(&thread_table.unattributed[DROP_NO_THREAD_SLOT], (uint64_t)1);
		*rc = -EUSERS;
		return NULL;
	}
	t->slotless = 0;
	return s;
}

/*
 * A filtered call may be the thread's first (its start routine, main, left out): the thread
 * registers here, as for its first recorded event, so that its line in the .map counts it.
 */
XFDR_COLD XFDR_NOINSTR void rec_count_filtered_slotless(void)
{
	struct rec_thread *t = &rec_self;
	int saved = errno, rc = 0;
	struct thread_slot *s = thread_slot(t, &rc);

	if (s) {
		xfdr_add_own(&s->noted[NOTE_FILTERED]);
		xfdr_store_relaxed(&s->session, session_recording());
	} else {
		xfdr_add_relaxed(&thread_table.noted_elsewhere[NOTE_FILTERED], (uint64_t)1);
	}
	errno = saved;
}

static XFDR_NOINSTR void slotless_skip(struct rec_thread *t)
{
	t->skip = 1;
	t->skip_cause = DROP_NO_THREAD_SLOT;
	t->skip_session = session_recording();
}

XFDR_NOINSTR int rec_event_at(uint64_t tsc, unsigned cpu, const struct rec_event *ev)
{
	struct rec_thread *t = &rec_self;
	int saved = errno;
	uint32_t session;
	struct thread_slot *s;
	int rc = 0;

	s = thread_slot(t, &rc);
	if (!s) {
		/* No slot, no shadow stack: a dropped entry takes its whole call with it. */
		if (rc == -EUSERS && ev->kind == REC_EV_FUNCTION) {
			if (t->skip)
				t->skip += rec_action_is_entry(ev->action) ? 1u : -1u;
			else if (rec_action_is_entry(ev->action))
				slotless_skip(t);
		}
		goto out;
	}
	if (xfdr_load_relaxed(&s->busy)) {
		session = session_recording();
		if (session == SESSION_OFF || session == SESSION_NONE) {
			rc = -EAGAIN;
		} else {
			count_drop(s, DROP_REENTRANT, session);
			rc = -EDEADLK;
		}
		goto out;
	}
	xfdr_store_relaxed(&s->busy, 1u);
	xfdr_barrier();
	session = session_of_event();
	rc = session == SESSION_OFF ? -EAGAIN : write_event(t, s, session, tsc, cpu, ev);
	xfdr_barrier();
	/* pairs with the acquire in thread_quiesce() */
	xfdr_store_release(&s->busy, 0u);
out:
	errno = saved;
	return rc;
}

XFDR_NOINSTR void rec_function_args_at(uint64_t tsc, unsigned cpu, unsigned action, uint32_t fid,
				       const uint64_t *args, unsigned nargs)
{
	struct rec_event ev = {
	    .kind = REC_EV_FUNCTION,
	    .action = action,
	    .fid = fid,
	    .args = args,
	    .nargs = args ? nargs : 0,
	};

	rec_event_at(tsc, cpu, &ev);
}

XFDR_NOINSTR void rec_function_args(unsigned action, uint32_t fid, const uint64_t *args,
				    unsigned nargs)
{
	unsigned cpu;
	uint64_t tsc = clock_read(&cpu);

	if (!args || !nargs) {
		rec_function_at(tsc, cpu, action == XFDR_FN_ENTER_ARGS ? XFDR_FN_ENTER : action,
				fid);
		return;
	}
	rec_function_args_at(tsc, cpu, action, fid, args, nargs);
}

XFDR_NOINSTR int rec_custom_event_at(uint64_t tsc, unsigned cpu, const void *data, size_t bytes)
{
	struct rec_event ev = {.kind = REC_EV_CUSTOM, .data = data, .bytes = bytes};

	if (!data || !bytes)
		return -EINVAL;
	return rec_event_at(tsc, cpu, &ev);
}

XFDR_NOINSTR int rec_custom_event(const void *data, size_t bytes)
{
	unsigned cpu;
	uint64_t tsc = clock_read(&cpu);

	return rec_custom_event_at(tsc, cpu, data, bytes);
}
