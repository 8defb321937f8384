/*
 * command/perfetto.c - `xfdr convert --output-format=perfetto`: a verified trace as Perfetto's
 * own protobuf trace (perfetto.protos.Trace), which ui.perfetto.dev and trace_processor open
 * natively, at a fraction of the JSON's size.
 *
 * Field numbers are those of Perfetto's published .proto files (protos/perfetto/trace/:
 * trace.proto, trace_packet.proto, trace_packet_defaults.proto, clock_snapshot.proto,
 * interned_data/interned_data.proto, track_event/{track_event,track_descriptor,
 * process_descriptor,thread_descriptor,debug_annotation}.proto); the tests decode the output
 * with protoc against a schema carrying them (tests/system/perfetto_subset.proto).
 *
 * The output is a Trace: a stream of TracePacket fields, so it is written as it is made.
 *   - Each process (the sidecar's pid, else the buffers' Pid, else 1, as the JSON; never 0,
 *     which Perfetto takes for the idle process its viewers hide) is a track
 *     (TrackDescriptor with a ProcessDescriptor: its pid and name, the sidecar's program, else
 *     the trace file's name), on sequence 1; when the sidecar names its parent (`ppid`), a
 *     ProcessTree packet says so (pid, ppid, cmdline: the program), as traced_probes does.
 *   - Several files (the processes of a tree `xfdr record` followed): one after the other into
 *     the same trace, on one clock (the machine's TSC; each file at its own rate), sequences
 *     numbered on from file to file.
 *   - Each thread is a track of its own (TrackDescriptor with a ThreadDescriptor: pid, its
 *     kernel tid from the sidecar's `thread` line, else the trace's thread id, and its name;
 *     thread id 0, where the runtime puts its process-wide drop counts, is the process's
 *     track) and a packet sequence of its own (trusted_packet_sequence_id 2 + its number
 *     in the timeline's thread order; a thread without events in the window leaves its
 *     number unused). The sequence's first packet clears its incremental
 *     state and sets its defaults: the thread's track, and clock 64, a sequence-scoped
 *     incremental clock in nanoseconds that the next packet (ClockSnapshot) ties to BOOTTIME
 *     at the thread's first event. Every later timestamp on the sequence is the nanoseconds
 *     since the previous one.
 *   - Times: nanoseconds since the trace's first TSC (as the JSON's ts, not divided by 1000),
 *     at the header's cycle_frequency (1 GHz when it says 0), rounded to the nearest.
 *   - A call is a TrackEvent TYPE_SLICE_BEGIN with its name interned once per sequence
 *     (InternedData.event_names: the .map's name, "#ID" for an id it does not name, "ID"
 *     without a sidecar, "(unknown)" for calls a stack context counts but does not name) and a
 *     TYPE_SLICE_END, paired as analysis/timeline.h pairs them. What the JSON says in args is
 *     said in debug annotations: xfdr_begin, xfdr_end, reason, unnamed_calls, exit_function
 *     and arg0, arg1, ... (Entry_Args arguments); their names are interned in the sequence's
 *     first packet.
 *   - xfdr's custom events are TYPE_INSTANT events on the thread's track with the JSON's names
 *     and annotations: "stack context" (depth, ids_known, open_calls, stack), "crash SIGNAME"
 *     (signal, signal_name, code, tid, fault_addr, frame_count, truncated, backtrace), "xfdr
 *     drops" (the counts, threads: one dictionary per thread); any other payload (and one of
 *     ours that does not decode, with "error") as "custom event" / "typed event" with size,
 *     text and hex.
 *   - Compression (--compress, default deflate): each thread's packets are gathered into
 *     chunks of PF_CHUNK_BYTES, each written as one TracePacket.compressed_packets (zlib's
 *     format, made by ISA-L's igzip), which trace_processor inflates into the packets it holds.
 *     With --compress=none the packets are written as they are.
 *   - Split (--split-size): each part describes the tracks of the processes and threads it
 *     has events of, and each thread's sequence begins anew in it (its incremental state
 *     cleared, its names interned again); a call open at a cut ends there ("xfdr_end":
 *     "split") and begins again in the next part ("xfdr_begin": "split").
 * How the threads are written (several at once, or split) is perfetto_write.c's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "command/perfetto.h"

#define PF_NS_PER_S 1000000000u
#define PF_TEXT_BYTES 256u	 /* of an arbitrary payload, shown as text */
#define PF_HEX_BYTES 64u	 /* of an arbitrary payload, shown in hex */
#define PF_CLOCK_INCREMENTAL 64u /* the first sequence-scoped clock id */
#define PF_CLOCK_BOOTTIME 6u	 /* BuiltinClock BUILTIN_CLOCK_BOOTTIME */
/* A process track's uuid is this + its pid; a thread track's is its sequence. */
#define PF_PROCESS_UUID (1ull << 40)

