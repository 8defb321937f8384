/*
 * analysis/stacktree.c - the call-stack tree of `xfdr stack` and `xfdr flame`.
 *
 * Design: nodes live in one array, found by an open-addressing hash of (parent, name). The
 * pairer reports a call at depth d with frames 0..d-1 open below it; walking those frames for
 * every call would cost O(depth) hash lookups per call. Instead the nodes of the open frames
 * of the thread being paired are cached as segments (one per named frame, one for a run of
 * unnamed frames, the form the pairer keeps them in). The pairer reports every frame it pops,
 * innermost first, so when a call at depth d is reported, every cached segment at depth >= d
 * belongs to frames already gone: the cache is cut there, and only the frames pushed since
 * (depth valid..d-1) are looked up. Each call then costs O(1) amortised. As a guard against a
 * frame the cache did not see leave, the innermost cached named frame is compared with the
 * pairer's (function id and entry TSC) and the cache is rebuilt from depth 0 on a mismatch.
 * Each cached frame (and the thread's base) also keeps the callee it last looked up: a loop
 * calling one function again finds its node without a hash probe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobs.h"
#include "analysis/stacknames.h"
#include "analysis/stackruns.h"
#include "analysis/stacktree.h"

struct stree_seg {
	uint32_t lo, hi; /* depths covered */
	uint32_t node;	 /* the node of the frames lo..hi (one for an unnamed run) */
	int unknown;	 /* a run of unnamed frames */
	uint32_t fid;	 /* a named frame: its function and entry, for the guard */
	uint64_t enter_tsc;
	struct stree_callee last; /* the callee of node last looked up */
};

/* A frame that looked no callee up yet (no call has an unnamed function's id). */
#define NO_CALLEE ((struct stree_callee){CALL_UNKNOWN_FUNCTION, STREE_NONE})

/* ---- nodes ------------------------------------------------------------------------------ */

static uint64_t node_key(uint32_t parent, uint32_t name)
{
	return (uint64_t)parent << 32 | name;
}

static struct stree_slot *node_slots_new(uint32_t n)
{
	struct stree_slot *s = malloc((size_t)n * sizeof(*s));

	if (s)
		memset(s, 0xff, (size_t)n * sizeof(*s));
	return s;
}

static int nodes_grow_slots(struct stree *t)
{
	uint32_t cap = (t->slot_mask + 1) * 2, i, b;
	struct stree_slot *s;
	uint64_t h;

	if (cap == 0)
		return -1;
	s = node_slots_new(cap);
	if (!s)
		return -1;
	for (i = 1; i < t->nodes; i++) {
		h = stree_hash64(node_key(t->node[i].parent, t->node[i].name));
		for (b = (uint32_t)h & (cap - 1); s[b].node != STREE_NONE; b = (b + 1) & (cap - 1))
			;
		s[b].tag = (uint32_t)(h >> 32);
		s[b].node = i;
	}
	free(t->slot);
	t->slot = s;
	t->slot_mask = cap - 1;
	return 0;
}

/* The callee `name` of parent, made when new. STREE_NONE when out of memory. */
static uint32_t child_of(struct stree *t, uint32_t parent, uint32_t name, uint32_t kind)
{
	uint64_t h = stree_hash64(node_key(parent, name));
	uint32_t b, id, tag = (uint32_t)(h >> 32);
	struct stree_node *n;

	if (name == STREE_NONE)
		return STREE_NONE;
	for (b = (uint32_t)h & t->slot_mask; t->slot[b].node != STREE_NONE;
	     b = (b + 1) & t->slot_mask) {
		id = t->slot[b].node;
		if (t->slot[b].tag == tag && t->node[id].parent == parent &&
		    t->node[id].name == name)
			return id;
	}
	if (t->nodes == t->node_cap) {
		uint32_t cap = t->node_cap * 2;
		struct stree_node *v;

		if (cap <= t->node_cap || cap == STREE_NONE)
			return STREE_NONE;
		v = realloc(t->node, (size_t)cap * sizeof(*v));
		if (!v)
			return STREE_NONE;
		t->node = v;
		t->node_cap = cap;
	}
	id = t->nodes++;
	n = &t->node[id];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->name = name;
	n->kind = kind;
	n->depth = t->node[parent].depth + 1;
	/* Callees are linked by stree_finish(), in name order: none while building. */
	n->child = n->sibling = STREE_NONE;
	if (n->depth > t->max_depth)
		t->max_depth = n->depth;
	t->slot[b].tag = tag;
	t->slot[b].node = id;
	if ((uint64_t)t->nodes * 4 > (uint64_t)t->slot_mask * 3 && nodes_grow_slots(t) < 0)
		return STREE_NONE;
	return id;
}

