/* reader/cli/stack.c - `xfdr stack`: being written (issue 10). */
#include "reader/cli/cli.h"

int cmd_stack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_usage("not implemented yet");
}
