/*
 * runtime/hooks/cyg.c - the -finstrument-functions hooks (gcc and clang).
 *
 * The compiler calls __cyg_profile_func_enter(this_fn, call_site) at every entry of an
 * instrumented function and __cyg_profile_func_exit(this_fn, call_site) before every return.
 * this_fn becomes a 28-bit id through fnmap (first-seen order; names go to the .map file).
 * glibc has do-nothing versions of both; ours take precedence when libxfdr is linked into the
 * program or preloaded (LD_PRELOAD=libxfdr.so.0 XFDR_OPTIONS=start=1 ./program).
 *
 * Tail calls: an instrumented caller calls the exit hook after its callee returns, so the
 * compiler cannot turn the call into a jump; there is no Tail_Exit from these hooks.
 *
 * Cost when not recording: one load and a branch. When recording: the thread's id cache
 * (fnmap_fast.h), the clock and the inline record path (record_fast.h); a function the
 * include= and exclude= options leave out (decided when its id was given, fnfilter.h) costs
 * the cache lookup and one count. A function's first call in the process, and a thread's
 * first call, may allocate (see fnmap_id()).
 */
#include <stdint.h>

#include "runtime/base/compiler.h"
#include "runtime/symbols/fnmap_fast.h"
#include "runtime/record/record_fast.h"
#include "runtime/record/session.h"
#include "xfdr/format.h"
#include "xfdr/xfdr.h"

/*
 * A function this thread has not met yet (or a nested hook): the id from the hash table. That
 * lookup is the recorder's time (a function's first call in the process creates the map or
 * inserts into it, and names the function when filters are set): an entry is stamped after
 * it, so that the call starts once its id is known; an exit keeps the time it was taken at,
 * before the lookup.
 */
static XFDR_COLD XFDR_NOINSTR void cyg_record_uncached(unsigned action, void *fn)
{
	unsigned cpu = 0;
	uint64_t tsc = action == XFDR_FN_ENTER ? 0 : clock_read(&cpu);
	uint32_t fid = fnmap_id_uncached(fn);

	if (fid & FNMAP_ID_FILTERED) {
		rec_count_filtered(action);
		return;
	}
	if (action == XFDR_FN_ENTER)
		tsc = clock_read(&cpu);
	rec_function_at(tsc, cpu, action, fid);
}

/*
 * Context: any thread, signal handlers included; errno is preserved. The id comes before the
 * clock, so that a call the filters leave out costs the lookup and no clock read. A miss (or a
 * clock read with a call) leaves by a tail call, so nothing live has to survive a call and the
 * fast path saves no register.
 */
static inline XFDR_NOINSTR __attribute__((always_inline)) void cyg_record(unsigned action, void *fn)
{
	struct clock_now now;
	uint32_t fid;

	/* Not recording: leave before the clock, so a linked but idle xfdr costs a load. */
	if (XFDR_UNLIKELY(session_recording() == SESSION_OFF))
		return;
	if (XFDR_UNLIKELY(!fnmap_id_cached(fn, &fid))) {
		cyg_record_uncached(action, fn);
		return;
	}
	if (XFDR_UNLIKELY(fid & FNMAP_ID_FILTERED)) {
		rec_count_filtered(action);
		return;
	}
	if (XFDR_UNLIKELY(!clock_now_inline(&now))) {
		rec_function_clock_call(action, fid);
		return;
	}
	rec_function_now(now, action, fid);
}

XFDR_API XFDR_NOINSTR void __cyg_profile_func_enter(void *this_fn, void *call_site)
{
	(void)call_site;
	cyg_record(XFDR_FN_ENTER, this_fn);
}

XFDR_API XFDR_NOINSTR void __cyg_profile_func_exit(void *this_fn, void *call_site)
{
	(void)call_site;
	cyg_record(XFDR_FN_EXIT, this_fn);
}
