/*
 * analysis/timeline.c - a trace as a timeline of slices and instants (timeline.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/callstack.h"
#include "analysis/timeline.h"

const char *const timeline_begin_name[] = {
    [TL_BEGIN_ENTRY] = NULL,
    [TL_BEGIN_CONTEXT] = "stack context",
    [TL_BEGIN_BEFORE_TRACE] = "before trace",
    [TL_BEGIN_BEFORE_WINDOW] = "before window",
};

const char *const timeline_end_name[] = {
    [TL_END_EXIT] = NULL,	  [TL_END_TAIL_EXIT] = "tail exit",
    [TL_END_UNWOUND] = "unwound", [TL_END_CONTEXT] = "stack context",
    [TL_END_EDGE] = "trace edge",
};

/*
 * An open call, or (fid TIMELINE_UNNAMED) a run of count calls a stack context did not name.
 * slices: the slices open for the entry, count while it is shown one per call, else 1 until
 * the last of its calls ends.
 */
struct tl_frame {
	uint32_t fid;
	uint32_t count;
	uint32_t slices;
};

struct tl {
	struct xfdr_trace *t;
	const struct timeline_ops *ops;
	void *ctx;
	const struct progress *prog;
	uint64_t since;
	struct timeline_counts n;

	/* The thread being walked. */
	struct xfdr_thread_info ti;
	int one_walk; /* ops->before_trace: each thread is walked once */
	int writing;  /* the walk that reports (the second, or the only one) */
	int open;     /* that walk: the window began, events are reported */
	uint64_t open_tsc, last_tsc;
	struct tl_frame *stack;
	uint32_t depth, cap; /* entries */
	uint32_t *before;    /* fids of the exits without entry, innermost first */
	size_t nbefore, before_cap, before_closed;

	uint64_t bufs_done, bufs_total, last_buf;
};

static int failed(const struct tl *s)
{
	return s->ops->failed && s->ops->failed(s->ctx);
}

/* ---- Slices -------------------------------------------------------------------------------- */

static void put_begin(struct tl *s, uint32_t fid, uint64_t tsc, enum tl_begin how,
		      const struct xfdr_event *ev, uint32_t calls)
{
	if (!s->open)
		return;
	s->ops->begin(s->ctx, fid, tsc, how, ev, calls);
	if (how == TL_BEGIN_CONTEXT)
		s->n.from_context++;
	else if (how == TL_BEGIN_BEFORE_TRACE)
		s->n.no_entry++;
	else if (how == TL_BEGIN_BEFORE_WINDOW)
		s->n.before_window++;
}

static void put_end(struct tl *s, uint32_t fid, uint64_t tsc, enum tl_end how, uint32_t exit_fid)
{
	if (!s->open)
		return;
	s->ops->end(s->ctx, fid, tsc, how, exit_fid);
	s->n.calls++;
	if (how == TL_END_UNWOUND)
		s->n.unwound++;
	else if (how == TL_END_EDGE)
		s->n.no_exit++;
}

/* End the open calls of stack entries keep.. (innermost first) at tsc. */
static void close_above(struct tl *s, uint32_t keep, uint64_t tsc, enum tl_end how)
{
	while (s->depth > keep) {
		struct tl_frame *f = &s->stack[s->depth - 1];
		uint32_t k;

		for (k = 0; k < f->slices && s->open; k++)
			put_end(s, f->fid, tsc, how, TIMELINE_UNNAMED);
		s->depth--;
	}
}

/* Returns 0, or -1 when out of memory. */
static int push(struct tl *s, uint32_t fid, uint32_t count)
{
	if (s->depth == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 64;
		struct tl_frame *v;

		if (cap < s->cap || !(v = realloc(s->stack, (size_t)cap * sizeof(*v))))
			return -1;
		s->stack = v;
		s->cap = cap;
	}
	s->stack[s->depth].fid = fid;
	s->stack[s->depth].count = count;
	s->stack[s->depth].slices = count > TIMELINE_UNNAMED_SLICES_MAX ? 1 : count;
	s->depth++;
	return 0;
}

/* ---- Function events ----------------------------------------------------------------------- */

/* fid's exit came without its entry: noted, innermost first. Returns 0, or -1 out of memory. */
static int note_before(struct tl *s, uint32_t fid)
{
	if (s->nbefore == s->before_cap) {
		size_t cap = s->before_cap ? s->before_cap * 2 : 64;
		uint32_t *v = realloc(s->before, cap * sizeof(*v));

		if (!v)
			return -1;
		s->before = v;
		s->before_cap = cap;
	}
	s->before[s->nbefore++] = fid;
	return 0;
}

