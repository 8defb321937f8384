/*
 * runtime/record/record.c - the slow record path and the events that are never fast.
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
#include "runtime/record/record.h"
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

static XFDR_NOINSTR void count_drop(struct thread_slot *s, enum drop_cause cause, uint32_t session)
{
	xfdr_add_relaxed(&s->dropped[cause], (uint64_t)1);
	xfdr_store_relaxed(&s->session, session);
}

/* The thread whose buffer ring mode reused gets it counted, if its slot is still its own. */
static XFDR_NOINSTR void count_overwritten(const struct pool_reused *r)
{
	uint32_t n;
	struct thread_slot *slots = thread_slots_used(&n);

	if (r->owner_slot < n && xfdr_load_relaxed(&slots[r->owner_slot].tid) == r->owner_tid)
		xfdr_add_relaxed(&slots[r->owner_slot].noted[NOTE_OVERWRITTEN], (uint64_t)1);
	else
		xfdr_add_relaxed(&thread_table.noted_elsewhere[NOTE_OVERWRITTEN], (uint64_t)1);
}

/*
 * The stack context after a preamble: as many of the shadow stack's ids as leave room for
 * the event that needs `need` bytes (every id, but for tiny buffers). Returns bytes written.
 */
static XFDR_NOINSTR size_t write_stack_context(uint8_t *p, size_t room, uint32_t depth,
					       const struct thread_slot *s, uint64_t tsc,
					       size_t need)
{
	uint32_t n = depth < XFDR_STACK_IDS_MAX ? depth : XFDR_STACK_IDS_MAX;
	size_t payload;

	for (;; n--) {
		payload = XFDR_STACK_PAYLOAD_BYTES(n);
		if (room >= XFDR_MD_RECORD_BYTES + payload &&
		    wr_fits(room - XFDR_MD_RECORD_BYTES - payload, need))
			break;
		if (!n)
			return 0;
	}
	p += wr_custom_event_marker(p, (uint32_t)payload, tsc);
	wr_stack_context(p, depth, s->stack, n);
	return XFDR_MD_RECORD_BYTES + payload;
}

/*
 * Take a buffer and write its preamble, and the stack context when the thread is inside
 * calls (depth: open when the buffer begins, before the event that asked for it), leaving
 * room for the `need` bytes of that event. Returns 0 or -ENOBUFS.
 */
