/*
 * reader/cli/account.c - `xfdr account`: a per-function latency table, as `llvm-xray account`.
 *
 * Where llvm-xray (LLVM 14) can account a file, the output is its output byte for byte, text
 * and CSV, for every --sort, --sortorder and --top. That fixes these rules:
 *
 *  - A call's latency is exit TSC - entry TSC; a function's row gives the count, the minimum,
 *    the elements at n / 2, floor(n * 0.9) and floor(n * 0.99) of its sorted latencies (the
 *    nth_element picks, no interpolation), the maximum and the sum, each divided by the
 *    header's cycle_frequency (raw ticks when it is 0). Every call counts, recursive ones each
 *    on its own.
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
 *  - Text: "%9s %10s [...]" columns with "%.6f" seconds; CSV: "%.6e", as raw_ostream prints
 *    a double. The debug-info column is "(unknown)", what llvm-xray prints without an
 *    instrumentation map: the .map sidecar names functions but has no file:line. The name is
 *    the sidecar's, else "#ID" as in llvm-xray. In CSV a '"' inside a name is doubled (RFC
 *    4180); llvm-xray writes it as is, but its "#ID" names never hold one.
 *
 * Pairing is analysis/callstack.h's, thread by thread in each thread's recording order,
 * with one stack per thread, as llvm-xray. llvm-xray fails (it does not skip) on a record whose
 * TSC is below the very first record's: in a multi-threaded file every thread after the first
 * that began earlier, in any thread whose clock steps back. xfdr takes them all (the pairer's
 * latency is 0 where a thread's clock went backwards; llvm-xray's would be |delta|).
 *
 * What counts: calls whose entry and exit were both recorded (Exit or Tail_Exit), and calls
 * whose exit is deduced from a caller's exit (CALL_UNWOUND: what llvm-xray counts with
 * -deduce-sibling-calls; it fails without it). Not counted: exits without an entry, calls still
 * open at the end of the trace, calls begun before the trace (their frame came from a stack
 * context, so their true entry is unknown). All of these, and the deduced ones, are told in one
 * summary line on stderr; when there is nothing to tell, stderr stays empty.
 *
 * Memory and time: two passes over the events. The first counts each function's calls, the
 * second stores every counted latency, 8 bytes each, in one array of exactly that size; per
 * function about 100 bytes, per thread the pairer's stack; nothing per record. Then each
 * function's latencies are sorted in place (introsort, no extra memory). Time: decoding twice
 * plus the sorts.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader/cli/account.h"
#include "reader/cli/cli.h"
#include "analysis/llvm_dmap.h"
#include "analysis/callstack.h"

enum sort_field {
	SORT_FUNCID,
	SORT_COUNT,
	SORT_MIN,
	SORT_MED,
	SORT_90P,
	SORT_99P,
	SORT_MAX,
	SORT_SUM,
	SORT_FUNC,
};

static const char *const sort_names[] = {
    [SORT_FUNCID] = "funcid", [SORT_COUNT] = "count", [SORT_MIN] = "min",
    [SORT_MED] = "med",	      [SORT_90P] = "90p",     [SORT_99P] = "99p",
    [SORT_MAX] = "max",	      [SORT_SUM] = "sum",     [SORT_FUNC] = "func",
};

struct account_opts {
	const char *input;
	const char *output;
	const char *map;
	int use_map;
	int csv;
	enum sort_field sort;
	int descending;
	long top; /* <= 0: every row, as llvm-xray's default -1 */
	int thread_set;
	uint32_t thread;
	int recursive_only;
};

/* One function of the table. */
struct acct_fn {
	uint32_t fid;
	uint64_t count; /* counted calls */
	uint64_t first; /* its latencies start at this index of the one array */
	uint64_t fill;	/* pass 2: latencies stored so far */
	/* Where llvm-xray records its first latency (see the top of the file). */
	uint64_t first_seq;
	uint32_t first_rank, first_depth;
	uint64_t
	    rec_mark; /* --recursive-calls-only: thread_serial when a nested call of it ended */
	double min, med, p90, p99, max, sum;
	char *name;	   /* "#ID" when the sidecar does not name it */
	uint64_t sum_tsc;  /* pass 1: the counted latencies' total, for account_totals() */
	uint64_t self_tsc; /* pass 1: their time outside recorded callees, likewise */
};

