/*
 * analysis/window.c - edges of a window, the threads' spans, the common window (window.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/window.h"

static const struct {
	const char *unit;
	double ns;
} units[] = {{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};

int window_edge_parse(const char *text, struct window_edge *e, const char **why)
{
	char *end;
	size_t i;

	memset(e, 0, sizeof(*e));
	*why = "a TSC (a decimal number), a time from the trace's start with a unit (250us, "
	       "1.5ms, 2s, 40ns) or 'snapshot'";
	if (!strcmp(text, "snapshot")) {
		e->kind = WINDOW_EDGE_SNAPSHOT;
		return 0;
	}
	if (*text < '0' || *text > '9')
		return -1;
	errno = 0;
	e->tsc = strtoull(text, &end, 10);
	if (!*end) {
		e->kind = WINDOW_EDGE_TSC;
		return errno ? -1 : 0;
	}
	e->ns = strtod(text, &end);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].unit) && isfinite(e->ns)) {
			e->kind = WINDOW_EDGE_TIME;
			e->ns *= units[i].ns;
			return 0;
		}
	}
	return -1;
}

uint64_t window_edge_tsc(const struct window_edge *e, uint64_t base, uint64_t hz,
			 uint64_t snapshot_tsc, uint64_t dflt)
{
	double ticks;

	switch (e->kind) {
	case WINDOW_EDGE_TSC:
		return e->tsc;
	case WINDOW_EDGE_SNAPSHOT:
		return snapshot_tsc;
	case WINDOW_EDGE_TIME:
		ticks = e->ns * (double)(hz ? hz : 1000000000u) / 1e9;
		if (ticks >= (double)(UINT64_MAX - base))
			return UINT64_MAX;
		return base + (uint64_t)llround(ticks);
	case WINDOW_EDGE_NONE:
		break;
	}
	return dflt;
}

/* Is ev xfdr's drop counts (not an event of the thread's history)? */
static int is_drop_event(const struct xfdr_event *ev)
{
	return ev->type == XFDR_EVENT_CUSTOM &&
	       xfdr_payload_has_tag(ev->payload, ev->payload_bytes, XFDR_DROP_MAGIC);
}

/*
 * The drop counts of an XFDRDROP event, added to the spans of the threads they name. Returns 1
 * when it was one.
 */
static int take_drops(const struct xfdr_event *ev, struct window_span *s, size_t n)
{
	struct xfdr_drop_event d;
	struct xfdr_drop_thread dt;
	uint32_t k;
	size_t i;

	if (xfdr_drop_event_decode(ev->payload, ev->payload_bytes, ev->big_endian, &d, NULL))
		return 0;
	for (k = 0; k < d.thread_count; k++) {
		xfdr_drop_event_thread(&d, k, &dt);
		for (i = 0; i < n; i++) {
			if (s[i].thread_id != dt.thread_id || s[i].pid != ev->pid)
				continue;
			s[i].tid = s[i].tid ? s[i].tid : dt.tid;
			s[i].overwritten += dt.overwritten;
			s[i].no_buffer += dt.no_buffer;
		}
	}
	return 1;
}

/*
 * The first event of thread i into s (and whether its first buffer begins inside calls: a stack
 * context of depth above 0). Returns 0, or -1 with err filled.
 */
static int read_first(struct xfdr_trace *t, uint64_t i, struct window_span *s,
		      struct xfdr_error *err)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_stack_context sc;
	int rc;

	if (xfdr_events_begin_thread(t, i, &it, err))
		return -1;
	while ((rc = xfdr_events_next(&it, &ev, err)) == 1) {
		if (is_drop_event(&ev))
			continue;
		s->has_events = 1;
		s->first_tsc = ev.tsc;
		if (ev.type == XFDR_EVENT_CUSTOM &&
		    !xfdr_stack_context_decode(ev.payload, ev.payload_bytes, ev.big_endian, &sc,
					       NULL) &&
		    sc.depth > 0)
			s->begins_inside = 1;
		return 0;
	}
	return rc < 0 ? -1 : 0;
}

/*
 * The last event of thread i (its last buffer with one) into s->last_tsc; drop events on the
 * way go to all (n spans). Returns 0, or -1 with err filled.
 */
