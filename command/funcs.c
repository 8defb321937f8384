/*
 * command/funcs.c - `xfdr funcs FILE`: what recording each function cost, in events, and the
 * exclude= option that would save most (analysis/event_cost.h).
 *
 * The trace is accounted as `xfdr account` accounts it (analysis/latency.h, through the
 * window), with each function's events counted too: the calls' medians and means come from
 * the same latencies, so they agree with account's (its sum / count).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/event_cost.h"
#include "command/cli.h"
#include "command/option_table.h"

struct funcs_opts {
	const char *input;
	const char *output;
	struct cli_map_choice names_from;
	int csv;
	long top;
	struct window_edge shorter_than; /* a time (WINDOW_EDGE_TIME) */
	double min_share_pct;
	long max_names;
	double event_ns;
	struct cli_window_opts window;
};

static const char funcs_head[] =
    "usage: xfdr funcs [-p N] [-f text|csv] [-o OUT] [--shorter-than=TIME]\n"
    "                  [--min-share=PERCENT] [--max-names=N] [--event-cost=NS]\n"
    "                  [--since=WHEN] [--until=WHEN] [--thread=LIST]\n"
    "                  [--window=common|all] [--map MAP | --no-map] FILE\n"
    "\n"
    "What recording each function cost: per function the events it left (entries and\n"
    "exits), its share of all events, its calls, calls per millisecond of the window,\n"
    "and its median and mean call; most events first. Then a ready option line,\n"
    "'exclude=NAME,...', naming the functions of many events and short calls (a mean\n"
    "call under --shorter-than, at least --min-share of the events), and what excluding\n"
    "them would save: events, and recording time at --event-cost an event. The mean,\n"
    "not the median, so that a function whose rare calls are long stays recorded.\n"
    "The line is the runtime's exclude= option as it is (XFDR_OPTIONS, or its value\n"
    "for `xfdr record --exclude=`): each name a glob of itself (',', '\\', '*', '?' and\n"
    "'[' escaped).\n";

static const char funcs_tail[] =
    "Calls are counted as by `xfdr account`, so the medians are account's; a function\n"
    "whose calls all lack an entry or an exit has events but no median or mean ('-').\n"
    "Functions without a name ('#ID') cannot be named in an option and are never\n"
    "suggested. With -f csv only the table is printed: function id, events, share (a\n"
    "fraction), calls, calls per ms, median and mean (seconds), name.\n"
    "The window: as account, by default the time every thread's kept history covers.\n"
    "Exit status: 0 printed, 1 invalid trace or write error, 2 usage error, unknown\n"
    "--thread or unreadable FILE.\n";

static int parse_shorter_than(void *edge, const char *arg)
{
	const char *why;

	if (window_edge_parse(arg, edge, &why) < 0 ||
	    ((struct window_edge *)edge)->kind != WINDOW_EDGE_TIME)
		return cli_usage("'--shorter-than' takes a time with a unit (250ns, 1us, 1.5ms), "
				 "not '%s'",
				 arg);
	return 0;
}

static int parse_min_share(void *pct, const char *arg)
{
	char copy[64];
	size_t n = strlen(arg);

	/* "5" and "5%" alike */
	if (n && n < sizeof(copy) && arg[n - 1] == '%') {
		memcpy(copy, arg, n - 1);
		copy[n - 1] = '\0';
		arg = copy;
	}
	if (cli_parse_number(arg, 0, 100, pct) < 0)
		return cli_usage("'--min-share' takes a percentage from 0 to 100, not '%s'", arg);
	return 0;
}

static int parse_max_names(void *max, const char *arg)
{
	double v;

	if (cli_parse_number(arg, 0, 100000, &v) < 0 || v != floor(v))
		return cli_usage("'--max-names' takes a whole number from 0 to 100000, not '%s'",
				 arg);
	*(long *)max = (long)v;
	return 0;
}

