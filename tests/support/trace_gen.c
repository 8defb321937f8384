/*
 * tests/support/trace_gen.c - random per-thread event lists and their encoding into a whole
 * FDR v1 file image (see trace_gen.h).
 */
#include "tests/support/trace_gen.h"
#include "tests/support/scratch.h"

struct tg_enc {
	const struct tg_trace *tr;
	uint8_t **bufs; /* every closed buffer of every thread, each buffer_bytes */
	size_t nbufs, capbufs;
	uint8_t *cur;
	size_t used;
	uint64_t base;
	uint16_t cpu;
	uint64_t wall_s;
	uint32_t wall_us;
	struct tg_stats st;
};

enum { TG_NONE, TG_CPU, TG_WRAP };

uint64_t tg_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t tg_below(uint64_t *s, uint64_t n)
{
	return tg_next(s) % n;
}

int tg_chance(uint64_t *s, unsigned pct)
{
	return tg_below(s, 100) < pct;
}

uint64_t tg_seed(const char *test)
{
	const char *env = getenv("XFDR_SEED");
	uint64_t seed;

	if (env && *env)
		seed = strtoull(env, NULL, 0);
	else
		seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() << 32;
	printf("%s: seed %" PRIu64 " (replay with XFDR_SEED=%" PRIu64 ")\n", test, seed, seed);
	fflush(stdout);
	return seed;
}

void tg_stats_add(struct tg_stats *a, const struct tg_stats *b)
{
	a->buffers += b->buffers;
	a->exactly_full += b->exactly_full;
	a->tsc_wraps += b->tsc_wraps;
	a->backward_wraps += b->backward_wraps;
	a->cpu_changes += b->cpu_changes;
	a->customs += b->customs;
	a->args += b->args;
	a->events += b->events;
}

struct tg_event *tg_push(struct tg_thread *t)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->ev = realloc(t->ev, t->cap * sizeof(*t->ev));
		assert_non_null(t->ev);
	}
	memset(&t->ev[t->n], 0, sizeof(t->ev[0]));
	return &t->ev[t->n++];
}

struct tg_thread *tg_thread_of(struct tg_trace *tr, uint16_t tid)
{
	size_t i;

	for (i = 0; i < tr->threads; i++) {
		if (tr->th[i].tid == tid)
			return &tr->th[i];
	}
	tr->th = realloc(tr->th, (tr->threads + 1) * sizeof(*tr->th));
	assert_non_null(tr->th);
	memset(&tr->th[tr->threads], 0, sizeof(tr->th[0]));
	tr->th[tr->threads].tid = tid;
	return &tr->th[tr->threads++];
}

void tg_free(struct tg_trace *tr)
{
	size_t i, j;

	for (i = 0; i < tr->threads; i++) {
		for (j = 0; j < tr->th[i].n; j++)
			free(tr->th[i].ev[j].payload);
		free(tr->th[i].ev);
	}
	free(tr->th);
	memset(tr, 0, sizeof(*tr));
}

size_t tg_body_room(size_t buffer_bytes)
{
	return buffer_bytes - XFDR_BUFFER_PREAMBLE_BYTES;
}

static uint32_t tg_fid(uint64_t *s)
{
	switch (tg_below(s, 6)) {
	case 0:
		return 0;
	case 1:
		return XFDR_FUNCTION_ID_MAX;
	case 2:
		return (uint32_t)tg_below(s, 1u << 28);
	default:
		return (uint32_t)tg_below(s, 32);
	}
}

static uint16_t tg_cpu(uint64_t *s)
{
	switch (tg_below(s, 5)) {
	case 0:
		return 0;
	case 1:
		return 0xffff;
	case 2:
		return (uint16_t)tg_next(s);
	default:
		return (uint16_t)tg_below(s, 4);
	}
}

/* The next TSC: mostly small steps, often right at and across the 32-bit delta limit. */
static uint64_t tg_step(uint64_t *s, uint64_t tsc)
{
	unsigned r = (unsigned)tg_below(s, 100);

	if (r < 50)
		return tsc + tg_below(s, 1000);
	if (r < 58)
		return tsc;
	if (r < 66)
		return tsc + UINT32_MAX; /* the largest delta a record holds */
	if (r < 74)
		return tsc + UINT32_MAX + 1; /* the smallest one that needs TSCWrap */
	if (r < 80)
		return tsc + UINT32_MAX - tg_below(s, 3) + tg_below(s, 3);
	if (r < 86)
		return tsc + tg_below(s, 1ull << 44);
	if (r < 93)
		return tsc - 1 - tg_below(s, 1000); /* backwards: TSCWrap */
	if (r < 97)
		return tsc - tg_below(s, 1ull << 40);
	return tg_next(s); /* anywhere, also across 2^64 */
}

