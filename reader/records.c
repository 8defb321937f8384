/*
 * reader/records.c - the record state machine: one record per step, checked against the
 * grammar of the file's format version, decoded in place.
 *
 * A file is the header and then buffers, one after the other. Per buffer, version 1 (the
 * spec's "Format Grammar and Invariants"):
 *
 *   BUFFER_START -NewBuffer-> NEW_BUFFER -WallClockTime-> WALL_CLOCK -NewCPUId-> body
 *   body: NewCPUId | TSCWrap | Function | CustomEventMarker payload | CallArgument
 *         (CallArgument only right after Entry_Args or another CallArgument)
 *   end:  EndOfBuffer, whose padding up to the buffer's end is skipped unread, or a record
 *         that ends exactly at the buffer's end.
 *
 * Versions 2 to 5, as compiler-rt's FDR runtime writes them (one buffer per BufferExtents
 * record, exactly the bytes it counts, in its flush):
 *
 *   BUFFER_START -BufferExtents-> BUFFER_EXTENTS -NewBuffer-> NEW_BUFFER -WallClockTime->
 *   WALL_CLOCK [-Pid-> PID, versions 3+] -NewCPUId-> body
 *   body: as in version 1, and TypedEventMarker payload; no EndOfBuffer (llvm-xray refuses it
 *         from version 2 on): the buffer ends with the last byte its BufferExtents counts,
 *         which must be the end of a record (llvm-xray: "Buffer over-read").
 *
 * The Pid record is required in versions 3+: compiler-rt writes it in every preamble from
 * version 3 on (NewBuffer, WallClockTime, Pid in one go), and without it llvm-xray gives a
 * buffer's events the process of whatever buffer its expander saw last, so a buffer without
 * one is damaged or forged, not an older writer. It is refused elsewhere and in versions 1-2.
 * Metadata kinds: 0-6 in version 1, 0-8 in version 2 (BufferExtents, TypedEventMarker), 0-9
 * from version 3 (Pid). NewBuffer's thread id is 16 bits in version 1 (the spec) and 32 in
 * versions 2+ (the runtime's pid_t, as llvm-xray reads it). Custom and typed payload sizes are
 * i32s that llvm-xray requires to be positive in versions 2+; version 1 keeps taking 0.
 *
 * The state is the kind of the previous record of the buffer (RD_ST_*), which is all the
 * grammar needs and names the predecessor in messages. A step checks, in this order, that the
 * kind or action is known, that the grammar allows it here, and that it fits before the end
 * of its buffer; only then does it touch the cursor. So a failed step leaves the cursor where
 * it was (calling again reports the same violation) and every successful step advances at
 * least 8 bytes: the walk cannot loop, and never reads past the buffer it is in, which the
 * framing check in trace.c keeps inside the file.
 *
 * Extents: the cursor carries the end of the buffer it is in. A walk that reaches a buffer's
 * start does not know that end yet: the step that enters the buffer works it out, there and
 * nowhere else, by the rule of the format version (version 1: header.buffer_size on; 2+: the
 * BufferExtents count, by rd_buffer_extents(), the rule open followed to count the buffers).
 * That is all a failed step may leave behind, and a second attempt would work out the same. A
 * cursor put at a buffer by rd_cursor_seek_buffer() takes the extent from the index instead.
 *
 * Time: NewCPUId sets the CPU and the base TSC, TSCWrap sets the base TSC, and each function
 * record adds its 32-bit delta to the base (mod 2^64), so a delta counts from the previous
 * record that carried time. A CustomEventMarker of versions 1-4 carries its own absolute TSC
 * and leaves the base alone: llvm-xray 14 reads a v1 Entry(+10) after NewCPUId(tsc 1000), a
 * custom event at tsc 5000, then Exit(+5) as 1010, 5000, 1015 (checked by hand with
 * `llvm-xray convert`). A version 5 CustomEventMarker and every TypedEventMarker carry a signed
 * 32-bit delta instead and move the base like a function record (a negative one backwards:
 * llvm-xray reads typed(-2) after Entry at 5001 as 4999).
 */
#include <stdio.h>
#include <string.h>

#include "reader/bytes.h"
#include "reader/internal.h"

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
	c->released = b->start;
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

/* The metadata kind whose record leaves the cursor in `state` (below RD_ST_FUNCTION). */
static unsigned state_md_kind(int state)
{
	static const unsigned md_of_state[] = {
	    [RD_ST_BUFFER_EXTENTS] = XFDR_MD_BUFFER_EXTENTS,
	    [RD_ST_NEW_BUFFER] = XFDR_MD_NEW_BUFFER,
	    [RD_ST_WALL_CLOCK] = XFDR_MD_WALL_CLOCK_TIME,
	    [RD_ST_PID] = XFDR_MD_PID,
	    [RD_ST_NEW_CPU_ID] = XFDR_MD_NEW_CPU_ID,
	    [RD_ST_TSC_WRAP] = XFDR_MD_TSC_WRAP,
	    [RD_ST_CUSTOM_EVENT] = XFDR_MD_CUSTOM_EVENT,
	    [RD_ST_TYPED_EVENT] = XFDR_MD_TYPED_EVENT,
	    [RD_ST_CALL_ARGUMENT] = XFDR_MD_CALL_ARGUMENT,
	};

	return md_of_state[state];
}

