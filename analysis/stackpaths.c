/*
 * analysis/stackpaths.c - a stack tree's stacks as folded paths (stackpaths.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stackpaths.h"

const char *stack_path_set(struct stack_path_buf *b, uint32_t depth, const char *name, size_t nlen,
			   size_t *len)
{
	size_t plen, cap;
	void *v;

	if (depth + 1 > b->at_cap) {
		v = realloc(b->at, ((size_t)depth + 64) * sizeof(*b->at));
		if (!v)
			return NULL;
		b->at = v;
		b->at_cap = depth + 64;
	}
	plen = depth > 1 ? b->at[depth - 1] : 0;
	if (plen + 1 + nlen > b->cap) {
		for (cap = b->cap ? b->cap : 4096; plen + 1 + nlen > cap; cap *= 2)
			;
		v = realloc(b->text, cap);
		if (!v)
			return NULL;
		b->text = v;
		b->cap = cap;
	}
	if (plen)
		b->text[plen++] = ';';
	memcpy(b->text + plen, name, nlen);
	*len = b->at[depth] = plen + nlen;
	return b->text;
}

void stack_path_buf_free(struct stack_path_buf *b)
{
	free(b->text);
	free(b->at);
	memset(b, 0, sizeof(*b));
}

int stack_paths_next(struct stack_paths *ps, char *why, size_t why_size)
{
	const struct stree_frame *path;
	uint32_t depth;
	const char *name;
	size_t nlen;
	int rc;

	while ((rc = stree_cursor_next(ps->c, &path, &depth, why, why_size)) > 0) {
		if (!depth) {
			ps->root_incl_tsc = path[0].incl_tsc;
			continue;
		}
		name = stree_name(ps->t, path[depth].name, &nlen);
		ps->text = stack_path_set(&ps->b, depth, name, nlen, &ps->len);
		if (!ps->text) {
			snprintf(why, why_size, "out of memory");
			return -1;
		}
		ps->frame = &path[depth];
		return 0;
	}
	ps->have = 0;
	return rc;
}

int stack_paths_open(struct stack_paths *ps, struct stree *t, char *why, size_t why_size)
{
	memset(ps, 0, sizeof(*ps));
	ps->t = t;
	if (stree_cursor_open(t, &ps->c, why, why_size) < 0)
		return -1;
	ps->have = 1;
	return stack_paths_next(ps, why, why_size);
}

void stack_paths_close(struct stack_paths *ps)
{
	stree_cursor_close(ps->c);
	stack_path_buf_free(&ps->b);
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