static uint32_t tg_payload_size(uint64_t *s, const struct tg_params *p, size_t max)
{
	static const uint32_t small[] = {0, 1, 7, 8, 9, 15, 16, 17, 24, 33, 64};
	uint32_t n;

	if (tg_chance(s, 80))
		n = small[tg_below(s, sizeof(small) / sizeof(small[0]))];
	else
		n = (uint32_t)tg_below(s, max + 1);
	if (p->llvm_safe)
		n = (n + 7) & ~7u;
	if (p->llvm_safe && !n)
		n = 8;
	while (n > max)
		n -= p->llvm_safe ? 8 : 1;
	return n;
}

void tg_generate(struct tg_trace *tr, const struct tg_params *p, uint64_t *s)
{
	const size_t room = tg_body_room(p->buffer_bytes);
	size_t max_args, max_payload, i, j, n;
	uint64_t tsc;
	uint16_t cpu;
	uint8_t used_tid[65536 / 8] = {0};

	/* A group of n bytes fits a fresh buffer whenever n + 16 <= room. */
	assert_true(room >= XFDR_FN_RECORD_BYTES + XFDR_MD_RECORD_BYTES);
	max_args = (room - XFDR_MD_RECORD_BYTES - XFDR_FN_RECORD_BYTES) / XFDR_MD_RECORD_BYTES;
	if (max_args > TG_MAX_ARGS)
		max_args = TG_MAX_ARGS;
	max_payload = room >= 2 * XFDR_MD_RECORD_BYTES ? room - 2 * XFDR_MD_RECORD_BYTES : 0;

	memset(tr, 0, sizeof(*tr));
	tr->p = *p;
	tr->threads = p->threads;
	tr->th = calloc(p->threads, sizeof(*tr->th));
	assert_non_null(tr->th);
	for (i = 0; i < p->threads; i++) {
		struct tg_thread *t = &tr->th[i];
		uint16_t tid;

		/* Distinct ids; the extremes 0 and 0xffff come up often. */
		do {
			switch (tg_below(s, 4)) {
			case 0:
				tid = 0;
				break;
			case 1:
				tid = 0xffff;
				break;
			default:
				tid = (uint16_t)tg_next(s);
			}
		} while (used_tid[tid / 8] & (1u << (tid % 8)));
		used_tid[tid / 8] |= (uint8_t)(1u << (tid % 8));
		t->tid = tid;

		switch (tg_below(s, 4)) {
		case 0:
			tsc = tg_below(s, 1000);
			break;
		case 1:
			tsc = UINT64_MAX - tg_below(s, 1ull << 33); /* will wrap past 2^64 */
			break;
		default:
			tsc = tg_next(s) >> (tg_below(s, 40));
		}
		cpu = tg_cpu(s);
		n = 1 + (size_t)tg_below(s, p->max_events);
		for (j = 0; j < n; j++) {
			struct tg_event *e = tg_push(t);
			uint32_t k;

			if (tg_chance(s, 6))
				cpu = tg_cpu(s);
			tsc = tg_step(s, tsc);
			e->tsc = tsc;
			e->cpu = cpu;
			if ((p->llvm_safe && max_payload < 8) || !max_payload ||
			    !tg_chance(s, p->custom_pct)) {
				e->action = (unsigned)tg_below(s, XFDR_FN_ACTION_COUNT);
				e->fid = tg_fid(s);
				if (e->action != XFDR_FN_ENTER_ARGS)
					continue;
				e->arg_count = (uint32_t)tg_below(s, max_args + 1);
				for (k = 0; k < e->arg_count; k++)
					e->args[k] = tg_chance(s, 10) ? UINT64_MAX : tg_next(s);
				continue;
			}
			e->custom = 1;
			e->payload_bytes = tg_payload_size(s, p, max_payload);
			if (!e->payload_bytes)
				continue;
			e->payload = malloc(e->payload_bytes);
			assert_non_null(e->payload);
			for (k = 0; k < e->payload_bytes; k++)
				e->payload[k] =
				    p->llvm_safe ? (uint8_t)tg_below(s, 0x80) : (uint8_t)tg_next(s);
		}
	}
}

