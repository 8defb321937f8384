/*
 * reader/cli/account.h - what `xfdr account` offers the other verbs: each function's calls and
 * total and self time, counted by account's rules (see account.c), for `xfdr record`'s summary.
 */
#ifndef XFDR_READER_CLI_ACCOUNT_H
#define XFDR_READER_CLI_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/reader.h"

/* One function of a trace. */
struct account_total {
	uint32_t fid;
	uint64_t count;	   /* calls counted, as `xfdr account` counts them */
	uint64_t sum_tsc;  /* their total latency in ticks (saturates at UINT64_MAX) */
	uint64_t self_tsc; /* the part of it outside recorded callees: a recursive function's
			      nested calls are in its total many times, in its self time once */
	const char *name;  /* the sidecar's name (lives as long as names), NULL when none */
};

/*
 * account_totals - every function of the trace t with at least one counted call, by self time,
 * largest first (ties: lower id first). names: the .map's names, or NULL.
 * One pass over the events, memory per function only.
 * Returns 0 with *out (malloc'd, free() it; NULL when *n is 0) and *n, or CLI_FAIL after
 * reporting (an invalid trace, out of memory).
 */
int account_totals(struct xfdr_trace *t, const struct xfdr_names *names, struct account_total **out,
		   size_t *n);

#endif /* XFDR_READER_CLI_ACCOUNT_H */
