/*
 * xfdr/format.h - the XRay Flight Data Recorder trace format, version 1.
 *
 * Constants, kinds, record sizes and byte offsets of every field the specification
 * (XRayFDRFormat, "Version: 1 as of 2017-07-20") fixes. This header is the only thing the
 * writer and the reader share; both encode and decode with explicit byte operations, never
 * through C bit-fields or struct layouts, so host padding and byte order cannot leak in.
 *
 * Byte order: every multi-byte field uses the byte order of the producing machine. A reader
 * tells the order from the header's 16-bit version field (1 as little-endian is 01 00).
 *
 * Function record (8 bytes), as the 64-bit little-endian word w:
 *   bit 0: discriminant (0) | bits 1-3: action | bits 4-31: function id | bits 32-63: tsc delta
 * On big-endian machines the first 32-bit word holds, from the most significant bit:
 *   bit 31: discriminant | bits 28-30: action | bits 0-27: function id; then the 32-bit delta.
 *
 * Metadata record (16 bytes): byte 0 holds the discriminant (1) and the 7-bit kind
 *   (little-endian: kind << 1 | 1; big-endian: 0x80 | kind), then 15 data bytes whose
 *   layout depends on the kind (offsets below are from the start of the record).
 *
 * A file: one 32-byte header, then whole thread buffers of exactly buffer_size bytes each:
 *   NewBuffer WallClockTime NewCPUId Body* (EndOfBuffer zero-padding | exactly full)
 */
#ifndef XFDR_FORMAT_H
#define XFDR_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	XFDR_FILE_HEADER_BYTES = 32,
	XFDR_FN_RECORD_BYTES = 8,
	XFDR_MD_RECORD_BYTES = 16,
	XFDR_MD_DATA_BYTES = 15,
	/* NewBuffer + WallClockTime + NewCPUId: the smallest possible buffer content. */
	XFDR_BUFFER_PREAMBLE_BYTES = 3 * XFDR_MD_RECORD_BYTES,
};

/* Header fields (byte offsets from the start of the file). */
enum {
	XFDR_HDR_VERSION_OFF = 0,         /* u16 */
	XFDR_HDR_TYPE_OFF = 2,            /* u16 */
	XFDR_HDR_BITFIELD_OFF = 4,        /* u32 */
	XFDR_HDR_CYCLE_FREQUENCY_OFF = 8, /* u64, Hz */
	XFDR_HDR_BUFFER_SIZE_OFF = 16,    /* u64, bytes of every thread buffer */
	XFDR_HDR_RESERVED_OFF = 24,       /* 8 bytes */
};

enum {
	XFDR_FORMAT_VERSION = 1,
	XFDR_TRACE_TYPE_FDR = 1,
};

/* Header bitfield: bits counted from the least significant bit of the u32. */
enum {
	XFDR_HDR_CONSTANT_TSC = 1u << 0,
	XFDR_HDR_NONSTOP_TSC = 1u << 1,
};

/* Function record actions (3 bits). */
enum xfdr_fn_action {
	XFDR_FN_ENTER = 0,
	XFDR_FN_EXIT = 1,
	XFDR_FN_TAIL_EXIT = 2,
	XFDR_FN_ENTER_ARGS = 3,
};
#define XFDR_FN_ACTION_COUNT 4u
#define XFDR_FUNCTION_ID_MAX 0x0fffffffu /* 28 bits */

/* Function record fields (byte offsets). */
enum {
	XFDR_FN_WORD_OFF = 0,  /* u32: discriminant, action, function id */
	XFDR_FN_DELTA_OFF = 4, /* u32: tsc delta */
};

/* Metadata record kinds (7 bits). */
enum xfdr_md_kind {
	XFDR_MD_NEW_BUFFER = 0,
	XFDR_MD_END_OF_BUFFER = 1,
	XFDR_MD_NEW_CPU_ID = 2,
	XFDR_MD_TSC_WRAP = 3,
	XFDR_MD_WALL_CLOCK_TIME = 4,
	XFDR_MD_CUSTOM_EVENT = 5,
	XFDR_MD_CALL_ARGUMENT = 6,
};
#define XFDR_MD_KIND_COUNT 7u

/* Metadata data fields (byte offsets from the start of the 16-byte record). */
enum {
	XFDR_MD_KIND_OFF = 0,

