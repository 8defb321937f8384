/*
 * analysis/stackwalk.c - the stack tree sorted, written out as runs when memory is full, and
 * walked as one tree (stacktree.h).
 *
 * A run is the tree in memory as it was when it filled up, written depth first with each
 * node's callees in name order, so that a run is sorted by stack: a node's record (its depth,
 * name, kind and sums, as varints) comes after its caller's and before its next sibling's
 * subtree. Every node of a stack is in the run with it, even one no call ended at yet (a frame
 * still open when the run was written).
 *
 * Merging sorted runs: let P be the stack last given out. Each source's next record is a
 * callee of a frame of P: its caller's record came earlier in the source, hence was given out
 * (at or before P), and a caller given out that is not on P has all of its subtree before P,
 * which the record is not. So the next record of every source is a callee of P's frame at its
 * depth - 1, and of two such records the deeper one comes first (it is inside the subtree of
 * P's frame at the other's depth, which the other follows as a later sibling); at the same
 * depth both are callees of the same frame, and the name decides. Records of the same depth
 * and name from several sources are the same stack: their sums add. The key (depth downwards,
 * then name) needs nothing but the record itself, so a merge costs one pass over the runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stacknames.h"
#include "analysis/stackruns.h"
#include "analysis/stacktree.h"
#include "analysis/tempfile.h"

#define RUN_WRITE_BYTES 65536
#define RUN_READ_BYTES 32768
#define RUN_RECORD_MAX (7 * 10) /* seven varints of up to 10 bytes */

struct stree_run {
	int fd; /* an unlinked temporary file */
	uint64_t bytes;
};

struct stree_runs {
	struct stree_run run[STREE_RUNS_MAX];
	unsigned count;
};

/* ---- sorting the tree in memory --------------------------------------------------------- */

int stree_finish(struct stree *t)
{
	uint32_t names = 0, *rank = stree_name_ranks(t, &names);
	uint32_t *order = malloc((size_t)t->nodes * sizeof(*order)), i, k;
	uint32_t *first = rank ? calloc((size_t)names + 1, sizeof(*first)) : NULL;

	if (!order || !rank || !first) {
		free(order);
		free(rank);
		free(first);
		return -1;
	}
	/*
	 * Children are made after their parent, so a backwards pass sees every node before its
	 * parent: incl_tsc adds up bottom-up without recursion.
	 */
	for (i = 0; i < t->nodes; i++)
		t->node[i].incl_tsc = t->node[i].self_tsc;
	for (i = t->nodes; i-- > 1;) {
		struct stree_node *p = &t->node[t->node[i].parent];

		p->incl_tsc = stree_add(p->incl_tsc, t->node[i].incl_tsc);
	}
	/*
	 * The nodes in name order by counting (first[r]: where rank r's nodes begin), then pushed
	 * on their parents' lists from the last name to the first: each list comes out in name
	 * order, in time linear in the nodes (a parent never has two callees of one name).
	 */
	for (i = 1; i < t->nodes; i++)
		first[rank[t->node[i].name] + 1]++;
	for (k = 1; k <= names; k++)
		first[k] += first[k - 1];
	for (i = 1; i < t->nodes; i++)
		order[first[rank[t->node[i].name]]++] = i;
	for (i = 0; i < t->nodes; i++)
		t->node[i].child = STREE_NONE;
	for (k = t->nodes - 1; k-- > 0;) {
		struct stree_node *n = &t->node[order[k]];

		n->sibling = t->node[n->parent].child;
		t->node[n->parent].child = order[k];
	}
	free(order);
	free(rank);
	free(first);
	return 0;
}

/* ---- sources: the tree in memory and the runs, each depth first ------------------------- */

struct source {
	struct stree_frame head; /* the next record, when have */
	int have;
	/* The tree in memory (tree not NULL): the node to give next. */
	const struct stree *tree;
	uint32_t id;
	/* A run: its file, how far it is read, and what is buffered of it. */
	const struct stree_run *run;
	uint64_t pos;
	uint8_t *buf;
	size_t len, at;
};

