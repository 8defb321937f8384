/*
 * reader/lib/index.c - verification, and the buffer index it leaves behind.
 *
 * xfdr_trace_verify() walks every record once with the state machine of records.c and keeps,
 * per buffer, what the walk learns on entering it: its extent and the thread id and
 * WallClockTime of its preamble (the index). Verification is the only sequential walk the
 * events need, so every later reader of a buffer goes straight to it through the index and
 * never works out an extent again.
 *
 * Thread order: threads by ascending id, and each thread's buffers by (seconds, microseconds,
 * file offset). That is the order llvm-xray means, but its comparator (sec < sec && usec <
 * usec) is not a strict weak order and misplaces e.g. {1 s, 900 us} and {2 s, 100 us}; this
 * one is a plain lexicographic one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reader/lib/internal.h"

int xfdr_trace_verify(struct xfdr_trace *t, struct xfdr_error *err)
{
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct rd_buffer_info *index = NULL, *b;
	struct rd_fn f;
	int rc;

	if (t->verified > 0)
		return 0;
	if (t->verified < 0) {
		if (err)
			*err = t->verify_err;
		return -1;
	}
	/* The count is bounded by the file size / 48, so this is at most two thirds of the file. */
	if (t->buffer_count) {
		if (t->buffer_count > SIZE_MAX / sizeof(*index) ||
		    !(index = calloc((size_t)t->buffer_count, sizeof(*index))))
			return rd_fail(t, err, 0,
				       "expected memory for %llu buffer index entries, "
				       "found %s",
				       (unsigned long long)t->buffer_count, strerror(ENOMEM));
	}
	xfdr_records_begin(t, &c);
	for (;;) {
		/* Function records need no index work: take them on the fast path. */
		while (rd_next_function(&c, &f))
			;
		rc = xfdr_records_next(&c, &r, &t->verify_err);
		if (rc <= 0)
			break;
		if (!r.is_metadata)
			continue;
		b = &index[r.buffer_index];
		if (r.kind == XFDR_MD_NEW_BUFFER) {
			/* Taking NewBuffer entered the buffer: the cursor knows its end. */
			b->start = r.offset;
			b->end = c.buffer_end;
			b->thread_id = r.thread_id;
		} else if (r.kind == XFDR_MD_WALL_CLOCK_TIME) {
			b->wall_seconds = r.seconds;
			b->wall_micros = r.micros;
		}
	}
	if (rc < 0) {
		free(index);
		t->verified = -1;
		if (err)
			*err = t->verify_err;
		return -1;
	}
	t->index = index;
	t->verified = 1;
	return 0;
}

static int cmp_thread_order(const void *a, const void *b, void *arg)
{
	const struct rd_buffer_info *index = arg;
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	const struct rd_buffer_info *l = &index[x], *r = &index[y];

	if (l->thread_id != r->thread_id)
		return l->thread_id < r->thread_id ? -1 : 1;
	if (l->wall_seconds != r->wall_seconds)
		return l->wall_seconds < r->wall_seconds ? -1 : 1;
	if (l->wall_micros != r->wall_micros)
		return l->wall_micros < r->wall_micros ? -1 : 1;
	/* Buffer number order is file offset order. */
	return x < y ? -1 : x > y;
}

int rd_build_thread_order(struct xfdr_trace *t, struct xfdr_error *err)
{
	uint64_t i, *order;

	if (t->thread_order || !t->buffer_count)
		return 0;
	if (t->buffer_count > SIZE_MAX / sizeof(*order) ||
	    !(order = malloc((size_t)t->buffer_count * sizeof(*order))))
		return rd_fail(t, err, 0, "expected memory to order %llu buffers, found %s",
			       (unsigned long long)t->buffer_count, strerror(ENOMEM));
	for (i = 0; i < t->buffer_count; i++)
		order[i] = i;
	qsort_r(order, (size_t)t->buffer_count, sizeof(*order), cmp_thread_order, t->index);
	t->thread_order = order;
	return 0;
}
