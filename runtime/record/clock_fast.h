/*
 * runtime/record/clock_fast.h - read the timestamp counter and the current CPU (the hot path part).
 *
 * x86: rdtscp where CPUID 0x80000001 EDX[27] has it (the CPU comes with the TSC, from
 * TSC_AUX, which Linux sets to node << 12 | cpu); otherwise rdtsc and the CPU number from
 * the thread's rseq area, as sched_getcpu() does (that call being the fallback).
 * Elsewhere: CLOCK_MONOTONIC_RAW nanoseconds (a 1 GHz "TSC") and sched_getcpu().
 * The choice is made once by clock_init() and read here with a relaxed load.
 */
#ifndef XFDR_RUNTIME_RECORD_CLOCK_FAST_H
#define XFDR_RUNTIME_RECORD_CLOCK_FAST_H

#include <stdint.h>
#include <time.h>

#include "runtime/base/compiler.h"

#if defined(__x86_64__) || defined(__i386__)
#define CLOCK_X86 1
#else
#define CLOCK_X86 0
#endif

/* TSC_AUX as Linux programs it: the low 12 bits are the CPU number, the rest the NUMA node. */
#define CLOCK_TSC_AUX_CPU_MASK 0xfffu

extern int clock_use_rdtscp XFDR_HIDDEN;

/*
 * The CPU from sched_getcpu(), errno untouched; 0 in the (unexpected) case it fails.
 * Out of line: it is the fallback of clock_getcpu().
 */
unsigned clock_getcpu_slow(void) XFDR_COLD;

/*
 * glibc >= 2.35 registers an rseq area for every thread, whose cpu_id the kernel keeps
 * current; sched_getcpu() itself reads it. Reading it here saves two calls (errno and
 * sched_getcpu) per event on CPUs without rdtscp. __rseq_size is 0 when glibc did not
 * register the area (tunable glibc.pthread.rseq=0, old kernel): then sched_getcpu().
 */
#if defined(__x86_64__) && defined(__GLIBC__) &&                                                   \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#include <stddef.h>
#include <sys/rseq.h>
#define CLOCK_RSEQ 1
_Static_assert(offsetof(struct rseq, cpu_id) == 4, "rseq: cpu_id at offset 4");
#else
#define CLOCK_RSEQ 0
#endif

/* Does clock_getcpu() read the rseq area (no call per event)? */
static inline int clock_cpu_from_rseq(void)
{
#if CLOCK_RSEQ
	return __rseq_size >= 8;
#else
	return 0;
#endif
}

static inline XFDR_NOINSTR unsigned clock_getcpu(void)
{
#if CLOCK_RSEQ
	if (XFDR_LIKELY(__rseq_size >= 8)) {
		int32_t cpu;

		/* The rseq area is at the thread pointer (%fs base) plus __rseq_offset. */
		__asm__ __volatile__("movl %%fs:4(%1), %0" : "=r"(cpu) : "r"(__rseq_offset));
		if (XFDR_LIKELY(cpu >= 0))
			return (unsigned)cpu;
	}
#endif
	return clock_getcpu_slow();
}

#if CLOCK_X86
static inline XFDR_NOINSTR uint64_t clock_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline XFDR_NOINSTR uint64_t clock_rdtscp(unsigned *cpu)
{
	uint32_t lo, hi, aux;

	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	*cpu = aux & CLOCK_TSC_AUX_CPU_MASK;
	return (uint64_t)hi << 32 | lo;
}
#endif

static inline XFDR_NOINSTR uint64_t clock_ns_raw(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * clock_read - the timestamp now and the CPU it was read on.
 * Context: any, signal handlers included; no lock, no allocation.
 */
static inline XFDR_NOINSTR uint64_t clock_read(unsigned *cpu)
{
#if CLOCK_X86
	uint64_t tsc;

	if (XFDR_LIKELY(xfdr_load_relaxed(&clock_use_rdtscp)))
		return clock_rdtscp(cpu);
	tsc = clock_rdtsc();
	*cpu = clock_getcpu();
	return tsc;
#else
	uint64_t ns = clock_ns_raw();

	*cpu = clock_getcpu();
	return ns;
#endif
}

/* The timestamp alone (calibration, flush). */
static inline XFDR_NOINSTR uint64_t clock_tsc(void)
{
#if CLOCK_X86
	return clock_rdtsc();
#else
	return clock_ns_raw();
#endif
}

#endif /* XFDR_RUNTIME_RECORD_CLOCK_FAST_H */
