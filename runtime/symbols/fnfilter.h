/*
 * runtime/symbols/fnfilter.h - which functions are recorded: the include= and exclude= options.
 *
 * Each list is shell-style patterns (fnmatch(3): *, ?, [...], a backslash quotes the next
 * character) separated by commas; "\," is a comma inside a pattern. A function is recorded when
 * no include list is set or its name matches a pattern of it, and its name matches no exclude
 * pattern. A name matches in any of its forms: the symbol as the .map shows it (C++ mangled),
 * and for a C++ symbol its demangled name with and without the parameter list
 * ("_ZN2ns3fooEi", "ns::foo(int)", "ns::foo"). A function without a symbol matches nothing.
 *
 * The decision is made once per function and kept by its hook: the -finstrument-functions and
 * -pg ids in the function map (fnmap.c), XRay's by patching only the functions recorded
 * (runtime/hooks/xray.c). So the lists are set once per process: the first xfdr_init() that
 * gives them fixes them (fnfilter_configure()).
 *
 * Demangling is libiberty's cplus_demangle_v3_callback(), which allocates nothing.
 */
#ifndef XFDR_RUNTIME_SYMBOLS_FNFILTER_H
#define XFDR_RUNTIME_SYMBOLS_FNFILTER_H

#include <stdint.h>

#include "runtime/base/compiler.h"

enum fnfilter_list {
	FNFILTER_INCLUDE = 0,
	FNFILTER_EXCLUDE = 1,
	FNFILTER_LISTS = 2,
};

/*
 * fnfilter_configure - set both lists (NULL or "": none) for the life of the process. A call
 * after the first that set a list changes nothing and returns -EBUSY unless it gives the same
 * lists. Returns 0, or -EINVAL for a list patterns_check() (patterns.h) refuses.
 * Context: init (not a signal handler), before the hooks decide with these lists.
 */
int fnfilter_configure(const char *include, const char *exclude);

/* Some list is set: functions have to be decided. Context: any. */
extern uint32_t fnfilter_active XFDR_HIDDEN;

static inline XFDR_NOINSTR int fnfilter_on(void)
{
	return xfdr_load_relaxed(&fnfilter_active) != 0;
}

/* The list as it was given, "" when none. Context: any. */
const char *fnfilter_text(enum fnfilter_list list);

/*
 * fnfilter_keeps_name - 1 when the function of this symbol (NULL: none) is recorded. Marks the
 * patterns it matched. Context: any thread, signal handlers included; no allocation, no lock.
 */
int fnfilter_keeps_name(const char *symbol);

/*
 * fnfilter_keeps_addr - fnfilter_keeps_name() for the function whose first byte is at addr,
 * named from the symbol tables (namer.h). Context: any thread, signal handlers included (a
 * handler nested in a lookup of its own thread names the address from a snapshot of its own);
 * threads wait for each other. No allocation but the symbolizer's mappings.
 */
int fnfilter_keeps_addr(uintptr_t addr);

/*
 * fnfilter_count_left_out - one more function the lists left out (by the hook that decided it,
 * once per function); fnfilter_functions_left_out - how many so far. Context: any.
 */
void fnfilter_count_left_out(void);
uint64_t fnfilter_functions_left_out(void);

/*
 * fnfilter_report_unmatched - one stderr line naming the patterns no function decided so far
 * matched (a typo, or functions never called), once per process. Context: any.
 */
void fnfilter_report_unmatched(void);

#endif /* XFDR_RUNTIME_SYMBOLS_FNFILTER_H */
