/*
 * runtime/record/clock.h - clock set-up: source choice, invariant-TSC flags, TSC frequency.
 */
#ifndef XFDR_RUNTIME_RECORD_CLOCK_H
#define XFDR_RUNTIME_RECORD_CLOCK_H

#include <stdint.h>

#include "runtime/record/clock_fast.h"

enum clock_source {
	CLOCK_SRC_RDTSCP = 1,
	CLOCK_SRC_RDTSC = 2,
	CLOCK_SRC_PORTABLE = 3, /* CLOCK_MONOTONIC_RAW ns, non-x86 */
};

/* Minimum TSC/CLOCK_MONOTONIC_RAW baseline for a calibration within 0.1% (ours: ~1e-5). */
#define CLOCK_MIN_BASELINE_NS 20000000ull

/*
 * clock_init - choose the source for `requested` (enum xfdr_clock) and, on the first call,
 * anchor the calibration. rdtscp requested on a CPU without it prints one line and falls back
 * to rdtsc. Context: not a signal handler; no thread may be recording (it switches the
 * source the hot path reads). Returns the source chosen (enum clock_source).
 */
int clock_init(int requested);

/* CPUID says rdtscp exists, and under valgrind the host has it too (always 0 off x86). */
int clock_cpu_has_rdtscp(void);
/* CPUID 0x80000007 EDX[8]: the TSC is invariant (constant rate, keeps counting when idle). */
int clock_invariant_tsc(void);
int clock_source(void);
const char *clock_source_name(int source);

/*
 * clock_tsc_hz - timestamp ticks per second: CPUID 0x15 when it gives an exact crystal
 * frequency, else measured against CLOCK_MONOTONIC_RAW since clock_init(), spinning until
 * the baseline is at least CLOCK_MIN_BASELINE_NS. Context: async-signal-safe (rdtsc and
 * clock_gettime only). Returns 0 before clock_init().
 */
uint64_t clock_tsc_hz(void);

/* How the frequency was found: "cpuid-0x15", "calibrated" or "nominal-1GHz". */
const char *clock_hz_method(void);

#endif /* XFDR_RUNTIME_RECORD_CLOCK_H */
