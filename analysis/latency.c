/*
 * analysis/latency.c - the per-function latency table (see latency.h).
 *
 * Where llvm-xray (LLVM 14) can account a file, the table is its table, row for row and in
 * its order, for every sort field and order. That fixes these rules:
 *
 *  - A function's row gives the count, the minimum, the elements at n / 2, floor(n * 0.9) and
 *    floor(n * 0.99) of its sorted latencies (the nth_element picks, no interpolation), the
 *    maximum and the sum, each divided by the header's cycle_frequency (raw ticks when it is
 *    0). Every call counts, recursive ones each on its own.
 *  - The sum is taken exactly (128 bits) and then rounded once to a double. llvm-xray adds in
 *    doubles in recording order, which is exact and so equal while a function's total stays
 *    below 2^53 ticks (about 35 days at 3 GHz); beyond that xfdr's sum is the exact one.
 *  - Row order. llvm-xray keeps latencies in a DenseMap keyed by function id, copies the rows
 *    out in bucket order and sorts them with std::sort (libstdc++'s introsort, not stable), so
 *    rows that tie on the sort key come out in an order fixed by those two. Both are
 *    reproduced: the bucket order from the order in which llvm-xray first records a latency
 *    of each function (rows_in_llvm_order()), the sort by the same algorithm (rows_sort()).
 *    `account` reads the records unsorted: thread after thread in the bucket order of its
 *    DenseMap of threads (thread_ranks()), each thread's buffers by WallClockTime. So a
 *    function's first record is its earliest counted call by (thread rank, position of the
 *    exit in the thread, depth: a deduced caller is recorded before the calls it closes).
 *
 * Memory and time: one pass over the events, the trace's threads shared out among workers
 * (one per CPU online, at most one per thread walked), each with its own pairer and its own
 * table of functions. Every counted latency is kept, 4 bytes each (8 beyond 2^32 ticks), in its
 * function's list of blocks (struct lat_block); per function about 100 bytes, per thread the
 * pairer's stack; nothing per record. Then the workers' tables are merged (lists spliced), and each
 * function's figures are picked from its latencies, gathered into one array: three selections
 * (quickselect, O(n) on average) for the 99th, 90th percentile and median, each in the part
 * below the last, and one scan for the minimum, maximum and sum.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "analysis/callstack.h"
#include "analysis/jobs.h"
#include "analysis/latency.h"
#include "analysis/llvm_dmap.h"

/* One function of the table: its row, and how the table was built. */
struct lat_fn {
	struct latency_row row;
	/*
	 * its row.count counted latencies, when kept: those below 2^32 ticks in a list of blocks,
	 * appended to at put, in tail, which ends at end (its n is set when it is sealed:
	 * fn_seal()); the longer ones (seconds each) in big, nbig of them, room for capbig
	 */
	struct lat_block *head, *tail;
	uint32_t *put, *end;
	uint64_t *big;
	size_t nbig, capbig;
	/* Where llvm-xray records its first latency (see the top of the file). */
	uint64_t first_seq;
	uint32_t first_rank, first_depth;
	uint64_t rec_mark;  /* recursive_only: thread_serial when a nested call of it ended */
	uint64_t sum_tsc;   /* the counted latencies' total, for latency_totals() */
	uint64_t outer_tsc; /* of those not nested in another call of it, likewise */
	uint64_t self_tsc;  /* their time outside recorded callees, likewise */
};

struct acct_walk;

/*
 * One worker's table, or (worker 0's, once the others are merged into it) the whole table.
 * Each worker feeds whole threads to its own pairer.
 */
struct acct {
	struct xfdr_trace *t;
	const struct latency_options *opt;
	struct xfdr_error *err; /* the caller's for worker 0, own_err for the others */
	struct xfdr_error own_err;
	struct acct_walk *walk; /* what the workers share */
	unsigned worker;
	int status; /* the worker's walk: 0, or -1 with err filled */
	struct lat_fn *fn;
	size_t nfn, capfn;
	uint32_t *slot; /* function id hash: index + 1, 0 empty */
	size_t nslot;
	struct callstack *cs;
	uint64_t thread_serial; /* of the thread being fed: its index + 1 */
	/* The event being fed. */
	uint64_t seq;
	uint32_t rank;
	struct latency_left left;
	int oom;
	/*
	 * tracks_open(): how many frames of each function are open on the thread being
	 * fed (entries and the named calls of a stack context), so that "is F open below this
	 * call" is one lookup, not a walk of the stack (which made a deep stack quadratic).
	 */
	struct acct_open *open;
	size_t nopen, usedopen;
	uint32_t ctx_named; /* named calls of the context that seeded the thread's stack */
};

/* A function's open frames on the thread of serial `serial` (another serial: none). */
struct acct_open {
	uint64_t serial; /* 0: an empty slot */
	uint32_t fid;
	uint32_t frames;
};

/* ---- Functions by id ----------------------------------------------------------------------- */

static uint32_t fid_hash(uint32_t fid)
{
	return fid * 0x9e3779b1u;
}

static int fn_grow_table(struct acct *a)
{
	size_t n = a->nslot ? a->nslot * 2 : 256, i, b;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -1;
	for (i = 0; i < a->nfn; i++) {
		b = fid_hash(a->fn[i].row.fid) & (n - 1);
		while (s[b])
			b = (b + 1) & (n - 1);
		s[b] = (uint32_t)i + 1;
	}
	free(a->slot);
	a->slot = s;
	a->nslot = n;
	return 0;
}

static struct lat_fn *fn_find(struct acct *a, uint32_t fid)
{
	size_t b;

	if (!a->nslot)
		return NULL;
	for (b = fid_hash(fid) & (a->nslot - 1); a->slot[b]; b = (b + 1) & (a->nslot - 1)) {
		if (a->fn[a->slot[b] - 1].row.fid == fid)
			return &a->fn[a->slot[b] - 1];
	}
	return NULL;
}

/* The function fid, added if new. NULL when out of memory. */
static struct lat_fn *fn_get(struct acct *a, uint32_t fid)
{
	size_t b = 0;