static void tg_close(struct tg_enc *e)
{
	size_t bs = e->tr->p.buffer_bytes;

	if (!e->cur)
		return;
	assert_int_equal(wr_close_buffer(e->cur, e->used, bs), 0);
	if (e->used == bs)
		e->st.exactly_full++;
	if (e->nbufs == e->capbufs) {
		e->capbufs = e->capbufs ? 2 * e->capbufs : 16;
		e->bufs = realloc(e->bufs, e->capbufs * sizeof(*e->bufs));
		assert_non_null(e->bufs);
	}
	e->bufs[e->nbufs++] = e->cur;
	e->cur = NULL;
}

/*
 * Next WallClockTime of a thread: strictly later in seconds and in microseconds, or (mixed)
 * only later as the pair (seconds, microseconds).
 */
static void tg_wall_step(struct tg_enc *e, uint64_t *s)
{
	if (e->tr->p.wall_mixed) {
		switch (tg_below(s, 3)) {
		case 0: /* same second, later microsecond */
			if (e->wall_us < 999999) {
				e->wall_us += 1 + (uint32_t)tg_below(s, 999999 - e->wall_us);
				return;
			}
			/* fall through */
		case 1: /* later second, earlier microsecond */
			e->wall_s += 1 + tg_below(s, 2);
			e->wall_us = (uint32_t)tg_below(s, e->wall_us + 1);
			return;
		default:
			e->wall_s += 1 + tg_below(s, 1000);
			e->wall_us = (uint32_t)tg_below(s, 1000000);
			return;
		}
	}
	/* Both parts grow: llvm-xray's block comparator needs that (see test_interop.c). */
	e->wall_s += 1 + tg_below(s, 3);
	e->wall_us += 1 + (uint32_t)tg_below(s, 7);
	assert_true(e->wall_us < 1000000);
}

static void tg_open(struct tg_enc *e, uint16_t tid, uint16_t cpu, uint64_t tsc, uint64_t *s)
{
	size_t bs = e->tr->p.buffer_bytes;

	e->cur = malloc(bs);
	assert_non_null(e->cur);
	/* Stale bytes: whatever the writer does not overwrite must not matter. */
	memset(e->cur, 0xee, bs);
	e->used = wr_new_buffer(e->cur, tid);
	e->used += wr_wall_clock_time(e->cur + e->used, e->wall_s, e->wall_us);
	e->used += wr_new_cpu_id(e->cur + e->used, cpu, tsc);
	e->base = tsc;
	e->cpu = cpu;
	e->st.buffers++;
	tg_wall_step(e, s);
}

static void tg_encode_thread(struct tg_enc *e, const struct tg_thread *t, uint64_t *s)
{
	size_t i, group;
	uint32_t k;
	int prefix;

	/* Strict mode starts low enough for 10^5 buffers of strictly growing microseconds. */
	e->wall_s = tg_below(s, 1ull << 40);
	e->wall_us = (uint32_t)tg_below(s, e->tr->p.wall_mixed ? 1000000 : 100000);
	for (i = 0; i < t->n; i++) {
		const struct tg_event *ev = &t->ev[i];

		group = ev->custom ? XFDR_MD_RECORD_BYTES + ev->payload_bytes
				   : XFDR_FN_RECORD_BYTES + ev->arg_count * XFDR_MD_RECORD_BYTES;
		prefix = TG_NONE;
		if (e->cur && ev->cpu != e->cpu)
			prefix = TG_CPU;
		else if (e->cur && !ev->custom &&
			 (ev->tsc < e->base || ev->tsc - e->base > UINT32_MAX))
			prefix = TG_WRAP;
		if (e->cur && !wr_fits(e->tr->p.buffer_bytes - e->used,
				       group + (prefix ? XFDR_MD_RECORD_BYTES : 0)))
			tg_close(e);
		if (!e->cur) {
			tg_open(e, t->tid, ev->cpu, ev->tsc, s);
			prefix = TG_NONE;
		}
		if (prefix == TG_CPU) {
			e->used += wr_new_cpu_id(e->cur + e->used, ev->cpu, ev->tsc);
			e->cpu = ev->cpu;
			e->base = ev->tsc;
			e->st.cpu_changes++;
		} else if (prefix == TG_WRAP) {
			if (ev->tsc < e->base)
				e->st.backward_wraps++;
			e->used += wr_tsc_wrap(e->cur + e->used, ev->tsc);
			e->base = ev->tsc;
			e->st.tsc_wraps++;
		}
		e->st.events++;
		if (ev->custom) {
			e->used +=
			    wr_custom_event_marker(e->cur + e->used, ev->payload_bytes, ev->tsc);
			if (ev->payload_bytes)
				memcpy(e->cur + e->used, ev->payload, ev->payload_bytes);
			e->used += ev->payload_bytes;
			e->st.customs++;
			continue;
		}
		e->used += wr_function(e->cur + e->used, ev->action, ev->fid,
				       (uint32_t)(ev->tsc - e->base));
		e->base = ev->tsc;
		for (k = 0; k < ev->arg_count; k++)
			e->used += wr_call_argument(e->cur + e->used, ev->args[k]);
		e->st.args += ev->arg_count;
	}
	tg_close(e);
}

