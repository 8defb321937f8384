/*
 * bench/bench_xfdr_manual.c - xfdr through XFDR_ENTER/XFDR_EXIT around the measured call.
 *
 * libxfdr linked statically; set-up and the check of what was recorded are shared with the
 * other xfdr rows (bench/xfdr_row.h). "-c rdtsc" forces the clock the target VMs use (rdtsc +
 * sched_getcpu) on a machine that also has rdtscp, so one machine shows both costs.
 */
#include "bench/harness.h"
#include "bench/xfdr_row.h"

#include <stdio.h>

#include "xfdr/xfdr.h"

BENCH_NOINSTR static void loop_xfdr(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events / 2; i++) {
		XFDR_ENTER(BENCH_FID);
		bench_callee(i);
		XFDR_EXIT(BENCH_FID);
	}
}

BENCH_NOINSTR int main(int argc, char **argv)
{
	struct bench_cfg cfg;
	double ns[101];
	char key[64], label[96];

	bench_init(&cfg, argc, argv);
	snprintf(key, sizeof(key), "xfdr_manual_%s", cfg.clock ? cfg.clock : "auto");
	snprintf(label, sizeof(label), "xfdr XFDR_ENTER/XFDR_EXIT (clock %s)",
		 cfg.clock ? cfg.clock : "auto");
	if (bench_xfdr_setup(&cfg, key, label) != 0)
		return 1;
	bench_measure(&cfg, loop_xfdr, 1, ns);
	return bench_xfdr_finish(&cfg, key, label, ns, BENCH_FID);
}
