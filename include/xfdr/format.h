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
 *
 * xfdr writes version 1 only. The reader also takes versions 2 to 5, which compiler-rt's own
 * FDR runtime writes; what they add is listed with the constants marked "versions 2+" below:
 * each buffer is a BufferExtents record and then exactly the bytes it counts, NewBuffer's
 * thread id is 32 bits, version 3 adds a Pid record after WallClockTime, version 4 a CPU in
 * CustomEventMarker, version 5 delta-encoded custom and typed events.
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
	XFDR_HDR_VERSION_OFF = 0,	  /* u16 */
	XFDR_HDR_TYPE_OFF = 2,		  /* u16 */
	XFDR_HDR_BITFIELD_OFF = 4,	  /* u32 */
	XFDR_HDR_CYCLE_FREQUENCY_OFF = 8, /* u64, Hz */
	XFDR_HDR_BUFFER_SIZE_OFF = 16,	  /* u64, bytes of every thread buffer */
	XFDR_HDR_RESERVED_OFF = 24,	  /* 8 bytes */
};

enum {
	XFDR_FORMAT_VERSION = 1,
	XFDR_TRACE_TYPE_FDR = 1,
	/* The newest version the reader takes (compiler-rt's current writer). */
	XFDR_FORMAT_VERSION_MAX = 5,
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
	/* Versions 2+ only. */
	XFDR_MD_BUFFER_EXTENTS = 7,
	XFDR_MD_TYPED_EVENT = 8,
	XFDR_MD_PID = 9, /* version 3+ */
};
#define XFDR_MD_KIND_COUNT 7u	   /* kinds of version 1 */
#define XFDR_MD_KIND_COUNT_ALL 10u /* kinds of versions 3 to 5 (version 2: 9, no Pid) */

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

	/*
	 * Versions 2+. NewBuffer's thread id is an i32 at XFDR_NEW_BUFFER_TID_OFF (version 1:
	 * u16). A BufferExtents record starts every buffer; its count is the bytes of the
	 * buffer that follow it (not itself).
	 */
	XFDR_BUFFER_EXTENTS_BYTES_OFF = 1, /* u64 bytes that follow; 7 reserved bytes */
	XFDR_PID_OFF = 1,		   /* i32 process id (version 3+); 11 reserved bytes */
	/* CustomEventMarker, versions 2-4: size and absolute TSC as in version 1, then ... */
	XFDR_CUSTOM_CPU_OFF = 13, /* u16 cpu (version 4 only); 1 reserved byte */
	/* ... version 5: i32 size at XFDR_CUSTOM_SIZE_OFF, then: */
	XFDR_CUSTOM_DELTA_OFF = 5, /* i32 tsc delta from the previous record; 7 reserved bytes */
	/* TypedEventMarker: the payload follows the record, as for a custom event. */
	XFDR_TYPED_SIZE_OFF = 1,  /* i32 payload bytes */
	XFDR_TYPED_DELTA_OFF = 5, /* i32 tsc delta from the previous record */
	XFDR_TYPED_TYPE_OFF = 9,  /* u16 event type; 5 reserved bytes */
};

#define XFDR_STATIC_ASSERT(c, m) _Static_assert(c, m)
#ifdef __cplusplus
#undef XFDR_STATIC_ASSERT
#define XFDR_STATIC_ASSERT(c, m) static_assert(c, m)
#endif

XFDR_STATIC_ASSERT(XFDR_HDR_RESERVED_OFF + 8 == XFDR_FILE_HEADER_BYTES, "spec: header is 32 bytes");
XFDR_STATIC_ASSERT(XFDR_FN_DELTA_OFF + 4 == XFDR_FN_RECORD_BYTES,
		   "spec: function record is 8 bytes");
XFDR_STATIC_ASSERT(1 + XFDR_MD_DATA_BYTES == XFDR_MD_RECORD_BYTES,
		   "spec: metadata record is 16 bytes");
