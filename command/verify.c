/*
 * command/verify.c - `xfdr verify FILE...`: is every file a valid FDR trace (versions 1 to 5)?
 *
 * One line on stderr per bad file (the reader's "FILE: offset N: expected ..., found ..."),
 * nothing for good ones unless -v asks for "FILE: ok" on stdout. The exit status is the worst
 * of all files: 2 if one could not be read at all, else 1 if one is invalid, else 0.
 */
#include <stdio.h>
#include <string.h>

#include "command/cli.h"
#include "command/option_table.h"

static const char verify_head[] =
    "usage: xfdr verify [-v] FILE...\n"
    "\n"
    "Check each FILE against the XRay FDR format of its version: the header, every\n"
    "buffer's grammar and every record. Version 1 (what xfdr writes): NewBuffer,\n"
    "WallClockTime, NewCPUId, body, EndOfBuffer. Versions 2 to 5 (compiler-rt's FDR\n"
    "runtime): BufferExtents, NewBuffer, WallClockTime, Pid (3+), NewCPUId, body, each\n"
    "buffer exactly as long as its BufferExtents says.\n"
    "Each invalid file gets one line on stderr: FILE: offset N: expected ..., found ...\n";

static const char verify_tail[] =
    "Exit status: 0 all valid, 1 some file invalid (or stdout not writable), 2 usage\n"
    "error or some FILE unreadable.\n";

static int verify_one(const char *path, int verbose, struct cli_out *out)
{
	struct xfdr_trace *t;
	struct xfdr_error err;
	int status;

	status = cli_check_input(path);
	if (status)
		return status;
	if (xfdr_trace_open(path, &t, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	status = CLI_OK;
	if (xfdr_trace_verify(t, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		status = CLI_FAIL;
	} else if (verbose) {
		cli_puts(out, path);
		cli_puts(out, ": ok\n");
		/* Keep "ok" lines and error lines in file order when both go to one terminal. */
		cli_out_flush(out);
		fflush(out->f);
	}
	xfdr_trace_close(t);
	return status;
}

int cmd_verify(int argc, char **argv)
{
	static struct cli_out out;
	int verbose = 0, status = CLI_OK, s;
	const struct cli_option options[] = {
	    CLI_OPT_FLAG('v', "verbose", &verbose, 1,
			 "also print \"FILE: ok\" on stdout for each valid file"),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = verify_head,
	    .tail = verify_tail,
	    .column = 17,
	    .operands = CLI_SOME_OPERANDS,
	    .operand = "FILE",
	    .options = options,
	};
	char **files;

	status = cli_options_parse(&cmd, argc, argv, &files);
	if (status)
		return status < 0 ? CLI_OK : status;
	cli_out_open(&out, NULL);
	for (; *files; files++) {
		s = verify_one(*files, verbose, &out);
		if (s > status)
			status = s;
	}
	s = cli_out_close(&out);
	return s > status ? s : status;
}
