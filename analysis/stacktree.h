/*
 * analysis/stacktree.h - the call-stack tree `xfdr stack` and `xfdr flame` both draw from.
 *
 * Every call the shared pairer (analysis/callstack.h) reports is put at the node of its
 * stack: the frames open below it (outermost first) and the call itself. A node is one
 * distinct stack; it sums the self and the total time of the calls whose stack is exactly
 * that one. The tree therefore grows with the distinct stacks of the trace, never with its
 * records or calls.
 *
 * Frames are keyed by their printed name, not their function id, so that two ids the .map
 * gives the same name (a static function in two files) are one frame, as a flame graph shows
 * them. Names:
 *   the .map's name; "#ID" for an id it does not name (or without a map);
 *   "[unknown]" for calls a stack context counted but did not name: a run of them, however
 *       deep, is one frame (the pairer keeps them as one), the call itself included;
 *   "thread N" / "thread N (NAME)" (with "pid P " before it when the file has Pid records)
 *       as the outermost frame with per_thread;
 *   the process's own (stree_set_input()) outermost of all when the tree is of several
 *       traces, such as those of a process tree.
 * ';' in a name becomes ':' and control characters '?', so that a name never breaks a
 * folded line ("frame;frame;frame VALUE").
 *
 * Time: stree_build() shares a trace's threads out among workers, one per CPU online, each
 * pairing whole threads into a tree of its own (a thread's stacks are found in one tree) with
 * the names all share; their trees are then added into this one, or kept as runs.
 *
 * Memory: the tree in memory holds at most node_limit nodes (STREE_NODE_LIMIT, about 20 MiB
 * with its hash; workers share the limit). When a call would need more, the tree is sorted and
 * written as a run to an unlinked temporary file in $TMPDIR (else /tmp), and a new tree begins with
 * the open frames of the thread being paired; at STREE_RUNS_MAX runs, the smaller half of them are
 * merged into the new one (so a record is written again a few times, not once per run).
 * stree_walk() merges the runs and the tree in memory into one depth-first walk, so the result is
 * the same whatever the limit, and memory stays flat however many distinct stacks the trace has.
 *
 * Incomplete calls (no exit, no entry, unwound by a caller's exit, begun before the trace in
 * a stack context) are real time in a flight recorder: they are kept, at the stack where the
 * pairer saw them, with the times the pairer gives them; stree_incomplete_note() says how many
 * there were. An exit without its entry at depth 0 stands beside the calls it was running
 * around, not above them (the pairer cannot know they were its callees).
 */
#ifndef XFDR_ANALYSIS_STACKTREE_H
#define XFDR_ANALYSIS_STACKTREE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/callstack.h"
#include "analysis/window.h"
#include "analysis/progress.h"
#include "xfdr/reader.h"

#define STREE_NONE UINT32_MAX
#define STREE_NODE_LIMIT (1u << 18) /* nodes in memory before a run is written */
/*
 * Runs kept before the smaller half are merged: the merge is a heap, so many runs cost little,
 * and each merge before the end rewrites what it merges (16 made the 1 GiB bench trace's 217
 * runs rewrite each record about 5 times); an open file each.
 */
#define STREE_RUNS_MAX 128

enum stree_kind {
	STREE_ROOT = 0,	    /* node 0: no frame, the whole trace */
	STREE_FUNCTION = 1, /* a named or numbered function */
	STREE_UNKNOWN = 2,  /* "[unknown]": calls a stack context did not name */
	STREE_THREAD = 3,   /* the per-thread root frame */
	STREE_PROCESS = 4,  /* the per-trace root frame (stree_set_input()) */
};

struct stree_node {
	uint32_t parent;    /* STREE_NONE for the root */
	uint32_t name;	    /* stree_name() */
	uint32_t child;	    /* the callee whose name sorts first (set by stree_finish()) */
	uint32_t sibling;   /* the next callee of the same parent in name order (likewise) */
	uint32_t depth;	    /* 0 for the root, 1 for the outermost frames */
	uint32_t kind;	    /* enum stree_kind */
	uint64_t calls;	    /* calls whose stack is exactly this one */
	uint64_t self_tsc;  /* the sum of their self time (saturating) */
	uint64_t total_tsc; /* the sum of their total time (saturating) */
	uint64_t incl_tsc;  /* self_tsc of this node and every node below (stree_finish()) */
};

