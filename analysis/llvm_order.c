/*
 * analysis/llvm_order.c - events in llvm-xray's record order (see llvm_order.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/llvm_dmap.h"
#include "analysis/llvm_order.h"

enum order_mode {
	MODE_THREADS, /* unsorted: thread after thread */
	MODE_MERGE,   /* sorted: the runs merged */
	MODE_MEMORY,  /* sorted: every record in memory (too many runs) */
};

/* A stretch of one thread's events whose TSC never goes down. */
struct run {
	struct xfdr_event_iter it; /* positioned after ev */
	struct xfdr_event ev;	   /* the run's next event (once the merge has begun) */
	uint64_t left;		   /* events of the run after ev */
	struct llvm_carry carry;   /* the thread's carry before ev */
};

/* One record kept in memory (MODE_MEMORY); ptr points into the trace's mapping. */
struct mem_event {
	uint64_t tsc;
	const uint8_t *ptr; /* arguments or payload */
	uint32_t function_id, count, thread_id, pid;
	struct llvm_carry carry;
	uint16_t cpu, event_type;
	uint8_t type, action;
};

struct llvm_order {
	struct xfdr_trace *t;
	enum order_mode mode;
	uint64_t *threads; /* thread numbers in llvm-xray's order */
	uint64_t nthreads;
	struct xfdr_event ev; /* what llvm_order_next() handed out */
	uint64_t done, total;
	struct xfdr_error *err; /* the caller's, during llvm_order_open() and llvm_order_next() */

	/* MODE_THREADS */
	uint64_t next_thread;
	int in_thread;
	struct xfdr_event_iter it;
	struct llvm_carry carry;

	/* MODE_MERGE */
	struct run *runs;
	size_t nruns, cap_runs;
	uint32_t *heap;
	size_t heap_n;

	/* MODE_MEMORY */
	struct mem_event *mem;
	size_t nmem, cap_mem, next_mem;
};

/* ---- llvm-xray's thread order -------------------------------------------------------------- */

static int llvm_thread_order(struct llvm_order *o)
{
	uint32_t *order;
	uint64_t i;

	if (o->nthreads > UINT32_MAX)
		return -1;
	order = malloc((o->nthreads ? o->nthreads : 1) * sizeof(*order));
	o->threads = malloc((o->nthreads ? o->nthreads : 1) * sizeof(*o->threads));
	if (!order || !o->threads || llvm_dmap_thread_order(o->t, (uint32_t)o->nthreads, order)) {
		free(order);
		return -1;
	}
	for (i = 0; i < o->nthreads; i++)
		o->threads[i] = order[i];
	free(order);
	return 0;
}

/* ---- Walking threads ---------------------------------------------------------------------- */

/* Take ev into its thread's carry; returns what llvm-xray prints for ev. */
static struct llvm_carry take_carry(struct llvm_carry *c, const struct xfdr_event *ev)
{
	if (ev->type == XFDR_EVENT_FUNCTION)
		c->fid = ev->function_id;
	else if (ev->type == XFDR_EVENT_TYPED)
		c->type = ev->event_type;
	return *c;
}

static int begin_thread(struct llvm_order *o, uint64_t rank, struct xfdr_event_iter *it)
{
	return xfdr_events_begin_thread(o->t, o->threads[rank], it, o->err) < 0 ? -1 : 0;
}

/* xfdr_events_next(), the error in o->err. Returns 1, 0 or -1. */
static int next_event(struct llvm_order *o, struct xfdr_event_iter *it, struct xfdr_event *ev)
{
	return xfdr_events_next(it, ev, o->err);
}

static int push_run(struct llvm_order *o, const struct xfdr_event_iter *before,
		    const struct llvm_carry *carry)
{
	struct run *r;

	if (o->nruns == o->cap_runs) {
		size_t cap = o->cap_runs ? o->cap_runs * 2 : 16;

		r = realloc(o->runs, cap * sizeof(*r));
		if (!r)
			return -1;
		o->runs = r;
		o->cap_runs = cap;
	}
	r = &o->runs[o->nruns++];
	r->it = *before;
	r->left = 0;
	r->carry = *carry;
	return 0;
}

