/*
 * analysis/latency.h - the per-function latency table of `xfdr account` (llvm-xray account's
 * rules, latency.c says which), and each function's total and self time for `xfdr record`.
 *
 * Pairing is analysis/callstack.h's, thread by thread in each thread's recording order, with
 * one stack per thread, as llvm-xray's. A call's latency is exit TSC - entry TSC (0 where a
 * thread's clock went backwards; llvm-xray's would be |delta|, and it fails on a record whose
 * TSC is below the very first record's, which xfdr takes).
 *
 * What counts: calls whose entry and exit were both recorded (Exit or Tail_Exit), and calls
 * whose exit is deduced from a caller's exit (CALL_UNWOUND: what llvm-xray counts with
 * -deduce-sibling-calls). Not counted: exits without an entry, calls still open at the end of
 * the trace, calls begun before the trace (their frame came from a stack context, so their
 * true entry is unknown). struct latency_left counts them, and the deduced ones.
 *
 * Nothing here prints: errors come back in a struct xfdr_error, progress through callbacks.
 */
#ifndef XFDR_ANALYSIS_LATENCY_H
#define XFDR_ANALYSIS_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/progress.h"
#include "analysis/srcline.h"
#include "analysis/window.h"
#include "xfdr/reader.h"

/* What a table's rows may be sorted by (llvm-xray account's -sort; FUNC is xfdr's own). */
enum latency_sort {
	LATENCY_SORT_FUNCID,
	LATENCY_SORT_COUNT,
	LATENCY_SORT_MIN,
	LATENCY_SORT_MED,
	LATENCY_SORT_90P,
	LATENCY_SORT_99P,
	LATENCY_SORT_MAX,
	LATENCY_SORT_SUM,
	LATENCY_SORT_FUNC, /* by name, then by id */
};

struct latency_options {
	const struct window *window; /* only its threads and what it shows of their calls
					(analysis/window.h; callstack_set_window()); NULL: all */
	struct srcline *sources;     /* for each row's debug column, the DWARF of the module the
					names put its function in (analysis/srcline.h); NULL: none */
	int recursive_only; /* llvm-xray's -recursive-calls-only: a call of F counts when F was
			       entered again while the outermost open call of F lasted */
	int events;	    /* count each function's events (latency_row.events): a row for every
			       function with one, counted calls or not (not llvm-xray's table) */
};

/* One function's row: its counted calls and their latencies. */
struct latency_row {
	uint32_t fid;
	uint64_t count;
	/* The minimum, the elements at n / 2, floor(n * 0.9) and floor(n * 0.99) of the sorted
	   latencies, the maximum and the sum (taken exactly, rounded once), in seconds (ticks /
	   the header's cycle_frequency; raw ticks when it is 0). */
	double min, med, p90, p99, max, sum;
	const char *name;  /* the sidecar's name, else "#ID" */
	const char *debug; /* "FILE:LINE:COLUMN" of the function's first instruction (FILE's
			      base name, as llvm-xray's debug column), NULL: not known */
	uint64_t events;   /* with latency_options.events: its function records in the window
			      (entries and exits, counted calls or not; what recording it cost) */
};

/* Calls not counted, by cause, and calls counted whose exit was deduced. */
struct latency_left {
	uint64_t no_entry, no_exit, from_context, unwound;
	uint64_t cut; /* not counted: cut at an edge of the window (CALL_CUT_BEGIN, _END) */
};

struct latency_table;

/*
 * latency_table_build - the table of the verified trace t, functions named from names (NULL:
 * "#ID" each). prog (may be NULL) hears of the phases "accounting" (one pass over the
 * events, the threads shared out among workers, one per CPU; by buffers) and "sorting" (by
 * functions). Memory: 4 bytes per counted call (exact percentiles need every latency; 8 for
 * one of 2^32 ticks or more), up to 2 MiB and about 100 bytes per function and worker, and while
 * the figures are taken 8 bytes per call of the largest function, per worker; nothing per record.
 * Returns 0 with *out, or -1 with err filled (an invalid trace, out of memory).
 */
int latency_table_build(struct xfdr_trace *t, const struct xfdr_names *names,
			const struct latency_options *opt, const struct progress *prog,
			struct latency_table **out, struct xfdr_error *err);

/*
 * latency_table_sort - order the rows by field, ascending or descending, exactly as llvm-xray
 * 14 does: from the order of its DenseMap of latencies, with libstdc++'s std::sort (not
 * stable), so that rows tying on the key come out in llvm-xray's order too.
 * Returns 0, or -1 with err filled (out of memory).
 */
int latency_table_sort(struct latency_table *lt, enum latency_sort field, int descending,
		       struct xfdr_error *err);

/*
 * latency_row_cmp - l against r by field, ascending (the order latency_table_sort() sorts by):
 * < 0, 0 or > 0. func compares names bytewise, then ids.
 */
int latency_row_cmp(const struct latency_row *l, const struct latency_row *r,
		    enum latency_sort field);

/* The rows, in the order of the last latency_table_sort() (NULL before it). Returns how many. */
size_t latency_table_rows(const struct latency_table *lt, const struct latency_row *const **rows);

const struct latency_left *latency_table_left(const struct latency_table *lt);

void latency_table_free(struct latency_table *lt);

/*
 * latency_left_note - the one line that tells what was not counted or was deduced, e.g.
 * "not counted: 12 exits without an entry, 3 calls still open at the end", into buf (size
 * bytes), and 1; 0 (buf untouched) when every call was complete.
 */
int latency_left_note(const struct latency_left *l, char *buf, size_t size);

/* One function of a trace, for a summary. */
struct latency_total {
	uint32_t fid;
	uint64_t count;	    /* calls counted, as the table counts them */
	uint64_t sum_tsc;   /* their latencies added, in ticks (saturates at UINT64_MAX): a
			       recursive function's nested calls are in it many times */
	uint64_t outer_tsc; /* the time in it: the latencies of its calls made while no other
			       call of it was open on their thread (each nested call's time is
			       in its outer call's once), in ticks */
	uint64_t self_tsc;  /* the part of it outside recorded callees */
	uint64_t events;    /* its function records (latency_row.events) */
	const char *name;   /* the sidecar's name (lives as long as names), NULL when none */
};

/*
 * latency_totals - every function of the verified trace t with an event (count 0 for one with
 * no counted call), by self time, largest first (ties: lower id first). names: the .map's names, or
 * NULL. w: the window the calls are counted in, as latency_options.window (NULL: all). One pass
 * over the events, memory per function only. Returns 0 with *out (malloc'd, free() it; NULL when *n
 * is 0) and *n, or -1 with err filled (an invalid trace, out of memory).
 */
int latency_totals(struct xfdr_trace *t, const struct xfdr_names *names, const struct window *w,
		   struct latency_total **out, size_t *n, struct xfdr_error *err);

#endif /* XFDR_ANALYSIS_LATENCY_H */
