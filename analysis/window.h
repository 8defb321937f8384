/*
 * analysis/window.h - the part of a trace a verb reads: a time window and a set of threads, and
 * what each thread's kept history covers.
 *
 * Times. An edge is given as a TSC ("1234567"), as a time from the trace's start with a unit
 * ("250us", "1.5ms", "2s", "40ns"), or as "snapshot" (the since_tsc of a snapshot's .map); the
 * trace's start is the lowest TSC of the threads' first events (of all the traces read, which
 * share the machine's clock), its rate the header's cycle_frequency. Both edges are inclusive.
 *
 * Spans. In a flight recorder's trace each thread's kept history covers a span of its own: in
 * ring mode a busy thread's oldest buffers were reused long after an idle thread's, and a
 * bounded pool stopped taking events when it ran out. A thread whose history lost its start
 * (ring mode overwrote buffers of it, as the XFDRDROP counts say; in a trace without them, its
 * first kept buffer begins inside calls: an XFDRSTAK stack context) knows nothing before its
 * first event; one that lost its end (events dropped for want of a buffer) knows nothing after
 * its last. (With the counts, a buffer that begins inside calls is no loss: a forked child
 * begins inside its parent's calls.) A thread that lost neither was recorded
 * whole: outside its span it did not run, or ran nothing instrumented.
 *
 * The common window is where every thread's history holds: from the latest first event of the
 * threads that lost their start to the earliest last event of those that lost their end (the
 * trace's own start and end where none did). Analysed in it, idle threads whose history goes
 * back further no longer outweigh busy ones whose history is short.
 *
 * Threads are picked by the trace's thread id (the NewBuffer records') or by the kernel's tid
 * (as ps -L and top -H show it: the .map's thread lines and the XFDRDROP event's entries say
 * which thread id each had).
 *
 * Nothing here prints.
 */
#ifndef XFDR_ANALYSIS_WINDOW_H
#define XFDR_ANALYSIS_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/reader.h"

/* An edge as the user wrote it, before it is known which trace it is read against. */
enum window_edge_kind {
	WINDOW_EDGE_NONE = 0, /* not given: the trace's own start or end */
	WINDOW_EDGE_TSC,      /* tsc */
	WINDOW_EDGE_TIME,     /* ns nanoseconds from the trace's start */
	WINDOW_EDGE_SNAPSHOT, /* the .map's since_tsc */
};

struct window_edge {
	enum window_edge_kind kind;
	uint64_t tsc;
	double ns;
};

/*
 * window_edge_parse - text as an edge into *e. Returns 0, or -1 with why (a static string:
 * what was expected) when it is none of the forms above.
 */
int window_edge_parse(const char *text, struct window_edge *e, const char **why);

/*
 * window_edge_tsc - the TSC of e for a trace that starts at base and ticks at hz (0: 1 GHz),
 * snapshot_tsc for WINDOW_EDGE_SNAPSHOT; dflt for WINDOW_EDGE_NONE. Saturates.
 */
uint64_t window_edge_tsc(const struct window_edge *e, uint64_t base, uint64_t hz,
			 uint64_t snapshot_tsc, uint64_t dflt);

/*
 * A window as the analyses take it: from since to until (TSCs, both inclusive) and, when threads
 * is not NULL, only the nthreads threads it lists (keys window_thread_key(), ascending).
 */
struct window {
	uint64_t since, until;
	const uint64_t *threads;
	size_t nthreads;
};

/* The whole trace: every thread, every time. */
#define WINDOW_ALL ((struct window){0, UINT64_MAX, NULL, 0})

static inline uint64_t window_thread_key(uint32_t pid, uint32_t thread_id)
{
	return (uint64_t)pid << 32 | thread_id;
}

/* Does w take the thread (pid, thread_id)? w NULL: every thread. */
int window_has_thread(const struct window *w, uint32_t pid, uint32_t thread_id);

/* What a thread's history lost. */
enum window_lost {
	WINDOW_LOST_START = 1u << 0, /* buffers before its first kept one are gone */
	WINDOW_LOST_END = 1u << 1,   /* events after its last kept one were dropped */
};

/* One thread of a trace and the span its kept events cover. */
struct window_span {
	uint32_t pid, thread_id; /* as the reader gives them (xfdr_thread_info) */
	uint32_t tid;		 /* the kernel's tid; 0: not known */
	const char *name;	 /* the .map's name of it; NULL: none (lives as long as names) */
	int has_events;		 /* else first_tsc and last_tsc are 0 */
	uint64_t first_tsc, last_tsc;
	unsigned lost;	      /* enum window_lost bits */
	int begins_inside;    /* its first kept buffer begins inside calls (XFDRSTAK) */
	uint64_t overwritten; /* buffers of it ring mode reused (XFDRDROP) */
	uint64_t no_buffer;   /* events of it dropped for want of a buffer (XFDRDROP) */
};

/*
 * window_spans - the threads of the verified trace t (xfdr_trace_thread() order, the holder of a
 * process file's drop counts, thread id 0 with no function event, left out), each with its span,
 * its tid and name from names (NULL: from the trace alone). Reads each thread's first and last
 * buffer and the drop counts. Returns 0 with *out (malloc'd; NULL when *n is 0) and *n, or -1
 * with err filled.
 */
int window_spans(struct xfdr_trace *t, const struct xfdr_names *names, struct window_span **out,
		 size_t *n, struct xfdr_error *err);

/*
 * window_common - the common window of the n spans (see the top) into *since and *until.
 * Returns 1 when it is narrower than [the first event, the last event] of them all, 0 when it
 * is all of it (nothing was lost, or the threads' histories do not overlap at all: *since >
 * *until is then left for the caller to tell), -1 when no span has events.
 */
int window_common(const struct window_span *s, size_t n, uint64_t *since, uint64_t *until);

/*
 * window_thread_find - the span among s[0, n) that number picks: its thread id, else its tid.
 * Returns the index, -1 when none, -2 when the number is one thread's id and another's tid
 * (*other: the index of the second).
 */
long window_thread_find(const struct window_span *s, size_t n, uint64_t number, long *other);

#endif /* XFDR_ANALYSIS_WINDOW_H */
