/*
 * command/flame.c - `xfdr flame`: a flame graph of a trace as one self-contained SVG.
 *
 * The stack tree (stacktree.h) drawn the classic way: the whole trace ("all") at the bottom,
 * each frame above its caller, as wide as the time spent in it and its callees (the self
 * time of its subtree, so the callees never stick out and each level adds up to at most its
 * caller), callees left to right by name. Every frame carries a <title> tooltip with its
 * name, its time (from the header's cycle_frequency), its share of the whole and, for a
 * function, its self time and number of calls.
 *
 * Size: a frame narrower than --min-width pixels is not drawn, nor anything above it (all
 * narrower still); its time stays in its caller's width, so every width and sum is still
 * right. The number left out is said under the title. A label is written where the whole name
 * fits, or cut with ".." where at least three characters fit (monospace, so the fit is known
 * without measuring).
 *
 * One walk of the tree draws it (a spilled tree's runs are merged once): the frames go to a
 * temporary file, and follow the header once their deepest level, hence the graph's height,
 * is known; they are placed from the bottom (y upwards from 0), in a group moved down by the
 * height. A differential graph's colours are scaled by the largest change drawn, so it is
 * walked twice: once to measure, once to draw.
 *
 * Markup: one frame per line, always in the same form, so the file is also easy to read back
 * (the tests do):
 *   <g><title>TEXT</title><rect class="f" x=".." y=".." width=".." height=".." fill="rgb(..)"/>
 *   [<text x=".." y="..">LABEL</text>]</g>
 * Names are escaped for XML, control characters and bytes that are not UTF-8 become '?'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/srcline.h"
#include "analysis/stacktree.h"
#include "analysis/tempfile.h"
#include "command/cli.h"
#include "command/flame_diff.h"
#include "command/option_table.h"

#define XPAD 10.0
#define FRAME_H 16
#define TOP_H 60
#define BOTTOM_H 10
#define FONT_PX 12
/* Advance of a 12 px monospace glyph (DejaVu Sans Mono: 0.602 em), rounded up. */
#define CHAR_W 7.3

struct flame_opts {
	char **inputs; /* FILE operands, NULL-terminated */
	size_t ninputs;
	const char *output;
	const char *title;
	struct cli_map_choice names_from;
	int per_thread;
	struct cli_window_opts window;
	double width;
	double min_width;
	int diff; /* --diff: FILEs are BASE and NEW */
};

static const char flame_head[] =
    "usage: xfdr flame [-o OUT] [--width=PX] [--min-width=PX] [--title=TEXT]\n"
    "                  [--per-thread] [--since=WHEN] [--until=WHEN] [--thread=LIST]\n"
    "                  [--window=common|all] [--map=MAP | --no-map] FILE...\n"
    "       xfdr flame --diff [OPTIONS] BASE NEW\n"
    "\n"
    "Draw the calls of a trace as a flame graph, one self-contained SVG file (open it\n"
    "in a browser; hover over a frame for its name, time, share, self time and calls).\n"
    "Each frame is as wide as the time spent in it and its callees; callers below,\n"
    "callees above, by name. Names come from the .map sidecar ('#ID' when it does\n"
    "not name an id, '[unknown]' for calls a stack context did not name).\n"
    "Several FILEs (the traces of a process tree) make one graph: each process a\n"
    "tower on a frame 'pid P (PROGRAM, parent Q)' from its own .map.\n"
    "With --diff, a differential flame graph of two runs: NEW's frames, each coloured\n"
    "by how the time of its stack (the same names of frames) changed from BASE: red\n"
    "grew, blue shrank, the deepest colour for the largest change; the tooltip gives\n"
    "BASE's time and the change. Each run is read through its own window.\n";

static const char flame_tail[] =
    "Calls whose entry or exit is not in the trace are drawn with the time seen, as\n"
    "by 'xfdr stack'; one note on stderr counts them.\n"
    "Exit status: 0 done, 1 invalid trace or write error, 2 usage error or unreadable\n"
    "FILE.\n";

