/*
 * command/stack.c - `xfdr stack`: the calls of a trace as folded stacks.
 *
 * One line per distinct call stack, "outer;inner;leaf VALUE", the text flamegraph.pl,
 * inferno and speedscope read. The value is by default the self time of the calls with exactly
 * that stack, so the lines add up to the time of the whole trace and a flame graph drawn from
 * them is right (`llvm-xray stack` prints inclusive time per line, which counts every callee
 * twice once the lines are summed: llvm#63676). --value=total prints that inclusive time,
 * for reading, not for flame graphs.
 *
 * Lines come in a fixed order: depth first, each caller's line before its callees', callees
 * ordered by name byte by byte; lines whose value is 0 are left out. The stack tree and the
 * handling of incomplete calls are stacktree.h's.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/stackpaths.h"
#include "analysis/stacktree.h"
#include "command/cli.h"
#include "command/option_table.h"

/* --unit's words, and how many of each there are in a second (0: TSC ticks, the default). */
static const char *const unit_names[] = {"tsc", "ns", "us", "ms", NULL};
static const uint64_t unit_per_second[] = {0, 1000000000, 1000000, 1000};
static const char *const value_names[] = {"self", "total", NULL};

struct stack_opts {
	char **inputs; /* FILE operands, NULL-terminated */
	size_t ninputs;
	const char *output;
	struct cli_map_choice names_from;
	int per_thread;
	struct cli_window_opts window;
	int total; /* --value=total */
	int unit;  /* index in unit_names */
	int diff;  /* --diff: FILEs are BASE and NEW */
};

static const char stack_head[] =
    "usage: xfdr stack [-o OUT] [--value=self|total] [--unit=tsc|ns|us|ms]\n"
    "                  [--per-thread] [--since=WHEN] [--until=WHEN] [--thread=LIST]\n"
    "                  [--window=common|all] [--map=MAP | --no-map] FILE...\n"
    "       xfdr stack --diff [OPTIONS] BASE NEW\n"
    "\n"
    "Print the calls of a trace as folded stacks, one line per distinct call stack:\n"
    "  outer;inner;leaf VALUE\n"
    "the input of flamegraph.pl, inferno and speedscope. Frames are named from the .map\n"
    "sidecar; '#ID' is an id it does not name, '[unknown]' calls a stack context\n"
    "counted but did not name. Lines are sorted (callers first, callees by name);\n"
    "lines with a value of 0 are left out.\n"
    "Several FILEs (the traces of a process tree) make one tree: each process's\n"
    "stacks hang from a frame 'pid P (PROGRAM, parent Q)' from its own .map.\n"
    "With --diff, two runs side by side in the two-column folded form of differential\n"
    "flame graphs (flamegraph.pl's difffolded.pl, inferno-diff-folded):\n"
    "  outer;inner;leaf BASE_VALUE NEW_VALUE\n"
    "every stack either run has, matched by the names of its frames, each run read\n"
    "through its own window and its values in its own rate's units.\n";

