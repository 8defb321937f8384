/*
 * bench/xfdr_row.c - set-up and check shared by the xfdr rows (bench/xfdr_row.h).
 */
#include "bench/xfdr_row.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/pool/pool.h"
#include "xfdr/xfdr.h"

/*
 * The pool is populated in the background after xfdr_init(); a thread that claims a buffer
 * first populates it itself. The per-event rows measure recording, not start-up (make bench
 * has its own start-up table): wait until the whole pool is in memory.
 */
BENCH_NOINSTR void bench_wait_pool_populated(void)
{
	const struct timespec tick = {0, 100000};
	uint32_t i = 0;

	while (i < rt_pool.count) {
		/* pairs with the release of mem_ready in pool_memory.c */
		if (__atomic_load_n(&rt_pool.descs[i].mem_ready, __ATOMIC_ACQUIRE))
			i++;
		else
			nanosleep(&tick, NULL);
	}
}

BENCH_NOINSTR int bench_xfdr_start(const struct xfdr_options *o)
{
	int rc = xfdr_init(o);

	if (rc == 0) {
		bench_wait_pool_populated();
		rc = xfdr_start();
	}
	return rc;
}

BENCH_NOINSTR int bench_xfdr_setup(const struct bench_cfg *cfg, const char *key, const char *label)
{
	struct xfdr_options o;
	char opt[128], *eq;
	unsigned i;
	int rc;

	xfdr_options_default(&o);
	if (cfg->buf_bytes)
		o.buffer_size = cfg->buf_bytes;
	if (cfg->buf_count)
		o.buffer_max = cfg->buf_count;
	o.output = cfg->out_dir ? cfg->out_dir : ".";
	/* The program flushes once, itself; a second file at exit would only cost disk. */
	o.flush_at_exit = 0;
	rc = cfg->clock ? xfdr_options_set(&o, "clock", cfg->clock) : 0;
	for (i = 0; rc == 0 && i < cfg->n_xfdr_opts; i++) {
		snprintf(opt, sizeof(opt), "%s", cfg->xfdr_opts[i]);
		eq = strchr(opt, '=');
		if (!eq)
			rc = -EINVAL;
		else
			*eq = '\0';
		rc = rc ? rc : xfdr_options_set(&o, opt, eq + 1);
	}
	if (rc == 0)
		rc = bench_xfdr_start(&o);
	if (rc == 0)
		return 0;
	printf("row\t%s\t%s\t-\t-\t-\t0\t0\tFAILED: xfdr set-up: %s\t-\n", key, label,
	       strerror(rc < 0 ? -rc : rc));
	return 1;
}

BENCH_NOINSTR int bench_xfdr_finish(const struct bench_cfg *cfg, const char *key, const char *label,
				    double *ns)
{
	char note[160], path[4096];
	int rc;

	xfdr_stop();
	rc = xfdr_flush(path, sizeof(path));
	if (rc != 0)
		snprintf(note, sizeof(note), "FAILED: xfdr_flush: %s", strerror(-rc));
	bench_print_row(cfg, key, label, ns, rc != 0 ? note : NULL);
	return rc != 0;
}