static int parse_width(void *width, const char *arg)
{
	if (cli_parse_number(arg, 200, 100000, width) < 0)
		return cli_usage("'--width' takes pixels from 200 to 100000, not '%s'", arg);
	return 0;
}

static int parse_min_width(void *min_width, const char *arg)
{
	if (cli_parse_number(arg, 0, 100000, min_width) < 0)
		return cli_usage("'--min-width' takes pixels from 0 to 100000, not '%s'", arg);
	return 0;
}

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_flame_opts(int argc, char **argv, struct flame_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write to OUT instead of standard output ('-')"),
	    CLI_OPT_CALL('w', "width", &o->width, parse_width, "PX",
			 "image width in pixels (default 1200; 200 to 100000)"),
	    CLI_OPT_CALL(0, "min-width", &o->min_width, parse_min_width, "PX",
			 "leave out frames narrower than PX pixels, and what is above\n"
			 "them (default 0.1; 0: every frame with any time); their\n"
			 "time stays in their caller's width"),
	    CLI_OPT_STRING(0, "title", &o->title, "TEXT",
			   "the title (default: 'Flame graph: FILE')"),
	    CLI_OPT_FLAG(0, "diff", &o->diff, 1,
			 "compare two runs, BASE and NEW: a differential flame graph"),
	    CLI_OPT_FLAG('t', "per-thread", &o->per_thread, 1,
			 "one tower per thread, 'thread N (NAME)' at its foot\n"
			 "(default: the threads merged)"),
	    CLI_OPT_WINDOW(&o->window, CLI_WINDOW_COMMON_HELP),
	    CLI_OPT_MAP_PLAIN(&o->names_from),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = flame_head,
	    .tail = flame_tail,
	    .column = 23,
	    .operands = CLI_SOME_OPERANDS,
	    .operand = "FILE",
	    .options = options,
	};
	int rc;

	memset(o, 0, sizeof(*o));
	o->window.tell_lost = 1;
	o->width = 1200;
	o->min_width = 0.1;
	rc = cli_options_parse(&cmd, argc, argv, &o->inputs);
	if (!rc)
		rc = cli_count_inputs(o->inputs, &o->names_from, &o->ninputs);
	if (!rc && o->diff && o->ninputs != 2)
		rc = cli_usage("--diff compares two FILEs, BASE and NEW (%zu given)", o->ninputs);
	return rc;
}

/* ---- text ------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Characters of s as put_xml() writes them. */
static size_t text_chars(const char *s, size_t n)
{
	size_t i = 0, chars = 0, k;

	while (i < n) {
		k = utf8_len((const unsigned char *)s + i, n - i);
		i += k ? k : 1;
		chars++;
	}
	return chars;
}

/* At most max_chars characters of s (n bytes), as XML character data or attribute text. */
static void put_xml(struct cli_out *o, const char *s, size_t n, size_t max_chars)
{
	size_t i = 0, k, chars = 0;

	while (i < n && chars < max_chars) {
		unsigned char c = (unsigned char)s[i];

		k = utf8_len((const unsigned char *)s + i, n - i);
		chars++;
		if (!k) {
			cli_putc(o, '?');
			i++;
			continue;
		}
		if (k > 1) {
			cli_put(o, s + i, k);
			i += k;
			continue;
		}
		i++;
		switch (c) {
		case '&':
			cli_puts(o, "&amp;");
			break;
		case '<':
			cli_puts(o, "&lt;");
			break;
		case '>':
			cli_puts(o, "&gt;");
			break;
		case '"':
			cli_puts(o, "&quot;");
			break;
		default:
			cli_putc(o, c < 0x20 || c == 0x7f ? '?' : (char)c);
		}
	}
}

static void put_xml_str(struct cli_out *o, const char *s)
{
	put_xml(o, s, strlen(s), SIZE_MAX);
}

/* ---- colours ---------------------------------------------------------------------------- */

