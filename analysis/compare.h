/*
 * analysis/compare.h - two runs side by side: the latency tables of a base run and a new one
 * (analysis/latency.h), joined by function name (ids differ from run to run; names do not).
 *
 * A row holds each run's count, median, 99th percentile and total of the function's calls (a
 * side is absent when that run has no counted call of it), the change of the total (new - base,
 * seconds) and the ratio new / base of the totals. A name that names several rows of one run
 * (two static functions of one name, say) is one row of the comparison: counts and totals
 * added, the median and 99th percentile of the row with more calls.
 *
 * Nothing here prints.
 */
#ifndef XFDR_ANALYSIS_COMPARE_H
#define XFDR_ANALYSIS_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/latency.h"

struct compare_side {
	int present;
	uint64_t count;
	double med, p99, sum; /* seconds, as the latency table's */
};

struct compare_row {
	const char *name; /* the table's; lives as long as the tables */
	struct compare_side base, next;
	double change; /* next.sum - base.sum */
	double ratio;  /* next.sum / base.sum; INFINITY when only next has the function (or the
			  base's total is 0 and the new one's is not), 0 when only base has it */
};

/* What the rows may be sorted by; count, med, p99 and sum are the new run's. */
enum compare_sort {
	COMPARE_SORT_CHANGE, /* the default: what grew most first (with descending) */
	COMPARE_SORT_RATIO,
	COMPARE_SORT_COUNT,
	COMPARE_SORT_MED,
	COMPARE_SORT_P99,
	COMPARE_SORT_SUM,
	COMPARE_SORT_FUNC, /* by name */
};

/*
 * compare_join - the rows of base (nb rows) and next (nn) joined by name into *out (malloc'd;
 * free() it), *n of them, in name order. Returns 0, or -1 when out of memory.
 */
int compare_join(const struct latency_row *const *base, size_t nb,
		 const struct latency_row *const *next, size_t nn, struct compare_row **out,
		 size_t *n);

/* compare_sort - order rows by field, ascending or descending; ties by name, ascending. */
void compare_sort(struct compare_row *rows, size_t n, enum compare_sort field, int descending);

#endif /* XFDR_ANALYSIS_COMPARE_H */
