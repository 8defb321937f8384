/*
 * command/convert.c - `xfdr convert`: a verified trace as the YAML `llvm-xray convert` prints.
 *
 * The output must be byte-identical to `llvm-xray convert --output-format=yaml FILE` (LLVM 14)
 * for every file both accept. That fixes more than the keys and the quoting:
 *
 *  - Record order: llvm-xray's, thread order and stable TSC sort included (llvm_order.h).
 *  - Custom events carry no function: llvm-xray prints the function id of the thread's
 *    previous record (0 before the thread's first one), and cpu 0 before version 4, whose
 *    markers carry none. Every record prints as `type:` the type of its thread's last typed
 *    event (versions 2+; llvm-xray never clears the field).
 *  - Entry_Args records are "function-enter-arg" even with no CallArgument; "args" appears
 *    only when there are arguments; "thread" and "process" are left out when 0 (optional with
 *    default 0 in llvm-xray's record mapping); version 2 files have no Pid record and
 *    llvm-xray prints their thread id as the process.
 *
 * Known, deliberate differences (both readers reject or order differently; see test_cli.c):
 *  - A thread's buffers are ordered by (seconds, microseconds, file position). llvm-xray's
 *    comparator is "seconds < and microseconds <", not a strict weak order, so it may
 *    misorder a thread's buffers (when there are more than 16, std::sort's insertion-sort
 *    cut-off, or their WallClockTimes are not in file order); then --sort=false and the
 *    func-id of custom events differ too.
 *  - The two readers accept slightly different files. xfdr verifies the whole file against
 *    the spec first and refuses (exit 1) e.g. a CallArgument after a plain Entry, which
 *    llvm-xray takes; llvm-xray 14 refuses a custom event of size 0 and a file with no
 *    buffers, both valid here (the latter prints an empty record list).
 *
 * A window (--since, --until, --thread; analysis/window.h) leaves out every record outside it,
 * after the order and the custom events' func-id have been worked out from all of them: the
 * output is llvm-xray's with those lines deleted. A call whose entry is before the window keeps
 * its exit: that is what a window is. Without one nothing differs from llvm-xray (a conversion
 * reads all of a trace unless asked: --window=all is its default).
 *
 * Memory: the records stream out of the mapped file in order; what is kept grows with the
 * threads (and the times their clock goes back), not with the records (llvm_order.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "command/split_out.h"
#include "analysis/llvm_order.h"

static const char *const fn_kind_name[] = {
    [XFDR_FN_ENTER] = "function-enter",
    [XFDR_FN_EXIT] = "function-exit",
    [XFDR_FN_TAIL_EXIT] = "function-tail-exit",
    [XFDR_FN_ENTER_ARGS] = "function-enter-arg",
};

struct convert_opts {
	const char *input; /* the first FILE */
	char **inputs;	   /* every FILE (NULL-ended); several only for the timelines */
	size_t ninputs;
	const char *output;
	struct cli_map_choice names_from; /* --map FILE; NULL: FILE.map when it exists */
	int sort;
	struct cli_window_opts window;
	int format;	     /* enum convert_format */
	int compress;	     /* perfetto: -1 not given, 0 none, 1 deflate */
	long jobs;	     /* perfetto: threads writing at once; 0 not given */
	uint64_t split_size; /* timelines: the bytes of each file; 0: one file */
};

enum convert_format {
	FORMAT_YAML = 0,
	FORMAT_TRACE_EVENT = 1,
	FORMAT_PERFETTO = 2,
	FORMAT_PPROF = 3
};

/* ---- YAML ---------------------------------------------------------------------------------- */

static void put_header(struct cli_out *o, const struct xfdr_header *h)
{
	cli_puts(o, "---\nheader:\n  version:         ");
	cli_put_u64(o, h->version);
	cli_puts(o, "\n  type:            ");
	cli_put_u64(o, h->type);
	cli_puts(o, "\n  constant-tsc:    ");
	cli_puts(o, h->constant_tsc ? "true" : "false");
	cli_puts(o, "\n  nonstop-tsc:     ");
	cli_puts(o, h->nonstop_tsc ? "true" : "false");
	cli_puts(o, "\n  cycle-frequency: ");
	cli_put_u64(o, h->cycle_frequency);
	cli_putc(o, '\n');
}

