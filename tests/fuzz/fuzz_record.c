/*
 * tests/fuzz/fuzz_record.c - libFuzzer target: the end of `xfdr record`
 * (command/record_report.c), which reads the trace and the .map the recorded program left:
 * files a hostile program writes as it likes. Its parsers are static, so its source is included
 * here: the trace file name parser, the .map's reading (load_map(): the reader's lenient
 * parser and its pool facts, whatever the trace is) and the summary of one
 * trace (summarize(): the reader's checks, the XFDRDROP counts, the names, the top functions).
 *
 * The input is fuzz_reader's: a trace, optionally followed by FUZZ_MAP_MARK and its .map. Both
 * are written into the scratch folder as "p-1-0.xray" and "p-1-0.xray.map", as the runtime names
 * them; the first line of the input is also parsed as a trace's file name. The summary goes to
 * stderr (closed by the fuzzer's -close_fd_mask); what matters is that nothing crashes, hangs,
 * leaks or reads out of bounds.
 */
#include "command/record_report.c"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>

#include "tests/fuzz/fuzz_support.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *mark = memmem(data, size, FUZZ_MAP_MARK, sizeof(FUZZ_MAP_MARK) - 1);
	size_t trace_bytes = mark ? (size_t)(mark - data) : size, i;
	struct xfdr_names *map_lines;
	struct xfdr_map_pool m;
	struct found f;
	char name[256];

	/* The first line, as a name in the output folder. */
	for (i = 0; i < size && i < sizeof(name) - 1 && data[i] != '\n'; i++)
		name[i] = data[i] ? (char)data[i] : '?';
	name[i] = '\0';
	memset(&f, 0, sizeof(f));
	(void)parse_trace_name(name, &f);

	put(trace_path, data, trace_bytes);
	if (mark)
		put(map_path, mark + sizeof(FUZZ_MAP_MARK) - 1,
		    size - trace_bytes - (sizeof(FUZZ_MAP_MARK) - 1));
	else
		unlink(map_path);

	(void)load_map(map_path, &map_lines);
	xfdr_names_pool(map_lines, &m);
	if (m.have_drops)
		put_drops(m.dropped, m.mode);
	xfdr_names_free(map_lines);

	memset(&f, 0, sizeof(f));
	f.name = "p-1-0.xray";
	f.pid = 1;
	f.bytes = (off_t)trace_bytes;
	summarize(trace_path, &f, deep(data, trace_bytes) ? 0 : 10);

	unlink(trace_path);
	unlink(map_path);
	return 0;
}
