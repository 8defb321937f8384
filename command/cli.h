/*
 * command/cli.h - what the verbs of the xfdr command share: exit statuses, messages, checked
 * output, progress and finding the .map sidecar. Nothing here decodes the format; that is the
 * reader library's job (include/xfdr/reader.h). Each verb is one file (verify.c, dump.c, convert.c,
 * account.c, stack.c, flame.c, recover.c, core.c) and is reached through the table in xfdr.c.
 */
#ifndef XFDR_COMMAND_CLI_H
#define XFDR_COMMAND_CLI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/progress.h"
#include "analysis/window.h"
#include "xfdr/reader.h"

#ifndef XFDR_VERSION_STRING
#define XFDR_VERSION_STRING "0.1.0"
#endif

/* Exit statuses of every verb, as documented in `xfdr --help`. */
enum cli_status {
	CLI_OK = 0,
	CLI_FAIL = 1,  /* an invalid trace, or the output could not be written */
	CLI_USAGE = 2, /* bad command line, or an input file that cannot be read at all */
};

/* A verb: argv[0] is the verb's name, the options and operands follow. Returns a status. */
int cmd_record(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_core(int argc, char **argv);
int cmd_account(int argc, char **argv);
int cmd_stack(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_funcs(int argc, char **argv);

/*
 * Messages. Every diagnostic is one line on stderr starting with "xfdr VERB: ". The verb name
 * is set once by the dispatcher. cli_usage() adds a pointer to --help and returns CLI_USAGE so
 * callers can `return cli_usage(...)`.
 */
void cli_set_verb(const char *verb);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Make sure descriptors 0, 1 and 2 are open, so that a trace opened later can never become
 * "stdout". A closed stdout is replaced by a read-only /dev/null: writes to it then fail with
 * EBADF and are reported like any other write error, instead of landing in some other file.
 */
void cli_guard_std_fds(void);

/*
 * cli_check_input - can path be read as a trace at all?
 * Returns 0, or prints "xfdr VERB: PATH: <reason>" and returns CLI_USAGE for a missing,
 * unreadable or non-regular file (a directory; a FIFO or device cannot be mapped). Whether the
 * content is a valid trace is the library's business and gives CLI_FAIL later.
 */
int cli_check_input(const char *path);

/*
 * cli_open_input - open path for reading, as cli_check_input() checks it (O_NONBLOCK: a FIFO
 * is refused, not waited on). Returns 0 with *fd open and *bytes its size; -1 when it does not
 * exist and may_miss (nothing said); else CLI_USAGE, reported as by cli_check_input(). *fd is
 * -1 unless 0 is returned.
 */
int cli_open_input(const char *path, int may_miss, int *fd, uint64_t *bytes);

/* Are a and b the same existing file (also through another name or a link)? */
int cli_same_file(const char *a, const char *b);

/*
 * cli_check_output - may a verb that reads input (and the sidecar map, NULL: none named) write
 * output (NULL or "-": stdout)? Not over the input, nor over its sidecar: map, or input + ".map"
 * whether it is used or not (the names are nowhere else). Compared by device and inode, so
 * another spelling or a link is caught. Returns 0, or reports "xfdr VERB: output 'OUT' is the
 * input file" (or "... is the .map sidecar of the input file") through cli_usage() and returns
 * CLI_USAGE.
 */
int cli_check_output(const char *output, const char *input, const char *map);

/* ---- The .map sidecar ------------------------------------------------------------------- */

/*
 * cli_sidecar - the sidecar of input: map when the user named one (--map), else "INPUT.map"
 * (written into buf, n bytes) when that file exists, else NULL.
 */
const char *cli_sidecar(const char *input, const char *map, char *buf, size_t n);

/*
 * cli_names_load - the function names of the sidecar at path (NULL: none, *out NULL).
 * Returns 0, or prints the reader's message and returns CLI_USAGE (it cannot be opened) or
 * CLI_FAIL (it is malformed), with *out NULL.
 */
int cli_names_load(const char *path, struct xfdr_names **out);

/* ---- Checked, buffered output ---------------------------------------------------------- */

/*
 * All output goes through one buffer of our own, written with fwrite(); the first failure is
 * remembered and everything after it is dropped. cli_out_close() flushes, closes (unless it
 * is stdout, which is flushed and checked only) and reports the first error once:
 * "xfdr VERB: OUT: write error: <reason>". It returns CLI_OK or CLI_FAIL.
 */
struct cli_out {
	FILE *f;
	const char *name; /* for messages: the path, or "standard output" */
	int is_stdout;
	int err;	  /* first errno seen, 0 if none */
	uint64_t flushed; /* bytes handed to f */
	size_t len;
	char buf[1 << 16];
};

/* The bytes written to o so far. */
static inline uint64_t cli_out_bytes(const struct cli_out *o)
{
	return o->flushed + o->len;
}

/* Opens path for writing ("-" or NULL: stdout). Returns 0, or reports and returns CLI_FAIL. */
int cli_out_open(struct cli_out *o, const char *path);
/* The same into a new struct cli_out (64 KiB: not for the stack); NULL after reporting. */
struct cli_out *cli_out_new(const char *path);
int cli_out_close(struct cli_out *o);
void cli_out_flush(struct cli_out *o);

void cli_out_put_slow(struct cli_out *o, const void *p, size_t n);

static inline void cli_put(struct cli_out *o, const void *p, size_t n)
{
	if (n <= sizeof(o->buf) - o->len) {
		__builtin_memcpy(o->buf + o->len, p, n);
		o->len += n;
	} else {
		cli_out_put_slow(o, p, n);
	}
}

static inline void cli_putc(struct cli_out *o, char c)
{
	if (o->len == sizeof(o->buf))
		cli_out_flush(o);
	o->buf[o->len++] = c;
}

static inline void cli_puts(struct cli_out *o, const char *s)
{
	cli_put(o, s, __builtin_strlen(s));
}

void cli_put_u64(struct cli_out *o, uint64_t v);
void cli_printf(struct cli_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* How cli_duration() words a time of 100 s or more. */
enum cli_duration_style {
	CLI_DURATION_FULL,  /* "123.456 s": three decimals, whatever the time */
	CLI_DURATION_SHORT, /* "123 s": whole seconds, to keep within a 12-column field */
};

/*
 * cli_duration - ticks at hz for people, into buf (n bytes): "1.234 s", "4.560 ms", "7.890 us",
 * "12 ns"; "N ticks" when hz is 0 (no rate). Returns buf.
 */
const char *cli_duration(char *buf, size_t n, uint64_t ticks, uint64_t hz,
			 enum cli_duration_style style);

/* ---- Progress -------------------------------------------------------------------------- */

/*
 * A percentage on stderr for long runs: only when stderr is a terminal and the input is larger
 * than CLI_PROGRESS_MIN_BYTES, so pipes, logs and tests never see it. Redrawn only when the
 * whole percent changes; cli_progress_end() erases the line.
 */
#define CLI_PROGRESS_MIN_BYTES (64ull << 20)

struct cli_progress {
	int on;
	int last_pct;
	int drawn; /* something is on the line */
	const char *what;
};

void cli_progress_begin(struct cli_progress *p, uint64_t input_bytes, const char *what);
void cli_progress_phase(struct cli_progress *p, const char *what);
void cli_progress_update(struct cli_progress *p, uint64_t done, uint64_t total);
void cli_progress_end(struct cli_progress *p);
/* p as the analysis library's progress callbacks (analysis/progress.h). */
struct progress cli_progress_sink(struct cli_progress *p);

/* ---- Opening a trace ------------------------------------------------------------------- */

struct cli_map_choice;

/*
 * cli_prepare_reading - what a verb that reads one trace does before opening it, in this
 * order: cli_check_input(input), cli_check_output(output, input, from->map), then, unless
 * --no-map, the names of the sidecar (cli_sidecar(), cli_names_load()) into *names (else
 * NULL). Returns 0, or the status of the first step that failed, reported, with *names NULL.
 */
int cli_prepare_reading(const char *input, const char *output, const struct cli_map_choice *from,
			struct xfdr_names **names);

/*
 * cli_open_verified - open the trace at input and verify it whole, showing "verifying" on
 * prog (begun here, sized by the file). Returns CLI_OK with *out open, or CLI_FAIL with the
 * reader's line on stderr, prog ended and *out NULL.
 */
int cli_open_verified(const char *input, struct cli_progress *prog, struct xfdr_trace **out);

/*
 * One input of a verb that reads several traces: a verified trace and its .map sidecar's
 * names (NULL: none). The files of a process tree share the machine's TSC, so their events go
 * on one clock.
 */
struct cli_input {
	struct xfdr_trace *t;
	struct xfdr_names *names;
};

/*
 * cli_count_inputs - how many FILE operands cli_options_parse() left in inputs, into *n. With
 * several, --map (which names one FILE's functions) is a usage error. 0, or CLI_USAGE reported.
 */
int cli_count_inputs(char *const *inputs, const struct cli_map_choice *from, size_t *n);

/*
 * cli_inputs_open - the n paths' names (cli_prepare_reading(): each its own .map, or from's),
 * then their traces, verified (cli_open_verified()), into a new array *in. Returns 0, or the
 * status of the first that failed, reported. Either way *in (NULL when out of memory) goes to
 * cli_inputs_close().
 */
int cli_inputs_open(char *const *paths, size_t n, const char *output,
		    const struct cli_map_choice *from, struct cli_progress *prog,
		    struct cli_input **in);
void cli_inputs_close(struct cli_input *in, size_t n);

/*
 * cli_process_label - the frame a process's stacks hang from when a tree holds several traces:
 * "pid P (PROGRAM, parent Q)" from names (the parts the .map has), else the trace's file name
 * ("run.xray"), into buf of size bytes. Returns buf.
 */
const char *cli_process_label(const struct xfdr_names *names, const char *path, char *buf,
			      size_t size);

struct stree;
struct cli_window;

/*
 * cli_stree_build - the finished stack tree of the n verified inputs (analysis/stacktree.h;
 * with several, each process's stacks under its cli_process_label() frame), each read through
 * its window w->win[i] (w NULL: all of it), showing "pairing
 * calls" on prog, which is ended after. Returns CLI_OK (the caller frees t with stree_free()),
 * or CLI_FAIL after reporting, with nothing to free.
 */
int cli_stree_build(struct stree *t, const struct cli_input *in, size_t n, int per_thread,
		    const struct cli_window *w, struct cli_progress *prog);

/* ---- The part of the traces a reading verb reads (reading_window.c) ---------------------- */

/* --since, --until, --thread and --window as parsed (CLI_OPT_WINDOW, option_table.h). */
struct cli_window_opts {
	struct window_edge since, until;
	const char *thread; /* --thread=LIST; NULL: every thread */
	int whole;	    /* --window: 0 common, 1 all (the verb sets its default) */
	int quiet;	    /* the verb shows the spans itself: nothing on stderr */
	int tell_lost;	    /* an analysis: the spans are told when a thread lost history,
			       even when all of it is read */
};

/* The option calls of --since and --until: opts is a struct cli_window_opts. */
int cli_window_parse_since(void *opts, const char *arg);
int cli_window_parse_until(void *opts, const char *arg);

/* A window resolved against the open inputs. */
struct cli_window {
	struct window *win; /* one per input: the threads it takes, the edges */
	size_t n;
	struct window_span **spans; /* per input, its threads (analysis/window.h) */
	size_t *nspans;
	uint64_t *keys;		/* what win[i].threads point into */
	uint64_t since, until;	/* the edges (0 and UINT64_MAX: none) */
	uint64_t base, end, hz; /* the first and last event of all, the first trace's rate */
	int narrowed;		/* edges were given, or the common window is narrower */
	int common;		/* the edges are the common window's */
	int disjoint;		/* the threads' histories do not overlap: all is read */
	int lost;		/* a thread taken lost a part of its history */
};

/*
 * cli_window_resolve - o against the n verified inputs: each thread's span, the threads
 * --thread picks (by id or tid; a number no input has, or one that is a thread's id and
 * another's tid, is a usage error), and the edges: --since and --until when given, else (unless
 * --window=all) the common window of the threads taken. Then, when the window is not the whole
 * trace (or, with o->tell_lost, a thread taken lost part of its history), it is told on stderr:
 * "window 3.612 s to 15.000 s of 15.000 s (common: ...)" and one line per thread taken with its
 * span and what it lost. Returns 0, or a status reported; either way w goes to cli_window_free().
 */
int cli_window_resolve(const struct cli_window_opts *o, const struct cli_input *in, size_t n,
		       struct cli_window *w);

/* "3.612 s to 15.000 s of 15.000 s": the window in times from the trace's start, into buf. */
const char *cli_window_text(const struct cli_window *w, char *buf, size_t size);

void cli_window_free(struct cli_window *w);

struct srcline;

/*
 * cli_stree_sources - for each name k of the finished tree t that used[k] marks (used NULL:
 * every name) and that names a function, the file and line of its first instruction from the
 * DWARF of the module names puts it in (lines caches the modules), into file[k] and line[k]
 * (left as they were where none is known). Ids are the last trace's built into t. Returns how
 * many names got a line, or -1 when out of memory.
 */
long cli_stree_sources(const struct stree *t, const uint8_t *used, const struct xfdr_names *names,
		       struct srcline *lines, const char **file, int *line);

/*
 * cli_stree_build_runs - for --diff: the trees of two runs, in[0] (BASE) and in[1] (NEW), each
 * read through its own window (wo resolved against that run alone: its threads and times are
 * its own) into t[0] and t[1]. Returns CLI_OK (free both with stree_free()), or a status after
 * reporting, with nothing to free.
 */
int cli_stree_build_runs(const struct cli_window_opts *wo, const struct cli_input *in,
			 int per_thread, struct stree *t, struct cli_progress *prog);

/* ---- Rebuilt traces: what `recover` and `core` share ----------------------------------- */

struct rb_pool_job;
struct rb_pool_result;

/* The options of recover and core (-o/--output=OUT, -f/--force, -v/--verbose), and FILE. */
struct cli_rebuild_opts {
	const char *input;
	const char *output; /* NULL: the verb's default */
	int force;
	int verbose;
	int salvage; /* recover's --salvage */
};

struct cli_command;

/*
 * cli_rebuild_opts_parse - parse argv by cmd (command/option_table.h), whose options store into o
 * (zeroed by the caller). Returns 0 with o->input set, -1 after --help, or a status after a
 * usage error (also "empty OUT").
 */
int cli_rebuild_opts_parse(const struct cli_command *cmd, int argc, char **argv,
			   struct cli_rebuild_opts *o);

/* cli_map_name - OUT + ".map" into buf (n bytes). Returns 0, or reports and returns CLI_FAIL. */
int cli_map_name(const char *out, char *buf, size_t n);

/*
 * cli_check_rebuild_outputs - may the rebuilt trace out and its sidecar out_map be written?
 * Neither may be one of the NULL-ended inputs (else "xfdr VERB: OUT: OUT would replace
 * WHICH", e.g. "an input file", and CLI_USAGE), nor an existing file without force, nor
 * anything but a regular file (or a link to one: a device, a FIFO, ... is refused whatever
 * force says). Returns 0 or the status reported.
 */
int cli_check_rebuild_outputs(const char *out, const char *out_map, const char *const *inputs,
			      const char *which, int force);

/* How a rebuild is shown on stderr. */
struct cli_rebuild_show {
	int verbose;		   /* one line per buffer (what became of it and why) */
	uint64_t progress_bytes;   /* else a percentage, for an input this large */
	const char *progress_what; /* "recovering", "rebuilding" */
	const char *absent;	   /* what absent buffers were, e.g. "not in the core" */
	int best_effort;	   /* the run had no locator */
};

/*
 * cli_write_trace_and_map - write_trace(fd, out, res, trace_ctx) writes the trace into a new
 * file out (returns 0, or reports and returns CLI_FAIL), then write_map(f, res, ctx) its
 * sidecar out + ".map"; both are put in place only when both succeeded. Returns CLI_OK, or
 * CLI_FAIL, reported, with nothing left behind (and, when write_trace had succeeded, *res
 * freed with rb_pool_result_free()).
 */
int cli_write_trace_and_map(const char *out,
			    int (*write_trace)(int fd, const char *out, struct rb_pool_result *res,
					       void *ctx),
			    void *trace_ctx,
			    int (*write_map)(FILE *f, const struct rb_pool_result *res, void *ctx),
			    void *ctx, struct rb_pool_result *res);

/*
 * cli_rebuild - run the rebuild of job into out (job's note callbacks are set here, from
 * show), then write the sidecar out + ".map" with write_map(f, res, ctx) (which returns 0, or
 * reports and returns CLI_FAIL), and put both in place. Then the summary on stderr, one fact
 * per line: buffers kept and from how many threads, open buffers closed, buffers left out by
 * cause, tails cut, the TSC rate when it was not told, and "wrote OUT".
 * Returns CLI_OK, or CLI_FAIL, reported, with nothing left behind.
 */
int cli_rebuild(struct rb_pool_job *job, const char *out,
		int (*write_map)(FILE *f, const struct rb_pool_result *res, void *ctx), void *ctx,
		const struct cli_rebuild_show *show);

/* A .map value: TAB, newline and other control characters written as '?'. */
void cli_map_value(FILE *f, const char *s);

/*
 * cli_map_generated - the sidecar of a rebuilt trace when no .map of the run exists (doc/map-
 * format.md, lines in its order): xfdr-map, pid, trace, tsc_hz, constant_tsc, nonstop_tsc,
 * buffer_size, buffer_max, buffers_written and a `thread` line per thread kept, named
 * "<unknown>", with zero counts. Returns 0, or reports a write error and returns CLI_FAIL.
 */
struct cli_map_facts {
	uint64_t pid;
	const char *trace;
	int constant_tsc, nonstop_tsc;
	uint64_t buffer_bytes, buffer_count;
	/* a thread's name, or NULL (thread_name NULL: every one is "<unknown>") */
	const char *(*thread_name)(void *ctx, uint32_t tid, uint32_t thread_id);
	void *names_ctx;
};
int cli_map_generated(FILE *f, const struct cli_map_facts *facts, const struct rb_pool_result *res);

/* ---- convert --output-format=trace_event (trace_event.c) -------------------------------- */

struct split_out;

/*
 * convert_trace_event - the n inputs (the files of one process or of a process tree) as one
 * Chrome Trace Event JSON timeline (what ui.perfetto.dev and chrome://tracing open) into out,
 * or (split not NULL, out NULL) into consecutive files of about split->size bytes, each a
 * timeline of its own (command/split_out.h: part 1 open; the caller closes the last).
 * win: each input's window (analysis/window.h; NULL: all of every input). prog: progress.
 * Returns CLI_OK, or CLI_FAIL after reporting (the caller still closes out).
 */
int convert_trace_event(const struct cli_input *in, size_t n, const struct window *win,
			struct cli_out *out, struct split_out *split, struct cli_progress *prog);

/* ---- convert --output-format=perfetto (perfetto.c) -------------------------------------- */

/*
 * convert_perfetto - the n inputs as one Perfetto protobuf trace into out, or split into
 * parts, as convert_trace_event() writes JSON (same inputs, win, split and prog);
 * compress: 1 to gather the packets into zlib-compressed chunks, 0 to write them as they are;
 * jobs: how many of a trace's threads are written at once (1 to CONVERT_PERFETTO_JOBS_MAX; the
 * bytes are the same; split: one). Returns CLI_OK, or CLI_FAIL after reporting (the caller
 * still closes out).
 */
#define CONVERT_PERFETTO_JOBS_MAX 64u
int convert_perfetto(const struct cli_input *in, size_t n, const struct window *win, int compress,
		     unsigned jobs, struct cli_out *out, struct split_out *split,
		     struct cli_progress *prog);

/* ---- convert --output-format=pprof (pprof.c) -------------------------------------------- */

/*
 * convert_pprof - the calls of the verified trace in->t as a gzipped pprof profile into out:
 * a sample per distinct call stack with its calls and self time (of the window w: calls cut at
 * its edges count with the time inside), functions named from in->names (NULL: none). Returns
 * CLI_OK, or CLI_FAIL after reporting (the caller still closes out).
 */
int convert_pprof(const struct cli_input *in, const struct cli_window *w, struct cli_out *out,
		  struct cli_progress *prog);

/* ---- What a trace holds, in words (event_text.c) --------------------------------------- */

/* Length of the valid UTF-8 sequence at p (n > 0 bytes there), 0 when it is not one. */
size_t cli_utf8_len(const uint8_t *p, size_t n);

/*
 * cli_function_name - the name of function fid: the sidecar's (names), else "#ID" (an id the
 * sidecar does not name), else (no sidecar) "ID", as llvm-xray prints it; the last two are
 * written into buf (n bytes, 16 are enough). Returns the name.
 */
const char *cli_function_name(const struct xfdr_names *names, uint32_t fid, char *buf, size_t n);

/* The name of a signal: the sidecar's for the crash it records, else the host's (in buf), else "".
 */
const char *cli_signal_name(const struct xfdr_names *names, uint32_t signal, char *buf, size_t n);

/*
 * One frame of a crash as "#I 0xPC SYMBOL (MODULE+0xVADDR)": head is "#I 0xPC"; symbol and
 * module are the sidecar's (NULL: not named), valid while names is.
 */
struct cli_frame_text {
	char head[48];
	const char *symbol, *module;
	int have_module_vaddr;
	uint64_t module_vaddr;
};

void cli_crash_frame(const struct xfdr_names *names, const struct xfdr_crash_event *ce, uint32_t i,
		     struct cli_frame_text *out);

/* What a timeline format knows of the input it is writing (cli_timeline_file_set()). */
struct cli_timeline_file {
	struct xfdr_trace *t;
	const struct xfdr_names *names;
	uint64_t hz;		    /* the header's cycle_frequency; 1 GHz when it says 0 */
	uint16_t version;	    /* the header's */
	uint32_t map_pid, map_ppid; /* the sidecar's pid and ppid lines; 0: none */
	const char *process_name;   /* its program line; NULL: none */
};

void cli_timeline_file_set(struct cli_timeline_file *f, const struct cli_input *in);

/*
 * cli_timeline_base - where a timeline of the n inputs starts: the lowest timeline_base_tsc()
 * (analysis/timeline.h) of those with events, into *base (0: none has), saying on stderr when
 * a header's rate is 0 (1 GHz is assumed). Returns 0, or -1 with the reader's line printed.
 */
int cli_timeline_base(const struct cli_input *in, size_t n, uint64_t *base);

/* Report a timeline_walk() that returned rc (TIMELINE_FAILED: err's line; out of memory). */
void cli_timeline_failed(struct xfdr_trace *t, int rc, const struct xfdr_error *err);

/*
 * cli_timeline_threads - for timeline_walk_by_time(): the traces of the n inputs (*traces, n
 * of them), and of each thread of all, in that walk's order, the input it is of (*input_of,
 * *total of them; both malloc'd). Returns 0, or -1 after reporting (nothing to free).
 */
int cli_timeline_threads(const struct cli_input *in, size_t n, struct xfdr_trace ***traces,
			 size_t **input_of, size_t *total);

/* The processes a timeline's output has described (its process name, its track). */
struct cli_pids {
	uint32_t *pid;
	size_t n, cap;
};

/*
 * cli_pids_note - is pid among *s? If not, it is added. Returns 1 (it was), 0 (added), or -1
 * out of memory (reported). Emptied by setting n to 0; freed with free(s->pid).
 */
int cli_pids_note(struct cli_pids *s, uint32_t pid);

struct srcline;

/*
 * cli_source_notes - one note on stderr for each module that was asked for source lines and
 * gave none: "xfdr VERB: note: no source lines from MODULE: WHY" (analysis/srcline.h).
 */
void cli_source_notes(const struct srcline *s);

/* ---- YAML scalars as LLVM's YAML writer prints them (yaml.c) ---------------------- */

void cli_yaml_scalar(struct cli_out *o, const uint8_t *s, size_t n);

#endif /* XFDR_COMMAND_CLI_H */
