/*
 * tests/e2e/hooks_filter_old_bridge.c - linked into hooks_filter_prog.c's XRay build in place of
 * the bridge -lxfdr brings (runtime/link/xray_bridge.c): the table of XRay's entry points as an
 * older libxfdr made it, version 1, without patch_function. Defined here, the symbol the linker
 * script asks for is the program's own, and the bridge's object is never pulled in. The runtime
 * must then leave the filtered functions out in its handler (test_hooks_filter.c).
 *
 * Version 1's layout, written out (the runtime's header has the current one).
 */
#include <stddef.h>
#include <stdint.h>

struct xfdr_options;

struct xray_api_v1 {
	uint32_t version;
	int (*set_handler)(void (*entry)(int32_t fid, int type));
	int (*set_handler_arg1)(void (*entry)(int32_t fid, int type, uint64_t arg));
	int (*set_customevent_handler)(void (*entry)(void *data, size_t bytes));
	int (*patch)(void);
	int (*unpatch)(void);
	uintptr_t (*function_address)(int32_t fid);
	size_t (*max_function_id)(void);
	int (*anchor)(const struct xfdr_options *o);
};

int __xray_set_handler(void (*entry)(int32_t, int));
int __xray_set_handler_arg1(void (*entry)(int32_t, int, uint64_t));
int __xray_set_customevent_handler(void (*entry)(void *, size_t));
int __xray_patch(void);
int __xray_unpatch(void);
uintptr_t __xray_function_address(int32_t fid);
size_t __xray_max_function_id(void);
int xfdr_init(const struct xfdr_options *o);

__attribute__((visibility("default"))) const struct xray_api_v1 xfdr_xray_exe_api = {
    .version = 1,
    .set_handler = __xray_set_handler,
    .set_handler_arg1 = __xray_set_handler_arg1,
    .set_customevent_handler = __xray_set_customevent_handler,
    .patch = __xray_patch,
    .unpatch = __xray_unpatch,
    .function_address = __xray_function_address,
    .max_function_id = __xray_max_function_id,
    .anchor = xfdr_init,
};
