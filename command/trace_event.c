/*
 * command/trace_event.c - `xfdr convert --output-format=trace_event`: a verified trace as
 * Chrome Trace Event JSON, the format ui.perfetto.dev and chrome://tracing open.
 *
 * Output: {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}, one event per line.
 *   - Each function call is a "B" event at its entry and an "E" event at its exit (not one "X"
 *     event: an "X" needs the exit before it can be written, so a thread's open calls would
 *     have to be held back; B/E streams with memory bounded by the stack depth).
 *   - "name": the function's name from the .map sidecar; an id it does not name is "#ID"; with
 *     no sidecar every function is its id ("ID", as llvm-xray prints it).
 *   - "pid" and "tid": the process and thread as the system knew them, where the .map sidecar
 *     says: its `pid` line, and the kernel tid of the thread's `thread` line. Without them, as
 *     llvm-xray prints them: the buffer's Pid record (versions 3+ of compiler-rt's writer), else
 *     1 (version 1, what xfdr writes, and version 2); the thread id of the thread's NewBuffer
 *     records. The thread_name event's args.xfdr_thread is that NewBuffer id (what --thread
 *     and `xfdr dump` take).
 *   - "ts": microseconds, a number with three decimals (nanoseconds rounded to the nearest),
 *     since the trace's first TSC, the lowest TSC of the first events of its threads, at the
 *     header's cycle_frequency (1 GHz when the header says 0). Relative times keep the
 *     numbers small, so that the double a viewer parses them into still holds nanoseconds
 *     (absolute TSCs in microseconds need more than its 53 bits). otherData.tsc_base is that
 *     TSC: absolute TSC = tsc_base + ts * cycle_frequency / 10^6. Timestamps never go down on
 *     a thread: an event with a lower TSC than the thread's previous event is shown at the
 *     previous one's time, so the calls still nest.
 *   - "M" metadata: process_name (the sidecar's `program` for its pid, else the trace file's
 *     name; args.ppid: the sidecar's `ppid`, the parent) for each process, thread_name for each
 *     thread the sidecar names.
 *   - Several files (the processes of a tree `xfdr record` followed) are one timeline: one
 *     after the other, "ts" on one clock (the machine's TSC, since the lowest first TSC of all
 *     of them, each file at its own rate); otherData.traces lists them.
 *   - Entry_Args arguments: "args":{"arg0":V,...}; V is a number up to 2^53 (what a viewer's
 *     double holds exactly), a string of its decimal digits above.
 *   - Custom events are instant events ("ph":"i","s":"t") on their thread: xfdr's own decoded
 *     (XFDRDROP drop counts, XFDRSTAK stack context, XFDRCRSH crash with its backtrace named
 *     from the sidecar's `frame` lines); any other payload as "size", "text" (its first 256
 *     bytes, trailing NULs dropped, as UTF-8 with invalid bytes as U+FFFD) and "hex" (its first
 *     64 bytes). A payload of xfdr's that does not decode is shown the same way, with "error".
 *     Typed events (compiler-rt's versions 3+) likewise, with their "type".
 *   - Strings are escaped for JSON: quotes, backslashes and control characters; bytes that are
 *     not valid UTF-8 (in names, payloads) become U+FFFD.
 *
 * Pairing and windows are analysis/timeline.h's: every "B" gets its "E", on its thread,
 * innermost first, with non-decreasing times. Each "E" carries exactly its "B"'s args (or none,
 * as its "B"): speedscope matches an "E" to the open "B" by name and JSON of its args, and warns
 * for every one that differs (Perfetto and chrome://tracing merge the two, so nothing is shown
 * twice). A slice that did not begin with its own entry says how in args.xfdr_begin ("stack
 * context", "before trace", "before window"). One that did not end with its own exit is
 * followed, at its end, by an instant "end: HOW" (HOW: "tail exit", "unwound", "stack
 * context", "trace edge") with args.function. Calls a stack context counts but does not name
 * are "(unknown)" (args.reason; args.unnamed_calls for a run shown as one slice); when an exit
 * ends one, an instant "end: exit" or "end: tail exit" names it in args.exit_function. --since
 * keeps the same ts base as without it.
 *
 * Split (--split-size, command/split_out.h): every thread of every input walked together in
 * time order (timeline_walk_by_time()), into consecutive files, each a whole document: its own
 * process_name and thread_name events, a call open at a cut ended there ("E" with its "B"'s
 * args, then an instant "end: split") and begun again first thing in the next part
 * (args.xfdr_begin "split"), and its own otherData: its "part" number and the counts of what
 * it holds ("calls_split": the slices it ended at its cut).
 *
 * Memory: the timeline's (the open calls of one thread; split, of every thread), the args of
 * the open calls' "B" events, and the output buffer. Nothing grows with the number of records.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/srcline.h"
#include "command/cli.h"
#include "command/split_out.h"
#include "analysis/timeline.h"

#define TE_TEXT_BYTES 256u	  /* of an arbitrary payload, shown as text */
#define TE_HEX_BYTES 64u	  /* of an arbitrary payload, shown in hex */
#define TE_EXACT_MAX (1ull << 53) /* larger numbers are written as strings */
#define TE_NS_PER_S 1000000000u