static int on_fn_entry(struct tl *s, const struct xfdr_event *ev, uint64_t tsc)
{
	if (push(s, ev->function_id, 1))
		return -1;
	put_begin(s, ev->function_id, tsc, TL_BEGIN_ENTRY,
		  ev->action == XFDR_FN_ENTER_ARGS ? ev : NULL, 1);
	return 0;
}

static int on_fn_exit(struct tl *s, const struct xfdr_event *ev, uint64_t tsc)
{
	enum tl_end how = ev->action == XFDR_FN_TAIL_EXIT ? TL_END_TAIL_EXIT : TL_END_EXIT;
	uint32_t fid = ev->function_id, i = s->depth;

	while (i > 0 && s->stack[i - 1].fid != fid && s->stack[i - 1].fid != TIMELINE_UNNAMED)
		i--;
	if (i > 0) {
		struct tl_frame *f = &s->stack[i - 1];

		close_above(s, i, tsc, TL_END_UNWOUND);
		/* A run shown as one slice ends with its last call. */
		if (f->slices == f->count) {
			put_end(s, f->fid, tsc, how, fid);
			f->slices--;
		}
		if (--f->count == 0)
			s->depth--;
		return 0;
	}
	/* Entered before the thread's first event: below every open call. */
	close_above(s, 0, tsc, TL_END_UNWOUND);
	if (s->one_walk) {
		/* Its begin goes to ops->before_trace at the end; one ended before the window
		   opened is not shown. */
		if (!s->open)
			return 0;
		if (note_before(s, fid))
			return -1;
		s->before_closed = s->nbefore;
		put_end(s, fid, tsc, how, fid);
	} else if (!s->writing) {
		return note_before(s, fid);
	} else if (s->before_closed < s->nbefore) {
		/* The first walk found this very exit: before[before_closed] is fid. */
		put_end(s, s->before[s->before_closed++], tsc, how, fid);
	}
	return 0;
}

/*
 * Make the open calls what context c says at its time tsc (ids[j] for j < id_count, unnamed
 * calls below). Returns 0 when they agreed, 1 when calls were ended or begun, -1 when out of
 * memory.
 */
static int apply_context(struct tl *s, const struct xfdr_stack_context *c, uint64_t tsc)
{
	uint32_t keep = 0, j = 0, partial = 0, named_end;

	for (keep = 0; keep < s->depth; keep++) {
		const struct tl_frame *f = &s->stack[keep];

		if (f->fid != TIMELINE_UNNAMED) {
			if (j < c->depth && (j >= c->id_count || c->ids[j] == f->fid)) {
				j++;
				continue;
			}
			break;
		}
		if (c->depth - j >= f->count) {
			j += f->count;
			continue;
		}
		partial = c->depth - j;
		break;
	}
	if (keep == s->depth && j == c->depth)
		return 0;
	s->n.contexts_applied += (uint64_t)s->open;
	if (partial) {
		struct tl_frame *f = &s->stack[keep];
		uint32_t k;

		close_above(s, keep + 1, tsc, TL_END_CONTEXT);
		if (f->slices == f->count) {
			for (k = partial; k < f->count && s->open; k++)
				put_end(s, TIMELINE_UNNAMED, tsc, TL_END_CONTEXT, TIMELINE_UNNAMED);
			f->slices = partial;
		}
		f->count = partial;
		s->depth = keep + 1;
		j += partial;
	} else {
		close_above(s, keep, tsc, TL_END_CONTEXT);
	}
	named_end = c->id_count;
	for (; j < named_end; j++) {
		if (push(s, c->ids[j], 1))
			return -1;
		put_begin(s, c->ids[j], tsc, TL_BEGIN_CONTEXT, NULL, 1);
	}
	if (j < c->depth) {
		const struct tl_frame *f;
		uint32_t k;

		if (push(s, TIMELINE_UNNAMED, c->depth - j))
			return -1;
		f = &s->stack[s->depth - 1];
		for (k = 0; k < f->slices && s->open; k++)
			put_begin(s, TIMELINE_UNNAMED, tsc, TL_BEGIN_CONTEXT, NULL,
				  f->slices == f->count ? 1 : f->count);
	}
	return 1;
}

/* ---- Custom and typed events --------------------------------------------------------------- */

