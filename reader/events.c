/*
 * reader/events.c - the events a program produced, buffer by buffer, from a verified trace.
 *
 * Events only come from a file that xfdr_trace_verify() accepted (index.c), so each buffer is
 * reached through the index (its start and end), in file order or in thread order, and walked
 * with the state machine of records.c.
 *
 * Custom and typed events come from their markers, with the TSC and CPU llvm-xray's
 * TraceExpander gives them (records.c has the TSC): a custom event's CPU is the marker's own in
 * version 4, none (0) in versions 2 and 3, whose markers carry none, and the current CPU in
 * version 5 and for typed events. Version 1 keeps the current CPU, as the reader always gave
 * it (llvm-xray prints 0 there too: xfdr convert prints 0 itself).
 *
 * An Entry_Args event carries its CallArguments: they sit right after its record in the same
 * buffer (the grammar guarantees it), so the event keeps a pointer to the first one and a
 * count, and xfdr_event_arg() decodes them on demand. Nothing is copied.
 */
#include <string.h>

#include "reader/bytes.h"
#include "reader/internal.h"

int xfdr_events_begin(struct xfdr_trace *t, enum xfdr_order order, struct xfdr_event_iter *it,
		      struct xfdr_error *err)
{
	if (order != XFDR_ORDER_FILE && order != XFDR_ORDER_THREAD)
		return rd_fail(t, err, 0,
			       "expected order XFDR_ORDER_FILE or XFDR_ORDER_THREAD, found %d",
			       (int)order);
	if (xfdr_trace_verify(t, err))
		return -1;
	if (order == XFDR_ORDER_THREAD && rd_build_thread_order(t, err))
		return -1;
	memset(it, 0, sizeof(*it));
	it->trace = t;
	it->order = order;
	it->end_slot = t->buffer_count;
	xfdr_records_begin(t, &it->cursor);
	return 0;
}

int xfdr_events_begin_thread(struct xfdr_trace *t, uint64_t i, struct xfdr_event_iter *it,
			     struct xfdr_error *err)
{
	if (xfdr_events_begin(t, XFDR_ORDER_THREAD, it, err))
		return -1;
	if (i >= t->thread_count)
		return rd_fail(t, err, 0, "expected a thread number below %llu, found %llu",
			       (unsigned long long)t->thread_count, (unsigned long long)i);
	it->next_slot = t->thread_start[i];
	it->end_slot = t->thread_start[i + 1];
	return 0;
}

int xfdr_events_begin_thread_at(struct xfdr_trace *t, uint64_t i, uint64_t k,
				struct xfdr_event_iter *it, struct xfdr_error *err)
{
	if (xfdr_events_begin_thread(t, i, it, err))
		return -1;
	if (k >= it->end_slot - it->next_slot)
		return rd_fail(t, err, 0, "expected a buffer number below %llu, found %llu",
			       (unsigned long long)(it->end_slot - it->next_slot),
			       (unsigned long long)k);
	it->next_slot += k;
	return 0;
}

int xfdr_events_begin_thread_buffer(struct xfdr_trace *t, uint64_t i, uint64_t k,
				    struct xfdr_event_iter *it, struct xfdr_error *err)
{
	if (xfdr_events_begin_thread_at(t, i, k, it, err))
		return -1;
	it->end_slot = it->next_slot + 1;
	return 0;
}