/* Field numbers, from Perfetto's .proto files (see the top of the file). */
enum {
	TRACE_PACKET = 1,
	/* TracePacket */
	PKT_PROCESS_TREE = 2,
	PKT_CLOCK_SNAPSHOT = 6,
	PKT_TIMESTAMP = 8,
	PKT_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQUENCE_FLAGS = 13,
	PKT_COMPRESSED_PACKETS = 50,
	PKT_DEFAULTS = 59, /* trace_packet_defaults */
	PKT_TRACK_DESCRIPTOR = 60,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	/* TracePacketDefaults */
	DEFAULTS_TRACK_EVENT = 11,
	DEFAULTS_CLOCK_ID = 58,
	TRACK_EVENT_DEFAULTS_TRACK_UUID = 11,
	/* ClockSnapshot, ClockSnapshot.Clock */
	CLOCKS = 1,
	CLOCK_ID = 1,
	CLOCK_TIMESTAMP = 2,
	CLOCK_IS_INCREMENTAL = 3,
	/* ProcessTree, ProcessTree.Process */
	TREE_PROCESSES = 1,
	TREE_PID = 1,
	TREE_PPID = 2,
	TREE_CMDLINE = 3,
	/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
	TRACK_UUID = 1,
	TRACK_PROCESS = 3,
	TRACK_THREAD = 4,
	TRACK_PARENT_UUID = 5,
	PROCESS_PID = 1,
	PROCESS_NAME = 6,
	THREAD_PID = 1,
	THREAD_TID = 2,
	THREAD_NAME = 5,
	/* TrackEvent */
	EVENT_ANNOTATIONS = 4,
	EVENT_TYPE = 9,
	EVENT_NAME_IID = 10,
	EVENT_NAME = 23,
	EVENT_SOURCE_LOCATION_IID = 34,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	/* InternedData; EventName and DebugAnnotationName */
	INTERNED_EVENT_NAMES = 2,
	INTERNED_ANNOTATION_NAMES = 3,
	INTERNED_SOURCE_LOCATIONS = 4,
	INTERNED_IID = 1,
	INTERNED_NAME = 2,
	/* SourceLocation */
	SOURCE_FILE_NAME = 2,
	SOURCE_FUNCTION_NAME = 3,
	SOURCE_LINE_NUMBER = 4,
	/* DebugAnnotation */
	ANN_NAME_IID = 1,
	ANN_UINT = 3,
	ANN_INT = 4,
	ANN_STRING = 6,
	ANN_POINTER = 7,
	ANN_NAME = 10,
	ANN_DICT = 11,
	ANN_ARRAY = 12,
};

/* The annotations of slices, interned in each sequence's first packet: iid = index. */
enum pf_key {
	KEY_BEGIN = 1,
	KEY_END,
	KEY_REASON,
	KEY_UNNAMED_CALLS,
	KEY_EXIT_FUNCTION,
	KEY_ARG0, /* arg0 .. arg7; later arguments are named in place */
	KEY_COUNT = KEY_ARG0 + 8,
};

static const char *const pf_key_name[KEY_COUNT] = {
    [KEY_BEGIN] = "xfdr_begin",
    [KEY_END] = "xfdr_end",
    [KEY_REASON] = "reason",
    [KEY_UNNAMED_CALLS] = "unnamed_calls",
    [KEY_EXIT_FUNCTION] = "exit_function",
    [KEY_ARG0] = "arg0",
    [KEY_ARG0 + 1] = "arg1",
    [KEY_ARG0 + 2] = "arg2",
    [KEY_ARG0 + 3] = "arg3",
    [KEY_ARG0 + 4] = "arg4",
    [KEY_ARG0 + 5] = "arg5",
    [KEY_ARG0 + 6] = "arg6",
    [KEY_ARG0 + 7] = "arg7",
};

/* ---- Output: packets, chunks ------------------------------------------------------------ */

void pf_lock(struct pf *s)
{
	pthread_mutex_lock(&s->input->lock);
}

void pf_unlock(struct pf *s)
{
	pthread_mutex_unlock(&s->input->lock);
}

static void pf_oom(struct pf *s)
{
	if (!s->failed) {
		pf_lock(s);
		cli_error("%s: out of memory", xfdr_trace_name(s->file.t));
		pf_unlock(s);
	}
	s->failed = 1;
}

int pf_failed(void *ctx)
{
	const struct pf *s = ctx;

	if (s->input->split)
		return s->failed || s->input->split->o->err;
	return s->failed || ordered_failed(s->input->parts);
}

static void pf_write(struct pf *s, uint64_t part, const void *p, size_t n)
{
	if (s->input->split)
		cli_put(s->input->split->o, p, n); /* an error: pf_failed(), and closing it says */
	else if (ordered_put(s->input->parts, part, p, n))
		s->failed = 1; /* reported, or the output's error closing it reports */
}

/* As they are, or as one compressed_packets packet (zlib's format, which Perfetto inflates). */
int pf_deflate(struct pf_zip *zip, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
	       size_t *len)
{
	struct isal_zstream *z = &zip->z;
	int rc;

	/*
	 * igzip reads fields of the stream that isal_deflate_stateless_init() leaves as they were
	 * (valgrind: a jump on uninitialised values of the malloc'd compressor). Zeroed, a chunk
	 * does not depend on what the memory held before. (level_buf need not be: valgrind is
	 * clean without, and touching all of it per writer cost the memory bound of
	 * test_cli_memory.)
	 */
	memset(z, 0, sizeof(*z));
	isal_deflate_stateless_init(z);
	z->level = PF_ZIP_LEVEL;
	z->level_buf = zip->level_buf;
	z->level_buf_size = PF_ZIP_LEVEL_BUF;
	z->gzip_flag = IGZIP_ZLIB;
	z->end_of_stream = 1;
	z->flush = NO_FLUSH;
	z->next_in = (uint8_t *)in;
	z->avail_in = (uint32_t)n; /* a chunk: under PF_CHUNK_BYTES and a packet */
	z->next_out = out;
	z->avail_out = (uint32_t)cap;
	rc = isal_deflate_stateless(z);
	*len = z->total_out;
	return rc;
}

