/*
 * bench/noop_xray.c - an empty XRay handler installed in compiler-rt's own runtime, for the
 * "no-op" row of XRay sleds.
 *
 * The program is linked with clang -fxray-instrument (compiler-rt's XRay runtime, which owns
 * the sleds); bench_noop_xray_install() sets the handler and patches the sleds itself, so no
 * XRAY_OPTIONS is needed. A patched sled calls compiler-rt's trampoline, which saves the
 * registers and calls the handler through an atomic load: the row costs that path with a
 * handler that returns at once, the floor under xfdr's XRay handler (runtime/hooks/xray.c).
 */
#include "bench/harness.h"

#include <stddef.h>
#include <stdio.h>

/*
 * compiler-rt's <xray/xray_interface.h> is C++; these are its extern "C" entry points, the
 * enums (XRayEntryType, XRayPatchingStatus) spelled as int (same ABI).
 */
int __xray_set_handler(void (*entry)(int32_t fid, int type));
int __xray_patch(void);

enum { XRAY_PATCH_SUCCESS = 1 };

BENCH_NOINSTR static void noop_handler(int32_t fid, int type)
{
	(void)fid;
	(void)type;
}

/*
 * bench_noop_xray_install - set the empty handler, then patch every sled.
 * Returns 0, or -1 with the reason in `why`.
 */
BENCH_NOINSTR int bench_noop_xray_install(char *why, size_t why_bytes)
{
	int rc;

	if (!__xray_set_handler(noop_handler)) {
		snprintf(why, why_bytes, "__xray_set_handler refused (XRay not initialized)");
		return -1;
	}
	rc = __xray_patch();
	if (rc != XRAY_PATCH_SUCCESS) {
		snprintf(why, why_bytes, "__xray_patch returned %d", rc);
		return -1;
	}
	return 0;
}