/* One record; c is what llvm-xray carries into it (see llvm_order.h). */
static void put_record(struct cli_out *o, const struct xfdr_trace *t, const struct xfdr_event *ev,
		       const struct llvm_carry *c, const struct xfdr_names *names)
{
	const struct xfdr_header *h = xfdr_trace_header(t);
	const uint32_t fid = c->fid;
	const char *name = xfdr_names_get(names, fid);
	uint32_t i;

	cli_puts(o, "  - { type: ");
	cli_put_u64(o, c->type);
	cli_puts(o, ", func-id: ");
	cli_put_u64(o, fid);
	/*
	 * Named from the sidecar, as `llvm-xray convert -m BINARY -symbolize` names them, and
	 * like it '#ID' for an id the map does not name; without a map, as llvm-xray without
	 * one, the id as a quoted number.
	 */
	if (name) {
		cli_puts(o, ", function: ");
		cli_yaml_scalar(o, (const uint8_t *)name, strlen(name));
	} else {
		cli_puts(o, names ? ", function: '#" : ", function: '");
		cli_put_u64(o, fid);
		cli_putc(o, '\'');
	}
	if (ev->type == XFDR_EVENT_FUNCTION && ev->action == XFDR_FN_ENTER_ARGS && ev->arg_count) {
		cli_puts(o, ", args: [ ");
		for (i = 0; i < ev->arg_count; i++) {
			if (i)
				cli_puts(o, ", ");
			cli_put_u64(o, xfdr_event_arg(t, ev, i));
		}
		cli_puts(o, " ]");
	}
	cli_puts(o, ", cpu: ");
	/* Custom events before version 4 carry no CPU: llvm-xray prints 0. */
	cli_put_u64(o, ev->type != XFDR_EVENT_CUSTOM || h->version >= 4 ? ev->cpu : 0);
	if (ev->thread_id) {
		cli_puts(o, ", thread: ");
		cli_put_u64(o, ev->thread_id);
	}
	/* Version 2 has no Pid record: the reader gives the thread id, as llvm-xray does. */
	if (ev->pid) {
		cli_puts(o, ", process: ");
		cli_put_u64(o, ev->pid);
	}
	cli_puts(o, ", kind: ");
	if (ev->type == XFDR_EVENT_FUNCTION)
		cli_puts(o, fn_kind_name[ev->action]);
	else
		cli_puts(o, ev->type == XFDR_EVENT_TYPED ? "typed-event" : "custom-event");
	cli_puts(o, ", tsc: ");
	cli_put_u64(o, ev->tsc);
	cli_puts(o, ", data: ");
	if (ev->type == XFDR_EVENT_FUNCTION)
		cli_puts(o, "''");
	else
		cli_yaml_scalar(o, ev->payload, ev->payload_bytes);
	cli_puts(o, " }\n");
}

/* ---- The verb ---------------------------------------------------------------------------- */

static const char convert_head[] =
    "usage: xfdr convert [--output-format=yaml|trace_event|perfetto|pprof] [-o OUT]\n"
    "                    [--sort[=BOOL]] [--compress=deflate|none] [--jobs=N]\n"
    "                    [--split-size=BYTES]\n"
    "                    [--map MAP | --no-map]\n"
    "                    [--since=WHEN] [--until=WHEN] [--thread=LIST]\n"
    "                    [--window=all|common] FILE...\n"
    "\n"
    "Print a trace as the YAML document `llvm-xray convert --output-format=yaml FILE`\n"
    "prints, byte for byte, as a timeline (trace_event, perfetto) or as a profile of its\n"
    "call stacks (pprof). The whole file is verified\n"
    "first: an invalid trace prints nothing but one line on stderr naming the offset and\n"
    "what was wrong. Memory grows with the threads, not with the records.\n"
    "The timelines take several FILEs, such as the traces of a process tree that\n"
    "`xfdr record` left: one timeline, each process with its name and parent, each\n"
    "FILE named from its own FILE.map.\n";

static const char convert_tail[] =
    "Options may also be written with one dash, as llvm-xray accepts them (-sort=false).\n"
    "Exit status: 0 converted, 1 invalid trace or write error, 2 usage error or\n"
    "unreadable FILE.\n";