void tg_encode(const struct tg_trace *tr, struct tg_file *f, uint64_t *s)
{
	const size_t bs = tr->p.buffer_bytes;
	struct wr_file_header h = {
	    .cycle_frequency_hz = 2000000000ull,
	    .buffer_bytes = bs,
	    .constant_tsc = 1,
	    .nonstop_tsc = 1,
	};
	struct tg_enc e;
	size_t i, j;
	uint8_t *tmp;

	memset(&e, 0, sizeof(e));
	e.tr = tr;
	for (i = 0; i < tr->threads; i++)
		tg_encode_thread(&e, &tr->th[i], s);
	for (i = e.nbufs; i > 1; i--) {
		j = (size_t)tg_below(s, i);
		tmp = e.bufs[i - 1];
		e.bufs[i - 1] = e.bufs[j];
		e.bufs[j] = tmp;
	}
	f->bytes = XFDR_FILE_HEADER_BYTES + e.nbufs * bs;
	f->data = malloc(f->bytes);
	assert_non_null(f->data);
	assert_int_equal(wr_encode_file_header(f->data, &h), XFDR_FILE_HEADER_BYTES);
	for (i = 0; i < e.nbufs; i++) {
		memcpy(f->data + XFDR_FILE_HEADER_BYTES + i * bs, e.bufs[i], bs);
		free(e.bufs[i]);
	}
	free(e.bufs);
	f->buffers = e.nbufs;
	f->st = e.st;
}

/* Threads by ascending id: the order XFDR_ORDER_THREAD promises. */
static int tg_cmp_tid(const void *a, const void *b)
{
	const struct tg_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

void tg_sort_threads(struct tg_trace *tr)
{
	qsort(tr->th, tr->threads, sizeof(*tr->th), tg_cmp_tid);
}

static void tg_describe(const struct tg_event *e, uint16_t tid, char *out, size_t n)
{
	if (e->custom)
		snprintf(out, n, "custom tid %u cpu %u tsc %" PRIu64 " payload %u bytes",
			 (unsigned)tid, (unsigned)e->cpu, e->tsc, e->payload_bytes);
	else
		snprintf(out, n, "function tid %u cpu %u tsc %" PRIu64 " action %u fid %u args %u",
			 (unsigned)tid, (unsigned)e->cpu, e->tsc, e->action, e->fid, e->arg_count);
}

int tg_event_matches(const struct xfdr_trace *t, const struct xfdr_event *got,
		     const struct tg_event *want, uint16_t tid)
{
	const char *why = NULL;
	char w[160];
	uint32_t k;

	if (got->type != (want->custom ? XFDR_EVENT_CUSTOM : XFDR_EVENT_FUNCTION))
		why = "type";
	else if (got->thread_id != tid)
		why = "thread id";
	else if (got->tsc != want->tsc)
		why = "tsc";
	else if (got->cpu != want->cpu)
		why = "cpu";
	else if (want->custom) {
		if (got->payload_bytes != want->payload_bytes)
			why = "payload size";
		else if (want->payload_bytes &&
			 memcmp(got->payload, want->payload, want->payload_bytes))
			why = "payload bytes";
	} else if (got->action != want->action)
		why = "action";
	else if (got->function_id != want->fid)
		why = "function id";
	else if (got->arg_count != want->arg_count)
		why = "argument count";
	else
		for (k = 0; k < want->arg_count && !why; k++)
			if (xfdr_event_arg(t, got, k) != want->args[k])
				why = "argument value";
	if (!why)
		return 1;
	tg_describe(want, tid, w, sizeof(w));
	print_error("mismatch in %s at file offset %" PRIu64 "\n  want %s\n  got  type %d tid %u "
		    "cpu %u tsc %" PRIu64 " action %u fid %u args %u payload %u\n",
		    why, got->offset, w, (int)got->type, (unsigned)got->thread_id,
		    (unsigned)got->cpu, got->tsc, got->action, got->function_id, got->arg_count,
		    got->payload_bytes);
	return 0;
}

int tg_check_trace(struct xfdr_trace *t, struct tg_trace *tr, size_t buffers)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	const struct xfdr_header *h;
	size_t th = 0, i = 0;
	int rc;

	tg_sort_threads(tr);
	if (xfdr_trace_verify(t, &err) || xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err)) {
		print_error("reader refused a valid image: %s\n", err.text);
		return -1;
	}
	h = xfdr_trace_header(t);
	if (h->version != 1 || h->type != 1 || !h->constant_tsc || !h->nonstop_tsc ||
	    h->cycle_frequency != 2000000000ull || h->buffer_size != tr->p.buffer_bytes ||
	    h->big_endian || xfdr_trace_buffer_count(t) != buffers) {
		print_error("header or buffer count differs\n");
		return -1;
	}
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		/* Next thread once this one is used up (every thread has at least one event). */
		if (th < tr->threads && i == tr->th[th].n) {
			th++;
			i = 0;
		}
		if (th == tr->threads) {
			print_error("reader gave an extra event at offset %" PRIu64 "\n",
				    ev.offset);
			return -1;
		}
		if (!tg_event_matches(t, &ev, &tr->th[th].ev[i], tr->th[th].tid)) {
			print_error("thread %zu (tid %u), event %zu of %zu\n", th,
				    (unsigned)tr->th[th].tid, i, tr->th[th].n);
			return -1;
		}
		i++;
	}
	if (rc < 0) {
		print_error("reader failed while iterating: %s\n", err.text);
		return -1;
	}
	if (th + 1 != tr->threads || i != tr->th[th].n) {
		print_error("reader stopped early: thread %zu (tid %u), event %zu of %zu\n", th,
			    (unsigned)tr->th[th].tid, i, tr->th[th].n);
		return -1;
	}
	return 0;
}

