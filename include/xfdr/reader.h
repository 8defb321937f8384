/*
 * xfdr/reader.h - read and validate XRay FDR trace files, versions 1 to 5.
 *
 * Version 1 is the specification's format, the one xfdr writes. Versions 2 to 5 are what
 * compiler-rt's own FDR runtime writes, read with the meaning LLVM 14's llvm-xray gives them
 * (see records.c for the grammar of each version): every buffer is a BufferExtents record and
 * exactly the bytes it counts; version 3 adds the Pid record, version 4 the CPU of custom
 * events, version 5 delta-encoded custom and typed events. Typed events exist from version 2.
 *
 * The reader maps the file and walks it as a state machine over the grammar of its version
 * (Format := Header ThreadBuffer* EOF). Records are decoded in place, one at a time; nothing
 * is copied or loaded as a whole, so memory does not grow with the number of records. The
 * only per-file allocation is an index of one small entry per buffer (where it starts and
 * ends, its process, thread and WallClockTime), used to order the buffers of each thread by
 * their WallClockTime and to go straight to each of them.
 *
 * Files in either byte order are read: the order is told by the header's version field.
 *
 * Errors: every function that can fail fills a struct xfdr_error with one line of the form
 *   "FILE: offset N: expected WHAT, found WHAT"
 * naming the first violation, and returns -1 (xfdr_names_load() words its own and returns -1
 * or -2, see there). No function prints, exits or aborts.
 */
#ifndef XFDR_READER_H
#define XFDR_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xfdr/format.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xfdr_trace; /* an open trace: the mapping, the decoded header, the buffer index */

struct xfdr_error {
	uint64_t offset; /* byte offset in the file of the violation */
	char text[512];	 /* the whole one-line message, without a newline */
};

struct xfdr_header {
	uint16_t version; /* 1 to 5 */
	uint16_t type;
	uint32_t bitfield;
	int constant_tsc;
	int nonstop_tsc;
	uint64_t cycle_frequency; /* Hz */
	uint64_t buffer_size;	  /* bytes of every thread buffer (versions 2+: their capacity;
				     each buffer's length is its BufferExtents count) */
	int big_endian;		  /* 1 if the file was produced on a big-endian machine */
};

/*
 * Open a file (mmap) or a caller-owned memory image (not copied; must outlive the trace).
 * Checks the header (version 1 to 5, type 1) and that the file is the header plus a whole
 * number of buffers: in version 1, that buffer_size can hold a buffer preamble and divides
 * the rest of the file (a header alone is a valid file, whatever its buffer_size); in
 * versions 2+, that the BufferExtents records chain from the header to the end of the file
 * (each at the start of a buffer, counting at least a preamble and at most the rest of the
 * file), which also counts the buffers. Records are checked by
 * xfdr_trace_verify() and while iterating. Returns 0 or -1 with err filled (an empty or
 * unreadable file is an error too, named with its errno text).
 */
int xfdr_trace_open(const char *path, struct xfdr_trace **out, struct xfdr_error *err);
int xfdr_trace_open_memory(const void *data, size_t bytes, const char *name,
			   struct xfdr_trace **out, struct xfdr_error *err);
void xfdr_trace_close(struct xfdr_trace *t);

const struct xfdr_header *xfdr_trace_header(const struct xfdr_trace *t);
const char *xfdr_trace_name(const struct xfdr_trace *t);
uint64_t xfdr_trace_buffer_count(const struct xfdr_trace *t);

/*
 * Walk every record of every buffer and check the grammar. Builds the buffer index used by
 * XFDR_ORDER_THREAD. Returns 0 if the whole file is valid, -1 at the first violation.
 * A file of 64 MiB or more is walked by several threads at once (one per 32 MiB of it, up to
 * the CPUs online and 8), each a range of whole buffers; the outcome, the first violation
 * included, is that of one walk from the start.
 */
int xfdr_trace_verify(struct xfdr_trace *t, struct xfdr_error *err);

/* ---- Records, in file order (for dump and verify) ---------------------------------- */

struct xfdr_record {
	uint64_t offset;       /* of the record's first byte in the file */
	uint64_t buffer_index; /* 0-based buffer the record is in */
	int is_metadata;
	unsigned kind; /* metadata: enum xfdr_md_kind; function: enum xfdr_fn_action */
	uint32_t size; /* bytes the record occupies (a custom or typed event includes its
			  payload) */