/* The output: the whole timeline, or one file of a split one (--split-size). */
struct te_out {
	struct cli_out *o;
	struct split_out *split; /* NULL: one output */
	const struct cli_input *in;
	size_t nin;
	const struct window *win; /* each input's (NULL: all) */
	uint64_t base;
	struct srcline *src;	       /* functions' source lines (analysis/srcline.h) */
	int any;		       /* an event is written: the next one needs a comma */
	struct cli_pids named;	       /* the pids whose process_name is written */
	struct timeline_counts before; /* split: what the files before this one hold */
	int failed;		       /* out of memory, or a file of a split one: reported */
};

/* A thread being written (the threads in turn, or, split, each thread of all). */
struct te {
	struct te_out *w;
	struct cli_timeline_file file; /* its input */
	/* Its pid and tid as shown, its NewBuffer id and its name. */
	uint32_t pid, tid, thread_id;
	const char *thread_name;
	/* The args objects of the open slices' "B" events, innermost last, for their "E". */
	char *open_args;
	size_t open_args_len, open_args_cap;
	uint32_t *open_bytes; /* each open slice's bytes of open_args (0: no args) */
	uint32_t open_depth, open_max;
};

/* ---- JSON ------------------------------------------------------------------------------- */

/* The bytes s[0, n) inside a JSON string (no quotes). */
static void json_esc(struct cli_out *o, const uint8_t *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, len;

	while (i < n) {
		uint8_t c = s[i];

		if (c == '"' || c == '\\') {
			cli_putc(o, '\\');
			cli_putc(o, (char)c);
			i++;
		} else if (c == '\n') {
			cli_puts(o, "\\n");
			i++;
		} else if (c == '\t') {
			cli_puts(o, "\\t");
			i++;
		} else if (c == '\r') {
			cli_puts(o, "\\r");
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

			cli_put(o, u, sizeof(u));
			i++;
		} else if ((len = cli_utf8_len(s + i, n - i)) != 0) {
			cli_put(o, s + i, len);
			i += len;
		} else {
			cli_puts(o, "\\ufffd");
			i++;
		}
	}
}

static void json_str(struct cli_out *o, const char *s)
{
	cli_putc(o, '"');
	json_esc(o, (const uint8_t *)s, strlen(s));
	cli_putc(o, '"');
}

/* A u64 a viewer reads exactly: a number up to 2^53, else a string of its digits. */
static void json_u64(struct cli_out *o, uint64_t v)
{
	if (v <= TE_EXACT_MAX) {
		cli_put_u64(o, v);
		return;
	}
	cli_putc(o, '"');
	cli_put_u64(o, v);
	cli_putc(o, '"');
}

static void json_hex(struct cli_out *o, uint64_t v)
{
	cli_printf(o, "\"0x%" PRIx64 "\"", v);
}

/* `"key":` of an object; *n counts the members so far (for the commas). */
static void json_key(struct cli_out *o, int *n, const char *key)
{
	if ((*n)++)
		cli_putc(o, ',');
	cli_putc(o, '"');
	cli_puts(o, key);
	cli_puts(o, "\":");
}

static void arg_u64(struct cli_out *o, int *n, const char *key, uint64_t v)
{
	json_key(o, n, key);
	json_u64(o, v);
}

static void arg_str(struct cli_out *o, int *n, const char *key, const char *v)
{
	json_key(o, n, key);
	json_str(o, v);
}

/* ---- Times and names -------------------------------------------------------------------- */

