/*
 * reader/lib/records.c - the record state machine: one record per step, checked against the
 * grammar of the spec ("Format Grammar and Invariants"), decoded in place.
 *
 * A file is the header and then buffers, one after the other. Per buffer:
 *
 *   BUFFER_START -NewBuffer-> NEW_BUFFER -WallClockTime-> WALL_CLOCK -NewCPUId-> body
 *   body: NewCPUId | TSCWrap | Function | CustomEventMarker payload | CallArgument
 *         (CallArgument only right after Entry_Args or another CallArgument)
 *   end:  EndOfBuffer, whose padding up to the buffer's end is skipped unread, or a record
 *         that ends exactly at the buffer's end.
 *
 * The state is the kind of the previous record of the buffer (RD_ST_*), which is all the
 * grammar needs and names the predecessor in messages. A step checks, in this order, that the
 * kind or action is known, that the grammar allows it here, and that it fits before the end
 * of its buffer; only then does it touch the cursor. So a failed step leaves the cursor where
 * it was (calling again reports the same violation) and every successful step advances at
 * least 8 bytes: the walk cannot loop, and never reads past the buffer it is in, which the
 * header check in trace.c keeps inside the file.
 *
 * Extents: the cursor carries the end of the buffer it is in. A walk that reaches a buffer's
 * start does not know that end yet: the step that enters the buffer works it out, there and
 * nowhere else, by the rule of the format version. That is all a failed step may leave
 * behind, and a second attempt would work out the same. A cursor put at a buffer by
 * rd_cursor_seek_buffer() takes the extent from the index instead.
 *
 * Time: NewCPUId sets the CPU and the base TSC, TSCWrap sets the base TSC, and each function
 * record adds its 32-bit delta to the base (mod 2^64), so a delta counts from the previous
 * record that carried time. A v1 CustomEventMarker carries its own absolute TSC and leaves the
 * base alone: llvm-xray 14 reads a v1 Entry(+10) after NewCPUId(tsc 1000), a custom event at
 * tsc 5000, then Exit(+5) as 1010, 5000, 1015 (checked by hand with `llvm-xray convert`).
 */
#include <stdio.h>
#include <string.h>

#include "reader/lib/bytes.h"
#include "reader/lib/internal.h"

void rd_cursor_seek_buffer(struct xfdr_record_cursor *c, uint64_t buffer)
{
	const struct rd_buffer_info *b = &c->trace->index[buffer];

	c->pos = b->start;
	c->buffer_end = b->end;
	c->buffer_index = buffer;
	c->state = RD_ST_BUFFER_START;
	c->base_tsc = 0;
	c->cpu = 0;
	c->thread_id = 0;
	c->pid = 0;
	c->done = 0;
}

void xfdr_records_begin(const struct xfdr_trace *t, struct xfdr_record_cursor *c)
{
	memset(c, 0, sizeof(*c));
	c->trace = t;
	/* The first buffer follows the header; its end is unknown (0) until the walk enters it. */
	c->pos = XFDR_FILE_HEADER_BYTES;
	c->state = RD_ST_BUFFER_START;
}

/* "Function record (Exit)", "TSCWrap record": the wording of "found ..." and "after ...". */
static const char *describe(char *out, size_t n, int is_md, unsigned kind)
{
	if (is_md)
		snprintf(out, n, "%s record", xfdr_md_kind_name(kind));
	else
		snprintf(out, n, "Function record (%s)", xfdr_fn_action_name(kind));
	return out;
}

static const char *describe_state(char *out, size_t n, int state)
{
	static const unsigned md_of_state[] = {
	    [RD_ST_NEW_BUFFER] = XFDR_MD_NEW_BUFFER,
	    [RD_ST_WALL_CLOCK] = XFDR_MD_WALL_CLOCK_TIME,
	    [RD_ST_NEW_CPU_ID] = XFDR_MD_NEW_CPU_ID,
	    [RD_ST_TSC_WRAP] = XFDR_MD_TSC_WRAP,
	    [RD_ST_CUSTOM_EVENT] = XFDR_MD_CUSTOM_EVENT,
	    [RD_ST_CALL_ARGUMENT] = XFDR_MD_CALL_ARGUMENT,
	};

	if (state >= RD_ST_FUNCTION)
		return describe(out, n, 0, (unsigned)(state - RD_ST_FUNCTION));
	return describe(out, n, 1, md_of_state[state]);
}

/*
 * The grammar: may a record (is_md, kind) follow the previous record `state`?
 * Returns 0, or -1 with err filled.
 */
