/*
 * bench/bench_xfdr_manual.c - xfdr through XFDR_ENTER/XFDR_EXIT around the measured calls.
 *
 * libxfdr linked statically; set-up and flush are shared with the other xfdr rows
 * (bench/xfdr_row.h). "-c rdtsc" forces the clock the target VMs use (rdtsc + sched_getcpu)
 * on a machine that also has rdtscp, so one machine shows both costs.
 */
#include "bench/harness.h"
#include "bench/xfdr_row.h"

#include <stdio.h>

#include "xfdr/xfdr.h"

BENCH_NOINSTR static void loop_leaf(uint64_t events)
{
	uint64_t i;

	for (i = 0; i < events / 2; i++) {
		XFDR_ENTER(BENCH_FID);
		bench_callee(i);
		XFDR_EXIT(BENCH_FID);
	}
}

/* bench_tree's shape, the macros inside each call as an instrumented bench_tree has them. */
BENCH_NOINSTR static void tree(unsigned depth)
{
	XFDR_ENTER(BENCH_FID);
	bench_calls = bench_calls + 1;
	if (depth) {
		tree(depth - 1);
		tree(depth - 1);
	}
	XFDR_EXIT(BENCH_FID);
}

static unsigned tree_depth;

BENCH_NOINSTR static void loop_tree(uint64_t events)
{
	(void)events;
	tree(tree_depth);
}

BENCH_NOINSTR int main(int argc, char **argv)
{
	struct bench_cfg cfg;
	double ns[101];
	char key[64], label[160];
	size_t len;
	unsigned i;

	bench_init(&cfg, argc, argv);
	tree_depth = cfg.tree_depth;
	/* -k names the row when -O makes it a variant (ring mode, elision) */
	snprintf(key, sizeof(key), "%s", cfg.row ? cfg.row : "xfdr_manual");
	len = (size_t)snprintf(label, sizeof(label), "xfdr macros%s%s", cfg.clock ? " clock=" : "",
			       cfg.clock ? cfg.clock : "");
	for (i = 0; i < cfg.n_xfdr_opts && len < sizeof(label); i++)
		len += (size_t)snprintf(label + len, sizeof(label) - len, " %s", cfg.xfdr_opts[i]);
	if (bench_xfdr_setup(&cfg, key, label) != 0)
		return 1;
	bench_measure(&cfg, cfg.workload == BENCH_TREE ? loop_tree : loop_leaf, 1, ns);
	return bench_xfdr_finish(&cfg, key, label, ns);
}
