/*
 * tests/e2e/hooks_xray_crash.c - an XRay program that crashes while mprotect() would never
 * return, for test_hooks_xray.c (built with -fxray-instrument, linked with libxfdr.a, run with
 * XFDR_OPTIONS=start=1).
 *
 * XRay's runtime is linked into the program, so its patching and unpatching call this
 * program's mprotect(). Once crash() arms it, a call blocks for good: a crash handler that
 * unpatched the sleds would hang there until its watchdog, and leave no trace.
 */
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int armed;
static volatile int *volatile nowhere; /* NULL, read at run time: the fault stays */

int mprotect(void *addr, size_t len, int prot)
{
	if (armed)
		for (;;)
			pause();
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

__attribute__((noinline)) static void crash(void)
{
	armed = 1;
	*nowhere = 1;
}

int main(void)
{
	crash();
	return 0;
}
