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
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/latency.h"
#include "command/cli.h"

static const char *const sort_names[] = {
    [LATENCY_SORT_FUNCID] = "funcid", [LATENCY_SORT_COUNT] = "count", [LATENCY_SORT_MIN] = "min",
    [LATENCY_SORT_MED] = "med",	      [LATENCY_SORT_90P] = "90p",     [LATENCY_SORT_99P] = "99p",
    [LATENCY_SORT_MAX] = "max",	      [LATENCY_SORT_SUM] = "sum",     [LATENCY_SORT_FUNC] = "func",
};

struct account_opts {
	const char *input;
	const char *output;
	const char *map;
	int use_map;
	int csv;
	enum latency_sort sort;
	int descending;
	long top; /* <= 0: every row, as llvm-xray's default -1 */
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

static void account_help(void)
{
	fputs(
	    "usage: xfdr account [-s FIELD] [-r asc|dsc] [-p N] [-f text|csv] [-o OUT]\n"
	    "                    [--thread=TID] [--map MAP | --no-map] FILE\n"
	    "\n"
	    "Print a latency table of the calls in a trace, one row per function: the number of\n"
	    "calls, the minimum, median, 90th and 99th percentile, maximum and total time in\n"
	    "seconds (ticks / the header's cycle frequency). The same table as `llvm-xray\n"
	    "account FILE`, byte for byte wherever llvm-xray can account the file; unlike it,\n"
	    "xfdr pairs each thread alone, so any number of threads and buffers works.\n"
	    "\n"
	    "  -s, --sort=FIELD       sort rows by funcid (default), count, min, med, 90p, 99p,\n"
	    "                         max, sum or func (the function's name, then its id)\n"
	    "  -r, --sortorder=ORDER  asc (default) or dsc\n"
	    "  -p, --top=N            print only the first N rows (N <= 0: all, the default)\n"
	    "  -f, --format=FMT       text (default) or csv\n"
	    "  -o, --output=OUT       write to OUT instead of standard output ('-')\n"
	    "      --thread=TID       only the calls of the thread whose NewBuffer records carry\n"
	    "                         TID (the id `xfdr dump` shows; the .map sidecar maps it\n"
	    "                         to the kernel tid); a TID not in FILE is a usage error\n"
	    "      --map=MAP          name functions from MAP, a .map sidecar the runtime wrote\n"
	    "                         (default: FILE.map when it exists); unnamed ids as '#ID'\n"
	    "      --no-map           print '#ID' for every function, as llvm-xray without an\n"
	    "                         instrumentation map\n"
	    "      --recursive-calls-only\n"
	    "                         count only the calls of a function made while it was\n"
	    "                         recursing (as llvm-xray; costs O(stack depth) per call)\n"
	    "  -d, --deduce-sibling-calls, -k, --keep-going\n"
	    "                         accepted for llvm-xray's sake: xfdr always does both\n"
	    "  -h, --help             show this help\n"
	    "\n"
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
	    "--thread or unreadable FILE.\n",
	    stdout);
}

static int parse_account_opts(int argc, char **argv, struct account_opts *o)
{
	/* The one-letter names as long options too, so that llvm-xray's -s=count works. */
	static const struct option longopts[] = {
	    {"sort", required_argument, NULL, 's'},
	    {"s", required_argument, NULL, 's'},
	    {"sortorder", required_argument, NULL, 'r'},
	    {"r", required_argument, NULL, 'r'},
	    {"top", required_argument, NULL, 'p'},
	    {"p", required_argument, NULL, 'p'},
	    {"format", required_argument, NULL, 'f'},
	    {"f", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"o", required_argument, NULL, 'o'},
	    {"thread", required_argument, NULL, 'T'},
	    {"map", required_argument, NULL, 'm'},
	    {"no-map", no_argument, NULL, 'M'},
	    {"deduce-sibling-calls", no_argument, NULL, 'd'},
	    {"keep-going", no_argument, NULL, 'k'},
	    {"recursive-calls-only", no_argument, NULL, 'R'},
	    {"instr_map", required_argument, NULL, 'I'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char *end;
	long v;
	unsigned long u;
	int c;
	size_t i;

	memset(o, 0, sizeof(*o));
	o->use_map = 1;
	o->sort = LATENCY_SORT_FUNCID;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long_only(argc, argv, ":s:r:p:f:o:dkh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			for (i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++) {
				if (!strcmp(optarg, sort_names[i]))
					break;
			}
			if (i == sizeof(sort_names) / sizeof(sort_names[0]))
				return cli_usage(
				    "'--sort' takes funcid, count, min, med, 90p, 99p, "
				    "max, sum or func, not '%s'",
				    optarg);
			o->sort = (enum latency_sort)i;
			break;
		case 'r':
			if (!strcmp(optarg, "asc"))
				o->descending = 0;
			else if (!strcmp(optarg, "dsc"))
				o->descending = 1;
			else
				return cli_usage("'--sortorder' takes asc or dsc, not '%s'",
						 optarg);
			break;
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (!*optarg || *end || errno || v < INT_MIN || v > INT_MAX)
				return cli_usage("'--top' takes a whole number, not '%s'", optarg);
			o->top = v;
			break;
		case 'f':
			if (!strcmp(optarg, "text"))
				o->csv = 0;
			else if (!strcmp(optarg, "csv"))
				o->csv = 1;
			else
				return cli_usage("'--format' takes text or csv, not '%s'", optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'T':
			errno = 0;
			u = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || errno || u > UINT32_MAX)
				return cli_usage("'--thread' takes a thread id (a decimal number), "
						 "not '%s'",
						 optarg);
			o->table.thread_set = 1;
			o->table.thread = (uint32_t)u;
			break;
		case 'm':
			o->map = optarg;
			break;
		case 'M':
			o->use_map = 0;
			break;
		case 'R':
			o->table.recursive_only = 1;
			break;
		case 'd':
		case 'k':
			break;
		case 'I':
			return cli_usage("'-instr_map' is not supported: names come from the .map "
					 "sidecar (--map)");
		case 'h':
			account_help();
			return -1;
		default:
			return cli_bad_option(argv, c, optopt);
		}
	}
	if (cli_one_operand(argc, argv, "FILE", &o->input))
		return CLI_USAGE;
	if (o->map && !o->use_map)
		return cli_usage("--map and --no-map exclude each other");
	return 0;
}

int cmd_account(int argc, char **argv)
{
	struct account_opts opt;
	struct xfdr_trace *t = NULL;
	struct latency_table *lt = NULL;
	struct cli_progress prog;
	struct progress sink = cli_progress_sink(&prog);
	struct cli_out *out = NULL;
	struct xfdr_names *names = NULL;
	struct xfdr_error err;
	const char *map;
	char sidecar[4096], note[512];
	const struct latency_row *const *rows;
	size_t shown, total;
	int status;

	status = parse_account_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_check_input(opt.input);
	if (status)
		return status;
	status = cli_check_output(opt.output, opt.input, opt.map);
	if (status)
		return status;
	if (opt.use_map) {
		map = cli_sidecar(opt.input, opt.map, sidecar, sizeof(sidecar));
		status = cli_names_load(map, &names);
		if (status)
			return status;
	}

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
	if (latency_table_sort(lt, opt.sort, opt.descending, &err) < 0) {
		cli_error("%s", err.text);
		goto out;
	}
	total = latency_table_rows(lt, &rows);
	shown = total;
	if (opt.top > 0 && (uint64_t)opt.top < shown)
		shown = (size_t)opt.top;

	out = malloc(sizeof(*out));
	if (!out) {
		cli_error("out of memory");
		goto out;
	}
	if (cli_out_open(out, opt.output) != 0) {
		free(out);
		out = NULL;
		goto out;
	}
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
