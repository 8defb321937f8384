/*
 * command/core.c - `xfdr core CORE`: a valid trace from the xfdr pool inside a core dump
 * (the kernel's, or gdb's gcore) of a process that was recording.
 *
 * The core's memory and the search for pools are rebuild/core_image.c's, the rebuild
 * rebuild/pool_image.c's: here are the options, the choice among pools and the messages. A
 * process that re-initialised may leave an older pool: the highest session wins, and the
 * choice is said on stderr.
 *
 * Exit status, as for every verb: 0 OUT written; 1 CORE is no ELF64 core or holds no pool
 * (one line naming the file, and the offset when it is malformed), an OUT or OUT.map that is
 * not a regular file (or a link to one), or a write error; 2 a usage error, a CORE that cannot
 * be opened (missing, permission denied, not a regular file), or an OUT that exists without
 * --force or is the core. Nothing is written unless the status is 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "rebuild/core_image.h"
#include "rebuild/core_names.h"

static const char core_head[] =
    "usage: xfdr core [-o OUT] [--force] [-v] CORE\n"
    "\n"
    "Rebuild a valid trace from a core dump (the kernel's, or gdb's gcore) of a\n"
    "process that was recording with xfdr: the pool's locator is found in the dumped\n"
    "memory, and the buffers that held events are kept in the order their threads\n"
    "claimed them; a buffer that was being written is closed at its last complete\n"
    "record, a torn tail is cut, never-used buffers are dropped. What was kept and\n"
    "dropped is printed on stderr. A file-backed pool (backing=file) is not in a core\n"
    "by default (/proc/PID/coredump_filter): `xfdr recover` reads its live files.\n";

static const char core_tail[] =
    "Exit status (nothing is written unless 0): 0 OUT written, 1 not an ELF64 core,\n"
    "no xfdr pool in it, OUT not a regular file, or a write error, 2 usage error,\n"
    "CORE missing or unreadable, or OUT exists (--force replaces it).\n";

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_core_opts(int argc, char **argv, struct cli_rebuild_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write OUT (default: CORE.xray) and OUT.map"),
	    CLI_OPT_FLAG('f', "force", &o->force, 1,
			 "replace OUT and OUT.map if they exist (regular files only)"),
	    CLI_OPT_FLAG('v', "verbose", &o->verbose, 1,
			 "one line per pool found and per buffer on stderr"),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = core_head,
	    .tail = core_tail,
	    .column = 20,
	    .operand = "CORE",
	    .options = options,
	};

	memset(o, 0, sizeof(*o));
	return cli_rebuild_opts_parse(&cmd, argc, argv, o);
}

/* ---- The verb ----------------------------------------------------------------------------- */

struct core_map_ctx {
	struct cli_map_facts facts;
	struct rb_core_names names;
	struct rb_core_symbols *symbols; /* NULL: the functions are not listed */
	uint64_t unnamed;		 /* functions listed without a symbol */
};

static const char *core_thread_name(void *ctx, uint32_t tid, uint32_t thread_id)
{
	const struct rb_core_thread *t = rb_core_names_thread(ctx, tid, thread_id);

	return t ? t->name : NULL;
}

/*
 * The "functions" group of each id space and its "function" lines (doc/map-format.md), named
 * from the core's files when they could be read.
 */
static void write_core_functions(FILE *f, struct core_map_ctx *m)
{
	struct rb_core_symbol sym;
	size_t i, k;

	m->unnamed = 0;
	for (i = 0; i < m->names.nsources; i++) {
		const struct rb_core_source *src = &m->names.sources[i];

		if (!src->nfn)
			continue;
		fprintf(f, "functions\t");
		cli_map_value(f, src->name);
		fprintf(f, "\t%u\n", src->count);
		for (k = 0; k < src->nfn; k++) {
			memset(&sym, 0, sizeof(sym));
			if (m->symbols)
				rb_core_symbol(m->symbols, src->fn[k].addr, &sym);
			m->unnamed += !sym.name;
			fprintf(f, "function\t%u\t", src->fn[k].id);
			cli_map_value(f, sym.name ? sym.name : "<unknown>");
			fprintf(f, "\t0x%llx\t", (unsigned long long)src->fn[k].addr);
			cli_map_value(f, sym.module ? sym.module : "-");
			if (sym.vaddr_known)
				fprintf(f, "\t0x%llx\n", (unsigned long long)sym.module_vaddr);
			else
				fprintf(f, "\t-\n");
		}
	}
	if (m->unnamed)
		fprintf(f, "functions_unnamed\t%llu\n", (unsigned long long)m->unnamed);
}

