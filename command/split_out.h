/*
 * command/split_out.h - an output cut into consecutive files (--split-size): OUT's parts, each
 * a file of its own named after OUT with its number before OUT's extension, four digits at
 * least ("trace.json": trace.0001.json, trace.0002.json, ...; "trace": trace.0001, ...).
 *
 * The format decides where a part ends (it asks split_out_full() between events) and makes
 * each part whole: its head, its tail, what it needs to be read alone.
 */
#ifndef XFDR_COMMAND_SPLIT_OUT_H
#define XFDR_COMMAND_SPLIT_OUT_H

#include <stdint.h>

#include "command/cli.h"

/* The smallest --split-size: a part holds at least its own head and the calls open at a cut. */
#define SPLIT_OUT_MIN_BYTES (64u << 10)

struct split_out {
	const char *path;   /* OUT */
	uint64_t size;	    /* a part is full from this many bytes on */
	unsigned part;	    /* the part being written, from 1 */
	struct cli_out *o;  /* it */
	uint64_t own_from;  /* its bytes before its own events (0: not known yet) */
	char name[2][4096]; /* its name and the one before's (o->name points here) */
};

/* split_out_name - the name of part `part` of path into buf. Returns 0, or -1 if too long. */
int split_out_name(const char *path, unsigned part, char *buf, size_t n);

/* Part 1 of path created. Returns 0, or CLI_FAIL after reporting. */
int split_out_open(struct split_out *s, const char *path, uint64_t size);

/*
 * split_out_full - is the part being written full: has it reached the size, at least half of
 * it its own? A part begins with what it repeats of the one before (the calls open at the cut,
 * begun again), which may be large (a deep stack): the first call after split_out_next()
 * takes the bytes written by then for that, and whatever it costs, a part holds half the size
 * of new events. So parts are about the size, and never more than twice as many as the size
 * alone would give.
 */
int split_out_full(struct split_out *s);

/*
 * split_out_next - the next part created, then the one before closed (its write error
 * reported). Returns 0, or CLI_FAIL after reporting: when the next part cannot be created,
 * s->o is still the one before, open.
 */
int split_out_next(struct split_out *s);

/* The last part closed and s freed of it. Returns cli_out_close()'s status. */
int split_out_close(struct split_out *s);

#endif /* XFDR_COMMAND_SPLIT_OUT_H */
