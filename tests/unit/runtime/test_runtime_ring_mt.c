/*
 * tests/unit/runtime/test_runtime_ring_mt.c - ring mode under concurrency: flushes racing with the
 * reuse of buffers by several writers, and with threads that exit while their buffers are
 * reused. Also run under ThreadSanitizer (make check-tsan).
 *
 * Every writer issues a known sequence inside one outer call that stays open: first the entry
 * of its outer function (w + 1) << fid_shift | OUTER, then event i = 0, 1, 2, ... an entry
 * (i even) or exit (i odd) of function (w + 1) << fid_shift | i / 2, and last the exit of the
 * outer function. So each recorded event names its writer and its position, every buffer but
 * a writer's first begins inside a call (and so with a stack context), and a file proves
 * exactly which events it holds. Expected values come from the sequences issued, never from
 * the runtime. A buffer may hold no function record at all (a snapshot between its preamble
 * and its first record), but only as its thread's newest.
 *
 * check_file() walks a file record by record and rejects what a torn buffer (bytes of two
 * generations, or of two owners) would show: a buffer whose records are not one gap-free run
 * of one writer's sequence, a NewBuffer id that is not its writer's, a stack context naming
 * another writer or another call, a writer's buffers out of order, or a buffer other than a
 * writer's last that is not full. Between buffers gaps are allowed: ring mode reused the
 * buffers that held the events in between. checker_catches_torn_buffers shows that each rule
 * fires on buffers spliced the way a torn copy would be.
 */
#include <pthread.h>
#include <time.h>

#include "tests/support/map_parse.h"
#include "tests/support/runtime_test.h"

enum {
	MAX_WRITERS = 4096,
	DROP_ENTRIES_MAX = 64, /* the drop buffer holds at most 48 (runtime/flush/drops.c) */
	MAP_THREADS_MAX = 4200,
};

/* How the writers of one test encode their events, and what check_file() may assume. */
struct scheme {
	unsigned writers;
	unsigned fid_shift;
	size_t buffer_bytes;
	int one_buffer; /* a writer's events fit one buffer: at most one buffer per file */
};

static uint32_t call_mask(const struct scheme *sc)
{
	return (1u << sc->fid_shift) - 1;
}

/* The outer call: the largest call number, above any the sequence reaches. */
static uint32_t outer_fid(const struct scheme *sc, unsigned w)
{
	return (uint32_t)(w + 1) << sc->fid_shift | call_mask(sc);
}

static uint32_t fid_of(const struct scheme *sc, unsigned w, uint64_t i)
{
	return (uint32_t)(w + 1) << sc->fid_shift | (uint32_t)(i / 2);
}

static void issue(const struct scheme *sc, unsigned w, uint64_t i)
{
	if (i & 1)
		xfdr_exit(fid_of(sc, w, i));
	else
		xfdr_enter(fid_of(sc, w, i));
}

/* Test sizes: ten times as many under make stress (XFDR_STRESS=1). */
static unsigned scaled(unsigned n)
{
	const char *s = getenv("XFDR_STRESS");

	return s && *s && strcmp(s, "0") ? 10 * n : n;
}

/* ---- The checker -------------------------------------------------------------------- */

/* One writer in one file. */
struct wview {
	uint64_t recorded; /* sequence events */
	uint64_t first;	   /* index of its first and last sequence event in the file */
	uint64_t last;
	uint32_t buffers;
	uint32_t holes;	   /* buffers that do not continue where its previous one ended */
	uint32_t tid16;	   /* NewBuffer id of its buffers */
	int outer_enter;   /* the file holds the entry of its outer call */
	int outer_exit;	   /* ... and its exit (the writer's last event) */
	size_t last_used;  /* bytes of its latest buffer */
	uint64_t last_buf; /* index in the file of that buffer */
};

struct drop_entry {
	uint32_t tid;
	uint32_t tid16;
	uint64_t no_buffer;
	uint64_t overwritten;
};

struct file_view {
	struct wview w[MAX_WRITERS];
	uint32_t writer_of_id[65536]; /* writer + 1 of each NewBuffer id; 0: none */
	uint8_t empty_of_id[65536];   /* the id had a buffer without function records */
	uint64_t empty_buffers;
	uint64_t placeholders; /* slots of buffers reused before the flusher copied them */
	uint64_t pool_buffers; /* buffers of the pool (thread id != 0), placeholders not */
	uint64_t buffers;      /* all buffers, the drop buffer included */
	int drop_seen;
	uint64_t drop_no_buffer;
	uint64_t drop_overwritten;
	uint32_t drop_entry_count;
	uint32_t drop_omitted;
	struct drop_entry drop[DROP_ENTRIES_MAX];
	char why[600];
};

/* The buffer being walked. */
struct bufwalk {
	uint64_t index;
	uint64_t start; /* file offset */
	int step;	/* 1: NewBuffer seen, 2: WallClockTime, 3: NewCPUId (preamble done) */
	uint32_t id;
	int writer; /* -1: no function record yet */
	uint64_t n; /* sequence events */
	uint64_t first, last;
	int functions; /* function records of any kind */
	int outer_exit;
	int stak;
	struct xfdr_stack_context sc;
	int custom_drop;
	int placeholder; /* wall clock 0: the flusher found the buffer reused (flush.c) */
	size_t used;
};

static int bad(struct file_view *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct file_view *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v->why, sizeof(v->why), fmt, ap);
	va_end(ap);
	return -1;
}

static int check_drop_payload(struct file_view *v, const struct xfdr_record *r)
{
	const uint8_t *p = r->payload;
	uint32_t i, n;

	if (!xfdr_payload_has_tag(p, r->payload_bytes, XFDR_DROP_MAGIC))
		return bad(v, "offset %llu: thread 0 holds a custom event other than XFDRDROP",
			   (unsigned long long)r->offset);
	if (r->payload_bytes < XFDR_DROP_FIXED_BYTES ||
	    ts_get32(p + XFDR_DROP_VERSION_OFF) != XFDR_DROP_LAYOUT_VERSION)
		return bad(v, "offset %llu: XFDRDROP of %u bytes, layout %u",
			   (unsigned long long)r->offset, r->payload_bytes,
			   r->payload_bytes >= 12 ? ts_get32(p + XFDR_DROP_VERSION_OFF) : 0);
	n = ts_get32(p + XFDR_DROP_ENTRY_COUNT_OFF);
	if (r->payload_bytes != XFDR_DROP_FIXED_BYTES + n * XFDR_DROP_ENTRY_BYTES ||
	    n > DROP_ENTRIES_MAX)
		return bad(v, "XFDRDROP: %u entries in %u bytes", n, r->payload_bytes);
	v->drop_no_buffer = ts_get64(p + XFDR_DROP_NO_BUFFER_OFF);
	v->drop_overwritten = ts_get64(p + XFDR_DROP_OVERWRITTEN_OFF);
	v->drop_omitted = ts_get32(p + XFDR_DROP_OMITTED_OFF);
	v->drop_entry_count = n;
	for (i = 0; i < n; i++) {
		const uint8_t *e = p + XFDR_DROP_FIXED_BYTES + i * XFDR_DROP_ENTRY_BYTES;

		v->drop[i].tid = ts_get32(e + XFDR_DROP_ENTRY_TID_OFF);
		v->drop[i].tid16 = ts_get16(e + XFDR_DROP_ENTRY_TID16_OFF);
		v->drop[i].no_buffer = ts_get64(e + XFDR_DROP_ENTRY_NO_BUFFER_OFF);
		v->drop[i].overwritten = ts_get64(e + XFDR_DROP_ENTRY_OVERWRITTEN_OFF);
	}
	return 0;
}

