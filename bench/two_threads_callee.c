/*
 * bench/two_threads_callee.c - the leaf bench/two_threads.c measures: bench_callee's shape (two
 * volatile stores, noinline, alone in its translation unit), but into thread-local variables.
 *
 * bench_callee (bench/callee.c) stores into globals that every thread writes: two threads
 * calling it pass that cache line back and forth, which slows them with or without a recorder
 * and would be charged to xfdr. This callee keeps each thread on its own lines; threads.c
 * measures bench_callee beside it to show the difference.
 */
#include <stdint.h>

__thread volatile uint64_t threads_sink;
__thread volatile uint64_t threads_calls;

void two_threads_callee(uint64_t i);

__attribute__((noinline)) void two_threads_callee(uint64_t i)
{
	threads_sink = i;
	threads_calls = threads_calls + 1;
}
