/*
 * command/dump.c - `xfdr dump FILE`: the header and every record, one per line, in file order.
 *
 * Meant for looking at a file, valid or not: records are printed as the reader's cursor
 * decodes them, and at the first violation the error line goes to stderr and the exit status
 * is 1, after everything before it has been printed. Line format (stable, for grep/awk):
 *
 *   OFFSET BUFFER RECORD FIELDS...   e.g.
 *   80     0      Entry             function=1 delta=10 tsc=1010 cpu=1 depth=0
 *
 * FIELDS are key=value: function records show the TSC the reader reconstructed; a custom event
 * shows its size, TSC and a preview of its first bytes in hex and as text. Records of versions
 * 2 to 5 (compiler-rt's writer) add: BufferExtents bytes=N (the buffer's bytes after it), Pid
 * pid=N, a version 4 custom event's cpu=N, a version 5 custom event's delta=N (signed) before
 * its tsc, and TypedEventMarker size=N type=N delta=N tsc=N with the payload's preview.
 *
 * Call stacks: the function records are fed, in file order, to the reader's call-stack pairer
 * (analysis/callstack.h), one stack per thread. `depth=N` on a function record line counts
 * the calls open below the call it enters or exits (0 = outermost; for an exit with no open
 * call of its function, the calls open then). An "XFDRSTAK" stack context (the runtime writes
 * one after the preamble of a buffer that begins inside calls) rebuilds the stack of a thread
 * with no open call, so the first records of a buffer whose predecessors are not in the file
 * get their true depth; its line gets, after the preview,
 *   context=seeded|agrees|differs depth=D stack=S       or   context=invalid reason="..."
 * (seeded: it rebuilt the stack; agrees/differs: frames were open, and it was only compared
 * with them). With --stacks each function record line ends with stack=S, the call's callers
 * and itself. S is outermost first, ';' between frames: the function's name from the .map
 * sidecar, or its id ('#ID' for an id the sidecar does not name), '?' for a call a context
 * counted but did not name ('?*K' for K of them in a row). stack= is always the last field.
 *
 * Names: a function record line gets name="NAME" (the sidecar's, '"' and '\\' escaped with a
 * backslash) after its cpu, when the sidecar names the function.
 *
 * Threads and windows: after the header, of a trace that verifies, one line per thread with
 *   thread id=ID tid=TID name="NAME" first_tsc=A last_tsc=B span_s=X..Y lost=start|end|start,end
 * (X and Y in seconds, to the nanosecond)
 * (tid and name when the sidecar or the drop counts tell them, lost when its history lost a part:
 * analysis/window.h), times in seconds from the trace's first event. --thread leaves out the
 * records of the other threads; --since and --until leave out the function records and events
 * outside the window, and every other metadata record but the CallArguments of an entry shown
 * (the pairer still takes them all, so depth= and stack= are the whole trace's); then a line
 *   window since_tsc=A until_tsc=B span_s=X..Y
 * follows the threads'.
 *
 * Crashes: an "XFDRCRSH" event's line gets, after the preview,
 *   crash=SIGNAME signal=N code=SI_CODE addr=0xFAULT tid=TID frames=K [truncated=1]
 * or crash=invalid reason="...", and is followed by one line per frame, innermost first,
 * indented so that no record line starts that way:
 *   "    #I 0xPC [NAME] [(MODULE[+0xMODULE_VADDR])]"
 * A frame is described by the sidecar's `frame` line of its index when that line's pc is the
 * frame's, else by the first `frame` line with its pc. NAME is that line's symbol; when the line
 * gives none but a module and module_vaddr, it is the function symbol of the module's ELF
 * symbol table covering the address (for frames after the first, which are return addresses,
 * the address before it, inside the call: a call that ends a function returns to the next
 * one). Without either, the frame shows its pc (and what is known of its module) only. A frame
 * with a module and an address in it ends with " at FILE:LINE" when the module's DWARF has the
 * line (of the call, for a return address); a module that gives no lines is named in one note
 * on stderr.
 * SIGNAME is the sidecar's `crash` line's when its signal number is the event's, else the
 * host's name for the number, else '?'.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "analysis/callstack.h"
#include "analysis/srcline.h"
#include "xfdr/reader.h"

#define DUMP_PREVIEW_BYTES 16

/* A module a crash frame named, opened once per dump; elf NULL: it could not be read. */
struct dump_module {
	char *path;
	struct xfdr_elf *elf;
};