	/* Function records. */
	uint32_t function_id;
	uint32_t tsc_delta;
	uint64_t tsc; /* absolute TSC reconstructed for this record (function records, custom
			 and typed events; NewCPUId and TSCWrap: the TSC they set) */

	/* Metadata fields, by kind. */
	uint32_t thread_id;	/* NewBuffer (and the current thread for every record); 16 bits
				   in version 1, 32 in versions 2+ */
	uint32_t pid;		/* Pid (versions 3+; and the current process); in version 2
				   the thread id, as llvm-xray; 0 in version 1 */
	uint64_t seconds;	/* WallClockTime */
	uint32_t micros;	/* WallClockTime */
	uint16_t cpu;		/* NewCPUId (and the current CPU for the other records; a
				   version 4 CustomEventMarker: the CPU it names) */
	uint64_t absolute_tsc;	/* NewCPUId, TSCWrap, CustomEventMarker (version 5: the TSC
				   its delta gives), TypedEventMarker (likewise) */
	uint32_t payload_bytes; /* CustomEventMarker, TypedEventMarker */
	const uint8_t *payload; /* CustomEventMarker, TypedEventMarker: into the mapping */
	uint64_t arg;		/* CallArgument */
	uint64_t skipped_bytes; /* EndOfBuffer: padding bytes skipped after it */

	/* Versions 2+. */
	uint64_t extents_bytes; /* BufferExtents: bytes of the buffer after the record */
	int32_t event_delta;	/* version 5 CustomEventMarker, TypedEventMarker: signed TSC
				   delta from the previous record */
	uint16_t event_type;	/* TypedEventMarker */
};

/* Cursor state: treat every field as private. */
struct xfdr_record_cursor {
	const struct xfdr_trace *trace;
	uint64_t pos;	       /* next byte to decode */
	uint64_t buffer_index; /* buffer pos is in */
	uint64_t buffer_end;   /* one past that buffer's last byte; <= pos: not known yet */
	int state;	       /* grammar state */
	uint64_t base_tsc;
	uint16_t cpu;
	uint32_t thread_id;
	uint32_t pid;
	int done;
	uint64_t released; /* the walk has given back the pages of the file before this byte */
};

void xfdr_records_begin(const struct xfdr_trace *t, struct xfdr_record_cursor *c);
/* Returns 1 and fills r, 0 at the end of the file, -1 on a violation (err filled). */
int xfdr_records_next(struct xfdr_record_cursor *c, struct xfdr_record *r, struct xfdr_error *err);

/* ---- Events: what the program did, with absolute time ---------------------------- */

enum xfdr_event_type {
	XFDR_EVENT_FUNCTION = 0,
	XFDR_EVENT_CUSTOM = 1,
	XFDR_EVENT_TYPED = 2, /* a TypedEventMarker (versions 2+ of compiler-rt's writer) */
};

struct xfdr_event {
	enum xfdr_event_type type;
	unsigned action; /* enum xfdr_fn_action, for function events */
	uint32_t function_id;
	uint64_t tsc;	    /* absolute */
	uint16_t cpu;	    /* the current CPU (the buffer's last NewCPUId); custom events
			       as llvm-xray gives them: version 4 the CPU the marker names,
			       versions 2 and 3 none (0), version 1 the current CPU */
	uint32_t thread_id; /* as recorded in NewBuffer */
	uint32_t pid;	    /* as recorded in the buffer's Pid record (versions 3+); in
			       version 2 the thread id (llvm-xray's TraceExpander does so);
			       0 in version 1 */
	uint64_t offset;    /* file offset of the function record or the custom marker */
	uint64_t buffer_index;
	uint64_t wall_seconds; /* WallClockTime of the event's buffer */
	uint32_t wall_micros;
	uint32_t arg_count;	/* CallArguments after an Entry_Args; see xfdr_event_arg() */
	const uint8_t *args;	/* private: the first CallArgument record in the mapping */
	const uint8_t *payload; /* custom and typed events: points into the mapping */
	uint32_t payload_bytes;
	uint16_t event_type; /* typed events: the type the program gave */
	int big_endian;	     /* custom events: the payload's fields are in the file's byte order */
};

/* The i-th (0-based, i < arg_count) argument of an Entry_Args event. */
uint64_t xfdr_event_arg(const struct xfdr_trace *t, const struct xfdr_event *ev, uint32_t i);

