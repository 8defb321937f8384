/*
 * command/record_report.c - the end of `xfdr record`: the traces the run wrote, and a
 * one-screen summary of the program's (record.c runs the program; its head comment says how).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/latency.h"
#include "command/cli.h"
#include "command/record.h"

#define SUMMARY_COLUMNS 100
#define LIST_MAX 10 /* other traces listed by name */

/* ---- Finding the traces ------------------------------------------------------------------- */

static int digits(const char *p, const char *e, uint64_t *v)
{
	if (p == e || e - p > 19)
		return 0;
	for (*v = 0; p < e; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		*v = *v * 10 + (uint64_t)(*p - '0');
	}
	return 1;
}

/* Parse a trace's name from the right. Returns 1 if it is one. */
static int parse_trace_name(const char *name, struct found *f)
{
	size_t len = strlen(name);
	const char *e, *d;

	if (len < 5 || strcmp(name + len - 5, ".xray"))
		return 0;
	e = name + len - 5;
	f->tid = 0;
	f->per_thread = 0;
	for (d = e; d > name && d[-1] != '-'; d--)
		;
	if (d == name)
		return 0;
	if (*d == 't') {
		if (!digits(d + 1, e, &f->tid))
			return 0;
		f->per_thread = 1;
		e = d - 1;
		for (d = e; d > name && d[-1] != '-'; d--)
			;
		if (d == name)
			return 0;
	}
	if (!digits(d, e, &f->n))
		return 0;
	e = d - 1;
	for (d = e; d > name && d[-1] != '-'; d--)
		;
	/* A prefix of at least one byte before "-<pid>". */
	return d > name + 1 && digits(d, e, &f->pid);
}

void listing_free(struct listing *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The traces in dir. Returns 0, or -1 (dir unreadable or out of memory: l is then empty). */
int list_traces(const char *dir, struct listing *l)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	struct found f;
	char path[PATH_MAX];

	memset(l, 0, sizeof(*l));
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!parse_trace_name(e->d_name, &f))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path) ||
		    stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (l->n == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 16;
			struct found *v = realloc(l->v, cap * sizeof(*v));

			if (!v)
				goto oom;
			l->v = v;
			l->cap = cap;
		}
		f.name = strdup(e->d_name);
		if (!f.name)
			goto oom;
		f.ino = st.st_ino;
		f.mtime = st.st_mtim;
		f.bytes = st.st_size;
		l->v[l->n++] = f;
	}
	closedir(d);
	return 0;
oom:
	closedir(d);
	listing_free(l);
	return -1;
}

/* Was f in the listing taken before the run, unchanged? */
static int was_there(const struct listing *before, const struct found *f)
{
	size_t i;

	for (i = 0; i < before->n; i++) {
		const struct found *b = &before->v[i];

		if (!strcmp(b->name, f->name))
			return b->ino == f->ino && b->mtime.tv_sec == f->mtime.tv_sec &&
			       b->mtime.tv_nsec == f->mtime.tv_nsec && b->bytes == f->bytes;
	}
	return 0;
}

/* By pid; a pid's newest flush (highest n) first; then by tid. */
static int found_cmp(const void *pa, const void *pb)
{
	const struct found *a = pa, *b = pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return (a->tid > b->tid) - (a->tid < b->tid);
}

/* ---- The summary --------------------------------------------------------------------------- */

static const char *const drop_causes[] = {"no_buffer", "reentrant", "too_large", "no_thread_slot"};

/* The first line the lenient read left out, for "map is unusable". */
static void first_left_out(void *ctx, uint64_t line, const char *text)
{
	struct xfdr_error *first = ctx;

	(void)line;
	if (!first->text[0])
		snprintf(first->text, sizeof(first->text), "%s", text);
}

/*
 * The sidecar at path, read as xfdr_names_read_lenient() does, so that its pool facts count
 * whatever else is wrong in it. Returns the names when the sidecar is also valid as a whole
 * (nothing left out), else NULL after saying why; *all gets what was read (NULL: nothing).
 */
static struct xfdr_names *load_map(const char *path, struct xfdr_names **all)
{
	struct xfdr_error err, first = {0, ""};
	FILE *f = fopen(path, "r");