struct dump_state {
	struct cli_out *out; /* the record's output: stdout, or /dev/null when left out */
	struct cli_out *shown, *hidden;
	const struct cli_window *w; /* NULL: every record */
	int timed;		    /* w has edges: only records in them */
	int entry_shown;	    /* the last function record was shown: its arguments too */
	struct callstack *cs;
	const struct xfdr_names *names; /* NULL without a sidecar */
	int big_endian;
	unsigned version; /* of the file's format */
	int stacks;	  /* --stacks */
	/* The call an exit closed, from on_call(): its own (not an unwound caller's). */
	int have_closed;
	uint32_t closed_depth;
	/* Crash frames: the modules their names were looked up in, and their source lines. */
	struct dump_module *modules;
	size_t module_count, module_cap;
	struct srcline *lines;
};

static const char dump_head[] =
    "usage: xfdr dump [--stacks] [--since=WHEN] [--until=WHEN] [--thread=LIST]\n"
    "                 [--map=MAP | --no-map] FILE\n"
    "\n"
    "Print the header of FILE, then every record with its byte offset, buffer number,\n"
    "kind and decoded fields (function records with the absolute TSC the reader\n"
    "reconstructs and the call depth, call arguments, custom events with their size\n"
    "and a preview; an XFDRSTAK stack context decoded, and what the reader made of\n"
    "it). An invalid file is printed up to the first error, which goes to stderr.\n"
    "After the header, each thread's span: its first and last TSC, in seconds from the\n"
    "trace's first event, and whether its history lost its start (ring mode) or end.\n";

static const char dump_tail[] =
    "A function record line names the function (name=\"NAME\") when the map does.\n"
    "With --since or --until only the function records and events in the window are\n"
    "shown (with an entry's arguments); depth and stack are still the whole trace's.\n"
    "\n"
    "depth=N on a function record line: calls open below it on its thread (0 =\n"
    "outermost), stack contexts included. On an XFDRSTAK line: context=seeded (it\n"
    "rebuilt the thread's stack), agrees or differs (calls were open: only\n"
    "compared), or invalid with a reason; depth=D and stack=S are the context's.\n"
    "In S a frame is a name, an id ('#ID' when the map does not name it), or '?'\n"
    "for a call the context did not name ('?*K': K of them).\n"
    "\n"
    "An XFDRCRSH crash event: crash=SIGNAME signal=N code=SI_CODE addr=0xADDR tid=TID\n"
    "frames=K (and truncated=1 when the stack had more frames than kept), or\n"
    "crash=invalid with a reason; then one line per frame, innermost first:\n"
    "    #I 0xPC NAME (MODULE+0xMODULE_VADDR)\n"
    "named by the map's frame lines, else from MODULE's ELF symbol table (.symtab,\n"
    "else .dynsym); NAME or the module is left out when unknown.\n"
    "\n"
    "Exit status: 0 valid, 1 invalid file or write error, 2 usage error or unreadable\n"
    "FILE or MAP.\n";

static void dump_header(struct cli_out *o, const struct xfdr_trace *t)
{
	const struct xfdr_header *h = xfdr_trace_header(t);

	cli_printf(o, "file: %s\n", xfdr_trace_name(t));
	cli_printf(o,
		   "header: version=%u type=%u bitfield=0x%08" PRIx32
		   " constant_tsc=%d nonstop_tsc=%d cycle_frequency=%" PRIu64
		   " buffer_size=%" PRIu64 " byte_order=%s buffers=%" PRIu64 "\n",
		   h->version, h->type, h->bitfield, h->constant_tsc, h->nonstop_tsc,
		   h->cycle_frequency, h->buffer_size, h->big_endian ? "big" : "little",
		   xfdr_trace_buffer_count(t));
}