static int check_grammar(const struct xfdr_record_cursor *c, uint64_t pos, int is_md, unsigned kind,
			 struct xfdr_error *err)
{
	const struct xfdr_trace *t = c->trace;
	char found[64], prev[64];

	/* Only the failure paths format anything: this runs for every metadata record. */
	switch (c->state) {
	case RD_ST_BUFFER_START:
		if (is_md && kind == XFDR_MD_NEW_BUFFER)
			return 0;
		return rd_fail(t, err, pos,
			       "expected NewBuffer at the start of buffer %llu, found %s",
			       (unsigned long long)c->buffer_index,
			       describe(found, sizeof(found), is_md, kind));
	case RD_ST_NEW_BUFFER:
		if (is_md && kind == XFDR_MD_WALL_CLOCK_TIME)
			return 0;
		return rd_fail(t, err, pos, "expected WallClockTime after NewBuffer, found %s",
			       describe(found, sizeof(found), is_md, kind));
	case RD_ST_WALL_CLOCK:
		if (is_md && kind == XFDR_MD_NEW_CPU_ID)
			return 0;
		return rd_fail(t, err, pos, "expected NewCPUId after WallClockTime, found %s",
			       describe(found, sizeof(found), is_md, kind));
	}
	if (!is_md)
		return 0;
	switch (kind) {
	case XFDR_MD_NEW_BUFFER:
	case XFDR_MD_WALL_CLOCK_TIME:
		return rd_fail(t, err, pos,
			       "expected NewCPUId, TSCWrap, Function, CustomEventMarker, "
			       "CallArgument or EndOfBuffer in the body of buffer %llu, found %s",
			       (unsigned long long)c->buffer_index,
			       describe(found, sizeof(found), is_md, kind));
	case XFDR_MD_CALL_ARGUMENT:
		if (c->state == RD_ST_CALL_ARGUMENT ||
		    c->state == RD_ST_FUNCTION + XFDR_FN_ENTER_ARGS)
			return 0;
		return rd_fail(t, err, pos,
			       "expected CallArgument only after Function record (Entry_Args) or "
			       "CallArgument, found CallArgument after %s",
			       describe_state(prev, sizeof(prev), c->state));
	}
	return 0;
}

static int fail_cut(const struct xfdr_trace *t, struct xfdr_error *err, uint64_t pos, uint64_t need,
		    const char *what, uint64_t room, uint64_t buf_end)
{
	return rd_fail(t, err, pos,
		       "expected %llu bytes for %s, found %llu before the end of the buffer at "
		       "offset %llu",
		       (unsigned long long)need, what, (unsigned long long)room,
		       (unsigned long long)buf_end);
}