static int parse_event_cost(void *ns, const char *arg)
{
	if (cli_parse_number(arg, 0, 1e9, ns) < 0)
		return cli_usage("'--event-cost' takes nanoseconds, not '%s'", arg);
	return 0;
}

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_funcs_opts(int argc, char **argv, struct funcs_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_TOP(&o->top),
	    CLI_OPT_TABLE_FORMAT(&o->csv),
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write to OUT instead of standard output ('-')"),
	    CLI_OPT_CALL(0, "shorter-than", &o->shorter_than, parse_shorter_than, "TIME",
			 "suggest functions whose mean call is shorter than\n"
			 "TIME (default 1us)"),
	    CLI_OPT_CALL(0, "min-share", &o->min_share_pct, parse_min_share, "PERCENT",
			 "... and that cost at least PERCENT of all events\n"
			 "(default 1)"),
	    CLI_OPT_CALL(0, "max-names", &o->max_names, parse_max_names, "N",
			 "suggest at most N functions, those of most events\n"
			 "(default 10)"),
	    CLI_OPT_CALL(0, "event-cost", &o->event_ns, parse_event_cost, "NS",
			 "what recording an event costs, for the estimate: 20 (the\n"
			 "default) as `make bench` measured on an Intel Xeon VM,\n"
			 "about 10 on an AMD EPYC VM"),
	    CLI_OPT_WINDOW(&o->window, CLI_WINDOW_COMMON_HELP),
	    CLI_OPT_MAP_PLAIN(&o->names_from),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = funcs_head,
	    .tail = funcs_tail,
	    .column = 25,
	    .operands = CLI_ONE_OPERAND,
	    .operand = "FILE",
	    .options = options,
	};

	memset(o, 0, sizeof(*o));
	o->shorter_than =
	    (struct window_edge){.kind = WINDOW_EDGE_TIME, .ns = EVENT_COST_SHORTER_THAN_NS};
	o->min_share_pct = 100 * EVENT_COST_MIN_SHARE;
	o->max_names = EVENT_COST_MAX_NAMES;
	o->event_ns = 20;
	o->window.tell_lost = 1;
	return cli_options_parse_one(&cmd, argc, argv, &o->input);
}

/* ---- Output ---------------------------------------------------------------------------- */

/* What the table says beside its rows. */
struct funcs_view {
	uint64_t events;   /* of all rows */
	double span_ms;	   /* the window's length (0: none) */
	double to_seconds; /* a row's figure to seconds: 1, or 10^-9 for ticks at no rate */
};

/* A time in seconds, as cli_duration() words one. */
static const char *seconds_text(char *buf, size_t n, double s)
{
	return cli_duration(buf, n, (uint64_t)llround(s * 1e9), 1000000000u, CLI_DURATION_SHORT);
}

static void put_text(struct cli_out *o, const struct latency_row *const *rows, size_t n,
		     size_t shown, const struct funcs_view *v)
{
	char span[32], med[32], mean[32], rate[32];
	size_t i;

	cli_printf(o, "Functions: %zu, %" PRIu64 " events in %s\n", n, v->events,
		   seconds_text(span, sizeof(span), v->span_ms / 1e3));
	cli_printf(o, "%12s %7s %11s %10s %11s %11s  %s\n", "events", "share", "calls", "calls/ms",
		   "median", "mean", "function");
	for (i = 0; i < shown && !o->err; i++) {
		const struct latency_row *r = rows[i];

		if (r->count) {
			seconds_text(med, sizeof(med), r->med * v->to_seconds);
			seconds_text(mean, sizeof(mean), r->sum / (double)r->count * v->to_seconds);
		} else {
			snprintf(med, sizeof(med), "-");
			snprintf(mean, sizeof(mean), "-");
		}
		if (v->span_ms > 0)
			snprintf(rate, sizeof(rate), "%.3f", (double)r->count / v->span_ms);
		else
			snprintf(rate, sizeof(rate), "-");
		cli_printf(o, "%12" PRIu64 " %6.2f%% %11" PRIu64 " %10s %11s %11s  %s\n", r->events,
			   v->events ? 100.0 * (double)r->events / (double)v->events : 0.0,
			   r->count, rate, med, mean, r->name);
	}
}

static void put_csv(struct cli_out *o, const struct latency_row *const *rows, size_t shown,
		    const struct funcs_view *v)
{
	const char *p;
	size_t i;

	cli_puts(o, "funcid,events,share,calls,calls_per_ms,median,mean,function\n");
	for (i = 0; i < shown && !o->err; i++) {
		const struct latency_row *r = rows[i];

		cli_printf(o, "%d,%" PRIu64 ",%.6f,%" PRIu64 ",", (int32_t)r->fid, r->events,
			   v->events ? (double)r->events / (double)v->events : 0.0, r->count);
		if (v->span_ms > 0)
			cli_printf(o, "%.6e", (double)r->count / v->span_ms);
		cli_putc(o, ',');
		if (r->count)
			cli_printf(o, "%.6e,%.6e", r->med * v->to_seconds,
				   r->sum / (double)r->count * v->to_seconds);
		else
			cli_putc(o, ',');
		cli_puts(o, ",\"");
		for (p = r->name; *p; p++) {
			if (*p == '"')
				cli_putc(o, '"');
			cli_putc(o, *p);
		}
		cli_puts(o, "\"\n");
	}
}

