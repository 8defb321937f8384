/*
 * command/account.c - `xfdr account`: a per-function latency table, as `llvm-xray account`.
 *
 * The table is analysis/latency.h's; where llvm-xray (LLVM 14) can account a file, the output
 * is its output byte for byte, text and CSV, for every --sort, --sortorder and --top:
 *
 *  - Text: "%9s %10s [...]" columns with "%.6f" seconds; CSV: "%.6e", as raw_ostream prints
 *    a double. The debug-info column is "(unknown)", what llvm-xray prints without an
 *    instrumentation map: the .map sidecar names functions but has no file:line. The name is
 *    the sidecar's, else "#ID" as in llvm-xray. In CSV a '"' inside a name is doubled (RFC
 *    4180); llvm-xray writes it as is, but its "#ID" names never hold one.
 *  - What was not counted (and the calls whose exit was deduced) is told in one summary line
 *    on stderr; when there is nothing to tell, stderr stays empty.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/latency.h"
#include "command/cli.h"
#include "command/option_table.h"

static const char *const sort_names[] = {
    [LATENCY_SORT_FUNCID] = "funcid", [LATENCY_SORT_COUNT] = "count", [LATENCY_SORT_MIN] = "min",
    [LATENCY_SORT_MED] = "med",	      [LATENCY_SORT_90P] = "90p",     [LATENCY_SORT_99P] = "99p",
    [LATENCY_SORT_MAX] = "max",	      [LATENCY_SORT_SUM] = "sum",     [LATENCY_SORT_FUNC] = "func",
    [LATENCY_SORT_FUNC + 1] = NULL,
};
static const char *const order_names[] = {"asc", "dsc", NULL};
static const char *const format_names[] = {"text", "csv", NULL};

struct account_opts {
	const char *input;
	const char *output;
	struct cli_map_choice names_from;
	int csv;	/* index in format_names */
	int sort;	/* enum latency_sort, index in sort_names */
	int descending; /* index in order_names */
	long top;	/* <= 0: every row, as llvm-xray's default -1 */
	struct latency_options table;
};

/* ---- Output ---------------------------------------------------------------------------------- */

static void put_double(struct cli_out *o, const char *fmt, double v)
{
	char b[64];

	snprintf(b, sizeof(b), fmt, v);
	cli_puts(o, b);
}

static void put_text(struct cli_out *o, const struct latency_row *const *rows, size_t shown,
		     size_t total)
{
	char b[512];
	size_t i;

	cli_printf(o, "Functions with latencies: %zu\n", total);
	snprintf(b, sizeof(b), "%9s %10s [%9s, %9s, %9s, %9s, %9s] %9s  %-12s\n", "funcid", "count",
		 "min", "med", "90p", "99p", "max", "sum", "function");
	cli_puts(o, b);
	for (i = 0; i < shown && !o->err; i++) {
		const struct latency_row *f = rows[i];

		snprintf(b, sizeof(b),
			 "%9d %10" PRIu64 " [%9.6f, %9.6f, %9.6f, %9.6f, %9.6f] %9.6f  (unknown): ",
			 (int32_t)f->fid, f->count, f->min, f->med, f->p90, f->p99, f->max, f->sum);
		cli_puts(o, b);
		cli_puts(o, f->name);
		cli_putc(o, '\n');
	}
}

static void put_csv(struct cli_out *o, const struct latency_row *const *rows, size_t shown)
{
	size_t i;
	const char *p;

	cli_puts(o, "funcid,count,min,median,90%ile,99%ile,max,sum,debug,function\n");
	for (i = 0; i < shown && !o->err; i++) {
		const struct latency_row *f = rows[i];

		cli_printf(o, "%d,%" PRIu64 ",", (int32_t)f->fid, f->count);
		put_double(o, "%.6e,", f->min);
		put_double(o, "%.6e,", f->med);
		put_double(o, "%.6e,", f->p90);
		put_double(o, "%.6e,", f->p99);
		put_double(o, "%.6e,", f->max);
		put_double(o, "%.6e", f->sum);
		cli_puts(o, ",\"(unknown)\",\"");
		for (p = f->name; *p; p++) {
			if (*p == '"')
				cli_putc(o, '"');
			cli_putc(o, *p);
		}
		cli_puts(o, "\"\n");
	}
}

/* ---- The verb ------------------------------------------------------------------------------ */

static const char account_head[] =
    "usage: xfdr account [-s FIELD] [-r asc|dsc] [-p N] [-f text|csv] [-o OUT]\n"
    "                    [--thread=TID] [--map MAP | --no-map] FILE\n"
    "\n"
    "Print a latency table of the calls in a trace, one row per function: the number of\n"
    "calls, the minimum, median, 90th and 99th percentile, maximum and total time in\n"
    "seconds (ticks / the header's cycle frequency). The same table as `llvm-xray\n"
    "account FILE`, byte for byte wherever llvm-xray can account the file; unlike it,\n"
    "xfdr pairs each thread alone, so any number of threads and buffers works.\n";

static const char account_tail[] =
    "What counts: every call whose entry and exit are in the trace, and every call whose\n"
    "exit was not recorded but whose caller's exit was (closed there, as llvm-xray\n"
    "-deduce-sibling-calls does). A flight recorder's trace also holds exits whose entry\n"
    "was lost, calls still open at its end and calls begun before its first buffer (from\n"
    "a stack context); these are not counted. Both kinds are told in one line on stderr,\n"
    "e.g. \"xfdr account: not counted: 12 exits without an entry, 3 calls still open at\n"
    "the end\"; stderr stays empty when every call was complete.\n"
    "\n"
    "The debug-info column is always '(unknown)': the .map sidecar has no file:line.\n"
    "Memory: 8 bytes per counted call (exact percentiles need every latency), nothing\n"
    "per record; the file is read twice.\n"
    "Options may also be written with one dash, as llvm-xray accepts them (-sort=count).\n"
    "Exit status: 0 printed, 1 invalid trace or write error, 2 usage error, unknown\n"
    "--thread or unreadable FILE.\n";

