/*
 * analysis/compare.c - two runs' latency tables joined by function name (compare.h).
 *
 * Both tables are put in name order, then walked together as a merge: every name once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"

static int by_name(const void *a, const void *b)
{
	return strcmp((*(const struct latency_row *const *)a)->name,
		      (*(const struct latency_row *const *)b)->name);
}

/* The rows of a table in name order, into a new array; NULL when out of memory. */
static const struct latency_row **sorted(const struct latency_row *const *rows, size_t n)
{
	const struct latency_row **v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return NULL;
	memcpy(v, rows, n * sizeof(*v));
	qsort(v, n, sizeof(*v), by_name);
	return v;
}

/* One more row of a run into its side (the rows of one name add up). */
static void add_side(struct compare_side *s, const struct latency_row *r)
{
	if (!s->present || r->count > s->count) {
		s->med = r->med;
		s->p99 = r->p99;
	}
	s->present = 1;
	s->count += r->count;
	s->sum += r->sum;
}

static void finish_row(struct compare_row *c)
{
	c->change = c->next.sum - c->base.sum;
	if (!c->next.present)
		c->ratio = 0;
	else if (!c->base.present || c->base.sum <= 0)
		c->ratio = c->next.sum > 0 || !c->base.present ? INFINITY : 1;
	else
		c->ratio = c->next.sum / c->base.sum;
}

int compare_join(const struct latency_row *const *base, size_t nb,
		 const struct latency_row *const *next, size_t nn, struct compare_row **out,
		 size_t *n)
{
	const struct latency_row **b = sorted(base, nb), **x = sorted(next, nn);
	struct compare_row *v = malloc((nb + nn ? nb + nn : 1) * sizeof(*v)), *c;
	size_t i = 0, j = 0;
	int cmp;

	*out = NULL;
	*n = 0;
	if (!b || !x || !v) {
		free(b);
		free(x);
		free(v);
		return -1;
	}
	while (i < nb || j < nn) {
		cmp = i == nb ? 1 : j == nn ? -1 : strcmp(b[i]->name, x[j]->name);
		c = &v[*n];
		memset(c, 0, sizeof(*c));
		c->name = cmp <= 0 ? b[i]->name : x[j]->name;
		while (i < nb && !strcmp(b[i]->name, c->name))
			add_side(&c->base, b[i++]);
		while (j < nn && !strcmp(x[j]->name, c->name))
			add_side(&c->next, x[j++]);
		finish_row(c);
		(*n)++;
	}
	free(b);
	free(x);
	*out = v;
	return 0;
}

static enum compare_sort sort_field;
static int sort_descending;

/* The value a row is sorted by. */
static double key_of(const struct compare_row *r)
{
	switch (sort_field) {
	case COMPARE_SORT_RATIO:
		return r->ratio;
	case COMPARE_SORT_COUNT:
		return (double)r->next.count;
	case COMPARE_SORT_MED:
		return r->next.med;
	case COMPARE_SORT_P99:
		return r->next.p99;
	case COMPARE_SORT_SUM:
		return r->next.sum;
	case COMPARE_SORT_CHANGE:
	case COMPARE_SORT_FUNC:
		break;
	}
	return r->change;
}

static int by_field(const void *pa, const void *pb)
{
	const struct compare_row *a = pa, *b = pb;
	double ka, kb;
	int c = 0;

	if (sort_field != COMPARE_SORT_FUNC) {
		ka = key_of(a);
		kb = key_of(b);
		c = ka < kb ? -1 : ka > kb;
		if (sort_descending)
			c = -c;
	} else {
		c = strcmp(a->name, b->name);
		if (sort_descending)
			c = -c;
	}
	return c ? c : strcmp(a->name, b->name);
}

void compare_sort(struct compare_row *rows, size_t n, enum compare_sort field, int descending)
{
	sort_field = field;
	sort_descending = descending;
	qsort(rows, n, sizeof(*rows), by_field);
}
