/*
 * analysis/callstack.h - pair function entries with their exits: the calls of a trace.
 *
 * The one call-stack pairing every verb shares (latency tables, stacks, flame graphs,
 * timelines), as uftrace's commands share utils/fstack.c. A pairer is fed function events,
 * each thread's in that thread's time order (XFDR_ORDER_THREAD gives exactly that; events of
 * different threads may be interleaved in any way), keeps one stack per thread ((pid, thread
 * id): two processes may use the same thread id) and
 * reports every completed call to a callback, innermost calls first.
 *
 * Rules (what llvm-xray account does with sibling-call deduction, plus what it drops):
 *   Entry, Entry_Args of F   push a frame for F.
 *   Exit, Tail_Exit of F     pop down to the nearest (innermost) frame of F. The frames above
 *                            it never had their exit recorded: they are reported first,
 *                            innermost first, closed at the exit's TSC, as CALL_UNWOUND.
 *                            Then F is reported as ended by that exit.
 *                            If F is not on the stack at all, the exit is reported alone as
 *                            CALL_NO_ENTRY (the trace began inside F, or the buffers
 *                            holding its entry were overwritten or dropped) and the stack is
 *                            left as it was. Such an exit is never dropped silently.
 *   XFDRSTAK stack context   (the custom event the runtime writes after the preamble of a
 *                            buffer that begins inside calls, format.h) when the thread has no
 *                            open frame (its earlier buffers are not in the trace: reused in
 *                            ring mode, or older than a snapshot's window): the frames are
 *                            pushed, outermost first, as calls whose entry is not recorded
 *                            (CALL_FROM_CONTEXT), begun at the context's TSC. Calls the
 *                            context counts but does not name (depth > id_count) become frames
 *                            of unknown function: an exit that reaches one (no named frame of
 *                            its function above it) closes the innermost of them and names it.
 *                            When frames are open (the earlier buffers are in the trace) the
 *                            events already paired win: the context is only compared with the
 *                            open frames (depth and ids) and a disagreement counted. A context
 *                            that does not decode is counted and ignored.
 *   other custom events      ignored (counted).
 *   finish                   every frame still open is reported as CALL_NO_EXIT, closed
 *                            at the last TSC seen on its thread, innermost first, threads by
 *                            ascending (pid, thread id).
 *
 * Times: each call carries its entry and exit TSC, its total (exit - entry) and the time of
 * its direct children, so that self time = total - children, as `account` needs. A call with
 * no entry is taken to have begun at the first TSC seen on its thread; when the stack is empty
 * at its exit, every call that completed at depth 0 before it, back to and including the
 * previous such exit, is counted as its child (it was running before and after them).
 *
 * Memory: a hash table of thread pointers, then per thread seen one small struct and a stack
 * that grows by doubling with realloc(); depth is bounded only by memory. The unnamed calls
 * of a context take one frame however many they are; a context with more than
 * CALLSTACK_UNNAMED_MAX of them is taken as corrupt (each would be reported one by
 * one). Once a thread's stack is as deep as it will get, feeding never allocates. An
 * allocation failure is an -ENOMEM return that leaves the pairer as it was, never a crash.
 *
 * Context: a pairer is plain single-threaded data; one thread at a time may use it.
 */
#ifndef XFDR_ANALYSIS_CALLSTACK_H
#define XFDR_ANALYSIS_CALLSTACK_H

#include <stdint.h>

#include "xfdr/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a call ended, and how it began. Exactly one of the end bits (CALL_END_MASK) is set. */
enum call_flag {
	CALL_EXIT = 1u << 0,	  /* ended by its own Exit record */
	CALL_TAIL_EXIT = 1u << 1, /* ended by its own Tail_Exit record */
	CALL_UNWOUND = 1u << 2,	  /* its exit was not recorded: closed by the exit of a
					  caller further down its stack (a deduced sibling) */
	CALL_NO_EXIT = 1u << 3,	  /* still open when the pairer was finished */
	CALL_NO_ENTRY = 1u << 4,  /* an exit with no matching entry on the stack; with
					  CALL_EXIT or CALL_TAIL_EXIT */
	CALL_ARGS = 1u << 5,	  /* began with Entry_Args */
	/* Began before its thread's first buffer in the trace: its frame came from a stack
	   context, its entry is not recorded (enter NULL, enter_tsc the context's). */
	CALL_FROM_CONTEXT = 1u << 6,
	/* A window (callstack_set_window()): it began before the window's start and is shown
	   from there (enter_tsc is the start; its entry event, if any, is still enter). */
	CALL_CUT_BEGIN = 1u << 7,
	/* An end: still open at the window's end, shown up to there (exit NULL). */
	CALL_CUT_END = 1u << 8,
};

