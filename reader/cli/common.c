/*
 * reader/cli/common.c - messages, input checks, checked output and progress for every verb.
 *
 * Output contract: a verb writes through struct cli_out and ends with cli_out_close(), which
 * is the only place a write error is reported. fwrite() errors are sticky: after the first one
 * nothing more is attempted, so a full disk costs one failed write, not millions.
 *
 * Rebuilt traces (recover, core): their common options, and the output created under a
 * temporary name and renamed when whole, with its sidecar; the summary of what was kept and
 * dropped is printed here for both.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/cli/cli.h"
#include "reader/lib/pool_image.h"

static const char *cli_verb = "xfdr";

void cli_set_verb(const char *verb)
{
	cli_verb = verb;
}

static void cli_vmsg(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", cli_verb);
	vfprintf(stderr, fmt, ap);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vmsg(fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vmsg(fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try '%s --help')\n", cli_verb);
	return CLI_USAGE;
}

/*
 * getopt_long() runs with a leading ':' in the short options and opterr = 0: it returns ':'
 * for a missing argument and '?' for an unknown option. A missing argument is always the end
 * of argv[optind - 1]; an unknown short option sits in optopt (possibly inside a cluster that
 * optind has not left yet), an unknown long one has optopt 0 and is argv[optind - 1].
 */
int cli_bad_option(char **argv, int ret, int opt)
{
	const char *arg = argv[optind - 1];

	if (ret == ':')
		return cli_usage("option '%s' needs an argument", arg);
	if (opt > 0 && opt < 128)
		return cli_usage("unknown option '-%c'", opt);
	return cli_usage("unknown or ambiguous option '%s'", arg);
}

int cli_one_operand(int argc, char **argv, const char *what, const char **operand)
{
	if (optind == argc)
		return cli_usage("missing %s", what);
	if (argc - optind > 1)
		return cli_usage("one %s at a time; extra operand '%s'", what, argv[optind + 1]);
	*operand = argv[optind];
	return 0;
}

void cli_guard_std_fds(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* open() returns the lowest free descriptor, which is fd. */
		if (open("/dev/null", O_RDONLY) != fd)
			abort();
	}
}

int cli_open_input(const char *path, int may_miss, int *fd, uint64_t *bytes)
{
	struct stat st;

	*fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (*fd < 0) {
		if (may_miss && errno == ENOENT)
			return -1;
		cli_error("%s: %s", path, strerror(errno));
		return CLI_USAGE;
	}
	if (fstat(*fd, &st) != 0) {
		cli_error("%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_error("%s: %s", path,
			  S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
		goto fail;
	}
	*bytes = (uint64_t)st.st_size;
	return 0;
fail:
	close(*fd);
	*fd = -1;
	return CLI_USAGE;
}

int cli_check_input(const char *path)
{
	uint64_t bytes;
	int fd, rc;

	rc = cli_open_input(path, 0, &fd, &bytes);
	if (rc)
		return rc;
	close(fd);
	return 0;
}

int cli_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* ---- The .map sidecar ---------------------------------------------------------------------- */

const char *cli_sidecar(const char *input, const char *map, char *buf, size_t n)
{
	if (map)
		return map;
	if ((size_t)snprintf(buf, n, "%s.map", input) >= n || access(buf, F_OK) != 0)
		return NULL;
	return buf;
}

int cli_names_load(const char *path, struct xfdr_names **out)
{
	struct xfdr_error err;
	int rc;

	*out = NULL;
	if (!path)
		return 0;
	rc = xfdr_names_load(path, out, &err);
	if (!rc)
		return 0;
	cli_error("%s", err.text);
	/* A missing map is an unreadable input (2), a bad one a failure (1). */
	return rc == -1 ? CLI_USAGE : CLI_FAIL;
}

/* ---- Checked output ---------------------------------------------------------------------- */

int cli_out_open(struct cli_out *o, const char *path)
{
	o->len = 0;
	o->err = 0;
	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		o->name = "standard output";
		o->is_stdout = 1;
		return 0;
	}
	o->is_stdout = 0;
	o->name = path;
	o->f = fopen(path, "w");
	if (!o->f) {
		cli_error("%s: cannot create: %s", path, strerror(errno));
		return CLI_FAIL;
	}
	return 0;
}

