/*
 * runtime/flush/signals.c - placeholder until the signal triggers land (issue 9).
 */
#include "runtime/flush/signals.h"

int signals_install(const struct signal_plan *p)
{
	(void)p;
	return 0;
}
