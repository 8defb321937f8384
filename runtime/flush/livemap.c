/*
 * runtime/flush/livemap.c - placeholder until file backing lands (issue 9).
 */
#include "runtime/flush/livemap.h"

int livemap_start(const char *map_path)
{
	(void)map_path;
	return 0;
}

void livemap_stop(void)
{
}

void livemap_forget_after_fork(void)
{
}
