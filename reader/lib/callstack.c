/*
 * reader/lib/callstack.c - call-stack pairing (the rules are in callstack.h).
 *
 * State: a table with one pointer per 16-bit thread id (lookup is one index, and finishing
 * walks the ids in order), allocated zeroed with the pairer; a thread's struct is allocated
 * the first time the thread is seen. A thread's stack is an array of frames, each a copy of
 * its entry event (so the callback can be handed the event, arguments included, whatever the
 * caller did with its own copy) plus the time of the children completed under it so far.
 *
 * Failure atomicity: all that can fail (a thread struct, growing a stack) happens before the
 * first change to the state, so -ENOMEM leaves the pairer exactly as it was.
 *
 * A frame is popped before its call is reported, so the state is consistent whenever the
 * callback runs or stops the walk; the popped slot stays untouched until the next push, which
 * keeps the entry event the callback sees alive.
 *
 * Stack contexts: a context pushes one frame per named call (from_context set, the entry event
 * made up from the context: id, TSC, CPU, thread, offset) and, when it counts calls it does not
 * name, one more frame that stands for all of them (`unnamed` = their number). Only a context
 * seeds, and only an empty stack, so a thread has at most one such frame, at index unnamed_at,
 * right above the named frames of its context. The depth the rules speak of (what callers see)
 * is then the frames in the array plus the `hidden` calls the unnamed frame stands for beyond
 * the first; closing its innermost call decrements it, and only the last pops it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/lib/callstack.h"

#define CS_THREAD_IDS 65536u
#define CS_FIRST_FRAMES 16u

struct cs_frame {
	struct xfdr_event enter;
	uint64_t child_tsc; /* total of the direct children closed so far (of the innermost call
			       of an unnamed frame) */
	uint32_t unnamed;   /* 0: a call with a function id; n: n calls a context did not name */
	int from_context;
};

struct cs_thread {
	struct cs_frame *frames;
	size_t cap;	     /* frames allocated */
	uint32_t top;	     /* frames in use */
	uint32_t hidden;     /* calls of the unnamed frame beyond its first (unnamed - 1), or 0 */
	uint32_t unnamed_at; /* index of the unnamed frame, when has_unnamed */
	int has_unnamed;
	int counted; /* in stats.threads */
	int active;  /* fed since created or finished: first_tsc and last_tsc hold */
	uint64_t first_tsc;
	uint64_t last_tsc;
	/* Calls closed at depth 0 (their time), the children of a later exit with no entry. */
	uint64_t root_child_tsc;
};

struct xfdr_callstack {
	xfdr_call_fn on_call;
	void *ctx;
	struct xfdr_callstack_stats stats;
	struct cs_thread **threads; /* CS_THREAD_IDS entries, NULL for a thread never seen */
};

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct xfdr_callstack *xfdr_callstack_create(xfdr_call_fn on_call, void *ctx)
{
	struct xfdr_callstack *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	cs->threads = calloc(CS_THREAD_IDS, sizeof(*cs->threads));
	if (!cs->threads) {
		free(cs);
		return NULL;
	}
	cs->on_call = on_call;
	cs->ctx = ctx;
	return cs;
}

void xfdr_callstack_destroy(struct xfdr_callstack *cs)
{
	uint32_t i;

	if (!cs)
		return;
	for (i = 0; i < CS_THREAD_IDS; i++) {
		if (cs->threads[i]) {
			free(cs->threads[i]->frames);
			free(cs->threads[i]);
		}
	}
	free(cs->threads);
	free(cs);
}

/* Open calls: the depth of the rules. */
static uint32_t cs_depth(const struct cs_thread *th)
{
	return th->top + th->hidden;
}

/* The index in frames of the call at depth (< cs_depth(th)). */
static uint32_t cs_index(const struct cs_thread *th, uint32_t depth)
{
	if (!th->has_unnamed || depth <= th->unnamed_at)
		return depth;
	if (depth - th->unnamed_at <= th->hidden)
		return th->unnamed_at;
	return depth - th->hidden;
}