/* " KEY=S.NNNNNNNNN..S.NNNNNNNNN": the TSCs a and b in seconds from w's base, to the nanosecond. */
static void put_seconds(struct cli_out *o, const struct cli_window *w, uint64_t a, uint64_t b)
{
	uint64_t hz = w->hz ? w->hz : 1000000000u, t[2] = {a, b}, ns;
	int k;

	cli_puts(o, " span_s=");
	for (k = 0; k < 2; k++) {
		t[k] = t[k] > w->base ? t[k] - w->base : 0;
		ns = (uint64_t)(((unsigned __int128)t[k] * 1000000000u + hz / 2) / hz);
		cli_printf(o, "%s%" PRIu64 ".%09" PRIu64, k ? ".." : "", ns / 1000000000u,
			   ns % 1000000000u);
	}
}

/* The threads' spans, and the window when it has edges (see the top of the file). */
static void dump_spans(struct cli_out *o, const struct cli_window *w)
{
	const struct window_span *s;
	size_t k;

	for (k = 0; k < w->nspans[0]; k++) {
		s = &w->spans[0][k];
		if (!window_has_thread(&w->win[0], s->pid, s->thread_id))
			continue;
		cli_printf(o, "thread id=%" PRIu32, s->thread_id);
		if (s->tid)
			cli_printf(o, " tid=%" PRIu32, s->tid);
		if (s->name)
			cli_printf(o, " name=\"%s\"", s->name);
		if (s->has_events) {
			cli_printf(o, " first_tsc=%" PRIu64 " last_tsc=%" PRIu64, s->first_tsc,
				   s->last_tsc);
			put_seconds(o, w, s->first_tsc, s->last_tsc);
		}
		if (s->lost)
			cli_printf(o, " lost=%s",
				   s->lost == WINDOW_LOST_START ? "start"
				   : s->lost == WINDOW_LOST_END ? "end"
								: "start,end");
		cli_putc(o, '\n');
	}
	if (w->narrowed) {
		cli_printf(o, "window since_tsc=%" PRIu64 " until_tsc=%" PRIu64, w->since,
			   w->until);
		put_seconds(o, w, w->since, w->until < w->end ? w->until : w->end);
		cli_putc(o, '\n');
	}
}

/*
 * The window of the trace when it verifies (and its spans under the header): else none, and a
 * usage error when one was asked for. Returns 0 or a status reported.
 */
static int dump_window(struct dump_state *s, struct xfdr_trace *t, struct cli_window_opts *wo,
		       struct cli_window *w)
{
	struct cli_input in = {.t = t, .names = (struct xfdr_names *)s->names};
	struct xfdr_error err;
	uint64_t threads;
	int rc;

	wo->quiet = 1;
	if (xfdr_trace_threads(t, &threads, &err)) {
		if (!wo->since.kind && !wo->until.kind && !wo->thread)
			return 0;
		fprintf(stderr, "%s\n", err.text);
		return cli_usage("--since, --until and --thread need a valid trace");
	}
	rc = cli_window_resolve(wo, &in, 1, w);
	if (rc)
		return rc;
	s->w = w;
	s->timed = w->narrowed;
	return 0;
}

static void dump_payload(struct cli_out *o, const uint8_t *p, uint32_t n)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t k = n < DUMP_PREVIEW_BYTES ? n : DUMP_PREVIEW_BYTES, i;

	cli_puts(o, " data=");
	for (i = 0; i < k; i++) {
		cli_putc(o, hex[p[i] >> 4]);
		cli_putc(o, hex[p[i] & 15]);
	}
	if (k < n)
		cli_puts(o, "...");
	cli_puts(o, " text=\"");
	for (i = 0; i < k; i++)
		cli_putc(o, p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' ? (char)p[i] : '.');
	cli_putc(o, '"');
	if (k < n)
		cli_puts(o, "...");
}

/* One frame of a stack= value. */
static void put_frame(struct dump_state *s, uint32_t id)
{
	const char *name = xfdr_names_get(s->names, id);

	if (name)
		cli_puts(s->out, name);
	else
		cli_printf(s->out, s->names ? "#%" PRIu32 : "%" PRIu32, id);
}

/* k calls a context did not name. */
static void put_unnamed(struct dump_state *s, uint32_t k)
{
	if (k == 1)
		cli_putc(s->out, '?');
	else
		cli_printf(s->out, "?*%" PRIu32, k);
}

