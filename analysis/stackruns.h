/*
 * analysis/stackruns.h - what the stack tree's builder (stacktree.c) asks of its runs
 * (stackwalk.c): the tree in memory written out when it is full, and the runs let go.
 */
#ifndef XFDR_ANALYSIS_STACKRUNS_H
#define XFDR_ANALYSIS_STACKRUNS_H

#include "analysis/stacktree.h"

/*
 * stree_spill - the tree in memory sorted (stree_finish()) and appended as a run; at
 * STREE_RUNS_MAX runs, the smaller half of them merged into it. The caller then empties the
 * tree. 0, or -1 with t->spill_errno set (ENOMEM, or why a temporary file could not be made
 * or written).
 */
int stree_spill(struct stree *t);

/*
 * stree_runs_take - the runs of from (a worker's tree, sharing t's names) made t's: from keeps
 * none. 0, or -1 with t->spill_errno set (merging some of t's, to keep at most STREE_RUNS_MAX).
 */
int stree_runs_take(struct stree *t, struct stree *from);

/* Close and free every run (their files are unlinked: closing removes them). */
void stree_runs_free(struct stree *t);

#endif /* XFDR_ANALYSIS_STACKRUNS_H */