int xfdr_records_next(struct xfdr_record_cursor *c, struct xfdr_record *r, struct xfdr_error *err)
{
	const struct xfdr_trace *t = c->trace;
	const int big = t->hdr.big_endian;
	const uint64_t pos = c->pos, buffer = c->buffer_index;
	uint64_t buf_end, room, size;
	const uint8_t *p;
	unsigned kind;
	int is_md, state;
	struct rd_fn f;
	char what[64];

	if (rd_next_function(c, &f)) {
		/* One compound literal, not memset: a few vector stores on the hot path. */
		*r = (struct xfdr_record){
		    .offset = f.offset,
		    .buffer_index = buffer,
		    .kind = f.action,
		    .size = XFDR_FN_RECORD_BYTES,
		    .function_id = f.function_id,
		    .tsc_delta = f.tsc_delta,
		    .tsc = f.tsc,
		    .thread_id = c->thread_id,
		    .pid = c->pid,
		    .cpu = c->cpu,
		};
		return 1;
	}
	if (c->done)
		return 0;
	if (c->buffer_index >= t->buffer_count) {
		c->done = 1;
		return 0;
	}
	/* Entering a buffer: v1 has no BufferExtents record, so it is header.buffer_size bytes. */
	if (c->state == RD_ST_BUFFER_START && c->buffer_end <= pos)
		c->buffer_end = pos + t->hdr.buffer_size;
	buf_end = c->buffer_end;
	room = buf_end - pos;
	p = t->data + pos;

	/*
	 * Function records that got here broke a rule (the fast path takes every valid one):
	 * find which, in the order the messages promise.
	 */
	is_md = rd_is_metadata(p[0], big);
	if (is_md) {
		kind = rd_md_kind(p[0], big);
		if (kind >= XFDR_MD_KIND_COUNT)
			return rd_fail(t, err, pos,
				       "expected a metadata record kind 0-6 (NewBuffer .. "
				       "CallArgument), found kind %u",
				       kind);
	} else {
		kind = rd_fn_action(p[0], big);
		if (kind >= XFDR_FN_ACTION_COUNT)
			return rd_fail(t, err, pos,
				       "expected a function record action 0-3 (Entry, Exit, "
				       "Tail_Exit, Entry_Args), found action %u",
				       kind);
	}
	if (check_grammar(c, pos, is_md, kind, err))
		return -1;
	size = is_md ? XFDR_MD_RECORD_BYTES : XFDR_FN_RECORD_BYTES;
	if (room < size)
		return fail_cut(t, err, pos, size, describe(what, sizeof(what), is_md, kind), room,
				buf_end);
	if (!is_md)
		return rd_fail(t, err, pos,
			       "expected a decodable record, found an internal "
			       "error of the reader");

	*r = (struct xfdr_record){
	    .offset = pos,
	    .buffer_index = c->buffer_index,
	    .is_metadata = 1,
	    .kind = kind,
	    .thread_id = c->thread_id,
	    .pid = c->pid,
	    .cpu = c->cpu,
	};
	switch (kind) {
	case XFDR_MD_NEW_BUFFER:
		/*
		 * Nothing of the previous buffer carries over: the CPU is unknown until this
		 * buffer's NewCPUId (which also sets the time base before any delta is added).
		 */
		c->thread_id = rd_u16(p + XFDR_NEW_BUFFER_TID_OFF, big);
		c->cpu = 0;
		r->thread_id = c->thread_id;
		r->cpu = 0;
		state = RD_ST_NEW_BUFFER;
		break;
	case XFDR_MD_WALL_CLOCK_TIME:
		r->seconds = rd_u64(p + XFDR_WALL_SECONDS_OFF, big);
		r->micros = rd_u32(p + XFDR_WALL_MICROS_OFF, big);
		state = RD_ST_WALL_CLOCK;
		break;
	case XFDR_MD_NEW_CPU_ID:
		c->cpu = rd_u16(p + XFDR_NEW_CPU_ID_CPU_OFF, big);
		c->base_tsc = rd_u64(p + XFDR_NEW_CPU_ID_TSC_OFF, big);
		r->cpu = c->cpu;
		r->absolute_tsc = c->base_tsc;
		r->tsc = c->base_tsc;
		state = RD_ST_NEW_CPU_ID;
		break;
	case XFDR_MD_TSC_WRAP:
		c->base_tsc = rd_u64(p + XFDR_TSC_WRAP_TSC_OFF, big);
		r->absolute_tsc = c->base_tsc;
		r->tsc = c->base_tsc;
		state = RD_ST_TSC_WRAP;
		break;
	case XFDR_MD_CUSTOM_EVENT:
		r->payload_bytes = rd_u32(p + XFDR_CUSTOM_SIZE_OFF, big);
		r->absolute_tsc = rd_u64(p + XFDR_CUSTOM_TSC_OFF, big);
		r->tsc = r->absolute_tsc;
		if (room - XFDR_MD_RECORD_BYTES < r->payload_bytes) {
			snprintf(what, sizeof(what), "a CustomEventMarker and its %u-byte payload",
				 r->payload_bytes);
			return fail_cut(t, err, pos,
					XFDR_MD_RECORD_BYTES + (uint64_t)r->payload_bytes, what,
					room, buf_end);
		}
		r->payload = p + XFDR_MD_RECORD_BYTES;
		size += r->payload_bytes;
		state = RD_ST_CUSTOM_EVENT;
		break;
	case XFDR_MD_CALL_ARGUMENT:
		r->arg = rd_u64(p + XFDR_CALL_ARG_VALUE_OFF, big);
		state = RD_ST_CALL_ARGUMENT;
		break;
	default: /* XFDR_MD_END_OF_BUFFER: the padding after it is never interpreted */
		r->skipped_bytes = room - XFDR_MD_RECORD_BYTES;
		r->size = XFDR_MD_RECORD_BYTES;
		c->pos = buf_end;
		c->buffer_index++;
		c->state = RD_ST_BUFFER_START;
		return 1;
	}

	r->size = (uint32_t)size;
	c->pos = pos + size;
	if (c->pos == buf_end) {
		c->buffer_index++;
		c->state = RD_ST_BUFFER_START;
	} else {
		c->state = state;
	}
	return 1;
}