/* What was left out or deduced, for the summary line. */
struct acct_left {
	uint64_t no_entry, no_exit, from_context, unwound;
};

struct acct {
	struct xfdr_trace *t;
	const struct account_opts *opt;
	struct acct_fn *fn;
	size_t nfn, capfn;
	uint32_t *slot; /* function id hash: index + 1, 0 empty */
	size_t nslot;
	uint64_t *lat; /* pass 2: every counted latency */
	int pass;
	struct callstack *cs;
	uint64_t thread_serial; /* of the thread being fed, from 1 in each pass */
	/* The event being fed. */
	uint64_t seq;
	uint32_t rank;
	struct acct_left left;
	int oom;
	/*
	 * --recursive-calls-only: how many frames of each function are open on the thread being
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
		b = fid_hash(a->fn[i].fid) & (n - 1);
		while (s[b])
			b = (b + 1) & (n - 1);
		s[b] = (uint32_t)i + 1;
	}
	free(a->slot);
	a->slot = s;
	a->nslot = n;
	return 0;
}

static struct acct_fn *fn_find(struct acct *a, uint32_t fid)
{
	size_t b;

	if (!a->nslot)
		return NULL;
	for (b = fid_hash(fid) & (a->nslot - 1); a->slot[b]; b = (b + 1) & (a->nslot - 1)) {
		if (a->fn[a->slot[b] - 1].fid == fid)
			return &a->fn[a->slot[b] - 1];
	}
	return NULL;
}

/* The function fid, added if new. NULL when out of memory. */
static struct acct_fn *fn_get(struct acct *a, uint32_t fid)
{
	size_t b = 0;