static int on_custom(const struct scheme *sc, struct file_view *v, struct bufwalk *b,
		     const struct xfdr_record *r)
{
	struct xfdr_error err;

	(void)sc;
	if (b->step != 3 || b->functions || b->stak || b->custom_drop)
		return bad(v, "offset %llu: a custom event that does not follow the preamble",
			   (unsigned long long)r->offset);
	if (b->id == 0) {
		b->custom_drop = 1;
		return check_drop_payload(v, r);
	}
	memset(&err, 0, sizeof(err));
	/* Little-endian: the files are written on this machine (x86). */
	if (xfdr_stack_context_decode(r->payload, r->payload_bytes, 0, &b->sc, &err))
		return bad(v, "offset %llu: bad stack context: %s", (unsigned long long)r->offset,
			   err.text);
	b->stak = 1;
	return 0;
}

/*
 * The stack context of a buffer whose first record is fid (an exit when is_exit) of writer w:
 * the calls open before that record (format.h), so none before the outer entry, the outer
 * call before any other record, and also the call an exit closes.
 */
static int check_context(const struct scheme *sc, struct file_view *v, const struct bufwalk *b,
			 unsigned w, uint32_t fid, int is_exit, int is_outer)
{
	uint32_t outer = outer_fid(sc, w);
	uint32_t depth = is_outer ? (uint32_t)is_exit : 1u + (uint32_t)is_exit;

	if (!depth) {
		if (b->stak)
			return bad(v, "buffer %llu: a stack context before writer %u's first call",
				   (unsigned long long)b->index, w);
		return 0;
	}
	if (!b->stak)
		return bad(v, "buffer %llu: writer %u is inside call %#x but has no stack context",
			   (unsigned long long)b->index, w, outer);
	if (b->sc.depth == depth && b->sc.id_count == depth && b->sc.ids[0] == outer &&
	    (depth == 1 || b->sc.ids[1] == fid))
		return 0;
	return bad(v,
		   "buffer %llu: writer %u's first record %s %#x under a stack context of depth "
		   "%u, %u ids, %#x %#x (expected depth %u)",
		   (unsigned long long)b->index, w, is_exit ? "exits" : "enters", fid, b->sc.depth,
		   b->sc.id_count, b->sc.id_count ? b->sc.ids[0] : 0,
		   b->sc.id_count > 1 ? b->sc.ids[1] : 0, depth);
}

static int on_function(const struct scheme *sc, struct file_view *v, struct bufwalk *b,
		       const struct xfdr_record *r)
{
	uint32_t call = r->function_id & call_mask(sc);
	unsigned w = (r->function_id >> sc->fid_shift) - 1;
	int is_exit = r->kind == XFDR_FN_EXIT, is_outer = call == call_mask(sc);
	struct wview *wv;
	uint64_t i = (uint64_t)call * 2 + (uint64_t)is_exit;

	if (b->id == 0)
		return bad(v, "offset %llu: a function record in thread 0's buffer",
			   (unsigned long long)r->offset);
	if (b->step != 3)
		return bad(v, "offset %llu: a function record inside the preamble",
			   (unsigned long long)r->offset);
	if ((r->function_id >> sc->fid_shift) == 0 || w >= sc->writers)
		return bad(v, "offset %llu: function id %#x names no writer",
			   (unsigned long long)r->offset, r->function_id);
	if (r->kind != XFDR_FN_ENTER && r->kind != XFDR_FN_EXIT)
		return bad(v, "offset %llu: action %u", (unsigned long long)r->offset, r->kind);
	if (b->outer_exit)
		return bad(v, "offset %llu: writer %u recorded after its outer call's exit",
			   (unsigned long long)r->offset, w);
	wv = &v->w[w];
	if (b->writer < 0) {
		/* The buffer's first record: its writer, its id, its context, its place. */
		if (v->writer_of_id[b->id] && v->writer_of_id[b->id] != w + 1)
			return bad(v, "buffer %llu: thread id %u holds writers %u and %u",
				   (unsigned long long)b->index, b->id, v->writer_of_id[b->id] - 1,
				   w);
		if (wv->buffers && wv->tid16 != b->id)
			return bad(v, "buffer %llu: writer %u under thread ids %u and %u",
				   (unsigned long long)b->index, w, wv->tid16, b->id);
		if (check_context(sc, v, b, w, r->function_id, is_exit, is_outer))
			return -1;
		if (wv->outer_exit)
			return bad(v, "buffer %llu: writer %u's buffer after its last event",
				   (unsigned long long)b->index, w);
		if (is_outer && !is_exit && wv->buffers)
			return bad(v, "buffer %llu: writer %u's first event after other buffers",
				   (unsigned long long)b->index, w);
		if (!is_outer && wv->recorded && i <= wv->last)
			return bad(v,
				   "buffer %llu: writer %u's buffer starts at event %llu, after "
				   "one that ended at %llu",
				   (unsigned long long)b->index, w, (unsigned long long)i,
				   (unsigned long long)wv->last);
		/*
		 * Not where its previous buffer ended: a gap (the buffers in between were
		 * reused). A buffer holding only the outer exit is checked against the
		 * events issued by the caller.
		 */
		if (wv->buffers && !is_outer && i != (wv->recorded ? wv->last + 1 : 0))
			wv->holes++;
		if (sc->one_buffer && wv->buffers)
			return bad(v, "buffer %llu: writer %u has a second buffer",
				   (unsigned long long)b->index, w);
		/*
		 * Every buffer of the writer before this one was full when it took this one:
		 * a buffer is handed back when a group (at most NewCPUId and a function
		 * record) and the closing EndOfBuffer, 40 bytes, no longer fit.
		 */
		if (wv->buffers && wv->last_used + 40 <= sc->buffer_bytes)
			return bad(v,
				   "buffer %llu of writer %u holds %zu bytes, not full, yet a "
				   "later one follows",
				   (unsigned long long)wv->last_buf, w, wv->last_used);
		v->writer_of_id[b->id] = w + 1;
		wv->tid16 = b->id;
		wv->buffers++;
		b->writer = (int)w;
	} else if ((unsigned)b->writer != w) {
		return bad(v, "offset %llu: writer %u's event in writer %d's buffer %llu",
			   (unsigned long long)r->offset, w, b->writer,
			   (unsigned long long)b->index);
	}
	b->functions++;
	if (is_outer) {
		if (!is_exit) {
			if (b->functions != 1)
				return bad(v, "offset %llu: writer %u enters its outer call late",
					   (unsigned long long)r->offset, w);
			wv->outer_enter = 1;
		} else {
			b->outer_exit = 1;
			wv->outer_exit = 1;
		}
		return 0;
	}
	if (b->n) {
		if (i != b->last + 1)
			return bad(v, "offset %llu: writer %u: event %llu where %llu was due",
				   (unsigned long long)r->offset, w, (unsigned long long)i,
				   (unsigned long long)b->last + 1);
	} else {
		if (b->functions == 2 && i != 0)
			return bad(v, "offset %llu: writer %u: event %llu follows its outer entry",
				   (unsigned long long)r->offset, w, (unsigned long long)i);
		b->first = i;
		if (!wv->recorded)
			wv->first = i;
	}
	b->last = i;
	b->n++;
	wv->last = i;
	wv->recorded++;
	return 0;
}

