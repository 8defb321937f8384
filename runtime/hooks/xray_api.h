/*
 * runtime/hooks/xray_api.h - compiler-rt's XRay entry points as a table, for the shared runtime.
 *
 * compiler-rt links its XRay runtime into the executable with hidden symbols: code in the
 * executable can call __xray_patch(), code in libxfdr.so cannot see it. -lxfdr therefore links
 * one small object into the executable as well (runtime/link/xray_bridge.c, in libxfdr_xray.a,
 * pulled in by the libxfdr.so linker script): it defines xfdr_xray_exe_api, a table of those
 * entry points, with default visibility. Because libxfdr.so refers to the table, the linker
 * exports it from the executable, and the XRay hook (xray.c) finds XRay through it.
 *
 * The entries are NULL in a program built without -fxray-instrument (weak references).
 */
#ifndef XFDR_RUNTIME_HOOKS_XRAY_API_H
#define XFDR_RUNTIME_HOOKS_XRAY_API_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/xfdr.h"

/*
 * Raised when the table changes shape. Each version only appends to the one before: a runtime
 * reads the entries a table's version has, and ignores a table of a version it does not know.
 * 2: patch_function.
 */
#define XFDR_XRAY_API_VERSION 2u

struct xfdr_xray_api {
	uint32_t version;
	/* An unscoped C++ enum parameter is passed as an int. */
	int (*set_handler)(void (*entry)(int32_t fid, int type));
	int (*set_handler_arg1)(void (*entry)(int32_t fid, int type, uint64_t arg));
	int (*set_customevent_handler)(void (*entry)(void *data, size_t bytes));
	int (*patch)(void);
	int (*unpatch)(void);
	uintptr_t (*function_address)(int32_t fid);
	size_t (*max_function_id)(void);
	/*
	 * xfdr_init itself: a reference from the executable into libxfdr.so, so that a linker
	 * run with --as-needed (gcc's default on Debian) keeps libxfdr.so when the program
	 * calls no xfdr_* function. Never called through the table.
	 */
	int (*anchor)(const struct xfdr_options *o);
	/* Since version 2: one function's sleds (the include= and exclude= options). */
	int (*patch_function)(int32_t fid);
};

/*
 * compiler-rt's entry points, weak: in a program without XRay they stay NULL. Declared for the
 * two places that can reach them, the bridge in the program and libxfdr.a linked into it.
 */
extern int __xray_set_handler(void (*entry)(int32_t, int)) __attribute__((weak));
extern int __xray_set_handler_arg1(void (*entry)(int32_t, int, uint64_t)) __attribute__((weak));
extern int __xray_set_customevent_handler(void (*entry)(void *, size_t)) __attribute__((weak));
extern int __xray_patch(void) __attribute__((weak));
extern int __xray_unpatch(void) __attribute__((weak));
extern uintptr_t __xray_function_address(int32_t fid) __attribute__((weak));
extern size_t __xray_max_function_id(void) __attribute__((weak));
extern int __xray_patch_function(int32_t fid) __attribute__((weak));

/* The table of those, as the static link resolved them. */
#define XFDR_XRAY_API_LINKED                                                                       \
	.version = XFDR_XRAY_API_VERSION, .set_handler = __xray_set_handler,                       \
	.set_handler_arg1 = __xray_set_handler_arg1,                                               \
	.set_customevent_handler = __xray_set_customevent_handler, .patch = __xray_patch,          \
	.unpatch = __xray_unpatch, .function_address = __xray_function_address,                    \
	.max_function_id = __xray_max_function_id, .patch_function = __xray_patch_function

#endif /* XFDR_RUNTIME_HOOKS_XRAY_API_H */