/* Microseconds since s->w->base with three decimals: nanoseconds, rounded to the nearest. */
static void put_ts(struct te *s, uint64_t tsc)
{
	unsigned __int128 ns =
	    ((unsigned __int128)(tsc - s->w->base) * TE_NS_PER_S + s->file.hz / 2) / s->file.hz;
	unsigned __int128 us = ns / 1000;
	char digits[48];
	size_t i = sizeof(digits);
	unsigned frac = (unsigned)(ns % 1000);

	/* The decimals first, written backwards, then the integer part. */
	digits[--i] = (char)('0' + frac % 10);
	digits[--i] = (char)('0' + frac / 10 % 10);
	digits[--i] = (char)('0' + frac / 100);
	digits[--i] = '.';
	do {
		digits[--i] = (char)('0' + (unsigned)(us % 10));
		us /= 10;
	} while (us);
	cli_put(s->w->o, digits + i, sizeof(digits) - i);
}

/* A function's name as a JSON string (see the top of the file). */
static void put_fname(struct te *s, uint32_t fid)
{
	char buf[16];

	json_str(s->w->o, fid == TIMELINE_UNNAMED
			      ? "(unknown)"
			      : cli_function_name(s->file.names, fid, buf, sizeof(buf)));
}

/* `{"name":NAME,"cat":CAT,"ph":PH,"pid":P,"tid":T,"ts":TS` of one event (after a comma). */
static void event_head(struct te *s, uint32_t fid, const char *name, const char *cat,
		       const char *ph, uint64_t tsc)
{
	struct cli_out *o = s->w->o;

	cli_puts(o, s->w->any ? ",\n{\"name\":" : "{\"name\":");
	s->w->any = 1;
	if (name)
		json_str(o, name);
	else
		put_fname(s, fid);
	cli_puts(o, ",\"cat\":\"");
	cli_puts(o, cat);
	cli_puts(o, "\",\"ph\":\"");
	cli_puts(o, ph);
	cli_puts(o, "\",\"pid\":");
	cli_put_u64(o, s->pid);
	cli_puts(o, ",\"tid\":");
	cli_put_u64(o, s->tid);
	cli_puts(o, ",\"ts\":");
	put_ts(s, tsc);
}

/* ---- Writing calls ------------------------------------------------------------------------- */

static void te_no_memory(struct te *s)
{
	if (!s->w->failed)
		cli_error("%s: out of memory", xfdr_trace_name(s->file.t));
	s->w->failed = 1;
}

/* Appends n bytes to the open slices' args (a failure is reported and stops the walk). */
static void open_args_put(struct te *s, const char *p, size_t n)
{
	if (n > s->open_args_cap - s->open_args_len) {
		size_t cap = s->open_args_cap ? 2 * s->open_args_cap : 4096;
		char *grown;

		while (cap - s->open_args_len < n)
			cap *= 2;
		if (!(grown = realloc(s->open_args, cap))) {
			te_no_memory(s);
			return;
		}
		s->open_args = grown;
		s->open_args_cap = cap;
	}
	memcpy(s->open_args + s->open_args_len, p, n);
	s->open_args_len += n;
}

/* `"key":"v"` or `"key":N` into the args being built; *n counts the members so far. */
static void open_arg(struct te *s, int *n, const char *key, const char *v, uint64_t u)
{
	char num[32];
	int len;

	open_args_put(s, *n ? ",\"" : "{\"", 2);
	(*n)++;
	open_args_put(s, key, strlen(key));
	open_args_put(s, "\":", 2);
	if (v) { /* the fixed ASCII texts of this file: nothing to escape */
		open_args_put(s, "\"", 1);
		open_args_put(s, v, strlen(v));
		open_args_put(s, "\"", 1);
		return;
	}
	/* As json_u64(): a number up to 2^53, else a string of its digits. */
	len = snprintf(num, sizeof(num), u <= TE_EXACT_MAX ? "%" PRIu64 : "\"%" PRIu64 "\"", u);
	open_args_put(s, num, (size_t)len);
}

/*
 * A slice's "args": "src" (FILE:LINE of fid's first instruction, FILE's base name; when the
 * DWARF of its module says) and the members of args (n bytes, "{...}"; 0: none). Nothing
 * when both are empty. "B" and "E" get the same.
 */
