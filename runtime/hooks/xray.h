/*
 * runtime/hooks/xray.h - what the life cycle calls of the XRay hook.
 *
 * The other hooks need no call: __cyg_profile_func_enter/exit (cyg.c) and the manual API
 * (manual_api.c) record whenever a session records. The XRay handlers only run while xfdr has
 * patched the sleds, so the life cycle calls:
 *
 *   xfdr_start(), after recording is on:   hooks_xray_install()
 *   xfdr_stop(), after recording is off:   hooks_xray_uninstall()
 *
 * The first successful install also registers XRay's function ids with the .map writer
 * (runtime/flush/map_functions.h), which lists them from then on.
 */
#ifndef XFDR_RUNTIME_HOOKS_XRAY_H
#define XFDR_RUNTIME_HOOKS_XRAY_H

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

#endif /* XFDR_RUNTIME_HOOKS_XRAY_H */
