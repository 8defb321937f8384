/*
 * command/reading_window.c - the part of the traces a reading verb reads: --since, --until,
 * --thread and --window (cli.h), resolved against the open inputs with analysis/window.h, and
 * told on stderr whenever it is not simply everything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/window.h"
#include "command/cli.h"

/* How many threads' spans are told one per line before the rest are only counted. */
#define SPAN_LINES_MAX 32u

static int parse_edge(struct window_edge *e, const char *option, const char *arg)
{
	const char *why;

	if (window_edge_parse(arg, e, &why))
		return cli_usage("'--%s' takes %s, not '%s'", option, why, arg);
	return 0;
}

int cli_window_parse_since(void *opts, const char *arg)
{
	return parse_edge(&((struct cli_window_opts *)opts)->since, "since", arg);
}

int cli_window_parse_until(void *opts, const char *arg)
{
	struct cli_window_opts *o = opts;
	int rc = parse_edge(&o->until, "until", arg);

	if (!rc && o->until.kind == WINDOW_EDGE_SNAPSHOT)
		return cli_usage("'--until=snapshot': a snapshot's .map tells where its window "
				 "begins (--since=snapshot), not where it ends");
	return rc;
}

static void tell(const struct cli_window *w, const struct cli_input *in, int tell_lost);

/* The spans of every input, into w. Returns 0, or CLI_FAIL reported. */
static int load_spans(struct cli_window *w, const struct cli_input *in, size_t n)
{
	struct xfdr_error err;
	size_t i;

	w->spans = calloc(n ? n : 1, sizeof(*w->spans));
	w->nspans = calloc(n ? n : 1, sizeof(*w->nspans));
	w->win = calloc(n ? n : 1, sizeof(*w->win));
	w->n = n;
	if (!w->spans || !w->nspans || !w->win) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	for (i = 0; i < n; i++) {
		w->win[i] = WINDOW_ALL;
		if (window_spans(in[i].t, in[i].names, &w->spans[i], &w->nspans[i], &err)) {
			cli_error("%s", err.text);
			return CLI_FAIL;
		}
	}
	return 0;
}