enum xfdr_order {
	XFDR_ORDER_FILE = 0,   /* buffers in file order */
	XFDR_ORDER_THREAD = 1, /* threads by ascending (pid, thread id); each thread's buffers by
				  WallClockTime (seconds, then microseconds, then file order), as
				  llvm-xray */
};

/* Iterator state: treat every field as private. */
struct xfdr_event_iter {
	struct xfdr_trace *trace;
	enum xfdr_order order;
	uint64_t next_slot; /* position in the buffer order */
	uint64_t end_slot;  /* one past the last position to visit */
	struct xfdr_record_cursor cursor;
	int in_buffer;
	struct xfdr_record pending;
	int have_pending;
};

/*
 * Start iterating events. The file is verified first (if it was not already), so events are
 * only ever produced from a valid file. Returns 0 or -1 with err filled.
 */
int xfdr_events_begin(struct xfdr_trace *t, enum xfdr_order order, struct xfdr_event_iter *it,
		      struct xfdr_error *err);
/* Returns 1 and fills ev, 0 at the end, -1 on error (err filled). */
int xfdr_events_next(struct xfdr_event_iter *it, struct xfdr_event *ev, struct xfdr_error *err);
/*
 * xfdr_events_next_call - xfdr_events_next() for a walk that follows calls (which function is
 * entered and left, when, with which arguments): a function event fills only type, action,
 * function_id, tsc, offset, buffer_index and arg_count (and the arguments, for
 * xfdr_event_arg()) where records of functions follow one another; the rest of ev keeps what
 * it had, which is the same for them (thread, CPU, buffer: a change of those is a metadata
 * record, after which ev is filled whole). Custom and typed events are filled whole. Returns
 * as xfdr_events_next().
 */
int xfdr_events_next_call(struct xfdr_event_iter *it, struct xfdr_event *ev,
			  struct xfdr_error *err);

/* ---- Threads: one (pid, thread id) and its buffers ----------------------------------- */

struct xfdr_thread_info {
	uint32_t pid; /* as xfdr_event.pid: version 1: 0, version 2: the thread id */
	uint32_t thread_id;
	uint64_t buffers;      /* buffers of the thread in the trace */
	uint64_t first_buffer; /* file-order number of its first buffer in the file */
};

/*
 * xfdr_trace_threads - how many threads (distinct (pid, thread id)) a trace holds. Verifies
 * the trace first. Threads are numbered 0 .. count-1 in XFDR_ORDER_THREAD order.
 * Returns 0 with *count set, or -1 with err filled.
 */
int xfdr_trace_threads(struct xfdr_trace *t, uint64_t *count, struct xfdr_error *err);

/* Thread i (< count, after xfdr_trace_threads()) in *out. Returns 0, or -1 when out of range. */
int xfdr_trace_thread(const struct xfdr_trace *t, uint64_t i, struct xfdr_thread_info *out);

/*
 * xfdr_events_begin_thread - iterate the events of thread i only, in that thread's order (its
 * buffers by WallClockTime, as XFDR_ORDER_THREAD). Several such iterators may be open at once
 * on one trace (e.g. to merge threads by time); each is a few hundred bytes and allocates
 * nothing. Returns 0 or -1 with err filled (an invalid trace, i out of range).
 */
int xfdr_events_begin_thread(struct xfdr_trace *t, uint64_t i, struct xfdr_event_iter *it,
			     struct xfdr_error *err);

/*
 * xfdr_events_begin_thread_at - the same from the thread's buffer k (0 = its first; k <
 * xfdr_thread_info.buffers) on: its last buffer alone is quick to reach. Returns 0 or -1 with
 * err filled (an invalid trace, i or k out of range).
 */
int xfdr_events_begin_thread_at(struct xfdr_trace *t, uint64_t i, uint64_t k,
				struct xfdr_event_iter *it, struct xfdr_error *err);

/*
 * xfdr_events_begin_thread_buffer - the events of the thread's buffer k alone (k as
 * xfdr_events_begin_thread_at()'s): reading a thread's buffers from its last backwards costs
 * each buffer once. Returns 0 or -1 with err filled (an invalid trace, i or k out of range).
 */
int xfdr_events_begin_thread_buffer(struct xfdr_trace *t, uint64_t i, uint64_t k,
				    struct xfdr_event_iter *it, struct xfdr_error *err);

