/*
 * analysis/event_cost.c - what recording each function cost, and what to exclude
 * (event_cost.h).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/event_cost.h"

static int by_events(const void *pl, const void *pr)
{
	const struct latency_row *l = *(const struct latency_row *const *)pl;
	const struct latency_row *r = *(const struct latency_row *const *)pr;
	int c;

	if (l->events != r->events)
		return l->events > r->events ? -1 : 1;
	c = strcmp(l->name, r->name);
	if (c)
		return c;
	return (l->fid > r->fid) - (l->fid < r->fid);
}

void event_cost_sort(const struct latency_row **rows, size_t n)
{
	qsort(rows, n, sizeof(*rows), by_events);
}

size_t event_cost_pick(const struct latency_row *const *rows, size_t n, uint64_t total,
		       const struct event_cost_limits *lim, const struct latency_row **picked,
		       uint64_t *events)
{
	size_t i, k = 0;

	*events = 0;
	for (i = 0; i < n && k < lim->max_names; i++) {
		const struct latency_row *r = rows[i];

		if ((double)r->events < lim->min_share * (double)total)
			break; /* sorted: every row after has fewer */
		if (r->name[0] == '#' || !r->count ||
		    !(r->sum / (double)r->count < lim->shorter_than))
			continue;
		picked[k++] = r;
		*events += r->events;
	}
	return k;
}

char *event_cost_exclude_option(const struct latency_row *const *rows, size_t n)
{
	static const char prefix[] = "exclude=";
	size_t len = sizeof(prefix), i;
	const char *p;
	char *s, *o;

	for (i = 0; i < n; i++)
		len += 2 * strlen(rows[i]->name) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	o = s + strlen(strcpy(s, prefix));
	for (i = 0; i < n; i++) {
		if (i)
			*o++ = ',';
		for (p = rows[i]->name; *p; p++) {
			if (strchr(",\\*?[", *p))
				*o++ = '\\';
			*o++ = *p;
		}
	}
	*o = '\0';
	return s;
}
