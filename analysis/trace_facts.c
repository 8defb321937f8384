/*
 * analysis/trace_facts.c - a trace's threads, function records and drops (trace_facts.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/trace_facts.h"

/* The kernel tids of the XFDRDROP entries of threads without events, each once. */
struct tid_set {
	uint32_t *tid;
	size_t n, cap;
};

static int tid_add(struct tid_set *s, uint32_t tid)
{
	size_t i;

	/* Few threads drop all they record: a scan is enough. */
	for (i = 0; i < s->n; i++)
		if (s->tid[i] == tid)
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		uint32_t *v = realloc(s->tid, cap * sizeof(*v));

		if (!v)
			return -1;
		s->tid = v;
		s->cap = cap;
	}
	s->tid[s->n++] = tid;
	return 0;
}

/*
 * The entries of drop event d whose thread has no events here (*with: a bit per thread id
 * that has some) into s. 0, or -1 when out of memory.
 */
static int add_unrecorded(const struct xfdr_drop_event *d, const uint8_t *with, struct tid_set *s)
{
	struct xfdr_drop_thread e;
	uint32_t i;

	for (i = 0; i < d->thread_count; i++) {
		xfdr_drop_event_thread(d, i, &e);
		if (!(with[e.thread_id / 8] & (1u << (e.thread_id % 8))) && tid_add(s, e.tid))
			return -1;
	}
	return 0;
}

int trace_facts_read(struct xfdr_trace *t, struct trace_facts *tf, struct xfdr_error *err)
{
	uint8_t with[65536 / 8]; /* a bit per 16-bit thread id that has events */
	struct tid_set unrecorded = {NULL, 0, 0};
	struct xfdr_event_iter it;
	struct xfdr_thread_info ti;
	struct xfdr_drop_event d;
	struct xfdr_event ev;
	uint64_t count, i;
	int rc;

	memset(tf, 0, sizeof(*tf));
	memset(with, 0, sizeof(with));
	if (xfdr_trace_threads(t, &count, err) < 0)
		return -1;
	/*
	 * Thread id 0 holds only the drop counts of a process file. An XFDRDROP entry names a
	 * 16-bit id; compiler-rt's later versions record 32-bit ones, which no entry names.
	 */
	for (i = 0; i < count; i++) {
		if (xfdr_trace_thread(t, i, &ti) || ti.thread_id == 0)
			continue;
		tf->threads++;
		if (ti.thread_id < 65536)
			with[ti.thread_id / 8] |= (uint8_t)(1u << (ti.thread_id % 8));
	}
	if (xfdr_events_begin(t, XFDR_ORDER_FILE, &it, err) < 0)
		return -1;
	while ((rc = xfdr_events_next(&it, &ev, err)) == 1) {
		if (ev.type == XFDR_EVENT_FUNCTION) {
			tf->functions++;
		} else if (ev.type == XFDR_EVENT_CUSTOM &&
			   !xfdr_drop_event_decode(ev.payload, ev.payload_bytes, ev.big_endian, &d,
						   NULL)) {
			tf->have_drops = 1;
			tf->drop[XFDR_MAP_DROP_NO_BUFFER] += d.no_buffer;
			tf->drop[XFDR_MAP_DROP_REENTRANT] += d.reentrant;
			tf->drop[XFDR_MAP_DROP_TOO_LARGE] += d.too_large;
			tf->drop[XFDR_MAP_DROP_NO_THREAD_SLOT] += d.no_thread_slot;
			tf->overwritten += d.overwritten;
			if (add_unrecorded(&d, with, &unrecorded) < 0) {
				err->offset = 0;
				snprintf(err->text, sizeof(err->text), "%s: out of memory",
					 xfdr_trace_name(t));
				rc = -1;
				break;
			}
		}
	}
	for (i = 0; i < XFDR_MAP_DROP_TOTAL; i++)
		tf->drop[XFDR_MAP_DROP_TOTAL] += tf->drop[i];
	tf->threads_unrecorded = unrecorded.n;
	free(unrecorded.tid);
	return rc < 0 ? -1 : 0;
}