	*all = NULL;
	if (!f) {
		fprintf(stderr, "  map is unusable: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (xfdr_names_read_lenient(f, path, first_left_out, &first, all, &err) < 0)
		fprintf(stderr, "  map is unusable: %s\n", err.text);
	else if (first.text[0])
		fprintf(stderr, "  map is unusable: %s\n", first.text);
	fclose(f);
	return first.text[0] ? NULL : *all;
}

/* What the trace itself says. */
struct trace_facts {
	uint64_t threads, functions;
	int have_drops; /* an XFDRDROP event */
	uint64_t drop[5], overwritten;
};

/* One pass: function records, threads, the XFDRDROP counts. Returns 0 or -1 (err filled). */
static int read_trace(struct xfdr_trace *t, struct trace_facts *tf, struct xfdr_error *err)
{
	struct xfdr_event_iter it;
	struct xfdr_thread_info ti;
	struct xfdr_drop_event d;
	struct xfdr_event ev;
	uint64_t count, i;
	int rc;

	memset(tf, 0, sizeof(*tf));
	if (xfdr_trace_threads(t, &count, err) < 0)
		return -1;
	/* Thread id 0 holds only the drop counts of a process file. */
	for (i = 0; i < count; i++)
		if (!xfdr_trace_thread(t, i, &ti) && ti.thread_id != 0)
			tf->threads++;
	if (xfdr_events_begin(t, XFDR_ORDER_FILE, &it, err) < 0)
		return -1;
	while ((rc = xfdr_events_next(&it, &ev, err)) == 1) {
		if (ev.type == XFDR_EVENT_FUNCTION) {
			tf->functions++;
		} else if (ev.type == XFDR_EVENT_CUSTOM &&
			   !xfdr_drop_event_decode(ev.payload, ev.payload_bytes, ev.big_endian, &d,
						   NULL)) {
			tf->have_drops = 1;
			tf->drop[0] += d.no_buffer;
			tf->drop[1] += d.reentrant;
			tf->drop[2] += d.too_large;
			tf->drop[3] += d.no_thread_slot;
			tf->overwritten += d.overwritten;
		}
	}
	tf->drop[4] = tf->drop[0] + tf->drop[1] + tf->drop[2] + tf->drop[3];
	return rc < 0 ? -1 : 0;
}

static const char *signal_name(int sig, char *buf, size_t n)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, n, "SIG%s", abbrev);
	else
		snprintf(buf, n, "signal %d", sig);
	return buf;
}

/* ticks as a duration with a unit, into buf. */
static const char *duration(uint64_t ticks, uint64_t hz, char *buf, size_t n)
{
	double s;

	if (!hz) {
		snprintf(buf, n, "%" PRIu64 " ticks", ticks);
		return buf;
	}
	s = (double)ticks / (double)hz;
	if (s >= 100)
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

static const char *size_text(uint64_t bytes, char *buf, size_t n)
{
	if (bytes >= (1u << 30) && bytes % (1u << 30) == 0)
		snprintf(buf, n, "%" PRIu64 " GiB", bytes >> 30);
	else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, n, "%" PRIu64 " MiB", bytes >> 20);
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, n, "%" PRIu64 " KiB", bytes >> 10);
	else if (bytes >= (1u << 20))
		snprintf(buf, n, "%.1f MiB", (double)bytes / (1u << 20));
	else if (bytes >= 1024)
		snprintf(buf, n, "%.1f KiB", (double)bytes / 1024);
	else
		snprintf(buf, n, "%" PRIu64 " bytes", bytes);
	return buf;
}

/* "NAME exited with status N" / "was killed by SIGTERM", after how long. */
static void say_ending(const char *prog, const struct run *r)
{
	char sig[32];

	if (WIFSIGNALED(r->status))
		cli_error("%s was killed by %s%s after %.2f s", prog,
			  signal_name(WTERMSIG(r->status), sig, sizeof(sig)),
			  WCOREDUMP(r->status) ? " (core dumped)" : "", r->seconds);
	else
		cli_error("%s exited with status %d after %.2f s", prog, WEXITSTATUS(r->status),
			  r->seconds);
}