	if (a->nslot) {
		for (b = fid_hash(fid) & (a->nslot - 1); a->slot[b]; b = (b + 1) & (a->nslot - 1)) {
			if (a->fn[a->slot[b] - 1].fid == fid)
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
		struct acct_fn *v = realloc(a->fn, cap * sizeof(*v));

		if (!v)
			return NULL;
		a->fn = v;
		a->capfn = cap;
	}
	memset(&a->fn[a->nfn], 0, sizeof(a->fn[0]));
	a->fn[a->nfn].fid = fid;
	a->fn[a->nfn].first_seq = UINT64_MAX;
	a->fn[a->nfn].first_rank = UINT32_MAX;
	a->fn[a->nfn].first_depth = UINT32_MAX;
	a->slot[b] = (uint32_t)++a->nfn;
	return &a->fn[a->nfn - 1];
}

/* ---- Pairing ------------------------------------------------------------------------------- */

static int key_before(uint32_t rank, uint64_t seq, uint32_t depth, const struct acct_fn *f)
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
static int recursive_call(struct acct *a, const struct call *c, int below, struct acct_fn **fp)
{
	struct acct_fn *f;

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

static int on_call(void *ctx, const struct call *c)
{
	struct acct *a = ctx;
	struct acct_fn *f = NULL;
	int rc, below = a->opt->recursive_only ? open_below(a, c) : 0;

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
	if (a->opt->recursive_only) {
		rc = recursive_call(a, c, below, &f);
		if (rc <= 0)
			return rc < 0;
	} else {
		f = fn_get(a, c->function_id);
		if (!f) {
			a->oom = 1;
			return 1;
		}
	}
	if (c->flags & CALL_UNWOUND)
		a->left.unwound++;
	if (a->pass == 1) {
		f->count++;
		f->sum_tsc =
		    c->total_tsc > UINT64_MAX - f->sum_tsc ? UINT64_MAX : f->sum_tsc + c->total_tsc;
		f->self_tsc += call_self_tsc(c); /* at most the total: no overflow first */
		if (key_before(a->rank, a->seq, c->depth, f)) {
			f->first_rank = a->rank;
			f->first_seq = a->seq;
			f->first_depth = c->depth;
		}
		return 0;
	}
	/* The same trace gives the same calls: pass 1 sized the slot exactly. */
	if (f->fill >= f->count)
		abort();
	a->lat[f->first + f->fill++] = c->total_tsc;
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

/* ---- Sorting latencies: in place, O(n log n) worst case --------------------------------- */

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

static void u64_sort_rec(uint64_t *a, size_t n, unsigned depth)
{
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
		/* Hoare partition: equal keys split evenly, so many ties stay fast. */
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
		/* [0, j] <= p <= [j + 1, n): recurse into the smaller side. */
		if (j + 1 < n - j - 1) {
			u64_sort_rec(a, j + 1, depth);
			a += j + 1;
			n -= j + 1;
		} else {
			u64_sort_rec(a + j + 1, n - j - 1, depth);
			n = j + 1;
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

static void u64_sort(uint64_t *a, size_t n)
{
	unsigned depth = 0;
	size_t m;

	for (m = n; m > 1; m >>= 1)
		depth += 2;
	u64_sort_rec(a, n, depth);
}

/* The row's figures from its latencies (sorted here), in seconds when hz is not 0. */
static void fn_stats(struct acct_fn *f, uint64_t *v, uint64_t hz)
{
	unsigned __int128 sum = 0;
	uint64_t n = f->count, i;

	u64_sort(v, n);
	for (i = 0; i < n; i++)
		sum += v[i];
	f->min = (double)v[0];
	f->max = (double)v[n - 1];
	f->med = (double)v[n / 2];
	/* The index in double arithmetic, as llvm-xray computes it. */
	f->p90 = (double)v[(uint64_t)floor((double)n * 0.9)];
	f->p99 = (double)v[(uint64_t)floor((double)n * 0.99)];
	f->sum = (double)sum;
	if (hz) {
		double d = (double)hz;

		f->min /= d;
		f->med /= d;
		f->p90 /= d;
		f->p99 /= d;
		f->max /= d;
		f->sum /= d;
	}
}

/* ---- Sorting rows as llvm-xray's std::sort does ------------------------------------------ */

struct row_order {
	enum sort_field field;
	int descending;
};

static double row_key(const struct acct_fn *f, enum sort_field s)
{
	switch (s) {
	case SORT_MIN:
		return f->min;
	case SORT_MED:
		return f->med;
	case SORT_90P:
		return f->p90;
	case SORT_99P:
		return f->p99;
	case SORT_MAX:
		return f->max;
	default:
		return f->sum;
	}
}

/* The comparator: "key(l) < key(r)", or ">" for descending. */
static int row_less(const struct acct_fn *l, const struct acct_fn *r, const struct row_order *o)
{
	int c;

	switch (o->field) {
	case SORT_FUNCID:
		c = (l->fid > r->fid) - (l->fid < r->fid);
		break;
	case SORT_COUNT:
		c = (l->count > r->count) - (l->count < r->count);
		break;
	case SORT_FUNC:
		/* Not in llvm-xray 14 (it aborts): by name, then by id, a total order. */
		c = strcmp(l->name, r->name);
		if (!c)
			c = (l->fid > r->fid) - (l->fid < r->fid);
		break;
	default:
		c = (row_key(l, o->field) > row_key(r, o->field)) -
		    (row_key(l, o->field) < row_key(r, o->field));
	}
	return o->descending ? c > 0 : c < 0;
}

/*
 * libstdc++'s std::sort, step for step, so that rows with equal keys end where llvm-xray puts
 * them: introsort (median of three moved to the front, unguarded partition) down to runs of
 * 16, heap sort when too deep, then one insertion sort.
 */
typedef struct acct_fn *row_t;

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
	const struct acct_fn *a = *(const struct acct_fn *const *)x;
	const struct acct_fn *b = *(const struct acct_fn *const *)y;

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
	row_t *byfirst = malloc((n ? n : 1) * sizeof(*byfirst));
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
		hash[i] = llvm_dmap_int_hash(a->fn[i].fid);
		ins[i] = (uint32_t)(byfirst[i] - a->fn);
	}
	if (llvm_dmap_order(hash, ins, n, order) < 0)
		goto fail;
	for (i = 0; i < n; i++)
		rows[i] = &a->fn[order[i]];
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

/* ---- Output ---------------------------------------------------------------------------------- */

static void put_double(struct cli_out *o, const char *fmt, double v)
{
	char b[64];

	snprintf(b, sizeof(b), fmt, v);
	cli_puts(o, b);
}

static void put_text(struct cli_out *o, row_t *rows, size_t shown, size_t total)
{
	char b[512];
	size_t i;

	cli_printf(o, "Functions with latencies: %zu\n", total);
	snprintf(b, sizeof(b), "%9s %10s [%9s, %9s, %9s, %9s, %9s] %9s  %-12s\n", "funcid", "count",
		 "min", "med", "90p", "99p", "max", "sum", "function");
	cli_puts(o, b);
	for (i = 0; i < shown && !o->err; i++) {
		const struct acct_fn *f = rows[i];

		snprintf(b, sizeof(b),
			 "%9d %10" PRIu64 " [%9.6f, %9.6f, %9.6f, %9.6f, %9.6f] %9.6f  (unknown): ",
			 (int32_t)f->fid, f->count, f->min, f->med, f->p90, f->p99, f->max, f->sum);
		cli_puts(o, b);
		cli_puts(o, f->name);
		cli_putc(o, '\n');
	}
}

static void put_csv(struct cli_out *o, row_t *rows, size_t shown)
{
	size_t i;
	const char *p;

	cli_puts(o, "funcid,count,min,median,90%ile,99%ile,max,sum,debug,function\n");
	for (i = 0; i < shown && !o->err; i++) {
		const struct acct_fn *f = rows[i];

		cli_printf(o, "%d,%" PRIu64 ",", (int32_t)f->fid, f->count);
		put_double(o, "%.6e,", f->min);
		put_double(o, "%.6e,", f->med);
		put_double(o, "%.6e,", f->p90);
		put_double(o, "%.6e,", f->p99);
		put_double(o, "%.6e,", f->max);
		put_double(o, "%.6e", f->sum);
		cli_puts(o, ",\"(unknown)\",\"");
		for (p = f->name; *p; p++) {
			if (*p == '"')
				cli_putc(o, '"');
			cli_putc(o, *p);
		}
		cli_puts(o, "\"\n");
	}
}

/* The one summary line of what was not counted or was deduced; nothing when all was clean. */
static void put_summary(const struct acct_left *l)
{
	char b[512];
	size_t n = 0;
	int skipped = l->no_entry || l->no_exit || l->from_context;

	if (!skipped && !l->unwound)
		return;
	if (skipped) {
		const char *sep = "";

		n += (size_t)snprintf(b + n, sizeof(b) - n, "not counted:");
		if (l->no_entry) {
			n += (size_t)snprintf(b + n, sizeof(b) - n,
					      " %" PRIu64 " %s without an entry", l->no_entry,
					      l->no_entry == 1 ? "exit" : "exits");
			sep = ",";
		}
		if (l->no_exit) {
			n += (size_t)snprintf(b + n, sizeof(b) - n,
					      "%s %" PRIu64 " %s still open at the end", sep,
					      l->no_exit, l->no_exit == 1 ? "call" : "calls");
			sep = ",";
		}
		if (l->from_context)
			n += (size_t)snprintf(
			    b + n, sizeof(b) - n, "%s %" PRIu64 " %s begun before the trace", sep,
			    l->from_context, l->from_context == 1 ? "call" : "calls");
	}
	if (l->unwound)
		snprintf(b + n, sizeof(b) - n,
			 "%scounted: %" PRIu64 " %s whose exit was not recorded, closed at a "
			 "caller's exit",
			 skipped ? "; " : "", l->unwound, l->unwound == 1 ? "call" : "calls");
	cli_error("%s", b);
}

/* ---- The walk ------------------------------------------------------------------------------ */

struct walk_progress {
	struct cli_progress *prog;
	uint64_t done, total;
};

/*
 * --recursive-calls-only: the frames event ev (just fed) opened. An entry opens one; a stack
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

/*
 * One pass: feed the chosen threads' events, thread by thread, to a fresh pairer. Returns
 * CLI_OK, or CLI_FAIL after reporting.
 */
static int walk(struct acct *a, const struct acct_threads *th, struct walk_progress *wp)
{
	struct callstack *cs = callstack_create(on_call, a);
	struct callstack_stats st;
	struct xfdr_event_iter it;
	struct xfdr_error err;
	struct xfdr_event ev;
	uint64_t i, last_buf, seeded = 0;
	int rc, status = CLI_FAIL;

	if (!cs)
		goto oom;
	a->cs = cs;
	a->thread_serial = 0;
	for (i = 0; i < a->nfn; i++)
		a->fn[i].rec_mark = 0;
	memset(&a->left, 0, sizeof(a->left));
	for (i = 0; i < th->count; i++) {
		const struct xfdr_thread_info *ti = &th->info[i];

		if (a->opt->thread_set && ti->thread_id != a->opt->thread)
			continue;
		if (xfdr_events_begin_thread(a->t, i, &it, &err) < 0) {
			cli_error("%s", err.text);
			goto out;
		}
		a->rank = th->rank[i];
		a->thread_serial++;
		a->ctx_named = 0;
		a->seq = 0;
		last_buf = UINT64_MAX;
		while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
			if (ev.buffer_index != last_buf) {
				last_buf = ev.buffer_index;
				cli_progress_update(wp->prog, ++wp->done, wp->total);
			}
			a->seq++;
			if (a->opt->recursive_only) {
				callstack_get_stats(cs, &st);
				seeded = st.contexts_seeded;
			}
			rc = callstack_feed(cs, &ev);
			if (rc == -ENOMEM)
				goto oom;
			if (rc)
				goto cancelled;
			if (a->opt->recursive_only && count_open(a, cs, &ev, seeded))
				goto oom;
		}
		if (rc < 0) {
			cli_error("%s", err.text);
			goto out;
		}
		if (callstack_finish_thread(cs, ti->pid, ti->thread_id))
			goto cancelled;
	}
	status = CLI_OK;
	goto out;
cancelled:
	if (!a->oom)
		abort(); /* on_call stops the walk only when out of memory */
oom:
	cli_error("%s: out of memory", xfdr_trace_name(a->t));
out:
	callstack_destroy(cs);
	a->cs = NULL;
	free(a->open);
	a->open = NULL;
	a->nopen = a->usedopen = 0;
	return status;
}

/* ---- The verb ------------------------------------------------------------------------------ */

static void account_help(void)
{
	fputs(
	    "usage: xfdr account [-s FIELD] [-r asc|dsc] [-p N] [-f text|csv] [-o OUT]\n"
	    "                    [--thread=TID] [--map MAP | --no-map] FILE\n"
	    "\n"
	    "Print a latency table of the calls in a trace, one row per function: the number of\n"
	    "calls, the minimum, median, 90th and 99th percentile, maximum and total time in\n"
	    "seconds (ticks / the header's cycle frequency). The same table as `llvm-xray\n"
	    "account FILE`, byte for byte wherever llvm-xray can account the file; unlike it,\n"
	    "xfdr pairs each thread alone, so any number of threads and buffers works.\n"
	    "\n"
	    "  -s, --sort=FIELD       sort rows by funcid (default), count, min, med, 90p, 99p,\n"
	    "                         max, sum or func (the function's name, then its id)\n"
	    "  -r, --sortorder=ORDER  asc (default) or dsc\n"
	    "  -p, --top=N            print only the first N rows (N <= 0: all, the default)\n"
	    "  -f, --format=FMT       text (default) or csv\n"
	    "  -o, --output=OUT       write to OUT instead of standard output ('-')\n"
	    "      --thread=TID       only the calls of the thread whose NewBuffer records carry\n"
	    "                         TID (the id `xfdr dump` shows; the .map sidecar maps it\n"
	    "                         to the kernel tid); a TID not in FILE is a usage error\n"
	    "      --map=MAP          name functions from MAP, a .map sidecar the runtime wrote\n"
	    "                         (default: FILE.map when it exists); unnamed ids as '#ID'\n"
	    "      --no-map           print '#ID' for every function, as llvm-xray without an\n"
	    "                         instrumentation map\n"
	    "      --recursive-calls-only\n"
	    "                         count only the calls of a function made while it was\n"
	    "                         recursing (as llvm-xray; costs O(stack depth) per call)\n"
	    "  -d, --deduce-sibling-calls, -k, --keep-going\n"
	    "                         accepted for llvm-xray's sake: xfdr always does both\n"
	    "  -h, --help             show this help\n"
	    "\n"
	    "What counts: every call whose entry and exit are in the trace, and every call whose\n"
	    "exit was not recorded but whose caller's exit was (closed there, as llvm-xray\n"
	    "-deduce-sibling-calls does). A flight recorder's trace also holds exits whose entry\n"
	    "was lost, calls still open at its end and calls begun before its first buffer (from\n"
	    "a stack context); these are not counted. Both kinds are told in one line on stderr,\n"
	    "e.g. \"xfdr account: not counted: 12 exits without an entry, 3 calls still open at\n"
	    "the end\"; stderr stays empty when every call was complete.\n"
	    "\n"
	    "The debug-info column is always '(unknown)': the .map sidecar has no file:line.\n"
	    "Memory: 8 bytes per counted call (exact percentiles need every latency), nothing\n"
	    "per record; the file is read twice.\n"
	    "Options may also be written with one dash, as llvm-xray accepts them (-sort=count).\n"
	    "Exit status: 0 printed, 1 invalid trace or write error, 2 usage error, unknown\n"
	    "--thread or unreadable FILE.\n",
	    stdout);
}

static int parse_account_opts(int argc, char **argv, struct account_opts *o)
{
	/* The one-letter names as long options too, so that llvm-xray's -s=count works. */
	static const struct option longopts[] = {
	    {"sort", required_argument, NULL, 's'},
	    {"s", required_argument, NULL, 's'},
	    {"sortorder", required_argument, NULL, 'r'},
	    {"r", required_argument, NULL, 'r'},
	    {"top", required_argument, NULL, 'p'},
	    {"p", required_argument, NULL, 'p'},
	    {"format", required_argument, NULL, 'f'},
	    {"f", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"o", required_argument, NULL, 'o'},
	    {"thread", required_argument, NULL, 'T'},
	    {"map", required_argument, NULL, 'm'},
	    {"no-map", no_argument, NULL, 'M'},
	    {"deduce-sibling-calls", no_argument, NULL, 'd'},
	    {"keep-going", no_argument, NULL, 'k'},
	    {"recursive-calls-only", no_argument, NULL, 'R'},
	    {"instr_map", required_argument, NULL, 'I'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char *end;
	long v;
	unsigned long u;
	int c;
	size_t i;

	memset(o, 0, sizeof(*o));
	o->use_map = 1;
	o->sort = SORT_FUNCID;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long_only(argc, argv, ":s:r:p:f:o:dkh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			for (i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++) {
				if (!strcmp(optarg, sort_names[i]))
					break;
			}
			if (i == sizeof(sort_names) / sizeof(sort_names[0]))
				return cli_usage(
				    "'--sort' takes funcid, count, min, med, 90p, 99p, "
				    "max, sum or func, not '%s'",
				    optarg);
			o->sort = (enum sort_field)i;
			break;
		case 'r':
			if (!strcmp(optarg, "asc"))
				o->descending = 0;
			else if (!strcmp(optarg, "dsc"))
				o->descending = 1;
			else
				return cli_usage("'--sortorder' takes asc or dsc, not '%s'",
						 optarg);
			break;
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (!*optarg || *end || errno || v < INT_MIN || v > INT_MAX)
				return cli_usage("'--top' takes a whole number, not '%s'", optarg);
			o->top = v;
			break;
		case 'f':
			if (!strcmp(optarg, "text"))
				o->csv = 0;
			else if (!strcmp(optarg, "csv"))
				o->csv = 1;
			else
				return cli_usage("'--format' takes text or csv, not '%s'", optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'T':
			errno = 0;
			u = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || errno || u > UINT32_MAX)
				return cli_usage("'--thread' takes a thread id (a decimal number), "
						 "not '%s'",
						 optarg);
			o->thread_set = 1;
			o->thread = (uint32_t)u;
			break;
		case 'm':
			o->map = optarg;
			break;
		case 'M':
			o->use_map = 0;
			break;
		case 'R':
			o->recursive_only = 1;
			break;
		case 'd':
		case 'k':
			break;
		case 'I':
			return cli_usage("'-instr_map' is not supported: names come from the .map "
					 "sidecar (--map)");
		case 'h':
			account_help();
			return -1;
		default:
			return cli_bad_option(argv, c, optopt);
		}
	}
	if (cli_one_operand(argc, argv, "FILE", &o->input))
		return CLI_USAGE;
	if (o->map && !o->use_map)
		return cli_usage("--map and --no-map exclude each other");
	return 0;
}

/* Threads of the trace, and the check that --thread names one. Returns a status. */
static int load_threads(struct acct *a, struct acct_threads *th, uint64_t *buffers)
{
	struct xfdr_error err;
	uint64_t i, found = 0;
	char list[160];
	size_t n = 0;

	if (xfdr_trace_threads(a->t, &th->count, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	th->trace = a->t;
	th->info = calloc(th->count ? th->count : 1, sizeof(*th->info));
	th->rank = calloc(th->count ? th->count : 1, sizeof(*th->rank));
	if (!th->info || !th->rank || th->count > UINT32_MAX)
		goto oom;
	*buffers = 0;
	for (i = 0; i < th->count; i++) {
		xfdr_trace_thread(a->t, i, &th->info[i]);
		if (!a->opt->thread_set || th->info[i].thread_id == a->opt->thread) {
			*buffers += th->info[i].buffers;
			found++;
		}
	}
	if (a->opt->thread_set && !found) {
		list[0] = '\0';
		for (i = 0; i < th->count && n < sizeof(list) - 24; i++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%u", i ? ", " : "",
					      th->info[i].thread_id);
		if (i < th->count)
			snprintf(list + n, sizeof(list) - n, ", ...");
		cli_error("%s: no thread %u in the trace (its threads: %s)", a->opt->input,
			  a->opt->thread, th->count ? list : "none");
		return CLI_USAGE;
	}
	if (thread_ranks(th) < 0)
		goto oom;
	return CLI_OK;
oom:
	cli_error("%s: out of memory", a->opt->input);
	return CLI_FAIL;
}

/* Two passes, then every row's figures and names. Returns a status. */
static int account_trace(struct acct *a, const struct xfdr_names *names, struct cli_progress *prog)
{
	struct acct_threads th = {NULL, 0, NULL, NULL};
	struct walk_progress wp = {prog, 0, 0};
	uint64_t total = 0, buffers = 0, hz = xfdr_trace_header(a->t)->cycle_frequency;
	size_t i;
	int status;

	status = load_threads(a, &th, &buffers);
	if (status)
		goto out;
	wp.total = 2 * buffers;
	cli_progress_phase(prog, "accounting");
	a->pass = 1;
	status = walk(a, &th, &wp);
	if (status)
		goto out;
	for (i = 0; i < a->nfn; i++) {
		a->fn[i].first = total;
		total += a->fn[i].count;
	}
	status = CLI_FAIL;
	if (total > SIZE_MAX / sizeof(*a->lat)) {
		cli_error("%s: out of memory", a->opt->input);
		goto out;
	}
	a->lat = malloc(total ? total * sizeof(*a->lat) : 1);
	if (!a->lat) {
		cli_error("%s: out of memory (%" PRIu64 " calls need %" PRIu64 " bytes)",
			  a->opt->input, total, total * 8);
		goto out;
	}
	a->pass = 2;
	status = walk(a, &th, &wp);
	if (status)
		goto out;
	cli_progress_phase(prog, "sorting");
	for (i = 0; i < a->nfn; i++) {
		struct acct_fn *f = &a->fn[i];
		const char *name = xfdr_names_get(names, f->fid);
		char idname[16];

		if (f->fill != f->count)
			abort(); /* pass 2 saw other calls than pass 1 */
		fn_stats(f, a->lat + f->first, hz);
		if (!name) {
			snprintf(idname, sizeof(idname), "#%u", f->fid);
			name = idname;
		}
		f->name = strdup(name);
		if (!f->name) {
			status = CLI_FAIL;
			cli_error("%s: out of memory", a->opt->input);
			goto out;
		}
		cli_progress_update(prog, i + 1, a->nfn);
	}
out:
	free(th.info);
	free(th.rank);
	return status;
}

int cmd_account(int argc, char **argv)
{
	struct account_opts opt;
	struct acct a;
	struct cli_progress prog;
	struct cli_out *out = NULL;
	struct xfdr_names *names = NULL;
	struct xfdr_error err;
	struct row_order ro;
	const char *map;
	char sidecar[4096];
	row_t *rows = NULL;
	struct stat st;
	size_t shown, i;
	int status;

	memset(&a, 0, sizeof(a));
	status = parse_account_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	a.opt = &opt;
	status = cli_check_input(opt.input);
	if (status)
		return status;
	status = cli_check_output(opt.output, opt.input, opt.map);
	if (status)
		return status;
	if (opt.use_map) {
		map = cli_sidecar(opt.input, opt.map, sidecar, sizeof(sidecar));
		status = cli_names_load(map, &names);
		if (status)
			return status;
	}

	cli_progress_begin(&prog, stat(opt.input, &st) == 0 ? (uint64_t)st.st_size : 0,
			   "verifying");
	status = CLI_FAIL;
	if (xfdr_trace_open(opt.input, &a.t, &err) < 0 || xfdr_trace_verify(a.t, &err) < 0) {
		cli_progress_end(&prog);
		fprintf(stderr, "%s\n", err.text);
		goto out;
	}
	status = account_trace(&a, names, &prog);
	cli_progress_end(&prog);
	if (status)
		goto out;

	status = CLI_FAIL;
	rows = rows_in_llvm_order(&a);
	if (!rows) {
		cli_error("%s: out of memory", opt.input);
		goto out;
	}
	ro.field = opt.sort;
	ro.descending = opt.descending;
	rows_sort(rows, a.nfn, &ro);
	shown = a.nfn;
	if (opt.top > 0 && (uint64_t)opt.top < shown)
		shown = (size_t)opt.top;

	out = malloc(sizeof(*out));
	if (!out) {
		cli_error("out of memory");
		goto out;
	}
	if (cli_out_open(out, opt.output) != 0) {
		free(out);
		out = NULL;
		goto out;
	}
	if (opt.csv)
		put_csv(out, rows, shown);
	else
		put_text(out, rows, shown, a.nfn);
	status = cli_out_close(out);
	put_summary(&a.left);
out:
	free(out);
	free(rows);
	for (i = 0; i < a.nfn; i++)
		free(a.fn[i].name);
	free(a.fn);
	free(a.slot);
	free(a.lat);
	xfdr_names_free(names);
	if (a.t)
		xfdr_trace_close(a.t);
	return status;
}

/* ---- For other verbs ------------------------------------------------------------------------ */

/* qsort: more self time first, then lower id (ids are unique: a total order). */
static int self_cmp(const void *pl, const void *pr)
{
	const struct account_total *l = pl, *r = pr;

	if (l->self_tsc != r->self_tsc)
		return l->self_tsc > r->self_tsc ? -1 : 1;
	return (l->fid > r->fid) - (l->fid < r->fid);
}

int account_totals(struct xfdr_trace *t, const struct xfdr_names *names, struct account_total **out,
		   size_t *n)
{
	struct account_opts opt;
	struct acct a;
	struct acct_threads th = {NULL, 0, NULL, NULL};
	struct cli_progress prog = {0, 0, 0, NULL};
	struct walk_progress wp = {&prog, 0, 0};
	struct account_total *v = NULL;
	uint64_t buffers;
	size_t i;
	int status;

	*out = NULL;
	*n = 0;
	memset(&opt, 0, sizeof(opt));
	memset(&a, 0, sizeof(a));
	opt.input = xfdr_trace_name(t);
	a.t = t;
	a.opt = &opt;
	status = load_threads(&a, &th, &buffers);
	if (status)
		goto out;
	a.pass = 1;
	status = walk(&a, &th, &wp);
	if (status)
		goto out;
	v = malloc((a.nfn ? a.nfn : 1) * sizeof(*v));
	if (!v) {
		cli_error("%s: out of memory", opt.input);
		status = CLI_FAIL;
		goto out;
	}
	for (i = 0; i < a.nfn; i++) {
		v[i].fid = a.fn[i].fid;
		v[i].count = a.fn[i].count;
		v[i].sum_tsc = a.fn[i].sum_tsc;
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
	free(a.fn);
	free(a.slot);
	return status;
}