void pf_put_chunk(struct pf *s, struct pb_buf *c, uint64_t part)
{
	struct pf_chunk *o = s->out;
	uint8_t head[PF_CHUNK_HEAD], *h;
	size_t zlen, hn;
	int rc;

	if (!c->len || s->failed)
		return;
	if (!s->input->compress) {
		pf_write(s, part, c->p, c->len);
		c->len = 0;
		return;
	}
	/* igzip's bound: the input as stored blocks (5 bytes of head per 64 KiB), with the
	   largest block head and zlib's own 6 bytes */
	zlen = PF_CHUNK_HEAD + c->len + 5 * (c->len / 65535 + 1) + ISAL_DEF_MAX_HDR_SIZE + 6;
	if (zlen > o->z_cap) {
		uint8_t *z = realloc(o->z, zlen);

		if (!z) {
			pf_oom(s);
			return;
		}
		o->z = z;
		o->z_cap = zlen;
	}
	if ((rc = pf_deflate(o->zip, c->p, c->len, o->z + PF_CHUNK_HEAD, o->z_cap - PF_CHUNK_HEAD,
			     &zlen)) != COMP_OK) {
		/* cannot be: the room is the library's own bound */
		pf_lock(s);
		cli_error("%s: igzip failed to compress %zu bytes (error %d)",
			  xfdr_trace_name(s->file.t), c->len, rc);
		pf_unlock(s);
		s->failed = 1;
		return;
	}
	/* Trace.packet { compressed_packets: Z }, its head right before Z */
	h = pb_put_varint(head + 1, 2 + pb_varint_size(zlen) + zlen);
	head[0] = TRACE_PACKET << 3 | PB_LEN;
	h = pb_put_varint(h, PKT_COMPRESSED_PACKETS << 3 | PB_LEN);
	h = pb_put_varint(h, zlen);
	hn = (size_t)(h - head);
	memcpy(o->z + PF_CHUNK_HEAD - hn, head, hn);
	pf_write(s, part, o->z + PF_CHUNK_HEAD - hn, hn + zlen);
	c->len = 0;
}

void pf_flush(struct pf *s)
{
	pf_put_chunk(s, &s->out->buf, s->part);
	s->out->sent = 1;
}

/* The packet body p (n bytes) goes into the chunk (or the head) as a Trace.packet. */
static void emit_body(struct pf *s, const uint8_t *p, size_t n)
{
	struct pb_buf *to = s->to_head ? &s->head : &s->out->buf;
	uint8_t head[16], *h;
	size_t hn;

	head[0] = TRACE_PACKET << 3 | PB_LEN;
	h = pb_put_varint(head + 1, n);
	hn = (size_t)(h - head);
	if (!s->to_head && to->len && to->len + hn + n > s->out->max)
		pf_flush(s);
	if (pb_room(to, hn + n)) {
		pf_oom(s);
		return;
	}
	memcpy(to->p + to->len, head, hn);
	memcpy(to->p + to->len + hn, p, n);
	to->len += hn + n;
}

/* The packet built in s->pkt goes out, and pkt is reset. */
static void emit(struct pf *s)
{
	if (s->pkt.oom)
		pf_oom(s);
	if (!s->failed)
		emit_body(s, s->pkt.p, s->pkt.len);
	pb_reset(&s->pkt);
}

/* ---- Names and times ------------------------------------------------------------------------ */

/* Nanoseconds since the trace's first TSC, rounded to the nearest. */
static uint64_t to_ns(const struct pf *s, uint64_t tsc)
{
	uint64_t ticks = tsc - s->input->base;

	/* in 64 bits while they fit (the first seconds of the trace): a 128-bit division is slow */
	if (ticks < UINT64_MAX / PF_NS_PER_S - 1 && s->file.hz < UINT64_MAX / 2)
		return (ticks * PF_NS_PER_S + s->file.hz / 2) / s->file.hz;
	return (uint64_t)(((unsigned __int128)ticks * PF_NS_PER_S + s->file.hz / 2) / s->file.hz);
}

/* The bytes p[0, n) appended to a string being written, invalid UTF-8 bytes as U+FFFD. */
static void append_text(struct pb_buf *b, const uint8_t *p, size_t n)
{
	size_t i, len;

	for (i = 0; i < n && !pb_room(b, 4); i += len) {
		len = cli_utf8_len(p + i, n - i);
		if (len) {
			memcpy(b->p + b->len, p + i, len);
			b->len += len;
		} else {
			memcpy(b->p + b->len, "\xef\xbf\xbd", 3);
			b->len += 3;
			len = 1;
		}
	}
}

static void append_str(struct pb_buf *b, const char *s)
{
	append_text(b, (const uint8_t *)s, strlen(s));
}

