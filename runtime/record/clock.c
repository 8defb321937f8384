/*
 * runtime/record/clock.c - which clock the hot path reads and how fast it ticks.
 *
 * Frequency: an exact CPUID leaf 0x15 value when the CPU gives one (crystal Hz * EBX / EAX),
 * otherwise a calibration: one (TSC, CLOCK_MONOTONIC_RAW) anchor is taken at the first
 * clock_init() and compared with a second pair when the frequency is needed. Each pair reads
 * the TSC before and after clock_gettime() and keeps the midpoint, so the error of a pair is
 * a fraction of one clock_gettime() call (< 1 us); over the >= 20 ms baseline that is below
 * 1e-4, well inside the 0.1% the file needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CLOCK_ON_VALGRIND() RUNNING_ON_VALGRIND
#else
#define CLOCK_ON_VALGRIND() 0 /* built without valgrind's header: see host_has_rdtscp() */
#endif

#include "runtime/record/clock.h"
#include "runtime/record/clock_fast.h"
#include "runtime/base/compiler.h"
#include "runtime/base/print.h"
#include "xfdr/xfdr.h"

int clock_how;
long clock_rseq_offset;

static int clock_src;
static uint64_t exact_hz;   /* CPUID 0x15 or the portable 1 GHz; 0 = calibrate */
static uint64_t anchor_tsc; /* written before anchored is released */
static uint64_t anchor_ns;
static int anchored; /* release in clock_init(), acquire in clock_tsc_hz() */

#if CLOCK_X86
static int cpuid_max(unsigned leaf, unsigned *max)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(leaf & 0x80000000u, &a, &b, &c, &d))
		return 0;
	*max = a;
	return 1;
}

/*
 * host_has_rdtscp - the kernel lists rdtscp among the CPU's flags in /proc/cpuinfo. Read with
 * open()/read() in small pieces (the token may straddle two); 0 when the file cannot be read.
 */
static int host_has_rdtscp(void)
{
	static const char token[] = " rdtscp";
	enum { KEEP = sizeof(token) - 1 }; /* a whole token, to be judged by the byte after it */
	char buf[512 + KEEP + 1];
	size_t have = 0;
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC), found = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	while (!found && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		char *p;

		have += (size_t)n;
		buf[have] = '\0';
		for (p = strstr(buf, token); p && !found; p = strstr(p + 1, token))
			found = p[sizeof(token) - 1] == ' ' || p[sizeof(token) - 1] == '\n';
		/* the last bytes may begin the token, or be one whose next byte is still unread */
		if (have > KEEP) {
			memmove(buf, buf + have - KEEP, KEEP);
			have = KEEP;
		}
	}
	close(fd);
	return found;
}

/*
 * Under valgrind, CPUID is valgrind's own (a fixed Intel model that has rdtscp) while its
 * decoder runs rdtscp only where the host CPU has it: on a host without it (an AMD EPYC VM),
 * the first event would end the program with SIGILL. There the kernel's view of the real CPU
 * decides. RUNNING_ON_VALGRIND is a few instructions that do nothing outside valgrind.
 */
int clock_cpu_has_rdtscp(void)
{
	unsigned max, a, b, c, d;

	if (!cpuid_max(0x80000001u, &max) || max < 0x80000001u)
		return 0;
	__cpuid(0x80000001u, a, b, c, d);
	if (!((d >> 27) & 1))
		return 0;
	return CLOCK_ON_VALGRIND() ? host_has_rdtscp() : 1;
}

int clock_invariant_tsc(void)
{
	unsigned max, a, b, c, d;

	if (!cpuid_max(0x80000007u, &max) || max < 0x80000007u)
		return 0;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1;
}

static uint64_t cpuid_exact_hz(void)
{
	unsigned max, den, num, crystal, d;

	if (!cpuid_max(0, &max) || max < 0x15)
		return 0;
	__cpuid(0x15, den, num, crystal, d);
	(void)d;
	if (!den || !num || !crystal)
		return 0;
	return (uint64_t)crystal * num / den;
}
#else
int clock_cpu_has_rdtscp(void)
{
	return 0;
}

