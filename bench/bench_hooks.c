/*
 * bench/bench_hooks.c - the hook rows whose program is not linked with xfdr: each mechanism
 * with an empty handler, and the -finstrument-functions program xfdr is preloaded into.
 *
 * One source, built once per row (bench/hooks.mk passes one -DHOOKS_*); bench/callee.c alone
 * carries the instrumentation and the loop is the plain bench_loop_workload():
 *   HOOKS_NOOP_CYG     -finstrument-functions, the hooks of bench/noop_cyg.c (return at once)
 *   HOOKS_NOOP_FENTRY  -pg -mfentry -minstrument-return=call, the stubs of bench/noop_fentry.S
 *   HOOKS_NOOP_XRAY    XRay sleds patched by compiler-rt, the handler of bench/noop_xray.c
 *   HOOKS_CYG_PRELOAD  -finstrument-functions and nothing else: run as
 *                      LD_PRELOAD=libxfdr.so.0 XFDR_OPTIONS=start=1:... it records from load
 *                      to exit, flushes at exit, and bench/trace_count.c counts the file.
 * The empty rows show what each mechanism costs before a handler does any work; beside the
 * xfdr rows of the same mechanism they split a way's cost into mechanism and recording.
 */
#include "bench/harness.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(HOOKS_NOOP_CYG)
#define ROW_KEY "noop_cyg"
#define ROW_LABEL "no-op -finstrument-functions hooks"
#elif defined(HOOKS_NOOP_FENTRY)
#define ROW_KEY "noop_fentry"
#define ROW_LABEL "no-op -pg -mfentry stubs"
#elif defined(HOOKS_NOOP_XRAY)
#define ROW_KEY "noop_xray"
#define ROW_LABEL "no-op XRay handler (compiler-rt patch)"
#elif defined(HOOKS_CYG_PRELOAD)
#define ROW_KEY "xfdr_cyg_preload"
#define ROW_LABEL "xfdr -finstrument-functions (LD_PRELOAD)"
#else
#error "bench/hooks.mk builds this file with one -DHOOKS_NOOP_* or -DHOOKS_CYG_PRELOAD"
#endif

#if defined(HOOKS_NOOP_XRAY)
/* bench/noop_xray.c: 0 once the empty handler is set and the sleds are patched. */
int bench_noop_xray_install(char *why, size_t why_bytes);
#endif

#if defined(HOOKS_CYG_PRELOAD)
/* Whether a thread of this process has the name `comm` (/proc/self/task/<tid>/comm). */
BENCH_NOINSTR static int thread_named(const char *comm)
{
	char path[64], name[32];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	FILE *f;
	int found = 0;

	if (!dir)
		return 0;
	while (!found && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = '\0';
			found = !strcmp(name, comm);
		}
		fclose(f);
	}
	closedir(dir);
	return found;
}

/*
 * The preloaded runtime populates its pool in the background ("xfdr-prefault", gone when
 * done); a buffer claimed before that is populated by the claiming thread, inside a timed
 * repetition. The linked rows wait for the whole pool (bench/xfdr_row.c); this program, which
 * knows nothing of xfdr, waits for the thread to end instead (at most 10 s), so both measure
 * recording and not start-up.
 */
BENCH_NOINSTR static void wait_prefault_done(void)
{
	const struct timespec tick = {0, 1000000};
	unsigned i;

	for (i = 0; i < 10000 && thread_named("xfdr-prefault"); i++)
		nanosleep(&tick, NULL);
}
#endif

BENCH_NOINSTR int main(int argc, char **argv)
{
	struct bench_cfg cfg;

	bench_init(&cfg, argc, argv);
#if defined(HOOKS_NOOP_XRAY)
	{
		char why[128];

		if (bench_noop_xray_install(why, sizeof(why)) != 0) {
			printf("row\t%s\t%s\t-\t-\t-\t0\t0\tFAILED: %s\t-\n", ROW_KEY, ROW_LABEL,
			       why);
			return 1;
		}
	}
#elif defined(HOOKS_CYG_PRELOAD)
	wait_prefault_done();
#endif
	bench_run_row(&cfg, ROW_KEY, ROW_LABEL, bench_loop_workload, NULL);
	return 0;
}