/*
 * Room for n more frames, which add calls to the depth of the rules. Returns 0 or -ENOMEM,
 * with the stack unchanged.
 */
static int cs_reserve(struct cs_thread *th, uint32_t n, uint32_t calls)
{
	struct cs_frame *frames;
	size_t cap;

	if (calls > UINT32_MAX - cs_depth(th))
		return -ENOMEM;
	if (n <= th->cap - th->top)
		return 0;
	cap = th->cap ? th->cap : CS_FIRST_FRAMES;
	while (cap < (size_t)th->top + n && cap <= SIZE_MAX / 2)
		cap *= 2;
	if (cap < (size_t)th->top + n || cap > SIZE_MAX / sizeof(*frames))
		return -ENOMEM;
	frames = realloc(th->frames, cap * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	th->frames = frames;
	th->cap = cap;
	return 0;
}

static int cs_report(struct xfdr_callstack *cs, const struct xfdr_call *c)
{
	cs->stats.calls++;
	if (c->flags & XFDR_CALL_UNWOUND)
		cs->stats.unwound++;
	if (c->flags & XFDR_CALL_NO_EXIT)
		cs->stats.no_exit++;
	if (c->flags & XFDR_CALL_NO_ENTRY)
		cs->stats.no_entry++;
	if (c->flags & XFDR_CALL_FROM_CONTEXT)
		cs->stats.from_context++;
	if (cs->on_call && cs->on_call(cs->ctx, c))
		return -ECANCELED;
	return 0;
}

/*
 * Pop the innermost call of th and report it as ended (end: one XFDR_CALL_* end bit) at
 * exit_tsc by the event exit (NULL for XFDR_CALL_NO_EXIT). An unnamed call takes the id fid
 * (its own exit's function, or XFDR_CALL_UNKNOWN_FUNCTION). Its time goes to its parent's
 * children, or to the thread's depth-0 total. Returns 0 or -ECANCELED.
 */
static int cs_pop(struct xfdr_callstack *cs, struct cs_thread *th, uint16_t tid, uint64_t exit_tsc,
		  const struct xfdr_event *exit, unsigned end, uint32_t fid)
{
	struct cs_frame *f = &th->frames[th->top - 1];
	struct xfdr_call c = {
	    .function_id = f->unnamed ? fid : f->enter.function_id,
	    .thread_id = tid,
	    .cpu = f->enter.cpu,
	    .depth = cs_depth(th) - 1,
	    .flags = end,
	    .enter_tsc = f->enter.tsc,
	    .exit_tsc = exit_tsc,
	    .total_tsc = exit_tsc >= f->enter.tsc ? exit_tsc - f->enter.tsc : 0,
	    .child_tsc = f->child_tsc,
	    .enter = f->from_context ? NULL : &f->enter,
	    .exit = exit,
	};

	if (f->from_context)
		c.flags |= XFDR_CALL_FROM_CONTEXT;
	else if (f->enter.action == XFDR_FN_ENTER_ARGS)
		c.flags |= XFDR_CALL_ARGS;
	if (f->unnamed > 1) {
		/* The next unnamed call out is its caller: this call is its only child so far. */
		f->unnamed--;
		th->hidden--;
		f->child_tsc = c.total_tsc;
		return cs_report(cs, &c);
	}
	if (f->unnamed)
		th->has_unnamed = 0;
	th->top--;
	if (th->top)
		th->frames[th->top - 1].child_tsc =
		    add_sat(th->frames[th->top - 1].child_tsc, c.total_tsc);
	else
		th->root_child_tsc = add_sat(th->root_child_tsc, c.total_tsc);
	return cs_report(cs, &c);
}

/* An exit whose function is not on the stack: report it alone, leave the stack as it is. */
static int cs_no_entry(struct xfdr_callstack *cs, struct cs_thread *th, const struct xfdr_event *ev,
		       unsigned end)
{
	struct xfdr_call c = {
	    .function_id = ev->function_id,
	    .thread_id = ev->thread_id,
	    .cpu = ev->cpu,
	    .depth = cs_depth(th),
	    .flags = end | XFDR_CALL_NO_ENTRY,
	    .enter_tsc = th->first_tsc,
	    .exit_tsc = ev->tsc,
	    .total_tsc = ev->tsc >= th->first_tsc ? ev->tsc - th->first_tsc : 0,
	    .enter = NULL,
	    .exit = ev,
	};

	/*
	 * With nothing open, it was running since the thread's first event: every call that
	 * closed at depth 0 before it ran inside it, and so does it inside a later one.
	 */
	if (!cs_depth(th)) {
		c.child_tsc = th->root_child_tsc;
		th->root_child_tsc = c.total_tsc;
	}
	return cs_report(cs, &c);
}

/* Counters and the thread's clock for an event that is being taken. */
static void cs_clock(struct xfdr_callstack *cs, struct cs_thread *th, uint64_t tsc)
{
	if (!th->counted) {
		th->counted = 1;
		cs->stats.threads++;
	}
	if (!th->active) {
		th->active = 1;
		th->first_tsc = tsc;
	} else if (tsc < th->last_tsc) {
		cs->stats.tsc_backwards++;
	}
	th->last_tsc = tsc;
}

static void cs_note_depth(struct xfdr_callstack *cs, const struct cs_thread *th)
{
	if (cs_depth(th) > cs->stats.max_depth)
		cs->stats.max_depth = cs_depth(th);
}

/* The thread's struct, made on first sight. NULL when out of memory. */
static struct cs_thread *cs_thread(struct xfdr_callstack *cs, uint16_t tid)
{
	struct cs_thread *th = cs->threads[tid];

	if (!th) {
		th = calloc(1, sizeof(*th));
		if (th)
			cs->threads[tid] = th;
	}
	return th;
}

/* Does the context say what the open frames say? An unnamed call agrees with any id. */
static int cs_context_agrees(const struct cs_thread *th, const struct xfdr_stack_context *sc)
{
	const struct cs_frame *f;
	uint32_t i;

	if (cs_depth(th) != sc->depth)
		return 0;
	for (i = 0; i < sc->id_count; i++) {
		f = &th->frames[cs_index(th, i)];
		if (!f->unnamed && f->enter.function_id != sc->ids[i])
			return 0;
	}
	return 1;
}

/* A stack context (see the rules in callstack.h). Returns 0 or -ENOMEM (nothing changed). */
static int cs_context(struct xfdr_callstack *cs, const struct xfdr_event *ev)
{
	struct xfdr_stack_context sc;
	struct cs_thread *th;
	struct cs_frame *f;
	uint32_t unnamed, i;
	int rc;

	if (xfdr_stack_context_decode(ev->payload, ev->payload_bytes, ev->big_endian, &sc, NULL) ||
	    sc.depth - sc.id_count > XFDR_CALLSTACK_UNNAMED_MAX) {
		cs->stats.contexts_invalid++;
		return 0;
	}
	th = cs_thread(cs, ev->thread_id);
	if (!th)
		return -ENOMEM;
	if (cs_depth(th) || !sc.depth) {
		cs_clock(cs, th, ev->tsc);
		cs->stats.contexts++;
		if (!cs_context_agrees(th, &sc))
			cs->stats.contexts_differ++;
		return 0;
	}
	unnamed = sc.depth - sc.id_count;
	rc = cs_reserve(th, sc.id_count + (unnamed ? 1u : 0u), sc.depth);
	if (rc)
		return rc;
	cs_clock(cs, th, ev->tsc);
	cs->stats.contexts++;
	cs->stats.contexts_seeded++;
	f = NULL;
	for (i = 0; i < sc.id_count + (unnamed ? 1u : 0u); i++) {
		f = &th->frames[th->top++];
		memset(f, 0, sizeof(*f));
		f->enter.type = XFDR_EVENT_FUNCTION;
		f->enter.action = XFDR_FN_ENTER;
		f->enter.function_id = i < sc.id_count ? sc.ids[i] : XFDR_CALL_UNKNOWN_FUNCTION;
		f->enter.tsc = ev->tsc;
		f->enter.cpu = ev->cpu;
		f->enter.thread_id = ev->thread_id;
		f->enter.offset = ev->offset;
		f->enter.buffer_index = ev->buffer_index;
		f->enter.wall_seconds = ev->wall_seconds;
		f->enter.wall_micros = ev->wall_micros;
		f->from_context = 1;
	}
	if (f && unnamed) {
		f->unnamed = unnamed;
		th->has_unnamed = 1;
		th->unnamed_at = th->top - 1;
		th->hidden = unnamed - 1;
	}
	cs_note_depth(cs, th);
	return 0;
}

int xfdr_callstack_feed(struct xfdr_callstack *cs, const struct xfdr_event *ev)
{
	struct cs_thread *th;
	struct cs_frame *f;
	unsigned end;
	uint32_t i;
	int rc;

	if (ev->type == XFDR_EVENT_CUSTOM &&
	    xfdr_payload_has_tag(ev->payload, ev->payload_bytes, XFDR_STACK_MAGIC))
		return cs_context(cs, ev);
	if (ev->type != XFDR_EVENT_FUNCTION || ev->action >= XFDR_FN_ACTION_COUNT) {
		cs->stats.ignored_events++;
		return 0;
	}
	th = cs_thread(cs, ev->thread_id);
	if (!th)
		return -ENOMEM;

	if (ev->action == XFDR_FN_ENTER || ev->action == XFDR_FN_ENTER_ARGS) {
		rc = cs_reserve(th, 1, 1);
		if (rc)
			return rc;
		cs_clock(cs, th, ev->tsc);
		cs->stats.function_events++;
		f = &th->frames[th->top++];
		f->enter = *ev;
		f->child_tsc = 0;
		f->unnamed = 0;
		f->from_context = 0;
		cs_note_depth(cs, th);
		return 0;
	}

	cs_clock(cs, th, ev->tsc);
	cs->stats.function_events++;
	end = ev->action == XFDR_FN_TAIL_EXIT ? XFDR_CALL_TAIL_EXIT : XFDR_CALL_EXIT;
	/*
	 * The nearest frame of the function; an unnamed frame stops the search: its calls are
	 * inside every named frame below it, so the exit must be the innermost one's.
	 */
	for (i = th->top; i > 0; i--)
		if (th->frames[i - 1].unnamed ||
		    th->frames[i - 1].enter.function_id == ev->function_id)
			break;
	if (!i)
		return cs_no_entry(cs, th, ev, end);
	/* The frames above the match never saw their exit: this one closes them too. */
	while (th->top > i) {
		rc = cs_pop(cs, th, ev->thread_id, ev->tsc, ev, XFDR_CALL_UNWOUND,
			    XFDR_CALL_UNKNOWN_FUNCTION);
		if (rc)
			return rc;
	}
	return cs_pop(cs, th, ev->thread_id, ev->tsc, ev, end, ev->function_id);
}

int xfdr_callstack_finish_thread(struct xfdr_callstack *cs, uint16_t thread_id)
{
	struct cs_thread *th = cs->threads[thread_id];
	int rc;

	if (!th)
		return 0;
	while (th->top) {
		rc = cs_pop(cs, th, thread_id, th->last_tsc, NULL, XFDR_CALL_NO_EXIT,
			    XFDR_CALL_UNKNOWN_FUNCTION);
		if (rc)
			return rc;
	}
	th->active = 0;
	th->first_tsc = 0;
	th->last_tsc = 0;
	th->root_child_tsc = 0;
	return 0;
}

int xfdr_callstack_finish(struct xfdr_callstack *cs)
{
	uint32_t i;
	int rc;

	for (i = 0; i < CS_THREAD_IDS; i++) {
		rc = xfdr_callstack_finish_thread(cs, (uint16_t)i);
		if (rc)
			return rc;
	}
	return 0;
}

void xfdr_callstack_get_stats(const struct xfdr_callstack *cs, struct xfdr_callstack_stats *out)
{
	*out = cs->stats;
}

uint32_t xfdr_callstack_depth(const struct xfdr_callstack *cs, uint16_t thread_id)
{
	const struct cs_thread *th = cs->threads[thread_id];

	return th ? cs_depth(th) : 0;
}

const struct xfdr_event *xfdr_callstack_frame(const struct xfdr_callstack *cs, uint16_t thread_id,
					      uint32_t depth)
{
	const struct cs_thread *th = cs->threads[thread_id];
	const struct cs_frame *f;

	if (!th || depth >= cs_depth(th))
		return NULL;
	f = &th->frames[cs_index(th, depth)];
	return f->from_context ? NULL : &f->enter;
}

int xfdr_callstack_frame_info(const struct xfdr_callstack *cs, uint16_t thread_id, uint32_t depth,
			      struct xfdr_frame *out)
{
	const struct cs_thread *th = cs->threads[thread_id];
	const struct cs_frame *f;

	if (!th || depth >= cs_depth(th))
		return -1;
	f = &th->frames[cs_index(th, depth)];
	*out = (struct xfdr_frame){
	    .function_id = f->unnamed ? XFDR_CALL_UNKNOWN_FUNCTION : f->enter.function_id,
	    .flags = f->from_context			     ? XFDR_CALL_FROM_CONTEXT
		     : f->enter.action == XFDR_FN_ENTER_ARGS ? XFDR_CALL_ARGS
							     : 0u,
	    /* The unnamed frame's calls span depths unnamed_at .. unnamed_at + hidden. */
	    .unnamed_run = f->unnamed ? th->unnamed_at + th->hidden - depth + 1 : 0,
	    .enter_tsc = f->enter.tsc,
	    .enter = f->from_context ? NULL : &f->enter,
	};
	return 0;
}

/* Word an out-of-memory error the way the reader words a violation. Returns -1. */
static int cs_no_memory(struct xfdr_trace *t, struct xfdr_error *err, uint64_t offset,
			const char *what)
{
	if (err) {
		err->offset = offset;
		snprintf(err->text, sizeof(err->text),
			 "%s: offset %llu: expected memory for %s, found %s", xfdr_trace_name(t),
			 (unsigned long long)offset, what, strerror(ENOMEM));
	}
	return -1;
}

int xfdr_callstack_pair_trace(struct xfdr_trace *t, xfdr_call_fn on_call, void *ctx,
			      struct xfdr_callstack_stats *stats, struct xfdr_error *err)
{
	struct xfdr_callstack *cs;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	int have_thread = 0;
	uint16_t thread_id = 0;
	int rc, ret = -1;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	cs = xfdr_callstack_create(on_call, ctx);
	if (!cs)
		return cs_no_memory(t, err, 0, "the call-stack pairer");
	if (xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, err))
		goto out;
	while ((rc = xfdr_events_next(&it, &ev, err)) > 0) {
		/* XFDR_ORDER_THREAD: a thread's events are all together, so it is done. */
		if (have_thread && ev.thread_id != thread_id &&
		    xfdr_callstack_finish_thread(cs, thread_id)) {
			ret = 1;
			goto out;
		}
		have_thread = 1;
		thread_id = ev.thread_id;
		rc = xfdr_callstack_feed(cs, &ev);
		if (rc == -ECANCELED) {
			ret = 1;
			goto out;
		}
		if (rc) {
			cs_no_memory(t, err, ev.offset, "the call stack of its thread");
			goto out;
		}
	}
	if (rc < 0)
		goto out;
	ret = xfdr_callstack_finish(cs) ? 1 : 0;
out:
	if (stats)
		xfdr_callstack_get_stats(cs, stats);
	xfdr_callstack_destroy(cs);
	return ret;
}