static void put_args(struct te *s, uint32_t fid, const char *args, size_t n)
{
	struct cli_out *o = s->w->o;
	const char *file, *base;
	char num[16];
	int line;

	if (fid != TIMELINE_UNNAMED && s->w->src &&
	    srcline_function(s->w->src, s->file.names, fid, &file, &line, NULL)) {
		base = strrchr(file, '/');
		base = base ? base + 1 : file;
		cli_puts(o, ",\"args\":{\"src\":\"");
		json_esc(o, (const uint8_t *)base, strlen(base));
		cli_put(o, num, (size_t)snprintf(num, sizeof(num), ":%d\"", line));
		if (n) {
			cli_putc(o, ',');
			cli_put(o, args + 1, n - 1);
		} else {
			cli_putc(o, '}');
		}
		return;
	}
	if (n) {
		cli_puts(o, ",\"args\":");
		cli_put(o, args, n);
	}
}

/* "B" of a slice (timeline_ops.begin). Its args are kept for its "E". */
static void te_begin(void *ctx, uint32_t fid, uint64_t tsc, enum tl_begin how,
		     const struct xfdr_event *ev, uint32_t calls)
{
	struct te *s = ctx;
	struct cli_out *o = s->w->o;
	size_t start = s->open_args_len;
	int n = 0;
	uint32_t i;

	if (s->open_depth == s->open_max) {
		uint32_t max = s->open_max ? 2 * s->open_max : 256;
		uint32_t *grown = realloc(s->open_bytes, max * sizeof(*grown));

		if (!grown) {
			te_no_memory(s);
			return;
		}
		s->open_bytes = grown;
		s->open_max = max;
	}
	if (how != TL_BEGIN_ENTRY)
		open_arg(s, &n, "xfdr_begin", timeline_begin_name[how], 0);
	if (fid == TIMELINE_UNNAMED)
		open_arg(s, &n, "reason", "deeper than the ids the stack context holds", 0);
	if (calls > 1)
		open_arg(s, &n, "unnamed_calls", NULL, calls);
	for (i = 0; ev && i < ev->arg_count; i++) {
		char key[24];

		snprintf(key, sizeof(key), "arg%" PRIu32, i);
		open_arg(s, &n, key, NULL, xfdr_event_arg(s->file.t, ev, i));
	}
	if (n)
		open_args_put(s, "}", 1);
	if (s->w->failed)
		return;
	s->open_bytes[s->open_depth++] = (uint32_t)(s->open_args_len - start);
	event_head(s, fid, NULL, "function", "B", tsc);
	/* open_args is NULL until some slice had arguments: no pointer to none */
	put_args(s, fid, n ? s->open_args + start : NULL, s->open_args_len - start);
	cli_putc(o, '}');
}

/*
 * "E" of a slice (timeline_ops.end), with its "B"'s args; an end that was not the slice's own
 * exit, or that named an unnamed call, is said by an instant after it.
 */
static void te_end(void *ctx, uint32_t fid, uint64_t tsc, enum tl_end how, uint32_t exit_fid)
{
	struct te *s = ctx;
	struct cli_out *o = s->w->o;
	char title[32];
	uint32_t bytes;
	int n = 0;

	if (s->w->failed)
		return; /* its "B" was not written */
	bytes = s->open_bytes[--s->open_depth];
	s->open_args_len -= bytes;
	event_head(s, fid, NULL, "function", "E", tsc);
	put_args(s, fid, bytes ? s->open_args + s->open_args_len : NULL, bytes);
	cli_putc(o, '}');
	if (how == TL_END_EXIT && fid != TIMELINE_UNNAMED)
		return;
	snprintf(title, sizeof(title), "end: %s",
		 how == TL_END_EXIT ? "exit" : timeline_end_name[how]);
	event_head(s, 0, title, "xfdr", "i", tsc);
	cli_puts(o, ",\"s\":\"t\",\"args\":{");
	json_key(o, &n, "function");
	put_fname(s, fid);
	if (fid == TIMELINE_UNNAMED && how <= TL_END_TAIL_EXIT) {
		json_key(o, &n, "exit_function");
		put_fname(s, exit_fid);
	}
	cli_puts(o, "}}");
}

/* ---- Custom and typed events --------------------------------------------------------------- */

