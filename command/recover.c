/*
 * command/recover.c - `xfdr recover FILE`: a valid trace from the files of a file-backed
 * pool (XFDR_OPTIONS backing=file) whose process died without flushing (SIGKILL, OOM kill,
 * power loss of a process that is not the machine).
 *
 * The runtime keeps three files current while it records:
 *   FILE       "<base>-live.xray": a version 1 header (cycle_frequency may still be 0), then
 *              the pool's buffers at 32 + i * buffer_size, not terminated (after a buffer's
 *              used bytes: zeros, or stale bytes of its earlier use)
 *   FILE.pool  the "XFDRPOOL" locator and the buffer descriptors (format.h)
 *   FILE.map   the sidecar, naming FILE in its `trace` line
 * Reading FILE and FILE.pool is rebuild/live_files.c's, the rebuild rebuild/pool_image.c's:
 * here are the options, the sidecar and the messages. Without FILE.pool every buffer is
 * walked up to its first invalid record (best effort, said on stderr). The output OUT gets
 * OUT.map: FILE.map with its `trace` line naming OUT (and the rate and buffer count of OUT),
 * so `xfdr convert OUT` names functions; the lines the reader's .map parser would refuse are
 * left out of it, each said on stderr.
 *
 * Exit status, as for every verb: 0 OUT written; 1 FILE or FILE.pool malformed (one line naming
 * the file and the offset), an OUT or OUT.map that is not a regular file (or a link to one),
 * or a write error; 2 a usage error, an input that cannot be opened (FILE, or FILE.pool or
 * FILE.map when present: missing, permission denied, not a regular file), or an OUT that
 * exists without --force or is one of the inputs. Nothing is written unless the status is 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "rebuild/live_files.h"
#include "rebuild/salvage.h"

#define LIVE_SUFFIX "-live.xray"
#define RECOVERED_SUFFIX "-recovered.xray"

static const char recover_head[] =
    "usage: xfdr recover [-o OUT] [--force] [-v] FILE\n"
    "       xfdr recover --salvage [-o OUT] [--force] [-v] FILE\n"
    "\n"
    "Rebuild a valid trace from the live files of a process that recorded with\n"
    "XFDR_OPTIONS backing=file and died without flushing (killed, out of memory).\n"
    "FILE is its \"<base>-live.xray\"; FILE.pool (the pool's buffer descriptors) and\n"
    "FILE.map are read when present. Buffers that held events are kept in the order\n"
    "their threads claimed them; a buffer that was being written is closed at its\n"
    "last complete record, a torn tail is cut, never-used buffers are dropped.\n"
    "Without FILE.pool each buffer is kept up to its first invalid record: a best\n"
    "effort. What was kept and dropped is printed on stderr.\n"
    "\n"
    "With --salvage (implied when FILE ends in .part), FILE is a trace file cut\n"
    "short, as a flush that did not finish leaves NAME.xray.part: OUT gets its\n"
    "header and every whole buffer that is valid; the partial buffer at the end and\n"
    "invalid buffers are left out and said, with their offsets. OUT.map is\n"
    "NAME.xray.map (FILE.map) naming OUT, or made from the header.\n";

static const char recover_tail[] =
    "Exit status (nothing is written unless 0): 0 OUT written, 1 FILE or FILE.pool\n"
    "malformed, OUT not a regular file, or a write error,\n"
    "2 usage error, FILE missing or unreadable, or OUT\n"
    "exists (--force replaces it).\n";

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_recover_opts(int argc, char **argv, struct cli_rebuild_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write OUT (default: FILE with -live.xray replaced by\n"
			   "-recovered.xray, else FILE.recovered.xray; --salvage:\n"
			   "FILE less .part with .xray replaced by -salvaged.xray)\n"
			   "and OUT.map"),
	    CLI_OPT_FLAG(0, "salvage", &o->salvage, 1,
			 "keep the whole buffers of a cut trace file (see above)"),
	    CLI_OPT_FLAG('f', "force", &o->force, 1,
			 "replace OUT and OUT.map if they exist (regular files only)"),
	    CLI_OPT_FLAG('v', "verbose", &o->verbose, 1,
			 "one line per buffer on stderr: what became of it and why"),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = recover_head,
	    .tail = recover_tail,
	    .column = 20,
	    .operand = "FILE",
	    .options = options,
	};

	memset(o, 0, sizeof(*o));
	return cli_rebuild_opts_parse(&cmd, argc, argv, o);
}

/* ---- The inputs ------------------------------------------------------------------------- */

