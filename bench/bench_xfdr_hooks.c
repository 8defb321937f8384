/*
 * bench/bench_xfdr_hooks.c - xfdr recording through one of its hooks in bench/callee.c.
 *
 * One source, built once per way in (bench/hooks.mk passes one -DHOOKS_*): callee.c alone is
 * compiled with -finstrument-functions, with gcc's -pg -mfentry -minstrument-return=call, or
 * with clang's XRay sleds, and libxfdr.a is linked statically, so the program's calls of
 * bench_callee()/bench_tree() reach xfdr's __cyg_profile_func_*, __fentry__/__return__ or
 * XRay handler. The loop itself is the plain bench_loop_workload(): the instrumentation is in
 * the callees, as a user's build would have it.
 *
 * Set-up and flush are the other xfdr rows' (bench/xfdr_row.h): the C API, so XFDR_OPTIONS
 * cannot change what is measured. xfdr_start() installs the XRay handler and patches the
 * sleds itself; the -finstrument-functions and fentry hooks are always there and record
 * once the session runs. The ids differ per way (fnmap's first-seen ids, XRay's own), which
 * bench/trace_count.c does not care about: it counts every function record of the file.
 */
#include "bench/harness.h"
#include "bench/xfdr_row.h"

#include <stdio.h>

#if defined(HOOKS_CYG)
#define ROW_KEY "xfdr_cyg_linked"
#define ROW_LABEL "xfdr -finstrument-functions (linked)"
#elif defined(HOOKS_FENTRY)
#define ROW_KEY "xfdr_fentry"
#define ROW_LABEL "xfdr gcc -pg -mfentry (linked)"
#elif defined(HOOKS_XRAY)
#define ROW_KEY "xfdr_xray"
#define ROW_LABEL "xfdr as XRay handler (linked)"
#else
#error "bench/hooks.mk builds this file with -DHOOKS_CYG, -DHOOKS_FENTRY or -DHOOKS_XRAY"
#endif

BENCH_NOINSTR int main(int argc, char **argv)
{
	struct bench_cfg cfg;
	double ns[101];
	char key[64], label[160];
	size_t len;
	unsigned i;

	bench_init(&cfg, argc, argv);
	/* -k names the row when -O makes it a variant (exclude= of the callees) */
	snprintf(key, sizeof(key), "%s", cfg.row ? cfg.row : ROW_KEY);
	len = (size_t)snprintf(label, sizeof(label), "%s", ROW_LABEL);
	for (i = 0; i < cfg.n_xfdr_opts && len < sizeof(label); i++)
		len += (size_t)snprintf(label + len, sizeof(label) - len, " %s", cfg.xfdr_opts[i]);
	if (bench_xfdr_setup(&cfg, key, label) != 0)
		return 1;
	bench_measure(&cfg, bench_loop_workload, 1, ns);
	return bench_xfdr_finish(&cfg, key, label, ns);
}
