/*
 * runtime/record/clock_fast.h - read the timestamp counter and the current CPU (the hot path part).
 *
 * x86: rdtscp where CPUID 0x80000001 EDX[27] has it (the CPU comes with the TSC, from
 * TSC_AUX, which Linux sets to node << 12 | cpu); otherwise rdtsc and the CPU number from
 * the thread's rseq area, as sched_getcpu() does (that call being the fallback).
 * Elsewhere: CLOCK_MONOTONIC_RAW nanoseconds (a 1 GHz "TSC") and sched_getcpu().
 * The choice is made once by clock_init() and read here with a relaxed load (clock_how).
 *
 * Two reads: clock_read() always gives a CPU number; clock_now_inline(), the hooks' read, may
 * give a value no CPU number has (CLOCK_CPU_UNKNOWN or above: no rseq area on this thread),
 * which matches no thread's CPU and so sends the event to the slow path, where
 * clock_cpu_known() turns it into a number. That saves the fast path a test per event.
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

/*
 * How clock_read() reads: 0 (the zeroed default, before clock_init()) is the read that is
 * right everywhere.
 */
enum clock_how {
	CLOCK_HOW_SLOW = 0,  /* rdtsc (or the portable clock) and sched_getcpu() */
	CLOCK_HOW_RSEQ = 1,  /* rdtsc and the rseq area's cpu_id at clock_rseq_offset */
	CLOCK_HOW_RDTSCP = 2 /* rdtscp */
};
extern int clock_how XFDR_HIDDEN;
/* __rseq_offset, copied by clock_init(): one load fewer per event than through the GOT. */
extern long clock_rseq_offset XFDR_HIDDEN;

/* From here up, a "CPU" clock_now_inline() gave is none: rseq's cpu_id was negative. */
#define CLOCK_CPU_UNKNOWN 0x80000000u

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

/* The CPU from the rseq area, negative (CLOCK_CPU_UNKNOWN and up) when it has none. */
static inline XFDR_NOINSTR unsigned clock_rseq_cpu(long offset)
{
	uint32_t cpu = CLOCK_CPU_UNKNOWN;

#if CLOCK_RSEQ
	/* The rseq area is at the thread pointer (%fs base) plus __rseq_offset. */
	__asm__ __volatile__("movl %%fs:4(%1), %0" : "=r"(cpu) : "r"(offset));
#else
	(void)offset;
#endif
	return cpu;
}

static inline XFDR_NOINSTR unsigned clock_getcpu(void)
{
#if CLOCK_RSEQ
	if (XFDR_LIKELY(__rseq_size >= 8)) {
		unsigned cpu = clock_rseq_cpu(__rseq_offset);

		if (XFDR_LIKELY(cpu < CLOCK_CPU_UNKNOWN))
			return cpu;
	}
#endif
	return clock_getcpu_slow();
}

/* A CPU clock_now_inline() gave, as a number. */
static inline XFDR_NOINSTR unsigned clock_cpu_known(unsigned cpu)
{
	return XFDR_LIKELY(cpu < CLOCK_CPU_UNKNOWN) ? cpu : clock_getcpu_slow();
}

#if CLOCK_X86
static inline XFDR_NOINSTR uint64_t clock_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}
#endif

static inline XFDR_NOINSTR uint64_t clock_ns_raw(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A timestamp in the halves rdtsc gives it, and the CPU it was read on. */
struct clock_now {
	uint32_t lo, hi;
	unsigned cpu; /* may be CLOCK_CPU_UNKNOWN or above (clock_cpu_known()) */
};

static inline XFDR_NOINSTR uint64_t clock_now_tsc(const struct clock_now *n)
{
	return (uint64_t)n->hi << 32 | n->lo;
}

/*
 * clock_now_inline - the hooks' read: the timestamp now and the CPU it was read on, without a
 * call, when this process reads them so (rdtsc and the rseq area, or rdtscp). Returns 0 when it
 * does not (the caller then takes clock_read(), out of its fast path).
 * The CPU may be one no CPU has (CLOCK_CPU_UNKNOWN and up): see above.
 * Context: any, signal handlers included; no lock, no allocation.
 */
static inline XFDR_NOINSTR int clock_now_inline(struct clock_now *n)
{
#if CLOCK_X86
	uint32_t aux;

#if CLOCK_RSEQ
	if (XFDR_LIKELY(xfdr_settled_equals(&clock_how, CLOCK_HOW_RSEQ))) {
		__asm__ __volatile__("rdtsc" : "=a"(n->lo), "=d"(n->hi));
		n->cpu = clock_rseq_cpu(xfdr_load_relaxed(&clock_rseq_offset));
		return 1;
	}
#endif
	if (XFDR_LIKELY(xfdr_settled_equals(&clock_how, CLOCK_HOW_RDTSCP))) {
		__asm__ __volatile__("rdtscp" : "=a"(n->lo), "=d"(n->hi), "=c"(aux));
		n->cpu = aux & CLOCK_TSC_AUX_CPU_MASK;
		return 1;
	}
#else
	(void)n;
#endif
	return 0;
}

/*
 * clock_read - the timestamp now and the CPU it was read on: clock_now_inline()'s read where it
 * has one, else rdtsc (or the portable clock) and clock_getcpu().
 * Context: any, signal handlers included; no lock, no allocation.
 */
static inline XFDR_NOINSTR uint64_t clock_read(unsigned *cpu)
{
	struct clock_now now;
	uint64_t tsc;

	if (XFDR_LIKELY(clock_now_inline(&now))) {
		*cpu = clock_cpu_known(now.cpu);
		return clock_now_tsc(&now);
	}
#if CLOCK_X86
	tsc = clock_rdtsc();
#else
	tsc = clock_ns_raw();
#endif
	*cpu = clock_getcpu();
	return tsc;
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