/* A string field, its invalid UTF-8 bytes as U+FFFD (protobuf strings are UTF-8). */
static void put_text(struct pb_buf *b, unsigned field, const uint8_t *p, size_t n)
{
	size_t i, len;

	for (i = 0; i < n; i += len)
		if (!(len = cli_utf8_len(p + i, n - i)))
			break;
	if (i == n) {
		pb_bytes(b, field, p, n);
		return;
	}
	/* the rare name or payload that is not UTF-8 */
	pb_open(b, field);
	append_text(b, p, n);
	pb_close(b);
}

static void put_str(struct pb_buf *b, unsigned field, const char *s)
{
	put_text(b, field, (const uint8_t *)s, strlen(s));
}

static const char *fname(const struct pf *s, uint32_t fid, char *buf, size_t n)
{
	return fid == TIMELINE_UNNAMED ? "(unknown)"
				       : cli_function_name(s->file.names, fid, buf, n);
}

/* Returns the slot of fid in the sequence's table (grown as needed), or NULL out of memory. */
static uint32_t *intern_slot(struct pf_interned *in, uint32_t fid)
{
	uint32_t i, mask;

	if (2 * (in->count + 1) > in->cap) {
		struct pf_interned g = {.cap = in->cap ? 2 * in->cap : 1024,
					.generation = 1,
					.count = in->count,
					.next_iid = in->next_iid};
		uint32_t j;

		g.fid = malloc((size_t)g.cap * sizeof(uint32_t));
		g.iid = malloc((size_t)g.cap * sizeof(uint32_t));
		g.gen = calloc(g.cap, sizeof(uint32_t));
		if (!g.fid || !g.iid || !g.gen || g.cap < in->cap) {
			free(g.fid);
			free(g.iid);
			free(g.gen);
			return NULL;
		}
		for (j = 0; j < in->cap; j++) {
			if (in->gen[j] != in->generation)
				continue;
			for (i = (in->fid[j] * 2654435761u) & (g.cap - 1); g.gen[i];
			     i = (i + 1) & (g.cap - 1))
				;
			g.gen[i] = 1;
			g.fid[i] = in->fid[j];
			g.iid[i] = in->iid[j];
		}
		free(in->fid);
		free(in->iid);
		free(in->gen);
		*in = g;
	}
	mask = in->cap - 1;
	for (i = (fid * 2654435761u) & mask; in->gen[i] == in->generation; i = (i + 1) & mask)
		if (in->fid[i] == fid)
			return &in->iid[i];
	in->gen[i] = in->generation;
	in->fid[i] = fid;
	in->iid[i] = 0;
	in->count++;
	return &in->iid[i];
}

/* In the intern table: the function's source location is interned under its name's iid. */
#define IID_HAS_SOURCE 0x80000000u

/*
 * The source of fid (the DWARF line of its first instruction), looked up once per sequence:
 * the lookups of the writers, one per thread, take turns.
 */
static int source_of(struct pf *s, uint32_t fid, const char **file, int *line)
{
	int found;

	if (fid == TIMELINE_UNNAMED || !s->input->src)
		return 0;
	pf_lock(s);
	found = srcline_function(s->input->src, s->file.names, fid, file, line, NULL);
	pf_unlock(s);
	return found;
}

/*
 * The iid of fid's name on this sequence (*src: its source location has the same iid); a new
 * one is interned into the packet being built.
 */
static uint64_t name_iid(struct pf *s, uint32_t fid, int *src)
{
	uint32_t *iid = intern_slot(&s->in, fid);
	const char *file, *name;
	char buf[16];
	int line;

	*src = 0;
	if (!iid) {
		s->pkt.oom = 1;
		return 0;
	}
	if (*iid) {
		*src = (*iid & IID_HAS_SOURCE) != 0;
		return *iid & ~IID_HAS_SOURCE;
	}
	*iid = ++s->in.next_iid;
	name = fname(s, fid, buf, sizeof(buf));
	pb_open(&s->pkt, PKT_INTERNED_DATA);
	pb_open(&s->pkt, INTERNED_EVENT_NAMES);
	pb_varint(&s->pkt, INTERNED_IID, *iid);
	put_str(&s->pkt, INTERNED_NAME, name);
	pb_close(&s->pkt);
	if (source_of(s, fid, &file, &line)) {
		pb_open(&s->pkt, INTERNED_SOURCE_LOCATIONS);
		pb_varint(&s->pkt, INTERNED_IID, *iid);
		put_str(&s->pkt, SOURCE_FILE_NAME, file);
		put_str(&s->pkt, SOURCE_FUNCTION_NAME, name);
		pb_varint(&s->pkt, SOURCE_LINE_NUMBER, (uint64_t)line);
		pb_close(&s->pkt);
		*src = 1;
	}
	pb_close(&s->pkt);
	if (*src)
		*iid |= IID_HAS_SOURCE;
	return *iid & ~IID_HAS_SOURCE;
}

/* ---- Debug annotations ------------------------------------------------------------------ */

static void ann_open(struct pb_buf *b, enum pf_key key, const char *name)
{
	pb_open(b, EVENT_ANNOTATIONS);
	if (name)
		put_str(b, ANN_NAME, name);
	else
		pb_varint(b, ANN_NAME_IID, key);
}

static void ann_u64(struct pb_buf *b, enum pf_key key, const char *name, uint64_t v)
{
	ann_open(b, key, name);
	pb_varint(b, ANN_UINT, v);
	pb_close(b);
}

