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
 * The floor and the clocks make no calls, so only -w leaf measures them; -k picks one row,
 * so that bench/run.sh can time each row's whole process.
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

BENCH_NOINSTR static void loop_hook(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events / 2; i++) {
		bench_hook(BENCH_FID, 0);
		bench_callee(i);
		bench_hook(BENCH_FID, 1);
	}
}

/* bench_tree's shape with the hook around every call, as an instrumented bench_tree has. */
BENCH_NOINSTR static void hook_tree(unsigned depth)
{
	bench_hook(BENCH_FID, 0);
	bench_calls = bench_calls + 1;
	if (depth) {
		hook_tree(depth - 1);
		hook_tree(depth - 1);
	}
	bench_hook(BENCH_FID, 1);
}

static unsigned hook_tree_depth;

BENCH_NOINSTR static void loop_hook_tree(uint64_t events)
{
	(void)events;
	hook_tree(hook_tree_depth);
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
	hook_tree_depth = cfg.tree_depth;
	if (bench_wants(&cfg, "floor"))
		bench_print_machine();
	if (cfg.workload == BENCH_LEAF && bench_wants(&cfg, "floor"))
		bench_run_row(&cfg, "floor", "floor: rdtsc + 8-byte TLS store", loop_floor, NULL);
	if (cfg.workload == BENCH_LEAF && bench_wants(&cfg, "clock_rdtscp")) {
		if (has_rdtscp())
			bench_run_row(&cfg, "clock_rdtscp", "clock: rdtscp (TSC+CPU) + store",
				      loop_clock_rdtscp,
				      "reference: xfdr's clock where CPUID has rdtscp");
		else
			printf("row\tclock_rdtscp\tclock: rdtscp (TSC+CPU) + store\t-\t-\t-\t0\t0\t"
			       "CPUID: no rdtscp on this CPU\t-\tleaf\t0\n");
	}
	if (cfg.workload == BENCH_LEAF && bench_wants(&cfg, "clock_getcpu"))
		bench_run_row(&cfg, "clock_getcpu", "clock: rdtsc + sched_getcpu() + store",
			      loop_clock_getcpu, "reference: xfdr's clock without rdtscp (VMs)");
	if (bench_wants(&cfg, "call"))
		bench_run_row(&cfg, "call", "uninstrumented", bench_loop_workload, NULL);
	if (bench_wants(&cfg, "hook"))
		bench_run_row(&cfg, "hook", "no-op hook (indirect call in/out)",
			      cfg.workload == BENCH_TREE ? loop_hook_tree : loop_hook, NULL);
	return 0;
}
