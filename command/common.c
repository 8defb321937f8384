/*
 * command/common.c - messages, input checks, checked output and progress for every verb.
 *
 * Output contract: a verb writes through struct cli_out and ends with cli_out_close(), which
 * is the only place a write error is reported. fwrite() errors are sticky: after the first one
 * nothing more is attempted, so a full disk costs one failed write, not millions.
 * What recover and core share is in rebuild.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/srcline.h"
#include "analysis/stacktree.h"
#include "command/cli.h"
#include "command/option_table.h"

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

int cli_check_output(const char *output, const char *input, const char *map)
{
	char sidecar[4096];

	if (!output || !strcmp(output, "-"))
		return 0;
	/* Over the input, it would truncate the mapping the records are read from. */
	if (cli_same_file(output, input))
		return cli_usage("output '%s' is the input file", output);
	/* ... and over a sidecar, the names the trace has nowhere else. */
	if ((map && cli_same_file(output, map)) ||
	    ((size_t)snprintf(sidecar, sizeof(sidecar), "%s.map", input) < sizeof(sidecar) &&
	     cli_same_file(output, sidecar)))
		return cli_usage("output '%s' is the .map sidecar of the input file", output);
	return 0;
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

/* ---- Opening a trace ------------------------------------------------------------------------ */

int cli_prepare_reading(const char *input, const char *output, const struct cli_map_choice *from,
			struct xfdr_names **names)
{
	char sidecar[4096];
	int status;

	*names = NULL;
	status = cli_check_input(input);
	if (!status)
		status = cli_check_output(output, input, from->map);
	if (!status && !from->no_map)
		status =
		    cli_names_load(cli_sidecar(input, from->map, sidecar, sizeof(sidecar)), names);
	return status;
}

int cli_open_verified(const char *input, struct cli_progress *prog, struct xfdr_trace **out)
{
	struct xfdr_error err;
	struct stat st;

	*out = NULL;
	cli_progress_begin(prog, stat(input, &st) == 0 ? (uint64_t)st.st_size : 0, "verifying");
	if (xfdr_trace_open(input, out, &err) < 0 || xfdr_trace_verify(*out, &err) < 0) {
		cli_progress_end(prog);
		fprintf(stderr, "%s\n", err.text);
		if (*out)
			xfdr_trace_close(*out);
		*out = NULL;
		return CLI_FAIL;
	}
	return CLI_OK;
}

int cli_count_inputs(char *const *inputs, const struct cli_map_choice *from, size_t *n)
{
	for (*n = 0; inputs[*n]; ++*n)
		;
	if (*n > 1 && from->map)
		return cli_usage("'--map' names the functions of one FILE: with several, each is "
				 "named from its own FILE.map");
	return 0;
}

int cli_inputs_open(char *const *paths, size_t n, const char *output,
		    const struct cli_map_choice *from, struct cli_progress *prog,
		    struct cli_input **in)
{
	size_t i;
	int status = 0;

	*in = calloc(n ? n : 1, sizeof(**in));
	if (!*in) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	for (i = 0; i < n && !status; i++)
		status = cli_prepare_reading(paths[i], output, from, &(*in)[i].names);
	for (i = 0; i < n && !status; i++)
		status = cli_open_verified(paths[i], prog, &(*in)[i].t);
	return status;
}

void cli_inputs_close(struct cli_input *in, size_t n)
{
	size_t i;

	for (i = 0; in && i < n; i++) {
		xfdr_names_free(in[i].names);
		if (in[i].t)
			xfdr_trace_close(in[i].t);
	}
	free(in);
}

const char *cli_process_label(const struct xfdr_names *names, const char *path, char *buf,
			      size_t size)
{
	const char *program = NULL, *base = strrchr(path, '/');
	uint32_t pid = xfdr_names_pid(names, &program), ppid = xfdr_names_ppid(names);
	int n;

	if (!pid) {
		snprintf(buf, size, "%s", base ? base + 1 : path);
		return buf;
	}
	n = snprintf(buf, size, "pid %u", pid);
	if (n < 0 || (size_t)n >= size)
		return buf;
	if (program && ppid)
		snprintf(buf + n, size - (size_t)n, " (%.200s, parent %u)", program, ppid);
	else if (program)
		snprintf(buf + n, size - (size_t)n, " (%.200s)", program);
	else if (ppid)
		snprintf(buf + n, size - (size_t)n, " (parent %u)", ppid);
	return buf;
}

