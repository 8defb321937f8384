/*
 * reader/index.c - verification, and the buffer index it leaves behind.
 *
 * xfdr_trace_verify() walks every record once with the state machine of records.c and keeps,
 * per buffer, what the walk learns on entering it: its extent and the thread id, process id
 * and WallClockTime of its preamble (the index). Buffers of versions 2+ vary in length; open
 * counted them by following their BufferExtents records, so the index has its size before the
 * walk, as for version 1. Verification is the only sequential walk the
 * events need, so every later reader of a buffer goes straight to it through the index and
 * never works out an extent again.
 *
 * A large file is verified by several threads at once, each walking a range of whole buffers:
 * where each buffer starts is known before the walk (see cut_ranges()), a buffer's walk
 * depends on nothing before it (its state begins at RD_ST_BUFFER_START), and the file's first
 * violation is the first range's. So the outcome, the message and the index are those of one
 * walk from the start.
 *
 * Thread order: threads by ascending (process id, thread id), and each thread's buffers by
 * (seconds, microseconds, file offset). The process id is the Pid record's (versions 3+), the
 * thread id in version 2 (as llvm-xray's expander), 0 in version 1. That is the order llvm-xray
 * means, but its comparator (sec < sec && usec < usec) is not a strict weak order and misplaces
 * e.g. {1 s, 900 us} and {2 s, 100 us}; this one is a plain lexicographic one.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader/internal.h"

/* Buffers first .. end-1, which start at byte start, walked by one thread into the index. */
struct verify_range {
	struct xfdr_trace *t;
	struct rd_buffer_info *index;
	uint64_t first, end, start;
	int rc; /* 0, or -1 with err filled at the range's first violation */
	struct xfdr_error err;
};

static void *verify_range(void *arg)
{
	struct verify_range *v = arg;
	struct xfdr_trace *t = v->t;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct rd_buffer_info *b;
	struct rd_fn f;
	int rc;

	xfdr_records_begin(t, &c);
	c.pos = c.released = v->start;
	c.buffer_index = v->first;
	for (;;) {
		/* Function records need no index work: take them on the fast path. */
		while (rd_next_function(&c, &f))
			;
		if (c.state == RD_ST_BUFFER_START && c.buffer_index >= v->end) {
			rc = 0;
			break;
		}
		rc = xfdr_records_next(&c, &r, &v->err);
		if (rc <= 0)
			break;
		if (!r.is_metadata)
			continue;
		b = &v->index[r.buffer_index];
		switch (r.kind) {
		case XFDR_MD_BUFFER_EXTENTS:
			/* Versions 2+: this record entered the buffer, the cursor knows its end. */
			b->start = r.offset;
			b->end = c.buffer_end;
			break;
		case XFDR_MD_NEW_BUFFER:
			/* Version 1: the NewBuffer record entered the buffer. */
			if (t->hdr.version == 1) {
				b->start = r.offset;
				b->end = c.buffer_end;
			}
			b->thread_id = r.thread_id;
			b->pid = r.pid; /* version 2: the thread id; else 0 until a Pid record */
			break;
		case XFDR_MD_WALL_CLOCK_TIME:
			b->wall_seconds = r.seconds;
			b->wall_micros = r.micros;
			break;
		case XFDR_MD_PID:
			b->pid = r.pid;
			break;
		}
	}
	v->rc = rc < 0 ? -1 : 0;
	return NULL;
}

/*
 * How many threads verify t: one per RD_VERIFY_RANGE_BYTES of the file, up to the CPUs online
 * and RD_VERIFY_THREADS_MAX, and never more than its buffers.
 */
static unsigned verify_threads(const struct xfdr_trace *t)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t n = t->bytes / RD_VERIFY_RANGE_BYTES;

	if (cpus < 1)
		cpus = 1;
	if (n > (uint64_t)cpus)
		n = (uint64_t)cpus;
	if (n > RD_VERIFY_THREADS_MAX)
		n = RD_VERIFY_THREADS_MAX;
	if (n > t->buffer_count)
		n = t->buffer_count;
	return n ? (unsigned)n : 1;
}

/*
 * Cut the buffers into n ranges of about equal bytes: range k begins with the first buffer
 * that starts at or past k n-ths of the file (ranges may be empty). Where buffers start is
 * known before the walk: version 1 every buffer_size bytes after the header, versions 2+ along
 * the BufferExtents chain that open followed.
 */
static void cut_ranges(struct xfdr_trace *t, struct verify_range *v, unsigned n)
{
	uint64_t pos = XFDR_FILE_HEADER_BYTES, next, i = 0;
	unsigned k;

	for (k = 0; k < n; k++) {
		while (i < t->buffer_count && pos < t->bytes / n * k) {
			if (t->hdr.version == 1)
				next = pos + t->hdr.buffer_size;
			else if (rd_buffer_extents(t->name, t->data, t->bytes, &t->hdr, pos, i,
						   &next, NULL))
				break; /* cannot be (open followed the chain): the rest is one range
					*/
			pos = next;
			i++;
		}
		v[k].first = i;
		v[k].start = pos;
	}
	for (k = 0; k + 1 < n; k++)
		v[k].end = v[k + 1].first;
	v[n - 1].end = t->buffer_count;
}