/* llvm-xray's boolean option values. Returns 0 or 1, or -1 for anything else. */
static int parse_bool(const char *s)
{
	static const char *const yes[] = {"true", "TRUE", "True", "1"};
	static const char *const no[] = {"false", "FALSE", "False", "0"};
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!strcmp(s, yes[i]))
			return 1;
		if (!strcmp(s, no[i]))
			return 0;
	}
	return -1;
}

static int parse_format(void *format, const char *arg)
{
	if (!strcmp(arg, "yaml"))
		*(int *)format = FORMAT_YAML;
	else if (!strcmp(arg, "trace_event"))
		*(int *)format = FORMAT_TRACE_EVENT;
	else if (!strcmp(arg, "perfetto"))
		*(int *)format = FORMAT_PERFETTO;
	else if (!strcmp(arg, "pprof"))
		*(int *)format = FORMAT_PPROF;
	else
		return cli_usage("unsupported output format '%s' (supported: yaml, trace_event, "
				 "perfetto, pprof)",
				 arg);
	return 0;
}

static int parse_compress(void *compress, const char *arg)
{
	if (!strcmp(arg, "deflate"))
		*(int *)compress = 1;
	else if (!strcmp(arg, "none"))
		*(int *)compress = 0;
	else
		return cli_usage("'--compress' takes deflate or none, not '%s'", arg);
	return 0;
}

/* --sort alone is --sort=true. */
static int parse_sort(void *sort, const char *arg)
{
	int v = arg ? parse_bool(arg) : 1;

	if (v < 0)
		return cli_usage("'--sort' takes true or false, not '%s'", arg);
	*(int *)sort = v;
	return 0;
}

static int parse_jobs(void *jobs, const char *arg)
{
	unsigned long u;
	char *end;

	errno = 0;
	u = strtoul(arg, &end, 10);
	if (*arg < '1' || *arg > '9' || *end || errno || u > CONVERT_PERFETTO_JOBS_MAX)
		return cli_usage("'--jobs' takes a number of threads from 1 to %u, not '%s'",
				 CONVERT_PERFETTO_JOBS_MAX, arg);
	*(long *)jobs = (long)u;
	return 0;
}

/* BYTES: a number, K, M or G after it for KiB, MiB or GiB; at least SPLIT_OUT_MIN_BYTES. */
static int parse_split_size(void *size, const char *arg)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end && !end[1])
		shift = *end == 'K' || *end == 'k'   ? 10
			: *end == 'M' || *end == 'm' ? 20
			: *end == 'G' || *end == 'g' ? 30
						     : 64;
	if (*arg < '0' || *arg > '9' || errno || shift == 64 || (*end && !shift) ||
	    v > (UINT64_MAX >> shift) || (v << shift) < SPLIT_OUT_MIN_BYTES)
		return cli_usage("'--split-size' takes a size of at least %uK (a number, K, M or G "
				 "after it for KiB, MiB or GiB), not '%s'",
				 SPLIT_OUT_MIN_BYTES >> 10, arg);
	*(uint64_t *)size = (uint64_t)v << shift;
	return 0;
}

