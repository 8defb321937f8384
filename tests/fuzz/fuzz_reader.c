/*
 * tests/fuzz/fuzz_reader.c - libFuzzer target: the reader library and every verb of the xfdr
 * command that reads a trace, on one input.
 *
 * The input is a trace file, optionally followed by FUZZ_MAP_MARK and a .map sidecar. Both are
 * written to memfds and handed to the verbs by their /proc/self/fd names, as a user would
 * name files: verify, dump (plain and --stacks), convert (yaml, sorted, trace_event, perfetto
 * compressed and not; both timelines split into parts), account (plain, --deduce-sibling-calls,
 * --recursive-calls-only, --keep-going), stack (self and total, per thread), flame and convert
 * to pprof, funcs, diff, stack --diff and flame --diff (the input against itself), and each of them
 * again through a window (--since, --until, --thread, --window). Then `recover
 * --salvage` on the same bytes, and the library's API directly (both event orders, every thread's
 * iterator). Output goes to /dev/null; what matters is that nothing crashes, hangs, leaks or reads
 * out of bounds.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "command/cli.h"
#include "command/split_out.h"
#include "tests/fuzz/fuzz_support.h"
#include "xfdr/reader.h"

#define FUZZ_MAP_MARK "\n#XFDR-FUZZ-MAP#\n"

/*
 * A stack context may claim up to 2^24 calls it does not name (CALLSTACK_UNNAMED_MAX);
 * the pairer reports each of them, so account, stack and flame take time linear in what the
 * context claims: a quarter of a second each for 2^24 in a plain build, but tens of seconds
 * under the sanitizers and coverage, beyond the fuzzer's timeout. Those verbs are left out
 * for such inputs (the others still run); tests/unit covers the deep contexts.
 */
#define FUZZ_UNNAMED_MAX 65536u

static int trace_fd = -1, map_fd = -1;
static char trace_path[64], map_path[64], map_opt[80];

static void put(int fd, const uint8_t *p, size_t n)
{
	if (ftruncate(fd, 0) || (n && pwrite(fd, p, n, 0) != (ssize_t)n))
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_setup();
	trace_fd = fuzz_memfd("trace", trace_path, sizeof(trace_path));
	map_fd = fuzz_memfd("map", map_path, sizeof(map_path));
	snprintf(map_opt, sizeof(map_opt), "--map=%s", map_path);
	return 0;
}

static void verb(int (*cmd)(int, char **), const char *a0, const char *a1, const char *a2,
		 const char *a3, const char *a4)
{
	const char *in[] = {a0, a1, a2, a3, a4};
	char *argv[8];
	int argc = 0;
	size_t i;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		if (in[i])
			argv[argc++] = (char *)in[i];
	argv[argc] = NULL;
	cli_set_verb(a0);
	cmd(argc, argv);
}

/* convert FORMAT --split-size=64K into parts in fuzz_out_dir, removed after. */
static void split(const char *format, const char *m)
{
	char out[128], part[160], *argv[] = {"convert", (char *)format, "--split-size=64K", "-o",
					     out,	(char *)m,	trace_path,	    NULL};
	unsigned k;

	snprintf(out, sizeof(out), "%s/split.out", fuzz_out_dir);
	cli_set_verb("convert");
	cmd_convert(7, argv);
	for (k = 1; split_out_name(out, k, part, sizeof(part)) == 0 && unlink(part) == 0; k++)
		;
}