/* ---- xfdr's own custom events -------------------------------------------------------- */

/* 1 if a custom event's payload begins with the 8-byte tag (e.g. XFDR_STACK_MAGIC), else 0. */
int xfdr_payload_has_tag(const uint8_t *payload, uint32_t bytes, const char *tag);

/* A decoded "XFDRSTAK" stack context (layout in format.h). */
struct xfdr_stack_context {
	uint32_t depth; /* calls entered and not yet exited when the buffer began */
	uint32_t
	    id_count; /* ids known: <= min(depth, XFDR_STACK_IDS_MAX); deeper calls have none */
	uint32_t ids[XFDR_STACK_IDS_MAX]; /* function ids, outermost call first */
};

/*
 * xfdr_stack_context_decode - check and decode the payload of an "XFDRSTAK" custom event,
 * whose fields are in the byte order of its file (big_endian: xfdr_header.big_endian, or
 * xfdr_event.big_endian).
 * Returns 0 with *out filled, or -1 with *out untouched and err filled (when not NULL):
 * err->offset is the byte offset in the payload of the field at fault, err->text is "payload
 * offset N: expected ..., found ..." (the caller knows the file and the marker's offset, the
 * decoder does not).
 * Rejected: fewer than 24 bytes, another tag, a layout version other than 1, an id_count above
 * XFDR_STACK_IDS_MAX or above depth, a size other than XFDR_STACK_PAYLOAD_BYTES(id_count), a
 * function id wider than 28 bits. An id_count below min(depth, XFDR_STACK_IDS_MAX) is taken
 * (the innermost calls are then unnamed); the reserved word and the padding are not read.
 */
int xfdr_stack_context_decode(const uint8_t *payload, uint32_t bytes, int big_endian,
			      struct xfdr_stack_context *out, struct xfdr_error *err);

/* A decoded "XFDRCRSH" crash event (layout in format.h). */
struct xfdr_crash_event {
	uint32_t signal;      /* signal number, as numbered on the recording machine */
	int32_t code;	      /* si_code of the signal */
	uint32_t tid;	      /* kernel tid of the crashing thread */
	uint64_t fault_addr;  /* si_addr; 0 for signals that have none */
	uint32_t frame_count; /* program counters in pcs: <= XFDR_CRASH_FRAMES_MAX */
	uint32_t flags;	      /* XFDR_CRASH_TRUNCATED: the stack had more frames than kept */
	uint64_t pcs[XFDR_CRASH_FRAMES_MAX]; /* innermost first: pcs[0] was executing */
};

/*
 * xfdr_crash_event_decode - check and decode the payload of an "XFDRCRSH" custom event, whose
 * fields are in the byte order of its file (big_endian as for xfdr_stack_context_decode()).
 * Returns 0 with *out filled, or -1 with *out untouched and err filled (when not NULL), worded
 * as by xfdr_stack_context_decode(): "payload offset N: expected ..., found ...".
 * Rejected: fewer than 40 bytes, another tag, a layout version other than 1, a frame_count
 * above XFDR_CRASH_FRAMES_MAX, a size other than XFDR_CRASH_PAYLOAD_BYTES(frame_count) (a
 * payload too short for its frames, or with bytes after them). Flag bits other than
 * XFDR_CRASH_TRUNCATED are kept in flags, not rejected: a later writer may define them.
 */
int xfdr_crash_event_decode(const uint8_t *payload, uint32_t bytes, int big_endian,
			    struct xfdr_crash_event *out, struct xfdr_error *err);

/* A decoded "XFDRDROP" event (layout in format.h): what a flush's file could not record. */
struct xfdr_drop_event {
	/* the file's totals (a process file: all threads and unattributed drops) */
	uint64_t no_buffer, reentrant, too_large, no_thread_slot;
	uint32_t threads_omitted; /* threads with drops left out for lack of room */
	uint64_t overwritten;	  /* buffers ring mode reused: their events are gone */
	uint32_t thread_count;	  /* entries, read with xfdr_drop_event_thread() */
	const uint8_t *payload_;  /* private: the payload the entries are read from */
	int big_endian_;
};

/* One thread's entry of an XFDRDROP event. */
struct xfdr_drop_thread {
	uint32_t tid;	    /* kernel tid */
	uint16_t thread_id; /* as in the thread's NewBuffer records */
	uint64_t no_buffer, reentrant, too_large, overwritten;
};