static int end_buffer(const struct scheme *sc, struct file_view *v, const struct bufwalk *b)
{
	v->buffers++;
	if (b->step != 3)
		return bad(v, "buffer %llu: no complete preamble", (unsigned long long)b->index);
	if (b->id == 0) {
		if (!b->custom_drop)
			return bad(v, "buffer %llu: thread 0 without XFDRDROP",
				   (unsigned long long)b->index);
		v->drop_seen = 1;
		return 0;
	}
	/*
	 * A placeholder keeps the slot of a buffer that was reused before the flusher could copy
	 * it (counted in the .map, checked by the caller); it holds no record. The flusher copies
	 * newest first and reuse mostly takes the oldest, so it is mostly a thread's first slot,
	 * but the ring's cursor passes over buffers still owned, so not always.
	 */
	if (b->placeholder) {
		if (b->functions || b->stak)
			return bad(v, "buffer %llu: a placeholder with records",
				   (unsigned long long)b->index);
		v->placeholders++;
		return 0;
	}
	v->pool_buffers++;
	if (b->writer >= 0) {
		v->w[b->writer].last_used = b->used;
		v->w[b->writer].last_buf = b->index;
		return 0;
	}
	/*
	 * No function record: a buffer the snapshot met between its preamble and its first
	 * record (the preamble is published first). Only its thread's newest buffer can be
	 * like that; its stack context, if any, must name a writer's outer call.
	 */
	v->empty_buffers++;
	v->empty_of_id[b->id] = 1;
	if (b->stak) {
		unsigned w = (b->sc.ids[0] >> sc->fid_shift) - 1;

		if (!b->sc.id_count || b->sc.depth > 2 || b->sc.id_count != b->sc.depth ||
		    (b->sc.ids[0] >> sc->fid_shift) == 0 || w >= sc->writers ||
		    b->sc.ids[0] != outer_fid(sc, w))
			return bad(v,
				   "buffer %llu: empty, under a stack context of depth %u, "
				   "%u ids, first %#x",
				   (unsigned long long)b->index, b->sc.depth, b->sc.id_count,
				   b->sc.id_count ? b->sc.ids[0] : 0);
		if (v->writer_of_id[b->id] && v->writer_of_id[b->id] != w + 1)
			return bad(v, "buffer %llu: thread id %u holds writers %u and %u",
				   (unsigned long long)b->index, b->id, v->writer_of_id[b->id] - 1,
				   w);
		if (v->w[w].outer_exit)
			return bad(v, "buffer %llu: writer %u's buffer after its last event",
				   (unsigned long long)b->index, w);
	}
	return 0;
}

/*
 * check_file - everything above, for one file. Returns 0, or -1 with v->why naming the first
 * violation. The file must also pass the reader's own verification.
 */
static int check_file(struct xfdr_trace *tr, const struct scheme *sc, struct file_view *v)
{
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_error err;
	struct bufwalk b;
	int rc;

	memset(v, 0, sizeof(*v));
	memset(&err, 0, sizeof(err));
	if (xfdr_trace_verify(tr, &err))
		return bad(v, "the reader rejects it: %s", err.text);
	if (xfdr_trace_header(tr)->buffer_size != sc->buffer_bytes)
		return bad(v, "buffer_size %llu",
			   (unsigned long long)xfdr_trace_header(tr)->buffer_size);
	memset(&b, 0, sizeof(b));
	b.index = UINT64_MAX;
	xfdr_records_begin(tr, &c);
	while ((rc = xfdr_records_next(&c, &r, &err)) == 1) {
		if (r.buffer_index != b.index) {
			if (b.index != UINT64_MAX && end_buffer(sc, v, &b))
				return -1;
			if (v->drop_seen)
				return bad(v, "buffer %llu after the drop buffer",
					   (unsigned long long)r.buffer_index);
			if (r.is_metadata && r.kind == XFDR_MD_NEW_BUFFER &&
			    v->empty_of_id[r.thread_id])
				return bad(v, "buffer %llu: thread id %u after its empty buffer",
					   (unsigned long long)r.buffer_index, r.thread_id);
			memset(&b, 0, sizeof(b));
			b.index = r.buffer_index;
			b.start = XFDR_FILE_HEADER_BYTES + r.buffer_index * sc->buffer_bytes;
			b.used = sc->buffer_bytes;
			b.writer = -1;
			if (!r.is_metadata || r.kind != XFDR_MD_NEW_BUFFER)
				return bad(v, "buffer %llu does not begin with NewBuffer",
					   (unsigned long long)b.index);
			b.id = r.thread_id;
			b.step = 1;
			continue;
		}
		if (!r.is_metadata) {
			if (on_function(sc, v, &b, &r))
				return -1;
			continue;
		}
		switch (r.kind) {
		case XFDR_MD_WALL_CLOCK_TIME:
			if (b.step != 1)
				return bad(v, "offset %llu: WallClockTime out of place",
					   (unsigned long long)r.offset);
			b.step = 2;
			b.placeholder = r.seconds == 0 && r.micros == 0;
			break;
		case XFDR_MD_NEW_CPU_ID:
			if (b.step < 2)
				return bad(v, "offset %llu: NewCPUId before WallClockTime",
					   (unsigned long long)r.offset);
			b.step = 3;
			break;
		case XFDR_MD_TSC_WRAP:
			if (b.step != 3)
				return bad(v, "offset %llu: TSCWrap in the preamble",
					   (unsigned long long)r.offset);
			break;
		case XFDR_MD_END_OF_BUFFER:
			b.used = (size_t)(r.offset - b.start);
			break;
		case XFDR_MD_CUSTOM_EVENT:
			if (on_custom(sc, v, &b, &r))
				return -1;
			break;
		default:
			return bad(v, "offset %llu: unexpected %s", (unsigned long long)r.offset,
				   xfdr_md_kind_name(r.kind));
		}
	}
	if (rc < 0)
		return bad(v, "%s", err.text);
	if (b.index != UINT64_MAX && end_buffer(sc, v, &b))
		return -1;
	if (!v->drop_seen)
		return bad(v, "no drop buffer");
	return 0;
}