/* "size", "text" and "hex" of a payload (see the top of the file). */
static void payload_args(struct cli_out *o, int *n, const uint8_t *p, uint32_t bytes)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t text = bytes < TE_TEXT_BYTES ? bytes : TE_TEXT_BYTES;
	uint32_t nhex = bytes < TE_HEX_BYTES ? bytes : TE_HEX_BYTES, i;

	arg_u64(o, n, "size", bytes);
	while (text && !p[text - 1])
		text--;
	json_key(o, n, "text");
	cli_putc(o, '"');
	json_esc(o, p, text);
	cli_putc(o, '"');
	json_key(o, n, "hex");
	cli_putc(o, '"');
	for (i = 0; i < nhex; i++) {
		cli_putc(o, hex[p[i] >> 4]);
		cli_putc(o, hex[p[i] & 15]);
	}
	cli_putc(o, '"');
	if (bytes > TE_TEXT_BYTES)
		arg_str(o, n, "truncated", "yes");
}

/* The counts of a decoded XFDRDROP event. */
static void drop_args(struct cli_out *o, int *n, const struct xfdr_drop_event *d)
{
	struct xfdr_drop_thread e;
	uint32_t i;

	arg_u64(o, n, "no_buffer", d->no_buffer);
	arg_u64(o, n, "reentrant", d->reentrant);
	arg_u64(o, n, "too_large", d->too_large);
	arg_u64(o, n, "no_thread_slot", d->no_thread_slot);
	arg_u64(o, n, "threads_omitted", d->threads_omitted);
	arg_u64(o, n, "overwritten", d->overwritten);
	json_key(o, n, "threads");
	cli_putc(o, '[');
	for (i = 0; i < d->thread_count; i++) {
		int m = 0;

		xfdr_drop_event_thread(d, i, &e);
		cli_puts(o, i ? ",{" : "{");
		arg_u64(o, &m, "tid", e.tid);
		arg_u64(o, &m, "thread_id", e.thread_id);
		arg_u64(o, &m, "no_buffer", e.no_buffer);
		arg_u64(o, &m, "reentrant", e.reentrant);
		arg_u64(o, &m, "too_large", e.too_large);
		arg_u64(o, &m, "overwritten", e.overwritten);
		cli_putc(o, '}');
	}
	cli_putc(o, ']');
}

/* The frames of a crash, innermost first, each "#I 0xPC SYMBOL (MODULE+0xVADDR)". */
static void crash_frames(struct te *s, const struct xfdr_crash_event *ce)
{
	struct cli_out *o = s->w->o;
	struct cli_frame_text f;
	uint32_t i;

	cli_putc(o, '[');
	for (i = 0; i < ce->frame_count; i++) {
		cli_crash_frame(s->file.names, ce, i, &f);
		cli_puts(o, i ? ",\"" : "\"");
		cli_puts(o, f.head);
		if (f.symbol) {
			cli_putc(o, ' ');
			json_esc(o, (const uint8_t *)f.symbol, strlen(f.symbol));
		}
		if (f.module) {
			cli_puts(o, " (");
			json_esc(o, (const uint8_t *)f.module, strlen(f.module));
			if (f.have_module_vaddr)
				cli_printf(o, "+0x%" PRIx64, f.module_vaddr);
			cli_putc(o, ')');
		}
		cli_putc(o, '"');
	}
	cli_putc(o, ']');
}

/* An XFDRCRSH event, whole. */
static void put_crash(struct te *s, const struct xfdr_crash_event *ce, uint64_t tsc)
{
	struct cli_out *o = s->w->o;
	char buf[32], title[64];
	const char *sig = cli_signal_name(s->file.names, ce->signal, buf, sizeof(buf));
	int n = 0;

	if (*sig)
		snprintf(title, sizeof(title), "crash %s", sig);
	else
		snprintf(title, sizeof(title), "crash signal %" PRIu32, ce->signal);
	event_head(s, 0, title, "xfdr", "i", tsc);
	cli_puts(o, ",\"s\":\"t\",\"args\":{");
	arg_u64(o, &n, "signal", ce->signal);
	arg_str(o, &n, "signal_name", sig);
	json_key(o, &n, "code");
	cli_printf(o, "%" PRId32, ce->code);
	arg_u64(o, &n, "tid", ce->tid);
	json_key(o, &n, "fault_addr");
	json_hex(o, ce->fault_addr);
	arg_u64(o, &n, "frame_count", ce->frame_count);
	if (ce->flags & XFDR_CRASH_TRUNCATED)
		arg_str(o, &n, "truncated", "yes (the stack had more frames)");
	json_key(o, &n, "backtrace");
	crash_frames(s, ce);
	cli_puts(o, "}}");
}

