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
};

static const char stack_head[] =
    "usage: xfdr stack [-o OUT] [--value=self|total] [--unit=tsc|ns|us|ms]\n"
    "                  [--per-thread] [--map=MAP | --no-map] FILE...\n"
    "\n"
    "Print the calls of a trace as folded stacks, one line per distinct call stack:\n"
    "  outer;inner;leaf VALUE\n"
    "the input of flamegraph.pl, inferno and speedscope. Frames are named from the .map\n"
    "sidecar; '#ID' is an id it does not name, '[unknown]' calls a stack context\n"
    "counted but did not name. Lines are sorted (callers first, callees by name);\n"
    "lines with a value of 0 are left out.\n"
    "Several FILEs (the traces of a process tree) make one tree: each process's\n"
    "stacks hang from a frame 'pid P (PROGRAM, parent Q)' from its own .map.\n";

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
	    CLI_OPT_FLAG('t', "per-thread", &o->per_thread, 1,
			 "one tree per thread: 'thread N (NAME)' is the outermost\n"
			 "frame (default: the threads merged)"),
	    CLI_OPT_WINDOW(&o->window, "with neither --since nor --until: 'common' (the default)\n"
				       "reads only the time every thread's kept history covers;\n"
				       "'all' reads all of it"),
	    CLI_OPT_MAP(&o->names_from, "name functions from MAP (default: FILE.map if it exists)",
			"name functions '#ID'"),
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
	return rc ? rc : cli_count_inputs(o->inputs, &o->names_from, &o->ninputs);
}

enum { STOP_WRITE = 2, STOP_NO_MEMORY = 3 }; /* put_line()'s reasons to stop the walk */

/* The folded line of each stack, the path of names kept with the length it had at each depth. */
struct folded {
	const struct stree *t;
	const struct stack_opts *o;
	uint64_t hz;
	struct cli_out *out;
	size_t *at;
	char *path;
	size_t cap;
};

static int put_line(void *ctx, const struct stree_frame *path, uint32_t depth)
{
	struct folded *f = ctx;
	const struct stree_frame *n = &path[depth];
	size_t nlen, len;
	const char *name = stree_name(f->t, n->name, &nlen);
	uint64_t v = f->o->total ? n->total_tsc : n->self_tsc;

	if (!depth) /* the root: no frame */
		return 0;
	len = depth > 1 ? f->at[depth - 1] : 0;
	if (len + nlen + 2 > f->cap) {
		size_t cap = f->cap;
		char *p;

		while (len + nlen + 2 > cap)
			cap *= 2;
		p = realloc(f->path, cap);
		if (!p)
			return STOP_NO_MEMORY;
		f->path = p;
		f->cap = cap;
	}
	if (depth > 1)
		f->path[len++] = ';';
	memcpy(f->path + len, name, nlen);
	len += nlen;
	f->at[depth] = len;
	if (unit_per_second[f->o->unit])
		v = stree_ticks_to(v, f->hz, unit_per_second[f->o->unit]);
	if (v) {
		cli_put(f->out, f->path, len);
		cli_putc(f->out, ' ');
		cli_put_u64(f->out, v);
		cli_putc(f->out, '\n');
	}
	return f->out->err ? STOP_WRITE : 0;
}

/* Depth first over the tree (stree_walk()). Returns CLI_OK, or CLI_FAIL after reporting. */
static int print_folded(struct stree *t, const struct stack_opts *o, uint64_t hz,
			struct cli_out *out)
{
	struct folded f = {.t = t, .o = o, .hz = hz, .out = out, .cap = 4096};
	char why[256];
	int rc = STOP_NO_MEMORY;

	f.at = malloc(((size_t)t->max_depth + 2) * sizeof(*f.at));
	f.path = malloc(f.cap);
	if (f.at && f.path)
		rc = stree_walk(t, put_line, &f, why, sizeof(why));
	free(f.at);
	free(f.path);
	if (rc == -1)
		cli_error("%s", why);
	else if (rc == STOP_NO_MEMORY)
		cli_error("out of memory");
	/* A write error (STOP_WRITE) is the output's to report when it is closed. */
	return rc == -1 || rc == STOP_NO_MEMORY ? CLI_FAIL : CLI_OK;
}

int cmd_stack(int argc, char **argv)
{
	struct stack_opts opt;
	struct cli_input *in = NULL;
	struct cli_out *out = NULL;
	struct cli_progress prog = {0}; /* ended on every path, begun or not */
	char note[640];
	struct cli_window w = {0};
	struct stree t;
	uint64_t hz;
	int status, have_tree = 0;

	status = parse_stack_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_inputs_open(opt.inputs, opt.ninputs, opt.output, &opt.names_from, &prog, &in);
	if (!status)
		status = cli_window_resolve(&opt.window, in, opt.ninputs, &w);
	if (status)
		goto out;
	status = CLI_FAIL;
	hz = xfdr_trace_header(in[0].t)->cycle_frequency;
	if (unit_per_second[opt.unit] && !hz) {
		cli_error("%s: the header's cycle_frequency is 0: no times in %s (use --unit=tsc)",
			  opt.inputs[0], unit_names[opt.unit]);
		goto out;
	}
	if (cli_stree_build(&t, in, opt.ninputs, opt.per_thread, &w, &prog))
		goto out;
	have_tree = 1;
	out = cli_out_new(opt.output);
	if (!out)
		goto out;
	/* The note only once the output is made: a bad -o gives one error line, nothing else. */
	if (stree_incomplete_note(&t, note, sizeof(note)))
		cli_error("%s", note);
	status = print_folded(&t, &opt, hz, out);
	if (cli_out_close(out) != CLI_OK)
		status = CLI_FAIL;
out:
	cli_progress_end(&prog);
	free(out);
	if (have_tree)
		stree_free(&t);
	cli_window_free(&w);
	cli_inputs_close(in, opt.ninputs);
	return status;
}