/* Open path, check it, fail the test with the checker's message. */
static void check_path(const char *path, const struct scheme *sc, struct file_view *v)
{
	struct xfdr_trace *tr = NULL;
	struct xfdr_error err;

	memset(&err, 0, sizeof(err));
	if (xfdr_trace_open(path, &tr, &err))
		fail_msg("%s: %s", path, err.text);
	if (check_file(tr, sc, v))
		fail_msg("%s: %s", path, v->why);
	xfdr_trace_close(tr);
}

/* ---- The .map sidecar ---------------------------------------------------------------- */

static char *map_of(const char *path, char *map_path, size_t map_path_bytes)
{
	size_t n;

	snprintf(map_path, map_path_bytes, "%s.map", path);
	return (char *)ts_slurp(map_path, &n);
}

/* Every writer seen in the file has the id the .map pairs with its tid. */
static void check_map_ids(const char *path, const char *map, const struct file_view *v,
			  const uint32_t *tids, unsigned writers, struct mp_thread *mt)
{
	size_t n = mp_threads(map, mt, MAP_THREADS_MAX);
	unsigned w;

	for (w = 0; w < writers; w++) {
		const struct mp_thread *t;
		uint32_t tid;

		if (!v->w[w].buffers)
			continue;
		tid = __atomic_load_n(&tids[w], __ATOMIC_RELAXED);
		t = mp_thread_of(mt, n, tid);
		if (!t)
			fail_msg("%s: writer %u (tid %u) has no thread line", path, w, tid);
		if (t->id != v->w[w].tid16)
			fail_msg("%s: writer %u: thread id %u in the file, %u in the .map", path, w,
				 v->w[w].tid16, t->id);
	}
	if (mp_number(map, "buffers_written") != v->pool_buffers)
		fail_msg("%s: buffers_written %llu, %llu buffers in the file", path,
			 (unsigned long long)mp_number(map, "buffers_written"),
			 (unsigned long long)v->pool_buffers);
	if (mp_number(map, "buffers_reused_in_flush") != v->placeholders)
		fail_msg("%s: buffers_reused_in_flush %llu, %llu placeholders in the file", path,
			 (unsigned long long)mp_number(map, "buffers_reused_in_flush"),
			 (unsigned long long)v->placeholders);
}

struct flush_call {
	char *path;
	size_t bytes;
	int rc;
};

static void do_flush(void *arg)
{
	struct flush_call *c = arg;

	c->rc = xfdr_flush(c->path, c->bytes);
}

/*
 * Flush with stderr captured into err: a flush that found chosen buffers reused says so on
 * stderr exactly when its .map counts them (check_reused_reported()).
 */
static void flush_capturing(char *path, size_t bytes, char *err, size_t err_bytes)
{
	struct flush_call c = {.path = path, .bytes = bytes};

	ts_capture_stderr(do_flush, &c, err, err_bytes);
	assert_int_equal(c.rc, 0);
}

static void check_reused_reported(const char *path, const char *map, const char *err)
{
	int said =
	    strstr(err, "buffers were reused by recording threads before this flush") != NULL;

	if (said != (mp_number(map, "buffers_reused_in_flush") > 0))
		fail_msg("%s: buffers_reused_in_flush %llu, stderr: \"%s\"", path,
			 (unsigned long long)mp_number(map, "buffers_reused_in_flush"), err);
}

static void unlink_pair(const char *path, const char *map_path)
{
	unlink(path);
	unlink(map_path);
}

/* llvm-xray converts it, with as many function records as the checker counted. */
static void check_llvm(const char *path, const struct file_view *v, unsigned writers)
{
	uint64_t events = 0;
	size_t enters, exits;
	char *yaml = NULL;
	unsigned w;

	if (ts_llvm_yaml(path, &yaml))
		fail_msg("llvm-xray rejects %s: %.300s", path, yaml ? yaml : "");
	for (w = 0; w < writers; w++)
		events +=
		    v->w[w].recorded + (uint64_t)v->w[w].outer_enter + (uint64_t)v->w[w].outer_exit;
	enters = ts_count(yaml, "kind: function-enter,");
	exits = ts_count(yaml, "kind: function-exit,");
	if (enters + exits != events)
		fail_msg("llvm-xray: %zu + %zu function records in %s, the checker saw %llu",
			 enters, exits, path, (unsigned long long)events);
	free(yaml);
}

/* ---- flush_races_reuse ---------------------------------------------------------------- */

struct writer {
	const struct scheme *sc;
	unsigned index;
	uint64_t events; /* to issue, or (run mode) issued */
	uint32_t pace;	 /* pause after this many events (0: never) */
	int *stop;	 /* run mode: issue until set, then the tail */
	pthread_barrier_t *go;
	/* Run mode: the tail, tail_rounds rounds of tail_events each, all writers in step. */
	pthread_barrier_t *tail_step;
	unsigned tail_rounds;
	uint64_t tail_events; /* even: each round ends after an exit */
};

static uint32_t writer_tid[MAX_WRITERS];

/*
 * The threads a test started and has not joined, and the flag that stops them: its teardown
 * ends them when a check failed halfway, so they do not write into the next test's session.
 */
static pthread_t started[8];
static unsigned started_count;
static int *started_stop;

static void start_thread(void *(*fn)(void *), void *arg)
{
	assert_true(started_count < sizeof(started) / sizeof(started[0]));
	assert_int_equal(pthread_create(&started[started_count], NULL, fn, arg), 0);
	started_count++;
}

static void join_started(void)
{
	if (started_stop)
		__atomic_store_n(started_stop, 1, __ATOMIC_RELAXED);
	while (started_count)
		assert_int_equal(pthread_join(started[--started_count], NULL), 0);
	started_stop = NULL;
}