static XFDR_NOINSTR int take_buffer(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				    uint64_t tsc, unsigned cpu, size_t need, uint32_t depth)
{
	struct pool_reused reused;
	struct pool_desc *d = pool_claim(&reused);
	size_t bytes = rt_pool.buffer_bytes;
	uint32_t thread_id;
	struct timespec wall;
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
	xfdr_store_relaxed(&d->first_tsc, tsc);
	clock_gettime(CLOCK_REALTIME, &wall);
	p = d->data;
	p += wr_new_buffer(p, (uint16_t)thread_id);
	p += wr_wall_clock_time(p, (uint64_t)wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
	p += wr_new_cpu_id(p, (uint16_t)cpu, tsc);
	if (depth)
		p += write_stack_context(p, bytes - (size_t)(p - d->data), depth, s, tsc, need);
	xfdr_store_relaxed(&d->stable_bytes, (size_t)(p - d->data));
	/* pairs with the acquire of used_bytes in the flusher */
	xfdr_store_release(&d->used_bytes, (size_t)(p - d->data));
	pool_publish_owned(d);
	t->buf = d->data;
	t->desc = d;
	t->size = bytes;
	t->used = (size_t)(p - d->data);
	t->erase_floor = t->used;
	t->elide_ticks = xfdr_load_relaxed(&rec_elide_ticks);
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
 * try_elide - an exit of fid at tsc: when the buffer's last record is fid's entry (nothing
 * recorded since), no older than the threshold, erase it and move the delta base back to
 * the record before it. Returns 1 when erased (the exit is then not written).
 * A flusher may be copying the bytes the next record rewrites: used_bytes shrinks first,
 * then erase_seq moves, then anything is rewritten, so a copy that read a rewritten byte sees
 * erase_seq changed and is retried (flush.c).
 */
static XFDR_NOINSTR int try_elide(struct rec_thread *t, uint64_t tsc, uint32_t fid)
{
	struct pool_desc *d = t->desc;
	unsigned action;
	uint32_t efid, delta;

	if (!t->elide_ticks || t->used < t->erase_floor + XFDR_FN_RECORD_BYTES)
		return 0;
	wr_function_read(t->buf + t->used - XFDR_FN_RECORD_BYTES, &action, &efid, &delta);
	if (action != XFDR_FN_ENTER || efid != (fid & XFDR_FUNCTION_ID_MAX) || tsc < t->last_tsc ||
	    tsc - t->last_tsc > t->elide_ticks)
		return 0;
	t->used -= XFDR_FN_RECORD_BYTES;
	t->last_tsc -= delta;
	/* pairs with the acquire of used_bytes in the flusher */
	xfdr_store_release(&d->used_bytes, t->used);
	xfdr_store_release(&d->stable_bytes, t->erase_floor);
	/*
	 * Release: a flusher that reads the new erase_seq (acquire) sees the lengths above.
	 * Acquire: no later rewrite moves before it, so a copy that read a rewritten word has
	 * its closing read-modify-write of erase_seq ordered after this one (copy_buffer()).
	 */
	__atomic_fetch_add(&d->erase_seq, 1, __ATOMIC_ACQ_REL);
	return 1;
}

/* The shadow stack follows every function event the thread records, drops or elides. */
static XFDR_NOINSTR void shadow_stack_move(struct rec_thread *t, struct thread_slot *s,
					   unsigned action, uint32_t fid)
{
	if (t->depth < 0)
		t->depth = 0;
	if (rec_action_is_entry(action)) {
		if (t->depth < XFDR_STACK_IDS_MAX)
			s->stack[t->depth] = fid;
		else
			xfdr_add_relaxed(&s->noted[NOTE_STACK_OVERFLOW], (uint64_t)1);
		if (t->depth < INT32_MAX)
			t->depth++;
	} else if (t->depth) {
		t->depth--;
	}
}

/* Hand the current buffer back full. */
static XFDR_NOINSTR void close_buffer(struct rec_thread *t)
{
	pool_mark_full(t->desc, t->last_tsc);
	rec_thread_forget_buffer(t);
}

/*
 * put_words - copy bytes (zero-padded to whole 8-byte words) to a buffer's next records with
 * relaxed atomic 8-byte stores; returns the end. After an elided entry is erased, the next
 * records land on bytes a flusher may be copying at that moment (with atomic loads, checked
 * against erase_seq: flush.c): word stores keep that race defined, and visible to
 * ThreadSanitizer. On x86-64 each is a plain move.
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
 * write_event - put one event group into the thread's buffer, rotating it if needed.
 * Context: guard held, session is the one being recorded.
 */
static XFDR_NOINSTR int write_event(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				    uint64_t tsc, unsigned cpu, const struct rec_event *ev)
{
	uint8_t md[XFDR_MD_RECORD_BYTES] __attribute__((aligned(8))); /* one metadata record */
	size_t buffer_bytes = rt_pool.buffer_bytes;
	size_t need, prefix = 0;
	uint32_t open_calls;
	uint8_t *p;
	unsigned i;

	if (t->session != session)
		rec_thread_forget_buffer(t); /* an older session's buffer: never written again */
	if (t->stack_session != session) {
		t->depth = 0; /* calls open before this session are not on its stack */
		t->stack_session = session;
	}
	/*
	 * A buffer this event opens describes the calls open before it: an entry is not one
	 * yet, an exit's call still is (its id stays in the stack array after the pop).
	 */
	open_calls = t->depth > 0 ? (uint32_t)t->depth : 0;
	if (ev->kind == REC_EV_FUNCTION) {
		shadow_stack_move(t, s, ev->action, ev->fid);
		if (!rec_action_is_entry(ev->action) && t->buf && try_elide(t, tsc, ev->fid)) {
			xfdr_add_relaxed(&s->noted[NOTE_ELIDED], (uint64_t)1);
			return 0;
		}
	}
	if (ev->kind == REC_EV_CUSTOM && ev->bytes > buffer_bytes) {
		count_drop(s, DROP_TOO_LARGE, session);
		return -EMSGSIZE;
	}
	need = event_bytes(ev);
	if (t->buf && ev->kind == REC_EV_FUNCTION &&
	    (cpu != t->cpu || tsc - t->last_tsc > UINT32_MAX))
		prefix = XFDR_MD_RECORD_BYTES;
	if (!t->buf || !wr_fits(t->size - t->used, prefix + need)) {
		/* A fresh buffer's preamble sets CPU and TSC: the group needs no prefix there. */
		if (buffer_bytes < XFDR_BUFFER_PREAMBLE_BYTES ||
		    !wr_fits(buffer_bytes - XFDR_BUFFER_PREAMBLE_BYTES, need)) {
			count_drop(s, DROP_TOO_LARGE, session);
			return -EMSGSIZE;
		}
		if (t->buf)
			close_buffer(t);
		if (take_buffer(t, s, session, tsc, cpu, need, open_calls)) {
			count_drop(s, DROP_NO_BUFFER, session);
			return -ENOBUFS;
		}
	}
	p = t->buf + t->used;
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
	} else {
		p = put_words(
		    p, md,
		    wr_custom_event_marker(md, (uint32_t)(need - XFDR_MD_RECORD_BYTES), tsc));
		p = put_words(p, ev->data, ev->bytes);
		t->erase_floor = (size_t)(p - t->buf);
	}
	t->used = (size_t)(p - t->buf);
	/* pairs with the acquire of used_bytes in the flusher */
	xfdr_store_release(&t->desc->used_bytes, t->used);
	return 0;
}

XFDR_COLD XFDR_NOINSTR void rec_function_slow(struct rec_thread *t, struct thread_slot *held,
					      uint64_t tsc, unsigned cpu, unsigned action,
					      uint32_t fid)
{
	struct rec_event ev = {.kind = REC_EV_FUNCTION, .action = action, .fid = fid};
	int saved = errno;
	uint32_t session;

	if (!held) {
		rec_event_at(tsc, cpu, &ev);
		return;
	}
	session = session_recording();
	if (session != SESSION_OFF)
		write_event(t, held, session, tsc, cpu, &ev);
	xfdr_barrier();
	/* pairs with the acquire in thread_quiesce() */
	xfdr_store_release(&held->busy, 0u);
	errno = saved;
}

/* The thread's slot, registering it first if needed; NULL with *rc set when there is none. */
static XFDR_NOINSTR struct thread_slot *thread_slot(struct rec_thread *t, int *rc)
{
	struct thread_slot *s = t->slot;

	if (XFDR_LIKELY(s))
		return s;
	if (session_recording() == SESSION_OFF) {
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

XFDR_NOINSTR int rec_event_at(uint64_t tsc, unsigned cpu, const struct rec_event *ev)
{
	struct rec_thread *t = &rec_self;
	int saved = errno;
	uint32_t session;
	struct thread_slot *s;
	int rc = 0;

	s = thread_slot(t, &rc);
	if (!s)
		goto out;
	if (xfdr_load_relaxed(&s->busy)) {
		session = session_recording();
		if (session == SESSION_OFF) {
			rc = -EAGAIN;
		} else {
			count_drop(s, DROP_REENTRANT, session);
			rc = -EDEADLK;
		}
		goto out;
	}
	xfdr_store_relaxed(&s->busy, 1u);
	xfdr_barrier();
	session = session_recording();
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
