/*
 * tests/fuzz/fuzz_record.c - libFuzzer target: what the end of `xfdr record` reads of the
 * files the recorded program left, files a hostile program writes as it likes. The summary
 * (command/record.c) prints what these library calls give, in the same order: the trace file
 * name parser (launcher/trace_listing.c), the .map's lenient reading and its pool and crash
 * facts (the reader), the trace's checks and facts (reader, analysis/trace_facts.c) and the
 * functions by self time (analysis/latency.c), with every crash frame the .map names.
 *
 * The input is fuzz_reader's: a trace, optionally followed by FUZZ_MAP_MARK and its .map. Both
 * are written into the scratch folder as "p-1-0.xray" and "p-1-0.xray.map", as the runtime names
 * them; the first line of the input is also parsed as a trace's file name. What matters is that
 * nothing crashes, hangs, leaks or reads out of bounds.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/latency.h"
#include "analysis/trace_facts.h"
#include "launcher/trace_listing.h"
#include "tests/fuzz/fuzz_support.h"
#include "xfdr/reader.h"

#define FUZZ_MAP_MARK "\n#XFDR-FUZZ-MAP#\n"

/* As fuzz_reader: account's pairing is linear in the unnamed calls a stack context claims. */
#define FUZZ_UNNAMED_MAX 65536u

static char trace_path[128], map_path[160];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_setup();
	snprintf(trace_path, sizeof(trace_path), "%s/p-1-0.xray", fuzz_out_dir);
	snprintf(map_path, sizeof(map_path), "%s.map", trace_path);
	return 0;
}

static void put(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n) || close(fd))
		abort();
}

/* Does a stack context of the trace claim more than FUZZ_UNNAMED_MAX unnamed calls? */
static int deep(const uint8_t *data, size_t size)
{
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_stack_context sc;
	int found = 0;

	if (xfdr_trace_open_memory(data, size, "fuzz", &t, &err))
		return 0;
	if (!xfdr_events_begin(t, XFDR_ORDER_FILE, &it, &err)) {
		while (!found && xfdr_events_next(&it, &ev, &err) > 0)
			found = ev.type == XFDR_EVENT_CUSTOM &&
				!xfdr_stack_context_decode(ev.payload, ev.payload_bytes,
							   ev.big_endian, &sc, &err) &&
				sc.depth - sc.id_count > FUZZ_UNNAMED_MAX;
	}
	xfdr_trace_close(t);
	return found;
}

static void count_left_out(void *ctx, uint64_t line, const char *text)
{
	(void)line;
	(void)text;
	++*(unsigned *)ctx;
}

/*
 * The .map as the summary reads it: leniently, then its pool, crash and frames. Into *all;
 * returns the names the top functions get: none when a line was left out.
 */
static struct xfdr_names *read_map(struct xfdr_names **all)
{
	struct xfdr_names *n = NULL;
	struct xfdr_map_pool m;
	struct xfdr_map_crash c;
	struct xfdr_map_frame fr;
	struct xfdr_error err;
	uint32_t i;
	unsigned left_out = 0;
	FILE *f = fopen(map_path, "r");

	*all = NULL;
	if (!f)
		return NULL;
	(void)xfdr_names_read_lenient(f, map_path, count_left_out, &left_out, &n, &err);
	fclose(f);
	*all = n;
	xfdr_names_pool(n, &m);
	(void)xfdr_names_crash(n, &c);
	for (i = 0; i < xfdr_names_frame_count(n); i++)
		(void)xfdr_names_frame(n, i, &fr);
	return left_out ? NULL : n;
}

/* The trace as the summary reads it: verified, its facts, its functions by self time. */
static void read_trace(const struct xfdr_names *names, int top)
{
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct trace_facts tf;
	struct latency_total *v;
	size_t n;

	if (xfdr_trace_open(trace_path, &t, &err) < 0)
		return;
	if (!xfdr_trace_verify(t, &err) && !trace_facts_read(t, &tf, &err) && top &&
	    !latency_totals(t, names, NULL, &v, &n, &err))
		free(v);
	xfdr_trace_close(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *mark = memmem(data, size, FUZZ_MAP_MARK, sizeof(FUZZ_MAP_MARK) - 1);
	size_t trace_bytes = mark ? (size_t)(mark - data) : size, i;
	struct xfdr_names *names, *all;
	struct launch_trace f;
	char name[256];

	/* The first line, as a name in the output folder. */
	for (i = 0; i < size && i < sizeof(name) - 1 && data[i] != '\n'; i++)
		name[i] = data[i] ? (char)data[i] : '?';
	name[i] = '\0';
	memset(&f, 0, sizeof(f));
	(void)launch_trace_name_parse(name, &f);

	put(trace_path, data, trace_bytes);
	if (mark)
		put(map_path, mark + sizeof(FUZZ_MAP_MARK) - 1,
		    size - trace_bytes - (sizeof(FUZZ_MAP_MARK) - 1));
	else
		unlink(map_path);

	names = read_map(&all);
	read_trace(names, !deep(data, trace_bytes));
	xfdr_names_free(all);

	unlink(trace_path);
	unlink(map_path);
	return 0;
}
