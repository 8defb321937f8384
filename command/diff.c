/*
 * command/diff.c - `xfdr diff BASE NEW`: two runs side by side, a row per function (matched by
 * name: ids differ from run to run) with each run's calls, median, 99th percentile and total,
 * the change of the total and its ratio, what grew most first.
 *
 * Each run is accounted as `xfdr account` accounts it (analysis/latency.h, each through its own
 * window: a run's threads and times are its own), the tables joined by analysis/compare.h.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "command/cli.h"
#include "command/option_table.h"

static const char *const sort_names[] = {"change", "ratio", "count", "med",
					 "99p",	   "sum",   "func",  NULL};

struct diff_opts {
	char **inputs;
	size_t ninputs;
	const char *output;
	struct cli_map_choice names_from;
	int sort;	/* enum compare_sort, index in sort_names */
	int descending; /* index in cli_sortorder_words */
	int csv;
	long top;
	struct cli_window_opts window;
};

static const char diff_head[] =
    "usage: xfdr diff [-s FIELD] [-r asc|dsc] [-p N] [-f text|csv] [-o OUT]\n"
    "                 [--since=WHEN] [--until=WHEN] [--thread=LIST] [--window=common|all]\n"
    "                 [--no-map] BASE NEW\n"
    "\n"
    "Compare two runs: a row per function, matched by name (from each file's own .map;\n"
    "ids differ from run to run), with the calls, median, 99th percentile and total time\n"
    "(seconds) of each run, the change of the total (NEW - BASE) and its ratio (NEW /\n"
    "BASE: 'new' for a function only NEW has, 'gone' for one only BASE has). Each run is\n"
    "counted as `xfdr account` counts it, through a window of its own.\n";

static const char diff_tail[] =
    "Calls each run did not count (incomplete, or cut at its window's edges) are told on\n"
    "stderr, one line per run, as by account.\n"
    "Exit status: 0 printed, 1 invalid trace or write error, 2 usage error or unreadable\n"
    "FILE.\n";

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_diff_opts(int argc, char **argv, struct diff_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_WORD('s', "sort", &o->sort, sort_names, "FIELD",
			 "sort rows by change (default: of the total), ratio, or\n"
			 "NEW's count, med, 99p or sum, or by func (the name)"),
	    CLI_OPT_SORTORDER(&o->descending, "dsc (default: what grew most first) or asc"),
	    CLI_OPT_TOP(&o->top),
	    CLI_OPT_TABLE_FORMAT(&o->csv),
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write to OUT instead of standard output ('-')"),
	    CLI_OPT_WINDOW(&o->window, "with neither --since nor --until: 'common' (the default)\n"
				       "reads in each run only the time all of its threads'\n"
				       "kept histories cover; 'all' reads all of it"),
	    CLI_OPT_FLAG(0, "no-map", &o->names_from.no_map, 1,
			 "name functions '#ID' (matched by id, then)"),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = diff_head,
	    .tail = diff_tail,
	    .column = 25,
	    .operands = CLI_SOME_OPERANDS,
	    .operand = "BASE",
	    .options = options,
	};
	int rc;

	memset(o, 0, sizeof(*o));
	o->descending = 1;
	o->window.tell_lost = 1;
	rc = cli_options_parse(&cmd, argc, argv, &o->inputs);
	if (rc)
		return rc;
	for (o->ninputs = 0; o->inputs[o->ninputs]; o->ninputs++)
		;
	if (o->ninputs < 2)
		return cli_usage("missing NEW");
	if (o->ninputs > 2)
		return cli_usage("two FILEs, BASE and NEW; extra operand '%s'", o->inputs[2]);
	return 0;
}

/* ---- Output ---------------------------------------------------------------------------- */

static void put_num(struct cli_out *o, const struct compare_side *s, int count, double v, int csv)
{
	if (!s->present)
		cli_puts(o, csv ? "" : "          -");
	else if (count)
		cli_printf(o, csv ? "%" PRIu64 : "%11" PRIu64, s->count);
	else
		cli_printf(o, csv ? "%.6e" : "%11.6f", v);
}

static void put_ratio(struct cli_out *o, const struct compare_row *r, int csv)
{
	if (!r->next.present)
		cli_puts(o, csv ? "gone" : "    gone");
	else if (isinf(r->ratio))
		cli_puts(o, csv ? "new" : "     new");
	else
		cli_printf(o, csv ? "%.4f" : "%7.2fx", r->ratio);
}