/* The suggestion under the table. 0, or -1 when out of memory. */
static int put_suggestion(struct cli_out *o, const struct latency_row *const *rows, size_t n,
			  const struct funcs_opts *opt, const struct funcs_view *v)
{
	const struct latency_row **picked = malloc((n ? n : 1) * sizeof(*picked));
	struct event_cost_limits lim;
	char under[32], saved[32];
	uint64_t events;
	size_t k;
	char *line;

	if (!picked)
		return -1;
	lim.shorter_than = opt->shorter_than.ns * 1e-9 / v->to_seconds;
	lim.min_share = opt->min_share_pct / 100;
	lim.max_names = (size_t)opt->max_names;
	k = event_cost_pick(rows, n, v->events, &lim, picked, &events);
	seconds_text(under, sizeof(under), opt->shorter_than.ns * 1e-9);
	if (!k) {
		cli_printf(o,
			   "\nNo suggestion: no named function with a mean call under %s has %g%% "
			   "of the events or more.\n",
			   under, opt->min_share_pct);
		free(picked);
		return 0;
	}
	line = event_cost_exclude_option(picked, k);
	free(picked);
	if (!line)
		return -1;
	cli_printf(o, "\nSuggested: %s\n", line);
	free(line);
	cli_printf(o,
		   "  %zu function%s with a mean call under %s and %g%% of the events or more: "
		   "%" PRIu64 " events (%.2f%%),\n"
		   "  about %s of recording at %g ns an event (--event-cost).\n",
		   k, k == 1 ? "" : "s", under, opt->min_share_pct, events,
		   100.0 * (double)events / (double)v->events,
		   seconds_text(saved, sizeof(saved), (double)events * opt->event_ns * 1e-9),
		   opt->event_ns);
	return 0;
}

/* ---- The verb -------------------------------------------------------------------------- */

/* The window's length in ms (0 when none), the time the calls per ms are of. */
static double window_ms(const struct cli_window *w)
{
	uint64_t from = w->since > w->base ? w->since : w->base;
	uint64_t to = w->until < w->end ? w->until : w->end;
	double hz = w->hz ? (double)w->hz : 1e9;

	return to > from ? (double)(to - from) / hz * 1e3 : 0;
}

int cmd_funcs(int argc, char **argv)
{
	struct funcs_opts opt;
	struct cli_input *in = NULL;
	struct cli_progress prog = {0};
	struct cli_out *out = NULL;
	struct cli_window w = {0};
	struct latency_options lo = {.events = 1};
	struct latency_table *lt = NULL;
	struct progress sink;
	struct xfdr_error err;
	struct funcs_view v = {0};
	const struct latency_row *const *sorted;
	const struct latency_row **rows = NULL;
	char note[512];
	size_t n = 0, shown, i;
	int status;

	status = parse_funcs_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_inputs_open((char *const[]){(char *)opt.input}, 1, opt.output, &opt.names_from,
				 &prog, &in);
	if (!status)
		status = cli_window_resolve(&opt.window, in, 1, &w);
	if (status)
		goto out;
	status = CLI_FAIL;
	sink = cli_progress_sink(&prog);
	lo.window = &w.win[0];
	if (latency_table_build(in[0].t, in[0].names, &lo, &sink, &lt, &err) ||
	    latency_table_sort(lt, LATENCY_SORT_FUNCID, 0, &err)) {
		cli_progress_end(&prog);
		cli_error("%s", err.text);
		goto out;
	}
	cli_progress_end(&prog);
	n = latency_table_rows(lt, &sorted);
	rows = malloc((n ? n : 1) * sizeof(*rows));
	if (!rows) {
		cli_error("out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		rows[i] = sorted[i];
		v.events += sorted[i]->events;
	}
	event_cost_sort(rows, n);
	v.span_ms = window_ms(&w);
	v.to_seconds = xfdr_trace_header(in[0].t)->cycle_frequency ? 1 : 1e-9;
	shown = opt.top > 0 && (size_t)opt.top < n ? (size_t)opt.top : n;
	out = cli_out_new(opt.output);
	if (!out)
		goto out;
	if (opt.csv) {
		put_csv(out, rows, shown, &v);
	} else {
		put_text(out, rows, n, shown, &v);
		if (put_suggestion(out, rows, n, &opt, &v) < 0)
			cli_error("out of memory");
	}
	status = cli_out_close(out);
	if (latency_left_note(latency_table_left(lt), note, sizeof(note)))
		cli_error("%s", note);
out:
	cli_progress_end(&prog);
	free(out);
	free(rows);
	latency_table_free(lt);
	cli_window_free(&w);
	cli_inputs_close(in, 1);
	return status;
}