/* The pairer's open frames 0 .. n-1 of a thread, each followed by ';'. */
static void put_open_frames(struct dump_state *s, uint32_t pid, uint32_t tid, uint32_t n)
{
	struct callstack_frame_info f;
	uint32_t d = 0, k;

	while (d < n && !callstack_frame_info(s->cs, pid, tid, d, &f)) {
		if (f.function_id == CALL_UNKNOWN_FUNCTION) {
			k = f.unnamed_run < n - d ? f.unnamed_run : n - d;
			put_unnamed(s, k ? k : 1);
			d += k ? k : 1;
		} else {
			put_frame(s, f.function_id);
			d++;
		}
		cli_putc(s->out, ';');
	}
}

static int on_call(void *ctx, const struct call *c)
{
	struct dump_state *s = ctx;

	if (c->flags & (CALL_EXIT | CALL_TAIL_EXIT)) {
		s->have_closed = 1;
		s->closed_depth = c->depth;
	}
	return 0;
}

/* Feed a function record to the pairer and print depth= (and stack=). Returns 0 or -ENOMEM. */
static int dump_function_stack(struct dump_state *s, const struct xfdr_record *r)
{
	struct xfdr_event ev = {
	    .type = XFDR_EVENT_FUNCTION,
	    .action = r->kind,
	    .function_id = r->function_id,
	    .tsc = r->tsc,
	    .cpu = r->cpu,
	    .thread_id = r->thread_id,
	    .pid = r->pid,
	    .offset = r->offset,
	    .buffer_index = r->buffer_index,
	};
	const char *name;
	uint32_t depth;
	int rc;

	s->have_closed = 0;
	rc = callstack_feed(s->cs, &ev);
	if (rc)
		return rc;
	if (r->kind == XFDR_FN_ENTER || r->kind == XFDR_FN_ENTER_ARGS)
		depth = callstack_depth(s->cs, r->pid, r->thread_id) - 1;
	else
		depth = s->have_closed ? s->closed_depth : 0;
	name = xfdr_names_get(s->names, r->function_id);
	if (name) {
		cli_puts(s->out, " name=\"");
		for (; *name; name++) {
			if (*name == '"' || *name == '\\')
				cli_putc(s->out, '\\');
			cli_putc(s->out, *name);
		}
		cli_putc(s->out, '"');
	}
	cli_printf(s->out, " depth=%" PRIu32, depth);
	if (s->stacks) {
		/* The frames below the call are open: an exit only popped the call and above. */
		cli_puts(s->out, " stack=");
		put_open_frames(s, r->pid, r->thread_id, depth);
		put_frame(s, r->function_id);
	}
	return 0;
}

/* An XFDRSTAK payload: feed it to the pairer, print what it says and what became of it. */
static int dump_stack_context(struct dump_state *s, const struct xfdr_record *r)
{
	struct xfdr_event ev = {
	    .type = XFDR_EVENT_CUSTOM,
	    .tsc = r->absolute_tsc,
	    .cpu = r->cpu,
	    .thread_id = r->thread_id,
	    .pid = r->pid,
	    .offset = r->offset,
	    .buffer_index = r->buffer_index,
	    .payload = r->payload,
	    .payload_bytes = r->payload_bytes,
	    .big_endian = s->big_endian,
	};
	struct callstack_stats before, after;
	struct xfdr_stack_context sc;
	struct xfdr_error err;
	uint32_t i;
	int rc;

	callstack_get_stats(s->cs, &before);
	rc = callstack_feed(s->cs, &ev);
	if (rc)
		return rc;
	callstack_get_stats(s->cs, &after);
	if (xfdr_stack_context_decode(r->payload, r->payload_bytes, s->big_endian, &sc, &err)) {
		cli_printf(s->out, " context=invalid reason=\"%s\"", err.text);
		return 0;
	}
	if (after.contexts_invalid != before.contexts_invalid) {
		cli_printf(s->out,
			   " context=invalid reason=\"%" PRIu32 " calls beyond the %" PRIu32
			   " ids: more than %u unnamed calls\"",
			   sc.depth - sc.id_count, sc.id_count, CALLSTACK_UNNAMED_MAX);
		return 0;
	}
	cli_printf(s->out, " context=%s depth=%" PRIu32 " stack=",
		   after.contexts_seeded != before.contexts_seeded   ? "seeded"
		   : after.contexts_differ != before.contexts_differ ? "differs"
								     : "agrees",
		   sc.depth);
	for (i = 0; i < sc.id_count; i++) {
		if (i)
			cli_putc(s->out, ';');
		put_frame(s, sc.ids[i]);
	}
	if (sc.depth > sc.id_count) {
		if (sc.id_count)
			cli_putc(s->out, ';');
		put_unnamed(s, sc.depth - sc.id_count);
	}
	return 0;
}

