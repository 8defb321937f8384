/*
 * bench/noop_cyg.c - empty -finstrument-functions hooks, for the "no-op" row of that mechanism.
 *
 * Linked into the executable, they take precedence over glibc's (which are empty too, but
 * reached through the PLT): the row then costs what the compiler's two direct calls per
 * instrumented function cost, before a tracer does any work. Never instrumented themselves.
 */
#include "bench/harness.h"

BENCH_NOINSTR void __cyg_profile_func_enter(void *this_fn, void *call_site)
{
	(void)this_fn;
	(void)call_site;
}

BENCH_NOINSTR void __cyg_profile_func_exit(void *this_fn, void *call_site)
{
	(void)this_fn;
	(void)call_site;
}