/* The function id of a call a stack context counted but did not name, until an exit names it. */
#define CALL_UNKNOWN_FUNCTION UINT32_MAX
/* Unnamed calls (depth - id_count) a stack context may have and still be taken. */
#define CALLSTACK_UNNAMED_MAX (1u << 24)
#define CALL_END_MASK (CALL_EXIT | CALL_TAIL_EXIT | CALL_UNWOUND | CALL_NO_EXIT | CALL_CUT_END)

/*
 * A completed call, as the callback sees it. The struct and the events it points to are only
 * valid during the callback: copy what must outlive it. The events' own pointers (arguments,
 * through xfdr_event_arg()) point into the trace, which must still be open.
 */
struct call {
	uint32_t function_id; /* CALL_UNKNOWN_FUNCTION: an unnamed call of a stack context
				 that no exit named (CALL_UNWOUND or CALL_NO_EXIT) */
	uint32_t thread_id;
	uint32_t pid;	    /* 0 in files without Pid records */
	uint16_t cpu;	    /* of the entry record; of the exit record with CALL_NO_ENTRY; of
			       the context with CALL_FROM_CONTEXT */
	uint32_t depth;	    /* frames below it on its thread's stack: 0 = outermost recorded. With
			       CALL_NO_ENTRY: the frames open when the exit came (how many
			       unrecorded callers it had is not known) */
	unsigned flags;	    /* enum call_flag bits */
	uint64_t enter_tsc; /* with CALL_NO_ENTRY: the first TSC seen on the thread; with
			       CALL_FROM_CONTEXT: the context's (it began no later) */
	uint64_t exit_tsc;  /* with CALL_NO_EXIT: the last TSC seen on the thread */
	uint64_t total_tsc; /* exit_tsc - enter_tsc; 0 if the clock went backwards */
	uint64_t child_tsc; /* sum of the total_tsc of its direct children (saturating) */
	const struct xfdr_event *enter; /* its Entry/Entry_Args event; NULL with NO_ENTRY or
					   FROM_CONTEXT */
	const struct xfdr_event *exit;	/* the Exit/Tail_Exit that closed it: its own, or with
					   CALL_UNWOUND its caller's; NULL with NO_EXIT */
};

/* Time in the call itself, not in recorded children; 0 if the children seem longer. */
static inline uint64_t call_self_tsc(const struct call *c)
{
	return c->total_tsc > c->child_tsc ? c->total_tsc - c->child_tsc : 0;
}

struct callstack_stats {
	uint64_t function_events;  /* Entry, Entry_Args, Exit and Tail_Exit events taken */
	uint64_t ignored_events;   /* custom events other than XFDRSTAK (and unknown actions) */
	uint64_t calls;		   /* calls reported, of every kind below */
	uint64_t unwound;	   /* of which CALL_UNWOUND */
	uint64_t no_exit;	   /* of which CALL_NO_EXIT */
	uint64_t no_entry;	   /* of which CALL_NO_ENTRY (unmatched exits) */
	uint64_t from_context;	   /* of which CALL_FROM_CONTEXT */
	uint64_t cut_begin;	   /* of which CALL_CUT_BEGIN */
	uint64_t cut_end;	   /* of which CALL_CUT_END */
	uint64_t outside;	   /* function events after a thread's window ended: not taken */
	uint64_t contexts;	   /* XFDRSTAK stack-context events taken */
	uint64_t contexts_seeded;  /* of which rebuilt the stack of a thread with no open frame */
	uint64_t contexts_differ;  /* of which disagreed with the open frames (left as they were) */
	uint64_t contexts_invalid; /* XFDRSTAK events not taken: not decodable, or more than
				      CALLSTACK_UNNAMED_MAX unnamed calls */
	uint64_t tsc_backwards;	   /* events with a lower TSC than their thread's previous one */
	uint32_t max_depth;	   /* most frames ever open at once on one thread */
	uint32_t threads;	   /* distinct threads ((pid, thread id)) seen */
};

struct callstack; /* the pairer: its stacks, the callback, the counters */

/*
 * The callback: one completed call. Return 0 to go on; anything else stops the feed or finish
 * that called it, which then returns -ECANCELED (keep the reason in ctx). It must not feed or
 * finish the pairer that called it.
 */
typedef int (*call_fn)(void *ctx, const struct call *call);

/*
 * callstack_create - a pairer with no thread seen yet, reporting to on_call(ctx, ...);
 * on_call may be NULL (only the counters are wanted). Returns NULL when out of memory.
 */
struct callstack *callstack_create(call_fn on_call, void *ctx);

/* Frees everything. Open frames are dropped without being reported (finish first). NULL ok. */
void callstack_destroy(struct callstack *cs);

