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
	uint64_t child_tsc; /* total of the direct children closed so far */
};

struct cs_thread {
	struct cs_frame *frames;
	size_t cap; /* frames allocated */
	uint32_t depth;
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

/* Room for one more frame. Returns 0 or -ENOMEM, with the stack unchanged. */
static int cs_reserve(struct cs_thread *th)
{
	struct cs_frame *frames;
	size_t cap;

	if (th->depth == UINT32_MAX)
		return -ENOMEM;
	if (th->depth < th->cap)
		return 0;
	cap = th->cap ? th->cap * 2 : CS_FIRST_FRAMES;
	if (cap < th->cap || cap > SIZE_MAX / sizeof(*frames))
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
	if (cs->on_call && cs->on_call(cs->ctx, c))
		return -ECANCELED;
	return 0;
}

/*
 * Pop the innermost frame of th and report it as ended (end: one XFDR_CALL_* end bit) at
 * exit_tsc by the event exit (NULL for XFDR_CALL_NO_EXIT). Its time goes to its parent's
 * children, or to the thread's depth-0 total. Returns 0 or -ECANCELED.
 */
static int cs_pop(struct xfdr_callstack *cs, struct cs_thread *th, uint16_t tid, uint64_t exit_tsc,
		  const struct xfdr_event *exit, unsigned end)
{
	struct cs_frame *f = &th->frames[th->depth - 1];
	struct xfdr_call c = {
	    .function_id = f->enter.function_id,
	    .thread_id = tid,
	    .cpu = f->enter.cpu,
	    .depth = th->depth - 1,
	    .flags = end | (f->enter.action == XFDR_FN_ENTER_ARGS ? XFDR_CALL_ARGS : 0u),
	    .enter_tsc = f->enter.tsc,
	    .exit_tsc = exit_tsc,
	    .total_tsc = exit_tsc >= f->enter.tsc ? exit_tsc - f->enter.tsc : 0,
	    .child_tsc = f->child_tsc,
	    .enter = &f->enter,
	    .exit = exit,
	};

	th->depth--;
	if (th->depth)
		th->frames[th->depth - 1].child_tsc =
		    add_sat(th->frames[th->depth - 1].child_tsc, c.total_tsc);
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
	    .depth = th->depth,
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
	if (!th->depth) {
		c.child_tsc = th->root_child_tsc;
		th->root_child_tsc = c.total_tsc;
	}
	return cs_report(cs, &c);
}

/* Counters and the thread's clock for an event that is being taken. */
static void cs_note(struct xfdr_callstack *cs, struct cs_thread *th, uint64_t tsc)
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
	cs->stats.function_events++;
}

int xfdr_callstack_feed(struct xfdr_callstack *cs, const struct xfdr_event *ev)
{
	struct cs_thread *th;
	struct cs_frame *f;
	unsigned end;
	uint32_t i;
	int rc;

	if (ev->type != XFDR_EVENT_FUNCTION || ev->action >= XFDR_FN_ACTION_COUNT) {
		cs->stats.ignored_events++;
		return 0;
	}
	th = cs->threads[ev->thread_id];
	if (!th) {
		th = calloc(1, sizeof(*th));
		if (!th)
			return -ENOMEM;
		cs->threads[ev->thread_id] = th;
	}

	if (ev->action == XFDR_FN_ENTER || ev->action == XFDR_FN_ENTER_ARGS) {
		rc = cs_reserve(th);
		if (rc)
			return rc;
		cs_note(cs, th, ev->tsc);
		f = &th->frames[th->depth++];
		f->enter = *ev;
		f->child_tsc = 0;
		if (th->depth > cs->stats.max_depth)
			cs->stats.max_depth = th->depth;
		return 0;
	}

	cs_note(cs, th, ev->tsc);
	end = ev->action == XFDR_FN_TAIL_EXIT ? XFDR_CALL_TAIL_EXIT : XFDR_CALL_EXIT;
	for (i = th->depth; i > 0; i--)
		if (th->frames[i - 1].enter.function_id == ev->function_id)
			break;
	if (!i)
		return cs_no_entry(cs, th, ev, end);
	/* The frames above the match never saw their exit: this one closes them too. */
	while (th->depth > i) {
		rc = cs_pop(cs, th, ev->thread_id, ev->tsc, ev, XFDR_CALL_UNWOUND);
		if (rc)
			return rc;
	}
	return cs_pop(cs, th, ev->thread_id, ev->tsc, ev, end);
}

int xfdr_callstack_finish_thread(struct xfdr_callstack *cs, uint16_t thread_id)
{
	struct cs_thread *th = cs->threads[thread_id];
	int rc;

	if (!th)
		return 0;
	while (th->depth) {
		rc = cs_pop(cs, th, thread_id, th->last_tsc, NULL, XFDR_CALL_NO_EXIT);
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

	return th ? th->depth : 0;
}

const struct xfdr_event *xfdr_callstack_frame(const struct xfdr_callstack *cs, uint16_t thread_id,
					      uint32_t depth)
{
	const struct cs_thread *th = cs->threads[thread_id];

	return th && depth < th->depth ? &th->frames[depth].enter : NULL;
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
