/*
 * command/rebuild.c - what the verbs that rebuild a trace (recover, core) share: their
 * common options and output names, the trace and its sidecar written as new files put in place
 * together (rebuild/output_files.h), and the summary of what was kept and dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "rebuild/file_io.h"
#include "rebuild/output_files.h"
#include "rebuild/pool_image.h"

/* ---- Rebuilt traces: options and output names ------------------------------------------ */

int cli_rebuild_opts_parse(const struct cli_command *cmd, int argc, char **argv,
			   struct cli_rebuild_opts *o)
{
	int rc = cli_options_parse_one(cmd, argc, argv, &o->input);

	if (rc)
		return rc;
	if (o->output && !*o->output)
		return cli_usage("empty OUT");
	return 0;
}

int cli_map_name(const char *out, char *buf, size_t n)
{
	if ((size_t)snprintf(buf, n, "%s.map", out) >= n) {
		cli_error("%s.map: %s", out, strerror(ENAMETOOLONG));
		return CLI_FAIL;
	}
	return 0;
}

/* ---- Outputs: renamed into place, only over a regular file (rebuild/output_files.h) ---- */

/*
 * May OUT (or OUT.map) at path be written? 0 when nothing is there, or a file to replace with
 * force. Else reports and returns: CLI_FAIL for what is not a regular file; CLI_USAGE for an
 * existing file without force, "xfdr VERB: PATH exists (--force replaces it)".
 */
static int refuse_existing(const char *path, int force)
{
	struct xfdr_error err;
	int rc = rb_output_check(path, force, &err);

	if (rc < 0) {
		cli_error("%s", err.text);
		return CLI_FAIL;
	}
	if (rc > 0) {
		cli_error("%s exists (--force replaces it)", path);
		return CLI_USAGE;
	}
	return 0;
}

int cli_check_rebuild_outputs(const char *out, const char *out_map, const char *const *inputs,
			      const char *which, int force)
{
	size_t i;
	int status;

	/* Refusing to replace a file is a usage error, as convert's "output is the input". */
	for (i = 0; inputs[i]; i++) {
		if (cli_same_file(out, inputs[i]) || cli_same_file(out_map, inputs[i])) {
			cli_error("%s: OUT would replace %s", out, which);
			return CLI_USAGE;
		}
	}
	status = refuse_existing(out, force);
	return status ? status : refuse_existing(out_map, force);
}

