/*
 * analysis/stackpaths.h - the stacks of a stack tree (analysis/stacktree.h) as folded paths,
 * "outer;inner;leaf", each with its times, in the tree's walk order: callers first, callees by
 * name. What `xfdr stack` prints, and what two runs' trees are compared by (`xfdr stack
 * --diff`, `xfdr flame --diff`): a stack is the same stack in both when its path is the same
 * text.
 *
 * The walk order compares paths frame by frame, a frame's names bytewise and a caller before
 * its callees (stack_path_cmp()); so two runs' stacks merge in one pass over both walks, side
 * by side, and nothing of either is held but the path being looked at.
 *
 * Nothing here prints.
 */
#ifndef XFDR_ANALYSIS_STACKPATHS_H
#define XFDR_ANALYSIS_STACKPATHS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/stacktree.h"

/*
 * A folded path built as a walk goes down: at[d] is the length of the path of the frame at
 * depth d, whose text is the first at[d] bytes of text. Zeroed: empty.
 */
struct stack_path_buf {
	char *text;
	size_t cap;
	size_t *at;
	uint32_t at_cap;
};

/*
 * stack_path_set - the path of the frame name (nlen bytes) at depth (>= 1), the path of its
 * caller (depth - 1) being the one set last at that depth: the buffer's text, of *len bytes
 * (not NUL-terminated). NULL when out of memory.
 */
const char *stack_path_set(struct stack_path_buf *b, uint32_t depth, const char *name, size_t nlen,
			   size_t *len);

void stack_path_buf_free(struct stack_path_buf *b);

/* A tree's stacks one at a time, in walk order, the root left out. */
struct stack_paths {
	struct stree *t;
	struct stree_cursor *c;
	struct stack_path_buf b;
	const struct stree_frame *frame; /* the stack's node */
	const char *text;		 /* its path, len bytes */
	size_t len;
	uint64_t root_incl_tsc; /* the root's: the whole tree's time */
	int have;		/* 0 once the walk ended */
};

/*
 * stack_paths_open - *ps at the first stack of the finished tree t; stack_paths_next() - at the
 * next one. Each returns 0 (ps->have tells whether there is a stack), or -1 with why (out of
 * memory, a run of the tree unreadable). Either way ps goes to stack_paths_close().
 */
int stack_paths_open(struct stack_paths *ps, struct stree *t, char *why, size_t why_size);
int stack_paths_next(struct stack_paths *ps, char *why, size_t why_size);
void stack_paths_close(struct stack_paths *ps);

/* a against b (folded paths) in walk order: < 0, 0 or > 0. */
int stack_path_cmp(const char *a, size_t alen, const char *b, size_t blen);

#endif /* XFDR_ANALYSIS_STACKPATHS_H */
