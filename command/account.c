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
 *  - Several FILEs: each file's table as above, then all rows sorted together by the field
 *    (ties: in the files' order, each in its own), each name prefixed with its process's
 *    cli_process_label(); llvm-xray has no such table to match.
 */
#include <inttypes.h>
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

struct account_opts {
	char **inputs; /* FILE operands, NULL-terminated */
	size_t ninputs;
	const char *output;
	struct cli_map_choice names_from;
	int csv;	/* index in cli_table_format_words */
	int sort;	/* enum latency_sort, index in sort_names */
	int descending; /* index in cli_sortorder_words */
	long top;	/* <= 0: every row, as llvm-xray's default -1 */
	struct latency_options table;
	struct cli_window_opts window;
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
			 "%9d %10" PRIu64 " [%9.6f, %9.6f, %9.6f, %9.6f, %9.6f] %9.6f  %s: ",
			 (int32_t)f->fid, f->count, f->min, f->med, f->p90, f->p99, f->max, f->sum,
			 f->debug ? f->debug : "(unknown)");
		cli_puts(o, b);
		cli_puts(o, f->name);
		cli_putc(o, '\n');
	}
}

/* s in a CSV field between quotes: a quote doubled. */
static void put_csv_text(struct cli_out *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '"')
			cli_putc(o, '"');
		cli_putc(o, *s);
	}
}

static void put_csv(struct cli_out *o, const struct latency_row *const *rows, size_t shown)
{
	size_t i;

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
		cli_puts(o, ",\"");
		put_csv_text(o, f->debug ? f->debug : "(unknown)");
		cli_puts(o, "\",\"");
		put_csv_text(o, f->name);
		cli_puts(o, "\"\n");
	}
}

/* ---- The verb ------------------------------------------------------------------------------ */

static const char account_head[] =
    "usage: xfdr account [-s FIELD] [-r asc|dsc] [-p N] [-f text|csv] [-o OUT]\n"
    "                    [--since=WHEN] [--until=WHEN] [--thread=LIST]\n"
    "                    [--window=common|all] [--map MAP | --no-map] FILE...\n"
    "\n"
    "Print a latency table of the calls in a trace, one row per function: the number of\n"
    "calls, the minimum, median, 90th and 99th percentile, maximum and total time in\n"
    "seconds (ticks / the header's cycle frequency). The same table as `llvm-xray\n"
    "account FILE`, byte for byte wherever llvm-xray can account the file; unlike it,\n"
    "xfdr pairs each thread alone, so any number of threads and buffers works.\n"
    "Several FILEs (the traces of a process tree) make one table: a row per function\n"
    "of each process, named 'pid P (PROGRAM, parent Q): NAME' from its own .map.\n";

static const char account_tail[] =
    "What counts: every call whose entry and exit are in the trace, and every call whose\n"
    "exit was not recorded but whose caller's exit was (closed there, as llvm-xray\n"
    "-deduce-sibling-calls does). A flight recorder's trace also holds exits whose entry\n"
    "was lost, calls still open at its end and calls begun before its first buffer (from\n"
    "a stack context); these are not counted, nor are calls cut at an edge of the window.\n"
    "Both kinds are told in one line on stderr, e.g. \"xfdr account: not counted: 12\n"
    "exits without an entry, 3 calls still open at the end\".\n"
    "\n"
    "The window: in a ring-mode trace each thread's kept history covers a span of its\n"
    "own. By default only the time every thread's history covers is read (the common\n"
    "window); then, or when a window is given, or when a thread lost part of its\n"
    "history, stderr tells the window and each thread's span. stderr stays empty when\n"
    "every call was complete and nothing was lost.\n"
    "\n"
    "The debug column is FILE:LINE:COLUMN of the function's first instruction, as\n"
    "llvm-xray's symbolizer gives it, from the DWARF of the file the .map puts the\n"
    "function in (elfutils' libdw); '(unknown)' without a .map or DWARF, and one note\n"
    "on stderr names each file that gave no lines.\n"
    "Memory: 4 bytes per counted call (exact percentiles need every latency; 8 for\n"
    "one of 2^32 ticks or more), up to 2 MiB more per function and worker, nothing\n"
    "per record. The file is read once, its threads shared out among workers, one per\n"
    "CPU.\n"
    "Options may also be written with one dash, as llvm-xray accepts them (-sort=count).\n"
    "Exit status: 0 printed, 1 invalid trace or write error, 2 usage error, unknown\n"
    "--thread or unreadable FILE.\n";

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
	    CLI_OPT_SORTORDER(&o->descending, "asc (default) or dsc"),
	    CLI_OPT_TOP(&o->top),
	    CLI_OPT_TABLE_FORMAT(&o->csv),
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write to OUT instead of standard output ('-')"),
	    CLI_OPT_WINDOW(&o->window, CLI_WINDOW_COMMON_HELP),
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
	    .operands = CLI_SOME_OPERANDS,
	    .operand = "FILE",
	    .options = options,
	};
	int rc;

	memset(o, 0, sizeof(*o));
	o->sort = LATENCY_SORT_FUNCID;
	o->window.tell_lost = 1;
	rc = cli_options_parse(&cmd, argc, argv, &o->inputs);
	if (!rc)
		rc = cli_count_inputs(o->inputs, &o->names_from, &o->ninputs);
	return rc;
}

/* ---- Several traces: one table ------------------------------------------------------------ */

