/*
 * command/ordered_out.h - one output written by several threads at once, in a fixed order: the
 * output is part 0, then part 1, ..., each whole, whichever order the threads finish in, so
 * it is the same bytes as one thread writing the parts in turn.
 *
 * The part whose turn it is goes straight to the output. A part written ahead of its turn
 * goes to an unlinked file in $TMPDIR (else /tmp), which is copied to the output when its
 * turn comes, and from then on that part too writes straight through. Memory stays flat
 * whatever the parts' sizes: what waits for its turn waits on disk.
 *
 * Every call may come from any thread; one thread writes a part at a time.
 */
#ifndef XFDR_COMMAND_ORDERED_OUT_H
#define XFDR_COMMAND_ORDERED_OUT_H

#include <stddef.h>

#include "command/cli.h"

struct ordered_out;

/* Parts 0 .. parts-1 of the output o (which must outlive it). NULL after reporting. */
struct ordered_out *ordered_out_new(struct cli_out *o, size_t parts);

/*
 * ordered_put - append n bytes to part k (not yet ended). Returns 0, or -1 once anything has
 * failed: the output (o->err, which closing o reports) or a temporary file (reported here).
 */
int ordered_put(struct ordered_out *s, size_t k, const void *p, size_t n);

/* ordered_end - part k is whole: it and what waited for it go out. Returns as ordered_put(). */
int ordered_end(struct ordered_out *s, size_t k);

/* A writer failed (and said why): nothing more is written, every call returns -1. */
void ordered_abandon(struct ordered_out *s);

/* Has anything failed? Cheap: for a writer to ask often. */
int ordered_failed(struct ordered_out *s);

/* Frees s; parts not ended by then are not written. */
void ordered_out_free(struct ordered_out *s);

#endif /* XFDR_COMMAND_ORDERED_OUT_H */
