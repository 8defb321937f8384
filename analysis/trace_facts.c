/*
 * analysis/trace_facts.c - a trace's threads, function records and drops (trace_facts.h).
 */
#include <string.h>

#include "analysis/trace_facts.h"

int trace_facts_read(struct xfdr_trace *t, struct trace_facts *tf, struct xfdr_error *err)
{
	struct xfdr_event_iter it;
	struct xfdr_thread_info ti;
	struct xfdr_drop_event d;
	struct xfdr_event ev;
	uint64_t count, i;
	int rc;

	memset(tf, 0, sizeof(*tf));
	if (xfdr_trace_threads(t, &count, err) < 0)
		return -1;
	/* Thread id 0 holds only the drop counts of a process file. */
	for (i = 0; i < count; i++)
		if (!xfdr_trace_thread(t, i, &ti) && ti.thread_id != 0)
			tf->threads++;
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
		}
	}
	for (i = 0; i < XFDR_MAP_DROP_TOTAL; i++)
		tf->drop[XFDR_MAP_DROP_TOTAL] += tf->drop[i];
	return rc < 0 ? -1 : 0;
}