static int on_custom(struct tl *s, const struct xfdr_event *ev, uint64_t tsc)
{
	struct xfdr_stack_context c;
	struct xfdr_error err;
	const char *why;
	int rc;

	if (ev->type == XFDR_EVENT_TYPED ||
	    !xfdr_payload_has_tag(ev->payload, ev->payload_bytes, XFDR_STACK_MAGIC)) {
		if (s->open)
			s->ops->event(s->ctx, ev, tsc, NULL);
		return 0;
	}
	if (xfdr_stack_context_decode(ev->payload, ev->payload_bytes, ev->big_endian, &c, &err) ==
		0 &&
	    c.depth - c.id_count <= CALLSTACK_UNNAMED_MAX) {
		/* Ending and beginning calls first: they happen at the context's time. */
		rc = apply_context(s, &c, tsc);
		if (rc < 0)
			return -1;
		if (s->open)
			s->ops->context(s->ctx, &c, tsc, rc);
		return 0;
	}
	s->n.contexts_invalid += (uint64_t)s->open;
	why = err.text;
	if (!xfdr_stack_context_decode(ev->payload, ev->payload_bytes, ev->big_endian, &c, NULL))
		why = "XFDRSTAK with more unnamed calls than taken";
	if (s->open)
		s->ops->event(s->ctx, ev, tsc, why);
	return 0;
}

/* ---- Threads -------------------------------------------------------------------------------- */

/* At each new buffer: progress, and whether the output has failed (1: stop). */
static int next_buffer(struct tl *s, const struct xfdr_event *ev)
{
	if (ev->buffer_index == s->last_buf)
		return 0;
	s->last_buf = ev->buffer_index;
	s->bufs_done++;
	progress_update(s->prog, s->bufs_done, s->bufs_total);
	return failed(s);
}

/* The window begins at the thread's event at tsc: the calls open by then begin there. */
static void open_window(struct tl *s, uint64_t tsc)
{
	size_t i;
	uint32_t k, d;

	s->open = 1;
	s->open_tsc = s->last_tsc = tsc;
	s->ops->thread_begin(s->ctx, &s->ti, tsc);
	for (i = s->nbefore; i > s->before_closed; i--)
		put_begin(s, s->before[i - 1], tsc, TL_BEGIN_BEFORE_TRACE, NULL, 1);
	for (d = 0; d < s->depth; d++) {
		const struct tl_frame *f = &s->stack[d];

		for (k = 0; k < f->slices && !failed(s); k++)
			put_begin(s, f->fid, tsc, TL_BEGIN_BEFORE_WINDOW, NULL,
				  f->slices == f->count ? 1 : f->count);
	}
}

/* One walk's end: the calls that began before the thread's first event, outermost first. */
static void report_before(struct tl *s)
{
	size_t i, j;

	for (i = 0, j = s->nbefore; i + 1 < j; i++, j--) {
		uint32_t fid = s->before[i];

		s->before[i] = s->before[j - 1];
		s->before[j - 1] = fid;
	}
	s->ops->before_trace(s->ctx, s->before, s->nbefore, s->open_tsc);
	s->n.no_entry += s->nbefore;
}

/*
 * walk_thread - walk thread i: the first time (writing 0) to find its exits without entry, the
 * second time to report it; with ops->before_trace, once, reporting. Returns a TIMELINE_ code.
 */
static int walk_thread(struct tl *s, uint64_t i, int writing, struct xfdr_error *err)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev = {0}; /* what a function event leaves untouched too */
	int rc, r = 0;

	s->writing = writing;
	s->open = 0;
	s->depth = 0;
	s->before_closed = 0;
	if (!writing || s->one_walk)
		s->nbefore = 0;
	if (xfdr_events_begin_thread(s->t, i, &it, err))
		return TIMELINE_FAILED;
	while ((rc = xfdr_events_next_call(&it, &ev, err)) == 1) {
		uint64_t tsc = ev.tsc;

		if (next_buffer(s, &ev))
			return TIMELINE_STOPPED;
		if (writing && !s->open && ev.tsc >= s->since)
			open_window(s, ev.tsc);
		if (s->open) {
			if (tsc < s->last_tsc) {
				tsc = s->last_tsc;
				s->n.tsc_backwards++;
			}
			s->last_tsc = tsc;
		}
		if (ev.type != XFDR_EVENT_FUNCTION)
			r = on_custom(s, &ev, tsc);
		else if (ev.action == XFDR_FN_ENTER || ev.action == XFDR_FN_ENTER_ARGS)
			r = on_fn_entry(s, &ev, tsc);
		else if (ev.action == XFDR_FN_EXIT || ev.action == XFDR_FN_TAIL_EXIT)
			r = on_fn_exit(s, &ev, tsc);
		if (r)
			return TIMELINE_NO_MEMORY;
	}
	if (rc < 0)
		return TIMELINE_FAILED;
	if (s->open) {
		close_above(s, 0, s->last_tsc, TL_END_EDGE);
		while (s->before_closed < s->nbefore)
			put_end(s, s->before[s->before_closed++], s->last_tsc, TL_END_EDGE,
				TIMELINE_UNNAMED);
		if (s->one_walk)
			report_before(s);
	}
	return failed(s) ? TIMELINE_STOPPED : TIMELINE_OK;
}

