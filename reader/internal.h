/*
 * reader/internal.h - what the reader's files share and nobody else sees.
 *
 * struct xfdr_trace holds the mapping, the decoded header and the buffer index. The index has
 * one small entry per buffer (its extent, process and thread id and WallClockTime), filled by
 * xfdr_trace_verify() as its walk enters each buffer and reads the preamble; nothing in the
 * reader grows with the number of records. After verification, everything that needs a
 * buffer's extent takes it from the index: only the sequential walk works one out (records.c).
 */
#ifndef XFDR_READER_INTERNAL_H
#define XFDR_READER_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reader/bytes.h"
#include "reader/error.h"
#include "xfdr/reader.h"

struct rd_buffer_info {
	uint64_t start; /* file offset of its first byte (NewBuffer; versions 2+: BufferExtents) */
	uint64_t end;	/* one past its last byte */
	uint64_t wall_seconds;
	uint32_t wall_micros;
	uint32_t thread_id;
	uint32_t pid; /* the Pid record (versions 3+), the thread id (version 2), 0 (version 1) */
};

struct xfdr_trace {
	const uint8_t *data;
	uint64_t bytes;
	int mapped; /* data is our mmap and is unmapped by xfdr_trace_close() */
	char *name;
	struct xfdr_header hdr;
	uint64_t buffer_count; /* from the header (version 1) or the BufferExtents chain */

	/* 0: not verified yet; 1: valid; -1: invalid, verify_err holds the first violation. */
	int verified;
	struct xfdr_error verify_err;
	struct rd_buffer_info *index; /* buffer_count entries once verified */
	uint64_t *thread_order;	      /* buffer numbers in XFDR_ORDER_THREAD order; lazy */
	uint64_t *thread_start;	      /* thread i's buffers: thread_order[thread_start[i] ..
					 thread_start[i + 1]); thread_count + 1 entries; lazy */
	uint64_t thread_count;
};

/*
 * Cursor states: what the previous record of the current buffer was. The preamble's states
 * come before RD_ST_NEW_CPU_ID and the body's from it on (rd_next_function() relies on it).
 */
enum {
	RD_ST_BUFFER_START = 0, /* at a buffer boundary: NewBuffer (versions 2+: BufferExtents)
				   must follow */
	RD_ST_BUFFER_EXTENTS,
	RD_ST_NEW_BUFFER,
	RD_ST_WALL_CLOCK,
	RD_ST_PID,
	RD_ST_NEW_CPU_ID,
	RD_ST_TSC_WRAP,
	RD_ST_CUSTOM_EVENT,
	RD_ST_TYPED_EVENT,
	RD_ST_CALL_ARGUMENT,
	RD_ST_FUNCTION, /* + action: RD_ST_FUNCTION + XFDR_FN_ENTER_ARGS is Entry_Args */
};

/*
 * rd_buffer_extents - versions 2+: check the BufferExtents record that must start buffer
 * number `buffer` at pos in the image d of `bytes` bytes (h its header, name for messages), and
 * set *end to one past the buffer's last byte. The count must cover at least the preamble of
 * the version and at most the rest of the file. Returns 0, or -1 with err filled. The only
 * rule for where a buffer ends in versions 2+: open (the chain that counts the buffers) and
 * the walk (entering a buffer) both use it.
 */
int rd_buffer_extents(const char *name, const uint8_t *d, uint64_t bytes,
		      const struct xfdr_header *h, uint64_t pos, uint64_t buffer, uint64_t *end,
		      struct xfdr_error *err);

/*
 * rd_release - the bytes [from, to) of a mapped trace will not be read again soon: give their
 * whole pages back (they stay in the page cache and fault back in if read). Keeps a walk over
 * a large file from holding all of it in its resident set. Nothing for a memory image or a
 * small file.
 */
void rd_release(const struct xfdr_trace *t, uint64_t from, uint64_t to);

/* Walks release what they have read in steps of this many bytes (a power of two). */
#define RD_RELEASE_STEP (4ull << 20)
/* rd_release() gives back whole regions of this size: a PMD, the largest folio mapped whole. */
#define RD_RELEASE_REGION (2ull << 20)

/* Fill err with "NAME: offset N: " followed by the formatted text; returns -1. */
int rd_fail(const struct xfdr_trace *t, struct xfdr_error *err, uint64_t offset, const char *fmt,
	    ...) __attribute__((format(printf, 4, 5)));

/* Same, before a trace exists (open): rd_fail_name() in reader/error.h. */

/* How far ahead of the record it decodes rd_next_function() prefetches. */
#define RD_PREFETCH_BYTES 1024
/* xfdr_trace_verify() walks a file in ranges of at least this many bytes, each by a thread. */
#define RD_VERIFY_RANGE_BYTES (32ull << 20)
#define RD_VERIFY_THREADS_MAX 8u

/* A function record as the fast path decodes it. */
struct rd_fn {
	uint64_t offset;
	uint64_t tsc; /* absolute: the base after adding this record's delta */
	uint32_t function_id;
	uint32_t tsc_delta;
	unsigned action;
};