/* "1 (tid 4242), 2 (tid 4243), ..." for a message. */
static void list_threads(const struct window_span *s, size_t n, char *buf, size_t size)
{
	size_t i, len = 0;
	int k;

	buf[0] = '\0';
	for (i = 0; i < n && len + 40 < size; i++) {
		if (s[i].tid)
			k = snprintf(buf + len, size - len, "%s%u (tid %u)", i ? ", " : "",
				     s[i].thread_id, s[i].tid);
		else
			k = snprintf(buf + len, size - len, "%s%u", i ? ", " : "", s[i].thread_id);
		len += k > 0 ? (size_t)k : 0;
	}
	if (i < n)
		snprintf(buf + len, size - len, ", ...");
	if (!n)
		snprintf(buf, size, "none");
}

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * One number of --thread: the thread it picks in every input that has it, its key added to
 * w->keys (input i's from keys[i * cap]) and its span marked. Returns 0 or CLI_USAGE reported.
 */
static int pick_thread(struct cli_window *w, const struct cli_input *in, uint64_t number,
		       uint64_t *keys, size_t cap, size_t *count, unsigned char **picked)
{
	char list[256];
	size_t i, found = 0;
	long k, other;

	for (i = 0; i < w->n; i++) {
		k = window_thread_find(w->spans[i], w->nspans[i], number, &other);
		if (k == -2)
			return cli_usage("'--thread=%llu' is thread %llu of %s and the thread of "
					 "tid %llu (thread %u): give the other's tid or id",
					 (unsigned long long)number, (unsigned long long)number,
					 xfdr_trace_name(in[i].t), (unsigned long long)number,
					 w->spans[i][other].thread_id);
		if (k < 0)
			continue;
		found++;
		if (!picked[i][k] && count[i] < cap) {
			picked[i][k] = 1;
			keys[i * cap + count[i]++] =
			    window_thread_key(w->spans[i][k].pid, w->spans[i][k].thread_id);
		}
	}
	if (found)
		return 0;
	list_threads(w->spans[0], w->nspans[0], list, sizeof(list));
	return cli_usage("'--thread': no thread with id or tid %llu in %s%s (its threads: %s)",
			 (unsigned long long)number, xfdr_trace_name(in[0].t),
			 w->n > 1 ? " or the other FILEs" : "", list);
}

/* --thread=LIST into each input's window. Returns 0, or a status reported. */
static int pick_threads(struct cli_window *w, const struct cli_input *in, const char *list)
{
	unsigned char **picked = calloc(w->n, sizeof(*picked));
	size_t *count = calloc(w->n, sizeof(*count)), cap = 1, i;
	const char *p;
	char *end;
	unsigned long long number;
	int rc = 0;

	for (p = list; *p; p++)
		cap += *p == ',';
	w->keys = calloc(w->n * cap, sizeof(*w->keys));
	for (i = 0; picked && i < w->n; i++)
		picked[i] = calloc(w->nspans[i] + 1, 1);
	for (i = 0; picked && i < w->n && picked[i]; i++)
		;
	if (!picked || !count || !w->keys || i < w->n) {
		cli_error("out of memory");
		rc = CLI_FAIL;
	}
	for (p = list; !rc && *p; p = *end ? end + 1 : end) {
		errno = 0;
		number = strtoull(p, &end, 10);
		if (*p < '0' || *p > '9' || errno || (*end && *end != ',') || number > UINT32_MAX)
			rc = cli_usage("'--thread' takes thread ids or tids, comma-separated, not "
				       "'%s'",
				       list);
		else
			rc = pick_thread(w, in, number, w->keys, cap, count, picked);
		if (!rc && *end == ',' && !end[1])
			rc = cli_usage("'--thread' takes thread ids or tids, comma-separated, not "
				       "'%s'",
				       list);
	}
	for (i = 0; !rc && i < w->n; i++) {
		qsort(w->keys + i * cap, count[i], sizeof(*w->keys), cmp_key);
		w->win[i].threads = w->keys + i * cap;
		w->win[i].nthreads = count[i];
	}
	for (i = 0; picked && i < w->n; i++)
		free(picked[i]);
	free(picked);
	free(count);
	return rc;
}

/* The since_tsc of a snapshot's .map, for --since=snapshot. Returns 0, or CLI_USAGE reported. */
static int snapshot_tsc(const struct cli_input *in, size_t n, uint64_t *tsc)
{
	if (n > 1)
		return cli_usage("'--since=snapshot' takes the window of one FILE's .map: with "
				 "several, give a TSC or a time");
	const char *path = xfdr_trace_name(in[0].t), *map;
	struct xfdr_names *window_only = NULL;
	char sidecar[4096];
	int rc, found;

	map = cli_sidecar(path, NULL, sidecar, sizeof(sidecar));
	if (!in[0].names) {
		/* --no-map: the sidecar is read for the window alone. */
		if (!map) {
			cli_error("--since=snapshot: %s.map: %s (the window of a snapshot is in "
				  "its .map sidecar)",
				  path, strerror(ENOENT));
			return CLI_USAGE;
		}
		rc = cli_names_load(map, &window_only);
		if (rc)
			return rc;
	}
	found = xfdr_names_since_tsc(window_only ? window_only : in[0].names, tsc);
	xfdr_names_free(window_only);
	if (!found) {
		cli_error("--since=snapshot: %s has no since_tsc line: not the sidecar of a "
			  "snapshot",
			  map ? map : "the .map");
		return CLI_USAGE;
	}
	return 0;
}

/* The taken spans of all inputs, as one array for window_common(). NULL when out of memory. */
static struct window_span *taken_spans(const struct cli_window *w, size_t *count)
{
	struct window_span *all;
	size_t i, k, total = 0;

	for (i = 0; i < w->n; i++)
		total += w->nspans[i];
	all = malloc((total ? total : 1) * sizeof(*all));
	*count = 0;
	for (i = 0; all && i < w->n; i++)
		for (k = 0; k < w->nspans[i]; k++)
			if (window_has_thread(&w->win[i], w->spans[i][k].pid,
					      w->spans[i][k].thread_id))
				all[(*count)++] = w->spans[i][k];
	return all;
}

/* The edges: given, or the common window. Returns 0 or a status reported. */
static int set_edges(struct cli_window *w, const struct cli_window_opts *o,
		     const struct cli_input *in)
{
	struct window_span *all;
	uint64_t snap = 0, since, until;
	size_t n, i;
	int rc;

	if (o->since.kind == WINDOW_EDGE_SNAPSHOT && (rc = snapshot_tsc(in, w->n, &snap)))
		return rc;
	if (o->since.kind || o->until.kind) {
		w->since = window_edge_tsc(&o->since, w->base, w->hz, snap, 0);
		w->until = window_edge_tsc(&o->until, w->base, w->hz, snap, UINT64_MAX);
		if (w->since > w->until)
			return cli_usage("'--since' is after '--until': an empty window");
		w->narrowed = 1;
	} else if (!o->whole) {
		all = taken_spans(w, &n);
		if (!all) {
			cli_error("out of memory");
			return CLI_FAIL;
		}
		rc = window_common(all, n, &since, &until);
		free(all);
		if (rc == 1) {
			w->since = since;
			w->until = until;
			w->narrowed = w->common = 1;
		} else if (rc == 0 && since > until) {
			w->disjoint = 1;
		}
	}
	for (i = 0; i < w->n; i++) {
		w->win[i].since = w->since;
		w->win[i].until = w->until;
	}
	return 0;
}

int cli_window_resolve(const struct cli_window_opts *o, const struct cli_input *in, size_t n,
		       struct cli_window *w)
{
	size_t i, k;
	int rc;

	memset(w, 0, sizeof(*w));
	w->until = UINT64_MAX;
	rc = load_spans(w, in, n);
	if (!rc && o->thread)
		rc = pick_threads(w, in, o->thread);
	if (rc)
		return rc;
	w->hz = n ? xfdr_trace_header(in[0].t)->cycle_frequency : 0;
	w->base = UINT64_MAX;
	for (i = 0; i < n; i++) {
		for (k = 0; k < w->nspans[i]; k++) {
			const struct window_span *s = &w->spans[i][k];

			if (s->has_events && s->first_tsc < w->base)
				w->base = s->first_tsc;
			if (s->has_events && s->last_tsc > w->end)
				w->end = s->last_tsc;
			if (s->lost && window_has_thread(&w->win[i], s->pid, s->thread_id))
				w->lost = 1;
		}
	}
	if (w->base == UINT64_MAX)
		w->base = 0;
	rc = set_edges(w, o, in);
	if (!rc && !o->quiet)
		tell(w, in, o->tell_lost);
	return rc;
}

/* A TSC as a time from the trace's start, into buf. */
static const char *at(const struct cli_window *w, uint64_t tsc, char *buf, size_t size)
{
	return cli_duration(buf, size, tsc > w->base ? tsc - w->base : 0, w->hz, CLI_DURATION_FULL);
}

const char *cli_window_text(const struct cli_window *w, char *buf, size_t size)
{
	char a[32], b[32], c[32];
	uint64_t until = w->until < w->end ? w->until : w->end;

	snprintf(buf, size, "%s to %s of %s",
		 at(w, w->since > w->base ? w->since : w->base, a, sizeof(a)),
		 at(w, until, b, sizeof(b)), at(w, w->end, c, sizeof(c)));
	return buf;
}

/* One thread's span, as a line on stderr. */
static void tell_span(const struct cli_window *w, const struct window_span *s, const char *file)
{
	char a[32], b[32], who[96], lost[96] = "";

	if (s->tid && s->name)
		snprintf(who, sizeof(who), " (tid %u, %s)", s->tid, s->name);
	else if (s->tid)
		snprintf(who, sizeof(who), " (tid %u)", s->tid);
	else
		who[0] = '\0';
	if (s->overwritten)
		snprintf(lost, sizeof(lost), ", history before it lost (%llu buffers overwritten)",
			 (unsigned long long)s->overwritten);
	else if (s->lost & WINDOW_LOST_START)
		snprintf(lost, sizeof(lost), ", history before it lost (it begins inside calls)");
	if (s->lost & WINDOW_LOST_END)
		snprintf(lost + strlen(lost), sizeof(lost) - strlen(lost),
			 ", %llu events after it dropped", (unsigned long long)s->no_buffer);
	if (!s->has_events)
		cli_error("%s%sthread %u%s: no events", file ? file : "", file ? ": " : "",
			  s->thread_id, who);
	else
		cli_error("%s%sthread %u%s: %s to %s%s", file ? file : "", file ? ": " : "",
			  s->thread_id, who, at(w, s->first_tsc, a, sizeof(a)),
			  at(w, s->last_tsc, b, sizeof(b)), lost);
}

/* The window and the threads' spans on stderr, when there is something to tell. */
static void tell(const struct cli_window *w, const struct cli_input *in, int tell_lost)
{
	char text[128];
	size_t i, k, told = 0, left = 0;

	if (w->disjoint)
		cli_error("the threads' kept histories do not overlap: reading all of them "
			  "(--window=all)");
	if (!w->narrowed && !(w->lost && tell_lost))
		return;
	if (w->narrowed)
		cli_error("window %s%s", cli_window_text(w, text, sizeof(text)),
			  w->common ? " (common: where every thread's kept history holds; "
				      "--window=all reads all of it)"
				    : "");
	for (i = 0; i < w->n; i++) {
		for (k = 0; k < w->nspans[i]; k++) {
			const struct window_span *s = &w->spans[i][k];

			if (!window_has_thread(&w->win[i], s->pid, s->thread_id))
				continue;
			if (told++ < SPAN_LINES_MAX)
				tell_span(w, s, w->n > 1 ? xfdr_trace_name(in[i].t) : NULL);
			else
				left++;
		}
	}
	if (left)
		cli_error("... and %zu more threads", left);
}

void cli_window_free(struct cli_window *w)
{
	size_t i;

	for (i = 0; w->spans && i < w->n; i++)
		free(w->spans[i]);
	free(w->spans);
	free(w->nspans);
	free(w->win);
	free(w->keys);
	memset(w, 0, sizeof(*w));
}

const char *const cli_window_words[] = {"common", "all", NULL};