static int write_core_map(FILE *f, const struct rb_pool_result *res, void *ctx)
{
	struct core_map_ctx *m = ctx;
	int rc = cli_map_generated(f, &m->facts, res);

	if (!rc)
		write_core_functions(f, m);
	return rc;
}

/*
 * The names of pool's session into m (threads, and functions when the core's files can be
 * read), one line on stderr for what is missing. Returns 0, or -1 after an error message.
 */
static int read_names(struct rb_core *c, const struct rb_core_pool *pool, struct core_map_ctx *m)
{
	struct xfdr_error err;
	size_t i, fns = 0;

	if (rb_core_names_read(c, pool, &m->names, &err)) {
		cli_error("%s: %s", c->name, err.text);
		return -1;
	}
	if (m->names.missing) {
		cli_error("%s: no names of threads or functions: %s", c->name, m->names.missing);
		return 0;
	}
	m->facts.thread_name = core_thread_name;
	m->facts.names_ctx = &m->names;
	for (i = 0; i < m->names.nsources; i++)
		fns += m->names.sources[i].nfn;
	if (fns && rb_core_symbols_open(c, &m->symbols, &err))
		cli_error("%s: its functions are listed without names", err.text);
	return 0;
}

/* After the map is written: say how many functions got no name, and the likely reason. */
static void tell_unnamed(const struct rb_core *c, const struct core_map_ctx *m)
{
	size_t found = 0, missing = 0;

	if (!m->unnamed || !m->symbols)
		return;
	rb_core_symbols_files(m->symbols, &found, &missing);
	cli_error("%s: %llu functions have no name (%zu of the %zu files it had mapped are not on "
		  "this disk, or have no symbols for them)",
		  c->name, (unsigned long long)m->unnamed, missing, found + missing);
}

static void say_rejected(void *ctx, uint64_t addr, const char *why)
{
	(void)ctx;
	cli_error("\"XFDRPOOL\" at 0x%llx is not a pool: %s", (unsigned long long)addr, why);
}

static void say_found(void *ctx, const struct rb_core_pool *p)
{
	(void)ctx;
	cli_error("pool at 0x%llx: session %u, pid %llu, %u buffers of %llu bytes at 0x%llx",
		  (unsigned long long)p->addr, p->loc.session, (unsigned long long)p->loc.pid,
		  p->loc.buffer_count, (unsigned long long)p->loc.buffer_bytes,
		  (unsigned long long)p->loc.buffers_addr);
}

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress_update(ctx, done, total);
}

/*
 * Search the core for pools into *pools; the newest found (by session), or NULL after
 * reporting that there is none or that the search failed.
 */
static const struct rb_core_pool *find_pool(const struct rb_core *c, struct rb_core_pools *pools,
					    int verbose)
{
	const struct rb_core_pool *use;
	struct cli_progress prog = {0}; /* ended on every path, begun or not */
	struct xfdr_error err;
	struct rb_core_search_hooks hooks = {.progress = show_progress, .ctx = &prog};
	int rc;

	if (verbose) {
		hooks.rejected = say_rejected;
		hooks.found = say_found;
	}
	cli_progress_begin(&prog, c->dumped_bytes, "searching");
	rc = rb_core_find_pools(c, &hooks, pools, &err);
	cli_progress_end(&prog);
	if (rc) {
		fprintf(stderr, "%s\n", err.text);
		return NULL;
	}
	use = rb_core_newest_pool(pools);
	if (!use && pools->rejected)
		cli_error("%s: no xfdr pool in this core: was the process running xfdr? (%llu "
			  "\"XFDRPOOL\" at a page start did not validate, the first %s)",
			  c->name, (unsigned long long)pools->rejected, pools->first_reject);
	else if (!use)
		cli_error("%s: no xfdr pool in this core: was the process running xfdr? "
			  "(with backing=file, `xfdr recover` reads the live file)",
			  c->name);
	else if (pools->n > 1)
		cli_error("%zu xfdr pools in this core (the process re-initialised?): using the "
			  "newest, session %u at 0x%llx",
			  pools->n, use->loc.session, (unsigned long long)use->addr);
	return use;
}