static void tree_next(struct source *s)
{
	const struct stree *t = s->tree;
	const struct stree_node *n;
	uint32_t id = s->id;

	s->have = id != STREE_NONE;
	if (!s->have)
		return;
	n = &t->node[id];
	s->head = (struct stree_frame){n->depth,    n->name,	  n->kind,    n->calls,
				       n->self_tsc, n->total_tsc, n->incl_tsc};
	if (n->child != STREE_NONE) {
		s->id = n->child;
		return;
	}
	while (id != STREE_NONE && t->node[id].sibling == STREE_NONE)
		id = t->node[id].parent;
	s->id = id == STREE_NONE ? STREE_NONE : t->node[id].sibling;
}

static inline int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift = 0;

	/* Most fields of a record (depth, name, kind, calls) take one byte. */
	if (*p < end && !(**p & 0x80)) {
		*v = *(*p)++;
		return 0;
	}
	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	return -1;
}

/* Buffer at least RUN_RECORD_MAX bytes, or the rest of the run. 0, or -1 with errno. */
static int run_fill(struct source *s)
{
	size_t keep = s->len - s->at;

	memmove(s->buf, s->buf + s->at, keep);
	s->len = keep;
	s->at = 0;
	while (s->len < RUN_READ_BYTES && s->pos < s->run->bytes) {
		size_t want = RUN_READ_BYTES - s->len;
		ssize_t got;

		if (want > s->run->bytes - s->pos)
			want = (size_t)(s->run->bytes - s->pos);
		got = pread(s->run->fd, s->buf + s->len, want, (off_t)s->pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (!got)
				errno = EIO; /* the file is shorter than what was written to it */
			return -1;
		}
		s->len += (size_t)got;
		s->pos += (uint64_t)got;
	}
	return 0;
}

/* The next record of a run. 0, or -1 with errno. */
static int run_next(struct source *s)
{
	const uint8_t *p, *end;
	uint64_t v[7];
	unsigned i;

	if (s->len - s->at < RUN_RECORD_MAX && s->pos < s->run->bytes && run_fill(s) < 0)
		return -1;
	s->have = s->at < s->len;
	if (!s->have)
		return 0;
	p = s->buf + s->at;
	end = s->buf + s->len;
	for (i = 0; i < 7; i++)
		if (get_varint(&p, end, &v[i]) < 0)
			goto corrupt;
	if (v[0] > UINT32_MAX || v[1] > UINT32_MAX || v[2] > STREE_PROCESS)
		goto corrupt;
	s->head = (struct stree_frame){
	    (uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2], v[3], v[4], v[5], v[6]};
	s->at = (size_t)(p - s->buf);
	return 0;
corrupt:
	/* Only this process writes the file: a record it cannot read is a damaged file. */
	errno = EIO;
	return -1;
}

static int source_next(struct source *s)
{
	if (s->tree) {
		tree_next(s);
		return 0;
	}
	return run_next(s);
}

/* ---- merging ---------------------------------------------------------------------------- */

/*
 * The sources with a record left are kept in a binary heap by their next record's key, so that
 * a record costs O(log n) comparisons however many runs there are. The key is the order of
 * the module comment in one integer (depth downwards, then the name's rank), taken once per
 * record and kept in the heap beside its source: a comparison reads nothing else.
 */
struct heap_entry {
	uint64_t key;
	unsigned src;
};

struct merge {
	struct source *src;
	unsigned n;
	struct heap_entry *heap; /* the sources that have a record; heap[0] first */
	unsigned live;
	unsigned *same; /* merge_next()'s: the sources whose record is the one given out */
	uint32_t *rank; /* stree_name_ranks() */
	uint32_t names; /* how many names rank knows */
};

/* The key of source k's record in *key. -1 (errno EIO) for a name the tree never had. */
static int source_key(const struct merge *m, unsigned k, uint64_t *key)
{
	const struct stree_frame *h = &m->src[k].head;

	if (h->name >= m->names) {
		errno = EIO; /* a damaged run */
		return -1;
	}
	*key = (uint64_t)(UINT32_MAX - h->depth) << 32 | m->rank[h->name];
	return 0;
}

static void heap_down(struct merge *m, unsigned i)
{
	struct heap_entry e = m->heap[i];
	unsigned c;

	while ((c = 2 * i + 1) < m->live) {
		if (c + 1 < m->live && m->heap[c + 1].key < m->heap[c].key)
			c++;
		if (m->heap[c].key >= e.key)
			break;
		m->heap[i] = m->heap[c];
		i = c;
	}
	m->heap[i] = e;
}

