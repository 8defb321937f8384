/*
 * analysis/event_cost.h - what recording each function cost, in events, and the functions whose
 * exclusion (the runtime's exclude= option) would save most: many events, and calls short on
 * average, so that the recording costs much beside what the calls do and shows little. The mean,
 * not the median: a function whose rare calls are long (a lookup that sometimes waits) keeps
 * them in view.
 *
 * The rows are a latency table's (analysis/latency.h) built with latency_options.events: each
 * function's events, its counted calls and their sum. Nothing here prints.
 */
#ifndef XFDR_ANALYSIS_EVENT_COST_H
#define XFDR_ANALYSIS_EVENT_COST_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/latency.h"

/* event_cost_sort - rows by events, most first; then by name, then by id. */
void event_cost_sort(const struct latency_row **rows, size_t n);

/* The limits `xfdr funcs` suggests by unless told, and `xfdr record`'s summary always. */
#define EVENT_COST_SHORTER_THAN_NS 1000.0 /* a mean call under 1 us */
#define EVENT_COST_MIN_SHARE 0.01	  /* 1% of all events or more */
#define EVENT_COST_MAX_NAMES 10

/* Which functions an exclusion names. */
struct event_cost_limits {
	double shorter_than; /* its mean call (sum / count) is shorter (in the rows' unit:
				seconds, or ticks for a trace of no rate) */
	double min_share;    /* it costs at least this fraction of all events */
	size_t max_names;    /* at most this many functions, those of most events */
};

/*
 * event_cost_pick - the functions of rows (sorted by event_cost_sort()) within lim, most events
 * first, into picked (room for n); total: the events of all rows. Functions without a name
 * (the table's "#ID") cannot be named in an option and are passed over, as are those with no
 * counted call (no mean). Returns how many were picked, their events in *events.
 */
size_t event_cost_pick(const struct latency_row *const *rows, size_t n, uint64_t total,
		       const struct event_cost_limits *lim, const struct latency_row **picked,
		       uint64_t *events);

/*
 * event_cost_exclude_option - "exclude=NAME,NAME,..." naming the n functions, each name a glob
 * that matches it alone: '\\' before each ',', '\\', '*', '?' and '[' in it. malloc'd (the
 * caller frees), NULL when out of memory.
 */
char *event_cost_exclude_option(const struct latency_row *const *rows, size_t n);

#endif /* XFDR_ANALYSIS_EVENT_COST_H */