/* Rebuild the pool use of core c into out and its sidecar. Returns a status. */
static int rebuild_pool(struct rb_core *c, const struct rb_core_pool *use, const char *out,
			int verbose)
{
	struct rb_pool_job job;
	struct cli_rebuild_show show;
	struct core_map_ctx mctx = {0};
	char absent[256];
	int status;

	rb_core_pool_job(c, use, &job);
	mctx.facts = (struct cli_map_facts){
	    .pid = use->loc.pid,
	    .trace = out,
	    .constant_tsc = job.constant_tsc,
	    .nonstop_tsc = job.nonstop_tsc,
	    .buffer_bytes = use->loc.buffer_bytes,
	    .buffer_count = use->loc.buffer_count,
	};
	snprintf(absent, sizeof(absent), "not in the core (memory not dumped%s)",
		 use->loc.flags & XFDR_POOL_FILE_BACKED
		     ? "; the pool is file-backed: `xfdr recover` reads its live file"
		     : "");

	show = (struct cli_rebuild_show){
	    .verbose = verbose,
	    .progress_bytes = c->dumped_bytes,
	    .progress_what = "rebuilding",
	    .absent = absent,
	};
	if (read_names(c, use, &mctx))
		return CLI_FAIL;
	status = cli_rebuild(&job, out, write_core_map, &mctx, &show);
	if (status == CLI_OK)
		tell_unnamed(c, &mctx);
	rb_core_symbols_close(mctx.symbols);
	rb_core_names_free(&mctx.names);
	return status;
}

/* Open CORE as cli_open_input() does (its statuses), then read it as a core. */
static int open_core(struct rb_core *c, const char *path)
{
	struct xfdr_error err;
	uint64_t bytes;
	int fd, rc;

	rc = cli_open_input(path, 0, &fd, &bytes);
	if (rc)
		return rc;
	if (rb_core_open(c, fd, bytes, path, &err)) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	return 0;
}

int cmd_core(int argc, char **argv)
{
	struct cli_rebuild_opts opt = {0};
	struct rb_core c = {.fd = -1};
	struct rb_core_pools pools = {0};
	const struct rb_core_pool *use;
	char out_buf[4096], out_map[4096];
	const char *out;
	int status;

	status = parse_core_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	out = opt.output;
	if (!out) {
		if ((size_t)snprintf(out_buf, sizeof(out_buf), "%s.xray", opt.input) >=
		    sizeof(out_buf)) {
			cli_error("%s: %s", opt.input, strerror(ENAMETOOLONG));
			return CLI_FAIL;
		}
		out = out_buf;
	}
	if (cli_map_name(out, out_map, sizeof(out_map)))
		return CLI_FAIL;

	status = open_core(&c, opt.input);
	if (status)
		goto out;
	status = cli_check_rebuild_outputs(out, out_map, (const char *[]){opt.input, NULL},
					   "the core file", opt.force);
	if (status)
		goto out;
	status = CLI_FAIL;
	if (c.cut_segs)
		cli_error("%s: warning: the file ends inside %zu of its segments (a truncated "
			  "core?); their missing memory reads as absent",
			  c.name, c.cut_segs);

	use = find_pool(&c, &pools, opt.verbose);
	if (use)
		status = rebuild_pool(&c, use, out, opt.verbose);
out:
	rb_core_pools_free(&pools);
	rb_core_close(&c);
	return status;
}