	if (a->nslot) {
		for (b = fid_hash(fid) & (a->nslot - 1); a->slot[b]; b = (b + 1) & (a->nslot - 1)) {
			if (a->fn[a->slot[b] - 1].row.fid == fid)
				return &a->fn[a->slot[b] - 1];
		}
	}
	if ((a->nfn + 1) * 2 > a->nslot) {
		if (fn_grow_table(a) < 0)
			return NULL;
		for (b = fid_hash(fid) & (a->nslot - 1); a->slot[b]; b = (b + 1) & (a->nslot - 1))
			;
	}
	if (a->nfn == a->capfn) {
		size_t cap = a->capfn ? a->capfn * 2 : 64;
		struct lat_fn *v = realloc(a->fn, cap * sizeof(*v));

		if (!v)
			return NULL;
		a->fn = v;
		a->capfn = cap;
	}
	memset(&a->fn[a->nfn], 0, sizeof(a->fn[0]));
	a->fn[a->nfn].row.fid = fid;
	a->fn[a->nfn].first_seq = UINT64_MAX;
	a->fn[a->nfn].first_rank = UINT32_MAX;
	a->fn[a->nfn].first_depth = UINT32_MAX;
	a->slot[b] = (uint32_t)++a->nfn;
	return &a->fn[a->nfn - 1];
}

/* ---- Pairing ------------------------------------------------------------------------------- */

static int key_before(uint32_t rank, uint64_t seq, uint32_t depth, const struct lat_fn *f)
{
	if (rank != f->first_rank)
		return rank < f->first_rank;
	if (seq != f->first_seq)
		return seq < f->first_seq;
	return depth < f->first_depth;
}

static size_t open_hash(uint32_t fid, size_t n)
{
	return (size_t)(((uint64_t)fid * 0x9e3779b97f4a7c15ull) >> 32) & (n - 1);
}

/*
 * The open-frame count of fid on the thread being fed: NULL when it has none and !create, or
 * when out of memory (a->oom set). A slot of an earlier thread counts as none.
 */
static uint32_t *open_frames(struct acct *a, uint32_t fid, int create)
{
	struct acct_open *e;
	size_t i;

	if (create && 2 * (a->usedopen + 1) > a->nopen) {
		size_t n = a->nopen ? 2 * a->nopen : 256, j, k;
		struct acct_open *v = calloc(n, sizeof(*v));

		if (!v) {
			a->oom = 1;
			return NULL;
		}
		for (j = 0; j < a->nopen; j++) {
			if (!a->open[j].serial)
				continue;
			for (k = open_hash(a->open[j].fid, n); v[k].serial; k = (k + 1) & (n - 1))
				;
			v[k] = a->open[j];
		}
		free(a->open);
		a->open = v;
		a->nopen = n;
	}
	if (!a->nopen)
		return NULL;
	for (i = open_hash(fid, a->nopen); a->open[i].serial; i = (i + 1) & (a->nopen - 1)) {
		e = &a->open[i];
		if (e->fid != fid)
			continue;
		if (e->serial != a->thread_serial) {
			e->serial = a->thread_serial;
			e->frames = 0;
		}
		return create || e->frames ? &e->frames : NULL;
	}
	if (!create)
		return NULL;
	e = &a->open[i];
	e->serial = a->thread_serial;
	e->fid = fid;
	e->frames = 0;
	a->usedopen++;
	return &e->frames;
}

/*
 * A call closed (its frame is popped): was a frame of its function open below it? Counts it
 * out of the open frames. Calls with no frame (no entry) and the unnamed calls of a context
 * (their id comes from the exit, their frame was never counted) have none.
 */
static int open_below(struct acct *a, const struct call *c)
{
	uint32_t *p;

	if ((c->flags & CALL_NO_ENTRY) ||
	    ((c->flags & CALL_FROM_CONTEXT) && c->depth >= a->ctx_named))
		return 0;
	p = open_frames(a, c->function_id, 0);
	if (!p)
		return 0;
	(*p)--;
	return *p > 0;
}

/*
 * --recursive-calls-only, llvm-xray's rule: a call of F counts when F was entered again while
 * the outermost open call of F lasted. So a call with F open below it counts (and marks F);
 * a call with none counts when a call of F nested in it was marked. Returns 1 to count it.
 */
static int recursive_call(struct acct *a, const struct call *c, int below, struct lat_fn **fp)
{
	struct lat_fn *f;

	if (below) {
		f = fn_get(a, c->function_id);
		if (!f) {
			a->oom = 1;
			return -1;
		}
		f->rec_mark = a->thread_serial;
		*fp = f;
		return 1;
	}
	f = fn_find(a, c->function_id);
	if (!f || f->rec_mark != a->thread_serial)
		return 0;
	f->rec_mark = 0;
	*fp = f;
	return 1;
}

/* What the workers share: the threads to walk, the next one to take, the progress. */
struct acct_walk {
	const struct acct_threads *th;
	const struct progress *prog; /* told by worker 0 only */
	uint64_t next;		     /* the index of the next thread to take (atomic) */
	uint64_t done, total;	     /* buffers walked (atomic), and to walk */
	int keep;		     /* keep every latency (the table), or only the totals */
};

static int keep_latencies(const struct acct *a)
{
	return a->walk->keep;
}

/*
 * Whether each function's open frames on the thread are counted (open_frames()): for
 * --recursive-calls-only, and for the totals, whose time leaves out calls nested in another
 * call of their function.
 */
static int tracks_open(const struct acct *a)
{
	return a->opt->recursive_only || !keep_latencies(a);
}

static uint64_t sat_add(uint64_t x, uint64_t y)
{
	return y > UINT64_MAX - x ? UINT64_MAX : x + y;
}

/*
 * A function's latencies are kept in blocks that double in size up to LAT_BLOCK_BYTES, so that
 * neither growing nor merging two workers' lists ever copies one (a list is spliced); they are
 * copied once, into one array, when the function gets its figures. A block holds 4 bytes a
 * latency, enough for 2^32 ticks (a second or more): half the memory to write, and to fault in,
 * of 8; the rare longer latency goes to an array of its own (lat_fn.big).
 * A block of LAT_BLOCK_BYTES is a mapping of its own, aligned for a transparent huge page and
 * asked for one: a busy function's latencies then cost one page fault per 2 MiB, not 512 (the
 * faults took a tenth of the time on the 1 GiB bench trace).
 */
#define LAT_BLOCK_MIN 16u
#define LAT_BLOCK_BYTES (2u << 20)
struct lat_block {
	struct lat_block *next;
	uint32_t n, cap;
	uint32_t v[];
};
#define LAT_BLOCK_MAX ((LAT_BLOCK_BYTES - sizeof(struct lat_block)) / sizeof(uint32_t))