static const char *describe_state(char *out, size_t n, int state)
{
	if (state >= RD_ST_FUNCTION)
		return describe(out, n, 0, (unsigned)(state - RD_ST_FUNCTION));
	return describe(out, n, 1, state_md_kind(state));
}

/* The preamble record that must follow `state`, or -1 in the body. */
static int preamble_next(int state, unsigned version)
{
	switch (state) {
	case RD_ST_BUFFER_START:
		return version >= 2 ? XFDR_MD_BUFFER_EXTENTS : XFDR_MD_NEW_BUFFER;
	case RD_ST_BUFFER_EXTENTS:
		return XFDR_MD_NEW_BUFFER;
	case RD_ST_NEW_BUFFER:
		return XFDR_MD_WALL_CLOCK_TIME;
	case RD_ST_WALL_CLOCK:
		return version >= 3 ? XFDR_MD_PID : XFDR_MD_NEW_CPU_ID;
	case RD_ST_PID:
		return XFDR_MD_NEW_CPU_ID;
	}
	return -1;
}

/*
 * The grammar: may a record (is_md, kind) follow the previous record `state`?
 * Returns 0, or -1 with err filled.
 */
static int check_grammar(const struct xfdr_record_cursor *c, uint64_t pos, int is_md, unsigned kind,
			 struct xfdr_error *err)
{
	const struct xfdr_trace *t = c->trace;
	const unsigned version = t->hdr.version;
	int want = preamble_next(c->state, version);
	char found[64], prev[64];

