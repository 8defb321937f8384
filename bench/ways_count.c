/*
 * bench/ways_count.c - `ways_count TRACE`: the function events of an xfdr trace (entries,
 * exits, tail exits; the drop-count buffer of thread 0 has none), read with libxfdr_reader
 * after a full verify, and what its .map sidecar says about drops and names.
 * Prints one line: "events N drops D functions F named M". Exit 1 when the trace is invalid.
 */
#include <stdio.h>
#include <string.h>

#include "xfdr/reader.h"

int main(int argc, char **argv)
{
	unsigned long long events = 0, drops = 0, functions = 0, named = 0;
	struct xfdr_trace *t = NULL;
	struct xfdr_event_iter it;
	struct xfdr_error err;
	struct xfdr_event ev;
	char map[4096], line[8192];
	FILE *f;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: ways_count TRACE\n");
		return 2;
	}
	memset(&err, 0, sizeof(err));
	if (xfdr_trace_open(argv[1], &t, &err) || xfdr_trace_verify(t, &err) ||
	    xfdr_events_begin(t, XFDR_ORDER_FILE, &it, &err)) {
		fprintf(stderr, "ways_count: %s\n", err.text);
		return 1;
	}
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1)
		events += ev.type == XFDR_EVENT_FUNCTION;
	if (rc < 0) {
		fprintf(stderr, "ways_count: %s\n", err.text);
		return 1;
	}
	xfdr_trace_close(t);
	snprintf(map, sizeof(map), "%s.map", argv[1]);
	f = fopen(map, "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char name[4096];
			unsigned id;

			if (sscanf(line, "dropped\ttotal\t%llu", &drops) == 1)
				continue;
			if (sscanf(line, "function\t%u\t%4095[^\t]", &id, name) == 2) {
				functions++;
				named += name[0] != '<';
			}
		}
		fclose(f);
	}
	printf("events %llu drops %llu functions %llu named %llu\n", events, drops, functions,
	       named);
	return 0;
}