XFDR_STATIC_ASSERT(XFDR_NEW_BUFFER_TID_OFF + 2 + 13 == XFDR_MD_RECORD_BYTES, "spec: NewBuffer");
XFDR_STATIC_ASSERT(XFDR_WALL_MICROS_OFF + 4 + 3 == XFDR_MD_RECORD_BYTES, "spec: WallClockTime");
XFDR_STATIC_ASSERT(XFDR_NEW_CPU_ID_TSC_OFF + 8 + 5 == XFDR_MD_RECORD_BYTES, "spec: NewCPUId");
XFDR_STATIC_ASSERT(XFDR_TSC_WRAP_TSC_OFF + 8 + 7 == XFDR_MD_RECORD_BYTES, "spec: TSCWrap");
XFDR_STATIC_ASSERT(XFDR_CUSTOM_TSC_OFF + 8 + 3 == XFDR_MD_RECORD_BYTES, "spec: CustomEventMarker");
XFDR_STATIC_ASSERT(XFDR_CALL_ARG_VALUE_OFF + 8 + 7 == XFDR_MD_RECORD_BYTES, "spec: CallArgument");
XFDR_STATIC_ASSERT(XFDR_CUSTOM_CPU_OFF + 2 + 1 == XFDR_MD_RECORD_BYTES, "v4: CustomEventMarker");
XFDR_STATIC_ASSERT(XFDR_TYPED_TYPE_OFF + 2 + 5 == XFDR_MD_RECORD_BYTES, "v2+: TypedEventMarker");

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
 * started are not in it, and an exit with no open call leaves the depth at 0. Drops keep it
 * true to the trace: a call whose entry was dropped is not in it (its exit is dropped too,
 * and the calls inside it are recorded, so they look called by its caller), and a call whose
 * exit was dropped is no longer in it, although its entry is in an earlier buffer. After such
 * a lost exit the next buffer of the thread has a stack context even at depth 0: a reader
 * closes the open calls that the context's depth (and ids, outermost first) leaves out.
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

/*
 * "XFDRCRSH", a crash: recorded by the crash handler (flush_on_crash) in the crashing thread's
 * buffer, stamped with the TSC when the handler ran, right before the flush. The backtrace is
 * the crashing thread's, unwound with libunwind from the signal frame: frame 0 is the
 * instruction that was executing (for SIGSEGV, SIGBUS, SIGILL, SIGFPE: the one that faulted),
 * each later one a return address, innermost first. The size is 40 + 8 * frame_count bytes.
 *   off  0  char[8]  "XFDRCRSH"
 *   off  8  u32      layout version (1)
 *   off 12  u32      signal number
 *   off 16  i32      si_code of the signal
 *   off 20  u32      kernel tid of the crashing thread
 *   off 24  u64      fault address (si_addr; 0 for signals that have none)
 *   off 32  u32      frame_count: program counters that follow (<= XFDR_CRASH_FRAMES_MAX)
 *   off 36  u32      flags: XFDR_CRASH_TRUNCATED when the stack had more frames than kept
 *   off 40  u64[frame_count]  program counters, innermost first
 */
#define XFDR_CRASH_MAGIC "XFDRCRSH"
enum {
	XFDR_CRASH_LAYOUT_VERSION = 1,
	XFDR_CRASH_FRAMES_MAX = 64,
	XFDR_CRASH_VERSION_OFF = 8,
	XFDR_CRASH_SIGNAL_OFF = 12,
	XFDR_CRASH_CODE_OFF = 16,
	XFDR_CRASH_TID_OFF = 20,
	XFDR_CRASH_ADDR_OFF = 24,
	XFDR_CRASH_FRAME_COUNT_OFF = 32,
	XFDR_CRASH_FLAGS_OFF = 36,
	XFDR_CRASH_FRAMES_OFF = 40,
	XFDR_CRASH_TRUNCATED = 1,
};

XFDR_STATIC_ASSERT(XFDR_CRASH_FRAMES_OFF % 8 == 0, "XFDRCRSH: fixed part is whole 8-byte words");

/* Bytes of a crash payload with n frames (a multiple of 8). */
#define XFDR_CRASH_PAYLOAD_BYTES(n) (XFDR_CRASH_FRAMES_OFF + 8u * (uint32_t)(n))

