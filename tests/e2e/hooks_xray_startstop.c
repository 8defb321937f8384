/*
 * tests/e2e/hooks_xray_startstop.c - xfdr_start() patches XRay's sleds, xfdr_stop() unpatches
 * them (test_hooks_xray.c builds it with clang -fxray-instrument, linked with libxfdr.a).
 *
 * x86-64 sleds as compiler-rt's XRay (LLVM 14) writes them: an unpatched entry sled starts
 * with "jmp +9" (eb 09) over its nops; a patched one with "mov $fid, %r10d" (41 ba). The
 * program checks those bytes of one function after each transition, and records:
 *   recording:   before()                  -> in the trace
 *   stopped:     between()                 -> not in the trace, sled unpatched
 *   recording:   after()                   -> in the trace
 * then flushes to the directory given as argv[1] and prints the trace's path.
 * Exit status: 0 if every check passed, else the number of the failed check.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xfdr/xfdr.h"

static volatile int sink;

__attribute__((noinline)) int before(int x);
__attribute__((noinline)) int before(int x)
{
	sink = x;
	return x + 1;
}

__attribute__((noinline)) int between(int x);
__attribute__((noinline)) int between(int x)
{
	sink = x;
	return x + 2;
}

__attribute__((noinline)) int after(int x);
__attribute__((noinline)) int after(int x)
{
	sink = x;
	return x + 3;
}

/* 1 patched, 0 unpatched, -1 neither (not an XRay x86-64 entry sled). */
static int sled_state(int (*fn)(int))
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)fn;

	if (p[0] == 0xeb && p[1] == 0x09)
		return 0;
	if (p[0] == 0x41 && p[1] == 0xba)
		return 1;
	return -1;
}

int main(int argc, char **argv)
{
	struct xfdr_options o;
	char path[4096];

	if (argc < 2)
		return 100;
	xfdr_options_default(&o);
	o.output = argv[1];
	o.flush_at_exit = 0;
	if (sled_state(before) != 0)
		return 1;
	if (xfdr_init(&o) || xfdr_start())
		return 2;
	if (sled_state(before) != 1)
		return 3;
	sink = before(1);
	if (xfdr_stop())
		return 4;
	if (sled_state(between) != 0)
		return 5;
	sink = between(2);
	if (xfdr_start())
		return 6;
	if (sled_state(after) != 1)
		return 7;
	sink = after(3);
	if (xfdr_stop() || xfdr_flush(path, sizeof(path)))
		return 8;
	printf("%s\n", path);
	return 0;
}