void cli_out_flush(struct cli_out *o)
{
	if (o->len && !o->err) {
		if (fwrite(o->buf, 1, o->len, o->f) != o->len)
			o->err = errno ? errno : EIO;
	}
	o->len = 0;
}

void cli_out_put_slow(struct cli_out *o, const void *p, size_t n)
{
	const char *s = p;

	while (n) {
		size_t room = sizeof(o->buf) - o->len;
		size_t k = n < room ? n : room;

		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
		if (o->len == sizeof(o->buf))
			cli_out_flush(o);
	}
}

void cli_put_u64(struct cli_out *o, uint64_t v)
{
	char tmp[20];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	cli_put(o, tmp + i, sizeof(tmp) - i);
}

void cli_printf(struct cli_out *o, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* Callers format bounded fields only; a longer line would be a bug, not data. */
	if ((size_t)n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	cli_put(o, tmp, (size_t)n);
}

int cli_out_close(struct cli_out *o)
{
	int err;

	cli_out_flush(o);
	errno = 0;
	if (fflush(o->f) != 0 && !o->err)
		o->err = errno ? errno : EIO;
	if (ferror(o->f) && !o->err)
		o->err = EIO;
	if (!o->is_stdout) {
		if (fclose(o->f) != 0 && !o->err)
			o->err = errno ? errno : EIO;
	}
	o->f = NULL;
	err = o->err;
	if (err) {
		cli_error("%s: write error: %s", o->name, strerror(err));
		return CLI_FAIL;
	}
	return CLI_OK;
}

/* ---- Progress ---------------------------------------------------------------------------- */

void cli_progress_begin(struct cli_progress *p, uint64_t input_bytes, const char *what)
{
	p->on = input_bytes > CLI_PROGRESS_MIN_BYTES && isatty(STDERR_FILENO);
	p->drawn = 0;
	cli_progress_phase(p, what);
}

/* A phase without a percentage of its own shows its name until the first update. */
void cli_progress_phase(struct cli_progress *p, const char *what)
{
	p->what = what;
	p->last_pct = -1;
	if (!p->on)
		return;
	fprintf(stderr, "\r\033[K%s: %s", cli_verb, what);
	fflush(stderr);
	p->drawn = 1;
}

void cli_progress_update(struct cli_progress *p, uint64_t done, uint64_t total)
{
	int pct;

	if (!p->on || !total)
		return;
	pct = (int)(done >= total ? 100 : done * 100 / total);
	if (pct == p->last_pct)
		return;
	p->last_pct = pct;
	fprintf(stderr, "\r%s: %s %3d%%", cli_verb, p->what, pct);
	fflush(stderr);
	p->drawn = 1;
}

void cli_progress_end(struct cli_progress *p)
{
	if (!p->on || !p->drawn)
		return;
	/* Erase the line so the next message or the shell prompt starts clean. */
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->drawn = 0;
}

/* ---- Rebuilt traces: options and output names ------------------------------------------ */

int cli_rebuild_opts_parse(int argc, char **argv, const char *what, void (*help)(void),
			   struct cli_rebuild_opts *o)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"force", no_argument, NULL, 'f'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"salvage", no_argument, NULL, 'S'}, /* recover's only: allow_salvage */
	    {NULL, 0, NULL, 0},
	};
	int c, allow_salvage = o->allow_salvage;

	memset(o, 0, sizeof(*o));
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":o:fvh", longopts, NULL)) != -1) {
		if (c == 'S' && !allow_salvage)
			c = '?';
		switch (c) {
		case 'S':
			o->salvage = 1;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			help();
			return -1;
		default:
			return cli_bad_option(argv, c, optopt);
		}
	}
	if (cli_one_operand(argc, argv, what, &o->input))
		return CLI_USAGE;
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