/* Every file's table, and the rows of all as one table (rows, of which own the names). */
struct account_all {
	struct latency_table **lt;
	struct latency_row *row;
	const struct latency_row **rows;
	size_t nrows;
	struct latency_left left;
};

static enum latency_sort sort_field;
static int sort_descending;

/* By the field (a name, then an id, for func), then in the files' order and each's own. */
static int by_field(const void *a, const void *b)
{
	const struct latency_row *x = *(const struct latency_row *const *)a;
	const struct latency_row *y = *(const struct latency_row *const *)b;
	int c = latency_row_cmp(x, y, sort_field);

	if (sort_descending)
		c = -c;
	return c ? c : (x > y) - (x < y); /* rows are laid out in the files' order */
}

/*
 * The rows of the n files' sorted tables, each named "LABEL: NAME" (cli_process_label()), in
 * one order by the options' field. Returns 0, or -1 when out of memory.
 */
static int join_tables(struct account_all *all, const struct cli_input *in, size_t n,
		       const struct account_opts *opt)
{
	const struct latency_row *const *rows;
	char label[320];
	size_t i, k, total = 0;

	for (i = 0; i < n; i++)
		total += latency_table_rows(all->lt[i], &rows);
	all->row = calloc(total ? total : 1, sizeof(*all->row));
	all->rows = calloc(total ? total : 1, sizeof(*all->rows));
	if (!all->row || !all->rows)
		return -1;
	for (i = 0; i < n; i++) {
		size_t m = latency_table_rows(all->lt[i], &rows);

		cli_process_label(in[i].names, xfdr_trace_name(in[i].t), label, sizeof(label));
		for (k = 0; k < m; k++) {
			struct latency_row *r = &all->row[all->nrows];
			size_t len = strlen(label) + strlen(rows[k]->name) + 3;
			char *name = malloc(len);

			if (!name)
				return -1;
			snprintf(name, len, "%s: %s", label, rows[k]->name);
			*r = *rows[k];
			r->name = name;
			all->rows[all->nrows++] = r;
		}
	}
	sort_field = (enum latency_sort)opt->sort;
	sort_descending = opt->descending;
	qsort(all->rows, all->nrows, sizeof(*all->rows), by_field);
	return 0;
}

static void free_all(struct account_all *all, size_t n)
{
	size_t i;

	for (i = 0; all->row && i < all->nrows; i++)
		free((char *)all->row[i].name);
	for (i = 0; all->lt && i < n; i++)
		latency_table_free(all->lt[i]);
	free(all->lt);
	free(all->row);
	free(all->rows);
}

/* Each file's table, sorted, its uncounted calls added up. Returns 0, or a status reported. */
static int build_tables(struct account_all *all, const struct cli_input *in, size_t n,
			struct account_opts *opt, const struct cli_window *w,
			struct cli_progress *prog)
{
	struct progress sink = cli_progress_sink(prog);
	struct xfdr_error err;
	size_t i;
	int rc;

	all->lt = calloc(n, sizeof(*all->lt));
	if (!all->lt) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	opt->table.sources = srcline_new();
	if (!opt->table.sources) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	for (i = 0; i < n; i++) {
		const struct latency_left *l;

		opt->table.window = &w->win[i];
		rc = latency_table_build(in[i].t, in[i].names, &opt->table, &sink, &all->lt[i],
					 &err);
		cli_progress_end(prog);
		if (!rc && latency_table_sort(all->lt[i], (enum latency_sort)opt->sort,
					      opt->descending, &err) < 0)
			rc = -1;
		if (rc) {
			cli_error("%s", err.text);
			return CLI_FAIL;
		}
		l = latency_table_left(all->lt[i]);
		all->left.no_entry += l->no_entry;
		all->left.no_exit += l->no_exit;
		all->left.from_context += l->from_context;
		all->left.unwound += l->unwound;
		all->left.cut += l->cut;
	}
	return 0;
}

int cmd_account(int argc, char **argv)
{
	struct account_opts opt;
	struct account_all all = {0};
	struct cli_input *in = NULL;
	struct cli_progress prog = {0}; /* ended on every path, begun or not */
	struct cli_out *out = NULL;
	struct cli_window w = {0};
	char note[512];
	const struct latency_row *const *rows;
	size_t shown, total;
	int status;

	status = parse_account_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_inputs_open(opt.inputs, opt.ninputs, opt.output, &opt.names_from, &prog, &in);
	if (!status)
		status = cli_window_resolve(&opt.window, in, opt.ninputs, &w);
	if (!status)
		status = build_tables(&all, in, opt.ninputs, &opt, &w, &prog);
	if (status)
		goto out;
	status = CLI_FAIL;
	if (opt.ninputs == 1) {
		total = latency_table_rows(all.lt[0], &rows);
	} else {
		if (join_tables(&all, in, opt.ninputs, &opt) < 0) {
			cli_error("out of memory");
			goto out;
		}
		rows = all.rows;
		total = all.nrows;
	}
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
	if (latency_left_note(&all.left, note, sizeof(note)))
		cli_error("%s", note);
	cli_source_notes(opt.table.sources);
out:
	cli_progress_end(&prog);
	free(out);
	free_all(&all, opt.ninputs);
	srcline_free(opt.table.sources);
	cli_window_free(&w);
	cli_inputs_close(in, opt.ninputs);
	return status;
}