/* A warm colour from the name, the same for the same name in every graph. */
static void frame_colour(const struct stree *t, const struct stree_frame *n, char *buf, size_t sz)
{
	size_t len, i;
	const char *s = stree_name(t, n->name, &len);
	uint32_t h = 2166136261u;
	unsigned a, b, c;

	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	a = h & 0xff;
	b = (h >> 8) & 0xff;
	c = (h >> 16) & 0xff;
	switch (n->kind) {
	case STREE_ROOT:
		snprintf(buf, sz, "rgb(200,200,190)");
		break;
	case STREE_THREAD:
		snprintf(buf, sz, "rgb(%u,%u,%u)", 90 + a % 60, 140 + b % 60, 200 + c % 55);
		break;
	case STREE_PROCESS:
		snprintf(buf, sz, "rgb(%u,%u,%u)", 90 + a % 50, 180 + b % 50, 120 + c % 50);
		break;
	case STREE_UNKNOWN:
		snprintf(buf, sz, "rgb(175,175,175)");
		break;
	default:
		snprintf(buf, sz, "rgb(%u,%u,%u)", 205 + a % 50, 60 + b % 170, c % 55);
	}
}

/* ---- drawing ---------------------------------------------------------------------------- */

struct flame {
	struct stree *t;
	const struct flame_opts *o;
	uint64_t hz;
	uint64_t total;	 /* incl_tsc of the root */
	double scale;	 /* pixels per tick */
	double *next_x;	 /* per depth: where the next callee starts */
	uint32_t levels; /* drawn levels, "all" included */
	uint64_t drawn, left_out, threads, processes;
	struct cli_out *out; /* NULL while measuring */
	const char **file;   /* per name: the function's source file (NULL: not known) */
	int *line;
	struct flame_diff *diff; /* --diff: BASE's times; the frame's, as visited: */
	uint64_t base_ns;
	int64_t change_ns;
	char why[256]; /* why a visit failed */
};

static void put_frame(struct flame *f, struct cli_out *o, const struct stree_frame *n, double x,
		      double w)
{
	char buf[160], self[64];
	size_t len, chars, fit;
	const char *name = stree_name(f->t, n->name, &len);
	double y = -BOTTOM_H - (double)(n->depth + 1) * FRAME_H;
	double pct = f->total ? 100.0 * (double)n->incl_tsc / (double)f->total : 100.0;

	cli_puts(o, "<g><title>");
	put_xml(o, name, len, SIZE_MAX);
	if (f->file && f->file[n->name]) {
		cli_puts(o, " at ");
		put_xml(o, f->file[n->name], strlen(f->file[n->name]), SIZE_MAX);
		cli_printf(o, ":%d", f->line[n->name]);
	}
	if (f->diff) {
		cli_duration(buf, sizeof(buf), f->base_ns, 1000000000u, CLI_DURATION_FULL);
		cli_printf(o, " [BASE %s, %s", buf, f->change_ns < 0 ? "-" : "+");
		cli_duration(buf, sizeof(buf),
			     (uint64_t)(f->change_ns < 0 ? -f->change_ns : f->change_ns),
			     1000000000u, CLI_DURATION_FULL);
		cli_printf(o, "%s]", buf);
	}
	cli_duration(buf, sizeof(buf), n->incl_tsc, f->hz, CLI_DURATION_FULL);
	cli_printf(o, " (%s, %.2f%%", buf, pct);
	if (n->kind == STREE_FUNCTION || n->kind == STREE_UNKNOWN) {
		cli_duration(self, sizeof(self), n->self_tsc, f->hz, CLI_DURATION_FULL);
		cli_printf(o, ", self %s, %llu call%s", self, (unsigned long long)n->calls,
			   n->calls == 1 ? "" : "s");
	}
	cli_printf(o,
		   ")</title><rect class=\"f\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" "
		   "height=\"%d\" fill=\"",
		   x, y, w, FRAME_H - 1);
	if (f->diff)
		flame_diff_colour(f->diff, f->change_ns, buf, sizeof(buf));
	else
		frame_colour(f->t, n, buf, sizeof(buf));
	cli_puts(o, buf);
	cli_puts(o, "\"/>");
	fit = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0;
	chars = text_chars(name, len);
	/* The whole name where it fits; cut, only when three characters show ("a.."). */
	if ((fit && chars <= fit) || fit >= 3) {
		cli_printf(o, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FRAME_H - 4.5);
		if (chars <= fit) {
			put_xml(o, name, len, SIZE_MAX);
		} else {
			put_xml(o, name, len, fit - 2);
			cli_puts(o, "..");
		}
		cli_puts(o, "</text>");
	}
	cli_puts(o, "</g>\n");
}

