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
 *   - "pid": the buffer's Pid record (versions 3+ of compiler-rt's writer), 1 for files without
 *     Pid records (version 1, what xfdr writes, and version 2), as llvm-xray prints it. "tid": the
 * thread id of the thread's NewBuffer records (the sidecar's `thread` line gives its kernel tid,
 * shown as the "tid" argument of the thread_name metadata event).
 *   - "ts": microseconds, a number with three decimals (nanoseconds rounded to the nearest),
 *     since the trace's first TSC, the lowest TSC of the first events of its threads, at the
 *     header's cycle_frequency (1 GHz when the header says 0). Relative times keep the
 *     numbers small, so that the double a viewer parses them into still holds nanoseconds
 *     (absolute TSCs in microseconds need more than its 53 bits). otherData.tsc_base is that
 *     TSC: absolute TSC = tsc_base + ts * cycle_frequency / 10^6. Timestamps never go down on
 *     a thread: an event with a lower TSC than the thread's previous event is shown at the
 *     previous one's time, so the calls still nest.
 *   - "M" metadata: process_name (the trace file's name) for each process, thread_name for
 *     each thread the sidecar names.
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
 * Pairing: every "B" gets its "E", on its thread, innermost first, with non-decreasing times.
 * Each thread is walked on its own (xfdr_events_begin_thread(), the thread's buffers by
 * WallClockTime) with a stack of its open calls:
 *   Entry, Entry_Args of F   "B" F; push.
 *   Exit, Tail_Exit of F     pop down to the innermost open F: the calls above it never had
 *                            their exit recorded and get their "E" first, at this exit's time
 *                            (args.xfdr_end "unwound"). When F is not open, its entry was
 *                            before the thread's first event (the trace began inside F, or the
 *                            buffers with its entry were overwritten or dropped): F gets a "B"
 *                            at the thread's first timestamp (args.xfdr_begin "before
 *                            trace"), below every other call (so all open calls are closed
 *                            first, as above), and this "E".
 *   XFDRSTAK stack context   (the runtime's shadow stack at the start of a buffer; ring mode
 *                            and snapshots leave out the buffers before it) compared with the
 *                            open calls from the outermost: calls it does not name (deeper
 *                            than it holds ids for) agree with any call. When the open calls
 *                            are what it says, nothing changes. Else events are missing in
 *                            between: the calls above the part that agrees are closed ("E" at
 *                            the context's time, args.xfdr_end "stack context") and the calls
 *                            of the context above it opened ("B" at the context's time,
 *                            args.xfdr_begin "stack context"). Calls the context counts but
 *                            does not name are "(unknown)"; an exit that reaches one (no open
 *                            call of its function above it) closes it, its "E" carrying
 *                            args.exit_function. Up to 128 of them in a row are a slice
 *                            each; more are one slice (args.unnamed_calls: how many), whose
 *                            "E" comes with the last of them. A context that does not decode,
 *                            or counts more than CALLSTACK_UNNAMED_MAX unnamed calls,
 *                            changes nothing.
 *   end of the thread        calls still open get their "E" at the thread's last event's time
 *                            (args.xfdr_end "trace edge").
 * To put the "B" of an exit without entry at the thread's first timestamp, each thread is
 * walked twice: the first walk only finds those exits (their function ids, innermost first).
 *
 * --since (since_tsc): a thread's output begins at its first event with a TSC of at least
 * since_tsc (the window); everything after it in the thread's order is kept, so B/E stay
 * balanced. The events before are still walked, without output, so that the calls open when
 * the window begins are known: they get their "B" at the window's first event's time
 * (args.xfdr_begin "before window"). ts keeps the same base as without --since. A thread with
 * no event in the window is left out.
 *
 * Memory: per thread, a stack of the open calls (a run of unnamed calls is one entry) and the
 * function ids of the exits without entry (the calls open when the thread's first event was
 * recorded: a stack depth too); both are reused from thread to thread. Nothing grows with the
 * number of records.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "command/cli.h"
#include "analysis/callstack.h"

#define TE_UNNAMED UINT32_MAX	  /* the function id of a run of unnamed calls */
#define TE_TEXT_BYTES 256u	  /* of an arbitrary payload, shown as text */
#define TE_HEX_BYTES 64u	  /* of an arbitrary payload, shown in hex */
#define TE_EXACT_MAX (1ull << 53) /* larger numbers are written as strings */
#define TE_NS_PER_S 1000000000u

enum te_begin {
	TE_BEGIN_ENTRY,
	TE_BEGIN_CONTEXT,
	TE_BEGIN_BEFORE_TRACE,
	TE_BEGIN_BEFORE_WINDOW,
};

enum te_end {
	TE_END_EXIT,
	TE_END_TAIL_EXIT,
	TE_END_UNWOUND,
	TE_END_CONTEXT,
	TE_END_EDGE,
};

/*
 * An open call, or (fid TE_UNNAMED) a run of count calls a stack context did not name. A run
 * of up to TE_UNNAMED_SLICES_MAX calls is shown as that many nested "(unknown)" slices; a
 * longer one as one slice standing for all of them (args.unnamed_calls), so that a context of
 * millions of unnamed calls cannot turn a few bytes of trace into gigabytes of JSON. slices:
 * the slices open for the entry, count while it is shown one per call, else 1 until the last
 * of its calls closes.
 */
#define TE_UNNAMED_SLICES_MAX 128u

struct te_frame {
	uint32_t fid;
	uint32_t count;
	uint32_t slices;
};

struct te_counts {
	uint64_t calls, unwound, no_entry, no_exit, from_context, before_window, contexts_applied,
	    contexts_invalid, tsc_backwards;
};

struct te {
	struct xfdr_trace *t;
	const struct xfdr_names *names;
	struct cli_out *o;
	struct cli_progress *prog;
	uint64_t since, base, hz;
	int any; /* an event is written: the next one needs a comma */
	int have_pid;
	uint32_t named_pid; /* the last pid a process_name was written for */

	/* The thread being walked. */
	int writing; /* second walk: write */
	int open;    /* second walk: the window began, events are written */
	uint32_t pid, tid;
	uint64_t first_tsc, last_tsc;
	struct te_frame *stack;
	uint32_t depth, cap; /* entries */
	uint32_t *before;    /* fids of the exits without entry, innermost first */
	size_t nbefore, before_cap, before_closed;

	uint64_t bufs_done, bufs_total, last_buf;
	struct te_counts n;
};

/* ---- JSON ------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when it is not one. */
static size_t utf8_len(const uint8_t *p, size_t n)
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
		} else if ((len = utf8_len(s + i, n - i)) != 0) {
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

/* Microseconds since s->base with three decimals: nanoseconds, rounded to the nearest. */
static void put_ts(struct te *s, uint64_t tsc)
{
	unsigned __int128 ns =
	    ((unsigned __int128)(tsc - s->base) * TE_NS_PER_S + s->hz / 2) / s->hz;
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
	cli_put(s->o, digits + i, sizeof(digits) - i);
}

/* A function's name as a JSON string (see the top of the file). */
static void put_fname(struct te *s, uint32_t fid)
{
	const char *name;

	if (fid == TE_UNNAMED) {
		cli_puts(s->o, "\"(unknown)\"");
		return;
	}
	name = xfdr_names_get(s->names, fid);
	if (name) {
		json_str(s->o, name);
		return;
	}
	cli_puts(s->o, s->names ? "\"#" : "\"");
	cli_put_u64(s->o, fid);
	cli_putc(s->o, '"');
}

/* `{"name":NAME,"cat":CAT,"ph":PH,"pid":P,"tid":T,"ts":TS` of one event (after a comma). */
static void event_head(struct te *s, uint32_t fid, const char *name, const char *cat,
		       const char *ph, uint64_t tsc)
{
	struct cli_out *o = s->o;

	cli_puts(o, s->any ? ",\n{\"name\":" : "{\"name\":");
	s->any = 1;
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

static const char *const begin_name[] = {
    [TE_BEGIN_ENTRY] = NULL,
    [TE_BEGIN_CONTEXT] = "stack context",
    [TE_BEGIN_BEFORE_TRACE] = "before trace",
    [TE_BEGIN_BEFORE_WINDOW] = "before window",
};

static const char *const end_name[] = {
    [TE_END_EXIT] = NULL,	  [TE_END_TAIL_EXIT] = "tail exit",
    [TE_END_UNWOUND] = "unwound", [TE_END_CONTEXT] = "stack context",
    [TE_END_EDGE] = "trace edge",
};

/* "B" of fid at tsc; ev: the Entry_Args event whose arguments it shows, or NULL. */
static void put_begin(struct te *s, uint32_t fid, uint64_t tsc, enum te_begin how,
		      const struct xfdr_event *ev, uint32_t calls)
{
	struct cli_out *o = s->o;
	int n = 0;
	uint32_t i;

	if (!s->open)
		return;
	event_head(s, fid, NULL, "function", "B", tsc);
	if (how != TE_BEGIN_ENTRY || (ev && ev->arg_count)) {
		cli_puts(o, ",\"args\":{");
		if (how != TE_BEGIN_ENTRY)
			arg_str(o, &n, "xfdr_begin", begin_name[how]);
		if (fid == TE_UNNAMED)
			arg_str(o, &n, "reason", "deeper than the ids the stack context holds");
		if (calls > 1)
			arg_u64(o, &n, "unnamed_calls", calls);
		for (i = 0; ev && i < ev->arg_count; i++) {
			char key[24];

			snprintf(key, sizeof(key), "arg%" PRIu32, i);
			arg_u64(o, &n, key, xfdr_event_arg(s->t, ev, i));
		}
		cli_putc(o, '}');
	}
	cli_putc(o, '}');
	if (how == TE_BEGIN_CONTEXT)
		s->n.from_context++;
	else if (how == TE_BEGIN_BEFORE_TRACE)
		s->n.no_entry++;
	else if (how == TE_BEGIN_BEFORE_WINDOW)
		s->n.before_window++;
}

/* "E" of fid at tsc; exit_fid: the function of the exit that closed an unnamed call. */
static void put_end(struct te *s, uint32_t fid, uint64_t tsc, enum te_end how, uint32_t exit_fid)
{
	struct cli_out *o = s->o;
	int n = 0;

	if (!s->open)
		return;
	event_head(s, fid, NULL, "function", "E", tsc);
	if (how != TE_END_EXIT || fid == TE_UNNAMED) {
		cli_puts(o, ",\"args\":{");
		if (how != TE_END_EXIT)
			arg_str(o, &n, "xfdr_end", end_name[how]);
		if (fid == TE_UNNAMED && how <= TE_END_TAIL_EXIT) {
			json_key(o, &n, "exit_function");
			put_fname(s, exit_fid);
		}
		cli_putc(o, '}');
	}
	cli_putc(o, '}');
	s->n.calls++;
	if (how == TE_END_UNWOUND)
		s->n.unwound++;
	else if (how == TE_END_EDGE)
		s->n.no_exit++;
}

/* Close the open calls of stack entries keep.. (innermost first) at tsc. */
static void close_above(struct te *s, uint32_t keep, uint64_t tsc, enum te_end how)
{
	while (s->depth > keep) {
		struct te_frame *f = &s->stack[s->depth - 1];
		uint32_t k;

		for (k = 0; k < f->slices && s->open; k++)
			put_end(s, f->fid, tsc, how, TE_UNNAMED);
		s->depth--;
	}
}

/* Returns 0, or -1 when out of memory. */
static int push(struct te *s, uint32_t fid, uint32_t count)
{
	if (s->depth == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 64;
		struct te_frame *v;

		if (cap < s->cap || !(v = realloc(s->stack, (size_t)cap * sizeof(*v))))
			return -1;
		s->stack = v;
		s->cap = cap;
	}
	s->stack[s->depth].fid = fid;
	s->stack[s->depth].count = count;
	s->stack[s->depth].slices = count > TE_UNNAMED_SLICES_MAX ? 1 : count;
	s->depth++;
	return 0;
}

/* ---- The walk ------------------------------------------------------------------------------ */

static int on_fn_entry(struct te *s, const struct xfdr_event *ev, uint64_t tsc)
{
	if (push(s, ev->function_id, 1))
		return -1;
	put_begin(s, ev->function_id, tsc, TE_BEGIN_ENTRY,
		  ev->action == XFDR_FN_ENTER_ARGS ? ev : NULL, 1);
	return 0;
}

static int on_fn_exit(struct te *s, const struct xfdr_event *ev, uint64_t tsc)
{
	enum te_end how = ev->action == XFDR_FN_TAIL_EXIT ? TE_END_TAIL_EXIT : TE_END_EXIT;
	uint32_t fid = ev->function_id, i = s->depth;

	while (i > 0 && s->stack[i - 1].fid != fid && s->stack[i - 1].fid != TE_UNNAMED)
		i--;
	if (i > 0) {
		struct te_frame *f = &s->stack[i - 1];

		close_above(s, i, tsc, TE_END_UNWOUND);
		/* A run shown as one slice ends with its last call. */
		if (f->slices == f->count) {
			put_end(s, f->fid, tsc, how, fid);
			f->slices--;
		}
		if (--f->count == 0)
			s->depth--;
		return 0;
	}
	/* Entered before the thread's first event: below every open call. */
	close_above(s, 0, tsc, TE_END_UNWOUND);
	if (!s->writing) {
		if (s->nbefore == s->before_cap) {
			size_t cap = s->before_cap ? s->before_cap * 2 : 64;
			uint32_t *v = realloc(s->before, cap * sizeof(*v));

			if (!v)
				return -1;
			s->before = v;
			s->before_cap = cap;
		}
		s->before[s->nbefore++] = fid;
	} else if (s->before_closed < s->nbefore) {
		/* The first walk found this very exit: before[before_closed] is fid. */
		put_end(s, s->before[s->before_closed++], tsc, how, fid);
	}
	return 0;
}

/*
 * Make the open calls what context c says at its time tsc (ids[j] for j < id_count, unnamed
 * calls below). Returns 0 when they agreed, 1 when calls were closed or opened, -1 when out of
 * memory.
 */
static int apply_context(struct te *s, const struct xfdr_stack_context *c, uint64_t tsc)
{
	uint32_t keep = 0, j = 0, partial = 0, named_end;

	for (keep = 0; keep < s->depth; keep++) {
		const struct te_frame *f = &s->stack[keep];

		if (f->fid != TE_UNNAMED) {
			if (j < c->depth && (j >= c->id_count || c->ids[j] == f->fid)) {
				j++;
				continue;
			}
			break;
		}
		if (c->depth - j >= f->count) {
			j += f->count;
			continue;
		}
		partial = c->depth - j;
		break;
	}
	if (keep == s->depth && j == c->depth)
		return 0;
	s->n.contexts_applied += (uint64_t)s->open;
	if (partial) {
		struct te_frame *f = &s->stack[keep];
		uint32_t k;

		close_above(s, keep + 1, tsc, TE_END_CONTEXT);
		if (f->slices == f->count) {
			for (k = partial; k < f->count && s->open; k++)
				put_end(s, TE_UNNAMED, tsc, TE_END_CONTEXT, TE_UNNAMED);
			f->slices = partial;
		}
		f->count = partial;
		s->depth = keep + 1;
		j += partial;
	} else {
		close_above(s, keep, tsc, TE_END_CONTEXT);
	}
	named_end = c->id_count;
	for (; j < named_end; j++) {
		if (push(s, c->ids[j], 1))
			return -1;
		put_begin(s, c->ids[j], tsc, TE_BEGIN_CONTEXT, NULL, 1);
	}
	if (j < c->depth) {
		const struct te_frame *f;
		uint32_t k;

		if (push(s, TE_UNNAMED, c->depth - j))
			return -1;
		f = &s->stack[s->depth - 1];
		for (k = 0; k < f->slices && s->open; k++)
			put_begin(s, TE_UNNAMED, tsc, TE_BEGIN_CONTEXT, NULL,
				  f->slices == f->count ? 1 : f->count);
	}
	return 1;
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

/* The name of a signal: the sidecar's for the crash it records, else the host's, else "". */
static const char *signal_name(const struct xfdr_names *names, uint32_t signal, char *buf, size_t n)
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

/* The frames of a crash, innermost first, each "#I 0xPC SYMBOL (MODULE+0xVADDR)". */
static void crash_frames(struct te *s, const struct xfdr_crash_event *ce)
{
	struct cli_out *o = s->o;
	struct xfdr_map_frame f;
	uint32_t i;
	int have;
	char text[64];

	cli_putc(o, '[');
	for (i = 0; i < ce->frame_count; i++) {
		have = xfdr_names_frame(s->names, i, &f) && f.pc == ce->pcs[i];
		if (!have)
			have = xfdr_names_frame_at_pc(s->names, ce->pcs[i], &f);
		snprintf(text, sizeof(text), "#%" PRIu32 " 0x%" PRIx64, i, ce->pcs[i]);
		cli_puts(o, i ? ",\"" : "\"");
		cli_puts(o, text);
		if (have && f.symbol) {
			cli_putc(o, ' ');
			json_esc(o, (const uint8_t *)f.symbol, strlen(f.symbol));
		}
		if (have && f.module) {
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
	struct cli_out *o = s->o;
	char buf[32], title[64];
	const char *sig = signal_name(s->names, ce->signal, buf, sizeof(buf));
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

/* An XFDRSTAK event: the stack it holds, and what it did to the open calls. */
static void put_context(struct te *s, const struct xfdr_stack_context *c, uint64_t tsc,
			int replaced)
{
	struct cli_out *o = s->o;
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
	struct cli_out *o = s->o;
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

static int on_custom(struct te *s, const struct xfdr_event *ev, uint64_t tsc)
{
	const uint8_t *p = ev->payload;
	uint32_t bytes = ev->payload_bytes;
	struct xfdr_error err;
	const char *why = NULL;
	int big = ev->big_endian;

	if (ev->type == XFDR_EVENT_TYPED) {
		if (s->open)
			put_payload(s, "typed event", "typed", ev, tsc, NULL);
		return 0;
	}
	if (xfdr_payload_has_tag(p, bytes, XFDR_STACK_MAGIC)) {
		struct xfdr_stack_context c;
		int rc;

		if (xfdr_stack_context_decode(p, bytes, big, &c, &err) == 0 &&
		    c.depth - c.id_count <= CALLSTACK_UNNAMED_MAX) {
			/* Closing and opening calls first: they happen at the context's time. */
			rc = apply_context(s, &c, tsc);
			if (rc < 0)
				return -1;
			if (s->open)
				put_context(s, &c, tsc, rc);
			return 0;
		}
		s->n.contexts_invalid += (uint64_t)s->open;
		why = err.text;
		if (!xfdr_stack_context_decode(p, bytes, big, &c, NULL))
			why = "XFDRSTAK with more unnamed calls than taken";
		if (s->open)
			put_payload(s, "stack context (invalid)", "xfdr", ev, tsc, why);
		return 0;
	}
	if (!s->open)
		return 0;
	if (xfdr_payload_has_tag(p, bytes, XFDR_CRASH_MAGIC)) {
		struct xfdr_crash_event ce;

		if (xfdr_crash_event_decode(p, bytes, big, &ce, &err) == 0) {
			put_crash(s, &ce, tsc);
			return 0;
		}
		put_payload(s, "crash (invalid)", "xfdr", ev, tsc, err.text);
		return 0;
	}
	if (xfdr_payload_has_tag(p, bytes, XFDR_DROP_MAGIC)) {
		struct xfdr_drop_event d;
		int n = 0;

		if (xfdr_drop_event_decode(p, bytes, big, &d, &err)) {
			put_payload(s, "xfdr drops (invalid)", "xfdr", ev, tsc, err.text);
			return 0;
		}
		event_head(s, 0, "xfdr drops", "xfdr", "i", tsc);
		cli_puts(s->o, ",\"s\":\"t\",\"args\":{");
		drop_args(s->o, &n, &d);
		cli_puts(s->o, "}}");
		return 0;
	}
	put_payload(s, "custom event", "custom", ev, tsc, NULL);
	return 0;
}

/* ---- Threads -------------------------------------------------------------------------------- */

static void progress(struct te *s, const struct xfdr_event *ev)
{
	if (ev->buffer_index == s->last_buf)
		return;
	s->last_buf = ev->buffer_index;
	s->bufs_done++;
	if (s->prog)
		cli_progress_update(s->prog, s->bufs_done, s->bufs_total);
}

/* The names of the process (once) and of the thread, as "M" events. */
static void put_metadata(struct te *s)
{
	struct cli_out *o = s->o;
	const char *trace = xfdr_trace_name(s->t), *slash = strrchr(trace, '/');
	const char *name;
	uint32_t ktid = 0;

	if (!s->have_pid || s->named_pid != s->pid) {
		s->have_pid = 1;
		s->named_pid = s->pid;
		cli_puts(o, s->any ? ",\n" : "");
		s->any = 1;
		cli_printf(o,
			   "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRIu32
			   ",\"tid\":0,\"args\":{\"name\":",
			   s->pid);
		json_str(o, slash ? slash + 1 : trace);
		cli_puts(o, "}}");
	}
	name = xfdr_names_thread(s->names, s->tid, &ktid);
	if (!name)
		return;
	cli_printf(o,
		   ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
		   ",\"args\":{\"name\":",
		   s->pid, s->tid);
	json_str(o, name);
	if (ktid)
		cli_printf(o, ",\"tid\":%" PRIu32, ktid);
	cli_puts(o, "}}");
}

/* The window begins at the thread's event at tsc: the calls open by then begin there. */
static void open_window(struct te *s, uint64_t tsc)
{
	size_t i;
	uint32_t k, d;

	s->open = 1;
	s->first_tsc = s->last_tsc = tsc;
	put_metadata(s);
	for (i = s->nbefore; i > s->before_closed; i--)
		put_begin(s, s->before[i - 1], tsc, TE_BEGIN_BEFORE_TRACE, NULL, 1);
	for (d = 0; d < s->depth; d++) {
		const struct te_frame *f = &s->stack[d];

		for (k = 0; k < f->slices && !s->o->err; k++)
			put_begin(s, f->fid, tsc, TE_BEGIN_BEFORE_WINDOW, NULL,
				  f->slices == f->count ? 1 : f->count);
	}
}

enum { WALK_OK = 0, WALK_FAILED = -1, WALK_NO_MEMORY = -2, WALK_WRITE_ERROR = -3 };

/*
 * walk_thread - walk thread i: the first time (writing 0) to find its exits without entry, the
 * second time to write it. Returns a WALK_ code; WALK_FAILED after printing the reader's line.
 */
static int walk_thread(struct te *s, uint64_t i, int writing)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	int rc, r = 0;

	s->writing = writing;
	s->open = 0;
	s->depth = 0;
	s->before_closed = 0;
	if (!writing)
		s->nbefore = 0;
	if (xfdr_events_begin_thread(s->t, i, &it, &err)) {
		fprintf(stderr, "%s\n", err.text);
		return WALK_FAILED;
	}
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		uint64_t tsc = ev.tsc;

		progress(s, &ev);
		if (writing && !s->open && ev.tsc >= s->since)
			open_window(s, ev.tsc);
		if (s->open) {
			if (tsc < s->last_tsc) {
				tsc = s->last_tsc;
				s->n.tsc_backwards++;
			}
			s->last_tsc = tsc;
		}
		if (ev.type != XFDR_EVENT_FUNCTION)
			r = on_custom(s, &ev, tsc);
		else if (ev.action == XFDR_FN_ENTER || ev.action == XFDR_FN_ENTER_ARGS)
			r = on_fn_entry(s, &ev, tsc);
		else if (ev.action == XFDR_FN_EXIT || ev.action == XFDR_FN_TAIL_EXIT)
			r = on_fn_exit(s, &ev, tsc);
		if (r)
			return WALK_NO_MEMORY;
		if (s->o->err)
			return WALK_WRITE_ERROR;
	}
	if (rc < 0) {
		fprintf(stderr, "%s\n", err.text);
		return WALK_FAILED;
	}
	if (s->open) {
		close_above(s, 0, s->last_tsc, TE_END_EDGE);
		while (s->before_closed < s->nbefore)
			put_end(s, s->before[s->before_closed++], s->last_tsc, TE_END_EDGE, 0);
	}
	return s->o->err ? WALK_WRITE_ERROR : WALK_OK;
}

/* The lowest TSC of the threads' first events (0 for a trace without events). */
static int first_tsc(struct te *s, uint64_t threads, uint64_t *base)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	uint64_t i;
	int rc, have = 0;

	*base = 0;
	for (i = 0; i < threads; i++) {
		if (xfdr_events_begin_thread(s->t, i, &it, &err) ||
		    (rc = xfdr_events_next(&it, &ev, &err)) < 0) {
			fprintf(stderr, "%s\n", err.text);
			return -1;
		}
		if (rc == 1 && (!have || ev.tsc < *base)) {
			*base = ev.tsc;
			have = 1;
		}
	}
	return 0;
}

static void put_other_data(struct te *s, int hz_assumed)
{
	struct cli_out *o = s->o;
	int n = 0;

	cli_puts(o, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{");
	arg_str(o, &n, "generator",
		"xfdr " XFDR_VERSION_STRING " convert --output-format=trace_event");
	arg_str(o, &n, "trace", xfdr_trace_name(s->t));
	arg_u64(o, &n, "cycle_frequency", s->hz);
	if (hz_assumed)
		arg_str(o, &n, "cycle_frequency_note", "the header says 0: 1 GHz assumed");
	arg_u64(o, &n, "tsc_base", s->base);
	arg_str(o, &n, "ts", "microseconds since tsc_base");
	if (s->since)
		arg_u64(o, &n, "since_tsc", s->since);
	arg_u64(o, &n, "calls", s->n.calls);
	arg_u64(o, &n, "calls_without_entry", s->n.no_entry);
	arg_u64(o, &n, "calls_without_exit", s->n.no_exit);
	arg_u64(o, &n, "calls_unwound", s->n.unwound);
	arg_u64(o, &n, "calls_from_stack_context", s->n.from_context);
	arg_u64(o, &n, "calls_open_before_window", s->n.before_window);
	arg_u64(o, &n, "stack_contexts_applied", s->n.contexts_applied);
	arg_u64(o, &n, "stack_contexts_invalid", s->n.contexts_invalid);
	arg_u64(o, &n, "tsc_backwards", s->n.tsc_backwards);
	cli_puts(o, "}}\n");
}

int convert_trace_event(struct xfdr_trace *t, const struct xfdr_names *names, uint64_t since_tsc,
			struct cli_out *out, struct cli_progress *prog)
{
	const struct xfdr_header *h = xfdr_trace_header(t);
	struct te s = {
	    .t = t,
	    .names = names,
	    .o = out,
	    .prog = prog,
	    .since = since_tsc,
	    .hz = h->cycle_frequency ? h->cycle_frequency : TE_NS_PER_S,
	    .last_buf = UINT64_MAX,
	};
	struct xfdr_thread_info ti;
	struct xfdr_error err;
	uint64_t threads, i;
	int rc = WALK_OK;

	if (xfdr_trace_threads(t, &threads, &err)) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	if (first_tsc(&s, threads, &s.base))
		return CLI_FAIL;
	if (!h->cycle_frequency)
		cli_error("%s: the header's cycle_frequency is 0: times assume 1 GHz",
			  xfdr_trace_name(t));
	s.bufs_total = 2 * xfdr_trace_buffer_count(t);
	cli_puts(out, "{\"traceEvents\":[\n");
	for (i = 0; i < threads && rc == WALK_OK; i++) {
		if (xfdr_trace_thread(t, i, &ti))
			break;
		/* As llvm-xray: a Pid record's pid, else 1 (version 2's pid is a thread id). */
		s.pid = h->version >= 3 ? ti.pid : 1;
		s.tid = ti.thread_id;
		rc = walk_thread(&s, i, 0);
		if (rc == WALK_OK)
			rc = walk_thread(&s, i, 1);
	}
	free(s.stack);
	free(s.before);
	if (rc == WALK_NO_MEMORY)
		cli_error("%s: out of memory", xfdr_trace_name(t));
	if (rc != WALK_OK)
		return CLI_FAIL;
	put_other_data(&s, !h->cycle_frequency);
	return out->err ? CLI_FAIL : CLI_OK;
}