int clock_invariant_tsc(void)
{
	return 0;
}
#endif

XFDR_NOINSTR unsigned clock_getcpu_slow(void)
{
	int saved = errno;
	int cpu = sched_getcpu();

	errno = saved;
	return cpu < 0 ? 0 : (unsigned)cpu;
}

/* A (TSC, CLOCK_MONOTONIC_RAW) pair read as close together as we can. */
static XFDR_NOINSTR void clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t before = clock_tsc();

	*ns = clock_ns_raw();
	*tsc = before + (clock_tsc() - before) / 2;
}

int clock_init(int requested)
{
	int src;

#if CLOCK_X86
	int has = clock_cpu_has_rdtscp();

	if (requested == XFDR_CLOCK_RDTSCP && !has) {
		char text[160];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_str(&b, "clock=rdtscp: this CPU has no rdtscp (CPUID 0x80000001 EDX[27]); "
			   "using rdtsc");
		pr_line(&b);
	}
	/*
	 * auto: rdtsc plus the CPU from the rseq area costs about half of rdtscp on the
	 * machines we measured (make bench: 9.8 against 21 ns per event), so rdtscp is the
	 * automatic choice only where glibc registered no rseq area and the CPU would cost a
	 * sched_getcpu() call per event.
	 */
	if (requested == XFDR_CLOCK_RDTSCP)
		src = has ? CLOCK_SRC_RDTSCP : CLOCK_SRC_RDTSC;
	else if (requested == XFDR_CLOCK_RDTSC || !has || clock_cpu_from_rseq())
		src = CLOCK_SRC_RDTSC;
	else
		src = CLOCK_SRC_RDTSCP;
	if (!xfdr_load_acquire(&anchored))
		exact_hz = cpuid_exact_hz();
#else
	(void)requested;
	src = CLOCK_SRC_PORTABLE;
	exact_hz = 1000000000u;
#endif
	clock_src = src;
#if CLOCK_RSEQ
	if (src == CLOCK_SRC_RDTSC && clock_cpu_from_rseq()) {
		xfdr_store_relaxed(&clock_rseq_offset, (long)__rseq_offset);
		/* the offset before the choice that reads it */
		xfdr_store_release(&clock_how, (int)CLOCK_HOW_RSEQ);
	} else
#endif
		xfdr_store_relaxed(&clock_how, src == CLOCK_SRC_RDTSCP ? (int)CLOCK_HOW_RDTSCP
								       : (int)CLOCK_HOW_SLOW);
	if (!xfdr_load_acquire(&anchored)) {
		clock_pair(&anchor_tsc, &anchor_ns);
		/* pairs with the acquire in clock_tsc_hz() */
		xfdr_store_release(&anchored, 1);
	}
	return src;
}

int clock_source(void)
{
	return clock_src;
}

const char *clock_source_name(int source)
{
	switch (source) {
	case CLOCK_SRC_RDTSCP:
		return "rdtscp";
	case CLOCK_SRC_RDTSC:
		/* The CPU comes from where clock_getcpu() really reads it. */
		return clock_cpu_from_rseq() ? "rdtsc+rseq" : "rdtsc+sched_getcpu";
	case CLOCK_SRC_PORTABLE:
		return "clock_monotonic_raw+sched_getcpu";
	default:
		return "none";
	}
}

const char *clock_hz_method(void)
{
#if CLOCK_X86
	return exact_hz ? "cpuid-0x15" : "calibrated";
#else
	return "nominal-1GHz";
#endif
}

XFDR_NOINSTR uint64_t clock_tsc_hz(void)
{
	uint64_t tsc, ns;

	if (!xfdr_load_acquire(&anchored))
		return 0;
	if (exact_hz)
		return exact_hz;
	do
		clock_pair(&tsc, &ns);
	while (ns - anchor_ns < CLOCK_MIN_BASELINE_NS);
	return (uint64_t)((unsigned __int128)(tsc - anchor_tsc) * 1000000000u / (ns - anchor_ns));
}
