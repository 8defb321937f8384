/*
 * runtime/record/record.c - the slow record path and the events that are never fast.
 *
 * A thread's buffer, as written here (every byte through writer/encode.h):
 *
 *   NewBuffer(tid16) WallClockTime(CLOCK_REALTIME) NewCPUId(cpu, tsc)   <- when taken
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
#include "xfdr/format.h"

/* Registration is retried after this many events once the thread table was found full. */
#define SLOTLESS_RETRY_EVENTS 1024u

static XFDR_NOINSTR void count_drop(struct thread_slot *s, enum drop_cause cause, uint32_t session)
{
	xfdr_add_relaxed(&s->dropped[cause], (uint64_t)1);
	xfdr_store_relaxed(&s->session, session);
}

/* Take a buffer and write its preamble. Returns 0 or -ENOBUFS. */
static XFDR_NOINSTR int take_buffer(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				    uint64_t tsc, unsigned cpu)
{
	struct pool_desc *d = __pool_take();
	uint32_t tid16 = xfdr_load_relaxed(&s->tid16);
	struct timespec wall;
	uint8_t *p;

	if (!d)
		return -ENOBUFS;
	d->owner_slot = s->index;
	d->owner_tid = xfdr_load_relaxed(&s->tid);
	d->owner_tid16 = tid16;
	d->first_tsc = tsc;
	clock_gettime(CLOCK_REALTIME, &wall);
	p = d->data;
	p += wr_new_buffer(p, (uint16_t)tid16);
	p += wr_wall_clock_time(p, (uint64_t)wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
	p += wr_new_cpu_id(p, (uint16_t)cpu, tsc);
	/* pairs with the acquire of used_bytes in snapshot_lengths() */
	xfdr_store_release(&d->used_bytes, (size_t)(p - d->data));
	/* pairs with the acquire of state in snapshot_lengths(): owner fields before it */
	xfdr_store_release(&d->state, (uint32_t)POOL_OWNED);
	t->buf = d->data;
	t->desc = d;
	t->size = rt_pool.buffer_bytes;
	t->used = (size_t)(p - d->data);
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
 * write_event - put one event group into the thread's buffer, rotating it if needed.
 * Context: guard held, session is the one being recorded.
 */
static XFDR_NOINSTR int write_event(struct rec_thread *t, struct thread_slot *s, uint32_t session,
				    uint64_t tsc, unsigned cpu, const struct rec_event *ev)
{
	size_t buffer_bytes = rt_pool.buffer_bytes;
	size_t need, prefix = 0;
	uint8_t *p;
	unsigned i;

	if (t->session != session)
		rec_thread_forget_buffer(t); /* an older session's buffer: never written again */
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
		if (t->buf) {
			pool_mark_full(t->desc);
			rec_thread_forget_buffer(t);
		}
		if (take_buffer(t, s, session, tsc, cpu)) {
			count_drop(s, DROP_NO_BUFFER, session);
			return -ENOBUFS;
		}
	}
	p = t->buf + t->used;
	if (ev->kind == REC_EV_FUNCTION) {
		if (cpu != t->cpu) {
			p += wr_new_cpu_id(p, (uint16_t)cpu, tsc);
			t->cpu = cpu;
			t->last_tsc = tsc;
		} else if (tsc - t->last_tsc > UINT32_MAX) {
			p += wr_tsc_wrap(p, tsc);
			t->last_tsc = tsc;
		}
		p += wr_function(p, ev->action, ev->fid, (uint32_t)(tsc - t->last_tsc));
		for (i = 0; i < ev->nargs; i++)
			p += wr_call_argument(p, ev->args[i]);
		t->last_tsc = tsc;
	} else {
		size_t padded = need - XFDR_MD_RECORD_BYTES;

		p += wr_custom_event_marker(p, (uint32_t)padded, tsc);
		memcpy(p, ev->data, ev->bytes);
		memset(p + ev->bytes, 0, padded - ev->bytes);
		p += padded;
	}
	t->used = (size_t)(p - t->buf);
	/* pairs with the acquire of used_bytes in snapshot_lengths() */
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
