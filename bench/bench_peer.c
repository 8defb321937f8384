/*
 * bench/bench_peer.c - the program a peer tracer runs from outside: uftrace and LTTng-UST.
 *
 * Nothing here knows a tracer. bench.mk links this main and the harness (never instrumented)
 * with bench/callee.c built the peer's way (-pg for uftrace, -finstrument-functions for
 * LTTng-UST's cyg-profile library), and the peer's script (bench/peer_uftrace.sh,
 * bench/peer_lttng.sh) runs it under the tracer and prints the trace line afterwards. So the
 * row is the bare "call" row of bench/bench_base.c with the callee's hooks live, under its
 * own key: -k names the peer, and that key must be one of peers[] below.
 */
#include "bench/harness.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *key, *label;
} peers[] = {
    {"uftrace", "uftrace record (gcc -pg, mcount)"},
    {"lttng_ust", "LTTng-UST liblttng-ust-cyg-profile-fast"},
};

BENCH_NOINSTR int main(int argc, char **argv)
{
	struct bench_cfg cfg;
	unsigned i;

	bench_init(&cfg, argc, argv);
	for (i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
		if (cfg.row && !strcmp(cfg.row, peers[i].key)) {
			bench_run_row(&cfg, peers[i].key, peers[i].label, bench_loop_workload,
				      NULL);
			return 0;
		}
	}
	fprintf(stderr, "bench_peer: -k must name a peer (uftrace, lttng_ust)\n");
	return 2;
}
