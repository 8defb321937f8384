/*
 * bench/xfdr_row.c - set-up and check shared by the xfdr rows (bench/xfdr_row.h).
 */
#include "bench/xfdr_row.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/pool/pool.h"
#include "xfdr/reader.h"
#include "xfdr/xfdr.h"

/*
 * The pool is populated in the background after xfdr_init(); a thread that claims a buffer
 * first populates it itself. The per-event rows measure recording, not start-up (make bench
 * has its own start-up table): wait until the whole pool is in memory.
 */
BENCH_NOINSTR static void wait_pool_populated(void)
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

BENCH_NOINSTR int bench_xfdr_setup(const struct bench_cfg *cfg, const char *key, const char *label)
{
	struct xfdr_options o;
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
	if (rc == 0)
		rc = xfdr_init(&o);
	if (rc == 0) {
		wait_pool_populated();
		rc = xfdr_start();
	}
	if (rc == 0)
		return 0;
	printf("row\t%s\t%s\t-\t-\t-\t0\t0\tFAILED: xfdr set-up: %s\t-\n", key, label,
	       strerror(rc < 0 ? -rc : rc));
	return 1;
}

/* Returns 0, or -1 with `why` filled by the reader's one-line message. */
BENCH_NOINSTR static int count_events(const char *path, uint32_t fid, uint64_t *enters,
				      uint64_t *exits, uint64_t *foreign, char *why,
				      size_t why_bytes)
{
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	int rc;

	*enters = *exits = *foreign = 0;
	if (xfdr_trace_open(path, &t, &err) != 0) {
		snprintf(why, why_bytes, "%s", err.text);
		return -1;
	}
	xfdr_records_begin(t, &c);
	while ((rc = xfdr_records_next(&c, &r, &err)) == 1) {
		if (r.is_metadata)
			continue;
		if (r.function_id == fid && r.kind == XFDR_FN_ENTER)
			(*enters)++;
		else if (r.function_id == fid && r.kind == XFDR_FN_EXIT)
			(*exits)++;
		else
			(*foreign)++;
	}
	xfdr_trace_close(t);
	if (rc < 0) {
		snprintf(why, why_bytes, "%s", err.text);
		return -1;
	}
	return 0;
}

/* The trace is ~130 MB per run and of no use once counted. */
BENCH_NOINSTR static void remove_trace(const char *path)
{
	char map[4200];

	unlink(path);
	snprintf(map, sizeof(map), "%s.map", path);
	unlink(map);
}

BENCH_NOINSTR int bench_xfdr_finish(const struct bench_cfg *cfg, const char *key, const char *label,
				    double *ns, uint32_t fid)
{
	char note[640], path[4096], why[560];
	uint64_t expected, enters, exits, foreign;
	int rc;

	xfdr_stop();
	rc = xfdr_flush(path, sizeof(path));
	if (rc != 0) {
		snprintf(note, sizeof(note), "FAILED: xfdr_flush: %s", strerror(-rc));
		bench_print_row(cfg, key, label, ns, note);
		return 1;
	}

	expected = (uint64_t)(cfg->reps + 1) * cfg->events;
	rc = count_events(path, fid, &enters, &exits, &foreign, why, sizeof(why));
	remove_trace(path);
	if (rc != 0)
		snprintf(note, sizeof(note), "FAILED: the reader rejects the trace: %s", why);
	else if (foreign)
		snprintf(note, sizeof(note), "FAILED: %llu function records of another id or kind",
			 (unsigned long long)foreign);
	else if (enters + exits != expected)
		snprintf(note, sizeof(note), "DROPPED %llu of %llu events: raise buffer_max",
			 (unsigned long long)(expected - enters - exits),
			 (unsigned long long)expected);
	else
		snprintf(note, sizeof(note), "recorded %llu of %llu events, 0 dropped",
			 (unsigned long long)(enters + exits), (unsigned long long)expected);
	bench_print_row(cfg, key, label, ns, note);
	return rc != 0 || foreign || enters + exits != expected;
}
