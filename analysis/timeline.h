/*
 * analysis/timeline.h - a trace as a timeline: per thread, slices that begin and end in the
 * thread's time order, and the instants between them. What every timeline format draws
 * (trace_event JSON, Perfetto's protobuf), as a library that never prints: the formats are
 * callbacks (struct timeline_ops).
 *
 * Unlike the pairer of analysis/callstack.h, which reports a call once it is complete, a
 * timeline reports a call's beginning when it begins and its end when it ends, so that a
 * format can stream: memory stays bounded by the stack depth, whatever the trace's size.
 *
 * Pairing: every begin gets its end, on its thread, innermost first, with non-decreasing times.
 * Each thread is walked on its own (xfdr_events_begin_thread(), the thread's buffers by
 * WallClockTime) with a stack of its open calls:
 *   Entry, Entry_Args of F   begin F; push.
 *   Exit, Tail_Exit of F     pop down to the innermost open F: the calls above it never had
 *                            their exit recorded and end first, at this exit's time
 *                            (TL_END_UNWOUND). When F is not open, its entry was before the
 *                            thread's first event (the trace began inside F, or the buffers
 *                            with its entry were overwritten or dropped): F begins at the
 *                            thread's first timestamp (TL_BEGIN_BEFORE_TRACE), below every
 *                            other call (so all open calls end first, as above), and ends here.
 *   XFDRSTAK stack context   (the runtime's shadow stack at the start of a buffer; ring mode
 *                            and snapshots leave out the buffers before it) compared with the
 *                            open calls from the outermost: calls it does not name (deeper
 *                            than it holds ids for) agree with any call. When the open calls
 *                            are what it says, nothing changes. Else events are missing in
 *                            between: the calls above the part that agrees end
 *                            (TL_END_CONTEXT, at the context's time) and the calls of the
 *                            context above it begin (TL_BEGIN_CONTEXT). Calls the context
 *                            counts but does not name are TIMELINE_UNNAMED; an exit that
 *                            reaches one (no open call of its function above it) ends it,
 *                            naming the exit's function. Up to TIMELINE_UNNAMED_SLICES_MAX
 *                            of them in a row are a slice each; more are one slice (calls:
 *                            how many), which ends with the last of them. A context that does
 *                            not decode, or counts more than CALLSTACK_UNNAMED_MAX unnamed
 *                            calls, changes nothing and is shown as an event.
 *   end of the thread        calls still open end at the thread's last event's time
 *                            (TL_END_EDGE).
 * To begin an exit without entry at the thread's first timestamp, each thread is walked twice:
 * the first walk only finds those exits (their function ids, innermost first). A format that
 * can put those begins ahead of the thread's other output once the thread is done (Perfetto:
 * in a part of its file written before the thread's) saves the first walk: it gives
 * timeline_ops.before_trace, and each thread is walked once (see there).
 *
 * A window (analysis/window.h; NULL: everything): only its threads are walked. A thread's
 * output begins at its first event with a TSC of at least since; everything after it in the
 * thread's order is kept up to its first event past until, so begins and ends stay balanced.
 * The events before are still walked, without output, so that the calls open when the window
 * begins are known: they begin at the window's first event's time (TL_BEGIN_BEFORE_WINDOW; at
 * since itself when the thread's next event is past until). At the first event past until, the
 * calls open end at until (TL_END_WINDOW), and so do, with ops->before_trace, the calls that
 * began before the trace and end later (their ends come last, with before_trace). A thread
 * with no event in the window and no call open across it is left out.
 *
 * Times: an event with a lower TSC than its thread's previous one is reported at the previous
 * one's time (counted in tsc_backwards), so the calls still nest.
 *
 * Memory: per thread, a stack of the open calls (a run of unnamed calls is one entry) and the
 * function ids of the exits without entry (the calls open when the thread's first event was
 * recorded: a stack depth too); both are reused from thread to thread. Nothing grows with the
 * number of records.
 */
#ifndef XFDR_ANALYSIS_TIMELINE_H
#define XFDR_ANALYSIS_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/progress.h"
#include "analysis/window.h"
#include "xfdr/reader.h"

/* The function id of a run of calls a stack context counted but did not name. */
#define TIMELINE_UNNAMED UINT32_MAX
/*
 * A run of up to this many unnamed calls is that many nested slices; a longer one is one slice
 * standing for all of them, so that a context of millions of unnamed calls cannot turn a few
 * bytes of trace into gigabytes of output.
 */