/* A block of the largest size: LAT_BLOCK_BYTES at a multiple of it. NULL when out of memory. */
static struct lat_block *big_block(void)
{
	uint8_t *p = mmap(NULL, 2 * LAT_BLOCK_BYTES, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t at;

	if (p == MAP_FAILED)
		return NULL;
	at = ((uintptr_t)p + LAT_BLOCK_BYTES - 1) & ~(uintptr_t)(LAT_BLOCK_BYTES - 1);
	if (at > (uintptr_t)p)
		munmap(p, at - (uintptr_t)p);
	munmap((uint8_t *)at + LAT_BLOCK_BYTES,
	       (uintptr_t)p + 2 * LAT_BLOCK_BYTES - at - LAT_BLOCK_BYTES);
	madvise((void *)at, LAT_BLOCK_BYTES, MADV_HUGEPAGE); /* a hint: 4 KiB pages work too */
	return (struct lat_block *)at;
}

static void free_block(struct lat_block *b)
{
	if (b->cap == LAT_BLOCK_MAX)
		munmap(b, LAT_BLOCK_BYTES);
	else
		free(b);
}

/* The tail block's count, from put. */
static void fn_seal(struct lat_fn *f)
{
	if (f->tail)
		f->tail->n = (uint32_t)(f->put - f->tail->v);
}

/* Keep a latency of 2^32 ticks or more. 0, or -1 when out of memory. */
static int fn_keep_big(struct lat_fn *f, uint64_t x)
{
	size_t cap = f->capbig ? 2 * f->capbig : 16;
	uint64_t *v;

	if (f->nbig == f->capbig) {
		v = realloc(f->big, cap * sizeof(*v));
		if (!v)
			return -1;
		f->big = v;
		f->capbig = cap;
	}
	f->big[f->nbig++] = x;
	return 0;
}

/* Keep latency x of f. 0, or -1 when out of memory. */
static int fn_keep(struct lat_fn *f, uint64_t x)
{
	struct lat_block *b = f->tail;

	if (x > UINT32_MAX)
		return fn_keep_big(f, x);
	if (f->put == f->end) {
		uint32_t cap = !b ? LAT_BLOCK_MIN : 2 * b->cap;

		if (cap >= LAT_BLOCK_MAX) {
			cap = LAT_BLOCK_MAX;
			b = big_block();
		} else {
			b = malloc(sizeof(*b) + cap * sizeof(b->v[0]));
		}
		if (!b)
			return -1;
		b->next = NULL;
		b->n = 0;
		b->cap = cap;
		fn_seal(f);
		if (f->tail)
			f->tail->next = b;
		else
			f->head = b;
		f->tail = b;
		f->put = b->v;
		f->end = b->v + cap;
	}
	*f->put++ = (uint32_t)x;
	return 0;
}

static void fn_free_lat(struct lat_fn *f)
{
	struct lat_block *b, *next;

	for (b = f->head; b; b = next) {
		next = b->next;
		free_block(b);
	}
	f->head = f->tail = NULL;
	f->put = f->end = NULL;
	free(f->big);
	f->big = NULL;
	f->nbig = f->capbig = 0;
}

/*
 * The records a call of the window left: its entry unless it came from a stack context, was
 * not recorded or lies before the window; its exit when it was recorded, in the window.
 */
static unsigned call_events(const struct call *c)
{
	return !(c->flags & (CALL_NO_ENTRY | CALL_FROM_CONTEXT | CALL_CUT_BEGIN)) +
	       !!(c->flags & (CALL_EXIT | CALL_TAIL_EXIT));
}

/*
 * latency_options.events: the call's records into its function's row, *fp (NULL: none
 * left). 0, or 1 when out of memory.
 */
static int count_events(struct acct *a, const struct call *c, struct lat_fn **fp)
{
	unsigned n = call_events(c);

	*fp = NULL;
	if (!n)
		return 0; /* an unnamed frame of a stack context has none */
	*fp = fn_get(a, c->function_id);
	if (!*fp) {
		a->oom = 1;
		return 1;
	}
	(*fp)->row.events += n;
	return 0;
}

static int on_call(void *ctx, const struct call *c)
{
	struct acct *a = ctx;
	struct lat_fn *f = NULL;
	int rc, below = tracks_open(a) ? open_below(a, c) : 0;

	if (a->opt->events && count_events(a, c, &f))
		return 1;
	if (c->flags & CALL_NO_EXIT) {
		a->left.no_exit++;
		return 0;
	}
	if (c->flags & CALL_NO_ENTRY) {
		a->left.no_entry++;
		return 0;
	}
	if (c->flags & CALL_FROM_CONTEXT) {
		a->left.from_context++;
		return 0;
	}
	if (c->flags & (CALL_CUT_BEGIN | CALL_CUT_END)) {
		a->left.cut++;
		return 0;
	}
	if (a->opt->recursive_only) {
		rc = recursive_call(a, c, below, &f);
		if (rc <= 0)
			return rc < 0;
	} else if (!f) {
		f = fn_get(a, c->function_id);
		if (!f) {
			a->oom = 1;
			return 1;
		}
	}
	if (c->flags & CALL_UNWOUND)
		a->left.unwound++;
	if (keep_latencies(a) && fn_keep(f, c->total_tsc)) {
		a->oom = 1;
		return 1;
	}
	f->row.count++;
	f->sum_tsc = sat_add(f->sum_tsc, c->total_tsc);
	if (!below)
		f->outer_tsc = sat_add(f->outer_tsc, c->total_tsc);
	f->self_tsc += call_self_tsc(c); /* at most the total: no overflow first */
	if (key_before(a->rank, a->seq, c->depth, f)) {
		f->first_rank = a->rank;
		f->first_seq = a->seq;
		f->first_depth = c->depth;
	}
	return 0;
}

/* Threads of the trace, numbered as xfdr_trace_thread(), with llvm-xray's rank of each. */
struct acct_threads {
	const struct xfdr_trace *trace;
	uint64_t count;
	struct xfdr_thread_info *info;
	uint32_t *rank;
};

/*
 * llvm-xray keeps its blocks in a DenseMap keyed by (pid, thread id), filled in file order, and
 * expands the threads in bucket order before its stable sort by TSC: a thread's rank there
 * breaks ties between equal TSCs of different threads. Returns 0 or -1 (out of memory).
 */
static int thread_ranks(struct acct_threads *th)
{
	uint32_t n = (uint32_t)th->count, i;
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));

	if (!order || llvm_dmap_thread_order(th->trace, n, order)) {
		free(order);
		return -1;
	}
	for (i = 0; i < n; i++)
		th->rank[order[i]] = i;
	free(order);
	return 0;
}