/* The ELF file at path, opened at its first use; NULL when it cannot be read (or no memory). */
static const struct xfdr_elf *module_elf(struct dump_state *s, const char *path)
{
	struct dump_module *m;
	size_t i;

	for (i = 0; i < s->module_count; i++) {
		if (!strcmp(s->modules[i].path, path))
			return s->modules[i].elf;
	}
	if (s->module_count == s->module_cap) {
		size_t cap = s->module_cap ? 2 * s->module_cap : 8;

		m = realloc(s->modules, cap * sizeof(*m));
		if (!m)
			return NULL;
		s->modules = m;
		s->module_cap = cap;
	}
	m = &s->modules[s->module_count];
	m->path = strdup(path);
	if (!m->path)
		return NULL;
	if (xfdr_elf_open(path, &m->elf))
		m->elf = NULL;
	s->module_count++;
	return m->elf;
}

static void close_modules(struct dump_state *s)
{
	size_t i;

	for (i = 0; i < s->module_count; i++) {
		xfdr_elf_close(s->modules[i].elf);
		free(s->modules[i].path);
	}
	free(s->modules);
}

/* The name of a signal: the sidecar's for the crash it records, else the host's, else "?". */
static void put_signal_name(struct dump_state *s, uint32_t signal)
{
	struct xfdr_map_crash mc;
	const char *abbrev = NULL;

	if (xfdr_names_crash(s->names, &mc) && mc.signal == signal) {
		cli_puts(s->out, mc.signal_name);
		return;
	}
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	if (signal <= (uint32_t)INT32_MAX)
		abbrev = sigabbrev_np((int)signal);
#endif
	if (abbrev) {
		cli_puts(s->out, "SIG");
		cli_puts(s->out, abbrev);
	} else {
		cli_putc(s->out, '?');
	}
}

/* An XFDRCRSH payload: its fields on the record line. Returns 1 when it decoded into *ce. */
static int dump_crash(struct dump_state *s, const struct xfdr_record *r,
		      struct xfdr_crash_event *ce)
{
	struct xfdr_error err;

	if (xfdr_crash_event_decode(r->payload, r->payload_bytes, s->big_endian, ce, &err)) {
		cli_printf(s->out, " crash=invalid reason=\"%s\"", err.text);
		return 0;
	}
	cli_puts(s->out, " crash=");
	put_signal_name(s, ce->signal);
	cli_printf(s->out,
		   " signal=%" PRIu32 " code=%" PRId32 " addr=0x%" PRIx64 " tid=%" PRIu32
		   " frames=%" PRIu32,
		   ce->signal, ce->code, ce->fault_addr, ce->tid, ce->frame_count);
	if (ce->flags & XFDR_CRASH_TRUNCATED)
		cli_puts(s->out, " truncated=1");
	return 1;
}

/* " at FILE:LINE" of address vaddr of module, from its DWARF, when it has the line. */
static void put_frame_line(struct dump_state *s, const char *module, uint64_t vaddr)
{
	const char *file;
	int line;

	if (!s->lines)
		s->lines = srcline_new();
	if (s->lines && srcline_lookup(s->lines, module, vaddr, &file, &line, NULL))
		cli_printf(s->out, " at %s:%d", file, line);
}