static void no_memory(const struct llvm_order *o)
{
	o->err->offset = 0;
	snprintf(o->err->text, sizeof(o->err->text), "%s: out of memory", xfdr_trace_name(o->t));
}

/*
 * Find the runs: walk every thread in llvm-xray's order and note where the TSC goes down.
 * Returns 1 (done), 0 (more than LLVM_ORDER_RUNS_MAX runs: sort in memory) or -1 (o->err filled).
 */
static int find_runs(struct llvm_order *o, const struct progress *prog)
{
	struct xfdr_event_iter it, before;
	struct xfdr_event ev;
	struct llvm_carry carry;
	uint64_t r, prev = 0;
	int rc, first;

	for (r = 0; r < o->nthreads; r++) {
		if (begin_thread(o, r, &it))
			return -1;
		carry = (struct llvm_carry){0, 0};
		first = 1;
		for (;;) {
			/* Only a run's first event needs the state before it, but which one that
			   is shows only after the step. */
			before = it;
			rc = next_event(o, &it, &ev);
			if (rc <= 0)
				break;
			if (first || ev.tsc < prev) {
				if (o->nruns == LLVM_ORDER_RUNS_MAX)
					return 0;
				if (push_run(o, &before, &carry)) {
					no_memory(o);
					return -1;
				}
				first = 0;
			}
			o->runs[o->nruns - 1].left++;
			take_carry(&carry, &ev);
			prev = ev.tsc;
			o->total++;
		}
		if (rc < 0)
			return -1;
		progress_update(prog, r + 1, o->nthreads);
	}
	return 1;
}

/* Does run a come before run b? By TSC, then by place in the concatenation (the run index). */
static int run_before(const struct llvm_order *o, uint32_t a, uint32_t b)
{
	uint64_t x = o->runs[a].ev.tsc, y = o->runs[b].ev.tsc;

	return x < y || (x == y && a < b);
}

static void sift_down(struct llvm_order *o, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		uint32_t tmp;

		if (l < o->heap_n && run_before(o, o->heap[l], o->heap[m]))
			m = l;
		if (r < o->heap_n && run_before(o, o->heap[r], o->heap[m]))
			m = r;
		if (m == i)
			return;
		tmp = o->heap[i];
		o->heap[i] = o->heap[m];
		o->heap[m] = tmp;
		i = m;
	}
}

/*
 * The next event of a run, which find_runs() counted: the end of its thread here means the
 * trace changed under us. Returns 0, or -1 with o->err filled.
 */
static int run_next(struct llvm_order *o, struct run *r)
{
	int rc = next_event(o, &r->it, &r->ev);

	if (rc == 0) {
		o->err->offset = 0;
		snprintf(o->err->text, sizeof(o->err->text),
			 "%s: a thread's events ended before the count read earlier",
			 xfdr_trace_name(o->t));
	}
	return rc == 1 ? 0 : -1;
}

/* Every run at its first event, in a heap. Returns 0 or -1 (o->err filled). */
static int start_merge(struct llvm_order *o)
{
	size_t i;

	o->heap = malloc((o->nruns ? o->nruns : 1) * sizeof(*o->heap));
	if (!o->heap) {
		no_memory(o);
		return -1;
	}
	for (i = 0; i < o->nruns; i++) {
		if (run_next(o, &o->runs[i]))
			return -1;
		o->runs[i].left--;
		o->heap[i] = (uint32_t)i;
	}
	o->heap_n = o->nruns;
	for (i = o->heap_n / 2; i-- > 0;)
		sift_down(o, i);
	return 0;
}

