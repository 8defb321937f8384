/*
 * runtime/hooks/hooks.h - what the runtime core calls of the instrumentation hooks.
 *
 * The hooks themselves need no call: __cyg_profile_func_enter/exit (cyg.c) record
 * whenever a session records; the XRay handlers (xray.c) only run while xfdr has
 * patched the sleds. The core calls:
 *
 *   xfdr_start(), after recording is on:   hooks_xray_install()
 *   xfdr_stop(), after recording is off:   hooks_xray_uninstall()
 *   the .map writer, after its own lines:  hooks_write_map(fd)
 */
#ifndef XFDR_RUNTIME_HOOKS_HOOKS_H
#define XFDR_RUNTIME_HOOKS_HOOKS_H

/*
 * hooks_xray_install - when the program carries compiler-rt's XRay runtime (clang
 * -fxray-instrument): install xfdr's handlers (first call only) and patch every sled.
 * Context: not async-signal-safe when XRay is present (patching mprotect()s the code and
 * takes XRay's spin lock); without XRay it only tests two weak symbols.
 * Returns 0 when patched; -ENOSYS without XRay in the process (not an error for the caller);
 * -ENODEV when XRay is not initialized; -EBUSY while another patch or unpatch runs;
 * -EIO when XRay could not patch (one stderr line says so).
 */
int hooks_xray_install(void);

/*
 * hooks_xray_uninstall - unpatch the sleds: the program runs at full speed again, and no
 * XRay event reaches xfdr. Context and returns: as hooks_xray_install().
 */
int hooks_xray_uninstall(void);

/*
 * hooks_write_map - append the function lines (format: fnmap.h) to a .map file: XRay's ids
 * if xfdr patched the sleds, the -finstrument-functions ids if those hooks ran. Prints one
 * stderr line if some functions could not be named.
 * Context: async-signal-safe (reads /proc/self/maps and the mapped files' symbol tables with
 * open/read/mmap; no lock, no malloc). Returns 0 or a negative errno of write(2) or -ENOMEM.
 */
int hooks_write_map(int fd);

#endif /* XFDR_RUNTIME_HOOKS_HOOKS_H */