/*
 * xfdr_drop_event_decode - check and decode the payload of an "XFDRDROP" custom event, whose
 * fields are in the byte order of its file (big_endian as for xfdr_stack_context_decode()).
 * Returns 0 with *out filled (it points into payload, which must outlive it), or -1 with *out
 * untouched and err filled (when not NULL), worded as by xfdr_stack_context_decode().
 * Rejected: fewer than 64 bytes, another tag, a layout version other than 2, a size other than
 * 64 + 40 x entry_count. The reserved fields are not read.
 */
int xfdr_drop_event_decode(const uint8_t *payload, uint32_t bytes, int big_endian,
			   struct xfdr_drop_event *out, struct xfdr_error *err);

/* Entry index (below ev->thread_count) of an event xfdr_drop_event_decode() accepted. */
void xfdr_drop_event_thread(const struct xfdr_drop_event *ev, uint32_t index,
			    struct xfdr_drop_thread *out);

/* ---- Function names from the .map sidecar -------------------------------------------- */

/*
 * The names a `.map` sidecar (the text file the runtime writes beside a trace, specified in
 * doc/map-format.md) gives to function ids, what it says about a crash, and the pool's facts.
 * Only its `function`, `since_tsc`, `crash`, `frame`, `thread`, `tsc_hz`, `tsc_hz_method` and
 * pool lines (xfdr_names_pool()) are read; ids it marks as unnamed (`<unknown>`, `<unassigned>`)
 * are left out. Memory grows with the named ids and the frames. Numbers are decimal digits only,
 * without a sign, a space or a leading zero.
 */
struct xfdr_names;

/*
 * xfdr_names_load - read the function names (and the crash) of the sidecar at path.
 * Returns 0 with *out set (possibly naming nothing), or, with *out NULL and err filled with
 * one line that starts with the path:
 *   -1  the file cannot be opened: "PATH: <errno text>"
 *   -2  it can be opened but not used: a malformed `function`, `since_tsc`, `crash` or `frame`
 *       line ("PATH: line N: expected ..., found '<the line>'"), an id named twice, a second
 *       `since_tsc` line, a frame index listed twice for one crash, a read error, or no
 *       memory. err->offset is the byte offset of the malformed line, else 0.
 * So a caller can tell a missing input (a usage error) from a bad one.
 */
int xfdr_names_load(const char *path, struct xfdr_names **out, struct xfdr_error *err);

/*
 * xfdr_names_read_lenient - the sidecar f (read from where it is to its end; name is its path,
 * for messages) as xfdr_names_load() reads it, except that a line that would make the sidecar
 * invalid is left out instead: a malformed `function`, `since_tsc`, `crash` or `frame` line, a
 * second `since_tsc` line, a later line naming an id already named, or listing a frame index
 * already listed for the crash. For each, in line order, left_out(ctx, LINE, TEXT) is called
 * with its line number (from 1) and a one-line message "NAME: line N: why" (as xfdr_names_load()
 * words it, with the line numbers of both lines for an id or index given twice). What is loaded
 * is what xfdr_names_load() loads from the sidecar without those lines, which it accepts: so a
 * copy of the sidecar without them is valid (what `xfdr recover` carries over).
 * Returns 0 with *out set, or -2 (a read error, no memory; err filled, *out NULL, nothing
 * reported through left_out).
 */
int xfdr_names_read_lenient(FILE *f, const char *name,
			    void (*left_out)(void *ctx, uint64_t line, const char *text), void *ctx,
			    struct xfdr_names **out, struct xfdr_error *err);

/* The name of function id, or NULL when n does not name it or n is NULL (no sidecar). */
const char *xfdr_names_get(const struct xfdr_names *n, uint32_t id);

/*
 * xfdr_names_function_site - where the sidecar's `function` line puts function id: the file
 * mapped at its address (*module, which lives until xfdr_names_free(n)) and the address inside
 * that file (*vaddr: what `addr2line -e MODULE` and the file's DWARF take). Returns 1 with both
 * set, 0 when the line gives no module or no such address (`-`), n does not name id, or n is
 * NULL. A missing or malformed site never makes a sidecar invalid.
 */
int xfdr_names_function_site(const struct xfdr_names *n, uint32_t id, const char **module,
			     uint64_t *vaddr);