static void ann_str(struct pb_buf *b, enum pf_key key, const char *name, const char *v)
{
	ann_open(b, key, name);
	put_str(b, ANN_STRING, v);
	pb_close(b);
}

/* One entry of a dictionary annotation. */
static void dict_u64(struct pb_buf *b, const char *name, uint64_t v)
{
	pb_open(b, ANN_DICT);
	put_str(b, ANN_NAME, name);
	pb_varint(b, ANN_UINT, v);
	pb_close(b);
}

/* ---- Slices ------------------------------------------------------------------------------ */

/* TracePacket's timestamp and sequence, and the TrackEvent opened, of an event at tsc. */
static void event_head(struct pf *s, uint64_t tsc, unsigned type)
{
	uint64_t ns = to_ns(s, tsc);

	pb_varint(&s->pkt, PKT_TIMESTAMP, ns - s->last_ns);
	pb_varint(&s->pkt, PKT_SEQUENCE_ID, s->seq);
	s->last_ns = ns;
	pb_open(&s->pkt, PKT_TRACK_EVENT);
	pb_varint(&s->pkt, EVENT_TYPE, type);
}

/*
 * A slice's begin (name_iid: its interned name; src: and its source location, the same iid) or
 * end with nothing more to say: the packet made in place in the chunk, as the general path
 * would make it. Most of a trace's packets.
 */
static void plain_slice(struct pf *s, uint64_t tsc, unsigned type, uint64_t name_iid, int src)
{
	enum { MAX = 2 + 11 + 6 + 2 + 2 + 11 + 2 + 10 }; /* the longest packet, with its head */
	struct pb_buf *c = &s->out->buf;
	uint8_t *p, *q, *te;
	uint64_t ns = to_ns(s, tsc);

	if (c->len && c->len + MAX > s->out->max)
		pf_flush(s);
	if (pb_room(c, MAX)) {
		pf_oom(s);
		return;
	}
	p = c->p + c->len;
	q = p + 2; /* Trace.packet's head: its length is under 128 bytes */
	*q++ = PKT_TIMESTAMP << 3 | PB_VARINT;
	q = pb_put_varint(q, ns - s->last_ns);
	*q++ = PKT_SEQUENCE_ID << 3 | PB_VARINT;
	q = pb_put_varint(q, s->seq);
	*q++ = PKT_TRACK_EVENT << 3 | PB_LEN;
	te = q++; /* the TrackEvent's length: under 128 bytes too */
	*q++ = EVENT_TYPE << 3 | PB_VARINT;
	*q++ = (uint8_t)type;
	if (name_iid) {
		*q++ = EVENT_NAME_IID << 3 | PB_VARINT;
		q = pb_put_varint(q, name_iid);
	}
	if (src) {
		q = pb_put_varint(q, (uint64_t)EVENT_SOURCE_LOCATION_IID << 3 | PB_VARINT);
		q = pb_put_varint(q, name_iid);
	}
	*te = (uint8_t)(q - te - 1);
	p[0] = TRACE_PACKET << 3 | PB_LEN;
	p[1] = (uint8_t)(q - p - 2);
	s->last_ns = ns;
	c->len += (size_t)(q - p);
}

static void pf_begin(void *ctx, uint32_t fid, uint64_t tsc, enum tl_begin how,
		     const struct xfdr_event *ev, uint32_t calls)
{
	struct pf *s = ctx;
	struct pb_buf *b = &s->pkt;
	int src;
	uint64_t iid = name_iid(s, fid, &src); /* its interned data goes before the event */
	uint32_t i;

	if (how == TL_BEGIN_ENTRY && !(ev && ev->arg_count) && !b->len && iid) {
		plain_slice(s, tsc, TYPE_SLICE_BEGIN, iid, src);
		return;
	}
	event_head(s, tsc, TYPE_SLICE_BEGIN);
	pb_varint(b, EVENT_NAME_IID, iid);
	if (src)
		pb_varint(b, EVENT_SOURCE_LOCATION_IID, iid);
	if (how != TL_BEGIN_ENTRY)
		ann_str(b, KEY_BEGIN, NULL, timeline_begin_name[how]);
	if (fid == TIMELINE_UNNAMED)
		ann_str(b, KEY_REASON, NULL, "deeper than the ids the stack context holds");
	if (calls > 1)
		ann_u64(b, KEY_UNNAMED_CALLS, NULL, calls);
	for (i = 0; ev && i < ev->arg_count; i++) {
		char key[24];

		/* arg0 .. arg7 are interned; later ones are named in place */
		if (i >= KEY_COUNT - KEY_ARG0)
			snprintf(key, sizeof(key), "arg%" PRIu32, i);
		ann_u64(b, KEY_ARG0 + i, i < KEY_COUNT - KEY_ARG0 ? NULL : key,
			xfdr_event_arg(s->file.t, ev, i));
	}
	pb_close(b);
	emit(s);
}