/* The frames of a decoded crash, one line each (see the top of the file). */
static void dump_crash_frames(struct dump_state *s, const struct xfdr_crash_event *ce)
{
	struct xfdr_map_frame f;
	const char *name;
	uint64_t pc, at;
	uint32_t i;
	int have;

	for (i = 0; i < ce->frame_count; i++) {
		pc = ce->pcs[i];
		have = xfdr_names_frame(s->names, i, &f) && f.pc == pc;
		if (!have)
			have = xfdr_names_frame_at_pc(s->names, pc, &f);
		name = have ? f.symbol : NULL;
		if (!name && have && f.module && f.have_module_vaddr) {
			/* A return address: the call is the instruction before it. */
			at = f.module_vaddr - (i && f.module_vaddr ? 1 : 0);
			name = xfdr_elf_symbol(module_elf(s, f.module), at, NULL);
		}
		cli_printf(s->out, "    #%" PRIu32 " 0x%" PRIx64, i, pc);
		if (name) {
			cli_putc(s->out, ' ');
			cli_puts(s->out, name);
		}
		if (have && f.module) {
			cli_puts(s->out, " (");
			cli_puts(s->out, f.module);
			if (f.have_module_vaddr)
				cli_printf(s->out, "+0x%" PRIx64, f.module_vaddr);
			cli_putc(s->out, ')');
		}
		if (have && f.module && f.have_module_vaddr)
			put_frame_line(s, f.module, f.module_vaddr - (i && f.module_vaddr ? 1 : 0));
		cli_putc(s->out, '\n');
	}
}

static int in_window(const struct cli_window *w, uint64_t tsc)
{
	return tsc >= w->since && tsc <= w->until;
}

/* Is r shown (see the top of the file)? */
static int is_shown(struct dump_state *s, const struct xfdr_record *r)
{
	if (!s->w)
		return 1;
	if (!window_has_thread(&s->w->win[0], r->pid, r->thread_id))
		return 0;
	if (!s->timed)
		return 1;
	if (!r->is_metadata)
		return s->entry_shown = in_window(s->w, r->tsc);
	if (r->kind == XFDR_MD_CUSTOM_EVENT || r->kind == XFDR_MD_TYPED_EVENT)
		return in_window(s->w, r->absolute_tsc);
	return r->kind == XFDR_MD_CALL_ARGUMENT && s->entry_shown;
}

/* Returns 0, or -ENOMEM when the pairer ran out of memory. */
static int dump_record(struct dump_state *s, const struct xfdr_record *r)
{
	struct cli_out *o = s->out;
	const char *name =
	    r->is_metadata ? xfdr_md_kind_name(r->kind) : xfdr_fn_action_name(r->kind);
	struct xfdr_crash_event ce;
	int rc = 0, crash = 0;

	/* A record left out is still decoded, and its calls paired, into /dev/null. */
	o = s->out = is_shown(s, r) ? s->shown : s->hidden;
	cli_printf(o, "%-10" PRIu64 " %-6" PRIu64 " %-17s", r->offset, r->buffer_index, name);
	if (!r->is_metadata) {
		cli_printf(o, " function=%" PRIu32 " delta=%" PRIu32 " tsc=%" PRIu64 " cpu=%u",
			   r->function_id, r->tsc_delta, r->tsc, r->cpu);
		rc = dump_function_stack(s, r);
	} else {
		switch (r->kind) {
		case XFDR_MD_NEW_BUFFER:
			cli_printf(o, " thread=%u", r->thread_id);
			break;
		case XFDR_MD_END_OF_BUFFER:
			cli_printf(o, " padding=%" PRIu64, r->skipped_bytes);
			break;
		case XFDR_MD_NEW_CPU_ID:
			cli_printf(o, " cpu=%u tsc=%" PRIu64, r->cpu, r->absolute_tsc);
			break;
		case XFDR_MD_TSC_WRAP:
			cli_printf(o, " tsc=%" PRIu64, r->absolute_tsc);
			break;
		case XFDR_MD_WALL_CLOCK_TIME:
			cli_printf(o, " seconds=%" PRIu64 " micros=%" PRIu32, r->seconds,
				   r->micros);
			break;
		case XFDR_MD_BUFFER_EXTENTS:
			cli_printf(o, " bytes=%" PRIu64, r->extents_bytes);
			break;
		case XFDR_MD_PID:
			cli_printf(o, " pid=%" PRIu32, r->pid);
			break;
		case XFDR_MD_TYPED_EVENT:
			cli_printf(o, " size=%" PRIu32 " type=%u delta=%" PRId32 " tsc=%" PRIu64,
				   r->payload_bytes, r->event_type, r->event_delta,
				   r->absolute_tsc);
			dump_payload(o, r->payload, r->payload_bytes);
			break;
		case XFDR_MD_CUSTOM_EVENT:
			cli_printf(o, " size=%" PRIu32, r->payload_bytes);
			if (s->version >= 5)
				cli_printf(o, " delta=%" PRId32, r->event_delta);
			cli_printf(o, " tsc=%" PRIu64, r->absolute_tsc);
			if (s->version == 4)
				cli_printf(o, " cpu=%u", r->cpu);
			dump_payload(o, r->payload, r->payload_bytes);
			if (xfdr_payload_has_tag(r->payload, r->payload_bytes, XFDR_STACK_MAGIC))
				rc = dump_stack_context(s, r);
			else if (xfdr_payload_has_tag(r->payload, r->payload_bytes,
						      XFDR_CRASH_MAGIC))
				crash = dump_crash(s, r, &ce);
			break;
		case XFDR_MD_CALL_ARGUMENT:
			cli_printf(o, " arg=%" PRIu64 " hex=0x%" PRIx64, r->arg, r->arg);
			break;
		default:
			break;
		}
	}
	cli_putc(o, '\n');
	if (crash)
		dump_crash_frames(s, &ce);
	return rc;
}

