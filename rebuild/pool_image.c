/*
 * rebuild/pool_image.c - a valid trace from the buffers of a recorder that died.
 *
 * Input: the pool as the runtime left it. A descriptor per buffer says its state (free,
 * claiming, owned, full), how many bytes of whole records it holds (used_bytes, published by
 * the owner after writing them), its claim order and its owner; the locator says where the
 * fields are. Output: a version 1 trace, header + whole buffers, that any reader takes.
 *
 * Per buffer (with a locator):
 *   free, claiming             left out (never used; preamble being written)
 *   owned or full, used < 48   left out (no whole preamble)
 *   used > buffer size         left out (the descriptor is not to be believed)
 *   otherwise                  its first used_bytes are walked with the reader's own state
 *                              machine (records.c) over a one-buffer image whose buffer_size
 *                              is used_bytes; the walk stops at the first record that is
 *                              invalid or cut by used_bytes (a torn tail, counted), or at an
 *                              EndOfBuffer (a closed buffer). What it took is the buffer.
 *                              The preamble must be the one the descriptor announces (thread
 *                              id, TSC), or the buffer is a reused one's stale bytes.
 * The kept buffers go out in claim_seq order (each thread's buffers then come in time order),
 * each closed with EndOfBuffer and zero padding to the buffer size. A prefix that leaves 1 to
 * 15 bytes, where no EndOfBuffer fits, is shortened by a record or two (the grammar allows a
 * buffer to end after any body record).
 *
 * Without a locator the buffers are walked whole, in pool order, and each is kept up to its
 * first invalid record or all-zero word (a fresh buffer's unwritten part; no valid record of
 * the runtime is all zero, function id 0 is never given out) if its preamble is valid.
 *
 * The reader's decoder is used as it is, on memory images (its public API): nothing here
 * decodes a record. The few bytes written (header, EndOfBuffer) are the writer's encoding
 * (writer/), in the pool's byte order; only the locator's and descriptors' fields are loaded
 * here, with the reader's byte-order loads (reader/bytes.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/bytes.h"
#include "reader/error.h"
#include "rebuild/file_io.h"
#include "rebuild/pool_image.h"
#include "writer/encode.h"
#include "writer/file.h"

#define THREAD_IDS 65536u

static const char *const verdict_names[RB_POOL_VERDICTS] = {
    [RB_POOL_KEPT] = "kept",
    [RB_POOL_FREE] = "free (never used)",
    [RB_POOL_CLAIMING] = "being claimed",
    [RB_POOL_EMPTY] = "no preamble yet",
    [RB_POOL_BAD_LENGTH] = "used_bytes beyond the buffer",
    [RB_POOL_STALE] = "stale (preamble not the descriptor's)",
    [RB_POOL_BAD_PREAMBLE] = "no valid preamble",
    [RB_POOL_ABSENT] = "not in the image",
    [RB_POOL_NO_ROOM] = "no room for EndOfBuffer",
};

const char *rb_pool_verdict_name(enum rb_pool_verdict v)
{
	return (unsigned)v < RB_POOL_VERDICTS ? verdict_names[v] : "unknown";
}

/* ---- The locator --------------------------------------------------------------------------- */

