/* reader/cli/flame.c - `xfdr flame`: being written (issue 10). */
#include "reader/cli/cli.h"

int cmd_flame(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_usage("not implemented yet");
}