/*
 * rd_next_function - the fast path of the state machine, for the record that makes up almost
 * all of a trace: if the next record is a function record with a known action, inside a
 * buffer body, and whole before the buffer's end, decode it, advance the cursor exactly as
 * xfdr_records_next() would, and return 1. Otherwise return 0 and touch nothing, so that the
 * general path decides (and words the error). xfdr_records_next() itself starts with this,
 * so there is one decoding of function records, not two.
 */
static inline int rd_next_function(struct xfdr_record_cursor *c, struct rd_fn *f)
{
	const struct xfdr_trace *t = c->trace;
	const int big = t->hdr.big_endian;
	const uint64_t pos = c->pos, end = c->buffer_end;
	const uint8_t *p;
	unsigned action;

	/*
	 * RD_ST_BUFFER_START (also the state at the end of the file) is below the body, so past
	 * this the buffer has been entered and buffer_end is known.
	 */
	if (c->state < RD_ST_NEW_CPU_ID)
		return 0;
	if (end - pos < XFDR_FN_RECORD_BYTES)
		return 0;
	p = t->data + pos;
	/* a walk outruns the hardware's prefetch at each new page: ask for the next lines */
	__builtin_prefetch(p + RD_PREFETCH_BYTES);
	if (rd_is_metadata(p[0], big))
		return 0;
	action = rd_fn_action(p[0], big);
	if (action >= XFDR_FN_ACTION_COUNT)
		return 0;
	f->tsc_delta = rd_u32(p + XFDR_FN_DELTA_OFF, big);
	c->base_tsc += f->tsc_delta;
	f->offset = pos;
	f->tsc = c->base_tsc;
	f->function_id = rd_fn_id(p + XFDR_FN_WORD_OFF, big);
	f->action = action;
	c->pos = pos + XFDR_FN_RECORD_BYTES;
	if (c->pos == end) {
		/* Exactly full: the buffer ends without an EndOfBuffer. */
		c->buffer_index++;
		c->state = RD_ST_BUFFER_START;
	} else {
		c->state = RD_ST_FUNCTION + (int)action;
	}
	return 1;
}

/*
 * rd_skip_call_arguments - move the cursor, right after an Entry_Args that rd_next_function()
 * took, past the n CallArgument records that follow it (n as counted in the buffer), as n
 * steps of xfdr_records_next() would: only on a trace xfdr_trace_verify() accepted.
 */
void rd_skip_call_arguments(struct xfdr_record_cursor *c, uint32_t n);

/*
 * Put the cursor at the first byte of the given buffer, in the state a buffer starts in, with
 * the buffer's extent from the index: only once xfdr_trace_verify() has succeeded.
 */
void rd_cursor_seek_buffer(struct xfdr_record_cursor *c, uint64_t buffer);

/*
 * Order the buffers for XFDR_ORDER_THREAD and find where each thread's run starts (once;
 * t->thread_order, t->thread_start, t->thread_count). Returns 0 or -1.
 */
int rd_build_thread_order(struct xfdr_trace *t, struct xfdr_error *err);

/* ---- xfdr's own custom-event payloads (stack_context.c, crash_event.c, drop_event.c) ------ */

#define RD_PAYLOAD_TAG_BYTES 8u

/* Fill err (if not NULL) with "payload offset N: " followed by the formatted text; returns -1. */
static inline int rd_payload_fail(struct xfdr_error *err, uint32_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline int rd_payload_fail(struct xfdr_error *err, uint32_t offset, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err)
		return -1;
	err->offset = offset;
	n = snprintf(err->text, sizeof(err->text), "payload offset %u: ", offset);
	va_start(ap, fmt);
	vsnprintf(err->text + n, sizeof(err->text) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * rd_payload_head - the checks every xfdr payload starts with, in the order of its fields: at
 * least min_bytes bytes, the 8-byte tag (a string such as XFDR_STACK_MAGIC, also its name in
 * messages), and the u32 layout version at version_off. Returns 0, or -1 with err filled by
 * rd_payload_fail() naming the first field at fault.
 */
static inline int rd_payload_head(const uint8_t *payload, uint32_t bytes, int big_endian,
				  const char *tag, uint32_t min_bytes, uint32_t version_off,
				  uint32_t version, struct xfdr_error *err)
{
	char want[2 * RD_PAYLOAD_TAG_BYTES + 1], found[2 * RD_PAYLOAD_TAG_BYTES + 1];
	uint32_t i, v;

	if (bytes < min_bytes)
		return rd_payload_fail(err, 0,
				       "expected at least %u bytes for an %s payload, found %u",
				       min_bytes, tag, bytes);
	if (!xfdr_payload_has_tag(payload, bytes, tag)) {
		for (i = 0; i < RD_PAYLOAD_TAG_BYTES; i++) {
			snprintf(want + 2 * i, 3, "%02x", (uint8_t)tag[i]);
			snprintf(found + 2 * i, 3, "%02x", payload[i]);
		}
		return rd_payload_fail(err, 0, "expected the tag %s (%s), found %s", tag, want,
				       found);
	}
	v = rd_u32(payload + version_off, big_endian);
	if (v != version)
		return rd_payload_fail(err, version_off, "expected %s layout version %u, found %u",
				       tag, version, v);
	return 0;
}

#endif /* XFDR_READER_INTERNAL_H */