struct stree_seg; /* the per-thread cache of the open frames' nodes (stacktree.c) */

/* A frame's callee last looked up: function fid's node (STREE_NONE: none yet). */
struct stree_callee {
	uint32_t fid;
	uint32_t node;
};

/*
 * A slot of the node hash: the node (STREE_NONE when empty) and the high half of its key's
 * hash, so that a probe reads a node only when the tags match (8 bytes a slot: the table of a
 * full tree stays a few MiB).
 */
struct stree_slot {
	uint32_t tag;
	uint32_t node;
};
struct stree_runs; /* the runs written to temporary files (stackwalk.c) */

struct stree {
	/*
	 * A worker's tree (stree_build() over several threads at once): the tree whose names it
	 * shares (their ids are that tree's). NULL: the names are this tree's own.
	 */
	struct stree *home;
	pthread_mutex_t names_lock; /* held to intern a name, or to read them all while building */
	unsigned
	    jobs; /* workers for stree_build(), at most one per thread (0: one per CPU online) */
	struct stree_node *node; /* node[0] is the root */
	uint32_t nodes, node_cap;
	/* hash of (parent, name) -> node, a tag of the hash kept beside it */
	struct stree_slot *slot;
	uint32_t slot_mask;
	/* Interned names: text in one pool, each ended by NUL. */
	char *pool;
	size_t pool_len, pool_cap;
	uint32_t *name_off, *name_len;
	uint32_t name_count, name_cap;
	uint32_t *name_slot; /* hash of text -> name */
	uint32_t name_slot_mask;
	uint64_t *fid_key; /* hash of function id -> name, a cache in front of the .map */
	uint32_t *fid_name;
	uint32_t fid_mask, fid_count;
	uint32_t unknown_name;
	/* Open-frame cache of the thread being paired (threads come one after the other). */
	struct stree_seg *seg;
	uint32_t segs, seg_cap;
	int have_thread;
	uint32_t cur_pid, cur_tid;
	uint32_t cur_base;	       /* the node the thread's stacks hang from */
	struct stree_callee base_last; /* its callee last looked up */
	uint32_t proc_name; /* the name of the trace's process frame (STREE_NONE: none) */
	uint32_t cur_proc;  /* its node (0, the root, when none) */
	struct callstack *cs;

	uint32_t node_limit; /* STREE_NODE_LIMIT unless the caller lowers it before stree_build() */
	uint32_t spill_floor; /* nodes left in memory after the last run (the open frames') */
	struct stree_runs *runs;
	int spill_errno; /* why writing or reading a run failed (0: it did not) */

	const struct xfdr_names *names;
	const struct window *window; /* stree_set_window(); NULL: all */
	int per_thread;
	int no_memory;
	uint64_t incomplete; /* calls with an end or a beginning not recorded (one count each) */
	/* The span of the events: their lowest and highest TSC (within the window), and the
	   earliest WallClockTime of their buffers (when have_span: an event was seen). */
	int have_span;
	uint64_t tsc_lo, tsc_hi;
	uint64_t wall_seconds;
	uint32_t wall_micros;
	struct callstack_stats stats;
	uint32_t max_depth; /* deepest node */
};

/* A node as stree_walk() gives it: what the tree in memory and every run hold of its stack. */
struct stree_frame {
	uint32_t depth;	    /* 0 for the root, 1 for the outermost frames */
	uint32_t name;	    /* stree_name() */
	uint32_t kind;	    /* enum stree_kind */
	uint64_t calls;	    /* as struct stree_node's */
	uint64_t self_tsc;  /* ... */
	uint64_t total_tsc; /* ... */
	uint64_t incl_tsc;  /* ... */
};

/*
 * stree_init - an empty tree, its functions "#ID" until stree_set_input() names them.
 * 0, or -1 (no memory).
 */
int stree_init(struct stree *t, int per_thread);
void stree_free(struct stree *t);

/*
 * stree_set_input - before stree_build() of one more trace: name its functions from names (may
 * be NULL), and when process is not NULL hang all its stacks from a frame of that name (made
 * ';'-safe as every name). 0, or -1 (no memory).
 */
