/*
 * runtime/link/xray_bridge.c - linked into the program, not into libxfdr: hands compiler-rt's
 * hidden XRay entry points to the shared runtime (runtime/hooks/xray_api.h says why and how).
 *
 * Built into libxfdr_xray.a; the libxfdr.so linker script names that archive and forces this
 * object in with EXTERN(xfdr_xray_exe_api), so `cc -fxray-instrument prog.c -lxfdr` records.
 */
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/compiler.h"
#include "runtime/hooks/xray_api.h"

/* Weak: in a program without XRay they stay NULL, and the runtime sees no XRay. */
extern int __xray_set_handler(void (*entry)(int32_t, int)) __attribute__((weak));
extern int __xray_set_handler_arg1(void (*entry)(int32_t, int, uint64_t))
	__attribute__((weak));
extern int __xray_set_customevent_handler(void (*entry)(void *, size_t)) __attribute__((weak));
extern int __xray_patch(void) __attribute__((weak));
extern int __xray_unpatch(void) __attribute__((weak));
extern uintptr_t __xray_function_address(int32_t fid) __attribute__((weak));
extern size_t __xray_max_function_id(void) __attribute__((weak));

XFDR_API const struct xfdr_xray_api xfdr_xray_exe_api = {
    .version = XFDR_XRAY_API_VERSION,
    .set_handler = __xray_set_handler,
    .set_handler_arg1 = __xray_set_handler_arg1,
    .set_customevent_handler = __xray_set_customevent_handler,
    .patch = __xray_patch,
    .unpatch = __xray_unpatch,
    .function_address = __xray_function_address,
    .max_function_id = __xray_max_function_id,
    .anchor = xfdr_init,
};
