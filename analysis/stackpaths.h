/*
 * analysis/stackpaths.h - the stacks of a stack tree (analysis/stacktree.h) as folded paths,
 * "outer;inner;leaf", each with its times, in the tree's walk order: callers first, callees by
 * name. What two runs' trees are compared by (`xfdr stack --diff`, `xfdr flame --diff`): a
 * stack is the same stack in both when its path is the same text.
 *
 * The walk order compares paths frame by frame, a frame's names bytewise and a caller before
 * its callees (stack_path_cmp()); so two runs' lists merge in one pass, and a path is found in
 * a list by binary search.
 *
 * Nothing here prints.
 */
#ifndef XFDR_ANALYSIS_STACKPATHS_H
#define XFDR_ANALYSIS_STACKPATHS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/stacktree.h"

struct stack_path {
	size_t off, len;    /* of its text in the list's text */
	uint64_t self_tsc;  /* as the tree's node */
	uint64_t total_tsc; /* ... */
	uint64_t incl_tsc;  /* ... */
};

struct stack_paths {
	char *text; /* the paths, one after the other, each ended by NUL */
	size_t text_len, text_cap;
	struct stack_path *p;
	size_t n, cap;
};

/*
 * stack_paths_collect - every stack of the finished tree t (the root left out), in walk order,
 * into *out (zeroed here). Returns 0, or -1 with why (a line: out of memory, a run of the
 * tree unreadable); either way out goes to stack_paths_free().
 */
int stack_paths_collect(struct stree *t, struct stack_paths *out, char *why, size_t why_size);

void stack_paths_free(struct stack_paths *ps);

/* The text of path i. */
static inline const char *stack_path_text(const struct stack_paths *ps, size_t i)
{
	return ps->text + ps->p[i].off;
}

/* a against b (folded paths) in walk order: < 0, 0 or > 0. */
int stack_path_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* The index of the path text (len bytes) in ps, or -1 when it has none. */
long stack_paths_find(const struct stack_paths *ps, const char *text, size_t len);

#endif /* XFDR_ANALYSIS_STACKPATHS_H */