int stree_set_input(struct stree *t, const struct xfdr_names *names, const char *process);

/*
 * stree_set_window - the builds that follow take only w's threads and what w shows of their
 * calls (callstack_set_window(): calls cut at its edges are kept with the time inside, and
 * counted in stats.cut_begin and cut_end). w (NULL: all) must outlive them.
 */
void stree_set_window(struct stree *t, const struct window *w);

/*
 * stree_build - pair the calls of the trace (verified by the caller, or here) and add them;
 * called again for more traces (stree_set_input() first), their calls and counts add up.
 * prog: progress by buffers read (may be NULL). Returns 0, or -1 with err filled: the
 * reader's line for an invalid trace, or "NAME: offset N: expected memory for ..., found ..."
 * when out of memory.
 */
int stree_build(struct stree *t, struct xfdr_trace *tr, const struct progress *prog,
		struct xfdr_error *err);

/* Link each node's callees in name order (bytewise) and fill incl_tsc. 0, or -1 (no memory). */
int stree_finish(struct stree *t);

#define STREE_SKIP 1 /* a visitor's answer: not the callees of this node */

/*
 * stree_visit_fn - one node of the walk: path[0] is the root, path[depth] the node, path[1..]
 * the frames between, outermost first. Returns 0 to go on, STREE_SKIP to leave the node's
 * callees out, anything else to stop the walk, which then returns it.
 */
typedef int (*stree_visit_fn)(void *ctx, const struct stree_frame *path, uint32_t depth);

/*
 * stree_walk - after stree_finish(), every node depth first: the root, then each caller before
 * its callees, callees in name order (bytewise). May be called again (a flame graph measures
 * before it draws). Returns 0, a visitor's stop value, or -1 when a run cannot be read or
 * memory runs out (why: a line such as "reading a run of the stack tree: Input/output error").
 */
int stree_walk(struct stree *t, stree_visit_fn visit, void *ctx, char *why, size_t why_size);

/*
 * stree_compact - after stree_finish(), before walking more than once: the runs and the tree in
 * memory merged into one run, so that each walk reads it alone instead of merging them all
 * again. Nothing when the tree never spilled. 0, or -1 with why filled (as stree_walk()).
 */
int stree_compact(struct stree *t, char *why, size_t why_size);

/*
 * A walk one stack at a time, for walking two trees side by side: stree_cursor_next() gives the
 * next node of stree_walk()'s order, path[0..depth] (the root, the frames between, the node;
 * valid until the next call): 1, 0 at the end, or -1 with why filled (as stree_walk()).
 * stree_cursor_open() returns 0, or -1 with why.
 */
struct stree_cursor;
int stree_cursor_open(struct stree *t, struct stree_cursor **out, char *why, size_t why_size);
int stree_cursor_next(struct stree_cursor *c, const struct stree_frame **path, uint32_t *depth,
		      char *why, size_t why_size);
void stree_cursor_close(struct stree_cursor *c);

/* The text of an interned name, NUL-terminated; *len (when not NULL) its length. */
const char *stree_name(const struct stree *t, uint32_t name, size_t *len);

/*
 * stree_name_functions - for each name k (< t->name_count), the lowest function id the tree
 * gave that name, into fid[k]; STREE_NONE for a name no id has ("[unknown]", thread frames).
 * Ids are those of the last trace built (stree_set_input() forgets the earlier ones).
 */
void stree_name_functions(const struct stree *t, uint32_t *fid);

/*
 * stree_incomplete_note - when calls were incomplete, the line to tell it into note (size
 * bytes): "note: N of M calls are incomplete and kept with the time seen: ...", and 1.
 * 0 (note untouched) when every call was complete.
 */
int stree_incomplete_note(const struct stree *t, char *note, size_t size);

/* Saturating sum: the tree's times never wrap. */
static inline uint64_t stree_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/*
 * stree_ticks_to - ticks in units of 1/per_second seconds at hz ticks per second, rounded to
 * the nearest (UINT64_MAX when it does not fit). hz must not be 0.
 */
uint64_t stree_ticks_to(uint64_t ticks, uint64_t hz, uint64_t per_second);

#endif /* XFDR_ANALYSIS_STACKTREE_H */