/*
 * Open path for reading, as cli_open_input(). Returns 0; -1 when it does not exist and
 * may_miss; else reports "xfdr recover: PATH: <reason>" and returns CLI_USAGE.
 */
static int file_open(struct rb_file *f, const char *path, int may_miss)
{
	f->name = path;
	return cli_open_input(path, may_miss, &f->fd, &f->bytes);
}

static void file_close(struct rb_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* The live file's header (rb_live_header_read()). Returns 0, or reports and returns CLI_FAIL. */
static int read_live_header(const struct rb_file *live, struct xfdr_header *h)
{
	struct xfdr_error err;

	if (rb_live_header_read(live, h, &err)) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	return 0;
}

/* ---- The sidecar of OUT ----------------------------------------------------------------- */

struct map_ctx {
	const char *live_map; /* NULL: none, generate one */
	FILE *in;	      /* live_map, opened with the other inputs */
	const char *out;
	const char *out_map;
	struct cli_map_facts facts;
	uint64_t tsc_hz;    /* live_map's, 0: none */
	char hz_method[64]; /* how live_map says the rate was found, "": not said */
	uint64_t *skip;	    /* the lines of live_map OUT.map leaves out, ascending */
	size_t skip_count, skip_cap;
	int no_memory;
};

/* A line OUT.map leaves out: said on stderr, and remembered. */
static void note_left_out(void *ctx, uint64_t line, const char *text)
{
	struct map_ctx *m = ctx;

	cli_error("%s; left out of %s", text, m->out_map);
	if (m->skip_count == m->skip_cap) {
		size_t cap = m->skip_cap ? m->skip_cap * 2 : 16;
		uint64_t *v = realloc(m->skip, cap * sizeof(*v));

		if (!v) {
			m->no_memory = 1;
			return;
		}
		m->skip = v;
		m->skip_cap = cap;
	}
	m->skip[m->skip_count++] = line;
}

/*
 * The live sidecar, read by the reader's own parser (reader/names.c), leniently: the lines
 * it would refuse (a malformed `function`, `frame` or `crash` line, an id named twice, ...) are
 * left out of OUT.map and named on stderr, so that every verb reads the OUT.map recover writes.
 * Also its rate, for a trace that does not hold one, and how it was found (written again
 * after the rate in OUT.map). Returns 0, or reports and returns CLI_FAIL.
 */
static int load_live_map(struct map_ctx *m)
{
	struct xfdr_names *n;
	struct xfdr_error err;

	rewind(m->in);
	if (xfdr_names_read_lenient(m->in, m->live_map, note_left_out, m, &n, &err)) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	if (!xfdr_names_tsc_hz(n, &m->tsc_hz))
		m->tsc_hz = 0;
	snprintf(m->hz_method, sizeof(m->hz_method), "%s",
		 xfdr_names_tsc_hz_method(n) ? xfdr_names_tsc_hz_method(n) : "");
	xfdr_names_free(n);
	if (m->no_memory) {
		cli_error("%s: %s", m->live_map, strerror(ENOMEM));
		return CLI_FAIL;
	}
	return 0;
}

/* Is the line's key (up to the first TAB) `key`? */
static int has_key(const char *line, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(line, key, n) && (line[n] == '\t' || line[n] == '\n' || !line[n]);
}

/* `trace` naming OUT, then the rate of OUT's header and how it was found, when known. */
static void write_trace_and_rate(FILE *f, const struct map_ctx *m, const struct rb_pool_result *res,
				 const char *method)
{
	fputs("trace\t", f);
	cli_map_value(f, m->out);
	fputc('\n', f);
	if (!res->tsc_hz)
		return;
	fprintf(f, "tsc_hz\t%llu\n", (unsigned long long)res->tsc_hz);
	if (res->hz_estimated)
		method = "estimated";
	else if (res->hz_assumed)
		method = "assumed-1GHz";
	if (method[0])
		fprintf(f, "tsc_hz_method\t%s\n", method);
}

/*
 * FILE.map's lines as they are, but: one `trace` line naming OUT (where the first was, or
 * after xfdr-map/pid/program when there was none) with `tsc_hz`, the rate of OUT's header, and
 * its method (estimated or assumed when it was, else the live map's) right after it;
 * `buffers_written` the buffers kept; and without the lines load_live_map() left out.
 */
static int write_recovered_map(FILE *f, const struct rb_pool_result *res, void *ctx)
{
	struct map_ctx *m = ctx;
	char *line = NULL;
	size_t cap = 0, lineno = 0, k = 0;
	ssize_t n;
	int traced = 0;
	FILE *in;

	if (!m->live_map)
		return cli_map_generated(f, &m->facts, res);
	in = m->in;
	rewind(in);
	while ((n = getline(&line, &cap, in)) > 0) {
		/* Numbered as the reader numbers them: getline() lines, from 1. */
		if (k < m->skip_count && m->skip[k] == ++lineno) {
			k++;
			continue;
		}
		if (line[n - 1] != '\n') {
			/* The last line without its newline: give it one. */
			char *l = realloc(line, (size_t)n + 2);

			if (!l) {
				cli_error("%s: %s", m->live_map, strerror(ENOMEM));
				free(line);
				return CLI_FAIL;
			}
			line = l;
			cap = (size_t)n + 2;
			line[n++] = '\n';
			line[n] = '\0';
		}
		if (!traced && !has_key(line, "xfdr-map") && !has_key(line, "pid") &&
		    !has_key(line, "program")) {
			write_trace_and_rate(f, m, res, m->hz_method);
			traced = 1;
		}
		if (has_key(line, "trace") || has_key(line, "tsc_hz") ||
		    has_key(line, "tsc_hz_method"))
			continue;
		if (has_key(line, "buffers_written"))
			fprintf(f, "buffers_written\t%llu\n", (unsigned long long)res->kept);
		else
			/* All n bytes: fputs() would stop at a NUL and join the next line on. */
			fwrite(line, 1, (size_t)n, f);
	}
	if (ferror(in)) {
		cli_error("%s: read error: %s", m->live_map, strerror(errno));
		free(line);
		return CLI_FAIL;
	}
	free(line);
	if (!traced)
		write_trace_and_rate(f, m, res, m->hz_method);
	return 0;
}

/* ---- The verb ----------------------------------------------------------------------------- */

/* FILE with -live.xray replaced by -recovered.xray, else FILE.recovered.xray. */
static int default_output(const char *input, char *buf, size_t n)
{
	size_t len = strlen(input), sl = strlen(LIVE_SUFFIX);
	int w;

	if (len > sl && !strcmp(input + len - sl, LIVE_SUFFIX))
		w = snprintf(buf, n, "%.*s%s", (int)(len - sl), input, RECOVERED_SUFFIX);
	else
		w = snprintf(buf, n, "%s.recovered.xray", input);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* ---- --salvage: the whole buffers of a cut trace file ------------------------------------ */

#define PART_SUFFIX ".part"
#define XRAY_SUFFIX ".xray"
#define SALVAGED_SUFFIX "-salvaged.xray"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

/* FILE less ".part", with ".xray" replaced by "-salvaged.xray", else + ".salvaged.xray". */
static int salvage_output(const char *input, char *buf, size_t n)
{
	size_t len = strlen(input);
	int w;

	if (ends_with(input, PART_SUFFIX))
		len -= strlen(PART_SUFFIX);
	if (len > strlen(XRAY_SUFFIX) &&
	    !strncmp(input + len - strlen(XRAY_SUFFIX), XRAY_SUFFIX, strlen(XRAY_SUFFIX)))
		w = snprintf(buf, n, "%.*s%s", (int)(len - strlen(XRAY_SUFFIX)), input,
			     SALVAGED_SUFFIX);
	else
		w = snprintf(buf, n, "%.*s.salvaged.xray", (int)len, input);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

struct salvage {
	const struct rb_file *in;
	struct rb_salvage_plan plan;
	uint64_t kept;
	int verbose;
};

/* What became of a buffer (kept: only with -v), on stderr. */
static void say_salvaged(void *ctx, const struct rb_salvage_note *n)
{
	const struct salvage *sv = ctx;
	const char *in = sv->in->name;

	if (n->fate == RB_SALVAGE_KEPT && sv->verbose)
		cli_error("%s: offset %llu: buffer %llu kept", in, (unsigned long long)n->at,
			  (unsigned long long)n->first);
	else if (n->fate == RB_SALVAGE_HOLE && n->first == n->last)
		cli_error("%s: offset %llu: buffer %llu left out (a hole: never written)", in,
			  (unsigned long long)n->at, (unsigned long long)n->first);
	else if (n->fate == RB_SALVAGE_HOLE)
		cli_error("%s: offset %llu: buffers %llu to %llu left out (a hole: never written)",
			  in, (unsigned long long)n->at, (unsigned long long)n->first,
			  (unsigned long long)n->last);
	else if (n->fate == RB_SALVAGE_INVALID)
		cli_error("%s: offset %llu: buffer %llu left out (invalid)%s", in,
			  (unsigned long long)n->at, (unsigned long long)n->first, n->why);
}

/* The header, then each whole buffer valid on its own (rb_salvage()), said on stderr. */
static int write_salvaged(int fd, const char *out, struct rb_pool_result *res, void *ctx)
{
	struct salvage *sv = ctx;
	struct xfdr_error err;
	int64_t kept;

	kept = rb_salvage(sv->in, &sv->plan, fd, out, say_salvaged, sv, &err);
	if (kept < 0) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	sv->kept = (uint64_t)kept;
	res->buffers = sv->plan.whole;
	res->kept = res->count[RB_POOL_KEPT] = sv->kept;
	return 0;
}

/* What a salvage kept and left out of input (whole buffers, the partial one), on stderr. */
static void salvage_report(const char *input, const struct salvage *sv)
{
	uint64_t whole = sv->plan.whole, bs = sv->plan.buffer_size, tail = sv->plan.tail;

	cli_error("%s: kept %llu of %llu whole buffer%s", input, (unsigned long long)sv->kept,
		  (unsigned long long)whole, whole == 1 ? "" : "s");
	if (sv->kept < whole)
		cli_error("%s: left out %llu invalid buffer%s (%llu bytes)", input,
			  (unsigned long long)(whole - sv->kept), whole - sv->kept == 1 ? "" : "s",
			  (unsigned long long)((whole - sv->kept) * bs));
	if (tail)
		cli_error("%s: offset %llu: discarded %llu bytes, a partial buffer (%llu of %llu "
			  "bytes)",
			  input, (unsigned long long)(XFDR_FILE_HEADER_BYTES + whole * bs),
			  (unsigned long long)tail, (unsigned long long)tail,
			  (unsigned long long)bs);
	else
		cli_error("%s: no partial buffer at the end", input);
}

/*
 * The rebuild of the live file (its header h): by the pool's locator when pool (FILE.pool,
 * at pool_path) is open, else the best effort, said on stderr. Returns 0, or -1 after
 * reporting a bad FILE.pool.
 */
static int pool_job(struct rb_pool_job *job, struct rb_pool_locator *loc, struct rb_file *live,
		    struct rb_file *pool, const char *pool_path, const struct xfdr_header *h)
{
	struct xfdr_error err;

	if (!pool)
		cli_error("%s: not found: best-effort recovery, each buffer walked up to its first "
			  "invalid record (stale bytes of a reused buffer may be kept)",
			  pool_path);
	else if (rb_live_locator_read(pool, h, live->name, loc, &err)) {
		fprintf(stderr, "%s\n", err.text);
		return -1;
	} else if (!(loc->flags & XFDR_POOL_FILE_BACKED))
		cli_error("%s: warning: the locator is not marked file-backed; going on",
			  pool->name);
	rb_live_pool_job(job, live, pool, loc, h);
	return 0;
}

/*
 * recover --salvage (and any FILE.part): FILE is a version 1 trace cut short, as a flush that
 * did not finish leaves NAME.xray.part. OUT gets the header and the whole valid buffers; what
 * was left out is said with its offset. The sidecar is NAME.xray.map (FILE.map for a FILE
 * without .part) with its trace line naming OUT, else one made from the header.
 */
static int salvage(const struct cli_rebuild_opts *opt)
{
	struct rb_file in = {-1, NULL, 0};
	struct map_ctx mctx;
	struct xfdr_header h;
	struct salvage sv;
	struct rb_pool_result res;
	char out_buf[4096], out_map[4096], map_path[4096];
	const char *out = opt->output;
	size_t base_len = strlen(opt->input);
	int status, rc;

	memset(&mctx, 0, sizeof(mctx));
	memset(&res, 0, sizeof(res));
	if (ends_with(opt->input, PART_SUFFIX))
		base_len -= strlen(PART_SUFFIX);
	if ((size_t)snprintf(map_path, sizeof(map_path), "%.*s.map", (int)base_len, opt->input) >=
	    sizeof(map_path)) {
		cli_error("%s: %s", opt->input, strerror(ENAMETOOLONG));
		return CLI_USAGE;
	}
	if (!out) {
		if (salvage_output(opt->input, out_buf, sizeof(out_buf))) {
			cli_error("%s: %s", opt->input, strerror(ENAMETOOLONG));
			return CLI_FAIL;
		}
		out = out_buf;
	}
	if (cli_map_name(out, out_map, sizeof(out_map)))
		return CLI_FAIL;
	status = file_open(&in, opt->input, 0);
	if (status)
		return status;
	rc = access(map_path, F_OK) == 0 ? 0 : -1;
	if (rc == 0) {
		mctx.in = fopen(map_path, "r");
		if (!mctx.in) {
			cli_error("%s: %s", map_path, strerror(errno));
			status = CLI_USAGE;
			goto out;
		}
		mctx.live_map = map_path;
	}
	status = cli_check_rebuild_outputs(
	    out, out_map, (const char *[]){opt->input, mctx.in ? map_path : NULL, NULL},
	    "an input file", opt->force);
	if (status)
		goto out;
	status = CLI_FAIL;
	if (read_live_header(&in, &h))
		goto out;
	memset(&sv, 0, sizeof(sv));
	sv.in = &in;
	sv.plan = rb_salvage_plan(&in, &h);
	sv.verbose = opt->verbose;
	mctx.out = out;
	mctx.out_map = out_map;
	if (mctx.in && load_live_map(&mctx))
		goto out;
	res.tsc_hz = h.cycle_frequency;
	if (!res.tsc_hz)
		res.tsc_hz = mctx.tsc_hz;
	mctx.facts = (struct cli_map_facts){
	    .pid = 0,
	    .trace = out,
	    .constant_tsc = h.constant_tsc,
	    .nonstop_tsc = h.nonstop_tsc,
	    .buffer_bytes = h.buffer_size,
	    .buffer_count = sv.plan.whole,
	};
	status =
	    cli_write_trace_and_map(out, write_salvaged, &sv, write_recovered_map, &mctx, &res);
	if (status)
		goto out;
	salvage_report(opt->input, &sv);
	cli_error("wrote %s", out);
out:
	if (mctx.in)
		fclose(mctx.in);
	free(mctx.skip);
	file_close(&in);
	return status;
}

/*
 * Open the live file, and FILE.pool and FILE.map when they exist (the map as mctx->in). Every
 * input is opened first: one that cannot be is a 2, whatever the others hold. Returns 0, or a
 * status after reporting; what was opened is closed by the caller.
 */
static int open_inputs(struct rb_file *live, const char *input, struct rb_file *pool,
		       const char *pool_path, struct map_ctx *mctx, const char *map_path)
{
	struct rb_file map = {-1, NULL, 0};
	int rc;

	rc = file_open(live, input, 0);
	if (rc)
		return rc;
	rc = file_open(pool, pool_path, 1);
	if (rc > 0)
		return rc;
	rc = file_open(&map, map_path, 1);
	if (rc > 0)
		return rc;
	if (rc < 0)
		return 0;
	mctx->in = fdopen(map.fd, "r");
	if (!mctx->in) {
		cli_error("%s: %s", map_path, strerror(errno));
		file_close(&map);
		return CLI_FAIL;
	}
	mctx->live_map = map_path;
	return 0;
}

int cmd_recover(int argc, char **argv)
{
	struct cli_rebuild_opts opt;
	struct rb_file live = {-1, NULL, 0}, pool = {-1, NULL, 0};
	struct rb_pool_locator loc;
	struct rb_pool_job job;
	struct cli_rebuild_show show;
	struct map_ctx mctx;
	struct xfdr_header h;
	char pool_path[4096], map_path[4096], out_buf[4096], out_map[4096];
	const char *out;
	int status, have_pool;

	memset(&mctx, 0, sizeof(mctx));
	status = parse_recover_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	if (opt.salvage || ends_with(opt.input, PART_SUFFIX))
		return salvage(&opt);
	/* FILE.pool and FILE.map are inputs too: a name too long to open them is unreadable. */
	if ((size_t)snprintf(pool_path, sizeof(pool_path), "%s.pool", opt.input) >=
		sizeof(pool_path) ||
	    (size_t)snprintf(map_path, sizeof(map_path), "%s.map", opt.input) >= sizeof(map_path)) {
		cli_error("%s: %s", opt.input, strerror(ENAMETOOLONG));
		return CLI_USAGE;
	}
	out = opt.output;
	if (!out) {
		if (default_output(opt.input, out_buf, sizeof(out_buf))) {
			cli_error("%s: %s", opt.input, strerror(ENAMETOOLONG));
			return CLI_FAIL;
		}
		out = out_buf;
	}
	if (cli_map_name(out, out_map, sizeof(out_map)))
		return CLI_FAIL;

	status = open_inputs(&live, opt.input, &pool, pool_path, &mctx, map_path);
	if (status)
		goto out;
	have_pool = pool.fd >= 0;
	status = cli_check_rebuild_outputs(out, out_map,
					   (const char *[]){opt.input, pool_path, map_path, NULL},
					   "an input file", opt.force);
	if (status)
		goto out;
	status = CLI_FAIL;
	if (read_live_header(&live, &h))
		goto out;

	if (pool_job(&job, &loc, &live, have_pool ? &pool : NULL, pool_path, &h))
		goto out;
	mctx.out = out;
	mctx.out_map = out_map;
	if (mctx.in && load_live_map(&mctx))
		goto out;
	if (!job.tsc_hz)
		job.tsc_hz = h.cycle_frequency;
	if (!job.tsc_hz)
		job.tsc_hz = mctx.tsc_hz;
	mctx.facts = (struct cli_map_facts){
	    .pid = have_pool ? loc.pid : 0,
	    .trace = out,
	    .constant_tsc = job.constant_tsc,
	    .nonstop_tsc = job.nonstop_tsc,
	    .buffer_bytes = h.buffer_size,
	    .buffer_count = have_pool ? loc.buffer_count : job.buffer_count,
	};

	show = (struct cli_rebuild_show){
	    .verbose = opt.verbose,
	    .progress_bytes = live.bytes,
	    .progress_what = "recovering",
	    .absent = "missing from the live file (it is shorter than the pool)",
	    .best_effort = !have_pool,
	};
	status = cli_rebuild(&job, out, write_recovered_map, &mctx, &show);
out:
	if (mctx.in)
		fclose(mctx.in);
	free(mctx.skip);
	file_close(&live);
	file_close(&pool);
	return status;
}