/* The node array and hash of an empty tree, its root named root_name. 0, or -1. */
static int tree_alloc(struct stree *t, uint32_t root_name)
{
	t->node_cap = 1024;
	t->node = malloc(t->node_cap * sizeof(*t->node));
	t->slot = node_slots_new(2048);
	t->slot_mask = 2047;
	if (!t->node || !t->slot)
		return -1;
	memset(&t->node[0], 0, sizeof(t->node[0]));
	t->node[0].parent = STREE_NONE;
	t->node[0].child = STREE_NONE;
	t->node[0].sibling = STREE_NONE;
	t->node[0].kind = STREE_ROOT;
	t->node[0].name = root_name;
	t->nodes = 1;
	t->base_last = NO_CALLEE;
	return 0;
}

int stree_init(struct stree *t, int per_thread)
{
	memset(t, 0, sizeof(*t));
	t->per_thread = per_thread;
	t->node_limit = STREE_NODE_LIMIT;
	t->proc_name = STREE_NONE;
	if (stree_names_init(t) < 0) {
		memset(t, 0, sizeof(*t));
		return -1;
	}
	if (tree_alloc(t, stree_intern(t, "all", 3)) < 0 || t->node[0].name == STREE_NONE)
		goto fail;
	t->unknown_name = stree_intern(t, "[unknown]", 9);
	if (t->unknown_name == STREE_NONE)
		goto fail;
	return 0;
fail:
	stree_free(t);
	return -1;
}

int stree_set_input(struct stree *t, const struct xfdr_names *names, const char *process)
{
	t->names = names;
	stree_forget_functions(t);
	t->have_thread = 0;
	t->segs = 0;
	t->base_last = NO_CALLEE;
	t->cur_proc = 0;
	t->proc_name = STREE_NONE;
	if (!process)
		return 0;
	t->proc_name = stree_intern(t, process, strlen(process));
	if (t->proc_name != STREE_NONE)
		t->cur_proc = child_of(t, 0, t->proc_name, STREE_PROCESS);
	return t->proc_name == STREE_NONE || t->cur_proc == STREE_NONE ? -1 : 0;
}

void stree_free(struct stree *t)
{
	stree_runs_free(t);
	free(t->node);
	free(t->slot);
	free(t->seg);
	stree_names_free(t);
	memset(t, 0, sizeof(*t));
}

/* ---- adding calls ----------------------------------------------------------------------- */

static uint32_t thread_node(struct stree *t, uint32_t parent, uint32_t pid, uint32_t tid)
{
	const char *tname = xfdr_names_thread(t->names, tid, NULL);
	char label[128];
	int n;

	if (pid)
		n = snprintf(label, sizeof(label), "pid %u thread %u", pid, tid);
	else
		n = snprintf(label, sizeof(label), "thread %u", tid);
	if (tname && *tname)
		n += snprintf(label + n, sizeof(label) - (size_t)n, " (%.*s)", 64, tname);
	if (n >= (int)sizeof(label))
		n = sizeof(label) - 1;
	return child_of(t, parent, stree_intern(t, label, (size_t)n), STREE_THREAD);
}

static struct stree_seg *seg_push(struct stree *t)
{
	if (t->segs == t->seg_cap) {
		uint32_t cap = t->seg_cap ? t->seg_cap * 2 : 64;
		struct stree_seg *s;

		if (cap <= t->seg_cap)
			return NULL;
		s = realloc(t->seg, (size_t)cap * sizeof(*s));
		if (!s)
			return NULL;
		t->seg = s;
		t->seg_cap = cap;
	}
	return &t->seg[t->segs++];
}

/*
 * The node of a call of function fid (named) right above the cached frame k (STREE_NONE: above
 * the thread's base). STREE_NONE when out of memory.
 */
