/* reader/cli/trace_event.c - convert --output-format=trace_event: being written (issue 10). */
#include "reader/cli/cli.h"

int convert_trace_event(struct xfdr_trace *t, const struct xfdr_names *names, uint64_t since_tsc,
			struct cli_out *out, struct cli_progress *prog)
{
	(void)t;
	(void)names;
	(void)since_tsc;
	(void)out;
	(void)prog;
	cli_error("not implemented yet");
	return CLI_FAIL;
}
