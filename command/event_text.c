/*
 * command/event_text.c - what the timeline formats (trace_event.c, perfetto.c) share: the words
 * for what a trace holds (function names, signal names, crash frames, valid UTF-8), the start
 * and the errors of their walk, the threads of a walk in time order, and the processes an
 * output has described (cli.h).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "analysis/srcline.h"
#include "command/cli.h"

size_t cli_utf8_len(const uint8_t *p, size_t n)
{
	uint8_t c = p[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	/* No overlong forms, no UTF-16 surrogates, nothing above U+10FFFF. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < len; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	}
	return len;
}

const char *cli_function_name(const struct xfdr_names *names, uint32_t fid, char *buf, size_t n)
{
	const char *name = xfdr_names_get(names, fid);

	if (name)
		return name;
	snprintf(buf, n, "%s%" PRIu32, names ? "#" : "", fid);
	return buf;
}

const char *cli_signal_name(const struct xfdr_names *names, uint32_t signal, char *buf, size_t n)
{
	struct xfdr_map_crash mc;
	const char *abbrev = NULL;

	if (xfdr_names_crash(names, &mc) && mc.signal == signal)
		return mc.signal_name;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	if (signal <= (uint32_t)INT32_MAX)
		abbrev = sigabbrev_np((int)signal);
#endif
	if (!abbrev)
		return "";
	snprintf(buf, n, "SIG%s", abbrev);
	return buf;
}

void cli_crash_frame(const struct xfdr_names *names, const struct xfdr_crash_event *ce, uint32_t i,
		     struct cli_frame_text *out)
{
	struct xfdr_map_frame f;
	int have = xfdr_names_frame(names, i, &f) && f.pc == ce->pcs[i];

	if (!have)
		have = xfdr_names_frame_at_pc(names, ce->pcs[i], &f);
	snprintf(out->head, sizeof(out->head), "#%" PRIu32 " 0x%" PRIx64, i, ce->pcs[i]);
	out->symbol = have ? f.symbol : NULL;
	out->module = have ? f.module : NULL;
	out->have_module_vaddr = have && f.module && f.have_module_vaddr;
	out->module_vaddr = f.module_vaddr;
}

void cli_timeline_file_set(struct cli_timeline_file *f, const struct cli_input *in)
{
	const struct xfdr_header *h = xfdr_trace_header(in->t);

	f->t = in->t;
	f->names = in->names;
	f->hz = h->cycle_frequency ? h->cycle_frequency : 1000000000u;
	f->version = h->version;
	f->map_pid = xfdr_names_pid(in->names, &f->process_name);
	f->map_ppid = xfdr_names_ppid(in->names);
}

int cli_timeline_base(const struct cli_input *in, size_t n, uint64_t *base)
{
	struct xfdr_error err;
	uint64_t threads, b;
	size_t i;
	int any = 0;

	*base = 0;
	for (i = 0; i < n; i++) {
		if (xfdr_trace_threads(in[i].t, &threads, &err) ||
		    timeline_base_tsc(in[i].t, &b, &err)) {
			fprintf(stderr, "%s\n", err.text);
			return -1;
		}
		if (!xfdr_trace_header(in[i].t)->cycle_frequency)
			cli_error("%s: the header's cycle_frequency is 0: times assume 1 GHz",
				  xfdr_trace_name(in[i].t));
		if (threads && (!any || b < *base))
			*base = b;
		any |= threads != 0;
	}
	return 0;
}

void cli_timeline_failed(struct xfdr_trace *t, int rc, const struct xfdr_error *err)
{
	if (rc == TIMELINE_FAILED)
		fprintf(stderr, "%s\n", err->text);
	else if (rc == TIMELINE_NO_MEMORY)
		cli_error("%s: out of memory", xfdr_trace_name(t));
}

int cli_timeline_threads(const struct cli_input *in, size_t n, struct xfdr_trace ***traces,
			 size_t **input_of, size_t *total)
{
	struct xfdr_trace **t = calloc(n ? n : 1, sizeof(*t));
	size_t *of = NULL, j, k;
	struct xfdr_error err;
	uint64_t threads, i;

	*total = 0;
	for (j = 0; t && j < n; j++) {
		t[j] = in[j].t;
		if (xfdr_trace_threads(t[j], &threads, &err)) {
			cli_timeline_failed(t[j], TIMELINE_FAILED, &err);
			free(t);
			return -1;
		}
		*total += (size_t)threads;
	}
	if (!t || !(of = malloc((*total ? *total : 1) * sizeof(*of)))) {
		cli_error("out of memory");
		free(t);
		return -1;
	}
	for (j = k = 0; j < n; j++) {
		xfdr_trace_threads(t[j], &threads, &err);
		for (i = 0; i < threads; i++)
			of[k++] = j;
	}
	*traces = t;
	*input_of = of;
	return 0;
}

int cli_pids_note(struct cli_pids *s, uint32_t pid)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->pid[i] == pid)
			return 1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		uint32_t *v = realloc(s->pid, cap * sizeof(*v));

		if (!v) {
			cli_error("out of memory");
			return -1;
		}
		s->pid = v;
		s->cap = cap;
	}
	s->pid[s->n++] = pid;
	return 0;
}

void cli_source_notes(const struct srcline *s)
{
	const char *module, *why;
	size_t i;

	for (i = 0; s && srcline_failed(s, i, &module, &why); i++)
		cli_error("note: no source lines from %s: %s", module, why);
}