/* ---- Picking percentiles: in place, O(n) on average, O(n log n) at worst ----------------- */

static void u64_sift(uint64_t *a, size_t i, size_t n)
{
	uint64_t v = a[i];
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && a[c + 1] > a[c])
			c++;
		if (a[c] <= v)
			break;
		a[i] = a[c];
		i = c;
	}
	a[i] = v;
}

static void u64_heapsort(uint64_t *a, size_t n)
{
	size_t i;
	uint64_t v;

	for (i = n / 2; i-- > 0;)
		u64_sift(a, i, n);
	for (i = n; i-- > 1;) {
		v = a[0];
		a[0] = a[i];
		a[i] = v;
		u64_sift(a, 0, i);
	}
}

/*
 * u64_select - reorder a[0, n) so that a[k] (k < n) is what it would be sorted, with nothing
 * greater before it and nothing smaller after it: quickselect (median of three, Hoare's
 * partition, which splits runs of equal keys evenly) narrowing to the side holding k, heap sort
 * of what is left when it went too deep.
 */
static void u64_select(uint64_t *a, size_t n, size_t k)
{
	unsigned depth = 0;
	size_t m;

	for (m = n; m > 1; m >>= 1)
		depth += 2;
	while (n > 16) {
		uint64_t p, x, y, z, v;
		size_t i, j;

		if (!depth--) {
			u64_heapsort(a, n);
			return;
		}
		x = a[0];
		y = a[n / 2];
		z = a[n - 1];
		p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		i = 0;
		j = n - 1;
		for (;;) {
			while (a[i] < p)
				i++;
			while (a[j] > p)
				j--;
			if (i >= j)
				break;
			v = a[i];
			a[i++] = a[j];
			a[j--] = v;
		}
		/* [0, j] <= p <= [j + 1, n): keep the side that holds k. */
		if (k <= j) {
			n = j + 1;
		} else {
			a += j + 1;
			k -= j + 1;
			n -= j + 1;
		}
	}
	for (size_t i = 1; i < n; i++) {
		uint64_t v = a[i];
		size_t j = i;

		while (j && a[j - 1] > v) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

/* The row's figures from its latencies (reordered here), in seconds when hz is not 0. */
static void fn_stats(struct lat_fn *f, uint64_t *v, uint64_t hz)
{
	unsigned __int128 sum = 0;
	uint64_t n = f->row.count, i, lo = UINT64_MAX, hi = 0;
	/* The indexes in double arithmetic, as llvm-xray computes them; k50 <= k90 <= k99. */
	uint64_t k50 = n / 2, k90 = (uint64_t)floor((double)n * 0.9),
		 k99 = (uint64_t)floor((double)n * 0.99);

	for (i = 0; i < n; i++) {
		sum += v[i];
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	/* Each pick leaves the smaller latencies below it: the next one looks only there. */
	u64_select(v, n, k99);
	if (k90 < k99)
		u64_select(v, k99, k90);
	if (k50 < k90)
		u64_select(v, k90, k50);
	f->row.min = (double)lo;
	f->row.max = (double)hi;
	f->row.med = (double)v[k50];
	f->row.p90 = (double)v[k90];
	f->row.p99 = (double)v[k99];
	f->row.sum = (double)sum;
	if (hz) {
		double d = (double)hz;

		f->row.min /= d;
		f->row.med /= d;
		f->row.p90 /= d;
		f->row.p99 /= d;
		f->row.max /= d;
		f->row.sum /= d;
	}
}

/* ---- Sorting rows as llvm-xray's std::sort does ------------------------------------------ */

struct row_order {
	enum latency_sort field;
	int descending;
};

static double row_key(const struct latency_row *f, enum latency_sort s)
{
	switch (s) {
	case LATENCY_SORT_MIN:
		return f->min;
	case LATENCY_SORT_MED:
		return f->med;
	case LATENCY_SORT_90P:
		return f->p90;
	case LATENCY_SORT_99P:
		return f->p99;
	case LATENCY_SORT_MAX:
		return f->max;
	default:
		return f->sum;
	}
}

int latency_row_cmp(const struct latency_row *l, const struct latency_row *r,
		    enum latency_sort field)
{
	int c;

	switch (field) {
	case LATENCY_SORT_FUNCID:
		c = (l->fid > r->fid) - (l->fid < r->fid);
		break;
	case LATENCY_SORT_COUNT:
		c = (l->count > r->count) - (l->count < r->count);
		break;
	case LATENCY_SORT_FUNC:
		/* Not in llvm-xray 14 (it aborts): by name, then by id, a total order. */
		c = strcmp(l->name, r->name);
		if (!c)
			c = (l->fid > r->fid) - (l->fid < r->fid);
		break;
	default:
		c = (row_key(l, field) > row_key(r, field)) -
		    (row_key(l, field) < row_key(r, field));
	}
	return c;
}

/* The comparator: "key(l) < key(r)", or ">" for descending. */
static int row_less(const struct latency_row *l, const struct latency_row *r,
		    const struct row_order *o)
{
	int c = latency_row_cmp(l, r, o->field);

	return o->descending ? c > 0 : c < 0;
}

/*
 * libstdc++'s std::sort, step for step, so that rows with equal keys end where llvm-xray puts
 * them: introsort (median of three moved to the front, unguarded partition) down to runs of
 * 16, heap sort when too deep, then one insertion sort.
 */
typedef const struct latency_row *row_t;

#define ROW_LESS(x, y) row_less((x), (y), o)

static void row_swap(row_t *a, row_t *b)
{
	row_t t = *a;

	*a = *b;
	*b = t;
}

static void row_adjust_heap(row_t *v, size_t hole, size_t len, row_t value,
			    const struct row_order *o)
{
	size_t top = hole, child = hole, parent;

	while (child < (len - 1) / 2) {
		child = 2 * (child + 1);
		if (ROW_LESS(v[child], v[child - 1]))
			child--;
		v[hole] = v[child];
		hole = child;
	}
	if ((len & 1) == 0 && child == (len - 2) / 2) {
		child = 2 * (child + 1);
		v[hole] = v[child - 1];
		hole = child - 1;
	}
	parent = (hole - 1) / 2;
	while (hole > top && ROW_LESS(v[parent], value)) {
		v[hole] = v[parent];
		hole = parent;
		parent = (hole - 1) / 2;
	}
	v[hole] = value;
}

static void row_heap_sort(row_t *v, size_t len, const struct row_order *o)
{
	size_t parent, last;
	row_t value;

	if (len < 2)
		return;
	for (parent = (len - 2) / 2;; parent--) {
		row_adjust_heap(v, parent, len, v[parent], o);
		if (!parent)
			break;
	}
	for (last = len - 1; last > 0; last--) {
		value = v[last];
		v[last] = v[0];
		row_adjust_heap(v, 0, last, value, o);
	}
}

static void row_median_to_first(row_t *res, row_t *a, row_t *b, row_t *c, const struct row_order *o)
{
	if (ROW_LESS(*a, *b)) {
		if (ROW_LESS(*b, *c))
			row_swap(res, b);
		else if (ROW_LESS(*a, *c))
			row_swap(res, c);
		else
			row_swap(res, a);
	} else if (ROW_LESS(*a, *c)) {
		row_swap(res, a);
	} else if (ROW_LESS(*b, *c)) {
		row_swap(res, c);
	} else {
		row_swap(res, b);
	}
}

static row_t *row_partition(row_t *first, row_t *last, row_t *pivot, const struct row_order *o)
{
	for (;;) {
		while (ROW_LESS(*first, *pivot))
			first++;
		last--;
		while (ROW_LESS(*pivot, *last))
			last--;
		if (!(first < last))
			return first;
		row_swap(first, last);
		first++;
	}
}

static void row_introsort(row_t *first, row_t *last, size_t depth, const struct row_order *o)
{
	while (last - first > 16) {
		row_t *mid, *cut;

		if (!depth) {
			row_heap_sort(first, (size_t)(last - first), o);
			return;
		}
		depth--;
		mid = first + (last - first) / 2;
		row_median_to_first(first, first + 1, mid, last - 1, o);
		cut = row_partition(first + 1, last, first, o);
		row_introsort(cut, last, depth, o);
		last = cut;
	}
}

/* Insert *i into the sorted run before it; guarded: may reach first. */
static void row_insert(row_t *first, row_t *i, int guarded, const struct row_order *o)
{
	row_t val = *i;
	row_t *p = i;

	if (guarded && ROW_LESS(val, *first)) {
		memmove(first + 1, first, (size_t)(i - first) * sizeof(*first));
		*first = val;
		return;
	}
	while (ROW_LESS(val, p[-1])) {
		*p = p[-1];
		p--;
	}
	*p = val;
}

static void rows_sort(row_t *v, size_t n, const struct row_order *o)
{
	size_t depth = 0, m, i;

	if (n < 2)
		return;
	for (m = n; m > 1; m >>= 1)
		depth++;
	row_introsort(v, v + n, 2 * depth, o);
	for (i = 1; i < n && i < 16; i++)
		row_insert(v, v + i, 1, o);
	for (; i < n; i++)
		row_insert(v, v + i, 0, o);
}

static int cmp_first_record(const void *x, const void *y)
{
	const struct lat_fn *a = *(const struct lat_fn *const *)x;
	const struct lat_fn *b = *(const struct lat_fn *const *)y;

	if (key_before(a->first_rank, a->first_seq, a->first_depth, b))
		return -1;
	return key_before(b->first_rank, b->first_seq, b->first_depth, a);
}

/*
 * rows_in_llvm_order - the rows as llvm-xray's DenseMap of latencies lists them: keys inserted
 * in the order of each function's first recorded latency. Returns an array of a->nfn rows
 * (the caller frees it), or NULL when out of memory.
 */
static row_t *rows_in_llvm_order(struct acct *a)
{
	uint32_t n = (uint32_t)a->nfn, i;
	const struct lat_fn **byfirst = malloc((n ? n : 1) * sizeof(*byfirst));
	row_t *rows = malloc((n ? n : 1) * sizeof(*rows));
	uint32_t *hash = malloc((n ? n : 1) * sizeof(*hash));
	uint32_t *ins = calloc(n ? n : 1, sizeof(*ins));
	uint32_t *order = calloc(n ? n : 1, sizeof(*order));

	if (!byfirst || !rows || !hash || !ins || !order)
		goto fail;
	for (i = 0; i < n; i++)
		byfirst[i] = &a->fn[i];
	qsort(byfirst, n, sizeof(*byfirst), cmp_first_record);
	for (i = 0; i < n; i++) {
		hash[i] = llvm_dmap_int_hash(a->fn[i].row.fid);
		ins[i] = (uint32_t)(byfirst[i] - a->fn);
	}
	if (llvm_dmap_order(hash, ins, n, order) < 0)
		goto fail;
	for (i = 0; i < n; i++)
		rows[i] = &a->fn[order[i]].row;
	free(byfirst);
	free(hash);
	free(ins);
	free(order);
	return rows;
fail:
	free(byfirst);
	free(rows);
	free(hash);
	free(ins);
	free(order);
	return NULL;
}

int latency_left_note(const struct latency_left *l, char *b, size_t size)
{
	size_t n = 0;
	int skipped = l->no_entry || l->no_exit || l->from_context || l->cut;

	if (!skipped && !l->unwound)
		return 0;
	if (skipped) {
		const char *sep = "";

		n += (size_t)snprintf(b + n, size - n, "not counted:");
		if (l->no_entry) {
			n += (size_t)snprintf(b + n, size - n, " %" PRIu64 " %s without an entry",
					      l->no_entry, l->no_entry == 1 ? "exit" : "exits");
			sep = ",";
		}
		if (l->no_exit) {
			n += (size_t)snprintf(b + n, size - n,
					      "%s %" PRIu64 " %s still open at the end", sep,
					      l->no_exit, l->no_exit == 1 ? "call" : "calls");
			sep = ",";
		}
		if (l->from_context) {
			n += (size_t)snprintf(
			    b + n, size - n, "%s %" PRIu64 " %s begun before the trace", sep,
			    l->from_context, l->from_context == 1 ? "call" : "calls");
			sep = ",";
		}
		if (l->cut)
			n += (size_t)snprintf(b + n, size - n,
					      "%s %" PRIu64 " %s cut at an edge of the window", sep,
					      l->cut, l->cut == 1 ? "call" : "calls");
	}
	if (l->unwound)
		snprintf(b + n, size - n,
			 "%scounted: %" PRIu64 " %s whose exit was not recorded, closed at a "
			 "caller's exit",
			 skipped ? "; " : "", l->unwound, l->unwound == 1 ? "call" : "calls");
	return 1;
}

/* ---- The walk ------------------------------------------------------------------------------ */

/* "NAME: out of memory" (+ what) into a->err. Returns -1. */
static int no_memory(struct acct *a, const char *what)
{
	a->err->offset = 0;
	snprintf(a->err->text, sizeof(a->err->text), "%s: out of memory%s", xfdr_trace_name(a->t),
		 what);
	return -1;
}

/*
 * tracks_open(): the frames event ev (just fed) opened. An entry opens one; a stack
 * context that seeded the stack (the pairer's seeded count went past seeded) opens one per
 * call it names. Returns 0, or -1 when out of memory.
 */
static int count_open(struct acct *a, struct callstack *cs, const struct xfdr_event *ev,
		      uint64_t seeded)
{
	struct callstack_stats st;
	struct xfdr_stack_context sc;
	uint32_t *p, i;

	if (ev->type == XFDR_EVENT_FUNCTION &&
	    (ev->action == XFDR_FN_ENTER || ev->action == XFDR_FN_ENTER_ARGS)) {
		p = open_frames(a, ev->function_id, 1);
		if (!p)
			return -1;
		(*p)++;
		return 0;
	}
	if (ev->type != XFDR_EVENT_CUSTOM)
		return 0;
	callstack_get_stats(cs, &st);
	if (st.contexts_seeded == seeded ||
	    xfdr_stack_context_decode(ev->payload, ev->payload_bytes, ev->big_endian, &sc, NULL))
		return 0;
	a->ctx_named = sc.id_count;
	for (i = 0; i < sc.id_count; i++) {
		p = open_frames(a, sc.ids[i], 1);
		if (!p)
			return -1;
		(*p)++;
	}
	return 0;
}

/* A buffer more walked: worker 0 tells the progress of all. */
static void walk_tell(struct acct *a)
{
	uint64_t done = __atomic_add_fetch(&a->walk->done, 1, __ATOMIC_RELAXED);

	if (!a->worker)
		progress_update(a->walk->prog, done, a->walk->total);
}

/*
 * One worker: take threads not taken yet, one at a time, and feed each one's events to this
 * worker's pairer. Sets a->status: 0, or -1 with a->err filled.
 */
static void walk_threads(struct acct *a)
{
	const struct acct_threads *th = a->walk->th;
	struct callstack *cs = callstack_create(on_call, a);
	const struct window *w = a->opt->window;
	struct callstack_stats st;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	uint64_t i, last_buf, seeded = 0;
	int rc;

	a->status = -1;
	if (!cs)
		goto oom;
	a->cs = cs;
	if (w)
		callstack_set_window(cs, w->since, w->until);
	while ((i = __atomic_fetch_add(&a->walk->next, 1, __ATOMIC_RELAXED)) < th->count) {
		const struct xfdr_thread_info *ti = &th->info[i];

		if (!window_has_thread(w, ti->pid, ti->thread_id))
			continue;
		if (xfdr_events_begin_thread(a->t, i, &it, a->err) < 0)
			goto out;
		a->rank = th->rank[i];
		a->thread_serial = i + 1;
		a->ctx_named = 0;
		a->seq = 0;
		last_buf = UINT64_MAX;
		while ((rc = xfdr_events_next_call(&it, &ev, a->err)) == 1) {
			if (ev.buffer_index != last_buf) {
				last_buf = ev.buffer_index;
				walk_tell(a);
			}
			a->seq++;
			if (tracks_open(a)) {
				callstack_get_stats(cs, &st);
				seeded = st.contexts_seeded;
			}
			rc = callstack_feed(cs, &ev);
			if (rc == -ENOMEM)
				goto oom;
			if (rc)
				goto cancelled;
			if (tracks_open(a) && count_open(a, cs, &ev, seeded))
				goto oom;
			if (w && ev.tsc > w->until)
				break; /* the pairer takes nothing more of the thread */
		}
		if (rc < 0)
			goto out;
		if (callstack_finish_thread(cs, ti->pid, ti->thread_id))
			goto cancelled;
	}
	a->status = 0;
	goto out;
cancelled:
	if (!a->oom)
		abort(); /* on_call stops the walk only when out of memory */
oom:
	no_memory(a, "");
out:
	callstack_destroy(cs);
	a->cs = NULL;
	free(a->open);
	a->open = NULL;
	a->nopen = a->usedopen = 0;
}

static void *walk_worker(void *arg)
{
	walk_threads(arg);
	return NULL;
}

/* Workers for the walk: one per CPU online, at most one per thread walked. */
static unsigned walk_jobs(const struct acct *a, const struct acct_threads *th)
{
	uint64_t taken = 0, i;

	for (i = 0; i < th->count; i++)
		taken += window_has_thread(a->opt->window, th->info[i].pid, th->info[i].thread_id);
	return jobs_for(taken);
}

static void free_fns(struct acct *a)
{
	size_t i;

	for (i = 0; i < a->nfn; i++)
		fn_free_lat(&a->fn[i]);
	free(a->fn);
	free(a->slot);
	a->fn = NULL;
	a->slot = NULL;
	a->nfn = a->capfn = a->nslot = 0;
}

/* Worker o's table into a's (o keeps nothing). 0, or -1 with a->err filled. */
static int merge(struct acct *a, struct acct *o)
{
	size_t i;

	a->left.no_entry += o->left.no_entry;
	a->left.no_exit += o->left.no_exit;
	a->left.from_context += o->left.from_context;
	a->left.unwound += o->left.unwound;
	a->left.cut += o->left.cut;
	for (i = 0; i < o->nfn; i++) {
		struct lat_fn *f = &o->fn[i], *g = fn_get(a, f->row.fid);

		if (!g)
			return no_memory(a, "");
		if (f->head) {
			fn_seal(g);
			if (g->tail)
				g->tail->next = f->head;
			else
				g->head = f->head;
			g->tail = f->tail;
			g->put = f->put;
			g->end = f->end;
			f->head = f->tail = NULL;
			f->put = f->end = NULL;
		}
		while (f->nbig)
			if (fn_keep_big(g, f->big[--f->nbig]))
				return no_memory(a, "");
		g->row.count += f->row.count;
		g->row.events += f->row.events;
		g->sum_tsc = sat_add(g->sum_tsc, f->sum_tsc);
		g->outer_tsc = sat_add(g->outer_tsc, f->outer_tsc);
		g->self_tsc += f->self_tsc;
		if (key_before(f->first_rank, f->first_seq, f->first_depth, g)) {
			g->first_rank = f->first_rank;
			g->first_seq = f->first_seq;
			g->first_depth = f->first_depth;
		}
	}
	return 0;
}

/*
 * The walk: the chosen threads' events fed by workers, then their tables merged into a's.
 * keep: keep every latency. Returns 0, or -1 with a->err filled.
 */
static int walk(struct acct *a, const struct acct_threads *th, const struct progress *prog,
		uint64_t buffers, int keep)
{
	struct acct_walk wk = {.th = th, .prog = prog, .total = buffers, .keep = keep};
	unsigned jobs = walk_jobs(a, th), ran, k;
	struct acct *w = jobs > 1 ? calloc(jobs - 1, sizeof(*w)) : NULL;
	void *arg[JOBS_MAX] = {a};
	int status;

	a->walk = &wk;
	a->worker = 0;
	for (k = 0; w && k + 1 < jobs; k++) {
		w[k].t = a->t;
		w[k].opt = a->opt;
		w[k].err = &w[k].own_err;
		w[k].walk = &wk;
		w[k].worker = k + 1;
		arg[k + 1] = &w[k];
	}
	ran = jobs_run(walk_worker, arg, w ? jobs : 1);
	status = a->status;
	for (k = 0; k + 1 < ran; k++) {
		if (!status && w[k].status) {
			*a->err = w[k].own_err;
			status = -1;
		}
		if (!status)
			status = merge(a, &w[k]);
		free_fns(&w[k]);
	}
	free(w);
	a->walk = NULL;
	return status;
}

/* Threads of the trace, and the buffers of those the window takes. 0, or -1 with a->err. */
static int load_threads(struct acct *a, struct acct_threads *th, uint64_t *buffers)
{
	uint64_t i;

	if (xfdr_trace_threads(a->t, &th->count, a->err) < 0)
		return -1;
	th->trace = a->t;
	th->info = calloc(th->count ? th->count : 1, sizeof(*th->info));
	th->rank = calloc(th->count ? th->count : 1, sizeof(*th->rank));
	if (!th->info || !th->rank || th->count > UINT32_MAX)
		goto oom;
	*buffers = 0;
	for (i = 0; i < th->count; i++) {
		xfdr_trace_thread(a->t, i, &th->info[i]);
		if (window_has_thread(a->opt->window, th->info[i].pid, th->info[i].thread_id))
			*buffers += th->info[i].buffers;
	}
	if (thread_ranks(th) < 0)
		goto oom;
	return 0;
oom:
	return no_memory(a, "");
}

/*
 * The debug column of row: "FILE:LINE:COLUMN" from the DWARF of its function's module, as
 * llvm-xray's symbolizer words it (the file's base name). 0, or -1 when out of memory.
 */
static int row_debug(struct acct *a, const struct xfdr_names *names, struct latency_row *row)
{
	const char *module, *file, *base;
	uint64_t vaddr;
	int line, col;
	size_t n;
	char *d;

	if (!a->opt->sources || !xfdr_names_function_site(names, row->fid, &module, &vaddr) ||
	    !srcline_lookup(a->opt->sources, module, vaddr, &file, &line, &col))
		return 0;
	base = strrchr(file, '/');
	base = base ? base + 1 : file;
	n = strlen(base) + 2 * 12 + 3;
	d = malloc(n);
	if (!d)
		return -1;
	snprintf(d, n, "%s:%d:%d", base, line, col);
	row->debug = d;
	return 0;
}

/* ---- Each row's figures, by workers --------------------------------------------------------- */

/*
 * f's latencies in one array of 8 bytes each: copied into *scratch (of *n, grown as needed).
 * NULL when out of memory.
 */
static uint64_t *fn_latencies(struct lat_fn *f, uint64_t **scratch, size_t *n)
{
	const struct lat_block *b;
	uint64_t *v;
	size_t at = 0, k;

	fn_seal(f);
	if (f->row.count > *n) {
		if (f->row.count > SIZE_MAX / sizeof(*v))
			return NULL;
		free(*scratch);
		*scratch = malloc((size_t)f->row.count * sizeof(*v));
		*n = *scratch ? (size_t)f->row.count : 0;
		if (!*scratch)
			return NULL;
	}
	v = *scratch;
	for (b = f->head; b; b = b->next)
		for (k = 0; k < b->n; k++)
			v[at++] = b->v[k];
	if (f->nbig)
		memcpy(v + at, f->big, f->nbig * sizeof(*v));
	return v;
}

struct figures {
	struct acct *a;
	const struct progress *prog; /* told by worker 0 only */
	uint64_t hz;
	uint64_t next, done; /* the next function to take, and functions done (atomic) */
	int failed;	     /* a worker ran out of memory (atomic) */
};

struct figures_worker {
	struct figures *fg;
	unsigned worker;
};

/* Take functions not taken yet and give each its figures; its latencies are freed. */
static void *figures_worker(void *arg)
{
	const struct figures_worker *me = arg;
	struct figures *fg = me->fg;
	uint64_t *scratch = NULL, *v, i, done;
	size_t nscratch = 0;

	while ((i = __atomic_fetch_add(&fg->next, 1, __ATOMIC_RELAXED)) < fg->a->nfn) {
		struct lat_fn *f = &fg->a->fn[i];

		/* A row of latency_options.events may have no counted call: no figures. */
		v = f->row.count ? fn_latencies(f, &scratch, &nscratch) : NULL;
		if (f->row.count && !v) {
			__atomic_store_n(&fg->failed, 1, __ATOMIC_RELAXED);
			break;
		}
		if (f->row.count)
			fn_stats(f, v, fg->hz);
		fn_free_lat(f);
		done = __atomic_add_fetch(&fg->done, 1, __ATOMIC_RELAXED);
		if (!me->worker)
			progress_update(fg->prog, done, fg->a->nfn);
	}
	free(scratch);
	return NULL;
}

/* Every row's figures from its latencies, which are freed. 0, or -1 with a->err filled. */
static int figures(struct acct *a, const struct progress *prog)
{
	struct figures fg = {.a = a, .prog = prog, .hz = xfdr_trace_header(a->t)->cycle_frequency};
	struct figures_worker w[JOBS_MAX];
	void *arg[JOBS_MAX];
	unsigned jobs = jobs_for(a->nfn), k;

	for (k = 0; k < jobs; k++) {
		w[k] = (struct figures_worker){&fg, k};
		arg[k] = &w[k];
	}
	jobs_run(figures_worker, arg, jobs);
	return fg.failed ? no_memory(a, "") : 0;
}

/* The walk, then every row's figures and names. Returns as latency_table_build(). */
static int build_table(struct acct *a, const struct xfdr_names *names, const struct progress *prog)
{
	struct acct_threads th = {NULL, 0, NULL, NULL};
	uint64_t buffers = 0;
	size_t i;
	int status;

	status = load_threads(a, &th, &buffers);
	if (status)
		goto out;
	progress_phase(prog, "accounting");
	status = walk(a, &th, prog, buffers, 1);
	if (status)
		goto out;
	progress_phase(prog, "sorting");
	status = figures(a, prog);
	if (status)
		goto out;
	for (i = 0; i < a->nfn; i++) {
		struct lat_fn *f = &a->fn[i];
		const char *name = xfdr_names_get(names, f->row.fid);
		char idname[16];

		if (!name) {
			snprintf(idname, sizeof(idname), "#%u", f->row.fid);
			name = idname;
		}
		f->row.name = strdup(name);
		if (!f->row.name || row_debug(a, names, &f->row)) {
			status = no_memory(a, "");
			goto out;
		}
	}
out:
	free(th.info);
	free(th.rank);
	return status;
}

/* ---- Totals --------------------------------------------------------------------------------- */

/* qsort: more self time first, then lower id (ids are unique: a total order). */
static int self_cmp(const void *pl, const void *pr)
{
	const struct latency_total *l = pl, *r = pr;

	if (l->self_tsc != r->self_tsc)
		return l->self_tsc > r->self_tsc ? -1 : 1;
	return (l->fid > r->fid) - (l->fid < r->fid);
}

int latency_totals(struct xfdr_trace *t, const struct xfdr_names *names, const struct window *w,
		   struct latency_total **out, size_t *n, struct xfdr_error *err)
{
	struct latency_options opt;
	struct acct a;
	struct acct_threads th = {NULL, 0, NULL, NULL};
	struct latency_total *v = NULL;
	uint64_t buffers;
	size_t i;
	int status;

	*out = NULL;
	*n = 0;
	memset(&opt, 0, sizeof(opt));
	opt.window = w;
	opt.events = 1;
	memset(&a, 0, sizeof(a));
	a.t = t;
	a.opt = &opt;
	a.err = err;
	status = load_threads(&a, &th, &buffers);
	if (status)
		goto out;
	status = walk(&a, &th, NULL, buffers, 0);
	if (status)
		goto out;
	v = malloc((a.nfn ? a.nfn : 1) * sizeof(*v));
	if (!v) {
		status = no_memory(&a, "");
		goto out;
	}
	for (i = 0; i < a.nfn; i++) {
		v[i].fid = a.fn[i].row.fid;
		v[i].count = a.fn[i].row.count;
		v[i].sum_tsc = a.fn[i].sum_tsc;
		v[i].outer_tsc = a.fn[i].outer_tsc;
		v[i].events = a.fn[i].row.events;
		v[i].self_tsc = a.fn[i].self_tsc;
		v[i].name = xfdr_names_get(names, v[i].fid);
	}
	qsort(v, a.nfn, sizeof(*v), self_cmp);
	*out = v;
	*n = a.nfn;
	v = NULL;
out:
	free(v);
	free(th.info);
	free(th.rank);
	free_fns(&a);
	return status;
}

/* ---- The table ------------------------------------------------------------------------------ */

struct latency_table {
	struct acct a;
	struct latency_options opt;
	row_t *rows; /* NULL until latency_table_sort() */
};

int latency_table_build(struct xfdr_trace *t, const struct xfdr_names *names,
			const struct latency_options *opt, const struct progress *prog,
			struct latency_table **out, struct xfdr_error *err)
{
	struct latency_table *lt = calloc(1, sizeof(*lt));
	int rc;

	*out = NULL;
	if (!lt) {
		err->offset = 0;
		snprintf(err->text, sizeof(err->text), "%s: out of memory", xfdr_trace_name(t));
		return -1;
	}
	if (opt)
		lt->opt = *opt;
	lt->a.t = t;
	lt->a.opt = &lt->opt;
	lt->a.err = err;
	rc = build_table(&lt->a, names, prog);
	if (rc) {
		latency_table_free(lt);
		return rc;
	}
	*out = lt;
	return 0;
}

int latency_table_sort(struct latency_table *lt, enum latency_sort field, int descending,
		       struct xfdr_error *err)
{
	struct row_order ro = {field, descending};

	/* Always from llvm-xray's bucket order: its std::sort is not stable. */
	free(lt->rows);
	lt->a.err = err;
	lt->rows = rows_in_llvm_order(&lt->a);
	if (!lt->rows)
		return no_memory(&lt->a, "");
	rows_sort(lt->rows, lt->a.nfn, &ro);
	return 0;
}

size_t latency_table_rows(const struct latency_table *lt, const struct latency_row *const **rows)
{
	*rows = lt->rows;
	return lt->a.nfn;
}

const struct latency_left *latency_table_left(const struct latency_table *lt)
{
	return &lt->a.left;
}

void latency_table_free(struct latency_table *lt)
{
	size_t i;

	if (!lt)
		return;
	for (i = 0; i < lt->a.nfn; i++) {
		free((char *)lt->a.fn[i].row.name);
		free((char *)lt->a.fn[i].row.debug);
	}
	free_fns(&lt->a);
	free(lt->rows);
	free(lt);
}