int xfdr_trace_verify(struct xfdr_trace *t, struct xfdr_error *err)
{
	struct verify_range v[RD_VERIFY_THREADS_MAX];
	pthread_t tid[RD_VERIFY_THREADS_MAX];
	struct rd_buffer_info *index = NULL;
	unsigned n, k, started = 0;

	if (t->verified > 0)
		return 0;
	if (t->verified < 0) {
		if (err)
			*err = t->verify_err;
		return -1;
	}
	/*
	 * The count is bounded by the file size / 48 (v2+: / 64), so this is at most two thirds of
	 * the file.
	 */
	if (t->buffer_count) {
		if (t->buffer_count > SIZE_MAX / sizeof(*index) ||
		    !(index = calloc((size_t)t->buffer_count, sizeof(*index))))
			return rd_fail(t, err, 0,
				       "expected memory for %llu buffer index entries, "
				       "found %s",
				       (unsigned long long)t->buffer_count, strerror(ENOMEM));
	}
	n = verify_threads(t);
	for (k = 0; k < n; k++)
		v[k] = (struct verify_range){.t = t, .index = index};
	cut_ranges(t, v, n);
	/* The ranges at once; if the system gives fewer threads, this one walks the rest. */
	while (started + 1 < n &&
	       !pthread_create(&tid[started], NULL, verify_range, &v[started + 1]))
		started++;
	verify_range(&v[0]);
	for (k = started + 1; k < n; k++)
		verify_range(&v[k]);
	for (k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	/* The file's first violation is the first range's that has one. */
	for (k = 0; k < n && !v[k].rc; k++)
		;
	if (k < n) {
		free(index);
		t->verify_err = v[k].err;
		t->verified = -1;
		if (err)
			*err = t->verify_err;
		return -1;
	}
	t->index = index;
	t->verified = 1;
	return 0;
}

static int cmp_thread_order(const void *a, const void *b, void *arg)
{
	const struct rd_buffer_info *index = arg;
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	const struct rd_buffer_info *l = &index[x], *r = &index[y];

	if (l->pid != r->pid)
		return l->pid < r->pid ? -1 : 1;
	if (l->thread_id != r->thread_id)
		return l->thread_id < r->thread_id ? -1 : 1;
	if (l->wall_seconds != r->wall_seconds)
		return l->wall_seconds < r->wall_seconds ? -1 : 1;
	if (l->wall_micros != r->wall_micros)
		return l->wall_micros < r->wall_micros ? -1 : 1;
	/* Buffer number order is file offset order. */
	return x < y ? -1 : x > y;
}

static int same_thread(const struct rd_buffer_info *a, const struct rd_buffer_info *b)
{
	return a->pid == b->pid && a->thread_id == b->thread_id;
}

int rd_build_thread_order(struct xfdr_trace *t, struct xfdr_error *err)
{
	uint64_t i, n, *order, *start;

	if (t->thread_start)
		return 0;
	if (t->buffer_count > SIZE_MAX / sizeof(*order) - 1 ||
	    !(order = malloc((size_t)(t->buffer_count ? t->buffer_count : 1) * sizeof(*order))))
		return rd_fail(t, err, 0, "expected memory to order %llu buffers, found %s",
			       (unsigned long long)t->buffer_count, strerror(ENOMEM));
	for (i = 0; i < t->buffer_count; i++)
		order[i] = i;
	qsort_r(order, (size_t)t->buffer_count, sizeof(*order), cmp_thread_order, t->index);
	for (i = 0, n = 0; i < t->buffer_count; i++)
		n += !i || !same_thread(&t->index[order[i]], &t->index[order[i - 1]]);
	start = malloc((size_t)(n + 1) * sizeof(*start));
	if (!start) {
		free(order);
		return rd_fail(t, err, 0, "expected memory to order %llu buffers, found %s",
			       (unsigned long long)t->buffer_count, strerror(ENOMEM));
	}
	for (i = 0, n = 0; i < t->buffer_count; i++)
		if (!i || !same_thread(&t->index[order[i]], &t->index[order[i - 1]]))
			start[n++] = i;
	start[n] = t->buffer_count;
	t->thread_order = order;
	t->thread_start = start;
	t->thread_count = n;
	return 0;
}

int xfdr_trace_threads(struct xfdr_trace *t, uint64_t *count, struct xfdr_error *err)
{
	if (xfdr_trace_verify(t, err) || rd_build_thread_order(t, err))
		return -1;
	*count = t->thread_count;
	return 0;
}

int xfdr_trace_thread(const struct xfdr_trace *t, uint64_t i, struct xfdr_thread_info *out)
{
	uint64_t k, first;

	if (!t->thread_start || i >= t->thread_count)
		return -1;
	first = t->thread_order[t->thread_start[i]];
	/* The order within a thread is by time, not by file position. */
	for (k = t->thread_start[i]; k < t->thread_start[i + 1]; k++)
		if (t->thread_order[k] < first)
			first = t->thread_order[k];
	*out = (struct xfdr_thread_info){
	    .pid = t->index[first].pid,
	    .thread_id = t->index[first].thread_id,
	    .buffers = t->thread_start[i + 1] - t->thread_start[i],
	    .first_buffer = first,
	};
	return 0;
}