static int merge_next(struct llvm_order *o, struct llvm_carry *carry)
{
	struct run *r;

	if (!o->heap_n)
		return 0;
	r = &o->runs[o->heap[0]];
	o->ev = r->ev;
	*carry = take_carry(&r->carry, &o->ev);
	if (r->left) {
		if (run_next(o, r))
			return -1;
		r->left--;
	} else {
		o->heap[0] = o->heap[--o->heap_n];
	}
	sift_down(o, 0);
	return 1;
}

/* ---- Too many runs: every record in memory ------------------------------------------------ */

static int gather(struct llvm_order *o)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct llvm_carry carry;
	struct mem_event *m;
	uint64_t r;
	int rc;

	for (r = 0; r < o->nthreads; r++) {
		if (begin_thread(o, r, &it))
			return -1;
		carry = (struct llvm_carry){0, 0};
		while ((rc = next_event(o, &it, &ev)) == 1) {
			if (o->nmem == o->cap_mem) {
				size_t cap = o->cap_mem ? o->cap_mem * 2 : 4096;

				m = realloc(o->mem, cap * sizeof(*m));
				if (!m) {
					no_memory(o);
					return -1;
				}
				o->mem = m;
				o->cap_mem = cap;
			}
			m = &o->mem[o->nmem++];
			*m = (struct mem_event){
			    .tsc = ev.tsc,
			    .ptr = ev.type == XFDR_EVENT_FUNCTION ? ev.args : ev.payload,
			    .function_id = ev.function_id,
			    .count =
				ev.type == XFDR_EVENT_FUNCTION ? ev.arg_count : ev.payload_bytes,
			    .thread_id = ev.thread_id,
			    .pid = ev.pid,
			    .carry = take_carry(&carry, &ev),
			    .cpu = ev.cpu,
			    .event_type = ev.event_type,
			    .type = (uint8_t)ev.type,
			    .action = (uint8_t)ev.action,
			};
		}
		if (rc < 0)
			return -1;
	}
	o->total = o->nmem;
	return 0;
}

/*
 * Stable sort by TSC: a natural merge sort, since each thread's records are mostly ascending.
 * Sorts a[0, n) using tmp (n entries); returns whichever of the two holds the result.
 */
static struct mem_event *sort_by_tsc(struct mem_event *a, struct mem_event *tmp, size_t n)
{
	struct mem_event *src = a, *dst = tmp, *swap;
	size_t runs;

	if (n < 2)
		return a;
	do {
		size_t i = 0;

		runs = 0;
		while (i < n) {
			size_t mid = i + 1, end, l, r, k;

			while (mid < n && src[mid - 1].tsc <= src[mid].tsc)
				mid++;
			end = mid < n ? mid + 1 : n;
			while (end < n && src[end - 1].tsc <= src[end].tsc)
				end++;
			/* Left first on equal keys keeps the sort stable. */
			l = i;
			r = mid;
			k = i;
			while (l < mid && r < end)
				dst[k++] = src[r].tsc < src[l].tsc ? src[r++] : src[l++];
			memcpy(dst + k, src + l, (mid - l) * sizeof(*dst));
			k += mid - l;
			memcpy(dst + k, src + r, (end - r) * sizeof(*dst));
			runs++;
			i = end;
		}
		swap = src;
		src = dst;
		dst = swap;
	} while (runs > 1);
	return src;
}

static int sort_in_memory(struct llvm_order *o)
{
	struct mem_event *tmp, *sorted;

	if (gather(o))
		return -1;
	tmp = malloc((o->nmem ? o->nmem : 1) * sizeof(*tmp));
	if (!tmp) {
		no_memory(o);
		return -1;
	}
	sorted = sort_by_tsc(o->mem, tmp, o->nmem);
	if (sorted == tmp) {
		free(o->mem);
		o->mem = tmp;
	} else {
		free(tmp);
	}
	return 0;
}

