/*
 * runtime/base/monotonic.h - CLOCK_MONOTONIC in nanoseconds or milliseconds, for the runtime's
 * bounded waits (async-signal-safe: clock_gettime is).
 */
#ifndef XFDR_RUNTIME_BASE_MONOTONIC_H
#define XFDR_RUNTIME_BASE_MONOTONIC_H

#include <stdint.h>
#include <time.h>

#include "runtime/base/compiler.h"

static inline XFDR_NOINSTR uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline XFDR_NOINSTR uint64_t mono_ms(void)
{
	return mono_ns() / 1000000u;
}

#endif /* XFDR_RUNTIME_BASE_MONOTONIC_H */