/*
 * "XFDRPOOL", the pool locator: how a tool finds the recorder's buffers without the process,
 * in a core dump (`xfdr core`) or in the files of a file-backed pool (`xfdr recover`). It
 * starts a page-aligned mapping and is followed, at header_bytes, by buffer_count buffer
 * descriptors of desc_stride bytes each. The offsets of the descriptor fields a tool needs
 * are in the locator, so the descriptor's internal layout may change without a new version.
 * All fields in the byte order of the recording machine.
 *   off   0  char[8]  "XFDRPOOL"
 *   off   8  u32      layout version (1)
 *   off  12  u32      header_bytes: offset of descriptor 0 from the locator
 *   off  16  u64      pid of the recording process
 *   off  24  u64      buffers_addr: address of buffer 0 in the recording process (buffer i
 *                     is at buffers_addr + i * buffer_bytes)
 *   off  32  u64      buffer_bytes
 *   off  40  u32      buffer_count
 *   off  44  u32      desc_stride
 *   off  48  u64      tsc_hz: the trace header's cycle_frequency; 0 until the runtime knew it
 *   off  56  u32      session: buffers of other sessions are stale
 *   off  60  u32      flags: XFDR_POOL_INVARIANT_TSC, XFDR_POOL_FILE_BACKED
 *   off  64  u32      offset in a descriptor of used_bytes (u64): bytes of whole records
 *   off  68  u32      ... of ctl (u64): state in bits 0-1 (XFDR_POOL_STATE_*), generation in
 *                     bits 32-63
 *   off  72  u32      ... of claim_seq (u64): order of claims; a thread's buffers in time
 *                     order
 *   off  76  u32      ... of owner_tid (u32): kernel tid
 *   off  80  u32      ... of owner_thread_id (u32): the id in the buffer's NewBuffer record
 *   off  84  u32      ... of first_tsc (u64): TSC of the buffer's preamble
 *   off  88  u32      ... of last_tsc (u64): TSC of its last record once full
 *   off  92  u32      reserved (0)
 *   off  96  u64      descs_addr: address of descriptor 0 in the recording process
 *   off 104  u64      names_addr: the names directory ("XFDRNAMS", below); 0: none
 *   off 112  16 bytes reserved (0)
 * A buffer whose state is owned or full holds a NewBuffer preamble and used_bytes bytes of
 * whole records (an owned one was being written: its records up to used_bytes are complete).
 * With backing=file, "<base>.xray" holds the trace header and the buffers (a version 1 trace
 * laid out as the pool) and "<base>.xray.pool" this locator and the descriptors.
 */
#define XFDR_POOL_MAGIC "XFDRPOOL"
enum {
	XFDR_POOL_LAYOUT_VERSION = 1,
	XFDR_POOL_HEADER_BYTES = 128,
	XFDR_POOL_VERSION_OFF = 8,
	XFDR_POOL_HEADER_BYTES_OFF = 12,
	XFDR_POOL_PID_OFF = 16,
	XFDR_POOL_BUFFERS_ADDR_OFF = 24,
	XFDR_POOL_BUFFER_BYTES_OFF = 32,
	XFDR_POOL_BUFFER_COUNT_OFF = 40,
	XFDR_POOL_DESC_STRIDE_OFF = 44,
	XFDR_POOL_TSC_HZ_OFF = 48,
	XFDR_POOL_SESSION_OFF = 56,
	XFDR_POOL_FLAGS_OFF = 60,
	XFDR_POOL_USED_AT_OFF = 64,
	XFDR_POOL_CTL_AT_OFF = 68,
	XFDR_POOL_CLAIM_SEQ_AT_OFF = 72,
	XFDR_POOL_OWNER_TID_AT_OFF = 76,
	XFDR_POOL_THREAD_ID_AT_OFF = 80,
	XFDR_POOL_FIRST_TSC_AT_OFF = 84,
	XFDR_POOL_LAST_TSC_AT_OFF = 88,
	XFDR_POOL_DESCS_ADDR_OFF = 96,
	XFDR_POOL_NAMES_ADDR_OFF = 104,

	XFDR_POOL_INVARIANT_TSC = 1,
	XFDR_POOL_FILE_BACKED = 2,

	XFDR_POOL_STATE_FREE = 0,
	XFDR_POOL_STATE_OWNED = 1,
	XFDR_POOL_STATE_FULL = 2,
	XFDR_POOL_STATE_CLAIMING = 3,
};