static const char stack_tail[] =
    "Calls whose entry or exit is not in the trace (a flight recorder's window) are\n"
    "kept with the time seen: an open call ends at its thread's last event, an exit\n"
    "without its entry begins at its thread's first event. One note on stderr counts\n"
    "them.\n"
    "Exit status: 0 done, 1 invalid trace or write error, 2 usage error or unreadable\n"
    "FILE.\n";

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_stack_opts(int argc, char **argv, struct stack_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write to OUT instead of standard output ('-')"),
	    {.kind = CLI_OPTION_WORD,
	     .long_name = "value",
	     .arg = CLI_ARG_REQUIRED,
	     .value = &o->total,
	     .words = value_names,
	     .listed = "      --value=self",
	     .help = "time spent in the frame itself (default): the lines add\n"
		     "up to the time of the whole trace"},
	    CLI_OPT_LINE("      --value=total",
			 "time from entry to exit, callees included (the lines do\n"
			 "not add up; not for flame graphs)"),
	    CLI_OPT_WORD(0, "unit", &o->unit, unit_names, "UNIT",
			 "tsc (timestamp ticks, the default), ns, us or ms, from\n"
			 "the header's cycle_frequency; each line is rounded to\n"
			 "the nearest unit"),
	    CLI_OPT_FLAG(0, "diff", &o->diff, 1,
			 "compare two runs, BASE and NEW: both values on each line"),
	    CLI_OPT_FLAG('t', "per-thread", &o->per_thread, 1,
			 "one tree per thread: 'thread N (NAME)' is the outermost\n"
			 "frame (default: the threads merged)"),
	    CLI_OPT_WINDOW(&o->window, CLI_WINDOW_COMMON_HELP),
	    CLI_OPT_MAP_PLAIN(&o->names_from),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = stack_head,
	    .tail = stack_tail,
	    .column = 25,
	    .operands = CLI_SOME_OPERANDS,
	    .operand = "FILE",
	    .options = options,
	};
	int rc;

	memset(o, 0, sizeof(*o));
	o->window.tell_lost = 1;
	rc = cli_options_parse(&cmd, argc, argv, &o->inputs);
	if (!rc)
		rc = cli_count_inputs(o->inputs, &o->names_from, &o->ninputs);
	if (!rc && o->diff && o->ninputs != 2)
		rc = cli_usage("--diff compares two FILEs, BASE and NEW (%zu given)", o->ninputs);
	return rc;
}

enum { STOP_WRITE = 2, STOP_NO_MEMORY = 3 }; /* put_line()'s reasons to stop the walk */

/* The folded line of each stack. */
struct folded {
	const struct stree *t;
	const struct stack_opts *o;
	uint64_t hz;
	struct cli_out *out;
	struct stack_path_buf path;
};

/* A stack's value: its self or total time in the unit, at the run's rate hz. */
static uint64_t frame_value(const struct stree_frame *n, const struct stack_opts *o, uint64_t hz)
{
	uint64_t v = o->total ? n->total_tsc : n->self_tsc;

	return unit_per_second[o->unit] ? stree_ticks_to(v, hz, unit_per_second[o->unit]) : v;
}

static int put_line(void *ctx, const struct stree_frame *path, uint32_t depth)
{
	struct folded *f = ctx;
	const struct stree_frame *n = &path[depth];
	size_t nlen, len;
	const char *name = stree_name(f->t, n->name, &nlen), *text;
	uint64_t v = frame_value(n, f->o, f->hz);

	if (!depth) /* the root: no frame */
		return 0;
	text = stack_path_set(&f->path, depth, name, nlen, &len);
	if (!text)
		return STOP_NO_MEMORY;
	if (v) {
		cli_put(f->out, text, len);
		cli_putc(f->out, ' ');
		cli_put_u64(f->out, v);
		cli_putc(f->out, '\n');
	}
	return f->out->err ? STOP_WRITE : 0;
}

/*
 * --diff: the stacks of both runs merged in walk order, "PATH BASE NEW", lines of two zeros
 * left out. Returns CLI_OK, or CLI_FAIL after reporting.
 */
static int print_diff(struct stree *t, const struct stack_opts *o, const uint64_t *hz,
		      struct cli_out *out)
{
	struct stack_paths a, b;
	uint64_t va, vb;
	char why[256];
	int c, rc;

	rc = stack_paths_open(&a, &t[0], why, sizeof(why));
	if (!rc)
		rc = stack_paths_open(&b, &t[1], why, sizeof(why));
	else
		memset(&b, 0, sizeof(b));
	while (!rc && (a.have || b.have) && !out->err) {
		c = !a.have ? 1 : !b.have ? -1 : stack_path_cmp(a.text, a.len, b.text, b.len);
		va = c <= 0 ? frame_value(a.frame, o, hz[0]) : 0;
		vb = c >= 0 ? frame_value(b.frame, o, hz[1]) : 0;
		if (va || vb) {
			if (c <= 0)
				cli_put(out, a.text, a.len);
			else
				cli_put(out, b.text, b.len);
			cli_putc(out, ' ');
			cli_put_u64(out, va);
			cli_putc(out, ' ');
			cli_put_u64(out, vb);
			cli_putc(out, '\n');
		}
		if (c <= 0)
			rc = stack_paths_next(&a, why, sizeof(why));
		if (!rc && c >= 0)
			rc = stack_paths_next(&b, why, sizeof(why));
	}
	if (rc)
		cli_error("%s", why);
	stack_paths_close(&a);
	stack_paths_close(&b);
	return rc ? CLI_FAIL : CLI_OK;
}