/* The library's own API, beyond what the verbs use. */
/* Returns 1 when a stack context claims more than FUZZ_UNNAMED_MAX unnamed calls. */
static int api(const uint8_t *data, size_t size)
{
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_thread_info ti;
	uint64_t threads, i, n;
	uint32_t k;
	int o, deep = 0;

	if (xfdr_trace_open_memory(data, size, "fuzz", &t, &err))
		return 0;
	xfdr_records_begin(t, &c);
	for (n = 0; n < 1000000 && xfdr_records_next(&c, &r, &err) > 0; n++)
		;
	for (o = XFDR_ORDER_FILE; o <= XFDR_ORDER_THREAD; o++) {
		if (xfdr_events_begin(t, o, &it, &err))
			break;
		while (xfdr_events_next(&it, &ev, &err) > 0) {
			for (k = 0; k < ev.arg_count; k++)
				(void)xfdr_event_arg(t, &ev, k);
			if (ev.type == XFDR_EVENT_CUSTOM) {
				struct xfdr_stack_context sc;
				struct xfdr_crash_event ce;

				if (!xfdr_stack_context_decode(ev.payload, ev.payload_bytes,
							       ev.big_endian, &sc, &err) &&
				    sc.depth - sc.id_count > FUZZ_UNNAMED_MAX)
					deep = 1;
				xfdr_crash_event_decode(ev.payload, ev.payload_bytes, ev.big_endian,
							&ce, &err);
			}
		}
	}
	if (!xfdr_trace_threads(t, &threads, &err)) {
		for (i = 0; i < threads && i < 64; i++) {
			if (xfdr_trace_thread(t, i, &ti) ||
			    xfdr_events_begin_thread(t, i, &it, &err))
				abort();
			while (xfdr_events_next(&it, &ev, &err) > 0)
				;
		}
		if (!xfdr_trace_thread(t, threads, &ti))
			abort(); /* out of range must be refused */
	}
	xfdr_trace_close(t);
	return deep;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *mark = memmem(data, size, FUZZ_MAP_MARK, sizeof(FUZZ_MAP_MARK) - 1);
	size_t trace_bytes = mark ? (size_t)(mark - data) : size;
	const char *m = mark ? map_opt : "--no-map";
	char out[128];
	int deep;

	put(trace_fd, data, trace_bytes);
	if (mark)
		put(map_fd, mark + sizeof(FUZZ_MAP_MARK) - 1,
		    size - trace_bytes - (sizeof(FUZZ_MAP_MARK) - 1));
	deep = api(data, trace_bytes);

	verb(cmd_verify, "verify", trace_path, NULL, NULL, NULL);
	verb(cmd_dump, "dump", m, trace_path, NULL, NULL);
	verb(cmd_dump, "dump", "--stacks", m, trace_path, NULL);
	verb(cmd_convert, "convert", "--output-format=yaml", m, trace_path, NULL);
	verb(cmd_convert, "convert", "--output-format=yaml", "--sort", m, trace_path);
	verb(cmd_convert, "convert", "--output-format=trace_event", m, trace_path, NULL);
	verb(cmd_convert, "convert", "--output-format=perfetto", m, trace_path, NULL);
	verb(cmd_convert, "convert", "--output-format=perfetto", "--compress=none", m, trace_path);
	split("--output-format=trace_event", m);
	split("--output-format=perfetto", m);
	/* Windows: edges in times from the trace's start and as TSCs, threads by id or tid. */
	verb(cmd_dump, "dump", "--since=100ns", "--until=5us", "--thread=1", trace_path);
	verb(cmd_convert, "convert", "--since=200ns", "--until=20us", m, trace_path);
	verb(cmd_convert, "convert", "--output-format=trace_event", "--until=2us", m, trace_path);
	verb(cmd_convert, "convert", "--output-format=perfetto", "--since=1us", "--until=10us",
	     trace_path);
	verb(cmd_convert, "convert", "--output-format=trace_event", "--window=common", m,
	     trace_path);
	if (deep)
		goto recover;
	verb(cmd_account, "account", "--window=all", m, trace_path, NULL);
	verb(cmd_account, "account", "--since=500ns", "--until=50us", "--thread=1,2", trace_path);
	verb(cmd_stack, "stack", "--since=50ns", "--until=1000000", m, trace_path);
	verb(cmd_flame, "flame", "--window=all", "--thread=1", m, trace_path);
	verb(cmd_convert, "convert", "--output-format=pprof", "--until=1us", m, trace_path);
	verb(cmd_account, "account", m, trace_path, NULL, NULL);
	verb(cmd_account, "account", "--deduce-sibling-calls", "--sort=sum", m, trace_path);
	verb(cmd_account, "account", "--recursive-calls-only", "--keep-going", m, trace_path);
	verb(cmd_account, "account", "--recursive-calls-only", "--deduce-sibling-calls", m,
	     trace_path);
	verb(cmd_stack, "stack", m, trace_path, NULL, NULL);
	verb(cmd_stack, "stack", "--value=total", "--per-thread", m, trace_path);
	verb(cmd_flame, "flame", "--per-thread", m, trace_path, NULL);
	verb(cmd_convert, "convert", "--output-format=pprof", m, trace_path, NULL);
	verb(cmd_funcs, "funcs", m, trace_path, NULL, NULL);
	verb(cmd_funcs, "funcs", "--window=all", "--min-share=0", trace_path, NULL);
	/* Two runs compared: the input against itself, the --diff modes walking both at once. */
	verb(cmd_diff, "diff", "--window=all", trace_path, trace_path, NULL);
	verb(cmd_stack, "stack", "--diff", m, trace_path, trace_path);
	verb(cmd_flame, "flame", "--diff", m, trace_path, trace_path);

recover:
	/* recover --salvage: the complete buffers of a cut file. */
	snprintf(out, sizeof(out), "%s/salvaged.xray", fuzz_out_dir);
	{
		char *argv[] = {"recover", "--salvage", "--force", "-o", out, trace_path, NULL};

		cli_set_verb("recover");
		cmd_recover(6, argv);
	}
	unlink(out);
	snprintf(out, sizeof(out), "%s/salvaged.xray.map", fuzz_out_dir);
	unlink(out);
	return 0;
}
