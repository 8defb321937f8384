/*
 * bench/callee.c - the one function every call-pattern row calls.
 *
 * It sits alone in its translation unit so no row can inline it, and so bench.mk can build
 * this file, and only this file, with -fxray-instrument or -finstrument-functions: the
 * instrumented rows then trace exactly this callee and nothing of the harness.
 * The volatile store is the callee's observable work; without it a call to an empty
 * function would still be made, but an optimiser at link time could drop it.
 */
#include "bench/harness.h"

volatile uint64_t bench_sink;

__attribute__((noinline)) void bench_callee(uint64_t i)
{
	bench_sink = i;
}