/* ---- New files, renamed into place ----------------------------------------------------- */

int cli_new_file_open(struct cli_new_file *f, const char *path)
{
	f->path = path;
	f->fd = -1;
	if ((size_t)snprintf(f->tmp, sizeof(f->tmp), "%s.tmp.XXXXXX", path) >= sizeof(f->tmp)) {
		cli_error("%s: cannot create: %s", path, strerror(ENAMETOOLONG));
		return CLI_FAIL;
	}
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	if (f->fd < 0) {
		cli_error("%s: cannot create: %s", path, strerror(errno));
		return CLI_FAIL;
	}
	/* mkstemp() makes it 0600, the mode the runtime gives traces: they hold what it recorded.
	 */
	return 0;
}

int cli_new_file_commit(struct cli_new_file *f)
{
	int fd = f->fd;

	f->fd = -1;
	if (close(fd) != 0) {
		cli_error("%s: write error: %s", f->path, strerror(errno));
		unlink(f->tmp);
		return CLI_FAIL;
	}
	if (rename(f->tmp, f->path) != 0) {
		cli_error("%s: cannot create: %s", f->path, strerror(errno));
		unlink(f->tmp);
		return CLI_FAIL;
	}
	return 0;
}

void cli_new_file_abort(struct cli_new_file *f)
{
	if (f->fd < 0)
		return;
	close(f->fd);
	f->fd = -1;
	unlink(f->tmp);
}

int cli_refuse_existing(const char *path, int force)
{
	struct stat st;

	if (force || lstat(path, &st) != 0)
		return 0;
	cli_error("%s exists (--force replaces it)", path);
	return CLI_FAIL;
}