/*
 * The name the sidecar's `thread` line gives the thread whose NewBuffer id is thread_id (the
 * second field), or NULL when no line names it (an empty name counts as none) or n is NULL.
 * *tid (when not NULL) gets the line's kernel tid, or 0.
 */
const char *xfdr_names_thread(const struct xfdr_names *n, uint32_t thread_id, uint32_t *tid);

/*
 * xfdr_names_since_tsc - the start of a snapshot's window: the sidecar's `since_tsc` line,
 * which only a snapshot flush (xfdr_flush_since()) writes. Returns 1 with *tsc set when the
 * sidecar has one, 0 when it has none or n is NULL. (xfdr_names_load() refuses a malformed or
 * repeated `since_tsc` line, see there.)
 */
int xfdr_names_since_tsc(const struct xfdr_names *n, uint64_t *tsc);

/*
 * xfdr_names_tsc_hz - the rate of the sidecar's first `tsc_hz` line. Read leniently (a bad value
 * never makes the sidecar invalid): returns 1 with *hz set when that line holds a non-zero
 * decimal number and nothing else, else 0 (also when n is NULL).
 */
int xfdr_names_tsc_hz(const struct xfdr_names *n, uint64_t *hz);

/*
 * xfdr_names_tsc_hz_method - how the runtime found that rate: the value of the sidecar's first
 * `tsc_hz_method` line up to a TAB (e.g. "cpuid-0x15", "calibrated"; at most 63 bytes), or NULL
 * when it has none (or n is NULL).
 */
const char *xfdr_names_tsc_hz_method(const struct xfdr_names *n);

/*
 * xfdr_names_pid - the recorded process: the pid of the sidecar's first `pid` line (0 when it
 * has none, or its value is not a pid, or n is NULL), and in *program (when not NULL) the value
 * of its first `program` line (NULL: none), which lives until xfdr_names_free(n).
 */
uint32_t xfdr_names_pid(const struct xfdr_names *n, const char **program);

/*
 * xfdr_names_ppid - the recorded process's parent: the pid of the sidecar's first `ppid` line
 * (0 when it has none, or its value is not a pid, or n is NULL).
 */
uint32_t xfdr_names_ppid(const struct xfdr_names *n);

/*
 * The crash the sidecar records: its `crash` line (doc/map-format.md), written by the crash
 * flush beside the XFDRCRSH event, and the `frame` lines after it, which name the event's
 * program counters. Strings point into n and live until xfdr_names_free(n).
 *   crash<TAB>SIGNAL<TAB>SIGNAME<TAB>SI_CODE<TAB>0xFAULT_ADDR<TAB>TID
 *   frame<TAB>INDEX<TAB>0xPC<TAB>SYMBOL|<unknown><TAB>MODULE|-<TAB>0xMODULE_VADDR|-
 * A `crash` line drops the crash and the frames read before it: the last crash is kept, with
 * the frame lines after it.
 */
struct xfdr_map_crash {
	uint32_t signal;	 /* as numbered on the recording machine */
	const char *signal_name; /* as the sidecar writes it, e.g. "SIGSEGV" */
	int32_t code;		 /* si_code */
	uint64_t fault_addr;
	uint32_t tid;
};

struct xfdr_map_frame {
	uint32_t index; /* 0 = innermost, as in the XFDRCRSH event */
	uint64_t pc;
	const char *symbol; /* NULL when the sidecar could not name it (`<unknown>`) */
	const char *module; /* the file mapped at pc; NULL when none (`-`) */
	int have_module_vaddr;
	uint64_t module_vaddr; /* pc as an address of module's symbols (for addr2line -e) */
};

/* 1 with *out filled when the sidecar has a `crash` line, 0 when not or n is NULL. */
int xfdr_names_crash(const struct xfdr_names *n, struct xfdr_map_crash *out);

/* Frame lines kept (those of the last crash), 0 when n is NULL. */
uint32_t xfdr_names_frame_count(const struct xfdr_names *n);

/* 1 with *out filled when the sidecar has a frame of that index, 0 when not or n is NULL. */
int xfdr_names_frame(const struct xfdr_names *n, uint32_t index, struct xfdr_map_frame *out);

/* The frame of lowest index whose pc is pc: 1 with *out filled, 0 when none or n is NULL. */
int xfdr_names_frame_at_pc(const struct xfdr_names *n, uint64_t pc, struct xfdr_map_frame *out);

