/*
 * command/flame_diff.c - the colours of a differential flame graph (flame_diff.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stackpaths.h"
#include "command/flame_diff.h"

struct flame_diff {
	struct stree *base;
	struct stack_paths paths; /* BASE's stacks, walked alongside NEW's */
	uint64_t base_hz, new_hz;
	uint64_t max_change;	    /* |change| of the frames visited so far, at most */
	struct stack_path_buf path; /* the path of NEW's frame being visited */
};

struct flame_diff *flame_diff_new(struct stree *base, uint64_t base_hz, uint64_t new_hz, char *why,
				  size_t why_size)
{
	struct flame_diff *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	d->base = base;
	d->base_hz = base_hz ? base_hz : 1000000000u;
	d->new_hz = new_hz ? new_hz : 1000000000u;
	/* BASE is walked again with each walk of NEW: merge its runs once. */
	if (stree_compact(base, why, why_size) < 0) {
		flame_diff_free(d);
		return NULL;
	}
	return d;
}

void flame_diff_free(struct flame_diff *d)
{
	if (!d)
		return;
	stack_paths_close(&d->paths);
	stack_path_buf_free(&d->path);
	free(d);
}

/*
 * BASE's stack of path text (len bytes): BASE's walk moved on up to it, as NEW's walk is in the
 * same order. NULL when BASE has no such stack; -1 in *failed on an error.
 */
static const struct stree_frame *base_frame(struct flame_diff *d, const char *text, size_t len,
					    int *failed, char *why, size_t why_size)
{
	int c = 1;

	while (d->paths.have && (c = stack_path_cmp(d->paths.text, d->paths.len, text, len)) < 0)
		if (stack_paths_next(&d->paths, why, why_size) < 0) {
			*failed = -1;
			return NULL;
		}
	return d->paths.have && !c ? d->paths.frame : NULL;
}

int flame_diff_visit(struct flame_diff *d, const struct stree *t, const struct stree_frame *path,
		     uint32_t depth, uint64_t *base_ns, int64_t *change_ns, char *why,
		     size_t why_size)
{
	const struct stree_frame *f = &path[depth], *b = NULL;
	const char *name, *text;
	uint64_t new_ns;
	size_t nlen, len;
	int failed = 0;

	*base_ns = 0;
	if (!depth) {
		/* NEW's walk begins: so does BASE's, whose root holds all of its time. */
		stack_paths_close(&d->paths);
		if (stack_paths_open(&d->paths, d->base, why, why_size) < 0)
			return -1;
		*base_ns = stree_ticks_to(d->paths.root_incl_tsc, d->base_hz, 1000000000u);
	} else {
		name = stree_name(t, f->name, &nlen);
		text = stack_path_set(&d->path, depth, name, nlen, &len);
		if (!text) {
			snprintf(why, why_size, "out of memory");
			return -1;
		}
		b = base_frame(d, text, len, &failed, why, why_size);
		if (failed)
			return -1;
	}
	if (b)
		*base_ns = stree_ticks_to(b->incl_tsc, d->base_hz, 1000000000u);
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