static int memory_next(struct llvm_order *o, struct llvm_carry *carry)
{
	const struct mem_event *m;

	if (o->next_mem == o->nmem)
		return 0;
	m = &o->mem[o->next_mem++];
	o->ev = (struct xfdr_event){
	    .type = (enum xfdr_event_type)m->type,
	    .action = m->action,
	    .function_id = m->function_id,
	    .tsc = m->tsc,
	    .cpu = m->cpu,
	    .thread_id = m->thread_id,
	    .pid = m->pid,
	    .event_type = m->event_type,
	    .big_endian = xfdr_trace_header(o->t)->big_endian,
	};
	if (m->type == XFDR_EVENT_FUNCTION) {
		o->ev.args = m->ptr;
		o->ev.arg_count = m->count;
	} else {
		o->ev.payload = m->ptr;
		o->ev.payload_bytes = m->count;
	}
	*carry = m->carry;
	return 1;
}

/* ---- Unsorted: thread after thread -------------------------------------------------------- */

static int threads_next(struct llvm_order *o, struct llvm_carry *carry)
{
	int rc;

	for (;;) {
		if (!o->in_thread) {
			if (o->next_thread == o->nthreads)
				return 0;
			if (begin_thread(o, o->next_thread++, &o->it))
				return -1;
			o->in_thread = 1;
			o->carry = (struct llvm_carry){0, 0};
		}
		rc = next_event(o, &o->it, &o->ev);
		if (rc != 0) {
			if (rc == 1)
				*carry = take_carry(&o->carry, &o->ev);
			return rc;
		}
		o->in_thread = 0;
	}
}

/* ---- The interface ------------------------------------------------------------------------ */

int llvm_order_open(struct xfdr_trace *t, int sort, const struct progress *prog,
		    struct llvm_order **out, struct xfdr_error *err)
{
	struct llvm_order *o = calloc(1, sizeof(*o));
	int rc;

	*out = NULL;
	if (!o) {
		err->offset = 0;
		snprintf(err->text, sizeof(err->text), "%s: out of memory", xfdr_trace_name(t));
		return -1;
	}
	o->t = t;
	o->err = err;
	if (xfdr_trace_threads(t, &o->nthreads, err) < 0)
		goto fail;
	if (llvm_thread_order(o)) {
		no_memory(o);
		goto fail;
	}
	if (!sort) {
		o->mode = MODE_THREADS;
		*out = o;
		return 0;
	}
	progress_phase(prog, "ordering");
	o->mode = MODE_MERGE;
	rc = find_runs(o, prog);
	if (rc < 0)
		goto fail;
	if (rc == 0) {
		free(o->runs);
		o->runs = NULL;
		o->nruns = 0;
		o->total = 0;
		o->mode = MODE_MEMORY;
		progress_phase(prog, "sorting");
		if (sort_in_memory(o))
			goto fail;
	} else if (start_merge(o)) {
		goto fail;
	}
	*out = o;
	return 0;
fail:
	llvm_order_close(o);
	return -1;
}

int llvm_order_next(struct llvm_order *o, const struct xfdr_event **ev, struct llvm_carry *carry,
		    struct xfdr_error *err)
{
	int rc;

	o->err = err;
	switch (o->mode) {
	case MODE_THREADS:
		rc = threads_next(o, carry);
		break;
	case MODE_MERGE:
		rc = merge_next(o, carry);
		break;
	default:
		rc = memory_next(o, carry);
		break;
	}
	if (rc == 1) {
		o->done++;
		*ev = &o->ev;
	}
	return rc;
}

void llvm_order_progress(const struct llvm_order *o, uint64_t *done, uint64_t *total)
{
	if (o->mode == MODE_THREADS) {
		/* The events are not counted ahead; threads are. */
		*done = o->next_thread;
		*total = o->nthreads;
		return;
	}
	*done = o->done;
	*total = o->total;
}

void llvm_order_close(struct llvm_order *o)
{
	if (!o)
		return;
	free(o->threads);
	free(o->runs);
	free(o->heap);
	free(o->mem);
	free(o);
}