	XFDR_NEW_BUFFER_TID_OFF = 1, /* u16 thread id; 13 reserved bytes */

	XFDR_WALL_SECONDS_OFF = 1, /* u64 seconds */
	XFDR_WALL_MICROS_OFF = 9,  /* u32 microseconds; 3 reserved bytes */

	XFDR_NEW_CPU_ID_CPU_OFF = 1, /* u16 cpu */
	XFDR_NEW_CPU_ID_TSC_OFF = 3, /* u64 absolute tsc; 5 reserved bytes */

	XFDR_TSC_WRAP_TSC_OFF = 1, /* u64 absolute tsc; 7 reserved bytes */

	XFDR_CUSTOM_SIZE_OFF = 1, /* u32 payload bytes that follow the record */
	XFDR_CUSTOM_TSC_OFF = 5,  /* u64 absolute tsc; 3 reserved bytes */

	XFDR_CALL_ARG_VALUE_OFF = 1, /* u64 argument; 7 reserved bytes */
};

#define XFDR_STATIC_ASSERT(c, m) _Static_assert(c, m)
#ifdef __cplusplus
#undef XFDR_STATIC_ASSERT
#define XFDR_STATIC_ASSERT(c, m) static_assert(c, m)
#endif

XFDR_STATIC_ASSERT(XFDR_HDR_RESERVED_OFF + 8 == XFDR_FILE_HEADER_BYTES, "spec: header is 32 bytes");
XFDR_STATIC_ASSERT(XFDR_FN_DELTA_OFF + 4 == XFDR_FN_RECORD_BYTES, "spec: function record is 8 bytes");
XFDR_STATIC_ASSERT(1 + XFDR_MD_DATA_BYTES == XFDR_MD_RECORD_BYTES, "spec: metadata record is 16 bytes");
XFDR_STATIC_ASSERT(XFDR_NEW_BUFFER_TID_OFF + 2 + 13 == XFDR_MD_RECORD_BYTES, "spec: NewBuffer");
XFDR_STATIC_ASSERT(XFDR_WALL_MICROS_OFF + 4 + 3 == XFDR_MD_RECORD_BYTES, "spec: WallClockTime");
XFDR_STATIC_ASSERT(XFDR_NEW_CPU_ID_TSC_OFF + 8 + 5 == XFDR_MD_RECORD_BYTES, "spec: NewCPUId");
XFDR_STATIC_ASSERT(XFDR_TSC_WRAP_TSC_OFF + 8 + 7 == XFDR_MD_RECORD_BYTES, "spec: TSCWrap");
XFDR_STATIC_ASSERT(XFDR_CUSTOM_TSC_OFF + 8 + 3 == XFDR_MD_RECORD_BYTES, "spec: CustomEventMarker");
XFDR_STATIC_ASSERT(XFDR_CALL_ARG_VALUE_OFF + 8 + 7 == XFDR_MD_RECORD_BYTES, "spec: CallArgument");

/*
 * xfdr's own custom events. Their payloads follow a CustomEventMarker like any custom event,
 * are a multiple of 8 bytes long (llvm-xray 14 walks v1 buffers in 8-byte steps) and begin
 * with an 8-byte tag. The runtime encodes them with writer/payload.h only.
 *
 * "XFDRDROP", the drop counts: the payload of the last buffer of every trace file (thread id
 * 0 in a process file, the thread's id in a per-thread file). All fields in the byte order of
 * the file; the size is 64 + 40 * entry_count bytes (layout version 2).
 *   off  0  char[8]  "XFDRDROP"
 *   off  8  u32      layout version (2)
 *   off 12  u32      entry_count: per-thread entries that follow
 *   off 16  u64      no_buffer  \
 *   off 24  u64      reentrant   | totals of the file (process file: all threads and
 *   off 32  u64      too_large   | unattributed drops; per-thread file: that thread)
 *   off 40  u64      no_thread_slot /
 *   off 48  u32      threads_omitted: threads with drops left out for lack of room
 *   off 52  u32      reserved (0)
 *   off 56  u64      overwritten: buffers of this file's threads that ring mode reused, so the
 *                    events they held are gone (not drops: newer events replaced them)
 *   entry (40 bytes): u32 tid, u16 thread id as in NewBuffer, u16 reserved,
 *                     u64 no_buffer, u64 reentrant, u64 too_large, u64 overwritten
 * Only threads with at least one drop or overwritten buffer get an entry in the process file.
 * The buffer needs 128 bytes at least (preamble, marker, fixed part; EndOfBuffer only when
 * it is not exactly full): with smaller buffers the counts are only in the .map sidecar;
 * entries that do not fit are counted as omitted.
 */
