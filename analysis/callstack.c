/*
 * analysis/callstack.c - call-stack pairing (the rules are in callstack.h).
 *
 * State: an open-addressing hash table from (pid, thread id) to the thread's struct, which is
 * allocated the first time the thread is seen; the last thread looked up is kept, since events
 * come in long runs of one thread. Finishing sorts the keys to walk the threads in order. A
 * thread's stack is an array of frames, each a copy of its entry event (so the callback can be
 * handed the event, arguments included, whatever the caller did with its own copy) plus the time of
 * the children completed under it so far.
 *
 * Failure atomicity: all that can fail (a thread struct, growing a stack) happens before the
 * first change to the state, so -ENOMEM leaves the pairer exactly as it was.
 *
 * A window (callstack_set_window()): each thread is before it, in it or past it (phase). Only
 * in it are calls reported; entering it forgets the children's time of the open frames (they
 * ran before the window), and a call is cut to the window before its time goes to its caller.
 *
 * A frame is popped before its call is reported, so the state is consistent whenever the
 * callback runs or stops the walk; the popped slot stays untouched until the next push, which
 * keeps the entry event the callback sees alive.
 *
 * Exits: each thread counts its open named frames per function (a small hash table, the
 * same-size entries of every function the thread ever entered), so an exit whose function is
 * not open is known at once instead of by a walk of the whole stack: a deep stack followed by
 * many exits without entry made that quadratic. Every other exit walks down only the frames it
 * then closes, so the walks are paid for by the pushes.
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

#include "analysis/callstack.h"

#define CS_FIRST_FRAMES 16u
#define CS_FIRST_SLOTS 64u

struct cs_frame {
	struct xfdr_event enter;
	uint64_t child_tsc; /* total of the direct children closed so far (of the innermost call
			       of an unnamed frame) */
	uint32_t unnamed;   /* 0: a call with a function id; n: n calls a context did not name */
	int from_context;
};

struct cs_thread {
	uint64_t key; /* pid << 32 | thread id */
	struct cs_frame *frames;
	size_t cap;	     /* frames allocated */
	uint32_t top;	     /* frames in use */
	uint32_t hidden;     /* calls of the unnamed frame beyond its first (unnamed - 1), or 0 */
	uint32_t unnamed_at; /* index of the unnamed frame, when has_unnamed */
	int has_unnamed;
	int counted; /* in stats.threads */
	int phase;   /* enum cs_phase: where its events are, against the window */
	int active;  /* fed since created or finished: first_tsc and last_tsc hold */
	uint64_t first_tsc;
	uint64_t last_tsc;
	/* Calls closed at depth 0 (their time), the children of a later exit with no entry. */
	uint64_t root_child_tsc;
	/* Open named frames per function id: ncounts slots (0 or a power of two), nused keys. */
	struct cs_count *counts;
	uint32_t ncounts, nused;
};

enum cs_phase {
	CS_IN = 0, /* in the window (and with no window, always) */
	CS_BEFORE, /* its events so far are before the window */
	CS_PAST,   /* it had an event after the window: the rest is not taken */
};

#define CS_NO_FID UINT32_MAX /* an empty slot: function ids have 28 bits */

struct cs_count {
	uint32_t fid;
	uint32_t open;
};

struct callstack {
	call_fn on_call;
	void *ctx;
	struct callstack_stats stats;
	struct cs_thread **slots; /* nslots (a power of two) entries, NULL when free */
	size_t nslots, nthreads;
	struct cs_thread *last; /* the thread looked up last, or NULL */
	uint64_t since, until;	/* the window: 0 and UINT64_MAX without one */
};

