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
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stacktree.h"
#include "command/cli.h"

struct stack_opts {
	const char *input;
	const char *output;
	const char *map;
	int use_map;
	int per_thread;
	int total;	     /* --value=total */
	uint64_t per_second; /* --unit: 0 for TSC ticks, else units per second */
	const char *unit;
};

static void stack_help(void)
{
	fputs("usage: xfdr stack [-o OUT] [--value=self|total] [--unit=tsc|ns|us|ms]\n"
	      "                  [--per-thread] [--map=MAP | --no-map] FILE\n"
	      "\n"
	      "Print the calls of a trace as folded stacks, one line per distinct call stack:\n"
	      "  outer;inner;leaf VALUE\n"
	      "the input of flamegraph.pl, inferno and speedscope. Frames are named from the .map\n"
	      "sidecar; '#ID' is an id it does not name, '[unknown]' calls a stack context\n"
	      "counted but did not name. Lines are sorted (callers first, callees by name);\n"
	      "lines with a value of 0 are left out.\n"
	      "\n"
	      "  -o, --output=OUT       write to OUT instead of standard output ('-')\n"
	      "      --value=self       time spent in the frame itself (default): the lines add\n"
	      "                         up to the time of the whole trace\n"
	      "      --value=total      time from entry to exit, callees included (the lines do\n"
	      "                         not add up; not for flame graphs)\n"
	      "      --unit=UNIT        tsc (timestamp ticks, the default), ns, us or ms, from\n"
	      "                         the header's cycle_frequency; each line is rounded to\n"
	      "                         the nearest unit\n"
	      "  -t, --per-thread       one tree per thread: 'thread N (NAME)' is the outermost\n"
	      "                         frame (default: the threads merged)\n"
	      "      --map=MAP          name functions from MAP (default: FILE.map if it exists)\n"
	      "      --no-map           name functions '#ID'\n"
	      "  -h, --help             show this help\n"
	      "\n"
	      "Calls whose entry or exit is not in the trace (a flight recorder's window) are\n"
	      "kept with the time seen: an open call ends at its thread's last event, an exit\n"
	      "without its entry begins at its thread's first event. One note on stderr counts\n"
	      "them.\n"
	      "Exit status: 0 done, 1 invalid trace or write error, 2 usage error or unreadable\n"
	      "FILE.\n",
	      stdout);
}

/* Units per second of --unit, 0 for ticks; -1 for an unknown unit. */
static int64_t parse_unit(const char *s)
{
	if (!strcmp(s, "tsc"))
		return 0;
	if (!strcmp(s, "ns"))
		return 1000000000;
	if (!strcmp(s, "us"))
		return 1000000;
	if (!strcmp(s, "ms"))
		return 1000;
	return -1;
}

static int parse_stack_opts(int argc, char **argv, struct stack_opts *o)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'}, {"value", required_argument, NULL, 'V'},
	    {"unit", required_argument, NULL, 'u'},   {"per-thread", no_argument, NULL, 't'},
	    {"map", required_argument, NULL, 'm'},    {"no-map", no_argument, NULL, 'M'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	int64_t u;
	int c;

	memset(o, 0, sizeof(*o));
	o->use_map = 1;
	o->unit = "tsc";
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":o:th", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'V':
			if (!strcmp(optarg, "self"))
				o->total = 0;
			else if (!strcmp(optarg, "total"))
				o->total = 1;
			else
				return cli_usage("'--value' takes self or total, not '%s'", optarg);
			break;
		case 'u':
			u = parse_unit(optarg);
			if (u < 0)
				return cli_usage("'--unit' takes tsc, ns, us or ms, not '%s'",
						 optarg);
			o->per_second = (uint64_t)u;
			o->unit = optarg;
			break;
		case 't':
			o->per_thread = 1;
			break;
		case 'm':
			o->map = optarg;
			break;
		case 'M':
			o->use_map = 0;
			break;
		case 'h':
			stack_help();
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

/*
 * Depth first over the sorted tree, the path of names kept in one growing buffer with the
 * length it had at each depth. Returns CLI_OK, or CLI_FAIL after reporting.
 */
static int print_folded(const struct stree *t, const struct stack_opts *o, uint64_t hz,
			struct cli_out *out)
{
	size_t *at = malloc(((size_t)t->max_depth + 2) * sizeof(*at)), cap = 4096, len = 0;
	char *path = malloc(cap);
	uint32_t id = t->node[0].child;
	int status = CLI_FAIL;

	if (!at || !path) {
		cli_error("out of memory");
		goto out;
	}
	while (id != STREE_NONE && !out->err) {
		const struct stree_node *n = &t->node[id];
		size_t nlen;
		const char *name = stree_name(t, n->name, &nlen);
		uint64_t v = o->total ? n->total_tsc : n->self_tsc;

		len = at[n->depth] = n->depth > 1 ? at[n->depth - 1] : 0;
		if (len + nlen + 2 > cap) {
			char *p;

			while (len + nlen + 2 > cap)
				cap *= 2;
			p = realloc(path, cap);
			if (!p) {
				cli_error("out of memory");
				goto out;
			}
			path = p;
		}
		if (n->depth > 1)
			path[len++] = ';';
		memcpy(path + len, name, nlen);
		len += nlen;
		at[n->depth] = len;
		if (o->per_second)
			v = stree_ticks_to(v, hz, o->per_second);
		if (v) {
			cli_put(out, path, len);
			cli_putc(out, ' ');
			cli_put_u64(out, v);
			cli_putc(out, '\n');
		}
		if (n->child != STREE_NONE) {
			id = n->child;
			continue;
		}
		while (id != STREE_NONE && t->node[id].sibling == STREE_NONE)
			id = t->node[id].parent;
		if (id == 0 || id == STREE_NONE)
			break;
		id = t->node[id].sibling;
	}
	status = CLI_OK;
out:
	free(at);
	free(path);
	return status;
}

int cmd_stack(int argc, char **argv)
{
	struct stack_opts opt;
	struct xfdr_names *names = NULL;
	struct xfdr_trace *tr = NULL;
	struct cli_out *out = NULL;
	struct cli_progress prog;
	char note[640];
	struct stree t;
	const char *map;
	char sidecar[4096];
	uint64_t hz;
	int status, have_tree = 0;

	status = parse_stack_opts(argc, argv, &opt);
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
	status = cli_open_verified(opt.input, &prog, &tr);
	if (status)
		goto out;
	status = CLI_FAIL;
	hz = xfdr_trace_header(tr)->cycle_frequency;
	if (opt.per_second && !hz) {
		cli_error("%s: the header's cycle_frequency is 0: no times in %s (use --unit=tsc)",
			  opt.input, opt.unit);
		goto out;
	}
	if (cli_stree_build(&t, tr, names, opt.per_thread, &prog))
		goto out;
	have_tree = 1;
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
	xfdr_names_free(names);
	if (tr)
		xfdr_trace_close(tr);
	return status;
}
