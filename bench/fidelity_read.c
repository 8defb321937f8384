/*
 * bench/fidelity_read.c - how much of the recorder's own time a trace shows inside the user's
 * calls (`make bench-fidelity`).
 *
 * usage: fidelity_read TRACE
 *
 * TRACE is what bench/fidelity_prog.c left (its .map beside it names the functions). Prints one
 * line: the calls of empty_call, their median and longest recorded duration, the longest of
 * each thread's first call (a thread's first event: its slot, first buffer and pages are set
 * up then), and main's time from its entry to its first callee's, empty_call (nothing of the
 * program's between them: start-up counted as main's own time shows there). Times in microseconds,
 * from the trace's TSC rate. Exit status 1 when the trace cannot be read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfdr/reader.h"

#define MAX_CALLS 4096
#define MAX_DEPTH 64

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One thread's walk: the open calls' entry times and ids, main's entry, what was seen. */
struct thread_walk {
	uint64_t stack[MAX_DEPTH], main_enter;
	uint32_t ids[MAX_DEPTH];
	unsigned depth;
	int seen_empty, in_main;
};

int main(int argc, char **argv)
{
	static uint64_t d[MAX_CALLS];
	uint64_t first_max = 0, main_gap = 0, threads, i, hz;
	struct xfdr_names *names = NULL;
	struct xfdr_trace *t = NULL;
	struct xfdr_event_iter it;
	struct xfdr_error err;
	struct xfdr_event ev;
	char map[4096];
	uint32_t empty = 0, main_fid = 0, id;
	size_t n = 0;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: fidelity_read TRACE\n");
		return 2;
	}
	snprintf(map, sizeof(map), "%s.map", argv[1]);
	if (xfdr_names_load(map, &names, &err) || xfdr_trace_open(argv[1], &t, &err) ||
	    xfdr_trace_threads(t, &threads, &err)) {
		fprintf(stderr, "fidelity_read: %s\n", err.text);
		return 1;
	}
	for (id = 1; id < 1u << 16 && (!empty || !main_fid); id++) {
		const char *name = xfdr_names_get(names, id);

		if (name && !strcmp(name, "empty_call"))
			empty = id;
		else if (name && !strcmp(name, "main"))
			main_fid = id;
	}
	hz = xfdr_trace_header(t)->cycle_frequency;
	if (!empty || !main_fid || !hz) {
		fprintf(stderr,
			"fidelity_read: %s: no empty_call or main in the .map, or no TSC rate\n",
			argv[1]);
		return 1;
	}
	for (i = 0; i < threads; i++) {
		struct thread_walk w = {0};

		if (xfdr_events_begin_thread(t, i, &it, &err))
			break;
		while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
			if (ev.type != XFDR_EVENT_FUNCTION)
				continue;
			if (ev.action == XFDR_FN_ENTER || ev.action == XFDR_FN_ENTER_ARGS) {
				if (w.in_main == 1 && ev.function_id != main_fid) {
					main_gap = ev.tsc - w.main_enter;
					w.in_main = 2;
				}
				if (ev.function_id == main_fid && !w.in_main) {
					w.main_enter = ev.tsc;
					w.in_main = 1;
				}
				if (w.depth < MAX_DEPTH) {
					w.stack[w.depth] = ev.tsc;
					w.ids[w.depth] = ev.function_id;
				}
				w.depth++;
				continue;
			}
			if (!w.depth)
				continue;
			w.depth--;
			if (w.depth < MAX_DEPTH && w.ids[w.depth] == empty && n < MAX_CALLS) {
				d[n] = ev.tsc - w.stack[w.depth];
				if (!w.seen_empty && d[n] > first_max)
					first_max = d[n];
				w.seen_empty = 1;
				n++;
			}
		}
		if (rc < 0)
			break;
	}
	if (i < threads) {
		fprintf(stderr, "fidelity_read: %s\n", err.text);
		return 1;
	}
	if (!n) {
		fprintf(stderr, "fidelity_read: %s: no call of empty_call\n", argv[1]);
		return 1;
	}
	qsort(d, n, sizeof(d[0]), by_value);
	printf("%zu calls of empty_call: median %.3f us, longest %.3f us, longest first call of a "
	       "thread %.3f us; main before its first callee %.3f us\n",
	       n, (double)d[n / 2] * 1e6 / (double)hz, (double)d[n - 1] * 1e6 / (double)hz,
	       (double)first_max * 1e6 / (double)hz, (double)main_gap * 1e6 / (double)hz);
	xfdr_trace_close(t);
	xfdr_names_free(names);
	return 0;
}