/* An XFDRSTAK event: the stack it holds, and what it did to the open calls (timeline_ops.context).
 */
static void te_context(void *ctx, const struct xfdr_stack_context *c, uint64_t tsc, int replaced)
{
	struct te *s = ctx;
	struct cli_out *o = s->w->o;
	uint32_t i;
	int n = 0;

	event_head(s, 0, "stack context", "xfdr", "i", tsc);
	cli_puts(o, ",\"s\":\"t\",\"args\":{");
	arg_u64(o, &n, "depth", c->depth);
	arg_u64(o, &n, "ids_known", c->id_count);
	arg_str(o, &n, "open_calls",
		replaced ? "rebuilt from the context" : "agree with the context");
	json_key(o, &n, "stack");
	cli_putc(o, '[');
	for (i = 0; i < c->id_count; i++) {
		if (i)
			cli_putc(o, ',');
		put_fname(s, c->ids[i]);
	}
	cli_puts(o, "]}}");
}

/* A payload shown as text and hex, with why it was not decoded (NULL: not one of ours). */
static void put_payload(struct te *s, const char *title, const char *cat,
			const struct xfdr_event *ev, uint64_t tsc, const char *why)
{
	struct cli_out *o = s->w->o;
	int n = 0;

	event_head(s, 0, title, cat, "i", tsc);
	cli_puts(o, ",\"s\":\"t\",\"args\":{");
	if (ev->type == XFDR_EVENT_TYPED)
		arg_u64(o, &n, "type", ev->event_type);
	if (why)
		arg_str(o, &n, "error", why);
	payload_args(o, &n, ev->payload ? ev->payload : (const uint8_t *)"", ev->payload_bytes);
	cli_puts(o, "}}");
}
/* Any other custom or typed event (timeline_ops.event). */
static void te_event(void *ctx, const struct xfdr_event *ev, uint64_t tsc, const char *why)
{
	struct te *s = ctx;
	const uint8_t *p = ev->payload;
	uint32_t bytes = ev->payload_bytes;
	struct xfdr_error err;
	int big = ev->big_endian;

	if (ev->type == XFDR_EVENT_TYPED) {
		put_payload(s, "typed event", "typed", ev, tsc, NULL);
		return;
	}
	if (why) {
		put_payload(s, "stack context (invalid)", "xfdr", ev, tsc, why);
		return;
	}
	if (xfdr_payload_has_tag(p, bytes, XFDR_CRASH_MAGIC)) {
		struct xfdr_crash_event ce;

		if (xfdr_crash_event_decode(p, bytes, big, &ce, &err) == 0) {
			put_crash(s, &ce, tsc);
			return;
		}
		put_payload(s, "crash (invalid)", "xfdr", ev, tsc, err.text);
		return;
	}
	if (xfdr_payload_has_tag(p, bytes, XFDR_DROP_MAGIC)) {
		struct xfdr_drop_event d;
		int n = 0;

		if (xfdr_drop_event_decode(p, bytes, big, &d, &err)) {
			put_payload(s, "xfdr drops (invalid)", "xfdr", ev, tsc, err.text);
			return;
		}
		event_head(s, 0, "xfdr drops", "xfdr", "i", tsc);
		cli_puts(s->w->o, ",\"s\":\"t\",\"args\":{");
		drop_args(s->w->o, &n, &d);
		cli_puts(s->w->o, "}}");
		return;
	}
	put_payload(s, "custom event", "custom", ev, tsc, NULL);
}

/* ---- Threads -------------------------------------------------------------------------------- */

static void put_metadata(struct te *s)
{
	struct cli_out *o = s->w->o;
	const char *trace = xfdr_trace_name(s->file.t), *slash = strrchr(trace, '/');
	int named;

	if ((named = cli_pids_note(&s->w->named, s->pid)) < 0)
		s->w->failed = 1;
	else if (!named) {
		cli_puts(o, s->w->any ? ",\n" : "");
		s->w->any = 1;
		cli_printf(o,
			   "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRIu32
			   ",\"tid\":0,\"args\":{\"name\":",
			   s->pid);
		json_str(o, s->pid == s->file.map_pid && s->file.process_name ? s->file.process_name
			    : slash					      ? slash + 1
									      : trace);
		if (s->pid == s->file.map_pid && s->file.map_ppid)
			cli_printf(o, ",\"ppid\":%" PRIu32, s->file.map_ppid);
		cli_puts(o, "}}");
	}
	if (!s->thread_name)
		return;
	cli_printf(o,
		   ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
		   ",\"args\":{\"name\":",
		   s->pid, s->tid);
	json_str(o, s->thread_name);
	cli_printf(o, ",\"xfdr_thread\":%" PRIu32 "}}", s->thread_id);
}