/* The options that do not go together, or not with the format. Returns 0 or a status. */
static int check_combinations(const struct convert_opts *o)
{
	if (o->ninputs > 1 && o->format != FORMAT_TRACE_EVENT && o->format != FORMAT_PERFETTO)
		return cli_usage("one FILE at a time with --output-format=%s (several only with "
				 "trace_event and perfetto); extra operand '%s'",
				 o->format == FORMAT_YAML ? "yaml" : "pprof", o->inputs[1]);
	if (o->compress >= 0 && o->format != FORMAT_PERFETTO)
		return cli_usage("'--compress' is an option of --output-format=perfetto");
	if (o->jobs && o->format != FORMAT_PERFETTO)
		return cli_usage("'--jobs' is an option of --output-format=perfetto");
	if (o->split_size && o->format != FORMAT_TRACE_EVENT && o->format != FORMAT_PERFETTO)
		return cli_usage("'--split-size' is an option of the timelines (--output-format="
				 "trace_event or perfetto)");
	if (o->split_size && o->jobs)
		return cli_usage("'--jobs' and '--split-size' do not go together: the parts are "
				 "written in time order, by one thread");
	if (o->split_size && (!o->output || !strcmp(o->output, "-")))
		return cli_usage("'--split-size' writes files: give -o OUT (the parts are named "
				 "after it)");
	return 0;
}

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_convert_opts(int argc, char **argv, struct convert_opts *o)
{
	int rc;
	const struct cli_option options[] = {
	    CLI_OPT_CALL('f', "output-format", &o->format, parse_format, "FMT",
			 "'yaml' (the default); 'trace_event': Chrome Trace Event\n"
			 "JSON for ui.perfetto.dev and chrome://tracing; 'perfetto':\n"
			 "Perfetto's own protobuf trace, for ui.perfetto.dev and\n"
			 "trace_processor; 'pprof': a gzipped profile.proto of the\n"
			 "call stacks (calls and self time), for go tool pprof,\n"
			 "Pyroscope, Parca (both binary: need -o OUT or a pipe)"),
	    CLI_OPT_CALL(0, "compress", &o->compress, parse_compress, "deflate|none",
			 "perfetto: the packets in zlib-compressed chunks, which\n"
			 "Perfetto inflates (deflate, the default), or as they are"),
	    CLI_OPT_CALL('j', "jobs", &o->jobs, parse_jobs, "N",
			 "perfetto: write N of the trace's threads at once (default:\n"
			 "the CPUs online); the output is the same bytes whatever N"),
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write to OUT instead of standard output ('-')"),
	    CLI_OPT_CALL(0, "split-size", &o->split_size, parse_split_size, "BYTES",
			 "timelines: files of about BYTES (K, M, G: KiB, MiB,\n"
			 "GiB) instead of one, OUT.0001.json, OUT.0002.json, ...,\n"
			 "consecutive in time, each a timeline of its own: a call\n"
			 "open at a cut ends there and begins again in the next\n"
			 "(xfdr_end, xfdr_begin: split)"),
	    {.kind = CLI_OPTION_CALL,
	     .short_name = 's',
	     .long_name = "sort",
	     .arg = CLI_ARG_OPTIONAL,
	     .arg_name = "BOOL",
	     .value = &o->sort,
	     .call = parse_sort,
	     .help = "stable-sort all records by TSC (default: true, as in\n"
		     "llvm-xray); --sort=false keeps each thread's records in\n"
		     "recording order, threads in llvm-xray's order"},
	    CLI_OPT_MAP(&o->names_from,
			"name functions from MAP, a .map sidecar the runtime\n"
			"wrote (default: FILE.map when it exists)",
			"print function ids only, exactly as llvm-xray without\n"
			"an instrumentation map"),
	    CLI_OPT_WINDOW(&o->window, "with neither --since nor --until: 'all' (the default: a\n"
				       "conversion keeps every record) or 'common' (only the\n"
				       "time every thread's kept history covers)"),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	/* CLI_LONG_ONLY, so llvm-xray's single-dash spellings (-output-format=yaml) work. */
	const struct cli_command cmd = {
	    .head = convert_head,
	    .tail = convert_tail,
	    .column = 27,
	    .flags = CLI_LONG_ONLY,
	    .operands = CLI_SOME_OPERANDS,
	    .operand = "FILE",
	    .options = options,
	};

	memset(o, 0, sizeof(*o));
	o->sort = 1;
	o->format = FORMAT_YAML;
	o->compress = -1;
	o->window.whole = 1;
	o->window.quiet = 1; /* the output says its window (trace_event's since_tsc, ...) */
	rc = cli_options_parse(&cmd, argc, argv, &o->inputs);
	if (rc)
		return rc;
	o->input = o->inputs[0];
	rc = cli_count_inputs(o->inputs, &o->names_from, &o->ninputs);
	if (rc)
		return rc;
	rc = check_combinations(o);
	if (rc)
		return rc;
	if (o->compress < 0)
		o->compress = 1;
	if (!o->jobs) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		o->jobs = cpus < 1			     ? 1
			  : cpus > CONVERT_PERFETTO_JOBS_MAX ? CONVERT_PERFETTO_JOBS_MAX
							     : cpus;
	}
	return 0;
}

/*
 * The YAML document of t's records in order (those in the window w) into out, which is closed.
 * Returns CLI_OK, or CLI_FAIL after reporting.
 */
static int write_yaml(struct xfdr_trace *t, struct llvm_order *order,
		      const struct xfdr_names *names, const struct window *w, struct cli_out *out,
		      struct cli_progress *prog)
{
	const struct xfdr_event *ev;
	struct llvm_carry carry;
	struct xfdr_error err;
	uint64_t n = 0, done, total;
	int rc = 0;