static void pf_end(void *ctx, uint32_t fid, uint64_t tsc, enum tl_end how, uint32_t exit_fid)
{
	struct pf *s = ctx;
	struct pb_buf *b = &s->pkt;
	char buf[16];

	if (how == TL_END_EXIT && fid != TIMELINE_UNNAMED) {
		plain_slice(s, tsc, TYPE_SLICE_END, 0, 0);
		return;
	}
	event_head(s, tsc, TYPE_SLICE_END);
	if (how != TL_END_EXIT)
		ann_str(b, KEY_END, NULL, timeline_end_name[how]);
	if (fid == TIMELINE_UNNAMED && how <= TL_END_TAIL_EXIT)
		ann_str(b, KEY_EXIT_FUNCTION, NULL, fname(s, exit_fid, buf, sizeof(buf)));
	pb_close(b);
	emit(s);
}

/* ---- Instants ---------------------------------------------------------------------------- */

static void instant_head(struct pf *s, uint64_t tsc, const char *name)
{
	event_head(s, tsc, TYPE_INSTANT);
	put_str(&s->pkt, EVENT_NAME, name);
}

static void pf_context(void *ctx, const struct xfdr_stack_context *c, uint64_t tsc, int replaced)
{
	struct pf *s = ctx;
	struct pb_buf *b = &s->pkt;
	char buf[16];
	uint32_t i;

	instant_head(s, tsc, "stack context");
	ann_u64(b, 0, "depth", c->depth);
	ann_u64(b, 0, "ids_known", c->id_count);
	ann_str(b, 0, "open_calls",
		replaced ? "rebuilt from the context" : "agree with the context");
	ann_open(b, 0, "stack");
	for (i = 0; i < c->id_count; i++) {
		pb_open(b, ANN_ARRAY);
		put_str(b, ANN_STRING, fname(s, c->ids[i], buf, sizeof(buf)));
		pb_close(b);
	}
	pb_close(b);
	pb_close(b);
	emit(s);
}

static void put_crash(struct pf *s, const struct xfdr_crash_event *ce, uint64_t tsc)
{
	struct pb_buf *b = &s->pkt;
	struct cli_frame_text f;
	char buf[32], title[64], vaddr[24];
	const char *sig = cli_signal_name(s->file.names, ce->signal, buf, sizeof(buf));
	uint32_t i;

	if (*sig)
		snprintf(title, sizeof(title), "crash %s", sig);
	else
		snprintf(title, sizeof(title), "crash signal %" PRIu32, ce->signal);
	instant_head(s, tsc, title);
	ann_u64(b, 0, "signal", ce->signal);
	ann_str(b, 0, "signal_name", sig);
	ann_open(b, 0, "code");
	pb_varint(b, ANN_INT, (uint64_t)(int64_t)ce->code);
	pb_close(b);
	ann_u64(b, 0, "tid", ce->tid);
	ann_open(b, 0, "fault_addr");
	pb_varint(b, ANN_POINTER, ce->fault_addr);
	pb_close(b);
	ann_u64(b, 0, "frame_count", ce->frame_count);
	if (ce->flags & XFDR_CRASH_TRUNCATED)
		ann_str(b, 0, "truncated", "yes (the stack had more frames)");
	ann_open(b, 0, "backtrace");
	for (i = 0; i < ce->frame_count; i++) {
		/* "#I 0xPC SYMBOL (MODULE+0xVADDR)", as the JSON's */
		cli_crash_frame(s->file.names, ce, i, &f);
		pb_open(b, ANN_ARRAY);
		pb_open(b, ANN_STRING);
		append_str(b, f.head);
		if (f.symbol) {
			append_str(b, " ");
			append_str(b, f.symbol);
		}
		if (f.module) {
			append_str(b, " (");
			append_str(b, f.module);
			if (f.have_module_vaddr) {
				snprintf(vaddr, sizeof(vaddr), "+0x%" PRIx64, f.module_vaddr);
				append_str(b, vaddr);
			}
			append_str(b, ")");
		}
		pb_close(b);
		pb_close(b);
	}
	pb_close(b);
	pb_close(b);
	emit(s);
}

static void put_drops(struct pf *s, const struct xfdr_drop_event *d, uint64_t tsc)
{
	struct pb_buf *b = &s->pkt;
	struct xfdr_drop_thread e;
	uint32_t i;

	instant_head(s, tsc, "xfdr drops");
	ann_u64(b, 0, "no_buffer", d->no_buffer);
	ann_u64(b, 0, "reentrant", d->reentrant);
	ann_u64(b, 0, "too_large", d->too_large);
	ann_u64(b, 0, "no_thread_slot", d->no_thread_slot);
	ann_u64(b, 0, "threads_omitted", d->threads_omitted);
	ann_u64(b, 0, "overwritten", d->overwritten);
	ann_open(b, 0, "threads");
	for (i = 0; i < d->thread_count; i++) {
		xfdr_drop_event_thread(d, i, &e);
		pb_open(b, ANN_ARRAY);
		dict_u64(b, "tid", e.tid);
		dict_u64(b, "thread_id", e.thread_id);
		dict_u64(b, "no_buffer", e.no_buffer);
		dict_u64(b, "reentrant", e.reentrant);
		dict_u64(b, "too_large", e.too_large);
		dict_u64(b, "overwritten", e.overwritten);
		pb_close(b);
	}
	pb_close(b);
	pb_close(b);
	emit(s);
}