static int write_pool_trace(int fd, const char *out, struct rb_pool_result *res, void *ctx)
{
	struct xfdr_error err;

	if (rb_pool_rebuild(ctx, fd, out, res, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	return 0;
}

static int rebuild_files(const struct rb_pool_job *job, const char *out,
			 int (*write_map)(FILE *f, const struct rb_pool_result *res, void *ctx),
			 void *ctx, struct rb_pool_result *res)
{
	return cli_write_trace_and_map(out, write_pool_trace, (void *)job, write_map, ctx, res);
}

int cli_write_trace_and_map(const char *out,
			    int (*write_trace)(int fd, const char *out, struct rb_pool_result *res,
					       void *ctx),
			    void *trace_ctx,
			    int (*write_map)(FILE *f, const struct rb_pool_result *res, void *ctx),
			    void *ctx, struct rb_pool_result *res)
{
	struct rb_new_file tf, mf = {.fd = -1};
	struct rb_new_file *const both[] = {&tf, &mf};
	struct xfdr_error err;
	char map[4096], *text = NULL;
	size_t len = 0;
	FILE *f;
	int e;

	if (cli_map_name(out, map, sizeof(map)))
		return CLI_FAIL;
	if (rb_new_file_open(&tf, out, &err)) {
		cli_error("%s", err.text);
		return CLI_FAIL;
	}
	if (write_trace(tf.fd, out, res, trace_ctx)) {
		rb_new_file_abort(&tf);
		return CLI_FAIL;
	}
	/* The sidecar is small: composed in memory, so one check covers every line. */
	f = open_memstream(&text, &len);
	if (!f) {
		cli_error("%s: cannot create: %s", map, strerror(errno));
		goto fail;
	}
	if (write_map(f, res, ctx) != 0) {
		fclose(f);
		goto fail;
	}
	if (fclose(f) != 0) {
		cli_error("%s: write error: %s", map, strerror(ENOMEM));
		goto fail;
	}
	if (rb_new_file_open(&mf, map, &err)) {
		cli_error("%s", err.text);
		goto fail;
	}
	e = rb_pwrite_all(mf.fd, text, len, 0);
	if (e) {
		cli_error("%s: write error: %s", map, strerror(e));
		goto fail;
	}
	/* Both in place, or neither (unless the second rename fails after the first). */
	if (rb_new_files_commit(both, 2, &err)) {
		cli_error("%s", err.text);
		goto fail;
	}
	free(text);
	return CLI_OK;
fail:
	rb_new_file_abort(&mf);
	rb_new_file_abort(&tf);
	free(text);
	rb_pool_result_free(res);
	return CLI_FAIL;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* The summary; absent describes the buffers left out as RB_POOL_ABSENT. */
static void rebuild_report(const struct rb_pool_result *res, const char *out, const char *absent,
			   int best_effort)
{
	static const struct {
		enum rb_pool_verdict v;
		const char *why;
	} dropped[] = {
	    {RB_POOL_CLAIMING, "being claimed (preamble not yet complete)"},
	    {RB_POOL_EMPTY, "claimed, no preamble written yet"},
	    {RB_POOL_BAD_LENGTH, "the descriptor's used_bytes is beyond the buffer size"},
	    {RB_POOL_STALE, "stale bytes of an earlier use (the preamble is not the descriptor's)"},
	    {RB_POOL_BAD_PREAMBLE, "no valid NewBuffer, WallClockTime, NewCPUId at the start"},
	    {RB_POOL_ABSENT, NULL},
	    {RB_POOL_NO_ROOM, "no room left to close them with EndOfBuffer"},
	};
	size_t i;
	uint64_t n;

	cli_error("%llu buffer%s of %zu thread%s kept, of %llu in the pool",
		  (unsigned long long)res->kept, plural(res->kept), res->thread_count,
		  plural(res->thread_count), (unsigned long long)res->buffers);
	if (res->open_closed)
		cli_error("%llu open buffer%s closed at %s last complete record",
			  (unsigned long long)res->open_closed, plural(res->open_closed),
			  res->open_closed == 1 ? "its" : "their");
	if ((n = res->count[RB_POOL_FREE]))
		cli_error("%llu never-used buffer%s dropped", (unsigned long long)n, plural(n));
	for (i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		n = res->count[dropped[i].v];
		if (n)
			cli_error("%llu buffer%s dropped: %s", (unsigned long long)n, plural(n),
				  dropped[i].why ? dropped[i].why : absent);
	}
	if (res->tails_cut)
		cli_error("%llu torn tail%s cut (%llu bytes of incomplete or invalid records)",
			  (unsigned long long)res->tails_cut, plural(res->tails_cut),
			  (unsigned long long)res->tail_bytes_cut);
	if (best_effort && res->kept)
		cli_error("best effort: %llu buffer%s end at unwritten (zero) bytes, %llu at an "
			  "invalid record",
			  (unsigned long long)res->zero_ended, plural(res->zero_ended),
			  (unsigned long long)res->invalid_ended);
	if (res->hz_estimated)
		cli_error(
		    "TSC rate not recorded: estimated from the buffers' wall clocks as %llu Hz",
		    (unsigned long long)res->tsc_hz);
	else if (res->hz_assumed)
		cli_error("warning: TSC rate not recorded and the buffers span less than %u ms: "
			  "assuming %llu Hz (times in the trace are then only relative)",
			  RB_POOL_HZ_MIN_SPAN_US / 1000, (unsigned long long)res->tsc_hz);
	if (!res->kept)
		cli_error("no buffer held recorded events: the trace has a header only");
	cli_error("wrote %s", out);
}

void cli_map_value(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

int cli_map_generated(FILE *f, const struct cli_map_facts *m, const struct rb_pool_result *res)
{
	size_t i;

	fprintf(f, "xfdr-map\t1\npid\t%llu\ntrace\t", (unsigned long long)m->pid);
	cli_map_value(f, m->trace);
	fprintf(f,
		"\ntsc_hz\t%llu\nconstant_tsc\t%d\nnonstop_tsc\t%d\nbuffer_size\t%llu\n"
		"buffer_max\t%llu\nbuffers_written\t%llu\n",
		(unsigned long long)res->tsc_hz, !!m->constant_tsc, !!m->nonstop_tsc,
		(unsigned long long)m->buffer_bytes, (unsigned long long)m->buffer_count,
		(unsigned long long)res->kept);
	for (i = 0; i < res->thread_count; i++) {
		uint32_t tid = res->threads[i].tid, id = res->threads[i].thread_id;
		const char *name = m->thread_name ? m->thread_name(m->names_ctx, tid, id) : NULL;

		fprintf(f, "thread\t%u\t%u\t", (unsigned)tid, (unsigned)id);
		cli_map_value(f, name && *name ? name : "<unknown>");
		fprintf(f, "\t0\t0\t0\t0\t0\t0\t0\t0\t0\n");
	}
	return 0;
}

/* ---- What became of each buffer ------------------------------------------------------------ */

static const char *const state_names[] = {"free", "owned", "full", "claiming"};

/* Callbacks for struct rb_pool_job: ctx is a struct cli_progress to update. */
static void note_progress(void *ctx, const struct rb_pool_note *n)
{
	cli_progress_update(ctx, n->done, n->total);
}

/* -v: "buffer 3: owned, used 88, claim 4, thread 1 (tid 1001): kept 80 bytes; stopped at ..." */
static void note_verbose(void *ctx, const struct rb_pool_note *n)
{
	char desc[160] = "", kept[48] = "";

	(void)ctx;
	if (n->have_desc)
		snprintf(desc, sizeof(desc), "%s, used %llu, claim %llu, thread %u (tid %u): ",
			 state_names[n->state & 3], (unsigned long long)n->used,
			 (unsigned long long)n->claim_seq, n->thread_id, n->tid);
	if (n->verdict == RB_POOL_KEPT)
		snprintf(kept, sizeof(kept), " %llu bytes", (unsigned long long)n->kept);
	cli_error("buffer %llu: %s%s%s%s%s", (unsigned long long)n->index, desc,
		  rb_pool_verdict_name(n->verdict), kept, n->why ? "; stopped at " : "",
		  n->why ? n->why : "");
}

/* ---- The whole rebuild --------------------------------------------------------------------- */

int cli_rebuild(struct rb_pool_job *job, const char *out,
		int (*write_map)(FILE *f, const struct rb_pool_result *res, void *ctx), void *ctx,
		const struct cli_rebuild_show *show)
{
	struct rb_pool_result res;
	struct cli_progress prog = {0}; /* ended on every path, begun or not */
	int status;

	cli_progress_begin(&prog, show->progress_bytes, show->progress_what);
	if (show->verbose) {
		job->note = note_verbose;
	} else if (prog.on) {
		job->note = note_progress;
		job->note_ctx = &prog;
	}
	status = rebuild_files(job, out, write_map, ctx, &res);
	cli_progress_end(&prog);
	if (status)
		return status;
	rebuild_report(&res, out, show->absent, show->best_effort);
	rb_pool_result_free(&res);
	return CLI_OK;
}