static void heap_up(struct merge *m, unsigned i)
{
	struct heap_entry e = m->heap[i];

	while (i && e.key < m->heap[(i - 1) / 2].key) {
		m->heap[i] = m->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	m->heap[i] = e;
}

/* Source k into the heap when it has a record. 0, or -1 with errno. */
static int heap_push(struct merge *m, unsigned k)
{
	uint64_t key;

	if (!m->src[k].have)
		return 0;
	if (source_key(m, k, &key) < 0)
		return -1;
	m->heap[m->live++] = (struct heap_entry){key, k};
	heap_up(m, m->live - 1);
	return 0;
}

/* The first source out of the heap. */
static unsigned heap_pop(struct merge *m)
{
	unsigned k = m->heap[0].src;

	m->heap[0] = m->heap[--m->live];
	heap_down(m, 0);
	return k;
}

static void merge_end(struct merge *m)
{
	unsigned i;

	for (i = 0; m->src && i < m->n; i++)
		free(m->src[i].buf);
	free(m->src);
	free(m->heap);
	free(m->same);
	free(m->rank);
	memset(m, 0, sizeof(*m));
}

/*
 * Sources for the runs r (may be NULL), and the tree in memory when with_tree, each at its
 * first record. 0, or -1 with errno.
 */
static int merge_begin(struct merge *m, const struct stree *t, const struct stree_runs *r,
		       int with_tree)
{
	unsigned runs = r ? r->count : 0, i;

	memset(m, 0, sizeof(*m));
	m->src = calloc(runs + 1, sizeof(*m->src));
	m->heap = calloc(runs + 1, sizeof(*m->heap));
	m->same = calloc(runs + 1, sizeof(*m->same));
	m->rank = stree_name_ranks(t, &m->names);
	if (!m->src || !m->heap || !m->same || !m->rank)
		goto oom;
	for (i = 0; i < runs; i++) {
		struct source *s = &m->src[m->n++];

		s->run = &r->run[i];
		s->buf = malloc(RUN_READ_BYTES);
		if (!s->buf)
			goto oom;
		if (run_next(s) < 0)
			goto fail;
	}
	if (with_tree) {
		struct source *s = &m->src[m->n++];

		s->tree = t;
		s->id = 0;
		tree_next(s);
	}
	for (i = 0; i < m->n; i++)
		if (heap_push(m, i) < 0)
			goto fail;
	return 0;
oom:
	errno = ENOMEM;
fail:
	i = (unsigned)errno;
	merge_end(m);
	errno = (int)i;
	return -1;
}

static void frame_add(struct stree_frame *out, const struct stree_frame *h)
{
	out->calls = stree_add(out->calls, h->calls);
	out->self_tsc = stree_add(out->self_tsc, h->self_tsc);
	out->total_tsc = stree_add(out->total_tsc, h->total_tsc);
	out->incl_tsc = stree_add(out->incl_tsc, h->incl_tsc);
}

/* The next stack of the merge, its sums added up. 1, 0 at the end, or -1 with errno. */
static int merge_next(struct merge *m, struct stree_frame *out)
{
	unsigned nsame = 0, k, i;
	uint64_t key;

	if (!m->live)
		return 0;
	key = m->heap[0].key;
	k = m->heap[0].src;
	*out = m->src[k].head;
	/*
	 * Alone with its stack (no child of the root has its key): the source moves on in place,
	 * its next record sifted down from the root, half the work of a pop and a push.
	 */
	if ((m->live < 2 || m->heap[1].key != key) && (m->live < 3 || m->heap[2].key != key)) {
		if (source_next(&m->src[k]) < 0)
			return -1;
		if (!m->src[k].have) {
			heap_pop(m);
			return 1;
		}
		if (source_key(m, k, &m->heap[0].key) < 0)
			return -1;
		heap_down(m, 0);
		return 1;
	}
	out->calls = out->self_tsc = out->total_tsc = out->incl_tsc = 0;
	/*
	 * Every source whose record is this stack comes off the heap before any moves on: the
	 * next record of one is a callee, which comes before the same stack in another.
	 */
	while (m->live && m->heap[0].key == key) {
		frame_add(out, &m->src[m->heap[0].src].head);
		m->same[nsame++] = heap_pop(m);
	}
	for (i = 0; i < nsame; i++)
		if (source_next(&m->src[m->same[i]]) < 0 || heap_push(m, m->same[i]) < 0)
			return -1;
	return 1;
}

/* ---- writing runs ----------------------------------------------------------------------- */

struct run_writer {
	struct stree_run run;
	uint8_t *buf;
	size_t len;
};

static int writer_flush(struct run_writer *w)
{
	size_t done = 0;

	while (done < w->len) {
		ssize_t n = write(w->run.fd, w->buf + done, w->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = ENOSPC;
			return -1;
		}
		done += (size_t)n;
	}
	w->run.bytes += w->len;
	w->len = 0;
	return 0;
}

static int writer_put(struct run_writer *w, const struct stree_frame *f)
{
	const uint64_t v[7] = {f->depth,    f->name,	  f->kind,    f->calls,
			       f->self_tsc, f->total_tsc, f->incl_tsc};
	uint8_t *p;
	unsigned i;

	if (RUN_WRITE_BYTES - w->len < RUN_RECORD_MAX && writer_flush(w) < 0)
		return -1;
	p = w->buf + w->len;
	for (i = 0; i < 7; i++) {
		uint64_t x = v[i];

		while (x >= 0x80) {
			*p++ = (uint8_t)(x | 0x80);
			x >>= 7;
		}
		*p++ = (uint8_t)x;
	}
	w->len = (size_t)(p - w->buf);
	return 0;
}

/*
 * Write the merge of the runs r (may be NULL) and, when with_tree, of the tree in memory as
 * one new run.
 */
static int write_run(const struct stree *t, const struct stree_runs *r, int with_tree,
		     struct stree_run *out)
{
	struct run_writer w = {.run = {.fd = -1}};
	struct stree_frame f;
	struct merge m;
	int rc, saved;

	if (merge_begin(&m, t, r, with_tree) < 0)
		return -1;
	w.buf = malloc(RUN_WRITE_BYTES);
	if (!w.buf) {
		errno = ENOMEM;
		goto fail;
	}
	w.run.fd = temp_file_open("stack");
	if (w.run.fd < 0)
		goto fail;
	while ((rc = merge_next(&m, &f)) > 0)
		if (writer_put(&w, &f) < 0)
			goto fail;
	if (rc < 0 || writer_flush(&w) < 0)
		goto fail;
	merge_end(&m);
	free(w.buf);
	*out = w.run;
	return 0;
fail:
	saved = errno;
	merge_end(&m);
	free(w.buf);
	if (w.run.fd >= 0)
		close(w.run.fd);
	errno = saved;
	return -1;
}

void stree_runs_free(struct stree *t)
{
	unsigned i;

	if (!t->runs)
		return;
	for (i = 0; i < t->runs->count; i++)
		close(t->runs->run[i].fd);
	free(t->runs);
	t->runs = NULL;
}

static int by_bytes(const void *a, const void *b)
{
	const struct stree_run *x = a, *y = b;

	return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/*
 * One run more: the tree in memory (when with_tree) and, at the most runs kept, the smaller half
 * of the runs merged into it; a large run is written again only once enough runs of its size
 * have gathered, so each record is rewritten a few times however long the trace, not once per
 * merge. The runs merged are closed. 0, or -1 with t->spill_errno set.
 */
static int add_run(struct stree *t, int with_tree)
{
	struct stree_runs *r = t->runs, small = {.count = 0};
	struct stree_run run;
	unsigned i;

	if (!r) {
		r = t->runs = calloc(1, sizeof(*r));
		if (!r) {
			t->spill_errno = ENOMEM;
			return -1;
		}
	}
	if (r->count + 1 >= STREE_RUNS_MAX) {
		qsort(r->run, r->count, sizeof(*r->run), by_bytes);
		small.count = r->count / 2;
		memcpy(small.run, r->run, small.count * sizeof(*r->run));
	}
	if (write_run(t, &small, with_tree, &run) < 0) {
		t->spill_errno = errno ? errno : EIO;
		return -1;
	}
	for (i = 0; i < small.count; i++)
		close(small.run[i].fd);
	memmove(r->run, r->run + small.count, (r->count - small.count) * sizeof(*r->run));
	r->count -= small.count;
	r->run[r->count++] = run;
	return 0;
}

int stree_spill(struct stree *t)
{
	if (stree_finish(t) < 0) {
		t->spill_errno = ENOMEM;
		return -1;
	}
	return add_run(t, 1);
}

int stree_runs_take(struct stree *t, struct stree *from)
{
	struct stree_runs *f = from->runs;
	unsigned k;

	if (!f)
		return 0;
	if (!t->runs) {
		t->runs = f;
		from->runs = NULL;
		return 0;
	}
	for (k = 0; k < f->count; k++) {
		if (t->runs->count + 1 >= STREE_RUNS_MAX && add_run(t, 0) < 0)
			return -1;
		t->runs->run[t->runs->count++] = f->run[k];
		f->run[k].fd = -1;
	}
	f->count = 0;
	return 0;
}

/* ---- the walk --------------------------------------------------------------------------- */

int stree_compact(struct stree *t, char *why, size_t why_size)
{
	struct stree_run run;
	unsigned i;

	if (!t->runs || !t->runs->count)
		return 0;
	if (write_run(t, t->runs, 1, &run) < 0) {
		snprintf(why, why_size, "%s the stack tree: %s",
			 errno == ENOMEM ? "out of memory for" : "writing a run of",
			 strerror(errno));
		return -1;
	}
	for (i = 0; i < t->runs->count; i++)
		close(t->runs->run[i].fd);
	t->runs->run[0] = run;
	t->runs->count = 1;
	/* Every node is in the run now: the tree keeps its root, with no time of its own. */
	t->nodes = 1;
	t->node[0].child = STREE_NONE;
	t->node[0].calls = t->node[0].self_tsc = t->node[0].total_tsc = t->node[0].incl_tsc = 0;
	memset(t->slot, 0xff, ((size_t)t->slot_mask + 1) * sizeof(*t->slot));
	return 0;
}

struct stree_cursor {
	struct merge m;
	struct stree_frame *path; /* path[0..depth]: the stack last given out */
	uint32_t max_depth;
};

/* "reading a run of the stack tree: ..." or "out of memory ...", from errno. Returns -1. */
static int walk_failed(char *why, size_t why_size)
{
	snprintf(why, why_size, "%s the stack tree: %s",
		 errno == ENOMEM ? "out of memory for" : "reading a run of", strerror(errno));
	return -1;
}

int stree_cursor_open(struct stree *t, struct stree_cursor **out, char *why, size_t why_size)
{
	struct stree_cursor *c = calloc(1, sizeof(*c));

	*out = NULL;
	errno = ENOMEM;
	if (!c || merge_begin(&c->m, t, t->runs, 1) < 0) {
		free(c);
		return walk_failed(why, why_size);
	}
	c->max_depth = t->max_depth;
	c->path = malloc(((size_t)t->max_depth + 1) * sizeof(*c->path));
	if (!c->path) {
		errno = ENOMEM;
		stree_cursor_close(c);
		return walk_failed(why, why_size);
	}
	*out = c;
	return 0;
}

int stree_cursor_next(struct stree_cursor *c, const struct stree_frame **path, uint32_t *depth,
		      char *why, size_t why_size)
{
	struct stree_frame f;
	int rc = merge_next(&c->m, &f);

	if (rc <= 0)
		return rc < 0 ? walk_failed(why, why_size) : 0;
	if (f.depth > c->max_depth || (f.depth == 0) != (f.kind == STREE_ROOT)) {
		errno = EIO;
		return walk_failed(why, why_size);
	}
	c->path[f.depth] = f;
	*path = c->path;
	*depth = f.depth;
	return 1;
}

void stree_cursor_close(struct stree_cursor *c)
{
	if (!c)
		return;
	merge_end(&c->m);
	free(c->path);
	free(c);
}

int stree_walk(struct stree *t, stree_visit_fn visit, void *ctx, char *why, size_t why_size)
{
	const struct stree_frame *path;
	uint32_t depth, skip_below = UINT32_MAX;
	struct stree_cursor *c;
	int rc, stop = 0;

	if (stree_cursor_open(t, &c, why, why_size) < 0)
		return -1;
	while ((rc = stree_cursor_next(c, &path, &depth, why, why_size)) > 0) {
		if (depth > skip_below)
			continue;
		skip_below = UINT32_MAX;
		stop = visit(ctx, path, depth);
		if (stop == STREE_SKIP)
			skip_below = depth;
		else if (stop)
			break;
	}
	stree_cursor_close(c);
	if (rc < 0)
		return -1;
	return stop == STREE_SKIP ? 0 : stop;
}