#define XFDR_DROP_MAGIC "XFDRDROP"
enum {
	XFDR_DROP_LAYOUT_VERSION = 2,
	XFDR_DROP_VERSION_OFF = 8,
	XFDR_DROP_ENTRY_COUNT_OFF = 12,
	XFDR_DROP_NO_BUFFER_OFF = 16,
	XFDR_DROP_REENTRANT_OFF = 24,
	XFDR_DROP_TOO_LARGE_OFF = 32,
	XFDR_DROP_NO_THREAD_SLOT_OFF = 40,
	XFDR_DROP_OMITTED_OFF = 48,
	XFDR_DROP_OVERWRITTEN_OFF = 56,
	XFDR_DROP_FIXED_BYTES = 64,
	XFDR_DROP_ENTRY_BYTES = 40,
	XFDR_DROP_ENTRY_TID_OFF = 0,
	XFDR_DROP_ENTRY_TID16_OFF = 4,
	XFDR_DROP_ENTRY_NO_BUFFER_OFF = 8,
	XFDR_DROP_ENTRY_REENTRANT_OFF = 16,
	XFDR_DROP_ENTRY_TOO_LARGE_OFF = 24,
	XFDR_DROP_ENTRY_OVERWRITTEN_OFF = 32,
};

XFDR_STATIC_ASSERT(XFDR_DROP_OVERWRITTEN_OFF + 8 == XFDR_DROP_FIXED_BYTES, "XFDRDROP fixed part");
XFDR_STATIC_ASSERT(XFDR_DROP_ENTRY_OVERWRITTEN_OFF + 8 == XFDR_DROP_ENTRY_BYTES, "XFDRDROP entry");
XFDR_STATIC_ASSERT(XFDR_DROP_FIXED_BYTES % 8 == 0 && XFDR_DROP_ENTRY_BYTES % 8 == 0,
		   "XFDRDROP: payloads are whole 8-byte words");

/*
 * "XFDRSTAK", the stack context: right after the preamble of a buffer that begins while its
 * thread is inside calls, stamped with the preamble's TSC. In ring mode the buffers before it
 * may have been reused, and a snapshot leaves out older buffers: this event says which calls
 * the buffer's first exits close, so every buffer is decodable alone. The recorder keeps the
 * ids of the outermost XFDR_STACK_IDS_MAX open calls; deeper calls are counted in depth only
 * (their ids are unknown). The size is 24 + 4 * id_count bytes, zero-padded to a multiple of 8.
 *   off  0  char[8]  "XFDRSTAK"
 *   off  8  u32      layout version (1)
 *   off 12  u32      depth: calls entered and not yet exited when the buffer began
 *   off 16  u32      id_count: function ids that follow: min(depth, XFDR_STACK_IDS_MAX), or
 *                    fewer when the buffer is too small to hold them and its first event
 *   off 20  u32      reserved (0)
 *   off 24  u32[id_count]  function ids, outermost call first
 * The events are those the recorder saw while recording: calls entered before recording
 * started are not in it, and an exit with no open call leaves the depth at 0.
 */
#define XFDR_STACK_MAGIC "XFDRSTAK"
enum {
	XFDR_STACK_LAYOUT_VERSION = 1,
	XFDR_STACK_IDS_MAX = 128,
	XFDR_STACK_VERSION_OFF = 8,
	XFDR_STACK_DEPTH_OFF = 12,
	XFDR_STACK_ID_COUNT_OFF = 16,
	XFDR_STACK_IDS_OFF = 24,
};

XFDR_STATIC_ASSERT(XFDR_STACK_IDS_OFF % 8 == 0, "XFDRSTAK: fixed part is whole 8-byte words");

/* Bytes of a stack-context payload with n ids (a multiple of 8). */
#define XFDR_STACK_PAYLOAD_BYTES(n) ((XFDR_STACK_IDS_OFF + 4u * (uint32_t)(n) + 7u) & ~7u)

#ifdef __cplusplus
}
#endif

#endif /* XFDR_FORMAT_H */