static uint32_t callee_node(struct stree *t, uint32_t k, uint32_t fid)
{
	struct stree_callee *last = k == STREE_NONE ? &t->base_last : &t->seg[k].last;
	uint32_t id;

	if (last->fid == fid && last->node != STREE_NONE)
		return last->node;
	id = child_of(t, k == STREE_NONE ? t->cur_base : t->seg[k].node,
		      stree_function_name(t, fid), STREE_FUNCTION);
	if (id != STREE_NONE)
		*last = (struct stree_callee){fid, id};
	return id;
}

/* Cache the nodes of the open frames up to depth - 1. Returns 0, or -1 when out of memory. */
static int seg_extend(struct stree *t, uint32_t pid, uint32_t tid, uint32_t depth)
{
	uint32_t v = t->segs ? t->seg[t->segs - 1].hi + 1 : 0;

	while (v < depth) {
		uint32_t parent = t->segs ? t->seg[t->segs - 1].node : t->cur_base;
		struct stree_seg *s;
		struct callstack_frame_info f;
		uint32_t hi;

		if (callstack_frame_info(t->cs, pid, tid, v, &f) < 0) {
			/* Cannot happen (the call has depth frames below it); show it as unknown.
			 */
			f.function_id = CALL_UNKNOWN_FUNCTION;
			f.unnamed_run = depth - v;
			f.enter_tsc = 0;
		}
		if (f.function_id == CALL_UNKNOWN_FUNCTION) {
			uint32_t run = f.unnamed_run ? f.unnamed_run : 1;

			hi = run > depth - v ? depth - 1 : v + run - 1;
			if (t->segs && t->seg[t->segs - 1].unknown) {
				t->seg[t->segs - 1].hi = hi;
				v = hi + 1;
				continue;
			}
			s = seg_push(t);
			if (!s)
				return -1;
			*s = (struct stree_seg){v, hi, 0, 1, 0, 0, NO_CALLEE};
			s->node = child_of(t, parent, t->unknown_name, STREE_UNKNOWN);
		} else {
			hi = v;
			s = seg_push(t);
			if (!s)
				return -1;
			*s = (struct stree_seg){v, v, 0, 0, f.function_id, f.enter_tsc, NO_CALLEE};
			s->node =
			    callee_node(t, t->segs >= 2 ? t->segs - 2 : STREE_NONE, f.function_id);
		}
		if (s->node == STREE_NONE) {
			t->segs--;
			return -1;
		}
		v = hi + 1;
	}
	return 0;
}

/*
 * The tree in memory written out as a run (stackwalk.c) and begun again with the nodes of the
 * open frames cached, which the calls still to come hang from. 0, or -1 (t->spill_errno).
 */
static int spill(struct stree *t)
{
	uint32_t base_name = t->node[t->cur_base].name, parent, i;

	if (stree_spill(t) < 0)
		return -1;
	/* The segments keep their names in their nodes: take those before the nodes go. */
	for (i = 0; i < t->segs; i++)
		t->seg[i].node = t->node[t->seg[i].node].name;
	t->nodes = 1;
	t->node[0].child = STREE_NONE;
	memset(t->slot, 0xff, ((size_t)t->slot_mask + 1) * sizeof(*t->slot));
	parent = t->cur_proc = 0;
	if (t->proc_name != STREE_NONE) {
		parent = t->cur_proc = child_of(t, 0, t->proc_name, STREE_PROCESS);
		if (parent == STREE_NONE)
			goto oom;
	}
	t->cur_base = parent;
	if (t->have_thread && t->per_thread) {
		parent = t->cur_base = child_of(t, parent, base_name, STREE_THREAD);
		if (parent == STREE_NONE)
			goto oom;
	}
	/* Every node has a new number: the callees last looked up are forgotten. */
	t->base_last = NO_CALLEE;
	for (i = 0; i < t->segs; i++) {
		t->seg[i].last = NO_CALLEE;
		parent = t->seg[i].node = child_of(
		    t, parent, t->seg[i].node, t->seg[i].unknown ? STREE_UNKNOWN : STREE_FUNCTION);
		if (parent == STREE_NONE)
			goto oom;
	}
	t->spill_floor = t->nodes;
	return 0;
oom:
	t->spill_errno = ENOMEM;
	return -1;
}

