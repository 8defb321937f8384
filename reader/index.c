/*
 * reader/index.c - verification, and the buffer index it leaves behind.
 *
 * xfdr_trace_verify() walks every record once with the state machine of records.c and keeps,
 * per buffer, what the walk learns on entering it: its extent and the thread id, process id
 * and WallClockTime of its preamble (the index). Buffers of versions 2+ vary in length; open
 * counted them by following their BufferExtents records, so the index has its size before the
 * walk, as for version 1. Verification is the only sequential walk the
 * events need, so every later reader of a buffer goes straight to it through the index and
 * never works out an extent again.
 *
 * Thread order: threads by ascending (process id, thread id), and each thread's buffers by
 * (seconds, microseconds, file offset). The process id is the Pid record's (versions 3+), the
 * thread id in version 2 (as llvm-xray's expander), 0 in version 1. That is the order llvm-xray
 * means, but its comparator (sec < sec && usec < usec) is not a strict weak order and misplaces
 * e.g. {1 s, 900 us} and {2 s, 100 us}; this one is a plain lexicographic one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reader/internal.h"

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
	/*
	 * The count is bounded by the file size / 48 (v2+: / 64), so this is at most two thirds of
	 * the file.
	 */
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
		switch (r.kind) {
		case XFDR_MD_BUFFER_EXTENTS:
			/* Versions 2+: this record entered the buffer, the cursor knows its end. */
			b->start = r.offset;
			b->end = c.buffer_end;
			break;
		case XFDR_MD_NEW_BUFFER:
			/* Version 1: the NewBuffer record entered the buffer. */
			if (t->hdr.version == 1) {
				b->start = r.offset;
				b->end = c.buffer_end;
			}
			b->thread_id = r.thread_id;
			b->pid = r.pid; /* version 2: the thread id; else 0 until a Pid record */
			break;
		case XFDR_MD_WALL_CLOCK_TIME:
			b->wall_seconds = r.seconds;
			b->wall_micros = r.micros;
			break;
		case XFDR_MD_PID:
			b->pid = r.pid;
			break;
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

	if (l->pid != r->pid)
		return l->pid < r->pid ? -1 : 1;
	if (l->thread_id != r->thread_id)
		return l->thread_id < r->thread_id ? -1 : 1;
	if (l->wall_seconds != r->wall_seconds)
		return l->wall_seconds < r->wall_seconds ? -1 : 1;
	if (l->wall_micros != r->wall_micros)
		return l->wall_micros < r->wall_micros ? -1 : 1;
	/* Buffer number order is file offset order. */
	return x < y ? -1 : x > y;
}

static int same_thread(const struct rd_buffer_info *a, const struct rd_buffer_info *b)
{
	return a->pid == b->pid && a->thread_id == b->thread_id;
}

int rd_build_thread_order(struct xfdr_trace *t, struct xfdr_error *err)
{
	uint64_t i, n, *order, *start;

	if (t->thread_start)
		return 0;
	if (t->buffer_count > SIZE_MAX / sizeof(*order) - 1 ||
	    !(order = malloc((size_t)(t->buffer_count ? t->buffer_count : 1) * sizeof(*order))))
		return rd_fail(t, err, 0, "expected memory to order %llu buffers, found %s",
			       (unsigned long long)t->buffer_count, strerror(ENOMEM));
	for (i = 0; i < t->buffer_count; i++)
		order[i] = i;
	qsort_r(order, (size_t)t->buffer_count, sizeof(*order), cmp_thread_order, t->index);
	for (i = 0, n = 0; i < t->buffer_count; i++)
		n += !i || !same_thread(&t->index[order[i]], &t->index[order[i - 1]]);
	start = malloc((size_t)(n + 1) * sizeof(*start));
	if (!start) {
		free(order);
		return rd_fail(t, err, 0, "expected memory to order %llu buffers, found %s",
			       (unsigned long long)t->buffer_count, strerror(ENOMEM));
	}
	for (i = 0, n = 0; i < t->buffer_count; i++)
		if (!i || !same_thread(&t->index[order[i]], &t->index[order[i - 1]]))
			start[n++] = i;
	start[n] = t->buffer_count;
	t->thread_order = order;
	t->thread_start = start;
	t->thread_count = n;
	return 0;
}

int xfdr_trace_threads(struct xfdr_trace *t, uint64_t *count, struct xfdr_error *err)
{
	if (xfdr_trace_verify(t, err) || rd_build_thread_order(t, err))
		return -1;
	*count = t->thread_count;
	return 0;
}

int xfdr_trace_thread(const struct xfdr_trace *t, uint64_t i, struct xfdr_thread_info *out)
{
	uint64_t k, first;

	if (!t->thread_start || i >= t->thread_count)
		return -1;
	first = t->thread_order[t->thread_start[i]];
	/* The order within a thread is by time, not by file position. */
	for (k = t->thread_start[i]; k < t->thread_start[i + 1]; k++)
		if (t->thread_order[k] < first)
			first = t->thread_order[k];
	*out = (struct xfdr_thread_info){
	    .pid = t->index[first].pid,
	    .thread_id = t->index[first].thread_id,
	    .buffers = t->thread_start[i + 1] - t->thread_start[i],
	    .first_buffer = first,
	};
	return 0;
}
