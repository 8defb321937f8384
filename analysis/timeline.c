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
    [TL_BEGIN_SPLIT] = "split",
};

const char *const timeline_end_name[] = {
    [TL_END_EXIT] = NULL,	    [TL_END_TAIL_EXIT] = "tail exit",
    [TL_END_UNWOUND] = "unwound",   [TL_END_CONTEXT] = "stack context",
    [TL_END_EDGE] = "trace edge",   [TL_END_SPLIT] = "split",
    [TL_END_WINDOW] = "window end",
};

void timeline_counts_add(struct timeline_counts *to, const struct timeline_counts *c)
{
	to->calls += c->calls;
	to->unwound += c->unwound;
	to->no_entry += c->no_entry;
	to->no_exit += c->no_exit;
	to->from_context += c->from_context;
	to->before_window += c->before_window;
	to->contexts_applied += c->contexts_applied;
	to->contexts_invalid += c->contexts_invalid;
	to->tsc_backwards += c->tsc_backwards;
	to->split += c->split;
	to->window_end += c->window_end;
}

void timeline_counts_sub(struct timeline_counts *to, const struct timeline_counts *c)
{
	to->calls -= c->calls;
	to->unwound -= c->unwound;
	to->no_entry -= c->no_entry;
	to->no_exit -= c->no_exit;
	to->from_context -= c->from_context;
	to->before_window -= c->before_window;
	to->contexts_applied -= c->contexts_applied;
	to->contexts_invalid -= c->contexts_invalid;
	to->tsc_backwards -= c->tsc_backwards;
	to->split -= c->split;
	to->window_end -= c->window_end;
}

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

/* Buffers walked, of all the threads walked (together or in turn). */
struct tl_progress {
	const struct progress *prog;
	uint64_t done, total;
};

struct tl {
	struct xfdr_trace *t;
	const struct timeline_ops *ops;
	void *ctx;
	struct tl_progress *pg;
	const struct window *w; /* NULL: all */
	uint64_t since, until;
	struct timeline_counts n;

	/* The thread being walked. */
	struct xfdr_thread_info ti;
	int one_walk; /* ops->before_trace: each thread is walked once */
	int writing;  /* the walk that reports (the second, or the only one) */
	int open;     /* that walk: the window began, events are reported */
	int opened;   /* it began once: after a cut it begins again (timeline_walk_by_time()) */
	int seen;     /* that walk had an event (before the window too) */
	int skip;     /* timeline_walk_by_time(): the thread is not one of the window's */
	int past;     /* that walk had an event past the window: nothing more is reported */
	size_t past_before; /* one walk: the calls begun before the trace ended when it was */
	uint64_t open_tsc, last_tsc;
	struct tl_frame *stack;
	uint32_t depth, cap; /* entries */
	uint32_t *before;    /* fids of the exits without entry, innermost first */
	size_t nbefore, before_cap, before_closed;
	uint64_t last_buf;
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
	else if (how == TL_END_SPLIT)
		s->n.split++;
	else if (how == TL_END_WINDOW)
		s->n.window_end++;
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
		if (!s->open && !s->past)
			return 0;
		if (note_before(s, fid))
			return -1;
		if (s->past)
			return 0; /* ended at until by walk_end() */
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
	s->pg->done++;
	progress_update(s->pg->prog, s->pg->done, s->pg->total);
	return failed(s);
}

/*
 * The window begins at the thread's event at tsc: the calls open by then begin there. After a
 * cut (s->opened), the thread begins again in the new output, its open calls with it.
 */
static void open_window(struct tl *s, uint64_t tsc)
{
	enum tl_begin before = s->opened ? TL_BEGIN_SPLIT : TL_BEGIN_BEFORE_TRACE;
	enum tl_begin open = s->opened ? TL_BEGIN_SPLIT : TL_BEGIN_BEFORE_WINDOW;
	size_t i;
	uint32_t k, d;

	s->open = s->opened = 1;
	s->open_tsc = s->last_tsc = tsc;
	s->ops->thread_begin(s->ctx, &s->ti, tsc);
	for (i = s->nbefore; i > s->before_closed; i--)
		put_begin(s, s->before[i - 1], tsc, before, NULL, 1);
	for (d = 0; d < s->depth; d++) {
		const struct tl_frame *f = &s->stack[d];

		for (k = 0; k < f->slices && !failed(s); k++)
			put_begin(s, f->fid, tsc, open, NULL, f->slices == f->count ? 1 : f->count);
	}
}

/* Are calls open (begun and not ended, in the walk)? */
static int has_open_calls(const struct tl *s)
{
	return s->depth > 0 || s->before_closed < s->nbefore;
}