/* The sidecar of a trace: TRACE.map, or for a per-thread file "<prefix>-<pid>-<n>.map". */
static void sidecar_of(const char *trace, const struct found *f, char *map, size_t n)
{
	const char *t;

	snprintf(map, n, "%s.map", trace);
	if (!f->per_thread || access(map, F_OK) == 0)
		return;
	t = strrchr(trace, '-');
	if (t)
		snprintf(map, n, "%.*s.map", (int)(t - trace), trace);
}

static void put_drops(const uint64_t *drop, const char *mode)
{
	char text[256];
	size_t n = 0, i;

	if (!drop[4]) {
		fprintf(stderr, "  dropped    none\n");
		return;
	}
	for (i = 0; i < 4; i++)
		if (drop[i])
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s %" PRIu64,
					      n ? ", " : "", drop_causes[i], drop[i]);
	fprintf(stderr, "  dropped    %" PRIu64 " events (%s)%s\n", drop[4], text,
		drop[0] && mode && !strcmp(mode, "bounded")
		    ? ": the pool was full; raise buffer_max, or --mode=ring keeps the newest"
		    : "");
}

static void put_top(struct xfdr_trace *t, const struct xfdr_names *names, long top)
{
	struct latency_total *v;
	struct xfdr_error err;
	uint64_t hz = xfdr_trace_header(t)->cycle_frequency;
	size_t n, i, shown;
	char self[32], total[32], per[32], id[16];
	const char *name;
	int width = SUMMARY_COLUMNS - 4 - 12 - 1 - 12 - 1 - 10 - 1 - 12 - 2;

	if (top <= 0)
		return;
	if (latency_totals(t, names, &v, &n, &err)) {
		cli_error("%s", err.text);
		return;
	}
	shown = n < (size_t)top ? n : (size_t)top;
	if (!n) {
		fprintf(stderr, "  no complete calls to account\n");
		free(v);
		return;
	}
	fprintf(stderr, "  top %zu of %zu functions by self time (outside recorded callees):\n",
		shown, n);
	fprintf(stderr, "    %12s %12s %10s %12s  %s\n", "self", "total", "calls", "per call",
		"function");
	for (i = 0; i < shown; i++) {
		name = v[i].name;
		if (!name) {
			snprintf(id, sizeof(id), "#%u", v[i].fid);
			name = id;
		}
		duration(v[i].self_tsc, hz, self, sizeof(self));
		duration(v[i].sum_tsc, hz, total, sizeof(total));
		duration(v[i].count ? v[i].sum_tsc / v[i].count : 0, hz, per, sizeof(per));
		if ((int)strlen(name) > width)
			fprintf(stderr, "    %12s %12s %10" PRIu64 " %12s  %.*s...\n", self, total,
				v[i].count, per, width - 3, name);
		else
			fprintf(stderr, "    %12s %12s %10" PRIu64 " %12s  %s\n", self, total,
				v[i].count, per, name);
	}
	free(v);
}

/*
 * The crash as the crash handler saw it: the signal, then the crashing thread's frames from
 * the .map, the crash site first, each with the function the handler named (or the module
 * and offset where it could not).
 */
static void put_crash(const struct xfdr_names *names, const char *signal, const char *path)
{
	struct xfdr_map_crash c;
	struct xfdr_map_frame fr;
	uint32_t i, n = xfdr_names_frame_count(names);

	if (!xfdr_names_crash(names, &c)) {
		fprintf(stderr, "  crash      %s: its frames are in `xfdr dump %s`\n",
			signal[0] ? signal : "recorded", path);
		return;
	}
	fprintf(stderr,
		"  crash      %s (code %" PRId32 ", address 0x%" PRIx64 ") in thread %" PRIu32
		"%s\n",
		c.signal_name, c.code, c.fault_addr, c.tid, n ? ", innermost frame first:" : "");
	for (i = 0; i < n; i++) {
		const char *module;

		if (!xfdr_names_frame(names, i, &fr))
			continue;
		module = fr.module ? strrchr(fr.module, '/') : NULL;
		module = module ? module + 1 : fr.module ? fr.module : "?";
		if (fr.symbol)
			fprintf(stderr, "    #%-2" PRIu32 " %s (%s)\n", i, fr.symbol, module);
		else if (fr.have_module_vaddr)
			fprintf(stderr, "    #%-2" PRIu32 " 0x%" PRIx64 " (%s+0x%" PRIx64 ")\n", i,
				fr.pc, module, fr.module_vaddr);
		else
			fprintf(stderr, "    #%-2" PRIu32 " 0x%" PRIx64 " (%s)\n", i, fr.pc,
				module);
	}
}

