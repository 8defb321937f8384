/*
 * bench/bench_base.c - the reference rows: the floor, the bare call, the call with a no-op hook.
 *
 * floor: per event one TSC read and one 8-byte store into thread-local storage, the least
 *   any recorder that timestamps events in per-thread memory can do. No call.
 * clock: the floor with the CPU number read as well, the two ways xfdr can (reference only).
 * call: the call pattern every recorder row traces, with nothing recording it: one noinline
 *   call = 2 events (entry and exit), so its ns/event is half a call.
 * hook: the same calls, each bracketed by an indirect call to an empty hook on entry and
 *   exit: what a hook-based tracer costs before its hook does any work.
 */
#include "bench/harness.h"

#include <cpuid.h>
#include <sched.h>
#include <stdio.h>

extern void (*volatile bench_hook)(int32_t fid, int type);

/* Not static: a global the compiler must assume is read elsewhere, so the stores stay. */
__thread uint64_t bench_floor_slot;

/* Plain rdtsc, as a recorder without rdtscp reads it; volatile so no two reads merge. */
BENCH_NOINSTR static inline uint64_t read_tsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* rdtscp returns the TSC and IA32_TSC_AUX, which Linux loads with the CPU (and node) number. */
BENCH_NOINSTR static inline uint64_t read_tscp(uint32_t *aux)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(*aux));
	return (uint64_t)hi << 32 | lo;
}

BENCH_NOINSTR static void loop_floor(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events; i++) {
		bench_floor_slot = read_tsc();
		/* Forces the store to memory on every iteration, not once after the loop. */
		bench_barrier();
	}
}

/*
 * The two ways a recorder can read TSC and CPU together, each with the floor's store: which
 * one xfdr uses depends on CPUID, so both are shown to split its cost into clock and rest.
 */
BENCH_NOINSTR static void loop_clock_rdtscp(uint64_t events)
{
	uint64_t i;
	uint32_t aux;

	for (i = 0; i < events; i++) {
		bench_floor_slot = read_tscp(&aux) ^ (aux & 0xfff);
		bench_barrier();
	}
}

BENCH_NOINSTR static void loop_clock_getcpu(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events; i++) {
		bench_floor_slot = read_tsc() ^ (unsigned)sched_getcpu();
		bench_barrier();
	}
}

BENCH_NOINSTR static void loop_call(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events / 2; i++)
		bench_callee(i);
}

BENCH_NOINSTR static void loop_hook(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events / 2; i++) {
		bench_hook(BENCH_FID, 0);
		bench_callee(i);
		bench_hook(BENCH_FID, 1);
	}
}

BENCH_NOINSTR static int has_rdtscp(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (d & (1u << 27));
}

BENCH_NOINSTR int main(int argc, char **argv)
{
	struct bench_cfg cfg;

	bench_init(&cfg, argc, argv);
	bench_print_machine();
	bench_run_row(&cfg, "floor", "floor: rdtsc + 8-byte TLS store", loop_floor, NULL);
	if (has_rdtscp())
		bench_run_row(&cfg, "clock_rdtscp", "clock: rdtscp (TSC+CPU) + store",
			      loop_clock_rdtscp, "reference: xfdr's clock where CPUID has rdtscp");
	else
		printf("row\tclock_rdtscp\tclock: rdtscp (TSC+CPU) + store\t-\t-\t-\t0\t0\t"
		       "CPUID: no rdtscp on this CPU\t-\n");
	bench_run_row(&cfg, "clock_getcpu", "clock: rdtsc + sched_getcpu() + store",
		      loop_clock_getcpu, "reference: xfdr's clock without rdtscp (VMs)");
	bench_run_row(&cfg, "call", "uninstrumented call", loop_call, NULL);
	bench_run_row(&cfg, "hook", "no-op hook (indirect call in/out)", loop_hook, NULL);
	return 0;
}