#define TIMELINE_UNNAMED_SLICES_MAX 128u

/* How a slice began. */
enum tl_begin {
	TL_BEGIN_ENTRY,		/* its Entry or Entry_Args record */
	TL_BEGIN_CONTEXT,	/* a stack context named it: its entry is not in the trace */
	TL_BEGIN_BEFORE_TRACE,	/* its exit came with no entry: it began before the thread's
				   first event, shown at that event's time */
	TL_BEGIN_BEFORE_WINDOW, /* it was open when the window began */
	TL_BEGIN_SPLIT,		/* it was open when the output was cut: it goes on in the next */
};

/* How a slice ended. */
enum tl_end {
	TL_END_EXIT,	  /* its Exit record */
	TL_END_TAIL_EXIT, /* its Tail_Exit record */
	TL_END_UNWOUND,	  /* a caller's exit: its own was not recorded */
	TL_END_CONTEXT,	  /* a stack context said it was no longer open */
	TL_END_EDGE,	  /* still open at the thread's last event */
	TL_END_SPLIT,	  /* open when the output was cut: it goes on in the next */
	TL_END_WINDOW,	  /* open when the window ended: it went on after it */
};

/* What each kind of begin and end is called in the formats' annotations (NULL: the plain one). */
extern const char *const timeline_begin_name[];
extern const char *const timeline_end_name[];

struct timeline_counts {
	uint64_t calls;		   /* slices ended */
	uint64_t unwound;	   /* of which TL_END_UNWOUND */
	uint64_t no_entry;	   /* slices begun TL_BEGIN_BEFORE_TRACE */
	uint64_t no_exit;	   /* slices ended TL_END_EDGE */
	uint64_t from_context;	   /* slices begun TL_BEGIN_CONTEXT */
	uint64_t before_window;	   /* slices begun TL_BEGIN_BEFORE_WINDOW */
	uint64_t contexts_applied; /* stack contexts that changed the open calls */
	uint64_t contexts_invalid; /* stack contexts not taken */
	uint64_t tsc_backwards;	   /* events shown at their thread's previous time */
	uint64_t split;		   /* slices ended TL_END_SPLIT (and begun again after) */
	uint64_t window_end;	   /* slices ended TL_END_WINDOW */
};

/* to += c and to -= c, count by count. */
void timeline_counts_add(struct timeline_counts *to, const struct timeline_counts *c);
void timeline_counts_sub(struct timeline_counts *to, const struct timeline_counts *c);

/*
 * What a format does with the timeline. Every callback gets the ctx given to timeline_walk();
 * tsc is the time to show (never lower than the thread's previous one). Only events inside the
 * window are reported.
 */
struct timeline_ops {
	/* A thread's output begins, at its first event in the window (before that event). */
	void (*thread_begin)(void *ctx, const struct xfdr_thread_info *ti, uint64_t tsc);
	/*
	 * A slice of function fid (TIMELINE_UNNAMED: a run of unnamed calls; calls: how many it
	 * stands for, 1 but for a run shown as one slice) begins. ev: the Entry_Args event whose
	 * arguments it has, else NULL.
	 */
	void (*begin)(void *ctx, uint32_t fid, uint64_t tsc, enum tl_begin how,
		      const struct xfdr_event *ev, uint32_t calls);
	/* The innermost open slice, of fid, ends; exit_fid: the function of the exit that ended
	   an unnamed call (TL_END_EXIT, TL_END_TAIL_EXIT), else TIMELINE_UNNAMED. */
	void (*end)(void *ctx, uint32_t fid, uint64_t tsc, enum tl_end how, uint32_t exit_fid);
	/* A stack context was taken; replaced: it changed the open calls (after the ends and
	   begins it caused), else they agreed with it. */
	void (*context)(void *ctx, const struct xfdr_stack_context *c, uint64_t tsc, int replaced);
	/* Any other custom or typed event; why: the reason a stack context was not taken (its
	   payload is shown instead), else NULL. */
	void (*event)(void *ctx, const struct xfdr_event *ev, uint64_t tsc, const char *why);
	/* Has the output failed (stop walking)? Asked at each buffer and at the end, so a
	   failed output stops the walk within a buffer. NULL: never. */
	int (*failed)(void *ctx);
	/*
	 * NULL: each thread is walked twice, and the calls that began before its first event are
	 * begun (TL_BEGIN_BEFORE_TRACE) right after thread_begin, as the other begins are.
	 * Else each thread is walked once and those calls are found only at their exits: their
	 * ends are reported as the others' are, but not their begins. Instead, at the end of a
	 * thread whose window opened, after its last end, before_trace gets their function ids
	 * (n of them, outermost first): the format must put their begins (TL_BEGIN_BEFORE_TRACE,
	 * at tsc: thread_begin's) right after the thread_begin's output, before anything else of
	 * the thread.
	 */
	void (*before_trace)(void *ctx, const uint32_t *fids, size_t n, uint64_t tsc);
	/*
	 * timeline_walk_by_time() only; NULL: one output. Asked before each event that will be
	 * reported (not before the first, nor right after a cut), with the ctx of the event's
	 * thread: end the output here, and go on in a new one? If so, at that event's time
	 * (never below any thread's previous one): every thread's open slices end (TL_END_SPLIT,
	 * innermost first), next_output() is called with the counts so far (of all threads, the
	 * split ends included), and each thread with open slices begins again in the new output:
	 * thread_begin(), then its slices (TL_BEGIN_SPLIT, outermost first). A thread with none
	 * open begins again at its next event. So every output opens alone.
	 */
	int (*cut)(void *ctx);
	void (*next_output)(void *ctx, const struct timeline_counts *so_far);
};

