/*
 * command/xfdr.c - the `xfdr` command: global options and dispatch to one file per verb.
 *
 * Every verb is `int cmd_VERB(int argc, char **argv)` with argv[0] the verb's name; it parses
 * its own options by its table (command/option_table.h) and returns an enum cli_status,
 * which becomes the exit status. A new verb is one line in the table below.
 */
#include <stdio.h>
#include <string.h>

#include "command/cli.h"

struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct verb verbs[] = {
    {"record", cmd_record,
     "record -- PROGRAM ARGS  run PROGRAM with the recorder, then summarize its trace"},
    {"verify", cmd_verify, "verify FILE...       check files; one error line per bad file"},
    {"dump", cmd_dump, "dump FILE            the header and every record with its offset"},
    {"convert", cmd_convert,
     "convert FILE         the YAML that `llvm-xray convert --output-format=yaml` prints"},
    {"account", cmd_account,
     "account FILE         per-function latency table (count, percentiles, sum)"},
    {"stack", cmd_stack,
     "stack FILE           folded call stacks with their time, for flame graphs"},
    {"flame", cmd_flame, "flame FILE           a flame graph as a self-contained SVG"},
    {"diff", cmd_diff, "diff BASE NEW        two runs side by side, per function, what grew first"},
    {"funcs", cmd_funcs,
     "funcs FILE           what recording each function cost, and what to exclude"},
    {"recover", cmd_recover,
     "recover FILE         rebuild a trace from the live files of a killed process"},
    {"core", cmd_core, "core CORE            rebuild a trace from the xfdr pool in a core dump"},
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static void main_help(FILE *f)
{
	size_t i;

	fputs("usage: xfdr COMMAND [OPTIONS] FILE...\n"
	      "       xfdr --help | --version | help COMMAND\n"
	      "\n"
	      "Check, convert and analyse XRay flight data recorder traces (FDR format version 1,\n"
	      "and versions 2 to 5 as compiler-rt's own runtime writes them).\n"
	      "\n"
	      "Commands:\n",
	      f);
	for (i = 0; i < NVERBS; i++)
		fprintf(f, "  %s\n", verbs[i].summary);
	fputs("\n"
	      "Run 'xfdr COMMAND --help' for a command's options.\n"
	      "Exit status: 0 success, 1 invalid trace or write error, 2 usage error or\n"
	      "unreadable file.\n"
	      "Errors in a trace are reported as\n"
	      "  FILE: offset N: expected ..., found ...\n",
	      f);
}

static const struct verb *find_verb(const char *name)
{
	size_t i;

	for (i = 0; i < NVERBS; i++) {
		if (!strcmp(verbs[i].name, name))
			return &verbs[i];
	}
	return NULL;
}

static int run_verb(const struct verb *v, int argc, char **argv)
{
	/* Messages read "xfdr convert: ..." so the user sees which command complained. */
	static char who[64];

	snprintf(who, sizeof(who), "xfdr %s", v->name);
	cli_set_verb(who);
	return v->run(argc, argv);
}

static int main_status(int argc, char **argv)
{
	const struct verb *v;
	char *help_argv[] = {NULL, "--help", NULL};

	if (argc < 2)
		return cli_usage("missing COMMAND");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		main_help(stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("xfdr %s (writes XRay FDR format version 1; reads versions 1 to 5)\n",
		       XFDR_VERSION_STRING);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc == 2) {
			main_help(stdout);
			return CLI_OK;
		}
		v = find_verb(argv[2]);
		if (!v)
			return cli_usage("unknown command '%s'", argv[2]);
		help_argv[0] = argv[2];
		return run_verb(v, 2, help_argv);
	}
	if (argv[1][0] == '-')
		return cli_usage("unknown option '%s' (options go after the COMMAND)", argv[1]);
	v = find_verb(argv[1]);
	if (!v)
		return cli_usage("unknown command '%s'", argv[1]);
	return run_verb(v, argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	int status;

	cli_guard_std_fds();
	status = main_status(argc, argv);
	/* Help and version texts go through stdio; a failed write must not exit 0. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (status == CLI_OK) {
			perror("xfdr: standard output");
			status = CLI_FAIL;
		}
	}
	return status;
}