/* The summary of one trace file. */
static void summarize(const char *path, const struct found *f, long top)
{
	struct xfdr_trace *t = NULL;
	struct xfdr_names *names = NULL, *map_lines = NULL;
	struct xfdr_map_pool m;
	struct xfdr_map_crash crash;
	struct xfdr_error err;
	struct trace_facts tf;
	char map[2 * PATH_MAX + 8], size[32], bsize[32];
	const uint64_t *drop;
	uint64_t overwritten;
	int have_map;

	sidecar_of(path, f, map, sizeof(map));
	have_map = access(map, F_OK) == 0;
	fprintf(stderr, "  trace      %s (%s)\n", path,
		size_text((uint64_t)f->bytes, size, sizeof(size)));
	fprintf(stderr, "  map        %s\n", have_map ? map : "none (no function names)");
	if (xfdr_trace_open(path, &t, &err) < 0 || xfdr_trace_verify(t, &err) < 0 ||
	    read_trace(t, &tf, &err) < 0) {
		fprintf(stderr, "  INVALID    %s\n", err.text);
		goto out;
	}
	if (have_map)
		names = load_map(map, &map_lines);
	xfdr_names_pool(map_lines, &m);
	fprintf(stderr, "  threads    %" PRIu64 "\n", tf.threads);
	fprintf(stderr, "  events     %" PRIu64 " function records\n", tf.functions);
	drop = m.have_drops ? m.dropped : tf.drop;
	if (m.have_drops || tf.have_drops)
		put_drops(drop, m.mode);
	overwritten = m.have_overwritten ? m.overwritten : tf.overwritten;
	if (m.have_buffer_max)
		fprintf(stderr,
			"  pool       %s, %" PRIu64 " buffers of %s; %" PRIu64
			" in the trace, %" PRIu64 " overwritten%s\n",
			m.mode ? m.mode : "?", m.buffer_max,
			size_text(m.buffer_size, bsize, sizeof(bsize)), m.buffers_written,
			overwritten, overwritten ? " (older events lost)" : "");
	else if (overwritten)
		fprintf(stderr, "  overwritten %" PRIu64 " buffers (older events lost)\n",
			overwritten);
	if (xfdr_names_crash(map_lines, &crash))
		put_crash(names, crash.signal_name, path);
	put_top(t, names, top);
out:
	xfdr_names_free(map_lines);
	if (t)
		xfdr_trace_close(t);
}

/* The last line of the runtime's that starts with prefix ("xfdr: SIGSEGV: "), or NULL. */
static const char *said(const char *messages, const char *prefix, size_t *len)
{
	const char *line = NULL, *p = messages;

	while (p && (p = strstr(p, prefix))) {
		if (p == messages || p[-1] == '\n')
			line = p;
		p += strlen(prefix);
	}
	if (line)
		*len = strcspn(line, "\n");
	return line;
}

/*
 * The program died by a signal and no trace is there. The runtime's own lines (record.c keeps
 * them) tell whether it was in the program, and whether its handler of the signal ran.
 */
