/*
 * command/flame_diff.c - the colours of a differential flame graph (flame_diff.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stackpaths.h"
#include "command/flame_diff.h"

struct flame_diff {
	struct stack_paths base; /* BASE's stacks, in walk order */
	uint64_t base_hz, new_hz;
	uint64_t max_change; /* |change| of the frames visited so far, at most */
	/* The path of the frame being visited: at[d] bytes of it are its frames down to depth d. */
	char *path;
	size_t path_cap;
	size_t *at;
	uint32_t at_cap;
};

struct flame_diff *flame_diff_new(struct stree *base, uint64_t base_hz, uint64_t new_hz, char *why,
				  size_t why_size)
{
	struct flame_diff *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	d->base_hz = base_hz ? base_hz : 1000000000u;
	d->new_hz = new_hz ? new_hz : 1000000000u;
	if (stack_paths_collect(base, &d->base, why, why_size)) {
		flame_diff_free(d);
		return NULL;
	}
	return d;
}

void flame_diff_free(struct flame_diff *d)
{
	if (!d)
		return;
	stack_paths_free(&d->base);
	free(d->path);
	free(d->at);
	free(d);
}

/* The frame's path into d->path (its caller's path is there already). 0, or -1 out of memory. */
static int path_of(struct flame_diff *d, const struct stree *t, const struct stree_frame *f,
		   uint32_t depth, size_t *len)
{
	size_t nlen, plen = depth > 1 ? d->at[depth - 1] : 0;
	const char *name = stree_name(t, f->name, &nlen);
	void *v;

	if (depth + 1 > d->at_cap) {
		v = realloc(d->at, ((size_t)depth + 64) * sizeof(*d->at));
		if (!v)
			return -1;
		d->at = v;
		d->at_cap = depth + 64;
	}
	if (plen + nlen + 2 > d->path_cap) {
		v = realloc(d->path, 2 * (plen + nlen + 2));
		if (!v)
			return -1;
		d->path = v;
		d->path_cap = 2 * (plen + nlen + 2);
	}
	if (plen)
		d->path[plen++] = ';';
	memcpy(d->path + plen, name, nlen);
	*len = d->at[depth] = plen + nlen;
	return 0;
}

int flame_diff_visit(struct flame_diff *d, const struct stree *t, const struct stree_frame *path,
		     uint32_t depth, uint64_t *base_ns, int64_t *change_ns)
{
	const struct stree_frame *f = &path[depth];
	uint64_t new_ns;
	size_t len;
	long k = -1;

	*base_ns = 0;
	if (depth) {
		if (path_of(d, t, f, depth, &len))
			return -1;
		k = stack_paths_find(&d->base, d->path, len);
	} else if (d->base.n) {
		/* The root: all of BASE's time, its outermost frames' sum. */
		for (k = 0; (size_t)k < d->base.n; k++)
			if (!memchr(stack_path_text(&d->base, (size_t)k), ';', d->base.p[k].len))
				*base_ns +=
				    stree_ticks_to(d->base.p[k].incl_tsc, d->base_hz, 1000000000u);
		k = -1;
	}
	if (k >= 0)
		*base_ns = stree_ticks_to(d->base.p[k].incl_tsc, d->base_hz, 1000000000u);
	new_ns = stree_ticks_to(f->incl_tsc, d->new_hz, 1000000000u);
	*change_ns = (int64_t)(new_ns - *base_ns);
	/* The root changes by all the others' changes: the colours are for the frames. */
	if (depth && (uint64_t)(*change_ns < 0 ? -*change_ns : *change_ns) > d->max_change)
		d->max_change = (uint64_t)(*change_ns < 0 ? -*change_ns : *change_ns);
	return 0;
}

void flame_diff_colour(const struct flame_diff *d, int64_t change_ns, char *buf, size_t n)
{
	uint64_t mag = (uint64_t)(change_ns < 0 ? -change_ns : change_ns);
	unsigned fade = d->max_change ? (unsigned)(210.0 * (double)mag / (double)d->max_change) : 0;

	if (change_ns > 0)
		snprintf(buf, n, "rgb(255,%u,%u)", 255 - fade, 255 - fade);
	else if (change_ns < 0)
		snprintf(buf, n, "rgb(%u,%u,255)", 255 - fade, 255 - fade);
	else
		snprintf(buf, n, "rgb(250,250,250)");
}