int timeline_base_tsc(struct xfdr_trace *t, uint64_t *base, struct xfdr_error *err)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	uint64_t threads, i;
	int rc, have = 0;

	*base = 0;
	if (xfdr_trace_threads(t, &threads, err))
		return -1;
	for (i = 0; i < threads; i++) {
		if (xfdr_events_begin_thread(t, i, &it, err) ||
		    (rc = xfdr_events_next(&it, &ev, err)) < 0)
			return -1;
		if (rc == 1 && (!have || ev.tsc < *base)) {
			*base = ev.tsc;
			have = 1;
		}
	}
	return 0;
}

/* Both walks of thread i (s->ti filled), or the only one. Returns a TIMELINE_ code. */
static int walk_all(struct tl *s, uint64_t i, struct xfdr_error *err)
{
	int rc = s->one_walk ? TIMELINE_OK : walk_thread(s, i, 0, err);

	return rc == TIMELINE_OK ? walk_thread(s, i, 1, err) : rc;
}

static struct tl tl_new(struct xfdr_trace *t, uint64_t since_tsc, const struct timeline_ops *ops,
			void *ctx, const struct progress *prog)
{
	return (struct tl){
	    .t = t,
	    .ops = ops,
	    .ctx = ctx,
	    .prog = prog,
	    .since = since_tsc,
	    .one_walk = ops->before_trace != NULL,
	    .last_buf = UINT64_MAX,
	};
}

/* Walk threads first .. end-1 in turn, then free what s holds. Returns a TIMELINE_ code. */
static int walk_threads(struct tl *s, uint64_t first, uint64_t end, struct timeline_counts *counts,
			struct xfdr_error *err)
{
	uint64_t i;
	int rc = TIMELINE_OK;

	for (i = first; i < end && rc == TIMELINE_OK; i++) {
		if (xfdr_trace_thread(s->t, i, &s->ti))
			break;
		rc = walk_all(s, i, err);
	}
	free(s->stack);
	free(s->before);
	if (counts)
		*counts = s->n;
	return rc;
}

int timeline_walk(struct xfdr_trace *t, uint64_t since_tsc, const struct timeline_ops *ops,
		  void *ctx, const struct progress *prog, struct timeline_counts *counts,
		  struct xfdr_error *err)
{
	struct tl s = tl_new(t, since_tsc, ops, ctx, prog);
	uint64_t threads;

	if (xfdr_trace_threads(t, &threads, err))
		return TIMELINE_FAILED;
	s.bufs_total = (s.one_walk ? 1 : 2) * xfdr_trace_buffer_count(t);
	return walk_threads(&s, 0, threads, counts, err);
}

int timeline_walk_thread(struct xfdr_trace *t, uint64_t i, uint64_t since_tsc,
			 const struct timeline_ops *ops, void *ctx, const struct progress *prog,
			 struct timeline_counts *counts, struct xfdr_error *err)
{
	struct tl s = tl_new(t, since_tsc, ops, ctx, prog);
	uint64_t threads;

	if (xfdr_trace_threads(t, &threads, err))
		return TIMELINE_FAILED;
	if (xfdr_trace_thread(t, i, &s.ti)) {
		err->offset = 0;
		snprintf(err->text, sizeof(err->text),
			 "%s: expected a thread number below %llu, found %llu", xfdr_trace_name(t),
			 (unsigned long long)threads, (unsigned long long)i);
		return TIMELINE_FAILED;
	}
	s.bufs_total = (s.one_walk ? 1 : 2) * s.ti.buffers;
	return walk_threads(&s, i, i + 1, counts, err);
}