	put_header(out, xfdr_trace_header(t));
	while (!out->err && (rc = llvm_order_next(order, &ev, &carry, &err)) == 1) {
		if (ev->tsc < w->since || ev->tsc > w->until ||
		    !window_has_thread(w, ev->pid, ev->thread_id))
			continue;
		cli_puts(out, n++ ? "" : "records:\n");
		put_record(out, t, ev, &carry, names);
		if ((n & 0xffff) == 0) {
			llvm_order_progress(order, &done, &total);
			cli_progress_update(prog, done, total);
		}
	}
	llvm_order_progress(order, &done, &total);
	cli_progress_update(prog, done, total);
	cli_progress_end(prog);
	if (!out->err && rc < 0) {
		/* The output is cut short and must not pass for a whole one. */
		cli_error("%s", err.text);
		cli_out_close(out);
		return CLI_FAIL;
	}
	cli_puts(out, n ? "...\n" : "records:         []\n...\n");
	return cli_out_close(out);
}

/*
 * Write the timeline or profile of the n open inputs into out, or into split's parts (out
 * NULL), which is closed.
 */
static int write_other(const struct convert_opts *opt, const struct cli_input *in,
		       const struct cli_window *w, struct cli_out *out, struct split_out *split,
		       struct cli_progress *prog)
{
	int status;

	if (opt->format == FORMAT_TRACE_EVENT)
		status = convert_trace_event(in, opt->ninputs, w->win, out, split, prog);
	else if (opt->format == FORMAT_PERFETTO)
		status = convert_perfetto(in, opt->ninputs, w->win, opt->compress,
					  (unsigned)opt->jobs, out, split, prog);
	else
		status = convert_pprof(&in[0], w, out, prog);
	cli_progress_end(prog);
	if ((split ? split_out_close(split) : cli_out_close(out)) != CLI_OK)
		status = CLI_FAIL;
	return status;
}

int cmd_convert(int argc, char **argv)
{
	struct convert_opts opt;
	struct cli_input *in = NULL;
	struct llvm_order *order = NULL;
	struct cli_progress prog = {0}; /* ended on every path, begun or not */
	struct progress sink = cli_progress_sink(&prog);
	struct cli_out *out = NULL, *first;
	struct split_out *split = NULL;
	struct cli_window w = {0};
	struct xfdr_error err;
	int status;

	status = parse_convert_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_inputs_open(opt.inputs, opt.ninputs, opt.output, &opt.names_from, &prog, &in);
	if (!status)
		status = cli_window_resolve(&opt.window, in, opt.ninputs, &w);
	if (status)
		goto out;
	status = CLI_FAIL;
	if (opt.format == FORMAT_YAML &&
	    llvm_order_open(in[0].t, opt.sort, &sink, &order, &err) < 0) {
		cli_progress_end(&prog);
		cli_error("%s", err.text);
		goto out;
	}
	if (opt.split_size) {
		split = malloc(sizeof(*split));
		if (!split) {
			cli_error("out of memory");
			goto out;
		}
		if (split_out_open(split, opt.output, opt.split_size))
			goto out;
	} else if (!(out = cli_out_new(opt.output))) {
		goto out;
	}
	first = split ? split->o : out;
	/* Progress and a stream on the same terminal would garble each other. */
	if (isatty(fileno(first->f))) {
		cli_progress_end(&prog);
		prog.on = 0;
	}
	cli_progress_phase(&prog, "writing");
	if ((opt.format == FORMAT_PERFETTO || opt.format == FORMAT_PPROF) &&
	    isatty(fileno(first->f))) {
		cli_error("refusing to write a binary %s to a terminal: give -o OUT or a pipe",
			  opt.format == FORMAT_PPROF ? "profile" : "trace");
		status = CLI_USAGE;
		if (split)
			split_out_close(split);
		else
			cli_out_close(out);
	} else if (opt.format != FORMAT_YAML) {
		status = write_other(&opt, in, &w, out, split, &prog);
	} else {
		status = write_yaml(in[0].t, order, in[0].names, &w.win[0], out, &prog);
	}
out:
	cli_progress_end(&prog);
	free(out);
	if (split)
		free(split->o); /* NULL once closed */
	free(split);
	llvm_order_close(order);
	cli_window_free(&w);
	cli_inputs_close(in, opt.ninputs);
	return status;
}