int cli_write_all_at(int fd, const void *p, size_t n, uint64_t at)
{
	const uint8_t *b = p;
	ssize_t w;

	while (n) {
		w = pwrite(fd, b, n, (off_t)at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		b += w;
		n -= (size_t)w;
		at += (uint64_t)w;
	}
	return 0;
}

static int write_pool_trace(int fd, const char *out, struct rd_pool_result *res, void *ctx)
{
	struct xfdr_error err;

	if (rd_pool_rebuild(ctx, fd, out, res, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	return 0;
}

static int rebuild_files(const struct rd_pool_job *job, const char *out,
			 int (*write_map)(FILE *f, const struct rd_pool_result *res, void *ctx),
			 void *ctx, struct rd_pool_result *res)
{
	return cli_write_trace_and_map(out, write_pool_trace, (void *)job, write_map, ctx, res);
}

int cli_write_trace_and_map(const char *out,
			    int (*write_trace)(int fd, const char *out, struct rd_pool_result *res,
					       void *ctx),
			    void *trace_ctx,
			    int (*write_map)(FILE *f, const struct rd_pool_result *res, void *ctx),
			    void *ctx, struct rd_pool_result *res)
{
	struct cli_new_file tf, mf;
	char map[4096], *text = NULL;
	size_t len = 0;
	FILE *f;
	int e;

	if ((size_t)snprintf(map, sizeof(map), "%s.map", out) >= sizeof(map)) {
		cli_error("%s.map: cannot create: %s", out, strerror(ENAMETOOLONG));
		return CLI_FAIL;
	}
	if (cli_new_file_open(&tf, out))
		return CLI_FAIL;
	if (write_trace(tf.fd, out, res, trace_ctx)) {
		cli_new_file_abort(&tf);
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
	if (cli_new_file_open(&mf, map))
		goto fail;
	e = cli_write_all_at(mf.fd, text, len, 0);
	if (e) {
		cli_error("%s: write error: %s", map, strerror(e));
		cli_new_file_abort(&mf);
		goto fail;
	}
	if (cli_new_file_commit(&tf)) {
		cli_new_file_abort(&mf);
		goto fail_res;
	}
	if (cli_new_file_commit(&mf))
		goto fail_res;
	free(text);
	return CLI_OK;
fail:
	cli_new_file_abort(&tf);
fail_res:
	free(text);
	rd_pool_result_free(res);
	return CLI_FAIL;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* The summary; absent describes the buffers left out as RD_POOL_ABSENT. */
static void rebuild_report(const struct rd_pool_result *res, const char *out, const char *absent,
			   int best_effort)
{
	static const struct {
		enum rd_pool_verdict v;
		const char *why;
	} dropped[] = {
	    {RD_POOL_CLAIMING, "being claimed (preamble not yet complete)"},
	    {RD_POOL_EMPTY, "claimed, no preamble written yet"},
	    {RD_POOL_BAD_LENGTH, "the descriptor's used_bytes is beyond the buffer size"},
	    {RD_POOL_STALE, "stale bytes of an earlier use (the preamble is not the descriptor's)"},
	    {RD_POOL_BAD_PREAMBLE, "no valid NewBuffer, WallClockTime, NewCPUId at the start"},
	    {RD_POOL_ABSENT, NULL},
	    {RD_POOL_NO_ROOM, "no room left to close them with EndOfBuffer"},
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
	if ((n = res->count[RD_POOL_FREE]))
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
			  RD_POOL_HZ_MIN_SPAN_US / 1000, (unsigned long long)res->tsc_hz);
	if (!res->kept)
		cli_error("no buffer held recorded events: the trace has a header only");
	cli_error("wrote %s", out);
}

void cli_map_value(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

int cli_map_generated(FILE *f, const struct cli_map_facts *m, const struct rd_pool_result *res)
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
	for (i = 0; i < res->thread_count; i++)
		fprintf(f, "thread\t%u\t%u\t<unknown>\t0\t0\t0\t0\t0\t0\t0\n",
			(unsigned)res->threads[i].tid, (unsigned)res->threads[i].thread_id);
	return 0;
}

/* ---- What became of each buffer ------------------------------------------------------------ */

static const char *const state_names[] = {"free", "owned", "full", "claiming"};

/* Callbacks for struct rd_pool_job: ctx is a struct cli_progress to update. */
static void note_progress(void *ctx, const struct rd_pool_note *n)
{
	cli_progress_update(ctx, n->done, n->total);
}

/* -v: "buffer 3: owned, used 88, claim 4, thread 1 (tid 1001): kept 80 bytes; stopped at ..." */
static void note_verbose(void *ctx, const struct rd_pool_note *n)
{
	char desc[160] = "", kept[48] = "";

	(void)ctx;
	if (n->have_desc)
		snprintf(desc, sizeof(desc), "%s, used %llu, claim %llu, thread %u (tid %u): ",
			 state_names[n->state & 3], (unsigned long long)n->used,
			 (unsigned long long)n->claim_seq, n->thread_id, n->tid);
	if (n->verdict == RD_POOL_KEPT)
		snprintf(kept, sizeof(kept), " %llu bytes", (unsigned long long)n->kept);
	cli_error("buffer %llu: %s%s%s%s%s", (unsigned long long)n->index, desc,
		  rd_pool_verdict_name(n->verdict), kept, n->why ? "; stopped at " : "",
		  n->why ? n->why : "");
}

/* ---- The whole rebuild --------------------------------------------------------------------- */

int cli_rebuild(struct rd_pool_job *job, const char *out,
		int (*write_map)(FILE *f, const struct rd_pool_result *res, void *ctx), void *ctx,
		const struct cli_rebuild_show *show)
{
	struct rd_pool_result res;
	struct cli_progress prog;
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
	rd_pool_result_free(&res);
	return CLI_OK;
}