/*
 * One frame as it is drawn (stree_walk(): depth first, each callee placed right of the
 * previous one). While measuring (f->out NULL) only count levels, frames drawn, left out and
 * threads; else write the frame. The callees of a frame too narrow to draw are not visited.
 */
static int visit_frame(void *ctx, const struct stree_frame *path, uint32_t depth)
{
	struct flame *f = ctx;
	const struct stree_frame *n = &path[depth];
	double x, w;

	if (!depth) {
		f->total = n->incl_tsc;
		f->scale = f->total ? (f->o->width - 2 * XPAD) / (double)f->total : 0;
		f->next_x[0] = XPAD;
	}
	x = f->next_x[depth];
	w = !depth ? f->o->width - 2 * XPAD : (double)n->incl_tsc * f->scale;
	f->next_x[depth] = x + w;
	if (f->diff && flame_diff_visit(f->diff, f->t, path, depth, &f->base_ns, &f->change_ns,
					f->why, sizeof(f->why)))
		return -3;
	if (n->kind == STREE_THREAD)
		f->threads++;
	if (n->kind == STREE_PROCESS)
		f->processes++;
	if (!depth || (w > 0 && w >= f->o->min_width)) {
		if (f->out)
			put_frame(f, f->out, n, x, w);
		f->drawn++;
		if (depth + 1 > f->levels)
			f->levels = depth + 1;
		f->next_x[depth + 1] = x;
		return f->out && f->out->err ? -2 : 0;
	}
	if (w > 0)
		f->left_out++; /* a frame of no time has nothing to leave out */
	return STREE_SKIP;
}

/* Walk the tree with visit_frame(). CLI_OK, or CLI_FAIL after reporting. */
static int walk(struct flame *f)
{
	char why[256];

	f->drawn = f->left_out = f->threads = f->processes = 0;
	switch (stree_walk(f->t, visit_frame, f, why, sizeof(why))) {
	case -1:
		cli_error("%s", why);
		return CLI_FAIL;
	case -3:
		cli_error("%s", f->why);
		return CLI_FAIL;
	}
	return CLI_OK;
}

/* What a graph shows beside its tree: the window, source lines, a comparison's colours. */
struct flame_view {
	const struct cli_window *w; /* NULL with --diff (each run had its own) */
	uint64_t hz;
	const char **file;
	int *line;
	struct flame_diff *diff;
};

/* The title and the line under it. */
static void put_title(struct cli_out *o, const struct flame_opts *opt, const struct flame_view *v,
		      const struct flame *f)
{
	const char *base;
	char when[128];

	cli_printf(o, "<text class=\"title\" x=\"%.1f\" y=\"24\">", opt->width / 2);
	if (opt->title) {
		put_xml_str(o, opt->title);
	} else if (opt->diff) {
		cli_puts(o, "Differential flame graph: ");
		put_xml_str(o, opt->inputs[1]);
		cli_puts(o, " against ");
		put_xml_str(o, opt->inputs[0]);
		cli_puts(o, " (red grew, blue shrank)");
	} else {
		base = strrchr(opt->inputs[0], '/');
		cli_puts(o, "Flame graph: ");
		put_xml_str(o, base ? base + 1 : opt->inputs[0]);
		if (opt->ninputs > 1)
			cli_printf(o, " and %zu more", opt->ninputs - 1);
	}
	if (v->w && v->w->narrowed) {
		cli_puts(o, ", ");
		put_xml_str(o, cli_window_text(v->w, when, sizeof(when)));
		if (v->w->common)
			cli_puts(o, " (common window)");
	}
	cli_puts(o, "</text>\n");
	cli_duration(when, sizeof(when), f->total, v->hz, CLI_DURATION_FULL);
	cli_printf(o, "<text class=\"sub\" x=\"%.1f\" y=\"44\">total %s in %llu calls",
		   opt->width / 2, when, (unsigned long long)f->t->stats.calls);
	if (opt->per_thread)
		cli_printf(o, " of %llu thread%s", (unsigned long long)f->threads,
			   f->threads == 1 ? "" : "s");
	if (f->processes)
		cli_printf(o, "%s %llu processes", opt->per_thread ? " in" : " of",
			   (unsigned long long)f->processes);
	if (f->left_out)
		cli_printf(o, "; %llu frames narrower than %g px not drawn",
			   (unsigned long long)f->left_out, opt->min_width);
	if (!f->total)
		cli_puts(o, "; no time recorded");
	cli_puts(o, "</text>\n");
}

