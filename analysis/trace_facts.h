/*
 * analysis/trace_facts.h - what a trace says of itself in one pass, for `xfdr record`'s
 * summary: its threads, its function records, and the drop counts of its XFDRDROP events.
 *
 * The analysis library's interface (analysis/, not installed). Nothing here prints.
 */
#ifndef XFDR_ANALYSIS_TRACE_FACTS_H
#define XFDR_ANALYSIS_TRACE_FACTS_H

#include <stdint.h>

#include "xfdr/reader.h"

struct trace_facts {
	uint64_t threads;   /* threads with events (thread id 0, a process file's drops, aside) */
	uint64_t functions; /* function records */
	int have_drops;	    /* an XFDRDROP event was there */
	uint64_t drop[XFDR_MAP_DROP_CAUSES]; /* as a .map's `dropped` line: by cause, total */
	uint64_t overwritten;		     /* ring buffers overwritten */
	uint64_t threads_unrecorded; /* threads the XFDRDROP events name that have no events in
					the trace: all of theirs dropped or overwritten */
};

/*
 * trace_facts_read - the facts of the verified trace t. Returns 0, or -1 with err filled (a
 * decoding error the verification did not see: the file changed; out of memory).
 */
int trace_facts_read(struct xfdr_trace *t, struct trace_facts *tf, struct xfdr_error *err);

#endif /* XFDR_ANALYSIS_TRACE_FACTS_H */
