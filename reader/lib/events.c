/*
 * reader/lib/events.c - verification, the buffer index, and the events a program produced.
 *
 * xfdr_trace_verify() walks every record once with the state machine of records.c and keeps,
 * per buffer, the thread id and the WallClockTime of its preamble (the index). Events are
 * then produced buffer by buffer, in file order or in thread order: threads by ascending id,
 * and each thread's buffers by (seconds, microseconds, file offset). That is the order
 * llvm-xray means, but its comparator (sec < sec && usec < usec) is not a strict weak order
 * and misplaces e.g. {1 s, 900 us} and {2 s, 100 us}; this one is a plain lexicographic one.
 *
 * An Entry_Args event carries its CallArguments: they sit right after its record in the same
 * buffer (the grammar guarantees it), so the event keeps a pointer to the first one and a
 * count, and xfdr_event_arg() decodes them on demand. Nothing is copied.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reader/lib/bytes.h"
#include "reader/lib/internal.h"

int xfdr_trace_verify(struct xfdr_trace *t, struct xfdr_error *err)
{
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct rd_buffer_info *index = NULL;
	struct rd_fn f;
	int rc;

	if (t->verified > 0)
		return 0;
	if (t->verified < 0) {
		if (err)
			*err = t->verify_err;
		return -1;
	}
	/* The count is bounded by the file size / 48, so this is at most a third of the file. */
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
		if (r.kind == XFDR_MD_NEW_BUFFER)
			index[r.buffer_index].thread_id = r.thread_id;
		else if (r.kind == XFDR_MD_WALL_CLOCK_TIME) {
			index[r.buffer_index].wall_seconds = r.seconds;
			index[r.buffer_index].wall_micros = r.micros;
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

static int build_thread_order(struct xfdr_trace *t, struct xfdr_error *err)
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

int xfdr_events_begin(struct xfdr_trace *t, enum xfdr_order order, struct xfdr_event_iter *it,
		      struct xfdr_error *err)
{
	if (order != XFDR_ORDER_FILE && order != XFDR_ORDER_THREAD)
		return rd_fail(t, err, 0,
			       "expected order XFDR_ORDER_FILE or XFDR_ORDER_THREAD, found %d",
			       (int)order);
	if (xfdr_trace_verify(t, err))
		return -1;
	if (order == XFDR_ORDER_THREAD && build_thread_order(t, err))
		return -1;
	memset(it, 0, sizeof(*it));
	it->trace = t;
	it->order = order;
	xfdr_records_begin(t, &it->cursor);
	return 0;
}

/* How many CallArgument records follow the Entry_Args record at `offset` in its buffer. */
static uint32_t count_args(const struct xfdr_trace *t, uint64_t offset, uint64_t buffer)
{
	const int big = t->hdr.big_endian;
	uint64_t pos = offset + XFDR_FN_RECORD_BYTES;
	uint64_t end = rd_buffer_offset(t, buffer + 1);
	uint32_t n = 0;

	while (end - pos >= XFDR_MD_RECORD_BYTES && n < UINT32_MAX) {
		uint8_t b0 = t->data[pos];

		if (!rd_is_metadata(b0, big) || rd_md_kind(b0, big) != XFDR_MD_CALL_ARGUMENT)
			break;
		n++;
		pos += XFDR_MD_RECORD_BYTES;
	}
	return n;
}

/*
 * it->in_buffer: 0 = take the next buffer of the order; 1 = the cursor was just put at a
 * buffer's start; 2 = inside it. The cursor is back at RD_ST_BUFFER_START once the buffer is
 * over (EndOfBuffer, or exactly full), which ends the buffer for the iterator too.
 */
int xfdr_events_next(struct xfdr_event_iter *it, struct xfdr_event *ev, struct xfdr_error *err)
{
	struct xfdr_trace *t = it->trace;
	struct xfdr_record *r = &it->pending;
	const struct rd_buffer_info *info;
	uint64_t buffer;
	struct rd_fn f;
	int rc;

	for (;;) {
		if (it->in_buffer == 2 && it->cursor.state == RD_ST_BUFFER_START)
			it->in_buffer = 0;
		if (!it->in_buffer) {
			if (it->next_slot >= t->buffer_count)
				return 0;
			buffer = it->order == XFDR_ORDER_THREAD ? t->thread_order[it->next_slot]
								: it->next_slot;
			it->next_slot++;
			rd_cursor_seek_buffer(&it->cursor, buffer);
			it->in_buffer = 1;
		}
		buffer = it->cursor.buffer_index;
		if (rd_next_function(&it->cursor, &f)) {
			it->in_buffer = 2;
			info = &t->index[buffer];
			*ev = (struct xfdr_event){
			    .type = XFDR_EVENT_FUNCTION,
			    .action = f.action,
			    .function_id = f.function_id,
			    .tsc = f.tsc,
			    .cpu = it->cursor.cpu,
			    .thread_id = it->cursor.thread_id,
			    .offset = f.offset,
			    .buffer_index = buffer,
			    .wall_seconds = info->wall_seconds,
			    .wall_micros = info->wall_micros,
			};
			if (f.action == XFDR_FN_ENTER_ARGS) {
				ev->arg_count = count_args(t, f.offset, buffer);
				ev->args = t->data + f.offset + XFDR_FN_RECORD_BYTES;
			}
			return 1;
		}
		rc = xfdr_records_next(&it->cursor, r, err);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			it->in_buffer = 0;
			continue;
		}
		it->in_buffer = 2;
		if (!r->is_metadata || r->kind != XFDR_MD_CUSTOM_EVENT)
			continue;
		/* Function records never get here: the fast path above took them. */
		info = &t->index[r->buffer_index];
		*ev = (struct xfdr_event){
		    .type = XFDR_EVENT_CUSTOM,
		    .tsc = r->tsc,
		    .cpu = r->cpu,
		    .thread_id = r->thread_id,
		    .offset = r->offset,
		    .buffer_index = r->buffer_index,
		    .wall_seconds = info->wall_seconds,
		    .wall_micros = info->wall_micros,
		    .payload = r->payload,
		    .payload_bytes = r->payload_bytes,
		};
		return 1;
	}
}

uint64_t xfdr_event_arg(const struct xfdr_trace *t, const struct xfdr_event *ev, uint32_t i)
{
	if (i >= ev->arg_count)
		return 0;
	return rd_u64(ev->args + (size_t)i * XFDR_MD_RECORD_BYTES + XFDR_CALL_ARG_VALUE_OFF,
		      t->hdr.big_endian);
}