/* The frames' temporary file, as an output. NULL after reporting. */
static struct cli_out *body_open(void)
{
	struct cli_out *b = malloc(sizeof(*b));
	int fd = temp_file_open("flame");

	if (!b || fd < 0 || !(b->f = fdopen(fd, "w+"))) {
		cli_error("%s", !b ? "out of memory"
				   : "cannot make a temporary file in $TMPDIR (else /tmp)");
		if (fd >= 0)
			close(fd);
		free(b);
		return NULL;
	}
	b->name = "a temporary file in $TMPDIR (else /tmp)";
	b->is_stdout = 0;
	b->err = 0;
	b->flushed = 0;
	b->len = 0;
	return b;
}

/* The frames written to b copied into o; b closed. CLI_OK, or CLI_FAIL after reporting. */
static int body_copy(struct cli_out *b, struct cli_out *o)
{
	char buf[1 << 16];
	size_t n;
	int status;

	cli_out_flush(b);
	if (!b->err && (fflush(b->f) || fseek(b->f, 0, SEEK_SET)))
		b->err = errno ? errno : EIO;
	while (!b->err && (n = fread(buf, 1, sizeof(buf), b->f)) > 0)
		cli_put(o, buf, n);
	if (!b->err && ferror(b->f))
		b->err = EIO;
	status = cli_out_close(b);
	free(b);
	return status;
}

static int draw(struct stree *t, const struct flame_opts *opt, const struct flame_view *v,
		struct cli_out *o)
{
	struct flame f = {
	    .t = t, .o = opt, .hz = v->hz, .file = v->file, .line = v->line, .diff = v->diff};
	struct cli_out *body = NULL;
	double height;
	char why[256];
	int status = CLI_FAIL;

	f.next_x = malloc(((size_t)t->max_depth + 2) * sizeof(*f.next_x));
	if (!f.next_x) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	if (f.diff) {
		/* Two walks (measure, draw): merge a spilled tree's runs once, not twice. */
		if (stree_compact(t, why, sizeof(why)) < 0) {
			cli_error("%s", why);
			goto out;
		}
	} else {
		body = f.out = body_open();
		if (!body)
			goto out;
	}
	if (walk(&f) != CLI_OK)
		goto out;
	height = TOP_H + (double)f.levels * FRAME_H + BOTTOM_H;
	cli_printf(o,
		   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
		   "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
		   opt->width, height, opt->width, height);
	cli_printf(o,
		   "<style>text{font-family:\"DejaVu Sans Mono\",monospace;font-size:%dpx;"
		   "fill:#000}rect.f:hover{stroke:#000;stroke-width:0.5}"
		   ".title{font-size:17px;text-anchor:middle}"
		   ".sub{fill:#555;text-anchor:middle}</style>\n",
		   FONT_PX);
	cli_printf(o, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#f7f7f0\"/>\n",
		   opt->width, height);
	put_title(o, opt, v, &f);
	cli_printf(o, "<g transform=\"translate(0,%.0f)\">\n", height);
	if (f.diff) {
		f.out = o;
		if (walk(&f) != CLI_OK)
			goto out;
	} else {
		status = body_copy(body, o);
		body = NULL;
		if (status != CLI_OK)
			goto out;
	}
	cli_puts(o, "</g>\n</svg>\n");
	status = CLI_OK;
out:
	if (body) {
		cli_out_close(body);
		free(body);
	}
	free(f.next_x);
	return status;
}