static int on_call(void *ctx, const struct call *c)
{
	struct stree *t = ctx;
	struct stree_node *n;
	uint32_t d = c->depth, parent, id;

	/*
	 * This call adds at most its depth and two nodes (its thread's, its own). A tree that
	 * is mostly the open frames (a recursion deeper than the limit) grows instead, by half
	 * the limit between runs, so that it is not written out at every call.
	 */
	if ((uint64_t)t->nodes + d + 2 > t->node_limit &&
	    t->nodes - t->spill_floor > t->node_limit / 2 && spill(t) < 0)
		goto no_memory;
	if (!t->have_thread || c->pid != t->cur_pid || c->thread_id != t->cur_tid) {
		t->have_thread = 1;
		t->cur_pid = c->pid;
		t->cur_tid = c->thread_id;
		t->segs = 0;
		t->cur_base =
		    t->per_thread ? thread_node(t, t->cur_proc, c->pid, c->thread_id) : t->cur_proc;
		t->base_last = NO_CALLEE;
		if (t->cur_base == STREE_NONE) {
			t->have_thread = 0;
			goto no_memory;
		}
	}
	/*
	 * A call that had callees is cached as their frame, at depth d: its node is known (the
	 * frames below it cannot have changed while it was open). Every frame at depth >= d has
	 * been popped (each pop is reported): the cache forgets them.
	 */
	id = STREE_NONE;
	while (t->segs && t->seg[t->segs - 1].lo >= d) {
		const struct stree_seg *s = &t->seg[--t->segs];

		if (s->lo == d && !s->unknown && s->fid == c->function_id &&
		    s->enter_tsc == c->enter_tsc)
			id = s->node;
	}
	if (id != STREE_NONE)
		goto add;
	if (t->segs && t->seg[t->segs - 1].hi >= d)
		t->seg[t->segs - 1].hi = d - 1;
	if (t->segs && !t->seg[t->segs - 1].unknown) {
		struct stree_seg *s = &t->seg[t->segs - 1];
		struct callstack_frame_info f;

		if (s->hi == d - 1 &&
		    (callstack_frame_info(t->cs, c->pid, c->thread_id, s->hi, &f) < 0 ||
		     f.function_id != s->fid || f.enter_tsc != s->enter_tsc))
			t->segs = 0;
	}
	if (seg_extend(t, c->pid, c->thread_id, d) < 0)
		goto no_memory;
	parent = t->segs ? t->seg[t->segs - 1].node : t->cur_base;
	if (c->function_id != CALL_UNKNOWN_FUNCTION)
		id = callee_node(t, t->segs ? t->segs - 1 : STREE_NONE, c->function_id);
	else if (t->segs && t->seg[t->segs - 1].unknown)
		id = parent; /* an unnamed call right above unnamed frames: one more of their run */
	else
		id = child_of(t, parent, t->unknown_name, STREE_UNKNOWN);
	if (id == STREE_NONE)
		goto no_memory;
add:
	n = &t->node[id];
	n->calls++;
	if (c->flags & (CALL_UNWOUND | CALL_NO_EXIT | CALL_NO_ENTRY | CALL_FROM_CONTEXT |
			CALL_CUT_BEGIN | CALL_CUT_END))
		t->incomplete++;
	n->self_tsc = stree_add(n->self_tsc, call_self_tsc(c));
	n->total_tsc = stree_add(n->total_tsc, c->total_tsc);
	return 0;
no_memory:
	t->no_memory = 1;
	return 1;
}

static int no_memory(struct xfdr_trace *tr, struct xfdr_error *err, uint64_t offset,
		     const char *what)
{
	err->offset = offset;
	snprintf(err->text, sizeof(err->text), "%s: offset %llu: expected memory for %s, found %s",
		 xfdr_trace_name(tr), (unsigned long long)offset, what, strerror(ENOMEM));
	return -1;
}

/* Widen the tree's span (struct stree) to an event. */
static void take_span(struct stree *t, const struct xfdr_event *ev)
{
	if (!t->have_span) {
		t->have_span = 1;
		t->tsc_lo = t->tsc_hi = ev->tsc;
		t->wall_seconds = ev->wall_seconds;
		t->wall_micros = ev->wall_micros;
		return;
	}
	if (ev->tsc < t->tsc_lo)
		t->tsc_lo = ev->tsc;
	if (ev->tsc > t->tsc_hi)
		t->tsc_hi = ev->tsc;
	if (ev->wall_seconds < t->wall_seconds ||
	    (ev->wall_seconds == t->wall_seconds && ev->wall_micros < t->wall_micros)) {
		t->wall_seconds = ev->wall_seconds;
		t->wall_micros = ev->wall_micros;
	}
}