static int parse_top(void *top, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (!*arg || *end || errno || v < INT_MIN || v > INT_MAX)
		return cli_usage("'--top' takes a whole number, not '%s'", arg);
	*(long *)top = v;
	return 0;
}

static int parse_thread(void *table, const char *arg)
{
	struct latency_options *t = table;
	unsigned long u;
	char *end;

	errno = 0;
	u = strtoul(arg, &end, 10);
	if (*arg < '0' || *arg > '9' || *end || errno || u > UINT32_MAX)
		return cli_usage("'--thread' takes a thread id (a decimal number), not '%s'", arg);
	t->thread_set = 1;
	t->thread = (uint32_t)u;
	return 0;
}

static int refuse_instr_map(void *unused, const char *arg)
{
	(void)unused;
	(void)arg;
	return cli_usage("'-instr_map' is not supported: names come from the .map sidecar (--map)");
}

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_account_opts(int argc, char **argv, struct account_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_WORD('s', "sort", &o->sort, sort_names, "FIELD",
			 "sort rows by funcid (default), count, min, med, 90p, 99p,\n"
			 "max, sum or func (the function's name, then its id)"),
	    CLI_OPT_WORD('r', "sortorder", &o->descending, order_names, "ORDER",
			 "asc (default) or dsc"),
	    CLI_OPT_CALL('p', "top", &o->top, parse_top, "N",
			 "print only the first N rows (N <= 0: all, the default)"),
	    CLI_OPT_WORD('f', "format", &o->csv, format_names, "FMT", "text (default) or csv"),
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write to OUT instead of standard output ('-')"),
	    CLI_OPT_CALL(0, "thread", &o->table, parse_thread, "TID",
			 "only the calls of the thread whose NewBuffer records carry\n"
			 "TID (the id `xfdr dump` shows; the .map sidecar maps it\n"
			 "to the kernel tid); a TID not in FILE is a usage error"),
	    CLI_OPT_MAP(&o->names_from,
			"name functions from MAP, a .map sidecar the runtime wrote\n"
			"(default: FILE.map when it exists); unnamed ids as '#ID'",
			"print '#ID' for every function, as llvm-xray without an\n"
			"instrumentation map"),
	    CLI_OPT_FLAG(0, "recursive-calls-only", &o->table.recursive_only, 1,
			 "count only the calls of a function made while it was\n"
			 "recursing (as llvm-xray; costs O(stack depth) per call)"),
	    {.kind = CLI_OPTION_IGNORED,
	     .short_name = 'd',
	     .long_name = "deduce-sibling-calls",
	     .listed = "  -d, --deduce-sibling-calls, -k, --keep-going",
	     .help = "accepted for llvm-xray's sake: xfdr always does both"},
	    {.kind = CLI_OPTION_IGNORED, .short_name = 'k', .long_name = "keep-going"},
	    {.kind = CLI_OPTION_CALL,
	     .long_name = "instr_map",
	     .arg = CLI_ARG_REQUIRED,
	     .call = refuse_instr_map},
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	/* CLI_LONG_ONLY, so llvm-xray's single-dash spellings (-sort=count, -s=count) work. */
	const struct cli_command cmd = {
	    .head = account_head,
	    .tail = account_tail,
	    .column = 25,
	    .flags = CLI_LONG_ONLY,
	    .operand = "FILE",
	    .options = options,
	};

	memset(o, 0, sizeof(*o));
	o->sort = LATENCY_SORT_FUNCID;
	return cli_options_parse_one(&cmd, argc, argv, &o->input);
}

int cmd_account(int argc, char **argv)
{
	struct account_opts opt;
	struct xfdr_trace *t = NULL;
	struct latency_table *lt = NULL;
	struct cli_progress prog = {0}; /* ended on every path, begun or not */
	struct progress sink = cli_progress_sink(&prog);
	struct cli_out *out = NULL;
	struct xfdr_names *names = NULL;
	struct xfdr_error err;
	char note[512];
	const struct latency_row *const *rows;
	size_t shown, total;
	int status;

	status = parse_account_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_prepare_reading(opt.input, opt.output, &opt.names_from, &names);
	if (status)
		return status;

	status = cli_open_verified(opt.input, &prog, &t);
	if (status)
		goto out;
	status = latency_table_build(t, names, &opt.table, &sink, &lt, &err);
	cli_progress_end(&prog);
	if (status) {
		cli_error("%s", err.text);
		status = status == LATENCY_NO_THREAD ? CLI_USAGE : CLI_FAIL;
		goto out;
	}
	status = CLI_FAIL;
	if (latency_table_sort(lt, (enum latency_sort)opt.sort, opt.descending, &err) < 0) {
		cli_error("%s", err.text);
		goto out;
	}
	total = latency_table_rows(lt, &rows);
	shown = total;
	if (opt.top > 0 && (uint64_t)opt.top < shown)
		shown = (size_t)opt.top;

	out = cli_out_new(opt.output);
	if (!out)
		goto out;
	if (opt.csv)
		put_csv(out, rows, shown);
	else
		put_text(out, rows, shown, total);
	status = cli_out_close(out);
	if (latency_left_note(latency_table_left(lt), note, sizeof(note)))
		cli_error("%s", note);
out:
	free(out);
	latency_table_free(lt);
	xfdr_names_free(names);
	if (t)
		xfdr_trace_close(t);
	return status;
}