static void put_row(struct cli_out *o, const struct compare_row *r, int csv)
{
	/* base and new of each figure: calls, median, 99th percentile, total */
	const struct {
		const struct compare_side *side;
		double v;
	} cols[] = {{&r->base, 0},	     {&r->next, 0},	      {&r->base, r->base.med},
		    {&r->next, r->next.med}, {&r->base, r->base.p99}, {&r->next, r->next.p99},
		    {&r->base, r->base.sum}, {&r->next, r->next.sum}};
	const char *sep = csv ? "," : " ";
	const char *p;
	size_t i;

	if (csv) {
		cli_putc(o, '"');
		for (p = r->name; *p; p++) {
			if (*p == '"')
				cli_putc(o, '"');
			cli_putc(o, *p);
		}
		cli_puts(o, "\",");
	}
	for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		put_num(o, cols[i].side, i < 2, cols[i].v, csv);
		cli_puts(o, sep);
	}
	cli_printf(o, csv ? "%+.6e" : "%+11.6f", r->change);
	cli_puts(o, sep);
	put_ratio(o, r, csv);
	if (!csv) {
		cli_puts(o, "  ");
		cli_puts(o, r->name);
	}
	cli_putc(o, '\n');
}

static void put_table(struct cli_out *o, const struct compare_row *rows, size_t n, size_t shown,
		      const struct diff_opts *opt)
{
	size_t i, both = 0, base_only = 0, new_only = 0;

	for (i = 0; i < n; i++) {
		both += rows[i].base.present && rows[i].next.present;
		base_only += !rows[i].next.present;
		new_only += !rows[i].base.present;
	}
	if (opt->csv) {
		cli_puts(o, "function,base_count,new_count,base_median,new_median,base_99p,new_99p,"
			    "base_sum,new_sum,change,ratio\n");
	} else {
		cli_printf(
		    o, "Functions: %zu in both runs, %zu only in BASE (%s), %zu only in NEW (%s)\n",
		    both, base_only, opt->inputs[0], new_only, opt->inputs[1]);
		cli_printf(o, "%11s %11s %11s %11s %11s %11s %11s %11s %11s %8s  %s\n", "calls",
			   "calls", "median", "median", "99p", "99p", "total", "total", "change",
			   "ratio", "function");
		cli_printf(o, "%11s %11s %11s %11s %11s %11s %11s %11s\n", "BASE", "NEW", "BASE",
			   "NEW", "BASE", "NEW", "BASE", "NEW");
	}
	for (i = 0; i < shown && !o->err; i++)
		put_row(o, &rows[i], opt->csv);
}

/* ---- The verb -------------------------------------------------------------------------- */

/* Each run's table, through its own window. Returns 0, or a status reported. */
static int account_runs(const struct diff_opts *opt, const struct cli_input *in,
			struct cli_progress *prog, struct latency_table **lt)
{
	struct progress sink = cli_progress_sink(prog);
	struct latency_options lo = {0};
	struct cli_window w;
	struct xfdr_error err;
	char note[512];
	int i, rc;

	for (i = 0; i < 2; i++) {
		rc = cli_window_resolve(&opt->window, &in[i], 1, &w);
		lo.window = &w.win[0];
		if (!rc && (latency_table_build(in[i].t, in[i].names, &lo, &sink, &lt[i], &err) ||
			    latency_table_sort(lt[i], LATENCY_SORT_FUNCID, 0, &err))) {
			cli_progress_end(prog);
			cli_error("%s", err.text);
			rc = CLI_FAIL;
		}
		cli_window_free(&w);
		cli_progress_end(prog);
		if (rc)
			return rc;
		if (latency_left_note(latency_table_left(lt[i]), note, sizeof(note)))
			cli_error("%s: %s", i ? "NEW" : "BASE", note);
	}
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_opts opt;
	struct cli_input *in = NULL;
	struct cli_progress prog = {0};
	struct latency_table *lt[2] = {NULL, NULL};
	const struct latency_row *const *rows[2];
	struct compare_row *cmp = NULL;
	struct cli_out *out = NULL;
	size_t n[2], ncmp = 0, shown;
	int status;

	status = parse_diff_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_inputs_open(opt.inputs, 2, opt.output, &opt.names_from, &prog, &in);
	if (!status)
		status = account_runs(&opt, in, &prog, lt);
	if (status)
		goto out;
	status = CLI_FAIL;
	n[0] = latency_table_rows(lt[0], &rows[0]);
	n[1] = latency_table_rows(lt[1], &rows[1]);
	if (compare_join(rows[0], n[0], rows[1], n[1], &cmp, &ncmp)) {
		cli_error("out of memory");
		goto out;
	}
	compare_sort(cmp, ncmp, (enum compare_sort)opt.sort, opt.descending);
	shown = opt.top > 0 && (size_t)opt.top < ncmp ? (size_t)opt.top : ncmp;
	out = cli_out_new(opt.output);
	if (!out)
		goto out;
	put_table(out, cmp, ncmp, shown, &opt);
	status = cli_out_close(out);
out:
	cli_progress_end(&prog);
	free(out);
	free(cmp);
	latency_table_free(lt[0]);
	latency_table_free(lt[1]);
	cli_inputs_close(in, 2);
	return status;
}