/* The same for one more event of a buffer already taken: only its TSC is new. */
static inline void take_tsc(struct stree *t, uint64_t tsc)
{
	if (tsc < t->tsc_lo)
		t->tsc_lo = tsc;
	if (tsc > t->tsc_hi)
		t->tsc_hi = tsc;
}

/* The span cut to the window: calls are shown only within it. */
static void clip_span(struct stree *t)
{
	if (!t->have_span || !t->window)
		return;
	if (t->tsc_lo < t->window->since)
		t->tsc_lo = t->window->since;
	if (t->tsc_hi > t->window->until)
		t->tsc_hi = t->window->until;
	if (t->tsc_lo > t->tsc_hi)
		t->tsc_hi = t->tsc_lo;
}

void stree_set_window(struct stree *t, const struct window *w)
{
	t->window = w;
}

/* The pairer's counts s added to sum. */
static void add_stats(struct callstack_stats *sum, const struct callstack_stats *s)
{
	sum->function_events += s->function_events;
	sum->ignored_events += s->ignored_events;
	sum->calls += s->calls;
	sum->unwound += s->unwound;
	sum->no_exit += s->no_exit;
	sum->no_entry += s->no_entry;
	sum->from_context += s->from_context;
	sum->cut_begin += s->cut_begin;
	sum->cut_end += s->cut_end;
	sum->outside += s->outside;
	sum->contexts += s->contexts;
	sum->contexts_seeded += s->contexts_seeded;
	sum->contexts_differ += s->contexts_differ;
	sum->contexts_invalid += s->contexts_invalid;
	sum->tsc_backwards += s->tsc_backwards;
	sum->threads += s->threads;
	if (s->max_depth > sum->max_depth)
		sum->max_depth = s->max_depth;
}

/* What the workers of one stree_build() share: the trace's threads, taken one at a time. */
struct build_share {
	struct xfdr_trace *tr;
	uint64_t threads, next;	     /* threads of the trace; the next to take (atomic) */
	uint64_t buffers, done;	     /* buffers of the threads taken; those walked (atomic) */
	const struct progress *prog; /* told by worker 0 */
};

struct build_job {
	struct stree *t; /* the worker's tree: the caller's for worker 0 */
	struct build_share *sh;
	struct xfdr_error err;
	int status; /* 0, or -1 with err filled */
};

/* "could not write the stack tree ..." or "expected memory ...", as t->spill_errno says. */
static void build_failed(struct stree *t, struct xfdr_trace *tr, struct xfdr_error *err)
{
	if (t->spill_errno && t->spill_errno != ENOMEM)
		snprintf(err->text, sizeof(err->text),
			 "%s: offset %llu: could not write the stack tree to a temporary file "
			 "in $TMPDIR (else /tmp): %s",
			 xfdr_trace_name(tr), (unsigned long long)err->offset,
			 strerror(t->spill_errno));
	else
		no_memory(tr, err, err->offset, "the stack tree");
}

/*
 * One worker: take threads not taken yet and pair each one's calls into the worker's tree.
 * Sets j->status: 0, or -1 with j->err filled.
 */