/* A payload shown as size, text and hex, with why it was not decoded (NULL: not ours). */
static void put_payload(struct pf *s, const char *title, const struct xfdr_event *ev, uint64_t tsc,
			const char *why)
{
	static const char hex[] = "0123456789abcdef";
	struct pb_buf *b = &s->pkt;
	const uint8_t *p = ev->payload ? ev->payload : (const uint8_t *)"";
	uint32_t bytes = ev->payload_bytes;
	uint32_t text = bytes < PF_TEXT_BYTES ? bytes : PF_TEXT_BYTES;
	uint32_t nhex = bytes < PF_HEX_BYTES ? bytes : PF_HEX_BYTES, i;
	char digits[2 * PF_HEX_BYTES];

	instant_head(s, tsc, title);
	if (ev->type == XFDR_EVENT_TYPED)
		ann_u64(b, 0, "type", ev->event_type);
	if (why)
		ann_str(b, 0, "error", why);
	ann_u64(b, 0, "size", bytes);
	while (text && !p[text - 1])
		text--;
	ann_open(b, 0, "text");
	put_text(b, ANN_STRING, p, text);
	pb_close(b);
	for (i = 0; i < nhex; i++) {
		digits[2 * i] = hex[p[i] >> 4];
		digits[2 * i + 1] = hex[p[i] & 15];
	}
	ann_open(b, 0, "hex");
	pb_bytes(b, ANN_STRING, digits, 2 * nhex);
	pb_close(b);
	if (bytes > PF_TEXT_BYTES)
		ann_str(b, 0, "truncated", "yes");
	pb_close(b);
	emit(s);
}

static void pf_event(void *ctx, const struct xfdr_event *ev, uint64_t tsc, const char *why)
{
	struct pf *s = ctx;
	const uint8_t *p = ev->payload;
	uint32_t bytes = ev->payload_bytes;
	struct xfdr_error err;
	int big = ev->big_endian;

	if (ev->type == XFDR_EVENT_TYPED) {
		put_payload(s, "typed event", ev, tsc, NULL);
	} else if (why) {
		put_payload(s, "stack context (invalid)", ev, tsc, why);
	} else if (xfdr_payload_has_tag(p, bytes, XFDR_CRASH_MAGIC)) {
		struct xfdr_crash_event ce;

		if (xfdr_crash_event_decode(p, bytes, big, &ce, &err) == 0)
			put_crash(s, &ce, tsc);
		else
			put_payload(s, "crash (invalid)", ev, tsc, err.text);
	} else if (xfdr_payload_has_tag(p, bytes, XFDR_DROP_MAGIC)) {
		struct xfdr_drop_event d;

		if (xfdr_drop_event_decode(p, bytes, big, &d, &err) == 0)
			put_drops(s, &d, tsc);
		else
			put_payload(s, "xfdr drops (invalid)", ev, tsc, err.text);
	} else {
		put_payload(s, "custom event", ev, tsc, NULL);
	}
}

/* ---- Tracks and sequences ------------------------------------------------------------------ */

void pf_put_process(struct pf *s, uint32_t pid)
{
	const char *trace = xfdr_trace_name(s->file.t), *slash = strrchr(trace, '/');

	pb_varint(&s->pkt, PKT_SEQUENCE_ID, PF_SEQ_PROCESSES);
	pb_open(&s->pkt, PKT_TRACK_DESCRIPTOR);
	pb_varint(&s->pkt, TRACK_UUID, PF_PROCESS_UUID + pid);
	pb_open(&s->pkt, TRACK_PROCESS);
	pb_varint(&s->pkt, PROCESS_PID, pid);
	put_str(&s->pkt, PROCESS_NAME,
		pid == s->file.map_pid && s->file.process_name ? s->file.process_name
							       : (slash ? slash + 1 : trace));
	pb_close(&s->pkt);
	pb_close(&s->pkt);
	emit(s);
	if (pid != s->file.map_pid || !s->file.map_ppid)
		return;
	/* Its parent: ProcessDescriptor has no field for it, the process tree has. */
	pb_varint(&s->pkt, PKT_SEQUENCE_ID, PF_SEQ_PROCESSES);
	pb_open(&s->pkt, PKT_PROCESS_TREE);
	pb_open(&s->pkt, TREE_PROCESSES);
	pb_varint(&s->pkt, TREE_PID, pid);
	pb_varint(&s->pkt, TREE_PPID, s->file.map_ppid);
	if (s->file.process_name)
		put_str(&s->pkt, TREE_CMDLINE, s->file.process_name);
	pb_close(&s->pkt);
	pb_close(&s->pkt);
	emit(s);
}

uint32_t pf_thread_pid(const struct cli_timeline_file *f, const struct xfdr_thread_info *ti)
{
	return f->map_pid ? f->map_pid : f->version >= 3 && ti->pid ? ti->pid : 1;
}

/*
 * A thread's track and sequence: its first packets, at its first event (tsc). Thread id 0 (the
 * runtime's process-wide events: the drop counts) is no thread: its events go on the process's
 * track.
 */