int cli_stree_build(struct stree *t, const struct cli_input *in, size_t n, int per_thread,
		    const struct cli_window *w, struct cli_progress *prog)
{
	struct progress sink = cli_progress_sink(prog);
	struct xfdr_error err;
	uint64_t hz0 = n ? xfdr_trace_header(in[0].t)->cycle_frequency : 0;
	char label[320];
	size_t i;

	/*
	 * One tree sums ticks, shown in the first trace's units: the traces must count them on
	 * one clock (one machine's TSC). Each process measures the rate itself, so a process
	 * tree's agree to a few parts per million, not exactly: 1% apart is another clock.
	 */
	for (i = 1; i < n; i++) {
		uint64_t hz = xfdr_trace_header(in[i].t)->cycle_frequency;

		if ((hz > hz0 ? hz - hz0 : hz0 - hz) > hz0 / 100) {
			cli_progress_end(prog);
			cli_error("%s: cycle_frequency %llu, where %s has %llu: traces of one "
				  "machine's clock only",
				  xfdr_trace_name(in[i].t), (unsigned long long)hz,
				  xfdr_trace_name(in[0].t), (unsigned long long)hz0);
			return CLI_FAIL;
		}
	}
	if (stree_init(t, per_thread) < 0) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	cli_progress_phase(prog, "pairing calls");
	for (i = 0; i < n; i++) {
		const char *process = n > 1
					  ? cli_process_label(in[i].names, xfdr_trace_name(in[i].t),
							      label, sizeof(label))
					  : NULL;

		if (stree_set_input(t, in[i].names, process) < 0) {
			cli_progress_end(prog);
			cli_error("out of memory");
			stree_free(t);
			return CLI_FAIL;
		}
		stree_set_window(t, w ? &w->win[i] : NULL);
		if (stree_build(t, in[i].t, &sink, &err) < 0) {
			cli_progress_end(prog);
			fprintf(stderr, "%s\n", err.text);
			stree_free(t);
			return CLI_FAIL;
		}
	}
	cli_progress_end(prog);
	if (stree_finish(t) < 0) {
		cli_error("out of memory");
		stree_free(t);
		return CLI_FAIL;
	}
	return CLI_OK;
}

int cli_stree_build_runs(const struct cli_window_opts *wo, const struct cli_input *in,
			 int per_thread, struct stree *t, struct cli_progress *prog)
{
	struct cli_window w;
	int i, rc = 0;

	for (i = 0; i < 2 && !rc; i++) {
		rc = cli_window_resolve(wo, &in[i], 1, &w);
		if (!rc)
			rc = cli_stree_build(&t[i], &in[i], 1, per_thread, &w, prog);
		cli_window_free(&w);
	}
	if (rc && i == 2)
		stree_free(&t[0]);
	return rc;
}

long cli_stree_sources(const struct stree *t, const uint8_t *used, const struct xfdr_names *names,
		       struct srcline *lines, const char **file, int *line)
{
	uint32_t *fid = malloc(((size_t)t->name_count + 1) * sizeof(*fid)), k;
	const char *module;
	uint64_t vaddr;
	long found = 0;

	if (!fid)
		return -1;
	stree_name_functions(t, fid);
	for (k = 0; k < t->name_count; k++) {
		if ((used && !used[k]) || fid[k] == STREE_NONE ||
		    !xfdr_names_function_site(names, fid[k], &module, &vaddr))
			continue;
		found += srcline_site(lines, module, vaddr, &file[k], &line[k]);
	}
	free(fid);
	return found;
}

/* ---- Checked output ---------------------------------------------------------------------- */

int cli_out_open(struct cli_out *o, const char *path)
{
	o->len = 0;
	o->err = 0;
	o->flushed = 0;
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

struct cli_out *cli_out_new(const char *path)
{
	struct cli_out *o = malloc(sizeof(*o));

	if (!o) {
		cli_error("out of memory");
		return NULL;
	}
	if (cli_out_open(o, path) != 0) {
		free(o);
		return NULL;
	}
	return o;
}

void cli_out_flush(struct cli_out *o)
{
	if (o->len && !o->err) {
		if (fwrite(o->buf, 1, o->len, o->f) != o->len)
			o->err = errno ? errno : EIO;
	}
	o->flushed += o->len;
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

const char *cli_duration(char *buf, size_t n, uint64_t ticks, uint64_t hz,
			 enum cli_duration_style style)
{
	double s;

	if (!hz) {
		snprintf(buf, n, "%llu ticks", (unsigned long long)ticks);
		return buf;
	}
	s = (double)ticks / (double)hz;
	if (s >= 100 && style == CLI_DURATION_SHORT)
		snprintf(buf, n, "%.0f s", s);
	else if (s >= 1)
		snprintf(buf, n, "%.3f s", s);
	else if (s >= 1e-3)
		snprintf(buf, n, "%.3f ms", s * 1e3);
	else if (s >= 1e-6)
		snprintf(buf, n, "%.3f us", s * 1e6);
	else
		snprintf(buf, n, "%.0f ns", s * 1e9);
	return buf;
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

static void sink_phase(void *ctx, const char *what)
{
	cli_progress_phase(ctx, what);
}

static void sink_update(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress_update(ctx, done, total);
}

struct progress cli_progress_sink(struct cli_progress *p)
{
	return (struct progress){sink_phase, sink_update, p};
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