int tg_check_image(struct tg_trace *tr, const struct tg_file *f)
{
	struct xfdr_trace *t = NULL;
	struct xfdr_error err;
	int rc;

	if (xfdr_trace_open_memory(f->data, f->bytes, "roundtrip", &t, &err)) {
		print_error("reader refused to open a valid image: %s\n", err.text);
		return -1;
	}
	rc = tg_check_trace(t, tr, f->buffers);
	xfdr_trace_close(t);
	return rc;
}

const char *tg_write_scratch(struct tg_trace *tr, size_t buffer_bytes, const char *name,
			     uint64_t seed)
{
	struct tg_file f;
	const char *path;

	tr->p.buffer_bytes = buffer_bytes;
	tr->p.threads = tr->threads;
	tg_encode(tr, &f, &seed);
	path = scratch_write(name, f.data, f.bytes);
	free(f.data);
	tg_free(tr);
	return path;
}

/* A function event of thread tid at t, appended. */
static void shallow_fn(struct tg_trace *tr, uint16_t tid, unsigned action, uint32_t fid, uint64_t t)
{
	struct tg_event *e = tg_push(tg_thread_of(tr, tid));

	memset(e, 0, sizeof(*e));
	e->action = action;
	e->fid = fid;
	e->tsc = t;
}

const char *tg_shallow_scratch(const char *name, uint16_t threads, unsigned calls)
{
	struct tg_trace tr;
	uint16_t tid;
	unsigned i;

	memset(&tr, 0, sizeof(tr));
	for (tid = 1; tid <= threads; tid++) {
		shallow_fn(&tr, tid, XFDR_FN_ENTER, 1, 1000 + tid);
		for (i = 0; i < calls; i++) {
			uint64_t t = 2000 + 40 * (uint64_t)i + tid;

			shallow_fn(&tr, tid, XFDR_FN_ENTER, 2, t);
			shallow_fn(&tr, tid, XFDR_FN_ENTER, 3, t + 10);
			shallow_fn(&tr, tid, XFDR_FN_EXIT, 3, t + 20);
			shallow_fn(&tr, tid, XFDR_FN_EXIT, 2, t + 30);
		}
		shallow_fn(&tr, tid, XFDR_FN_EXIT, 1, 2000 + 40 * (uint64_t)calls + 1000 + tid);
	}
	return tg_write_scratch(&tr, 4096, name, 7);
}