/*
 * What the sidecar says of the pool and of the events dropped (doc/map-format.md: `mode`,
 * `buffer_size`, `buffer_max`, `buffers_written`, `overwritten`, `dropped`), read leniently as
 * `tsc_hz` is: the first line of each key (of `dropped`: of each cause) counts, and one whose
 * value is not a decimal number is as none; these lines never make the sidecar invalid.
 */
enum xfdr_map_drop_cause {
	XFDR_MAP_DROP_NO_BUFFER,
	XFDR_MAP_DROP_REENTRANT,
	XFDR_MAP_DROP_TOO_LARGE,
	XFDR_MAP_DROP_NO_THREAD_SLOT,
	XFDR_MAP_DROP_TOTAL,
	XFDR_MAP_DROP_CAUSES
};

struct xfdr_map_pool {
	const char *mode; /* "ring" or "bounded" as the sidecar writes it; NULL: no `mode` line */
	int have_buffer_size, have_buffer_max, have_buffers_written, have_overwritten;
	uint64_t buffer_size, buffer_max, buffers_written, overwritten;
	int have_drops;				/* a `dropped` line */
	uint64_t dropped[XFDR_MAP_DROP_CAUSES]; /* by cause; 0 for a cause without a line */
	/* What the include=, exclude= and max_depth options left out (doc/map-format.md). */
	int have_functions_left_out, have_filtered_calls, have_max_depth_calls;
	uint64_t functions_left_out, filtered_calls, max_depth_calls;
};

/* *out filled (strings live until xfdr_names_free(n)); all zero when n is NULL. */
void xfdr_names_pool(const struct xfdr_names *n, struct xfdr_map_pool *out);

void xfdr_names_free(struct xfdr_names *n);

/* ---- Function names from a module's ELF symbol table ------------------------------------ */

/*
 * For the program counters of a crash the .map sidecar could not name. The runtime gives each
 * frame a module (the file mapped at the pc) and the pc as an address of that file
 * (module_vaddr, the address its symbols and `addr2line -e` use); this looks the address up in
 * the file's .symtab, else its .dynsym. Only ELF64 little-endian files of type EXEC or DYN are
 * read (what the runtime records on x86-64 and AArch64).
 *
 * The file is mapped read-only; every offset, size and string read from it is checked against
 * the file's size, so a file that is not ELF, truncated or corrupt gives "no name", never a
 * fault. It allocates and may block; one thread at a time per struct xfdr_elf.
 */
struct xfdr_elf;

/*
 * xfdr_elf_open - map the ELF file at path and find its symbol tables.
 * Returns 0 with *out set, or with *out NULL: -errno when it cannot be opened, read or
 * mapped; -ENOEXEC when it is not an ELF64 little-endian EXEC or DYN file, or its header or
 * section headers lie outside the file. A file with no usable symbol table opens and names
 * nothing.
 */
int xfdr_elf_open(const char *path, struct xfdr_elf **out);

/*
 * xfdr_elf_open_memory - the same over the bytes bytes at data, an ELF file's image read
 * elsewhere, used in place: it must stay as it is until xfdr_elf_close(). Returns as
 * xfdr_elf_open() (-ENOMEM when out of memory).
 */
int xfdr_elf_open_memory(const void *data, size_t bytes, struct xfdr_elf **out);

/*
 * xfdr_elf_symbol - the name of the function symbol covering vaddr: its [value, value + size)
 * holds vaddr (a symbol of size 0 covers its value only). .symtab is searched first, .dynsym
 * when .symtab names nothing there. Of several, the one with the highest value (the innermost)
 * wins, then a global over a weak over a local, then the first in the table.
 * Returns the name (it points into the mapping: valid until xfdr_elf_close()) with *offset
 * (when not NULL) set to vaddr - value, or NULL when no function symbol covers vaddr or e is
 * NULL.
 */
const char *xfdr_elf_symbol(const struct xfdr_elf *e, uint64_t vaddr, uint64_t *offset);

void xfdr_elf_close(struct xfdr_elf *e);

/* Names for messages and dumps: "NewBuffer", "Entry", ... ; "unknown" outside the range. */
const char *xfdr_md_kind_name(unsigned kind);
const char *xfdr_fn_action_name(unsigned action);

#ifdef __cplusplus
}
#endif

#endif /* XFDR_READER_H */
