/*
 * bench/callee.c - the functions every call-pattern row calls: a leaf and a call tree.
 *
 * They sit alone in their translation unit so no row can inline them, and so bench.mk can
 * build this file, and only this file, with -fxray-instrument, -finstrument-functions or -pg:
 * the instrumented rows then trace exactly these callees and nothing of the harness.
 * The volatile stores are the callees' observable work and the count the harness checks;
 * without them a call to an empty function would still be made, but an optimiser at link
 * time could drop it.
 */
#include "bench/harness.h"

volatile uint64_t bench_sink;
volatile uint64_t bench_calls;

__attribute__((noinline)) void bench_callee(uint64_t i)
{
	bench_sink = i;
	bench_calls = bench_calls + 1;
}

__attribute__((noinline)) void bench_tree(unsigned depth)
{
	bench_calls = bench_calls + 1;
	if (depth == 0)
		return;
	bench_tree(depth - 1);
	bench_tree(depth - 1);
	/* After the calls, so the second is not a tail call the compiler turns into a jump. */
	bench_sink = depth;
}