/*
 * callstack_set_window - report only what happened from since to until (TSCs, inclusive), as
 * seen through that window. Before any event is fed; without it, everything is reported.
 *   - A thread's events before since are taken (they build its stack) but the calls they
 *     complete are not reported, and count toward no caller's children.
 *   - A call that began before since is reported from since (enter_tsc; CALL_CUT_BEGIN), its
 *     total and its caller's children from there.
 *   - At a thread's first event after until, its open calls end at until, innermost first
 *     (CALL_CUT_END: their exits, if any, are not looked at), and the rest of the thread's
 *     events are not taken (stats.outside counts its function events).
 *   - Calls still open when a thread ends before since are not reported.
 */
void callstack_set_window(struct callstack *cs, uint64_t since, uint64_t until);

/*
 * callstack_feed - take one event (the event is only read during the call). A custom
 * event is taken as a stack context when its payload is tagged XFDRSTAK (decoded in the byte
 * order ev->big_endian gives).
 * Returns
 *   0           taken; the calls it completed, if any, were reported.
 *   -ENOMEM     no memory for a new thread or a deeper stack (or more than UINT32_MAX
 *               frames): the event was not taken, nothing was reported or counted, the
 *               pairer is as before and the same event may be fed again.
 *   -ECANCELED  the callback returned nonzero. Every call reported so far has left the
 *               stack, but the event may be only partly applied: stop and destroy.
 */
int callstack_feed(struct callstack *cs, const struct xfdr_event *ev);

/*
 * callstack_finish_thread - report the open frames of one thread as CALL_NO_EXIT,
 * innermost first, and forget the thread's first and last TSC: the thread starts afresh if
 * fed again. For a walk in XFDR_ORDER_THREAD, call it when the thread id changes, so that each
 * thread's calls come out together. Returns 0, or -ECANCELED (the callback stopped it; the
 * frames not reported are still open).
 */
int callstack_finish_thread(struct callstack *cs, uint32_t pid, uint32_t thread_id);

/* callstack_finish_thread() for every thread, by ascending (pid, thread id). Same returns. */
int callstack_finish(struct callstack *cs);

/* The counters so far. */
void callstack_get_stats(const struct callstack *cs, struct callstack_stats *out);

/* Frames now open on a thread (0 for a thread never seen), those from a context included. */
uint32_t callstack_depth(const struct callstack *cs, uint32_t pid, uint32_t thread_id);

/*
 * The entry event of the open frame at depth (0 = outermost) of a thread, NULL if there is
 * none or the frame came from a stack context. Valid until the next feed or finish. For
 * showing a stack, e.g. where a crash cut in.
 */
const struct xfdr_event *callstack_frame(const struct callstack *cs, uint32_t pid,
					 uint32_t thread_id, uint32_t depth);

/* An open frame, as callstack_frame_info() describes it. */
struct callstack_frame_info {
	uint32_t function_id; /* CALL_UNKNOWN_FUNCTION: a call a context did not name */
	unsigned flags;	      /* CALL_FROM_CONTEXT, CALL_ARGS */
	/* Unnamed frames from this depth up, this one included (0 for a named frame): a caller
	   showing a stack can skip past them at once. */
	uint32_t unnamed_run;
	uint64_t enter_tsc;		/* its entry's TSC; with CALL_FROM_CONTEXT the context's */
	const struct xfdr_event *enter; /* NULL with CALL_FROM_CONTEXT */
};

/*
 * callstack_frame_info - the open frame at depth (0 = outermost) of a thread, in *out.
 * Returns 0, or -1 when the thread has no frame at that depth. Valid until the next feed or
 * finish; may be called from the callback (the frames below the reported call are open).
 */
int callstack_frame_info(const struct callstack *cs, uint32_t pid, uint32_t thread_id,
			 uint32_t depth, struct callstack_frame_info *out);

/*
 * callstack_pair_trace - pair a whole trace: walk its events in XFDR_ORDER_THREAD, finish
 * each thread when the next begins, and report every call to on_call(ctx, ...): per thread by
 * ascending (pid, thread id), calls in the order they complete. stats (may be NULL) gets the
 * counters in every case. The trace is verified first, so an invalid trace reports no call at all.
 * Returns 0 when everything was paired, 1 when the callback stopped the walk, or -1 with err
 * filled for an invalid trace or when out of memory ("NAME: offset N: expected ..., found
 * ...", the offset of the event that needed the memory).
 */
int callstack_pair_trace(struct xfdr_trace *t, call_fn on_call, void *ctx,
			 struct callstack_stats *stats, struct xfdr_error *err);

#ifdef __cplusplus
}
#endif

#endif /* XFDR_ANALYSIS_CALLSTACK_H */
