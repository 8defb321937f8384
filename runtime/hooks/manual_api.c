/*
 * runtime/hooks/manual_api.c - the manual API: xfdr_enter() and friends, and through them the
 * XFDR_ENTER/XFDR_EXIT/XFDR_SCOPE macros of xfdr.h.
 *
 * Each one reads the clock and goes to the record path (record_fast.h inline for plain
 * entries and exits; recorder.c for events with arguments or a payload). Context: any thread,
 * any signal handler; errno is preserved.
 */
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/compiler.h"
#include "runtime/record/recorder.h"
#include "runtime/record/record_fast.h"
#include "xfdr/format.h"
#include "xfdr/xfdr.h"

XFDR_API XFDR_NOINSTR void xfdr_enter(uint32_t fid)
{
	rec_function(XFDR_FN_ENTER, fid);
}

XFDR_API XFDR_NOINSTR void xfdr_exit(uint32_t fid)
{
	rec_function(XFDR_FN_EXIT, fid);
}

XFDR_API XFDR_NOINSTR void xfdr_tail_exit(uint32_t fid)
{
	rec_function(XFDR_FN_TAIL_EXIT, fid);
}

XFDR_API XFDR_NOINSTR void xfdr_enter_args(uint32_t fid, const uint64_t *args, unsigned nargs)
{
	rec_function_args(XFDR_FN_ENTER_ARGS, fid, args, nargs);
}

XFDR_API XFDR_NOINSTR int xfdr_custom_event(const void *data, size_t bytes)
{
	return rec_custom_event(data, bytes);
}