/* The tree to draw (with --diff, BASE's too: t[0], NEW's t[1]). Returns CLI_OK or a status. */
static int build(const struct flame_opts *opt, const struct cli_input *in, struct stree *t,
		 struct cli_window *w, struct cli_progress *prog)
{
	int status;

	if (opt->diff)
		return cli_stree_build_runs(&opt->window, in, opt->per_thread, t, prog);
	status = cli_window_resolve(&opt->window, in, opt->ninputs, w);
	return status ? status : cli_stree_build(t, in, opt->ninputs, opt->per_thread, w, prog);
}

/*
 * Tooltips name each function's source (the DWARF of the module the .map puts it in), and with
 * --diff the frames are coloured against BASE. Returns 0, or CLI_FAIL after reporting.
 */
static int prepare_view(const struct flame_opts *opt, const struct cli_input *in, struct stree *t,
			struct stree *shown, struct srcline *lines, struct flame_view *v)
{
	char why[256];

	v->file = calloc((size_t)shown->name_count + 1, sizeof(*v->file));
	v->line = calloc((size_t)shown->name_count + 1, sizeof(*v->line));
	if (!lines || !v->file || !v->line ||
	    cli_stree_sources(shown, NULL, in[opt->ninputs - 1].names, lines, v->file, v->line) <
		0) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	if (opt->diff) {
		v->diff = flame_diff_new(&t[0], xfdr_trace_header(in[0].t)->cycle_frequency, v->hz,
					 why, sizeof(why));
		if (!v->diff) {
			cli_error("%s", why);
			return CLI_FAIL;
		}
	}
	return 0;
}

int cmd_flame(int argc, char **argv)
{
	struct flame_opts opt;
	struct cli_input *in = NULL;
	struct cli_out *out = NULL;
	struct cli_progress prog = {0}; /* ended on every path, begun or not */
	char note[640];
	struct cli_window w = {0};
	struct flame_view v = {0};
	struct srcline *lines = NULL;
	struct stree t[2], *shown = &t[0];
	size_t trees = 0, i;
	int status;

	status = parse_flame_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_inputs_open(opt.inputs, opt.ninputs, opt.output, &opt.names_from, &prog, &in);
	if (!status)
		status = build(&opt, in, t, &w, &prog);
	if (status)
		goto out;
	trees = opt.diff ? 2 : 1;
	shown = &t[trees - 1];
	v.w = opt.diff ? NULL : &w;
	v.hz = xfdr_trace_header(in[trees - 1].t)->cycle_frequency;
	status = CLI_FAIL;
	out = cli_out_new(opt.output);
	if (!out)
		goto out;
	/* The notes only once the output is made: a bad -o gives one error line, nothing else. */
	for (i = 0; i < trees; i++)
		if (stree_incomplete_note(&t[i], note, sizeof(note)))
			cli_error("%s%s", opt.diff ? (i ? "NEW: " : "BASE: ") : "", note);
	lines = srcline_new();
	if (prepare_view(&opt, in, t, shown, lines, &v) == 0)
		status = draw(shown, &opt, &v, out);
	if (cli_out_close(out) != CLI_OK)
		status = CLI_FAIL;
	cli_source_notes(lines);
out:
	cli_progress_end(&prog);
	free(out);
	flame_diff_free(v.diff);
	srcline_free(lines);
	free(v.file);
	free(v.line);
	for (i = 0; i < trees; i++)
		stree_free(&t[i]);
	cli_window_free(&w);
	cli_inputs_close(in, opt.ninputs);
	return status;
}
