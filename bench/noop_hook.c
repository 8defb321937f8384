/*
 * bench/noop_hook.c - the empty hook of the "no-op hook" row.
 *
 * Its own translation unit and reached through a volatile function pointer, so the call
 * cannot be inlined or devirtualised: the row then costs what any hook-based tracer pays
 * before it does anything (load the handler, indirect call, return), with the signature of
 * an XRay handler (function id, entry type).
 */
#include "bench/harness.h"

__attribute__((noinline)) BENCH_NOINSTR void bench_noop_hook(int32_t fid, int type)
{
	(void)fid;
	(void)type;
}

void (*volatile bench_hook)(int32_t fid, int type) = bench_noop_hook;