/*
 * A cut (how: TL_END_SPLIT) or the window's end (TL_END_WINDOW): the open calls' slices end in
 * this output at tsc, innermost first; they stay open in the walk.
 */
static void cut_thread(struct tl *s, uint64_t tsc, enum tl_end how)
{
	uint32_t d, k;
	size_t i;

	for (d = s->depth; d > 0; d--)
		for (k = 0; k < s->stack[d - 1].slices; k++)
			put_end(s, s->stack[d - 1].fid, tsc, how, TIMELINE_UNNAMED);
	for (i = s->before_closed; i < s->nbefore; i++)
		put_end(s, s->before[i], tsc, how, TIMELINE_UNNAMED);
	s->open = 0;
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

/* A walk of thread i begins (the first: writing 0). Returns a TIMELINE_ code. */
static int walk_begin(struct tl *s, uint64_t i, int writing, struct xfdr_event_iter *it,
		      struct xfdr_error *err)
{
	s->writing = writing;
	s->open = s->opened = s->seen = s->past = 0;
	s->last_tsc = 0;
	s->depth = 0;
	s->before_closed = 0;
	if (!writing || s->one_walk)
		s->nbefore = 0;
	return xfdr_events_begin_thread(s->t, i, it, err) ? TIMELINE_FAILED : TIMELINE_OK;
}

/* Will the walk report ev (the window is open, or opens at it)? */
static int reports(const struct tl *s, const struct xfdr_event *ev)
{
	return s->writing && !s->past && (s->open || s->opened || ev->tsc >= s->since);
}

/*
 * The thread's first event past the window: its open calls end at until (one that the walk has
 * not shown yet, open across the whole window, is shown from since), and nothing more is
 * reported. A walk of its own (one_walk) goes on to find the calls begun before the trace that
 * end later: walk_end() ends them.
 */
static void leave_window(struct tl *s)
{
	if (!s->open && !s->opened && s->seen && has_open_calls(s))
		open_window(s, s->since);
	if (s->open)
		cut_thread(s, s->until, TL_END_WINDOW);
	s->past = 1;
	s->past_before = s->nbefore;
}

/* The walk's next event. Returns a TIMELINE_ code. */
static int walk_event(struct tl *s, const struct xfdr_event *ev)
{
	uint64_t tsc = ev->tsc;
	int r = 0;

	if (next_buffer(s, ev))
		return TIMELINE_STOPPED;
	if (s->writing && !s->past && tsc > s->until)
		leave_window(s);
	if (s->writing)
		s->seen = 1;
	if (!s->open && reports(s, ev))
		open_window(s, s->opened && tsc < s->last_tsc ? s->last_tsc : tsc);
	if (s->open) {
		if (tsc < s->last_tsc) {
			tsc = s->last_tsc;
			s->n.tsc_backwards++;
		}
		s->last_tsc = tsc;
	}
	if (ev->type != XFDR_EVENT_FUNCTION)
		r = on_custom(s, ev, tsc);
	else if (ev->action == XFDR_FN_ENTER || ev->action == XFDR_FN_ENTER_ARGS)
		r = on_fn_entry(s, ev, tsc);
	else if (ev->action == XFDR_FN_EXIT || ev->action == XFDR_FN_TAIL_EXIT)
		r = on_fn_exit(s, ev, tsc);
	return r ? TIMELINE_NO_MEMORY : TIMELINE_OK;
}

/* The thread has no event left: the calls still open end. Returns a TIMELINE_ code. */
static int walk_end(struct tl *s)
{
	if (s->past && s->opened && s->one_walk) {
		/* Begun before the trace, ended after the window: shown to its end. */
		s->open = 1;
		for (; s->past_before < s->nbefore; s->past_before++)
			put_end(s, s->before[s->past_before], s->until, TL_END_WINDOW,
				TIMELINE_UNNAMED);
		report_before(s);
		s->open = 0;
	}
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

/*
 * walk_thread - walk thread i: the first time (writing 0) to find its exits without entry, the
 * second time to report it; with ops->before_trace, once, reporting. Returns a TIMELINE_ code.
 */
static int walk_thread(struct tl *s, uint64_t i, int writing, struct xfdr_error *err)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev = {0}; /* what a function event leaves untouched too */
	int rc = walk_begin(s, i, writing, &it, err), r;

	/* Past the window, only a walk of its own has more to find (walk_end()). */
	while (rc == TIMELINE_OK && (!s->past || s->one_walk) &&
	       (r = xfdr_events_next_call(&it, &ev, err)) != 0)
		rc = r < 0 ? TIMELINE_FAILED : walk_event(s, &ev);
	return rc == TIMELINE_OK ? walk_end(s) : rc;
}

/* Is thread s->ti outside the window's threads? Its buffers count as walked. */
static int left_out(struct tl *s, int walks)
{
	if (window_has_thread(s->w, s->ti.pid, s->ti.thread_id))
		return 0;
	s->pg->done += (uint64_t)walks * s->ti.buffers;
	progress_update(s->pg->prog, s->pg->done, s->pg->total);
	return 1;
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

static struct tl tl_new(struct xfdr_trace *t, const struct window *w,
			const struct timeline_ops *ops, void *ctx, struct tl_progress *pg)
{
	return (struct tl){
	    .t = t,
	    .ops = ops,
	    .ctx = ctx,
	    .pg = pg,
	    .w = w,
	    .since = w ? w->since : 0,
	    .until = w ? w->until : UINT64_MAX,
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
		if (!left_out(s, s->one_walk ? 1 : 2))
			rc = walk_all(s, i, err);
	}
	free(s->stack);
	free(s->before);
	if (counts)
		*counts = s->n;
	return rc;
}

int timeline_walk(struct xfdr_trace *t, const struct window *w, const struct timeline_ops *ops,
		  void *ctx, const struct progress *prog, struct timeline_counts *counts,
		  struct xfdr_error *err)
{
	struct tl_progress pg = {.prog = prog};
	struct tl s = tl_new(t, w, ops, ctx, &pg);
	uint64_t threads;

	if (xfdr_trace_threads(t, &threads, err))
		return TIMELINE_FAILED;
	pg.total = (s.one_walk ? 1 : 2) * xfdr_trace_buffer_count(t);
	return walk_threads(&s, 0, threads, counts, err);
}

int timeline_walk_thread(struct xfdr_trace *t, uint64_t i, const struct window *w,
			 const struct timeline_ops *ops, void *ctx, const struct progress *prog,
			 struct timeline_counts *counts, struct xfdr_error *err)
{
	struct tl_progress pg = {.prog = prog};
	struct tl s = tl_new(t, w, ops, ctx, &pg);
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
	pg.total = (s.one_walk ? 1 : 2) * s.ti.buffers;
	return walk_threads(&s, i, i + 1, counts, err);
}

/* ---- Threads walked together ------------------------------------------------------------- */

/* The threads of timeline_walk_by_time(): a binary heap of their next events, by time. */
struct tl_merge {
	struct tl *th;
	uint64_t *index; /* th[k] is thread index[k] of its trace */
	struct xfdr_event_iter *it;
	struct xfdr_event *ev; /* th[k]'s next event */
	uint64_t *key;	       /* its time: its TSC, never below its thread's previous one */
	size_t *heap, n;       /* the threads with events left, the next first */
};

static int heap_less(const struct tl_merge *m, size_t a, size_t b)
{
	return m->key[a] < m->key[b] || (m->key[a] == m->key[b] && a < b);
}

/* The heap's entry at i, which may come later than its children, moved down. */
static void heap_down(struct tl_merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, least = i, v;

		if (l < m->n && heap_less(m, m->heap[l], m->heap[least]))
			least = l;
		if (l + 1 < m->n && heap_less(m, m->heap[l + 1], m->heap[least]))
			least = l + 1;
		if (least == i)
			return;
		v = m->heap[i];
		m->heap[i] = m->heap[least];
		m->heap[least] = v;
		i = least;
	}
}

/*
 * th[k]'s next event into ev[k] and its place in the heap (top: k is there; else a new entry):
 * with none left, its walk ends and it leaves the heap. Returns a TIMELINE_ code.
 */
static int next_of(struct tl_merge *m, size_t k, int top, struct xfdr_error *err)
{
	struct tl *s = &m->th[k];
	/* Past the window, a thread has nothing more to report. */
	int r = s->past ? 0 : xfdr_events_next_call(&m->it[k], &m->ev[k], err);
	size_t i;

	if (r < 0)
		return TIMELINE_FAILED;
	if (r == 0) {
		if (top) {
			m->heap[0] = m->heap[--m->n];
			heap_down(m, 0);
		}
		return walk_end(s);
	}
	m->key[k] = s->open && m->ev[k].tsc < s->last_tsc ? s->last_tsc : m->ev[k].tsc;
	if (top) {
		heap_down(m, 0);
		return TIMELINE_OK;
	}
	/* a new entry, moved up */
	for (i = m->n++; i > 0 && heap_less(m, k, m->heap[(i - 1) / 2]); i = (i - 1) / 2)
		m->heap[i] = m->heap[(i - 1) / 2];
	m->heap[i] = k;
	return TIMELINE_OK;
}

/* The output is cut at tsc, before th[k]'s event (see timeline_ops.cut). */
static void cut_all(struct tl_merge *m, size_t total, size_t k, uint64_t tsc)
{
	struct timeline_counts sum = {0};
	size_t j;

	for (j = 0; j < total; j++)
		if (m->th[j].open)
			cut_thread(&m->th[j], tsc, TL_END_SPLIT);
	for (j = 0; j < total; j++)
		timeline_counts_add(&sum, &m->th[j].n);
	m->th[k].ops->next_output(m->th[k].ctx, &sum);
	for (j = 0; j < total; j++)
		if (m->th[j].opened && has_open_calls(&m->th[j]))
			open_window(&m->th[j], tsc);
}

/* The walk of every thread at once, once each has had its first. Returns a TIMELINE_ code. */
static int walk_merged(struct tl_merge *m, size_t total, struct xfdr_error *err)
{
	int rc = TIMELINE_OK, reported = 0;
	size_t k;

	for (k = 0; k < total && rc == TIMELINE_OK; k++) {
		if (m->th[k].skip)
			continue;
		rc = walk_begin(&m->th[k], m->index[k], 1, &m->it[k], err);
		if (rc == TIMELINE_OK)
			rc = next_of(m, k, 0, err);
	}
	while (rc == TIMELINE_OK && m->n) {
		struct tl *s = &m->th[k = m->heap[0]];

		if (reports(s, &m->ev[k])) {
			/* at least one event between two cuts, whatever a cut costs */
			if (reported && s->ops->cut && s->ops->cut(s->ctx)) {
				cut_all(m, total, k, m->key[k]);
				reported = 0;
			}
			reported = 1;
		}
		rc = walk_event(s, &m->ev[k]);
		if (rc == TIMELINE_OK)
			rc = next_of(m, k, 1, err);
	}
	return rc;
}

int timeline_walk_by_time(struct xfdr_trace *const *t, size_t ntraces, const struct window *w,
			  const struct timeline_ops *ops, void *const *ctxs,
			  const struct progress *prog, struct timeline_counts *counts,
			  struct xfdr_error *err)
{
	struct tl_progress pg = {.prog = prog};
	struct tl_merge m = {0};
	uint64_t threads, i;
	size_t total = 0, j, k;
	int rc = TIMELINE_OK;

	for (j = 0; j < ntraces; j++) {
		if (xfdr_trace_threads(t[j], &threads, err))
			return TIMELINE_FAILED;
		total += (size_t)threads;
		pg.total += 2 * xfdr_trace_buffer_count(t[j]);
	}
	m.th = calloc(total + 1, sizeof(*m.th));
	m.index = calloc(total + 1, sizeof(*m.index));
	m.it = calloc(total + 1, sizeof(*m.it));
	m.ev = calloc(total + 1, sizeof(*m.ev));
	m.key = calloc(total + 1, sizeof(*m.key));
	m.heap = calloc(total + 1, sizeof(*m.heap));
	if (!m.th || !m.index || !m.it || !m.ev || !m.key || !m.heap)
		rc = TIMELINE_NO_MEMORY;
	for (j = k = 0; j < ntraces && rc == TIMELINE_OK; j++) {
		xfdr_trace_threads(t[j], &threads, err);
		for (i = 0; i < threads; i++, k++) {
			m.th[k] = tl_new(t[j], w ? &w[j] : NULL, ops, ctxs[k], &pg);
			m.th[k].one_walk = 0; /* the begins must come first: two walks */
			m.index[k] = i;
			xfdr_trace_thread(t[j], i, &m.th[k].ti);
		}
	}
	/* The first walks, each thread's alone: which exits had no entry. */
	for (k = 0; k < total && rc == TIMELINE_OK; k++)
		if (!(m.th[k].skip = left_out(&m.th[k], 2)))
			rc = walk_thread(&m.th[k], m.index[k], 0, err);
	if (rc == TIMELINE_OK)
		rc = walk_merged(&m, total, err);
	if (counts)
		*counts = (struct timeline_counts){0};
	for (k = 0; m.th && k < total; k++) {
		if (counts)
			timeline_counts_add(counts, &m.th[k].n);
		free(m.th[k].stack);
		free(m.th[k].before);
	}
	free(m.th);
	free(m.index);
	free(m.it);
	free(m.ev);
	free(m.key);
	free(m.heap);
	return rc;
}