int cmd_dump(int argc, char **argv)
{
	static struct cli_out out, hidden;
	struct dump_state s = {.out = &out, .shown = &out, .hidden = &hidden};
	struct cli_window_opts wo = {.whole = 1};
	struct cli_window w = {0};
	struct cli_map_choice names_from = {0};
	const struct cli_option options[] = {
	    CLI_OPT_FLAG(0, "stacks", &s.stacks, 1,
			 "end each function record line with stack=S: the call's\n"
			 "callers and itself, outermost first, ';' between frames"),
	    CLI_OPT_WINDOW(&wo, "'all' (the default: every record) or 'common' (only\n"
				"the time every thread's kept history covers)"),
	    CLI_OPT_MAP(&names_from,
			"name functions from MAP, a .map sidecar the runtime wrote\n"
			"(default: FILE.map when it exists)",
			"show function ids only"),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = dump_head,
	    .tail = dump_tail,
	    .column = 25,
	    .operand = "FILE",
	    .options = options,
	};
	struct xfdr_names *names = NULL;
	struct xfdr_record_cursor cur;
	struct xfdr_trace *t;
	struct xfdr_record r;
	struct xfdr_error err;
	const char *input;
	int rc, status;

	status = cli_options_parse_one(&cmd, argc, argv, &input);
	if (status)
		return status < 0 ? CLI_OK : status;
	/* No OUT to check: dump writes to standard output only. */
	status = cli_prepare_reading(input, NULL, &names_from, &names);
	if (status)
		return status;
	s.names = names;
	if (xfdr_trace_open(input, &t, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		xfdr_names_free(names);
		return CLI_FAIL;
	}
	s.big_endian = xfdr_trace_header(t)->big_endian;
	s.version = xfdr_trace_header(t)->version;
	s.cs = callstack_create(on_call, &s);
	if (!s.cs) {
		cli_error("%s: out of memory", input);
		xfdr_trace_close(t);
		xfdr_names_free(names);
		return CLI_FAIL;
	}
	cli_out_open(&out, NULL);
	dump_header(&out, t);
	status = dump_window(&s, t, &wo, &w);
	if (!status && s.w && cli_out_open(&hidden, "/dev/null"))
		status = CLI_FAIL;
	if (status) {
		cli_out_close(&out);
		goto out;
	}
	if (s.w)
		dump_spans(&out, &w);
	cli_puts(&out, "offset     buffer record            fields\n");
	xfdr_records_begin(t, &cur);
	while ((rc = xfdr_records_next(&cur, &r, &err)) == 1 && !out.err) {
		if (dump_record(&s, &r)) {
			rc = -ENOMEM;
			break;
		}
	}
	status = cli_out_close(&out);
	if (s.w)
		cli_out_close(&hidden);
	if (rc == -ENOMEM) {
		cli_error("%s: offset %" PRIu64 ": out of memory for the call stack", input,
			  r.offset);
		status = CLI_FAIL;
	} else if (rc < 0) {
		fprintf(stderr, "%s\n", err.text);
		status = CLI_FAIL;
	}
out:
	cli_window_free(&w);
	cli_source_notes(s.lines);
	srcline_free(s.lines);
	callstack_destroy(s.cs);
	close_modules(&s);
	xfdr_trace_close(t);
	xfdr_names_free(names);
	return status;
}
