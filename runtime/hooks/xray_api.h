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

/* Raised when the table changes shape; a runtime ignores a table of another version. */
#define XFDR_XRAY_API_VERSION 1u

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
};

#endif /* XFDR_RUNTIME_HOOKS_XRAY_API_H */