/*
 * timeline_base_tsc - the lowest TSC of the threads' first events (0 for a trace without
 * events): where a format may start its clock. Returns 0, or -1 with err filled.
 */
int timeline_base_tsc(struct xfdr_trace *t, uint64_t *base, struct xfdr_error *err);

/* timeline_walk() returns: */
enum {
	TIMELINE_OK = 0,
	TIMELINE_FAILED = -1,	 /* the reader failed: err says why */
	TIMELINE_NO_MEMORY = -2, /* nothing was left open to free */
	TIMELINE_STOPPED = -3,	 /* ops->failed() said so */
};

/*
 * timeline_walk - walk every thread of the verified trace t in turn (xfdr_trace_thread()
 * order), reporting its timeline to ops (see the top of the file) through the window w (NULL:
 * all). Progress is by buffers, each walked twice (once with before_trace). counts
 * (may be NULL): what was reported, filled. Returns a TIMELINE_ code.
 */
int timeline_walk(struct xfdr_trace *t, const struct window *w, const struct timeline_ops *ops,
		  void *ctx, const struct progress *prog, struct timeline_counts *counts,
		  struct xfdr_error *err);

/*
 * timeline_walk_thread - timeline_walk() of thread i alone (xfdr_trace_thread() order), so that
 * several threads of one trace can be walked at once, each by a thread of the caller's with
 * its own ops context: once xfdr_trace_threads() has returned (it verifies the trace and
 * orders its buffers), the walks only read the trace. Progress is by the thread's buffers,
 * each walked twice (once with before_trace).
 * Returns a TIMELINE_ code.
 */
int timeline_walk_thread(struct xfdr_trace *t, uint64_t i, const struct window *w,
			 const struct timeline_ops *ops, void *ctx, const struct progress *prog,
			 struct timeline_counts *counts, struct xfdr_error *err);

/*
 * timeline_walk_by_time - the threads of the verified traces t[0, ntraces) walked together, in
 * the order of their events' TSCs (one clock: the machine's), ties to the earlier thread, each
 * reporting its timeline to its own ctx: ctxs[k] for the k-th thread of all (trace 0's threads
 * first, each trace's in xfdr_trace_thread() order), each trace through its window w[j] (w
 * NULL: all). Each thread reports what timeline_walk()
 * reports of it, in the same order, but for the cuts that ops->cut asks for (see there);
 * ops->before_trace must be NULL (each thread is walked twice: first alone, then all of them
 * together). Progress is by buffers, each walked twice. counts (may be NULL): of all threads.
 * Memory: per thread, what timeline_walk() holds for one, and its next event.
 * Returns a TIMELINE_ code.
 */
int timeline_walk_by_time(struct xfdr_trace *const *t, size_t ntraces, const struct window *w,
			  const struct timeline_ops *ops, void *const *ctxs,
			  const struct progress *prog, struct timeline_counts *counts,
			  struct xfdr_error *err);

#endif /* XFDR_ANALYSIS_TIMELINE_H */