/*
 * "XFDRNAMS", the names directory: where a tool finds, in a core dump (`xfdr core`), which
 * thread each trace thread id was and which function each id is, as the .map would have said.
 * The pool locator's names_addr points at it. It tells where the recorder's thread slots are
 * and, for each space of function ids, where the id -> address table is; the addresses are
 * named from the files the core says were mapped. Every field in the recording machine's
 * byte order; addresses are the recording process's.
 *   off   0  char[8]  "XFDRNAMS"
 *   off   8  u32      layout version (1)
 *   off  12  u32      bytes of the directory: the header and source_count sources
 *   off  16  u64      slots_addr: thread slot 0 (slot i at slots_addr + i * slot_stride)
 *   off  24  u32      slot_count
 *   off  28  u32      slot_stride
 *   off  32  u32      offset in a slot of tid (u32): the kernel tid; 0: never used
 *   off  36  u32      ... of thread_id (u32): the id in its NewBuffer records
 *   off  40  u32      ... of id_session (u32): the session thread_id was given in (the pool
 *                     locator's session: the id is this trace's)
 *   off  44  u32      ... of name (16 bytes, NUL-padded): the name at registration
 *   off  48  u32      ... of exit_name (16 bytes): the name at thread exit; zeros before
 *   off  52  u32      source_count (at most XFDR_NAMES_SOURCES_MAX)
 *   off  56  u64      reserved (0)
 *   off  64 + 64 * i  source i, a space of function ids 1 .. count:
 *     off  0  char[8]  its name in the .map's "functions" line ("xray", "cyg"), NUL-padded
 *     off  8  u32      kind: XFDR_NAMES_TABLE or XFDR_NAMES_CHUNKS
 *     off 12  u32      count: the ids (TABLE); 0 for CHUNKS, which reads count_addr
 *     off 16  u64      table_addr. TABLE: u64 addresses, id k's at table_addr + 8 * (k - 1),
 *                      0 for no function. CHUNKS: u64 chunk addresses (0: none), id k's
 *                      node at chunk[k / chunk_ids] + (k % chunk_ids) * node_stride
 *     off 24  u64      count_addr (CHUNKS): a u32, the next id to give (ids 1 .. it - 1)
 *     off 32  u32      chunk_count (CHUNKS)
 *     off 36  u32      chunk_ids (CHUNKS): nodes in a chunk
 *     off 40  u32      node_stride (CHUNKS)
 *     off 44  u32      offset in a node of its address (u64) (CHUNKS)
 *     off 48  u32      ... of its state (u32) (CHUNKS)
 *     off 52  u32      state_mask (CHUNKS)
 *     off 56  u32      state_live (CHUNKS): (state & state_mask) == state_live: the node is
 *                      id k's; any other: the id names no function
 *     off 60  u32      reserved (0)
 */
#define XFDR_NAMES_MAGIC "XFDRNAMS"
enum {
	XFDR_NAMES_LAYOUT_VERSION = 1,
	XFDR_NAMES_HEADER_BYTES = 64,
	XFDR_NAMES_SOURCE_BYTES = 64,
	XFDR_NAMES_SOURCES_MAX = 8,
	XFDR_NAMES_VERSION_OFF = 8,
	XFDR_NAMES_BYTES_OFF = 12,
	XFDR_NAMES_SLOTS_ADDR_OFF = 16,
	XFDR_NAMES_SLOT_COUNT_OFF = 24,
	XFDR_NAMES_SLOT_STRIDE_OFF = 28,
	XFDR_NAMES_TID_AT_OFF = 32,
	XFDR_NAMES_THREAD_ID_AT_OFF = 36,
	XFDR_NAMES_ID_SESSION_AT_OFF = 40,
	XFDR_NAMES_NAME_AT_OFF = 44,
	XFDR_NAMES_EXIT_NAME_AT_OFF = 48,
	XFDR_NAMES_SOURCE_COUNT_OFF = 52,
	XFDR_NAMES_NAME_BYTES = 16,

	XFDR_NAMES_SRC_NAME_OFF = 0,
	XFDR_NAMES_SRC_NAME_BYTES = 8,
	XFDR_NAMES_SRC_KIND_OFF = 8,
	XFDR_NAMES_SRC_COUNT_OFF = 12,
	XFDR_NAMES_SRC_TABLE_ADDR_OFF = 16,
	XFDR_NAMES_SRC_COUNT_ADDR_OFF = 24,
	XFDR_NAMES_SRC_CHUNK_COUNT_OFF = 32,
	XFDR_NAMES_SRC_CHUNK_IDS_OFF = 36,
	XFDR_NAMES_SRC_NODE_STRIDE_OFF = 40,
	XFDR_NAMES_SRC_ADDR_AT_OFF = 44,
	XFDR_NAMES_SRC_STATE_AT_OFF = 48,
	XFDR_NAMES_SRC_STATE_MASK_OFF = 52,
	XFDR_NAMES_SRC_STATE_LIVE_OFF = 56,

	XFDR_NAMES_TABLE = 1,
	XFDR_NAMES_CHUNKS = 2,
};
XFDR_STATIC_ASSERT(XFDR_NAMES_SOURCE_COUNT_OFF + 12 == XFDR_NAMES_HEADER_BYTES,
		   "XFDRNAMS: header is 64 bytes");
XFDR_STATIC_ASSERT(XFDR_NAMES_SRC_STATE_LIVE_OFF + 8 == XFDR_NAMES_SOURCE_BYTES,
		   "XFDRNAMS: a source is 64 bytes");

#ifdef __cplusplus
}
#endif

#endif /* XFDR_FORMAT_H */