/* A thread's events begin (timeline_ops.thread_begin). */
static void te_thread_begin(void *ctx, const struct xfdr_thread_info *ti, uint64_t tsc)
{
	struct te *s = ctx;
	uint32_t ktid = 0;

	(void)tsc;
	/* Without a sidecar's word, as llvm-xray: a Pid record's pid, else 1 (version 2's pid is a
	 * thread id), and the NewBuffer thread id. */
	s->pid = s->file.map_pid ? s->file.map_pid : s->file.version >= 3 ? ti->pid : 1;
	s->thread_id = ti->thread_id;
	s->thread_name = xfdr_names_thread(s->file.names, ti->thread_id, &ktid);
	s->tid = ktid ? ktid : ti->thread_id;
	put_metadata(s);
}

static int te_failed(void *ctx)
{
	const struct te *s = ctx;

	return s->w->failed || s->w->o->err != 0;
}

/* "trace" and "cycle_frequency" of one input (with a note when its header says 0). */
static void put_input(struct cli_out *o, int *n, const struct cli_input *in)
{
	uint64_t hz = xfdr_trace_header(in->t)->cycle_frequency;

	arg_str(o, n, "trace", xfdr_trace_name(in->t));
	arg_u64(o, n, "cycle_frequency", hz ? hz : TE_NS_PER_S);
	if (!hz)
		arg_str(o, n, "cycle_frequency_note", "the header says 0: 1 GHz assumed");
}

/* The inputs in otherData: one's keys at the top, several as "traces", a list of them. */
static void put_inputs(struct cli_out *o, int *n, const struct cli_input *in, size_t count)
{
	size_t i;

	if (count == 1) {
		put_input(o, n, &in[0]);
		return;
	}
	json_key(o, n, "traces");
	cli_putc(o, '[');
	for (i = 0; i < count; i++) {
		int m = 0;

		cli_puts(o, i ? ",{" : "{");
		put_input(o, &m, &in[i]);
		cli_putc(o, '}');
	}
	cli_putc(o, ']');
}