static void explain_signal(const struct run *r, const char *opts, const char *name)
{
	char loaded[64], prefix[48];
	const char *line;
	size_t len;
	int sig = WTERMSIG(r->status);
	int crash = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
		    sig == SIGABRT || sig == SIGTRAP;

	snprintf(loaded, sizeof(loaded), "xfdr: loaded in pid %d\n", (int)r->pid);
	snprintf(prefix, sizeof(prefix), "xfdr: %s: ", name);
	if (!r->messages || !strstr(r->messages, loaded)) {
		cli_error("no trace: the program died by %s, and xfdr was not in it (pid %d): not "
			  "linked with it, and LD_PRELOAD did not reach it (a static or setuid "
			  "program, or a launcher that clears the environment?)",
			  name, (int)r->pid);
	} else if ((line = said(r->messages, prefix, &len))) {
		cli_error("no trace: the program died by %s; xfdr's handler ran and said: %.*s",
			  name, (int)len, line);
	} else if (crash && record_option_false(opts, "flush_on_crash")) {
		cli_error("no trace: the program died by %s, and XFDR_OPTIONS has flush_on_crash=0",
			  name);
	} else if (crash) {
		cli_error(
		    "no trace: the program died by %s, and xfdr's crash handler never ran: the "
		    "program or a library took the signal from it where xfdr does not see (the "
		    "rt_sigaction system call, a call inside libc), or the signal came while "
		    "blocked",
		    name);
	} else if (sig == SIGTERM || sig == SIGINT) {
		cli_error(
		    "no trace: the program died by %s, which xfdr leaves to the program when it "
		    "handles or ignores it at start (or flush_on_terminate=0)",
		    name);
	} else {
		cli_error(
		    "no trace: the program died by %s, on which xfdr does not flush (it does on "
		    "SIGTERM, SIGINT and crashes; --option flush_signal=SIG for a signal of your "
		    "choice)",
		    name);
	}
}

/* Why no trace was written, as far as can be told. */
static void explain_missing(const struct run *r, const char *opts, const char *dir)
{
	char live[PATH_MAX], sig[32];
	DIR *d;
	struct dirent *e;
	char suffix[48];
	int have_live = 0;

	snprintf(suffix, sizeof(suffix), "-%d-live.xray", (int)r->pid);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name), sl = strlen(suffix);

		if (len > sl && !strcmp(e->d_name + len - sl, suffix)) {
			snprintf(live, sizeof(live), "%s/%s", dir, e->d_name);
			have_live = 1;
		}
	}
	if (d)
		closedir(d);
	if (WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGKILL)
		cli_error("no trace: SIGKILL cannot be caught, so the recorder could not flush%s",
			  have_live ? ""
				    : " (backing=file keeps a pool that `xfdr recover` reads)");
	else if (WIFSIGNALED(r->status))
		explain_signal(r, opts, signal_name(WTERMSIG(r->status), sig, sizeof(sig)));
	else if (record_option_false(opts, "flush_at_exit"))
		cli_error("no trace: XFDR_OPTIONS has flush_at_exit=0, and the program flushed "
			  "nothing itself");
	else
		cli_error("no trace: the program may have left through _exit() or exec(), the "
			  "recorder did not start, or its flush could not write the file (see its "
			  "messages above)");
	if (have_live)
		cli_error("its live pool remains: xfdr recover %s", live);
}

void record_report(const char *prog, long top, const struct run *r, const char *opts,
		   const char *dir, const struct listing *before)
{
	struct listing after;
	struct found *mine = NULL;
	char path[PATH_MAX * 2];
	size_t i, listed = 0, others = 0;

	say_ending(prog, r);
	if (list_traces(dir, &after)) {
		cli_error("%s: cannot list the traces: %s", dir, strerror(errno));
		return;
	}
	if (after.n) /* an empty listing has no array to sort */
		qsort(after.v, after.n, sizeof(*after.v), found_cmp);
	for (i = 0; i < after.n; i++) {
		struct found *f = &after.v[i];

		if (was_there(before, f))
			continue;
		if (f->pid == (uint64_t)r->pid) {
			if (!mine)
				mine = f;
			else
				others++;
		} else {
			others++;
		}
	}
	if (mine) {
		snprintf(path, sizeof(path), "%s/%s", dir, mine->name);
		summarize(path, mine, top);
	} else if (others && WIFEXITED(r->status)) {
		cli_error("pid %d wrote no trace itself (a script or a launcher?); other processes "
			  "did",
			  (int)r->pid);
	} else {
		explain_missing(r, opts, dir);
	}
	if (!others)
		goto out;
	fprintf(stderr,
		"  also written during the run (%zu: earlier flushes, other threads' files, "
		"child processes):\n",
		others);
	for (i = 0; i < after.n; i++) {
		struct found *f = &after.v[i];

		if (f == mine || was_there(before, f))
			continue;
		if (listed++ == LIST_MAX) {
			fprintf(stderr, "    ... and %zu more\n", others - LIST_MAX);
			break;
		}
		fprintf(stderr, "    %s/%s (pid %" PRIu64 ")\n", dir, f->name, f->pid);
	}
out:
	listing_free(&after);
}