	/* Only the failure paths format anything: this runs for every metadata record. */
	if (want >= 0) {
		if (is_md && kind == (unsigned)want)
			return 0;
		if (c->state == RD_ST_BUFFER_START)
			return rd_fail(
			    t, err, pos, "expected %s at the start of buffer %llu, found %s",
			    xfdr_md_kind_name((unsigned)want), (unsigned long long)c->buffer_index,
			    describe(found, sizeof(found), is_md, kind));
		return rd_fail(t, err, pos, "expected %s after %s, found %s",
			       xfdr_md_kind_name((unsigned)want),
			       xfdr_md_kind_name(state_md_kind(c->state)),
			       describe(found, sizeof(found), is_md, kind));
	}
	if (!is_md)
		return 0;
	switch (kind) {
	case XFDR_MD_END_OF_BUFFER:
		if (version == 1)
			return 0;
		/* Buffers of versions 2+ end where their BufferExtents record says. */
		__attribute__((fallthrough));
	case XFDR_MD_NEW_BUFFER:
	case XFDR_MD_WALL_CLOCK_TIME:
	case XFDR_MD_BUFFER_EXTENTS:
	case XFDR_MD_PID:
		return rd_fail(t, err, pos,
			       version == 1
				   ? "expected NewCPUId, TSCWrap, Function, CustomEventMarker, "
				     "CallArgument or EndOfBuffer in the body of buffer %llu, "
				     "found %s"
				   : "expected NewCPUId, TSCWrap, Function, CustomEventMarker, "
				     "TypedEventMarker or CallArgument in the body of buffer "
				     "%llu, found %s",
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

/* Is kind a metadata kind of this version? Returns 0, or -1 with err filled. */
static int check_kind(const struct xfdr_trace *t, uint64_t pos, unsigned kind,
		      struct xfdr_error *err)
{
	switch (t->hdr.version) {
	case 1:
		if (kind < XFDR_MD_KIND_COUNT)
			return 0;
		return rd_fail(t, err, pos,
			       "expected a metadata record kind 0-6 (NewBuffer .. CallArgument), "
			       "found kind %u",
			       kind);
	case 2:
		if (kind < XFDR_MD_PID)
			return 0;
		return rd_fail(
		    t, err, pos,
		    "expected a metadata record kind 0-8 (NewBuffer .. TypedEventMarker; "
		    "version 2 has no Pid), found kind %u",
		    kind);
	}
	if (kind < XFDR_MD_KIND_COUNT_ALL)
		return 0;
	return rd_fail(t, err, pos,
		       "expected a metadata record kind 0-9 (NewBuffer .. Pid), found kind %u",
		       kind);
}

/*
 * A custom or typed event's payload size (versions 2+: an i32 that llvm-xray requires to be
 * positive) and room. Returns 0, or -1 with err filled.
 */
static int check_payload(const struct xfdr_trace *t, uint64_t pos, unsigned kind, uint32_t bytes,
			 uint64_t room, uint64_t buf_end, struct xfdr_error *err)
{
	char what[80];

	if (t->hdr.version >= 2 && (bytes == 0 || bytes > INT32_MAX))
		return rd_fail(t, err, pos,
			       "expected a %s payload size of 1 to 2147483647 bytes, found %d",
			       xfdr_md_kind_name(kind), (int32_t)bytes);
	if (room - XFDR_MD_RECORD_BYTES < bytes) {
		snprintf(what, sizeof(what), "a %s and its %u-byte payload",
			 xfdr_md_kind_name(kind), bytes);
		return fail_cut(t, err, pos, XFDR_MD_RECORD_BYTES + (uint64_t)bytes, what, room,
				buf_end);
	}
	return 0;
}

/*
 * Where the buffer the cursor is entering ends: version 1, header.buffer_size bytes on; versions
 * 2+, where its BufferExtents record says. Open checked the whole chain, so the second case can
 * fail only on a record that is no BufferExtents, which the grammar then reports: the end is
 * the record's, so that the step fails before any fit check.
 */
static uint64_t enter_buffer(const struct xfdr_record_cursor *c)
{
	const struct xfdr_trace *t = c->trace;
	uint64_t end;

	if (t->hdr.version == 1)
		return c->pos + t->hdr.buffer_size;
	if (!rd_buffer_extents(t->name, t->data, t->bytes, &t->hdr, c->pos, c->buffer_index, &end,
			       NULL))
		return end;
	return c->pos + (t->bytes - c->pos < XFDR_MD_RECORD_BYTES ? t->bytes - c->pos
								  : XFDR_MD_RECORD_BYTES);
}

/*
 * A custom or typed event's fields and payload into r (kind XFDR_MD_CUSTOM_EVENT or
 * XFDR_MD_TYPED_EVENT, the record at p with room bytes left in its buffer). Returns 0, or -1
 * with err filled.
 */
static int decode_event(struct xfdr_record_cursor *c, struct xfdr_record *r, const uint8_t *p,
			unsigned kind, uint64_t room, uint64_t buf_end, struct xfdr_error *err)
{
	const struct xfdr_trace *t = c->trace;
	const int big = t->hdr.big_endian;
	const unsigned version = t->hdr.version;
	int32_t delta;

	r->payload_bytes = rd_u32(
	    p + (kind == XFDR_MD_TYPED_EVENT ? XFDR_TYPED_SIZE_OFF : XFDR_CUSTOM_SIZE_OFF), big);
	if (check_payload(t, r->offset, kind, r->payload_bytes, room, buf_end, err))
		return -1;
	r->payload = p + XFDR_MD_RECORD_BYTES;
	if (kind == XFDR_MD_TYPED_EVENT) {
		delta = (int32_t)rd_u32(p + XFDR_TYPED_DELTA_OFF, big);
		c->base_tsc += (uint64_t)(int64_t)delta;
		r->event_delta = delta;
		r->event_type = rd_u16(p + XFDR_TYPED_TYPE_OFF, big);
		r->absolute_tsc = c->base_tsc;
	} else if (version >= 5) {
		/* Delta-encoded like a function record, but signed. */
		delta = (int32_t)rd_u32(p + XFDR_CUSTOM_DELTA_OFF, big);
		c->base_tsc += (uint64_t)(int64_t)delta;
		r->event_delta = delta;
		r->absolute_tsc = c->base_tsc;
	} else {
		/* An absolute TSC that leaves the base alone. */
		r->absolute_tsc = rd_u64(p + XFDR_CUSTOM_TSC_OFF, big);
		if (version == 4)
			r->cpu = rd_u16(p + XFDR_CUSTOM_CPU_OFF, big);
	}
	r->tsc = r->absolute_tsc;
	return 0;
}

/* Move the cursor to end, past a record after which the grammar is in state. */
static void step_to(struct xfdr_record_cursor *c, uint64_t end, int state)
{
	c->pos = end;
	if (end == c->buffer_end) {
		/*
		 * Every preamble record fits in a buffer (v1: buffer_size, v2+: the least count
		 * rd_buffer_extents() takes), so a buffer can only end in the body.
		 */
		c->buffer_index++;
		c->state = RD_ST_BUFFER_START;
	} else {
		c->state = state;
	}
}

void rd_skip_call_arguments(struct xfdr_record_cursor *c, uint32_t n)
{
	if (n)
		step_to(c, c->pos + (uint64_t)n * XFDR_MD_RECORD_BYTES, RD_ST_CALL_ARGUMENT);
}

/*
 * The metadata record of kind at p (checked: the kind, the grammar, the room for its 16 bytes)
 * into r, and the cursor past it. Returns 1, or -1 with err filled.
 */
static int next_metadata(struct xfdr_record_cursor *c, struct xfdr_record *r, const uint8_t *p,
			 unsigned kind, struct xfdr_error *err)
{
	const struct xfdr_trace *t = c->trace;
	const int big = t->hdr.big_endian;
	const unsigned version = t->hdr.version;
	const uint64_t pos = c->pos, buf_end = c->buffer_end, room = buf_end - pos;
	uint64_t size = XFDR_MD_RECORD_BYTES, end;
	int state;

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
	case XFDR_MD_BUFFER_EXTENTS:
		/* Entering the buffer checked it; this only reports the count. */
		if (rd_buffer_extents(t->name, t->data, t->bytes, &t->hdr, pos, c->buffer_index,
				      &end, err))
			return -1;
		r->extents_bytes = end - pos - XFDR_MD_RECORD_BYTES;
		state = RD_ST_BUFFER_EXTENTS;
		break;
	case XFDR_MD_NEW_BUFFER:
		/*
		 * Nothing of the previous buffer carries over: the CPU is unknown until this
		 * buffer's NewCPUId (which also sets the time base before any delta is added),
		 * the process until its Pid record.
		 */
		c->thread_id = version == 1 ? rd_u16(p + XFDR_NEW_BUFFER_TID_OFF, big)
					    : rd_u32(p + XFDR_NEW_BUFFER_TID_OFF, big);
		/* llvm-xray's TraceExpander takes a version 2 buffer's thread id as its pid. */
		c->pid = version == 2 ? c->thread_id : 0;
		c->cpu = 0;
		r->thread_id = c->thread_id;
		r->pid = c->pid;
		r->cpu = 0;
		state = RD_ST_NEW_BUFFER;
		break;
	case XFDR_MD_WALL_CLOCK_TIME:
		r->seconds = rd_u64(p + XFDR_WALL_SECONDS_OFF, big);
		r->micros = rd_u32(p + XFDR_WALL_MICROS_OFF, big);
		state = RD_ST_WALL_CLOCK;
		break;
	case XFDR_MD_PID:
		c->pid = rd_u32(p + XFDR_PID_OFF, big);
		r->pid = c->pid;
		state = RD_ST_PID;
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
	case XFDR_MD_TYPED_EVENT:
		if (decode_event(c, r, p, kind, room, buf_end, err))
			return -1;
		size += r->payload_bytes;
		state = kind == XFDR_MD_CUSTOM_EVENT ? RD_ST_CUSTOM_EVENT : RD_ST_TYPED_EVENT;
		break;
	case XFDR_MD_CALL_ARGUMENT:
		r->arg = rd_u64(p + XFDR_CALL_ARG_VALUE_OFF, big);
		state = RD_ST_CALL_ARGUMENT;
		break;
	default: /* XFDR_MD_END_OF_BUFFER (version 1): the padding after it is never read */
		r->skipped_bytes = room - XFDR_MD_RECORD_BYTES;
		r->size = XFDR_MD_RECORD_BYTES;
		step_to(c, buf_end, RD_ST_BUFFER_START);
		return 1;
	}
	r->size = (uint32_t)size;
	step_to(c, pos + size, state);
	return 1;
}

int xfdr_records_next(struct xfdr_record_cursor *c, struct xfdr_record *r, struct xfdr_error *err)
{
	const struct xfdr_trace *t = c->trace;
	const int big = t->hdr.big_endian;
	const uint64_t pos = c->pos, buffer = c->buffer_index;
	uint64_t room, size;
	const uint8_t *p;
	unsigned kind;
	int is_md;
	struct rd_fn f;
	char what[64];

	/* A walk holds no more of a large file in memory than the step it is in. */
	if (pos >= c->released + RD_RELEASE_STEP) {
		/* Up to the region pos is in: rd_release() rounds outwards, past pos otherwise. */
		uint64_t to = pos & ~(RD_RELEASE_REGION - 1);

		rd_release(t, c->released, to);
		c->released = to;
	}
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
	if (c->state == RD_ST_BUFFER_START && c->buffer_end <= pos)
		c->buffer_end = enter_buffer(c);
	room = c->buffer_end - pos;
	p = t->data + pos;

	/*
	 * Function records that got here broke a rule (the fast path takes every valid one):
	 * find which, in the order the messages promise.
	 */
	is_md = rd_is_metadata(p[0], big);
	if (is_md) {
		kind = rd_md_kind(p[0], big);
		if (check_kind(t, pos, kind, err))
			return -1;
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
				c->buffer_end);
	if (!is_md)
		return rd_fail(t, err, pos,
			       "expected a decodable record, found an internal "
			       "error of the reader");
	return next_metadata(c, r, p, kind, err);
}