static int teardown_threads(void **state)
{
	(void)state;
	join_started();
	xfdr_stop();
	return 0;
}

static void issue_paced(const struct writer *wr, uint64_t i)
{
	issue(wr->sc, wr->index, i);
	if (wr->pace && i % wr->pace == wr->pace - 1) {
		struct timespec nap = {.tv_sec = 0, .tv_nsec = 20000};

		nanosleep(&nap, NULL);
	}
}

static void *writer_run(void *arg)
{
	struct writer *wr = arg;
	uint64_t i, k;
	unsigned r;

	__atomic_store_n(&writer_tid[wr->index], ts_tid(), __ATOMIC_RELAXED);
	if (wr->go)
		pthread_barrier_wait(wr->go);
	xfdr_enter(outer_fid(wr->sc, wr->index));
	for (i = 0; i < wr->events; i++) {
		/* Stops after an exit: only the outer call is open. */
		if (wr->stop && (i & 1) == 0 && __atomic_load_n(wr->stop, __ATOMIC_RELAXED))
			break;
		issue_paced(wr, i);
	}
	for (r = 0; wr->tail_step && r < wr->tail_rounds; r++) {
		for (k = 0; k < wr->tail_events; k++, i++)
			issue_paced(wr, i);
		pthread_barrier_wait(wr->tail_step);
	}
	xfdr_exit(outer_fid(wr->sc, wr->index));
	wr->events = i;
	return NULL;
}

/*
 * After the writers stopped, with the .map of the last flush: the file holds each writer's
 * newest events up to its last, every buffer of the pool, and the overwritten counts add up.
 */
static void check_final(const char *path, const char *map, const struct file_view *v,
			const struct scheme *sc, const struct writer *wr, size_t buffer_max,
			struct mp_thread *mt)
{
	size_t n = mp_threads(map, mt, MAP_THREADS_MAX);
	uint64_t total_over = 0, total_drops = 0;
	/* Records a buffer holds at most: all but the preamble. */
	uint64_t max_records =
	    (sc->buffer_bytes - XFDR_BUFFER_PREAMBLE_BYTES) / XFDR_FN_RECORD_BYTES;
	unsigned w, k;

	/* Nothing is reclaimed any more: every buffer of the pool is written. */
	if (v->pool_buffers != buffer_max)
		fail_msg("%s: %llu buffers, the pool has %zu", path,
			 (unsigned long long)v->pool_buffers, buffer_max);
	for (w = 0; w < sc->writers; w++) {
		const struct wview *x = &v->w[w];
		const struct mp_thread *t = mp_thread_of(mt, n, writer_tid[w]);
		uint64_t lost;

		if (!t)
			fail_msg("writer %u: no thread line", w);
		/* Its last event is the exit of its outer call, right after its sequence. */
		if (!x->recorded || !x->outer_exit || x->last + 1 != wr[w].events)
			fail_msg("%s: writer %u: %llu events up to %llu%s, %llu issued", path, w,
				 (unsigned long long)x->recorded, (unsigned long long)x->last,
				 x->outer_exit ? "" : " without its outer exit",
				 (unsigned long long)wr[w].events);
		/* One run of its newest events: no buffer of it older than one reused. */
		if (x->holes || x->recorded != x->last - x->first + 1)
			fail_msg("%s: writer %u: %u holes in its events %llu..%llu (%llu recorded)",
				 path, w, x->holes, (unsigned long long)x->first,
				 (unsigned long long)x->last, (unsigned long long)x->recorded);
		if (t->reentrant || t->too_large)
			fail_msg("writer %u: %llu reentrant, %llu too_large drops", w,
				 (unsigned long long)t->reentrant,
				 (unsigned long long)t->too_large);
		/*
		 * Its events before the file's first were in the buffers reused from it (or
		 * dropped, no_buffer, when every buffer was owned or pinned): each such buffer
		 * held at most max_records and, being full, more than half that many.
		 */
		lost = x->first + (x->outer_enter ? 0 : 1);
		if (lost < t->no_buffer)
			fail_msg("writer %u: %llu dropped, %llu events before the file's", w,
				 (unsigned long long)t->no_buffer, (unsigned long long)lost);
		lost -= t->no_buffer;
		/* Exactly: what the reused buffers held (overwritten_events) is all the rest. */
		if (t->overwritten_events != lost)
			fail_msg("writer %u: %llu events not in the file nor dropped, %llu "
				 "overwritten_events",
				 w, (unsigned long long)lost,
				 (unsigned long long)t->overwritten_events);
		if (!t->overwritten || t->overwritten > lost ||
		    t->overwritten * max_records < lost ||
		    t->overwritten * (max_records / 2) > lost)
			fail_msg("writer %u: %llu buffers overwritten for %llu events not in the "
				 "file (%llu records per buffer at most)",
				 w, (unsigned long long)t->overwritten, (unsigned long long)lost,
				 (unsigned long long)max_records);
		total_over += t->overwritten;
		total_drops += t->no_buffer;
		/* The drop buffer's entry for the writer says the same. */
		for (k = 0; k < v->drop_entry_count && v->drop[k].tid != writer_tid[w]; k++)
			;
		if (k == v->drop_entry_count)
			fail_msg("writer %u has no entry in the drop buffer", w);
		if (v->drop[k].tid16 != x->tid16 || v->drop[k].overwritten != t->overwritten ||
		    v->drop[k].no_buffer != t->no_buffer)
			fail_msg(
			    "writer %u: drop entry id %u overwritten %llu no_buffer %llu; .map "
			    "id %u overwritten %llu no_buffer %llu",
			    w, v->drop[k].tid16, (unsigned long long)v->drop[k].overwritten,
			    (unsigned long long)v->drop[k].no_buffer, x->tid16,
			    (unsigned long long)t->overwritten, (unsigned long long)t->no_buffer);
	}
	assert_int_equal(mp_number(map, "overwritten"), total_over);
	assert_int_equal(v->drop_overwritten, total_over);
	assert_int_equal(mp_number(map, "dropped\ttotal"), total_drops);
	assert_int_equal(v->drop_no_buffer, total_drops);
	assert_int_equal(v->drop_entry_count, sc->writers);
	assert_int_equal(v->drop_omitted, 0);
}

/*
 * A small ring pool reused all the time by 3 writers while flushes keep copying it: every
 * file holds whole buffers, each one gap-free run of one writer's events; and the last file,
 * after the writers stopped, each writer's newest events up to its last.
 *
 * Why the writers go on after the last racing flush: a claim passes over the buffer a flush
 * has pinned and takes the next one in the ring, which may be a newer buffer of the same
 * thread; until the ring comes round again the pool then holds an older buffer of that thread
 * but not a newer one (a hole in its newest history; seen with 64 KiB buffers and unpaced
 * writers). A whole round of claims without pins closes every such hole: the tail, 6 rounds
 * in step of 2 buffers' worth of events per writer (each writer claims 1 to 3 buffers per
 * round: at least 18 claims for the 12 buffers, and at most 6 claims by the others after a
 * writer's last, so that one is still in the pool). The last file must then hold one
 * gap-free run per writer, ending with its last event.
 */
