/*
 * analysis/stackpaths.c - a stack tree's stacks as folded paths (stackpaths.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stackpaths.h"

enum { STOP_NO_MEMORY = 2 };

/* The walk's state: the list, and where each depth's frame ends in the path being built. */
struct collect {
	struct stree *t;
	struct stack_paths *ps;
	size_t *at;
};

/* Room for n more bytes of text and one more path. 0, or -1 out of memory. */
static int reserve(struct stack_paths *ps, size_t n)
{
	size_t cap;
	void *v;

	if (ps->text_cap - ps->text_len < n) {
		for (cap = ps->text_cap ? ps->text_cap : 4096; cap - ps->text_len < n; cap *= 2)
			;
		v = realloc(ps->text, cap);
		if (!v)
			return -1;
		ps->text = v;
		ps->text_cap = cap;
	}
	if (ps->n == ps->cap) {
		cap = ps->cap ? 2 * ps->cap : 256;
		v = realloc(ps->p, cap * sizeof(*ps->p));
		if (!v)
			return -1;
		ps->p = v;
		ps->cap = cap;
	}
	return 0;
}

static int visit(void *ctx, const struct stree_frame *path, uint32_t depth)
{
	struct collect *c = ctx;
	struct stack_paths *ps = c->ps;
	const struct stree_frame *f = &path[depth];
	size_t nlen, plen, start;
	const char *name;
	struct stack_path *p;

	if (!depth)
		return 0;
	name = stree_name(c->t, f->name, &nlen);
	/* The caller's path is the previous path's first at[depth - 1] bytes. */
	plen = depth > 1 ? c->at[depth - 1] : 0;
	if (reserve(ps, plen + 1 + nlen + 1))
		return STOP_NO_MEMORY;
	start = ps->text_len;
	if (plen) {
		memmove(ps->text + start, ps->text + ps->p[ps->n - 1].off, plen);
		ps->text[start + plen++] = ';';
	}
	memcpy(ps->text + start + plen, name, nlen);
	ps->text[start + plen + nlen] = '\0';
	c->at[depth] = plen + nlen;
	p = &ps->p[ps->n++];
	*p = (struct stack_path){.off = start,
				 .len = plen + nlen,
				 .self_tsc = f->self_tsc,
				 .total_tsc = f->total_tsc,
				 .incl_tsc = f->incl_tsc};
	ps->text_len = start + p->len + 1;
	return 0;
}

int stack_paths_collect(struct stree *t, struct stack_paths *out, char *why, size_t why_size)
{
	struct collect c = {.t = t, .ps = out};
	int rc;

	memset(out, 0, sizeof(*out));
	c.at = malloc(((size_t)t->max_depth + 2) * sizeof(*c.at));
	if (!c.at) {
		snprintf(why, why_size, "out of memory");
		return -1;
	}
	rc = stree_walk(t, visit, &c, why, why_size);
	free(c.at);
	if (rc == STOP_NO_MEMORY)
		snprintf(why, why_size, "out of memory");
	return rc ? -1 : 0;
}

void stack_paths_free(struct stack_paths *ps)
{
	free(ps->text);
	free(ps->p);
	memset(ps, 0, sizeof(*ps));
}

int stack_path_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i = 0, j = 0, ea, eb, n;
	int c;

	for (;;) {
		if (i >= alen || j >= blen)
			return (i < alen) - (j < blen); /* a caller (the shorter) first */
		for (ea = i; ea < alen && a[ea] != ';'; ea++)
			;
		for (eb = j; eb < blen && b[eb] != ';'; eb++)
			;
		n = ea - i < eb - j ? ea - i : eb - j;
		c = memcmp(a + i, b + j, n);
		if (c)
			return c;
		if (ea - i != eb - j)
			return ea - i < eb - j ? -1 : 1;
		i = ea + 1;
		j = eb + 1;
	}
}

long stack_paths_find(const struct stack_paths *ps, const char *text, size_t len)
{
	size_t lo = 0, hi = ps->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = stack_path_cmp(stack_path_text(ps, mid), ps->p[mid].len, text, len);
		if (!c)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}