/* Depth first over the tree (stree_walk()). Returns CLI_OK, or CLI_FAIL after reporting. */
static int print_folded(struct stree *t, const struct stack_opts *o, uint64_t hz,
			struct cli_out *out)
{
	struct folded f = {.t = t, .o = o, .hz = hz, .out = out};
	char why[256];
	int rc;

	rc = stree_walk(t, put_line, &f, why, sizeof(why));
	stack_path_buf_free(&f.path);
	if (rc == -1)
		cli_error("%s", why);
	else if (rc == STOP_NO_MEMORY)
		cli_error("out of memory");
	/* A write error (STOP_WRITE) is the output's to report when it is closed. */
	return rc == -1 || rc == STOP_NO_MEMORY ? CLI_FAIL : CLI_OK;
}

/* The cycle_frequency of each of the n inputs, which units other than tsc need. 0 or CLI_FAIL. */
static int rates(const struct stack_opts *opt, const struct cli_input *in, size_t n, uint64_t *hz)
{
	size_t i;

	for (i = 0; i < n; i++) {
		hz[i] = xfdr_trace_header(in[i].t)->cycle_frequency;
		if (unit_per_second[opt->unit] && !hz[i]) {
			cli_error("%s: the header's cycle_frequency is 0: no times in %s (use "
				  "--unit=tsc)",
				  opt->inputs[i], unit_names[opt->unit]);
			return CLI_FAIL;
		}
	}
	return 0;
}

/* The tree of the inputs (two with --diff: BASE's and NEW's). Returns CLI_OK or a status. */
static int build(const struct stack_opts *opt, const struct cli_input *in, struct stree *t,
		 struct cli_progress *prog)
{
	struct cli_window w = {0};
	int status;

	if (opt->diff)
		return cli_stree_build_runs(&opt->window, in, opt->per_thread, t, prog);
	status = cli_window_resolve(&opt->window, in, opt->ninputs, &w);
	if (!status)
		status = cli_stree_build(t, in, opt->ninputs, opt->per_thread, &w, prog);
	cli_window_free(&w);
	return status;
}

int cmd_stack(int argc, char **argv)
{
	struct stack_opts opt;
	struct cli_input *in = NULL;
	struct cli_out *out = NULL;
	struct cli_progress prog = {0}; /* ended on every path, begun or not */
	char note[640];
	struct stree t[2];
	uint64_t hz[2];
	size_t trees = 0, i;
	int status;

	status = parse_stack_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_inputs_open(opt.inputs, opt.ninputs, opt.output, &opt.names_from, &prog, &in);
	if (!status)
		status = rates(&opt, in, opt.diff ? 2 : 1, hz);
	if (!status)
		status = build(&opt, in, t, &prog);
	if (status)
		goto out;
	trees = opt.diff ? 2 : 1;
	status = CLI_FAIL;
	out = cli_out_new(opt.output);
	if (!out)
		goto out;
	/* The notes only once the output is made: a bad -o gives one error line, nothing else. */
	for (i = 0; i < trees; i++)
		if (stree_incomplete_note(&t[i], note, sizeof(note)))
			cli_error("%s%s", opt.diff ? (i ? "NEW: " : "BASE: ") : "", note);
	status = opt.diff ? print_diff(t, &opt, hz, out) : print_folded(t, &opt, hz[0], out);
	if (cli_out_close(out) != CLI_OK)
		status = CLI_FAIL;
out:
	cli_progress_end(&prog);
	free(out);
	for (i = 0; i < trees; i++)
		stree_free(&t[i]);
	cli_inputs_close(in, opt.ninputs);
	return status;
}