/* How many CallArgument records follow the Entry_Args record at `offset` in its buffer. */
static uint32_t count_args(const struct xfdr_trace *t, uint64_t offset, uint64_t buffer)
{
	const int big = t->hdr.big_endian;
	uint64_t pos = offset + XFDR_FN_RECORD_BYTES;
	uint64_t end = t->index[buffer].end;
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
 * The CallArguments after the Entry_Args record at offset in buffer go with its event ev, and
 * the cursor steps over them at once: the event has them.
 */
static void take_args(struct xfdr_event_iter *it, struct xfdr_event *ev, uint64_t offset,
		      uint64_t buffer)
{
	ev->arg_count = count_args(it->trace, offset, buffer);
	ev->args = it->trace->data + offset + XFDR_FN_RECORD_BYTES;
	rd_skip_call_arguments(&it->cursor, ev->arg_count);
}

/*
 * it->in_buffer: 0 = take the next buffer of the order; 1 = the cursor was just put at a
 * buffer's start; 2 = inside it. The cursor is back at RD_ST_BUFFER_START once the buffer is
 * over (EndOfBuffer, or exactly full), which ends the buffer for the iterator too.
 * Returns 1 with the cursor in a buffer of the order, 0 past the last one.
 */
static inline int in_buffer(struct xfdr_event_iter *it)
{
	struct xfdr_trace *t = it->trace;
	const struct rd_buffer_info *info;
	uint64_t buffer;

	if (it->in_buffer == 2 && it->cursor.state == RD_ST_BUFFER_START) {
		/* The cursor has moved on to the next buffer's number. */
		info = &t->index[it->cursor.buffer_index - 1];
		rd_release(t, info->start, info->end);
		it->in_buffer = 0;
	}
	if (!it->in_buffer) {
		if (it->next_slot >= it->end_slot)
			return 0;
		buffer =
		    it->order == XFDR_ORDER_THREAD ? t->thread_order[it->next_slot] : it->next_slot;
		it->next_slot++;
		rd_cursor_seek_buffer(&it->cursor, buffer);
		it->in_buffer = 1;
	}
	return 1;
}

int xfdr_events_next(struct xfdr_event_iter *it, struct xfdr_event *ev, struct xfdr_error *err)
{
	struct xfdr_trace *t = it->trace;
	struct xfdr_record *r = &it->pending;
	const struct rd_buffer_info *info;
	uint64_t buffer;
	struct rd_fn f;
	int rc;

	for (;;) {
		if (!in_buffer(it))
			return 0;
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
			    .pid = it->cursor.pid,
			    .offset = f.offset,
			    .buffer_index = buffer,
			    .wall_seconds = info->wall_seconds,
			    .wall_micros = info->wall_micros,
			};
			if (f.action == XFDR_FN_ENTER_ARGS)
				take_args(it, ev, f.offset, buffer);
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
		if (!r->is_metadata ||
		    (r->kind != XFDR_MD_CUSTOM_EVENT && r->kind != XFDR_MD_TYPED_EVENT))
			continue;
		/* Function records never get here: the fast path above took them. */
		info = &t->index[r->buffer_index];
		*ev = (struct xfdr_event){
		    .type = r->kind == XFDR_MD_TYPED_EVENT ? XFDR_EVENT_TYPED : XFDR_EVENT_CUSTOM,
		    .tsc = r->tsc,
		    .cpu = r->kind == XFDR_MD_CUSTOM_EVENT &&
				   (t->hdr.version == 2 || t->hdr.version == 3)
			       ? 0
			       : r->cpu,
		    .thread_id = r->thread_id,
		    .pid = r->pid,
		    .offset = r->offset,
		    .buffer_index = r->buffer_index,
		    .wall_seconds = info->wall_seconds,
		    .wall_micros = info->wall_micros,
		    .payload = r->payload,
		    .payload_bytes = r->payload_bytes,
		    .event_type = r->event_type,
		    .big_endian = t->hdr.big_endian,
		};
		return 1;
	}
}

int xfdr_events_next_call(struct xfdr_event_iter *it, struct xfdr_event *ev, struct xfdr_error *err)
{
	uint64_t buffer;
	struct rd_fn f;

	if (!in_buffer(it))
		return 0;
	buffer = it->cursor.buffer_index;
	if (!rd_next_function(&it->cursor, &f))
		return xfdr_events_next(it, ev, err);
	it->in_buffer = 2;
	ev->type = XFDR_EVENT_FUNCTION;
	ev->action = f.action;
	ev->function_id = f.function_id;
	ev->tsc = f.tsc;
	ev->offset = f.offset;
	ev->buffer_index = buffer;
	ev->arg_count = 0;
	if (f.action == XFDR_FN_ENTER_ARGS)
		take_args(it, ev, f.offset, buffer);
	return 1;
}

uint64_t xfdr_event_arg(const struct xfdr_trace *t, const struct xfdr_event *ev, uint32_t i)
{
	if (i >= ev->arg_count)
		return 0;
	return rd_u64(ev->args + (size_t)i * XFDR_MD_RECORD_BYTES + XFDR_CALL_ARG_VALUE_OFF,
		      t->hdr.big_endian);
}