static void pf_thread_begin(void *ctx, const struct xfdr_thread_info *ti, uint64_t tsc)
{
	struct pf *s = ctx;
	struct pb_buf *b = &s->pkt;
	/* never 0: Perfetto takes pid and tid 0 for the idle process, which viewers hide */
	uint32_t pid = pf_thread_pid(&s->file, ti), ktid = 0;
	const char *name = xfdr_names_thread(s->file.names, ti->thread_id, &ktid);
	uint64_t track = PF_PROCESS_UUID + pid;
	unsigned k;
	int known;

	s->in.generation++;
	s->in.count = 0;
	s->in.next_iid = 0;
	s->last_ns = to_ns(s, tsc);
	if (s->input->split && (known = cli_pids_note(&s->input->described, pid)) <= 0) {
		if (known < 0)
			s->failed = 1;
		else
			pf_put_process(s, pid);
	}
	s->to_head = !s->input->split;

	pb_varint(b, PKT_SEQUENCE_ID, s->seq);
	pb_varint(b, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	if (ti->thread_id) {
		track = s->seq;
		pb_open(b, PKT_TRACK_DESCRIPTOR);
		pb_varint(b, TRACK_UUID, track);
		pb_varint(b, TRACK_PARENT_UUID, PF_PROCESS_UUID + pid);
		pb_open(b, TRACK_THREAD);
		pb_varint(b, THREAD_PID, pid);
		pb_varint(b, THREAD_TID, ktid ? ktid : ti->thread_id);
		if (name)
			put_str(b, THREAD_NAME, name);
		pb_close(b);
		pb_close(b);
	}
	pb_open(b, PKT_DEFAULTS);
	pb_varint(b, DEFAULTS_CLOCK_ID, PF_CLOCK_INCREMENTAL);
	pb_open(b, DEFAULTS_TRACK_EVENT);
	pb_varint(b, TRACK_EVENT_DEFAULTS_TRACK_UUID, track);
	pb_close(b);
	pb_close(b);
	pb_open(b, PKT_INTERNED_DATA);
	for (k = 1; k < KEY_COUNT; k++) {
		pb_open(b, INTERNED_ANNOTATION_NAMES);
		pb_varint(b, INTERNED_IID, k);
		put_str(b, INTERNED_NAME, pf_key_name[k]);
		pb_close(b);
	}
	pb_close(b);
	emit(s);

	/* Clock 64 is BOOTTIME's nanoseconds from the thread's first event on, in steps. */
	pb_varint(b, PKT_SEQUENCE_ID, s->seq);
	pb_open(b, PKT_CLOCK_SNAPSHOT);
	pb_open(b, CLOCKS);
	pb_varint(b, CLOCK_ID, PF_CLOCK_BOOTTIME);
	pb_varint(b, CLOCK_TIMESTAMP, s->last_ns);
	pb_close(b);
	pb_open(b, CLOCKS);
	pb_varint(b, CLOCK_ID, PF_CLOCK_INCREMENTAL);
	pb_varint(b, CLOCK_TIMESTAMP, s->last_ns);
	pb_varint(b, CLOCK_IS_INCREMENTAL, 1);
	pb_close(b);
	pb_close(b);
	emit(s);
	s->to_head = 0;
}

/*
 * The calls open when the thread's first event was recorded (fids, outermost first), found
 * by the walk at their exits: begun at that first event (tsc) in the thread's head, after
 * its first packets and before its body. Their names are interned anew, with iids above the
 * body's: the body defines its own later in the file, and an iid is used after it is defined.
 */
static void pf_before_trace(void *ctx, const uint32_t *fids, size_t n, uint64_t tsc)
{
	struct pf *s = ctx;
	size_t i;

	s->in.generation++;
	s->in.count = 0;
	s->last_ns = to_ns(s, tsc);
	s->to_head = 1;
	for (i = 0; i < n; i++)
		pf_begin(s, fids[i], tsc, TL_BEGIN_BEFORE_TRACE, NULL, 1);
	s->to_head = 0;
}

/* ---- Split output ---------------------------------------------------------------------- */

/*
 * Split: is this part full (timeline_ops.cut)? Looked at once after each chunk went out, when
 * the part's size is known, compressed or not: it passes the size by a chunk at most (and the
 * ends of the calls open at the cut).
 */
static int pf_cut(void *ctx)
{
	struct pf *s = ctx;

	if (!s->out->sent)
		return 0;
	s->out->sent = 0;
	return split_out_full(s->input->split);
}

/* Split: this part ends, the next begins, its tracks to describe anew (timeline_ops.next_output).
 */
static void pf_next_output(void *ctx, const struct timeline_counts *so_far)
{
	struct pf *s = ctx;

	(void)so_far;
	pf_flush(s);
	if (split_out_next(s->input->split))
		s->failed = 1;
	s->input->described.n = 0;
}

const struct timeline_ops pf_ops = {
    .thread_begin = pf_thread_begin,
    .begin = pf_begin,
    .end = pf_end,
    .context = pf_context,
    .event = pf_event,
    .failed = pf_failed,
    .before_trace = pf_before_trace,
};

const struct timeline_ops pf_ops_split = {
    .thread_begin = pf_thread_begin,
    .begin = pf_begin,
    .end = pf_end,
    .context = pf_context,
    .event = pf_event,
    .failed = pf_failed,
    .cut = pf_cut,
    .next_output = pf_next_output,
};

void pf_chunk_free(struct pf_chunk *c)
{
	pb_free(&c->buf);
	free(c->z);
	free(c->zip);
}

void pf_free(struct pf *s)
{
	pf_chunk_free(&s->own);
	pb_free(&s->pkt);
	pb_free(&s->head);
	free(s->in.fid);
	free(s->in.iid);
	free(s->in.gen);
}