static void flush_races_reuse(void **state)
{
	enum {
		WRITERS = 3,
		BUFFER_BYTES = 1024,
		BUFFER_MAX = 12,
		RECORDS_MAX = (BUFFER_BYTES - XFDR_BUFFER_PREAMBLE_BYTES) / XFDR_FN_RECORD_BYTES,
		TAIL_ROUNDS = 6,
	};
	static const struct scheme sc = {
	    .writers = WRITERS, .fid_shift = 26, .buffer_bytes = BUFFER_BYTES};
	/* Static: a failing check leaves this frame while the writers still use these. */
	static struct writer wr[WRITERS];
	static pthread_barrier_t go, tail_step;
	static int stop;
	static struct file_view v;
	static struct mp_thread mt[MAP_THREADS_MAX];
	static uint32_t id_of[WRITERS];
	unsigned flushes = scaled(ts_sanitized() ? 300 : 1000), s, w;
	uint64_t seen_buffers = 0, files_with_holes = 0, partial_files = 0, empty = 0;
	char path[512], map_path[600], err[2048];
	char *map;

	(void)state;
	stop = 0;
	started_stop = &stop;
	memset(id_of, 0, sizeof(id_of));
	assert_int_equal(ts_init_mode(BUFFER_BYTES, BUFFER_MAX, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	pthread_barrier_init(&go, NULL, WRITERS + 1);
	pthread_barrier_init(&tail_step, NULL, WRITERS);
	for (w = 0; w < WRITERS; w++) {
		/* 2^27 events fit the 26-bit call numbers (the largest is the outer call). */
		wr[w] = (struct writer){.sc = &sc,
					.index = w,
					.events = 1ull << 27,
					.pace = 128u << w,
					.stop = &stop,
					.tail_step = &tail_step,
					.tail_rounds = TAIL_ROUNDS,
					.tail_events = 2 * RECORDS_MAX,
					.go = &go};
		start_thread(writer_run, &wr[w]);
	}
	pthread_barrier_wait(&go);
	for (s = 0; s < flushes; s++) {
		flush_capturing(path, sizeof(path), err, sizeof(err));
		check_path(path, &sc, &v);
		map = map_of(path, map_path, sizeof(map_path));
		check_map_ids(path, map, &v, writer_tid, WRITERS, mt);
		check_reused_reported(path, map, err);
		free(map);
		seen_buffers += v.pool_buffers;
		empty += v.empty_buffers;
		partial_files += v.pool_buffers < BUFFER_MAX;
		for (w = 0; w < WRITERS; w++) {
			files_with_holes += v.w[w].holes > 0;
			/* A thread keeps its id for the session. */
			if (!v.w[w].buffers)
				continue;
			if (id_of[w] && id_of[w] != v.w[w].tid16)
				fail_msg("writer %u: thread id %u, earlier %u", w, v.w[w].tid16,
					 id_of[w]);
			id_of[w] = v.w[w].tid16;
		}
		if (s == 0 || s == flushes / 2 || s == flushes - 1)
			check_llvm(path, &v, WRITERS);
		unlink_pair(path, map_path);
	}
	join_started(); /* sets stop */
	pthread_barrier_destroy(&go);
	pthread_barrier_destroy(&tail_step);
	/* The flushes copied buffers, and every writer went round the ring many times. */
	assert_true(seen_buffers > 0);
	for (w = 0; w < WRITERS; w++)
		assert_true(wr[w].events > 2 * BUFFER_MAX * (BUFFER_BYTES / 8));

	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);
	check_path(path, &sc, &v);
	map = map_of(path, map_path, sizeof(map_path));
	check_map_ids(path, map, &v, writer_tid, WRITERS, mt);
	check_final(path, map, &v, &sc, wr, BUFFER_MAX, mt);
	check_llvm(path, &v, WRITERS);
	free(map);
	unlink_pair(path, map_path);
	print_message("flush_races_reuse: %u flushes, %llu buffers copied (%llu before their "
		      "first record), %llu files short of the pool, %llu writer runs with holes; "
		      "events issued %llu %llu %llu\n",
		      flushes, (unsigned long long)seen_buffers, (unsigned long long)empty,
		      (unsigned long long)partial_files, (unsigned long long)files_with_holes,
		      (unsigned long long)wr[0].events, (unsigned long long)wr[1].events,
		      (unsigned long long)wr[2].events);
}

/* ---- flush_races_thread_exit ------------------------------------------------------------ */

struct spawner {
	const struct scheme *sc;
	struct writer *wr;
	unsigned threads;
	unsigned wave;
	uint64_t events;
	int done;
};

/* Waves of short-lived writers, one wave at a time, until sp->threads have run. */
static void *spawn_waves(void *arg)
{
	struct spawner *sp = arg;
	pthread_t th[8];
	unsigned i, k;

	for (i = 0; i < sp->threads; i += sp->wave) {
		for (k = 0; k < sp->wave && i + k < sp->threads; k++) {
			sp->wr[i + k] = (struct writer){
			    .sc = sp->sc, .index = i + k, .events = sp->events, .pace = 8};
			if (pthread_create(&th[k], NULL, writer_run, &sp->wr[i + k]))
				abort();
		}
		for (k = 0; k < sp->wave && i + k < sp->threads; k++)
			pthread_join(th[k], NULL);
	}
	/* pairs with the acquire in flush_races_thread_exit() */
	__atomic_store_n(&sp->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Threads that record a little and exit, a few at a time, while flushes keep copying the ring
 * pool: a buffer is handed back by the exit of its thread and reclaimed by the next thread,
 * during the flushes. Each thread's events fit one buffer, so the accounting is exact: every
 * thread's buffer is in the last file or counted overwritten, never both, never neither.
 */
static void flush_races_thread_exit(void **state)
{
	enum { BUFFER_BYTES = 512, BUFFER_MAX = 8, EVENTS = 24, WAVE = 3 };
	/* 24 events and 2 outer ones: 208 bytes of 416 after the preamble, in one buffer. */
	static const struct scheme sc = {
	    .writers = MAX_WRITERS, .fid_shift = 5, .buffer_bytes = BUFFER_BYTES, .one_buffer = 1};
	static struct writer wr[MAX_WRITERS];
	static struct spawner sp;
	static struct file_view v;
	static struct mp_thread mt[MAP_THREADS_MAX];
	unsigned threads = ts_sanitized() ? 600 : 2000, flushes = 0, w, claimed = 0;
	uint64_t seen_buffers = 0, over = 0, noted = 0;
	char path[512], map_path[600], err[2048];
	size_t n;
	char *map;

	(void)state;
	memset(writer_tid, 0, sizeof(writer_tid));
	assert_int_equal(ts_init_mode(BUFFER_BYTES, BUFFER_MAX, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	sp = (struct spawner){
	    .sc = &sc, .wr = wr, .threads = threads, .wave = WAVE, .events = EVENTS};
	start_thread(spawn_waves, &sp);
	while (!__atomic_load_n(&sp.done, __ATOMIC_ACQUIRE)) {
		flush_capturing(path, sizeof(path), err, sizeof(err));
		check_path(path, &sc, &v);
		map = map_of(path, map_path, sizeof(map_path));
		check_map_ids(path, map, &v, writer_tid, threads, mt);
		check_reused_reported(path, map, err);
		free(map);
		seen_buffers += v.pool_buffers;
		if (flushes % 64 == 0)
			check_llvm(path, &v, threads);
		unlink_pair(path, map_path);
		flushes++;
	}
	join_started();
	assert_true(flushes >= 5); /* the flushes raced with the threads */
	assert_true(seen_buffers > 0);

	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);
	check_path(path, &sc, &v);
	map = map_of(path, map_path, sizeof(map_path));
	check_map_ids(path, map, &v, writer_tid, threads, mt);
	check_llvm(path, &v, threads);
	assert_int_equal(v.pool_buffers, BUFFER_MAX);
	n = mp_threads(map, mt, MAP_THREADS_MAX);
	for (w = 0; w < threads; w++) {
		const struct mp_thread *t = mp_thread_of(mt, n, writer_tid[w]);
		const struct wview *x = &v.w[w];
		uint64_t issued = wr[w].events + 2, in_file;

		if (!t)
			fail_msg("thread %u (tid %u): no thread line", w, writer_tid[w]);
		assert_int_equal(t->reentrant + t->too_large, 0);
		in_file = x->recorded + (uint64_t)x->outer_enter + (uint64_t)x->outer_exit;
		/* Every event issued is in the file, dropped, or in a buffer ring mode reused. */
		if (in_file + t->no_buffer + t->overwritten_events != issued)
			fail_msg("thread %u: %llu in the file + %llu dropped + %llu "
				 "overwritten_events, %llu issued",
				 w, (unsigned long long)in_file, (unsigned long long)t->no_buffer,
				 (unsigned long long)t->overwritten_events,
				 (unsigned long long)issued);
		if (t->no_buffer == issued) {
			/* Never had a buffer: nothing of it anywhere. */
			assert_int_equal(t->overwritten + x->buffers, 0);
			continue;
		}
		claimed++;
		over += t->overwritten;
		noted += t->overwritten || t->no_buffer;
		/* Its one buffer is either in the file, whole, or was reused. */
		if (x->buffers) {
			if (t->overwritten || in_file + t->no_buffer != issued || !x->outer_exit ||
			    x->last + 1 != wr[w].events)
				fail_msg("thread %u: in the file with %llu of %llu events, %llu "
					 "dropped, %llu overwritten",
					 w, (unsigned long long)in_file, (unsigned long long)issued,
					 (unsigned long long)t->no_buffer,
					 (unsigned long long)t->overwritten);
		} else if (t->overwritten != 1) {
			fail_msg("thread %u: not in the file, %llu buffers overwritten", w,
				 (unsigned long long)t->overwritten);
		}
	}
	/* Every claim beyond the pool's buffers reused one. */
	assert_int_equal(over, claimed - BUFFER_MAX);
	assert_int_equal(mp_number(map, "overwritten"), over);
	assert_int_equal(v.drop_overwritten, over);
	assert_int_equal(v.drop_entry_count + v.drop_omitted, noted);
	free(map);
	unlink_pair(path, map_path);
	print_message("flush_races_thread_exit: %u threads, %u flushes, %llu buffers copied, "
		      "%llu overwritten\n",
		      threads, flushes, (unsigned long long)seen_buffers, (unsigned long long)over);
}

/* ---- checker_catches_torn_buffers -------------------------------------------------------- */

enum { MAX_FN = 64 };

/* Where a buffer's records are, relative to its start (from the reader, on a good file). */
struct bufmap {
	uint32_t id;
	int writer;
	uint64_t start;
	uint32_t fns;
	uint32_t fn_at[MAX_FN]; /* function records */
	uint32_t stak_at;	/* the stack context's marker; 0: none */
	uint32_t stak_bytes;
};

static size_t map_buffers(const uint8_t *image, size_t bytes, const struct scheme *sc,
			  struct bufmap *out, size_t max)
{
	struct xfdr_trace *tr = NULL;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_error err;
	size_t n = 0;

	assert_int_equal(xfdr_trace_open_memory(image, bytes, "good", &tr, &err), 0);
	assert_int_equal(xfdr_trace_verify(tr, &err), 0);
	xfdr_records_begin(tr, &c);
	while (xfdr_records_next(&c, &r, &err) == 1) {
		struct bufmap *b;

		if (r.buffer_index >= max)
			fail_msg("more than %zu buffers", max);
		b = &out[r.buffer_index];
		if (r.buffer_index == n) {
			memset(b, 0, sizeof(*b));
			b->start = XFDR_FILE_HEADER_BYTES + r.buffer_index * sc->buffer_bytes;
			b->id = r.thread_id;
			b->writer = -1;
			n++;
		}
		if (r.is_metadata && r.kind == XFDR_MD_CUSTOM_EVENT && b->id) {
			b->stak_at = (uint32_t)(r.offset - b->start);
			b->stak_bytes = r.payload_bytes;
		} else if (!r.is_metadata && b->fns < MAX_FN) {
			b->fn_at[b->fns++] = (uint32_t)(r.offset - b->start);
			b->writer = (int)(r.function_id >> sc->fid_shift) - 1;
		}
	}
	xfdr_trace_close(tr);
	return n;
}

/* 1 if buffer b has k function records in a row from relative offset at. */
static int fns_at(const struct bufmap *b, uint32_t at, uint32_t k)
{
	uint32_t i, j;

	for (i = 0; i < b->fns; i++) {
		if (b->fn_at[i] != at)
			continue;
		for (j = 1; j < k; j++)
			if (i + j >= b->fns || b->fn_at[i + j] != at + 8 * j)
				return 0;
		return 1;
	}
	return 0;
}

/*
 * What a copy torn by a reclaim would hold: buffer x with the bytes of buffer y at the same
 * offsets, k function records from the last offset where both have them. Returns 0 when
 * there is no such place.
 */
static int splice_same_offsets(uint8_t *image, const struct bufmap *x, const struct bufmap *y,
			       uint32_t k)
{
	uint32_t i;

	for (i = x->fns; i-- > 0;) {
		uint32_t at = x->fn_at[i];

		if (fns_at(x, at, k) && fns_at(y, at, k)) {
			memcpy(image + x->start + at, image + y->start + at, 8 * k);
			return 1;
		}
	}
	return 0;
}

/* The checker must reject the image; when verified says so, the reader must accept it. */
static void expect_rejected(const uint8_t *image, size_t bytes, const struct scheme *sc,
			    const char *what, int verified)
{
	static struct file_view v;
	struct xfdr_trace *tr = NULL;
	struct xfdr_error err;

	memset(&err, 0, sizeof(err));
	assert_int_equal(xfdr_trace_open_memory(image, bytes, what, &tr, &err), 0);
	if (verified && xfdr_trace_verify(tr, &err))
		fail_msg("%s: the reader rejects it already: %s", what, err.text);
	if (!check_file(tr, sc, &v))
		fail_msg("%s: the checker takes it", what);
	xfdr_trace_close(tr);
}

/*
 * The checker is what the race tests rely on: fed buffers torn the ways a copy racing with
 * a reclaim could tear them, each of which the reader's grammar accepts, it must say no.
 */
static void checker_catches_torn_buffers(void **state)
{
	enum { BUFFER_BYTES = 256, BUFFER_MAX = 6 };
	static const struct scheme sc = {
	    .writers = 2, .fid_shift = 12, .buffer_bytes = BUFFER_BYTES};
	static struct writer wr[2];
	static struct file_view v;
	struct bufmap b[BUFFER_MAX + 1];
	const struct bufmap *w0[BUFFER_MAX], *w1[BUFFER_MAX];
	unsigned n0 = 0, n1 = 0, i;
	char path[512], map_path[600];
	uint8_t *good, *img;
	size_t bytes, nb;
	pthread_t th;

	(void)state;
	assert_int_equal(ts_init_mode(BUFFER_BYTES, BUFFER_MAX, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	/* Writer 0 fills the ring many times over, then writer 1 takes half of it. */
	wr[0] = (struct writer){.sc = &sc, .index = 0, .events = 300};
	wr[1] = (struct writer){.sc = &sc, .index = 1, .events = 40};
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_create(&th, NULL, writer_run, &wr[i]), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
	}
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	assert_int_equal(xfdr_stop(), 0);
	check_path(path, &sc, &v); /* the good file passes */
	good = ts_slurp(path, &bytes);
	img = malloc(bytes);
	assert_non_null(img);
	nb = map_buffers(good, bytes, &sc, b, BUFFER_MAX + 1);
	for (i = 0; i < nb; i++) {
		if (b[i].writer == 0)
			w0[n0++] = &b[i];
		else if (b[i].writer == 1)
			w1[n1++] = &b[i];
	}
	assert_true(n0 >= 2 && n1 >= 2);

	/* Another thread reclaimed the buffer during the copy: its records in the tail. */
	memcpy(img, good, bytes);
	assert_true(splice_same_offsets(img, w0[0], w1[0], 4));
	expect_rejected(img, bytes, &sc, "tail of another writer", 1);
	/* The same thread reclaimed it: an older buffer's bytes under a newer one's. */
	memcpy(img, good, bytes);
	assert_true(splice_same_offsets(img, w0[1], w0[0], 4));
	expect_rejected(img, bytes, &sc, "tail of an older buffer", 1);
	memcpy(img, good, bytes);
	assert_true(splice_same_offsets(img, w0[0], w0[1], 4));
	expect_rejected(img, bytes, &sc, "tail of a newer buffer", 1);
	/* Only the first records are new: a new owner's preamble over the old records. */
	memcpy(img, good, bytes);
	memcpy(img + w0[1]->start, good + w1[1]->start, XFDR_MD_RECORD_BYTES);
	expect_rejected(img, bytes, &sc, "preamble of another writer", 1);
	/* A stack context from another buffer of another writer. */
	assert_true(w0[1]->stak_at && w1[1]->stak_at && w0[1]->stak_bytes == w1[1]->stak_bytes);
	memcpy(img, good, bytes);
	memcpy(img + w0[1]->start + w0[1]->stak_at, good + w1[1]->start + w1[1]->stak_at,
	       XFDR_MD_RECORD_BYTES + w1[1]->stak_bytes);
	expect_rejected(img, bytes, &sc, "stack context of another writer", 1);
	/* Two records swapped: not one gap-free run. */
	memcpy(img, good, bytes);
	assert_true(fns_at(w0[1], w0[1]->fn_at[3], 2));
	memcpy(img + w0[1]->start + w0[1]->fn_at[3], good + w0[1]->start + w0[1]->fn_at[3] + 8, 8);
	memcpy(img + w0[1]->start + w0[1]->fn_at[3] + 8, good + w0[1]->start + w0[1]->fn_at[3], 8);
	expect_rejected(img, bytes, &sc, "records swapped", 1);
	/* A buffer cut short (a stale length) that a later buffer of its writer follows. */
	memcpy(img, good, bytes);
	/* EndOfBuffer (kind 1: byte 0x03), then zeros */
	memset(img + w0[0]->start + w0[0]->fn_at[4], 0, BUFFER_BYTES - w0[0]->fn_at[4]);
	img[w0[0]->start + w0[0]->fn_at[4]] = 1u << 1 | 1u;
	expect_rejected(img, bytes, &sc, "a full buffer cut short", 1);
	/* A buffer cut to its preamble and context, and yet not its writer's newest. */
	memcpy(img, good, bytes);
	memset(img + w0[0]->start + w0[0]->fn_at[0], 0, BUFFER_BYTES - w0[0]->fn_at[0]);
	img[w0[0]->start + w0[0]->fn_at[0]] = 1u << 1 | 1u;
	expect_rejected(img, bytes, &sc, "an emptied buffer", 1);
	/* The same writer's buffers out of order. */
	memcpy(img, good, bytes);
	memcpy(img + w0[0]->start, good + w0[1]->start, BUFFER_BYTES);
	memcpy(img + w0[1]->start, good + w0[0]->start, BUFFER_BYTES);
	expect_rejected(img, bytes, &sc, "buffers out of order", 1);

	free(img);
	free(good);
	snprintf(map_path, sizeof(map_path), "%s.map", path);
	unlink_pair(path, map_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(flush_races_reuse, teardown_threads),
	    cmocka_unit_test_teardown(flush_races_thread_exit, teardown_threads),
	    cmocka_unit_test(checker_catches_torn_buffers),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