static uint64_t cs_key(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

static size_t cs_hash(uint64_t key, size_t nslots)
{
	key *= 0x9e3779b97f4a7c15ull;
	return (size_t)(key >> 32) & (nslots - 1);
}

static struct cs_thread *cs_find(const struct callstack *cs, uint64_t key)
{
	size_t i;

	if (cs->last && cs->last->key == key)
		return cs->last;
	for (i = cs_hash(key, cs->nslots); cs->slots[i]; i = (i + 1) & (cs->nslots - 1))
		if (cs->slots[i]->key == key)
			return cs->slots[i];
	return NULL;
}

static size_t cs_count_hash(uint32_t fid, uint32_t n)
{
	return (size_t)(((uint64_t)fid * 0x9e3779b97f4a7c15ull) >> 32) & (n - 1);
}

/* The slot of fid, or the empty slot where it would go (the table has one). */
static struct cs_count *cs_count_slot(const struct cs_thread *th, uint32_t fid)
{
	size_t i;

	for (i = cs_count_hash(fid, th->ncounts); th->counts[i].fid != CS_NO_FID;
	     i = (i + 1) & (th->ncounts - 1))
		if (th->counts[i].fid == fid)
			break;
	return &th->counts[i];
}

/* Open named frames of fid on th. */
static uint32_t cs_open_frames(const struct cs_thread *th, uint32_t fid)
{
	return th->ncounts ? cs_count_slot(th, fid)->open : 0;
}

/* Room for n more function ids, the table at most half full. Returns 0 or -ENOMEM (unchanged). */
static int cs_count_reserve(struct cs_thread *th, uint32_t n)
{
	struct cs_count *v, *old = th->counts;
	uint32_t cap = th->ncounts ? th->ncounts : 64, oldn = th->ncounts, i;

	while ((uint64_t)(th->nused + n) * 2 > cap) {
		if (cap > UINT32_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	if (cap == th->ncounts)
		return 0;
	v = malloc((size_t)cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		v[i].fid = CS_NO_FID;
	th->counts = v;
	th->ncounts = cap;
	for (i = 0; i < oldn; i++)
		if (old[i].fid != CS_NO_FID)
			*cs_count_slot(th, old[i].fid) = old[i];
	free(old);
	return 0;
}

/* One more open frame of fid (room reserved), or one fewer (it has one). */
static void cs_count_add(struct cs_thread *th, uint32_t fid, int delta)
{
	struct cs_count *c = cs_count_slot(th, fid);

	if (c->fid == CS_NO_FID) {
		c->fid = fid;
		c->open = 0;
		th->nused++;
	}
	c->open += (uint32_t)delta;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct callstack *callstack_create(call_fn on_call, void *ctx)
{
	struct callstack *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	cs->nslots = CS_FIRST_SLOTS;
	cs->slots = calloc(cs->nslots, sizeof(*cs->slots));
	if (!cs->slots) {
		free(cs);
		return NULL;
	}
	cs->on_call = on_call;
	cs->ctx = ctx;
	cs->until = UINT64_MAX;
	return cs;
}

void callstack_destroy(struct callstack *cs)
{
	size_t i;

	if (!cs)
		return;
	for (i = 0; i < cs->nslots; i++) {
		if (cs->slots[i]) {
			free(cs->slots[i]->frames);
			free(cs->slots[i]->counts);
			free(cs->slots[i]);
		}
	}
	free(cs->slots);
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

/* Report c, a call of th: unless th is before the window. Returns 0 or -ECANCELED. */
static int cs_report(struct callstack *cs, const struct cs_thread *th, const struct call *c)
{
	if (th->phase == CS_BEFORE)
		return 0;
	cs->stats.calls++;
	if (c->flags & CALL_CUT_BEGIN)
		cs->stats.cut_begin++;
	if (c->flags & CALL_CUT_END)
		cs->stats.cut_end++;
	if (c->flags & CALL_UNWOUND)
		cs->stats.unwound++;
	if (c->flags & CALL_NO_EXIT)
		cs->stats.no_exit++;
	if (c->flags & CALL_NO_ENTRY)
		cs->stats.no_entry++;
	if (c->flags & CALL_FROM_CONTEXT)
		cs->stats.from_context++;
	if (cs->on_call && cs->on_call(cs->ctx, c))
		return -ECANCELED;
	return 0;
}

/* A call of a thread in the window that began before it: shown from the window's start. */
static void cs_clip(const struct callstack *cs, const struct cs_thread *th, struct call *c)
{
	if (th->phase != CS_IN || c->enter_tsc >= cs->since)
		return;
	c->enter_tsc = cs->since;
	c->flags |= CALL_CUT_BEGIN;
	c->total_tsc = c->exit_tsc > cs->since ? c->exit_tsc - cs->since : 0;
}

/*
 * Pop the innermost call of th and report it as ended (end: one CALL_* end bit) at
 * exit_tsc by the event exit (NULL for CALL_NO_EXIT). An unnamed call takes the id fid
 * (its own exit's function, or CALL_UNKNOWN_FUNCTION). Its time goes to its parent's
 * children, or to the thread's depth-0 total. Returns 0 or -ECANCELED.
 */
static int cs_pop(struct callstack *cs, struct cs_thread *th, uint64_t exit_tsc,
		  const struct xfdr_event *exit, unsigned end, uint32_t fid)
{
	struct cs_frame *f = &th->frames[th->top - 1];
	struct call c = {
	    .function_id = f->unnamed ? fid : f->enter.function_id,
	    .thread_id = (uint32_t)th->key,
	    .pid = (uint32_t)(th->key >> 32),
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
		c.flags |= CALL_FROM_CONTEXT;
	else if (f->enter.action == XFDR_FN_ENTER_ARGS)
		c.flags |= CALL_ARGS;
	cs_clip(cs, th, &c);
	if (f->unnamed > 1) {
		/* The next unnamed call out is its caller: this call is its only child so far. */
		f->unnamed--;
		th->hidden--;
		f->child_tsc = c.total_tsc;
		return cs_report(cs, th, &c);
	}
	if (f->unnamed)
		th->has_unnamed = 0;
	else
		cs_count_add(th, f->enter.function_id, -1);
	th->top--;
	if (th->top)
		th->frames[th->top - 1].child_tsc =
		    add_sat(th->frames[th->top - 1].child_tsc, c.total_tsc);
	else
		th->root_child_tsc = add_sat(th->root_child_tsc, c.total_tsc);
	return cs_report(cs, th, &c);
}

/* An exit whose function is not on the stack: report it alone, leave the stack as it is. */
static int cs_no_entry(struct callstack *cs, struct cs_thread *th, const struct xfdr_event *ev,
		       unsigned end)
{
	struct call c = {
	    .function_id = ev->function_id,
	    .thread_id = ev->thread_id,
	    .pid = ev->pid,
	    .cpu = ev->cpu,
	    .depth = cs_depth(th),
	    .flags = end | CALL_NO_ENTRY,
	    .enter_tsc = th->first_tsc,
	    .exit_tsc = ev->tsc,
	    .total_tsc = ev->tsc >= th->first_tsc ? ev->tsc - th->first_tsc : 0,
	    .enter = NULL,
	    .exit = ev,
	};

	cs_clip(cs, th, &c);
	/*
	 * With nothing open, it was running since the thread's first event: every call that
	 * closed at depth 0 before it ran inside it, and so does it inside a later one.
	 */
	if (!cs_depth(th)) {
		c.child_tsc = th->root_child_tsc;
		th->root_child_tsc = c.total_tsc;
	}
	return cs_report(cs, th, &c);
}

/* Counters and the thread's clock for an event that is being taken. */
static void cs_clock(struct callstack *cs, struct cs_thread *th, uint64_t tsc)
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

static void cs_note_depth(struct callstack *cs, const struct cs_thread *th)
{
	if (cs_depth(th) > cs->stats.max_depth)
		cs->stats.max_depth = cs_depth(th);
}

/* Room for one more thread: the table stays at most half full. Returns 0 or -ENOMEM. */
static int cs_grow(struct callstack *cs)
{
	struct cs_thread **slots;
	size_t n, i, j;

	if (cs->nthreads + 1 <= cs->nslots / 2)
		return 0;
	if (cs->nslots > SIZE_MAX / 2 / sizeof(*slots))
		return -ENOMEM;
	n = cs->nslots * 2;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < cs->nslots; i++) {
		if (!cs->slots[i])
			continue;
		for (j = cs_hash(cs->slots[i]->key, n); slots[j]; j = (j + 1) & (n - 1))
			;
		slots[j] = cs->slots[i];
	}
	free(cs->slots);
	cs->slots = slots;
	cs->nslots = n;
	return 0;
}

/* Thread key's struct, found or made on first sight. NULL when out of memory. */
static struct cs_thread *cs_thread_get(struct callstack *cs, uint64_t key)
{
	struct cs_thread *th = cs_find(cs, key);
	size_t i;

	if (!th) {
		if (cs_grow(cs))
			return NULL;
		th = calloc(1, sizeof(*th));
		if (!th)
			return NULL;
		th->key = key;
		th->phase = cs->since ? CS_BEFORE : CS_IN;
		for (i = cs_hash(key, cs->nslots); cs->slots[i]; i = (i + 1) & (cs->nslots - 1))
			;
		cs->slots[i] = th;
		cs->nthreads++;
	}
	cs->last = th;
	return th;
}

/*
 * The event's thread's struct (cs_thread_get()). Events come thread after thread: the last
 * one's is taken at once, without a call.
 */
static inline struct cs_thread *cs_thread(struct callstack *cs, const struct xfdr_event *ev)
{
	uint64_t key = cs_key(ev->pid, ev->thread_id);

	return cs->last && cs->last->key == key ? cs->last : cs_thread_get(cs, key);
}

/*
 * The thread's first event past the window: its open calls end at the window's end, and the
 * thread is past it. Returns 0 or -ECANCELED.
 */
static int cs_leave_window(struct callstack *cs, struct cs_thread *th)
{
	int rc;

	while (th->top) {
		rc = cs_pop(cs, th, cs->until, NULL, CALL_CUT_END, CALL_UNKNOWN_FUNCTION);
		if (rc)
			return rc;
	}
	th->phase = CS_PAST;
	return 0;
}

/*
 * Where ev, of th, is against the window, th's phase moved on to it. Returns 1 to take ev, 0 to
 * leave it out (past the window), or -ECANCELED.
 */
static int cs_gate_slow(struct callstack *cs, struct cs_thread *th, const struct xfdr_event *ev)
{
	uint32_t i;
	int rc;

	if (th->phase == CS_BEFORE && ev->tsc >= cs->since) {
		/* The open calls' children so far ran before the window. */
		for (i = 0; i < th->top; i++)
			th->frames[i].child_tsc = 0;
		th->root_child_tsc = 0;
		th->phase = CS_IN;
	}
	if (th->phase == CS_IN && ev->tsc > cs->until) {
		rc = cs_leave_window(cs, th);
		if (rc)
			return rc;
	}
	if (th->phase != CS_PAST)
		return 1;
	if (ev->type == XFDR_EVENT_FUNCTION)
		cs->stats.outside++;
	return 0;
}

static inline int cs_gate(struct callstack *cs, struct cs_thread *th, const struct xfdr_event *ev)
{
	if (__builtin_expect(th->phase == CS_IN && ev->tsc <= cs->until, 1))
		return 1;
	return cs_gate_slow(cs, th, ev);
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
static int cs_context(struct callstack *cs, const struct xfdr_event *ev)
{
	struct xfdr_stack_context sc;
	struct cs_thread *th;
	struct cs_frame *f;
	uint32_t unnamed, i;
	int rc;

	if (xfdr_stack_context_decode(ev->payload, ev->payload_bytes, ev->big_endian, &sc, NULL) ||
	    sc.depth - sc.id_count > CALLSTACK_UNNAMED_MAX) {
		cs->stats.contexts_invalid++;
		return 0;
	}
	th = cs_thread(cs, ev);
	if (!th)
		return -ENOMEM;
	rc = cs_gate(cs, th, ev);
	if (rc <= 0)
		return rc;
	if (cs_depth(th) || !sc.depth) {
		cs_clock(cs, th, ev->tsc);
		cs->stats.contexts++;
		if (!cs_context_agrees(th, &sc))
			cs->stats.contexts_differ++;
		return 0;
	}
	unnamed = sc.depth - sc.id_count;
	rc = cs_reserve(th, sc.id_count + (unnamed ? 1u : 0u), sc.depth);
	if (!rc)
		rc = cs_count_reserve(th, sc.id_count);
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
		f->enter.function_id = i < sc.id_count ? sc.ids[i] : CALL_UNKNOWN_FUNCTION;
		if (i < sc.id_count)
			cs_count_add(th, sc.ids[i], 1);
		f->enter.tsc = ev->tsc;
		f->enter.cpu = ev->cpu;
		f->enter.thread_id = ev->thread_id;
		f->enter.pid = ev->pid;
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

int callstack_feed(struct callstack *cs, const struct xfdr_event *ev)
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
	th = cs_thread(cs, ev);
	if (!th)
		return -ENOMEM;
	rc = cs_gate(cs, th, ev);
	if (rc <= 0)
		return rc;

	if (ev->action == XFDR_FN_ENTER || ev->action == XFDR_FN_ENTER_ARGS) {
		rc = cs_reserve(th, 1, 1);
		if (!rc)
			rc = cs_count_reserve(th, 1);
		if (rc)
			return rc;
		cs_clock(cs, th, ev->tsc);
		cs->stats.function_events++;
		f = &th->frames[th->top++];
		f->enter = *ev;
		cs_count_add(th, ev->function_id, 1);
		f->child_tsc = 0;
		f->unnamed = 0;
		f->from_context = 0;
		cs_note_depth(cs, th);
		return 0;
	}

	cs_clock(cs, th, ev->tsc);
	cs->stats.function_events++;
	end = ev->action == XFDR_FN_TAIL_EXIT ? CALL_TAIL_EXIT : CALL_EXIT;
	/* The usual exit: the innermost frame's (the search below would stop there at once). */
	if (th->top && (th->frames[th->top - 1].unnamed ||
			th->frames[th->top - 1].enter.function_id == ev->function_id))
		return cs_pop(cs, th, ev->tsc, ev, end, ev->function_id);
	/*
	 * The nearest frame of the function; an unnamed frame stops the search: its calls are
	 * inside every named frame below it, so the exit must be the innermost one's. With
	 * neither on the stack there is no need to look.
	 */
	if (!th->has_unnamed && !cs_open_frames(th, ev->function_id))
		return cs_no_entry(cs, th, ev, end);
	for (i = th->top; i > 0; i--)
		if (th->frames[i - 1].unnamed ||
		    th->frames[i - 1].enter.function_id == ev->function_id)
			break;
	if (!i)
		return cs_no_entry(cs, th, ev, end);
	/* The frames above the match never saw their exit: this one closes them too. */
	while (th->top > i) {
		rc = cs_pop(cs, th, ev->tsc, ev, CALL_UNWOUND, CALL_UNKNOWN_FUNCTION);
		if (rc)
			return rc;
	}
	return cs_pop(cs, th, ev->tsc, ev, end, ev->function_id);
}

static int cs_finish(struct callstack *cs, struct cs_thread *th)
{
	int rc;

	while (th->top) {
		rc = cs_pop(cs, th, th->last_tsc, NULL, CALL_NO_EXIT, CALL_UNKNOWN_FUNCTION);
		if (rc)
			return rc;
	}
	th->active = 0;
	th->first_tsc = 0;
	th->last_tsc = 0;
	th->root_child_tsc = 0;
	th->phase = cs->since ? CS_BEFORE : CS_IN;
	return 0;
}

int callstack_finish_thread(struct callstack *cs, uint32_t pid, uint32_t thread_id)
{
	struct cs_thread *th = cs_find(cs, cs_key(pid, thread_id));

	return th ? cs_finish(cs, th) : 0;
}

/*
 * The thread with the lowest key above *after (any key when first), or NULL: walking the
 * threads in order with no memory to sort them, so finishing cannot fail for want of it.
 */
static struct cs_thread *cs_next_thread(const struct callstack *cs, uint64_t after, int first)
{
	struct cs_thread *best = NULL;
	size_t i;

	for (i = 0; i < cs->nslots; i++) {
		struct cs_thread *th = cs->slots[i];

		if (th && (first || th->key > after) && (!best || th->key < best->key))
			best = th;
	}
	return best;
}

static int cmp_thread_key(const void *a, const void *b)
{
	uint64_t x = (*(struct cs_thread *const *)a)->key, y = (*(struct cs_thread *const *)b)->key;

	return x < y ? -1 : x > y;
}

int callstack_finish(struct callstack *cs)
{
	struct cs_thread **order = malloc((cs->nthreads ? cs->nthreads : 1) * sizeof(*order));
	struct cs_thread *th;
	size_t i, n = 0;
	int rc = 0;

	if (order) {
		for (i = 0; i < cs->nslots; i++)
			if (cs->slots[i])
				order[n++] = cs->slots[i];
		qsort(order, n, sizeof(*order), cmp_thread_key);
		for (i = 0; i < n && !rc; i++)
			rc = cs_finish(cs, order[i]);
		free(order);
		return rc;
	}
	for (th = cs_next_thread(cs, 0, 1); th && !rc; th = cs_next_thread(cs, th->key, 0))
		rc = cs_finish(cs, th);
	return rc;
}

void callstack_set_window(struct callstack *cs, uint64_t since, uint64_t until)
{
	cs->since = since;
	cs->until = until;
}

void callstack_get_stats(const struct callstack *cs, struct callstack_stats *out)
{
	*out = cs->stats;
}

uint32_t callstack_depth(const struct callstack *cs, uint32_t pid, uint32_t thread_id)
{
	const struct cs_thread *th = cs_find(cs, cs_key(pid, thread_id));

	return th ? cs_depth(th) : 0;
}

const struct xfdr_event *callstack_frame(const struct callstack *cs, uint32_t pid,
					 uint32_t thread_id, uint32_t depth)
{
	const struct cs_thread *th = cs_find(cs, cs_key(pid, thread_id));
	const struct cs_frame *f;

	if (!th || depth >= cs_depth(th))
		return NULL;
	f = &th->frames[cs_index(th, depth)];
	return f->from_context ? NULL : &f->enter;
}

int callstack_frame_info(const struct callstack *cs, uint32_t pid, uint32_t thread_id,
			 uint32_t depth, struct callstack_frame_info *out)
{
	const struct cs_thread *th = cs_find(cs, cs_key(pid, thread_id));
	const struct cs_frame *f;

	if (!th || depth >= cs_depth(th))
		return -1;
	f = &th->frames[cs_index(th, depth)];
	*out = (struct callstack_frame_info){
	    .function_id = f->unnamed ? CALL_UNKNOWN_FUNCTION : f->enter.function_id,
	    .flags = f->from_context			     ? CALL_FROM_CONTEXT
		     : f->enter.action == XFDR_FN_ENTER_ARGS ? CALL_ARGS
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

int callstack_pair_trace(struct xfdr_trace *t, call_fn on_call, void *ctx,
			 struct callstack_stats *stats, struct xfdr_error *err)
{
	struct callstack *cs;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	int have_thread = 0;
	uint32_t thread_id = 0, pid = 0;
	int rc, ret = -1;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	cs = callstack_create(on_call, ctx);
	if (!cs)
		return cs_no_memory(t, err, 0, "the call-stack pairer");
	if (xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, err))
		goto out;
	while ((rc = xfdr_events_next(&it, &ev, err)) > 0) {
		/* XFDR_ORDER_THREAD: a thread's events are all together, so it is done. */
		if (have_thread && (ev.thread_id != thread_id || ev.pid != pid) &&
		    callstack_finish_thread(cs, pid, thread_id)) {
			ret = 1;
			goto out;
		}
		have_thread = 1;
		thread_id = ev.thread_id;
		pid = ev.pid;
		rc = callstack_feed(cs, &ev);
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
	ret = callstack_finish(cs) ? 1 : 0;
out:
	if (stats)
		callstack_get_stats(cs, stats);
	callstack_destroy(cs);
	return ret;
}