static int read_last(struct xfdr_trace *t, uint64_t i, const struct xfdr_thread_info *ti,
		     struct window_span *s, struct window_span *all, size_t n, int *drops,
		     struct xfdr_error *err)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	uint64_t k;
	int rc, found = 0;

	/* buffer after buffer from the last: a buffer with no event (reused in a flush) is read
	 * once */
	for (k = ti->buffers; k-- > 0 && !found;) {
		if (xfdr_events_begin_thread_buffer(t, i, k, &it, err))
			return -1;
		while ((rc = xfdr_events_next(&it, &ev, err)) == 1) {
			if (is_drop_event(&ev)) {
				*drops |= take_drops(&ev, all, n);
			} else {
				/* A clock that went back: the span is at least its start. */
				s->last_tsc = ev.tsc > s->first_tsc ? ev.tsc : s->first_tsc;
				found = 1;
			}
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

/*
 * Each span's first and last events, and the drop counts (*drops: there were some). Returns 0,
 * or -1 with err filled.
 */
static int read_spans(struct xfdr_trace *t, struct window_span *s, uint64_t count, int *drops,
		      struct xfdr_error *err)
{
	struct xfdr_thread_info ti;
	uint64_t i;

	for (i = 0; i < count; i++) {
		xfdr_trace_thread(t, i, &ti);
		s[i].pid = ti.pid;
		s[i].thread_id = ti.thread_id;
		if (read_first(t, i, &s[i], err))
			return -1;
	}
	for (i = 0; i < count; i++) {
		xfdr_trace_thread(t, i, &ti);
		if (read_last(t, i, &ti, &s[i], s, count, drops, err))
			return -1;
	}
	return 0;
}

int window_spans(struct xfdr_trace *t, const struct xfdr_names *names, struct window_span **out,
		 size_t *n, struct xfdr_error *err)
{
	struct window_span *s;
	uint64_t count, i;
	size_t kept = 0;
	uint32_t tid;
	int drops = 0;

	*out = NULL;
	*n = 0;
	if (xfdr_trace_threads(t, &count, err))
		return -1;
	s = calloc(count ? count : 1, sizeof(*s));
	if (!s) {
		err->offset = 0;
		snprintf(err->text, sizeof(err->text), "%s: out of memory for %llu threads",
			 xfdr_trace_name(t), (unsigned long long)count);
		return -1;
	}
	if (read_spans(t, s, count, &drops, err)) {
		free(s);
		return -1;
	}
	for (i = 0; i < count; i++) {
		if (s[i].thread_id == 0 && !s[i].has_events)
			continue; /* a process file's drop counts */
		if (s[i].overwritten || (!drops && s[i].begins_inside))
			s[i].lost |= WINDOW_LOST_START;
		if (s[i].no_buffer)
			s[i].lost |= WINDOW_LOST_END;
		tid = 0;
		s[i].name = names ? xfdr_names_thread(names, s[i].thread_id, &tid) : NULL;
		if (tid)
			s[i].tid = tid;
		s[kept++] = s[i];
	}
	*out = s;
	*n = kept;
	return 0;
}

int window_common(const struct window_span *s, size_t n, uint64_t *since, uint64_t *until)
{
	uint64_t first = UINT64_MAX, last = 0, lo = 0, hi = UINT64_MAX;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!s[i].has_events)
			continue;
		first = s[i].first_tsc < first ? s[i].first_tsc : first;
		last = s[i].last_tsc > last ? s[i].last_tsc : last;
		if ((s[i].lost & WINDOW_LOST_START) && s[i].first_tsc > lo)
			lo = s[i].first_tsc;
		if ((s[i].lost & WINDOW_LOST_END) && s[i].last_tsc < hi)
			hi = s[i].last_tsc;
	}
	if (first > last)
		return -1;
	*since = lo > first ? lo : first;
	*until = hi < last ? hi : last;
	if (*since > *until)
		return 0;
	return *since != first || *until != last;
}

long window_thread_find(const struct window_span *s, size_t n, uint64_t number, long *other)
{
	long by_id = -1, by_tid = -1;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i].thread_id == number && by_id < 0)
			by_id = (long)i;
		if (s[i].tid && s[i].tid == number && by_tid < 0)
			by_tid = (long)i;
	}
	if (by_id >= 0 && by_tid >= 0 && by_id != by_tid) {
		*other = by_tid;
		return -2;
	}
	return by_id >= 0 ? by_id : by_tid;
}

int window_has_thread(const struct window *w, uint32_t pid, uint32_t thread_id)
{
	uint64_t key = window_thread_key(pid, thread_id);
	size_t lo = 0, hi, mid;

	if (!w || !w->threads)
		return 1;
	hi = w->nthreads;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (w->threads[mid] == key)
			return 1;
		if (w->threads[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}
