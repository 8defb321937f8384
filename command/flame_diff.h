/*
 * command/flame_diff.h - `xfdr flame --diff BASE NEW`: a differential flame graph. The frames are
 * NEW's, as wide as their time in NEW; each is coloured by how its stack's inclusive time
 * changed from BASE (the same stack: the same names of frames, analysis/stackpaths.h): red grew,
 * blue shrank, white unchanged, the deepest colour for the largest change of the graph. Times
 * are compared in nanoseconds, each run's ticks at its own rate.
 */
#ifndef XFDR_COMMAND_FLAME_DIFF_H
#define XFDR_COMMAND_FLAME_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/stacktree.h"

struct flame_diff;

/*
 * flame_diff_new - the comparison with base (a finished tree, its runs merged into one here) at
 * rate base_hz, for a NEW tree at new_hz: base is walked alongside each walk of NEW, so nothing
 * of it is held in memory. NULL after writing why.
 */
struct flame_diff *flame_diff_new(struct stree *base, uint64_t base_hz, uint64_t new_hz, char *why,
				  size_t why_size);
void flame_diff_free(struct flame_diff *d);

/*
 * flame_diff_visit - the NEW tree t's frame path[depth], as its walk visits it (in walk order,
 * callees only after their caller, from the root: each visit of the root begins BASE's walk
 * again): its stack's inclusive time in BASE (*base_ns;
 * 0 when BASE has no such stack) and the change (NEW - BASE, ns), which is also taken into the
 * largest change, for the colours. Returns 0, or -1 after writing why (out of memory, or a run
 * of BASE's tree that could not be read).
 */
int flame_diff_visit(struct flame_diff *d, const struct stree *t, const struct stree_frame *path,
		     uint32_t depth, uint64_t *base_ns, int64_t *change_ns, char *why,
		     size_t why_size);

/* The colour of a change, into buf: "rgb(R,G,B)". */
void flame_diff_colour(const struct flame_diff *d, int64_t change_ns, char *buf, size_t n);

#endif /* XFDR_COMMAND_FLAME_DIFF_H */
