/* reader/cli/account.c - `xfdr account`: being written (issue 10). */
#include "reader/cli/cli.h"

int cmd_account(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_usage("not implemented yet");
}