static void put_other_data(struct te_out *w, const struct timeline_counts *c)
{
	struct cli_out *o = w->o;
	int n = 0;

	cli_puts(o, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{");
	arg_str(o, &n, "generator",
		"xfdr " XFDR_VERSION_STRING " convert --output-format=trace_event");
	put_inputs(o, &n, w->in, w->nin);
	arg_u64(o, &n, "tsc_base", w->base);
	arg_str(o, &n, "ts", "microseconds since tsc_base");
	if (w->win && w->win[0].since)
		arg_u64(o, &n, "since_tsc", w->win[0].since);
	if (w->win && w->win[0].until != UINT64_MAX)
		arg_u64(o, &n, "until_tsc", w->win[0].until);
	if (w->split)
		arg_u64(o, &n, "part", w->split->part);
	arg_u64(o, &n, "calls", c->calls);
	arg_u64(o, &n, "calls_without_entry", c->no_entry);
	arg_u64(o, &n, "calls_without_exit", c->no_exit);
	arg_u64(o, &n, "calls_unwound", c->unwound);
	arg_u64(o, &n, "calls_from_stack_context", c->from_context);
	arg_u64(o, &n, "calls_open_before_window", c->before_window);
	arg_u64(o, &n, "calls_open_after_window", c->window_end);
	if (w->split)
		arg_u64(o, &n, "calls_split", c->split);
	arg_u64(o, &n, "stack_contexts_applied", c->contexts_applied);
	arg_u64(o, &n, "stack_contexts_invalid", c->contexts_invalid);
	arg_u64(o, &n, "tsc_backwards", c->tsc_backwards);
	cli_puts(o, "}}\n");
}

/* The first line of an output (a part of a split one begins anew: no process named yet). */
static void put_head(struct te_out *w)
{
	cli_puts(w->o, "{\"traceEvents\":[\n");
	w->any = 0;
	w->named.n = 0;
}

/* The last lines: otherData with the counts of what this output holds (so_far: everything). */
static void put_tail(struct te_out *w, const struct timeline_counts *so_far)
{
	struct timeline_counts c = *so_far;

	timeline_counts_sub(&c, &w->before);
	put_other_data(w, &c);
	w->before = *so_far;
}

/* Split: has this part reached its size (timeline_ops.cut)? */
static int te_cut(void *ctx)
{
	return split_out_full(((struct te *)ctx)->w->split);
}

/* Split: this part ends, the next begins (timeline_ops.next_output). */
static void te_next_output(void *ctx, const struct timeline_counts *so_far)
{
	struct te_out *w = ((struct te *)ctx)->w;

	put_tail(w, so_far);
	if (split_out_next(w->split)) {
		w->failed = 1;
		return;
	}
	w->o = w->split->o;
	put_head(w);
}

static const struct timeline_ops te_ops = {
    .thread_begin = te_thread_begin,
    .begin = te_begin,
    .end = te_end,
    .context = te_context,
    .event = te_event,
    .failed = te_failed,
    .cut = te_cut,
    .next_output = te_next_output,
};

/* The inputs one after the other, each thread in turn. Returns a TIMELINE_ code. */
static int walk_in_turn(struct te_out *w, const struct progress *sink, struct timeline_counts *all)
{
	struct te s = {.w = w};
	struct xfdr_error err;
	size_t i;
	int rc = TIMELINE_OK;

	for (i = 0; i < w->nin && rc == TIMELINE_OK; i++) {
		struct timeline_counts c;

		cli_timeline_file_set(&s.file, &w->in[i]);
		rc = timeline_walk(w->in[i].t, w->win ? &w->win[i] : NULL, &te_ops, &s, sink, &c,
				   &err);
		cli_timeline_failed(w->in[i].t, rc, &err);
		timeline_counts_add(all, &c);
	}
	free(s.open_args);
	free(s.open_bytes);
	return rc;
}

/* Split: every thread of every input at once, in time order. Returns a TIMELINE_ code. */
static int walk_by_time(struct te_out *w, const struct progress *sink, struct timeline_counts *all)
{
	struct xfdr_trace **t;
	struct te *th = NULL;
	void **ctxs = NULL;
	struct xfdr_error err;
	size_t *input_of, total, k;
	int rc = TIMELINE_NO_MEMORY;

	if (cli_timeline_threads(w->in, w->nin, &t, &input_of, &total))
		return TIMELINE_FAILED;
	if ((th = calloc(total + 1, sizeof(*th))) && (ctxs = calloc(total + 1, sizeof(*ctxs)))) {
		for (k = 0; k < total; k++) {
			th[k].w = w;
			cli_timeline_file_set(&th[k].file, &w->in[input_of[k]]);
			ctxs[k] = &th[k];
		}
		rc = timeline_walk_by_time(t, w->nin, w->win, &te_ops, ctxs, sink, all, &err);
	}
	cli_timeline_failed(t[0], rc, &err);
	for (k = 0; th && k < total; k++) {
		free(th[k].open_args);
		free(th[k].open_bytes);
	}
	free(th);
	free(ctxs);
	free(t);
	free(input_of);
	return rc;
}

int convert_trace_event(const struct cli_input *in, size_t n, const struct window *win,
			struct cli_out *out, struct split_out *split, struct cli_progress *prog)
{
	struct te_out w = {
	    .o = split ? split->o : out, .split = split, .in = in, .nin = n, .win = win};
	struct progress sink = cli_progress_sink(prog);
	struct timeline_counts all = {0};
	int rc;

	if (cli_timeline_base(in, n, &w.base))
		return CLI_FAIL;
	w.src = srcline_new();
	if (!w.src) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	put_head(&w);
	rc = split ? walk_by_time(&w, &sink, &all) : walk_in_turn(&w, &sink, &all);
	if (rc == TIMELINE_OK && !w.failed)
		put_tail(&w, &all);
	cli_source_notes(w.src);
	srcline_free(w.src);
	free(w.named.pid);
	return rc != TIMELINE_OK || w.failed || w.o->err ? CLI_FAIL : CLI_OK;
}
