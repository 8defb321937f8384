/*
 * writer/payload.h - encode the payloads of xfdr's own custom events (layouts: xfdr/format.h).
 *
 * Pure encoding into caller-provided memory, in the byte order of the machine that runs the
 * code, reserved bytes zero; no I/O, no state, no clock, so it may run in a signal handler
 * (the flusher builds the drop buffer there). The caller puts the CustomEventMarker in front
 * with wr_custom_event_marker() and the payload's size from wr_drop_payload_bytes().
 */
#ifndef XFDR_WRITER_PAYLOAD_H
#define XFDR_WRITER_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/format.h"

/* The totals of a file (the fixed part of "XFDRDROP"). */
struct wr_drop_totals {
	uint64_t no_buffer;
	uint64_t reentrant;
	uint64_t too_large;
	uint64_t no_thread_slot;
	uint32_t threads_omitted; /* threads with drops that got no entry for lack of room */
	uint64_t overwritten;	  /* buffers reused by ring mode */
};

/* One thread's counts (an entry of "XFDRDROP"). */
struct wr_drop_entry {
	uint32_t tid;	    /* kernel thread id */
	uint16_t thread_id; /* the id in the thread's NewBuffer records */
	uint64_t no_buffer;
	uint64_t reentrant;
	uint64_t too_large;
	uint64_t overwritten;
};

static inline size_t wr_drop_payload_bytes(uint32_t entry_count)
{
	return XFDR_DROP_FIXED_BYTES + (size_t)entry_count * XFDR_DROP_ENTRY_BYTES;
}

/*
 * wr_drop_head - encode the fixed part of "XFDRDROP" at p: the tag, the layout version, the
 * entry count and the totals. The entry_count entries go right after it, each encoded with
 * wr_drop_entry() at p + XFDR_DROP_FIXED_BYTES + i * XFDR_DROP_ENTRY_BYTES (one at a time, so
 * a flusher in a signal handler needs no array of them). Returns XFDR_DROP_FIXED_BYTES.
 */
size_t wr_drop_head(uint8_t *p, const struct wr_drop_totals *totals, uint32_t entry_count);

/* wr_drop_entry - encode one thread's entry at p. Returns XFDR_DROP_ENTRY_BYTES. */
size_t wr_drop_entry(uint8_t *p, const struct wr_drop_entry *entry);

/*
 * wr_stack_context - encode "XFDRSTAK" at p: the call depth and the first id_count ids of
 * the shadow stack (outermost first; id_count <= depth and <= XFDR_STACK_IDS_MAX), zero
 * padding to a multiple of 8. Returns XFDR_STACK_PAYLOAD_BYTES(id_count).
 */
size_t wr_stack_context(uint8_t *p, uint32_t depth, const uint32_t *ids, uint32_t id_count);

/* A crash (the fields of "XFDRCRSH"). */
struct wr_crash_info {
	uint32_t signal;
	int32_t code;		/* si_code */
	uint32_t tid;		/* kernel tid of the crashing thread */
	uint64_t fault_addr;	/* si_addr; 0 for signals that have none */
	uint32_t flags;		/* XFDR_CRASH_TRUNCATED when the stack had more frames */
	uint32_t frame_count;	/* program counters in frames */
	const uint64_t *frames; /* innermost first */
};

/*
 * wr_crash - encode "XFDRCRSH" at p: the crash and its first min(frame_count,
 * XFDR_CRASH_FRAMES_MAX) frames; more than that sets XFDR_CRASH_TRUNCATED. p must hold
 * XFDR_CRASH_PAYLOAD_BYTES(frames kept) bytes. Returns that size (a multiple of 8).
 */
size_t wr_crash(uint8_t *p, const struct wr_crash_info *crash);

#endif /* XFDR_WRITER_PAYLOAD_H */