static int loc_fail(struct xfdr_error *err, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int loc_fail(struct xfdr_error *err, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	err->offset = off;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return -1;
}

/* The 8 bytes at p as text when printable, else as hex bytes. */
static const char *show8(const uint8_t *p, char *out, size_t n)
{
	int i, printable = 1;

	for (i = 0; i < 8; i++)
		printable &= p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\';
	if (printable)
		snprintf(out, n, "\"%.8s\"", (const char *)p);
	else
		snprintf(out, n, "bytes %02x %02x %02x %02x %02x %02x %02x %02x", p[0], p[1], p[2],
			 p[3], p[4], p[5], p[6], p[7]);
	return out;
}

struct field_at {
	const char *name;
	unsigned locator_off;
	unsigned bytes;
	size_t member;
};

#define FIELD(n, off, bytes)                                                                       \
	{                                                                                          \
#n, off, bytes, offsetof(struct rb_pool_locator, at_##n)                           \
	}

static const struct field_at fields_at[] = {
    FIELD(used, XFDR_POOL_USED_AT_OFF, 8),
    FIELD(ctl, XFDR_POOL_CTL_AT_OFF, 8),
    FIELD(claim_seq, XFDR_POOL_CLAIM_SEQ_AT_OFF, 8),
    FIELD(owner_tid, XFDR_POOL_OWNER_TID_AT_OFF, 4),
    FIELD(thread_id, XFDR_POOL_THREAD_ID_AT_OFF, 4),
    FIELD(first_tsc, XFDR_POOL_FIRST_TSC_AT_OFF, 8),
    FIELD(last_tsc, XFDR_POOL_LAST_TSC_AT_OFF, 8),
};

int rb_pool_locator_parse(const uint8_t *p, struct rb_pool_locator *out, struct xfdr_error *err)
{
	struct rb_pool_locator l;
	const uint8_t *v = p + XFDR_POOL_VERSION_OFF;
	uint64_t span;
	char shown[64];
	size_t i;
	int big;

	if (memcmp(p, XFDR_POOL_MAGIC, 8))
		return loc_fail(err, 0, "expected magic \"%s\", found %s", XFDR_POOL_MAGIC,
				show8(p, shown, sizeof(shown)));
	if (v[0] == 1 && !v[1] && !v[2] && !v[3]) {
		big = 0;
	} else if (!v[0] && !v[1] && !v[2] && v[3] == 1) {
		big = 1;
	} else {
		return loc_fail(err, XFDR_POOL_VERSION_OFF,
				"expected layout version %d (bytes 01 00 00 00 or 00 00 00 01), "
				"found bytes %02x %02x %02x %02x",
				XFDR_POOL_LAYOUT_VERSION, v[0], v[1], v[2], v[3]);
	}
	memset(&l, 0, sizeof(l));
	l.big_endian = big;
	l.header_bytes = rd_u32(p + XFDR_POOL_HEADER_BYTES_OFF, big);
	l.pid = rd_u64(p + XFDR_POOL_PID_OFF, big);
	l.buffers_addr = rd_u64(p + XFDR_POOL_BUFFERS_ADDR_OFF, big);
	l.buffer_bytes = rd_u64(p + XFDR_POOL_BUFFER_BYTES_OFF, big);
	l.buffer_count = rd_u32(p + XFDR_POOL_BUFFER_COUNT_OFF, big);
	l.desc_stride = rd_u32(p + XFDR_POOL_DESC_STRIDE_OFF, big);
	l.tsc_hz = rd_u64(p + XFDR_POOL_TSC_HZ_OFF, big);
	l.session = rd_u32(p + XFDR_POOL_SESSION_OFF, big);
	l.flags = rd_u32(p + XFDR_POOL_FLAGS_OFF, big);
	l.descs_addr = rd_u64(p + XFDR_POOL_DESCS_ADDR_OFF, big);
	l.names_addr = rd_u64(p + XFDR_POOL_NAMES_ADDR_OFF, big);

	if (l.header_bytes < XFDR_POOL_HEADER_BYTES || l.header_bytes % 8 ||
	    l.header_bytes > RB_POOL_HEADER_BYTES_MAX)
		return loc_fail(err, XFDR_POOL_HEADER_BYTES_OFF,
				"expected header_bytes of %d to %u, a multiple of 8, found %u",
				XFDR_POOL_HEADER_BYTES, RB_POOL_HEADER_BYTES_MAX, l.header_bytes);
	if (l.buffer_bytes < XFDR_BUFFER_PREAMBLE_BYTES || l.buffer_bytes % 8 ||
	    l.buffer_bytes > RB_POOL_BUFFER_BYTES_MAX)
		return loc_fail(err, XFDR_POOL_BUFFER_BYTES_OFF,
				"expected buffer_bytes of %d to %llu, a multiple of 8, found %llu",
				XFDR_BUFFER_PREAMBLE_BYTES,
				(unsigned long long)RB_POOL_BUFFER_BYTES_MAX,
				(unsigned long long)l.buffer_bytes);
	if (l.buffer_count < 1 || l.buffer_count > RB_POOL_BUFFER_COUNT_MAX)
		return loc_fail(err, XFDR_POOL_BUFFER_COUNT_OFF,
				"expected buffer_count of 1 to %u, found %u",
				RB_POOL_BUFFER_COUNT_MAX, l.buffer_count);
	if (l.desc_stride < 8 || l.desc_stride % 8 || l.desc_stride > RB_POOL_DESC_STRIDE_MAX)
		return loc_fail(err, XFDR_POOL_DESC_STRIDE_OFF,
				"expected desc_stride of 8 to %u, a multiple of 8, found %u",
				RB_POOL_DESC_STRIDE_MAX, l.desc_stride);
	for (i = 0; i < sizeof(fields_at) / sizeof(fields_at[0]); i++) {
		const struct field_at *f = &fields_at[i];
		uint32_t at = rd_u32(p + f->locator_off, big);

		if ((uint64_t)at + f->bytes > l.desc_stride)
			return loc_fail(err, f->locator_off,
					"expected the offset of %s (%u bytes) inside the %u-byte "
					"descriptor, found %u",
					f->name, f->bytes, l.desc_stride, at);
		memcpy((char *)&l + f->member, &at, sizeof(at));
	}
	/* Both products are below 2^54 by the bounds above; only the sums can wrap. */
	span = l.buffer_bytes * l.buffer_count;
	if (l.buffers_addr > UINT64_MAX - span)
		return loc_fail(err, XFDR_POOL_BUFFERS_ADDR_OFF,
				"expected %u buffers of %llu bytes from buffers_addr to fit below "
				"2^64, found buffers_addr 0x%llx",
				l.buffer_count, (unsigned long long)l.buffer_bytes,
				(unsigned long long)l.buffers_addr);
	span = (uint64_t)l.desc_stride * l.buffer_count;
	if (l.descs_addr > UINT64_MAX - span)
		return loc_fail(err, XFDR_POOL_DESCS_ADDR_OFF,
				"expected %u descriptors of %u bytes from descs_addr to fit below "
				"2^64, found descs_addr 0x%llx",
				l.buffer_count, l.desc_stride, (unsigned long long)l.descs_addr);
	*out = l;
	return 0;
}

/* ---- Walking one buffer -------------------------------------------------------------------- */

enum scan_stop {
	STOP_END,     /* the walk took every byte */
	STOP_EOB,     /* at an EndOfBuffer: the buffer was closed there */
	STOP_ZERO,    /* at an all-zero word (best effort only) */
	STOP_INVALID, /* at a record that is invalid or cut by the end */
};

struct scan {
	uint64_t kept;	    /* bytes of whole valid records from the buffer's start */
	uint64_t starts[2]; /* buffer offsets of the last and the one-before-last record */
	uint64_t records;
	enum scan_stop stop;
	uint16_t thread_id; /* from the preamble, when records >= 3 */
	uint64_t wall_seconds;
	uint32_t wall_micros;
	uint64_t first_tsc;
	char why[560];
};

static int all_zero(const uint8_t *p, size_t n)
{
	while (n--) {
		if (*p++)
			return 0;
	}
	return 1;
}

/*
 * The decoder's words for where the walk stopped, in buffer offsets: its "buffer: offset N: "
 * dropped and an image offset in the text ("... the end of the buffer at offset N") made a
 * buffer offset too.
 */
static void say_why(struct scan *s, const struct xfdr_error *err)
{
	const char *words = strstr(err->text, "expected"), *at;
	unsigned long long end;
	int n;

	if (!words)
		words = err->text;
	n = snprintf(s->why, sizeof(s->why),
		     "byte %llu: ", (unsigned long long)(err->offset - XFDR_FILE_HEADER_BYTES));
	at = strstr(words, " at offset ");
	if (at && sscanf(at, " at offset %llu", &end) == 1 && end >= XFDR_FILE_HEADER_BYTES)
		snprintf(s->why + n, sizeof(s->why) - (size_t)n, "%.*s at byte %llu",
			 (int)(at - words), words, end - XFDR_FILE_HEADER_BYTES);
	else
		snprintf(s->why + n, sizeof(s->why) - (size_t)n, "%s", words);
}

/*
 * Walk img[32, 32 + len) (the buffer's bytes, after 32 bytes of room for a header) with the
 * reader's state machine, as the only buffer of a file whose buffer_size is len.
 */
static void scan_buffer(uint8_t *img, uint64_t len, int big, int stop_at_zero, struct scan *s)
{
	const uint64_t end = XFDR_FILE_HEADER_BYTES + len;
	uint64_t next = XFDR_FILE_HEADER_BYTES;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_error err;
	struct xfdr_trace *t;
	int rc;

	memset(s, 0, sizeof(*s));
	wr_encode_file_header(img, &(struct wr_file_header){
				       .buffer_bytes = len,
				       .order = big ? WR_ORDER_BIG : WR_ORDER_LITTLE,
				   });
	if (xfdr_trace_open_memory(img, (size_t)end, "buffer", &t, &err) < 0) {
		s->stop = STOP_INVALID;
		snprintf(s->why, sizeof(s->why), "%s", err.text);
		return;
	}
	xfdr_records_begin(t, &c);
	for (;;) {
		if (stop_at_zero && end - next >= XFDR_FN_RECORD_BYTES &&
		    all_zero(img + next, XFDR_FN_RECORD_BYTES)) {
			s->stop = STOP_ZERO;
			break;
		}
		rc = xfdr_records_next(&c, &r, &err);
		if (rc == 0) {
			s->stop = STOP_END;
			break;
		}
		if (rc < 0) {
			s->stop = STOP_INVALID;
			say_why(s, &err);
			break;
		}
		if (r.is_metadata && r.kind == XFDR_MD_END_OF_BUFFER) {
			s->stop = STOP_EOB;
			break;
		}
		if (s->records == 0) {
			s->thread_id = r.thread_id;
		} else if (s->records == 1) {
			s->wall_seconds = r.seconds;
			s->wall_micros = r.micros;
		} else if (s->records == 2) {
			s->first_tsc = r.absolute_tsc;
		}
		s->starts[1] = s->starts[0];
		s->starts[0] = r.offset - XFDR_FILE_HEADER_BYTES;
		s->records++;
		next = r.offset + r.size;
	}
	s->kept = next - XFDR_FILE_HEADER_BYTES;
	xfdr_trace_close(t);
}

/*
 * The longest of: the walked prefix, or it without its last one or two records, that is a
 * whole preamble and leaves 0 or >= 16 bytes for EndOfBuffer. Returns its length, or 0.
 */
static uint64_t fit_end(const struct scan *s, uint64_t buffer_bytes)
{
	const uint64_t cand[3] = {s->kept, s->starts[0], s->starts[1]};
	uint64_t room;
	int i;

	for (i = 0; i < 3 && (uint64_t)i < s->records; i++) {
		if (cand[i] < XFDR_BUFFER_PREAMBLE_BYTES)
			break;
		room = buffer_bytes - cand[i];
		if (room == 0 || room >= XFDR_MD_RECORD_BYTES)
			return cand[i];
	}
	return 0;
}

/* ---- The rebuild ---------------------------------------------------------------------------- */

struct desc_info {
	uint64_t index;
	uint64_t used;
	uint64_t claim_seq;
	uint64_t first_tsc;
	uint32_t tid;
	uint32_t thread_id;
	unsigned state;
};

struct rebuild {
	const struct rb_pool_job *job;
	struct rb_pool_result *res;
	struct xfdr_error *err;
	int fd;
	const char *out_name;
	uint64_t buffer_bytes;
	uint64_t count;
	int big;
	uint8_t *img;	      /* 32 + buffer_bytes: a one-buffer image */
	int32_t *thread_slot; /* THREAD_IDS entries: index + 1 in res->threads, 0 if none */
	size_t threads_cap;
	int have_wall; /* earliest and latest preamble seen, for the rate */
	uint64_t wall_lo_us, tsc_lo, wall_hi_us, tsc_hi;
	uint64_t done;
};

static int write_at(struct rebuild *rb, const uint8_t *p, size_t n, uint64_t off)
{
	return rb_write_at(rb->fd, rb->out_name, p, n, off, rb->err);
}

static void note(struct rebuild *rb, struct rb_pool_note *n)
{
	rb->res->count[n->verdict]++;
	n->done = ++rb->done;
	n->total = rb->count;
	if (rb->job->note)
		rb->job->note(rb->job->note_ctx, n);
}

static int count_thread(struct rebuild *rb, uint16_t thread_id, uint32_t tid)
{
	struct rb_pool_result *res = rb->res;
	struct rb_pool_thread *th;
	int32_t slot = rb->thread_slot[thread_id];

	if (!slot) {
		if (res->thread_count == rb->threads_cap) {
			size_t cap = rb->threads_cap ? 2 * rb->threads_cap : 16;

			th = realloc(res->threads, cap * sizeof(*th));
			if (!th)
				return rd_fail_name(rb->out_name, rb->err, 0,
						    "expected memory for the thread list, found %s",
						    strerror(ENOMEM));
			res->threads = th;
			rb->threads_cap = cap;
		}
		th = &res->threads[res->thread_count++];
		th->thread_id = thread_id;
		th->tid = tid;
		th->buffers = 0;
		slot = (int32_t)res->thread_count;
		rb->thread_slot[thread_id] = slot;
	}
	th = &res->threads[slot - 1];
	if (!th->tid)
		th->tid = tid;
	th->buffers++;
	return 0;
}

static void see_wall(struct rebuild *rb, const struct scan *s)
{
	uint64_t us;

	if (s->wall_micros >= 1000000u || s->wall_seconds > UINT64_MAX / 1000000u - 1)
		return;
	us = s->wall_seconds * 1000000u + s->wall_micros;
	if (!rb->have_wall || us < rb->wall_lo_us) {
		rb->wall_lo_us = us;
		rb->tsc_lo = s->first_tsc;
	}
	if (!rb->have_wall || us > rb->wall_hi_us) {
		rb->wall_hi_us = us;
		rb->tsc_hi = s->first_tsc;
	}
	rb->have_wall = 1;
}

/*
 * Keep the buffer now in rb->img[32..]: close it after `kept` bytes, write it as the next
 * buffer of the output, count it. n describes it and is noted here.
 */
static int keep(struct rebuild *rb, const struct scan *s, uint64_t kept, struct rb_pool_note *n)
{
	uint8_t *b = rb->img + XFDR_FILE_HEADER_BYTES;
	const uint64_t off = XFDR_FILE_HEADER_BYTES + rb->res->kept * rb->buffer_bytes;

	/* fit_end() left room for EndOfBuffer: a refusal here is a bug of ours. */
	if (wr_close_buffer_order(b, (size_t)kept, (size_t)rb->buffer_bytes, rb->big))
		return rd_fail_name(rb->out_name, rb->err, off,
				    "expected room for EndOfBuffer after %llu bytes, found an "
				    "internal error of the rebuild",
				    (unsigned long long)kept);
	if (write_at(rb, b, (size_t)rb->buffer_bytes, off))
		return -1;
	if (count_thread(rb, s->thread_id, n->tid))
		return -1;
	see_wall(rb, s);
	rb->res->kept++;
	n->verdict = RB_POOL_KEPT;
	n->kept = kept;
	note(rb, n);
	return 0;
}

/* Read n bytes of buffer i into the image; returns what the source returned. */
static int read_buffer(struct rebuild *rb, uint64_t i, uint64_t n)
{
	const struct rb_pool_source *src = &rb->job->bufs;

	return src->read(src->ctx, rb->job->bufs_at + i * rb->buffer_bytes,
			 rb->img + XFDR_FILE_HEADER_BYTES, (size_t)n, rb->err);
}

static int cmp_claim(const void *a, const void *b)
{
	const struct desc_info *x = a, *y = b;

	if (x->claim_seq != y->claim_seq)
		return x->claim_seq < y->claim_seq ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static void decode_desc(const struct rb_pool_locator *l, const uint8_t *d, uint64_t index,
			struct desc_info *out)
{
	const int big = l->big_endian;

	out->index = index;
	out->used = rd_u64(d + l->at_used, big);
	out->state = (unsigned)(rd_u64(d + l->at_ctl, big) & 3u);
	out->claim_seq = rd_u64(d + l->at_claim_seq, big);
	out->tid = rd_u32(d + l->at_owner_tid, big);
	out->thread_id = rd_u32(d + l->at_thread_id, big);
	out->first_tsc = rd_u64(d + l->at_first_tsc, big);
}

/* The note of descriptor d, its verdict still to be given. */
static struct rb_pool_note desc_note(const struct desc_info *d)
{
	return (struct rb_pool_note){
	    .index = d->index,
	    .have_desc = 1,
	    .state = d->state,
	    .used = d->used,
	    .claim_seq = d->claim_seq,
	    .tid = d->tid,
	    .thread_id = (uint16_t)d->thread_id,
	};
}

static void note_desc(struct rebuild *rb, const struct desc_info *d, enum rb_pool_verdict v)
{
	struct rb_pool_note n = desc_note(d);

	n.verdict = v;
	note(rb, &n);
}

/*
 * Read every descriptor; note those that are not data, gather the others in *cand (claim
 * order). Descriptors are read a chunk at a time, one at a time where a chunk is not whole in
 * the image (a core that lacks some of their pages).
 */
static int gather_descs(struct rebuild *rb, struct desc_info **cand, size_t *ncand)
{
	const struct rb_pool_locator *l = rb->job->loc;
	const struct rb_pool_source *src = &rb->job->descs;
	const uint64_t stride = l->desc_stride;
	const uint64_t per_chunk = stride < 65536 ? 65536 / stride : 1;
	struct desc_info *v = NULL, d;
	uint8_t *chunk;
	uint64_t i, k, n;
	size_t nv = 0;
	int rc, whole;

	chunk = malloc((size_t)(per_chunk * stride));
	if (!chunk || !(v = malloc((size_t)l->buffer_count * sizeof(*v)))) {
		free(chunk);
		return rd_fail_name(rb->out_name, rb->err, 0,
				    "expected memory for %u descriptors, found %s", l->buffer_count,
				    strerror(ENOMEM));
	}
	for (i = 0; i < l->buffer_count; i += n) {
		n = l->buffer_count - i < per_chunk ? l->buffer_count - i : per_chunk;
		rc = src->read(src->ctx, rb->job->descs_at + i * stride, chunk,
			       (size_t)(n * stride), rb->err);
		if (rc < 0)
			goto fail;
		whole = rc == 0;
		for (k = 0; k < n; k++) {
			if (!whole) {
				rc = src->read(src->ctx, rb->job->descs_at + (i + k) * stride,
					       chunk + k * stride, (size_t)stride, rb->err);
				if (rc < 0)
					goto fail;
				if (rc) {
					struct rb_pool_note nt = {.index = i + k,
								  .verdict = RB_POOL_ABSENT};

					note(rb, &nt);
					continue;
				}
			}
			decode_desc(l, chunk + k * stride, i + k, &d);
			if (d.state == XFDR_POOL_STATE_FREE)
				note_desc(rb, &d, RB_POOL_FREE);
			else if (d.state == XFDR_POOL_STATE_CLAIMING)
				note_desc(rb, &d, RB_POOL_CLAIMING);
			else if (d.used < XFDR_BUFFER_PREAMBLE_BYTES)
				note_desc(rb, &d, RB_POOL_EMPTY);
			else if (d.used > l->buffer_bytes)
				note_desc(rb, &d, RB_POOL_BAD_LENGTH);
			else
				v[nv++] = d;
		}
	}
	free(chunk);
	qsort(v, nv, sizeof(*v), cmp_claim);
	*cand = v;
	*ncand = nv;
	return 0;
fail:
	free(chunk);
	free(v);
	return -1;
}

static int rebuild_with_locator(struct rebuild *rb)
{
	struct desc_info *cand = NULL, *d;
	struct rb_pool_note n;
	struct scan s;
	size_t nc = 0, i;
	uint64_t kept;
	int rc = -1, r;

	if (gather_descs(rb, &cand, &nc))
		return -1;
	for (i = 0; i < nc; i++) {
		d = &cand[i];
		n = desc_note(d);
		r = read_buffer(rb, d->index, d->used);
		if (r < 0)
			goto out;
		if (r) {
			n.verdict = RB_POOL_ABSENT;
			note(rb, &n);
			continue;
		}
		scan_buffer(rb->img, d->used, rb->big, 0, &s);
		n.why = s.why[0] ? s.why : NULL;
		if (s.kept < XFDR_BUFFER_PREAMBLE_BYTES) {
			n.verdict = RB_POOL_BAD_PREAMBLE;
			note(rb, &n);
			continue;
		}
		/* A reused buffer whose descriptor moved on before its preamble was rewritten. */
		if (s.thread_id != (uint16_t)d->thread_id || s.first_tsc != d->first_tsc) {
			n.verdict = RB_POOL_STALE;
			note(rb, &n);
			continue;
		}
		kept = fit_end(&s, rb->buffer_bytes);
		if (!kept) {
			n.verdict = RB_POOL_NO_ROOM;
			note(rb, &n);
			continue;
		}
		/* An EndOfBuffer inside used_bytes closed the buffer: what follows is padding. */
		if (kept < d->used && !(s.stop == STOP_EOB && kept == s.kept)) {
			rb->res->tails_cut++;
			rb->res->tail_bytes_cut += d->used - kept;
		}
		if (d->state == XFDR_POOL_STATE_OWNED)
			rb->res->open_closed++;
		if (keep(rb, &s, kept, &n))
			goto out;
	}
	rc = 0;
out:
	free(cand);
	return rc;
}

static int rebuild_walking(struct rebuild *rb)
{
	const uint64_t bytes = rb->buffer_bytes;
	struct rb_pool_note n;
	struct scan s;
	uint64_t i, kept;
	int r;

	for (i = 0; i < rb->count; i++) {
		n = (struct rb_pool_note){.index = i};
		r = read_buffer(rb, i, bytes);
		if (r < 0)
			return -1;
		if (r) {
			n.verdict = RB_POOL_ABSENT;
			note(rb, &n);
			continue;
		}
		if (all_zero(rb->img + XFDR_FILE_HEADER_BYTES, XFDR_FN_RECORD_BYTES)) {
			n.verdict = RB_POOL_FREE;
			note(rb, &n);
			continue;
		}
		scan_buffer(rb->img, bytes, rb->big, 1, &s);
		n.used = s.kept;
		n.thread_id = s.thread_id;
		n.why = s.why[0] ? s.why : NULL;
		if (s.kept < XFDR_BUFFER_PREAMBLE_BYTES) {
			n.verdict = RB_POOL_BAD_PREAMBLE;
			note(rb, &n);
			continue;
		}
		kept = fit_end(&s, bytes);
		if (!kept) {
			n.verdict = RB_POOL_NO_ROOM;
			note(rb, &n);
			continue;
		}
		if (s.stop == STOP_ZERO)
			rb->res->zero_ended++;
		else if (s.stop == STOP_INVALID)
			rb->res->invalid_ended++;
		if (keep(rb, &s, kept, &n))
			return -1;
	}
	return 0;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct rb_pool_thread *x = a, *y = b;

	return (x->thread_id > y->thread_id) - (x->thread_id < y->thread_id);
}

/* ticks per second = dTSC / dwall between the earliest and the latest preamble. */
static uint64_t estimate_hz(const struct rebuild *rb)
{
	uint64_t dwall, dtsc;

	if (!rb->have_wall || rb->wall_hi_us - rb->wall_lo_us < RB_POOL_HZ_MIN_SPAN_US ||
	    rb->tsc_hi <= rb->tsc_lo)
		return 0;
	dwall = rb->wall_hi_us - rb->wall_lo_us;
	dtsc = rb->tsc_hi - rb->tsc_lo;
	return (uint64_t)(((unsigned __int128)dtsc * 1000000u + dwall / 2) / dwall);
}

int rb_pool_rebuild(const struct rb_pool_job *job, int out_fd, const char *out_name,
		    struct rb_pool_result *res, struct xfdr_error *err)
{
	struct rebuild rb;
	uint8_t header[XFDR_FILE_HEADER_BYTES];
	struct wr_file_header h;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&rb, 0, sizeof(rb));
	rb.job = job;
	rb.res = res;
	rb.err = err;
	rb.fd = out_fd;
	rb.out_name = out_name;
	if (job->loc) {
		rb.buffer_bytes = job->loc->buffer_bytes;
		rb.count = job->loc->buffer_count;
		rb.big = job->loc->big_endian;
	} else {
		rb.buffer_bytes = job->buffer_bytes;
		rb.count = job->buffer_count;
		rb.big = job->big_endian;
	}
	if (rb.buffer_bytes < XFDR_BUFFER_PREAMBLE_BYTES ||
	    rb.buffer_bytes > RB_POOL_BUFFER_BYTES_MAX)
		return rd_fail_name(
		    out_name, err, 0, "expected a buffer size of %d to %llu bytes, found %llu",
		    XFDR_BUFFER_PREAMBLE_BYTES, (unsigned long long)RB_POOL_BUFFER_BYTES_MAX,
		    (unsigned long long)rb.buffer_bytes);
	res->buffers = rb.count;
	rb.img = malloc((size_t)(XFDR_FILE_HEADER_BYTES + rb.buffer_bytes));
	rb.thread_slot = calloc(THREAD_IDS, sizeof(*rb.thread_slot));
	if (!rb.img || !rb.thread_slot) {
		rc = rd_fail_name(out_name, err, 0,
				  "expected memory for a %llu-byte buffer, found %s",
				  (unsigned long long)rb.buffer_bytes, strerror(ENOMEM));
		goto out;
	}
	rc = job->loc ? rebuild_with_locator(&rb) : rebuild_walking(&rb);
	if (rc)
		goto out;

	res->tsc_hz = job->tsc_hz;
	if (!res->tsc_hz) {
		res->tsc_hz = estimate_hz(&rb);
		res->hz_estimated = res->tsc_hz != 0;
	}
	if (!res->tsc_hz) {
		res->tsc_hz = RB_POOL_HZ_ASSUMED;
		res->hz_assumed = 1;
	}
	h = (struct wr_file_header){
	    .cycle_frequency_hz = res->tsc_hz,
	    .buffer_bytes = rb.buffer_bytes,
	    .constant_tsc = job->constant_tsc,
	    .nonstop_tsc = job->nonstop_tsc,
	    .order = rb.big ? WR_ORDER_BIG : WR_ORDER_LITTLE,
	};
	wr_encode_file_header(header, &h);
	rc = write_at(&rb, header, sizeof(header), 0);
	if (!rc && res->thread_count)
		qsort(res->threads, res->thread_count, sizeof(*res->threads), cmp_thread);
out:
	free(rb.img);
	free(rb.thread_slot);
	if (rc)
		rb_pool_result_free(res);
	return rc;
}

void rb_pool_result_free(struct rb_pool_result *res)
{
	free(res->threads);
	res->threads = NULL;
	res->thread_count = 0;
}