static void *build_threads(void *arg)
{
	struct build_job *j = arg;
	struct stree *t = j->t;
	struct build_share *sh = j->sh;
	struct xfdr_thread_info ti;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct callstack_stats st;
	uint64_t i, last_buf, done;
	int rc = 0;

	j->status = -1;
	t->cs = callstack_create(on_call, t);
	if (!t->cs) {
		no_memory(sh->tr, &j->err, 0, "the call-stack pairer");
		return NULL;
	}
	if (t->window)
		callstack_set_window(t->cs, t->window->since, t->window->until);
	while ((i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED)) < sh->threads) {
		xfdr_trace_thread(sh->tr, i, &ti);
		if (!window_has_thread(t->window, ti.pid, ti.thread_id))
			continue;
		if (xfdr_events_begin_thread(sh->tr, i, &it, &j->err) < 0)
			goto out;
		last_buf = UINT64_MAX;
		while ((rc = xfdr_events_next_call(&it, &ev, &j->err)) > 0) {
			if (ev.buffer_index != last_buf) {
				last_buf = ev.buffer_index;
				done = __atomic_add_fetch(&sh->done, 1, __ATOMIC_RELAXED);
				if (!t->home)
					progress_update(sh->prog, done, sh->buffers);
				take_span(t, &ev); /* a buffer's WallClockTime is one */
			} else {
				take_tsc(t, ev.tsc);
			}
			rc = callstack_feed(t->cs, &ev);
			if (rc == -ECANCELED) {
				j->err.offset = ev.offset;
				build_failed(t, sh->tr, &j->err);
				goto out;
			}
			if (rc) {
				no_memory(sh->tr, &j->err, ev.offset,
					  "the call stack of its thread");
				goto out;
			}
		}
		if (rc < 0)
			goto out;
		if (callstack_finish_thread(t->cs, ti.pid, ti.thread_id)) {
			/* on_call() stops the pairer only when out of memory or a run fails. */
			build_failed(t, sh->tr, &j->err);
			goto out;
		}
	}
	j->status = 0;
out:
	callstack_get_stats(t->cs, &st);
	add_stats(&t->stats, &st);
	callstack_destroy(t->cs);
	t->cs = NULL;
	/* Every call is reported: no frame is open any more. */
	t->segs = 0;
	t->have_thread = 0;
	return NULL;
}

/* A worker's tree for t: empty, sharing t's names, input and window. 0, or -1 (no memory). */
static int worker_init(struct stree *w, struct stree *t, uint32_t node_limit)
{
	memset(w, 0, sizeof(*w));
	w->home = t;
	w->per_thread = t->per_thread;
	w->node_limit = node_limit;
	w->unknown_name = t->unknown_name;
	w->names = t->names;
	w->window = t->window;
	w->proc_name = t->proc_name;
	if (tree_alloc(w, t->node[0].name) < 0)
		return -1;
	if (w->proc_name != STREE_NONE) {
		w->cur_proc = child_of(w, 0, w->proc_name, STREE_PROCESS);
		if (w->cur_proc == STREE_NONE)
			return -1;
	}
	return 0;
}

/* Node sums of n added to m's. */
static void node_add(struct stree_node *m, const struct stree_node *n)
{
	m->calls = stree_add(m->calls, n->calls);
	m->self_tsc = stree_add(m->self_tsc, n->self_tsc);
	m->total_tsc = stree_add(m->total_tsc, n->total_tsc);
}

/*
 * Worker w's tree added into t, w left to be freed: its nodes into t's when they fit, else
 * written as a run; its runs become t's. 0, or -1 (t->spill_errno set, ENOMEM included).
 */
static int absorb(struct stree *t, struct stree *w)
{
	uint32_t *to, i;

	add_stats(&t->stats, &w->stats);
	t->incomplete += w->incomplete;
	if (w->have_span) {
		struct xfdr_event e = {.tsc = w->tsc_lo,
				       .wall_seconds = w->wall_seconds,
				       .wall_micros = w->wall_micros};

		take_span(t, &e);
		e.tsc = w->tsc_hi;
		take_span(t, &e);
	}
	if (w->max_depth > t->max_depth)
		t->max_depth = w->max_depth;
	/* Its functions' names, for stree_name_functions(). */
	if (stree_functions_take(t, w) < 0)
		goto oom;
	if ((uint64_t)t->nodes + w->nodes > t->node_limit) {
		if (stree_spill(w) < 0) {
			t->spill_errno = w->spill_errno;
			return -1;
		}
		w->nodes = 1;
	}
	/* A node's caller comes before it in the array: it is mapped first. */
	to = malloc((size_t)w->nodes * sizeof(*to));
	if (!to)
		goto oom;
	to[0] = 0;
	node_add(&t->node[0], &w->node[0]);
	for (i = 1; i < w->nodes; i++) {
		to[i] = child_of(t, to[w->node[i].parent], w->node[i].name, w->node[i].kind);
		if (to[i] == STREE_NONE) {
			free(to);
			goto oom;
		}
		node_add(&t->node[to[i]], &w->node[i]);
	}
	free(to);
	return stree_runs_take(t, w);
oom:
	t->spill_errno = ENOMEM;
	return -1;
}

