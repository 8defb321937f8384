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

XFDR_API const struct xfdr_xray_api xfdr_xray_exe_api = {
    XFDR_XRAY_API_LINKED,
    .anchor = xfdr_init,
};