int stree_build(struct stree *t, struct xfdr_trace *tr, const struct progress *prog,
		struct xfdr_error *err)
{
	struct build_share sh = {.tr = tr, .prog = prog};
	struct build_job job[JOBS_MAX];
	void *arg[JOBS_MAX];
	struct stree *w = NULL;
	struct xfdr_thread_info ti;
	uint32_t limit = t->node_limit;
	uint64_t taken = 0, want, i;
	unsigned jobs, made = 0, ran, k;
	int ret = 0;

	err->offset = 0;
	err->text[0] = '\0';
	if (xfdr_trace_threads(tr, &sh.threads, err) < 0)
		return -1;
	for (i = 0; i < sh.threads; i++) {
		xfdr_trace_thread(tr, i, &ti);
		if (window_has_thread(t->window, ti.pid, ti.thread_id)) {
			taken++;
			sh.buffers += ti.buffers;
		}
	}
	/* t->jobs asks for workers whatever the CPUs; never more than the threads or JOBS_MAX. */
	want = t->jobs && t->jobs < taken ? t->jobs : taken;
	jobs = !t->jobs		 ? jobs_for(want)
	       : want < 1	 ? 1
	       : want > JOBS_MAX ? JOBS_MAX
				 : (unsigned)want;
	if (jobs > 1) {
		/* The workers share the limit on nodes in memory. */
		uint32_t part = limit / jobs ? limit / jobs : 1;

		w = calloc(jobs - 1, sizeof(*w));
		if (!w)
			return no_memory(tr, err, 0, "the stack tree");
		while (made + 1 < jobs && worker_init(&w[made], t, part) == 0)
			made++;
		if (made + 1 < jobs) {
			stree_free(&w[made]);
			ret = no_memory(tr, err, 0, "the stack tree");
		}
		t->node_limit = part;
	}
	for (k = 0; k <= made; k++) {
		job[k] = (struct build_job){.t = k ? &w[k - 1] : t, .sh = &sh};
		arg[k] = &job[k];
	}
	ran = ret ? 0 : jobs_run(build_threads, arg, made + 1);
	t->node_limit = limit;
	for (k = 0; k < ran && !ret; k++)
		if (job[k].status) {
			*err = job[k].err;
			ret = -1;
		}
	for (k = 1; k <= made; k++) {
		if (!ret && absorb(t, &w[k - 1]) < 0) {
			err->offset = 0;
			build_failed(t, tr, err);
			ret = -1;
		}
		stree_free(&w[k - 1]);
	}
	free(w);
	if (!ret)
		clip_span(t);
	return ret;
}

/* Append ", COUNT WHAT" (no comma first) to buf when count is not 0. */
static void note_part(char *buf, size_t size, size_t *n, uint64_t count, const char *what)
{
	int k;

	if (!count || *n >= size)
		return;
	k = snprintf(buf + *n, size - *n, "%s%llu %s", *n ? ", " : "", (unsigned long long)count,
		     what);
	if (k > 0)
		*n += (size_t)k;
}

int stree_incomplete_note(const struct stree *t, char *note, size_t size)
{
	const struct callstack_stats *s = &t->stats;
	char buf[512] = "";
	size_t n = 0;

	if (!t->incomplete)
		return 0;
	note_part(buf, sizeof(buf), &n, s->no_exit,
		  "without an exit (closed at their thread's last event)");
	note_part(buf, sizeof(buf), &n, s->no_entry,
		  "without an entry (begun at their thread's first event)");
	note_part(buf, sizeof(buf), &n, s->unwound, "unwound by a caller's exit");
	note_part(buf, sizeof(buf), &n, s->from_context,
		  "begun before the trace (from a stack context)");
	note_part(buf, sizeof(buf), &n, s->cut_begin,
		  "begun before the window (kept from its start)");
	note_part(buf, sizeof(buf), &n, s->cut_end, "open at the window's end (kept up to it)");
	snprintf(note, size,
		 "note: %llu of %llu calls are incomplete and kept with the time seen: %s",
		 (unsigned long long)t->incomplete, (unsigned long long)s->calls, buf);
	return 1;
}

uint64_t stree_ticks_to(uint64_t ticks, uint64_t hz, uint64_t per_second)
{
	unsigned __int128 v = ((unsigned __int128)ticks * per_second + hz / 2) / hz;

	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}
